"""The k-d tree of ccmetrics.engine._kdtree against scipy's cKDTree (what MONAI queries), bit for bit in float64."""

import numpy as np
import pytest
from conftest import ALL_METRICS
from scipy.spatial import cKDTree

import ccmetrics.engine.surface as surface
from ccmetrics import EngineConfig, GroundTruth, engine_config, evaluate
from ccmetrics.engine import _kdtree
from ccmetrics.synthetic import lesion_case


def _scipy(source, target, bound=np.inf):
    return cKDTree(target, leafsize=32).query(source, distance_upper_bound=bound)[0]


def _check(source, target, bound=np.inf):
    expected = _scipy(source, target, bound)
    for workers in (1, 2):
        got = _kdtree.nearest_distances(source, target, bound, workers)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected)
        distance, index = _kdtree.nearest_points(source, target, bound, workers)
        np.testing.assert_array_equal(distance, expected)
        _check_index(source, target, distance, index)


def _check_index(source, target, distance, index):
    """The named target point is at the reported distance (summed as scipy sums); ``len(target)`` where none is."""
    found = np.isfinite(distance)
    np.testing.assert_array_equal(index[~found], len(target))
    assert index.dtype == np.int64 and (index[found] < len(target)).all()
    total = np.zeros(int(found.sum()))
    for axis in range(source.shape[1]):
        delta = source[found, axis] - target[index[found], axis]
        total += delta * delta
    np.testing.assert_array_equal(np.sqrt(total), distance[found])


def test_surface_nearest_points_name_a_nearest_point_on_both_trees():
    """``ccmetrics.engine.surface.nearest_points`` (what per-region distances reuse) gives directed_distances' values
    and a target point at that distance, from scipy's tree and from this module's."""
    rng = np.random.default_rng(5)
    source, target = rng.integers(0, 60, (3000, 3)) * 0.7, rng.integers(0, 60, (2000, 3)) * 0.7
    for config in ({"own_tree_from": 1 << 40}, {"own_tree_from": 0, "own_tree_import_from": 0, "compile_tree_from": 0}):
        with engine_config(**config):
            distance, index = surface.nearest_points(source, target)
            np.testing.assert_array_equal(distance, surface.directed_distances(source, target))
            exact = np.sqrt(((source - target[index]) ** 2).sum(axis=1)).astype(np.float32)
            np.testing.assert_array_equal(exact, distance)
    empty_distance, empty_index = surface.nearest_points(source[:3], target[:0])
    assert np.isinf(empty_distance).all() and empty_index.tolist() == [0, 0, 0]


def test_this_machine_sums_as_scipy():
    assert _kdtree.matches_scipy()


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_random_points_and_voxel_lattices(rng, ndim):
    for trial in range(60):
        n, k = int(rng.integers(1, 400)), int(rng.integers(1, 9000))
        spacing = rng.uniform(0.1, 3.0, ndim) if trial % 2 else np.ones(ndim)
        if trial % 3 == 0:  # continuous points
            target, source = rng.normal(size=(n, ndim)) * 50, rng.normal(size=(k, ndim)) * 80
        else:  # voxel centres in physical units, queries around and inside
            extent = int(rng.integers(1, 40))
            target = rng.integers(0, extent, (n, ndim)) * spacing
            source = rng.integers(-5, extent + 5, (k, ndim)) * spacing
        _check(source, target)


@pytest.mark.parametrize(
    "spacing", [(1.0, 1.0, 1.0), (0.8, 0.8, 2.0), (0.9765625, 0.9765625, 3.3), (1e-6, 1.0, 1e6), (0.1, 0.1, 0.1)]
)
def test_equidistant_lattice_points(spacing):
    """Many target voxels at the same real distance (Pythagorean offsets, mirror images): the rounded
    minimum over all of them is what both trees return."""
    offsets = np.array(
        [
            [3, 4, 0],
            [4, 3, 0],
            [5, 0, 0],
            [0, 5, 0],
            [0, 0, 5],
            [-3, -4, 0],
            [0, 3, 4],
            [-5, 0, 0],
            [0, -4, 3],
            [1, 2, 2],
            [2, 1, 2],
            [-2, 2, 1],
            [0, 0, -3],
        ]
    )
    centres = np.array([[10, 10, 10], [37, 21, 5], [101, 3, 77]])
    target = np.concatenate([c + offsets for c in centres]) * np.asarray(spacing)
    source = np.concatenate([centres, centres + 1, centres - 1]) * np.asarray(spacing)
    _check(source, target)


def test_points_far_from_a_hollow_box():
    """The faces of a box queried from inside (the slow case of scipy's tree): same values."""
    box = np.zeros((40, 36, 30), bool)
    box[2:, :, :] = True
    inner = np.zeros_like(box)
    inner[3:-1, 1:-1, 1:-1] = True
    faces = np.argwhere(box & ~inner) * np.array([0.8, 0.8, 2.0])
    rng = np.random.default_rng(3)
    inside = rng.uniform([3, 1, 1], [39, 35, 29], (3000, 3)).round() * np.array([0.8, 0.8, 2.0])
    _check(inside, faces)


def test_degenerate_sets():
    one = np.array([[1.5, -2.0, 3.0]])
    queries = np.random.default_rng(0).normal(size=(50, 3))
    _check(queries, one)
    _check(queries, np.repeat(one, 100, axis=0))  # all points equal: a single large leaf
    tiny = np.array([[1.0, 0.0], [np.nextafter(1.0, 2.0), 0.0]] * 20)  # coordinates one float apart
    _check(np.array([[1.0, 0.0], [2.0, 1.0], [np.nextafter(1.0, 2.0), 0.0]]), tiny)
    line = np.column_stack([2.0 ** -np.arange(0, 600, dtype=float), np.zeros(600)])  # a very deep tree
    _check(np.random.default_rng(1).uniform(-0.1, 1.1, (500, 2)), line)
    _check(np.zeros((0, 3)), one)


def _brute(source, target):
    """The rounded minimum, summed axis by axis from 0.0 as scipy sums (numpy never fuses)."""
    total = np.zeros((len(source), len(target)))
    for axis in range(source.shape[1]):
        delta = source[:, axis, None] - target[None, :, axis]
        total = total + delta * delta
    return np.sqrt(total.min(axis=1))


def test_ulp_scale_near_ties_give_the_rounded_minimum():
    """Sets built so that many points lie a few ulps apart in squared distance (where scipy's incremental
    node bounds can round past the nearest point): the tree returns the brute-force rounded minimum."""
    rng = np.random.default_rng(11)
    for trial in range(40):
        m = int(rng.integers(2, 5))
        far = float(2.0 ** rng.integers(3, 30)) * rng.uniform(1, 2)
        span = np.sqrt(np.spacing(far * far) * rng.uniform(2, 80))
        target = np.empty((int(rng.integers(50, 600)), m))
        target[:, 0] = far + rng.integers(0, 3, len(target)) * np.spacing(far) * (trial % 2)
        target[:, 1:] = rng.uniform(0, span, (len(target), m - 1))
        source = np.zeros((300, m))
        source[:, 1:] = rng.uniform(-span, 2 * span, (300, m - 1))
        expected = _brute(source, target)
        for workers in (1, 2):
            np.testing.assert_array_equal(_kdtree.nearest_distances(source, target, np.inf, workers), expected)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="1 <= m <= 4"):
        _kdtree.nearest_distances(np.zeros((3, 5)), np.zeros((4, 5)))
    with pytest.raises(ValueError, match="1 <= m <= 4"):
        _kdtree.nearest_distances(np.zeros((3, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="empty"):
        _kdtree.nearest_distances(np.zeros((3, 2)), np.zeros((0, 2)))


def test_bound_gives_inf_as_scipy():
    rng = np.random.default_rng(7)
    target = rng.integers(0, 20, (300, 3)).astype(float)
    source = rng.integers(-30, 50, (2000, 3)).astype(float)
    for bound in (0.5, 1.0, 3.0, 10.0):  # 1.0: points at exactly the bound are not neighbours
        _check(source, target, bound)


def _same(a, b):
    assert a.per_component.equals(b.per_component)
    assert a.cc == b.cc and a.standard == b.standard


@pytest.mark.parametrize("spacing", [None, (0.8, 0.8, 2.0)])
@pytest.mark.parametrize("grouped_from", [64, 1])
def test_evaluate_is_the_same_with_either_tree(monkeypatch, spacing, grouped_from):
    gt, pred = lesion_case((48, 40, 36), n_lesions=10, radius_range=(1.0, 6.0), seed=9)
    pred = pred.copy()
    pred[30:, :, :] = True  # a large false positive: queries far from flat edge sets
    with engine_config(grouped_from=grouped_from, own_tree_from=1 << 60):
        reference = evaluate(pred, gt, ALL_METRICS, spacing=spacing)
    calls = []
    original = _kdtree.nearest_distances
    monkeypatch.setattr(_kdtree, "nearest_distances", lambda *a: calls.append(1) or original(*a))
    with engine_config(grouped_from=grouped_from, own_tree_from=0, own_tree_import_from=0, compile_tree_from=0):
        _same(evaluate(pred, gt, ALL_METRICS, spacing=spacing), reference)
        _same(evaluate(pred, GroundTruth(gt), ALL_METRICS, spacing=spacing), reference)
    assert calls


def test_small_inputs_never_import_numba():
    """Below 2^18 points scipy's tree serves unless numba is loaded already (it costs ~0.5 s to load)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np; from ccmetrics.engine.surface import directed_distances; "
        "p = np.random.default_rng(0).normal(size=(40000, 3)); directed_distances(p[:20000], p[20000:]); "
        "print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_evaluate_from_several_threads(monkeypatch):
    """Kernels shared between the cores, launched from several threads, take turns (one launch at a time)."""
    import threading

    from ccmetrics.engine import _launch

    gt, pred = lesion_case((40, 36, 30), n_lesions=70, radius_range=(1.0, 3.0), seed=5)
    pred = pred.copy()
    pred[25:] = True
    forced = EngineConfig(threads_from=0).with_kernels(True)
    with engine_config(forced):
        reference = evaluate(pred, gt, ["dice", "nsd", "hd95"], spacing=(0.8, 0.8, 2.0))
    held = []
    lock = _launch.PARALLEL

    class Counting:
        def __enter__(self):
            lock.acquire()
            held.append(threading.current_thread().name)

        def __exit__(self, *exc):
            lock.release()

    monkeypatch.setattr(_launch, "PARALLEL", Counting())
    results, errors = [], []

    def work():  # each thread starts from the defaults: the forced configuration is set in it
        try:
            with engine_config(forced):
                results.append(evaluate(pred, gt, ["dice", "nsd", "hd95"], spacing=(0.8, 0.8, 2.0)))
        except Exception as error:  # pragma: no cover
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3 and len(set(held)) >= 2
    for result in results:
        _same(result, reference)


def test_scipy_serves_machines_that_sum_otherwise(monkeypatch):
    """Where the probe finds scipy's sums differ (a fused multiply-add), directed distances come from scipy."""
    monkeypatch.setattr(_kdtree, "_MATCHES", [False])  # the probe's verdict (a fact of the machine, not a threshold)
    monkeypatch.setattr(_kdtree, "nearest_distances", lambda *a: pytest.fail("own tree used"))
    points = np.random.default_rng(2).normal(size=(100, 3))
    with engine_config(own_tree_from=0, own_tree_import_from=0, compile_tree_from=0):
        got = surface.directed_distances(points[:40], points[40:])
    np.testing.assert_array_equal(got, _scipy(points[:40], points[40:]).astype(np.float32))
