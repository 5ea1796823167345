"""Evaluating whole data sets: the entry point, from its arguments to the tidy tables.

:func:`evaluate_dataset`'s data flow: the arguments → one :class:`~ccmetrics.campaign.options.EvalOptions` and a list of
:class:`~ccmetrics.campaign.options.CaseTask` (:mod:`~ccmetrics.campaign.options`; the tasks from
:func:`~ccmetrics.campaign.pairing.pair_folders`, or from arrays and files given directly:
:mod:`~ccmetrics.campaign.pairing`) → :func:`~ccmetrics.campaign.case.evaluate_task` on each
(:mod:`~ccmetrics.campaign.case`), in this process, in worker processes or on a Dask cluster → one
:class:`~ccmetrics.campaign.result.DatasetResult` (:mod:`~ccmetrics.campaign.result`) holding the tidy
tables that everything downstream (CSV files, :mod:`ccmetrics.analysis.stats`, :mod:`ccmetrics.analysis.plots`,
the command line) reads.

The cases are scheduled by :func:`ccmetrics.campaign.scheduler.run_cases`: with an
``out_dir`` every finished case is recorded there at once, ``resume`` takes
the cases whose records still stand, a worker process that dies costs only
its case, Ctrl-C keeps what is finished. Results are sorted by case and
class, so the tables are identical whatever the number of workers, the
scheduler, or which cases came from records. Cost: one read of each file
plus one :func:`ccmetrics.evaluate` per case and class, one header read per
file for the memory estimate, and one small record file per case.

Every name this module held before its parts moved to those modules (``EvalOptions``, ``DatasetResult``,
``evaluate_task``, ``pair_folders``, ...) is still importable from here, as the same object.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _lazy, schema
from ..metrics import registry
from ..metrics.classes import DatasetJson, read_dataset_json
from ..schema import CASE, CLASS

# the modules this one was cut into: every name it held (public and private) is importable from here as before
from .case import (  # noqa: F401
    EMPTY_GT,
    MISSING_PREDICTION,
    _as_image,
    _CaseError,
    _check_segments,
    _engine_of,
    _header,
    _joined,
    _label_map_found,
    _map_bytes,
    _map_file,
    _nnunet_counts,
    _over_memory,
    _with_tolerance,
    estimate_bytes,
    evaluate_task,
    failed_output,
    fingerprint,
)
from .options import CaseTask, EvalOptions, _checked_ignore_label, _describe, _PathLike, _segment_classes  # noqa: F401
from .output_folder import check_inputs, locked, prepare_out_dir
from .pairing import _scan, pair_folders, tasks_from_pairs
from .probabilities import ProbabilityOptions, attach_probabilities
from .records import decode_tables
from .result import DatasetResult, _columns_of, _finite, _records, _stats_row  # noqa: F401
from .scheduler import EvaluationFailed, EvaluationInterrupted, Failed, RunInfo, Stopped, run_cases

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = ["evaluate_dataset"]


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
        paired by case id, see :func:`~ccmetrics.campaign.pairing.pair_folders`), or the cases themselves:
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
        ``tp_voxels`` ...), from which :meth:`~ccmetrics.campaign.result.DatasetResult.write` writes
        ``nnunet_summary.json`` in nnU-Net's structure (:mod:`ccmetrics.formats.nnunet`).
    reference_images : path, optional
        A folder of DICOM image series (searched recursively, headers only): where two DICOM SEGs without
        their empty frames are placed, on the series each refers to (:func:`ccmetrics.formats.grids.align_pair`).
        Without it such a pair is compared on the span of its frames and flagged ``extent_inferred``.
    probabilities : path or mapping, optional
        The model's probability maps (:mod:`ccmetrics.campaign.probabilities`): a folder with one map per case
        named like its GT (a float image in [0, 1] on the GT's grid, or nnU-Net's ``CASE.npz``), or, with cases
        given as a mapping or list, ``{case: map}`` (paths, arrays or Images). Each case's lesion candidates are
        matched one-to-one to its lesions (``per_candidate``), and the result's
        :meth:`~ccmetrics.campaign.result.DatasetResult.detection_curves` give AP, AUROC, FROC and CPM. Without
        ``pred`` the segmentation metrics are computed on ``prob > 0.5``. The detection rule then defaults to
        ``iou:0.1`` (picai_eval's). With ``classes`` (plain labels, not
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
        :meth:`~ccmetrics.campaign.result.DatasetResult.threshold_summary` (the best threshold by each global and
        CC score).
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
        :meth:`~ccmetrics.campaign.result.DatasetResult.write`.)
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
