"""Probability maps through a data-set evaluation and the command line: picai_eval's numbers end to end,
nnU-Net's npz, bad input as error rows, resume, workers, the written folder."""

import json
import os

import numpy as np
import pandas as pd
import pytest
import SimpleITK as sitk

from ccmetrics import evaluate_dataset
from ccmetrics.campaign.dataset import DatasetResult
from ccmetrics.cli import main
from ccmetrics.engine.components import find_sites
from ccmetrics.formats.io import load_image, save_image
from ccmetrics.metrics.candidates import find_candidates
from ccmetrics.metrics.detection_curves import detection_curves, match_candidates

SHAPE = (20, 24, 16)
SPACING = (0.8, 0.8, 2.0)


def make_case(rng, n_lesions, noise):
    gt = np.zeros(SHAPE, np.uint8)
    prob = np.zeros(SHAPE, np.float32)
    for _ in range(n_lesions):
        x, y, z = (int(rng.integers(2, s - 6)) for s in SHAPE)
        gt[x : x + 4, y : y + 4, z : z + 3] = 1
        if rng.uniform() < 0.8:  # found, more or less well
            dx = int(rng.integers(0, 3))
            prob[x + dx : x + dx + 4, y : y + 4, z : z + 3] = np.float32(rng.choice([0.3, 0.55, 0.8, 0.95]))
    for _ in range(noise):  # false positives, some at the same confidence as lesions (ties)
        x, y, z = (int(rng.integers(0, s - 2)) for s in SHAPE)
        if not gt[x : x + 2, y : y + 2, z : z + 2].any():
            prob[x : x + 2, y : y + 2, z : z + 2] = np.float32(rng.choice([0.2, 0.55, 0.7]))
    return gt, prob


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("prob")
    rng = np.random.default_rng(42)
    for d in ("gt", "prob"):
        (root / d).mkdir()
    arrays = {}
    for i in range(10):
        gt, prob = make_case(rng, int(rng.integers(0, 4)), int(rng.integers(0, 3)))
        save_image(root / "gt" / f"case{i:02d}.nii.gz", gt, spacing=SPACING)
        save_image(root / "prob" / f"case{i:02d}.nii.gz", prob, spacing=SPACING)
        arrays[f"case{i:02d}"] = (gt, prob)
    return root, arrays


def test_folder_equals_per_case_matching_and_picai(folders):
    root, arrays = folders
    result = evaluate_dataset(root / "gt", probabilities=root / "prob", metrics=["dice"], progress=False)
    assert (result.per_case["status"] != "error").all()
    # each case's candidates as the metrics layer finds and matches them, on the arrays as read
    matches = []
    for case in sorted(arrays):
        gt = load_image(root / "gt" / f"{case}.nii.gz").array
        prob = load_image(root / "prob" / f"{case}.nii.gz").array.astype(np.float32)
        m = match_candidates(find_candidates(prob), find_sites(gt), "iou:0.1")
        matches.append(m)
        rows = result.per_candidate[result.per_candidate["case"] == case]
        assert rows["outcome"].tolist() == m.outcome.tolist()
        assert rows["confidence"].tolist() == m.confidence.tolist()
        row = result.per_case[result.per_case["case"] == case].iloc[0]
        assert row["case_confidence"] == m.case_confidence
        # without predictions, the segmentation is prob > 0.5
        assert row["pred_volume"] == int((prob > 0.5).sum())
        assert row["prob_file"] == str(root / "prob" / f"{case}.nii.gz") and row["pred_file"] == ""
    ours = result.detection_curves(n_resamples=0)[1]
    direct = detection_curves(matches, case_ids=sorted(arrays), n_resamples=0)
    assert ours.ap == direct.ap and ours.auroc == direct.auroc and ours.cpm == direct.cpm
    # picai_eval on the same detection maps and GT files
    picai = pytest.importorskip("picai_eval.eval")
    ref = picai.evaluate(
        y_det=[
            find_candidates(load_image(root / "prob" / f"{c}.nii.gz").array).detection_map() for c in sorted(arrays)
        ],
        y_true=[load_image(root / "gt" / f"{c}.nii.gz").array for c in sorted(arrays)],
        subject_list=sorted(arrays),
        num_parallel_calls=1,
        verbose=0,
    )
    assert ours.ap == pytest.approx(ref.AP, abs=1e-9)
    assert ours.auroc == pytest.approx(ref.auroc, abs=1e-9)
    assert ours.picai_score == pytest.approx(ref.score, abs=1e-9)
    assert ours.n_lesions == ref.num_lesions


def test_written_folder_cli_and_resume(folders, tmp_path, capsys):
    root, arrays = folders
    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(root / "gt"),
            "--probabilities",
            str(root / "prob"),
            "--out",
            str(out),
            "--metrics",
            "dice,detection",
            "--bootstrap",
            "200",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "Lesion detection:" in text and "AP " in text and "CPM " in text and "per_candidate.csv" in text
    for name in ("per_candidate.csv", "per_case.csv", "summary.json"):
        assert (out / name).is_file()
    for name in ("froc.png", "pr.png", "roc.png"):
        assert (out / "plots" / name).is_file()
    doc = json.loads((out / "summary.json").read_text())
    curves = DatasetResult.read(out).detection_curves(n_resamples=200)[1]
    saved = doc["detection_curves"]["1"]
    assert saved["ap"]["value"] == curves.ap and saved["ap"]["ci"] == list(curves.ap_ci)
    assert doc["options"]["probabilities"]["candidates"] == "components"
    assert doc["options"]["detection_rule"] == "iou:0.1"
    assert f"AP {curves.ap:.4f} [{curves.ap_ci[0]:.4f}, {curves.ap_ci[1]:.4f}]" in text
    first = pd.read_csv(out / "per_candidate.csv")
    # resume: every case from its record, the same tables
    code = main(
        [
            "evaluate",
            str(root / "gt"),
            "--probabilities",
            str(root / "prob"),
            "--out",
            str(out),
            "--metrics",
            "dice,detection",
            "--bootstrap",
            "200",
            "--quiet",
            "--resume",
        ]
    )
    assert code == 0
    assert pd.read_csv(out / "per_candidate.csv").equals(first)
    # another candidate method is another option: every case evaluated again, other candidates
    code = main(
        [
            "evaluate",
            str(root / "gt"),
            "--probabilities",
            str(root / "prob"),
            "--out",
            str(out),
            "--metrics",
            "dice",
            "--candidates",
            "threshold:0.5",
            "--quiet",
            "--resume",
        ]
    )
    assert code == 0
    again = pd.read_csv(out / "per_candidate.csv")
    assert (again["confidence"] >= 0.5).all() and len(again) < len(first)
    assert not (out / "per_prediction.csv").exists()  # stale table of the earlier run removed


def test_workers_give_the_same_tables(folders):
    root, _ = folders
    one = evaluate_dataset(root / "gt", probabilities=root / "prob", metrics=["dice"], progress=False)
    two = evaluate_dataset(root / "gt", probabilities=root / "prob", metrics=["dice"], progress=False, workers=2)
    pd.testing.assert_frame_equal(one.per_candidate, two.per_candidate)
    pd.testing.assert_frame_equal(one.per_case, two.per_case)


def test_prediction_components_with_mean_confidence(folders, tmp_path):
    root, arrays = folders
    (tmp_path / "pred").mkdir()
    for case, (_gt, prob) in arrays.items():
        save_image(tmp_path / "pred" / f"{case}.nii.gz", (prob > 0.25).astype(np.uint8), spacing=SPACING)
    result = evaluate_dataset(
        root / "gt", tmp_path / "pred", ["dice"], probabilities=root / "prob", confidence="mean", progress=False
    )
    for case, (_gt, prob) in arrays.items():
        c = find_candidates(prob, prediction=prob > 0.25, confidence="mean")
        rows = result.per_candidate[result.per_candidate["case"] == case]
        assert rows["confidence"].to_numpy() == pytest.approx(c.confidence)
        assert rows["volume"].tolist() == c.volumes.tolist()


def test_nnunet_npz_beside_its_segmentation(tmp_path):
    """nnU-Net's --save_probabilities layout: CASE.nii.gz (segmentation) and CASE.npz (C, z, y, x) side by side."""
    rng = np.random.default_rng(3)
    (tmp_path / "gt").mkdir()
    (tmp_path / "nnunet").mkdir()
    expected = {}
    for i in range(3):
        gt, prob = make_case(rng, 2, 1)
        image = sitk.GetImageFromArray(gt.T.copy())  # SimpleITK's array order is (z, y, x)
        image.SetSpacing(SPACING)
        sitk.WriteImage(image, str(tmp_path / "gt" / f"c{i}.nii.gz"))
        seg = sitk.GetImageFromArray((prob > 0.5).astype(np.uint8).T.copy())
        seg.CopyInformation(image)
        sitk.WriteImage(seg, str(tmp_path / "nnunet" / f"c{i}.nii.gz"))
        zyx = prob.T  # what nnU-Net writes: (C, z, y, x)
        np.savez_compressed(tmp_path / "nnunet" / f"c{i}.npz", probabilities=np.stack([1 - zyx, zyx]))
        expected[f"c{i}"] = find_candidates(prob).confidence
    (tmp_path / "nnunet" / "plans.json").write_text("{}")
    result = evaluate_dataset(tmp_path / "gt", probabilities=tmp_path / "nnunet", metrics=["dice"], progress=False)
    assert (result.per_case["status"] == "ok").all() | (result.per_case["flags"] == "empty_gt").all()
    for case, conf in expected.items():
        rows = result.per_candidate[result.per_candidate["case"] == case]
        assert rows["confidence"].to_numpy() == pytest.approx(conf)


def test_bad_maps_are_error_rows_and_nothing_is_dropped(tmp_path):
    rng = np.random.default_rng(5)
    for d in ("gt", "prob"):
        (tmp_path / d).mkdir()
    for i in range(5):
        gt, prob = make_case(rng, 1, 0)
        save_image(tmp_path / "gt" / f"c{i}.nii.gz", gt, spacing=SPACING)
        if i == 1:
            prob[0, 0, 0] = np.nan
        if i == 2:
            prob[0, 0, 0] = 1.5
        if i == 3:
            save_image(tmp_path / "prob" / f"c{i}.nii.gz", prob[:-1], spacing=SPACING)
            continue
        if i != 4:
            save_image(tmp_path / "prob" / f"c{i}.nii.gz", prob, spacing=SPACING)
    save_image(tmp_path / "prob" / "orphan.nii.gz", np.zeros(SHAPE, np.float32), spacing=SPACING)
    result = evaluate_dataset(tmp_path / "gt", probabilities=tmp_path / "prob", metrics=["dice"], progress=False)
    rows = result.per_case.set_index("case")
    assert rows.loc["c0", "status"] != "error"
    assert "NaN" in rows.loc["c1", "error"]
    assert "1.5" in rows.loc["c2", "error"]
    assert "shape" in rows.loc["c3", "error"]
    assert "no probability map for case 'c4'" in rows.loc["c4", "error"] and rows.loc["c4", "prob_file"] == ""
    assert "no ground truth for this probability map" in rows.loc["orphan", "error"]
    curves = result.detection_curves(n_resamples=0)[1]
    assert curves.n_cases == 1  # the failed cases are no cases of the curves (result.errors lists them)


def test_arguments_checked():
    gt = np.zeros((8, 8), np.uint8)
    arrays = evaluate_dataset({"a": (gt, gt)}, probabilities={"a": gt.astype(np.float32)}, classes=[1], progress=False)
    assert "as a file (nnU-Net's .npz)" in arrays.per_case["error"].iloc[0]
    with pytest.raises(ValueError, match="regions"):
        evaluate_dataset({"a": (gt, gt)}, probabilities={"a": gt}, classes="wt=1+2", progress=False)
    with pytest.raises(ValueError, match="not both"):
        evaluate_dataset({"a": (gt, gt)}, probabilities={"a": gt}, classes=[1], channel=1, progress=False)
    with pytest.raises(ValueError, match="give the predictions too"):
        evaluate_dataset(os.path.dirname(__file__), probabilities=os.path.dirname(__file__), classes=[1])
    with pytest.raises(ValueError, match="give the maps too"):
        evaluate_dataset({"a": (gt, gt)}, candidates="dynamic", progress=False)
    with pytest.raises(ValueError, match="confidence='mean'"):
        evaluate_dataset({"a": (gt, gt)}, probabilities={"a": gt}, candidates="components", confidence="mean")
    with pytest.raises(NotADirectoryError, match="probabilities folder"):
        evaluate_dataset(os.devnull, probabilities="/nonexistent/folder", progress=False)


def test_mapping_input():
    gt = np.zeros((12, 12), np.uint8)
    gt[2:5, 2:5] = 1
    prob = np.zeros((12, 12), np.float32)
    prob[2:5, 2:4] = 0.75
    prob[9, 9] = 0.5
    result = evaluate_dataset(
        {"a": (gt, (prob > 0.6).astype(np.uint8))}, metrics=["dice"], probabilities={"a": prob}, progress=False
    )
    assert result.per_candidate["outcome"].tolist() == ["tp"]  # the prediction's one component
    result = evaluate_dataset(
        {"a": (gt, None)}, metrics=["dice"], probabilities={"a": prob}, candidates="components", progress=False
    )
    assert result.per_candidate["outcome"].tolist() == ["tp", "fp"]
    # no case holds a prediction: the segmentation is prob > 0.5, not a missing prediction
    assert result.per_case["flags"].iloc[0] == "" and result.per_case["pred_volume"].iloc[0] == int((prob > 0.5).sum())


def test_thresholds_table_equals_the_sweep_and_is_written(folders, tmp_path):
    from ccmetrics.metrics.thresholds import sweep

    root, arrays = folders
    result = evaluate_dataset(
        root / "gt",
        probabilities=root / "prob",
        metrics=["dice", "hd95"],
        thresholds="0.25:0.75:0.25",
        spacing="voxel",
        progress=False,
    )
    for case in arrays:
        expected = sweep(
            load_image(root / "prob" / f"{case}.nii.gz").array,
            load_image(root / "gt" / f"{case}.nii.gz").array,
            (0.25, 0.5, 0.75),
            ["dice", "hd95"],
            case=case,
        )
        got = result.thresholds[result.thresholds["case"] == case].reset_index(drop=True)
        pd.testing.assert_frame_equal(got[expected.columns], expected, check_dtype=False)
    written = result.write(tmp_path / "out", plots=True, n_resamples=50)
    assert (tmp_path / "out" / "thresholds.csv").is_file() and (tmp_path / "out" / "plots" / "thresholds.png").is_file()
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert doc["thresholds"]["best"] == result.threshold_summary()[1]
    back = DatasetResult.read(tmp_path / "out")
    pd.testing.assert_frame_equal(back.thresholds, result.thresholds, check_dtype=False)
    assert "thresholds" in written
    with pytest.raises(ValueError, match="give the maps too"):
        evaluate_dataset(root / "gt", root / "gt", thresholds="0.5", progress=False)


def test_calibration_per_case_and_in_the_summary(folders, tmp_path):
    from ccmetrics.metrics.calibration import lesion_reliability, voxel_calibration

    root, _ = folders
    result = evaluate_dataset(root / "gt", probabilities=root / "prob", metrics=["dice"], progress=False)
    for row in result.per_case.itertuples():
        expected = voxel_calibration(
            load_image(root / "prob" / f"{row.case}.nii.gz").array, load_image(root / "gt" / f"{row.case}.nii.gz").array
        )
        assert row.brier == expected["brier"] and row.ece == expected["ece"]
    calibration = result.calibration(n_resamples=100)[1]
    assert calibration["brier"]["value"] == pytest.approx(result.per_case["brier"].mean())
    assert calibration["lesion_ece"] == lesion_reliability(result.per_candidate).attrs["ece"]
    result.write(tmp_path / "out", n_resamples=100)
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert doc["calibration"]["1"]["brier"] == calibration["brier"]
    assert len(doc["calibration"]["1"]["lesion_reliability"]) == 10
    assert (tmp_path / "out" / "plots" / "reliability.png").is_file()


def test_cli_compare_detection_curves(folders, tmp_path, capsys):
    root, arrays = folders
    (tmp_path / "noisy").mkdir()
    rng = np.random.default_rng(11)
    for case, (_gt, prob) in arrays.items():
        noisy = np.where(prob > 0, rng.uniform(0.05, 1.0), 0).astype(np.float32)
        save_image(tmp_path / "noisy" / f"{case}.nii.gz", noisy, spacing=SPACING)
    for name, maps in (("a", root / "prob"), ("b", tmp_path / "noisy")):
        assert (
            main(
                [
                    "evaluate",
                    str(root / "gt"),
                    "--probabilities",
                    str(maps),
                    "--out",
                    str(tmp_path / name),
                    "--metrics",
                    "dice",
                    "--quiet",
                    "--no-plots",
                    "--bootstrap",
                    "50",
                ]
            )
            == 0
        )
    capsys.readouterr()
    code = main(
        [
            "compare",
            str(tmp_path / "a"),
            str(tmp_path / "b"),
            "--metric",
            "cpm",
            "--bootstrap",
            "100",
            "--out",
            str(tmp_path / "cmp"),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "b - a: detection curves on 10 paired cases" in text and "cpm" in text
    table = pd.read_csv(tmp_path / "cmp" / "comparison_curves.csv").set_index("metric")
    a = DatasetResult.read(tmp_path / "a").detection_curves(n_resamples=0)[1]
    b = DatasetResult.read(tmp_path / "b").detection_curves(n_resamples=0)[1]
    assert table.loc["cpm", "difference"] == pytest.approx(b.cpm - a.cpm)
    assert table.loc["ap", "a"] == pytest.approx(b.ap) and table.loc["ap", "b"] == pytest.approx(a.ap)
    # a folder without probability maps is refused with the fix
    assert (
        main(
            [
                "evaluate",
                str(root / "gt"),
                str(root / "gt"),
                "--out",
                str(tmp_path / "plain"),
                "--metrics",
                "dice",
                "--quiet",
                "--no-plots",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "plain"), "--metric", "ap"]) == 2
    assert "plain holds no per_candidate.csv" in capsys.readouterr().err


def test_classes_read_their_channels_of_nnunet_npz(tmp_path):
    """Label maps with two classes: channel c of nnU-Net's (3, z, y, x) npz is class c's map, matched to gt == c."""
    rng = np.random.default_rng(21)
    for d in ("gt", "nnunet"):
        (tmp_path / d).mkdir()
    expected = {}
    for i in range(4):
        gt = np.zeros(SHAPE, np.uint8)
        probs = np.zeros((3, *SHAPE), np.float32)
        for label in (1, 2):
            g, p = make_case(rng, 2, 1)
            gt[g > 0] = label
            probs[label] = p
        probs[0] = 1 - np.clip(probs[1] + probs[2], 0, 1)
        seg = np.argmax(probs, axis=0).astype(np.uint8)
        save_image(tmp_path / "gt" / f"c{i}.nii.gz", gt, spacing=SPACING)
        save_image(tmp_path / "nnunet" / f"c{i}.nii.gz", seg, spacing=SPACING)
        np.savez_compressed(tmp_path / "nnunet" / f"c{i}.npz", probabilities=probs.transpose(0, 3, 2, 1))
        for label in (1, 2):
            cand = find_candidates(probs[label], prediction=seg == label)
            expected[(f"c{i}", label)] = match_candidates(cand, find_sites(gt == label), "iou:0.1")
    result = evaluate_dataset(
        tmp_path / "gt",
        tmp_path / "nnunet",
        ["dice"],
        classes=[1, 2],
        probabilities=tmp_path / "nnunet",
        progress=False,
    )
    assert (result.per_case["status"] != "error").all()
    for (case, label), m in expected.items():
        rows = result.per_candidate[(result.per_candidate["case"] == case) & (result.per_candidate["class"] == label)]
        assert rows["outcome"].tolist() == m.outcome.tolist()
        assert rows["confidence"].tolist() == m.confidence.tolist()
        row = result.per_case[(result.per_case["case"] == case) & (result.per_case["class"] == label)].iloc[0]
        assert row["case_confidence"] == m.case_confidence
    # the per-class values equal evaluate(classes=...) without maps
    plain = evaluate_dataset(tmp_path / "gt", tmp_path / "nnunet", ["dice"], classes=[1, 2], progress=False)
    assert plain.per_case["cc_dice"].tolist() == result.per_case["cc_dice"].tolist()
    curves = result.detection_curves(n_resamples=0)
    assert sorted(curves) == [1, 2]
    for label in (1, 2):
        direct = detection_curves([expected[(f"c{i}", label)] for i in range(4)], n_resamples=0)
        assert curves[label].ap == direct.ap and curves[label].cpm == direct.cpm


def test_ignore_label_leaves_the_maps_ignored_voxels_out(tmp_path):
    """nnU-Net's ignore label: no candidate, no calibration voxel, no thresholded voxel in the ignored region."""
    from ccmetrics.metrics.calibration import voxel_calibration

    (tmp_path / "gt").mkdir()
    (tmp_path / "nnunet").mkdir()
    gt = np.full(SHAPE, 2, np.uint8)  # class 2 everywhere but ...
    gt[1:4, 1:4, 1:4] = 1  # ... one lesion of class 1
    gt[10:14, 10:14, 5:9] = 3  # ... and an unannotated block (ignore label 3)
    probs = np.zeros((4, *SHAPE), np.float32)
    probs[1][1:4, 1:4, 1:4] = 0.9
    probs[1][10:14, 10:14, 5:9] = 0.95  # confident inside the ignored block
    probs[2] = (gt == 2) * np.float32(0.8)
    probs[0] = np.clip(1 - probs[1] - probs[2], 0, 1)
    seg = np.where(gt == 3, 1, gt).astype(np.uint8)  # the model calls the ignored block class 1
    save_image(tmp_path / "gt" / "c.nii.gz", gt, spacing=SPACING)
    save_image(tmp_path / "nnunet" / "c.nii.gz", seg, spacing=SPACING)
    np.savez_compressed(tmp_path / "nnunet" / "c.npz", probabilities=probs.transpose(0, 3, 2, 1))
    result = evaluate_dataset(
        tmp_path / "gt",
        tmp_path / "nnunet",
        ["dice"],
        classes=[1],
        ignore_label=3,
        candidates="components",
        probabilities=tmp_path / "nnunet",
        thresholds="0.5",
        progress=False,
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "ok" and row["dice"] == 1.0
    assert result.per_candidate["outcome"].tolist() == ["tp"] and row["case_confidence"] == pytest.approx(0.9)
    assert result.thresholds["dice"].tolist() == [1.0]
    expected = voxel_calibration(np.where(gt == 3, 0, probs[1]), gt == 1, ignore=gt == 3)
    assert row["brier"] == pytest.approx(expected["brier"]) and row["ece"] == pytest.approx(expected["ece"])
    kept = gt != 3
    assert row["brier"] == pytest.approx(np.mean((probs[1][kept].astype(float) - (gt[kept] == 1)) ** 2))


def test_region_based_dataset_json_reads_one_sigmoid_per_region(tmp_path):
    """nnU-Net's region-based models write one sigmoid per foreground entry of dataset.json, in its order, without a
    background channel (nnunetv2 2.8.1's LabelManager.foreground_regions; the order is checked against nnU-Net's own
    code by tests/crosscheck/nnunet_probability_channels.py)."""
    rng = np.random.default_rng(31)
    for d in ("gt", "nnunet"):
        (tmp_path / d).mkdir()
    labels = {"background": 0, "whole tumor": [1, 2], "core": 2}
    (tmp_path / "dataset.json").write_text(
        json.dumps({"labels": labels, "regions_class_order": [1, 2], "file_ending": ".nii.gz"})
    )
    expected = {}
    for i in range(3):
        gt = np.zeros(SHAPE, np.uint8)
        g1, p1 = make_case(rng, 2, 1)
        gt[g1 > 0] = 1
        core = g1 & (rng.uniform(size=SHAPE) < 0.6)
        gt[core > 0] = 2
        sig = np.stack([p1, np.where(core > 0, p1 * 0.9, 0).astype(np.float32)])  # whole tumour, core
        seg = np.where(sig[1] > 0.5, 2, np.where(sig[0] > 0.5, 1, 0)).astype(np.uint8)
        save_image(tmp_path / "gt" / f"c{i}.nii.gz", gt, spacing=SPACING)
        save_image(tmp_path / "nnunet" / f"c{i}.nii.gz", seg, spacing=SPACING)
        np.savez_compressed(tmp_path / "nnunet" / f"c{i}.npz", probabilities=sig.transpose(0, 3, 2, 1))
        for value, region in ((1, (1, 2)), (2, (2,))):
            gt_mask, pred_mask = np.isin(gt, region), np.isin(seg, region)
            cand = find_candidates(sig[value - 1], prediction=pred_mask)
            expected[(f"c{i}", value)] = match_candidates(cand, find_sites(gt_mask), "iou:0.1")
    result = evaluate_dataset(
        tmp_path / "gt",
        tmp_path / "nnunet",
        ["dice"],
        dataset_json=tmp_path / "dataset.json",
        probabilities=tmp_path / "nnunet",
        progress=False,
    )
    assert (result.per_case["status"] != "error").all()
    assert result.options["probabilities"]["class_channels"] == [[1, 0], [2, 1]]
    for (case, value), m in expected.items():
        rows = result.per_candidate[(result.per_candidate["case"] == case) & (result.per_candidate["class"] == value)]
        assert rows["confidence"].tolist() == m.confidence.tolist()
        assert rows["outcome"].tolist() == m.outcome.tolist()
    # regions given without the dataset.json: their channels are unknown, refused with the fix
    with pytest.raises(ValueError, match="dataset.json"):
        evaluate_dataset(
            tmp_path / "gt",
            tmp_path / "nnunet",
            ["dice"],
            classes="wt=1+2,core=2",
            probabilities=tmp_path / "nnunet",
            progress=False,
        )
