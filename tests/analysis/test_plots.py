"""ccmetrics.analysis.plots: what the figures draw, and the files write_plots writes."""

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ccmetrics.analysis import plots

PNG = b"\x89PNG\r\n\x1a\n"


def points(ax):
    """All scatter points drawn in ax, as an (n, 2) array."""
    offsets = [c.get_offsets() for c in ax.collections if len(c.get_offsets())]
    return np.concatenate(offsets) if offsets else np.zeros((0, 2))


def components(volume_mm3=(50.0, 60.0, 80.0, 500.0, 5000.0, 20000.0), detected=(1, 0, 0, 1, 1, 1), cls=1):
    n = len(volume_mm3)
    dice = [0.8 if d else 0.0 for d in detected]
    hd95 = [3.0 if d else math.inf for d in detected]
    return pd.DataFrame(
        {
            "case": [f"c{i % 2}" for i in range(n)],
            "class": cls,
            "component": range(1, n + 1),
            "volume": [int(v) for v in volume_mm3],
            "volume_mm3": list(volume_mm3),
            "detected": np.asarray(detected, bool),
            "worst_distance": 100.0,
            "dice": dice,
            "hd95": hd95,
        }
    )


def cases(cls=1):
    return pd.DataFrame(
        {
            "case": ["a", "b", "c", "d", "e", "f"],
            "class": cls,
            "status": ["ok", "ok", "flagged", "ok", "error", "ok"],
            "empty_gt": [False, False, False, False, False, True],
            "dice": [0.9, 0.8, 0.7, 0.6, np.nan, 1.0],
            "cc_dice": [0.5, 0.8, 0.3, 0.65, np.nan, 1.0],
            "hd95": [2.0, math.inf, 5.0, 1.0, np.nan, 0.0],
            "cc_hd95": [40.0, 9.0, 3.0, 1.0, np.nan, 0.0],
        }
    )


def test_import_does_not_load_matplotlib():
    code = "import sys, ccmetrics.analysis.plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_metric_vs_volume_log_x_and_missed_marked():
    fig = plots.plot_metric_vs_volume(components())
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "lesion volume (ml, log scale)"  # ml, as everywhere else
    detected, missed = (c.get_offsets() for c in ax.collections[:2])
    assert sorted(detected[:, 0]) == [0.05, 0.5, 5.0, 20.0] and sorted(missed[:, 0]) == [0.06, 0.08]
    assert list(missed[:, 1]) == [0.0, 0.0]
    labels = ax.get_legend_handles_labels()[1]
    assert "missed (2)" in labels and any(lbl.startswith("volume-weighted mean") for lbl in labels)


def test_metric_vs_volume_voxels_without_spacing_and_worst_distance():
    table = components().assign(volume_mm3=np.nan)
    ax = plots.plot_metric_vs_volume(table, "hd95").axes[0]
    assert "voxels" in ax.get_xlabel()
    assert sorted(points(ax)[:, 1]) == [3.0] * 4 + [100.0] * 2  # missed lesions at worst_distance
    # without worst_distance, infinite values are dropped and counted
    ax = plots.plot_metric_vs_volume(table.drop(columns="worst_distance"), "hd95").axes[0]
    assert len(points(ax)) == 4 and "2 not drawn" in ax.get_title()


def test_standard_vs_cc_excludes_error_empty_and_non_finite():
    ax = plots.plot_standard_vs_cc(cases()).axes[0]
    xy = points(ax)
    assert sorted(map(tuple, xy)) == [(0.6, 0.65), (0.7, 0.3), (0.8, 0.8), (0.9, 0.5)]
    title = " ".join(ax.get_title().split())
    assert "n = 4 cases with lesions; 1 empty-GT case not shown; 1 error row skipped" in title
    identity = ax.lines[0].get_xydata()
    assert identity[0, 0] == identity[0, 1] <= 0.3 and identity[1, 0] == identity[1, 1] >= 0.9
    assert ax.get_xlim() == ax.get_ylim() and ax.get_aspect() == 1.0
    ax = plots.plot_standard_vs_cc(cases(), "hd95").axes[0]
    assert len(points(ax)) == 3 and "1 non-finite value dropped" in " ".join(ax.get_title().split())


def test_standard_vs_cc_class_filter_and_given_ax():
    table = pd.concat([cases(1), cases(2).assign(dice=0.1)])
    ax = plots.plot_standard_vs_cc(table, class_value=2).axes[0]
    assert len(points(ax)) == 4 and set(points(ax)[:, 0]) == {0.1} and "class 2" in ax.get_title()
    from matplotlib.figure import Figure

    fig = Figure()
    axes = fig.subplots(1, 2)
    assert plots.plot_standard_vs_cc(table, ax=axes[1]) is fig
    assert len(points(axes[1])) == 8 and len(axes[1].collections) == 2  # one colour per class


def test_case_distribution_groups_and_counts():
    fig = plots.plot_case_distribution(cases())
    overlap, distance = fig.axes
    assert [t.get_text() for t in overlap.get_xticklabels()] == ["dice", "cc_dice"]
    assert [t.get_text() for t in distance.get_xticklabels()] == ["hd95", "cc_hd95"]
    assert len(points(overlap)) == 8 and len(points(distance)) == 7  # 4 usable cases, one inf hd95
    assert "n = 4 cases with lesions; 1 empty-GT case not shown" in fig.get_suptitle()
    fig = plots.plot_case_distribution(cases(), ["cc_dice"])
    assert len(fig.axes) == 1 and len(points(fig.axes[0])) == 4


def test_detection_by_size_hand_computed_rates():
    # 3 lesions < 0.1 ml (1 detected), 1 in 0.1-1 ml (detected), none in 1-10 ml, 1 >= 10 ml (detected)
    table = components((50.0, 60.0, 80.0, 500.0, 20000.0), (1, 0, 0, 1, 1))
    ax = plots.plot_detection_by_size(table).axes[0]
    assert [p.get_height() for p in ax.patches] == pytest.approx([1 / 3, 1.0, 0.0, 1.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["<0.1 ml", "0.1–1 ml", "1–10 ml", "≥10 ml"]
    assert [t.get_text() for t in ax.texts] == ["1/3", "1/1", "n = 0", "1/1"]
    ax = plots.plot_detection_by_size(table.assign(volume_mm3=np.nan), bins=[0, 100, math.inf]).axes[0]
    assert [p.get_height() for p in ax.patches] == pytest.approx([1 / 3, 1.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["<100 vx", "≥100 vx"]


def test_comparison_orders_methods_by_mean_rank():
    scores = pd.DataFrame({"A": [0.5, 0.6, 0.7], "B": [0.9, 0.8, 0.75]}, index=["x", "y", "z"])
    ranks = scores.rank(axis=1, ascending=False).mean()
    left, right = plots.plot_comparison(scores, ranks, "cc_dice").axes
    assert [t.get_text() for t in right.get_xticklabels()] == ["B", "A"]
    assert [p.get_height() for p in right.patches] == [1.0, 2.0]
    assert len(points(left)) == 6
    with pytest.raises(ValueError, match="'C'"):
        plots.plot_comparison(scores, pd.Series({"C": 1.0}), "dice")


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="'nsd'"):
        plots.plot_metric_vs_volume(components(), "nsd")
    with pytest.raises(ValueError, match="'detected'"):
        plots.plot_detection_by_size(components().drop(columns="detected"))
    with pytest.raises(ValueError, match="'cc_dice'"):
        plots.plot_standard_vs_cc(cases().drop(columns="cc_dice"))
    with pytest.raises(ValueError, match="'volume'"):
        plots.plot_metric_vs_volume(components().drop(columns=["volume", "volume_mm3"]))
    with pytest.raises(ValueError, match="'iou'"):
        plots.plot_case_distribution(cases(), ["iou"])


def test_write_plots_files(tmp_path):
    paths = plots.write_plots(components(), cases(), tmp_path / "figs")
    assert [p.name for p in paths] == [
        "metric_vs_volume_dice.png",
        "detection_by_size.png",
        "standard_vs_cc_dice.png",
        "standard_vs_cc_hd95.png",
        "case_distribution.png",
    ]
    for p in paths:
        assert p.parent == tmp_path / "figs" and p.read_bytes()[:8] == PNG
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == sorted(p.name for p in paths)


def test_write_plots_multiclass_empty_and_metric_choice(tmp_path):
    comp = pd.concat([components(cls=1), components(cls=2)])
    paths = plots.write_plots(comp, pd.concat([cases(1), cases(2)]), tmp_path, metrics=["hd95"])
    names = {p.name for p in paths}
    assert names == {
        f"{stem}_class{k}.png"
        for k in (1, 2)
        for stem in ("detection_by_size", "standard_vs_cc_hd95", "case_distribution")
    }
    assert all(p.read_bytes()[:8] == PNG for p in paths)
    only_cases = plots.write_plots(components().iloc[:0], cases(), tmp_path / "b")
    assert [p.name for p in only_cases][-1] == "case_distribution.png" and len(only_cases) == 3
    assert plots.write_plots(None, pd.DataFrame(), tmp_path / "c") == []
    no_detected = plots.write_plots(components().drop(columns="detected"), None, tmp_path / "d")
    assert [p.name for p in no_detected] == ["metric_vs_volume_dice.png"]


def test_empty_prediction_distance_plotted_at_the_worst_distance():
    # the rule of the summary: a non-finite distance counts as the case's worst distance
    per_case = pd.DataFrame(
        {
            "case": ["a", "b"],
            "class": [1, 1],
            "status": ["ok", "flagged"],
            "empty_gt": [False, False],
            "hd95": [3.0, math.inf],
            "cc_hd95": [4.0, 50.0],
            "worst_distance": [40.0, 50.0],
        }
    )
    fig = plots.plot_standard_vs_cc(per_case, "hd95")
    points = fig.axes[0].collections[0].get_offsets()
    assert np.asarray(points).tolist() == [[3.0, 4.0], [50.0, 50.0]]
    assert "dropped" not in fig.axes[0].get_title()


# ---------------------------------------------------------------- issue 30: units, counts and legends


def test_volume_axes_are_in_ml_with_plain_tick_labels():
    """Issue 30: the metric-vs-volume plot was in mm³, every other volume of the summary and report in ml."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    table = components((800.0, 1500.0, 4000.0, 9000.0, 22000.0, 45000.0))
    ax = plots.plot_metric_vs_volume(table).axes[0]
    assert "mm" not in ax.get_xlabel() and "ml" in ax.get_xlabel()
    assert sorted(points(ax)[:, 0]) == pytest.approx(table["volume_mm3"].to_numpy() / 1000)
    FigureCanvasAgg(ax.figure).draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and 0.8 <= t.get_position()[0] <= 45]
    assert labels == ["1", "10"]  # 1 ml and 10 ml, not 10^0 and 10^1
    ax = plots.plot_detection_by_size(table).axes[0]
    assert ax.get_xlabel() == "lesion size (ml)"


def test_counts_take_the_singular_for_one():
    """Issue 30: "1 empty-GT cases"."""
    one = cases().iloc[[0, 5]]  # a case with lesions and an empty-GT case
    ax = plots.plot_standard_vs_cc(one).axes[0]
    title = " ".join(ax.get_title().split())
    assert "n = 1 case with lesions; 1 empty-GT case not shown" in title and "cases" not in title
    fig = plots.plot_case_distribution(one)
    assert "n = 1 case with lesions; 1 empty-GT case not shown" in " ".join(fig.get_suptitle().split())
    assert plots._caption(2, 0, 1, 1) == "n = 2 cases with lesions; 1 error row skipped; 1 non-finite value dropped"
    ax = plots.plot_metric_vs_volume(components((500.0,), (1,))).axes[0]
    assert ax.get_title().endswith("\n1 lesion")
    ax = plots.plot_detection_by_size(components((500.0,), (1,))).axes[0]
    assert ax.get_title() == "Lesion detection by size (1 lesion)"


def test_nothing_to_show_draws_no_legend_and_warns_nothing():
    """Issue 30: matplotlib's "No artists with labels found to put in legend" leaked out."""
    import warnings

    failed = cases().assign(status="error")
    no_lesions = cases().assign(empty_gt=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for table in (failed, no_lesions):
            ax = plots.plot_standard_vs_cc(table, "dice").axes[0]
            assert ax.get_legend() is None and len(points(ax)) == 0
        ax = plots.plot_standard_vs_cc(cases(), "dice").axes[0]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["identity (CC = standard)"]
        ax = plots.plot_metric_vs_volume(components().assign(dice=np.nan)).axes[0]
        assert ax.get_legend() is None


@pytest.mark.slow
@pytest.mark.parametrize("run", ["classes", "every_case_failed"])
def test_evaluate_writes_its_plots_without_a_warning(tmp_path, run):
    """Issue 30: ``ccmetrics evaluate --classes 1,2`` (class 2 absent: every case an empty GT) and a run whose every
    case failed printed matplotlib's legend warning; the real command, warnings made errors."""
    import shutil
    import warnings
    from pathlib import Path

    from ccmetrics.cli import main

    examples = Path(__file__).resolve().parents[2] / "examples" / "data"
    gt, pred, extra = examples / "gt", examples / "pred", ["--classes", "1,2"]
    if run == "every_case_failed":
        gt, pred, extra = tmp_path / "gt", tmp_path / "pred", []
        gt.mkdir()
        pred.mkdir()
        for name in ("case_001.nii.gz", "case_002.nii.gz"):
            shutil.copy(examples / "gt" / name, gt / name)
            (pred / name).write_bytes(b"not an image")  # each case fails to read
    out = tmp_path / "results"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(
            ["evaluate", str(gt), str(pred), "--out-dir", str(out), "--metrics", "dice,hd95", "--quiet", *extra]
        )
    assert code == (0 if run == "classes" else 1)  # 1: a case failed
    per_case = pd.read_csv(out / "per_case.csv")
    written = sorted(p.name for p in (out / "plots").glob("*.png"))
    if run == "classes":
        assert set(per_case["class"]) == {1, 2} and per_case.loc[per_case["class"] == 2, "empty_gt"].all()
        assert "standard_vs_cc_dice_class2.png" in written and "case_distribution_class2.png" in written
    else:
        assert (per_case["status"] == "error").all() and len(per_case) == 2
        assert written == ["case_distribution.png", "standard_vs_cc_dice.png", "standard_vs_cc_hd95.png"]
