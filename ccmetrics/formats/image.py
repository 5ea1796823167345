"""What every image reader returns, and the errors and names the readers share:
:class:`~ccmetrics.formats.image.Image` (the array with its geometry), :class:`~ccmetrics.formats.image.ImageHeader`
(what a header says, before any voxel is read), :class:`~ccmetrics.formats.image.ImageReadError`, and the helpers
that the NIfTI/MHA/NRRD readers (:mod:`ccmetrics.formats.io`) and the DICOM SEG reader
(:mod:`ccmetrics.formats.dicom`) both use. Nothing here reads a file's voxels.
"""

from __future__ import annotations

import errno
import math
import os
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Image",
    "ImageHeader",
    "ImageMemoryError",
    "ImageReadError",
    "missing_file_message",
    "rounded",
    "visible_files",
]


_HINT = "\n(is the file truncated or corrupt? write or copy it again)"


class ImageReadError(ValueError):
    """An image file exists but cannot be read: truncated, corrupt, or with a broken header."""


class ImageMemoryError(MemoryError):
    """A valid image file whose voxels do not fit in the memory left: the message says how much they need."""


@dataclass(frozen=True, eq=False)
class Image:
    """A label image and its geometry, as returned by :func:`~ccmetrics.formats.io.load_image`.

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
    affine_3d : numpy.ndarray or None
        Of a 2D image whose file places it in 3D space (a 2D NIfTI): the file's complete ``4 x 4`` affine (mm),
        which says in which plane the image lies (``affine`` drops its out-of-plane row and column:
        ``affine == affine_3d[np.ix_([0, 1, 3], [0, 1, 3])]``); grids are compared with it
        (:func:`~ccmetrics.formats.io.check_same_geometry`). None for 3D images and formats without it.
    """

    array: np.ndarray
    spacing: tuple[float, ...]
    affine: np.ndarray
    path: str | None = None
    affine_3d: np.ndarray | None = None

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
        spacing = rounded(self.spacing)
        return f"Image(shape={self.array.shape}, dtype={self.array.dtype}, spacing={spacing}, path={self.path!r})"


def rounded(values) -> tuple:
    """Values rounded to 6 decimals, as (nested) tuples of floats: how geometry is written in messages.

    >>> rounded([0.30000000000000004, -0.0]), rounded([[1, 0], [0, 1]])
    ((0.3, 0.0), ((1.0, 0.0), (0.0, 1.0)))
    """
    a = np.round(np.asarray(values, dtype=float), 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    return tuple(tuple(row) for row in a.tolist()) if a.ndim == 2 else tuple(a.tolist())


@dataclass(frozen=True)
class ImageHeader:
    """What a label image's header says, read without its voxels (:func:`~ccmetrics.formats.io.read_header`).

    Attributes
    ----------
    path : str or None
        The file (None for an array in memory described the same way).
    shape : tuple of int
        The shape :func:`~ccmetrics.formats.io.load_image` returns: trailing singleton axes dropped, 2 or 3 axes.
    dtype : numpy.dtype
        The dtype of :func:`~ccmetrics.formats.io.load_image`'s array with the same reader (a NIfTI with ``scl_slope``:
        float64 with nibabel, float32 with SimpleITK).
    spacing : tuple of float
        Voxel size in mm per array axis, as :func:`~ccmetrics.formats.io.load_image` computes it.
    """

    path: str | None
    shape: tuple[int, ...]
    dtype: np.dtype
    spacing: tuple[float, ...]

    @property
    def voxels(self) -> int:
        """Number of voxels, the product of ``shape`` (in Python ints: it cannot wrap)."""
        return math.prod(int(s) for s in self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the array :func:`~ccmetrics.formats.io.load_image` returns: voxels times ``dtype``'s itemsize."""
        return self.voxels * self.dtype.itemsize


def missing_file_message(path: str | os.PathLike, what: str = "image file") -> str:
    """Why ``path``, which is not a file, cannot be read: a symbolic link in a loop or to a missing target is
    named as such (``os.path.isfile`` is False for both, as for a path that does not exist).

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> os.symlink("gone.nii.gz", os.path.join(folder, "case.nii.gz"))
    >>> missing_file_message(os.path.join(folder, "case.nii.gz")).split(": ", 1)[1][:33]
    'it is a dangling symbolic link to'
    >>> missing_file_message("nowhere.nii.gz")
    "image file not found: 'nowhere.nii.gz'"
    """
    path = os.fspath(path)
    if not os.path.islink(path):
        return f"{what} not found: {path!r}"
    chain = [path]  # the links followed, each target joined to its link's folder
    while os.path.islink(chain[-1]) and len(chain) <= 40:  # 40: the kernel's limit (ELOOP)
        target = os.path.normpath(os.path.join(os.path.dirname(chain[-1]), os.readlink(chain[-1])))
        looped = target in chain
        chain.append(target)
        if looped:
            break
    try:
        os.stat(path)
        error = 0
    except OSError as e:
        error = e.errno or 0
    if error == errno.ELOOP or chain[-1] in chain[:-1]:
        if len(chain) == 2 and chain[1] == path:
            what = "a symbolic link that points to itself (a loop)"
        else:
            what = "a symbolic link in a loop: " + " -> ".join(map(repr, chain))
        return f"cannot read {path!r}: it is {what}; replace it with the image file or a link to it"
    if error == errno.ENOENT:
        via = f" (via {' -> '.join(map(repr, chain[1:-1]))})" if len(chain) > 2 else ""
        return (
            f"cannot read {path!r}: it is a dangling symbolic link to {chain[-1]!r}{via} (the target does not exist); "
            "restore the target, point the link at the image file, or remove the link"
        )
    return f"{what} not found: {path!r} (a symbolic link to {os.path.realpath(path)!r}, which is not a file)"


def visible_files(folder) -> list:
    """The files under ``folder`` (recursively, sorted), hidden files and folders (``.DS_Store``, ``.cache/``)
    left out: what a case given as a folder holds.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("seg.dcm", ".DS_Store", ".cache/seg.dcm"):
    ...     (root / name).parent.mkdir(exist_ok=True); _ = (root / name).write_bytes(b"")
    >>> [p.name for p in visible_files(root)]
    ['seg.dcm']
    """
    from pathlib import Path

    root = Path(folder)
    return [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
