"""ccmetrics.monai.CCMetric: a MONAI CumulativeIterationMetric whose values are ccmetrics.evaluate's.

Expected values come from ccmetrics.evaluate on the same arrays (one image and
channel at a time), from MONAI's own do_metric_reduction, or are computed by hand.
"""

import math
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("monai")

from conftest import degrade, random_blobs  # noqa: E402
from monai.data import MetaTensor  # noqa: E402
from monai.metrics import SurfaceDistanceMetric  # noqa: E402
from monai.metrics.utils import do_metric_reduction  # noqa: E402

from ccmetrics import evaluate  # noqa: E402
from ccmetrics.monai import CCMetric  # noqa: E402

SHAPE3 = (16, 14, 12)


def one_hot(masks):
    """(B, *spatial) bool masks -> (B, 2, *spatial) float one-hot."""
    m = torch.as_tensor(np.asarray(masks, dtype=bool))
    return torch.stack([~m, m], dim=1).float()


def label_one_hot(labels, n_classes):
    """(B, *spatial) label maps -> (B, n_classes, *spatial) float one-hot."""
    t = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    return torch.nn.functional.one_hot(t, n_classes).movedim(-1, 1).float()


def cases(seed, n, shape=SHAPE3):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        gt = random_blobs(rng, shape, density=0.004)
        if gt.any():
            out.append((degrade(rng, gt), gt))
    return out


@pytest.fixture(scope="module")
def three_cases():
    return cases(3, 3)


def test_values_equal_evaluate_per_image(three_cases):
    preds, gts = zip(*three_cases)
    for name in ("dice", "nsd", "hd95", "assd"):
        metric = CCMetric(name)
        out = metric(one_hot(preds), one_hot(gts))
        expected = [evaluate(pred=p, gt=g, metrics=[name]) for p, g in three_cases]
        assert out.shape == (3, 1)
        np.testing.assert_allclose(out[:, 0].numpy(), [r.cc[name] for r in expected], rtol=1e-12)
        components = metric.get_component_buffer()
        for got, r in zip(components, expected):
            assert len(got) == 1
            np.testing.assert_array_equal(got[0].numpy(), r.per_component[name].to_numpy())
        assert metric.aggregate().item() == pytest.approx(np.mean([r.cc[name] for r in expected]), rel=1e-12)


def test_batch_of_two_equals_two_batches_of_one(three_cases):
    preds, gts = zip(*three_cases[:2])
    together = CCMetric("hd95")
    together(one_hot(preds), one_hot(gts))
    apart = CCMetric("hd95")
    for p, g in zip(preds, gts):
        apart(one_hot([p]), one_hot([g]))
    torch.testing.assert_close(together.get_buffer(), apart.get_buffer(), rtol=0, atol=0)
    for a, b in zip(together.get_component_buffer(), apart.get_component_buffer()):
        torch.testing.assert_close(a[0], b[0], rtol=0, atol=0)
    for mode in ("patient", "overall"):
        assert together.aggregate(mode).item() == apart.aggregate(mode).item()


def test_patient_and_overall_by_hand():
    # image 0: two 3x3 lesions, the first found exactly, the second missed; image 1: one lesion found exactly
    gt = np.zeros((2, 12, 12), bool)
    gt[0, 1:4, 1:4] = gt[0, 8:11, 8:11] = True
    gt[1, 4:7, 4:7] = True
    pred = gt.copy()
    pred[0, 8:11, 8:11] = False
    dice = CCMetric("dice")
    np.testing.assert_array_equal(dice(one_hot(pred), one_hot(gt)).numpy(), [[0.5], [1.0]])
    assert dice.aggregate("patient").item() == pytest.approx(0.75)  # mean of the case means
    assert dice.aggregate("overall").item() == pytest.approx(2 / 3)  # three lesions pooled
    # HD95 of a missed lesion counts as the image diagonal, in both modes
    hd95 = CCMetric("hd95")
    hd95(one_hot(pred), one_hot(gt))
    diagonal = math.hypot(12, 12)
    assert math.isinf(hd95.get_component_buffer()[0][0][1].item())
    assert hd95.aggregate("patient").item() == pytest.approx((diagonal / 2 + 0) / 2)
    assert hd95.aggregate("overall").item() == pytest.approx(diagonal / 3)
    fixed = CCMetric("hd95", worst_distance=50.0, mode="overall")
    fixed(one_hot(pred), one_hot(gt))
    assert fixed.aggregate().item() == pytest.approx(50 / 3)


def test_empty_gt_enters_buffers_with_best_or_worst_value():
    gt = np.zeros((3, 10, 10), bool)
    gt[2, 2:5, 2:5] = True
    pred = np.zeros_like(gt)
    pred[1, 6:8, 6:8] = True  # image 1: false positive only
    pred[2] = gt[2]
    for name, best, worst in (("dice", 1.0, 0.0), ("hd95", 0.0, math.hypot(10, 10))):
        metric = CCMetric(name)
        out = metric(one_hot(pred), one_hot(gt))
        np.testing.assert_allclose(out[:, 0].numpy(), [best, worst, best])
        expected = [evaluate(pred=p, gt=g, metrics=[name]).cc[name] for p, g in zip(pred, gt)]
        np.testing.assert_allclose(out[:, 0].numpy(), expected)
        assert [len(c[0]) for c in metric.get_component_buffer()] == [0, 0, 1]
        # overall pooling: each empty-GT image counts once with its case value
        assert metric.aggregate("overall").item() == pytest.approx((best + worst + best) / 3)


def test_multi_class_channels_are_evaluated_on_their_own():
    rng = np.random.default_rng(5)
    labels_gt, labels_pred = [], []
    for _ in range(2):
        gt = np.zeros(SHAPE3, np.int64)
        gt[random_blobs(rng, SHAPE3, density=0.004)] = 1
        gt[random_blobs(rng, SHAPE3, density=0.004)] = 2
        pred = np.where(degrade(rng, gt > 0), np.roll(gt, 1, axis=0), 0)
        pred[(pred == 0) & degrade(rng, gt == 2)] = 2
        labels_gt.append(gt)
        labels_pred.append(pred)
    metric = CCMetric("dice", mode="overall")
    out = metric(label_one_hot(labels_pred, 3), label_one_hot(labels_gt, 3))
    assert out.shape == (2, 2)
    pooled = {1: [], 2: []}
    for b in range(2):
        per_class = evaluate(pred=labels_pred[b], gt=labels_gt[b], metrics=["dice"], classes=[1, 2])
        for c in (1, 2):
            assert out[b, c - 1].item() == pytest.approx(per_class[c].cc["dice"], rel=1e-12)
            np.testing.assert_array_equal(
                metric.get_component_buffer()[b][c - 1].numpy(), per_class[c].per_component["dice"].to_numpy()
            )
            pooled[c].extend(per_class[c].per_component["dice"])
    per_channel = metric.aggregate(reduction="mean_batch")
    np.testing.assert_allclose(per_channel.numpy(), [np.mean(pooled[1]), np.mean(pooled[2])], rtol=1e-12)
    assert metric.aggregate().item() == pytest.approx(np.mean(pooled[1] + pooled[2]), rel=1e-12)
    assert metric.aggregate("patient", "mean_batch").numpy() == pytest.approx(out.mean(0).numpy())
    # include_background: channel 0 is evaluated as a mask of its own
    with_bg = CCMetric("dice", include_background=True)
    out_bg = with_bg(label_one_hot(labels_pred, 3), label_one_hot(labels_gt, 3))
    assert out_bg.shape == (2, 3)
    assert out_bg[0, 0].item() == pytest.approx(
        evaluate(pred=labels_pred[0] == 0, gt=labels_gt[0] == 0, metrics=["dice"]).cc["dice"], rel=1e-12
    )
    torch.testing.assert_close(out_bg[:, 1:], out)


def test_2d_images_spacing_and_options(three_cases):
    rng = np.random.default_rng(11)
    gt2 = np.stack([random_blobs(rng, (30, 26), density=0.01) for _ in range(2)])
    pred2 = np.stack([degrade(rng, g) for g in gt2])
    spacing = (0.7, 1.3)
    metric = CCMetric("nsd", spacing=spacing, nsd_tolerance=1.5)
    out = metric(one_hot(pred2), one_hot(gt2))
    expected = [
        evaluate(pred=p, gt=g, metrics=["nsd"], spacing=spacing, nsd_tolerance=1.5).cc["nsd"]
        for p, g in zip(pred2, gt2)
    ]
    np.testing.assert_allclose(out[:, 0].numpy(), expected, rtol=1e-12)
    # a call's spacing (here one per image) overrides the constructor's
    per_image = [(2.0, 1.0), (1.0, 0.5)]
    out = metric(one_hot(pred2), one_hot(gt2), spacing=per_image)
    expected = [
        evaluate(pred=p, gt=g, metrics=["nsd"], spacing=s, nsd_tolerance=1.5).cc["nsd"]
        for p, g, s in zip(pred2, gt2, per_image)
    ]
    np.testing.assert_allclose(out[:, 0].numpy(), expected, rtol=1e-12)
    out = metric(one_hot(pred2), one_hot(gt2), spacing=torch.tensor(per_image))
    np.testing.assert_allclose(out[:, 0].numpy(), expected, rtol=1e-12)
    # worst distance in mm
    pred, gt = three_cases[0]
    hd = CCMetric("hd", spacing=2.0, worst_distance=100.0)
    value = hd(one_hot([pred]), one_hot([gt]))[0, 0].item()
    assert value == pytest.approx(
        evaluate(pred=pred, gt=gt, metrics=["hd"], spacing=2.0, worst_distance=100.0).cc["hd"]
    )


def test_list_of_channel_first_tensors_with_per_image_spacing():
    rng = np.random.default_rng(2)
    shapes = [(14, 12, 10), (10, 16, 12)]
    gts = [random_blobs(rng, s, density=0.01) for s in shapes]
    preds = [degrade(rng, g) for g in gts]
    spacings = [(1.0, 1.0, 2.5), (0.5, 0.5, 1.0)]
    metric = CCMetric("assd")
    out = metric([one_hot([p])[0] for p in preds], [one_hot([g])[0] for g in gts], spacing=spacings)
    expected = [evaluate(pred=p, gt=g, metrics=["assd"], spacing=s).cc["assd"] for p, g, s in zip(preds, gts, spacings)]
    np.testing.assert_allclose(out[:, 0].numpy(), expected, rtol=1e-12)
    assert metric.get_buffer().shape == (2, 1)


def test_monai_metric_object_as_metric(three_cases):
    obj = SurfaceDistanceMetric(include_background=False, symmetric=False)
    metric = CCMetric(obj)
    preds, gts = zip(*three_cases[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = metric(one_hot(preds), one_hot(gts))
        expected = [evaluate(pred=p, gt=g, metrics=[obj]) for p, g in zip(preds, gts)]
    assert metric.metric_name == "SurfaceDistanceMetric"
    np.testing.assert_allclose(out[:, 0].numpy(), [r.cc["SurfaceDistanceMetric"] for r in expected], rtol=1e-12)
    assert obj.get_buffer() is None  # the caller's object is left alone


def test_input_dtypes_metatensor_and_inputs_untouched(three_cases):
    preds, gts = zip(*three_cases[:2])
    reference = CCMetric("dice")(one_hot(preds), one_hot(gts))
    for dtype in (torch.bool, torch.uint8, torch.int64, torch.float16, torch.float64):
        p, g = one_hot(preds).to(dtype), one_hot(gts).to(dtype)
        p_copy = p.clone()
        torch.testing.assert_close(CCMetric("dice")(p, g), reference)
        assert torch.equal(p, p_copy)
    meta = MetaTensor(one_hot(preds), affine=torch.diag(torch.tensor([2.0, 2.0, 2.0, 1.0])))
    out = CCMetric("dice")(meta, one_hot(gts))
    assert type(out) is torch.Tensor
    torch.testing.assert_close(out, reference)


@pytest.mark.parametrize(
    "device",
    ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))],
)
def test_tensors_on_device(device, three_cases):
    preds, gts = zip(*three_cases)
    metric = CCMetric("hd95")
    out = metric(one_hot(preds).to(device), one_hot(gts).to(device))
    assert out.device.type == device
    assert metric.get_buffer().device.type == device
    expected = [evaluate(pred=p, gt=g, metrics=["hd95"]).cc["hd95"] for p, g in three_cases]
    np.testing.assert_allclose(out[:, 0].cpu().numpy(), expected, rtol=1e-12)
    for mode in ("patient", "overall"):
        value = metric.aggregate(mode)
        assert value.device.type == device
    assert metric.aggregate("patient").item() == pytest.approx(np.mean(expected), rel=1e-12)


def test_ddp_style_buffer_shape(three_cases):
    preds, gts = zip(*three_cases)
    multi = np.stack([np.asarray(gts), np.asarray(preds)], axis=1)  # two foreground channels
    y = torch.cat([torch.as_tensor(~multi.any(1))[:, None], torch.as_tensor(multi)], dim=1).float()
    metric = CCMetric("dice", multi_label=True)  # the two foreground channels overlap
    metric(y, y)
    metric(y[:1], y[:1])
    buffer = metric.get_buffer()
    # one fixed-size row per image: what evenly_divisible_all_gather concatenates across ranks
    assert isinstance(buffer, torch.Tensor) and buffer.shape == (4, 2) and buffer.dtype == torch.float64
    assert len(metric) == 4
    assert [len(row) for row in metric.get_component_buffer()] == [2, 2, 2, 2]
    metric.reset()
    assert metric.get_buffer() is None and metric.get_component_buffer() == []


def _ddp_worker(rank, world_size, init_file, data, result_file):
    import torch.distributed as dist

    torch.set_num_threads(1)  # as DataLoader workers do: no OpenMP pool in a forked child
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        pred, gt = data
        metric = CCMetric("hd95")
        metric(pred[rank::world_size], gt[rank::world_size])  # each rank sees its own images
        out = (
            metric.get_buffer(),
            metric.aggregate("patient"),
            metric.aggregate("overall"),
            metric.get_component_buffer(),
        )
        if rank == 0:
            torch.save(out, result_file)
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(
    not torch.distributed.is_available() or not hasattr(os, "fork"),
    reason="needs torch.distributed with gloo and fork (spawned workers take 10 s to start)",
)
def test_ddp_gathers_both_buffers(tmp_path, three_cases):
    """Two gloo ranks, each with its own images: both buffers are gathered as one process would hold them."""
    import time

    import torch.multiprocessing as mp

    preds, gts = zip(*(three_cases + cases(4, 1)))
    pred, gt = one_hot(preds), one_hot(gts)
    result_file = str(tmp_path / "result.pt")
    context = mp.start_processes(
        _ddp_worker,
        args=(2, str(tmp_path / "init"), (pred, gt), result_file),
        nprocs=2,
        join=False,
        start_method="fork",
    )
    deadline = time.monotonic() + 60
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("DDP workers did not finish within 60 s")
    buffer, patient, overall, components = torch.load(result_file, weights_only=False)
    single = CCMetric("hd95")
    single(pred[0::2], gt[0::2])  # rank 0's images, then rank 1's: MONAI's gathering order
    single(pred[1::2], gt[1::2])
    torch.testing.assert_close(buffer, single.get_buffer())
    assert patient.item() == pytest.approx(single.aggregate("patient").item(), rel=1e-12)
    assert overall.item() == pytest.approx(single.aggregate("overall").item(), rel=1e-12)
    assert len(components) == len(single.get_component_buffer()) == 4
    for a, b in zip(components, single.get_component_buffer()):
        torch.testing.assert_close(a[0], b[0])


def test_reductions_follow_monai():
    rng = np.random.default_rng(0)
    data = torch.tensor(rng.random((5, 3)))
    data[1, 2] = data[3, 0] = torch.nan
    data[4] = torch.nan
    from ccmetrics.monai.metric import reduce_values

    for reduction in ("mean", "sum", "mean_batch", "sum_batch", "mean_channel", "sum_channel", "none"):
        ours, ours_n = reduce_values(data, reduction)
        theirs, theirs_n = do_metric_reduction(data.float().clone(), reduction)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(ours_n.numpy(), theirs_n.numpy())
        assert ours.dtype == torch.float64


def test_get_not_nans_and_reduction_options():
    gt = np.zeros((2, 10, 10), bool)
    gt[:, 2:5, 2:5] = True
    metric = CCMetric("dice", get_not_nans=True, reduction="none")
    metric(one_hot(gt), one_hot(gt))
    value, not_nans = metric.aggregate()
    assert value.shape == (2, 1) and not_nans.tolist() == [[1.0], [1.0]]
    value, not_nans = metric.aggregate("overall", "sum")
    assert value.item() == 2.0 and not_nans.item() == 2.0
    for reduction in ("none", "mean_channel", "sum_channel"):
        with pytest.raises(ValueError, match="does not apply to mode='overall'"):
            metric.aggregate("overall", reduction)


def test_one_hot_layout_is_checked():
    # a batch of two 3D binary masks (B, H, W, D) would be read as 2D images with H channels
    masks = torch.zeros(2, 6, 8, 8)
    masks[:, 2:4, 2:4, 2:4] = 1
    with pytest.raises(ValueError, match=r"one-hot.*\(B, H, W\[, D\]\) needs a channel axis"):
        CCMetric("dice")(masks, masks)
    onehot = torch.stack([1 - masks, masks], dim=1)
    assert CCMetric("dice")(onehot, onehot).tolist() == [[1.0], [1.0]]
    overlapping = torch.cat([onehot, masks[:, None]], dim=1)  # a third channel overlapping the second
    with pytest.raises(ValueError, match="multi_label=True"):
        CCMetric("dice")(overlapping, overlapping)
    assert CCMetric("dice", multi_label=True)(overlapping, overlapping).tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize(
    "y_pred, y, message",
    [
        (torch.zeros(2, 10, 10), torch.zeros(2, 10, 10), "batch-first one-hot tensor"),
        (torch.zeros(1, 2, 4, 4, 4, 4), torch.zeros(1, 2, 4, 4, 4, 4), "batch-first one-hot tensor"),
        (torch.zeros(1, 1, 8, 8), torch.zeros(1, 1, 8, 8), "at least 2 channels"),
        (torch.zeros(1, 2, 8, 8), torch.zeros(1, 2, 8, 9), "same shape"),
        (torch.full((1, 2, 8, 8), 0.5), torch.zeros(1, 2, 8, 8), "binarized one-hot"),
        (torch.zeros(1, 2, 8, 8), torch.full((1, 2, 8, 8), 2), "binarized one-hot"),
        (torch.full((1, 2, 8, 8), float("nan")), torch.zeros(1, 2, 8, 8), "NaN"),
        (torch.zeros(1, 2, 8, 8), None, "y is required"),
    ],
)
def test_invalid_input_raises_value_error(y_pred, y, message):
    with pytest.raises(ValueError, match=message):
        CCMetric("dice")(y_pred, y)


def test_invalid_options_raise():
    y = torch.zeros(2, 2, 8, 8)
    y[:, 0] = 1
    with pytest.raises(ValueError, match="unknown metric"):
        CCMetric("dise")
    with pytest.raises(ValueError, match="mode"):
        CCMetric("dice", mode="per_lesion")
    with pytest.raises(ValueError, match="nsd_tolerance"):
        CCMetric("nsd", nsd_tolerance=-1)
    with pytest.raises(ValueError, match="spacing"):
        CCMetric("hd", spacing=(1.0, 0.0))
    with pytest.raises(ValueError, match="per-image entries"):
        CCMetric("hd")(y, y, spacing=[(1, 1), (1, 1), (1, 1)])
    with pytest.raises(ValueError, match="spacing has 3 values"):
        CCMetric("hd")(y, y, spacing=(1, 1, 1))
    with pytest.raises(TypeError, match="unexpected keyword"):
        CCMetric("hd")(y, y, spacings=1.0)
    with pytest.raises(ValueError, match="nothing to aggregate"):
        CCMetric("hd").aggregate()
    with pytest.raises(ValueError, match="mode"):
        metric = CCMetric("hd")
        metric(y, y)
        metric.aggregate("lesion")
