"""Detection curves against picai_eval 1.4 (the reference), scikit-learn, a brute force and hand computations."""

import itertools

import numpy as np
import pytest
from scipy import ndimage
from scipy.optimize import linear_sum_assignment

from ccmetrics.engine.components import find_sites
from ccmetrics.metrics.candidates import find_candidates
from ccmetrics.metrics.detection_curves import (
    CPM_RATES,
    detection_curves,
    detection_curves_from_entries,
    match_candidates,
    pair_scores,
)
from ccmetrics.metrics.detection_rules import DetectionRule

picai_eval = pytest.importorskip("picai_eval.eval")
picai_metrics = pytest.importorskip("picai_eval.metrics")


def boxes(rng, shape, n, size=(1, 7)):
    mask = np.zeros(shape, bool)
    for _ in range(n):
        lo = [int(rng.integers(0, s - 1)) for s in shape]
        hi = [min(s, a + int(rng.integers(*size))) for a, s in zip(lo, shape)]
        mask[tuple(slice(a, b) for a, b in zip(lo, hi))] = True
    return mask


def detection_map(rng, shape, n, levels=None):
    """A picai detection map: each 26-connected blob holds one float32 confidence."""
    blobs = boxes(rng, shape, n)
    lab, k = ndimage.label(blobs, np.ones((3,) * len(shape)))
    conf = rng.choice(levels, k) if levels is not None else rng.uniform(0.01, 1, k)
    lut = np.concatenate([[0], conf]).astype(np.float32)
    return lut[lab]


def iou_exactly_tenth():
    """A lesion of 10 voxels and a candidate covering 1 of them alone: IoU exactly 0.1 (inclusive: a match)."""
    gt = np.zeros((1, 4, 20), bool)
    gt[0, 0, :10] = True
    det = np.zeros(gt.shape, np.float32)
    det[0, 0, 9] = 0.4
    det[0, 3, 15:17] = 0.7  # a pure false positive
    return gt, det


def two_candidates_one_lesion():
    gt = np.zeros((2, 6, 20), bool)
    gt[:, :, :8] = True
    det = np.zeros(gt.shape, np.float32)
    det[:, :, :5] = 0.3  # better overlap, lower confidence
    det[:, :, 6:9] = 0.9  # passes too, more confident
    return gt, det


def fewer_matches_case():
    """picai's objective keeps 3 strong matches where 4 weak ones exist (a chain L0-C1=L1-C2=L2-C3=L3-C4).

    Each lesion: a 4-column block, a one-voxel neck, a 1-column block; candidate i covers the small block of
    lesion i-1, crosses the gap by one voxel and covers the large block of lesion i. IoU 64/98 strong, 16/146 weak:
    3 x (1 + 0.653) = 4.96 > 4 x (1 + 0.110) = 4.44 (DSC too: 5.37 > 4.79).
    """
    gt = np.zeros((32, 4, 4), bool)
    det = np.zeros((32, 4, 4), np.float32)
    for i in range(4):
        x0 = 7 * i
        gt[x0 : x0 + 4] = True
        gt[x0 + 4, 0, 0] = True
        gt[x0 + 5] = True
    for i, conf in zip(range(1, 5), (0.9, 0.8, 0.7, 0.6)):
        x0 = 7 * i
        det[x0 - 2] = conf
        det[x0 - 1, 0, 0] = conf
        det[x0 : x0 + 4] = conf
    return gt, det


def cases(n_random=30):
    """~40 cases: random boxes (ties from few confidence levels in half of them), negatives, edge cases."""
    rng = np.random.default_rng(20261124)
    out = []
    for i in range(n_random):
        shape = (6, 14, 14)
        gt = boxes(rng, shape, int(rng.integers(0, 4)))
        levels = np.array([0.2, 0.5, 0.5, 0.8, 1.0]) if i % 2 else None
        out.append((gt, detection_map(rng, shape, int(rng.integers(0, 5)), levels)))
    shape = (6, 14, 14)
    out.append((np.zeros(shape, bool), np.zeros(shape, np.float32)))  # no lesion, no candidate
    out.append((np.zeros(shape, bool), detection_map(rng, shape, 3)))  # only false positives
    out.append((boxes(rng, shape, 3), np.zeros(shape, np.float32)))  # lesions, no candidate
    out.append(iou_exactly_tenth())
    out.append(two_candidates_one_lesion())
    out.append(fewer_matches_case())
    return out


def picai_case(gt, det, **kw):
    y_list, case_conf, *_ = picai_eval.evaluate_case(det, gt, **kw)
    return y_list, float(case_conf)


def ours_case(gt, det, rule="iou:0.1", **kw):
    return match_candidates(find_candidates(det), find_sites(gt), rule, **kw)


def sorted_entries(pairs):
    return sorted((int(t), float(c)) for t, c in pairs)


@pytest.mark.parametrize("ignore", [True, False])
@pytest.mark.parametrize("overlap_func,rule", [("IoU", "iou:0.1"), ("DSC", "dice:0.1"), ("IoU", "iou:0.3")])
def test_case_entries_equal_picai(overlap_func, rule, ignore):
    min_overlap = DetectionRule.parse(rule).threshold
    for gt, det in cases():
        y_list, case_conf = picai_case(
            gt,
            det,
            overlap_func=overlap_func,
            min_overlap=min_overlap,
            allow_unmatched_candidates_with_minimal_overlap=ignore,
        )
        m = ours_case(gt, det, rule, ignore_unmatched_passing=ignore)
        target, conf = m.entries()
        assert sorted_entries(zip(target, conf)) == sorted_entries((t, c) for t, c, _ in y_list)
        assert m.case_confidence == case_conf
        # the matched overlaps, too (picai adds 1e-8 to numerator and denominator)
        picai_overlaps = sorted(round(o, 6) for t, c, o in y_list if t == 1 and o > 0)
        assert sorted(round(s, 6) for s in m.score[m.outcome == "tp"]) == picai_overlaps


def picai_metrics_of(pairs):
    results, case_pred, case_target = {}, {}, {}
    for i, (gt, det) in enumerate(pairs):
        y_list, conf = picai_case(gt, det)
        results[f"c{i:03d}"] = y_list
        case_pred[f"c{i:03d}"] = conf
        case_target[f"c{i:03d}"] = int(max([t for t, *_ in y_list], default=0))
    return picai_metrics.Metrics(lesion_results=results, case_pred=case_pred, case_target=case_target)


def test_curves_equal_picai():
    pairs = cases()
    ref = picai_metrics_of(pairs)
    ours = detection_curves([ours_case(g, d) for g, d in pairs], case_ids=[f"c{i:03d}" for i in range(len(pairs))])
    assert ours.ap == pytest.approx(ref.AP, abs=1e-9)
    assert ours.auroc == pytest.approx(ref.auroc, abs=1e-9)
    assert ours.picai_score == pytest.approx(ref.score, abs=1e-9)
    assert ours.n_lesions == ref.num_lesions and ours.n_cases == ref.num_cases
    # FROC: picai's counts at each of its thresholds > 0, but its last point (overwritten with the one before it)
    counts = ref.calculate_counts()
    th = ref.thresholds
    keep = th > 0
    keep[-1] = False
    ours_at = {t: (fp, s) for t, fp, s in zip(ours.froc_threshold, ours.froc_fp_per_case, ours.froc_sensitivity)}
    for t, tp, fp in zip(th[keep], counts["TP"][keep], counts["FP"][keep]):
        # picai keeps the counts in float32 (exact integers) and divides in float32: compare the counts
        assert ours_at[float(t)][0] == float(fp) / ref.num_cases
        assert ours_at[float(t)][1] == float(tp) / ref.num_lesions
    assert set(ours_at) == {float(t) for t in th if t > 0}
    # the true-positive count at the lowest threshold: every matched lesion
    assert ours.n_true_positives == sum(1 for t, c, o in ref.lesion_results_flat if t == 1 and c > 0)


def test_picai_last_froc_point_quirk_is_not_copied():
    """Every lesion found, at the lowest confidence: picai's last point loses it, ours keeps it."""
    gt = np.zeros((1, 3, 12), bool)
    gt[0, 0, :4] = True
    det = np.zeros(gt.shape, np.float32)
    det[0, 0, :4] = 0.2
    det[0, 2, 8:10] = 0.9  # a false positive above it
    ref = picai_metrics_of([(gt, det)])
    ours = detection_curves([ours_case(gt, det)], n_resamples=0)
    assert ours.froc_sensitivity.tolist() == [0.0, 1.0]
    assert float(ref.lesion_TPR[-1]) == 0.0  # picai: sensitivity 0 at FP = inf
    assert ours.sensitivity_at(8.0) == 1.0


def test_brute_force_hungarian():
    """picai's objective (matches + summed IoU) by enumeration of every one-to-one assignment."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(150):
        shape = (4, 10, 10)
        gt, det = boxes(rng, shape, int(rng.integers(1, 5))), detection_map(rng, shape, int(rng.integers(1, 6)))
        lab, k = ndimage.label(gt, np.ones((3, 3, 3)))
        cand = find_candidates(det)
        if k == 0 or cand.n == 0 or k > 5 or cand.n > 6:
            continue
        iou = np.zeros((k, cand.n))
        cl = cand.sites.label_map()
        for i, j in itertools.product(range(k), range(cand.n)):
            a, b = lab == i + 1, cl == j + 1
            iou[i, j] = (a & b).sum() / (a | b).sum()
        w = np.where(iou >= 0.1, 1 + iou, 0)
        best = max(
            sum(w[i, j] for i, j in enumerate(perm) if j is not None)
            for perm in itertools.permutations(list(range(cand.n)) + [None] * k, k)
        )
        m = ours_case(gt, det)
        # lesions are numbered in raster order by both labellings
        got = sum(w[i, c - 1] for i, c in enumerate(m.lesion_candidate) if c > 0)
        assert got == pytest.approx(best, abs=1e-12)
        r, c = linear_sum_assignment(w, maximize=True)
        assert got == pytest.approx(w[r, c].sum(), abs=1e-12)
        checked += 1
    assert checked > 40


@pytest.mark.parametrize("overlap_func,rule", [("IoU", "iou:0.1"), ("DSC", "dice:0.1")])
def test_fewer_matches_with_more_overlap(overlap_func, rule):
    gt, det = fewer_matches_case()
    m = ours_case(gt, det, rule)
    assert m.tp == 3 and m.lesion_candidate.tolist() == [0, 1, 2, 3] and m.outcome.tolist()[-1] == "ignored"
    y_list, _ = picai_case(gt, det, overlap_func=overlap_func)
    assert sum(1 for t, c, o in y_list if t == 1 and o > 0) == 3
    # while four matches exist: every lesion has a passing candidate of its own
    cand = find_candidates(det)
    lab, k = ndimage.label(gt, np.ones((3, 3, 3)))
    passing = np.array(
        [[((lab == i + 1) & (cand.sites.label_map() == j + 1)).sum() > 0 for j in range(cand.n)] for i in range(k)]
    )
    r, c = linear_sum_assignment(passing, maximize=True)
    assert passing[r, c].sum() == 4


def test_exactly_tenth_matches_and_confidence_preference():
    gt, det = iou_exactly_tenth()
    m = ours_case(gt, det)
    assert m.outcome.tolist() == ["tp", "fp"] and m.score[0] == 0.1
    gt, det = two_candidates_one_lesion()
    assert ours_case(gt, det).lesion_confidence.tolist() == [pytest.approx(0.3)]
    assert ours_case(gt, det, match_by="confidence").lesion_confidence.tolist() == [pytest.approx(0.9)]
    assert ours_case(gt, det).outcome.tolist() == ["tp", "ignored"]
    assert ours_case(gt, det, ignore_unmatched_passing=False).outcome.tolist() == ["tp", "fp"]


def test_cpm_by_hand():
    """LUNA16's CPM from a curve written out by hand."""
    # case a: lesions found at 0.9 and 0.6, one missed; fps at 0.8 (a) and 0.7, 0.3 (b)
    curves = detection_curves_from_entries(
        ["a", "a", "a", "a", "b", "b"],
        [1, 1, 1, 0, 0, 0],
        [0.9, 0.6, 0.0, 0.8, 0.7, 0.3],
        ["a", "b"],
        [1, 0],
        [0.9, 0.7],
        n_resamples=0,
    )
    # thresholds 0.9 0.8 0.7 0.6 0.3 -> fp/case 0, .5, 1, 1, 1.5 ; sensitivity 1/3, 1/3, 1/3, 2/3, 2/3
    assert curves.froc_fp_per_case.tolist() == [0, 0.5, 1, 1, 1.5]
    assert curves.froc_sensitivity.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 2 / 3, 2 / 3])
    # (0,0) prepended: at 1/8 and 1/4 on the segment (0,0)-(0,1/3) vertical -> 1/3; 1/2 -> 1/3; 1 -> 2/3 (the
    # higher value on the vertical step); 2, 4, 8 -> 2/3
    expected = np.mean([1 / 3, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3, 2 / 3])
    assert curves.cpm == pytest.approx(expected, abs=1e-15)
    assert len(CPM_RATES) == 7
    # AP by hand: thresholds .9 (P=1, R=1/3), .8 (1/2, 1/3), .7 (1/3, 1/3), .6 (1/2, 2/3), .3 (2/5, 2/3), 0 (-> 0)
    assert curves.ap == pytest.approx(1 / 3 * 1 + 1 / 3 * 0.5, abs=1e-15)
    assert curves.auroc == 1.0


def test_against_sklearn_curves():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 40))
        case_t = rng.integers(0, 2, n)
        case_s = np.round(rng.uniform(0, 1, n), 1)
        if case_t.min() == case_t.max():
            continue
        ours = detection_curves_from_entries([], [], [], list(range(n)), case_t, case_s, n_resamples=0)
        assert ours.auroc == pytest.approx(sklearn_metrics.roc_auc_score(case_t, case_s), abs=1e-12)


def test_bootstrap_interval_is_case_level_and_seeded():
    pairs = cases()
    ms = [ours_case(g, d) for g, d in pairs]
    a = detection_curves(ms, n_resamples=300, seed=1)
    b = detection_curves(ms, n_resamples=300, seed=1)
    assert a.ap_ci == b.ap_ci and a.cpm_ci == b.cpm_ci
    pairs_ci = [(a.ap, a.ap_ci), (a.auroc, a.auroc_ci), (a.cpm, a.cpm_ci), (a.picai_score, a.picai_score_ci)]
    for value, (lo, hi) in pairs_ci:
        assert lo <= value <= hi and lo < hi
    # one resample by hand: weights = how often each case was drawn equal picai on the duplicated subject list
    rng = np.random.default_rng(5)
    ids = [f"c{i:03d}" for i in range(len(pairs))]
    draw = sorted(rng.choice(ids, len(ids)))
    ref = picai_metrics_of(pairs)
    ours = detection_curves([ms[ids.index(s)] for s in draw], case_ids=[f"{s}_{k}" for k, s in enumerate(draw)])
    assert ours.ap == pytest.approx(ref.calc_AP(subject_list=draw), abs=1e-9)
    assert ours.auroc == pytest.approx(ref.calc_auroc(subject_list=draw), abs=1e-9)


def test_undefined_values_and_errors():
    none = detection_curves_from_entries(["a"], [0], [0.5], ["a", "b"], [0, 0], [0.5, 0.0], n_resamples=50)
    assert np.isnan(none.ap) and np.isnan(none.auroc) and np.isnan(none.cpm)
    assert np.isnan(none.ap_ci[0])
    with pytest.raises(ValueError, match="not in case_ids"):
        detection_curves_from_entries(["x"], [1], [0.5], ["a"], [1], [0.5])
    with pytest.raises(ValueError, match="finite values >= 0"):
        detection_curves_from_entries(["a"], [1], [np.nan], ["a"], [1], [0.5])
    with pytest.raises(ValueError, match="centroid rule"):
        pair_scores(DetectionRule.parse("centroid"), np.array([1]), np.array([1]), np.array([1]))
    with pytest.raises(ValueError, match="match_by"):
        ours_case(*iou_exactly_tenth(), match_by="size")


def test_candidate_methods():
    prob = np.zeros((1, 3, 10), np.float32)
    prob[0, 0, :4] = [0.1, 0.6, 0.2, 0.05]
    prob[0, 2, 6:9] = [0.3, 0.7, 0.3]
    c = find_candidates(prob)
    assert c.n == 2 and c.confidence.tolist() == pytest.approx([0.6, 0.7]) and c.volumes.tolist() == [4, 3]
    t = find_candidates(prob, "threshold:0.3")
    assert t.volumes.tolist() == [1, 3] and t.method == "threshold:0.3"
    pred = prob > 0.15
    m = find_candidates(prob, prediction=pred, confidence="mean")
    assert m.confidence.tolist() == pytest.approx([(0.6 + 0.2) / 2, (0.3 + 0.7 + 0.3) / 3])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        find_candidates(prob * 2)
    with pytest.raises(ValueError, match="NaN"):
        find_candidates(np.full((2, 2), np.nan, np.float32))
    with pytest.raises(ValueError, match="threshold must lie in"):
        find_candidates(prob, "threshold:0")
    with pytest.raises(ValueError, match="unknown candidate method"):
        find_candidates(prob, "watershed")
    # picai's parse_detection_map on our detection map finds the same candidates and confidences
    from picai_eval.analysis_utils import parse_detection_map

    conf, _ = parse_detection_map(np.ascontiguousarray(c.detection_map()))
    assert sorted(conf.values()) == sorted(c.confidence.tolist())


def test_dynamic_candidates_through_find_candidates():
    """ "dynamic": report_guided_annotation's candidates and confidences, voxel for voxel."""
    rga = pytest.importorskip("report_guided_annotation")
    rng = np.random.default_rng(11)
    grid = np.indices((20, 24, 24), dtype=np.float64)
    for _ in range(5):
        prob = np.zeros((20, 24, 24))
        for _ in range(4):
            centre = rng.uniform(2, 20, 3)
            prob += rng.uniform(0.2, 0.9) * np.exp(-((grid - centre[:, None, None, None]) ** 2).sum(0) / 8)
        prob = np.clip(prob, 0, 1).astype(np.float32)
        expected = rga.extract_lesion_candidates(prob, threshold="dynamic")[0]
        c = find_candidates(prob, "dynamic")
        assert c.n > 0 and np.array_equal(c.detection_map(), expected)


def tables_of(pairs, ids, rule="iou:0.1"):
    """per_case and per_candidate tables of cases, as a data-set run writes them."""
    import pandas as pd

    from ccmetrics.metrics.detection_curves import candidate_frame

    cases, frames = [], []
    for cid, (gt, det) in zip(ids, pairs):
        cand = find_candidates(det)
        lesions = find_sites(gt)
        m = match_candidates(cand, lesions, rule)
        frames.append(candidate_frame(cand, m, cid))
        cases.append({"case": cid, "class": 1, "n_components": lesions.n, "case_confidence": m.case_confidence})
    return pd.DataFrame(cases), pd.concat(frames, ignore_index=True)


def test_compare_detection_curves_paired():
    from ccmetrics.metrics.detection_curves import compare_detection_curves, detection_curves_from_tables

    pairs = cases()
    ids = [f"c{i:03d}" for i in range(len(pairs))]
    rng = np.random.default_rng(8)
    worse = [(g, np.where(d > 0, np.float32(rng.uniform(0.01, 1)), 0).astype(np.float32)) for g, d in pairs]
    a, b = tables_of(pairs, ids), tables_of(worse, ids)
    table, excluded = compare_detection_curves(a, b, n_resamples=400, seed=3)
    assert excluded == []
    ca, cb = detection_curves_from_tables(*a, n_resamples=0), detection_curves_from_tables(*b, n_resamples=0)
    for k in ("ap", "auroc", "cpm", "picai_score"):
        assert table.loc[k, "a"] == pytest.approx(getattr(ca, k), abs=1e-12)
        assert table.loc[k, "b"] == pytest.approx(getattr(cb, k), abs=1e-12)
        assert table.loc[k, "ci_low"] <= table.loc[k, "difference"] <= table.loc[k, "ci_high"]
    # a run against itself: no difference, p = 1
    same, _ = compare_detection_curves(a, a, n_resamples=200)
    assert (same["difference"] == 0).all() and (same["ci_low"] == 0).all() and (same["p_value"] == 1).all()
    # one case only in a: excluded, named
    dropped = (a[0][a[0]["case"] != "c000"], a[1][a[1]["case"] != "c000"])
    table, excluded = compare_detection_curves(dropped, b, n_resamples=0)
    assert excluded == ["c000"] and table["n"].iloc[0] == len(ids) - 1
    assert table.loc["ap", "b"] == pytest.approx(
        detection_curves_from_tables(b[0][b[0]["case"] != "c000"], b[1][b[1]["case"] != "c000"], n_resamples=0).ap
    )


def test_fortran_ordered_maps_give_the_same_candidates():
    """nibabel's arrays are Fortran-ordered: the confidences are gathered by index, with the same values."""
    rng = np.random.default_rng(4)
    det = detection_map(rng, (12, 14, 9), 5)
    prob = det * rng.uniform(0.5, 1.0, det.shape).astype(np.float32)
    c, f = find_candidates(prob), find_candidates(np.asfortranarray(prob))
    assert c.confidence.tolist() == f.confidence.tolist() and c.volumes.tolist() == f.volumes.tolist()
    assert f.n > 0


def line_case(gt_segments, det_segments, length=30):
    gt = np.zeros((1, 1, length), bool)
    det = np.zeros((1, 1, length), np.float32)
    for a, b in gt_segments:
        gt[0, 0, a:b] = True
    for a, b, conf in det_segments:
        det[0, 0, a:b] = conf
    return gt, det


@pytest.mark.parametrize(
    "gt_segments,det_segments",
    [
        # a lesion without candidate beside one with two candidates of equal IoU (1/6): picai's full matrix
        ([(0, 2), (10, 14)], [(8, 11, 0.3), (13, 16, 0.9)]),
        # equal exact IoU 2/12 and 1/6: picai's 1e-8 prefers the smaller union
        ([(8, 12)], [(0, 10, 0.3), (11, 14, 0.9)]),
    ],
)
def test_exact_ties_broken_as_picai(gt_segments, det_segments):
    gt, det = line_case(gt_segments, det_segments)
    y_list, _ = picai_case(gt, det)
    target, conf = ours_case(gt, det).entries()
    assert sorted_entries(zip(target, conf)) == sorted_entries((t, c) for t, c, _ in y_list)


def test_tie_heavy_random_lines_equal_picai():
    """Segments of lengths 1-3 and three confidence levels: many exact ties in IoU and in confidence."""
    rng = np.random.default_rng(12)
    for _ in range(300):
        starts = np.sort(rng.choice(np.arange(0, 28, 4), size=int(rng.integers(1, 5)), replace=False))
        gts = [(int(s), int(s) + int(rng.integers(1, 4))) for s in starts]
        cstarts = np.sort(rng.choice(np.arange(1, 28, 3), size=int(rng.integers(1, 6)), replace=False))
        dets = [(int(s), int(s) + int(rng.integers(1, 3)), float(rng.choice([0.3, 0.6, 0.9]))) for s in cstarts]
        gt, det = line_case(gts, dets)
        y_list, case_conf = picai_case(gt, det)
        m = ours_case(gt, det)
        target, conf = m.entries()
        assert sorted_entries(zip(target, conf)) == sorted_entries((t, c) for t, c, _ in y_list)
        assert m.case_confidence == case_conf


def test_zero_confidence_prediction_components_never_match():
    """A prediction component where the map is 0 is in no detection map: it takes no lesion from a real candidate."""
    gt, _ = line_case([(10, 15)], [])
    prob = np.zeros(gt.shape, np.float32)
    prob[0, 0, 14:16] = 0.8
    pred = np.zeros(gt.shape, bool)
    pred[0, 0, 10:13] = pred[0, 0, 14:16] = pred[0, 0, 20:22] = True
    cand = find_candidates(prob, prediction=pred)
    assert cand.confidence.tolist() == [0.0, pytest.approx(0.8), 0.0]
    m = match_candidates(cand, find_sites(gt))
    assert m.outcome.tolist() == ["fp", "tp", "fp"] and m.lesion_confidence.tolist() == [pytest.approx(0.8)]
    y_list, _ = picai_case(gt, cand.detection_map())
    target, conf = m.entries()
    assert sorted_entries(zip(target, conf)) == sorted_entries((t, c) for t, c, _ in y_list)
    assert detection_curves([m], n_resamples=0).n_false_positives == 0


def test_reduced_assignment_has_the_same_total():
    """Above EngineConfig.assignment_full_below the solver sees the passing rows and columns only: same total."""
    from ccmetrics import engine_config

    rng = np.random.default_rng(13)
    for _ in range(60):
        shape = (4, 10, 10)
        gt, det = boxes(rng, shape, int(rng.integers(1, 5))), detection_map(rng, shape, int(rng.integers(1, 6)))
        full = ours_case(gt, det)
        with engine_config(assignment_full_below=0):
            reduced = ours_case(gt, det)
        assert full.tp == reduced.tp
        assert full.score[full.outcome == "tp"].sum() == pytest.approx(reduced.score[reduced.outcome == "tp"].sum())


def test_tables_of_two_classes_at_once_are_refused():
    from ccmetrics.metrics.detection_curves import compare_detection_curves, detection_curves_from_tables

    pairs = cases()[:4]
    per_case, per_candidate = tables_of(pairs, ["a", "b", "c", "d"])
    two = (pd_concat([per_case, per_case.assign(**{"class": 2})]), per_candidate)
    with pytest.raises(ValueError, match="holds a case twice"):
        compare_detection_curves(two, two, n_resamples=0)
    with pytest.raises(ValueError, match="holds a case twice"):
        detection_curves_from_tables(*two, n_resamples=0)


def pd_concat(frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)
