"""Step 5 of :func:`ccmetrics.evaluate`: every asked metric from its engine, on one case's geometry.

A metric's record (:mod:`ccmetrics.metrics.registry`) names its engine; this module runs it:

* ``counts``: ``compute(intersection, pred_volume, gt_volume)`` once on the arrays of all regions
  (one entry each) and once on the whole image's totals;
* ``surface``: ``compute(groups, tolerance)`` on the directed distance lists of all regions and on
  the whole image's (:class:`ccmetrics.engine.geometry.CaseSurfaces`);
* ``region``: ``compute(pred, gt, spacing)`` on each region's two masks (its crop, built once for
  all such metrics) and on the whole image's (:meth:`ccmetrics.engine.geometry.CaseRegions.masks`);
* ``case``: ``compute(inputs)`` once per case on a :class:`ccmetrics.metrics.registry.CaseInputs` that shares
  one labelling of the prediction between the case-level metrics, done on the prediction's voxel list
  (the geometry's, when passed) and never on an image-sized label map.

Cost: counts and surface metrics are vectorised over regions (the geometry did the work); a region
metric costs one call per region on its crop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine.components import ComponentCache
from ..engine.geometry import CaseRegions, PredictionVoxels
from ..engine.ground_truth import GroundTruth
from . import registry

__all__ = ["case_values", "region_values"]


def region_values(
    metrics: list[registry.Metric],
    regions: CaseRegions,
    distances: tuple[Any, Any] | None,
    tolerance: float,
    spacing: tuple[float, ...] | None,
) -> dict[str, tuple[np.ndarray, float]]:
    """Per-region metrics: name -> (value in every region, float64, one per GT component; whole-image value).

    ``distances`` is ``(per_region, whole_image)`` of :class:`~ccmetrics.engine.geometry.CaseSurfaces`, needed by
    surface metrics only. The region engine builds each region's masks once for all its metrics.
    """
    out: dict[str, tuple[np.ndarray, float]] = {}
    found = regions.found
    for metric in metrics:
        if metric.engine == "counts":
            per_component = metric.compute(regions.intersection, regions.pred_volume, found.volumes)
            whole = metric.compute(regions.intersection.sum(), len(regions.pred_flat), len(found.flat_index))
            out[metric.name] = np.asarray(per_component, dtype=np.float64), float(whole)
        elif metric.engine == "surface":
            if distances is None:
                raise ValueError(f"{metric.name!r} is a surface metric: pass the case's distances")
            per_region, whole_image = distances
            whole = float(metric.compute(whole_image, tolerance)[0])
            out[metric.name] = metric.compute(per_region, tolerance), whole
    by_masks = [m for m in metrics if m.engine == "region"]
    if by_masks:
        values = np.empty((len(by_masks), found.n), dtype=np.float64)
        for c in range(1, found.n + 1):
            masks = regions.masks(c)
            values[:, c - 1] = [m.compute(*masks, spacing) for m in by_masks]
        whole_masks = regions.masks(None)
        for m, row in zip(by_masks, values):
            out[m.name] = row, float(m.compute(*whole_masks, spacing))
    return {m.name: out[m.name] for m in metrics}


def case_values(
    metrics: list[registry.Metric],
    pred_mask: np.ndarray,
    truth: GroundTruth,
    spacing: tuple[float, ...] | None,
    voxels: PredictionVoxels | None = None,
    pred: ComponentCache | None = None,
    detections: Any = None,
    nearest: Any = None,
    image: np.ndarray | None = None,
    regions: CaseRegions | None = None,
) -> tuple[dict[str, float], dict[str, Any]]:
    """The case-level metrics on one shared labelling: their columns' scores and their full results.

    ``voxels``: the prediction's voxel list the geometry made (:class:`~ccmetrics.engine.geometry.PredictionVoxels`);
    the prediction's components are then labelled on it, without another pass over the image.
    ``pred``: the prediction's :class:`~ccmetrics.engine.components.ComponentCache` when the caller holds one
    already; ``detections``: the case's judged lesions (:func:`ccmetrics.metrics.detection_rules.judge`), shared
    with the detection metric; ``nearest``: the whole image's edge distances with their nearest voxels
    (:class:`~ccmetrics.engine.geometry.EdgeNearest`), shared with Lesion Dice's per-lesion HD95; ``image``: the scan
    (float32, the GT's grid) and ``regions``: every predicted voxel's Voronoi region, for the ``pet`` metrics.
    Returns ``(scores, details)``: column name -> value for every column of the metrics' records,
    and metric name -> the object its ``compute`` returned.
    """
    scores: dict[str, float] = {}
    details: dict[str, Any] = {}
    if not metrics:
        return scores, details
    if pred is None:
        pred = (
            ComponentCache(pred_mask)
            if voxels is None
            else ComponentCache(pred_mask, flat=voxels.flat, runs=voxels.runs)
        )
    inputs = registry.CaseInputs(
        pred,
        truth.components(),
        truth.found,
        truth.sites,
        truth.connectivity,
        spacing,
        detections,
        nearest,
        image,
        regions,
    )
    for metric in metrics:
        result = details[metric.name] = metric.compute(inputs)
        scores.update((column.name, getattr(result, column.source)) for column in metric.columns)
    return scores, details
