"""Instance matching and Panoptic Quality (Kirillov et al.), binary and multi-class.

Matching never depends on label values: all pairwise overlaps are counted in
one pass over the voxels where both maps are non-zero, and every rule works
on those counts.  This avoids the two bugs of the MoNuSAC 2020 evaluation code
(Foucart et al.): removing the prediction whose *id equals the GT id* after a
match, and never counting predictions of a class absent from an image's GT.
"""

from __future__ import annotations

import warnings
from functools import cached_property

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from ._inputs import as_binary_mask, as_label_map, check_same_shape
from .components import Sites, find_sites

MATCHING_RULES = ("iou", "centroid", "max_iou")
AGGREGATIONS = ("image", "dataset", "group")


@dataclass(frozen=True)
class Overlaps:
    """Instance sizes and the non-zero pairwise overlaps of two instance maps (voxels)."""

    gt_labels: np.ndarray
    gt_sizes: np.ndarray
    pred_labels: np.ndarray
    pred_sizes: np.ndarray
    pair_gt: np.ndarray  # index into gt_labels
    pair_pred: np.ndarray  # index into pred_labels
    pair_intersection: np.ndarray

    @cached_property
    def pair_iou(self) -> np.ndarray:
        union = self.gt_sizes[self.pair_gt] + self.pred_sizes[self.pair_pred] - self.pair_intersection
        return self.pair_intersection / union


def site_overlaps(pred_sites: Sites, gt_sites: Sites) -> Overlaps:
    """Instance sizes and all non-zero pairwise overlaps, from the voxel lists of both.

    One gather of the prediction's instance index at every GT voxel: the cost
    depends on the number of foreground voxels, never on the number of pairs.
    """
    pred_map = np.zeros(int(np.prod(gt_sites.shape)), dtype=np.int32)
    pred_map[pred_sites.flat_index] = pred_sites.label
    at_gt = pred_map[gt_sites.flat_index]
    both = at_gt > 0
    g = gt_sites.label[both].astype(np.int64) - 1
    p = at_gt[both].astype(np.int64) - 1
    n_pred = max(pred_sites.n, 1)
    keys, counts = np.unique(g * n_pred + p, return_counts=True)
    return Overlaps(gt_sites.source_label, gt_sites.volumes, pred_sites.source_label, pred_sites.volumes,
                    keys // n_pred, keys % n_pred, counts)


def instance_overlaps(pred_instances: Any, gt_instances: Any) -> Overlaps:
    """Instance sizes and all non-zero pairwise overlaps of two instance label maps (voxels)."""
    return site_overlaps(find_sites(pred_instances, "labels"), find_sites(gt_instances, "labels"))


@dataclass(frozen=True)
class Matching:
    """One-to-one matches between GT and predicted instances.

    Attributes
    ----------
    pairs : pandas.DataFrame
        One row per match: ``gt_label``, ``pred_label``, ``iou``, ``intersection``
        (voxels), sorted by GT label.
    unmatched_gt, unmatched_pred : ndarray
        Labels of the missed GT instances (FN) and unmatched predictions (FP).
    """

    pairs: pd.DataFrame
    unmatched_gt: np.ndarray
    unmatched_pred: np.ndarray

    @property
    def tp(self) -> int:
        return len(self.pairs)

    @property
    def fp(self) -> int:
        return len(self.unmatched_pred)

    @property
    def fn(self) -> int:
        return len(self.unmatched_gt)


def _assign(ov: Overlaps, keep: np.ndarray) -> np.ndarray:
    """Indices of pairs (within ``keep``) of a one-to-one assignment maximising total IoU."""
    cand = np.flatnonzero(keep)
    if cand.size == 0:
        return cand
    rows, g = np.unique(ov.pair_gt[cand], return_inverse=True)
    cols, p = np.unique(ov.pair_pred[cand], return_inverse=True)
    weight = np.zeros((len(rows), len(cols)))
    index = np.full((len(rows), len(cols)), -1)
    weight[g, p] = ov.pair_iou[cand]
    index[g, p] = cand
    r, c = linear_sum_assignment(weight, maximize=True)
    chosen = index[r, c]
    return np.sort(chosen[chosen >= 0])


def _centroid_rule(ov: Overlaps, pred_sites: Sites, gt_sites: Sites) -> np.ndarray:
    iou = ov.pair_iou
    # for each GT, the overlapping prediction of highest IoU (ties: lowest prediction label)
    order = np.lexsort((ov.pair_pred, -iou, ov.pair_gt))
    first = order[np.r_[True, np.diff(ov.pair_gt[order]) != 0]] if order.size else order
    # rounded centroid (half up) of every prediction
    coords = pred_sites.coords()
    which = pred_sites.label - 1
    centroid = np.stack([np.floor(np.bincount(which, weights=c, minlength=pred_sites.n) / pred_sites.volumes + 0.5)
                         for c in coords.T], axis=1).astype(np.int64)
    gt_map = np.zeros(int(np.prod(gt_sites.shape)), dtype=np.int32)
    gt_map[gt_sites.flat_index] = gt_sites.label
    at = gt_map[np.ravel_multi_index(tuple(centroid[ov.pair_pred[first]].T), gt_sites.shape)]
    return np.sort(first[at - 1 == ov.pair_gt[first]])


def _match(pred_sites: Sites, gt_sites: Sites, rule: str, threshold: float) -> Matching:
    ov = site_overlaps(pred_sites, gt_sites)
    if rule == "iou":
        keep = ov.pair_iou > threshold
        chosen = np.flatnonzero(keep) if threshold >= 0.5 else _assign(ov, keep)
    elif rule == "max_iou":
        chosen = _assign(ov, ov.pair_intersection > 0)
    else:
        chosen = _centroid_rule(ov, pred_sites, gt_sites)
    g, p = ov.pair_gt[chosen], ov.pair_pred[chosen]
    pairs = pd.DataFrame({"gt_label": ov.gt_labels[g], "pred_label": ov.pred_labels[p],
                          "iou": ov.pair_iou[chosen], "intersection": ov.pair_intersection[chosen]})
    pairs = pairs.sort_values("gt_label", kind="stable").reset_index(drop=True)
    return Matching(pairs, np.setdiff1d(ov.gt_labels, ov.gt_labels[g]), np.setdiff1d(ov.pred_labels, ov.pred_labels[p]))


def _check_rule(rule: str, threshold: float) -> float:
    if rule not in MATCHING_RULES:
        raise ValueError(f"rule must be one of {MATCHING_RULES}, got {rule!r}")
    threshold = float(threshold)
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    return threshold


def match_instances(pred_instances: Any, gt_instances: Any, rule: str = "iou", threshold: float = 0.5) -> Matching:
    """Match predicted to GT instances one-to-one.

    Parameters
    ----------
    pred_instances, gt_instances : array_like or torch.Tensor
        Instance label maps (2D or 3D, 0 = background); any label values.
    rule : {"iou", "centroid", "max_iou"}
        ``"iou"``: pairs with IoU strictly above ``threshold``; unique by
        construction for thresholds >= 0.5, a maximum-total-IoU (Hungarian)
        assignment among those pairs below 0.5.  ``"centroid"``: for each GT
        instance, the overlapping prediction of highest IoU, accepted when the
        prediction's centroid (rounded half up) lies inside that GT instance.
        ``"max_iou"``: a one-to-one assignment maximising the total IoU among
        all overlapping pairs.
    threshold : float
        IoU threshold of the ``"iou"`` rule (ignored by the others).

    Returns
    -------
    Matching

    Examples
    --------
    >>> gt = np.array([[1, 1, 0, 2, 2]])
    >>> pred = np.array([[7, 7, 0, 0, 9]])
    >>> m = match_instances(pred, gt)
    >>> m.pairs[["gt_label", "pred_label", "iou"]].values.tolist()
    [[1.0, 7.0, 1.0]]
    >>> m.unmatched_gt.tolist(), m.unmatched_pred.tolist()  # IoU exactly 0.5 is no match
    ([2], [9])
    """
    threshold = _check_rule(rule, threshold)
    pred_map, gt_map = as_label_map(pred_instances, "pred_instances"), as_label_map(gt_instances, "gt_instances")
    check_same_shape(pred_map, gt_map)
    return _match(find_sites(pred_map, "labels"), find_sites(gt_map, "labels"), rule, threshold)


@dataclass(frozen=True)
class PQResult:
    """Panoptic Quality of one image.

    ``rq = tp / (tp + fp/2 + fn/2)``, ``sq = iou_sum / tp`` (0 without a
    match), ``pq = sq * rq``; all three are NaN when both images are empty.
    ``pairs`` lists the matches (``gt_label``, ``pred_label``, ``iou``, ...).
    """

    pq: float
    sq: float
    rq: float
    tp: int
    fp: int
    fn: int
    iou_sum: float
    pairs: pd.DataFrame


def pq_from_counts(tp: int, fp: int, fn: int, iou_sum: float) -> tuple:
    """``(pq, sq, rq)`` from match counts; NaN when there is nothing at all."""
    if tp + fp + fn == 0:
        return (np.nan, np.nan, np.nan)
    rq = tp / (tp + 0.5 * fp + 0.5 * fn)
    sq = iou_sum / tp if tp else 0.0
    return (sq * rq, sq, rq)


def _pq_result(m: Matching) -> PQResult:
    iou_sum = float(m.pairs["iou"].sum())
    pq, sq, rq = pq_from_counts(m.tp, m.fp, m.fn, iou_sum)
    return PQResult(pq, sq, rq, m.tp, m.fp, m.fn, iou_sum, m.pairs)


def _instances(x: Any, name: str, instances: bool, connectivity: Optional[int]) -> Sites:
    if instances:
        return find_sites(as_label_map(x, name), "labels")
    return find_sites(as_binary_mask(x, name), "components", connectivity)


def panoptic_quality(
    pred: Any,
    gt: Any,
    *,
    rule: str = "iou",
    threshold: float = 0.5,
    connectivity: Optional[int] = None,
    instances: bool = False,
) -> PQResult:
    """Panoptic Quality ``PQ = SQ x RQ`` of one image.

    Parameters
    ----------
    pred, gt : array_like or torch.Tensor
        Binary masks, split into connected components, or instance label maps
        with ``instances=True``.  2D or 3D.
    rule, threshold : see :func:`match_instances`
        The default is Kirillov et al.'s: IoU strictly above 0.5.
    connectivity : int, optional
        Component connectivity for binary input: 26 (default), 18, 6 in 3D; 8
        (default), 4 in 2D.  The CC-Metrics paper's toy example used
        ``scipy.ndimage.label``'s default, 6 (4 in 2D).
    instances : bool
        Take ``pred`` and ``gt`` as instance label maps.

    Returns
    -------
    PQResult
        NaN ``pq``/``sq``/``rq`` when both are empty.

    Examples
    --------
    GT squares labelled 1, 2, 3 predicted exactly as 4, 5, 6 (the MoNuSAC bug case):

    >>> gt = np.zeros((10, 30), int)
    >>> for i in range(3):
    ...     gt[2:6, 10 * i:10 * i + 4] = i + 1
    >>> pred = np.where(gt > 0, gt + 3, 0)
    >>> r = panoptic_quality(pred, gt, instances=True)
    >>> r.pq, r.tp, r.fp, r.fn
    (1.0, 3, 0, 0)
    """
    threshold = _check_rule(rule, threshold)
    pred_sites = _instances(pred, "pred", instances, connectivity)
    gt_sites = _instances(gt, "gt", instances, connectivity)
    if pred_sites.shape != gt_sites.shape:
        raise ValueError(f"pred and gt must have the same shape, got {pred_sites.shape} and {gt_sites.shape}")
    return _pq_result(_match(pred_sites, gt_sites, rule, threshold))


@dataclass(frozen=True)
class MultiPQResult:
    """Multi-class Panoptic Quality over a data set.

    Attributes
    ----------
    pq : float
        The aggregated PQ (see ``aggregation``).
    per_class : pandas.DataFrame
        Index ``class``: ``tp``, ``fp``, ``fn``, ``iou_sum`` pooled over all
        images, and ``pq``: the class's PQ under the chosen aggregation (pooled
        for ``"dataset"``, mean over the images or groups where the class
        occurs otherwise).
    per_unit : pandas.DataFrame
        One row per image (``"image"``, ``"dataset"``) or group (``"group"``):
        per-class PQ columns and the unit's ``pq`` (mean over its classes).
    aggregation : str
    n_undefined : int
        Units (images or groups; classes for ``"dataset"``) with nothing in GT
        or prediction, whose NaN was excluded from the mean.
    """

    pq: float
    per_class: pd.DataFrame
    per_unit: pd.DataFrame
    aggregation: str
    n_undefined: int


def _instance_classes(instances: np.ndarray, classes: np.ndarray, labels: np.ndarray, name: str) -> np.ndarray:
    """Majority class of each instance (ties to the lowest class)."""
    flat = np.flatnonzero(instances)
    which = np.searchsorted(labels, instances.ravel()[flat])
    cls = classes.ravel()[flat].astype(np.int64)
    n_cls = int(cls.max()) + 1 if cls.size else 1
    votes = np.zeros((len(labels), n_cls), dtype=np.int64)
    np.add.at(votes, (which, cls), 1)
    votes[:, 0] = -1  # background never wins
    majority = votes.argmax(axis=1)
    if len(labels) and (votes.max(axis=1) <= 0).any():
        bad = labels[votes.max(axis=1) <= 0][0]
        raise ValueError(f"{name}: instance {bad} has class 0 over all its pixels; every instance needs a class")
    return majority


def multiclass_pq(
    pred_instances: Sequence[Any],
    pred_classes: Sequence[Any],
    gt_instances: Sequence[Any],
    gt_classes: Sequence[Any],
    *,
    aggregation: str = "image",
    groups: Optional[Sequence[Any]] = None,
    n_classes: Optional[int] = None,
    rule: str = "iou",
    threshold: float = 0.5,
) -> MultiPQResult:
    """Multi-class Panoptic Quality over a list of images.

    Each instance takes the majority class of its pixels in the class map and
    is matched only against instances of the same class.  A prediction of a
    class absent from an image's GT is a false positive of that class.

    Parameters
    ----------
    pred_instances, gt_instances : sequence of arrays
        One instance label map per image (0 = background).
    pred_classes, gt_classes : sequence of arrays
        One class map per image, giving each pixel's class (0 = background).
    aggregation : {"image", "dataset", "group"}
        ``"image"`` (aPQ, HoVer-Net/MoNuSAC style): per image, the mean PQ
        over the classes present in its GT or prediction, then the mean over
        images.  ``"dataset"`` (mPQ, CoNIC style): TP/FP/FN/IoU pooled per
        class over all images, then the mean over classes.  ``"group"``: pooled
        per group (patient) given by ``groups``, mean over the group's classes,
        then over groups.
    groups : sequence, optional
        Group (patient) id of each image; required for ``"group"``.
    n_classes : int, optional
        Classes are 1..n_classes; default: the largest class in the maps.
    rule, threshold : see :func:`match_instances`

    Returns
    -------
    MultiPQResult

    Examples
    --------
    >>> gt = np.zeros((8, 8), int); gt[1:4, 1:4] = 1; gt[5:8, 5:8] = 2
    >>> gt_cls = np.where(gt == 1, 1, np.where(gt == 2, 2, 0))
    >>> pred_cls = np.where(gt > 0, 1, 0)  # the second nucleus gets the wrong class
    >>> r = multiclass_pq([gt], [pred_cls], [gt], [gt_cls], aggregation="dataset")
    >>> r.per_class["pq"].tolist(), r.pq
    ([0.6666666666666666, 0.0], 0.3333333333333333)
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    threshold = _check_rule(rule, threshold)
    n_images = len(gt_instances)
    if not (len(pred_instances) == len(pred_classes) == len(gt_classes) == n_images):
        raise ValueError("pred_instances, pred_classes, gt_instances and gt_classes need one array per image each")
    if aggregation == "group":
        if groups is None or len(groups) != n_images:
            raise ValueError("aggregation='group' needs groups=[...], one group id per image")
    elif groups is not None:
        raise ValueError("groups is only used with aggregation='group'")

    maps = []
    for i in range(n_images):
        arrays = [as_label_map(a[i], f"{name}[{i}]") for a, name in
                  ((pred_instances, "pred_instances"), (pred_classes, "pred_classes"),
                   (gt_instances, "gt_instances"), (gt_classes, "gt_classes"))]
        for a in arrays[1:]:
            check_same_shape(arrays[0], a)
        maps.append(arrays)
    if n_classes is None:
        n_classes = max([int(m[1].max()) for m in maps] + [int(m[3].max()) for m in maps] + [0])
    classes = np.arange(1, n_classes + 1)

    counts = np.zeros((n_images, n_classes, 4))  # tp, fp, fn, iou_sum
    for i, (p_inst, p_cls, g_inst, g_cls) in enumerate(maps):
        p_labels = np.unique(p_inst[p_inst > 0])
        g_labels = np.unique(g_inst[g_inst > 0])
        p_of = _instance_classes(p_inst, p_cls, p_labels, f"pred_instances[{i}]")
        g_of = _instance_classes(g_inst, g_cls, g_labels, f"gt_instances[{i}]")
        if (p_of > n_classes).any() or (g_of > n_classes).any():
            raise ValueError(f"image {i} has a class above n_classes={n_classes}")
        for k in classes:
            p_k = np.where(np.isin(p_inst, p_labels[p_of == k]), p_inst, 0)
            g_k = np.where(np.isin(g_inst, g_labels[g_of == k]), g_inst, 0)
            m = _match(find_sites(p_k, "labels"), find_sites(g_k, "labels"), rule, threshold)
            counts[i, k - 1] = (m.tp, m.fp, m.fn, m.pairs["iou"].sum())

    def class_pq(c: np.ndarray) -> np.ndarray:  # (..., 4) counts -> PQ per class, NaN where absent
        return np.array([pq_from_counts(*row)[0] for row in c.reshape(-1, 4)]).reshape(c.shape[:-1])

    pooled = counts.sum(axis=0)
    if aggregation == "group":
        ids = pd.unique(pd.Series(list(groups)))
        units = np.stack([counts[[g == u for g in groups]].sum(axis=0) for u in ids])
        unit_names = pd.Index(ids, name="group")
    else:
        units = counts
        unit_names = pd.RangeIndex(n_images, name="image")
    unit_class_pq = class_pq(units)
    with warnings.catch_warnings():  # nanmean of all-NaN rows is NaN, as intended
        warnings.simplefilter("ignore", RuntimeWarning)
        unit_pq = np.nanmean(unit_class_pq, axis=1) if n_classes else np.full(len(units), np.nan)
        if aggregation == "dataset":
            per_class_pq = class_pq(pooled)
            pq, n_undefined = np.nanmean(per_class_pq), int(np.isnan(per_class_pq).sum())
        else:
            per_class_pq = np.nanmean(unit_class_pq, axis=0) if len(units) else np.full(n_classes, np.nan)
            pq, n_undefined = np.nanmean(unit_pq), int(np.isnan(unit_pq).sum())
    per_class = pd.DataFrame(pooled, columns=["tp", "fp", "fn", "iou_sum"], index=pd.Index(classes, name="class"))
    per_class[["tp", "fp", "fn"]] = per_class[["tp", "fp", "fn"]].astype(np.int64)
    per_class["pq"] = per_class_pq
    per_unit = pd.DataFrame(unit_class_pq, index=unit_names, columns=[f"pq_class_{k}" for k in classes])
    per_unit["pq"] = unit_pq
    return MultiPQResult(float(pq), per_class, per_unit, aggregation, n_undefined)
