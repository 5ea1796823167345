"""BraTS-2023 Lesion Dice, detection counts and autoPET volumes against the §4/§5 checks and brute force."""

import math

import numpy as np
import pytest
from conftest import monai_metrics, random_blobs
from scipy import ndimage

from ccmetrics import detection, evaluate, lesion_dice

STRUCT = ndimage.generate_binary_structure(3, 2)


def cube(shape=(40, 40, 40), at=(5, 5, 5), size=5):
    m = np.zeros(shape, bool)
    m[tuple(slice(a, a + size) for a in at)] = True
    return m


# ----------------------------------------------------------------------------- the §4 checks


def test_exact_prediction():
    r = lesion_dice(pred=cube(), gt=cube())
    assert (r.dice, r.hd95, r.tp, r.fp, r.fn) == (1.0, 0.0, 1, 0, 0)


def test_empty_prediction():
    r = lesion_dice(pred=np.zeros((40, 40, 40), bool), gt=cube())
    assert (r.dice, r.hd95, r.tp, r.fp, r.fn) == (0.0, 374.0, 0, 0, 1)
    assert math.isinf(r.per_lesion.loc[1, "hd95"])


def test_exact_prediction_plus_distant_fp():
    pred = cube() | cube(at=(30, 30, 30), size=3)
    r = lesion_dice(pred=pred, gt=cube())
    assert (r.dice, r.hd95, r.tp, r.fp, r.fn) == (0.5, 187.0, 1, 1, 0)


def test_both_empty():
    r = lesion_dice(pred=np.zeros((10, 10, 10), bool), gt=np.zeros((10, 10, 10), bool))
    assert (r.dice, r.hd95, r.tp, r.fp, r.fn) == (1.0, 0.0, 0, 0, 0)


def test_small_lesions_are_not_counted_and_their_predictions_are_not_fp():
    gt = cube() | cube(at=(30, 30, 30), size=3)  # 125 and 27 voxels
    pred = cube(at=(30, 30, 30), size=3)  # only the small one is predicted
    r = lesion_dice(pred=pred, gt=gt)
    assert r.per_lesion["counted"].tolist() == [True, False]
    assert (r.tp, r.fp, r.fn, r.dice, r.hd95) == (0, 0, 1, 0.0, 374.0)
    # with a spacing the volume threshold is in mm3: 27 voxels of 2 mm3 = 54 mm3 > 50
    r = lesion_dice(pred=pred, gt=gt, spacing=(1.0, 1.0, 2.0))
    assert r.per_lesion["counted"].tolist() == [True, True] and r.tp == 1 and r.dice == 0.5


def test_touching_without_overlap_is_a_true_positive():
    gt = cube()
    pred = cube(at=(5, 5, 11), size=5)  # one voxel gap: within the 3-voxel dilation, no overlap
    r = lesion_dice(pred=pred, gt=gt)
    assert (r.tp, r.fp, r.fn, r.dice) == (1, 0, 0, 0.0)
    assert r.hd95 == pytest.approx(monai_metrics(pred, gt)["hd95"])


def test_nearby_gt_components_merge_into_one_lesion():
    gt = cube() | cube(at=(5, 5, 14), size=5)  # 4-voxel gap: the two dilations touch
    r = lesion_dice(pred=gt, gt=gt)
    assert len(r.per_lesion) == 1 and r.per_lesion.loc[1, "n_gt_components"] == 2 and r.dice == 1.0
    far = cube() | cube(at=(5, 5, 25), size=5)
    assert len(lesion_dice(pred=far, gt=far).per_lesion) == 2
    assert len(lesion_dice(pred=gt, gt=gt, dilation=1).per_lesion) == 2


def test_double_assignment_of_one_prediction_to_two_lesions():
    gt = cube(at=(5, 5, 5)) | cube(at=(5, 5, 25))
    pred = np.zeros_like(gt)
    pred[5:10, 5:10, 5:30] = True  # one bar covering both lesions and the gap
    r = lesion_dice(pred=pred, gt=gt)
    assert r.per_lesion["pred_components"].tolist() == [[1], [1]]
    expected = 2 * 125 / (125 + pred.sum())  # each lesion against the whole bar
    assert r.per_lesion["dice"].tolist() == pytest.approx([expected, expected])
    assert (r.tp, r.fp, r.fn) == (2, 0, 0) and r.dice == pytest.approx(expected)


# ----------------------------------------------------------------------------- brute force


def brats_brute_force(pred, gt, dilation=3, min_volume=50, worst=374.0):
    """The official algorithm, one full-size mask per lesion, HD95 from MONAI."""
    gt_cc, _ = ndimage.label(gt, np.ones((3, 3, 3)))
    dil_cc, n_dil = ndimage.label(ndimage.binary_dilation(gt, STRUCT, iterations=dilation), np.ones((3, 3, 3)))
    pred_cc, n_pred = ndimage.label(pred, np.ones((3, 3, 3)))
    used, dices, hds = set(), [], []
    for d in range(1, n_dil + 1):
        lesion = gt & (dil_cc == d)
        if not lesion.any():
            continue
        zone = ndimage.binary_dilation(lesion, STRUCT, iterations=dilation)
        hits = set(np.unique(pred_cc[zone])) - {0}
        used |= hits
        if lesion.sum() <= min_volume:
            continue
        lesion_pred = np.isin(pred_cc, list(hits)) if hits else np.zeros_like(pred)
        dices.append(2 * (lesion & lesion_pred).sum() / (lesion.sum() + lesion_pred.sum()))
        hd = monai_metrics(lesion_pred, lesion)["hd95"] if hits else worst
        hds.append(hd)
    fp = n_pred - len(used)
    n = len(dices) + fp
    return (sum(dices) / n, (sum(hds) + worst * fp) / n, fp) if n else (1.0, 0.0, 0)


@pytest.mark.parametrize("seed", range(6))
def test_lesion_dice_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    gt = random_blobs(rng, (44, 44, 30), density=0.0002, grow=2, keep=1.0)  # 5-11 lesions, some merged
    pred = np.roll(gt, rng.integers(-3, 4), axis=2) & (rng.random(gt.shape) < 0.95)
    pred |= random_blobs(rng, gt.shape, density=0.00005, grow=1, keep=1.0)  # 1-6 false positives
    dice, hd95, fp = brats_brute_force(pred, gt, min_volume=20)
    r = lesion_dice(pred=pred, gt=gt, min_volume=20)
    assert r.dice == pytest.approx(dice) and r.fp == fp
    assert r.hd95 == pytest.approx(hd95, abs=1e-4)


def brute_detection(pred, gt, conn_structure):
    gt_cc, n_gt = ndimage.label(gt, conn_structure)
    pred_cc, n_pred = ndimage.label(pred, conn_structure)
    detected = [bool((pred & (gt_cc == i)).any()) for i in range(1, n_gt + 1)]
    fp_comps = [i for i in range(1, n_pred + 1) if not (gt & (pred_cc == i)).any()]
    fn_volume = sum((gt_cc == i).sum() for i in range(1, n_gt + 1) if not detected[i - 1])
    fp_volume = sum((pred_cc == i).sum() for i in fp_comps)
    return sum(detected), n_gt - sum(detected), len(fp_comps), n_pred, fp_volume, fn_volume


@pytest.mark.parametrize("seed", range(5))
def test_detection_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    gt = random_blobs(rng, (24, 24, 20), density=0.004, grow=1, keep=0.9)
    pred = np.roll(gt, 2, axis=0) & (rng.random(gt.shape) < 0.9) | (rng.random(gt.shape) < 0.002)
    tp, fn, fp, n_pred, _, _ = brute_detection(pred, gt, np.ones((3, 3, 3)))
    *_, fp_vol, fn_vol = brute_detection(pred, gt, STRUCT)  # autoPET: 18-connectivity
    r = detection(pred=pred, gt=gt, spacing=(2.0, 2.0, 2.5))
    assert (r.tp, r.fn, r.fp, r.n_pred_components) == (tp, fn, fp, n_pred)
    assert r.sensitivity == pytest.approx(tp / (tp + fn))
    assert r.precision == pytest.approx((n_pred - fp) / n_pred)
    assert r.false_positive_volume == pytest.approx(fp_vol * 10 / 1000)
    assert r.false_negative_volume == pytest.approx(fn_vol * 10 / 1000)
    assert r.volume_unit == "ml"


def test_detection_edge_cases():
    empty = np.zeros((5, 5), bool)
    r = detection(pred=empty, gt=empty)
    assert math.isnan(r.sensitivity) and math.isnan(r.precision) and math.isnan(r.f1)
    one = empty.copy()
    one[2, 2] = True
    r = detection(pred=empty, gt=one)
    assert (r.tp, r.fn, r.fp, r.sensitivity, r.false_negative_volume) == (0, 1, 0, 0.0, 1.0)
    assert math.isnan(r.precision) and math.isnan(r.f1)  # no prediction component: precision undefined


def test_lesion_metrics_do_not_depend_on_component_order():
    rng = np.random.default_rng(9)
    gt = random_blobs(rng, (30, 30, 24), density=0.002, grow=2, keep=1.0)
    pred = np.roll(gt, 1, axis=0)
    flipped = lesion_dice(pred=pred[::-1, ::-1], gt=gt[::-1, ::-1], min_volume=20)
    straight = lesion_dice(pred=pred, gt=gt, min_volume=20)
    assert flipped.dice == pytest.approx(straight.dice) and flipped.hd95 == pytest.approx(straight.hd95)
    assert sorted(flipped.per_lesion["dice"]) == pytest.approx(sorted(straight.per_lesion["dice"]))


def test_evaluate_adds_case_level_scores_side_by_side():
    rng = np.random.default_rng(2)
    gt = random_blobs(rng, (30, 30, 24), density=0.002, grow=2, keep=1.0)
    pred = np.roll(gt, 1, axis=0)
    spacing = (1.0, 1.0, 2.0)
    r = evaluate(pred=pred, gt=gt, metrics=["dice", "pq", "lesion_dice", "detection"], spacing=spacing)
    from ccmetrics import panoptic_quality

    pq = panoptic_quality(pred=pred, gt=gt)
    ld = lesion_dice(pred=pred, gt=gt, spacing=spacing)
    det = detection(pred=pred, gt=gt, spacing=spacing)
    assert (r.case_scores["pq"], r.case_scores["sq"], r.case_scores["rq"]) == (pq.pq, pq.sq, pq.rq)
    assert (r.case_scores["lesion_dice"], r.case_scores["lesion_hd95"]) == (ld.dice, ld.hd95)
    assert r.case_scores["fp_volume"] == det.false_positive_volume and r.case_scores["f1"] == det.f1
    assert set(r.details) == {"pq", "lesion_dice", "detection"}
    table = r.summary()
    assert table.loc["pq", "standard"] == pq.pq and math.isnan(table.loc["pq", "cc"])
    assert table.loc["dice", "cc"] == r.cc["dice"]


def test_2d_lesion_dice_and_detection():
    gt = np.zeros((40, 40), bool)
    gt[5:15, 5:15] = True  # 100 px lesion
    gt[30:33, 30:33] = True  # 9 px, below the threshold of 50
    pred = np.zeros_like(gt)
    pred[6:15, 5:15] = True  # 90 px inside the big lesion
    pred[0, 39] = True  # far false positive
    r = lesion_dice(pred=pred, gt=gt)
    assert r.per_lesion["counted"].tolist() == [True, False]
    assert (r.tp, r.fp, r.fn) == (1, 1, 0)
    assert r.dice == pytest.approx((2 * 90 / 190) / 2)
    block, lesion = pred.copy(), gt.copy()
    block[0, 39] = False
    lesion[30:33, 30:33] = False
    assert r.hd95 == pytest.approx((monai_metrics(block, lesion)["hd95"] + 374) / 2)
    d = detection(pred=pred, gt=gt)
    assert (d.tp, d.fn, d.fp, d.n_pred_components) == (1, 1, 1, 2)
    assert (d.false_positive_volume, d.false_negative_volume) == (1.0, 9.0)


def test_thin_volumes_do_not_crash():
    gt = np.zeros((32, 32, 1), bool)
    gt[5, 5, 0] = gt[5, 7, 0] = gt[20, 20, 0] = True
    r = lesion_dice(pred=gt, gt=gt, min_volume=0)
    assert r.dice == 1.0 and len(r.per_lesion) == 2  # the two dots 2 px apart merge by dilation
    d = detection(pred=gt, gt=gt)
    assert (d.tp, d.fp, d.fn) == (3, 0, 0)


def _same_lesion_dice(a, b):
    assert a.per_lesion.equals(b.per_lesion)
    assert [float(v).hex() for v in (a.dice, a.hd95)] == [float(v).hex() for v in (b.dice, b.hd95)]
    assert (a.tp, a.fp, a.fn) == (b.tp, b.fp, b.fn)


@pytest.mark.parametrize("spacing", [None, (2.0, 2.0, 3.0), (0.7, 0.7, 2.5), (1 / 3, 1 / 7, 1 / 11)])
def test_per_lesion_hd95_from_the_whole_image_equals_it_measured_alone(rng, spacing):
    # with NSD or HD95 beside it, evaluate() hands Lesion Dice the whole image's nearest edge voxels: a lesion takes a
    # distance from there where the named voxel lies in its own prediction components (or in the lesion), and the
    # values must be those measured from scratch. Cases: random lesions; lesions merged by the dilation; a
    # prediction component over two lesions; predictions shifted so that a lesion's nearest voxels are another's
    from ccmetrics.synthetic import lesion_case

    cases = [
        lesion_case((40, 36, 28), n_lesions=int(rng.integers(1, 12)), seed=int(s))
        for s in rng.integers(1 << 30, size=6)
    ]
    gt = np.zeros((30, 30, 20), bool)
    gt[4:9, 4:9, 4:9] = gt[4:9, 11:16, 4:9] = gt[20:24, 20:24, 10:14] = True  # two lesions 2 voxels apart: merged
    pred = np.zeros_like(gt)
    pred[5:8, 3:17, 5:8] = True  # one component over both
    pred[19:23, 17:21, 9:13] = True  # shifted towards the other lesions
    cases.append((gt, pred))
    apart = np.zeros((34, 20, 10), bool)
    apart[2:7, 7:12, 3:7] = apart[26:31, 7:12, 3:7] = True  # two lesions, far apart
    bridge = np.zeros_like(apart)
    bridge[4:29, 9:11, 4:6] = True  # one prediction component through both: its far end is nearer the other lesion
    cases.append((apart, bridge))
    mirror = np.zeros((31, 21, 9), bool)
    mirror[5:8, 4:7, 3:6] = mirror[23:26, 4:7, 3:6] = True  # equidistant from a prediction in the middle
    middle = np.zeros_like(mirror)
    middle[14:17, 12:15, 3:6] = True
    cases.append((mirror, middle))
    for gt, pred in cases:
        with_surfaces = evaluate(pred=pred, gt=gt, metrics=["nsd", "lesion_dice"], spacing=spacing).details[
            "lesion_dice"
        ]
        alone = evaluate(pred=pred, gt=gt, metrics=["lesion_dice"], spacing=spacing).details["lesion_dice"]
        _same_lesion_dice(with_surfaces, alone)
        _same_lesion_dice(alone, lesion_dice(pred=pred, gt=gt, spacing=spacing))
