"""The ``ccmetrics`` command line: a thin layer over the Python API.

Sub-commands:

* ``ccmetrics evaluate GT_DIR PRED_DIR --out OUT_DIR`` → :func:`ccmetrics.evaluate_dataset`,
  writes ``per_component.csv``, ``per_case.csv``, ``summary.json`` and ``plots/``;
* ``ccmetrics partition GT_FILE OUT_FILE`` → :func:`ccmetrics.voronoi_partition`, written
  with the GT's geometry;
* ``ccmetrics compare RESULT_DIR_A RESULT_DIR_B ... --metric cc_dice`` →
  :func:`ccmetrics.stats.compare` on the folders' ``per_case.csv``;
* ``ccmetrics report RESULT_DIR --out report.html [--images IMAGE_DIR]`` →
  :func:`ccmetrics.report.write_report`, one self-contained HTML page with every lesion and false
  positive (with ``--images``: its thumbnails drawn on the scans).

Exit codes: 0 success; 1 when a case failed (its error row says why);
2 for a usage error or input that cannot be evaluated at all (a missing
folder, an unknown metric, an output folder another run writes into);
3 when ``evaluate`` could not go on (a full disk, a folder that became
read-only: the message names the path) — the finished cases are kept,
``--resume`` continues once the cause is fixed; 130 when ``evaluate`` was
stopped with Ctrl-C (143: SIGTERM), at any moment, the writing of the tables
included — the finished cases are kept, ``--resume`` continues.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "EXIT_CASE_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "build_parser",
    "main",
    "report",
]

EXIT_OK, EXIT_CASE_FAILED, EXIT_USAGE = 0, 1, 2
#: exit code of an ``evaluate`` that could not go on (a full disk, ...): finished cases kept, ``--resume`` continues
EXIT_RUN_FAILED = 3
#: exit codes of a stopped ``evaluate``: 128 + the signal's number, as shells report it
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


def _classes_arg(text: str):
    from .classes import parse_classes

    try:
        return parse_classes(text)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{exc} (e.g. 1,2 or 'wt=1+2+3,tc=2+3,et=3')") from None


def _name_list(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _spacing_arg(text: str):
    if text in ("header", "voxel"):
        return text
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--spacing takes 'header', 'voxel' or numbers like 0.8,0.8,3, got {text!r}"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    """The ``ccmetrics`` command's argument parser (its sub-commands and every option, as ``--help`` shows them)."""
    from . import registry

    parser = argparse.ArgumentParser(prog="ccmetrics", description="Segmentation metrics per connected component.")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser(
        "evaluate",
        help="evaluate a folder of predictions against a folder of GT images",
        description="Pair GT and prediction files by case id, evaluate every case, write tables, summary and plots.",
    )
    ev.set_defaults(parser=ev)  # its options, to write the command that resumes a run in full
    ev.add_argument(
        "gt_dir", help="folder of GT images (.nii.gz, .nii, .mha, .mhd, .nrrd, DICOM SEG .dcm or a folder per case)"
    )
    ev.add_argument("pred_dir", help="folder of predictions, same case ids")
    ev.add_argument(
        "--out",
        required=True,
        help="output folder (created; each finished case is recorded in OUT/cases/ at once). A non-empty "
        "folder needs --resume or --overwrite",
    )
    ev.add_argument(
        "--resume",
        action="store_true",
        help="continue the run recorded in --out: evaluate only the cases that are missing, changed (files or "
        "options) or failed by a crash/time-out/memory limit; the tables equal an uninterrupted run's",
    )
    ev.add_argument("--overwrite", action="store_true", help="replace the results already in --out")
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
        "--spacing",
        type=_spacing_arg,
        default="header",
        help="'header' (default: mm from each GT file), 'voxel' (index units), or numbers for all cases",
    )
    ev.add_argument("--nsd-tolerance", type=float, default=1.0, metavar="MM", help="NSD tolerance (default 1.0)")
    ev.add_argument(
        "--worst-distance",
        type=float,
        default=None,
        metavar="MM",
        help="distance counted for a missed lesion in means (default: each image's diagonal)",
    )
    ev.add_argument("--connectivity", type=int, default=None, help="GT component connectivity (default 26 / 8 in 2D)")
    ev.add_argument(
        "--detection-rule",
        default="overlap",
        metavar="RULE",
        help="what counts as a detected lesion: overlap (default: any overlap), iou:T, dice:T, coverage:T "
        "(T in (0, 1], e.g. iou:0.1) or centroid; the detection metric and the 'detected' column follow it",
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
    ev.add_argument("--workers", type=int, default=1, help="worker processes on this machine (default 1)")
    ev.add_argument(
        "--dask",
        default=None,
        metavar="ADDRESS",
        help="run on a Dask cluster, e.g. tcp://scheduler:8786 (files must be readable by the workers)",
    )
    ev.add_argument("--bootstrap", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    ev.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    ev.add_argument("--no-plots", action="store_true", help="write no figures")
    ev.add_argument("--quiet", action="store_true", help="no progress bar (for logs); notes and errors still shown")

    pa = sub.add_parser(
        "partition",
        help="write the Voronoi regions of a GT image",
        description="Label every voxel with its nearest GT component (exact ties: lowest label) "
        "and write the map with the GT's geometry.",
    )
    pa.add_argument("gt_file")
    pa.add_argument("out_file")
    pa.add_argument(
        "--spacing",
        choices=("header", "voxel"),
        default="header",
        help="physical distances from the header (default) or index units",
    )
    pa.add_argument(
        "--class",
        dest="class_value",
        type=int,
        default=None,
        help="use the voxels of this label of a label map as the GT mask",
    )
    pa.add_argument(
        "--sites",
        choices=("components", "labels"),
        default="components",
        help="sites: connected components (default) or the labels of an instance map",
    )
    pa.add_argument("--connectivity", type=int, default=None)

    co = sub.add_parser(
        "compare",
        help="compare methods evaluated with `ccmetrics evaluate`",
        description="Paired per-case table, Friedman test with Nemenyi post-hoc tests (Wilcoxon "
        "for two methods), mean ranks and a figure.",
    )
    co.add_argument("result_dirs", nargs="+", help="output folders of `ccmetrics evaluate`, one per method")
    co.add_argument("--metric", default="cc_dice", help="per-case column to compare (default cc_dice)")
    co.add_argument("--class", dest="class_value", type=int, default=None, help="class to compare (multi-class)")
    co.add_argument("--names", type=_name_list, default=None, help="method names (default: folder names)")
    co.add_argument("--out", default=None, help="folder for comparison.csv and comparison.png (default: none)")

    re_ = sub.add_parser(
        "report",
        help="write a per-lesion HTML report of a `ccmetrics evaluate` folder",
        description="One self-contained HTML page: the summary, the cases ranked by standard - CC "
        "difference, every lesion and false positive with thumbnails, sortable and "
        "filterable tables. Opens from disk, needs no server or network.",
    )
    re_.add_argument("result_dir", help="output folder of `ccmetrics evaluate`")
    re_.add_argument("--out", default=None, help="HTML file to write (default: RESULT_DIR/report.html)")
    re_.add_argument(
        "--max-cases",
        type=int,
        default=20,
        metavar="N",
        help="draw thumbnails for the N cases with the worst CC score (default 20; every case and "
        "lesion is listed in the tables whatever N)",
    )
    re_.add_argument(
        "--image-root",
        default=None,
        metavar="DIR",
        help="folder the relative GT and prediction paths of per_case.csv start from (default: the "
        "current folder, then the result folder and its parent)",
    )
    re_.add_argument("--title", default=None, help="page title")
    re_.add_argument(
        "--images",
        default=None,
        metavar="IMAGE_DIR",
        help="draw the thumbnails on the scans of this folder: CASE_0000.nii.gz, CASE_0001.nii.gz, ... "
        "(nnU-Net's naming, one row per channel, e.g. CT and PET) or CASE.nii.gz; a case whose scan is "
        "missing or lies on another voxel grid than its GT is drawn on the empty background, with a note",
    )
    re_.add_argument(
        "--channel-names",
        type=_name_list,
        default=None,
        metavar="NAMES",
        help="names of the channels of --images in the order of their numbers, e.g. CT,PET (default: 0000, 0001)",
    )
    re_.add_argument(
        "--window",
        action="append",
        default=None,
        metavar="[CHANNEL=]WINDOW",
        help="grey scale of the scans: auto (default: a channel with values below -500 is a CT, shown at "
        "level 40 / width 400 HU; any other from 0 to the crop's maximum), ct, range, or LEVEL/WIDTH such "
        "as --window=-600/1500; CHANNEL= (a name or a code such as 0001) sets one channel's; repeatable",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ccmetrics`` with ``argv`` (default: the command line); return the exit code (module docstring).

    SIGINT and SIGTERM stop the command cleanly from the first line on (see :mod:`ccmetrics._interrupts`); on
    the real command line (``argv`` None) they stay ignored after it returns, while the interpreter shuts down,
    so that the exit code is the one returned; a caller that passes ``argv`` gets its handlers back.
    """
    from . import _interrupts

    _interrupts.received.clear()
    with _stop_signals(restore=argv is not None):
        args = argparse.Namespace(command=None, out=None)
        try:
            args = build_parser().parse_args(argv)
            args.argv = list(argv) if argv is not None else sys.argv[1:]  # to print the command that resumes
            try:
                command = {"evaluate": _evaluate, "partition": _partition, "compare": _compare, "report": _report}
                return command[args.command](args)
            except (ValueError, TypeError, OSError, ImportError) as exc:  # OSError: missing files, unreachable --dask
                print(f"ccmetrics {args.command}: error: {exc}", file=sys.stderr)
                return EXIT_USAGE
        except KeyboardInterrupt:  # wherever it came: no traceback, and for `evaluate` the way to go on
            with _signals_ignored():
                if args.command == "evaluate" and args.out is not None and hasattr(args, "argv"):
                    _say_stopped(args, "Stopped", _recorded(args.out))
                else:
                    print(f"ccmetrics{' ' + args.command if args.command else ''}: stopped", file=sys.stderr)
            return _stop_code()


def _evaluate(args: argparse.Namespace) -> int:
    from ._interrupts import raise_if_stopped
    from .campaign import EvaluationFailed, EvaluationInterrupted
    from .dataset import evaluate_dataset
    from .output_folder import locked
    from .registry import load_plugin

    for plugin in args.plugin:  # they register their metrics before the names are looked up
        load_plugin(plugin)

    client = None
    if args.dask:
        try:
            from dask.distributed import Client
        except ImportError:
            raise ImportError('--dask needs dask.distributed: pip install "ccmetrics-toolkit[dask]"') from None
        client = Client(args.dask)
    meta, by = None, []
    if (args.metadata is None) != (args.group_by is None):
        print("ccmetrics evaluate: error: --metadata and --group-by go together", file=sys.stderr)
        return EXIT_USAGE
    if args.metadata is not None:  # checked before a case is evaluated
        from .subgroups import case_groups, read_metadata

        try:
            meta, by = read_metadata(args.metadata), _name_list(args.group_by)
            case_groups(meta, by, [])
        except (OSError, ValueError) as exc:
            print(f"ccmetrics evaluate: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    start = time.perf_counter()
    try:
        with locked(args.out, command=_command(args)):  # the whole run, tables included: one writer
            try:
                result = evaluate_dataset(
                    args.gt_dir,
                    args.pred_dir,
                    args.metrics,
                    classes=args.classes,
                    spacing=args.spacing,
                    nsd_tolerance=args.nsd_tolerance,
                    worst_distance=args.worst_distance,
                    connectivity=args.connectivity,
                    detection_rule=args.detection_rule,
                    ignore_label=args.ignore_label,
                    dataset_json=args.dataset_json,
                    nnunet_summary=args.nnunet_summary,
                    reference_images=args.reference_images,
                    gt_suffix=args.gt_suffix,
                    pred_suffix=args.pred_suffix,
                    tolerance_mm=args.tolerance_mm,
                    workers=args.workers,
                    client=client,
                    progress=not args.quiet,
                    out_dir=args.out,
                    resume=args.resume,
                    overwrite=args.overwrite,
                    case_timeout=args.case_timeout,
                    max_memory=args.max_memory,
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
    finally:
        if client is not None:
            client.close()


def _finish(args: argparse.Namespace, result, seconds: float, meta, by: list[str]) -> int:
    """The final phase of ``evaluate``: summary, tables and plots (one set: see ``DatasetResult.write``), the report."""
    from ._interrupts import raise_if_stopped

    summary = result.summary(n_resamples=args.bootstrap, seed=args.seed)  # once: written and printed
    groups = None
    if meta is not None:
        from . import schema
        from .subgroups import case_groups

        table = result.group_summary(meta, by, n_resamples=args.bootstrap, seed=args.seed)
        groups = (by, table, case_groups(meta, by, result.per_case[schema.CASE].astype(str).unique().tolist()))
    size_bins = None
    if args.size_bins is not None:
        from .sizes import parse_size_bins

        size_bins = parse_size_bins(args.size_bins)
    raise_if_stopped()
    try:
        written = result.write(args.out, plots=not args.no_plots, summary=summary, size_bins=size_bins, groups=groups)
    except OSError as exc:  # a full disk, no permission: OutputWriteError names the path
        return _failed(args, exc, result)
    try:  # the tables are whole now: a stop while the report is printed says so
        raise_if_stopped()
        print(report(result, seconds, summary=summary))
        if groups is not None:
            print(_group_report(groups[0], groups[1]))
        if size_bins is not None:
            print(_size_report(result, size_bins))
        tables = [written[n] for n in ("per_component", "per_prediction", "per_case", "nnunet_summary") if n in written]
        print(
            f"\nWrote {', '.join(map(str, tables))}, {written['summary']}"
            + (f" and {len(written['plots'])} plots in {Path(args.out) / 'plots'}" if written["plots"] else "")
        )
        _say_removed(written["removed"])
    except KeyboardInterrupt:
        with _signals_ignored():
            print(f"\nStopped after the tables were written: {args.out} holds the whole result.", file=sys.stderr)
        return _stop_code()
    return EXIT_CASE_FAILED if result.counts()["failed"] else EXIT_OK


def _say_removed(removed: list[str]) -> None:
    """Name the files of an earlier run that this run's options do not produce (removed by ``DatasetResult.write``)."""
    if not removed:
        return
    shown = ", ".join(removed[:8]) + (f" and {len(removed) - 8} more" if len(removed) > 8 else "")
    print(
        f"Removed {shown}: written by an earlier run into this folder, not produced with these options"
        + (" (run `ccmetrics report` again for a report of these tables)" if "report.html" in removed else "")
    )


def _with_ci_text(table):
    """The table with its two interval columns shown as one ``95% CI`` text column."""
    from . import schema

    table = table.copy()
    table["95% CI"] = [f"[{lo:.4g}, {hi:.4g}]" for lo, hi in zip(table[schema.CI_LOW], table[schema.CI_HIGH])]
    return table.drop(columns=[schema.CI_LOW, schema.CI_HIGH])


def _with_class_names(table, names: dict[int, str]):
    """The table with a ``class_name`` column after ``class`` when the classes have names."""
    from . import schema

    if names:
        table = table.copy()
        table.insert(1, schema.CLASS_NAME, [names.get(int(c), "") for c in table[schema.CLASS]])
    return table


def _group_report(by: list[str], table) -> str:
    """The subgroup summaries as text (``--metadata``, ``--group-by``)."""
    import pandas as pd

    if table.empty:
        return "\nSummary by " + ", ".join(by) + ": no group"
    table = _with_ci_text(table)
    with pd.option_context("display.width", 200):
        text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    return f"\nSummary by {', '.join(by)} (each group's cases alone; n_cases: cases of the group):\n{text}"


def _size_report(result, edges) -> str:
    """The lesion-size table as text (``--size-bins``)."""
    import pandas as pd

    table = result.size_table(edges)
    if table.empty:
        return "\nDetection by lesion size: no lesion table (no case evaluated)"
    table = _with_class_names(table, result.class_names)
    shown = table.drop(columns=["low", "high", "unit"])
    with pd.option_context("display.width", 200):
        text = shown.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    return f"\nDetection by lesion size (lesions of evaluated cases; false positives by their own size):\n{text}"


@contextlib.contextmanager
def _stop_signals(restore: bool = True) -> Iterator[None]:
    """For the whole command: SIGINT and SIGTERM raise :class:`ccmetrics._interrupts.Stop` (a
    ``KeyboardInterrupt``: the finished cases are kept, the way to go on is printed), or, inside a critical section
    (a record or table being written), are kept for its end; each is noted in ``_interrupts.received`` (the exit
    code, and the checks that find a stop whose exception was swallowed). On exit the previous handlers come back
    (``restore``) or the signals stay ignored. Nothing changes where signals cannot be handled (not the main
    thread)."""
    from . import _interrupts

    def handler(signum, frame):
        _interrupts.received.append(signum)
        if _interrupts.deferring():
            _interrupts.defer(signum)
        else:
            raise _interrupts.Stop(signum)

    hook = sys.unraisablehook

    def quiet_about_stops(unraisable):  # a stop raised where Python cannot raise it (a __del__, a weakref callback)
        if not isinstance(unraisable.exc_value, _interrupts.Stop):  # is dropped without a traceback: the checks
            hook(unraisable)  # between the steps find it (raise_if_stopped); any other such error is shown

    previous = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread
        pass
    sys.unraisablehook = quiet_about_stops
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for signum, old in previous.items():
            signal.signal(signum, old if restore else signal.SIG_IGN)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM ignored while the last words of a stopped run are printed (a further Ctrl-C would
    only cut them)."""
    previous = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, signal.SIG_IGN)
    except ValueError:
        pass
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _stop_code() -> int:
    """130 after Ctrl-C (SIGINT), 143 after SIGTERM: the first signal received decides."""
    from ._interrupts import received

    return EXIT_TERMINATED if received and received[0] == signal.SIGTERM else EXIT_INTERRUPTED


def _command(args: argparse.Namespace) -> str:
    return shlex.join(["ccmetrics", *args.argv])


def _resume_command(args: argparse.Namespace) -> str:
    """The command that continues this run: the same arguments, options written out in full (argparse takes
    unique prefixes such as ``--overw``), without ``--resume`` and ``--overwrite``, then ``--resume``."""
    known = [o for action in args.parser._actions for o in action.option_strings if o.startswith("--")]
    out = []
    for arg in args.argv:
        name, eq, value = arg.partition("=")
        if name.startswith("--") and name not in known:
            matches = [o for o in known if o.startswith(name)]
            name = matches[0] if len(matches) == 1 else name
        if name not in ("--resume", "--overwrite"):
            out.append(name + eq + value)
    return shlex.join(["ccmetrics", *out]) + " --resume"


def _recorded(out: str) -> int:
    """Records in the output folder (finished cases of this run and earlier ones), counted by their files."""
    from .records import RECORDS_FOLDER

    folder = Path(out) / RECORDS_FOLDER
    try:
        return sum(1 for p in folder.glob("*.json") if not p.name.startswith("."))
    except OSError:
        return 0


def _say_stopped(args: argparse.Namespace, what: str, finished: int, pending: int | None = None) -> None:
    """The last words of a stopped ``evaluate``: what is kept, what is left, the command that goes on."""
    left = "" if pending is None else f", {pending} not evaluated"
    print(
        f"\n{what}: {finished} case(s) finished and kept in {Path(args.out) / 'cases'}{left}. To finish, run:\n"
        f"  {_resume_command(args)}",
        file=sys.stderr,
    )


def _interrupted(stop, args: argparse.Namespace, seconds: float) -> int:
    """Write the tables of the finished cases (a second Ctrl-C skips them), say what is left and how to resume;
    130 (Ctrl-C) or 143 (SIGTERM)."""
    result = stop.result
    finished = result.counts()["cases"] if len(result.per_case) else 0
    note = "The tables written cover the finished cases only."
    if len(result.per_case):
        try:
            summary = result.summary(n_resamples=args.bootstrap, seed=args.seed)
            written = result.write(args.out, plots=False, summary=summary)
            print(report(result, seconds, summary=summary))
            _say_removed(written["removed"])
        except KeyboardInterrupt:  # a second Ctrl-C: no tables, still the way to go on
            note = "Stopped again while writing the tables of the finished cases: not written."
        except OSError as exc:  # OutputWriteError: a full disk, no permission
            note = f"The tables of the finished cases could not be written ({exc})."
    with _signals_ignored():
        print(f"\n{note}" if len(result.per_case) else "", file=sys.stderr)
        _say_stopped(args, "Stopped", finished, len(result.run.pending))
    return _stop_code()


def _failed(args: argparse.Namespace, exc: BaseException, result) -> int:
    """The run could not go on (a full disk, ...): say why, what is kept and how to go on; exit 3."""
    import errno

    cause = {
        errno.ENOSPC: "free space on that disk",
        getattr(errno, "EDQUOT", -1): "free space within your disk quota",
        errno.EACCES: "make the output folder writable",
        errno.EPERM: "make the output folder writable",
        errno.EROFS: "give an output folder on a writable file system (or remount it)",
    }
    os_error = next((e for e in _causes(exc) if isinstance(e, OSError)), None)
    fix = cause.get(os_error.errno if os_error is not None else None, "fix the cause")
    finished = result.counts()["cases"] if len(result.per_case) else 0
    pending = len(result.run.pending)
    with _signals_ignored():
        print(f"ccmetrics evaluate: error: {exc}", file=sys.stderr)
        print(
            f"{finished} case(s) finished and kept in {Path(args.out) / 'cases'}"
            + (f", {pending} not evaluated" if pending else "; the tables were not (all) written")
            + f". {fix[0].upper() + fix[1:]}, then run:\n  {_resume_command(args)}",
            file=sys.stderr,
        )
    return EXIT_RUN_FAILED


def _causes(exc: BaseException | None) -> Iterator[BaseException]:
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def report(result, seconds: float, *, summary=None, **summary_options) -> str:
    """The text ``ccmetrics evaluate`` prints: counts, problems, and the summary table.

    ``summary``: the ``result.summary()`` frame when computed already, else computed with ``summary_options``.
    """
    import pandas as pd

    from . import schema

    n = result.counts()
    lines = [
        f"{n['cases']} cases in {seconds:.1f} s: {n['evaluated']} evaluated ({n['flagged']} flagged), "
        f"{n['failed']} failed; {n['empty_gt']} with an empty GT, {n['missing_prediction']} without prediction"
    ]
    table = result.per_case
    problems = table[table[schema.STATUS] != schema.OK].drop_duplicates(schema.CASE)
    for row in problems.itertuples():
        text = row.error if row.status == schema.FAILED else row.flags
        lines.append(f"  {row.status:<8}{row.case}: {text}")
    for name in result.ignored_files:
        lines.append(
            f"  ignored  {name} ({'a subfolder: not searched' if name.endswith(os.sep) else 'not an image file'})"
        )
    if summary is None:
        summary = result.summary(**summary_options)
    if len(summary):
        table = summary.reset_index()
        table = _with_class_names(table, result.class_names)
        table = _with_ci_text(table)
        with pd.option_context("display.width", 200):
            text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}")
        units = (
            "distances and volumes in voxels"
            if result.options.get("spacing") == "voxel"
            else "distances in mm, volumes in ml"
        )
        rule = result.options.get("detection_rule", "overlap")
        detected = f"; detected: {rule}" if "detection" in result.options.get("metrics", ()) else ""
        lines += [
            "",
            f"Summary over cases with GT lesions ({units}; CC: patient = mean of case means, pooled = "
            f"all lesions; a missed lesion's distance = the worst distance{detected}):",
            text,
        ]
    empty = result.empty_gt_summary()
    for c, row in empty.iterrows():
        if row[schema.N]:
            ml = row[schema.FP_VOLUME_ML_MEAN]
            volume = f"{ml:.4g} ml" if ml == ml else f"{row[schema.FP_VOLUME_VOXELS_MEAN]:.4g} voxels"
            n_empty = int(row[schema.N])
            lines.append(
                f"\nClass {c}: {n_empty} empty-GT case{'s' if n_empty > 1 else ''}, "
                f"{int(row[schema.WITH_FALSE_POSITIVE])} with a false positive (mean false-positive volume "
                f"{volume}); not in the means above"
            )
    return "\n".join(lines)


def _partition(args: argparse.Namespace) -> int:
    import numpy as np

    from .io import load_image, save_image
    from .partition import voronoi_partition

    gt = load_image(args.gt_file)
    mask = gt.array if args.class_value is None else (gt.array == args.class_value)
    if args.class_value is not None and not np.any(mask):
        raise ValueError(f"label {args.class_value} does not occur in {args.gt_file}")
    spacing = gt.spacing if args.spacing == "header" else None
    regions = voronoi_partition(mask, spacing=spacing, connectivity=args.connectivity, sites=args.sites)
    save_image(args.out_file, regions, like=gt)
    print(f"{int(regions.max())} regions written to {args.out_file}")
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from .dataset import DatasetResult
    from .stats import compare

    dirs = [Path(d) for d in args.result_dirs]
    names = args.names or [d.resolve().name for d in dirs]
    if len(names) != len(dirs) or len(set(names)) != len(names):
        raise ValueError(f"need one distinct name per folder, got {names}; pass --names A,B,...")
    results = {name: DatasetResult.read(d) for name, d in zip(names, dirs)}
    columns = {k: c for r in results.values() for k, c in r.columns.items()}  # the folders' own facts
    result = compare(
        {name: r.per_case for name, r in results.items()}, args.metric, class_value=args.class_value, columns=columns
    )
    direction = "higher is better" if result.higher_is_better else "lower is better"
    head = f"{args.metric} ({direction}) on {len(result.scores)} paired cases"
    if result.excluded:
        head += f"; {len(result.excluded)} excluded (missing or failed in a method): {result.excluded}"
    if result.empty_gt:
        n_empty = len(result.empty_gt)
        head += f"; {n_empty} empty-GT case{'s' if n_empty > 1 else ''} left out (see each summary)"
    print(head)
    print(result.summary().to_string(float_format=lambda v: f"{v:.4g}"))
    print(f"\n{result.test.capitalize()} test: statistic {result.statistic:.4g}, p = {result.pvalue:.4g}")
    if result.nemenyi is not None:
        print("Nemenyi post-hoc p-values:")
        print(result.nemenyi.to_string(float_format=lambda v: f"{v:.4g}"))
    if args.out:
        from .plots import plot_comparison

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        result.scores.to_csv(out / "comparison.csv")
        plot_comparison(result.scores, result.mean_ranks, args.metric).savefig(out / "comparison.png", dpi=120)
        print(f"\nWrote {out / 'comparison.csv'} and {out / 'comparison.png'}")
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from .report import write_report

    if args.max_cases < 0:
        raise ValueError(f"--max-cases must be 0 or more, got {args.max_cases}")
    if args.images is not None and not Path(args.images).is_dir():
        print(
            f"ccmetrics report: error: --images {args.images}: no such folder; give the folder that holds the "
            "scans, one file per case and channel (CASE_0000.nii.gz, CASE_0001.nii.gz, ... or CASE.nii.gz)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if (args.channel_names or args.window) and args.images is None:
        print("ccmetrics report: error: --channel-names and --window go with --images IMAGE_DIR", file=sys.stderr)
        return EXIT_USAGE
    window: dict[str, str] = {}
    for given in args.window or []:
        channel, _, spec = given.rpartition("=")
        window[channel or "*"] = spec
    out = args.out if args.out is not None else Path(args.result_dir) / "report.html"
    info = write_report(
        args.result_dir,
        out,
        max_cases=args.max_cases,
        image_root=args.image_root,
        title=args.title,
        images=args.images,
        channel_names=args.channel_names,
        window=window or None,
    )
    print(info)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
