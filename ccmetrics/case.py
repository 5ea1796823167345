"""Per-component evaluation: the CC-Metrics of one case, beside the usual global metrics.

Data flow: each input image is scanned once (validation aside) by one
``flatnonzero``; everything after works on the two voxel lists, so time and
memory grow with the foreground, not with the image (no array holds more than
a few bytes per foreground voxel; a 1024³ case with 40 lesions: about 2 s and
0.3 GB above the inputs):

1. validate the inputs; list the GT voxels and label their components on the
   list (runs along the last axis joined into a run graph,
   :mod:`ccmetrics.components`); list the prediction voxels (beside the GT
   work, on a second thread for images from 2^20 voxels);
2. find the edge voxels of the GT and of the whole prediction by face-neighbour
   look-ups in the input masks themselves;
3. give every prediction voxel its Voronoi region: the site it lies in (a
   look-up in the GT, then a binary search over the GT's runs), or for
   prediction voxels outside the GT the nearest site (KD-tree over the site
   surfaces, exact ties to the lowest label); the whole-image edge distances,
   which need no regions, run beside it;
4. find the edge voxels of every region's prediction (neighbours' regions
   looked up in the prediction's list, or in a region map of its flat-index
   span when the prediction fills at least 1/8 of the span);
5. per component: Dice/IoU from counts, surface metrics from two KD-tree
   queries over that component's edges only (spread over the worker threads,
   largest first; the values do not depend on the threads).

The per-component values equal MONAI's metrics computed on
``pred & (partition == c)`` against ``gt & (partition == c)`` over the full
image, because a region's masked volumes are zero outside their bounding box.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from ._inputs import (
    as_binary_mask,
    as_classes,
    as_connectivity,
    as_non_negative,
    as_label_map,
    as_sites_mode,
    as_spacing,
    check_same_shape,
)
from .aggregation import cc_mean, empty_gt_score, image_diagonal
from .components import Runs, Sites, raster_sites
from .overlap import OVERLAP_METRICS, overlap_scores
from .partition import assign_nearest_flat
from .surface import (SURFACE_METRICS, directed_distances, face_edges, grouped_directed_distances,
                      grouped_surface_scores, mask_edges, own_face_edges, physical, surface_scores)

#: metrics computed natively, per component and globally
BUILTIN_METRICS = OVERLAP_METRICS + SURFACE_METRICS
#: case-level comparison metrics and the scores they add to ``CaseResult.case_scores``
CASE_METRICS = {
    "pq": ("pq", "sq", "rq"),
    "lesion_dice": ("lesion_dice", "lesion_hd95"),
    "detection": ("sensitivity", "precision", "f1", "fp_volume", "fn_volume"),
}


@dataclass
class CaseResult:
    """Result of :func:`evaluate` for one case (and one class).

    Attributes
    ----------
    per_component : pandas.DataFrame
        One row per GT component (index ``component``, 1..K in raster order):
        ``volume`` (voxels), ``volume_mm3`` (when a spacing is given),
        ``gt_label`` (with ``sites="labels"``), ``detected`` (the component
        overlaps the prediction), then one column per metric with the raw
        value of that component's region: distances are ``inf`` when the
        region holds no prediction.
    cc : dict
        Metric name -> CC-metric: the mean over components, with infinite
        distances replaced by ``worst_distance``.
    standard : dict
        Metric name -> the usual global metric on the whole image (both masks
        empty: the best value; exactly one empty: Dice/IoU/NSD 0, distances inf).
    case_scores : dict
        Scores of the case-level comparison metrics asked for (no CC version):
        ``pq``, ``sq``, ``rq``; ``lesion_dice``, ``lesion_hd95``;
        ``sensitivity``, ``precision``, ``f1``, ``fp_volume``, ``fn_volume``.
    n_components : int
        Number of GT components K.
    empty_gt : bool
        True when the GT is empty: ``cc`` then holds the best value if the
        prediction is empty too, else the worst (0, or ``worst_distance``), as
        in the original CC-Metrics code.
    details : dict
        Full results of the case-level metrics asked for: ``"pq"`` ->
        :class:`~ccmetrics.panoptic.PQResult`, ``"lesion_dice"`` ->
        :class:`~ccmetrics.lesions.LesionDiceResult`, ``"detection"`` ->
        :class:`~ccmetrics.lesions.DetectionResult`.
    worst_distance : float
        Value used for missing distances (voxels, or mm with a spacing).
    spacing : tuple of float or None
        Voxel spacing used for distances and volumes.
    pred_volume : int
        Prediction voxels in the image (for an empty GT: the false-positive volume).
    """

    per_component: pd.DataFrame
    cc: Dict[str, float]
    standard: Dict[str, float]
    n_components: int
    empty_gt: bool
    worst_distance: float
    spacing: Optional[Tuple[float, ...]] = None
    metrics: List[str] = field(default_factory=list)
    details: Dict[str, Any] = field(default_factory=dict)
    case_scores: Dict[str, float] = field(default_factory=dict)
    pred_volume: int = 0

    def summary(self) -> pd.DataFrame:
        """Table with one row per score and columns ``standard`` and ``cc`` (NaN where not defined).

        Case-level scores (PQ, Lesion Dice, detection) have no CC version and
        appear in the ``standard`` column.
        """
        standard = {**self.standard, **self.case_scores}
        rows = list(dict.fromkeys(list(self.cc) + list(standard)))
        return pd.DataFrame(
            {"standard": [standard.get(m, np.nan) for m in rows],
             "cc": [self.cc.get(m, np.nan) for m in rows]},
            index=pd.Index(rows, name="metric"),
        )

    def to_frame(self, case: Optional[str] = None, class_value: int = 1) -> pd.DataFrame:
        """The per-component table in the tidy data-set format, ready to concatenate across cases.

        Columns: ``case``, ``class``, ``component``, ``volume`` (voxels),
        ``volume_mm3`` (NaN without a spacing), ``gt_label`` (with
        ``sites="labels"``), ``detected``, ``worst_distance`` (what a missed
        lesion's distances count as in means), then the metrics' raw values.

        Examples
        --------
        >>> import numpy as np
        >>> from ccmetrics import evaluate
        >>> gt = np.zeros((12, 12), bool); gt[1:4, 1:4] = True; gt[8:10, 8:10] = True
        >>> frame = evaluate(gt.copy(), gt, ["dice"]).to_frame("case_01")
        >>> print(frame[["case", "class", "component", "volume", "detected", "dice"]].to_string(index=False))
           case  class  component  volume  detected  dice
        case_01      1          1       9      True   1.0
        case_01      1          2       4      True   1.0
        """
        table = self.per_component.reset_index()
        if "volume_mm3" not in table:
            table.insert(table.columns.get_loc("volume") + 1, "volume_mm3", np.nan)
        table.insert(0, "case", case)
        table.insert(1, "class", int(class_value))
        metrics = [c for c in table.columns if c in self.metrics]
        others = [c for c in table.columns if c not in self.metrics]
        table["worst_distance"] = float(self.worst_distance)
        return table[others + ["worst_distance"] + metrics]

    def case_row(self) -> Dict[str, Any]:
        """One row of the tidy per-case table: counts, global (``m``), CC (``cc_m``) and case-level scores.

        Keys: ``n_components``, ``empty_gt``, ``pred_volume`` (voxels),
        ``worst_distance``, then for each metric ``m`` the global value ``m``
        and the CC value ``cc_m``, then :attr:`case_scores`.
        """
        row: Dict[str, Any] = {"n_components": self.n_components, "empty_gt": self.empty_gt,
                               "pred_volume": self.pred_volume, "worst_distance": float(self.worst_distance)}
        for m in self.metrics:
            row[m] = self.standard.get(m, np.nan)
            row[f"cc_{m}"] = self.cc.get(m, np.nan)
        row.update(self.case_scores)
        return row

    def __repr__(self) -> str:
        flag = ", empty GT" if self.empty_gt else ""
        return (f"CaseResult({self.n_components} components{flag})\n"
                f"{self.summary().to_string(float_format=lambda v: f'{v:.4f}')}")


class GroundTruth:
    """A validated GT with its sites, their surfaces and components, prepared once for many predictions.

    Pass it to :func:`evaluate` instead of the GT array to evaluate several predictions of one case
    (degradation steps, model checkpoints) without labelling the GT and finding its surfaces again
    every time; the results are identical.

    Parameters
    ----------
    gt : array_like or torch.Tensor
        As in :func:`evaluate`.
    sites : {"components", "labels"}
    connectivity : int, optional

    Examples
    --------
    >>> import numpy as np
    >>> gt = np.zeros((20, 20), bool); gt[2:8, 2:8] = True; gt[14:16, 14:16] = True
    >>> prepared = GroundTruth(gt)
    >>> [round(evaluate(np.roll(gt, k, axis=0), prepared, ["dice"]).cc["dice"], 4) for k in (0, 1)]
    [1.0, 0.6667]
    >>> evaluate(np.roll(gt, 1, axis=0), gt, ["dice"]).cc == evaluate(np.roll(gt, 1, axis=0), prepared, ["dice"]).cc
    True
    """

    def __init__(self, gt: Any, *, sites: str = "components", connectivity: Optional[int] = None):
        self._validate(gt, sites, connectivity)
        self._prepare()

    def _validate(self, gt: Any, sites: str, connectivity: Optional[int]) -> None:
        self.sites = as_sites_mode(sites)
        self.connectivity = connectivity
        self.array = as_label_map(gt, "gt") if self.sites == "labels" else as_binary_mask(gt, "gt")
        self._conn = as_connectivity(connectivity, self.array.ndim)

    def _prepare(self) -> None:
        flat, raster_label, source, self.runs = raster_sites(self.array, self.sites, self._conn)
        self.raster_label = raster_label  # site label of each voxel of self.runs' (raster-order) list
        self.found = Sites.grouped(self.array.shape, flat, raster_label, source)
        self.coords = self.found.coords()
        # edges looked up in the GT itself: a face neighbour in the mask is in the same component
        # (any connectivity); with instance labels, in the same site when it holds the same label value
        own = True if self.sites == "components" else self.found.source_label[self.found.label - 1]
        self.own_edge, self.union_edge = face_edges(self.found.flat_index, self.coords, self.found.shape,
                                                    self.array.ravel(), own)
        self._components = None

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.array.shape

    def components(self):
        """The GT mask's :class:`~ccmetrics.components.ComponentCache` (shared by PQ, Lesion Dice, detection)."""
        from .components import ComponentCache

        if self._components is None:
            if self.sites == "components":
                self._components = ComponentCache(self.array, known=self.found, connectivity=self.connectivity)
            else:
                self._components = ComponentCache(self.array != 0)
        return self._components

    def check_options(self, sites: str, connectivity: Optional[int]) -> None:
        if (sites, connectivity) not in (("components", None), (self.sites, self.connectivity)):
            raise ValueError(f"this GroundTruth was prepared with sites={self.sites!r}, connectivity="
                             f"{self.connectivity!r}; evaluate got sites={sites!r}, connectivity={connectivity!r}: "
                             f"prepare it with the options you want")


def evaluate(
    pred: Any,
    gt: Any,
    metrics: Union[str, Sequence[Any]] = ("dice", "nsd", "hd95"),
    *,
    spacing: Optional[Any] = None,
    connectivity: Optional[int] = None,
    nsd_tolerance: float = 1.0,
    worst_distance: Optional[float] = None,
    sites: str = "components",
    classes: Optional[Sequence[int]] = None,
) -> Union[CaseResult, Dict[int, CaseResult]]:
    """Evaluate a segmentation per GT connected component (CC-Metrics) and globally.

    Parameters
    ----------
    pred : array_like or torch.Tensor
        Binary prediction, 2D or 3D (bool, 0/1 integers, 0.0/1.0 floats), or a
        label map when ``classes`` is given.
    gt : array_like, torch.Tensor or GroundTruth
        Binary GT of the same shape; an instance label map with
        ``sites="labels"``; a label map when ``classes`` is given; or a
        :class:`GroundTruth` prepared once for many predictions.
    metrics : str or sequence
        Built-in names ``"dice"``, ``"iou"``, ``"nsd"``, ``"hd"``, ``"hd95"``,
        ``"assd"``; case-level comparison metrics ``"pq"`` (adds ``pq``, ``sq``,
        ``rq`` to ``standard``; IoU > 0.5 matching of components, or of the GT
        instances with ``sites="labels"``), ``"lesion_dice"`` (BraTS-2023
        defaults: ``lesion_dice``, ``lesion_hd95``) and ``"detection"``
        (``sensitivity``, ``precision``, ``f1``, ``fp_volume``, ``fn_volume``,
        volumes in ml with a spacing); and/or MONAI metric objects (``CumulativeIterationMetric``,
        e.g. ``SurfaceDistanceMetric(symmetric=True)``), which are run on each
        component's crop with a two-channel one-hot input; their column is the
        class name and the foreground channel is kept.
    spacing : float or sequence of float, optional
        Voxel spacing in mm. Distances, the NSD tolerance and ``worst_distance``
        are then in mm and ``volume_mm3`` is reported; otherwise voxel units.
    connectivity : int, optional
        GT component connectivity: 26 (default), 18, 6 in 3D; 8 (default), 4 in 2D.
    nsd_tolerance : float
        NSD tolerance (same units as distances). Default 1.0.
    worst_distance : float, optional
        Replaces infinite distances (a region without prediction) in the CC
        means. Default: the image diagonal ``sqrt(sum((n_k * s_k)**2))``.
    sites : {"components", "labels"}
        Voronoi sites: GT connected components, or the labels of a GT instance
        map (touching instances stay separate).
    classes : sequence of int, optional
        Evaluate each class of label maps on its own (``pred == c`` vs
        ``gt == c``); returns a dict class -> CaseResult.

    Returns
    -------
    CaseResult or dict of CaseResult

    Examples
    --------
    Two lesions; the prediction finds the first exactly and misses the second:

    >>> import numpy as np
    >>> from ccmetrics import evaluate
    >>> gt = np.zeros((20, 20), bool)
    >>> gt[2:8, 2:8] = True      # large lesion, 36 px
    >>> gt[14:16, 14:16] = True  # small lesion, 4 px
    >>> pred = np.zeros_like(gt)
    >>> pred[2:8, 2:8] = True
    >>> result = evaluate(pred, gt, ["dice"])
    >>> round(result.standard["dice"], 3), result.cc["dice"]
    (0.947, 0.5)
    >>> result.per_component["dice"].tolist()
    [1.0, 0.0]
    """
    if classes is not None:
        if isinstance(gt, GroundTruth):
            raise ValueError("classes=... takes label maps, not a GroundTruth; prepare one GroundTruth per class")
        if as_sites_mode(sites) != "components":
            raise ValueError("classes=... needs sites='components' (label maps hold classes, not instances)")
        pred_map, gt_map = as_label_map(pred, "pred"), as_label_map(gt, "gt")
        check_same_shape(pred_map, gt_map)
        options = dict(spacing=spacing, connectivity=connectivity, nsd_tolerance=nsd_tolerance,
                       worst_distance=worst_distance)
        return {c: evaluate(pred_map == c, gt_map == c, metrics, **options) for c in as_classes(classes)}

    names, case_metrics, objects = parse_metrics(metrics)
    if isinstance(gt, GroundTruth):
        gt.check_options(sites, connectivity)
        prepared, unprepared = gt, False
    else:  # validated now, prepared below beside the prediction's voxel lists
        prepared, unprepared = GroundTruth.__new__(GroundTruth), True
        prepared._validate(gt, sites, connectivity)
    sites, connectivity = prepared.sites, prepared.connectivity
    pred_mask = as_binary_mask(pred, "pred")
    check_same_shape(pred_mask, np.broadcast_to(np.empty((), dtype=bool), prepared.shape))  # no image allocated
    spacing = as_spacing(spacing, pred_mask.ndim)
    tolerance = as_non_negative(nsd_tolerance, "nsd_tolerance")
    worst = image_diagonal(prepared.shape, spacing) if worst_distance is None else as_non_negative(
        worst_distance, "worst_distance")

    need_surface = [m for m in names if m in SURFACE_METRICS]
    with _worker_threads(prepared.shape) as pool:
        pred_voxels = _submit(pool, _PredVoxels, pred_mask, bool(need_surface))
        if unprepared:
            prepared._prepare()
        found = prepared.found
        case = _CaseGeometry(pred_voxels.result(), prepared, spacing, pool, surfaces=bool(need_surface))
        if need_surface:
            rows = grouped_surface_scores(*case.component_distances(pool), need_surface, tolerance)
            global_scores = surface_scores(*case.global_distances(), need_surface, tolerance)
    table = _component_table(found, spacing, sites)
    table["detected"] = case.intersection > 0
    standard: Dict[str, float] = {}
    for name in names:
        if name in OVERLAP_METRICS:
            table[name] = overlap_scores(case.intersection, case.pred_volume, found.volumes, name)
            standard[name] = float(overlap_scores(case.intersection.sum(), len(case.pred_flat),
                                                  len(found.flat_index), name))
    if need_surface:
        for name in need_surface:
            table[name] = np.array([row[name] for row in rows], dtype=np.float64)
        standard.update(global_scores)
    for column, metric in objects.items():
        table[column] = [case.run_monai(metric, c) for c in range(1, found.n + 1)]
        standard[column] = case.run_monai(metric, None)
    case_scores: Dict[str, float] = {}
    details = _case_level(case_metrics, pred_mask, prepared, spacing, case_scores)

    columns = names + list(objects)
    kinds = {m: objects.get(m, m) for m in columns}  # a built-in name, or the MONAI object behind a column
    if found.n == 0:
        cc = {m: empty_gt_score(kinds[m], len(case.pred_flat) == 0, worst) for m in columns}
    else:
        cc = {m: cc_mean(table[m], kinds[m], worst) for m in columns}
    return CaseResult(table, cc, standard, found.n, found.n == 0, worst, spacing, columns, details, case_scores,
                      len(case.pred_flat))


def _case_level(names, pred_mask, prepared: "GroundTruth", spacing, scores) -> Dict[str, Any]:
    """Run the case-level comparison metrics and add their scores to ``scores``."""
    from .components import ComponentCache
    from .lesions import BRATS_WORST_HD95, detection_from_components, lesion_dice_from_components
    from .matching import match_sites
    from .panoptic import PQResult

    details: Dict[str, Any] = {}
    if not names:
        return details
    found, sites, connectivity = prepared.found, prepared.sites, prepared.connectivity
    pred_cc = ComponentCache(pred_mask)
    gt_cc = prepared.components()
    if "pq" in names:
        gt_instances = found if sites == "labels" else gt_cc(connectivity)
        r = details["pq"] = PQResult.from_matching(match_sites(pred_cc(connectivity), gt_instances, "iou", 0.5))
        scores.update(pq=r.pq, sq=r.sq, rq=r.rq)
    if "lesion_dice" in names:
        r = details["lesion_dice"] = lesion_dice_from_components(pred_cc, gt_cc, 3, 50.0, spacing, BRATS_WORST_HD95)
        scores.update(lesion_dice=r.dice, lesion_hd95=r.hd95)
    if "detection" in names:
        r = details["detection"] = detection_from_components(pred_cc, gt_cc, connectivity, spacing, None)
        scores.update(sensitivity=r.sensitivity, precision=r.precision, f1=r.f1,
                        fp_volume=r.false_positive_volume, fn_volume=r.false_negative_volume)
    return details


#: images from this many voxels get worker threads (KD-tree work releases the GIL); smaller ones run serially
_THREADS_FROM = 1 << 20
_MAX_THREADS = 4
_BATCH_POINTS = 4096  # edge voxels per thread task at least (smaller tasks cost more than they save)
_GROUPED_FROM = 64  # regions from which one grouped KD-tree query serves them all
_GLOBAL_AFTER = 1 << 15  # prediction voxels outside the GT from which the whole-image distances wait for the regions


def _thread_count() -> int:
    """Worker threads for a large image: the CPUs this process may use, at most ``_MAX_THREADS``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS, Windows)
        cpus = os.cpu_count() or 1
    return min(cpus, _MAX_THREADS)


@contextlib.contextmanager
def _worker_threads(shape: Sequence[int]):
    """A thread pool for one evaluation of a large image (None: run serially), closed on exit."""
    threads = _thread_count()
    if threads < 2 or math.prod(shape) < _THREADS_FROM:
        yield None
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="ccmetrics") as pool:
        yield pool


class _Done:
    """The result of a call run at once, with a future's ``result()``."""

    def __init__(self, value: Any):
        self.value = value

    def result(self) -> Any:
        return self.value


def _submit(pool: Optional[ThreadPoolExecutor], fn, *args):
    return pool.submit(fn, *args) if pool is not None else _Done(fn(*args))


class _PredVoxels:
    """The prediction's voxel list: sorted flat indices, edges of the whole mask (``edges=True``), runs."""

    def __init__(self, pred_mask: np.ndarray, edges: bool = True):
        self.flat = np.flatnonzero(pred_mask)
        self.union_edge = mask_edges(self.flat, pred_mask.shape, pred_mask.ravel()) if edges else None
        self.runs = Runs(self.flat, pred_mask.shape)


def _concat(arrays: List[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.float32)


def _coords(flat_index: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return np.stack(np.unravel_index(flat_index, shape), axis=1)


class _CaseGeometry:
    """Regions, counts and edge voxels of one case, computed once and shared by all metrics.

    Everything is derived from the two voxel lists (sorted flat indices of the
    prediction and of the GT sites), never from an image-sized label map; edge
    voxels and distances only with ``surfaces=True`` (a surface metric).  With a
    thread ``pool``, the whole-image edge distances (which need no regions) run
    beside the nearest-site search (after it when many prediction voxels lie
    outside the GT: the nearest-label transform keeps every core busy), and the
    per-component KD-tree queries run on all workers; the values do not depend
    on the threads.
    """

    def __init__(self, pred: "_PredVoxels", prepared: GroundTruth, spacing: Optional[Tuple[float, ...]],
                 pool: Optional[ThreadPoolExecutor] = None, surfaces: bool = False):
        found = prepared.found
        self.shape, self.found, self.spacing = found.shape, found, spacing
        gt_coords, gt_own = prepared.coords, prepared.own_edge

        self.pred_flat, pred_union = pred.flat, pred.union_edge  # prediction coordinates only where needed
        self._global = None
        if surfaces:  # the whole-image distances need no regions: they start now, beside the nearest-site search
            self._gt_union_edges = gt_coords[prepared.union_edge]
            self._pred_union_edges = _coords(self.pred_flat[pred_union], self.shape)

        inside = prepared.array.ravel()[self.pred_flat] != 0
        many_outside = len(inside) - np.count_nonzero(inside) >= _GLOBAL_AFTER
        if surfaces and not many_outside:
            self._global = self._submit_pair(pool, self._pred_union_edges, self._gt_union_edges)
        region = np.zeros(len(self.pred_flat), dtype=np.int32)  # inside: the site, found in the GT's voxel list
        region[inside] = prepared.raster_label[prepared.runs.locate(self.pred_flat[inside])]
        if found.n and not inside.all():
            region[~inside] = assign_nearest_flat(self.pred_flat[~inside], self.shape, gt_coords[gt_own],
                                                  found.label[gt_own], spacing)
        if surfaces and many_outside:  # after the nearest-label transform, which keeps every core busy
            self._global = self._submit_pair(pool, self._pred_union_edges, self._gt_union_edges)
        self.pred_region = region
        self.pred_volume = np.bincount(region, minlength=found.n + 1)[1:]
        self.intersection = np.bincount(region[inside], minlength=found.n + 1)[1:]

        self._gt_coords = gt_coords
        if not surfaces:
            return
        own_label = region if found.n else np.ones_like(region)
        pred_own = own_face_edges(self.pred_flat, self.shape, own_label, pred_union, pred.runs)

        # edge voxels grouped by component (site voxels are already sorted by label)
        self._gt_edges = self._group(gt_coords[gt_own], found.label[gt_own])
        order = np.argsort(region[pred_own], kind="stable")
        self._pred_edges = self._group(_coords(self.pred_flat[pred_own][order], self.shape), region[pred_own][order])

    def _group(self, coords: np.ndarray, labels: np.ndarray) -> List[np.ndarray]:
        bounds = np.searchsorted(labels, np.arange(1, self.found.n + 2))
        return [coords[bounds[i]:bounds[i + 1]] for i in range(self.found.n)]

    def _submit_pair(self, pool: Optional[ThreadPoolExecutor], pred_edges: np.ndarray, gt_edges: np.ndarray):
        p, g = physical(pred_edges, self.spacing), physical(gt_edges, self.spacing)
        return _submit(pool, directed_distances, p, g), _submit(pool, directed_distances, g, p)

    def component_distances(self, pool: Optional[ThreadPoolExecutor] = None
                            ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Prediction->GT and GT->prediction edge distances inside the regions 1..K, concatenated.

        Returns ``(pred_to_gt, pred_bounds, gt_to_pred, gt_bounds)``: region ``c`` owns
        ``pred_to_gt[pred_bounds[c - 1]:pred_bounds[c]]`` and likewise for ``gt_to_pred``.

        From ``_GROUPED_FROM`` regions on (nuclei: thousands of small regions), two KD-tree queries serve
        all regions (:func:`ccmetrics.surface.grouped_directed_distances`, the region as an extra
        coordinate; about 30x faster there, 2x slower for a dozen large regions). Otherwise one tree per
        region and direction; with a pool, the 2K directed queries are submitted at once, largest first,
        small ones batched (at least ``_BATCH_POINTS`` edge voxels per task) so that threads pay off.
        Both ways give the same values bit for bit.
        """
        pred_edges, gt_edges = self._pred_edges, self._gt_edges
        bounds_p = np.cumsum([0] + [len(e) for e in pred_edges])
        bounds_g = np.cumsum([0] + [len(e) for e in gt_edges])
        if self.found.n >= _GROUPED_FROM:
            d_pg, d_gp = self._grouped_distances(pool)
            return d_pg, bounds_p, d_gp, bounds_g
        if pool is None:
            pairs = [self._submit_pair(None, p, g) for p, g in zip(pred_edges, gt_edges)]
            return (_concat([pair[0].result() for pair in pairs]), bounds_p,
                    _concat([pair[1].result() for pair in pairs]), bounds_g)
        cost = {(i, d): len(pred_edges[i]) + len(gt_edges[i]) for i in range(self.found.n) for d in (0, 1)}
        batches: List[List[Tuple[int, int]]] = []
        total = 0
        for unit in sorted(cost, key=lambda u: -cost[u]):
            if not batches or total >= _BATCH_POINTS:
                batches.append([])
                total = 0
            batches[-1].append(unit)
            total += cost[unit]

        def run(batch):
            out = {}
            for i, d in batch:
                p, g = physical(pred_edges[i], self.spacing), physical(gt_edges[i], self.spacing)
                out[i, d] = directed_distances(p, g) if d == 0 else directed_distances(g, p)
            return out

        where = {}
        for batch in batches:
            future = pool.submit(run, batch)
            where.update((unit, future) for unit in batch)
        return (_concat([where[i, 0].result()[i, 0] for i in range(self.found.n)]), bounds_p,
                _concat([where[i, 1].result()[i, 1] for i in range(self.found.n)]), bounds_g)

    def _grouped_distances(self, pool: Optional[ThreadPoolExecutor]) -> Tuple[np.ndarray, np.ndarray]:
        """Two KD-tree queries for all regions (the region as an extra coordinate), each shared by the pool's threads."""
        pred_edges, gt_edges = self._pred_edges, self._gt_edges
        counts_p = [len(e) for e in pred_edges]
        counts_g = [len(e) for e in gt_edges]
        labels = np.arange(1, self.found.n + 1)
        dim = len(self.shape)
        p = physical(np.concatenate(pred_edges) if pred_edges else np.zeros((0, dim), np.int64), self.spacing)
        g = physical(np.concatenate(gt_edges) if gt_edges else np.zeros((0, dim), np.int64), self.spacing)
        p_group, g_group = np.repeat(labels, counts_p), np.repeat(labels, counts_g)
        span = image_diagonal(self.shape, self.spacing)
        workers = 1 if pool is None else _thread_count()
        return (grouped_directed_distances(p, p_group, g, g_group, span, workers),
                grouped_directed_distances(g, g_group, p, p_group, span, workers))

    def global_distances(self) -> Tuple[np.ndarray, np.ndarray]:
        """Edge distances of the whole prediction and the whole GT."""
        if self._global is None:
            self._global = self._submit_pair(None, self._pred_union_edges, self._gt_union_edges)
        return self._global[0].result(), self._global[1].result()

    def run_monai(self, metric: Any, c: Optional[int]) -> float:
        """Run a MONAI metric object on region ``c``'s crop (or on the whole image for ``None``)."""
        if c is None:
            pred, gt = _coords(self.pred_flat, self.shape), self._gt_coords
        else:
            f = self.found
            pred = _coords(self.pred_flat[self.pred_region == c], self.shape)
            gt = self._gt_coords[f.starts[c - 1]:f.starts[c]]
        both = np.concatenate([pred, gt])
        if c is None or len(both) == 0:
            lo, crop_shape = np.zeros(len(self.shape), dtype=np.int64), self.shape
        else:
            lo = both.min(axis=0)
            crop_shape = tuple(both.max(axis=0) - lo + 1)
        return _monai_value(metric, _dense(pred - lo, crop_shape), _dense(gt - lo, crop_shape), self.spacing)


def _dense(coords: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    out = np.zeros(tuple(int(s) for s in shape), dtype=bool)
    out[tuple(coords.T)] = True
    return out


def _monai_value(metric: Any, pred: np.ndarray, gt: np.ndarray, spacing) -> float:
    import torch

    def one_hot(mask: np.ndarray):
        fg = torch.from_numpy(mask)
        return torch.stack([~fg, fg]).unsqueeze(0).float()

    kwargs = {"spacing": spacing} if _accepts_spacing(metric) and spacing is not None else {}
    value = metric(y_pred=one_hot(pred), y=one_hot(gt), **kwargs)
    if isinstance(value, (tuple, list)):
        value = value[0]
    return float(value.reshape(value.shape[0], -1)[0, -1])


def _accepts_spacing(metric: Any) -> bool:
    params = inspect.signature(metric._compute_tensor).parameters.values()
    return any(p.kind is p.VAR_KEYWORD or p.name == "spacing" for p in params)


def parse_metrics(metrics: Union[str, Sequence[Any]]) -> Tuple[List[str], List[str], Dict[str, Any]]:
    """Split a metrics argument into built-in names, case-level names and MONAI objects (by column name).

    Raises ``ValueError`` for unknown names, other objects and an empty list.
    """
    if isinstance(metrics, str) or not isinstance(metrics, (Sequence, Mapping)):
        metrics = [metrics]
    names: List[str] = []
    case_metrics: List[str] = []
    objects: Dict[str, Any] = {}
    for m in metrics:
        if isinstance(m, str):
            key = m.lower()
            if key in CASE_METRICS:
                case_metrics.append(key)
                continue
            if key not in BUILTIN_METRICS:
                raise ValueError(f"unknown metric {m!r}; built-in metrics are {BUILTIN_METRICS + tuple(CASE_METRICS)}, "
                                 f"or pass a MONAI metric object")
            if key not in names:
                names.append(key)
        elif isinstance(m, type):
            raise TypeError(f"metrics takes MONAI metric objects, got the class {m.__name__}: pass an instance "
                            f"such as {m.__name__}() with its options")
        elif callable(m) and hasattr(m, "_compute_tensor"):
            column, k = type(m).__name__, 2
            while column in objects:
                column, k = f"{type(m).__name__}_{k}", k + 1
            objects[column] = copy.deepcopy(m)  # never touch the caller's buffer
        else:
            raise ValueError(f"metrics must be names or MONAI metric objects, got {type(m).__name__}")
    if not names and not objects and not case_metrics:
        raise ValueError("metrics is empty")
    return names, case_metrics, objects


def _component_table(found: Sites, spacing, sites: str) -> pd.DataFrame:
    table = pd.DataFrame(index=pd.RangeIndex(1, found.n + 1, name="component"))
    table["volume"] = found.volumes
    if spacing is not None:
        table["volume_mm3"] = found.volumes * float(np.prod(spacing))
    if sites == "labels":
        table["gt_label"] = found.source_label
    return table
