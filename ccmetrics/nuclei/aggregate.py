"""Nuclei metrics over a data set: per image, per patient (slide group) and pooled.

Every level is computed from pooled *counts and pairs*, never by averaging
ratios of a lower level:

* **per image**: :func:`ccmetrics.nuclei.evaluate` of each image;
* **per group** (patient, slide): the confusion matrices, the per-class PQ
  counts (TP, FP, FN, IoU sum), the matched pairs and the CC components of
  the group's images are pooled first, then every score is computed once --
  the MoNuSAC paper's intended "per patient" evaluation (its code averaged per
  sub-image instead, Foucart et al.);
* **pooled**: the same over the whole data set; its ``mpq`` is the CoNIC mPQ+
  (per-class counts pooled over all images, then the mean over classes).

``apq`` (HoVer-Net / MoNuSAC style) is the mean over images of each image's
mean PQ over the classes present in its GT or prediction.  Units where a score
is undefined (NaN, e.g. no nucleus at all) are left out of means.  A missing
CC distance counts as its own image's worst distance.

Cost: the per-image evaluations, then O(total objects + images x C^2).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import schema
from .._arguments import public_arguments
from ..metrics import registry
from ..metrics.aggregation import cc_values
from ..metrics.panoptic import pq_from_counts
from .metrics import (
    CC_METRICS,
    PAIR_METRICS,
    NucleiResult,
    _add_segmentation_by_class,
    _class_means,
    _pq_by_class,
    confusion_frame,
    evaluate,
    metrics_from_confusion,
)

__all__ = ["NucleiDatasetResult", "evaluate_many", "compare_methods", "is_higher_better"]

_ITEM_KEYS = ("gt_inst", "gt_class", "pred_inst", "pred_class")
#: the keys of an item dict named as :func:`~ccmetrics.nuclei.evaluate`'s keywords, read beside the former ones
_ITEM_KEYWORDS = ("gt", "gt_classes", "pred", "pred_classes")
#: the scores of the nuclei tables where lower is better, besides the distances the metric registry knows
_ERROR_COUNTS = ("det_fp", "det_fn")


def is_higher_better(score: str) -> bool:
    """The direction of a nuclei score: detection error counts are lower-is-better; segmentation (``seg_``) and
    CC (``cc_``) scores follow the metric registry (distances lower); the others higher.

    >>> is_higher_better("det_fp"), is_higher_better("seg_hd95"), is_higher_better("cc_assd"), is_higher_better("mpq")
    (False, False, False, True)
    """
    if score in _ERROR_COUNTS:
        return False
    return registry.higher_is_better(score[len("seg_") :] if score.startswith("seg_") else score)


def _nanmean(values) -> float:
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else math.nan


def _pooled_scores(
    results: Sequence[NucleiResult], classes: list
) -> tuple[dict[str, float], pd.DataFrame, pd.DataFrame]:
    """Scores of a unit (group, data set) from the pooled counts, pairs and components of its images."""
    labels = ["no object", *classes]
    matrix = sum(
        (r.confusion.reindex(index=labels, columns=labels, fill_value=0).to_numpy() for r in results),
        np.zeros((len(labels), len(labels)), dtype=np.int64),
    )
    confusion = confusion_frame(matrix, classes)
    detection, classification = metrics_from_confusion(confusion)
    per_class_cls = classification.pop("per_class")

    pairs = pd.concat([r.per_pair for r in results], ignore_index=True) if results else None
    matched = pairs[pairs["match"] == "tp"] if pairs is not None else pd.DataFrame(columns=list(PAIR_METRICS))
    segmentation: dict[str, float] = {"n_pairs": int(len(matched))}
    segmentation.update({m: _nanmean(matched[m]) for m in PAIR_METRICS})

    columns = ["pq_tp", "pq_fp", "pq_fn", "iou_sum"]
    counts = sum(
        (r.per_class[columns].reindex(classes, fill_value=0).to_numpy(dtype=float) for r in results),
        np.zeros((len(classes), 4)),
    )
    class_pq, mpq = _pq_by_class(counts)
    tp, fp, fn = (sum(r.pq[k] for r in results) for k in ("tp", "fp", "fn"))
    iou_sum = float(sum(r.pq["iou_sum"] for r in results))
    pq, sq, rq = pq_from_counts(tp, fp, fn, iou_sum)

    index = pd.Index(classes, name="class")
    per_class = pd.DataFrame(index=index)
    per_class["n_gt"] = sum(
        (r.per_class["n_gt"].reindex(classes, fill_value=0).to_numpy() for r in results),
        np.zeros(len(classes), dtype=np.int64),
    )
    per_class["n_pred"] = sum(
        (r.per_class["n_pred"].reindex(classes, fill_value=0).to_numpy() for r in results),
        np.zeros(len(classes), dtype=np.int64),
    )
    per_class_cls.index = index
    per_class = per_class.join(per_class_cls)
    for j, name in enumerate(columns):
        per_class[name] = counts[:, j].astype(np.int64) if name != "iou_sum" else counts[:, j]
    per_class["pq"], per_class["sq"], per_class["rq"] = class_pq[:, 0], class_pq[:, 1], class_pq[:, 2]
    _add_segmentation_by_class(per_class, matched)

    cc: dict[str, float] = {}
    with_cc = [
        (r.cc_case, r.per_component, r.worst_distance)
        for r in results
        if r.cc_case is not None and r.per_component is not None
    ]
    if with_cc:
        metrics = list(dict.fromkeys(m for case, _, _ in with_cc for m in case.metrics))
        for m in metrics:
            values = np.concatenate([cc_values(table[m], m, worst) for _, table, worst in with_cc])
            gt_class = np.concatenate([table["gt_class"].to_numpy() for _, table, _ in with_cc])
            cc[schema.cc(m)] = float(values.mean()) if values.size else math.nan
            per_class[schema.cc(m)] = _class_means(values, gt_class, classes)

    scores: dict[str, float] = {f"det_{k}": v for k, v in detection.items()}
    scores.update({f"cls_{k}": v for k, v in classification.items()})
    scores.update({f"seg_{k}": v for k, v in segmentation.items()})
    scores.update({"pq": pq, "sq": sq, "rq": rq, "mpq": mpq})
    scores.update({f"pq_class_{c}": float(v) for c, v in zip(classes, class_pq[:, 0])})
    scores.update(cc)
    return scores, per_class, confusion


@dataclass
class NucleiDatasetResult:
    """Nuclei metrics of a data set; returned by :func:`evaluate_many`.

    Attributes
    ----------
    per_image : pandas.DataFrame
        Index ``image``: ``group``, then :meth:`~ccmetrics.nuclei.metrics.NucleiResult.scores` of each
        image (``det_*``, ``cls_*``, ``seg_*``, ``pq``, ``sq``, ``rq``, ``mpq``,
        ``pq_class_<c>``, ``cc_*``).
    per_group : pandas.DataFrame
        Index ``group``: ``n_images``, then the same scores computed from the
        counts, pairs and components pooled over the group's images.
    pooled : pandas.Series
        The same scores pooled over the whole data set.
    per_class : pandas.DataFrame
        Per class, pooled over the data set (columns as
        ``NucleiResult.per_class``).
    confusion : pandas.DataFrame
        The pooled confusion matrix.
    per_pair : pandas.DataFrame
        All images' ``NucleiResult.per_pair`` rows, with ``image`` and
        ``group`` columns first.
    results : dict
        Image id -> :class:`~ccmetrics.nuclei.metrics.NucleiResult`.
    classes : list
    """

    per_image: pd.DataFrame
    per_group: pd.DataFrame
    pooled: pd.Series
    per_class: pd.DataFrame
    confusion: pd.DataFrame
    per_pair: pd.DataFrame
    results: dict[Any, NucleiResult]
    classes: list

    @property
    def apq(self) -> float:
        """aPQ (HoVer-Net / MoNuSAC): mean over images of each image's mean PQ over its classes."""
        return _nanmean(self.per_image["mpq"])

    @property
    def mpq(self) -> float:
        """mPQ+ (CoNIC): PQ per class from counts pooled over the data set, then the mean over classes."""
        return float(self.pooled["mpq"])

    @property
    def group_mpq(self) -> float:
        """Per patient: PQ per class from counts pooled per group, mean over classes, then over groups."""
        return _nanmean(self.per_group["mpq"])

    def summary(self) -> pd.DataFrame:
        """Every score at the three levels: index ``metric``; columns ``image_mean``, ``group_mean``, ``pooled``.

        ``image_mean`` and ``group_mean`` are means over the images / groups
        where the score is defined (NaN left out); ``pooled`` is computed once
        from everything pooled.  The ``mpq`` row holds aPQ, the per-patient
        mPQ and the CoNIC mPQ+ in its three columns.
        """
        metrics = [c for c in self.per_image.columns if c != "group"]
        return pd.DataFrame(
            {
                "image_mean": [_nanmean(self.per_image[m]) for m in metrics],
                "group_mean": [_nanmean(self.per_group[m]) for m in metrics],
                "pooled": [float(self.pooled.get(m, math.nan)) for m in metrics],
            },
            index=pd.Index(metrics, name="metric"),
        )

    def __repr__(self) -> str:
        return (
            f"NucleiDatasetResult({len(self.per_image)} images, {len(self.per_group)} groups, "
            f"{len(self.classes)} classes: aPQ {self.apq:.4f}, mPQ+ {self.mpq:.4f}, "
            f"detection F1 {self.pooled['det_f1']:.4f}, balanced accuracy "
            f"{self.pooled['cls_balanced_accuracy']:.4f})"
        )


def _item_args(item: Any, image: Any) -> tuple[tuple, dict]:
    if isinstance(item, Mapping):
        if all(k in item for k in _ITEM_KEYWORDS):
            item = {**item, **dict(zip(_ITEM_KEYS, (item[k] for k in _ITEM_KEYWORDS)))}
        missing = [k for k in _ITEM_KEYS if k not in item]
        if missing:
            raise ValueError(
                f"image {image!r}: the item dict lacks {missing}; give {list(_ITEM_KEYS)} (and "
                "optionally 'ignore', 'spacing')"
            )
        extra = {k: item[k] for k in ("ignore", "spacing") if k in item}
        if "ignore" in extra or "ignore_mask" in item:
            extra["ignore_mask"] = item["ignore_mask"] if "ignore_mask" in item else extra.pop("ignore")
        return tuple(item[k] for k in _ITEM_KEYS), extra
    if isinstance(item, (tuple, list)) and len(item) in (4, 5):
        return tuple(item[:4]), ({"ignore_mask": item[4]} if len(item) == 5 else {})
    raise ValueError(
        f"image {image!r}: an item must be a NucleiResult, a tuple (gt_inst, gt_class, pred_inst, "
        f"pred_class[, ignore]) or a dict with those keys, got {type(item).__name__}"
    )


@public_arguments(
    "nuclei.evaluate_many", renamed={"rule": "matching_rule", "threshold": "iou_threshold", "cc_metrics": "metrics"}
)
def evaluate_many(
    items: Any,
    groups: Any | None = None,
    *,
    matching_rule: str = "iou",
    iou_threshold: float = 0.5,
    spacing: Any | None = None,
    classes: Sequence[int] | None = None,
    class_rule: str = "unique",
    ignore_fraction: float = 0.5,
    metrics: Sequence[str] = CC_METRICS,
    nsd_tolerance: float = 1.0,
    worst_distance: float | None = None,
) -> NucleiDatasetResult:
    """Evaluate nuclei over a data set: per image, per patient (group) and pooled.

    Parameters
    ----------
    items : mapping or sequence
        ``{image id: item}`` or a list of items (ids 0..n-1).  An item is a
        tuple ``(gt, gt_classes, pred, pred_classes)`` with an optional
        fifth element, the ignore mask; a dict with the keys ``"gt"``, ``"gt_classes"``, ``"pred"``,
        ``"pred_classes"`` (or their former names ``"gt_inst"``, ``"gt_class"``, ``"pred_inst"``,
        ``"pred_class"``) and optionally ``"ignore_mask"`` (or ``"ignore"``), ``"spacing"``; or an already
        computed :class:`~ccmetrics.nuclei.metrics.NucleiResult`.
    groups : mapping or sequence, optional
        Group (patient, slide) of each image: ``{image id: group}`` or one per
        item, in order.  Default: every image is its own group.
    matching_rule, iou_threshold, spacing, classes, class_rule, ignore_fraction, metrics, nsd_tolerance, worst_distance
        As in :func:`ccmetrics.nuclei.evaluate`, for every image. ``rule=``, ``threshold=`` and
        ``cc_metrics=``, the former names of ``matching_rule``, ``iou_threshold`` and ``metrics``, are still
        read for a release, with a ``DeprecationWarning``.

    Returns
    -------
    NucleiDatasetResult

    Examples
    --------
    >>> gt = np.zeros((20, 40), int); gt[2:8, 2:8] = 1; gt[2:8, 20:26] = 2
    >>> cls = {1: 1, 2: 2}
    >>> wrong = {1: 1, 2: 1}  # the second nucleus predicted as class 1
    >>> r = evaluate_many({"a": (gt, cls, gt, cls), "b": (gt, cls, gt, wrong)}, groups={"a": "P1", "b": "P1"},
    ...                   metrics=())
    >>> r.per_image["mpq"].round(4).tolist(), round(r.mpq, 4)
    ([1.0, 0.3333], 0.7333)
    >>> float(r.pooled["cls_balanced_accuracy"])
    0.75
    """
    if isinstance(items, Mapping):
        ids, values = list(items.keys()), list(items.values())
    else:
        values = list(items)
        ids = list(range(len(values)))
    if not values:
        raise ValueError("items is empty: give at least one image")
    if groups is None:
        group_of = list(ids)
    elif isinstance(groups, Mapping):
        missing = [i for i in ids if i not in groups]
        if missing:
            raise ValueError(f"groups has no group for image(s) {missing[:10]}")
        group_of = [groups[i] for i in ids]
    else:
        group_of = list(groups)
        if len(group_of) != len(ids):
            raise ValueError(f"groups has {len(group_of)} entries for {len(ids)} images; give one per image")

    options = dict(
        matching_rule=matching_rule,
        iou_threshold=iou_threshold,
        spacing=spacing,
        classes=classes,
        class_rule=class_rule,
        ignore_fraction=ignore_fraction,
        metrics=metrics,
        nsd_tolerance=nsd_tolerance,
        worst_distance=worst_distance,
    )
    results: dict[Any, NucleiResult] = {}
    for image, item in zip(ids, values):
        if isinstance(item, NucleiResult):
            results[image] = item
            continue
        args, extra = _item_args(item, image)
        try:
            results[image] = evaluate(*args, **{**options, **extra})
        except ValueError as err:
            raise ValueError(f"image {image!r}: {err}") from err

    all_classes = (
        [int(c) for c in classes]
        if classes is not None
        else sorted(set().union(*(r.classes for r in results.values())))
    )
    rules = {(r.rule, r.threshold) for r in results.values()}
    if len(rules) > 1:
        raise ValueError(f"the results were matched with different rules {sorted(rules)}; evaluate them alike")

    rows = []
    for image, group in zip(ids, group_of):
        r = results[image]
        row = {"group": group, **r.scores()}
        for c in all_classes:
            row.setdefault(f"pq_class_{c}", math.nan)
        rows.append(row)
    per_image = pd.DataFrame(rows, index=pd.Index(ids, name="image"))
    score_columns = ["group"] + [c for c in per_image.columns if c != "group" and not c.startswith("pq_class_")]
    class_columns = [f"pq_class_{c}" for c in all_classes]
    cc_columns = [c for c in score_columns if c.startswith(schema.CC_PREFIX)]
    ordered = [c for c in score_columns if not c.startswith(schema.CC_PREFIX)] + class_columns + cc_columns
    per_image = per_image[ordered]

    group_rows, group_ids = [], list(dict.fromkeys(group_of))
    for group in group_ids:
        members = [results[i] for i, g in zip(ids, group_of) if g == group]
        scores, _, _ = _pooled_scores(members, all_classes)
        group_rows.append({"n_images": len(members), **scores})
    per_group = pd.DataFrame(group_rows, index=pd.Index(group_ids, name="group"))
    per_group = per_group[["n_images"] + ordered[1:]]

    scores, per_class, confusion = _pooled_scores(list(results.values()), all_classes)
    pooled = pd.Series(scores, name="pooled")[ordered[1:]]

    tables = []
    for image, group in zip(ids, group_of):
        t = results[image].per_pair.copy()
        t.insert(0, "group", group)
        t.insert(0, "image", image)
        tables.append(t)
    per_pair = pd.concat(tables, ignore_index=True)
    return NucleiDatasetResult(per_image, per_group, pooled, per_class, confusion, per_pair, results, all_classes)


def compare_methods(
    results: Mapping[str, NucleiDatasetResult],
    metric: str = "mpq",
    *,
    level: str = "group",
    higher_is_better: bool | None = None,
    alpha: float = 0.05,
):
    """Compare three or more methods per patient with the Friedman and Nemenyi tests.

    Parameters
    ----------
    results : mapping of str to NucleiDatasetResult
        Method name -> its :func:`evaluate_many` result on the same images.
    metric : str
        A score column, e.g. ``"mpq"``, ``"det_f1"``, ``"cls_balanced_accuracy"``,
        ``"seg_iou"``, ``"cc_dice"``.
    level : {"group", "image"}
        Pair the methods per group (patient; default, as Foucart et al.
        recommend) or per image.
    higher_is_better : bool, optional
        Default: False for ``det_fp``, ``det_fn`` and distances, else True.
    alpha : float
        Significance level.

    Returns
    -------
    ccmetrics.analysis.stats.FriedmanNemenyi
        Units where some method's score is NaN are dropped (with a warning).
    """
    from ..analysis.stats import friedman_nemenyi

    if level not in ("group", "image"):
        raise ValueError(f"level must be 'group' or 'image', got {level!r}")
    if len(results) < 3:
        raise ValueError(
            f"the Friedman test needs at least 3 methods, got {len(results)}; "
            "for two methods use ccmetrics.analysis.stats.compare (Wilcoxon)"
        )
    columns = {}
    for name, r in results.items():
        table = r.per_group if level == "group" else r.per_image
        if metric not in table.columns:
            raise KeyError(f"method {name!r}: no score {metric!r}; choose one of {list(table.columns)}")
        columns[name] = table[metric].astype(float)
    scores = pd.concat(columns, axis=1, join="outer")
    incomplete = scores.isna().any(axis=1)
    if incomplete.any():
        warnings.warn(
            f"{int(incomplete.sum())} {level}(s) left out of the comparison of {metric!r}: not scored "
            f"by every method: {list(scores.index[incomplete])[:10]}",
            UserWarning,
            stacklevel=2,
        )
    if higher_is_better is None:
        higher_is_better = is_higher_better(metric)
    return friedman_nemenyi(scores[~incomplete], higher_is_better=higher_is_better, alpha=alpha)
