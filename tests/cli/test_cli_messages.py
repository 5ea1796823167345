"""What ``ccmetrics evaluate`` says about a case, in the command line's terms: the option that fixes it, the
class a flag holds for."""

from __future__ import annotations

import nibabel as nib
import numpy as np
import pandas as pd
import pytest

from ccmetrics.cli import main


def _write(path, array, origin=(0.0, 0.0, 0.0)):
    affine = np.eye(4)
    affine[:3, 3] = origin
    nib.save(nib.Nifti1Image(array.astype(np.uint8), affine), path)


@pytest.fixture
def label_maps(tmp_path):
    """Case c1: labels 1 and 2; c2: label 1 only; c3: nothing. Predictions equal the GT; ``shifted`` holds
    them with the origin moved by 1 mm along x."""
    for name in ("gt", "pred", "shifted"):
        (tmp_path / name).mkdir()
    one = np.zeros((20, 20, 20), np.uint8)
    one[2:6, 2:6, 2:6] = 1
    two = one.copy()
    two[10:14, 10:14, 10:14] = 2
    for case, array in (("c1", two), ("c2", one), ("c3", np.zeros_like(one))):
        _write(tmp_path / "gt" / f"{case}.nii.gz", array)
        _write(tmp_path / "pred" / f"{case}.nii.gz", array)
        _write(tmp_path / "shifted" / f"{case}.nii.gz", array, origin=(1.0, 0.0, 0.0))
    return tmp_path


def _evaluate(capsys, *argv):
    code = main(["evaluate", *map(str, argv), "--metrics", "dice", "--no-plots", "--bootstrap", "50"])
    return code, capsys.readouterr().out


def test_a_label_map_without_classes_names_the_option_and_its_labels(label_maps, capsys):
    out = label_maps / "out"
    code, printed = _evaluate(capsys, label_maps / "gt", label_maps / "pred", "--out", out)
    assert code == 1
    expected = (
        "the GT is a label map (labels 1,2), not a binary mask (0/1): evaluate its labels one by one with "
        "--classes 1,2 (classes=[1, 2] in Python)"
    )
    assert f"  error   c1: {expected}" in printed
    assert "sites='labels'" not in printed and "pass classes=[...]" not in printed  # not the Python-only advice
    table = pd.read_csv(out / "per_case.csv").set_index("case")
    assert table.loc["c1", "error"].startswith(expected)
    # the advice works as written
    code, printed = _evaluate(
        capsys, label_maps / "gt", label_maps / "pred", "--out", out, "--overwrite", "--classes", "1,2"
    )
    assert code == 0 and "0 failed" in printed


def test_an_origin_mismatch_names_the_tolerance_and_its_option(label_maps, capsys):
    out = label_maps / "out"
    code, printed = _evaluate(capsys, label_maps / "gt", label_maps / "shifted", "--out", out, "--classes", "1,2")
    assert code == 1
    assert (
        "  error   c1: origin differs: gt (0.0, 0.0, 0.0) mm, pred (1.0, 0.0, 0.0) mm (the origins may differ by at "
        "most 0.001 mm; a larger --tolerance-mm, tolerance_mm= in Python, accepts more)"
    ) in printed
    code, printed = _evaluate(
        capsys, label_maps / "gt", label_maps / "shifted", "--out", out, "--classes", "1,2", "--overwrite",
        "--tolerance-mm", "1.5",
    )  # fmt: skip
    assert code == 0 and "0 failed" in printed


def test_each_flag_names_its_classes(label_maps, capsys):
    code, printed = _evaluate(
        capsys, label_maps / "gt", label_maps / "pred", "--out", label_maps / "a", "--classes", "1,2"
    )
    assert code == 0
    lines = [line for line in printed.splitlines() if line.startswith("  flagged")]
    assert lines == ["  flagged c2: empty_gt (class 2)", "  flagged c3: empty_gt (every class)"]
    code, printed = _evaluate(
        capsys, label_maps / "gt", label_maps / "pred", "--out", label_maps / "b", "--classes", "small=1,large=2"
    )
    lines = [line for line in printed.splitlines() if line.startswith("  flagged")]
    assert lines == ["  flagged c2: empty_gt (class large)", "  flagged c3: empty_gt (every class)"]
    # one class: the flag as it is
    binary = label_maps / "binary"
    binary.mkdir()
    for case in ("c2", "c3"):
        (binary / f"{case}.nii.gz").write_bytes((label_maps / "gt" / f"{case}.nii.gz").read_bytes())
    code, printed = _evaluate(capsys, binary, binary, "--out", label_maps / "c")
    assert [line for line in printed.splitlines() if line.startswith("  flagged")] == ["  flagged c3: empty_gt"]


def test_candidates_without_maps_names_the_option(label_maps, capsys):
    code = main(
        [
            "evaluate",
            str(label_maps / "gt"),
            str(label_maps / "pred"),
            "--out",
            str(label_maps / "o"),
            "--thresholds",
            "0.5",
        ]
    )
    assert code == 2
    assert "give the maps too (--probabilities DIR)" in capsys.readouterr().err


def test_one_case_is_one_case(label_maps, capsys):
    one = label_maps / "one"
    one.mkdir()
    (one / "c2.nii.gz").write_bytes((label_maps / "gt" / "c2.nii.gz").read_bytes())
    code, printed = _evaluate(capsys, one, one, "--out", label_maps / "o1")
    assert code == 0 and printed.startswith("1 case in ") and ": 1 evaluated (0 flagged), 0 failed;" in printed
    code = main(["evaluate", str(one), str(one), "--out", str(label_maps / "o2"), "--metrics", "dice", "--quiet"])
    assert code == 0 and capsys.readouterr().out.startswith("1 case in ")
