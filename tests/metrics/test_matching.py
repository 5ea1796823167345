"""ccmetrics.metrics.matching: the shared class-agnostic matcher against brute force written here."""

import importlib

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import ccmetrics
from ccmetrics.engine.components import find_sites
from ccmetrics.metrics.matching import (
    MATCHING_RULES,
    Matching,
    choose_pairs,
    instance_overlaps,
    match_instances,
    match_overlaps,
    match_sites,
    site_overlaps,
)


def random_instances(rng, shape=(48, 48), n=12, start=1):
    out = np.zeros(shape, np.int32)
    labels = rng.permutation(np.arange(start, start + 4 * n))[:n]
    for lab in labels:
        r, c = rng.integers(0, shape[0] - 3), rng.integers(0, shape[1] - 3)
        h, w = rng.integers(2, 10, 2)
        out[r : r + h, c : c + w] = lab
    return out


def prediction_of(rng, gt):
    shifted = np.roll(gt, tuple(rng.integers(-2, 3, 2)), axis=(0, 1))
    pred = np.where(shifted > 0, shifted + 1000, 0)
    extra = random_instances(rng, gt.shape, n=3, start=5000)
    return np.where(pred > 0, pred, extra)


def brute_pairs(pred, gt):
    """All (gt label, pred label) -> IoU by loops over every pair of labels."""
    out = {}
    for g in np.unique(gt[gt > 0]):
        for p in np.unique(pred[pred > 0]):
            a, b = gt == g, pred == p
            inter = int((a & b).sum())
            if inter:
                out[(int(g), int(p))] = inter / int((a | b).sum())
    return out


def brute_match(pred, gt, rule, threshold=0.5):
    iou = brute_pairs(pred, gt)
    g_labels = [int(v) for v in np.unique(gt[gt > 0])]
    p_labels = [int(v) for v in np.unique(pred[pred > 0])]
    if rule == "iou" and threshold >= 0.5:
        return sorted(k for k, v in iou.items() if v > threshold)
    if rule == "centroid":
        chosen = []
        for g in g_labels:
            cands = [(v, -p, p) for (gg, p), v in iou.items() if gg == g]
            if not cands:
                continue
            p = max(cands)[2]  # highest IoU, ties to the lowest label
            centroid = np.floor(np.argwhere(pred == p).mean(axis=0) + 0.5).astype(int)
            if gt[tuple(centroid)] == g:
                chosen.append((g, p))
        return sorted(chosen)
    weight = np.zeros((len(g_labels), len(p_labels)))
    for (g, p), v in iou.items():
        if rule == "max_iou" or v > threshold:
            weight[g_labels.index(g), p_labels.index(p)] = v
    rows, cols = linear_sum_assignment(weight, maximize=True)
    return sorted((g_labels[r], p_labels[c]) for r, c in zip(rows, cols) if weight[r, c] > 0)


def pairs_of(m: Matching):
    return sorted(zip(m.pairs["gt_label"].astype(int), m.pairs["pred_label"].astype(int)))


def test_public_names():
    assert "Matching" in ccmetrics.__all__ and ccmetrics.Matching is Matching
    from ccmetrics.metrics.matching import match_instances as home

    assert home is match_instances
    with pytest.raises(ModuleNotFoundError):  # the shim of a layout never released is gone
        importlib.import_module("ccmetrics.instances")


@pytest.mark.parametrize("seed", range(8))
def test_overlaps_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    gt = random_instances(rng)
    pred = prediction_of(rng, gt)
    ov = instance_overlaps(pred=pred, gt=gt)
    got = {
        (int(ov.gt_labels[g]), int(ov.pred_labels[p])): iou for g, p, iou in zip(ov.pair_gt, ov.pair_pred, ov.pair_iou)
    }
    expected = brute_pairs(pred, gt)
    assert got.keys() == expected.keys()
    for k, v in expected.items():
        assert got[k] == pytest.approx(v)
    assert ov.gt_sizes.tolist() == [int((gt == g).sum()) for g in ov.gt_labels]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    "rule,threshold", [("iou", 0.5), ("iou", 0.7), ("centroid", 0.5), ("max_iou", 0.5), ("iou", 0.2)]
)
def test_matching_equals_brute_force(seed, rule, threshold):
    rng = np.random.default_rng(seed)
    gt = random_instances(rng)
    pred = prediction_of(rng, gt)
    got = match_instances(pred=pred, gt=gt, rule=rule, threshold=threshold)
    expected = brute_match(pred, gt, rule, threshold)
    if rule in ("iou", "centroid") and threshold >= 0.5:
        assert pairs_of(got) == expected
    else:  # an assignment: the optimum total IoU is unique, the pairs may tie
        iou = brute_pairs(pred, gt)
        assert got.pairs["iou"].sum() == pytest.approx(sum(iou[k] for k in expected))
    g_labels = set(np.unique(gt[gt > 0]).tolist())
    p_labels = set(np.unique(pred[pred > 0]).tolist())
    assert set(got.unmatched_gt.tolist()) == g_labels - set(got.pairs["gt_label"].astype(int))
    assert set(got.unmatched_pred.tolist()) == p_labels - set(got.pairs["pred_label"].astype(int))
    assert got.tp + got.fn == len(g_labels) and got.tp + got.fp == len(p_labels)


@pytest.mark.parametrize("rule", MATCHING_RULES)
def test_match_sites_and_overlaps_agree_with_match_instances(rule):
    rng = np.random.default_rng(11)
    gt = random_instances(rng)
    pred = prediction_of(rng, gt)
    a = match_instances(pred=pred, gt=gt, rule=rule)
    b = match_sites(find_sites(pred, "labels"), find_sites(gt, "labels"), rule)
    c = match_overlaps(site_overlaps(find_sites(pred, "labels"), find_sites(gt, "labels"), centroids=True), rule)
    for m in (b, c):
        assert m.pairs.equals(a.pairs)
        assert m.unmatched_gt.tolist() == a.unmatched_gt.tolist()
        assert m.unmatched_pred.tolist() == a.unmatched_pred.tolist()


@pytest.mark.parametrize("rule", MATCHING_RULES)
def test_subset_equals_matching_the_restricted_maps(rule):
    rng = np.random.default_rng(4)
    gt = random_instances(rng, n=16)
    pred = prediction_of(rng, gt)
    ov = instance_overlaps(pred=pred, gt=gt, centroids=True)
    gt_keep = ov.gt_labels % 2 == 0
    pred_keep = ov.pred_labels % 3 != 0
    sub = match_overlaps(ov.subset(gt_keep, pred_keep), rule)
    gt_only = np.where(np.isin(gt, ov.gt_labels[gt_keep]), gt, 0)
    pred_only = np.where(np.isin(pred, ov.pred_labels[pred_keep]), pred, 0)
    direct = match_instances(pred=pred_only, gt=gt_only, rule=rule)
    assert pairs_of(sub) == pairs_of(direct)
    assert sub.unmatched_gt.tolist() == direct.unmatched_gt.tolist()
    assert sub.unmatched_pred.tolist() == direct.unmatched_pred.tolist()


def test_centroid_rule_needs_centroids():
    ov = instance_overlaps(pred=np.array([[1, 1]]), gt=np.array([[1, 1]]))
    with pytest.raises(ValueError, match="centroids=True"):
        choose_pairs(ov, "centroid")
    assert choose_pairs(
        instance_overlaps(pred=np.array([[1, 1]]), gt=np.array([[1, 1]]), centroids=True), "centroid"
    ).tolist() == [0]


def test_input_errors():
    with pytest.raises(ValueError, match="rule must be"):
        match_instances(pred=np.ones((2, 2), int), gt=np.ones((2, 2), int), rule="dice")
    with pytest.raises(ValueError, match="threshold"):
        match_instances(pred=np.ones((2, 2), int), gt=np.ones((2, 2), int), threshold=1.0)
    with pytest.raises(ValueError, match="same shape"):
        match_instances(pred=np.ones((2, 2), int), gt=np.ones((2, 3), int))
    with pytest.raises(ValueError, match="same shape"):
        site_overlaps(find_sites(np.ones((2, 2), int), "labels"), find_sites(np.ones((3, 2), int), "labels"))


def test_empty_maps():
    z = np.zeros((5, 5), int)
    one = z.copy()
    one[1:3, 1:3] = 4
    for rule in MATCHING_RULES:
        assert (match_instances(pred=z, gt=z, rule=rule).tp, match_instances(pred=z, gt=z, rule=rule).fp) == (0, 0)
        m = match_instances(pred=one, gt=z, rule=rule)
        assert (m.tp, m.fp, m.fn) == (0, 1, 0)
        m = match_instances(pred=z, gt=one, rule=rule)
        assert (m.tp, m.fp, m.fn) == (0, 0, 1)
