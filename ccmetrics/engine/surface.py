"""Surface (edge) voxels and surface-distance metrics, computed as MONAI 1.6 does.

MONAI's surface metrics take the edge voxels of each mask (the mask XOR its
binary erosion with the face-connected cross, voxels outside the image counted
as background), measure the Euclidean distance from every edge voxel of one
mask to the nearest edge voxel of the other (a KD-tree in float64, physical
when a spacing is given, stored as float32) and reduce those distances.  This
module does the same on sparse voxel lists, so a mask is never materialised:
the cost depends on the number of foreground voxels, not on the image size.
Large edge sets are measured with the k-d tree of ``ccmetrics.engine._kdtree``
(the same float64 distances as scipy's, fast also far from flat edge sets).
Edge tests look up each voxel's face neighbours in a label map
(:func:`face_edges`), in the input mask itself (:func:`mask_edges`), or in
the voxel list (:func:`own_face_edges`: binary searches over its runs, or a
small-integer map of its flat-index span when the list is dense there), so
no image-sized label map is needed.

The reductions (NSD, HD, HD95, ASSD: :data:`SURFACE_REDUCTIONS`) work on the
distance lists of many regions at once (:class:`GroupedDistances`); one image
is the one-group case. HD95 uses torch's float32 quantile arithmetic
(:mod:`ccmetrics.engine.torch_emulation`). Which engine measures the distances (scipy's
or ccmetrics' own k-d tree, numpy or numba edge tests) follows the thresholds of
:class:`ccmetrics.EngineConfig`; the values do not depend on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike

from .._deprecation import deprecated
from ._launch import pays
from .config import current
from .torch_emulation import quantile_rank, torch_lerp

__all__ = [
    "GroupedDistances",
    "SURFACE_REDUCTIONS",
    "SurfaceReduction",
    "directed_distances",
    "empty_rule",
    "face_edges",
    "grouped_directed_distances",
    "grouped_surface_scores",
    "mask_edges",
    "nearest_points",
    "own_face_edges",
    "physical",
    "surface_scores",
]


def face_edges(
    flat_index: np.ndarray,
    coords: np.ndarray,
    shape: Sequence[int],
    label_map: np.ndarray,
    labels: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
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
    are a few of N entries (no (N, ndim) coordinate array). Boolean masks from ``loaded_kernels_from``
    voxels once the kernel is loaded (``kernels_from`` before, ``compile_edges_from`` before numba's cache
    holds it: :class:`ccmetrics.EngineConfig`, :func:`ccmetrics.engine.kernels.pays`) are tested by the numba
    kernel of ``ccmetrics.engine._edge_kernels`` instead (same values).

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
    config = current()
    loaded_from = min(config.loaded_kernels_from, config.kernels_from)
    if mask_flat.dtype == bool and pays(
        "_edge_kernels", len(flat_index), loaded_from, config.kernels_from, config.compile_edges_from
    ):
        from . import _edge_kernels

        edge = np.empty(len(flat_index), dtype=bool)
        _edge_kernels.mask_edges(
            np.asarray(flat_index, np.int64),
            np.asarray(shape, np.int64),
            strides.astype(np.int64),
            mask_flat.view(np.uint8),
            edge,
        )
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
    runs : ccmetrics.engine.components.Runs
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
    (:meth:`~ccmetrics.engine.components.Runs.locate`) for each segment of consecutive voxels.
    """
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    config = current()
    if len(flat_index):
        first, span = int(flat_index[0]), int(flat_index[-1] - flat_index[0]) + 1
        if span <= config.span_map_ratio * len(flat_index) and pays(
            "_edge_kernels", len(flat_index), config.kernels_from, config.kernels_from, config.compile_edges_from
        ):
            from . import _edge_kernels

            own_edge = np.empty(len(flat_index), dtype=bool)
            _edge_kernels.own_edges_in_span(
                np.asarray(flat_index, np.int64),
                np.asarray(labels, np.int32),
                union_edge,
                first,
                span,
                strides.astype(np.int64),
                own_edge,
            )
            return own_edge
    own_edge = union_edge.copy()
    interior = np.flatnonzero(~union_edge)
    if len(interior) == 0 or np.all(labels == labels[0]):
        return own_edge
    mine = labels[interior]
    flat = flat_index[interior]
    differs = np.zeros(len(interior), dtype=bool)
    if span <= config.span_map_ratio * len(flat_index):
        label_map = np.zeros(span, dtype=np.min_scalar_type(int(labels.max())))
        label_map[flat_index - first] = labels
        at = flat - first
        for stride in strides:  # interior voxels: every face neighbour is in the list, so in the span
            differs |= label_map[at - int(stride)] != mine
            differs |= label_map[at + int(stride)] != mine
    else:
        # consecutive interior voxels lie on one row (a voxel on the image's border is an edge), and so do their
        # neighbours one row over, all in the list: one binary search per such segment, not one per voxel
        starts = np.flatnonzero(np.diff(flat, prepend=flat[0] - 2) != 1)
        lengths = np.diff(np.append(starts, len(flat)))
        offset = np.arange(len(flat)) - np.repeat(starts, lengths)
        for axis, stride in enumerate(strides):
            for step in (-1, 1):
                if axis == len(shape) - 1:
                    neighbour = interior + step
                else:
                    neighbour = np.repeat(runs.locate(flat[starts] + step * int(stride)), lengths) + offset
                differs |= labels[neighbour] != mine
    own_edge[interior] = differs
    return own_edge


def physical(coords: np.ndarray, spacing: Sequence[float] | None) -> np.ndarray:
    """Voxel coordinates (N, ndim) as float64 points, scaled by ``spacing`` when given."""
    points = coords.astype(np.float64)
    if spacing is not None:
        points *= np.asarray(spacing, dtype=np.float64)
    return points


def directed_distances(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Distance from each source point to the nearest target point, as float32.

    Both arguments are float64 point arrays of shape (N, ndim).  Like MONAI, an
    empty target gives ``inf`` for every source point.  From ``own_tree_from``
    points in all once its kernels are loaded (``own_tree_import_from`` or ``compile_tree_from`` before:
    :class:`ccmetrics.EngineConfig`), the k-d tree of ``ccmetrics.engine._kdtree`` (tight node boxes:
    fast also for points far from a flat edge set, and both kernels release
    the GIL) gives the same float64 distances as scipy's tree, which serves
    smaller inputs and machines where the two do not agree bit for bit.
    """
    return _nearest(source, target, with_index=False)[0]


def nearest_points(source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`directed_distances` and, for each source point, a target point at that distance.

    Returns
    -------
    distance : ndarray of float32, shape (N,)
        The values :func:`directed_distances` gives.
    index : ndarray of int64, shape (N,)
        Row of ``target`` at the minimum (``len(target)`` for an empty target). Callers use it to reuse a
        distance over a subset of the target that holds that row: the minimum over the subset is then the
        same value, bit for bit, where the trees return the exact minimum (``ccmetrics.engine._kdtree``:
        always for its own tree, on voxel lattices for scipy's).

    Examples
    --------
    >>> import numpy as np
    >>> nearest_points(np.array([[0.0, 0.0], [9.0, 9.0]]), np.array([[3.0, 4.0], [9.0, 8.0]]))
    (array([5., 1.], dtype=float32), array([0, 1]))
    """
    distance, index = _nearest(source, target, with_index=True)
    assert index is not None
    return distance, index


def _nearest(source: np.ndarray, target: np.ndarray, with_index: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`directed_distances` and, ``with_index``, :func:`nearest_points`' rows (else None where the tree
    would have to map them: this module's)."""
    if len(target) == 0:
        return np.full(len(source), np.inf, dtype=np.float32), np.zeros(len(source), dtype=np.int64)
    if len(source) == 0:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
    if _own_tree(len(source) + len(target)):
        from . import _kdtree

        if with_index:
            distance, index = _kdtree.nearest_points(source, target)
            return distance.astype(np.float32), index
        return _kdtree.nearest_distances(source, target).astype(np.float32), None
    # faster to build than MONAI's balanced tree; both give the rounded minimum (see ccmetrics.engine._kdtree for the
    # contrived ulp-scale sets where scipy's pruning can miss it by one float64 ulp)
    from scipy.spatial import cKDTree  # on first use: the process that only schedules cases never loads it

    tree = cKDTree(target, leafsize=32, balanced_tree=False, compact_nodes=False)
    distance, index = tree.query(source, k=1)
    return distance.astype(np.float32), index.astype(np.int64, copy=False)


def _own_tree(points: int) -> bool:
    """Whether ``ccmetrics.engine._kdtree`` measures ``points`` points (``own_tree_from``,
    ``own_tree_import_from`` and ``compile_tree_from`` of :class:`ccmetrics.EngineConfig` through
    :func:`ccmetrics.engine.kernels.pays`, and the per-process agreement probe).

    Before the tree's kernels are loaded, a call from ``own_tree_from`` points loads them when it has
    ``own_tree_import_from`` points (``compile_tree_from`` while numba's cache does not hold them), or when the
    calls of this process that scipy's tree served from ``own_tree_from`` points have reached that many together:
    a process evaluating many large cases (a data set, a notebook, a benchmark's warm calls) then pays the load once
    and measures 2-3 times faster from then on (issue 44, point 3), while one evaluation of a case with few edge
    voxels still never loads numba. The values are the same with either tree."""
    config = current()
    if not pays("_kdtree", points, config.own_tree_from, config.own_tree_import_from, config.compile_tree_from):
        return False
    from ._kdtree import matches_scipy  # numba: imported on first use

    return matches_scipy()


def grouped_directed_distances(
    source: np.ndarray,
    source_group: np.ndarray,
    target: np.ndarray,
    target_group: np.ndarray,
    span: float,
    workers: int = 1,
) -> np.ndarray:
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
    from scipy.spatial import cKDTree

    tree = cKDTree(points, leafsize=32, balanced_tree=False, compact_nodes=False)
    return tree.query(query, k=1, distance_upper_bound=bound, workers=workers)[0].astype(np.float32)


class GroupedDistances:
    """The two directed edge-distance lists of K groups (regions), and the work their reductions share.

    Group ``i`` owns ``pred_to_gt[pred_bounds[i]:pred_bounds[i + 1]]`` (distances from its prediction
    edge voxels to its GT edge voxels) and ``gt_to_pred[gt_bounds[i]:gt_bounds[i + 1]]`` (back). Each
    list is sorted within its groups once, on first use (HD95 needs it), so that several metrics
    reduce the same lists without repeating work (DeepMind surface-distance's compute once, reduce
    many).

    Examples
    --------
    >>> d = np.array([1.0, 2.0, 3.0], np.float32)
    >>> groups = GroupedDistances(d, [0, 2, 3], d[:1], [0, 1, 1])
    >>> len(groups), groups.n_pred.tolist(), groups.n_gt.tolist()
    (2, [2, 1], [1, 0])
    >>> SURFACE_REDUCTIONS["hd"](groups, 1.0).tolist()  # the second group has no GT edge: inf
    [2.0, inf]
    """

    def __init__(self, pred_to_gt: np.ndarray, pred_bounds: ArrayLike, gt_to_pred: np.ndarray, gt_bounds: ArrayLike):
        self.pred_to_gt, self.gt_to_pred = pred_to_gt, gt_to_pred
        self.pred_bounds, self.gt_bounds = np.asarray(pred_bounds, np.int64), np.asarray(gt_bounds, np.int64)
        self.n_pred, self.n_gt = np.diff(self.pred_bounds), np.diff(self.gt_bounds)
        self._sorted: dict[str, np.ndarray] = {}

    @classmethod
    def single(cls, pred_to_gt: np.ndarray, gt_to_pred: np.ndarray) -> GroupedDistances:
        """One group holding both whole lists."""
        return cls(pred_to_gt, [0, len(pred_to_gt)], gt_to_pred, [0, len(gt_to_pred)])

    def __len__(self) -> int:
        return len(self.n_pred)

    def sorted(self, side: str) -> np.ndarray:
        """``"pred"`` (prediction -> GT) or ``"gt"`` distances sorted within each group (computed once)."""
        if side not in self._sorted:
            values, bounds = (
                (self.pred_to_gt, self.pred_bounds) if side == "pred" else (self.gt_to_pred, self.gt_bounds)
            )
            self._sorted[side] = _sort_within(values, bounds)
        return self._sorted[side]


def empty_rule(
    values: np.ndarray, n_pred: np.ndarray, n_gt: np.ndarray, both_empty: float, one_empty: float | None
) -> np.ndarray:
    """The one home of the surface metrics' empty-set rule: ``values`` where both edge sets are non-empty.

    A group with no edge voxel on either side (both masks empty in the region) gets ``both_empty``
    (the metric's best value); a group with exactly one empty side gets ``one_empty`` (distances:
    inf, where MONAI gives NaN for HD95, so that a missed lesion always has an infinite distance),
    or keeps its formula's value when ``one_empty`` is None (NSD: the other side's distances to an
    empty set are all inf, so none is within the tolerance and NSD is 0). ``n_pred``, ``n_gt``: the
    edge voxels of each group's prediction and GT. Returns float64.

    >>> empty_rule(np.array([2.0, 5.0, 7.0]), np.array([3, 0, 0]), np.array([4, 2, 0]), 0.0, np.inf).tolist()
    [2.0, inf, 0.0]
    """
    n_pred, n_gt = np.asarray(n_pred), np.asarray(n_gt)
    none = (n_pred == 0) & (n_gt == 0)
    if one_empty is not None:
        one_side = ((n_pred == 0) | (n_gt == 0)) & ~none
        values = np.where(one_side, one_empty, values)
    return np.where(none, both_empty, values).astype(np.float64)


def _nsd(groups: GroupedDistances, tolerance: float) -> np.ndarray:
    """Share of the edge voxels of both masks within ``tolerance`` of the other mask's edge (running sums)."""
    tau = np.float32(tolerance)
    within = _group_sums(groups.pred_to_gt <= tau, groups.pred_bounds) + _group_sums(
        groups.gt_to_pred <= tau, groups.gt_bounds
    )
    return within / np.maximum(groups.n_pred + groups.n_gt, 1)


def _hd(groups: GroupedDistances, tolerance: float) -> np.ndarray:
    """The larger of the two directed maxima."""
    p = _group_max(groups.pred_to_gt, groups.pred_bounds)
    g = _group_max(groups.gt_to_pred, groups.gt_bounds)
    return np.where(g > p, g, p)


def _hd95(groups: GroupedDistances, tolerance: float) -> np.ndarray:
    """The larger of the two directed 95th percentiles (torch.quantile's float32 arithmetic, bit for bit)."""
    q_p = _group_quantiles(groups.sorted("pred"), groups.pred_bounds, 0.95)
    q_g = _group_quantiles(groups.sorted("gt"), groups.gt_bounds, 0.95)
    return np.where(q_g > q_p, q_g, q_p)  # Python's max(q_p, q_g), nan included


def _assd(groups: GroupedDistances, tolerance: float) -> np.ndarray:
    """The mean of all distances of both directions (a float64 mean per group, numpy's summation order)."""
    out = np.zeros(len(groups))
    p, g, pb, gb = groups.pred_to_gt, groups.gt_to_pred, groups.pred_bounds, groups.gt_bounds
    for i in np.flatnonzero((groups.n_pred > 0) & (groups.n_gt > 0)).tolist():
        out[i] = float(np.concatenate([p[pb[i] : pb[i + 1]], g[gb[i] : gb[i + 1]]]).mean(dtype=np.float64))
    return out


@dataclass(frozen=True)
class SurfaceReduction:
    """How one surface metric reduces the distance lists of every group, with its empty-set values.

    ``reduce(groups, tolerance)`` gives one value per group where both edge sets are non-empty;
    Calling it applies :func:`empty_rule` with ``both_empty`` (the best
    value) and ``one_empty`` (None: the formula's value).
    """

    reduce: Callable[[GroupedDistances, float], np.ndarray]
    both_empty: float
    one_empty: float | None

    def __call__(self, groups: GroupedDistances, tolerance: float) -> np.ndarray:
        return self.finish(self.reduce(groups, tolerance), groups.n_pred, groups.n_gt)

    def finish(self, values: np.ndarray, n_pred: np.ndarray, n_gt: np.ndarray) -> np.ndarray:
        """Values reduced elsewhere (e.g. one pair of edge sets at a time), with this metric's empty-set rule."""
        return empty_rule(values, n_pred, n_gt, self.both_empty, self.one_empty)


#: the surface metrics MONAI computes from the two directed distance lists (what each means, its units and
#: direction: :mod:`ccmetrics.metrics.registry`)
SURFACE_REDUCTIONS: dict[str, SurfaceReduction] = {
    "nsd": SurfaceReduction(_nsd, both_empty=1.0, one_empty=None),
    "hd": SurfaceReduction(_hd, both_empty=0.0, one_empty=math.inf),
    "hd95": SurfaceReduction(_hd95, both_empty=0.0, one_empty=math.inf),
    "assd": SurfaceReduction(_assd, both_empty=0.0, one_empty=math.inf),
}


def _reductions(metrics: Sequence[str]) -> list[tuple[str, SurfaceReduction]]:
    unknown = [m for m in metrics if m not in SURFACE_REDUCTIONS]
    if unknown:
        raise ValueError(f"unknown surface metric {unknown[0]!r}; expected one of {tuple(SURFACE_REDUCTIONS)}")
    return [(m, SURFACE_REDUCTIONS[m]) for m in metrics]


def surface_scores(
    pred_to_gt: np.ndarray,
    gt_to_pred: np.ndarray,
    metrics: Sequence[str],
    tolerance: float,
) -> dict[str, float]:
    """Reduce the two directed distance lists to surface metrics, as MONAI does.

    The one-group case of :func:`grouped_surface_scores`.

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
        NSD 1 (:func:`empty_rule`).

    Examples
    --------
    >>> surface_scores(np.array([0.0, 2.0], np.float32), np.array([1.0], np.float32), ["nsd", "hd"], 1.0)
    {'nsd': 0.6666666666666666, 'hd': 2.0}
    """
    return grouped_surface_scores(
        pred_to_gt, [0, len(pred_to_gt)], gt_to_pred, [0, len(gt_to_pred)], metrics, tolerance
    )[0]


def grouped_surface_scores(
    pred_to_gt: np.ndarray,
    pred_bounds: ArrayLike,
    gt_to_pred: np.ndarray,
    gt_bounds: ArrayLike,
    metrics: Sequence[str],
    tolerance: float,
) -> list[dict[str, float]]:
    """:func:`surface_scores` of many components at once (one dict per component).

    Component ``i`` owns ``pred_to_gt[pred_bounds[i]:pred_bounds[i + 1]]`` and
    ``gt_to_pred[gt_bounds[i]:gt_bounds[i + 1]]``. NSD counts come from running sums, HD from
    the maxima of the groups, HD95 from one sort of each group's distances and the 95th
    percentiles of all components through one vectorised ``torch_lerp`` (the float32
    operations of ``torch.quantile``, element by element); ASSD, a float64 mean whose
    summation order numpy fixes per array, stays per component. The values equal those of
    one component at a time bit for bit.

    Examples
    --------
    >>> d = np.array([1.0, 2.0, 3.0], np.float32)
    >>> grouped_surface_scores(d, np.array([0, 2, 3]), d[:1], np.array([0, 1, 1]), ["hd"], 1.0)
    [{'hd': 2.0}, {'hd': inf}]
    """
    groups = GroupedDistances(pred_to_gt, pred_bounds, gt_to_pred, gt_bounds)
    columns = {name: reduction(groups, tolerance).tolist() for name, reduction in _reductions(metrics)}
    return [{name: columns[name][i] for name in metrics} for i in range(len(groups))]


def _group_sums(flags: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    running = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
    return running[bounds[1:]] - running[bounds[:-1]]


def _group_max(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Maximum of every non-empty group of consecutive ``values`` (0 for empty groups; exact, no sort)."""
    size = np.diff(bounds)
    out = np.zeros(len(size), dtype=values.dtype if len(values) else np.float32)
    full = size > 0
    if full.any():
        out[full] = np.maximum.reduceat(values[: bounds[-1]], bounds[:-1][full])
    return out


def _sort_within(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``values`` with each group ``values[bounds[i]:bounds[i + 1]]`` sorted (one sort per group; the rest as is)."""
    out = values.copy()
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if stop - start:
            out[start:stop] = np.sort(values[start:stop])
    return out


def _group_quantiles(ordered: np.ndarray, bounds: np.ndarray, q: float) -> np.ndarray:
    """``torch_quantile`` (:mod:`ccmetrics.engine.torch_emulation`) of every non-empty group of the group-sorted
    ``ordered`` (0 for empty groups)."""
    size = np.diff(bounds)
    out = np.zeros(len(size), dtype=np.float32)
    full = size > 0
    if not full.any():
        return out
    below, above, weight = quantile_rank(size[full], q)
    start = bounds[:-1][full]
    out[full] = torch_lerp(ordered[start + below], ordered[start + above], weight)
    return out


def __getattr__(name: str):  # the former SURFACE_METRICS: deprecated
    advice = "the metrics are the registry's records (ccmetrics.metrics.registry.names)"
    return deprecated(__name__, name, {"SURFACE_METRICS": lambda: tuple(SURFACE_REDUCTIONS)}, advice)
