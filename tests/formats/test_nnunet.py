"""nnU-Net data sets: labels and regions as classes, the ignore label, dataset.json, nnunet_summary.json.

The nnU-Net summary is checked against an independent computation written here from nnU-Net v2's
published definitions (``nnunetv2/evaluation/evaluate_predictions.py``: ``region_or_label_to_mask``,
``compute_tp_fp_fn_tn`` with the ignore mask taken from the reference, Dice and IoU NaN when
TP + FP + FN = 0, ``np.nanmean`` over the cases in the sorted order of the prediction files, ``np.mean``
over the labels/regions, keys ``label_or_region_to_key``: ``str`` of the label or of the region's tuple), on
files read with SimpleITK as nnU-Net's default reader does. Floats are compared bit for bit.
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

from ccmetrics import evaluate, evaluate_dataset, schema
from ccmetrics.formats.classes import ClassSpec, parse_classes, remove_ignored
from ccmetrics.formats.nnunet import read_dataset_json
from ccmetrics.results.nnunet import nnunet_summary

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


def test_nnunet_keys_of_every_way_to_write_a_label_or_region(tmp_path):
    """nnU-Net keys what it evaluates with ``str()`` (``label_or_region_to_key``): a data set with a region of
    two or more labels evaluates every list or tuple as a tuple, ``[3]`` as ``(3,)`` (keyed "(3,)"), and an int
    as the int; a data set without one evaluates labels only, ``[3]`` as 3 (``LabelManager.has_regions``)."""
    path = tmp_path / "dataset.json"
    labels = {"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3], "enhancing tumor": [3], "edema": 1}
    path.write_text(json.dumps({"labels": labels, "regions_class_order": [1, 2, 3, 1], "file_ending": ".nii.gz"}))
    classes = read_dataset_json(path).classes
    assert [c.nnunet_key for c in classes] == ["(1, 2, 3)", "(2, 3)", "(3,)", "1"]
    assert [c.one_label_region for c in classes] == [False, False, True, False]
    assert [c.labels for c in classes] == [(1, 2, 3), (2, 3), (3,), (1,)]  # the masks are unchanged
    assert [ClassSpec.from_dict(c.to_dict()) for c in classes] == list(classes)
    assert classes[2].to_dict() == {"value": 3, "name": "enhancing tumor", "labels": [3], "one_label_region": True}
    assert classes[3].to_dict() == {"value": 4, "name": "edema", "labels": [1]}  # other classes' records as before
    forms = [
        ({"a": (3,), "b": (1, 2)}, ["(3,)", "(1, 2)"]),  # tuples as lists
        ({"x": [3, 1, 2], "y": [2], "z": 1}, ["(3, 1, 2)", "(2,)", "1"]),  # a region's labels in the order given
        ({"b": 2, "a": [1]}, ["2", "1"]),  # no region of two or more labels: [1] is the label 1
        ({"a": (1,), "b": 2}, ["1", "2"]),
        ({"wt": [1, 2, 3], "et": 3}, ["(1, 2, 3)", "3"]),
    ]
    for form, keys in forms:
        assert [c.nnunet_key for c in parse_classes(form)] == keys, form
    assert parse_classes("wt=1+2+3,et=3")[1].nnunet_key == "3"  # text names labels and regions, no lists


# ---------------------------------------------------------------- a data set and nnU-Net's summary


def same_bits(a, b):
    """The same float, bit for bit (NaN equals NaN)."""
    return float(a).hex() == float(b).hex()


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
    cmd += ["--no-plots", "--bootstrap", "100"]  # not --quiet: the listing of the files written is checked
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
    for key in want["mean"]:  # bit for bit: nnU-Net's np.nanmean in its case order
        for name in nnunet_keys:
            assert same_bits(got["mean"][key][name], want["mean"][key][name]), (key, name)
    for name in nnunet_keys:
        assert same_bits(got["foreground_mean"][name], want["foreground_mean"][name]), name
    assert got["left_out"] == []


def summary_of(cases, classes):
    """``nnunet_summary`` of a ``per_case`` table holding the columns it reads: ``cases`` maps a case name to
    its prediction file's name and, per class value, TP, FP and FN (TN: the rest of 10**6 voxels)."""
    rows = []
    for case, (file_name, counts) in cases.items():
        for value, (tp, fp, fn) in counts.items():
            rows.append(
                {
                    schema.CASE: case,
                    schema.CLASS: value,
                    schema.STATUS: schema.OK,
                    schema.FLAGS: "",
                    schema.ERROR: "",
                    schema.GT_FILE: f"/gt/{file_name}",
                    schema.PRED_FILE: f"/pred/{file_name}",
                    schema.TP_VOXELS: tp,
                    schema.FP_VOXELS: fp,
                    schema.FN_VOXELS: fn,
                    schema.TN_VOXELS: 10**6 - tp - fp - fn,
                }
            )
    return nnunet_summary(pd.DataFrame(rows), {"classes": [c.to_dict() for c in classes]}, [])


def dice(tp, fp, fn):
    return math.nan if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def random_counts(rng, n_cases, values):
    """Per case and class value, TP, FP, FN of a few thousand voxels; about a third of them 0, 0, 0 (an absent
    label: Dice NaN)."""
    return [
        {v: (0, 0, 0) if rng.random() < 0.35 else tuple(int(x) for x in rng.integers(0, 3000, 3)) for v in values}
        for _ in range(n_cases)
    ]


def test_one_label_region_is_keyed_as_nnunet_keys_it_in_the_summary(tmp_path):
    """BraTS as nnU-Net's conversion scripts write it, ``"enhancing tumor": [3]``: nnU-Net's key is "(3,)"."""
    path = tmp_path / "dataset.json"
    labels = {**BRATS, "enhancing tumor": [3]}
    path.write_text(json.dumps({"labels": labels, "regions_class_order": [1, 2, 3], "file_ending": ".nii.gz"}))
    classes = read_dataset_json(path).classes
    counts = {1: (10, 2, 3), 2: (5, 0, 1), 3: (0, 0, 0)}
    got = summary_of({"c0": ("c0.nii.gz", counts), "c1": ("c1.nii.gz", counts)}, classes)
    assert list(got["mean"]) == ["(1, 2, 3)", "(2, 3)", "(3,)"]
    assert [list(c["metrics"]) for c in got["metric_per_case"]] == [["(1, 2, 3)", "(2, 3)", "(3,)"]] * 2
    assert got["metric_per_case"][0]["metrics"]["(2, 3)"]["Dice"] == 10 / 11
    assert math.isnan(got["mean"]["(3,)"]["Dice"]) and got["mean"]["(3,)"]["TN"] == 10**6


def test_means_are_numpy_nanmean_over_the_cases_in_order_bit_for_bit():
    """nnU-Net's ``mean`` is ``np.nanmean`` of the list of the cases' values, NaN included: it sums the array
    with NaN set to 0 (numpy's pairwise sum, eight partial sums), not the finite values alone. Counts are
    searched until the finite values' mean (the old computation) and their plain sum / count both differ from
    np.nanmean in the last bit, so the test tells the orders apart."""
    rng = np.random.default_rng(20240530)
    for _ in range(2000):
        counts = random_counts(rng, 30, [1])
        values = np.array([dice(*c[1]) for c in counts])
        finite = values[~np.isnan(values)]
        want = float(np.nanmean(values))
        if want != float(finite.mean()) and want != sum(finite.tolist()) / finite.size:
            break
    else:
        pytest.fail("no counts found whose nanmean differs from the finite values' mean")
    cases = {f"case_{i:02d}": (f"case_{i:02d}.nii.gz", c) for i, c in enumerate(counts)}
    got = summary_of(cases, parse_classes([1]))
    assert same_bits(got["mean"]["1"]["Dice"], want)
    assert not same_bits(got["mean"]["1"]["Dice"], float(finite.mean()))
    ious = [math.nan if sum(c[1]) == 0 else c[1][0] / sum(c[1]) for c in counts]
    assert same_bits(got["mean"]["1"]["IoU"], float(np.nanmean(ious)))
    assert got["mean"]["1"]["TP"] == float(np.mean([c[1][0] for c in counts]))
    assert same_bits(got["foreground_mean"]["Dice"], want)


def test_means_follow_nnunets_case_order_the_sorted_prediction_files():
    """nnU-Net averages its prediction files in their sorted order (and lists them so): ``case-00.nii.gz`` ...
    ``case-22.nii.gz`` come before ``case.nii.gz`` ('-' < '.') although the case ``case`` sorts before
    ``case-00``. Counts are searched until the two orders give np.nanmean values that differ in the last bit."""
    rng = np.random.default_rng(7)
    names = ["case"] + [f"case-{i:02d}" for i in range(23)]
    for _ in range(2000):
        counts = dict(zip(names, random_counts(rng, len(names), [1])))
        in_file_order = [dice(*counts[n][1]) for n in sorted(names, key=lambda n: f"{n}.nii.gz")]
        in_case_order = [dice(*counts[n][1]) for n in sorted(names)]
        want = float(np.nanmean(in_file_order))
        if want != float(np.nanmean(in_case_order)):
            break
    else:
        pytest.fail("no counts found whose mean depends on the case order")
    got = summary_of({n: (f"{n}.nii.gz", counts[n]) for n in names}, parse_classes([1]))
    assert same_bits(got["mean"]["1"]["Dice"], want)
    files = [c["prediction_file"].split("/")[-1] for c in got["metric_per_case"]]
    assert files == [f"case-{i:02d}.nii.gz" for i in range(23)] + ["case.nii.gz"]


def test_foreground_mean_is_numpy_mean_in_nnunets_order_of_the_labels(tmp_path):
    """A label-based dataset.json: nnU-Net evaluates its labels sorted (``foreground_labels``), whatever the
    order of ``labels``; ``foreground_mean`` is ``np.mean`` of their means in that order. Counts are searched
    until the file's order (2, 3, 1) gives another last bit."""
    path = tmp_path / "dataset.json"
    doc = {"labels": {"background": 0, "core": 2, "enhancing": 3, "edema": [1]}, "file_ending": ".nii.gz"}
    path.write_text(json.dumps(doc))
    classes = read_dataset_json(path).classes
    assert [c.value for c in classes] == [2, 3, 1]
    rng = np.random.default_rng(3)
    for _ in range(2000):
        counts = random_counts(rng, 10, [1, 2, 3])
        means = {v: float(np.nanmean([dice(*c[v]) for c in counts])) for v in (1, 2, 3)}
        want = float(np.mean([means[1], means[2], means[3]]))
        if not any(math.isnan(m) for m in means.values()) and want != float(np.mean([means[2], means[3], means[1]])):
            break
    else:
        pytest.fail("no counts found whose foreground mean depends on the order of the labels")
    got = summary_of({f"c{i}": (f"c{i}.nii.gz", c) for i, c in enumerate(counts)}, classes)
    assert all(same_bits(got["mean"][str(v)]["Dice"], means[v]) for v in (1, 2, 3))
    assert same_bits(got["foreground_mean"]["Dice"], want)
    assert list(got["mean"]) == ["1", "2", "3"]
    assert [list(c["metrics"]) for c in got["metric_per_case"]] == [["1", "2", "3"]] * len(counts)


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
