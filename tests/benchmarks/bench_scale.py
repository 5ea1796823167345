"""Benchmark the engine on the inputs of the engine's second pass (issue targets in brackets).

Run from the repository root with the project's environment active::

    python tests/benchmarks/bench_scale.py            # everything but the 1024³ case
    python tests/benchmarks/bench_scale.py --huge     # also the 1024³ case (about 2 GB of inputs)
    python tests/benchmarks/bench_scale.py --foreground-only 7   # measurement 2 alone, 7 times

Measures, on this machine:

1. dense ``voronoi_partition`` against the brute-force per-component EDT loop, K = 20 sites, anisotropic
   spacing, 160×160×120, and the 400×400×300 partition alone [≥ 10× faster; ≤ 5 s];
2. an almost all-foreground prediction, in units of one full-volume EDT of the same image, timed in turn with
   the EDT [≤ 2];
3. 1000 small lesions evaluated (dice, nsd, hd95): cc3d labelling passes of the GT [≤ 8];
4. the 400×400×300 / 20-lesion case of the engine benchmark [≤ 0.15 s, median of 5];
5. (``--huge``) a 1024³ uint8 case with 40 lesions: time and peak memory above the two inputs [≤ 2 GB], for
   dice, nsd, hd95 and for lesion_dice alone (no image-sized label map), each in a fresh process.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import ndimage


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def _status_mib(field: str) -> float:
    """A memory field of /proc/self/status (VmRSS, VmHWM) in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def huge_case(metrics: tuple[str, ...] = ("dice", "nsd", "hd95")) -> None:
    """1024³ uint8 with 40 lesions: time and peak resident memory above the two inputs (VmHWM - VmRSS before)."""
    from ccmetrics import evaluate
    from ccmetrics.synthetic import lesion_case

    gt, pred = lesion_case((1024, 1024, 1024), n_lesions=40, radius_range=(3, 40), seed=1)
    gt, pred = gt.view(np.uint8), pred.view(np.uint8)
    gt.sum(), pred.sum()  # every page of the inputs resident
    evaluate(pred[:8], gt[:8], ["dice"])  # imports and first-call set-up outside the measurement
    before = _status_mib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:  # reset the high-water mark to the current RSS
        f.write("5")
    start = time.perf_counter()
    evaluate(pred, gt, list(metrics))
    seconds = time.perf_counter() - start
    above = _status_mib("VmHWM") - before
    print(
        f"1024³ uint8, 40 lesions ({', '.join(metrics)})\t{seconds:.1f} s, peak {above:.0f} MiB above the inputs "
        f"(and imports: {before:.0f} MiB resident before)\t≤ 2 GB above the inputs"
    )


def all_foreground(runs_each: int = 9):
    """Measurement 2: (seconds of one EDT, regions, dice, dice+nsd+hd95, voxels outside the GT), medians of
    ``runs_each`` runs interleaved with the EDT so that all see the same machine."""
    from ccmetrics import evaluate
    from ccmetrics.engine.components import find_sites
    from ccmetrics.engine.partition import assign_nearest_flat, site_surfaces
    from ccmetrics.synthetic import lesion_case

    spacing = (0.8, 0.8, 2.0)
    gt, _ = lesion_case((160, 160, 120), n_lesions=12, radius_range=(2, 10), seed=5)
    pred = np.ones_like(gt)
    pred[:4] = False
    found = find_sites(gt)
    surface, surface_labels = site_surfaces(found, found.label_map(flat=True))
    outside = np.flatnonzero(pred & ~gt)
    runs = {
        "edt": lambda: ndimage.distance_transform_edt(~gt, sampling=spacing),
        "regions": lambda: assign_nearest_flat(outside, gt.shape, surface, surface_labels, spacing),
        "dice": lambda: evaluate(pred, gt, ["dice"], spacing=spacing),
        "all": lambda: evaluate(pred, gt, ["dice", "nsd", "hd95"], spacing=spacing),
    }
    runs["all"]()  # warm-up
    seconds = {key: [] for key in runs}
    for _ in range(runs_each):
        for key, fn in runs.items():
            seconds[key].append(best_of(fn, 1)[0])
    medians = tuple(float(np.median(seconds[key])) for key in ("edt", "regions", "dice", "all"))
    return medians + (len(outside),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--huge", action="store_true", help="also the 1024³ case")
    parser.add_argument("--huge-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--huge-metrics", default="dice,nsd,hd95", help=argparse.SUPPRESS)
    parser.add_argument(
        "--foreground-only",
        type=int,
        metavar="N",
        help="only measurement 2 (dice, nsd, hd95 in EDT passes), repeated N times",
    )
    args = parser.parse_args()
    if args.huge_only:
        return huge_case(tuple(args.huge_metrics.split(",")))
    if args.foreground_only:
        ratios = []
        for run in range(args.foreground_only):
            t_edt, _, _, t_fg, _ = all_foreground()
            ratios.append(t_fg / t_edt)
            print(
                f"run {run + 1}: one EDT {t_edt:.3f} s, evaluate (dice, nsd, hd95) {t_fg:.3f} s = "
                f"{ratios[-1]:.2f} EDT passes (medians of 9 interleaved runs)",
                flush=True,
            )
        print(f"{len(ratios)} runs: {min(ratios):.2f}-{max(ratios):.2f} EDT passes, median {np.median(ratios):.2f}")
        return None

    import ccmetrics.engine.components as components
    from ccmetrics import evaluate, label_components, voronoi_partition
    from ccmetrics.synthetic import lesion_case

    rows = []
    spacing = (0.8, 0.8, 2.0)

    # 1. dense partition vs the per-component EDT loop
    gt, _ = lesion_case((160, 160, 120), n_lesions=20, radius_range=(2, 10), seed=2)
    labels, k = label_components(gt)

    def loop():
        best = np.full(gt.shape, np.inf)
        out = np.zeros(gt.shape, np.int32)
        for c in range(1, k + 1):
            d = ndimage.distance_transform_edt(labels != c, sampling=spacing)
            closer = d < best
            best[closer], out[closer] = d[closer], c
        return out

    t_loop = best_of(loop, 1)[0]
    start = time.perf_counter()
    voronoi_partition(np.array([[1, 0, 0, 1]], bool))  # the first call in a process loads the compiled kernels
    t_first = time.perf_counter() - start
    t_dense = best_of(lambda: voronoi_partition(gt, spacing=spacing), 3)[1]
    rows.append(
        (
            f"dense partition, 160×160×120, K = {k}, spacing {spacing}, median of 3",
            f"{t_dense:.2f} s vs loop "
            f"{t_loop:.2f} s: {t_loop / t_dense:.1f}× (first call in a process: +{t_first:.2f} s)",
            "≥ 10×",
        )
    )
    big, _ = lesion_case((400, 400, 300), n_lesions=20, seed=0)
    t_big = best_of(lambda: voronoi_partition(big, spacing=spacing), 3)[1]
    rows.append(("dense partition, 400×400×300, 20 lesions, median of 3", f"{t_big:.2f} s", "≤ 5 s"))

    # 2. an almost all-foreground prediction, in full-volume EDT passes of the same image
    t_edt, t_regions, t_dice, t_fg, n_outside = all_foreground()
    name = "all-foreground prediction, 160×160×120, 12 lesions, medians of 9 interleaved runs"
    rows.append(
        (
            f"{name}: region labels of the {n_outside} voxels outside the GT",
            f"{t_regions:.2f} s = {t_regions / t_edt:.2f} EDT passes (one EDT {t_edt:.3f} s)",
            "≤ 2 passes",
        )
    )
    rows.append((f"{name}: `evaluate` (dice)", f"{t_dice:.2f} s = {t_dice / t_edt:.2f} EDT passes", "≤ 2 passes"))
    rows.append(
        (f"{name}: `evaluate` (dice, nsd, hd95)", f"{t_fg:.3f} s = {t_fg / t_edt:.2f} EDT passes", "≤ 2 passes")
    )

    # 3. 1000 small lesions: labelling passes
    gt, pred = lesion_case((300, 300, 200), n_lesions=1000, radius_range=(1.0, 3.0), seed=0)
    calls = [0]
    original = components.cc3d_label

    def counting(*a, **kw):
        calls[0] += 1
        return original(*a, **kw)

    components.cc3d_label = counting
    try:
        start = time.perf_counter()
        result = evaluate(pred, gt, ["dice", "nsd", "hd95"])
        t_many = time.perf_counter() - start
    finally:
        components.cc3d_label = original
    rows.append(
        (
            f"{result.n_components} small lesions, 300×300×200 (dice, nsd, hd95)",
            f"{calls[0]} cc3d pass(es), {t_many:.2f} s",
            "≤ 8 passes",
        )
    )

    # 4. the engine benchmark case
    gt, pred = lesion_case()
    evaluate(pred, gt, ["dice", "nsd", "hd95"])  # warm-up
    _, median = best_of(lambda: evaluate(pred, gt, ["dice", "nsd", "hd95"]), 5)
    rows.append(("400×400×300, 20 lesions (dice, nsd, hd95), median of 5", f"{median:.3f} s", "≤ 0.15 s"))

    # 5. the 1024³ case, in a fresh process so that its peak is its own
    if args.huge:
        import subprocess
        import sys

        for metrics in ("dice,nsd,hd95", "lesion_dice"):  # each in its own process: its own peak
            done = subprocess.run(
                [sys.executable, __file__, "--huge-only", "--huge-metrics", metrics],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(tuple(done.stdout.strip().split("\t")))

    print("| input | measured | target |\n|---|---|---|")
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")


if __name__ == "__main__":
    main()
