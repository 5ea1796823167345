"""Putting two label images on one voxel grid without resampling: reorientation and placement.

Two images lie on *one lattice* when each axis of one runs along an axis of the other (forwards or
backwards) with the same spacing, and the voxel centres of one fall on voxel centres of the other.
:func:`on_grid` then carries an image onto the other's grid exactly, by transposing, flipping and (for
an image that covers only part of the grid, such as a DICOM SEG without its empty frames) padding with
zeros; no voxel is interpolated. Anything else (another spacing, a rotation, a half-voxel shift, or an
image reaching beyond the grid) is refused with a message that names the difference.

:func:`align_pair` applies the rule of :func:`ccmetrics.dataset.evaluate_dataset` to a GT and a
prediction:

* two images of full extent (NIfTI, MHA, NRRD, a complete SEG): the same grid
  (:func:`ccmetrics.io.check_same_geometry`); a DICOM SEG beside any image may also be the same grid in
  another axis order, and is then reoriented onto the other;
* a SEG that left out frames (``SegImage.complete`` False) is placed on the grid of
  the other file when that one has its full extent, else on the source series (``reference``:
  :func:`ccmetrics.dicom.series_grid`), else on the smallest grid holding both SEGs, and the case is
  flagged ``extent_inferred``: the image's true extent, and with it the default worst
  distance (the image diagonal), is then unknown. A GT SEG without frames and without prediction is
  flagged the same way unless the source series is given.

Cost: one transposed copy of the moving image (plus zeros for the padding); the arithmetic is on the
``(n + 1) x (n + 1)`` affines.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .io import Image, check_same_geometry, rounded
from .schema import EXTENT_INFERRED

__all__ = ["align_pair", "on_grid", "union_grid"]


def _lattice_map(moving: Image, reference: Image, atol_mm: float, rtol: float) -> tuple[np.ndarray, np.ndarray, str]:
    """For one lattice: each moving axis' reference axis, its sign, the moving origin's reference index;
    else a message (third item) that says why not."""
    n = reference.array.ndim
    if moving.array.ndim != n:
        return np.empty(0, int), np.empty(0), f"{moving.array.ndim}D against {n}D"
    t = np.linalg.solve(reference.affine, moving.affine)  # moving index -> reference index
    rot = t[:n, :n]
    axes = np.argmax(np.abs(rot), axis=0)
    signs = np.sign(rot[axes, np.arange(n)])
    perm = np.zeros((n, n))
    perm[axes, np.arange(n)] = signs
    if len(set(axes.tolist())) != n or not np.allclose(rot, perm, atol=rtol):
        spacing_ok = np.allclose(sorted(moving.spacing), sorted(reference.spacing), rtol=rtol)
        what = "direction" if spacing_ok else "spacing"
        return (
            axes,
            signs,
            (
                f"{what} differs beyond an axis order: {rounded(moving.spacing)} mm along {rounded(moving.direction)} "
                f"against {rounded(reference.spacing)} mm along {rounded(reference.direction)}"
            ),
        )
    offset = t[:n, n]
    snapped = np.round(offset)
    off_mm = np.abs(offset - snapped) * np.asarray(reference.spacing)
    if np.any(off_mm > atol_mm):
        return (
            axes,
            signs,
            (
                f"origin differs by {rounded(off_mm)} mm from the nearest voxel centre of the other grid "
                f"(origins {rounded(moving.origin)} and {rounded(reference.origin)} mm)"
            ),
        )
    return axes, signs, ""


def on_grid(
    moving: Image,
    reference: Image,
    *,
    pad: bool = False,
    atol_mm: float = 1e-3,
    rtol: float = 1e-4,
    names: tuple[str, str] = ("moving", "reference"),
) -> Image:
    """``moving``'s voxels on ``reference``'s grid: transposed and flipped, and zero-padded if ``pad``.

    Parameters
    ----------
    moving : Image
        The image to carry over (its array's dtype is kept).
    reference : Image
        Only its shape and affine are used (``ccmetrics.dicom.series_grid`` gives one without voxels).
    pad : bool
        Accept a ``moving`` that covers part of the grid (zeros elsewhere); otherwise it must cover the
        whole grid.
    atol_mm, rtol : float
        Tolerances as in :func:`ccmetrics.io.check_same_geometry`: on the voxel centres (mm), and on the
        direction cosines and spacing.
    names : (str, str)
        What to call the two in messages.

    Returns
    -------
    Image
        With ``reference``'s spacing and affine and ``moving``'s path; ``moving`` itself when nothing
        moves.

    Raises
    ------
    ValueError
        Not one lattice (spacing, direction or a sub-voxel shift differs), or ``moving`` reaches beyond
        the grid, or (without ``pad``) covers only part of it.

    Examples
    --------
    >>> import numpy as np
    >>> from ccmetrics.io import Image
    >>> ref = Image(np.zeros((4, 3)), (1.0, 2.0), np.diag([1.0, 2.0, 1.0]))
    >>> flipped = Image(np.arange(12).reshape(3, 4), (2.0, 1.0), np.array([[0, -1, 3], [2, 0, 0], [0, 0, 1.0]]))
    >>> on_grid(flipped, ref).array
    array([[ 3,  7, 11],
           [ 2,  6, 10],
           [ 1,  5,  9],
           [ 0,  4,  8]])
    """
    m, r = names
    axes, signs, problem = _lattice_map(moving, reference, atol_mm, rtol)
    if problem:
        raise ValueError(f"{m} and {r} are not on one voxel grid: {problem}")
    n = reference.array.ndim
    offset = np.round(np.linalg.solve(reference.affine, moving.affine)[:n, n]).astype(int)
    lengths = np.array(moving.array.shape)
    lo = np.empty(n, int)
    for a in range(n):
        p = axes[a]
        lo[p] = offset[p] if signs[a] > 0 else offset[p] - (lengths[a] - 1)
    order = np.argsort(axes)  # reference axis p takes moving axis order[p]
    size = lengths[order]
    hi = lo + size
    shape = np.array(reference.array.shape)
    if np.any(lo < 0) or np.any(hi > shape):
        raise ValueError(
            f"{m} reaches beyond the grid of {r}: it spans voxels {_span(lo, hi)} of {r}'s {tuple(shape.tolist())}; "
            "they are different grids"
        )
    whole = bool(np.all(lo == 0) and np.all(hi == shape))
    if not whole and not pad:
        raise ValueError(
            f"{m} covers only voxels {_span(lo, hi)} of {r}'s grid {tuple(shape.tolist())}: they are different grids"
        )
    array = moving.array.transpose(order)
    flips = tuple(p for p in range(n) if signs[order[p]] < 0)
    if flips:
        array = np.flip(array, axis=flips)
    if whole:
        if not flips and list(order) == list(range(n)):
            return (
                moving
                if np.allclose(moving.affine, reference.affine, atol=atol_mm)
                else _image(moving.array, reference, moving)
            )
        array = np.ascontiguousarray(array)
    else:
        placed = np.zeros(tuple(shape.tolist()), moving.array.dtype)
        placed[tuple(slice(a, b) for a, b in zip(lo, hi))] = array
        array = placed
    return _image(array, reference, moving)


def _span(lo: np.ndarray, hi: np.ndarray) -> str:
    return " x ".join(f"{a}..{b - 1}" for a, b in zip(lo.tolist(), hi.tolist()))


def _image(array: np.ndarray, reference: Image, moving: Image) -> Image:
    return Image(array, tuple(reference.spacing), np.array(reference.affine, float), moving.path)


def union_grid(a: Image, b: Image, *, atol_mm: float = 1e-3, rtol: float = 1e-4) -> Image:
    """The smallest grid on ``a``'s lattice (its axis order) that holds both images (no voxels: shape only).

    Raises ValueError when ``b`` is not on ``a``'s lattice.

    >>> import numpy as np
    >>> from ccmetrics.io import Image
    >>> a = Image(np.zeros((2, 2)), (1.0, 1.0), np.eye(3))
    >>> b = Image(np.zeros((2, 3)), (1.0, 1.0), np.array([[1, 0, 5], [0, 1, -1], [0, 0, 1.0]]))
    >>> grid = union_grid(a, b)
    >>> grid.array.shape, grid.origin.tolist()
    ((7, 3), [0.0, -1.0])
    """
    axes, signs, problem = _lattice_map(b, a, atol_mm, rtol)
    if problem:
        raise ValueError(f"the two segmentations are not on one voxel grid: {problem}")
    n = a.array.ndim
    offset = np.round(np.linalg.solve(a.affine, b.affine)[:n, n]).astype(int)
    corners_lo, corners_hi = np.zeros(n, int), np.array(a.array.shape) - 1
    for q in range(n):
        p, end = axes[q], offset[axes[q]] + signs[q] * (b.array.shape[q] - 1)
        corners_lo[p] = min(corners_lo[p], offset[p], end)
        corners_hi[p] = max(corners_hi[p], offset[p], end)
    affine = np.array(a.affine, float)
    affine[:n, n] = (a.affine @ np.append(corners_lo, 1.0))[:n]
    shape = tuple((corners_hi - corners_lo + 1).tolist())
    return Image(np.broadcast_to(np.zeros((), np.uint8), shape), tuple(a.spacing), affine, None)


def align_pair(
    gt: Image, pred: Image | None, *, reference: Any = None, atol_mm: float = 1e-3, rtol: float = 1e-4
) -> tuple[Image, Image | None, list[str]]:
    """A GT and a prediction on one grid, by the rule of the module docstring, and the case's flags.

    Parameters
    ----------
    gt, pred : Image
        As read by :func:`ccmetrics.io.load_image` (a DICOM SEG is a :class:`ccmetrics.dicom.SegImage`);
        ``pred`` None: a missing prediction (the GT alone is put on its full grid).
    reference : str or os.PathLike, optional
        A folder of DICOM image series: the grid of two incomplete SEGs is their source series'.
    atol_mm, rtol : float
        As in :func:`ccmetrics.io.check_same_geometry`.

    Returns
    -------
    gt, pred : Image
        On one grid (the same objects when nothing moves).
    flags : list of str
        ``[EXTENT_INFERRED]`` when the grid is the span of two SEGs, else empty.

    Raises
    ------
    ValueError
        The two are not on one grid (the message names the difference).
    """
    from .dicom import SegImage, series_grid

    if pred is None:
        if not isinstance(gt, SegImage) or gt.complete:
            return gt, None, []
        if reference is None:
            return gt, None, [EXTENT_INFERRED]
        grid = series_grid(reference, gt.series_uid)
        return on_grid(gt, grid, pad=True, atol_mm=atol_mm, rtol=rtol, names=("the GT", "the source images")), None, []
    segs = [isinstance(x, SegImage) for x in (gt, pred)]
    if not any(segs):
        problem = check_same_geometry(gt, pred, atol_mm=atol_mm, rtol=rtol)
        if problem:
            raise ValueError(problem)
        return gt, pred, []
    _check_frames(gt, pred)
    names = ("the GT", "the prediction")
    full = [x for x, s in zip((gt, pred), segs) if not s or x.complete]  # type: ignore[attr-defined]
    flags: list[str] = []
    if full:
        grid, target = full[0], names[0] if full[0] is gt else names[1]
    elif reference is not None:
        grid, target = series_grid(reference, gt.series_uid), "the source images"  # type: ignore[attr-defined]
    else:
        grid, target = union_grid(gt, pred, atol_mm=atol_mm, rtol=rtol), "the span of both SEGs"
        flags.append(EXTENT_INFERRED)
    out = []
    for x, s, name in zip((gt, pred), segs, names):
        partial = s and not x.complete  # type: ignore[attr-defined]
        out.append(x if x is grid else on_grid(x, grid, pad=partial, atol_mm=atol_mm, rtol=rtol, names=(name, target)))
    return out[0], out[1], flags


def _check_frames(gt: Image, pred: Image) -> None:
    """Two SEGs of different frames of reference are not in one patient space."""
    from .dicom import SegImage

    uids = {x.frame_of_reference for x in (gt, pred) if isinstance(x, SegImage) and x.frame_of_reference}
    if len(uids) > 1:
        raise ValueError(
            f"the GT and the prediction SEGs lie in different frames of reference ({', '.join(sorted(uids))}): "
            "their patient coordinates cannot be compared"
        )
