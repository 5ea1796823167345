"""Tests of ccmetrics.campaign.dataset: pairing, every validation branch, the tidy tables and their summary.

Expected values are computed independently of the data-set code: by hand for boxes
(Dice, volumes, the image diagonal) and with ``ccmetrics.evaluate`` on the very arrays
written to disk, with the spacing written into their headers.
"""

import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ccmetrics import evaluate, evaluate_dataset
from ccmetrics.analysis.stats import bootstrap_ci, bootstrap_ci_pooled
from ccmetrics.campaign.dataset import DatasetResult, pair_folders
from ccmetrics.formats.io import Image, load_image, save_image

SHAPE = (24, 24, 12)
SPACING = (0.8, 0.8, 2.5)
VOXEL_ML = 0.8 * 0.8 * 2.5 / 1000.0
DIAGONAL_MM = math.sqrt((24 * 0.8) ** 2 + (24 * 0.8) ** 2 + (12 * 2.5) ** 2)
SPINE = Path(__file__).resolve().parents[1] / "data" / "spine"
METRICS = ["dice", "nsd", "hd95"]


def box(*ranges, shape=SHAPE, dtype=np.uint8, value=1):
    """An array with value in the box given by (start, stop) pairs, one per axis."""
    a = np.zeros(shape, dtype)
    a[tuple(slice(lo, hi) for lo, hi in ranges)] = value
    return a


def box_volume(*ranges):
    return math.prod(hi - lo for lo, hi in ranges)


def write(path, array, spacing=SPACING, affine=None):
    if affine is not None:
        save_image(path, array, like=Image(np.asarray(array), tuple(spacing), affine))
    else:
        save_image(path, array, spacing=spacing)


def ids_of_folder(folder, suffix=None):
    """Case ids of the image files of a folder (hidden files aside), computed here without ccmetrics.formats.io."""
    out = set()
    for p in Path(folder).iterdir():
        m = not p.name.startswith(".") and re.match(r"^(.+?)(\.nii\.gz|\.nii|\.mha|\.mhd|\.nrrd|\.nhdr)$", p.name)
        if m and p.is_file():
            out.add(re.sub(f"(?:{suffix})$", "", m.group(1)) if suffix else m.group(1))
    return out


# Boxes of the valid cases: GT lesions A (6x6x4) and B (4x4x3), predictions around them.
A = ((2, 8), (2, 8), (2, 6))
B = ((14, 18), (14, 18), (6, 9))
A_SHIFT = ((3, 9), (2, 8), (2, 6))  # A moved one voxel along x: overlap 5x6x4
FP = ((18, 21), (2, 4), (1, 2))  # 6 false-positive voxels


def two_lesions():
    gt = box(*A)
    gt[tuple(slice(lo, hi) for lo, hi in B)] = 1
    return gt


@pytest.fixture(scope="module")
def branches(tmp_path_factory):
    """One GT and one prediction folder holding every validation branch, evaluated once."""
    root = tmp_path_factory.mktemp("branches")
    g, p = root / "gt", root / "pred"
    g.mkdir()
    p.mkdir()
    arrays = {}  # case -> (gt, pred) of the cases that should be evaluated
    gt = two_lesions()

    def pair(case, gt_arr, pred_arr, gt_ext=".nii.gz", pred_ext=".nii.gz", **pred_kw):
        write(g / f"{case}{gt_ext}", gt_arr)
        if pred_arr is not None:
            write(p / f"{case}{pred_ext}", pred_arr, **pred_kw)

    # valid cases: A found shifted, B missed / both found / exact, in three file formats
    arrays["ok_nifti"] = (gt, box(*A_SHIFT))
    pair("ok_nifti", *arrays["ok_nifti"])
    pred = box(*A_SHIFT)
    pred[tuple(slice(lo, hi) for lo, hi in B)] = 1
    arrays["ok_mha_nrrd"] = (gt, pred)
    pair("ok_mha_nrrd", gt, pred, gt_ext=".mha", pred_ext=".nrrd")
    arrays["ok_float"] = (gt.astype(np.int16), gt.astype(np.float32))  # float 0.0/1.0 prediction
    pair("ok_float", *arrays["ok_float"])
    # origin off by less than the 1e-3 mm tolerance: accepted
    near = np.diag(SPACING + (1.0,))
    near[:3, 3] = (0.0004, 0.0, 0.0)
    arrays["ok_tiny_shift"] = (gt, gt)
    pair("ok_tiny_shift", gt, gt, affine=near)
    # flagged cases
    arrays["missing"] = (gt, np.zeros(SHAPE, np.uint8))
    pair("missing", gt, None)
    arrays["empty_fp"] = (np.zeros(SHAPE, np.uint8), box(*FP))
    pair("empty_fp", *arrays["empty_fp"])
    arrays["empty_clean"] = (np.zeros(SHAPE, np.uint8), np.zeros(SHAPE, np.uint8))
    pair("empty_clean", *arrays["empty_clean"], gt_ext=".mha", pred_ext=".mha")
    # error cases
    write(p / "orphan.nii.gz", gt)
    pair("dup", gt, gt)
    write(g / "dup.mha", gt)
    pair("shape", gt, gt[:20])
    pair("spacing", gt, gt, spacing=(0.8, 0.8, 3.0))
    shifted = np.diag(SPACING + (1.0,))
    shifted[:3, 3] = (5.0, 0.0, 0.0)
    pair("origin", gt, gt, affine=shifted)
    flipped = np.diag((-0.8, 0.8, 2.5, 1.0))  # x axis reversed, same origin and spacing
    pair("direction", gt, gt, affine=flipped)
    pair("truncated", gt, gt)
    data = (p / "truncated.nii.gz").read_bytes()
    (p / "truncated.nii.gz").write_bytes(data[:-30])
    label2 = gt.copy()
    label2[0, 0, 0] = 2
    pair("label2", gt, label2)
    gt3 = gt.copy()
    gt3[20, 20, 10] = 3
    pair("gt_label3", gt3, gt)
    nan = gt.astype(np.float32)
    nan[1, 1, 1] = np.nan
    pair("nan", gt, nan)
    # not images: listed as ignored
    (g / "notes.txt").write_text("not an image")
    (p / "plans.json").write_text("{}")
    (p / "subfolder").mkdir()
    write(p / "subfolder" / "ok_nifti.nii.gz", gt)  # folders are not searched
    result = evaluate_dataset(g, p, METRICS, progress=False)
    return {"gt": g, "pred": p, "result": result, "arrays": arrays}


VALID = ["ok_nifti", "ok_mha_nrrd", "ok_float", "ok_tiny_shift", "missing", "empty_fp", "empty_clean"]
ERRORS = {  # case -> words its error message must hold
    "orphan": ["no ground truth"],
    "dup": ["several files", "dup.mha", "dup.nii.gz"],
    "shape": ["shape", "(24, 24, 12)", "(20, 24, 12)"],
    "spacing": ["spacing", "2.5", "3.0"],
    "origin": ["origin", "5.0", "--tolerance-mm"],
    "direction": ["direction"],
    "truncated": ["truncated", "truncated.nii.gz"],
    "label2": ["the prediction is a label map (labels 1,2)", "binary", "--classes 1,2", "classes=[1, 2]"],
    "gt_label3": ["the GT is a label map (labels 1,3)", "binary", "--classes 1,3", "classes=[1, 3]"],
    "nan": ["pred", "NaN"],
}


def test_every_image_file_has_one_row_and_the_right_status(branches):
    per_case = branches["result"].per_case
    expected_ids = ids_of_folder(branches["gt"]) | ids_of_folder(branches["pred"])
    assert set(per_case["case"]) == expected_ids == set(VALID) | set(ERRORS)
    assert len(per_case) == len(expected_ids)  # binary: one row per case
    assert per_case["case"].tolist() == sorted(expected_ids)
    status = dict(zip(per_case["case"], per_case["status"]))
    flags = dict(zip(per_case["case"], per_case["flags"]))
    assert {c for c, s in status.items() if s == "ok"} == {"ok_nifti", "ok_mha_nrrd", "ok_float", "ok_tiny_shift"}
    assert {c: flags[c] for c, s in status.items() if s == "flagged"} == {
        "missing": "missing_prediction",
        "empty_fp": "empty_gt",
        "empty_clean": "empty_gt",
    }
    assert {c for c, s in status.items() if s == "error"} == set(ERRORS)


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_error_rows_name_the_problem(branches, case):
    row = branches["result"].per_case.set_index("case").loc[case]
    assert row["status"] == "error"
    for word in ERRORS[case]:
        assert word in row["error"], (case, row["error"])
    assert pd.isna(row["dice"]) and pd.isna(row["cc_dice"])  # no score for a failed case


def test_valid_cases_equal_evaluate_on_the_written_arrays(branches):
    result, arrays = branches["result"], branches["arrays"]
    per_case = result.per_case.set_index("case")
    for case in VALID:
        gt, pred = arrays[case]
        expected = evaluate(pred, gt, METRICS, spacing=SPACING)
        row = per_case.loc[case]
        assert row["spacing"] == "0.8x0.8x2.5"
        assert row["n_components"] == expected.n_components
        assert bool(row["empty_gt"]) == expected.empty_gt
        assert row["pred_volume"] == int(pred.astype(bool).sum())
        assert row["pred_volume_ml"] == pytest.approx(pred.astype(bool).sum() * VOXEL_ML)
        assert row["worst_distance"] == pytest.approx(DIAGONAL_MM)
        for m in METRICS:
            assert row[m] == pytest.approx(expected.standard[m]), (case, m)
            assert row[f"cc_{m}"] == pytest.approx(expected.cc[m]), (case, m)
        comps = result.per_component[result.per_component["case"] == case].reset_index(drop=True)
        pd.testing.assert_frame_equal(comps, expected.to_frame(case, 1), check_dtype=False)


def test_hand_computed_values_of_boxes(branches):
    result = branches["result"]
    row = result.per_case.set_index("case").loc["ok_nifti"]
    a, overlap = box_volume(*A), 5 * 6 * 4
    assert row["dice"] == pytest.approx(2 * overlap / (a + box_volume(*B) + a))
    assert row["cc_dice"] == pytest.approx((2 * overlap / (2 * a) + 0.0) / 2)
    assert row["cc_hd95"] == pytest.approx((0.8 + DIAGONAL_MM) / 2)  # A: one 0.8 mm shift; B missed
    comps = result.per_component[result.per_component["case"] == "ok_nifti"]
    assert comps["component"].tolist() == [1, 2]
    assert comps["volume"].tolist() == [a, box_volume(*B)]
    assert comps["volume_mm3"].tolist() == pytest.approx([a * 1.6, box_volume(*B) * 1.6])
    assert comps["detected"].tolist() == [True, False]
    assert comps["hd95"].tolist() == [pytest.approx(0.8), math.inf]
    # a GT without prediction: an empty prediction, Dice 0, distances inf -> the worst distance
    miss = result.per_case.set_index("case").loc["missing"]
    assert miss["pred_file"] == "" or pd.isna(miss["pred_file"])
    assert (miss["dice"], miss["cc_dice"], miss["nsd"], miss["pred_volume"]) == (0.0, 0.0, 0.0, 0)
    assert math.isinf(miss["hd95"]) and miss["cc_hd95"] == pytest.approx(DIAGONAL_MM)
    mcomps = result.per_component[result.per_component["case"] == "missing"]
    assert mcomps["detected"].tolist() == [False, False] and np.isinf(mcomps["hd95"]).all()


def test_counts_and_ignored_files(branches):
    result = branches["result"]
    assert result.counts() == {
        "cases": len(VALID) + len(ERRORS),
        "evaluated": len(VALID),
        "flagged": 3,
        "failed": len(ERRORS),
        "empty_gt": 2,
        "missing_prediction": 1,
    }
    assert sorted(Path(f).name for f in result.ignored_files) == ["notes.txt", "plans.json", "subfolder"]
    assert [f for f in result.ignored_files if f.endswith(os.sep)] == [str(branches["pred"] / "subfolder") + os.sep]
    assert set(result.errors["case"]) == set(ERRORS)
    assert sorted(result.timings["case"]) == sorted(VALID + list(ERRORS))
    assert (result.timings[["read_seconds", "compute_seconds"]] >= 0).all().all()


def test_summary_means_include_missing_prediction_and_exclude_empty_gt(branches):
    result = branches["result"]
    summary = result.summary(n_resamples=300, seed=3)
    per_case = result.per_case.set_index("case")
    scored = ["missing", "ok_float", "ok_mha_nrrd", "ok_nifti", "ok_tiny_shift"]  # non-empty GT, evaluated
    for m in METRICS:
        cc = per_case.loc[scored, f"cc_{m}"].to_numpy(float)
        row = summary.loc[(1, m, "cc_patient")]
        assert row["n"] == 5
        assert row["mean"] == pytest.approx(cc.mean()) and row["median"] == pytest.approx(np.median(cc))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(bootstrap_ci(cc, n_resamples=300, seed=3))
        standard = per_case.loc[scored, m].to_numpy(float)
        standard = np.where(np.isinf(standard), per_case.loc[scored, "worst_distance"], standard)
        assert summary.loc[(1, m, "standard"), "mean"] == pytest.approx(standard.mean())
        # pooled by hand: every component of the scored cases, inf -> its case's worst distance
        comps = result.per_component[result.per_component["case"].isin(scored)]
        values = [v if math.isfinite(v) else w for v, w in zip(comps[m], comps["worst_distance"])]
        pooled = summary.loc[(1, m, "cc_pooled")]
        assert pooled["n"] == len(values) == 2 * 5
        assert pooled["mean"] == pytest.approx(np.mean(values))
        assert pooled["median"] == pytest.approx(np.median(values))
        expected_ci = bootstrap_ci_pooled(values, comps["case"].to_numpy(), n_resamples=300, seed=3)
        assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx(expected_ci)
    # the missing prediction pulls the mean down: it is in it
    assert summary.loc[(1, "dice", "standard"), "mean"] < per_case.loc[scored[1:], "dice"].mean()


def test_empty_gt_summary_reports_false_positive_volume(branches):
    result = branches["result"]
    per_case = result.per_case.set_index("case")
    fp = box_volume(*FP)
    # the empty-GT rule: best value without prediction, worst with a false positive
    assert per_case.loc["empty_clean", ["cc_dice", "cc_nsd", "cc_hd95"]].tolist() == [1.0, 1.0, 0.0]
    assert per_case.loc["empty_fp", ["cc_dice", "cc_nsd"]].tolist() == [0.0, 0.0]
    assert per_case.loc["empty_fp", "cc_hd95"] == pytest.approx(DIAGONAL_MM)
    assert per_case.loc["empty_fp", "pred_volume"] == fp
    empty = result.empty_gt_summary().loc[1]
    assert empty["n"] == 2 and empty["with_false_positive"] == 1
    assert empty["fp_volume_voxels_mean"] == pytest.approx(fp / 2)
    assert empty["fp_volume_ml_mean"] == pytest.approx(fp * VOXEL_ML / 2)
    assert result.per_component["case"].isin(["empty_fp", "empty_clean"]).sum() == 0  # no GT component


def test_bootstrap_is_seeded(branches):
    result = branches["result"]
    ci = ["ci_low", "ci_high"]
    first = result.summary(n_resamples=500, seed=7)[ci]
    pd.testing.assert_frame_equal(first, result.summary(n_resamples=500, seed=7)[ci])
    other = result.summary(n_resamples=500, seed=8)[ci]
    assert not first.equals(other)
    # the point estimates do not depend on the seed
    pd.testing.assert_frame_equal(
        result.summary(n_resamples=500, seed=7)[["n", "mean", "median"]],
        result.summary(n_resamples=500, seed=8)[["n", "mean", "median"]],
    )


def test_pair_folders_suffixes_duplicates_and_ignored(tmp_path):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    for name in ("a_0000.nii.gz", "b_0000.mha", "c_0000.nrrd"):
        write(g / name, box(*A))
    for name in ("a_pred.nii.gz", "b_pred.nrrd", "b_pred.mha", "d_pred.nii", "image.raw"):
        if name.endswith(".raw"):
            (p / name).write_bytes(b"\0")
        else:
            write(p / name, box(*A))
    (g / ".hidden.nii.gz").write_text("")  # hidden files are skipped
    tasks, ignored = pair_folders(g, p, gt_suffix="_0000", pred_suffix="_pred")
    assert [t.case for t in tasks] == ["a", "b", "c", "d"]
    assert [t.case for t in tasks] == sorted(ids_of_folder(g, "_0000") | ids_of_folder(p, "_pred"))
    by_case = {t.case: t for t in tasks}
    assert Path(by_case["a"].pred).name == "a_pred.nii.gz" and by_case["a"].error == ""
    assert "several files" in by_case["b"].error and "b_pred.mha" in by_case["b"].error
    assert by_case["c"].pred is None and by_case["c"].error == ""
    assert by_case["d"].gt is None and "no ground truth" in by_case["d"].error
    assert [Path(f).name for f in ignored] == [".hidden.nii.gz", "image.raw"]  # hidden files listed, not evaluated
    # without the suffixes nothing pairs: every id is its own case
    tasks, _ = pair_folders(g, p)
    assert [t.case for t in tasks] == ["a_0000", "a_pred", "b_0000", "b_pred", "c_0000", "d_pred"]
    with pytest.raises(ValueError, match="pred_suffix '_pred\\(' is not a valid regular expression"):
        pair_folders(g, p, pred_suffix="_pred(")
    with pytest.raises(NotADirectoryError, match="does not exist"):
        pair_folders(tmp_path / "nowhere", p)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no image file"):
        pair_folders(tmp_path / "empty", p)


def test_multiclass_label_maps(tmp_path):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    gt1 = box(*A, value=1)
    gt1[tuple(slice(lo, hi) for lo, hi in B)] = 2
    pred1 = box(*A_SHIFT, value=1)
    pred1[tuple(slice(lo, hi) for lo, hi in B)] = 2
    gt2 = box(*A, value=1)  # no class 2 in the GT, class 2 predicted: empty GT with a false positive
    pred2 = box(*A, value=1)
    pred2[tuple(slice(lo, hi) for lo, hi in FP)] = 2
    cases = {"m1": (gt1, pred1), "m2": (gt2, pred2)}
    for case, (gt, pred) in cases.items():
        write(g / f"{case}.nii.gz", gt)
        write(p / f"{case}.nii.gz", pred)
    result = evaluate_dataset(g, p, ["dice", "hd95"], classes=[1, 2], progress=False)
    assert result.per_case[["case", "class"]].values.tolist() == [["m1", 1], ["m1", 2], ["m2", 1], ["m2", 2]]
    for case, (gt, pred) in cases.items():
        expected = evaluate(pred, gt, ["dice", "hd95"], classes=[1, 2], spacing=SPACING)
        for c in (1, 2):
            row = result.per_case[(result.per_case["case"] == case) & (result.per_case["class"] == c)].iloc[0]
            for m in ("dice", "hd95"):
                assert row[m] == pytest.approx(expected[c].standard[m])
                assert row[f"cc_{m}"] == pytest.approx(expected[c].cc[m])
            comps = result.per_component[
                (result.per_component["case"] == case) & (result.per_component["class"] == c)
            ].reset_index(drop=True)
            if expected[c].n_components:
                assert (comps["class_name"] == str(c)).all()
                pd.testing.assert_frame_equal(
                    comps.drop(columns="class_name"), expected[c].to_frame(case, c), check_dtype=False
                )
            else:
                assert comps.empty
    row = result.per_case[(result.per_case["case"] == "m2") & (result.per_case["class"] == 2)].iloc[0]
    assert row["status"] == "flagged" and row["flags"] == "empty_gt" and row["cc_dice"] == 0.0
    assert result.counts() == {
        "cases": 2,
        "evaluated": 2,
        "flagged": 1,
        "failed": 0,
        "empty_gt": 1,
        "missing_prediction": 0,
    }
    summary = result.summary(n_resamples=100)
    assert summary.loc[(1, "dice", "cc_patient"), "n"] == 2 and summary.loc[(2, "dice", "cc_patient"), "n"] == 1
    empty = result.empty_gt_summary()
    assert empty.loc[1, "n"] == 0 and empty.loc[2, "n"] == 1
    assert empty.loc[2, "fp_volume_ml_mean"] == pytest.approx(box_volume(*FP) * VOXEL_ML)
    # a label map in a binary evaluation fails with a hint, the run goes on
    binary = evaluate_dataset(g, p, ["dice"], progress=False)
    assert (binary.per_case["status"] == "error").all()
    assert binary.per_case["error"].str.contains("binary").all()


def test_spacing_voxel_header_and_numbers(tmp_path):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    gt, pred = two_lesions(), box(*A_SHIFT)
    write(g / "a.nii.gz", gt)
    write(p / "a.nii.gz", pred)
    for spacing, used in (("header", SPACING), ("voxel", None), ((1.0, 2.0, 3.0), (1.0, 2.0, 3.0))):
        result = evaluate_dataset(g, p, ["dice", "hd95"], spacing=spacing, progress=False)
        expected = evaluate(pred, gt, ["dice", "hd95"], spacing=used)
        row = result.per_case.iloc[0]
        assert row["hd95"] == pytest.approx(expected.standard["hd95"])
        assert row["cc_hd95"] == pytest.approx(expected.cc["hd95"])
        assert row["worst_distance"] == pytest.approx(expected.worst_distance)
        assert row["spacing"] == ("voxel" if used is None else "x".join(f"{s:g}" for s in used))
        if used is None:
            assert np.isnan(row["pred_volume_ml"]) and result.per_component["volume_mm3"].isna().all()
        else:
            assert row["pred_volume_ml"] == pytest.approx(box_volume(*A_SHIFT) * math.prod(used) / 1000)
    voxel = evaluate_dataset(g, p, ["hd95"], spacing="voxel", progress=False).per_case.iloc[0]
    header = evaluate_dataset(g, p, ["hd95"], progress=False).per_case.iloc[0]
    assert voxel["worst_distance"] == pytest.approx(math.sqrt(24**2 + 24**2 + 12**2))
    assert header["worst_distance"] == pytest.approx(DIAGONAL_MM)


def test_arrays_and_images_given_directly(tmp_path):
    gt, pred = two_lesions(), box(*A_SHIFT)
    write(tmp_path / "gt.mha", gt)
    image = load_image(tmp_path / "gt.mha")
    result = evaluate_dataset(
        {
            "arrays": (gt, pred),
            "files": (tmp_path / "gt.mha", image),
            "none": (gt, None),
            "orphan": (None, pred),
            "shape": (gt, pred[:3]),
        },
        metrics=["dice", "hd95"],
        progress=False,
    )
    per_case = result.per_case.set_index("case")
    # plain arrays: voxel units; files and Images: the header spacing
    assert per_case.loc["arrays", "hd95"] == pytest.approx(evaluate(pred, gt, ["hd95"]).standard["hd95"])
    assert per_case.loc["arrays", "spacing"] == "voxel"
    assert per_case.loc["files", "spacing"] == "0.8x0.8x2.5" and per_case.loc["files", "dice"] == 1.0
    assert per_case.loc["none", "flags"] == "missing_prediction" and per_case.loc["none", "dice"] == 0.0
    assert "no ground truth" in per_case.loc["orphan", "error"]
    assert "shape" in per_case.loc["shape", "error"]
    with pytest.raises(ValueError, match="unique"):
        evaluate_dataset([("a", gt, pred), ("a", gt, pred)], progress=False)


def test_argument_errors(tmp_path, branches):
    g, p = branches["gt"], branches["pred"]
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_dataset(g, p, ["dice", "volume"], progress=False)
    with pytest.raises(TypeError, match="classes"):
        evaluate_dataset(g, p, classes=3, progress=False)
    with pytest.raises(ValueError, match="spacing"):
        evaluate_dataset(g, p, spacing="mm", progress=False)
    with pytest.raises(ValueError, match="workers"):
        evaluate_dataset(g, p, workers=0, progress=False)
    with pytest.raises(ValueError, match="predictions folder"):
        evaluate_dataset(g, progress=False)
    with pytest.raises(NotADirectoryError):
        evaluate_dataset(g, tmp_path / "missing", progress=False)

    class LikeAMonaiMetric:  # what parse_metrics recognises as a MONAI metric object (no torch import)
        def __call__(self, y_pred, y):
            return 0.0

        def _compute_tensor(self, y_pred, y):
            return 0.0

    with pytest.raises(ValueError, match="metric names only"):
        evaluate_dataset(g, p, ["dice", LikeAMonaiMetric()], progress=False)


def test_write_and_read_round_trip(tmp_path, branches):
    result = branches["result"]
    written = result.write(tmp_path / "out", plots=False, n_resamples=200, seed=1)
    assert written["plots"] == [] and not (tmp_path / "out" / "plots").exists()
    back = DatasetResult.read(tmp_path / "out")
    cols = ["case", "class", "status", "flags", "error", "dice", "cc_dice", "hd95", "cc_hd95", "worst_distance"]
    pd.testing.assert_frame_equal(back.per_case[cols], result.per_case[cols], check_dtype=False)
    assert back.options == result.options
    assert back.counts() == result.counts()
    pd.testing.assert_frame_equal(back.summary(n_resamples=200, seed=1), result.summary(n_resamples=200, seed=1))
    with pytest.raises(FileNotFoundError, match="per_case.csv"):
        DatasetResult.read(tmp_path)


@pytest.mark.slow
def test_worker_count_does_not_change_the_tables(branches):
    one = branches["result"]
    two = evaluate_dataset(branches["gt"], branches["pred"], METRICS, workers=2, progress=False)
    pd.testing.assert_frame_equal(two.per_case, one.per_case)
    pd.testing.assert_frame_equal(two.per_component, one.per_component)
    assert two.ignored_files == one.ignored_files and two.options == one.options
    pd.testing.assert_frame_equal(two.summary(n_resamples=200), one.summary(n_resamples=200))


@pytest.mark.slow
def test_dask_cluster_gives_the_same_tables(branches, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    from ccmetrics.cli import main

    one = branches["result"]
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = evaluate_dataset(branches["gt"], branches["pred"], METRICS, client=client, progress=False)
        # the command line's --dask connects to the same scheduler
        code = main(
            [
                "evaluate",
                str(branches["gt"]),
                str(branches["pred"]),
                "--out",
                str(tmp_path / "dask"),
                "--dask",
                cluster.scheduler_address,
                "--quiet",
                "--no-plots",
                "--bootstrap",
                "100",
            ]
        )
        assert set(client.scheduler_info()["workers"]) and len(client.scheduler_info()["workers"]) == 2
    pd.testing.assert_frame_equal(on_dask.per_case, one.per_case)
    pd.testing.assert_frame_equal(on_dask.per_component, one.per_component)
    assert code == 1  # the branches hold failed cases
    code_local = main(
        [
            "evaluate",
            str(branches["gt"]),
            str(branches["pred"]),
            "--out",
            str(tmp_path / "local"),
            "--quiet",
            "--no-plots",
            "--bootstrap",
            "100",
        ]
    )
    assert code_local == 1
    for name in ("per_case.csv", "per_component.csv", "summary.json"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name


def test_real_spine_pair_uses_header_spacing_per_class(tmp_path):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    shutil.copy(SPINE / "ref.nii.gz", g / "spine.nii.gz")
    shutil.copy(SPINE / "pred.nii.gz", p / "spine.nii.gz")
    classes = [41, 42, 100]
    result = evaluate_dataset(g, p, ["dice", "nsd", "hd95"], classes=classes, progress=False)
    ref, pred = load_image(SPINE / "ref.nii.gz"), load_image(SPINE / "pred.nii.gz")
    assert ref.array.shape == (512, 512, 17)
    assert ref.spacing == pytest.approx((0.58594, 0.58594, 3.3), abs=1e-4)
    expected = evaluate(pred.array, ref.array, ["dice", "nsd", "hd95"], classes=classes, spacing=ref.spacing)
    assert result.per_case["class"].tolist() == classes
    assert (result.per_case["status"] == "ok").all()
    for c in classes:
        row = result.per_case[result.per_case["class"] == c].iloc[0]
        assert row["spacing"] == "x".join(f"{s:g}" for s in ref.spacing)
        assert row["n_components"] == expected[c].n_components
        for m in ("dice", "nsd", "hd95"):
            assert row[m] == pytest.approx(expected[c].standard[m])
            assert row[f"cc_{m}"] == pytest.approx(expected[c].cc[m])
        comps = result.per_component[result.per_component["class"] == c].reset_index(drop=True)
        assert (comps["class_name"] == str(c)).all()
        pd.testing.assert_frame_equal(
            comps.drop(columns="class_name"), expected[c].to_frame("spine", c), check_dtype=False
        )
        assert comps["volume_mm3"].to_numpy() == pytest.approx(comps["volume"].to_numpy() * math.prod(ref.spacing))
    # the header spacing matters: index units give other distances
    voxel = evaluate(pred.array, ref.array, ["hd95"], classes=[42])
    assert result.per_case.set_index("class").loc[42, "cc_hd95"] != pytest.approx(voxel[42].cc["hd95"])


def test_review_regressions_scalar_spacing_and_na_like_case_ids(tmp_path):
    from ccmetrics import evaluate_dataset
    from ccmetrics.campaign.dataset import DatasetResult

    gt = np.zeros((12, 12, 8), np.uint8)
    gt[2:5, 2:5, 2:5] = 1
    pred = gt.copy()
    pred[8:10, 8:10, 4:6] = 1  # an 8-voxel false positive
    cases = {name: (gt, pred) for name in ("NA", "null", "nan", "001")}
    one = evaluate_dataset(cases, metrics=["dice"], spacing=2.0, progress=False)
    three = evaluate_dataset(cases, metrics=["dice"], spacing=(2.0, 2.0, 2.0), progress=False)
    # one number means every axis: 35 predicted voxels of 8 mm^3 each
    assert one.per_case["pred_volume_ml"].tolist() == [35 * 8 / 1000] * 4
    assert one.per_case["spacing"].tolist() == ["2x2x2"] * 4
    pd.testing.assert_frame_equal(one.per_case, three.per_case)
    one.write(tmp_path / "out", plots=False)
    back = DatasetResult.read(tmp_path / "out")
    assert sorted(back.per_component["case"]) == ["001", "NA", "nan", "null"]  # not read as missing values
    assert back.summary().loc[(1, "dice", "cc_pooled"), "n"] == 4


def _volume_similarity(pred, gt, spacing):
    total = float(pred.sum()) + float(gt.sum())
    return 1.0 - abs(float(pred.sum()) - float(gt.sum())) / total if total else 1.0


def test_every_case_failed_with_an_unregistered_metric_record(tmp_path):
    """Regression: when every case fails, a Metric record that was never registered gave 'unknown metric'."""
    from ccmetrics.metrics import registry

    record = registry.Metric("volsim_record", "Volume similarity", "overlap", "region", _volume_similarity, best=1.0)
    gt, pred = box((2, 6), (2, 6), (2, 6)), box((2, 6), (2, 6), (2, 5))
    failed = evaluate_dataset({"a": (gt, pred[:-1])}, metrics=["dice", record, "detection"], progress=False)
    assert "volsim_record" not in registry.names()
    assert failed.counts()["failed"] == 1 and "shape differs" in failed.per_case["error"].iloc[0]
    evaluated = evaluate_dataset({"a": (gt, pred)}, metrics=["dice", record, "detection"], progress=False)
    assert list(failed.per_case.columns) == list(evaluated.per_case.columns)  # the columns of an evaluated case
    assert failed.per_case[["volsim_record", "cc_volsim_record"]].isna().all().all()
    failed.write(tmp_path / "out", plots=False)
    assert DatasetResult.read(tmp_path / "out").columns["volsim_record"].display == "Volume similarity"
