"""Where a thumbnail looks: crop boxes around a component and the lines drawn on its slices.

Pure numpy, no drawing: :mod:`ccmetrics.report.thumbnails` draws what this module computes, so
the geometry is tested without looking at pixels.

Conventions (the array axes of :mod:`ccmetrics.formats.io`: ``array[i, j, k]``, ``spacing[n]`` along axis
``n``):

* a 3D component is shown in three planes through its centroid (rounded to the nearest voxel):
  **axial** = the plane ``k = const`` (horizontal axis i, vertical axis j), **coronal** = ``j = const``
  (i, k), **sagittal** = ``i = const`` (j, k); a 2D image has one plane (i, j). The vertical axis
  grows upwards (``origin="lower"``); the image is not reoriented to the patient's anatomy.
* the crop is a box of ``2 h + 1`` voxels along each axis centred on the centroid voxel, ``h`` chosen
  so that the field of view is about the same in mm along every axis (square on screen). Parts of the
  box outside the image are padded (and drawn as "outside the image"), never shifted, so the
  component's centroid is always at the centre of its crop.
* a 2D slice is indexed ``[h, v]`` (horizontal, vertical); lines are drawn on pixel borders, in the
  coordinates of ``imshow(slice.T, origin="lower")`` where pixel ``(h, v)`` covers
  ``[h - 0.5, h + 0.5] × [v - 0.5, v + 0.5]``.
* a scan drawn under the masks (``ccmetrics report --images``) is cut the same way, one channel at a
  time (:func:`with_image`): its plane is the scan's voxels on the slice, as floats, NaN outside the
  image; only these slices are kept, never the scan.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "AXIS_NAMES",
    "PlaneView",
    "ThumbnailGeometry",
    "boundary_segments",
    "crop",
    "crop_box",
    "half_widths",
    "plane_coords",
    "plane_intensity",
    "plane_regions",
    "thumbnail_geometry",
    "with_image",
]

#: (plane name, the array axis held fixed) of a 3D image, in the order shown
PLANES_3D = (("axial", 2), ("coronal", 1), ("sagittal", 0))
#: the one plane of a 2D image
PLANES_2D = (("image", None),)
#: array axis names
AXIS_NAMES = "ijk"

Box = tuple[tuple[int, int], ...]  # per axis (start, stop), stop exclusive; may reach outside the image


def half_widths(
    extent_mm: float,
    spacing: Sequence[float],
    *,
    min_half_mm: float = 12.0,
    scale: float = 0.75,
    margin_mm: float = 4.0,
) -> tuple[int, ...]:
    """Half widths ``h`` (voxels, per axis) of a crop showing a component of largest extent ``extent_mm``.

    The field of view is ``2 * half_mm`` with ``half_mm = max(min_half_mm, scale * extent_mm + margin_mm)``:
    the component fills about two thirds of it, and a tiny lesion keeps some surroundings.

    Examples
    --------
    >>> half_widths(20.0, (2.0, 2.0, 3.0))   # 19 mm each side: 10, 10 and 7 voxels
    (10, 10, 7)
    >>> half_widths(2.0, (1.0, 1.0))          # small: at least 12 mm
    (12, 12)
    """
    half_mm = max(min_half_mm, scale * extent_mm + margin_mm)
    return tuple(max(1, int(math.ceil(half_mm / s - 1e-9))) for s in spacing)


def crop_box(center: Sequence[int], half: Sequence[int]) -> Box:
    """The box of ``2 h + 1`` voxels per axis centred on voxel ``center`` (may reach outside the image).

    >>> crop_box((5, 0), (2, 3))
    ((3, 8), (-3, 4))
    """
    return tuple((int(c) - int(h), int(c) + int(h) + 1) for c, h in zip(center, half))


def crop(array: np.ndarray, box: Box, fill=0) -> np.ndarray:
    """``array`` cut to ``box``; voxels of the box outside the array are set to ``fill``.

    >>> crop(np.arange(4), ((-1, 2),), fill=-9)
    array([-9,  0,  1])
    """
    dtype = np.result_type(array.dtype, np.min_scalar_type(fill))
    out = np.full([stop - start for start, stop in box], fill, dtype=dtype)
    src = tuple(slice(max(start, 0), min(stop, n)) for (start, stop), n in zip(box, array.shape))
    if all(s.stop > s.start for s in src):
        dst = tuple(slice(s.start - start, s.stop - start) for s, (start, _) in zip(src, box))
        out[dst] = array[src]
    return out


def boundary_segments(labels: np.ndarray, within: np.ndarray | None = None) -> np.ndarray:
    """Pixel borders between neighbouring pixels of different value in a 2D slice.

    Parameters
    ----------
    labels : ndarray, shape (n_h, n_v)
        A slice indexed ``[h, v]``: a mask (a contour) or a region map (region borders).
    within : ndarray of bool, shape (n_h, n_v), optional
        Only borders between two pixels of ``within`` (e.g. inside the image: no line along its edge).

    Returns
    -------
    ndarray of float, shape (n, 2, 2)
        Segments ``((x0, y0), (x1, y1))`` in ``imshow(labels.T, origin="lower")`` coordinates: one
        per pair of face neighbours whose values differ. The border of the slice itself is not drawn.

    Examples
    --------
    A single pixel has four borders, the unit square around its centre:

    >>> m = np.zeros((3, 3), bool); m[1, 1] = True
    >>> boundary_segments(m).tolist()
    [[[0.5, 0.5], [0.5, 1.5]], [[1.5, 0.5], [1.5, 1.5]], [[0.5, 0.5], [1.5, 0.5]], [[0.5, 1.5], [1.5, 1.5]]]
    >>> len(boundary_segments(m, within=np.arange(3)[:, None] > 0 + np.zeros((3, 3), bool)))  # not at h = 0.5
    3
    """
    labels = np.asarray(labels)
    both = np.ones(labels.shape, bool) if within is None else np.asarray(within, bool)
    pairs = (labels[1:, :] != labels[:-1, :]) & both[1:, :] & both[:-1, :]
    h, v = np.nonzero(pairs)  # between (h, v) and (h + 1, v): a vertical line
    vertical = np.stack([np.stack([h + 0.5, v - 0.5], 1), np.stack([h + 0.5, v + 0.5], 1)], 1)
    pairs = (labels[:, 1:] != labels[:, :-1]) & both[:, 1:] & both[:, :-1]
    h, v = np.nonzero(pairs)  # between (h, v) and (h, v + 1): a horizontal line
    horizontal = np.stack([np.stack([h - 0.5, v + 0.5], 1), np.stack([h + 0.5, v + 0.5], 1)], 1)
    return np.concatenate([vertical, horizontal]).astype(float).reshape(-1, 2, 2)


@dataclass
class PlaneView:
    """One slice of a thumbnail: what to draw and how.

    Attributes
    ----------
    name : str
        ``"axial"``, ``"coronal"``, ``"sagittal"`` or ``"image"`` (2D).
    axis : int or None
        The fixed array axis (None in 2D); ``index`` its voxel index.
    h_axis, v_axis : int
        Array axes shown horizontally and vertically.
    gt, pred : ndarray of bool, shape (n_h, n_v)
        The masks on the slice (outside the image: False).
    regions : ndarray of int32, shape (n_h, n_v)
        Voronoi region labels on the slice; -1 outside the image (0 where unknown).
    aspect : float
        ``spacing[v_axis] / spacing[h_axis]``: the height of a pixel on screen relative to its width.
    intensity : ndarray of float, shape (n_h, n_v), or None
        The scan's values on the slice (one channel; NaN outside the image), or None: drawn on the
        empty background.
    """

    name: str
    axis: int | None
    index: int
    h_axis: int
    v_axis: int
    gt: np.ndarray
    pred: np.ndarray
    regions: np.ndarray
    aspect: float
    intensity: np.ndarray | None = None

    @property
    def caption(self) -> str:
        """e.g. ``"axial k=12"``."""
        return self.name if self.axis is None else f"{self.name} {AXIS_NAMES[self.axis]}={self.index}"


@dataclass
class ThumbnailGeometry:
    """The crop around one component and its slices.

    Attributes
    ----------
    center : tuple of int
        The centroid voxel (rounded), the centre of ``box``.
    box : tuple of (start, stop)
        The crop, ``2 h + 1`` voxels per axis.
    own_region : int
        The Voronoi region drawn as "this component's region" (0: none).
    field_of_view_mm : float
        Width of the crop in mm (its largest side).
    planes : list of PlaneView
    """

    center: tuple[int, ...]
    box: Box
    own_region: int
    field_of_view_mm: float
    planes: list[PlaneView]


def plane_coords(box: Box, axis: int | None, index: int) -> np.ndarray:
    """Voxel coordinates of one plane of a box, shape ``(n_h, n_v, ndim)`` (the fixed axis at ``index``).

    >>> plane_coords(((0, 2), (5, 7), (1, 4)), 2, 3)[1, 0].tolist()
    [1, 5, 3]
    """
    ranges = [np.array([index]) if a == axis else np.arange(start, stop) for a, (start, stop) in enumerate(box)]
    grid = np.stack(np.meshgrid(*ranges, indexing="ij"), axis=-1)
    return grid.reshape([len(r) for a, r in enumerate(ranges) if a != axis] + [len(box)])


def plane_regions(regions, box: Box, axis: int | None, index: int, shape: Sequence[int]) -> np.ndarray:
    """Region labels on one plane of a box: -1 outside the image.

    ``regions`` is the dense region map of the whole image, or a function giving the labels of voxel
    coordinates (shape (N, ndim)), such as :class:`ccmetrics.report.cases.Regions`: then only the
    plane's voxels are labelled.

    >>> plane_regions(np.array([[1, 1, 2]]), ((0, 1), (-1, 4)), None, 0, (1, 3)).tolist()
    [[-1, 1, 1, 2, -1]]
    """
    coords = plane_coords(box, axis, index)
    inside = np.all((coords >= 0) & (coords < np.asarray(shape)), axis=-1)
    out = np.full(inside.shape, -1, np.int32)
    where = coords[inside]
    if len(where):
        out[inside] = regions(where) if callable(regions) else np.asarray(regions)[tuple(where.T)]
    return out


def _on_plane(a: np.ndarray, axis: int | None) -> np.ndarray:
    """A crop one voxel thick along ``axis`` as a 2D array (a 2D image, ``axis=None``, as it is)."""
    return a if axis is None else a.take(0, axis=axis)


def _plane_box(box: Box, axis: int | None, index: int) -> Box:
    """The part of ``box`` on the plane ``axis = index`` (one voxel thick along ``axis``)."""
    return tuple((index, index + 1) if a == axis else b for a, b in enumerate(box))


def plane_intensity(image: np.ndarray, box: Box, axis: int | None, index: int) -> np.ndarray:
    """The values of a scan on one plane of a box, as float64 of shape ``(n_h, n_v)``; NaN outside the image.

    Parameters
    ----------
    image : ndarray
        One channel of the scan, on the GT's voxel grid (same shape).
    box : tuple of (start, stop)
        The crop (:func:`crop_box`); it may reach beyond the image.
    axis : int or None
        The fixed axis (None for a 2D image); ``index`` its voxel index.

    Examples
    --------
    >>> plane_intensity(np.arange(6).reshape(2, 3), ((0, 2), (-1, 2)), None, 0).tolist()
    [[nan, 0.0, 1.0], [nan, 3.0, 4.0]]
    >>> image = np.arange(24).reshape(2, 3, 4)
    >>> np.array_equal(plane_intensity(image, ((0, 2), (0, 3), (0, 4)), 2, 1), image[:, :, 1])
    True
    """
    plane_box = _plane_box(box, axis, index)
    out = _on_plane(crop(image, plane_box, 0), axis).astype(np.float64)
    inside = [
        (np.arange(start, stop) >= 0) & (np.arange(start, stop) < n)
        for a, ((start, stop), n) in enumerate(zip(box, image.shape))
        if a != axis
    ]
    out[~(inside[0][:, None] & inside[1][None, :])] = np.nan
    return out


def thumbnail_geometry(
    center: Sequence[int],
    box: Box,
    gt: np.ndarray,
    pred: np.ndarray,
    regions,
    spacing: Sequence[float],
    own_region: int = 0,
    image: np.ndarray | None = None,
) -> ThumbnailGeometry:
    """Cut the slices of a thumbnail through voxel ``center`` inside ``box``.

    Parameters
    ----------
    center : sequence of int
        Voxel the planes go through (the component's rounded centroid).
    box : tuple of (start, stop)
        The crop (from :func:`crop_box`).
    gt, pred : ndarray of bool
        The whole image's masks.
    regions : ndarray of int or callable
        The Voronoi region map of the whole image, or a function of voxel coordinates (see
        :func:`plane_regions`).
    spacing : sequence of float
        Voxel size along each axis (for the on-screen aspect ratio).
    own_region : int
        The region to highlight.
    image : ndarray, optional
        One channel of the scan on the same grid: each plane gets its values (:func:`plane_intensity`).

    Examples
    --------
    >>> gt = np.zeros((9, 9, 9), bool); gt[3:6, 3:6, 3:6] = True
    >>> g = thumbnail_geometry((4, 4, 4), crop_box((4, 4, 4), (2, 2, 2)), gt, gt, gt.astype(int),
    ...                        (1.0, 1.0, 2.0), own_region=1)
    >>> [p.caption for p in g.planes], g.planes[0].gt.shape, g.planes[1].aspect
    (['axial k=4', 'coronal j=4', 'sagittal i=4'], (5, 5), 2.0)
    """
    ndim = gt.ndim
    box = tuple(box)
    planes = []
    for name, axis in PLANES_3D if ndim == 3 else PLANES_2D:
        shown = [a for a in range(ndim) if a != axis]
        index = 0 if axis is None else int(center[axis])
        plane_box = _plane_box(box, axis, index)
        planes.append(
            PlaneView(
                name,
                axis,
                index,
                shown[0],
                shown[1],
                _on_plane(crop(gt, plane_box, False), axis).astype(bool),
                _on_plane(crop(pred, plane_box, False), axis).astype(bool),
                plane_regions(regions, box, axis, index, gt.shape),
                float(spacing[shown[1]]) / float(spacing[shown[0]]),
                None if image is None else plane_intensity(image, box, axis, index),
            )
        )
    fov = max((stop - start) * float(s) for (start, stop), s in zip(box, spacing))
    return ThumbnailGeometry(tuple(int(c) for c in center), box, int(own_region), fov, planes)


def with_image(geometry: ThumbnailGeometry, image: np.ndarray) -> ThumbnailGeometry:
    """The same thumbnail (crop, masks, regions shared, not copied) with the planes of one channel of a scan.

    One call per channel: the rows of a thumbnail on a CT and a PET are ``with_image(g, ct)`` and
    ``with_image(g, pet)``.

    Examples
    --------
    >>> gt = np.zeros((9, 9, 9), bool); gt[3:6, 3:6, 3:6] = True
    >>> g = thumbnail_geometry((4, 4, 4), crop_box((4, 4, 4), (2, 2, 2)), gt, gt, gt.astype(int), (1.0, 1.0, 1.0))
    >>> scan = np.random.default_rng(0).random(gt.shape)
    >>> on_scan = with_image(g, scan)
    >>> np.array_equal(on_scan.planes[0].intensity, scan[2:7, 2:7, 4]), on_scan.planes[0].gt is g.planes[0].gt
    (True, True)
    """
    if image.ndim != len(geometry.box):
        raise ValueError(f"a {len(geometry.box)}D thumbnail cannot show a {image.ndim}D image")
    planes = [
        dataclasses.replace(p, intensity=plane_intensity(image, geometry.box, p.axis, p.index)) for p in geometry.planes
    ]
    return dataclasses.replace(geometry, planes=planes)
