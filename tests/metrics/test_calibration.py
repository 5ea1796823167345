"""Calibration against scikit-learn's Brier score and a loop over bins written out by hand."""

import numpy as np
import pandas as pd
import pytest

from ccmetrics.metrics.calibration import lesion_reliability, voxel_calibration


def ece_by_loop(p, y, n_bins=10):
    p, y = np.asarray(p, float).ravel(), np.asarray(y, float).ravel()
    total = 0.0
    for k in range(n_bins):
        lo, hi = k / n_bins, (k + 1) / n_bins
        inside = (p >= lo) & ((p < hi) if k < n_bins - 1 else (p <= hi))
        if inside.any():
            total += inside.sum() / p.size * abs(y[inside].mean() - p[inside].mean())
    return total


@pytest.mark.parametrize("seed", range(5))
def test_voxel_calibration_against_references(seed):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    shape = (40, 30, 20) if seed else (130, 100, 90)  # the first crosses the 2**20-voxel chunks
    y = rng.uniform(size=shape) < 0.2
    p = np.clip(y * 0.6 + rng.uniform(0, 0.5, shape), 0, 1).astype(np.float32)
    p[0, 0, :3] = [0.0, 1.0, 0.5]  # the edges of the bins
    if seed % 2:  # sparse maps: most voxels 0 (skipped by the computation, exactly)
        p[p < 0.45] = 0
    got = voxel_calibration(p, y)
    assert got["brier"] == pytest.approx(
        sklearn_metrics.brier_score_loss(y.ravel(), p.ravel().astype(float)), rel=1e-12
    )
    # bins of the float32 values as stored (0.1 as float32 is above 0.1): the loop sees the same numbers
    bins = np.minimum((p.astype(float) * 10).astype(int), 9)
    assert got["ece"] == pytest.approx(
        sum(
            (bins == k).sum() / p.size * abs(y[bins == k].mean() - p[bins == k].astype(float).mean())
            for k in range(10)
            if (bins == k).any()
        ),
        rel=1e-9,
    )
    assert got["ece"] == pytest.approx(ece_by_loop(p, y), abs=1e-3)  # edge-of-bin values aside


def test_perfect_and_worst_maps():
    y = np.zeros((4, 4), bool)
    y[:2] = True
    assert voxel_calibration(y.astype(np.float32), y) == {"brier": 0.0, "ece": 0.0}
    assert voxel_calibration((~y).astype(np.float32), y) == {"brier": 1.0, "ece": 1.0}
    with pytest.raises(ValueError, match="shape"):
        voxel_calibration(np.zeros(3), np.zeros(4))


def test_lesion_reliability_by_hand():
    table = lesion_reliability(
        pd.DataFrame(
            {
                "confidence": [0.05, 0.95, 0.91, 0.92, 0.55, 0.5, 0.7],
                "outcome": ["fp", "tp", "tp", "fp", "tp", "ignored", "fp"],
            }
        )
    )
    assert table["n"].tolist() == [1, 0, 0, 0, 0, 1, 0, 1, 0, 3]
    assert table["tp"].tolist() == [0, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    assert table.loc[9, "tp_fraction"] == pytest.approx(2 / 3)
    assert np.isnan(table.loc[1, "tp_fraction"])
    expected = (0.05 + abs(1 - 0.55) + 0.7 + abs(2 - (0.95 + 0.91 + 0.92))) / 6
    assert table.attrs["ece"] == pytest.approx(expected)
