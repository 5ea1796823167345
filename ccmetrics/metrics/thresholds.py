"""CC-Metrics across thresholds of a probability map: the operating point chosen by each kind of score.

The point of the CC-Metrics paper, made a tool: a global Dice rewards the threshold that segments the largest
lesions well, a CC Dice the one that serves every lesion alike; they can disagree, and the threshold to ship
depends on which one is asked.

:func:`sweep` evaluates the chosen per-region metrics (global ``m`` and CC ``cc_m``) of ``prob >= t`` for each
threshold ``t`` on one prepared GT (:class:`~ccmetrics.engine.ground_truth.GroundTruth`: its components, edges and,
from four thresholds on, its Voronoi partition computed once and reused by every threshold).
:func:`threshold_summary` averages a data set's rows per threshold over the cases with GT lesions and names the
best threshold by each score (highest for overlap metrics, lowest for distances; ties: the lowest threshold).

Cost: one comparison of the map per threshold and one evaluation of the thresholded mask against the prepared GT,
which no longer labels or partitions it: T thresholds cost about T evaluations of the prediction side only.

Examples
--------
>>> import numpy as np
>>> gt = np.zeros((20, 20), bool); gt[2:10, 2:10] = True; gt[15:17, 15:17] = True
>>> prob = np.zeros((20, 20), np.float32); prob[2:10, 2:10] = 0.9; prob[15:17, 15:17] = 0.3
>>> rows = sweep(prob, gt, [0.2, 0.5], ["dice"])
>>> rows[["threshold", "dice", "cc_dice"]].round(3).to_string(index=False).splitlines()
[' threshold  dice  cc_dice', '       0.2  1.00      1.0', '       0.5  0.97      0.5']

At 0.5 the small lesion is lost: the global Dice hardly notices (0.97), the CC Dice halves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy, schema
from .._inputs import as_probability_map
from ..engine.config import current
from ..engine.ground_truth import GroundTruth
from . import registry
from .aggregation import cc_values
from .case import evaluate

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = ["parse_thresholds", "sweep", "threshold_summary"]


def parse_thresholds(text: Any) -> tuple[float, ...]:
    """Thresholds from ``"START:STOP:STEP"`` (STOP included when reached) or a comma list; each in (0, 1].

    >>> parse_thresholds("0.1:0.5:0.1"), parse_thresholds("0.25,0.5")
    ((0.1, 0.2, 0.3, 0.4, 0.5), (0.25, 0.5))
    """
    if not isinstance(text, str):
        values = tuple(float(v) for v in text)
    elif ":" in text:
        try:
            start, stop, step = (float(p) for p in text.split(":"))
        except ValueError:
            raise ValueError(f"thresholds {text!r}: write START:STOP:STEP, e.g. 0.1:0.9:0.1") from None
        if step <= 0 or stop < start:
            raise ValueError(f"thresholds {text!r}: STEP must be > 0 and STOP >= START")
        n = int(np.floor((stop - start) / step + 1e-9)) + 1
        values = tuple(round(start + i * step, 10) for i in range(n))
    else:
        try:
            values = tuple(float(p) for p in text.split(","))
        except ValueError:
            raise ValueError(f"thresholds {text!r}: write numbers separated by commas, or START:STOP:STEP") from None
    if not values or any(not 0 < v <= 1 for v in values):
        raise ValueError(f"thresholds must lie in (0, 1], got {text!r}")
    return tuple(sorted(set(values)))


def sweep(
    prob: Any,
    gt: Any,
    thresholds: Sequence[float],
    metrics: Sequence[Any] = ("dice",),
    *,
    spacing: Any = None,
    connectivity: int | None = None,
    case: str | None = None,
    class_value: int = 1,
    check: bool = True,
    **options: Any,
) -> pd.DataFrame:
    """The per-region metrics of ``prob >= t`` for each threshold, against one GT prepared once.

    Parameters
    ----------
    prob : array_like
        The probability map (values in [0, 1]).
    gt : array_like or GroundTruth
        The GT mask, or a :class:`~ccmetrics.engine.ground_truth.GroundTruth` already prepared.
    thresholds : sequence of float
    metrics : sequence
        Metric names; only the per-region ones (with a CC version) are swept, case-level ones are left out.
    spacing, connectivity, **options
        As in :func:`ccmetrics.evaluate` (``nsd_tolerance``, ``worst_distance``).
    case, class_value
        The ``case`` and ``class`` of every row.
    check : bool
        Check the map (float32, finite, in [0, 1]; default). False: ``prob`` is such a float32 array already,
        checked by its caller (a data set's maps, read by
        :func:`~ccmetrics.formats.probabilities.read_probabilities` and checked again by its candidate search),
        and is not read through once more.

    Returns
    -------
    pandas.DataFrame
        One row per threshold: ``case``, ``class``, ``threshold``, ``empty_gt``, ``worst_distance``, then ``m`` and
        ``cc_m`` per metric.
    """
    arr = as_probability_map(prob) if check else prob
    thresholds = [float(t) for t in thresholds]  # Python floats: compared with the float32 map as float32
    truth = gt if isinstance(gt, GroundTruth) else GroundTruth(gt, connectivity=connectivity)
    chosen = [m for m in registry.resolve(list(metrics)) if m.per_region]
    if not chosen:
        raise ValueError("sweep takes per-region metrics (dice, iou, nsd, hd95, ...): none among the metrics given")
    names = [m.name for m in chosen]
    if len(thresholds) >= current().region_map_from and truth.found.n:
        truth.region_map(spacing)  # kept: each threshold reads its voxels' regions from it
    rows = []
    for t in thresholds:
        result = evaluate(
            gt=truth, pred=arr >= t, metrics=chosen, spacing=spacing, connectivity=connectivity, **options
        )
        row: dict[str, Any] = {
            schema.CASE: case,
            schema.CLASS: int(class_value),
            schema.THRESHOLD: float(t),
            schema.EMPTY_GT: result.empty_gt,
            schema.WORST_DISTANCE: float(result.worst_distance),
        }
        for m in names:
            row[m] = result.standard.get(m, np.nan)
            row[schema.cc(m)] = result.cc.get(m, np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def threshold_summary(rows: pd.DataFrame, metrics: Sequence[str]) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
    """Means per class and threshold over the cases with GT lesions, and the best threshold by each score.

    Parameters
    ----------
    rows : pandas.DataFrame
        :func:`sweep`'s rows of every case (the ``thresholds`` table).
    metrics : sequence of str
        The swept metrics.

    Returns
    -------
    means : pandas.DataFrame
        ``class``, ``threshold``, ``n`` (cases), then the mean ``m`` and ``cc_m``; a global distance that is not
        finite (an empty segmentation) counts as the case's worst distance, as in the data set's summary
        (:func:`ccmetrics.metrics.aggregation.cc_values`).
    best : dict
        ``{"class/metric": {"standard": t, "cc": t}}``: the threshold of the best mean (highest for overlap
        metrics, lowest for distances; ties: the lowest threshold).

    Examples
    --------
    >>> rows = pd.DataFrame({"case": ["a", "a", "b", "b"], "class": 1, "threshold": [0.3, 0.6] * 2,
    ...                      "empty_gt": False, "dice": [0.8, 0.7, 0.6, 0.7], "cc_dice": [0.5, 0.7, 0.4, 0.6]})
    >>> means, best = threshold_summary(rows, ["dice"])
    >>> best
    {'1/dice': {'standard': 0.3, 'cc': 0.6}}
    """
    usable = rows[~rows[schema.EMPTY_GT].astype(bool)].copy()
    columns = [c for m in metrics for c in (m, schema.cc(m)) if c in usable]
    for m in metrics:  # a non-finite global distance (empty segmentation) counts as the case's worst (one rule)
        if m in usable and schema.WORST_DISTANCE in usable:
            usable[m] = cc_values(usable[m], m, usable[schema.WORST_DISTANCE])
    grouped = usable.groupby([schema.CLASS, schema.THRESHOLD], sort=True)
    means = grouped[columns].mean()
    means.insert(0, schema.N, grouped.size())
    means = means.reset_index()
    best: dict[str, dict[str, float]] = {}
    for c, table in means.groupby(schema.CLASS, sort=True):
        for m in metrics:
            if not registry.has_direction(m):  # a measure has no best value: no pick
                best[f"{c}/{m}"] = {}
                continue
            sign = -1.0 if registry.is_distance(m) else 1.0
            picks = {}
            for kind, column in (("standard", m), ("cc", schema.cc(m))):
                values = sign * table[column].to_numpy(float)
                if column in table and np.isfinite(values).any():
                    picks[kind] = float(table[schema.THRESHOLD].to_numpy()[int(np.nanargmax(values))])
            best[f"{c}/{m}"] = picks
    return means, best
