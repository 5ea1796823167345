"""Overlap metrics (Dice, IoU) from voxel counts, vectorised over components.

Each formula takes the intersection ``|P ∩ G|`` and the two volumes ``|P|``, ``|G|`` (voxels), one
entry per component or one for the image, and gives 1.0 where both masks are empty (a perfect
empty prediction). Cost: a few vectorised operations per call, whatever the image size.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._deprecation import deprecated

__all__ = ["OVERLAP_FORMULAS", "dice_from_counts", "iou_from_counts", "overlap_scores"]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), 1.0)


def _counts(intersection: Any, pred_volume: Any, gt_volume: Any) -> tuple[np.ndarray, np.ndarray]:
    inter = np.asarray(intersection, dtype=np.float64)
    return inter, np.asarray(pred_volume, dtype=np.float64) + np.asarray(gt_volume, dtype=np.float64)


def dice_from_counts(intersection: Any, pred_volume: Any, gt_volume: Any) -> np.ndarray:
    """``2|P∩G| / (|P| + |G|)``; 1.0 where both masks are empty.

    >>> dice_from_counts([3, 0], [4, 0], [4, 0])
    array([0.75, 1.  ])
    """
    inter, total = _counts(intersection, pred_volume, gt_volume)
    return _ratio(2 * inter, total)


def iou_from_counts(intersection: Any, pred_volume: Any, gt_volume: Any) -> np.ndarray:
    """``|P∩G| / |P∪G|``; 1.0 where both masks are empty.

    >>> iou_from_counts([3, 0], [4, 0], [4, 0])
    array([0.6, 1. ])
    """
    inter, total = _counts(intersection, pred_volume, gt_volume)
    return _ratio(inter, total - inter)


#: the overlap metrics computed from counts (what each means, its direction: :mod:`ccmetrics.metrics.registry`)
OVERLAP_FORMULAS: dict[str, Callable[[Any, Any, Any], np.ndarray]] = {"dice": dice_from_counts, "iou": iou_from_counts}


def overlap_scores(intersection: Any, pred_volume: Any, gt_volume: Any, name: str) -> np.ndarray:
    """Dice or IoU from voxel counts.

    Parameters
    ----------
    intersection, pred_volume, gt_volume : array_like of int
        ``|P ∩ G|``, ``|P|`` and ``|G|`` (voxels), one entry per component or image.
    name : {"dice", "iou"}
        ``dice = 2|P∩G| / (|P| + |G|)``, ``iou = |P∩G| / |P∪G|``.

    Returns
    -------
    ndarray of float64
        1.0 where both masks are empty (a perfect empty prediction).

    Examples
    --------
    >>> overlap_scores([3, 0], [4, 0], [4, 0], "dice")
    array([0.75, 1.  ])
    """
    formula = OVERLAP_FORMULAS.get(name)
    if formula is None:
        raise ValueError(f"unknown overlap metric {name!r}; expected one of {tuple(OVERLAP_FORMULAS)}")
    return formula(intersection, pred_volume, gt_volume)


def __getattr__(name: str):  # the former OVERLAP_METRICS: deprecated
    advice = "the metrics are the registry's records (ccmetrics.metrics.registry.names)"
    return deprecated(__name__, name, {"OVERLAP_METRICS": lambda: tuple(OVERLAP_FORMULAS)}, advice)
