"""nnU-Net data sets: labels and regions as classes, the ignore label, dataset.json, nnunet_summary.json.

The nnU-Net summary is checked against an independent computation written here from nnU-Net v2's
published definitions (``nnunetv2/evaluation/evaluate_predictions.py``: ``region_or_label_to_mask``,
``compute_tp_fp_fn_tn`` with the ignore mask taken from the reference, Dice and IoU NaN when
TP + FP + FN = 0, ``np.nanmean`` over cases, ``np.mean`` over the labels/regions), on files read with
SimpleITK as nnU-Net's default reader does.
"""

import json
import math
import subprocess
import sys

import nibabel as nib
import numpy as np
import pandas as pd
import pytest
import SimpleITK as sitk

from ccmetrics import evaluate, evaluate_dataset
from ccmetrics.metrics.classes import ClassSpec, parse_classes, read_dataset_json, remove_ignored

BRATS = {"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3], "enhancing tumor": 3}


def brats_case(seed, shape=(40, 36, 30), ignore=None):
    """A label map: edema (1) around a core (2) holding enhancing tumour (3), a second small lesion,
    and with ``ignore`` a slab of unannotated voxels."""
    rng = np.random.default_rng(seed)
    grid = np.indices(shape).astype(float)
    out = np.zeros(shape, np.uint8)
    for k in range(2):
        centre = rng.uniform(8, np.array(shape) - 8)
        r = np.sqrt(((grid - centre[:, None, None, None]) ** 2).sum(0))
        size = rng.uniform(3, 7) * (1.0 if k == 0 else 0.5)
        out[r < size * 1.6] = 1
        out[r < size] = 2
        out[r < size * 0.5] = 3
    if ignore is not None:
        out[:, :, : 2 + seed % 3] = ignore
    return out


def degrade(labels, seed):
    rng = np.random.default_rng(seed)
    out = np.roll(labels, rng.integers(-2, 3, 3), axis=(0, 1, 2)).copy()
    out[(rng.random(labels.shape) < 0.01) & (out == 0)] = 2  # scattered false positives
    out[out == 4] = 0  # a prediction has no ignore label
    return out


# ---------------------------------------------------------------- classes


def test_parse_classes_spellings_and_errors():
    assert parse_classes("1,2") == (ClassSpec(1, "1", (1,)), ClassSpec(2, "2", (2,)))
    assert [c.value for c in parse_classes("wt=1+2+3, et=3")] == [1, 2]
    assert parse_classes([ClassSpec(7, "x", (1, 2))])[0].nnunet_key == "(1, 2)"
    for bad, message in [
        ("", "classes is empty"),
        ("a=1,a=2", "names must be distinct"),
        ("wt=1+1", "repeats a label"),
        ("bg=0", "label 0, the background"),
        ("x=1+y", "not an integer label"),
        ("1,1", "must be distinct"),
        ("a=1,b=1", "same label"),
        ("=1", "class name"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_classes(bad)


def test_regions_equal_evaluate_on_the_unions():
    gt, pred = brats_case(1), degrade(brats_case(1), 2)
    got = evaluate(pred, gt, ["dice", "hd95", "detection"], classes="wt=1+2+3,tc=2+3,et=3", spacing=(1, 1, 2))
    for value, labels in ((1, [1, 2, 3]), (2, [2, 3]), (3, [3])):
        want = evaluate(np.isin(pred, labels), np.isin(gt, labels), ["dice", "hd95", "detection"], spacing=(1, 1, 2))
        assert got[value].standard == want.standard and got[value].cc == want.cc
        assert got[value].case_scores == pytest.approx(want.case_scores, nan_ok=True)
        pd.testing.assert_frame_equal(got[value].per_component, want.per_component)


def test_ignore_label_is_background_in_both_masks():
    gt, pred = brats_case(3, ignore=4), degrade(brats_case(3), 4)
    pred[:, :, :3] = 2  # predicted tumour core under the unannotated slab: must not count
    got = evaluate(pred, gt, ["dice", "nsd", "detection"], classes="tc=2+3", ignore_label=4)[1]
    ignored = gt == 4
    g, p = np.isin(gt, [2, 3]) & ~ignored, np.isin(pred, [2, 3]) & ~ignored
    want = evaluate(p, g, ["dice", "nsd", "detection"])
    assert got.standard == want.standard and got.cc == want.cc
    # nnU-Net's Dice: TP, FP, FN counted outside the ignored voxels
    mask_ref, mask_pred = np.isin(gt, [2, 3]), np.isin(pred, [2, 3])
    tp = np.sum(mask_ref & mask_pred & ~ignored)
    fp = np.sum(~mask_ref & mask_pred & ~ignored)
    fn = np.sum(mask_ref & ~mask_pred & ~ignored)
    assert got.standard["dice"] == 2 * tp / (2 * tp + fp + fn)
    a, b, n = remove_ignored(gt, pred, 4)
    assert n == int(ignored.sum()) and not (a == 4).any() and (b[ignored] == 0).all() and (gt == 4).any()
    with pytest.raises(ValueError, match="pass classes"):
        evaluate(pred > 0, gt > 0, ["dice"], ignore_label=4)


def test_read_dataset_json_and_its_errors(tmp_path):
    path = tmp_path / "dataset.json"
    path.write_text(
        json.dumps({"labels": {**BRATS, "ignore": 4}, "regions_class_order": [1, 2, 3], "file_ending": ".nii.gz"})
    )
    spec = read_dataset_json(path)
    assert [(c.value, c.name, c.labels) for c in spec.classes] == [
        (1, "whole tumor", (1, 2, 3)),
        (2, "tumor core", (2, 3)),
        (3, "enhancing tumor", (3,)),
    ]
    assert spec.ignore_label == 4 and spec.file_ending == ".nii.gz" and spec.has_regions
    for doc, message in [
        ({"labels": {"background": 0, "a": 1}}, "file_ending"),
        ({"file_ending": ".nii.gz"}, "no 'labels' mapping"),
        ({"labels": BRATS, "file_ending": ".nii.gz"}, "regions_class_order"),
        ({"labels": {"background": 0, "a": "x"}, "file_ending": ".nii.gz"}, "not an integer label"),
        ({"labels": {"background": 0}, "file_ending": ".nii.gz"}, "no foreground label"),
    ]:
        path.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match=message):
            read_dataset_json(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_dataset_json(path)


# ---------------------------------------------------------------- a data set and nnU-Net's summary


def nnunet_reference(gt_dir, pred_dir, regions_or_labels, ignore_label, ending):
    """nnU-Net v2's compute_metrics_on_folder, written from its definitions (SimpleITK reads)."""

    def read(path):
        return sitk.GetArrayFromImage(sitk.ReadImage(str(path)))

    def mask(seg, r):
        return np.isin(seg, r) if isinstance(r, tuple) else seg == r

    results = []
    for pred_file in sorted(p for p in pred_dir.iterdir() if p.name.endswith(ending)):
        ref_file = gt_dir / pred_file.name
        seg_ref, seg_pred = read(ref_file), read(pred_file)
        use = ~(seg_ref == ignore_label) if ignore_label is not None else np.ones(seg_ref.shape, bool)
        metrics = {}
        for r in regions_or_labels:
            ref, pred = mask(seg_ref, r), mask(seg_pred, r)
            tp, fp = int(np.sum(ref & pred & use)), int(np.sum(~ref & pred & use))
            fn, tn = int(np.sum(ref & ~pred & use)), int(np.sum(~ref & ~pred & use))
            dice, iou = (
                (math.nan, math.nan) if tp + fp + fn == 0 else (2 * tp / (2 * tp + fp + fn), tp / (tp + fp + fn))
            )
            metrics[str(r)] = {
                "Dice": dice,
                "IoU": iou,
                "FP": fp,
                "TP": tp,
                "FN": fn,
                "TN": tn,
                "n_pred": fp + tp,
                "n_ref": fn + tp,
            }
        results.append({"metrics": metrics, "prediction_file": str(pred_file), "reference_file": str(ref_file)})
    mean = {}
    for r in map(str, regions_or_labels):
        mean[r] = {m: float(np.nanmean([c["metrics"][r][m] for c in results])) for m in results[0]["metrics"][r]}
    foreground = {
        m: float(np.mean([mean[k][m] for k in mean if k != "0"]))
        for m in results[0]["metrics"][str(regions_or_labels[0])]
    }
    return {"metric_per_case": results, "mean": mean, "foreground_mean": foreground}


def write_nifti(path, array, spacing=(1.0, 1.0, 2.0)):
    nib.save(nib.Nifti1Image(array, np.diag([*spacing, 1.0])), str(path))


@pytest.fixture(scope="module")
def brats_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("brats")
    gt_dir, pred_dir = root / "labelsTr", root / "pred"
    gt_dir.mkdir()
    pred_dir.mkdir()
    for i in range(4):
        gt = brats_case(10 + i, ignore=4)
        pred = degrade(brats_case(10 + i), 20 + i)
        if i == 3:
            pred[np.isin(pred, [3])] = 2  # no enhancing tumour predicted in this case
            gt[gt == 3] = 2  # and none annotated: Dice of label 3 is NaN (TP + FP + FN = 0)
        write_nifti(gt_dir / f"BraTS_{i:03d}.nii.gz", gt)
        write_nifti(pred_dir / f"BraTS_{i:03d}.nii.gz", pred)
    write_nifti(pred_dir / "BraTS_999.nii", np.zeros((4, 4, 4), np.uint8))  # not the file_ending: ignored
    dataset_json = root / "dataset.json"
    labels = {**BRATS, "ignore": 4}
    dataset_json.write_text(json.dumps({"labels": labels, "regions_class_order": [1, 2, 3], "file_ending": ".nii.gz"}))
    out = root / "out"
    cmd = [sys.executable, "-m", "ccmetrics", "evaluate", str(gt_dir), str(pred_dir), "--out", str(out)]
    cmd += ["--dataset-json", str(dataset_json), "--nnunet-summary", "--metrics", "dice,hd95,lesion_dice,detection"]
    cmd += ["--quiet", "--no-plots", "--bootstrap", "100"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return {"gt": gt_dir, "pred": pred_dir, "out": out, "json": dataset_json, "stdout": run.stdout}


@pytest.mark.slow
def test_nnunet_summary_equals_nnunets_computation(brats_dataset):
    got = json.loads((brats_dataset["out"] / "nnunet_summary.json").read_text())
    want = nnunet_reference(brats_dataset["gt"], brats_dataset["pred"], [(1, 2, 3), (2, 3), 3], 4, ".nii.gz")
    assert [c["metrics"].keys() for c in got["metric_per_case"]] == [
        c["metrics"].keys() for c in want["metric_per_case"]
    ]
    assert list(got["metric_per_case"][0]["metrics"]) == ["(1, 2, 3)", "(2, 3)", "3"]
    nnunet_keys = ("Dice", "IoU", "FP", "TP", "FN", "TN", "n_pred", "n_ref")
    for g, w in zip(got["metric_per_case"], want["metric_per_case"]):
        assert g["prediction_file"].endswith(w["prediction_file"].split("/")[-1])
        for key, values in w["metrics"].items():
            for name in nnunet_keys:
                a, b = g["metrics"][key][name], values[name]
                assert (math.isnan(a) and math.isnan(b)) or a == b, (key, name, a, b)
            assert "cc_dice" in g["metrics"][key] and "lesion_dice" in g["metrics"][key]
    assert math.isnan(got["metric_per_case"][3]["metrics"]["3"]["Dice"])  # the NaN case is really exercised
    for key in want["mean"]:
        for name in nnunet_keys:
            assert got["mean"][key][name] == pytest.approx(want["mean"][key][name], rel=1e-12), (key, name)
    for name in nnunet_keys:
        assert got["foreground_mean"][name] == pytest.approx(want["foreground_mean"][name], rel=1e-12)
    assert got["left_out"] == []


def test_dataset_json_classes_names_ignore_and_file_ending(brats_dataset):
    cases = pd.read_csv(brats_dataset["out"] / "per_case.csv")
    assert cases["case"].unique().tolist() == [f"BraTS_{i:03d}" for i in range(4)]  # the .nii file left out
    assert cases["class"].tolist()[:3] == [1, 2, 3]
    assert cases["class_name"].tolist()[:3] == ["whole tumor", "tumor core", "enhancing tumor"]
    doc = json.loads((brats_dataset["out"] / "summary.json").read_text())
    assert doc["options"]["ignore_label"] == 4
    assert any(f.endswith("BraTS_999.nii") for f in doc["ignored_files"])
    comps = pd.read_csv(brats_dataset["out"] / "per_component.csv")
    assert set(comps["class_name"]) == {"whole tumor", "tumor core", "enhancing tumor"}
    # each region's row equals evaluate() on the unions with the ignored voxels removed
    gt = nib.load(str(brats_dataset["gt"] / "BraTS_001.nii.gz")).get_fdata().astype(np.uint8)
    pred = nib.load(str(brats_dataset["pred"] / "BraTS_001.nii.gz")).get_fdata().astype(np.uint8)
    g, p, _ = remove_ignored(gt, pred, 4)
    want = evaluate(np.isin(p, [2, 3]), np.isin(g, [2, 3]), ["dice", "hd95"], spacing=(1.0, 1.0, 2.0))
    row = cases[(cases["case"] == "BraTS_001") & (cases["class"] == 2)].iloc[0]
    assert row["dice"] == want.standard["dice"] and row["cc_hd95"] == pytest.approx(want.cc["hd95"], rel=1e-12)
    assert "nnunet_summary.json" in brats_dataset["stdout"]


def test_dataset_json_refuses_classes_too(brats_dataset):
    with pytest.raises(ValueError, match="leave classes and ignore_label out"):
        evaluate_dataset(brats_dataset["gt"], brats_dataset["pred"], dataset_json=brats_dataset["json"], classes=[1])
    with pytest.raises(ValueError, match="give the classes too"):
        evaluate_dataset(brats_dataset["gt"], brats_dataset["pred"], ignore_label=4)


def test_voxel_counts_of_binary_masks_and_labels_equal_a_direct_count(tmp_path):
    """TP/FP/FN/TN come from the evaluation's own counts: checked by counting the masks here, for binary masks
    (an empty GT, a missing prediction) and for labels 1 and 2 of label maps."""
    rng = np.random.default_rng(5)
    shape = (20, 18, 12)
    for kind in ("binary", "labels"):
        gt_dir, pred_dir = tmp_path / kind / "gt", tmp_path / kind / "pred"
        gt_dir.mkdir(parents=True)
        pred_dir.mkdir(parents=True)
        top = 2 if kind == "binary" else 3
        cases = {}
        for i in range(4):
            gt = (rng.random(shape) < 0.2) * rng.integers(1, top, shape)
            pred = (rng.random(shape) < 0.2) * rng.integers(1, top, shape)
            if i == 1:
                gt[:] = 0  # an empty GT
            cases[f"c{i}"] = (gt.astype(np.uint8), pred.astype(np.uint8))
            write_nifti(gt_dir / f"c{i}.nii.gz", cases[f"c{i}"][0])
            if i != 2:  # c2: no prediction, evaluated as empty
                write_nifti(pred_dir / f"c{i}.nii.gz", cases[f"c{i}"][1])
            else:
                cases["c2"] = (cases["c2"][0], np.zeros(shape, np.uint8))
        classes = None if kind == "binary" else [1, 2]
        result = evaluate_dataset(gt_dir, pred_dir, ["dice"], classes=classes, nnunet_summary=True, progress=False)
        assert len(result.per_case) == (4 if kind == "binary" else 8)
        for _, row in result.per_case.iterrows():
            gt, pred = cases[row["case"]]
            c = row["class"]
            g, p = (gt > 0, pred > 0) if kind == "binary" else (gt == c, pred == c)
            expected = (np.sum(g & p), np.sum(~g & p), np.sum(g & ~p), np.sum(~g & ~p))
            counts = tuple(row[f"{n}_voxels"] for n in ("tp", "fp", "fn", "tn"))
            assert counts == expected, (kind, row["case"], c)
