"""The report's viewer of a case (issue 42): its data in Python, and the page in a real browser.

Synthetic data written into ``tmp_path``: one case on an anisotropic grid (2 x 2 x 3 mm) whose affine flips x and is
shifted, so that voxel, mm-by-spacing and RAS mm all differ. Its GT holds a found lesion (1, the prediction covers it
and spills over: a true-positive prediction outside the GT) and a missed one (2); the prediction adds a false
positive. A CT (air -1000 HU, body 40 HU) and a PET (body 1, lesion 1 at 12.3, lesion 2 at 6, the false positive at
3) lie on the GT's grid. Every number is checked against a computation here: ``scipy.ndimage.label`` (26-connected)
for the components, ``per_component.csv`` / ``per_prediction.csv`` as pandas reads them for the outcomes, the affine
written for the RAS mm, the window formula by hand.

The browser tests open the page in headless Chromium (``/usr/bin/chromium`` and ``/usr/bin/chromedriver``, started as
``tests/report/test_report.py`` starts them) and are skipped, with the reason, only where these are absent.

``python tests/report/test_viewer.py docs/images/viewer.png`` writes the screenshot of the docs (the example data
with fake scans, ``examples/make_example_images.py``).
"""

import base64
import json
import math
import re
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _browser import browser, wait
from scipy import ndimage

from ccmetrics.formats.io import Image, save_image
from ccmetrics.report import build_model, viewer, write_report
from ccmetrics.results import outcomes as oc

ROOT = Path(__file__).resolve().parents[2]
SHAPE = (40, 36, 24)
SPACING = (2.0, 2.0, 3.0)
AFFINE = np.array([[-2.0, 0, 0, 90.0], [0, 2.0, 0, -130.0], [0, 0, 3.0, -72.0], [0, 0, 0, 1]])
LIKE = Image(np.zeros(SHAPE, np.uint8), SPACING, AFFINE)
STRUCTURE = np.ones((3, 3, 3), bool)  # 26-connected, the evaluation's default


def masks():
    gt = np.zeros(SHAPE, np.uint8)
    gt[6:14, 8:16, 4:10] = 1  # lesion 1: found
    gt[28:31, 24:27, 14:17] = 1  # lesion 2: missed
    pred = np.zeros(SHAPE, np.uint8)
    pred[6:16, 8:16, 4:10] = 1  # covers lesion 1 and spills over two rows: a true positive outside the GT
    pred[20:22, 4:6, 18:20] = 1  # a false positive
    return gt, pred


def scans():
    gt, pred = masks()
    body = np.zeros(SHAPE, bool)
    body[3:37, 2:34, :] = True
    ct = np.where(body, 40, -1000).astype(np.int16)
    pet = np.where(body, 1.0, 0.0).astype(np.float32)
    pet[6:14, 8:16, 4:10] = 12.3
    pet[28:31, 24:27, 14:17] = 6.0
    pet[20:22, 4:6, 18:20] = 3.0
    return ct, pet


def write_case(root):
    gt, pred = masks()
    ct, pet = scans()
    for sub in ("gt", "pred", "images"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    save_image(root / "gt" / "a.nii.gz", gt, like=LIKE)
    save_image(root / "pred" / "a.nii.gz", pred, like=LIKE)
    save_image(root / "images" / "a_0000.nii.gz", ct, like=LIKE)
    save_image(root / "images" / "a_0001.nii.gz", pet, like=LIKE)


def evaluate(root):
    from ccmetrics.cli import main

    out = root / "results"
    code = main(
        [
            "evaluate",
            str(root / "gt"),
            str(root / "pred"),
            "--out-dir",
            str(out),
            "--metrics",
            "dice,detection",
            "--quiet",
            "--no-plots",
        ]
    )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("viewer")
    write_case(root)
    return root, evaluate(root)


def viewer_data(model, anchor="case-a"):
    (entry,) = [c for c in model["cases"] if c["anchor"] == anchor]
    data = json.loads(entry["viewer"]["data_json"])
    volume = json.loads(entry["viewer"]["volume_json"])
    return entry, data, volume


def expected_outcomes(result_dir):
    """The outcome of every voxel from the tables and scipy's labelling: 1 found, 2 missed, 3 true-positive
    prediction outside the GT, 4 false positive (the GT over the prediction)."""
    gt, pred = masks()
    components = pd.read_csv(result_dir / "per_component.csv")
    predictions = pd.read_csv(result_dir / "per_prediction.csv")
    gt_labels, n_gt = ndimage.label(gt, STRUCTURE)
    pred_labels, n_pred = ndimage.label(pred, STRUCTURE)
    assert (n_gt, n_pred) == (len(components), len(predictions)) == (2, 2)
    out = np.zeros(SHAPE, np.uint8)
    for row in predictions.itertuples():
        out[pred_labels == row.prediction] = 4 if row.outcome == "fp" else 3
    for row in components.itertuples():
        out[gt_labels == row.component] = 1 if row.detected else 2
    return out


# ---------------------------------------------------------------- the data, in Python


def test_window_uint8_by_hand():
    # SUV 0-10: 255 (v - 0) / 10 rounded half up, clipped; NaN black
    values = [-3.0, 0.0, 0.02, 0.0196, 1.0, 2.5, 9.98, 10.0, 11.0, float("nan")]
    assert viewer.window_uint8(values, 0.0, 10.0).tolist() == [0, 0, 1, 0, 26, 64, 254, 255, 255, 0]
    # the CT soft-tissue window, -160 to 240 HU: (40 + 160) / 400 * 255 = 127.5 -> 128
    assert viewer.window_uint8([-1000, -160, 40, 240, 700], -160.0, 240.0).tolist() == [0, 0, 128, 255, 255]


def test_windows_asked_for():
    pet = viewer.viewer_window("0:5", "pet")
    assert (pet.low, pet.high) == (0.0, 5.0)
    lung = viewer.viewer_window("lung", "ct")
    assert (lung.low, lung.high) == (-600 - 750, -600 + 750)
    assert (viewer.viewer_window("auto", "pet").low, viewer.viewer_window("range", "pet").high) == (0.0, 10.0)
    picker = viewer.ScanPicker({"pet": "0:4", "CT": "bone"}, None, SPACING)
    assert picker.spec("PET", "0001", "pet") == (2.0, 4.0) and picker.spec("0001", "0001", "pet") == (2.0, 4.0)
    assert picker.spec("ct", "0000", "ct") == (400.0, 1800.0)
    with pytest.raises(ValueError, match="HIGH above LOW"):
        viewer.viewer_window("10:0", "pet")


def test_crop_is_the_body_and_the_labels_plus_the_margin():
    ct, pet = scans()
    index = np.zeros(SHAPE, np.uint16)
    index[1, 30, 23] = 1  # a label outside the body (i 1 < 3): kept in the crop
    picker = viewer.ScanPicker({}, viewer.label_box([viewer.ComponentMap(index)]), SPACING)
    picker("CT", "0000", ct, -1000.0)
    assert picker.picked.kind == "ct"
    # body i 3..36, j 2..33, k all; the label at i 1; margin 10 mm: 5 voxels in i, j, 4 in k; clipped to the image
    assert picker.picked.box == ((0, 40), (0, 36), (0, 24))
    picker = viewer.ScanPicker({}, None, (1.0, 1.0, 1.0))
    picker("CT", "0000", ct, -1000.0)
    assert picker.picked.box == ((0, 40), (0, 36), (0, 24))  # 10 voxels of margin
    picker = viewer.ScanPicker({}, None, (0.5, 0.5, 0.5))
    picker("CT", "0000", ct, -1000.0)
    picker("PET", "0001", pet, 0.0)  # the PET wins over the CT; its body: SUV above 0.1
    assert picker.picked.label == "PET" and picker.picked.box == ((0, 40), (0, 36), (0, 24))
    small = np.zeros((100, 80, 60), np.float32)
    small[40:50, 30:35, 20:22] = 5.0
    picker = viewer.ScanPicker({}, None, (2.0, 2.0, 2.0))
    picker("PET", "0001", small, 0.0)
    assert picker.picked.box == ((35, 55), (25, 40), (15, 27))  # 5 voxels (10 mm) each side
    assert np.array_equal(picker.picked.grey, viewer.window_uint8(small[35:55, 25:40, 15:27], 0.0, 10.0))


def test_downsampling_keeps_the_maximum_of_each_block():
    rng = np.random.default_rng(0)
    box = ((3, 603), (0, 7), (2, 12))
    grid = viewer.choose_grid(box, (1.0, 1.5, 4.0))
    f = 600 / 256
    assert grid.shape == (256, math.ceil(7 / f), math.ceil(10 / f)) == (256, 3, 5)
    array = rng.integers(0, 255, (610, 7, 14), dtype=np.uint8)
    reduced = viewer.reduce_max(array, grid)
    ends = [list(s[1:]) + [b] for s, (_, b) in zip(grid.starts, box)]
    for a in range(len(grid.starts[0])):
        for b in range(len(grid.starts[1])):
            for c in range(len(grid.starts[2])):
                block = array[
                    grid.starts[0][a] : ends[0][a], grid.starts[1][b] : ends[1][b], grid.starts[2][c] : ends[2][c]
                ]
                assert reduced[a, b, c] == block.max()
    for starts, (start, stop) in zip(grid.starts, box):  # blocks tile the crop, lengths differ by one at most
        lengths = np.diff(list(starts) + [stop])
        assert starts[0] == start and lengths.min() >= 1 and lengths.max() - lengths.min() <= 1
    assert grid.spacing_mm == pytest.approx((600 / 256 * 1.0, 7 / 3 * 1.5, 10 / 5 * 4.0))


def test_a_block_keeps_its_most_telling_outcome():
    index = np.zeros((4, 1, 1), np.uint16)
    index[:, 0, 0] = [1, 2, 3, 0]  # found, missed, false positive, nothing
    components = [{"outcome": oc.FOUND}, {"outcome": oc.MISSED}, {"outcome": oc.FALSE_POSITIVE}]
    grid = viewer.Grid(((0, 4), (0, 1), (0, 1)), (np.array([0, 2]), np.array([0]), np.array([0])), (2.0, 1.0, 1.0))
    reduced = viewer._reduce_labels(index, components, grid)
    assert reduced.ravel().tolist() == [2, 3]  # missed over found; the false positive over nothing


def test_label_map_outcomes_equal_the_tables(case):
    root, result = case
    model = build_model(result, images=root / "images", channel_names=["CT", "PET"])
    entry, data, volume = viewer_data(model)
    assert volume["shape"] == [len(s) for s in volume["starts"]]
    assert all(len(s) == b - s[0] for s, b in zip(volume["starts"], volume["stops"]))  # small: one voxel a block
    box = tuple(slice(s[0], b) for s, b in zip(volume["starts"], volume["stops"]))
    index = viewer.decode(data["labels"], data["dtype"], volume["shape"])
    table = np.array([0] + [c["outcome"] for c in data["components"]])
    expected = expected_outcomes(result)
    assert np.array_equal(table[index], expected[box])
    assert (expected[box] > 0).sum() == (expected > 0).sum()  # nothing labelled is cropped away
    # each entry names its row, its voxel the centroid rounded (halves up), as the tables' positions
    gt, pred = masks()
    gt_labels, _ = ndimage.label(gt, STRUCTURE)
    pred_labels, _ = ndimage.label(pred, STRUCTURE)
    by_kind = {(c["kind"], c["label"]): c for c in data["components"]}
    for kind, labels, prefix in (("lesion", gt_labels, "lesion"), ("prediction", pred_labels, "fp")):
        for k in range(1, labels.max() + 1):
            centroid = np.argwhere(labels == k).mean(0)
            c = by_kind[(kind, k)]
            assert c["voxel"] == [math.floor(x + 0.5) for x in centroid]
            fp = kind == "prediction" and c["outcome"] == oc.FALSE_POSITIVE
            assert c["id"] == (f"case-a-{prefix}-{k}" if kind == "lesion" or fp else None)
    assert [les["detected"] for les in entry["lesions"]] == [True, False]
    # the scan: the PET, windowed SUV 0-10 by hand
    scan = viewer.decode(volume["scan"], np.uint8, volume["shape"])
    _, pet = scans()
    hand = np.floor(np.clip(pet[box] / 10.0, 0, 1) * 255 + 0.5)
    assert np.array_equal(scan, hand) and (volume["channel"], volume["window"]) == ("PET", "SUV 0–10")
    assert volume["affine"] == AFFINE.tolist() and volume["spacing_mm"] == list(SPACING)


def test_without_images_the_masks_alone(case):
    _, result = case
    model = build_model(result)
    entry, data, volume = viewer_data(model)
    assert volume["scan"] is None and volume["channel"] is None
    box = tuple(slice(s[0], b) for s, b in zip(volume["starts"], volume["stops"]))
    # the labels' box (i 6..31, j 4..27, k 4..20) plus 10 mm (5, 5, 4 voxels), within the image
    assert [(s.start, s.stop) for s in box] == [(1, 36), (0, 32), (0, 24)]
    index = viewer.decode(data["labels"], data["dtype"], volume["shape"])
    table = np.array([0] + [c["outcome"] for c in data["components"]])
    assert np.array_equal(table[index], expected_outcomes(result)[box])
    assert build_model(result, with_viewer=False)["cases"][0]["viewer"] is None


def test_window_option_of_the_command(case, tmp_path):
    from ccmetrics.cli import main

    root, result = case
    out = tmp_path / "r.html"
    args = ["report", str(result), "--html", str(out), "--images", str(root / "images"), "--channel-names", "CT,PET"]
    assert main(args + ["--window", "pet=0:5"]) == 0
    html = out.read_text()
    volume = json.loads(re.search(r'id="case-a-viewer-volume">(.*?)</script>', html).group(1))
    assert (volume["low"], volume["high"], volume["window"]) == (0.0, 5.0, "SUV 0–5")
    scan = viewer.decode(volume["scan"], np.uint8, volume["shape"])
    assert scan.max() == 255 and sorted(set(scan.ravel().tolist())) == [0, 51, 153, 255]  # 1 -> 51, 3 -> 153
    # the thumbnails of the channel named PET take the window asked for "pet" too (any case)
    assert "L 2.5 W 5" in html and html.count('id="viewer-explain"') == 1
    assert main(args + ["--window", "pet=0:x"]) != 0
    assert main(args + ["--no-viewer"]) == 0
    html = out.read_text()
    assert 'id="case-a-viewer-volume"' not in html and 'id="viewer-explain"' not in html


@pytest.mark.slow
def test_a_whole_body_case_adds_at_most_2_mb(tmp_path):
    """200 x 200 x 400 voxels, a noisy PET in an elliptic body (noise compresses worst): the viewer's share of the
    page is at most 2 MB, and the viewer still shows every lesion."""
    shape, spacing = (200, 200, 400), (2.0, 2.0, 2.0)
    like = Image(np.zeros(shape, np.uint8), spacing, np.diag(spacing + (1.0,)))
    rng = np.random.default_rng(1)
    i, j = np.ogrid[:200, :200]
    body = ((i - 100) / 90.0) ** 2 + ((j - 100) / 70.0) ** 2 <= 1
    pet = np.where(body[:, :, None], rng.uniform(0.5, 3.0, shape), 0.0).astype(np.float32)
    gt = np.zeros(shape, np.uint8)
    gt[50:54, 90:94, 40:44] = 1
    gt[120:123, 60:63, 300:303] = 1  # 27 voxels: must survive the downsampling
    pred = gt.copy()
    pred[120:123, 60:63, 300:303] = 0
    for sub in ("gt", "pred", "images"):
        (tmp_path / sub).mkdir()
    save_image(tmp_path / "gt" / "a.nii.gz", gt, like=like)
    save_image(tmp_path / "pred" / "a.nii.gz", pred, like=like)
    save_image(tmp_path / "images" / "a_0000.nii.gz", pet, like=like)
    result = evaluate(tmp_path)
    with_viewer = write_report(result, tmp_path / "v.html", images=tmp_path / "images", channel_names=["PET"])
    without = write_report(result, tmp_path / "n.html", images=tmp_path / "images", with_viewer=False)
    assert with_viewer.n_viewers == 1 and without.n_viewers == 0
    added = with_viewer.size_bytes - without.size_bytes
    assert 100_000 < added <= 2_000_000
    html = (tmp_path / "v.html").read_text()
    volume = json.loads(re.search(r'id="case-a-viewer-volume">(.*?)</script>', html).group(1))
    data = json.loads(re.search(r'id="case-a-viewer-data">(.*?)</script>', html).group(1))
    assert max(volume["shape"]) <= viewer.MAX_AXIS
    index = viewer.decode(data["labels"], data["dtype"], volume["shape"])
    outcomes = np.array([0] + [c["outcome"] for c in data["components"]])[index]
    assert (outcomes == oc.FOUND).any() and (outcomes == oc.MISSED).any()
    assert len(base64.b64decode(volume["scan"])) + len(base64.b64decode(data["labels"])) <= viewer.BUDGET_BYTES
    assert zlib.decompress(base64.b64decode(volume["scan"]))  # deflate (zlib), as DecompressionStream reads it


# ---------------------------------------------------------------- in the browser


@pytest.fixture(scope="module")
def page(case, tmp_path_factory):
    root, result = case
    out = root / "report.html"
    write_report(result, out, images=root / "images", channel_names=["CT", "PET"])
    d = browser(tmp_path_factory.mktemp("chromium"))
    d.set_window_size(1300, 1000)
    d.get(out.as_uri())
    yield d, out
    d.quit()


def cursor(d, anchor="case-a"):
    label = d.find_element("css selector", f"#{anchor}-viewer .viewer-cursor")
    return label, [int(v) for v in label.get_attribute("data-voxel").split()]


def canvas_pixels(d, view, anchor="case-a"):
    return d.execute_script(
        "const c = document.querySelector(arguments[0]);"
        "return [c.width, c.height, Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data)];",
        f'#{anchor}-viewer canvas[data-view="{view}"]',
    )


def go_to_lesion(d, lesion):
    d.find_element("css selector", f'#lesion-table a[href="#case-a-lesion-{lesion}"]').click()
    return wait(
        d,
        "const l = document.querySelector('#case-a-viewer .viewer-cursor');"
        "return l && l.getAttribute('data-component') === arguments[0];",
        f"case-a-lesion-{lesion}",
    )


def test_browser_clicking_a_lesion_moves_the_cursor_to_its_centroid(page):
    d, _ = page
    gt, _ = masks()
    gt_labels, _ = ndimage.label(gt, STRUCTURE)
    for lesion, outcome in ((2, "missed"), (1, "found")):
        assert go_to_lesion(d, lesion)
        label, voxel = cursor(d)
        expected = [math.floor(x + 0.5) for x in np.argwhere(gt_labels == lesion).mean(0)]
        assert voxel == expected
        ras = AFFINE[:3, :3] @ np.array(expected, float) + AFFINE[:3, 3]
        shown = [float(v) for v in label.get_attribute("data-ras").split()]
        assert shown == pytest.approx(ras.tolist(), abs=1e-9)
        text = ", ".join(f"{n} {v:.1f}".replace("-", "−") for n, v in zip("xyz", ras))
        assert label.text == (
            f"voxel i {expected[0]}, j {expected[1]}, k {expected[2]} (ITK-SNAP {expected[0] + 1}, "
            f"{expected[1] + 1}, {expected[2] + 1}) · {text} mm (RAS) · lesion {lesion}, {outcome}"
        )
        assert label.get_attribute("data-outcome") == outcome
    # a row of the case's own table goes there too
    d.find_element("css selector", "#case-a-fp-2 td").click()
    assert wait(
        d,
        "return document.querySelector('#case-a-viewer .viewer-cursor').getAttribute('data-component')"
        " === 'case-a-fp-2';",
    )
    _, pred = masks()
    pred_labels, _ = ndimage.label(pred, STRUCTURE)
    assert cursor(d)[1] == [math.floor(x + 0.5) for x in np.argwhere(pred_labels == 2).mean(0)]


def test_browser_keys_wheel_and_slider_move_the_planes(page):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.keys import Keys

    d, _ = page
    assert go_to_lesion(d, 1)
    _, start = cursor(d)
    root = d.find_element("css selector", "#case-a-viewer .viewer")
    axial = d.find_element("css selector", '#case-a-viewer canvas[data-view="axial"]')
    ActionChains(d).move_to_element(axial).perform()  # the keys move the plane under the mouse: axial, k
    root.send_keys(Keys.ARROW_UP)
    assert cursor(d)[1] == [start[0], start[1], start[2] + 1]
    root.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    assert cursor(d)[1] == [start[0], start[1], start[2] - 1]
    slider = d.find_element("css selector", '#case-a-viewer input[data-axis="k"]')
    assert slider.get_attribute("value") == str(start[2] - 1)  # the crop starts at k 0
    coronal = d.find_element("css selector", '#case-a-viewer canvas[data-view="coronal"]')
    ActionChains(d).scroll_from_origin(ScrollOrigin.from_element(coronal), 0, -120).perform()
    assert cursor(d)[1] == [start[0], start[1] + 1, start[2] - 1]  # the wheel over the coronal plane: j
    before = canvas_pixels(d, "axial")
    d.execute_script("const s = arguments[0]; s.value = 0; s.dispatchEvent(new Event('input'));", slider)
    assert cursor(d)[1][2] == 0 and canvas_pixels(d, "axial") != before


def test_browser_overlay_toggle_and_mip(page):
    d, _ = page
    assert go_to_lesion(d, 1)
    width, height, on = canvas_pixels(d, "mip-coronal")
    n = d.execute_script("return JSON.parse(document.getElementById('case-a-viewer-volume').textContent).shape;")
    assert width / height == pytest.approx(n[0] * SPACING[0] / (n[2] * SPACING[2]), rel=0.02)  # mm to scale
    rgb = np.array(on, np.uint8).reshape(height, width, 4)[..., :3]
    assert (rgb.max(axis=2) > 0).mean() > 0.5  # the body's MIP: not blank
    # each outcome's colour at 60 % over the grey of its ray's maximum: SUV 12.3 (white), 6 (153), 3 (77)
    under = {"#009E73": 255, "#E69F00": 153, "#CC79A7": 77}
    grey_under = {
        tuple(round((1 - 0.6) * grey + 0.6 * int(c[i : i + 2], 16)) for i in (1, 3, 5)) for c, grey in under.items()
    }
    assert grey_under <= {tuple(p) for p in rgb.reshape(-1, 3).tolist()}
    d.find_element("css selector", "#case-a-viewer .viewer-overlay").click()
    _, _, off = canvas_pixels(d, "mip-coronal")
    rgb_off = np.array(off, np.uint8).reshape(height, width, 4)[..., :3]
    assert off != on and not grey_under & {tuple(p) for p in rgb_off.reshape(-1, 3).tolist()}
    d.find_element("css selector", "#case-a-viewer .viewer-overlay").click()
    # a click on the MIP at the false positive goes to it
    _, pred = masks()
    pred_labels, _ = ndimage.label(pred, STRUCTURE)
    fp = [math.floor(x + 0.5) for x in np.argwhere(pred_labels == 2).mean(0)]
    starts = d.execute_script("return JSON.parse(document.getElementById('case-a-viewer-volume').textContent).starts;")
    x = (fp[0] - starts[0][0] + 0.5) / n[0]
    y = 1 - (fp[2] - starts[2][0] + 0.5) / n[2]
    d.execute_script(
        "const c = arguments[0], r = c.getBoundingClientRect();"
        "c.dispatchEvent(new MouseEvent('click', {bubbles: true, clientX: r.left + arguments[1] * r.width,"
        " clientY: r.top + arguments[2] * r.height}));",
        d.find_element("css selector", '#case-a-viewer canvas[data-view="mip-coronal"]'),
        x,
        y,
    )
    assert cursor(d)[1] == fp
    assert [e for e in d.get_log("browser") if e["level"] == "SEVERE"] == []


def test_browser_no_network_request(page):
    d, out = page
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )
    try:
        d.get(out.as_uri())
        # on demand: nothing is parsed, inflated or drawn before a viewer is opened
        assert d.execute_script("return document.querySelectorAll('.viewer canvas').length") == 0
        assert d.execute_script("return window.ccmetricsViewer.stats;") == {"parsed": 0, "loaded": 0}
        assert go_to_lesion(d, 2)  # offline, the viewer still opens and draws
        resources = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
        assert [r for r in resources if re.match(r"(https?|wss?|ftp):", r)] == []
        assert not re.search(r'(src|href)="(https?:)?//', out.read_text())
    finally:
        d.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )


def save_screenshot(out):
    """The docs' screenshot: the example data with fake scans (CT, PET), the viewer of case_002 open on its missed
    lesion 1."""
    import os
    import subprocess

    from ccmetrics.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.chdir(ROOT)
        subprocess.run(
            [sys.executable, "examples/make_example_images.py", str(tmp / "images"), "--all-on-grid"], check=True
        )
        result = tmp / "results"
        assert (
            main(
                [
                    "evaluate",
                    "examples/data/gt",
                    "examples/data/pred",
                    "--out-dir",
                    str(result),
                    "--metrics",
                    "dice,detection",
                    "--quiet",
                ]
            )
            == 0
        )
        write_report(result, tmp / "report.html", images=tmp / "images", channel_names=["CT", "PET"])
        d = browser(tmp)
        try:
            d.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1360, "height": 560, "deviceScaleFactor": 1, "mobile": False},
            )
            d.get((tmp / "report.html").as_uri())
            d.find_element("css selector", '#lesion-table a[href="#case-case_002-lesion-1"]').click()
            wait(d, "return document.querySelector('details.viewer-box[open] .viewer-cursor');")
            d.execute_script(
                "const v = document.querySelector('details.viewer-box[open]'); v.scrollIntoView();"
                "window.scrollBy(0, -4);"
            )
            time.sleep(0.3)
            d.save_screenshot(str(out))
        finally:
            d.quit()


if __name__ == "__main__":
    save_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "viewer.png").resolve())


def test_each_class_has_its_labels_on_one_volume_of_the_case(tmp_path):
    """``--classes 1,2``: one volume (scan and grid) per case, written once; each class its own outcomes."""
    from ccmetrics.cli import main

    gt, pred = masks()
    gt_map, pred_map = gt.copy(), pred.copy()
    gt_map[28:31, 24:27, 14:17] = 2  # lesion 2 becomes class 2 (still missed)
    pred_map[20:22, 4:6, 18:20] = 2  # the false positive becomes class 2's
    _, pet = scans()
    for sub in ("gt", "pred", "images"):
        (tmp_path / sub).mkdir()
    save_image(tmp_path / "gt" / "a.nii.gz", gt_map, like=LIKE)
    save_image(tmp_path / "pred" / "a.nii.gz", pred_map, like=LIKE)
    save_image(tmp_path / "images" / "a_0000.nii.gz", pet, like=LIKE)
    out = tmp_path / "results"
    command = ["evaluate", str(tmp_path / "gt"), str(tmp_path / "pred"), "--out-dir", str(out), "--quiet"]
    assert main([*command, "--metrics", "dice,detection", "--classes", "1,2", "--no-plots"]) == 0
    model = build_model(out, images=tmp_path / "images", channel_names=["PET"])
    entries = {c["class"]: c for c in model["cases"]}
    assert sorted(entries) == [1, 2] and model["n_viewers"] == 2
    holders = [c for c in entries.values() if c["viewer"]["volume_json"]]  # the first class on the page
    assert len(holders) == 1 and holders[0] is model["cases"][0]
    assert {c["viewer"]["volume_id"] for c in entries.values()} == {f"{holders[0]['anchor']}-viewer-volume"}
    volume = json.loads(holders[0]["viewer"]["volume_json"])
    box = tuple(slice(s[0], b) for s, b in zip(volume["starts"], volume["stops"]))
    components = pd.read_csv(out / "per_component.csv")
    predictions = pd.read_csv(out / "per_prediction.csv")
    for value, entry in entries.items():
        data = json.loads(entry["viewer"]["data_json"])
        outcomes = np.array([0] + [c["outcome"] for c in data["components"]])[
            viewer.decode(data["labels"], data["dtype"], volume["shape"])
        ]
        expected = np.zeros(SHAPE, np.uint8)
        pred_labels, _ = ndimage.label(pred_map == value, STRUCTURE)
        for row in predictions[predictions["class"] == value].itertuples():
            expected[pred_labels == row.prediction] = 4 if row.outcome == "fp" else 3
        gt_labels, _ = ndimage.label(gt_map == value, STRUCTURE)
        for row in components[components["class"] == value].itertuples():
            expected[gt_labels == row.component] = 1 if row.detected else 2
        assert np.array_equal(outcomes, expected[box])
        assert sorted(set(np.unique(expected)) - {0}) == ([1, 3] if value == 1 else [2, 4])
    # in the browser the class without the volume opens on the other's
    other = next(c for c in entries.values() if not c["viewer"]["volume_json"])
    write_report(out, tmp_path / "r.html", images=tmp_path / "images", channel_names=["PET"])
    d = browser(tmp_path)
    try:
        d.get((tmp_path / "r.html").as_uri())
        d.execute_script("window.ccmetricsViewer.open(arguments[0]);", other["anchor"])
        assert wait(d, "return document.querySelector(arguments[0]);", f"#{other['anchor']}-viewer .viewer-cursor")
        assert [e for e in d.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        d.quit()


# ---------------------------------------------------------------- split and merged


def test_overlaps_by_brute_force():
    rng = np.random.default_rng(7)
    for n_gt, n_pred, size in ((0, 0, 1), (1, 0, 5), (0, 1, 5), (1, 1, 1), (3, 4, 40), (6, 5, 200)):
        gt = rng.integers(0, n_gt + 1, size)
        pred = rng.integers(0, n_pred + 1, size)
        pairs = {(int(g), int(p)) for g, p in zip(gt, pred) if g and p}
        n_pred_of, n_gt_of, merged = viewer.overlaps(gt, pred, n_gt, n_pred)
        assert n_pred_of.tolist() == [0] + [sum(g == k for g, _ in pairs) for k in range(1, n_gt + 1)]
        assert n_gt_of.tolist() == [0] + [sum(p == m for _, p in pairs) for m in range(1, n_pred + 1)]
        by_pred = dict(zip(range(n_pred + 1), n_gt_of.tolist()))
        hand = [max([by_pred[p] for g, p in pairs if g == k], default=0) for k in range(1, n_gt + 1)]
        assert merged.tolist() == [0] + hand


def split_merged_masks():
    """Lesions 1 and 2 covered by one prediction (merged; it spills into the gap between them), lesion 3 split by
    two predictions that lie inside it, a false positive."""
    gt = np.zeros(SHAPE, np.uint8)
    gt[4:10, 4:10, 4:8] = 1
    gt[14:20, 4:10, 4:8] = 1
    gt[26:36, 20:30, 10:16] = 1
    pred = np.zeros(SHAPE, np.uint8)
    pred[4:20, 4:10, 4:8] = 1
    pred[26:30, 20:30, 10:16] = 1
    pred[32:36, 20:30, 10:16] = 1
    pred[2:4, 30:33, 20:22] = 1
    return gt, pred


@pytest.fixture(scope="module")
def split_case(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    gt, pred = split_merged_masks()
    for sub in ("gt", "pred"):
        (root / sub).mkdir()
    save_image(root / "gt" / "b.nii.gz", gt, like=LIKE)
    save_image(root / "pred" / "b.nii.gz", pred, like=LIKE)
    return root, evaluate(root)


def test_split_and_merged_equal_the_tables(split_case):
    _, result = split_case
    model = build_model(result)
    _, data, _ = viewer_data(model, "case-b")
    components = pd.read_csv(result / "per_component.csv")
    predictions = pd.read_csv(result / "per_prediction.csv")
    gt, pred = split_merged_masks()
    gt_labels, n_gt = ndimage.label(gt, STRUCTURE)
    pred_labels, n_pred = ndimage.label(pred, STRUCTURE)
    assert (n_gt, n_pred) == (len(components), len(predictions)) == (3, 4)
    by_kind = {(c["kind"], c["label"]): c for c in data["components"]}
    for row in components.itertuples():
        c = by_kind[("lesion", row.component)]
        covering = set(np.unique(pred_labels[gt_labels == row.component])) - {0}
        assert c["n_pred"] == row.n_pred == len(covering) and (c["n_pred"] >= 2) == row.split
        # the most lesions one prediction covering it covers, from per_prediction's gt_lesions
        lists = [str(r.gt_lesions).split(";") for r in predictions.itertuples() if r.prediction in covering]
        assert c["merged"] == max((len(x) for x in lists), default=0)
    for row in predictions.itertuples():
        c = by_kind[("prediction", row.prediction)]
        covered = set(np.unique(gt_labels[pred_labels == row.prediction])) - {0}
        assert c["n_gt"] == row.n_gt == len(covered) and (c["n_gt"] >= 2) == row.merged
    assert sorted(components["n_pred"]) == [1, 1, 2] and sorted(predictions["n_gt"]) == [0, 1, 1, 2]
    assert [by_kind[("lesion", k)]["merged"] for k in (1, 2, 3)] == [2, 2, 1]


def dark(colour, alpha=170):
    """A colour under the hatching's stripe: black at ``alpha`` / 255 over it."""
    return [round(int(colour[i : i + 2], 16) * (1 - alpha / 255)) for i in (1, 3, 5)]


def has_colour(rgb, colour, tolerance=2):
    return bool((np.abs(rgb.astype(int) - np.array(colour)).max(axis=-1) <= tolerance).any())


def test_browser_split_and_merged_are_hatched_and_named(split_case, tmp_path):
    root, result = split_case
    out = root / "report.html"
    write_report(result, out)
    gt, pred = split_merged_masks()
    gt_labels, _ = ndimage.label(gt, STRUCTURE)
    pred_labels, _ = ndimage.label(pred, STRUCTURE)
    d = browser(tmp_path)
    try:
        d.set_window_size(1300, 1000)
        d.get(out.as_uri())
        texts = {}
        for lesion in (1, 3):
            d.find_element("css selector", f'#lesion-table a[href="#case-b-lesion-{lesion}"]').click()
            assert wait(
                d,
                "const l = document.querySelector('#case-b-viewer .viewer-cursor');"
                "return l && l.getAttribute('data-component') === arguments[0];",
                f"case-b-lesion-{lesion}",
            )
            label, voxel = cursor(d, "case-b")
            assert voxel == [math.floor(x + 0.5) for x in np.argwhere(gt_labels == lesion).mean(0)]
            texts[lesion] = (label.text.split(" · ")[-1], label.get_attribute("data-hatch"))
        assert texts == {
            1: ("lesion 1, found, merged (one prediction covers 2 lesions)", "merged"),
            3: ("lesion 3, found, split (2 predictions)", "split"),
        }
        keys = d.find_elements("css selector", "#case-b-viewer .viewer-hatch-key")
        assert [k.get_attribute("data-hatch") for k in keys] == ["split", "merged"]
        # the merged prediction on the coronal MIP, where only its voxels outside the GT lie (i 10..13)
        merged = int(pred_labels[12, 6, 5])
        n = d.execute_script("return JSON.parse(document.getElementById('case-b-viewer-volume').textContent).shape;")
        starts = d.execute_script(
            "return JSON.parse(document.getElementById('case-b-viewer-volume').textContent).starts;"
        )
        mip = d.find_element("css selector", '#case-b-viewer canvas[data-view="mip-coronal"]')
        d.execute_script(
            "const c = arguments[0], r = c.getBoundingClientRect();"
            "c.dispatchEvent(new MouseEvent('click', {bubbles: true, clientX: r.left + arguments[1] * r.width,"
            " clientY: r.top + arguments[2] * r.height}));",
            mip,
            (11 - starts[0][0] + 0.5) / n[0],
            1 - (5 - starts[2][0] + 0.5) / n[2],
        )
        label, voxel = cursor(d, "case-b")
        assert voxel == [math.floor(x + 0.5) for x in np.argwhere(pred_labels == merged).mean(0)]
        assert label.text.split(" · ")[-1] == f"prediction {merged}, true positive, merged (covers 2 lesions)"
        # hatched: the found and the true-positive colours with dark stripes; the false positive plain
        width, height, on = canvas_pixels(d, "mip-coronal", "case-b")
        rgb = np.array(on, np.uint8).reshape(height, width, 4)[..., :3]
        found, tp, fp = "#009E73", "#56B4E9", "#CC79A7"
        for colour in (found, tp, fp):
            assert has_colour(rgb, [int(colour[i : i + 2], 16) for i in (1, 3, 5)], 0)
        assert has_colour(rgb, dark(found)) and has_colour(rgb, dark(tp)) and not has_colour(rgb, dark(fp))
        d.find_element("css selector", "#case-b-viewer .viewer-overlay").click()
        _, _, off = canvas_pixels(d, "mip-coronal", "case-b")
        rgb_off = np.array(off, np.uint8).reshape(height, width, 4)[..., :3]
        for colour in (found, tp, fp):  # no scan, no overlay: black (and the cursor), no stripes
            assert not has_colour(rgb_off, [int(colour[i : i + 2], 16) for i in (1, 3, 5)], 2)
            assert not has_colour(rgb_off, dark(colour))
        assert [e for e in d.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        d.quit()
