"""The plain NIfTI-1 header read without nibabel (``ccmetrics.formats._nifti1``) against nibabel itself.

The claim: for every header the module calls plain, ``load_image``, ``read_header`` and the engine's C-ordered read
give what they give through nibabel (the same array, bit for bit and in dtype and memory order, the same affine bit
for bit, the same spacing, warnings and errors); every other header goes to nibabel. The exceptions, for damaged
or oddly named files, are the module docstring's, pinned by the last test: none gives another number. The headers
are fuzzed around each condition's edge (sizes, magic, extensions, dims, datatypes, bitpix, pixdims, qfac, offsets,
transform codes, quaternions near ``w = 0``, scaling), written as ``.nii`` and ``.nii.gz``, and read both ways.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import warnings
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from nibabel.nifti1 import header_dtype

import ccmetrics.formats.io as io
from ccmetrics.formats._nifti1 import DTYPES, parse_plain, read_plain
from ccmetrics.formats.io import _load_image, load_image, read_header

ROOT = Path(__file__).resolve().parents[2]


def _valid_header(rng: np.random.Generator) -> np.ndarray:
    """A header nibabel takes as it is: a 3D uint8 image with a random oblique sform and qform."""
    img = nib.Nifti1Image(np.zeros((3, 4, 2), np.uint8), np.eye(4), dtype=np.uint8)
    hdr = np.frombuffer(img.header.binaryblock, header_dtype).copy()[0]
    hdr["pixdim"][1:4] = rng.uniform(0.3, 3.0, 3)
    hdr["quatern_b"], hdr["quatern_c"], hdr["quatern_d"] = rng.uniform(-0.5, 0.5, 3)
    hdr["qoffset_x"], hdr["qoffset_y"], hdr["qoffset_z"] = rng.uniform(-200, 200, 3)
    hdr["srow_x"], hdr["srow_y"], hdr["srow_z"] = rng.uniform(-3, 3, (3, 4))
    hdr["qform_code"], hdr["sform_code"] = 1, 1
    hdr["vox_offset"] = 352
    return hdr


#: field -> values at and around the edges of the plain conditions
_EDGES = {
    "sizeof_hdr": [348, 540, 347, 0],
    "magic": [b"n+1", b"ni1", b"n+2", b"abc"],
    "datatype": [*DTYPES, 0, 1, 32, 128, 511, 1536, 1792, 2048, 2304],
    "bitpix": [0, 8, 16, 33, 64],
    "vox_offset": [352, 368, 360, 351, 0, 352.5, 416],
    "qform_code": [0, 1, 2, 4, 5, 6, -1],
    "sform_code": [0, 1, 2, 3, 5, 6, -1],
    "scl_slope": [0.0, 1.0, 2.0, -1.0, np.nan, np.inf, -np.inf, 1e-30],
    "scl_inter": [0.0, -0.0, 1.0, np.nan, np.inf],
    "xyzt_units": [0, 1, 2, 3, 4, 7, 10, 11],  # meter, mm, micron (converted), codes 4-7 (refused), with seconds
}
_PIXDIM = [1.0, 1e-6, 2.5, 0.0, -1.0, np.nan, np.inf, 1e30]
_QFAC = [1.0, -1.0, 0.0, 0.5, 2.0, np.nan]


def _fuzzed_header(rng: np.random.Generator) -> np.ndarray:
    hdr = _valid_header(rng)
    for name in rng.choice(list(_EDGES), size=rng.integers(0, 4), replace=False):
        values = _EDGES[name]
        hdr[name] = values[rng.integers(len(values))]
    if rng.random() < 0.5:  # a datatype with its matching bitpix, most of the time
        code = list(DTYPES)[rng.integers(len(DTYPES))]
        hdr["datatype"], hdr["bitpix"] = code, 8 * DTYPES[code].itemsize
    if rng.random() < 0.3:
        ndim = int(rng.integers(-1, 9))
        hdr["dim"][0] = ndim
        hdr["dim"][1:] = rng.integers(1, 4, 7)
        if rng.random() < 0.2:
            hdr["dim"][rng.integers(1, 8)] = rng.choice([0, -1])
    if rng.random() < 0.3:
        hdr["pixdim"][rng.integers(1, 4)] = _PIXDIM[rng.integers(len(_PIXDIM))]
    if rng.random() < 0.2:
        hdr["pixdim"][0] = _QFAC[rng.integers(len(_QFAC))]
    if rng.random() < 0.3:  # quaternions with w**2 near 0: nibabel's threshold, both sides
        direction = rng.normal(size=3)
        scale = 1 + rng.choice([0.0, 1e-9, -1e-9, 1e-7, -1e-7, 3e-7, -3e-7, 1e-3, -1e-3])
        hdr["quatern_b"], hdr["quatern_c"], hdr["quatern_d"] = direction / np.linalg.norm(direction) * scale
    if rng.random() < 0.1:
        hdr["srow_x"][rng.integers(4)] = rng.choice([-0.0, np.nan, np.inf])
    return hdr


def _write(path: Path, hdr: np.ndarray, rng: np.random.Generator, extension: bool = False) -> Path:
    head = hdr.tobytes() + (b"\x01\0\0\0" if extension else bytes(4))
    dtype = DTYPES.get(int(hdr["datatype"]), np.dtype("u1"))
    dims = [max(int(d), 1) for d in hdr["dim"][1 : max(1, min(int(hdr["dim"][0]), 7)) + 1]]
    offset = float(hdr["vox_offset"])
    start = int(offset) if offset >= 352 else 352
    count = int(np.prod(dims))
    data = (
        rng.integers(0, 3, count).astype(dtype).tobytes() if rng.random() < 0.8 else rng.bytes(count * dtype.itemsize)
    )
    if rng.random() < 0.1:
        data = data[: len(data) // 2]  # a file that holds less than its header claims
    raw = head + bytes(max(0, start - len(head))) + data
    path.write_bytes(gzip.compress(raw, compresslevel=1) if path.name.endswith(".gz") else raw)
    return path


def _outcome(call, *args, **kwargs):
    """What a call gives, comparable across readers: its result (arrays as exact bytes with dtype, shape and memory
    order), or its exception (type and message), and the warnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 (any error: it must be the same both ways)
            value = ("raised", type(exc).__name__, str(exc))
    return _canonical(value), [(w.category.__name__, str(w.message)) for w in caught]


def _canonical(value):
    if isinstance(value, np.ndarray):
        return (
            "array",
            value.dtype.str,
            value.shape,
            value.flags.c_contiguous,
            value.flags.f_contiguous,
            value.flags.writeable,
            value.tobytes(order="A"),
        )
    if isinstance(value, tuple):
        return tuple(_canonical(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return tuple((name, _canonical(getattr(value, name))) for name in value.__dataclass_fields__)
    return value


def _both_ways(path: Path, monkeypatch) -> tuple[list, list, bool]:
    """The readers' outcomes on ``path`` with the plain header path, then with every header read by nibabel."""
    calls = [(load_image, {}), (read_header, {}), (_load_image, {"c_order": True})]
    plain = read_plain(str(path)) is not None
    fast = [_outcome(call, str(path), **kwargs) for call, kwargs in calls]
    with monkeypatch.context() as m:
        m.setattr(io, "read_plain", lambda _path: None)
        slow = [_outcome(call, str(path), **kwargs) for call, kwargs in calls]
    return fast, slow, plain


@pytest.mark.parametrize("suffix", [".nii.gz", ".nii"])
def test_plain_headers_read_as_nibabel_reads_them(tmp_path, monkeypatch, suffix):
    rng = np.random.default_rng(31 if suffix == ".nii" else 32)
    taken = 0
    for i in range(300):
        path = _write(tmp_path / f"x{i}{suffix}", _fuzzed_header(rng), rng, extension=rng.random() < 0.05)
        fast, slow, plain = _both_ways(path, monkeypatch)
        assert fast == slow, (i, fast, slow)
        taken += plain
    assert 60 <= taken <= 240  # both paths exercised: plain headers, and headers left to nibabel


def test_plain_affine_qform_and_sform_are_nibabels_bit_for_bit(tmp_path):
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(400):
        hdr = _fuzzed_header(rng)
        plain = parse_plain(hdr.tobytes() + bytes(4))
        if plain is None:
            continue
        header = nib.Nifti1Header.from_fileobj(_Bytes(hdr.tobytes() + bytes(4)), check=True)
        assert header.binaryblock == hdr.tobytes()  # nibabel repaired nothing
        assert plain.affine.tobytes() == header.get_best_affine().tobytes()
        q, qcode = header.get_qform(coded=True)
        s, scode = header.get_sform(coded=True)
        assert (plain.qform is None) == (qcode == 0) and (plain.sform is None) == (scode == 0)
        assert plain.qform is None or plain.qform.tobytes() == q.tobytes()
        assert plain.sform is None or plain.sform.tobytes() == s.tobytes()
        assert plain.shape == header.get_data_shape() and plain.dtype == header.get_data_dtype()
        assert plain.offset == header.get_data_offset() and header.get_slope_inter() in ((None, None), (1.0, 0.0))
        checked += 1
    assert checked > 80


class _Bytes:
    """A file object over bytes (what nibabel's ``from_fileobj`` reads)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def read(self, n: int = -1) -> bytes:
        out = self.data[self.at :] if n < 0 else self.data[self.at : self.at + n]
        self.at += len(out)
        return out


@pytest.mark.parametrize(
    "fields",
    [
        {"sizeof_hdr": 540},  # NIfTI-2's size
        {"magic": b"ni1"},  # a header-and-image pair
        {"datatype": 128},  # RGB
        {"bitpix": 16},  # uint8 with a wrong bitpix: nibabel repairs it
        {"vox_offset": 360},  # not a multiple of 16
        {"vox_offset": 0},
        {"qform_code": 6},
        {"qform_code": 0, "sform_code": 0},  # no transform: nibabel's base affine
        {"scl_slope": 2.0},
        {"scl_slope": 1.0, "scl_inter": 1.0},
        {"pixdim": [1, 1, 0, 1, 1, 1, 1, 1]},  # nibabel repairs a zero voxel size to 1
        {"pixdim": [0, 1, 1, 1, 1, 1, 1, 1]},  # and a qfac of 0 to 1
        {"dim": [4, 3, 4, 2, 0, 1, 1, 1]},
    ],
)
def test_each_condition_sends_the_header_to_nibabel(fields):
    hdr = _valid_header(np.random.default_rng(0))
    assert parse_plain(hdr.tobytes() + bytes(4)) is not None
    for field, value in fields.items():
        hdr[field] = value
    assert parse_plain(hdr.tobytes() + bytes(4)) is None
    assert parse_plain(_valid_header(np.random.default_rng(0)).tobytes() + b"\x01\0\0\0") is None  # extensions


def test_no_scaling_edges_are_plain():
    # nibabel's "no scaling": a slope of 0 or not finite (whatever the intercept), or 1 with an intercept of +-0
    for slope, inter in [(0.0, 5.0), (np.nan, 1.0), (np.inf, 0.0), (1.0, -0.0)]:
        hdr = _valid_header(np.random.default_rng(1))
        hdr["scl_slope"], hdr["scl_inter"] = slope, inter
        assert parse_plain(hdr.tobytes() + bytes(4)) is not None, (slope, inter)


def test_short_or_multi_member_starts_go_to_nibabel(tmp_path):
    raw = _valid_header(np.random.default_rng(2)).tobytes() + bytes(4) + bytes(24)
    (tmp_path / "short.nii").write_bytes(raw[:351])
    assert read_plain(str(tmp_path / "short.nii")) is None
    (tmp_path / "split.nii.gz").write_bytes(gzip.compress(raw[:200]) + gzip.compress(raw[200:]))
    assert read_plain(str(tmp_path / "split.nii.gz")) is None  # the first member holds 200 bytes
    with pytest.warns(UserWarning, match="qform and sform of its header disagree"):  # (the header's random transforms)
        image = load_image(tmp_path / "split.nii.gz")
    np.testing.assert_array_equal(image.array, np.zeros((3, 4, 2), np.uint8))


def test_reading_plain_files_imports_no_nibabel(tmp_path):
    # the point of the module: a data-set worker, and the process that reads the headers, never import nibabel
    # (0.12 s a process with pydicom) for the masks models write
    for name, array in (
        ("a.nii.gz", np.eye(5, dtype=np.uint8)[None].repeat(3, 0)),
        ("b.nii", np.ones((4, 4), np.int16)),
    ):
        nib.save(nib.Nifti1Image(array, np.diag([0.5, 0.75, 2.0, 1.0])), str(tmp_path / name))
    code = (
        "import sys\nfrom ccmetrics.formats.io import load_image, read_header\n"
        f"for p in ({str(tmp_path / 'a.nii.gz')!r}, {str(tmp_path / 'b.nii')!r}):\n"
        "    image, header = load_image(p), read_header(p)\n"
        "    print(image.array.shape, image.spacing, header.dtype)\n"
        "print('nibabel' in sys.modules, 'pydicom' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.splitlines() == [
        "(3, 5, 5) (0.5, 0.75, 2.0) uint8",
        "(4, 4) (0.5, 0.75) int16",
        "False False",
    ]


def test_where_the_plain_path_differs_from_nibabel_no_number_does(tmp_path):
    # the differences the module docstring names, each pinned: none gives a wrong array
    array = np.arange(120, dtype=np.uint8).reshape(4, 5, 6) % 3
    nib.save(nib.Nifti1Image(array, np.diag([0.5, 0.5, 3.0, 1.0]), dtype=np.uint8), str(tmp_path / "ok.nii"))
    raw = (tmp_path / "ok.nii").read_bytes()
    # a mixed-case extension: read (nibabel looks for case.nii.gz)
    (tmp_path / "case.Nii.gz").write_bytes(gzip.compress(raw))
    np.testing.assert_array_equal(load_image(tmp_path / "case.Nii.gz").array, array)
    # a small file with a wrong CRC in its gzip trailer: refused, naming the damage
    bad = bytearray(gzip.compress(raw))
    bad[-8] ^= 0xFF
    (tmp_path / "crc.nii.gz").write_bytes(bytes(bad))
    assert read_header(tmp_path / "crc.nii.gz").shape == (4, 5, 6)  # the header alone is whole
    with pytest.raises(io.ImageReadError, match="CRC-32"):
        load_image(tmp_path / "crc.nii.gz")
    # bytes after a whole stream: ignored, as in a larger file
    (tmp_path / "tail.nii.gz").write_bytes(gzip.compress(raw) + b"garbage!")
    np.testing.assert_array_equal(load_image(tmp_path / "tail.nii.gz").array, array)
