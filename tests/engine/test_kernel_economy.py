"""When a numba kernel pays for its compile (``ccmetrics.engine.kernels.pays``): three states, one set of values.

A kernel not in numba's cache is compiled only for work from the ``compile_*_from`` thresholds (or once the work
its fallback served in the process reaches them); once numba's cache holds it (the marker ``_launch`` writes
beside the cache says so), the lower ``*_import_from`` / ``kernels_from`` thresholds apply; once loaded in the
process, the loaded ones. Every path gives the same numbers, so the three processes below must agree exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ccmetrics.engine import _launch
from ccmetrics.engine.kernels import pays, threshold

#: the kernels serve from 0 units once cached (or loaded), never before (compile thresholds out of reach)
CACHED_ONLY = {
    "own_tree_from": 0,
    "own_tree_import_from": 0,
    "compile_tree_from": 1 << 40,
    "kernels_from": 0,
    "loaded_kernels_from": 0,
    "compile_edges_from": 1 << 40,
    "dense_min_queries": 0,
    "compile_partition_from": 1 << 40,
}
COMPILE_ALL = {**CACHED_ONLY, "compile_tree_from": 0, "compile_edges_from": 0, "compile_partition_from": 0}

EVALUATE = """
import json, sys
import numpy as np
from ccmetrics import engine_config, evaluate
from ccmetrics.synthetic import lesion_case
gt, _ = lesion_case((40, 36, 30), n_lesions=8, radius_range=(1.5, 4.0), seed=3)
pred = np.ones_like(gt)
pred[:3] = False
with engine_config(**json.loads(sys.argv[1])):
    r = evaluate(gt=gt, pred=pred, metrics=["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"],
                 spacing=(0.8, 0.8, 2.0))
from ccmetrics.engine import _launch
print(json.dumps({
    "numba": "numba" in sys.modules,
    "ready": sorted(_launch._READY),
    "case": {k: repr(v) for k, v in r.case_row().items()},
    "components": r.to_frame().to_csv(),
}))
"""


def _run(config: dict, env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", EVALUATE, json.dumps(config)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_cold_cached_and_loaded_kernels_give_the_same_values(tmp_path):
    """An empty cache: numpy and scipy serve, numba is never imported. A process allowed to compile compiles the
    kernels it needs and marks them. A third process with the first one's thresholds now loads them from the
    cache (the marker says they are there). The same values, bit for bit, in all three."""
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "XDG_CACHE_HOME": str(tmp_path / "user")}
    cold = _run(CACHED_ONLY, env)
    assert cold["numba"] is False and cold["ready"] == [], cold["ready"]
    assert not (cache / _launch.MARKER).exists()
    compiled = _run(COMPILE_ALL, env)
    assert {"_edge_kernels", "_kdtree", "_nearest_label", "_order_statistics"} <= set(compiled["ready"])
    marked = json.loads((cache / _launch.MARKER).read_text())
    assert {os.path.basename(path) for path in marked} >= {"_edge_kernels.py", "_kdtree.py", "_nearest_label.py"}
    cached = _run(CACHED_ONLY, env)
    assert cached["numba"] is True and {"_edge_kernels", "_kdtree", "_nearest_label"} <= set(cached["ready"])
    assert cold["case"] == compiled["case"] == cached["case"]
    assert cold["components"] == compiled["components"] == cached["components"]
    assert not (tmp_path / "user").exists()  # the cache folder was writable: the marker lives there only


@pytest.mark.slow
def test_a_stale_marker_is_not_believed(tmp_path):
    """A marker whose entries name another modification time (the package was reinstalled, numba's cache is stale)
    leaves the kernels cold: nothing is compiled for the small case."""
    cache = tmp_path / "cache"
    cache.mkdir()
    engine = os.path.dirname(_launch.__file__)
    stale = {os.path.join(engine, f"{m}.py"): [0, 1, "0.0", [3, 11]] for m in _launch.MODULES}
    (cache / _launch.MARKER).write_text(json.dumps(stale))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "XDG_CACHE_HOME": str(tmp_path / "user")}
    result = _run(CACHED_ONLY, env)
    assert result["numba"] is False and result["ready"] == []


def test_fallback_work_adds_up_to_the_threshold(monkeypatch):
    """Below ``loaded_from`` a task is not counted; from it, tasks add up until they reach the threshold, and
    that task goes to the kernels; one task from the threshold goes at once."""
    monkeypatch.setattr(_launch, "_SERVED", {})
    args = (10, 100, 1000)  # loaded_from, import_from, compile_from; "_fake" has no file: never cached
    assert threshold("_fake", *args) == 1000
    assert [pays("_fake", work, *args) for work in (9, 9, 9)] == [False, False, False]
    assert _launch._SERVED.get("_fake", 0) == 0
    assert [pays("_fake", 400, *args) for _ in range(3)] == [False, False, True]  # 400, 800, 1200
    assert threshold("_fake", *args) == 10  # the fallback has lost as much as the compile costs
    assert pays("_other", 1000, *args) and not pays("_other", 999, *args)


def test_a_loaded_threshold_above_the_others_still_holds(monkeypatch):
    """``own_tree_from=1 << 40`` means scipy always: no state of the cache lowers a threshold below ``loaded_from``."""
    monkeypatch.setattr(_launch, "_SERVED", {})
    monkeypatch.setattr(_launch, "_cached", lambda module: True)
    for numba_loaded in (True, False):
        if not numba_loaded:
            monkeypatch.delitem(sys.modules, "numba", raising=False)
        assert threshold("_fake", 1 << 40, 100, 1000) == 1 << 40
        assert not pays("_fake", 1 << 20, 1 << 40, 100, 1000)


def test_a_marker_names_each_variant_of_a_kernel(tmp_path, monkeypatch):
    """SUVpeak compiles once per image dtype: a float32 kernel in the cache says nothing of the float64 one."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_launch, "_MARKED", [])
    _launch._mark("_sphere_kernels[float32]")
    assert _launch._cached("_sphere_kernels[float32]")
    assert not _launch._cached("_sphere_kernels[float64]")
    entries = json.loads((tmp_path / _launch.MARKER).read_text())
    assert [os.path.basename(name) for name in entries] == ["_sphere_kernels.py[float32]"]
    monkeypatch.setattr(_launch, "_MARKED", [])  # a new process reads the file
    assert _launch._cached("_sphere_kernels[float32]") and not _launch._cached("_sphere_kernels[float64]")
    assert not list(tmp_path.glob(f".{_launch.MARKER}.*"))  # no temporary file left
