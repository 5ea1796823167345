"""Tests of the degradation simulations (:mod:`simulations`), the CC-Metrics paper's Fig. 2-5.

Expected values are computed independently of :mod:`simulations` and of ccmetrics' metric code:
components with ``scipy.ndimage.label`` (full connectivity), erosion / dilation with
``scipy.ndimage`` on the whole volume, PQ from its definition, balls from the distance formula
with ``np.ogrid``, quartiles with ``np.percentile``. Only small or quick phantoms are used
(``paper_spheres(0.25)``, ``three_balls()``, small random masks), so the file runs in well under a
minute; the command line runs once with ``--quick``.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from ccmetrics import voronoi_partition
from ccmetrics.formats.io import save_image
from simulations import (
    Case,
    Components,
    Scenario,
    add_false_positives,
    cohort,
    dilate,
    drop,
    erode,
    paper_spheres,
    run,
    select,
    shift,
    summarize,
    three_balls,
)
from simulations.cli import main as cli_main
from simulations.phantoms import PAPER_SPHERES
from simulations.run import evaluate_step, run_case

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

SQRT3 = math.sqrt(3.0)


# --------------------------------------------------------------------------------------------------
# independent helpers
# --------------------------------------------------------------------------------------------------


def label_full(mask):
    """Components with full connectivity (26 in 3D, 8 in 2D), raster order: (labels, count)."""
    mask = np.asarray(mask, bool)
    return ndimage.label(mask, structure=np.ones((3,) * mask.ndim, bool))


def n_components(mask):
    return label_full(mask)[1]


def volumes_of(labels, k):
    return np.bincount(labels.ravel(), minlength=k + 1)[1:]


def expected_targets(gt, target, step=None):
    """The targeted labels by the documented rule, on scipy's labelling."""
    labels, k = label_full(gt)
    vols = volumes_of(labels, k)
    if target in ("smallest", "largest"):  # drop / add_false_positives: the step is the count
        target = (target, step)
    if target == "all":
        return labels, list(range(1, k + 1))
    if isinstance(target, int):
        return labels, [target]
    order, n = target
    key = (lambda c: (vols[c - 1], c)) if order == "smallest" else (lambda c: (-vols[c - 1], c))
    return labels, sorted(sorted(range(1, k + 1), key=key)[:n])


def pq_by_definition(pred, gt):
    """PQ from its definition: components matched iff IoU > 0.5.

    Returns dict with pq, rq, tp, fp, fn, n_pred and the matched IoUs.
    """
    glab, k = label_full(gt)
    plab, p = label_full(pred)
    inter = np.bincount((glab * (p + 1) + plab).ravel(), minlength=(k + 1) * (p + 1)).reshape(k + 1, p + 1)
    gvol, pvol = inter[1:, :].sum(axis=1), inter[:, 1:].sum(axis=0)
    overlap = inter[1:, 1:].astype(float)
    iou = overlap / (gvol[:, None] + pvol[None, :] - overlap)
    matched = iou > 0.5  # at most one match per row and column when IoU > 0.5
    tp = int(matched.sum())
    fp, fn = p - tp, k - tp
    denominator = tp + fp / 2 + fn / 2
    return {
        "pq": iou[matched].sum() / denominator if denominator else 1.0,
        "rq": tp / denominator if denominator else 1.0,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "n_pred": p,
    }


def first_empty_erosion(component):
    """The first number of 3×3×3 erosions that leaves ``component`` empty (whole-volume scipy)."""
    cube = np.ones((3,) * component.ndim, bool)
    s, m = 0, component
    while m.any():
        s += 1
        m = ndimage.binary_erosion(component, cube, iterations=s, border_value=0)
    return s


def dice(a, b):
    return 2.0 * np.logical_and(a, b).sum() / (a.sum() + b.sum())


@pytest.fixture(scope="module")
def spheres_quick():
    return paper_spheres(0.25)


# --------------------------------------------------------------------------------------------------
# 1-4: the paper's Fig. 2/3 claims
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale, n_steps", [(0.25, 11), (0.35, 6)])
def test_pq_drops_at_iou_crossings_and_rises_when_a_component_vanishes(scale, n_steps):
    """Eroding all components: the runner's PQ equals PQ built from its definition at every step.

    PQ = SQ · RQ with RQ = TP / (TP + FP/2 + FN/2) = 2 TP / (P + K) (P prediction components, K GT
    components): RQ falls exactly when a component's IoU crosses 0.5 (abrupt drop of PQ) and rises
    when an unmatched prediction component vanishes (an FP fewer); between these events only SQ moves.
    At scale 0.25 the smallest ball vanishes (step 3) at the very step where the remaining match's IoU
    falls from 0.68 to 0.54, so PQ itself still decreases there (RQ rises); at scale 0.35 the vanishing
    (step 4) comes one step after the last crossing and PQ rises (0.2187 → 0.2238). Both are checked.
    """
    case = paper_spheres(scale)
    steps = list(range(n_steps))
    scenario = Scenario("erode_all", "erode", steps, "all", metrics=("dice", "pq"))
    table = run([scenario], [case], progress=False).per_step
    comps = Components.of(case.gt)
    glab, k = label_full(case.gt)
    gvol = volumes_of(glab, k)
    expected = []
    for s in steps:  # (erode itself is checked against scipy in test_degradations_equal_whole_volume_operations)
        pred = erode(case.gt, s, "all", components=comps)
        expected.append(pq_by_definition(pred, case.gt))
        # erosion keeps each prediction inside its own GT ball, so a component's IoU is |pred_c| / |gt_c|
        assert not (pred & ~case.gt).any()
        iou = np.bincount(glab[pred], minlength=k + 1)[1:] / gvol
        assert expected[-1]["tp"] == int((iou > 0.5).sum())
        np.testing.assert_allclose(expected[-1]["pq"] * (k + expected[-1]["n_pred"]) / 2, iou[iou > 0.5].sum())

    np.testing.assert_allclose(table["pq"], [e["pq"] for e in expected], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(table["rq"], [e["rq"] for e in expected], rtol=1e-12, atol=1e-15)
    pq = table["pq"].to_numpy()
    rq = table["rq"].to_numpy()
    decrease_without_vanishing = rise_on_vanishing = False
    for t in range(1, len(steps)):
        crossing = expected[t]["tp"] < expected[t - 1]["tp"]
        vanished = expected[t]["n_pred"] < expected[t - 1]["n_pred"]
        if crossing:
            assert pq[t] < pq[t - 1] and rq[t] < rq[t - 1], t
        elif vanished and expected[t]["tp"] > 0:
            assert rq[t] > rq[t - 1], t
        else:
            assert rq[t] == pytest.approx(rq[t - 1], abs=1e-15), t  # no jump: only SQ moves
        decrease_without_vanishing |= pq[t] < pq[t - 1] and crossing and not vanished
        rise_on_vanishing |= pq[t] > pq[t - 1] and vanished
    assert decrease_without_vanishing
    if scale == 0.35:
        assert rise_on_vanishing
    else:  # see the docstring: the rise is masked by a simultaneous SQ drop at this scale
        assert not rise_on_vanishing


def test_cc_dice_tends_to_two_thirds_while_dice_stays_near_one(spheres_quick):
    case = spheres_quick
    steps = list(range(11))
    table = run(
        [Scenario("erode_smallest", "erode", steps, ("smallest", 1), metrics=("dice", "pq"))], [case], progress=False
    ).per_step
    glab, k = label_full(case.gt)
    assert k == 3
    smallest = np.argmin(volumes_of(glab, k)) + 1
    component = glab == smallest
    vanish = first_empty_erosion(component)
    assert 0 < vanish < steps[-1]
    cube = np.ones((3, 3, 3), bool)
    dice_col, cc_col = table["dice"].to_numpy(), table["cc_dice"].to_numpy()
    for s in steps:
        eroded = ndimage.binary_erosion(component, cube, iterations=s) if s else component
        pred = (case.gt & ~component) | eroded
        assert dice_col[s] == pytest.approx(dice(pred, case.gt), rel=1e-12)
        assert dice_col[s] >= 0.99
        # the two other components are perfect: CC-Dice = (1 + 1 + Dice of the smallest) / 3
        assert cc_col[s] == pytest.approx((2 + dice(eroded, component)) / 3, rel=1e-12)
        if s >= vanish:
            assert cc_col[s] == pytest.approx(2 / 3, abs=1e-12)
        else:
            assert cc_col[s] > 2 / 3 + 0.01
    assert np.all(np.diff(cc_col[: vanish + 1]) < 0)


def test_lesion_dice_drops_when_predictions_merge_cc_dice_does_not():
    case = three_balls()
    steps = list(range(11))
    comps = Components.of(case.gt)
    counts = [n_components(dilate(case.gt, s, components=comps)) for s in steps]
    assert counts == [3] * 3 + [2] * 4 + [1] * 4  # 3 → 2 exactly at step 3, 2 → 1 exactly at step 7
    merges = [s for s in steps[1:] if counts[s] < counts[s - 1]]
    assert merges == [3, 7]

    scenario = Scenario(
        "dilate_three_balls",
        "dilate",
        steps,
        "all",
        metrics=("dice", "pq", "lesion_dice"),
        lesion_dice_options={"dilation": 1, "min_volume": 2.0},
    )
    table = run([scenario], [case], progress=False).per_step
    ld, cc = table["lesion_dice"].to_numpy(), table["cc_dice"].to_numpy()
    d_ld, d_cc = np.diff(ld), np.diff(cc)  # d[s - 1]: change from step s - 1 to s
    # Before the first merge each ball's prediction touches only its own (dilated) lesion and stays in
    # its own Voronoi region: Lesion Dice is CC-Dice.
    np.testing.assert_allclose(ld[:3], cc[:3], rtol=1e-12)
    # At a merge the merged component is every touched lesion's prediction in full, so each of these
    # lesions' Dice falls from about 2g/(g + p) to 2g/(g + 2p): measured ΔLD − ΔCC = −0.147 (step 3) and
    # −0.067 (step 7). Between merges Lesion Dice declines more slowly than CC-Dice (the merged lesions'
    # Dice, already low, changes less per step): ΔLD − ΔCC is between 0 and +0.022 at every other step.
    # Margins: −0.05 at merges leaves 0.017 at step 7; −0.02 elsewhere leaves 0.02.
    for s in steps[1:]:
        if s in merges:
            assert d_ld[s - 1] < d_cc[s - 1] - 0.05, s
            assert d_ld[s - 1] < d_ld[s - 2], s  # a kink of Lesion Dice: it falls faster than just before
        else:
            assert d_ld[s - 1] >= d_cc[s - 1] - 0.02, s
    # CC-Dice has no kink at all: a smooth convex decline (each step's fall smaller than the previous one)
    assert np.all(d_cc < 0) and np.all(np.diff(d_cc) > 0)


def test_cc_hd95_reacts_alike_to_smallest_and_largest_hd95_does_not(spheres_quick):
    """Erode the largest vs the smallest component, at the steps before the smallest vanishes.

    Thresholds: s erosions with the 3×3×3 cube move a ball's boundary by s voxels along the axes and
    s·√3 along the diagonals whatever the radius, so the eroded component's own HD95 is about the same
    for both balls; only the digitisation of the small ball (r = 5 here) differs, by much less than one
    voxel. With K = 3 components, CC-HD95 = HD95_c / 3, hence |difference| ≤ 1/3 voxel (and ≤ 25 % of
    CC-HD95). The global HD95 is a 95th percentile over all surface voxels: the smallest ball holds
    under 5 % of them, so eroding it leaves HD95 at 0, while eroding the largest gives ≥ s. So the
    global difference is ≥ s voxels, at least 3 times the CC bound.
    """
    case = spheres_quick
    glab, k = label_full(case.gt)
    vols = volumes_of(glab, k)
    smallest = int(np.argmin(vols)) + 1
    vanish = first_empty_erosion(glab == smallest)
    steps = list(range(0, vanish))
    assert len(steps) >= 3
    surface = case.gt & ~ndimage.binary_erosion(case.gt, np.ones((3, 3, 3), bool))
    assert (glab[surface] == smallest).mean() < 0.05  # the premise of the HD95 argument
    scenarios = [
        Scenario(f"erode_{order}", "erode", steps, (order, 1), metrics=("hd95",)) for order in ("largest", "smallest")
    ]
    table = run(scenarios, [case], progress=False).per_step.set_index(["scenario", "step"])
    for s in steps[1:]:
        large, small = table.loc[("erode_largest", s)], table.loc[("erode_smallest", s)]
        assert abs(large["cc_hd95"] - small["cc_hd95"]) <= 1 / k
        assert abs(large["cc_hd95"] - small["cc_hd95"]) <= 0.25 * max(large["cc_hd95"], small["cc_hd95"])
        assert s / k <= large["cc_hd95"] <= (SQRT3 * s + 1) / k
        assert small["hd95"] == 0.0
        assert abs(large["hd95"] - small["hd95"]) >= s
    assert table.loc[("erode_largest", 0), "hd95"] == table.loc[("erode_smallest", 0), "cc_hd95"] == 0.0


# --------------------------------------------------------------------------------------------------
# 5: phantoms
# --------------------------------------------------------------------------------------------------


def brute_force_balls(shape, balls, rows=None):
    """Voxel inside iff its squared distance to a centre is < r², on rows ``rows`` of axis 0."""
    rows = slice(0, shape[0]) if rows is None else rows
    i, j, k = np.ogrid[rows, 0 : shape[1], 0 : shape[2]]
    out = np.zeros((len(range(*rows.indices(shape[0]))), shape[1], shape[2]), bool)
    for (c0, c1, c2), r in balls:
        out |= (i - c0) ** 2 + (j - c1) ** 2 + (k - c2) ** 2 < r**2
    return out


def test_paper_spheres_is_the_brute_force_definition():
    balls = (((169, 426, 271), 50), ((394, 247, 333), 100), ((187, 431, 423), 20))
    assert tuple(PAPER_SPHERES) == balls
    gt = paper_spheres().gt
    assert gt.shape == (500, 500, 500) and gt.dtype == bool
    for start in range(0, 500, 50):  # the whole volume, in chunks of 50 rows
        rows = slice(start, start + 50)
        assert np.array_equal(gt[rows], brute_force_balls(gt.shape, balls, rows)), start
    # each ball's exact voxel count, counted on its own, gives the raster order of the components
    per_ball = {
        r: int(brute_force_balls((500, 500, 500), [(c, r)], slice(c[0] - r, c[0] + r + 1)).sum()) for c, r in balls
    }
    assert sum(per_ball.values()) == int(gt.sum())
    # (scipy's labelling of 500³ takes seconds: the order is checked with scipy on the 0.25 scale below)
    assert Components.of(gt).volumes.tolist() == [per_ball[50], per_ball[20], per_ball[100]]

    quick = paper_spheres(0.25)
    scaled = [(tuple(c * 0.25 for c in centre), r * 0.25) for centre, r in balls]
    assert quick.gt.shape == (125, 125, 125)
    assert np.array_equal(quick.gt, brute_force_balls(quick.gt.shape, scaled))
    labels, k = label_full(quick.gt)
    centres = ndimage.center_of_mass(quick.gt, labels, [1, 2, 3])
    nearest_radius = [min(scaled, key=lambda b: np.linalg.norm(np.subtract(b[0], m)))[1] for m in centres]
    assert nearest_radius == [50 * 0.25, 20 * 0.25, 100 * 0.25]  # r=50 → 1, r=20 → 2, r=100 → 3
    assert Components.of(quick.gt).volumes.tolist() == volumes_of(labels, k).tolist()


@pytest.mark.parametrize("radius, merge_steps", [(10, (3, 7)), (4, (1, 2)), (6, (5, 2))])
def test_three_balls_gaps(radius, merge_steps):
    case = three_balls(radius, merge_steps)
    gt = case.gt
    labels, k = label_full(gt)
    assert k == 3
    row = gt[:, gt.shape[1] // 2, gt.shape[2] // 2]
    edges = np.flatnonzero(np.diff(np.r_[0, row.astype(int), 0]))
    starts, stops = edges[0::2], edges[1::2]
    assert len(starts) == 3
    assert (stops - starts).tolist() == [2 * radius - 1] * 3  # |i - c| < r: 2r - 1 voxels
    assert (starts[1:] - stops[:-1]).tolist() == [2 * merge_steps[0], 2 * merge_steps[1]]
    # whole balls of radius r around those centres, nothing else
    centres = (starts + stops - 1) // 2
    c = (gt.shape[1] // 2, gt.shape[2] // 2)
    assert np.array_equal(gt, brute_force_balls(gt.shape, [((x, *c), radius) for x in centres]))
    # not touching the border: a dilation by max(merge_steps) stays inside the image
    assert not gt[0].any() and not gt[-1].any()
    a, b = merge_steps
    for s in range(max(merge_steps) + 2):
        expected = 3 - (s >= a) - (s >= b)
        assert (
            n_components(ndimage.binary_dilation(gt, np.ones((3, 3, 3), bool), iterations=s) if s else gt) == expected
        ), s


def test_cohort_reproducible_and_plausible():
    cases = cohort(30, seed=0)
    again = cohort(30, seed=0)
    other = cohort(30, seed=1)
    assert [c.case for c in cases] == [f"case_{i:03d}" for i in range(30)]
    assert all(np.array_equal(a.gt, b.gt) and a.spacing == b.spacing for a, b in zip(cases, again))
    assert sum(not np.array_equal(a.gt, b.gt) for a, b in zip(cases, other)) >= 25
    counts, volumes_ml = [], []
    for c in cases:
        assert c.gt.shape == (160, 160, 120) and c.gt.dtype == bool and c.spacing == (2.0, 2.0, 3.0)
        labels, k = label_full(c.gt)
        counts.append(k)
        volumes_ml += (volumes_of(labels, k) * 12.0 / 1000.0).tolist()
    volumes_ml = np.array(volumes_ml)
    assert 1 <= min(counts) and max(counts) <= 60
    assert 5 <= np.mean(counts) <= 20 and max(counts) >= 15  # mean about 10, a long tail
    assert volumes_ml.min() >= 0.012 and volumes_ml.max() <= 300  # at least a voxel, at most 300 ml
    assert 0.5 <= np.median(volumes_ml) <= 5  # lesion median 2 ml (merged and clipped lesions shift it a bit)
    assert np.percentile(volumes_ml, 95) <= 100
    # another shape/seed is reproducible as well
    small = cohort(3, seed=7, shape=(40, 36, 30), spacing=(1.0, 1.5, 2.0))
    assert all(
        np.array_equal(a.gt, b.gt)
        for a, b in zip(small, cohort(3, seed=7, shape=(40, 36, 30), spacing=(1.0, 1.5, 2.0)))
    )
    assert all(c.gt.shape == (40, 36, 30) and c.spacing == (1.0, 1.5, 2.0) and c.gt.any() for c in small)


# --------------------------------------------------------------------------------------------------
# 6-7: degradations
# --------------------------------------------------------------------------------------------------


def random_mask(rng, shape, n_shapes=7):
    """Random balls and boxes, some of them cut by the image border (several components)."""
    mask = np.zeros(shape, bool)
    grids = np.ogrid[tuple(slice(0, n) for n in shape)]
    for i in range(n_shapes):
        r = rng.uniform(1.0, 4.0)
        centre = rng.uniform(0, np.array(shape) - 1)
        if i < 2:  # on the border
            axis = rng.integers(len(shape))
            centre[axis] = 0 if i == 0 else shape[axis] - 1
        if rng.random() < 0.5:
            mask |= sum((g - c) ** 2 for g, c in zip(grids, centre)) < r**2
        else:
            mask[tuple(slice(max(int(c - r), 0), int(c + r) + 1) for c in centre)] = True
    mask[tuple(rng.integers(0, n) for n in shape)] = True  # perhaps a single voxel
    return mask


def random_masks():
    rng = np.random.default_rng(2024)
    masks = [random_mask(rng, (22, 19, 17)) for _ in range(3)] + [random_mask(rng, (40, 33), 9) for _ in range(3)]
    for m in masks:
        k = n_components(m)
        assert k >= 3
        assert m[0].any() or m[-1].any() or m[:, 0].any() or m[:, -1].any()
    return masks


MASKS = random_masks()


def shifted(mask, step, axis):
    out = np.zeros_like(mask)
    n = mask.shape[axis]
    if step < n:
        src = [slice(None)] * mask.ndim
        dst = [slice(None)] * mask.ndim
        src[axis], dst[axis] = slice(0, n - step), slice(step, n)
        out[tuple(dst)] = mask[tuple(src)]
    return out


def subset_targets(k):
    return ["all", ("smallest", 1), ("smallest", 2), ("largest", 1), ("largest", 3), ("smallest", k + 2), 1, k]


@pytest.mark.parametrize("index", range(len(MASKS)))
def test_degradations_equal_whole_volume_operations(index):
    gt = MASKS[index]
    original = gt.copy()
    cube = np.ones((3,) * gt.ndim, bool)
    k = n_components(gt)
    comps = Components.of(gt)
    assert comps.n == k
    for target in subset_targets(k):
        labels, chosen = expected_targets(gt, target)
        assert select(comps, target) == chosen
        targeted = np.isin(labels, chosen)
        untouched = gt & ~targeted
        for s in range(0, 5):
            for fn, op in (
                (erode, lambda m, s=s: ndimage.binary_erosion(m, cube, iterations=s, border_value=0)),
                (dilate, lambda m, s=s: ndimage.binary_dilation(m, cube, iterations=s)),
            ):
                expected = (op(targeted) if s else targeted) | untouched
                assert np.array_equal(fn(gt, s, target), expected), (fn.__name__, target, s)
                assert np.array_equal(fn(gt, s, target, components=comps), expected), (fn.__name__, target, s)
            for axis in range(gt.ndim):
                for step in (s, gt.shape[axis] - 1, gt.shape[axis] + 2):
                    expected = shifted(targeted, step, axis) | untouched
                    assert np.array_equal(shift(gt, step, target, axis=axis, components=comps), expected), (
                        target,
                        step,
                        axis,
                    )
            assert np.array_equal(shift(gt, s, target, axis=-1), shifted(targeted, s, gt.ndim - 1) | untouched)
        assert np.array_equal(drop(gt, 1, target, components=comps), untouched)
    for order in ("smallest", "largest"):
        for n in range(0, k + 2):
            labels, chosen = expected_targets(gt, order, n)
            assert np.array_equal(drop(gt, n, order), gt & ~np.isin(labels, chosen)), (order, n)
    assert np.array_equal(drop(gt, 0, "all"), gt)  # step 0 is the GT, whatever the target
    assert np.array_equal(gt, original)  # the input is never modified


def test_degradation_arguments():
    gt = MASKS[0]
    with pytest.raises(ValueError):
        erode(gt, -1)
    with pytest.raises(ValueError):
        dilate(gt, 1, ("middle", 1))
    with pytest.raises(ValueError):
        drop(gt, 1, n_components(gt) + 1)
    with pytest.raises(ValueError):
        shift(gt, 1, axis=3)
    with pytest.raises(ValueError):
        erode(gt, 1, components=Components.of(gt[1:]))


def fp_phantom():
    gt = np.zeros((60, 56, 40), bool)
    grids = np.ogrid[0:60, 0:56, 0:40]
    for centre, r in (
        ((12, 12, 10), 3),
        ((40, 15, 20), 6),
        ((20, 40, 30), 4.5),
        ((45, 45, 12), 2.2),
        ((30, 28, 20), 8),
    ):
        gt |= sum((g - c) ** 2 for g, c in zip(grids, centre)) < r**2
    return gt


@pytest.mark.parametrize("spacing", [None, (0.8, 0.8, 2.5)])
def test_false_positives_from_the_partition_equal_those_of_the_searches(spacing, monkeypatch):
    """Reading the whole Voronoi partition (computed once the nearest-site searches cost as much) places the same
    false positives as searching every candidate: the crowded two-lesion case, where most balls do not fit, and the
    phantom; the paths checked as they are taken."""
    import simulations.degrade as degrade

    crowded = np.zeros((32, 32, 20), bool)
    crowded[4:12, 4:12, 4:10] = crowded[18:26, 18:26, 10:16] = True
    calls = []
    import ccmetrics.engine.partition as partition

    whole = partition.voronoi_partition
    monkeypatch.setattr(partition, "voronoi_partition", lambda *a, **k: calls.append(1) or whole(*a, **k))
    for gt, volumes in ((crowded, (None, 40)), (fp_phantom(), (None, 7))):
        for volume in volumes:
            for seed in range(3):
                runs = {}
                for ratio in (0, 10**12):  # never the partition; the partition after the first search
                    monkeypatch.setattr(degrade, "PARTITION_RATIO", ratio)
                    calls.clear()
                    runs[ratio] = add_false_positives(gt, 2, "all", seed=seed, volume=volume, spacing=spacing)
                    assert bool(calls) is (ratio > 0)
                assert np.array_equal(runs[0], runs[10**12]), (volume, seed)


@pytest.mark.parametrize("spacing", [None, (1.0, 1.0, 1.0), (0.8, 0.8, 2.5), (2.0, 2.0, 3.0)])
def test_add_false_positives(spacing):
    gt = fp_phantom()
    labels, k = label_full(gt)
    assert k == 5
    volume = np.percentile(volumes_of(labels, k), 25)  # voxels
    regions = voronoi_partition(gt, spacing=spacing)
    sp = np.ones(3) if spacing is None else np.asarray(spacing)
    radius_mm = (3 * volume * np.prod(sp) / (4 * np.pi)) ** (1 / 3)
    for order in ("smallest", "largest"):
        for n in (1, 3):
            _, chosen = expected_targets(gt, order, n)
            for seed in range(4):
                pred = add_false_positives(gt, n, order, seed=seed, spacing=spacing)
                assert np.array_equal(pred & gt, gt)
                fp = pred & ~gt
                fp_labels, n_fp = label_full(fp)
                assert n_fp == n
                # separate components: the prediction has K + n components, those holding GT are GT's
                pred_labels, n_pred = label_full(pred)
                assert n_pred == k + n
                assert len(np.unique(pred_labels[gt])) == k
                assert not (ndimage.binary_dilation(fp, np.ones((3, 3, 3), bool)) & gt).any()
                hit = []
                for f in range(1, n_fp + 1):
                    voxels = fp_labels == f
                    region = np.unique(regions[voxels])
                    assert len(region) == 1, (order, n, seed, region)  # the whole FP in one Voronoi region
                    hit.append(int(region[0]))
                    # about the 25th-percentile lesion volume (a digital ball: within 25 %)
                    assert 0.75 * volume <= voxels.sum() <= 1.25 * volume
                    # round in mm: each axis' extent is the diameter up to one voxel
                    idx = np.argwhere(voxels)
                    extent_mm = (idx.max(axis=0) - idx.min(axis=0) + 1) * sp
                    assert np.all(np.abs(extent_mm - 2 * radius_mm) <= sp + 1e-9), (extent_mm, radius_mm)
                assert sorted(hit) == chosen
                again = add_false_positives(gt, n, order, seed=seed, spacing=spacing)
                assert np.array_equal(pred, again)
            assert not np.array_equal(
                add_false_positives(gt, n, order, seed=0, spacing=spacing),
                add_false_positives(gt, n, order, seed=1, spacing=spacing),
            )
    explicit = add_false_positives(gt, 2, "all", seed=3, volume=7, spacing=spacing)
    assert n_components(explicit) == k + 5 and n_components(explicit & ~gt) == 5
    assert np.array_equal(add_false_positives(gt, 0, "smallest"), gt)


def test_add_false_positives_without_room_inside_the_region():
    """A component whose Voronoi region has no room for a whole free ball: the ball's centre is in it.

    In the quick cohort's case_001, component 3 (3 voxels) has a thin region of 816 voxels next to
    larger lesions; the 25th-percentile ball (about 62 voxels) with its clearance fits nowhere inside.
    """
    case = cohort(4, seed=0, shape=(64, 64, 48))[1]
    labels, k = label_full(case.gt)
    vols = volumes_of(labels, k)
    _, chosen = expected_targets(case.gt, "smallest", 1)
    assert vols[chosen[0] - 1] == 3
    regions = voronoi_partition(case.gt, spacing=case.spacing)
    pred = add_false_positives(case.gt, 1, "smallest", seed=0, spacing=case.spacing)
    fp = pred & ~case.gt
    assert n_components(fp) == 1 and n_components(pred) == k + 1 and np.array_equal(pred & case.gt, case.gt)
    centre = tuple(np.argwhere(fp).mean(axis=0).round().astype(int))  # a ball: its centroid is its centre
    assert fp[centre] and regions[centre] == chosen[0]
    assert len(np.unique(regions[fp])) > 1  # necessarily crossing into a neighbour's region


def test_add_false_positives_2d():
    gt = np.zeros((70, 60), bool)
    gt[5:9, 5:9] = gt[40:52, 30:44] = gt[60:62, 8:10] = True
    regions = voronoi_partition(gt)
    pred = add_false_positives(gt, 3, "all", seed=5)
    fp_labels, n_fp = label_full(pred & ~gt)
    assert n_fp == 3 and n_components(pred) == 6
    assert sorted(int(np.unique(regions[fp_labels == f]).item()) for f in range(1, 4)) == [1, 2, 3]


# --------------------------------------------------------------------------------------------------
# 8-10: the runner
# --------------------------------------------------------------------------------------------------

ALL_METRICS = ("dice", "iou", "nsd", "hd", "hd95", "assd", "pq", "lesion_dice")


def crop_case():
    """GT components in one corner of a larger image, one touching the border."""
    gt = np.zeros((56, 50, 40), bool)
    grids = np.ogrid[0:56, 0:50, 0:40]
    for centre, r in (((10, 10, 10), 4), ((20, 12, 8), 2.5), ((4, 22, 14), 3), ((0, 8, 24), 3.5)):
        gt |= sum((g - c) ** 2 for g, c in zip(grids, centre)) < r**2
    gt[14:18, 0:3, 0:2] = True  # a box in an image corner
    return Case("crop_case", gt, (0.9, 1.1, 2.0))


def far_fp_seed(case, target):
    """A seed whose false positive lies far (> 10 voxels) from every GT voxel."""
    distance = ndimage.distance_transform_edt(~case.gt)
    for seed in range(50):
        pred = add_false_positives(case.gt, 1, target, seed=seed, spacing=case.spacing)
        if distance[pred & ~case.gt].min() > 10:
            return seed
    raise AssertionError("no far false positive")


def assert_rows_equal(a, b):
    assert list(a) == list(b)
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, (float, np.floating)):
            assert (np.isnan(x) and np.isnan(y)) or x == pytest.approx(y, rel=1e-12, abs=1e-12), (key, x, y)
        else:
            assert x == y, (key, x, y)


def test_cropping_changes_no_value():
    case = crop_case()
    comps = Components.of(case.gt)
    # the component whose Voronoi region holds the far corner of the image: its FP can be far from the GT
    far_label = int(voronoi_partition(case.gt, spacing=case.spacing)[-1, -1, -1])
    scenarios = [
        Scenario("erode_all", "erode", [1, 2], "all", metrics=ALL_METRICS),
        Scenario(
            "dilate_largest",
            "dilate",
            [3],
            ("largest", 1),
            metrics=ALL_METRICS,
            lesion_dice_options={"dilation": 1, "min_volume": 2.0},
        ),
        Scenario("shift_all", "shift", [2, 6], "all", metrics=ALL_METRICS, options={"axis": 2}),
        Scenario("shift_to_border", "shift", [33, 60], "all", metrics=ALL_METRICS),  # ... and out of the image
        Scenario("drop_smallest", "drop", [2], "smallest", metrics=ALL_METRICS),
        Scenario("false_positive", "add_false_positives", [1], far_label, metrics=ALL_METRICS, nsd_tolerance=2.0),
    ]
    seeds = {"false_positive": far_fp_seed(case, far_label)}
    n_checked = 0
    for scenario in scenarios:
        for step in scenario.steps:
            seed = seeds.get(scenario.name, 0)
            pred = scenario.prediction(case, step, comps, seed=seed)
            if scenario.name == "shift_to_border":
                assert pred[-1].any() if step == 33 else not pred.any()  # the prediction touches the image border
            row_crop, frame_crop = evaluate_step(scenario, case, step, pred, crop=True)
            row_full, frame_full = evaluate_step(scenario, case, step, pred, crop=False)
            assert_rows_equal(row_crop, row_full)
            assert "lesion_dice" in row_crop and "pq" in row_crop and "cc_hd95" in row_crop
            pd.testing.assert_frame_equal(frame_crop, frame_full, check_exact=False, rtol=1e-12, atol=1e-12)
            n_checked += 1
    assert n_checked == 9
    # the whole runner, cropped vs not
    for scenario in scenarios[:2]:
        a, b = run_case(scenario, case, crop=True), run_case(scenario, case, crop=False)
        pd.testing.assert_frame_equal(a.per_step, b.per_step, check_exact=False, rtol=1e-12, atol=1e-12)
        pd.testing.assert_frame_equal(a.per_component, b.per_component, check_exact=False, rtol=1e-12, atol=1e-12)


def summary_table():
    rng = np.random.default_rng(3)
    n_components = {"a": 1, "b": 3, "c": 5, "d": 2, "e": 4}
    rows = []
    for scenario in ("drop_smallest", "erode_smallest"):
        for case, k in n_components.items():
            for step in (1, 2, 3, 4):
                rows.append(
                    {
                        "scenario": scenario,
                        "case": case,
                        "step": step,
                        "n_components": k,
                        "worst_distance": 100.0 + ord(case),
                        "dice": rng.random(),
                        "hd95": rng.random() * 10,
                        "cc_hd95": rng.random() * 20,
                    }
                )
    table = pd.DataFrame(rows)
    table.loc[(table["case"] == "b") & (table["step"] == 2), "hd95"] = np.inf  # empty prediction
    table.loc[(table["case"] == "e") & (table["step"] == 3), "hd95"] = np.inf
    table.loc[(table["case"] == "c") & (table["step"] == 1), "dice"] = np.nan  # a missing value
    table.loc[
        (table["scenario"] == "erode_smallest") & (table["step"] == 4) & table["case"].isin(["b", "d", "e"]), "hd95"
    ] = np.inf
    return table, n_components


@pytest.mark.parametrize("subset, max_step", [("at_least", None), ("constant", None), ("constant", 2), ("all", None)])
def test_summarize(subset, max_step):
    table, n_components = summary_table()
    kwargs = {} if max_step is None else {"max_step": max_step}
    summary = summarize(table, ["dice", "hd95", "cc_hd95"], subset=subset, **kwargs)
    assert list(summary.columns) == ["scenario", "step", "metric", "n_cases", "q25", "median", "q75"]
    assert len(summary) == 2 * 4 * 3
    top = 4 if max_step is None else max_step
    for _, out in summary.iterrows():
        extra = 1 if out["scenario"].startswith("drop") else 0
        need = {"at_least": out["step"] + extra, "constant": top + extra, "all": 0}[subset]
        keep = sorted(c for c, k in n_components.items() if k >= need)
        rows = table[(table["scenario"] == out["scenario"]) & (table["step"] == out["step"]) & table["case"].isin(keep)]
        values = rows[out["metric"]].to_numpy(float)
        if out["metric"] != "dice":  # a distance: inf → that row's worst distance
            values = np.where(np.isinf(values), rows["worst_distance"].to_numpy(), values)
        values = values[~np.isnan(values)]
        assert out["n_cases"] == len(values)
        if len(values):
            np.testing.assert_allclose(
                [out["q25"], out["median"], out["q75"]], np.percentile(values, [25, 50, 75]), rtol=1e-12
            )
        else:
            assert np.isnan(out[["q25", "median", "q75"]].to_numpy(float)).all()
    # inf is replaced by the row's worst distance, not dropped: at step 4, hd95 is inf for b, d and e
    # (worst distances 198, 200, 201) and below 10 for a and c, so the median is b's worst distance
    every = summarize(table, ["hd95"], subset="all")
    row = every[(every["scenario"] == "erode_smallest") & (every["step"] == 4)].iloc[0]
    assert row["n_cases"] == 5 and row["median"] == 100.0 + ord("b")
    with pytest.raises(ValueError):
        summarize(table, ["dice"], subset="some")


def test_summarize_selection_counts():
    table, _ = summary_table()
    summary = summarize(table, ["cc_hd95"], subset="at_least").set_index(["scenario", "step"])["n_cases"]
    # drop_*: n + 1 components needed (a: 1, d: 2, b: 3, e: 4, c: 5); other scenarios: n
    assert summary.loc["drop_smallest"].tolist() == [4, 3, 2, 1]
    assert summary.loc["erode_smallest"].tolist() == [5, 4, 3, 2]
    constant = summarize(table, ["cc_hd95"], subset="constant").set_index(["scenario", "step"])["n_cases"]
    assert constant.loc["drop_smallest"].tolist() == [1] * 4 and constant.loc["erode_smallest"].tolist() == [2] * 4


def test_run_with_workers_gives_the_same_tables():
    cases = [cohort(4, seed=0, shape=(64, 64, 48))[i] for i in (0, 3)]
    scenarios = [
        Scenario("erode_all", "erode", [0, 1, 2], "all", metrics=("dice", "hd95", "pq")),
        Scenario(
            "false_positive_smallest",
            "add_false_positives",
            [1, 2],
            "smallest",
            metrics=("dice", "nsd", "lesion_dice"),
            nsd_tolerance=2.0,
        ),
    ]
    one = run(scenarios, cases, workers=1, progress=False, seed=4)
    two = run(scenarios, cases, workers=2, progress=False, seed=4)
    pd.testing.assert_frame_equal(one.per_step, two.per_step)
    pd.testing.assert_frame_equal(one.per_component, two.per_component)
    assert one.per_step[["scenario", "case", "step"]].values.tolist() == [
        [s.name, c.case, step] for s in scenarios for c in cases for step in s.steps
    ]


# --------------------------------------------------------------------------------------------------
# 11: the command line
# --------------------------------------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_figure_files(out, names):
    for name in names:
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_SIGNATURE
        per_step = pd.read_csv(out / f"{name}_per_step.csv")
        per_component = pd.read_csv(out / f"{name}_per_component.csv")
        assert {"scenario", "case", "step", "n_components", "worst_distance"} <= set(per_step.columns)
        assert {"scenario", "case", "step", "component", "volume", "detected"} <= set(per_component.columns)
        assert len(per_step) and len(per_component)


def test_cli_all_quick(tmp_path, capsys):
    out = tmp_path / "all"
    assert cli_main(["all", "--out", str(out), "--quick", "--quiet"]) == 0
    expected = {
        f"{n}{suffix}"
        for n in ("fig2", "fig3", "fig4", "fig5")
        for suffix in (".png", "_per_step.csv", "_per_component.csv")
    }
    expected |= {"fig4_summary.csv", "fig5_summary.csv"}
    assert {p.name for p in out.iterdir()} == expected
    check_figure_files(out, ("fig2", "fig3", "fig4", "fig5"))
    fig2 = pd.read_csv(out / "fig2_per_step.csv")
    assert {"dice", "cc_dice", "pq", "lesion_dice"} <= set(fig2.columns)
    assert set(fig2["scenario"]) == {"erode_all", "erode_smallest", "dilate_three_balls", "lesion_dice_pitfall"}
    fig3 = pd.read_csv(out / "fig3_per_step.csv")
    assert {"hd95", "cc_hd95", "nsd", "cc_nsd"} <= set(fig3.columns)
    for name in ("fig4", "fig5"):
        per_step = pd.read_csv(out / f"{name}_per_step.csv")
        assert {"dice", "cc_dice", "nsd", "cc_nsd", "hd95", "cc_hd95"} <= set(per_step.columns)
        assert per_step["case"].nunique() == 4 and per_step["step"].max() == 5
        summary = pd.read_csv(out / f"{name}_summary.csv")
        assert list(summary.columns) == ["scenario", "step", "metric", "n_cases", "q25", "median", "q75"]
        assert len(set(summary["scenario"])) == 8
    assert "14 files written" in capsys.readouterr().out


def test_cli_custom_gt_dir(tmp_path):
    gt_dir = tmp_path / "gts"
    gt_dir.mkdir()
    rng = np.random.default_rng(11)
    grids = np.ogrid[0:30, 0:28, 0:20]
    for i in range(3):
        gt = np.zeros((30, 28, 20), np.uint8)
        for _ in range(3 + i):
            centre, r = rng.uniform(5, 18, 3), rng.uniform(1.5, 3.5)
            gt[sum((g - c) ** 2 for g, c in zip(grids, centre)) < r**2] = 1
        save_image(gt_dir / f"case_{i}.nii.gz", gt, spacing=(1.0, 1.2, 2.0))
    (gt_dir / "notes.txt").write_text("not an image")
    out = tmp_path / "custom"
    assert cli_main(["custom", "--gt-dir", str(gt_dir), "--out", str(out), "--quiet", "--max-n", "2"]) == 0
    assert {p.name for p in out.iterdir()} == {
        f"{n}{s}" for n in ("fig4", "fig5") for s in (".png", "_per_step.csv", "_per_component.csv", "_summary.csv")
    }
    check_figure_files(out, ("fig4", "fig5"))
    per_step = pd.read_csv(out / "fig4_per_step.csv")
    assert sorted(per_step["case"].unique()) == ["case_0", "case_1", "case_2"]
    assert sorted(per_step["step"].unique()) == [1, 2]
    # the spacing of the headers is used: worst distance = the image diagonal in mm
    assert per_step["worst_distance"].iloc[0] == pytest.approx(math.sqrt(30**2 + (28 * 1.2) ** 2 + 40**2))


def test_cli_usage_errors(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("no image here")
    out = str(tmp_path / "out")
    assert cli_main(["custom", "--out", out]) == 2
    assert cli_main(["fig4", "--gt-dir", str(empty), "--out", out]) == 2
    assert cli_main(["custom", "--gt-dir", str(empty), "--out", out]) == 2
    assert cli_main(["custom", "--gt-dir", str(tmp_path / "missing"), "--out", out]) == 2
    assert cli_main(["fig2", "--out", out, "--workers", "0"]) == 2
    assert "error" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse: an unknown scenario
        cli_main(["fig9", "--out", out])
    assert exc.value.code == 2
    assert not (tmp_path / "out").exists()


def test_counting_degradations_start_from_the_gt_and_count_components():
    from simulations.degrade import add_false_positives, drop
    from simulations.run import Scenario

    gt = np.zeros((40, 40), bool)
    gt[2:5, 2:5] = gt[30:36, 30:36] = True
    gt[20, 5] = True
    for target in ("smallest", "largest", "all", 2, ("smallest", 2)):  # step 0 is the GT, whatever the target
        assert np.array_equal(drop(gt, 0, target), gt)
        assert np.array_equal(add_false_positives(gt, 0, target, volume=5), gt)
    assert drop(gt, 1, 2).sum() == gt.sum() - 1  # component 2 in raster order is the single pixel at row 20
    assert drop(gt, 2, "smallest").sum() == 36 and drop(gt, 1, "all").sum() == 0
    from ccmetrics import label_components

    assert label_components(add_false_positives(gt, 2, "largest", volume=5))[1] == 5  # two more components
    with pytest.raises(ValueError, match="counts components"):
        Scenario("drop_all", "drop", [0, 1, 2])
