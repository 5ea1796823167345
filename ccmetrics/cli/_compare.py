"""``ccmetrics compare RESULT_DIR_A RESULT_DIR_B ...``: :func:`ccmetrics.analysis.compare` on the folders' tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._escaping import write_csv
from .._files import refuse_dangling_link
from ._common import EXIT_OK, _name_list
from ._former import add_former, take_former


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``compare`` sub-command and its options."""
    co = sub.add_parser(
        "compare",
        help="compare methods evaluated with `ccmetrics evaluate`",
        description="Paired per-case table, Friedman test with Nemenyi post-hoc tests (Wilcoxon "
        "for two methods), mean ranks and a figure.",
    )
    co.add_argument("result_dirs", nargs="+", help="output folders of `ccmetrics evaluate`, one per method")
    co.add_argument(
        "--metric",
        default="cc_dice",
        help="per-case column to compare (default cc_dice), or a detection curve's score of runs with "
        "--probabilities: ap, auroc, picai_score, cpm (paired case-level bootstrap of each difference)",
    )
    add_former(
        co,
        "--n-resamples",
        "--bootstrap",
        dest="n_resamples",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap resamples (default 2000)",
    )
    co.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    co.add_argument("--class", dest="class_value", type=int, default=None, help="class to compare (multi-class)")
    co.add_argument("--names", type=_name_list, default=None, help="method names (default: folder names)")
    add_former(
        co,
        "--out-dir",
        "--out",
        dest="out_dir",
        default=None,
        metavar="OUT_DIR",
        help="folder for comparison.csv and comparison.png (default: none)",
    )

    return co


#: the detection curves' scores ``compare`` takes (runs of ``evaluate --probabilities``)
CURVE_SCORES = ("ap", "auroc", "picai_score", "cpm")


def _compare_curves(args: argparse.Namespace, results: dict) -> int:
    """Each run's detection curves against the first's: a paired case-level bootstrap of the differences."""
    import pandas as pd

    from .. import schema
    from ..metrics.detection_curves import compare_detection_curves

    names = list(results)
    if len(names) < 2:
        raise ValueError("compare needs two result folders or more")
    classes = sorted({int(c) for r in results.values() for c in r.per_case[schema.CLASS].dropna().unique()})
    if args.class_value is None and len(classes) > 1:
        raise ValueError(f"the runs hold classes {classes}: choose one with --class")
    cls = args.class_value if args.class_value is not None else classes[0]

    def tables(name: str, result) -> tuple:
        if result.per_candidate is None:
            raise ValueError(
                f"{name} holds no per_candidate.csv: compare --metric {args.metric} takes runs of "
                "`ccmetrics evaluate --probabilities`"
            )
        cases = result.per_case[result.per_case[schema.STATUS] != schema.FAILED]
        candidates = result.per_candidate
        return cases[cases[schema.CLASS] == cls], candidates[candidates[schema.CLASS] == cls]

    first = tables(names[0], results[names[0]])
    frames = []
    for name in names[1:]:
        table, excluded = compare_detection_curves(
            tables(name, results[name]), first, n_resamples=args.n_resamples, seed=args.seed
        )
        n = int(table["n"].iloc[0])
        of = f" of class {cls}" if len(classes) > 1 else ""
        print(
            f"{name} - {names[0]}: detection curves{of} on {n} paired cases "
            "(95% CI and p: paired case-level bootstrap, "
            f"{args.n_resamples} resamples)"
            + (f"; {len(excluded)} cases in one run only: {excluded}" if excluded else "")
        )
        shown = table.rename(columns={"a": name, "b": names[0]})
        print(shown.drop(columns="n").to_string(float_format=lambda v: f"{v:.4g}") + "\n")
        frames.append(table.assign(method=name, reference=names[0]).reset_index())
    if args.out_dir:
        out = Path(args.out_dir)
        refuse_dangling_link(out, "--out-dir")
        out.mkdir(parents=True, exist_ok=True)
        write_csv(pd.concat(frames, ignore_index=True), out / "comparison_curves.csv")  # names: neutralised
        print(f"Wrote {out / 'comparison_curves.csv'}")
    return EXIT_OK


def _check_metric(metric: str, tables: dict, columns: dict) -> None:
    """``--metric`` must be a score column of every run's ``per_case.csv``: else an error (a ``ValueError``) that
    names the run without it, the nearest column (``nds``: ``nsd``), the columns the runs share, and, for a column
    of a metric these runs did not evaluate, the ``evaluate --metrics`` that gives it."""
    import difflib

    from .. import schema
    from ..metrics import registry

    lacking = [name for name, table in tables.items() if metric not in table.columns]
    if not lacking:
        return
    shared = [
        c
        for c in next(iter(tables.values())).columns
        if all(c in t.columns for t in tables.values()) and registry.column(c, columns) is not None
    ]
    near = difflib.get_close_matches(metric, shared + list(CURVE_SCORES), n=1, cutoff=0.6)
    guess = f" (did you mean --metric {near[0]}?)" if near else ""
    owner = next(
        (
            m.name
            for m in registry.metrics()
            if metric in ((m.name, schema.cc(m.name)) if m.per_region else m.column_names)
        ),
        None,
    )
    evaluate = f"; {metric} comes with `ccmetrics evaluate --metrics ...,{owner}`" if owner else ""
    raise ValueError(
        f"no column {metric!r} in the per_case.csv of {', '.join(lacking)}{guess}{evaluate}; --metric takes a column "
        f"these runs share: {', '.join(shared) or '(none)'}, or {', '.join(CURVE_SCORES)} for runs with --probabilities"
    )


def run(args: argparse.Namespace) -> int:
    """``ccmetrics compare``: every message in the command line's terms (:func:`ccmetrics._words.command_line`)."""
    from .._words import command_line

    with command_line():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ..analysis.stats import compare
    from ..results.dataset import DatasetResult

    take_former(args, "compare")  # the notes of former spellings
    dirs = [Path(d) for d in args.result_dirs]
    names = args.names or [d.resolve().name for d in dirs]
    if len(names) != len(dirs) or len(set(names)) != len(names):
        raise ValueError(f"need one distinct name per folder, got {names}; pass --names A,B,...")
    results = {name: DatasetResult.read(d) for name, d in zip(names, dirs)}
    if args.metric in CURVE_SCORES:
        return _compare_curves(args, results)
    columns = {k: c for r in results.values() for k, c in r.columns.items()}  # the folders' own facts
    _check_metric(args.metric, {name: r.per_case for name, r in results.items()}, columns)
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
    elif result.posthoc_missing:
        print(f"No post-hoc tests: {result.posthoc_missing}")
    if args.out_dir:
        from ..analysis.plots import plot_comparison

        out = Path(args.out_dir)
        refuse_dangling_link(out, "--out-dir")
        out.mkdir(parents=True, exist_ok=True)
        write_csv(result.scores, out / "comparison.csv", index=True)  # case ids and names: neutralised
        plot_comparison(result.scores, result.mean_ranks, args.metric).savefig(out / "comparison.png", dpi=120)
        print(f"\nWrote {out / 'comparison.csv'} and {out / 'comparison.png'}")
    return EXIT_OK
