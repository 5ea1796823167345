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
array is resident (:func:`read_header`'s notes say what each format checks; ``ccmetrics.formats._sizes``).  A
``.nii.gz`` read with nibabel (the default) is inflated by ccmetrics itself, straight into the array's buffer, and
refused where its gzip stream ends, whatever its trailer says; nibabel's scaling (``scl_slope``, ``scl_inter``) is
then applied as nibabel applies it (``ccmetrics.formats._nifti_readers``).

Refused before any voxel is read: an axis of length 0 (named with its header field); a NIfTI spatial unit that
NIfTI-1 does not define (``xyzt_units & 7`` of 4 to 7; meter and micron are converted to mm in every reader, spacing
and origin, as ITK does; 0 is read as mm); a damaged ``vox_offset``; a MetaImage or NRRD data file outside the
header's folder or that is no regular file (a FIFO, a device: ``ccmetrics.formats._itk_data_files``); sizes are
multiplied in Python ints, which cannot wrap.
A 2D NIfTI keeps its file's complete affine (``Image.affine_3d``), and :func:`check_same_geometry` compares two such
images in 3D. A valid file too large for the memory left raises
:class:`~ccmetrics.formats.image.ImageMemoryError` with the bytes it needs.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._itk_data_files import _check_data_files, _file_kind, _metaimage_data, _nrrd_data
from ._nifti1 import PlainNifti1, read_plain
from ._nifti_readers import _check_nifti, _mm_per_unit, _read_nibabel, _read_plain, _warn_disagreeing
from ._sizes import _check_data_size, _no_memory
from ._sizes import _gunzip_array as _gunzip_array  # the private fast path, tested against nibabel
from .image import _HINT, Image, ImageHeader, ImageReadError, missing_file_message, rounded
from .image import visible_files as visible_files  # the former ccmetrics.io.visible_files

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
