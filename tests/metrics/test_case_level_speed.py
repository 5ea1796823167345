"""Case-level metrics on shared voxel lists: exact against brute force on full-size masks, every HD95 path.

Lesion Dice is recomputed here the slow, independent way (scipy labels and dilates the full masks, one
full-size mask per lesion, MONAI's edge rule by erosion, scipy KD-trees): the values must be equal bit
for bit, with the lesions' HD95 from all distances and from the shared prediction trees
(``own_tree_from=1``). ``tests/case_level_snapshot.py`` compares ~180 cases with a recorded snapshot.
"""

import numpy as np
import pytest
from scipy import ndimage
from scipy.spatial import cKDTree

import ccmetrics.metrics.lesions as lesions
from ccmetrics import EngineConfig, detection, engine_config, evaluate, lesion_dice, panoptic_quality
from ccmetrics.engine.components import find_sites
from ccmetrics.engine.surface import SURFACE_REDUCTIONS, GroupedDistances
from ccmetrics.engine.torch_emulation import quantile_rank, torch_lerp


def _edges(mask):
    cross = ndimage.generate_binary_structure(mask.ndim, 1)
    return mask & ~ndimage.binary_erosion(mask, cross, border_value=0)


def _hd95(pred, gt, spacing):
    p = np.argwhere(_edges(pred)).astype(np.float64) * spacing
    g = np.argwhere(_edges(gt)).astype(np.float64) * spacing
    d_pg = cKDTree(g).query(p)[0].astype(np.float32)
    d_gp = cKDTree(p).query(g)[0].astype(np.float32)
    groups = GroupedDistances.single(d_pg, d_gp)
    return float(SURFACE_REDUCTIONS["hd95"](groups, 1.0)[0])


def brute_lesion_dice(pred, gt, spacing, dilation=3, min_volume=50.0, worst=374.0):
    full = np.ones((3,) * gt.ndim, bool)
    struct = ndimage.generate_binary_structure(gt.ndim, 2)
    spacing = np.ones(gt.ndim) if spacing is None else np.asarray(spacing, np.float64)
    dilated = ndimage.binary_dilation(gt, struct, iterations=dilation) if dilation else gt
    lesion_map, _ = ndimage.label(dilated, full)
    pred_cc, n_pred = ndimage.label(pred, full)
    ids = [v for v in np.unique(lesion_map[gt]) if v]
    ids.sort(key=lambda v: np.flatnonzero((lesion_map == v) & gt)[0])
    rows, used = [], set()
    for v in ids:
        lesion = gt & (lesion_map == v)
        zone = ndimage.binary_dilation(lesion, struct, iterations=dilation) if dilation else lesion
        hits = sorted(set(np.unique(pred_cc[zone]).tolist()) - {0})
        used |= set(hits)
        lp = np.isin(pred_cc, hits)
        dice = 2 * int((lesion & lp).sum()) / (int(lesion.sum()) + int(lp.sum()))
        hd = _hd95(lp, lesion, spacing) if hits else np.inf
        rows.append((int(lesion.sum()), hits, dice, hd))
    vol = float(np.prod(spacing))
    counted = [r for r in rows if r[0] * vol > min_volume]
    fp = n_pred - len(used)
    n = len(counted) + fp
    if n == 0:
        return rows, 1.0, 0.0
    hd_sum = sum(r[3] if np.isfinite(r[3]) else worst for r in counted)
    return rows, sum(r[2] for r in counted) / n, (hd_sum + worst * fp) / n


def _cases():
    rng = np.random.default_rng(7)
    out = []
    for i in range(6):
        shape = (int(rng.integers(12, 24)),) * 3
        gt = ndimage.binary_dilation(rng.random(shape) < 0.004, iterations=int(rng.integers(0, 3)))
        pred = np.roll(gt, 1, axis=i % 3) & (rng.random(shape) < 0.9) | (rng.random(shape) < 0.01)
        out.append((pred, gt, None if i % 2 else (1.5, 1.0, 0.7)))
    for i in range(6):  # one-voxel lesions on a lattice, one big random prediction component
        gt = np.zeros((40, 50), bool)
        gt[2::5, 3::6] = True
        out.append((rng.random(gt.shape) < 0.6, gt, None if i % 2 else (1.0, 2.5)))
    return out


@pytest.mark.parametrize("tree_from", [None, 1])
@pytest.mark.parametrize("case", range(12))
def test_lesion_dice_equals_brute_force_bit_for_bit(case, tree_from):
    pred, gt, spacing = _cases()[case]
    rows, dice, hd95 = brute_lesion_dice(pred, gt, spacing, min_volume=2.0)
    if tree_from is None:
        r = lesion_dice(pred=pred, gt=gt, spacing=spacing, min_volume=2.0)
    else:  # every lesion on the shared prediction trees
        with engine_config(own_tree_from=tree_from, own_tree_import_from=tree_from, compile_tree_from=tree_from):
            r = lesion_dice(pred=pred, gt=gt, spacing=spacing, min_volume=2.0)
    t = r.per_lesion
    assert t["volume"].tolist() == [row[0] for row in rows]
    assert t["pred_components"].tolist() == [row[1] for row in rows]
    assert t["dice"].tolist() == [row[2] for row in rows]
    assert t["hd95"].tolist() == [row[3] for row in rows]
    assert (r.dice, r.hd95) == (dice, hd95)


def test_tree_order_statistics_match_sorting():
    """The shared-tree order statistics equal the sorted distances at every rank asked for."""
    rng = np.random.default_rng(3)
    pts = [np.argwhere(rng.random((30, 40)) < 0.5).astype(np.float64) * (1.0, 1.7) for _ in range(2)]
    trees = lesions._PredictionTrees(pts)
    target = np.argwhere(rng.random((30, 40)) < 0.01).astype(np.float64) * (1.0, 1.7)
    d = np.sort(cKDTree(target).query(np.concatenate(pts))[0])
    for k in (0, 1, len(d) // 2, int(0.95 * (len(d) - 1)), len(d) - 2):
        assert trees.order_statistics([0, 1], target, k, k + 1) == (d[k], d[k + 1])
    below, above, w = quantile_rank(np.array([len(d)]), 0.95)
    assert torch_lerp(*map(np.float32, trees.order_statistics([0, 1], target, below[0], above[0])), w[0]) == (
        torch_lerp(d[below].astype(np.float32), d[above].astype(np.float32), w)
    )


def test_case_level_metrics_share_the_prediction_voxel_list():
    """evaluate's case-level metrics equal the standalone functions (one labelling shared, no label map)."""
    pred, gt, spacing = _cases()[1]
    r = evaluate(pred=pred, gt=gt, metrics=["pq", "lesion_dice", "detection"], spacing=spacing)
    assert r.details["lesion_dice"].per_lesion.equals(lesion_dice(pred=pred, gt=gt, spacing=spacing).per_lesion)
    assert r.details["detection"] == detection(pred=pred, gt=gt, spacing=spacing)
    assert r.details["pq"].pq == panoptic_quality(pred=pred, gt=gt).pq


def test_labels_at_equals_the_label_map():
    rng = np.random.default_rng(0)
    mask = rng.random((100, 100, 100)) < 0.005  # a large sparse image: the binary search, not the map
    sites = find_sites(mask)
    q = rng.integers(0, mask.size, 5000)
    assert np.array_equal(sites.labels_at(q), sites.label_map(flat=True)[q])
    assert np.array_equal(sites.labels_at(sites.flat_index), sites.label)


def test_a_lesion_touching_many_prediction_components():
    """One lesion crossed by 11 separate prediction bars: on the shared trees its GT -> prediction distances
    come from one tree of all 11 (``union_tree_from`` or more), not 11 arrays of distances; the values equal
    the brute force's bit for bit, as do those of the few-component path."""
    gt = np.zeros((40, 40, 8), bool)
    gt[5:35, 18:22, 2:6] = True
    pred = np.zeros_like(gt)
    pred[4:36:3, 10:30, 3] = True  # bars 3 voxels apart: 11 components
    assert len(range(4, 36, 3)) >= EngineConfig().union_tree_from
    for spacing in (None, (0.8, 1.1, 2.5)):
        rows, dice, hd95 = brute_lesion_dice(pred, gt, spacing, min_volume=2.0)
        with engine_config(own_tree_from=1, own_tree_import_from=1, compile_tree_from=1):
            r = lesion_dice(pred=pred, gt=gt, spacing=spacing, min_volume=2.0)
        assert [len(c) for c in r.per_lesion["pred_components"]] == [11]
        assert r.per_lesion["hd95"].tolist() == [row[3] for row in rows]
        assert (r.dice, r.hd95) == (dice, hd95)


def test_nearest_of_many_trees_equals_the_minimum_over_each():
    rng = np.random.default_rng(5)
    pts = [rng.random((int(rng.integers(5, 40)), 3)) * 20 for _ in range(2 * EngineConfig().union_tree_from)]
    trees = lesions._PredictionTrees(pts)
    source = rng.random((200, 3)) * 20
    for chosen in ([3], [0, 5, 7], list(range(len(pts)))):  # one, a few (in place), many (one tree of them)
        expected = np.min([cKDTree(pts[t]).query(source)[0] for t in chosen], axis=0)
        assert np.array_equal(trees.nearest_of(chosen, source), expected)
