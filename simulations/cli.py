"""Command line: ``python -m simulations SCENARIO --out DIR`` (also the ``ccmetrics-simulations`` script).

Scenarios: ``fig2``, ``fig3``, ``fig4``, ``fig5``, ``all``, ``custom --gt-dir DIR`` (the Fig. 4/5
study on a folder of real GT masks) and ``paper`` (every panel of Fig. 2 and 3 with the authors'
notebook protocol beside ccmetrics' definitions: :mod:`simulations.paper`). Each writes its tables (CSV)
and figure (PNG) into ``--out``. ``--quick`` runs small phantoms and a 4-case cohort (under a minute;
what the tests use).

The files a scenario would replace are named before anything runs, and the command stops unless ``--overwrite``
is given (:func:`outputs`): ``custom`` writes ``fig4.png`` as ``fig4`` does, so a second study into one folder
would otherwise replace the first one's figures without a word (``ccmetrics evaluate`` keeps the same rule).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SCENARIOS", "build_parser", "main", "outputs"]

SCENARIOS = ("fig2", "fig3", "fig4", "fig5", "all", "custom", "paper")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m simulations`` argument parser (the figures, ``custom`` and their options)."""
    parser = argparse.ArgumentParser(
        prog="python -m simulations", description="Degradation simulations of the CC-Metrics paper."
    )
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--out", required=True, help="output folder (created)")
    parser.add_argument("--quick", action="store_true", help="small phantoms and a 4-case cohort (< 1 minute)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--cases", type=int, default=None, help="cohort size for fig4/fig5 (default 60; quick 4)")
    parser.add_argument("--seed", type=int, default=0, help="cohort and false-positive seed (default 0)")
    parser.add_argument("--gt-dir", default=None, help="with `custom`: a folder of GT masks (NIfTI, MHA, NRRD)")
    parser.add_argument("--max-n", type=int, default=10, help="fig4/fig5/custom: n = 1..MAX_N (default 10)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the files of an earlier run in --out (default: refuse)"
    )
    return parser


def outputs(scenario: str) -> list[str]:
    """The names of the files ``scenario`` writes into ``--out``, in the order it writes them.

    >>> outputs("custom")  # doctest: +NORMALIZE_WHITESPACE
    ['fig4_per_step.csv', 'fig4_per_component.csv', 'fig4.png', 'fig4_summary.csv',
     'fig5_per_step.csv', 'fig5_per_component.csv', 'fig5.png', 'fig5_summary.csv']
    >>> outputs("paper")
    ['paper_per_step.csv', 'paper_per_component.csv', 'paper_fig2.png', 'paper_fig3.png']
    """
    if scenario == "paper":
        return ["paper_per_step.csv", "paper_per_component.csv", "paper_fig2.png", "paper_fig3.png"]
    figures = {"all": ("fig2", "fig3", "fig4", "fig5"), "custom": ("fig4", "fig5")}.get(scenario, (scenario,))
    return [
        name
        for figure in figures
        for name in (f"{figure}_per_step.csv", f"{figure}_per_component.csv", f"{figure}.png")
        + ((f"{figure}_summary.csv",) if figure in ("fig4", "fig5") else ())
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m simulations`` with ``argv`` (default: the command line); return the exit code."""
    args = build_parser().parse_args(argv)
    from . import figures
    from .phantoms import cohort, read_cohort

    if args.workers < 1:
        print("error: --workers must be >= 1", file=sys.stderr)
        return 2
    if (args.scenario == "custom") != (args.gt_dir is not None):
        print("error: --gt-dir goes with the `custom` scenario, and `custom` needs it", file=sys.stderr)
        return 2
    out, start = Path(args.out), time.perf_counter()
    if out.exists() and not out.is_dir():
        print(f"error: --out {out} is a file: give a folder", file=sys.stderr)
        return 2
    earlier = [name for name in outputs(args.scenario) if (out / name).exists()]
    if earlier and not args.overwrite:
        shown = ", ".join(earlier[:4]) + (f" and {len(earlier) - 4} more" if len(earlier) > 4 else "")
        print(
            f"error: {out} holds the files of an earlier run that `{args.scenario}` would replace ({shown}): give "
            "another --out (e.g. a folder per study), or --overwrite to replace them",
            file=sys.stderr,
        )
        return 2
    common = dict(workers=args.workers, progress=not args.quiet)
    written = []
    if args.scenario in ("fig2", "all"):
        written += figures.fig2(out, quick=args.quick, **common)
    if args.scenario in ("fig3", "all"):
        written += figures.fig3(out, quick=args.quick, **common)
    if args.scenario == "paper":
        from . import paper_plots

        written += paper_plots.write(out, quick=args.quick, **common)
    if args.scenario in ("fig4", "fig5", "all", "custom"):
        try:
            if args.scenario == "custom":
                cases = read_cohort(args.gt_dir)
            elif args.cases is not None:
                cases = cohort(args.cases, seed=args.seed, shape=(64, 64, 48) if args.quick else (160, 160, 120))
            else:
                cases = figures.default_cohort(args.quick)
        except (ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        max_n = min(args.max_n, 5) if args.quick else args.max_n
        try:
            result = figures.run_cohort(cases, max_n=max_n, seed=args.seed, **common)
        except ValueError as exc:  # masks the degradations cannot work on (too small for a false positive, ...)
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if args.scenario in ("fig4", "all", "custom"):
            written += figures.fig4(out, result=result)
        if args.scenario in ("fig5", "all", "custom"):
            written += figures.fig5(out, result=result)
    print(f"{len(written)} files written to {out} in {time.perf_counter() - start:.1f} s:")
    for path in written:
        print(f"  {path}")
    return 0
