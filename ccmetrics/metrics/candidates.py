"""Lesion candidates from a probability map: each a connected region holding one confidence.

A model's real output is a probability map; lesion-level detection curves (FROC, AP, case-level AUROC:
:mod:`ccmetrics.metrics.detection_curves`) need a confidence per predicted lesion. A *candidate* is one
connected region of the image with one confidence; the rules (``method``) follow picai_eval's and
report_guided_annotation's conventions:

==================  ==================================================================================
method              candidates, and the confidence of each
==================  ==================================================================================
``"components"``    the connected components of ``prob > 0`` (26-connected in 3D, 8 in 2D); the
                    confidence is the maximum of the map inside. With a *detection map* (each region
                    already holding one value) this is exactly picai_eval's ``parse_detection_map``.
``"threshold:T"``   the components of ``prob >= T`` (``0 < T <= 1``); the maximum inside.
``"dynamic"``       report_guided_annotation's ``extract_lesion_candidates(prob, threshold="dynamic")``
                    with its other defaults, voxel for voxel (``ccmetrics.metrics._dynamic_candidates``
                    in the package gives the algorithm). Its own default is ``threshold="dynamic-fast"``, another
                    algorithm: name ``"dynamic"`` there to compare.
``prediction=``     the components of a binary prediction mask given beside the map; the confidence is
                    the maximum of the map inside each (``confidence="mean"``: the mean). A component
                    where the map is 0 everywhere is a candidate of confidence 0: never matched (it is in
                    no detection map), a false positive on no operating point.
==================  ==================================================================================

Cost: one comparison of the map with 0 or T, one labelling (the engine's,
:func:`~ccmetrics.engine.components.find_sites`), one gather of the map at the candidates' voxels and one
``np.maximum.reduceat``: the work grows with the image once and with the candidates' voxels after that.
Exactness: confidences are the map's own float32 values (the maximum is exact; the mean is summed in float64).

Examples
--------
Two blobs of a map, and the same map cut at 0.5:

>>> import numpy as np
>>> prob = np.zeros((1, 8), np.float32)
>>> prob[0, 1:3] = [0.25, 0.75]; prob[0, 5:7] = [0.5, 0.125]
>>> c = find_candidates(prob)
>>> c.n, c.confidence.tolist(), c.volumes.tolist()
(2, [0.75, 0.5], [2, 2])
>>> find_candidates(prob, "threshold:0.5").volumes.tolist()
[1, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._inputs import as_binary_mask, as_probability_map
from ..engine.components import Sites, find_sites

__all__ = ["CANDIDATE_METHODS", "CONFIDENCE_RULES", "Candidates", "find_candidates", "parse_candidate_method"]

#: the ways of finding candidates (``threshold`` is written ``threshold:T``)
CANDIDATE_METHODS = ("components", "threshold", "dynamic")
#: how a prediction component's confidence is read from the map
CONFIDENCE_RULES = ("max", "mean")


@dataclass(frozen=True)
class Candidates:
    """The lesion candidates of one case.

    Attributes
    ----------
    sites : Sites
        The candidates' voxels, candidate k (from 1) being site k (raster order of its first voxel).
    confidence : ndarray of float64, (K,)
        The confidence of each candidate (a float32 value of the map, or the mean of them).
    method : str
        How they were found (``"components"``, ``"threshold:0.5"``, ``"dynamic"``, ``"prediction"``).
    """

    sites: Sites
    confidence: np.ndarray
    method: str

    @property
    def n(self) -> int:
        """Number of candidates."""
        return self.sites.n

    @property
    def volumes(self) -> np.ndarray:
        """Voxels of each candidate."""
        return self.sites.volumes

    @property
    def case_confidence(self) -> float:
        """The case's confidence: the highest candidate confidence, 0 without candidates.

        It equals picai_eval's case confidence (the maximum of the detection map) on the detection map
        these candidates make (:meth:`detection_map`).
        """
        return float(self.confidence.max()) if self.n else 0.0

    def detection_map(self) -> np.ndarray:
        """The candidates as a float32 detection map: each candidate's voxels hold its confidence.

        This is what picai_eval evaluates; its ``parse_detection_map`` finds these candidates in it again.

        >>> prob = np.array([[0.2, 0.6, 0, 0.4]], np.float32)
        >>> find_candidates(prob).detection_map().tolist()
        [[0.6000000238418579, 0.6000000238418579, 0.0, 0.4000000059604645]]
        """
        out = np.zeros(int(np.prod(self.sites.shape)), np.float32)
        out[self.sites.flat_index] = self.confidence[self.sites.label - 1]
        return out.reshape(self.sites.shape)


def parse_candidate_method(method: Any) -> tuple[str, float | None]:
    """``(kind, threshold)`` from a spelling: ``"components"``, ``"threshold:0.5"``, ``"dynamic"``.

    >>> parse_candidate_method("threshold:0.25"), parse_candidate_method("components")
    (('threshold', 0.25), ('components', None))
    """
    if not isinstance(method, str):
        raise TypeError(f"candidates must be 'components', 'threshold:T' or 'dynamic', got {method!r}")
    kind, sep, value = (part.strip() for part in method.partition(":"))
    kind = kind.lower()
    if kind not in CANDIDATE_METHODS:
        raise ValueError(
            f"unknown candidate method {method!r}: use components, threshold:T (0 < T <= 1, e.g. threshold:0.5) "
            "or dynamic"
        )
    if kind != "threshold":
        if sep:
            raise ValueError(f"the candidate method {kind!r} takes no value; write just {kind!r}")
        return kind, None
    try:
        t = float(value)
    except ValueError:
        raise ValueError(f"candidates {method!r}: write the threshold as a number, e.g. threshold:0.5") from None
    if not 0 < t <= 1:
        raise ValueError(f"candidates {method!r}: the threshold must lie in (0, 1], e.g. threshold:0.5")
    return kind, t


def _confidences(prob: np.ndarray, sites: Sites, rule: str) -> np.ndarray:
    if sites.n == 0:
        return np.zeros(0, np.float64)
    if not prob.flags.c_contiguous and len(sites.flat_index) > prob.size // 32:
        # e.g. nibabel's Fortran-ordered softmax, never 0: one copy to C order (4 bytes a voxel) costs less than
        # gathering that many voxels across its memory; a sparse map is gathered by index, never copied
        prob = np.ascontiguousarray(prob)
    if prob.flags.c_contiguous:
        values = prob.ravel()[sites.flat_index]
    else:
        values = prob[np.unravel_index(sites.flat_index, prob.shape)]
    if rule == "max":
        return np.maximum.reduceat(values, sites.starts[:-1]).astype(np.float64)
    return np.add.reduceat(values.astype(np.float64), sites.starts[:-1]) / sites.volumes


def find_candidates(
    prob: Any,
    method: str = "components",
    *,
    prediction: Any = None,
    confidence: str = "max",
    connectivity: int | None = None,
) -> Candidates:
    """The lesion candidates of one probability map (see the module's table).

    Parameters
    ----------
    prob : array_like
        The probability map, 2D or 3D, values in [0, 1] (float32 is kept as it is; other types are cast).
    method : str
        ``"components"`` (default), ``"threshold:T"`` or ``"dynamic"``; ignored when ``prediction`` is given.
    prediction : array_like of bool, optional
        A binary prediction of the same shape: its components are the candidates.
    confidence : {"max", "mean"}
        How a candidate's confidence is read from the map (``"mean"`` only with ``prediction``: picai_eval's
        detection maps and the other methods take the maximum).
    connectivity : int, optional
        26 (default), 18 or 6 in 3D; 8 (default) or 4 in 2D. ``"dynamic"`` uses report_guided_annotation's own.

    Returns
    -------
    Candidates

    Examples
    --------
    A prediction's components, their confidence the mean of the map inside:

    >>> prob = np.array([[0.5, 1.0, 0.0, 0.25]], np.float32)
    >>> pred = np.array([[1, 1, 0, 1]], bool)
    >>> find_candidates(prob, prediction=pred, confidence="mean").confidence.tolist()
    [0.75, 0.25]
    """
    arr = as_probability_map(prob)
    if confidence not in CONFIDENCE_RULES:
        raise ValueError(f"confidence must be one of {', '.join(CONFIDENCE_RULES)}, got {confidence!r}")
    if prediction is not None:
        mask = as_binary_mask(prediction, "prediction")
        if mask.shape != arr.shape:
            raise ValueError(f"the prediction has shape {mask.shape}, the probability map {arr.shape}")
        sites = find_sites(mask, "components", connectivity)
        return Candidates(sites, _confidences(arr, sites, confidence), "prediction")
    if confidence != "max":
        raise ValueError(
            "confidence='mean' applies to a prediction's components (pass prediction=); "
            "candidates found in the map itself take its maximum"
        )
    kind, threshold = parse_candidate_method(method)
    if kind == "dynamic":
        from ._dynamic_candidates import dynamic_candidates

        labels, conf = dynamic_candidates(arr)
        sites = find_sites(labels, "labels")
        return Candidates(sites, np.asarray(conf, np.float64), "dynamic")
    mask = arr > 0 if threshold is None else arr >= threshold
    sites = find_sites(mask, "components", connectivity)
    return Candidates(
        sites, _confidences(arr, sites, "max"), method if threshold is None else f"threshold:{threshold:g}"
    )
