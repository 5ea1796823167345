"""Result tables held as columns (``ccmetrics.columns``) against pandas itself.

The claims: a table a result holds as :class:`Columns` becomes the DataFrame the former code built with pandas (the
same columns, dtypes, index and values, empty tables included); the tidy per-component and per-prediction rows
shaped on Columns equal those shaped on the DataFrame (``CaseResult.component_rows`` runs the same steps on
either); their records' encoding made without pandas equals the encoding of that DataFrame and decodes to it; and
a data set's worker, which encodes a case's tables, never imports pandas.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ccmetrics import evaluate
from ccmetrics.campaign.dataset import CaseTask, EvalOptions, evaluate_task
from ccmetrics.campaign.records import _encode_frame, decode_output, encode_output
from ccmetrics.columns import Columns, stored

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]


def _pandas_built(table: Columns) -> pd.DataFrame:
    """The former construction: an empty DataFrame on the row index, each column assigned in order."""
    frame = pd.DataFrame(index=pd.RangeIndex(table.start, table.start + len(table), name=table.index_name))
    for name in table.names:
        held = table._columns[name]
        frame[name] = held.value if type(held).__name__ == "_Scalar" else held
    return frame


def _case(rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray]:
    gt = np.zeros((24, 22, 9), np.uint8)
    for _ in range(int(rng.integers(1, 6))):
        c = rng.integers(2, [20, 18, 7])
        gt[c[0] - 2 : c[0] + rng.integers(1, 3), c[1] - 1 : c[1] + 2, c[2] : c[2] + rng.integers(1, 3)] = 1
    pred = np.roll(gt, int(rng.integers(-2, 3)), axis=int(rng.integers(0, 3)))
    pred[rng.random(gt.shape) < 0.004] = 1
    if kind == "empty gt":
        gt[:] = 0
    elif kind == "empty pred":
        pred[:] = 0
    elif kind == "both empty":
        gt[:], pred[:] = 0, 0
    return gt, pred


KINDS = ["lesions", "empty gt", "empty pred", "both empty"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_results_tables_are_the_dataframes_pandas_built(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    for spacing in (None, (0.7, 1.3, 2.9)):
        gt, pred = _case(rng, kind)
        result = evaluate(pred, gt, METRICS, spacing=spacing)
        held = {
            "per_component": stored(result, "per_component"),
            "per_prediction": stored(result, "per_prediction"),
            "per_lesion": stored(result.details["lesion_dice"], "per_lesion"),
            "pairs": stored(result.details["pq"], "pairs"),
        }
        assert all(isinstance(t, Columns) for t in held.values())  # nothing read yet: no DataFrame made
        frames = {
            "per_component": result.per_component,
            "per_prediction": result.per_prediction,
            "per_lesion": result.details["lesion_dice"].per_lesion,
            "pairs": result.details["pq"].pairs,
        }
        for name, table in held.items():
            want = _pandas_built(table)
            pd.testing.assert_frame_equal(frames[name], want, check_exact=True)
            assert list(frames[name].dtypes.astype(str)) == list(want.dtypes.astype(str)), name
            assert frames[name].index.equals(want.index) and frames[name].index.name == want.index.name


@pytest.mark.parametrize("kind", KINDS)
def test_tidy_rows_shaped_on_columns_equal_those_shaped_on_the_dataframe(kind):
    # component_rows and prediction_rows run the same steps on whichever table the result holds: on its Columns
    # (fresh), and on its DataFrame (once read), which is the former pandas code; both must give the same table
    rng = np.random.default_rng(10 + KINDS.index(kind))
    affine = np.array([[0.0, -0.8, 0, 5], [1.1, 0, 0, -3], [0, 0, 2.5, 7], [0, 0, 0, 1]])
    for spacing, rule in ((None, "overlap"), ((0.7, 1.3, 2.9), "iou:0.3")):
        gt, pred = _case(rng, kind)
        result = evaluate(pred, gt, METRICS, spacing=spacing, detection_rule=rule)
        fresh = copy.deepcopy(result)
        _ = result.per_component, result.per_prediction  # read: the result now holds DataFrames
        for case, value in (("c1", 1), ("", 3)):
            on_columns = fresh.component_rows(case, value)
            on_frame = result.component_rows(case, value)
            assert isinstance(on_columns, Columns) and isinstance(on_frame, pd.DataFrame)
            _assert_same_table(on_columns, on_frame)
            for aff in (affine, None):
                _assert_same_table(fresh.prediction_rows(case, value, aff), result.prediction_rows(case, value, aff))
        pd.testing.assert_frame_equal(fresh.to_frame("c1"), result.to_frame("c1"), check_exact=True)


def _assert_same_table(columns: Columns, frame: pd.DataFrame) -> None:
    made = columns.frame()
    pd.testing.assert_frame_equal(made, frame, check_exact=True)
    assert list(made.dtypes.astype(str)) == list(frame.dtypes.astype(str))
    encoded = columns.encoded()
    assert json.dumps(encoded) == json.dumps(_encode_frame(frame))  # the records' encoding, without pandas
    assert [type(v) for row in encoded["data"] for v in row] == [
        type(v) for row in _encode_frame(frame)["data"] for v in row
    ]
    back = decode_output({"rows": [], "components": json.loads(json.dumps(encoded)), "timing": {}})["components"]
    pd.testing.assert_frame_equal(back, frame.reset_index(drop=True), check_exact=True)


def test_columns_follow_pandas_on_scalars_text_and_empty_tables():
    for n in (0, 1, 3):
        table = Columns(length=n, index_name="component", start=1)
        table["volume"] = np.arange(n, dtype=np.int64)
        table["text"] = ["a;b", "", "7"][:n]
        table["outcome"] = np.where(np.arange(n) % 2 == 0, "tp", "fp")
        table["flag"] = np.arange(n) > 0
        table["x"] = np.full(n, np.inf)
        table["nan"] = np.nan
        table["one"] = 1
        table["yes"] = True
        table.insert(0, "case", "c")
        table.insert(2, "none", None)
        for shaped in (table, table.reset_index(), table[["x", "case", "volume"]]):
            want = _pandas_built(shaped)
            pd.testing.assert_frame_equal(shaped.frame(), want, check_exact=True)
            assert list(shaped.frame().dtypes.astype(str)) == list(want.dtypes.astype(str))
            if shaped.index_name is None:  # the rows a record holds
                assert json.dumps(shaped.encoded()) == json.dumps(_encode_frame(want))
    with pytest.raises(ValueError, match="3 rows"):
        Columns({"x": [1, 2]}, length=3)


def test_classes_tables_joined_as_pandas_concatenates_them():
    gt = np.zeros((20, 20, 6), np.uint8)
    gt[2:6, 2:6, 1:3], gt[12:15, 3:6, 2:4], gt[8:10, 14:18, 3:5] = 1, 2, 1
    pred = gt.copy()
    pred[12:15, 3:6, 2:4] = 0  # class 2 has no prediction: an empty per-prediction table beside full ones
    pred[16:19, 16:19, 5] = 3  # class 3: no GT component (an empty per-component table), one prediction
    options = EvalOptions.build(METRICS, classes="a=1,b=2,c=3", spacing=(0.9, 0.9, 2.0))
    output = evaluate_task(CaseTask("multi", gt, pred), options)
    assert isinstance(output["components"], Columns) and isinstance(output["predictions"], Columns)
    back = decode_output(json.loads(json.dumps(encode_output(output))))
    results = [evaluate(pred == c, gt == c, METRICS, spacing=(0.9, 0.9, 2.0)) for c in (1, 2, 3)]
    for key, shape in (("components", "to_frame"), ("predictions", "prediction_frame")):
        parts = []  # each class's table, shaped by pandas, concatenated by pandas (the data set skips empty ones)
        for c, (result, name) in enumerate(zip(results, "abc"), 1):
            part = result.to_frame("multi", c) if shape == "to_frame" else result.prediction_frame("multi", c, None)
            part.insert(2, "class_name", name)
            parts.append(part)
        assert min(len(p) for p in parts) == 0 < max(len(p) for p in parts)
        want = pd.concat([p for p in parts if len(p)], ignore_index=True)
        pd.testing.assert_frame_equal(back[key], want, check_exact=True)


def test_table_fields_keep_the_dataclasses_as_they_were():
    gt, pred = _case(np.random.default_rng(3), "lesions")
    result = evaluate(pred, gt, METRICS)
    assert [f.name for f in dataclasses.fields(result)][:1] == ["per_component"]
    again = pickle.loads(pickle.dumps(result))
    assert isinstance(stored(again, "per_component"), Columns)
    first = result.per_component
    assert result.per_component is first  # made once, then kept
    pd.testing.assert_frame_equal(again.per_component, first, check_exact=True)
    pairs = result.details["pq"].pairs  # a frozen dataclass's table field
    assert result.details["pq"].tp == len(pairs) and dataclasses.replace(result.details["pq"]).pairs.equals(pairs)


def test_a_worker_encodes_a_case_without_importing_pandas(tmp_path):
    # what a data set's worker does with a case (evaluate_task, encode_output): every metric group, no pandas
    gt, pred = _case(np.random.default_rng(4), "lesions")
    np.save(tmp_path / "gt.npy", gt)
    np.save(tmp_path / "pred.npy", pred)
    code = (
        "import sys, numpy as np\n"
        "from ccmetrics.campaign.dataset import CaseTask, EvalOptions, evaluate_task\n"
        "from ccmetrics.campaign.records import encode_output\n"
        f"gt, pred = np.load({str(tmp_path / 'gt.npy')!r}), np.load({str(tmp_path / 'pred.npy')!r})\n"
        f"out = encode_output(evaluate_task(CaseTask('c', gt, pred), EvalOptions({tuple(METRICS)!r})))\n"
        "print(out['rows'][0]['status'], len(out['components']['data']), 'pandas' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    n = evaluate(pred, gt, ["dice"]).n_components
    assert done.stdout.split() == ["ok", str(n), "False"]
