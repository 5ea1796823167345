"""The NIfTI readers' own steps: the header checks both readers skip, and the voxel reads.

``_check_nifti`` reads a header with nibabel and refuses a zero or non-finite ``pixdim``, a spatial unit NIfTI-1 does
not define (``_mm_per_unit``), a damaged ``vox_offset`` (``_damaged_offset``) and a file smaller than the header
claims (``ccmetrics.formats._sizes._check_data_size``), and warns where the qform and sform disagree
(``_warn_disagreeing``).  ``_read_plain`` reads the voxels of a plain header (``ccmetrics.formats._nifti1``) without
nibabel, ``_read_nibabel`` those of any other, a ``.nii.gz`` inflated by ``ccmetrics.formats._sizes._gunzip_array``
and scaled as nibabel scales (``_nibabel_scaling``).

Cost: ``_check_nifti`` imports nibabel on first use and reads the header twice (nibabel's lazy image, and the raw
header unchecked), no voxel; a read is one pass over the file (see ``_gunzip_array``).  Private to
:mod:`ccmetrics.formats`; its reader is :mod:`ccmetrics.formats.io`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ._nifti1 import MM_PER_UNIT, PlainNifti1, damaged_offset, read_start
from ._sizes import _check_data_size, _claim, _gunzip_array, _no_memory
from .image import _HINT, ImageReadError, rounded

_r = rounded


def _mm_per_unit(path: str, xyzt_units: int) -> float:
    """Millimetres per unit of a NIfTI header's spatial unit (``xyzt_units & 7``: ``_nifti1.MM_PER_UNIT``, as ITK
    converts it); ImageReadError for a code NIfTI-1 does not define (4 to 7)."""
    code = int(xyzt_units) & 7
    if code not in MM_PER_UNIT:
        raise ImageReadError(
            f"{path!r} has spatial unit code {code} in its header's xyzt_units field ({int(xyzt_units)}), which "
            "NIfTI-1 does not define (0 unknown, read as mm; 1 meter; 2 mm; 3 micron), so its voxel sizes have no "
            "unit: fix the header's xyzt_units (e.g. nibabel's header.set_xyzt_units('mm'), after checking pixdim)"
        )
    return MM_PER_UNIT[code]


def _check_nifti(path: str, warn: bool, count: bool = True) -> tuple[Any, Any]:
    """Checks on the raw NIfTI header that the readers skip (both silently read a zero pixdim
    as 1 mm, ITK also NaN), and of the file's size against the header (neither reader checks it
    before allocating; ITK reads a truncated file without any error).  Returns the header and
    nibabel's lazily loaded image (no voxel read).  ``count``: of a ``.nii.gz`` whose trailer disagrees
    with the header, count the inflated bytes (False: only deflate's bound, for ``_gunzip_array``,
    which stops where the stream ends; see :func:`_check_data_size`)."""
    import nibabel as nib
    from nibabel.openers import ImageOpener

    try:
        with np.errstate(all="ignore"):  # a non-finite pixdim makes nibabel's affine warn
            img: Any = nib.load(path, mmap=False)
        with ImageOpener(path) as f:
            hdr: Any = type(img.header).from_fileobj(f, check=False)
    except Exception as e:
        offset = _damaged_offset(path)
        if offset is not None:  # nibabel: a bare OverflowError or ValueError from int(vox_offset)
            raise ImageReadError(
                f"cannot read {path!r}: its header's vox_offset (the byte where the voxels start) is {offset}, "
                "which is no byte offset: the header is damaged; write or copy the file again"
            ) from e
        raise ImageReadError(f"cannot read {path!r}: {e}{_HINT}") from e
    pixdim = hdr["pixdim"][1 : 1 + min(int(hdr["dim"][0]), 3)]
    if not np.all(np.isfinite(pixdim) & (pixdim != 0)):
        raise ImageReadError(
            f"{path!r} has voxel sizes (pixdim) {_r(pixdim)} in its header: each "
            "must be finite and non-zero; fix the header, e.g. nibabel's set_zooms"
        )
    _mm_per_unit(path, int(hdr["xyzt_units"]))
    shape = tuple(int(s) for s in hdr.get_data_shape())
    raw = np.dtype(hdr.get_data_dtype())
    offset = int(hdr.get_data_offset())
    gz = path.lower().endswith(".gz")
    _check_data_size(path, shape, raw, have_at=offset, gzip_stream=0 if gz else None, includes_offset=gz, count=count)
    (q, qcode), (s, scode) = hdr.get_qform(coded=True), hdr.get_sform(coded=True)
    if warn and qcode and scode:
        _warn_disagreeing(path, q, s, stacklevel=3)
    return hdr, img


def _damaged_offset(path: str) -> float | None:
    """The header's ``vox_offset`` where it is no byte offset (``_nifti1.damaged_offset``), else None."""
    try:
        start = read_start(path)
    except OSError:
        return None
    return None if start is None else damaged_offset(start)


def _warn_disagreeing(path: str, qform: np.ndarray, sform: np.ndarray, stacklevel: int) -> None:
    """Warn where the two transforms of a NIfTI header differ by more than 1e-3 (the readers differ then)."""
    if not np.allclose(qform, sform, atol=1e-3):
        warnings.warn(
            f"{path!r}: the qform and sform of its header disagree; nibabel (the default "
            "reader) uses the sform, ITK the qform unless sform_code is 1: check which "
            "is right and make both equal",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def _read_plain(path: str, plain: PlainNifti1, c_order: bool = False) -> np.ndarray:
    """The voxels of the plain NIfTI ``path`` (``ccmetrics.formats._nifti1``: stored unscaled), as nibabel's
    ``np.asanyarray(img.dataobj)`` returns them (Fortran-ordered, writable; ``c_order``: C-contiguous where
    ``_gunzip_array`` says): a ``.nii.gz`` inflated by ``_gunzip_array``, a ``.nii`` read into a buffer at its
    offset."""
    try:
        if path.lower().endswith(".gz"):
            return _gunzip_array(path, plain.shape, plain.dtype, plain.offset, order="F", c_order=c_order)
        buffer = bytearray(math.prod(plain.shape) * plain.dtype.itemsize)
        with open(path, "rb") as f:
            f.seek(plain.offset)
            got = f.readinto(buffer)
        if got < len(buffer):  # (the size was checked; the file shrank since)
            raise ImageReadError(
                f"cannot read {path!r}: {_claim(plain.shape, plain.dtype)}, but the file holds {got:,} bytes of data "
                f"after its {plain.offset:,}-byte header{_HINT}"
            )
        return np.ndarray(plain.shape, plain.dtype, buffer=buffer, order="F")
    except ImageReadError:
        raise
    except MemoryError:  # a valid file too large for this machine: no damage to blame
        raise _no_memory(path, plain.shape, plain.dtype) from None
    except Exception as e:  # zlib.error, OSError, ...
        raise ImageReadError(f"cannot read {path!r}: {e}{_HINT}") from e


def _read_nibabel(path: str, img: Any, c_order: bool = False):
    """The voxels and affine of the NIfTI ``path``, whose image nibabel has loaded lazily as ``img``.

    A gzip-compressed file is decompressed by ``_gunzip_array`` (2-3x faster than nibabel's
    ``GzipFile`` on 400 x 400 x 300 masks, and refused where its stream ends before the header's size,
    the claimed array never resident), then scaled as nibabel scales (:func:`_nibabel_scaling`): the
    same array as ``np.asanyarray(img.dataobj)``, bit for bit and in dtype (``c_order``: C-contiguous where
    ``_gunzip_array`` says).  An uncompressed file is read by nibabel itself (its size was checked exactly before).
    """
    try:
        proxy = img.dataobj
        if path.lower().endswith(".gz"):
            raw = _gunzip_array(
                path, proxy.shape, np.dtype(proxy.dtype), proxy.offset, order=proxy.order, c_order=c_order
            )
            array = _nibabel_scaling(raw, proxy)
        else:
            array = np.asanyarray(proxy)  # reads all the data now
        return array, np.array(img.affine, dtype=float)
    except ImageReadError:
        raise
    except MemoryError:
        raise _no_memory(path, tuple(img.shape), np.dtype(img.get_data_dtype())) from None
    except Exception as e:  # EOFError, zlib.error, OSError, ImageFileError, ...
        raise ImageReadError(f"cannot read {path!r} with nibabel: {e}{_HINT}") from e


def _nibabel_scaling(raw: np.ndarray, proxy: Any) -> np.ndarray:
    """``raw`` (the stored voxels) scaled as nibabel's ``ArrayProxy`` scales what it reads.

    The steps of ``ArrayProxy._get_scaled`` with no dtype asked: slope and intercept as 0-d arrays, the
    intercept cast to the slope's dtype where that is safe, then ``volumeutils.apply_read_scaling`` (which
    returns ``raw`` itself for a slope of 1 and an intercept of 0, and picks a float type that cannot overflow
    for integer data): ``np.asanyarray(img.dataobj)``'s values and dtype, bit for bit.
    """
    from nibabel.volumeutils import apply_read_scaling

    slope, inter = np.asanyarray(proxy.slope), np.asanyarray(proxy.inter)
    if np.can_cast(inter, slope.dtype):  # (nibabel casts the slope to its own dtype too: nothing to do)
        inter = inter.astype(slope.dtype)
    return apply_read_scaling(raw, slope, inter)
