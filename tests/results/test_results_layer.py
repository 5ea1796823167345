"""The results layer (issue 40, points 1 and 5): ``ccmetrics.results`` holds the result of a run; the former
homes of its names answer with a warning that names the new one and give the same objects; the CI level is
``ci_level`` (``confidence=`` still works, warned, with the same numbers); ``unpaired_files`` is the former
``ignored_files`` (the key of ``summary.json`` keeps its name); a result folder and a pickle written before read."""

from __future__ import annotations

import importlib
import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ccmetrics
from ccmetrics import results
from ccmetrics.analysis import stats, summaries
from ccmetrics.results import DatasetResult, RunInfo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def result():
    """A small result of three cases, one with an empty GT, made in memory (no file read)."""
    rng = np.random.default_rng(0)
    cases = []
    for i in range(8):
        gt = np.zeros((12, 12, 6), np.uint8)
        if i != 2:
            gt[2:6, 2:6, 1:4] = 1
            gt[8:11, 7:10, 2:5] = 1
        pred = np.roll(gt, i % 3, axis=i % 2)
        pred[0, 11, 0] = rng.integers(0, 2)
        cases.append((f"c{i}", gt, pred))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the entry point's own keywords are another change's
        return ccmetrics.evaluate_dataset(cases, metrics=["dice", "hd95"], spacing=(1.0, 1.0, 2.0), progress=False)


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("ccmetrics.campaign.result", "DatasetResult", "ccmetrics.results.dataset"),
        ("ccmetrics.campaign.result", "RunInfo", "ccmetrics.results.run"),
        ("ccmetrics.campaign", "DatasetResult", "ccmetrics.results.dataset"),
        ("ccmetrics.campaign", "RunInfo", "ccmetrics.results.run"),
        ("ccmetrics.campaign", "read_tables", "ccmetrics.results.tables"),
        ("ccmetrics.campaign", "begin_tables", "ccmetrics.results.tables"),
        ("ccmetrics.campaign", "MANIFEST_NAME", "ccmetrics.results.tables"),
        ("ccmetrics.campaign.output_folder", "read_tables", "ccmetrics.results.tables"),
        ("ccmetrics.campaign.output_folder", "finish_tables", "ccmetrics.results.tables"),
        ("ccmetrics.campaign.output_folder", "owned_outputs", "ccmetrics.results.tables"),
        ("ccmetrics.campaign.output_folder", "drawn_by_ccmetrics", "ccmetrics.results.tables"),
        ("ccmetrics.campaign.output_folder", "OUTPUT_NAMES", "ccmetrics.results.tables"),
        ("ccmetrics.results", "CaseResult", "ccmetrics.metrics.results"),  # ccmetrics.results was CaseResult's module
    ],
)
def test_a_former_home_warns_and_gives_the_same_object(old, name, new):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} is deprecated: .*{name}") as caught:
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    assert caught[0].filename == __file__  # pointed at the code that read it


def test_the_public_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from ccmetrics.campaign.dataset import DatasetResult as in_campaign
        from ccmetrics.campaign.scheduler import RunInfo as in_scheduler
        from ccmetrics.results import read_tables  # noqa: F401

        assert ccmetrics.DatasetResult is DatasetResult is in_campaign is results.DatasetResult
        assert in_scheduler is RunInfo
    assert {"DatasetResult", "RunInfo", "read_tables"} <= set(results.__all__)


def test_a_former_name_that_never_existed_is_an_attribute_error():
    import ccmetrics.campaign.result as former

    with pytest.raises(AttributeError):
        former.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        results.no_such_name  # noqa: B018


def test_the_results_layer_imports_nothing_heavy_nor_above_it():
    code = (
        "import sys, ccmetrics.results, ccmetrics.results.tables, ccmetrics.results.run\n"
        "print(sorted(m for m in sys.modules if m in ('numpy', 'pandas', 'scipy') or m.startswith("
        "('ccmetrics.campaign', 'ccmetrics.analysis', 'ccmetrics.report', 'ccmetrics.cli'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("method", ["summary", "detection_curves", "calibration"])
def test_confidence_is_ci_level_with_a_warning(result, method):
    new = getattr(result, method)(ci_level=0.9, n_resamples=200, seed=3)
    with pytest.warns(DeprecationWarning, match=rf"DatasetResult\.{method}\(confidence=\.\.\.\) is deprecated: use "):
        old = getattr(result, method)(confidence=0.9, n_resamples=200, seed=3)
    if isinstance(new, pd.DataFrame):
        pd.testing.assert_frame_equal(old, new)
        assert not new.equals(result.summary(n_resamples=200, seed=3))  # the level changes the intervals
    else:
        assert old == new


def test_group_summary_and_the_analysis_functions_take_ci_level(result):
    meta = pd.DataFrame({"case": [f"c{i}" for i in range(8)], "centre": list("abaabbab")})
    new = result.group_summary(meta, "centre", ci_level=0.8, n_resamples=100)
    with pytest.warns(DeprecationWarning, match=r"group_summary\(confidence=\.\.\.\)"):
        old = result.group_summary(meta, "centre", confidence=0.8, n_resamples=100)
    pd.testing.assert_frame_equal(old, new)
    pd.testing.assert_frame_equal(summaries.group_summary(result, meta, "centre", ci_level=0.8, n_resamples=100), new)
    # the methods are the analysis functions
    pd.testing.assert_frame_equal(
        summaries.summary(result, ci_level=0.8, n_resamples=100), result.summary(ci_level=0.8, n_resamples=100)
    )
    pd.testing.assert_frame_equal(summaries.empty_gt_summary(result), result.empty_gt_summary())
    pd.testing.assert_frame_equal(summaries.size_summary(result), result.size_table())
    with pytest.warns(DeprecationWarning, match=r"^summary\(confidence=\.\.\.\) is deprecated: use summary\(ci_level"):
        old = summaries.summary(result, confidence=0.8, n_resamples=100)
    pd.testing.assert_frame_equal(old, result.summary(ci_level=0.8, n_resamples=100))


@pytest.mark.parametrize("function", [stats.bootstrap_ci, stats.bootstrap_ci_pooled])
def test_bootstrap_takes_ci_level_and_confidence_with_a_warning(function):
    values = [0.2, 0.5, 0.9, 0.4, 0.7, 0.66]
    args = (values, ["a", "a", "b", "c", "d", "d"]) if function is stats.bootstrap_ci_pooled else (values,)
    with pytest.warns(DeprecationWarning, match=rf"{function.__name__}\(confidence=\.\.\.\) is deprecated") as caught:
        old = function(*args, confidence=0.8, seed=4)
    assert caught[0].filename == __file__
    assert old == function(*args, ci_level=0.8, seed=4) != function(*args, seed=4)
    with pytest.raises(TypeError, match="ci_level= only"):
        function(*args, confidence=0.8, ci_level=0.9)
    with pytest.raises(TypeError, match="unexpected keyword argument 'level'"):
        function(*args, level=0.8)


def test_unpaired_files_is_the_former_ignored_files(result, tmp_path):
    with_files = DatasetResult(result.per_component, result.per_case, ["notes.txt"], options=result.options)
    assert with_files.unpaired_files == ["notes.txt"]
    with pytest.warns(DeprecationWarning, match=r"DatasetResult\.ignored_files is deprecated: use .*unpaired_files"):
        assert with_files.ignored_files == ["notes.txt"]
    with pytest.warns(DeprecationWarning, match=r"DatasetResult\(ignored_files=\.\.\.\) is deprecated"):
        old = DatasetResult(result.per_component, result.per_case, ignored_files=["notes.txt"], options=result.options)
    assert old.unpaired_files == ["notes.txt"] and old.per_case is with_files.per_case
    with_files.write(tmp_path, plots=False, n_resamples=50)
    assert json.loads((tmp_path / "summary.json").read_text())["ignored_files"] == ["notes.txt"]  # the key stays


def test_write_takes_confidence_with_a_warning_and_writes_the_same(result, tmp_path):
    result.write(tmp_path / "new", plots=False, ci_level=0.9, n_resamples=50)
    with pytest.warns(DeprecationWarning, match=r"write\(confidence=\.\.\.\)"):
        result.write(tmp_path / "old", plots=False, confidence=0.9, n_resamples=50)
    for name in ("per_case.csv", "per_component.csv"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()
    new, old = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("new", "old"))
    assert new["summary"] == old["summary"]


def test_a_result_pickled_before_the_move_unpickles(result):
    """A pickle names the class by its module of then (``ccmetrics.campaign.result``) and holds ``ignored_files``."""
    blob = pickle.dumps(result, protocol=0)  # text: names can be replaced without lengths to mend
    former = blob.replace(b"ccmetrics.results.dataset", b"ccmetrics.campaign.result").replace(
        b"unpaired_files", b"ignored_files"
    )
    assert former != blob
    with pytest.warns(DeprecationWarning, match=r"ccmetrics\.campaign\.result\.DatasetResult is deprecated"):
        back = pickle.loads(former)
    assert type(back) is DatasetResult and back.unpaired_files == result.unpaired_files
    pd.testing.assert_frame_equal(back.per_case, result.per_case)


def test_a_folder_reads_back_and_the_plots_come_from_the_analysis(result, tmp_path):
    written = result.write(tmp_path, n_resamples=50)
    assert {p.name for p in written["plots"]} >= {"standard_vs_cc_dice.png", "case_distribution.png"}
    back = DatasetResult.read(tmp_path)
    pd.testing.assert_frame_equal(back.per_case, result.per_case, check_dtype=False)
    assert isinstance(back.run, RunInfo)


@pytest.mark.parametrize(
    "module, name, home",
    [
        ("ccmetrics.campaign.result", "read_tables", "ccmetrics.results.tables"),
        ("ccmetrics.campaign.result", "begin_tables", "ccmetrics.results.tables"),
        ("ccmetrics.campaign.result", "locked", "ccmetrics.campaign.output_folder"),
        ("ccmetrics.campaign.result", "CASE", "ccmetrics.schema"),
        ("ccmetrics.campaign.result", "write_csv", "ccmetrics._escaping"),
        ("ccmetrics.campaign.output_folder", "atomic_write", "ccmetrics._files"),
    ],
)
def test_the_names_a_former_module_imported_still_import_with_a_warning(module, name, home):
    """Review of issue 40: ``from ccmetrics.campaign.result import read_tables`` worked before the move (an import of
    that module) and raised ImportError after it."""
    import importlib

    with pytest.warns(DeprecationWarning, match=home.replace(".", r"\.")):
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(importlib.import_module(home), name)
    assert not hasattr(importlib.import_module(module), "no_such_name")  # an AttributeError, as Python's own
