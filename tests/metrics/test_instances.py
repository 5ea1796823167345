"""Instance matching and Panoptic Quality: hand-computed cases, MoNuSAC pitfalls, brute force."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from ccmetrics import match_instances, multiclass_pq, panoptic_quality


def squares(offsets, size=10, shape=(20, 60), labels=None):
    out = np.zeros(shape, np.int32)
    for i, (r, c) in enumerate(offsets):
        out[r : r + size, c : c + size] = labels[i] if labels else i + 1
    return out


# ----------------------------------------------------------------------------- hand-computed


def test_monusac_label_value_bug_case():
    gt = squares([(2, 2), (2, 20), (2, 40)], labels=[1, 2, 3])
    pred = squares([(2, 2), (2, 20), (2, 40)], labels=[4, 5, 6])
    r = panoptic_quality(pred=pred, gt=gt, instances=True)
    assert (r.pq, r.sq, r.rq, r.tp, r.fp, r.fn) == (1.0, 1.0, 1.0, 3, 0, 0)
    assert r.pairs[["gt_label", "pred_label"]].values.tolist() == [[1, 4], [2, 5], [3, 6]]


@pytest.mark.parametrize("k", range(0, 6))
def test_shifted_square_iou_and_strict_threshold(k):
    gt = squares([(5, 5)], shape=(30, 30))
    pred = squares([(5, 5 + k)], shape=(30, 30))
    iou = (10 - k) / (10 + k)
    r = panoptic_quality(pred=pred, gt=gt, instances=True)
    if iou > 0.5:  # k <= 3 (IoU 0.538 at k = 3)
        assert (r.tp, r.fp, r.fn) == (1, 0, 0)
        assert r.sq == pytest.approx(iou) and r.pq == pytest.approx(iou)
    else:  # k = 4 gives IoU 0.4286; IoU exactly 0.5 needs k = 10/3, see below
        assert (r.tp, r.fp, r.fn, r.pq) == (0, 1, 1, 0.0)


def test_iou_exactly_half_is_no_match():
    gt = np.zeros((1, 8), int)
    gt[0, 0:4] = 1
    pred = np.zeros((1, 8), int)
    pred[0, 0:2] = 5  # IoU 2/4 = 0.5
    r = panoptic_quality(pred=pred, gt=gt, instances=True)
    assert (r.tp, r.fp, r.fn) == (0, 1, 1)
    assert match_instances(pred=pred, gt=gt, rule="iou", threshold=0.49).tp == 1


def test_split_and_merge():
    gt = squares([(5, 5)], shape=(30, 30))
    split = np.zeros_like(gt)
    split[5:15, 5:10] = 1
    split[5:15, 10:15] = 2
    r = panoptic_quality(pred=split, gt=gt, instances=True)
    assert (r.pq, r.tp, r.fp, r.fn) == (0.0, 0, 2, 1)
    two = np.zeros((30, 30), int)
    two[5:15, 5:10] = 1
    two[5:15, 10:15] = 2
    merged = (two > 0).astype(int) * 9
    r = panoptic_quality(pred=merged, gt=two, instances=True)
    assert (r.pq, r.tp, r.fp, r.fn) == (0.0, 0, 1, 2)


def test_both_empty_is_nan_and_binary_input_uses_components():
    r = panoptic_quality(pred=np.zeros((5, 5), bool), gt=np.zeros((5, 5), bool))
    assert np.isnan(r.pq) and np.isnan(r.sq) and np.isnan(r.rq) and r.tp == r.fp == r.fn == 0
    gt = np.zeros((3, 3, 3), bool)
    gt[0, 0, 0] = gt[1, 1, 1] = True  # diagonal neighbours: one object with 26-, two with 6-connectivity
    assert panoptic_quality(pred=gt, gt=gt).tp == 1
    assert panoptic_quality(pred=gt, gt=gt, connectivity=6).tp == 2


def test_centroid_rule_accepts_small_low_iou_detections():
    gt = np.zeros((20, 20), int)
    gt[5:9, 5:9] = 3  # 16 px nucleus
    pred = np.zeros_like(gt)
    pred[6:8, 6:8] = 8  # 4 px inside: IoU 0.25, centroid (6.5, 6.5) -> rounds to (7, 7), inside
    assert match_instances(pred=pred, gt=gt).tp == 0
    m = match_instances(pred=pred, gt=gt, rule="centroid")
    assert m.pairs[["gt_label", "pred_label"]].values.tolist() == [[3, 8]]
    assert m.pairs["iou"].tolist() == [0.25]
    off = np.zeros_like(gt)
    off[8:12, 8:12] = 8  # overlaps one pixel, centroid (9.5, 9.5) -> (10, 10) outside
    assert match_instances(pred=off, gt=gt, rule="centroid").tp == 0


def test_max_iou_assignment_prefers_total_iou():
    # GT 1 = [0, 10), GT 2 = [12, 22); prediction 7 = [3, 13), prediction 8 = [0, 3)
    # IoU(1, 7) = 7/13, IoU(1, 8) = 3/10, IoU(2, 7) = 1/19: {1-7} (0.538) beats {1-8, 2-7} (0.353)
    gt = np.zeros((1, 30), int)
    pred = np.zeros((1, 30), int)
    gt[0, 0:10], gt[0, 12:22] = 1, 2
    pred[0, 3:13], pred[0, 0:3] = 7, 8
    m = match_instances(pred=pred, gt=gt, rule="max_iou")
    pairs = dict(zip(m.pairs["gt_label"], m.pairs["pred_label"]))
    assert pairs == {1: 7}
    assert m.pairs["iou"].sum() == pytest.approx(7 / 13)
    assert m.unmatched_gt.tolist() == [2] and m.unmatched_pred.tolist() == [8]


# ----------------------------------------------------------------------------- brute force


def brute_iou_matrix(pred, gt):
    g_labels = [v for v in np.unique(gt) if v]
    p_labels = [v for v in np.unique(pred) if v]
    m = np.zeros((len(g_labels), len(p_labels)))
    for i, g in enumerate(g_labels):
        for j, p in enumerate(p_labels):
            a, b = gt == g, pred == p
            m[i, j] = (a & b).sum() / (a | b).sum()
    return g_labels, p_labels, m


def random_instances(rng, shape=(40, 40), n=8, start=1):
    out = np.zeros(shape, np.int32)
    labels = rng.permutation(np.arange(start, start + 3 * n))[:n]
    for lab in labels:
        r, c = rng.integers(0, shape[0] - 4), rng.integers(0, shape[1] - 4)
        h, w = rng.integers(2, 9, 2)
        out[r : r + h, c : c + w] = lab
    return out


@pytest.mark.parametrize("seed", range(12))
def test_pq_equals_brute_force_on_random_instance_maps(seed):
    rng = np.random.default_rng(seed)
    gt = random_instances(rng)
    pred = np.where(rng.random(gt.shape) < 0.95, np.roll(gt, rng.integers(-2, 3), axis=1), 0)
    pred = np.where(pred > 0, pred + 100, random_instances(rng, n=3, start=500))
    g_labels, p_labels, m = brute_iou_matrix(pred, gt)
    matched = m > 0.5
    assert matched.sum(axis=0).max(initial=0) <= 1 and matched.sum(axis=1).max(initial=0) <= 1
    tp = int(matched.sum())
    fp, fn = len(p_labels) - tp, len(g_labels) - tp
    r = panoptic_quality(pred=pred, gt=gt, instances=True)
    assert (r.tp, r.fp, r.fn) == (tp, fp, fn)
    assert r.iou_sum == pytest.approx(m[matched].sum())
    if tp:
        assert r.pq == pytest.approx(m[matched].sum() / tp * tp / (tp + fp / 2 + fn / 2))
    # Hungarian rules against an independent assignment over the brute-force matrix
    for rule, keep in (("max_iou", m > 0), ("iou", m > 0.2)):
        weight = np.where(keep, m, 0)
        rows, cols = linear_sum_assignment(weight, maximize=True)
        best = weight[rows, cols].sum()
        result = match_instances(pred=pred, gt=gt, rule=rule, threshold=0.2)
        assert result.pairs["iou"].sum() == pytest.approx(best)
        assert (result.pairs["iou"] > (0.2 if rule == "iou" else 0)).all()
    # centroid rule, GT by GT
    expected = []
    for i, g in enumerate(g_labels):
        if m[i].max(initial=0) > 0:
            j = int(np.argmax(m[i]))
            centroid = np.floor(np.argwhere(pred == p_labels[j]).mean(axis=0) + 0.5).astype(int)
            if gt[tuple(centroid)] == g:
                expected.append((g, p_labels[j]))
    got = match_instances(pred=pred, gt=gt, rule="centroid").pairs[["gt_label", "pred_label"]].values.tolist()
    assert [tuple(x) for x in got] == expected


@pytest.mark.parametrize("rule", ["iou", "centroid", "max_iou"])
def test_label_permutation_changes_nothing(rule):
    rng = np.random.default_rng(3)
    gt = random_instances(rng, n=10)
    pred = np.where(np.roll(gt, 1, axis=0) > 0, np.roll(gt, 1, axis=0) + 7, 0)
    reference = panoptic_quality(pred=pred, gt=gt, instances=True, rule=rule)
    for _ in range(5):
        gmap = np.concatenate([[0], rng.permutation(np.arange(1, gt.max() + 1)) + 1000])
        pmap = np.concatenate([[0], rng.permutation(np.arange(1, pred.max() + 1)) + 50])
        r = panoptic_quality(pred=pmap[pred], gt=gmap[gt], instances=True, rule=rule)
        assert (r.tp, r.fp, r.fn) == (reference.tp, reference.fp, reference.fn)
        assert r.pq == pytest.approx(reference.pq)
        assert sorted(r.pairs["iou"]) == pytest.approx(sorted(reference.pairs["iou"]))


# ----------------------------------------------------------------------------- multi-class


def two_class_image():
    inst = squares([(2, 2), (2, 20), (2, 40)], shape=(20, 60))
    cls = np.select([inst == 1, inst == 2, inst == 3], [1, 1, 2], 0)
    return inst, cls


def test_class_only_in_prediction_is_a_false_positive():
    inst, cls = two_class_image()
    pred_cls = np.where(inst == 3, 3, cls)  # the third object predicted as class 3, absent from GT
    r = multiclass_pq(
        pred=[inst], pred_classes=[pred_cls], gt=[inst], gt_classes=[cls], aggregation="image", n_classes=3
    )
    table = r.per_class
    assert table.loc[3, ["tp", "fp", "fn"]].tolist() == [0, 1, 0]
    assert table.loc[2, ["tp", "fp", "fn"]].tolist() == [0, 0, 1]
    assert table.loc[1, "pq"] == 1.0
    # image PQ = mean over classes present in GT or prediction: (1 + 0 + 0) / 3
    assert r.pq == pytest.approx(1 / 3)


def test_aggregations_image_dataset_group():
    inst, cls = two_class_image()
    perfect = ([inst], [cls], [inst], [cls])
    wrong = np.where(inst == 1, 2, cls)  # object 1 predicted as class 2
    imgs_pred_inst, imgs_pred_cls = [inst, inst, inst], [cls, wrong, cls]
    gts_inst, gts_cls = [inst] * 3, [cls] * 3
    assert multiclass_pq(*perfect).pq == 1.0
    # image 1: class 1 has tp 1 fn 1 -> RQ 2/3; class 2 has tp 1 fp 1 -> 2/3; image PQ 2/3
    r = multiclass_pq(
        pred=imgs_pred_inst, pred_classes=imgs_pred_cls, gt=gts_inst, gt_classes=gts_cls, aggregation="image"
    )
    assert r.per_unit["pq"].tolist() == pytest.approx([1, 2 / 3, 1])
    assert r.pq == pytest.approx((1 + 2 / 3 + 1) / 3)
    # dataset: class 1 pooled tp 5 fn 1 -> 5/5.5; class 2 pooled tp 3 fp 1 -> 3/3.5
    r = multiclass_pq(
        pred=imgs_pred_inst, pred_classes=imgs_pred_cls, gt=gts_inst, gt_classes=gts_cls, aggregation="dataset"
    )
    assert r.per_class["pq"].tolist() == pytest.approx([5 / 5.5, 3 / 3.5])
    assert r.pq == pytest.approx((5 / 5.5 + 3 / 3.5) / 2)
    # group: patient A = images 0, 1 pooled; patient B = image 2
    r = multiclass_pq(
        pred=imgs_pred_inst,
        pred_classes=imgs_pred_cls,
        gt=gts_inst,
        gt_classes=gts_cls,
        aggregation="group",
        groups=["A", "A", "B"],
    )
    a = (3 / 3.5 + 2 / 2.5) / 2
    assert r.per_unit["pq"].tolist() == pytest.approx([a, 1.0])
    assert r.pq == pytest.approx((a + 1) / 2)


def test_empty_images_are_nan_counted_and_excluded():
    inst, cls = two_class_image()
    empty = np.zeros_like(inst)
    r = multiclass_pq(
        pred=[inst, empty], pred_classes=[cls, empty], gt=[inst, empty], gt_classes=[cls, empty], aggregation="image"
    )
    assert r.pq == 1.0 and r.n_undefined == 1 and np.isnan(r.per_unit["pq"].iloc[1])


def test_multiclass_input_errors():
    inst, cls = two_class_image()
    with pytest.raises(ValueError, match="groups"):
        multiclass_pq(pred=[inst], pred_classes=[cls], gt=[inst], gt_classes=[cls], aggregation="group")
    with pytest.raises(ValueError, match="one array per image"):
        multiclass_pq(pred=[inst], pred_classes=[cls], gt=[inst, inst], gt_classes=[cls])
    with pytest.raises(ValueError, match="has class 0"):
        multiclass_pq(pred=[inst], pred_classes=[np.zeros_like(cls)], gt=[inst], gt_classes=[cls])
    with pytest.raises(ValueError, match="rule must be"):
        panoptic_quality(pred=inst, gt=inst, instances=True, rule="dice")


@pytest.mark.parametrize("aggregation", ["image", "dataset"])
def test_multiclass_permutation_invariance(aggregation):
    rng = np.random.default_rng(5)
    gts = [random_instances(rng, n=6) for _ in range(3)]
    classes = [np.where(g > 0, g % 2 + 1, 0) for g in gts]
    preds = [np.where(np.roll(g, 1, axis=1) > 0, np.roll(g, 1, axis=1), 0) for g in gts]
    pclasses = [np.where(np.roll(c, 1, axis=1) > 0, np.roll(c, 1, axis=1), 0) for c in classes]
    ref = multiclass_pq(pred=preds, pred_classes=pclasses, gt=gts, gt_classes=classes, aggregation=aggregation)
    relabel = [np.concatenate([[0], rng.permutation(np.arange(1, 100)) + 7]) for _ in range(3)]
    perm = multiclass_pq(
        pred=[r[p] for r, p in zip(relabel, preds)],
        pred_classes=pclasses,
        gt=gts,
        gt_classes=classes,
        aggregation=aggregation,
    )
    assert perm.pq == pytest.approx(ref.pq)
    assert perm.per_class[["tp", "fp", "fn"]].equals(ref.per_class[["tp", "fp", "fn"]])
