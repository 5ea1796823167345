"""The ``suv_max`` detection rule (issue 41, point 4): a lesion is detected when a predicted voxel covers its hottest
voxel, the first in C order among equal maxima; checked against brute force (``np.argmax`` over each lesion's voxels in
C order), with many ties between equal maxima."""

import numpy as np
import pytest

from ccmetrics import EvalOptions, evaluate, evaluate_dataset
from ccmetrics.cli import main
from ccmetrics.engine.components import label_components
from ccmetrics.metrics.detection_rules import SUV_MAX_NEEDS_IMAGE


def brute_force(scan, gt, pred, connectivity=None):
    """Per lesion (components of ``gt``, numbered as the engine numbers them): its hottest voxel predicted?"""
    labels, n = label_components(gt, connectivity)
    values = np.asarray(scan, dtype=np.float32).ravel()  # the scan is read as float32
    out = []
    for k in range(1, n + 1):
        voxels = np.flatnonzero(labels.ravel() == k)  # C order
        out.append(bool(pred.ravel()[voxels[np.argmax(values[voxels])]]))  # argmax: the first of equal maxima
    return out


def scene(seed, shape=(7, 11, 12)):
    rng = np.random.default_rng(seed)
    gt = rng.random(shape) < 0.12
    pred = (gt & (rng.random(shape) < 0.5)) | (rng.random(shape) < 0.05)
    scan = rng.integers(0, 4, shape).astype(np.float64)  # four values: ties between equal maxima everywhere
    return scan, gt, pred


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("spacing", [None, (3.0, 0.8, 1.3)])
def test_detected_equals_brute_force_with_ties(seed, spacing):
    scan, gt, pred = scene(seed)
    r = evaluate(gt=gt, pred=pred, metrics=["dice", "detection"], image=scan, spacing=spacing, detection_rule="suv_max")
    expected = brute_force(scan, gt, pred)
    assert len(expected) > 5 and r.per_component["detected"].tolist() == expected
    assert r.case_scores["sensitivity"] == pytest.approx(np.mean(expected))


def test_float32_and_fortran_scans_and_a_connectivity():
    scan, gt, pred = scene(7)
    scan = np.asfortranarray(scan + np.random.default_rng(1).random(scan.shape) * 1e-9)  # equal in float32
    r = evaluate(gt=gt, pred=pred, metrics=["dice"], image=scan, connectivity=6, detection_rule="suv_max")
    assert r.per_component["detected"].tolist() == brute_force(scan, gt, pred, 6)


def test_the_first_of_equal_maxima_decides():
    gt = np.zeros((2, 6), bool)
    gt[0, 1:5] = True
    scan = np.zeros((2, 6))
    scan[0, [2, 4]] = 7.0  # two equal maxima: (0, 2) comes first in C order
    for covered, detected in (((0, 2),), True), (((0, 4),), False), (((0, 1), (0, 3)), False):
        pred = np.zeros_like(gt)
        for at in covered:
            pred[at] = True
        r = evaluate(gt=gt, pred=pred, metrics=["dice"], image=scan, detection_rule="suv_max")
        assert r.per_component["detected"].tolist() == [detected], covered
    # with another rule the scan is not read: the same prediction is detected by any overlap
    assert evaluate(gt=gt, pred=pred, metrics=["dice"], image=scan).per_component["detected"].tolist() == [True]


def test_empty_masks():
    scan, gt, _ = scene(3)
    r = evaluate(gt=gt, pred=np.zeros_like(gt), metrics=["detection"], image=scan, detection_rule="suv_max")
    assert not r.per_component["detected"].any() and r.case_scores["sensitivity"] == 0.0
    empty = np.zeros_like(gt)
    r = evaluate(gt=empty, pred=gt, metrics=["detection"], image=scan, detection_rule="suv_max")
    assert len(r.per_component) == 0


def test_without_the_scan_it_is_an_error():
    scan, gt, pred = scene(0)
    with pytest.raises(ValueError, match="'suv_max'.*needs the scan: evaluate\\(\\.\\.\\., image=scan\\)"):
        evaluate(gt=gt, pred=pred, metrics=["dice"], detection_rule="suv_max")
    assert SUV_MAX_NEEDS_IMAGE.startswith("the detection rule 'suv_max'")
    wanted = r"the detection rule suv_max reads the PET scan: give the scans, images= \(a folder"
    with pytest.raises(ValueError, match=wanted):
        evaluate_dataset({"a": (gt, pred)}, options=EvalOptions(detection_rule="suv_max"), progress=False)


def test_the_command_line_refuses_suv_max_without_scans_before_making_its_folder(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["evaluate", str(tmp_path / "gt"), str(tmp_path / "p"), "--out-dir", str(out), "--quiet"]
    assert main([*args, "--detection-rule", "suv_max"]) == 2 and not out.exists()
    assert "suv_max reads the PET scan: give the scans, --images DIR" in " ".join(capsys.readouterr().err.split())
