"""Statistics over tidy per-case result tables: confidence intervals and method comparison.

Methods (the tests from scipy / scikit-posthocs):

* :func:`bootstrap_ci` -- percentile bootstrap CI of a mean: the draws and the interval of
  :func:`scipy.stats.bootstrap` (``method="percentile"``), written here in numpy, and checked
  against it (bit for bit on scipy >= 1.17, whose interval uses :func:`scipy.stats.quantile`):
  ``n_resamples`` resamples of indices ``numpy.random.default_rng(seed).integers(0, n, (n_resamples,
  n))``, the mean of each, and the Hyndman-Fan definition 7 quantiles ``alpha`` and ``1 - alpha``
  (``alpha = (1 - ci_level) / 2``) of those means. The reason is start-up time: importing
  ``scipy.stats`` takes about 0.4 s, which was the largest part of what a small ``ccmetrics
  evaluate`` run did after its last case; scipy.stats is imported only by the tests below. Cost:
  O(n_resamples * n), vectorised; about a millisecond for 2000 resamples of a few hundred values.
* :func:`bootstrap_ci_pooled` -- cluster (case-level) bootstrap CI of a mean over pooled
  items such as all lesions of all patients: cases are resampled, not items. Cost:
  O(n_resamples * n_groups) after one O(n_items) grouping pass.
* :func:`friedman_nemenyi` -- on a paired table (rows = cases or patients, columns =
  methods): ranks methods within each row (:func:`scipy.stats.rankdata`, ties get average
  ranks), the Friedman test (:func:`scipy.stats.friedmanchisquare`) and the Nemenyi
  post-hoc test (``scikit_posthocs.posthoc_nemenyi_friedman``), with mean ranks, the
  critical difference and a table of significant pairs. Cost: O(n_rows * n_methods *
  log n_methods) plus O(n_methods^2) for the post-hoc matrix.
* :func:`compare` -- pairs cases across methods from tidy per-case tables and tests for
  differences: :func:`friedman_nemenyi` for three or more methods (the one implementation,
  shared with ``ccmetrics compare`` and the nuclei per-patient comparisons), the Wilcoxon
  signed-rank test (:func:`scipy.stats.wilcoxon`) for exactly two. Cost as above,
  negligible next to computing the metrics.

The Nemenyi test needs the optional dependency ``scikit-posthocs`` (the ``stats`` extra: ``pip install
scikit-posthocs``, or ``pip install -e ".[stats]"`` in a checkout of ccmetrics); it is imported only when needed.
Without it :func:`compare` still gives the means, the mean ranks and the Friedman (or Wilcoxon) test, with
``nemenyi`` and ``significance`` None and ``Comparison.posthoc_missing`` saying why; :func:`friedman_nemenyi`,
whose result is the post-hoc test, raises ImportError with the same advice.
"""

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from .. import schema
from .._deprecation import former_ci_level
from ..metrics import registry
from ..metrics.aggregation import cc_values

__all__ = [
    "bootstrap_ci",
    "bootstrap_ci_pooled",
    "Comparison",
    "compare",
    "FriedmanNemenyi",
    "friedman_nemenyi",
    "NO_DIFFERENCE",
    "POSTHOC_MISSING",
]

#: why the Nemenyi post-hoc tests are missing, and how to get them (scikit-posthocs is the ``stats`` extra; the
#: distribution ccmetrics-toolkit is not on the package index, and ``ccmetrics`` there is another project)
POSTHOC_MISSING = (
    "the Nemenyi post-hoc tests need scikit-posthocs (the stats extra): pip install scikit-posthocs, "
    'or pip install -e ".[stats]" in a checkout of ccmetrics'
)


def _percentile_bootstrap(data, statistic, ci_level, n_resamples, seed, paired) -> tuple[float, float]:
    """``scipy.stats.bootstrap(data, statistic, method="percentile", vectorized=True, paired=paired, ...)``'s
    interval for 1D samples (see the module docstring): the same draws from ``default_rng(seed)``, the same
    quantiles."""
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    rng = np.random.default_rng(seed)
    if paired:  # one draw of indices for every sample, as scipy resamples the indices of paired observations
        n = data[0].shape[-1]
        drawn = rng.integers(0, n, (n_resamples, n))
        theta = statistic(*[sample[..., drawn] for sample in data], axis=-1)
    else:
        theta = statistic(*[s[..., rng.integers(0, s.shape[-1], (n_resamples, s.shape[-1]))] for s in data], axis=-1)
    alpha = (1 - ci_level) / 2
    low, high = _quantiles_type7(np.asarray(theta, dtype=float), np.array([alpha, 1 - alpha]))
    return float(low), float(high)


def _quantiles_type7(values: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Quantiles ``p`` of 1D ``values``, Hyndman and Fan's definition 7 (numpy's and scipy's default, "linear"),
    in the arithmetic of :func:`scipy.stats.quantile`: with ``y`` sorted and ``j + g = p * n + 1 - p`` (``j``
    the whole part, counted from 1), ``(1 - g) * y[j] + g * y[j + 1]``, both indices clipped to ``y``."""
    y = np.sort(values)
    n = y.size
    position = p * n + (1 - p)
    whole = position // 1
    g = position % 1
    below = np.clip(whole - 1, 0, n - 1).astype(np.int64)  # whole >= 1 for 0 <= p <= 1
    above = np.clip(whole, 0, n - 1).astype(np.int64)
    return (1 - g) * y[below] + g * y[above]


def _check_values(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"values must be 1D, got shape {values.shape}")
    if np.isnan(values).any():
        raise ValueError("values contain NaN; drop missing values before bootstrapping")
    return values


def bootstrap_ci(
    values, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean.

    Parameters
    ----------
    values : array_like
        1D values. NaN is an error: callers drop missing values first.
    ci_level : float
        Confidence level of the interval (formerly ``confidence``, accepted for one release with a
        ``DeprecationWarning``).
    n_resamples : int
        Number of bootstrap resamples.
    seed : int
        Seed of ``numpy.random.default_rng``; the result is deterministic for a seed.

    Returns
    -------
    (low, high) : tuple of float
        ``(nan, nan)`` with fewer than 2 values (undefined); ``(v, v)`` if all values equal v.

    Examples
    --------
    >>> low, high = bootstrap_ci([0.7, 0.8, 0.75, 0.9, 0.85])
    >>> bool(low < 0.8 < high)
    True
    >>> bootstrap_ci([0.5])
    (nan, nan)
    """
    ci_level = former_ci_level(ci_level, former, "bootstrap_ci")
    values = _check_values(values)
    if values.size < 2:
        return (float("nan"), float("nan"))
    if np.all(values == values[0]):
        return (float(values[0]), float(values[0]))
    return _percentile_bootstrap((values,), np.mean, ci_level, n_resamples, seed, paired=False)


def _ratio_of_sums(sums, counts, axis=-1):
    return np.sum(sums, axis=axis) / np.sum(counts, axis=axis)


def bootstrap_ci_pooled(
    values, groups, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
) -> tuple[float, float]:
    """Cluster bootstrap confidence interval of the mean of pooled items.

    Groups (cases) are resampled with replacement and their items pooled; the statistic is
    the mean of the pooled items, i.e. sum of group sums / sum of group counts. This keeps
    items of one case together, as they are not independent.

    Parameters
    ----------
    values : array_like
        1D item values (e.g. one per lesion). NaN is an error: drop missing values first.
    groups : array_like
        Group (case) id of each item, same length as ``values``.
    ci_level, n_resamples, seed
        As in :func:`bootstrap_ci` (``confidence``: the former name of ``ci_level``).

    Returns
    -------
    (low, high) : tuple of float
        ``(nan, nan)`` with fewer than 2 groups; ``(v, v)`` if all values equal v.

    Examples
    --------
    >>> values = [0.9, 0.8, 0.4, 0.7, 0.6, 0.95]
    >>> groups = ["a", "a", "b", "c", "c", "d"]
    >>> low, high = bootstrap_ci_pooled(values, groups)
    >>> bool(low < sum(values) / len(values) < high)
    True
    """
    ci_level = former_ci_level(ci_level, former, "bootstrap_ci_pooled")
    values = _check_values(values)
    groups = np.asarray(groups)
    if groups.shape != values.shape:
        raise ValueError(f"groups has shape {groups.shape}, values {values.shape}")
    _, inverse = np.unique(groups, return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=values)
    counts = np.bincount(inverse.ravel()).astype(float)
    if sums.size < 2:
        return (float("nan"), float("nan"))
    if np.all(values == values[0]):
        return (float(values[0]), float(values[0]))
    return _percentile_bootstrap((sums, counts), _ratio_of_sums, ci_level, n_resamples, seed, paired=True)


@dataclass
class Comparison:
    """Paired comparison of methods on one metric; returned by :func:`compare`.

    Attributes
    ----------
    metric : str
    higher_is_better : bool
    test : str
        ``"friedman"`` (3 or more methods) or ``"wilcoxon"`` (exactly 2 methods).
    scores : pandas.DataFrame
        Index: case id; columns: methods in the order given; only cases all methods scored.
        Infinite distances are kept; they rank as the worst (or best) value.
    mean_ranks : pandas.Series
        Mean over cases of each method's within-case rank (1 = best, ties averaged).
    statistic, pvalue : float
        Statistic and p-value of ``test``: Friedman's chi-square for 3 or more methods,
        Wilcoxon's signed-rank statistic for 2.
    nemenyi : pandas.DataFrame or None
        Method x method Nemenyi p-values (3 or more methods); None for 2 methods.
    excluded : list
        Case ids dropped because some method has no score for them (missing, NaN or
        status "error").
    empty_gt : list
        Case ids left out because their GT is empty in some method's table (the
        empty-GT rule scores them; each evaluation summarises them apart).
    significance : pandas.DataFrame or None
        One row per pair of methods (3 or more methods): see
        ``FriedmanNemenyi.significance``; None for 2 methods.
    posthoc_missing : str
        Empty, or, where scikit-posthocs is not installed and 3 or more methods are compared, the sentence
        :data:`POSTHOC_MISSING` (why ``nemenyi`` and ``significance`` are None, and how to install it); the means, the
        mean ranks and the Friedman test are there all the same.
    """

    metric: str
    higher_is_better: bool
    test: str
    scores: pd.DataFrame
    mean_ranks: pd.Series
    statistic: float
    pvalue: float
    nemenyi: Optional[pd.DataFrame]
    excluded: list
    empty_gt: list = field(default_factory=list)
    significance: Optional[pd.DataFrame] = None
    posthoc_missing: str = ""

    def summary(self) -> pd.DataFrame:
        """Per method: n, mean, median and mean_rank of the paired scores, best rank first."""
        table = pd.DataFrame(
            {
                "n": self.scores.count(),
                "mean": self.scores.mean(),
                "median": self.scores.median(),
                "mean_rank": self.mean_ranks,
            }
        )
        return table.sort_values("mean_rank", kind="stable")


@dataclass
class FriedmanNemenyi:
    """Friedman test and Nemenyi post-hoc tests of methods over paired rows; see :func:`friedman_nemenyi`.

    Attributes
    ----------
    statistic, pvalue : float
        Friedman's chi-square statistic and its p-value.
    nemenyi : pandas.DataFrame
        Method x method Nemenyi p-values (1 on the diagonal).
    mean_ranks : pandas.Series
        Mean over rows of each method's within-row rank (1 = best, ties averaged).
    ranks : pandas.DataFrame
        The within-row ranks (same index and columns as the scores).
    significance : pandas.DataFrame
        One row per pair of methods, the better mean rank first: ``method_a``,
        ``method_b``, ``mean_rank_a``, ``mean_rank_b``, ``rank_difference``, ``pvalue``
        (Nemenyi), ``significant`` (``pvalue < alpha``), ``better`` (``method_a`` when
        significant, else empty).
    critical_difference : float
        Nemenyi critical difference of mean ranks at ``alpha``,
        ``q_alpha * sqrt(k (k + 1) / (6 n))`` with ``q_alpha`` the studentized range
        quantile over sqrt(2) (Demsar 2006).
    n_rows, n_methods : int
    alpha : float
    higher_is_better : bool
    """

    statistic: float
    pvalue: float
    nemenyi: pd.DataFrame
    mean_ranks: pd.Series
    ranks: pd.DataFrame
    significance: pd.DataFrame
    critical_difference: float
    n_rows: int
    n_methods: int
    alpha: float
    higher_is_better: bool


NO_DIFFERENCE = (0.0, 1.0)
"""Statistic and p-value of a test whose methods tie in every case: no evidence of a difference.

scipy returns NaN for the Friedman test then, and for the Wilcoxon test 1.0 (scipy >= 1.15, with a
warning) or an error (older releases); both tests here return this pair instead."""


def _friedman(ranks: np.ndarray) -> tuple[float, float]:
    """Friedman's chi-square and p-value of within-row ranks; NO_DIFFERENCE when every row ties."""
    from scipy import stats

    if (ranks == ranks[:, :1]).all():
        return NO_DIFFERENCE
    res = stats.friedmanchisquare(*ranks.T)
    return float(res.statistic), float(res.pvalue)


def _wilcoxon(diff: np.ndarray) -> tuple[float, float]:
    """Wilcoxon signed-rank statistic and p-value of paired differences; NO_DIFFERENCE when all are 0."""
    from scipy import stats

    if not diff.any():
        return NO_DIFFERENCE
    res = stats.wilcoxon(diff)
    return float(res.statistic), float(res.pvalue)


def _within_row_ranks(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Each row's ranks, 1 the best, ties averaged (:func:`scipy.stats.rankdata`)."""
    from scipy import stats

    return stats.rankdata(-values if higher_is_better else values, axis=1)


def _posthoc_available() -> bool:
    """Whether scikit-posthocs can be imported (the ``stats`` extra)."""
    try:
        import scikit_posthocs  # noqa: F401
    except ImportError:
        return False
    return True


def friedman_nemenyi(scores: pd.DataFrame, *, higher_is_better: bool = True, alpha: float = 0.05) -> FriedmanNemenyi:
    """Friedman test with Nemenyi post-hoc tests on a paired table of scores.

    Methods are ranked within each row (1 = best, ties get average ranks; ``inf`` is a
    valid value, e.g. a worst distance). The Friedman statistic and the Nemenyi tests
    are computed on these ranks, which fixes the direction explicitly and gives the same
    statistic as on the raw scores. Methods that tie in every row give ``statistic`` 0 and
    ``pvalue`` 1 (:data:`NO_DIFFERENCE`; scipy's formula divides by zero there).

    Parameters
    ----------
    scores : pandas.DataFrame
        Rows: paired units (patients, cases); columns: methods (at least 3). No NaN: drop
        incomplete rows first (``scores.dropna()``).
    higher_is_better : bool
        Direction of the score (False for distances).
    alpha : float
        Significance level of the ``significance`` table and the critical difference.

    Returns
    -------
    FriedmanNemenyi

    Examples
    --------
    >>> scores = pd.DataFrame({"A": [0.9, 0.8, 0.7, 0.6], "B": [0.8, 0.7, 0.9, 0.5],
    ...                        "C": [0.7, 0.6, 0.5, 0.4]}, index=["p1", "p2", "p3", "p4"])
    >>> r = friedman_nemenyi(scores)
    >>> round(r.statistic, 3), round(r.pvalue, 4), r.mean_ranks.to_dict()
    (6.5, 0.0388, {'A': 1.25, 'B': 1.75, 'C': 3.0})
    >>> r.significance[["method_a", "method_b", "significant"]].values.tolist()
    [['A', 'B', False], ['A', 'C', True], ['B', 'C', False]]
    """
    if not isinstance(scores, pd.DataFrame):
        raise TypeError(
            f"scores must be a pandas DataFrame (rows: patients, columns: methods), got {type(scores).__name__}"
        )
    methods = list(scores.columns)
    if len(methods) < 3:
        raise ValueError(
            f"the Friedman test needs at least 3 methods (columns), got {len(methods)}; "
            "for 2 methods use scipy.stats.wilcoxon or compare()"
        )
    if len(scores) < 2:
        raise ValueError(f"need at least 2 rows (patients) scored by every method, got {len(scores)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    values = scores.to_numpy(dtype=float)
    if np.isnan(values).any():
        bad = list(scores.index[np.isnan(values).any(axis=1)])
        raise ValueError(f"scores has NaN in rows {bad[:10]}; drop incomplete rows first (scores.dropna())")
    try:
        import scikit_posthocs
    except ImportError as err:
        raise ImportError(
            f"{POSTHOC_MISSING}; compare() gives the mean ranks and the Friedman test without it"
        ) from err
    from scipy import stats

    ranks = _within_row_ranks(values, higher_is_better)
    statistic, pvalue = _friedman(ranks)
    nemenyi = scikit_posthocs.posthoc_nemenyi_friedman(pd.DataFrame(ranks, columns=methods))
    nemenyi.index, nemenyi.columns = pd.Index(methods), pd.Index(methods)
    mean_ranks = pd.Series(ranks.mean(axis=0), index=methods, name="mean_rank")
    n, k = ranks.shape
    q_alpha = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    critical_difference = float(q_alpha * np.sqrt(k * (k + 1) / (6 * n)))
    order = sorted(range(k), key=lambda j: (mean_ranks.iloc[j], j))
    rows = []
    for a_pos, a in enumerate(order):
        for b in order[a_pos + 1 :]:
            p = float(nemenyi.iloc[a, b])
            rows.append(
                {
                    "method_a": methods[a],
                    "method_b": methods[b],
                    "mean_rank_a": float(mean_ranks.iloc[a]),
                    "mean_rank_b": float(mean_ranks.iloc[b]),
                    "rank_difference": float(mean_ranks.iloc[b] - mean_ranks.iloc[a]),
                    "pvalue": p,
                    "significant": p < alpha,
                    "better": methods[a] if p < alpha else "",
                }
            )
    columns = [
        "method_a",
        "method_b",
        "mean_rank_a",
        "mean_rank_b",
        "rank_difference",
        "pvalue",
        "significant",
        "better",
    ]
    significance = pd.DataFrame(rows, columns=columns)
    return FriedmanNemenyi(
        statistic=statistic,
        pvalue=pvalue,
        nemenyi=nemenyi,
        mean_ranks=mean_ranks,
        ranks=pd.DataFrame(ranks, index=scores.index, columns=methods),
        significance=significance,
        critical_difference=critical_difference,
        n_rows=n,
        n_methods=k,
        alpha=alpha,
        higher_is_better=higher_is_better,
    )


def _method_scores(
    name: str, table: pd.DataFrame, metric: str, case_column: str, class_column: str, class_value, columns=None
) -> pd.Series:
    if metric not in table.columns:
        raise KeyError(f"method {name!r}: no column {metric!r}")
    if class_value is not None:
        if class_column not in table.columns:
            raise ValueError(f"method {name!r}: class_value given but there is no column {class_column!r}")
        table = table[table[class_column] == class_value]
    elif class_column in table.columns and table[class_column].nunique() > 1:
        raise ValueError(
            f"method {name!r} has several classes {sorted(table[class_column].unique())}; pass class_value to pick one"
        )
    values = table[metric].astype(float)
    if schema.WORST_DISTANCE in table.columns:
        # an empty prediction's infinite distance counts as the case's worst distance, as in every mean
        worst = table[schema.WORST_DISTANCE].astype(float)
        values = pd.Series(cc_values(values, metric, worst, columns), index=values.index)
    if schema.STATUS in table.columns:
        values = values.where(table[schema.STATUS] != schema.FAILED)  # an error row is not a score
    values.index = pd.Index(table[case_column], name=case_column)
    if values.index.has_duplicates:
        duplicated = list(values.index[values.index.duplicated()])
        raise ValueError(f"method {name!r}: duplicate case ids {duplicated}")
    return values.rename(name)


def compare(
    tables: Mapping[str, pd.DataFrame],
    metric: str,
    *,
    higher_is_better: Optional[bool] = None,
    case_column: str = schema.CASE,
    class_value=None,
    class_column: str = schema.CLASS,
    columns: Optional[Mapping[str, "registry.Column"]] = None,
) -> Comparison:
    """Compare methods on one metric over paired cases, with rank-based tests.

    Cases are paired by id; a case some method lacks (missing row, NaN, or status "error")
    is excluded, listed in ``excluded`` and reported with a warning. Methods are ranked
    within each case (1 = best, ties averaged; ``inf`` is a valid worst distance). With 3 or
    more methods the Friedman test and the Nemenyi post-hoc test are run on these ranks
    (without scikit-posthocs, the Friedman test alone: ``nemenyi`` None and ``posthoc_missing``
    saying how to install it); with exactly 2 the Wilcoxon signed-rank test is run on the paired
    scores (``test="wilcoxon"``, ``nemenyi=None``). Methods with equal scores in every case give
    ``statistic`` 0 and ``pvalue`` 1 (:data:`NO_DIFFERENCE`), with either test.

    Parameters
    ----------
    tables : mapping of str to pandas.DataFrame
        Method name -> tidy per-case table with columns ``case_column``, the metric and
        optionally ``class_column`` and ``status``.
    metric : str
        Metric column, e.g. ``"dice"`` or ``"cc_hd95"``.
    higher_is_better : bool, optional
        Inferred if None: the metric registry's direction of the column (``cc_`` prefix allowed;
        distances and error volumes are lower-is-better), from ``columns`` first; True for a
        column no metric produces. A measure (``gt_tmtv_ml``, ``pred_suv_max``, ...: measured in
        each mask and compared) has none: it is refused unless a direction is given here.
    case_column, class_column : str
        Column names of the case id and the class.
    class_value : optional
        Class to compare; required when the tables hold several classes.
    columns : mapping of str to ccmetrics.metrics.registry.Column, optional
        Facts of metrics this process has not registered (a result folder's
        ``DatasetResult.columns``).

    Returns
    -------
    Comparison

    Examples
    --------
    >>> a = pd.DataFrame({"case": [1, 2, 3, 4], "dice": [0.9, 0.8, 0.7, 0.6]})
    >>> b = pd.DataFrame({"case": [1, 2, 3, 4], "dice": [0.8, 0.7, 0.9, 0.5]})
    >>> c = pd.DataFrame({"case": [1, 2, 3, 4], "dice": [0.7, 0.6, 0.5, 0.4]})
    >>> result = compare({"A": a, "B": b, "C": c}, "dice")
    >>> result.mean_ranks.to_dict()
    {'A': 1.25, 'B': 1.75, 'C': 3.0}
    >>> round(result.statistic, 3), round(result.pvalue, 4)
    (6.5, 0.0388)
    >>> result.summary().round(3)
       n   mean  median  mean_rank
    A  4  0.750    0.75       1.25
    B  4  0.725    0.75       1.75
    C  4  0.550    0.55       3.00
    """
    methods = list(tables)
    if len(methods) < 2:
        raise ValueError(f"need at least 2 methods to compare, got {len(methods)}")
    if higher_is_better is None:
        higher_is_better = registry.higher_is_better(metric, columns)
    empty_gt: set = set()
    kept = {}
    for m in methods:  # empty-GT cases follow a special rule; they are summarised apart, never ranked
        table = tables[m]
        if schema.EMPTY_GT in table:
            flag = table[schema.EMPTY_GT].eq(True)
            if class_value is not None and class_column in table:
                flag &= table[class_column] == class_value
            empty_gt.update(table.loc[flag, case_column])
            table = table[~flag]
        kept[m] = table
    scored = [_method_scores(m, kept[m], metric, case_column, class_column, class_value, columns) for m in methods]
    wide = pd.concat(scored, axis=1, join="outer")
    wide = wide[~wide.index.isin(empty_gt)]
    complete = wide.notna().all(axis=1)
    excluded = list(wide.index[~complete])
    if excluded:
        warnings.warn(
            f"{len(excluded)} case(s) excluded from the comparison of {metric!r}: "
            f"not scored by every method: {excluded}",
            UserWarning,
            stacklevel=2,
        )
    scores = wide[complete]
    if len(scores) < 2:
        raise ValueError(f"need at least 2 cases scored by every method, got {len(scores)}")
    tested: dict[str, Any]  # what the test gives: the one place a Comparison's fields differ by the test
    if len(methods) == 2:
        ranks = _within_row_ranks(scores.to_numpy(), higher_is_better)
        a, b = scores.to_numpy().T
        diff = np.subtract(a, b, out=np.zeros_like(a), where=a != b)  # equal values tie (inf - inf is no NaN)
        statistic, pvalue = _wilcoxon(diff)
        tested = {"test": "wilcoxon", "mean_ranks": pd.Series(ranks.mean(axis=0), index=methods, name="mean_rank")}
        tested.update(statistic=statistic, pvalue=pvalue, nemenyi=None)
    elif not _posthoc_available():  # the means, ranks and the Friedman test need scipy only
        ranks = _within_row_ranks(scores.to_numpy(dtype=float), higher_is_better)
        statistic, pvalue = _friedman(ranks)
        tested = {"test": "friedman", "mean_ranks": pd.Series(ranks.mean(axis=0), index=methods, name="mean_rank")}
        tested.update(statistic=statistic, pvalue=pvalue, nemenyi=None, posthoc_missing=POSTHOC_MISSING)
    else:
        fn = friedman_nemenyi(scores, higher_is_better=higher_is_better)
        tested = {"test": "friedman", "mean_ranks": fn.mean_ranks, "statistic": fn.statistic, "pvalue": fn.pvalue}
        tested.update(nemenyi=fn.nemenyi, significance=fn.significance)
    return Comparison(
        metric=metric,
        higher_is_better=higher_is_better,
        scores=scores,
        excluded=excluded,
        empty_gt=sorted(empty_gt, key=str),
        **tested,
    )


def __getattr__(name: str):  # names this module held before the registry: deprecated, computed from it
    return registry.legacy(__name__, name)
