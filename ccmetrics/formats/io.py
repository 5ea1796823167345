"""Reading and writing label images (NIfTI, MetaImage, NRRD; reading DICOM SEG) together with their geometry.

:func:`load_image` returns an :class:`~ccmetrics.formats.image.Image`: the voxel array in the dtype stored on
disk, the voxel spacing and the voxel-to-world affine.  :func:`save_image` writes one,
:func:`check_same_geometry` says whether a prediction lies on its reference's grid and
:func:`image_id` pairs files by name (``case_001_0000.nii.gz`` -> ``case_001``).

Axis order, the same for every reader: ``array[i, j, k]`` is indexed in the file's voxel
order (i varies fastest on disk, as NIfTI and ITK define it), ``spacing[n]`` is the voxel
size in mm along array axis ``n``, and ``affine`` maps ``(i, j, k, 1)`` to RAS+ world mm,
exactly as nibabel does.  SimpleITK's ``(k, j, i)`` arrays are transposed and its LPS
geometry is turned into RAS, so both readers return the same Image for the same file.

A DICOM SEG (a ``.dcm`` file, or a folder holding one) is read by :func:`ccmetrics.formats.dicom.read_seg`
as a label map of segment numbers in the same axis order and RAS convention.

Cost: a load reads (and decompresses) the whole file once and keeps its dtype: no
float64 copy.  nibabel and SimpleITK are imported on first use only; a plain NIfTI-1 header (what
nibabel would load unchanged and unscaled: almost every mask a model writes) is read without nibabel
(``ccmetrics.formats._nifti1``, its affine bit for bit nibabel's), which saves a process the 0.12 s
of CPU that importing nibabel with pydicom costs.

Size checks: a header that claims more voxels than the file holds is refused before the claimed
array is resident (:func:`read_header`'s notes say what each format checks).  A ``.nii.gz`` read
with nibabel (the default) is inflated by ccmetrics itself, 1 MiB at a time, straight into an
``np.empty`` buffer whose pages are committed only as they are written, member by member with each
gzip trailer checked; the stream's end, not its trailer (which can be forged), decides: a stream
shorter than the header's size is refused where it ends, at the cost of the data it really holds.
nibabel's scaling (``scl_slope``, ``scl_inter``) is then applied as nibabel applies it.

Refused before any voxel is read: an axis of length 0 (named with its header field); a NIfTI spatial unit that
NIfTI-1 does not define (``xyzt_units & 7`` of 4 to 7; meter and micron are converted to mm in every reader, spacing
and origin, as ITK does; 0 is read as mm); a damaged ``vox_offset``; a MetaImage or NRRD data file outside the
header's folder or that is no regular file (a FIFO, a device); sizes are multiplied in Python ints, which cannot wrap.
A 2D NIfTI keeps its file's complete affine (``Image.affine_3d``), and :func:`check_same_geometry` compares two such
images in 3D. A valid file too large for the memory left raises
:class:`~ccmetrics.formats.image.ImageMemoryError` with the bytes it needs.
"""

from __future__ import annotations

import math
import os
import re
import stat
import struct
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._inputs import SPARSE_COPY_FRACTION, scatter_c_order
from ._nifti1 import MM_PER_UNIT, PlainNifti1, damaged_offset, read_plain, read_start
from .image import _HINT, Image, ImageHeader, ImageMemoryError, ImageReadError, missing_file_message, rounded
from .image import visible_files as visible_files  # the former ccmetrics.io.visible_files

try:  # python-isal's CRC-32 (the same numbers, about 8x faster than zlib's: a third of a .nii.gz read)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover (isal is optional)
    from zlib import crc32 as _crc32

__all__ = [
    "IMAGE_EXTENSIONS",
    "check_same_geometry",
    "image_id",
    "is_image_file",
    "load_image",
    "read_grid",
    "read_header",
    "save_image",
]

#: the image file extensions ccmetrics reads and pairs (case id: the name without them); ``.dcm``: a DICOM SEG
#: (:mod:`ccmetrics.formats.dicom`, which also reads a folder holding one)
IMAGE_EXTENSIONS = (".nii.gz", ".nii", ".mha", ".mhd", ".nrrd", ".nhdr", ".dcm")
_READERS = ("auto", "nibabel", "sitk")


_r = rounded


def _extension(path) -> str | None:
    name = os.path.basename(os.fspath(path)).lower()
    return next((e for e in IMAGE_EXTENSIONS if name.endswith(e) and len(name) > len(e)), None)


def is_image_file(path) -> bool:
    """True when ``path`` ends in one of :data:`IMAGE_EXTENSIONS` (the file need not exist).

    >>> is_image_file("case_001.nii.gz"), is_image_file("notes.txt")
    (True, False)
    """
    return _extension(path) is not None


def image_id(path, suffix: str | None = None) -> str:
    """The file name without directory and image extension, and without a trailing ``suffix``.

    Parameters
    ----------
    path : str or os.PathLike
        An image file name; ``.nii.gz`` counts as one extension.
    suffix : str, optional
        A regular expression removed from the end of the name, e.g. ``"_0000"`` (nnU-Net's
        channel) or ``"_pred"``, so that a prediction and its reference get the same id.

    Raises
    ------
    ValueError
        If the name does not end in one of :data:`IMAGE_EXTENSIONS`.

    Examples
    --------
    >>> image_id("/data/labels/case_001.nii.gz")
    'case_001'
    >>> image_id("case_001_0000.mha", suffix=r"_\\d{4}")
    'case_001'
    """
    name = os.path.basename(os.fspath(path))
    ext = _extension(name)
    if ext is None:
        raise ValueError(
            f"{name!r} has no image extension: expected a name ending in one of {', '.join(IMAGE_EXTENSIONS)}"
        )
    stem = name[: -len(ext)]
    return re.sub(f"(?:{suffix})$", "", stem, count=1) if suffix else stem


def _prepare(path, reader: str) -> tuple[str, bool]:
    """The path as str and whether it is NIfTI, after the checks :func:`load_image` and
    :func:`read_header` share (reader name, existence, extension)."""
    path = os.fspath(path)
    if reader not in _READERS:
        raise ValueError(f"reader must be one of {_READERS}, got {reader!r}")
    if not os.path.isfile(path):
        try:
            mode: int | None = os.stat(path).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISDIR(mode):  # a FIFO would block the read forever, a device never end
            raise ImageReadError(
                f"cannot read {path!r}: it is {_file_kind(mode)}, not a regular file: give the image as a regular file"
            )
        raise FileNotFoundError(missing_file_message(path))
    ext = _extension(path)
    if ext is None:
        raise ValueError(
            f"cannot read {path!r}: unknown image extension; ccmetrics reads "
            f"{', '.join(IMAGE_EXTENSIONS)} (convert the file to one of these)"
        )
    nifti = ext in (".nii", ".nii.gz")
    if reader == "nibabel" and not nifti:
        raise ValueError(f"nibabel reads only .nii and .nii.gz here, not {path!r}: use reader='auto' or 'sitk'")
    return path, nifti


def _is_dicom(path, reader: str) -> bool:
    """A DICOM SEG path (:func:`ccmetrics.formats.dicom.is_dicom_path`), read by :mod:`ccmetrics.formats.dicom`."""
    from .dicom import is_dicom_path

    if not is_dicom_path(path):
        return False
    if reader != "auto":
        raise ValueError(f"{os.fspath(path)!r} is read as a DICOM SEG by highdicom: use reader='auto'")
    return True


def _image_shape(path: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` without trailing singleton axes beyond the third; ValueError unless 2D or 3D, ImageReadError
    for an axis of no voxels (:func:`_no_empty_axis`)."""
    _no_empty_axis(path, shape)
    if len(shape) > 3 and all(s == 1 for s in shape[3:]):
        shape = shape[:3]
    if len(shape) not in (2, 3):
        raise ValueError(
            f"{path!r} is a {len(shape)}D image of shape {shape}; ccmetrics "
            "evaluates 2D or 3D label images: split the volumes or take one channel first"
        )
    return shape


def _no_empty_axis(path: str, shape: Sequence[int]) -> None:
    """Refuse an image with an axis of length 0 (it holds no voxel: neither an empty mask nor a healthy control),
    naming the axis and the header field that gives it."""
    empty = [n for n, s in enumerate(shape) if s < 1]
    if not empty:
        return
    axis = empty[0]
    ext = _extension(path)
    field = {".nii": f"dim[{axis + 1}]", ".nii.gz": f"dim[{axis + 1}]", ".nrrd": "sizes", ".nhdr": "sizes"}.get(
        ext or "", "DimSize"
    )
    raise ImageReadError(
        f"{path!r} holds no voxels: its header gives axis {axis} length {shape[axis]} ({field}; shape "
        f"{tuple(int(s) for s in shape)}); an image needs at least one voxel along each axis: "
        "write the file again from its source"
    )


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


def _to_mm(path: str, affine: np.ndarray, xyzt_units: int) -> np.ndarray:
    """nibabel's NIfTI ``affine`` (in the header's spatial unit) in mm, as ITK's ``NiftiImageIO`` converts it:
    spacing and origin (the spatial rows, translation included) times the unit's millimetres."""
    scale = _mm_per_unit(path, xyzt_units)
    if scale == 1.0:
        return affine
    out = np.array(affine, dtype=float)
    out[:-1] *= scale
    return out


def _geometry(path: str, affine: np.ndarray, n: int) -> tuple[tuple[float, ...], np.ndarray]:
    """Spacing and ``(n + 1, n + 1)`` affine of an ``n``-axis image from the reader's affine."""
    spacing = tuple(float(s) for s in np.linalg.norm(affine[:-1, :n], axis=0))
    keep = list(range(n)) + [affine.shape[0] - 1]
    affine = affine[np.ix_(keep, keep)]
    if not (np.all(np.isfinite(affine)) and all(s > 0 for s in spacing)):
        raise ImageReadError(
            f"{path!r} has voxel spacing {spacing} mm and affine {_r(affine)}: "
            "each voxel size must be finite and non-zero; fix the file's header"
        )
    return spacing, affine


def read_header(path, reader: str = "auto") -> ImageHeader:
    """Read a label image's shape, dtype and spacing from its header only: no voxel is read.

    Use it to decide whether a case fits in memory before :func:`load_image` allocates it
    (:func:`ccmetrics.engine.memory.estimate_case_bytes`).

    Parameters
    ----------
    path : str or os.PathLike
        A file ending in one of :data:`IMAGE_EXTENSIONS` (a DICOM SEG: :func:`ccmetrics.formats.dicom.read_seg_header`).
    reader : {"auto", "nibabel", "sitk"}
        The reader :func:`load_image` will use; it decides the dtype of a NIfTI with ``scl_slope``.

    Returns
    -------
    ImageHeader
        Equal to what :func:`load_image` returns (shape, dtype, spacing) for the same file and reader.

    Raises
    ------
    FileNotFoundError, ValueError, ImageReadError
        As :func:`load_image` does, for a missing file (a symbolic link in a loop or to a missing
        target named as such), an unknown extension, an image that is not 2D or 3D, vector pixels,
        or a broken header; and :class:`~ccmetrics.formats.image.ImageReadError` for a header that claims more
        voxels than the file holds (see the notes).

    Notes
    -----
    Cost: NIfTI headers are read by nibabel, or without it where they are plain
    (``ccmetrics.formats._nifti1``; of a ``.nii.gz``, only the first kilobytes are
    decompressed), the others by SimpleITK's ``ImageFileReader.ReadImageInformation``.  The file's
    size is then checked against the header's claim, without allocating the claimed size:

    * ``.nii``, and raw MHA/MHD/NRRD/NHDR data: the size of the (data) file;
    * ``.nii.gz`` and gzip-encoded NRRD: deflate never compresses more than 1032:1, then the
      gzip trailer (the uncompressed size mod 2**32 of the last member); when that disagrees with
      the header (several gzip members, or truncation), the data are decompressed one MiB at a
      time and counted, stopping as soon as the header's size is reached.  An agreeing trailer is
      taken at its word here (no voxel is read); it can be forged, and :func:`load_image` does not
      rely on it for a ``.nii.gz`` read with nibabel (it stops where the stream ends);
    * zlib-compressed MHA/MHD: only the 1032:1 bound (counting would decompress the whole
      file again); bzip2 NRRD, and data split over several files (``LIST``, ``%d`` patterns)
      are not checked, and a lying header there is found by SimpleITK after it allocated.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "case.nii.gz")
    >>> save_image(path, np.ones((40, 50, 6), np.uint8), spacing=(0.5, 0.5, 3.0))
    >>> header = read_header(path)
    >>> header.shape, header.dtype, header.spacing, header.nbytes
    ((40, 50, 6), dtype('uint8'), (0.5, 0.5, 3.0), 12000)
    """
    if _is_dicom(path, reader):
        from .dicom import read_seg_header

        return read_seg_header(path)
    path, shape, dtype, affine, _ = _header_geometry(path, reader)
    spacing, _ = _geometry(path, affine, len(shape))
    return ImageHeader(path, shape, np.dtype(dtype), spacing)


def _header_geometry(path, reader: str) -> tuple[str, tuple[int, ...], Any, np.ndarray, Any]:
    """What :func:`read_header` and :func:`read_grid` read of a header, once: the path, shape, dtype, the reader's
    affine in mm and, for a 2D NIfTI, its full 4 x 4 affine (``Image.affine_3d``; None for other images)."""
    path, nifti = _prepare(path, reader)
    plain = _plain_nifti(path, warn=False, count=True) if nifti and reader != "sitk" else None
    lazy = None
    if plain is not None:  # no scaling: the stored dtype
        shape, dtype = _image_shape(path, plain.shape), plain.dtype
        affine = _to_mm(path, plain.affine, plain.xyzt_units)
    elif nifti and reader != "sitk":
        hdr, lazy = _check_nifti(path, warn=False)
        shape = _image_shape(path, tuple(int(s) for s in hdr.get_data_shape()))
        try:  # the dtype nibabel's scaling gives, from its own code on an empty slice (reads no voxel)
            dtype = lazy.dataobj[(slice(0, 0),) * len(hdr.get_data_shape())].dtype
        except Exception as e:
            raise ImageReadError(f"cannot read {path!r} with nibabel: {e}{_HINT}") from e
        affine = _to_mm(path, np.array(lazy.affine, dtype=float), int(hdr["xyzt_units"]))
    else:
        if nifti:
            hdr, lazy = _check_nifti(path, warn=False)
            _no_empty_axis(path, hdr.get_data_shape())
        info = _sitk_information(path, check_size=not nifti)
        shape, dtype, affine = _image_shape(path, info.shape), info.dtype, info.affine
    return path, shape, dtype, affine, _affine_3d(path, len(shape), nifti, affine, lazy)


def read_grid(path, reader: str = "auto") -> Image:
    """The voxel grid of an image file, read from its header: no voxel is read.

    Parameters
    ----------
    path : str or os.PathLike
        A NIfTI, MHA/MHD or NRRD file (what :func:`load_image` reads, but a DICOM SEG).
    reader : {"auto", "nibabel", "sitk"}
        As for :func:`load_image`.

    Returns
    -------
    Image
        Shape, dtype, spacing and affine (and ``affine_3d``) as :func:`load_image` gives them; its ``array`` is a
        read-only zero-stride array (no memory), meant for :func:`check_same_geometry` and
        :func:`ccmetrics.formats.grids.on_grid` before the voxels are read, and for the memory they will take.

    Raises
    ------
    FileNotFoundError, ValueError, ImageReadError
        As :func:`read_header` does.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "scan.nii.gz")
    >>> save_image(path, np.zeros((4, 3, 2), np.int16), spacing=(0.5, 0.5, 2.0))
    >>> grid = read_grid(path)
    >>> grid.array.shape, grid.array.dtype, grid.spacing, grid.array.strides
    ((4, 3, 2), dtype('int16'), (0.5, 0.5, 2.0), (0, 0, 0))
    """
    path, shape, dtype, affine, affine_3d = _header_geometry(path, reader)
    spacing, grid_affine = _geometry(path, affine, len(shape))
    return Image(np.broadcast_to(np.zeros((), dtype), shape), spacing, grid_affine, path, affine_3d)


def load_image(path, reader: str = "auto", *, c_order: bool = False) -> Image:
    """Read a 2D or 3D label image with its spacing and affine (see the module docstring for axes).

    Parameters
    ----------
    path : str or os.PathLike
        A file ending in one of :data:`IMAGE_EXTENSIONS`, or a folder holding one DICOM SEG.
    reader : {"auto", "nibabel", "sitk"}
        ``"auto"`` uses nibabel for ``.nii``/``.nii.gz``, highdicom for DICOM SEG
        (:func:`ccmetrics.formats.dicom.read_seg`, which returns a :class:`ccmetrics.formats.dicom.SegImage`) and
        SimpleITK for the rest.
    c_order : bool, default False
        True: a ``.nii.gz`` of one-byte voxels read with nibabel whose non-zero voxels are few (a mask) comes
        C-contiguous, as the engine needs it (the same values and dtype; a data-set run reads its cases so). Other
        files come as their reader gives them.

    Returns
    -------
    Image
        Trailing singleton axes (a ``(X, Y, Z, 1)`` NIfTI) are dropped.

    Raises
    ------
    FileNotFoundError
        If the file does not exist; a symbolic link in a loop, or one whose target does not exist,
        is named as such (with the chain of links, or the missing target).
    ValueError
        For an unknown extension, an image with more than 3 non-singleton axes, or vector pixels.
    ImageReadError
        (a ValueError) for a truncated or corrupt file, a zero or non-finite voxel size, or a
        header that claims more voxels than the file holds: checked before the voxels are
        allocated (as :func:`read_header` does; see its notes for what each format checks).
        A ``.nii.gz`` read with nibabel is refused where its gzip stream ends, even when its
        trailer was forged to the header's size (scaled files too): the claimed array is never
        resident, only the data the file holds.

    Notes
    -----
    The readers differ on NIfTI headers whose qform and sform disagree: nibabel uses the
    sform, ITK the qform unless sform_code is 1 (scanner); a warning is issued for such files.
    A NIfTI with ``scl_slope`` other than 1 gives floats (float64 in nibabel, float32 in ITK).

    Cost: with nibabel, a ``.nii.gz`` is inflated once by ``_gunzip_array``, faster than
    nibabel's ``GzipFile`` (the same array, bit for bit and in dtype, scaled or not), in one pass
    also when it holds several gzip members.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "case.nii.gz")
    >>> save_image(path, np.ones((4, 5, 6), np.uint8), spacing=(0.5, 0.5, 3.0))
    >>> img = load_image(path)
    >>> img.array.shape, img.array.dtype, img.spacing
    ((4, 5, 6), dtype('uint8'), (0.5, 0.5, 3.0))
    >>> np.allclose(load_image(path, reader="sitk").affine, img.affine)
    True
    """
    return _load_image(path, reader, c_order)


def _load_image(path, reader: str = "auto", c_order: bool = False) -> Image:
    """:func:`load_image`; with ``c_order``, a ``.nii.gz`` of one-byte voxels read with nibabel whose non-zero voxels
    are few (a mask: ``_gunzip_array``) comes C-contiguous, as the engine needs it (the same values and dtype)."""
    if _is_dicom(path, reader):
        from .dicom import read_seg

        return read_seg(path)
    path, nifti = _prepare(path, reader)
    plain = _plain_nifti(path, warn=True, count=False) if nifti and reader != "sitk" else None
    lazy = None
    if plain is None and nifti:  # the size too, before either reader allocates: SimpleITK allocates the header's
        # size at once, nibabel's path (_gunzip_array) commits the pages it writes only, and stops where the stream ends
        hdr, lazy = _check_nifti(path, warn=True, count=reader == "sitk")
        _no_empty_axis(path, hdr.get_data_shape())  # (before nibabel or SimpleITK reads an empty array)
    if plain is not None:
        array, affine = _read_plain(path, plain, c_order), _to_mm(path, plain.affine, plain.xyzt_units)
    elif nifti and reader != "sitk":
        array, affine = _read_nibabel(path, lazy, c_order)
        affine = _to_mm(path, affine, int(hdr["xyzt_units"]))
    else:
        array, affine = _read_sitk(path)  # (ITK converts a NIfTI's units itself)
    shape = _image_shape(path, array.shape)
    array = array.reshape(shape)
    spacing, image_affine = _geometry(path, affine, array.ndim)
    return Image(array, spacing, image_affine, path, _affine_3d(path, array.ndim, nifti, affine, lazy))


def _affine_3d(path: str, ndim: int, nifti: bool, affine: np.ndarray, lazy: Any) -> np.ndarray | None:
    """The 4 x 4 affine (mm) of a 2D NIfTI, which places its plane in 3D (``Image.affine_3d``); None for other
    images. ``affine``: the reader's (nibabel's 4 x 4; SimpleITK's is 2D). Every reader gives the header's full
    affine as nibabel reads it (``lazy`` where SimpleITK read the voxels): SimpleITK's 2D geometry keeps only the
    in-plane part of an oblique plane's columns (not of unit length then), and pasted over the 3D affine it would
    place the same file in another plane than the default reader does."""
    if ndim != 2 or not nifti:
        return None
    if affine.shape == (4, 4):
        return np.array(affine, dtype=float)
    return _to_mm(path, np.array(lazy.affine, dtype=float), int(lazy.header["xyzt_units"]))


def _plain_nifti(path: str, warn: bool, count: bool) -> PlainNifti1 | None:
    """The NIfTI header read without nibabel where it is plain (``ccmetrics.formats._nifti1``), with the checks of
    :func:`_check_nifti` (the file's size against the header, the qform against the sform); None for any other
    header, which :func:`_check_nifti` reads with nibabel."""
    try:
        plain = read_plain(path)
    except OSError:
        return None  # nibabel's path says what is wrong with the file
    if plain is not None:
        _mm_per_unit(path, plain.xyzt_units)  # (a unit NIfTI-1 does not define: refused before the voxels are read)
        gz = path.lower().endswith(".gz")
        _check_data_size(
            path,
            plain.shape,
            plain.dtype,
            have_at=plain.offset,
            gzip_stream=0 if gz else None,
            includes_offset=gz,
            count=count,
        )
        if warn and plain.qform is not None and plain.sform is not None:
            _warn_disagreeing(path, plain.qform, plain.sform, stacklevel=4)
    return plain


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


_WINDOW = 1 << 16  # compressed bytes given to zlib at a time (what it keeps back is copied on each call)
_NOT_ZERO = re.compile(rb"[^\0]")


def _gunzip_array(
    path: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    offset: int,
    order: Literal["C", "F"] = "F",
    c_order: bool = False,
) -> np.ndarray:
    """The array of ``shape`` and ``dtype`` (``order``: nibabel's, Fortran for NIfTI) at byte ``offset``
    of the decompressed gzip file ``path``, unscaled.

    What nibabel's ``np.asanyarray(img.dataobj)`` returns for a file without scaling, bit for bit,
    decompressed faster and safer: the compressed file is read in one call and inflated 1 MiB at a time
    straight into the array's buffer, which stays in the CPU cache (``GzipFile`` grows one large ``bytes``
    object per read and copies it again).  The buffer is ``np.empty``: its pages are committed only as
    they are written, so a header that claims more voxels than the stream holds costs no more memory
    than the stream's own data.

    Gzip files of several members (``bgzip``, concatenated files, zero padding between them) are
    followed member by member (RFC 1952: each member's header parsed here, its deflate data inflated
    raw, its CRC-32 and size checked against its trailer when its end is reached).  Decompression
    stops once the array is full (data after it are ignored, as nibabel does); a stream that ends
    before, a member whose trailer disagrees with its data (a forged size, a corrupt CRC), or bytes
    that start no member raise :class:`~ccmetrics.formats.image.ImageReadError` (nibabel: ``EOFError``,
    ``BadGzipFile``).
    With ``c_order`` (voxels of one byte, ``order`` "F"), the array is returned C-contiguous (the same values):
    while the voxels found non-zero stay few (``ccmetrics._inputs.SPARSE_COPY_FRACTION``), only they are kept,
    found in each decompressed MiB while it is in the CPU cache, and written into a zeroed C-ordered array at the
    end (``ccmetrics._inputs.scatter_c_order``): no Fortran-ordered array is written, and none is scanned and copied
    again into C order (what the engine needs: ``ccmetrics._inputs.c_contiguous``); more of them, and the array is
    the Fortran-ordered one, as without.

    Cost: one pass over the file, memory of the compressed file plus the array. Of a 400 x 400 x 300 mask's
    0.015 s, zlib's CRC-32 takes 0.011 s; with ``isal`` (python-isal) installed its CRC-32 is used (0.0015 s).
    With ``c_order``, a mask's read in C order takes about what its Fortran-ordered read takes without (its
    C-ordered copy took another 0.011 s).
    """
    nbytes = math.prod(shape) * dtype.itemsize
    need = offset + nbytes  # bytes of the decompressed stream
    sparse: _Sparse | None = _Sparse(nbytes) if c_order and dtype.itemsize == 1 and order == "F" else None
    out = np.empty(nbytes if sparse is None else 0, np.uint8)  # (sparse: allocated when it is dense after all)
    buffer = out.data  # a writable memoryview of the array
    with open(path, "rb") as f:
        data = f.read()
    view = memoryview(data)
    skip, pos, inflated = offset, 0, 0  # header bytes still to skip, voxel bytes written, bytes inflated
    at = 0  # the next compressed byte
    lie = ""  # what the last member's trailer claimed, when it disagreed with the member

    def fail(why: str) -> ImageReadError:
        return ImageReadError(f"cannot read {path!r}: {_claim(shape, dtype)}, but {why}{_HINT}")

    while pos < nbytes:
        found = _NOT_ZERO.search(data, at)  # zero padding between members, as gzip and GzipFile allow
        if found is None:
            break  # the end of the file
        at = _gzip_body(data, found.start())
        if at < 0:
            raise fail(
                f"the file decompresses to {inflated:,} bytes, {need:,} needed: byte {found.start():,} "
                f"starts no gzip member (nor zero padding between members); the file is corrupt"
            )
        member, crc, size = zlib.decompressobj(-zlib.MAX_WBITS), 0, 0  # raw deflate: the trailer checked here
        while pos < nbytes and not member.eof:
            window = view[at : at + _WINDOW]
            piece = memoryview(member.decompress(window, _CHUNK))
            at += len(window) - len(member.unused_data if member.eof else member.unconsumed_tail)  # input left
            if not len(piece) and not len(window):
                break  # the file ends inside the member
            crc, size, inflated = _crc32(piece, crc), size + len(piece), inflated + len(piece)
            if skip:  # the header and extensions before the voxels
                cut = min(skip, len(piece))
                piece, skip = piece[cut:], skip - cut
            take = min(len(piece), nbytes - pos)
            if sparse is not None and not sparse.add(piece[:take], pos):  # too many non-zero voxels: dense
                out = sparse.dense(pos)
                buffer, sparse = out.data, None
            if sparse is None:
                buffer[pos : pos + take] = piece[:take]
            pos += take
        if not member.eof or len(data) < at + 8:
            break  # the array is full, or the file ends before the member's trailer
        want_crc, want_size = struct.unpack_from("<II", data, at)
        at += 8
        if want_size != size % 2**32:
            lie = f"its gzip trailer claims {want_size:,} bytes for a member that holds {size:,} (forged or corrupt)"
            if pos < nbytes and _NOT_ZERO.search(data, at) is None:
                break  # nothing follows: the short stream is the error, the trailer named in it
            raise fail(f"the file is corrupt: {lie}")
        if want_crc != crc:
            raise fail(
                f"the file is corrupt: a gzip member's data have CRC-32 {crc:08x}, its trailer says {want_crc:08x}"
            )
    if pos < nbytes:
        raise fail(f"the file decompresses to {inflated:,} bytes, {need:,} needed" + (f"; {lie}" if lie else ""))
    if sparse is not None:
        return sparse.c_ordered(shape).view(dtype)
    return np.ndarray(shape, dtype=dtype, buffer=out, order=order)


class _Sparse:
    """The non-zero bytes of a Fortran-ordered array of one-byte voxels, decompressed piece by piece: their flat
    (Fortran) indices and values, kept while they are at most ``SPARSE_COPY_FRACTION`` of the ``nbytes`` voxels
    (the share up to which ``ccmetrics._inputs.c_contiguous`` scatters them too; beyond, their indices and values
    would take more memory than a half of the array, and the Fortran-ordered array with numpy's copy is as fast)."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes, self.limit, self.count = nbytes, int(nbytes * SPARSE_COPY_FRACTION), 0
        self.indices: list[np.ndarray] = []
        self.values: list[np.ndarray] = []

    def add(self, piece: Any, at: int) -> bool:
        """Keep the non-zero bytes of ``piece`` (voxels ``at`` on); False (nothing kept) when too many are."""
        data = np.frombuffer(piece, np.uint8)
        if not data.size:
            return True
        # 0/1 bytes are valid booleans, whose non-zero entries numpy finds several times faster
        found = np.flatnonzero(data.view(bool) if data.max() <= 1 else data)
        if self.count + found.size > self.limit:
            return False
        if found.size:
            self.count += found.size
            self.values.append(data[found])
            self.indices.append(found + at)
        return True

    def _flat(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.indices:
            return np.zeros(0, np.int64), np.zeros(0, np.uint8)
        return np.concatenate(self.indices), np.concatenate(self.values)

    def dense(self, seen: int) -> np.ndarray:
        """The buffer of a dense read, its first ``seen`` bytes (those added so far) written, the rest uncommitted."""
        out = np.empty(self.nbytes, np.uint8)
        out[:seen] = 0
        where, values = self._flat()
        out[where] = values
        self.indices, self.values = [], []
        return out

    def c_ordered(self, shape: tuple[int, ...]) -> np.ndarray:
        """The whole array, C-ordered, as uint8."""
        where, values = self._flat()
        return scatter_c_order(where, values, shape, np.uint8)


def _gzip_body(data: bytes, at: int) -> int:
    """Where the deflate data of the gzip member whose header starts at byte ``at`` of ``data`` begin (RFC 1952:
    10 bytes, then the optional extra field, name, comment and header CRC); ``len(data)`` when the file ends
    inside the header, -1 when ``at`` starts no gzip member (not its magic bytes and deflate method, or
    reserved flags set, as zlib refuses)."""
    head = data[at : at + 10]
    if head[:3] != b"\x1f\x8b\x08"[: len(head)] or (len(head) > 3 and head[3] & 0xE0):
        return -1
    if len(head) < 10:
        return len(data)
    flags, body = head[3], at + 10
    if flags & 4:  # FEXTRA: a 2-byte length, then the field
        body += 2 + int.from_bytes(data[body : body + 2], "little")
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            end = data.find(b"\0", body)
            body = len(data) if end < 0 else end + 1
    if flags & 2:  # FHCRC
        body += 2
    return min(body, len(data))


@dataclass(frozen=True, eq=False)
class _SitkInformation:
    reader: Any  # the ImageFileReader, its information read
    shape: tuple[int, ...]  # ITK's size: the (i, j, k) shape of the transposed array
    dtype: np.dtype
    affine: np.ndarray


#: numpy dtypes of SimpleITK's scalar pixel types, by name (what sitk.GetArrayFromImage gives)
_SITK_DTYPES = {
    "sitkUInt8": np.uint8,
    "sitkInt8": np.int8,
    "sitkUInt16": np.uint16,
    "sitkInt16": np.int16,
    "sitkUInt32": np.uint32,
    "sitkInt32": np.int32,
    "sitkUInt64": np.uint64,
    "sitkInt64": np.int64,
    "sitkFloat32": np.float32,
    "sitkFloat64": np.float64,
    "sitkComplexFloat32": np.complex64,
    "sitkComplexFloat64": np.complex128,
}


def _sitk_information(path: str, check_size: bool) -> _SitkInformation:
    """The header as SimpleITK reads it (no voxels), with the file's size checked against it
    (``check_size``; NIfTI files are checked by :func:`_check_nifti` instead)."""
    import SimpleITK as sitk

    if check_size:  # (SimpleITK's NRRD reader opens the data file for its header already)
        _check_data_files(path, _extension(path) in (".mha", ".mhd"))
    reader = sitk.ImageFileReader()
    reader.SetFileName(path)
    try:
        reader.ReadImageInformation()
    except RuntimeError as e:
        raise ImageReadError(f"cannot read {path!r} with SimpleITK: {str(e).strip()}{_HINT}") from e
    components = reader.GetNumberOfComponents()
    pixel_id = reader.GetPixelID()
    name = next((k for k in _SITK_DTYPES if getattr(sitk, k, None) == pixel_id), None)
    if components > 1 or name is None:
        raise ValueError(
            f"{path!r} has vector pixels ({components} components, "
            f"{sitk.GetPixelIDValueAsString(pixel_id)}); ccmetrics evaluates "
            "scalar label images: take one component first"
        )
    d = reader.GetDimension()
    affine = np.eye(d + 1)
    affine[:d, :d] = np.reshape(reader.GetDirection(), (d, d)) * np.asarray(reader.GetSpacing())
    affine[:d, d] = reader.GetOrigin()
    affine[:2] *= -1  # ITK world is LPS: flip x and y to get RAS
    shape = tuple(int(s) for s in reader.GetSize())
    _no_empty_axis(path, shape)  # (SimpleITK reads a MetaImage with DimSize 0 as an empty array)
    dtype = np.dtype(_SITK_DTYPES[name])
    if check_size:
        _check_itk_size(path, shape, dtype)
    return _SitkInformation(reader, shape, dtype, affine)


def _read_sitk(path: str):
    import SimpleITK as sitk

    info = _sitk_information(path, check_size=_extension(path) not in (".nii", ".nii.gz"))
    try:
        img = info.reader.Execute()
        array = np.ascontiguousarray(sitk.GetArrayFromImage(img).transpose())  # (k,j,i) -> (i,j,k)
    except MemoryError:
        raise _no_memory(path, info.shape, info.dtype) from None
    except RuntimeError as e:
        if "alloc" in str(e).lower():  # ITK's "Failed to allocate memory for image", std::bad_alloc
            raise _no_memory(path, info.shape, info.dtype) from None
        raise ImageReadError(f"cannot read {path!r} with SimpleITK: {str(e).strip()}{_HINT}") from e
    return array, info.affine


def _no_memory(path: str, shape: Sequence[int], dtype: np.dtype) -> ImageMemoryError:
    """The error for a file whose voxels do not fit in the memory left: what the image needs, and the fixes."""
    need = math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize
    return ImageMemoryError(
        f"not enough memory to read {path!r}: its {'x'.join(map(str, shape))} voxels of {np.dtype(dtype)} need "
        f"{need:,} bytes ({need / 2**30:.2f} GiB) at once; free memory or run it on a machine with more, and give "
        "a data-set run a memory limit (--max-memory; max_memory= in Python) to refuse such a case from its header "
        "before reading it"
    )


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


#: deflate (gzip, zlib) never compresses more than 1032:1 (Mark Adler, zlib's FAQ); a
#: compressed file of n bytes cannot hold more than this times n bytes
_DEFLATE_RATIO_BOUND = 1032
_CHUNK = 1 << 20  # bytes decompressed at a time when counting


def _check_data_size(
    path: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    *,
    have_at: int,
    gzip_stream: int | None,
    includes_offset: bool = False,
    data_file: str | None = None,
    encoding: str = "raw",
    reader: str = "",
    count: bool = True,
) -> None:
    """Raise ImageReadError when the header's ``shape`` and ``dtype`` claim more bytes than the file
    holds, without allocating them.

    The data lie in ``data_file`` (default ``path``) from byte ``have_at`` on.  ``gzip_stream``:
    the byte where a gzip stream starts (``None``: not gzip); with ``includes_offset`` the stream
    also holds the ``have_at`` bytes before the data (``.nii.gz``).  ``encoding``: ``"raw"``,
    ``"gzip"`` (then ``gzip_stream`` is set), ``"deflate"`` (zlib, not counted: only the 1032:1
    bound), ``"hex"`` (2 characters a byte) or ``"ascii"`` (a value and a separator a voxel).
    ``reader``: the reader that would have read it, for the message.

    A gzip stream is checked against deflate's 1032:1 bound, then (``count``) against its trailer, the
    uncompressed size mod 2**32 of its last member: agreeing, it is taken as it is (one seek; a trailer
    can be forged, and it only tells the last member's size); disagreeing (several members, bytes after
    the stream, truncation, a lie), the stream is inflated and counted up to the header's size.  Without
    ``count`` only the bound is checked: for a caller that inflates the stream into the array itself and
    refuses it where it ends (``_gunzip_array``), for which counting would be a second pass.
    """
    data_file = path if data_file is None else data_file
    voxels = math.prod(int(s) for s in shape)  # Python ints: a product past 2**63 cannot wrap
    data = voxels * dtype.itemsize
    size = os.path.getsize(data_file)
    claim = _claim(shape, dtype)
    where = (f" with {reader}" if reader else "") + ("" if data_file == path else f" (data in {data_file!r})")

    def fail(holds: str) -> None:
        raise ImageReadError(f"cannot read {path!r}{where}: {claim}, but {holds}{_HINT}")

    if gzip_stream is not None:
        need = data + (have_at if includes_offset else 0)  # bytes of the decompressed stream
        compressed = size - gzip_stream
        if need > _DEFLATE_RATIO_BOUND * compressed:
            fail(
                f"the file holds {compressed:,} compressed bytes, which decompress to at most "
                f"{_DEFLATE_RATIO_BOUND * compressed:,} (deflate compresses at most {_DEFLATE_RATIO_BOUND}:1)"
            )
        if not count:
            return  # the caller inflates the stream itself and stops where it ends (_gunzip_array)
        with open(data_file, "rb") as f:  # gzip's last 4 bytes: the uncompressed size mod 2**32
            f.seek(-4, os.SEEK_END)
            if int.from_bytes(f.read(4), "little") == need % 2**32:
                return
        try:  # several gzip members, bytes after the stream, or truncation: count, stopping at need
            total = _inflated_size(data_file, gzip_stream, need)
        except (zlib.error, OSError) as e:
            raise ImageReadError(f"cannot read {path!r}{where}: {e}{_HINT}") from e
        if total < need:
            fail(f"the file decompresses to {total:,} bytes, {need:,} needed")
        return
    have = size - have_at
    if encoding == "raw" and have < data:
        after = f" after its {have_at:,}-byte header" if have_at else ""
        fail(f"the {'file' if data_file == path else 'data file'} holds {max(have, 0):,} bytes of data{after}")
    elif encoding == "deflate" and data > _DEFLATE_RATIO_BOUND * have:
        fail(
            f"the file holds {max(have, 0):,} compressed bytes, which decompress to at most "
            f"{_DEFLATE_RATIO_BOUND * max(have, 0):,} (deflate compresses at most {_DEFLATE_RATIO_BOUND}:1)"
        )
    elif encoding == "hex" and 2 * data > have:
        fail(f"the file holds {max(have, 0):,} hex characters, 2 a byte")
    elif encoding == "ascii" and 2 * voxels - 1 > have:
        fail(f"the file holds {max(have, 0):,} characters, at least 2 a voxel (a digit and a separator)")


def _claim(shape: tuple[int, ...], dtype: np.dtype) -> str:
    """What a header claims, for messages: ``its header claims 4x5x6 voxels of uint8 (120 bytes of data)``."""
    data = math.prod(int(s) for s in shape) * dtype.itemsize
    return f"its header claims {'x'.join(map(str, shape))} voxels of {dtype} ({data:,} bytes of data)"


def _inflated_size(path: str, offset: int, limit: int) -> int:
    """Bytes the gzip stream (one or more members) from byte ``offset`` of ``path`` decompresses to,
    counted up to ``limit``: decompressed a MiB at a time, never holding more than two MiB."""
    total = 0
    with open(path, "rb") as f:
        f.seek(offset)
        inflate = zlib.decompressobj(47)  # gzip or zlib header
        pending = b""
        while total < limit:
            if not pending:
                pending = f.read(_CHUNK)
                if not pending:
                    break
            total += len(inflate.decompress(pending, min(_CHUNK, limit - total)))
            if inflate.eof:  # the next member, after gzip's optional zero padding
                pending = inflate.unused_data.lstrip(b"\0")
                inflate = zlib.decompressobj(47)
            else:
                pending = inflate.unconsumed_tail
    return total


def _check_itk_size(path: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Check the size of a MetaImage or NRRD file (or its data file) against its header's claim."""
    located = _metaimage_data(path) if _extension(path) in (".mha", ".mhd") else _nrrd_data(path)
    if located is None:
        return  # data in several files, or a header this parser does not follow: SimpleITK decides
    data_file, offset, encoding = located
    if not os.path.isfile(data_file):
        return  # SimpleITK says the data file is missing
    gzip_stream = offset if encoding == "gzip" else None
    _check_data_size(
        path,
        shape,
        dtype,
        have_at=offset,
        gzip_stream=gzip_stream,
        data_file=data_file,
        encoding=encoding,
        reader="SimpleITK",
    )


#: the most data files one header may name (a pattern such as ``slice%04d.raw 1 9999 1`` names them all); a header
#: that names more is refused rather than checked in part
_MAX_DATA_FILES = 100_000

#: the most bytes of a ``LIST`` of data file names (after the header's ``LIST`` line) that are read and checked
_MAX_LIST_BYTES = 16 << 20

#: C's ``int``, which MetaIO counts a ``%d`` pattern's numbers in
_INT_MAX = 2**31 - 1

_META_LOCAL = ("LOCAL", "Local", "local")  # MetaIO's names for data in the header's own file (case-sensitive)


def _check_data_files(path: str, metaimage: bool) -> None:
    """Refuse a MetaImage or NRRD header whose data files (``ElementDataFile``, NRRD's ``data file``: one name, a
    ``LIST`` or a ``%d`` pattern) lie outside the header's folder (an absolute path, ``..``, a symbolic link to a
    file or folder elsewhere), or are no regular file (a FIFO, which would block the read forever, a device such as
    ``/dev/zero``, which never ends, a folder): before SimpleITK opens them. A data file that does not exist is left
    to SimpleITK, which names it. A header whose data files cannot all be known (a header longer than its first MiB,
    a ``LIST`` longer than ``_MAX_LIST_BYTES``, more than ``_MAX_DATA_FILES`` names, a pattern SimpleITK would
    misread) is refused too."""
    field = "ElementDataFile" if metaimage else "data file"
    names = _data_file_names(path, metaimage)
    folder = os.path.dirname(os.path.abspath(path))
    real_folder = os.path.realpath(folder)
    for name in names:
        target = os.path.normpath(os.path.join(folder, name))
        if os.path.commonpath([folder, target]) != folder:
            raise ImageReadError(
                f"cannot read {path!r}: its data file {name!r} ({field}) lies outside the header's folder "
                f"{folder!r}; ccmetrics reads a header's data only from its own folder or below it: move or copy "
                "the data file beside the header and give its name there"
            )
        try:
            mode = os.stat(target).st_mode
        except OSError:
            mode = None  # missing: SimpleITK says so
        if mode is not None and not stat.S_ISREG(mode):
            raise ImageReadError(
                f"cannot read {path!r}: its data file {target!r} ({field}) is {_file_kind(mode)}, not a regular "
                "file (reading it could wait forever or never end): write the data into a regular file"
            )
        real = os.path.realpath(target)
        if os.path.commonpath([real_folder, real]) != real_folder:
            raise ImageReadError(
                f"cannot read {path!r}: its data file {name!r} ({field}) is a symbolic link (or lies under one) to "
                f"{real!r}, outside the header's folder {folder!r}; ccmetrics reads a header's data only from its "
                "own folder or below it: copy the data file beside the header instead of linking it"
            )


def _file_kind(mode: int) -> str:
    """What a non-regular file is, for messages."""
    kinds = [
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((what for test, what in kinds if test(mode)), "not a regular file")


def _meta_field(line: str) -> tuple[str, str]:
    """(key, value) of a MetaImage header line as MetaIO splits it: the key up to the first ``=`` or ``:``
    (case-sensitive, spaces around it dropped), the value after it, stripped."""
    match = re.match(r"\s*([^=:]*?)\s*[=:](.*)", line)
    return (match.group(1), match.group(2).strip()) if match else (line.strip(), "")


def _is_element_data_file(line: str) -> bool:
    """The line that ends a MetaImage header (MetaIO stops at ``ElementDataFile``, spelt so: other cases are
    ignored fields)."""
    return _meta_field(line)[0] == "ElementDataFile"


def _data_file_names(path: str, metaimage: bool) -> list[str]:
    """The data file names a MetaImage or NRRD header gives, as written (relative to its folder, or absolute): none
    for data in the file itself; a ``LIST``'s names (every line after it); a ``%d`` pattern's, from its first to
    its last number, as MetaIO or NRRD expands it (a MetaImage name also with ``.gz`` and ``.Z``, which MetaIO tries
    where the name is missing). Raises ImageReadError where they cannot all be known."""
    if metaimage:
        found = _header_lines(path, _is_element_data_file, what="its ElementDataFile line")
        if found is None:
            return []  # no ElementDataFile: SimpleITK says so
        lines, ends = found
        value = _meta_field(lines[-1])[1]
        if value in _META_LOCAL:
            return []
        if value[:4] == "LIST":  # the names follow the header, one a line (MetaIO keeps leading spaces)
            return _list_names(path, ends[-1], "ElementDataFile")
        if "%" in value:
            return _metaimage_pattern(path, value, lines)
        return [value, value + ".gz", value + ".Z"]
    found = _header_lines(path, lambda line: line == "", eof_ends=True, what="the blank line that ends its header")
    lines, ends = found if found is not None else ([], [])
    names: list[str] = []
    for n, line in enumerate(lines):
        key, sep, rest = line.partition(":")
        if n and sep and not line.startswith("#") and key.strip().lower() in ("data file", "datafile"):
            names += _nrrd_names(path, rest.strip(), ends[n])
            if rest.strip().upper().startswith("LIST"):
                break  # the rest of the file is the list's
    return names


def _nrrd_names(path: str, value: str, at: int) -> list[str]:
    """The names of one NRRD ``data file`` field ``value`` whose line ends at byte ``at``: a ``LIST`` (the rest of the
    header file, one name a line; with the field's own value where it is no ``LIST`` in capitals), a pattern
    ``<format> <min> <max> <step> [<subdim>]`` (a negative step counts down), or one name."""
    field = "data file"
    if value.upper().startswith("LIST"):
        return _list_names(path, at, field) + ([] if value.startswith("LIST") else [value])
    parts = value.split()
    if "%" in value and len(parts) >= 4:
        first, last, step = (_pattern_number(path, field, value, word) for word in parts[1:4])
        if step == 0:
            raise ImageReadError(
                f"cannot read {path!r}: its data file pattern {value!r} has step 0 (the form is "
                "'<format> <min> <max> <step>', with a step other than 0)"
            )
        count = max(0, (last - first) // step + 1)
        return _pattern_names(path, field, value, parts[0], range(first, first + step * count, step))
    return [value]


def _list_names(path: str, start: int, field: str) -> list[str]:
    """The names of a ``LIST`` of data files: every line of ``path`` from byte ``start`` on, trailing spaces and
    control characters dropped as MetaIO drops them (and all surrounding spaces, as NRRD may), blank lines skipped;
    refused past ``_MAX_LIST_BYTES`` or ``_MAX_DATA_FILES`` names rather than checked in part."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(_MAX_LIST_BYTES + 1)
    if len(data) > _MAX_LIST_BYTES:
        raise ImageReadError(
            f"cannot read {path!r}: its LIST of data files ({field}) runs past {_MAX_LIST_BYTES:,} bytes, more than "
            "ccmetrics checks; split the image or write its data into one file"
        )
    names: list[str] = []
    count = 0
    for raw in data.decode("latin-1").split("\n"):
        trimmed = re.sub(r"[^\x21-\x7e]+$", "", raw)
        count += bool(trimmed)
        names += [name for name in dict.fromkeys((trimmed, raw.strip())) if name]
    if count > _MAX_DATA_FILES:
        raise ImageReadError(
            f"cannot read {path!r}: its LIST of data files ({field}) names {count:,} files, more than the "
            f"{_MAX_DATA_FILES:,} ccmetrics checks; write the image's data into fewer files"
        )
    return names


def _pattern_number(path: str, field: str, value: str, word: str) -> int:
    """A number of a ``%d`` pattern, as C's ``(int) atof`` reads it; refused where it is no number or past C's
    ``int``."""
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", word):
        number = float(word)
        if abs(number) <= _INT_MAX:
            return int(number)
    raise ImageReadError(
        f"cannot read {path!r}: its data file pattern {value!r} ({field}) has {word!r} where a whole number from "
        f"{-_INT_MAX} to {_INT_MAX} belongs (the form is 'name%d.ext <first> <last> <step>')"
    )


def _metaimage_pattern(path: str, value: str, lines: list[str]) -> list[str]:
    """The names a MetaImage ``ElementDataFile`` pattern gives, counted as MetaIO counts them (``metaImage.cxx``):
    ``fmt`` alone is 1 to N (N: the last ``DimSize``), ``fmt first`` first to first + N - 1, ``fmt first last``
    steps by (last - first) / N (C's division), ``fmt first last step``; more words are a name with spaces and its
    three numbers. Whatever MetaIO would misread (a step of 0 or less: a division by zero or a loop without end) is
    refused."""
    field = "ElementDataFile"
    form = (
        "the form is 'name%d.ext', 'name%d.ext <first>', 'name%d.ext <first> <last>' or 'name%d.ext <first> <last> "
        "<step>', with whole numbers and a step above 0"
    )
    fields = dict(_meta_field(line) for line in lines)
    try:
        dims = [int(float(word)) for word in fields.get("DimSize", "").split()]
        ndims = int(float(fields["NDims"])) if "NDims" in fields else len(dims)
        slices = dims[ndims - 1] if 0 < ndims <= len(dims) else None
    except (ValueError, OverflowError):
        slices = None
    if slices is None:
        raise ImageReadError(
            f"cannot read {path!r}: its ElementDataFile is the pattern {value!r}, whose files are counted from the "
            f"last of NDims DimSize values, and its DimSize {fields.get('DimSize', '')!r} gives none"
        )
    if slices <= 0:
        return []  # no slice: nothing is read (and the empty axis is refused by its own check)
    words = value.split()
    first, last, step = 1, slices, 1
    if len(words) >= 5:  # MetaIO: the last three words are numbers (digits only), the rest the name
        if not all(word.isascii() and word.isdigit() for word in words[-3:]):
            raise ImageReadError(f"cannot read {path!r}: its ElementDataFile pattern {value!r} is misread: {form}")
        first, last, step = (_pattern_number(path, field, value, word) for word in words[-3:])
        words = [" ".join(words[:-3])]
    if len(words) >= 2:
        first = _pattern_number(path, field, value, words[1])
        last = first + slices - 1
    if len(words) >= 3:
        last = _pattern_number(path, field, value, words[2])
        span = last - first
        step = abs(span) // slices * (1 if span >= 0 else -1)  # C's division: toward 0
    if len(words) >= 4:
        step = _pattern_number(path, field, value, words[3])
    if step <= 0 or max(abs(first), abs(last)) > _INT_MAX:
        raise ImageReadError(
            f"cannot read {path!r}: its ElementDataFile pattern {value!r} gives a step of {step} for "
            f"{slices} slices (SimpleITK would divide by zero or never stop): {form}"
        )
    if 1 + (last - first) // step > slices:  # MetaIO reads no more files than slices
        last = (slices - 1) * step + first
    if last + step > _INT_MAX:
        raise ImageReadError(
            f"cannot read {path!r}: its ElementDataFile pattern {value!r} counts past {_INT_MAX} (C's int): {form}"
        )
    return _pattern_names(path, field, value, words[0], range(first, last + 1, step))


def _pattern_names(path: str, field: str, value: str, fmt: str, numbers: range) -> list[str]:
    """``fmt`` (one ``%d``-like conversion, as C's printf writes it) filled with each of ``numbers``; refused past
    ``_MAX_DATA_FILES`` names or where the format is not one whole-number conversion."""
    if len(numbers) > _MAX_DATA_FILES:
        raise ImageReadError(
            f"cannot read {path!r}: its data file pattern {value!r} ({field}) names {len(numbers):,} files, more "
            f"than the {_MAX_DATA_FILES:,} ccmetrics checks; write the image's data into fewer files"
        )
    spec = re.compile(r"%(?:%|([-+ 0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|j|z|t|L|q)?([diuxXo]))")
    found = [m for m in spec.finditer(fmt) if m.group(2)]
    if len(found) != 1 or "%" in spec.sub("", fmt):
        raise ImageReadError(
            f"cannot read {path!r}: its data file pattern {value!r} ({field}) needs exactly one whole-number "
            "conversion such as %d or %03d in its name (and %% for a % sign)"
        )
    m = found[0]
    kind = m.group(2)
    python = fmt[: m.start()] + "%" + m.group(1) + ("d" if kind in "diu" else kind) + fmt[m.end() :]
    return [python % (n & 0xFFFFFFFF if kind in "uxXo" else n) for n in numbers]


def _header_lines(path: str, last, eof_ends: bool = False, what: str = "its end"):
    """(text lines, the offset after each) of a text header, up to the line for which ``last(line)`` is true (or the
    end of the file, with ``eof_ends``); None where the file ends first. A header that runs past its first MiB is
    refused (``what``: what was not found there), as the data files it names could not all be checked."""
    lines: list[str] = []
    ends: list[int] = []
    with open(path, "rb") as f:
        while f.tell() < _CHUNK:
            raw = f.readline(_CHUNK)
            if not raw:
                return (lines, ends) if eof_ends else None
            lines.append(raw.decode("latin-1").rstrip("\r\n"))
            ends.append(f.tell())
            if last(lines[-1]):
                return lines, ends
        if not f.read(1):
            return (lines, ends) if eof_ends else None
    raise ImageReadError(
        f"cannot read {path!r}: its header runs past its first {_CHUNK:,} bytes without {what}; ccmetrics reads no "
        "longer header, as it could not check which data files SimpleITK would read (a FIFO, a file outside the "
        "header's folder): shorten the header"
    )


def _metaimage_data(path: str) -> tuple[str, int, str] | None:
    """(data file, offset of the data, ``"raw"`` or ``"deflate"``) of a MetaImage header."""
    found = _header_lines(path, _is_element_data_file, what="its ElementDataFile line")
    if found is None:
        return None
    lines, ends = found
    fields = dict(_meta_field(line) for line in lines)
    name = fields["ElementDataFile"]
    encoding = "deflate" if fields.get("CompressedData", "").lower() in ("true", "1") else "raw"
    if name in _META_LOCAL:
        return path, ends[-1], encoding
    if name[:4] == "LIST" or "%" in name or " " in name:
        return None
    skip = fields.get("HeaderSize", "0")
    offset = int(skip) if skip.lstrip("-").isdigit() and int(skip) > 0 else 0
    return os.path.join(os.path.dirname(path), name), offset, encoding


def _nrrd_data(path: str) -> tuple[str, int, str] | None:
    """(data file, offset of the data, encoding) of a NRRD header; None for what is not checked."""
    found = _header_lines(path, lambda line: line == "", eof_ends=True, what="the blank line that ends its header")
    if found is None:
        return None
    lines, ends = found
    end = ends[-1] if ends else 0
    fields = {}
    for line in lines[1:]:
        key, sep, value = line.partition(": ")
        if sep and not line.startswith("#"):
            fields[key.strip().lower()] = value.strip()
    encoding = {"gz": "gzip", "gzip": "gzip", "raw": "raw", "hex": "hex"}.get(fields.get("encoding", "raw").lower())
    if fields.get("encoding", "").lower() in ("txt", "text", "ascii"):
        encoding = "ascii"
    if encoding is None:
        return None  # bzip2: no cheap bound
    name = fields.get("data file", fields.get("datafile"))
    if name is None:
        return path, end, encoding
    if name.upper().startswith("LIST") or " " in name or "%" in name:
        return None
    return os.path.join(os.path.dirname(path), name), 0, encoding


def save_image(path, array, like: Image | None = None, *, spacing: Sequence[float] | None = None) -> None:
    """Write a 2D or 3D array with ``like``'s geometry, or with ``spacing`` and no rotation.

    Parameters
    ----------
    path : str or os.PathLike
        Ends in one of :data:`IMAGE_EXTENSIONS`: ``.nii``/``.nii.gz`` are written by nibabel
        (qform and sform both set, code 1), the others by SimpleITK (compressed).
    array : array_like
        Indexed ``[i, j, k]`` as in :class:`~ccmetrics.formats.image.Image`; the dtype is kept, bool is written as
        uint8.
    like : Image, optional
        Reference whose affine (spacing, direction, origin) is written; same shape as ``array``.
    spacing : sequence of float, optional
        Used without ``like``: identity RAS direction, origin 0.  Default 1 mm.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> save_image(os.path.join(folder, "gt.mha"), np.eye(3, dtype=bool), spacing=(0.8, 0.8))
    >>> gt = load_image(os.path.join(folder, "gt.mha"))
    >>> gt.array.dtype, gt.spacing
    (dtype('uint8'), (0.8, 0.8))
    >>> save_image(os.path.join(folder, "pred.nii.gz"), gt.array, like=gt)
    >>> check_same_geometry(gt, load_image(os.path.join(folder, "pred.nii.gz"))) is None
    True
    """
    path = os.fspath(path)
    ext = _extension(path)
    if ext is None:
        raise ValueError(f"cannot write {path!r}: unknown image extension; use one of {', '.join(IMAGE_EXTENSIONS)}")
    if ext == ".dcm":
        raise ValueError(
            f"cannot write {path!r}: ccmetrics reads DICOM SEG but writes NIfTI, MHA or NRRD "
            "(highdicom.seg.Segmentation writes a SEG from the source images)"
        )
    array = np.asarray(array)
    array = array.astype(np.uint8) if array.dtype == bool else array
    n = array.ndim
    if n not in (2, 3):
        raise ValueError(f"array must be 2D or 3D, got shape {array.shape}")
    if like is not None and spacing is not None:
        raise ValueError("give like or spacing, not both: like's spacing is the one written")
    if like is not None:
        if like.array.shape != array.shape:
            raise ValueError(
                f"array shape {array.shape} differs from like's {like.array.shape}: "
                "save_image writes the array on like's grid, so the shapes must match"
            )
        affine = np.asarray(like.affine, dtype=float)
    else:
        spacing = (1.0,) * n if spacing is None else tuple(float(s) for s in spacing)
        if len(spacing) != n or not all(np.isfinite(s) and s > 0 for s in spacing):
            raise ValueError(f"spacing must be {n} finite positive numbers, got {spacing}")
        affine = np.diag(spacing + (1.0,))
    if ext in (".nii", ".nii.gz"):
        import nibabel as nib

        aff4 = affine
        if n == 2 and like is not None and like.affine_3d is not None:  # the plane like's file placed it in
            aff4 = np.asarray(like.affine_3d, dtype=float)
        elif n == 2:  # NIfTI affines are 4x4: k gets 1 mm along the normal
            aff4 = np.eye(4)
            aff4[np.ix_([0, 1, 3], [0, 1, 3])] = affine
        nifti = nib.Nifti1Image(array, aff4, dtype=array.dtype)
        nifti.set_qform(aff4, code=1)
        nifti.set_sform(aff4, code=1)
        nib.save(nifti, path)
        return
    import SimpleITK as sitk

    img = sitk.GetImageFromArray(np.ascontiguousarray(array.transpose()), isVector=False)
    lps = affine.copy()
    lps[:2] *= -1  # RAS -> ITK's LPS
    sp = np.linalg.norm(lps[:n, :n], axis=0)
    img.SetSpacing(sp.tolist())
    img.SetDirection((lps[:n, :n] / sp).ravel().tolist())
    img.SetOrigin(lps[:n, n].tolist())
    sitk.WriteImage(img, path, True)


def check_same_geometry(
    a: Image, b: Image, *, atol_mm: float = 1e-3, rtol: float = 1e-4, names: tuple[str, str] = ("gt", "pred")
) -> str | None:
    """Say whether two images lie on the same voxel grid in world space.

    Parameters
    ----------
    a, b : Image
        Typically the reference and the prediction.
    atol_mm : float
        Tolerance on the origin, in mm.
    rtol : float
        Relative tolerance on the spacing, and absolute tolerance on the direction cosines.
    names : (str, str)
        What to call ``a`` and ``b`` in the message.

    Returns
    -------
    str or None
        None when shape, spacing, origin and direction agree within tolerance, otherwise a
        message naming each difference with both values. Two 2D images that their files place in 3D
        (``Image.affine_3d``: 2D NIfTI) are compared in 3D: the origin's three
        coordinates and the directions of both axes in space, so slices of different planes (a coronal one beside
        an axial one, or parallel planes apart) are refused.

    Examples
    --------
    >>> gt = Image(np.zeros((4, 4, 2)), (0.5, 0.5, 3.0), np.diag([0.5, 0.5, 3.0, 1.0]))
    >>> pred = Image(np.zeros((4, 4, 2)), (0.5, 0.5, 2.0), np.diag([0.5, 0.5, 2.0, 1.0]))
    >>> check_same_geometry(gt, gt) is None
    True
    >>> check_same_geometry(gt, pred)
    'spacing differs: gt (0.5, 0.5, 3.0) mm, pred (0.5, 0.5, 2.0) mm'
    >>> axial = np.eye(4)
    >>> above = np.eye(4); above[2, 3] = 50.0  # the same axial plane 50 mm higher
    >>> slice_gt = Image(np.zeros((4, 4)), (1.0, 1.0), np.eye(3), affine_3d=axial)
    >>> check_same_geometry(slice_gt, Image(np.zeros((4, 4)), (1.0, 1.0), np.eye(3), affine_3d=above))
    'origin differs: gt (0.0, 0.0, 0.0) mm, pred (0.0, 0.0, 50.0) mm (the 2D images lie in parallel planes 50 mm apart)'
    """
    na, nb = names
    if a.array.shape != b.array.shape:
        return f"shape differs: {na} {a.array.shape}, {nb} {b.array.shape}"
    problems = []
    if not np.allclose(a.spacing, b.spacing, rtol=rtol, atol=0):
        problems.append(f"spacing differs: {na} {_r(a.spacing)} mm, {nb} {_r(b.spacing)} mm")
    (origin_a, direction_a), (origin_b, direction_b) = _placement(a, b), _placement(b, a)
    placed = a.array.ndim == 2 and a.affine_3d is not None and b.affine_3d is not None  # compared in 3D
    if not np.allclose(origin_a, origin_b, rtol=0, atol=atol_mm):
        apart = ""
        if placed:
            normal = np.cross(direction_a[:, 0], direction_a[:, 1])
            distance = abs(float((origin_b - origin_a) @ normal))
            if distance > atol_mm and np.allclose(direction_a, direction_b, rtol=0, atol=rtol):
                apart = f" (the 2D images lie in parallel planes {distance:.6g} mm apart)"
        problems.append(f"origin differs: {na} {_r(origin_a)} mm, {nb} {_r(origin_b)} mm{apart}")
    if not np.allclose(direction_a, direction_b, rtol=0, atol=rtol):
        planes = " (the 2D images lie in different planes)" if placed else ""
        problems.append(f"direction differs: {na} {_r(direction_a)}, {nb} {_r(direction_b)}{planes}")
    return "; ".join(problems) or None


def _placement(image: Image, other: Image) -> tuple[np.ndarray, np.ndarray]:
    """(origin, direction) of ``image`` as compared with ``other``: in 3D (three coordinates; the 3 x 2 directions of
    the two axes) where both are 2D images placed in 3D (``Image.affine_3d``), else the image's own."""
    full = image.affine_3d
    if image.array.ndim != 2 or full is None or other.affine_3d is None:
        return image.origin, image.direction
    full = np.asarray(full, dtype=float)
    return full[:3, 3].copy(), full[:3, :2] / np.asarray(image.spacing)
