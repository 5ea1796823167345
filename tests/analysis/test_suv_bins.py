"""``by_suv`` (analysis.sizes.suv_table, parse_suv_bins): counts per class and SUVmax bin against hand counts, the edge
cases the table of tests/analysis/test_pet_bins_and_plots.py leaves out (an edge exactly at a value, negative SUVs,
NaN, one lesion, no ``detected`` column, false positives of a class without lesions, size_table untouched)."""

import math

import numpy as np
import pandas as pd
import pytest

from ccmetrics.analysis.sizes import DEFAULT_SUV_EDGES, bin_labels, parse_suv_bins, size_table, suv_table


def test_default_edges_and_labels():
    assert DEFAULT_SUV_EDGES == (2.5, 4.0, 10.0)
    table = suv_table(pd.DataFrame({"class": 1, "suv_max": [3.0], "detected": [True]}))
    assert table["bin"].tolist() == ["<2.5 SUV", "2.5–4 SUV", "4–10 SUV", "≥10 SUV"]
    assert table["bin"].tolist() == bin_labels(DEFAULT_SUV_EDGES, "SUV")
    assert table["low"].tolist() == [-math.inf, 2.5, 4.0, 10.0]
    assert table["high"].tolist() == [2.5, 4.0, 10.0, math.inf]
    assert (table["unit"] == "SUV").all()
    # one lesion: its bin 1 of 1, every other bin NaN rate and NaN CC-Dice (no dice column: NaN everywhere)
    assert table["lesions"].tolist() == [0, 1, 0, 0] and table["detected"].tolist() == [0, 1, 0, 0]
    assert table["detection_rate"].iloc[1] == 1.0
    assert table["detection_rate"].isna().tolist() == [True, False, True, True]
    assert table["cc_dice"].isna().all()


def test_every_value_on_an_edge_goes_up_and_negatives_go_first():
    # each edge value itself, a value just below it, a negative SUV (a scan allowed down to -100) and a huge one
    suv = [2.5, 4.0, 10.0, np.nextafter(2.5, 0), np.nextafter(4.0, 0), np.nextafter(10.0, 0), -3.0, 1e6]
    detected = [True, False, True, True, True, False, False, True]
    dice = [0.9, 0.0, 0.5, 0.7, 0.8, 0.0, 0.0, 0.6]
    table = suv_table(pd.DataFrame({"class": 1, "suv_max": suv, "detected": detected, "dice": dice}))
    # by hand: <2.5: 2.5⁻, -3 | 2.5–4: 2.5, 4⁻ | 4–10: 4, 10⁻ | ≥10: 10, 1e6
    assert table["lesions"].tolist() == [2, 2, 2, 2]
    assert table["detected"].tolist() == [1, 2, 0, 2]
    assert table["detection_rate"].tolist() == [0.5, 1.0, 0.0, 1.0]
    assert table["cc_dice"].tolist() == pytest.approx(
        [(0.7 + 0.0) / 2, (0.9 + 0.8) / 2, (0.0 + 0.0) / 2, (0.5 + 0.6) / 2]
    )


def test_nan_suv_is_in_no_bin_and_classes_stay_apart():
    comps = pd.DataFrame(
        {
            "class": [2, 2, 2, 5, 5],
            "suv_max": [np.nan, 5.0, 5.0, np.nan, 0.5],
            "detected": [True, True, False, False, True],
            "dice": [0.9, 0.6, 0.0, 0.0, 0.4],
        }
    )
    table = suv_table(comps, "5")
    assert table["class"].tolist() == [2, 2, 5, 5] and table["bin"].tolist() == ["<5 SUV", "≥5 SUV"] * 2
    two, five = table[table["class"] == 2], table[table["class"] == 5]
    assert two["lesions"].tolist() == [0, 2] and two["detected"].tolist() == [0, 1]  # the NaN lesion left out
    assert two["cc_dice"].tolist()[1] == pytest.approx(0.3)  # its dice of 0.9 left out too
    assert five["lesions"].tolist() == [1, 0] and five["detected"].tolist() == [1, 0]
    assert int(table["lesions"].sum()) == 3  # of 5 rows: the two NaN SUVmax are in no bin


def test_false_positives_of_a_class_without_lesions_and_nan_fp():
    comps = pd.DataFrame({"class": [1], "suv_max": [6.0], "detected": [True]})
    preds = pd.DataFrame(
        {"class": [1, 3, 3, 3], "outcome": ["tp", "fp", "fp", "fp"], "suv_max": [6.0, 30.0, 2.5, np.nan]}
    )
    table = suv_table(comps, [2.5, 10], per_prediction=preds)
    assert table["class"].tolist() == [1, 1, 1, 3, 3, 3]
    one, three = table[table["class"] == 1], table[table["class"] == 3]
    assert one["false_positives"].tolist() == [0, 0, 0]  # the tp is no false positive
    assert three["lesions"].tolist() == [0, 0, 0] and three["false_positives"].tolist() == [0, 1, 1]  # NaN in none
    # a per_prediction without suv_max (a run before pet): no false-positive column rather than a wrong one
    assert "false_positives" not in suv_table(comps, per_prediction=preds.drop(columns="suv_max"))


def test_empty_without_suv_or_detection():
    comps = pd.DataFrame({"class": [1, 1], "suv_max": [3.0, 12.0], "detected": [True, False]})
    assert suv_table(comps.drop(columns="detected")).empty  # pet without a detection rule to count by
    assert suv_table(comps.drop(columns="suv_max")).empty
    assert suv_table(pd.DataFrame()).empty


def test_parse_suv_bins_accepts_and_refuses():
    assert parse_suv_bins([4, "10"]) == (4.0, 10.0)
    assert parse_suv_bins("-1,0,2.5,") == (-1.0, 0.0, 2.5)  # SUV edges may be 0 or negative (unlike sizes)
    for bad in ("2.5,2.5", "nan", "2.5;4", [1.0, math.inf], []):
        with pytest.raises(ValueError, match=r"SUV bins must be .*--suv-bins 2\.5,4,10"):
            parse_suv_bins(bad)


def test_size_table_unchanged_by_the_shared_rows():
    comps = pd.DataFrame(
        {
            "class": 1,
            "volume": [50, 2000, 30000, 100],
            "volume_mm3": [50.0, 2000.0, 30000.0, 100.0],  # 0.05, 2, 30, 0.1 ml: 0.1 sits on an edge, goes up
            "detected": [False, True, True, True],
            "dice": [0.0, 0.8, 0.9, 0.5],
        }
    )
    table = size_table(comps, [0.1, 1, 10])
    assert table.columns.tolist() == [
        "class", "bin", "low", "high", "unit", "lesions", "detected", "detection_rate", "cc_dice",
    ]  # fmt: skip
    assert table["lesions"].tolist() == [1, 1, 1, 1] and table["detected"].tolist() == [0, 1, 1, 1]
    assert table["low"].tolist() == [0.0, 0.1, 1.0, 10.0] and table["unit"].tolist() == ["ml"] * 4
