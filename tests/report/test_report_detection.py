"""ccmetrics report of a folder evaluated with probability maps: the detection section and each candidate's confidence.

Synthetic data only, written into a temporary folder: three cases with float probability maps on the GT's grid
(``--probabilities`` without predictions: the segmentation is ``prob > 0.5``). ``case_a``: lesion 1 under a map of
0.9 (found), lesion 2 under none (missed), a false-positive blob of 0.7; ``case_b``: one lesion under 0.6;
``case_c``: an empty GT and a false-positive blob of 0.3. The values the page shows are compared with
``summary.json`` and ``per_candidate.csv`` as the evaluation wrote them. The browser test opens the page in
headless Chromium (``/usr/bin/chromium`` and ``/usr/bin/chromedriver``, as ``test_report.py`` starts them) and is
skipped only where these are absent.
"""

import html as html_lib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _browser import browser

from ccmetrics.report import detection, page, write_report

SHAPE = (48, 48, 24)
SPACING = (2.0, 2.0, 3.0)


def write_maps(root):
    """gt/, pred/ (the maps' own segmentation, for the evaluation with predictions) and prob/ under ``root``."""
    from ccmetrics.formats.io import Image, save_image

    like = Image(np.zeros(SHAPE, np.uint8), SPACING, np.diag(SPACING + (1.0,)))
    for sub in ("gt", "pred", "prob"):
        (root / sub).mkdir(parents=True)
    cases = {}
    gt = np.zeros(SHAPE, np.uint8)
    gt[6:16, 6:16, 4:10] = 1  # lesion 1, found
    gt[34:37, 30:33, 12:15] = 1  # lesion 2, missed: no candidate
    prob = np.zeros(SHAPE, np.float32)
    prob[7:16, 6:16, 4:10] = 0.9
    prob[40:44, 40:44, 12:16] = 0.7  # a false positive
    cases["case_a"] = gt, prob
    gt = np.zeros(SHAPE, np.uint8)
    gt[20:28, 20:28, 8:14] = 1
    prob = np.zeros(SHAPE, np.float32)
    prob[20:28, 20:28, 8:14] = 0.6
    cases["case_b"] = gt, prob
    prob = np.zeros(SHAPE, np.float32)
    prob[10:14, 30:34, 5:9] = 0.3  # below 0.5: in no segmentation, a candidate all the same
    cases["case_c"] = np.zeros(SHAPE, np.uint8), prob
    for case, (gt, prob) in cases.items():
        save_image(root / "gt" / f"{case}.nii.gz", gt, like=like)
        save_image(root / "pred" / f"{case}.nii.gz", (prob > 0.5).astype(np.uint8), like=like)
        save_image(root / "prob" / f"{case}.nii.gz", prob, like=like)
    return root


def evaluate(root, out, *, predictions=False):
    from ccmetrics.cli import main

    folders = [str(root / "gt")] + ([str(root / "pred")] if predictions else [])
    args = ["evaluate", *folders, "--probabilities", str(root / "prob"), "--out", str(out), "--quiet"]
    assert main([*args, "--metrics", "dice,nsd,detection", "--thresholds", "0.2:0.8:0.2"]) == 0
    return out


@pytest.fixture(scope="module")
def maps(tmp_path_factory):
    return write_maps(tmp_path_factory.mktemp("maps") / "data")


@pytest.fixture(scope="module")
def result(maps):
    return evaluate(maps, maps.parent / "results")


@pytest.fixture(scope="module")
def report(result):
    out = result.parent / "report.html"
    info = write_report(result, out)
    return out, info, out.read_text(encoding="utf-8")


def cell(html, pattern):
    """The ``data-value`` and the text of the first element matching ``pattern`` (a regex of its opening tag)."""
    match = re.search(pattern + r'[^>]*data-value="([^"]*)"[^>]*>(.*?)</', html, re.S)
    assert match, pattern
    return match.group(1), html_lib.unescape(re.sub(r"<[^>]+>", "", match.group(2))).strip()


def section_html(html):
    start = html.index('<section id="detection">')
    return html[start : html.index("</section>", start)]


# ---------------------------------------------------------------- the section


def test_section_shows_the_values_of_summary_json(report, result):
    _, _, html = report
    doc = json.loads((result / "summary.json").read_text())
    curves = doc["detection_curves"]["1"]
    section = section_html(html)
    for key in ("ap", "auroc", "picai_score", "cpm"):
        row = re.search(rf'<tr data-score="{key}">.*?</tr>', section, re.S).group(0)
        value, text = cell(row, r'data-stat="value"')
        assert float(value) == curves[key]["value"] and text == page.fmt(curves[key]["value"])
        assert float(cell(row, r'data-stat="ci_low"')[0]) == curves[key]["ci"][0]
        assert float(cell(row, r'data-stat="ci_high"')[0]) == curves[key]["ci"][1]
    rates = curves["sensitivity_at_fp_per_case"]
    assert len(rates) == 7
    for rate, value in rates.items():
        assert float(cell(section, rf'data-rate="{rate}"')[0]) == value
    header = re.search(r'class="compact sensitivity-at-fp">\s*<thead>(.*?)</thead>', section, re.S).group(1)
    assert re.findall(r'<th class="num">([^<]*)</th>', header) == ["1/8", "1/4", "1/2", "1", "2", "4", "8"]
    counts = re.search(r'<p class="detection-counts">(.*?)</p>', section, re.S).group(1).split()
    assert counts[:2] == [str(curves["n_lesions"]), "GT"] and f"{curves['n_false_positives']}" in counts
    calibration = doc["calibration"]["1"]
    for name, value in (("brier", calibration["brier"]["value"]), ("lesion_ece", calibration["lesion_ece"])):
        assert float(cell(section, rf'data-calibration="{name}"')[0]) == value
    best = doc["thresholds"]["best"]
    for metric in ("dice", "nsd"):
        row = re.search(rf'<tr data-metric="{metric}">.*?</tr>', section, re.S).group(0)
        assert float(cell(row, r'data-best="standard"')[0]) == best[f"1/{metric}"]["standard"]
        assert float(cell(row, r'data-best="cc"')[0]) == best[f"1/{metric}"]["cc"]


def test_section_figures_are_inline_and_not_repeated(report, result):
    _, _, html = report
    section = section_html(html)
    figures = re.findall(r'<figure data-figure="(\w+)"><img class="plot" src="data:image/png;base64,', section)
    assert figures == list(detection.FIGURES)  # froc, pr, roc, reliability, thresholds
    for name in ("froc.png", "pr.png", "roc.png", "reliability.png", "thresholds.png"):
        assert html.count(f'alt="{name}"') == 1  # in the section, not again among the evaluation's plots
    assert html.count('class="plot"') == len(list((result / "plots").glob("*.png")))
    assert not re.search(r'(src|href)="(https?:)?//', html)  # still self-contained
    assert '<a href="#detection">Lesion detection</a>' in html


# ---------------------------------------------------------------- the lesion finder


def test_lesion_confidence_equals_per_candidate(report, result):
    _, info, html = report
    candidates = pd.read_csv(result / "per_candidate.csv", dtype={"case": str})
    matched = candidates[(candidates["case"] == "case_a") & (candidates["outcome"] == "tp")]
    (confidence,) = matched.loc[matched["lesion"] == 1, "confidence"]
    assert confidence == pytest.approx(0.9) and 2 not in set(matched["lesion"])
    model = page.build_model(result)
    rows = {(r["case"]["case"], r["kind"], r["label"]): r for r in model["finder"]}
    assert rows["case_a", "lesion", 1]["confidence"] == confidence
    assert rows["case_a", "lesion", 2]["confidence"] is None  # missed: no candidate
    for where in (r'<tr id="case-case_a-lesion-1"', r'<a href="#case-case_a-lesion-1">'):  # the case, the finder
        row = re.search(where + ".*?</tr>", html, re.S).group(0)
        value, text = cell(row, r'class="num confidence"')
        assert float(value) == confidence and text == page.fmt(confidence, 3)
    row = re.search(r'<tr id="case-case_a-lesion-2".*?</tr>', html, re.S).group(0)
    assert cell(row, r'class="num confidence"') == ("", "missed")
    finder_row = re.search(r'<a href="#case-case_a-lesion-2">.*?</tr>', html, re.S).group(0)
    assert cell(finder_row, r'class="num confidence"') == ("", "missed")
    assert "(1 of 3 lesions)" in re.sub(r"\s+", " ", html)  # the finder's sentence counts them


def test_false_positive_candidates_are_listed_with_their_confidence(report, result):
    _, info, html = report
    candidates = pd.read_csv(result / "per_candidate.csv", dtype={"case": str})
    fps = candidates[candidates["outcome"] == "fp"]
    assert sorted(fps["case"]) == ["case_a", "case_c"]  # the 0.7 blob, and the 0.3 blob of the empty GT
    assert info.n_fp_candidates == len(fps) == 2 and "2 false-positive candidates" in str(info)
    for fp in fps.itertuples():
        pattern = rf'<tr [^>]*data-candidate="{fp.candidate}">\s*<td data-value="{fp.case}">.*?</tr>'
        finder = re.search(pattern, html, re.S)
        assert finder and "false-positive candidate" in finder.group(0)
        assert float(cell(finder.group(0), r'class="num confidence"')[0]) == fp.confidence
        case_row = re.search(rf'<tr id="case-{fp.case}-candidate-{fp.candidate}">.*?</tr>', html, re.S).group(0)
        assert float(cell(case_row, r'class="num confidence"')[0]) == fp.confidence
    model = page.build_model(result)
    (case_c,) = [c for c in model["cases"] if c["case"] == "case_c"]
    assert [c["confidence"] for c in case_c["fp_candidates"]] == [pytest.approx(0.3)]


def outcomes(model):
    """Each case's lesions (number, found) and false-positive components (number, voxels, region), by case."""
    return {
        c["case"]: (
            [(les["label"], les["detected"]) for les in c["lesions"]],
            [(fp["label"], fp["voxels"], fp["region"]) for fp in c["false_positives"] or []],
        )
        for c in model["cases"]
    }


def test_maps_without_predictions_draw_the_segmentation_of_the_map(report, result, maps):
    """The segmentation was the map's (prob > 0.5): the report reads the map and draws that segmentation as the
    prediction, the same lesions found and missed, the same false positives, the same thumbnails as a run given
    that segmentation as PRED_DIR."""
    _, info, html = report
    assert not info.unreadable and page.SEGMENTED_FROM_MAP not in html
    model = page.build_model(result)
    by_case = {c["case"]: c for c in model["cases"]}
    case_a = by_case["case_a"]
    assert case_a["drawn"] and case_a["segmented_from_map"] and case_a["prob_file"].endswith("case_a.nii.gz")
    assert [(les["label"], les["detected"]) for les in case_a["lesions"]] == [(1, True), (2, False)]
    assert all(les["thumb"] for les in case_a["lesions"])  # the missed lesion is drawn too
    (fp,) = case_a["false_positives"]  # the 0.7 blob: a false-positive component of prob > 0.5
    assert fp["thumb"] and fp["voxels"] == 4 * 4 * 4
    assert by_case["case_c"]["false_positives"] == []  # the 0.3 blob: in no segmentation, a candidate only
    assert info.n_thumbnails == 4 and info.n_false_positives == 1  # lesions 1, 2 of case_a, case_b's, the fp
    files = re.search(r'<p class="files">GT <code>[^<]*case_a\.nii\.gz</code> · prediction (.*?)</p>', html, re.S)
    assert files and "prob &gt; 0.5" in files.group(1) and "case_a.nii.gz" in files.group(1)
    per_component = pd.read_csv(result / "per_component.csv", dtype={"case": str})
    for case, (lesions, _) in outcomes(model).items():
        rows = per_component[per_component["case"] == case].sort_values("component")
        assert lesions == list(zip(rows["component"], rows["detected"].astype(bool)))

    given = page.build_model(evaluate(maps, maps.parent / "segmentation_given", predictions=True))
    assert outcomes(given) == outcomes(model)  # prob > 0.5 as PRED_DIR: the same lesion outcomes
    thumbs = {(r["case"]["case"], r["kind"], r["label"]): r["thumb"]["src"] for r in model["finder"] if r["thumb"]}
    same = {(r["case"]["case"], r["kind"], r["label"]): r["thumb"]["src"] for r in given["finder"] if r["thumb"]}
    assert thumbs == same and len(thumbs) == 4


def test_a_map_deleted_after_the_evaluation_is_named_and_the_report_still_written(tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(write_maps(tmp_path / "written"), data)
    result = evaluate(data, tmp_path / "results")
    (data / "prob" / "case_a.nii.gz").unlink()
    out = tmp_path / "report.html"
    info = write_report(result, out)
    assert out.is_file() and len(info.unreadable) == 1
    (line,) = info.unreadable
    assert line.startswith("case_a: could not read the probability map") and "prob > 0.5" in line
    assert str(data / "prob" / "case_a.nii.gz") in line and "not found" in line
    model = page.build_model(result)
    by_case = {c["case"]: c for c in model["cases"]}
    assert not by_case["case_a"]["drawn"] and by_case["case_a"]["false_positives"] is None
    assert [les["detected"] for les in by_case["case_a"]["lesions"]] == [True, False]  # the tables, as evaluated
    assert by_case["case_b"]["drawn"] and by_case["case_b"]["lesions"][0]["thumb"]  # the other cases drawn
    html = html_lib.unescape(out.read_text(encoding="utf-8"))
    assert f"Images: {line.split(': ', 1)[1]}" in html  # the case's note on the page


def test_an_nnunet_npz_map_is_drawn_from_its_channel(tmp_path):
    """nnU-Net's CASE.npz ((C, z, y, x), channel 1 the foreground) is read on the GT's grid, as the evaluation did."""
    from ccmetrics.formats.io import Image, save_image

    like = Image(np.zeros(SHAPE, np.uint8), SPACING, np.diag(SPACING + (1.0,)))
    for sub in ("gt", "prob"):
        (tmp_path / sub).mkdir()
    gt = np.zeros(SHAPE, np.uint8)
    gt[4:12, 30:40, 2:8] = 1  # found: 0.8
    gt[30:33, 5:8, 15:18] = 1  # missed: 0.4
    prob = np.zeros(SHAPE, np.float32)
    prob[4:12, 30:40, 2:8] = 0.8
    prob[30:33, 5:8, 15:18] = 0.4
    prob[40:44, 40:44, 18:22] = 0.9  # a false positive
    save_image(tmp_path / "gt" / "case_n.nii.gz", gt, like=like)
    np.savez_compressed(tmp_path / "prob" / "case_n.npz", probabilities=np.stack([1 - prob.T, prob.T]))
    from ccmetrics.cli import main

    out = tmp_path / "results"
    args = ["evaluate", str(tmp_path / "gt"), "--probabilities", str(tmp_path / "prob"), "--out", str(out)]
    assert main([*args, "--quiet", "--metrics", "dice,detection"]) == 0
    model = page.build_model(out)
    ((lesions, fps),) = outcomes(model).values()
    assert lesions == [(1, True), (2, False)] and [(v, r) for _, v, r in fps] == [(4 * 4 * 4, 1)]
    assert model["n_drawn"] == 1 and not model["unreadable"] and model["cases"][0]["prob_file"].endswith(".npz")


def test_a_map_given_as_an_array_is_not_drawn_and_says_why(tmp_path):
    """per_case.csv names no file for a map given as an array: nothing to read, the case says so."""
    import ccmetrics

    gt = np.zeros((24, 24, 12), np.uint8)
    gt[4:10, 4:10, 3:7] = 1
    prob = (gt * 0.9).astype(np.float32)
    out = tmp_path / "results"
    ccmetrics.evaluate_dataset({"c": (gt, None)}, probabilities={"c": prob}, progress=False).write(out)
    model = page.build_model(out)
    (case,) = model["cases"]
    assert not case["drawn"] and case["problem"] == page.SEGMENTED_FROM_MAP


def test_maps_with_predictions_give_the_false_positive_components_their_confidence(maps):
    """With predictions the candidates are the prediction's components: a false-positive component shows the
    confidence of the candidate that is it, and is not listed a second time."""
    result = evaluate(maps, maps.parent / "with_pred", predictions=True)
    candidates = pd.read_csv(result / "per_candidate.csv", dtype={"case": str})
    (fp,) = candidates[candidates["outcome"] == "fp"].itertuples()  # case_a's 0.7 blob; case_c's 0.3 is no component
    model = page.build_model(result)
    others = [r for r in model["finder"] if r["kind"] != "lesion"]
    assert [(r["case"]["case"], r["kind"], r["label"]) for r in others] == [("case_a", "false_positive", fp.candidate)]
    assert others[0]["confidence"] == fp.confidence and others[0]["thumb"] and not model["unreadable"]
    assert model["candidate_counts"]["fp_candidates"] == model["candidate_counts"]["fp_on_components"] == 1
    html = page.render_html(model)
    row = re.search(rf'<tr id="case-case_a-fp-{fp.candidate}">.*?</tr>', html, re.S).group(0)
    assert float(cell(row, r'class="num confidence"')[0]) == fp.confidence
    assert 'id="case-case_a-candidate-' not in html and model["detection"][0]["figures"]


def test_folder_without_maps_has_no_detection_section(tmp_path):
    from test_report import evaluate_folder, synthetic_folders

    result = evaluate_folder(*synthetic_folders(tmp_path / "data"), tmp_path / "results")
    model = page.build_model(result)
    assert model["detection"] == [] and not model["with_candidates"] and model["candidate_counts"] is None
    assert all("confidence" not in r for r in model["finder"])
    out = tmp_path / "report.html"
    info = write_report(result, out)
    html = out.read_text()
    assert 'id="detection"' not in html and "Lesion detection" not in html and "candidate" not in html
    assert 'data-key="confidence"' not in html and "confidence" not in html
    assert info.n_fp_candidates is None and "candidate" not in str(info)


# ---------------------------------------------------------------- in the browser


def test_browser_shows_the_section_and_sorts_by_confidence(report, tmp_path):
    out, _, _ = report
    driver = browser(tmp_path)
    try:
        driver.get(Path(out).as_uri())
        loaded = driver.execute_script(
            "return [...document.querySelectorAll('#detection img')].map(i => i.complete && i.naturalWidth > 0);"
        )
        assert loaded == [True] * len(detection.FIGURES)
        driver.find_element("css selector", '#lesion-table th[data-key="confidence"]').click()
        values = driver.execute_script(
            """
            const table = document.getElementById('lesion-table');
            const column = [...table.tHead.rows[0].cells].findIndex(th => th.dataset.key === 'confidence');
            return [...table.tBodies[0].rows].map(r => r.cells[column].textContent.trim());
            """
        )
        # 3 lesions, case_a's false-positive component of prob > 0.5 (no candidate is it: "–"), 2 fp candidates
        assert values[0] == "missed" and len(values) == 6 and values.count("–") == 1
        numbers = [float(v) for v in values[1:] if v != "–"]
        assert len(numbers) == 4 and numbers == sorted(numbers)
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        driver.quit()


def visible_text(html):
    return html_lib.unescape(
        " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)>.*?</\1>", "", html, flags=re.S)).split())
    )


#: "1 cases", "1 empty-GT cases", "1 false-positive candidates": a count of one with a plural noun
SINGULAR_AS_PLURAL = re.compile(r"(?<![\d.,−-])1 (?:[\w-]+ )?(?:case|lesion|candidate|threshold|image|row|value)s\b")


def test_counts_of_one_are_singular(report, result):
    """Issue 30 ("1 empty-GT cases"): every count phrase of the page, detection section included, takes the singular
    for one: on this data set (one missed lesion, one case without lesions), and with every count of the detection
    section set to one."""
    _, _, html = report
    assert re.search(r"(?<![\d.,−-])1 (?:[\w-]+ )?(case|lesion|candidate)\b", visible_text(html))
    assert SINGULAR_AS_PLURAL.findall(visible_text(html)) == []
    model = page.build_model(result)
    (d,) = model["detection"]
    for key in ("n_cases", "n_positive_cases", "n_lesions", "n_true_positives", "n_false_positives"):
        d[key] = 1
    d["calibration"].update(n_cases=1, n_candidates=1, n_lesion_candidates=1)
    d["thresholds"].update(n_cases=1, n_thresholds=1)
    section = visible_text(section_html(page.render_html(model)))
    for phrase in (
        "1 GT lesion in 1 case with lesions",
        "1 lesion (100%) matched to a candidate, 1 false-positive candidate (1 per case)",
        "Calibration over 1 case:",
        "1 candidate of mean confidence",
        "1 threshold from",
        "mean over 1 case with lesions:",
        "the fraction of 1 lesion found against the false-positive candidates per case (1 case)",
    ):
        assert phrase in section, phrase
    assert SINGULAR_AS_PLURAL.findall(section) == []
