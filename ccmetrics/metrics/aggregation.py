"""How CC values are averaged: the one home of the aggregation rules.

Every place that averages per-component values (``evaluate``'s case means,
``ccmetrics.monai``'s buffers, the data-set tables and their statistics) calls
these functions, so the rules exist once:

* **Missed lesion.** A GT component whose region holds no prediction has
  infinite distances (HD, HD95, ASSD; MONAI gives NaN for HD95). When
  averaging, every non-finite distance counts as the case's *worst distance*
  (by default the image diagonal, in voxels or mm). Overlap metrics (Dice,
  IoU, NSD) are 0 there and need no replacement.
* **Empty GT** (no component): the case's CC value is the metric's best value
  if the prediction is empty too, else its worst (0, or the worst distance),
  as in the original CC-Metrics code. Such cases are flagged.
* **Two aggregations over a data set**: *per patient* (mean of the case
  means) and *pooled* (mean over all components of all cases, each with its
  own case's worst distance).

Which metric is a distance and what its best value is are facts of the
metric registry (:mod:`ccmetrics.metrics.registry`); a metric is given as a name, a
registry record or a MONAI metric object (recognised by its class name, without
importing torch or MONAI). Cost: one pass over the values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..engine.geometry import image_diagonal  # the default worst distance (kept here too: re-exported)
from . import registry

__all__ = ["cc_mean", "cc_values", "empty_gt_score", "fill_missing", "image_diagonal", "is_distance_metric"]


def is_distance_metric(metric: Any, columns: Mapping[str, registry.Column] | None = None) -> bool:
    """True for a distance whose missing value counts as the worst distance: a per-region distance metric.

    ``metric`` is a metric or column name (``cc_`` prefix allowed), a registry record or column, or a
    MONAI Hausdorff/SurfaceDistance object. ``columns``: the facts of a result folder's columns
    (``DatasetResult.columns``), looked up before the registry (:func:`ccmetrics.metrics.registry.column`), so
    that metrics this process has not registered are known. Case-level distances (``lesion_hd95``,
    BraTS' own penalty inside) are not filled.

    >>> is_distance_metric("hd95"), is_distance_metric("cc_hd95"), is_distance_metric("lesion_hd95")
    (True, True, False)
    >>> is_distance_metric("masd", {"masd": registry.Column("masd", "MONAI ASSD", "distance", False, cc=True)})
    True
    """
    if isinstance(metric, str):
        metric = registry.column(metric, columns)
    if isinstance(metric, registry.Column):
        return metric.is_distance and metric.cc
    if isinstance(metric, registry.Metric):
        return metric.is_distance and metric.per_region
    return metric is not None and registry.is_distance(metric)


def fill_missing(values: Any, worst: Any) -> np.ndarray:
    """Replace non-finite values (a missed lesion's inf, MONAI's NaN HD95) by ``worst``.

    ``worst`` is one number or one per value (pooled components of several
    cases each keep their own case's worst distance). The dtype of a floating
    array is kept.

    >>> fill_missing([1.5, float("inf"), float("nan")], 30.0).tolist()
    [1.5, 30.0, 30.0]
    """
    v = np.asarray(values)
    if not np.issubdtype(v.dtype, np.floating):
        v = v.astype(np.float64)
    return np.where(np.isfinite(v), v, np.asarray(worst, dtype=v.dtype))


def cc_values(values: Any, metric: Any, worst: Any, columns: Mapping[str, registry.Column] | None = None) -> np.ndarray:
    """Per-component values as they enter a CC mean: distances filled with ``worst``, others as they are.

    ``metric`` and ``columns`` as in :func:`is_distance_metric` (a ``cc_`` column name, with a result
    folder's facts, is fine).

    >>> cc_values([1.0, float("inf")], "cc_hd95", 9.0).tolist(), cc_values([0.5, 0.0], "dice", 9.0).tolist()
    ([1.0, 9.0], [0.5, 0.0])
    """
    v = np.asarray(values, dtype=np.float64)
    return fill_missing(v, worst) if is_distance_metric(metric, columns) else v


def cc_mean(values: Any, metric: Any, worst: float) -> float:
    """The CC value of one case: the mean of :func:`cc_values` (NaN without components).

    >>> cc_mean([0.0, 4.0, float("inf")], "hd95", worst=10.0)
    4.666666666666667
    """
    v = cc_values(values, metric, worst)
    return float(v.mean()) if v.size else math.nan


def empty_gt_score(metric: Any, pred_empty: bool, worst: float) -> float:
    """CC value of a case without GT component: best if the prediction is empty too, else worst.

    ``metric``: a registry name or record; the best and worst values are the record's
    (:func:`ccmetrics.metrics.registry.worst_value`: the worst distance for a distance). NaN where they are
    unknown (a MONAI metric object that is not a distance) or for a metric without CC version.

    >>> empty_gt_score("dice", True, 50.0), empty_gt_score("hd95", False, 50.0)
    (1.0, 50.0)
    """
    record = registry.get(metric) if isinstance(metric, str) else metric
    if not isinstance(record, registry.Metric) or not record.per_region or record.best is None:
        return math.nan
    if pred_empty:
        return float(record.best)
    return registry.worst_value(record, worst)


def __getattr__(name: str):  # names this module held before the registry: deprecated, computed from it
    return registry.legacy(__name__, name)
