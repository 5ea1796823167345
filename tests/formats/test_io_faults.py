"""Faulty inputs of ccmetrics.formats.io that must be refused early and named: a gzip NIfTI whose trailer lies about its
size (refused before the claimed array is resident, scaled files too), and symbolic links that lead nowhere."""

import gzip
import json
import os
import struct
import subprocess
import sys
import zlib

import nibabel as nib
import numpy as np
import pytest

import ccmetrics
from ccmetrics.formats.io import ImageReadError, load_image, read_header, save_image

CLAIM = (600, 600, 600)  # what the forged headers claim
HELD = (64, 64, 48)  # what the forged files hold


def nifti_bytes(data, dims=None, slope=None, inter=None, endian="<"):
    """A single-file NIfTI-1 (352-byte header, no extension) of ``data``, its header's dim set to ``dims``."""
    header = nib.Nifti1Header(endianness=endian)
    header.set_data_dtype(data.dtype)
    header.set_data_shape(data.shape if dims is None else dims)
    header.set_zooms((0.8,) * data.ndim)
    if slope is not None:
        header["scl_slope"] = slope
    if inter is not None:
        header["scl_inter"] = inter
    header["vox_offset"] = 352
    return header.binaryblock + b"\0" * 4 + data.astype(data.dtype.newbyteorder(endian)).tobytes(order="F")


def gzip_member(payload, isize=None, min_size=0):
    """One gzip member of ``payload`` whose trailer claims ``isize`` bytes (default: the truth), at least
    ``min_size`` bytes long: empty stored deflate blocks (5 bytes, no output) pad it to beat deflate's 1032:1
    bound."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(payload) + deflate.flush(zlib.Z_SYNC_FLUSH)  # byte-aligned, the stream still open
    blocks = max(0, -(-(min_size - len(body) - 23) // 5))
    body += b"\x00\x00\x00\xff\xff" * blocks + b"\x01\x00\x00\xff\xff"  # empty stored blocks, the last one final
    isize = len(payload) if isize is None else isize
    return b"\x1f\x8b\x08\x00\0\0\0\0\x00\xff" + body + struct.pack("<II", zlib.crc32(payload), isize % 2**32)


def held_data(dtype, shape=HELD, seed=0):
    return np.random.default_rng(seed).integers(0, 5, shape).astype(dtype)


def forged_nifti(path, dtype, slope=None, members=1):
    """A .nii.gz whose header claims CLAIM voxels while it holds HELD, its (last) gzip trailer forged to the
    header's size, padded so that deflate's 1032:1 bound does not already refuse it."""
    payload = nifti_bytes(held_data(dtype), CLAIM, slope=slope)
    need = int(np.prod(CLAIM)) * np.dtype(dtype).itemsize + 352
    cut = len(payload) // 2 if members == 2 else 0
    first = gzip.compress(payload[:cut]) if cut else b""
    last = gzip_member(payload[cut:], isize=need, min_size=need // 1032 + 1000 - len(first))
    path.write_bytes(first + last)
    assert need <= 1032 * path.stat().st_size  # the bound passes
    with open(path, "rb") as f:  # the trailer agrees with the header
        f.seek(-4, os.SEEK_END)
        assert int.from_bytes(f.read(4), "little") == need % 2**32
    honest = gzip_member(payload[cut:], min_size=need // 1032)  # the same member with its true trailer
    assert gzip.decompress(honest) == payload[cut:]  # (the padding is valid deflate)
    return path, len(payload), need


# --- point 8: a gzip trailer that lies about its size -----------------------------------------------------------

_MEASURE = """
import json, sys
from ccmetrics.formats.io import ImageReadError, load_image

def hwm():  # this process's peak resident memory, kB
    return int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1])

load_image(sys.argv[1])  # imports and code paths warm: a small honest file like the forged one
before = hwm()
try:
    load_image(sys.argv[2])
    error = None
except Exception as e:
    error = [type(e).__name__, isinstance(e, ImageReadError), isinstance(e, ValueError), str(e)]
print(json.dumps({"before_kb": before, "after_kb": hwm(), "error": error}))
"""


@pytest.mark.parametrize(
    "dtype, slope, members",
    [(np.int16, 2.0, 1), (np.uint8, 2.0, 1), (np.uint8, None, 1), (np.int16, 2.0, 2)],
    ids=["int16-slope2", "uint8-slope2", "uint8-unscaled", "int16-slope2-two-members"],
)
def test_forged_gzip_trailer_refused_before_allocation(tmp_path, dtype, slope, members):
    path, held, need = forged_nifti(tmp_path / "case.nii.gz", dtype, slope, members)
    warm = tmp_path / "warm.nii.gz"
    warm.write_bytes(gzip.compress(nifti_bytes(held_data(dtype, (8, 8, 8)), slope=slope)))
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(warm), str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    grown_mb = (report["after_kb"] - report["before_kb"]) / 1024
    claimed_mb = need / 2**20
    before, after = report["before_kb"], report["after_kb"]
    print(f"VmHWM {before} kB -> {after} kB (+{grown_mb:.1f} MB; {claimed_mb:.0f} MB claimed)")
    assert report["error"] is not None, "the forged file was read"
    name, is_read_error, is_value_error, message = report["error"]
    assert (name, is_read_error, is_value_error) == ("ImageReadError", True, True), message
    assert grown_mb < 64, f"reading grew the peak by {grown_mb:.0f} MB ({claimed_mb:.0f} MB claimed)"
    assert "case.nii.gz" in message and "600x600x600 voxels" in message
    assert f"but the file decompresses to {held:,} bytes, {need:,} needed" in message  # ends before the claim
    assert f"its gzip trailer claims {need:,} bytes" in message  # the lie is named


def test_forged_gzip_trailer_read_header_trusts_it_but_load_image_refuses(tmp_path):
    # read_header reads no voxel: an agreeing trailer is taken as it is; load_image finds where the stream ends
    path, held, need = forged_nifti(tmp_path / "case.nii.gz", np.uint8, 2.0)
    assert read_header(path).shape == CLAIM
    with pytest.raises(ImageReadError, match=f"decompresses to {held:,} bytes, {need:,} needed"):
        load_image(path)


SCALINGS = {
    "none": (None, None),
    "one-zero": (1.0, 0.0),
    "slope2": (2.0, None),
    "slope2-inter0": (2.0, 0.0),
    "slope-inter": (0.5, 3.0),
    "inter-only": (1.0, -1024.0),
    "nan-slope": (float("nan"), 5.0),
    "big-slope": (3e38, 0.0),
}


def _nibabel_array(path):
    return np.asanyarray(nib.load(str(path), mmap=False).dataobj)


def _no_nibabel_read(monkeypatch):
    """Make nibabel's own reading of the voxels fail: the array must come from ccmetrics' gzip path."""
    from nibabel.arrayproxy import ArrayProxy

    def refuse(*args, **kwargs):
        raise AssertionError("nibabel read the voxels")

    monkeypatch.setattr(ArrayProxy, "_get_unscaled", refuse)


def _assert_same(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    assert got.tobytes(order="A") == want.tobytes(order="A")
    assert got.flags.f_contiguous == want.flags.f_contiguous and got.flags.writeable


@pytest.mark.parametrize("scaling", list(SCALINGS))
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_scaled_gzip_equals_nibabel(tmp_path, monkeypatch, dtype, scaling):
    slope, inter = SCALINGS[scaling]
    data = held_data(dtype, (33, 20, 17), seed=3) - (2 if np.dtype(dtype).kind != "u" else 0)
    path = tmp_path / "x.nii.gz"
    path.write_bytes(gzip.compress(nifti_bytes(data, slope=slope, inter=inter)))
    want = _nibabel_array(path)
    assert read_header(path).dtype == want.dtype
    _no_nibabel_read(monkeypatch)
    _assert_same(load_image(path).array, want)


def test_scaled_gzip_big_endian_and_several_mib_equals_nibabel(tmp_path, monkeypatch):
    data = held_data(np.int16, (160, 150, 120), seed=4)  # 5.8 MB: several 1 MiB pieces
    path = tmp_path / "be.nii.gz"
    path.write_bytes(gzip.compress(nifti_bytes(data, slope=0.25, inter=-7.0, endian=">"), 6))
    want = _nibabel_array(path)
    _no_nibabel_read(monkeypatch)
    _assert_same(load_image(path).array, want)
    np.testing.assert_array_equal(want, data * 0.25 - 7.0)


@pytest.mark.parametrize("slope", [None, 2.0])
def test_honest_gzip_longer_than_its_header_is_read(tmp_path, slope):
    # the stream holds more than the header's voxels (a true trailer): the first voxels, as nibabel reads them
    payload = nifti_bytes(held_data(np.int16), (64, 64, 40), slope=slope)
    path = tmp_path / "long.nii.gz"
    path.write_bytes(gzip.compress(payload))
    got = load_image(path).array
    _assert_same(got, _nibabel_array(path))
    assert got.shape == (64, 64, 40) and read_header(path).shape == (64, 64, 40)
    np.testing.assert_array_equal(got, held_data(np.int16)[:, :, :40] * (slope or 1))


def test_gzip_members_larger_than_zlibs_input_and_output_pieces(tmp_path, monkeypatch):
    # members spanning several of the 64 KiB windows given to zlib (incompressible voxels) and several 1 MiB pieces
    # of output (zeros): each member's trailer is found where its deflate data end
    data = np.zeros((200, 150, 100), np.int16)  # 6 MB
    data[:90, :80, :70] = np.random.default_rng(7).integers(-30000, 30000, (90, 80, 70))
    payload = nifti_bytes(data, slope=2.0, inter=1.0)
    cut = len(payload) // 3
    path = tmp_path / "big.nii.gz"
    path.write_bytes(gzip.compress(payload[:cut], 1) + b"\0" * 5 + gzip.compress(payload[cut:], 6))
    want = _nibabel_array(path)
    _no_nibabel_read(monkeypatch)
    _assert_same(load_image(path).array, want)
    np.testing.assert_array_equal(want, data * 2.0 + 1.0)


def test_truncated_scaled_gzip_is_refused(tmp_path):
    payload = nifti_bytes(held_data(np.int16, (60, 50, 40), seed=6), slope=2.0)
    stream = gzip.compress(payload)
    path = tmp_path / "cut.nii.gz"
    path.write_bytes(stream[: len(stream) * 9 // 10])
    with pytest.raises(ImageReadError, match=r"cut\.nii\.gz.*but the file decompresses to [\d,]+ bytes"):
        load_image(path)


def test_corrupt_gzip_crc_is_refused(tmp_path):
    data = held_data(np.uint8, (30, 20, 10))
    stream = bytearray(gzip.compress(nifti_bytes(data, slope=2.0)))
    stream[-8] ^= 0xFF  # the CRC-32 of the trailer
    path = tmp_path / "crc.nii.gz"
    path.write_bytes(bytes(stream))
    with pytest.raises(ImageReadError, match=r"crc\.nii\.gz.*CRC-32"):
        load_image(path)


def test_garbage_between_gzip_members_is_refused(tmp_path):
    payload = nifti_bytes(held_data(np.uint8, (100, 100, 10)))
    path = tmp_path / "junk.nii.gz"  # (nibabel reads the header well: the junk lies in the voxels)
    path.write_bytes(gzip.compress(payload[:50000]) + b"\0\0junk" + gzip.compress(payload[50000:]))
    with pytest.raises(ImageReadError, match=r"junk\.nii\.gz.*no gzip member"):
        load_image(path)


# --- point 9: symbolic links in a loop or to nothing ------------------------------------------------------------


def _links(folder):
    """A self-loop, a loop of two and a dangling link, all named like images; returns {kind: (path, target)}."""
    folder.mkdir(exist_ok=True)
    self_loop, a, b, dangling = (folder / n for n in ("self.nii.gz", "a.nii.gz", "b.nii.gz", "dangling.nii.gz"))
    os.symlink(self_loop.name, self_loop)
    os.symlink(b.name, a)
    os.symlink(a.name, b)
    missing = folder / "elsewhere" / "case.nii.gz"
    os.symlink(missing, dangling)
    return {"self": self_loop, "loop": a, "dangling": dangling}, missing


@pytest.mark.parametrize("fn", [load_image, read_header], ids=["load_image", "read_header"])
def test_symlink_loops_and_dangling_links_are_named(tmp_path, fn):
    links, missing = _links(tmp_path)
    messages = {}
    for kind, path in links.items():
        with pytest.raises(FileNotFoundError) as info:
            fn(path)
        messages[kind] = str(info.value)
        assert messages[kind].startswith(f"cannot read {str(path)!r}: it is a ")
        assert "image file not found" not in messages[kind]
    assert "it is a symbolic link that points to itself (a loop)" in messages["self"]
    a, b = repr(str(tmp_path / "a.nii.gz")), repr(str(tmp_path / "b.nii.gz"))
    assert f"it is a symbolic link in a loop: {a} -> {b} -> {a}" in messages["loop"]
    assert f"it is a dangling symbolic link to {str(missing)!r} (the target does not exist)" in messages["dangling"]
    for kind in ("self", "loop"):  # what to do
        assert "replace it with the image file or a link to it" in messages[kind]
    assert "restore the target, point the link at the image file, or remove the link" in messages["dangling"]


def test_dangling_link_through_another_link_names_the_missing_end(tmp_path):
    first, second = tmp_path / "first.nii.gz", tmp_path / "second.nii.gz"
    os.symlink(second, first)
    os.symlink(tmp_path / "gone.nii.gz", second)
    with pytest.raises(FileNotFoundError, match="dangling symbolic link") as info:
        load_image(first)
    assert repr(str(tmp_path / "gone.nii.gz")) in str(info.value)


def test_missing_file_still_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="image file not found"):
        load_image(tmp_path / "nope.nii.gz")
    with pytest.raises(FileNotFoundError, match="image file not found"):
        read_header(tmp_path / "nope.nii.gz")


def test_dangling_prediction_link_is_an_error_row(tmp_path):
    gt_dir, pred_dir = tmp_path / "gt", tmp_path / "pred"
    gt_dir.mkdir()
    pred_dir.mkdir()
    mask = np.zeros((12, 10, 8), np.uint8)
    mask[3:7, 2:6, 2:5] = 1
    for case in ("case_001", "case_002"):
        save_image(gt_dir / f"{case}.nii.gz", mask)
    save_image(pred_dir / "case_001.nii.gz", mask)
    target = tmp_path / "exports" / "case_002.nii.gz"
    os.symlink(target, pred_dir / "case_002.nii.gz")  # dangling
    result = ccmetrics.evaluate_dataset(gt_dir, pred_dir, ["dice"], progress=False)
    rows = result.per_case.set_index("case")
    assert rows.loc["case_001", "status"] != "error"
    assert rows.loc["case_002", "status"] == "error"
    error = rows.loc["case_002", "error"]
    assert "dangling symbolic link" in error and str(target) in error, error


def test_dangling_dicom_seg_link_is_named(tmp_path):
    pytest.importorskip("highdicom")
    link = tmp_path / "case.dcm"
    os.symlink(tmp_path / "moved" / "seg.dcm", link)
    with pytest.raises(FileNotFoundError, match="it is a dangling symbolic link to .*seg.dcm"):
        load_image(link)
