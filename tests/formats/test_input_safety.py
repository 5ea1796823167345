"""Inputs that gave a wrong number, hung, or blamed the wrong thing (issue 39, points 1-3, 15, 16): NIfTI spatial
units, 2D NIfTI planes, zero-size images, MetaImage/NRRD data files, damaged ``vox_offset``, a valid file too large
for the memory left. Every file is built field by field (or by nibabel/SimpleITK and then damaged), every FIFO is
real, every memory cap is a real ``RLIMIT_AS`` of a child process."""

from __future__ import annotations

import gzip
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from ccmetrics.formats.grids import align_pair
from ccmetrics.formats.image import ImageReadError
from ccmetrics.formats.io import _load_image, check_same_geometry, load_image, read_header, save_image

ROOT = Path(__file__).resolve().parents[2]
READERS = ("auto", "sitk")


def _nifti(path: Path, array: np.ndarray, affine: np.ndarray, units: int = 0, **fields) -> Path:
    """``array`` written by nibabel with ``affine`` as qform and sform (code 1), ``xyzt_units`` = ``units``, then the
    header ``fields`` set (raw values)."""
    img = nib.Nifti1Image(array, affine, dtype=array.dtype)
    img.set_qform(affine, code=1)
    img.set_sform(affine, code=1)
    img.header["xyzt_units"] = units
    for name, value in fields.items():
        img.header[name] = value
    nib.save(img, str(path))
    return path


# 1. NIfTI spatial units -------------------------------------------------------------------------------------------

_AFFINE = np.array([[0.5, 0, 0, -10.0], [0, 0.5, 0, 20.0], [0, 0, 3.0, 7.0], [0, 0, 0, 1]])
_MM = {0: 1.0, 1: 1000.0, 2: 1.0, 3: 0.001, 10: 1.0, 11: 0.001}  # 10, 11: mm and micron with seconds (8)


@pytest.mark.parametrize("code", sorted(_MM))
def test_every_spatial_unit_is_read_in_mm_by_every_reader(tmp_path, code):
    array = (np.arange(60).reshape(3, 4, 5) % 3).astype(np.uint8)
    expected = _AFFINE.copy()
    expected[:3] *= _MM[code]
    files = [
        _nifti(tmp_path / "plain.nii.gz", array, _AFFINE, code),  # the plain header path
        _nifti(tmp_path / "plain.nii", array, _AFFINE, code),
        _nifti(tmp_path / "scaled.nii.gz", array, _AFFINE, code, scl_slope=2.0, scl_inter=0.0),  # nibabel's path
    ]
    for path in files:
        for reader in READERS:
            image = load_image(path, reader=reader)
            np.testing.assert_allclose(image.affine, expected, rtol=1e-6, atol=1e-9, err_msg=f"{path} {reader}")
            np.testing.assert_allclose(image.spacing, np.array([0.5, 0.5, 3.0]) * _MM[code], rtol=1e-6)
            np.testing.assert_allclose(read_header(path, reader=reader).spacing, image.spacing, rtol=1e-6)
        c_ordered = _load_image(path, c_order=True)  # how a data set reads its files
        np.testing.assert_allclose(c_ordered.affine, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("code", [4, 5, 6, 7, 12])
def test_a_spatial_unit_nifti_does_not_define_is_refused_naming_it(tmp_path, code):
    array = np.zeros((3, 4, 5), np.uint8)
    for path in (
        _nifti(tmp_path / "plain.nii.gz", array, _AFFINE, code),
        _nifti(tmp_path / "scaled.nii", array, _AFFINE, code, scl_slope=2.0, scl_inter=0.0),
    ):
        for reader in READERS:
            for call in (load_image, read_header):
                with pytest.raises(ImageReadError) as caught:
                    call(path, reader=reader)
                message = str(caught.value)
                assert f"spatial unit code {code & 7} in its header's xyzt_units field ({code})" in message
                assert "set_xyzt_units('mm')" in message and "truncated" not in message


@pytest.mark.slow
def test_a_micron_pair_gives_hd95_in_mm(tmp_path):
    # 0.5 mm voxels written as 500 micron: the prediction is the GT moved by 2 voxels, 1 mm
    from ccmetrics import evaluate_dataset

    gt = np.zeros((20, 20, 20), np.uint8)
    gt[5:12, 5:12, 5:12] = 1
    pred = np.roll(gt, 2, axis=0)
    micron = np.diag([500.0, 500.0, 500.0, 1.0])
    for folder, array in (("gt", gt), ("pred", pred)):
        (tmp_path / folder).mkdir()
        _nifti(tmp_path / folder / "case.nii.gz", array, micron, units=3)
    result = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["hd95", "dice"], progress=False, workers=1)
    row = result.per_case.iloc[0]
    assert row["hd95"] == pytest.approx(1.0) and row["dice"] == pytest.approx(5 / 7)
    assert row["spacing"] == "0.5x0.5x0.5"


# 2. 2D NIfTI planes -----------------------------------------------------------------------------------------------

_SLICE = (np.arange(30).reshape(5, 6) % 2).astype(np.uint8)


def _plane(path: Path, affine: np.ndarray) -> Path:
    return _nifti(path, _SLICE, affine)


def test_2d_slices_in_parallel_planes_are_refused(tmp_path):
    above = np.eye(4)
    above[2, 3] = 50.0
    gt_path, pred_path = _plane(tmp_path / "gt.nii.gz", np.eye(4)), _plane(tmp_path / "pred.nii.gz", above)
    for reader in READERS:
        gt, pred = load_image(gt_path, reader=reader), load_image(pred_path, reader=reader)
        np.testing.assert_allclose(pred.affine_3d, above)
        assert check_same_geometry(gt, pred) == (
            "origin differs: gt (0.0, 0.0, 0.0) mm, pred (0.0, 0.0, 50.0) mm "
            "(the 2D images lie in parallel planes 50 mm apart)"
        )
        with pytest.raises(ValueError, match="parallel planes 50 mm apart"):
            align_pair(gt, pred)
    same = _plane(tmp_path / "same.nii.gz", np.eye(4))
    assert align_pair(load_image(gt_path), load_image(same))[2] == []  # the same plane: one grid


def test_a_coronal_slice_beside_an_axial_one_is_refused(tmp_path):
    coronal = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])  # j runs along z
    gt, pred = load_image(_plane(tmp_path / "gt.nii", np.eye(4))), load_image(_plane(tmp_path / "p.nii", coronal))
    assert check_same_geometry(gt, pred) == (
        "direction differs: gt ((1.0, 0.0), (0.0, 1.0), (0.0, 0.0)), pred ((1.0, 0.0), (0.0, 0.0), (0.0, 1.0)) "
        "(the 2D images lie in different planes)"
    )
    # a single-slice 3D pair of the same planes was refused already: the 2D pair now is too
    with pytest.raises(ValueError, match="different planes"):
        align_pair(gt, pred)


def test_saving_a_2d_image_keeps_its_plane(tmp_path):
    tilted = np.array([[0.8, 0, 0, 3.0], [0, 0, 1.2, -4.0], [0, 0.9, 0, 25.0], [0, 0, 0, 1]])
    image = load_image(_plane(tmp_path / "a.nii.gz", tilted))
    save_image(tmp_path / "b.nii.gz", image.array, like=image)
    again = load_image(tmp_path / "b.nii.gz")
    np.testing.assert_allclose(again.affine_3d, tilted, atol=1e-6)
    assert check_same_geometry(image, again) is None


def test_an_oblique_2d_plane_has_one_affine_3d_for_every_reader(tmp_path):
    # SimpleITK's 2D geometry keeps only the in-plane part of a tilted column (0.866, not 1): pasted over the
    # header's 3D affine it put the sitk read of the same file in another plane than the default read
    t = np.deg2rad(30)
    tilted = np.array([[1, 0, 0, 2.0], [0, np.cos(t), -np.sin(t), -3.0], [0, np.sin(t), np.cos(t), 5.0], [0, 0, 0, 1]])
    for n, affine in enumerate((tilted, tilted @ np.diag([0.5, 0.5, 2.0, 1]))):
        path = _plane(tmp_path / f"oblique{n}.nii", affine)
        default, sitk_read = load_image(path), load_image(path, reader="sitk")
        np.testing.assert_allclose(default.affine_3d, affine, atol=1e-6)
        np.testing.assert_allclose(sitk_read.affine_3d, default.affine_3d, atol=1e-6)
        assert check_same_geometry(default, sitk_read) is None


# 3. zero-size images ----------------------------------------------------------------------------------------------


def test_a_nifti_with_an_empty_axis_is_refused_naming_it(tmp_path):
    head = nib.Nifti1Image(np.zeros((1, 10, 10), np.uint8), np.eye(4)).header
    head.set_data_shape((0, 10, 10))  # dim[1] = 0: no voxel at all
    raw = head.binaryblock + bytes(4)
    (tmp_path / "empty.nii").write_bytes(raw)
    (tmp_path / "empty.nii.gz").write_bytes(gzip.compress(raw))
    for name in ("empty.nii", "empty.nii.gz"):
        for reader in READERS:
            for call in (load_image, read_header):
                with pytest.raises(
                    ImageReadError, match=r"holds no voxels: its header gives axis 0 length 0 \(dim\[1\]"
                ):
                    call(tmp_path / name, reader=reader)


@pytest.mark.parametrize(
    ("name", "header", "field"),
    [
        (
            "empty.mha",
            "ObjectType = Image\nNDims = 3\nDimSize = 0 10 10\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n",
            "DimSize",
        ),
        (
            "empty2.mha",
            "ObjectType = Image\nNDims = 3\nDimSize = 10 10 0\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n",
            "DimSize",
        ),
    ],
)
def test_a_metaimage_with_an_empty_axis_is_refused_naming_it(tmp_path, name, header, field):
    (tmp_path / name).write_text(header)
    axis = header.split("DimSize = ")[1].split("\n")[0].split().index("0")
    for call in (load_image, read_header):
        with pytest.raises(ImageReadError, match=rf"holds no voxels: its header gives axis {axis} length 0 \({field};"):
            call(tmp_path / name)


# 15. MetaImage and NRRD data files --------------------------------------------------------------------------------

_MHD = "ObjectType = Image\nNDims = 3\nDimSize = 4 4 4\nElementType = MET_UCHAR\nElementDataFile = {}\n"


def test_a_data_file_outside_the_header_folder_is_refused(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ok.raw").write_bytes(bytes(64))
    (tmp_path / "outside.raw").write_bytes(bytes(64))
    for name, data in (("abs.mhd", "/dev/zero"), ("up.mhd", "../outside.raw")):
        (tmp_path / "data" / name).write_text(_MHD.format(data))
        for call in (load_image, read_header):
            with pytest.raises(ImageReadError) as caught:
                call(tmp_path / "data" / name)
            assert f"its data file {data!r} (ElementDataFile) lies outside the header's folder" in str(caught.value)
    (tmp_path / "sub.mhd").write_text(_MHD.format("data/ok.raw"))  # below the header: read
    assert load_image(tmp_path / "sub.mhd").array.shape == (4, 4, 4)
    nrrd = "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 4 4 4\nencoding: raw\ndata file: /dev/zero\n"
    (tmp_path / "zero.nhdr").write_text(nrrd)
    with pytest.raises(ImageReadError, match=r"its data file '/dev/zero' \(data file\) lies outside"):
        load_image(tmp_path / "zero.nhdr")


def test_a_device_as_data_file_is_refused(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.raw")  # inside the folder by name, a device by nature
    (tmp_path / "dev.mhd").write_text(_MHD.format("zero.raw"))
    with pytest.raises(ImageReadError, match=r"\(ElementDataFile\) is a character device, not a regular file"):
        load_image(tmp_path / "dev.mhd")


_FIFO_READ = textwrap.dedent(
    """
    import sys
    from ccmetrics.formats.io import load_image, read_header
    for call in (read_header, load_image):
        try:
            call(sys.argv[1])
            print("read")
        except Exception as e:
            print(type(e).__name__, e)
    """
)


@pytest.mark.slow
def test_a_fifo_as_data_file_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "pipe.raw")
    (tmp_path / "slice1.raw").write_bytes(bytes(16))
    os.mkfifo(tmp_path / "slice2.raw")
    headers = {
        "one.mhd": (_MHD.format("pipe.raw"), "pipe.raw"),
        "list.mhd": (_MHD.format("LIST") + "pipe.raw\n", "pipe.raw"),
        "pattern.mhd": (_MHD.replace("4 4 4", "4 4 2").format("slice%d.raw 1 2 1"), "slice2.raw"),
        "one.nhdr": (
            "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 4 4 4\nencoding: raw\ndata file: pipe.raw\n",
            "pipe.raw",
        ),
    }
    for name, (text, fifo) in headers.items():
        (tmp_path / name).write_text(text)
        done = subprocess.run(
            [sys.executable, "-c", _FIFO_READ, str(tmp_path / name)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,  # a hang fails the test here (SimpleITK blocked on the FIFO before the fix)
        )
        lines = done.stdout.splitlines()
        assert len(lines) == 2, (name, done.stdout, done.stderr)
        for line in lines:
            assert line.startswith("ImageReadError") and "is a FIFO (named pipe), not a regular file" in line, line
            assert str(tmp_path / fifo) in line


def _read_in_child(path: Path) -> list[str]:
    """What ``read_header`` and ``load_image`` of ``path`` say, each in a child process (a hang or a signal fails the
    test here, not the run)."""
    done = subprocess.run(
        [sys.executable, "-c", _FIFO_READ, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 2, (path.name, done.returncode, done.stdout, done.stderr)
    return lines


@pytest.mark.slow
def test_a_metaimage_pattern_of_one_to_three_words_is_expanded_as_metaio_does(tmp_path):
    # MetaIO fills in the numbers a pattern leaves out (1 to the last DimSize; a 3-word pattern's step is
    # (last - first) / DimSize): the names were not checked (a FIFO s2.raw hung), and a step of 0 killed the
    # process (SIGFPE in ITK)
    header = _MHD.replace("4 4 4", "2 2 2")
    (tmp_path / "s1.raw").write_bytes(bytes(4))
    os.mkfifo(tmp_path / "s2.raw")
    for n, pattern in enumerate(("s%d.raw", "s%d.raw 1", "s%d.raw 1 3")):  # each reads s1.raw and s2.raw
        (tmp_path / f"p{n}.mhd").write_text(header.format(pattern))
        for line in _read_in_child(tmp_path / f"p{n}.mhd"):
            assert line.startswith("ImageReadError") and "is a FIFO (named pipe), not a regular file" in line, line
            assert str(tmp_path / "s2.raw") in line
    for n, pattern in enumerate(("s%d.raw 1 2", "s%d.raw 1 4 0", "s%d.raw 4 1 -1")):  # step 0, 0, below 0
        (tmp_path / f"step{n}.mhd").write_text(header.format(pattern))
        for line in _read_in_child(tmp_path / f"step{n}.mhd"):
            assert line.startswith("ImageReadError") and f"pattern {pattern!r} gives a step of" in line, line
            assert "'name%d.ext <first> <last> <step>'" in line
    # the forms ITK reads, from regular files: every number form gives the right slices
    for number in range(1, 6):
        (tmp_path / "ok").mkdir(exist_ok=True)
        (tmp_path / "ok" / f"s{number}.raw").write_bytes(bytes([number]) * 4)
    for pattern, slices in (
        ("s%d.raw", (1, 2)),
        ("s%d.raw 2", (2, 3)),
        ("s%d.raw 1 5", (1, 3)),
        ("s%d.raw 2 5 3", (2, 5)),
    ):
        (tmp_path / "ok" / "read.mhd").write_text(header.format(pattern))
        for reader in READERS:
            image = load_image(tmp_path / "ok" / "read.mhd", reader=reader)
            assert image.array[0, 0].tolist() == list(slices), (pattern, reader)


@pytest.mark.slow
def test_a_nrrd_header_that_runs_to_the_end_of_its_file_is_checked(tmp_path):
    # a .nrrd without the blank line that ends an attached header is a detached header: its data file was not checked
    nrrd = "NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 2\nencoding: raw\ndata file: {}\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "secret.raw").write_bytes(bytes(8))
    (tmp_path / "in" / "abs.nrrd").write_text(nrrd.format(tmp_path / "secret.raw"))
    with pytest.raises(ImageReadError, match=r"\(data file\) lies outside the header's folder"):
        load_image(tmp_path / "in" / "abs.nrrd")
    (tmp_path / "in" / "a.raw").write_bytes(bytes(4))
    os.mkfifo(tmp_path / "in" / "pipe.raw")
    (tmp_path / "in" / "fifo.nrrd").write_text(nrrd.format("pipe.raw"))
    (tmp_path / "in" / "list.nrrd").write_text(nrrd.format("LIST") + "a.raw\npipe.raw\n")
    for name in ("fifo.nrrd", "list.nrrd"):
        for line in _read_in_child(tmp_path / "in" / name):
            assert line.startswith("ImageReadError") and "is a FIFO (named pipe), not a regular file" in line, line
    # legitimate NRRD files still read: attached data, a detached header, a LIST of regular files
    os.remove(tmp_path / "in" / "pipe.raw")
    (tmp_path / "in" / "b.raw").write_bytes(bytes([1]) * 4)
    (tmp_path / "in" / "attached.nrrd").write_bytes(nrrd.replace("data file: {}\n", "\n").encode() + bytes(range(8)))
    (tmp_path / "in" / "pair.nhdr").write_text(nrrd.format("b.raw").replace("2 2 2", "2 2 1"))
    (tmp_path / "in" / "list2.nrrd").write_text(nrrd.format("LIST") + "a.raw\nb.raw\n")
    assert load_image(tmp_path / "in" / "attached.nrrd").array.ravel(order="F").tolist() == list(range(8))
    assert load_image(tmp_path / "in" / "pair.nhdr").array.shape == (2, 2, 1)
    assert load_image(tmp_path / "in" / "list2.nrrd").array[0, 0].tolist() == [0, 1]


def test_a_header_or_list_longer_than_what_is_checked_is_refused(tmp_path, monkeypatch):
    # an ElementDataFile past the first MiB, a LIST past the bytes read or past _MAX_DATA_FILES names: the names
    # were left unchecked (or checked in part) and SimpleITK read them
    from ccmetrics.formats import _itk_data_files as image_io

    (tmp_path / "in").mkdir()
    (tmp_path / "secret.raw").write_bytes(bytes(64))
    padding = "".join(f"Comment{n} = {'padding ' * 8}\n" for n in range(20_000))
    (tmp_path / "in" / "long.mhd").write_text(
        _MHD.replace("ElementDataFile", padding + "ElementDataFile").format(tmp_path / "secret.raw")
    )
    with pytest.raises(
        ImageReadError, match="its header runs past its first 1,048,576 bytes without its ElementDataFile line"
    ):
        load_image(tmp_path / "in" / "long.mhd")
    for n in range(4):
        (tmp_path / "in" / f"s{n}.raw").write_bytes(bytes(16))
    listed = _MHD.format("LIST") + "".join(f"s{n}.raw\n" for n in range(4))
    (tmp_path / "in" / "list.mhd").write_text(listed)
    assert load_image(tmp_path / "in" / "list.mhd").array.shape == (4, 4, 4)  # a LIST of regular files reads
    monkeypatch.setattr(image_io, "_MAX_DATA_FILES", 3)
    with pytest.raises(ImageReadError, match=r"its LIST of data files \(ElementDataFile\) names 4 files, more than"):
        load_image(tmp_path / "in" / "list.mhd")
    with pytest.raises(ImageReadError, match="names 4 files, more than the 3 ccmetrics checks"):
        (tmp_path / "in" / "pattern.mhd").write_text(_MHD.format("s%d.raw 0 3 1"))
        load_image(tmp_path / "in" / "pattern.mhd")
    monkeypatch.setattr(image_io, "_MAX_DATA_FILES", 100)
    monkeypatch.setattr(image_io, "_MAX_LIST_BYTES", 20)
    with pytest.raises(ImageReadError, match=r"its LIST of data files \(ElementDataFile\) runs past 20 bytes"):
        load_image(tmp_path / "in" / "list.mhd")


def test_a_symbolic_link_out_of_the_header_folder_is_refused(tmp_path):
    # the check was lexical: a link inside the folder to a file (or a folder) outside it was read
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "secret.raw").write_bytes(bytes(64))
    os.symlink(tmp_path / "out" / "secret.raw", tmp_path / "in" / "x.raw")
    os.symlink(tmp_path / "out", tmp_path / "in" / "sub")
    for name in ("x.raw", "sub/secret.raw"):
        (tmp_path / "in" / "link.mhd").write_text(_MHD.format(name))
        for call in (load_image, read_header):
            with pytest.raises(ImageReadError) as caught:
                call(tmp_path / "in" / "link.mhd")
            assert f"its data file {name!r} (ElementDataFile) is a symbolic link (or lies under one) to " in str(
                caught.value
            )
            assert "outside the header's folder" in str(caught.value)
    (tmp_path / "in" / "data").mkdir()
    (tmp_path / "in" / "data" / "ok.raw").write_bytes(bytes(64))
    os.symlink(tmp_path / "in" / "data" / "ok.raw", tmp_path / "in" / "inside.raw")  # a link within: read
    for name in ("data/ok.raw", "inside.raw"):
        (tmp_path / "in" / "ok.mhd").write_text(_MHD.format(name))
        assert load_image(tmp_path / "in" / "ok.mhd").array.shape == (4, 4, 4)


def test_metaimage_fields_are_found_as_metaio_spells_them(tmp_path):
    # MetaIO's keys are case-sensitive and end at '=' or ':': a lower-case decoy was taken for the data file, and
    # 'ElementDataFile: name' was not found at all
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ok.raw").write_bytes(bytes(64))
    (tmp_path / "secret.raw").write_bytes(bytes(64))
    secret = str(tmp_path / "secret.raw")
    decoy = _MHD.replace("ElementDataFile = {}", f"elementdatafile = ok.raw\nElementDataFile = {secret}")
    for name, text in (("decoy.mhd", decoy), ("colon.mhd", _MHD.replace(" = {}", ": {}").format(secret))):
        (tmp_path / "in" / name).write_text(text)
        with pytest.raises(ImageReadError, match=r"\(ElementDataFile\) lies outside the header's folder"):
            load_image(tmp_path / "in" / name)


def test_a_fifo_given_as_the_image_is_refused(tmp_path):
    os.mkfifo(tmp_path / "case.mha")
    with pytest.raises(ImageReadError, match="is a FIFO \\(named pipe\\), not a regular file"):
        load_image(tmp_path / "case.mha")


def test_a_size_past_2_to_the_64_is_refused_by_its_claim(tmp_path):
    # 2**31 x 2**31 x 4 bytes = 2**64: in int64 the product wrapped to 0 and passed the size check
    text = "ObjectType = Image\nNDims = 3\nDimSize = 2147483648 2147483648 4\nElementType = MET_UCHAR\n"
    (tmp_path / "huge.mha").write_bytes((text + "ElementDataFile = LOCAL\n").encode() + bytes(64))
    for call in (load_image, read_header):
        with pytest.raises(ImageReadError) as caught:
            call(tmp_path / "huge.mha")
        claim = f"claims 2147483648x2147483648x4 voxels of uint8 ({2**64:,} bytes of data), but the file holds 64 bytes"
        assert claim in str(caught.value)


# 16. messages -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_a_damaged_vox_offset_is_named(tmp_path, value):
    _nifti(tmp_path / "ok.nii", np.zeros((4, 5, 6), np.uint8), np.eye(4))
    raw = bytearray((tmp_path / "ok.nii").read_bytes())
    struct.pack_into("<f", raw, 108, value)  # vox_offset: bytes 108-111
    (tmp_path / "bad.nii").write_bytes(bytes(raw))
    (tmp_path / "bad.nii.gz").write_bytes(gzip.compress(bytes(raw)))
    for name in ("bad.nii", "bad.nii.gz"):
        for reader in READERS:
            for call in (load_image, read_header):
                with pytest.raises(ImageReadError) as caught:
                    call(tmp_path / name, reader=reader)
                assert f"its header's vox_offset (the byte where the voxels start) is {float(value)}" in str(
                    caught.value
                )


_TIGHT = textwrap.dedent(
    """
    import resource, sys
    import nibabel, SimpleITK  # (imported before the cap)
    from ccmetrics.formats.io import load_image
    size = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + (160 << 20), size + (160 << 20)))  # 160 MiB more than now
    for path, reader in zip(sys.argv[1::2], sys.argv[2::2]):
        try:
            load_image(path, reader=reader)
            print("read")
        except MemoryError as e:
            print(type(e).__name__, e)
        except Exception as e:
            print("other", type(e).__name__, e)
    """
)


@pytest.mark.slow
def test_a_valid_file_too_large_for_the_memory_left_is_not_called_corrupt(tmp_path):
    shape = (512, 512, 512)  # 128 MiB of int16 zeros: valid files, sparse on disk
    head = nib.Nifti1Image(np.zeros((1, 1, 1), np.int16), np.eye(4)).header
    head.set_data_shape(shape)
    head.set_qform(np.eye(4), code=1)
    head.set_sform(np.eye(4), code=1)
    for name, slope in (("plain.nii", np.nan), ("scaled.nii", 2.0)):  # the plain reader; nibabel (scaled)
        head["scl_slope"], head["scl_inter"] = slope, 0.0
        with open(tmp_path / name, "wb") as f:
            f.write(head.binaryblock + bytes(4))
            f.truncate(352 + 2 * 512**3)
    args = [
        str(tmp_path / "plain.nii"),
        "auto",
        str(tmp_path / "scaled.nii"),
        "auto",
        str(tmp_path / "plain.nii"),
        "sitk",
    ]
    done = subprocess.run([sys.executable, "-c", _TIGHT, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = done.stdout.splitlines()
    assert len(lines) == 3, (done.stdout, done.stderr)
    for line in lines:
        assert line.startswith("ImageMemoryError not enough memory to read"), line
        assert f"512x512x512 voxels of int16 need {2 * 512**3:,} bytes (0.25 GiB)" in line
        assert "--max-memory" in line and "truncated or corrupt" not in line
