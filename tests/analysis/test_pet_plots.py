"""The PET figures (analysis.pet_plots): what is drawn read back from the matplotlib Axes and compared with numbers
worked out by hand (bias, limits of agreement, the points, the identity line, the bars), the choice of log axes at
the two-decade boundary, the files per class and their names, and nothing drawn without the ``pet`` columns."""

from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest

from ccmetrics import schema
from ccmetrics.analysis.pet_plots import plot_bland_altman, plot_detection_by_suv, plot_pred_vs_ref, write_pet_plots
from ccmetrics.analysis.plots import write_result_plots
from ccmetrics.report.data import label
from ccmetrics.report.model import _plot_caption

matplotlib.use("Agg")


def _hand_cases():
    # diff = pred − gt = 2, −1, 5, 1: bias 1.75; deviations .25, −2.75, 3.25, −.75, squares sum 18.75, / 3 = 6.25,
    # SD 2.5; limits 1.75 ∓ 1.96 × 2.5 = −3.15 and 6.65
    return pd.DataFrame(
        {
            "case": list("abcdef"),
            "class": [1, 1, 1, 1, 1, 2],
            "status": ["ok", "ok", "flagged", "ok", "error", "ok"],
            "gt_tmtv_ml": [10.0, 20.0, 30.0, 40.0, 5.0, 7.0],
            "pred_tmtv_ml": [12.0, 19.0, 35.0, 41.0, 500.0, 9.0],
            "gt_tlg": [10.0, 20.0, 30.0, 40.0, 5.0, 7.0],
            "pred_tlg": [12.0, 19.0, 35.0, 41.0, 500.0, 9.0],
        }
    )


def test_bland_altman_legend_and_lines_are_the_hand_numbers():
    ax = plot_bland_altman(_hand_cases(), "tmtv_ml", class_value=1).axes[0]  # the error row and class 2 left out
    lines = ax.get_lines()
    assert [line.get_ydata()[0] for line in lines] == pytest.approx([1.75, -3.15, 6.65])
    assert [line.get_linestyle() for line in lines] == ["-", "--", "--"]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["4 cases", "bias 1.75", "limits of agreement -3.15 to 6.65"]
    points = ax.collections[0].get_offsets()
    assert np.allclose(points[:, 0], [11.0, 19.5, 32.5, 40.5]) and np.allclose(points[:, 1], [2.0, -1.0, 5.0, 1.0])
    assert ax.get_xscale() == "linear"  # means 11 to 40.5: under a decade
    assert ax.get_title() == "Bland–Altman, TMTV (ml) (class 1)"


def test_bland_altman_one_case_has_a_bias_and_no_limits():
    ax = plot_bland_altman(_hand_cases(), "tlg", class_value=2).axes[0]
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [2.0]  # SD needs two cases
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["1 case", "bias 2"]


def test_bland_altman_log_axis_at_the_two_decade_boundary_and_zero_means_counted():
    # means 1 and 100 exactly: two decades, not more: linear; 1 and 100.5: log
    at = pd.DataFrame({"gt_tlg": [1.0, 100.0], "pred_tlg": [1.0, 100.0]})
    assert plot_bland_altman(at, "tlg").axes[0].get_xscale() == "linear"
    over = pd.DataFrame({"gt_tlg": [1.0, 100.0, 0.0], "pred_tlg": [1.0, 101.0, 0.0]})
    ax = plot_bland_altman(over, "tlg").axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.texts] == ["1 case with mean 0 not shown (log axis)"]
    # the hidden case still counts in the statistics: diffs 0, 1, 0 → bias 1/3, SD √(1/3)
    bias, sd = 1 / 3, np.sqrt(((0 - 1 / 3) ** 2 * 2 + (2 / 3) ** 2) / 2)
    assert [line.get_ydata()[0] for line in ax.get_lines()] == pytest.approx([bias, bias - 1.96 * sd, bias + 1.96 * sd])


def test_pred_vs_ref_points_identity_and_log_choice():
    ax = plot_pred_vs_ref(_hand_cases(), "tlg", class_value=1).axes[0]
    assert np.allclose(ax.collections[0].get_offsets(), [[10, 12], [20, 19], [30, 35], [40, 41]])
    identity = ax.get_lines()[0]
    assert list(identity.get_xdata()) == [10.0, 41.0] and list(identity.get_ydata()) == [10.0, 41.0]
    assert ax.get_xscale() == ax.get_yscale() == "linear"
    assert ax.get_title() == "Model vs reference, TLG (ml) (class 1): 4 cases"
    # linear axes draw the zeros: nothing hidden, nothing said
    zeros = pd.DataFrame({"gt_tlg": [0.0, 3.0, 9.0], "pred_tlg": [2.0, 0.0, 9.0]})
    ax = plot_pred_vs_ref(zeros, "tlg").axes[0]
    assert len(ax.collections[0].get_offsets()) == 3 and ax.get_title().endswith(": 3 cases")
    # values 0.5 to 300 (over two decades): log-log; the two cases with a 0 on either side are counted, not drawn
    wide = pd.DataFrame({"gt_tlg": [0.5, 300.0, 0.0, 4.0], "pred_tlg": [0.6, 250.0, 1.0, 0.0]})
    ax = plot_pred_vs_ref(wide, "tlg").axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert np.allclose(ax.collections[0].get_offsets(), [[0.5, 0.6], [300.0, 250.0]])
    assert list(ax.get_lines()[0].get_xdata()) == [0.5, 300.0]
    assert ax.get_title() == "Model vs reference, TLG (ml): 4 cases, 2 with a 0 not shown (log axes)"


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match=r"no column 'gt_tlg': evaluate with --metrics \.\.\.,pet"):
        plot_bland_altman(pd.DataFrame({"pred_tlg": [1.0]}), "tlg")
    with pytest.raises(ValueError, match="no column 'pred_tmtv_ml'"):
        plot_pred_vs_ref(pd.DataFrame({"gt_tmtv_ml": [1.0]}), "tmtv_ml")
    with pytest.raises(ValueError, match="'detected'"):
        plot_detection_by_suv(pd.DataFrame({"suv_max": [1.0]}))


def _hand_lesions():
    return pd.DataFrame(
        {
            "case": ["a", "a", "b", "f", "f", "e"],
            "class": [1, 1, 1, 2, 2, 1],
            "suv_max": [1.0, 5.0, 12.0, 5.5, 20.0, 3.0],
            "detected": [False, True, True, True, False, True],
        }
    )


def test_detection_by_suv_bars_per_class_and_pooled():
    lesions = _hand_lesions()
    one = plot_detection_by_suv(lesions, class_value=1, bins=[4.0]).axes[0]
    # class 1: <4: 1.0 (missed), 3.0 (found) | ≥4: 5.0, 12.0 (both found)
    assert [t.get_text() for t in one.texts] == ["1/2", "2/2"]
    assert [p.get_height() for p in one.patches] == [0.5, 1.0]
    assert [t.get_text() for t in one.get_xticklabels()] == ["<4 SUV", "≥4 SUV"]
    assert one.get_title() == "Lesion detection by SUVmax (class 1) (4 lesions)"
    pooled = plot_detection_by_suv(lesions, bins=[4.0]).axes[0]  # both classes: ≥4 holds 5.0, 12.0, 5.5, 20.0
    assert [t.get_text() for t in pooled.texts] == ["1/2", "3/4"]
    assert pooled.get_title() == "Lesion detection by SUVmax (6 lesions)"


def _result(per_case, per_component):
    return SimpleNamespace(per_case=per_case, per_component=per_component, options={}, columns={})


def test_files_per_class_their_names_and_captions(tmp_path):
    paths = write_pet_plots(_result(_hand_cases(), _hand_lesions()), tmp_path, suv_bins=[4.0])
    names = [p.name for p in paths]
    assert names == [
        "bland_altman_tmtv_ml_class1.png", "pred_vs_ref_tmtv_ml_class1.png",
        "bland_altman_tlg_class1.png", "pred_vs_ref_tlg_class1.png", "detection_by_suv_class1.png",
        "bland_altman_tmtv_ml_class2.png", "pred_vs_ref_tmtv_ml_class2.png",
        "bland_altman_tlg_class2.png", "pred_vs_ref_tlg_class2.png", "detection_by_suv_class2.png",
    ]  # fmt: skip
    for p in paths:
        assert p.is_file() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert schema.PLOT_FILE.fullmatch(p.name)  # a later run may remove them
    assert not schema.PLOT_FILE.fullmatch("bland_altman_tlg.png.bak")
    caption = _plot_caption(tmp_path / "bland_altman_tlg_class2.png", label)
    assert caption.startswith("Bland–Altman plot of the total lesion glycolysis (TLG)") and caption.endswith(
        "(class 2)"
    )
    assert "TMTV, ml" in _plot_caption(tmp_path / "pred_vs_ref_tmtv_ml.png", label)
    assert "SUVmax" in _plot_caption(tmp_path / "detection_by_suv.png", label)


def test_one_class_no_suffix_and_the_failed_case_lesions_left_out(tmp_path, monkeypatch):
    from ccmetrics.analysis import _drawing, pet_plots

    drawn = []

    def spy(per_component, **kw):
        figure = plot_detection_by_suv(per_component, **kw)
        drawn.append([t.get_text() for t in figure.axes[0].texts])
        return figure

    monkeypatch.setattr(pet_plots, "plot_detection_by_suv", spy)
    monkeypatch.setattr(_drawing, "can_fork", lambda: False)  # the spy sees the figures drawn in this process
    cases = _hand_cases()[lambda d: d["class"] == 1]
    lesions = _hand_lesions()[lambda d: d["class"] == 1]
    paths = write_pet_plots(_result(cases, lesions), tmp_path, suv_bins=[4.0])
    assert drawn == [["0/1", "2/2"]]  # case e (an error row) and its found lesion at SUVmax 3 left out
    assert sorted(p.name for p in paths) == [
        "bland_altman_tlg.png", "bland_altman_tmtv_ml.png", "detection_by_suv.png",
        "pred_vs_ref_tlg.png", "pred_vs_ref_tmtv_ml.png",
    ]  # fmt: skip


def test_nothing_drawn_without_the_pet_columns(tmp_path):
    cases, lesions = _hand_cases(), _hand_lesions()
    no_pet = cases.drop(columns=[c for c in cases if c.startswith(("gt_", "pred_"))])
    assert write_pet_plots(_result(no_pet, lesions), tmp_path / "a") == []
    assert not (tmp_path / "a").exists()
    # per-case measures but no lesion SUVmax (or no detection): the agreement figures only
    for dropped in ("suv_max", "detected"):
        names = [p.name for p in write_pet_plots(_result(cases, lesions.drop(columns=dropped)), tmp_path / dropped)]
        assert names and not any(n.startswith("detection_by_suv") for n in names)
    # every case failed or undefined: no agreement figure (nothing to draw)
    undefined = cases.assign(pred_tmtv_ml=np.nan, pred_tlg=np.nan)
    names = [p.name for p in write_pet_plots(_result(undefined, lesions), tmp_path / "u")]
    assert names == ["detection_by_suv_class1.png", "detection_by_suv_class2.png"]


def test_write_result_plots_passes_suv_bins_and_keeps_the_other_plots(tmp_path):
    cases = _hand_cases().assign(empty_gt=False, dice=0.8, cc_dice=0.7)
    lesions = _hand_lesions().assign(component=1, volume=100, volume_mm3=100.0, dice=0.5)
    paths = write_result_plots(_result(cases, lesions), tmp_path, suv_bins=[4.0, 10.0])
    names = [p.name for p in paths]
    assert names[:4] == [  # write_plots' figures first, as before
        "metric_vs_volume_dice_class1.png", "detection_by_size_class1.png",
        "standard_vs_cc_dice_class1.png", "case_distribution_class1.png",
    ]  # fmt: skip
    assert "detection_by_suv_class1.png" in names and "bland_altman_tlg_class2.png" in names
    plain = write_result_plots(_result(cases.drop(columns=["gt_tmtv_ml", "pred_tmtv_ml", "gt_tlg", "pred_tlg"]),
                                       lesions.drop(columns="suv_max")), tmp_path / "plain")  # fmt: skip
    assert not any(p.name.startswith(("bland_altman", "pred_vs_ref", "detection_by_suv")) for p in plain)
