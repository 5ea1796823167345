"""Benchmark the nuclei metrics on a 2000 x 2000 tile with 3000 nuclei.

The tile is ``ccmetrics.nuclei.synthetic.nuclei_tile()`` (rotated ellipses of
semi-axes 4-9 px, touching and occluding each other, 4 classes; a prediction
with shifted/scaled nuclei, misses, class errors and 5 % false positives,
labels unrelated to the GT's).  Timed, as the median of ``--repeats`` calls
after one warm-up call (imports, first-use allocations):

* ``ccmetrics.nuclei.evaluate`` with everything (confusion matrix, detection,
  classification, per-pair IoU/Dice/HD/HD95, PQ per class, CC-Dice/NSD/HD95),
  for each matching rule;
* the same without the CC-Metrics;
* its parts: the class-agnostic matching alone, and ``ccmetrics.evaluate``
  (the CC-Metrics) alone;
* ``evaluate_many`` on 4 such tiles in 2 groups (per tile).

Prints a Markdown table and the machine info.  Run from the repository root::

    python tests/benchmarks/bench_nuclei.py
    python tests/benchmarks/bench_nuclei.py --repeats 7
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from typing import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import ccmetrics  # noqa: E402
from ccmetrics.metrics.matching import choose_pairs, instance_overlaps  # noqa: E402
from ccmetrics.nuclei import evaluate, evaluate_many  # noqa: E402
from ccmetrics.nuclei.synthetic import nuclei_tile  # noqa: E402

BUDGET_S = 2.0


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--nuclei", type=int, default=3000)
    args = parser.parse_args()
    from ccmetrics.engine import warm_up

    warm_up()  # every kernel in numba's cache and loaded, as after `ccmetrics warm-up`: warm timings

    start = time.perf_counter()
    gt, gt_cls, pred, pred_cls = nuclei_tile((args.size, args.size), args.nuclei, seed=0)
    build = time.perf_counter() - start
    n_gt, n_pred = len(np.unique(gt)) - 1, len(np.unique(pred)) - 1
    r = evaluate(gt, gt_cls, pred, pred_cls)

    cases = [
        ("`nuclei.evaluate`, rule iou (everything)", lambda: evaluate(gt, gt_cls, pred, pred_cls)),
        (
            "`nuclei.evaluate`, rule centroid (everything)",
            lambda: evaluate(gt, gt_cls, pred, pred_cls, rule="centroid"),
        ),
        ("`nuclei.evaluate`, rule max_iou (everything)", lambda: evaluate(gt, gt_cls, pred, pred_cls, rule="max_iou")),
        ("`nuclei.evaluate`, rule iou, no CC-Metrics", lambda: evaluate(gt, gt_cls, pred, pred_cls, cc_metrics=())),
        ("part: matching only (overlaps + rule iou)", lambda: choose_pairs(instance_overlaps(pred, gt))),
        (
            "part: CC-Dice/NSD/HD95 (`ccmetrics.evaluate`, sites=labels)",
            lambda: ccmetrics.evaluate(pred > 0, gt, ["dice", "nsd", "hd95"], sites="labels"),
        ),
    ]
    rows = []
    for name, fn in cases:
        times = timed(fn, args.repeats)
        rows.append((name, statistics.median(times), min(times)))
    tiles = [nuclei_tile((args.size, args.size), args.nuclei, seed=s) for s in range(4)]
    times = timed(lambda: evaluate_many(tiles, ["A", "A", "B", "B"]), max(1, args.repeats // 2))
    rows.append(("`evaluate_many`, 4 tiles in 2 groups, per tile", statistics.median(times) / 4, min(times) / 4))

    print(
        f"Tile {args.size} x {args.size}: {n_gt} GT nuclei, {n_pred} predicted, {len(r.classes)} classes "
        f"(built in {build:.2f} s); TP {r.detection['tp']}, FP {r.detection['fp']}, FN {r.detection['fn']}, "
        f"PQ {r.pq['pq']:.3f}, mPQ {r.pq['mpq']:.3f}\n"
    )
    print(f"| what | median (s) | best (s) | within {BUDGET_S:.0f} s |")
    print("|---|---:|---:|:---:|")
    for name, median, best in rows:
        within = "yes" if median <= BUDGET_S else "NO"
        print(f"| {name} | {median:.3f} | {best:.3f} | {within} |")
    print(
        f"\n{platform.platform()}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"{os.cpu_count()} CPU cores; median of {args.repeats} runs after one warm-up"
    )


if __name__ == "__main__":
    main()
