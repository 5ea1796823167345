"""Measure the peak memory of one case, per voxel: the factor of :mod:`ccmetrics.resources`.

Run from the repository root with the project's environment active::

    python tests/benchmarks/bench_memory.py --half               # sparse 128³-512³, heavy 128³-256³
    python tests/benchmarks/bench_memory.py --sizes 128 256      # some of them
    python tests/benchmarks/bench_memory.py --metrics dice       # other metrics (default: all six groups)

For each size and kind of case, two uint8 ``.nii.gz`` files (GT and prediction, 1 mm voxels) are
written, then a fresh Python process imports ccmetrics, nibabel and SimpleITK, takes its resident memory
(VmRSS) as the baseline, reads both files with :func:`ccmetrics.io.load_image` and runs
:func:`ccmetrics.evaluate`.  The case's peak is the larger of ``ru_maxrss`` (getrusage) and VmHWM, minus
the baseline: what the first case adds to a worker, numba's compilation of the paths it takes
included (about 190 MB for the heavy cases; a later case reuses the compiled code).  Kinds of case:

* ``sparse``: :func:`ccmetrics.synthetic.lesion_case` with 20 lesions (radii scaled with the size;
  0.2-2 % foreground), the data sets' usual case;
* ``heavy``: smooth random blobs thresholded to about 30 % foreground in the GT, the prediction
  the same field with another threshold and a shift (many large components, long surfaces);
* ``half`` (128³ and 256³ only, ``--half``): the same at about 50 %, to show how the factor grows
  with the foreground.

Heavy cases stop at ``--heavy-max`` (256³): they need about 130-160 bytes per voxel and a minute from
320³ on. An earlier engine crashed (SIGSEGV) on a 320³ heavy case; the engine of this release ran it
(``--sizes 320 --kinds heavy --heavy-max 320``: 4696 MB above the imports, 143 B per voxel, 67 s, covered
by both estimates).

Printed: one row per case with the peak above the baseline in MB, bytes per voxel (peak / voxels),
the estimates of :func:`ccmetrics.resources.estimate_case_bytes` from the headers alone and with the
foreground counts (``foreground=``), and whether both cover the peak.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ALL_METRICS = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]

CHILD = r"""
import gc, json, resource, sys, time
import numpy as np
import ccmetrics, nibabel, SimpleITK  # the imports: in the baseline
from ccmetrics import evaluate
from ccmetrics.io import load_image

def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0

def case():
    start = time.perf_counter()
    gt, pred = load_image(gt_path), load_image(pred_path)
    read = time.perf_counter() - start
    evaluate(pred.array, gt.array, metrics, spacing=gt.spacing)
    fg = (int(np.count_nonzero(gt.array)), int(np.count_nonzero(pred.array)))
    return read, time.perf_counter() - start, fg, int(gt.array.size)

gt_path, pred_path, metrics = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
base = status_bytes("VmRSS")  # after the imports: the first case pays numba's compilation
read, total, fg, voxels = case()
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, status_bytes("VmHWM")) - base
print(json.dumps({"base": base, "peak": peak, "read_s": read, "total_s": total, "fg": fg, "voxels": voxels}))
"""


def heavy_case(n: int, fraction: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Smooth random blobs: the GT is the top ``fraction`` of a smooth field, the prediction the top
    ``fraction`` of the field shifted by 2 voxels plus a finer smooth field (errors along the edges)."""
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    coarse = rng.standard_normal((max(n // 16, 4),) * 3).astype(np.float32)
    field = ndimage.zoom(coarse, n / coarse.shape[0], order=1)[:n, :n, :n]
    del coarse
    gt = field > np.quantile(field[::4, ::4, ::4], 1 - fraction)
    field = np.roll(field, 2, axis=0)
    coarse = rng.standard_normal((max(n // 8, 4),) * 3).astype(np.float32)
    field += 0.3 * ndimage.zoom(coarse, n / coarse.shape[0], order=1)[:n, :n, :n]  # smooth errors, no speckle
    pred = field > np.quantile(field[::4, ::4, ::4], 1 - fraction)
    return gt, pred


def make_case(kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    from ccmetrics.synthetic import lesion_case

    if kind == "sparse":
        scale = n / 400
        return lesion_case((n, n, n), 20, radius_range=(1.5 * max(scale, 1), 22 * scale), seed=1)
    return heavy_case(n, {"heavy": 0.3, "half": 0.5}[kind])


def measure(kind: str, n: int, metrics: list[str], folder: str) -> dict:
    from ccmetrics.io import read_header, save_image
    from ccmetrics.resources import estimate_case_bytes

    gt, pred = make_case(kind, n)
    paths = [os.path.join(folder, f"{kind}_{n}_{name}.nii.gz") for name in ("gt", "pred")]
    for path, mask in zip(paths, (gt, pred)):
        save_image(path, mask.view(np.uint8))
    del gt, pred
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *paths, ",".join(metrics)], capture_output=True, text=True, check=True
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    headers = read_header(paths[0]), read_header(paths[1])
    row["estimate"] = estimate_case_bytes(*headers, metrics)
    row["estimate_fg"] = estimate_case_bytes(*headers, metrics, foreground=sum(row["fg"]))
    for path in paths:
        os.remove(path)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 384, 512])
    parser.add_argument("--kinds", nargs="+", default=["sparse", "heavy"])
    parser.add_argument(
        "--heavy-max", type=int, default=256, help="largest size of the heavy cases (256³: about 2.2 GB at its peak)"
    )
    parser.add_argument("--half", action="store_true", help="also about 50 %% foreground at 128³ and 256³")
    parser.add_argument("--metrics", default=",".join(ALL_METRICS))
    args = parser.parse_args()
    metrics = args.metrics.split(",")
    plan = [(kind, n) for n in args.sizes for kind in args.kinds if kind == "sparse" or n <= args.heavy_max]
    if args.half:
        plan += [("half", n) for n in (128, 256)]
    print(f"metrics: {','.join(metrics)}; uint8 .nii.gz files; peak memory above the process after its imports")
    print(
        f"{'case':>12} {'voxels':>11} {'fg gt %':>7} {'fg pred %':>9} {'peak MB':>8} {'B/voxel':>8} "
        f"{'estimate MB':>11} {'with fg':>8} {'covers':>6} {'read s':>6} {'case s':>6}"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for kind, n in plan:
            start = time.perf_counter()
            row = measure(kind, n, metrics, folder)
            v = row["voxels"]
            per_voxel = row["peak"] / v
            worst = max(worst, per_voxel)
            covered = min(row["estimate"], row["estimate_fg"]) >= row["peak"]
            print(
                f"{kind + ' ' + str(n) + '³':>12} {v:>11,} "
                f"{100 * row['fg'][0] / v:>7.1f} {100 * row['fg'][1] / v:>9.1f} "
                f"{row['peak'] / 1e6:>8.1f} {per_voxel:>8.2f} {row['estimate'] / 1e6:>11.1f} "
                f"{row['estimate_fg'] / 1e6:>8.1f} {'yes' if covered else 'NO':>6} "
                f"{row['read_s']:>6.2f} {row['total_s']:>6.2f}"
                f"   (after imports {row['base'] / 1e6:.0f} MB; {time.perf_counter() - start:.0f} s in all)",
                flush=True,
            )
    print(f"worst: {worst:.2f} bytes per voxel")


if __name__ == "__main__":
    main()
