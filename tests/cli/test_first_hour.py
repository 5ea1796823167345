"""A new user's first hour at the command line (issue 43): each stumble run as the user typed it, and the message
asserted word for word.

The data are small NIfTI files written here: one cube lesion per case, so that every count and value in a message
is known by hand (a probability map's first non-binary value is its background, 0.25; a 3D image has 3 dimensions).
Most tests call :func:`ccmetrics.cli.main` in this process; Ctrl-C is a real SIGINT to a real ``python -m ccmetrics``
process group, as a terminal sends it.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nibabel as nib
import numpy as np
import pandas as pd
import pytest

from ccmetrics import DatasetResult, evaluate_dataset
from ccmetrics._words import command_line
from ccmetrics.campaign.output_folder import refuse_stale_report
from ccmetrics.cli import main

SHAPE = (12, 12, 8)
CASES = ("c0", "c1", "c2")


def _write(path: Path, array: np.ndarray) -> None:
    nib.save(nib.Nifti1Image(array, np.eye(4)), path)


def _mask() -> np.ndarray:
    a = np.zeros(SHAPE, np.uint8)
    a[3:7, 3:7, 2:5] = 1
    return a


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """``gt/`` and ``pred/`` (equal masks) of three cases; ``prob/`` their probability maps (float32: 0.25 around
    the lesion, 0.75 in it)."""
    for name in ("gt", "pred", "prob"):
        (tmp_path / name).mkdir()
    for case in CASES:
        _write(tmp_path / "gt" / f"{case}.nii.gz", _mask())
        _write(tmp_path / "pred" / f"{case}.nii.gz", _mask())
        _write(tmp_path / "prob" / f"{case}.nii.gz", np.where(_mask() > 0, 0.75, 0.25).astype(np.float32))
    return tmp_path


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["evaluate", *map(str, argv), "--no-plots", "--n-resamples", "50"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------- 1. a probability map given as the prediction


def test_probability_maps_given_as_predictions_are_one_line_that_names_the_option(data, capsys):
    code, out, err = _run(capsys, data / "gt", data / "prob", "--out-dir", data / "o", "--metrics", "dice")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("3 cases in ") and ": 0 evaluated (0 flagged), 3 failed;" in lines[0]
    assert lines[1] == (
        f"  error   3 cases (c0, c1, c2): the predictions are probability maps, not masks (c0 holds 0.25): give them "
        f"as --probabilities {data / 'prob'} instead of PRED_DIR (the segmentation is then prob > 0.5; --thresholds "
        "0.1:0.9:0.1 evaluates other thresholds)"
    )
    assert sum("probability maps" in line for line in lines) == 1  # one line per run, not one per case
    assert "pred > 0.5" not in out + err  # Python's advice stays in Python (and in the table's error column)
    assert "No summary: no case with GT lesions was evaluated." in lines  # no table of NaN
    assert "NaN" not in out and "nan" not in out
    # the advice works as written
    code, out, err = _run(capsys, data / "gt", "--probabilities", data / "prob", "--out-dir", data / "o2")
    assert code == 0 and ": 3 evaluated (0 flagged), 0 failed;" in out


# ---------------------------------------------------------------- 5. metric names: the tables' names, near misses


def test_a_column_name_is_taken_as_its_metric_with_a_note(data, capsys):
    code, out, err = _run(
        capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--metrics", "cc_dice,dice,cc_nsd"
    )
    assert code == 0
    assert "ccmetrics: note: cc_dice is a column of the metric dice: evaluating --metrics dice (its columns: dice, " \
        "cc_dice)" in err  # fmt: skip
    assert "ccmetrics: note: cc_nsd is a column of the metric nsd: evaluating --metrics nsd (its columns: nsd, " \
        "cc_nsd)" in err  # fmt: skip
    table = pd.read_csv(data / "o" / "per_case.csv")
    assert {"dice", "cc_dice", "nsd", "cc_nsd"} <= set(table.columns) and "hd95" not in table.columns
    assert (table["dice"] == 1.0).all() and (table["cc_dice"] == 1.0).all()  # equal masks
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o3", "--metrics", "sensitivity")
    assert code == 0 and "sensitivity is a column of the metric detection: evaluating --metrics detection" in err


def test_an_unknown_metric_gets_the_nearest_name_in_the_command_lines_terms(data, capsys):
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--metrics", "dice,nds")
    assert code == 2
    assert err.strip().endswith(
        "ccmetrics evaluate: error: unknown metric 'nds' (did you mean --metrics nsd?); --metrics takes dice,iou,nsd,"
        "hd,hd95,assd,pq,lesion_dice,detection,pet (a metric gives its columns, e.g. dice gives dice and cc_dice; "
        "--plugin MODULE_OR_FILE adds metrics of your own)"
    )
    assert "register_metric" not in err and "in Python" not in err
    assert not (data / "o").exists()  # refused before the output folder is made
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--metrics", "volume_sim")
    assert code == 2 and "unknown metric 'volume_sim'; --metrics takes" in err  # no near name: no guess
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--metrics", "cc_dcie")
    assert code == 2 and "unknown metric 'cc_dcie' (did you mean cc_dice, a column of --metrics dice?);" in err


def test_the_output_folder_rule_speaks_the_command_lines_terms(data, capsys):
    assert _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--metrics", "dice")[0] == 0
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--metrics", "dice")
    assert code == 2
    assert "is not empty (" in err and "run with --resume to continue the run recorded there, or --overwrite to " \
        "replace its results" in err  # fmt: skip
    assert "resume=True" not in err and "overwrite=True" not in err
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--resume", "--overwrite")
    assert code == 2 and "choose one of --resume and --overwrite, not both" in err
    with pytest.raises(ValueError, match=r"run with resume=True to continue .* or overwrite=True to replace"):
        evaluate_dataset(data / "gt", data / "pred", ["dice"], out_dir=data / "o", progress=False)  # Python's terms


def test_compare_answers_an_unknown_column_without_a_traceback(data, capsys):
    for out in ("a", "b"):
        assert _run(capsys, data / "gt", data / "pred", "--out-dir", data / out, "--metrics", "dice,nsd")[0] == 0
    code = main(["compare", str(data / "a"), str(data / "b"), "--metric", "nds"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip() == (
        "ccmetrics compare: error: no column 'nds' in the per_case.csv of a, b (did you mean --metric nsd?); --metric "
        "takes a column these runs share: dice, cc_dice, nsd, cc_nsd, or ap, auroc, picai_score, cpm for runs with "
        "--probabilities"
    )
    code = main(["compare", str(data / "a"), str(data / "b"), "--metric", "sensitivity"])
    err = capsys.readouterr().err
    assert code == 2 and "sensitivity comes with `ccmetrics evaluate --metrics ...,detection`" in err


# ---------------------------------------------------------------- 6. predictions named differently


def test_predictions_with_a_suffix_stop_the_run_with_the_option_that_pairs_them(data, capsys):
    named = data / "named"
    named.mkdir()
    for case in CASES:
        (named / f"{case}_pred.nii.gz").write_bytes((data / "pred" / f"{case}.nii.gz").read_bytes())
    code, out, err = _run(capsys, data / "gt", named, "--out-dir", data / "o", "--metrics", "dice")
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == (
        f"ccmetrics evaluate: error: no prediction in {named} has the case id of a GT file in {data / 'gt'}: "
        "3 unpaired predictions end in '_pred' (c0_pred beside the GT c0): --pred-suffix _pred pairs them"
    )
    assert not (data / "o").exists()  # before any case, before the output folder
    code, out, err = _run(
        capsys, data / "gt", named, "--out-dir", data / "o", "--metrics", "dice", "--pred-suffix", "_pred"
    )
    assert code == 0 and ": 3 evaluated (0 flagged), 0 failed; 0 with an empty GT, 0 without prediction" in out


def test_no_suffix_note_that_would_break_a_working_pair(data, capsys):
    # c0 and c0_seg both in PRED_DIR: --pred-suffix _seg would give both the id c0 (an error row), so no note
    clash = data / "clash"
    clash.mkdir()
    (clash / "c0.nii.gz").write_bytes((data / "pred" / "c0.nii.gz").read_bytes())
    (clash / "c0_seg.nii.gz").write_bytes((data / "pred" / "c0.nii.gz").read_bytes())
    (clash / "c1_seg.nii.gz").write_bytes((data / "pred" / "c1.nii.gz").read_bytes())
    code, out, err = _run(capsys, data / "gt", clash, "--out-dir", data / "o2", "--metrics", "dice")
    assert "--pred-suffix" not in err
    assert pd.read_csv(data / "o2" / "per_case.csv").set_index("case").loc["c0", "status"] == "ok"


def test_some_predictions_with_a_suffix_get_one_note_before_the_cases(data, capsys):
    mixed = data / "mixed"
    mixed.mkdir()
    (mixed / "c0.nii.gz").write_bytes((data / "pred" / "c0.nii.gz").read_bytes())
    (mixed / "c1_seg.nii.gz").write_bytes((data / "pred" / "c1.nii.gz").read_bytes())
    code, out, err = _run(capsys, data / "gt", mixed, "--out-dir", data / "o", "--metrics", "dice")
    note = (
        "ccmetrics: note: 1 unpaired prediction ends in '_seg' (c1_seg beside the GT c1): --pred-suffix _seg pairs "
        "it; without it those GT cases are evaluated as missing predictions and the unpaired files are error rows"
    )
    assert err.count(note) == 1 and err.index(note) < err.index("evaluating")  # said once, before the cases run
    assert code == 1  # c1_seg: no GT; c1, c2: missing predictions
    table = pd.read_csv(data / "o" / "per_case.csv").set_index("case")
    assert table.loc["c1_seg", "error"] == (
        "no ground truth for this prediction: its name ends in '_seg', --pred-suffix _seg pairs it with the GT case "
        "'c1'"
    )


# ---------------------------------------------------------------- 7. files that are not images


def test_many_ignored_files_are_one_line(data, capsys):
    for i in range(60):
        (data / "pred" / f"{i:02d}.pkl").write_bytes(b"\x80")  # nnU-Net writes one per case
    (data / "pred" / "plans.json").write_text("{}")
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--metrics", "dice")
    assert code == 0
    ignored = [line for line in out.splitlines() if line.startswith("  ignored")]
    assert ignored == ["  ignored  61 files left out (60 .pkl, 1 .json); listed in summary.json (ignored_files)"]
    assert len(json.loads((data / "o" / "summary.json").read_text())["ignored_files"]) == 61  # the full list


# ---------------------------------------------------------------- 8. Ctrl-C


SLOW_METRIC = """
import time
from ccmetrics import register_metric

def slow(pred, gt, spacing):
    time.sleep({seconds})
    return 1.0

register_metric("slow", slow)
"""


def _start(data: Path, seconds: float) -> subprocess.Popen:
    plugin = data / "slow_metric.py"
    plugin.write_text(SLOW_METRIC.format(seconds=seconds))
    argv = [sys.executable, "-m", "ccmetrics", "evaluate", str(data / "gt"), str(data / "pred"), "--out-dir",
            str(data / "o"), "--plugin", str(plugin), "--metrics", "dice,slow", "--no-plots"]  # fmt: skip
    return subprocess.Popen(
        argv,
        env={**os.environ, "MPLBACKEND": "Agg"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.slow  # real processes
def test_after_ctrl_c_the_first_line_says_interrupted_and_what_was_never_evaluated(data):
    for i in range(3, 8):  # 8 cases
        (data / "gt" / f"c{i}.nii.gz").write_bytes((data / "gt" / "c0.nii.gz").read_bytes())
        (data / "pred" / f"c{i}.nii.gz").write_bytes((data / "pred" / "c0.nii.gz").read_bytes())
    run = _start(data, 0.4)
    start = time.monotonic()
    while len(list((data / "o" / "cases").glob("*.json"))) < 2:
        assert run.poll() is None and time.monotonic() - start < 120, run.communicate()
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    first = out.splitlines()[0]
    found = re.fullmatch(
        r"Interrupted after [\d.]+ s: (\d+) of 8 cases never evaluated; the (\d+) finished cases?: (\d+) evaluated "
        r"\(0 flagged\), 0 failed; 0 with an empty GT, 0 without prediction",
        first,
    )
    assert found, first
    never, finished, evaluated = map(int, found.groups())
    kept = pd.read_csv(data / "o" / "per_case.csv")
    assert finished == evaluated == len(kept) >= 2 and never == 8 - finished >= 1
    assert f"{finished} case(s) finished and kept in {data / 'o' / 'cases'}, {never} not evaluated" in err


@pytest.mark.slow  # real processes
def test_ctrl_c_before_any_case_prints_no_table(data):
    run = _start(data, 30)  # the first case takes 30 s: none finishes
    start = time.monotonic()
    while not list((data / "o").glob(".ccmetrics.lock")) or time.monotonic() - start < 3:
        assert run.poll() is None and time.monotonic() - start < 120, run.communicate()
        time.sleep(0.1)
    os.killpg(run.pid, signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert out == ""  # no counts of nothing, no table of NaN
    assert "0 case(s) finished" in err and "not evaluated" in err and "--resume" in err


# ---------------------------------------------------------------- 9. a Python write over an earlier run's results


def test_a_report_drawn_from_the_tables_is_named_before_a_write_would_remove_it(data, capsys):
    out = data / "results"
    assert _run(capsys, data / "gt", data / "pred", "--out-dir", out, "--metrics", "dice")[0] == 0
    assert main(["report", str(out)]) == 0 and (out / "report.html").is_file()
    capsys.readouterr()
    with pytest.raises(FileExistsError) as refused:
        refuse_stale_report(out)
    assert str(refused.value) == (
        f"{out / 'report.html'} was drawn by `ccmetrics report` from the tables there: writing new tables would "
        "remove it (it would describe tables that are gone); pass overwrite=True to write them and remove it "
        "(`ccmetrics report` draws it again), or give another folder"
    )
    with command_line(), pytest.raises(FileExistsError, match="; run with --overwrite to write them and remove it"):
        refuse_stale_report(out)
    refuse_stale_report(data / "elsewhere")  # a folder that does not exist: nothing to refuse
    (out / "report.html").write_text("<h1>my notes on this run</h1>")
    refuse_stale_report(out)  # the user's own page: never removed, so never in the way


@pytest.mark.skipif(
    "overwrite" not in inspect.signature(DatasetResult.write).parameters,
    reason="DatasetResult.write(overwrite=) is not there yet (results/dataset.py)",
)
def test_result_write_keeps_a_report_unless_told_to_overwrite(data, capsys):
    out = data / "results"
    result = evaluate_dataset(data / "gt", data / "pred", ["dice"], progress=False)
    result.write(out, plots=False)
    assert result.write(out, plots=False)["removed"] == []  # its own tables: replaced, as ever
    assert main(["report", str(out)]) == 0
    capsys.readouterr()
    report = (out / "report.html").read_bytes()
    with pytest.raises(FileExistsError, match="report.html"):
        result.write(out, plots=False)
    assert (out / "report.html").read_bytes() == report  # nothing removed
    written = result.write(out, plots=False, overwrite=True)
    assert written["removed"] == ["report.html"]


# ---------------------------------------------------------------- 12. smaller stumbles


def test_files_given_for_folders_are_named_as_files(data, capsys):
    gt, pred = data / "gt" / "c0.nii.gz", data / "pred" / "c0.nii.gz"
    code, out, err = _run(capsys, gt, pred, "--out-dir", data / "o")
    assert code == 2 and not (data / "o").exists()
    assert err.splitlines()[-1] == (
        f"ccmetrics evaluate: error: GT_DIR {gt} and PRED_DIR {pred} are files, not folders: the GT and the "
        f"predictions are two folders of image files, paired by file name (e.g. {data / 'gt'}); to evaluate one "
        "case, put each of its files in a folder of its own"
    )
    code, out, err = _run(capsys, data / "gt", pred, "--out-dir", data / "o")
    assert code == 2 and f"error: PRED_DIR {pred} is a file, not a folder:" in err
    code, out, err = _run(capsys, data / "nowhere", data / "pred", "--out-dir", data / "o")
    assert code == 2 and err.splitlines()[-1] == f"ccmetrics evaluate: error: GT_DIR {data / 'nowhere'} does not exist"
    code, out, err = _run(capsys, gt, "--probabilities", data / "prob", "--out-dir", data / "o")
    assert code == 2 and f"error: GT_DIR {gt} is a file, not a folder: give the folder that holds the GT images" in err


def test_a_spacing_of_two_values_on_3d_images_is_one_error_before_any_case(data, capsys):
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--spacing", "0.8,0.8")
    assert code == 2 and out == "" and "evaluating" not in err and not (data / "o").exists()
    assert err.splitlines()[-1] == (
        "ccmetrics evaluate: error: --spacing 0.8,0.8 has 2 values but the images are 3D (c0.nii.gz): give 3, e.g. "
        "--spacing 0.8,0.8,0.8, or leave --spacing out to take each file's own (header)"
    )
    code, out, err = _run(capsys, data / "gt", data / "pred", "--out-dir", data / "o", "--spacing", "1,1,2")
    assert code == 0 and ": 3 evaluated (0 flagged), 0 failed;" in out  # three values: evaluated


def test_simulations_refuse_to_replace_an_earlier_studys_figures(data, capsys):
    from simulations.cli import main as simulations
    from simulations.cli import outputs

    expected = {f"{n}{s}" for n in ("fig4", "fig5") for s in (".png", "_per_step.csv", "_per_component.csv")}
    assert set(outputs("custom")) == expected | {"fig4_summary.csv", "fig5_summary.csv"}  # as figures._save names them
    assert set(outputs("fig2")) == {"fig2.png", "fig2_per_step.csv", "fig2_per_component.csv"}
    out = data / "sim"
    out.mkdir()
    (out / "fig4.png").write_bytes(b"the figure of `fig4 --quick`")  # an earlier study in the same folder
    (out / "notes.txt").write_text("the user's")
    argv = ["custom", "--gt-dir", str(data / "gt"), "--out", str(out), "--quiet", "--max-n", "1"]
    assert simulations(argv) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {out} holds the files of an earlier run that `custom` would replace (fig4.png): give another --out "
        "(e.g. a folder per study), or --overwrite to replace them"
    )
    assert sorted(p.name for p in out.iterdir()) == ["fig4.png", "notes.txt"]  # nothing written before refusing
    assert (out / "fig4.png").read_bytes() == b"the figure of `fig4 --quick`"
    # masks too small for the study: an error, not a traceback, and nothing written
    assert simulations([*argv[:3], "--out", str(data / "small"), "--quiet", "--max-n", "1"]) == 2
    assert capsys.readouterr().err.startswith("error: a false positive of ") and not (data / "small").exists()


@pytest.mark.slow  # two real studies
def test_simulations_write_what_they_name_and_replace_it_with_overwrite(data, capsys):
    from simulations.cli import main as simulations
    from simulations.cli import outputs

    masks = data / "masks"  # two lesions of a few hundred voxels: a false positive of their size fits beside them
    masks.mkdir()
    for case in ("m0", "m1"):
        gt = np.zeros((32, 32, 20), np.uint8)
        gt[4:12, 4:12, 4:10] = 1
        gt[18:26, 18:26, 10:16] = 1
        _write(masks / f"{case}.nii.gz", gt)
    out = data / "sim"
    argv = ["custom", "--gt-dir", str(masks), "--out", str(out), "--quiet", "--max-n", "1"]
    assert simulations(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(outputs("custom"))  # the names it says it writes
    capsys.readouterr()
    assert simulations(argv) == 2
    assert "fig4_per_step.csv, fig4_per_component.csv, fig4.png, fig4_summary.csv and 4 more" in capsys.readouterr().err
    assert simulations([*argv, "--overwrite"]) == 0
