"""Probability maps in a data-set evaluation: each case's map read, its lesion candidates found and matched.

With ``evaluate_dataset(..., probabilities=FOLDER)`` (``ccmetrics evaluate ... --probabilities FOLDER``) every case
has one probability map, named like its GT (:func:`ccmetrics.formats.probabilities.probability_file`; nnU-Net's
``CASE.npz`` beside its ``CASE.nii.gz`` is taken). Per case:

1. the map is read once, as float32, on the GT's grid (:func:`~ccmetrics.formats.probabilities.read_probabilities`;
   values outside [0, 1], NaN, another grid, a missing channel: the case's error row names the problem);
2. without a predictions folder the case's segmentation is ``prob > 0.5`` (what the argmax of a binary softmax
   gives), on which the segmentation metrics are computed;
3. its lesion candidates are found (:func:`~ccmetrics.metrics.candidates.find_candidates`: ``components``,
   ``threshold:T``, ``dynamic``, or with a predictions folder the prediction's components) and matched one-to-one
   to the GT's lesions, labelled once for the metrics and the matching alike
   (:func:`~ccmetrics.metrics.detection_curves.match_candidates`);
4. the case's output gains its ``per_candidate`` rows, its ``case_confidence`` and the map's voxel-level
   calibration (``brier``, ``ece``: :func:`~ccmetrics.metrics.calibration.voxel_calibration`).

The data set's curves (AP, AUROC, FROC, CPM) are computed from the tables
(:func:`~ccmetrics.metrics.detection_curves.detection_curves_from_tables`) by
:meth:`ccmetrics.results.dataset.DatasetResult.detection_curves`.

Cost per case: one read of the map, one comparison, one labelling of the candidates, one gather at their voxels
and the matching on the overlap list: a few passes over the image, whatever the number of lesions.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy, schema
from ..engine.components import Sites
from ..engine.ground_truth import GroundTruth
from ..formats.image import Image
from ..formats.probabilities import (
    probability_case_id,
    probability_file,
    read_probabilities,
    read_probability_channels,
)
from ..metrics.calibration import voxel_calibration
from ..metrics.candidates import CONFIDENCE_RULES, find_candidates, parse_candidate_method
from ..metrics.case import evaluate, prepare_classes
from ..metrics.detection_curves import MATCH_BY, candidate_frame, match_candidates
from ..metrics.thresholds import parse_thresholds, sweep
from ._renamed import former_fields, warn_former

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = [
    "SEGMENTATION_THRESHOLD",
    "ProbabilityOptions",
    "attach_probabilities",
    "case_candidates",
    "evaluate_with_maps",
    "read_case_maps",
    "segmentation_of",
]

#: without a predictions folder, a case's segmentation is ``prob > SEGMENTATION_THRESHOLD`` (a binary softmax's argmax)
SEGMENTATION_THRESHOLD = 0.5


@former_fields({"channel": "prob_channel"})
@dataclass(frozen=True)
class ProbabilityOptions:
    """How probability maps are used: where they are, how candidates are found and matched;
    :func:`~ccmetrics.campaign.dataset.evaluate_dataset`'s ``maps=`` (the maps themselves are its
    ``probabilities=``).

    Made by keywords (``ProbabilityOptions(candidates="dynamic", thresholds="0.1:0.9:0.1")``); what the run makes
    of them (the folder, the default candidates, the thresholds parsed) is :meth:`checked`.

    Attributes
    ----------
    folder : str or None
        The folder of the maps (absolute); None when they are given case by case (set from ``probabilities=``).
    candidates : str or None
        ``"components"``, ``"threshold:T"``, ``"dynamic"`` or ``"prediction"`` (the prediction's components);
        None: ``"prediction"`` with predictions, else ``"components"``.
    confidence : {"max", "mean"}
        A prediction component's confidence (the other methods take the maximum).
    match_by : {"overlap", "confidence"}
        What the one-to-one matching maximizes besides the number of matches (picai_eval: overlap).
    prob_channel : int or None
        The channel of a multi-channel map (nnU-Net's ``.npz``); None: channel 1 of two (formerly ``channel``).
    segment_from_map : bool
        No predictions folder: the segmentation is ``prob > 0.5`` (set by :meth:`checked`).
    thresholds : tuple of float
        Thresholds at which the per-region metrics of ``prob >= t`` are evaluated too
        (:func:`ccmetrics.metrics.thresholds.sweep`; given: numbers or text such as ``"0.1:0.9:0.1"``); empty: none.
    class_channels : tuple of (int, int)
        With classes of label maps: each class value and its channel (nnU-Net's: the label value; of a
        region-based model, the region's place among the dataset.json's foreground entries); empty for a binary
        task.
    region_based : bool
        The classes come from a region-based nnU-Net dataset.json (a label given as a list): its model writes one
        sigmoid channel per foreground entry, in the order of ``labels``, without a background channel.

    Examples
    --------
    >>> ProbabilityOptions.build(None, None, pred_given=False).candidates
    'components'
    >>> ProbabilityOptions.build(None, None, pred_given=True).candidates
    'prediction'
    >>> ProbabilityOptions(thresholds="0.25,0.5").checked(None, pred_given=True).thresholds
    (0.25, 0.5)
    """

    folder: str | None = None
    candidates: str | None = None
    confidence: str = "max"
    match_by: str = "overlap"
    prob_channel: int | None = None
    segment_from_map: bool = False
    thresholds: Any = ()
    class_channels: tuple[tuple[int, int], ...] = ()
    region_based: bool = False

    def __post_init__(self) -> None:
        if self.thresholds is None:  # none: as the default
            object.__setattr__(self, "thresholds", ())

    @classmethod
    def build(
        cls,
        folder: Any,
        candidates: str | None,
        *,
        pred_given: bool,
        confidence: str = "max",
        match_by: str = "overlap",
        prob_channel: int | None = None,
        thresholds: Any = None,
        region_based: bool = False,
        channel: int | None = None,
    ) -> ProbabilityOptions:
        """The options checked (messages name the ``evaluate_dataset`` arguments); ``channel``: the former name of
        ``prob_channel`` (deprecated)."""
        if channel is not None:
            warn_former("ProbabilityOptions.build(channel=...)", "ProbabilityOptions.build(prob_channel=...)")
            prob_channel = channel if prob_channel is None else prob_channel
        if folder is not None and not os.path.isdir(folder):
            raise NotADirectoryError(f"probabilities folder {os.fspath(folder)!r} does not exist or is not a folder")
        method = ("prediction" if pred_given else "components") if candidates is None else str(candidates)
        if method == "prediction":
            if not pred_given:
                raise ValueError("candidates='prediction' takes the prediction's components: give the predictions too")
        else:
            kind, threshold = parse_candidate_method(method)
            method = kind if threshold is None else f"threshold:{threshold:g}"
        if confidence not in CONFIDENCE_RULES:
            raise ValueError(f"confidence must be one of {', '.join(CONFIDENCE_RULES)}, got {confidence!r}")
        if confidence != "max" and method != "prediction":
            raise ValueError(
                f"confidence={confidence!r} applies to the prediction's components; candidates={method!r} take the "
                "map's maximum inside each (picai_eval's convention)"
            )
        if match_by not in MATCH_BY:
            raise ValueError(f"match_by must be one of {', '.join(MATCH_BY)}, got {match_by!r}")
        if prob_channel is not None and (
            isinstance(prob_channel, bool) or not isinstance(prob_channel, int) or prob_channel < 0
        ):
            raise ValueError(f"prob_channel (channel) must be a whole number >= 0, got {prob_channel!r}")
        swept = () if thresholds is None else parse_thresholds(thresholds)
        return cls(
            folder=None if folder is None else os.path.abspath(folder),
            candidates=method,
            confidence=confidence,
            match_by=match_by,
            prob_channel=prob_channel,
            segment_from_map=not pred_given,
            thresholds=swept,
            region_based=bool(region_based),
        )

    def checked(self, folder: Any = None, *, pred_given: bool, region_based: bool = False) -> ProbabilityOptions:
        """The options as a run uses them (:meth:`build` of its fields): ``folder`` the maps' folder (else its own),
        ``pred_given`` whether predictions are given, ``region_based`` a region-based dataset.json's classes."""
        return ProbabilityOptions.build(
            self.folder if folder is None else folder,
            self.candidates,
            pred_given=pred_given,
            confidence=self.confidence,
            match_by=self.match_by,
            prob_channel=self.prob_channel,
            thresholds=self.thresholds if len(self.thresholds) else None,  # text or numbers: parsed there
            region_based=region_based or self.region_based,
        )

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ProbabilityOptions:
        """The options that a folder's ``summary.json`` (``options["probabilities"]``) keeps (:meth:`key`; the
        folder is not kept).

        Examples
        --------
        >>> options = ProbabilityOptions.build(None, "dynamic", pred_given=False, thresholds="0.2,0.4")
        >>> ProbabilityOptions.from_record(options.key()).key() == options.key()
        True
        """
        return cls(
            candidates=record.get("candidates"),
            confidence=record.get("confidence", "max"),
            match_by=record.get("match_by", "overlap"),
            prob_channel=record.get("channel"),
            segment_from_map=bool(record.get("segment_from_map", False)),
            thresholds=tuple(float(t) for t in record.get("thresholds", ())),
            class_channels=tuple((int(a), int(b)) for a, b in record.get("class_channels", ())),
        )

    def key(self) -> dict[str, Any]:
        """What changes values (kept in each case's record: change one and ``resume`` evaluates again)."""
        return {
            "candidates": self.candidates,
            "confidence": self.confidence,
            "match_by": self.match_by,
            "channel": self.prob_channel,
            "segment_from_map": self.segment_from_map,
            **({"thresholds": list(self.thresholds)} if self.thresholds else {}),
            **({"class_channels": [list(p) for p in self.class_channels]} if self.class_channels else {}),
        }

    def with_classes(self, classes: Any) -> ProbabilityOptions:
        """The options for label maps with ``classes``, as nnU-Net orders its channels (``LabelManager``): a plain
        label's channel is its value (background 0, then the labels); with a region-based dataset.json
        (``region_based``), class ``k`` (the k-th foreground entry of ``labels``) is channel ``k - 1`` (one sigmoid
        per entry, no background). Regions without that dataset.json, ``channel``, and a run without predictions
        (a segmentation of several classes is no single map's threshold) are refused.
        """
        if not classes:
            return self
        regions = [c.name for c in classes if len(c.labels) != 1]
        if regions and not self.region_based:
            raise ValueError(
                f"the channels of regions ({', '.join(regions)}) follow the model's dataset.json: give it "
                "(dataset_json=, --dataset-json), whose foreground entries are the channels in order"
            )
        if self.prob_channel is not None:
            raise ValueError("give classes (each class's channel is its label value) or prob_channel, not both")
        if self.segment_from_map:
            raise ValueError(
                "with classes, give the predictions too (nnU-Net's segmentations: the folder holding the .npz)"
            )
        if self.region_based:
            return dataclasses.replace(self, class_channels=tuple((c.value, c.value - 1) for c in classes))
        return dataclasses.replace(self, class_channels=tuple((c.value, c.labels[0]) for c in classes))


def attach_probabilities(tasks: list[Any], options: ProbabilityOptions, source: Any) -> list[tuple[str, str]]:
    """Give each case its map (``task.prob``, from the folder or the mapping ``source``); a case without one gets
    an error. Returns ``(case, error)`` for each map that has no GT case, to become an error row of its own
    (nothing given is left out without a word).
    """
    known = {t.case for t in tasks}
    if isinstance(source, Mapping):
        given = {str(k): v for k, v in source.items()}
        for task in tasks:
            if not task.error:
                task.prob = given.get(task.case)
                if task.prob is None:
                    task.error = f"no probability map for case {task.case!r} in the probabilities given"
        return [(case, "no ground truth for this probability map") for case in sorted(set(given) - known)]
    folder = str(options.folder)
    for task in tasks:
        if task.error:
            continue
        try:
            found = probability_file(folder, task.case)
        except ValueError as exc:
            task.error = str(exc)
            continue
        if found is None:
            task.error = (
                f"no probability map for case {task.case!r} in {folder} (expected e.g. {task.case}.nii.gz "
                f"or {task.case}.npz, named like the GT)"
            )
        else:
            task.prob = str(found)
    orphans: dict[str, str] = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        case = None if name.startswith(".") or os.path.isdir(path) else probability_case_id(name)
        if case is not None and case not in known:
            orphans.setdefault(case, f"no ground truth for this probability map ({path})")
    return sorted(orphans.items())


def read_case_maps(
    prob: Any, gt: Image, options: ProbabilityOptions, tolerance_mm: float, *, max_bytes: float | None = None
) -> dict[int, Image]:
    """The case's maps as float32 on the GT's grid, by class value (1 for a binary task): a file (checked against
    the GT; a ``.npz`` decompressed once for every class), or an array or Image given (a binary task).

    ``max_bytes``: the case's memory limit (``--max-memory``): a file whose read would take more, by its header, is
    refused before its voxels are read (:class:`ccmetrics.formats.probabilities.ProbabilityMemoryError`, a
    ``MemoryLimitError``: the case's error row names the option and the case is evaluated again on resume)."""
    if isinstance(prob, (str, os.PathLike)):
        if not options.class_channels:
            return {
                1: read_probabilities(
                    prob, like=gt, channel=options.prob_channel, tolerance_mm=tolerance_mm, max_bytes=max_bytes
                )
            }
        channels = [ch for _, ch in options.class_channels]
        maps = read_probability_channels(prob, channels, like=gt, tolerance_mm=tolerance_mm, max_bytes=max_bytes)
        return {c: maps[ch] for c, ch in options.class_channels}
    if options.class_channels:
        raise ValueError("with classes, give each case's probabilities as a file (nnU-Net's .npz)")
    array = prob.array if isinstance(prob, Image) else np.asarray(prob)
    if array.shape != gt.array.shape:
        raise ValueError(f"the probability map has shape {array.shape}, the GT {gt.array.shape}")
    return {1: Image(np.asarray(array, np.float32), gt.spacing, gt.affine, None)}


def segmentation_of(prob: Image) -> Image:
    """The segmentation a binary softmax's argmax gives: ``prob > 0.5``."""
    return Image((prob.array > SEGMENTATION_THRESHOLD).astype(np.uint8), prob.spacing, prob.affine, prob.path)


def evaluate_with_maps(
    maps: dict[int, Image],
    pred: np.ndarray,
    gt: np.ndarray,
    options: Any,
    settings: dict[str, Any],
    *,
    case: str,
    voxel_mm3: float,
    affine: Any,
) -> tuple[dict[int, Any], pd.DataFrame, dict[int, dict[str, float]], pd.DataFrame | None]:
    """One case with its maps: each class evaluated on its GT prepared once (:func:`ccmetrics.evaluate`), whose
    lesions its candidates are matched to, and the thresholds swept on it.

    ``options`` is the data set's :class:`~ccmetrics.campaign.options.EvalOptions`; ``settings`` the keyword
    arguments of :func:`ccmetrics.evaluate` (spacing, tolerances, connectivity, detection rule).

    Returns
    -------
    results : dict of int to CaseResult
    candidates : pandas.DataFrame
        The case's ``per_candidate`` rows.
    values : dict of int to dict
        Each class's ``per_case`` values (``case_confidence``, ``brier``, ``ece``).
    thresholds : pandas.DataFrame or None
        The case's ``thresholds`` rows.
    """
    probabilities: ProbabilityOptions = options.probabilities
    metrics = options.metric_arguments()
    if options.classes:
        prepared = [
            (spec.value, mask, truth)
            for spec, mask, truth in prepare_classes(
                pred, gt, options.classes, ignore_label=options.ignore_label, connectivity=options.connectivity
            )
        ]
    else:
        prepared = [(1, pred, GroundTruth(gt, connectivity=options.connectivity, prepare=False))]
    results, frames, values, swept = {}, [], {}, []
    plain = {k: v for k, v in settings.items() if k != "detection_rule"}
    ignored = gt == options.ignore_label if options.classes and options.ignore_label is not None else None
    if ignored is not None and ignored.any():  # nnU-Net's ignore label: no candidate, no voxel, no threshold there
        maps = {c: Image(_zeroed(m.array, ignored), m.spacing, m.affine, m.path) for c, m in maps.items()}
    for c, mask, truth in prepared:
        results[c] = evaluate(gt=truth, pred=mask, metrics=metrics, **settings)
        frame, values[c] = case_candidates(
            maps[c],
            truth.array,
            truth.found,
            mask,
            probabilities,
            options.rule(),
            case=case,
            class_value=c,
            connectivity=options.connectivity,
            voxel_mm3=voxel_mm3,
            affine=affine,
            ignore=ignored,
        )
        frames.append(frame)
        if probabilities.thresholds:  # the same prepared GT for every threshold
            swept.append(
                sweep(
                    maps[c].array,
                    truth,
                    probabilities.thresholds,
                    metrics,
                    case=case,
                    class_value=c,
                    check=False,  # checked: read_case_maps, then find_candidates above
                    **plain,
                )
            )
    table = pd.concat(frames, ignore_index=True)
    return results, table, values, pd.concat(swept, ignore_index=True) if swept else None


def _zeroed(values: np.ndarray, where: np.ndarray) -> np.ndarray:
    """A copy of ``values`` with 0 where ``where`` is True, in ``values``' memory order: one ``np.where`` when both
    arrays share their memory order, else ``where``'s True voxels found in its own order (a Fortran-ordered mask read
    forwards) and set to 0 by index, never an element-wise pass striding across one of the two.

    >>> zeroed = _zeroed(np.asfortranarray(np.full((2, 3), 0.5, np.float32)), np.eye(2, 3, dtype=bool))
    >>> zeroed.tolist(), bool(zeroed.flags.f_contiguous)
    ([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5]], True)
    """
    if (values.flags.c_contiguous, values.flags.f_contiguous) == (where.flags.c_contiguous, where.flags.f_contiguous):
        return np.where(where, values.dtype.type(0), values)
    out = values.copy(order="K")
    out[np.nonzero(where.T)[::-1] if where.flags.f_contiguous else np.nonzero(where)] = 0
    return out


def case_candidates(
    prob: Image,
    gt: np.ndarray,
    lesions: Sites,
    pred: np.ndarray | None,
    options: ProbabilityOptions,
    rule: str,
    *,
    case: str,
    class_value: int = 1,
    connectivity: int | None,
    voxel_mm3: float,
    affine: Any,
    ignore: np.ndarray | None = None,
) -> tuple[pd.DataFrame, dict[str, float]]:
    """One case's candidates matched to its lesions: its ``per_candidate`` rows, and its ``per_case`` values (its
    confidence, the map's voxel-level Brier score and ECE against ``gt``)."""
    if options.candidates == "prediction":
        found = find_candidates(prob.array, prediction=pred, confidence=options.confidence, connectivity=connectivity)
    else:
        found = find_candidates(prob.array, str(options.candidates), connectivity=connectivity)  # checked: never None
    match = match_candidates(found, lesions, rule, match_by=options.match_by)
    frame = candidate_frame(found, match, case, class_value, voxel_mm3=voxel_mm3, affine=affine)
    calibration = voxel_calibration(prob.array, gt, ignore=ignore)
    return frame, {
        schema.CASE_CONFIDENCE: match.case_confidence,
        schema.BRIER: calibration["brier"],
        schema.ECE: calibration["ece"],
    }
