"""Evaluating whole data sets: pairing, validation, the per-case loop and the tidy tables.

Data flow: a list of :class:`CaseTask` (from :func:`pair_folders`, or from
arrays and files given directly) → :func:`evaluate_task` on each, in this
process, in worker processes or on a Dask cluster → one
:class:`DatasetResult` holding two tidy tables that everything downstream
(CSV files, :mod:`ccmetrics.analysis.stats`, :mod:`ccmetrics.analysis.plots`, the command line)
reads:

* ``per_component``: one row per GT connected component (lesion) of every
  case and class (see :meth:`ccmetrics.CaseResult.to_frame`);
* ``per_case``: one row per case and class: ``status`` (``ok``, ``flagged``,
  ``error``), ``flags``, ``error``, the files, the global metric ``m``, the CC
  value ``cc_m`` and the case-level scores.

Nothing is dropped in silence: every image file of either folder appears in
``per_case``; a GT without prediction is evaluated as an empty prediction and
flagged ``missing_prediction``; a prediction without GT, a file that cannot be
read, a geometry mismatch, a non-binary mask or NaN voxels give an ``error``
row that names the problem, and the other cases go on. Non-image files are
listed in ``DatasetResult.ignored_files``.

Each task reads its own two files, so a worker holds one case at a time.
The cases are scheduled by :func:`ccmetrics.campaign.scheduler.run_cases`: with an
``out_dir`` every finished case is recorded there at once, ``resume`` takes
the cases whose records still stand, a worker process that dies costs only
its case, Ctrl-C keeps what is finished. Results are sorted by case and
class, so the tables are identical whatever the number of workers, the
scheduler, or which cases came from records. Cost: one read of each file
plus one :func:`ccmetrics.evaluate` per case and class, one header read per
file for the memory estimate, and one small record file per case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import json
import math
import os
import pickle
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .. import _lazy, schema
from .._escaping import write_csv
from .._files import atomic_write
from .._inputs import NotBinaryError, as_spacing
from ..columns import Columns
from ..engine.config import EngineConfig, engine_config
from ..engine.config import current as current_engine
from ..formats.dicom import check_union_memory, holds_dicom
from ..formats.grids import align_pair
from ..formats.image import ImageMemoryError
from ..formats.io import Image, _load_image, image_id, is_image_file
from ..metrics import registry
from ..metrics.aggregation import cc_values
from ..metrics.calibration import lesion_reliability
from ..metrics.case import evaluate
from ..metrics.classes import ClassSpec, DatasetJson, class_values, parse_classes, read_dataset_json
from ..metrics.detection_curves import DetectionCurves, detection_curves_from_tables
from ..metrics.detection_rules import DetectionRule
from ..metrics.results import CaseResult
from ..metrics.thresholds import threshold_summary
from ..schema import CASE, CLASS, ERROR, FAILED, FLAGGED, FLAGS, OK, STATUS
from .output_folder import begin_tables, check_inputs, finish_tables, locked, prepare_out_dir, read_tables
from .probabilities import (
    ProbabilityOptions,
    attach_probabilities,
    evaluate_with_maps,
    read_case_maps,
    segmentation_of,
)
from .records import decode_tables, file_fingerprint
from .scheduler import EvaluationFailed, EvaluationInterrupted, Failed, RunInfo, Stopped, run_cases

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = [
    "CaseTask",
    "DatasetResult",
    "EvalOptions",
    "evaluate_dataset",
    "evaluate_task",
    "pair_folders",
    "tasks_from_pairs",
    "MISSING_PREDICTION",
    "EMPTY_GT",
]

#: flag of a GT without prediction file (evaluated as an empty prediction)
MISSING_PREDICTION = schema.MISSING_PREDICTION
#: flag of a case whose GT has no component (scored by the empty-GT rule, summarised apart)
EMPTY_GT = schema.EMPTY_GT_FLAG
_PathLike = Union[str, os.PathLike]


@dataclass
class CaseTask:
    """One case to evaluate: its id, its GT and prediction (a path, an array or an
    :class:`~ccmetrics.formats.image.Image`).

    ``pred=None`` means the prediction is missing (evaluated as empty and
    flagged, unless the segmentation comes from the probability map); ``gt=None`` means there is no GT (an
    error row); ``error`` set means the case is already known to be broken (e.g. two GT files with one id).
    """

    case: str
    gt: Any = None
    pred: Any = None
    error: str = ""
    #: the case's probability map (a path, an array or an Image), with ``probabilities``
    prob: Any = None

    def file_names(self) -> tuple[str, str]:
        return _describe(self.gt), _describe(self.pred)


@dataclass(frozen=True)
class EvalOptions:
    """The options of a data-set evaluation, as one frozen object: what :func:`evaluate_dataset` makes of its
    arguments (:meth:`EvalOptions.build`), and what every case gets, in this process, in worker processes and on Dask.

    Attributes
    ----------
    metrics : tuple of str
        The metric names, per-region metrics first.
    classes : tuple of ClassSpec or None
        The classes of label maps (None: binary masks).
    spacing : {"header", "voxel"} or numbers
        Where each case's voxel spacing comes from.
    nsd_tolerance, worst_distance, connectivity, detection_rule
        As in :func:`ccmetrics.evaluate` (``detection_rule`` in its text form, e.g. ``"iou:0.5"``).
    tolerance_mm : float
        Largest origin difference between a case's GT and prediction.
    records : tuple of ccmetrics.metrics.registry.Metric
        The registry records of metrics registered by the user (built-in ones go by name), so that worker
        processes compute them without importing the code that registered them (their ``compute`` must be
        importable there).
    engine : EngineConfig
        The caller's engine configuration, which worker processes apply too (a context variable does not
        cross processes).
    max_case_bytes : float or None
        The memory limit of one case (``max_memory``).
    ignore_label : int or None
        nnU-Net's ignore label of label maps.
    nnunet_counts : bool
        Count nnU-Net's TP/FP/FN/TN voxels too (``nnunet_summary``).
    reference_images : str or None
        The folder of DICOM series that places DICOM SEGs.
    segment_classes : bool
        The classes are the segments found in DICOM SEGs (checked per case).
    probabilities : ProbabilityOptions or None
        How the cases' probability maps are read, their candidates found and matched
        (:mod:`ccmetrics.campaign.probabilities`); None: no maps.

    Examples
    --------
    >>> options = EvalOptions.build(["dice", "detection"], spacing="voxel")
    >>> options.metrics, options.detection_rule
    (('dice', 'detection'), 'overlap')
    >>> options.key()["metrics"]
    ['dice', 'detection']
    """

    metrics: tuple[str, ...] = registry.DEFAULT_METRICS
    classes: tuple[ClassSpec, ...] | None = None
    spacing: Any = "header"
    nsd_tolerance: float = 1.0
    worst_distance: float | None = None
    connectivity: int | None = None
    tolerance_mm: float = 1e-3
    records: tuple[registry.Metric, ...] = ()
    engine: EngineConfig = field(default_factory=EngineConfig)
    max_case_bytes: float | None = None
    detection_rule: str = "overlap"
    ignore_label: int | None = None
    nnunet_counts: bool = False
    reference_images: str | None = None
    segment_classes: bool = False
    probabilities: ProbabilityOptions | None = None

    @classmethod
    def build(
        cls,
        metrics: str | Sequence[Any] = registry.DEFAULT_METRICS,
        *,
        classes: Any = None,
        spacing: Any = "header",
        nsd_tolerance: float = 1.0,
        worst_distance: float | None = None,
        connectivity: int | None = None,
        tolerance_mm: float = 1e-3,
        max_case_bytes: float | None = None,
        detection_rule: Any = None,
        ignore_label: int | None = None,
        nnunet_summary: bool = False,
        reference_images: _PathLike | None = None,
        probabilities: ProbabilityOptions | None = None,
    ) -> EvalOptions:
        """The options from :func:`evaluate_dataset`'s arguments, checked (the messages name the options).

        The engine configuration is the one in force here. ``classes=None`` means binary masks, unless the
        cases hold DICOM SEGs: see :meth:`with_segment_classes`. With ``probabilities`` the detection rule
        defaults to ``iou:0.1`` (picai_eval's), and the task is binary.
        """
        records = registry.resolve(metrics)
        if any(isinstance(m.compute, registry.MonaiRegionMetric) and m.name not in registry.names() for m in records):
            raise ValueError(
                "evaluate_dataset takes metric names only (a MONAI metric object has no name that the "
                "tables of every worker share): register the object first, e.g. "
                "ccmetrics.register_metric('masd', SurfaceDistanceMetric(symmetric=True), kind='distance'), "
                "and pass its name"
            )
        if isinstance(spacing, str) and spacing not in ("header", "voxel"):
            raise ValueError(f"spacing must be 'header', 'voxel' or numbers, got {spacing!r}")
        parsed = parse_classes(classes) if classes is not None else None
        if probabilities is not None:  # each class's channel: its label value
            probabilities = probabilities.with_classes(parsed)
            detection_rule = "iou:0.1" if detection_rule is None else detection_rule
        ignore_label = _checked_ignore_label(ignore_label, parsed)
        if reference_images is not None:
            if not os.path.isdir(reference_images):
                raise NotADirectoryError(f"reference images folder {os.fspath(reference_images)!r} does not exist")
            reference_images = os.path.abspath(reference_images)
        ordered = [m for m in records if m.per_region] + [m for m in records if not m.per_region]
        return cls(
            tuple(m.name for m in ordered),
            parsed,
            spacing,
            float(nsd_tolerance),
            worst_distance,
            connectivity,
            float(tolerance_mm),
            tuple(m for m in ordered if not m.builtin),
            current_engine(),
            max_case_bytes,
            str(DetectionRule.parse(detection_rule)),
            ignore_label,
            bool(nnunet_summary),
            None if reference_images is None else str(reference_images),
            probabilities=probabilities,
        )

    def with_segment_classes(self, tasks: Sequence[CaseTask]) -> EvalOptions:
        """Without classes, and with DICOM SEGs among the tasks' files: one class per segment number found in them,
        named by the segment's label (:func:`ccmetrics.formats.dicom.segment_classes`), checked per case; else
        itself."""
        found = _segment_classes(tasks) if self.classes is None else None
        return self if found is None else dataclasses.replace(self, classes=found, segment_classes=True)

    def ordered_metrics(self) -> list[registry.Metric]:
        """The registry records of the metrics, in the tables' order."""
        return registry.resolve(self.metric_arguments())

    def record(self, gt_suffix: str | None = None, pred_suffix: str | None = None) -> dict[str, Any]:
        """The options as ``summary.json`` keeps them: those that change values, then how the files were paired."""
        key = self.key()
        tolerance = key.pop("tolerance_mm")
        return {**key, "gt_suffix": gt_suffix, "pred_suffix": pred_suffix, "tolerance_mm": tolerance}

    def metric_arguments(self) -> list[Any]:
        """The ``metrics`` argument of :func:`ccmetrics.evaluate`: names, and records of the user's metrics."""
        records = {r.name: r for r in self.records}
        return [records.get(m, m) for m in self.metrics]

    def key(self) -> dict[str, Any]:
        """The options that change values or a case's output (``nnunet_summary``: its voxel counts), as plain data (a
        case's record holds them: change one and ``resume`` evaluates the case again). The engine configuration
        changes no value and is left out; the options of the files made from the tables alone (size bins, groups,
        the bootstrap) are applied to the records' tables by each run."""
        spacing = self.spacing if isinstance(self.spacing, str) else [float(v) for v in np.atleast_1d(self.spacing)]
        return {
            "metrics": list(self.metrics),
            "classes": [c.to_dict() for c in self.classes] if self.classes else None,
            "ignore_label": self.ignore_label,
            "spacing": spacing,
            "nsd_tolerance": self.nsd_tolerance,
            "worst_distance": self.worst_distance,
            "connectivity": self.connectivity,
            "detection_rule": self.detection_rule,
            "tolerance_mm": self.tolerance_mm,
            **({"reference_images": self.reference_images} if self.reference_images else {}),
            **({"probabilities": self.probabilities.key()} if self.probabilities else {}),
            **({"nnunet_summary": True} if self.nnunet_counts else {}),  # its counts are columns of the records
        }


def _describe(item: Any) -> str:
    if item is None:
        return ""
    if isinstance(item, Image):
        return item.path or "<array>"
    if isinstance(item, (str, os.PathLike)):
        return str(item)
    return "<array>"


# ---------------------------------------------------------------- pairing


def pair_folders(
    gt_dir: _PathLike,
    pred_dir: _PathLike,
    *,
    gt_suffix: str | None = None,
    pred_suffix: str | None = None,
    file_ending: str | None = None,
) -> tuple[list[CaseTask], list[str]]:
    """Pair the image files of two folders by case id.

    The case id is the file name minus its extension (``.nii.gz``, ``.nii``,
    ``.mha``, ``.mhd``, ``.nrrd``, ``.nhdr``, ``.dcm``: a DICOM SEG; a sub-folder holding DICOM
    files is a case too, named by the folder, read as the one SEG in it) minus an optional trailing
    ``gt_suffix`` / ``pred_suffix`` (a regular expression, e.g. ``"_0000"`` or
    ``"_pred"``). ``file_ending`` (nnU-Net's, e.g. ``".nii.gz"``): only files with this
    ending are paired; other files are listed as ignored.

    Returns
    -------
    tasks : list of CaseTask
        Sorted by case id: every GT file (with ``pred=None`` when its
        prediction is missing), every prediction without GT (``gt=None``),
        and an ``error`` task for an id given by two files of one folder.
    ignored : list of str
        Files that are not images (e.g. nnU-Net's ``plans.json``, an ``.mhd``'s
        ``.raw``), never evaluated, reported so that nothing disappears silently.

    Raises
    ------
    NotADirectoryError
        A folder does not exist.
    ValueError
        The GT folder holds no image file, or a suffix is not a valid regular expression.
    """
    for name, suffix in (("gt_suffix", gt_suffix), ("pred_suffix", pred_suffix)):
        try:
            re.compile(suffix or "")
        except re.error as exc:
            raise ValueError(f"{name} {suffix!r} is not a valid regular expression: {exc}") from None
    gt_files, gt_ignored = _scan(gt_dir, gt_suffix, "gt", file_ending)
    pred_files, pred_ignored = _scan(pred_dir, pred_suffix, "pred", file_ending)
    if not gt_files:
        endings = file_ending or ".nii.gz, .nii, .mha, .mhd, .nrrd or .nhdr"
        raise ValueError(f"no image file in the GT folder {gt_dir}; expected names ending in {endings}")
    tasks = []
    for case in sorted(set(gt_files) | set(pred_files)):
        gts, preds = gt_files.get(case, []), pred_files.get(case, [])
        task = CaseTask(case, gts[0] if gts else None, preds[0] if preds else None)
        if len(gts) > 1 or len(preds) > 1:
            dup = gts if len(gts) > 1 else preds
            task.error = f"case id {case!r} is given by several files: {', '.join(Path(p).name for p in dup)}"
        elif not gts:
            task.error = (
                f"no ground truth for this prediction (expected a GT file with case id {case!r} "
                f"in {gt_dir}; check --gt-suffix/--pred-suffix)"
            )
        tasks.append(task)
    return tasks, gt_ignored + pred_ignored


def _scan(
    folder: _PathLike, suffix: str | None, name: str, file_ending: str | None = None
) -> tuple[dict[str, list[str]], list[str]]:
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{name} folder {folder} does not exist or is not a folder")
    files: dict[str, list[str]] = {}
    ignored = []
    for path in sorted(folder.iterdir()):
        if path.is_dir():
            if holds_dicom(path) and not path.name.startswith("."):  # a case as a folder of DICOM (one SEG in it)
                files.setdefault(image_id(path.name + ".dcm", suffix), []).append(str(path))
            else:  # not searched: listed, so that files in it do not vanish unnoticed
                ignored.append(str(path) + os.sep)
            continue
        wanted = file_ending is None or path.name.endswith(file_ending)
        if wanted and is_image_file(path) and not path.name.startswith("."):  # hidden: e.g. macOS "._case.nii.gz"
            files.setdefault(image_id(path, suffix), []).append(str(path))
        else:
            ignored.append(str(path))
    return files, ignored


def tasks_from_pairs(pairs: Mapping[str, tuple[Any, Any]] | Iterable[tuple[str, Any, Any]]) -> list[CaseTask]:
    """Tasks from ``{case: (gt, pred)}`` or ``[(case, gt, pred), ...]``; gt/pred are paths, arrays or Images."""
    items = pairs.items() if isinstance(pairs, Mapping) else ((c, (g, p)) for c, g, p in pairs)
    tasks = [CaseTask(str(case), gt, pred) for case, (gt, pred) in items]
    cases = [t.case for t in tasks]
    if len(set(cases)) != len(cases):
        raise ValueError("case ids must be unique")
    for t in tasks:
        if t.gt is None:
            t.error = "no ground truth for this prediction"
    return tasks


# ---------------------------------------------------------------- one case


def _as_image(item: Any) -> tuple[Image, bool]:
    """The item as an Image, and whether its geometry is known (a file or an Image, not a bare array)."""
    if isinstance(item, Image):
        return item, True
    if isinstance(item, (str, os.PathLike)):  # a mask C-ordered at once, as the engine reads it (same values)
        return _load_image(item, c_order=True), True
    array = np.asarray(item)
    return Image(array, (1.0,) * array.ndim, np.eye(array.ndim + 1), None), False


def evaluate_task(task: CaseTask, options: EvalOptions) -> dict[str, Any]:
    """Evaluate one case (the unit of work of every scheduler); never raises.

    Returns a dict with ``rows`` (per-case rows, one per class), ``components``
    (the per-component table), ``predictions`` (the per-prediction table with the
    ``detection`` metric, else None) and ``timing`` (seconds reading and computing). The tables are
    :class:`~ccmetrics.columns.Columns`, which :func:`~ccmetrics.campaign.records.encode_output` encodes as
    pandas would (``.frame()`` makes the DataFrame): a worker evaluates its cases without importing pandas.

    With ``options.max_case_bytes`` (``--max-memory``), a case whose estimated peak exceeds it is refused
    before the memory is taken: once read, by its foreground; while evaluated, by its counts of components
    and runs of voxels, as soon as the engine has labelled them (``ccmetrics.engine._budget``). Either way its
    output is an error row that names the option, with ``retry`` set.
    """
    from ..engine._budget import MemoryLimitError, memory_guard

    gt_file, pred_file = task.file_names()
    base = {CASE: task.case, schema.GT_FILE: gt_file, schema.PRED_FILE: pred_file, **_map_file(task, options)}
    t0 = time.perf_counter()
    t_read = 0.0
    try:
        if task.error:
            raise _CaseError(task.error)
        gt, gt_known = _as_image(task.gt)
        read, pred_known = _as_image(task.pred) if task.pred is not None else (None, gt_known)
        t_read = time.perf_counter() - t0
        flags: list[str] = []
        if options.segment_classes:
            _check_segments(gt, read, options.classes or ())
        if gt_known and pred_known:  # on one grid in patient space (a DICOM SEG: reoriented, placed)
            check_union_memory(gt, read, reference=options.reference_images, max_bytes=options.max_case_bytes)
            try:
                gt, read, flags = align_pair(gt, read, reference=options.reference_images, atol_mm=options.tolerance_mm)
            except ValueError as exc:
                raise _CaseError(_with_tolerance(str(exc), options.tolerance_mm)) from None
        maps = None
        if options.probabilities is not None:  # the maps on the GT's grid; without predictions, the segmentation
            maps = read_case_maps(
                task.prob, gt, options.probabilities, options.tolerance_mm, max_bytes=options.max_case_bytes
            )
            read = segmentation_of(maps[1]) if options.probabilities.segment_from_map else read
            t_read = time.perf_counter() - t0
        if read is None:
            pred = Image(np.zeros(gt.array.shape, np.uint8), gt.spacing, gt.affine)
            flags.append(MISSING_PREDICTION)
        else:
            pred = read
        if gt.array.shape != pred.array.shape:
            raise _CaseError(f"shape differs: gt {gt.array.shape}, pred {pred.array.shape}")
        too_much, need = _over_memory(gt, pred, options.max_case_bytes, _map_bytes(gt.array.shape, options))
        if too_much:
            output = failed_output(task, options, too_much, t_read, time.perf_counter() - t0 - t_read)
            return {**output, "retry": True}
        if isinstance(options.spacing, str):  # "header": known from a file or an Image; "voxel": none
            spacing = tuple(gt.spacing) if options.spacing == "header" and gt_known else None
        else:  # one number for every axis, or one per axis (a wrong count is this case's error row)
            spacing = as_spacing(options.spacing, gt.array.ndim)
        kwargs: dict[str, Any] = dict(
            spacing=spacing,
            nsd_tolerance=options.nsd_tolerance,
            worst_distance=options.worst_distance,
            connectivity=options.connectivity,
            detection_rule=options.detection_rule,
        )
        results: dict[int, CaseResult]
        candidates, swept = None, None
        case_values: dict[int, dict[str, float]] = {}
        # the engine checks the rest of the estimate once it knows the counts (components, runs: _budget)
        with engine_config(_engine_of(options)), memory_guard(options.max_case_bytes, base=need):
            if maps is not None:  # each class's lesions labelled once for the metrics and the candidates
                results, candidates, case_values, swept = evaluate_with_maps(
                    maps,
                    pred.array,
                    gt.array,
                    options,
                    kwargs,
                    case=task.case,
                    voxel_mm3=math.prod(spacing) if spacing is not None else math.nan,
                    affine=gt.affine if gt_known else None,
                )
            elif options.classes:
                results = evaluate(
                    pred.array,
                    gt.array,
                    options.metric_arguments(),
                    classes=options.classes,
                    ignore_label=options.ignore_label,
                    **kwargs,
                )
            else:
                try:
                    results = {1: evaluate(pred.array, gt.array, options.metric_arguments(), **kwargs)}
                except NotBinaryError as exc:
                    raise _CaseError(_label_map_found(exc, gt.array if exc.name == "gt" else pred.array)) from None
    except (MemoryLimitError, ImageMemoryError) as exc:  # over --max-memory, or a file larger than the memory left
        output = failed_output(task, options, str(exc), t_read, time.perf_counter() - t0 - t_read)
        return {**output, "retry": True}
    except Exception as exc:  # one case's failure must never stop the data set
        expected = isinstance(exc, (ValueError, OSError))  # bad input: its message says what is wrong
        message = str(exc) if expected else f"{type(exc).__name__}: {exc} (please report this as a bug)"
        return failed_output(task, options, message, t_read, time.perf_counter() - t0 - t_read)
    rows, frames, predictions = [], [], []
    voxel_ml = math.prod(spacing) / 1000.0 if spacing is not None else math.nan
    names = {c.value: c.name for c in options.classes} if options.classes else {}
    counts = _nnunet_counts(results, gt.array, options) if options.nnunet_counts else {}
    for c, result in results.items():
        case_flags = flags + ([EMPTY_GT] if result.empty_gt else [])
        row: dict[str, Any] = {
            **base,
            CLASS: int(c),
            STATUS: FLAGGED if case_flags else OK,
            FLAGS: schema.join_flags(case_flags),
            ERROR: "",
            schema.SPACING: "x".join(f"{s:g}" for s in spacing) if spacing else "voxel",
        }
        if names:
            row[schema.CLASS_NAME] = names[c]
        row.update(result.case_row())
        row.update(counts.get(c, {}))
        row[schema.PRED_VOLUME_ML] = row[schema.PRED_VOLUME] * voxel_ml
        row.update(case_values.get(c, {}))
        rows.append(row)
        frame = result.component_rows(task.case, c)  # as Columns: a worker makes no DataFrame (nor imports pandas)
        prediction = result.prediction_rows(task.case, c, gt.affine if gt_known else None)
        if names:
            frame.insert(2, schema.CLASS_NAME, names[c])
            if prediction is not None:
                prediction.insert(2, schema.CLASS_NAME, names[c])
        frames.append(frame)
        predictions.append(prediction)
    t_total = time.perf_counter() - t0
    return {
        "rows": rows,
        "components": _joined(frames),
        "predictions": None if predictions[0] is None else _joined(predictions),
        "candidates": candidates,
        "thresholds": swept,
        "timing": {CASE: task.case, schema.READ_SECONDS: t_read, schema.COMPUTE_SECONDS: t_total - t_read},
    }


def _joined(tables: list[Any]) -> Any:
    """The classes' tables of one case, one after the other (``pd.concat(..., ignore_index=True)``): as
    :class:`~ccmetrics.columns.Columns` while every table is, else as a DataFrame."""
    if len(tables) == 1:
        return tables[0]
    if all(isinstance(t, Columns) for t in tables) and all(t.names == tables[0].names for t in tables):
        return Columns.concat(tables)
    return pd.concat([t.frame() if isinstance(t, Columns) else t for t in tables], ignore_index=True)


def _engine_of(options: EvalOptions) -> EngineConfig:
    """The engine configuration of a case: the caller's; in a worker process of a data set
    (``ccmetrics.campaign._workers``) with the thread count left unset, that worker's share of the CPUs, so that
    the workers do not oversubscribe the cores (the values never depend on the threads)."""
    from ._workers import worker_threads

    threads = worker_threads()
    if threads is None or options.engine.threads is not None:
        return options.engine
    return options.engine.replace(threads=threads)


def _check_segments(gt: Image, pred: Image | None, classes: Sequence[ClassSpec]) -> None:
    """With classes made of the DICOM SEGs' segments: a segment number means one thing in both files, and
    a NIfTI beside a SEG holds no label that is no segment (it would be left out without a word)."""
    from ..formats.dicom import SegImage

    segs = [x for x in (gt, pred) if isinstance(x, SegImage)]
    if len(segs) == 2:
        a, b = segs[0].segments, segs[1].segments
        differ = [n for n in sorted(set(a) & set(b)) if a[n] != b[n]]
        if differ:
            n = differ[0]
            raise _CaseError(
                f"segment {n} is {a[n]!r} in the GT and {b[n]!r} in the prediction: segments are matched by their "
                "numbers; number the prediction's segments as the GT's"
            )
    known = {label for c in classes for label in c.labels}
    for image, role in ((gt, "GT"), (pred, "prediction")):
        if image is None or isinstance(image, SegImage):
            continue
        values = np.unique(image.array[image.array != 0])
        extra = [int(v) for v in values if int(v) not in known]
        if extra:
            named = ", ".join(f"{c.value} {c.name!r}" for c in classes)
            raise _CaseError(
                f"the {role} holds label(s) {', '.join(map(str, extra))} that are no segment of the DICOM SEGs "
                f"({named}): labels and segments are matched by number; give the classes (--classes) to choose"
            )


def failed_output(
    task: CaseTask, options: EvalOptions, message: str, read_seconds: float = 0.0, compute_seconds: float = 0.0
) -> dict[str, Any]:
    """The output of a case that could not be evaluated: one error row per class saying why."""
    gt_file, pred_file = task.file_names()
    base = {CASE: task.case, schema.GT_FILE: gt_file, schema.PRED_FILE: pred_file, **_map_file(task, options)}
    names = {c.value: {schema.CLASS_NAME: c.name} for c in options.classes} if options.classes else {}
    return {
        "rows": [
            {**base, CLASS: c, **names.get(c, {}), STATUS: FAILED, FLAGS: "", ERROR: message}
            for c in class_values(options.classes)
        ],
        "components": None,
        "predictions": None,
        "candidates": None,
        "thresholds": None,
        "timing": {CASE: task.case, schema.READ_SECONDS: read_seconds, schema.COMPUTE_SECONDS: compute_seconds},
    }


def _map_file(task: CaseTask, options: EvalOptions) -> dict[str, str]:
    """The ``prob_file`` cell of a run with probability maps: the case's map file (empty when given as an array)."""
    if options.probabilities is None:
        return {}
    return {schema.PROB_FILE: _describe(task.prob) if task.prob is not None else ""}


def _nnunet_counts(results: dict[int, Any], gt: np.ndarray, options: EvalOptions) -> dict[int, dict[str, int]]:
    """Per class: nnU-Net's voxel counts TP, FP, FN and TN, with the ignore label's voxels left out of all four
    (as ``nnunetv2.evaluation.evaluate_predictions.compute_tp_fp_fn_tn`` counts them), from the evaluation's own
    counts (:class:`ccmetrics.CaseResult` ``gt_volume``, ``pred_volume``, ``overlap_volume``: the class masks
    after the ignore label was removed); one pass over the GT for the ignored voxels."""
    total = int(gt.size)
    ignored = 0 if options.ignore_label is None else int(np.count_nonzero(gt == options.ignore_label))
    out = {}
    for c, result in results.items():
        tp = int(result.overlap_volume)
        fp, fn = int(result.pred_volume) - tp, int(result.gt_volume) - tp
        out[int(c)] = {
            schema.TP_VOXELS: tp,
            schema.FP_VOXELS: fp,
            schema.FN_VOXELS: fn,
            schema.TN_VOXELS: total - ignored - tp - fp - fn,
        }
    return out


def _with_tolerance(problem: str, tolerance_mm: float) -> str:
    """A grid mismatch, with the tolerance on the origin named where the origin differs."""
    if "origin differs" not in problem:
        return problem
    return (
        f"{problem} (the origins may differ by at most {tolerance_mm:g} mm; a larger --tolerance-mm, "
        "tolerance_mm= in Python, accepts more)"
    )


def _label_map_found(exc: NotBinaryError, array: np.ndarray) -> str:
    """A label map given as a binary mask: its labels (counted only now, on the way to the error row), and how
    to evaluate them in a data set, in the command line's terms and Python's."""
    labels = [int(v) for v in np.unique(array) if v != 0]
    shown = ",".join(map(str, labels[:12])) + (",..." if len(labels) > 12 else "")
    which = "the GT" if exc.name == "gt" else "the prediction"
    return (
        f"{which} is a label map (labels {shown}), not a binary mask (0/1): evaluate its labels one by one with "
        f"--classes {shown} (classes=[{shown.replace(',', ', ')}] in Python), regions with e.g. "
        "--classes 'wt=1+2+3,tc=2+3', or give nnU-Net's --dataset-json"
    )


def fingerprint(task: CaseTask, options: EvalOptions) -> dict[str, Any]:
    """What a case's result depends on (:mod:`ccmetrics.campaign.records`): its inputs, the options, the pairing,
    the version."""
    from .. import __version__

    return {
        "gt": file_fingerprint(task.gt),
        "pred": file_fingerprint(task.pred),
        **({"prob": file_fingerprint(task.prob)} if task.prob is not None else {}),
        "error": task.error,
        "options": options.key(),
        "version": __version__,
    }


def estimate_bytes(task: CaseTask, options: EvalOptions) -> int:
    """A case's least estimated peak memory from its headers, before any voxel is read: the estimate with
    no foreground (the engine's memory grows with the foreground, which only the voxels tell, and with the
    counts of components and runs, which only the labelling tells; the case is checked again once read, and
    by the engine once it has counted them). 0: unknown (the case's own evaluation reports an unreadable file)."""
    from ..engine.memory import estimate_case_bytes

    if task.error or task.gt is None:
        return 0
    try:
        gt = _header(task.gt)
        pred = _header(task.pred) if task.pred is not None else None
    except Exception:  # any unreadable header: the case's own evaluation reports it, the run goes on
        return 0
    return int(estimate_case_bytes(gt, pred, options.metrics, foreground=0)) + _map_bytes(gt.shape, options)


def _map_bytes(shape: Sequence[int], options: EvalOptions) -> int:
    """What a probability map adds to a case's peak: the float32 map, nnU-Net's other channel while it is cut out,
    and the candidates' mask and labels (4 + 4 + 1 + 4 bytes a voxel: a bound, the labels grow with the foreground)."""
    return 13 * math.prod(shape) if options.probabilities is not None else 0


def _over_memory(gt: Image, pred: Image, limit: float | None, extra: int = 0) -> tuple[str, int]:
    """Why a read case exceeds the memory limit by its estimated peak with its foreground counted (or ''), and
    that estimate (0 without a limit): the engine adds what its counts need (``ccmetrics.engine._budget``)."""
    from ..engine.memory import estimate_case_bytes, over_limit

    if limit is None:
        return "", 0
    foreground = int(np.count_nonzero(gt.array)) + int(np.count_nonzero(pred.array))
    need = estimate_case_bytes(_header(gt), _header(pred), foreground=foreground) + extra
    if need <= limit:
        return "", need
    return over_limit(need, limit, f"for its {foreground} foreground voxels"), need


def _header(item: Any) -> Any:
    from ..formats.io import ImageHeader, read_header

    if isinstance(item, (str, os.PathLike)):
        return read_header(item)
    array = item.array if isinstance(item, Image) else np.asarray(item)
    path = item.path if isinstance(item, Image) else None
    return ImageHeader(path, tuple(array.shape), array.dtype, (1.0,) * array.ndim)


class _CaseError(ValueError):
    """A problem of one case, reported in its error row."""


# ---------------------------------------------------------------- the data set


@dataclass
class DatasetResult:
    """Result of :func:`evaluate_dataset`: the tidy tables and what could not be evaluated.

    Attributes
    ----------
    per_component : pandas.DataFrame
        One row per GT component of every evaluated case and class.
    per_case : pandas.DataFrame
        One row per case and class (errors included), sorted by case and class.
    ignored_files : list of str
        Non-image files found in the folders (never evaluated).
    timings : pandas.DataFrame
        Per case: ``read_seconds`` and ``compute_seconds``.
    options : dict
        The evaluation settings, for the record.
    columns : dict of str to ccmetrics.metrics.registry.Column
        The facts of the metric columns (display name, direction, unit, whether a CC version
        exists), kept in ``summary.json`` so that a folder describes its own tables, also for
        metrics that the reading process has not registered. Default: the registry's records of
        ``options["metrics"]``.
    saved : dict
        What ``summary.json`` held when the result was read with :meth:`read` (its ``summary``,
        ``counts``, ``empty_gt``, ...); empty otherwise.
    run : ccmetrics.campaign.RunInfo
        What the run did: cases taken from the records of an earlier run (``reused``), evaluated and
        why, and, after Ctrl-C, the cases not evaluated (``pending``; ``run.complete`` is False).
    per_prediction : pandas.DataFrame or None
        With the ``detection`` metric: one row per predicted component of every evaluated case and
        class (:data:`ccmetrics.schema.PER_PREDICTION`), sorted by case, class and component; else None.
    per_candidate : pandas.DataFrame or None
        With probability maps: one row per lesion candidate of every evaluated case
        (:data:`ccmetrics.schema.PER_CANDIDATE`), sorted by case, class and candidate; else None. The detection
        curves: :meth:`detection_curves`.
    thresholds : pandas.DataFrame or None
        With probability maps and ``thresholds``: the per-region metrics of ``prob >= t`` per case, class and
        threshold (:data:`ccmetrics.schema.THRESHOLDS`); their means and the best threshold by each score:
        :meth:`threshold_summary`.
    """

    per_component: pd.DataFrame
    per_case: pd.DataFrame
    ignored_files: list[str] = field(default_factory=list)
    timings: pd.DataFrame = field(default_factory=lambda: pd.DataFrame())
    options: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, registry.Column] = field(default_factory=dict)
    saved: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    run: RunInfo = field(default_factory=RunInfo, repr=False, compare=False)
    per_prediction: pd.DataFrame | None = None
    per_candidate: pd.DataFrame | None = None
    thresholds: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        if not self.columns:
            self.columns = _columns_of(self.options.get("metrics", []), self.per_case)

    @property
    def class_names(self) -> dict[int, str]:
        """The name of each class value (label maps evaluated with classes); empty for binary masks."""
        out = {}
        for c in self.options.get("classes") or []:  # folders written before names existed hold the labels only
            value, name = (int(c["value"]), str(c["name"])) if isinstance(c, dict) else (int(c), str(c))
            out[value] = name
        return out

    @property
    def cc_metrics(self) -> list[str]:
        """Metrics with a global and a CC value per case (``m`` and ``cc_m`` in ``per_case``), in evaluation order."""
        return [m for m, c in self.columns.items() if c.cc and m in self.per_case and schema.cc(m) in self.per_case]

    @property
    def case_level_columns(self) -> list[str]:
        """Columns of case-level scores in ``per_case`` (PQ, Lesion Dice, detection), in the registry's order."""
        order = {c.name: i for i, c in enumerate(c for m in registry.metrics() for c in m.columns)}
        found = [m for m, c in self.columns.items() if not c.cc and m in self.per_case]
        return sorted(found, key=lambda m: order.get(m, len(order)))

    def _evaluated(self, empty_gt: bool) -> pd.DataFrame:
        """Rows of evaluated (not failed) case-classes whose GT is empty or not."""
        empty = self.per_case[schema.EMPTY_GT].eq(True)  # NaN on error rows: not empty (no fillna downcasting warning)
        return self.per_case[(self.per_case[STATUS] != FAILED) & (empty == empty_gt)]

    @property
    def errors(self) -> pd.DataFrame:
        """The error rows of ``per_case``."""
        return self.per_case[self.per_case[STATUS] == FAILED]

    def counts(self) -> dict[str, int]:
        """Cases (not case-class rows): total, evaluated, flagged, failed, empty GT, missing prediction."""
        by_case = self.per_case.groupby(CASE, sort=False)
        failed = by_case[STATUS].apply(lambda s: (s == FAILED).any())
        flagged = by_case[STATUS].apply(lambda s: (s == FLAGGED).any()) & ~failed
        flags = by_case[FLAGS].apply(lambda s: schema.join_flags(s.fillna("")))
        return {
            "cases": int(len(failed)),
            "evaluated": int((~failed).sum()),
            "flagged": int(flagged.sum()),
            "failed": int(failed.sum()),
            "empty_gt": int(flags.str.contains(EMPTY_GT).sum()),
            "missing_prediction": int(flags.str.contains(MISSING_PREDICTION).sum()),
        }

    def detection_curves(
        self, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
    ) -> dict[int, DetectionCurves]:
        """The lesion-level detection curves (AP, AUROC, FROC, CPM) of each class, from ``per_case`` and
        ``per_candidate`` (:func:`ccmetrics.metrics.detection_curves.detection_curves_from_tables`); empty without
        probability maps. Failed cases are no cases of the curves (:attr:`errors` lists them); the intervals use
        the summary's case-level bootstrap (same ``confidence``, ``n_resamples``, ``seed``).
        """
        if self.per_candidate is None:
            return {}
        out = {}
        evaluated = self.per_case[self.per_case[STATUS] != FAILED]
        for c, rows in evaluated.groupby(CLASS, sort=True):
            candidates = self.per_candidate[self.per_candidate[CLASS] == c]
            out[int(c)] = detection_curves_from_tables(
                rows, candidates, n_resamples=n_resamples, confidence_level=confidence, seed=seed
            )
        return out

    def calibration(
        self, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
    ) -> dict[int, dict[str, Any]]:
        """Per class: the mean voxel-level Brier score and ECE of the maps over the evaluated cases (with their
        bootstrap intervals), and the lesion-level reliability table of the candidates' confidences
        (:func:`ccmetrics.metrics.calibration.lesion_reliability`, its ``attrs["ece"]`` as ``lesion_ece``); empty
        without probability maps."""
        from ..analysis.stats import bootstrap_ci

        if self.per_candidate is None or schema.BRIER not in self.per_case:
            return {}
        out: dict[int, dict[str, Any]] = {}
        evaluated = self.per_case[self.per_case[STATUS] != FAILED]
        boot: dict[str, Any] = dict(confidence=confidence, n_resamples=n_resamples, seed=seed)
        for c, rows in evaluated.groupby(CLASS, sort=True):
            entry: dict[str, Any] = {"n_cases": int(len(rows))}
            for name in (schema.BRIER, schema.ECE):
                values = rows[name].to_numpy(float)
                ci = bootstrap_ci(values, **boot)
                entry[name] = {"value": _finite(values.mean()), "ci": [_finite(ci[0]), _finite(ci[1])]}
            table = lesion_reliability(self.per_candidate[self.per_candidate[CLASS] == c])
            entry["lesion_ece"] = _finite(table.attrs["ece"])
            entry["lesion_reliability"] = table
            out[int(c)] = entry
        return out

    def threshold_summary(self) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
        """The means per class and threshold of the ``thresholds`` table over the cases with GT lesions, and the best
        threshold by each global and CC score (:func:`ccmetrics.metrics.thresholds.threshold_summary`)."""
        if self.thresholds is None:
            raise ValueError("no thresholds were swept: evaluate with thresholds= (--thresholds) first")
        swept = [m for m in self.options.get("metrics", []) if m in self.thresholds.columns]
        return threshold_summary(self.thresholds, swept)

    def summary(self, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
        """Mean, median and bootstrap confidence interval of every score, per class.

        Only cases that were evaluated and have at least one GT component
        enter (empty-GT cases are summarised by :meth:`empty_gt_summary`, so
        they never inflate or hide a mean). Aggregations, per metric ``m``:

        * ``standard``: the global value of each case; a non-finite distance
          (empty prediction) counts as the case's worst distance;
        * ``cc_patient``: the mean of the case CC values (``cc_m``);
        * ``cc_pooled``: the mean over all components pooled, each missed
          lesion's distance counting as its case's worst distance; its
          interval resamples cases (cluster bootstrap);
        * ``case``: case-level scores (PQ, Lesion Dice, detection), NaN
          values (undefined, e.g. PQ of two empty images) left out.

        Returns
        -------
        pandas.DataFrame
            Index (class, metric, aggregation); columns ``n``, ``mean``,
            ``median``, ``ci_low``, ``ci_high``.
        """
        from ..analysis.stats import bootstrap_ci, bootstrap_ci_pooled

        boot: dict[str, Any] = dict(confidence=confidence, n_resamples=n_resamples, seed=seed)
        cases = self._evaluated(empty_gt=False)
        worst = schema.WORST_DISTANCE
        rows = []
        for c in sorted(self.per_case[CLASS].unique()):
            here = cases[cases[CLASS] == c]
            comps = self.per_component[(self.per_component[CLASS] == c) & self.per_component[CASE].isin(here[CASE])]
            for m in self.cc_metrics:  # non-finite distances count as the case's worst distance (one rule)
                kind = self.columns[m]
                standard = cc_values(here[m], kind, here[worst])
                rows.append(_stats_row(c, m, schema.STANDARD, standard, bootstrap_ci(standard, **boot)))
                patient = here[schema.cc(m)].to_numpy(float)
                rows.append(_stats_row(c, m, schema.CC_PATIENT, patient, bootstrap_ci(patient, **boot)))
                pooled = cc_values(comps[m], kind, comps[worst])
                rows.append(
                    _stats_row(
                        c, m, schema.CC_POOLED, pooled, bootstrap_ci_pooled(pooled, comps[CASE].to_numpy(), **boot)
                    )
                )
            for s in self.case_level_columns:
                values = here[s].to_numpy(float)
                values = values[~np.isnan(values)]
                rows.append(_stats_row(c, s, schema.CASE_LEVEL, values, bootstrap_ci(values, **boot)))
        return pd.DataFrame(rows, columns=schema.SUMMARY.columns()).set_index(list(schema.SUMMARY.key))

    def subset(self, cases: Iterable[str]) -> DatasetResult:
        """The result restricted to some cases (their rows in every table; options and columns kept)."""
        keep = {str(c) for c in cases}

        def rows(frame: pd.DataFrame | None) -> pd.DataFrame | None:
            if frame is None or not len(frame):
                return frame
            return frame[frame[CASE].astype(str).isin(keep)].reset_index(drop=True)

        per_component, per_case = rows(self.per_component), rows(self.per_case)
        assert per_component is not None and per_case is not None
        return DatasetResult(
            per_component,
            per_case,
            options=self.options,
            columns=self.columns,
            per_prediction=rows(self.per_prediction),
            per_candidate=rows(self.per_candidate),
            thresholds=rows(self.thresholds),
        )

    def group_summary(
        self,
        metadata: Any,
        group_by: str | Sequence[str],
        *,
        confidence: float = 0.95,
        n_resamples: int = 2000,
        seed: int = 0,
    ) -> pd.DataFrame:
        """:meth:`summary` of each subgroup of cases (by scanner, site, sex, ...) from a metadata table.

        Parameters
        ----------
        metadata : path or pandas.DataFrame
            One row per case: a ``case`` column (or the first column) and descriptive columns
            (:func:`ccmetrics.analysis.subgroups.read_metadata`).
        group_by : str or sequence of str
            The columns whose value combinations form the groups. Cases missing from the table form
            the group ``"(not in metadata)"``.
        confidence, n_resamples, seed
            As in :meth:`summary`.

        Returns
        -------
        pandas.DataFrame
            The ``group_by`` columns, ``n_cases`` (cases of the group, errors included), then the
            columns of :meth:`summary` (``class``, ``metric``, ``aggregation``, ``n``, ``mean``, ...),
            one block per group in sorted order.
        """
        from ..analysis.subgroups import case_groups, read_metadata

        meta = metadata if isinstance(metadata, pd.DataFrame) else read_metadata(metadata)
        by = [group_by] if isinstance(group_by, str) else list(group_by)
        taken = [c for c in by if c in schema.SUMMARY.columns() or c == "n_cases"]
        if taken:
            raise ValueError(f"a metadata column named {taken[0]!r} would clash with the summary's; rename it")
        groups = case_groups(meta, by, self.per_case[CASE].astype(str).unique().tolist())
        frames = []
        for key in sorted(set(groups.values())):
            cases = [c for c, g in groups.items() if g == key]
            block = self.subset(cases).summary(confidence=confidence, n_resamples=n_resamples, seed=seed).reset_index()
            for i, (column, value) in enumerate(zip(by, key)):
                block.insert(i, column, value)
            block.insert(len(by), "n_cases", len(cases))
            frames.append(block)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*by, "n_cases"])

    def empty_gt_summary(self) -> pd.DataFrame:
        """Per class: cases with an empty GT, how many have a false positive, and their false-positive volume."""
        empty = self._evaluated(empty_gt=True)
        rows = []
        for c in sorted(self.per_case[CLASS].unique()):
            e = empty[empty[CLASS] == c]
            volume, volume_ml = e[schema.PRED_VOLUME], e[schema.PRED_VOLUME_ML]
            rows.append(
                {
                    CLASS: c,
                    schema.N: len(e),
                    schema.WITH_FALSE_POSITIVE: int((volume > 0).sum()),
                    schema.FP_VOLUME_VOXELS_MEAN: float(volume.mean()) if len(e) else math.nan,
                    schema.FP_VOLUME_ML_MEAN: float(volume_ml.mean()) if len(e) else math.nan,
                }
            )
        return pd.DataFrame(rows, columns=list(schema.EMPTY_GT_SUMMARY_COLUMNS)).set_index(CLASS)

    def size_table(self, edges: Sequence[float] | None = None) -> pd.DataFrame:
        """Lesions, detection rate, CC-Dice and false positives per class and lesion-size bin.

        ``edges``: inner bin edges in ml (voxels without a spacing); default 0.1, 1, 10 ml
        (:func:`ccmetrics.analysis.sizes.size_table`). Lesions of evaluated cases only.
        """
        from ..analysis.sizes import size_table

        evaluated = self.per_case.loc[self.per_case[STATUS] != FAILED, CASE].unique()
        comps = (
            self.per_component[self.per_component[CASE].isin(evaluated)]
            if len(self.per_component)
            else self.per_component
        )
        if schema.DETECTED not in comps:
            return pd.DataFrame()
        return size_table(comps, edges, per_prediction=self.per_prediction)

    def write(
        self,
        out_dir: _PathLike,
        *,
        plots: bool = True,
        summary: pd.DataFrame | None = None,
        size_bins: Sequence[float] | None = None,
        groups: tuple[list[str], pd.DataFrame, dict[str, tuple[str, ...]]] | None = None,
        curves: dict[int, DetectionCurves] | None = None,
        calibration: dict[int, dict[str, Any]] | None = None,
        **summary_options: Any,
    ) -> dict[str, Any]:
        """Write ``per_component.csv``, ``per_case.csv``, ``summary.json`` and ``plots/`` into ``out_dir``
        (and ``per_prediction.csv`` with the ``detection`` metric).

        Parameters
        ----------
        out_dir : path
            The folder (created if needed).
        plots : bool
            Write the plots too.
        summary : pandas.DataFrame, optional
            The :meth:`summary` frame when computed already (``ccmetrics evaluate`` prints it too);
            by default computed here, with ``summary_options``.
        size_bins : sequence of float, optional
            Inner edges (ml) of the lesion-size bins of ``summary.json``'s ``by_size`` and of the
            detection-by-size plot (:meth:`size_table`); default 0.1, 1, 10 ml.
        groups : tuple, optional
            ``(group_by columns, group_summary frame, case -> group)``: kept in ``summary.json``'s
            ``groups`` and drawn as ``plots/by_group_cc_<m>.png`` (``ccmetrics evaluate --metadata``).
        curves, calibration : dict, optional
            The :meth:`detection_curves` and :meth:`calibration` when computed already; by default computed here
            (with probability maps), with ``summary_options``.
        **summary_options
            The options of :meth:`summary` (``confidence``, ``n_resamples``, ``seed``), without ``summary``.

        Returns
        -------
        dict
            The paths written, by name (``per_component``, ``per_case``, ``summary``, ``plots``, and
            ``per_prediction`` when there is that table), and ``removed``: the files of an earlier run
            in ``out_dir`` that this one does not produce (e.g. ``per_prediction.csv`` after a run
            without ``detection``, plots of other metrics, a ``report.html`` drawn from earlier tables),
            removed so that every file there belongs to these tables.

        Raises
        ------
        ValueError
            Both ``summary`` and ``summary_options`` given.
        ccmetrics.campaign.records.OutputWriteError
            A file cannot be written (a full disk, no permission): the message names it.
        ccmetrics.campaign.output_folder.FolderInUse
            Another process writes into ``out_dir``.

        Notes
        -----
        The files are written as one set (:mod:`ccmetrics.campaign.output_folder`): ``manifest.json`` says
        ``writing`` before the first is replaced and lists every file with its checksum once all are
        written, so :meth:`read` never takes tables of two runs side by side, whenever the writing stops.
        """
        if summary is not None and summary_options:
            raise ValueError(
                f"write takes the summary frame or the options to compute it ({', '.join(summary_options)}), "
                f"not both: pass the options to summary() instead"
            )
        out = Path(out_dir)
        with locked(out):  # no other run writes here meanwhile
            begin_tables(out)  # until finish_tables, a reader refuses the folder
            extra = {"curves": curves, "calibration": calibration}
            written = self._write_tables(out, plots, summary, size_bins, groups, extra, summary_options)
            files = [p for key, p in written.items() if key != "plots"] + written["plots"]
            written["removed"] = finish_tables(out, files)
        return written

    def _write_tables(
        self,
        out: Path,
        plots: bool,
        summary: pd.DataFrame | None,
        size_bins: Sequence[float] | None,
        groups: tuple[list[str], pd.DataFrame, dict[str, tuple[str, ...]]] | None,
        extra: dict[str, Any],
        summary_options: dict[str, Any],
    ) -> dict[str, Any]:
        paths = {t.name: out / t.file for t in (schema.PER_COMPONENT, schema.PER_CASE, schema.SUMMARY)}
        # each file replaced whole (temporary file, then rename): never a half-written table over a good one; text
        # cells a spreadsheet would run are written neutralised (_escaping), read() gives the text back
        atomic_write(paths[schema.PER_COMPONENT.name], lambda tmp: write_csv(self.per_component, tmp))
        atomic_write(paths[schema.PER_CASE.name], lambda tmp: write_csv(self.per_case, tmp))
        if self.per_prediction is not None:
            predictions = self.per_prediction
            paths[schema.PER_PREDICTION.name] = out / schema.PER_PREDICTION.file
            atomic_write(paths[schema.PER_PREDICTION.name], lambda tmp: write_csv(predictions, tmp))
        if self.per_candidate is not None:
            candidates = self.per_candidate
            paths[schema.PER_CANDIDATE.name] = out / schema.PER_CANDIDATE.file
            atomic_write(paths[schema.PER_CANDIDATE.name], lambda tmp: write_csv(candidates, tmp))
        curves = extra["curves"]
        calibration = extra["calibration"]
        if self.per_candidate is not None:
            curves = self.detection_curves(**summary_options) if curves is None else curves
            calibration = self.calibration(**summary_options) if calibration is None else calibration
        curves, calibration = curves or {}, calibration or {}
        swept = None
        if self.thresholds is not None:
            table = self.thresholds
            paths[schema.THRESHOLDS.name] = out / schema.THRESHOLDS.file
            atomic_write(paths[schema.THRESHOLDS.name], lambda tmp: write_csv(table, tmp))
            swept = self.threshold_summary()
        if summary is None:
            summary = self.summary(**summary_options)
        doc = {
            "counts": self.counts(),
            "summary": _records(summary.reset_index()),
            "empty_gt": _records(self.empty_gt_summary().reset_index()),
            "errors": _records(self.errors[[CASE, CLASS, ERROR]]),
            "ignored_files": self.ignored_files,
            "options": self.options,
            "columns": {name: column.facts() for name, column in self.columns.items()},
            "run": self.run.to_dict(),
            "by_size": _records(self.size_table(size_bins).replace(math.inf, np.nan)),  # last bin: high null
        }
        if curves:
            doc["detection_curves"] = {str(c): curve.to_dict() for c, curve in curves.items()}
        if calibration:
            doc["calibration"] = {
                str(c): {
                    **{k: v for k, v in e.items() if k != "lesion_reliability"},
                    "lesion_reliability": _records(e["lesion_reliability"]),
                }
                for c, e in calibration.items()
            }
        if swept is not None:
            doc["thresholds"] = {"means": _records(swept[0].replace([math.inf, -math.inf], np.nan)), "best": swept[1]}
        if groups is not None:
            doc["groups"] = {"by": groups[0], "summary": _records(groups[1])}
        text = json.dumps(doc, indent=2, allow_nan=False)
        atomic_write(paths[schema.SUMMARY.name], lambda tmp: tmp.write_text(text))
        if schema.TP_VOXELS in self.per_case:
            from ..formats.nnunet import nnunet_summary

            columns = [schema.cc(m) for m in self.cc_metrics] + self.case_level_columns
            nnunet = json.dumps(
                nnunet_summary(self.per_case, self.options, columns), indent=2
            )  # NaN as nnU-Net writes it
            paths["nnunet_summary"] = out / "nnunet_summary.json"
            atomic_write(paths["nnunet_summary"], lambda tmp: tmp.write_text(nnunet))
        written: dict[str, Any] = {**paths, "plots": []}
        if plots:
            from ..analysis.plots import write_plots

            written["plots"] = write_plots(
                self.per_component,
                self.per_case,
                out / "plots",
                metrics=self.options.get("metrics"),
                columns=self.columns,
                size_bins=size_bins,
            )
            if curves:
                from ..analysis.detection_plots import write_detection_plots

                written["plots"] += write_detection_plots(curves, out / "plots")
            if calibration:
                from ..analysis.detection_plots import write_reliability_plots

                tables = {c: e["lesion_reliability"] for c, e in calibration.items()}
                written["plots"] += write_reliability_plots(tables, out / "plots")
            if swept is not None and len(swept[0]):
                from ..analysis.detection_plots import write_threshold_plots

                written["plots"] += write_threshold_plots(swept[0], swept[1], out / "plots", self.columns)
            if groups is not None and self.cc_metrics:
                from ..analysis.plots import plot_by_group

                m = self.cc_metrics[0]
                name = f"by_group_{schema.cc(m)}.png"
                figure = plot_by_group(self.per_case, groups[2], schema.cc(m), " / ".join(groups[0]))
                written["plots"].append(atomic_write(out / "plots" / name, lambda tmp: figure.savefig(tmp, dpi=120)))
        return written

    @classmethod
    def read(cls, out_dir: _PathLike) -> DatasetResult:
        """Load a result folder written by :meth:`write` (or by ``ccmetrics evaluate``), validated against the schema.

        Only a whole set of tables is read: with a ``manifest.json`` (written since records carry checksums), its state
        must be complete and every file it lists must match its checksum; a file it does not list (left by
        someone else) is not read.

        Raises
        ------
        FileNotFoundError
            The folder holds no ``per_case.csv``.
        ValueError
            A table lacks a column of :mod:`ccmetrics.schema` (the message names it), or the tables are not
            one run's whole set (being written, their writer stopped, a file changed since): the message
            says to run the evaluation again with ``--resume``.
        """
        out = Path(out_dir)
        tables = (schema.PER_CASE, schema.PER_COMPONENT, schema.PER_PREDICTION, schema.PER_CANDIDATE, schema.THRESHOLDS)
        data, form = read_tables(out, [schema.SUMMARY.file, *(t.file for t in tables)])  # one run's set, checked
        neutralised = form >= 2  # text cells written with a leading ' (manifest format 2 on); earlier: as they were
        case_file = out / schema.PER_CASE.file
        if schema.PER_CASE.file not in data:
            raise FileNotFoundError(
                f"{out} holds no {schema.PER_CASE.file}: give a folder written by `ccmetrics evaluate`"
            )
        doc = json.loads(data[schema.SUMMARY.file]) if schema.SUMMARY.file in data else {}
        options = doc.get("options", {})
        per_case = schema.PER_CASE.read(
            case_file, source=io.BytesIO(data[schema.PER_CASE.file]), neutralised=neutralised
        )
        columns = (
            {name: registry.Column.from_facts(name, facts) for name, facts in doc["columns"].items()}
            if "columns" in doc
            else _columns_of(options.get("metrics", []), per_case)
        )
        evaluated = bool((per_case[STATUS] != FAILED).any())
        schema.PER_CASE.validate(
            per_case,
            str(case_file),
            [name for m, c in columns.items() if c.cc or evaluated for name in ((m, schema.cc(m)) if c.cc else (m,))],
        )
        per_component = pd.DataFrame()
        if schema.PER_COMPONENT.file in data:
            per_component = schema.PER_COMPONENT.read(
                out / schema.PER_COMPONENT.file,
                [m for m, c in columns.items() if c.cc],
                source=io.BytesIO(data[schema.PER_COMPONENT.file]),
                neutralised=neutralised,
            )
        per_prediction = None
        if schema.PER_PREDICTION.file in data:
            source = io.BytesIO(data[schema.PER_PREDICTION.file])
            per_prediction = schema.PER_PREDICTION.read(
                out / schema.PER_PREDICTION.file, source=source, neutralised=neutralised
            )
        per_candidate = None
        if schema.PER_CANDIDATE.file in data:
            source = io.BytesIO(data[schema.PER_CANDIDATE.file])
            per_candidate = schema.PER_CANDIDATE.read(
                out / schema.PER_CANDIDATE.file, source=source, neutralised=neutralised
            )
        thresholds = None
        if schema.THRESHOLDS.file in data:
            source = io.BytesIO(data[schema.THRESHOLDS.file])
            thresholds = schema.THRESHOLDS.read(out / schema.THRESHOLDS.file, source=source, neutralised=neutralised)
        return cls(
            per_component,
            per_case,
            options=options,
            columns=columns,
            saved=doc,
            per_prediction=per_prediction,
            per_candidate=per_candidate,
            thresholds=thresholds,
        )


def _columns_of(names: Sequence[str], per_case: pd.DataFrame) -> dict[str, registry.Column]:
    """The registry's facts of the columns of these metrics; a name this process has not registered is taken
    for a per-region metric when its CC column exists, with default facts."""
    out: dict[str, registry.Column] = {}
    for name in names:
        try:
            out.update(registry.columns_of([name]))
        except ValueError:
            out[name] = registry.Column(name, name, cc=schema.cc(name) in per_case)
    return out


def _stats_row(c, metric, aggregation, values, ci) -> dict[str, Any]:
    values = np.asarray(values, dtype=float)
    n = int(values.size)
    return {
        CLASS: c,
        schema.METRIC: metric,
        schema.AGGREGATION: aggregation,
        schema.N: n,
        schema.MEAN: float(values.mean()) if n else math.nan,
        schema.MEDIAN: float(np.median(values)) if n else math.nan,
        schema.CI_LOW: float(ci[0]),
        schema.CI_HIGH: float(ci[1]),
    }


def _finite(value: Any) -> float | None:
    """A float for JSON: None where it is not finite (undefined)."""
    value = float(value)
    return value if math.isfinite(value) else None


def _records(frame: pd.DataFrame) -> list[dict[Any, Any]]:
    out = []
    for rec in frame.to_dict(orient="records"):
        rec = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in rec.items()}
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()})
    return out


def evaluate_dataset(
    gt: Any,
    pred: _PathLike | None = None,
    metrics: str | Sequence[str] = registry.DEFAULT_METRICS,
    *,
    classes: Any = None,
    spacing: Any = "header",
    nsd_tolerance: float = 1.0,
    worst_distance: float | None = None,
    connectivity: int | None = None,
    gt_suffix: str | None = None,
    pred_suffix: str | None = None,
    tolerance_mm: float = 1e-3,
    workers: int = 1,
    client: Any = None,
    progress: bool = True,
    out_dir: _PathLike | None = None,
    resume: bool = False,
    overwrite: bool = False,
    case_timeout: float | None = None,
    max_memory: int | str | None = None,
    detection_rule: Any = None,
    ignore_label: int | None = None,
    dataset_json: Any = None,
    nnunet_summary: bool = False,
    reference_images: _PathLike | None = None,
    probabilities: Any = None,
    candidates: str | None = None,
    confidence: str = "max",
    match_by: str = "overlap",
    channel: int | None = None,
    thresholds: Any = None,
) -> DatasetResult:
    """Evaluate a data set of cases: CC-Metrics, global metrics and case-level scores per case and class.

    Parameters
    ----------
    gt : path, mapping or sequence
        A folder of GT images (then ``pred`` is the folder of predictions,
        paired by case id, see :func:`pair_folders`), or the cases themselves:
        ``{case: (gt, pred)}`` or ``[(case, gt, pred), ...]`` where each
        ``gt``/``pred`` is a file path, a numpy array or an
        :class:`~ccmetrics.formats.image.Image` (``pred=None``: missing, evaluated as empty
        and flagged).
    pred : path, optional
        The predictions folder (with a GT folder).
    metrics : str or sequence of str
        Names of the metric registry as in :func:`ccmetrics.evaluate` (``dice``, ``iou``, ``nsd``,
        ``hd``, ``hd95``, ``assd``, ``pq``, ``lesion_dice``, ``detection``, and metrics
        registered with :func:`ccmetrics.register_metric`), or registry records.
    classes : sequence of int, str or sequence of ClassSpec, optional
        Evaluate each label of label maps on its own, or regions (unions of labels, e.g.
        ``"wt=1+2+3,tc=2+3,et=3"``; :func:`ccmetrics.metrics.classes.parse_classes`), each named in the
        tables' ``class_name``; default: binary masks (a file holding other values than 0/1 gives an
        error row), or, when some files are DICOM SEGs, one class per segment number found in them, named
        by the segment's label (:func:`ccmetrics.formats.dicom.segment_classes`).
    spacing : {"header", "voxel"} or numbers
        ``"header"`` (default): each case's voxel spacing from its GT file (mm;
        plain arrays have none, so voxel units); ``"voxel"``: index units; or
        one spacing for every case.
    nsd_tolerance, worst_distance, connectivity, detection_rule
        As in :func:`ccmetrics.evaluate` (mm with a spacing). With the ``detection`` metric the
        result also holds ``per_prediction``, one row per predicted component.
    ignore_label : int, optional
        With ``classes``: GT voxels of this label are set to background in both masks first.
    dataset_json : path or DatasetJson, optional
        An nnU-Net v2 ``dataset.json`` (:func:`ccmetrics.metrics.classes.read_dataset_json`): its labels
        and regions become the classes (named by their keys), its ``ignore`` label the
        ``ignore_label``, and only files ending in its ``file_ending`` are paired. Not with
        ``classes`` or ``ignore_label``.
    nnunet_summary : bool
        Also count nnU-Net's TP, FP, FN and TN voxels per case and class (``per_case`` columns
        ``tp_voxels`` ...), from which :meth:`DatasetResult.write` writes ``nnunet_summary.json`` in
        nnU-Net's structure (:mod:`ccmetrics.formats.nnunet`).
    reference_images : path, optional
        A folder of DICOM image series (searched recursively, headers only): where two DICOM SEGs without
        their empty frames are placed, on the series each refers to (:func:`ccmetrics.formats.grids.align_pair`).
        Without it such a pair is compared on the span of its frames and flagged ``extent_inferred``.
    probabilities : path or mapping, optional
        The model's probability maps (:mod:`ccmetrics.campaign.probabilities`): a folder with one map per case
        named like its GT (a float image in [0, 1] on the GT's grid, or nnU-Net's ``CASE.npz``), or, with cases
        given as a mapping or list, ``{case: map}`` (paths, arrays or Images). Each case's lesion candidates are
        matched one-to-one to its lesions (``per_candidate``), and the result's :meth:`DatasetResult.detection_curves`
        give AP, AUROC, FROC and CPM. Without ``pred`` the segmentation metrics are computed on ``prob > 0.5``.
        The detection rule then defaults to ``iou:0.1`` (picai_eval's). With ``classes`` (plain labels, not
        regions) class ``c``'s map is channel ``c`` of each ``.npz`` (nnU-Net's order), and the predictions are
        needed.
    candidates : str, optional
        How candidates are found: ``"components"`` (of ``prob > 0``; the default without predictions),
        ``"threshold:T"``, ``"dynamic"`` (report_guided_annotation's), ``"prediction"`` (the prediction's
        components; the default with predictions) (:func:`ccmetrics.metrics.candidates.find_candidates`).
    confidence : {"max", "mean"}
        A prediction component's confidence: the map's maximum or mean inside it.
    match_by : {"overlap", "confidence"}
        What the one-to-one matching maximizes besides the number of matches: picai_eval's summed overlap, or the
        summed confidence (the most confident passing candidate is the true positive).
    channel : int, optional
        The channel of a multi-channel map (nnU-Net's ``.npz``); default: channel 1 of a two-channel map. With
        classes, each class's channel follows nnU-Net's order: a label's value, or with a region-based
        ``dataset_json`` the region's place among its foreground entries (one sigmoid each).
    thresholds : str or sequence of float, optional
        With ``probabilities``: also evaluate the per-region metrics of ``prob >= t`` at each threshold
        (``"0.1:0.9:0.1"`` or numbers), on each case's GT prepared once: the result's ``thresholds`` table and
        :meth:`DatasetResult.threshold_summary` (the best threshold by each global and CC score).
    gt_suffix, pred_suffix : str, optional
        Regular expressions removed from the end of file names (after the
        extension) to form case ids, e.g. ``"_0000"`` or ``"_pred"``.
    tolerance_mm : float
        Largest accepted difference between the GT's and the prediction's
        origin (mm); spacings must agree to a relative 1e-4 and direction
        cosines to 1e-4.
    workers : int
        Worker processes on this machine (1: in this process). Each reads
        and evaluates one case at a time.
    client : dask.distributed.Client, optional
        Run the cases on a Dask cluster instead (the files must be readable
        from the workers).
    progress : bool
        Show a progress bar (tqdm, on stderr): cases done, failed so far, rate and time left.
    out_dir : path, optional
        Keep a durable record of every finished case in ``out_dir/cases/`` the moment it is done
        (:mod:`ccmetrics.campaign.records`), so that a crash, a kill or Ctrl-C loses no finished case. The
        folder must be empty unless ``resume`` or ``overwrite`` is set, and is held by this run alone
        while it runs (:func:`ccmetrics.campaign.output_folder.locked`). (Write the final tables there with
        :meth:`DatasetResult.write`.)
    resume : bool
        Take every case whose record in ``out_dir`` still matches its files and the options; evaluate
        the missing, changed and earlier-crashed ones (which and why is printed, and kept in
        ``result.run``). The tables equal those of an uninterrupted run.
    overwrite : bool
        Remove what an earlier run wrote into ``out_dir`` first.
    case_timeout : float, optional
        Seconds a case may take; a case still running then has its worker process stopped and gets
        an error row. Runs the cases in worker processes (also with ``workers=1``); not with ``client``.
    max_memory : int or str, optional
        Largest estimated peak memory of one case (bytes, or text such as ``"16G"``); a case whose
        headers promise more becomes an error row before any voxel is read. Default: a fraction of
        the machine's available memory (:data:`ccmetrics.engine.memory.DEFAULT_MEMORY_FRACTION`);
        with worker processes, that budget is shared and a case larger than its share runs with
        fewer cases beside it. With ``client``: no limit unless given.

    Returns
    -------
    DatasetResult
        Identical tables whatever ``workers``, ``client``, or which cases came from records.

    Raises
    ------
    ccmetrics.campaign.EvaluationInterrupted
        On Ctrl-C, after stopping the workers: a ``KeyboardInterrupt`` whose ``result`` holds the
        finished cases (and ``result.run.pending`` the others).
    ccmetrics.campaign.EvaluationFailed
        The run could not go on: a record could not be written (a full disk, no permission; its
        ``__cause__`` names the path) or the scheduler failed. Its ``result`` holds the finished cases,
        whose records are kept: fix the cause and call again with ``resume=True``.
    ccmetrics.campaign.output_folder.FolderInUse
        Another run writes into ``out_dir`` (it holds the folder's lock): the message names it.

    Notes
    -----
    A worker process that dies (killed by a signal, e.g. the out-of-memory killer, or crashed in a C
    extension) costs only its case: the case is tried once more alone and, if its worker dies again,
    becomes an error row saying how the process ended. With ``workers=1`` and no ``case_timeout``
    the cases run in this process, which such a crash would end (its finished cases stay recorded).

    The GT comes first here (nnU-Net's order, and ``ccmetrics evaluate GT_DIR PRED_DIR``'s); a single case's
    :func:`ccmetrics.evaluate` takes ``(pred, gt)`` (MONAI's). :func:`ccmetrics.analysis.swap.swap_signs` reads a
    result for signs that the two were swapped (the command line prints them as a note).

    Examples
    --------
    >>> import numpy as np
    >>> from ccmetrics import evaluate_dataset
    >>> gt = np.zeros((16, 16), np.uint8); gt[2:6, 2:6] = 1; gt[10:12, 10:12] = 1
    >>> pred = gt.copy(); pred[10:12, 10:12] = 0                      # second lesion missed
    >>> result = evaluate_dataset({"a": (gt, gt), "b": (gt, pred), "c": (gt, None)}, metrics=["dice"],
    ...                           progress=False)
    >>> print(result.per_case[["case", "status", "flags", "dice", "cc_dice"]].round(3).to_string(index=False))
    case  status              flags  dice  cc_dice
       a      ok                    1.000      1.0
       b      ok                    0.889      0.5
       c flagged missing_prediction 0.000      0.0
    >>> result.counts()["flagged"]
    1
    """
    if dataset_json is not None:  # nnU-Net's dataset.json: the classes, the ignore label, the file ending
        classes, ignore_label, file_ending = _from_dataset_json(dataset_json, classes, ignore_label)
    else:
        file_ending = None
    _check_run(workers, client, case_timeout, out_dir, resume, overwrite)
    limit, budget = _memory_limits(max_memory, client)
    region_based = dataset_json is not None and any(c.is_region for c in classes)
    maps = _probability_options(
        probabilities,
        gt,
        pred,
        candidates,
        confidence=confidence,
        match_by=match_by,
        channel=channel,
        thresholds=thresholds,
        region_based=region_based,
    )
    options = EvalOptions.build(
        metrics,
        classes=classes,
        spacing=spacing,
        nsd_tolerance=nsd_tolerance,
        worst_distance=worst_distance,
        connectivity=connectivity,
        tolerance_mm=tolerance_mm,
        max_case_bytes=limit,
        detection_rule=detection_rule,
        ignore_label=ignore_label,
        nnunet_summary=nnunet_summary,
        reference_images=reference_images,
        probabilities=maps,
    )
    tasks, ignored = _tasks(gt, pred, gt_suffix, pred_suffix, file_ending, maps is not None)
    if maps is not None:
        tasks, ignored = _with_maps(tasks, ignored, maps, probabilities)
    if out_dir is not None:  # before anything there is removed or written
        given = [
            ("GT folder (GT_DIR, gt=)", gt),
            ("predictions folder (PRED_DIR, pred=)", pred),
            ("probability maps (--probabilities)", probabilities),
            ("dataset.json (--dataset-json)", dataset_json),
            ("reference images (--reference-images)", reference_images),
        ]
        if not isinstance(gt, (str, os.PathLike)):  # cases given one by one: their files
            given += [(f"file of case {t.case!r}", f) for t in tasks for f in (t.gt, t.pred, t.prob)]
        check_inputs(out_dir, given)
    options = options.with_segment_classes(tasks)
    if workers > 1 or client is not None or case_timeout is not None:
        _check_picklable(options)
    run = dict(workers=workers, client=client, progress=progress, case_timeout=case_timeout, max_memory=limit)
    return _run_campaign(
        tasks, ignored, options, options.record(gt_suffix, pred_suffix), out_dir, resume, overwrite, run, budget
    )


def _probability_options(
    probabilities: Any, gt: Any, pred: Any, candidates: str | None, **kwargs: Any
) -> ProbabilityOptions | None:
    """The probability maps' options of :func:`evaluate_dataset` (None without maps). Predictions are given with a
    predictions folder, or when a case of the mapping or list holds one; else each segmentation is ``prob > 0.5``."""
    if probabilities is None:
        if candidates is not None or kwargs.get("thresholds") is not None:
            raise ValueError(
                "candidates and thresholds belong to probability maps: give the maps too (--probabilities DIR; "
                "probabilities= in Python)"
            )
        return None
    folder = probabilities if isinstance(probabilities, (str, os.PathLike)) else None
    if isinstance(gt, (str, os.PathLike)):
        given = pred is not None
    else:
        items = gt.values() if isinstance(gt, Mapping) else ((g, p) for _, g, p in gt)
        given = any(p is not None for _, p in items)
    return ProbabilityOptions.build(folder, candidates, pred_given=given, **kwargs)


def _with_maps(
    tasks: list[CaseTask], ignored: list[str], maps: ProbabilityOptions, source: Any
) -> tuple[list[CaseTask], list[str]]:
    """The tasks with their maps (:func:`~ccmetrics.campaign.probabilities.attach_probabilities`), an error task for
    each map without GT, and the ignored files without the maps taken (nnU-Net's npz beside its segmentation)."""
    orphans = attach_probabilities(tasks, maps, source)
    tasks = sorted(tasks + [CaseTask(case, error=error) for case, error in orphans], key=lambda t: t.case)
    used = {os.path.abspath(t.prob) for t in tasks if isinstance(t.prob, (str, os.PathLike))}
    return tasks, [f for f in ignored if os.path.abspath(f) not in used]


def _run_campaign(
    tasks: list[CaseTask],
    ignored: list[str],
    options: EvalOptions,
    record: dict[str, Any],
    out_dir: _PathLike | None,
    resume: bool,
    overwrite: bool,
    run: dict[str, Any],
    budget: float | None,
) -> DatasetResult:
    """The cases run by :func:`ccmetrics.campaign.scheduler.run_cases` under the output folder's lock, assembled
    into the tables; a stop or a failure raises with the finished cases' tables."""

    def assemble(outputs: list[dict[str, Any]], info: RunInfo) -> DatasetResult:
        return _assemble(outputs, options.ordered_metrics(), ignored, record, info)

    with locked(out_dir) if out_dir is not None else contextlib.nullcontext():  # one run per folder
        if out_dir is not None:
            prepare_out_dir(out_dir, resume=resume, overwrite=overwrite, cases=[t.case for t in tasks])
        try:
            outputs, info = run_cases(
                tasks,
                options,
                evaluate=evaluate_task,
                fingerprint=lambda t: fingerprint(t, options),
                failure=lambda t, message: failed_output(t, options, message),
                estimate=lambda t: estimate_bytes(t, options),
                out_dir=out_dir,
                resume=resume,
                memory_budget=budget,
                meanwhile=lambda: _prefetch("pandas"),  # the tables are made with it: imported while the cases run
                **run,
            )
        except Stopped as stop:
            raise EvaluationInterrupted(assemble(stop.outputs, stop.run)) from None
        except Failed as failed:
            raise EvaluationFailed(str(failed), assemble(failed.outputs, failed.run)) from failed.__cause__
    return assemble(outputs, info)


def _prefetch(module: str) -> None:
    """Import ``module`` in a background thread: while this process waits for cases that run elsewhere (worker
    processes, Dask), not after them (pandas: about 0.1 s that the final tables would otherwise wait for)."""
    if module not in sys.modules:
        threading.Thread(target=importlib.import_module, args=(module,), name=f"import {module}", daemon=True).start()


def _from_dataset_json(dataset_json: Any, classes: Any, ignore_label: Any) -> tuple[Any, Any, str | None]:
    """The classes, ignore label and file ending of an nnU-Net ``dataset.json`` (not with ``classes``)."""
    if classes is not None or ignore_label is not None:
        raise ValueError(
            "dataset_json (--dataset-json) sets the classes and the ignore label: leave classes and ignore_label out"
        )
    spec = dataset_json if isinstance(dataset_json, DatasetJson) else read_dataset_json(dataset_json)
    return spec.classes, spec.ignore_label, spec.file_ending


def _checked_ignore_label(ignore_label: Any, classes: tuple[ClassSpec, ...] | None) -> int | None:
    """The ignore label as an int, checked against the classes (it needs them and must not be one of theirs)."""
    if ignore_label is None:
        return None
    if classes is None:
        raise ValueError("ignore_label (--ignore-label) works on label maps: give the classes too (--classes)")
    if isinstance(ignore_label, bool) or not isinstance(ignore_label, (int, np.integer)) or ignore_label <= 0:
        raise ValueError(f"ignore_label must be a label value > 0, got {ignore_label!r}")
    if any(int(ignore_label) in c.labels for c in classes):
        raise ValueError(f"the ignore label {ignore_label} is also one of the classes' labels")
    return int(ignore_label)


def _check_run(workers: Any, client: Any, case_timeout: Any, out_dir: Any, resume: bool, overwrite: bool) -> None:
    """The options of how the run goes, checked before anything is read."""
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    if case_timeout is not None and (client is not None or not case_timeout > 0):
        raise ValueError(
            "case_timeout (--case-timeout) takes seconds > 0 and works with local worker processes, not on a Dask "
            f"cluster (got {case_timeout!r}{' with a client' if client is not None else ''})"
        )
    if out_dir is None and (resume or overwrite):
        raise ValueError("resume and overwrite need out_dir, the folder that keeps the case records")


def _tasks(
    gt: Any, pred: Any, gt_suffix: str | None, pred_suffix: str | None, file_ending: str | None, maps: bool = False
) -> tuple[list[CaseTask], list[str]]:
    """The cases: two folders paired by case id (or the GT folder alone, with probability maps), or the mapping or
    list given; and the files ignored."""
    if isinstance(gt, (str, os.PathLike)):
        if pred is None and maps:
            files, ignored = _scan(gt, gt_suffix, "gt", file_ending)
            if not files:
                raise ValueError(f"no image file in the GT folder {gt}")
            tasks = [CaseTask(case, paths[0]) for case, paths in sorted(files.items())]
            for task, paths in zip(tasks, (files[t.case] for t in tasks)):
                if len(paths) > 1:
                    task.error = (
                        f"case id {task.case!r} is given by several files: {', '.join(Path(p).name for p in paths)}"
                    )
            return tasks, ignored
        if pred is None:
            raise ValueError(
                "give the predictions folder too (ccmetrics evaluate GT_DIR PRED_DIR; evaluate_dataset(gt_dir, "
                "pred_dir) in Python), or the probability maps (--probabilities DIR; probabilities=folder)"
            )
        return pair_folders(gt, pred, gt_suffix=gt_suffix, pred_suffix=pred_suffix, file_ending=file_ending)
    if pred is not None:
        raise ValueError("with cases given as a mapping or list, leave pred=None")
    return tasks_from_pairs(gt), []


def _segment_classes(tasks: Sequence[CaseTask]) -> tuple[ClassSpec, ...] | None:
    """One class per segment of the DICOM SEGs among the tasks' files (GT files first for the names), or None."""
    from ..formats.dicom import is_dicom_path, segment_classes

    ready = [t for t in tasks if not t.error]
    segs = [item for item in [t.gt for t in ready] + [t.pred for t in ready] if is_dicom_path(item)]
    if not segs:
        return None
    try:  # an unreadable SEG: its case says so; the others name the classes
        return segment_classes(segs, skip_unreadable=True) or None
    except (OSError, ValueError) as exc:
        raise ValueError(f"no DICOM SEG among the inputs can be read: {exc}") from exc


def _memory_limits(max_memory: int | str | None, client: Any) -> tuple[float | None, float | None]:
    """(limit of one case, budget shared by the running cases) in bytes; see ``max_memory``."""
    from ..engine.memory import DEFAULT_MEMORY_FRACTION, available_memory_bytes, parse_memory

    given = parse_memory(max_memory) if isinstance(max_memory, str) else max_memory
    if given is not None and not given > 0:
        raise ValueError(f"max_memory (--max-memory) must be > 0 bytes, got {max_memory!r}")
    if client is not None:
        return given, None
    budget = DEFAULT_MEMORY_FRACTION * available_memory_bytes()
    return (given if given is not None else budget), budget


def _assemble(
    outputs: list[dict[str, Any]],
    ordered: list[registry.Metric],
    ignored: list[str],
    record: dict[str, Any],
    run: RunInfo,
) -> DatasetResult:
    """The tidy tables from the cases' outputs (encoded, as their records hold them: each table decoded once for
    the whole data set), sorted so that they do not depend on completion order."""
    names = [m.name for m in ordered if m.per_region]
    outputs = sorted(outputs, key=lambda o: o["rows"][0][CASE])
    per_case = pd.DataFrame([row for o in outputs for row in o["rows"]])
    if len(per_case):
        per_case = per_case.sort_values(list(schema.PER_CASE.key), kind="stable").reset_index(drop=True)
        front = [c for c in schema.PER_CASE_FRONT if c in per_case.columns]
        per_case = per_case[front + [c for c in per_case.columns if c not in front]]
    if schema.EMPTY_GT not in per_case:  # every case failed (or none finished): the columns of an evaluated case
        wanted = registry.table_columns(schema.PER_CASE, ordered)
        if schema.CLASS_NAME in per_case and schema.CLASS_NAME not in wanted:  # the classes' names stay
            wanted.insert(wanted.index(CLASS) + 1, schema.CLASS_NAME)
        per_case = per_case.reindex(columns=wanted)
    per_component = _tidy(outputs, "components", schema.PER_COMPONENT, names)
    with_detection = any(m.name == "detection" for m in ordered)
    per_prediction = _tidy(outputs, "predictions", schema.PER_PREDICTION) if with_detection else None
    per_candidate = _tidy(outputs, "candidates", schema.PER_CANDIDATE) if "probabilities" in record else None
    with_thresholds = record.get("probabilities", {}).get("thresholds")
    thresholds = _tidy(outputs, "thresholds", schema.THRESHOLDS) if with_thresholds else None
    timings = pd.DataFrame([o["timing"] for o in outputs])
    columns = {c.name: c for m in ordered for c in m.columns}
    return DatasetResult(
        per_component,
        per_case,
        ignored,
        timings,
        record,
        columns,
        run=run,
        per_prediction=per_prediction,
        per_candidate=per_candidate,
        thresholds=thresholds,
    )


def _tidy(
    outputs: list[dict[str, Any]], key: str, table: schema.TableSchema, metric_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """One tidy table from the cases' outputs (``key``: their encoded tables), sorted by the table's key; its text
    columns in pandas' text dtype in every run; without rows, the table's empty form."""
    text = [f.name for f in (*table.fields, *table.tail) if f.text]
    found = decode_tables((o.get(key) for o in outputs), text=text)
    frame = found if found is not None else table.empty(metric_columns)
    return frame.sort_values(list(table.key), kind="stable").reset_index(drop=True)


def _check_picklable(options: EvalOptions) -> None:
    """Worker processes get the options pickled: a metric they cannot import is an error now, not a crash later."""
    for record in options.records:
        try:
            pickle.dumps(record)
        except Exception as exc:  # pickling raises several types (PicklingError, AttributeError, TypeError)
            raise ValueError(
                f"metric {record.name!r} cannot be sent to worker processes ({exc}): define its function "
                f"at the top level of a module (not a lambda or a nested function), or use workers=1"
            ) from None
