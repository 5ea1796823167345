"""Surface (edge) voxels and surface-distance metrics, computed as MONAI 1.6 does.

MONAI's surface metrics take the edge voxels of each mask (the mask XOR its
binary erosion with the face-connected cross, voxels outside the image counted
as background), measure the Euclidean distance from every edge voxel of one
mask to the nearest edge voxel of the other (a KD-tree in float64, physical
when a spacing is given, stored as float32) and reduce those distances.  This
module does the same on sparse voxel lists, so a mask is never materialised:
the cost depends on the number of foreground voxels, not on the image size.
Large edge sets are measured with the k-d tree of :mod:`ccmetrics._kdtree`
(the same float64 distances as scipy's, fast also far from flat edge sets).
Edge tests look up each voxel's face neighbours in a label map
(:func:`face_edges`), in the input mask itself (:func:`mask_edges`), or in
the voxel list (:func:`own_face_edges`: binary searches over its runs, or a
small-integer map of its flat-index span when the list is dense there), so
no image-sized label map is needed.
"""

from __future__ import annotations

import math
import os
import platform
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy.spatial import cKDTree

#: surface-distance metrics computed from the two directed distance lists
SURFACE_METRICS = ("nsd", "hd", "hd95", "assd")


def face_edges(
    flat_index: np.ndarray,
    coords: np.ndarray,
    shape: Sequence[int],
    label_map: np.ndarray,
    labels: np.ndarray,
) -> Tuple[np.ndarray, np.ndarray]:
    """Find the edge voxels of labelled voxel sets.

    A voxel is an edge voxel of its set when one of its face neighbours (6 in 3D,
    4 in 2D) lies outside the image or outside the set: exactly MONAI's
    ``binary_erosion(mask) ^ mask``.

    Parameters
    ----------
    flat_index : ndarray of int64, shape (N,)
        Flat C-order indices of the voxels.
    coords : ndarray of int, shape (N, ndim)
        Their coordinates.
    shape : sequence of int
        Image shape.
    label_map : ndarray, flat, size prod(shape)
        Set label of every voxel of the image (0 outside all sets).
    labels : ndarray, shape (N,)
        Set label of each of the N voxels (non-zero).

    Returns
    -------
    own_edge : ndarray of bool, shape (N,)
        Edge voxels of each voxel's own set (a neighbour of another set counts as background).
    union_edge : ndarray of bool, shape (N,)
        Edge voxels of the union of all sets.
    """
    own_inner = np.ones(flat_index.shape, dtype=bool)
    union_inner = np.ones(flat_index.shape, dtype=bool)
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    for axis, (size, stride) in enumerate(zip(shape, strides)):
        for step in (-1, 1):
            inside = (coords[:, axis] + step >= 0) & (coords[:, axis] + step < size)
            neighbour = np.where(inside, flat_index + step * int(stride), 0)
            nb_label = label_map[neighbour]
            own_inner &= inside & (nb_label == labels)
            union_inner &= inside & (nb_label != 0)
    return ~own_inner, ~union_inner


def mask_edges(flat_index: np.ndarray, shape: Sequence[int], mask_flat: np.ndarray) -> np.ndarray:
    """Edge voxels of a whole mask from its voxel list, without coordinates.

    The ``union_edge`` of :func:`face_edges` with the mask itself as the label map: a
    voxel is an edge when a face neighbour lies outside the image or outside the mask.
    Each axis' coordinate is derived from the flat index in turn, so the only arrays
    are a few of N entries (no (N, ndim) coordinate array).

    Parameters
    ----------
    flat_index : ndarray of int64, shape (N,)
        Flat C-order indices of the mask's voxels.
    shape : sequence of int
        Image shape.
    mask_flat : ndarray, flat, size prod(shape)
        The mask (non-zero inside).
    """
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    if len(flat_index) >= _KERNELS_FROM and mask_flat.dtype == bool:
        from . import _edge_kernels  # numba: imported for long lists only

        edge = np.empty(len(flat_index), dtype=bool)
        _edge_kernels.mask_edges(np.asarray(flat_index, np.int64), np.asarray(shape, np.int64),
                                 strides.astype(np.int64), mask_flat.view(np.uint8), edge)
        return edge
    inner = np.ones(flat_index.shape, dtype=bool)
    for axis, (size, stride) in enumerate(zip(shape, strides)):
        coord = flat_index // int(stride)
        if axis:
            coord %= size
        for step in (-1, 1):
            inside = coord >= 1 if step < 0 else coord < size - 1
            neighbour = np.where(inside, flat_index + step * int(stride), 0)
            inner &= inside & (mask_flat[neighbour] != 0)
    return ~inner


#: a voxel list whose flat-index span holds at most this many voxels per listed voxel gets a span label map
_DENSE_BOX = 8
#: from this many voxels, the edge tests run as numba kernels (:mod:`ccmetrics._edge_kernels`, both cores)
_KERNELS_FROM = 1 << 18


def own_face_edges(
    flat_index: np.ndarray,
    shape: Sequence[int],
    labels: np.ndarray,
    union_edge: np.ndarray,
    runs,
) -> np.ndarray:
    """The own-set edges of :func:`face_edges` for labelled subsets of a mask, without an image-sized label map.

    Parameters
    ----------
    flat_index : ndarray of int64, shape (N,)
        Sorted flat indices of all voxels of the mask.
    shape : sequence of int
        Image shape.
    labels : ndarray of int, shape (N,)
        Set label (>= 0) of each voxel.
    union_edge : ndarray of bool, shape (N,)
        Edge voxels of the whole mask (``face_edges(flat_index, coords, shape, mask, True)[1]``:
        the mask itself serves as the label map).
    runs : ccmetrics.components.Runs
        ``Runs(flat_index, shape)``.

    Returns
    -------
    own_edge : ndarray of bool, shape (N,)
        As :func:`face_edges` with a label map holding ``labels`` at ``flat_index``.

    Notes
    -----
    A union edge is an edge of its own set. Every face neighbour of the other
    voxels is in the list, and such a voxel is an edge of its own set when one
    of those neighbours has another label. The neighbours' labels come from a
    label map of the flat-index span of the list (first to last voxel) when the
    list fills at least 1/8 of it (memory: at most 8 small integers per voxel
    of the list), otherwise from the list itself: along the last axis the next
    or previous entry, along the others a binary search over the runs
    (:meth:`~ccmetrics.components.Runs.locate`).
    """
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    if len(flat_index):
        first, span = int(flat_index[0]), int(flat_index[-1] - flat_index[0]) + 1
        if len(flat_index) >= _KERNELS_FROM and span <= _DENSE_BOX * len(flat_index):
            from . import _edge_kernels  # numba: imported for long lists only

            own_edge = np.empty(len(flat_index), dtype=bool)
            _edge_kernels.own_edges_in_span(np.asarray(flat_index, np.int64), np.asarray(labels, np.int32),
                                            union_edge, first, span, strides.astype(np.int64), own_edge)
            return own_edge
    own_edge = union_edge.copy()
    interior = np.flatnonzero(~union_edge)
    if len(interior) == 0 or np.all(labels == labels[0]):
        return own_edge
    mine = labels[interior]
    flat = flat_index[interior]
    differs = np.zeros(len(interior), dtype=bool)
    if span <= _DENSE_BOX * len(flat_index):
        label_map = np.zeros(span, dtype=np.min_scalar_type(int(labels.max())))
        label_map[flat_index - first] = labels
        at = flat - first
        for stride in strides:  # interior voxels: every face neighbour is in the list, so in the span
            differs |= label_map[at - int(stride)] != mine
            differs |= label_map[at + int(stride)] != mine
    else:
        for axis, stride in enumerate(strides):
            for step in (-1, 1):
                if axis == len(shape) - 1:
                    neighbour = interior + step
                else:
                    neighbour = runs.locate(flat + step * int(stride))
                differs |= labels[neighbour] != mine
    own_edge[interior] = differs
    return own_edge


def physical(coords: np.ndarray, spacing: Optional[Sequence[float]]) -> np.ndarray:
    """Voxel coordinates (N, ndim) as float64 points, scaled by ``spacing`` when given."""
    points = coords.astype(np.float64)
    if spacing is not None:
        points *= np.asarray(spacing, dtype=np.float64)
    return points


def directed_distances(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Distance from each source point to the nearest target point, as float32.

    Both arguments are float64 point arrays of shape (N, ndim).  Like MONAI, an
    empty target gives ``inf`` for every source point.  From ``_OWN_TREE_FROM``
    points in all, the k-d tree of :mod:`ccmetrics._kdtree` (tight node boxes:
    fast also for points far from a flat edge set, and both kernels release
    the GIL) gives the same float64 distances as scipy's tree, which serves
    smaller inputs and machines where the two do not agree bit for bit.
    """
    if len(target) == 0:
        return np.full(len(source), np.inf, dtype=np.float32)
    if len(source) == 0:
        return np.zeros(0, dtype=np.float32)
    if _own_tree(len(source) + len(target)):
        from ._kdtree import nearest_distances

        return nearest_distances(source, target).astype(np.float32)
    # faster to build than MONAI's balanced tree; both give the rounded minimum (see ccmetrics._kdtree for the
    # contrived ulp-scale sets where scipy's pruning can miss it by one float64 ulp)
    tree = cKDTree(target, leafsize=32, balanced_tree=False, compact_nodes=False)
    return tree.query(source, k=1)[0].astype(np.float32)


#: points (source and target together) from which distances come from :mod:`ccmetrics._kdtree` (numba) ...
_OWN_TREE_FROM = 1 << 15
#: ... once numba is loaded (large images load it for other kernels), or from this many without (its first
#: import and kernel load take about 0.5 s, more than scipy's tree costs below this size)
_OWN_TREE_IMPORT_FROM = 1 << 18


def _own_tree(points: int) -> bool:
    if points < _OWN_TREE_FROM or (points < _OWN_TREE_IMPORT_FROM and "numba" not in sys.modules):
        return False
    from ._kdtree import matches_scipy  # numba: imported on first use

    return matches_scipy()


def grouped_directed_distances(source: np.ndarray, source_group: np.ndarray, target: np.ndarray,
                               target_group: np.ndarray, span: float, workers: int = 1) -> np.ndarray:
    """:func:`directed_distances` within groups: each source point to the nearest target point of its group.

    One KD-tree serves all groups: every point gets one more coordinate, its group number times a gap
    wider than twice ``span`` (an upper bound of every distance within a group, e.g. the image diagonal),
    and the search is bounded by ``span``, so a point never reaches another group and a group without
    target points gives ``inf`` (as MONAI and :func:`directed_distances` do). Within a group the extra
    coordinates differ by exactly 0, which cKDTree adds to the sum of squares without changing a bit:
    the distances equal those of one tree per group. Cost: one tree and one query for all groups instead
    of one per group (3000 nuclei: about 30x faster); ``workers`` threads share the query.

    Examples
    --------
    >>> import numpy as np
    >>> src = np.array([[0.0, 0.0], [0.0, 0.0]])
    >>> tgt = np.array([[3.0, 4.0], [0.0, 1.0]])
    >>> grouped_directed_distances(src, np.array([1, 2]), tgt, np.array([1, 3]), span=10.0)
    array([ 5., inf], dtype=float32)
    """
    if len(source) == 0:
        return np.zeros(0, dtype=np.float32)
    if len(target) == 0:
        return np.full(len(source), np.inf, dtype=np.float32)
    bound = float(span) * (1 + 1e-6) + 1e-6
    gap = 2 * bound + 1
    points = np.column_stack([target, np.asarray(target_group, np.float64) * gap])
    query = np.column_stack([source, np.asarray(source_group, np.float64) * gap])
    if _own_tree(len(source) + len(target)):
        from ._kdtree import nearest_distances

        return nearest_distances(query, points, bound, workers).astype(np.float32)
    tree = cKDTree(points, leafsize=32, balanced_tree=False, compact_nodes=False)
    return tree.query(query, k=1, distance_upper_bound=bound, workers=workers)[0].astype(np.float32)


def lerp_uses_fma() -> bool:
    """Whether ``torch.lerp`` on this CPU rounds as one fused multiply-add (FMA), as torch's dispatch decides.

    torch compiles its CPU kernels once per instruction set and picks one at run time: the AVX2 and
    AVX512 kernels (x86-64 CPUs with AVX2 and FMA) contract ``a + w * (b - a)`` into one FMA, rounded
    once; the baseline x86-64 kernel (``ATEN_CPU_CAPABILITY=default``, or a CPU without AVX2) rounds the
    product and the sum separately. The choice follows torch where it is imported already, otherwise
    ``ATEN_CPU_CAPABILITY`` and the CPU's features as numpy reports them, without importing torch.
    On ARM64, where FMA is baseline, FMA is assumed (not tested here).
    """
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "backends"):
        capability = torch.backends.cpu.get_cpu_capability().upper()
        if capability in ("AVX2", "AVX512"):
            return True
        if capability in ("DEFAULT", "NO AVX"):
            return platform.machine().lower() in ("aarch64", "arm64")
    requested = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if platform.machine().lower() in ("aarch64", "arm64"):
        return True
    if requested == "default":
        return False
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as features
    return bool(features.get("AVX2") and features.get("FMA3"))


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` of float32 arrays rounded once to float32 (an exact emulation of ``fmaf``).

    The product of two float32 is exact in float64; the float64 sum is corrected with its exact error
    (TwoSum), which decides the rounding where the float64 sum lies exactly halfway between two float32.
    """
    a64, b64, c64 = (np.asarray(x, np.float64) for x in (a, b, c))
    p = a64 * b64
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c64
        t = s - p
        err = (p - (s - t)) + (c64 - t)
        r = s.astype(np.float32)
        up, down = np.nextafter(r, np.float32(np.inf)), np.nextafter(r, np.float32(-np.inf))
        r64 = r.astype(np.float64)
        r = np.where((s == (r64 + up.astype(np.float64)) / 2) & (err > 0), up, r)
        r = np.where((s == (r64 + down.astype(np.float64)) / 2) & (err < 0), down, r)
    return r.astype(np.float32)


def torch_lerp(start: np.ndarray, end: np.ndarray, weight: np.ndarray, fma: Optional[bool] = None) -> np.ndarray:
    """``torch.lerp(start, end, weight)`` on float32 arrays, bit for bit.

    torch's formula: ``start + weight * (end - start)`` for ``weight < 0.5``, else
    ``end - (end - start) * (1 - weight)``, each either as one FMA or rounded twice
    (:func:`lerp_uses_fma`; pass ``fma`` to choose).
    """
    start, end, weight = (np.asarray(x, np.float32) for x in (start, end, weight))
    fma = lerp_uses_fma() if fma is None else fma
    with np.errstate(invalid="ignore", over="ignore"):
        diff = (end - start).astype(np.float32)
        rest = (np.float32(1) - weight).astype(np.float32)
        small = weight < np.float32(0.5)
        if fma:
            out = np.where(small, _fma32(weight, diff, start), _fma32(-diff, rest, end))
            plain = np.where(small, start + weight * diff, end - diff * rest)
            out = np.where(np.isfinite(out) | ~np.isfinite(plain), out, plain)  # inf operands: as rounded twice
        else:
            out = np.where(small, start + weight * diff, end - diff * rest)
    return out.astype(np.float32)


def torch_quantile(values: np.ndarray, q: float) -> float:
    """Linear-interpolation quantile computed bit for bit as ``torch.quantile`` on float32.

    torch forms the rank in float32, takes floor and ceil neighbours of the
    sorted values and interpolates with ``torch.lerp`` (:func:`torch_lerp`: one
    FMA or two roundings, as torch's CPU dispatch does on this machine).
    Any ``inf`` neighbour pair gives ``nan`` (inf - inf), as in MONAI.

    >>> import math
    >>> v = np.array([1.0] * 8 + [math.sqrt(29)], np.float32)
    >>> torch_quantile(v, 0.95) in (3.631098508834839, 3.6310982704162598)  # with / without FMA
    True
    """
    ordered = np.sort(values.astype(np.float32, copy=False))
    below, above, weight = quantile_rank(np.array([len(ordered)]), q)
    return float(torch_lerp(ordered[below[0]], ordered[above[0]], weight[0]))


def quantile_rank(counts: np.ndarray, q: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torch.quantile's neighbours and weight for sorted lists of ``counts`` values (float32 rank, as torch).

    Returns the positions below and above the rank (int64) and the interpolation weight (float32), for
    :func:`torch_lerp`; one home for :func:`torch_quantile` and its vectorised uses.
    """
    rank = np.float32(q) * (np.asarray(counts) - 1).astype(np.float32)
    below = np.floor(rank).astype(np.int64)
    above = np.ceil(rank).astype(np.int64)
    return below, above, (rank - below.astype(np.float32)).astype(np.float32)


def surface_scores(
    pred_to_gt: np.ndarray,
    gt_to_pred: np.ndarray,
    metrics: Sequence[str],
    tolerance: float,
) -> Dict[str, float]:
    """Reduce the two directed distance lists to surface metrics, as MONAI does.

    Parameters
    ----------
    pred_to_gt, gt_to_pred : ndarray of float32
        Distances from each prediction edge voxel to the GT edges and back
        (voxels or mm).
    metrics : sequence of str
        Any of ``"nsd"``, ``"hd"``, ``"hd95"``, ``"assd"``.
    tolerance : float
        NSD tolerance, in the units of the distances.

    Returns
    -------
    dict
        ``nsd``: share of edge voxels within ``tolerance`` of the other surface;
        ``hd``: maximum of both directions; ``hd95``: maximum of the two
        directed 95th percentiles; ``assd``: mean of all distances.  When one
        mask is empty all distances are ``inf`` (MONAI gives ``nan`` for HD95
        there; we give ``inf``) and NSD is 0.  Both masks empty: distances 0,
        NSD 1.
    """
    out: Dict[str, float] = {}
    n = len(pred_to_gt) + len(gt_to_pred)
    one_side_empty = len(pred_to_gt) == 0 or len(gt_to_pred) == 0
    for name in metrics:
        if n == 0:
            out[name] = 1.0 if name == "nsd" else 0.0
        elif name == "nsd":
            tau = np.float32(tolerance)
            out[name] = float(np.count_nonzero(pred_to_gt <= tau) + np.count_nonzero(gt_to_pred <= tau)) / n
        elif one_side_empty:
            out[name] = math.inf
        elif name == "hd":
            out[name] = float(max(pred_to_gt.max(), gt_to_pred.max()))
        elif name == "hd95":
            out[name] = max(torch_quantile(pred_to_gt, 0.95), torch_quantile(gt_to_pred, 0.95))
        elif name == "assd":
            out[name] = float(np.concatenate([pred_to_gt, gt_to_pred]).mean(dtype=np.float64))
        else:
            raise ValueError(f"unknown surface metric {name!r}; expected one of {SURFACE_METRICS}")
    return out


def grouped_surface_scores(
    pred_to_gt: np.ndarray,
    pred_bounds: np.ndarray,
    gt_to_pred: np.ndarray,
    gt_bounds: np.ndarray,
    metrics: Sequence[str],
    tolerance: float,
) -> List[Dict[str, float]]:
    """:func:`surface_scores` of many components at once, with the same values bit for bit.

    Component ``i`` owns ``pred_to_gt[pred_bounds[i]:pred_bounds[i + 1]]`` and
    ``gt_to_pred[gt_bounds[i]:gt_bounds[i + 1]]``. NSD counts come from running sums, HD and
    HD95 from one sort of all distances by (component, distance), the 95th percentiles of all
    components through one vectorised :func:`torch_lerp` (the float32 operations of
    :func:`torch_quantile`, element by element); ASSD, a float64 mean whose summation order
    numpy fixes per array, stays per component.

    Examples
    --------
    >>> d = np.array([1.0, 2.0, 3.0], np.float32)
    >>> grouped_surface_scores(d, np.array([0, 2, 3]), d[:1], np.array([0, 1, 1]), ["hd"], 1.0)
    [{'hd': 2.0}, {'hd': inf}]
    """
    pred_bounds, gt_bounds = np.asarray(pred_bounds, np.int64), np.asarray(gt_bounds, np.int64)
    n_p, n_g = np.diff(pred_bounds), np.diff(gt_bounds)
    k = len(n_p)
    n = n_p + n_g
    none, one_side_empty = n == 0, (n_p == 0) | (n_g == 0)
    columns: Dict[str, List[float]] = {}
    sorted_p = sorted_g = None
    if any(name in ("hd", "hd95") for name in metrics):
        sorted_p = _sort_within(pred_to_gt, n_p)
        sorted_g = _sort_within(gt_to_pred, n_g)
    for name in metrics:
        if name == "nsd":
            tau = np.float32(tolerance)
            within = _group_sums(pred_to_gt <= tau, pred_bounds) + _group_sums(gt_to_pred <= tau, gt_bounds)
            value = np.where(none, 1.0, within / np.maximum(n, 1))
        elif name == "hd":
            last_p = sorted_p[np.maximum(pred_bounds[1:] - 1, 0)] if len(sorted_p) else np.zeros(k, np.float32)
            last_g = sorted_g[np.maximum(gt_bounds[1:] - 1, 0)] if len(sorted_g) else np.zeros(k, np.float32)
            value = np.where(last_g > last_p, last_g, last_p).astype(np.float64)
        elif name == "hd95":
            q_p = _group_quantiles(sorted_p, pred_bounds, 0.95)
            q_g = _group_quantiles(sorted_g, gt_bounds, 0.95)
            value = np.where(q_g > q_p, q_g, q_p).astype(np.float64)  # Python's max(q_p, q_g), nan included
        elif name == "assd":
            value = np.array([float(np.concatenate([pred_to_gt[pred_bounds[i]:pred_bounds[i + 1]],
                                                    gt_to_pred[gt_bounds[i]:gt_bounds[i + 1]]]).mean(dtype=np.float64))
                              if not one_side_empty[i] else 0.0 for i in range(k)])
        else:
            raise ValueError(f"unknown surface metric {name!r}; expected one of {SURFACE_METRICS}")
        if name != "nsd":
            value = np.where(none, 0.0, np.where(one_side_empty, math.inf, value))
        columns[name] = value.tolist()
    return [{name: columns[name][i] for name in metrics} for i in range(k)]


def _group_sums(flags: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    running = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
    return running[bounds[1:]] - running[bounds[:-1]]


def _sort_within(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``values`` sorted within each consecutive group of ``counts`` entries (one sort per group)."""
    out = np.empty_like(values)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if stop - start:
            out[start:stop] = np.sort(values[start:stop])
    return out


def _group_quantiles(ordered: np.ndarray, bounds: np.ndarray, q: float) -> np.ndarray:
    """:func:`torch_quantile` of every non-empty group of the group-sorted ``ordered`` (0 for empty ones)."""
    size = np.diff(bounds)
    out = np.zeros(len(size), dtype=np.float32)
    full = size > 0
    if not full.any():
        return out
    below, above, weight = quantile_rank(size[full], q)
    start = bounds[:-1][full]
    out[full] = torch_lerp(ordered[start + below], ordered[start + above], weight)
    return out
