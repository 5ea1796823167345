"""Every figure ccmetrics writes fits its canvas (issue 43, point 2): drawn as it is saved (120 dpi), no text leaves
the figure, and no legend covers a plotted point.

:func:`misfits` is the check, written once for every figure: it draws the figure on the Agg canvas and reads back,
in display coordinates (pixels), the window extent of every text artist drawn (titles, suptitles, axis labels, tick
labels of the ticks inside the view, legend texts, annotations) and the points of every scatter and marker line
inside their Axes; it returns a sentence for each text outside the canvas and for each point inside a legend's box.
The plot functions are run with small realistic tables: one metric (``--metrics dice``, as the README's probability
and subgroup examples run), many metrics, one case, NaN, a class without lesions, long names.
"""

import math

import numpy as np
import pandas as pd
import pytest

from ccmetrics.analysis import detection_plots, pet_plots, plots
from ccmetrics.metrics.calibration import lesion_reliability
from ccmetrics.metrics.detection_curves import CPM_RATES, detection_curves_from_entries

DPI = 120  # what write_plots, write_detection_plots and write_pet_plots save at
SLACK_PX = 1.0  # rounding of the renderer's extents


def _drawn_tick_labels(fig):
    """The tick labels matplotlib draws: those of ticks inside their axis's view interval (it keeps others)."""
    drawn, hidden = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            span = high - low
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                loc = tick.get_loc()
                inside = loc is not None and low - 1e-9 * span <= loc <= high + 1e-9 * span
                (drawn if inside and tick.get_visible() else hidden).update((tick.label1, tick.label2))
    return drawn, hidden - drawn


def _texts(fig):
    from matplotlib.text import Text

    _, hidden = _drawn_tick_labels(fig)
    for text in fig.findobj(Text):
        if text in hidden or not text.get_visible() or not text.get_text().strip():
            continue
        yield text


def _points(ax):
    """The display coordinates of every scatter point and line marker drawn inside ``ax``."""
    from matplotlib.collections import PathCollection

    found = []
    for collection in ax.collections:
        if isinstance(collection, PathCollection) and len(collection.get_offsets()):
            offsets = np.asarray(collection.get_offsets(), float)
            found.append(collection.get_offset_transform().transform(offsets))
    for line in ax.get_lines():
        if line.get_marker() not in (None, "None", "", " ") and len(line.get_xydata()):
            found.append(line.get_transform().transform(np.asarray(line.get_xydata(), float)))
    if not found:
        return np.zeros((0, 2))
    xy = np.concatenate(found)
    xy = xy[np.isfinite(xy).all(axis=1)]
    box = ax.bbox
    inside = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
    return xy[inside]


def misfits(fig, dpi=DPI):
    """What does not fit in ``fig`` drawn at ``dpi``: one sentence per text outside the canvas and per point under a
    legend (an empty list when everything fits)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.set_dpi(dpi)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    found = []
    for text in _texts(fig):
        box = text.get_window_extent(renderer)
        if box.x0 < -SLACK_PX or box.y0 < -SLACK_PX or box.x1 > width + SLACK_PX or box.y1 > height + SLACK_PX:
            found.append(
                f"text {text.get_text()!r} at x {box.x0:.0f}..{box.x1:.0f}, y {box.y0:.0f}..{box.y1:.0f} "
                f"leaves the {width:.0f} x {height:.0f} canvas"
            )
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            for x, y in _points(ax):
                if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1:
                    found.append(f"a point at ({x:.0f}, {y:.0f}) lies under the legend {box.bounds}")
    return found


# ---------------------------------------------------------------- the tables


def per_case(n=12, n_empty=3, metrics=("dice", "nsd", "hd95", "assd"), seed=0, cls=1, spacing="0.8x0.8x3"):
    """``n`` evaluated cases, the last ``n_empty`` with an empty GT, values as a run gives them."""
    rng = np.random.default_rng(seed)
    table = {
        "case": [f"case_{i:03d}" for i in range(n)],
        "class": cls,
        "status": "ok",
        "spacing": spacing,
        "empty_gt": [i >= n - n_empty for i in range(n)],
        "worst_distance": 310.0,
    }
    for m in metrics:
        if m in ("hd95", "assd", "hd"):
            table[m] = rng.uniform(1.0, 40.0, n)
            table[f"cc_{m}"] = rng.uniform(1.0, 120.0, n)
        else:
            table[m] = rng.uniform(0.55, 0.97, n)
            table[f"cc_{m}"] = rng.uniform(0.2, 0.95, n)
    return pd.DataFrame(table)


def per_component(n=40, seed=1):
    rng = np.random.default_rng(seed)
    volume = np.exp(rng.uniform(np.log(20.0), np.log(60000.0), n))
    detected = rng.random(n) < 0.75
    return pd.DataFrame(
        {
            "case": [f"case_{i % 9:03d}" for i in range(n)],
            "class": 1,
            "component": range(1, n + 1),
            "volume": volume.round().astype(int),
            "volume_mm3": volume,
            "detected": detected,
            "worst_distance": 310.0,
            "dice": np.where(detected, rng.uniform(0.3, 0.95, n), 0.0),
            "hd95": np.where(detected, rng.uniform(1.0, 30.0, n), math.inf),
            "suv_max": rng.uniform(1.5, 25.0, n),
        }
    )


def pet_cases(n=10, seed=2):
    rng = np.random.default_rng(seed)
    gt = np.exp(rng.uniform(np.log(2.0), np.log(900.0), n))
    pred = gt * rng.uniform(0.7, 1.3, n)
    return pd.DataFrame(
        {"case": [f"case_{i}" for i in range(n)], "class": 1, "status": "ok", "gt_tmtv_ml": gt, "pred_tmtv_ml": pred}
    )


def curves(n_cases=20, seed=3):
    rng = np.random.default_rng(seed)
    cases = [f"c{i}" for i in range(n_cases)]
    entry_case, target, confidence = [], [], []
    for i, c in enumerate(cases):
        for _ in range(i % 3):  # lesions, most found
            entry_case.append(c), target.append(1), confidence.append(float(rng.uniform(0.3, 1.0)))
        for _ in range(int(rng.integers(0, 12))):  # false positives: up to 11 a case, so the FROC reaches 8
            entry_case.append(c), target.append(0), confidence.append(float(rng.uniform(0.01, 0.9)))
    case_target = [int(i % 3 > 0) for i in range(n_cases)]
    case_confidence = [max([s for e, s in zip(entry_case, confidence) if e == c], default=0.0) for c in cases]
    return detection_curves_from_entries(
        entry_case, target, confidence, cases, case_target, case_confidence, n_resamples=50
    )


def threshold_means():
    thresholds = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    dice = [0.55, 0.62, 0.70, 0.74, 0.76, 0.75, 0.71, 0.64, 0.50]
    return pd.DataFrame(
        {
            "class": 1,
            "threshold": thresholds,
            "n": 9,
            "dice": dice,
            "cc_dice": [d - 0.1 for d in dice],
            "hd95": [30 - 2 * i for i in range(9)],
            "cc_hd95": [60 - 3 * i for i in range(9)],
        }
    )


# ---------------------------------------------------------------- the figures


def _nan_and_inf():
    table = per_case(metrics=("dice", "hd95"))
    table.loc[:4, ["dice", "cc_hd95"]] = np.nan
    table.loc[5, "hd95"] = math.inf
    return table


def _comparison(n_methods, seed):
    names = ["nnUNet_3d_fullres", "SwinUNETR_v2", "SegResNet", "UNETR", "MedNeXt_L", "STU-Net_B"][:n_methods]
    scores = pd.DataFrame(np.random.default_rng(seed).uniform(0.4, 0.95, (10, n_methods)), columns=names)
    return plots.plot_comparison(scores, scores.rank(axis=1).mean(), "cc_dice")


BEST = {"1/dice": {"standard": 0.5, "cc": 0.5}, "1/hd95": {"standard": 0.9, "cc": 0.9}}


def _threshold_panels():
    panels = plots._figure((10, 4), ncols=2)  # as write_threshold_plots draws two metrics
    for ax, m in zip(panels, ("dice", "hd95")):
        detection_plots.plot_thresholds(threshold_means(), BEST, m, ax=ax)
    return panels[0].figure


def _reliability():
    rng = np.random.default_rng(6)
    confidence = rng.uniform(0, 1, 200)
    outcome = np.where(rng.uniform(0, 1, 200) < confidence, "tp", "fp")
    return detection_plots.plot_reliability(
        lesion_reliability(pd.DataFrame({"confidence": confidence, "outcome": outcome}))
    )


def _few_curves():
    return detection_curves_from_entries(["a", "b"], [1, 0], [0.5, 0.9], ["a", "b"], [1, 0], [0.5, 0.9], n_resamples=0)


GROUPS = {f"case_{i:03d}": (("scanner A", "site 1"), ("scanner B", "site 2"))[i % 2] for i in range(12)}

#: every figure the package draws, in the cases that strain it: name -> a function that draws it
FIGURES = {
    "one metric (--metrics dice)": lambda: plots.plot_case_distribution(per_case(metrics=("dice",)), ["dice"]),
    "one metric, many errors": lambda: plots.plot_case_distribution(
        per_case(metrics=("dice",)).assign(status=["error"] * 4 + ["ok"] * 8), ["dice"]
    ),
    "one CC column": lambda: plots.plot_case_distribution(per_case(metrics=("dice",)), ["cc_dice"]),
    "one distance": lambda: plots.plot_case_distribution(per_case(metrics=("hd95",)), ["hd95"]),
    "four metrics": lambda: plots.plot_case_distribution(per_case()),
    "five metrics": lambda: plots.plot_case_distribution(per_case(metrics=("dice", "nsd", "hd95", "assd", "hd"))),
    "one case": lambda: plots.plot_case_distribution(per_case(n=2, n_empty=1), ["dice"]),
    "NaN and inf": lambda: plots.plot_case_distribution(_nan_and_inf()),
    "no case with lesions": lambda: plots.plot_case_distribution(per_case(n=3, n_empty=3, metrics=("dice",)), ["dice"]),
    "a class without lesions": lambda: plots.plot_case_distribution(
        per_case(metrics=("dice",)), ["dice"], class_value=2
    ),
    "voxel spacing": lambda: plots.plot_case_distribution(per_case(metrics=("hd95",), spacing="voxel"), ["hd95"]),
    "metric vs volume": lambda: plots.plot_metric_vs_volume(per_component()),
    "metric vs volume, distance": lambda: plots.plot_metric_vs_volume(per_component(), "hd95"),
    "metric vs volume, one lesion": lambda: plots.plot_metric_vs_volume(per_component().iloc[:1]),
    "metric vs volume, NaN": lambda: plots.plot_metric_vs_volume(per_component().assign(dice=np.nan)),
    "standard vs cc": lambda: plots.plot_standard_vs_cc(per_case()),
    "standard vs cc, distance": lambda: plots.plot_standard_vs_cc(per_case(), "hd95"),
    "standard vs cc, one case": lambda: plots.plot_standard_vs_cc(per_case(n=2, n_empty=1)),
    "standard vs cc, two classes": lambda: plots.plot_standard_vs_cc(pd.concat([per_case(), per_case(cls=2, seed=5)])),
    "detection by size": lambda: plots.plot_detection_by_size(per_component()),
    "detection by size, one lesion": lambda: plots.plot_detection_by_size(per_component().iloc[:1]),
    "by group": lambda: plots.plot_by_group(per_case(), GROUPS, "cc_dice", "scanner / site"),
    "comparison, two methods": lambda: _comparison(2, 4),
    "comparison, six methods": lambda: _comparison(6, 5),
    "FROC": lambda: detection_plots.plot_froc(curves()).figure,
    "FROC, two cases": lambda: detection_plots.plot_froc(_few_curves()).figure,
    "PR": lambda: detection_plots.plot_pr(curves()).figure,
    "ROC": lambda: detection_plots.plot_roc(curves()).figure,
    "thresholds": lambda: detection_plots.plot_thresholds(threshold_means(), BEST, "dice").figure,
    "thresholds, distance": lambda: detection_plots.plot_thresholds(threshold_means(), BEST, "hd95").figure,
    "thresholds, two panels": _threshold_panels,
    "reliability": lambda: _reliability().figure,
    "Bland-Altman": lambda: pet_plots.plot_bland_altman(pet_cases()),
    "Bland-Altman, one case": lambda: pet_plots.plot_bland_altman(pet_cases(n=1)),
    "pred vs ref": lambda: pet_plots.plot_pred_vs_ref(pet_cases()),
    "detection by SUVmax": lambda: pet_plots.plot_detection_by_suv(per_component()),
}


@pytest.mark.parametrize("name", list(FIGURES))
def test_the_figure_fits(name):
    assert misfits(FIGURES[name]()) == []


def test_the_check_finds_a_clipped_title_and_a_covered_point():
    """The check itself: a title wider than its figure and a legend over a point are found."""
    fig = plots._figure((2.0, 2.0))[0].figure
    ax = fig.axes[0]
    ax.set_title("a title far wider than a figure two inches wide can show")
    ax.scatter([0.5], [0.5], label="a point")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="center")
    found = misfits(fig)
    assert any(f.startswith("text 'a title far wider") for f in found)
    assert any("under the legend" in f for f in found)


def test_written_figures_fit(tmp_path):
    """write_plots with one metric, as ``ccmetrics evaluate GT PRED --metrics dice`` draws them."""
    import matplotlib.image

    paths = plots.write_plots(per_component(), per_case(metrics=("dice",)), tmp_path, metrics=["dice"])
    assert [p.name for p in paths] == [
        "metric_vs_volume_dice.png",
        "detection_by_size.png",
        "standard_vs_cc_dice.png",
        "case_distribution.png",
    ]
    width_px = matplotlib.image.imread(paths[-1]).shape[1]
    assert width_px > 3.6 * DPI  # wider than the 3.6 inches one metric gave, which cut its caption at both ends


def test_case_distribution_of_one_metric_shows_its_caption_whole():
    """The issue's figure: ``--metrics dice``, 9 cases with lesions and 3 empty-GT cases."""
    fig = plots.plot_case_distribution(per_case(metrics=("dice",)), ["dice"])
    assert fig.get_suptitle() == "Per-case scores\nn = 9 cases with lesions; 3 empty-GT cases not shown"
    assert misfits(fig) == []


def test_distance_axes_name_their_unit():
    fig = plots.plot_case_distribution(per_case(metrics=("dice", "nsd", "hd95", "assd")))
    assert [ax.get_ylabel() for ax in fig.axes] == ["score", "distance (mm)"]
    fig = plots.plot_case_distribution(per_case(metrics=("dice", "hd95")))
    assert [ax.get_ylabel() for ax in fig.axes] == ["Dice", "HD95 (mm)"]
    fig = plots.plot_case_distribution(per_case(metrics=("hd95",), spacing="voxel"), ["hd95"])
    assert [ax.get_ylabel() for ax in fig.axes] == ["HD95 (voxels)"]
    fig = plots.plot_case_distribution(per_case(metrics=("nsd",)), ["nsd"])
    assert [ax.get_ylabel() for ax in fig.axes] == ["NSD"]  # a score: no unit
    mixed = pd.concat([per_case(metrics=("hd95",)), per_case(metrics=("hd95",), spacing="voxel")])
    fig = plots.plot_case_distribution(mixed, ["hd95"])
    assert [ax.get_ylabel() for ax in fig.axes] == ["HD95 (mm or voxels)"]
    ax = plots.plot_metric_vs_volume(per_component(), "hd95").axes[0]
    assert ax.get_ylabel() == "HD95 per lesion (mm)"
    ax = plots.plot_metric_vs_volume(per_component().assign(volume_mm3=np.nan), "hd95").axes[0]
    assert ax.get_ylabel() == "HD95 per lesion (voxels)"
    ax = plots.plot_standard_vs_cc(per_case(), "hd95").axes[0]
    labels = ax.get_xlabel(), ax.get_ylabel()
    assert labels == ("standard HD95 (global, per case; mm)", "CC-HD95 (mean over lesions; mm)")
    ax = plots.plot_standard_vs_cc(per_case(), "dice").axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("standard Dice (global, per case)", "CC-Dice (mean over lesions)")


def test_froc_ticks_at_the_cpm_rates_and_the_8_fp_point_whole():
    ax = detection_plots.plot_froc(curves())
    fig = ax.figure
    assert misfits(fig) == []
    labels = {round(t.get_loc(), 6): t.label1.get_text() for t in ax.xaxis.get_major_ticks()}
    low, high = ax.get_xlim()
    shown = {loc: text for loc, text in labels.items() if low <= loc <= high}
    assert shown == {0.0: "0", 0.125: "1/8", 0.25: "1/4", 0.5: "1/2", 1.0: "1", 2.0: "2", 4.0: "4", 8.0: "8"}
    assert [text.get_text() for text in ax.get_xminorticklabels() if text.get_text()] == []
    markers = next(line for line in ax.get_lines() if line.get_marker() == "o")
    assert list(markers.get_xdata()) == list(CPM_RATES)
    x8, _ = ax.transData.transform((8.0, 0.5))
    radius_px = markers.get_markersize() / 2 * DPI / 72
    assert x8 + radius_px < ax.bbox.x1  # the 8 FP marker whole, inside the axes
