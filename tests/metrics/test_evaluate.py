"""evaluate() against MONAI on the masked full volume, and the CaseResult conventions."""

import math

import numpy as np
import pytest
from conftest import ALL_METRICS, brute_force_partition, degrade, monai_metrics, random_blobs

from ccmetrics import evaluate, voronoi_partition
from ccmetrics.engine.torch_emulation import torch_quantile


def assert_matches_monai(pred, gt, result, spacing=None, tolerance=1.0):
    """Per-component values equal MONAI on pred & (partition == c) vs gt & (partition == c)."""
    labels = np.unique(voronoi_partition(gt, spacing=spacing))
    assert result.n_components == len(labels[labels > 0])
    partition, _ = brute_force_partition(__import__("ccmetrics").label_components(gt)[0], spacing)
    for c in range(1, result.n_components + 1):
        region = partition == c
        expected = monai_metrics(pred & region, gt & region, spacing, tolerance)
        for name in ALL_METRICS:
            ours, ref = result.per_component.loc[c, name], expected[name]
            if name == "hd95" and math.isnan(ref):  # MONAI: quantile of infinities; ours: inf
                assert math.isinf(ours) and not (pred & region).any()
                continue
            if math.isinf(ref):
                assert math.isinf(ours), (c, name)
                continue
            assert abs(ours - ref) <= 1e-5, (c, name, ours, ref)
    expected = monai_metrics(pred, gt, spacing, tolerance)
    for name in ALL_METRICS:
        assert result.standard[name] == pytest.approx(expected[name], abs=1e-5), name


@pytest.mark.slow
@pytest.mark.parametrize("spacing", [None, (0.5, 1.0, 2.0), (0.8, 1.3, 2.7)])
def test_3d_random_cases_match_monai(rng, spacing):
    for _ in range(4):
        gt = random_blobs(rng, (24, 22, 18), density=0.01)
        pred = degrade(rng, gt)
        result = evaluate(pred=pred, gt=gt, metrics=ALL_METRICS, spacing=spacing, nsd_tolerance=1.5)
        assert_matches_monai(pred, gt, result, spacing, 1.5)


@pytest.mark.parametrize("spacing", [None, (0.5, 2.0), (1.1, 0.7)])
def test_2d_random_cases_match_monai(rng, spacing):
    for _ in range(4):
        gt = random_blobs(rng, (70, 64), density=0.005, grow=2)
        pred = degrade(rng, gt)
        result = evaluate(pred=pred, gt=gt, metrics=ALL_METRICS, spacing=spacing)
        assert_matches_monai(pred, gt, result, spacing)


def test_border_objects_far_false_positive_and_missed_lesion():
    gt = np.zeros((30, 30, 30), bool)
    gt[0:4, 0:5, 0:3] = True  # touches three image faces
    gt[20:25, 20:30, 10:14] = True  # touches one face
    gt[12:14, 2:4, 25:27] = True  # missed
    pred = np.zeros_like(gt)
    pred[0:3, 0:5, 0:4] = True
    pred[21:25, 19:30, 10:13] = True
    pred[29, 29, 0] = True  # a false positive in a far corner
    for spacing in (None, (1.0, 2.0, 0.5)):
        result = evaluate(pred=pred, gt=gt, metrics=ALL_METRICS, spacing=spacing)
        assert_matches_monai(pred, gt, result, spacing)
        missed = result.per_component.loc[2]  # raster order: the missed lesion starts at row 12
        assert missed["dice"] == 0 and missed["nsd"] == 0
        assert all(math.isinf(missed[m]) for m in ("hd", "hd95", "assd"))


def test_worst_distance_and_cc_mean():
    gt = np.zeros((10, 40), bool)
    gt[2:5, 2:5] = True
    gt[2:5, 30:33] = True
    pred = np.zeros_like(gt)
    pred[2:5, 2:5] = True
    result = evaluate(pred=pred, gt=gt, metrics=["dice", "hd95", "hd"])
    assert result.per_component["hd95"].tolist() == [0.0, math.inf]
    diagonal = math.hypot(10, 40)
    assert result.worst_distance == pytest.approx(diagonal)
    assert result.cc["hd95"] == pytest.approx(diagonal / 2)
    assert result.cc["dice"] == 0.5
    custom = evaluate(pred=pred, gt=gt, metrics=["hd95"], worst_distance=50.0, spacing=(2.0, 1.0))
    assert custom.cc["hd95"] == 25.0
    assert custom.per_component["volume_mm3"].tolist() == [18.0, 18.0]


def test_empty_gt_scores_and_flag():
    gt = np.zeros((8, 8, 8), bool)
    empty = evaluate(pred=np.zeros_like(gt), gt=gt, metrics=ALL_METRICS)
    assert empty.empty_gt and empty.n_components == 0 and len(empty.per_component) == 0
    assert empty.cc == {"dice": 1.0, "iou": 1.0, "nsd": 1.0, "hd": 0.0, "hd95": 0.0, "assd": 0.0}
    assert empty.standard["dice"] == 1.0 and empty.standard["hd95"] == 0.0
    pred = np.zeros_like(gt)
    pred[3, 3, 3] = True
    wrong = evaluate(pred=pred, gt=gt, metrics=ALL_METRICS, worst_distance=99.0)
    assert wrong.cc == {"dice": 0.0, "iou": 0.0, "nsd": 0.0, "hd": 99.0, "hd95": 99.0, "assd": 99.0}
    assert wrong.standard["dice"] == 0.0 and math.isinf(wrong.standard["hd"])


def test_multiclass_label_maps(rng):
    gt = np.zeros((20, 20, 20), np.uint8)
    gt[2:6, 2:6, 2:6] = 1
    gt[10:15, 10:15, 10:15] = 2
    gt[16:19, 2:5, 2:5] = 1
    pred = np.roll(gt, 1, axis=0)
    results = evaluate(pred=pred, gt=gt, metrics=["dice", "hd95"], classes=[1, 2])
    assert set(results) == {1, 2}
    for c, result in results.items():
        single = evaluate(pred=pred == c, gt=gt == c, metrics=["dice", "hd95"])
        assert result.cc == single.cc
        assert result.per_component.equals(single.per_component)
    assert results[1].n_components == 2 and results[2].n_components == 1


def test_instance_label_sites_match_monai():
    labels = np.zeros((50, 50), np.int32)
    labels[5:15, 5:15] = 4
    labels[5:15, 15:25] = 9  # touching nucleus
    labels[30:38, 30:36] = 2
    pred = np.zeros((50, 50), bool)
    pred[6:15, 4:22] = True
    pred[31:38, 31:37] = True
    result = evaluate(pred=pred, gt=labels, metrics=ALL_METRICS, sites="labels")
    assert result.per_component["gt_label"].tolist() == [2, 4, 9]
    sites = np.searchsorted([0, 2, 4, 9], labels).astype(np.int32)
    partition, _ = brute_force_partition(sites)
    for c in range(1, 4):
        expected = monai_metrics(pred & (partition == c), (sites == c), None)
        for name in ALL_METRICS:
            assert result.per_component.loc[c, name] == pytest.approx(expected[name], abs=1e-5), (c, name)


def test_torch_tensors_and_dtypes_give_identical_results(rng):
    torch = pytest.importorskip("torch")
    gt = random_blobs(rng, (16, 16, 16), density=0.02)
    pred = degrade(rng, gt)
    reference = evaluate(pred=pred, gt=gt, metrics=ALL_METRICS)
    for convert in (
        lambda a: a.astype(np.uint8),
        lambda a: a.astype(np.int64),
        lambda a: a.astype(np.float32),
        lambda a: torch.from_numpy(a),
        lambda a: torch.from_numpy(a.astype(np.float32)),
        lambda a: torch.from_numpy(a).bfloat16(),
    ):
        result = evaluate(pred=convert(pred), gt=convert(gt), metrics=ALL_METRICS)
        assert result.cc == reference.cc
        assert result.standard == reference.standard


def test_monai_metric_objects_run_per_component(rng):
    from monai.metrics import HausdorffDistanceMetric, SurfaceDistanceMetric

    gt = random_blobs(rng, (20, 20, 16), density=0.01)
    pred = degrade(rng, gt)
    spacing = (1.0, 0.5, 2.0)
    hd95 = HausdorffDistanceMetric(include_background=False, percentile=95)
    asd = SurfaceDistanceMetric(include_background=False, symmetric=True)
    result = evaluate(pred=pred, gt=gt, metrics=["hd95", "assd", hd95, asd], spacing=spacing)
    table = result.per_component
    finite = np.isfinite(table["hd95"])
    np.testing.assert_allclose(table["HausdorffDistanceMetric"][finite], table["hd95"][finite], atol=1e-5)
    np.testing.assert_allclose(table["SurfaceDistanceMetric"], table["assd"], atol=1e-5)
    assert result.cc["HausdorffDistanceMetric"] == pytest.approx(result.cc["hd95"], abs=1e-5)
    assert result.standard["SurfaceDistanceMetric"] == pytest.approx(result.standard["assd"], abs=1e-5)
    assert hd95.get_buffer() is None and asd.get_buffer() is None  # the caller's objects stay untouched


@pytest.mark.parametrize("n", [1, 2, 3, 19, 20, 21, 100, 1001])
def test_hd95_quantile_is_bit_exact_with_torch(rng, n):
    torch = pytest.importorskip("torch")
    values = (rng.random(n) * 50).astype(np.float32)
    assert torch_quantile(values, 0.95) == float(torch.quantile(torch.from_numpy(values), 0.95))


def test_summary_table():
    gt = np.zeros((12, 12), bool)
    gt[1:4, 1:4] = True
    result = evaluate(pred=gt, gt=gt, metrics=["dice", "hd95"])
    table = result.summary()
    assert table.loc["dice", "cc"] == 1.0 and table.loc["hd95", "standard"] == 0.0
    assert "1 components" in repr(result)


def test_instance_sites_do_not_depend_on_label_values_without_ties():
    rng = np.random.default_rng(4)
    labels = np.zeros((60, 60), np.int32)
    for lab, (r, c) in zip([3, 8, 5, 11], [(5, 5), (5, 40), (40, 8), (42, 45)]):
        labels[r : r + 9, c : c + 7] = lab
    pred = np.roll(labels > 0, 2, axis=1) | (rng.random(labels.shape) < 0.01)
    _, tie = brute_force_partition(np.searchsorted([0, 3, 5, 8, 11], labels).astype(np.int32))
    assert not (tie & pred).any()
    reference = evaluate(pred=pred, gt=labels, metrics=ALL_METRICS, sites="labels")
    relabel = np.zeros(12, np.int32)
    relabel[[3, 8, 5, 11]] = [40, 2, 17, 9]
    permuted = evaluate(pred=pred, gt=relabel[labels], metrics=ALL_METRICS, sites="labels")
    by_original = permuted.per_component.set_index("gt_label").loc[relabel[[3, 5, 8, 11]]]
    for name in ALL_METRICS:
        np.testing.assert_array_equal(by_original[name].to_numpy(), reference.per_component[name].to_numpy())
    assert permuted.cc == pytest.approx(reference.cc)


def test_prepared_ground_truth_gives_identical_results(rng):
    from ccmetrics import GroundTruth
    from ccmetrics.synthetic import lesion_case

    gt, pred = lesion_case((48, 48, 32), n_lesions=6, radius_range=(1.5, 6), seed=3)
    metrics = ["dice", "nsd", "hd95", "assd", "pq", "lesion_dice", "detection"]
    prepared = GroundTruth(gt)
    for k in range(3):  # several predictions against one prepared GT
        moved = np.roll(pred, k, axis=k % 3)
        a, b = (
            evaluate(pred=moved, gt=gt, metrics=metrics, spacing=(1, 1, 2)),
            evaluate(pred=moved, gt=prepared, metrics=metrics, spacing=(1, 1, 2)),
        )
        assert a.per_component.equals(b.per_component) and a.cc == b.cc and a.standard == b.standard
        assert a.case_scores == b.case_scores
    labels = np.zeros((20, 20), np.int32)
    labels[2:6, 2:6], labels[6:9, 2:6] = 4, 2  # touching instances
    instances = GroundTruth(labels, sites="labels")
    result = evaluate(pred=labels > 0, gt=instances, metrics=["dice", "pq"], sites="labels")
    reference = evaluate(pred=labels > 0, gt=labels, metrics=["dice", "pq"], sites="labels")
    assert result.per_component["dice"].tolist() == [1.0, 1.0]
    assert result.case_scores == reference.case_scores  # the binary prediction is one component: PQ < 1
    with pytest.raises(ValueError, match="prepared with sites='labels'"):
        evaluate(pred=labels > 0, gt=instances, metrics=["dice"], sites="components", connectivity=4)
    with pytest.raises(ValueError, match="not a GroundTruth"):
        evaluate(pred=labels, gt=instances, metrics=["dice"], classes=[2])
