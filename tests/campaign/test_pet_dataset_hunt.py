"""Counterexamples hunted for the scans of a data-set run (issue 41, point 1): ``evaluate_dataset(images=...)``.

Every value is checked against an independent computation on the inputs themselves: the scan and the masks as
numpy arrays, lesions by ``scipy.ndimage.label`` at the run's connectivity, SUVpeak by a brute force over the
sphere's voxel offsets, the hottest voxel by ``np.argmax`` over the lesion's voxels in C order, detection and
precision counted by hand. Scans are written in other axis orders and flipped (NIfTI, MHA, NRRD), as a DICOM PET
series with a rescale slope beside NIfTI masks, in several dtypes, Fortran-ordered, with NaN far from the lesions;
the runs cover classes, ``dataset.json``, probability maps, workers, Dask, resume and ``--max-memory``.

The last tests are the problems the hunt found, each fixed: each names the behaviour it expects.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from ccmetrics import EvalOptions, evaluate_dataset
from ccmetrics.campaign.case import estimate_bytes
from ccmetrics.campaign.options import CaseTask, PairingOptions, RunOptions
from ccmetrics.cli import main
from ccmetrics.formats.io import Image, load_image, save_image

SPACING = (2.0, 1.5, 3.0)
VOXEL_ML = float(np.prod(SPACING)) / 1000.0
SHAPE = (14, 12, 8)  # no two axes of one length: a wrong axis order cannot pass unseen
RADIUS_MM = 6.2035  # PERCIST's 1 cm³ sphere
ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- independent references


def _label(mask, connectivity=26):
    rank = {6: 1, 18: 2, 26: 3}[connectivity]
    return ndimage.label(mask > 0, ndimage.generate_binary_structure(mask.ndim, rank))


def _peak(scan, voxels, spacing):
    """SUVpeak by brute force: the largest mean over the voxels whose centres lie within the radius, in the image."""
    sp = np.asarray(spacing, float)
    reach = [int(np.floor(RADIUS_MM / s)) for s in sp]
    offsets = [
        (a, b, c)
        for a in range(-reach[0], reach[0] + 1)
        for b in range(-reach[1], reach[1] + 1)
        for c in range(-reach[2], reach[2] + 1)
        if (a * sp[0]) ** 2 + (b * sp[1]) ** 2 + (c * sp[2]) ** 2 <= RADIUS_MM**2
    ]
    best = -np.inf
    for v in zip(*voxels):
        values = [
            scan[p]
            for o in offsets
            if all(0 <= (p := tuple(np.add(v, o)))[i] < scan.shape[i] for i in range(3))  # noqa: B023
        ]
        best = max(best, float(np.mean(values)))
    return best


def _lesions_by_hand(gt, scan, spacing=SPACING, connectivity=26, peak=True):
    """Per lesion (in label order, i.e. raster order of the first voxel): SUVmax, SUVmean, MTV, TLG, SUVpeak."""
    labels, n = _label(gt, connectivity)
    scan = np.asarray(scan, np.float64)
    ml = float(np.prod(spacing)) / 1000.0
    out = []
    for k in range(1, n + 1):
        mask = labels == k
        values = scan[mask]
        row = {
            "suv_max": values.max(),
            "suv_mean": values.mean(),
            "mtv_ml": mask.sum() * ml,
            "tlg": values.sum() * ml,
        }
        if peak:
            row["suv_peak"] = _peak(scan, np.nonzero(mask), spacing)
        out.append(row)
    return out


def _case_by_hand(gt, pred, scan, spacing=SPACING):
    scan = np.asarray(scan, np.float64)
    ml = float(np.prod(spacing)) / 1000.0
    out = {}
    for side, mask in (("gt", gt > 0), ("pred", pred > 0)):
        out[f"{side}_tmtv_ml"] = mask.sum() * ml
        out[f"{side}_tlg"] = scan[mask].sum() * ml
        out[f"{side}_suv_max"] = scan[mask].max()
        out[f"{side}_suv_mean"] = scan[mask].mean()
    return out


def _check_lesions(table, expected, columns=("suv_max", "suv_mean", "mtv_ml", "tlg", "suv_peak")):
    table = table.sort_values("component")
    assert len(table) == len(expected)
    for (_, got), want in zip(table.iterrows(), expected):
        for name in columns:
            if name in want:
                assert got[name] == pytest.approx(want[name], rel=1e-5), name


# ----------------------------------------------------------------------------- cases


def _masks():
    gt = np.zeros(SHAPE, np.uint8)
    gt[1:4, 2:5, 1:3] = 1
    gt[7, 6, 4] = 1  # one voxel: its SUVpeak sphere reaches over it
    gt[10:13, 1:3, 5:7] = 1
    pred = gt.copy()
    pred[7, 6, 4] = 0  # missed
    pred[12, 9, 1] = 1  # a false positive
    return gt, pred


def _scan(seed=0):
    """Values that say where they are (no two alike in a lesion's neighbourhood), SUV-like."""
    rng = np.random.default_rng(seed)
    return (rng.gamma(2.0, 1.0, SHAPE) + np.arange(np.prod(SHAPE)).reshape(SHAPE) / 1000.0).astype(np.float32)


def _folders(tmp_path, cases=("a",)):
    gt, pred = _masks()
    for name in ("gt", "pred", "img"):
        (tmp_path / name).mkdir(exist_ok=True)
    for case in cases:
        save_image(tmp_path / "gt" / f"{case}.nii.gz", gt, spacing=SPACING)
        save_image(tmp_path / "pred" / f"{case}.nii.gz", pred, spacing=SPACING)
    return gt, pred


def _moved(image: Image, order, flips=()) -> Image:
    """The same voxels on the same lattice, stored in another axis order (``order``: the new axes' old axes) and
    with the new axes ``flips`` running backwards: a transposed and flipped array with the affine that says so."""
    array = image.array.transpose(order)
    affine = np.eye(4)
    affine[:3, 3] = image.affine[:3, 3]
    for new, old in enumerate(order):
        affine[:3, new] = image.affine[:3, old]
    for axis in flips:
        affine[:3, 3] += affine[:3, axis] * (array.shape[axis] - 1)
        affine[:3, axis] *= -1
        array = np.flip(array, axis)
    return Image(np.ascontiguousarray(array), tuple(np.linalg.norm(affine[:3, :3], axis=0)), affine)


# ----------------------------------------------------------------------------- reorientation and formats


@pytest.mark.parametrize(
    "ext, order, flips",
    [
        (".nii.gz", (2, 0, 1), ()),
        (".nii.gz", (0, 1, 2), (0, 2)),
        (".nii.gz", (1, 2, 0), (1,)),
        (".mha", (1, 2, 0), (0,)),
        (".nrrd", (2, 1, 0), (2,)),
    ],
)
def test_a_scan_in_another_axis_order_or_flipped_lands_on_the_gt_voxels(tmp_path, ext, order, flips):
    gt, pred = _folders(tmp_path)
    scan = _scan()
    reference = load_image(tmp_path / "gt" / "a.nii.gz")
    moved = _moved(Image(scan, SPACING, reference.affine), order, flips)
    assert moved.array.shape != scan.shape or flips  # really stored otherwise
    save_image(tmp_path / "img" / f"a{ext}", moved.array, like=moved)
    result = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", metrics=["pet"], images=tmp_path / "img", progress=False
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    for name, value in _case_by_hand(gt, pred, scan).items():
        assert row[name] == pytest.approx(value, rel=1e-6), name
    _check_lesions(result.per_component, _lesions_by_hand(gt, scan))


def _write_pet_series(folder: Path, counts: np.ndarray, affine: np.ndarray, slope: float) -> None:
    """A PET series (Modality PT) with a rescale slope: examples/make_dicom_example.py's CT writer, relabelled."""
    pydicom = pytest.importorskip("pydicom")
    spec = importlib.util.spec_from_file_location("make_dicom_example", ROOT / "examples" / "make_dicom_example.py")
    example = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(example)  # type: ignore[union-attr]
    example.write_ct_series(folder, counts, affine, uid_seed=41)
    for path in sorted(folder.iterdir()):
        ds = pydicom.dcmread(path)
        ds.Modality, ds.RescaleSlope, ds.RescaleIntercept = "PT", slope, 0
        ds.save_as(path)


def test_a_dicom_pet_series_beside_nifti_masks(tmp_path):
    """A head-first series (slices stored with z decreasing) read with its rescale slope onto a NIfTI GT's grid."""
    gt, pred = _masks()
    affine = np.diag([-SPACING[0], -SPACING[1], -SPACING[2], 1.0])  # RAS of DICOM's LPS columns, rows, head first
    affine[:3, 3] = (10.0, -7.5, 40.0)
    for name in ("gt", "pred"):
        (tmp_path / name).mkdir()
    nib.save(nib.Nifti1Image(gt, affine), str(tmp_path / "gt" / "a.nii.gz"))
    nib.save(nib.Nifti1Image(pred, affine), str(tmp_path / "pred" / "a.nii.gz"))
    counts = (np.arange(np.prod(SHAPE)).reshape(SHAPE) % 700).astype(np.int16)
    _write_pet_series(tmp_path / "img" / "a", counts, affine, slope=0.01)
    suv = counts * 0.01
    result = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", metrics=["pet"], images=tmp_path / "img", progress=False
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["image_file"] == str(tmp_path / "img" / "a")
    spacing = tuple(abs(s) for s in SPACING)
    for name, value in _case_by_hand(gt, pred, suv, spacing).items():
        assert row[name] == pytest.approx(value, rel=1e-5), name
    _check_lesions(result.per_component, _lesions_by_hand(gt, suv, spacing, peak=False))


@pytest.mark.parametrize("dtype", [np.int16, np.uint8, np.float64, np.int32])
@pytest.mark.parametrize("ext", [".nii.gz", ".mha"])
def test_scans_of_every_dtype_give_their_values(tmp_path, dtype, ext):
    gt, pred = _folders(tmp_path)
    scan = (np.arange(np.prod(SHAPE)).reshape(SHAPE) % 97).astype(dtype)
    save_image(tmp_path / "img" / f"a{ext}", scan, spacing=SPACING)
    result = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", metrics=["pet"], images=tmp_path / "img", progress=False
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    for name, value in _case_by_hand(gt, pred, scan).items():
        assert row[name] == pytest.approx(value, rel=1e-6), name


def test_a_nifti_scan_stored_as_int16_with_a_slope(tmp_path):
    gt, pred = _folders(tmp_path)
    raw = (np.arange(np.prod(SHAPE)).reshape(SHAPE) % 900).astype(np.int16)
    image = nib.Nifti1Image(raw, load_image(tmp_path / "gt" / "a.nii.gz").affine)
    image.header.set_slope_inter(0.01, 0.0)
    nib.save(image, str(tmp_path / "img" / "a.nii.gz"))
    row = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", metrics=["pet"], images=tmp_path / "img", progress=False
    ).per_case
    assert row["gt_suv_max"].item() == pytest.approx((raw * 0.01)[gt > 0].max(), rel=1e-6)
    assert row["gt_tlg"].item() == pytest.approx((raw * 0.01)[gt > 0].sum() * VOXEL_ML, rel=1e-6)


# ----------------------------------------------------------------------------- arrays, NaN, connectivity


@pytest.mark.parametrize("connectivity", [6, 26])
@pytest.mark.parametrize("order", ["C", "F"])
def test_fortran_arrays_and_nan_far_from_the_lesions_against_brute_force(connectivity, order):
    gt, pred = _masks()
    gt[8, 7, 5] = 1  # touches (7, 6, 4) by a corner: one lesion at 26, two at 6
    scan = _scan(3)
    scan[0, 11, 0] = np.nan  # farther than the SUVpeak radius from every lesion and predicted component
    scan[0, 11, 7] = np.nan
    as_order = lambda a: np.asarray(a, order=order)  # noqa: E731
    result = evaluate_dataset(
        {"a": (as_order(gt), as_order(pred))},
        images={"a": as_order(scan)},
        options=EvalOptions(metrics=["detection", "pet"], spacing=SPACING, connectivity=connectivity),
        progress=False,
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    _check_lesions(result.per_component, _lesions_by_hand(gt, scan, connectivity=connectivity))
    assert row["gt_lesion_count"] == _label(gt, connectivity)[1] == (3 if connectivity == 26 else 4)
    assert row["pred_lesion_count"] == _label(pred, connectivity)[1]
    clean = np.nan_to_num(scan)
    for name, value in _case_by_hand(gt, pred, clean).items():
        assert row[name] == pytest.approx(value, rel=1e-6), name
    fp = result.per_prediction[result.per_prediction["outcome"] == "fp"]
    assert fp["suv_max"].tolist() == [pytest.approx(float(scan[12, 9, 1]))]
    assert fp["suv_peak"].item() == pytest.approx(_peak(clean.astype(np.float64), ([12], [9], [1]), SPACING))


def test_several_classes_each_measured_on_its_own_lesions(tmp_path):
    gt, pred = _folders(tmp_path)
    labels_gt = gt.copy()
    labels_gt[10:13, 1:3, 5:7] *= 2
    labels_pred = pred.copy()
    labels_pred[10:13, 1:3, 5:7] *= 2
    labels_pred[12, 9, 1] = 2
    save_image(tmp_path / "gt" / "a.nii.gz", labels_gt, spacing=SPACING)
    save_image(tmp_path / "pred" / "a.nii.gz", labels_pred, spacing=SPACING)
    scan = _scan(5)
    save_image(tmp_path / "img" / "a_0000.nii.gz", (scan * 100 - 1000).astype(np.int16), spacing=SPACING)
    save_image(tmp_path / "img" / "a_0001.nii.gz", scan, spacing=SPACING)
    result = evaluate_dataset(
        tmp_path / "gt",
        tmp_path / "pred",
        images=tmp_path / "img",
        options=EvalOptions(metrics=["dice", "pet"], classes=[1, 2]),
        pairing=PairingOptions(pet_channel=1),
        progress=False,
    )
    rows = result.per_case.set_index("class")
    for c in (1, 2):
        assert rows.loc[c, "status"] == "ok"
        for name, value in _case_by_hand(labels_gt == c, labels_pred == c, scan).items():
            assert rows.loc[c, name] == pytest.approx(value, rel=1e-6), (c, name)
        assert rows.loc[c, "gt_lesion_count"] == _label(labels_gt == c)[1]
        comps = result.per_component[result.per_component["class"] == c]
        _check_lesions(comps, _lesions_by_hand(labels_gt == c, scan))


@pytest.mark.parametrize("key", ["channel_names", "modality"])
def test_dataset_json_names_the_pet_also_as_modality(tmp_path, key):
    gt, pred = _folders(tmp_path)
    scan = _scan(6)
    save_image(tmp_path / "img" / "a_0000.nii.gz", (scan * 100 - 1000).astype(np.int16), spacing=SPACING)
    save_image(tmp_path / "img" / "a_0001.nii.gz", scan, spacing=SPACING)
    spec = {"labels": {"background": 0, "lesion": 1}, "file_ending": ".nii.gz", key: {"0": "CT", "1": "pet"}}
    (tmp_path / "dataset.json").write_text(json.dumps(spec))
    result = evaluate_dataset(
        tmp_path / "gt",
        tmp_path / "pred",
        metrics=["pet"],
        images=tmp_path / "img",
        pairing=PairingOptions(dataset_json=tmp_path / "dataset.json"),
        progress=False,
    )
    row = result.per_case.iloc[0]
    assert row["image_file"] == str(tmp_path / "img" / "a_0001.nii.gz")
    assert row["gt_suv_max"] == pytest.approx(float(scan[gt > 0].max()))


@pytest.mark.parametrize("with_prediction", [True, False])
def test_probability_maps_and_scans(with_prediction):
    gt, _ = _masks()
    prob = np.zeros(SHAPE, np.float32)
    prob[1:4, 2:5, 1:3] = 0.9
    prob[10:12, 1:3, 5:7] = 0.7
    prob[12, 9, 1] = 0.6
    prob[7, 6, 4] = 0.3
    pred = (prob > 0.5).astype(np.uint8)
    scan = _scan(7)
    result = evaluate_dataset(
        {"a": (gt, pred if with_prediction else None)},
        probabilities={"a": prob},
        images={"a": scan},
        options=EvalOptions(metrics=["detection", "pet"], spacing=SPACING),
        progress=False,
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    for name, value in _case_by_hand(gt, pred, scan).items():
        assert row[name] == pytest.approx(value, rel=1e-6), name


# ----------------------------------------------------------------------------- the suv_max rule


def test_the_suv_max_rule_in_a_data_set_against_brute_force():
    """Random boxes, half their voxels predicted, a scan of whole numbers (many ties: the first in C order wins)."""
    rng = np.random.default_rng(7)
    cases, scans = {}, {}
    for i in range(5):
        gt = np.zeros(SHAPE, np.uint8)
        for _ in range(5):
            c, s = rng.integers(1, [12, 10, 6]), rng.integers(1, 4, 3)
            gt[c[0] : c[0] + s[0], c[1] : c[1] + s[1], c[2] : c[2] + s[2]] = 1
        pred = ((gt > 0) & (rng.random(SHAPE) < 0.5)).astype(np.uint8)
        pred[tuple(rng.integers(0, SHAPE))] = 1
        cases[f"c{i}"], scans[f"c{i}"] = (gt, pred), np.round(rng.gamma(2.0, 1.0, SHAPE)).astype(np.float32)
    for connectivity in (6, 26):
        result = evaluate_dataset(
            cases,
            images=scans,
            options=EvalOptions(
                metrics=["detection", "pet"], detection_rule="suv_max", spacing=SPACING, connectivity=connectivity
            ),
            progress=False,
        )
        for case, (gt, pred) in cases.items():
            labels, n = _label(gt, connectivity)
            plabels, m = _label(pred, connectivity)
            scan = scans[case]
            detected = []
            for k in range(1, n + 1):
                flat = np.flatnonzero(labels == k)  # C order
                hot = flat[np.argmax(scan.ravel()[flat])]  # the first among equal maxima
                detected.append(bool(pred.ravel()[hot]))
            tp = [any(detected[g - 1] for g in np.unique(labels[plabels == j]) if g) for j in range(1, m + 1)]
            comps = result.per_component[result.per_component["case"] == case].sort_values("component")
            assert comps["detected"].tolist() == detected, (case, connectivity)
            preds = result.per_prediction[result.per_prediction["case"] == case].sort_values("prediction")
            assert (preds["outcome"] == "tp").tolist() == tp, (case, connectivity)
            row = result.per_case[result.per_case["case"] == case].iloc[0]
            assert row["sensitivity"] == pytest.approx(np.mean(detected) if n else np.nan, nan_ok=True)
            assert row["precision"] == pytest.approx(np.mean(tp) if m else np.nan, nan_ok=True)


# ----------------------------------------------------------------------------- the run: workers, resume, memory


def _three_cases(tmp_path):
    rng = np.random.default_rng(2)
    _folders(tmp_path, cases=("c0", "c1", "c2"))
    for case in ("c0", "c1", "c2"):
        save_image(tmp_path / "img" / f"{case}_0000.nii.gz", rng.gamma(2, 1, SHAPE).astype(np.float32), spacing=SPACING)
        save_image(tmp_path / "img" / f"{case}_0001.nii.gz", rng.gamma(2, 1, SHAPE).astype(np.float32), spacing=SPACING)


def test_resume_after_the_pet_channel_changes(tmp_path):
    _three_cases(tmp_path)
    out = tmp_path / "out"
    args = dict(metrics=["detection", "pet"], images=tmp_path / "img")

    def run(channel, resume):
        return evaluate_dataset(
            tmp_path / "gt",
            tmp_path / "pred",
            pairing=PairingOptions(pet_channel=channel),
            run=RunOptions(out_dir=out, resume=resume, progress=False),
            **args,
        )

    run(1, False)
    ct = run(0, True)
    assert ct.run.reused == 0 and ct.run.evaluated == 3
    gt = _masks()[0]
    scan = np.asarray(nib.load(str(tmp_path / "img" / "c2_0000.nii.gz")).dataobj)
    assert ct.per_case.set_index("case").loc["c2", "gt_tlg"] == pytest.approx(scan[gt > 0].sum() * VOXEL_ML, rel=1e-6)
    again = run(0, True)
    assert again.run.reused == 3 and again.run.evaluated == 0
    pd.testing.assert_frame_equal(again.per_case, ct.per_case)


def test_two_workers_give_the_same_tables_per_prediction_too(tmp_path):
    _three_cases(tmp_path)
    args = dict(metrics=["detection", "pet"], images=tmp_path / "img", pairing=PairingOptions(pet_channel=1))
    one = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", progress=False, **args)
    two = evaluate_dataset(tmp_path / "gt", tmp_path / "pred", progress=False, workers=2, **args)
    for table in ("per_case", "per_component", "per_prediction"):
        pd.testing.assert_frame_equal(getattr(one, table), getattr(two, table))


@pytest.mark.slow
def test_a_dask_cluster_gives_the_same_tables(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    _three_cases(tmp_path)
    scans = {f"c{i}": _scan(i) for i in range(3)}
    gt, pred = _masks()
    cases = {c: (gt, pred) for c in scans}
    folder = dict(metrics=["detection", "pet"], images=tmp_path / "img", pairing=PairingOptions(pet_channel=1))
    mapping = dict(images=scans, options=EvalOptions(metrics=["detection", "pet"], spacing=SPACING))
    local = [
        evaluate_dataset(tmp_path / "gt", tmp_path / "pred", progress=False, **folder),
        evaluate_dataset(cases, progress=False, **mapping),
    ]
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = [
            evaluate_dataset(tmp_path / "gt", tmp_path / "pred", run=RunOptions(dask=client, progress=False), **folder),
            evaluate_dataset(cases, run=RunOptions(dask=client, progress=False), **mapping),
        ]
    for a, b in zip(local, on_dask):
        for table in ("per_case", "per_component", "per_prediction"):
            pd.testing.assert_frame_equal(a.per_case if table == "per_case" else getattr(a, table), getattr(b, table))


def test_the_scan_tips_a_case_over_max_memory_and_the_row_names_the_option(tmp_path):
    _folders(tmp_path)
    save_image(tmp_path / "img" / "a.nii.gz", _scan(), spacing=SPACING)
    options = EvalOptions.build(["pet"])
    task = CaseTask("a", str(tmp_path / "gt" / "a.nii.gz"), str(tmp_path / "pred" / "a.nii.gz"))
    without = estimate_bytes(task, options)
    task.image = str(tmp_path / "img" / "a.nii.gz")
    assert estimate_bytes(task, options) == without + 4 * int(np.prod(SHAPE))  # the float32 scan
    result = evaluate_dataset(
        tmp_path / "gt",
        tmp_path / "pred",
        metrics=["pet"],
        images=tmp_path / "img",
        run=RunOptions(max_memory=without + 2 * int(np.prod(SHAPE)), progress=False),
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "error" and "--max-memory" in row["error"] and "max_memory=" in row["error"]
    fits = evaluate_dataset(
        tmp_path / "gt",
        tmp_path / "pred",
        metrics=["pet"],
        images=tmp_path / "img",
        run=RunOptions(max_memory=without + 64 * int(np.prod(SHAPE)), progress=False),
    )
    assert fits.per_case["status"].item() == "ok"


def test_scans_that_lie_about_their_size_are_error_rows(tmp_path):
    _folders(tmp_path, cases=("a", "b", "c", "d"))
    scan = _scan()
    for case in ("a", "b", "d"):
        save_image(tmp_path / "img" / f"{case}.nii.gz", scan, spacing=SPACING)
    save_image(tmp_path / "img" / "c.mha", scan, spacing=SPACING)
    whole = (tmp_path / "img" / "a.nii.gz").read_bytes()
    (tmp_path / "img" / "a.nii.gz").write_bytes(whole[: len(whole) // 2])  # a cut gzip stream
    raw = gzip.decompress((tmp_path / "img" / "b.nii.gz").read_bytes())
    (tmp_path / "img" / "b.nii.gz").write_bytes(gzip.compress(raw[: len(raw) // 2]))  # a whole stream, half the data
    mha = (tmp_path / "img" / "c.mha").read_bytes()
    (tmp_path / "img" / "c.mha").write_bytes(mha[:-100])
    result = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", metrics=["pet"], images=tmp_path / "img", progress=False
    )
    rows = result.per_case.set_index("case")
    assert list(rows["status"]) == ["error", "error", "error", "ok"]
    for case in ("a", "b"):
        assert "its header claims 14x12x8 voxels of float32" in rows.loc[case, "error"]
        assert "truncated or corrupt" in rows.loc[case, "error"]
        assert "please report" not in rows.loc[case, "error"]
    error = rows.loc["c", "error"]
    assert "c.mha" in error and error.count("cannot read") == 1 and "please report" not in error, error
    assert rows.loc["d", "gt_suv_max"] == pytest.approx(float(scan[_masks()[0] > 0].max()))


def test_the_command_line_with_classes_and_connectivity_6(tmp_path, capsys):
    gt, pred = _folders(tmp_path)
    gt[8, 7, 5] = 1  # a corner away from (7, 6, 4): two lesions at 6-connectivity
    save_image(tmp_path / "gt" / "a.nii.gz", gt, spacing=SPACING)
    scan = _scan(9)
    save_image(tmp_path / "img" / "a.nii.gz", scan, spacing=SPACING)
    out = tmp_path / "out"
    args = ["evaluate", str(tmp_path / "gt"), str(tmp_path / "pred"), "--out-dir", str(out), "--quiet"]
    args += ["--metrics", "dice,pet", "--images", str(tmp_path / "img"), "--classes", "1", "--connectivity", "6"]
    assert main([*args, "--no-plots"]) == 0, capsys.readouterr().err
    table = pd.read_csv(out / "per_case.csv")
    assert table["gt_lesion_count"].item() == _label(gt, 6)[1] == 4
    components = pd.read_csv(out / "per_component.csv")
    _check_lesions(components, _lesions_by_hand(gt, scan, connectivity=6))


# ----------------------------------------------------------------------------- problems found


@pytest.mark.parametrize("dtype", [bool, np.complex64])
def test_a_scan_that_holds_no_real_numbers_is_an_input_error_not_a_bug(dtype):
    gt, pred = _masks()
    result = evaluate_dataset({"a": (gt, pred)}, images={"a": _scan().astype(dtype)}, metrics=["pet"], progress=False)
    error = result.per_case["error"].item()
    assert "must hold real numbers" in error and "please report" not in error


def test_a_mapping_of_scans_with_integer_keys_like_its_cases():
    gt, pred = _masks()
    scan = _scan()
    result = evaluate_dataset({0: (gt, pred)}, images={0: scan}, metrics=["pet"], progress=False)
    row = result.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["gt_suv_max"] == pytest.approx(float(scan[gt > 0].max()))


def test_nan_near_a_false_positive_names_the_predicted_component():
    gt, pred = _masks()
    scan = _scan()
    scan[13, 11, 1] = np.nan  # 3 mm from the false positive (12, 9, 1), far from every lesion
    result = evaluate_dataset(
        {"a": (gt, pred)},
        images={"a": scan},
        options=EvalOptions(metrics=["pet"], spacing=SPACING),
        progress=False,
    )
    error = result.per_case["error"].item()
    assert "(12, 9, 1)" in error  # the false positive's voxel whose sphere holds the NaN
    assert "predicted component" in error and "lesion" not in error


def test_image_file_stays_when_every_case_fails(tmp_path):
    _folders(tmp_path, cases=("a", "b"))
    for case in ("a", "b"):  # the PET on its own, coarser grid: never resampled, every case an error row
        save_image(tmp_path / "img" / f"{case}.nii.gz", np.ones(SHAPE, np.float32), spacing=(4.0, 3.0, 3.0))
    result = evaluate_dataset(
        tmp_path / "gt", tmp_path / "pred", metrics=["pet"], images=tmp_path / "img", progress=False
    )
    assert (result.per_case["status"] == "error").all()
    assert result.per_case["error"].str.contains("spacing differs").all()
    assert result.per_case["image_file"].tolist() == [str(tmp_path / "img" / f"{c}.nii.gz") for c in ("a", "b")]


def test_array_masks_with_a_scan_file_check_its_shape_only(tmp_path):
    gt, pred = _masks()
    scan = _scan()
    save_image(tmp_path / "scan.nii.gz", scan, spacing=SPACING)
    result = evaluate_dataset(
        {"a": (gt, pred)},
        images={"a": str(tmp_path / "scan.nii.gz")},
        options=EvalOptions(metrics=["pet"], spacing=SPACING),
        progress=False,
    )
    row = result.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["gt_tlg"] == pytest.approx(float(scan[gt > 0].astype(np.float64).sum()) * VOXEL_ML, rel=1e-6)


def test_an_image_in_another_axis_order_is_reoriented_as_its_file_is(tmp_path):
    gt, pred = _folders(tmp_path)
    scan = _scan()
    reference = load_image(tmp_path / "gt" / "a.nii.gz")
    moved = _moved(Image(scan, SPACING, reference.affine), (0, 1, 2), (0,))
    save_image(tmp_path / "moved.nii.gz", moved.array, like=moved)
    cases = {"a": (str(tmp_path / "gt" / "a.nii.gz"), str(tmp_path / "pred" / "a.nii.gz"))}
    as_file = evaluate_dataset(cases, images={"a": str(tmp_path / "moved.nii.gz")}, metrics=["pet"], progress=False)
    assert as_file.per_case["status"].item() == "ok"
    as_image = evaluate_dataset(
        cases, images={"a": load_image(tmp_path / "moved.nii.gz")}, metrics=["pet"], progress=False
    )
    row = as_image.per_case.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["gt_suv_max"] == pytest.approx(float(scan[gt > 0].max()))


def test_inf_outside_the_lesions_does_not_make_the_scan_not_suv():
    gt, pred = _masks()
    scan = _scan()
    scan[0, 11, 0] = np.inf  # far from every lesion and predicted component
    result = evaluate_dataset(
        {"a": (gt, pred)}, images={"a": scan}, options=EvalOptions(metrics=["pet"], spacing=SPACING), progress=False
    )
    row = result.per_case.iloc[0]
    assert row["gt_suv_max"] == pytest.approx(float(scan[gt > 0].max()))
    assert row["status"] == "ok" and row["flags"] == ""


def test_the_suv_max_rule_with_probability_maps_is_refused_at_once(tmp_path):
    gt, _ = _masks()
    prob = np.where(gt > 0, 0.9, 0.0).astype(np.float32)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="suv_max"):
        evaluate_dataset(
            {"a": (gt, None), "b": (gt, None)},
            probabilities={"a": prob, "b": prob},
            images={"a": _scan(), "b": _scan()},
            options=EvalOptions(metrics=["detection", "pet"], detection_rule="suv_max"),
            out_dir=out,
            progress=False,
        )
    assert not (out / "cases").exists()


def test_nan_in_a_lesion_of_one_class_names_the_class():
    gt = np.zeros((20, 12, 8), np.uint8)
    gt[1:4, 2:5, 1:3] = 1
    gt[10:12, 2:4, 1:3] = 1
    gt[17, 6, 4] = 2
    gt[10:13, 8:10, 5:7] = 2
    scan = np.ones(gt.shape, np.float32)
    scan[17, 6, 4] = np.nan  # lesion 2 of class 2
    result = evaluate_dataset(
        {"a": (gt, gt)},
        images={"a": scan},
        options=EvalOptions(metrics=["pet"], classes=[1, 2], spacing=SPACING),
        progress=False,
    )
    errors = result.per_case.set_index("class")["error"]
    assert "class 2" in errors.loc[2] and "(17, 6, 4)" in errors.loc[2]
