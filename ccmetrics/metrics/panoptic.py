"""Panoptic Quality (Kirillov et al.), binary and multi-class, on the shared matcher.

``RQ = TP / (TP + FP/2 + FN/2)``, ``SQ`` = mean IoU of the matches,
``PQ = SQ x RQ``.  Matching is :mod:`ccmetrics.metrics.matching`'s, so it never depends
on label values.  This avoids the two bugs of the MoNuSAC 2020 evaluation code
(Foucart et al.): removing the prediction whose *id equals the GT id* after a
match, and never counting predictions of a class absent from an image's GT.

Cost: one labelling pass per map, one overlap pass per image
(:func:`ccmetrics.metrics.matching.site_overlaps`); the multi-class version then
filters that overlap list per class (no further pass over the image), so an
image costs O(voxels + pairs x classes).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy
from .._arguments import public_arguments
from .._inputs import as_binary_mask, as_label_map, check_same_shape
from ..columns import stored, table_fields
from ..engine.components import Sites, find_sites
from .matching import Matching, check_matching_rule, choose_pairs, match_sites, site_overlaps

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = [
    "PQResult",
    "MultiPQResult",
    "panoptic_quality",
    "pq_from_sites",
    "multiclass_pq",
    "pq_from_counts",
    "instance_classes",
    "class_counts",
    "AGGREGATIONS",
    "CLASS_RULES",
]

#: aggregations of :func:`multiclass_pq`
AGGREGATIONS = ("image", "dataset", "group")
#: how :func:`instance_classes` reads an instance's class from a class map
CLASS_RULES = ("unique", "majority")


@table_fields("pairs")  # held as Columns until read as DataFrames
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

    @classmethod
    def from_matching(cls, matching: Matching) -> PQResult:
        """PQ, SQ and RQ of a :class:`~ccmetrics.metrics.matching.Matching`.

        Examples
        --------
        >>> from ccmetrics.metrics.matching import match_instances
        >>> r = PQResult.from_matching(match_instances(gt=np.array([[1, 1, 1]]), pred=np.array([[1, 1, 0]])))
        >>> round(r.pq, 4), r.tp
        (0.6667, 1)
        """
        pairs = stored(matching, "pairs")  # its Columns while no one read them as a DataFrame
        iou_sum = float(np.nansum(np.asarray(pairs["iou"], dtype=np.float64)))  # pandas' sum: NaN skipped
        pq, sq, rq = pq_from_counts(matching.tp, matching.fp, matching.fn, iou_sum)
        return cls(pq, sq, rq, matching.tp, matching.fp, matching.fn, iou_sum, pairs)


def pq_from_counts(tp: float, fp: float, fn: float, iou_sum: float) -> tuple:
    """``(pq, sq, rq)`` from match counts; NaN when there is nothing at all.

    Examples
    --------
    >>> pq_from_counts(2, 1, 1, 1.5)
    (0.5, 0.75, 0.6666666666666666)
    >>> pq_from_counts(0, 0, 0, 0.0)
    (nan, nan, nan)
    """
    if tp + fp + fn == 0:
        return (np.nan, np.nan, np.nan)
    rq = tp / (tp + 0.5 * fp + 0.5 * fn)
    sq = iou_sum / tp if tp else 0.0
    return (sq * rq, sq, rq)


def _instances(x: Any, name: str, instances: bool, connectivity: int | None) -> Sites:
    if instances:
        return find_sites(as_label_map(x, name), "labels")
    return find_sites(as_binary_mask(x, name), "components", connectivity)


@public_arguments(
    "panoptic_quality",
    positional_inputs=("pred", "gt"),
    renamed={"rule": "matching_rule", "threshold": "iou_threshold"},
)
def panoptic_quality(
    pred: Any,
    gt: Any,
    *,
    matching_rule: str = "iou",
    iou_threshold: float = 0.5,
    connectivity: int | None = None,
    instances: bool = False,
) -> PQResult:
    """Panoptic Quality ``PQ = SQ x RQ`` of one image.

    Pass the masks by keyword, ``panoptic_quality(gt=gt, pred=pred)``; by position
    (``panoptic_quality(pred, gt)``, MONAI's order) they still work for a release, with a
    ``DeprecationWarning``.

    Parameters
    ----------
    pred, gt : array_like or torch.Tensor
        Binary masks, split into connected components, or instance label maps
        with ``instances=True``.  2D or 3D.
    matching_rule, iou_threshold : see :func:`ccmetrics.metrics.matching.match_instances`
        The default is Kirillov et al.'s: IoU strictly above 0.5 (a pair at exactly ``iou_threshold``
        is no match, unlike ``detection_rule="iou:T"``, which accepts IoU >= T). ``rule=`` and
        ``threshold=``, their former names, are still read, with a ``DeprecationWarning``.
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
    >>> r = panoptic_quality(gt=gt, pred=pred, instances=True)
    >>> r.pq, r.tp, r.fp, r.fn
    (1.0, 3, 0, 0)
    """
    rule, threshold = matching_rule, check_matching_rule(matching_rule, iou_threshold)
    pred_sites = _instances(pred, "pred", instances, connectivity)
    gt_sites = _instances(gt, "gt", instances, connectivity)
    if pred_sites.shape != gt_sites.shape:
        raise ValueError(f"pred and gt must have the same shape, got {pred_sites.shape} and {gt_sites.shape}")
    return pq_from_sites(pred_sites, gt_sites, rule=rule, threshold=threshold)


def pq_from_sites(pred_sites: Sites, gt_sites: Sites, *, rule: str = "iou", threshold: float = 0.5) -> PQResult:
    """:func:`panoptic_quality` of instances already found (components or labels), e.g. shared with other metrics.

    Parameters
    ----------
    pred_sites, gt_sites : Sites
        The instances (:func:`ccmetrics.engine.components.find_sites`).
    rule, threshold
        As in :func:`panoptic_quality` (default: IoU strictly above 0.5).

    Examples
    --------
    >>> gt = find_sites(np.array([[1, 1, 0, 1]], bool))
    >>> r = pq_from_sites(find_sites(np.array([[1, 1, 0, 0]], bool)), gt)
    >>> r.tp, r.fn, round(r.pq, 4)
    (1, 1, 0.6667)
    """
    return PQResult.from_matching(match_sites(pred_sites, gt_sites, rule, threshold))  # match_sites checks the rule


def instance_classes(
    sites: Sites,
    classes: Any | Mapping[Any, int],
    *,
    class_rule: str = "unique",
    name: str = "instances",
) -> np.ndarray:
    """The class of each instance, from a class map or a dict instance id -> class.

    Parameters
    ----------
    sites : Sites
        The instances (:func:`ccmetrics.engine.components.find_sites` with
        ``"labels"``); ``sites.source_label`` holds their ids.
    classes : array_like or mapping
        A class map of the image's shape (the class of every pixel, 0 =
        background), or a mapping ``{instance id: class}`` covering every
        instance.
    class_rule : {"unique", "majority"}
        For class maps.  ``"unique"``: every pixel of an instance must carry
        the same non-zero class, otherwise a ``ValueError`` names the instance
        and the classes found.  ``"majority"``: the most frequent non-zero
        class of its pixels (ties to the lowest class); background pixels
        never win.
    name : str
        The instance map's name, for error messages.

    Returns
    -------
    ndarray of int64
        One class (>= 1) per instance, in ``sites`` order.

    Examples
    --------
    >>> inst = np.array([[1, 1, 0, 5, 5]])
    >>> sites = find_sites(inst, "labels")
    >>> instance_classes(sites, np.array([[2, 2, 0, 3, 3]])).tolist()
    [2, 3]
    >>> instance_classes(sites, {1: 4, 5: 1}).tolist()
    [4, 1]
    >>> instance_classes(sites, np.array([[2, 1, 0, 3, 3]]), class_rule="majority").tolist()
    [1, 3]
    >>> instance_classes(sites, np.array([[2, 1, 0, 3, 3]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: instances: instance 1 has pixels of classes [1, 2]; an instance needs one class. Fix the ...
    """
    if class_rule not in CLASS_RULES:
        raise ValueError(f"class_rule must be one of {CLASS_RULES}, got {class_rule!r}")
    labels = sites.source_label
    if isinstance(classes, Mapping):
        missing = [lab for lab in labels.tolist() if lab not in classes]
        if missing:
            raise ValueError(
                f"{name}: no class for instance id(s) {missing[:10]} in the class dict; "
                f"give every instance of the map a class"
            )
        out = np.array([classes[lab] for lab in labels.tolist()], dtype=np.float64)
        if out.size and (out != np.round(out)).any():
            raise ValueError(f"{name}: classes must be integers, got {out[out != np.round(out)][0]}")
        out = out.astype(np.int64)
        bad = np.flatnonzero(out <= 0)
        if bad.size:
            raise ValueError(
                f"{name}: instance {labels[bad[0]]} has class {out[bad[0]]}; classes must be >= 1 (0 is background)"
            )
        return out
    class_map = as_label_map(classes, f"{name} class map")
    if class_map.shape != tuple(sites.shape):
        raise ValueError(f"{name}: the class map has shape {class_map.shape} but the instance map {tuple(sites.shape)}")
    if sites.n == 0:
        return np.zeros(0, dtype=np.int64)
    cls = class_map.ravel()[sites.flat_index].astype(np.int64)
    starts = sites.starts[:-1]
    if class_rule == "unique":
        lo, hi = np.minimum.reduceat(cls, starts), np.maximum.reduceat(cls, starts)
        mixed = np.flatnonzero(lo != hi)
        if mixed.size:
            k = mixed[0]
            found = np.unique(cls[sites.starts[k] : sites.starts[k + 1]]).tolist()
            raise ValueError(
                f"{name}: instance {labels[k]} has pixels of classes {found}; an instance needs one "
                "class. Fix the class map, or pass class_rule='majority' to take the most frequent class"
            )
        background = np.flatnonzero(lo == 0)
        if background.size:
            raise ValueError(
                f"{name}: instance {labels[background[0]]} has class 0 over all its pixels; "
                "every instance needs a class"
            )
        return lo
    # majority: count (instance, class) pairs over the non-background pixels
    site = (sites.label - 1).astype(np.int64)
    fg = cls > 0
    n_cls = int(cls.max()) + 1
    keys, counts = np.unique(site[fg] * n_cls + cls[fg], return_counts=True)
    which, value = keys // n_cls, keys % n_cls
    order = np.lexsort((value, -counts, which))
    first = order[np.r_[True, np.diff(which[order]) != 0]] if order.size else order
    out = np.zeros(sites.n, dtype=np.int64)
    out[which[first]] = value[first]
    if (out == 0).any():
        bad = labels[np.flatnonzero(out == 0)[0]]
        raise ValueError(f"{name}: instance {bad} has class 0 over all its pixels; every instance needs a class")
    return out


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


def class_counts(
    ov, gt_class: np.ndarray, pred_class: np.ndarray, classes: Sequence[int] | np.ndarray, rule: str, threshold: float
) -> np.ndarray:
    """Per-class PQ counts of one image, matching only instances of the same class.

    Parameters
    ----------
    ov : Overlaps
        The class-agnostic overlaps of the image
        (:func:`ccmetrics.metrics.matching.site_overlaps`, ``centroids=True`` for the
        centroid rule).
    gt_class, pred_class : ndarray of int
        Class of each GT / predicted instance (:func:`instance_classes`).
    classes : sequence of int
        The classes to count, in the order of the output rows.
    rule, threshold
        As in :func:`ccmetrics.metrics.matching.match_instances`.

    Returns
    -------
    ndarray, shape (len(classes), 4)
        ``tp``, ``fp``, ``fn``, ``iou_sum`` per class.  A prediction of a
        class absent from the GT is a false positive of its class.

    Examples
    --------
    >>> from ccmetrics.metrics.matching import instance_overlaps
    >>> inst = np.array([[1, 1, 0, 2, 2]])
    >>> ov = instance_overlaps(gt=inst, pred=inst)
    >>> class_counts(ov, np.array([1, 2]), np.array([1, 1]), [1, 2], "iou", 0.5).tolist()
    [[1.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]
    """
    out = np.zeros((len(classes), 4))
    for row, k in enumerate(classes):
        sub = ov.subset(gt_class == k, pred_class == k)
        chosen = choose_pairs(sub, rule, threshold)
        tp = len(chosen)
        out[row] = (tp, len(sub.pred_labels) - tp, len(sub.gt_labels) - tp, sub.pair_iou[chosen].sum())
    return out


@public_arguments(
    "multiclass_pq",
    positional_inputs=("pred", "pred_classes", "gt", "gt_classes"),
    renamed={
        "pred_instances": "pred",
        "gt_instances": "gt",
        "aggregation": "level",
        "rule": "matching_rule",
        "threshold": "iou_threshold",
    },
)
def multiclass_pq(
    pred: Sequence[Any],
    pred_classes: Sequence[Any],
    gt: Sequence[Any],
    gt_classes: Sequence[Any],
    *,
    level: str = "image",
    groups: Sequence[Any] | None = None,
    n_classes: int | None = None,
    matching_rule: str = "iou",
    iou_threshold: float = 0.5,
) -> MultiPQResult:
    """Multi-class Panoptic Quality over a list of images.

    Each instance takes the majority class of its pixels in the class map and
    is matched only against instances of the same class.  A prediction of a
    class absent from an image's GT is a false positive of that class.

    Pass the maps by keyword, ``multiclass_pq(gt=..., gt_classes=..., pred=..., pred_classes=...)``; by
    position (prediction first) they still work for a release, with a ``DeprecationWarning``. The former
    keywords ``pred_instances``, ``gt_instances``, ``aggregation``, ``rule`` and ``threshold`` are still read,
    with a ``DeprecationWarning`` naming the new one.

    Parameters
    ----------
    pred, gt : sequence of arrays
        One instance label map per image (0 = background).
    pred_classes, gt_classes : sequence of arrays
        One class map per image, giving each pixel's class (0 = background).
    level : {"image", "dataset", "group"}
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
    matching_rule, iou_threshold : see :func:`ccmetrics.metrics.matching.match_instances`
        Default: IoU strictly above 0.5 (unlike ``detection_rule="iou:T"``, which accepts IoU >= T).

    Returns
    -------
    MultiPQResult

    Examples
    --------
    >>> gt = np.zeros((8, 8), int); gt[1:4, 1:4] = 1; gt[5:8, 5:8] = 2
    >>> gt_cls = np.where(gt == 1, 1, np.where(gt == 2, 2, 0))
    >>> pred_cls = np.where(gt > 0, 1, 0)  # the second nucleus gets the wrong class
    >>> r = multiclass_pq(gt=[gt], gt_classes=[gt_cls], pred=[gt], pred_classes=[pred_cls], level="dataset")
    >>> r.per_class["pq"].tolist(), r.pq
    ([0.6666666666666666, 0.0], 0.3333333333333333)
    """
    aggregation, pred_instances, gt_instances = level, pred, gt
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"level must be one of {AGGREGATIONS}, got {aggregation!r}")
    rule, threshold = matching_rule, check_matching_rule(matching_rule, iou_threshold)
    n_images = len(gt_instances)
    if not (len(pred_instances) == len(pred_classes) == len(gt_classes) == n_images):
        raise ValueError("pred, pred_classes, gt and gt_classes need one array per image each")
    if aggregation == "group":
        if groups is None or len(groups) != n_images:
            raise ValueError("level='group' needs groups=[...], one group id per image")
    elif groups is not None:
        raise ValueError("groups is only used with level='group'")

    images = []
    for i in range(n_images):
        arrays = [
            as_label_map(a[i], f"{name}[{i}]")
            for a, name in (
                (pred_instances, "pred"),
                (pred_classes, "pred_classes"),
                (gt_instances, "gt"),
                (gt_classes, "gt_classes"),
            )
        ]
        for a in arrays[1:]:
            check_same_shape(arrays[0], a)
        p_sites, g_sites = find_sites(arrays[0], "labels"), find_sites(arrays[2], "labels")
        p_of = instance_classes(p_sites, arrays[1], class_rule="majority", name=f"pred[{i}]")
        g_of = instance_classes(g_sites, arrays[3], class_rule="majority", name=f"gt[{i}]")
        images.append((p_sites, p_of, g_sites, g_of))
    if n_classes is None:
        n_classes = max(
            [int(im[1].max(initial=0)) for im in images] + [int(im[3].max(initial=0)) for im in images] + [0]
        )
    classes = np.arange(1, n_classes + 1)

    counts = np.zeros((n_images, n_classes, 4))  # tp, fp, fn, iou_sum
    for i, (p_sites, p_of, g_sites, g_of) in enumerate(images):
        if (p_of > n_classes).any() or (g_of > n_classes).any():
            raise ValueError(f"image {i} has a class above n_classes={n_classes}")
        ov = site_overlaps(p_sites, g_sites, centroids=rule == "centroid")
        counts[i] = class_counts(ov, g_of, p_of, classes, rule, threshold)

    def class_pq(c: np.ndarray) -> np.ndarray:  # (..., 4) counts -> PQ per class, NaN where absent
        return np.array([pq_from_counts(*row)[0] for row in c.reshape(-1, 4)]).reshape(c.shape[:-1])

    pooled = counts.sum(axis=0)
    if aggregation == "group":
        assert groups is not None  # checked above
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
