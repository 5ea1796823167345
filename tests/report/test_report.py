"""ccmetrics.report: thumbnail geometry, the lesions and false positives listed, and the page in a real browser.

The browser tests open the report of the shipped example data set in headless Chromium driven by Selenium
(``/usr/bin/chromium`` and ``/usr/bin/chromedriver``; CI installs both). They are skipped, with the reason,
only where these are absent.

``python tests/report/test_report.py examples/figures/report.png`` writes the screenshot shown in the README.
"""

import json
import math
import os
import re
import shutil
import sys
import tempfile
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _browser import browser

from ccmetrics.report import data, geometry, page, write_report

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "data"
SPACING = (2.0, 2.0, 3.0)


def evaluate_folder(gt_dir, pred_dir, out):
    from ccmetrics.cli import main

    code = main(
        ["evaluate", str(gt_dir), str(pred_dir), "--out", str(out), "--metrics", "dice,nsd,hd95,detection", "--quiet"]
    )
    assert code == 0
    return Path(out)


@pytest.fixture(scope="module")
def example_result(tmp_path_factory):
    return evaluate_folder(EXAMPLES / "gt", EXAMPLES / "pred", tmp_path_factory.mktemp("example") / "results")


@pytest.fixture(scope="module")
def example_report(example_result):
    out = example_result.parent / "report.html"
    info = write_report(example_result, out)
    return out, info


# ---------------------------------------------------------------- geometry of the thumbnails


def ellipsoid(shape, center, radii):
    grids = np.ogrid[tuple(slice(0, n) for n in shape)]
    return sum(((g - c) / r) ** 2 for g, c, r in zip(grids, center, radii)) <= 1.0


def test_crop_is_centred_on_the_component_even_at_the_image_border():
    gt = ellipsoid((40, 30, 20), (3, 14, 15), (3, 5, 3))  # touches the i = 0 border
    _, lesions, _ = data.find_components(gt, np.zeros_like(gt), SPACING)
    (lesion,) = lesions
    center = tuple(int(math.floor(c + 0.5)) for c in lesion.centroid)
    assert np.allclose(lesion.centroid, np.argwhere(gt).mean(0))
    half = geometry.half_widths(lesion.extent_mm(SPACING), SPACING)
    box = geometry.crop_box(center, half)
    assert [stop - start for start, stop in box] == [2 * h + 1 for h in half]
    assert [(start + stop - 1) / 2 for start, stop in box] == list(center)  # the centroid voxel is the centre
    fov = [(2 * h + 1) * s for h, s in zip(half, SPACING)]
    assert max(fov) - min(fov) <= max(SPACING)  # square on screen, up to one voxel
    g = geometry.thumbnail_geometry(center, box, gt, gt, gt.astype(np.int32), SPACING, own_region=1)
    assert [p.name for p in g.planes] == ["axial", "coronal", "sagittal"]
    assert [(p.h_axis, p.v_axis) for p in g.planes] == [(0, 1), (0, 2), (1, 2)]
    for p in g.planes:
        assert p.index == center[p.axis]
        assert p.gt.shape == (2 * half[p.h_axis] + 1, 2 * half[p.v_axis] + 1)
        assert p.gt[half[p.h_axis], half[p.v_axis]]  # the centroid voxel, in the middle of the crop
        assert p.aspect == SPACING[p.v_axis] / SPACING[p.h_axis]
        h, v = (np.arange(*box[a]) for a in (p.h_axis, p.v_axis))
        inside = ((h >= 0) & (h < gt.shape[p.h_axis]))[:, None] & ((v >= 0) & (v < gt.shape[p.v_axis]))[None, :]
        assert np.array_equal(p.regions >= 0, inside)  # beyond the image: padded as outside, not shifted
        assert p.h_axis != 0 or not inside[0].any()  # the crop does reach beyond i = 0


def test_contours_lie_on_the_mask_edges():
    rng = np.random.default_rng(3)
    gt = rng.random((30, 24, 10)) > 0.6
    pred = rng.random(gt.shape) > 0.7
    center, half = (14, 2, 5), (6, 5, 3)  # the crop leaves the image at j < 0
    box = geometry.crop_box(center, half)
    g = geometry.thumbnail_geometry(center, box, gt, pred, np.ones(gt.shape, np.int32), (1.0, 1.0, 1.0))
    for plane in g.planes:
        for name, mask in (("gt", gt), ("pred", pred)):
            shown = getattr(plane, name)
            segments = geometry.boundary_segments(shown)
            index = [slice(None)] * 3
            index[plane.axis] = plane.index
            full = geometry.crop(mask, box, False)[
                tuple(slice(None) if a != plane.axis else plane.index - box[a][0] for a in range(3))
            ]
            assert np.array_equal(shown, full)
            edges = set()
            for (x0, y0), (x1, y1) in segments:
                assert abs(x1 - x0) + abs(y1 - y0) == 1.0  # one pixel side, on pixel borders
                if x0 == x1:  # vertical: between pixels (x0 - 0.5, y) and (x0 + 0.5, y)
                    a, b = (int(x0 - 0.5), int((y0 + y1) / 2)), (int(x0 + 0.5), int((y0 + y1) / 2))
                else:
                    a, b = (int((x0 + x1) / 2), int(y0 - 0.5)), (int((x0 + x1) / 2), int(y0 + 0.5))
                assert shown[a] != shown[b]
                edges.add((a, b))
            expected = int((shown[1:] != shown[:-1]).sum() + (shown[:, 1:] != shown[:, :-1]).sum())
            assert len(edges) == len(segments) == expected  # every edge once, nothing else


def test_half_widths_give_a_square_field_of_view_of_sensible_size():
    assert geometry.half_widths(0.0, (1.0, 1.0, 1.0)) == (12, 12, 12)
    big = geometry.half_widths(100.0, (0.8, 0.8, 2.5))
    assert big == (99, 99, 32)  # 79 mm each side: the lesion fills about two thirds


# ---------------------------------------------------------------- lesions and false positives listed


def synthetic_folders(root):
    """One case: a large lesion found, a small lesion missed, a false positive in the small lesion's region."""
    from ccmetrics.formats.io import Image, save_image

    shape = (48, 48, 24)
    gt = np.zeros(shape, np.uint8)
    gt[6:16, 6:16, 4:10] = 1  # lesion 1: 600 voxels, found
    gt[34:37, 30:33, 12:15] = 1  # lesion 2: 27 voxels, missed
    pred = np.zeros(shape, np.uint8)
    pred[7:16, 6:16, 4:10] = 1  # overlaps lesion 1
    pred[40:42, 40:42, 12:14] = 1  # false positive: 8 voxels, nearest to lesion 2
    like = Image(gt, SPACING, np.diag(SPACING + (1.0,)))
    for sub, array in (("gt", gt), ("pred", pred)):
        (root / sub).mkdir(parents=True)
        save_image(root / sub / "case_a.nii.gz", array, like=like)
    return root / "gt", root / "pred"


def test_missed_lesion_and_false_positive_are_listed(tmp_path):
    result = evaluate_folder(*synthetic_folders(tmp_path / "data"), tmp_path / "results")
    model = page.build_model(result)
    rows = {(r["kind"], r["label"]): r for r in model["finder"]}
    assert set(rows) == {("lesion", 1), ("lesion", 2), ("false_positive", 2)}
    ml = np.prod(SPACING) / 1000
    assert rows["lesion", 1]["detected"] and rows["lesion", 1]["volume"] == pytest.approx(600 * ml)
    missed = rows["lesion", 2]
    assert not missed["detected"] and missed["volume"] == pytest.approx(27 * ml) and missed["metrics"]["dice"] == 0
    fp = rows["false_positive", 2]
    assert fp["volume"] == pytest.approx(8 * ml) and fp["region"] == 2
    assert all(r["thumb"]["src"].startswith("data:image/png;base64,") for r in rows.values())
    (case,) = model["cases"]
    assert (case["n_lesions"], case["n_missed"], case["n_fp"]) == (2, 1, 1)

    out = tmp_path / "report.html"
    info = write_report(result, out)
    html = out.read_text()
    assert (info.n_lesions, info.n_false_positives, info.n_thumbnails) == (2, 1, 3)
    assert re.search(r'<tr id="case-case_a-lesion-2" class="missed">', html)
    assert re.search(r'data-kind="false_positive" data-missed="0" data-volume="0\.096"', html)


def _volume_similarity(pred, gt, spacing):
    total = float(pred.sum()) + float(gt.sum())
    return 1.0 - abs(float(pred.sum()) - float(gt.sum())) / total if total else 1.0


def test_summary_table_shows_the_folders_display_names(tmp_path):
    """Regression: the summary table named a metric this process never registered by its key (``volsim``)."""
    from ccmetrics import evaluate_dataset
    from ccmetrics.metrics import registry

    record = registry.Metric("volsim", "Volume similarity", "overlap", "region", _volume_similarity, best=1.0)
    result = evaluate_dataset(*synthetic_folders(tmp_path / "data"), metrics=["dice", record], progress=False)
    result.write(tmp_path / "results", plots=False, n_resamples=50)
    assert "volsim" not in registry.names()  # only the folder's column facts know its display name
    html = page.render_html(page.build_model(tmp_path / "results"))
    rows = re.findall(r'<tr data-key="1/(\w+)/(\w+)"[^>]*>\s*<td>([^<]*)</td>', html)
    assert ("volsim", "cc_pooled", "Volume similarity") in rows and ("dice", "standard", "Dice") in rows
    assert not [r for r in rows if r[2] == "volsim"]


def test_missing_images_still_render_the_tables(tmp_path):
    gt_dir, pred_dir = synthetic_folders(tmp_path / "data")
    result = evaluate_folder(gt_dir, pred_dir, tmp_path / "results")
    shutil.rmtree(tmp_path / "data")
    out = tmp_path / "report.html"
    info = write_report(result, out)
    html = out.read_text()
    assert info.unreadable and "image file not found" in info.unreadable[0]
    assert 'id="unreadable"' in html and "case_a.nii.gz" in html
    assert html.count('id="case-case_a-lesion-') == 2 and 'class="thumb"' not in html


def test_max_cases_limits_thumbnails_and_cli(example_result, tmp_path, capsys):
    from ccmetrics.cli import main

    out = tmp_path / "small.html"
    assert main(["report", str(example_result), "--out", str(out), "--max-cases", "2"]) == 0
    printed = capsys.readouterr().out
    assert f"Wrote {out}" in printed and "kB" in printed and "thumbnails for 2" in printed
    html = out.read_text()
    assert 0 < html.count('<img class="thumb"') < 28
    assert html.count("only the 2 worst cases are drawn") == 4  # 6 cases: 2 drawn


def test_report_of_the_example_data(example_report, example_result):
    out, info = example_report
    html = out.read_text()
    assert info.size_bytes == out.stat().st_size < 2_000_000
    assert (info.n_cases, info.n_lesions, info.n_false_positives) == (6, 28, 5)
    assert info.n_thumbnails == 33 and not info.unreadable
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing to fetch: self-contained
    assert html.count('class="plot"') == len(list((example_result / "plots").glob("*.png")))
    assert "case_005" in html and "no prediction file" in html


def test_detection_by_size_caption_states_the_data(example_report, example_result):
    """The caption says how many lesions of each bin were found, from summary.json, and claims nothing else."""
    html = unescape(example_report[0].read_text())
    by_size = json.loads((example_result / "summary.json").read_text())["by_size"]
    shown = [f"{r['bin']} {r['detected']} of {r['lesions']}" for r in by_size if r["lesions"]]
    assert shown and "Lesions found per bin: " + ", ".join(shown) + "." in html
    assert "missed more often" not in html


def test_detection_by_size_caption_on_two_data_sets_whose_findings_go_opposite_ways(example_report, tmp_path):
    """Issue 30: the caption claimed 'small lesions are missed more often' whatever the data. On the example data
    the smallest bin is found 1 of 1 and the larger ones 8 of 13 and 8 of 14 (the issue's count); on a data set
    built here the small lesions are all missed and the large all found. Each caption states its own counts."""
    html = unescape(example_report[0].read_text())
    assert "Lesions found per bin: 0.1–1 ml 1 of 1, 1–10 ml 8 of 13, ≥10 ml 8 of 14." in html
    from ccmetrics.formats.io import Image, save_image

    like = Image(np.zeros((60, 60, 40), np.uint8), (1.0, 1.0, 1.0), np.eye(4))
    for sub in ("gt", "pred"):
        (tmp_path / sub).mkdir()
    for case in range(2):
        gt = np.zeros((60, 60, 40), np.uint8)
        pred = np.zeros_like(gt)
        for k, x in enumerate((2, 30)):
            gt[x : x + 12, 2:14, 2:14] = 1  # 1728 mm3 = 1.728 ml: found
            pred[x : x + 12, 2:14, 2:14] = 1
            gt[x : x + 3, 40:43, 30 + 4 * k : 33 + 4 * k] = 1  # 27 mm3 = 0.027 ml: missed
        save_image(tmp_path / "gt" / f"c{case}.nii.gz", gt, like=like)
        save_image(tmp_path / "pred" / f"c{case}.nii.gz", pred, like=like)
    out = evaluate_folder(tmp_path / "gt", tmp_path / "pred", tmp_path / "results")
    write_report(out, tmp_path / "report.html")
    html = unescape((tmp_path / "report.html").read_text())
    assert "Lesions found per bin: <0.1 ml 0 of 4, 1–10 ml 4 of 4." in html
    assert "missed more often" not in html


# ---------------------------------------------------------------- issue 30: positions, counts, ∞


def oblique_folders(root):
    """The case of :func:`synthetic_folders` written with nibabel on a coronal grid (j runs inferior-superior, k
    anterior-posterior, i right to left) with an origin far from 0: an affine no diagonal guess reproduces."""
    import nibabel as nib

    affine = np.array([[-2.0, 0, 0, 90.0], [0, 0, 3.0, -40.0], [0, 2.0, 0, -100.0], [0, 0, 0, 1]])
    gt_dir, pred_dir = synthetic_folders(root)
    for folder in (gt_dir, pred_dir):
        array = np.asarray(nib.load(folder / "case_a.nii.gz").dataobj)
        nib.Nifti1Image(array.astype(np.uint8), affine).to_filename(folder / "case_a.nii.gz")
    return gt_dir, pred_dir, affine


def position_of(html, row_id):
    """(data-ras as floats, data-voxel as ints, the text) of the position under a row's thumbnail."""
    row = html[html.index(f'<tr id="{row_id}"') :]
    row = row[: row.index("</tr>")]
    match = re.search(
        r'<span class="position" data-voxel="([^"]*)" data-ras="([^"]*)">(.*?)</span>\)</span>', row, re.S
    )
    text = " ".join(re.sub(r"<[^>]+>", "", match.group(3) + ")").split())
    return [float(v) for v in match.group(2).split()], [int(v) for v in match.group(1).split()], unescape(text)


def test_each_lesion_and_false_positive_has_its_position_in_mm_and_in_voxels(tmp_path):
    """Issue 30: positions were array indices only. The centroid in RAS mm, computed here from the file's affine
    with nibabel, equals the page's; a false positive's equals per_prediction.csv's centroid_x_mm ...; the voxel is
    the centroid rounded, 0-based and (ITK-SNAP) 1-based."""
    import nibabel as nib
    from scipy import ndimage

    gt_dir, pred_dir, affine = oblique_folders(tmp_path / "data")
    result = evaluate_folder(gt_dir, pred_dir, tmp_path / "results")
    write_report(result, tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    gt = np.asarray(nib.load(gt_dir / "case_a.nii.gz").dataobj) > 0
    assert np.array_equal(nib.load(gt_dir / "case_a.nii.gz").affine, affine)
    labels, n = ndimage.label(gt, np.ones((3, 3, 3)))
    assert n == 2
    for k in (1, 2):
        centroid = np.argwhere(labels == k).mean(0)
        mm = nib.affines.apply_affine(affine, centroid)
        ras, voxel, text = position_of(html, f"case-case_a-lesion-{k}")
        assert ras == pytest.approx(mm.tolist(), abs=1e-9)
        assert voxel == [int(np.floor(c + 0.5)) for c in centroid]
        shown = ", ".join(f"{a} {v:.1f}".replace("-", "−") for a, v in zip("xyz", mm))
        one_based = ", ".join(str(v + 1) for v in voxel)
        assert text == (
            f"centroid {shown} mm (RAS) · voxel i {voxel[0]}, j {voxel[1]}, k {voxel[2]} (ITK-SNAP {one_based})"
        )
    # lesion 2, gt[34:37, 30:33, 12:15]: centroid voxel (35, 31, 13), at x = -2 * 35 + 90, y = 3 * 13 - 40, ...
    assert position_of(html, "case-case_a-lesion-2")[2] == (
        "centroid x 20.0, y −1.0, z −38.0 mm (RAS) · voxel i 35, j 31, k 13 (ITK-SNAP 36, 32, 14)"
    )
    predictions = pd.read_csv(result / "per_prediction.csv")
    (fp,) = predictions[predictions["outcome"] == "fp"].itertuples()
    ras, voxel, _ = position_of(html, f"case-case_a-fp-{fp.prediction}")
    assert ras == pytest.approx([fp.centroid_x_mm, fp.centroid_y_mm, fp.centroid_z_mm], abs=1e-9)
    assert voxel == [int(np.floor(c + 0.5)) for c in (fp.centroid_i, fp.centroid_j, fp.centroid_k)]
    assert "3D Slicer" in html and "ITK-SNAP" in html and "RAS+ mm" in html  # the page says what the numbers are


def test_a_lesion_not_drawn_still_shows_its_position(example_result, tmp_path):
    out = tmp_path / "one.html"
    write_report(example_result, out, max_cases=1)
    html = out.read_text()
    assert html.count('<span class="where-only">') == 28 + 5 - html.count('<figure class="thumb">')
    assert html.count('<span class="position"') == 33  # every lesion and false positive


def visible_text(html):
    return unescape(
        " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)>.*?</\1>", "", html, flags=re.S)).split())
    )


#: "1 cases", "1 empty-GT cases", "1 false-positive candidates": a count of one with a plural noun
SINGULAR_AS_PLURAL = re.compile(r"(?<![\d.,−-])1 (?:[\w-]+ )?(case|lesion|candidate|threshold|image|row|value)s\b")


def test_one_of_anything_is_singular_on_the_page(tmp_path, example_result):
    """Issue 30: "1 empty-GT cases". A one-case folder, one case drawn, one unreadable: no "1 ...s" anywhere."""
    result = evaluate_folder(*synthetic_folders(tmp_path / "data"), tmp_path / "results")
    out = tmp_path / "one.html"
    info = write_report(result, out, max_cases=1)
    html = out.read_text()
    assert '<strong data-count="cases">1</strong> case</li>' in html
    assert "Thumbnails are drawn for at most 1 case, the worst first" in visible_text(html)
    assert "1 case, thumbnails for 1 (3 images), 2 lesions, 1 false positive" in str(info)
    texts = [visible_text(html)]
    write_report(example_result, tmp_path / "example.html", max_cases=1)
    example = visible_text((tmp_path / "example.html").read_text())
    assert "No thumbnails for this case (only the worst case is drawn)." in example
    assert "1 case with an empty GT" in example
    texts.append(example)
    shutil.rmtree(tmp_path / "data")  # the images are gone: one case could not be read
    write_report(result, tmp_path / "unreadable.html")
    texts.append(visible_text((tmp_path / "unreadable.html").read_text()))
    assert "Images that could not be read (1 case)" in texts[-1]
    for text in texts:
        assert not SINGULAR_AS_PLURAL.search(text), SINGULAR_AS_PLURAL.search(text).group(0)


def test_a_difference_with_infinity_is_not_zero(example_report, example_result):
    """Issue 30: case_005 (no prediction) showed HD95 ∞, CC-HD95 307.3 and a difference of 0."""
    html = example_report[0].read_text()
    per_case = pd.read_csv(example_result / "per_case.csv").set_index("case")
    assert math.isinf(per_case.loc["case_005", "hd95"]) and math.isfinite(per_case.loc["case_005", "cc_hd95"])
    section = html[html.index('<details id="case-case_005"') :]
    section = section[: section.index("</details>")]
    rows = {
        name: [unescape(v) for v in re.findall(r"<td[^>]*>([^<]*)</td>", cells)]
        for name, cells in re.findall(r"<tr><th>([^<]*)</th>(.*?)</tr>", section)
    }
    assert rows["standard (global)"] == ["0", "0", "∞"]
    assert rows["CC (mean over lesions)"] == ["0", "0", "307.3"]
    assert rows["standard − CC"] == ["0", "0", "–"]  # Dice, NSD, HD95: no 0 for ∞ − 307.3
    worst = page.fmt(per_case.loc["case_005", "worst_distance"])
    note = visible_text(section[section.index('<p class="muted delta-note"') :])
    assert note.startswith(
        "“–” for HD95: HD95 is ∞ (the GT or the prediction is empty: no surface to measure from), and ∞ minus a "
        "number is no number: no difference is shown. In the data-set means this ∞ counts as the case's worst "
        f"distance, {worst} mm."
    )
    # the ranked table: the same –, undefined (empty data-value), its reason on hover
    row = re.search(r'<tr data-text="case_005".*?</tr>', html, re.S).group(0)
    cell = re.search(r'<td class="num undefined" data-value="" data-sort="" title="([^"]*)">–</td>', row)
    assert cell and unescape(cell.group(1)).startswith("HD95 is ∞")
    assert data.with_differences(per_case.reset_index(), ["hd95"])["delta_hd95"].isna().tolist() == [
        not math.isfinite(v) for v in per_case["hd95"]
    ]


# ---------------------------------------------------------------- in the browser


@pytest.fixture(scope="module")
def driver(example_report, tmp_path_factory):
    d = browser(tmp_path_factory.mktemp("chromium"))
    d.set_window_size(1200, 900)
    d.get(example_report[0].as_uri())
    yield d
    d.quit()


def visible_values(driver, table_id, key):
    """data-value of column ``key`` in the shown rows of a table, top to bottom."""
    return driver.execute_script(
        """
        const table = document.getElementById(arguments[0]);
        const column = [...table.tHead.rows[0].cells].findIndex(th => th.dataset.key === arguments[1]);
        return [...table.tBodies[0].rows].filter(r => !r.hidden).map(r => r.cells[column].dataset.value);
        """,
        table_id,
        key,
    )


def test_browser_summary_equals_summary_json(driver, example_result):
    doc = json.loads((example_result / "summary.json").read_text())
    for name, value in doc["counts"].items():
        assert driver.find_element("css selector", f'[data-count="{name}"]').text == str(value)
    for record in doc["summary"]:
        row = driver.find_element(
            "css selector", f'tr[data-key="{record["class"]}/{record["metric"]}/{record["aggregation"]}"]'
        )
        for stat in ("n", "mean", "median", "ci_low", "ci_high"):
            cell = row.find_element("css selector", f'[data-stat="{stat}"]')
            shown = cell.get_attribute("data-value")
            if record[stat] is None:
                assert shown == "" and cell.text == "–"
            else:
                assert float(shown) == record[stat]  # exact: repr round-trips
                assert cell.text == page.fmt(record[stat]) and float(cell.text) == pytest.approx(record[stat], 1e-3)
    assert len(driver.find_elements("css selector", "#summary-table tbody tr")) == len(doc["summary"])


def test_browser_sorting_reorders_rows(driver):
    header = driver.find_element("css selector", '#lesion-table th[data-key="volume"]')
    header.click()
    ascending = [float(v) for v in visible_values(driver, "lesion-table", "volume")]
    assert ascending == sorted(ascending) and len(ascending) == 33
    header.click()
    descending = [float(v) for v in visible_values(driver, "lesion-table", "volume")]
    assert descending == sorted(ascending, reverse=True) and descending != ascending
    assert header.get_attribute("aria-sort") == "descending"
    # the case table starts ranked by the largest |Dice - CC-Dice|; the other ranking is one click away
    gaps = [abs(float(v)) for v in visible_values(driver, "cases-table", "delta_dice")]
    assert gaps == sorted(gaps, reverse=True)
    driver.find_element("css selector", 'button[data-sort-key="cc_dice"]').click()
    cc = [float(v) for v in visible_values(driver, "cases-table", "cc_dice")]
    assert cc == sorted(cc) and cc != [float(v) for v in visible_values(driver, "cases-table", "cc_dice")][::-1]


def test_browser_filters_hide_rows(driver, example_result):
    components = pd.read_csv(example_result / "per_component.csv")
    expected = int((~components["detected"] & (components["volume_mm3"] / 1000 <= 2.0)).sum())
    box = driver.find_element("css selector", '.filters[data-table="lesion-table"]')
    box.find_element("css selector", 'button[data-preset*="\\"maxvol\\": \\"\\""]').click()  # show all
    assert len(visible_values(driver, "lesion-table", "volume")) == 33
    box.find_element("css selector", '[data-filter="missed"]').click()
    volume = box.find_element("css selector", '[data-filter="maxvol"]')
    volume.send_keys("2")
    shown = driver.find_elements("css selector", "#lesion-table tbody tr:not([hidden])")
    assert len(shown) == expected == 2
    assert all(r.get_attribute("data-missed") == "1" and float(r.get_attribute("data-volume")) <= 2 for r in shown)
    assert box.find_element("css selector", ".shown").text == f"{expected} of 33 rows shown"
    box.find_element("css selector", '[data-filter="text"]').send_keys("case_002")
    assert len(driver.find_elements("css selector", "#lesion-table tbody tr:not([hidden])")) == 0
    box.find_element("css selector", 'button[data-preset*="\\"maxvol\\": \\"\\""]').click()
    assert len(driver.find_elements("css selector", "#lesion-table tbody tr:not([hidden])")) == 33


def test_browser_thumbnails_load_and_no_console_errors(driver, tmp_path):
    driver.find_element("id", "expand-all").click()
    images = driver.execute_script(
        "return [...document.querySelectorAll('img')].map(i => [i.className, i.complete, i.naturalWidth]);"
    )
    thumbs = [i for i in images if i[0] == "thumb"]
    assert len(thumbs) == 33 and all(complete and width > 0 for _, complete, width in images)
    # a link from the finder opens the closed case section and shows the row
    driver.find_element("id", "collapse-all").click()
    driver.find_element("css selector", '#lesion-table a[href="#case-case_002-lesion-1"]').click()
    assert driver.find_element("id", "case-case_002").get_attribute("open") == "true"
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    shot = tmp_path / "report.png"
    assert driver.save_screenshot(str(shot)) and shot.read_bytes()[:4] == b"\x89PNG"


def test_browser_case_table_fits_1400_px(driver):
    """Issue 30: the ranked cases were cut off with a horizontal scroll at 1400 px (README's metrics: 21 columns)."""
    driver.set_window_size(1400, 900)
    try:
        assert driver.execute_script("return window.innerWidth") == 1400
        width = driver.execute_script(
            """
            const table = document.getElementById('cases-table'), box = table.parentElement;
            const right = Math.max(...[...table.tHead.rows[0].cells].map(c => c.getBoundingClientRect().right));
            return [box.scrollWidth, box.clientWidth, table.offsetWidth, table.tHead.rows[0].cells.length, right,
                    box.getBoundingClientRect().right, document.documentElement.scrollWidth];
            """
        )
        scroll, client, table, columns, right, box_right, page_width = width
        assert columns == 21 and scroll <= client and table <= client and right <= box_right
        assert page_width <= 1400  # nor does the page scroll sideways
    finally:
        driver.set_window_size(1200, 900)


def save_screenshot(out, case="case-case_002"):
    """Write the README's screenshot: one case of the example report, opened (1200×1000)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.chdir(ROOT)  # relative paths, as in the README's command
        result = evaluate_folder("examples/data/gt", "examples/data/pred", tmp / "results")
        write_report(result, tmp / "report.html")
        d = browser(tmp)
        try:
            d.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1200, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
            )
            d.get((tmp / "report.html").as_uri())
            d.execute_script(
                "const c = document.getElementById(arguments[0]); c.open = true; c.scrollIntoView();"
                "window.scrollBy(0, -8);",
                case,
            )
            d.save_screenshot(str(out))
        finally:
            d.quit()


if __name__ == "__main__":
    save_screenshot(sys.argv[1] if len(sys.argv) > 1 else "report.png")
