"""Detection by SUVmax (``by_suv``, ``--suv-bins``) and the PET figures (issue 41, points 4-5), against counts and
statistics computed by hand."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from ccmetrics.analysis.pet_plots import plot_bland_altman, plot_detection_by_suv, plot_pred_vs_ref, write_pet_plots
from ccmetrics.analysis.sizes import parse_suv_bins, suv_table


def _lesions():
    return pd.DataFrame(
        {
            "case": ["a", "a", "b", "b", "c", "c", "c"],
            "class": [1, 1, 1, 2, 1, 1, 2],
            "suv_max": [2.5, 2.49, 4.0, 12.0, 9.99, np.nan, 1.0],  # 2.5 and 4.0 sit on edges: they go up
            "detected": [True, False, True, False, True, False, True],
            "dice": [0.8, 0.0, 0.6, 0.0, 0.9, 0.0, 0.5],
        }
    )


def _predictions():
    return pd.DataFrame({"class": [1, 1, 1, 2], "outcome": ["fp", "tp", "fp", "fp"], "suv_max": [30.0, 5.0, 1.2, 3.0]})


def test_suv_bins_count_as_by_hand():
    table = suv_table(_lesions(), per_prediction=_predictions())
    one = table[table["class"] == 1].set_index("bin")
    assert one["lesions"].tolist() == [1, 1, 2, 0]  # 2.49 | 2.5 | 4.0, 9.99 | none; the NaN lesion in no bin
    assert one["detected"].tolist() == [0, 1, 2, 0]
    assert one.loc["4–10 SUV", "cc_dice"] == pytest.approx((0.6 + 0.9) / 2)
    assert math.isnan(one.loc["≥10 SUV", "detection_rate"])
    assert one["false_positives"].tolist() == [1, 0, 0, 1]  # 1.2 and 30: the tp at 5 is no false positive
    two = table[table["class"] == 2].set_index("bin")
    assert two["lesions"].tolist() == [1, 0, 0, 1] and two["false_positives"].tolist() == [0, 1, 0, 0]
    assert np.isinf(one["low"].iloc[0]) and np.isinf(one["high"].iloc[-1])


def test_suv_bins_other_edges_and_errors():
    table = suv_table(_lesions()[lambda d: d["class"] == 1], [3.0])
    assert table["bin"].tolist() == ["<3 SUV", "≥3 SUV"] and table["lesions"].tolist() == [2, 2]
    assert parse_suv_bins("1, 2") == (1.0, 2.0)
    for bad in ("", "4,2", "a,b", "1,inf"):
        with pytest.raises(ValueError, match="SUV bins must be"):
            parse_suv_bins(bad)
    assert suv_table(_lesions().drop(columns="suv_max")).empty


def _cases():
    return pd.DataFrame(
        {
            "case": list("abcdef"),
            "class": 1,
            "status": ["ok", "ok", "flagged", "ok", "ok", "error"],
            "gt_tmtv_ml": [0.5, 10.0, 300.0, 0.0, 20.0, np.nan],
            "pred_tmtv_ml": [0.3, 12.0, 250.0, 2.0, np.nan, np.nan],
            "gt_tlg": [1.0, 50.0, 900.0, 0.0, 80.0, np.nan],
            "pred_tlg": [2.0, 40.0, 1000.0, 3.0, 70.0, np.nan],
        }
    )


def test_bland_altman_lines_are_the_formulas():
    gt, pred = np.array([1.0, 50.0, 900.0, 0.0, 80.0]), np.array([2.0, 40.0, 1000.0, 3.0, 70.0])
    diff = pred - gt
    figure = plot_bland_altman(_cases(), "tlg")
    ax = figure.axes[0]
    ys = [line.get_ydata()[0] for line in ax.get_lines()]
    sd = np.sqrt(((diff - diff.mean()) ** 2).sum() / (len(diff) - 1))
    assert ys == pytest.approx([diff.mean(), diff.mean() - 1.96 * sd, diff.mean() + 1.96 * sd])
    points = ax.collections[0].get_offsets()
    assert np.allclose(points[:, 0], (gt + pred) / 2) and np.allclose(points[:, 1], diff)
    assert ax.get_xscale() == "log"  # means from 1.5 to 950: three decades


def test_pred_vs_ref_counts_what_a_log_axis_hides():
    figure = plot_pred_vs_ref(_cases(), "tmtv_ml")
    ax = figure.axes[0]
    # 4 cases with both values (the NaN prediction and the error row left out); the one with GT 0 is not drawn
    assert ax.get_title() == "Model vs reference, TMTV (ml): 4 cases, 1 with a 0 not shown (log axes)"
    assert len(ax.collections[0].get_offsets()) == 3 and ax.get_yscale() == "log"
    narrow = _cases().assign(gt_tmtv_ml=[5.0, 6.0, 7.0, 8.0, 9.0, 1.0], pred_tmtv_ml=[5.5, 6.0, 7.0, 8.0, 9.0, 1.0])
    ax = plot_pred_vs_ref(narrow, "tmtv_ml").axes[0]
    assert ax.get_xscale() == "linear" and ax.get_title().endswith(": 5 cases")


def test_detection_by_suv_bars():
    ax = plot_detection_by_suv(_lesions(), class_value=1).axes[0]
    assert [t.get_text() for t in ax.texts] == ["0/1", "1/1", "2/2", "n = 0"]
    assert [p.get_height() for p in ax.patches] == [0.0, 1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="suv_max"):
        plot_detection_by_suv(_lesions().drop(columns="suv_max"))


def test_written_by_a_run_and_only_with_pet(tmp_path):
    from ccmetrics import evaluate_dataset

    rng = np.random.default_rng(0)
    cases, scans = {}, {}
    for i in range(4):
        gt = np.zeros((20, 20, 8), np.uint8)
        gt[2 : 6 + i, 3:7, 2:5] = 1
        gt[12:16, 10:15, 3:6] = 1
        pred = np.roll(gt, i, axis=0)
        cases[f"c{i}"] = (gt, pred)
        scans[f"c{i}"] = (rng.gamma(2.0, 0.5, gt.shape) + 6 * gt).astype(np.float32)
    result = evaluate_dataset(cases, metrics=["dice", "pet"], images=scans, progress=False)
    written = result.write(tmp_path / "out", suv_bins=[3, 7])
    names = sorted(p.name for p in written["plots"])
    for name in ("bland_altman_tlg.png", "bland_altman_tmtv_ml.png", "detection_by_suv.png", "pred_vs_ref_tlg.png"):
        assert name in names
    by_suv = json.loads((tmp_path / "out" / "summary.json").read_text())["by_suv"]
    lesions = result.per_component
    assert [r["lesions"] for r in by_suv] == [
        int((lesions["suv_max"] < 3).sum()),
        int(((lesions["suv_max"] >= 3) & (lesions["suv_max"] < 7)).sum()),
        int((lesions["suv_max"] >= 7).sum()),
    ]
    assert by_suv[0]["low"] is None and by_suv[-1]["high"] is None
    plain = evaluate_dataset(cases, metrics=["dice"], progress=False)
    assert write_pet_plots(plain, tmp_path / "none") == []
    plain.write(tmp_path / "plain")
    assert "by_suv" not in json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert "quantification" not in json.loads((tmp_path / "plain" / "summary.json").read_text())
