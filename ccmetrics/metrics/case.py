"""Per-component evaluation: the CC-Metrics of one case, beside the usual global metrics.

Data flow: each input image is scanned once (validation aside) by one ``flatnonzero``; everything
after works on the two voxel lists, so time and memory grow with the foreground, not with the
image (no array holds more than a few bytes per foreground voxel; a 1024³ case with 40 lesions:
about 2 s and 0.3 GB above the inputs). :func:`evaluate` reads as the algorithm:

1. validate the inputs (``ccmetrics._inputs``) and resolve the metrics (:mod:`ccmetrics.metrics.registry`);
2. list the prediction's voxels (and, for surface metrics, the edges of the whole mask) beside
   preparing the GT: its voxels, components and edges (:class:`~ccmetrics.engine.ground_truth.GroundTruth`),
   on a second thread for large images (``threads_from`` of :class:`ccmetrics.EngineConfig`);
3. give every prediction voxel its Voronoi region: the site it lies in, or for prediction voxels
   outside the GT the nearest site (exact ties to the lowest label), and count the voxels of every
   region (:class:`~ccmetrics.engine.geometry.CaseRegions`);
4. for surface metrics only: the edge voxels of every region's prediction and GT and their
   directed distances, per region (spread over the worker threads) and over the whole image, which
   needs no regions and runs beside step 3 (:class:`~ccmetrics.engine.geometry.CaseSurfaces`);
5. every per-region metric from its engine (counts, distance lists, or the region's masks), then
   the case-level metrics on the shared component labelling (``ccmetrics.metrics._engines``), then the CC
   means (:mod:`ccmetrics.metrics.aggregation`).

The per-component values equal MONAI's metrics computed on ``pred & (partition == c)`` against
``gt & (partition == c)`` over the full image, because a region's masked volumes are zero outside
their bounding box. Which path each step takes (threads, KD-trees, kernels) follows the thresholds
of :class:`ccmetrics.EngineConfig`; the values do not depend on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from .. import schema
from .._arguments import public_arguments
from .._inputs import (
    as_label_map,
    as_non_negative,
    as_sites_mode,
    as_spacing,
    check_same_shape,
)
from ..engine.components import CheckedMask, ComponentCache
from ..engine.geometry import CaseRegions, CaseSurfaces, EdgeNearest, PredictionVoxels
from ..engine.ground_truth import GroundTruth
from ..engine.memory import MemoryGuard
from ..engine.memory import active_guard as memory_guard_in_force
from ..engine.threads import submit, worker_threads
from . import registry
from ._engines import case_values, region_values
from .aggregation import cc_mean, empty_gt_score, image_diagonal
from .classes import ClassSpec, parse_classes, remove_ignored
from .detection_rules import SUV_MAX_NEEDS_IMAGE, DetectionRule, LesionDetections, judge
from .pet_case import NEEDS_IMAGE, as_scan
from .results import CaseResult, component_table, prediction_table

__all__ = ["BUILTIN_METRICS", "CaseResult", "GroundTruth", "evaluate", "prepare_classes"]

#: the built-in metrics with a value per component (and a CC version)
BUILTIN_METRICS = registry.names(per_region=True)


@overload
def evaluate(
    pred: Any,
    gt: Any,
    metrics: str | Sequence[Any] = ...,
    *,
    spacing: Any | None = ...,
    connectivity: int | None = ...,
    nsd_tolerance: float = ...,
    worst_distance: float | None = ...,
    sites: str = ...,
    classes: None = ...,
    detection_rule: Any = ...,
    ignore_label: None = ...,
    image: Any = ...,
) -> CaseResult: ...


@overload
def evaluate(
    pred: Any,
    gt: Any,
    metrics: str | Sequence[Any] = ...,
    *,
    spacing: Any | None = ...,
    connectivity: int | None = ...,
    nsd_tolerance: float = ...,
    worst_distance: float | None = ...,
    sites: str = ...,
    classes: Any,
    detection_rule: Any = ...,
    ignore_label: int | None = ...,
    image: Any = ...,
) -> dict[int, CaseResult]: ...


@public_arguments("evaluate", positional_inputs=("pred", "gt"))
def evaluate(
    pred: Any,
    gt: Any,
    metrics: str | Sequence[Any] = registry.DEFAULT_METRICS,
    *,
    spacing: Any | None = None,
    connectivity: int | None = None,
    nsd_tolerance: float = 1.0,
    worst_distance: float | None = None,
    sites: str = "components",
    classes: Any = None,
    detection_rule: Any = None,
    ignore_label: int | None = None,
    image: Any = None,
) -> CaseResult | dict[int, CaseResult]:
    """Evaluate a segmentation per GT connected component (CC-Metrics) and globally.

    Call it with the GT and the prediction by keyword: ``evaluate(gt=gt, pred=pred)``. By position they
    come in MONAI's order, prediction first (``evaluate(pred, gt)``); that still works for a release, with a
    ``DeprecationWarning``, since swapped arrays give plausible wrong numbers.

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
        Names of the metric registry (:mod:`ccmetrics.metrics.registry`; ``ccmetrics.metrics.registry.names()``):
        per-region metrics ``"dice"``, ``"iou"``, ``"nsd"``, ``"hd"``, ``"hd95"``, ``"assd"`` and
        any registered with :func:`ccmetrics.register_metric`; case-level comparison metrics
        ``"pq"`` (adds ``pq``, ``sq``, ``rq`` to ``case_scores``; IoU > 0.5 matching of
        components, or of the GT instances with ``sites="labels"``), ``"lesion_dice"``
        (BraTS-2023 defaults: ``lesion_dice``, ``lesion_hd95``) and ``"detection"``
        (``sensitivity``, ``precision``, ``f1``, ``fp_volume``, ``fn_volume``, volumes in ml
        with a spacing); registry records; and/or MONAI metric objects
        (``CumulativeIterationMetric``, e.g. ``SurfaceDistanceMetric(symmetric=True)``), run
        on each component's crop with a two-channel one-hot input; their column is the class
        name and the foreground channel is kept.
    spacing : float, sequence of float or "voxel", optional
        Voxel spacing in mm. Distances, the NSD tolerance and ``worst_distance``
        are then in mm and ``volume_mm3`` is reported; otherwise (None, or ``"voxel"``
        as in :func:`ccmetrics.evaluate_dataset`) voxel units.
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
    classes : sequence of int, str or sequence of ClassSpec, optional
        Evaluate each class of label maps on its own (``pred == c`` vs
        ``gt == c``); returns a dict class value -> CaseResult. Regions, unions of
        labels, as ``"wt=1+2+3,tc=2+3,et=3"`` or :class:`ccmetrics.metrics.classes.ClassSpec`
        (:func:`ccmetrics.metrics.classes.parse_classes`; the dict is then keyed 1..n).
    detection_rule : str or DetectionRule, optional
        What counts as a detected lesion, for the ``detected`` column and the ``detection``
        metric (:mod:`ccmetrics.metrics.detection_rules`): ``"overlap"`` (default: any overlap),
        ``"iou:T"``, ``"dice:T"``, ``"coverage:T"``, ``"centroid"`` or ``"suv_max"`` (a predicted voxel
        covers the lesion's hottest voxel, the first in C order among equal maxima: needs ``image``). With
        the ``detection`` metric the result also holds ``n_pred`` and ``split`` per lesion and the table
        of predicted components (``per_prediction``).
    ignore_label : int, optional
        With ``classes``: the GT's voxels of this label (nnU-Net's ``ignore``) are set to
        background in both label maps before the classes are cut
        (:func:`ccmetrics.metrics.classes.remove_ignored`).
    image : array_like or torch.Tensor, optional
        The scan on the GT's grid (same shape), its values taken as SUV (body weight); read once as
        float32. Needed by the ``suv_max`` detection rule and the ``pet`` metrics
        (:mod:`ccmetrics.metrics.pet_case`): SUVmax, SUVmean, SUVpeak, MTV and TLG of every lesion and
        predicted component, and TMTV, TLG, Dmax and extent of both masks; with ``pet`` the result holds
        ``per_prediction`` even without ``detection``.
        A NaN or inf SUV inside a lesion or predicted component is a ``ValueError`` naming it.

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
    >>> result = evaluate(gt=gt, pred=pred, metrics=["dice"])
    >>> round(result.standard["dice"], 3), result.cc["dice"]
    (0.947, 0.5)
    >>> result.per_component["dice"].tolist()
    [1.0, 0.0]

    A detection rule: the large lesion predicted at 6 of its 36 pixels is detected by any overlap,
    not when half its area must be covered:

    >>> pred = np.zeros_like(gt); pred[2:4, 2:5] = True; pred[14:16, 14:16] = True
    >>> evaluate(gt=gt, pred=pred, metrics=["dice"]).per_component["detected"].tolist()
    [True, True]
    >>> evaluate(gt=gt, pred=pred, metrics=["dice"], detection_rule="coverage:0.5").per_component["detected"].tolist()
    [False, True]
    """
    if isinstance(spacing, str) and spacing == "voxel":  # voxel units, as evaluate_dataset and the command line say
        spacing = None
    if ignore_label is not None and classes is None:
        raise ValueError("ignore_label works on label maps: pass classes=[...] too (the classes to evaluate)")
    if classes is not None:
        return _evaluate_classes(
            pred,
            gt,
            metrics,
            classes,
            sites,
            spacing=spacing,
            connectivity=connectivity,
            nsd_tolerance=nsd_tolerance,
            worst_distance=worst_distance,
            detection_rule=detection_rule,
            ignore_label=ignore_label,
            image=image,
        )
    case = _Case.checked(
        pred, gt, metrics, sites, connectivity, spacing, nsd_tolerance, worst_distance, detection_rule, image
    )
    voxels, pred_cc, regions, distances, nearest = _geometry(case)  # 2.-4. voxel lists, regions, distances
    table = component_table(case.truth.found, case.spacing, case.truth.sites)
    detections, per_prediction = _detections(case, table, regions, pred_cc)
    standard: dict[str, float] = {}
    by_engine = sorted(case.per_region, key=lambda m: registry.ENGINES.index(m.engine))  # 5. metrics, by engine
    for name, (values, whole) in region_values(by_engine, regions, distances, case.tolerance, case.spacing).items():
        table[name], standard[name] = values, whole
    scores, details = case_values(
        case.case_level,
        case.pred_mask,
        case.truth,
        case.spacing,
        voxels,
        pred_cc,
        detections,
        nearest,
        case.image,
        regions,
    )
    _add_pet_columns(details.get("pet"), table, per_prediction)
    found, n_pred, worst = case.truth.found, len(regions.pred_flat), case.worst
    cc = {
        m.name: cc_mean(table[m.name], m, worst) if found.n else empty_gt_score(m, n_pred == 0, worst)
        for m in case.per_region
    }
    return CaseResult(
        table,  # type: ignore[arg-type]  # a table field: Columns until read
        cc,
        standard,
        found.n,
        found.n == 0,
        worst,
        case.spacing,
        [m.name for m in case.per_region],
        details,
        scores,
        n_pred,
        per_prediction,
        str(case.rule),
        gt_volume=len(found.flat_index),
        overlap_volume=int(regions.intersection.sum()),
    )


@dataclass(frozen=True)
class _Case:
    """One case's inputs, checked (step 1 of :func:`evaluate`): the metrics in their order, the detection rule, the
    GT (prepared lazily), the prediction's mask, the spacing, the NSD tolerance, the worst distance and the scan
    (float32, for the ``pet`` metrics; None without them)."""

    per_region: list[registry.Metric]
    case_level: list[registry.Metric]
    chosen: list[registry.Metric]
    rule: DetectionRule
    truth: GroundTruth
    pred: CheckedMask  # validated; made C-ordered (when it is not) beside the GT's preparation
    spacing: Any
    tolerance: float
    worst: float
    image: np.ndarray | None = None

    @property
    def pred_mask(self) -> np.ndarray:
        """The prediction as a C-contiguous boolean mask."""
        return self.pred.arrays()[0]

    @classmethod
    def checked(
        cls, pred, gt, metrics, sites, connectivity, spacing, nsd_tolerance, worst_distance, detection_rule, image=None
    ) -> _Case:
        chosen = registry.resolve(metrics)
        rule = DetectionRule.parse(detection_rule)
        truth = (
            gt.check_options(sites, connectivity)
            if isinstance(gt, GroundTruth)
            else GroundTruth(gt, sites=sites, connectivity=connectivity, prepare=False)
        )
        pred_checked = CheckedMask(pred, "pred")
        check_same_shape(pred_checked, truth)
        spacing = as_spacing(spacing, pred_checked.ndim)
        tolerance = as_non_negative(nsd_tolerance, "nsd_tolerance")
        worst = (
            image_diagonal(truth.shape, spacing)
            if worst_distance is None
            else as_non_negative(worst_distance, "worst_distance")
        )
        order = {name: i for i, name in enumerate(registry.names())}  # registered first, the others as given
        per_region = sorted((m for m in chosen if m.per_region), key=lambda m: m.name not in order)
        case_level = sorted((m for m in chosen if not m.per_region), key=lambda m: order.get(m.name, len(order)))
        scan = None if image is None else as_scan(image, truth.shape)
        if scan is None and any(m.name == "pet" for m in case_level):
            raise ValueError(NEEDS_IMAGE)
        if scan is None and rule.kind == "suv_max":
            raise ValueError(SUV_MAX_NEEDS_IMAGE)
        if scan is not None and not (rule.kind == "suv_max" or any(m.name == "pet" for m in case_level)):
            scan = None  # checked, but read by nothing
        return cls(per_region, case_level, chosen, rule, truth, pred_checked, spacing, tolerance, worst, scan)


def _geometry(case: _Case) -> tuple[PredictionVoxels, ComponentCache, CaseRegions, Any, EdgeNearest | None]:
    """Steps 2-4 of :func:`evaluate`: the prediction's voxel lists beside the GT's preparation, the memory check
    (under a data-set run's limit), every prediction voxel's region, and, for surface metrics, the distances and the
    whole image's nearest edge voxels (shared with Lesion Dice's per-lesion HD95)."""
    edges = any(m.engine == "surface" for m in case.per_region)
    guard = memory_guard_in_force()  # one context-variable look-up: None unless a data-set run set --max-memory
    truth, spacing = case.truth, case.spacing
    with worker_threads(truth.shape) as pool:
        pending = submit(pool, _prediction_voxels, case.pred, edges)
        truth.prepare()
        voxels = pending.result()
        pred_cc = ComponentCache(case.pred_mask, flat=voxels.flat, runs=voxels.runs)  # labelled once, if at all
        if guard is not None:  # the counts are known now, the per-component work is still to come
            _check_memory(guard, case.chosen, case.case_level, case.rule, truth, voxels, pred_cc)
        surfaces = CaseSurfaces(voxels, truth, spacing) if edges else None
        beside = surfaces.start_whole_image if surfaces else None  # whole-image distances: beside the regions
        regions = CaseRegions(voxels, truth, spacing, pool, beside)
        distances, nearest = None, None
        if surfaces is not None:
            surfaces.add_regions(regions.pred_region)
            distances = (surfaces.per_region(pool), surfaces.whole_image())
            nearest = surfaces.nearest()
    return voxels, pred_cc, regions, distances, nearest


def _prediction_voxels(pred: CheckedMask, edges: bool) -> PredictionVoxels:
    """The prediction's voxel lists (a Fortran-ordered prediction made C-ordered first, on this thread)."""
    mask, flat = pred.arrays()
    return PredictionVoxels(mask, edges, flat)


def _detections(
    case: _Case, table: Any, regions: CaseRegions, pred_cc: ComponentCache
) -> tuple[LesionDetections | None, Any]:
    """Which lesions are detected (the ``detected`` column), with the detection metric the lesions' ``n_pred``
    and ``split``, and with the detection or the pet metrics the per-prediction table."""
    with_detection = any(m.name == "detection" for m in case.case_level)
    with_table = with_detection or any(m.name == "pet" for m in case.case_level)
    if not (with_table or case.rule.kind != "overlap"):  # any overlap: the lesion's own voxels, counted already
        table[schema.DETECTED] = regions.intersection > 0
        return None, None
    components = pred_cc(case.truth.connectivity)
    detections = judge(components, case.truth.found, case.rule, image=case.image)
    table[schema.DETECTED] = detections.detected
    if with_detection:
        table[schema.N_PRED] = detections.n_pred
        table[schema.SPLIT] = detections.split
    if not with_table:
        return detections, None
    return detections, prediction_table(components, detections, regions.pred_flat, regions.pred_region, case.spacing)


def _add_pet_columns(pet: Any, table: Any, per_prediction: Any) -> None:
    """The ``pet`` group's columns (:class:`~ccmetrics.metrics.pet_case.PetResult`), after the metrics' own."""
    if pet is None:
        return
    for name, values in pet.per_component.items():
        table[name] = values
    for name, values in pet.per_prediction.items():
        per_prediction[name] = values


def _check_memory(
    guard: MemoryGuard,
    chosen: Sequence[registry.Metric],
    case_level: Sequence[registry.Metric],
    rule: DetectionRule,
    truth: GroundTruth,
    voxels: PredictionVoxels,
    pred_cc: ComponentCache,
) -> None:
    """Check the case's counts against the memory limit in force (:func:`ccmetrics.engine.memory.memory_guard`): the
    GT's components and both masks' runs (known by now), and the prediction's components where the metrics label them
    anyway (PQ and detection at the evaluation's connectivity, Lesion Dice at the full one, any rule but "overlap"):
    labelled here, a little earlier than they would be, and kept for them. Raises
    :class:`~ccmetrics.engine.memory.MemoryLimitError` over the limit."""
    names = {m.name for m in case_level}
    labelled: list[int | None] = (
        [truth.connectivity] if rule.kind != "overlap" or names & {"pq", "detection", "pet"} else []
    )
    if "lesion_dice" in names:
        labelled.append(None)  # the full connectivity
    guard.check(
        [m.name for m in chosen],
        gt=truth.found.n,
        pred=max((pred_cc(c).n for c in labelled), default=0),
        runs=len(truth.geometry.runs) + len(voxels.runs),
        voxels=int(truth.array.size),
        ndim=truth.array.ndim,
        gt_sites=truth.geometry,
    )


def _evaluate_classes(
    pred: Any, gt: Any, metrics: Any, classes: Any, sites: str, *, ignore_label: int | None = None, **options: Any
) -> dict[int, CaseResult]:
    """``evaluate`` of each class of two label maps on its own (``pred == c`` against ``gt == c``, or the
    unions of a region's labels), after the ignore label's voxels became background in both."""
    if isinstance(gt, GroundTruth):
        raise ValueError("classes=... takes label maps, not a GroundTruth; prepare one GroundTruth per class")
    if as_sites_mode(sites) != "components":
        raise ValueError("classes=... needs sites='components' (label maps hold classes, not instances)")
    prepared = prepare_classes(pred, gt, classes, ignore_label=ignore_label, connectivity=options.get("connectivity"))
    if options.get("image") is not None and prepared:  # read once as float32 for all classes
        options["image"] = as_scan(options["image"], prepared[0][2].shape)
    results = {}
    for spec, mask, truth in prepared:
        try:
            results[spec.value] = evaluate(gt=truth, pred=mask, metrics=metrics, **options)
        except ValueError as exc:  # a NaN SUV in "lesion 2": of which class?
            if len(prepared) == 1 or "non-finite SUV" not in str(exc):
                raise
            raise ValueError(f"class {spec.value}: {exc}") from None
    return results


def prepare_classes(
    pred: Any, gt: Any, classes: Any, *, ignore_label: int | None = None, connectivity: int | None = None
) -> list[tuple[ClassSpec, np.ndarray, GroundTruth]]:
    """Each class of two label maps as :func:`evaluate` with ``classes`` takes it: the class, the prediction's
    mask and the GT's mask as a :class:`~ccmetrics.engine.ground_truth.GroundTruth` (not yet prepared), after the
    ignore label's voxels became background in both.

    Pass each pair to :func:`evaluate` (the values are those of ``evaluate(gt=gt, pred=pred, classes=...)``) and
    keep the GroundTruth for more work on the same lesions (their components are found once).

    Examples
    --------
    >>> gt = np.array([[1, 1, 0, 2]]); pred = np.array([[1, 0, 0, 2]])
    >>> [(spec.value, mask.tolist(), truth.found.n) for spec, mask, truth in prepare_classes(pred, gt, [1, 2])]
    [(1, [[True, False, False, False]], 1), (2, [[False, False, False, True]], 1)]
    """
    specs = parse_classes(classes)
    pred_map, gt_map = as_label_map(pred, "pred"), as_label_map(gt, "gt")
    check_same_shape(pred_map, gt_map)
    if ignore_label is not None:
        ignore_label = int(as_non_negative(ignore_label, "ignore_label"))
        gt_map, pred_map, _ = remove_ignored(gt_map, pred_map, ignore_label)
    return [
        (spec, spec.mask(pred_map), GroundTruth(spec.mask(gt_map), connectivity=connectivity, prepare=False))
        for spec in specs
    ]


def __getattr__(name: str):  # names this module held before the registry: deprecated, computed from it
    return registry.legacy(__name__, name)
