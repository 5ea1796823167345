"""Lesion-size bins (ccmetrics.analysis.sizes): hand-computed tables, the data set's by_size, and --size-bins."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ccmetrics import evaluate_dataset
from ccmetrics.analysis.sizes import parse_size_bins, size_table

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data"


def test_hand_computed_bins_with_false_positives():
    comps = pd.DataFrame(
        {
            "class": [1, 1, 1, 1, 2],
            "volume": [50, 99, 100, 20000, 7],
            "volume_mm3": [50.0, 99.0, 100.0, 20000.0, 7.0],
            "detected": [True, False, True, True, False],
            "dice": [0.5, 0.0, 0.7, 0.9, 0.0],
        }
    )
    preds = pd.DataFrame(
        {
            "class": [1, 1, 1, 2],
            "volume": [10, 5000, 300, 1],
            "volume_mm3": [10.0, 5000.0, 300.0, 1.0],
            "outcome": ["fp", "fp", "tp", "fp"],
        }
    )
    t = size_table(comps, "0.1,1", per_prediction=preds)
    one = t[t["class"] == 1]
    assert one["bin"].tolist() == ["<0.1 ml", "0.1–1 ml", "≥1 ml"]
    assert one["lesions"].tolist() == [2, 1, 1]  # 0.1 ml (100 mm³) falls in [0.1, 1)
    assert one["detected"].tolist() == [1, 1, 1]
    assert one["detection_rate"].tolist() == [0.5, 1.0, 1.0]
    assert one["cc_dice"].tolist() == pytest.approx([0.25, 0.7, 0.9])
    assert one["false_positives"].tolist() == [1, 0, 1]  # the TP component is not counted
    two = t[t["class"] == 2]
    assert two["lesions"].tolist() == [1, 0, 0] and two["false_positives"].tolist() == [1, 0, 0]
    assert math.isnan(two["detection_rate"].tolist()[1]) and math.isinf(one["high"].tolist()[-1])
    voxels = size_table(comps.assign(volume_mm3=np.nan), [60])
    assert voxels["bin"].tolist()[:2] == ["<60 vx", "≥60 vx"] and voxels["lesions"].tolist()[:2] == [1, 3]
    for bad in ("1,0.5", "0,1", "x", "", [1, math.inf]):
        with pytest.raises(ValueError, match="size bins"):
            parse_size_bins(bad)


def test_no_lesion_anywhere_bins_false_positives_in_their_unit(tmp_path):
    # plain arrays (voxel units) without any GT component but with predictions: the bins take the false positives'
    # unit (the size table failed, "different units", and with it DatasetResult.write)
    gt = np.zeros((12, 12, 6), np.uint8)
    pred = gt.copy()
    pred[1:3, 1:3, 1] = 2  # a false positive of class 2: 4 voxels
    result = evaluate_dataset({"a": (gt, pred)}, None, ["dice", "detection"], classes=[1, 2], progress=False)
    table = result.size_table()
    assert table["unit"].unique().tolist() == ["voxels"]
    assert table.groupby("class")["false_positives"].sum().to_dict() == {2: 1}  # its class: no lesion, one FP
    assert table["lesions"].sum() == 0
    result.write(tmp_path)
    assert (tmp_path / "per_prediction.csv").is_file()


@pytest.mark.slow
def test_dataset_size_table_and_cli(tmp_path):
    result = evaluate_dataset(EXAMPLES / "gt", EXAMPLES / "pred", ["dice", "detection"], progress=False)
    table = result.size_table([0.5, 2])
    comps, preds = result.per_component, result.per_prediction
    ml = comps["volume_mm3"] / 1000
    for label, inside in (("<0.5 ml", ml < 0.5), ("0.5–2 ml", (ml >= 0.5) & (ml < 2)), ("≥2 ml", ml >= 2)):
        row = table[table["bin"] == label].iloc[0]
        assert row["lesions"] == inside.sum() and row["detected"] == comps.loc[inside, "detected"].sum()
        if inside.any():
            assert row["cc_dice"] == pytest.approx(comps.loc[inside, "dice"].mean())
        fp_ml = preds.loc[preds["outcome"] == "fp", "volume_mm3"] / 1000
        low, high = row["low"], row["high"]
        assert row["false_positives"] == ((fp_ml >= low) & (fp_ml < high)).sum()
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ccmetrics", "evaluate", str(EXAMPLES / "gt"), str(EXAMPLES / "pred")]
    cmd += ["--out", str(out), "--metrics", "dice,detection", "--size-bins", "0.5,2", "--no-plots"]  # not --quiet:
    # the summary, this table included, is what --quiet leaves out
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "Detection by lesion size" in run.stdout and "0.5–2 ml" in run.stdout
    records = json.loads((out / "summary.json").read_text())["by_size"]
    assert records[-1]["high"] is None  # no upper edge (JSON has no infinity)
    by_size = pd.DataFrame(records)
    assert by_size["lesions"].tolist() == table["lesions"].tolist()
    assert by_size["bin"].tolist() == table["bin"].tolist()
