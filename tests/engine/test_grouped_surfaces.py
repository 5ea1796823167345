"""Issue 44, point 3: the GT's edges from one mask test, and the block certification's per-site surfaces taken as
slices of a site-grouped list; both against independent computations (scipy's erosion, the brute-force EDT loop)."""

import numpy as np
import pytest
from conftest import many_query_case
from scipy import ndimage

from ccmetrics import GroundTruth, engine_config
from ccmetrics.engine.partition import assign_nearest


def _monai_edges(mask: np.ndarray) -> np.ndarray:
    """MONAI's edge rule: the mask XOR its erosion by the face-connected cross, outside the image background."""
    cross = ndimage.generate_binary_structure(mask.ndim, 1)
    return mask ^ ndimage.binary_erosion(mask, structure=cross, border_value=0)


def _gt_cases(rng):
    yield np.zeros((6, 7, 5), bool)  # empty GT
    one = np.zeros((5, 5, 5), bool)
    one[2, 2, 2] = True  # one voxel: its own edge
    yield one
    full = np.ones((4, 5, 6), bool)  # every voxel on the image border is an edge, the inside is not
    yield full
    touching = np.zeros((9, 9, 9), bool)
    touching[1:4, 1:4, 1:4] = True
    touching[4:7, 4:7, 4:7] = True  # touches the first cube at one corner: one component at 26-, two at 6-
    yield touching
    for shape in [(30, 28, 22), (40, 36), (17, 1, 23)]:
        for fill in (0.2, 0.55, 0.85):
            yield rng.random(shape) < fill


@pytest.mark.parametrize("kernels_from", [1 << 40, 1])  # the numpy test and the numba kernel
@pytest.mark.parametrize("connectivity", [None, "face"])
def test_gt_edges_are_monai_edges_of_the_mask(rng, kernels_from, connectivity):
    """Components of a mask: a component's own edges and the union's are both the mask's MONAI edges (a face
    neighbour in the mask is in the same component at any connectivity)."""
    for mask in _gt_cases(rng):
        conn = None if connectivity is None else (6 if mask.ndim == 3 else 4)
        with engine_config(
            kernels_from=kernels_from, compile_edges_from=kernels_from, loaded_kernels_from=kernels_from
        ):
            geometry = GroundTruth(mask, connectivity=conn).geometry
        flat = geometry.found.flat_index
        expected = _monai_edges(mask).ravel()[flat]
        np.testing.assert_array_equal(geometry.union_edge, expected)
        np.testing.assert_array_equal(geometry.own_edge, expected)
        assert geometry.own_edge is not geometry.union_edge  # two arrays: a caller may change one


def test_instance_labels_keep_their_own_edges():
    """With ``sites="labels"`` two touching instances stay separate: the voxels where they touch are edges of their
    own instance, not of the union (by hand)."""
    labels = np.zeros((1, 6), np.int32)
    labels[0, 1:3] = 1
    labels[0, 3:5] = 2
    geometry = GroundTruth(labels, sites="labels").geometry
    assert geometry.found.flat_index.tolist() == [1, 2, 3, 4]
    assert geometry.own_edge.tolist() == [True, True, True, True]  # one row: every voxel has a neighbour off-image
    labels = np.zeros((3, 6), np.int32)
    labels[:, 0:3] = 1
    labels[:, 3:6] = 2
    geometry = GroundTruth(labels, sites="labels").geometry
    own = dict(zip(geometry.found.flat_index.tolist(), geometry.own_edge.tolist()))
    union = dict(zip(geometry.found.flat_index.tolist(), geometry.union_edge.tolist()))
    assert own[8] and own[9]  # (1, 2) and (1, 3): beside the other instance
    assert not union[8] and not union[9]  # inside the union of both
    assert not own[7] and not union[7]  # (1, 1): all four neighbours in instance 1


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("grouped", [True, False])
def test_block_certification_with_grouped_or_shuffled_surfaces(seed, grouped):
    """The block certification reads each site's surface as a slice of a site-grouped list, and selects it by label
    otherwise: both give the brute-force EDT loop's labels (ties to the lowest label included)."""
    gt, spacing, coords, labels, query, expected, tie = many_query_case(seed)
    assert np.all(np.diff(labels) >= 0)  # site_surfaces groups by site
    if not grouped:
        order = np.random.default_rng(seed).permutation(len(labels))
        coords, labels = coords[order], labels[order]
        assert np.any(np.diff(labels) < 0)
    with engine_config(block_min_queries=1, dense_min_queries=1 << 40, compile_partition_from=1 << 40):
        got = assign_nearest(query, coords, labels, spacing)
    np.testing.assert_array_equal(got, expected[~gt])
    if seed >= 3:
        assert tie.any()


def _fortran_cases(rng):
    gt = rng.random((30, 28, 22)) < 0.01
    yield gt, rng.random(gt.shape) < 0.02  # sparse: the masks' voxels are found in their own memory order
    yield gt, rng.random(gt.shape) < 0.4  # a dense prediction: numpy's copy
    yield np.zeros((12, 9, 7), bool), rng.random((12, 9, 7)) < 0.03  # empty GT
    two_d = rng.random((40, 36)) < 0.03
    yield two_d, np.roll(two_d, 2, axis=1)


@pytest.mark.parametrize("scan_kernel_from", [0, 1 << 40])  # the numba kernel's scan, numpy's
@pytest.mark.parametrize("dtype", [bool, np.uint8, np.int16, np.float32])
def test_binary_mask_voxels_of_fortran_masks(rng, dtype, scan_kernel_from):
    """A Fortran-ordered mask (as NIfTI stores images) becomes numpy's C-ordered copy, with its voxels' C-order flat
    indices (numpy's ``flatnonzero`` of that copy) when they were found on the way."""
    from ccmetrics import engine_config
    from ccmetrics.engine.components import binary_mask_voxels

    for gt, pred in _fortran_cases(rng):
        for mask in (gt, pred):
            fortran = np.asfortranarray(mask.astype(dtype))
            with engine_config(scan_kernel_from=scan_kernel_from):
                got, flat = binary_mask_voxels(fortran, "pred")
            assert got.dtype == bool and got.flags.c_contiguous
            np.testing.assert_array_equal(got, np.ascontiguousarray(mask))
            if mask.mean() <= 1 / 16:
                np.testing.assert_array_equal(flat, np.flatnonzero(np.ascontiguousarray(mask)))
            else:
                assert flat is None
            assert binary_mask_voxels(np.ascontiguousarray(mask.astype(dtype)), "pred")[1] is None


def test_binary_mask_voxels_keeps_the_checks():
    from ccmetrics.engine.components import binary_mask_voxels

    bad = np.zeros((4, 5, 6), np.uint8, order="F")
    bad[1, 2, 3] = 2
    with pytest.raises(ValueError, match="holds the value 2"):
        binary_mask_voxels(bad, "gt")
    nan = np.zeros((4, 5), np.float32, order="F")
    nan[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        binary_mask_voxels(nan, "pred")


@pytest.mark.parametrize("scan_kernel_from", [0, 1 << 40])  # the numba kernel's scans, numpy's
@pytest.mark.parametrize("spacing", [None, (1.0, 1.0, 2.5)])
def test_fortran_ordered_inputs_give_the_same_numbers(rng, spacing, scan_kernel_from):
    """evaluate on Fortran-ordered masks equals evaluate on their C-ordered copies, every column and score, and the
    Dice of each region equals the count by hand (2 |P & G| / (|P| + |G|) over the region's voxels)."""
    from ccmetrics import engine_config, evaluate, voronoi_partition

    metrics = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]
    for gt, pred in _fortran_cases(rng):
        sp = None if spacing is None else spacing[: gt.ndim]
        with engine_config(scan_kernel_from=1 << 40):
            c = evaluate(gt=gt, pred=pred, metrics=metrics, spacing=sp)
        with engine_config(scan_kernel_from=scan_kernel_from):
            f = evaluate(
                gt=np.asfortranarray(gt), pred=np.asfortranarray(pred.astype(np.uint8)), metrics=metrics, spacing=sp
            )
        assert c.per_component.equals(f.per_component)
        assert c.cc == f.cc and c.standard == f.standard and c.case_scores == f.case_scores
        if gt.any():
            region = voronoi_partition(gt, spacing=sp)
            for k, dice in enumerate(f.per_component["dice"], start=1):
                p, g = pred & (region == k), gt & (region == k)
                assert dice == pytest.approx(2 * (p & g).sum() / (p.sum() + g.sum()))


def test_numba_is_loaded_once_scipy_served_enough_large_calls():
    """Calls from ``own_tree_from`` points below ``own_tree_import_from`` are served by scipy's tree until together
    they reach ``own_tree_import_from`` points; then numba's tree serves them, with the same distances (scipy's)."""
    import subprocess
    import sys

    code = """
import sys, numpy as np
from scipy.spatial import cKDTree
from ccmetrics import engine_config
from ccmetrics.engine.surface import directed_distances
p = np.random.default_rng(0).normal(size=(40000, 3)) * 20
expected = cKDTree(p[20000:]).query(p[:20000])[0].astype(np.float32)
loaded = []
with engine_config(own_tree_from=30000, own_tree_import_from=150000, compile_tree_from=150000):
    for _ in range(5):
        assert np.array_equal(directed_distances(p[:20000], p[20000:]), expected)
        loaded.append('numba' in sys.modules)
    directed_distances(p[:10], p[10:100])  # below own_tree_from: not counted
print(loaded)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[False, False, False, True, True]"  # 4 x 40000 points reach 150000


def test_mask_edges_use_the_kernel_once_it_is_loaded(monkeypatch):
    """From ``loaded_kernels_from`` voxels the edge kernel serves once it is loaded in the process (below
    ``kernels_from`` and ``compile_edges_from``), and its edges are MONAI's (scipy's erosion)."""
    from ccmetrics.engine import _edge_kernels, _launch
    from ccmetrics.engine.surface import mask_edges

    _edge_kernels._MASK_EDGES.compile()  # loaded here, whatever ran before (compiled if numba's cache lacks it)
    assert "_edge_kernels" in _launch._READY
    calls = []
    original = _edge_kernels.mask_edges
    monkeypatch.setattr(_edge_kernels, "mask_edges", lambda *a: calls.append(len(a[0])) or original(*a))
    mask = np.random.default_rng(3).random((20, 30, 25)) < 0.4
    flat = np.flatnonzero(mask)
    for loaded_from, used in ((len(flat), True), (len(flat) + 1, False)):
        calls.clear()
        with engine_config(kernels_from=1 << 40, compile_edges_from=1 << 40, loaded_kernels_from=loaded_from):
            np.testing.assert_array_equal(mask_edges(flat, mask.shape, mask.ravel()), _monai_edges(mask).ravel()[flat])
        assert bool(calls) is used
