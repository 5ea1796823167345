"""DICOM SEG input (ccmetrics.formats.dicom) and putting two images on one grid (ccmetrics.formats.grids).

The cases are built here: a synthetic CT series written slice by slice with pydicom and a SEG written
from it with highdicom (``examples/make_dicom_example.py``'s writers). The independent reference for the
geometry is SimpleITK reading the CT series; for the values, the same masks evaluated as NIfTI.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("highdicom")

from ccmetrics import evaluate_dataset  # noqa: E402
from ccmetrics.cli import main  # noqa: E402
from ccmetrics.formats.dicom import SegImage, read_seg, read_seg_header, segment_classes, series_grid  # noqa: E402
from ccmetrics.formats.grids import align_pair, on_grid, union_grid  # noqa: E402
from ccmetrics.formats.io import Image, load_image, read_header, save_image  # noqa: E402
from ccmetrics.schema import EXTENT_INFERRED  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_dicom_example", ROOT / "examples" / "make_dicom_example.py")
ex = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(ex)  # type: ignore[union-attr]

SHAPE = (24, 20, 12)  # columns, rows, slices: small, and no two axes of one length
SPACING = (0.7, 0.9, 2.0)


def _labels(seed: int, n_labels: int = 1, empty_ends: bool = True) -> np.ndarray:
    """A label map of blobs; with ``empty_ends`` the first two and last three slices hold nothing."""
    rng = np.random.default_rng(seed)
    out = np.zeros(SHAPE, np.uint8)
    grid = np.indices(SHAPE).astype(float)
    for k in range(4):
        c = rng.uniform([4, 4, 3], [20, 16, 8])
        r = np.sqrt(((grid - c[:, None, None, None]) ** 2 * np.array([1, 1, 4])[:, None, None, None]).sum(0))
        out[r < rng.uniform(2, 4)] = 1 + k % n_labels
    if empty_ends:
        out[:, :, :2] = 0
        out[:, :, -3:] = 0
    else:
        out[3:6, 3:6, 0] = 1
        out[10:12, 4:6, -1] = 1
    return out


def _frames(labels: np.ndarray) -> np.ndarray:
    """The slices from the first to the last that holds a label: what a SEG without empty frames spans."""
    held = np.nonzero(labels.any(axis=(0, 1)))[0]
    return labels[:, :, held[0] : held[-1] + 1]


def _affine(orientation=(1, 0, 0, 0, 1, 0), direction: int = -1) -> np.ndarray:
    return ex.ct_geometry(SHAPE, SPACING[:2], SPACING[2], orientation, (-10.0, 7.5, 40.0), direction)


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """A CT series (head first) and its grid as SimpleITK reads it."""
    folder = tmp_path_factory.mktemp("ct")
    ct = (np.indices(SHAPE).sum(0) * 7 - 500).astype(np.int16)  # every voxel tells where it is
    source = ex.write_ct_series(folder, ct, _affine(), uid_seed=5)
    return folder, source, ct


def _sitk_series(folder: Path) -> Image:
    """The CT series read by SimpleITK, turned into ccmetrics' axis order and RAS by hand (the reference)."""
    import SimpleITK as sitk

    reader = sitk.ImageSeriesReader()
    reader.SetFileNames(reader.GetGDCMSeriesFileNames(str(folder)))
    img = reader.Execute()
    array = sitk.GetArrayFromImage(img).transpose(2, 1, 0)
    lps = np.eye(4)
    lps[:3, :3] = np.array(img.GetDirection()).reshape(3, 3) * np.array(img.GetSpacing())
    lps[:3, 3] = img.GetOrigin()
    return Image(array, tuple(img.GetSpacing()), np.diag([-1.0, -1.0, 1.0, 1.0]) @ lps, str(folder))


def _write_seg(path: Path, labels: np.ndarray, source, names=None, **kw) -> Path:
    names = names or {n: f"segment {n}" for n in np.unique(labels[labels > 0]).tolist()}
    ex.write_seg(path, labels, source, names, **kw)
    return path


# ---------------------------------------------------------------- reading


def test_sitk_reference_reads_the_series_feet_first(series):
    """The reference itself: SimpleITK sorts the slices feet first, so its array is the CT flipped along k."""
    folder, _, ct = series
    ref = _sitk_series(folder)
    np.testing.assert_array_equal(ref.array, ct[:, :, ::-1])
    np.testing.assert_allclose(ref.spacing, SPACING)


@pytest.mark.parametrize("fractional", [False, True])
def test_complete_seg_reads_the_mask_on_the_series_grid(series, tmp_path, fractional):
    folder, source, _ = series
    labels = _labels(1, empty_ends=False)
    seg = read_seg(_write_seg(tmp_path / "seg.dcm", labels, source, fractional=fractional, omit_empty_frames=False))
    assert isinstance(seg, SegImage) and seg.complete and seg.segments == {1: "segment 1"}
    np.testing.assert_array_equal(seg.array, labels)  # the order the frames were written in
    np.testing.assert_allclose(seg.spacing, SPACING)
    np.testing.assert_allclose(seg.affine, _affine(), atol=1e-6)
    ref = _sitk_series(folder)  # the independent geometry: SimpleITK's CT grid, another slice order
    np.testing.assert_array_equal(on_grid(seg, ref).array, labels[:, :, ::-1])
    grid = series_grid(folder, seg.series_uid)
    assert grid.array.shape == SHAPE
    np.testing.assert_allclose(grid.affine, ref.affine, atol=1e-6)  # sorted feet first, as ITK does


def test_seg_without_empty_frames_spans_its_frames(series, tmp_path):
    folder, source, _ = series
    labels = _labels(2)
    seg = read_seg(_write_seg(tmp_path / "seg.dcm", labels, source))
    assert not seg.complete
    first = int(np.nonzero(labels.any(axis=(0, 1)))[0][0])
    assert seg.array.shape[2] < SHAPE[2] - 4
    np.testing.assert_array_equal(seg.array, _frames(labels))
    np.testing.assert_allclose(seg.origin, _affine()[:3, :3] @ [0, 0, first] + _affine()[:3, 3], atol=1e-6)
    placed = on_grid(seg, _sitk_series(folder), pad=True)
    np.testing.assert_array_equal(placed.array, labels[:, :, ::-1])
    header = read_seg_header(tmp_path / "seg.dcm")
    assert header.shape[:2] == SHAPE[:2] and header.shape[2] >= seg.array.shape[2]
    assert read_header(tmp_path / "seg.dcm") == header  # io dispatches to the DICOM reader
    assert isinstance(load_image(tmp_path / "seg.dcm"), SegImage)


def test_segments_are_classes_named_by_their_labels(series, tmp_path):
    _, source, _ = series
    labels = _labels(3, n_labels=3)
    path = _write_seg(tmp_path / "seg.dcm", labels, source, {1: "liver", 2: "tumour", 3: "cyst"})
    seg = read_seg(path)
    assert seg.segments == {1: "liver", 2: "tumour", 3: "cyst"}
    np.testing.assert_array_equal(seg.array, _frames(labels))
    assert [(c.value, c.name, c.labels) for c in segment_classes(path)] == [
        (1, "liver", (1,)),
        (2, "tumour", (2,)),
        (3, "cyst", (3,)),
    ]


def test_overlapping_segments_are_refused_by_name(series, tmp_path):
    import highdicom as hd
    from pydicom.sr.codedict import codes

    _, source, _ = series
    a = _labels(4)
    b = np.zeros_like(a)
    b[np.nonzero(a)[0][0], np.nonzero(a)[1][0], np.nonzero(a)[2][0]] = 1  # one voxel of a, in b too
    pixels = np.stack([np.moveaxis(m, (2, 1, 0), (0, 1, 2)) for m in (a, b)], axis=-1)
    descriptions = [
        hd.seg.SegmentDescription(n, name, codes.SCT.Tissue, codes.SCT.Tissue, hd.seg.SegmentAlgorithmTypeValues.MANUAL)
        for n, name in ((1, "liver"), (2, "vessel"))
    ]
    seg = hd.seg.Segmentation(source, pixels, "BINARY", descriptions, hd.UID(), 1, hd.UID(), 1, "m", "m", "1", "1")
    seg.save_as(tmp_path / "overlap.dcm")
    with pytest.raises(ValueError, match=r"segments 1 \('liver'\) and 2 \('vessel'\) overlap in 1 voxels"):
        read_seg(tmp_path / "overlap.dcm")


def test_not_a_seg_and_no_seg(series, tmp_path):
    folder, _, _ = series
    ct_file = sorted(folder.iterdir())[0]
    with pytest.raises(ValueError, match="modality CT, not a segmentation"):
        read_seg(ct_file)
    with pytest.raises(FileNotFoundError, match="no DICOM SEG file in the folder"):
        read_seg(folder)
    (tmp_path / "broken.dcm").write_bytes(b"\0" * 200)
    with pytest.raises(ValueError, match="cannot read .* as DICOM"):
        read_seg(tmp_path / "broken.dcm")
    with pytest.raises(ValueError, match="writes NIfTI, MHA or NRRD"):
        save_image(tmp_path / "x.dcm", np.zeros((2, 2, 2), np.uint8))


def test_a_folder_holding_one_seg_among_the_images(series, tmp_path):
    folder, source, _ = series
    case = tmp_path / "case"
    case.mkdir()
    for f in sorted(folder.iterdir())[:3]:  # some CT files beside it, as exports hold them
        (case / f.name).write_bytes(f.read_bytes())
    labels = _labels(5)
    _write_seg(case / "IM000099", labels, source)  # no extension, as PACS exports name files
    np.testing.assert_array_equal(read_seg(case).array, _frames(labels))
    _write_seg(case / "second.dcm", labels, source)
    with pytest.raises(ValueError, match="holds 2 DICOM SEG files"):
        read_seg(case)


# ---------------------------------------------------------------- grids


def _brute_force_on_grid(moving: Image, reference: Image) -> np.ndarray:
    """Each moving voxel centre to world, to the reference's index: the placement, voxel by voxel."""
    out = np.zeros(reference.array.shape, moving.array.dtype)
    n = moving.array.ndim
    inv = np.linalg.inv(reference.affine)
    for index in itertools.product(*(range(s) for s in moving.array.shape)):
        world = moving.affine @ np.append(index, 1.0)
        target = np.rint((inv @ world)[:n]).astype(int)
        out[tuple(target)] = moving.array[index]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_on_grid_equals_voxel_by_voxel_placement(seed):
    """Random axis orders, flips and sub-boxes of a random grid: on_grid equals mapping every voxel centre."""
    rng = np.random.default_rng(seed)
    n = 2 + seed % 2
    shape = tuple(int(s) for s in rng.integers(3, 7, n))
    spacing = rng.uniform(0.5, 2.0, n)
    rot = np.linalg.qr(rng.normal(size=(n, n)))[0]
    ref_affine = np.eye(n + 1)
    ref_affine[:n, :n] = rot * spacing
    ref_affine[:n, n] = rng.normal(size=n) * 10
    reference = Image(np.zeros(shape, np.uint8), tuple(spacing), ref_affine)
    lo = [int(rng.integers(0, s // 2)) for s in shape]
    hi = [int(rng.integers(lo[a] + 1, shape[a] + 1)) for a in range(n)]
    perm = rng.permutation(n)
    flips = rng.random(n) < 0.5
    # the sub-box lo..hi of the reference grid, its axes in order perm, flipped where flips says
    index_map = np.zeros((n + 1, n + 1))
    index_map[n, n] = 1
    for q in range(n):
        p = perm[q]
        index_map[p, q] = -1.0 if flips[q] else 1.0
        index_map[p, n] = hi[p] - 1 if flips[q] else lo[p]
    sub_shape = tuple(hi[perm[q]] - lo[perm[q]] for q in range(n))
    moving = Image(
        rng.integers(1, 200, sub_shape).astype(np.uint8),
        tuple(spacing[perm]),
        ref_affine @ index_map,
    )
    expected = _brute_force_on_grid(moving, reference)
    whole = sub_shape == tuple(shape[p] for p in perm)
    placed = on_grid(moving, reference, pad=True)
    np.testing.assert_array_equal(placed.array, expected)
    np.testing.assert_allclose(placed.affine, reference.affine)
    if not whole:
        with pytest.raises(ValueError, match="covers only voxels"):
            on_grid(moving, reference)


def test_on_grid_refuses_other_grids():
    ref = Image(np.zeros((4, 5, 6), np.uint8), (1.0, 1.0, 2.0), np.diag([1.0, 1.0, 2.0, 1.0]))
    other_spacing = Image(np.zeros((4, 5, 6), np.uint8), (1.0, 1.0, 2.5), np.diag([1.0, 1.0, 2.5, 1.0]))
    with pytest.raises(ValueError, match="spacing differs beyond an axis order"):
        on_grid(other_spacing, ref)
    half = np.diag([1.0, 1.0, 2.0, 1.0])
    half[0, 3] = 0.5
    with pytest.raises(ValueError, match=r"origin differs by \(0.5, 0.0, 0.0\) mm"):
        on_grid(Image(np.zeros((4, 5, 6), np.uint8), (1.0, 1.0, 2.0), half), ref)
    c, s = math.cos(0.3), math.sin(0.3)
    rotated = np.diag([1.0, 1.0, 2.0, 1.0])
    rotated[:2, :2] = [[c, -s], [s, c]]
    with pytest.raises(ValueError, match="direction differs beyond an axis order"):
        on_grid(Image(np.zeros((4, 5, 6), np.uint8), (1.0, 1.0, 2.0), rotated), ref)
    beyond = np.diag([1.0, 1.0, 2.0, 1.0])
    beyond[2, 3] = -4.0  # two slices below the reference's first
    with pytest.raises(ValueError, match=r"reaches beyond the grid .* spans voxels 0..3 x 0..4 x -2..3"):
        on_grid(Image(np.zeros((4, 5, 6), np.uint8), (1.0, 1.0, 2.0), beyond), ref, pad=True)


def test_union_grid_holds_both():
    a = Image(np.zeros((3, 3, 4)), (1.0, 1.0, 2.0), np.diag([1.0, 1.0, 2.0, 1.0]))
    shifted = np.diag([1.0, 1.0, -2.0, 1.0])  # another slice order, two slices higher up
    shifted[2, 3] = 16.0
    b = Image(np.zeros((3, 3, 5)), (1.0, 1.0, 2.0), shifted)  # slices 8 down to 4 of a's lattice
    grid = union_grid(a, b)
    assert grid.array.shape == (3, 3, 9)
    np.testing.assert_allclose(grid.affine, a.affine)


# ---------------------------------------------------------------- evaluation


def _case_folders(tmp_path, series, *, pred_labels, gt_labels, gt_as, pred_as, nifti_order="itk"):
    """GT and prediction folders of one case, each as NIfTI (in ITK's slice order or another axis order) or SEG."""
    folder, source, _ = series
    ref = _sitk_series(folder)
    out = {}
    for role, labels, kind in (("gt", gt_labels, gt_as), ("pred", pred_labels, pred_as)):
        d = tmp_path / role
        d.mkdir(parents=True, exist_ok=True)
        if kind == "seg":
            _write_seg(d / "case_1.dcm", labels, source, {1: "lesion"})
        else:
            image = on_grid(Image(labels, SPACING, _affine()), ref)  # the mask on ITK's grid
            if nifti_order == "transposed":  # RAS-like: axes swapped and flipped, as a reoriented copy holds them
                array = np.ascontiguousarray(image.array.transpose(1, 0, 2)[::-1])
                m = np.zeros((4, 4))
                m[1, 0], m[0, 1], m[2, 2], m[3, 3] = -1.0, 1.0, 1.0, 1.0
                m[1, 3] = array.shape[0] - 1
                image = Image(array, (SPACING[1], SPACING[0], SPACING[2]), image.affine @ m)
            save_image(d / "case_1.nii.gz", image.array, like=image)
        out[role] = d
    return out["gt"], out["pred"]


@pytest.mark.parametrize(
    ("gt_as", "pred_as", "order"),
    [("nifti", "seg", "itk"), ("seg", "nifti", "transposed"), ("nifti", "seg", "transposed")],
)
def test_seg_metrics_equal_the_nifti_of_the_same_masks(series, tmp_path, gt_as, pred_as, order):
    gt_labels, pred_labels = _labels(6), _labels(7)
    gt_dir, pred_dir = _case_folders(
        tmp_path / "mixed",
        series,
        gt_labels=gt_labels,
        pred_labels=pred_labels,
        gt_as=gt_as,
        pred_as=pred_as,
        nifti_order=order,
    )
    nifti_gt, nifti_pred = _case_folders(
        tmp_path / "nifti", series, gt_labels=gt_labels, pred_labels=pred_labels, gt_as="nifti", pred_as="nifti"
    )
    metrics = ["dice", "hd95", "nsd", "detection"]
    mixed = evaluate_dataset(gt_dir, pred_dir, metrics, progress=False)
    plain = evaluate_dataset(nifti_gt, nifti_pred, metrics, classes=[1], progress=False)
    assert mixed.per_case["status"].tolist() == ["ok"]
    assert mixed.per_case["class_name"].tolist() == ["lesion"]
    values = [c for c in plain.per_case.columns if c.startswith(("dice", "cc_", "hd95", "nsd", "n_", "sens"))]
    assert values
    pd.testing.assert_frame_equal(mixed.per_case[values], plain.per_case[values])
    assert len(mixed.per_component) == len(plain.per_component) > 1
    cols = ["volume", "dice", "hd95", "nsd", "detected", "worst_distance"]  # numbers follow the GT's axis order

    def rows(frame):
        return frame[cols].sort_values(cols).reset_index(drop=True)

    pd.testing.assert_frame_equal(rows(mixed.per_component), rows(plain.per_component))


def test_grids_that_differ_are_an_error_row(series, tmp_path):
    folder, source, _ = series
    (tmp_path / "gt").mkdir()
    labels = _labels(8)
    other = Image(labels, (0.7, 0.9, 2.5), np.diag([0.7, 0.9, 2.5, 1.0]))
    save_image(tmp_path / "gt" / "case_1.nii.gz", labels, like=other)
    _write_seg(tmp_path / "pred" / "case_1.dcm", labels, source)
    result = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice"], progress=False)
    row = result.per_case.iloc[0]
    assert row["status"] == "error"
    assert "not on one voxel grid" in row["error"] and "the prediction" in row["error"]


def test_two_segs_without_empty_frames(series, tmp_path):
    """The span of both SEGs (flagged), or the source series with --reference-images: the same voxels
    compared; only the worst distance of a missed lesion, the image diagonal, tells them apart."""
    import cc3d

    folder, source, _ = series
    gt = _labels(9)
    components = cc3d.connected_components(gt > 0)
    pred = np.where(components == components.max(), 0, gt).astype(np.uint8)  # one lesion missed
    _write_seg(tmp_path / "gt" / "case_1.dcm", gt, source, {1: "lesion"})
    _write_seg(tmp_path / "pred" / "case_1.dcm", pred, source, {1: "lesion"})
    g, p = gt > 0, pred > 0
    dice = 2 * (g & p).sum() / (g.sum() + p.sum())

    inferred = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice", "hd"], progress=False)
    row = inferred.per_case.iloc[0]
    assert row["status"] == "flagged" and row["flags"] == EXTENT_INFERRED
    assert row["dice"] == pytest.approx(dice)
    held = np.nonzero((g | p).any(axis=(0, 1)))[0]
    span = (SHAPE[0], SHAPE[1], held[-1] - held[0] + 1)
    assert (
        union_grid(read_seg(tmp_path / "gt" / "case_1.dcm"), read_seg(tmp_path / "pred" / "case_1.dcm")).array.shape
        == span
    )
    worst = np.linalg.norm(np.array(span) * SPACING)
    assert inferred.per_component["worst_distance"].tolist() == pytest.approx([worst] * len(inferred.per_component))

    full = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice", "hd"], reference_images=folder, progress=False)
    row_full = full.per_case.iloc[0]
    assert row_full["status"] == "ok" and row_full["flags"] == ""
    assert row_full["dice"] == pytest.approx(dice)
    worst = np.linalg.norm(np.array(SHAPE) * SPACING)
    assert full.per_component["worst_distance"].tolist() == pytest.approx([worst] * len(full.per_component))
    a, b, flags = align_pair(
        read_seg(tmp_path / "gt" / "case_1.dcm"), read_seg(tmp_path / "pred" / "case_1.dcm"), reference=folder
    )
    assert flags == []
    ref = _sitk_series(folder)
    np.testing.assert_array_equal(a.array, gt[:, :, ::-1])  # on the series' grid, sorted feet first
    np.testing.assert_array_equal(b.array, pred[:, :, ::-1])
    np.testing.assert_allclose(a.affine, ref.affine, atol=1e-6)


def test_missing_prediction_of_a_seg_gt(series, tmp_path):
    folder, source, _ = series
    _write_seg(tmp_path / "gt" / "case_1.dcm", _labels(10), source, {1: "lesion"})
    (tmp_path / "pred").mkdir()
    result = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice", "hd"], progress=False)
    assert result.per_case["flags"].iloc[0] == "extent_inferred;missing_prediction"
    full = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["hd"], reference_images=folder, progress=False)
    assert full.per_case["flags"].iloc[0] == "missing_prediction"
    diagonal = float(np.linalg.norm(np.array(SHAPE) * SPACING))  # the series' extent, not the frames' span
    assert full.per_component["worst_distance"].tolist() == pytest.approx([diagonal] * len(full.per_component))
    span = read_seg(tmp_path / "gt" / "case_1.dcm").array.shape
    inferred = float(np.linalg.norm(np.array(span) * SPACING))
    assert result.per_component["worst_distance"].tolist() == pytest.approx([inferred] * len(result.per_component))
    assert inferred < diagonal


def test_cli_with_folders_per_case_and_reference_images(series, tmp_path, capsys):
    folder, source, _ = series
    gt_labels = _labels(11)
    for role, labels in (("gt", gt_labels), ("pred", np.roll(gt_labels, 1, axis=0))):
        _write_seg(tmp_path / role / "case_7" / "seg.dcm", labels, source, {1: "lesion"})
    out = tmp_path / "out"
    command = ["evaluate", str(tmp_path / "gt"), str(tmp_path / "pred"), "--out", str(out), "--metrics", "dice",
               "--reference-images", str(folder), "--no-plots", "--quiet"]  # fmt: skip
    assert main(command) == 0
    table = pd.read_csv(out / "per_case.csv")
    assert table["case"].tolist() == ["case_7"] and table["status"].tolist() == ["ok"]
    g, p = gt_labels > 0, np.roll(gt_labels, 1, axis=0) > 0
    assert table["dice"].iloc[0] == pytest.approx(2 * (g & p).sum() / (g.sum() + p.sum()))
    capsys.readouterr()
    # --resume sees a changed file inside a case folder
    _write_seg(tmp_path / "pred" / "case_7" / "seg.dcm", gt_labels, source, {1: "lesion"})
    assert main([*command, "--resume"]) == 0
    assert pd.read_csv(out / "per_case.csv")["dice"].iloc[0] == 1.0


# ---------------------------------------------------------------- scans: DICOM image series


def test_read_series_is_the_ct_on_itks_grid(series, tmp_path):
    from ccmetrics.formats.dicom import read_series

    folder, source, ct = series
    _write_seg(tmp_path / "seg.dcm", _labels(12), source)  # a SEG beside the slices is not a scan
    for f in folder.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    image = read_series(tmp_path)
    ref = _sitk_series(folder)
    np.testing.assert_array_equal(image.array, ct[:, :, ::-1])
    np.testing.assert_allclose(image.affine, ref.affine, atol=1e-6)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no DICOM image series"):
        read_series(tmp_path / "empty")


def test_report_on_the_dicom_series_of_a_seg_evaluation(tmp_path):
    """The example: NIfTI GT, SEG prediction, CT series as the scan; every case drawn on its CT."""
    from ccmetrics.report import write_report

    for seed, case in enumerate(("case_001", "case_002")):
        ex.make_case(tmp_path, case, seed)
    out = tmp_path / "out"
    assert (
        main(
            [
                "evaluate",
                str(tmp_path / "gt"),
                str(tmp_path / "pred"),
                "--out",
                str(out),
                "--metrics",
                "dice,detection",
                "--no-plots",
                "--quiet",
            ]
        )
        == 0
    )
    info = write_report(out, tmp_path / "report.html", images=tmp_path / "ct", channel_names=["CT"])
    assert info.n_on_image == 2 and not info.not_on_image
    assert "L 40 W 400 HU" in (tmp_path / "report.html").read_text()


# ---------------------------------------------------------------- SEGs as other writers make them


def _edit(path: Path, change) -> Path:
    import pydicom

    ds = pydicom.dcmread(path)
    change(ds)
    ds.save_as(path)
    return path


def _drop_slice_step(ds) -> None:
    del ds.SharedFunctionalGroupsSequence[0].PixelMeasuresSequence[0].SpacingBetweenSlices


def test_seg_whose_frames_skip_slices_and_state_no_step(series, tmp_path):
    """Frames on slices 3, 5 and 7 without SpacingBetweenSlices: highdicom takes the 4 mm gap for the step.
    Placed frame by frame on a full grid the masks are right; with no full grid the case is refused."""
    folder, source, _ = series
    labels = np.zeros(SHAPE, np.uint8)
    for k in (3, 5, 7):
        labels[5:10, 5:10, k] = 1  # three lesions, one slice apart
    for role in ("gt", "pred"):
        _edit(_write_seg(tmp_path / role / "c1.dcm", labels, source, {1: "lesion"}), _drop_slice_step)
    seg = read_seg(tmp_path / "pred" / "c1.dcm")
    assert not seg.step_known and seg.array.shape[2] == 3 and seg.spacing[2] == pytest.approx(4.0)
    np.testing.assert_array_equal(on_grid(seg, _sitk_series(folder), pad=True).array, labels[:, :, ::-1])
    (tmp_path / "nifti").mkdir()
    save_image(tmp_path / "nifti" / "c1.nii.gz", labels, like=Image(labels, SPACING, _affine()))
    with_nifti = evaluate_dataset(tmp_path / "nifti", tmp_path / "pred", ["dice"], progress=False).per_case.iloc[0]
    assert (with_nifti["status"], with_nifti["dice"], with_nifti["n_components"]) == ("ok", 1.0, 3)
    assert with_nifti["pred_volume_ml"] == pytest.approx(75 * np.prod(SPACING) / 1000)
    alone = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice"], progress=False).per_case.iloc[0]
    assert (
        alone["status"] == "error"
        and "SpacingBetweenSlices" in alone["error"]
        and "--reference-images" in alone["error"]
    )
    placed = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice"], reference_images=folder, progress=False)
    assert placed.per_case[["status", "dice", "n_components"]].values.tolist() == [["ok", 1.0, 3]]


def test_segment_numbers_mean_one_thing(series, tmp_path):
    """Segments are matched by number: a prediction that numbers them otherwise, or a NIfTI label that is no
    segment, gives an error row instead of a wrong score."""
    _, source, _ = series
    liver = _labels(13)
    tumour = np.zeros(SHAPE, np.uint8)
    tumour[18:21, 2:5, 4:6] = 1
    gt = np.where(tumour > 0, 2, liver).astype(np.uint8)
    _write_seg(tmp_path / "gt" / "c1.dcm", gt, source, {1: "liver", 2: "tumor"})
    _write_seg(tmp_path / "pred" / "c1.dcm", tumour, source, {1: "tumor"})
    with pytest.warns(UserWarning, match="1: liver, tumor"):
        result = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice"], progress=False)
    assert result.per_case["class_name"].tolist() == ["liver", "tumor"]
    assert set(result.per_case["error"]) == {
        "segment 1 is 'liver' in the GT and 'tumor' in the prediction: segments are matched by their numbers; "
        "number the prediction's segments as the GT's"
    }
    (tmp_path / "nifti").mkdir()
    save_image(tmp_path / "nifti" / "c1.nii.gz", gt, like=Image(gt, SPACING, _affine()))
    row = evaluate_dataset(tmp_path / "nifti", tmp_path / "pred", ["dice"], progress=False).per_case.iloc[0]
    assert row["status"] == "error" and row["error"].startswith("the GT holds label(s) 2 that are no segment")
    named = evaluate_dataset(tmp_path / "nifti", tmp_path / "pred", ["dice"], classes=[2], progress=False)
    assert named.per_case["dice"].tolist() == [0.0]  # the user's choice: label 2 against segment 2 (absent)


def test_label_map_seg_and_its_background_segment(series, tmp_path):
    import highdicom as hd
    from pydicom.sr.codedict import codes

    _, source, _ = series
    labels = _labels(14, n_labels=3)
    descriptions = [
        hd.seg.SegmentDescription(n, f"s{n}", codes.SCT.Tissue, codes.SCT.Tissue, "MANUAL") for n in (1, 2, 3)
    ]
    seg = hd.seg.Segmentation(
        source, np.ascontiguousarray(labels.transpose(2, 1, 0)), "LABELMAP", descriptions, hd.UID(), 2, hd.UID(),
        1, "m", "m", "1", "1",
    )  # fmt: skip
    seg.save_as(tmp_path / "lm.dcm")
    read = read_seg(tmp_path / "lm.dcm")
    assert read.segments == {1: "s1", 2: "s2", 3: "s3"}  # the label map's segment 0 is its background
    np.testing.assert_array_equal(read.array, _frames(labels))
    assert [c.value for c in segment_classes(tmp_path / "lm.dcm")] == [1, 2, 3]


def test_seg_listing_only_its_frames_sources_and_per_frame_sizes(series, tmp_path):
    """A SEG may list only the images its frames come from (so it looks complete), and give its pixel sizes
    per frame: placed on the NIfTI's grid all the same, its header read, the run not stopped."""
    folder, source, _ = series
    labels = _labels(15)

    def only_sources(ds) -> None:
        used = {
            str(f.DerivationImageSequence[0].SourceImageSequence[0].ReferencedSOPInstanceUID)
            for f in ds.PerFrameFunctionalGroupsSequence
        }
        listed = ds.ReferencedSeriesSequence[0].ReferencedInstanceSequence
        ds.ReferencedSeriesSequence[0].ReferencedInstanceSequence = [
            r for r in listed if str(r.ReferencedSOPInstanceUID) in used
        ]
        measures = ds.SharedFunctionalGroupsSequence[0].PixelMeasuresSequence
        del ds.SharedFunctionalGroupsSequence[0].PixelMeasuresSequence
        for frame in ds.PerFrameFunctionalGroupsSequence:
            frame.PixelMeasuresSequence = measures

    _edit(_write_seg(tmp_path / "pred" / "c1.dcm", labels, source, {1: "lesion"}), only_sources)
    assert read_seg(tmp_path / "pred" / "c1.dcm").complete  # what the count says
    header = read_header(tmp_path / "pred" / "c1.dcm")
    assert header.spacing == pytest.approx(SPACING)
    (tmp_path / "gt").mkdir()
    save_image(tmp_path / "gt" / "c1.nii.gz", labels, like=Image(labels, SPACING, _affine()))
    for workers in (1, 2):
        row = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice"], workers=workers, progress=False)
        assert row.per_case[["status", "dice"]].values.tolist() == [["ok", 1.0]]


def test_hidden_files_and_copies_are_not_segs_or_slices(series, tmp_path):
    folder, source, _ = series
    case = tmp_path / "case"
    _write_seg(case / "seg.dcm", _labels(16), source)
    _write_seg(case / ".cache" / "seg.dcm", _labels(16), source)  # an application's hidden copy
    assert read_seg(case).path == str(case / "seg.dcm")
    copies = tmp_path / "series"
    for f in folder.iterdir():  # the series twice: an export copied beside the original
        for sub in ("a", "b"):
            (copies / sub).mkdir(parents=True, exist_ok=True)
            (copies / sub / f.name).write_bytes(f.read_bytes())
    assert series_grid(copies).array.shape == SHAPE
