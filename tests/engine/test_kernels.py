"""The numba kernels' start-up: one signature each, compiled on first use, warmed once into a shared cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ccmetrics import engine_config, evaluate
from ccmetrics.engine import _launch
from ccmetrics.engine.config import KERNEL_THRESHOLDS
from ccmetrics.synthetic import lesion_case

ALL_METRICS = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]
#: every kernel on a small case: the dense partition, the edge kernels, the k-d trees and their order statistics
FORCED = dict.fromkeys(KERNEL_THRESHOLDS, 0)  # (EngineConfig.with_kernels(True), as keywords a subprocess can read)


def _case():
    gt, _ = lesion_case((40, 36, 30), n_lesions=8, radius_range=(1.5, 4.0), seed=3)
    pred = np.ones_like(gt)
    pred[:3] = False  # one large component over every lesion, most of it outside the GT
    return gt, pred


def test_every_kernel_has_one_signature():
    """C-ordered arrays, transposed views, 2D and 3D points: one compiled version of each kernel serves them."""
    from ccmetrics.engine import _kdtree

    gt, pred = _case()
    with engine_config(**FORCED):
        evaluate(gt=gt, pred=pred, metrics=ALL_METRICS, spacing=(0.8, 0.8, 2.0))
        evaluate(gt=gt[5], pred=pred[5], metrics=ALL_METRICS)
    rng = np.random.default_rng(0)
    _kdtree.nearest_distances(rng.normal(size=(20000, 3)), rng.normal(size=(500, 3)), workers=2)
    _kdtree.nearest_distances(rng.normal(size=(50, 2)), rng.normal(size=(60, 2))[::2])  # strided points
    from ccmetrics.engine.sphere_means import sphere_mean_peaks

    rows = (np.array([0, 0, 0]), np.array([-1, 0, 1]), np.array([0, 1, 0]))
    for image in (np.ones((2, 3, 5), np.float32), np.ones((2, 3, 5)).T.copy().T, np.ones((5, 3, 2)).T):
        peaks, _ = sphere_mean_peaks(image, np.array([6, 7]), np.array([0, 2]), np.array([0]), rows)
        assert peaks.tolist() == [1.0]
    names = {kernel.name for kernel in _launch._KERNELS}
    assert {f"ccmetrics.engine.{m}" for m in _launch.MODULES} == {name.rsplit(".", 1)[0] for name in names}
    for kernel in _launch._KERNELS:
        assert len(kernel.dispatcher.signatures) == 1, (kernel.name, kernel.dispatcher.signatures)


def test_a_kernel_refuses_other_types():
    """No second version is ever compiled: arguments numba cannot convert to the one signature are refused."""
    from ccmetrics.engine._kdtree import build

    build(np.zeros((3, 2)), 32)
    with pytest.raises(TypeError):
        build(np.zeros((3, 2), np.float32).astype(np.complex128), 32)


def test_shared_launch_equals_serial():
    """A kernel shared between threads (slices of any size) gives the serial values."""
    from ccmetrics.engine._kdtree import nearest_distances

    rng = np.random.default_rng(1)
    source, target = rng.normal(size=(30000, 3)), rng.normal(size=(3000, 3))
    serial = nearest_distances(source, target)
    for threads in (2, 3):
        with engine_config(threads=threads):
            np.testing.assert_array_equal(nearest_distances(source, target, workers=threads), serial)


EVALUATE = r"""
import json, sys
import numba.core.event as ev
import numpy as np
from ccmetrics import engine_config, evaluate
from ccmetrics.synthetic import lesion_case

compiled = []

class Listener(ev.Listener):
    def on_start(self, event):
        compiled.append(event.data["dispatcher"].py_func.__qualname__)

    def on_end(self, event):
        pass

ev.register("numba:compile", Listener())
gt, _ = lesion_case((40, 36, 30), n_lesions=8, radius_range=(1.5, 4.0), seed=3)
pred = np.ones_like(gt)
pred[:3] = False
with engine_config(**json.loads(sys.argv[1])):
    evaluate(pred, gt, ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"], spacing=(0.8, 0.8, 2.0))
from ccmetrics.engine import _launch
used = [k.name for k in _launch._KERNELS if k.dispatcher.signatures]
print(json.dumps({"compiled": compiled, "used": used}))
"""


@pytest.mark.slow
def test_warm_up_then_a_fresh_process_compiles_nothing(tmp_path):
    """``ccmetrics warm-up`` into an empty NUMBA_CACHE_DIR; a new process evaluating a case (every kernel) then
    loads every kernel from that folder: numba compiles nothing (no compile event)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "ccmetrics", "warm-up"], capture_output=True, text=True, env=env, check=True
    )
    lines = done.stdout.strip().splitlines()
    assert lines[-1].startswith("9 kernels ready") and "9 compiled" in lines[-1], done.stdout
    assert all(line.startswith("compiled") for line in lines[:-1]), done.stdout
    assert len(list((tmp_path / "cache").rglob("*.nbi"))) >= 7  # numba's cache index files
    out = subprocess.run(
        [sys.executable, "-c", EVALUATE, json.dumps(FORCED)], capture_output=True, text=True, env=env, check=True
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(report["used"]) == 7 and report["compiled"] == [], report  # the voxel scan among them
    again = subprocess.run(
        [sys.executable, "-m", "ccmetrics", "warm-up"], capture_output=True, text=True, env=env, check=True
    )
    assert "0 compiled, 9 from the cache" in again.stdout, again.stdout


@pytest.mark.slow
def test_a_call_compiles_only_the_kernels_it_needs(tmp_path):
    """With an empty cache, a case whose distances need the k-d tree alone compiles the tree's kernels only."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    only_trees = {
        "own_tree_from": 0,
        "own_tree_import_from": 0,
        "compile_tree_from": 0,
        "dense_min_queries": 1 << 40,
        "compile_partition_from": 1 << 40,
        "loaded_kernels_from": 1 << 40,  # numba loaded for the tree: the edges stay in numpy all the same
        "scan_kernel_from": 1 << 40,  # and so does the voxel scan
    }
    out = subprocess.run(
        [sys.executable, "-c", EVALUATE, json.dumps(only_trees)], capture_output=True, text=True, env=env, check=True
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(".engine._kdtree." in name or "_order_statistics" in name for name in report["used"]), report
    assert not any("_nearest_label" in name or "_edge_kernels" in name for name in report["used"]), report
