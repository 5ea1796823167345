"""Issue 43, point 11: the report without clutter, built as a user builds it (``ccmetrics evaluate`` then
``ccmetrics report OUT --images DIR``) and read as text.

* a channel left out is said once per case (at its head), not under each lesion; left out of every case, once at the
  top;
* the options are listed by their flags, the grid tolerance ``--tolerance-mm`` not beside the NSD tolerance as if
  it were one (hidden at its default);
* an ∞ HD95 beside a finite CC-HD95 says why (no predicted voxel, or an empty GT) and what CC-HD95 did instead, the
  worst distance computed here by hand from the GT's header;
* ``--images`` given a folder of masks (the GT's folder, or a copy of it) is said once and nothing is drawn on it.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from scipy import ndimage

from ccmetrics.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "data"


def visible_text(html: str) -> str:
    """The page's text as a reader sees it: no scripts, styles or tags, entities decoded."""
    text = re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", "", text))


def section(html: str, case: str) -> str:
    start = html.index(f'<details id="case-{case}"')
    return html[start : html.index("</details>\n", start)]


def report(result: Path, tmp_path: Path, *extra: str, capsys=None) -> tuple[str, str]:
    """``ccmetrics report RESULT --html FILE ...`` as typed: the page and what was printed."""
    out = tmp_path / "report.html"
    code = main(["report", str(result), "--html", str(out), "--no-viewer", *extra])
    assert code == 0
    printed = capsys.readouterr().out if capsys is not None else ""
    return out.read_text(encoding="utf-8"), printed


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clutter") / "results"
    code = main(["evaluate", str(EXAMPLES / "gt"), str(EXAMPLES / "pred"), "--out-dir", str(out), "--quiet"])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> Path:
    """The example scans: CT ``_0000`` and PET ``_0001``, case_004's PET on its own coarser grid."""
    folder = tmp_path_factory.mktemp("scans") / "images"
    subprocess.run([sys.executable, str(ROOT / "examples" / "make_example_images.py"), str(folder)], check=True)
    return folder


# ---------------------------------------------------------------- (a) a channel left out: once per case


def test_a_channel_left_out_is_said_once_at_the_case_head_not_under_each_lesion(result, scans, tmp_path):
    html, _ = report(result, tmp_path, "--images", str(scans))
    why = "channel 0001: shape differs: gt (96, 96, 48), image (48, 48, 48)"
    text = visible_text(section(html, "case_004"))
    n_lesions = ndimage.label(nib.load(EXAMPLES / "gt" / "case_004.nii.gz").get_fdata() > 0, np.ones((3, 3, 3)))[1]
    assert n_lesions == 7 and text.count("GT lesions") == 1
    assert text.count(why) == 1  # was 1 + 7 lesions + 1 false positive
    assert text.count(f"Channel 0001 left out (drawn: 0000): {why}") == 1
    assert "not drawn:" not in visible_text(html)
    assert visible_text(html).count(why) == 2  # the case's head, and the summary's list of cases at the top
    assert html.count('class="warning channel-note"') == 1


def test_a_channel_left_out_of_every_case_is_said_once_at_the_top(result, scans, tmp_path):
    every = tmp_path / "images"
    shutil.copytree(scans, every)
    for ct in sorted(every.glob("*_0000.nii.gz")):  # every PET on case_004's coarser grid
        shutil.copy(scans / "case_004_0001.nii.gz", every / ct.name.replace("_0000", "_0001"))
    html, printed = report(result, tmp_path, "--images", str(every), capsys=None)
    why = "channel 0001: shape differs: gt (96, 96, 48), image (48, 48, 48)"
    text = visible_text(html)
    assert text.count(why) == 1
    assert "Channel 0001 left out of every case (6 cases; drawn: 0000):\n" + why + "." in text
    assert 'class="warning channel-note"' not in html  # no case repeats it


def test_the_command_says_a_reason_common_to_every_case_once(result, scans, tmp_path, capsys):
    every = tmp_path / "images"
    shutil.copytree(scans, every)
    for ct in sorted(every.glob("*_0000.nii.gz")):
        shutil.copy(scans / "case_004_0001.nii.gz", every / ct.name.replace("_0000", "_0001"))
    capsys.readouterr()
    _, printed = report(result, tmp_path, "--images", str(every), capsys=capsys)
    why = "channel 0001: shape differs: gt (96, 96, 48), image (48, 48, 48)"
    assert printed.count(why) == 1
    assert f"Channels left out (the other channels drawn) in every case: {why}\n" in printed


# ---------------------------------------------------------------- (b) the options by their flags


def options_line(html: str) -> str:
    return " ".join(visible_text(html[html.index('<p class="muted" id="options">') :]).split("Written by")[0].split())


def test_the_options_are_listed_by_their_flags_without_the_default_grid_tolerance(result, tmp_path):
    line = options_line(report(result, tmp_path)[0])
    assert line == (
        "Evaluation options, as flags of ccmetrics evaluate: --metrics dice,nsd,hd95 (metrics evaluated); "
        "--spacing header (voxel spacing: from each GT file's header); --nsd-tolerance 1 (NSD's tolerance, in mm); "
        "--detection-rule overlap (what counts as a detected lesion)."
    )
    assert "tolerance_mm" not in line and "tolerance-mm" not in line and " = " not in line


def test_a_grid_tolerance_given_is_listed_with_what_it_means(tmp_path):
    out = tmp_path / "results"
    argv = ["evaluate", str(EXAMPLES / "gt"), str(EXAMPLES / "pred"), "--out-dir", str(out), "--quiet"]
    assert main([*argv, "--metrics", "dice", "--tolerance-mm", "0.01", "--nsd-tolerance", "2"]) == 0
    line = options_line(report(out, tmp_path)[0])
    assert line == (
        "Evaluation options, as flags of ccmetrics evaluate: --metrics dice (metrics evaluated); --spacing header "
        "(voxel spacing: from each GT file's header); --nsd-tolerance 2 (NSD's tolerance, in mm); --detection-rule "
        "overlap (what counts as a detected lesion); --tolerance-mm 0.01 (how far the GT's and the prediction's grids "
        "may differ, in mm; not a metric's tolerance)."
    )


# ---------------------------------------------------------------- (c) why HD95 is ∞


def worst_distance_mm(gt_file: Path) -> float:
    """The image's diagonal sqrt(Σ(n_k·s_k)²), from the header (docs/definitions.md)."""
    header = nib.load(gt_file).header
    return math.sqrt(sum((n * s) ** 2 for n, s in zip(header.get_data_shape(), header.get_zooms())))


def test_an_infinite_hd95_without_prediction_says_why_and_what_cc_hd95_did(result, tmp_path):
    html, _ = report(result, tmp_path)
    gt = EXAMPLES / "gt" / "case_005.nii.gz"
    assert not (EXAMPLES / "pred" / "case_005.nii.gz").exists()  # no prediction: an empty one
    n = ndimage.label(nib.load(gt).get_fdata() > 0, np.ones((3, 3, 3)))[1]
    worst = f"{worst_distance_mm(gt):.4g}"
    assert (n, worst) == (8, "307.3")
    note = (
        "No predicted voxel: HD95 is ∞ (no surface to measure to). CC-HD95 counts each of the 8 lesions, all missed "
        f"(no predicted voxel in its region), as the worst distance, {worst} mm (the image's diagonal), and averages "
        f"them: {worst} mm."
    )
    text = visible_text(section(html, "case_005"))
    assert text.count(note) == 1
    assert 'class="num infinite"' in section(html, "case_005")
    row = re.search(r'<tr data-text="case_005".*?</tr>', html, re.S).group(0)  # the ranked table: on hover
    cell = re.search(r'<td class="num infinite" data-value="[^"]*" title="([^"]*)">∞</td>', row)
    assert cell and unescape(cell.group(1)) == note[0].lower() + note[1:]


def test_an_infinite_hd95_on_an_empty_gt_says_why(result, tmp_path):
    html, _ = report(result, tmp_path)
    gt = EXAMPLES / "gt" / "case_006.nii.gz"
    assert not nib.load(gt).get_fdata().any() and nib.load(EXAMPLES / "pred" / "case_006.nii.gz").get_fdata().any()
    worst = f"{worst_distance_mm(gt):.4g}"
    note = (
        "The GT is empty (a healthy control) and the prediction is not: HD95 is ∞ (no GT surface to measure from). "
        f"CC-HD95 has no lesion to average over and is the worst distance, {worst} mm (the image's diagonal)."
    )
    assert visible_text(section(html, "case_006")).count(note) == 1
    assert visible_text(html).count("HD95 is ∞ (no") == 2  # case_005 and case_006 only: the others are finite


# ---------------------------------------------------------------- (d) --images given masks


def test_images_pointing_at_the_gt_folder_is_said_once_and_not_drawn(result, tmp_path, capsys):
    capsys.readouterr()
    html, printed = report(result, tmp_path, "--images", str(EXAMPLES / "gt"), capsys=capsys)
    text = visible_text(html)
    assert text.count("holds masks, not scans") == 1
    assert (
        f"--images {EXAMPLES / 'gt'} holds masks, not scans:\nit is the folder of the GT files the evaluation read."
        in (text)
    )
    assert "Thumbnails drawn on the images" not in text and 'class="thumb-row"' not in html  # no grey-level rows
    assert "on the image" not in text.split("Cases ranked")[1].split("Lesion finder")[0]
    assert printed.count("holds masks, not scans") == 1 and "Thumbnails drawn on the images" not in printed


def test_images_holding_a_copy_of_the_masks_is_seen_from_their_values(result, tmp_path, capsys):
    copy = tmp_path / "not_scans"
    shutil.copytree(EXAMPLES / "gt", copy)
    values = sorted(np.unique(nib.load(copy / "case_001.nii.gz").get_fdata()).tolist())
    assert values == [0.0, 1.0]
    capsys.readouterr()
    html, printed = report(result, tmp_path, "--images", str(copy), capsys=capsys)
    text = visible_text(html)
    assert text.count("holds masks, not scans") == 1
    assert "every image of it read (6 cases) holds at most 16 distinct integer values, as a GT or a prediction" in text
    assert "only 2 distinct integer values (0, 1)" in text
    assert 'class="thumb-row"' not in html and "Not drawn on the image" not in text  # no note per case either
    assert printed.count("holds masks, not scans") == 1


def test_a_scan_is_still_drawn(result, scans, tmp_path):
    html, _ = report(result, tmp_path, "--images", str(scans))
    assert "holds masks" not in visible_text(html)
    assert html.count('<div class="thumb-row" data-channel="0000">') > 0


def test_one_channel_holding_a_mask_is_left_out_of_its_case_only(result, scans, tmp_path):
    mixed = tmp_path / "images"
    shutil.copytree(scans, mixed)
    shutil.copy(EXAMPLES / "gt" / "case_001.nii.gz", mixed / "case_001_0001.nii.gz")  # a mask where its PET was
    html, _ = report(result, tmp_path, "--images", str(mixed))
    text = visible_text(html)
    why = "channel 0001 holds a mask, not a scan: only 2 distinct integer values (0, 1)"
    assert "holds masks, not scans" not in text  # the folder holds scans
    assert visible_text(section(html, "case_001")).count(f"Channel 0001 left out (drawn: 0000): {why}") == 1
    assert text.count(why) == 2  # case_001's head and the list at the top
    assert 'class="thumb-row" data-channel="0001"' not in section(html, "case_001")
    assert 'class="thumb-row" data-channel="0001"' in section(html, "case_002")


def test_many_ignored_files_are_one_line_with_their_list_folded(tmp_path):
    """Issue 43, point 7 on the page: 60 .pkl and a .json beside the predictions (as nnU-Net writes them) are one
    summary line, counted by kind; the list itself is folded under it, each name once."""
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    shutil.copytree(EXAMPLES / "gt", gt)
    shutil.copytree(EXAMPLES / "pred", pred)
    names = [f"case_{i:03d}.pkl" for i in range(60)] + ["plans.json"]
    for name in names:
        (pred / name).write_text("not an image")
    out = tmp_path / "out"
    assert main(["evaluate", str(gt), str(pred), "--out-dir", str(out), "--metrics", "dice", "--quiet"]) == 0
    assert main(["report", str(out), "--no-viewer"]) == 0
    html = (out / "report.html").read_text()
    text = " ".join(visible_text(html).split())
    assert "Ignored by the evaluation: 61 files left out (60 .pkl, 1 .json)" in text
    folded = re.search(r'<details class="muted ignored-files">(.*?)</details>', html, re.S)
    assert folded is not None and all(folded.group(1).count(name) == 1 for name in names)
    assert "Files ignored by the evaluation:" not in text
