"""ccmetrics.analysis.quantification (summary.json's ``quantification``) against formulas computed by hand here, a
cluster bootstrap written as a loop, ccmetrics.analysis.stats' intervals and pingouin's ICC(A,1)."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ccmetrics import evaluate
from ccmetrics.analysis import quantification_summary, quantification_table
from ccmetrics.analysis.quantification import LESION_MEASURES, PATIENT_MEASURES, QUANTIFICATION_COLUMNS
from ccmetrics.analysis.stats import bootstrap_ci, bootstrap_ci_pooled
from ccmetrics.results import DatasetResult

R = 300  # resamples: enough to tell intervals apart, few enough for a loop written by hand


# ------------------------------------------------------------------ references, written from the definitions
def ref_icc(x, y):
    """McGraw & Wong ICC(A,1) from the two-way ANOVA of the n x 2 table, term by term."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 2:
        return math.nan
    grand = (x.sum() + y.sum()) / (2 * n)
    rows = (x + y) / 2
    ss_total = ((x - grand) ** 2).sum() + ((y - grand) ** 2).sum()
    ss_rows = 2 * ((rows - grand) ** 2).sum()
    ss_cols = n * ((x.mean() - grand) ** 2 + (y.mean() - grand) ** 2)
    ss_error = ss_total - ss_rows - ss_cols
    msr, msc, mse = ss_rows / (n - 1), ss_cols, ss_error / (n - 1)
    return (msr - mse) / (msr + mse + 2 * (msc - mse) / n)


def ref_ccc(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2:
        return math.nan
    cov = np.mean((x - x.mean()) * (y - y.mean()))
    return 2 * cov / (x.var() + y.var() + (x.mean() - y.mean()) ** 2)


def ref_row(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    d = y - x
    sd = d.std(ddof=1) if len(d) > 1 else math.nan
    rel = d[x != 0] / x[x != 0]
    return {
        "n": len(x),
        "bias": d.mean() if len(d) else math.nan,
        "loa_low": d.mean() - 1.96 * sd,
        "loa_high": d.mean() + 1.96 * sd,
        "icc": ref_icc(x, y),
        "ccc": ref_ccc(x, y),
        "relative_error_n": len(rel),
        "relative_error_mean": rel.mean() if len(rel) else math.nan,
        "abs_relative_error_mean": np.abs(rel).mean() if len(rel) else math.nan,
    }


def loop_bootstrap(x, y, cases, statistic, n_resamples=R, seed=0, ci_level=0.95):
    """A cluster bootstrap as a loop: draw the sorted cases, pool their pairs, take the statistic; NaN ones out."""
    x, y, cases = np.asarray(x, float), np.asarray(y, float), np.asarray(cases)
    units = np.unique(cases)
    members = [np.flatnonzero(cases == u) for u in units]
    drawn = np.random.default_rng(seed).integers(0, len(units), (n_resamples, len(units)))
    theta = []
    for row in drawn:
        idx = np.concatenate([members[g] for g in row])
        theta.append(statistic(x[idx], y[idx]))
    theta = np.array(theta)
    theta = theta[~np.isnan(theta)]
    alpha = (1 - ci_level) / 2
    return tuple(np.quantile(theta, [alpha, 1 - alpha]))  # numpy's default: Hyndman-Fan 7


def bias(x, y):
    return float(np.mean(y - x))


def assert_row(row, expected, rel=1e-10):
    for key, value in expected.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(row[key]), (key, row[key])
        else:
            assert row[key] == pytest.approx(value, rel=rel, abs=1e-12), (key, row[key], value)


def row_of(table, c, level, measure):
    hit = table[(table["class"] == c) & (table["level"] == level) & (table["measure"] == measure)]
    assert len(hit) == 1
    return hit.iloc[0]


# ------------------------------------------------------------------ a data set's tables, made here
def make_tables(n_cases=14, classes=(1, 2), seed=3, detected=True):
    """per_case and per_component tables as a run writes them: some empty masks, an error row, a flagged row."""
    rng = np.random.default_rng(seed)
    case_rows, lesion_rows = [], []
    for c in classes:
        for i in range(n_cases):
            case = f"case_{i:02d}"
            status = "error" if i == 3 else ("flagged" if i == 5 else "ok")
            k_gt = 0 if i in (0, 7) else int(rng.integers(1, 5))
            k_pred = 0 if i in (0, 9) else int(rng.integers(1, 5))
            gt_tmtv = rng.gamma(2, 20) * k_gt
            row = {"case": case, "class": c, "status": status}
            row |= {
                "gt_tmtv_ml": gt_tmtv,
                "pred_tmtv_ml": gt_tmtv * rng.uniform(0.6, 1.4) if k_pred else 0.0,
                "gt_lesion_count": k_gt,
                "pred_lesion_count": k_pred,
            }
            row["gt_tlg"] = row["gt_tmtv_ml"] * rng.uniform(2, 6)
            row["pred_tlg"] = row["pred_tmtv_ml"] * rng.uniform(2, 6)
            for m, scale in (("suv_max", 12), ("suv_mean", 5), ("dmax_mm", 200), ("extent_mm", 300)):
                row[f"gt_{m}"] = rng.uniform(0.2, 1) * scale if k_gt else math.nan
                row[f"pred_{m}"] = rng.uniform(0.2, 1) * scale if k_pred else math.nan
            if status == "error":  # an error row: NaN everywhere, and never counted
                row |= {k: math.nan for k in row if k.startswith(("gt_", "pred_"))}
            case_rows.append(row)
            for j in range(k_gt if status != "error" else 0):
                found = bool(k_pred) and rng.random() < 0.7
                mtv = rng.gamma(2, 5)
                lesion = {"case": case, "class": c, "component": j + 1, "suv_max": rng.uniform(2, 20)}
                lesion |= {"suv_mean": lesion["suv_max"] * 0.4, "suv_peak": lesion["suv_max"] * 0.8, "mtv_ml": mtv}
                lesion["tlg"] = mtv * lesion["suv_mean"]
                pred_mtv = mtv * rng.uniform(0.3, 1.5) if found else 0.0
                lesion |= {
                    "pred_mtv_ml": pred_mtv,
                    "pred_suv_max": lesion["suv_max"] * rng.uniform(0.8, 1.1) if found else math.nan,
                    "pred_suv_mean": lesion["suv_mean"] * rng.uniform(0.8, 1.2) if found else math.nan,
                }
                lesion["pred_tlg"] = pred_mtv * (lesion["pred_suv_mean"] if found else 0.0)
                if detected:  # a lesion can be detected with its predicted voxels in another lesion's region
                    lesion["detected"] = found and rng.random() < 0.9
                lesion_rows.append(lesion)
        # the error case may still have rows in a component table made by hand: they must not count
        lesion_rows.append(
            {"case": "case_03", "class": c, "component": 1, "suv_max": 99.0, "suv_mean": 40.0, "mtv_ml": 9.0}
            | {"tlg": 360.0, "pred_mtv_ml": 1.0, "pred_tlg": 1.0, "pred_suv_max": 1.0, "pred_suv_mean": 1.0}
            | ({"detected": True} if detected else {})
        )
    return pd.DataFrame(case_rows), pd.DataFrame(lesion_rows)


@pytest.fixture(scope="module")
def tables():
    return make_tables()


@pytest.fixture(scope="module")
def table(tables):
    return quantification_table(*tables, n_resamples=R, seed=7)


# ------------------------------------------------------------------ layout
def test_rows_are_ordered_by_class_level_and_measure(table):
    assert list(table.columns) == list(QUANTIFICATION_COLUMNS)
    expected = [
        (c, level, m)
        for c in (1, 2)
        for level, measures in (("patient", PATIENT_MEASURES), ("lesion", LESION_MEASURES))
        for m in measures
    ]
    assert list(zip(table["class"], table["level"], table["measure"])) == expected
    assert PATIENT_MEASURES == ("tmtv_ml", "tlg", "suv_max", "suv_mean", "dmax_mm", "extent_mm", "lesion_count")
    assert LESION_MEASURES == ("suv_max", "suv_mean", "mtv_ml", "tlg")


def test_the_table_is_json_ready_through_the_results_layer(table):
    from ccmetrics.results.dataset import _records

    records = _records(table)
    text = json.dumps(records, allow_nan=False)
    back = json.loads(text)
    assert len(back) == len(table) and back[0]["class"] == 1 and back[0]["level"] == "patient"
    assert isinstance(back[0]["n"], int) and isinstance(back[0]["n_cases"], int)
    one = quantification_table(*(t[t["case"] == "case_01"] for t in make_tables()), n_resamples=10)
    assert _records(one)[0]["loa_low"] is None  # NaN (one pair: no limits) is null


# ------------------------------------------------------------------ patient level
@pytest.mark.parametrize("c", [1, 2])
@pytest.mark.parametrize("measure", PATIENT_MEASURES)
def test_patient_level_equals_the_formulas(tables, table, c, measure):
    per_case, _ = tables
    rows = per_case[(per_case["class"] == c) & (per_case["status"] != "error")]
    x, y = rows[f"gt_{measure}"].to_numpy(float), rows[f"pred_{measure}"].to_numpy(float)
    both = ~np.isnan(x) & ~np.isnan(y)
    got = row_of(table, c, "patient", measure)
    if measure in ("tmtv_ml", "tlg", "lesion_count"):
        assert both.all() and got["pairs"] == "cases" and got["n"] == 13  # 14 cases, the error row out
    else:  # cases with an empty mask (0, 7, 9) left out
        assert got["pairs"] == "cases, both masks non-empty" and got["n"] == 10
    assert got["n_cases"] == got["n"]
    assert_row(got, ref_row(x[both], y[both]))


def test_relative_error_leaves_out_cases_whose_reference_is_0(tables, table):
    per_case, _ = tables
    rows = per_case[(per_case["class"] == 1) & (per_case["status"] != "error")]
    got = row_of(table, 1, "patient", "tmtv_ml")
    assert (rows["gt_tmtv_ml"] == 0).sum() == 2 and got["relative_error_n"] == 11
    x, y = rows["gt_tmtv_ml"].to_numpy(), rows["pred_tmtv_ml"].to_numpy()
    assert got["relative_error_mean"] == pytest.approx(np.mean([(b - a) / a for a, b in zip(x, y) if a != 0]))


@pytest.mark.parametrize("measure", ["tmtv_ml", "lesion_count", "suv_max"])
def test_patient_icc_equals_pingouin(tables, table, measure):
    pg = pytest.importorskip("pingouin")
    per_case, _ = tables
    rows = per_case[(per_case["class"] == 2) & (per_case["status"] != "error")].dropna(
        subset=[f"gt_{measure}", f"pred_{measure}"]
    )
    n = len(rows)
    data = pd.DataFrame(
        {
            "case": list(range(n)) * 2,
            "rater": ["gt"] * n + ["pred"] * n,
            "value": [*rows[f"gt_{measure}"], *rows[f"pred_{measure}"]],
        }
    )
    icc = pg.intraclass_corr(data=data, targets="case", raters="rater", ratings="value").set_index("Type")
    expected = icc.loc["ICC(A,1)" if "ICC(A,1)" in icc.index else "ICC2", "ICC"]
    assert row_of(table, 2, "patient", measure)["icc"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("measure", ["tmtv_ml", "suv_mean", "lesion_count"])
def test_patient_intervals_equal_a_bootstrap_loop(tables, table, measure):
    per_case, _ = tables
    rows = per_case[(per_case["class"] == 1) & (per_case["status"] != "error")].dropna(
        subset=[f"gt_{measure}", f"pred_{measure}"]
    )
    x, y, cases = rows[f"gt_{measure}"].to_numpy(), rows[f"pred_{measure}"].to_numpy(), rows["case"].to_numpy()
    got = row_of(table, 1, "patient", measure)
    for name, statistic in (("bias", bias), ("icc", ref_icc), ("ccc", ref_ccc)):
        low, high = loop_bootstrap(x, y, cases, statistic, seed=7)
        assert got[f"{name}_ci_low"] == pytest.approx(low, rel=1e-9)
        assert got[f"{name}_ci_high"] == pytest.approx(high, rel=1e-9)
        assert got[f"{name}_ci_low"] <= got[name] <= got[f"{name}_ci_high"]
    # the bias's interval is stats.bootstrap_ci of the differences, cases in sorted order: the summary's draws
    order = np.argsort(cases)
    assert (got["bias_ci_low"], got["bias_ci_high"]) == bootstrap_ci((y - x)[order], n_resamples=R, seed=7)


def test_the_interval_parameters_mean_what_they_mean_in_the_summary(tables):
    wide = quantification_table(*tables, n_resamples=R, seed=7)
    narrow = quantification_table(*tables, n_resamples=R, seed=7, ci_level=0.5)
    other = quantification_table(*tables, n_resamples=R, seed=8)
    for name in ("bias", "icc", "ccc"):
        w = wide[f"{name}_ci_high"] - wide[f"{name}_ci_low"]
        n = narrow[f"{name}_ci_high"] - narrow[f"{name}_ci_low"]
        ok = w.notna()
        assert (n[ok] <= w[ok]).all() and (n[ok] < w[ok]).any()
        assert not np.allclose(wide[f"{name}_ci_low"][ok], other[f"{name}_ci_low"][ok])
    again = quantification_table(*tables, n_resamples=R, seed=7)
    pd.testing.assert_frame_equal(wide, again)
    for column in ("bias", "loa_low", "icc", "ccc", "relative_error_mean"):  # estimates do not depend on them
        pd.testing.assert_series_equal(wide[column], narrow[column])


# ------------------------------------------------------------------ lesion level
def found_lesions(per_component, c, rule):
    evaluated = [f"case_{i:02d}" for i in range(14) if i != 3]
    here = per_component[(per_component["class"] == c) & per_component["case"].isin(evaluated)]
    return here[here["detected"].eq(True)] if rule == "detected" else here[here["pred_mtv_ml"] > 0]


@pytest.mark.parametrize("c", [1, 2])
@pytest.mark.parametrize("measure", LESION_MEASURES)
def test_lesion_level_over_detected_lesions_equals_the_formulas(tables, table, c, measure):
    _, per_component = tables
    found = found_lesions(per_component, c, "detected")
    got = row_of(table, c, "lesion", measure)
    x, y = found[measure].to_numpy(float), found[f"pred_{measure}"].to_numpy(float)
    keep = ~np.isnan(x) & ~np.isnan(y)
    assert got["pairs"] == "detected lesions" and got["n"] == keep.sum() >= 8
    assert got["n_cases"] == found["case"][keep].nunique()
    assert_row(got, ref_row(x[keep], y[keep]))


def test_without_the_detected_column_lesions_with_prediction_in_their_region_count():
    per_case, per_component = make_tables(detected=False)
    assert "detected" not in per_component
    table = quantification_table(per_case, per_component, n_resamples=R, seed=1)
    for measure in LESION_MEASURES:
        found = found_lesions(per_component, 1, "predicted")
        got = row_of(table, 1, "lesion", measure)
        assert got["pairs"] == "lesions with prediction in region" and got["n"] == len(found)
        assert_row(got, ref_row(found[measure], found[f"pred_{measure}"]))


@pytest.mark.parametrize("measure", ["suv_max", "mtv_ml"])
def test_lesion_intervals_resample_cases_and_equal_a_bootstrap_loop(tables, table, measure):
    _, per_component = tables
    found = found_lesions(per_component, 2, "detected")
    x, y, cases = found[measure].to_numpy(), found[f"pred_{measure}"].to_numpy(), found["case"].to_numpy()
    # several lesions in a case: a cluster bootstrap differs from one of lesions
    assert len(np.unique(cases)) < len(cases)
    got = row_of(table, 2, "lesion", measure)
    for name, statistic in (("bias", bias), ("icc", ref_icc), ("ccc", ref_ccc)):
        low, high = loop_bootstrap(x, y, cases, statistic, seed=7)
        assert got[f"{name}_ci_low"] == pytest.approx(low, rel=1e-9)
        assert got[f"{name}_ci_high"] == pytest.approx(high, rel=1e-9)
    # the bias's interval is stats.bootstrap_ci_pooled of the differences grouped by case
    assert (got["bias_ci_low"], got["bias_ci_high"]) == bootstrap_ci_pooled(y - x, cases, n_resamples=R, seed=7)
    lesion_level = bootstrap_ci(y - x, n_resamples=R, seed=7)  # resampling lesions is another interval
    assert (got["bias_ci_low"], got["bias_ci_high"]) != lesion_level


def test_lesion_icc_equals_pingouin(tables, table):
    pg = pytest.importorskip("pingouin")
    _, per_component = tables
    found = found_lesions(per_component, 1, "detected")
    n = len(found)
    data = pd.DataFrame(
        {"lesion": list(range(n)) * 2, "rater": ["gt"] * n + ["pred"] * n, "value": [*found.tlg, *found.pred_tlg]}
    )
    icc = pg.intraclass_corr(data=data, targets="lesion", raters="rater", ratings="value").set_index("Type")
    expected = icc.loc["ICC(A,1)" if "ICC(A,1)" in icc.index else "ICC2", "ICC"]
    assert row_of(table, 1, "lesion", "tlg")["icc"] == pytest.approx(expected, rel=1e-9)


# ------------------------------------------------------------------ edge cases: NaN, never an error or a warning
def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return quantification_table(*args, **kwargs)


def test_one_case():
    per_case = pd.DataFrame(
        {"case": ["a"], "class": [1], "status": ["ok"], "gt_tmtv_ml": [10.0], "pred_tmtv_ml": [12.0]}
        | {"gt_suv_max": [6.0], "pred_suv_max": [5.0]}
    )
    per_component = pd.DataFrame(
        {"case": ["a", "a", "a"], "class": 1, "detected": [True, True, False], "suv_max": [6.0, 4.0, 3.0]}
        | {"pred_suv_max": [5.0, 4.5, np.nan], "mtv_ml": [2.0, 1.0, 0.5], "pred_mtv_ml": [2.5, 0.5, 0.0]}
    )
    table = quiet(per_case, per_component, n_resamples=50)
    patient = row_of(table, 1, "patient", "tmtv_ml")
    assert patient["n"] == 1 and patient["bias"] == 2.0 and patient["relative_error_mean"] == pytest.approx(0.2)
    nan_columns = [c for c in QUANTIFICATION_COLUMNS if c.endswith(("_ci_low", "_ci_high")) or c.startswith("loa")]
    assert all(math.isnan(patient[c]) for c in [*nan_columns, "icc", "ccc"])
    # two lesions of one case: ICC and CCC are defined, but one case gives no interval
    lesion = row_of(table, 1, "lesion", "suv_max")
    assert lesion["n"] == 2 and lesion["n_cases"] == 1
    assert_row(lesion, ref_row([6.0, 4.0], [5.0, 4.5]))
    assert all(math.isnan(lesion[c]) for c in nan_columns if not c.startswith("loa"))
    # measures the component table lacks: n 0
    assert row_of(table, 1, "lesion", "tlg")["n"] == 0
    # a component table that cannot tell the found lesions (neither detected nor pred_mtv_ml): none counted
    untold = quiet(per_case, per_component.drop(columns=["detected", "pred_mtv_ml"]), n_resamples=50)
    assert row_of(untold, 1, "lesion", "suv_max")["n"] == 0


def test_all_masks_empty():
    cases = [f"c{i}" for i in range(5)]
    per_case = pd.DataFrame({"case": cases, "class": 1, "status": "ok"})
    for m in PATIENT_MEASURES:
        empty_value = 0.0 if m in ("tmtv_ml", "tlg", "lesion_count") else math.nan
        per_case[f"gt_{m}"] = per_case[f"pred_{m}"] = empty_value
    per_component = pd.DataFrame(columns=["case", "class", "component", "detected", "suv_max", "pred_suv_max"])
    table = quiet(per_case, per_component, n_resamples=50)
    assert len(table) == len(PATIENT_MEASURES) + len(LESION_MEASURES)
    tmtv = row_of(table, 1, "patient", "tmtv_ml")
    assert tmtv["n"] == 5 and tmtv["bias"] == 0 and tmtv["loa_low"] == 0 and tmtv["loa_high"] == 0
    assert (tmtv["bias_ci_low"], tmtv["bias_ci_high"]) == (0.0, 0.0)
    assert math.isnan(tmtv["icc"]) and math.isnan(tmtv["ccc"]) and math.isnan(tmtv["icc_ci_low"])
    assert tmtv["relative_error_n"] == 0 and math.isnan(tmtv["relative_error_mean"])
    suv = row_of(table, 1, "patient", "suv_max")
    assert suv["n"] == 0 and suv["n_cases"] == 0 and math.isnan(suv["bias"]) and math.isnan(suv["bias_ci_low"])
    assert (table[table["level"] == "lesion"]["n"] == 0).all()


def test_no_pet_columns_gives_an_empty_table_with_the_columns():
    per_case = pd.DataFrame({"case": ["a"], "class": [1], "status": ["ok"], "dice": [0.5]})
    table = quiet(per_case, pd.DataFrame())
    assert table.empty and list(table.columns) == list(QUANTIFICATION_COLUMNS)
    assert quiet(per_case.iloc[:0]).empty


def test_constant_values_that_floats_cannot_hold_have_no_icc_or_ccc():
    # 0.1 summed and divided is not 0.1: rounding must not read as variance (an ICC of -0.39 or a CCC of 1)
    for n in (3, 7, 8, 11):
        per_case = pd.DataFrame({"case": [f"c{i}" for i in range(n)], "class": 1, "status": "ok"})
        per_case["gt_tmtv_ml"] = per_case["pred_tmtv_ml"] = 0.1
        row = quiet(per_case, n_resamples=50).iloc[0]
        assert math.isnan(row["icc"]) and math.isnan(row["ccc"]) and math.isnan(row["icc_ci_high"]), n
        assert (row["bias"], row["bias_ci_low"], row["bias_ci_high"]) == (0.0, 0.0, 0.0)
    # a true variance, however small against the values, is kept
    per_case["gt_tmtv_ml"] = 1000.0 + 1e-6 * np.arange(n)
    per_case["pred_tmtv_ml"] = per_case["gt_tmtv_ml"]
    row = quiet(per_case, n_resamples=50).iloc[0]
    assert row["icc"] == pytest.approx(1.0) and row["ccc"] == pytest.approx(1.0)


def test_nan_and_infinite_values_leave_their_pair_out():
    per_case = pd.DataFrame(
        {
            "case": ["a", "b", "c", "d", "e"],
            "class": 1,
            "status": "ok",
            "gt_tlg": [1.0, np.nan, 3.0, 4.0, np.inf],
            "pred_tlg": [1.5, 2.0, np.nan, 3.0, 1.0],
        }
    )
    row = quiet(per_case, n_resamples=50).iloc[0]
    assert row["n"] == 2 and row["n_cases"] == 2
    assert_row(row, ref_row([1.0, 4.0], [1.5, 3.0]))


def test_a_resample_without_variance_is_left_out_of_the_quantiles():
    # three cases, each pair equal within itself: a resample drawing one case three times has no ICC
    per_case = pd.DataFrame({"case": ["a", "b", "c"], "class": 1, "status": "ok"})
    per_case["gt_tmtv_ml"] = [1.0, 2.0, 4.0]
    per_case["pred_tmtv_ml"] = [1.5, 2.0, 4.5]
    row = quiet(per_case, n_resamples=R, seed=2).iloc[0]
    x, y = per_case["gt_tmtv_ml"].to_numpy(), per_case["pred_tmtv_ml"].to_numpy()
    low, high = loop_bootstrap(x, y, per_case["case"].to_numpy(), ref_icc, seed=2)
    assert (row["icc_ci_low"], row["icc_ci_high"]) == pytest.approx((low, high), rel=1e-9)
    assert not math.isnan(row["icc_ci_low"])


def test_classes_are_apart_and_a_class_with_only_errors_has_rows_with_n_0(tables):
    per_case, per_component = tables
    failed = per_case[per_case["class"] == 1].assign(**{"class": 3, "status": "error"})
    table = quiet(pd.concat([per_case, failed]), per_component, n_resamples=R, seed=7)
    assert sorted(table["class"].unique()) == [1, 2, 3]
    three = table[table["class"] == 3]
    assert len(three) == 11 and (three["n"] == 0).all() and three["bias"].isna().all()
    alone = quiet(per_case[per_case["class"] == 2], per_component[per_component["class"] == 2], n_resamples=R, seed=7)
    both = table[table["class"] == 2].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, both)  # another class changes nothing


def test_parameters_are_checked():
    per_case = pd.DataFrame({"case": ["a"], "class": [1], "status": ["ok"], "gt_tlg": [1.0], "pred_tlg": [1.0]})
    with pytest.raises(ValueError, match="ci_level"):
        quantification_table(per_case, ci_level=95)
    with pytest.raises(ValueError, match="n_resamples"):
        quantification_table(per_case, n_resamples=0)
    with pytest.raises(ValueError, match="status"):
        quantification_table(per_case.drop(columns="status"))


# ------------------------------------------------------------------ the run's own tables
def test_on_tables_of_evaluate_and_through_a_dataset_result():
    """The column names the pet group writes are the ones read; quantification_summary reads a DatasetResult."""
    rng = np.random.default_rng(11)
    case_rows, lesion_frames = [], []
    for i in range(6):
        gt = np.zeros((12, 12, 8), bool)
        gt[1:4, 1:4, 1:3] = True
        gt[7 : 9 + i % 3, 6:10, 4:7] = True
        pred = np.zeros_like(gt)
        pred[1:4, 2:5, 1:3] = True
        if i % 2:
            pred[7:10, 6:9, 4:6] = True
        scan = rng.gamma(2.0, 2.0, gt.shape)
        r = evaluate(gt=gt, pred=pred, metrics=["pet", "detection"], image=scan, spacing=(2.0, 2.0, 3.0))
        case_rows.append({"case": f"p{i}", "class": 1, "status": "ok", **r.case_scores})
        lesion_frames.append(r.per_component.reset_index().assign(case=f"p{i}", **{"class": 1}))
    per_case, per_component = pd.DataFrame(case_rows), pd.concat(lesion_frames, ignore_index=True)
    result = DatasetResult(per_component, per_case)
    table = quantification_summary(result, n_resamples=R, seed=4)
    pd.testing.assert_frame_equal(table, quantification_table(per_case, per_component, n_resamples=R, seed=4))
    assert list(table["measure"]) == [*PATIENT_MEASURES, *LESION_MEASURES]
    tmtv = row_of(table, 1, "patient", "tmtv_ml")
    assert_row(tmtv, ref_row(per_case["gt_tmtv_ml"], per_case["pred_tmtv_ml"]))
    found = per_component[per_component["detected"]]
    assert row_of(table, 1, "lesion", "suv_max")["n"] == len(found) == 9
    assert_row(row_of(table, 1, "lesion", "tlg"), ref_row(found["tlg"], found["pred_tlg"]))
    with pytest.warns(DeprecationWarning):
        former = quantification_summary(result, confidence=0.9, n_resamples=R, seed=4)
    pd.testing.assert_frame_equal(former, quantification_summary(result, ci_level=0.9, n_resamples=R, seed=4))
