"""PET quantification on the scan inside the masks: SUVmax, SUVmean, SUVpeak, MTV, TLG, Dmax and extent.

The kernels of the ``pet`` metric group (definitions: ``docs/definitions.md``, PET quantification).
The scan's values are taken as SUV (body weight); volumes are in ml, distances in mm, with the voxel
spacing in mm (``spacing=None``: 1 mm voxels). In 2D a voxel's "volume" is its area in mm² / 1000 (a
1 mm slice).

Every function takes the work the case already did as its input rather than redoing it: the lesions as
an instance label map (0 background, lesion k labelled k, e.g. from
:func:`ccmetrics.engine.components.label_components`) or as the
:class:`~ccmetrics.engine.components.Sites` of the case's components (``ComponentCache(mask)(connectivity)``:
no image-sized pass at all), the Voronoi regions as the dense map of
:func:`ccmetrics.engine.partition.voronoi_partition` or as the region label of each prediction voxel.
The image is read at the lesion voxels only (one gather, any memory order, float32 or float64; sums in
float64), plus a box around each lesion for SUVpeak; a dense label map costs one pass to list its
non-zero voxels. Per-lesion outputs are plain numpy arrays, entry ``k - 1`` for lesion ``k``.

Non-finite SUV (NaN, inf) inside a lesion, or within the SUVpeak sphere of one of its voxels, is an error:
a ``ValueError`` that names the lesion and the voxel.

Examples
--------
>>> import numpy as np
>>> image = np.array([[1.0, 4.0, 0.0, 2.0], [3.0, 4.0, 0.0, 0.5]], dtype=np.float32)
>>> labels = np.array([[1, 1, 0, 2], [1, 1, 0, 0]])
>>> u = lesion_uptake(image, labels, 2, spacing=10.0)  # 10 x 10 mm pixels: 0.1 "ml" each
>>> u["suv_max"], u["suv_mean"], u["mtv_ml"], u["tlg"], u["hot_index"]
(array([4., 2.]), array([3., 2.]), array([0.4, 0.1]), array([1.2, 0.2]), array([1, 3]))
>>> hottest_voxel_detected(u["hot_index"], labels == 1).tolist()
[True, False]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._inputs import as_spacing, check_ndim, to_numpy
from ..engine.components import Sites, coordinates
from ..engine.config import current as current_engine
from ..engine.kernels import pays

__all__ = [
    "PERCIST_RADIUS_MM",
    "centroids_mm",
    "dmax_mm",
    "extent_mm",
    "farthest_pair_distance",
    "hottest_voxel_detected",
    "lesion_uptake",
    "patient_uptake",
    "region_uptake",
    "suv_peak",
]

#: radius (mm) of the 1 cm³ sphere of PERCIST's SUVpeak: (3 / (4 pi) * 1000 mm³) ** (1/3)
PERCIST_RADIUS_MM = 6.2035
_CHUNK = 1 << 19  # entries of the (offsets x voxels) or (points x points) blocks evaluated at once
_SMALL_PEAK = 1 << 12  # SUVpeak: lesions of at most this many (voxels x sphere voxels) read the image directly


# ----------------------------------------------------------------------------- inputs


def _image(image: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
    arr = to_numpy(image, "image")
    check_ndim(arr, "image")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"image must hold real numbers (SUV), got dtype {arr.dtype}")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"image shape {arr.shape} differs from the masks' shape {tuple(shape)}")
    return arr


def _voxel_ml(spacing: Any, ndim: int) -> tuple[np.ndarray, float]:
    """The spacing as an array (1 mm when ``None``) and a voxel's volume in ml."""
    checked = as_spacing(spacing, ndim)
    s = np.ones(ndim) if checked is None else np.asarray(checked, dtype=np.float64)
    return s, float(np.prod(s)) / 1000.0


def _gather(arr: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """``arr`` at C-order flat indices, whatever its memory order (no copy of the array)."""
    if arr.flags.c_contiguous:
        return arr.reshape(-1)[flat]
    if arr.flags.f_contiguous:
        f_index = np.ravel_multi_index(np.unravel_index(flat, arr.shape), arr.shape, order="F")
        return arr.T.reshape(-1)[f_index]
    return arr[np.unravel_index(flat, arr.shape)]


def _nonzero_flat(arr: np.ndarray) -> np.ndarray:
    """Sorted C-order flat indices of the non-zero entries, one pass in the array's own memory order."""
    if arr.flags.c_contiguous or not arr.flags.f_contiguous:
        return np.flatnonzero(arr)
    found = np.flatnonzero(arr.T)  # Fortran-order indices
    return np.sort(np.ravel_multi_index(np.unravel_index(found, arr.shape, order="F"), arr.shape))


def _grouped(labels: Any, n: int | None) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """Lesion voxels grouped by label: shape, flat indices (label by label, each group in C order), starts."""
    if isinstance(labels, Sites):
        if n is not None and int(n) != labels.n:
            raise ValueError(f"n={n} but the sites hold {labels.n} lesions")
        return labels.shape, labels.flat_index, labels.starts
    arr = to_numpy(labels, "labels")
    check_ndim(arr, "labels")
    if arr.dtype == bool:
        arr = arr.view(np.uint8)
    elif not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"labels must be an integer label map (0 background, lesions 1..n), got dtype {arr.dtype}")
    flat = _nonzero_flat(arr)
    lab = _gather(arr, flat).astype(np.int64)
    top = int(lab.max()) if len(lab) else 0
    n = top if n is None else int(n)
    if len(lab) and (int(lab.min()) < 0 or top > n):
        raise ValueError(f"labels must lie in 0..n={n}, found {int(lab.min())}..{top}")
    order = np.argsort(lab, kind="stable")
    starts = np.concatenate(([0], np.cumsum(np.bincount(lab, minlength=n + 1)[1:]))).astype(np.int64)
    return arr.shape, flat[order], starts


def _where(shape: Sequence[int], flat: int) -> str:
    return "(" + ", ".join(str(int(c)) for c in np.unravel_index(int(flat), tuple(shape))) + ")"


def _refuse_non_finite(values: np.ndarray, flat: np.ndarray, starts: np.ndarray, shape, what: str) -> None:
    """A ``ValueError`` naming the first group (1-based, as ``what``) holding a non-finite value."""
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        first = int(bad[0])
        group = int(np.searchsorted(starts, first, side="right"))
        raise ValueError(
            f"non-finite SUV ({values[first]}) inside {what} {group} at voxel {_where(shape, flat[first])}: "
            "the scan must be finite wherever it is measured"
        )


def _group_stats(values: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: voxel count, sum (float64), maximum (NaN when empty) and position of its first maximum (-1)."""
    n = len(starts) - 1
    count = np.diff(starts)
    group = np.repeat(np.arange(n), count)
    total = np.bincount(group, weights=values, minlength=n).astype(np.float64)
    peak = np.full(n, np.nan)
    first = np.full(n, -1, dtype=np.int64)
    full = np.flatnonzero(count)
    if len(full):
        peak[full] = np.maximum.reduceat(values, starts[full])
        at_max = np.flatnonzero(values == peak[group])
        seen, where = np.unique(group[at_max], return_index=True)  # the first maximum of each group
        first[seen] = at_max[where]
    return count, total, peak, first


# ----------------------------------------------------------------------------- per lesion


def lesion_uptake(image: Any, labels: Any, n: int | None = None, spacing: Any = None) -> dict[str, np.ndarray]:
    """SUVmax, SUVmean, MTV, TLG and the hottest voxel of every lesion, in one pass over its voxels.

    Parameters
    ----------
    image : array_like or torch.Tensor
        The scan in SUV, 2D or 3D, any real dtype (float32 is read as is), any memory order.
    labels : ndarray of int or Sites
        The lesions: an instance label map of ``image``'s shape (0 background, lesion k labelled k), or
        the case's :class:`~ccmetrics.engine.components.Sites` (grouped voxel lists: no pass over the image).
    n : int, optional
        The number of lesions (labels 1..n; a label without voxels gets NaN SUVs and volume 0). Default:
        the largest label, or the sites' count.
    spacing : float or sequence of float, optional
        Voxel size in mm (default 1 mm).

    Returns
    -------
    dict of str to ndarray, each of length n (entry ``k - 1`` for lesion ``k``)
        ``suv_max``, ``suv_mean`` (float64; NaN for an empty label), ``mtv_ml`` (voxels × voxel volume),
        ``tlg`` (Σ SUV × voxel volume = ``mtv_ml * suv_mean``, ml; 0 when empty), ``voxels`` (int64) and
        ``hot_index`` (int64): the C-order flat index of the lesion's hottest voxel, the first in C order
        among equal maxima (-1 when empty), for :func:`hottest_voxel_detected`.

    Raises
    ------
    ValueError
        NaN or inf inside a lesion (the message names the lesion and the voxel); labels outside 0..n.

    Notes
    -----
    Algorithm: the lesion voxels' flat indices, grouped by label (from the sites, or one pass over the
    label map and a stable radix sort), gather the SUV once; counts and sums are ``np.bincount`` over the
    groups in float64, maxima ``np.maximum.reduceat``, and the first maximum of each group one
    comparison and ``np.unique``. Cost O(N) for N lesion voxels (plus one pass over a dense label map).

    Examples
    --------
    >>> image = np.array([[[2.0, 5.0, 5.0], [0.0, 1.0, 0.0]]])
    >>> u = lesion_uptake(image, np.array([[[1, 1, 1], [0, 2, 0]]]), spacing=(2.0, 5.0, 10.0))
    >>> u["suv_max"], u["suv_mean"], u["mtv_ml"], u["tlg"], u["hot_index"]
    (array([5., 1.]), array([4., 1.]), array([0.3, 0.1]), array([1.2, 0.1]), array([1, 4]))
    """
    shape, flat, starts = _grouped(labels, n)
    arr = _image(image, shape)
    _, voxel_ml = _voxel_ml(spacing, len(shape))
    values = _gather(arr, flat).astype(np.float64, copy=False)
    _refuse_non_finite(values, flat, starts, shape, "lesion")
    count, total, peak, first = _group_stats(values, starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    hot = np.where(first >= 0, flat[np.maximum(first, 0)] if len(flat) else -1, -1).astype(np.int64)
    return {
        "suv_max": peak,
        "suv_mean": mean,
        "mtv_ml": count * voxel_ml,
        "tlg": total * voxel_ml,
        "voxels": count.astype(np.int64),
        "hot_index": hot,
    }


def _pred_voxels(pred_mask: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Sorted flat indices of the predicted voxels: from a mask of ``shape``, or given as a 1-D index array."""
    arr = to_numpy(pred_mask, "pred_mask")
    if arr.ndim == 1:
        return arr.astype(np.int64, copy=False)
    if arr.shape != tuple(shape):
        raise ValueError(f"pred_mask shape {arr.shape} differs from the image shape {tuple(shape)}")
    return _nonzero_flat(arr)


def region_uptake(
    image: Any, pred_mask: Any, voronoi_regions: Any, n: int, spacing: Any = None
) -> dict[str, np.ndarray]:
    """The prediction inside each lesion's Voronoi region: its volume, TLG, SUVmax and SUVmean.

    Parameters
    ----------
    image : array_like or torch.Tensor
        The scan in SUV (2D or 3D).
    pred_mask : array_like
        The predicted voxels: a binary mask of ``image``'s shape, or the sorted C-order flat indices of
        the predicted voxels (1-D, e.g. the engine's prediction voxel list).
    voronoi_regions : array_like of int
        The region (1..n) of each voxel: the dense map of
        :func:`~ccmetrics.engine.partition.voronoi_partition` (``image``'s shape), or, aligned with the
        predicted voxels, the region of each one (1-D, e.g. from
        :func:`~ccmetrics.engine.partition.assign_nearest_flat` and the GT inside the lesions).
    n : int
        The number of lesions (regions 1..n).
    spacing : float or sequence of float, optional
        Voxel size in mm (default 1 mm).

    Returns
    -------
    dict of str to ndarray of float64, each of length n
        ``pred_mtv_ml``, ``pred_tlg`` (0 when the region holds no predicted voxel), ``pred_suv_max`` and
        ``pred_suv_mean`` (NaN then).

    Raises
    ------
    ValueError
        NaN or inf at a predicted voxel (names the lesion whose region holds it, and the voxel); a region
        label outside 1..n at a predicted voxel.

    Notes
    -----
    One gather of SUV and region at the P predicted voxels, a stable sort by region, then the per-group
    sums and maxima of :func:`lesion_uptake`: O(P), never a pass per lesion.

    Examples
    --------
    >>> image = np.array([[1.0, 2.0, 6.0, 3.0, 9.0]])
    >>> regions = np.array([[1, 1, 1, 2, 2]])  # voronoi_partition of [[1, 0, 0, 0, 1]]
    >>> r = region_uptake(image, np.array([[0, 1, 1, 0, 0]], bool), regions, 2, spacing=10.0)
    >>> r["pred_mtv_ml"], r["pred_tlg"], r["pred_suv_max"], r["pred_suv_mean"]
    (array([0.2, 0. ]), array([0.8, 0. ]), array([ 6., nan]), array([ 4., nan]))
    """
    arr = _image(image)
    shape = arr.shape
    _, voxel_ml = _voxel_ml(spacing, len(shape))
    flat = _pred_voxels(pred_mask, shape)
    regions = to_numpy(voronoi_regions, "voronoi_regions")
    if regions.ndim == 1:
        if len(regions) != len(flat):
            raise ValueError(f"{len(regions)} region labels for {len(flat)} predicted voxels")
        region = regions.astype(np.int64)
    elif regions.shape == shape:
        region = _gather(regions, flat).astype(np.int64)
    else:
        raise ValueError(f"voronoi_regions shape {regions.shape} differs from the image shape {shape}")
    n = int(n)
    if len(region) and (int(region.min()) < 1 or int(region.max()) > n):
        raise ValueError(f"a predicted voxel lies in region {int(region.min())}..{int(region.max())}, not 1..{n}")
    order = np.argsort(region, kind="stable")
    flat = flat[order]
    starts = np.concatenate(([0], np.cumsum(np.bincount(region, minlength=n + 1)[1:]))).astype(np.int64)
    values = _gather(arr, flat).astype(np.float64, copy=False)
    _refuse_non_finite(values, flat, starts, shape, "the prediction in the Voronoi region of lesion")
    count, total, peak, _ = _group_stats(values, starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return {"pred_mtv_ml": count * voxel_ml, "pred_tlg": total * voxel_ml, "pred_suv_max": peak, "pred_suv_mean": mean}


def hottest_voxel_detected(hot_index: Any, pred_mask: Any) -> np.ndarray:
    """The hottest-voxel detection rule: is each lesion's hottest voxel predicted?

    Parameters
    ----------
    hot_index : array_like of int
        Per lesion, the C-order flat index of its hottest voxel (``lesion_uptake(...)["hot_index"]``;
        -1 for an empty lesion, never detected).
    pred_mask : array_like
        The prediction: a binary mask (2D or 3D), or the sorted C-order flat indices of its voxels (1-D).

    Returns
    -------
    ndarray of bool
        One entry per lesion. Cost: one gather (mask) or one binary search (index list) per lesion.

    Examples
    --------
    >>> hottest_voxel_detected([0, 5, -1], np.array([[1, 0, 0], [0, 0, 0]], bool)).tolist()
    [True, False, False]
    >>> hottest_voxel_detected([0, 5], np.array([2, 5])).tolist()
    [False, True]
    """
    hot = np.asarray(hot_index, dtype=np.int64).reshape(-1)
    pred = to_numpy(pred_mask, "pred_mask")
    out = np.zeros(len(hot), dtype=bool)
    valid = hot >= 0
    if pred.ndim == 1:
        flat = pred.astype(np.int64, copy=False)
        if len(flat):
            at = np.minimum(np.searchsorted(flat, hot[valid]), len(flat) - 1)
            out[valid] = flat[at] == hot[valid]
        return out
    check_ndim(pred, "pred_mask")
    if np.any(hot >= pred.size):
        raise ValueError(f"hot_index {int(hot.max())} is outside the prediction ({pred.size} voxels)")
    out[valid] = _gather(pred, hot[valid]) != 0
    return out


# ----------------------------------------------------------------------------- SUVpeak


def _sphere_rows(spacing: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sphere as rows along the last axis: offsets (dz, dy) and half-width w of each non-empty row.

    A voxel offset d is in the sphere when ``((dz*sz)**2 + (dy*sy)**2) + (dx*sx)**2 <= radius**2``; the rows
    are symmetric and contiguous in dx, so [-w, w] covers each.
    """
    reach = np.floor(radius / spacing).astype(np.int64) + 1
    dz, dy, dx = np.meshgrid(*(np.arange(-r, r + 1) for r in reach), indexing="ij")
    inside = ((dz * spacing[0]) ** 2 + (dy * spacing[1]) ** 2) + (dx * spacing[2]) ** 2 <= radius * radius
    width = np.where(inside, np.abs(dx), -1).max(axis=2)
    keep = width >= 0
    return dz[:, :, 0][keep], dy[:, :, 0][keep], width[keep]


def _sphere_sums_at(
    cumsum: np.ndarray, local: np.ndarray, rows: tuple[np.ndarray, np.ndarray, np.ndarray], pad: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Sum and count over the sphere around each local voxel (two look-ups a row), for a sparse lesion.

    ``cumsum`` has shape (Bz + 2 pz, By + 2 py, Bx + 1): zero rows pad the box in z and y (out of the
    image), and ``cumsum[..., i]`` is the sum of the box row's first i values.
    """
    dz, dy, w = rows
    bz, by, bx1 = cumsum.shape[0] - 2 * pad[0], cumsum.shape[1] - 2 * pad[1], cumsum.shape[2]
    flat = cumsum.reshape(-1)
    total = np.zeros(len(local))
    count = np.zeros(len(local), dtype=np.int64)
    step = max(1, _CHUNK // max(len(dz), 1))
    for a in range(0, len(local), step):
        z, y, x = (local[a : a + step, k][None, :] for k in range(3))
        zz, yy = z + dz[:, None], y + dy[:, None]
        lo = np.maximum(x - w[:, None], 0)
        hi = np.minimum(x + w[:, None] + 1, bx1 - 1)
        base = ((zz + pad[0]) * (by + 2 * pad[1]) + (yy + pad[1])) * bx1
        total[a : a + step] = (flat[base + hi] - flat[base + lo]).sum(axis=0)
        inside = (zz >= 0) & (zz < bz) & (yy >= 0) & (yy < by)
        count[a : a + step] = np.where(inside, hi - lo, 0).sum(axis=0)
    return total, count


def _sphere_sums_box(box: np.ndarray, offset: np.ndarray, rows, reach: np.ndarray, first, size, axes) -> np.ndarray:
    """The sphere sum around each voxel of a compact lesion (coordinates ``axes``, bounding box ``first``, ``size``).

    The bounding box grown by the reach, zero-padded where it leaves the image (``box`` is its part inside, at
    ``offset``), in float64; the row sums of the bounding box's columns, widened one column on each side at a
    time, laid out flat (z, y, x) with the padding rows in y, so that every row of the sphere is one contiguous
    shifted slice added to the flat total (the padding rows take values that are never read); then one gather
    at the lesion's voxels.
    """
    dz, dy, w = rows
    pz, py, px = (int(r) for r in reach)
    near = np.zeros(tuple(int(n) for n in size + 2 * reach))
    near[
        offset[0] : offset[0] + box.shape[0], offset[1] : offset[1] + box.shape[1], offset[2] : offset[2] + box.shape[2]
    ] = box
    depth, height, n_x = near.shape[0], near.shape[1], int(size[2])
    plane, margin = height * n_x, py * n_x
    n_out = int(size[0]) * plane
    total = np.zeros(n_out)
    shifted = np.zeros(depth * plane + 2 * margin)  # the row sums, flat, with a margin for the y shifts
    body = shifted[margin : margin + depth * plane].reshape(depth, height, n_x)
    body[...] = near[:, :, px : px + n_x]
    done = 0
    for width in np.unique(w):
        for d in range(done + 1, int(width) + 1):  # the rows one column wider on each side
            body += near[:, :, px - d : px - d + n_x]
            body += near[:, :, px + d : px + d + n_x]
        done = int(width)
        for a, b in zip(dz[w == width] + pz, dy[w == width]):
            start = a * plane + b * n_x + margin
            total += shifted[start : start + n_out]
    at = ((axes[0] - first[0]) * height + (axes[1] - (first[1] - py))) * n_x + (axes[2] - first[2])
    return total[at]


def _padded_cumsum(box: np.ndarray, pad: tuple[int, int]) -> np.ndarray:
    out = np.zeros((box.shape[0] + 2 * pad[0], box.shape[1] + 2 * pad[1], box.shape[2] + 1))
    np.cumsum(
        box, axis=2, dtype=np.float64, out=out[pad[0] : pad[0] + box.shape[0], pad[1] : pad[1] + box.shape[1], 1:]
    )
    return out


def _lesion_peak(arr: np.ndarray, axes: tuple, rows, reach: np.ndarray, k: int, ndim: int) -> float:
    """SUVpeak of one lesion (its voxel coordinates ``axes``, in C order) from the box around it."""
    shape = np.asarray(arr.shape)
    first = np.array([int(axes[0][0]), int(axes[1].min()), int(axes[2].min())])  # C order: z ascends
    last = np.array([int(axes[0][-1]), int(axes[1].max()), int(axes[2].max())])
    lo, hi = np.maximum(first - reach, 0), np.minimum(last + reach + 1, shape)
    box = arr[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]]
    pad = (int(reach[0]), int(reach[1]))
    size = last - first + 1
    if int(np.prod(size)) > current_engine().peak_box_ratio * len(axes[0]):  # sparse: per voxel
        local = np.stack([c - o for c, o in zip(axes, lo)], axis=1)
        bad = ~np.isfinite(box)
        if bad.any():
            _refuse_non_finite_peak(bad, local, rows, pad, (local + lo)[:, -ndim:], k)
            box = np.where(bad, 0.0, box)
        total, count = _sphere_sums_at(_padded_cumsum(box, pad), local, rows, pad)
        return float(np.max(total / count))
    with np.errstate(invalid="ignore"):  # inf + -inf: refused below
        total = _sphere_sums_box(box, lo - (first - reach), rows, reach, first, size, axes)
    if not np.isfinite(total).all():  # a NaN or inf of the box within the sphere of a lesion voxel (none else is read)
        local = np.stack([c - o for c, o in zip(axes, lo)], axis=1)
        _refuse_non_finite_peak(~np.isfinite(box), local, rows, pad, (local + lo)[:, -ndim:], k)
    full = float((2 * rows[2] + 1).sum())
    low, high = first < reach, last + reach >= shape  # the axes where spheres leave the image
    if not (low.any() or high.any()):
        return float(np.max(total)) / full
    # the sphere leaves the image only around the voxels within its reach of the border, and how many of its
    # voxels stay inside depends only on their distances to the border, capped at the reach
    near = np.zeros(len(axes[0]), dtype=bool)
    for axis in np.flatnonzero(low):
        near |= axes[axis] < reach[axis]
    for axis in np.flatnonzero(high):
        near |= axes[axis] >= shape[axis] - reach[axis]
    edge = np.stack([c[near] for c in axes], axis=1)
    gaps = np.concatenate((np.minimum(edge, reach), np.minimum(shape - 1 - edge, reach)), axis=1)
    key = gaps @ (int(reach.max()) + 1) ** np.arange(6, dtype=np.int64)
    _, one, inverse = np.unique(key, return_index=True, return_inverse=True)
    count = np.full(len(axes[0]), full)
    count[near] = _sphere_counts(edge[one], rows, tuple(shape))[inverse]
    return float(np.max(total / count))


def _sphere_counts(local: np.ndarray, rows, shape: tuple[int, ...]) -> np.ndarray:
    """The number of the sphere's voxels inside a box of ``shape`` around each of its voxels ``local`` (rows)."""
    dz, dy, w = rows
    count = np.zeros(len(local), dtype=np.int64)
    step = max(1, _CHUNK // max(len(dz), 1))
    for a in range(0, len(local), step):
        z, y, x = (local[a : a + step, k][None, :] for k in range(3))
        zz, yy = z + dz[:, None], y + dy[:, None]
        span = np.minimum(x + w[:, None], shape[2] - 1) - np.maximum(x - w[:, None], 0) + 1
        inside = (zz >= 0) & (zz < shape[0]) & (yy >= 0) & (yy < shape[1])
        count[a : a + step] = np.where(inside, span, 0).sum(axis=0)
    return count


def suv_peak(
    image: Any, labels: Any, n: int | None = None, spacing: Any = None, radius_mm: float = PERCIST_RADIUS_MM
) -> np.ndarray:
    """PERCIST SUVpeak of every lesion: the largest mean SUV over a sphere centred on one of its voxels.

    The sphere holds the voxels whose centres lie within ``radius_mm`` of the centre voxel's (with the
    spacing, so anisotropic voxels give an ellipsoid of voxel offsets), whether in the lesion or not;
    voxels outside the image are left out (the mean is over the sphere's voxels inside the image).

    Parameters
    ----------
    image : array_like or torch.Tensor
        The scan in SUV (2D or 3D; in 2D the sphere is the disc in the plane).
    labels : ndarray of int or Sites
        The lesions, as for :func:`lesion_uptake`.
    n : int, optional
        The number of lesions (default: the largest label, or the sites' count).
    spacing : float or sequence of float, optional
        Voxel size in mm (default 1 mm).
    radius_mm : float
        The sphere's radius: 6.2035 mm, 1 cm³ (PERCIST).

    Returns
    -------
    ndarray of float64, length n
        SUVpeak per lesion; NaN for a label without voxels.

    Raises
    ------
    ValueError
        A non-finite SUV inside a lesion or within the radius of one of its voxels (names the lesion).

    Notes
    -----
    Only a box around each lesion is read: its bounding box grown by the sphere's reach along each axis,
    clipped to the image. The sphere splits into rows along the last axis (offsets (dz, dy), half-width w;
    rows ≈ π r² / (sz sy): 9 at 4 mm voxels, 19 at autoPET's 3 x 2 x 2 mm, 121 at 1 mm). A compact lesion
    (its bounding box at most 16 times its V voxels): the box, zero-padded by the reach (float64), gives
    the row sums of the bounding box's columns for each width (the rows widened one column on each side at
    a time), laid out flat so that each row of the sphere is one contiguous shifted slice, added up over
    the bounding box: O(box + rows × bounding box) in contiguous passes, then one gather at the lesion's
    voxels; the sphere's voxels inside the image are counted only around the voxels within its reach of
    the image's border (the count depends only on the distances to the border, capped at the reach: one
    count per distinct case). A sparse lesion takes two look-ups per row and lesion voxel in the box's
    running sums, O(box + V × rows); a small one (V × sphere voxels at most 4096) reads the image at every
    sphere voxel around each of its voxels, all small lesions together, O(V × sphere voxels); both in
    blocks of bounded memory. Nothing is ever filtered over the whole volume. The compact lesions of a float
    image go to the engine's compiled kernel (:func:`ccmetrics.engine.sphere_means.sphere_mean_peaks`: the same
    sums in the same order, so the same values, in about a third of the time) where it pays for its load or
    compile (``peak_kernel_from``, ``compile_peak_from`` of :class:`ccmetrics.EngineConfig`: always once loaded).
    The sums are float64 sums
    of the SUVs (the sparse path: differences of running sums, relative error about 1e-15 times the box
    width).

    Examples
    --------
    >>> image = np.zeros((1, 3, 5))
    >>> image[0, 1, :] = [1.0, 2.0, 8.0, 2.0, 1.0]
    >>> labels = (image > 1.5).astype(int)
    >>> float(suv_peak(image, labels, spacing=1.0, radius_mm=1.0)[0])  # a cross of 5 pixels around the 8
    2.4
    """
    shape, flat, starts = _grouped(labels, n)
    arr = _image(image, shape)
    arr_shape = shape
    spacing_nd, _ = _voxel_ml(spacing, len(shape))
    if not (np.isfinite(radius_mm) and radius_mm >= 0):
        raise ValueError(f"radius_mm must be a non-negative number, got {radius_mm!r}")
    if arr.ndim == 2:  # a plane: one slice of a volume, too thick for the sphere to reach another
        arr, shape = arr[None], (1, *shape)
        spacing_nd = np.concatenate(([2.0 * float(radius_mm) + 1.0], spacing_nd))
    rows = _sphere_rows(spacing_nd, float(radius_mm))
    reach = np.array([np.abs(rows[0]).max(), np.abs(rows[1]).max(), rows[2].max()])
    out = np.full(len(starts) - 1, np.nan)
    sizes = np.diff(starts)
    small = (sizes > 0) & (sizes * int((2 * rows[2] + 1).sum()) <= _SMALL_PEAK)
    error = None  # a small lesion's non-finite SUV: raised once the lesions before it were checked
    if small.any():
        out[small], error = _small_lesion_peaks(arr, flat, starts, np.flatnonzero(small), rows, len(arr_shape))
    large = np.flatnonzero((sizes > 0) & ~small)
    compiled, status = _compiled_peaks(arr, flat, starts, large, rows)
    for j, k in enumerate(large.tolist()):
        if error is not None and k > error[0]:
            break
        if compiled is not None and status is not None and status[j] == 0:  # compact, finite: the kernel's peak
            out[k] = compiled[j]
            continue
        axes = np.unravel_index(flat[starts[k] : starts[k + 1]], shape)
        out[k] = _lesion_peak(arr, axes, rows, reach, k, len(arr_shape))
    if error is not None:
        raise ValueError(error[1])
    return out


def _compiled_peaks(
    arr: np.ndarray, flat: np.ndarray, starts: np.ndarray, lesions: np.ndarray, rows
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The peaks of the compact lesions among ``lesions`` from the engine's compiled kernel, where it is used.

    The kernel (:func:`ccmetrics.engine.sphere_means.sphere_mean_peaks`) adds the same float64 values in the same
    order as :func:`_sphere_sums_box` and counts the sphere's voxels inside the image as :func:`_lesion_peak` does,
    so its peaks are theirs, bit for bit; it leaves out (status 2) the sparse lesions, measured per voxel with
    running sums, and marks (status 1) a non-finite sum, which :func:`_lesion_peak` then refuses. Used for a
    float32 or float64 image once the kernel is loaded (or numba is loaded and its cache holds it), or from
    ``EngineConfig.peak_kernel_from`` lesion voxels (numba's first import and the load take about a second;
    ``compile_peak_from`` while the cache does not hold it: :func:`ccmetrics.engine.kernels.pays`); ``(None, None)``
    otherwise.
    """
    if not len(lesions) or arr.dtype not in (np.float32, np.float64):
        return None, None
    config = current_engine()
    voxels = int((starts[lesions + 1] - starts[lesions]).sum())
    if not pays(f"_sphere_kernels[{arr.dtype}]", voxels, 0, config.peak_kernel_from, config.compile_peak_from):
        return None, None
    from ..engine.sphere_means import sphere_mean_peaks

    return sphere_mean_peaks(arr, flat, starts, lesions, rows, box_ratio=current_engine().peak_box_ratio)


def _small_lesion_peaks(arr: np.ndarray, flat: np.ndarray, starts: np.ndarray, lesions: np.ndarray, rows, ndim: int):
    """SUVpeak of the small lesions ``lesions`` (0-based) at once: the image read at every sphere voxel around each
    of their voxels (O(V x sphere voxels), in blocks), no box and no running sums.

    Returns the peaks and ``None``, or, where a non-finite SUV lies in the sphere of a voxel, the first such
    lesion and its message (the peaks then unfinished).
    """
    dz, dy, w = rows
    offsets = np.array(
        [(a, b, c) for a, b, width in zip(dz.tolist(), dy.tolist(), w.tolist()) for c in range(-width, width + 1)],
        dtype=np.int64,
    ).reshape(-1, 3)
    sizes = (starts[lesions + 1] - starts[lesions]).astype(np.int64)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    voxels = np.repeat(starts[lesions] - first, sizes) + np.arange(int(sizes.sum()))
    coords = np.stack(np.unravel_index(flat[voxels], arr.shape), axis=1)
    shape = np.asarray(arr.shape)
    means = np.empty(len(coords))
    step = max(1, _CHUNK // len(offsets))
    for a in range(0, len(coords), step):
        at = coords[a : a + step, None, :] + offsets[None, :, :]
        inside = np.all((at >= 0) & (at < shape), axis=2)
        np.clip(at, 0, shape - 1, out=at)
        values = np.where(inside, arr[at[..., 0], at[..., 1], at[..., 2]], 0).astype(np.float64)
        bad = np.flatnonzero((inside & ~np.isfinite(values)).any(axis=1))
        if len(bad):
            voxel = a + int(bad[0])
            k = int(lesions[np.searchsorted(first, voxel, side="right") - 1])
            where = "(" + ", ".join(str(int(c)) for c in coords[voxel][-ndim:]) + ")"
            message = (
                f"non-finite SUV inside lesion {k + 1} or within the SUVpeak radius of its voxel {where}: "
                "the scan must be finite wherever it is measured"
            )
            return None, (k, message)
        means[a : a + step] = values.sum(axis=1) / inside.sum(axis=1)
    return np.maximum.reduceat(means, first), None


def _refuse_non_finite_peak(bad, local, rows, pad, coords, k: int) -> None:
    """Raise when a non-finite voxel of the box lies within the SUVpeak sphere of one of lesion k's voxels."""
    seen, _ = _sphere_sums_at(_padded_cumsum(bad.astype(np.float64), pad), local, rows, pad)
    hit = np.flatnonzero(seen > 0)
    if len(hit):
        where = "(" + ", ".join(str(int(c)) for c in coords[hit[0]]) + ")"
        raise ValueError(
            f"non-finite SUV inside lesion {k + 1} or within the SUVpeak radius of its voxel {where}: "
            "the scan must be finite wherever it is measured"
        )


# ----------------------------------------------------------------------------- per patient


def patient_uptake(image: Any, mask: Any, spacing: Any = None) -> dict[str, float]:
    """TMTV, TLG, SUVmax and SUVmean over all lesion voxels of a case.

    Parameters
    ----------
    image : array_like or torch.Tensor
        The scan in SUV (2D or 3D).
    mask : array_like or Sites
        The lesions: a binary mask or label map of ``image``'s shape (every non-zero voxel counts), or
        the case's sites.
    spacing : float or sequence of float, optional
        Voxel size in mm (default 1 mm).

    Returns
    -------
    dict of str to float
        ``tmtv_ml`` and ``tlg`` (0 for an empty mask), ``suv_max`` and ``suv_mean`` (NaN for an empty mask).

    Raises
    ------
    ValueError
        A non-finite SUV inside the mask (names the voxel).

    Examples
    --------
    >>> image = np.array([[1.0, 4.0, 0.0, 2.0]])
    >>> patient_uptake(image, np.array([[1, 1, 0, 1]], bool), spacing=(10.0, 100.0))  # 1 ml pixels
    {'tmtv_ml': 3.0, 'tlg': 7.0, 'suv_max': 4.0, 'suv_mean': 2.3333333333333335}
    >>> patient_uptake(image, np.zeros((1, 4), bool))
    {'tmtv_ml': 0.0, 'tlg': 0.0, 'suv_max': nan, 'suv_mean': nan}
    """
    if isinstance(mask, Sites):
        shape, flat = mask.shape, mask.flat_index
    else:
        arr = to_numpy(mask, "mask")
        check_ndim(arr, "mask")
        shape, flat = arr.shape, _nonzero_flat(arr)
    img = _image(image, shape)
    _, voxel_ml = _voxel_ml(spacing, len(shape))
    values = _gather(img, flat).astype(np.float64, copy=False)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(f"non-finite SUV ({values[bad[0]]}) inside the mask at voxel {_where(shape, flat[bad[0]])}")
    if not len(values):
        return {"tmtv_ml": 0.0, "tlg": 0.0, "suv_max": float("nan"), "suv_mean": float("nan")}
    total = float(np.sum(values))
    return {
        "tmtv_ml": len(values) * voxel_ml,
        "tlg": total * voxel_ml,
        "suv_max": float(values.max()),
        "suv_mean": total / len(values),
    }


def centroids_mm(labels: Any, n: int | None = None, spacing: Any = None) -> np.ndarray:
    """Centroid of every lesion, in mm from the centre of voxel (0, 0, 0).

    Parameters
    ----------
    labels : ndarray of int or Sites
        The lesions, as for :func:`lesion_uptake`.
    n : int, optional
        The number of lesions.
    spacing : float or sequence of float, optional
        Voxel size in mm (default 1 mm).

    Returns
    -------
    ndarray of float64, shape (n, ndim)
        NaN rows for labels without voxels. Cost O(N) for N lesion voxels.

    Examples
    --------
    >>> centroids_mm(np.array([[1, 1, 0, 2]]), spacing=(1.0, 2.0)).tolist()
    [[0.0, 1.0], [0.0, 6.0]]
    """
    shape, flat, starts = _grouped(labels, n)
    spacing_nd, _ = _voxel_ml(spacing, len(shape))
    count = np.diff(starts)
    full = np.flatnonzero(count)
    sums = np.zeros((len(count), len(shape)))
    if isinstance(labels, Sites) and len(full):  # exact whole-number sums, from the sites' runs where known
        sums[:] = np.stack(labels.coordinate_sums(), axis=1)
    elif len(full):  # the groups are contiguous: one reduceat per axis
        for axis, coordinate in enumerate(np.unravel_index(flat, shape)):
            sums[full, axis] = np.add.reduceat(coordinate, starts[full])
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / count[:, None] * spacing_nd


def _brute_force(points: np.ndarray, spacing: np.ndarray | None) -> float:
    """Largest distance between two points (rows), O(m²) in blocks; integer points are scaled by ``spacing``."""
    best = 0.0
    step = max(1, (_CHUNK // 4) // max(len(points), 1))
    for a in range(0, len(points), step):
        diff = points[a : a + step, None, :] - points[None, :, :]
        if spacing is not None:
            diff = diff * spacing
        best = max(best, float((diff**2).sum(axis=2).max()))
    return float(np.sqrt(best))


def _extreme_candidates(points: np.ndarray) -> np.ndarray:
    """Indices of a superset of the extreme points of integer points (m, 2 or 3), exactly.

    The affine dimension is found in integer arithmetic (cross and dot products): a colinear set gives
    its two ends, a coplanar 3D set the hull of its projection onto the coordinate plane the plane maps
    onto one to one, a full set the vertices of its hull (Qhull on the integer coordinates: the extreme
    points of the scaled set are those of the unscaled one, and lattice points off a facet lie far
    beyond Qhull's rounding). Qhull failing falls back to all points.
    """
    from scipy.spatial import ConvexHull, QhullError

    diff = points - points[0]
    u = diff[int(np.argmax(np.abs(diff).sum(axis=1)))]
    if not u.any():
        return np.array([0])
    if points.shape[1] == 2:
        off_line = diff[:, 0] * u[1] - diff[:, 1] * u[0]
        plane = points
    else:
        cross = np.cross(diff, u)
        off_line = np.abs(cross).sum(axis=1)
        plane = None
    if not off_line.any():  # colinear: the two ends along u
        t = diff @ u
        return np.array([int(np.argmin(t)), int(np.argmax(t))])
    if plane is None:
        normal = np.cross(u, diff[int(np.argmax(off_line))])
        if not (diff @ normal).any():  # coplanar: project along the axis the plane is steepest to
            plane = np.delete(points, int(np.argmax(np.abs(normal))), axis=1)
        else:
            plane = points
    try:
        return ConvexHull(plane.astype(np.float64)).vertices
    except QhullError:  # pragma: no cover - exact integer dimension checks leave Qhull full-dimensional sets
        return np.arange(len(points))


def farthest_pair_distance(points: Any, spacing: Any = None) -> float:
    """Largest Euclidean distance between two of the points (rows), exactly, via the convex hull.

    Parameters
    ----------
    points : array_like, shape (m, 2) or (m, 3)
        Integer voxel coordinates (scaled by ``spacing``), or float coordinates (mm; ``spacing`` must
        then be ``None``).
    spacing : float or sequence of float, optional
        Voxel size in mm for integer points.

    Returns
    -------
    float
        NaN for no point, 0 for one.

    Notes
    -----
    The farthest pair of a set is a pair of its extreme points (vertices of its convex hull). Integer
    points: the candidates of an exact integer dimension test and Qhull, then all pairs among them, so
    degenerate sets (two points, colinear, coplanar) are exact too. Float points: brute force below
    2048 points, Qhull's vertices above (brute force when Qhull finds the set flat). Cost: O(m log h)
    for the hull and O(h²) for its h vertices (blocks of bounded memory).

    Examples
    --------
    >>> farthest_pair_distance([[0, 0, 0], [3, 4, 0], [1, 1, 0]])
    5.0
    >>> farthest_pair_distance([[0, 0], [1, 0], [0, 1]], spacing=(2.5, 1.0))
    2.692582403567252
    """
    pts = np.asarray(points)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3):
        raise ValueError(f"points must have shape (m, 2) or (m, 3), got {pts.shape}")
    if len(pts) == 0:
        return float("nan")
    if len(pts) == 1:
        return 0.0
    if np.issubdtype(pts.dtype, np.integer):
        checked = as_spacing(spacing, pts.shape[1])
        scale = None if checked is None else np.asarray(checked)
        pts = pts.astype(np.int64)
        return _brute_force(pts[_extreme_candidates(pts)], scale)
    if spacing is not None:
        raise ValueError("spacing applies to integer voxel coordinates only; give float points in mm")
    pts = pts.astype(np.float64)
    if not np.all(np.isfinite(pts)):
        raise ValueError("points must be finite")
    if len(pts) < current_engine().hull_from:  # few points: all pairs cost less than the hull
        return _brute_force(pts, None)
    from scipy.spatial import ConvexHull, QhullError

    try:
        return _brute_force(pts[ConvexHull(pts).vertices], None)
    except QhullError:
        return _brute_force(pts, None)


def dmax_mm(centroids: Any) -> float:
    """Dmax: the largest distance (mm) between the centroids of two lesions (Cottereau et al.).

    Parameters
    ----------
    centroids : array_like of float, shape (n, ndim)
        Lesion centroids in mm (:func:`centroids_mm`); NaN rows (empty labels) are left out.

    Returns
    -------
    float
        0 with one lesion, NaN with none.

    Examples
    --------
    >>> dmax_mm([[0.0, 0.0, 0.0], [30.0, 40.0, 0.0], [10.0, 0.0, 0.0]])
    50.0
    >>> dmax_mm(np.zeros((1, 3))), dmax_mm(np.zeros((0, 3)))
    (0.0, nan)
    """
    pts = np.asarray(centroids, dtype=np.float64)
    if pts.ndim != 2:
        raise ValueError(f"centroids must have shape (n, ndim), got {pts.shape}")
    pts = pts[~np.isnan(pts).any(axis=1)]
    return farthest_pair_distance(pts) if len(pts) else float("nan")


def extent_mm(mask: Any, spacing: Any = None) -> float:
    """The largest distance (mm) between the centres of two lesion voxels (the dissemination).

    Parameters
    ----------
    mask : array_like or Sites
        A binary mask or label map (every non-zero voxel counts, 2D or 3D), or the case's sites.
    spacing : float or sequence of float, optional
        Voxel size in mm (default 1 mm).

    Returns
    -------
    float
        0 with one voxel, NaN for an empty mask.

    Notes
    -----
    Only the first and last voxel of each image row (along the last axis) can be extreme points (the
    others lie between them), so the candidates come from the sorted voxel list (of each site) in O(N);
    of those, a row end is left out too where it lies on the segment joining the same ends of the rows just
    before and after it in the list, or between that segment and its row's other end (it is then no extreme
    point either). Then the exact farthest pair of :func:`farthest_pair_distance`. A 100,000-voxel ball takes
    a few milliseconds.

    Examples
    --------
    >>> m = np.zeros((4, 5, 6), bool)
    >>> m[0, 0, 0] = m[3, 4, 0] = m[1, 2, 3] = True
    >>> extent_mm(m, spacing=(2.0, 2.0, 1.0))  # (0, 0, 0) to (3, 4, 0): 6 and 8 mm apart
    10.0
    """
    if isinstance(mask, Sites):  # sorted site by site: a row may end at a site's boundary too (a superset)
        shape, flat = mask.shape, mask.flat_index
    else:
        arr = to_numpy(mask, "mask")
        check_ndim(arr, "mask")
        shape, flat = arr.shape, _nonzero_flat(arr)
    if len(flat) == 0:
        return float("nan")
    row = flat // shape[-1]
    change = np.concatenate(([True], row[1:] != row[:-1], [True]))
    if isinstance(mask, Sites):
        change[mask.starts[1:-1]] = True
    first = np.flatnonzero(change[:-1])  # the first and the last voxel of each segment of a row (of a site)
    last = np.flatnonzero(change[1:])
    keep = np.concatenate(_row_ends_kept(row[first], flat[first] % shape[-1], flat[last] % shape[-1], shape[-2]))
    ends = np.concatenate((flat[first], flat[last]))[keep]
    return farthest_pair_distance(coordinates(ends, shape), spacing)


def _row_ends_kept(row: np.ndarray, start: np.ndarray, stop: np.ndarray, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Which row ends may be extreme points: a test against the segments listed just before and after.

    ``row`` (the row index, z * height + y), ``start`` and ``stop`` (its first and last x) per row segment, in
    the order of the voxel list. Where the segments before and after lie on rows y - 1 and y + 1 of the same
    plane (voxels of the mask), a segment's start at x lies on or right of the chord between theirs when
    2 x >= x_before + x_after: then it lies between a point of that chord and the segment's stop (or on the
    chord), so it is no extreme point; the same to the left for the stop. A segment of one voxel stays unless
    it lies on a chord. Exact: only points that are not extreme are left out. O(segments).
    """
    n = len(row)
    before = np.zeros(n, dtype=bool)
    after = np.zeros(n, dtype=bool)
    before[1:] = (row[:-1] == row[1:] - 1) & (row[1:] % height != 0)
    after[:-1] = (row[1:] == row[:-1] + 1) & ((row[:-1] + 1) % height != 0)
    both = before & after
    if not both.any():
        return np.ones(n, dtype=bool), start != stop
    s_sum = np.zeros(n, dtype=np.int64)
    e_sum = np.zeros(n, dtype=np.int64)
    s_sum[1:-1] = start[:-2] + start[2:]
    e_sum[1:-1] = stop[:-2] + stop[2:]
    single = start == stop
    drop_start = both & ((2 * start > s_sum) & ~single | (2 * start == s_sum))
    drop_stop = both & ((2 * stop < e_sum) & ~single | (2 * stop == e_sum))
    return ~(drop_start | (single & drop_stop)), ~(drop_stop | single)
