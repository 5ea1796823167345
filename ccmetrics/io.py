"""Reading and writing label images (NIfTI, MetaImage, NRRD) together with their geometry.

:func:`load_image` returns an :class:`Image`: the voxel array in the dtype stored on
disk, the voxel spacing and the voxel-to-world affine.  :func:`save_image` writes one,
:func:`check_same_geometry` says whether a prediction lies on its reference's grid and
:func:`image_id` pairs files by name (``case_001_0000.nii.gz`` -> ``case_001``).

Axis order, the same for every reader: ``array[i, j, k]`` is indexed in the file's voxel
order (i varies fastest on disk, as NIfTI and ITK define it), ``spacing[n]`` is the voxel
size in mm along array axis ``n``, and ``affine`` maps ``(i, j, k, 1)`` to RAS+ world mm,
exactly as nibabel does.  SimpleITK's ``(k, j, i)`` arrays are transposed and its LPS
geometry is turned into RAS, so both readers return the same Image for the same file.

Cost: a load reads (and decompresses) the whole file once and keeps its dtype: no
float64 copy.  nibabel and SimpleITK are imported on first use only.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "IMAGE_EXTENSIONS",
    "Image",
    "ImageReadError",
    "check_same_geometry",
    "image_id",
    "is_image_file",
    "load_image",
    "save_image",
]

#: the image file extensions ccmetrics reads and pairs (case id: the name without them)
IMAGE_EXTENSIONS = (".nii.gz", ".nii", ".mha", ".mhd", ".nrrd", ".nhdr")
_READERS = ("auto", "nibabel", "sitk")
_HINT = "\n(is the file truncated or corrupt? write or copy it again)"


class ImageReadError(ValueError):
    """An image file exists but cannot be read: truncated, corrupt, or with a broken header."""


@dataclass(frozen=True, eq=False)
class Image:
    """A label image and its geometry, as returned by :func:`load_image`.

    Attributes
    ----------
    array : numpy.ndarray
        Voxels, 2D or 3D, indexed ``[i, j, k]`` in file order, in the dtype stored on disk.
    spacing : tuple of float
        Voxel size in mm; ``spacing[n]`` belongs to array axis ``n``.
    affine : numpy.ndarray
        ``(ndim + 1, ndim + 1)`` map from voxel index to RAS+ world mm (nibabel's convention).
    path : str or None
        The file it was read from.
    """

    array: np.ndarray
    spacing: tuple[float, ...]
    affine: np.ndarray
    path: str | None = None

    @property
    def direction(self) -> np.ndarray:
        """``(ndim, ndim)`` direction cosines in RAS, one unit column per array axis."""
        n = self.array.ndim
        return self.affine[:n, :n] / np.asarray(self.spacing)

    @property
    def origin(self) -> np.ndarray:
        """World RAS position (mm) of the centre of voxel ``(0, 0, 0)``."""
        n = self.array.ndim
        return self.affine[:n, n].copy()

    def __repr__(self) -> str:
        return (
            f"Image(shape={self.array.shape}, dtype={self.array.dtype}, spacing={_r(self.spacing)}, path={self.path!r})"
        )


def _r(values) -> tuple:
    """Values rounded to 6 decimals, as (nested) tuples of floats, for messages."""
    a = np.round(np.asarray(values, dtype=float), 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    return tuple(tuple(row) for row in a.tolist()) if a.ndim == 2 else tuple(a.tolist())


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


def load_image(path, reader: str = "auto") -> Image:
    """Read a 2D or 3D label image with its spacing and affine (see the module docstring for axes).

    Parameters
    ----------
    path : str or os.PathLike
        A file ending in one of :data:`IMAGE_EXTENSIONS`.
    reader : {"auto", "nibabel", "sitk"}
        ``"auto"`` uses nibabel for ``.nii``/``.nii.gz`` and SimpleITK for the rest.

    Returns
    -------
    Image
        Trailing singleton axes (a ``(X, Y, Z, 1)`` NIfTI) are dropped.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        For an unknown extension, an image with more than 3 non-singleton axes, or vector pixels.
    ImageReadError
        (a ValueError) for a truncated or corrupt file, or a zero or non-finite voxel size.

    Notes
    -----
    The readers differ on NIfTI headers whose qform and sform disagree: nibabel uses the
    sform, ITK the qform unless sform_code is 1 (scanner); a warning is issued for such files.
    A NIfTI with ``scl_slope`` other than 1 gives floats (float64 in nibabel, float32 in ITK).

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
    path = os.fspath(path)
    if reader not in _READERS:
        raise ValueError(f"reader must be one of {_READERS}, got {reader!r}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"image file not found: {path!r}")
    ext = _extension(path)
    if ext is None:
        raise ValueError(
            f"cannot read {path!r}: unknown image extension; ccmetrics reads "
            f"{', '.join(IMAGE_EXTENSIONS)} (convert the file to one of these)"
        )
    nifti = ext in (".nii", ".nii.gz")
    if reader == "nibabel" and not nifti:
        raise ValueError(f"nibabel reads only .nii and .nii.gz here, not {path!r}: use reader='auto' or 'sitk'")
    if nifti:
        _check_nifti(path, complete=reader == "sitk")
    array, affine = (_read_nibabel if nifti and reader != "sitk" else _read_sitk)(path)
    if array.ndim > 3 and all(s == 1 for s in array.shape[3:]):
        array = array.reshape(array.shape[:3])
    if array.ndim not in (2, 3):
        raise ValueError(
            f"{path!r} is a {array.ndim}D image of shape {array.shape}; ccmetrics "
            "evaluates 2D or 3D label images: split the volumes or take one channel first"
        )
    n = array.ndim
    spacing = tuple(float(s) for s in np.linalg.norm(affine[:-1, :n], axis=0))
    keep = list(range(n)) + [affine.shape[0] - 1]
    affine = affine[np.ix_(keep, keep)]
    if not (np.all(np.isfinite(affine)) and all(s > 0 for s in spacing)):
        raise ImageReadError(
            f"{path!r} has voxel spacing {spacing} mm and affine {_r(affine)}: "
            "each voxel size must be finite and non-zero; fix the file's header"
        )
    return Image(array, spacing, affine, path)


def _read_nibabel(path: str):
    import nibabel as nib

    try:
        img: Any = nib.load(path, mmap=False)  # an array in memory, not a np.memmap on the file
        array = np.asanyarray(img.dataobj)  # reads all the data now: truncation fails here
        return array, np.array(img.affine, dtype=float)
    except Exception as e:  # EOFError, zlib.error, OSError, ImageFileError, ...
        raise ImageReadError(f"cannot read {path!r} with nibabel: {e}{_HINT}") from e


def _read_sitk(path: str):
    import SimpleITK as sitk

    try:
        img = sitk.ReadImage(path)
    except RuntimeError as e:
        raise ImageReadError(f"cannot read {path!r} with SimpleITK: {str(e).strip()}{_HINT}") from e
    if img.GetNumberOfComponentsPerPixel() > 1:
        raise ValueError(
            f"{path!r} has vector pixels ({img.GetNumberOfComponentsPerPixel()} "
            f"components, {img.GetPixelIDTypeAsString()}); ccmetrics evaluates "
            "scalar label images: take one component first"
        )
    d = img.GetDimension()
    array = np.ascontiguousarray(sitk.GetArrayFromImage(img).transpose())  # (k,j,i) -> (i,j,k)
    affine = np.eye(d + 1)
    affine[:d, :d] = np.reshape(img.GetDirection(), (d, d)) * np.asarray(img.GetSpacing())
    affine[:d, d] = img.GetOrigin()
    affine[:2] *= -1  # ITK world is LPS: flip x and y to get RAS
    return array, affine


def _check_nifti(path: str, complete: bool) -> None:
    """Checks on the raw NIfTI header that the readers skip: both silently read a zero
    pixdim as 1 mm (ITK also NaN), and ITK reads a truncated file without any error."""
    import nibabel as nib
    from nibabel.openers import ImageOpener

    try:
        with np.errstate(all="ignore"):  # a non-finite pixdim makes nibabel's affine warn
            header_class = type(nib.load(path).header)
        with ImageOpener(path) as f:
            hdr: Any = header_class.from_fileobj(f, check=False)  # type: ignore[call-arg, arg-type]
        if complete:
            need = int(hdr.get_data_offset()) + hdr.get_data_dtype().itemsize * int(np.prod(hdr.get_data_shape()))
            _check_complete(path, need)
    except Exception as e:
        raise ImageReadError(f"cannot read {path!r}: {e}{_HINT}") from e
    pixdim = hdr["pixdim"][1 : 1 + min(int(hdr["dim"][0]), 3)]
    if not np.all(np.isfinite(pixdim) & (pixdim != 0)):
        raise ImageReadError(
            f"{path!r} has voxel sizes (pixdim) {_r(pixdim)} in its header: each "
            "must be finite and non-zero; fix the header, e.g. nibabel's set_zooms"
        )
    (q, qcode), (s, scode) = hdr.get_qform(coded=True), hdr.get_sform(coded=True)
    if qcode and scode and not np.allclose(q, s, atol=1e-3):
        warnings.warn(
            f"{path!r}: the qform and sform of its header disagree; nibabel (the default "
            "reader) uses the sform, ITK the qform unless sform_code is 1: check which "
            "is right and make both equal",
            UserWarning,
            stacklevel=3,
        )


def _check_complete(path: str, need: int) -> None:
    """Raise EOFError when a NIfTI file holds fewer than ``need`` (header + data) bytes."""
    if not path.lower().endswith(".gz"):
        if os.path.getsize(path) < need:
            raise EOFError(f"file has {os.path.getsize(path)} bytes, its header needs {need}")
        return
    with open(path, "rb") as f:  # gzip's last 4 bytes: uncompressed size mod 2**32
        f.seek(-4, os.SEEK_END)
        if int.from_bytes(f.read(4), "little") == need % 2**32:
            return
    import gzip  # size differs: multi-member gzip, extra bytes or truncation; decompress to know

    total = 0
    with gzip.open(path) as g:
        for chunk in iter(lambda: g.read(1 << 24), b""):
            total += len(chunk)
    if total < need:
        raise EOFError(f"file decompresses to {total} bytes, its header needs {need}")


def save_image(path, array, like: Image | None = None, *, spacing: Sequence[float] | None = None) -> None:
    """Write a 2D or 3D array with ``like``'s geometry, or with ``spacing`` and no rotation.

    Parameters
    ----------
    path : str or os.PathLike
        Ends in one of :data:`IMAGE_EXTENSIONS`: ``.nii``/``.nii.gz`` are written by nibabel
        (qform and sform both set, code 1), the others by SimpleITK (compressed).
    array : array_like
        Indexed ``[i, j, k]`` as in :class:`Image`; the dtype is kept, bool is written as uint8.
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
        if n == 2:  # NIfTI affines are 4x4: k gets 1 mm along the normal
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
        message naming each difference with both values.

    Examples
    --------
    >>> gt = Image(np.zeros((4, 4, 2)), (0.5, 0.5, 3.0), np.diag([0.5, 0.5, 3.0, 1.0]))
    >>> pred = Image(np.zeros((4, 4, 2)), (0.5, 0.5, 2.0), np.diag([0.5, 0.5, 2.0, 1.0]))
    >>> check_same_geometry(gt, gt) is None
    True
    >>> check_same_geometry(gt, pred)
    'spacing differs: gt (0.5, 0.5, 3.0) mm, pred (0.5, 0.5, 2.0) mm'
    """
    na, nb = names
    if a.array.shape != b.array.shape:
        return f"shape differs: {na} {a.array.shape}, {nb} {b.array.shape}"
    problems = []
    if not np.allclose(a.spacing, b.spacing, rtol=rtol, atol=0):
        problems.append(f"spacing differs: {na} {_r(a.spacing)} mm, {nb} {_r(b.spacing)} mm")
    if not np.allclose(a.origin, b.origin, rtol=0, atol=atol_mm):
        problems.append(f"origin differs: {na} {_r(a.origin)} mm, {nb} {_r(b.origin)} mm")
    if not np.allclose(a.direction, b.direction, rtol=0, atol=rtol):
        problems.append(f"direction differs: {na} {_r(a.direction)}, {nb} {_r(b.direction)}")
    return "; ".join(problems) or None
