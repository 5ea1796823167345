"""Detection rules, split and merged lesions, and the per-prediction table (metric-definitions §5b).

Hand-built cases with known answers for every rule, and a brute force on scipy's labelling (one
full-size mask per lesion and per union) that every rule must match on random cases.
"""

import math

import numpy as np
import pytest
from scipy import ndimage

from ccmetrics import detection, evaluate
from ccmetrics.engine.components import find_sites
from ccmetrics.metrics.detection_rules import DetectionRule, judge

RULES = [
    "overlap",
    "iou:0.1",
    "iou:0.5",
    "dice:0.1",
    "dice:0.6",
    "coverage:0.3",
    "coverage:0.5",
    "coverage:1",
    "centroid",
]


def line(n, *spans):
    a = np.zeros((1, n), bool)
    for lo, hi in spans:
        a[0, lo:hi] = True
    return a


# ---------------------------------------------------------------- hand-built answers


def test_rule_spellings_and_errors():
    assert DetectionRule.parse("overlap") == DetectionRule()
    assert DetectionRule.parse(" Dice : 0.1 ") == DetectionRule("dice", 0.1)
    assert str(DetectionRule.parse("iou:0.50")) == "iou:0.5"
    for bad, message in [
        ("iou", "needs a threshold in (0, 1]"),
        ("iou:0", "needs a threshold in (0, 1]"),
        ("coverage:1.5", "needs a threshold in (0, 1]"),
        ("dice:nan", "needs a threshold in (0, 1]"),
        ("dice:x", "is not a number"),
        ("centroid:0.5", "takes no threshold"),
        ("overlaps", "unknown detection rule"),
    ]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
            DetectionRule.parse(bad)
    with pytest.raises(TypeError, match="'iou:0.1'"):
        DetectionRule.parse(0.1)


def test_lesion_covered_30_percent():
    # a lesion of 10 voxels, 3 predicted by a 3-voxel component: coverage 0.3, IoU 0.3, Dice 6/13
    gt, pred = line(20, (0, 10)), line(20, (0, 3))
    expected = {
        "overlap": True,
        "coverage:0.3": True,
        "coverage:0.5": False,
        "iou:0.3": True,
        "iou:0.31": False,
        "dice:0.46": True,  # 6/13 = 0.4615
        "dice:0.47": False,
        "centroid": True,  # centroid 1.0 lies in the lesion
    }
    for rule, want in expected.items():
        assert judge(find_sites(pred), find_sites(gt), rule).detected.tolist() == [want], rule
        d = detection(pred=pred, gt=gt, rule=rule)
        assert (d.tp, d.fn, d.fp) == ((1, 0, 0) if want else (0, 1, 1)), rule
        assert d.rule == str(DetectionRule.parse(rule))


def test_centroid_outside_the_lesion():
    # an L-shaped prediction whose centroid falls outside the lesion it overlaps
    gt = np.zeros((9, 9), bool)
    gt[0:2, 0:2] = True
    pred = np.zeros_like(gt)
    pred[0, 0:9] = True
    pred[0:9, 0] = True  # centroid (1.6, 1.6) -> rounded (2, 2): outside
    assert judge(find_sites(pred), find_sites(gt), "centroid").detected.tolist() == [False]
    assert judge(find_sites(pred), find_sites(gt), "overlap").detected.tolist() == [True]


def test_one_prediction_over_two_lesions_is_one_merged_component():
    gt, pred = line(20, (0, 4), (6, 10)), line(20, (0, 10))
    d = judge(find_sites(pred), find_sites(gt))
    assert d.detected.tolist() == [True, True] and d.n_gt.tolist() == [2] and d.merged.tolist() == [True]
    assert d.pred_tp.tolist() == [True] and d.lesions_of(1) == [1, 2]
    r = detection(pred=pred, gt=gt)
    assert (r.tp, r.fn, r.fp, r.n_pred_components, r.precision, r.n_merged, r.n_split) == (2, 0, 0, 1, 1.0, 1, 0)
    # under iou:0.5 each lesion's union is the 10-voxel component: IoU 0.4, neither detected, the component FP
    r = detection(pred=pred, gt=gt, rule="iou:0.5")
    assert (r.tp, r.fn, r.fp, r.precision, r.n_merged) == (0, 2, 1, 0.0, 1)


def test_split_lesion_counts_once_judged_by_its_union():
    # a 10-voxel lesion under two components of 3 voxels each: union coverage 0.6, each alone 0.3
    gt, pred = line(20, (0, 10)), line(20, (0, 3), (5, 8))
    d = judge(find_sites(pred), find_sites(gt), "coverage:0.5")
    assert d.detected.tolist() == [True] and d.n_pred.tolist() == [2] and d.split.tolist() == [True]
    assert d.pred_tp.tolist() == [True, True]
    r = detection(pred=pred, gt=gt, rule="coverage:0.5")
    assert (r.tp, r.fn, r.fp, r.sensitivity, r.precision, r.n_split, r.n_merged) == (1, 0, 0, 1.0, 1.0, 1, 0)


def test_false_positive_and_best_iou():
    gt, pred = line(30, (0, 4)), line(30, (0, 2), (10, 12))
    d = judge(find_sites(pred), find_sites(gt))
    assert d.pred_tp.tolist() == [True, False]
    assert d.best_iou.tolist() == [0.5, 0.0]


# ---------------------------------------------------------------- against a brute force


def brute_force(pred, gt, rule):
    """Every lesion's verdict from full-size masks, one lesion and one union at a time."""
    structure = np.ones((3,) * gt.ndim)
    gl, k = ndimage.label(gt, structure)
    pl, m = ndimage.label(pred, structure)
    rule = DetectionRule.parse(rule)
    detected, n_pred = [], []
    for lesion in range(1, k + 1):
        L = gl == lesion
        comps = [c for c in np.unique(pl[L]) if c]
        n_pred.append(len(comps))
        U = np.isin(pl, comps) & (pl > 0)
        inter, size_l, size_u = int((U & L).sum()), int(L.sum()), int(U.sum())
        if rule.kind == "overlap":
            ok = inter > 0
        elif rule.kind == "iou":
            ok = inter > 0 and inter / (size_l + size_u - inter) >= rule.threshold
        elif rule.kind == "dice":
            ok = inter > 0 and 2 * inter / (size_l + size_u) >= rule.threshold
        elif rule.kind == "coverage":
            ok = inter > 0 and inter / size_l >= rule.threshold
        else:  # centroid: the best-IoU component (lowest number on ties), its rounded centroid inside L
            ok = False
            if comps:
                ious = [((pl == c) & L).sum() / ((pl == c) | L).sum() for c in comps]
                best = comps[int(np.argmax(ious))]
                centre = tuple(int(math.floor(v + 0.5)) for v in ndimage.center_of_mass(pl == best))
                ok = bool(L[centre])
        detected.append(ok)
    tp = []
    for c in range(1, m + 1):
        hit = np.unique(gl[pl == c])
        tp.append(any(detected[g - 1] for g in hit if g))
    return np.array(detected, bool), np.array(n_pred), np.array(tp, bool)


@pytest.mark.parametrize("seed", range(12))
def test_every_rule_matches_the_brute_force(seed):
    rng = np.random.default_rng(seed)
    shape = (24, 26) if seed % 2 else (12, 13, 14)
    smooth = ndimage.gaussian_filter(rng.random(shape), 1.2)
    gt = smooth > np.quantile(smooth, 0.85)
    shifted = np.roll(smooth, rng.integers(-2, 3, len(shape)), axis=tuple(range(len(shape))))
    pred = shifted > np.quantile(shifted, 0.8 + 0.02 * (seed % 5))
    for rule in RULES:
        want_detected, want_n_pred, want_tp = brute_force(pred, gt, rule)
        d = judge(find_sites(pred), find_sites(gt), rule)
        np.testing.assert_array_equal(d.detected, want_detected, err_msg=rule)
        np.testing.assert_array_equal(d.n_pred, want_n_pred, err_msg=rule)
        np.testing.assert_array_equal(d.pred_tp, want_tp, err_msg=rule)
        r = evaluate(pred=pred, gt=gt, metrics=["dice", "detection"], detection_rule=rule)
        np.testing.assert_array_equal(r.per_component["detected"], want_detected, err_msg=rule)
        np.testing.assert_array_equal(r.per_component["n_pred"], want_n_pred)
        assert r.case_scores["sensitivity"] == (
            want_detected.mean() if len(want_detected) else r.case_scores["sensitivity"]
        )
        assert r.case_scores["precision"] == (want_tp.mean() if len(want_tp) else r.case_scores["precision"])
        assert r.case_scores["split_lesions"] == int((want_n_pred >= 2).sum())
        np.testing.assert_array_equal(r.per_prediction["outcome"] == "tp", want_tp)


# ---------------------------------------------------------------- evaluate's tables


def test_evaluate_per_prediction_table():
    gt = np.zeros((12, 12), bool)
    gt[1:4, 1:4] = True  # lesion 1, 9 px
    gt[1:4, 7:10] = True  # lesion 2, 9 px
    pred = np.zeros_like(gt)
    pred[2, 2:9] = True  # one component over both lesions (merged), 7 px
    pred[9:11, 9:11] = True  # a false positive, 4 px, nearest lesion 2
    r = evaluate(pred=pred, gt=gt, metrics=["dice", "detection"], spacing=(0.5, 2.0))
    pc = r.per_component
    assert pc["detected"].tolist() == [True, True] and pc["n_pred"].tolist() == [1, 1]
    assert pc["split"].tolist() == [False, False]
    pp = r.per_prediction
    assert pp.index.tolist() == [1, 2]
    assert pp["volume"].tolist() == [7, 4] and pp["volume_mm3"].tolist() == [7.0, 4.0]
    assert pp["gt_lesions"].tolist() == ["1;2", ""] and pp["n_gt"].tolist() == [2, 0]
    assert pp["merged"].tolist() == [True, False] and pp["outcome"].tolist() == ["tp", "fp"]
    # best IoU: 2 shared pixels of 9 + 7 - 2 = 14, with either lesion
    assert pp["best_iou"].tolist() == [2 / 14, 0.0]
    # regions: (2, 2..4) lesion 1's, (2, 5) equidistant (2 px) -> the lowest label, 1; (2, 6..8) lesion 2's:
    # 4 of the 7 pixels in region 1. The false positive's nearest lesion is 2.
    assert pp["region"].tolist() == [1, 2]
    assert pp["centroid_i"].tolist() == [2.0, 9.5] and pp["centroid_j"].tolist() == [5.0, 9.5]
    assert r.case_scores["merged_components"] == 1 and r.case_scores["split_lesions"] == 0
    assert r.case_scores["precision"] == 0.5 and r.case_scores["sensitivity"] == 1.0
    frame = r.prediction_frame("c", 3, affine=np.array([[0.5, 0, 10], [0, 2.0, -4], [0, 0, 1]]))
    assert frame["case"].tolist() == ["c", "c"] and frame["class"].tolist() == [3, 3]
    assert frame["centroid_x_mm"].tolist() == [11.0, 14.75] and frame["centroid_y_mm"].tolist() == [6.0, 15.0]
    assert frame["centroid_k"].isna().all() and frame["centroid_z_mm"].isna().all()


def test_region_holding_most_of_a_prediction_against_the_partition():
    from ccmetrics import voronoi_partition

    rng = np.random.default_rng(5)
    smooth = ndimage.gaussian_filter(rng.random((30, 30, 20)), 1.5)
    gt = smooth > np.quantile(smooth, 0.9)
    pred = np.roll(smooth, 3, axis=0) > np.quantile(smooth, 0.8)
    r = evaluate(pred=pred, gt=gt, metrics=["detection"])
    partition = voronoi_partition(gt)
    pl, m = ndimage.label(pred, np.ones((3, 3, 3)))
    want = []
    for c in range(1, m + 1):
        counts = np.bincount(partition[pl == c], minlength=r.n_components + 1)
        want.append(int(np.argmax(counts)))  # ties: the lowest region
    assert r.per_prediction["region"].tolist() == want


def test_the_pages_state_the_region_rule_the_code_follows():
    """One rule for a predicted component's region (false positives included), stated where it is written (the
    column's description) and, word for word, in the README and the definitions page."""
    from pathlib import Path

    from ccmetrics import schema

    rule = next(f.description for f in schema.PER_PREDICTION.fields if f.name == schema.REGION)
    assert rule == "the GT component whose Voronoi region holds most of its voxels (ties: the lowest; 0 without GT)"
    root = Path(__file__).resolve().parents[2]
    for page in (root / "README.md", root / "docs" / "definitions.md"):
        text = " ".join(page.read_text().split())
        assert rule in text, page.name
        assert "lies nearest" not in text, page.name  # the rule the code never followed


def test_without_detection_no_prediction_table_and_rule_still_applies():
    gt, pred = line(20, (0, 10)), line(20, (0, 3))
    r = evaluate(pred=pred, gt=gt, metrics=["dice"])
    assert r.per_prediction is None and "n_pred" not in r.per_component and r.detection_rule == "overlap"
    r = evaluate(pred=pred, gt=gt, metrics=["dice"], detection_rule="coverage:0.5")
    assert r.per_component["detected"].tolist() == [False] and r.detection_rule == "coverage:0.5"


def test_empty_gt_and_empty_prediction():
    empty = np.zeros((10, 10), bool)
    blob = empty.copy()
    blob[2:4, 2:4] = True
    r = evaluate(pred=blob, gt=empty, metrics=["detection"])
    assert r.per_prediction["outcome"].tolist() == ["fp"] and r.per_prediction["region"].tolist() == [0]
    assert math.isnan(r.case_scores["sensitivity"]) and r.case_scores["precision"] == 0.0
    r = evaluate(pred=empty, gt=blob, metrics=["detection"], detection_rule="iou:0.5")
    assert len(r.per_prediction) == 0 and r.per_component["detected"].tolist() == [False]
    assert list(r.prediction_frame("x").columns)[:3] == ["case", "class", "prediction"]


def test_sites_labels_judges_instances():
    gt = np.zeros((1, 10), np.int32)
    gt[0, 0:3], gt[0, 3:6] = 4, 9  # two touching instances: one component
    pred = np.zeros((1, 10), bool)
    pred[0, 0:3] = True
    r = evaluate(pred=pred, gt=gt, metrics=["detection"], sites="labels", detection_rule="coverage:0.5")
    assert r.per_component["detected"].tolist() == [True, False]
    assert r.case_scores["sensitivity"] == 0.5


@pytest.mark.parametrize("rule", ["overlap", "iou:0.3"])
def test_classes_pass_the_rule(rule):
    gt = np.zeros((1, 20), np.uint8)
    gt[0, 0:10], gt[0, 12:16] = 1, 2
    pred = np.zeros_like(gt)
    pred[0, 0:2], pred[0, 12:16] = 1, 2
    out = evaluate(pred=pred, gt=gt, metrics=["detection"], classes=[1, 2], detection_rule=rule)
    assert out[1].per_component["detected"].tolist() == [rule == "overlap"]
    assert out[2].per_component["detected"].tolist() == [True]


# ---------------------------------------------------------------- data sets and the command line

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "data"


def test_dataset_per_prediction_matches_evaluate_and_the_affine(tmp_path):
    import nibabel as nib
    import pandas as pd

    from ccmetrics import DatasetResult, evaluate_dataset
    from ccmetrics.formats.io import load_image

    result = evaluate_dataset(
        EXAMPLES / "gt", EXAMPLES / "pred", ["dice", "detection"], detection_rule="dice:0.2", progress=False
    )
    pp = result.per_prediction
    assert list(pp.columns) == __import__("ccmetrics").schema.PER_PREDICTION.columns()
    assert result.options["detection_rule"] == "dice:0.2"
    for case in ("case_001", "case_003"):
        gt, pred = load_image(EXAMPLES / "gt" / f"{case}.nii.gz"), load_image(EXAMPLES / "pred" / f"{case}.nii.gz")
        one = evaluate(
            pred=pred.array, gt=gt.array, metrics=["dice", "detection"], spacing=gt.spacing, detection_rule="dice:0.2"
        )
        rows = pp[pp["case"] == case].reset_index(drop=True)
        want = one.per_prediction.reset_index()
        for column in ("prediction", "volume", "gt_lesions", "n_gt", "outcome", "region", "best_iou"):
            assert rows[column].tolist() == want[column].tolist(), column
        affine = nib.load(str(EXAMPLES / "gt" / f"{case}.nii.gz")).affine
        voxel = rows[["centroid_i", "centroid_j", "centroid_k"]].to_numpy()
        np.testing.assert_allclose(
            rows[["centroid_x_mm", "centroid_y_mm", "centroid_z_mm"]], nib.affines.apply_affine(affine, voxel)
        )
        comps = result.per_component[result.per_component["case"] == case]
        np.testing.assert_array_equal(comps["detected"], one.per_component["detected"])
        np.testing.assert_array_equal(comps["n_pred"], one.per_component["n_pred"])
    written = result.write(tmp_path, plots=False)
    assert written["per_prediction"].name == "per_prediction.csv"
    back = DatasetResult.read(tmp_path)
    pd.testing.assert_frame_equal(back.per_prediction, pp, check_dtype=False)
    without = evaluate_dataset(EXAMPLES / "gt", EXAMPLES / "pred", ["dice"], progress=False)
    assert without.per_prediction is None and "per_prediction" not in without.write(tmp_path / "d", plots=False)


@pytest.mark.slow
def test_resume_after_changing_the_rule_equals_a_fresh_run(tmp_path):
    import subprocess
    import sys

    def run(out, *extra):
        cmd = [sys.executable, "-m", "ccmetrics", "evaluate", str(EXAMPLES / "gt"), str(EXAMPLES / "pred")]
        cmd += ["--out", str(out), "--metrics", "dice,detection", "--no-plots", "--bootstrap", "200", *extra]
        return subprocess.run(cmd, capture_output=True, text=True)

    first = run(tmp_path / "a")
    assert first.returncode == 0, first.stderr
    again = run(tmp_path / "a", "--resume", "--detection-rule", "iou:0.3")
    assert again.returncode == 0 and "option detection_rule changed" in again.stderr
    fresh = run(tmp_path / "b", "--detection-rule", "iou:0.3")
    assert "detected: iou:0.3" in fresh.stdout
    for name in ("per_component.csv", "per_prediction.csv", "per_case.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    bad = run(tmp_path / "c", "--detection-rule", "iou:2")
    assert bad.returncode != 0 and "needs a threshold in (0, 1]" in bad.stderr


@pytest.mark.slow
def test_report_follows_the_detection_rule(tmp_path):
    from ccmetrics.report.page import build_model

    counts = {}
    for rule in ("overlap", "coverage:0.9"):
        out = tmp_path / rule.replace(":", "_")
        result = evaluate_dataset_for_report(out, rule)
        model = build_model(out, panel_px=40)
        fp = result.per_prediction[result.per_prediction["outcome"] == "fp"].groupby("case").size()
        missed = result.per_component[~result.per_component["detected"]].groupby("case").size()
        for case in model["cases"]:
            if case["n_fp"] is not None:
                assert case["n_fp"] == fp.get(case["case"], 0), (rule, case["case"])
                assert {f["label"] for f in case["false_positives"]} == set(
                    result.per_prediction.query("case == @case['case'] and outcome == 'fp'")["prediction"]
                )
            assert case["n_missed"] == missed.get(case["case"], 0)
        counts[rule] = sum(c["n_fp"] or 0 for c in model["cases"])
    assert counts["coverage:0.9"] > counts["overlap"]  # the stricter rule has more false positives to show


def evaluate_dataset_for_report(out, rule):
    from ccmetrics import evaluate_dataset

    result = evaluate_dataset(
        EXAMPLES / "gt", EXAMPLES / "pred", ["dice", "detection"], detection_rule=rule, progress=False
    )
    result.write(out, plots=False, n_resamples=50)
    return result
