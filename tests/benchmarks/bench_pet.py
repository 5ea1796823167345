"""Benchmark the PET quantification kernels (``ccmetrics.metrics.pet``) against ``evaluate(dice, nsd, hd95)``.

The case: ``ccmetrics.synthetic.lesion_case()`` (400 x 400 x 300, 20 ellipsoidal lesions, a degraded
prediction with false positives) at autoPET's spacing (2.0364 x 2.0364 x 3 mm), and a float32 scan:
gamma-distributed background (SUV about 1) with every GT lesion and false positive filled with its own
uptake (SUV 2-20) plus noise. Timed, each the median of ``--repeats`` calls after one warm-up call:

1. the shared work the ``pet`` group takes as input, which a case evaluated for ``dice,nsd,hd95`` has
   already done (GT and prediction components as sites; the Voronoi region of every predicted voxel,
   the way the engine finds it: the GT label inside the GT, the nearest site outside);
2. each kernel: ``lesion_uptake`` (GT and prediction components), ``suv_peak`` (both), ``region_uptake``,
   ``patient_uptake`` (both), ``centroids_mm`` + ``dmax_mm`` (both), ``extent_mm`` (both),
   ``hottest_voxel_detected``, and ``agreement`` on the lesions;
3. ``ccmetrics.evaluate(pred=..., gt=..., metrics=["dice", "nsd", "hd95"], spacing=...)``.

It prints a Markdown table and the ratio (pet kernels) / (evaluate dice,nsd,hd95): issue 41 asks for at
most 0.5 with the shared work done once for both.

Then, end to end (issue 41, point 7: "pet adds at most half the time of dice,nsd,hd95"), on four cases:
the case above, and a case with twice the foreground (the same 20 lesion centres and seed, every radius
1.28 times larger: about twice the GT's and the prediction's voxels, the ratios printed), each with the masks
and the scan C-ordered and Fortran-ordered (``np.asfortranarray`` of all three). For each:
``ccmetrics.evaluate(gt=..., pred=..., metrics=["dice", "nsd", "hd95"], spacing=...)`` against the same with
``metrics=[..., "pet"], image=scan``, after one warm-up call of each, then ``--rounds`` rounds (default 3),
the two calls in turn in each round; the best (shortest) time of each. The Markdown table gives both times,
the time pet adds and its ratio to the dice,nsd,hd95 time (target: at most 0.5), and the CPU time other
processes took during the case's timed rounds, as a share of the machine (read from ``/proc/stat``; above
10 % the timings are inflated by the contention).

Run from the repository root, with the project's virtual environment active::

    python tests/benchmarks/bench_pet.py               # about two minutes on 2 cores
    python tests/benchmarks/bench_pet.py --repeats 3 --rounds 5
    python tests/benchmarks/bench_pet.py --only end-to-end
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import ccmetrics
from ccmetrics.engine.components import find_sites
from ccmetrics.engine.partition import assign_nearest_flat, site_surfaces
from ccmetrics.metrics import pet
from ccmetrics.metrics.pet_agreement import agreement
from ccmetrics.synthetic import lesion_case

SPACING = (2.0364, 2.0364, 3.0)
#: the lesion radii of the case with twice the foreground, relative to ``lesion_case``'s (1.5, 22) voxels
DOUBLE_RADIUS = 1.28
BASE_METRICS = ["dice", "nsd", "hd95"]


def scan_for(gt: np.ndarray, pred: np.ndarray, seed: int = 0) -> np.ndarray:
    """A float32 SUV scan: background about 1, each lesion and false positive with its own uptake."""
    rng = np.random.default_rng(seed)
    image = rng.gamma(4.0, 0.25, size=gt.shape).astype(np.float32)
    sites = find_sites(gt | pred)
    for k in range(sites.n):
        voxels = sites.flat_index[sites.starts[k] : sites.starts[k + 1]]
        image.reshape(-1)[voxels] += np.float32(rng.uniform(2, 20)) * rng.uniform(0.7, 1.3, len(voxels))
    return image


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    out = fn()  # warm-up (imports, first-use allocations)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def regions_of(pred_flat: np.ndarray, gt_sites, shape) -> np.ndarray:
    """The Voronoi region of each predicted voxel: the GT label inside the GT, the nearest site outside."""
    region = gt_sites.labels_at(pred_flat)
    outside = np.flatnonzero(region == 0)
    if len(outside):
        coords, labels = site_surfaces(gt_sites)
        region[outside] = assign_nearest_flat(pred_flat[outside], shape, coords, labels, SPACING)
    return region


def _busy_seconds() -> float | None:
    """Machine-wide busy CPU seconds (all CPUs) from ``/proc/stat``; None where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (fields + [0] * 7)[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    return time.process_time()


def end_to_end(gt: np.ndarray, pred: np.ndarray, image: np.ndarray, rounds: int) -> dict[str, float]:
    """Best-of-``rounds`` wall times of evaluate(dice, nsd, hd95) and of the same with pet, after a warm-up of each."""
    base = lambda: ccmetrics.evaluate(gt=gt, pred=pred, metrics=BASE_METRICS, spacing=SPACING)  # noqa: E731
    with_pet = lambda: ccmetrics.evaluate(  # noqa: E731
        gt=gt, pred=pred, metrics=[*BASE_METRICS, "pet"], image=image, spacing=SPACING
    )
    base(), with_pet()
    times: dict[str, list[float]] = {"base": [], "pet": []}
    busy0, own0, start = _busy_seconds(), _own_seconds(), time.perf_counter()
    for _ in range(rounds):
        for name, fn in (("base", base), ("pet", with_pet)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    wall, own, busy1 = time.perf_counter() - start, _own_seconds() - own0, _busy_seconds()
    others = max(0.0, busy1 - busy0 - own) / (wall * (os.cpu_count() or 1)) if busy0 and busy1 else float("nan")
    return {"base": min(times["base"]), "pet": min(times["pet"]), "others": others}


def end_to_end_table(shape: tuple[int, ...], rounds: int) -> None:
    """The end-to-end comparison (module docstring), printed as a Markdown table."""
    small = lesion_case(shape)
    large = lesion_case(shape, radius_range=(1.5 * DOUBLE_RADIUS, 22.0 * DOUBLE_RADIUS))
    cases = [("20 lesions", *small, scan_for(*small)), ("twice the foreground", *large, scan_for(*large))]
    print(
        f"\n### End to end: evaluate(dice, nsd, hd95) with and without pet\n\n"
        f"shape {tuple(shape)}, spacing {SPACING} mm; best of {rounds} rounds after a warm-up; "
        f"the second case has {large[0].sum() / small[0].sum():.2f} times the GT's voxels and "
        f"{large[1].sum() / small[1].sum():.2f} times the prediction's\n"
    )
    print(
        "| case | order | GT voxels | predicted voxels | dice,nsd,hd95 (s) | + pet (s) | pet adds (s) | ratio | "
        "other processes' CPU |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    worst = 0.0
    for name, gt, pred, image in cases:
        for order in ("C", "F"):
            if order == "F":
                gt, pred, image = np.asfortranarray(gt), np.asfortranarray(pred), np.asfortranarray(image)
            t = end_to_end(gt, pred, image, rounds)
            added = t["pet"] - t["base"]
            worst = max(worst, added / t["base"])
            print(
                f"| {name} | {order} | {int(gt.sum())} | {int(pred.sum())} | {t['base']:.3f} | {t['pet']:.3f} | "
                f"{added:.3f} | {added / t['base']:.2f} | {100 * t['others']:.0f} % |"
            )
    print(f"\nlargest ratio (pet adds / dice,nsd,hd95): {worst:.2f} (issue 41's target: at most 0.50)")


def kernel_table(shape: tuple[int, ...], repeats: int) -> None:
    """The shared work and each kernel, timed alone (module docstring, 1-3), printed as a Markdown table."""
    gt, pred = lesion_case(shape)
    image = scan_for(gt, pred)
    rows: list[tuple[str, float]] = []

    def run(name: str, fn: Callable[[], Any]) -> Any:
        seconds, out = timed(fn, repeats)
        rows.append((name, seconds))
        return out

    # 1. the shared work (done by the case already)
    gt_sites = run("shared: GT components (sites)", lambda: find_sites(gt))
    pred_sites = run("shared: prediction components (sites)", lambda: find_sites(pred))
    pred_flat = np.sort(pred_sites.flat_index)
    region = run("shared: Voronoi region of each predicted voxel", lambda: regions_of(pred_flat, gt_sites, gt.shape))
    shared = sum(s for _, s in rows)

    # 2. the kernels
    n_gt, n_pred = gt_sites.n, pred_sites.n
    kernels_start = len(rows)
    gt_u = run("lesion_uptake (GT)", lambda: pet.lesion_uptake(image, gt_sites, None, SPACING))
    run("lesion_uptake (prediction)", lambda: pet.lesion_uptake(image, pred_sites, None, SPACING))
    run("suv_peak (GT)", lambda: pet.suv_peak(image, gt_sites, None, SPACING))
    run("suv_peak (prediction)", lambda: pet.suv_peak(image, pred_sites, None, SPACING))
    reg = run("region_uptake", lambda: pet.region_uptake(image, pred_flat, region, n_gt, SPACING))
    run(
        "patient_uptake (GT, prediction)",
        lambda: (pet.patient_uptake(image, gt_sites, SPACING), pet.patient_uptake(image, pred_sites, SPACING)),
    )
    run(
        "centroids_mm + dmax_mm (GT, prediction)",
        lambda: (
            pet.dmax_mm(pet.centroids_mm(gt_sites, None, SPACING)),
            pet.dmax_mm(pet.centroids_mm(pred_sites, None, SPACING)),
        ),
    )
    run("extent_mm (GT, prediction)", lambda: (pet.extent_mm(gt_sites, SPACING), pet.extent_mm(pred_sites, SPACING)))
    run("hottest_voxel_detected", lambda: pet.hottest_voxel_detected(gt_u["hot_index"], pred_flat))
    run(
        "agreement (4 lesion measures)",
        lambda: [agreement(gt_u[k], reg["pred_" + k]) for k in ("suv_max", "suv_mean", "mtv_ml", "tlg")],
    )
    kernels = sum(s for _, s in rows[kernels_start:])

    # 3. the reference: evaluate with the default metrics
    evaluate_s, _ = timed(lambda: ccmetrics.evaluate(pred=pred, gt=gt, metrics=BASE_METRICS, spacing=SPACING), repeats)

    print(
        f"### The kernels\n\ncase: {gt.shape}, spacing {SPACING} mm, {n_gt} GT lesions ({int(gt.sum())} voxels), "
        f"{n_pred} predicted components ({int(pred.sum())} voxels); median of {repeats}\n"
    )
    print("| step | seconds |\n| --- | ---: |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.4f} |")
    print(f"| **pet kernels, total** | **{kernels:.3f}** |")
    print(f"| shared work, if not already done | {shared:.3f} |")
    print(f"| `evaluate(dice, nsd, hd95)` | {evaluate_s:.3f} |")
    print(
        f"\npet kernels / evaluate: {kernels / evaluate_s:.2f}; "
        f"with the shared work redone: {(kernels + shared) / evaluate_s:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="calls per kernel (median), default 5")
    parser.add_argument("--rounds", type=int, default=3, help="end-to-end rounds (best of), default 3")
    parser.add_argument("--shape", type=int, nargs=3, default=(400, 400, 300))
    parser.add_argument("--only", choices=("kernels", "end-to-end"), help="run one of the two parts")
    args = parser.parse_args()
    from ccmetrics.engine import warm_up

    warm_up()  # every kernel in numba's cache and loaded, as after `ccmetrics warm-up`: warm timings
    if args.only != "end-to-end":
        kernel_table(tuple(args.shape), args.repeats)
    if args.only != "kernels":
        end_to_end_table(tuple(args.shape), args.rounds)
    print(
        f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}, numpy {np.__version__}"
    )


if __name__ == "__main__":
    main()
