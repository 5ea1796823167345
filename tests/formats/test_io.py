"""Tests of ccmetrics.formats.io: both readers agree, round trips keep values and geometry, bad files fail clearly."""

import gzip
import subprocess
import sys
import zlib
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
import SimpleITK as sitk

from ccmetrics.formats.io import (
    IMAGE_EXTENSIONS,
    Image,
    ImageReadError,
    check_same_geometry,
    image_id,
    is_image_file,
    load_image,
    read_header,
    save_image,
)

SPACING = (0.586, 0.586, 3.3)
SPINE = Path(__file__).resolve().parents[1] / "data" / "spine" / "ref.nii.gz"


def oblique_affine(spacing=SPACING, origin=(12.5, -30.0, 41.0)):
    """RAS affine with a 0.3 rad rotation about z, a flip of the first axis and a shifted origin."""
    c, s = np.cos(0.3), np.sin(0.3)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.diag([-1, 1, 1])
    affine = np.eye(4)
    affine[:3, :3] = rot @ np.diag(spacing)
    affine[:3, 3] = origin
    return affine


def labels(shape=(7, 6, 5), dtype=np.uint8, seed=0):
    return np.random.default_rng(seed).integers(0, 5, shape).astype(dtype)


def write_nifti(path, array, affine, qform=True, sform=True):
    img = nib.Nifti1Image(array, affine, dtype=array.dtype)
    img.set_qform(affine if qform else None, code=1 if qform else 0)
    img.set_sform(affine if sform else None, code=2 if sform else 0)
    nib.save(img, str(path))
    return path


def assert_same_image(a, b, atol=1e-4):
    assert a.array.shape == b.array.shape
    assert a.array.dtype == b.array.dtype
    np.testing.assert_array_equal(a.array, b.array)
    np.testing.assert_allclose(a.spacing, b.spacing, rtol=0, atol=1e-6)
    np.testing.assert_allclose(a.affine, b.affine, rtol=0, atol=atol)


# ---------------------------------------------------------------- the two readers agree


@pytest.mark.parametrize("ext", [".nii.gz", ".nii"])
@pytest.mark.parametrize("qform, sform", [(True, True), (True, False), (False, True)])
def test_nibabel_and_sitk_agree_on_nifti(tmp_path, ext, qform, sform):
    array, affine = labels(), oblique_affine()
    path = write_nifti(tmp_path / f"x{ext}", array, affine, qform, sform)
    a, b = load_image(path, reader="nibabel"), load_image(path, reader="sitk")
    assert_same_image(a, b)
    assert load_image(path).array.shape == (7, 6, 5)  # auto = nibabel: [i, j, k], no transpose
    np.testing.assert_array_equal(a.array, array)
    np.testing.assert_allclose(a.spacing, SPACING, atol=1e-6)
    np.testing.assert_allclose(a.affine, affine, atol=1e-5)
    np.testing.assert_allclose(b.origin, [12.5, -30.0, 41.0], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(b.direction, axis=0), 1, atol=1e-6)
    assert a.path == str(path) and type(a.array) is np.ndarray  # not a np.memmap on the file


def test_sitk_written_mha_and_nrrd_have_ras_geometry(tmp_path):
    # (i, j, k) = (4, 3, 2) voxels; ITK stores LPS: direction diag(1, 1, 1) in LPS is diag(-1, -1, 1) in RAS
    arr_kji = labels((2, 3, 4))
    img = sitk.GetImageFromArray(arr_kji)
    img.SetSpacing((0.5, 0.75, 2.5))
    img.SetOrigin((10.0, 20.0, 30.0))
    expected = np.array([[-0.5, 0, 0, -10], [0, -0.75, 0, -20], [0, 0, 2.5, 30], [0, 0, 0, 1]])
    for ext in (".mha", ".nrrd"):
        sitk.WriteImage(img, str(tmp_path / f"x{ext}"))
        loaded = load_image(tmp_path / f"x{ext}")
        np.testing.assert_array_equal(loaded.array, arr_kji.transpose())
        assert loaded.array.flags.c_contiguous
        assert loaded.array[3, 1, 0] == img.GetPixel(3, 1, 0)
        assert loaded.spacing == (0.5, 0.75, 2.5)
        np.testing.assert_allclose(loaded.affine, expected)


@pytest.mark.parametrize("ext", [".mha", ".nrrd", ".mhd", ".nhdr", ".nii", ".nii.gz"])
def test_save_like_nifti_round_trip(tmp_path, ext):
    src = write_nifti(tmp_path / "src.nii.gz", labels(dtype=np.int16), oblique_affine())
    ref = load_image(src)
    save_image(tmp_path / f"out{ext}", ref.array, like=ref)
    out = load_image(tmp_path / f"out{ext}")
    assert_same_image(out, ref)
    assert check_same_geometry(ref, out) is None
    if ext.startswith(".nii"):
        assert_same_image(load_image(tmp_path / f"out{ext}", reader="sitk"), ref)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.int32, np.float32])
@pytest.mark.parametrize("ext", [".nii.gz", ".mha", ".nrrd"])
def test_dtype_preserved(tmp_path, dtype, ext):
    array = labels(dtype=dtype)
    save_image(tmp_path / f"x{ext}", array, spacing=SPACING)
    img = load_image(tmp_path / f"x{ext}")
    assert img.array.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(img.array, array)
    np.testing.assert_allclose(img.spacing, SPACING, atol=1e-6)
    np.testing.assert_allclose(img.affine, np.diag(SPACING + (1,)), atol=1e-6)  # identity RAS direction
    if ext == ".nii.gz":
        assert load_image(tmp_path / f"x{ext}", reader="sitk").array.dtype == np.dtype(dtype)


def test_bool_written_as_uint8_and_default_spacing(tmp_path):
    mask = labels() > 2
    save_image(tmp_path / "m.nii.gz", mask)
    img = load_image(tmp_path / "m.nii.gz")
    assert img.array.dtype == np.uint8
    np.testing.assert_array_equal(img.array, mask)
    assert img.spacing == (1.0, 1.0, 1.0)


def test_save_like_keeps_reference_affine(tmp_path):
    affine = oblique_affine(origin=(-100.25, 7.0, 3.5))
    ref = load_image(write_nifti(tmp_path / "ref.nii.gz", labels(), affine))
    pred = labels(seed=1)
    save_image(tmp_path / "pred.nii.gz", pred, like=ref)
    out = load_image(tmp_path / "pred.nii.gz")
    np.testing.assert_array_equal(out.array, pred)
    np.testing.assert_allclose(out.affine, affine, atol=1e-5)
    hdr = nib.load(str(tmp_path / "pred.nii.gz")).header
    assert int(hdr["qform_code"]) == 1 and int(hdr["sform_code"]) == 1
    np.testing.assert_allclose(hdr.get_qform(), hdr.get_sform(), atol=1e-5)


def test_save_image_errors(tmp_path):
    ref = Image(labels(), SPACING, np.diag(SPACING + (1,)))
    with pytest.raises(ValueError, match="shapes must match"):
        save_image(tmp_path / "x.nii.gz", labels((3, 3, 3)), like=ref)
    with pytest.raises(ValueError, match="not both"):
        save_image(tmp_path / "x.nii.gz", ref.array, like=ref, spacing=SPACING)
    with pytest.raises(ValueError, match="finite positive"):
        save_image(tmp_path / "x.nii.gz", ref.array, spacing=(1, 0, 1))
    with pytest.raises(ValueError, match="2D or 3D"):
        save_image(tmp_path / "x.nii.gz", np.zeros((2, 2, 2, 2)))
    with pytest.raises(ValueError, match=r"\.nii\.gz"):
        save_image(tmp_path / "x.png", ref.array)
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- dimensions


def test_2d_mha_and_nrrd(tmp_path):
    arr_ji = labels((3, 4))
    img = sitk.GetImageFromArray(arr_ji)
    img.SetSpacing((0.3, 0.7))
    img.SetOrigin((1.0, 2.0))
    for ext in (".mha", ".nrrd"):
        sitk.WriteImage(img, str(tmp_path / f"x{ext}"))
        loaded = load_image(tmp_path / f"x{ext}")
        assert loaded.array.shape == (4, 3)
        np.testing.assert_array_equal(loaded.array, arr_ji.T)
        assert loaded.spacing == pytest.approx((0.3, 0.7))
        np.testing.assert_allclose(loaded.affine, [[-0.3, 0, -1], [0, -0.7, -2], [0, 0, 1]])
        np.testing.assert_allclose(loaded.direction, np.diag([-1, -1]))
        np.testing.assert_allclose(loaded.origin, [-1, -2])


def test_2d_round_trip_and_nifti_readers_agree(tmp_path):
    array = labels((5, 4))
    save_image(tmp_path / "x.mha", array, spacing=(0.4, 1.5))
    ref = load_image(tmp_path / "x.mha")
    np.testing.assert_allclose(ref.affine, np.diag([0.4, 1.5, 1.0]))
    save_image(tmp_path / "x.nii.gz", array, like=ref)
    a, b = load_image(tmp_path / "x.nii.gz", "nibabel"), load_image(tmp_path / "x.nii.gz", "sitk")
    assert a.array.shape == (5, 4)
    assert_same_image(a, ref)
    assert_same_image(b, ref)


@pytest.mark.parametrize("reader", ["nibabel", "sitk"])
@pytest.mark.parametrize("extra", [(1,), (1, 1)])
def test_singleton_4d_5d_nifti_squeezed(tmp_path, reader, extra):
    array, affine = labels(), oblique_affine()
    path = write_nifti(tmp_path / "x.nii.gz", array.reshape(array.shape + extra), affine)
    img = load_image(path, reader=reader)
    np.testing.assert_array_equal(img.array, array)
    np.testing.assert_allclose(img.affine, affine, atol=1e-5)
    assert img.affine.shape == (4, 4)


@pytest.mark.parametrize("ext", [".mha", ".nrrd"])
def test_singleton_4d_mha_nrrd_squeezed(tmp_path, ext):
    array = labels()
    path = str(tmp_path / f"x{ext}")
    sitk.WriteImage(sitk.GetImageFromArray(array.T[None], isVector=False), path)  # size (7, 6, 5, 1)
    assert sitk.ReadImage(path).GetDimension() == 4  # unlike for NIfTI, SimpleITK keeps the 1 here
    img = load_image(path)
    np.testing.assert_array_equal(img.array, array)
    assert img.spacing == (1.0, 1.0, 1.0)
    np.testing.assert_array_equal(img.affine, np.diag([-1.0, -1.0, 1.0, 1.0]))


@pytest.mark.parametrize("reader", ["nibabel", "sitk"])
def test_real_4d_raises(tmp_path, reader):
    path = write_nifti(tmp_path / "x.nii.gz", labels((4, 5, 6, 2)), oblique_affine())
    with pytest.raises(ValueError, match=r"is a 4D image of shape \(4, 5, 6, 2\); .*take one channel"):
        load_image(path, reader=reader)


def test_vector_pixels_raise(tmp_path):
    sitk.WriteImage(sitk.GetImageFromArray(labels((4, 5, 3)), isVector=True), str(tmp_path / "v.mha"))
    with pytest.raises(ValueError, match="3 components"):
        load_image(tmp_path / "v.mha")


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("reader", ["nibabel", "sitk"])
@pytest.mark.parametrize("ext", [".nii.gz", ".nii"])
def test_truncated_nifti_raises(tmp_path, reader, ext):
    path = write_nifti(tmp_path / f"x{ext}", labels((40, 50, 30)), oblique_affine())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageReadError, match=f"x{ext}") as info:
        load_image(path, reader=reader)
    assert isinstance(info.value, ValueError)


def test_multi_member_gzip_nifti_is_not_truncation(tmp_path):
    array = labels()
    raw = write_nifti(tmp_path / "x.nii", array, oblique_affine()).read_bytes()
    path = tmp_path / "x.nii.gz"
    path.write_bytes(gzip.compress(raw[:1000]) + gzip.compress(raw[1000:]))
    for reader in ("nibabel", "sitk"):
        np.testing.assert_array_equal(load_image(path, reader=reader).array, array)


@pytest.mark.parametrize("reader", ["auto", "sitk"])
def test_random_bytes_raise(tmp_path, reader):
    path = tmp_path / "noise.nii.gz"
    path.write_bytes(np.random.default_rng(0).bytes(3000))
    with pytest.raises(ImageReadError, match="noise.nii.gz"):
        load_image(path, reader=reader)


def test_bad_mha_header_and_truncated_mha_raise(tmp_path):
    sitk.WriteImage(sitk.GetImageFromArray(labels()), str(tmp_path / "ok.mha"))
    raw = (tmp_path / "ok.mha").read_bytes()
    (tmp_path / "bad.mha").write_bytes(raw.replace(b"ElementType = MET_UCHAR", b"ElementType = MET_FOO"))
    (tmp_path / "cut.mha").write_bytes(raw[:-50])
    (tmp_path / "zero.mha").write_bytes(raw.replace(b"ElementSpacing = 1 1 1", b"ElementSpacing = 1 0 1"))
    for name in ("bad.mha", "cut.mha", "zero.mha"):
        with pytest.raises(ImageReadError, match=rf"{name}.*SimpleITK"):
            load_image(tmp_path / name)


@pytest.mark.parametrize("reader", ["nibabel", "sitk"])
@pytest.mark.parametrize("value", [0.0, np.nan, np.inf])
def test_bad_pixdim_raises(tmp_path, reader, value):
    path = write_nifti(tmp_path / "x.nii", labels(), np.diag([0.5, 0.7, 3.0, 1]), sform=False)
    hdr = bytearray(path.read_bytes())
    hdr[84:88] = np.float32(value).tobytes()  # pixdim[2]; both libraries would read 0 or NaN as 1 mm
    path.write_bytes(bytes(hdr))
    with pytest.raises(ImageReadError, match=r"x\.nii.*finite and non-zero"):
        load_image(path, reader=reader)


def test_missing_file_and_unknown_extension(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.nii.gz"):
        load_image(tmp_path / "nope.nii.gz")
    (tmp_path / "x.png").write_bytes(b"\x89PNG")
    with pytest.raises(ValueError, match=r"unknown image extension.*\.nii\.gz, \.nii, \.mha"):
        load_image(tmp_path / "x.png")
    save_image(tmp_path / "x.mha", labels())
    with pytest.raises(ValueError, match="reader must be one of"):
        load_image(tmp_path / "x.mha", reader="itk")
    with pytest.raises(ValueError, match="nibabel reads only"):
        load_image(tmp_path / "x.mha", reader="nibabel")


def test_disagreeing_qform_and_sform_warn(tmp_path):
    img = nib.Nifti1Image(labels(), None)
    img.set_qform(np.diag([0.5, 0.5, 3, 1]), code=1)
    img.set_sform(oblique_affine(), code=2)
    nib.save(img, str(tmp_path / "x.nii.gz"))
    with pytest.warns(UserWarning, match="qform and sform"):
        a = load_image(tmp_path / "x.nii.gz")
    np.testing.assert_allclose(a.affine, oblique_affine(), atol=1e-5)  # nibabel: sform
    with pytest.warns(UserWarning, match="qform and sform"):
        b = load_image(tmp_path / "x.nii.gz", reader="sitk")
    np.testing.assert_allclose(b.affine, np.diag([0.5, 0.5, 3, 1]), atol=1e-5)  # ITK: qform (sform_code 2)


# ---------------------------------------------------------------- names


def test_image_id_and_is_image_file():
    assert image_id("/data/case_001.nii.gz") == "case_001"
    assert image_id(Path("a.b/case.v2.mha")) == "case.v2"
    assert image_id("case_001_0000.nii.gz", suffix="_0000") == "case_001"
    assert image_id("case_001_0003.nrrd", suffix=r"_\d{4}") == "case_001"
    assert image_id("case_001_pred.nii", suffix="_pred") == "case_001"
    assert image_id("case_pred_001.nii", suffix="_pred") == "case_pred_001"  # only a trailing match
    assert image_id("CASE.NII.GZ") == "CASE"
    with pytest.raises(ValueError, match="no image extension"):
        image_id("case_001.png")
    with pytest.raises(ValueError, match="no image extension"):
        image_id("case_001.gz")
    assert [is_image_file(f"x{e}") for e in IMAGE_EXTENSIONS] == [True] * 7
    assert not is_image_file("x.nii.gz.bak") and not is_image_file(".nii.gz")


# ---------------------------------------------------------------- geometry comparison


def test_check_same_geometry():
    aff = oblique_affine()
    gt = Image(labels(), SPACING, aff)
    assert check_same_geometry(gt, Image(labels(seed=3), SPACING, aff.copy())) is None
    noisy = aff + 1e-6
    assert check_same_geometry(gt, Image(gt.array, tuple(s * (1 + 1e-6) for s in SPACING), noisy)) is None

    msg = check_same_geometry(gt, Image(labels((7, 6, 4)), SPACING, aff))
    assert msg == "shape differs: gt (7, 6, 5), pred (7, 6, 4)"

    aff2 = oblique_affine(spacing=(0.586, 0.586, 2.0))
    msg = check_same_geometry(gt, Image(gt.array, (0.586, 0.586, 2.0), aff2))
    assert msg == "spacing differs: gt (0.586, 0.586, 3.3) mm, pred (0.586, 0.586, 2.0) mm"

    shifted = aff.copy()
    shifted[:3, 3] += [0, 0, 0.01]
    msg = check_same_geometry(gt, Image(gt.array, SPACING, shifted), names=("ref", "seg"))
    assert msg == "origin differs: ref (12.5, -30.0, 41.0) mm, seg (12.5, -30.0, 41.01) mm"
    assert check_same_geometry(gt, Image(gt.array, SPACING, shifted), atol_mm=0.02) is None

    flipped = np.diag(SPACING + (1,))
    flipped[:3, 3] = aff[:3, 3]
    msg = check_same_geometry(gt, Image(gt.array, SPACING, flipped))
    assert msg.startswith("direction differs: gt ((-0.955336, -0.29552, 0.0), ")
    assert msg.endswith("pred ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))")

    both = check_same_geometry(gt, Image(gt.array, (0.586, 0.586, 2.0), np.diag([0.586, 0.586, 2.0, 1])))
    assert both.count("differs") == 3


def test_image_properties_and_repr():
    img = Image(np.zeros((2, 3), np.uint8), (0.5, 2.0), np.array([[0, -2.0, 5], [0.5, 0, 6], [0, 0, 1]]))
    np.testing.assert_array_equal(img.direction, [[0, -1], [1, 0]])
    np.testing.assert_array_equal(img.origin, [5, 6])
    assert repr(img) == "Image(shape=(2, 3), dtype=uint8, spacing=(0.5, 2.0), path=None)"


def test_import_is_light():
    code = "import sys, ccmetrics.formats.io; print(sorted(m for m in ('torch', 'nibabel', 'SimpleITK') if m in sys.modules))"  # noqa: E501
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- real data


def test_spine_reference_both_readers():
    if not SPINE.exists():
        pytest.skip(f"{SPINE} not present")
    a, b = load_image(SPINE), load_image(SPINE, reader="sitk")
    assert a.array.shape == (512, 512, 17) and a.array.dtype == np.uint8
    assert_same_image(a, b)
    np.testing.assert_allclose(a.spacing, (0.58594, 0.58594, 3.3), atol=1e-5)
    assert set(np.unique(a.array)) >= {0, 26, 41, 100}


# ---------------------------------------------------------------- headers without voxels, lying headers


def assert_header_matches(path, reader="auto"):
    header, img = read_header(path, reader=reader), load_image(path, reader=reader)
    assert header.path == str(path)
    assert header.shape == img.array.shape
    assert header.dtype == img.array.dtype
    assert header.spacing == img.spacing
    assert header.voxels == img.array.size and header.nbytes == img.array.nbytes
    return header


@pytest.mark.parametrize("reader", ["auto", "sitk"])
@pytest.mark.parametrize("ext", [".nii.gz", ".nii"])
@pytest.mark.parametrize("shape", [(7, 6, 5), (9, 4), (7, 6, 5, 1)])
def test_read_header_equals_load_image_nifti(tmp_path, reader, ext, shape):
    affine = oblique_affine() if len(shape) != 2 else np.diag([0.7, 1.3, 1.0, 1.0])
    path = write_nifti(tmp_path / f"x{ext}", labels(shape, np.int16), affine)
    header = assert_header_matches(path, reader)
    assert header.shape == shape[:3] and header.dtype == np.int16


@pytest.mark.parametrize("ext", [".mha", ".nrrd", ".mhd", ".nhdr"])
@pytest.mark.parametrize("compress", [False, True])
def test_read_header_equals_load_image_itk(tmp_path, ext, compress):
    path = str(tmp_path / f"x{ext}")
    img = sitk.GetImageFromArray(labels((5, 6, 7), np.uint16), isVector=False)  # size (7, 6, 5)
    img.SetSpacing((0.5, 0.8, 2.5))
    sitk.WriteImage(img, path, compress)
    header = assert_header_matches(path)
    assert (header.shape, header.dtype, header.spacing) == ((7, 6, 5), np.uint16, (0.5, 0.8, 2.5))
    save_image(tmp_path / f"flat{ext}", labels((8, 9)), spacing=(0.25, 4.0))  # 2D
    assert assert_header_matches(tmp_path / f"flat{ext}").shape == (8, 9)
    sitk.WriteImage(sitk.GetImageFromArray(labels().T[None], isVector=False), str(tmp_path / f"four{ext}"))
    assert assert_header_matches(tmp_path / f"four{ext}").shape == (7, 6, 5)  # (7, 6, 5, 1) squeezed


def test_read_header_scaled_nifti_dtype(tmp_path):
    path = write_nifti(tmp_path / "x.nii", labels(), oblique_affine())
    raw = bytearray(path.read_bytes())
    raw[112:120] = np.array([2.0, 1.0], "<f4").tobytes()  # scl_slope 2, scl_inter 1
    path.write_bytes(bytes(raw))
    assert assert_header_matches(path, "auto").dtype == np.float64  # nibabel's scaling
    assert assert_header_matches(path, "sitk").dtype == np.float32  # ITK's


def test_read_header_errors_as_load_image(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.nii.gz"):
        read_header(tmp_path / "nope.nii.gz")
    (tmp_path / "x.png").write_bytes(b"\x89PNG")
    with pytest.raises(ValueError, match="unknown image extension"):
        read_header(tmp_path / "x.png")
    (tmp_path / "noise.nii.gz").write_bytes(np.random.default_rng(0).bytes(3000))
    (tmp_path / "noise.mha").write_bytes(np.random.default_rng(0).bytes(3000))
    for name in ("noise.nii.gz", "noise.mha"):
        with pytest.raises(ImageReadError, match=name):
            read_header(tmp_path / name)
    write_nifti(tmp_path / "four.nii.gz", labels((4, 5, 6, 2)), oblique_affine())
    with pytest.raises(ValueError, match=r"is a 4D image of shape \(4, 5, 6, 2\)"):
        read_header(tmp_path / "four.nii.gz")
    sitk.WriteImage(sitk.GetImageFromArray(labels((4, 5, 3)), isVector=True), str(tmp_path / "v.mha"))
    with pytest.raises(ValueError, match="3 components"):
        read_header(tmp_path / "v.mha")
    nifti = write_nifti(tmp_path / "zero.nii", labels(), np.diag([0.5, 0.7, 3.0, 1]), sform=False)
    raw = bytearray(nifti.read_bytes())
    raw[84:88] = np.float32(0).tobytes()
    nifti.write_bytes(bytes(raw))
    with pytest.raises(ImageReadError, match="finite and non-zero"):
        read_header(nifti)


def lying_nifti(tmp_path, dims, gz=True, name="lie"):
    """A small real NIfTI whose header's dim is patched to ``dims`` (then gzipped again)."""
    raw = bytearray(write_nifti(tmp_path / f"{name}_src.nii", labels((20, 30, 40)), oblique_affine()).read_bytes())
    raw[42:48] = np.array(dims, "<i2").tobytes()  # dim[1..3]
    path = tmp_path / f"{name}.nii{'.gz' if gz else ''}"
    path.write_bytes(gzip.compress(bytes(raw)) if gz else bytes(raw))
    return path


def raises_small_and_fast(fn, path, match):
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ImageReadError, match=match) as info:
            fn(path)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - start < 2.0
    assert peak < 50e6, f"{peak / 1e6:.0f} MB traced while refusing {path}"
    return str(info.value)


@pytest.mark.parametrize("reader", ["nibabel", "sitk"])
def test_lying_nifti_caught_before_allocation(tmp_path, reader):
    load = lambda p: load_image(p, reader=reader)  # noqa: E731
    header = lambda p: read_header(p, reader=reader)  # noqa: E731
    gz = lying_nifti(tmp_path, (1300, 1300, 1300))  # 2.2 GB claimed, 24 kB held: deflate's bound
    for fn in (load, header):
        message = raises_small_and_fast(fn, gz, r"lie\.nii\.gz")
        assert "its header claims 1300x1300x1300 voxels of uint8 (2,197,000,000 bytes of data)" in message
        assert "compressed bytes, which decompress to at most" in message
    plain = lying_nifti(tmp_path, (1300, 1300, 1300), gz=False)
    for fn in (load, header):
        message = raises_small_and_fast(fn, plain, r"lie\.nii")
        assert "but the file holds 24,000 bytes of data after its 352-byte header" in message
    # a claim within deflate's bound (1 MB on a few kB), its trailer disagreeing: counted, stopping at the claim
    near = lying_nifti(tmp_path, (100, 100, 100), name="near")
    for fn in (load, header):
        message = raises_small_and_fast(fn, near, r"near\.nii\.gz")
        assert "but the file decompresses to 24,352 bytes, 1,000,352 needed" in message
    # the gzip trailer forged to agree: deflate's bound still refuses it
    forged = bytearray(gz.read_bytes())
    forged[-4:] = ((1300**3 + 352) % 2**32).to_bytes(4, "little")
    (tmp_path / "forged.nii.gz").write_bytes(bytes(forged))
    raises_small_and_fast(load, tmp_path / "forged.nii.gz", "at most")


def test_lying_itk_headers_caught_before_allocation(tmp_path):
    # SimpleITK's buffers are not seen by tracemalloc: the peak resident memory of a fresh process
    array = labels((20, 30, 40))
    for name, compress in (("x.mha", False), ("c.mha", True), ("x.nrrd", False), ("c.nrrd", True)):
        sitk.WriteImage(sitk.GetImageFromArray(array.T.copy()), str(tmp_path / name), compress)
    sitk.WriteImage(sitk.GetImageFromArray(array.T.copy()), str(tmp_path / "d.mhd"), True)  # data in d.zraw
    sitk.WriteImage(sitk.GetImageFromArray(array.T.copy()), str(tmp_path / "d.nhdr"), False)  # data in d.raw
    lies = []
    for name in ("x.mha", "c.mha", "x.nrrd", "c.nrrd", "d.mhd", "d.nhdr"):
        text = (tmp_path / name).read_bytes()
        old = b"DimSize = 20 30 40" if "mh" in name else b"sizes: 20 30 40"
        assert old in text
        (tmp_path / f"lie_{name}").write_bytes(text.replace(old, old.replace(b"20 30 40", b"1300 1300 1300")))
        lies.append(str(tmp_path / f"lie_{name}"))
    code = (
        "import resource, sys\n"
        "from ccmetrics.formats.io import load_image, read_header, ImageReadError\n"
        "for path in sys.argv[1:]:\n"
        "    for fn in (read_header, load_image):\n"
        "        try:\n"
        "            fn(path)\n"
        "        except ImageReadError as e:\n"
        "            print(str(e).splitlines()[0])\n"
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')]\n"
        "print(int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    # VmHWM: this process's own peak (ru_maxrss would carry the parent's resident size across exec)
    out = subprocess.run([sys.executable, "-c", code, *lies], capture_output=True, text=True, check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 * len(lies) + 1, out.stdout + out.stderr
    assert int(lines[-1]) < 400 * 1024, f"peak {int(lines[-1]) // 1024} MB"  # the claim is 2.2 GB
    for line in lines[:-1]:
        assert "with SimpleITK" in line and "its header claims 1300x1300x1300 voxels of uint8" in line
    assert "the file holds 24,000 bytes of data after its" in lines[0]  # raw MHA
    assert "which decompress to at most" in lines[2]  # zlib MHA: deflate's bound
    assert "(data in " in lines[8] and "d.zraw" in lines[8]
    assert "the data file holds 24,000 bytes of data" in lines[10]  # detached NRRD


def test_honest_gzip_without_matching_trailer_is_read(tmp_path):
    # two gzip members: the trailer holds the second's size only; counting finds the data complete
    array = labels((20, 30, 40))
    raw = write_nifti(tmp_path / "x.nii", array, oblique_affine()).read_bytes()
    path = tmp_path / "two.nii.gz"
    path.write_bytes(gzip.compress(raw[:5000]) + b"\0" * 8 + gzip.compress(raw[5000:]))
    assert read_header(path).shape == (20, 30, 40)
    np.testing.assert_array_equal(load_image(path).array, array)


# --- the fast gzip path of the nibabel reader: the same array as nibabel's, bit for bit -----------


from ccmetrics.formats.io import _gunzip_array  # noqa: E402  (the private fast path, tested against nibabel)


def _nibabel_array(path):
    return np.asanyarray(nib.load(str(path), mmap=False).dataobj)


def _assert_as_nibabel(path):
    got, want = load_image(path).array, _nibabel_array(path)
    want = want.reshape(got.shape)  # load_image drops trailing singleton axes
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes(order="A") == want.tobytes(order="A") and got.flags.f_contiguous == want.flags.f_contiguous
    assert got.flags.writeable
    proxy = nib.load(str(path), mmap=False).dataobj
    if (proxy.slope, proxy.inter) == (1, 0):  # the fast path itself, called directly
        fast = _gunzip_array(str(path), proxy.shape, np.dtype(proxy.dtype), proxy.offset)
        assert fast.dtype == want.dtype and fast.tobytes(order="A") == _nibabel_array(path).tobytes(order="A")
    return got


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.float32, np.float64]
)
@pytest.mark.parametrize("shape", [(3, 1, 1), (31, 17), (40, 30, 20), (9, 8, 7, 1)])
def test_gzip_reader_equals_nibabel(tmp_path, dtype, shape):
    path = write_nifti(tmp_path / "x.nii.gz", labels(shape, dtype), oblique_affine())
    _assert_as_nibabel(path)


def test_gzip_reader_big_endian_extensions_and_large_chunks(tmp_path):
    # big-endian data, a header extension (voxels further into the file), several MiB of output
    array = labels((160, 150, 120), np.int16, seed=4)  # 5.8 MB: several 1 MiB pieces
    header = nib.Nifti1Header(endianness=">")
    header.set_data_dtype(np.int16)
    img = nib.Nifti1Image(array, oblique_affine(), header=header)
    img.header.extensions.append(nib.nifti1.Nifti1Extension(6, b"a comment " * 30))
    nib.save(img, str(tmp_path / "be.nii.gz"))
    got = _assert_as_nibabel(tmp_path / "be.nii.gz")
    assert got.dtype.byteorder == ">" and nib.load(str(tmp_path / "be.nii.gz")).dataobj.offset > 352
    np.testing.assert_array_equal(got, array)


def test_gzip_reader_many_members_and_padding(tmp_path):
    array = labels((50, 40, 30), np.uint16, seed=5)
    raw = write_nifti(tmp_path / "x.nii", array, oblique_affine()).read_bytes()
    cuts = [0, 100, 352, 353, 20000, 20001, 71234, len(raw)]  # members ending inside the header, at the data
    members = [gzip.compress(raw[a:b], compresslevel=1 + i % 9) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    path = tmp_path / "many.nii.gz"
    path.write_bytes(b"\0\0".join(members) + b"\0" * 3)
    np.testing.assert_array_equal(_assert_as_nibabel(path), array)


def test_gzip_reader_scaled_file_falls_back_to_nibabel(tmp_path):
    img = nib.Nifti1Image(labels((10, 9, 8), np.int16), oblique_affine(), dtype=np.int16)
    img.header.set_slope_inter(0.5, 3.0)
    nib.save(img, str(tmp_path / "scaled.nii.gz"))
    got = _assert_as_nibabel(tmp_path / "scaled.nii.gz")
    assert got.dtype == np.float64  # nibabel's scaling applied


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.999])
def test_gzip_reader_truncated_stream_is_refused(tmp_path, keep):
    # the gzip stream cut (its trailer lost too): the size check cannot tell, decompression must
    array = labels((60, 50, 40), np.uint8, seed=6)
    raw = write_nifti(tmp_path / "x.nii", array, oblique_affine()).read_bytes()
    whole = zlib.compressobj(6, zlib.DEFLATED, 31)
    stream = whole.compress(raw) + whole.flush()
    path = tmp_path / "cut.nii.gz"
    path.write_bytes(stream[: int(len(stream) * keep)])
    with pytest.raises(ImageReadError):
        load_image(path)


def test_load_image_c_order_gives_a_mask_c_contiguous_with_the_same_values(tmp_path):
    """``load_image(..., c_order=True)``: how a data set reads its cases (the public name of the former
    ``_load_image(..., c_order=True)``), a sparse one-byte ``.nii.gz`` C-contiguous, the same values and dtype."""
    rng = np.random.default_rng(0)
    mask = (rng.random((40, 30, 20)) < 0.01).astype(np.uint8)
    path = str(tmp_path / "mask.nii.gz")
    save_image(path, mask, spacing=(1.0, 1.0, 2.0))
    default, c_ordered = load_image(path), load_image(path, c_order=True)
    assert c_ordered.array.flags.c_contiguous and c_ordered.array.dtype == default.array.dtype == np.uint8
    np.testing.assert_array_equal(c_ordered.array, default.array)
    assert c_ordered.spacing == default.spacing and np.array_equal(c_ordered.affine, default.affine)
    with pytest.raises(TypeError):
        load_image(path, "auto", True)  # c_order is keyword only
