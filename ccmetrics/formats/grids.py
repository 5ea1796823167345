"""Putting two label images on one voxel grid without resampling: reorientation and placement.

Two images lie on *one lattice* when each axis of one runs along an axis of the other (forwards or
backwards) with the same spacing, and the voxel centres of one fall on voxel centres of the other.
:func:`on_grid` then carries an image onto the other's grid exactly, by transposing, flipping and (for
an image that covers only part of the grid, such as a DICOM SEG without its empty frames) padding with
zeros; no voxel is interpolated. Anything else (another spacing, a rotation, a half-voxel shift, or an
image reaching beyond the grid) is refused with a message that names the difference.

:func:`align_pair` applies the rule of :func:`ccmetrics.campaign.dataset.evaluate_dataset` to a GT and a
prediction:

* two images that are no DICOM SEG (NIfTI, MHA, NRRD): the same grid (:func:`ccmetrics.formats.io.check_same_geometry`);
* with a SEG, the common grid is, in this order: the other file's when it is no SEG (the SEG reoriented
  onto it when its axes run in another order, and placed frame by frame: a SEG holds nothing outside
  its frames); else the source series' (``reference``: :func:`ccmetrics.formats.dicom.series_grid`); else a
  complete SEG's (``SegImage.complete``: it lists as many source images as it has planes); else the
  smallest grid holding both SEGs, and the case is flagged ``extent_inferred``: the image's true
  extent, and with it the default worst distance (the image diagonal), is then unknown. A GT SEG
  without its empty frames and without prediction is flagged the same way unless the source series is
  given. A SEG whose frames skip slices and that states no slice step is placed by its frames'
  positions, and refused where no full grid says where the slices between them lie.

Cost: one transposed copy of the moving image (plus zeros for the padding); the arithmetic is on the
``(n + 1) x (n + 1)`` affines.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import EXTENT_INFERRED
from .io import Image, check_same_geometry, rounded

__all__ = ["align_pair", "on_grid", "union_grid"]


def _plane_problem(a: Image, b: Image, atol_mm: float, rtol: float) -> str:
    """Why two 2D images that their files place in 3D (``Image.affine_3d``) lie in different planes, or ``""``:
    their planes' normals differ, or the planes are parallel and apart (the 2D affines leave the third axis out).

    >>> import numpy as np
    >>> from ccmetrics.formats.io import Image
    >>> above = np.eye(4)
    >>> above[2, 3] = 50.0
    >>> flat = Image(np.zeros((2, 2)), (1.0, 1.0), np.eye(3), affine_3d=np.eye(4))
    >>> _plane_problem(flat, Image(np.zeros((2, 2)), (1.0, 1.0), np.eye(3), affine_3d=above), 1e-3, 1e-4)
    'the 2D images lie in parallel planes 50 mm apart'
    """
    if a.array.ndim != 2 or a.affine_3d is None or b.affine_3d is None:
        return ""
    fa, fb = np.asarray(a.affine_3d, float), np.asarray(b.affine_3d, float)
    na, nb = (np.cross(f[:3, 0], f[:3, 1]) for f in (fa, fb))
    na, nb = na / np.linalg.norm(na), nb / np.linalg.norm(nb)
    if abs(float(na @ nb)) < 1 - rtol:
        return "the 2D images lie in different planes"
    apart = abs(float(na @ (fb[:3, 3] - fa[:3, 3])))
    return f"the 2D images lie in parallel planes {apart:.6g} mm apart" if apart > atol_mm else ""


def _lattice_map(
    moving: Image, reference: Image, atol_mm: float, rtol: float, strides: bool = False
) -> tuple[np.ndarray, np.ndarray, str]:
    """For one lattice: each moving axis' reference axis and its step there (signed: ±1, or with
    ``strides`` any whole number of reference voxels); else a message (third item) that says why not.
    An axis of one plane has no step: only its direction counts."""
    n = reference.array.ndim
    if moving.array.ndim != n:
        return np.empty(0, int), np.empty(0), f"{moving.array.ndim}D against {n}D"
    plane = _plane_problem(moving, reference, atol_mm, rtol)
    if plane:  # 2D images placed in 3D (Image.affine_3d): one lattice only within one plane
        return np.empty(0, int), np.empty(0), plane
    t = np.linalg.solve(reference.affine, moving.affine)  # moving index -> reference index
    rot = t[:n, :n].copy()
    single = np.array(moving.array.shape) == 1
    rot[:, single] /= np.linalg.norm(rot[:, single], axis=0)
    axes = np.argmax(np.abs(rot), axis=0)
    steps = np.round(rot[axes, np.arange(n)])
    lattice = np.zeros((n, n))
    lattice[axes, np.arange(n)] = steps
    whole_steps = np.all(np.abs(steps) >= 1) and (strides or np.all(np.abs(steps) == 1))
    if (
        len(set(axes.tolist())) != n
        or not whole_steps
        or not np.allclose(rot, lattice, atol=rtol * np.abs(steps).max())
    ):
        spacing_ok = np.allclose(sorted(moving.spacing), sorted(reference.spacing), rtol=rtol)
        what = "direction" if spacing_ok else "spacing"
        problem = (
            f"{what} differs beyond an axis order: {rounded(moving.spacing)} mm along {rounded(moving.direction)} "
            f"against {rounded(reference.spacing)} mm along {rounded(reference.direction)}"
        )
        return axes, steps, problem
    offset = t[:n, n]
    off_mm = np.abs(offset - np.round(offset)) * np.asarray(reference.spacing)
    if np.any(off_mm > atol_mm):
        problem = (
            f"origin differs by {rounded(off_mm)} mm from the nearest voxel centre of the other grid "
            f"(origins {rounded(moving.origin)} and {rounded(reference.origin)} mm)"
        )
        return axes, steps, problem
    return axes, steps, ""


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
        Only its shape and affine are used (``ccmetrics.formats.dicom.series_grid`` gives one without voxels).
    pad : bool
        Accept a ``moving`` that covers part of the grid (zeros elsewhere), also one whose planes lie a
        whole number of voxels apart (a DICOM SEG whose frames skip slices: each frame goes where its
        position says); otherwise it must cover the whole grid, voxel for voxel.
    atol_mm, rtol : float
        Tolerances as in :func:`ccmetrics.formats.io.check_same_geometry`: on the voxel centres (mm), and on the
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
    >>> from ccmetrics.formats.io import Image
    >>> ref = Image(np.zeros((4, 3)), (1.0, 2.0), np.diag([1.0, 2.0, 1.0]))
    >>> flipped = Image(np.arange(12).reshape(3, 4), (2.0, 1.0), np.array([[0, -1, 3], [2, 0, 0], [0, 0, 1.0]]))
    >>> on_grid(flipped, ref).array
    array([[ 3,  7, 11],
           [ 2,  6, 10],
           [ 1,  5,  9],
           [ 0,  4,  8]])
    """
    m, r = names
    axes, steps, problem = _lattice_map(moving, reference, atol_mm, rtol, strides=pad)
    if problem:
        raise ValueError(f"{m} and {r} are not on one voxel grid: {problem}")
    n = reference.array.ndim
    offset = np.round(np.linalg.solve(reference.affine, moving.affine)[:n, n]).astype(int)
    lengths = np.array(moving.array.shape)
    order = np.argsort(axes)  # reference axis p takes moving axis order[p]
    stride = np.abs(steps[order]).astype(int)
    lo = np.array([offset[p] + min(0, int(steps[order[p]]) * (lengths[order[p]] - 1)) for p in range(n)])
    hi = lo + stride * (lengths[order] - 1) + 1
    shape = np.array(reference.array.shape)
    if np.any(lo < 0) or np.any(hi > shape):
        raise ValueError(
            f"{m} reaches beyond the grid of {r}: it spans voxels {_span(lo, hi)} of {r}'s {tuple(shape.tolist())}; "
            "they are different grids"
        )
    whole = bool(np.all(lo == 0) and np.all(hi == shape) and np.all(stride == 1))
    if not whole and not pad:
        raise ValueError(
            f"{m} covers only voxels {_span(lo, hi)} of {r}'s grid {tuple(shape.tolist())}: they are different grids"
        )
    array = moving.array.transpose(order)
    flips = tuple(p for p in range(n) if steps[order[p]] < 0)
    if flips:
        array = np.flip(array, axis=flips)
    if whole:
        if not flips and list(order) == list(range(n)) and np.allclose(moving.affine, reference.affine, atol=atol_mm):
            return moving
        return _image(np.ascontiguousarray(array), reference, moving)
    placed = np.zeros(tuple(shape.tolist()), moving.array.dtype)
    placed[tuple(slice(a, b, k) for a, b, k in zip(lo, hi, stride))] = array
    return _image(placed, reference, moving)


def _span(lo: np.ndarray, hi: np.ndarray) -> str:
    return " x ".join(f"{a}..{b - 1}" for a, b in zip(lo.tolist(), hi.tolist()))


def _image(array: np.ndarray, reference: Image, moving: Image) -> Image:
    return Image(array, tuple(reference.spacing), np.array(reference.affine, float), moving.path, reference.affine_3d)


def union_grid(a: Image, b: Image, *, atol_mm: float = 1e-3, rtol: float = 1e-4) -> Image:
    """The smallest grid on ``a``'s lattice (its axis order) that holds both images (no voxels: shape only).

    Raises ValueError when ``b`` is not on ``a``'s lattice.

    >>> import numpy as np
    >>> from ccmetrics.formats.io import Image
    >>> a = Image(np.zeros((2, 2)), (1.0, 1.0), np.eye(3))
    >>> b = Image(np.zeros((2, 3)), (1.0, 1.0), np.array([[1, 0, 5], [0, 1, -1], [0, 0, 1.0]]))
    >>> grid = union_grid(a, b)
    >>> grid.array.shape, grid.origin.tolist()
    ((7, 3), [0.0, -1.0])
    """
    axes, signs, problem = _lattice_map(b, a, atol_mm, rtol)  # signs: steps of ±1 (no strides)
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
        As read by :func:`ccmetrics.formats.io.load_image` (a DICOM SEG is a :class:`ccmetrics.formats.dicom.SegImage`);
        ``pred`` None: a missing prediction (the GT alone is put on its full grid).
    reference : str or os.PathLike, optional
        A folder of DICOM image series: the grid of SEGs without an image of full extent beside them is
        their source series' (found by the SeriesInstanceUID they refer to).
    atol_mm, rtol : float
        As in :func:`ccmetrics.formats.io.check_same_geometry`.

    Returns
    -------
    gt, pred : Image
        On one grid (the same objects when nothing moves).
    flags : list of str
        ``["extent_inferred"]`` when the grid is the span of the SEGs' frames, else empty.

    Raises
    ------
    ValueError
        The two are not on one grid (the message names the difference), or SEGs without their empty frames
        that do not state their slice step and have no full grid beside them.
    """
    from .dicom import SegImage, series_grid

    names = ("the GT", "the prediction")
    pair = [x for x in (gt, pred) if x is not None]
    segs = [isinstance(x, SegImage) for x in pair]
    if not any(segs):
        problem = None if pred is None else check_same_geometry(gt, pred, atol_mm=atol_mm, rtol=rtol)
        if problem:
            raise ValueError(problem)
        return gt, pred, []
    _check_frames(*pair)
    plain = [x for x, s in zip(pair, segs) if not s]
    complete = [x for x in pair if isinstance(x, SegImage) and x.complete]
    flags: list[str] = []
    if plain:  # an image of full extent: NIfTI, MHA, NRRD
        grid, target = plain[0], names[0] if plain[0] is gt else names[1]
    elif reference is not None:
        uid = next((x.series_uid for x in pair if isinstance(x, SegImage) and x.series_uid), None)
        grid, target = series_grid(reference, uid), "the source images"
    elif complete:
        grid, target = complete[0], names[0] if complete[0] is gt else names[1]
    else:
        unknown = [name for x, name in zip(pair, names) if isinstance(x, SegImage) and not x.step_known]
        if unknown:
            raise ValueError(
                f"the SEG of {' and of '.join(unknown)} states no distance between its planes (SpacingBetweenSlices) "
                "and holds only some frames, so its grid is unknown: give the source images (--reference-images)"
            )
        grid = union_grid(pair[0], pair[1]) if len(pair) == 2 else pair[0]
        target = "the span of both SEGs"
        flags.append(EXTENT_INFERRED)
    out = [
        x if x is grid else on_grid(x, grid, pad=s, atol_mm=atol_mm, rtol=rtol, names=(name, target))
        for x, s, name in zip(pair, segs, names)
    ]
    return out[0], (out[1] if pred is not None else None), flags


def _check_frames(*images: Image) -> None:
    """Two SEGs of different frames of reference are not in one patient space."""
    from .dicom import SegImage

    uids = {x.frame_of_reference for x in images if isinstance(x, SegImage) and x.frame_of_reference}
    if len(uids) > 1:
        raise ValueError(
            f"the GT and the prediction SEGs lie in different frames of reference ({', '.join(sorted(uids))}): "
            "their patient coordinates cannot be compared"
        )
