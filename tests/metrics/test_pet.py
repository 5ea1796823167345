"""PET quantification kernels (ccmetrics.metrics.pet, pet_agreement) against brute force and hand formulas."""

import itertools
import time

import numpy as np
import pytest
from scipy import ndimage
from scipy.spatial.distance import pdist

from ccmetrics.engine.components import ComponentCache, find_sites, label_components
from ccmetrics.engine.config import engine_config
from ccmetrics.engine.partition import voronoi_partition
from ccmetrics.metrics.pet import (
    PERCIST_RADIUS_MM,
    centroids_mm,
    dmax_mm,
    extent_mm,
    farthest_pair_distance,
    hottest_voxel_detected,
    lesion_uptake,
    patient_uptake,
    region_uptake,
    suv_peak,
)
from ccmetrics.metrics.pet_agreement import agreement, bland_altman, icc_a1, lin_ccc, relative_error

SPACINGS = [(1.0, 1.0, 1.0), (3.0, 2.0364, 2.0364), (1.5, 4.0, 2.5), (5.0, 0.8, 1.3)]


def scan_and_lesions(shape=(14, 16, 18), seed=0, n_blobs=5, at_border=True):
    rng = np.random.default_rng(seed)
    image = rng.gamma(2.0, 1.5, size=shape).astype(np.float32)
    mask = np.zeros(shape, bool)
    for _ in range(n_blobs):
        centre = rng.integers(0, shape)
        size = rng.integers(1, 4, size=3)
        mask[tuple(slice(max(c - s, 0), c + s) for c, s in zip(centre, size))] = True
    if at_border:
        mask[0, 0, :3] = mask[-1, -2:, -1] = True
    labels, n = label_components(mask)
    return image, mask, labels, n


# ----------------------------------------------------------------------------- lesion uptake


def reference_uptake(image, labels, n, spacing):
    voxel_ml = np.prod(spacing) / 1000
    values = image.astype(np.float64)
    rows = []
    for k in range(1, n + 1):
        at = np.argwhere(labels == k)  # C order
        v = values[tuple(at.T)]
        hot = at[np.flatnonzero(v == v.max())[0]]
        rows.append((v.max(), v.mean(), len(v) * voxel_ml, v.sum() * voxel_ml, np.ravel_multi_index(hot, labels.shape)))
    return [np.array(c) for c in zip(*rows)]


@pytest.mark.parametrize("spacing", SPACINGS[:3])
@pytest.mark.parametrize("order", ["C", "F"])
def test_lesion_uptake_equals_a_loop_over_lesions(spacing, order):
    image, _, labels, n = scan_and_lesions()
    image = np.asarray(image, order=order)
    u = lesion_uptake(image, np.asarray(labels, order=order), n, spacing)
    suv_max, suv_mean, mtv, tlg, hot = reference_uptake(image, labels, n, spacing)
    np.testing.assert_array_equal(u["suv_max"], suv_max)
    np.testing.assert_allclose(u["suv_mean"], suv_mean, rtol=1e-12)
    np.testing.assert_allclose(u["mtv_ml"], mtv, rtol=1e-12)
    np.testing.assert_allclose(u["tlg"], tlg, rtol=1e-12)
    np.testing.assert_allclose(u["tlg"], u["mtv_ml"] * u["suv_mean"], rtol=1e-12)
    np.testing.assert_array_equal(u["hot_index"], hot)
    np.testing.assert_array_equal(u["suv_max"], ndimage.maximum(image, labels, np.arange(1, n + 1)))
    assert u["voxels"].tolist() == np.bincount(labels.ravel())[1:].tolist()


def test_lesion_uptake_from_sites_equals_the_label_map():
    image, mask, labels, n = scan_and_lesions(seed=3)
    from_map = lesion_uptake(image, labels, n, SPACINGS[1])
    for sites in (find_sites(mask), ComponentCache(mask)(26)):
        from_sites = lesion_uptake(image, sites, None, SPACINGS[1])
        for key, value in from_map.items():
            np.testing.assert_array_equal(from_sites[key], value, err_msg=key)


def test_hottest_voxel_is_the_first_in_c_order_among_ties():
    image = np.zeros((3, 4, 4), np.float32)
    labels = np.zeros((3, 4, 4), int)
    labels[1:3, 1:3, 1:3] = 1
    image[2, 1, 2] = image[1, 2, 1] = image[2, 2, 2] = 7.0  # (1, 2, 1) comes first in C order
    u = lesion_uptake(image, labels, 1)
    assert np.unravel_index(u["hot_index"][0], image.shape) == (1, 2, 1)
    pred = np.zeros_like(labels, bool)
    pred[2, 1, 2] = True  # covers a tied maximum, not the first
    assert hottest_voxel_detected(u["hot_index"], pred).tolist() == [False]
    pred[1, 2, 1] = True
    assert hottest_voxel_detected(u["hot_index"], pred).tolist() == [True]
    assert hottest_voxel_detected(u["hot_index"], np.flatnonzero(pred)).tolist() == [True]
    assert hottest_voxel_detected(u["hot_index"], np.asfortranarray(pred)).tolist() == [True]


def test_an_empty_label_and_an_empty_image():
    image = np.arange(12.0).reshape(3, 4)
    u = lesion_uptake(image, np.array([[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 3]]), 3)
    assert u["voxels"].tolist() == [1, 0, 1] and u["hot_index"].tolist() == [1, -1, 11]
    assert np.isnan(u["suv_max"][1]) and np.isnan(u["suv_mean"][1]) and u["mtv_ml"][1] == 0 and u["tlg"][1] == 0
    assert hottest_voxel_detected(u["hot_index"], np.ones((3, 4), bool)).tolist() == [True, False, True]
    empty = lesion_uptake(image, np.zeros((3, 4), int), 0)
    assert all(len(v) == 0 for v in empty.values())
    assert np.isnan(suv_peak(image, np.array([[0, 1, 0, 0], [0] * 4, [0] * 4]), 2)[1])


def test_non_finite_suv_inside_a_lesion_is_refused_by_name():
    image, mask, labels, n = scan_and_lesions(seed=1)
    k = n // 2 + 1
    spot = tuple(np.argwhere(labels == k)[0])
    image[spot] = np.nan
    for call in (
        lambda: lesion_uptake(image, labels, n),
        lambda: suv_peak(image, labels, n),
    ):
        with pytest.raises(ValueError, match=f"lesion {k}"):
            call()
    with pytest.raises(ValueError, match="non-finite SUV"):
        patient_uptake(image, mask)
    with pytest.raises(ValueError, match=f"region of lesion {k}"):
        region_uptake(image, labels == k, labels.clip(1, None) * 0 + k, n)


def test_non_finite_suv_near_a_lesion_only_matters_within_the_radius(peak_path):
    image = np.ones((5, 5, 40), np.float32)
    labels = np.zeros(image.shape, int)
    labels[2, 2, 2] = 1
    image[2, 2, 30] = np.inf  # 28 mm away: outside every sphere, inside no lesion
    assert suv_peak(image, labels, 1)[0] == 1.0
    image[2, 2, 8] = np.inf  # 6 mm from the lesion voxel
    with pytest.raises(ValueError, match="SUVpeak radius"):
        suv_peak(image, labels, 1)


# ----------------------------------------------------------------------------- SUVpeak


def brute_force_peak(image, labels, n, spacing, radius):
    values = image.astype(np.float64)
    reach = [int(radius // s) + 1 for s in spacing]
    offsets = np.array(list(itertools.product(*(range(-r, r + 1) for r in reach))))
    d = offsets * np.asarray(spacing)
    sphere = offsets[((d[:, 0] ** 2 + d[:, 1] ** 2) + d[:, 2] ** 2) <= radius * radius]
    out = []
    for k in range(1, n + 1):
        best = -np.inf
        for centre in np.argwhere(labels == k):
            p = centre + sphere
            inside = np.all((p >= 0) & (p < image.shape), axis=1)
            best = max(best, values[tuple(p[inside].T)].mean())
        out.append(best)
    return np.array(out)


@pytest.fixture(params=["as chosen", "box sums", "per voxel", "compiled kernel", "numpy box sums"])
def peak_path(request, monkeypatch):
    """SUVpeak sums a compact lesion's box whole and a sparse lesion voxel by voxel: test each way; a compact lesion
    of a float image in the compiled kernel (compiled here if numba's cache lacks it) or in numpy, whatever this
    process has loaded."""
    if request.param == "as chosen":
        yield request.param
        return
    config = {
        "box sums": {"peak_box_ratio": 10**12},
        "per voxel": {"peak_box_ratio": 0},
        "compiled kernel": {"peak_box_ratio": 10**12, "peak_kernel_from": 0, "compile_peak_from": 0},
        "numpy box sums": {"peak_box_ratio": 10**12, "peak_kernel_from": 1 << 62, "compile_peak_from": 1 << 62},
    }[request.param]
    with engine_config(**config):
        yield request.param


@pytest.mark.parametrize("spacing", SPACINGS)
def test_suv_peak_equals_brute_force_over_sphere_offsets(spacing, peak_path):
    image, _, labels, n = scan_and_lesions(shape=(12, 13, 15), seed=7)
    got = suv_peak(image, labels, n, spacing)
    np.testing.assert_allclose(got, brute_force_peak(image, labels, n, spacing, PERCIST_RADIUS_MM), rtol=1e-12)


def test_suv_peak_of_a_sparse_lesion_far_from_the_border(peak_path):
    rng = np.random.default_rng(3)
    image = rng.gamma(2.0, 1.0, size=(30, 30, 30))
    labels = np.zeros(image.shape, int)
    for k in range(8, 22):
        labels[k, k, k] = labels[k, 29 - k, k] = 1  # two diagonals: one component under 26-connectivity
    labels[15, 15, 20:23] = 2
    spacing = (2.0, 1.5, 1.0)
    np.testing.assert_allclose(
        suv_peak(image, labels, 2, spacing), brute_force_peak(image, labels, 2, spacing, PERCIST_RADIUS_MM), rtol=1e-12
    )


@pytest.mark.parametrize("radius", [0.0, 2.5, 9.0])
def test_suv_peak_other_radii_fortran_order_and_sites(radius, peak_path):
    image, mask, labels, n = scan_and_lesions(shape=(10, 11, 12), seed=11)
    spacing = (2.0, 1.2, 1.7)
    expected = brute_force_peak(image, labels, n, spacing, radius)
    np.testing.assert_allclose(suv_peak(np.asfortranarray(image), labels, n, spacing, radius), expected, rtol=1e-12)
    np.testing.assert_allclose(suv_peak(image, find_sites(mask), None, spacing, radius), expected, rtol=1e-12)
    if radius == 0:
        np.testing.assert_array_equal(
            suv_peak(image, labels, n, spacing, radius), lesion_uptake(image, labels)["suv_max"]
        )


def test_suv_peak_in_2d_is_the_disc(peak_path):
    rng = np.random.default_rng(5)
    image = rng.random((20, 20))
    labels, n = label_components(rng.random((20, 20)) > 0.9)
    got = suv_peak(image, labels, n, (1.5, 2.0))
    expected = brute_force_peak(image[None], labels[None], n, (1e9, 1.5, 2.0), PERCIST_RADIUS_MM)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_suv_peak_of_a_uniform_scan_is_its_value_even_at_the_corner(peak_path):
    image = np.full((9, 9, 9), 3.25, np.float32)
    labels = np.zeros(image.shape, int)
    labels[0, 0, 0] = 1
    labels[4, 4, 4] = 2
    np.testing.assert_allclose(suv_peak(image, labels, 2, (2.0, 2.0, 3.0)), [3.25, 3.25], rtol=1e-15)


# ----------------------------------------------------------------------------- the prediction in the Voronoi regions


@pytest.mark.parametrize("spacing", SPACINGS[:2])
def test_region_uptake_equals_brute_force_on_the_voronoi_partition(spacing):
    image, mask, labels, n = scan_and_lesions(seed=2)
    rng = np.random.default_rng(9)
    pred = ndimage.binary_dilation(mask) & (rng.random(mask.shape) > 0.3)
    pred[:, :, 0] = False  # some region may end up without predicted voxels
    regions = voronoi_partition(mask, spacing=spacing)
    r = region_uptake(image, pred, regions, n, spacing)
    voxel_ml = np.prod(spacing) / 1000
    for k in range(1, n + 1):
        v = image[pred & (regions == k)].astype(np.float64)
        assert r["pred_mtv_ml"][k - 1] == pytest.approx(len(v) * voxel_ml, rel=1e-12)
        assert r["pred_tlg"][k - 1] == pytest.approx(v.sum() * voxel_ml, rel=1e-12, abs=0)
        if len(v):
            assert r["pred_suv_max"][k - 1] == v.max()
            assert r["pred_suv_mean"][k - 1] == pytest.approx(v.mean(), rel=1e-12)
        else:
            assert np.isnan(r["pred_suv_max"][k - 1]) and np.isnan(r["pred_suv_mean"][k - 1])
    flat = np.flatnonzero(pred)
    as_lists = region_uptake(image, flat, regions.ravel()[flat], n, spacing)
    for key, value in r.items():
        np.testing.assert_array_equal(as_lists[key], value, err_msg=key)


def test_region_uptake_without_prediction():
    r = region_uptake(np.ones((4, 4)), np.zeros((4, 4), bool), np.ones((4, 4), int), 2)
    assert r["pred_mtv_ml"].tolist() == [0, 0] and r["pred_tlg"].tolist() == [0, 0]
    assert np.isnan(r["pred_suv_max"]).all() and np.isnan(r["pred_suv_mean"]).all()


# ----------------------------------------------------------------------------- per patient


def test_patient_uptake_equals_the_framework_definitions():
    image, mask, labels, n = scan_and_lesions(seed=4)
    spacing = (3.0, 2.0364, 2.0364)
    p = patient_uptake(np.asfortranarray(image), mask, spacing)
    v = image[mask].astype(np.float64)
    voxel_ml = np.prod(spacing) / 1000
    assert p["tmtv_ml"] == pytest.approx(mask.sum() * voxel_ml, rel=1e-12)
    assert p["tlg"] == pytest.approx(v.sum() * voxel_ml, rel=1e-12)
    assert p["suv_max"] == v.max() and p["suv_mean"] == pytest.approx(v.mean(), rel=1e-12)
    assert patient_uptake(image, find_sites(mask), spacing) == pytest.approx(p, rel=1e-12)
    u = lesion_uptake(image, labels, n, spacing)
    assert u["tlg"].sum() == pytest.approx(p["tlg"], rel=1e-12)
    empty = patient_uptake(image, np.zeros_like(mask), spacing)
    assert empty["tmtv_ml"] == 0 and empty["tlg"] == 0 and np.isnan(empty["suv_max"]) and np.isnan(empty["suv_mean"])


def brute_force_extent(mask, spacing):
    points = np.argwhere(mask) * np.asarray(spacing)
    return float(pdist(points).max()) if len(points) > 1 else (0.0 if len(points) else float("nan"))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("spacing", SPACINGS)
def test_extent_equals_brute_force_on_random_masks(seed, spacing):
    rng = np.random.default_rng(seed)
    mask = rng.random((9, 10, 11)) > rng.choice([0.5, 0.95, 0.995])
    expected = brute_force_extent(mask, spacing)
    assert extent_mm(mask, spacing) == pytest.approx(expected, rel=1e-12)
    assert extent_mm(find_sites(mask, connectivity=6), spacing) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("spacing", SPACINGS)
def test_extent_of_degenerate_sets(spacing):
    shape = (8, 9, 10)
    cases = {
        "one voxel": [(3, 4, 5)],
        "two voxels": [(0, 0, 0), (7, 8, 9)],
        "colinear on an axis": [(2, 3, k) for k in (1, 4, 5, 9)],
        "colinear on a diagonal": [(k, 2 * k, k) for k in range(4)],
        "coplanar, axis plane": [(2, y, x) for y in range(9) for x in range(10) if (x * y) % 3 == 1],
        "coplanar, oblique plane": [(z, y, z + y) for z in range(5) for y in range(4) if (z + y) % 2 == 0],
        "coplanar with a colinear part": [(1, 1, 1), (1, 1, 5), (1, 1, 7), (1, 6, 2)],
        "a tetrahedron": [(0, 0, 0), (7, 0, 0), (0, 8, 0), (0, 0, 9)],
    }
    for name, voxels in cases.items():
        mask = np.zeros(shape, bool)
        mask[tuple(np.array(voxels).T)] = True
        expected = brute_force_extent(mask, spacing)
        assert extent_mm(mask, spacing) == pytest.approx(expected, rel=1e-12), name
        points = np.array(voxels)
        assert farthest_pair_distance(points, spacing) == pytest.approx(expected, rel=1e-12), name
        assert farthest_pair_distance(points * np.array(spacing)) == pytest.approx(expected, rel=1e-12), name
    assert np.isnan(extent_mm(np.zeros(shape, bool), spacing))


def test_extent_of_sites_sharing_an_image_row():
    mask = np.zeros((3, 4, 10), bool)
    mask[0, 0, 5] = mask[0, 1, 5] = mask[0, 1, 6] = True  # site 1 ends at (0, 1, 6) ...
    mask[0, 1, 2] = True  # ... in the row where site 2 starts
    mask[2, 3, 0] = True  # the farthest from (0, 1, 6)
    sites = find_sites(mask)
    assert sites.n == 3
    assert extent_mm(sites) == extent_mm(mask) == pytest.approx(np.sqrt(4 + 4 + 36), rel=1e-15)


def test_degenerate_sets_are_reduced_to_their_extreme_points_not_brute_forced():
    from ccmetrics.metrics.pet import _extreme_candidates

    grid = np.array([(z, y, x) for z in range(6) for y in range(7) for x in range(8)])
    sets = {
        "axis plane": grid[grid[:, 0] == 2],
        "oblique plane": grid[grid[:, 0] + 2 * grid[:, 1] == 6],
        "steep plane": grid[3 * grid[:, 0] == grid[:, 1] + grid[:, 2]],
        "line": grid[(grid[:, 0] == grid[:, 1]) & (grid[:, 1] == grid[:, 2])],
    }
    for name, points in sets.items():
        found = _extreme_candidates(points)
        assert 2 <= len(found) <= 8 and len(found) < len(points), name
        expected = pdist(points * np.array([1.3, 0.7, 2.1])).max()
        assert farthest_pair_distance(points, (1.3, 0.7, 2.1)) == pytest.approx(expected, rel=1e-12), name


def test_farthest_pair_of_random_point_sets_in_2d_and_3d():
    rng = np.random.default_rng(0)
    for dim, m in itertools.product((2, 3), (2, 3, 5, 40, 300)):
        pts = rng.integers(-50, 50, size=(m, dim))
        spacing = rng.uniform(0.5, 4.0, size=dim)
        expected = pdist(pts * spacing).max()
        assert farthest_pair_distance(pts, spacing) == pytest.approx(expected, rel=1e-12)
        floats = rng.normal(size=(m, dim)) * 30
        assert farthest_pair_distance(floats) == pdist(floats).max()
    big = rng.normal(size=(5000, 3))  # above the brute-force size: Qhull's vertices
    assert farthest_pair_distance(big) == pytest.approx(pdist(big).max(), rel=1e-12)
    flat = np.column_stack([rng.normal(size=(3000, 2)), np.zeros(3000)])  # Qhull refuses a flat set: brute force
    assert farthest_pair_distance(flat) == pytest.approx(pdist(flat).max(), rel=1e-12)


def test_extent_of_a_100000_voxel_lesion_is_fast_and_exact():
    z, y, x = np.ogrid[:64, :64, :64]
    ball = (z - 31.5) ** 2 + (y - 31.5) ** 2 + (x - 31.5) ** 2 <= 28.8**2
    assert 95_000 < ball.sum() < 105_000
    extent_mm(ball, 1.0)  # warm (scipy.spatial import)
    start = time.perf_counter()
    got = extent_mm(ball, (1.0, 0.9, 1.1))
    took = time.perf_counter() - start
    ends = np.argwhere(ball)
    rows = np.unique(ends[:, :2], axis=0)  # brute force over the extreme voxel of every row
    lo = np.array([[a, b, np.flatnonzero(ball[a, b])[0]] for a, b in rows])
    hi = np.array([[a, b, np.flatnonzero(ball[a, b])[-1]] for a, b in rows])
    expected = pdist(np.concatenate([lo, hi]) * np.array([1.0, 0.9, 1.1])).max()
    assert got == pytest.approx(expected, rel=1e-12)
    assert took < 1.0  # a few ms on a free core; the margin is for a loaded CI machine


def test_dmax_between_centroids():
    labels = np.zeros((10, 12, 14), int)
    labels[0:2, 0:2, 0:2] = 1  # centroid (0.5, 0.5, 0.5)
    labels[9, 11, 13] = 2
    labels[4, 5, 6] = 4  # label 3 is empty: left out
    spacing = (2.0, 1.5, 3.0)
    c = centroids_mm(labels, 4, spacing)
    assert np.isnan(c[2]).all()
    np.testing.assert_allclose(c[0], [1.0, 0.75, 1.5])
    assert dmax_mm(c) == pytest.approx(np.linalg.norm(c[1] - c[0]), rel=1e-12)
    assert dmax_mm(c[:1]) == 0.0 and np.isnan(dmax_mm(np.zeros((0, 3))))
    np.testing.assert_array_equal(centroids_mm(find_sites(labels > 0), None, spacing), c[[0, 3, 1]])
    rng = np.random.default_rng(1)
    many = rng.uniform(0, 400, size=(300, 3))
    assert dmax_mm(many) == pdist(many).max()


# ----------------------------------------------------------------------------- agreement


def hand_icc_a1(x, y):
    """McGraw & Wong's ICC(A,1) from the two-way ANOVA, written out with loops."""
    n, k = len(x), 2
    table = [[x[i], y[i]] for i in range(n)]
    grand = sum(sum(r) for r in table) / (n * k)
    row_means = [sum(r) / k for r in table]
    col_means = [sum(table[i][j] for i in range(n)) / n for j in range(k)]
    ssr = k * sum((m - grand) ** 2 for m in row_means)
    ssc = n * sum((m - grand) ** 2 for m in col_means)
    sst = sum((table[i][j] - grand) ** 2 for i in range(n) for j in range(k))
    sse = sst - ssr - ssc
    msr, msc, mse = ssr / (n - 1), ssc / (k - 1), sse / ((n - 1) * (k - 1))
    return (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)


def hand_ccc(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    vx = sum((a - mx) ** 2 for a in x) / n
    vy = sum((b - my) ** 2 for b in y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y)) / n
    return 2 * sxy / (vx + vy + (mx - my) ** 2)


VECTORS = [
    ([1.0, 2.0, 4.0, 3.0], [1.5, 2.5, 3.5, 3.9]),
    ([10.0, 20.0, 30.0, 40.0], [12.0, 19.0, 33.0, 44.0]),
    ([120.5, 3.2, 45.0, 0.8, 77.1, 15.0], [100.0, 5.0, 50.5, 0.0, 80.0, 13.2]),
]


@pytest.mark.parametrize(("x", "y"), VECTORS)
def test_agreement_equals_the_formulas(x, y):
    a = agreement(x, y)
    d = [b - a_ for a_, b in zip(x, y)]
    n = len(d)
    bias = sum(d) / n
    sd = (sum((v - bias) ** 2 for v in d) / (n - 1)) ** 0.5
    assert a["n"] == n
    assert a["bias"] == pytest.approx(bias, rel=1e-12)
    assert a["loa_low"] == pytest.approx(bias - 1.96 * sd, rel=1e-12)
    assert a["loa_high"] == pytest.approx(bias + 1.96 * sd, rel=1e-12)
    assert a["icc"] == pytest.approx(hand_icc_a1(x, y), rel=1e-12)
    assert a["ccc"] == pytest.approx(hand_ccc(x, y), rel=1e-12)
    rel = [(b - a_) / a_ if a_ != 0 else np.nan for a_, b in zip(x, y)]
    np.testing.assert_allclose(a["relative_error"], rel, rtol=1e-12)
    assert a["mean_relative_error"] == pytest.approx(np.nanmean(rel), rel=1e-12)
    assert a["mean_abs_relative_error"] == pytest.approx(np.nanmean(np.abs(rel)), rel=1e-12)


def test_icc_equals_pingouins_published_value():
    # pingouin 0.7.0, intraclass_corr(...) row "ICC(A,1)" ("ICC2" in older versions), on VECTORS[0] and [1]
    assert icc_a1(*VECTORS[0]) == pytest.approx(0.863477, abs=5e-7)
    assert icc_a1(*VECTORS[1]) == pytest.approx(0.979955456570156, rel=1e-12)


@pytest.mark.parametrize(("x", "y"), VECTORS)
def test_icc_equals_pingouin(x, y):
    pg = pytest.importorskip("pingouin")
    pd = pytest.importorskip("pandas")
    n = len(x)
    data = pd.DataFrame({"case": list(range(n)) * 2, "rater": ["gt"] * n + ["pred"] * n, "value": list(x) + list(y)})
    table = pg.intraclass_corr(data=data, targets="case", raters="rater", ratings="value").set_index("Type")
    expected = table.loc["ICC(A,1)" if "ICC(A,1)" in table.index else "ICC2", "ICC"]
    assert icc_a1(x, y) == pytest.approx(expected, rel=1e-9)


def test_agreement_edge_cases():
    one = agreement([5.0], [4.0])
    assert one["n"] == 1 and one["bias"] == -1.0
    assert all(np.isnan(one[k]) for k in ("loa_low", "loa_high", "icc", "ccc"))
    none = agreement([], [])
    assert none["n"] == 0 and all(np.isnan(none[k]) for k in ("bias", "icc", "ccc", "mean_relative_error"))
    same = agreement([2.0, 2.0, 2.0], [2.0, 2.0, 2.0])  # no variance at all
    assert np.isnan(same["icc"]) and np.isnan(same["ccc"]) and same["bias"] == 0 and same["loa_high"] == 0
    nan_pairs = agreement([1.0, np.nan, 3.0, 4.0], [1.5, 2.0, np.nan, 4.5])
    assert nan_pairs["n"] == 2 and nan_pairs["bias"] == 0.5
    assert bland_altman([1.0, 4.0], [1.0, 4.0]) == (0.0, 0.0, 0.0)
    assert lin_ccc([1.0, 2.0], [1.0, 2.0]) == 1.0
    assert np.isnan(relative_error([0.0], [1.0])[0])
    with pytest.raises(ValueError, match="pair up"):
        agreement([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        agreement([1.0, np.inf], [1.0, 2.0])


@pytest.mark.parametrize("value", [0.1, 1 / 3, 1e-7, 12345.678])
def test_icc_and_ccc_of_constant_values_are_nan_also_after_rounding(value):
    # [0.1] * 3 has a float64 variance of about 1e-35, not 0: ICC was -0.39 and CCC 1.0 before
    x = [value] * 3
    assert np.isnan(icc_a1(x, x)) and np.isnan(lin_ccc(x, x))
    assert np.isnan(icc_a1(x, [value] * 3)) and np.isnan(lin_ccc(x, [value] * 3))
    assert icc_a1([value, 2 * value, 3 * value], [value, 2 * value, 3 * value]) == pytest.approx(1.0)
