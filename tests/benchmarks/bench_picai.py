"""Thirty probability maps read from NIfTI, end to end: ``ccmetrics evaluate`` against ``picai_eval.evaluate``.

What it measures (issue 44, point 2), on two mixes of ``--cases`` cases (default 30) of ``--shape`` (default
256 x 256 x 128), written once into ``--data`` (default ``/tmp/ccmetrics-bench-picai/<mix>``) as
``gt/case_NNNN.nii.gz`` (uint8) and ``det/case_NNNN.nii.gz`` (float32, 0.5 x 0.5 x 3 mm):

* **sparse** (a prostate-MRI-like mix, as PI-CAI's): case ``i`` holds ``(0, 1, 1, 2, 3)[i % 5]`` lesions and
  ``1 + i % 3`` false-positive blobs;
* **dense** (a whole-body-like mix): the first two thirds of the cases hold 20 lesions and 8 false-positive
  blobs, the rest none and 24 false-positive blobs.

Each case is ``bench_detection.make_case`` (``ccmetrics.synthetic.lesion_case`` and a smooth map blurred around
its degraded prediction, seed ``SEED0 + i``); the file given to both tools is picai's *detection map* of it
(each component of ``map > 0`` holding its maximum), the input ``picai_eval.evaluate`` expects.

Timed, each in a fresh Python process (interpreter start, imports, reading every file, writing), the processes
alternating, ``--repeats`` rounds (``--picai-repeats`` for picai_eval on the dense mix, slow):

* ``picai_eval.evaluate(y_det=[paths], y_true=[paths])`` with its defaults (3 threads, IoU > 0.1), reading the
  files itself (SimpleITK); AP, AUROC and the PI-CAI score printed;
* ``python -m ccmetrics evaluate GT --probabilities DET --metrics dice --workers --workers --quiet`` as a user
  types it (the Dice of each map thresholded at 0.5, lesion candidates, matching, tables, the detection curves
  with their 2000-resample bootstrap, the plots), and the same with ``--no-plots``;
* the floor: nibabel reading every case's two files in one process (``np.asanyarray(nib.load(path).dataobj)``,
  the loop alone).

Before the timings are reported, ccmetrics' AP, AUROC and score (``summary.json``) are checked against
picai_eval's to 1e-9. Printed: a Markdown table (medians and ranges), the speed-up over picai_eval (target at
least 20) and ccmetrics' time over the floor, and the machine's load (``idle_check``).

Run from the repository root, with the project's environment active and the ``bench`` extra installed::

    python tests/benchmarks/bench_picai.py                     # both mixes (~15 minutes: picai_eval is slow)
    python tests/benchmarks/bench_picai.py --mix sparse --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
from bench_detection import SEED0, detection_map_of, idle_check, machine_info, make_case  # noqa: E402

SHAPE = (256, 256, 128)
SPACING = (0.5, 0.5, 3.0)
TARGET = 20.0  # picai_eval / ccmetrics, at least
DEFAULT_DATA = "/tmp/ccmetrics-bench-picai"

PICAI = """
import glob, json, sys, time
from picai_eval import evaluate
data = sys.argv[1]
det, gt = sorted(glob.glob(data + "/det/*.nii.gz")), sorted(glob.glob(data + "/gt/*.nii.gz"))
m = evaluate(y_det=det, y_true=gt)
print(json.dumps({"ap": m.AP, "auroc": m.auroc, "score": m.score}))
"""

READ = """
import glob, json, sys, time
import numpy as np
t = time.perf_counter()
import nibabel as nib
for path in sorted(glob.glob(sys.argv[1] + "/*/*.nii.gz")):
    np.asanyarray(nib.load(path).dataobj)
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def lesions_of(mix: str, i: int, cases: int) -> tuple[int, int]:
    """``(n_lesions, n_false_positives)`` of case ``i`` of a mix."""
    if mix == "sparse":
        return (0, 1, 1, 2, 3)[i % 5], 1 + i % 3
    return (20, 8) if i < round(cases * 2 / 3) else (0, 24)


def ensure_data(folder: Path, mix: str, cases: int, shape) -> None:
    from ccmetrics.formats.io import save_image

    params = {"mix": mix, "cases": cases, "shape": list(shape), "spacing_mm": list(SPACING), "seed0": SEED0}
    stamp = folder / "params.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == params:
        return
    shutil.rmtree(folder, ignore_errors=True)
    for kind in ("gt", "det"):
        (folder / kind).mkdir(parents=True)
    print(f"writing {cases} {mix} cases into {folder} ...", flush=True)
    for i in range(cases):
        n_lesions, n_fp = lesions_of(mix, i, cases)
        gt, prob = make_case(shape, SEED0 + i, n_lesions=n_lesions, n_false_positives=n_fp)
        save_image(folder / "gt" / f"case_{i:04d}.nii.gz", gt, spacing=SPACING)
        save_image(folder / "det" / f"case_{i:04d}.nii.gz", detection_map_of(prob).astype(np.float32), spacing=SPACING)
    stamp.write_text(json.dumps(params))


def timed(cmd: list[str]) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ... failed (rc {done.returncode}):\n{done.stderr[-3000:]}")
    return wall, done.stdout


def run_ccmetrics(folder: Path, workers: int, extra: tuple[str, ...] = ()) -> tuple[float, dict]:
    out = Path(tempfile.mkdtemp(prefix="ccmetrics-bench-picai-"))
    shutil.rmtree(out)
    cmd = [sys.executable, "-m", "ccmetrics", "evaluate", str(folder / "gt"), "--probabilities", str(folder / "det")]
    cmd += ["--out", str(out), "--metrics", "dice", "--workers", str(workers), "--quiet", *extra]
    wall, _ = timed(cmd)
    curves = json.loads((out / "summary.json").read_text())["detection_curves"]["1"]
    shutil.rmtree(out, ignore_errors=True)
    names = {"ap": "ap", "auroc": "auroc", "score": "picai_score"}
    return wall, {name: curves[key]["value"] for name, key in names.items()}


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f} s"
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def measure(folder: Path, mix: str, repeats: int, picai_repeats: int, workers: int) -> dict:
    times: dict[str, list[float]] = {"picai": [], "ours": [], "ours_no_plots": [], "read": []}
    values = {}
    for r in range(max(repeats, picai_repeats)):
        if r < picai_repeats:
            wall, out = timed([sys.executable, "-c", PICAI, str(folder)])
            times["picai"].append(wall)
            values["picai"] = json.loads(out.strip().splitlines()[-1])
        if r < repeats:
            wall, values["ours"] = run_ccmetrics(folder, workers)
            times["ours"].append(wall)
            times["ours_no_plots"].append(run_ccmetrics(folder, workers, ("--no-plots",))[0])
            times["read"].append(json.loads(timed([sys.executable, "-c", READ, str(folder)])[1])["seconds"])
        print(f"  {mix} round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items() if v), flush=True)
    for name in ("ap", "auroc", "score"):
        a, b = values["ours"][name], values["picai"][name]
        if abs(a - b) > 1e-9:
            sys.exit(f"{mix}: {name} differs: ccmetrics {a!r}, picai_eval {b!r}")
    return {"times": times, "values": values["ours"]}


def table(results: dict, cases: int, shape, workers: int) -> str:
    size = "×".join(map(str, shape))
    lines = [
        f"| {cases} maps of {size} (`.nii.gz`) | `picai_eval.evaluate` | `ccmetrics evaluate` (--workers {workers}) "
        "| the same, `--no-plots` | speed-up (target ≥ 20) | nibabel reading the files | ccmetrics / reading |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mix, res in results.items():
        t = res["times"]
        picai, ours, bare, read = (statistics.median(t[k]) for k in ("picai", "ours", "ours_no_plots", "read"))
        lines.append(
            f"| {mix} (AP {res['values']['ap']:.4f}, AUROC {res['values']['auroc']:.4f}: equal) "
            f"| {spread(t['picai'])} | {spread(t['ours'])} | {spread(t['ours_no_plots'])} "
            f"| **{picai / ours:.1f}×** ({picai / bare:.1f}× without plots) | {spread(t['read'])} "
            f"| {ours / read:.2f}× ({bare / read:.2f}×) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mix", choices=["sparse", "dense", "both"], default="both", help="case mix (default both)")
    parser.add_argument("--cases", type=int, default=30, help="maps per mix (default 30)")
    parser.add_argument("--shape", type=int, nargs=3, default=SHAPE, help="volume shape (default 256 256 128)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of ccmetrics and of the read (default 3)")
    parser.add_argument(
        "--picai-repeats", type=int, default=None, help="rounds of picai_eval (default: --repeats; 1 on dense)"
    )
    parser.add_argument("--workers", type=int, default=2, help="workers of ccmetrics evaluate (default 2)")
    parser.add_argument("--data", default=DEFAULT_DATA, help=f"data folder (default {DEFAULT_DATA}/MIX)")
    args = parser.parse_args(argv)
    # numba's cache as a user's after the first runs (every kernel, and the marker that says so)
    subprocess.run([sys.executable, "-m", "ccmetrics", "warm-up"], cwd=REPO, check=True, capture_output=True)
    mixes = ["sparse", "dense"] if args.mix == "both" else [args.mix]
    for mix in mixes:
        ensure_data(Path(args.data) / mix, mix, args.cases, tuple(args.shape))
    print(idle_check(), flush=True)
    results = {}
    for mix in mixes:
        picai_repeats = args.picai_repeats or (1 if mix == "dense" else args.repeats)
        results[mix] = measure(Path(args.data) / mix, mix, args.repeats, picai_repeats, args.workers)
    print(idle_check(), flush=True)
    print()
    print(table(results, args.cases, args.shape, args.workers))
    print()
    print("\n".join(machine_info()))


if __name__ == "__main__":
    main()
