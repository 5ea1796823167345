"""Components and the generalized Voronoi partition against brute force."""

import numpy as np
import pytest
from conftest import brute_force_partition, corner_tie_gt, many_query_case, scipy_components
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import ndimage

from ccmetrics import engine_config, evaluate, label_components, voronoi_partition
from ccmetrics.engine.components import find_sites
from ccmetrics.engine.partition import assign_nearest, site_surfaces

EXACT_SPACINGS_3D = [None, (1.0, 1.0, 2.5), (0.5, 0.75, 2.0), (2.0, 1.0, 1.0)]


@pytest.mark.parametrize("ndim,connectivity", [(2, 4), (2, 8), (3, 6), (3, 18), (3, 26)])
def test_label_components_matches_scipy_numbering(rng, ndim, connectivity):
    for _ in range(10):
        shape = tuple(rng.integers(5, 40 if ndim == 2 else 15, ndim))
        mask = rng.random(shape) < 0.3
        ours, n = label_components(mask, connectivity)
        ref, n_ref = scipy_components(mask, connectivity)
        assert n == n_ref
        np.testing.assert_array_equal(ours, ref)
        assert ours.dtype == np.int32


def test_label_components_default_connectivity_is_full():
    diagonal = np.eye(4, dtype=bool)
    assert label_components(diagonal)[1] == 1
    assert label_components(diagonal, 4)[1] == 4
    cube = np.zeros((3, 3, 3), bool)
    cube[0, 0, 0] = cube[1, 1, 1] = True
    assert label_components(cube)[1] == 1
    assert label_components(cube, 18)[1] == 2


def _check_against_brute_force(gt, spacing):
    labels, _ = label_components(gt)
    expected, _ = brute_force_partition(labels, spacing)
    np.testing.assert_array_equal(voronoi_partition(gt, spacing=spacing), expected)


@pytest.mark.parametrize("spacing", EXACT_SPACINGS_3D + [(0.83, 1.37, 2.91)])
def test_partition_3d_random_sparse(rng, spacing):
    for density in (0.005, 0.02, 0.08):
        gt = rng.random((18, 21, 15)) < density
        _check_against_brute_force(gt, spacing)


@pytest.mark.parametrize("spacing", [None, (1.0, 2.0), (0.5, 1.5), (0.7, 1.9)])
def test_partition_2d_random_sparse(rng, spacing):
    for density in (0.003, 0.02, 0.06):
        gt = rng.random((61, 47)) < density
        _check_against_brute_force(gt, spacing)


@pytest.mark.parametrize("ndim", [2, 3])
def test_partition_concentric_shells_many_ties(rng, ndim):
    """Rings around a core: regions nest and exact ties are everywhere."""
    n = 41 if ndim == 2 else 19
    grid = np.indices((n,) * ndim) - (n - 1) / 2
    radius = np.sqrt((grid**2).sum(axis=0))
    for step in (2, 3, 4):
        gt = np.zeros((n,) * ndim, bool)
        for r in np.arange(0, n / 2, step):
            gt |= np.abs(radius - r) < 0.5
        gt &= rng.random(gt.shape) > 0.3
        for spacing in (None, (1.0,) * (ndim - 1) + (2.0,)):
            _check_against_brute_force(gt, spacing)


def test_partition_two_points_tie_goes_to_lowest_label():
    gt = np.zeros((1, 7), bool)
    gt[0, 0] = gt[0, 6] = True
    # voxel 3 is equidistant: goes to component 1
    np.testing.assert_array_equal(voronoi_partition(gt), [[1, 1, 1, 1, 2, 2, 2]])
    # with a spacing the tie persists (both distances 3 * s)
    np.testing.assert_array_equal(voronoi_partition(gt, spacing=(1.0, 0.5)), [[1, 1, 1, 1, 2, 2, 2]])


def test_partition_empty_and_single():
    assert not voronoi_partition(np.zeros((4, 5), bool)).any()
    gt = np.zeros((4, 5, 6), bool)
    gt[1, 1, 1] = True
    assert (voronoi_partition(gt) == 1).all()


def test_partition_respects_connectivity():
    gt = np.eye(5, dtype=bool)
    assert (voronoi_partition(gt) == 1).all()
    assert voronoi_partition(gt, connectivity=4).max() == 5


def test_partition_instance_labels_keep_touching_nuclei_apart(rng):
    labels = np.zeros((40, 40), np.int32)
    labels[5:15, 5:15] = 7
    labels[5:15, 15:25] = 3  # touches label 7
    labels[30:35, 30:38] = 12
    part = voronoi_partition(labels, sites="labels")
    # sites renumbered in increasing label value: 3 -> 1, 7 -> 2, 12 -> 3
    expected, _ = brute_force_partition(np.searchsorted([0, 3, 7, 12], labels).astype(np.int32))
    np.testing.assert_array_equal(part, expected)
    assert set(np.unique(part)) == {1, 2, 3}


@settings(max_examples=60, deadline=None)
@given(
    gt=arrays(
        bool,
        st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)),
        elements=st.sampled_from([False] * 9 + [True]),
    ),
    spacing=st.sampled_from(EXACT_SPACINGS_3D),
)
def test_partition_property_3d(gt, spacing):
    _check_against_brute_force(gt, spacing)


@settings(max_examples=60, deadline=None)
@given(
    gt=arrays(bool, st.tuples(st.integers(1, 25), st.integers(1, 25)), elements=st.sampled_from([False] * 12 + [True])),
    spacing=st.sampled_from([None, (1.0, 2.0), (0.25, 1.0), (3.0, 1.0)]),
    connectivity=st.sampled_from([4, 8]),
)
def test_partition_property_2d(gt, spacing, connectivity):
    labels, _ = label_components(gt, connectivity)
    expected, _ = brute_force_partition(labels, spacing)
    np.testing.assert_array_equal(voronoi_partition(gt, spacing, connectivity), expected)


def test_sparse_assignment_equals_dense_map(rng):
    gt = rng.random((25, 30, 20)) < 0.01
    spacing = (1.0, 1.0, 2.5)
    found = find_sites(gt)
    site_map = np.zeros(gt.size, np.int32)
    site_map[found.flat_index] = found.label
    coords, labels = site_surfaces(found, site_map)
    query = np.argwhere(~gt)
    expected, _ = brute_force_partition(label_components(gt)[0], spacing)
    np.testing.assert_array_equal(assign_nearest(query, coords, labels, spacing), expected[~gt])


@pytest.mark.parametrize(
    "shape,voxels",
    [
        ((3, 1, 1), [(0, 0, 0), (2, 0, 0)]),
        ((1, 3, 3), [(0, 0, 0), (0, 0, 2), (0, 2, 0), (0, 2, 2)]),
        ((40, 40, 40), [(20, 10, 10), (20, 12, 10), (20, 14, 10)]),  # a thin crop inside a volume
        ((32, 32, 1), [(5, 5, 0), (5, 7, 0)]),  # a 2D image stored as 3D
        ((3, 3, 3), [(i, j, k) for i in (0, 2) for j in (0, 2) for k in (0, 2)]),  # 8 corners of a cube
    ],
)
def test_thin_masks_are_labelled(shape, voxels):
    """cc3d 4.1 fails on some small sparse arrays; the labelling pads them."""
    mask = np.zeros(shape, bool)
    mask[tuple(np.array(voxels).T)] = True
    labels, n = label_components(mask)
    ref, n_ref = scipy_components(mask, 26)
    assert n == n_ref == len(voxels)
    np.testing.assert_array_equal(labels, ref)
    expected, _ = brute_force_partition(ref)
    np.testing.assert_array_equal(voronoi_partition(mask), expected)


def test_isolated_tie_in_instance_labels():
    """Voxel (1, 0) is at squared distance 10 from label 1 and from label 2, while all its
    neighbours are strictly closer to label 2: no local test finds the tie."""
    gt = np.array([[0, 0, 0, 2], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 2, 0, 0]])
    part = voronoi_partition(gt, sites="labels")
    assert part[1, 0] == 1
    expected, tie = brute_force_partition(gt.astype(np.int32))
    assert tie[1, 0]
    np.testing.assert_array_equal(part, expected)


def test_isolated_tie_between_components_in_a_corner():
    """(0, 0, 0) is at squared distance 49 from (2, 3, 6) in component 1 and (2, 6, 3) in component 2."""
    gt = corner_tie_gt()
    labels, n = label_components(gt)
    assert n == 2
    expected, tie = brute_force_partition(labels)
    assert tie[0, 0, 0] and expected[0, 0, 0] == 1
    np.testing.assert_array_equal(voronoi_partition(gt), expected)


@pytest.mark.parametrize("radius_sq", [25, 50, 65, 325])
def test_lattice_circles_of_equidistant_sites(rng, radius_sq):
    """Instance sites on a lattice circle around the centre: the centre is tied between all of them."""
    r = int(np.ceil(np.sqrt(radius_sq)))
    n = 2 * r + 3
    points = [(i, j) for i in range(-r, r + 1) for j in range(-r, r + 1) if i * i + j * j == radius_sq]
    gt = np.zeros((n, n), np.int32)
    for lab, (i, j) in zip(rng.permutation(len(points)) + 1, points):
        gt[i + r + 1, j + r + 1] = lab
    expected, tie = brute_force_partition(gt)
    assert tie[r + 1, r + 1]
    np.testing.assert_array_equal(voronoi_partition(gt, sites="labels"), expected)
    np.testing.assert_array_equal(voronoi_partition(gt, sites="labels", spacing=(1.0, 1.0)), expected)


@pytest.mark.parametrize("seed", range(6))
def test_block_certification_equals_brute_force(seed):
    """Whole blocks, then single voxels labelled at once (many query voxels) give the per-voxel rule's labels, ties
    included; only the tied voxels are left to the exact rule, with the labels of the sites they are tied between."""
    import ccmetrics.engine.partition as partition

    gt, spacing, coords, labels, query, expected, tie = many_query_case(seed)
    with engine_config(block_min_queries=1):  # certify blocks even on these small images
        got = assign_nearest(query, coords, labels, spacing)
        left, tied = partition._certify_blocks(
            query, coords, labels, np.unique(labels), spacing, np.empty(len(query), np.int32)
        )
    np.testing.assert_array_equal(got, expected[~gt])
    np.testing.assert_array_equal(np.sort(left), np.flatnonzero(tie[~gt]))  # the ties, and nothing else, are left
    site_map = label_components(gt)[0]
    distance = np.stack([ndimage.distance_transform_edt(site_map != c, sampling=spacing) for c in np.unique(labels)])
    at_left = distance[:, ~gt][:, left]  # (sites, voxels left): the sites at the minimum of each voxel left
    at_minimum = at_left <= at_left.min(axis=0) * (1 + 1e-9) + 1e-12
    np.testing.assert_array_equal(tied, np.unique(labels)[at_minimum.any(axis=1)])
    if seed >= 3:
        assert tie.any()  # the case does exercise ties


@pytest.mark.parametrize("spread", [6, 4000])  # a small grid of cells (marker grid) and a sparse one (sort)
def test_blocks_group_points_by_cell(rng, spread):
    import ccmetrics.engine.partition as partition

    points = rng.integers(0, spread, size=(300, 3))
    for side in (8, 2):
        blocks, inverse = partition._blocks(points, side)
        keys = {tuple(row) for row in (points // side).tolist()}
        assert sorted(keys) == [tuple(row) for row in blocks.tolist()]  # each cell once, in raster order
        np.testing.assert_array_equal(blocks[inverse], points // side)


def test_block_certification_skips_far_sites_and_keeps_the_labels(rng):
    """Many sites far apart: each block measures only the sites its bounding boxes allow (the others cannot be the
    nearest nor within the band), and the labels are the per-voxel rule's."""
    gt = np.zeros((40, 120, 120), bool)
    for z, y, x in rng.integers(4, [36, 116, 116], size=(30, 3)):
        gt[z - 1 : z + 2, y - 2 : y + 1, x : x + 3] = True
    surface_coords, surface_labels = site_surfaces(find_sites(gt))
    query = np.argwhere(~gt)[::7]
    for spacing in (None, (3.0, 0.8, 0.8)):
        with engine_config(block_min_queries=1):
            got = assign_nearest(query, surface_coords, surface_labels, spacing)
        with engine_config(
            block_min_queries=1 << 40, dense_min_queries=1 << 40, compile_partition_from=1 << 40
        ):  # the exact rule for every voxel
            expected = assign_nearest(query, surface_coords, surface_labels, spacing)
        np.testing.assert_array_equal(got, expected)


def test_block_certification_keeps_the_isolated_corner_tie():
    gt = corner_tie_gt()
    pred = np.ones_like(gt)
    expected, tie = brute_force_partition(label_components(gt)[0])
    assert tie[0, 0, 0]
    with engine_config(block_min_queries=1):
        result = evaluate(pred, gt, ["dice"])
    counts = (
        np.bincount(expected[pred & ~gt], minlength=3)[1:] + np.bincount(label_components(gt)[0][gt], minlength=3)[1:]
    )
    assert result.per_component["dice"].tolist() == pytest.approx(
        [2 * v / (v + c) for v, c in zip(result.per_component["volume"], counts)]
    )


# --------------------------------------------------------------------------------------------------
# the region map a caller keeps on a GroundTruth (GroundTruth.region_map)
# --------------------------------------------------------------------------------------------------


def _same_result(a, b):
    assert a.per_component.equals(b.per_component)
    assert a.cc == b.cc and a.standard == b.standard and a.case_scores == b.case_scores


@pytest.mark.parametrize("seed", range(6))
def test_kept_region_map_equals_brute_force(seed):
    """GroundTruth.region_map is the brute-force partition, ties included (seeds 3-5: lattices of exact ties)."""
    from ccmetrics import GroundTruth

    gt, spacing, *_, expected, tie = many_query_case(seed)
    truth = GroundTruth(gt)
    kept = truth.region_map(spacing)
    np.testing.assert_array_equal(kept, expected)
    assert seed < 3 or tie.any()
    assert truth.region_map(spacing).base is kept.base  # computed once
    assert not kept.flags.writeable
    with pytest.raises(ValueError):  # nor can it be made writeable: later evaluations read it
        kept.flags.writeable = True
    np.testing.assert_array_equal(
        GroundTruth(corner_tie_gt()).region_map(), brute_force_partition(label_components(corner_tie_gt())[0])[0]
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sites", ["components", "labels"])
def test_evaluation_with_a_kept_region_map_changes_no_value(monkeypatch, seed, sites):
    """Many voxels outside the GT, read from the kept map: the same tables bit for bit, and no search."""
    import ccmetrics.engine.geometry as geometry
    from ccmetrics import GroundTruth

    gt, spacing, *_ = many_query_case(seed)
    rng = np.random.default_rng(seed)
    if sites == "labels":  # instance values neither 1..K nor sorted in raster order
        labels, n = label_components(gt)
        values = rng.permutation(np.arange(3, 3 + 5 * n, 5))
        gt = np.where(labels > 0, values[labels - 1], 0)
    pred = ndimage.binary_dilation(gt > 0, iterations=2) ^ (rng.random(gt.shape) < 0.05)
    pred[: gt.shape[0] // 3] = rng.random(pred[: gt.shape[0] // 3].shape) < 0.5  # a foreground-heavy slab
    metrics = ["dice", "nsd", "hd95", "assd", "pq", "detection"]
    expected = evaluate(pred, gt, metrics, spacing=spacing, sites=sites)
    truth = GroundTruth(gt, sites=sites)
    truth.region_map(spacing)
    searched = []
    original = geometry.assign_nearest_flat
    monkeypatch.setattr(geometry, "assign_nearest_flat", lambda *a: searched.append(1) or original(*a))
    _same_result(evaluate(pred, truth, metrics, spacing=spacing, sites=sites), expected)
    assert searched == []  # read from the map
    other = (2.0,) * gt.ndim  # a map kept for another spacing is not used: searched, and still right
    with_other = evaluate(pred, truth, metrics, spacing=other, sites=sites)
    assert searched == [1]
    _same_result(with_other, evaluate(pred, gt, metrics, spacing=other, sites=sites))


def test_instance_values_give_their_site_inside_the_gt():
    """Inside the GT a label map's region is its value's site (sorted values renumbered 1..K), as the brute force."""
    gt = np.zeros((12, 12), np.int64)
    gt[1:4, 1:4], gt[1:4, 4:7], gt[8:11, 2:5] = 900, 7, 40  # touching instances 900 and 7
    pred = np.zeros(gt.shape, bool)
    pred[2:10, 2:6] = True
    result = evaluate(pred, gt, ["dice"], sites="labels")
    partition, _ = brute_force_partition(np.searchsorted([7, 40, 900], gt) * (gt > 0) + (gt > 0))
    for k, (value, dice) in enumerate(zip((7, 40, 900), result.per_component["dice"]), 1):
        p, g = pred & (partition == k), gt == value
        assert dice == pytest.approx(2 * (p & g).sum() / (p.sum() + g.sum()), abs=0, rel=1e-12)
