"""Lesion candidates of a probability map, as ``report_guided_annotation`` extracts them with ``threshold="dynamic"``.

:func:`dynamic_candidates` returns the same candidates, voxel for voxel, with the same confidences, as
``report_guided_annotation.extract_lesion_candidates(prob, threshold="dynamic")`` (version 0.3.4, the one
``picai_eval`` uses) with its defaults, but labels each threshold's mask once instead of once per candidate.

The reference algorithm (``extract_lesion_candidates_dynamic``, version 1) with its defaults
``num_lesions_to_extract=5``, ``dynamic_threshold_factor=2.5``, ``min_voxels_detection=10``,
``max_prob_round_decimals=None`` (no rounding), ``remove_adjacent_lesion_candidates=True``,
``max_prob_failsafe_stopping_threshold=0.01`` and ``lesion_confidence_aggregation=np.max``:

0. float16 maps are cast to float32 and long double to float64 (complex ones are refused); all
   arithmetic below stays in that dtype (NumPy scalars: ``max < 0.01`` and ``max / 2.5`` are float32
   operations for a float32 map).  ``working`` is a copy of the map.
1. Repeat while fewer than 5 candidates were kept:

   a. ``M = working.max()``; stop if ``M < 0.01``.  Threshold ``t = M / 2.5``.
   b. Take the connected components of ``working >= t`` (26-connectivity, ``np.ones((3, 3, 3))``) and
      drop those of at most 10 voxels (``count <= min_voxels_detection``: a candidate has >= 11).  The
      confidence of a component is its peak, the max of ``working`` over it, unrounded.
   c. The candidate is the remaining component of highest peak; among equal peaks the first in raster
      (C) order of its first voxel (label 1 of ``ndimage.label`` on the mask of the tied components).
   d. It is kept, with label ``1 + number kept so far`` and its peak as confidence, unless it touches
      (26-neighbourhood: is within one voxel of) an already kept candidate; then it is discarded and does
      not count.  Candidates never overlap: kept or not, the candidate is zeroed in ``working``.

Quirks, all kept here since the output must be identical:

* The threshold follows the global max of ``working``, even when that max lies in a component of <= 10
  voxels: such a small peak is never removed, so it keeps the threshold at ``M / 2.5`` for the larger
  components of lower peak, extracted one by one at that threshold.
* Once every component at the current threshold is small (version 1; ``"dynamic-v2"`` instead zeroes them
  and goes on), the reference takes the connected zero map as a "candidate" covering the whole volume,
  records it with confidence 0.0 (and, when nothing was kept before, its index 1 on every voxel of
  its index map), and zeroes ``working``: the extraction ends.  The detection map is unchanged by it, so
  here it simply ends the loop.
* A discarded (adjacent) candidate is still removed from ``working``, which can lower the next threshold.
* Only 3D maps are labelled (the 3x3x3 structure raises for any other rank), except that a map whose max
  is below 0.01 returns no candidate whatever its rank; here other ranks raise ``ValueError`` likewise.
  NaN maps, where the reference's output is ill-defined, raise ``ValueError`` as well.

Speed: the reference labels the full volume and compares it with every component label at every
iteration, then dilates the full volume.  Here a threshold's mask is labelled once on its voxel list
(:func:`ccmetrics.engine.components.component_labels`, components numbered in raster order, so ties
break by label), its component peaks and sizes come from one sort, and the ranked components are reused
while the max of ``working`` (hence the threshold) is unchanged: removing one whole component of
``working >= t`` leaves the others as they are.  Adjacency is checked on the candidate's voxels against
the 26-dilation of the kept candidates, built inside each kept candidate's bounding box.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from ..engine.components import component_labels

__all__ = ["dynamic_candidates"]

NUM_LESIONS_TO_EXTRACT = 5
DYNAMIC_THRESHOLD_FACTOR = 2.5
MIN_VOXELS_DETECTION = 10  # components of at most this many voxels are dropped
FAILSAFE_PEAK = 0.01  # max_prob_failsafe_stopping_threshold
_CUBE = np.ones((3, 3, 3), dtype=bool)


def _ranked_components(working: np.ndarray, threshold: np.generic) -> tuple[list[np.ndarray], list[np.generic]]:
    """Flat voxel indices and peaks of the components of ``working >= threshold`` with more than
    ``MIN_VOXELS_DETECTION`` voxels, by decreasing peak, ties in raster order of the first voxel."""
    mask = working >= threshold
    flat = np.flatnonzero(mask)
    lab, n = component_labels(mask, flat, 26)
    order = np.argsort(lab, kind="stable")
    flat, counts = flat[order], np.bincount(lab, minlength=n + 1)[1:]
    starts = np.concatenate(([0], np.cumsum(counts)))
    peaks = np.maximum.reduceat(working.reshape(-1)[flat], starts[:-1]) if n else counts
    large = np.flatnonzero(counts > MIN_VOXELS_DETECTION)  # component label - 1, raster order
    ranked = large[np.lexsort((-large, peaks[large]))[::-1]]  # peak descending, then label ascending
    return [flat[starts[k] : starts[k + 1]] for k in ranked], [peaks[k] for k in ranked]


def dynamic_candidates(prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lesion candidates of ``prob`` as ``extract_lesion_candidates(prob, threshold="dynamic")`` finds them.

    Parameters
    ----------
    prob : ndarray
        3D softmax / probability map (any real dtype; float16 is computed in float32).

    Returns
    -------
    labels : ndarray of int32
        0 for background, k = 1..K for the k-th kept candidate (the reference's index map).
    confidences : ndarray, shape (K,)
        Confidence (peak probability) of candidate k at index k - 1, in the map's (computing) dtype:
        ``np.where(labels > 0, confidences[labels - 1], 0)`` is the reference's detection map.

    Examples
    --------
    >>> prob = np.zeros((6, 6, 12))
    >>> prob[1:4, 1:4, 1:4] = 0.5  # 27 voxels, peak 0.9: a candidate
    >>> prob[2, 2, 2] = 0.9
    >>> prob[1:4, 1:4, 7:11] = 0.3  # 36 voxels, below 0.9 / 2.5 at first, kept at threshold 0.3 / 2.5
    >>> prob[5, 5, 0] = 0.2  # a single voxel: too small
    >>> labels, confidences = dynamic_candidates(prob)
    >>> confidences.tolist(), np.bincount(labels.ravel()).tolist()
    ([0.9, 0.3], [369, 27, 36])

    A small component holding the max keeps the threshold at 0.8 / 2.5 and then ends the extraction:

    >>> prob[5, 5, 0] = 0.8
    >>> labels, confidences = dynamic_candidates(prob)
    >>> confidences.tolist(), np.bincount(labels.ravel()).tolist()
    ([0.9], [405, 27])
    """
    working = np.asarray(prob)
    if working.dtype == np.float16:
        working = working.astype(np.float32)
    elif working.dtype == np.longdouble:
        working = working.astype(np.float64)
    elif np.iscomplexobj(working):
        raise ValueError("the probability map must be real, not complex")
    working = np.array(working, order="C")  # a copy: candidates are zeroed in it
    flat_working = working.reshape(-1)
    labels = np.zeros(working.shape, dtype=np.int32)
    near = np.zeros(working.shape, dtype=bool)  # kept candidates, dilated by one voxel (26-neighbourhood)
    confidences: list[np.generic] = []
    level = None  # the max of `working` that `ranked` was built for
    while len(confidences) < NUM_LESIONS_TO_EXTRACT:
        max_prob = working.max()
        if np.isnan(max_prob):
            raise ValueError("the probability map contains NaN")
        if max_prob < FAILSAFE_PEAK:
            break
        if working.ndim != 3:
            raise ValueError(f"the probability map must be 3D, not {working.ndim}D")
        if level is None or max_prob != level:  # a new threshold: rank its components once
            voxels, peaks = _ranked_components(working, max_prob / DYNAMIC_THRESHOLD_FACTOR)
            level, next_rank = max_prob, 0
        if next_rank == len(voxels):  # only small components left: the reference ends here (version 1)
            break
        flat, peak = voxels[next_rank], peaks[next_rank]
        next_rank += 1
        if not near.reshape(-1)[flat].any():
            labels.reshape(-1)[flat] = len(confidences) + 1
            confidences.append(peak)
            coords = np.unravel_index(flat, working.shape)
            box = tuple(slice(max(int(c.min()) - 1, 0), int(c.max()) + 2) for c in coords)
            near[box] |= ndimage.binary_dilation(labels[box] == len(confidences), structure=_CUBE)
        flat_working[flat] = 0
    return labels, np.array(confidences, dtype=working.dtype)
