"""ccmetrics report of a folder with the scan's uptake (the ``pet`` columns): SUVmax and MTV beside each lesion, the
missed lesions hottest first, each case's hottest missed lesion, and the summary's count of hot missed lesions.

Synthetic data on an anisotropic grid (2 × 2 × 3 mm, 0.012 ml a voxel), evaluated by ``ccmetrics evaluate`` with
``dice,detection``; the ``pet`` columns are then added the way a run with scans writes them:
``ccmetrics.evaluate(gt=, pred=, metrics=["pet"], image=scan)`` per case, joined into the folder's tables and written
back with :meth:`ccmetrics.DatasetResult.write`. Every number the page shows is checked against ``per_component.csv``
as pandas reads it, and those against a brute force on the scan (``scipy.ndimage.label``, one maximum per lesion);
orders and the hottest lesions are computed here by hand. A folder without the ``pet`` columns gives the page it gave
before they existed (the finder case by case, no SUV anywhere), and dropping the columns again gives it byte for byte.

The cases (lesions numbered in raster order; "found": the prediction covers it, "missed": no predicted voxel in it):

- ``case_a``: lesion 1 found (SUVmax 6), 2 missed (15.2), 3 missed (2.5); a false positive at SUV 30.
- ``case_b``: lesions 1 and 2 missed at the same SUVmax 8 (a tie), 3 found (5).
- ``case_c``: 1 missed (exactly 4.0, the cut-off), 2 missed (8, ties with ``case_b``), 3 found (3), 4 missed (3.99).
- ``case_d``: 1 missed with no SUVmax (NaN in the table), 2 found.
- ``case_e``: 1 found: nothing missed.
"""

import math
import re
import shutil
from html import unescape

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from ccmetrics.report import page, write_report

SHAPE = (48, 48, 24)
SPACING = (2.0, 2.0, 3.0)
ML = 2.0 * 2.0 * 3.0 / 1000  # ml per voxel
BACKGROUND, INSIDE = 0.5, 1.5  # the scan's SUV outside the lesions, and in them away from their hottest voxel

#: per case: (GT box, hottest SUV, found); boxes in raster order of their first voxel, so lesion k is the k-th
CASES = {
    "case_a": [
        ((slice(4, 10), slice(4, 10), slice(2, 6)), 6.0, True),
        ((slice(20, 23), slice(4, 7), slice(2, 5)), 15.2, False),
        ((slice(36, 39), slice(4, 7), slice(2, 5)), 2.5, False),
    ],
    "case_b": [
        ((slice(4, 7), slice(30, 33), slice(12, 15)), 8.0, False),
        ((slice(14, 17), slice(30, 33), slice(12, 16)), 8.0, False),
        ((slice(30, 38), slice(20, 28), slice(8, 14)), 5.0, True),
    ],
    "case_c": [
        ((slice(2, 5), slice(2, 5), slice(2, 5)), 4.0, False),
        ((slice(12, 14), slice(12, 16), slice(8, 12)), 8.0, False),
        ((slice(22, 30), slice(22, 30), slice(4, 10)), 3.0, True),
        ((slice(40, 43), slice(4, 7), slice(18, 21)), 3.99, False),
    ],
    "case_d": [
        ((slice(4, 7), slice(4, 7), slice(4, 7)), 12.0, False),
        ((slice(20, 28), slice(20, 28), slice(8, 14)), 7.0, True),
    ],
    "case_e": [((slice(10, 18), slice(10, 18), slice(6, 12)), 9.0, True)],
}
FALSE_POSITIVE = ("case_a", (slice(40, 42), slice(40, 42), slice(18, 20)), 30.0)
UNMEASURED = ("case_d", 1)  # its SUVmax written as NaN: a lesion whose uptake was not measured


def write_cases(root):
    """gt/, pred/ as NIfTI files and each case's scan (float32) in a dict."""
    from ccmetrics.formats.io import Image, save_image

    like = Image(np.zeros(SHAPE, np.uint8), SPACING, np.diag(SPACING + (1.0,)))
    for sub in ("gt", "pred"):
        (root / sub).mkdir(parents=True)
    scans = {}
    for case, lesions in CASES.items():
        gt, pred = np.zeros(SHAPE, np.uint8), np.zeros(SHAPE, np.uint8)
        scan = np.full(SHAPE, BACKGROUND, np.float32)
        for box, hottest, found in lesions:
            gt[box] = 1
            scan[box] = min(INSIDE, hottest)
            scan[tuple(s.start + 1 for s in box)] = hottest  # one voxel inside, the hottest
            if found:
                pred[box] = 1
        if case == FALSE_POSITIVE[0]:
            pred[FALSE_POSITIVE[1]] = 1
            scan[FALSE_POSITIVE[1]] = FALSE_POSITIVE[2]
        save_image(root / "gt" / f"{case}.nii.gz", gt, like=like)
        save_image(root / "pred" / f"{case}.nii.gz", pred, like=like)
        scans[case] = scan
    return scans


def evaluate_folder(root, out):
    from ccmetrics.cli import main

    args = ["evaluate", str(root / "gt"), str(root / "pred"), "--out-dir", str(out), "--quiet"]
    assert main([*args, "--metrics", "dice,detection"]) == 0
    return out


def add_pet_columns(out, scans):
    """The ``pet`` columns of every case (``ccmetrics.evaluate(..., metrics=["pet"], image=scan)``) joined into the
    folder's per_component, per_prediction and per_case, written back; ``UNMEASURED``'s SUVmax set to NaN."""
    import ccmetrics
    from ccmetrics.formats.io import load_image

    result = ccmetrics.DatasetResult.read(out)
    components, predictions, cases = [], [], []
    root = out.parent / "data"
    for case, scan in scans.items():
        gt = load_image(root / "gt" / f"{case}.nii.gz").array
        pred = load_image(root / "pred" / f"{case}.nii.gz").array
        r = ccmetrics.evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, spacing=SPACING)
        pet = [c for c in r.per_component.columns if c not in result.per_component.columns]
        components.append(r.per_component[pet].reset_index().assign(case=case))
        prediction_pet = ["suv_max", "suv_mean", "suv_peak", "mtv_ml", "tlg"]
        predictions.append(r.per_prediction[prediction_pet].reset_index().assign(case=case))
        cases.append({"case": case, **r.case_scores})
    keys = ["case", "component"]
    result.per_component = result.per_component.merge(pd.concat(components), on=keys, how="left", validate="1:1")
    unmeasured = (result.per_component["case"] == UNMEASURED[0]) & (result.per_component["component"] == UNMEASURED[1])
    result.per_component.loc[unmeasured, "suv_max"] = np.nan
    result.per_prediction = result.per_prediction.merge(
        pd.concat(predictions), on=["case", "prediction"], how="left", validate="1:1"
    )
    result.per_case = result.per_case.merge(pd.DataFrame(cases), on="case", how="left", validate="1:1")
    result.write(out, n_resamples=50)
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """(the folder without pet columns, the same evaluation with them)."""
    base = tmp_path_factory.mktemp("pet")
    scans = write_cases(base / "data")
    plain = evaluate_folder(base / "data", base / "plain")
    pet = base / "results"
    shutil.copytree(plain, pet)
    return plain, add_pet_columns(pet, scans)


@pytest.fixture(scope="module")
def report(folders):
    out = folders[1].parent / "report.html"
    write_report(folders[1], out)
    return out.read_text()


def brute_force(root):
    """Per (case, lesion): (SUVmax, MTV ml, missed) from the files and scans by hand (26-connected components)."""
    import nibabel as nib

    out = {}
    for case, lesions in CASES.items():
        gt = np.asarray(nib.load(root / "gt" / f"{case}.nii.gz").dataobj) > 0
        pred = np.asarray(nib.load(root / "pred" / f"{case}.nii.gz").dataobj) > 0
        labels, n = ndimage.label(gt, np.ones((3, 3, 3)))
        assert n == len(lesions)
        scan = np.full(SHAPE, BACKGROUND, np.float32)
        for box, hottest, _ in lesions:
            scan[box] = min(INSIDE, hottest)
            scan[tuple(s.start + 1 for s in box)] = hottest
        for k in range(1, n + 1):
            inside = labels == k
            out[case, k] = (float(scan[inside].max()), int(inside.sum()) * ML, not pred[inside].any())
    return out


def table(folder):
    """per_component.csv as pandas reads it, by (case, component)."""
    t = pd.read_csv(folder / "per_component.csv")
    return {(r.case, int(r.component)): r for r in t.itertuples()}


def cells(row_html):
    """(attributes, text) of each cell of a table row."""
    return [
        (attrs, unescape(re.sub(r"<[^>]+>", "", text)).strip())
        for attrs, text in re.findall(r"<td([^>]*)>(.*?)</td>", row_html, re.S)
    ]


def value_of(attrs):
    match = re.search(r'data-value="([^"]*)"', attrs)
    return float(match.group(1)) if match and match.group(1) else math.nan


def finder_rows(html):
    """The lesion finder's rows, top to bottom: dicts of its columns (by ``data-key``) to (data-value, text), with
    ``kind``, ``missed`` and ``id`` (the row it links to)."""
    section = html[html.index('<table class="sortable" id="lesion-table">') :]
    section = section[: section.index("</table>")]
    keys = re.findall(r'<th data-key="([^"]+)"', section[: section.index("</thead>")])
    rows = []
    for attrs, body in re.findall(r'<tr (data-text="[^"]*"[^>]*)>(.*?)</tr>', section, re.S):
        row = dict(zip(keys, cells(body)))
        row["kind"] = re.search(r'data-kind="([^"]+)"', attrs).group(1)
        row["missed"] = 'data-missed="1"' in attrs
        row["id"] = re.search(r'<a href="#([^"]+)"', body).group(1)
        rows.append(row)
    return rows


def case_order(html):
    """The cases in the order of their sections on the page."""
    return [unescape(c) for c in re.findall(r'<details id="case-([^"]+)" class="case">', html)]


def lesion_of(anchor_id):
    case, k = re.fullmatch(r"case-(.+)-lesion-(\d+)", anchor_id).groups()
    return case, int(k)


def visible_text(html):
    """The page's words, tags taken out (not replaced by spaces: "lesion 2</a>, SUVmax" reads "lesion 2, SUVmax")."""
    return unescape(" ".join(re.sub(r"<[^>]+>", "", re.sub(r"<(script|style)>.*?</\1>", "", html, flags=re.S)).split()))


def expected_number(v):
    """A value as the page writes it, by hand for the values of these cases: three significant digits."""
    if isinstance(v, float) and math.isnan(v):
        return "–"
    suv = {15.2: "15.2", 9.0: "9.00", 8.0: "8.00", 7.0: "7.00", 6.0: "6.00", 5.0: "5.00", 4.0: "4.00", 3.99: "3.99"}
    suv.update({3.0: "3.00", 2.5: "2.50", 30.0: "30.0"})
    mtv = {4.608: "4.61", 1.728: "1.73", 0.432: "0.432", 0.384: "0.384", 0.324: "0.324", 0.096: "0.0960"}
    return {**suv, **mtv}[round(v, 3)]


# ---------------------------------------------------------------- the values


def test_the_tables_hold_the_brute_force_uptake(folders):
    """The fixture's tables are what a run with scans writes: each lesion's SUVmax and MTV equal a brute force."""
    plain, pet = folders
    truth = brute_force(plain.parent / "data")
    rows = table(pet)
    assert set(rows) == set(truth)
    for key, (suv, mtv, missed) in truth.items():
        r = rows[key]
        assert r.detected == (not missed)
        assert r.mtv_ml == pytest.approx(mtv, abs=1e-12)
        if key == UNMEASURED:
            assert math.isnan(r.suv_max)
        else:
            assert r.suv_max == pytest.approx(suv, rel=1e-6)


def test_each_lesion_shows_its_suv_max_and_mtv_as_in_the_table(folders, report):
    rows = table(folders[1])
    finder = [r for r in finder_rows(report) if r["kind"] == "lesion"]
    assert len(finder) == len(rows) == 13
    for r in finder:
        key = lesion_of(r["id"])
        suv_attrs, suv_text = r["suv_max"]
        mtv_attrs, mtv_text = r["mtv_ml"]
        assert value_of(suv_attrs) == pytest.approx(rows[key].suv_max, rel=1e-12, nan_ok=True)
        assert value_of(mtv_attrs) == pytest.approx(rows[key].mtv_ml, rel=1e-12)
        assert suv_text == expected_number(rows[key].suv_max) and mtv_text == expected_number(rows[key].mtv_ml)
        assert r["missed"] == (not rows[key].detected)
    # the case's own table: the same two values beside each lesion, in the lesion's row
    for key, r in rows.items():
        row = re.search(rf'<tr id="case-{key[0]}-lesion-{key[1]}"[^>]*>(.*?)</tr>', report, re.S).group(1)
        shown = cells(row)  # #, volume (ml), found, SUVmax, MTV (ml), thumbnail
        assert value_of(shown[0][0]) == key[1] and value_of(shown[1][0]) == pytest.approx(r.mtv_ml)  # volume = MTV
        assert value_of(shown[3][0]) == pytest.approx(r.suv_max, rel=1e-12, nan_ok=True)
        assert value_of(shown[4][0]) == pytest.approx(r.mtv_ml, rel=1e-12)
        assert (shown[3][1], shown[4][1]) == (expected_number(r.suv_max), expected_number(r.mtv_ml))


def test_a_missed_lesion_without_suv_max_shows_a_dash(report):
    (row,) = [r for r in finder_rows(report) if r["kind"] == "lesion" and lesion_of(r["id"]) == UNMEASURED]
    assert row["suv_max"] == (' class="num" data-value=""', "–") and row["mtv_ml"][1] == "0.324"


def test_false_positives_show_their_uptake_from_per_prediction(folders, report):
    predictions = pd.read_csv(folders[1] / "per_prediction.csv")
    (fp,) = predictions[predictions["outcome"] == "fp"].itertuples()
    assert fp.case == FALSE_POSITIVE[0] and fp.suv_max == pytest.approx(FALSE_POSITIVE[2])
    assert fp.mtv_ml == pytest.approx(8 * ML)  # 2 × 2 × 2 voxels
    (row,) = [r for r in finder_rows(report) if r["kind"] == "false_positive"]
    assert row["id"] == f"case-case_a-fp-{fp.prediction}"
    assert (value_of(row["suv_max"][0]), row["suv_max"][1]) == (pytest.approx(fp.suv_max), "30.0")
    assert (value_of(row["mtv_ml"][0]), row["mtv_ml"][1]) == (pytest.approx(fp.mtv_ml), "0.0960")


# ---------------------------------------------------------------- the order


def test_missed_lesions_come_first_hottest_first_ties_in_page_order(folders, report):
    """Equal SUVmax (case_b's lesions 1 and 2, case_c's lesion 2: all 8) keep the page's order: the cases as their
    sections stand, then the lesion number; the lesion without SUVmax comes last of the missed."""
    rows = table(folders[1])
    cases = case_order(report)
    missed = [k for k, r in rows.items() if not r.detected]
    measured = sorted((k for k in missed if not math.isnan(rows[k].suv_max)), key=lambda k: -rows[k].suv_max)
    by_hand = []  # a selection sort by hand: the largest SUVmax left, the first in page order among equal ones
    left = sorted(measured, key=lambda k: (cases.index(k[0]), k[1]))
    while left:
        top = max(rows[k].suv_max for k in left)
        first = next(k for k in left if rows[k].suv_max == top)
        by_hand.append(first)
        left.remove(first)
    by_hand += [k for k in missed if math.isnan(rows[k].suv_max)]
    finder = finder_rows(report)
    shown = [lesion_of(r["id"]) for r in finder[: len(missed)]]
    assert all(r["missed"] for r in finder[: len(missed)]) and not any(r["missed"] for r in finder[len(missed) :])
    assert shown == by_hand
    assert shown[0] == ("case_a", 2) and shown[-1] == UNMEASURED
    eights = [k for k in shown if rows[k].suv_max == 8.0]
    assert eights == sorted(eights, key=lambda k: (cases.index(k[0]), k[1])) and len(eights) == 3
    # then the other rows as without pet: case by case in page order, its lesions by number, then its false positive
    rest = [(lesion_of(r["id"]) if r["kind"] == "lesion" else r["id"]) for r in finder[len(missed) :]]
    expected = []
    for case in cases:
        expected += [k for k in sorted(rows) if k[0] == case and rows[k].detected]
        expected += [r["id"] for r in finder if r["kind"] == "false_positive" and r["id"].startswith(f"case-{case}-")]
    assert rest == expected


def test_the_case_sections_keep_the_lesions_by_number(report):
    for case, lesions in CASES.items():
        ids = re.findall(rf'<tr id="case-{case}-lesion-(\d+)"', report)
        assert [int(k) for k in ids] == list(range(1, len(lesions) + 1))


# ---------------------------------------------------------------- each case's hottest missed lesion


def hottest_by_hand(rows, case):
    """The case's missed lesion of largest SUVmax, the lowest number among equal ones; None if none has one."""
    best = None
    for (c, k), r in sorted(rows.items()):
        if c == case and not r.detected and not math.isnan(r.suv_max) and (best is None or r.suv_max > best[1]):
            best = (k, r.suv_max, r.mtv_ml)
    return best


def test_each_case_names_its_hottest_missed_lesion(folders, report):
    rows = table(folders[1])
    expected = {case: hottest_by_hand(rows, case) for case in CASES}
    assert expected == {
        "case_a": (2, pytest.approx(15.2), pytest.approx(0.324)),
        "case_b": (1, 8.0, pytest.approx(0.324)),  # lesions 1 and 2 both at 8: the lower number
        "case_c": (2, 8.0, pytest.approx(0.384)),
        "case_d": None,  # its only missed lesion has no SUVmax
        "case_e": None,  # nothing missed
    }
    for case, best in expected.items():
        section = report[report.index(f'<details id="case-{case}"') :]
        summary = visible_text(section[: section.index("</summary>")])
        ranked = re.search(rf'<tr data-text="{case}".*?</tr>', report, re.S).group(0)
        (cell,) = re.findall(r'<td class="hottest-missed"([^>]*)>(.*?)</td>', ranked, re.S)
        if best is None:
            assert "hottest" not in summary and cell == (' data-value=""', "–")
            continue
        k, suv, mtv = best
        words = f"lesion {k}, SUVmax {expected_number(float(suv))}, MTV {expected_number(float(mtv))} ml"
        assert f"missed (the hottest: {words})" in summary
        assert value_of(cell[0]) == pytest.approx(float(suv))
        assert unescape(re.sub(r"<[^>]+>", "", cell[1])) == words.replace(",", ":", 1)
        assert f'href="#case-{case}-lesion-{k}"' in cell[1]


# ---------------------------------------------------------------- the summary


def test_the_summary_counts_the_hot_missed_lesions_and_names_the_hottest(folders, report):
    t = pd.read_csv(folders[1] / "per_component.csv")
    missed = t[~t["detected"]]
    n_hot = int((missed["suv_max"] >= 4.0).sum())
    n_unmeasured = int(missed["suv_max"].isna().sum())
    hottest = missed.loc[missed["suv_max"].idxmax()]  # unique here: 15.2
    assert (len(missed), n_hot, n_unmeasured) == (8, 5, 1)  # 15.2, 8, 8, 4.0 (at the cut-off), 8; not 3.99, 2.5
    text = visible_text(report)
    assert (
        f"Missed lesions by uptake: {n_hot} of {len(missed)} missed lesions had SUVmax ≥ 4 (the report's fixed "
        f"cut-off), {n_unmeasured} of them without an SUVmax; the hottest: {hottest['case']} lesion "
        f"{hottest['component']}, SUVmax 15.2, MTV 0.324 ml. SUVmax: the largest value"
    ) in text
    link = re.search(r'<a class="hottest" href="#([^"]+)">', report).group(1)
    assert link == f"case-{hottest['case']}-lesion-{hottest['component']}"
    model = page.build_model(folders[1], max_cases=0)
    u = model["uptake"]
    assert (u["n_missed"], u["n_hot"], u["n_unmeasured"], u["threshold"]) == (8, 5, 1, 4.0)


def test_nothing_missed_is_said_so(folders, tmp_path):
    import ccmetrics

    out = tmp_path / "all_found"
    shutil.copytree(folders[1], out)
    result = ccmetrics.DatasetResult.read(out)
    result.per_component["detected"] = True
    result.write(out, n_resamples=50)
    html = page.render_html(page.build_model(out, max_cases=0))
    assert "Missed lesions by uptake: no lesion was missed (13 GT lesions)." in visible_text(html)
    assert 'class="hottest-missed">' not in html and "(the hottest:" not in html


# ---------------------------------------------------------------- without the pet columns


def fixed_page(folder):
    model = page.build_model(folder)
    model["written"] = "the same time"
    return page.render_html(model)


def test_without_pet_the_page_is_as_before(folders):
    plain = folders[0]
    model = page.build_model(plain)
    assert model["uptake"] is None and all(c["hottest_missed"] is None for c in model["cases"])
    html = page.render_html(model)
    text = visible_text(html)
    assert "SUV" not in text and "MTV" not in text and "hottest" not in html and "uptake" not in html
    # the finder case by case in page order: its lesions by number, then its false positives (missed ones in place)
    rows = table(plain)
    expected = []
    for case in case_order(html):
        expected += [f"case-{case}-lesion-{k}" for c, k in sorted(rows) if c == case]
        expected += [
            r["id"] for r in finder_rows(html) if r["kind"] == "false_positive" and r["id"].startswith(f"case-{case}-")
        ]
    assert [r["id"] for r in finder_rows(html)] == expected


def test_dropping_the_pet_columns_gives_the_page_byte_for_byte(folders, tmp_path):
    """One folder: its page without pet, with pet (different), and with the pet columns dropped again (the same)."""
    import ccmetrics

    out = tmp_path / "results"
    shutil.copytree(folders[0], out)
    ccmetrics.DatasetResult.read(out).write(out, n_resamples=50)  # its summary's CIs as below
    before = fixed_page(out)
    shutil.rmtree(out)
    shutil.copytree(folders[1], out)
    assert fixed_page(out) != before
    result = ccmetrics.DatasetResult.read(out)
    pet = ["suv_max", "suv_mean", "suv_peak", "mtv_ml", "tlg"]
    result.per_component = result.per_component.drop(
        columns=[*pet, "pred_mtv_ml", "pred_tlg", "pred_suv_max", "pred_suv_mean"]
    )
    result.per_prediction = result.per_prediction.drop(columns=pet)
    result.per_case = result.per_case[[c for c in result.per_case if c in pd.read_csv(folders[0] / "per_case.csv")]]
    result.write(out, n_resamples=50)
    assert fixed_page(out) == before


# ---------------------------------------------------------------- in the browser


def test_browser_sorts_by_suv_max_and_the_hottest_link_opens_its_case(folders, report, tmp_path):
    """The SUVmax column sorts numerically (the unmeasured lesion and the false positives' empty cells last), and the
    summary's link to the hottest missed lesion opens its closed case section."""
    from _browser import browser

    t = pd.read_csv(folders[1] / "per_component.csv")
    page_file = folders[1].parent / "report.html"
    driver = browser(tmp_path)
    try:
        driver.set_window_size(1200, 900)
        driver.get(page_file.as_uri())
        header = driver.find_element("css selector", '#lesion-table th[data-key="suv_max"]')
        header.click()
        header.click()
        values = driver.execute_script(
            """
            const table = document.getElementById('lesion-table');
            const column = [...table.tHead.rows[0].cells].findIndex(th => th.dataset.key === 'suv_max');
            return [...table.tBodies[0].rows].map(r => r.cells[column].dataset.value);
            """
        )
        assert header.get_attribute("aria-sort") == "descending"
        lesions = sorted(t["suv_max"].dropna().tolist() + [30.0], reverse=True)  # and the false positive's
        assert [float(v) for v in values if v] == pytest.approx(lesions) and values[len(lesions) :] == [""]
        driver.find_element("id", "collapse-all").click()
        driver.find_element("css selector", "#missed-by-uptake a.hottest").click()
        assert driver.find_element("id", "case-case_a").get_attribute("open") == "true"
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        driver.quit()
