"""Nuclei instance segmentation and classification of one image, disentangled (Foucart et al.).

Detection, classification and segmentation are scored apart, on one
class-agnostic matching, and beside them Panoptic Quality per class and the
CC-Metrics with the GT nuclei as sites.

Algorithm and cost, for an image of V pixels with N_g GT and N_p predicted
nuclei (F foreground pixels):

1. Validate the maps; group the pixels of every instance
   (:func:`ccmetrics.engine.components.find_sites`, ``"labels"``): O(V + F log F).
2. Read one class per instance from the class maps or dicts
   (:func:`ccmetrics.metrics.panoptic.instance_classes`, one ``reduceat`` over F).
3. Drop the instances lying in the ignore mask: one gather of the mask at F
   pixels and one ``bincount``.
4. All pairwise overlaps in one pass and the class-agnostic matching
   (:mod:`ccmetrics.metrics.matching`): O(F log F) plus the Hungarian step for
   ``max_iou``/low thresholds on the (sparse) overlap graph.
5. Confusion matrix, detection and classification scores: O(N + C^2) for C
   classes.
6. Per matched pair: IoU and Dice from the overlap counts; HD and HD95 as
   MONAI computes them (edges = mask XOR its erosion with the face-connected
   cross, Euclidean distances between edge pixels, HD95 the larger of the two
   directed 95th percentiles with torch's interpolation).  The edges of all
   instances are found in one pass (:meth:`ccmetrics.engine.components.Sites.edges`) and
   all edge-to-edge distances of all pairs are computed in padded, vectorised
   batches: O(sum over pairs of ``|edges_g| x |edges_p|``), never a per-object
   pass over the image.
7. PQ per class: the overlap list filtered to each class and matched again
   (:func:`ccmetrics.metrics.panoptic.class_counts`): O(pairs x C).
8. CC-Dice / CC-NSD / CC-HD95 with the GT nuclei as Voronoi sites:
   :func:`ccmetrics.evaluate` with ``sites="labels"`` on the GT nuclei
   renumbered in raster order of their first pixel, so that exact ties of the
   partition (which go to the lowest site) never depend on label values.

A 2000 x 2000 tile with 3000 nuclei takes well under 2 s on 2 CPU cores
(``tests/benchmarks/bench_nuclei.py``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import schema
from .._arguments import public_arguments
from .._inputs import as_binary_mask, as_label_map, as_non_negative, as_spacing
from ..engine.components import Sites, find_sites
from ..metrics import registry
from ..metrics.aggregation import cc_values, image_diagonal
from ..metrics.case import CaseResult
from ..metrics.case import evaluate as cc_evaluate
from ..metrics.matching import check_matching_rule, choose_pairs, site_overlaps
from ..metrics.panoptic import CLASS_RULES, class_counts, instance_classes, pq_from_counts
from .confusion import NO_OBJECT, confusion_frame, metrics_from_confusion
from .instances import _edges_by_site, ignored_instances, keep_sites, pair_distances, rows_quantile

__all__ = [
    "CC_METRICS",
    "NO_OBJECT",
    "NucleiResult",
    "PAIR_METRICS",
    "confusion_frame",
    "evaluate",
    "ignored_instances",
    "keep_sites",
    "metrics_from_confusion",
    "pair_distances",
    "rows_quantile",
]

#: CC-Metrics computed by default
CC_METRICS = registry.DEFAULT_METRICS
#: the segmentation scores of a matched pair of nuclei (their means are the ``seg_`` scores)
PAIR_METRICS = ("iou", "dice", "hd", "hd95")


# --------------------------------------------------------------------------- result


@dataclass
class NucleiResult:
    """Disentangled nuclei metrics of one image; returned by :func:`evaluate`.

    Attributes
    ----------
    classes : list
        The classes, in the order of the confusion matrix rows 1..C.
    confusion : pandas.DataFrame
        (C + 1) x (C + 1) counts, rows GT class (index ``gt``), columns
        predicted class (``pred``), row/column ``"no object"`` first:
        ``confusion.loc["no object", j]`` unmatched predictions of class j,
        ``confusion.loc[i, "no object"]`` missed GT nuclei of class i.
    confusion_matrix : ndarray
        The same counts without labels.
    detection : dict
        ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``f1`` (class ignored).
    classification : dict
        ``n_matched``, ``accuracy``, ``balanced_accuracy``, ``macro_f1``,
        ``macro_f1_norm`` on the matched nuclei (see
        :func:`metrics_from_confusion`); the per-class values are in
        ``per_class``.
    segmentation : dict
        Means over the matched pairs, whatever their classes: ``iou``,
        ``dice``, ``hd``, ``hd95`` (pixels, or the units of ``spacing``), and
        ``n_pairs``.  NaN without a match.
    pq : dict
        Class-agnostic ``pq``, ``sq``, ``rq``, ``tp``, ``fp``, ``fn``,
        ``iou_sum``, and ``mpq``: the mean of the per-class PQ (matching
        within each class) over the classes present in the GT or the
        prediction (the image's term of aPQ).
    cc : dict
        CC-Metrics (``cc_dice``, ``cc_nsd``, ``cc_hd95`` by default) with the GT
        nuclei as sites; empty when ``cc_metrics`` is empty.
    per_class : pandas.DataFrame
        Index ``class``: ``n_gt``, ``n_pred``; classification ``support``,
        ``n_predicted``, ``precision``, ``recall``, ``f1``,
        ``precision_norm``, ``recall_norm``, ``f1_norm``; PQ within the class
        ``pq_tp``, ``pq_fp``, ``pq_fn``, ``iou_sum``, ``pq``, ``sq``, ``rq``;
        segmentation means over the matched pairs by GT class ``seg_n``,
        ``seg_iou``, ``seg_dice``, ``seg_hd``, ``seg_hd95``; CC means over the
        GT nuclei of the class ``cc_<metric>``.
    per_pair : pandas.DataFrame
        One row per object: ``match`` (``"tp"`` for a matched pair, ``"fn"``
        for a missed GT nucleus, ``"fp"`` for an unmatched prediction),
        ``gt_label``, ``pred_label`` (nullable integers), ``gt_class``,
        ``pred_class`` (0 = no object), ``gt_area``, ``pred_area``,
        ``intersection`` (pixels), ``iou``, ``dice``, ``hd``, ``hd95`` (NaN
        unless matched).  ``pd.crosstab(gt_class, pred_class)`` gives the
        confusion matrix back.
    per_component : pandas.DataFrame or None
        :func:`ccmetrics.evaluate`'s per-component table: one row per GT
        nucleus, in raster order of its first pixel (index ``component``
        1..K), with its ``gt_label`` and ``gt_class``.
    ignored : dict
        ``"gt"`` and ``"pred"``: labels of the instances removed by the
        ignore mask.
    rule, threshold, spacing, worst_distance
        The settings used (``worst_distance`` fills missing CC distances).
    """

    classes: list
    confusion: pd.DataFrame
    confusion_matrix: np.ndarray
    detection: dict[str, float]
    classification: dict[str, float]
    segmentation: dict[str, float]
    pq: dict[str, float]
    cc: dict[str, float]
    per_class: pd.DataFrame
    per_pair: pd.DataFrame
    per_component: pd.DataFrame | None
    ignored: dict[str, np.ndarray]
    rule: str
    threshold: float
    spacing: tuple[float, ...] | None
    worst_distance: float
    cc_case: CaseResult | None = field(default=None, repr=False)

    def scores(self) -> dict[str, float]:
        """All scalar scores in one flat dict (the row of a per-image table).

        Keys: ``det_tp``, ``det_fp``, ``det_fn``, ``det_precision``,
        ``det_recall``, ``det_f1``; ``cls_n_matched``, ``cls_accuracy``,
        ``cls_balanced_accuracy``, ``cls_macro_f1``, ``cls_macro_f1_norm``;
        ``seg_n_pairs``, ``seg_iou``, ``seg_dice``, ``seg_hd``, ``seg_hd95``;
        ``pq``, ``sq``, ``rq``, ``mpq``, ``pq_class_<c>`` per class; then the CC
        metrics.
        """
        out: dict[str, float] = {f"det_{k}": v for k, v in self.detection.items()}
        out.update({f"cls_{k}": v for k, v in self.classification.items() if k != "per_class"})
        out.update({f"seg_{k}": v for k, v in self.segmentation.items()})
        out.update({k: self.pq[k] for k in ("pq", "sq", "rq", "mpq")})
        out.update({f"pq_class_{c}": float(v) for c, v in self.per_class["pq"].items()})
        out.update(self.cc)
        return out

    def summary(self) -> pd.DataFrame:
        """Tidy table of the scalar scores: index ``metric``, columns ``task`` and ``value``.

        Examples
        --------
        >>> gt = np.zeros((20, 20), int); gt[2:8, 2:8] = 1; gt[10:16, 10:16] = 2
        >>> r = evaluate(gt=gt, gt_classes={1: 1, 2: 2}, pred=gt, pred_classes={1: 1, 2: 1}, metrics=())
        >>> r.summary().loc[["det_f1", "cls_balanced_accuracy", "seg_iou", "pq"], "value"].tolist()
        [1.0, 0.5, 1.0, 1.0]
        """
        scores = self.scores()
        task = {"det": "detection", "cls": "classification", "seg": "segmentation", "cc": "cc"}
        rows = [(name, task.get(name.split("_")[0], "panoptic"), value) for name, value in scores.items()]
        table = pd.DataFrame(rows, columns=["metric", "task", "value"]).set_index("metric")
        table["value"] = table["value"].astype(float)
        return table

    def __repr__(self) -> str:
        d, c, s, p = self.detection, self.classification, self.segmentation, self.pq
        return (
            f"NucleiResult({len(self.classes)} classes, TP {d['tp']} FP {d['fp']} FN {d['fn']}: "
            f"detection F1 {d['f1']:.4f}, balanced accuracy {c['balanced_accuracy']:.4f}, "
            f"mean IoU {s['iou']:.4f}, PQ {p['pq']:.4f}, mPQ {p['mpq']:.4f})"
        )


# --------------------------------------------------------------------------- evaluate


def _classes_of(sites: Sites, classes: Any, class_rule: str, name: str) -> np.ndarray:
    if classes is None:
        return np.ones(sites.n, dtype=np.int64)
    return instance_classes(sites, classes, class_rule=class_rule, name=name)


def _class_list(classes: Sequence[int] | None, g_cls: np.ndarray, p_cls: np.ndarray) -> list:
    found = np.union1d(g_cls, p_cls)
    if classes is None:
        return [int(c) for c in found]
    wanted = [int(c) for c in classes]
    if len(set(wanted)) != len(wanted) or any(c <= 0 for c in wanted):
        raise ValueError(f"classes must be distinct integers >= 1 (0 is background), got {list(classes)}")
    for name, cls in (("gt", g_cls), ("pred", p_cls)):
        unknown = sorted(set(np.unique(cls).tolist()) - set(wanted))
        if unknown:
            raise ValueError(
                f"the {name} instances have class(es) {unknown} not in classes={wanted}; "
                "add them to classes= or fix the class map"
            )
    return wanted


def _matrix(classes: list, g_cls, p_cls, pair_g, pair_p, gt_free, pred_free) -> np.ndarray:
    lookup = {c: i + 1 for i, c in enumerate(classes)}
    to_row = np.vectorize(lookup.__getitem__, otypes=[np.int64]) if classes else None
    m = np.zeros((len(classes) + 1, len(classes) + 1), dtype=np.int64)
    if to_row is None:
        return m
    gi = to_row(g_cls) if len(g_cls) else np.zeros(0, np.int64)
    pi = to_row(p_cls) if len(p_cls) else np.zeros(0, np.int64)
    np.add.at(m, (gi[pair_g], pi[pair_p]), 1)
    np.add.at(m, (gi[gt_free], 0), 1)
    np.add.at(m, (0, pi[pred_free]), 1)
    return m


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _pq_by_class(counts: np.ndarray) -> tuple[np.ndarray, float]:
    """PQ, SQ and RQ of each class from its (TP, FP, FN, IoU sum) counts, one row per class, and ``mpq``.

    ``mpq`` is the mean PQ over the classes, those whose PQ is undefined left out (NaN without classes);
    an image's and a pooled unit's per-class scores are both computed here.

    >>> class_pq, mpq = _pq_by_class(np.array([[1, 1, 0, 0.5], [0, 0, 0, 0.0]]))
    >>> class_pq[0].round(3).tolist(), mpq
    ([0.333, 0.5, 0.667], 0.3333333333333333)
    """
    class_pq = np.array([pq_from_counts(*row) for row in counts]).reshape(len(counts), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mpq = float(np.nanmean(class_pq[:, 0])) if len(counts) else math.nan
    return class_pq, mpq


def _add_segmentation_by_class(per_class: pd.DataFrame, matched: pd.DataFrame) -> None:
    """Add ``seg_n`` (matched pairs) and ``seg_<m>`` (their mean of each pair metric) per GT class to ``per_class``.

    ``matched`` holds the matched pairs (``gt_class`` and the :data:`PAIR_METRICS` columns); a class without
    pair gets 0 pairs and NaN means.
    """
    classes = per_class.index
    by_class = matched.groupby("gt_class")
    per_class["seg_n"] = by_class.size().reindex(classes, fill_value=0).astype(np.int64).to_numpy()
    for name in PAIR_METRICS:
        per_class[f"seg_{name}"] = by_class[name].mean().reindex(classes).to_numpy(dtype=float)


def _class_means(values: np.ndarray, gt_class: np.ndarray, classes: Sequence[Any]) -> np.ndarray:
    """Mean of CC values per GT class, in the order of ``classes`` (NaN for a class without GT nucleus).

    >>> _class_means(np.array([1.0, 3.0, 5.0]), np.array([2, 2, 1]), [1, 2, 3]).tolist()
    [5.0, 2.0, nan]
    """
    return pd.Series(values).groupby(np.asarray(gt_class)).mean().reindex(classes).to_numpy(dtype=float)


#: the former keywords of :func:`evaluate` (and :func:`~ccmetrics.nuclei.evaluate_many`), read with a warning
RENAMED_KEYWORDS = {
    "gt_inst": "gt",
    "gt_class": "gt_classes",
    "pred_inst": "pred",
    "pred_class": "pred_classes",
    "rule": "matching_rule",
    "threshold": "iou_threshold",
    "ignore": "ignore_mask",
    "cc_metrics": "metrics",
}


@public_arguments("nuclei.evaluate", renamed=RENAMED_KEYWORDS)
def evaluate(
    gt: Any,
    gt_classes: Any,
    pred: Any,
    pred_classes: Any,
    *,
    matching_rule: str = "iou",
    iou_threshold: float = 0.5,
    ignore_mask: Any = None,
    ignore_fraction: float = 0.5,
    spacing: Any | None = None,
    classes: Sequence[int] | None = None,
    class_rule: str = "unique",
    metrics: Sequence[str] = CC_METRICS,
    nsd_tolerance: float = 1.0,
    worst_distance: float | None = None,
) -> NucleiResult:
    """Evaluate nuclei instance segmentation and classification of one image, disentangled.

    One class-agnostic matching of GT and predicted nuclei gives the
    confusion matrix (with a "no object" row and column), from which
    detection (class ignored) and classification (matched nuclei only) are
    scored apart; the matched pairs give the segmentation scores (IoU, Dice,
    HD, HD95), whatever their classes.  Beside them: PQ per class (matching
    within each class, as :func:`ccmetrics.multiclass_pq`) and overall, and
    the CC-Metrics with the GT nuclei as Voronoi sites (touching nuclei stay
    separate).

    Pass the maps by keyword, ``evaluate(gt=..., gt_classes=..., pred=..., pred_classes=...)``; by position
    they come GT first (``gt, gt_classes, pred, pred_classes``). The former keywords ``gt_inst``, ``gt_class``,
    ``pred_inst``, ``pred_class``, ``rule``, ``threshold``, ``ignore`` and ``cc_metrics`` are still read for a
    release, with a ``DeprecationWarning`` naming the new one.

    Parameters
    ----------
    gt, pred : array_like or torch.Tensor
        Instance label maps (H, W) (3D works too), 0 = background, any label
        values.
    gt_classes, pred_classes : array_like, mapping or None
        The class of each instance: a class map of the same shape (the class
        of every pixel, 0 = background), or a dict ``{instance id: class}``
        with classes >= 1; None puts every instance in class 1.
    matching_rule : {"iou", "centroid", "max_iou"}
        Matching rule (:func:`ccmetrics.metrics.matching.match_instances`): IoU strictly above
        ``iou_threshold``, the centroid rule, or maximum-IoU assignment.
    iou_threshold : float
        IoU threshold of the ``"iou"`` rule: a pair at exactly the threshold is no match (the detection rule
        ``"iou:T"`` of :func:`ccmetrics.evaluate` instead accepts IoU >= T).
    ignore_mask : array_like of bool, optional
        Ambiguous / ignore mask (e.g. MoNuSAC's ambiguous regions).  GT and
        predicted instances with more than ``ignore_fraction`` of their pixels
        inside it are removed before matching, from every score (they are
        listed in ``ignored``).  The kept instances keep all their pixels.
    ignore_fraction : float
        See ``ignore_mask``: 0.5 (default) removes the instances lying mostly in
        the mask; 0 removes every instance touching it.
    spacing : float or sequence of float, optional
        Pixel size (e.g. µm); distances are then in those units.
    classes : sequence of int, optional
        All classes, in the order of the confusion matrix; a class of an
        instance not listed is an error.  Default: the classes found in GT
        and prediction.
    class_rule : {"unique", "majority"}
        For class maps: ``"unique"`` (default) requires one class per
        instance and names the offending instance otherwise; ``"majority"``
        takes the most frequent class of its pixels.
    metrics : sequence of str
        CC-Metrics to compute (:func:`ccmetrics.evaluate` names); empty to
        skip them.
    nsd_tolerance, worst_distance : float
        As in :func:`ccmetrics.evaluate` (units of ``spacing``).

    Returns
    -------
    NucleiResult

    Examples
    --------
    Three GT nuclei of classes 1, 1, 2 labelled 1, 2, 3; the prediction,
    labelled 7, 8, 9, finds them all, gets the class of the second wrong and
    adds a false positive of class 2:

    >>> gt = np.zeros((30, 40), int)
    >>> gt[2:8, 2:8], gt[2:8, 20:26], gt[15:21, 2:8] = 1, 2, 3
    >>> pred = np.where(gt > 0, gt + 6, 0)
    >>> pred[20:25, 30:35] = 10
    >>> r = evaluate(gt=gt, gt_classes={1: 1, 2: 1, 3: 2}, pred=pred, pred_classes={7: 1, 8: 2, 9: 2, 10: 2})
    >>> r.confusion  # doctest: +NORMALIZE_WHITESPACE
    pred       no object  1  2
    gt
    no object          0  0  1
    1                  0  1  1
    2                  0  0  1
    >>> r.detection["tp"], r.detection["fp"], r.detection["fn"]
    (3, 1, 0)
    >>> r.classification["balanced_accuracy"], r.segmentation["iou"]
    (0.75, 1.0)
    >>> r.per_class["pq"].round(4).tolist()
    [0.6667, 0.5]
    """
    rule, threshold = matching_rule, check_matching_rule(matching_rule, iou_threshold)
    g_map, p_map, spacing, fraction, cc_names, worst = _checked(
        gt, pred, class_rule, spacing, ignore_fraction, metrics, worst_distance
    )
    g_sites, p_sites, g_cls, p_cls, ignored = _instances(
        g_map, p_map, gt_classes, pred_classes, class_rule, ignore_mask, fraction
    )
    class_list = _class_list(classes, g_cls, p_cls)
    m = _Matched.of(g_sites, p_sites, rule, threshold)  # class-agnostic matching
    matrix = _matrix(class_list, g_cls, p_cls, m.pair_g, m.pair_p, m.gt_free, m.pred_free)
    confusion = confusion_frame(matrix, class_list)
    detection, classification = metrics_from_confusion(confusion)
    per_class_cls = classification.pop("per_class")
    segmentation, per_pair = _segmentation(m, g_sites, p_sites, g_cls, p_cls, spacing)
    counts = class_counts(m.overlaps, g_cls, p_cls, class_list, rule, threshold)  # PQ within each class
    class_pq, mpq = _pq_by_class(counts)
    pq_scores = _pq_scores(m, mpq)
    per_class = _per_class(class_list, g_cls, p_cls, per_class_cls, counts, class_pq, per_pair)
    cc, per_component, cc_case = _cc_metrics(
        cc_names, g_sites, p_sites, g_cls, class_list, per_class, spacing, nsd_tolerance, worst
    )
    return NucleiResult(
        classes=class_list,
        confusion=confusion,
        confusion_matrix=matrix,
        detection=detection,
        classification=classification,
        segmentation=segmentation,
        pq=pq_scores,
        cc=cc,
        per_class=per_class,
        per_pair=per_pair,
        per_component=per_component,
        ignored=ignored,
        rule=rule,
        threshold=threshold,
        spacing=spacing,
        worst_distance=worst,
        cc_case=cc_case,
    )


def _checked(gt_inst, pred_inst, class_rule, spacing, ignore_fraction, cc_metrics, worst_distance):
    """The instance maps, spacing, ignore fraction, CC metric names and worst distance of :func:`evaluate`, checked."""
    if class_rule not in CLASS_RULES:
        raise ValueError(f"class_rule must be one of {CLASS_RULES}, got {class_rule!r}")
    g_map = as_label_map(gt_inst, "gt_inst")
    p_map = as_label_map(pred_inst, "pred_inst")
    if g_map.shape != p_map.shape:
        raise ValueError(f"gt_inst and pred_inst must have the same shape, got {g_map.shape} and {p_map.shape}")
    spacing = as_spacing(spacing, g_map.ndim)
    fraction = as_non_negative(ignore_fraction, "ignore_fraction")
    if fraction >= 1:
        raise ValueError(f"ignore_fraction must be in [0, 1), got {ignore_fraction}")
    cc_names = [cc_metrics] if isinstance(cc_metrics, str) else list(cc_metrics or ())
    worst = (
        image_diagonal(g_map.shape, spacing)
        if worst_distance is None
        else as_non_negative(worst_distance, "worst_distance")
    )
    return g_map, p_map, spacing, fraction, cc_names, worst


def _instances(g_map, p_map, gt_class, pred_class, class_rule, ignore, fraction):
    """The GT and predicted nuclei (sites) with their classes, those in the ignored area left out (and listed)."""
    g_sites, p_sites = find_sites(g_map, "labels"), find_sites(p_map, "labels")
    g_cls = _classes_of(g_sites, gt_class, class_rule, "gt_inst")
    p_cls = _classes_of(p_sites, pred_class, class_rule, "pred_inst")
    ignored = {"gt": np.zeros(0, g_sites.source_label.dtype), "pred": np.zeros(0, p_sites.source_label.dtype)}
    if ignore is not None:
        mask = as_binary_mask(ignore, "ignore")
        if mask.shape != g_map.shape:
            raise ValueError(f"ignore must have the shape of the instance maps {g_map.shape}, got {mask.shape}")
        g_out, p_out = ignored_instances(g_sites, mask, fraction), ignored_instances(p_sites, mask, fraction)
        ignored = {"gt": g_sites.source_label[g_out], "pred": p_sites.source_label[p_out]}
        g_sites, g_cls = keep_sites(g_sites, ~g_out), g_cls[~g_out]
        p_sites, p_cls = keep_sites(p_sites, ~p_out), p_cls[~p_out]
    return g_sites, p_sites, g_cls, p_cls, ignored


@dataclass(frozen=True)
class _Matched:
    """The class-agnostic matching: the overlaps, the chosen pairs (sorted by GT nucleus), the unmatched."""

    overlaps: Any
    chosen: np.ndarray
    pair_g: np.ndarray
    pair_p: np.ndarray
    gt_free: np.ndarray
    pred_free: np.ndarray

    @classmethod
    def of(cls, g_sites, p_sites, rule, threshold) -> _Matched:
        ov = site_overlaps(p_sites, g_sites, centroids=rule == "centroid")
        chosen = choose_pairs(ov, rule, threshold)
        pair_g, pair_p = ov.pair_gt[chosen], ov.pair_pred[chosen]
        order = np.argsort(pair_g, kind="stable")
        chosen, pair_g, pair_p = chosen[order], pair_g[order], pair_p[order]
        gt_free = np.setdiff1d(np.arange(g_sites.n), pair_g)
        pred_free = np.setdiff1d(np.arange(p_sites.n), pair_p)
        return cls(ov, chosen, pair_g, pair_p, gt_free, pred_free)


def _segmentation(m: _Matched, g_sites, p_sites, g_cls, p_cls, spacing) -> tuple[dict[str, Any], pd.DataFrame]:
    """The segmentation of the matched pairs (IoU, Dice, HD, HD95; means), and the per-pair table."""
    inter = m.overlaps.pair_intersection[m.chosen]
    g_area, p_area = g_sites.volumes[m.pair_g], p_sites.volumes[m.pair_p]
    iou = m.overlaps.pair_iou[m.chosen]
    dice = 2 * inter / (g_area + p_area) if len(inter) else np.zeros(0)
    g_edges, g_starts = _edges_by_site(g_sites, spacing)
    p_edges, p_starts = _edges_by_site(p_sites, spacing)
    hd, hd95 = pair_distances(g_edges, g_starts, p_edges, p_starts, m.pair_g, m.pair_p)
    segmentation = {
        "n_pairs": int(len(m.chosen)),
        "iou": _mean(iou),
        "dice": _mean(dice),
        "hd": _mean(hd),
        "hd95": _mean(hd95),
    }
    per_pair = _per_pair_table(
        g_sites, p_sites, g_cls, p_cls, m.pair_g, m.pair_p, m.gt_free, m.pred_free, inter, iou, dice, hd, hd95
    )
    return segmentation, per_pair


def _pq_scores(m: _Matched, mpq: float) -> dict[str, Any]:
    """Class-agnostic PQ of the matching, and the mean PQ over classes."""
    iou_sum = float(m.overlaps.pair_iou[m.chosen].sum())
    pq, sq, rq = pq_from_counts(len(m.chosen), len(m.pred_free), len(m.gt_free), iou_sum)
    return {
        "pq": pq,
        "sq": sq,
        "rq": rq,
        "tp": int(len(m.chosen)),
        "fp": int(len(m.pred_free)),
        "fn": int(len(m.gt_free)),
        "iou_sum": iou_sum,
        "mpq": mpq,
    }


def _per_class(class_list, g_cls, p_cls, per_class_cls, counts, class_pq, per_pair) -> pd.DataFrame:
    """One row per class: counts, classification, PQ within the class, the segmentation of its matched pairs."""
    index = pd.Index(class_list, name="class")
    per_class = pd.DataFrame(index=index)
    per_class["n_gt"] = [int((g_cls == c).sum()) for c in class_list]
    per_class["n_pred"] = [int((p_cls == c).sum()) for c in class_list]
    per_class_cls.index = index
    per_class = per_class.join(per_class_cls)
    for j, name in enumerate(("pq_tp", "pq_fp", "pq_fn")):
        per_class[name] = counts[:, j].astype(np.int64)
    per_class["iou_sum"] = counts[:, 3]
    per_class["pq"], per_class["sq"], per_class["rq"] = class_pq[:, 0], class_pq[:, 1], class_pq[:, 2]
    _add_segmentation_by_class(per_class, per_pair[per_pair["match"] == "tp"])
    return per_class


def _cc_metrics(cc_names, g_sites, p_sites, g_cls, class_list, per_class, spacing, nsd_tolerance, worst):
    """CC-Metrics with the GT nuclei as sites (and their means per class into ``per_class``); none asked: empty."""
    if not cc_names:
        return {}, None, None
    # GT nuclei renumbered in raster order of their first pixel: Voronoi ties then never depend on label values
    raster = np.argsort(g_sites.flat_index[g_sites.starts[:-1]], kind="stable")
    new_id = np.empty(g_sites.n, dtype=np.int32)
    new_id[raster] = np.arange(1, g_sites.n + 1, dtype=np.int32)
    kept_gt = np.zeros(int(np.prod(g_sites.shape)), dtype=np.int32)
    kept_gt[g_sites.flat_index] = new_id[g_sites.label - 1]
    pred_mask = np.zeros(int(np.prod(p_sites.shape)), dtype=bool)
    pred_mask[p_sites.flat_index] = True
    cc_case = cc_evaluate(
        gt=kept_gt.reshape(g_sites.shape),
        pred=pred_mask.reshape(p_sites.shape),
        metrics=cc_names,
        spacing=spacing,
        nsd_tolerance=nsd_tolerance,
        worst_distance=worst,
        sites="labels",
    )
    cc = {schema.cc(m): float(v) for m, v in cc_case.cc.items()}
    per_component = cc_case.per_component.copy()  # one row per GT nucleus, in raster order
    per_component["gt_label"] = g_sites.source_label[raster]
    per_component["gt_class"] = g_cls[raster]
    for m in cc_case.metrics:
        values = cc_values(per_component[m], m, worst)
        per_class[schema.cc(m)] = _class_means(values, per_component["gt_class"].to_numpy(), class_list)
    return cc, per_component, cc_case


def _per_pair_table(g_sites, p_sites, g_cls, p_cls, pair_g, pair_p, gt_free, pred_free, inter, iou, dice, hd, hd95):
    n_tp, n_fn, n_fp = len(pair_g), len(gt_free), len(pred_free)
    nan = np.full(n_fn + n_fp, np.nan)

    gt_label = pd.array(
        np.concatenate(
            [g_sites.source_label[pair_g], g_sites.source_label[gt_free], np.zeros(n_fp, g_sites.source_label.dtype)]
        ).astype(np.int64),
        dtype="Int64",
    )
    gt_label[n_tp + n_fn :] = pd.NA
    pred_label = pd.array(
        np.concatenate(
            [p_sites.source_label[pair_p], np.zeros(n_fn, p_sites.source_label.dtype), p_sites.source_label[pred_free]]
        ).astype(np.int64),
        dtype="Int64",
    )
    pred_label[n_tp : n_tp + n_fn] = pd.NA
    zeros_fn, zeros_fp = np.zeros(n_fn, np.int64), np.zeros(n_fp, np.int64)
    table = pd.DataFrame(
        {
            "match": np.repeat(np.array(["tp", "fn", "fp"], dtype=object), [n_tp, n_fn, n_fp]),
            "gt_label": gt_label,
            "pred_label": pred_label,
            "gt_class": np.concatenate([g_cls[pair_g], g_cls[gt_free], zeros_fp]).astype(np.int64),
            "pred_class": np.concatenate([p_cls[pair_p], zeros_fn, p_cls[pred_free]]).astype(np.int64),
            "gt_area": np.concatenate([g_sites.volumes[pair_g], g_sites.volumes[gt_free], zeros_fp]).astype(np.int64),
            "pred_area": np.concatenate([p_sites.volumes[pair_p], zeros_fn, p_sites.volumes[pred_free]]).astype(
                np.int64
            ),
            "intersection": np.concatenate([inter, zeros_fn, zeros_fp]).astype(np.int64),
            "iou": np.concatenate([iou, nan]),
            "dice": np.concatenate([dice, nan]),
            "hd": np.concatenate([hd, nan]),
            "hd95": np.concatenate([hd95, nan]),
        }
    )
    return table
