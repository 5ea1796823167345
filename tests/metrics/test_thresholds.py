"""CC-Metrics across thresholds: each threshold equals a separate evaluation, the best thresholds by hand."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from ccmetrics import engine_config, evaluate
from ccmetrics.engine.ground_truth import GroundTruth
from ccmetrics.metrics.thresholds import parse_thresholds, sweep, threshold_summary


def smooth_case(seed, shape=(24, 28, 12)):
    rng = np.random.default_rng(seed)
    gt = np.zeros(shape, bool)
    for _ in range(4):
        c = [int(rng.integers(3, s - 4)) for s in shape]
        gt[c[0] - 2 : c[0] + 2, c[1] - 3 : c[1] + 2, c[2] - 1 : c[2] + 2] = True
    noise = ndimage.gaussian_filter(gt.astype(float) + 0.4 * rng.uniform(size=shape), 1.2)
    return gt, (noise / noise.max()).astype(np.float32)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("thresholds", [(0.3, 0.5), (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)])
def test_each_threshold_equals_its_own_evaluation(seed, thresholds):
    gt, prob = smooth_case(seed)
    spacing = (0.8, 1.1, 2.5)
    metrics = ["dice", "nsd", "hd95", "assd"]
    rows = sweep(prob, gt, thresholds, metrics + ["detection"], spacing=spacing, nsd_tolerance=2.0)
    assert rows["threshold"].tolist() == list(thresholds)
    for row in rows.itertuples():
        direct = evaluate(pred=prob >= row.threshold, gt=gt, metrics=metrics, spacing=spacing, nsd_tolerance=2.0)
        for m in metrics:
            assert getattr(row, m) == direct.standard[m] or (
                math.isinf(getattr(row, m)) and math.isinf(direct.standard[m])
            )
            assert getattr(row, f"cc_{m}") == direct.cc[m]
    assert "detection" not in rows and "sensitivity" not in rows  # case-level metrics are not swept


def test_prepared_truth_and_kept_partition_are_reused():
    gt, prob = smooth_case(9)
    truth = GroundTruth(gt)
    rows = sweep(prob, truth, parse_thresholds("0.1:0.8:0.1"), ["dice", "hd95"])
    assert truth.kept_region_map(None) is not None  # kept from four thresholds on
    with engine_config(region_map_from=100):  # the same values without the kept partition
        again = sweep(prob, gt, parse_thresholds("0.1:0.8:0.1"), ["dice", "hd95"])
    pd.testing.assert_frame_equal(rows, again)


def test_summary_and_best_by_hand():
    rows = pd.DataFrame(
        {
            "case": ["a", "a", "a", "b", "b", "b", "e", "e", "e"],
            "class": 1,
            "threshold": [0.2, 0.4, 0.6] * 3,
            "empty_gt": [False] * 6 + [True] * 3,
            "worst_distance": [100.0] * 3 + [50.0] * 3 + [10.0] * 3,
            "dice": [0.6, 0.8, 0.7, 0.6, 0.6, 0.2, 0.0, 0.0, 0.0],
            "cc_dice": [0.3, 0.5, 0.6, 0.7, 0.5, 0.5, 1.0, 1.0, 1.0],
            "hd95": [4.0, 3.0, math.inf, 6.0, 5.0, 8.0, 0, 0, 0],
            "cc_hd95": [9.0, 5.0, 4.0, 9.0, 7.0, 3.0, 0, 0, 0],
        }
    )
    means, best = threshold_summary(rows, ["dice", "hd95"])
    assert means["n"].tolist() == [2, 2, 2]  # the empty-GT case is left out
    assert means["dice"].tolist() == pytest.approx([0.6, 0.7, 0.45])
    assert means["cc_dice"].tolist() == pytest.approx([0.5, 0.5, 0.55])
    assert means["hd95"].tolist() == pytest.approx([5.0, 4.0, (100.0 + 8.0) / 2])  # inf -> the case's worst
    assert best == {"1/dice": {"standard": 0.4, "cc": 0.6}, "1/hd95": {"standard": 0.4, "cc": 0.6}}
    # a tie: the lowest threshold
    tie = rows.assign(dice=0.5)
    assert threshold_summary(tie, ["dice"])[1]["1/dice"]["standard"] == 0.2


def test_parse_thresholds():
    assert parse_thresholds("0.1:0.9:0.1") == (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    assert parse_thresholds("0.5,0.25,0.5") == (0.25, 0.5)
    assert parse_thresholds([0.3]) == (0.3,)
    for bad, match in (
        ("0:1:0.5", "in \\(0, 1\\]"),
        ("0.5:0.1:0.1", "STOP >= START"),
        ("a,b", "commas"),
        ("1:2", "START"),
    ):
        with pytest.raises(ValueError, match=match):
            parse_thresholds(bad)
    with pytest.raises(ValueError, match="per-region metrics"):
        sweep(np.zeros((4, 4), np.float32), np.zeros((4, 4), bool), [0.5], ["detection"])
