"""Evaluating whole data sets: the entry point, from its arguments to the tidy tables.

:func:`evaluate_dataset`'s data flow: the arguments → one :class:`~ccmetrics.campaign.options.EvalOptions` and a list of
:class:`~ccmetrics.campaign.options.CaseTask` (:mod:`~ccmetrics.campaign.options`; the tasks from
:func:`~ccmetrics.campaign.pairing.pair_folders`, or from arrays and files given directly:
:mod:`~ccmetrics.campaign.pairing`) → :func:`~ccmetrics.campaign.case.evaluate_task` on each
(:mod:`~ccmetrics.campaign.case`), in this process, in worker processes or on a Dask cluster → one
:class:`~ccmetrics.results.dataset.DatasetResult` (:mod:`~ccmetrics.results.dataset`) holding the tidy
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
import dataclasses
import importlib
import os
import pickle
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _lazy, schema
from .._words import in_terms
from ..metrics import registry
from ..metrics.classes import DatasetJson, read_dataset_json
from ..metrics.detection_rules import DetectionRule
from ..results.dataset import DatasetResult
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
    _nnunet_counts,
    _over_memory,
    _with_tolerance,
    estimate_bytes,
    evaluate_task,
    failed_output,
    fingerprint,
)
from .maps import with_maps_folder, write_outcome_colour_tables
from .options import (  # noqa: F401
    CaseOutput,
    CaseTask,
    EvalOptions,
    PairingOptions,
    RunOptions,
    _checked_ignore_label,
    _describe,
    _PathLike,
    _segment_classes,
)
from .output_folder import check_inputs, locked, prepare_out_dir
from .pairing import _scan, pair_folders, tasks_from_pairs
from .probabilities import ProbabilityOptions, attach_probabilities
from .records import decode_tables
from .scans import attach_scans, check_scans_wanted
from .scheduler import EvaluationFailed, EvaluationInterrupted, Failed, RunInfo, Stopped, run_cases

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = ["evaluate_dataset"]

#: each former keyword of :func:`evaluate_dataset` (kept for a release, with a warning): the keyword of the option
#: object that holds it now, and its field there
_FORMER: dict[str, tuple[str, str]] = {
    **{
        name: ("options", name)
        for name in (
            "spacing",
            "nsd_tolerance",
            "worst_distance",
            "connectivity",
            "tolerance_mm",
            "detection_rule",
            "ignore_label",
            "nnunet_summary",
            "reference_images",
        )
    },
    **{name: ("pairing", name) for name in ("gt_suffix", "pred_suffix", "dataset_json")},
    **{name: ("run", name) for name in ("resume", "overwrite", "case_timeout", "max_memory")},
    "client": ("run", "dask"),
    **{name: ("maps", name) for name in ("candidates", "confidence", "match_by", "thresholds")},
    "channel": ("maps", "prob_channel"),
}
#: the option objects: keyword -> class
_OBJECTS: dict[str, type] = {
    "options": EvalOptions,
    "maps": ProbabilityOptions,
    "run": RunOptions,
    "pairing": PairingOptions,
}
#: the shortcut keywords: keyword -> (the option object's keyword, its field)
_SHORTCUTS = {
    "metrics": ("options", "metrics"),
    "classes": ("options", "classes"),
    "out_dir": ("run", "out_dir"),
    "progress": ("run", "progress"),
    "workers": ("run", "workers"),
}


def evaluate_dataset(
    gt: Any,
    pred: _PathLike | None = None,
    metrics: str | Sequence[Any] | None = None,
    *,
    options: EvalOptions | None = None,
    maps: ProbabilityOptions | None = None,
    run: RunOptions | None = None,
    pairing: PairingOptions | None = None,
    probabilities: Any = None,
    images: Any = None,
    classes: Any = None,
    out_dir: _PathLike | None = None,
    progress: bool | None = None,
    workers: int | None = None,
    **former: Any,
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
    metrics : str or sequence of str, optional
        Names of the metric registry as in :func:`ccmetrics.evaluate` (``dice``, ``iou``, ``nsd``,
        ``hd``, ``hd95``, ``assd``, ``pq``, ``lesion_dice``, ``detection``, and metrics
        registered with :func:`ccmetrics.register_metric`), or registry records; default:
        ``options.metrics`` (:data:`ccmetrics.metrics.registry.DEFAULT_METRICS`). A shortcut of
        ``options=EvalOptions(metrics=...)``. ``pet`` (PET quantification on the scan) needs ``images``.
    options : EvalOptions, optional
        What changes values (:class:`~ccmetrics.campaign.options.EvalOptions`): ``classes``, ``spacing``
        (``"header"``: each case's voxel spacing from its GT file, plain arrays have none; ``"voxel"``: index
        units; or one spacing for every case), ``nsd_tolerance``, ``worst_distance``, ``connectivity``,
        ``detection_rule`` (as in :func:`ccmetrics.evaluate`, mm with a spacing; with the ``detection`` metric the
        result also holds ``per_prediction``), ``ignore_label`` (with ``classes``: GT voxels of this label are set
        to background in both masks first), ``nnunet_summary`` (also count nnU-Net's TP, FP, FN and TN voxels per
        case and class, from which :meth:`~ccmetrics.results.dataset.DatasetResult.write` writes
        ``nnunet_summary.json``),
        ``reference_images`` (a folder of DICOM image series where two DICOM SEGs without their empty frames are
        placed, :func:`ccmetrics.formats.grids.align_pair`; without it such a pair is compared on the span of its
        frames and flagged ``extent_inferred``), ``tolerance_mm`` (the largest accepted difference between the
        GT's and the prediction's origin, mm; spacings must agree to a relative 1e-4 and direction cosines to 1e-4)
        and ``write_maps`` (write each case's outcome map, its lesions found and missed and its true- and
        false-positive predictions as labels 1-4, into ``out_dir/maps/`` with colour tables for ITK-SNAP and 3D
        Slicer, named in the per-case table's ``outcome_map_file``: :mod:`ccmetrics.campaign.maps`; needs
        ``out_dir``).
    maps : ProbabilityOptions, optional
        How the probability maps are used (:class:`~ccmetrics.campaign.probabilities.ProbabilityOptions`):
        ``candidates`` (``"components"`` of ``prob > 0``, the default without predictions; ``"threshold:T"``;
        ``"dynamic"``, report_guided_annotation's; ``"prediction"``, the prediction's components, the default with
        predictions: :func:`ccmetrics.metrics.candidates.find_candidates`), ``confidence`` (``"max"`` or
        ``"mean"``: a prediction component's confidence), ``match_by`` (``"overlap"``, picai_eval's summed overlap,
        or ``"confidence"``: what the one-to-one matching maximizes besides the number of matches),
        ``prob_channel`` (the channel of a multi-channel map such as nnU-Net's ``.npz``; default: channel 1 of
        two; with classes each class's channel follows nnU-Net's order) and ``thresholds`` (also evaluate the
        per-region metrics of ``prob >= t`` at each threshold, ``"0.1:0.9:0.1"`` or numbers: the result's
        ``thresholds`` table and :meth:`~ccmetrics.results.dataset.DatasetResult.threshold_summary`).
    run : RunOptions, optional
        How the run goes (:class:`~ccmetrics.campaign.options.RunOptions`; none of it changes a value):
        ``workers``, ``dask``, ``progress``, ``out_dir``, ``resume``, ``overwrite``, ``case_timeout``,
        ``max_memory``: see the shortcuts below and the Notes.
    pairing : PairingOptions, optional
        How the files of two folders are paired (:class:`~ccmetrics.campaign.options.PairingOptions`):
        ``gt_suffix`` and ``pred_suffix`` (regular expressions removed from the end of file names, after the
        extension, to form case ids, e.g. ``"_0000"`` or ``"_pred"``), ``dataset_json`` (an nnU-Net v2
        ``dataset.json``, :func:`ccmetrics.metrics.classes.read_dataset_json`: its labels and regions become the
        classes, named by their keys, its ``ignore`` label the ``ignore_label``, and only files ending in its
        ``file_ending`` are paired; not with ``classes`` or ``ignore_label``).
    probabilities : path or mapping, optional
        The model's probability maps (:mod:`ccmetrics.campaign.probabilities`): a folder with one map per case
        named like its GT (a float image in [0, 1] on the GT's grid, or nnU-Net's ``CASE.npz``), or, with cases
        given as a mapping or list, ``{case: map}`` (paths, arrays or Images). Each case's lesion candidates are
        matched one-to-one to its lesions (``per_candidate``), and the result's
        :meth:`~ccmetrics.results.dataset.DatasetResult.detection_curves` give AP, AUROC, FROC and CPM. Without
        ``pred`` the segmentation metrics are computed on ``prob > 0.5``. The detection rule then defaults to
        ``iou:0.1`` (picai_eval's). With ``classes`` (plain labels, not regions) class ``c``'s map is channel ``c``
        of each ``.npz`` (nnU-Net's order), and the predictions are needed.
    images : path or mapping, optional
        The PET scans, for the ``pet`` metrics and the ``suv_max`` detection rule (:mod:`ccmetrics.campaign.scans`;
        needed by them, refused without them): a folder with nnU-Net's channels ``CASE_0000.nii.gz``,
        ``CASE_0001.nii.gz``, ... (e.g. autoPET's CT ``_0000`` and PET ``_0001``; ``pairing.pet_channel`` chooses,
        else ``dataset.json``'s ``channel_names`` entry ``PET``, else the only channel) or one ``CASE.nii.gz`` per case
        (NIfTI, MHA, NRRD, or a DICOM series' folder); or ``{case: scan}`` (paths, arrays or Images). The values are
        taken as SUV (body weight). Each scan must lie on its GT's grid (checked from its header as the masks are;
        another grid is the case's error row, never resampled), is read once as float32 and counted in the case's
        memory; a NaN or inf SUV inside a lesion or predicted component is the case's error row.
    classes : sequence of int, str or sequence of ClassSpec, optional
        Evaluate each label of label maps on its own, or regions (unions of labels, e.g.
        ``"wt=1+2+3,tc=2+3,et=3"``; :func:`ccmetrics.metrics.classes.parse_classes`), each named in the
        tables' ``class_name``; default: binary masks (a file holding other values than 0/1 gives an
        error row), or, when some files are DICOM SEGs, one class per segment number found in them, named
        by the segment's label (:func:`ccmetrics.formats.dicom.segment_classes`). A shortcut of
        ``options=EvalOptions(classes=...)``.
    out_dir : path, optional
        Keep a durable record of every finished case in ``out_dir/cases/`` the moment it is done
        (:mod:`ccmetrics.campaign.records`), so that a crash, a kill or Ctrl-C loses no finished case. The
        folder must be empty unless ``run.resume`` or ``run.overwrite`` is set, and is held by this run alone
        while it runs (:func:`ccmetrics.campaign.output_folder.locked`). (Write the final tables there with
        :meth:`~ccmetrics.results.dataset.DatasetResult.write`.) A shortcut of ``run=RunOptions(out_dir=...)``.
    progress : bool, optional
        Show a progress bar (tqdm, on stderr): cases done, failed so far, rate and time left (default: yes). A
        shortcut of ``run=RunOptions(progress=...)``.
    workers : int, optional
        Worker processes on this machine (default 1: in this process). Each reads and evaluates one case at a
        time. A shortcut of ``run=RunOptions(workers=...)``.
    **former
        The former keywords (``spacing=``, ``client=``, ``gt_suffix=``, ``channel=``, ...), each taken as the field
        of the option object that holds it now, with one ``DeprecationWarning`` that names it.

    Returns
    -------
    DatasetResult
        Identical tables whatever ``workers``, ``dask``, or which cases came from records.

    Raises
    ------
    ccmetrics.campaign.EvaluationInterrupted
        On Ctrl-C, after stopping the workers: a ``KeyboardInterrupt`` whose ``result`` holds the
        finished cases (and ``result.run.pending`` the others).
    ccmetrics.campaign.EvaluationFailed
        The run could not go on: a record could not be written (a full disk, no permission; its
        ``__cause__`` names the path) or the scheduler failed. Its ``result`` holds the finished cases,
        whose records are kept: fix the cause and call again with ``run=RunOptions(resume=True, ...)``.
    ccmetrics.campaign.output_folder.FolderInUse
        Another run writes into ``out_dir`` (it holds the folder's lock): the message names it.

    Notes
    -----
    :class:`~ccmetrics.campaign.options.RunOptions`: ``dask`` runs the cases on a Dask cluster instead (its
    scheduler's address, or a ``dask.distributed.Client``; the files must be readable from the workers).
    ``resume`` takes every case whose record in ``out_dir`` still matches its files and the options, and evaluates
    the missing, changed and earlier-crashed ones (which and why is printed, and kept in ``result.run``): the
    tables equal those of an uninterrupted run. ``overwrite`` removes what an earlier run wrote into ``out_dir``
    first. ``case_timeout``: seconds a case may take; a case still running then has its worker process stopped and
    gets an error row (runs the cases in worker processes, also with ``workers=1``; not with ``dask``).
    ``max_memory``: the largest estimated peak memory of one case (bytes, or text such as ``"16G"``); a case whose
    headers promise more becomes an error row before any voxel is read. Default: a fraction of the machine's
    available memory (:data:`ccmetrics.engine.memory.DEFAULT_MEMORY_FRACTION`); with worker processes, that budget
    is shared and a case larger than its share runs with fewer cases beside it. With ``dask``: no limit unless
    given.

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

    The options as objects, which the command line builds too:

    >>> from ccmetrics import EvalOptions, RunOptions
    >>> again = evaluate_dataset({"a": (gt, gt), "b": (gt, pred)}, options=EvalOptions(metrics=["dice"],
    ...                          spacing="voxel"), run=RunOptions(progress=False))
    >>> again.per_case["cc_dice"].tolist()
    [1.0, 0.5]
    """
    given = {"options": options, "maps": maps, "run": run, "pairing": pairing}
    shortcuts = {"metrics": metrics, "classes": classes, "out_dir": out_dir, "progress": progress, "workers": workers}
    objects = _option_objects(given, shortcuts, former)
    check_scans_wanted(objects["options"].metrics, objects["options"].detection_rule, images)  # at once
    objects["run"].check()
    with _dask_client(objects["run"].dask) as client:
        return _evaluate(gt, pred, probabilities, objects, client, images)


def _option_objects(given: dict[str, Any], shortcuts: dict[str, Any], former: dict[str, Any]) -> dict[str, Any]:
    """The option objects of a call of :func:`evaluate_dataset`: those given (or their defaults), with the shortcut
    keywords and the former keywords (one ``DeprecationWarning`` naming where each goes now) put into their fields.
    A field given twice (in its object and by a keyword) is an error."""
    unknown = [name for name in former if name not in _FORMER]
    if unknown:
        raise TypeError(f"evaluate_dataset() got an unexpected keyword argument {unknown[0]!r}")
    values: dict[str, dict[str, Any]] = {name: {} for name in _OBJECTS}
    for name, value in shortcuts.items():
        if value is not None:
            values[_SHORTCUTS[name][0]][_SHORTCUTS[name][1]] = (name, value)
    for name, value in former.items():
        owner, field_name = _FORMER[name]
        values[owner][field_name] = (name, value)
    if former:
        _warn_former(former)
    objects = {}
    for owner, cls in _OBJECTS.items():
        obj = given[owner]
        if obj is not None and not isinstance(obj, cls):
            raise TypeError(f"evaluate_dataset({owner}=...) takes a {cls.__name__}, got {type(obj).__name__}")
        base: Any = obj if obj is not None else cls()
        if obj is not None:
            for field_name, (name, _) in values[owner].items():
                if getattr(obj, field_name) != getattr(cls(), field_name):
                    raise ValueError(
                        f"{field_name} is given twice: as {name}= and in {owner}={cls.__name__}(...); give it once"
                    )
        changes = {field_name: value for field_name, (_, value) in values[owner].items()}
        objects[owner] = dataclasses.replace(base, **changes) if changes else base
    objects["maps_given"] = given["maps"] is not None or bool(values["maps"])
    return objects


def _warn_former(former: dict[str, Any]) -> None:
    """One warning for the former keywords of a call: each with the option object's field that takes it now."""
    by_owner: dict[str, list[str]] = {}
    for name, value in former.items():
        owner, field_name = _FORMER[name]
        by_owner.setdefault(owner, []).append(f"{field_name}={_shown(value)}")
    calls = ", ".join(f"{owner}={_OBJECTS[owner].__name__}({', '.join(fields)})" for owner, fields in by_owner.items())
    used = ", ".join(f"{name}={_shown(value)}" for name, value in former.items())
    warnings.warn(f"evaluate_dataset({used}) is deprecated: use {calls}", DeprecationWarning, stacklevel=4)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if isinstance(value, (int, float, str, bool, type(None))) and len(text) < 40 else "..."


@contextlib.contextmanager
def _dask_client(dask: Any) -> Iterator[Any]:
    """The Dask client of ``RunOptions.dask``: the one given, or one connected to the address given (closed after
    the run); None without Dask."""
    if dask is None or not isinstance(dask, (str, os.PathLike)):
        yield dask
        return
    try:
        from dask.distributed import Client
    except ImportError:
        raise ImportError(
            '--dask (dask=) needs dask.distributed (the dask extra): pip install "dask[distributed]", or '
            'pip install -e ".[dask]" in a checkout of ccmetrics'
        ) from None
    client = Client(os.fspath(dask))
    try:
        yield client
    finally:
        client.close()


def _evaluate(
    gt: Any, pred: Any, probabilities: Any, objects: dict[str, Any], client: Any, images: Any = None
) -> DatasetResult:
    """:func:`evaluate_dataset` once its option objects are made: the options checked, the cases found, the run."""
    options: EvalOptions = objects["options"]
    run: RunOptions = objects["run"]
    pairing: PairingOptions = objects["pairing"]
    file_ending, channel_names = None, ()
    if pairing.dataset_json is not None:  # nnU-Net's dataset.json: the classes, the ignore label, the file ending
        classes, ignore_label, file_ending, channel_names = _from_dataset_json(
            pairing.dataset_json, options.classes, options.ignore_label
        )
        options = dataclasses.replace(options, classes=classes, ignore_label=ignore_label)
    limit, budget = _memory_limits(run.max_memory if run.max_memory is not None else options.max_memory, client)
    region_based = pairing.dataset_json is not None and any(c.is_region for c in options.classes or ())
    maps = objects["maps"] if objects["maps_given"] else options.probabilities
    maps = _probability_options(probabilities, gt, pred, maps, region_based)
    options = dataclasses.replace(options, max_memory=limit, probabilities=maps).checked()
    options = with_maps_folder(options, run.out_dir)  # --write-maps: OUT_DIR/maps
    rule = DetectionRule.parse(options.rule())
    if maps is not None and rule.kind in ("centroid", "suv_max"):  # no score to match candidates: all would fail
        raise ValueError(
            f"the {rule.kind} detection rule gives no score to match the probability maps' candidates by: use iou:T "
            "(picai_eval's iou:0.1), dice:T, coverage:T or overlap with probability maps (--probabilities)"
        )
    tasks, ignored = _tasks(gt, pred, pairing.gt_suffix, pairing.pred_suffix, file_ending, maps is not None)
    if maps is not None:
        tasks, ignored = _with_maps(tasks, ignored, maps, probabilities)
    if images is not None:  # each case's PET (an error row for a case without)
        attach_scans(tasks, images, pet_channel=pairing.pet_channel, channel_names=channel_names)
    elif pairing.pet_channel is not None:
        raise ValueError("pet_channel (--pet-channel) chooses among the scans: give them too (--images; images=)")
    if run.out_dir is not None:  # before anything there is removed or written
        _check_inputs(run.out_dir, gt, pred, probabilities, pairing, options, tasks, images)
    options = options.with_segment_classes(tasks)
    if run.workers > 1 or client is not None or run.case_timeout is not None:
        _check_picklable(options)
    record = options.to_summary(pairing.gt_suffix, pairing.pred_suffix)
    if images is not None:  # where the scans were (the report draws on them), and which channel
        record["images"] = os.path.abspath(images) if isinstance(images, (str, os.PathLike)) else None
        record["pet_channel"] = pairing.pet_channel
    return _run_campaign(tasks, ignored, options, record, run, client, budget)


def _check_inputs(
    out_dir: Any,
    gt: Any,
    pred: Any,
    probabilities: Any,
    pairing: PairingOptions,
    options: EvalOptions,
    tasks: Any,
    images: Any = None,
) -> None:
    """No input lies in the output folder (:func:`~ccmetrics.campaign.output_folder.check_inputs`)."""
    given = [
        ("GT folder (GT_DIR, gt=)", gt),
        ("predictions folder (PRED_DIR, pred=)", pred),
        ("probability maps (--probabilities)", probabilities),
        ("scans (--images)", images if isinstance(images, (str, os.PathLike)) else None),
        ("dataset.json (--dataset-json)", pairing.dataset_json),
        ("reference images (--reference-images)", options.reference_images),
    ]
    if not isinstance(gt, (str, os.PathLike)):  # cases given one by one: their files
        given += [(f"file of case {t.case!r}", f) for t in tasks for f in (t.gt, t.pred, t.prob, t.image)]
    check_inputs(out_dir, given)


def _probability_options(
    probabilities: Any, gt: Any, pred: Any, maps: ProbabilityOptions | None, region_based: bool
) -> ProbabilityOptions | None:
    """The probability maps' options of :func:`evaluate_dataset` (None without maps). Predictions are given with a
    predictions folder, or when a case of the mapping or list holds one; else each segmentation is ``prob > 0.5``."""
    if probabilities is None:
        if maps is not None and (maps.candidates is not None or len(maps.thresholds)):
            raise ValueError(
                "candidates and thresholds belong to probability maps: give the maps too "
                f"({in_terms('--probabilities DIR', 'probabilities=')})"
            )
        return None
    folder = probabilities if isinstance(probabilities, (str, os.PathLike)) else None
    if isinstance(gt, (str, os.PathLike)):
        given = pred is not None
    else:
        items = gt.values() if isinstance(gt, Mapping) else ((g, p) for _, g, p in gt)
        given = any(p is not None for _, p in items)
    return (maps or ProbabilityOptions()).checked(folder, pred_given=given, region_based=region_based)


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
    run: RunOptions,
    client: Any,
    budget: float | None,
) -> DatasetResult:
    """The cases run by :func:`ccmetrics.campaign.scheduler.run_cases` under the output folder's lock, assembled
    into the tables; a stop or a failure raises with the finished cases' tables."""

    def assemble(outputs: list[CaseOutput], info: RunInfo) -> DatasetResult:
        return _assemble(outputs, options.ordered_metrics(), ignored, record, info)

    out_dir = run.out_dir
    with locked(out_dir) if out_dir is not None else contextlib.nullcontext():  # one run per folder
        if out_dir is not None:
            prepare_out_dir(out_dir, resume=run.resume, overwrite=run.overwrite, cases=[t.case for t in tasks])
            if options.maps_dir is not None:  # the outcome maps' colour tables, once (the cases write the maps)
                write_outcome_colour_tables(options.maps_dir)
        try:
            outputs, info = run_cases(
                tasks,
                options,
                evaluate=evaluate_task,
                fingerprint=lambda t: fingerprint(t, options),
                failure=lambda t, message: failed_output(t, options, message),
                estimate=lambda t: estimate_bytes(t, options),
                out_dir=out_dir,
                resume=run.resume,
                memory_budget=budget,
                meanwhile=lambda: _prefetch("pandas"),  # the tables are made with it: imported while the cases run
                workers=run.workers,
                client=client,
                progress=run.progress,
                case_timeout=run.case_timeout,
                max_memory=options.max_memory,  # the limit of one case, in bytes
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


def _from_dataset_json(dataset_json: Any, classes: Any, ignore_label: Any) -> tuple[Any, Any, str | None, Any]:
    """The classes, ignore label, file ending and channel names of an nnU-Net ``dataset.json`` (not with
    ``classes``)."""
    if classes is not None or ignore_label is not None:
        raise ValueError(
            "dataset_json (--dataset-json) sets the classes and the ignore label: leave classes and ignore_label out"
        )
    spec = dataset_json if isinstance(dataset_json, DatasetJson) else read_dataset_json(dataset_json)
    return spec.classes, spec.ignore_label, spec.file_ending, spec.channel_names


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
                "give the predictions folder too "
                f"({in_terms('ccmetrics evaluate GT_DIR PRED_DIR', 'evaluate_dataset(gt_dir, pred_dir)')}), or the "
                f"probability maps ({in_terms('--probabilities DIR', 'probabilities=folder')})"
            )
        return pair_folders(gt, pred, gt_suffix=gt_suffix, pred_suffix=pred_suffix, file_ending=file_ending)
    if pred is not None:
        raise ValueError("with cases given as a mapping or list, leave pred=None")
    return tasks_from_pairs(gt), []


def _memory_limits(max_memory: float | str | None, client: Any) -> tuple[float | None, float | None]:
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
    outputs: list[CaseOutput],
    ordered: list[registry.Metric],
    ignored: list[str],
    record: dict[str, Any],
    run: RunInfo,
) -> DatasetResult:
    """The tidy tables from the cases' outputs (encoded, as their records hold them: each table decoded once for
    the whole data set), sorted so that they do not depend on completion order."""
    names = [m.name for m in ordered if m.per_region]
    outputs = sorted(outputs, key=lambda o: o.rows[0][CASE])
    per_case = pd.DataFrame([row for o in outputs for row in o.rows])
    if len(per_case):
        per_case = per_case.sort_values(list(schema.PER_CASE.key), kind="stable").reset_index(drop=True)
        front = [c for c in schema.PER_CASE_FRONT if c in per_case.columns]
        per_case = per_case[front + [c for c in per_case.columns if c not in front]]
    if schema.EMPTY_GT not in per_case:  # every case failed (or none finished): the columns of an evaluated case
        wanted = registry.table_columns(schema.PER_CASE, ordered)
        if schema.CLASS_NAME in per_case and schema.CLASS_NAME not in wanted:  # the classes' names stay
            wanted.insert(wanted.index(CLASS) + 1, schema.CLASS_NAME)
        for name in (schema.OUTCOME_MAP_FILE, schema.IMAGE_FILE, schema.PROB_FILE):  # they say which file failed
            if name in per_case and name not in wanted:
                wanted.insert(wanted.index(schema.PRED_FILE) + 1, name)
        per_case = per_case.reindex(columns=wanted)
    per_component = _tidy(outputs, "components", schema.PER_COMPONENT, names)
    with_predictions = any(m.name in ("detection", "pet") for m in ordered)  # pet: each component's uptake
    per_prediction = _tidy(outputs, "predictions", schema.PER_PREDICTION) if with_predictions else None
    per_candidate = _tidy(outputs, "candidates", schema.PER_CANDIDATE) if "probabilities" in record else None
    with_thresholds = record.get("probabilities", {}).get("thresholds")
    thresholds = _tidy(outputs, "thresholds", schema.THRESHOLDS) if with_thresholds else None
    timings = pd.DataFrame([o.timing for o in outputs])
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
    outputs: list[CaseOutput], key: str, table: schema.TableSchema, metric_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """One tidy table from the cases' outputs (``key``: their encoded tables), sorted by the table's key; its text
    columns in pandas' text dtype in every run; without rows, the table's empty form."""
    text = [f.name for f in (*table.fields, *table.tail) if f.text]
    found = decode_tables((getattr(o, key) for o in outputs), text=text)
    frame = found if found is not None else table.empty(metric_columns)
    return frame.sort_values(list(table.key), kind="stable").reset_index(drop=True)


def _check_picklable(options: EvalOptions) -> None:
    """Worker processes get the options pickled: a metric they cannot import is an error now, not a crash later."""
    for record in options.metric_definitions:
        try:
            pickle.dumps(record)
        except Exception as exc:  # pickling raises several types (PicklingError, AttributeError, TypeError)
            raise ValueError(
                f"metric {record.name!r} cannot be sent to worker processes ({exc}): define its function "
                f"at the top level of a module (not a lambda or a nested function), or use workers=1"
            ) from None
