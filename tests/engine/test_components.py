"""Sparse labelling (run graph), voxel-list edge look-ups and the threaded evaluation, against references."""

import numpy as np
import pytest
from conftest import ALL_METRICS, scipy_components

import ccmetrics.engine.components as components
from ccmetrics import EngineConfig, GroundTruth, engine_config, evaluate
from ccmetrics.engine.components import Runs, component_labels, run_components
from ccmetrics.engine.surface import face_edges, own_face_edges
from ccmetrics.metrics.aggregation import image_diagonal
from ccmetrics.synthetic import lesion_case

CONNECTIVITIES = {2: (8, 4), 3: (26, 18, 6)}


def _random_mask(rng, ndim, max_side, density):
    shape = tuple(int(v) for v in rng.integers(1, max_side, ndim))
    return rng.random(shape) < density


@pytest.mark.parametrize("ndim", [2, 3])
def test_run_graph_equals_scipy_label(rng, ndim):
    for _ in range(60):
        mask = _random_mask(rng, ndim, 14, rng.uniform(0.02, 0.9))
        flat = np.flatnonzero(mask)
        for conn in CONNECTIVITIES[ndim]:
            expected, n = scipy_components(mask, conn)
            labels, m = run_components(flat, mask.shape, conn)
            assert m == n
            np.testing.assert_array_equal(labels, expected.ravel()[flat])


@pytest.mark.parametrize("dense_runs", [0, 1 << 30])  # always the run graph, always cc3d on the box
def test_both_labelling_paths_equal_scipy(rng, dense_runs):
    with engine_config(dense_runs=dense_runs):
        _labelling_equals_scipy(rng)


def _labelling_equals_scipy(rng):
    for ndim in (2, 3):
        for density in (0.002, 0.05, 0.5, 1.0):
            mask = _random_mask(rng, ndim, 40, density)
            flat = np.flatnonzero(mask)
            for conn in CONNECTIVITIES[ndim]:
                expected, n = scipy_components(mask, conn)
                labels, m = component_labels(mask, flat, conn)
                assert m == n
                np.testing.assert_array_equal(labels, expected.ravel()[flat])


def test_runs_locate():
    mask = np.zeros((4, 5, 6), bool)
    mask[1, 2, 1:4] = mask[1, 3, 0] = mask[2, :, 5] = mask[3, 4, :] = True
    flat = np.flatnonzero(mask)
    runs = Runs(flat, mask.shape)
    assert len(runs) == 2 + 5 + 1  # rows break runs even where flat indices are consecutive
    position = runs.locate(np.arange(mask.size))
    expected = np.full(mask.size, -1)
    expected[flat] = np.arange(len(flat))
    np.testing.assert_array_equal(position, expected)
    assert Runs(np.zeros(0, np.int64), mask.shape).locate(np.array([0, 5])).tolist() == [-1, -1]


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("span_map_ratio,kernels_from", [(0, 1 << 60), (1 << 30, 1 << 60), (1 << 30, 0)])
def test_own_face_edges_equal_the_label_map_rule(rng, ndim, span_map_ratio, kernels_from):
    """Neighbours found in the voxel list, in a span label map with numpy, and with the numba kernel."""
    with engine_config(span_map_ratio=span_map_ratio, kernels_from=kernels_from, compile_edges_from=kernels_from):
        _own_edges_equal_label_map_rule(rng, ndim)


def _own_edges_equal_label_map_rule(rng, ndim):
    for _ in range(20):
        mask = _random_mask(rng, ndim, 16, rng.uniform(0.3, 1.0))
        flat = np.flatnonzero(mask)
        if flat.size == 0:
            continue
        coords = np.stack(np.unravel_index(flat, mask.shape), axis=1)
        labels = rng.integers(1, rng.choice([3, 300, 70000]), flat.size).astype(np.int32)
        label_map = np.zeros(mask.size, np.int32)
        label_map[flat] = labels
        own, union = face_edges(flat, coords, mask.shape, label_map, labels)
        _, mask_union = face_edges(flat, coords, mask.shape, mask.ravel(), True)
        np.testing.assert_array_equal(mask_union, union)
        np.testing.assert_array_equal(own_face_edges(flat, mask.shape, labels, union, Runs(flat, mask.shape)), own)


def _same(a, b):
    assert a.per_component.equals(b.per_component)
    assert a.cc == b.cc and a.standard == b.standard and a.case_scores == b.case_scores


@pytest.mark.parametrize("spacing", [None, (0.8, 1.1, 2.3)])
def test_threads_and_grouped_queries_change_no_value(monkeypatch, spacing):
    """The threaded evaluation (images from 2^20 voxels) equals the serial one bit for bit."""
    import threading

    import ccmetrics.engine.geometry as geometry

    gt, pred = lesion_case((40, 36, 30), n_lesions=12, radius_range=(1.0, 7.0), seed=4)
    metrics = ALL_METRICS + ["pq", "detection"]
    with engine_config(threads=1):
        serial = evaluate(pred, gt, metrics, spacing=spacing)
    workers = []  # the threads that measured distances
    original = geometry.directed_distances
    monkeypatch.setattr(
        geometry, "directed_distances", lambda *a: workers.append(threading.current_thread().name) or original(*a)
    )
    # one query per task, small batches, everything in one task
    settings = [{"threads": 2, "thread_batch_points": batch} for batch in (0, 64, 1 << 20)]
    # one grouped KD-tree query for all regions, shared by the threads
    settings += [{"threads": threads, "grouped_from": 1} for threads in (2, 3)]
    for setting in settings:
        with engine_config(threads_from=0, **setting):
            workers.clear()
            _same(evaluate(pred, gt, metrics, spacing=spacing), serial)
            assert any(name.startswith("ccmetrics") for name in workers), setting  # the threads did measure
            if "thread_batch_points" in setting:
                workers.clear()
                _same(evaluate(pred, GroundTruth(gt), metrics, spacing=spacing), serial)
                assert any(name.startswith("ccmetrics") for name in workers), setting


def test_large_sparse_case_has_no_image_sized_label_map(monkeypatch):
    """A 2^21-voxel case is labelled on its voxel lists: cc3d is not called, results equal the box labelling."""
    gt, pred = lesion_case((160, 128, 128), n_lesions=10, radius_range=(2.0, 9.0), seed=2)
    calls = []
    original = components.cc3d_label
    monkeypatch.setattr(components, "cc3d_label", lambda *a: calls.append(a) or original(*a))
    result = evaluate(pred, gt, ["dice", "nsd", "hd95"])
    assert calls == []
    with engine_config(dense_runs=1 << 40):  # force cc3d on the bounding box
        reference = evaluate(pred, gt, ["dice", "nsd", "hd95"])
    assert len(calls) == 1
    _same(result, reference)


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("kernels_from", [1 << 60, 0])  # numpy, numba kernel
def test_mask_edges_equal_face_edges(rng, ndim, kernels_from):
    from ccmetrics.engine.surface import mask_edges

    for _ in range(30):
        mask = _random_mask(rng, ndim, 12, rng.uniform(0.1, 1.0))
        flat = np.flatnonzero(mask)
        coords = np.stack(np.unravel_index(flat, mask.shape), axis=1).reshape(-1, ndim)
        _, union = face_edges(flat, coords, mask.shape, mask.ravel(), True)
        with engine_config(kernels_from=kernels_from, compile_edges_from=kernels_from):
            np.testing.assert_array_equal(mask_edges(flat, mask.shape, mask.ravel()), union)


@pytest.mark.parametrize(
    "ndim,spacing", [(2, None), (2, (0.7, 1.3)), (3, (0.8, 0.8, 2.0)), (3, (0.9765625, 0.9765625, 3.3))]
)
def test_grouped_directed_distances_equal_one_tree_per_group(rng, ndim, spacing):
    """The extra group coordinate changes no bit: equal to a tree per group, inf for a group without targets."""
    from ccmetrics.engine.surface import directed_distances, grouped_directed_distances, physical

    shape = (50,) * ndim
    groups = 40
    src_g = np.sort(rng.integers(1, groups + 1, 3000))
    tgt_g = np.sort(rng.integers(1, groups, 800))  # the last group has no target points
    src = physical(rng.integers(0, 50, (3000, ndim)), spacing)
    tgt = physical(rng.integers(0, 50, (800, ndim)), spacing)
    span = image_diagonal(shape, spacing)
    got = grouped_directed_distances(src, src_g, tgt, tgt_g, span, workers=2)
    expected = np.concatenate([directed_distances(src[src_g == c], tgt[tgt_g == c]) for c in range(1, groups + 1)])
    np.testing.assert_array_equal(got, expected)
    assert np.isinf(got[src_g == groups]).all() and np.isfinite(got[src_g < groups]).all()


@pytest.mark.parametrize("sites", ["components", "labels"])
def test_the_gt_labelled_at_another_connectivity_reuses_its_voxel_list(rng, monkeypatch, sites):
    # detection's volumes (18-connectivity) and Lesion Dice (26) label the GT again: from the prepared voxel list,
    # with the same components as a labelling from scratch, and without another pass over the image
    gt_mask, _ = lesion_case((40, 36, 30), n_lesions=12, seed=int(rng.integers(1 << 30)))
    gt = gt_mask.astype(np.int32) * rng.integers(1, 4, gt_mask.shape) if sites == "labels" else gt_mask
    truth = GroundTruth(gt, sites=sites, connectivity=6)
    expected = {c: components.find_sites(gt != 0, connectivity=c) for c in (6, 18, 26)}
    scans = []
    flatnonzero = np.flatnonzero
    monkeypatch.setattr(components.np, "flatnonzero", lambda a: scans.append(a.size) or flatnonzero(a), raising=True)
    for c, want in expected.items():
        got = truth.components()(c)
        assert got.n == want.n
        np.testing.assert_array_equal(got.flat_index, want.flat_index)
        np.testing.assert_array_equal(got.label, want.label)
    assert gt.size not in scans  # no pass over the whole image


def _scan_cases(rng):
    """Masks for the voxel scan: every one-voxel mask of shapes whose sizes are not whole 8-byte words (a voxel in the
    first byte of a word, the last, and the bytes after the last whole word), then random masks of any density."""
    for shape in [(1, 1, 9), (3, 5, 7), (7, 3), (2, 8), (1, 17), (4, 4, 4)]:
        for at in range(int(np.prod(shape))):
            mask = np.zeros(shape, bool)
            mask.reshape(-1)[at] = True
            yield mask
    for _ in range(40):
        ndim = int(rng.integers(2, 4))
        yield _random_mask(rng, ndim, 19, rng.choice([0.0, 0.01, 0.1, 0.5, 1.0]))


def test_the_voxel_scan_kernel_equals_flatnonzero(rng):
    """The kernel lists a mask's voxels as numpy's ``flatnonzero`` of its C-ordered copy, from C- and Fortran-ordered
    memory (sorted there, as the callers sort it), and stops at its room: one voxel more than ``limit`` gives None."""
    from ccmetrics.engine._edge_kernels import mask_voxels

    for mask in _scan_cases(rng):
        expected = np.flatnonzero(mask)
        fortran = np.asfortranarray(mask)
        n = len(expected)
        for memory, is_fortran in ((mask.reshape(-1), False), (fortran.T.reshape(-1), True)):
            got = mask_voxels(memory, mask.shape, is_fortran, n)  # exactly the room it needs
            np.testing.assert_array_equal(np.sort(got) if is_fortran else got, expected)
            np.testing.assert_array_equal(mask_voxels(memory.view(np.uint8), mask.shape, is_fortran, n + 3), got)
            if n:
                assert mask_voxels(memory, mask.shape, is_fortran, n - 1) is None


def test_sorted_voxels_by_kernel_and_numpy(rng):
    """``sorted_voxels`` equals ``flatnonzero`` with the kernel forced, never used, and for masks it cannot scan (not
    C-contiguous, or denser than its room: numpy after the kernel gave up)."""
    from ccmetrics.engine.components import sorted_voxels

    for mask in _scan_cases(rng):
        for start in (0, 1 << 40):
            with engine_config(scan_kernel_from=start):
                np.testing.assert_array_equal(sorted_voxels(mask), np.flatnonzero(mask))
                view = mask[..., ::-1]  # not C-contiguous
                np.testing.assert_array_equal(sorted_voxels(view), np.flatnonzero(view))


def test_read_only_and_pickled_masks(tmp_path):
    """Read-only masks (a memory-mapped .npy file, C- and Fortran-ordered) are scanned and edge-tested by the kernels
    as writeable ones; a GroundTruth of a Fortran-ordered mask pickles before and after it is prepared, with the
    same numbers."""
    import pickle

    from ccmetrics.engine.components import CheckedMask, sorted_voxels

    gt, pred = lesion_case((40, 44, 36), n_lesions=5, radius_range=(2, 6), seed=2)
    for order in ("C", "F"):
        path = tmp_path / f"gt_{order}.npy"
        np.save(path, np.asarray(gt, order=order))
        mapped = np.load(path, mmap_mode="r")
        assert not mapped.flags.writeable
        with engine_config(EngineConfig().with_kernels(True)):
            mask, flat = CheckedMask(mapped, "gt").arrays()
            np.testing.assert_array_equal(mask, gt)
            if order == "C":
                np.testing.assert_array_equal(sorted_voxels(mapped), np.flatnonzero(gt))
            else:
                np.testing.assert_array_equal(flat, np.flatnonzero(gt))
            got = evaluate(gt=mapped, pred=pred, metrics=["dice", "nsd", "hd95"])
        expected = evaluate(gt=gt, pred=pred, metrics=["dice", "nsd", "hd95"])
        assert got.per_component.equals(expected.per_component)
    for prepare in (False, True):
        truth = GroundTruth(np.asfortranarray(gt), prepare=prepare)
        again = pickle.loads(pickle.dumps(truth))
        assert again.shape == gt.shape
        assert evaluate(gt=again, pred=pred, metrics=["dice"]).per_component.equals(
            evaluate(gt=gt, pred=pred, metrics=["dice"]).per_component
        )


def test_a_read_only_scan_is_taken_by_the_peak_kernel(tmp_path):
    """The SUVpeak kernel takes a read-only scan (a memory-mapped .npy, float32 through evaluate and float64 through
    suv_peak) with the values of a writeable copy: it failed with numba's "No matching definition" before."""
    import cc3d

    from ccmetrics.metrics.pet import suv_peak

    gt, pred = lesion_case((60, 60, 40), n_lesions=4, radius_range=(3, 8), seed=1)
    scan = (1 + 4 * gt + np.random.default_rng(0).random(gt.shape)).astype(np.float32)
    np.save(tmp_path / "scan.npy", scan)
    mapped = np.load(tmp_path / "scan.npy", mmap_mode="r")
    lesions = cc3d.connected_components(gt)
    read_only64 = scan.astype(np.float64)
    read_only64.flags.writeable = False
    with engine_config(EngineConfig().with_kernels(True)):
        got = evaluate(gt=gt, pred=pred, metrics=["pet"], image=mapped, spacing=(2.0, 2.0, 3.0))
        expected = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan.copy(), spacing=(2.0, 2.0, 3.0))
        assert got.per_component.equals(expected.per_component)
        np.testing.assert_array_equal(
            suv_peak(read_only64, lesions, spacing=(2.0, 2.0, 3.0)),
            suv_peak(read_only64.copy(), lesions, spacing=(2.0, 2.0, 3.0)),
        )


def test_a_checked_mask_is_made_c_ordered_once_whichever_thread_asks():
    """Eight threads ask a Fortran-ordered mask's CheckedMask for its arrays at once: one conversion, the same arrays
    for all, equal to numpy's C-ordered copy and its voxels; a GroundTruth left unprepared knows its shape before."""
    import threading

    from ccmetrics.engine.components import CheckedMask

    gt, _ = lesion_case((50, 40, 30), n_lesions=4, radius_range=(2, 6), seed=4)
    fortran = np.asfortranarray(gt)
    checked = CheckedMask(fortran, "gt")
    start, got = threading.Barrier(8), []

    def ask():
        start.wait()
        got.append(checked.arrays())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(mask is got[0][0] and flat is got[0][1] for mask, flat in got)
    np.testing.assert_array_equal(got[0][0], gt)
    np.testing.assert_array_equal(got[0][1], np.flatnonzero(gt))
    truth = GroundTruth(fortran, prepare=False)
    assert truth.shape == gt.shape and truth._array is None  # validated, not yet converted
    assert truth.array.flags.c_contiguous and truth.found.n == scipy_components(gt, 26)[1]
