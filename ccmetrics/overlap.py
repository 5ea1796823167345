"""Overlap metrics (Dice, IoU) from voxel counts, vectorised over components."""

from __future__ import annotations

import numpy as np

#: overlap metrics computed from counts
OVERLAP_METRICS = ("dice", "iou")


def overlap_scores(intersection, pred_volume, gt_volume, name: str) -> np.ndarray:
    """Dice or IoU from voxel counts.

    Parameters
    ----------
    intersection, pred_volume, gt_volume : array_like of int
        |P ∩ S|, |P| and |S| (voxels), one entry per component or image.
    name : {"dice", "iou"}
        ``dice = 2|P∩S| / (|P| + |S|)``, ``iou = |P∩S| / |P∪S|``.

    Returns
    -------
    ndarray of float64
        1.0 where both masks are empty (a perfect empty prediction).

    Examples
    --------
    >>> overlap_scores([3, 0], [4, 0], [4, 0], "dice")
    array([0.75, 1.  ])
    """
    inter = np.asarray(intersection, dtype=np.float64)
    total = np.asarray(pred_volume, dtype=np.float64) + np.asarray(gt_volume, dtype=np.float64)
    if name == "dice":
        num, den = 2 * inter, total
    elif name == "iou":
        num, den = inter, total - inter
    else:
        raise ValueError(f"unknown overlap metric {name!r}; expected one of {OVERLAP_METRICS}")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), 1.0)
