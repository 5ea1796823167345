"""Benchmark the simulations: Fig. 2 on the 500³ phantom and Fig. 4 on the default cohort.

Run from the repository root with the project's environment active::

    python tests/benchmarks/bench_simulations.py              # fig2, fig3 and fig4, 2 workers
    python tests/benchmarks/bench_simulations.py --only fig2  # one of them

Each figure runs as ``python -m simulations`` would run it (same functions, same defaults), into a
temporary folder, and the wall time of each is printed as a Markdown table for the README.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("fig2", "fig3", "fig4"), default=None)
    parser.add_argument("--out", default=None, help="keep the figures and tables in this folder")
    args = parser.parse_args()

    import numpy as np

    from simulations import figures

    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, numpy {np.__version__}")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or scratch
        if args.only in (None, "fig2"):
            start = time.perf_counter()
            figures.fig2(Path(out), workers=args.workers, progress=False)
            rows.append(
                (
                    "`fig2`: erode all / erode the smallest (500³ phantom, 21 steps each), three balls, "
                    "Lesion Dice pitfall",
                    time.perf_counter() - start,
                )
            )
        if args.only in (None, "fig3"):
            start = time.perf_counter()
            figures.fig3(Path(out), workers=args.workers, progress=False)
            rows.append(
                (
                    "`fig3`: erode / shift the largest vs the smallest (500³ phantom, 11 steps each)",
                    time.perf_counter() - start,
                )
            )
        if args.only in (None, "fig4"):
            start = time.perf_counter()
            cases = figures.default_cohort()
            result = figures.run_cohort(cases, workers=args.workers, progress=False)
            figures.fig4(Path(out), result=result)
            n_components = int(result.per_step.groupby("case")["n_components"].first().sum())
            rows.append(
                (
                    f"`fig4`: default cohort ({len(cases)} cases of 160×160×120, {n_components} lesions), "
                    f"8 scenarios × n = 1..10 ({len(result.per_step)} evaluations)",
                    time.perf_counter() - start,
                )
            )
    print(f"\n| simulation (workers={args.workers}) | wall time (s) |\n|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
