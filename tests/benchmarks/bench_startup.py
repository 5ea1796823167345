"""Start-up costs of ccmetrics: the import, the first call, loading and compiling the numba kernels.

Every measurement runs in a fresh Python process (``sys.executable``), so that nothing is imported or
compiled before it; the package's Python bytecode is compiled first, as an installed package has it
(``tests/benchmarks/_bytecode.py``):

1. ``import ccmetrics`` (its public names load on first use), ``--repeats`` processes;
2. the first function: ``from ccmetrics import evaluate`` and the first ``evaluate`` (dice, nsd, hd95) on the
   README's 20×20 example, numpy imported before (it builds the masks); this loads scipy, cc3d and pandas,
   and the process checks that it did not import numba. ``--repeats`` processes;
3. the first command as a user meets it (issue 31): ``ccmetrics evaluate`` of the default
   ``lesion_case((120, 120, 80))`` written as .nii.gz, every metric group, the plots, each process with a new empty
   ``NUMBA_CACHE_DIR`` (whole process timed, ``--compile-repeats`` processes); then the first run of a case whose
   work reaches every kernel's threshold once cached: a fresh process evaluates a 120×120×80 case (GT
   ``lesion_case((120, 120, 80), n_lesions=12, radius_range=(2, 10), seed=5)``, an all-foreground prediction
   but 4 slices), ``import ccmetrics`` and the ``evaluate`` call timed together, in three variants, each its
   own row: every metric group but ``pet`` (work for the dense partition, the edge kernels, the k-d tree and
   Lesion Dice's order statistics); every metric group with ``pet`` and a float32 PET scan (the SUVpeak kernel's
   work too; ``evaluate`` reads a scan as float32); and the same with every kernel compiled for this case
   (``compile_*_from`` of :class:`ccmetrics.EngineConfig` set to the thresholds used once the cache holds the
   kernels: what a first run cost before those thresholds). Each row names the kernels its run compiled (none,
   where numpy, scipy and cc3d serve because no kernel pays for its compile in one call), and the next row the
   same ``evaluate`` again in that process. Cold: ``NUMBA_CACHE_DIR`` a new empty folder, ``--compile-repeats``
   processes of each variant, alternated; warm (without ``pet``): ``--repeats`` processes with a cache filled by
   ``ccmetrics warm-up`` (every kernel, and the marker that tells ccmetrics so), and the same call again in the
   warm process;
4. the numba kernels (every :class:`ccmetrics.engine._launch.Kernel`, of the modules in
   ``ccmetrics.engine._launch.MODULES``; numba caches them in ``__pycache__`` beside the code, or in
   ``NUMBA_CACHE_DIR``).
   The calls that use them: ``evaluate`` (every metric group but ``pet``) on an all-foreground 3D prediction
   (160×160×120, 12 lesions: the dense partition, the edge kernels, the k-d tree and the order statistics), the
   ``pet`` group with a float32 scan on a 160×60×60 part of it and ``ccmetrics.metrics.pet.suv_peak`` of a
   float64 scan of the whole (the SUVpeak kernel's two specialisations), a 2D ``evaluate`` (600×600, 10
   lesions: the 2D specialisations), and ``ccmetrics.engine._kdtree.nearest_distances`` with 2 workers (the
   parallel query), with ``compile_*_from`` set to the thresholds of a filled cache (so that an empty cache
   compiles every kernel they need). A process times these calls twice, after a warm-up ``evaluate`` that loads
   everything but numba:

   * compile: with ``NUMBA_CACHE_DIR`` set to a new empty folder, the first time compiles every kernel and
     writes the cache (the script checks that every kernel was compiled, each for one signature); the code's
     own ``__pycache__`` is neither read nor written;
   * load: ``--repeats`` processes with that folder, now filled: the first time imports numba and loads the
     compiled kernels; the second time, in the same process, is the calls alone.

Prints a Markdown table (medians, and the range over the processes) and the machine. Run from the repository
root with the environment active::

    python tests/benchmarks/bench_startup.py
    python tests/benchmarks/bench_startup.py --repeats 9 --compile-repeats 2
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from _bytecode import compile_package  # tests/benchmarks, the script's folder

IMPORT = """
import json, time
t = time.perf_counter()
import ccmetrics
print(json.dumps({"seconds": time.perf_counter() - t}))
"""

FIRST_CALL = """
import json, sys, time
import numpy as np
gt = np.zeros((20, 20), bool)
gt[2:8, 2:8] = True
gt[14:16, 14:16] = True
pred = np.zeros_like(gt)
pred[2:8, 2:8] = True
pred[17:19, 2:4] = True
t = time.perf_counter()
from ccmetrics import evaluate
result = evaluate(gt=gt, pred=pred, metrics=["dice", "nsd", "hd95"])
seconds = time.perf_counter() - t
assert round(result.cc["dice"], 6) == 0.473684, result.cc
assert "numba" not in sys.modules, "the first call imported numba"
heavy = ("scipy", "cc3d", "pandas", "nibabel", "matplotlib", "torch", "numba")
print(json.dumps({"seconds": seconds, "loaded": [m for m in heavy if m in sys.modules]}))
"""

FIRST_RUN = """
import json, sys, time
import numpy as np
from ccmetrics.synthetic import lesion_case

gt, _ = lesion_case((120, 120, 80), n_lesions=12, radius_range=(2, 10), seed=5)
pred = np.ones_like(gt)
pred[:4] = False
ALL = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]
extra = {}
if sys.argv[1] in ("pet", "forced"):  # a float32 PET scan (SUV 1-2 around lesions of SUV 5-6) and the pet group
    ALL.append("pet")
    extra["image"] = (1.0 + 4.0 * gt + np.random.default_rng(5).random(gt.shape)).astype(np.float32)
t = time.perf_counter()
from ccmetrics import engine_config, evaluate, EngineConfig

# "forced": every kernel compiled for this case, as before the compile thresholds (issue 44, point 4)
with engine_config(EngineConfig().compiling_as_cached() if sys.argv[1] == "forced" else None):
    evaluate(gt=gt, pred=pred, metrics=ALL, spacing=(2.0, 2.0, 3.0), **extra)
    first = time.perf_counter() - t
    t = time.perf_counter()
    evaluate(gt=gt, pred=pred, metrics=ALL, spacing=(2.0, 2.0, 3.0), **extra)
    again = time.perf_counter() - t
from ccmetrics.engine import _launch

used = [kernel.name for kernel in _launch._KERNELS if kernel.dispatcher.signatures]
print(json.dumps({"first": first, "again": again, "kernels": used}))
"""

KERNELS = """
import importlib, json, sys, time
import cc3d
import numpy as np
from ccmetrics import EngineConfig, engine_config, evaluate
from ccmetrics.metrics.pet import suv_peak
from ccmetrics.synthetic import lesion_case

small = np.zeros((20, 20), bool)
small[2:8, 2:8] = True
evaluate(gt=small, pred=small, metrics=["dice", "nsd", "hd95"])  # scipy, cc3d, pandas: everything but numba
gt3, _ = lesion_case((160, 160, 120), n_lesions=12, radius_range=(2, 10), seed=5)
pred3 = np.ones_like(gt3)
pred3[:4] = False
gt2, _ = lesion_case((600, 600), n_lesions=10, radius_range=(3, 20), seed=5)
pred2 = np.ones_like(gt2)
pred2[:8] = False
ALL = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]
rng = np.random.default_rng(0)
source, target = rng.normal(size=(50000, 3)), rng.normal(size=(5000, 3))
crop = (slice(None), slice(0, 60), slice(0, 60))  # the PET group on a part of the 3D case
scan = (1.0 + 4.0 * gt3[crop] + rng.random(gt3[crop].shape)).astype(np.float32)  # evaluate reads it as float32
lesions, scan64 = cc3d.connected_components(gt3), 1.0 + 4.0 * gt3 + rng.random(gt3.shape)  # suv_peak: float64
assert "numba" not in sys.modules


def calls():
    evaluate(gt=gt3, pred=pred3, metrics=ALL, spacing=(0.8, 0.8, 2.0))
    evaluate(gt=gt3[crop], pred=pred3[crop], metrics=["pet"], spacing=(0.8, 0.8, 2.0), image=scan)
    with engine_config(peak_kernel_from=0, compile_peak_from=0):  # the lesions hold fewer voxels than its threshold
        suv_peak(scan64, lesions, spacing=(0.8, 0.8, 2.0))
    evaluate(gt=gt2, pred=pred2, metrics=["dice", "nsd", "hd95"])
    from ccmetrics.engine._kdtree import nearest_distances

    nearest_distances(source, target, workers=2)


seconds = []
for _ in range(2):
    t = time.perf_counter()
    # every kernel these calls need, even uncached; the voxel scan on these masks too (below its threshold)
    with engine_config(EngineConfig().compiling_as_cached().replace(scan_kernel_from=0)):
        calls()
    seconds.append(time.perf_counter() - t)
from ccmetrics.engine import _launch

for name in _launch.MODULES:
    importlib.import_module(f"ccmetrics.engine.{name}")
kernels = {kernel.name: len(kernel.dispatcher.signatures) for kernel in _launch._KERNELS}
print(json.dumps({"first": seconds[0], "second": seconds[1], "kernels": kernels}))
"""


def measure(code: str, env: dict[str, str] | None = None, *argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(values: list[float], digits: int) -> str:
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:.{digits}f}"
    return f"{median:.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def first_command_runs(repeats: int) -> list[float]:
    """Wall seconds of whole ``ccmetrics evaluate`` processes on the default 120×120×80 ``lesion_case`` written
    as .nii.gz (every metric group, the plots), each with a new empty ``NUMBA_CACHE_DIR``."""
    import nibabel as nib
    import numpy as np

    from ccmetrics.synthetic import lesion_case

    seconds = []
    with tempfile.TemporaryDirectory() as scratch:
        gt, pred = lesion_case((120, 120, 80))[:2]
        for name, mask in (("gt", gt), ("pred", pred)):
            os.mkdir(os.path.join(scratch, name))
            image = nib.Nifti1Image(mask.astype(np.uint8), np.diag([0.8, 0.8, 2.0, 1.0]))
            nib.save(image, os.path.join(scratch, name, "case.nii.gz"))
        groups = "dice,iou,nsd,hd,hd95,assd,pq,lesion_dice,detection"
        for run in range(repeats):
            cache, out = os.path.join(scratch, f"numba{run}"), os.path.join(scratch, f"out{run}")
            os.mkdir(cache)
            argv = [sys.executable, "-m", "ccmetrics", "evaluate", os.path.join(scratch, "gt")]
            argv += [os.path.join(scratch, "pred"), "--out", out, "--metrics", groups, "--quiet"]
            t = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "NUMBA_CACHE_DIR": cache})
            seconds.append(time.perf_counter() - t)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per measurement (default 5)")
    parser.add_argument("--compile-repeats", type=int, default=3, help="compilations, each into a new cache (>= 1)")
    args = parser.parse_args()

    print(compile_package(), flush=True)
    imports = [measure(IMPORT)["seconds"] for _ in range(args.repeats)]
    user_runs = first_command_runs(args.compile_repeats)
    first_calls = [measure(FIRST_CALL) for _ in range(args.repeats)]
    first = [done["seconds"] for done in first_calls]
    first_loads = sorted({name for done in first_calls for name in done["loaded"]})
    compiled, loaded, warm = [], [], []
    cold_runs: dict[str, list[float]] = {"all": [], "pet": [], "forced": []}
    cold_again: dict[str, list[float]] = {"all": [], "pet": [], "forced": []}
    warm_runs, again_runs, first_kernels = [], [], {}
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.compile_repeats):
            for variant in cold_runs:  # alternated, so that a slower minute of the machine touches each
                cache = os.path.join(scratch, f"first{variant}{run}")
                os.mkdir(cache)
                done = measure(FIRST_RUN, {"NUMBA_CACHE_DIR": cache}, variant)
                cold_runs[variant].append(done["first"])
                cold_again[variant].append(done["again"])
                first_kernels[variant] = done["kernels"]
        filled = os.path.join(scratch, "warmed")
        os.mkdir(filled)
        subprocess.run(  # the cache as `ccmetrics warm-up` leaves it (every kernel, and the marker that says so)
            [sys.executable, "-m", "ccmetrics", "warm-up"],
            check=True,
            capture_output=True,
            env={**os.environ, "NUMBA_CACHE_DIR": filled},
        )
        for _ in range(args.repeats):
            done = measure(FIRST_RUN, {"NUMBA_CACHE_DIR": filled}, "all")
            warm_runs.append(done["first"])
            again_runs.append(done["again"])
        for run in range(args.compile_repeats):
            cache = os.path.join(scratch, f"cache{run}")
            os.mkdir(cache)  # empty: every kernel is compiled
            done = measure(KERNELS, {"NUMBA_CACHE_DIR": cache})
            compiled.append(done["first"] - done["second"])
            missing = [name for name, signatures in done["kernels"].items() if signatures == 0]
            assert not missing, f"not compiled: {missing}"
            assert all(n == 1 for n in done["kernels"].values()), done["kernels"]
            n_kernels, n_compiled = len(done["kernels"]), sum(done["kernels"].values())
            n_cached = len(glob.glob(os.path.join(cache, "**", "*.nbi"), recursive=True))
        for _ in range(args.repeats):
            done = measure(KERNELS, {"NUMBA_CACHE_DIR": cache})  # the last compilation's cache
            loaded.append(done["first"] - done["second"])
            warm.append(done["second"])

    print(f"| start-up cost, fresh process each (median, range over {args.repeats}) | seconds |")
    print("|---|---:|")
    print(f"| `import ccmetrics` | {spread(imports, 4)} |")
    print(f"| first `evaluate` (README example; loads {', '.join(first_loads)}; no numba) | {spread(first, 2)} |")
    print(
        "| first command as a user meets it: `ccmetrics evaluate` of the default `lesion_case((120, 120, 80))` as "
        f".nii.gz, every metric group, plots included, empty numba cache (whole process) | {spread(user_runs, 2)} |"
    )
    variants = (
        ("all", "every metric group but `pet`"),
        ("pet", "with `pet` and a float32 scan"),
        ("forced", "with `pet`, every kernel compiled as before the `compile_*_from` thresholds"),
    )
    for variant, what in variants:
        names = sorted(name.rsplit(".", 1)[-1] for name in first_kernels[variant])
        compiles = f"compiles {len(names)} kernels: {', '.join(names)}" if names else "compiles no kernel"
        print(
            f"| first run: `import ccmetrics` + `evaluate` of a 120×120×80 case, {what}, empty numba cache "
            f"({args.compile_repeats} process(es); {compiles}) | {spread(cold_runs[variant], 2)} |"
        )
        print(f"| (the same `evaluate` again in that process) | {spread(cold_again[variant], 2)} |")
    print(
        "| the same (no `pet`), numba's cache filled by `ccmetrics warm-up` (a new process each) "
        f"| {spread(warm_runs, 2)} |"
    )
    print(f"| (the same `evaluate` again in that process) | {spread(again_runs, 2)} |")
    print(
        f"| numba kernels, compiled once into an empty cache ({n_kernels} kernels, {n_compiled} specialisations, "
        f"{n_cached} cache index files; first calls minus the same calls again, {args.compile_repeats} run(s)) "
        f"| {spread(compiled, 1)} |"
    )
    print(
        "| numba kernels, imported and loaded from the cache (first calls minus the same calls again) "
        f"| {spread(loaded, 2)} |"
    )
    print(
        "| (the calls themselves: 3D and 2D all-foreground `evaluate`, `pet` on a part of the 3D case and "
        f"`suv_peak` of a float64 scan, parallel k-d tree query) | {spread(warm, 2)} |"
    )
    print()
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
