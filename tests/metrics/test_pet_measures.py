"""The pet group's per-case columns are measures: compared between the masks, never ranked (issue 41).

Stats, plots and the report must not read them as "higher is better": their column facts carry no direction,
``registry.higher_is_better`` refuses them, ``compare`` ranks them only with an explicit direction, the best-threshold
pick leaves them out and the metric listing says "neither".
"""

import numpy as np
import pandas as pd
import pytest

from ccmetrics.analysis.stats import compare
from ccmetrics.metrics import registry
from ccmetrics.metrics.thresholds import threshold_summary

MEASURES = [c.name for c in registry.get("pet").columns]


def test_every_pet_case_column_is_a_measure_without_direction():
    assert len(MEASURES) == 14 and all(name.startswith(("gt_", "pred_")) for name in MEASURES)
    for name in MEASURES:
        col = registry.column(name)
        assert col.kind == "measure" and col.higher_is_better is None and not col.has_direction
        assert not registry.has_direction(name) and col.facts()["higher_is_better"] is None
    # the other columns keep their direction
    assert registry.has_direction("cc_dice") and registry.has_direction("fp_volume") and registry.has_direction("x")
    assert registry.higher_is_better("sensitivity") and not registry.higher_is_better("fp_volume")


def test_a_measure_cannot_be_given_a_direction_and_only_a_measure_lacks_one():
    # a folder written before measures lost their direction: its facts say True, the column has none
    facts = {**registry.column("gt_tlg").facts(), "higher_is_better": True}
    assert registry.Column.from_facts("gt_tlg", facts).higher_is_better is None
    assert registry.Column("m", "M", "measure", True).higher_is_better is None
    with pytest.raises(ValueError, match="only a measure has no direction"):
        registry.Column("s", "S", "rate", None)


@pytest.mark.parametrize("name", ["gt_tmtv_ml", "pred_suv_max", "cc_gt_tlg"])
def test_the_registry_refuses_a_direction_for_a_measure(name):
    with pytest.raises(ValueError, match="is a measure.*neither higher nor lower is better"):
        registry.higher_is_better(name)
    extra = {"gt_tmtv_ml": registry.column("gt_tmtv_ml")}  # a result folder's own facts
    with pytest.raises(ValueError, match="is a measure"):
        registry.higher_is_better("gt_tmtv_ml", extra)


def _tables(name):
    rng = np.random.default_rng(0)
    return {m: pd.DataFrame({"case": range(6), name: rng.uniform(0, 50, 6)}) for m in ("A", "B", "C")}


@pytest.mark.parametrize("name", ["gt_tmtv_ml", "pred_tlg"])
def test_compare_does_not_rank_a_measure_unless_told_the_direction(name):
    tables = _tables(name)
    with pytest.raises(ValueError, match="is a measure"):
        compare(tables, name)
    with pytest.raises(ValueError, match="is a measure"):  # the folders' facts say the same
        compare(tables, name, columns={name: registry.column(name)})
    lower = compare(tables, name, higher_is_better=False)  # an explicit direction is the user's call
    wide = pd.DataFrame({m: t[name].to_numpy() for m, t in tables.items()})
    expected = wide.rank(axis=1, ascending=True).mean(axis=0)
    assert lower.higher_is_better is False
    np.testing.assert_allclose(lower.mean_ranks.to_numpy(), expected.to_numpy())


def test_no_best_threshold_is_picked_by_a_measure():
    rows = pd.DataFrame(
        {
            "case": ["a", "a", "b", "b"],
            "class": 1,
            "threshold": [0.3, 0.6] * 2,
            "empty_gt": False,
            "dice": [0.8, 0.7, 0.6, 0.7],
            "cc_dice": [0.5, 0.7, 0.4, 0.6],
            "gt_tmtv_ml": [1.0, 1.0, 2.0, 2.0],
            "cc_gt_tmtv_ml": [1.0, 1.0, 2.0, 2.0],
        }
    )
    means, best = threshold_summary(rows, ["dice", "gt_tmtv_ml"])
    assert best == {"1/dice": {"standard": 0.3, "cc": 0.6}, "1/gt_tmtv_ml": {}}


def test_the_listing_and_the_plots_give_measures_no_direction():
    row = next(line for line in registry.markdown_table().splitlines() if line.startswith("| `pet` |"))
    assert row.endswith("| neither (measured in both masks and compared) |")
    from ccmetrics.analysis.plots import plot_case_distribution

    per_case = pd.DataFrame(
        {"case": ["a", "b"], "class": 1, "status": "ok", "empty_gt": False, "gt_tmtv_ml": [1.0, 2.0]}
    )
    fig = plot_case_distribution(per_case, metrics=["gt_tmtv_ml"])
    assert fig.axes[0].get_ylabel() == "value"
