"""Measure the peak memory of one case: the factors of :mod:`ccmetrics.engine.memory`.

Run from the repository root with the project's environment active::

    python tests/benchmarks/bench_memory.py --half               # sparse 128³-512³, heavy 128³-256³, half
    python tests/benchmarks/bench_memory.py --sizes 128 256      # some of them
    python tests/benchmarks/bench_memory.py --adversarial        # many lesions, one huge component, fragments
    python tests/benchmarks/bench_memory.py --kinds lesions missed --sizes 64 96 128   # slopes per count
    python tests/benchmarks/bench_memory.py --kinds crossings --json rows.jsonl    # also one JSON object a row
    python tests/benchmarks/bench_memory.py --metrics dice       # other metrics (default: all six groups)

For each size and kind of case, two uint8 ``.nii.gz`` files (GT and prediction, 1 mm voxels) are
written, then a fresh Python process imports ccmetrics, nibabel and SimpleITK, takes its resident memory
(VmRSS) as the baseline and does what a worker of :func:`ccmetrics.evaluate_dataset` does with a case
(``--path worker``, the default): :func:`ccmetrics.campaign.dataset.evaluate_task` (read both files, evaluate,
build the rows and tables; with ``--skip-above`` as its memory limit, so that the engine's checks of
:mod:`ccmetrics.engine._budget` run as with ``--max-memory``), :func:`ccmetrics.campaign.records.encode_output` and
``pickle.dumps`` of the encoded output (what crosses the pipe); ``--path evaluate``: only
:func:`ccmetrics.formats.io.load_image` and :func:`ccmetrics.evaluate`, as the measurements of earlier releases.
The case's peak is VmHWM minus the baseline: what the first case adds to a worker, numba's compilation
of the paths it takes included (about 190 MB for the heavy cases; a later case reuses the compiled
code, and numba's cache spares it on a machine that has compiled before).  Kinds of case:

* ``sparse``: :func:`ccmetrics.synthetic.lesion_case` with 20 lesions (radii scaled with the size;
  0.2-2 % foreground), the data sets' usual case;
* ``heavy``: smooth random blobs thresholded to about 30 % foreground in the GT, the prediction
  the same field with another threshold and a shift (many large components, long surfaces);
* ``half`` (128³ and 256³ only, ``--half``): the same at about 50 %, to show how the factor grows
  with the foreground.

Adversarial kinds (``--adversarial``: each at ``--adversarial-sizes``, default 128, on an n x n x 3n/4
grid: 128 x 128 x 96 for 128), for what grows with the counts rather than the foreground:

* ``lesions``: a one-voxel GT lesion at every voxel whose indices are all even (196,608 at 128), the
  prediction the same: as many GT components, predicted components and overlap pairs as possible;
* ``missed``: the same GT, an empty prediction (GT components alone);
* ``spread``: one-voxel lesions 8 voxels apart (their BraTS dilations stay apart: one lesion each);
* ``huge``: one ellipsoid over half the image, the prediction shifted by 2 voxels (one huge component);
* ``fragments``: the same GT, the prediction its voxels whose indices are all even (many predicted
  fragments over one GT lesion);
* ``false-positives``: a GT ellipsoid of 2 %, the prediction the even-index voxels outside an
  ellipsoid of 6 % (many false-positive fragments);
* ``crossings``: GT lines along the first axis, predicted lines along the second (every predicted
  line crosses every GT line of its plane: overlap pairs beyond the components).

Heavy cases stop at ``--heavy-max`` (256³): they need about 130-160 bytes per voxel and a minute from
320³ on.  A case whose estimate (:func:`ccmetrics.engine.memory.estimate_case_bytes` with the counts) is
above ``--skip-above`` (default: half the available memory) is not run: the estimate is printed, with
``skipped``; the process of a case that runs may take that much address space above its imports, and a
case that needs more ends in a ``MemoryError`` (printed) instead of exhausting the machine.

Printed: one row per case with its counts (foreground voxels, GT components, predicted components as
the metrics label them, runs of both masks, with lesion_dice the bound of the voxels of the GT components'
dilations), the peak above the baseline in MB, and the estimates of
:func:`ccmetrics.engine.memory.estimate_case_bytes` from the headers alone, with the foreground counted
(what ``_over_memory`` checks before evaluating) and with the component counts too (what the engine
checks once it has labelled the components), and whether the last covers the peak.
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
ADVERSARIAL = ["lesions", "missed", "spread", "huge", "fragments", "false-positives", "crossings"]

CHILD = r"""
import gc, json, pickle, resource, sys, time
import numpy as np
import ccmetrics, nibabel, SimpleITK  # the imports: in the baseline
from ccmetrics import evaluate
from ccmetrics.campaign.dataset import CaseTask, EvalOptions, evaluate_task
from ccmetrics.formats.io import load_image
from ccmetrics.campaign.records import encode_output

def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0

gt_path, pred_path, metrics, path, cap = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4], int(sys.argv[5])
gc.collect()
base = status_bytes("VmRSS")  # after the imports: the first case pays numba's compilation
# address space capped above the imports: a case beyond the model fails with MemoryError instead of the machine
resource.setrlimit(resource.RLIMIT_AS, (status_bytes("VmSize") + cap, resource.RLIM_INFINITY))
start = time.perf_counter()
error, sent = "", 0
if path == "worker":  # what a worker does: evaluate_task, encode_output, pickle over the pipe
    options = EvalOptions(metrics=tuple(metrics), max_case_bytes=cap)  # checked as with --max-memory, the cap
    encoded = encode_output(evaluate_task(CaseTask("case", gt_path, pred_path), options))
    sent = len(pickle.dumps(encoded, protocol=pickle.HIGHEST_PROTOCOL))
    error = encoded["rows"][0].get("error", "")
else:
    gt, pred = load_image(gt_path), load_image(pred_path)
    evaluate(pred.array, gt.array, metrics, spacing=gt.spacing)
peak = status_bytes("VmHWM") - base  # own peak: ru_maxrss carries the parent's RSS across exec
print(json.dumps({"base": base, "peak": peak, "total_s": time.perf_counter() - start, "sent": sent, "error": error}))
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


def lattice(shape: tuple[int, ...], step: int = 2) -> np.ndarray:
    """The voxels whose indices are all multiples of ``step``: one-voxel components (26-connectivity) for step 2."""
    mask = np.zeros(shape, bool)
    mask[tuple(slice(0, None, step) for _ in shape)] = True
    return mask


def ellipsoid(shape: tuple[int, ...], fraction: float) -> np.ndarray:
    """The centred ellipsoid (semi-axes in proportion to the shape) of about ``fraction`` of the image."""
    axes = np.ogrid[tuple(slice(0, s) for s in shape)]
    r2 = sum(((a - (s - 1) / 2) / (s / 2)) ** 2 for a, s in zip(axes, shape))
    return r2 <= (fraction * 6 / np.pi) ** (2 / 3)


def adversarial_case(kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The adversarial cases of the module docstring, on an n x n x 3n/4 grid."""
    shape = (n, n, 3 * n // 4)
    if kind in ("lesions", "missed"):
        gt = lattice(shape)
        return gt, (gt.copy() if kind == "lesions" else np.zeros(shape, bool))
    if kind == "spread":
        gt = lattice(shape, 8)
        return gt, gt.copy()
    if kind == "huge":
        gt = ellipsoid(shape, 0.5)
        return gt, np.roll(gt, 2, axis=0)
    if kind == "fragments":
        gt = ellipsoid(shape, 0.5)
        return gt, gt & lattice(shape)
    if kind == "false-positives":
        return ellipsoid(shape, 0.02), lattice(shape) & ~ellipsoid(shape, 0.06)
    if kind == "crossings":
        gt, pred = np.zeros(shape, bool), np.zeros(shape, bool)
        gt[:, ::2, ::2] = True  # lines along axis 0
        pred[::2, :, ::2] = True  # lines along axis 1: each crosses every GT line of its plane
        return gt, pred
    raise ValueError(f"unknown kind {kind!r}")


def make_case(kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    from ccmetrics.synthetic import lesion_case

    if kind == "sparse":
        scale = n / 400
        return lesion_case((n, n, n), 20, radius_range=(1.5 * max(scale, 1), 22 * scale), seed=1)
    if kind in ("heavy", "half"):
        return heavy_case(n, {"heavy": 0.3, "half": 0.5}[kind])
    return adversarial_case(kind, n)


def case_counts(gt: np.ndarray, pred: np.ndarray, metrics: list[str]):
    """The counts the engine's memory check sees (:class:`ccmetrics.engine.memory.ComponentCounts`), counted here
    from the arrays: GT components, the prediction's components where the metrics label them (pq,
    lesion_dice, detection), the runs of both masks, the GT's voxels and, with lesion_dice, the bound of its
    components' dilations (:func:`ccmetrics.engine.memory.dilated_voxels`)."""
    from ccmetrics.engine.components import ComponentCache, Runs
    from ccmetrics.engine.ground_truth import GroundTruth
    from ccmetrics.engine.memory import ComponentCounts, dilated_voxels

    truth = GroundTruth(gt)
    sites = truth.geometry
    labelled = bool({"pq", "lesion_dice", "detection"} & set(metrics))
    return ComponentCounts(
        gt=truth.found.n,
        pred=ComponentCache(pred)().n if labelled else 0,
        runs=len(sites.runs) + len(Runs(np.flatnonzero(pred), pred.shape)),
        voxels=int(gt.size),
        ndim=gt.ndim,
        gt_voxels=len(sites.coords),
        dilated=dilated_voxels(sites.coords, sites.found.starts, gt.shape) if "lesion_dice" in metrics else 0,
    )


def measure(kind: str, n: int, metrics: list[str], folder: str, path: str, skip_above: float) -> dict:
    from ccmetrics.engine.memory import estimate_case_bytes
    from ccmetrics.formats.io import read_header, save_image

    gt, pred = make_case(kind, n)
    paths = [os.path.join(folder, f"{kind}_{n}_{name}.nii.gz") for name in ("gt", "pred")]
    for p, mask in zip(paths, (gt, pred)):
        save_image(p, mask.view(np.uint8))
    row: dict = {"fg": (int(np.count_nonzero(gt)), int(np.count_nonzero(pred))), "voxels": int(gt.size)}
    row["counts"] = counts = case_counts(gt, pred, metrics)
    del gt, pred
    headers = read_header(paths[0]), read_header(paths[1])
    row["estimate"] = estimate_case_bytes(*headers, metrics)
    row["estimate_fg"] = estimate_case_bytes(*headers, metrics, foreground=sum(row["fg"]))
    row["estimate_cc"] = estimate_case_bytes(*headers, metrics, foreground=sum(row["fg"]), components=counts)
    if row["estimate_cc"] <= skip_above:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, *paths, ",".join(metrics), path, str(int(skip_above))],
            capture_output=True,
            text=True,
            check=True,
        )
        row.update(json.loads(out.stdout.strip().splitlines()[-1]))
    for p in paths:
        os.remove(p)
    return row


def main() -> None:
    from ccmetrics.engine.memory import available_memory_bytes

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 384, 512])
    parser.add_argument("--kinds", nargs="+", default=["sparse", "heavy"], choices=["sparse", "heavy", *ADVERSARIAL])
    parser.add_argument(
        "--heavy-max", type=int, default=256, help="largest size of the heavy cases (256³: about 2.2 GB at its peak)"
    )
    parser.add_argument("--half", action="store_true", help="also about 50 %% foreground at 128³ and 256³")
    parser.add_argument("--adversarial", action="store_true", help="also the adversarial kinds (module docstring)")
    parser.add_argument("--adversarial-sizes", type=int, nargs="+", default=[128])
    parser.add_argument("--metrics", default=",".join(ALL_METRICS))
    parser.add_argument("--path", choices=["worker", "evaluate"], default="worker")
    parser.add_argument("--skip-above", type=float, default=None, help="bytes; default: half the available memory")
    parser.add_argument("--json", help="also append each row to this file, one JSON object a line")
    args = parser.parse_args()
    metrics = args.metrics.split(",")
    skip_above = args.skip_above if args.skip_above is not None else available_memory_bytes() / 2
    plan = [(kind, n) for n in args.sizes for kind in args.kinds if kind != "heavy" or n <= args.heavy_max]
    if args.half:
        plan += [("half", n) for n in (128, 256)]
    if args.adversarial:
        plan += [(kind, n) for n in args.adversarial_sizes for kind in ADVERSARIAL]
    print(f"metrics: {','.join(metrics)}; uint8 .nii.gz files; path: {args.path}; peak above the process's imports")
    print(
        f"{'case':>20} {'voxels':>11} {'fg gt+pred':>11} {'gt cc':>7} {'pred cc':>7} {'runs':>9} {'dilated':>11} "
        f"{'peak MB':>8} {'headers':>8} {'with fg':>8} {'with cc':>8} {'covers':>6} {'case s':>6}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for kind, n in plan:
            start = time.perf_counter()
            row = measure(kind, n, metrics, folder, args.path, skip_above)
            c = row["counts"]
            ran = "peak" in row
            peak = f"{row['peak'] / 1e6:>8.1f}" if ran else f"{'skipped':>8}"
            covered = ("yes" if row["estimate_cc"] >= row["peak"] else "NO") if ran else "-"
            label = kind + " " + (f"{n}³" if kind in ("sparse", "heavy", "half") else f"{n}x{n}x{3 * n // 4}")
            print(
                f"{label:>20} {row['voxels']:>11,} {sum(row['fg']):>11,} {c.gt:>7,} {c.pred:>7,} {c.runs:>9,} "
                f"{c.dilated:>11,} "
                f"{peak} {row['estimate'] / 1e6:>8.1f} {row['estimate_fg'] / 1e6:>8.1f} "
                f"{row['estimate_cc'] / 1e6:>8.1f} {covered:>6} {row.get('total_s', 0.0):>6.2f}"
                + (f"   error: {row['error'][:80]}" if row.get("error") else "")
                + f"   ({time.perf_counter() - start:.0f} s in all)",
                flush=True,
            )
            if args.json:
                with open(args.json, "a") as f:
                    record = {k: v for k, v in row.items() if k != "counts"}
                    record.update(kind=kind, n=n, metrics=metrics, path=args.path, counts=vars(c))
                    f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
