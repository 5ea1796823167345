"""Benchmark ``ccmetrics.evaluate`` against the published CC-Metrics code (CCMetrics 0.0.3).

What it measures, on the synthetic benchmark case ``ccmetrics.synthetic.lesion_case()``
(400 x 400 x 300 bool volumes, 20 ellipsoidal lesions, a degraded prediction):

1. wall time of ``ccmetrics.evaluate(gt=gt, pred=pred, metrics=["dice", "nsd", "hd95"])``: the first
   (cold) call of the process, which includes lazy imports and first-use overhead,
   and the median of ``--repeats`` further calls;
   and of the comparison metrics (``panoptic_quality``, ``lesion_dice``,
   ``detection``, and ``evaluate`` with all of them), first call and median;
2. wall time of the reference implementation (PyPI ``ccmetrics==0.0.3``, import name
   ``CCMetrics``): ``CCDiceMetric``, ``CCHausdorffDistance95Metric`` and
   ``CCSurfaceDiceMetric`` each called once on one-hot tensors (1, 2, D, H, W), then
   ``cc_aggregate()``; one run (they are slow);
3. the speed-up, reference total / our median, both measured in this run;
4. peak memory above the inputs: each implementation runs once in a fresh
   subprocess (this script re-invoked with a hidden flag) that builds its inputs,
   warms up on a tiny case (imports, first-use allocations), resets the kernel's
   peak-RSS mark when ``/proc/self/clear_refs`` allows it, and reports the
   increase of its peak RSS (``VmHWM``, else ``ru_maxrss``) over one call on the
   big case; for ours also the peak of numpy allocations seen by ``tracemalloc``.
   The subprocesses run first, while this process is still small;
5. the adversarial case of the case-level metrics (:func:`lattice_case`: 5,978 one-voxel lesions under one
   362k-voxel prediction component), ``evaluate`` with one metric at a time and with all of them;
6. a sanity check that the per-component values of both implementations agree
   (max abs difference per metric; components matched through a GT voxel);
7. the speed-up on cases the engine was not tuned to (issue 44, point 3: at least 1000x on every
   foreground fraction), each given C-ordered and Fortran-ordered (``np.asfortranarray``, as NIfTI
   files store images; ``--orders`` picks): the benchmark case itself, a case with twice its foreground
   (:func:`double_case`: the same seed and lesion centres, every radius 1.28 times larger; the ratios of
   GT and predicted voxels are printed) and a case of long thin lesions (:func:`thin_case`: 40 tubes of
   radius 1-3 voxels and length 50-200 in nine orientations, a degraded prediction). Ours: the first call on
   the case and the median of ``--repeats`` further calls (min and max shown); CCMetrics 0.0.3: one run per
   case (its input is the same in both orders). The other processes' share of the machine's CPU during our
   timed calls is printed (read from ``/proc/stat``; above 10 % the timings are inflated).

Finally it prints the Markdown tables for the README and the machine info.

Run from the repository root, with the project's virtual environment active::

    python tests/benchmarks/bench_engine.py                  # everything (~2 minutes)
    python tests/benchmarks/bench_engine.py --repeats 9
    python tests/benchmarks/bench_engine.py --skip-reference # ours only
    python tests/benchmarks/bench_engine.py --skip-reference --only cases --orders C,F
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np

# measure the working tree's package, installed or not
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# the twice-foreground case's radii and the machine's busy CPU: one home, bench_pet.py (this script's folder)
from bench_pet import DOUBLE_RADIUS, _busy_seconds  # noqa: E402

import ccmetrics  # noqa: E402
from ccmetrics.synthetic import lesion_case  # noqa: E402

METRICS = ["dice", "nsd", "hd95"]
CASE_METRICS = ["pq", "lesion_dice", "detection"]
DIFF_TOLERANCE = 1e-4
MIB = 1024 * 1024


def quiet_warnings() -> None:
    """Silence MONAI's warnings about empty masks (missed lesions are expected here) and
    the deprecation notice MONAI 1.6 gives for the reference's call of ``get_mask_edges``."""
    warnings.filterwarnings("ignore", message=r"the (prediction|ground truth) of class", category=UserWarning)
    warnings.filterwarnings("ignore", message=r".*always_return_as_numpy", category=FutureWarning)


def build_case() -> tuple[np.ndarray, np.ndarray]:
    return lesion_case()


#: the tubes' directions in :func:`thin_case` (each jittered by up to 0.2 per axis): the axes, face and
#: space diagonals
TUBE_DIRECTIONS = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1), (1, -1, 0), (1, -1, 1))


def double_case() -> tuple[np.ndarray, np.ndarray]:
    """``lesion_case()`` with every radius 1.28 times larger: about twice the GT's and the prediction's voxels."""
    return lesion_case(radius_range=(1.5 * DOUBLE_RADIUS, 22.0 * DOUBLE_RADIUS))


def draw_tube(mask: np.ndarray, start, direction, length: float, radius: float) -> None:
    """Set to True, in place, the voxels of ``mask`` within ``radius`` of the segment from ``start`` along
    ``direction`` (any length, normalised here) over ``length`` voxels: a capsule, clipped to the image."""
    start = np.asarray(start, dtype=float)
    unit = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
    end = start + length * unit
    lo = np.maximum(np.floor(np.minimum(start, end) - radius).astype(int), 0)
    hi = np.minimum(np.ceil(np.maximum(start, end) + radius).astype(int) + 1, mask.shape)
    if np.any(lo >= hi):
        return
    grids = np.ogrid[tuple(slice(a, b) for a, b in zip(lo, hi))]
    rel = [g - c for g, c in zip(grids, start)]
    along = np.clip(sum(r * u for r, u in zip(rel, unit)), 0.0, length)
    inside = sum((r - along * u) ** 2 for r, u in zip(rel, unit)) <= radius**2
    mask[tuple(slice(a, b) for a, b in zip(lo, hi))] |= inside


def thin_case(shape=(400, 400, 300), n_lesions: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Long thin lesions (vessel- or airway-like): ``n_lesions`` tubes of radius 1-3 voxels and length 50-200 voxels
    at random centres, in the directions of :data:`TUBE_DIRECTIONS` in turn; tubes may cross. The prediction: every
    fifth tube missed, the others shifted by -1..1 voxel per axis, 0.6-1.1 times as long, 0.8, 1.0 or 1.3 times as
    thick in turn, every fourth broken in two; plus 5 false-positive tubes (length 20-80, radius 1-2).
    Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    gt = np.zeros(shape, dtype=bool)
    pred = np.zeros(shape, dtype=bool)
    for i in range(n_lesions):
        center = rng.uniform(0, shape)
        direction = np.array(TUBE_DIRECTIONS[i % len(TUBE_DIRECTIONS)], float) + rng.uniform(-0.2, 0.2, 3)
        length, radius = rng.uniform(50, 200), rng.uniform(1.0, 3.0)
        draw_tube(gt, center, direction, length, radius)
        if i % 5 == 4:
            continue  # missed
        start = center + rng.integers(-1, 2, 3)
        pred_length, pred_radius = length * rng.uniform(0.6, 1.1), radius * (0.8, 1.0, 1.3)[i % 3]
        if i % 4 == 1:  # broken in two
            gap = direction / np.linalg.norm(direction) * pred_length * 0.55
            draw_tube(pred, start, direction, pred_length * 0.45, pred_radius)
            draw_tube(pred, start + gap, direction, pred_length * 0.45, pred_radius)
        else:
            draw_tube(pred, start, direction, pred_length, pred_radius)
    for _ in range(5):
        draw_tube(pred, rng.uniform(0, shape), rng.normal(size=3), rng.uniform(20, 80), rng.uniform(1, 2))
    return gt, pred


#: the cases of point 7 (module docstring): name -> builder of (gt, pred)
CASES = {"benchmark (20 lesions)": build_case, "twice the foreground": double_case, "long thin lesions": thin_case}


def tiny_case() -> tuple[np.ndarray, np.ndarray]:
    """A small case for warming up imports and first-use code paths."""
    return lesion_case((40, 40, 30), n_lesions=4, radius_range=(2.0, 5.0), seed=1)


def image_diagonal(shape) -> float:
    return float(np.sqrt(np.sum(np.square(np.asarray(shape, dtype=np.float64)))))


# ----------------------------------------------------------------------------- ours


def run_ours(pred: np.ndarray, gt: np.ndarray):
    return ccmetrics.evaluate(gt=gt, pred=pred, metrics=METRICS)


def time_ours(pred: np.ndarray, gt: np.ndarray, repeats: int):
    """Return (cold seconds, list of warm seconds, result of the last call)."""
    start = time.perf_counter()
    result = run_ours(pred, gt)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run_ours(pred, gt)
        warm.append(time.perf_counter() - start)
    return cold, warm, result


def time_comparison_metrics(pred: np.ndarray, gt: np.ndarray, repeats: int) -> list[tuple[str, float, float]]:
    """(name, cold seconds, warm median seconds) of each comparison metric on the case."""
    calls = [
        ("panoptic_quality", lambda: ccmetrics.panoptic_quality(gt=gt, pred=pred)),
        ("lesion_dice", lambda: ccmetrics.lesion_dice(gt=gt, pred=pred)),
        ("detection", lambda: ccmetrics.detection(gt=gt, pred=pred)),
        ("evaluate, all metrics", lambda: ccmetrics.evaluate(gt=gt, pred=pred, metrics=METRICS + CASE_METRICS)),
    ]
    rows = []
    for name, call in calls:
        start = time.perf_counter()
        call()
        cold = time.perf_counter() - start
        warm = []
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            warm.append(time.perf_counter() - start)
        rows.append((name, cold, statistics.median(warm)))
    return rows


# ----------------------------------------------------------------------------- reference


def one_hot(mask: np.ndarray):
    """(1, 2, D, H, W) bool tensor: channel 0 background, 1 foreground.

    The reference only takes ``argmax`` over the channels, so a bool one-hot gives
    the same results as float32 with a quarter of the memory.
    """
    import torch

    fg = torch.from_numpy(mask)
    return torch.stack([~fg, fg]).unsqueeze(0)


def reference_metrics(shape) -> dict[str, object]:
    from CCMetrics import CCDiceMetric, CCHausdorffDistance95Metric, CCSurfaceDiceMetric

    return {
        "dice": CCDiceMetric(),
        "nsd": CCSurfaceDiceMetric(class_thresholds=[1]),
        "hd95": CCHausdorffDistance95Metric(metric_worst_score=image_diagonal(shape)),
    }


def run_reference(y_pred, y, shape) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Run the three reference classes; return seconds and per-component values per metric."""
    seconds, values = {}, {}
    for name, metric in reference_metrics(shape).items():
        start = time.perf_counter()
        metric(y_pred=y_pred, y=y)
        metric.cc_aggregate()
        seconds[name] = time.perf_counter() - start
        values[name] = np.atleast_1d(metric.cc_aggregate(mode="overall").double().numpy())
    return seconds, values


# ----------------------------------------------------------------------------- agreement


def compare(result, reference: dict[str, np.ndarray], gt: np.ndarray) -> list[str]:
    """Per metric: max abs difference of per-component values and count above tolerance.

    The reference numbers its Voronoi regions with ``scipy.ndimage.label`` (26-
    connectivity); each of our components is matched through its first GT voxel.
    Our infinite distances (region without prediction) become the worst distance,
    as the reference's ``cc_aggregate`` does.
    """
    from scipy import ndimage

    ref_labels, ref_n = ndimage.label(gt, structure=np.ones((3, 3, 3), dtype=bool))
    ours_labels, ours_n = ccmetrics.label_components(gt)
    first_voxel = ndimage.minimum_position(gt, ours_labels, index=np.arange(1, ours_n + 1))
    ref_index = np.array([ref_labels[p] for p in first_voxel]) - 1
    lines = [
        f"components: ours {ours_n}, reference {ref_n}; "
        f"same order: {bool(np.array_equal(ref_index, np.arange(ours_n)))}"
    ]
    for name in METRICS:
        ours = result.per_component[name].to_numpy(dtype=np.float64)
        ours = np.where(np.isfinite(ours), ours, result.worst_distance if name == "hd95" else 0.0)
        ref = reference[name]
        if len(ref) != ref_n:
            lines.append(f"{name:>5}: reference returned {len(ref)} values for {ref_n} components")
            continue
        diff = np.abs(ours - ref[ref_index])
        bad = np.flatnonzero(diff > DIFF_TOLERANCE) + 1
        lines.append(
            f"{name:>5}: max |ours - ref| = {diff.max():.3g}; "
            f"{len(bad)} of {ours_n} components differ by > {DIFF_TOLERANCE:g}"
            + (f" (components {bad.tolist()})" if len(bad) else "")
        )
    lines.append(
        "(expected: a few components may differ where a prediction voxel is equidistant from two "
        "lesions; the reference breaks such ties in EDT scan order, ours to the lowest label)"
    )
    return lines


# ----------------------------------------------------------------------------- memory


def _reset_peak_rss() -> bool:
    """Reset the peak-RSS mark to the current RSS (Linux >= 4.0); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mib() -> tuple[float, str]:
    """Peak RSS of this process in MiB, and where it was read.

    ``VmHWM`` is this address space's own peak (reset by :func:`_reset_peak_rss`).
    ``ru_maxrss`` is the fallback: on Linux it also keeps the peak of the parent
    that exec'd this process (``signal->maxrss`` survives ``execve``), so a child
    of a big parent would report the parent's peak.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024, "VmHWM"
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "ru_maxrss"  # kB on Linux


def memory_child(which: str) -> None:
    """Body of the measuring subprocess: print one JSON line with the peak increase."""
    quiet_warnings()
    gt, pred = build_case()
    small_gt, small_pred = tiny_case()
    if which == "ours":
        run_ours(small_pred, small_gt)
        call = lambda: run_ours(pred, gt)  # noqa: E731
    else:
        y_pred, y = one_hot(pred), one_hot(gt)
        shape = gt.shape
        del gt, pred
        run_reference(one_hot(small_pred), one_hot(small_gt), small_gt.shape)
        call = lambda: run_reference(y_pred, y, shape)  # noqa: E731
    del small_gt, small_pred
    gc.collect()
    reset = _reset_peak_rss()
    before, source = _peak_rss_mib()
    call()
    out = {
        "which": which,
        "peak_increase_mib": _peak_rss_mib()[0] - before,
        "baseline_mib": before,
        "peak_reset": reset,
        "source": source,
    }
    if which == "ours":
        gc.collect()
        tracemalloc.start()
        call()
        out["tracemalloc_peak_mib"] = tracemalloc.get_traced_memory()[1] / MIB
        tracemalloc.stop()
    print(json.dumps(out))


def measure_memory(which: str) -> dict | None:
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--memory-child", which], capture_output=True, text=True
    )
    if proc.returncode != 0:
        print(f"  memory subprocess for {which} failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def lattice_case() -> tuple[np.ndarray, np.ndarray]:
    """The adversarial case-level input: a 617 x 979 GT lattice of 5,978 one-voxel lesions (every 10th voxel)
    under a 60% random prediction that forms one ~362k-voxel component touching every lesion."""
    gt = np.zeros((617, 979), bool)
    gt[8::10, 5::10] = True
    pred = np.random.default_rng(0).random(gt.shape) < 0.6
    return pred, gt


def time_lattice(repeats: int) -> list[tuple[str, float, float]]:
    """(metric, first call, median of warm calls) of ``evaluate`` on :func:`lattice_case`, one metric at a time.

    Lesion Dice must not cost lesions x component size: every lesion shares the one component's k-d tree
    (``ccmetrics.metrics.lesions``). The first call includes compiling (or loading) the numba kernels."""
    pred, gt = lattice_case()
    out = []
    for metrics in (["dice"], ["detection"], ["pq"], ["lesion_dice"], ["dice", "nsd", "hd95", *CASE_METRICS]):
        start = time.perf_counter()
        ccmetrics.evaluate(gt=gt, pred=pred, metrics=metrics)
        cold = time.perf_counter() - start
        warm = []
        for _ in range(max(1, repeats // 2)):
            start = time.perf_counter()
            ccmetrics.evaluate(gt=gt, pred=pred, metrics=metrics)
            warm.append(time.perf_counter() - start)
        out.append(("+".join(metrics), cold, statistics.median(warm)))
    return out


# ----------------------------------------------------------------------------- other foreground fractions


def time_case(gt: np.ndarray, pred: np.ndarray, repeats: int) -> dict:
    """Ours on one case: the first call on it, ``repeats`` further calls, the other processes' CPU share during
    those calls (of the whole machine; NaN where ``/proc/stat`` cannot be read) and the last result."""
    start = time.perf_counter()
    result = run_ours(pred, gt)
    first = time.perf_counter() - start
    warm = []
    busy0, own0, begin = _busy_seconds(), time.process_time(), time.perf_counter()
    for _ in range(repeats):
        start = time.perf_counter()
        result = run_ours(pred, gt)
        warm.append(time.perf_counter() - start)
    wall, own, busy1 = time.perf_counter() - begin, time.process_time() - own0, _busy_seconds()
    others = (
        max(0.0, busy1 - busy0 - own) / (wall * (os.cpu_count() or 1))
        if busy0 is not None and busy1 is not None
        else float("nan")
    )
    return {"first": first, "warm": warm, "others": others, "result": result}


def foreground_cases(
    repeats: int, orders: list[str], skip_reference: bool, known: dict[str, float] | None = None
) -> list[dict]:
    """Point 7 of the module docstring: every case of :data:`CASES` in each memory order, ours and (once per case)
    CCMetrics 0.0.3; ``known``: reference seconds already measured in this run, by case name. Prints as it goes and
    returns the table's rows."""
    rows = []
    base_gt = base_pred = None
    for name, build in CASES.items():
        gt, pred = build()
        if base_gt is None:
            base_gt, base_pred = int(gt.sum()), int(pred.sum())
        n_gt = ccmetrics.label_components(gt)[1]
        print(
            f"\n-- {name}: shape {gt.shape}, {n_gt} GT components, foreground voxels: gt {int(gt.sum())} "
            f"({gt.sum() / base_gt:.2f}x the benchmark case's), pred {int(pred.sum())} "
            f"({pred.sum() / base_pred:.2f}x)"
        )
        ref_s = (known or {}).get(name)
        result = None
        timings = {}
        for order in orders:
            g, p = (np.asfortranarray(gt), np.asfortranarray(pred)) if order == "F" else (gt, pred)
            t = timings[order] = time_case(g, p, repeats)
            result = t["result"]
            warm = t["warm"]
            median = statistics.median(warm)
            print(
                f"ours, {order} order: first {t['first']:.3f} s; {repeats} runs: median {median:.3f} s "
                f"(min {min(warm):.3f}, max {max(warm):.3f}); other processes' CPU {100 * t['others']:.0f} %"
            )
            del g, p
        if ref_s is None and not skip_reference:
            y_pred, y = one_hot(pred), one_hot(gt)
            seconds, ref_values = run_reference(y_pred, y, gt.shape)
            del y_pred, y
            ref_s = sum(seconds.values())
            print(f"CCMetrics 0.0.3: {ref_s:.2f} s (" + ", ".join(f"{m} {s:.2f} s" for m, s in seconds.items()) + ")")
            if result is not None:
                for line in compare(result, ref_values, gt):
                    print("  " + line)
        for order, t in timings.items():
            median = statistics.median(t["warm"])
            rows.append(
                {
                    "case": name,
                    "order": order,
                    "gt": int(gt.sum()),
                    "pred": int(pred.sum()),
                    "components": n_gt,
                    "first": t["first"],
                    "median": median,
                    "min": min(t["warm"]),
                    "max": max(t["warm"]),
                    "others": t["others"],
                    "reference": ref_s,
                }
            )
            if ref_s is not None:
                print(f"speed-up, {order} order (reference / our median): {ref_s / median:.0f}x")
    return rows


def cases_table(rows: list[dict]) -> str:
    """The Markdown table of :func:`foreground_cases`' rows."""

    def ref(row):
        return "n/a" if row["reference"] is None else f"{row['reference']:.1f}"

    def speed_up(row):
        return "n/a" if row["reference"] is None else f"**{row['reference'] / row['median']:.0f}x**"

    lines = [
        "| case | order | GT / predicted voxels | GT components | ours, first call (s) | ours, median (min-max) (s) "
        "| CCMetrics 0.0.3 (s) | speed-up | other processes' CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['order']} | {r['gt']:,} / {r['pred']:,} | {r['components']} | {r['first']:.3f} "
            f"| {r['median']:.3f} ({r['min']:.3f}-{r['max']:.3f}) | {ref(r)} | {speed_up(r)} "
            f"| {100 * r['others']:.0f} % |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- report


def machine_info() -> list[str]:
    import scipy

    lines = [
        f"python {platform.python_version()} ({platform.machine()}, {platform.system()}), "
        f"os.cpu_count() = {os.cpu_count()}",
        f"numpy {np.__version__}, scipy {scipy.__version__}, ccmetrics {ccmetrics.__version__}",
    ]
    try:
        import monai
        import torch

        lines.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads), monai {monai.__version__}")
    except ImportError:
        lines.append("torch/monai not installed")
    return lines


def markdown_table(ours_s: float, ours_mem: dict | None, ref_s: float | None, ref_mem: dict | None) -> str:
    def mem(m):
        return "n/a" if m is None else f"{m['peak_increase_mib']:.0f}"

    rows = [
        "| | time (s) | peak memory above inputs (MB) |",
        "|---|---:|---:|",
        f"| ccmetrics evaluate (dice+nsd+hd95) | {ours_s:.2f} | {mem(ours_mem)} |",
    ]
    if ref_s is not None:
        rows.append(f"| CCMetrics 0.0.3 (3 classes) | {ref_s:.1f} | {mem(ref_mem)} |")
        rows.append(f"| speed-up | {ref_s / ours_s:.0f}x | |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed warm calls of evaluate (default 5)")
    parser.add_argument("--skip-reference", action="store_true", help="do not run CCMetrics 0.0.3")
    parser.add_argument(
        "--orders",
        default="C,F",
        help="memory orders of the cases of other foreground fractions: C, F or C,F (default; F as NIfTI gives)",
    )
    parser.add_argument(
        "--only", choices=["all", "cases"], default="all", help="cases: only the cases of other foreground fractions"
    )
    parser.add_argument("--memory-child", choices=["ours", "reference"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from ccmetrics.engine import warm_up

    warm_up()  # every kernel in numba's cache and loaded, as after `ccmetrics warm-up`: warm timings
    orders = [o.strip().upper() for o in args.orders.split(",") if o.strip()]
    if not orders or any(o not in ("C", "F") for o in orders):
        parser.error(f"--orders takes C, F or C,F, not {args.orders!r}")
    quiet_warnings()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    if args.only == "cases":
        print("== cases of other foreground fractions (issue 44, point 3)")
        rows = foreground_cases(args.repeats, orders, args.skip_reference)
        print("\n== machine")
        for line in machine_info():
            print(line)
        print("\n== README table: cases of other foreground fractions\n")
        print(cases_table(rows))
        return

    # memory first, in subprocesses started while this process is small
    print("(measuring peak memory in subprocesses first; the reference's takes about a minute)", flush=True)
    ours_mem = measure_memory("ours")
    ref_mem = None if args.skip_reference else measure_memory("reference")

    print("== case: ccmetrics.synthetic.lesion_case()")
    start = time.perf_counter()
    gt, pred = build_case()
    print(
        f"built in {time.perf_counter() - start:.2f} s; shape {gt.shape}, "
        f"{ccmetrics.label_components(gt)[1]} GT components, "
        f"foreground voxels: gt {int(gt.sum())}, pred {int(pred.sum())}"
    )

    print(f"\n== ccmetrics.evaluate(gt=gt, pred=pred, metrics={METRICS})")
    cold, warm, result = time_ours(pred, gt, args.repeats)
    ours_s = statistics.median(warm)
    print(f"cold (first call): {cold:.3f} s")
    print(f"warm, {args.repeats} runs: median {ours_s:.3f} s (min {min(warm):.3f}, max {max(warm):.3f})")
    print("CC means: " + ", ".join(f"{m} {result.cc[m]:.4f}" for m in METRICS))

    print("\n== comparison metrics (first call / median of warm calls)")
    for name, cold_s, warm_s in time_comparison_metrics(pred, gt, args.repeats):
        print(f"{name:>22}: {cold_s:.3f} s / {warm_s:.3f} s")

    print("\n== adversarial lattice: 617x979, 5,978 one-voxel lesions, one 362k-voxel prediction component")
    print("   (first call / median of warm calls; lesion_dice ran > 100 s before the shared trees)")
    for name, cold_s, warm_s in time_lattice(args.repeats):
        print(f"{name:>40}: {cold_s:.3f} s / {warm_s:.3f} s")

    ref_s = None
    if not args.skip_reference:
        print("\n== CCMetrics 0.0.3: CCDiceMetric, CCSurfaceDiceMetric, CCHausdorffDistance95Metric")
        y_pred, y = one_hot(pred), one_hot(gt)
        seconds, ref_values = run_reference(y_pred, y, gt.shape)
        del y_pred, y
        ref_s = sum(seconds.values())
        for name, s in seconds.items():
            print(f"{name:>5}: {s:.2f} s")
        print(f"total: {ref_s:.2f} s")
        print("CC means: " + ", ".join(f"{m} {ref_values[m].mean():.4f}" for m in METRICS))
        print(f"\nspeed-up (reference total / our median): {ref_s / ours_s:.1f}x")

        print("\n== agreement of per-component values")
        for line in compare(result, ref_values, gt):
            print(line)

    print("\n== cases of other foreground fractions (issue 44, point 3)")
    known = {} if ref_s is None else {next(iter(CASES)): ref_s}  # the benchmark case's reference ran above
    rows = foreground_cases(args.repeats, orders, args.skip_reference, known)

    print("\n== peak memory above the inputs (fresh subprocess, peak RSS increase)")
    if ours_mem:
        print(
            f"ours: {ours_mem['peak_increase_mib']:.0f} MB (inputs and imports: "
            f"{ours_mem['baseline_mib']:.0f} MB; numpy peak seen by tracemalloc: "
            f"{ours_mem['tracemalloc_peak_mib']:.0f} MB; {ours_mem['source']}, peak mark reset: "
            f"{ours_mem['peak_reset']})"
        )
    if ref_mem:
        print(
            f"reference: {ref_mem['peak_increase_mib']:.0f} MB (inputs and imports: "
            f"{ref_mem['baseline_mib']:.0f} MB; {ref_mem['source']}, peak mark reset: "
            f"{ref_mem['peak_reset']})"
        )

    print("\n== machine")
    for line in machine_info():
        print(line)
    print("\n== README table (MB = MiB)\n")
    print(markdown_table(ours_s, ours_mem, ref_s, ref_mem))
    print("\n== README table: cases of other foreground fractions\n")
    print(cases_table(rows))


if __name__ == "__main__":
    main()
