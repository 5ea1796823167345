"""ccmetrics.nuclei: disentangled nuclei metrics against hand computations and brute force written here."""

import math

import numpy as np
import pandas as pd
import pytest
from conftest import monai_metrics
from scipy.optimize import linear_sum_assignment

import ccmetrics
from ccmetrics import nuclei
from ccmetrics.nuclei import evaluate, evaluate_many, metrics_from_confusion
from ccmetrics.nuclei.synthetic import nuclei_tile

try:
    import scikit_posthocs  # noqa: F401
except ImportError:
    scikit_posthocs = None
needs_posthocs = pytest.mark.skipif(scikit_posthocs is None, reason="scikit-posthocs not installed")


def squares(offsets, size=10, shape=(20, 60), labels=None):
    out = np.zeros(shape, np.int32)
    for i, (r, c) in enumerate(offsets):
        out[r : r + size, c : c + size] = labels[i] if labels else i + 1
    return out


def random_tile(seed, shape=(56, 56), n=14, n_classes=3):
    """GT and prediction instance maps with class dicts; labels unrelated between the two."""
    rng = np.random.default_rng(seed)
    gt = np.zeros(shape, np.int32)
    for lab in rng.permutation(np.arange(1, 4 * n))[:n]:
        r, c = rng.integers(0, shape[0] - 3), rng.integers(0, shape[1] - 3)
        h, w = rng.integers(3, 10, 2)
        gt[r : r + h, c : c + w] = lab
    shifted = np.roll(gt, tuple(rng.integers(-1, 2, 2)), axis=(0, 1))
    pred = np.where(shifted > 0, shifted * 7 + 3, 0)
    for k in range(3):  # false positives and a partial overlap or two
        r, c = rng.integers(0, shape[0] - 5, 2)
        pred[r : r + 4, c : c + 5] = 5000 + k
    gt_cls = {int(g): int(rng.integers(1, n_classes + 1)) for g in np.unique(gt[gt > 0])}
    pred_cls = {int(p): int(rng.integers(1, n_classes + 1)) for p in np.unique(pred[pred > 0])}
    return gt, gt_cls, pred, pred_cls


# ----------------------------------------------------------------------------- brute force


def brute_iou(pred, gt):
    out = {}
    for g in np.unique(gt[gt > 0]):
        for p in np.unique(pred[pred > 0]):
            a, b = gt == g, pred == p
            if (a & b).any():
                out[(int(g), int(p))] = (a & b).sum() / (a | b).sum()
    return out


def brute_matches(pred, gt, rule, threshold=0.5):
    iou = brute_iou(pred, gt)
    g_labels = [int(v) for v in np.unique(gt[gt > 0])]
    p_labels = [int(v) for v in np.unique(pred[pred > 0])]
    if rule == "iou":
        return [k for k, v in iou.items() if v > threshold]
    if rule == "centroid":
        out = []
        for g in g_labels:
            cands = [(v, -p) for (gg, p), v in iou.items() if gg == g]
            if cands:
                p = -max(cands)[1]
                centroid = np.floor(np.argwhere(pred == p).mean(axis=0) + 0.5).astype(int)
                if gt[tuple(centroid)] == g:
                    out.append((g, p))
        return out
    weight = np.zeros((len(g_labels), len(p_labels)))
    for (g, p), v in iou.items():
        weight[g_labels.index(g), p_labels.index(p)] = v
    rows, cols = linear_sum_assignment(weight, maximize=True)
    return [(g_labels[r], p_labels[c]) for r, c in zip(rows, cols) if weight[r, c] > 0]


def brute_confusion(pred, gt, gt_cls, pred_cls, matches, classes):
    index = {c: i + 1 for i, c in enumerate(classes)}
    m = np.zeros((len(classes) + 1,) * 2, int)
    matched_g = {g for g, _ in matches}
    matched_p = {p for _, p in matches}
    for g, p in matches:
        m[index[gt_cls[g]], index[pred_cls[p]]] += 1
    for g in np.unique(gt[gt > 0]):
        if int(g) not in matched_g:
            m[index[gt_cls[int(g)]], 0] += 1
    for p in np.unique(pred[pred > 0]):
        if int(p) not in matched_p:
            m[0, index[pred_cls[int(p)]]] += 1
    return m


def hand_metrics(m):
    """Detection and classification scores by explicit loops over a confusion matrix."""
    n = m.shape[0] - 1
    tp = sum(m[i, j] for i in range(1, n + 1) for j in range(1, n + 1))
    fp = sum(m[0, j] for j in range(n + 1))
    fn = sum(m[i, 0] for i in range(n + 1))
    det = {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": tp / (tp + fp) if tp + fp else math.nan,
        "recall": tp / (tp + fn) if tp + fn else math.nan,
        "f1": 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else math.nan,
    }
    diag_norm, per_class = [], []
    for k in range(1, n + 1):
        row = sum(m[k, j] for j in range(1, n + 1))
        col = sum(m[i, k] for i in range(1, n + 1))
        if row:
            diag_norm.append(m[k, k] / row)
        per_class.append((m[k, k] / col if col else math.nan, m[k, k] / row if row else math.nan))
    matched = tp
    correct = sum(m[k, k] for k in range(1, n + 1))
    cls = {
        "balanced_accuracy": sum(diag_norm) / len(diag_norm) if diag_norm else math.nan,
        "accuracy": correct / matched if matched else math.nan,
    }
    return det, cls, per_class


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b)


# ----------------------------------------------------------------------------- MoNuSAC pitfalls


def test_monusac_label_misalignment_pq_is_one():
    gt = squares([(2, 2), (2, 20), (2, 40)], labels=[1, 2, 3])
    pred = squares([(2, 2), (2, 20), (2, 40)], labels=[4, 5, 6])
    cls_gt, cls_pred = {1: 1, 2: 2, 3: 1}, {4: 1, 5: 2, 6: 1}
    r = evaluate(gt, cls_gt, pred, cls_pred)
    assert (r.pq["pq"], r.pq["tp"], r.pq["fp"], r.pq["fn"]) == (1.0, 3, 0, 0)
    assert r.per_class["pq"].tolist() == [1.0, 1.0] and r.pq["mpq"] == 1.0
    assert r.detection["f1"] == 1.0 and r.classification["balanced_accuracy"] == 1.0
    assert r.per_pair[["gt_label", "pred_label"]].astype(int).values.tolist() == [[1, 4], [2, 5], [3, 6]]


def test_class_only_in_prediction_is_a_false_positive():
    gt = squares([(2, 2), (2, 20), (2, 40)])
    pred = squares([(2, 2), (2, 20), (2, 40)], labels=[7, 8, 9])
    pred[15:19, 50:55] = 10  # an extra object, class 3, overlapping nothing
    gt_cls = {1: 1, 2: 1, 3: 2}
    pred_cls = {7: 1, 8: 1, 9: 3, 10: 3}  # object 3 (class 2) predicted as class 3, absent from the GT
    r = evaluate(gt, gt_cls, pred, pred_cls)
    assert r.classes == [1, 2, 3]
    assert r.per_class.loc[3, ["pq_tp", "pq_fp", "pq_fn"]].tolist() == [0, 2, 0]
    assert r.per_class.loc[2, ["pq_tp", "pq_fp", "pq_fn"]].tolist() == [0, 0, 1]
    assert r.confusion.loc[2, 3] == 1 and r.confusion.loc["no object", 3] == 1
    assert r.detection["fp"] == 1 and r.detection["tp"] == 3
    # mPQ of the image: mean over the classes in GT or prediction (1, 0, 0)
    assert r.pq["mpq"] == pytest.approx(1 / 3)
    # the same from multiclass_pq (aPQ of one image)
    lut_g, lut_p = np.zeros(11, int), np.zeros(11, int)
    for k, v in gt_cls.items():
        lut_g[k] = v
    for k, v in pred_cls.items():
        lut_p[k] = v
    ref = ccmetrics.multiclass_pq(
        pred=[pred], pred_classes=[lut_p[pred]], gt=[gt], gt_classes=[lut_g[gt]], aggregation="image"
    )
    assert r.pq["mpq"] == pytest.approx(ref.pq)


# ----------------------------------------------------------------------------- matching rules


@pytest.mark.parametrize("k", range(0, 7))
def test_centroid_rule_vs_strict_iou_on_shifted_squares(k):
    gt = squares([(5, 5)], shape=(30, 30))
    pred = squares([(5, 5 + k)], shape=(30, 30), labels=[9])
    iou = (10 - k) / (10 + k)
    centroid = np.floor(np.argwhere(pred == 9).mean(axis=0) + 0.5).astype(int)
    centroid_inside = gt[tuple(centroid)] == 1
    strict = evaluate(gt, None, pred, None, rule="iou", cc_metrics=())
    by_centroid = evaluate(gt, None, pred, None, rule="centroid", cc_metrics=())
    assert strict.detection["tp"] == int(iou > 0.5)
    assert by_centroid.detection["tp"] == int(centroid_inside)
    if iou > 0.5:
        assert k <= 3 and strict.segmentation["iou"] == pytest.approx(iou)
    if k == 4:  # strict IoU fails (0.4286) but the centroid rule still matches
        assert strict.detection["tp"] == 0 and by_centroid.detection["tp"] == 1
        assert by_centroid.segmentation["iou"] == pytest.approx(iou)
    assert by_centroid.detection["tp"] >= strict.detection["tp"]


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("rule", ["iou", "centroid", "max_iou"])
def test_matching_and_confusion_equal_brute_force(seed, rule):
    gt, gt_cls, pred, pred_cls = random_tile(seed)
    r = evaluate(gt, gt_cls, pred, pred_cls, rule=rule, cc_metrics=())
    iou = brute_iou(pred, gt)
    matches = brute_matches(pred, gt, rule)
    if rule == "max_iou":  # optimum unique in value; compare totals and the matrix margins
        assert r.pq["iou_sum"] == pytest.approx(sum(iou[k] for k in matches))
        matches = [
            tuple(x)
            for x in r.per_pair.loc[r.per_pair["match"] == "tp", ["gt_label", "pred_label"]].astype(int).values.tolist()
        ]
        assert all(k in iou for k in matches)
    else:
        got = r.per_pair.loc[r.per_pair["match"] == "tp", ["gt_label", "pred_label"]].astype(int)
        assert sorted(map(tuple, got.values.tolist())) == sorted(matches)
    classes = sorted(set(gt_cls.values()) | set(pred_cls.values()))
    expected = brute_confusion(pred, gt, gt_cls, pred_cls, matches, classes)
    np.testing.assert_array_equal(r.confusion_matrix, expected)
    assert r.confusion.to_numpy().tolist() == expected.tolist()
    # the per-pair table gives the matrix back
    back = (
        pd.crosstab(r.per_pair["gt_class"], r.per_pair["pred_class"])
        .reindex(index=[0] + classes, columns=[0] + classes, fill_value=0)
        .to_numpy()
        .copy()
    )
    back[0, 0] = 0
    np.testing.assert_array_equal(back, expected)
    # IoU of every matched pair
    for _, row in r.per_pair[r.per_pair["match"] == "tp"].iterrows():
        assert row["iou"] == pytest.approx(iou[(int(row["gt_label"]), int(row["pred_label"]))])
    # scores from the brute-force matrix
    det, cls, _ = hand_metrics(expected)
    for key, value in det.items():
        assert same(r.detection[key], value)
    assert same(r.classification["balanced_accuracy"], cls["balanced_accuracy"])
    assert same(r.classification["accuracy"], cls["accuracy"])


@pytest.mark.parametrize("seed", range(4))
def test_per_class_pq_equals_multiclass_pq(seed):
    gt, gt_cls, pred, pred_cls = random_tile(seed)
    r = evaluate(gt, gt_cls, pred, pred_cls, cc_metrics=())
    gt_map, pred_map = _class_maps(gt, gt_cls, pred, pred_cls)
    ref = ccmetrics.multiclass_pq(
        pred=[pred],
        pred_classes=[pred_map],
        gt=[gt],
        gt_classes=[gt_map],
        aggregation="dataset",
        n_classes=max(r.classes),
    )
    table = ref.per_class.reindex(r.classes)
    assert r.per_class[["pq_tp", "pq_fp", "pq_fn"]].to_numpy().tolist() == table[["tp", "fp", "fn"]].to_numpy().tolist()
    np.testing.assert_allclose(r.per_class["pq"], table["pq"])
    # class maps give the same result as dicts
    by_map = evaluate(gt, gt_map, pred, pred_map, cc_metrics=())
    assert by_map.scores() == pytest.approx(r.scores(), nan_ok=True)


# ----------------------------------------------------------------------------- confusion-matrix metrics


def test_metrics_from_hand_computed_matrix():
    #            no   1   2   3
    cm = np.array(
        [
            [0, 2, 1, 0],  # unmatched predictions
            [1, 8, 2, 0],  # GT class 1: 10 matched, 1 missed
            [3, 1, 4, 0],  # GT class 2: 5 matched, 3 missed
            [0, 0, 0, 0],
        ]
    )  # class 3: nothing
    det, cls = metrics_from_confusion(cm)
    assert (det["tp"], det["fp"], det["fn"]) == (15, 3, 4)
    assert det["precision"] == pytest.approx(15 / 18) and det["recall"] == pytest.approx(15 / 19)
    assert det["f1"] == pytest.approx(30 / 37)
    assert cls["n_matched"] == 15 and cls["accuracy"] == pytest.approx(12 / 15)
    # row-normalised: class 1 -> 8/10, class 2 -> 4/5; class 3 has no matched object
    assert cls["balanced_accuracy"] == pytest.approx((0.8 + 0.8) / 2)
    pc = cls["per_class"]
    assert pc.loc[1, "precision"] == pytest.approx(8 / 9) and pc.loc[1, "recall"] == pytest.approx(0.8)
    assert pc.loc[2, "precision"] == pytest.approx(4 / 6) and pc.loc[2, "recall"] == pytest.approx(0.8)
    assert pc.loc[1, "f1"] == pytest.approx(2 * 8 / (10 + 9))
    # normalised rows: [0.8, 0.2, 0], [0.2, 0.8, 0] -> column sums 1.0, 1.0
    assert pc.loc[1, "precision_norm"] == pytest.approx(0.8) and pc.loc[2, "precision_norm"] == pytest.approx(0.8)
    assert np.isnan(pc.loc[3, "precision"]) and np.isnan(pc.loc[3, "recall"]) and np.isnan(pc.loc[3, "f1"])
    assert cls["macro_f1"] == pytest.approx((16 / 19 + 8 / 11) / 2)
    # from a labelled DataFrame, the labels are kept
    frame = nuclei.metrics.confusion_frame(cm, ["epi", "lym", "neu"])
    assert list(metrics_from_confusion(frame)[1]["per_class"].index) == ["epi", "lym", "neu"]


def test_metrics_from_confusion_edge_cases():
    det, cls = metrics_from_confusion(np.zeros((3, 3), int))
    assert (det["tp"], det["fp"], det["fn"]) == (0, 0, 0)
    assert all(math.isnan(det[k]) for k in ("precision", "recall", "f1"))
    assert math.isnan(cls["balanced_accuracy"]) and math.isnan(cls["accuracy"])
    det, cls = metrics_from_confusion(np.array([[0, 4], [0, 0]]))  # only false positives
    assert det["precision"] == 0 and math.isnan(det["recall"]) and det["f1"] == 0
    with pytest.raises(ValueError, match="square"):
        metrics_from_confusion(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"cm\[0, 0\]"):
        metrics_from_confusion(np.ones((2, 2)))
    with pytest.raises(ValueError, match="non-negative"):
        metrics_from_confusion(np.array([[0, -1], [0, 0]]))


@pytest.mark.parametrize("seed", range(20))
def test_balanced_accuracy_and_per_class_equal_hand_loops(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    cm = rng.integers(0, 6, (n + 1, n + 1)) * (rng.random((n + 1, n + 1)) < 0.7)
    cm[0, 0] = 0
    det, cls = metrics_from_confusion(cm)
    hdet, hcls, hper = hand_metrics(cm)
    for key in hdet:
        assert same(det[key], hdet[key])
    assert same(cls["balanced_accuracy"], hcls["balanced_accuracy"])
    assert same(cls["accuracy"], hcls["accuracy"])
    for k, (precision, recall) in enumerate(hper, start=1):
        assert same(cls["per_class"].loc[k, "precision"], precision)
        assert same(cls["per_class"].loc[k, "recall"], recall)
    # balanced accuracy is the mean of the defined normalised recalls
    assert same(
        cls["balanced_accuracy"],
        np.nanmean(cls["per_class"]["recall_norm"]) if cls["per_class"]["recall_norm"].notna().any() else math.nan,
    )


# ----------------------------------------------------------------------------- invariance


@pytest.mark.parametrize("rule", ["iou", "centroid", "max_iou"])
def test_label_permutation_changes_no_output(rule):
    gt, gt_cls, pred, pred_cls = random_tile(7)
    ref = evaluate(gt, gt_cls, pred, pred_cls, rule=rule)
    rng = np.random.default_rng(1)
    for _ in range(3):
        g_new = {int(g): int(v) for g, v in zip(gt_cls, rng.permutation(len(gt_cls)) * 3 + 11)}
        p_new = {int(p): int(v) for p, v in zip(pred_cls, rng.permutation(len(pred_cls)) + 20000)}
        lut_g = np.zeros(gt.max() + 1, np.int64)
        lut_p = np.zeros(pred.max() + 1, np.int64)
        for k, v in g_new.items():
            lut_g[k] = v
        for k, v in p_new.items():
            lut_p[k] = v
        r = evaluate(
            lut_g[gt],
            {g_new[k]: c for k, c in gt_cls.items()},
            lut_p[pred],
            {p_new[k]: c for k, c in pred_cls.items()},
            rule=rule,
        )
        assert r.scores() == pytest.approx(ref.scores(), nan_ok=True)
        assert r.confusion.equals(ref.confusion)
        pd.testing.assert_frame_equal(r.per_class, ref.per_class)
        # per-pair rows, labels mapped back
        back_g = {v: k for k, v in g_new.items()}
        back_p = {v: k for k, v in p_new.items()}
        table = r.per_pair.copy()
        table["gt_label"] = table["gt_label"].map(lambda v, b=back_g: b.get(v, v) if pd.notna(v) else v).astype("Int64")
        table["pred_label"] = (
            table["pred_label"].map(lambda v, b=back_p: b.get(v, v) if pd.notna(v) else v).astype("Int64")
        )
        key = ["match", "gt_label", "pred_label"]
        pd.testing.assert_frame_equal(
            table.sort_values(key).reset_index(drop=True), ref.per_pair.sort_values(key).reset_index(drop=True)
        )


# ----------------------------------------------------------------------------- ignore mask


def test_ignore_mask_removes_objects_lying_in_it():
    gt = squares([(2, 2), (2, 20), (2, 40)])  # three 10x10 GT nuclei
    pred = squares([(2, 2), (2, 22), (2, 40)], labels=[5, 6, 7])
    pred[14:18, 50:55] = 8  # a false positive in the ambiguous region
    ignore = np.zeros(gt.shape, bool)
    ignore[:, 38:] = True  # covers GT 3 and predictions 7, 8 entirely
    ignore[2:8, 20:30] = True  # 60 % of GT 2, 48 % of prediction 6 (cols 22-31)
    cls = {1: 1, 2: 1, 3: 2}
    pcls = {5: 1, 6: 1, 7: 2, 8: 2}
    plain = evaluate(gt, cls, pred, pcls, cc_metrics=())
    assert (plain.detection["tp"], plain.detection["fp"], plain.detection["fn"]) == (3, 1, 0)
    r = evaluate(gt, cls, pred, pcls, ignore=ignore, cc_metrics=())
    assert sorted(r.ignored["gt"].tolist()) == [2, 3] and sorted(r.ignored["pred"].tolist()) == [7, 8]
    # GT 2 is gone, prediction 6 stays (under half inside): one TP, one FP
    assert (r.detection["tp"], r.detection["fp"], r.detection["fn"]) == (1, 1, 0)
    assert r.classes == [1]  # every class-2 object was in the ignore mask
    # any overlap removes with ignore_fraction=0; the kept objects keep all their pixels
    r0 = evaluate(gt, cls, pred, pcls, ignore=ignore, ignore_fraction=0.0, cc_metrics=())
    assert (r0.detection["tp"], r0.detection["fp"], r0.detection["fn"]) == (1, 0, 0)
    assert r0.per_pair["gt_area"].tolist() == [100]
    # an equivalent: evaluating the maps with the ignored objects erased
    erased = evaluate(
        np.where(np.isin(gt, [2, 3]), 0, gt), cls, np.where(np.isin(pred, [7, 8]), 0, pred), pcls, classes=[1, 2]
    )
    with_ignore = evaluate(gt, cls, pred, pcls, ignore=ignore, classes=[1, 2])
    assert with_ignore.scores() == pytest.approx(erased.scores(), nan_ok=True)
    with pytest.raises(ValueError, match="ignore must have the shape"):
        evaluate(gt, cls, pred, pcls, ignore=ignore[:, :10])
    with pytest.raises(ValueError, match="ignore_fraction"):
        evaluate(gt, cls, pred, pcls, ignore=ignore, ignore_fraction=1.0)


# ----------------------------------------------------------------------------- segmentation


@pytest.mark.parametrize("spacing", [None, (0.5, 0.25)])
def test_pair_hd95_equals_evaluate_and_monai(spacing):
    gt, gt_cls, pred, pred_cls = random_tile(3, shape=(40, 40), n=8)
    r = evaluate(gt, gt_cls, pred, pred_cls, rule="max_iou", spacing=spacing, cc_metrics=())
    matched = r.per_pair[r.per_pair["match"] == "tp"]
    assert len(matched) >= 4
    for _, row in matched.iterrows():
        g_mask, p_mask = gt == row["gt_label"], pred == row["pred_label"]
        ours = ccmetrics.evaluate(
            pred=p_mask, gt=g_mask, metrics=["hd", "hd95", "dice", "iou"], spacing=spacing
        ).standard
        ref = monai_metrics(p_mask, g_mask, spacing=spacing)
        assert row["hd95"] == pytest.approx(ours["hd95"], abs=1e-6)
        assert row["hd"] == pytest.approx(ours["hd"], abs=1e-6)
        assert row["hd95"] == pytest.approx(ref["hd95"], abs=1e-4)
        assert row["hd"] == pytest.approx(ref["hd"], abs=1e-4)
        assert row["dice"] == pytest.approx(ours["dice"]) and row["iou"] == pytest.approx(ours["iou"])
    assert r.segmentation["hd95"] == pytest.approx(matched["hd95"].mean())
    by_class = matched.groupby("gt_class")["iou"].mean()
    np.testing.assert_allclose(r.per_class.loc[by_class.index, "seg_iou"], by_class)


def test_rows_quantile_equals_torch_quantile():
    from ccmetrics.engine.torch_emulation import torch_quantile
    from ccmetrics.nuclei.metrics import rows_quantile

    rng = np.random.default_rng(0)
    rows = [np.array([1.0] * 8 + [math.sqrt(29)], np.float32)]  # one FMA vs two roundings differ here
    rows += [np.sqrt(rng.integers(0, 400, int(n))).astype(np.float32) for n in rng.integers(1, 90, 300)]
    width = max(len(r) for r in rows)
    padded = np.full((len(rows), width), np.inf, np.float32)
    for i, r in enumerate(rows):
        padded[i, : len(r)] = r
    got = rows_quantile(padded, np.array([len(r) for r in rows]), 0.95)
    assert got.tolist() == [torch_quantile(r, 0.95) for r in rows]


def test_cc_metrics_use_gt_nuclei_as_sites():
    gt, gt_cls, pred, pred_cls = random_tile(5)
    r = evaluate(gt, gt_cls, pred, pred_cls, spacing=0.5)
    # sites renumbered in raster order of their first pixel (ties of the partition go to the lowest site)
    labels, first = np.unique(gt.ravel(), return_index=True)
    labels, first = labels[labels > 0], first[labels > 0]
    raster = labels[np.argsort(first)]
    lut = np.zeros(gt.max() + 1, int)
    lut[raster] = np.arange(1, len(raster) + 1)
    ref = ccmetrics.evaluate(pred=pred > 0, gt=lut[gt], metrics=["dice", "nsd", "hd95"], sites="labels", spacing=0.5)
    assert r.cc == pytest.approx({f"cc_{k}": v for k, v in ref.cc.items()})
    assert r.per_component["gt_label"].tolist() == raster.tolist()
    assert r.per_component["gt_class"].tolist() == [gt_cls[g] for g in raster]
    np.testing.assert_allclose(r.per_component["dice"], ref.per_component["dice"])
    # touching nuclei stay separate: two adjacent squares are two sites
    two = np.zeros((10, 20), int)
    two[2:6, 2:6], two[2:6, 6:10] = 1, 2
    assert len(evaluate(two, None, two, None).per_component) == 2


# ----------------------------------------------------------------------------- input errors


def test_class_errors():
    gt = squares([(2, 2), (2, 20)])
    cls_map = np.where(gt > 0, 1, 0)
    cls_map[2, 2] = 2  # instance 1 has a pixel of class 2
    with pytest.raises(ValueError, match=r"gt_inst: instance 1 has pixels of classes \[1, 2\].*class_rule='majority'"):
        evaluate(gt, cls_map, gt, np.where(gt > 0, 1, 0))
    r = evaluate(gt, cls_map, gt, np.where(gt > 0, 1, 0), class_rule="majority", cc_metrics=())
    assert r.classes == [1] and r.classification["accuracy"] == 1.0
    with pytest.raises(ValueError, match=r"not in classes=\[1\]"):
        evaluate(gt, {1: 1, 2: 2}, gt, {1: 1, 2: 1}, classes=[1])
    with pytest.raises(ValueError, match=r"no class for instance id\(s\) \[2\]"):
        evaluate(gt, {1: 1}, gt, {1: 1, 2: 1})
    with pytest.raises(ValueError, match="has class 0"):
        evaluate(gt, np.zeros_like(gt), gt, None)
    with pytest.raises(ValueError, match="class 0"):
        evaluate(gt, {1: 0, 2: 1}, gt, None)
    with pytest.raises(ValueError, match="class_rule"):
        evaluate(gt, None, gt, None, class_rule="vote")


def test_shape_and_rule_errors():
    gt = squares([(2, 2)])
    with pytest.raises(ValueError, match="same shape"):
        evaluate(gt, None, gt[:, :30], None)
    with pytest.raises(ValueError, match="class map has shape"):
        evaluate(gt, np.ones((3, 3), int), gt, None)
    with pytest.raises(ValueError, match="rule must be"):
        evaluate(gt, None, gt, None, rule="dice")
    with pytest.raises(ValueError, match="non-negative"):
        evaluate(-gt, None, gt, None)


def test_empty_images():
    z = np.zeros((12, 12), int)
    r = evaluate(z, None, z, None)
    assert r.detection["tp"] == 0 and math.isnan(r.detection["f1"]) and math.isnan(r.pq["pq"])
    one = z.copy()
    one[2:6, 2:6] = 3
    r = evaluate(one, None, z, None)
    assert (r.detection["fn"], r.detection["recall"], r.pq["pq"]) == (1, 0.0, 0.0)
    assert math.isnan(r.segmentation["iou"])


# ----------------------------------------------------------------------------- data sets


def _class_maps(gt, gt_cls, pred, pred_cls):
    lut_g = np.zeros(gt.max() + 1, int)
    lut_p = np.zeros(pred.max() + 1, int)
    for k, v in gt_cls.items():
        lut_g[k] = v
    for k, v in pred_cls.items():
        lut_p[k] = v
    return lut_g[gt], lut_p[pred]


@pytest.mark.parametrize("rule", ["iou", "centroid"])
def test_evaluate_many_aggregations_equal_multiclass_pq(rule):
    tiles = [random_tile(s) for s in range(6)]
    groups = ["A", "A", "B", "C", "C", "C"]
    r = evaluate_many([t for t in tiles], groups, rule=rule, cc_metrics=())
    maps = [_class_maps(*t) for t in tiles]
    args = ([t[2] for t in tiles], [m[1] for m in maps], [t[0] for t in tiles], [m[0] for m in maps])
    n = max(r.classes)
    assert r.apq == pytest.approx(ccmetrics.multiclass_pq(*args, aggregation="image", n_classes=n, rule=rule).pq)
    assert r.mpq == pytest.approx(ccmetrics.multiclass_pq(*args, aggregation="dataset", n_classes=n, rule=rule).pq)
    assert r.group_mpq == pytest.approx(
        ccmetrics.multiclass_pq(*args, aggregation="group", groups=groups, n_classes=n, rule=rule).pq
    )
    summary = r.summary()
    assert summary.loc["mpq"].tolist() == pytest.approx([r.apq, r.group_mpq, r.mpq])
    # pooling = evaluating the images side by side as one image (counts and pairs add up)
    group_c = [tiles[i] for i in (3, 4, 5)]
    offset_g = offset_p = 0
    gts, preds, gcls, pcls = [], [], {}, {}
    for gt, gt_cls, pred, pred_cls in group_c:  # relabel so that labels stay unique across images
        gts.append(np.where(gt > 0, gt + offset_g, 0))
        preds.append(np.where(pred > 0, pred + offset_p, 0))
        gcls.update({k + offset_g: v for k, v in gt_cls.items()})
        pcls.update({k + offset_p: v for k, v in pred_cls.items()})
        offset_g += int(gt.max()) + 1
        offset_p += int(pred.max()) + 1
        gts.append(np.zeros((gt.shape[0], 5), np.int32))  # a background gap between images
        preds.append(np.zeros((gt.shape[0], 5), np.int32))
    side = evaluate(
        np.concatenate(gts, axis=1),
        gcls,
        np.concatenate(preds, axis=1),
        pcls,
        rule=rule,
        classes=r.classes,
        cc_metrics=(),
    )
    row = r.per_group.loc["C"]
    for key, value in side.scores().items():
        assert same(float(row[key]), float(value)), key
    np.testing.assert_array_equal(
        r.confusion.to_numpy(),
        sum(x.confusion_matrix for x in (evaluate(*t, rule=rule, classes=r.classes, cc_metrics=()) for t in tiles)),
    )


def test_evaluate_many_inputs_and_pooled_cc():
    tiles = [random_tile(s, n=8) for s in range(3)]
    items = {
        f"img{i}": {"gt_inst": t[0], "gt_class": t[1], "pred_inst": t[2], "pred_class": t[3]}
        for i, t in enumerate(tiles)
    }
    r = evaluate_many(items, {"img0": "P", "img1": "P", "img2": "Q"})
    assert list(r.per_image.index) == ["img0", "img1", "img2"] and list(r.per_group.index) == ["P", "Q"]
    assert r.per_group["n_images"].tolist() == [2, 1]
    # a one-image group equals its image
    for key, value in r.results["img2"].scores().items():
        assert same(float(r.per_group.loc["Q", key]), float(value)), key
    # pooled CC: mean over all GT nuclei of all images
    values = np.concatenate([x.per_component["dice"].to_numpy() for x in r.results.values()])
    assert r.pooled["cc_dice"] == pytest.approx(values.mean())
    assert set(r.per_pair["image"]) == set(items)
    assert len(r.per_pair) == sum(len(x.per_pair) for x in r.results.values())
    # precomputed results and tuples mix
    again = evaluate_many([r.results["img0"], tiles[1]])
    assert again.per_image.loc[0, "pq"] == r.per_image.loc["img0", "pq"]
    with pytest.raises(ValueError, match="lacks"):
        evaluate_many([{"gt_inst": tiles[0][0]}])
    with pytest.raises(ValueError, match="one per image"):
        evaluate_many(tiles, ["a"])
    with pytest.raises(ValueError, match="image 1: .*not in classes"):
        evaluate_many(
            [tiles[0], (tiles[1][0], {k: 9 for k in tiles[1][1]}, tiles[1][2], tiles[1][3])], classes=[1, 2, 3]
        )


@needs_posthocs
def test_compare_methods_per_patient():
    tiles = [random_tile(s, n=10) for s in range(8)]
    groups = [i // 2 for i in range(8)]

    def method(noise_seed, flip):
        rng = np.random.default_rng(noise_seed)
        items = []
        for gt, gt_cls, pred, pred_cls in tiles:
            cls = {k: (v if rng.random() > flip else int(rng.integers(1, 4))) for k, v in pred_cls.items()}
            items.append((gt, gt_cls, pred, cls))
        return evaluate_many(items, groups, cc_metrics=())

    results = {"good": method(0, 0.0), "mid": method(1, 0.5), "bad": method(2, 0.9)}
    table = pd.DataFrame({m: r.per_group["cls_balanced_accuracy"] for m, r in results.items()})
    if table.isna().any().any():
        with pytest.warns(UserWarning, match="left out"):
            fn = nuclei.compare_methods(results, "cls_balanced_accuracy")
    else:
        fn = nuclei.compare_methods(results, "cls_balanced_accuracy")
    expected = ccmetrics.analysis.stats.friedman_nemenyi(table.dropna())
    assert fn.statistic == pytest.approx(expected.statistic) and fn.pvalue == pytest.approx(expected.pvalue)
    assert fn.mean_ranks.idxmin() == "good"
    with pytest.raises(ValueError, match="at least 3 methods"):
        nuclei.compare_methods({"a": results["good"], "b": results["bad"]})


def test_synthetic_tile_and_public_api():
    gt, gc, pred, pc = nuclei_tile((300, 300), 60, seed=2)
    r = evaluate(gt, gc, pred, pc)
    assert r.detection["tp"] > 40 and 0.5 < r.segmentation["iou"] < 1
    for name in (
        "evaluate",
        "evaluate_many",
        "metrics_from_confusion",
        "NucleiResult",
        "NucleiDatasetResult",
        "compare_methods",
    ):
        assert name in nuclei.__all__
