"""One argument order and one name per idea (issue 40): the GT and the prediction by keyword everywhere, the former
positional order and the former keywords still read for a release, each with one DeprecationWarning naming the new
form, and the same values."""

import re
import warnings

import numpy as np
import pytest

import ccmetrics
from ccmetrics import detection, evaluate, lesion_dice, match_instances, multiclass_pq, nuclei, panoptic_quality
from ccmetrics.metrics.matching import instance_overlaps

GT = np.zeros((24, 24), bool)
GT[2:8, 2:8] = True
GT[14:17, 14:17] = True
GT[3:6, 15:20] = True
PRED = np.zeros_like(GT)
PRED[2:7, 3:9] = True
PRED[14:16, 14:17] = True
PRED[20:23, 1:4] = True

INSTANCES_GT = np.array([[1, 1, 1, 0, 2, 2, 0, 3]])
INSTANCES_PRED = np.array([[7, 7, 0, 0, 8, 8, 8, 0]])


#: what this project's deprecation warnings of arguments say (other libraries' warnings, e.g. of a lazy import, pass)
OURS = re.compile(r"is deprecated: (use|pass them by keyword)")


def _no_warning(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    assert not [str(w.message) for w in caught if OURS.search(str(w.message))]
    return value


def _one_warning(call, *fragments):
    with pytest.warns(DeprecationWarning) as caught:
        value = call()
    messages = [str(w.message) for w in caught if OURS.search(str(w.message))]
    assert len(messages) == 1, messages
    for fragment in fragments:
        assert fragment in messages[0], messages[0]
    return value


# ------------------------------------------------------------------ gt= and pred= by keyword, positional warns


def _cc(result):
    return result.cc, result.standard, result.per_component.to_dict()


def test_evaluate_by_keyword_gives_the_positional_numbers_and_positional_use_warns_once():
    keywords = _no_warning(lambda: evaluate(gt=GT, pred=PRED, metrics=["dice", "hd95"]))
    positional = _one_warning(
        lambda: evaluate(PRED, GT, ["dice", "hd95"]), "evaluate(pred, gt, metrics)", "evaluate(gt=..., pred=..."
    )
    assert _cc(keywords) == _cc(positional)
    assert _cc(_one_warning(lambda: ccmetrics.evaluate(PRED, GT, metrics=["dice", "hd95"]))) == _cc(keywords)


def test_the_keywords_are_honoured_swapped_keywords_are_swapped_arrays():
    swapped = evaluate(gt=PRED, pred=GT, metrics=["dice"])
    assert _cc(swapped) == _cc(_one_warning(lambda: evaluate(GT, PRED, ["dice"])))
    assert _cc(swapped) != _cc(evaluate(gt=GT, pred=PRED, metrics=["dice"]))
    assert swapped.n_components == 3  # PRED's components as the lesions


def test_mixed_calls_are_unambiguous_or_refused_with_the_fix():
    mixed = _one_warning(lambda: evaluate(PRED, gt=GT, metrics=["dice"]), "evaluate(gt=..., pred=...)")
    assert _cc(mixed) == _cc(evaluate(gt=GT, pred=PRED, metrics=["dice"]))
    with pytest.raises(TypeError, match=re.escape("pass the inputs by keyword only: evaluate(gt=..., pred=...)")):
        evaluate(GT, pred=PRED)
    with pytest.raises(TypeError, match="missing"):
        evaluate(gt=GT)


def test_spacing_voxel_is_voxel_units():
    assert _cc(_no_warning(lambda: evaluate(gt=GT, pred=PRED, spacing="voxel"))) == _cc(evaluate(gt=GT, pred=PRED))


def _detection_values(d):
    return d.tp, d.fp, d.fn, d.sensitivity, d.precision, d.false_positive_volume, d.false_negative_volume


@pytest.mark.parametrize(
    "function, keywords, positional, values",
    [
        (detection, {}, "detection(pred, gt)", _detection_values),
        (lesion_dice, {}, "lesion_dice(pred, gt)", lambda r: (r.dice, r.hd95, r.tp, r.fp, r.fn)),
        (panoptic_quality, {}, "panoptic_quality(pred, gt)", lambda r: (r.pq, r.sq, r.rq, r.tp, r.fp, r.fn)),
    ],
)
def test_the_other_pred_first_functions_take_keywords_and_warn_on_positions(function, keywords, positional, values):
    expected = values(_no_warning(lambda: function(gt=GT, pred=PRED, **keywords)))
    got = _one_warning(lambda: function(PRED, GT, **keywords), positional, "(gt=..., pred=...)")
    assert values(got) == expected
    assert values(function(gt=PRED, pred=GT)) == values(_one_warning(lambda: function(GT, PRED)))


def _pairs(m):
    return m.pairs.values.tolist(), m.unmatched_gt.tolist(), m.unmatched_pred.tolist()


def test_match_instances_and_instance_overlaps():
    expected = _pairs(_no_warning(lambda: match_instances(gt=INSTANCES_GT, pred=INSTANCES_PRED)))
    assert _pairs(_one_warning(lambda: match_instances(INSTANCES_PRED, INSTANCES_GT), "match_instances(gt=")) == (
        expected
    )
    assert expected[1:] == ([3], [])  # the keywords honoured: GT instance 3 is missed, no false positive
    assert _pairs(match_instances(gt=INSTANCES_PRED, pred=INSTANCES_GT))[1:] == ([], [3])
    with pytest.warns(DeprecationWarning, match=r"use match_instances\(pred=\.\.\.\)"):
        assert _pairs(match_instances(pred_instances=INSTANCES_PRED, gt_instances=INSTANCES_GT)) == expected
    ov = _no_warning(lambda: instance_overlaps(gt=INSTANCES_GT, pred=INSTANCES_PRED))
    old = _one_warning(lambda: instance_overlaps(INSTANCES_PRED, INSTANCES_GT), "instance_overlaps(gt=..., pred=...)")
    assert ov.pair_iou.tolist() == old.pair_iou.tolist() and ov.gt_labels.tolist() == [1, 2, 3]


def _multi(r):
    return r.pq, r.per_class.to_dict(), r.n_undefined


GT_CLASSES = np.where(INSTANCES_GT == 3, 2, np.where(INSTANCES_GT > 0, 1, 0))
PRED_CLASSES = np.where(INSTANCES_PRED > 0, 1, 0)


def test_multiclass_pq_by_keyword():
    expected = _no_warning(
        lambda: multiclass_pq(
            gt=[INSTANCES_GT], gt_classes=[GT_CLASSES], pred=[INSTANCES_PRED], pred_classes=[PRED_CLASSES]
        )
    )
    positional = _one_warning(
        lambda: multiclass_pq([INSTANCES_PRED], [PRED_CLASSES], [INSTANCES_GT], [GT_CLASSES]),
        "multiclass_pq(pred, pred_classes, gt, gt_classes)",
        "multiclass_pq(gt=..., gt_classes=..., pred=..., pred_classes=...)",
    )
    assert _multi(expected) == _multi(positional)


# ------------------------------------------------------------------ renamed keywords: one warning, the same value


def test_detection_rule_renamed():
    new = _no_warning(lambda: detection(gt=GT, pred=PRED, detection_rule="iou:0.5"))
    old = _one_warning(
        lambda: detection(gt=GT, pred=PRED, rule="iou:0.5"),
        "detection(rule=...) is deprecated: use detection(detection_rule=...)",
    )
    assert _detection_values(new) == _detection_values(old)
    with pytest.raises(TypeError, match="pass detection_rule= only"):
        detection(gt=GT, pred=PRED, rule="iou:0.5", detection_rule="iou:0.5")


@pytest.mark.parametrize("rule, threshold", [("iou", 0.3), ("max_iou", 0.5), ("centroid", 0.5)])
def test_matching_rule_and_iou_threshold_renamed(rule, threshold):
    new = _no_warning(
        lambda: match_instances(gt=INSTANCES_GT, pred=INSTANCES_PRED, matching_rule=rule, iou_threshold=threshold)
    )
    with pytest.warns(DeprecationWarning) as caught:
        old = match_instances(gt=INSTANCES_GT, pred=INSTANCES_PRED, rule=rule, threshold=threshold)
    assert {str(w.message) for w in caught if OURS.search(str(w.message))} == {
        "match_instances(rule=...) is deprecated: use match_instances(matching_rule=...)",
        "match_instances(threshold=...) is deprecated: use match_instances(iou_threshold=...)",
    }
    assert _pairs(new) == _pairs(old)
    pq_new = panoptic_quality(gt=GT, pred=PRED, matching_rule=rule, iou_threshold=threshold)
    pq_old = _one_warning(
        lambda: panoptic_quality(gt=GT, pred=PRED, rule=rule, iou_threshold=threshold), "use panoptic_quality(matching_"
    )
    assert (pq_new.pq, pq_new.tp) == (pq_old.pq, pq_old.tp)


def test_iou_threshold_is_strict_where_the_detection_rule_is_inclusive():
    gt = np.array([[1, 1, 0, 0]])
    pred = np.array([[1, 1, 1, 1]])  # IoU exactly 0.5
    assert match_instances(gt=gt, pred=pred, iou_threshold=0.5).tp == 0
    assert detection(gt=gt > 0, pred=pred > 0, detection_rule="iou:0.5").tp == 1


def test_multiclass_pq_level_renamed():
    arrays = dict(gt=[INSTANCES_GT], gt_classes=[GT_CLASSES], pred=[INSTANCES_PRED], pred_classes=[PRED_CLASSES])
    new = _no_warning(lambda: multiclass_pq(**arrays, level="dataset"))
    old = _one_warning(
        lambda: multiclass_pq(**arrays, aggregation="dataset"),
        "multiclass_pq(aggregation=...) is deprecated: use multiclass_pq(level=...)",
    )
    assert _multi(new) == _multi(old) and old.aggregation == "dataset"
    with pytest.warns(DeprecationWarning, match="use multiclass_pq"):
        former = multiclass_pq(
            pred_instances=[INSTANCES_PRED],
            pred_classes=[PRED_CLASSES],
            gt_instances=[INSTANCES_GT],
            gt_classes=[GT_CLASSES],
        )
    assert _multi(former) == _multi(multiclass_pq(**arrays))


# ------------------------------------------------------------------ nuclei


NUCLEI_GT = np.zeros((30, 40), int)
NUCLEI_GT[2:8, 2:8], NUCLEI_GT[2:8, 20:26], NUCLEI_GT[15:21, 2:8] = 1, 2, 3
NUCLEI_PRED = np.where(NUCLEI_GT > 0, NUCLEI_GT + 6, 0)
NUCLEI_PRED[20:25, 30:35] = 10
NUCLEI_PRED[2:4, 20:26] = 0  # the second nucleus predicted at 2/3 of its rows
GT_CLS, PRED_CLS = {1: 1, 2: 1, 3: 2}, {7: 1, 8: 2, 9: 2, 10: 2}
AMBIGUOUS = np.zeros((30, 40), bool)
AMBIGUOUS[20:26, 29:36] = True


def _nuclei(r):
    return r.scores(), r.confusion.values.tolist(), {k: v.tolist() for k, v in r.ignored.items()}


def test_nuclei_evaluate_keywords_and_former_names():
    positional = _no_warning(  # nuclei.evaluate's positional order is GT first: no warning
        lambda: nuclei.evaluate(NUCLEI_GT, GT_CLS, NUCLEI_PRED, PRED_CLS, ignore_mask=AMBIGUOUS, metrics=("dice",))
    )
    keywords = nuclei.evaluate(
        gt=NUCLEI_GT,
        gt_classes=GT_CLS,
        pred=NUCLEI_PRED,
        pred_classes=PRED_CLS,
        ignore_mask=AMBIGUOUS,
        metrics=("dice",),
    )
    assert _nuclei(positional) == _nuclei(keywords) and keywords.ignored["pred"].tolist() == [10]
    with pytest.warns(DeprecationWarning) as caught:
        former = nuclei.evaluate(
            gt_inst=NUCLEI_GT,
            gt_class=GT_CLS,
            pred_inst=NUCLEI_PRED,
            pred_class=PRED_CLS,
            rule="iou",
            threshold=0.5,
            ignore=AMBIGUOUS,
            cc_metrics=("dice",),
        )
    assert sorted(str(w.message) for w in caught if OURS.search(str(w.message))) == sorted(
        f"nuclei.evaluate({old}=...) is deprecated: use nuclei.evaluate({new}=...)"
        for old, new in [
            ("gt_inst", "gt"),
            ("gt_class", "gt_classes"),
            ("pred_inst", "pred"),
            ("pred_class", "pred_classes"),
            ("rule", "matching_rule"),
            ("threshold", "iou_threshold"),
            ("ignore", "ignore_mask"),
            ("cc_metrics", "metrics"),
        ]
    )
    assert _nuclei(former) == _nuclei(keywords)
    swapped = nuclei.evaluate(gt=NUCLEI_PRED, gt_classes=PRED_CLS, pred=NUCLEI_GT, pred_classes=GT_CLS)
    assert swapped.detection["fn"] == keywords.detection["fp"] + 1  # the false positive is now a missed GT nucleus


def test_nuclei_evaluate_many_renamed_keywords_and_item_keys():
    items = {"a": (NUCLEI_GT, GT_CLS, NUCLEI_PRED, PRED_CLS)}
    new = nuclei.evaluate_many(items, matching_rule="max_iou", iou_threshold=0.5, metrics=())
    with pytest.warns(DeprecationWarning, match=r"evaluate_many\(rule=\.\.\.\) is deprecated"):
        old = nuclei.evaluate_many(items, rule="max_iou", cc_metrics=())
    assert new.per_image.equals(old.per_image)
    keyed = {"a": {"gt": NUCLEI_GT, "gt_classes": GT_CLS, "pred": NUCLEI_PRED, "pred_classes": PRED_CLS}}
    assert nuclei.evaluate_many(keyed, matching_rule="max_iou", metrics=()).per_image.equals(new.per_image)
    masked = {"a": {**keyed["a"], "ignore_mask": AMBIGUOUS}}
    former = {"a": {**dict(zip(("gt_inst", "gt_class", "pred_inst", "pred_class"), items["a"])), "ignore": AMBIGUOUS}}
    assert nuclei.evaluate_many(masked, metrics=()).per_image.equals(nuclei.evaluate_many(former, metrics=()).per_image)
