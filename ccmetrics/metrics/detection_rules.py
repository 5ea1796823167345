"""What counts as a detected lesion: the detection rules, and split and merged lesions, in one place.

A lesion L is a GT component (or a GT instance with ``sites="labels"``); U_L is the union of the
prediction components that overlap it. A rule (:class:`DetectionRule`, written ``"iou:0.1"`` on the
command line) decides whether L is detected:

==============  ==============================================================================
rule            L is detected when
==============  ==============================================================================
``overlap``     ``|U_L ∩ L| > 0``: any prediction voxel inside L (the default)
``iou:T``       ``IoU(L, U_L) = |U_L ∩ L| / |U_L ∪ L| ≥ T``
``dice:T``      ``Dice(L, U_L) = 2 |U_L ∩ L| / (|U_L| + |L|) ≥ T``
``coverage:T``  ``|U_L ∩ L| / |L| ≥ T``: the share of the lesion covered
``centroid``    the overlapping prediction component of highest IoU with L (ties: the lowest
                component number) has its centroid, rounded half up, inside L (the nuclei rule)
``suv_max``     a prediction voxel covers L's hottest voxel on the scan (the first in C order
                among equal maxima; needs the scan: ``evaluate(..., image=scan)``)
==============  ==============================================================================

A prediction component is a true positive (TP) when it overlaps at least one detected lesion, else a
false positive (FP): sensitivity = detected lesions / lesions, precision = TP components / components.
A lesion overlapped by two or more prediction components is *split* (judged by their union, counted
once); a prediction component overlapping two or more lesions is *merged* (a TP once). The counts
are kept beside the ``detected`` flag, never hidden behind it.

Cost: one gather of the prediction's component number at every GT voxel
(:func:`ccmetrics.metrics.matching.site_overlaps`; the centroid rule adds one pass over the prediction's
voxels; ``suv_max`` one gather of the scan at the lesion voxels and a binary search of each hottest voxel among
the prediction's voxels), then sums over the overlapping pairs: time and memory grow with the foreground only.

Examples
--------
A lesion of 10 voxels, 3 of them predicted (coverage 0.3):

>>> import numpy as np
>>> from ccmetrics.engine.components import find_sites
>>> gt = np.zeros((1, 12), bool); gt[0, :10] = True
>>> pred = np.zeros_like(gt); pred[0, :3] = True
>>> for rule in ("overlap", "coverage:0.5", "iou:0.3", "dice:0.4"):
...     print(rule, judge(find_sites(pred), find_sites(gt), rule).detected.tolist())
overlap [True]
coverage:0.5 [False]
iou:0.3 [True]
dice:0.4 [True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.components import Sites
from .matching import choose_pairs, site_overlaps

__all__ = ["DETECTION_RULES", "SUV_MAX_NEEDS_IMAGE", "DetectionRule", "LesionDetections", "judge"]

#: the detection rules, in the order the documentation gives them; ``iou``, ``dice`` and ``coverage`` take a
#: threshold; ``suv_max`` needs the scan
DETECTION_RULES = ("overlap", "iou", "dice", "coverage", "centroid", "suv_max")
#: why a rule that needs the scan was given none
SUV_MAX_NEEDS_IMAGE = (
    "the detection rule 'suv_max' (a lesion is detected when a predicted voxel covers its hottest voxel) needs the "
    "scan: evaluate(..., image=scan), the PET in SUV on the GT's grid"
)
_THRESHOLD_RULES = ("iou", "dice", "coverage")


@dataclass(frozen=True)
class DetectionRule:
    """A detection rule: its kind and, for ``iou``, ``dice`` and ``coverage``, its threshold.

    Build one with :meth:`parse` (``"overlap"``, ``"iou:0.1"``, ``"dice:0.1"``,
    ``"coverage:0.5"``, ``"centroid"``, ``"suv_max"``); ``str(rule)`` gives that spelling back.

    Examples
    --------
    >>> DetectionRule.parse("IoU: 0.25")
    DetectionRule(kind='iou', threshold=0.25)
    >>> str(DetectionRule.parse("coverage:0.5")), str(DetectionRule.parse(None))
    ('coverage:0.5', 'overlap')
    """

    kind: str = "overlap"
    threshold: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in DETECTION_RULES:
            raise ValueError(
                f"unknown detection rule {self.kind!r}: use one of overlap, iou:T, dice:T, coverage:T, centroid, "
                f"suv_max (T a threshold in (0, 1], e.g. iou:0.1)"
            )
        if self.kind in _THRESHOLD_RULES:
            t = self.threshold
            if t is None or isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 1:
                raise ValueError(
                    f"the detection rule {self.kind!r} needs a threshold in (0, 1], e.g. {self.kind}:0.5; got {t!r}"
                )
            object.__setattr__(self, "threshold", float(t))
        elif self.threshold is not None:
            raise ValueError(f"the detection rule {self.kind!r} takes no threshold; write just {self.kind!r}")

    @classmethod
    def parse(cls, value: Any) -> DetectionRule:
        """A rule from its spelling (``"iou:0.1"``), a rule, or None (the default, ``overlap``)."""
        if value is None:
            return cls()
        if isinstance(value, DetectionRule):
            return value
        if not isinstance(value, str):
            raise TypeError(f"detection_rule must be a string such as 'iou:0.1' or a DetectionRule, got {value!r}")
        kind, sep, threshold = (part.strip() for part in value.partition(":"))
        if not sep:
            return cls(kind.lower())
        try:
            number = float(threshold)
        except ValueError:
            raise ValueError(
                f"the threshold of detection rule {value!r} is not a number: write e.g. {kind.lower()}:0.5"
            ) from None
        return cls(kind.lower(), number if math.isfinite(number) else math.nan)

    def __str__(self) -> str:
        return self.kind if self.threshold is None else f"{self.kind}:{self.threshold:g}"


@dataclass(frozen=True)
class LesionDetections:
    """Every lesion and every prediction component of one case judged under one rule.

    Lesions are the GT sites 1..K and prediction components 1..M in the order of their
    :class:`~ccmetrics.engine.components.Sites`; the arrays are indexed from 0.

    Attributes
    ----------
    rule : DetectionRule
    detected : ndarray of bool, (K,)
        The lesion passes the rule.
    n_pred : ndarray of int64, (K,)
        Prediction components overlapping the lesion (split when ≥ 2).
    covered : ndarray of int64, (K,)
        ``|U_L ∩ L|``: the lesion's voxels inside the prediction.
    union_volume : ndarray of int64, (K,)
        ``|U_L|``: the voxels of the prediction components overlapping it.
    pred_tp : ndarray of bool, (M,)
        The component overlaps at least one detected lesion.
    n_gt : ndarray of int64, (M,)
        Lesions the component overlaps (merged when ≥ 2).
    best_iou : ndarray of float64, (M,)
        The component's highest IoU with one lesion (0 when it overlaps none).
    pair_gt, pair_pred : ndarray of int64
        The overlapping (lesion, component) pairs, numbered from 1, sorted by lesion then component.
    """

    rule: DetectionRule
    detected: np.ndarray
    n_pred: np.ndarray
    covered: np.ndarray
    union_volume: np.ndarray
    pred_tp: np.ndarray
    n_gt: np.ndarray
    best_iou: np.ndarray
    pair_gt: np.ndarray
    pair_pred: np.ndarray

    @property
    def split(self) -> np.ndarray:
        """Lesions overlapped by two or more prediction components."""
        return self.n_pred >= 2

    @property
    def merged(self) -> np.ndarray:
        """Prediction components overlapping two or more lesions."""
        return self.n_gt >= 2

    def lesions_of(self, component: int) -> list[int]:
        """The lesions (numbered from 1) that prediction component ``component`` (from 1) overlaps."""
        return self.pair_gt[self.pair_pred == component].tolist()


def judge(pred_sites: Sites, gt_sites: Sites, rule: Any = None, image: Any = None) -> LesionDetections:
    """Judge every lesion and prediction component of one case under a detection rule.

    Parameters
    ----------
    pred_sites, gt_sites : Sites
        The prediction's connected components and the GT's lesions (components or instances), from
        :func:`ccmetrics.engine.components.find_sites` or a :class:`~ccmetrics.engine.components.ComponentCache`.
    rule : str or DetectionRule, optional
        See the module's table; default ``"overlap"``.
    image : array_like, optional
        The scan (SUV) on the GT's grid, for the ``suv_max`` rule (read at the lesion voxels only); unused by the
        others.

    Raises
    ------
    ValueError
        ``suv_max`` without ``image`` (:data:`SUV_MAX_NEEDS_IMAGE`); a NaN or inf SUV inside a lesion.

    Returns
    -------
    LesionDetections

    Examples
    --------
    One prediction component over two lesions (merged), and a lesion hit by two components (split):

    >>> import numpy as np
    >>> from ccmetrics.engine.components import find_sites
    >>> gt = np.array([[1, 1, 0, 1, 1, 0, 1, 1, 1, 1]], bool)
    >>> pred = np.array([[1, 1, 1, 1, 0, 0, 1, 0, 0, 1]], bool)
    >>> d = judge(find_sites(pred), find_sites(gt))
    >>> d.detected.tolist(), d.n_pred.tolist(), d.n_gt.tolist(), d.merged.tolist(), d.split.tolist()
    ([True, True, True], [1, 1, 2], [2, 1, 1], [True, False, False], [False, False, True])

    By uptake: the first lesion's hottest voxel (SUV 5) is predicted, the second's (the first of its two 4s) is not:

    >>> gt = np.array([[1, 1, 0, 1, 1, 1]], bool)
    >>> pred = np.array([[0, 1, 0, 0, 1, 0]], bool)
    >>> scan = np.array([[1.0, 5.0, 0.0, 4.0, 2.0, 4.0]])
    >>> judge(find_sites(pred), find_sites(gt), "suv_max", image=scan).detected.tolist()
    [True, False]
    """
    rule = DetectionRule.parse(rule)
    if rule.kind == "suv_max" and image is None:
        raise ValueError(SUV_MAX_NEEDS_IMAGE)
    ov = site_overlaps(pred_sites, gt_sites, centroids=rule.kind == "centroid")
    k, m = gt_sites.n, pred_sites.n
    gt_volume = ov.gt_sizes.astype(np.int64)
    covered = np.bincount(ov.pair_gt, weights=ov.pair_intersection, minlength=k).astype(np.int64)
    union_volume = np.bincount(ov.pair_gt, weights=ov.pred_sizes[ov.pair_pred], minlength=k).astype(np.int64)
    n_pred = np.bincount(ov.pair_gt, minlength=k).astype(np.int64)
    if rule.kind == "overlap":
        detected = covered > 0
    elif rule.kind == "centroid":
        detected = np.zeros(k, bool)
        detected[ov.pair_gt[choose_pairs(ov, "centroid")]] = True
    elif rule.kind == "suv_max":
        detected = _hottest_voxel_predicted(pred_sites, gt_sites, image)
    else:
        threshold = float(rule.threshold or 0.0)  # set for these rules (DetectionRule checks it)
        with np.errstate(invalid="ignore", divide="ignore"):
            if rule.kind == "iou":
                score = covered / (gt_volume + union_volume - covered)
            elif rule.kind == "dice":
                score = 2 * covered / (gt_volume + union_volume)
            else:
                score = covered / gt_volume
        detected = (covered > 0) & (score >= threshold)
    pair_detected = detected[ov.pair_gt]
    pred_tp = np.bincount(ov.pair_pred, weights=pair_detected, minlength=m) > 0
    n_gt = np.bincount(ov.pair_pred, minlength=m).astype(np.int64)
    best_iou = np.zeros(m)
    if len(ov.pair_pred):
        np.maximum.at(best_iou, ov.pair_pred, ov.pair_iou)
    return LesionDetections(
        rule, detected, n_pred, covered, union_volume, pred_tp, n_gt, best_iou, ov.pair_gt + 1, ov.pair_pred + 1
    )


def _hottest_voxel_predicted(pred_sites: Sites, gt_sites: Sites, image: Any) -> np.ndarray:
    """Per lesion: is its hottest voxel (the first in C order among equal maxima) a prediction voxel?"""
    from .pet import lesion_uptake  # on first use: only this rule reads the scan

    hot = lesion_uptake(image, gt_sites)["hot_index"]
    detected = np.zeros(gt_sites.n, bool)
    found = hot >= 0
    detected[found] = pred_sites.labels_at(hot[found]) > 0
    return detected
