"""The scans in a data-set run (issue 41, point 1): ``evaluate_dataset(images=...)`` and ``ccmetrics evaluate --images
DIR --pet-channel K``.

The pet values of every case are checked against numpy on the files themselves (the scan and the masks read with
nibabel, the sums and maxima by hand), not against the single-case code; the channel choice, the grid check, the
error rows and the refusals against what each case's files say.
"""

import json
import os

import nibabel as nib
import numpy as np
import pandas as pd
import pytest

from ccmetrics import EvalOptions, evaluate_dataset
from ccmetrics.campaign.case import estimate_bytes
from ccmetrics.campaign.options import CaseTask, PairingOptions, RunOptions
from ccmetrics.cli import main
from ccmetrics.formats.io import save_image

SPACING = (2.0, 1.5, 3.0)
VOXEL_ML = np.prod(SPACING) / 1000.0


def _case(rng, shape=(24, 20, 12)):
    gt = np.zeros(shape, np.uint8)
    gt[2:6, 3:7, 2:5] = 1
    gt[12:18, 10:16, 6:10] = 1
    gt[20, 2, 1] = 1  # a one-voxel lesion
    pred = np.zeros_like(gt)
    pred[3:6, 3:8, 2:5] = 1
    pred[12:17, 11:16, 6:9] = 1
    pred[1, 18, 10] = 1  # a false positive
    scan = rng.gamma(2.0, 0.6, shape).astype(np.float32)
    scan[gt > 0] += rng.uniform(3, 12)
    scan[1, 18, 10] = 30.0
    return gt, pred, scan


@pytest.fixture
def folders(tmp_path):
    """Three cases: GT, predictions, and autoPET-style scans, CT _0000 (int16) and PET _0001 (float32)."""
    rng = np.random.default_rng(41)
    for name in ("gt", "pred", "images"):
        (tmp_path / name).mkdir()
    for i in range(3):
        gt, pred, scan = _case(rng)
        save_image(tmp_path / "gt" / f"c{i}.nii.gz", gt, spacing=SPACING)
        save_image(tmp_path / "pred" / f"c{i}.nii.gz", pred, spacing=SPACING)
        save_image(tmp_path / "images" / f"c{i}_0000.nii.gz", (scan * 100 - 1000).astype(np.int16), spacing=SPACING)
        save_image(tmp_path / "images" / f"c{i}_0001.nii.gz", scan, spacing=SPACING)
    return tmp_path


def _read(path):
    return np.asarray(nib.load(str(path)).dataobj)


def _by_hand(folder, case):
    """The framework's patient-level numbers from the files: TMTV and TLG in ml, SUVmax and SUVmean."""
    scan = _read(folder / "images" / f"{case}_0001.nii.gz").astype(np.float64)
    out = {}
    for side in ("gt", "pred"):
        mask = _read(folder / side / f"{case}.nii.gz") > 0
        values = scan[mask]
        out[f"{side}_tmtv_ml"] = mask.sum() * VOXEL_ML
        out[f"{side}_tlg"] = values.sum() * VOXEL_ML
        out[f"{side}_suv_max"] = values.max()
        out[f"{side}_suv_mean"] = values.mean()
    return out


def test_the_pet_values_of_every_case_equal_numpy_on_the_files(folders):
    result = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        metrics=["dice", "detection", "pet"],
        images=folders / "images",
        pairing=PairingOptions(pet_channel=1),
        progress=False,
    )
    rows = result.per_case.set_index("case")
    assert (rows["status"] == "ok").all()
    for case in ("c0", "c1", "c2"):
        for name, value in _by_hand(folders, case).items():
            assert rows.loc[case, name] == pytest.approx(value, rel=1e-6), (case, name)
        assert rows.loc[case, "gt_lesion_count"] == 3 and rows.loc[case, "pred_lesion_count"] == 3
        assert rows.loc[case, "image_file"] == str(folders / "images" / f"{case}_0001.nii.gz")
    comps = result.per_component
    scan = _read(folders / "images" / "c0_0001.nii.gz")
    one = comps[(comps["case"] == "c0") & (comps["volume"] == 1)]
    assert one["suv_max"].item() == pytest.approx(float(scan[20, 2, 1]))
    fp = result.per_prediction[(result.per_prediction["case"] == "c0")]
    assert fp["suv_max"].max() == pytest.approx(30.0)
    assert result.options["images"] == os.path.abspath(folders / "images") and result.options["pet_channel"] == 1


@pytest.mark.parametrize("pet_name", ["PET", "PT", "FDG-PET"])
def test_dataset_json_names_the_pet_channel(folders, pet_name):
    """The PET channel by its name in channel_names: PET, DICOM's modality code PT, or a tracer-PET name."""
    spec = {
        "labels": {"background": 0, "lesion": 1},
        "file_ending": ".nii.gz",
        "channel_names": {"0": "CT", "1": pet_name},
    }
    (folders / "dataset.json").write_text(json.dumps(spec))
    result = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        metrics=["pet"],
        images=folders / "images",
        pairing=PairingOptions(dataset_json=folders / "dataset.json"),
        progress=False,
    )
    rows = result.per_case.set_index("case")
    assert rows.loc["c1", "gt_suv_max"] == pytest.approx(_by_hand(folders, "c1")["gt_suv_max"], rel=1e-6)
    assert rows["image_file"].str.endswith("_0001.nii.gz").all()


def test_the_ct_channel_when_asked_for(folders):
    result = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        metrics=["pet"],
        images=folders / "images",
        pairing=PairingOptions(pet_channel=0),
        progress=False,
    )
    ct = _read(folders / "images" / "c2_0000.nii.gz").astype(np.float64)
    gt = _read(folders / "gt" / "c2.nii.gz") > 0
    assert result.per_case.set_index("case").loc["c2", "gt_suv_max"] == ct[gt].max()
    # a CT holds air (about -1000 HU): its values cannot be SUV, and every case says so
    assert (result.per_case["flags"] == "scan_not_suv").all() and (result.per_case["status"] == "flagged").all()


@pytest.mark.parametrize("low, high, flagged", [(-100.0, 1000.0, False), (-100.5, 10.0, True), (0.0, 1000.5, True)])
def test_scan_not_suv_at_its_bounds(low, high, flagged):
    rng = np.random.default_rng(5)
    gt, pred, scan = _case(rng)
    scan[0, 0, 0], scan[0, 0, 1] = low, high
    scan[23, 19, 11] = np.nan  # far from every lesion and its SUVpeak sphere: left out
    result = evaluate_dataset({"a": (gt, pred)}, metrics=["pet"], images={"a": scan}, progress=False)
    assert result.per_case["status"].item() == ("flagged" if flagged else "ok")
    assert result.per_case["flags"].item() == ("scan_not_suv" if flagged else "")


def test_several_channels_and_no_choice_stop_before_any_case(folders):
    out = folders / "out"
    with pytest.raises(ValueError, match=r"case 'c0' has 2 channels \(0000, 0001\): choose the PET with --pet-channel"):
        evaluate_dataset(
            folders / "gt", folders / "pred", metrics=["pet"], images=folders / "images", out_dir=out, progress=False
        )
    assert not (out / "cases").exists()


def test_a_missing_scan_another_grid_and_nan_are_error_rows_the_others_go_on(folders):
    images = folders / "images"
    (images / "c0_0001.nii.gz").unlink()
    scan = _read(images / "c1_0001.nii.gz")
    shifted = nib.load(str(images / "c1_0001.nii.gz"))
    affine = shifted.affine.copy()
    affine[2, 3] += 6.0  # two slices off
    nib.save(nib.Nifti1Image(scan, affine), str(images / "c1_0001.nii.gz"))
    bad = _read(images / "c2_0001.nii.gz").copy()
    bad[13, 11, 7] = np.nan  # inside the second lesion
    save_image(images / "c2_0001.nii.gz", bad, spacing=SPACING)
    save_image(folders / "gt" / "c3.nii.gz", _read(folders / "gt" / "c1.nii.gz"), spacing=SPACING)
    save_image(folders / "pred" / "c3.nii.gz", _read(folders / "pred" / "c1.nii.gz"), spacing=SPACING)
    save_image(images / "c3_0001.nii.gz", scan[:, :, :10], spacing=SPACING)  # another shape
    save_image(folders / "gt" / "c4.nii.gz", _read(folders / "gt" / "c1.nii.gz"), spacing=SPACING)
    save_image(folders / "pred" / "c4.nii.gz", _read(folders / "pred" / "c1.nii.gz"), spacing=SPACING)
    save_image(images / "c4_0001.nii.gz", scan, spacing=SPACING)
    result = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        metrics=["dice", "pet"],
        images=images,
        pairing=PairingOptions(pet_channel=1),
        progress=False,
    )
    rows = result.per_case.set_index("case")
    assert list(rows["status"]) == ["error", "error", "error", "error", "ok"]
    assert "no channel 1 (--pet-channel 1); its channels: 0000" in rows.loc["c0", "error"]
    assert "origin differs: gt (0.0, 0.0, 0.0) mm, image (0.0, 0.0, 6.0) mm" in rows.loc["c1", "error"]
    assert "non-finite SUV" in rows.loc["c2", "error"] and "(13, 11, 7)" in rows.loc["c2", "error"]
    assert "shape differs: gt (24, 20, 12), image (24, 20, 10)" in rows.loc["c3", "error"]
    assert rows.loc["c4", "gt_suv_max"] == pytest.approx(float(scan[_read(folders / "gt" / "c4.nii.gz") > 0].max()))


def test_a_case_without_any_scan_names_the_files_looked_for(folders):
    for name in ("c2_0000.nii.gz", "c2_0001.nii.gz"):
        (folders / "images" / name).unlink()
    result = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        metrics=["pet"],
        images=folders / "images",
        pairing=PairingOptions(pet_channel=1),
        progress=False,
    )
    row = result.per_case.set_index("case").loc["c2"]
    assert row["status"] == "error"
    assert row["error"] == (
        f"no scan for case 'c2' in {folders / 'images'}: expected c2_0000.nii.gz, c2_0001.nii.gz, ... or c2.nii.gz"
    )


def test_scans_as_a_mapping_of_arrays_one_missing():
    rng = np.random.default_rng(3)
    gt, pred, scan = _case(rng)
    result = evaluate_dataset(
        {"a": (gt, pred), "b": (gt, pred)},
        images={"a": scan.astype(np.float64)},
        options=EvalOptions(metrics=["pet"], spacing=SPACING),
        progress=False,
    )
    rows = result.per_case.set_index("case")
    assert rows.loc["a", "gt_tlg"] == pytest.approx(scan[gt > 0].astype(np.float64).sum() * VOXEL_ML, rel=1e-6)
    assert rows.loc["a", "image_file"] == "<array>"
    assert (
        rows.loc["b", "status"] == "error" and "no scan for case 'b' among the images given" in rows.loc["b", "error"]
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"metrics": ["dice", "pet"]}, "the pet metrics read the PET scan: give the scans, images= "),
        ({"options": EvalOptions(detection_rule="suv_max")}, "the detection rule suv_max reads the PET scan"),
        ({"metrics": ["dice"], "images": "somewhere"}, "read by the pet metrics and the suv_max detection rule only"),
        (
            {"metrics": ["dice"], "pairing": PairingOptions(pet_channel=1)},
            r"pet_channel \(--pet-channel\) chooses among the scans: give them too",
        ),
    ],
)
def test_refused_at_once_without_scans_or_with_scans_nothing_reads(kwargs, message, tmp_path):
    gt = np.zeros((6, 6), np.uint8)
    gt[1:3, 1:3] = 1
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=message):
        evaluate_dataset({"a": (gt, gt)}, out_dir=out, progress=False, **kwargs)
    assert not (out / "cases").exists()


def test_pet_channel_must_be_a_channel_number():
    with pytest.raises(ValueError, match="pet_channel .* is a channel number >= 0"):
        PairingOptions(pet_channel=-1)


def test_the_scan_is_in_the_case_record_and_its_memory(folders):
    out = folders / "out"
    pairing = PairingOptions(pet_channel=1)
    args = dict(metrics=["pet"], images=folders / "images", pairing=pairing, progress=False)
    first = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        run=RunOptions(out_dir=out, progress=False),
        **{k: v for k, v in args.items() if k != "progress"},
    )
    scan = _read(folders / "images" / "c1_0001.nii.gz") * 2  # the scan changes: its case is evaluated again
    save_image(folders / "images" / "c1_0001.nii.gz", scan, spacing=SPACING)
    again = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        run=RunOptions(out_dir=out, resume=True, progress=False),
        **{k: v for k, v in args.items() if k != "progress"},
    )
    assert again.run.reused == 2 and again.run.evaluated == 1
    before, after = (r.per_case.set_index("case") for r in (first, again))
    assert after.loc["c1", "gt_tlg"] == pytest.approx(2 * before.loc["c1", "gt_tlg"], rel=1e-6)
    assert after.loc["c0", "gt_tlg"] == before.loc["c0", "gt_tlg"]
    options = EvalOptions.build(["pet"])
    task = CaseTask("c0", str(folders / "gt" / "c0.nii.gz"), str(folders / "pred" / "c0.nii.gz"))
    plain = estimate_bytes(task, options)
    task.image = str(folders / "images" / "c0_0001.nii.gz")
    assert estimate_bytes(task, options) - plain == 4 * 24 * 20 * 12  # the float32 scan


def test_workers_give_the_same_tables(folders):
    args = dict(metrics=["dice", "pet"], images=folders / "images", pairing=PairingOptions(pet_channel=1))
    one = evaluate_dataset(folders / "gt", folders / "pred", progress=False, **args)
    two = evaluate_dataset(folders / "gt", folders / "pred", progress=False, workers=2, **args)
    pd.testing.assert_frame_equal(one.per_case, two.per_case)
    pd.testing.assert_frame_equal(one.per_component, two.per_component)


def test_the_command_line(folders, capsys):
    out = folders / "out"
    code = main(
        [
            "evaluate",
            str(folders / "gt"),
            str(folders / "pred"),
            "--out-dir",
            str(out),
            "--metrics",
            "dice,detection,pet",
            "--images",
            str(folders / "images"),
            "--pet-channel",
            "1",
            "--quiet",
        ]
    )
    assert code == 0, capsys.readouterr().err
    table = pd.read_csv(out / "per_case.csv").set_index("case")
    assert table.loc["c0", "gt_tmtv_ml"] == pytest.approx(_by_hand(folders, "c0")["gt_tmtv_ml"])
    assert json.loads((out / "summary.json").read_text())["options"]["pet_channel"] == 1


def test_the_command_line_refuses_before_making_its_folder(folders, capsys):
    out = folders / "out"
    base = ["evaluate", str(folders / "gt"), str(folders / "pred"), "--out-dir", str(out), "--quiet"]
    assert main([*base, "--metrics", "dice,pet"]) == 2 and not out.exists()
    assert "--images DIR" in capsys.readouterr().err
    assert main([*base, "--images", str(folders / "images")]) == 2 and not out.exists()
    assert "add pet to --metrics" in " ".join(capsys.readouterr().err.split())


def test_the_command_line_prints_and_writes_the_agreement_with_its_resamples(folders, capsys):
    from ccmetrics import DatasetResult

    out = folders / "out"
    args = ["evaluate", str(folders / "gt"), str(folders / "pred"), "--out-dir", str(out), "--metrics", "dice,pet"]
    args += ["--images", str(folders / "images"), "--pet-channel", "1", "--n-resamples", "300", "--seed", "7"]
    assert main(args) == 0
    printed = capsys.readouterr()
    assert "PET scans (channel 0001) from" in printed.err and "values taken as SUV (body weight)" in printed.err
    assert "PET quantification, model vs reference" in printed.out
    written = pd.DataFrame(json.loads((out / "summary.json").read_text())["quantification"])
    again = DatasetResult.read(out).quantification(n_resamples=300, seed=7)
    pd.testing.assert_frame_equal(written, again.astype(written.dtypes.to_dict()), check_exact=False, rtol=1e-12)
    tlg = written[(written["level"] == "patient") & (written["measure"] == "tlg")].iloc[0]
    diffs = [_by_hand(folders, c)["pred_tlg"] - _by_hand(folders, c)["gt_tlg"] for c in ("c0", "c1", "c2")]
    assert tlg["bias"] == pytest.approx(np.mean(diffs), rel=1e-6)
    assert tlg["loa_high"] == pytest.approx(np.mean(diffs) + 1.96 * np.std(diffs, ddof=1), rel=1e-6)
    line = next(x for x in printed.out.splitlines() if " patient " in x and " tlg " in x)
    assert f"{tlg['bias']:.4g}" in line


def test_pet_without_detection_still_writes_each_predicted_components_uptake(folders):
    result = evaluate_dataset(
        folders / "gt",
        folders / "pred",
        metrics=["dice", "pet"],
        images=folders / "images",
        pairing=PairingOptions(pet_channel=1),
        progress=False,
    )
    table = result.per_prediction
    assert table is not None and {"suv_max", "mtv_ml", "outcome"} <= set(table.columns)
    fp = table[(table["case"] == "c1") & (table["outcome"] == "fp")]
    scan = _read(folders / "images" / "c1_0001.nii.gz")
    assert fp["suv_max"].tolist() == [pytest.approx(float(scan[1, 18, 10]))]  # the false positive, SUV 30
    assert fp["mtv_ml"].tolist() == [pytest.approx(VOXEL_ML)]


def test_bad_bins_stop_the_command_line_before_any_case(folders, capsys):
    out = folders / "out"
    base = ["evaluate", str(folders / "gt"), str(folders / "pred"), "--out-dir", str(out), "--quiet"]
    assert main([*base, "--metrics", "pet", "--images", str(folders / "images"), "--suv-bins", "4,2"]) == 2
    assert "--suv-bins 2.5,4,10" in capsys.readouterr().err and not out.exists()
