"""Tests of ccmetrics.formats.probabilities: round trips, nnU-Net's .npz axis order, and each refusal's message."""

import os

import nibabel as nib
import numpy as np
import pytest
import SimpleITK as sitk

from ccmetrics.formats.image import Image
from ccmetrics.formats.io import load_image, save_image
from ccmetrics.formats.probabilities import (
    NPZ_KEYS,
    ProbabilityError,
    _as_float32,
    probability_file,
    read_probabilities,
)

SPACING = (0.8, 0.6, 2.5)


def ramp(shape=(6, 5, 4), dtype=np.float32):
    """Distinct values in [0, 1], none equal to another."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64).reshape(shape) / (n - 1)).astype(dtype)


@pytest.fixture
def gt(tmp_path):
    """A GT of shape (6, 5, 4) with SPACING, written and read back."""
    save_image(tmp_path / "gt.nii.gz", np.zeros((6, 5, 4), np.uint8), spacing=SPACING)
    return load_image(tmp_path / "gt.nii.gz")


# ---------------------------------------------------------------- image files


@pytest.mark.parametrize("ext", [".nii.gz", ".nii", ".mha", ".nrrd"])
def test_round_trip_of_an_image_file(tmp_path, gt, ext):
    p = ramp()
    save_image(tmp_path / f"case{ext}", p, like=gt)
    out = read_probabilities(tmp_path / f"case{ext}", like=gt)
    assert out.array.dtype == np.float32
    np.testing.assert_array_equal(out.array, p)
    assert out.spacing == pytest.approx(SPACING)
    np.testing.assert_allclose(out.affine, gt.affine, atol=1e-6)
    assert out.path == os.fspath(tmp_path / f"case{ext}")


def test_a_plain_nifti_map_is_read_without_nibabel_and_as_nibabel_reads_it(tmp_path, gt):
    """A worker reading maps of plain headers never imports nibabel (0.5 s a process); the map is nibabel's."""
    import subprocess
    import sys

    p = ramp()
    nib.save(nib.Nifti1Image(p, gt.affine), tmp_path / "case.nii.gz")
    want = np.asanyarray(nib.load(tmp_path / "case.nii.gz").dataobj)
    script = (
        "import sys, numpy as np; from ccmetrics.formats.probabilities import read_probabilities; "
        f"m = read_probabilities({os.fspath(tmp_path / 'case.nii.gz')!r}); "
        f"np.save({os.fspath(tmp_path / 'got.npy')!r}, m.array); print('nibabel' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    np.testing.assert_array_equal(np.load(tmp_path / "got.npy"), want)


def test_without_like_the_file_is_read_unchecked(tmp_path):
    p = ramp((3, 4))
    save_image(tmp_path / "case.mha", p, spacing=(0.5, 0.7))
    out = read_probabilities(tmp_path / "case.mha")
    np.testing.assert_array_equal(out.array, p)
    assert out.spacing == pytest.approx((0.5, 0.7))


def test_float32_is_not_copied_and_float64_becomes_float32(tmp_path, gt):
    a = np.zeros(3, np.float32)
    assert _as_float32("x", a) is a
    p64 = ramp(dtype=np.float64) * (1 - 1e-9)
    save_image(tmp_path / "case.nii.gz", p64, like=gt)
    out = read_probabilities(tmp_path / "case.nii.gz", like=gt)
    assert out.array.dtype == np.float32
    np.testing.assert_array_equal(out.array, p64.astype(np.float32))


def test_boolean_and_0_1_integer_maps_are_accepted(tmp_path, gt):
    mask = ramp() > 0.5
    save_image(tmp_path / "case.nii.gz", mask, like=gt)  # written as uint8 0/1
    out = read_probabilities(tmp_path / "case.nii.gz", like=gt)
    assert out.array.dtype == np.float32
    np.testing.assert_array_equal(out.array, mask.astype(np.float32))
    np.savez_compressed(tmp_path / "b.npz", probabilities=np.stack([~mask.T, mask.T]))  # bool .npz
    out = read_probabilities(tmp_path / "b.npz", like=gt)
    assert out.array.dtype == np.float32
    np.testing.assert_array_equal(out.array, mask.astype(np.float32))


def test_integers_beyond_0_1_are_refused(tmp_path, gt):
    save_image(tmp_path / "case.nrrd", (ramp() * 255).astype(np.uint8), like=gt)
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.nrrd", like=gt)
    assert "case.nrrd" in str(e.value) and "from 0 to 255" in str(e.value) and "divide" in str(e.value)


def test_4d_nifti_needs_a_channel_along_its_last_axis(tmp_path, gt):
    stack = np.stack([1 - ramp(), ramp(), ramp() / 2], axis=-1)  # (6, 5, 4, 3): channels last
    img = nib.Nifti1Image(stack, gt.affine)
    nib.save(img, tmp_path / "case.nii.gz")
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.nii.gz", like=gt)
    assert "case.nii.gz" in str(e.value) and "(6, 5, 4, 3)" in str(e.value) and "channel=" in str(e.value)
    out = read_probabilities(tmp_path / "case.nii.gz", like=gt, channel=2)
    np.testing.assert_array_equal(out.array, ramp() / 2)
    assert out.spacing == pytest.approx(SPACING)
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.nii.gz", like=gt, channel=3)
    assert "3 channels" in str(e.value) and "channel 3 does not exist" in str(e.value)


# ---------------------------------------------------------------- nnU-Net's .npz: the axis order


@pytest.mark.parametrize("gt_ext", [".nii.gz", ".mha"])
def test_npz_axis_order_matches_a_map_written_through_simpleitk(tmp_path, gt_ext):
    """nnU-Net writes P in SimpleITK's array order (z, y, x); read on the GT, voxel for voxel what load_image
    reads from a NIfTI written from the same P with the same SimpleITK geometry."""
    a = np.arange(5 * 7 * 9, dtype=np.float64).reshape(5, 7, 9)  # (z, y, x), asymmetric, distinct values
    p = (a / a.max()).astype(np.float32)
    gt_img = sitk.GetImageFromArray((a > a.mean()).astype(np.uint8))
    gt_img.SetSpacing((0.7, 0.9, 3.0))
    gt_img.SetOrigin((10.0, -20.0, 5.0))
    gt_img.SetDirection((-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0))
    sitk.WriteImage(gt_img, str(tmp_path / f"gt{gt_ext}"))
    np.savez_compressed(tmp_path / "case.npz", probabilities=np.stack([1 - p, p]))  # as nnU-Net does
    p_img = sitk.GetImageFromArray(p)
    p_img.CopyInformation(gt_img)
    sitk.WriteImage(p_img, str(tmp_path / "p.nii.gz"))

    like = load_image(tmp_path / f"gt{gt_ext}")
    out = read_probabilities(tmp_path / "case.npz", like=like)
    expected = load_image(tmp_path / "p.nii.gz").array
    assert like.array.shape == out.array.shape == expected.shape == (9, 7, 5)
    np.testing.assert_array_equal(out.array, expected)
    np.testing.assert_array_equal(out.array, p.T)
    np.testing.assert_array_equal(out.affine, like.affine)
    assert out.spacing == like.spacing and out.array.dtype == np.float32
    assert out.array.base is None  # channel 1 copied: the (2, ...) stack is not kept
    i, j, k = 8, 1, 3  # ITK index (x, y, z): one voxel in world space
    assert out.array[i, j, k] == p[k, j, i]
    world = np.asarray(gt_img.TransformIndexToPhysicalPoint((i, j, k))) * [-1, -1, 1]  # LPS -> RAS
    np.testing.assert_allclose(like.affine @ [i, j, k, 1], [*world, 1], atol=1e-5)


def test_npz_of_a_2d_case_and_nnunet_v1_softmax_in_float16(tmp_path):
    p = ramp((7, 9), np.float16)  # SimpleITK's (y, x)
    gt_img = sitk.GetImageFromArray(np.zeros((7, 9), np.uint8))
    sitk.WriteImage(gt_img, str(tmp_path / "gt.mha"))
    like = load_image(tmp_path / "gt.mha")
    np.savez_compressed(tmp_path / "case.npz", softmax=np.stack([1 - p, p])[:, None])  # (C, 1, y, x)
    out = read_probabilities(tmp_path / "case.npz", like=like)
    assert NPZ_KEYS == ("probabilities", "softmax")
    assert out.array.shape == (9, 7) and out.array.dtype == np.float32
    np.testing.assert_array_equal(out.array, p.T.astype(np.float32))


def test_npz_channel_choice(tmp_path, gt):
    maps = np.stack([ramp(), ramp() / 2, ramp() / 3]).transpose(0, 3, 2, 1)  # (3, z, y, x)
    np.savez_compressed(tmp_path / "case.npz", probabilities=maps)
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.npz", like=gt)
    assert "case.npz" in str(e.value) and "3 channels" in str(e.value) and "channel=" in str(e.value)
    np.testing.assert_array_equal(read_probabilities(tmp_path / "case.npz", like=gt, channel=2).array, ramp() / 3)
    np.testing.assert_array_equal(read_probabilities(tmp_path / "case.npz", like=gt, channel=0).array, ramp())
    for bad in (3, -1):
        with pytest.raises(ProbabilityError) as e:
            read_probabilities(tmp_path / "case.npz", like=gt, channel=bad)
        assert "case.npz" in str(e.value) and "holds 3 channels" in str(e.value) and f"channel {bad} " in str(e.value)


def test_npz_needs_like_and_a_known_key(tmp_path, gt):
    np.savez_compressed(tmp_path / "case.npz", probabilities=np.zeros((2, 4, 5, 6), np.float32))
    with pytest.raises(ProbabilityError, match=r"case\.npz.*holds no geometry.*like="):
        read_probabilities(tmp_path / "case.npz")
    np.savez_compressed(tmp_path / "other.npz", logits=np.zeros((2, 4, 5, 6), np.float32))
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "other.npz", like=gt)
    assert "other.npz" in str(e.value) and "['logits']" in str(e.value) and "'probabilities'" in str(e.value)
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ProbabilityError, match=r"broken\.npz"):
        read_probabilities(tmp_path / "broken.npz", like=gt)


def test_npz_of_another_shape_is_refused_before_it_is_decompressed(tmp_path, gt):
    np.savez_compressed(tmp_path / "case.npz", probabilities=np.zeros((2, 4, 5, 7), np.float32))
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.npz", like=gt)
    msg = str(e.value)
    assert "case.npz" in msg and "gt (6, 5, 4)" in msg and "probabilities (7, 5, 4)" in msg
    np.savez_compressed(tmp_path / "xyz.npz", probabilities=np.zeros((2, 6, 5, 4), np.float32))  # not reversed
    with pytest.raises(ProbabilityError, match=r"xyz\.npz.*\(x, y, z\) order already"):
        read_probabilities(tmp_path / "xyz.npz", like=gt)


# ---------------------------------------------------------------- values


def test_nan_and_inf_are_counted(tmp_path, gt):
    p = ramp()
    p[0, 0, :3] = np.nan
    p[1, 1, :2] = np.inf
    p[2, 2, 0] = -np.inf
    save_image(tmp_path / "case.nii.gz", p, like=gt)
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.nii.gz", like=gt)
    msg = str(e.value)
    assert "case.nii.gz" in msg and "3 NaN" in msg and "2 +inf" in msg and "1 -inf" in msg and "120 voxels" in msg


def test_inf_alone_is_refused(tmp_path, gt):
    p = ramp()
    p[3, 3, 3] = np.inf
    np.savez_compressed(tmp_path / "case.npz", probabilities=np.stack([1 - p.T, p.T]))
    with pytest.raises(ProbabilityError, match=r"case\.npz' holds 0 NaN, 1 \+inf and 0 -inf"):
        read_probabilities(tmp_path / "case.npz", like=gt)


def test_values_outside_0_1_give_min_max_and_the_fix(tmp_path, gt):
    p = ramp() * 2 - 0.5  # logits-like: -0.5 to 1.5
    save_image(tmp_path / "case.mha", p, like=gt)
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.mha", like=gt)
    msg = str(e.value)
    assert "case.mha" in msg and "from -0.5 to 1.5" in msg and "sigmoid" in msg and "softmax" in msg


# ---------------------------------------------------------------- grid


def test_image_of_another_shape_is_refused(tmp_path, gt):
    save_image(tmp_path / "case.nii.gz", ramp((6, 5, 3)), spacing=SPACING)
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "case.nii.gz", like=gt)
    msg = str(e.value)
    assert "case.nii.gz" in msg and "shape differs: gt (6, 5, 4), probabilities (6, 5, 3)" in msg


def test_image_of_another_spacing_or_origin_is_refused(tmp_path, gt):
    save_image(tmp_path / "spacing.nii.gz", ramp(), spacing=(0.8, 0.6, 3.0))
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "spacing.nii.gz", like=gt)
    msg = str(e.value)
    assert "spacing.nii.gz" in msg and "spacing differs: gt (0.8, 0.6, 2.5) mm, probabilities (0.8, 0.6, 3.0) mm" in msg
    shifted = Image(ramp(), gt.spacing, gt.affine.copy())
    shifted.affine[2, 3] = 0.05  # 0.05 mm along z
    save_image(tmp_path / "origin.nii.gz", ramp(), like=shifted)
    with pytest.raises(ProbabilityError) as e:
        read_probabilities(tmp_path / "origin.nii.gz", like=gt)
    msg = str(e.value)
    assert "origin.nii.gz" in msg and "origin differs: gt (0.0, 0.0, 0.0) mm, probabilities (0.0, 0.0, 0.05) mm" in msg
    out = read_probabilities(tmp_path / "origin.nii.gz", like=gt, tolerance_mm=0.1)
    np.testing.assert_array_equal(out.array, ramp())


# ---------------------------------------------------------------- files


def test_missing_file_folder_and_unknown_extension(tmp_path, gt):
    with pytest.raises(ProbabilityError, match=r"probability file not found: '.*nowhere\.nii\.gz'"):
        read_probabilities(tmp_path / "nowhere.nii.gz", like=gt)
    os.symlink("gone.npz", tmp_path / "case.npz")
    with pytest.raises(ProbabilityError, match=r"case\.npz.*dangling symbolic link"):
        read_probabilities(tmp_path / "case.npz", like=gt)
    with pytest.raises(ProbabilityError, match=r"is a folder"):
        read_probabilities(tmp_path, like=gt)
    (tmp_path / "case.png").write_bytes(b"")
    with pytest.raises(ProbabilityError, match=r"case\.png.*unknown extension"):
        read_probabilities(tmp_path / "case.png", like=gt)


def test_probability_file_finds_the_case_by_id(tmp_path):
    for name in ("case_001.npz", "case_0010.nii.gz", "case_002.mha", ".case_003.nrrd", "case_003.txt", "gt.dcm"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "case_004.nrrd").mkdir()
    assert probability_file(tmp_path, "case_001") == tmp_path / "case_001.npz"
    assert probability_file(tmp_path, "case_0010") == tmp_path / "case_0010.nii.gz"
    assert probability_file(str(tmp_path), "case_002") == tmp_path / "case_002.mha"
    for absent in ("case_003", "case_004", "gt", "case_00"):
        assert probability_file(tmp_path, absent) is None
    with pytest.raises(ProbabilityError, match=r"probability folder not found"):
        probability_file(tmp_path / "nowhere", "case_001")
    with pytest.raises(ProbabilityError, match=r"is a file, not a folder"):
        probability_file(tmp_path / "case_001.npz", "case_001")


def test_two_files_of_one_case_are_refused(tmp_path):
    for name in ("CASE.nii.gz", "CASE.mha", "CASE2.nii.gz", "CASE2.mha", "CASE2.npz", "OTHER.npz"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(ProbabilityError) as e:
        probability_file(tmp_path, "CASE")
    msg = str(e.value)
    assert "2 files" in msg and "CASE.nii.gz" in msg and "CASE.mha" in msg and "'CASE'" in msg
    with pytest.raises(ProbabilityError, match="3 files"):
        probability_file(tmp_path, "CASE2")


def test_nnunet_layout_takes_the_npz(tmp_path):
    """nnU-Net's --save_probabilities writes CASE.nii.gz (its segmentation) beside CASE.npz: the npz is the map."""
    for name in ("CASE.nii.gz", "CASE.npz", "CASE.pkl", "OTHER.npz"):
        (tmp_path / name).write_bytes(b"")
    assert probability_file(tmp_path, "CASE") == tmp_path / "CASE.npz"
    assert probability_file(tmp_path, "OTHER") == tmp_path / "OTHER.npz"
