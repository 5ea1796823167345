"""Outcome maps (``--write-maps``): each case's lesions and predicted components painted by their outcome, for
ITK-SNAP, 3D Slicer and any viewer that reads NIfTI.

A case's outcome map is a uint8 label map on its GT's grid (the grid the case was evaluated on), written as
``OUT_DIR/maps/<case>.nii.gz`` (with classes, one map per class: ``<case>_class<value>.nii.gz``, since regions such
as ``wt=1+2+3`` and ``tc=2+3`` overlap), with the GT's affine; a GT given as a DICOM SEG, with the images of its
series (``--reference-images``), gets its map as a DICOM SEG of that series, ``<case>.dcm``, one segment a label
(OHIF and 3D Slicer show it with the segments' recommended colours); without those images, NIfTI on the grid the
case was evaluated on. Its labels (:data:`ccmetrics.results.outcomes.OUTCOME_LABELS`):

===== ================== ===========================================================================================
label name               voxels
===== ================== ===========================================================================================
0     background         neither GT nor prediction
1     found_lesion       every voxel of a GT lesion (component) that is detected (``per_component.detected`` True)
2     missed_lesion      every voxel of a GT lesion that is not detected (``detected`` False)
3     tp_outside_gt      a voxel outside the GT of a predicted component that is a true positive
                         (``per_prediction.outcome`` ``tp``: it overlaps a detected lesion)
4     false_positive     a voxel outside the GT of a predicted component that is a false positive (``outcome`` ``fp``)
===== ================== ===========================================================================================

So a GT voxel always takes its lesion's outcome (a predicted voxel inside a lesion is shown as the lesion is), and
labels 3 and 4 colour only what the prediction adds outside the GT. A split lesion (two components over it) is one
found lesion with two true-positive components; a merged component (over two lesions) is one true positive whose
lesions are each found or missed as the rule judged them; a false positive that overlaps a lesion the rule did not
count as detected (e.g. below ``iou:0.5``) is painted 2 inside that lesion and 4 outside it. An empty GT gives a map
of 4s (or of zeros without prediction); an empty prediction a map of 2s.

The outcomes are the tables' own: ``detected`` of the case's ``per_component`` rows and ``outcome`` of its
``per_prediction`` rows, looked up by the component numbers (1..K, 1..M in raster order of the first voxel) of the
engine's own labelling (:func:`ccmetrics.engine.components.find_sites`, at the evaluation's connectivity) of the
masks the case was evaluated on (a class's mask after the ignore label: :func:`ccmetrics.metrics.case.prepare_classes`).
Without the ``detection`` (or ``pet``) metric there is no ``per_prediction`` table, and the predicted components
are judged by the function that makes its ``outcome`` (:func:`ccmetrics.metrics.detection_rules.judge`, the same
rule). The colours are Okabe and Ito's (distinguishable with the common colour-vision deficiencies), in
``OUT_DIR/maps/outcome_labels.txt`` (ITK-SNAP's label description file) and ``outcome_labels.ctbl`` (3D Slicer's
colour table), written once per run (:func:`write_outcome_colour_tables`).

Cost per case and class: one labelling of each mask (the evaluation labelled them too: its labels are not kept),
one uint8 volume (1 byte a voxel, counted in the case's memory estimate: :func:`outcome_map_bytes`), one compressed
NIfTI write.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import schema
from .._files import file_stem
from .._inputs import as_binary_mask
from ..engine.components import find_sites
from ..formats.image import Image
from ..formats.label_maps import (
    seg_source_series,
    write_colour_tables,
    write_label_map,
    write_label_map_seg,
)
from ..results.outcomes import FALSE_POSITIVE, FOUND, MISSED, OUTCOME_LABELS, TP_OUTSIDE_GT

__all__ = [
    "COLOUR_TABLES",
    "MAPS_FOLDER",
    "map_file",
    "outcome_map",
    "outcome_map_bytes",
    "with_maps_folder",
    "write_case_maps",
    "write_outcome_colour_tables",
]

#: the folder of the output folder that holds the maps and their colour tables
MAPS_FOLDER = "maps"
#: the colour tables' file name without its extension (``.txt``: ITK-SNAP, ``.ctbl``: 3D Slicer)
COLOUR_TABLES = "outcome_labels"


def outcome_map(gt: Any, pred: Any, detected: Any, pred_tp: Any, connectivity: int | None = None) -> np.ndarray:
    """The outcome map of one case and class (uint8, the masks' shape): see the module's table.

    Parameters
    ----------
    gt, pred : array_like of bool
        The masks the case was evaluated on (same shape).
    detected : array_like of bool, (K,)
        Lesion k + 1's ``detected`` (the GT's components 1..K, raster order of their first voxel).
    pred_tp : array_like of bool, (M,)
        Predicted component m + 1 is a true positive (``outcome`` ``tp``).
    connectivity : int, optional
        The evaluation's connectivity (the GT's and the prediction's components): 26 or 8 by default.

    Returns
    -------
    numpy.ndarray of uint8
        The predicted components' voxels painted 3 or 4, then the lesions' voxels 1 or 2 over them. Cost: one
        labelling of each mask, two scatters of their voxels.

    Examples
    --------
    A found lesion covered and spilled over, a missed one, a false positive:

    >>> gt = np.array([[1, 1, 0, 0, 1, 0, 0]], bool)
    >>> pred = np.array([[0, 1, 1, 0, 0, 0, 1]], bool)
    >>> outcome_map(gt, pred, detected=[True, False], pred_tp=[True, False]).tolist()
    [[1, 1, 3, 0, 2, 0, 4]]
    """
    gt_sites = find_sites(as_binary_mask(gt, "gt"), connectivity=connectivity)
    pred_sites = find_sites(as_binary_mask(pred, "pred"), connectivity=connectivity)
    detected = np.asarray(detected, dtype=bool).reshape(-1)
    pred_tp = np.asarray(pred_tp, dtype=bool).reshape(-1)
    if len(detected) != gt_sites.n or len(pred_tp) != pred_sites.n:
        raise ValueError(
            f"the outcomes do not fit the masks: {len(detected)} lesion outcomes for {gt_sites.n} GT components, "
            f"{len(pred_tp)} prediction outcomes for {pred_sites.n} predicted components"
        )
    out = np.zeros(int(np.prod(gt_sites.shape)), dtype=np.uint8)
    if pred_sites.n:
        out[pred_sites.flat_index] = np.where(pred_tp, TP_OUTSIDE_GT, FALSE_POSITIVE).astype(np.uint8)[
            pred_sites.label - 1
        ]
    if gt_sites.n:
        out[gt_sites.flat_index] = np.where(detected, FOUND, MISSED).astype(np.uint8)[gt_sites.label - 1]
    return out.reshape(gt_sites.shape)


def map_file(case: str, class_value: int | None = None, *, dicom: bool = False) -> str:
    """A map's path relative to the output folder (``/``-separated, as the per-case table names it): the case id
    made safe for file names (``ccmetrics._files.file_stem``), ``_class<value>`` with classes; ``.nii.gz``, or
    ``.dcm`` for a DICOM SEG. When the stem is not the id itself, or holds a capital letter, the id's hash follows it:
    two ids never share a map, also on a file system that ignores case (macOS, Windows), where ``Case1`` and
    ``case1`` would name one file.

    Examples
    --------
    >>> map_file("case_001"), map_file("case_001", 2), map_file("a/b")
    ('maps/case_001.nii.gz', 'maps/case_001_class2.nii.gz', 'maps/a_b-3ec69c85a4.nii.gz')
    >>> map_file("Case1"), map_file("case1")
    ('maps/Case1-7692af5599.nii.gz', 'maps/case1.nii.gz')
    """
    safe = file_stem(case)
    if safe != case or safe != safe.lower():
        safe += "-" + hashlib.sha1(case.encode()).hexdigest()[:10]
    suffix = "" if class_value is None else f"_class{int(class_value)}"
    return f"{MAPS_FOLDER}/{safe}{suffix}{'.dcm' if dicom else '.nii.gz'}"


def with_maps_folder(options: Any, out_dir: str | os.PathLike | None) -> Any:
    """The options (:class:`~ccmetrics.campaign.options.EvalOptions`) with their maps' folder, ``out_dir/maps``
    (absolute), when they write maps; raises ``ValueError`` when they do without an output folder."""
    if not options.write_maps:
        return options
    if out_dir is None:
        raise ValueError(
            "write_maps (--write-maps) writes the outcome maps into the output folder's maps/: give out_dir too"
        )
    return dataclasses.replace(options, maps_dir=str(Path(os.path.abspath(out_dir)) / MAPS_FOLDER))


def write_outcome_colour_tables(maps_dir: str | os.PathLike) -> list[Path]:
    """Write the outcome labels' colour tables into ``maps_dir``: ``outcome_labels.txt`` (ITK-SNAP: Segmentation >
    Import Label Descriptions) and ``outcome_labels.ctbl`` (3D Slicer: load it as a colour table, then choose it as
    the label map's colour node)."""
    return write_colour_tables(maps_dir, OUTCOME_LABELS, COLOUR_TABLES)


def outcome_map_bytes(shape: Any, options: Any) -> int:
    """What writing a case's outcome map adds to its peak: the uint8 map and a class's two boolean masks (3 bytes a
    voxel; the components' voxel lists grow with the foreground, as the evaluation's do). 0 without ``write_maps``."""
    return 3 * int(np.prod(shape)) if options.write_maps else 0


def write_case_maps(
    case: str,
    options: Any,
    gt: Image,
    pred: Image,
    components: Mapping[int, Any],
    predictions: Mapping[int, Any],
    scan: np.ndarray | None = None,
    gt_file: Any = None,
) -> dict[int, str]:
    """Write one case's outcome maps (one per class) into ``options.maps_dir``; returns each class's file, relative
    to the output folder (:func:`map_file`).

    ``gt`` and ``pred`` are the case's images on one grid, as it was evaluated; ``components`` and ``predictions``
    its ``per_component`` and ``per_prediction`` rows by class (Columns or DataFrames; a class's predictions None
    without that table: its components are judged by :func:`ccmetrics.metrics.detection_rules.judge` under the
    options' rule, on ``scan`` for ``suv_max``). A GT given as a DICOM SEG (``gt_file``) with the images of its
    series (``options.reference_images``) gets its map as a DICOM SEG of that series
    (:func:`ccmetrics.formats.label_maps.write_label_map_seg`); every other case, NIfTI. Raises ``OutputWriteError``
    (an ``OSError``) when a file cannot be written.
    """
    series = seg_source_series(gt_file) if options.reference_images else None
    if options.classes:
        from ..metrics.case import prepare_classes

        prepared = prepare_classes(
            pred.array, gt.array, options.classes, ignore_label=options.ignore_label, connectivity=options.connectivity
        )
        masks = [(spec.value, mask, truth.array) for spec, mask, truth in prepared]
    else:
        masks = [(1, as_binary_mask(pred.array, "pred"), as_binary_mask(gt.array, "gt"))]
    written = {}
    for c, pred_mask, gt_mask in masks:
        detected = _by_number(components[c], schema.COMPONENT, schema.DETECTED)
        table = predictions.get(c)
        if table is not None:
            pred_tp = _by_number(table, schema.PREDICTION, schema.OUTCOME) == schema.TRUE_POSITIVE
        else:
            pred_tp = _judged(gt_mask, pred_mask, options, scan)
        labels = outcome_map(gt_mask, pred_mask, detected, pred_tp, options.connectivity)
        name = map_file(case, c if options.classes else None, dicom=series is not None)
        target = Path(options.maps_dir) / Path(name).name
        if series is not None:
            from .. import __version__

            write_label_map_seg(
                target, labels, gt, options.reference_images, series, OUTCOME_LABELS, software_version=__version__
            )
        else:
            write_label_map(target, labels, gt)
        written[c] = name
    return written


def _by_number(table: Any, number: str, column: str) -> np.ndarray:
    """A table's column ordered by the component numbers 1..n (``component`` or ``prediction``)."""
    numbers = np.asarray(table[number], dtype=np.int64)
    values = np.asarray(table[column])
    if sorted(numbers.tolist()) != list(range(1, len(numbers) + 1)):  # never a value left unset
        raise ValueError(f"the table's {number} column is not 1..{len(numbers)}: was it changed?")
    out = np.empty(len(numbers), dtype=values.dtype)
    out[numbers - 1] = values
    return out


def _judged(gt_mask: np.ndarray, pred_mask: np.ndarray, options: Any, scan: np.ndarray | None) -> np.ndarray:
    """Each predicted component's outcome (true positive or not) under the options' detection rule, as the
    ``per_prediction`` table's ``outcome`` is made (:func:`ccmetrics.metrics.detection_rules.judge`)."""
    from ..metrics.detection_rules import judge

    gt_sites = find_sites(gt_mask, connectivity=options.connectivity)
    pred_sites = find_sites(pred_mask, connectivity=options.connectivity)
    return np.asarray(judge(pred_sites, gt_sites, options.rule(), image=scan).pred_tp, dtype=bool)
