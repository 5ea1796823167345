"""ccmetrics.analysis.swap: the signs that GT and predictions were swapped, on real folders, both ways round;
and what ``ccmetrics evaluate`` prints of them (the folders it took, the note)."""

from __future__ import annotations

import shutil
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from ccmetrics import evaluate_dataset
from ccmetrics.analysis.swap import swap_signs
from ccmetrics.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"


def test_the_example_folders_give_no_sign_and_swapped_they_give_two(tmp_path):
    assert swap_signs(evaluate_dataset(DATA / "gt", DATA / "pred", ["dice", "detection"], progress=False)) == []
    signs = swap_signs(evaluate_dataset(DATA / "pred", DATA / "gt", ["dice", "detection"], progress=False))
    assert len(signs) == 2
    assert signs[0].startswith("1 prediction file(s) have no GT (case_005) while every GT file has a prediction")
    assert signs[1] == (
        f"the GT folder {DATA / 'pred'} is named like predictions and the prediction folder {DATA / 'gt'} is "
        "named like a reference"
    )


def _write(path: Path, mask: np.ndarray) -> None:
    nib.save(nib.Nifti1Image(mask.astype(np.uint8), np.eye(4)), path)


@pytest.fixture
def three_per_lesion(tmp_path):
    """Neutral folder names; 4 cases, one GT lesion each, the 'model' finds it and 2 false positives beside it."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for i in range(4):
        gt = np.zeros((30, 30, 30), np.uint8)
        gt[5:10, 5:10, 5:10] = 1
        pred = gt.copy()
        pred[20:23, 20:23, 20:23] = 1
        pred[2:4, 25:28, 12:15] = 1
        _write(a / f"case_{i}.nii.gz", gt)
        _write(b / f"case_{i}.nii.gz", pred)
    return a, b


def test_more_components_in_the_gt_is_a_sign_only_one_way(three_per_lesion):
    a, b = three_per_lesion
    assert swap_signs(evaluate_dataset(a, b, ["dice", "detection"], progress=False)) == []
    signs = swap_signs(evaluate_dataset(b, a, ["dice", "detection"], progress=False))
    assert signs == [
        "the GT holds 12 connected components in the 4 cases where both hold some, the predictions 4 (3.0x fewer; "
        "a model usually predicts more components than there are lesions)"
    ]
    # without the detection metric the predicted components are not counted: no sign from them
    assert swap_signs(evaluate_dataset(b, a, ["dice"], progress=False)) == []


def test_names_that_say_nothing_or_the_right_thing_give_no_sign(tmp_path, three_per_lesion):
    a, b = three_per_lesion
    for gt_name, pred_name in (("labelsTr", "predictions"), ("gt", "seg_pred"), ("reference", "model_output")):
        shutil.copytree(a, tmp_path / gt_name)
        shutil.copytree(b, tmp_path / pred_name)
        result = evaluate_dataset(tmp_path / gt_name, tmp_path / pred_name, ["dice"], progress=False)
        assert swap_signs(result) == [], (gt_name, pred_name)


def test_the_command_says_which_folder_is_the_gt_and_notes_a_swap(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["--metrics", "dice,detection", "--no-plots", "--bootstrap", "50"]
    assert main(["evaluate", str(DATA / "gt"), str(DATA / "pred"), "--out", str(out), *args]) == 0
    err = capsys.readouterr().err
    assert f"ccmetrics: ground truth (GT) from {DATA / 'gt'}; predictions from {DATA / 'pred'}" in err
    assert "swapped" not in err
    swapped = ["evaluate", str(DATA / "pred"), str(DATA / "gt"), "--out", str(out), "--overwrite", *args, "--quiet"]
    assert main(swapped) == 1  # case_005 has no GT: an error row
    captured = capsys.readouterr()
    assert "ground truth (GT) from" not in captured.err  # --quiet: not the routine line ...
    note = [line for line in captured.err.splitlines() if "may be swapped" in line]
    assert len(note) == 1  # ... but the note, once
    assert note[0].startswith(
        "ccmetrics: note: GT_DIR and PRED_DIR may be swapped (the GT folder comes first: ccmetrics evaluate "
        "GT_DIR PRED_DIR): 1 prediction file(s) have no GT (case_005)"
    )
    assert len(captured.out.splitlines()) == 1
