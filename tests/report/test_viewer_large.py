"""The viewer of a large data set (issue 42, point 2): the cases' viewer data in a folder beside the page, each case's
loaded only when its viewer is opened, also from a page opened as a file.

Synthetic data written into ``tmp_path``: 30 small cases (masks alone, 12 x 10 x 8 voxels of 1.5 x 1.5 x 2.5 mm),
case ``c07`` holding a lesion at ``[2:5, 3:6, 2:5]`` (+ the case's number mod 4 on i) that the prediction covers,
and a false positive. What is checked against a computation here: the data written beside the page read back from
the scripts (``json.loads`` of their string literals) equal the data the page would hold inline, key by key; the
counts of files, scripts loaded and data parsed are those of the cases opened; the lesion's centroid
(``numpy`` by hand) is where the cursor goes.

The browser tests open the page in headless Chromium as ``tests/report/test_viewer.py`` does, and are skipped, with
the reason, only where it is absent.
"""

import copy
import json
import math
import re

import numpy as np
import pytest
from _browser import browser, wait

from ccmetrics.formats.io import Image, save_image
from ccmetrics.report import build_model, render_html, viewer

N_CASES = 30
SHAPE = (12, 10, 8)
LIKE = Image(np.zeros(SHAPE, np.uint8), (1.5, 1.5, 2.5), np.diag([1.5, 1.5, 2.5, 1.0]))
OPENED = 17  # the case opened in the browser


def lesion_box(n):
    s = n % 4
    return (slice(2 + s, 5 + s), slice(3, 6), slice(2, 5))


def write_cases(root):
    for sub in ("gt", "pred"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for n in range(N_CASES):
        gt = np.zeros(SHAPE, np.uint8)
        gt[lesion_box(n)] = 1
        pred = gt.copy()
        pred[9:11, 7:9, 6:8] = 1  # a false positive
        save_image(root / "gt" / f"c{n:02d}.nii.gz", gt, like=LIKE)
        save_image(root / "pred" / f"c{n:02d}.nii.gz", pred, like=LIKE)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    from ccmetrics.cli import main

    root = tmp_path_factory.mktemp("large")
    write_cases(root)
    out = root / "results"
    argv = ["evaluate", str(root / "gt"), str(root / "pred"), "--out-dir", str(out), "--metrics", "dice,detection"]
    assert main([*argv, "--quiet", "--no-plots"]) == 0
    return root, out


def viewer_texts(model):
    """Per anchor, the JSON texts of its viewer: its label map and, on a case's first class, its volume."""
    return {c["anchor"]: copy.deepcopy(c["viewer"]) for c in model["cases"] if c["viewer"]}


def read_scripts(folder):
    """Every id: JSON value the scripts beside the page store (their string literals read as JSON)."""
    out = {}
    for path in sorted(folder.glob("*.js")):
        for key, value in re.findall(r'^f\[("(?:[^"\\]|\\.)*")\] = ("(?:[^"\\]|\\.)*");$', path.read_text(), re.M):
            out[json.loads(key)] = json.loads(json.loads(value))
    return out


@pytest.fixture(scope="module")
def pages(result):
    """The page with its data beside it (folder) and the page with its data inline, from one model each."""
    root, out = result
    model = build_model(out)
    inline = viewer_texts(model)
    assert len(inline) == N_CASES
    (root / "inline.html").write_text(render_html(model), encoding="utf-8")
    page = root / "report.html"
    assert viewer.place_data(model["cases"], page, "folder") == "folder"
    page.write_text(render_html(model), encoding="utf-8")
    return root, page, inline


def test_folder_holds_each_case_and_equals_the_inline_data(pages):
    root, page, inline = pages
    folder = root / "report_files"
    assert folder == viewer.data_folder(page)
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"case-c{n:02d}.js" for n in range(N_CASES))
    stored = read_scripts(folder)
    assert len(stored) == 2 * N_CASES
    for anchor, v in inline.items():
        assert stored[anchor] == json.loads(v["data_json"])
        assert stored[v["volume_id"]] == json.loads(v["volume_json"])
    html = page.read_text()
    # in the page: per case only where its data lie, no volume and no label map
    assert 'id="case-c00-viewer-volume"' in (root / "inline.html").read_text()
    assert not re.search(r'id="case-c\d+-viewer-volume"', html) and '"labels":' not in html
    for n in range(N_CASES):
        assert f'id="case-c{n:02d}-viewer-data">{{"src":"report_files/case-c{n:02d}.js"}}</script>' in html
    data_size = sum(len(v["data_json"]) + len(v["volume_json"] or "") for v in inline.values())
    assert len((root / "inline.html").read_text()) - len(html) >= data_size - 60 * N_CASES


def test_auto_goes_beside_the_page_only_over_the_limit(pages, tmp_path):
    _, _, inline = pages
    size = sum(len(v["data_json"]) + len(v["volume_json"] or "") for v in inline.values())
    cases = [{"anchor": a, "viewer": copy.deepcopy(v)} for a, v in inline.items()]
    out = tmp_path / "r.html"
    assert viewer.place_data(cases, out, "auto", limit_bytes=size) == "inline"
    assert not (tmp_path / "r_files").exists() and cases[0]["viewer"]["volume_json"] is not None
    assert viewer.place_data(cases, out, "auto", limit_bytes=size - 1) == "folder"
    assert len(list((tmp_path / "r_files").glob("*.js"))) == N_CASES
    assert viewer.place_data([], out, "folder") == "folder"  # nothing to place: nothing written
    # again: its own scripts replaced, no other file of the folder touched
    mine = tmp_path / "r_files" / "notes.js"
    mine.write_text("// not ccmetrics'\n")
    (tmp_path / "r_files" / "case-c00.js").rename(tmp_path / "r_files" / "former.js")
    cases = [{"anchor": a, "viewer": copy.deepcopy(v)} for a, v in inline.items()]
    assert viewer.place_data(cases, out, "folder") == "folder"
    assert sorted(p.name for p in (tmp_path / "r_files").iterdir()) == sorted(
        ["notes.js", *(f"case-c{n:02d}.js" for n in range(N_CASES))]
    )
    assert mine.read_text() == "// not ccmetrics'\n"
    with pytest.raises(ValueError, match="say one of auto, inline, folder"):
        viewer.place_data(cases, out, "beside")


def test_viewer_data_option_of_the_command(result, tmp_path, capsys):
    """``ccmetrics report --viewer-data folder`` (and ``write_report(viewer_data=...)``): the data beside the page;
    the default, for a small data set: in the page, no folder."""
    from ccmetrics.cli import main

    _, out = result
    page = tmp_path / "large.html"
    assert main(["report", str(out), "--html", str(page), "--viewer-data", "folder", "--max-cases", "30"]) == 0
    assert len(list((tmp_path / "large_files").glob("case-c*.js"))) == N_CASES
    assert '{"src":"large_files/case-c00.js"}' in page.read_text()
    printed = capsys.readouterr().out
    assert f"\nViewer data in {tmp_path / 'large_files'}: keep this folder beside the page" in printed
    assert main(["report", str(out), "--html", str(tmp_path / "small.html")]) == 0
    assert "Viewer data in" not in capsys.readouterr().out
    assert not (tmp_path / "small_files").exists()
    assert 'id="case-c00-viewer-volume"' in (tmp_path / "small.html").read_text()


def test_classes_of_a_case_share_its_script(tmp_path):
    volume = {"volume_id": "case-a-class1-viewer-volume", "volume_json": '{"shape":[2,1,1]}'}
    cases = [
        {"anchor": "case-a-class1", "viewer": {**volume, "data_json": '{"k":1}'}},
        {"anchor": "case-a-class2", "viewer": {**volume, "volume_json": None, "data_json": '{"k":2}'}},
        {"anchor": "case-b-class1", "viewer": None},
    ]
    viewer.place_data(cases, tmp_path / "r.html", "folder")
    assert [p.name for p in (tmp_path / "r_files").iterdir()] == ["case-a-class1.js"]
    assert read_scripts(tmp_path / "r_files") == {
        "case-a-class1-viewer-volume": {"shape": [2, 1, 1]},
        "case-a-class1": {"k": 1},
        "case-a-class2": {"k": 2},
    }
    assert cases[1]["viewer"]["data_json"] == '{"src":"r_files/case-a-class1.js"}'


# ---------------------------------------------------------------- in a real browser, from file://


@pytest.fixture(scope="module")
def driver(pages, tmp_path_factory):
    d = browser(tmp_path_factory.mktemp("chromium"))
    d.set_window_size(1300, 1000)
    yield d
    d.quit()


STATS = "return window.ccmetricsViewer.stats;"
LOADED = "return Array.from(document.querySelectorAll('script[src]'), s => s.src);"  # file:// has no resource timing


def test_browser_loads_a_case_only_when_its_viewer_opens(pages, driver):
    root, page, _ = pages
    d = driver
    d.get(page.as_uri())
    assert page.as_uri().startswith("file://")
    assert d.execute_script(STATS) == {"parsed": 0, "loaded": 0}
    assert d.execute_script(LOADED) == []
    anchor = f"case-c{OPENED:02d}"
    d.find_element("css selector", f'#lesion-table a[href="#{anchor}-lesion-1"]').click()
    assert wait(
        d,
        "const l = document.querySelector(arguments[0]);return l && l.getAttribute('data-component') === arguments[1];",
        f"#{anchor}-viewer .viewer-cursor",
        f"{anchor}-lesion-1",
    )
    centre = [math.floor(np.arange(s.start, s.stop).mean() + 0.5) for s in lesion_box(OPENED)]
    label = d.find_element("css selector", f"#{anchor}-viewer .viewer-cursor")
    assert [int(v) for v in label.get_attribute("data-voxel").split()] == centre
    assert label.text.endswith("lesion 1, found")
    assert d.execute_script(STATS) == {"parsed": 2, "loaded": 1}  # its label map and volume, from its script
    assert d.execute_script(LOADED) == [(root / "report_files" / f"{anchor}.js").as_uri()]
    assert d.execute_script("return document.querySelectorAll(`#${arguments[0]}-viewer canvas`).length;", anchor) == 5
    assert d.execute_script("return document.querySelectorAll('.viewer canvas').length;") == 5  # no other case
    # opened again: nothing more is loaded or parsed; another case: its script only
    d.execute_script("window.ccmetricsViewer.open(arguments[0]);", anchor)
    assert d.execute_script(STATS) == {"parsed": 2, "loaded": 1}
    d.execute_script("window.ccmetricsViewer.open('case-c03');")
    assert wait(d, "return document.querySelectorAll('#case-c03-viewer canvas').length === 5;")
    assert d.execute_script(STATS) == {"parsed": 4, "loaded": 2}
    assert [e for e in d.get_log("browser") if e["level"] == "SEVERE"] == []


def test_browser_says_where_the_data_should_be_when_missing(pages, driver):
    root, page, _ = pages
    d = driver
    script = root / "report_files" / "case-c05.js"
    moved = script.with_suffix(".moved")
    script.rename(moved)
    try:
        d.get(page.as_uri())
        d.execute_script("window.ccmetricsViewer.open('case-c05').catch(() => null);")
        assert wait(d, "return document.querySelector('#case-c05-viewer .viewer').getAttribute('data-error');")
        text = d.find_element("css selector", "#case-c05-viewer .viewer").get_attribute("textContent")
        assert text == (
            "the viewer's data report_files/case-c05.js could not be read: keep the folder report_files beside the page"
        )
    finally:
        moved.rename(script)
