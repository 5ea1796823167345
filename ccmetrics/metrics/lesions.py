"""Lesion-level metrics: BraTS-2023 Lesion Dice / HD95, detection counts, autoPET volumes.

All of them start from the connected components of the GT and the prediction
(:class:`ccmetrics.engine.components.ComponentCache`: one labelling per mask and connectivity, on the voxel
list, shared by every case-level metric) and work on voxel lists and on component bounding boxes,
never on an image-sized label map or one full-size mask per lesion.

Lesion Dice: each GT component is dilated inside its bounding box; the union of the dilations (a voxel
list) is labelled on its runs to merge components into lesions; the prediction components touching a
lesion are looked up at its dilation's voxels (:meth:`~ccmetrics.engine.components.Sites.labels_at`). Dice
comes from counts. HD95 needs the edge voxels of both masks (face-neighbour look-ups in the masks) and,
per lesion, the two directed 95th percentiles: from all distances while the lesion's edge voxels stay
below ccmetrics' own k-d tree threshold (``own_tree_from`` of :class:`ccmetrics.EngineConfig` once the kernels
are loaded; ``own_tree_import_from`` or ``compile_tree_from`` before, for the largest lesion of the call) and no
component it shares with other lesions reaches it over all of them; otherwise from one k-d tree per
prediction component, built once and shared by every lesion it touches (GT -> prediction: one query
per GT edge voxel), and for
prediction -> GT only the two order statistics the percentile needs, found by refining the tree's
nodes where their distance bounds straddle them. Cost: O(N log N) in the voxels of both masks and the
dilations, plus per lesion O(E log E) for its E GT edge voxels and, for a large shared component,
the tree nodes and points near the percentile's level set (a shell), never lesions x component size.
A 617x979 lattice of 5,978 one-voxel lesions under one 362k-voxel prediction component: about 2-3 s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import ndimage

from .. import _lazy
from .._arguments import public_arguments
from .._inputs import as_binary_mask, as_connectivity, as_non_negative, as_spacing, check_same_shape
from ..columns import Columns, table_fields
from ..engine.components import ComponentCache, Sites, run_components
from ..engine.config import current
from ..engine.kernels import pays
from ..engine.surface import SURFACE_REDUCTIONS, directed_distances, physical
from ..engine.torch_emulation import quantile_rank, torch_lerp
from .detection_rules import LesionDetections, judge
from .overlap import overlap_scores

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

if TYPE_CHECKING:
    from ..engine.geometry import EdgeNearest

__all__ = [
    "BRATS_DILATION",
    "BRATS_MIN_VOLUME",
    "BRATS_WORST_HD95",
    "DetectionResult",
    "LesionDiceResult",
    "detection",
    "detection_from_components",
    "lesion_dice",
    "lesion_dice_from_components",
]

#: BraTS-2023's penalty distance (mm) for missed lesions and false positives
BRATS_WORST_HD95 = 374.0
#: BraTS-2023's glioma settings: dilation iterations of the GT before lesions are formed, and the lesion volume
#: threshold (mm³, or voxels without a spacing) at or below which a lesion is not counted
BRATS_DILATION, BRATS_MIN_VOLUME = 3, 50.0


def _pair(pred: Any, gt: Any, spacing: Any | None) -> tuple[np.ndarray, np.ndarray, tuple[float, ...] | None]:
    pred_mask, gt_mask = as_binary_mask(pred, "pred"), as_binary_mask(gt, "gt")
    check_same_shape(pred_mask, gt_mask)
    return pred_mask, gt_mask, as_spacing(spacing, gt_mask.ndim)


def _voxel_volume(spacing: Sequence[float] | None) -> float:
    return float(np.prod(spacing)) if spacing is not None else 1.0


def _touches(sites: Sites, other: np.ndarray) -> np.ndarray:
    """For each site, whether any of its voxels is set in the boolean image ``other``."""
    hit = other.ravel()[sites.flat_index]
    return np.bincount(sites.label[hit], minlength=sites.n + 1)[1:] > 0


# --------------------------------------------------------------------------- detection


@dataclass(frozen=True)
class DetectionResult:
    """Lesion detection counts under a detection rule, split and merged lesions, autoPET volumes.

    Attributes
    ----------
    tp, fn : int
        GT components (lesions) detected / not detected under the rule
        (:mod:`ccmetrics.metrics.detection_rules`; default ``overlap``: any overlap with the prediction).
    fp : int
        Prediction components that overlap no detected lesion.
    n_pred_components : int
    sensitivity : float
        ``tp / (tp + fn)``; NaN without GT components.
    precision : float
        Share of prediction components that overlap a detected lesion; NaN without any.
    f1 : float
        Harmonic mean of sensitivity and precision (0 when both are 0, NaN
        when either is NaN).
    false_positive_volume, false_negative_volume : float
        autoPET: total volume of prediction components without GT overlap,
        and of GT components without prediction overlap, labelled with
        ``volume_connectivity`` (18 in 3D, as autoPET's script). Millilitres
        when a spacing (mm) is given, voxels otherwise.
    volume_unit : str
        ``"ml"`` or ``"voxels"``.
    n_split : int
        Lesions overlapped by two or more prediction components.
    n_merged : int
        Prediction components overlapping two or more lesions.
    rule : str
        The detection rule, as written (``"overlap"``, ``"iou:0.1"``, ...).
    """

    tp: int
    fn: int
    fp: int
    n_pred_components: int
    sensitivity: float
    precision: float
    f1: float
    false_positive_volume: float
    false_negative_volume: float
    volume_unit: str
    n_split: int = 0
    n_merged: int = 0
    rule: str = "overlap"


@public_arguments("detection", positional_inputs=("pred", "gt"), renamed={"rule": "detection_rule"})
def detection(
    pred: Any,
    gt: Any,
    *,
    connectivity: int | None = None,
    spacing: Any | None = None,
    volume_connectivity: int | None = None,
    detection_rule: Any = None,
) -> DetectionResult:
    """Lesion detection counts under a detection rule and the autoPET false positive / negative volumes.

    Parameters
    ----------
    pred, gt : array_like or torch.Tensor
        Binary masks, 2D or 3D, by keyword (``detection(gt=gt, pred=pred)``; by position, prediction first,
        with a ``DeprecationWarning``).
    connectivity : int, optional
        Components for the counts: 26 (default), 18, 6 in 3D; 8 (default), 4 in 2D.
    spacing : float or sequence of float, optional
        Voxel spacing in mm; volumes are then in ml.
    volume_connectivity : int, optional
        Components for the two volumes: 18 in 3D (autoPET's official script)
        and 8 in 2D by default.
    detection_rule : str or DetectionRule, optional
        What counts as detected (:mod:`ccmetrics.metrics.detection_rules`): ``"overlap"`` (default),
        ``"iou:T"`` (IoU at least T: inclusive, unlike the matching rules' ``iou_threshold``, strictly above),
        ``"dice:T"``, ``"coverage:T"`` or ``"centroid"``. The autoPET volumes do not
        depend on it: they count the components without any overlap, as autoPET defines them. ``rule=``, its
        former name, is still read, with a ``DeprecationWarning``.

    Returns
    -------
    DetectionResult

    Examples
    --------
    >>> gt = np.zeros((10, 10), bool); gt[1:3, 1:3] = True; gt[6:8, 6:8] = True
    >>> pred = np.zeros_like(gt); pred[1:3, 1:4] = True; pred[0, 9] = True
    >>> d = detection(gt=gt, pred=pred)
    >>> d.tp, d.fn, d.fp, d.sensitivity, d.precision
    (1, 1, 1, 0.5, 0.5)
    >>> d.false_positive_volume, d.false_negative_volume, d.volume_unit
    (1.0, 4.0, 'voxels')

    The lesion found is covered at 4 of its 4 voxels, but the prediction component is 6 voxels
    large: IoU 4/6.

    >>> strict = detection(gt=gt, pred=pred, detection_rule="iou:0.7")
    >>> strict.tp, detection(gt=gt, pred=pred, detection_rule="coverage:1").tp
    (0, 1)
    """
    pred_mask, gt_mask, spacing = _pair(pred, gt, spacing)
    return detection_from_components(
        ComponentCache(pred_mask),
        ComponentCache(gt_mask),
        connectivity,
        spacing,
        volume_connectivity,
        rule=detection_rule,
    )


def detection_from_components(
    pred_cc: ComponentCache,
    gt_cc: ComponentCache,
    connectivity: int | None = None,
    spacing: Sequence[float] | None = None,
    volume_connectivity: int | None = None,
    *,
    rule: Any = None,
    detections: LesionDetections | None = None,
) -> DetectionResult:
    """:func:`detection` on masks whose components are already (or lazily) labelled.

    Lets a caller that evaluates several metrics of one case share the
    labelling work (:func:`ccmetrics.evaluate` does).

    Parameters
    ----------
    pred_cc, gt_cc : ComponentCache
        The validated boolean prediction and GT masks with their component
        caches (:class:`ccmetrics.engine.components.ComponentCache`).
    connectivity, volume_connectivity
        As in :func:`detection`.
    spacing : tuple of float, optional
        Already validated spacing (``ccmetrics._inputs.as_spacing``) in mm.
    rule : str or DetectionRule, optional
        As in :func:`detection`.
    detections : LesionDetections, optional
        The case's lesions already judged (:func:`ccmetrics.metrics.detection_rules.judge`, as
        :func:`ccmetrics.evaluate` does for its ``detected`` column): used instead of judging again.

    Returns
    -------
    DetectionResult

    Examples
    --------
    >>> gt = np.zeros((6, 6), bool); gt[1:3, 1:3] = True
    >>> d = detection_from_components(ComponentCache(gt.copy()), ComponentCache(gt))
    >>> d.tp, d.fp, d.fn
    (1, 0, 0)
    """
    pred_mask, gt_mask = pred_cc.mask, gt_cc.mask
    ndim = gt_mask.ndim
    conn = as_connectivity(connectivity, ndim)
    vol_conn = as_connectivity(
        volume_connectivity if volume_connectivity is not None else (18 if ndim == 3 else 8), ndim
    )
    gt_sites, pred_sites = gt_cc(conn), pred_cc(conn)
    judged = detections if detections is not None else judge(pred_sites, gt_sites, rule)
    tp, fn = int(judged.detected.sum()), int((~judged.detected).sum())
    fp, n_pred = int((~judged.pred_tp).sum()), len(judged.pred_tp)
    sensitivity = tp / (tp + fn) if tp + fn else math.nan
    precision = (n_pred - fp) / n_pred if n_pred else math.nan
    if math.isnan(sensitivity) or math.isnan(precision):
        f1 = math.nan
    else:
        f1 = 2 * sensitivity * precision / (sensitivity + precision) if sensitivity + precision else 0.0

    if vol_conn != conn:
        gt_sites, pred_sites = gt_cc(vol_conn), pred_cc(vol_conn)
    detected, pred_hits = _touches(gt_sites, pred_mask), _touches(pred_sites, gt_mask)  # autoPET: any overlap
    scale = _voxel_volume(spacing) / 1000.0 if spacing is not None else 1.0
    fp_volume = float(pred_sites.volumes[~pred_hits].sum()) * scale
    fn_volume = float(gt_sites.volumes[~detected].sum()) * scale
    unit = "ml" if spacing is not None else "voxels"
    n_split, n_merged = int(judged.split.sum()), int(judged.merged.sum())
    return DetectionResult(
        tp, fn, fp, n_pred, sensitivity, precision, f1, fp_volume, fn_volume, unit, n_split, n_merged, str(judged.rule)
    )


# --------------------------------------------------------------------------- BraTS Lesion Dice

#: points per leaf of those trees (small leaves: thin shells of candidates around the percentile)
_TREE_LEAF = 8


@table_fields("per_lesion")  # held as Columns until read as DataFrames
@dataclass(frozen=True)
class LesionDiceResult:
    """BraTS-2023 lesion-wise scores of one case.

    Attributes
    ----------
    dice : float
        ``sum(Dice of each lesion) / (#lesions + #FP)``; 1 when there is
        neither a lesion nor a false positive.
    hd95 : float
        ``(sum(HD95 of each lesion) + worst * #FP) / (#lesions + #FP)``, a
        missed lesion counting ``worst`` (374); 0 when there is neither.
    tp, fn : int
        Lesions (above the volume threshold) with / without a touching
        prediction component.
    fp : int
        Prediction components touching no dilated lesion (of any size).
    per_lesion : pandas.DataFrame
        One row per lesion, small ones included (column ``counted`` False):
        ``volume`` (voxels), ``volume_mm3``, ``n_gt_components``,
        ``pred_components`` (labels of the touching prediction components,
        raster order), ``dice``, ``hd95`` (raw, inf when missed).
    """

    dice: float
    hd95: float
    tp: int
    fp: int
    fn: int
    per_lesion: pd.DataFrame


def _dilations(sites: Sites, coords: np.ndarray, structure: np.ndarray, iterations: int):
    """Flat indices of every component's dilation (``iterations`` of ``structure``, clipped to the image), as
    ``(flat, owner)``: the voxels of all dilations one component after the other, and the component (0..K-1)
    of each.  Each component is dilated inside its bounding box padded by the dilation."""
    shape = np.array(sites.shape)
    flats, owners = [], []
    for k in range(sites.n):
        c = coords[sites.starts[k] : sites.starts[k + 1]]
        lo = np.maximum(c.min(axis=0) - iterations, 0)
        hi = np.minimum(c.max(axis=0) + iterations + 1, shape)
        if len(c) == 1 and not iterations:
            local_coords = c - lo
        else:
            local = np.zeros(tuple(hi - lo), dtype=bool)
            local[tuple((c - lo).T)] = True
            if iterations:
                local = ndimage.binary_dilation(local, structure=structure, iterations=iterations)
            local_coords = np.argwhere(local)
        flats.append(np.ravel_multi_index(tuple((local_coords + lo).T), sites.shape))
        owners.append(np.full(len(local_coords), k, dtype=np.int64))
    if not flats:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(flats).astype(np.int64, copy=False), np.concatenate(owners)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of an integer array by one sort (numpy's hash-based unique is slower on millions)."""
    ordered = np.sort(values)
    keep = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _lesions(sites: Sites, dilated: np.ndarray, connectivity: int) -> np.ndarray:
    """Lesion (1..L, raster order of its first GT voxel) of each GT component: components whose dilations
    touch (``connectivity``) form one lesion.  The union of the dilations is labelled on its voxel list
    (:func:`ccmetrics.engine.components.run_components`), never on an image-sized array."""
    if sites.n == 0:
        return np.zeros(0, dtype=np.int64)
    union = _sorted_unique(dilated)
    labels, _ = run_components(union, sites.shape, connectivity)
    first_voxel = sites.flat_index[sites.starts[:-1]]
    raw = labels[np.searchsorted(union, first_voxel)]
    # lesions numbered in raster order of their first GT voxel (components already are)
    _, first = np.unique(raw, return_index=True)
    renumber = np.zeros(int(raw.max()) + 1, dtype=np.int64)
    renumber[raw[np.sort(first)]] = np.arange(1, len(first) + 1)
    return renumber[raw]


class _PredictionTrees:
    """One k-d tree of the edge voxels of each (large-union) prediction component, built once and shared by
    every lesion the component touches: the nodes of all trees in one forest (tight node boxes, the points of
    node ``i`` are ``pts[nodes[i, 0]:nodes[i, 1]]``, as :func:`ccmetrics.engine.kdtree.build` makes them).

    A component of at most ``_TREE_LEAF`` points is one leaf, the tree ``build`` makes of it (its points in
    their order, one node, their box): made for all such components at once, with no array of their own (a
    tree a component cost about 4 KB: 1.5 GB for 331,747 one-voxel fragments over one lesion). A larger one
    keeps only its own nodes (``build``'s child numbering, for :meth:`nearest`); its points and boxes are views
    of the forest's.
    """

    def __init__(self, points: Sequence[np.ndarray]):
        sizes = np.array([len(p) for p in points], dtype=np.int64)
        self._plant(np.concatenate(points) if len(points) else np.zeros((0, 3)), np.cumsum(sizes) - sizes, sizes)

    @classmethod
    def of_ranges(cls, points: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> _PredictionTrees:
        """The trees of ``points[starts[t]:stops[t]]`` for each t (one point array, no list of views)."""
        self = cls.__new__(cls)
        starts = np.asarray(starts, dtype=np.int64)
        self._plant(points, starts, np.asarray(stops, dtype=np.int64) - starts)
        return self

    def _plant(self, points: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> None:
        from ..engine.kdtree import build

        n_trees, m = len(sizes), points.shape[1]
        leaf = (sizes >= 1) & (sizes <= _TREE_LEAF)  # one node: build's tree, made here for all at once
        grown = {
            t: build(np.ascontiguousarray(points[starts[t] : starts[t] + sizes[t]]), _TREE_LEAF)
            for t in np.flatnonzero(~leaf).tolist()
        }
        n_nodes = np.ones(n_trees, dtype=np.int64)
        for t, (_, nodes, _box) in grown.items():
            n_nodes[t] = len(nodes)
        self.point_start = np.concatenate([[0], np.cumsum(sizes)])
        self.node_start = np.concatenate([[0], np.cumsum(n_nodes)])
        self.pts = np.zeros((int(self.point_start[-1]), 4))
        self.nodes = np.empty((int(self.node_start[-1]), 3), dtype=np.int64)
        self.box = np.zeros((int(self.node_start[-1]), 8))
        if leaf.any():
            at, node, size = self.point_start[:-1][leaf], self.node_start[:-1][leaf], sizes[leaf]
            first = np.cumsum(size) - size  # each leaf's first row among the leaves' points
            within = np.arange(int(size.sum())) - np.repeat(first, size)
            own = points[np.repeat(starts[leaf], size) + within]
            self.pts[np.repeat(at, size) + within, :m] = own
            self.nodes[node] = np.stack([at, at + size, np.full(len(at), -1)], axis=1)
            self.box[node, :m] = np.minimum.reduceat(own, first, axis=0)
            self.box[node, 4 : 4 + m] = np.maximum.reduceat(own, first, axis=0)
        self._own_nodes: dict[int, np.ndarray] = {}
        for t, (pts, nodes, box) in grown.items():
            p0, n0 = int(self.point_start[t]), int(self.node_start[t])
            self.pts[p0 : p0 + len(pts)] = pts
            self.box[n0 : n0 + len(box)] = box
            self.nodes[n0 : n0 + len(nodes), :2] = nodes[:, :2] + p0
            self.nodes[n0 : n0 + len(nodes), 2] = np.where(nodes[:, 2] >= 0, nodes[:, 2] + n0, -1)
            self._own_nodes[t] = nodes

    def _tree(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Tree ``t`` as :func:`ccmetrics.engine.kdtree.build` returns it: its points, its nodes (numbered from 0) and
        their boxes (the points and boxes: views of the forest's)."""
        p0, p1, n0, n1 = self.point_start[t], self.point_start[t + 1], self.node_start[t], self.node_start[t + 1]
        nodes = self._own_nodes.get(int(t))
        if nodes is None:  # one leaf
            nodes = np.array([[0, p1 - p0, -1]], dtype=np.int64)
        return self.pts[p0:p1], nodes, self.box[n0:n1]

    def nearest(self, t: int, source: np.ndarray) -> np.ndarray:
        """Distance (float64) from each source point to the nearest point of tree ``t``."""
        from ..engine.kdtree import query

        kernel: Any = query  # a numba dispatcher: its call signature is not annotated
        out = np.empty(len(source))
        kernel(*self._tree(t), np.ascontiguousarray(source), np.inf, out)
        return out

    def nearest_of(self, trees: Sequence[int] | np.ndarray, source: np.ndarray) -> np.ndarray:
        """Distance (float64) from each source point to the nearest point of any of ``trees``: the minimum kept in
        place over a few trees (memory: one array of distances, not one per tree), one tree of their points
        together for many (``union_tree_from`` of :class:`ccmetrics.EngineConfig`; time: one query per source
        point, not one per tree). The same distances either way."""
        from ..engine.kdtree import build, query

        if len(trees) < current().union_tree_from:
            out = self.nearest(trees[0], source)
            for t in trees[1:]:
                np.minimum(out, self.nearest(t, source), out=out)
            return out
        kernel: Any = query  # a numba dispatcher: its call signature is not annotated
        first, stop = self.point_start[np.asarray(trees)], self.point_start[np.asarray(trees) + 1]
        size = stop - first  # their points, tree after tree (one gather, no list of views)
        rows = np.repeat(first - (np.cumsum(size) - size), size) + np.arange(int(size.sum()))
        union = build(self.pts[rows], _TREE_LEAF)
        out = np.empty(len(source))
        kernel(*union, np.ascontiguousarray(source), np.inf, out)
        return out

    def order_statistics(
        self, trees: Sequence[int] | np.ndarray, target: np.ndarray, k_lo: int, k_hi: int
    ) -> tuple[float, float]:
        """The ``k_lo``-th and ``k_hi``-th smallest (from 0) distances from the points of ``trees`` to ``target``."""
        from ..engine.kdtree import build

        gpts, gnodes, gbox = build(np.ascontiguousarray(target), 32)
        roots = self.node_start[np.asarray(trees, dtype=np.int64)].astype(np.int64)
        from ..engine.order_statistics import order_statistics

        return order_statistics(self.pts, self.nodes, self.box, roots, gpts, gnodes, gbox, int(k_lo), int(k_hi))


@public_arguments("lesion_dice", positional_inputs=("pred", "gt"))
def lesion_dice(
    pred: Any,
    gt: Any,
    *,
    dilation: int = BRATS_DILATION,
    min_volume: float = BRATS_MIN_VOLUME,
    spacing: Any | None = None,
    worst_hd95: float = BRATS_WORST_HD95,
) -> LesionDiceResult:
    """BraTS-2023 Lesion Dice and lesion-wise HD95.

    1. GT components (full connectivity) are dilated (``dilation`` iterations
       of the connectivity-2 cross); GT components in one dilated component
       form one lesion (GT voxels only).
    2. Lesions of volume <= ``min_volume`` (mm³, or voxels without spacing)
       are not counted.
    3. Every prediction component touching a dilated lesion is a true
       positive for it, even without overlap, and the lesion's prediction is
       the union of those components; one component may serve several lesions.
    4. Prediction components touching no dilated lesion are false positives.

    Parameters
    ----------
    pred, gt : array_like or torch.Tensor
        Binary masks, 2D or 3D, by keyword (``lesion_dice(gt=gt, pred=pred)``; by position, prediction first,
        with a ``DeprecationWarning``).
    dilation : int
        Dilation iterations: 3 for glioma (default), 1 for metastases and
        meningioma; 0 means no dilation (unlike scipy's ``iterations=0``,
        which dilates until nothing changes).
    min_volume : float
        Lesion volume threshold: 50 mm³ for glioma (default), 2 for
        metastases.  Without a spacing it is in voxels.
    spacing : float or sequence of float, optional
        Voxel spacing in mm, for lesion volumes and HD95 (voxel units otherwise).
    worst_hd95 : float
        HD95 of a missed lesion and of each false positive (374 in BraTS).

    Returns
    -------
    LesionDiceResult

    Notes
    -----
    The per-lesion HD95 is MONAI's (maximum of the two directed 95th
    percentiles over edge voxels), the one ccmetrics uses everywhere.  The
    official BraTS code uses the area-weighted HD95 of DeepMind's
    surface-distance package, a different number; Dice and the counts are
    the same.

    Examples
    --------
    >>> gt = np.zeros((40, 40, 40), bool); gt[5:10, 5:10, 5:10] = True
    >>> pred = gt.copy(); pred[30:33, 30:33, 30:33] = True  # a distant 27-voxel FP
    >>> r = lesion_dice(gt=gt, pred=pred)
    >>> r.dice, r.hd95, r.tp, r.fp, r.fn
    (0.5, 187.0, 1, 1, 0)
    """
    pred_mask, gt_mask, spacing = _pair(pred, gt, spacing)
    if isinstance(dilation, bool) or not isinstance(dilation, (int, np.integer)) or dilation < 0:
        raise ValueError(f"dilation must be a whole number of iterations >= 0, got {dilation!r}")
    min_volume = as_non_negative(min_volume, "min_volume")
    worst_hd95 = as_non_negative(worst_hd95, "worst_hd95")
    return lesion_dice_from_components(
        ComponentCache(pred_mask), ComponentCache(gt_mask), dilation, min_volume, spacing, worst_hd95
    )


def lesion_dice_from_components(
    pred_cc: ComponentCache,
    gt_cc: ComponentCache,
    dilation: int = BRATS_DILATION,
    min_volume: float = BRATS_MIN_VOLUME,
    spacing: Sequence[float] | None = None,
    worst_hd95: float = BRATS_WORST_HD95,
    nearest: EdgeNearest | None = None,
) -> LesionDiceResult:
    """:func:`lesion_dice` on masks whose components are already (or lazily) labelled.

    Parameters
    ----------
    pred_cc, gt_cc : ComponentCache
        The validated boolean prediction and GT masks with their component
        caches (:class:`ccmetrics.engine.components.ComponentCache`).
    dilation, min_volume, worst_hd95
        As in :func:`lesion_dice`.
    spacing : tuple of float, optional
        Already validated spacing (``ccmetrics._inputs.as_spacing``) in mm.
    nearest : EdgeNearest, optional
        The whole image's edge distances of these two masks with this spacing, with the nearest voxel of each
        (:meth:`ccmetrics.engine.geometry.CaseSurfaces.nearest`; :func:`ccmetrics.evaluate` passes them when it
        measured them for NSD or HD95). A lesion's distance from an edge voxel is taken from there wherever the
        named voxel lies in the lesion's own prediction components (GT to prediction) or in the lesion itself
        (prediction to GT): the same value, bit for bit; the rest is measured.

    Returns
    -------
    LesionDiceResult

    Examples
    --------
    >>> gt = np.zeros((20, 20, 20), bool); gt[5:10, 5:10, 5:10] = True
    >>> r = lesion_dice_from_components(ComponentCache(gt.copy()), ComponentCache(gt))
    >>> r.dice, r.hd95
    (1.0, 0.0)
    """
    pred_mask, gt_mask = pred_cc.mask, gt_cc.mask
    if int(dilation) != dilation or dilation < 0:
        raise ValueError(f"dilation must be a non-negative integer, got {dilation!r}")
    ndim = gt_mask.ndim
    full = as_connectivity(None, ndim)
    structure = ndimage.generate_binary_structure(ndim, 2)
    gt_sites, pred_sites = gt_cc(full), pred_cc(full)
    gt_coords = gt_sites.coords()

    # 1. merge GT components whose dilations touch (full-connectivity components of the dilated GT)
    dilated, owner = _dilations(gt_sites, gt_coords, structure, int(dilation))
    lesion_of_component = _lesions(gt_sites, dilated, full)
    n_lesions = int(lesion_of_component.max()) if gt_sites.n else 0

    # 3. prediction components touching each lesion's dilation (= union of its components' dilations)
    hit = pred_mask.ravel()[dilated]
    pairs = _sorted_unique(lesion_of_component[owner[hit]] * (pred_sites.n + 1) + pred_sites.labels_at(dilated[hit]))
    pair_lesion, pair_pred = pairs // (pred_sites.n + 1), pairs % (pred_sites.n + 1)
    pair_bounds = np.searchsorted(pair_lesion, np.arange(1, n_lesions + 2))
    touching = [pair_pred[a:b] for a, b in zip(pair_bounds[:-1], pair_bounds[1:])]

    # per-lesion Dice from counts
    lesion_of_voxel = lesion_of_component[gt_sites.label - 1] if gt_sites.n else np.zeros(0, np.int64)
    in_pred = pred_mask.ravel()[gt_sites.flat_index]
    volume = np.bincount(lesion_of_voxel, minlength=n_lesions + 1)[1:]
    intersection = np.bincount(lesion_of_voxel[in_pred], minlength=n_lesions + 1)[1:]
    pred_volume = np.bincount(pair_lesion, weights=pred_sites.volumes[pair_pred - 1], minlength=n_lesions + 1)[1:]
    dice = overlap_scores(intersection, pred_volume.astype(np.int64), volume, "dice")
    hd95 = _lesion_hd95(
        pred_cc, gt_mask, gt_sites, gt_coords, lesion_of_voxel, lesion_of_component, touching, spacing, nearest
    )

    voxel_volume = _voxel_volume(spacing)
    counted = [v * voxel_volume > min_volume for v in volume.tolist()]
    table = Columns(
        {
            "volume": volume.tolist(),
            "volume_mm3": [v * voxel_volume for v in volume.tolist()],
            "n_gt_components": np.bincount(lesion_of_component, minlength=n_lesions + 1)[1:].tolist(),
            "pred_components": [t.tolist() for t in touching],
            "dice": dice.tolist(),
            "hd95": hd95,
            "counted": counted,
        },
        length=n_lesions,
        index_name="lesion",
        start=1,
    )

    fp = pred_sites.n - len(np.unique(pair_pred))
    kept = np.flatnonzero(np.array(counted, dtype=bool))
    tp = sum(len(touching[i]) > 0 for i in kept.tolist())
    fn = len(kept) - tp
    denominator = len(kept) + fp
    if denominator == 0:
        return LesionDiceResult(1.0, 0.0, 0, 0, 0, table)  # type: ignore[arg-type]  # a table field
    # the sums pandas took of the counted rows' columns: numpy's pairwise sums of the same float64 arrays
    kept_hd95 = np.asarray(hd95, dtype=np.float64)[kept]
    kept_hd95 = np.where(np.isfinite(kept_hd95), kept_hd95, worst_hd95)
    return LesionDiceResult(
        float(np.nansum(np.asarray(dice.tolist(), dtype=np.float64)[kept]) / denominator),  # pandas skips NaN
        float((kept_hd95.sum() + worst_hd95 * fp) / denominator),
        tp,
        fp,
        fn,
        table,  # type: ignore[arg-type]  # a table field: Columns until read
    )


@dataclass(frozen=True)
class _KnownDistances:
    """The whole image's edge distances in :func:`_lesion_hd95`'s orders: of each GT edge row (lesion order) with the
    prediction component holding its nearest voxel, and of each prediction edge row with the lesion holding its."""

    gt_distance: np.ndarray
    gt_component: np.ndarray
    pred_distance: np.ndarray
    pred_lesion: np.ndarray


def _known_distances(
    nearest: EdgeNearest | None,
    gt_sites: Sites,
    gt_edge: np.ndarray,
    order: np.ndarray,
    pred_sites: Sites,
    pred_edge: np.ndarray,
    lesion_of_component: np.ndarray,
) -> _KnownDistances | None:
    """``nearest`` looked up for the GT edge rows (``gt_sites.flat_index[gt_edge][order]``) and the prediction edge
    rows (``pred_sites.flat_index[pred_edge]``); None without it, or when its edge voxels are not these (another
    case's table: nothing is taken from it)."""
    if nearest is None:
        return None
    g_flat = gt_sites.flat_index[gt_edge][order]
    p_flat = pred_sites.flat_index[pred_edge]
    by_flat = np.argsort(nearest.gt_flat, kind="stable")
    g_at = by_flat[np.minimum(np.searchsorted(nearest.gt_flat, g_flat, sorter=by_flat), len(by_flat) - 1)]
    p_at = np.minimum(np.searchsorted(nearest.pred_flat, p_flat), len(nearest.pred_flat) - 1)
    same = len(g_flat) == len(nearest.gt_flat) and len(p_flat) == len(nearest.pred_flat)
    if not (same and np.array_equal(nearest.gt_flat[g_at], g_flat) and np.array_equal(nearest.pred_flat[p_at], p_flat)):
        return None
    gt_component = pred_sites.labels_at(nearest.gt_nearest[g_at])
    pred_lesion = lesion_of_component[gt_sites.labels_at(nearest.pred_nearest[p_at]) - 1]
    return _KnownDistances(nearest.gt_distance[g_at], gt_component, nearest.pred_distance[p_at], pred_lesion)


def _reused(whole: np.ndarray, keep: np.ndarray, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Distances from ``source`` to ``target``: the whole image's (``whole``) where ``keep`` (its nearest voxel is in
    ``target``: the same minimum, bit for bit), measured for the other rows."""
    out = np.array(whole, dtype=np.float32)
    todo = np.flatnonzero(~keep)
    if len(todo):
        out[todo] = directed_distances(source[todo], target)
    return out


def _lesion_hd95(
    pred_cc: ComponentCache,
    gt_mask: np.ndarray,
    gt_sites: Sites,
    gt_coords: np.ndarray,
    lesion_of_voxel: np.ndarray,
    lesion_of_component: np.ndarray,
    touching: list[np.ndarray],
    spacing: Sequence[float] | None,
    nearest: EdgeNearest | None = None,
) -> list[float]:
    """HD95 of every lesion against the union of its touching prediction components (inf when none).

    The edge voxels of the GT and of the prediction are found once (face-neighbour look-ups in the two
    masks). A lesion's two directed 95th percentiles are reduced as :func:`ccmetrics.engine.surface.surface_scores`
    does (torch's float32 quantile, the same values bit for bit) from: all distances of both directions
    while its edge voxels stay below ``own_tree_from`` (:class:`ccmetrics.EngineConfig`) and no component
    it shares with other lesions reaches it over all of them; otherwise the GT -> prediction distances from
    the k-d trees of its prediction components, built once for all the lesions they touch, and only the two
    order statistics the prediction -> GT percentile needs (:func:`ccmetrics.engine.order_statistics.order_statistics`:
    the tree nodes are refined only where their distance bounds straddle the percentile, so one lesion never costs the
    size of a large component it shares with many others).
    """
    n_lesions = len(touching)
    if n_lesions == 0:
        return []
    pred_sites = pred_cc(as_connectivity(None, gt_mask.ndim))
    _, gt_edge = gt_sites.edges(gt_mask.ravel(), True, gt_coords)  # the union's edges: the mask tells them
    edge_lesion = lesion_of_voxel[gt_edge]
    order = np.argsort(edge_lesion, kind="stable")
    g_all = physical(gt_coords[gt_edge][order], spacing)
    g_bounds = np.searchsorted(edge_lesion[order], np.arange(1, n_lesions + 2))
    n_g = np.diff(g_bounds)
    n_p = np.zeros(n_lesions, dtype=np.int64)
    p_lo, p_hi, g_lo, g_hi = (np.zeros(n_lesions, dtype=np.float32) for _ in range(4))
    if any(len(t) for t in touching):
        pred_coords = pred_sites.coords()
        _, pred_edge = pred_sites.edges(pred_cc.mask.ravel(), True, pred_coords)  # components of a mask: as GT's
        p_all = physical(pred_coords[pred_edge], spacing)  # grouped by component
        p_bounds = np.searchsorted(pred_sites.label[pred_edge], np.arange(1, pred_sites.n + 2))
        p_count = np.diff(p_bounds)
        n_p = np.array([int(p_count[t - 1].sum()) for t in touching], dtype=np.int64)
        known = _known_distances(nearest, gt_sites, gt_edge, order, pred_sites, pred_edge, lesion_of_component)
    below_p, above_p, _ = quantile_rank(n_p, 0.95)
    below_g, above_g, _ = quantile_rank(n_g, 0.95)
    # the shared trees serve a lesion when the distances it needs, or those of a component it shares with
    # other lesions over all of them, reach ccmetrics' own k-d tree threshold (``own_tree_from`` once the order
    # statistics' kernel is loaded, ``own_tree_import_from`` or ``compile_tree_from`` before: ``pays`` of
    # ccmetrics.engine._launch, which counts the work the fallback served): then no lesion costs the size of a
    # shared component. Before the kernels are loaded, the largest lesion's work decides for the call: once it pays
    # for their load, every lesion from ``own_tree_from`` uses them, as every later call would (speed only: both
    # ways give the same values)
    config = current()
    need = np.zeros(len(touching), dtype=np.int64)  # a lesion's work: its distances, or its largest shared component's
    touched = np.array([len(t) > 0 for t in touching], dtype=bool)
    if len(touching):
        pairs_comp = np.concatenate(touching) if any(len(t) for t in touching) else np.zeros(0, np.int64)
        served = np.bincount(pairs_comp, minlength=pred_sites.n + 1)  # lesions served by each component
        for i, t in enumerate(touching):
            if len(t):
                need[i] = max(int(n_p[i] + n_g[i]), int((p_count[t - 1] * served[t]).max()))
    largest = int(need.max()) if len(need) else 0
    trees_pay = pays(
        "_order_statistics", largest, config.own_tree_from, config.own_tree_import_from, config.compile_tree_from
    )
    big = touched & (need >= config.own_tree_from) if trees_pay else np.zeros(len(touching), dtype=bool)
    trees, tree_of = None, np.zeros(0, dtype=np.int64)
    if big.any():
        from ..engine.kdtree import matches_scipy

        if matches_scipy():  # the trees' distances are scipy's, bit for bit, on this machine
            shared = np.unique(np.concatenate([touching[i] for i in np.flatnonzero(big)]))
            trees = _PredictionTrees.of_ranges(p_all, p_bounds[shared - 1], p_bounds[shared])
            tree_of = np.full(pred_sites.n + 1, -1, dtype=np.int64)  # a component's tree (an array: no dict)
            tree_of[shared] = np.arange(len(shared))
        else:
            big[:] = False
    for i in np.flatnonzero(n_p > 0).tolist():
        g = g_all[g_bounds[i] : g_bounds[i + 1]]
        if big[i]:
            assert trees is not None
            mine = tree_of[touching[i]]
            d_gp = trees.nearest_of(mine, g).astype(np.float32)
            low, high = trees.order_statistics(mine, g, below_p[i], above_p[i])
            p_lo[i], p_hi[i] = np.float32(low), np.float32(high)
        else:
            rows = np.concatenate([np.arange(p_bounds[c - 1], p_bounds[c]) for c in touching[i].tolist()])
            p = p_all[rows]
            if known is None:
                d_pg, d_gp = directed_distances(p, g), directed_distances(g, p)
            else:
                g_rows = np.arange(g_bounds[i], g_bounds[i + 1])
                d_pg = _reused(known.pred_distance[rows], known.pred_lesion[rows] == i + 1, p, g)
                d_gp = _reused(known.gt_distance[g_rows], np.isin(known.gt_component[g_rows], touching[i]), g, p)
            d_pg = np.sort(d_pg)
            p_lo[i], p_hi[i] = d_pg[below_p[i]], d_pg[above_p[i]]
        d_gp = np.sort(d_gp)
        g_lo[i], g_hi[i] = d_gp[below_g[i]], d_gp[above_g[i]]
    # surface.surface_scores' HD95, vectorised over the lesions (element by element the same float32 operations)
    q_p = torch_lerp(p_lo, p_hi, quantile_rank(n_p, 0.95)[2])
    q_g = torch_lerp(g_lo, g_hi, quantile_rank(n_g, 0.95)[2])
    return SURFACE_REDUCTIONS["hd95"].finish(np.where(q_g > q_p, q_g, q_p), n_p, n_g).tolist()
