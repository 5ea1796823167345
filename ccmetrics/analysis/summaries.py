"""The statistics of a data set's result: its summary, per subgroup, of its empty-GT cases, its calibration and
its lesion-size bins.

Each function takes a :class:`~ccmetrics.results.DatasetResult` (the tidy tables of :mod:`ccmetrics.schema`) and
returns a table; the result's methods of the same names (:meth:`~ccmetrics.results.DatasetResult.summary`, ...)
call them. Intervals are percentile bootstraps over cases (:mod:`ccmetrics.analysis.stats`) at the level
``ci_level`` (formerly ``confidence``, accepted for one release with a ``DeprecationWarning``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy, schema
from .._deprecation import former_ci_level
from ..metrics.aggregation import cc_values
from ..metrics.calibration import lesion_reliability
from ..schema import CASE, CLASS, FAILED, STATUS

if TYPE_CHECKING:
    import pandas as pd

    from ..results.dataset import DatasetResult
else:  # imported where a table is made
    pd = _lazy.module("pandas")

__all__ = [
    "calibration_summary",
    "empty_gt_summary",
    "group_summary",
    "quantification_summary",
    "size_summary",
    "suv_summary",
    "summary",
]


def _evaluated(result: DatasetResult, empty_gt: bool) -> pd.DataFrame:
    """Rows of evaluated (not failed) case-classes whose GT is empty or not."""
    empty = result.per_case[schema.EMPTY_GT].eq(True)  # NaN on error rows: not empty (no fillna downcasting warning)
    return result.per_case[(result.per_case[STATUS] != FAILED) & (empty == empty_gt)]


def summary(
    result: DatasetResult, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
) -> pd.DataFrame:
    """Mean, median and bootstrap confidence interval of every score, per class.

    Only cases that were evaluated and have at least one GT component
    enter (empty-GT cases are summarised by :func:`empty_gt_summary`, so
    they never inflate or hide a mean). Aggregations, per metric ``m``:

    * ``standard``: the global value of each case; a non-finite distance
      (empty prediction) counts as the case's worst distance;
    * ``cc_patient``: the mean of the case CC values (``cc_m``);
    * ``cc_pooled``: the mean over all components pooled, each missed
      lesion's distance counting as its case's worst distance; its
      interval resamples cases (cluster bootstrap);
    * ``case``: case-level scores (PQ, Lesion Dice, detection), NaN
      values (undefined, e.g. PQ of two empty images) left out.

    Parameters
    ----------
    result : ccmetrics.results.DatasetResult
        The tables.
    ci_level : float
        The confidence level of the intervals (formerly ``confidence``).
    n_resamples, seed
        The bootstrap's resamples and seed (:func:`ccmetrics.analysis.stats.bootstrap_ci`).

    Returns
    -------
    pandas.DataFrame
        Index (class, metric, aggregation); columns ``n``, ``mean``,
        ``median``, ``ci_low``, ``ci_high``.
    """
    from .stats import bootstrap_ci, bootstrap_ci_pooled

    ci_level = former_ci_level(ci_level, former, "summary")
    boot: dict[str, Any] = dict(ci_level=ci_level, n_resamples=n_resamples, seed=seed)
    cases = _evaluated(result, empty_gt=False)
    worst = schema.WORST_DISTANCE
    rows = []
    for c in sorted(result.per_case[CLASS].unique()):
        here = cases[cases[CLASS] == c]
        comps = result.per_component[(result.per_component[CLASS] == c) & result.per_component[CASE].isin(here[CASE])]
        for m in result.cc_metrics:  # non-finite distances count as the case's worst distance (one rule)
            kind = result.columns[m]
            standard = cc_values(here[m], kind, here[worst])
            rows.append(_stats_row(c, m, schema.STANDARD, standard, bootstrap_ci(standard, **boot)))
            patient = here[schema.cc(m)].to_numpy(float)
            rows.append(_stats_row(c, m, schema.CC_PATIENT, patient, bootstrap_ci(patient, **boot)))
            pooled = cc_values(comps[m], kind, comps[worst])
            rows.append(
                _stats_row(c, m, schema.CC_POOLED, pooled, bootstrap_ci_pooled(pooled, comps[CASE].to_numpy(), **boot))
            )
        for s in result.case_level_columns:
            values = here[s].to_numpy(float)
            values = values[~np.isnan(values)]
            rows.append(_stats_row(c, s, schema.CASE_LEVEL, values, bootstrap_ci(values, **boot)))
    return pd.DataFrame(rows, columns=schema.SUMMARY.columns()).set_index(list(schema.SUMMARY.key))


def group_summary(
    result: DatasetResult,
    metadata: Any,
    group_by: str | Sequence[str],
    *,
    ci_level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    **former: Any,
) -> pd.DataFrame:
    """:func:`summary` of each subgroup of cases (by scanner, site, sex, ...) from a metadata table.

    Parameters
    ----------
    result : ccmetrics.results.DatasetResult
        The tables.
    metadata : path or pandas.DataFrame
        One row per case: a ``case`` column (or the first column) and descriptive columns
        (:func:`ccmetrics.analysis.subgroups.read_metadata`).
    group_by : str or sequence of str
        The columns whose value combinations form the groups. Cases missing from the table form
        the group ``"(not in metadata)"``.
    ci_level, n_resamples, seed
        As in :func:`summary`.

    Returns
    -------
    pandas.DataFrame
        The ``group_by`` columns, ``n_cases`` (cases of the group, errors included), then the
        columns of :func:`summary` (``class``, ``metric``, ``aggregation``, ``n``, ``mean``, ...),
        one block per group in sorted order.
    """
    from .subgroups import case_groups, read_metadata

    ci_level = former_ci_level(ci_level, former, "group_summary")
    meta = metadata if isinstance(metadata, pd.DataFrame) else read_metadata(metadata)
    by = [group_by] if isinstance(group_by, str) else list(group_by)
    taken = [c for c in by if c in schema.SUMMARY.columns() or c == "n_cases"]
    if taken:
        raise ValueError(f"a metadata column named {taken[0]!r} would clash with the summary's; rename it")
    groups = case_groups(meta, by, result.per_case[CASE].astype(str).unique().tolist())
    frames = []
    for key in sorted(set(groups.values())):
        cases = [c for c, g in groups.items() if g == key]
        block = summary(result.subset(cases), ci_level=ci_level, n_resamples=n_resamples, seed=seed).reset_index()
        for i, (column, value) in enumerate(zip(by, key)):
            block.insert(i, column, value)
        block.insert(len(by), "n_cases", len(cases))
        frames.append(block)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*by, "n_cases"])


def empty_gt_summary(result: DatasetResult) -> pd.DataFrame:
    """Per class: cases with an empty GT, how many have a false positive, and their false-positive volume."""
    empty = _evaluated(result, empty_gt=True)
    rows = []
    for c in sorted(result.per_case[CLASS].unique()):
        e = empty[empty[CLASS] == c]
        volume, volume_ml = e[schema.PRED_VOLUME], e[schema.PRED_VOLUME_ML]
        rows.append(
            {
                CLASS: c,
                schema.N: len(e),
                schema.WITH_FALSE_POSITIVE: int((volume > 0).sum()),
                schema.FP_VOLUME_VOXELS_MEAN: float(volume.mean()) if len(e) else math.nan,
                schema.FP_VOLUME_ML_MEAN: float(volume_ml.mean()) if len(e) else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=list(schema.EMPTY_GT_SUMMARY_COLUMNS)).set_index(CLASS)


def calibration_summary(
    result: DatasetResult, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
) -> dict[int, dict[str, Any]]:
    """Per class: the mean voxel-level Brier score and ECE of the maps over the evaluated cases (with their
    bootstrap intervals), and the lesion-level reliability table of the candidates' confidences
    (:func:`ccmetrics.metrics.calibration.lesion_reliability`, its ``attrs["ece"]`` as ``lesion_ece``); empty
    without probability maps. ``ci_level``, ``n_resamples``, ``seed``: as in :func:`summary`."""
    from .stats import bootstrap_ci

    ci_level = former_ci_level(ci_level, former, "calibration_summary")
    if result.per_candidate is None or schema.BRIER not in result.per_case:
        return {}
    out: dict[int, dict[str, Any]] = {}
    evaluated = result.per_case[result.per_case[STATUS] != FAILED]
    boot: dict[str, Any] = dict(ci_level=ci_level, n_resamples=n_resamples, seed=seed)
    for c, rows in evaluated.groupby(CLASS, sort=True):
        entry: dict[str, Any] = {"n_cases": int(len(rows))}
        for name in (schema.BRIER, schema.ECE):
            values = rows[name].to_numpy(float)
            ci = bootstrap_ci(values, **boot)
            entry[name] = {"value": _finite(values.mean()), "ci": [_finite(ci[0]), _finite(ci[1])]}
        table = lesion_reliability(result.per_candidate[result.per_candidate[CLASS] == c])
        entry["lesion_ece"] = _finite(table.attrs["ece"])
        entry["lesion_reliability"] = table
        out[int(c)] = entry
    return out


def size_summary(result: DatasetResult, edges: Sequence[float] | None = None) -> pd.DataFrame:
    """Lesions, detection rate, CC-Dice and false positives per class and lesion-size bin.

    ``edges``: inner bin edges in ml (voxels without a spacing); default 0.1, 1, 10 ml
    (:func:`ccmetrics.analysis.sizes.size_table`). Lesions of evaluated cases only.
    """
    from .sizes import size_table

    comps = _evaluated_lesions(result)
    if schema.DETECTED not in comps:
        return pd.DataFrame()
    return size_table(comps, edges, per_prediction=result.per_prediction)


def suv_summary(result: DatasetResult, edges: Sequence[float] | None = None) -> pd.DataFrame:
    """Lesions, detection rate, CC-Dice and false positives per class and SUVmax bin (``summary.json``'s ``by_suv``).

    ``edges``: inner SUVmax edges; default 2.5, 4, 10 (:func:`ccmetrics.analysis.sizes.suv_table`). Lesions of
    evaluated cases only; empty without the ``pet`` metric's ``suv_max``.
    """
    from .sizes import suv_table

    comps = _evaluated_lesions(result)
    if schema.DETECTED not in comps or "suv_max" not in comps:
        return pd.DataFrame()
    return suv_table(comps, edges, per_prediction=result.per_prediction)


def _evaluated_lesions(result: DatasetResult) -> pd.DataFrame:
    """The per-component rows of the evaluated (not failed) cases."""
    evaluated = result.per_case.loc[result.per_case[STATUS] != FAILED, CASE].unique()
    if not len(result.per_component):
        return result.per_component
    return result.per_component[result.per_component[CASE].isin(evaluated)]


def _stats_row(c, metric, aggregation, values, ci) -> dict[str, Any]:
    values = np.asarray(values, dtype=float)
    n = int(values.size)
    return {
        CLASS: c,
        schema.METRIC: metric,
        schema.AGGREGATION: aggregation,
        schema.N: n,
        schema.MEAN: float(values.mean()) if n else math.nan,
        schema.MEDIAN: float(np.median(values)) if n else math.nan,
        schema.CI_LOW: float(ci[0]),
        schema.CI_HIGH: float(ci[1]),
    }


def _finite(value: Any) -> float | None:
    """A float for JSON: None where it is not finite (undefined)."""
    value = float(value)
    return value if math.isfinite(value) else None


def quantification_summary(
    result: DatasetResult, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
) -> pd.DataFrame:
    """The agreement of the model's PET measurements with the reference's, per class, level (patient, lesion) and
    measure: bias, limits of agreement, ICC(A,1), Lin's CCC with their bootstrap intervals over cases, and the mean
    relative error (:func:`ccmetrics.analysis.quantification.quantification_table`, which says more); empty (with
    its columns) without the ``pet`` metric. ``ci_level``, ``n_resamples``, ``seed``: as in :func:`summary`.

    Examples
    --------
    >>> import pandas as pd
    >>> from ccmetrics.results import DatasetResult
    >>> per_case = pd.DataFrame({"case": ["a", "b", "c"], "class": 1, "status": "ok",
    ...                          "gt_tmtv_ml": [1.0, 2.0, 4.0], "pred_tmtv_ml": [2.0, 2.0, 5.0]})
    >>> table = quantification_summary(DatasetResult(pd.DataFrame(), per_case))
    >>> table[["level", "measure", "n", "bias"]].head(1).values.tolist()
    [['patient', 'tmtv_ml', 3, 0.6666666666666666]]
    """
    from .quantification import quantification_table

    ci_level = former_ci_level(ci_level, former, "quantification_summary")
    return quantification_table(
        result.per_case, result.per_component, ci_level=ci_level, n_resamples=n_resamples, seed=seed
    )
