"""Tests of :mod:`simulations.paper`: the authors' notebook protocol of Fig. 2 and 3 beside ccmetrics' definitions.

Two kinds of expected values:

* printed by the authors' notebooks (github.com/alexanderjaus/CC-Metrics, folder ``paper_asset/``, commit
  20a704b), each cited as notebook, cell (0-based position in the notebook's ``cells`` list) and step (the
  position in the printed sequence, step 0 being the GT). They are only expectations here: the package
  computes every number itself. Our values must equal theirs to float32 precision (MONAI computes in
  float32): relative 1e-6.
* computed independently in this file, on the quarter-size phantoms: the notebooks' own loops (scipy's
  ``binary_erosion`` / ``binary_dilation`` on the whole volume, ``np.roll`` with the component found again
  by ``cc3d`` and its voxel count), MONAI's metrics on each masked Voronoi region (per-component float32
  EDT, ``argmin``), PQ from ``scipy.ndimage.label``, the notebook's Lesion Dice algorithm.

The full 500³ phantom is prepared once (module fixture, a few seconds); each notebook value costs one
evaluation (about a second). No timing is asserted.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from ccmetrics import evaluate, lesion_dice
from ccmetrics.metrics.aggregation import image_diagonal
from simulations import paper
from simulations.cli import main as cli_main
from simulations.degrade import dilate

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

ALL = [*paper.SURFACE_METRICS, paper.ASD]
#: the notebooks' metric names -> our columns
NAMES = {
    "Dice": "dice",
    "HD": "hd",
    "HD95": "hd95",
    "SD": "asd",
    "NSD": "nsd",
    "PQ": "pq",
}


def close(ours: float, theirs: float, rel: float = 1e-6) -> bool:
    if math.isinf(theirs) or math.isinf(ours):
        return ours == theirs
    return abs(ours - theirs) <= rel * abs(theirs) + 1e-12


def check(row: dict, expected: dict, where: str) -> None:
    """``expected``: the notebook's printed values, keys ``G_<name>`` (global) and ``CC_<name>`` (CC)."""
    for key, theirs in expected.items():
        kind, name = key.split("_")
        column = NAMES[name] if kind == "G" else f"cc_{NAMES[name]}"
        assert close(row[column], theirs), f"{where}, {key}: ours {row[column]!r}, notebook {theirs!r}"


def both_views(ref, pred, *, pq6=False):
    """The notebook's and the corrected per-step rows of one prediction."""
    metrics = [*ALL, "pq"] if pq6 else ALL
    s = paper.score(pred, ref, metrics, pq6=pq6)
    rows, _ = paper.views(ref, s, {}, [*paper.SURFACE_METRICS, "asd"])
    return rows[0], rows[1]


@pytest.fixture(scope="module")
def full():
    return paper.reference("spheres", 1.0)


@pytest.fixture(scope="module")
def quick():
    return paper.reference("spheres", 0.25)


# --------------------------------------------------------------------------------------------------
# the notebooks' printed values, on the full phantoms
# --------------------------------------------------------------------------------------------------


def test_component_numbers_are_cc3d_on_the_fortran_ordered_array(full):
    """SDice notebook, cell 7 prints 33371 voxels for component 3, cell 8 4187707 for component 2."""
    assert full.radii.tolist() == [50.0, 100.0, 20.0]
    volumes = np.bincount(full.labels.ravel())[1:]
    assert volumes[2] == 33371 and volumes[1] == 4187707
    assert int(full.case.gt.sum()) == int(volumes.sum())
    # raster (C) order numbers them 1 = r 50, 2 = r 20, 3 = r 100: ccmetrics' own component order
    raster = paper.protocol_labels(full.case.gt, "C")
    assert np.bincount(raster.ravel())[1:].tolist() == [volumes[0], volumes[2], volumes[1]]


#: Comparison_to_PQ.ipynb, cell 6 (erode all with the 3x3x3 cube), printed values at these steps
PQ_CELL_6 = {
    1: {
        "G_Dice": 0.9741848707199097,
        "G_HD": 1.7320507764816284,
        "G_HD95": 1.7320507764816284,
        "G_SD": 1.3766080141067505,
        "G_NSD": 0.2771017849445343,
        "G_PQ": 0.8860109222244915,
        "CC_Dice": 0.9380615552266439,
        "CC_HD": 1.7320507764816284,
        "CC_HD95": 1.7320507764816284,
        "CC_SD": 1.3732307354609172,
        "CC_NSD": 0.2764510711034139,
        "CC_PQ": 0.8860109222244915,
    },
    3: {
        "G_Dice": 0.9212969541549683,
        "G_HD": 5.196152210235596,
        "G_HD95": 5.099019527435303,
        "G_SD": 4.284567356109619,
        "G_NSD": 0.0,
        "G_PQ": 0.5403811408409375,
        "CC_Dice": 0.8034716447194418,
        "CC_HD": 5.196152210235596,
        "CC_HD95": 5.131397088368733,
        "CC_SD": 4.311572710673015,
        "CC_NSD": 0.0,
        "CC_PQ": 0.5403811408409375,
    },
    7: {
        "G_Dice": 0.8114945888519287,
        "G_HD": 12.12435531616211,
        "G_HD95": 11.747340202331543,
        "G_SD": 10.299576759338379,
        "G_NSD": 0.0,
        "G_PQ": 0.23761587586396724,
        "CC_Dice": 0.5430891116460165,
        "CC_HD": 12.12435531616211,
        "CC_HD95": 11.873011906941732,
        "CC_SD": 10.538203557332357,
        "CC_NSD": 0.0,
        "CC_PQ": 0.23761587586396724,
    },
    12: {
        "G_Dice": 0.6703101396560669,
        "G_HD": 138.231689453125,
        "G_HD95": 20.51828384399414,
        "G_SD": 18.03769302368164,
        "G_NSD": 0.0,
        "G_PQ": 0.21654131962909534,
        "CC_Dice": 0.3623732924461365,
        "CC_HD": math.inf,
        "CC_HD95": 13.531845092773438,
        "CC_SD": math.inf,
        "CC_NSD": 0.0,
        "CC_PQ": 0.18045109969091278,
    },
    14: {
        "G_Dice": 0.6136277914047241,
        "G_HD": 141.84498596191406,
        "G_HD95": 23.93741798400879,
        "G_SD": 21.18866539001465,
        "G_NSD": 0.0,
        "G_PQ": 0.0,
        "CC_Dice": 0.31244686245918274,
        "CC_HD": math.inf,
        "CC_HD95": 15.832449595133463,
        "CC_SD": math.inf,
        "CC_NSD": 0.0,
        "CC_PQ": 0.0,
    },
}


def test_fig2_top_matches_the_pq_notebook(full):
    """Every printed metric of Comparison_to_PQ.ipynb cell 6 at steps 1, 3, 7, 12 and 14 (the r 20 ball
    vanishes at step 12); the corrected view differs only where the r 20 ball's region is empty."""
    worst = image_diagonal(full.case.gt.shape)
    for step, (pred, _) in enumerate(paper.erode_steps(full, [1, 2, 3], "cube", max(PQ_CELL_6))):
        if step not in PQ_CELL_6:
            continue
        s = paper.score(pred, full, [*ALL, "pq"], pq6=True)
        rows, comps = paper.views(full, s, {}, [*paper.SURFACE_METRICS, "asd"])
        notebook, corrected = rows
        check(notebook, PQ_CELL_6[step], f"PQ notebook cell 6, step {step}")
        assert corrected["pq"] == pytest.approx(notebook["pq"], abs=1e-12)  # 26- and 6-connectivity agree here
        for m in ("dice", "nsd"):
            assert corrected[f"cc_{m}"] == notebook[f"cc_{m}"]
        if step < 12:
            for m in ("hd", "hd95", "asd"):
                assert corrected[f"cc_{m}"] == pytest.approx(notebook[f"cc_{m}"], rel=1e-12)
        else:  # the documented difference: the vanished ball counts the image diagonal, not 0 or inf
            gone = [c for c in comps if c["protocol"] == "corrected" and math.isinf(c["hd"])]
            assert [c["component"] for c in gone] == [3]
            assert corrected["cc_hd95"] - notebook["cc_hd95"] == pytest.approx(worst / 3, rel=1e-9)
            assert math.isinf(notebook["cc_hd"]) and math.isfinite(corrected["cc_hd"])


#: Comparison_to_HD.ipynb, cell 6 (erode component 3, the r 20 ball, with scipy's default cross)
HD_CELL_6 = {
    1: {
        "G_Dice": 0.9995754957199097,
        "G_HD": 1.0,
        "G_HD95": 0.0,
        "G_SD": 0.02820516750216484,
        "G_NSD": 1.0,
        "CC_Dice": 0.9786019523938497,
        "CC_HD": 0.3333333333333333,
        "CC_HD95": 0.3333333333333333,
        "CC_SD": 0.3333333333333333,
        "CC_NSD": 1.0,
    },
    14: {
        "G_Dice": 0.9966084361076355,
        "G_HD": 14.03566837310791,
        "G_HD95": 0.0,
        "G_SD": 0.05662321671843529,
        "G_NSD": 0.9825615882873535,
        "CC_Dice": 0.6916450336575508,
        "CC_HD": 4.678556124369304,
        "CC_HD95": 4.666666666666667,
        "CC_SD": 4.306344668070476,
        "CC_NSD": 0.6666666666666666,
    },
    19: {
        "G_Dice": 0.9964706897735596,
        "G_HD": 19.94993782043457,
        "G_HD95": 0.0,
        "G_SD": 0.00014673967962153256,
        "G_NSD": 0.9846874475479126,
        "CC_Dice": 0.6666866434934491,
        "CC_HD": 6.64997927347819,
        "CC_HD95": 6.64997927347819,
        "CC_SD": 6.333333333333333,
        "CC_NSD": 0.6666666666666666,
    },
    20: {
        "G_Dice": 0.99647057056427,
        "G_HD": 122.93494415283203,
        "G_HD95": 0.0,
        "G_SD": 0.0,
        "G_NSD": 0.9846912026405334,
        "CC_Dice": 0.6666666666666666,
        "CC_HD": math.inf,
        "CC_HD95": 0.0,
        "CC_SD": math.inf,
        "CC_NSD": 0.6666666666666666,
    },
}
#: Comparison_to_HD.ipynb, cell 7 (erode component 1, the r 50 ball: the notebook's "largest")
HD_CELL_7 = {
    1: {
        "G_Dice": 0.9972792267799377,
        "G_HD": 1.4142135381698608,
        "G_HD95": 1.0,
        "G_SD": 0.18839532136917114,
        "G_NSD": 0.9998197555541992,
        "CC_Dice": 0.9915909171104431,
        "CC_HD": 0.47140451272328693,
        "CC_HD95": 0.3333333333333333,
        "CC_SD": 0.3333333333333333,
        "CC_NSD": 0.9996847907702128,
    },
    25: {
        "G_Dice": 0.9516656398773193,
        "G_HD": 25.0,
        "G_HD95": 23.409399032592773,
        "G_SD": 1.7124590873718262,
        "G_NSD": 0.8613220453262329,
        "CC_Dice": 0.7604861259460449,
        "CC_HD": 8.333333333333334,
        "CC_HD95": 8.333333333333334,
        "CC_SD": 7.4405466715494795,
        "CC_NSD": 0.6666666666666666,
    },
}


@pytest.mark.parametrize("component, expected", [(3, HD_CELL_6), (1, HD_CELL_7)], ids=["cell6_r20", "cell7_r50"])
def test_fig3_top_matches_the_hd_notebook(full, component, expected):
    """Comparison_to_HD.ipynb cells 6 and 7. At step 20 the r 20 ball has vanished: the notebook's CC-HD is
    inf and its CC-HD95 0 (the figure stops at step 19); ccmetrics counts the image diagonal."""
    worst = image_diagonal(full.case.gt.shape)
    for step, (pred, _) in enumerate(paper.erode_steps(full, [component], "cross", max(expected))):
        if step in expected:
            notebook, corrected = both_views(full, pred)
            check(notebook, expected[step], f"HD notebook, component {component}, step {step}")
            if step == 20:
                assert corrected["cc_hd95"] == pytest.approx(worst / 3, rel=1e-9)
                assert corrected["cc_hd"] == pytest.approx(worst / 3, rel=1e-9)


#: Comparison_to_SDice.ipynb, cell 7 (roll component 3, the r 20 ball); the loop stops after step 13
SDICE_CELL_7 = {
    1: {
        "G_Dice": 0.9989519715309143,
        "G_NSD": 0.9799709320068359,
        "CC_Dice": 0.9503361185391744,
        "CC_NSD": 0.778605729341507,
    },
    10: {
        "G_Dice": 0.9929659962654114,
        "G_NSD": 0.9698440432548523,
        "CC_Dice": 0.6666666666666666,
        "CC_NSD": 0.6666666666666666,
    },
    13: {
        "G_Dice": 0.9929659962654114,
        "G_NSD": 0.9677057862281799,
        "CC_Dice": 0.6666383743286133,
        "CC_NSD": 0.6657214164733887,
    },
}
#: Comparison_to_SDice.ipynb, cell 8 (roll component 2, the r 100 ball)
SDICE_CELL_8 = {
    1: {
        "G_Dice": 0.9735316634178162,
        "G_NSD": 0.48752865195274353,
        "CC_Dice": 0.9900047183036804,
        "CC_NSD": 0.7801492313543955,
    },
    25: {
        "G_Dice": 0.39310821890830994,
        "G_NSD": 0.23163004219532013,
        "CC_Dice": 0.7708184123039246,
        "CC_NSD": 0.670368442311883,
    },
}


@pytest.mark.parametrize("component, expected", [(3, SDICE_CELL_7), (2, SDICE_CELL_8)], ids=["cell7_r20", "cell8_r100"])
def test_fig3_bottom_matches_the_sdice_notebook(full, component, expected):
    """Comparison_to_SDice.ipynb cells 7 and 8; the r 20 ball's loop stops where the notebook's did (its
    output ends with "Expect 1 component to match" after step 13: the ball wrapped around and split)."""
    seen = []
    for pred, state in paper.roll_steps(full, component, 4, 25):
        seen.append(state.steps)
        if state.steps in expected:
            notebook, _ = both_views(full, pred)
            check(notebook, expected[state.steps], f"SDice notebook, component {component}, step {state.steps}")
            assert state.wrapped == (state.steps == 13)
    assert seen == list(range(14 if component == 3 else 26))


def test_the_tie_order_does_not_matter_on_the_paper_phantom(full):
    """The notebooks break Voronoi ties by cc3d's numbers, ccmetrics by raster order: on the predictions
    whose voxels leave their ball (the shifts) both give the same values, component by component."""
    cases = [paper.shift_clipped(full, 2, 100)]
    for pred, state in paper.roll_steps(full, 3, 4, 13):
        if state.steps == 13:
            cases.append(pred.copy())
    raster_to_cc3d = [1, 3, 2]  # raster 1 = r 50, 2 = r 20, 3 = r 100
    for pred in cases:
        box, truth = full.prepared(pred)  # a box holding both masks (tested below against the whole image)
        by_labels = evaluate(pred[box], truth, ALL, worst_distance=full.worst_distance).per_component
        by_components = evaluate(pred[box], full.case.gt[box], ALL, worst_distance=full.worst_distance).per_component
        for raster, number in enumerate(raster_to_cc3d, 1):
            for m in ("dice", "hd", "hd95", "nsd", "asd"):
                assert by_components.loc[raster, m] == by_labels.loc[number, m]


#: Comparison_to_LesionDice.ipynb, cell 6: (global Dice, CC-Dice) at steps 1, 5 and 20 (step i = i + 1 dilations)
LESION_DICE_CELL_6 = {
    1: (0.860538125038147, 0.860538125038147),
    5: (0.6380780935287476, 0.6380786498387655),
    20: (0.25868964195251465, 0.2591504355271657),
}


def test_fig2_bottom_matches_the_lesion_dice_notebook():
    """Comparison_to_LesionDice.ipynb cell 6 (its Lesion Dice was not printed: checked below against the
    notebook's algorithm)."""
    ref = paper.reference("lesion_dice", 1.0)
    for step, (dice, cc_dice) in LESION_DICE_CELL_6.items():
        pred = dilate(ref.case.gt, step + 1, "all")
        s = paper.score(pred, ref, ["dice"])
        assert close(s.standard["dice"], dice) and close(paper.monai_cc_mean(s.raw["dice"], s.empty, "dice"), cc_dice)
        assert lesion_dice(pred, ref.case.gt, dilation=0, min_volume=0).dice == pytest.approx(
            notebook_lesion_dice(pred, ref.case.gt), abs=1e-12
        )


# --------------------------------------------------------------------------------------------------
# independent computations on the quarter-size phantoms
# --------------------------------------------------------------------------------------------------


def notebook_lesion_dice(pred, gt):
    """The notebook's ``compute_brats_dice`` (its BraTS code with ``dil_factor=0``, volume threshold 0)."""
    cube = np.ones((3, 3, 3), bool)
    glab, n_gt = ndimage.label(gt, cube)
    plab, n_pred = ndimage.label(pred, cube)
    tp, total = set(), 0.0
    for g in range(1, n_gt + 1):
        lesion = glab == g
        hits = np.unique(plab[lesion])
        hits = hits[hits != 0]
        tp |= set(hits.tolist())
        union = np.isin(plab, hits)
        total += 2.0 * np.logical_and(union, lesion).sum() / (union.sum() + lesion.sum())
    fp = set(range(1, n_pred + 1)) - tp
    return total / (n_gt + len(fp))


def test_lesion_dice_balls_are_drawn_as_the_notebook_draws_them():
    """Comparison_to_LesionDice.ipynb cell 5: a loop over [c - r, c + r) per axis, (x-c)² + ... < r²."""
    expected = np.zeros((250, 250, 250), np.uint8)
    for center, radius in (((75, 75, 75), 30), ((145, 75, 75), 30), ((75, 160, 75), 30)):
        box = tuple(slice(c - radius, c + radius) for c in center)
        grids = np.ogrid[box]
        expected[box][sum((g - c) ** 2 for g, c in zip(grids, center)) < radius**2] = 1
    assert np.array_equal(paper.lesion_dice_balls().gt, expected.astype(bool))


def test_notebook_lesion_dice_on_merging_predictions():
    case = paper.lesion_dice_balls(0.25)
    for k in range(0, 7):
        pred = dilate(case.gt, k, "all")
        ours = lesion_dice(pred, case.gt, dilation=0, min_volume=0).dice
        assert ours == pytest.approx(notebook_lesion_dice(pred, case.gt), abs=1e-12), k


def test_erosions_equal_the_notebooks_whole_volume_loops(quick):
    gt, cc = quick.case.gt, quick.labels
    s = gt.copy()
    for step, (pred, _) in enumerate(paper.erode_steps(quick, [1, 2, 3], "cube", 6)):
        assert np.array_equal(pred, s), step
        s = ndimage.binary_erosion(s, structure=np.ones((3, 3, 3), bool))
    for component in (1, 3):
        s = gt.copy()
        for step, (pred, _) in enumerate(paper.erode_steps(quick, [component], "cross", 8)):
            assert np.array_equal(pred, s), (component, step)
            eroded = ndimage.binary_erosion(np.logical_and(s > 0, cc == component))
            s[cc == component] = 0
            s = np.logical_or(s, eroded)


def test_rolls_follow_the_notebooks_loop_and_stop_where_it_stops(quick):
    """The SDice notebook's loop (cells 7/8) written out with cc3d: the r 5 ball of the quarter-size phantom
    wraps around the border at step 4 of 4-voxel rolls, and the loop stops after it."""
    import cc3d

    gt = quick.case.gt
    component = quick.number(5)
    count = int(np.count_nonzero(quick.labels == component))
    s = gt.copy()
    expected = [s.copy()]
    for _ in range(25):
        cur_cc = cc3d.connected_components(np.asfortranarray(s, dtype=np.uint8))
        idx, counts = np.unique(cur_cc, return_counts=True)
        if np.sum(counts == count) != 1:
            break
        rolled = np.roll(cur_cc == idx[counts == count][0], axis=1, shift=4)
        s[cur_cc == idx[counts == count][0]] = 0
        s = np.logical_or(s, rolled)
        expected.append(s.copy())
    got = [(pred.copy(), state.wrapped) for pred, state in paper.roll_steps(quick, component, 4, 25)]
    assert len(got) == len(expected) == 5
    for (pred, _), want in zip(got, expected):
        assert np.array_equal(pred, want)
    assert [w for _, w in got] == [False, False, False, False, True]
    # without wrap-around, the corrected shift is the same prediction
    assert np.array_equal(paper.shift_clipped(quick, component, 12), expected[3])
    assert not np.array_equal(paper.shift_clipped(quick, component, 16), expected[4])


def notebook_pq(pred, gt):
    """The notebooks' ``panoptic_quality``: scipy's default (6-) connectivity, IoU > 0.5."""
    glab, k = ndimage.label(gt)
    plab, p = ndimage.label(pred)
    matches = []
    for g in range(1, k + 1):
        for q in range(1, p + 1):
            a, b = glab == g, plab == q
            iou = np.logical_and(a, b).sum() / np.logical_or(a, b).sum()
            if iou > 0.5:
                matches.append(iou)
    tp = len(matches)
    return sum(matches) / (tp + 0.5 * (p - tp) + 0.5 * (k - tp))


def monai_notebook(cc_labels, gt, pred):
    """The notebooks' ``compute_all_metrics`` with MONAI: global and per masked Voronoi region (float32 EDT)."""
    import torch
    import torch.nn.functional as F
    from monai.metrics import DiceMetric, HausdorffDistanceMetric, SurfaceDiceMetric, SurfaceDistanceMetric

    k = int(cc_labels.max())
    dts = [ndimage.distance_transform_edt(cc_labels != c).astype(np.float32) for c in range(1, k + 1)]
    assignment = np.argmin(np.stack(dts), axis=0) + 1
    metrics = {
        "dice": DiceMetric(include_background=False, reduction="mean"),
        "hd": HausdorffDistanceMetric(include_background=False, percentile=None, reduction="mean"),
        "hd95": HausdorffDistanceMetric(include_background=False, percentile=95, reduction="mean"),
        "asd": SurfaceDistanceMetric(include_background=False, symmetric=False, reduction="mean"),
        "nsd": SurfaceDiceMetric(class_thresholds=[1], include_background=False, reduction="mean"),
    }

    def one_hot(mask):
        return F.one_hot(torch.from_numpy(mask.astype(np.int64))[None], num_classes=2).permute(0, 4, 1, 2, 3)

    def run(p, g):
        out = {}
        for name, metric in metrics.items():
            metric(y_pred=one_hot(p), y=one_hot(g))
            out[name] = metric.aggregate().item()
            metric.reset()
        return out

    row = run(pred, gt)
    regions = [run(pred & (assignment == c), gt & (assignment == c)) for c in range(1, k + 1)]
    for name in metrics:
        row[f"cc_{name}"] = sum(r[name] for r in regions) / k
    return row


@pytest.mark.filterwarnings("ignore::UserWarning")  # MONAI: "the prediction of class 0 is all 0"
@pytest.mark.parametrize(
    "structure, components, step",
    [("cube", (1, 2, 3), 2), ("cube", (1, 2, 3), 4), ("cross", (3,), 2), ("cross", (3,), 6)],
)
def test_the_notebook_view_equals_monai_on_each_masked_region(quick, structure, components, step):
    """MONAI run exactly as the notebooks did, before and after the smallest ball vanished (cube erosion:
    step 3 at this scale; cross: step 5): the rule of MONAI_EMPTY_REGION and the ASD record reproduce it."""
    preds = [p.copy() for p, _ in paper.erode_steps(quick, components, structure, step)]
    pred = preds[step]
    notebook, corrected = both_views(quick, pred)
    expected = monai_notebook(quick.labels, quick.case.gt, pred)
    for column, theirs in expected.items():
        assert close(notebook[column], theirs), column
    vanished = not (pred & (quick.labels == quick.number(5))).any()
    assert vanished == (step >= 3 if structure == "cube" else step >= 5)
    if vanished:
        assert math.isinf(notebook["cc_hd"]) and math.isinf(notebook["cc_asd"])
        assert corrected["cc_hd95"] > notebook["cc_hd95"]


def test_pq_and_cc_pq_equal_the_notebooks_definition(quick):
    for step, (pred, _) in enumerate(paper.erode_steps(quick, [1, 2, 3], "cube", 4)):
        s = paper.score(pred, quick, ["dice", "pq"], pq6=True)
        assert s.pq6 == pytest.approx(notebook_pq(pred, quick.case.gt), abs=1e-12), step
        per = [notebook_pq(pred & (quick.labels == c), quick.labels == c) for c in (1, 2, 3)]
        assert s.cc_pq6 == pytest.approx(sum(per) / 3, abs=1e-12), step


def test_monai_cc_mean_rule():
    assert paper.monai_cc_mean([1.0, 5.0, 3.0], [False, True, False], "hd95") == pytest.approx(4 / 3)
    assert math.isinf(paper.monai_cc_mean([1.0, 5.0], [False, True], "asd"))
    assert paper.monai_cc_mean([0.5, 0.0], [False, True], "dice") == 0.25


# --------------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------------


def test_paper_quick_writes_every_panel_with_both_protocols(tmp_path, capsys):
    assert cli_main(["paper", "--quick", "--out", str(tmp_path), "--quiet"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["paper_fig2.png", "paper_fig3.png", "paper_per_component.csv", "paper_per_step.csv"]
    steps = pd.read_csv(tmp_path / "paper_per_step.csv", dtype={"figure": str})
    comps = pd.read_csv(tmp_path / "paper_per_component.csv")
    panels = set(map(tuple, steps[["figure", "panel", "scenario", "protocol"]].astype(str).to_numpy()))
    expected = {
        (figure, panel, scenario, protocol)
        for (figure, panel, scenario) in paper.PANELS
        for protocol in (("text",) if panel == "middle" else ("notebook", "corrected"))
    }
    assert panels == expected
    quick = paper.Steps.quick()
    counts = steps.groupby(["figure", "panel", "scenario", "protocol"]).size()
    assert counts[("2", "top", "erode_all", "notebook")] == quick.erode_all + 1
    assert counts[("3", "top", "erode_largest", "corrected")] == quick.erode_one + 1
    assert counts[("2", "bottom", "dilate_three_balls", "corrected")] == quick.dilate + 2  # dilations 0..21
    # the notebook's "largest" eroded ball is the r 50 one (here r 12.5), the corrected one the r 100
    largest = steps[steps["scenario"] == "erode_largest"].groupby("protocol")["target"].first()
    assert largest["notebook"].startswith("r 12.5 ball") and largest["corrected"].startswith("r 25 ball")
    # Fig. 3 top: the smallest ball vanishes at step 5 (cross, r 5): notebook CC-HD inf, CC-HD95 with a 0
    top = steps[(steps["scenario"] == "erode_smallest") & (steps["panel"] == "top")].set_index(["protocol", "step"])
    worst = image_diagonal((125, 125, 125))
    for step in (5, 6, 7):
        nb, co = top.loc[("notebook", step)], top.loc[("corrected", step)]
        assert math.isinf(nb["cc_hd"]) and math.isinf(nb["cc_asd"])
        assert co["cc_hd95"] - nb["cc_hd95"] == pytest.approx(worst / 3, rel=1e-9)
    # per-component rows: three per step and protocol, numbered 1..3 as cc3d does
    assert set(comps["component"]) == {1, 2, 3}
    assert len(comps) == 3 * len(steps)
    assert "4 files written" in capsys.readouterr().out


def test_both_lesion_dice_settings_agree_on_the_three_balls():
    """DIFFERENCES: the notebook's BraTS call (no lesion dilation, no threshold) and BraTS-2023 glioma's
    settings give the same Lesion Dice on the notebook's three balls, around both drops (6 and 13 dilations)."""
    ref = paper.reference("lesion_dice", 1.0)
    for k in (5, 6, 12, 13):
        pred = dilate(ref.case.gt, k, "all")
        assert lesion_dice(pred, ref.case.gt, dilation=0, min_volume=0).dice == lesion_dice(pred, ref.case.gt).dice


def test_the_readme_lists_every_difference():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "simulations.md").read_text()
    for line in paper.DIFFERENCES:
        assert f"- {line}\n" in readme, line
