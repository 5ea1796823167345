"""Parity with the published CC-Metrics code (PyPI ccmetrics 0.0.3, import name CCMetrics).

The published code breaks Voronoi ties by scan order, ours by the lowest label
(the paper's rule), so cases are drawn until no prediction voxel lies on a tie.
"""

import warnings

import numpy as np
import pytest
from conftest import brute_force_partition, degrade, one_hot, random_blobs

from ccmetrics import evaluate, label_components

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

CCMetrics = pytest.importorskip("CCMetrics")


def tie_free_cases(rng, count, shape=(22, 20, 18)):
    cases = []
    while len(cases) < count:
        gt = random_blobs(rng, shape, density=0.003)
        pred = degrade(rng, gt)
        _, tie = brute_force_partition(label_components(gt)[0])
        if label_components(gt)[1] >= 2 and not (tie & pred).any():
            cases.append((pred, gt))
    return cases


def published_values(metric, pred, gt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metric(y_pred=one_hot(pred), y=one_hot(gt))
        return metric.cc_aggregate(mode="overall").numpy().reshape(-1)


def test_per_component_values_equal_published_code():
    rng = np.random.default_rng(7)
    for pred, gt in tie_free_cases(rng, 4):
        ours = evaluate(pred=pred, gt=gt, metrics=["dice", "hd95", "nsd"])
        worst = ours.worst_distance
        table = ours.per_component.replace(np.inf, worst)
        dice = published_values(CCMetrics.CCDiceMetric(), pred, gt)
        hd95 = published_values(CCMetrics.CCHausdorffDistance95Metric(metric_worst_score=worst), pred, gt)
        nsd = published_values(CCMetrics.CCSurfaceDiceMetric(class_thresholds=[1]), pred, gt)
        np.testing.assert_allclose(table["dice"], dice, atol=1e-6)
        np.testing.assert_allclose(table["hd95"], hd95, atol=1e-4)
        np.testing.assert_allclose(table["nsd"], nsd, atol=1e-6)
        assert ours.cc["dice"] == pytest.approx(dice.mean(), abs=1e-6)
        assert ours.cc["hd95"] == pytest.approx(hd95.mean(), abs=1e-4)
