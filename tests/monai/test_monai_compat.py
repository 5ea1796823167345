"""ccmetrics.monai drop-in classes against the published CC-Metrics code (PyPI ccmetrics 0.0.3, import CCMetrics).

The published code breaks Voronoi ties by scan order, ours by the lowest label,
so random cases are kept only when no prediction voxel lies on a tie; then
every buffer entry and aggregate must agree.
"""

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("monai")
CCMetrics = pytest.importorskip("CCMetrics")

from conftest import brute_force_partition, degrade, one_hot, random_blobs  # noqa: E402

import ccmetrics.monai as ours  # noqa: E402
from ccmetrics import evaluate, label_components  # noqa: E402


@pytest.fixture(autouse=True)
def no_gc_per_component(monkeypatch):
    """The published code runs gc.collect() once per component (0.2 s each here); values do not depend on it."""
    import types

    import CCMetrics.CC_base

    monkeypatch.setattr(CCMetrics.CC_base, "gc", types.SimpleNamespace(collect=lambda: 0))


def tie_free_cases(seed, count, shape=(18, 16, 14)):
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        gt = random_blobs(rng, shape, density=0.004)
        pred = degrade(rng, gt)
        labels, n = label_components(gt)
        if n >= 2 and not (brute_force_partition(labels)[1] & pred).any():
            cases.append((pred, gt))
    return cases


@pytest.fixture(scope="module")
def parity_cases():
    """Tie-free cases, one with a missed lesion, plus an empty GT with an empty and a non-empty prediction."""
    cases = tie_free_cases(21, 4)
    pred, gt = cases[0]
    partition, _ = brute_force_partition(label_components(gt)[0])
    missed = pred & (partition != 1)  # nothing predicted in component 1's region: inf / nan distances
    empty = np.zeros_like(gt)
    fp = empty.copy()
    fp[2:4, 2:4, 2:4] = True
    return cases + [(missed, gt), (empty, empty), (fp, empty)]


WORST = 40.0
CLASSES = [
    ("CCDiceMetric", {}),
    ("CCHausdorffDistance95Metric", {"metric_worst_score": WORST}),
    ("CCHausdorffDistanceMetric", {"metric_worst_score": WORST}),
    ("CCSurfaceDistanceMetric", {"metric_worst_score": WORST}),  # symmetric=False: MONAI object path
    ("CCSurfaceDistanceMetric", {"metric_worst_score": WORST, "symmetric": True}),  # built-in ASSD
    ("CCSurfaceDiceMetric", {"class_thresholds": [1]}),
    ("CCSurfaceDiceMetric", {"class_thresholds": [2.5], "cc_reduction": "overall"}),
]


@pytest.mark.parametrize("name, kwargs", CLASSES)
def test_buffers_and_aggregates_equal_published_classes(name, kwargs, parity_cases):
    published, drop_in = getattr(CCMetrics, name)(**kwargs), getattr(ours, name)(**kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for pred, gt in parity_cases:
            published(y_pred=one_hot(pred), y=one_hot(gt))
            assert drop_in(y_pred=one_hot(pred), y=one_hot(gt)) is None
    theirs, mine = published.get_buffer(), drop_in.get_buffer()
    assert isinstance(mine, list) and len(mine) == len(theirs) == len(parity_cases)
    for a, b in zip(mine, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, equal_nan=True)
    missed = mine[4]  # the case with a missed lesion: Dice/NSD 0, distances inf or nan
    assert ((missed == 0) if name in ("CCDiceMetric", "CCSurfaceDiceMetric") else ~torch.isfinite(missed)).any()
    for mode in (None, "patient", "overall"):
        a, b = drop_in.cc_aggregate(mode), published.cc_aggregate(mode)
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, check_dtype=False)
    drop_in.reset()
    assert drop_in.get_buffer() == []


def test_values_equal_evaluate_and_batches_are_accepted(parity_cases):
    """Beyond the published API: a batch of several images gives one entry per image, as evaluate."""
    preds, gts = zip(*parity_cases[:3])
    metric = ours.CCHausdorffDistance95Metric()  # no metric_worst_score: each image's diagonal
    metric(np.asarray(one_hot(preds[0])), np.asarray(one_hot(gts[0])))  # numpy input, as published
    metric(torch.cat([one_hot(p) for p in preds[1:]]), torch.cat([one_hot(g) for g in gts[1:]]))
    results = [evaluate(pred=p, gt=g, metrics=["hd95"]) for p, g in zip(preds, gts)]
    assert len(metric.get_buffer()) == 3
    np.testing.assert_allclose(metric.cc_aggregate("patient").numpy(), [r.cc["hd95"] for r in results], rtol=1e-6)
    pooled = np.concatenate([r.per_component["hd95"].replace(np.inf, r.worst_distance) for r in results])
    np.testing.assert_allclose(metric.cc_aggregate("overall").numpy(), pooled, rtol=1e-6)


def test_2d_multi_channel_and_spacing():
    rng = np.random.default_rng(4)
    gt = rng.integers(0, 3, (1, 24, 24)) * random_blobs(rng, (1, 24, 24), density=0.03)
    pred = np.where(degrade(rng, gt > 0), gt, 0)
    y_pred = torch.nn.functional.one_hot(torch.as_tensor(pred), 3).movedim(-1, 1).float()
    y = torch.nn.functional.one_hot(torch.as_tensor(gt), 3).movedim(-1, 1).float()
    metric = ours.CCSurfaceDiceMetric(class_thresholds=[1.5, 1.5])
    metric(y_pred, y, spacing=(0.5, 1.0))
    expected = evaluate(pred=pred[0], gt=gt[0], metrics=["nsd"], classes=[1, 2], spacing=(0.5, 1.0), nsd_tolerance=1.5)
    assert len(metric.get_buffer()) == 2  # one entry per image and foreground channel
    for entry, c in zip(metric.get_buffer(), (1, 2)):
        np.testing.assert_allclose(entry[:, 0].numpy(), expected[c].per_component["nsd"], rtol=1e-6)


def test_empty_gt_entries_and_worst_score_default():
    empty = np.zeros((10, 10, 10), bool)
    fp = empty.copy()
    fp[1, 1, 1] = True
    metric = ours.CCHausdorffDistanceMetric()
    metric(one_hot(empty), one_hot(empty))
    metric(one_hot(fp), one_hot(empty))
    buffer = metric.get_buffer()
    assert [b.shape for b in buffer] == [(1,), (1,)]
    assert buffer[0].item() == 0.0
    assert buffer[1].item() == pytest.approx(math.sqrt(300))  # the image diagonal, no worst score given
    with_worst = ours.CCDiceMetric()
    with_worst(one_hot(fp), one_hot(empty))
    assert with_worst.get_buffer()[0].tolist() == [0.0]


def test_constructor_compatibility(tmp_path):
    with pytest.raises(ValueError, match="Background class is not supported"):
        ours.CCDiceMetric(include_background=True)
    with pytest.raises(ValueError, match="Unknown aggregation function"):
        ours.CCDiceMetric(cc_reduction="lesion")
    with pytest.raises(ValueError, match="one tolerance"):
        ours.CCSurfaceDiceMetric(class_thresholds=[1, 2])
    with pytest.raises(TypeError):  # as published: SurfaceDiceMetric needs class_thresholds
        ours.CCSurfaceDiceMetric()
    with pytest.raises(TypeError):  # as published: the Dice worst score is fixed
        ours.CCDiceMetric(metric_worst_score=0.5)
    with pytest.raises(ValueError, match="metric_best_score"):
        ours.CCBaseMetric(ours.compat.DiceMetric, metric_worst_score=0.0)
    # caching is accepted and does nothing: no directory, no file
    cache = tmp_path / "cache"
    metric = ours.CCDiceMetric(use_caching=True, caching_dir=str(cache))
    metric.cache_datapoint(np.zeros((4, 4, 4), bool))
    assert not cache.exists()
    with pytest.raises(ValueError, match="Caching is disabled"):
        ours.CCDiceMetric().cache_datapoint(np.zeros((4, 4, 4), bool))
    with pytest.raises(ValueError, match="nothing to aggregate"):
        ours.CCDiceMetric().cc_aggregate()


def test_monai_kwargs_select_the_same_metric():
    """percentile / directed / distance_metric that evaluate has no name for run as the MONAI object."""
    pred, gt = tie_free_cases(8, 1)[0]
    hd90 = ours.CCHausdorffDistanceMetric(percentile=90, metric_worst_score=WORST)
    published = CCMetrics.CCHausdorffDistanceMetric(percentile=90, metric_worst_score=WORST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hd90(one_hot(pred), one_hot(gt))
        published(one_hot(pred), one_hot(gt))
    torch.testing.assert_close(hd90.cc_aggregate("overall"), published.cc_aggregate("overall"), rtol=1e-5, atol=1e-5)
