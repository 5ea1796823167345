"""The header of a plain NIfTI-1 file, read without nibabel, with nibabel's numbers.

Why: importing nibabel costs about 0.12 s of CPU per process (0.08 s of it pydicom, which nibabel's NIfTI
module imports whenever it is installed): a third of a data-set worker's start-up, paid by every worker and by
the process that reads the headers for the memory estimates. Almost every mask a model writes (nibabel,
SimpleITK, nnU-Net, dcm2niix) has a header that needs none of nibabel's repairs; for those, this module gives
what :mod:`ccmetrics.formats.io` takes from nibabel: the data's shape, stored dtype and offset, and the affine.

**Plain**, here, is a header that nibabel loads unchanged and whose voxels it returns unscaled: every
condition below holds, and :func:`read_plain` returns ``None`` for any other file, which nibabel then reads
as before (its repairs, its errors and messages, its scaling, NIfTI-2, extensions, byte-swapped files):

* ``sizeof_hdr`` is 348 read little-endian, the magic is ``n+1`` (one file), no extension follows the header
  (byte 348 is 0), and the first 352 bytes are there (for a ``.nii.gz``: in its first gzip member);
* ``dim[0]`` is 1 to 7 and each of its axes has at least one voxel;
* the datatype is one of the ten integer and float types (:data:`DTYPES`) and ``bitpix`` matches it;
* ``pixdim[1:4]`` are finite and positive, ``pixdim[0]`` (qfac) is 1 or -1;
* ``vox_offset`` is a whole number of at least 352, a multiple of 16;
* the qform and sform codes are 0 to 5 and not both 0 (a header with no transform gets nibabel's own);
* no scaling applies: ``scl_slope`` is 0 or not finite (nibabel's "no scaling"), or it is 1 with
  ``scl_inter`` 0 (nibabel's ``apply_read_scaling`` returns the stored voxels unchanged then).

Those are the conditions under which nibabel's header checks (``Nifti1Header.check_fix``: sizeof_hdr,
datatype, bitpix, pixdims, qfac, magic, offset, xform codes) find nothing to report or repair.

Where the two paths differ (none gives another number; each is tested): a file whose extension is in mixed case
(``case.Nii.gz``) is read, where nibabel looks for ``case.nii.gz`` and fails; a damaged ``.nii.gz`` too small for
nibabel to tell its type (a wrong CRC or bytes after the stream, under about 1 kB of data) is refused by the gzip
reader, naming the damage, or read like a larger one, where nibabel says it cannot work out the file type; and
``read_header`` reads the header only, so a stream broken just after it is found when the voxels are read, as it
is in a larger file (nibabel's type check decompresses a little further).

The affine is nibabel's ``get_best_affine()``, bit for bit: the sform's rows where ``sform_code`` is set, else
the qform built with nibabel's arithmetic (``fillpositive`` and ``quat2mat`` in ``np.longdouble``, then the
product with the float32 voxel sizes); a quaternion nibabel refuses (``w**2`` clearly negative) gives ``None``
here, so that nibabel raises its own error. ``tests/formats/test_nifti1.py`` checks every field against nibabel
on a fuzzed corpus of headers, each condition's edge included.

Cost: the first 352 bytes of the file (of a ``.nii.gz``: one read of 4 kB and an inflate of 352 bytes), one
``np.frombuffer``; no import beyond numpy.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

__all__ = ["DTYPES", "MM_PER_UNIT", "PlainNifti1", "damaged_offset", "parse_plain", "read_plain", "read_start"]

HEADER_BYTES = 348
_WITH_EXTENSION_FLAG = 352  # the header and the 4 bytes that say whether extensions follow

#: NIfTI-1 datatype codes of the scalar types read here -> numpy dtype (little-endian, as stored)
DTYPES: dict[int, np.dtype] = {
    2: np.dtype("u1"),
    4: np.dtype("<i2"),
    8: np.dtype("<i4"),
    16: np.dtype("<f4"),
    64: np.dtype("<f8"),
    256: np.dtype("i1"),
    512: np.dtype("<u2"),
    768: np.dtype("<u4"),
    1024: np.dtype("<i8"),
    1280: np.dtype("<u8"),
}

#: the NIfTI-1 header's fields (NIfTI-1 standard, little-endian), as nibabel's ``header_dtype`` lays them out
_HEADER = np.dtype(
    [
        ("sizeof_hdr", "<i4"),
        ("data_type", "S10"),
        ("db_name", "S18"),
        ("extents", "<i4"),
        ("session_error", "<i2"),
        ("regular", "S1"),
        ("dim_info", "u1"),
        ("dim", "<i2", (8,)),
        ("intent_p1", "<f4"),
        ("intent_p2", "<f4"),
        ("intent_p3", "<f4"),
        ("intent_code", "<i2"),
        ("datatype", "<i2"),
        ("bitpix", "<i2"),
        ("slice_start", "<i2"),
        ("pixdim", "<f4", (8,)),
        ("vox_offset", "<f4"),
        ("scl_slope", "<f4"),
        ("scl_inter", "<f4"),
        ("slice_end", "<i2"),
        ("slice_code", "u1"),
        ("xyzt_units", "u1"),
        ("cal_max", "<f4"),
        ("cal_min", "<f4"),
        ("slice_duration", "<f4"),
        ("toffset", "<f4"),
        ("glmax", "<i4"),
        ("glmin", "<i4"),
        ("descrip", "S80"),
        ("aux_file", "S24"),
        ("qform_code", "<i2"),
        ("sform_code", "<i2"),
        ("quatern_b", "<f4"),
        ("quatern_c", "<f4"),
        ("quatern_d", "<f4"),
        ("qoffset_x", "<f4"),
        ("qoffset_y", "<f4"),
        ("qoffset_z", "<f4"),
        ("srow_x", "<f4", (4,)),
        ("srow_y", "<f4", (4,)),
        ("srow_z", "<f4", (4,)),
        ("intent_name", "S16"),
        ("magic", "S4"),
    ]
)
assert _HEADER.itemsize == HEADER_BYTES

#: NIfTI-1 spatial unit codes (``xyzt_units & 7``) -> millimetres per unit, as ITK's ``NiftiImageIO`` converts
#: spacing and origin (0, unknown, is read as mm, as ITK does); codes 4 to 7 are no unit of NIfTI-1
MM_PER_UNIT: dict[int, float] = {0: 1.0, 1: 1000.0, 2: 1.0, 3: 0.001}

_QUATERNION_THRESHOLD = np.finfo(np.float32).eps * 3  # nibabel's Nifti1Header.quaternion_threshold


@dataclass(frozen=True, eq=False)
class PlainNifti1:
    """What the readers take from a plain NIfTI-1 header (see the module docstring).

    ``shape``: ``dim[1 : dim[0] + 1]``; ``dtype``: the stored voxel type; ``offset``: where the voxels start;
    ``affine``: nibabel's ``img.affine`` (4 x 4 float64); ``qform``, ``sform``: each transform where its code is
    set, else None (for the check that the two agree); ``pixdim``: the eight stored voxel sizes (float32);
    ``xyzt_units``: the stored unit codes (the spatial unit is ``xyzt_units & 7``: :data:`MM_PER_UNIT`; the affine
    here is nibabel's, in the header's units, and :mod:`ccmetrics.formats.io` converts it to mm).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int
    affine: np.ndarray
    qform: np.ndarray | None
    sform: np.ndarray | None
    pixdim: np.ndarray
    xyzt_units: int = 0


def read_plain(path: str) -> PlainNifti1 | None:
    """The header of the NIfTI-1 file ``path`` (``.nii`` or ``.nii.gz``) when it is plain, else None (then
    nibabel reads it). Raises ``OSError`` when the file cannot be opened."""
    start = read_start(path)
    return None if start is None else parse_plain(start)


def read_start(path: str) -> bytes | None:
    """The first (up to 352) bytes of the NIfTI file ``path``, decompressed from a ``.nii.gz``'s first gzip member;
    None where that member is no gzip stream. Raises ``OSError`` when the file cannot be opened."""
    with open(path, "rb") as f:
        start = f.read(4096)
    if path.lower().endswith(".gz"):
        try:  # the first member's first bytes (gzip header: wbits 16 + 15)
            start = zlib.decompressobj(31).decompress(start, _WITH_EXTENSION_FLAG)
        except zlib.error:
            return None
    return start


def damaged_offset(raw: bytes) -> float | None:
    """The ``vox_offset`` of the NIfTI-1 header that starts ``raw`` (either byte order) when it is no byte offset
    (not finite, or negative), else None: what nibabel fails on with a bare ``OverflowError``.

    >>> hdr = np.zeros((), _HEADER)
    >>> hdr["sizeof_hdr"], hdr["vox_offset"] = 348, np.inf
    >>> damaged_offset(hdr.tobytes()), damaged_offset(hdr.astype(_HEADER.newbyteorder(">")).tobytes())
    (inf, inf)
    >>> hdr["vox_offset"] = 352
    >>> damaged_offset(hdr.tobytes()) is None
    True
    """
    if len(raw) < HEADER_BYTES:
        return None
    for layout in (_HEADER, _HEADER.newbyteorder(">")):
        hdr = np.frombuffer(raw, layout, count=1)[0]
        if int(hdr["sizeof_hdr"]) == HEADER_BYTES:
            offset = float(hdr["vox_offset"])
            return offset if not (math.isfinite(offset) and offset >= 0) else None
    return None


def parse_plain(raw: bytes) -> PlainNifti1 | None:
    """:func:`read_plain` of the file's first (decompressed) bytes ``raw``.

    >>> hdr = np.zeros((), _HEADER)
    >>> hdr["sizeof_hdr"], hdr["magic"], hdr["datatype"], hdr["bitpix"] = 348, b"n+1", 2, 8
    >>> hdr["dim"] = [3, 4, 5, 6, 1, 1, 1, 1]
    >>> hdr["pixdim"] = [1, 0.5, 0.5, 3, 0, 0, 0, 0]
    >>> hdr["vox_offset"], hdr["sform_code"] = 352, 1
    >>> hdr["srow_x"], hdr["srow_y"], hdr["srow_z"] = [0.5, 0, 0, -10], [0, 0.5, 0, 0], [0, 0, 3, 7]
    >>> plain = parse_plain(hdr.tobytes() + bytes(4))
    >>> plain.shape, plain.dtype, plain.offset, plain.affine[:3, 3].tolist()
    ((4, 5, 6), dtype('uint8'), 352, [-10.0, 0.0, 7.0])
    >>> hdr["scl_slope"], hdr["scl_inter"] = 2, 0  # scaled voxels: nibabel reads this one
    >>> parse_plain(hdr.tobytes() + bytes(4)) is None
    True
    """
    if len(raw) < _WITH_EXTENSION_FLAG or raw[HEADER_BYTES] != 0:
        return None
    hdr = np.frombuffer(raw, _HEADER, count=1)[0]
    if int(hdr["sizeof_hdr"]) != HEADER_BYTES or hdr["magic"] != b"n+1":
        return None
    dim = [int(d) for d in hdr["dim"]]
    if not 1 <= dim[0] <= 7 or min(dim[1 : dim[0] + 1]) < 1:
        return None
    dtype = DTYPES.get(int(hdr["datatype"]))
    if dtype is None or int(hdr["bitpix"]) != 8 * dtype.itemsize:
        return None
    pixdim = hdr["pixdim"].copy()
    spatial = pixdim[1:4]
    if not (np.all(np.isfinite(spatial)) and np.all(spatial > 0)) or pixdim[0] not in (-1, 1):
        return None
    offset = float(hdr["vox_offset"])
    if not (math.isfinite(offset) and offset >= _WITH_EXTENSION_FLAG and offset == int(offset) and offset % 16 == 0):
        return None
    qcode, scode = int(hdr["qform_code"]), int(hdr["sform_code"])
    if not (0 <= qcode <= 5 and 0 <= scode <= 5) or qcode == scode == 0:
        return None
    slope, inter = float(hdr["scl_slope"]), float(hdr["scl_inter"])
    if not (slope == 0 or not math.isfinite(slope) or (slope == 1 and inter == 0)):
        return None
    sform = _sform(hdr) if scode else None
    try:
        qform = _qform(hdr, pixdim) if qcode else None
    except ValueError:  # nibabel refuses this quaternion: it says so itself
        return None
    affine = sform if sform is not None else qform
    assert affine is not None
    shape = tuple(dim[1 : dim[0] + 1])
    return PlainNifti1(shape, dtype, int(offset), affine, qform, sform, pixdim, int(hdr["xyzt_units"]))


def _sform(hdr: np.void) -> np.ndarray:
    """nibabel's ``get_sform()``: the three stored rows (float32, exact in float64) under ``[0, 0, 0, 1]``."""
    out = np.eye(4)
    out[0, :], out[1, :], out[2, :] = hdr["srow_x"], hdr["srow_y"], hdr["srow_z"]
    return out


def _qform(hdr: np.void, pixdim: np.ndarray) -> np.ndarray:
    """nibabel's ``get_qform()``, with its arithmetic: the unit quaternion completed in ``np.longdouble``
    (``quaternions.fillpositive`` with the header's threshold), its rotation matrix (``quat2mat``), times the
    float32 voxel sizes with ``pixdim[0]`` on the last; the offsets in the last column. ValueError where nibabel
    raises (a quaternion whose ``w**2`` is negative beyond the threshold)."""
    xyz = np.asarray([hdr["quatern_b"], hdr["quatern_c"], hdr["quatern_d"]], dtype=np.longdouble)
    w2 = 1.0 - xyz @ xyz
    if np.abs(w2) < np.abs(_QUATERNION_THRESHOLD):
        w = 0
    elif w2 < 0:
        raise ValueError(f"w2 should be positive, but is {w2:e}")
    else:
        w = np.sqrt(w2)
    rotation = _rotation(np.r_[w, xyz])
    vox = pixdim[1:4].copy()
    vox[-1] *= pixdim[0]
    out = np.eye(4)
    out[0:3, 0:3] = np.dot(rotation, np.diag(vox))
    out[0:3, 3] = [hdr["qoffset_x"], hdr["qoffset_y"], hdr["qoffset_z"]]
    return out


def _rotation(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of the quaternion ``q = (w, x, y, z)``, term by term as nibabel's ``quat2mat``."""
    w, x, y, z = q
    nq = w * w + x * x + y * y + z * z
    if nq < np.finfo(float).eps:
        return np.eye(3)
    s = 2.0 / nq
    big_x, big_y, big_z = x * s, y * s, z * s
    w_x, w_y, w_z = w * big_x, w * big_y, w * big_z
    x_x, x_y, x_z = x * big_x, x * big_y, x * big_z
    y_y, y_z, z_z = y * big_y, y * big_z, z * big_z
    return np.array(
        [
            [1.0 - (y_y + z_z), x_y - w_z, x_z + w_y],
            [x_y + w_z, 1.0 - (x_x + z_z), y_z - w_x],
            [x_z - w_y, y_z + w_x, 1.0 - (x_x + y_y)],
        ]
    )
