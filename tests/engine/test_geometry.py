"""Per-region edge distances that reuse the whole image's: equal, bit for bit, to measuring every region anew.

``CaseSurfaces`` takes a region's distance from the whole image's query where the nearest point that query
named lies in the region (``ccmetrics.engine.geometry``). The reference here is the same class with the reuse
switched off: one query per region and direction, each from scratch (the path the metric tests check against
MONAI on the masked volumes). The cases aim at what could break the rule: prediction components cut by region
borders (new edges, new targets), missed lesions beside detected ones (the nearest prediction in another
region), exact ties on a bisector (the named point in the higher label's site), touching instance labels (a
site's edges that are not the image's) and both k-d trees.
"""

import numpy as np
import pytest
from scipy import ndimage

from ccmetrics import engine_config
from ccmetrics.engine._threads import worker_threads
from ccmetrics.engine.config import current
from ccmetrics.engine.geometry import CaseRegions, CaseSurfaces, PredictionVoxels
from ccmetrics.engine.ground_truth import GroundTruth


def _distances(pred, gt, spacing, sites="components", reuse=True, pool=None):
    voxels = PredictionVoxels(pred, edges=True)
    truth = GroundTruth(gt, sites=sites)
    truth.prepare()
    surfaces = CaseSurfaces(voxels, truth, spacing)
    reused = surfaces._reuse
    if not reuse:
        surfaces._reuse = False
    regions = CaseRegions(voxels, truth, spacing, pool, surfaces.start_whole_image)
    surfaces.add_regions(regions.pred_region)
    return surfaces.per_region(pool), surfaces.whole_image(), reused


def _assert_same(pred, gt, spacing, sites="components", pool=None) -> bool:
    per_region, whole, reused = _distances(pred, gt, spacing, sites, pool=pool)
    ref_region, ref_whole, _ = _distances(pred, gt, spacing, sites, reuse=False)
    for got, ref in ((per_region, ref_region), (whole, ref_whole)):
        np.testing.assert_array_equal(got.pred_bounds, ref.pred_bounds)
        np.testing.assert_array_equal(got.gt_bounds, ref.gt_bounds)
        assert got.pred_to_gt.dtype == ref.pred_to_gt.dtype == np.float32
        np.testing.assert_array_equal(got.pred_to_gt, ref.pred_to_gt)
        np.testing.assert_array_equal(got.gt_to_pred, ref.gt_to_pred)
    return reused


def _random_case(rng):
    ndim = int(rng.choice([2, 3]))
    shape = tuple(int(n) for n in rng.integers(8, 36 if ndim == 3 else 80, size=ndim))
    gt = ndimage.binary_dilation(rng.random(shape) < rng.choice([0.002, 0.01, 0.04]), iterations=int(rng.integers(3)))
    kind = rng.integers(4)
    if kind == 0:  # dilated and eroded at random: components cut by region borders
        pred = ndimage.binary_dilation(gt, iterations=2) & (rng.random(shape) < 0.9)
    elif kind == 1:  # noise: many small components across every border
        pred = rng.random(shape) < 0.3
    elif kind == 2:  # shifted, plus false positives
        pred = np.roll(gt, 2, axis=0) | (rng.random(shape) < 0.01)
    else:  # blobs unrelated to the GT: missed lesions next to detected ones
        pred = ndimage.binary_dilation(rng.random(shape) < 0.01, iterations=3)
    spacing = None if rng.random() < 0.4 else tuple(rng.choice([0.3, 0.7, 1.0, 1.3, 2.5, 1 / 3], size=ndim))
    return pred, gt, spacing


@pytest.mark.parametrize("seed", range(4))
def test_reuse_equals_regions_measured_anew(seed):
    rng = np.random.default_rng(seed)
    reused = 0
    for _ in range(60):
        pred, gt, spacing = _random_case(rng)
        reused += _assert_same(pred, gt, spacing)
    assert reused > 30  # the rule was in force in most cases (not every GT has a site)


def test_reuse_with_the_own_tree_and_threads():
    rng = np.random.default_rng(7)
    with (
        engine_config(own_tree_from=0, own_tree_import_from=0, compile_tree_from=0),
        worker_threads((400, 400, 400)) as pool,
    ):
        for _ in range(25):
            pred, gt, spacing = _random_case(rng)
            _assert_same(pred, gt, spacing, pool=pool)


def test_ties_on_the_bisector_and_a_missed_lesion_beside_a_found_one():
    """Two lesions mirror each other: every prediction voxel on the bisector is as near to both (the whole image's
    query may name the higher label's voxel; the region is the lower's). A third lesion, missed, lies next to a
    prediction of the second one (its GT edges' nearest prediction is in another region)."""
    gt = np.zeros((9, 31, 21), bool)
    gt[3:6, 4:7, 8:11] = gt[3:6, 24:27, 8:11] = True  # mirror images about the plane y = 15
    gt[3:6, 24:27, 15:18] = True  # touches the second through a face: one lesion, not a third
    gt[3:6, 14:17, 1:3] = True  # the missed lesion, beside the band
    pred = np.zeros_like(gt)
    pred[2:7, 3:28, 7:12] = True  # one band over both mirrored lesions and the bisector
    for spacing in (None, (2.0, 1.0, 1.0), (1.0, 0.5, 3.0)):
        assert _assert_same(pred, gt, spacing)
        assert _assert_same(np.flip(pred, 1), np.flip(gt, 1), spacing)


def test_instance_labels_touching_or_not():
    """Touching labels: a site's edges include faces shared with another label, not edges of the image: nothing is
    reused. Labels apart: reused, the same values."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        pred, gt, spacing = _random_case(rng)
        labels, n = ndimage.label(gt)  # face connectivity: no two labels touch through a face
        if not 2 <= n < current().grouped_from:  # from grouped_from regions on, grouped queries serve all regions
            continue
        assert _assert_same(pred, labels, spacing, sites="labels")
        touching = np.where(gt, np.indices(gt.shape)[0] // 3 + 1, 0)
        reused = _assert_same(pred, touching, spacing, sites="labels")
        assert not reused or np.array_equal(*_edges(touching))


def _edges(labels):
    truth = GroundTruth(labels, sites="labels")
    truth.prepare()
    return truth.geometry.union_edge, truth.geometry.own_edge


def test_empty_prediction_and_no_regions():
    gt = np.zeros((6, 7, 8), bool)
    gt[1:3, 1:3, 1:3] = gt[4, 5, 6] = True
    assert _assert_same(np.zeros_like(gt), gt, None)
    assert not _assert_same(gt.copy(), np.zeros_like(gt), None)  # no site: nothing to reuse
