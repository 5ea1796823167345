"""ccmetrics report --images: the thumbnails drawn on the scan (CT and PET channels), and never on a wrong one.

Synthetic data only, written into ``tmp_path``: a GT with a found lesion (1), a missed one (2) and a false
positive, a CT (air -1000 HU, body 40 HU, lesions 60 HU) and a PET (1 in the body, lesion 1 at 12.3, lesion 2
at 6) on the GT's grid, and scans on other grids. The browser test opens the page built by the command line in
headless Chromium (``/usr/bin/chromium`` and ``/usr/bin/chromedriver``, started as ``tests/report/test_report.py``
starts them) and is skipped only where these are absent.
"""

import math
import os
import re

import numpy as np
import pytest
from _browser import browser

from ccmetrics.formats.io import Image, load_image, save_image
from ccmetrics.report import data, geometry, on_scan, page, thumbnails, write_report

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

SHAPE = (48, 48, 24)
SPACING = (2.0, 2.0, 3.0)
AFFINE = np.diag(SPACING + (1.0,))
AFFINE[:3, 3] = (-48.0, -48.0, -36.0)
LIKE = Image(np.zeros(SHAPE, np.uint8), SPACING, AFFINE)
PET_UPTAKE = {1: 12.3, 2: 6.0}


def masks():
    gt = np.zeros(SHAPE, np.uint8)
    gt[6:16, 6:16, 4:10] = 1  # lesion 1: 600 voxels, found
    gt[34:37, 30:33, 12:15] = 1  # lesion 2: 27 voxels, missed
    pred = np.zeros(SHAPE, np.uint8)
    pred[7:16, 6:16, 4:10] = 1
    pred[40:42, 40:42, 12:14] = 1  # false positive
    return gt, pred


def scans(gt):
    """(CT in HU, PET) of one case."""
    body = np.zeros(SHAPE, bool)
    body[2:46, 2:46, :] = True
    ct = np.where(body, 40, -1000).astype(np.int16)
    ct[gt > 0] = 60
    pet = np.where(body, 1.0, 0.0).astype(np.float32)
    pet[6:16, 6:16, 4:10] = PET_UPTAKE[1]
    pet[34:37, 30:33, 12:15] = PET_UPTAKE[2]
    return ct, pet


def write_cases(root, cases):
    """gt/, pred/ and images/ under ``root``; ``cases`` maps a case id to how its PET is written:
    ``"ok"`` (the GT's grid), ``"spacing"``, ``"origin"``, ``"shape"`` (another grid) or ``None`` (no scan)."""
    gt, pred = masks()
    ct, pet = scans(gt)
    for sub in ("gt", "pred", "images"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for case, how in cases.items():
        save_image(root / "gt" / f"{case}.nii.gz", gt, like=LIKE)
        save_image(root / "pred" / f"{case}.nii.gz", pred, like=LIKE)
        if how is None:
            continue
        save_image(root / "images" / f"{case}_0000.nii.gz", ct, like=LIKE)
        if how == "ok":
            like, array = LIKE, pet
        elif how == "spacing":  # 2 x 2 x 2 mm: the same voxels, another grid
            like, array = Image(pet, (2.0, 2.0, 2.0), np.diag([2.0, 2.0, 2.0, 1.0])), pet
            like.affine[:3, 3] = AFFINE[:3, 3]
        elif how == "origin":
            affine = AFFINE.copy()
            affine[2, 3] += 6.0  # two slices further up
            like, array = Image(pet, SPACING, affine), pet
        else:  # shape: half the voxels along i and j, twice their size
            array = pet[::2, ::2]
            affine = AFFINE.copy()
            affine[:2, :2] *= 2
            like = Image(array, (4.0, 4.0, 3.0), affine)
        save_image(root / "images" / f"{case}_0001.nii.gz", array, like=like)
    return root / "gt", root / "pred", root / "images"


def evaluate(gt_dir, pred_dir, out):
    from ccmetrics.cli import main

    assert (
        main(["evaluate", str(gt_dir), str(pred_dir), "--out", str(out), "--metrics", "dice,detection", "--quiet"]) == 0
    )
    return out


# ---------------------------------------------------------------- the window


def test_ct_window_is_soft_tissue_by_hand():
    assert thumbnails.window_values([-160, 240, 40], -160, 240).tolist() == [0.0, 1.0, 0.5]
    ct = np.array([-1000.0, -160.0, -60.0, 40.0, 140.0, 240.0, 1500.0, np.nan])
    window = thumbnails.choose_window(ct)  # air in the values: a CT
    assert (window.kind, window.low, window.high, window.level, window.width) == ("ct", -160.0, 240.0, 40.0, 400.0)
    grey = window(ct)
    assert grey[:7].tolist() == [0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0] and math.isnan(grey[7])
    assert window.text == "L 40 W 400 HU"
    # the crop alone may hold no air: the whole channel's minimum decides
    soft = np.array([20.0, 40.0, 60.0])
    assert thumbnails.choose_window(soft, minimum=-1024.0).kind == "ct"
    assert thumbnails.choose_window(soft, minimum=-400.0).kind == "range"  # above -500: not a CT
    assert thumbnails.choose_window(soft, spec="ct")(soft).tolist() == [0.45, 0.5, 0.55]


def test_pet_window_runs_from_zero_to_the_crop_maximum():
    pet = np.array([0.0, 3.0, 6.0, 12.0, np.nan])
    window = thumbnails.choose_window(pet, minimum=0.0)
    assert (window.kind, window.low, window.high) == ("range", 0.0, 12.0)
    assert window(pet)[:4].tolist() == [0.0, 0.25, 0.5, 1.0]
    assert window.text == "0–12"
    assert thumbnails.choose_window(np.array([0.5, 2.0, 12.3]), minimum=0.0).text == "0–12.3"
    assert thumbnails.choose_window(np.array([1.0, 5.0])).low == 0.0  # from 0, not from the crop's minimum
    negative = thumbnails.choose_window(np.array([-2.0, 0.0, 2.0]))  # a negative minimum starts the scale
    assert (negative.low, negative.high) == (-2.0, 2.0) and negative(np.array([-2.0, 0.0, 2.0])).tolist() == [0, 0.5, 1]
    assert negative.text == "−2–2"
    flat = thumbnails.choose_window(np.zeros(4))
    assert (flat.low, flat.high) == (0.0, 1.0)  # a flat crop: black, no division by zero
    # a window given overrides both rules: a lung window on a CT, a level/width on a PET
    lung = thumbnails.choose_window(np.array([-1000.0]), spec="-600/1500")
    assert (lung.low, lung.high, lung.text) == (-1350.0, 150.0, "L −600 W 1500")
    assert thumbnails.choose_window(pet, spec=(5, 10))(pet)[:4].tolist() == [0.0, 0.3, 0.6, 1.0]
    assert thumbnails.choose_window(np.array([-1000.0, 12.0]), spec="range").high == 12.0


def test_window_specs_are_read_or_refused():
    assert thumbnails.parse_window(" 40 / 400 ") == (40.0, 400.0) and thumbnails.parse_window("40,400") == (40.0, 400.0)
    assert thumbnails.window_specs({"PET": "range", "0000": "CT"}) == {"PET": "range", "0000": "ct"}
    for bad in ("soft", "40", "40/0", "40/-400", "a/b"):
        with pytest.raises(ValueError, match="window"):
            thumbnails.parse_window(bad)


# ---------------------------------------------------------------- the planes of the scan


def test_intensity_plane_equals_the_image_slice_at_the_lesion_centroid(tmp_path):
    gt_dir, pred_dir, image_dir = write_cases(tmp_path, {"case_a": "ok"})
    rng = np.random.default_rng(7)
    noise = rng.normal(0.0, 50.0, SHAPE).astype(np.float32)  # every voxel its own value
    save_image(image_dir / "case_a_0000.nii.gz", noise, like=LIKE)
    border = load_image(gt_dir / "case_a.nii.gz").array
    border[0:3, 20:24, 19:24] = 1  # a third lesion at the image's border: its crop reaches beyond i = 0 and k = 23
    save_image(gt_dir / "case_a.nii.gz", border, like=LIKE)
    case = data.load_case(gt_dir / "case_a.nii.gz", pred_dir / "case_a.nii.gz")
    channel, problem = data.read_channel(data.ImageFolder.scan(image_dir).channels("case_a")[0], case)
    assert problem is None and channel.label == "0000" and channel.minimum == float(noise.min())
    gt = load_image(gt_dir / "case_a.nii.gz").array > 0
    outside = {}
    for lesion in case.lesions:
        center = tuple(
            int(math.floor(c + 0.5)) for c in np.argwhere(gt & (case.regions.gt_labels == lesion.label)).mean(0)
        )
        half = geometry.half_widths(lesion.extent_mm(SPACING), SPACING)
        box = geometry.crop_box(center, half)
        g = geometry.with_image(
            geometry.thumbnail_geometry(center, box, case.gt, case.pred, case.regions, case.spacing), channel.array
        )
        padded = np.pad(noise, [(h, h) for h in half], constant_values=np.nan)  # the crop may leave the image
        i, j, k = (slice(c, c + 2 * h + 1) for c, h in zip(center, half))  # the box, in the padded array
        ci, cj, ck = (c + h for c, h in zip(center, half))
        expected = {"axial": padded[i, j, ck], "coronal": padded[i, cj, k], "sagittal": padded[ci, j, k]}
        for plane in g.planes:
            assert plane.intensity.shape == plane.gt.shape
            np.testing.assert_array_equal(plane.intensity, expected[plane.name])  # NaN where outside, equal inside
            assert np.array_equal(np.isnan(plane.intensity), plane.regions < 0)
            assert not np.shares_memory(plane.intensity, channel.array)  # only the slices are kept
        # the centroid voxel is the middle pixel of every plane
        assert all(p.intensity[half[p.h_axis], half[p.v_axis]] == noise[center] for p in g.planes)
        outside[lesion.label] = any(bool(np.isnan(p.intensity).any()) for p in g.planes)
    assert outside == {c.label: c.bbox[0][0] == 0 for c in case.lesions}  # only the border lesion's crop leaves it
    assert sum(outside.values()) == 1 and len(outside) == 3


def test_2d_image_plane():
    gt = np.zeros((10, 12), bool)
    gt[1:4, 2:5] = True
    image = np.arange(120, dtype=float).reshape(10, 12)
    box = geometry.crop_box((2, 3), (3, 3))
    g = geometry.thumbnail_geometry((2, 3), box, gt, gt, gt.astype(int), (1.0, 1.0), image=image)
    (plane,) = g.planes
    expected = np.full((7, 7), np.nan)
    expected[1:, :] = image[0:6, 0:7]
    np.testing.assert_array_equal(plane.intensity, expected)


# ---------------------------------------------------------------- finding the channels


def test_channel_discovery(tmp_path):
    for name in [
        "a_0000.nii.gz",
        "a_0001.nii.gz",
        "a_0002.mha",
        "b.nii.gz",
        "c_0000.nrrd",
        "x_0001.nii.gz",
        "e_0000.nii.gz",
        "e_0000.mha",
        "notes.txt",
        "a_0003.nii.gz.bak",
    ]:
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d_0000.nii.gz").write_bytes(b"")
    folder = data.ImageFolder.scan(tmp_path)
    found = {
        case: [(c.code, c.path.name) for c in folder.channels(case)] for case in ("a", "b", "c", "d", "x", "x_0001")
    }
    assert found == {
        "a": [("0000", "a_0000.nii.gz"), ("0001", "a_0001.nii.gz"), ("0002", "a_0002.mha")],
        "b": [("", "b.nii.gz")],  # the case id itself: one channel
        "c": [("0000", "c_0000.nrrd")],
        "d": [],  # missing (sub-folders are not searched)
        "x": [("0001", "x_0001.nii.gz")],
        "x_0001": [("", "x_0001.nii.gz")],
    }
    with pytest.raises(ValueError, match="several files for one channel: e_0000.mha, e_0000.nii.gz"):
        folder.channels("e")
    a = folder.channels("a")
    assert [c.label() for c in a] == ["0000", "0001", "0002"]
    assert [c.label(["CT", "PET"]) for c in a] == ["CT", "PET", "0002"]  # names in the order of the numbers
    assert folder.channels("b")[0].label() == "image" and folder.channels("b")[0].label(["T1"]) == "T1"
    with pytest.raises(FileNotFoundError, match="no such folder"):
        data.ImageFolder.scan(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no image file"):
        data.ImageFolder.scan(tmp_path / "empty")


# ---------------------------------------------------------------- the report


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    """Four identical cases evaluated once: a and b get a scan on the GT's grid, c's PET is off it (its CT on it),
    d has none."""
    root = tmp_path_factory.mktemp("scans")
    gt_dir, pred_dir, image_dir = write_cases(
        root, {"case_a": "ok", "case_b": "ok", "case_c": "spacing", "case_d": None}
    )
    return evaluate(gt_dir, pred_dir, root / "results"), image_dir


def by_case(model):
    return {c["case"]: c for c in model["cases"]}


def test_thumbnails_get_one_row_per_channel_with_its_window(result):
    folder, image_dir = result
    model = page.build_model(folder, images=image_dir, channel_names=["CT", "PET"])
    cases = by_case(model)
    for case in ("case_a", "case_b"):
        c = cases[case]
        assert c["on_image"] and c["channels"] == ["CT", "PET"] and c["image_note"] is None
        thumbs = {les["label"]: les["thumb"] for les in c["lesions"]}
        fp = c["false_positives"][0]["thumb"]
        for thumb in [*thumbs.values(), fp]:
            assert [r["label"] for r in thumb["rows"]] == ["CT", "PET"]
            assert thumb["rows"][0]["scale"] == "L 40 W 400 HU"  # the CT holds air
            assert all(r["src"].startswith("data:image/png;base64,") for r in thumb["rows"])
            assert thumb["src"] == thumb["rows"][0]["src"]
        # PET: from 0 to the maximum within each crop
        assert thumbs[1]["rows"][1]["scale"] == "0–12.3" and thumbs[2]["rows"][1]["scale"] == "0–6"
        assert fp["rows"][1]["scale"] == "0–1"  # the false positive's crop holds neither lesion
    assert model["channels"] == ["CT", "PET"] and model["n_on_image"] == 3  # case_c on its CT
    c = cases["case_c"]
    assert c["on_image"] and c["channels"] == ["CT"] and c["channels_left_out"] == ["PET"]
    assert c["image_note"] is None and c["channel_note"].startswith("channel 0001 (PET): spacing differs")
    # a window asked for, by channel name
    lung = page.build_model(folder, images=image_dir, channel_names=["CT", "PET"], window={"CT": "-600/1500"})
    assert by_case(lung)["case_a"]["lesions"][0]["thumb"]["rows"][0]["scale"] == "L −600 W 1500"


@pytest.mark.parametrize(
    "how, why",
    [
        ("spacing", "channel 0001 (PET): spacing differs: gt (2.0, 2.0, 3.0) mm, image (2.0, 2.0, 2.0) mm"),
        ("origin", "channel 0001 (PET): origin differs: gt (-48.0, -48.0, -36.0) mm, image (-48.0, -48.0, -30.0) mm"),
        ("shape", "channel 0001 (PET): shape differs: gt (48, 48, 24), image (24, 24, 24)"),
    ],
)
def test_a_channel_on_another_grid_is_left_out_and_the_others_drawn(tmp_path, how, why):
    """Issue 30: a PET on another grid drew the whole case on the empty background although its CT was fine."""
    gt_dir, pred_dir, image_dir = write_cases(tmp_path, {"case_a": "ok", "case_b": how})
    folder = evaluate(gt_dir, pred_dir, tmp_path / "results")
    out = tmp_path / "report.html"
    info = write_report(folder, out, images=image_dir, channel_names=["CT", "PET"])
    assert (info.n_on_image, info.channels, info.images) == (2, ["CT", "PET"], image_dir)
    assert info.not_on_image == [] and info.channels_left_out == [f"case_b: {why}"]
    assert f"Channels left out (the other channels drawn) in 1 case:\n  case_b: {why}" in str(info)
    assert "on the empty background" not in str(info)
    model = page.build_model(folder, images=image_dir, channel_names=["CT", "PET"])
    a, b = by_case(model)["case_a"], by_case(model)["case_b"]
    assert b["on_image"] and b["channels"] == ["CT"] and b["image_note"] is None
    assert b["channel_note"] == why and b["channels_left_out"] == ["PET"]
    for item, same in zip(b["lesions"] + b["false_positives"], a["lesions"] + a["false_positives"]):
        thumb = item["thumb"]
        assert [r["label"] for r in thumb["rows"]] == ["CT"] and thumb["left_out"] == [{"label": "PET", "why": why}]
        assert thumb["rows"][0] == same["thumb"]["rows"][0]  # the CT drawn as in a case whose PET is on the grid
    html = out.read_text()
    assert html.count('class="warning channel-note"') == 1 and 'class="warning image-note"' not in html
    assert f"Channel PET left out (drawn: CT): {why}" in html and 'id="channel-notes"' in html
    assert html.count('<div class="thumb-row" data-channel="PET">') == 3  # case_a only
    assert html.count('<div class="thumb-row" data-channel="CT">') == 6  # both cases
    assert 'class="thumb-left-out"' not in html and html.count(why) == 2  # case_b's head and the list at the top


def test_a_pet_written_by_nibabel_on_another_grid_leaves_the_ct_drawn(tmp_path):
    """The PET of a case written with nibabel, one voxel larger along k than the GT: only the PET is left out."""
    import nibabel as nib

    gt_dir, pred_dir, image_dir = write_cases(tmp_path, {"case_a": "ok"})
    _, pet = scans(masks()[0])
    other = np.concatenate([pet, pet[:, :, -1:]], axis=2)  # 25 slices
    nib.Nifti1Image(other, AFFINE).to_filename(image_dir / "case_a_0001.nii.gz")
    folder = evaluate(gt_dir, pred_dir, tmp_path / "results")
    info = write_report(folder, tmp_path / "report.html", images=image_dir, channel_names=["CT", "PET"])
    why = "channel 0001 (PET): shape differs: gt (48, 48, 24), image (48, 48, 25)"
    assert info.n_on_image == 1 and info.not_on_image == [] and info.channels_left_out == [f"case_a: {why}"]
    html = (tmp_path / "report.html").read_text()
    assert html.count('<div class="thumb-row" data-channel="CT">') == 3 and 'data-channel="PET">' not in html
    assert 'class="thumb-left-out"' not in html and html.count(why) == 2  # the case's head and the list at the top


def test_no_channel_on_the_grid_falls_back_whole(tmp_path):
    """When every channel lies off the GT's grid the case is drawn on the empty background, each channel's reason
    given."""
    gt_dir, pred_dir, image_dir = write_cases(tmp_path, {"case_a": "ok", "case_b": "origin"})
    ct, _ = scans(masks()[0])
    shifted = AFFINE.copy()
    shifted[2, 3] += 6.0
    save_image(image_dir / "case_b_0000.nii.gz", ct, like=Image(ct, SPACING, shifted))
    folder = evaluate(gt_dir, pred_dir, tmp_path / "results")
    info = write_report(folder, tmp_path / "report.html", images=image_dir, channel_names=["CT", "PET"])
    origin = "origin differs: gt (-48.0, -48.0, -36.0) mm, image (-48.0, -48.0, -30.0) mm"
    why = f"channel 0000 (CT): {origin}; channel 0001 (PET): {origin}"
    assert info.n_on_image == 1 and info.not_on_image == [f"case_b: {why}"] and info.channels_left_out == []
    assert f"1 case on the empty background:\n  case_b: {why}" in str(info)
    b = by_case(page.build_model(folder, images=image_dir, channel_names=["CT", "PET"]))["case_b"]
    assert not b["on_image"] and b["image_note"] == why and b["channels"] == [] and b["channel_note"] is None
    for item in b["lesions"] + b["false_positives"]:
        assert [r["label"] for r in item["thumb"]["rows"]] == [None] and item["thumb"]["left_out"] == []
    html = (tmp_path / "report.html").read_text()
    assert html.count('class="warning image-note"') == 1 and f"Not drawn on the image: {why}" in html


def test_case_without_a_scan_falls_back_with_a_note(result, tmp_path):
    folder, image_dir = result
    info = write_report(folder, tmp_path / "report.html", images=image_dir)
    assert info.n_on_image == 3 and info.channels == ["0000", "0001"]
    assert info.not_on_image == [
        f"case_d: no image found in {image_dir} "
        "(looked for case_d_0000.nii.gz, case_d_0001.nii.gz, ... or case_d.nii.gz)"
    ]
    assert len(info.channels_left_out) == 1  # case_c: drawn on its CT, its PET left out
    assert info.channels_left_out[0].startswith("case_c: channel 0001: spacing differs")
    # without --images nothing changes: one plain thumbnail per component, no note
    plain = page.build_model(folder)
    assert plain["images"] is None and not plain["image_notes"] and plain["n_on_image"] == 0
    assert all(r["thumb"]["rows"][0]["label"] is None for r in plain["finder"])


def test_cases_not_drawn_read_no_scan(result, monkeypatch):
    folder, image_dir = result
    read = []
    original = on_scan.read_channel  # where the report calls it
    monkeypatch.setattr(
        on_scan, "read_channel", lambda file, *a, **k: read.append(file.path.name) or original(file, *a, **k)
    )
    model = page.build_model(folder, images=image_dir, max_cases=1)
    drawn = [c["case"] for c in model["cases"] if c["drawn"]]
    assert len(drawn) == 1 and sorted(read) == sorted(p.name for p in image_dir.glob(f"{drawn[0]}_*"))


def test_cli_refuses_a_missing_image_folder_and_bad_options(result, tmp_path, capsys):
    from ccmetrics.cli import main

    folder, image_dir = result
    out = tmp_path / "r.html"
    assert main(["report", str(folder), "--out", str(out), "--images", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "--images" in err and "no such folder" in err and "CASE_0000.nii.gz" in err and not out.exists()
    assert main(["report", str(folder), "--out", str(out), "--images", str(image_dir), "--window", "softer"]) == 2
    assert "expected auto, ct" in capsys.readouterr().err
    assert main(["report", str(folder), "--out", str(out), "--channel-names", "CT,PET"]) == 2
    assert "go with --images" in capsys.readouterr().err
    assert not out.exists()
    code = main(
        [
            "report",
            str(folder),
            "--out",
            str(out),
            "--images",
            str(image_dir),
            "--window=PET=range",
            "--window=-600/1500",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert f"Thumbnails drawn on the images in {image_dir}: 3 cases (channels 0000, 0001); 1 case on" in printed
    assert "Channels left out (the other channels drawn) in 1 case:\n  case_c: channel 0001: spacing differs" in printed
    assert "L −600 W 1500" in out.read_text()


# ---------------------------------------------------------------- in the browser


def test_browser_shows_channel_rows_scales_and_the_geometry_note(tmp_path):
    import subprocess
    import sys

    gt_dir, pred_dir, image_dir = write_cases(tmp_path / "data", {"case_a": "ok", "case_b": "origin"})
    folder = evaluate(gt_dir, pred_dir, tmp_path / "results")
    out = tmp_path / "report.html"
    command = [sys.executable, "-m", "ccmetrics", "report", str(folder), "--out", str(out)]
    command += ["--images", str(image_dir), "--channel-names", "CT,PET"]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr
    assert (
        "Thumbnails drawn on the images in" in done.stdout
        and "case_b: channel 0001 (PET): origin differs" in done.stdout
        and "Channels left out" in done.stdout
    )

    d = browser(tmp_path)
    try:
        d.get(out.as_uri())
        d.find_element("id", "expand-all").click()
        assert d.find_element("css selector", '[data-count="on_image"]').text == "2"
        # case_a: every lesion and false positive has a CT row and a PET row, each with its scale
        for row_id in ("case-case_a-lesion-1", "case-case_a-lesion-2", "case-case_a-fp-2"):
            rows = d.find_elements("css selector", f"#{row_id} .thumb-row")
            assert [r.get_attribute("data-channel") for r in rows] == ["CT", "PET"]
            assert all(r.find_element("css selector", "img.thumb").get_attribute("naturalWidth") != "0" for r in rows)
            assert rows[0].find_element("css selector", ".scale").text == "L 40 W 400 HU"
        scale = d.find_element("css selector", '#case-case_a-lesion-1 .thumb-row[data-channel="PET"] .scale')
        assert scale.is_displayed() and scale.text == "0–12.3"
        assert (
            d.find_element("css selector", '#case-case_a-lesion-2 .thumb-row[data-channel="PET"] .scale').text == "0–6"
        )
        # case_b: its PET lies two slices off: the note says so, the thumbnails are on its CT alone
        why = "channel 0001 (PET): origin differs: gt (-48.0, -48.0, -36.0) mm, image (-48.0, -48.0, -30.0) mm"
        note = d.find_element("css selector", "#case-case_b .channel-note")
        assert note.is_displayed() and note.text == f"Channel PET left out (drawn: CT): {why}"
        assert d.find_elements("css selector", "#case-case_b .image-note") == []
        rows = d.find_elements("css selector", "#case-case_b .thumb-row")
        assert len(rows) == 3 and {r.get_attribute("data-channel") for r in rows} == {"CT"}
        assert all(r.find_element("css selector", "img.thumb").get_attribute("naturalWidth") != "0" for r in rows)
        assert d.find_elements("css selector", "#case-case_b .thumb-left-out") == []  # not under each lesion
        summary = d.find_element("id", "channel-notes")
        assert "case_b" in summary.text and "origin differs" in summary.text
        assert d.find_elements("id", "image-notes") == []
        images = d.execute_script("return [...document.images].map(i => [i.complete, i.naturalWidth]);")
        assert all(complete and width > 0 for complete, width in images)
        assert [e for e in d.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        d.quit()
    html = out.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html)  # still self-contained


# ---------------------------------------------------------------- several classes of one case


def write_region_cases(root, cases=("case_a", "case_b")):
    """Label maps (1 = tumour rim, 2 = its core) with a CT and a PET per case, evaluated as two regions:
    ``all=1+2`` (the whole tumour; a missed second lesion) and ``core=2``."""
    gt, pred = masks()
    gt[10:14, 10:14, 5:8] = 2  # the core inside lesion 1
    pred[10:13, 10:14, 5:8] = 2  # the predicted core, one slice short
    ct, pet = scans(gt > 0)
    for sub in ("gt", "pred", "images"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for case in cases:
        save_image(root / "gt" / f"{case}.nii.gz", gt, like=LIKE)
        save_image(root / "pred" / f"{case}.nii.gz", pred, like=LIKE)
        save_image(root / "images" / f"{case}_0000.nii.gz", ct, like=LIKE)
        save_image(root / "images" / f"{case}_0001.nii.gz", pet, like=LIKE)
    from ccmetrics.cli import main

    out = root / "results"
    command = ["evaluate", str(root / "gt"), str(root / "pred"), "--out", str(out), "--metrics", "dice,detection"]
    assert main([*command, "--classes", "all=1+2,core=2", "--quiet"]) == 0
    return out, root / "images"


def test_each_scan_and_mask_file_is_read_once_per_case_for_all_its_classes(tmp_path, monkeypatch):
    import ccmetrics.formats.io

    folder, image_dir = write_region_cases(tmp_path)
    plain = page.build_model(folder, images=image_dir, channel_names=["CT", "PET"])  # before counting
    channels, masks = [], []
    read_channel, load_image_ = on_scan.read_channel, ccmetrics.formats.io.load_image
    monkeypatch.setattr(
        on_scan, "read_channel", lambda f, *a, **k: channels.append(f.path.name) or read_channel(f, *a, **k)
    )
    monkeypatch.setattr(
        ccmetrics.formats.io, "load_image", lambda p, *a, **k: masks.append(str(p)) or load_image_(p, *a, **k)
    )
    model = page.build_model(folder, images=image_dir, channel_names=["CT", "PET"])
    assert sorted(channels) == sorted(p.name for p in image_dir.iterdir())  # 2 cases x 2 channels, once each
    masks = [m for m in masks if "images" not in m]  # the channels are read by load_image too
    assert len(masks) == 4 and len(set(masks)) == 4  # a GT and a prediction per case, once each
    assert len(model["cases"]) == 4 and all(c["on_image"] and c["channels"] == ["CT", "PET"] for c in model["cases"])
    # the same page as before, and each class drawn from its own masks
    for a, b in zip(plain["cases"], model["cases"]):
        assert [les["thumb"] for les in a["lesions"]] == [les["thumb"] for les in b["lesions"]]
    whole = next(c for c in model["cases"] if c["case"] == "case_a" and c["title"].endswith("(all)"))
    core = next(c for c in model["cases"] if c["case"] == "case_a" and c["title"].endswith("(core)"))
    assert (whole["n_lesions"], whole["n_missed"], core["n_lesions"], core["n_missed"]) == (2, 1, 1, 0)
    whole_1, core_1 = whole["lesions"][0]["thumb"], core["lesions"][0]["thumb"]
    assert whole_1["caption"] != core_1["caption"] and whole_1["rows"][0]["src"] != core_1["rows"][0]["src"]
    # every class alone gives the thumbnails the page shows for it
    for name, spec in (("all", "all=1+2"), ("core", "core=2")):
        from ccmetrics.cli import main

        alone = tmp_path / f"alone_{name}"
        command = ["evaluate", str(tmp_path / "gt"), str(tmp_path / "pred"), "--out", str(alone)]
        assert main([*command, "--metrics", "dice,detection", "--classes", spec, "--quiet"]) == 0
        single = by_case(page.build_model(alone, images=image_dir, channel_names=["CT", "PET"]))["case_a"]
        shown = whole if name == "all" else core
        assert [les["thumb"] for les in single["lesions"]] == [les["thumb"] for les in shown["lesions"]]
        assert [fp["thumb"] for fp in single["false_positives"]] == [fp["thumb"] for fp in shown["false_positives"]]


def test_browser_shows_a_region_class_on_the_scan(tmp_path):
    folder, image_dir = write_region_cases(tmp_path, cases=("case_a",))
    out = tmp_path / "report.html"
    info = write_report(folder, out, images=image_dir, channel_names=["CT", "PET"])
    assert info.n_on_image == 2 and not info.not_on_image
    d = browser(tmp_path)
    try:
        d.get(out.as_uri())
        d.find_element("id", "expand-all").click()
        titles = [e.text for e in d.find_elements("css selector", "details.case > summary strong")]
        assert sorted(titles) == ["case_a (all)", "case_a (core)"]
        rows = d.find_elements("css selector", "#case-case_a-class2-lesion-1 .thumb-row")  # the core's lesion
        assert [r.get_attribute("data-channel") for r in rows] == ["CT", "PET"]
        assert all(r.find_element("css selector", "img.thumb").get_attribute("naturalWidth") != "0" for r in rows)
        assert rows[1].find_element("css selector", ".scale").text == "0–12.3"
        images = d.execute_script("return [...document.images].map(i => [i.complete, i.naturalWidth]);")
        assert images and all(complete and width > 0 for complete, width in images)
        assert [e for e in d.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        d.quit()
