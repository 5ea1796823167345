"""``report --images`` on 2D cases: a scan is drawn only in its GT's plane (issue 39, point 2, found by a review).

The GT and the prediction are axial 2D NIfTI slices at z = 0; the scans are written field by field by nibabel: the
same plane (drawn), the same axial plane 50 mm higher, and a coronal plane (both refused, naming the difference; the
report used to draw the parallel one, comparing the 2D part of the geometry only)."""

from __future__ import annotations

import numpy as np
import pytest

from ccmetrics.report.data import ImageFolder, load_case, read_channel

nib = pytest.importorskip("nibabel")


def test_a_2d_scan_is_drawn_only_in_its_gts_plane(tmp_path):
    for sub in ("gt", "pred", "img"):
        (tmp_path / sub).mkdir()
    mask = np.zeros((8, 8), np.uint8)
    mask[2:5, 2:5] = 1
    nib.save(nib.Nifti1Image(mask, np.eye(4)), tmp_path / "gt" / "a.nii.gz")
    nib.save(nib.Nifti1Image(mask, np.eye(4)), tmp_path / "pred" / "a.nii.gz")
    above = np.eye(4)
    above[2, 3] = 50.0
    coronal = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1.0]])
    scan = np.full((8, 8), 100, np.int16)
    for name, affine in (("a_0000", np.eye(4)), ("a_0001", above), ("a_0002", coronal)):
        nib.save(nib.Nifti1Image(scan, affine), tmp_path / "img" / f"{name}.nii.gz")
    case = load_case(tmp_path / "gt" / "a.nii.gz", tmp_path / "pred" / "a.nii.gz")
    assert np.array_equal(case.grid().affine_3d, np.eye(4))
    found = {}
    for file in ImageFolder.scan(tmp_path / "img").channels("a"):
        channel, problem = read_channel(file, case)
        found[file.code] = (channel is not None, problem)
    assert found["0000"] == (True, None)
    assert found["0001"] == (
        False,
        "channel 0001: origin differs: gt (0.0, 0.0, 0.0) mm, image (0.0, 0.0, 50.0) mm "
        "(the 2D images lie in parallel planes 50 mm apart)",
    )
    assert found["0002"][0] is False and "(the 2D images lie in different planes)" in found["0002"][1]
