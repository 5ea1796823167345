"""``ccmetrics evaluate GT_DIR PRED_DIR --out-dir OUT_DIR``: :func:`ccmetrics.evaluate_dataset` under the output
folder's lock, then the summary, the tables and plots as one set, and the report (:func:`run`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from .._escaping import printable
from ._common import (
    EXIT_CASE_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    _classes_arg,
    _name_list,
    _say,
    _signals_ignored,
    _spacing_arg,
    _stop_code,
)
from ._former import add_former, take_former
from ._stop import _command, _failed, _interrupted, _listed, _say_removed, _say_stopped
from ._text import (
    _calibration_report,
    _curves_report,
    _group_report,
    _quantification_report,
    _size_report,
    _suv_report,
    _threshold_report,
    counted,
    report,
)


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``evaluate`` sub-command and its options, in the order ``--help`` lists them."""
    ev = sub.add_parser(
        "evaluate",
        help="evaluate a folder of predictions against a folder of GT images",
        description="Pair GT and prediction files by case id, evaluate every case, write tables, summary and plots.",
    )
    ev.set_defaults(parser=ev)  # its options, to write the command that resumes a run in full
    ev.add_argument(
        "gt_dir", help="folder of GT images (.nii.gz, .nii, .mha, .mhd, .nrrd, DICOM SEG .dcm or a folder per case)"
    )
    ev.add_argument(
        "pred_dir",
        nargs="?",
        default=None,
        help="folder of predictions, same case ids (optional with --probabilities: then the segmentation is "
        "prob > 0.5)",
    )
    add_former(
        ev,
        "--out-dir",
        "--out",
        dest="out",
        metavar="OUT_DIR",
        required=True,
        help="output folder (created; each finished case is recorded in OUT_DIR/cases/ at once). A non-empty "
        "folder needs --resume or --overwrite",
    )
    ev.add_argument(
        "--resume",
        action="store_true",
        help="continue the run recorded in --out-dir: evaluate only the cases that are missing, changed (files or "
        "options) or failed by a crash/time-out/memory limit; the tables equal an uninterrupted run's",
    )
    ev.add_argument("--overwrite", action="store_true", help="replace the results already in --out-dir")
    ev.add_argument(
        "--case-timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds a case may take; a case still running then is stopped and gets an error row (runs the "
        "cases in worker processes; not with --dask)",
    )
    ev.add_argument(
        "--max-memory",
        default=None,
        metavar="SIZE",
        help="largest estimated peak memory of one case, e.g. 16G (default: 80%% of the available memory, shared "
        "by the workers: a larger case runs with fewer beside it); a case over it, judged from its headers "
        "before reading, gets an error row",
    )
    _what_options(ev)
    _how_options(ev)
    _probability_options(ev)
    _scan_options(ev)
    _where_options(ev)
    return ev


def _scan_options(ev: argparse.ArgumentParser) -> None:
    """The PET scans: read by the pet metrics and the suv_max detection rule."""
    ev.add_argument(
        "--images",
        default=None,
        metavar="DIR",
        help="the PET scans, for --metrics ...,pet and --detection-rule suv_max: nnU-Net's CASE_0000.nii.gz, "
        "CASE_0001.nii.gz, ... (e.g. CT _0000, PET _0001) or one CASE.nii.gz per case, on the GT's grid; values "
        "taken as SUV (body weight)",
    )
    ev.add_argument(
        "--pet-channel",
        type=int,
        default=None,
        metavar="K",
        help="the PET's channel in --images (1 for CASE_0001; default: the one --dataset-json's channel_names calls "
        "PET, else the only one)",
    )


def _probability_options(ev: argparse.ArgumentParser) -> None:
    """Probability maps: candidates, their confidence and matching (lesion-level FROC, AP, AUROC)."""
    ev.add_argument(
        "--probabilities",
        default=None,
        metavar="DIR",
        help="the model's probability maps, one per case named like the GT: a float image in [0, 1] on the GT's "
        "grid, or nnU-Net's CASE.npz (--save_probabilities); adds per_candidate.csv, the detection curves (AP, "
        "AUROC, FROC, CPM) and their plots; with --classes (labels), class c's map is channel c",
    )
    ev.add_argument(
        "--candidates",
        default=None,
        metavar="METHOD",
        help="lesion candidates of each map: components (of prob > 0; default without PRED_DIR), threshold:T, "
        "dynamic (report_guided_annotation's), prediction (PRED_DIR's components; default with PRED_DIR)",
    )
    ev.add_argument(
        "--confidence",
        choices=("max", "mean"),
        default="max",
        help="a prediction component's confidence: the map's maximum (default) or mean inside it",
    )
    ev.add_argument(
        "--match-by",
        choices=("overlap", "confidence"),
        default="overlap",
        help="one-to-one matching of candidates to lesions maximizes matches plus summed overlap (default, "
        "picai_eval's) or plus summed confidence (the most confident passing candidate is the true positive)",
    )
    add_former(
        ev,
        "--prob-channel",
        "--channel",
        dest="prob_channel",
        type=int,
        default=None,
        metavar="C",
        help="the channel of a multi-channel probability map such as nnU-Net's .npz (default: channel 1 of two)",
    )
    ev.add_argument(
        "--thresholds",
        default=None,
        metavar="T",
        help="also evaluate the metrics of prob >= t at each threshold, START:STOP:STEP (e.g. 0.1:0.9:0.1) or a "
        "comma list: thresholds.csv, the best threshold by each global and CC score, plots/thresholds.png",
    )


def _what_options(ev: argparse.ArgumentParser) -> None:
    """What to evaluate and report: metrics, plug-ins, classes, sizes, subgroups, nnU-Net's summary."""
    from ..metrics import registry

    ev.add_argument(
        "--metrics",
        type=_name_list,
        default=list(registry.DEFAULT_METRICS),
        help=f"comma-separated: {','.join(registry.names())} (default {','.join(registry.DEFAULT_METRICS)}; "
        f"--plugin adds metrics of your own)",
    )
    ev.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="import a Python module (e.g. mylab.metrics) or a .py file before evaluating, to register "
        "metrics of your own with ccmetrics.register_metric (repeatable)",
    )
    ev.add_argument(
        "--classes",
        type=_classes_arg,
        default=None,
        help="labels or regions to evaluate one by one in label maps, e.g. 1,2 or 'wt=1+2+3,tc=2+3,et=3' "
        "(named; a region is the union of its labels) (default: binary masks)",
    )
    ev.add_argument(
        "--ignore-label",
        type=int,
        default=None,
        metavar="LABEL",
        help="GT voxels of this label are set to background in both masks first (nnU-Net's ignore label)",
    )
    ev.add_argument(
        "--dataset-json",
        default=None,
        metavar="FILE",
        help="an nnU-Net v2 dataset.json: its labels and regions are the classes (named by their keys), its "
        "'ignore' label is ignored, only files with its file_ending are paired",
    )
    ev.add_argument(
        "--size-bins",
        default=None,
        metavar="ML",
        help="inner edges of the lesion-size bins in ml, e.g. 0.1,1,10 (the default): detection rate, CC-Dice, "
        "lesion and false-positive counts per bin, printed and in summary.json's by_size",
    )
    ev.add_argument(
        "--suv-bins",
        default=None,
        metavar="SUV",
        help="with --metrics ...,pet: inner edges of the lesions' SUVmax bins, e.g. 2.5,4,10 (the default): detection "
        "rate, CC-Dice, lesion and false-positive counts per bin, printed and in summary.json's by_suv",
    )
    ev.add_argument(
        "--metadata",
        default=None,
        metavar="TABLE.csv",
        help="a table with one row per case (a 'case' column, or the first column) for --group-by",
    )
    ev.add_argument(
        "--group-by",
        default=None,
        metavar="COLUMN[,COLUMN]",
        help="summarise each group of cases of the --metadata table too (e.g. scanner or site,sex); cases "
        "missing from the table form the group '(not in metadata)'",
    )
    ev.add_argument(
        "--nnunet-summary",
        action="store_true",
        help="also write OUT_DIR/nnunet_summary.json in nnU-Net's structure (Dice, IoU, TP/FP/FN/TN per "
        "label or region), with the CC and lesion-wise scores added",
    )
    ev.add_argument(
        "--write-maps",
        action="store_true",
        help="also write each case's outcome map into OUT_DIR/maps/ (NIfTI on the GT's grid; a DICOM SEG where the "
        "GT is a DICOM SEG and --reference-images holds its series): 1 found lesion, 2 missed lesion, 3 true-positive "
        "prediction outside the GT, 4 false positive; colour tables for ITK-SNAP (outcome_labels.txt) and 3D Slicer "
        "(outcome_labels.ctbl); per_case.csv names each case's map (outcome_map_file)",
    )


def _how_options(ev: argparse.ArgumentParser) -> None:
    """How the cases are paired, read and compared: spacing, tolerances, connectivity, the detection rule."""
    ev.add_argument(
        "--spacing",
        type=_spacing_arg,
        default="header",
        help="'header' (default: mm from each GT file), 'voxel' (index units), or numbers for all cases",
    )
    ev.add_argument(
        "--nsd-tolerance",
        type=float,
        default=1.0,
        metavar="LENGTH",
        help="NSD tolerance, in the units of the spacing: mm, or voxels with --spacing voxel (default 1.0)",
    )
    ev.add_argument(
        "--worst-distance",
        type=float,
        default=None,
        metavar="LENGTH",
        help="distance counted for a missed lesion in means, in the units of the spacing (mm, or voxels with "
        "--spacing voxel; default: each image's diagonal)",
    )
    ev.add_argument("--connectivity", type=int, default=None, help="GT component connectivity (default 26 / 8 in 2D)")
    ev.add_argument(
        "--detection-rule",
        default=None,
        metavar="RULE",
        help="what counts as a detected lesion: overlap (default: any overlap; iou:0.1 with --probabilities, as "
        "picai_eval), iou:T, dice:T, coverage:T (T in (0, 1], e.g. iou:0.1) or centroid; the detection metric, the "
        "'detected' column and the matching of candidates follow it (suv_max, by the lesion's hottest voxel, reads "
        "the PET scans: --images)",
    )
    ev.add_argument(
        "--reference-images",
        default=None,
        metavar="DIR",
        help="DICOM image series (searched recursively): the grid on which two DICOM SEGs without their empty "
        "frames are placed (default: the span of their frames, and the case is flagged extent_inferred)",
    )
    ev.add_argument("--gt-suffix", default=None, help="regex removed from GT file names to form case ids, e.g. _gt")
    ev.add_argument(
        "--pred-suffix",
        default=None,
        help="regex removed from prediction file names to form case ids, e.g. _pred or _0000",
    )
    ev.add_argument(
        "--tolerance-mm",
        type=float,
        default=1e-3,
        metavar="MM",
        help="largest accepted GT/prediction difference of the origin, in mm (default 0.001; spacings "
        "must agree to a relative 1e-4)",
    )


def _where_options(ev: argparse.ArgumentParser) -> None:
    """Where and how the run goes: workers, Dask, the bootstrap, plots, progress."""
    ev.add_argument("--workers", type=int, default=1, help="worker processes on this machine (default 1)")
    ev.add_argument(
        "--dask",
        default=None,
        metavar="ADDRESS",
        help="run on a Dask cluster, e.g. tcp://scheduler:8786 (files must be readable by the workers)",
    )
    add_former(
        ev,
        "--n-resamples",
        "--bootstrap",
        dest="n_resamples",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap resamples (default 2000)",
    )
    ev.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    ev.add_argument("--no-plots", action="store_true", help="write no figures")
    ev.add_argument(
        "--quiet",
        action="store_true",
        help="for logs and scripts: no progress bar, no tables or routine notes; errors (and faults such as a "
        "worker that died) on stderr, and one closing line",
    )


def run(args: argparse.Namespace) -> int:
    """``ccmetrics evaluate``: every message in the command line's terms (:func:`ccmetrics._words.command_line`)."""
    from .._words import command_line

    with command_line():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from .._interrupts import raise_if_stopped
    from ..campaign.dataset import evaluate_dataset
    from ..campaign.output_folder import locked
    from ..campaign.scheduler import EvaluationFailed, EvaluationInterrupted
    from ..metrics.registry import load_plugin

    take_former(args, "evaluate")  # the notes of former spellings (none with --quiet)
    for plugin in args.plugin:  # they register their metrics before the names are looked up
        load_plugin(plugin)
    try:
        args.metrics = _metric_names(args.metrics, args.quiet)
    except ValueError as exc:
        _say(f"ccmetrics evaluate: error: {exc}")
        return EXIT_USAGE
    from ..campaign.scans import check_scans_wanted

    check_scans_wanted(args.metrics, args.detection_rule, args.images)  # before --out is made or locked

    meta, by = None, []
    if (args.metadata is None) != (args.group_by is None):
        _say("ccmetrics evaluate: error: --metadata and --group-by go together")
        return EXIT_USAGE
    if args.metadata is not None:  # checked before a case is evaluated
        from ..analysis.subgroups import case_groups, read_metadata

        try:
            meta, by = read_metadata(args.metadata), _name_list(args.group_by)
            case_groups(meta, by, [])
        except (OSError, ValueError) as exc:
            _say(f"ccmetrics evaluate: error: {exc}")
            return EXIT_USAGE
    from ..campaign.output_folder import check_inputs

    inputs = [
        ("GT folder (GT_DIR)", args.gt_dir),
        ("predictions folder (PRED_DIR)", args.pred_dir),
        ("probability maps (--probabilities)", args.probabilities),
        ("scans (--images)", args.images),
        ("metadata table (--metadata)", args.metadata),
        ("dataset.json (--dataset-json)", args.dataset_json),
        ("reference images (--reference-images)", args.reference_images),
    ]
    from ..analysis.sizes import parse_size_bins, parse_suv_bins

    try:  # a typo in the bins stops the run before a case is evaluated
        for given, parse in ((args.size_bins, parse_size_bins), (args.suv_bins, parse_suv_bins)):
            if given is not None:
                parse(given)
    except ValueError as exc:
        _say(f"ccmetrics evaluate: error: {exc}")
        return EXIT_USAGE
    check_inputs(args.out, inputs)  # before --out is locked (or created); evaluate_dataset checks them too
    if not args.quiet:
        _say_folders(args)
    refused = _check_cases(args)  # the folders' files before any case: their names, the spacing given
    if refused:
        _say(f"ccmetrics evaluate: error: {refused}")
        return EXIT_USAGE
    start = time.perf_counter()
    from ..analysis.plots import drawing_ahead

    # the figures' helper process warms matplotlib up on whatever core the cases leave idle; forked before the lock
    with drawing_ahead(enabled=not args.no_plots), locked(args.out, command=_command(args)):
        try:
            result = evaluate_dataset(
                args.gt_dir, args.pred_dir, probabilities=args.probabilities, images=args.images, **_options(args)
            )
        except EvaluationInterrupted as stop:
            return _interrupted(stop, args, time.perf_counter() - start)
        except EvaluationFailed as failed:
            return _failed(args, failed, failed.result)
        try:
            raise_if_stopped()  # a stop whose exception was swallowed during the cases
            return _finish(args, result, time.perf_counter() - start, meta, by)
        except KeyboardInterrupt:  # after the last case: every case is kept, the tables are not all written
            with _signals_ignored():
                _say_stopped(args, "Stopped while writing the tables", result.counts()["cases"], 0)
            return _stop_code()


def _metric_names(given: list[str], quiet: bool) -> list[str]:
    """The metrics of ``--metrics``, each a registered metric's name: a table's column (``cc_dice``, ``sensitivity``)
    is taken as the metric that produces it, with a note (none with ``--quiet``); an unknown name is an error that
    lists the metrics and suggests the nearest name (``nds``: ``nsd``), in the command line's terms."""
    import difflib

    from .. import schema
    from ..metrics import registry

    metrics = registry.metrics()
    by_column: dict[str, str] = {m.name.lower(): m.name for m in metrics}
    for m in metrics:
        for column in (m.name, schema.cc(m.name)) if m.per_region else m.column_names:
            by_column.setdefault(column.lower(), m.name)
    chosen: list[str] = []
    for name in given:
        metric = by_column.get(name.lower())
        if metric is None:
            near = difflib.get_close_matches(name.lower(), [m.name for m in metrics], n=1, cutoff=0.6)
            guess = f" (did you mean --metrics {near[0]}?)" if near else ""
            near = [] if near else difflib.get_close_matches(name.lower(), list(by_column), n=1, cutoff=0.8)
            if near:  # a table's column, spelled nearly: the metric that gives it
                guess = f" (did you mean {near[0]}, a column of --metrics {by_column[near[0]]}?)"
            raise ValueError(
                f"unknown metric {name!r}{guess}; --metrics takes {','.join(m.name for m in metrics)} (a metric "
                "gives its columns, e.g. dice gives dice and cc_dice; --plugin MODULE_OR_FILE adds metrics of your own)"
            )
        if metric.lower() != name.lower() and not quiet:
            columns = (metric, schema.cc(metric)) if registry.get(metric).per_region else ()
            shown = f" (its columns: {', '.join(columns)})" if columns else ""
            _say(f"ccmetrics: note: {name} is a column of the metric {metric}: evaluating --metrics {metric}{shown}")
        if metric not in chosen:
            chosen.append(metric)
    return chosen


def _check_cases(args: argparse.Namespace) -> str:
    """What stops the run before any case, found from the folders' listings and one header (no image read): no
    prediction that pairs with a GT (with the suffix that would pair them), or a ``--spacing`` with another number
    of values than the images have dimensions. A suffix that pairs only some files is a note (stderr) and the run
    goes on. Returns the error, or ``""``."""
    from ..campaign.pairing import pair_folders, suffix_hint

    first_gt = None
    if args.pred_dir is not None:
        file_ending = None
        if args.dataset_json is not None:
            from ..formats.nnunet import read_dataset_json

            file_ending = read_dataset_json(args.dataset_json).file_ending
        tasks, _ = pair_folders(
            args.gt_dir, args.pred_dir, gt_suffix=args.gt_suffix, pred_suffix=args.pred_suffix, file_ending=file_ending
        )
        hint = suffix_hint(tasks)
        paired = [t for t in tasks if t.gt is not None and t.pred is not None]
        if not paired and any(t.pred is not None for t in tasks):
            found = (
                f": {hint.sentence()}"
                if hint is not None
                else (
                    " (rename the files, or give --gt-suffix/--pred-suffix: regular expressions removed from the "
                    "end of the names)"
                )
            )
            return f"no prediction in {args.pred_dir} has the case id of a GT file in {args.gt_dir}{found}"
        if hint is not None:
            _say(
                f"ccmetrics: note: {hint.sentence()}; without it those GT cases are evaluated as missing "
                "predictions and the unpaired files are error rows"
            )
        first_gt = next((t.gt for t in tasks if t.gt is not None), None)
    if isinstance(args.spacing, tuple):
        return _spacing_problem(args, first_gt)
    return ""


def _spacing_problem(args: argparse.Namespace, first_gt) -> str:
    """``--spacing`` numbers against the dimensions of the first GT image (its header only); ``""`` when they agree
    or the header cannot be read (the case's own error row then says why)."""
    from ..formats.io import is_image_file, read_header

    if first_gt is None and Path(args.gt_dir).is_dir():  # a missing folder: evaluate_dataset names it
        first_gt = next(
            (p for p in sorted(Path(args.gt_dir).iterdir()) if is_image_file(p) and not p.name.startswith(".")), None
        )
    if first_gt is None:
        return ""
    try:
        ndim = len(read_header(first_gt).shape)
    except (OSError, ValueError):
        return ""
    if len(args.spacing) == ndim:
        return ""
    given = ",".join(f"{v:g}" for v in args.spacing)
    example = ",".join([f"{args.spacing[0]:g}"] * ndim)
    return (
        f"--spacing {given} has {len(args.spacing)} values but the images are {ndim}D ({Path(first_gt).name}): give "
        f"{ndim}, e.g. --spacing {example}, or leave --spacing out to take each file's own (header)"
    )


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The option objects of :func:`~ccmetrics.campaign.dataset.evaluate_dataset`, built from the command line's
    options as Python builds them (the objects check their values there)."""
    from ..campaign.options import EvalOptions, PairingOptions, RunOptions
    from ..campaign.probabilities import ProbabilityOptions

    return {
        "options": EvalOptions(
            metrics=args.metrics,
            classes=args.classes,
            spacing=args.spacing,
            nsd_tolerance=args.nsd_tolerance,
            worst_distance=args.worst_distance,
            connectivity=args.connectivity,
            detection_rule=args.detection_rule,
            ignore_label=args.ignore_label,
            nnunet_summary=args.nnunet_summary,
            write_maps=args.write_maps,
            reference_images=args.reference_images,
            tolerance_mm=args.tolerance_mm,
        ),
        "maps": ProbabilityOptions(
            candidates=args.candidates,
            confidence=args.confidence,
            match_by=args.match_by,
            prob_channel=args.prob_channel,
            thresholds=args.thresholds,
        ),
        "run": RunOptions(
            workers=args.workers,
            dask=args.dask,
            progress=not args.quiet,
            out_dir=args.out,
            resume=args.resume,
            overwrite=args.overwrite,
            case_timeout=args.case_timeout,
            max_memory=args.max_memory,
        ),
        "pairing": PairingOptions(
            gt_suffix=args.gt_suffix,
            pred_suffix=args.pred_suffix,
            dataset_json=args.dataset_json,
            pet_channel=args.pet_channel,
        ),
    }


def _finish(args: argparse.Namespace, result, seconds: float, meta, by: list[str]) -> int:
    """The final phase of ``evaluate``: summary, tables and plots (one set: see ``DatasetResult.write``), the report."""
    from .._interrupts import raise_if_stopped

    summary = result.summary(n_resamples=args.n_resamples, seed=args.seed)  # once: written and printed
    curves = result.detection_curves(n_resamples=args.n_resamples, seed=args.seed)
    calibration = result.calibration(n_resamples=args.n_resamples, seed=args.seed)
    quantification = result.quantification(n_resamples=args.n_resamples, seed=args.seed)
    groups = None
    if meta is not None:
        from .. import schema
        from ..analysis.subgroups import case_groups

        table = result.group_summary(meta, by, n_resamples=args.n_resamples, seed=args.seed)
        groups = (by, table, case_groups(meta, by, result.per_case[schema.CASE].astype(str).unique().tolist()))
    size_bins = None
    if args.size_bins is not None:
        from ..analysis.sizes import parse_size_bins

        size_bins = parse_size_bins(args.size_bins)
    suv_bins = None
    if args.suv_bins is not None:
        from ..analysis.sizes import parse_suv_bins

        suv_bins = parse_suv_bins(args.suv_bins)
    raise_if_stopped()
    try:
        written = result.write(
            args.out,
            plots=not args.no_plots,
            summary=summary,
            size_bins=size_bins,
            suv_bins=suv_bins,
            groups=groups,
            curves=curves,
            calibration=calibration,
            quantification=quantification,
            overwrite=True,  # the folder's rule was applied before the cases: empty, --resume or --overwrite
        )
    except OSError as exc:  # a full disk, no permission: OutputWriteError names the path
        return _failed(args, exc, result)
    _say_swap_signs(args, result)
    try:  # the tables are whole now: a stop while the report is printed says so
        raise_if_stopped()
        if args.quiet:
            return _closing_line(result, seconds, written)
        print(report(result, seconds, summary=summary))
        if curves:
            print(_curves_report(curves, result.class_names))
            print(_calibration_report(calibration))
        if result.thresholds is not None:
            print(_threshold_report(*result.threshold_summary()))
        if len(quantification):
            print(_quantification_report(quantification, result.class_names))
        if groups is not None:
            print(_group_report(groups[0], groups[1]))
        if size_bins is not None:
            print(_size_report(result, size_bins))
        if suv_bins is not None:
            print(_suv_report(result, suv_bins))
        names = ("per_component", "per_prediction", "per_candidate", "thresholds", "per_case", "nnunet_summary")
        tables = [written[n] for n in names if n in written]
        print(
            f"\nWrote {', '.join(map(str, tables))}, {written['summary']}"
            + (f" and {len(written['plots'])} plots in {Path(args.out) / 'plots'}" if written["plots"] else "")
        )
        if result.options.get("write_maps"):
            maps = Path(args.out) / "maps"
            print(
                f"Outcome maps in {maps} (colours: outcome_labels.txt for ITK-SNAP, outcome_labels.ctbl for 3D Slicer)"
            )
        _say_removed(written["removed"])
    except KeyboardInterrupt:
        with _signals_ignored():
            _say(f"\nStopped after the tables were written: {args.out} holds the whole result.")
        return _stop_code()
    return _exit_code(result.counts())


def _exit_code(counts: dict[str, int]) -> int:
    """The exit code of a finished ``evaluate``, with or without ``--quiet``: a failed case makes it
    ``EXIT_CASE_FAILED``; ``counts``: ``DatasetResult.counts()``."""
    return EXIT_CASE_FAILED if counts["failed"] else EXIT_OK


def _say_folders(args: argparse.Namespace) -> None:
    """Which folder the run takes as the ground truth and which as the predictions (stderr)."""
    if args.pred_dir is not None:
        predictions = f"predictions from {args.pred_dir}"
    else:
        predictions = f"predictions: prob > 0.5 of the maps in {args.probabilities}"
    scans = ""
    if args.images is not None:
        channel = f"channel {args.pet_channel:04d}" if args.pet_channel is not None else "the PET channel"
        scans = f"; PET scans ({channel}) from {args.images}, values taken as SUV (body weight)"
    _say(f"ccmetrics: ground truth (GT) from {args.gt_dir}; {predictions}{scans}")


def _say_swap_signs(args: argparse.Namespace, result) -> None:
    """A note (stderr, also with --quiet) when the GT and prediction folders look swapped."""
    from ..analysis.swap import swap_signs

    if args.pred_dir is None:
        return
    signs = swap_signs(result)
    if signs:
        _say(
            "ccmetrics: note: GT_DIR and PRED_DIR may be swapped (the GT folder comes first: "
            "ccmetrics evaluate GT_DIR PRED_DIR): " + "; ".join(signs)
        )


def _closing_line(result, seconds: float, written: dict) -> int:
    """``--quiet``: each failed case's error on stderr, then one line on stdout (the counts and where the
    results are); the exit code as without ``--quiet``."""
    from .. import schema

    table = result.per_case
    for row in table[table[schema.STATUS] == schema.FAILED].drop_duplicates(schema.CASE).itertuples():
        _say(f"ccmetrics evaluate: {printable(row.case)} failed: {printable(row.error)}")  # each on one line
    n = result.counts()
    print(
        f"{counted(n, seconds)}; results in {written['summary'].parent}"
        + (f"; removed {_listed(written['removed'])} (of an earlier run)" if written["removed"] else "")
    )
    return _exit_code(n)
