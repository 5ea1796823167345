"""The report judges false positives as the evaluation did when no ``per_prediction.csv`` holds them.

A run with ``--metrics dice`` writes no per-prediction table; the report (thumbnails, viewer) must then judge
each predicted component under the run's ``--detection-rule``, as the outcome maps of ``--write-maps`` do,
not fall back to the overlap rule. Expected outcomes are computed here by hand (IoU of boxes).
"""

import shutil

import numpy as np
import pytest

from ccmetrics.cli import main
from ccmetrics.formats.io import Image, load_image, save_image
from ccmetrics.report import page

pytestmark = pytest.mark.slow  # whole commands

SHAPE = (40, 40, 12)
LIKE = Image(np.zeros(SHAPE, np.uint8), (1.0, 1.0, 2.0), np.diag([1.0, 1.0, 2.0, 1.0]))


def write(root):
    gt = np.zeros(SHAPE, np.uint8)
    gt[2:12, 2:12, 2:8] = 1  # lesion 1: 600 voxels
    gt[25:30, 25:30, 2:6] = 1  # lesion 2: 100 voxels
    pred = np.zeros(SHAPE, np.uint8)
    pred[2:7, 2:7, 2:7] = 1  # inside lesion 1: IoU 125 / 600 = 0.21: a false positive under iou:0.5
    pred[25:30, 25:30, 2:5] = 1  # lesion 2: IoU 75 / 100 = 0.75: a true positive
    pred[35:38, 2:5, 8:10] = 1  # away from both: a false positive under every rule
    for sub, mask in (("gt", gt), ("pred", pred)):
        (root / sub).mkdir()
        save_image(root / sub / "case0.nii.gz", mask, like=LIKE)
    return gt, pred


def evaluate(root, *extra):
    out = root / "out"
    args = ["evaluate", str(root / "gt"), str(root / "pred"), "--out-dir", str(out), "--metrics", "dice", "--quiet"]
    assert main([*args, "--write-maps", *extra]) == 0
    assert not (out / "per_prediction.csv").exists()  # the point: no table of judged predictions
    return out


def test_false_positives_follow_the_detection_rule_without_the_table(tmp_path):
    gt, pred = write(tmp_path)
    iou_fp = {(2, 2, 2), (35, 2, 8)}  # the first voxel of each false positive under iou:0.5, by hand
    for rule, expected in (("iou:0.5", iou_fp), ("overlap", {(35, 2, 8)})):
        out = evaluate(tmp_path, "--detection-rule", rule)
        (case,) = page.build_model(out, with_viewer=False)["cases"]
        assert case["problem"] is None
        assert len(case["false_positives"]) == len(expected), rule
        # the outcome map of the same run: 4 marks a false-positive prediction voxel outside the GT, 3 a
        # true-positive one; a false positive inside a lesion shows as that lesion's outcome there
        outcomes = np.asarray(load_image(out / "maps" / "case0.nii.gz").array)
        assert {int(outcomes[35, 2, 8])} == {4}
        lesion1 = outcomes[2:12, 2:12, 2:8]
        assert int(lesion1[0, 0, 0]) == (2 if rule == "iou:0.5" else 1), rule  # missed under iou:0.5, else found
        shutil.rmtree(out)


def test_suv_max_without_the_table_says_what_to_run(tmp_path):
    from ccmetrics.report.model import SUV_MAX_WITHOUT_TABLE

    write(tmp_path)
    scan = np.ones(SHAPE, np.float32)
    (tmp_path / "images").mkdir()
    save_image(tmp_path / "images" / "case0.nii.gz", scan, like=LIKE)
    out = evaluate(tmp_path, "--detection-rule", "suv_max", "--images", str(tmp_path / "images"))
    (case,) = page.build_model(out, with_viewer=False)["cases"]
    assert case["problem"] == SUV_MAX_WITHOUT_TABLE and "--metrics" in case["problem"]


def test_a_case_without_a_viewer_says_why():
    # the viewer's map is refused (here: the tables list fewer lesions than the GT holds): the page says so
    from types import SimpleNamespace

    from ccmetrics.report import model

    gt_labels = np.zeros((4, 4, 4), np.int32)
    gt_labels[0, 0, 0], gt_labels[3, 3, 3] = 1, 2
    images = SimpleNamespace(gt=gt_labels > 0, regions=SimpleNamespace(gt_labels=gt_labels), pred=gt_labels > 0)
    folder = SimpleNamespace(eval_options=SimpleNamespace(connectivity=None))
    entry = {"lesions": [{"label": 1, "detected": True, "id": "a-lesion-1"}], "false_positives": []}
    assert model._component_map(folder, images, entry) is None
    assert entry["viewer_note"] == "No viewer for this case: the table lists 1 lesions, the GT holds 2: was it changed?"


@pytest.mark.parametrize(
    ("label", "code", "minimum", "expected"),
    [
        ("PET", "0001", 0.0, (5.0, 10.0)),
        ("PT", "0001", 0.0, (5.0, 10.0)),  # a word PT: the PET
        ("0001", "0001", 0.0, (5.0, 10.0)),  # no name: a PET by its values (no air)
        ("0000", "0000", -1024.0, (-600.0, 1500.0)),  # no name: a CT by its air
        ("CT", "0000", -1024.0, (-600.0, 1500.0)),
    ],
)
def test_thumbnails_and_viewer_read_one_window_per_channel(label, code, minimum, expected):
    # --window pet=0:10 --window ct=lung: the thumbnails (Scans.window) and the viewer (ScanPicker.spec) agree
    from ccmetrics.report import on_scan, thumbnails, viewer

    asked = thumbnails.window_specs({"pet": "0:10", "ct": "lung"})
    scans = on_scan.Scans(None, None, asked, 1e-3)
    picker = viewer.ScanPicker(asked, None, (1.0, 1.0, 1.0))
    kind = thumbnails.channel_kind(label, minimum)
    assert scans.window(label, code, minimum) == picker.spec(label, code, kind) == expected
