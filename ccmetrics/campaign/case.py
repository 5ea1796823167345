"""One case evaluated: the unit of work of every scheduler, in this process, in worker processes or on Dask.

:func:`evaluate_task` reads a :class:`~ccmetrics.campaign.options.CaseTask`'s files (and its probability map),
puts the GT and the prediction on one grid and evaluates each class with :func:`ccmetrics.evaluate`; it never
raises. Each task reads its own files, so a worker holds one case at a time. A GT without prediction is
evaluated as an empty prediction and flagged ``missing_prediction``; a prediction without GT, a file that
cannot be read, a geometry mismatch, a non-binary mask or NaN voxels give an ``error`` row that names the
problem (:func:`failed_output`), and the other cases go on.

With ``write_maps`` (``--write-maps``) each evaluated case writes its outcome maps from its own rows of the tables,
while its masks are in memory (:mod:`ccmetrics.campaign.maps`), and names them in ``outcome_map_file``; a map that
cannot be written is the case's error row (``retry``: ``resume`` tries it again).

The scheduler's other callbacks are here too: :func:`fingerprint` (what a case's result depends on, kept in
its record for ``resume``) and :func:`estimate_bytes` (a case's peak memory from its headers, before any voxel
is read). Cost: one read of each file plus one :func:`ccmetrics.evaluate` per case and class, and one header
read per file for the memory estimate.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy, schema
from .._inputs import NotBinaryError, as_spacing
from ..columns import Columns
from ..engine.config import EngineConfig, engine_config
from ..formats.dicom import check_union_memory
from ..formats.grids import align_pair
from ..formats.image import ImageMemoryError
from ..formats.io import Image, load_image
from ..metrics.case import evaluate
from ..metrics.classes import ClassSpec, class_values
from ..metrics.results import CaseResult
from ..schema import CASE, CLASS, ERROR, FAILED, FLAGGED, FLAGS, OK, STATUS
from .maps import outcome_map_bytes, write_case_maps
from .options import CaseOutput, CaseTask, EvalOptions, _describe
from .probabilities import evaluate_with_maps, read_case_maps, segmentation_of
from .records import file_fingerprint
from .scans import looks_like_suv, needs_scans

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = ["evaluate_task", "failed_output", "fingerprint", "estimate_bytes", "MISSING_PREDICTION", "EMPTY_GT"]

#: flag of a GT without prediction file (evaluated as an empty prediction)
MISSING_PREDICTION = schema.MISSING_PREDICTION
#: flag of a case whose GT has no component (scored by the empty-GT rule, summarised apart)
EMPTY_GT = schema.EMPTY_GT_FLAG


def _as_image(item: Any) -> tuple[Image, bool]:
    """The item as an Image, and whether its geometry is known (a file or an Image, not a bare array)."""
    if isinstance(item, Image):
        return item, True
    if isinstance(item, (str, os.PathLike)):  # a mask C-ordered at once, as the engine reads it (same values)
        return load_image(item, c_order=True), True
    array = np.asarray(item)
    return Image(array, (1.0,) * array.ndim, np.eye(array.ndim + 1), None), False


def evaluate_task(task: CaseTask, options: EvalOptions) -> CaseOutput:
    """Evaluate one case (the unit of work of every scheduler); never raises.

    Returns a :class:`~ccmetrics.campaign.options.CaseOutput` (a mapping too, as the dict it was before) with
    ``rows`` (per-case rows, one per class), ``components`` (the per-component table), ``predictions`` (the
    per-prediction table with the ``detection`` metric, else None), with probability maps ``candidates`` and
    ``thresholds``, and ``timing`` (seconds reading and computing). The tables are
    :class:`~ccmetrics.columns.Columns`, which :func:`~ccmetrics.campaign.records.encode_output` encodes as
    pandas would (``.frame()`` makes the DataFrame): a worker evaluates its cases without importing pandas.

    With ``options.max_memory`` (``--max-memory``), a case whose estimated peak exceeds it is refused
    before the memory is taken: once read, by its foreground; while evaluated, by its counts of components
    and runs of voxels, as soon as the engine has labelled them (``ccmetrics.engine._budget``). Either way its
    output is an error row that names the option, with ``retry`` set.
    """
    from ..engine.memory import MemoryLimitError

    clock = _Clock()
    try:
        case = _read_case(task, options, clock)
        shape = case.gt.array.shape
        extra_bytes = _map_bytes(shape, options) + _scan_bytes(shape, task) + outcome_map_bytes(shape, options)
        too_much, need = _over_memory(case.gt, case.pred, options.max_memory, extra_bytes)
        if too_much:
            return replace(failed_output(task, options, too_much, clock.read, clock.computing()), retry=True)
        spacing = _case_spacing(case, options)
        results, extra = _evaluate_case(task, options, case, spacing, need)
    except (MemoryLimitError, ImageMemoryError) as exc:  # over --max-memory, or a file larger than the memory left
        return replace(failed_output(task, options, str(exc), clock.read, clock.computing()), retry=True)
    except Exception as exc:  # one case's failure must never stop the data set
        expected = isinstance(exc, (ValueError, OSError))  # bad input: its message says what is wrong
        message = str(exc) if expected else f"{type(exc).__name__}: {exc} (please report this as a bug)"
        return failed_output(task, options, message, clock.read, clock.computing())
    return _case_output(task, options, case, spacing, results, extra, clock)


class _Clock:
    """The seconds of a case: since it began, and those spent reading (set as the reading ends)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.read = 0.0

    def reading_done(self) -> None:
        self.read = time.perf_counter() - self.start

    def computing(self) -> float:
        return time.perf_counter() - self.start - self.read


@dataclass
class _ReadCase:
    """A case read: its GT and prediction on one grid, whether the GT's geometry is known, its maps, its flags, its
    scan (float32 on the GT's grid, with ``images``)."""

    gt: Image
    pred: Image
    gt_known: bool
    maps: Any
    flags: list[str]
    scan: np.ndarray | None = None


def _read_case(task: CaseTask, options: EvalOptions, clock: _Clock) -> _ReadCase:
    """The case's files read and put on one grid (a missing prediction: empty, flagged), with its probability
    maps; raises :class:`_CaseError` for a problem of the case."""
    if task.error:
        raise _CaseError(task.error)
    gt, gt_known = _as_image(task.gt)
    read, pred_known = _as_image(task.pred) if task.pred is not None else (None, gt_known)
    clock.reading_done()
    flags: list[str] = []
    if options.segment_classes:
        _check_segments(gt, read, options.classes or ())
    if gt_known and pred_known:  # on one grid in patient space (a DICOM SEG: reoriented, placed)
        check_union_memory(gt, read, reference=options.reference_images, max_bytes=options.max_memory)
        try:
            gt, read, flags = align_pair(gt, read, reference=options.reference_images, atol_mm=options.tolerance_mm)
        except ValueError as exc:
            raise _CaseError(_with_tolerance(str(exc), options.tolerance_mm)) from None
    maps = None
    if options.probabilities is not None:  # the maps on the GT's grid; without predictions, the segmentation
        maps = read_case_maps(task.prob, gt, options.probabilities, options.tolerance_mm, max_bytes=options.max_memory)
        read = segmentation_of(maps[1]) if options.probabilities.segment_from_map else read
        clock.reading_done()
    if read is None:
        pred = Image(np.zeros(gt.array.shape, np.uint8), gt.spacing, gt.affine)
        flags.append(MISSING_PREDICTION)
    else:
        pred = read
    if gt.array.shape != pred.array.shape:
        raise _CaseError(f"shape differs: gt {gt.array.shape}, pred {pred.array.shape}")
    scan = None
    if task.image is not None:  # the PET, once, as float32 on the grid the case is evaluated on
        from .scans import read_case_scan

        scan = read_case_scan(task.image, gt, gt_known, tolerance_mm=options.tolerance_mm, max_bytes=options.max_memory)
        clock.reading_done()
        if not looks_like_suv(scan):
            flags.append(schema.SCAN_NOT_SUV)
    return _ReadCase(gt, pred, gt_known, maps, flags, scan)


def _case_spacing(case: _ReadCase, options: EvalOptions) -> tuple[float, ...] | None:
    """The case's spacing: ``"header"``, known from a file or an Image; ``"voxel"``, none; or the numbers given (one
    for every axis, or one per axis: a wrong count is this case's error row)."""
    if isinstance(options.spacing, str):
        return tuple(case.gt.spacing) if options.spacing == "header" and case.gt_known else None
    return as_spacing(options.spacing, case.gt.array.ndim)


def _evaluate_case(
    task: CaseTask, options: EvalOptions, case: _ReadCase, spacing: Any, need: int
) -> tuple[dict[int, CaseResult], dict[str, Any]]:
    """Each class of the read case evaluated (with maps: its candidates, case values and threshold sweep too, in
    ``extra``), under the case's engine configuration and memory guard."""
    from ..engine.memory import memory_guard

    gt, pred = case.gt, case.pred
    kwargs: dict[str, Any] = dict(
        spacing=spacing,
        nsd_tolerance=options.nsd_tolerance,
        worst_distance=options.worst_distance,
        connectivity=options.connectivity,
        detection_rule=options.rule(),
    )
    if case.scan is not None:
        kwargs["image"] = case.scan
    extra: dict[str, Any] = {"candidates": None, "thresholds": None, "case_values": {}}
    # the engine checks the rest of the estimate once it knows the counts (components, runs: _budget)
    with engine_config(_engine_of(options)), memory_guard(options.max_memory, base=need):
        if case.maps is not None:  # each class's lesions labelled once for the metrics and the candidates
            results, extra["candidates"], extra["case_values"], extra["thresholds"] = evaluate_with_maps(
                case.maps,
                pred.array,
                gt.array,
                options,
                kwargs,
                case=task.case,
                voxel_mm3=math.prod(spacing) if spacing is not None else math.nan,
                affine=gt.affine if case.gt_known else None,
            )
        elif options.classes:
            results = evaluate(
                gt=gt.array,
                pred=pred.array,
                metrics=options.metric_arguments(),
                classes=options.classes,
                ignore_label=options.ignore_label,
                **kwargs,
            )
        else:
            try:
                results = {1: evaluate(gt=gt.array, pred=pred.array, metrics=options.metric_arguments(), **kwargs)}
            except NotBinaryError as exc:
                raise _CaseError(_label_map_found(exc, gt.array if exc.name == "gt" else pred.array)) from None
    return results, extra


def _case_output(
    task: CaseTask,
    options: EvalOptions,
    case: _ReadCase,
    spacing: Any,
    results: dict[int, CaseResult],
    extra: dict[str, Any],
    clock: _Clock,
) -> CaseOutput:
    """The evaluated case's output: a row per class, its per-component (and per-prediction) tables, its timing."""
    gt_file, pred_file = task.file_names()
    base = {CASE: task.case, schema.GT_FILE: gt_file, schema.PRED_FILE: pred_file, **_input_files(task, options)}
    rows, frames, predictions = [], [], []
    voxel_ml = math.prod(spacing) / 1000.0 if spacing is not None else math.nan
    names = {c.value: c.name for c in options.classes} if options.classes else {}
    counts = _nnunet_counts(results, case.gt.array, options) if options.nnunet_summary else {}
    affine = case.gt.affine if case.gt_known else None
    for c, result in results.items():
        case_flags = case.flags + ([EMPTY_GT] if result.empty_gt else [])
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
        row.update(extra["case_values"].get(c, {}))
        rows.append(row)
        frame = result.component_rows(task.case, c)  # as Columns: a worker makes no DataFrame (nor imports pandas)
        prediction = result.prediction_rows(task.case, c, affine)
        if names:
            frame.insert(2, schema.CLASS_NAME, names[c])
            if prediction is not None:
                prediction.insert(2, schema.CLASS_NAME, names[c])
        frames.append(frame)
        predictions.append(prediction)
    if options.write_maps:  # each class's outcome map, from its rows of the tables (ccmetrics.campaign.maps)
        try:
            written = write_case_maps(
                task.case,
                options,
                case.gt,
                case.pred,
                dict(zip(results, frames)),
                dict(zip(results, predictions)),
                scan=case.scan,
                gt_file=task.gt,
            )
        except Exception as exc:  # the case's error row: a full disk (resume tries again), a series off the grid
            expected = isinstance(exc, (ValueError, OSError))
            problem = str(exc) if expected else f"{type(exc).__name__}: {exc} (please report this as a bug)"
            message = f"writing its outcome map failed (--write-maps): {problem}"
            failed = failed_output(task, options, message, clock.read, clock.computing())
            return replace(failed, retry=isinstance(exc, OSError))
        for row in rows:
            row[schema.OUTCOME_MAP_FILE] = written[row[CLASS]]
    return CaseOutput(
        rows,
        components=_joined(frames),
        predictions=None if predictions[0] is None else _joined(predictions),
        candidates=extra["candidates"],
        thresholds=extra["thresholds"],
        timing={CASE: task.case, schema.READ_SECONDS: clock.read, schema.COMPUTE_SECONDS: clock.computing()},
    )


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
) -> CaseOutput:
    """The output of a case that could not be evaluated: one error row per class saying why."""
    gt_file, pred_file = task.file_names()
    base = {CASE: task.case, schema.GT_FILE: gt_file, schema.PRED_FILE: pred_file, **_input_files(task, options)}
    names = {c.value: {schema.CLASS_NAME: c.name} for c in options.classes} if options.classes else {}
    return CaseOutput(
        [
            {**base, CLASS: c, **names.get(c, {}), STATUS: FAILED, FLAGS: "", ERROR: message}
            for c in class_values(options.classes)
        ],
        timing={CASE: task.case, schema.READ_SECONDS: read_seconds, schema.COMPUTE_SECONDS: compute_seconds},
    )


def _input_files(task: CaseTask, options: EvalOptions) -> dict[str, str]:
    """The ``prob_file`` cell of a run with probability maps (the case's map file), the ``image_file`` cell of a run
    with scans (the case's PET file), empty when given as an array or missing; and the ``outcome_map_file`` cell of a
    run that writes outcome maps (empty here: the evaluated case names its map, :func:`_case_output`)."""
    cells = {}
    if options.probabilities is not None:
        cells[schema.PROB_FILE] = _describe(task.prob) if task.prob is not None else ""
    if needs_scans(options.metrics, options.rule()):
        cells[schema.IMAGE_FILE] = _describe(task.image) if task.image is not None else ""
    if options.write_maps:
        cells[schema.OUTCOME_MAP_FILE] = ""
    return cells


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
        **({"image": file_fingerprint(task.image)} if task.image is not None else {}),
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
    extra = _map_bytes(gt.shape, options) + _scan_bytes(gt.shape, task) + outcome_map_bytes(gt.shape, options)
    return int(estimate_case_bytes(gt, pred, options.metrics, foreground=0)) + extra


def _map_bytes(shape: Sequence[int], options: EvalOptions) -> int:
    """What a probability map adds to a case's peak: the float32 map, nnU-Net's other channel while it is cut out,
    and the candidates' mask and labels (4 + 4 + 1 + 4 bytes a voxel: a bound, the labels grow with the foreground)."""
    return 13 * math.prod(shape) if options.probabilities is not None else 0


def _scan_bytes(shape: Sequence[int], task: CaseTask) -> int:
    """What a case's scan adds to its peak while it is evaluated: the float32 scan (its reading is checked against the
    limit from its header, :func:`ccmetrics.formats.scans.read_scan`)."""
    from .scans import SCAN_BYTES_PER_VOXEL

    return SCAN_BYTES_PER_VOXEL * math.prod(shape) if task.image is not None else 0


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
