"""Outcome maps (``write_maps``, ``--write-maps``): each case's map, read back with nibabel, equals a map recomputed
here from the masks alone (scipy's labelling at the evaluation's connectivity and the detection rule's definition,
written out by hand), with the GT file's affine; the colour tables list every label; resume and overwrite write them.
"""

from __future__ import annotations

import os

import nibabel as nib
import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from ccmetrics import EvalOptions, RunOptions, evaluate_dataset
from ccmetrics.campaign.case import estimate_bytes
from ccmetrics.campaign.options import CaseTask
from ccmetrics.results.outcomes import OUTCOME_LABELS

SHAPE = (14, 12, 6)
#: anisotropic and rotated (axes swapped and flipped), with an origin: the map must keep it exactly
AFFINE = np.array(
    [
        [0.0, -0.8, 0.0, 12.5],
        [1.2, 0.0, 0.0, -40.0],
        [0.0, 0.0, 3.0, 7.25],
        [0.0, 0.0, 0.0, 1.0],
    ]
)
STRUCTURE = {26: np.ones((3, 3, 3), bool), 18: ndimage.generate_binary_structure(3, 2), 6: None}


def _save(path, array, affine=AFFINE):
    nib.save(nib.Nifti1Image(np.asarray(array, np.uint8), affine), str(path))


def reference_map(gt, pred, connectivity=26, rule="overlap"):
    """The outcome map from the masks alone: scipy's components, each lesion judged by the rule's definition on the
    union of the predicted components that overlap it, each component a true positive when it overlaps a detected
    lesion; lesion voxels 1 (found) or 2 (missed), predicted voxels outside the GT 3 (tp) or 4 (fp)."""
    structure = STRUCTURE[connectivity] if gt.ndim == 3 else (np.ones((3, 3), bool) if connectivity == 8 else None)
    gl, k = ndimage.label(gt, structure)
    pl, m = ndimage.label(pred, structure)
    detected = {}
    for lesion in range(1, k + 1):
        inside = gl == lesion
        comps = set(np.unique(pl[inside]).tolist()) - {0}
        union = np.isin(pl, list(comps)) if comps else np.zeros_like(inside)
        if rule == "overlap":
            detected[lesion] = bool(comps)
        else:
            kind, threshold = rule.split(":")
            assert kind == "iou"
            iou = (union & inside).sum() / (union | inside).sum()
            detected[lesion] = iou >= float(threshold)
    out = np.zeros(gt.shape, np.uint8)
    fp_volumes = []
    for comp in range(1, m + 1):
        voxels = pl == comp
        lesions = set(np.unique(gl[voxels]).tolist()) - {0}
        tp = any(detected[lesion] for lesion in lesions)
        out[voxels & ~gt] = 3 if tp else 4
        if not tp:
            fp_volumes.append(int(voxels.sum()))
    for lesion in range(1, k + 1):
        out[gl == lesion] = 1 if detected[lesion] else 2
    return out, detected, sorted(fp_volumes)


def _cases():
    """Hand-made cases: name -> (gt, pred or None for a missing prediction file)."""
    z = np.zeros(SHAPE, bool)
    cases = {}
    # a lesion found and spilled over, a missed one, a false positive
    gt, pred = z.copy(), z.copy()
    gt[2:5, 2:5, 1:3] = True
    pred[3:7, 3:5, 1:3] = True  # covers part of the lesion and spills out
    gt[10:12, 8:10, 3:5] = True  # missed
    pred[8:10, 1:3, 4:6] = True  # false positive
    cases["mixed"] = (gt, pred)
    # one lesion split by two components
    gt, pred = z.copy(), z.copy()
    gt[3:10, 3:6, 2:4] = True
    pred[2:5, 3:6, 2:4] = True
    pred[8:11, 3:6, 2:4] = True
    cases["split"] = (gt, pred)
    # one component merging two lesions (and the voxels between them)
    gt, pred = z.copy(), z.copy()
    gt[2:4, 2:4, 1:3] = True
    gt[8:10, 2:4, 1:3] = True
    pred[3:9, 2:4, 2] = True
    cases["merged"] = (gt, pred)
    # an empty GT with a prediction
    gt, pred = z.copy(), z.copy()
    pred[5:8, 5:8, 2:4] = True
    cases["empty_gt"] = (gt, pred)
    # an empty prediction
    gt, pred = z.copy(), z.copy()
    gt[1:3, 1:3, 1:2] = True
    gt[9:12, 7:10, 3:6] = True
    cases["empty_pred"] = (gt, pred)
    # voxels touching at a corner only: one component at 26, two at 6
    gt, pred = z.copy(), z.copy()
    gt[4, 4, 2] = gt[5, 5, 3] = gt[6, 6, 4] = True
    pred[5, 5, 3] = True
    pred[7, 7, 5] = True  # touches the GT only at a corner, away from the other predicted voxel: a false positive
    cases["corners"] = (gt, pred)
    # a prediction file that is missing
    gt = z.copy()
    gt[6:9, 6:9, 2:4] = True
    cases["missing"] = (gt, None)
    return cases


def _folders(tmp_path, cases):
    gt_dir, pred_dir = tmp_path / "gt", tmp_path / "pred"
    gt_dir.mkdir()
    pred_dir.mkdir()
    for case, (gt, pred) in cases.items():
        _save(gt_dir / f"{case}.nii.gz", gt)
        if pred is not None:
            _save(pred_dir / f"{case}.nii.gz", pred)
    return gt_dir, pred_dir


def _read_map(out_dir, relative):
    image = nib.load(os.path.join(out_dir, relative))
    return np.asarray(image.dataobj), image


@pytest.mark.parametrize(
    "metrics, connectivity, rule",
    [
        (["dice"], None, None),  # no per_prediction table: the components judged by the rule
        (["dice", "detection"], None, None),  # the per_prediction table's outcomes
        (["detection"], 6, None),
        (["detection"], 18, "iou:0.5"),
        (["dice"], None, "iou:0.5"),
    ],
)
def test_each_outcome_map_equals_the_masks_recomputed(tmp_path, metrics, connectivity, rule):
    cases = _cases()
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    options = EvalOptions(metrics=metrics, connectivity=connectivity, detection_rule=rule, write_maps=True)
    result = evaluate_dataset(gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, progress=False))
    per_case = result.per_case.set_index("case")
    conn = connectivity or 26
    for case, (gt, pred) in cases.items():
        pred = np.zeros_like(gt) if pred is None else pred
        expected, detected, fp_volumes = reference_map(gt, pred, conn, rule or "overlap")
        relative = per_case.loc[case, "outcome_map_file"]
        assert relative == f"maps/{case}.nii.gz"
        data, image = _read_map(out, relative)
        assert data.dtype == np.uint8 and data.shape == SHAPE
        np.testing.assert_array_equal(data, expected, err_msg=case)
        np.testing.assert_array_equal(image.affine, nib.load(gt_dir / f"{case}.nii.gz").affine)  # the GT file's
        np.testing.assert_allclose(image.affine, AFFINE, atol=1e-6)
        assert int(image.header["sform_code"]) > 0 and int(image.header["qform_code"]) > 0
        # the tables say the same: found lesions and false positives
        lesions = result.per_component[result.per_component["case"] == case]
        assert lesions["detected"].tolist() == [detected[k] for k in sorted(detected)]
        if result.per_prediction is not None:  # and the predictions' outcomes: the false positives by volume
            comps = result.per_prediction[result.per_prediction["case"] == case]
            assert sorted(comps.loc[comps["outcome"] == "fp", "volume"].tolist()) == fp_volumes


def test_the_hand_counted_labels_of_the_mixed_case(tmp_path):
    # independent of any labelling: the voxels counted by hand from the slices above
    cases = {"mixed": _cases()["mixed"]}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    evaluate_dataset(
        gt_dir, pred_dir, options=EvalOptions(write_maps=True), run=RunOptions(out_dir=out, progress=False)
    )
    data, _ = _read_map(out, "maps/mixed.nii.gz")
    counts = np.bincount(data.ravel(), minlength=5)
    # found lesion 3x3x2 = 18; missed 2x2x2 = 8; the spill: pred 4x2x2 = 16 minus its 2x2x2 = 8 inside the lesion
    # (rows 3,4 x cols 3,4 x slices 1,2) = 8; the false positive 2x2x2 = 8
    assert counts[1:].tolist() == [18, 8, 8, 8]
    assert counts[0] == np.prod(SHAPE) - 42


def test_classes_give_one_map_per_class_and_regions_overlap(tmp_path):
    gt = np.zeros(SHAPE, np.uint8)
    pred = np.zeros(SHAPE, np.uint8)
    gt[2:5, 2:5, 1:3] = 1
    gt[3, 3, 1] = 2  # a label-2 voxel inside the label-1 lesion
    gt[9:12, 8:11, 2:4] = 2
    gt[0, 0, 0] = 9  # the ignore label
    pred[2:5, 2:5, 1:3] = 1
    pred[0, 0, 0] = 1  # predicted on the ignored voxel: set to background first
    pred[8:10, 0:2, 4:6] = 2  # label 2 predicted where no label-2 lesion is: a fp of class 2
    gt_dir, pred_dir = tmp_path / "gt", tmp_path / "pred"
    gt_dir.mkdir()
    pred_dir.mkdir()
    _save(gt_dir / "c1.nii.gz", gt)
    _save(pred_dir / "c1.nii.gz", pred)
    out = tmp_path / "out"
    options = EvalOptions(metrics=["dice"], classes="one=1,two=2,all=1+2", ignore_label=9, write_maps=True)
    result = evaluate_dataset(gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, progress=False))
    files = dict(zip(result.per_case["class"], result.per_case["outcome_map_file"]))
    assert files == {1: "maps/c1_class1.nii.gz", 2: "maps/c1_class2.nii.gz", 3: "maps/c1_class3.nii.gz"}
    ignored = gt == 9
    for value, labels in ((1, (1,)), (2, (2,)), (3, (1, 2))):
        gt_mask = np.isin(gt, labels) & ~ignored
        pred_mask = np.isin(pred, labels) & ~ignored
        expected = reference_map(gt_mask, pred_mask)[0]
        data, image = _read_map(out, files[value])
        np.testing.assert_array_equal(data, expected, err_msg=f"class {value}")
        np.testing.assert_array_equal(image.affine, nib.load(gt_dir / "c1.nii.gz").affine)
    data, _ = _read_map(out, files[2])
    assert data[0, 0, 0] == 0 and data[3, 3, 1] == 2 and data[8, 0, 4] == 4


def test_the_colour_tables_list_every_label(tmp_path):
    gt_dir, pred_dir = _folders(tmp_path, {"a": _cases()["mixed"]})
    out = tmp_path / "out"
    evaluate_dataset(
        gt_dir, pred_dir, options=EvalOptions(write_maps=True), run=RunOptions(out_dir=out, progress=False)
    )
    expected = {0: ("background", (0, 0, 0))} | {label.value: (label.name, label.rgb) for label in OUTCOME_LABELS}
    assert sorted(expected) == [0, 1, 2, 3, 4]
    # 3D Slicer: index name R G B A
    rows = [line.split() for line in (out / "maps" / "outcome_labels.ctbl").read_text().splitlines()]
    rows = [r for r in rows if r and not r[0].startswith("#")]
    assert {int(r[0]): (r[1], tuple(map(int, r[2:5]))) for r in rows} == expected
    assert [int(r[5]) for r in rows] == [0, 255, 255, 255, 255]
    # ITK-SNAP: IDX R G B A VIS MSH "LABEL"
    lines = [
        line for line in (out / "maps" / "outcome_labels.txt").read_text().splitlines() if not line.startswith("#")
    ]
    parsed = {}
    for line in lines:
        head, label, _ = line.split('"')[0], line.split('"')[1], line.split('"')[2]
        values = head.split()
        parsed[int(values[0])] = (tuple(map(int, values[1:4])), float(values[4]), int(values[5]), label)
    assert {k: v[0] for k, v in parsed.items()} == {k: v[1] for k, v in expected.items()}
    assert [parsed[k][1] for k in range(5)] == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert "found" in parsed[1][3] and "missed" in parsed[2][3] and "false" in parsed[4][3]
    # five different colours, none black but the background
    assert len({v[0] for v in parsed.values()}) == 5


def test_resume_that_adds_write_maps_writes_them_and_a_second_resume_keeps_them(tmp_path):
    cases = {k: v for k, v in _cases().items() if k in ("mixed", "split")}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    first = evaluate_dataset(gt_dir, pred_dir, ["dice"], out_dir=out, progress=False)
    assert "outcome_map_file" not in first.per_case and not (out / "maps").exists()
    options = EvalOptions(metrics=["dice"], write_maps=True)
    again = evaluate_dataset(
        gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, resume=True, progress=False)
    )
    assert again.run.evaluated == 2 and again.run.reused == 0  # the option is part of each case's record
    assert again.per_case["outcome_map_file"].tolist() == ["maps/mixed.nii.gz", "maps/split.nii.gz"]
    for case, (gt, pred) in cases.items():
        np.testing.assert_array_equal(_read_map(out, f"maps/{case}.nii.gz")[0], reference_map(gt, pred)[0])
    assert again.options["write_maps"] is True
    third = evaluate_dataset(
        gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, resume=True, progress=False)
    )
    assert third.run.reused == 2 and third.run.evaluated == 0
    assert third.per_case["outcome_map_file"].tolist() == ["maps/mixed.nii.gz", "maps/split.nii.gz"]
    assert (out / "maps" / "outcome_labels.ctbl").is_file()


def test_overwrite_writes_the_maps_again(tmp_path):
    cases = {"mixed": _cases()["mixed"]}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    options = EvalOptions(metrics=["dice"], write_maps=True)
    evaluate_dataset(gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, progress=False))
    (out / "maps" / "mixed.nii.gz").unlink()
    evaluate_dataset(gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, overwrite=True, progress=False))
    np.testing.assert_array_equal(_read_map(out, "maps/mixed.nii.gz")[0], reference_map(*cases["mixed"])[0])


def test_write_maps_needs_an_output_folder_and_a_failed_case_names_none(tmp_path):
    cases = {"mixed": _cases()["mixed"]}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    with pytest.raises(ValueError, match="write_maps .*out_dir"):
        evaluate_dataset(gt_dir, pred_dir, options=EvalOptions(write_maps=True), progress=False)
    _save(gt_dir / "bad.nii.gz", np.zeros(SHAPE))
    _save(pred_dir / "bad.nii.gz", np.zeros((3, 3, 3)))  # another shape: the case's error row
    out = tmp_path / "out"
    result = evaluate_dataset(
        gt_dir, pred_dir, options=EvalOptions(write_maps=True), run=RunOptions(out_dir=out, progress=False)
    )
    files = dict(zip(result.per_case["case"], result.per_case["outcome_map_file"]))
    assert files == {"bad": "", "mixed": "maps/mixed.nii.gz"}
    assert sorted(p.name for p in (out / "maps").iterdir()) == [
        "mixed.nii.gz",
        "outcome_labels.ctbl",
        "outcome_labels.txt",
    ]


def test_arrays_in_2d_and_case_ids_that_are_no_file_names(tmp_path):
    gt = np.zeros((9, 7), bool)
    pred = np.zeros((9, 7), bool)
    gt[1:3, 1:3] = True
    gt[6:8, 4:6] = True
    pred[2:4, 2:4] = True  # found, spills out
    pred[4, 0] = True  # fp
    out = tmp_path / "out"
    result = evaluate_dataset(
        {"a/b": (gt, pred)}, options=EvalOptions(write_maps=True), run=RunOptions(out_dir=out, progress=False)
    )
    relative = result.per_case["outcome_map_file"].item()
    assert relative.startswith("maps/a_b-") and relative.endswith(".nii.gz")
    data, _ = _read_map(out, relative)
    expected = np.zeros((9, 7), np.uint8)
    expected[1:3, 1:3] = 1
    expected[6:8, 4:6] = 2
    expected[3, 2:4] = 3
    expected[2, 3] = 3
    expected[4, 0] = 4
    np.testing.assert_array_equal(data.reshape(9, 7), expected)


def test_the_memory_estimate_counts_the_map(tmp_path):
    gt_dir, pred_dir = _folders(tmp_path, {"a": _cases()["mixed"]})
    task = CaseTask("a", str(gt_dir / "a.nii.gz"), str(pred_dir / "a.nii.gz"))
    without = estimate_bytes(task, EvalOptions())
    with_maps = estimate_bytes(task, EvalOptions(write_maps=True))
    assert with_maps - without == 3 * int(np.prod(SHAPE))


def test_a_dicom_seg_gt_with_its_series_gets_a_dicom_seg_map(tmp_path):
    pytest.importorskip("highdicom")
    import importlib.util
    from pathlib import Path

    import pydicom

    spec = importlib.util.spec_from_file_location(
        "make_dicom_example", Path(__file__).resolve().parents[2] / "examples" / "make_dicom_example.py"
    )
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    shape = (12, 10, 7)  # columns, rows, slices
    affine = ex.ct_geometry(shape, (0.7, 0.9), 2.0, (1, 0, 0, 0, 1, 0), (-10.0, 7.5, 40.0), -1)  # head first
    source = ex.write_ct_series(tmp_path / "ct", np.zeros(shape, np.int16), affine, uid_seed=3)
    gt = np.zeros(shape, np.uint8)
    pred = np.zeros(shape, np.uint8)
    gt[2:5, 2:5, 1:3] = 1  # found, the prediction spills out
    pred[3:7, 3:5, 1:3] = 1
    gt[8:11, 6:9, 4:6] = 1  # missed
    pred[0:2, 7:9, 5:7] = 1  # false positive
    ex.write_seg(tmp_path / "gt" / "case_1.dcm", gt, source, {1: "lesion"})
    ex.write_seg(tmp_path / "pred" / "case_1.dcm", pred, source, {1: "lesion"})
    out = tmp_path / "out"
    options = EvalOptions(metrics=["dice"], reference_images=str(tmp_path / "ct"), write_maps=True)
    result = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", options=options, run=RunOptions(out_dir=out, progress=False)
    )
    assert result.per_case["status"].tolist() == ["ok"]
    relative = result.per_case["outcome_map_file"].item()
    assert relative == "maps/case_1_class1.dcm"  # the SEGs' segment is the class
    expected = reference_map(gt > 0, pred > 0)[0]  # [column, row, slice] in the series' file order
    assert np.bincount(expected.ravel(), minlength=5)[1:].tolist() == [18, 18, 8, 8]
    ds = pydicom.dcmread(out / relative)
    assert ds.Modality == "SEG" and ds.SegmentationType == "BINARY"
    assert [(int(s.SegmentNumber), str(s.SegmentLabel)) for s in ds.SegmentSequence] == [
        (label.value, label.name) for label in OUTCOME_LABELS
    ]
    slice_of = {str(d.SOPInstanceUID): k for k, d in enumerate(source)}
    frames = ds.pixel_array.reshape(-1, shape[1], shape[0])  # (frames, rows, columns)
    seen = set()
    for f, group in enumerate(ds.PerFrameFunctionalGroupsSequence):
        segment = int(group.SegmentIdentificationSequence[0].ReferencedSegmentNumber)
        uid = str(group.DerivationImageSequence[0].SourceImageSequence[0].ReferencedSOPInstanceUID)
        k = slice_of[uid]
        np.testing.assert_array_equal(frames[f], (expected[:, :, k] == segment).T, err_msg=f"segment {segment}, {k}")
        seen.add((segment, k))
    assert seen == {(s, k) for s in range(1, 5) for k in range(shape[2])}  # every frame of every segment
    # without the series' images: a NIfTI map on the grid the case was evaluated on (the SEGs' span of frames)
    plain = EvalOptions(metrics=["dice"], write_maps=True)
    again = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", options=plain, run=RunOptions(out_dir=tmp_path / "o2", progress=False)
    )
    assert again.per_case["outcome_map_file"].item() == "maps/case_1_class1.nii.gz"
    data = np.asarray(nib.load(tmp_path / "o2" / "maps" / "case_1_class1.nii.gz").dataobj)
    assert np.bincount(data.ravel(), minlength=5)[1:].tolist() == [18, 18, 8, 8]


def test_a_map_that_cannot_be_written_is_the_case_error_row_and_resume_writes_it(tmp_path):
    """A real write failure (a folder where the map's file goes) is the case's error row, retried by resume."""
    cases = {"mixed": _cases()["mixed"]}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    evaluate_dataset(gt_dir, pred_dir, ["dice"], out_dir=out, progress=False)
    (out / "maps" / "mixed.nii.gz").mkdir(parents=True)  # in the way of the map's file
    options = EvalOptions(metrics=["dice"], write_maps=True)
    resumed = RunOptions(out_dir=out, resume=True, progress=False)
    failed = evaluate_dataset(gt_dir, pred_dir, options=options, run=resumed)
    row = failed.per_case.iloc[0]
    assert row["status"] == "error" and row["outcome_map_file"] == ""
    assert "outcome map" in row["error"] and "mixed.nii.gz" in row["error"], row["error"]
    (out / "maps" / "mixed.nii.gz").rmdir()
    again = evaluate_dataset(gt_dir, pred_dir, options=options, run=resumed)
    assert again.run.evaluated == 1 and again.per_case["status"].tolist() == ["ok"]
    np.testing.assert_array_equal(_read_map(out, "maps/mixed.nii.gz")[0], reference_map(*cases["mixed"])[0])


def test_resume_writes_a_map_deleted_since_its_record(tmp_path):
    cases = {k: v for k, v in _cases().items() if k in ("mixed", "split")}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    options = EvalOptions(metrics=["dice"], write_maps=True)
    evaluate_dataset(gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, progress=False))
    (out / "maps" / "split.nii.gz").unlink()
    again = evaluate_dataset(
        gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, resume=True, progress=False)
    )
    assert again.run.reused == 1 and again.run.evaluated == 1
    assert again.run.reasons == {"split": "its outcome map maps/split.nii.gz is missing"}
    np.testing.assert_array_equal(_read_map(out, "maps/split.nii.gz")[0], reference_map(*cases["split"])[0])


def test_worker_processes_write_the_same_maps(tmp_path):
    cases = {k: v for k, v in _cases().items() if k in ("mixed", "merged", "empty_gt")}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    options = EvalOptions(metrics=["detection"], write_maps=True)
    result = evaluate_dataset(gt_dir, pred_dir, options=options, run=RunOptions(out_dir=out, workers=2, progress=False))
    assert result.per_case["outcome_map_file"].tolist() == [f"maps/{c}.nii.gz" for c in sorted(cases)]
    for case, (gt, pred) in cases.items():
        np.testing.assert_array_equal(_read_map(out, f"maps/{case}.nii.gz")[0], reference_map(gt, pred)[0])


def test_probability_maps_paint_the_segmentation_the_cases_were_evaluated_on(tmp_path):
    # without predictions the segmentation is prob > 0.5, and the detection rule defaults to iou:0.1
    gt, pred = _cases()["mixed"]
    prob = np.where(pred, 0.8, 0.2).astype(np.float32)
    prob[3, 3, 1] = 0.4  # below 0.5: a hole in the predicted component
    gt_dir = tmp_path / "gt"
    gt_dir.mkdir()
    _save(gt_dir / "p1.nii.gz", gt)
    prob_dir = tmp_path / "prob"
    prob_dir.mkdir()
    nib.save(nib.Nifti1Image(prob, AFFINE), str(prob_dir / "p1.nii.gz"))
    out = tmp_path / "out"
    result = evaluate_dataset(
        gt_dir,
        probabilities=prob_dir,
        options=EvalOptions(metrics=["dice"], write_maps=True),
        run=RunOptions(out_dir=out, progress=False),
    )
    assert result.per_case["outcome_map_file"].tolist() == ["maps/p1.nii.gz"]
    expected = reference_map(gt, prob > 0.5, rule="iou:0.1")[0]
    np.testing.assert_array_equal(_read_map(out, "maps/p1.nii.gz")[0], expected)
    assert expected[3, 3, 1] == 1  # a GT voxel outside the segmentation still takes its lesion's outcome


def test_the_command_line_writes_the_maps_and_says_where(tmp_path, capsys):
    from ccmetrics.cli import main

    cases = {k: v for k, v in _cases().items() if k in ("mixed", "split")}
    gt_dir, pred_dir = _folders(tmp_path, cases)
    out = tmp_path / "out"
    code = main(["evaluate", str(gt_dir), str(pred_dir), "--out-dir", str(out), "--metrics", "dice", "--write-maps"])
    assert code == 0
    assert f"Outcome maps in {out / 'maps'}" in capsys.readouterr().out
    for case, (gt, pred) in cases.items():
        np.testing.assert_array_equal(_read_map(out, f"maps/{case}.nii.gz")[0], reference_map(gt, pred)[0])
    per_case = pd.read_csv(out / "per_case.csv")
    assert per_case["outcome_map_file"].tolist() == ["maps/mixed.nii.gz", "maps/split.nii.gz"]


def test_case_ids_that_differ_only_in_case_get_maps_apart(tmp_path):
    """``Case1`` and ``case1`` are one file name on macOS' and Windows' file systems: their maps' names differ also
    when case is ignored, and each map is its own case's (none written over the other)."""
    gt = np.zeros(SHAPE, bool)
    gt[2:5, 2:5, 1:3] = True
    gt[9:12, 7:10, 3:5] = True
    found_one, found_both = gt.copy(), gt.copy()
    found_one[9:12, 7:10, 3:5] = False  # the second lesion missed
    found_both[0, 0, 0] = True  # both found, one false positive
    out = tmp_path / "out"
    result = evaluate_dataset(
        {"Case1": (gt, found_one), "case1": (gt, found_both)},
        options=EvalOptions(write_maps=True),
        run=RunOptions(out_dir=out, progress=False),
    )
    files = dict(zip(result.per_case["case"], result.per_case["outcome_map_file"]))
    assert files["case1"] == "maps/case1.nii.gz" and files["Case1"].startswith("maps/Case1-")
    assert files["Case1"].lower() != files["case1"].lower()
    for case, pred in (("Case1", found_one), ("case1", found_both)):
        np.testing.assert_array_equal(_read_map(out, files[case])[0], reference_map(gt, pred)[0])
