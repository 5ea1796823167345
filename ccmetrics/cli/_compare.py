"""``ccmetrics compare RESULT_DIR_A RESULT_DIR_B ...``: :func:`ccmetrics.analysis.compare` on the folders' tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._common import EXIT_OK, _name_list


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``compare`` sub-command and its options."""
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

    return co


def run(args: argparse.Namespace) -> int:
    from ..analysis.stats import compare
    from ..campaign.dataset import DatasetResult

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
        from ..analysis.plots import plot_comparison

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        result.scores.to_csv(out / "comparison.csv")
        plot_comparison(result.scores, result.mean_ranks, args.metric).savefig(out / "comparison.png", dpi=120)
        print(f"\nWrote {out / 'comparison.csv'} and {out / 'comparison.png'}")
    return EXIT_OK
