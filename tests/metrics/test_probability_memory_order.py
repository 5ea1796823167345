"""The probability-map path gives the same numbers, bit for bit, whatever the memory order of the map and the GT.

A NIfTI map read by nibabel is in Fortran order, the GT prepared for the engine in C order: the calibration, the
candidates, the threshold sweep and the detection curves must not depend on it (issue 44). Each layout is checked
against the C-ordered arrays with ``==`` (not approx), and the calibration against sums written out by hand.
"""

import math

import numpy as np
import pandas as pd
import pytest

import ccmetrics
from ccmetrics.campaign.probabilities import ProbabilityOptions
from ccmetrics.metrics.calibration import voxel_calibration
from ccmetrics.metrics.candidates import find_candidates
from ccmetrics.metrics.thresholds import sweep

SHAPE = (23, 17, 11)
THRESHOLDS = (0.25, 0.5, 0.75)


def _case(seed, dense=False):
    """A GT of a few boxes (one touching the border) and a map around them, with tied values and a stray blob."""
    rng = np.random.default_rng(seed)
    gt = np.zeros(SHAPE, np.uint8)
    gt[2:6, 3:8, 1:4] = 1
    gt[14:19, 10:14, 6:10] = 1
    gt[0:2, 0:2, 0:2] = 1
    prob = np.zeros(SHAPE, np.float32)
    prob[1:7, 2:9, 0:5] = rng.choice(np.float32([0.125, 0.5, 0.75, 0.9]), (6, 7, 5))  # ties
    prob[13:20, 9:15, 5:11] = rng.uniform(0, 1, (7, 6, 6)).astype(np.float32)
    prob[9:11, 1:3, 8:10] = 0.625  # a false positive
    prob[0, 0, 0] = 1.0
    if dense:  # a softmax: never exactly 0 (more than 1/32 of the voxels: the copying branch)
        prob = np.maximum(prob, rng.uniform(1e-6, 1e-3, SHAPE).astype(np.float32))
    return gt, prob


def _layouts(a):
    """The same values in C order, Fortran order, a permuted-strides view and a flipped view."""
    return {
        "C": np.ascontiguousarray(a),
        "F": np.asfortranarray(a),
        "transposed view": np.ascontiguousarray(a.transpose(2, 0, 1)).transpose(1, 2, 0),
        "flipped view": a[::-1].copy()[::-1],
    }


def _by_hand(prob, gt, ignore=None, n_bins=10):
    """Brier and ECE over the kept voxels, with exact sums (math.fsum) and the bins counted one by one."""
    p = [float(v) for v in np.asarray(prob, np.float64).ravel()]
    y = [float(v) for v in np.asarray(gt, bool).ravel()]
    keep = [True] * len(p) if ignore is None else [not v for v in np.asarray(ignore, bool).ravel()]
    n = sum(keep)
    brier = math.fsum((pi - yi) ** 2 for pi, yi, k in zip(p, y, keep, strict=True) if k) / n
    sum_p, sum_y = [[] for _ in range(n_bins)], [[] for _ in range(n_bins)]
    for pi, yi, k in zip(p, y, keep, strict=True):
        if k:
            b = min(int(pi * n_bins), n_bins - 1)
            sum_p[b].append(pi)
            sum_y[b].append(yi)
    ece = math.fsum(abs(math.fsum(sy) - math.fsum(sp)) for sp, sy in zip(sum_p, sum_y, strict=True)) / n
    return brier, ece


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_voxel_calibration_is_the_same_in_every_memory_order(seed, dense):
    gt, prob = _case(seed, dense)
    ignore = np.zeros(SHAPE, bool)
    ignore[10:22, 0:5, :] = True
    for left_out in (None, ignore):
        reference = voxel_calibration(prob, gt, ignore=left_out)
        brier, ece = _by_hand(prob, gt, left_out)
        assert reference["brier"] == pytest.approx(brier, rel=1e-12, abs=1e-15)
        assert reference["ece"] == pytest.approx(ece, rel=1e-12, abs=1e-15)
        for p_name, p in _layouts(prob).items():
            for y_name, y in _layouts(gt.astype(bool)).items():
                ignores = [None] if left_out is None else list(_layouts(left_out).values())
                for ig in ignores:
                    assert voxel_calibration(p, y, ignore=ig) == reference, (p_name, y_name)


def test_voxel_calibration_edge_cases_in_fortran_order():
    # one voxel; an empty map and GT; a map and GT that never meet; everything ignored; 2D
    one = np.asfortranarray(np.full((1, 1, 1), 0.75, np.float32))
    assert voxel_calibration(one, np.ones((1, 1, 1), bool)) == {"brier": 0.0625, "ece": 0.25}
    empty = np.asfortranarray(np.zeros(SHAPE, np.float32))
    assert voxel_calibration(empty, np.zeros(SHAPE, bool)) == {"brier": 0.0, "ece": 0.0}
    apart_p = np.zeros(SHAPE, np.float32)
    apart_p[0, 0, 0] = 0.5
    apart_y = np.zeros(SHAPE, bool)
    apart_y[-1, -1, -1] = True
    n = math.prod(SHAPE)
    expected = {"brier": (0.25 + 1.0) / n, "ece": (0.5 + 1.0) / n}  # bin 0: |1 - 0|, bin 5: |0 - 0.5|
    assert voxel_calibration(np.asfortranarray(apart_p), apart_y) == pytest.approx(expected, rel=1e-15)
    assert voxel_calibration(np.asfortranarray(apart_p), apart_y) == voxel_calibration(apart_p, apart_y)
    got = voxel_calibration(np.asfortranarray(apart_p), apart_y, ignore=np.asfortranarray(np.ones(SHAPE, bool)))
    assert math.isnan(got["brier"]) and math.isnan(got["ece"])
    p2 = np.array([[0.875, 0.0, 0.125], [0.0, 0.75, 0.0]], np.float32)
    y2 = np.array([[1, 0, 0], [0, 0, 1]], bool)
    assert voxel_calibration(np.asfortranarray(p2), y2) == voxel_calibration(p2, y2)
    assert voxel_calibration(p2.T.copy().T, np.asfortranarray(y2)) == voxel_calibration(p2, y2)
    brier, ece = _by_hand(p2, y2)
    assert voxel_calibration(p2, y2)["brier"] == pytest.approx(brier, rel=1e-15)
    assert voxel_calibration(p2, y2)["ece"] == pytest.approx(ece, rel=1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_candidates_and_sweep_are_the_same_in_every_memory_order(seed):
    gt, prob = _case(seed)
    pred = (prob > 0.5).astype(np.uint8)
    reference = {method: find_candidates(prob, method) for method in ("components", "threshold:0.5", "dynamic")}
    from_prediction = find_candidates(prob, prediction=pred, confidence="mean")
    swept = sweep(prob, gt, THRESHOLDS, ["dice", "hd95"], spacing=(0.8, 1.0, 2.5))
    for name, p in _layouts(prob).items():
        for method, ref in reference.items():
            got = find_candidates(p, method)
            assert got.confidence.tolist() == ref.confidence.tolist(), (name, method)
            assert got.sites.flat_index.tolist() == ref.sites.flat_index.tolist(), (name, method)
        for pred_layout in _layouts(pred).values():
            got = find_candidates(p, prediction=pred_layout, confidence="mean")
            assert got.confidence.tolist() == from_prediction.confidence.tolist(), name
        for gt_layout in _layouts(gt).values():
            pd.testing.assert_frame_equal(
                sweep(p, gt_layout, THRESHOLDS, ["dice", "hd95"], spacing=(0.8, 1.0, 2.5)), swept, check_exact=True
            )


def _values(result):
    """What the map path gives: per-case calibration and confidence, candidates, thresholds, detection curves."""
    per_case = result.per_case[["case", "brier", "ece", "case_confidence", "dice", "cc_dice"]]
    per_candidate = result.per_candidate[["case", "candidate", "confidence", "outcome"]]
    curves = result.detection_curves(n_resamples=0)[1]
    means, best = result.threshold_summary()
    return per_case, per_candidate, result.thresholds, (curves.ap, curves.auroc, curves.cpm), means, best


def _assert_same(got, expected):
    for g, e in zip(got[:3], expected[:3], strict=True):
        pd.testing.assert_frame_equal(g.reset_index(drop=True), e.reset_index(drop=True), check_exact=True)
    np.testing.assert_equal(got[3], expected[3])  # NaN where NaN
    pd.testing.assert_frame_equal(got[4], expected[4], check_exact=True)
    assert got[5] == expected[5]


@pytest.fixture(scope="module")
def cases():
    empty_gt, stray = _case(5)
    empty_gt[:] = 0  # a case without lesions: its candidates are false positives (AUROC needs one)
    return {f"case{i}": _case(i) for i in range(3)} | {"dense": _case(7, dense=True), "empty": (empty_gt, stray)}


def _array_run(cases, layout_gt, layout_prob):
    return ccmetrics.evaluate_dataset(
        {c: (_layouts(gt)[layout_gt], None) for c, (gt, _) in cases.items()},
        probabilities={c: _layouts(prob)[layout_prob] for c, (_, prob) in cases.items()},
        metrics=["dice"],
        maps=ProbabilityOptions(thresholds=THRESHOLDS),
        progress=False,
    )


@pytest.mark.parametrize(
    ("layout_gt", "layout_prob"),
    [("C", "F"), ("C", "transposed view"), ("F", "C"), ("F", "F"), ("transposed view", "flipped view")],
)
def test_evaluate_dataset_with_arrays_of_any_memory_order(cases, layout_gt, layout_prob):
    reference = _values(_array_run(cases, "C", "C"))
    assert reference[0]["brier"].notna().all() and len(reference[1]) > 0 and np.isfinite(reference[3]).all()
    _assert_same(_values(_array_run(cases, layout_gt, layout_prob)), reference)


def test_evaluate_dataset_from_nifti_files_read_by_nibabel(cases, tmp_path):
    nib = pytest.importorskip("nibabel")
    for folder in ("gt", "prob"):
        (tmp_path / folder).mkdir()
    for c, (gt, prob) in cases.items():
        nib.save(nib.Nifti1Image(gt, np.eye(4)), tmp_path / "gt" / f"{c}.nii")
        nib.save(nib.Nifti1Image(prob, np.eye(4)), tmp_path / "prob" / f"{c}.nii.gz")
    # nibabel's arrays are in Fortran order: the case the C-ordered arrays are compared with
    assert np.asanyarray(nib.load(tmp_path / "prob" / "case0.nii.gz").dataobj).flags.f_contiguous
    from_files = ccmetrics.evaluate_dataset(
        tmp_path / "gt",
        probabilities=tmp_path / "prob",
        metrics=["dice"],
        maps=ProbabilityOptions(thresholds=THRESHOLDS),
        progress=False,
    )
    assert (from_files.per_case["status"] != "error").all()  # the case without lesions is "flagged"
    _assert_same(_values(from_files), _values(_array_run(cases, "C", "C")))


def test_the_ignore_label_zeroes_the_map_in_any_memory_order():
    from ccmetrics.campaign.probabilities import _zeroed  # the campaign's step for nnU-Net's ignore label

    _, prob = _case(3, dense=True)
    ignored = np.zeros(SHAPE, bool)
    ignored[5:12, :, 3] = True
    ignored[0, 0, 0] = True
    expected = prob.copy()
    for index in np.argwhere(ignored):  # one voxel at a time
        expected[tuple(index)] = 0
    for p_name, p in _layouts(prob).items():
        for m_name, mask in _layouts(ignored).items():
            got = _zeroed(p, mask)
            assert got.dtype == np.float32 and np.array_equal(got, expected), (p_name, m_name)
            assert np.array_equal(p, prob)  # the map itself untouched
