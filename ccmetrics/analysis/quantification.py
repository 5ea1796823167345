"""The agreement between the model's and the reference's PET measurements of a data set: ``summary.json``'s
``quantification`` table.

:func:`quantification_table` reads the ``pet`` group's columns of a run's tables (:mod:`ccmetrics.metrics.pet_case`)
and gives, per class, one row per level and measure (definitions: ``docs/definitions.md``, PET quantification):

* ``level="patient"``: the ``gt_`` against the ``pred_`` column of the per-case table, one pair per evaluated case
  (status not ``"error"``), for ``tmtv_ml``, ``tlg``, ``suv_max``, ``suv_mean``, ``dmax_mm``, ``extent_mm`` and
  ``lesion_count``. A value undefined on an empty mask (NaN: SUVmax, SUVmean, Dmax, extent) leaves its case out,
  so those measures are over the cases where both masks are non-empty;
* ``level="lesion"``: a GT lesion's ``suv_max``, ``suv_mean``, ``mtv_ml`` and ``tlg`` against the prediction's
  inside its Voronoi region (``pred_suv_max``, ...), over the lesions found: ``detected`` where the per-component
  table has that column (the run's detection rule), else the lesions whose region holds a predicted voxel
  (``pred_mtv_ml > 0``). The ``pairs`` column says which.

The statistics of each row are those of :mod:`ccmetrics.metrics.pet_agreement`: ``bias`` = mean(pred − gt) and
the limits of agreement bias ∓ 1.96 × SD(pred − gt) (ddof 1; Bland & Altman), over the pairs pooled (at the lesion
level the lesions of all cases, their clustering ignored by the limits); ``icc`` = ICC(A,1), two-way, absolute
agreement, single measures (McGraw & Wong; pingouin's "ICC(A,1)", Shrout & Fleiss ICC(2,1)); ``ccc`` = Lin's
concordance correlation coefficient (ICC and CCC computed here in the form below, equal to
:func:`~ccmetrics.metrics.pet_agreement.icc_a1` and :func:`~ccmetrics.metrics.pet_agreement.lin_ccc` but for the
rounding rule of the next paragraph); and the relative error (pred − gt) / gt of each pair, as the lymphoma
framework microsoft/lymphoma-segmentation-dnn reports it, averaged (signed and absolute) over the pairs whose gt is
not 0 (``relative_error_n`` of them). A pair with a value that is not finite is left out.

Intervals: percentile bootstrap over cases (a cluster bootstrap: a case's lesions are drawn together), with the
draws, quantiles and parameters of :mod:`ccmetrics.analysis.stats` (``ci_level``, ``n_resamples``, ``seed`` mean
what they mean for the summary's intervals): the units drawn are the cases with at least one pair, in sorted
order of their ids, ``numpy.random.default_rng(seed).integers(0, G, (n_resamples, G))``, the statistic of each
resample over the pairs of the cases drawn (a case drawn twice counts twice), the Hyndman–Fan definition 7
quantiles ``(1 − ci_level) / 2`` and ``(1 + ci_level) / 2``. The bias's interval is so exactly
:func:`~ccmetrics.analysis.stats.bootstrap_ci_pooled` of the differences (:func:`~ccmetrics.analysis.stats.bootstrap_ci`
at the patient level, one pair a case). Resamples in which ICC or CCC is undefined (no variance among the cases
drawn) are left out of their quantiles.

Undefined values are NaN (``null`` in JSON), never an error or a warning: every statistic without a pair; the
limits, ICC and CCC with fewer than two pairs; ICC and CCC without variance (their denominator within rounding of
0: :func:`ccmetrics.metrics.pet_agreement.rounding_zero`, so constant values such as 0.1 read as constant);
an interval with fewer than two cases or an undefined estimate.

Algorithm and cost: per row, one grouping pass over its pairs gives each case's count, sums and centred sums of
squares and products; each resample's ICC and CCC follow from the counts of the cases drawn
(Σ_g c_g (S_g + n_g (x̄_g − x̄)(ȳ_g − ȳ))), a two-pass form that equals the statistics of the pooled pairs (tested
against the ANOVA written term by term and pingouin). O(pairs + n_resamples × cases) per row,
vectorised in blocks of about 2²¹ values; about twice a :func:`~ccmetrics.analysis.stats.bootstrap_ci` of as many
values (some 20 ms a row for 2000 resamples of 300 cases).

Examples
--------
>>> import pandas as pd
>>> per_case = pd.DataFrame({"case": ["a", "b", "c", "d"], "class": 1, "status": "ok",
...                          "gt_tmtv_ml": [10.0, 20.0, 30.0, 40.0], "pred_tmtv_ml": [12.0, 19.0, 33.0, 44.0]})
>>> table = quantification_table(per_case, n_resamples=200)
>>> table[["level", "measure", "n"]].values.tolist()[:2]  # lesion rows: n 0 without the per-component table
[['patient', 'tmtv_ml', 4], ['lesion', 'suv_max', 0]]
>>> print(table.loc[0, ["bias", "loa_low", "loa_high", "icc", "ccc", "relative_error_mean"]].astype(float).round(4))
bias                   2.0000
loa_low               -2.2341
loa_high               6.2341
icc                    0.9800
ccc                    0.9735
relative_error_mean    0.0875
Name: 0, dtype: float64
>>> quantification_table(per_case.drop(columns=["gt_tmtv_ml", "pred_tmtv_ml"])).empty
True
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy
from ..metrics.pet_agreement import agreement, rounding_zero
from ..metrics.pet_case import CASE_MEASURES
from ..schema import CASE, CLASS, DETECTED, FAILED, STATUS
from .stats import _quantiles_type7

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made
    pd = _lazy.module("pandas")

__all__ = ["LESION_MEASURES", "PATIENT_MEASURES", "QUANTIFICATION_COLUMNS", "quantification_table"]

#: the per-case measures compared at the patient level (``gt_<m>`` against ``pred_<m>``), in the table's order
PATIENT_MEASURES = tuple(CASE_MEASURES)
#: the per-lesion measures compared at the lesion level (``<m>`` against ``pred_<m>``), in the table's order
LESION_MEASURES = ("suv_max", "suv_mean", "mtv_ml", "tlg")
#: patient-level measures defined on an empty mask (0); the others are NaN there and leave the case out
_DEFINED_WHEN_EMPTY = frozenset({"tmtv_ml", "tlg", "lesion_count"})
#: the columns of the table, in order
QUANTIFICATION_COLUMNS = (
    CLASS,
    "level",
    "measure",
    "pairs",
    "n",
    "n_cases",
    "bias",
    "bias_ci_low",
    "bias_ci_high",
    "loa_low",
    "loa_high",
    "icc",
    "icc_ci_low",
    "icc_ci_high",
    "ccc",
    "ccc_ci_low",
    "ccc_ci_high",
    "relative_error_n",
    "relative_error_mean",
    "abs_relative_error_mean",
)
#: how many values one block of resamples holds (resamples × cases), to bound the memory of the bootstrap
_BLOCK_VALUES = 1 << 21


def quantification_table(
    per_case: pd.DataFrame,
    per_component: pd.DataFrame | None = None,
    *,
    ci_level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """The agreement of the model's PET measurements with the reference's, per class, level and measure.

    See the module docstring for the pairs, the statistics and the intervals.

    Parameters
    ----------
    per_case : pandas.DataFrame
        One row per case and class: ``case``, ``class``, ``status`` and the ``pet`` group's ``gt_<m>`` and
        ``pred_<m>`` columns (:data:`PATIENT_MEASURES`; a measure whose columns are missing, as in a result written
        before it existed, has no row).
    per_component : pandas.DataFrame, optional
        One row per GT lesion: ``case``, ``class``, the ``pet`` group's ``<m>`` and ``pred_<m>`` columns
        (:data:`LESION_MEASURES`) and, with the detection metric, ``detected``. Without it (or without those
        columns, e.g. no lesion at all) the lesion-level rows have ``n`` 0.
    ci_level : float
        The confidence level of the intervals, in (0, 1).
    n_resamples, seed
        The bootstrap's resamples and the seed of ``numpy.random.default_rng``
        (:func:`ccmetrics.analysis.stats.bootstrap_ci`).

    Returns
    -------
    pandas.DataFrame
        :data:`QUANTIFICATION_COLUMNS`: ``class``, ``level`` (``"patient"``, ``"lesion"``), ``measure`` (unit in
        the name), ``pairs`` (what was paired: ``"cases"``, ``"cases, both masks non-empty"``,
        ``"detected lesions"`` or ``"lesions with prediction in region"``), ``n`` (pairs), ``n_cases``
        (the cases they come from: the bootstrap's units), ``bias`` and its interval, ``loa_low``, ``loa_high``,
        ``icc`` and ``ccc`` with their intervals, ``relative_error_n``, ``relative_error_mean`` and
        ``abs_relative_error_mean``. Rows by class, then level (patient first), then measure in the order of
        :data:`PATIENT_MEASURES` and :data:`LESION_MEASURES`. Empty (with these columns) when ``per_case`` has no
        ``pet`` column. Undefined values are NaN.

    Raises
    ------
    ValueError
        ``ci_level`` outside (0, 1), ``n_resamples`` not a positive integer, or a table without its ``case``,
        ``class`` (and ``status``) columns.

    Examples
    --------
    >>> import pandas as pd
    >>> per_case = pd.DataFrame({"case": ["a", "b", "c"], "class": 1, "status": ["ok", "ok", "error"],
    ...                          "gt_suv_max": [8.0, float("nan"), float("nan")], "pred_suv_max": [7.0, 3.0, 1.0]})
    >>> per_component = pd.DataFrame({"case": ["a", "a"], "class": 1, "suv_max": [8.0, 5.0],
    ...                               "pred_suv_max": [7.0, float("nan")], "pred_mtv_ml": [1.0, 0.0]})
    >>> table = quantification_table(per_case, per_component, n_resamples=100)
    >>> print(table[["level", "measure", "pairs", "n", "bias", "icc"]].to_string())
         level   measure                              pairs  n  bias  icc
    0  patient   suv_max        cases, both masks non-empty  1  -1.0  NaN
    1   lesion   suv_max  lesions with prediction in region  1  -1.0  NaN
    2   lesion  suv_mean  lesions with prediction in region  0   NaN  NaN
    3   lesion    mtv_ml  lesions with prediction in region  0   NaN  NaN
    4   lesion       tlg  lesions with prediction in region  0   NaN  NaN
    """
    if not 0 < ci_level < 1:
        raise ValueError(f"ci_level must be in (0, 1), got {ci_level!r}")
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    boot = (float(ci_level), int(n_resamples), seed)
    measures = [m for m in PATIENT_MEASURES if f"gt_{m}" in per_case and f"pred_{m}" in per_case]
    if not measures:
        return pd.DataFrame(columns=list(QUANTIFICATION_COLUMNS))
    _require(per_case, (CASE, CLASS, STATUS), "per_case")
    evaluated = per_case[per_case[STATUS] != FAILED]
    lesions = per_component if per_component is not None else pd.DataFrame()
    if len(lesions):
        _require(lesions, (CASE, CLASS), "per_component")
    rows = []
    for c in sorted(per_case[CLASS].unique()):
        here = evaluated[evaluated[CLASS] == c]
        for m in measures:
            pairs = "cases" if m in _DEFINED_WHEN_EMPTY else "cases, both masks non-empty"
            stats = _agreement_row(here[f"gt_{m}"], here[f"pred_{m}"], here[CASE], boot)
            rows.append({CLASS: c, "level": "patient", "measure": m, "pairs": pairs, **stats})
        found, pairs = _found_lesions(lesions, c, here[CASE])
        for m in LESION_MEASURES:
            if m in found and f"pred_{m}" in found:
                stats = _agreement_row(found[m], found[f"pred_{m}"], found[CASE], boot)
            else:
                stats = _agreement_row([], [], [], boot)
            rows.append({CLASS: c, "level": "lesion", "measure": m, "pairs": pairs, **stats})
    return pd.DataFrame(rows, columns=list(QUANTIFICATION_COLUMNS))


def _require(table: pd.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in table]
    if missing:
        raise ValueError(f"{name} lacks the column(s) {missing}: pass the run's {name} table (DatasetResult.{name})")


def _found_lesions(lesions: pd.DataFrame, c: Any, cases: pd.Series) -> tuple[pd.DataFrame, str]:
    """The lesions of class ``c`` in the evaluated ``cases`` that the model found, and how they were told."""
    if DETECTED in lesions:
        rule, pairs = lesions[DETECTED].eq(True), "detected lesions"
    elif "pred_mtv_ml" in lesions:
        rule, pairs = lesions["pred_mtv_ml"].gt(0), "lesions with prediction in region"
    else:  # no lesion at all (a table without columns), or no way to tell the found ones: none
        return lesions.iloc[:0], "lesions with prediction in region"
    return lesions[rule & (lesions[CLASS] == c) & lesions[CASE].isin(cases)], pairs


def _agreement_row(gt: Any, pred: Any, cases: Any, boot: tuple[float, int, Any]) -> dict[str, Any]:
    """The statistics of one row: the pairs of finite values, their cases the bootstrap's units."""
    x = np.asarray(gt, dtype=np.float64).reshape(-1)
    y = np.asarray(pred, dtype=np.float64).reshape(-1)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    a = agreement(x, y)
    groups, inverse = np.unique(np.asarray(cases)[keep], return_inverse=True)
    inverse = inverse.reshape(-1)
    clusters = _Clusters(x, y, inverse, len(groups))
    point = clusters.icc_ccc(np.ones((1, len(groups))))
    icc, ccc = float(point[0][0]), float(point[1][0])
    bias_ci, icc_ci, ccc_ci = clusters.intervals((a["bias"], icc, ccc), *boot)
    relative = a["relative_error"][~np.isnan(a["relative_error"])]
    return {
        "n": a["n"],
        "n_cases": len(groups),
        "bias": a["bias"],
        "bias_ci_low": bias_ci[0],
        "bias_ci_high": bias_ci[1],
        "loa_low": a["loa_low"],
        "loa_high": a["loa_high"],
        "icc": icc,
        "icc_ci_low": icc_ci[0],
        "icc_ci_high": icc_ci[1],
        "ccc": ccc,
        "ccc_ci_low": ccc_ci[0],
        "ccc_ci_high": ccc_ci[1],
        "relative_error_n": int(relative.size),
        "relative_error_mean": a["mean_relative_error"],
        "abs_relative_error_mean": a["mean_abs_relative_error"],
    }


class _Clusters:
    """The pairs (x, y) grouped by case: what every resample's statistics are computed from."""

    def __init__(self, x: np.ndarray, y: np.ndarray, inverse: np.ndarray, n_groups: int) -> None:
        self.n_groups = n_groups
        count = np.bincount(inverse, minlength=n_groups).astype(np.float64)
        self.count = count
        diff = y - x
        self.diff_sum = np.bincount(inverse, weights=diff, minlength=n_groups)  # as bootstrap_ci_pooled's sums
        #: the difference of every pair where they are all the same (the bias's interval is then that value, as
        #: bootstrap_ci_pooled gives it), else None
        self.constant_diff = float(diff[0]) if len(diff) and bool(np.all(diff == diff[0])) else None
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mean_x = np.bincount(inverse, weights=x, minlength=n_groups) / count
            self.mean_y = np.bincount(inverse, weights=y, minlength=n_groups) / count
        dx, dy = x - self.mean_x[inverse], y - self.mean_y[inverse]  # centred within the case: two passes
        self.sxx = np.bincount(inverse, weights=dx * dx, minlength=n_groups)
        self.syy = np.bincount(inverse, weights=dy * dy, minlength=n_groups)
        self.sxy = np.bincount(inverse, weights=dx * dy, minlength=n_groups)
        self.zero = rounding_zero(x, y)

    def icc_ccc(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ICC(A,1) and Lin's CCC of the pairs, each case's pairs counted ``weights[r, g]`` times, per row ``r``.

        With N = Σ c_g n_g, the means x̄, ȳ and the centred sums Sxx = Σ_g c_g (Sxx_g + n_g (x̄_g − x̄)²), Syy,
        Sxy: MSR = (Sxx + Syy + 2 Sxy) / (2 (N − 1)), MSE = (Sxx + Syy − 2 Sxy) / (2 (N − 1)),
        MSC = N (x̄ − ȳ)² / 2 (the two-way ANOVA of the N × 2 table), ICC = (MSR − MSE) / (MSR + MSE + 2 (MSC − MSE)
        / N) and CCC = 2 Sxy / N / ((Sxx + Syy) / N + (x̄ − ȳ)²).
        """
        if self.n_groups == 0:
            empty = np.full(len(weights), math.nan)
            return empty, empty.copy()
        # einsum, not BLAS: a matrix-vector product of this size is faster so, and starts no threads
        cw = weights * self.count  # each case's pairs drawn
        n = cw.sum(axis=1)
        mx, my = np.einsum("rg,g->r", cw, self.mean_x) / n, np.einsum("rg,g->r", cw, self.mean_y) / n
        ex, ey = self.mean_x - mx[:, None], self.mean_y - my[:, None]  # a case's mean from the resample's: 2nd pass
        cex = cw * ex
        sxx = np.einsum("rg,g->r", weights, self.sxx) + np.einsum("rg,rg->r", cex, ex)
        sxy = np.einsum("rg,g->r", weights, self.sxy) + np.einsum("rg,rg->r", cex, ey)
        cey = np.multiply(cw, ey, out=cw)
        syy = np.einsum("rg,g->r", weights, self.syy) + np.einsum("rg,rg->r", cey, ey)
        with np.errstate(invalid="ignore", divide="ignore"):
            msr = (sxx + syy + 2 * sxy) / (2 * (n - 1))
            mse = (sxx + syy - 2 * sxy) / (2 * (n - 1))
            msc = n * (mx - my) ** 2 / 2
            icc_denominator = msr + mse + 2 * (msc - mse) / n
            icc = np.where((n >= 2) & (icc_denominator > self.zero), (msr - mse) / icc_denominator, math.nan)
            ccc_denominator = (sxx + syy) / n + (mx - my) ** 2
            ccc = np.where((n >= 2) & (ccc_denominator > self.zero), 2 * sxy / n / ccc_denominator, math.nan)
        return icc, ccc

    def intervals(
        self, estimates: tuple[float, float, float], ci_level: float, n_resamples: int, seed: Any
    ) -> list[tuple[float, float]]:
        """The percentile intervals of bias, ICC and CCC over ``n_resamples`` resamples of the cases."""
        nan = (math.nan, math.nan)
        g = self.n_groups
        if g < 2 or all(math.isnan(e) for e in estimates):
            return [nan, nan, nan]
        drawn = np.random.default_rng(seed).integers(0, g, (n_resamples, g))  # the draws of stats.bootstrap_ci
        bias = np.empty(n_resamples)
        icc = np.empty(n_resamples)
        ccc = np.empty(n_resamples)
        block = max(1, _BLOCK_VALUES // g)
        for start in range(0, n_resamples, block):
            rows = drawn[start : start + block]
            bias[start : start + block] = np.sum(self.diff_sum[rows], axis=-1) / np.sum(self.count[rows], axis=-1)
            offsets = (rows + g * np.arange(len(rows))[:, None]).reshape(-1)
            weights = np.bincount(offsets, minlength=len(rows) * g).reshape(len(rows), g).astype(np.float64)
            icc[start : start + block], ccc[start : start + block] = self.icc_ccc(weights)
        alpha = (1 - ci_level) / 2
        out = []
        for estimate, theta in zip(estimates, (bias, icc, ccc)):
            theta = theta[~np.isnan(theta)]
            if math.isnan(estimate) or theta.size == 0:
                out.append(nan)
                continue
            low, high = _quantiles_type7(theta, np.array([alpha, 1 - alpha]))
            out.append((float(low), float(high)))
        if self.constant_diff is not None:  # as bootstrap_ci(_pooled): not the rounding of a sum of equal values
            out[0] = (self.constant_diff, self.constant_diff)
        return out
