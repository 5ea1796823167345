"""The one home of the averaging rules, and that evaluate and ccmetrics.monai both follow it."""

import math

import numpy as np
import pytest

from ccmetrics import evaluate
from ccmetrics.metrics.aggregation import cc_mean, cc_values, empty_gt_score, fill_missing, is_distance_metric


def test_rules_by_hand():
    assert cc_mean([1.0, 3.0, math.inf], "hd95", 20.0) == pytest.approx(8.0)
    assert cc_mean([1.0, 3.0, math.nan], "hd", 20.0) == pytest.approx(8.0)  # MONAI's NaN HD95 too
    assert math.isnan(cc_mean([0.5, math.nan], "dice", 20.0))  # overlap metrics are never filled
    assert math.isnan(cc_mean([], "dice", 1.0))
    assert cc_values([2.0, math.inf], "assd", [5.0, 7.0]).tolist() == [2.0, 7.0]  # one worst per value
    assert fill_missing(np.array([np.inf], np.float32), 3.0).dtype == np.float32
    assert [empty_gt_score(m, True, 9.0) for m in ("dice", "nsd", "hd95")] == [1.0, 1.0, 0.0]
    assert [empty_gt_score(m, False, 9.0) for m in ("iou", "hd", "assd")] == [0.0, 9.0, 9.0]
    assert is_distance_metric("hd") and not is_distance_metric("nsd")


def test_a_result_folders_columns_and_cc_column_names():
    """A ``cc_`` column and a metric known only from a folder's column facts follow the same rule."""
    from ccmetrics.metrics.registry import Column

    facts = {"masd": Column("masd", "MONAI ASSD", "distance", False, 0.0, "length", cc=True)}
    assert is_distance_metric("cc_hd95") and not is_distance_metric("cc_dice")
    assert is_distance_metric("cc_masd", facts) and not is_distance_metric("masd")  # unknown without the facts
    assert cc_values([1.0, math.inf], "cc_masd", 6.0, facts).tolist() == [1.0, 6.0]
    assert not is_distance_metric("lesion_hd95") and not is_distance_metric("volume")


def test_monai_objects_recognised_without_importing_monai():
    class HausdorffDistanceMetric:  # same class name as MONAI's
        pass

    class Sub(HausdorffDistanceMetric):
        pass

    assert is_distance_metric(Sub()) and not is_distance_metric(object())


def test_evaluate_and_ccmetric_use_the_same_rule():
    torch = pytest.importorskip("torch")
    from ccmetrics.monai import CCMetric

    gt = np.zeros((30, 30), bool)
    gt[2:6, 2:6] = gt[20:24, 20:24] = True
    pred = np.zeros_like(gt)
    pred[3:7, 2:6] = True  # second lesion missed
    result = evaluate(pred=pred, gt=gt, metrics=["hd95"], worst_distance=50.0)
    expected = (result.per_component.loc[1, "hd95"] + 50.0) / 2
    assert result.cc["hd95"] == pytest.approx(expected)
    metric = CCMetric("hd95", worst_distance=50.0)

    def onehot(m):
        t = torch.from_numpy(m)
        return torch.stack([~t, t])[None].float()

    metric(onehot(pred), onehot(gt))
    assert float(metric.aggregate(mode="patient")) == pytest.approx(expected)
    assert float(metric.aggregate(mode="overall")) == pytest.approx(expected)
