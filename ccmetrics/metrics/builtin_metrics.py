"""The built-in metrics: the records of Dice, IoU, NSD, HD, HD95, ASSD, PQ, Lesion Dice, detection and PET.

:func:`builtin_records` builds them, in the order of the tables; :mod:`ccmetrics.metrics.registry` registers
them when it is imported (they are the only records marked ``builtin``, which can be neither replaced nor
removed). The counts engine's formulas come from :data:`ccmetrics.metrics.overlap.OVERLAP_FORMULAS`, the
surface engine's reductions from :data:`ccmetrics.engine.surface.SURFACE_REDUCTIONS`; the case-level metrics
call PQ (:mod:`~ccmetrics.metrics.panoptic`) and Lesion Dice and detection (:mod:`~ccmetrics.metrics.lesions`)
on a case's shared :class:`~ccmetrics.metrics.registry.CaseInputs`, importing those modules on first use.
This module reads the registry's model at call time only, so that the registry can import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.surface import SURFACE_REDUCTIONS
from .overlap import OVERLAP_FORMULAS

if TYPE_CHECKING:
    from .registry import CaseInputs, Metric

__all__ = ["builtin_records"]


def _pq(inputs: CaseInputs) -> Any:
    from .panoptic import pq_from_sites

    return pq_from_sites(inputs.pred(inputs.connectivity), inputs.gt_sites)  # the GT's components or instances


def _lesion_dice(inputs: CaseInputs) -> Any:
    from .lesions import lesion_dice_from_components

    return lesion_dice_from_components(inputs.pred, inputs.gt, spacing=inputs.spacing, nearest=inputs.nearest)


def _detection(inputs: CaseInputs) -> Any:
    from .lesions import detection_from_components

    return detection_from_components(
        inputs.pred, inputs.gt, inputs.connectivity, inputs.spacing, detections=inputs.detections
    )


def _pet(inputs: CaseInputs) -> Any:
    from .pet_case import pet_from_inputs

    return pet_from_inputs(inputs)


def _pet_columns(column: Any) -> tuple[Any, ...]:
    """The per-case columns of the ``pet`` group: a ``gt_`` and a ``pred_`` one per measure."""
    measures = (
        ("tmtv_ml", "TMTV (ml)", "total metabolic tumour volume: the mask's voxels × voxel volume"),
        ("tlg", "TLG (ml)", "total lesion glycolysis: Σ SUV × voxel volume over the mask"),
        ("suv_max", "SUVmax", "the largest SUV in the mask"),
        ("suv_mean", "SUVmean", "the mean SUV over the mask's voxels"),
        ("dmax_mm", "Dmax (mm)", "the largest distance between two component centroids (0 with one)"),
        ("extent_mm", "Extent (mm)", "the largest distance between two voxels of the mask"),
        ("lesion_count", "lesions", "the mask's lesions: the GT's sites, the prediction's components"),
    )
    return tuple(
        column(f"{side}_{name}", f"{label} {display}", "measure", source=f"{side}_{name}", description=text)
        for name, display, text in measures
        for side, label in (("gt", "GT"), ("pred", "Predicted"))
    )


def builtin_records() -> list[Metric]:
    """The records of the built-in metrics, in the tables' order: per-region ones first, then case-level ones.

    >>> [m.name for m in builtin_records()]
    ['dice', 'iou', 'nsd', 'hd', 'hd95', 'assd', 'pq', 'lesion_dice', 'detection', 'pet']
    """
    from .registry import WORST_DISTANCE, Column, Metric  # at call time: the registry imports this module

    overlap = [
        ("dice", "Dice", "Dice coefficient 2|P∩G| / (|P| + |G|)"),
        ("iou", "IoU", "intersection over union |P∩G| / |P∪G|"),
    ]
    surface = [
        ("nsd", "NSD", "overlap", "normalised surface distance (surface Dice) at the NSD tolerance"),
        ("hd", "HD", "distance", "Hausdorff distance: the larger directed maximum of the edge distances"),
        ("hd95", "HD95", "distance", "the larger of the two directed 95th percentiles of the edge distances"),
        ("assd", "ASSD", "distance", "average symmetric surface distance (mean of all edge distances)"),
    ]
    out = [
        Metric(
            name,
            display,
            "overlap",
            "counts",
            OVERLAP_FORMULAS[name],
            best=1.0,
            worst=0.0,
            description=text,
            builtin=True,
        )
        for name, display, text in overlap
    ]
    for name, display, kind, text in surface:
        reduction = SURFACE_REDUCTIONS[name]
        distance = kind == "distance"
        out.append(
            Metric(
                name,
                display,
                kind,
                "surface",
                reduction,
                higher_is_better=not distance,
                best=reduction.both_empty,
                worst=WORST_DISTANCE if distance else 0.0,
                unit="length" if distance else "",
                description=text,
                builtin=True,
            )
        )
    out += [
        Metric(
            "pq",
            "PQ",
            "case",
            "case",
            _pq,
            builtin=True,
            description="Panoptic Quality: components matched at IoU > 0.5 (GT instances with sites='labels')",
            columns=(
                Column("pq", "PQ", "rate", source="pq"),
                Column("sq", "SQ", "rate", source="sq"),
                Column("rq", "RQ", "rate", source="rq"),
            ),
        ),
        Metric(
            "lesion_dice",
            "Lesion Dice",
            "case",
            "case",
            _lesion_dice,
            builtin=True,
            description="BraTS-2023 lesion-wise Dice and HD95 (ccmetrics.lesion_dice's defaults: glioma)",
            columns=(
                Column("lesion_dice", "Lesion Dice", "overlap", best=1.0, source="dice"),
                Column("lesion_hd95", "Lesion HD95", "distance", False, 0.0, "length", source="hd95"),
            ),
        ),
        Metric(
            "detection",
            "Detection",
            "case",
            "case",
            _detection,
            builtin=True,
            description=(
                "lesion detection under the detection rule (default: any overlap), split and merged lesions, "
                "and the autoPET false positive / negative volumes"
            ),
            columns=(
                Column("sensitivity", "Sensitivity", "rate", source="sensitivity"),
                Column("precision", "Precision", "rate", source="precision"),
                Column("f1", "F1", "rate", source="f1"),
                Column("fp_volume", "FP volume", "volume", False, 0.0, "volume", source="false_positive_volume"),
                Column("fn_volume", "FN volume", "volume", False, 0.0, "volume", source="false_negative_volume"),
                Column("split_lesions", "Split lesions", "count", False, 0.0, source="n_split"),
                Column("merged_components", "Merged components", "count", False, 0.0, source="n_merged"),
            ),
        ),
        Metric(
            "pet",
            "PET",
            "case",
            "case",
            _pet,
            builtin=True,
            description=(
                "PET quantification on the scan (evaluate(image=...)): SUVmax, SUVmean, SUVpeak, MTV and TLG per "
                "lesion and per predicted component, TMTV, TLG, Dmax and extent per case"
            ),
            columns=_pet_columns(Column),
        ),
    ]
    return out
