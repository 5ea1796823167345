"""ccmetrics.analysis.stats against values computed independently (by hand or with plain numpy/scipy)."""

import inspect
import math

import numpy as np
import pandas as pd
import pytest
import scipy
from scipy import stats
from scipy import stats as scipy_stats

from ccmetrics.analysis.stats import bootstrap_ci, bootstrap_ci_pooled, compare

try:
    import scikit_posthocs  # noqa: F401
except ImportError:
    scikit_posthocs = None
needs_posthocs = pytest.mark.skipif(scikit_posthocs is None, reason="scikit-posthocs not installed")


# ---------------------------------------------------------------- bootstrap_ci
def numpy_percentile_bootstrap(values, n_resamples, confidence=0.95, seed=123):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_resamples, len(values)))
    means = values[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    return np.quantile(means, [alpha, 1 - alpha])


@pytest.fixture
def normal50():
    return np.random.default_rng(42).standard_normal(50)


def test_bootstrap_ci_reproducible(normal50):
    assert bootstrap_ci(normal50, seed=1) == bootstrap_ci(normal50, seed=1)
    assert bootstrap_ci(normal50, seed=1) != bootstrap_ci(normal50, seed=2)


def test_bootstrap_ci_contains_mean_and_matches_numpy(normal50):
    low, high = bootstrap_ci(normal50, n_resamples=5000)
    assert low < normal50.mean() < high
    ref_low, ref_high = numpy_percentile_bootstrap(normal50, 20000)
    assert low == pytest.approx(ref_low, abs=0.02)
    assert high == pytest.approx(ref_high, abs=0.02)
    # a lower confidence level gives a narrower interval
    low90, high90 = bootstrap_ci(normal50, ci_level=0.9, n_resamples=5000)
    assert high90 - low90 < high - low


def test_bootstrap_ci_degenerate():
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([0.3]))
    assert bootstrap_ci([0.7, 0.7, 0.7]) == (0.7, 0.7)
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([0.1, np.nan, 0.3])


def _scipy_interval(data, statistic, confidence, n_resamples, seed, paired):
    """scipy.stats.bootstrap's percentile interval: the reference the numpy bootstrap is checked against."""
    keyword = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
    res = stats.bootstrap(
        data,
        statistic,
        n_resamples=n_resamples,
        vectorized=True,
        paired=paired,
        confidence_level=confidence,
        method="percentile",
        **{keyword: np.random.default_rng(seed)},
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


# scipy >= 1.17 takes the interval with scipy.stats.quantile, whose arithmetic the bootstrap copies; older releases
# used numpy.percentile, whose interpolation can differ in the last bit
_SCIPY_QUANTILE = tuple(int(x) for x in scipy.__version__.split(".")[:2]) >= (1, 17)


def _same_interval(ours, reference):
    if _SCIPY_QUANTILE:
        assert np.array_equal(ours, reference, equal_nan=True), (ours, reference)
    else:
        np.testing.assert_allclose(ours, reference, rtol=4 * np.finfo(float).eps, atol=0)


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.5, 0.999, 0.01])
@pytest.mark.parametrize("n_resamples", [1, 2, 3, 10, 2000])
def test_bootstrap_ci_equals_scipy_bootstrap_bit_for_bit(confidence, n_resamples):
    """Adversarial inputs for the interval's arithmetic: one or two resamples (quantile positions clipped below the
    first and above the last), extreme confidence levels, values of many ties (equal means at the quantile), values
    spanning ten decades, and 1 / 3 steps that no binary fraction holds."""
    rng = np.random.default_rng(int(confidence * 1000) + n_resamples)
    samples = [
        rng.standard_normal(50),
        rng.integers(0, 3, 40).astype(float),
        rng.uniform(size=30) * 10.0 ** rng.integers(-5, 5, 30),
        np.arange(7) / 3,
        np.array([0.0, 1.0]),
    ]
    for values in samples:
        for seed in (0, 7, 123):
            ours = bootstrap_ci(values, ci_level=confidence, n_resamples=n_resamples, seed=seed)
            _same_interval(ours, _scipy_interval((values,), np.mean, confidence, n_resamples, seed, False))


def test_bootstrap_ci_random_inputs_equal_scipy_bootstrap():
    rng = np.random.default_rng(2026)
    for k in range(300):
        values = np.round(rng.uniform(size=int(rng.integers(2, 200))), int(rng.integers(1, 6)))
        if np.all(values == values[0]):
            continue
        confidence, n_resamples, seed = float(rng.uniform(0.01, 0.999)), int(rng.integers(1, 3000)), k
        ours = bootstrap_ci(values, ci_level=confidence, n_resamples=n_resamples, seed=seed)
        _same_interval(ours, _scipy_interval((values,), np.mean, confidence, n_resamples, seed, False))


def test_bootstrap_ci_rejects_no_resamples():
    with pytest.raises(ValueError, match="n_resamples must be a positive integer"):
        bootstrap_ci([0.1, 0.2, 0.4], n_resamples=0)


def test_the_confidence_intervals_need_no_scipy_stats():
    """The summary of every evaluation takes these intervals; scipy.stats costs about 0.4 s to import."""
    import subprocess
    import sys

    code = (
        "import sys; from ccmetrics.analysis.stats import bootstrap_ci, bootstrap_ci_pooled; "
        "bootstrap_ci([0.1, 0.5, 0.7]); bootstrap_ci_pooled([0.1, 0.5, 0.7], [1, 1, 2]); "
        "print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------- bootstrap_ci_pooled
def test_pooled_equals_scipy_paired_bootstrap_of_case_sums_bit_for_bit():
    """The cluster bootstrap is scipy's paired bootstrap of (case sum, case count) with the ratio of their totals."""
    rng = np.random.default_rng(5)
    for k in range(60):
        groups = rng.integers(0, int(rng.integers(2, 30)), int(rng.integers(2, 150)))
        values = np.round(rng.uniform(size=groups.size), 3)
        if np.unique(groups).size < 2 or np.all(values == values[0]):
            continue
        confidence, n_resamples = [0.95, 0.9, 0.5][k % 3], [2000, 1, 2, 17][k % 4]
        _, inverse = np.unique(groups, return_inverse=True)
        sums, counts = np.bincount(inverse, weights=values), np.bincount(inverse).astype(float)

        def ratio(s, c, axis=-1):
            return np.sum(s, axis=axis) / np.sum(c, axis=axis)

        reference = _scipy_interval((sums, counts), ratio, confidence, n_resamples, k, True)
        ours = bootstrap_ci_pooled(values, groups, ci_level=confidence, n_resamples=n_resamples, seed=k)
        _same_interval(ours, reference)


def test_pooled_singleton_groups_match_plain_bootstrap(normal50):
    low, high = bootstrap_ci_pooled(normal50, np.arange(50), n_resamples=5000)
    ref_low, ref_high = numpy_percentile_bootstrap(normal50, 20000)
    assert low == pytest.approx(ref_low, abs=0.02)
    assert high == pytest.approx(ref_high, abs=0.02)
    # scipy resamples paired samples through one index array, so with one item per group
    # the same seed draws the same resamples as bootstrap_ci
    assert (low, high) == pytest.approx(bootstrap_ci(normal50, n_resamples=5000), abs=1e-12)


def test_pooled_contains_pooled_mean_and_is_reproducible():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 8, size=30)
    groups = np.repeat(np.arange(30), sizes)
    values = rng.random(groups.size) + 0.1 * groups / 30  # groups differ a little
    low, high = bootstrap_ci_pooled(values, groups)
    assert low < values.mean() < high
    assert (low, high) == bootstrap_ci_pooled(values, groups)


def test_pooled_big_group_dominates():
    # one case with 1000 lesions at 1.0, nine cases with one lesion at 0.0: the pooled mean
    # is 1000/1009; resampling cases, the interval reaches far below it (resamples without
    # the big case have mean 0) but never above 1.
    values = np.r_[np.ones(1000), np.zeros(9)]
    groups = np.r_[np.zeros(1000, int), np.arange(1, 10)]
    low, high = bootstrap_ci_pooled(values, groups)
    assert high == pytest.approx(1.0, abs=0.01)
    assert low < 0.98
    # item-level bootstrap would ignore the clustering and give a tight interval
    item_low, _ = bootstrap_ci(values)
    assert item_low > 0.98 > low


def test_pooled_degenerate():
    assert all(math.isnan(v) for v in bootstrap_ci_pooled([0.1, 0.5, 0.9], ["a", "a", "a"]))
    assert bootstrap_ci_pooled([0.4, 0.4, 0.4], [1, 2, 2]) == (0.4, 0.4)
    with pytest.raises(ValueError):
        bootstrap_ci_pooled([0.1, 0.2], [1])


# ---------------------------------------------------------------- compare
def tidy(values, metric="dice", cases=None, **extra):
    cases = list(range(1, len(values) + 1)) if cases is None else cases
    return pd.DataFrame({"case": cases, "class": 1, metric: values, **extra})


HAND = {"A": [0.9, 0.8, 0.7, 0.6], "B": [0.8, 0.7, 0.9, 0.5], "C": [0.7, 0.6, 0.5, 0.4]}


@needs_posthocs
def test_compare_hand_checked():
    result = compare({m: tidy(v) for m, v in HAND.items()}, "dice")
    assert result.test == "friedman" and result.higher_is_better and result.excluded == []
    assert list(result.scores.columns) == ["A", "B", "C"]
    assert result.mean_ranks.to_dict() == {"A": 1.25, "B": 1.75, "C": 3.0}
    # chi2 = 12/(n k (k+1)) * sum(R_j^2) - 3 n (k+1), R = (5, 7, 12), n = 4, k = 3
    assert result.statistic == pytest.approx(6.5)
    assert result.pvalue == pytest.approx(stats.chi2.sf(6.5, 2))
    assert result.pvalue == pytest.approx(0.03877, abs=1e-5)
    nem = result.nemenyi
    assert list(nem.index) == list(nem.columns) == ["A", "B", "C"]
    np.testing.assert_allclose(nem.to_numpy(), nem.to_numpy().T)
    np.testing.assert_allclose(np.diag(nem.to_numpy()), 1.0)
    q = abs(1.25 - 3.0) / math.sqrt(3 * 4 / (6 * 4))
    assert nem.loc["A", "C"] == pytest.approx(stats.studentized_range.sf(q * math.sqrt(2), 3, np.inf))
    summary = result.summary()
    assert list(summary.index) == ["A", "B", "C"]
    assert summary.loc["B", "mean"] == pytest.approx(0.725)
    assert summary.loc["A", "median"] == pytest.approx(0.75)
    assert (summary["n"] == 4).all()


@needs_posthocs
def test_compare_lower_is_better_and_inf():
    # per-case ranks (lower is better): case1 A1 B2 C3, case2 A1 B2 C3 (inf worst),
    # case3 B1 A2 C3, case4 A1 B2.5 C2.5 (inf tie)
    hd = {"A": [1.0, 2.0, 5.0, 1.0], "B": [2.0, 3.0, 1.0, np.inf], "C": [3.0, np.inf, 9.0, np.inf]}
    for metric in ("hd95", "cc_hd95"):
        result = compare({m: tidy(v, metric) for m, v in hd.items()}, metric)
        assert result.higher_is_better is False
        assert np.isinf(result.scores.loc[2, "C"])
        np.testing.assert_allclose(result.mean_ranks.to_numpy(), [5 / 4, 7.5 / 4, 11.5 / 4])
        assert result.statistic == pytest.approx(
            stats.friedmanchisquare(*stats.rankdata(np.array(list(hd.values())).T, axis=1).T).statistic
        )
    # the same values as "dice" (higher is better) reverse the ranks
    reversed_ = compare({m: tidy(v, "dice") for m, v in hd.items()}, "dice")
    np.testing.assert_allclose(reversed_.mean_ranks.to_numpy(), [4 - 5 / 4, 4 - 7.5 / 4, 4 - 11.5 / 4])
    forced = compare({m: tidy(v, "dice") for m, v in hd.items()}, "dice", higher_is_better=False)
    np.testing.assert_allclose(forced.mean_ranks.to_numpy(), [5 / 4, 7.5 / 4, 11.5 / 4])


@needs_posthocs
def test_compare_excluded_cases_warn():
    tables = {m: tidy(v + [0.5]) for m, v in HAND.items()}  # cases 1..5
    tables["B"] = tables["B"][tables["B"]["case"] != 2]  # case 2 missing in B
    tables["C"] = tables["C"].assign(status=["ok", "ok", "flagged", "ok", "error"])  # case 5 error
    tables["A"].loc[tables["A"]["case"] == 3, "dice"] = np.nan  # case 3 NaN in A
    with pytest.warns(UserWarning, match="3 case"):
        result = compare(tables, "dice")
    assert sorted(result.excluded) == [2, 3, 5]
    assert list(result.scores.index) == [1, 4]
    assert result.mean_ranks.to_dict() == {"A": 1.0, "B": 2.0, "C": 3.0}


def test_compare_two_methods_wilcoxon():
    a = [0.9, 0.8, 0.7, 0.6, 0.55, 0.3]
    b = [0.8, 0.85, 0.5, 0.4, 0.5, 0.1]
    result = compare({"A": tidy(a), "B": tidy(b)}, "dice")
    ref = stats.wilcoxon(a, b)
    assert result.test == "wilcoxon" and result.nemenyi is None
    assert result.statistic == pytest.approx(ref.statistic)
    assert result.pvalue == pytest.approx(ref.pvalue)
    assert result.mean_ranks.to_dict() == {"A": pytest.approx(7 / 6), "B": pytest.approx(11 / 6)}


@pytest.mark.parametrize("n_methods", [2, 3])
def test_methods_that_tie_in_every_case_show_no_difference(n_methods, recwarn):
    """Same scores everywhere (inf distances included): statistic 0, p-value 1, on every scipy.

    scipy's Friedman formula divides by zero here (NaN), and its Wilcoxon test raises before 1.15.
    """
    if n_methods == 3:
        pytest.importorskip("scikit_posthocs")
    hd95 = [1.0, math.inf, 3.5, 2.0]
    result = compare({m: tidy(hd95, "hd95") for m in "ABC"[:n_methods]}, "hd95")
    assert (result.statistic, result.pvalue) == (0.0, 1.0)
    assert result.mean_ranks.tolist() == [(n_methods + 1) / 2] * n_methods
    if n_methods == 3:
        assert (result.nemenyi.to_numpy() == 1.0).all()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@needs_posthocs
def test_compare_classes():
    def two_class(values1, values2):
        return pd.DataFrame({"case": [1, 2, 3, 1, 2, 3], "class": [1, 1, 1, 2, 2, 2], "dice": values1 + values2})

    tables = {
        "A": two_class([0.9, 0.9, 0.9], [0.1, 0.1, 0.1]),
        "B": two_class([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
        "C": two_class([0.1, 0.1, 0.1], [0.9, 0.9, 0.9]),
    }
    with pytest.raises(ValueError, match="class_value"):
        compare(tables, "dice")
    assert compare(tables, "dice", class_value=1).mean_ranks.to_dict() == {"A": 1.0, "B": 2.0, "C": 3.0}
    assert compare(tables, "dice", class_value=2).mean_ranks.to_dict() == {"A": 3.0, "B": 2.0, "C": 1.0}


def test_compare_too_few():
    with pytest.raises(ValueError, match="2 methods"):
        compare({"A": tidy([0.1, 0.2])}, "dice")
    with pytest.raises(ValueError, match="2 cases"):
        compare({"A": tidy([0.1]), "B": tidy([0.2])}, "dice")


def test_compare_without_scikit_posthocs(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "scikit_posthocs", None)  # makes the import fail
    result = compare({m: tidy(v) for m, v in HAND.items()}, "dice")
    assert result.test == "friedman" and result.nemenyi is None and result.significance is None
    assert result.mean_ranks.to_dict() == {"A": 1.25, "B": 1.75, "C": 3.0}
    assert result.statistic == pytest.approx(6.5) and result.pvalue == pytest.approx(scipy_stats.chi2.sf(6.5, 2))
    assert 'pip install -e ".[stats]"' in result.posthoc_missing
    assert compare({"A": tidy(HAND["A"]), "B": tidy(HAND["B"])}, "dice").test == "wilcoxon"


def test_compare_leaves_out_empty_gt_cases_of_the_chosen_class():
    def table(values, empty):
        return pd.DataFrame(
            {
                "case": ["a", "b", "c", "d", "a"],
                "class": [1, 1, 1, 1, 2],
                "cc_dice": values + [0.0],
                "empty_gt": empty + [True],
            }
        )

    first = table([0.9, 0.8, 0.7, 1.0], [False, False, False, True])
    second = table([0.8, 0.7, 0.9, 0.0], [False, False, False, True])
    third = table([0.7, 0.6, 0.5, 0.0], [False, False, False, True])
    result = compare({"A": first, "B": second, "C": third}, "cc_dice", class_value=1)
    assert result.empty_gt == ["d"] and result.excluded == []
    assert list(result.scores.index) == ["a", "b", "c"]  # case "a" is empty only in class 2: kept
    assert result.mean_ranks.to_dict() == pytest.approx({"A": 4 / 3, "B": 5 / 3, "C": 3.0})


# ---------------------------------------------------------------- friedman_nemenyi
@needs_posthocs
def test_friedman_nemenyi_against_scipy_and_hand_values():
    from ccmetrics.analysis.stats import friedman_nemenyi

    rng = np.random.default_rng(7)
    scores = pd.DataFrame(
        rng.random((12, 4)) + np.array([0.3, 0.2, 0.1, 0.0]),
        columns=list("ABCD"),
        index=[f"patient{i}" for i in range(12)],
    )
    r = friedman_nemenyi(scores)
    ref = stats.friedmanchisquare(*scores.to_numpy().T)
    assert r.statistic == pytest.approx(ref.statistic) and r.pvalue == pytest.approx(ref.pvalue)
    ranks = stats.rankdata(-scores.to_numpy(), axis=1)
    np.testing.assert_allclose(r.ranks.to_numpy(), ranks)
    np.testing.assert_allclose(r.mean_ranks.to_numpy(), ranks.mean(axis=0))
    # Nemenyi p-value of a pair by hand: q = |R_a - R_b| / sqrt(k (k + 1) / (6 n)), studentized range
    n, k = scores.shape
    for a in "ABCD":
        for b in "ABCD":
            if a != b:
                q = abs(r.mean_ranks[a] - r.mean_ranks[b]) / math.sqrt(k * (k + 1) / (6 * n))
                expected = stats.studentized_range.sf(q * math.sqrt(2), k, np.inf)
                assert r.nemenyi.loc[a, b] == pytest.approx(expected, rel=1e-6, abs=1e-9)
    cd = stats.studentized_range.ppf(0.95, k, np.inf) / math.sqrt(2) * math.sqrt(k * (k + 1) / (6 * n))
    assert r.critical_difference == pytest.approx(cd)
    # significance table: one row per pair, better mean rank first, consistent with the p-values
    sig = r.significance
    assert len(sig) == k * (k - 1) // 2
    assert (sig["mean_rank_a"] <= sig["mean_rank_b"]).all()
    for _, row in sig.iterrows():
        assert row["pvalue"] == pytest.approx(r.nemenyi.loc[row["method_a"], row["method_b"]])
        assert row["significant"] == (row["pvalue"] < 0.05)
        assert row["better"] == (row["method_a"] if row["significant"] else "")
    # lower is better reverses the ranks
    low = friedman_nemenyi(scores, higher_is_better=False)
    np.testing.assert_allclose(low.mean_ranks.to_numpy(), k + 1 - r.mean_ranks.to_numpy())
    assert low.statistic == pytest.approx(r.statistic)


@needs_posthocs
def test_compare_uses_friedman_nemenyi():
    from ccmetrics.analysis.stats import friedman_nemenyi

    result = compare({m: tidy(v) for m, v in HAND.items()}, "dice")
    direct = friedman_nemenyi(result.scores)
    assert result.statistic == direct.statistic and result.pvalue == direct.pvalue
    pd.testing.assert_frame_equal(result.nemenyi, direct.nemenyi)
    pd.testing.assert_frame_equal(result.significance, direct.significance)


@needs_posthocs
def test_friedman_nemenyi_errors():
    from ccmetrics.analysis.stats import friedman_nemenyi

    good = pd.DataFrame(HAND)
    with pytest.raises(ValueError, match="at least 3 methods"):
        friedman_nemenyi(good[["A", "B"]])
    with pytest.raises(ValueError, match="at least 2 rows"):
        friedman_nemenyi(good.iloc[:1])
    with pytest.raises(ValueError, match=r"dropna"):
        friedman_nemenyi(good.assign(A=[0.1, np.nan, 0.3, 0.4]))
    with pytest.raises(TypeError, match="DataFrame"):
        friedman_nemenyi(good.to_numpy())


def test_compare_counts_an_infinite_distance_as_the_worst_distance():
    a = pd.DataFrame({"case": ["p", "q", "r"], "hd95": [1.0, 2.0, 3.0], "worst_distance": [50.0, 60.0, 70.0]})
    b = pd.DataFrame({"case": ["p", "q", "r"], "hd95": [2.0, np.inf, 1.0], "worst_distance": [50.0, 60.0, 70.0]})
    result = compare({"A": a, "B": b}, "hd95")
    assert result.scores["B"].tolist() == [2.0, 60.0, 1.0]  # the empty prediction counts as q's worst distance
    assert result.summary().loc["B", "mean"] == pytest.approx(21.0)
