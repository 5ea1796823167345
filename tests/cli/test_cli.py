"""Tests of the ``ccmetrics`` command line: evaluate, partition and compare.

Most tests call :func:`ccmetrics.cli.main` in this process and assert its return code;
one test runs the installed console script and ``python -m ccmetrics`` in subprocesses.
Expected numbers come from ``ccmetrics.evaluate`` / ``ccmetrics.voronoi_partition`` /
``ccmetrics.analysis.stats`` on the arrays and tables written, or are computed by hand.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from ccmetrics import evaluate, voronoi_partition
from ccmetrics.analysis.stats import bootstrap_ci, bootstrap_ci_pooled, compare
from ccmetrics.cli import main
from ccmetrics.formats.io import Image, load_image, save_image

SHAPE = (24, 24, 12)
SPACING = (0.7, 0.9, 3.0)  # anisotropic
VOXEL_MM3 = 0.7 * 0.9 * 3.0
DIAGONAL_MM = math.sqrt((24 * 0.7) ** 2 + (24 * 0.9) ** 2 + (12 * 3.0) ** 2)
METRICS = ["dice", "nsd", "hd95"]


def boxes(*specs, dtype=np.uint8):
    """An array holding each ((x0, x1), (y0, y1), (z0, z1)[, value]) box."""
    a = np.zeros(SHAPE, dtype)
    for spec in specs:
        ranges, value = (spec[:3], spec[3]) if len(spec) == 4 else (spec, 1)
        a[tuple(slice(lo, hi) for lo, hi in ranges)] = value
    return a


def write(path, array, spacing=SPACING):
    save_image(path, array, spacing=spacing)


def file_ids(*folders, suffix=None):
    """Case ids of every image file of the folders, computed here without ccmetrics.formats.io."""
    out = set()
    for folder in folders:
        for p in Path(folder).iterdir():
            m = re.match(r"^(.+?)(\.nii\.gz|\.nii|\.mha|\.mhd|\.nrrd|\.nhdr)$", p.name)
            if m and not p.name.startswith("."):
                out.add(re.sub(f"(?:{suffix})$", "", m.group(1)) if suffix else m.group(1))
    return out


L1 = ((2, 8), (2, 8), (1, 5))  # 6x6x4 = 144
L2 = ((14, 18), (14, 18), (6, 9))  # 4x4x3 = 48
L3 = ((18, 20), (3, 5), (8, 10))  # 2x2x2 = 8
CORNER = ((8, 10), (8, 10), (5, 7))  # touches L1 at one corner only: one component with 26-connectivity


def method_predictions(method):
    """Predictions of three 'methods' (0 best) for the GT cases of :func:`gt_cases`."""
    shift = method  # lesions shifted by `method` voxels along x
    moved = lambda r: ((r[0][0] + shift, r[0][1] + shift), r[1], r[2])  # noqa: E731
    return {
        "case_01": boxes(L1, moved(L2)),
        "case_02": boxes(moved(L1), L3) if method < 2 else boxes(moved(L1)),
        "case_03": boxes(moved(L2), ((20, 23), (20, 23), (0, 2))),
        "case_04": boxes(L1, CORNER) if method == 0 else boxes(moved(L1)),
        "case_05": boxes(((3, 7 - method), (3, 7), (2, 4)), L2),
        "empty_fp": boxes(((18, 21), (2, 4), (1, 2))),  # 6 voxels
        "empty_clean": boxes(),
    }


def gt_cases():
    return {
        "case_01": boxes(L1, L2),
        "case_02": boxes(L1, L2, L3),
        "case_03": boxes(L2),
        "case_04": boxes(L1, CORNER, L3),
        "case_05": boxes(((2, 8), (2, 8), (2, 4)), L2),
        "missing": boxes(L1, L3),
        "empty_fp": boxes(),
        "empty_clean": boxes(),
    }


def write_method(folder, method):
    folder.mkdir(parents=True, exist_ok=True)
    preds = method_predictions(method)
    for case, pred in preds.items():
        write(folder / f"{case}.nii.gz", pred)
    return preds


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """GT folder, three prediction folders, and the CLI output of method 0 with plots."""
    root = tmp_path_factory.mktemp("cli")
    g = root / "gt"
    g.mkdir()
    gts = gt_cases()
    for case, gt in gts.items():
        write(g / f"{case}.nii.gz", gt)
    preds = {m: write_method(root / f"method{m}", m) for m in range(3)}
    (root / "method0" / "README.txt").write_text("predictions of method 0")
    out = root / "out0"
    code = main(
        ["evaluate", str(g), str(root / "method0"), "--out", str(out), "--quiet", "--bootstrap", "500", "--seed", "5"]
    )
    return {"root": root, "gt": g, "gts": gts, "preds": preds, "out": out, "code": code}


def read_case_table(out):
    return pd.read_csv(Path(out) / "per_case.csv", keep_default_na=False, na_values=[""])


# ------------------------------------------------------------------ evaluate


def test_evaluate_writes_tables_summary_and_plots(data):
    assert data["code"] == 0  # flagged cases (missing prediction, empty GT) are not failures
    out = data["out"]
    assert sorted(p.name for p in out.iterdir()) == [
        ".ccmetrics.lock",
        "cases",
        "manifest.json",
        "per_case.csv",
        "per_component.csv",
        "plots",
        "summary.json",
    ]
    plots = sorted(p.name for p in (out / "plots").iterdir())
    assert plots == sorted(
        [
            "metric_vs_volume_dice.png",
            "detection_by_size.png",
            "standard_vs_cc_dice.png",
            "standard_vs_cc_nsd.png",
            "standard_vs_cc_hd95.png",
            "case_distribution.png",
        ]
    )
    for name in plots:
        assert (out / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_per_case_csv_has_every_file_and_the_values_of_evaluate(data):
    table = read_case_table(data["out"]).set_index("case")
    assert set(table.index) == file_ids(data["gt"], data["root"] / "method0") == set(data["gts"])
    assert len(table) == len(data["gts"])
    for case, gt in data["gts"].items():
        pred = data["preds"][0].get(case, np.zeros(SHAPE, np.uint8))
        expected = evaluate(pred, gt, METRICS, spacing=SPACING)
        row = table.loc[case]
        for m in METRICS:
            assert row[m] == pytest.approx(expected.standard[m]), (case, m)
            assert row[f"cc_{m}"] == pytest.approx(expected.cc[m]), (case, m)
        assert row["pred_volume_ml"] == pytest.approx(pred.sum() * VOXEL_MM3 / 1000)
    assert table.loc["missing", "status"] == "flagged" and table.loc["missing", "flags"] == "missing_prediction"
    assert (table.loc["missing", "dice"], table.loc["missing", "cc_dice"]) == (0.0, 0.0)
    assert table.loc["missing", "cc_hd95"] == pytest.approx(DIAGONAL_MM)
    assert set(table.index[table["flags"] == "empty_gt"]) == {"empty_fp", "empty_clean"}
    # Dice of two boxes by hand: case_05's lesion 1 is 6x6x2 = 72 voxels, its prediction 4x4x2 = 32 inside it
    assert table.loc["case_05", "dice"] == pytest.approx(2 * (32 + 48) / ((72 + 48) + (32 + 48)))
    assert table.loc["case_05", "cc_dice"] == pytest.approx((2 * 32 / (72 + 32) + 1.0) / 2)


def test_per_component_csv_one_row_per_gt_component(data):
    comps = pd.read_csv(data["out"] / "per_component.csv")
    for col in ["case", "class", "component", "volume", "volume_mm3", "detected", *METRICS]:
        assert col in comps.columns
    expected_rows = 0
    for case, gt in data["gts"].items():
        labels, n = ndimage.label(gt, structure=np.ones((3, 3, 3)))  # 26-connectivity, raster order
        rows = comps[comps["case"] == case].sort_values("component")
        assert len(rows) == n, case
        expected_rows += n
        volumes = np.bincount(labels.ravel())[1:]
        assert rows["volume"].tolist() == volumes.tolist()
        assert rows["volume_mm3"].to_numpy() == pytest.approx(volumes * VOXEL_MM3)
        pred = data["preds"][0].get(case, np.zeros(SHAPE, np.uint8))
        detected = [bool(pred[labels == k].any()) for k in range(1, n + 1)]
        assert rows["detected"].tolist() == detected
        if n:
            expected = evaluate(pred, gt, METRICS, spacing=SPACING).per_component
            for m in METRICS:
                assert rows[m].to_numpy() == pytest.approx(expected[m].to_numpy()), (case, m)
    assert len(comps) == expected_rows
    assert comps[comps["case"] == "case_04"]["volume"].tolist() == [144 + 8, 8]  # L1+CORNER merge


def test_evaluate_computes_the_bootstrap_summary_once(data, tmp_path, monkeypatch, capsys):
    """The summary written to summary.json is the one printed: one bootstrap per run, not two."""
    from ccmetrics.campaign.dataset import DatasetResult

    calls = []
    summary = DatasetResult.summary

    def counted(self, **options):
        calls.append(options)
        return summary(self, **options)

    monkeypatch.setattr(DatasetResult, "summary", counted)
    out = tmp_path / "out"
    args = ["--out", str(out), "--no-plots", "--bootstrap", "500", "--seed", "5"]
    assert main(["evaluate", str(data["gt"]), str(data["root"] / "method0"), *args]) == 0
    assert calls == [{"n_resamples": 500, "seed": 5}]
    assert "cc_pooled" in capsys.readouterr().out
    doc = json.loads((out / "summary.json").read_text())
    assert doc["summary"] == json.loads((data["out"] / "summary.json").read_text())["summary"]
    back = DatasetResult.read(out)
    with pytest.raises(ValueError, match="not both"):
        back.write(tmp_path / "again", plots=False, summary=back.summary(n_resamples=10), seed=1)


def test_summary_json_counts_options_and_aggregations(data):
    doc = json.loads((data["out"] / "summary.json").read_text())
    assert doc["counts"] == {
        "cases": 8,
        "evaluated": 8,
        "flagged": 3,
        "failed": 0,
        "empty_gt": 2,
        "missing_prediction": 1,
    }
    assert doc["options"] == {
        "metrics": METRICS,
        "classes": None,
        "ignore_label": None,
        "spacing": "header",
        "nsd_tolerance": 1.0,
        "worst_distance": None,
        "connectivity": None,
        "detection_rule": "overlap",
        "gt_suffix": None,
        "pred_suffix": None,
        "tolerance_mm": 1e-3,
    }
    assert doc["errors"] == []
    assert [Path(f).name for f in doc["ignored_files"]] == ["README.txt"]
    cases = read_case_table(data["out"])
    comps = pd.read_csv(data["out"] / "per_component.csv")
    scored = cases[(cases["status"] != "error") & ~cases["empty_gt"].astype(bool)]
    assert sorted(scored["case"]) == ["case_01", "case_02", "case_03", "case_04", "case_05", "missing"]
    summary = {(r["metric"], r["aggregation"]): r for r in doc["summary"] if r["class"] == 1}
    for m in METRICS:
        patient = scored[f"cc_{m}"].to_numpy(float)
        row = summary[(m, "cc_patient")]
        assert row["n"] == 6 and row["mean"] == pytest.approx(patient.mean())
        assert row["median"] == pytest.approx(np.median(patient))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(bootstrap_ci(patient, n_resamples=500, seed=5))
        pooled_rows = comps[comps["case"].isin(scored["case"])]
        pooled = [v if math.isfinite(v) else w for v, w in zip(pooled_rows[m], pooled_rows["worst_distance"])]
        row = summary[(m, "cc_pooled")]
        assert row["n"] == len(pooled) == 2 + 3 + 1 + 2 + 2 + 2
        assert row["mean"] == pytest.approx(np.mean(pooled))
        ci = bootstrap_ci_pooled(pooled, pooled_rows["case"].to_numpy(), n_resamples=500, seed=5)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(ci)
        standard = [v if math.isfinite(v) else w for v, w in zip(scored[m], scored["worst_distance"])]
        assert summary[(m, "standard")]["mean"] == pytest.approx(np.mean(standard))
    # empty-GT cases are summarised apart, with their false-positive volume in ml
    assert doc["empty_gt"] == [
        {
            "class": 1,
            "n": 2,
            "with_false_positive": 1,
            "fp_volume_voxels_mean": 3.0,
            "fp_volume_ml_mean": pytest.approx(6 * VOXEL_MM3 / 1000 / 2),
        }
    ]


def test_bootstrap_seed_reproducible_and_changes_the_intervals(data, tmp_path):
    args = ["evaluate", str(data["gt"]), str(data["root"] / "method0"), "--quiet", "--no-plots", "--bootstrap", "500"]
    assert main(args + ["--out", str(tmp_path / "same"), "--seed", "5"]) == 0
    assert main(args + ["--out", str(tmp_path / "other"), "--seed", "6"]) == 0
    first = json.loads((data["out"] / "summary.json").read_text())["summary"]
    same = json.loads((tmp_path / "same" / "summary.json").read_text())["summary"]
    other = json.loads((tmp_path / "other" / "summary.json").read_text())["summary"]
    assert same == first
    ci = lambda rows: [(r["ci_low"], r["ci_high"]) for r in rows]  # noqa: E731
    assert ci(other) != ci(first)
    assert [r["mean"] for r in other] == [r["mean"] for r in first]


def test_report_printed_on_stdout(data, tmp_path, capsys):
    code = main(
        [
            "evaluate",
            str(data["gt"]),
            str(data["root"] / "method0"),
            "--out",
            str(tmp_path),
            "--no-plots",
            "--bootstrap",
            "50",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(
        r"8 cases in [\d.]+ s: 8 evaluated \(3 flagged\), 0 failed; 2 with an empty GT, "
        r"1 without prediction",
        out,
    )
    assert "flagged missing: missing_prediction" in out
    assert "README.txt (not an image file)" in out
    assert "2 empty-GT cases, 1 with a false positive" in out
    assert f"{6 * VOXEL_MM3 / 1000 / 2:.4g} ml" in out
    assert not (tmp_path / "plots").exists()


def test_failed_cases_exit_1_and_are_reported(tmp_path, capsys):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    gt = boxes(L1, L2)
    write(g / "good.nii.gz", gt)
    write(p / "good.nii.gz", gt)
    write(g / "bad_spacing.nii.gz", gt)
    write(p / "bad_spacing.nii.gz", gt, spacing=(0.7, 0.9, 2.0))
    write(g / "labels.mha", gt)
    write(p / "labels.mha", gt * 2)
    write(p / "orphan.nrrd", gt)
    nan = gt.astype(np.float32)
    nan[0, 0, 0] = np.nan
    write(g / "nan.nii.gz", gt)
    write(p / "nan.nii.gz", nan)
    write(g / "cut.nii.gz", gt)
    write(p / "cut.nii.gz", gt)
    (p / "cut.nii.gz").write_bytes((p / "cut.nii.gz").read_bytes()[:-40])
    code = main(
        ["evaluate", str(g), str(p), "--out", str(tmp_path / "out"), "--quiet", "--no-plots", "--metrics", "dice"]
    )
    printed = capsys.readouterr().err  # --quiet: each error on stderr
    assert code == 1
    table = read_case_table(tmp_path / "out").set_index("case")
    assert set(table.index) == file_ids(g, p)
    assert table.loc["good", "status"] == "ok" and table.loc["good", "dice"] == 1.0
    words = {
        "bad_spacing": "spacing differs",
        "labels": "binary",
        "orphan": "no ground truth",
        "nan": "NaN",
        "cut": "truncated",
    }
    for case, word in words.items():
        assert table.loc[case, "status"] == "error" and word in table.loc[case, "error"], case
        assert re.search(rf"ccmetrics evaluate: {case} failed: .*{re.escape(word)}", printed, re.S), case
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert doc["counts"]["failed"] == 5 and doc["counts"]["evaluated"] == 1
    assert {e["case"] for e in doc["errors"]} == set(words)
    assert all(e["error"] for e in doc["errors"])


@pytest.mark.filterwarnings("ignore:No artists with labels:UserWarning")  # empty figures
def test_every_case_failed_still_writes_all_outputs(tmp_path, capsys):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    write(g / "a.nii.gz", boxes(L1))
    write(p / "a.nii.gz", boxes(L1 + (2,)))
    write(p / "b.nii.gz", boxes(L1))
    out = tmp_path / "out"
    assert main(["evaluate", str(g), str(p), "--out", str(out), "--quiet", "--bootstrap", "50"]) == 1
    assert "2 failed" in capsys.readouterr().out
    table = read_case_table(out)
    assert table["status"].tolist() == ["error", "error"]
    for col in ("empty_gt", "pred_volume_ml", "worst_distance", "dice", "cc_dice", "hd95", "cc_hd95"):
        assert col in table.columns and table[col].isna().all()
    assert len(pd.read_csv(out / "per_component.csv")) == 0
    doc = json.loads((out / "summary.json").read_text())
    assert doc["counts"]["failed"] == 2 and doc["counts"]["evaluated"] == 0
    assert {r["n"] for r in doc["summary"]} == {0}
    assert (out / "plots").is_dir()


def test_usage_errors_exit_2(tmp_path, data, capsys):
    g, p = str(data["gt"]), str(data["root"] / "method0")
    out = str(tmp_path / "out")
    assert main(["evaluate", str(tmp_path / "nowhere"), p, "--out", out, "--quiet"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["evaluate", g, p, "--out", out, "--metrics", "dice,volume", "--quiet"]) == 2
    assert "unknown metric" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["evaluate", str(tmp_path / "empty"), p, "--out", out, "--quiet"]) == 2
    assert "no image file" in capsys.readouterr().err
    assert main(["evaluate", g, p, "--out", out, "--pred-suffix", "_(pred", "--quiet"]) == 2
    assert "not a valid regular expression" in capsys.readouterr().err
    assert not Path(out).exists()  # nothing written for unusable input
    for bad in (
        ["evaluate", g, p],
        ["evaluate", g, p, "--out", out, "--classes", "a,b"],
        ["evaluate", g, p, "--out", out, "--spacing", "mm"],
        ["frobnicate"],
        [],
    ):
        with pytest.raises(SystemExit) as exc:  # argparse exits with 2 itself
            main(bad)
        assert exc.value.code == 2
    capsys.readouterr()


def test_hd95_in_mm_with_anisotropic_spacing_and_voxel_mode(data, tmp_path):
    g, p = str(data["gt"]), str(data["root"] / "method1")
    runs = {"header": SPACING, "voxel": None, "1,1,1": None, "0.5,0.5,2": (0.5, 0.5, 2.0)}
    tables = {}
    for mode, spacing in runs.items():
        out = tmp_path / mode
        assert (
            main(
                [
                    "evaluate",
                    g,
                    p,
                    "--out",
                    str(out),
                    "--spacing",
                    mode,
                    "--metrics",
                    "hd95,dice",
                    "--quiet",
                    "--no-plots",
                    "--bootstrap",
                    "50",
                ]
            )
            == 0
        )
        tables[mode] = read_case_table(out).set_index("case")
        comps = pd.read_csv(out / "per_component.csv")
        for case in ("case_01", "case_02", "case_03"):
            expected = evaluate(data["preds"][1][case], data["gts"][case], ["hd95", "dice"], spacing=spacing)
            assert tables[mode].loc[case, "hd95"] == pytest.approx(expected.standard["hd95"]), (mode, case)
            assert tables[mode].loc[case, "cc_hd95"] == pytest.approx(expected.cc["hd95"]), (mode, case)
            rows = comps[comps["case"] == case]
            assert rows["hd95"].to_numpy() == pytest.approx(expected.per_component["hd95"].to_numpy())
        if spacing is None:
            assert comps["volume_mm3"].isna().all() or mode == "1,1,1"
    # case_01's L2 is shifted one voxel along x: 0.7 mm with the header, 1 voxel without
    assert pd.read_csv(tmp_path / "header" / "per_component.csv").query("case == 'case_01'")[
        "hd95"
    ].tolist() == pytest.approx([0.0, 0.7])
    assert tables["voxel"]["hd95"].to_numpy() == pytest.approx(tables["1,1,1"]["hd95"].to_numpy())
    assert tables["header"].loc["case_03", "hd95"] != pytest.approx(tables["voxel"].loc["case_03", "hd95"])
    assert set(tables["voxel"]["spacing"]) == {"voxel"} and "0.7x0.9x3" in set(tables["header"]["spacing"])
    doc = json.loads((tmp_path / "0.5,0.5,2" / "summary.json").read_text())
    assert doc["options"]["spacing"] == [0.5, 0.5, 2.0]


def test_metric_options_are_passed_through(data, tmp_path):
    out = tmp_path / "out"
    assert (
        main(
            [
                "evaluate",
                str(data["gt"]),
                str(data["root"] / "method2"),
                "--out",
                str(out),
                "--quiet",
                "--no-plots",
                "--metrics",
                "dice,nsd,hd95,pq",
                "--worst-distance",
                "50",
                "--nsd-tolerance",
                "2",
                "--connectivity",
                "6",
                "--bootstrap",
                "50",
            ]
        )
        == 0
    )
    table = read_case_table(out).set_index("case")
    comps = pd.read_csv(out / "per_component.csv")
    assert (comps["worst_distance"] == 50.0).all() and (table["worst_distance"] == 50.0).all()
    assert table.loc["missing", "cc_hd95"] == 50.0 and table.loc["empty_fp", "cc_hd95"] == 50.0
    for case, gt in data["gts"].items():
        pred = data["preds"][2].get(case, np.zeros(SHAPE, np.uint8))
        expected = evaluate(
            pred,
            gt,
            ["dice", "nsd", "hd95", "pq"],
            spacing=SPACING,
            worst_distance=50.0,
            nsd_tolerance=2.0,
            connectivity=6,
        )
        assert table.loc[case, "n_components"] == expected.n_components
        for m in ("dice", "nsd", "hd95"):
            assert table.loc[case, f"cc_{m}"] == pytest.approx(expected.cc[m]), (case, m)
        for s in ("pq", "sq", "rq"):
            assert table.loc[case, s] == pytest.approx(expected.case_scores[s], nan_ok=True), (case, s)
    assert table.loc["case_04", "n_components"] == 3  # 6-connectivity: the corner-touching box is its own lesion
    doc = json.loads((out / "summary.json").read_text())
    assert (doc["options"]["worst_distance"], doc["options"]["nsd_tolerance"], doc["options"]["connectivity"]) == (
        50.0,
        2.0,
        6,
    )
    assert doc["options"]["metrics"] == ["dice", "nsd", "hd95", "pq"]
    assert {r["metric"] for r in doc["summary"] if r["aggregation"] == "case"} == {"pq", "sq", "rq"}


def test_suffix_patterns_pair_the_files(tmp_path, capsys):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    gt, pred = boxes(L1, L2), boxes(L1)
    for case in ("liver_001", "liver_002"):
        write(g / f"{case}.nii.gz", gt)
        write(p / f"{case}_pred.nii.gz", pred)
    code = main(
        [
            "evaluate",
            str(g),
            str(p),
            "--out",
            str(tmp_path / "paired"),
            "--pred-suffix",
            "_pred",
            "--metrics",
            "dice",
            "--quiet",
            "--no-plots",
        ]
    )
    assert code == 0
    table = read_case_table(tmp_path / "paired")
    assert table["case"].tolist() == ["liver_001", "liver_002"] == sorted(file_ids(g) | file_ids(p, suffix="_pred"))
    assert (table["status"] == "ok").all()
    assert table["dice"].tolist() == pytest.approx([2 * 144 / (144 + 48 + 144)] * 2)
    assert table["cc_dice"].tolist() == pytest.approx([0.5, 0.5])
    # without the suffix nothing pairs: the run stops before any case, naming the option that pairs them
    code = main(
        ["evaluate", str(g), str(p), "--out", str(tmp_path / "unpaired"), "--metrics", "dice", "--quiet", "--no-plots"]
    )
    assert code == 2 and not (tmp_path / "unpaired").exists()
    assert "--pred-suffix _pred pairs them" in capsys.readouterr().err
    # a regex suffix on both sides
    shutil.rmtree(g)
    g.mkdir()
    for case in ("liver_001", "liver_002"):
        write(g / f"{case}_0000.mha", gt)
    code = main(
        [
            "evaluate",
            str(g),
            str(p),
            "--out",
            str(tmp_path / "regex"),
            "--gt-suffix",
            r"_\d{4}",
            "--pred-suffix",
            "_pred",
            "--metrics",
            "dice",
            "--quiet",
            "--no-plots",
        ]
    )
    assert code == 0 and read_case_table(tmp_path / "regex")["case"].tolist() == ["liver_001", "liver_002"]


def test_multiclass_classes_option(tmp_path):
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    cases = {
        "a": (boxes(L1 + (1,), L2 + (2,), L3 + (2,)), boxes(L1 + (1,), L2 + (2,))),
        "b": (boxes(L1 + (1,)), boxes(L1 + (2,))),  # class 2 absent in the GT, predicted: empty-GT FP
    }
    for case, (gt, pred) in cases.items():
        write(g / f"{case}.nrrd", gt)
        write(p / f"{case}.nrrd", pred)
    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(g),
            str(p),
            "--out",
            str(out),
            "--classes",
            "1,2",
            "--metrics",
            "dice,hd95",
            "--quiet",
            "--bootstrap",
            "50",
        ]
    )
    assert code == 0
    table = read_case_table(out)
    assert table[["case", "class"]].values.tolist() == [["a", 1], ["a", 2], ["b", 1], ["b", 2]]
    for case, (gt, pred) in cases.items():
        expected = evaluate(pred, gt, ["dice", "hd95"], classes=[1, 2], spacing=SPACING)
        for c in (1, 2):
            row = table[(table["case"] == case) & (table["class"] == c)].iloc[0]
            for m in ("dice", "hd95"):
                assert row[m] == pytest.approx(expected[c].standard[m]), (case, c, m)
                assert row[f"cc_{m}"] == pytest.approx(expected[c].cc[m]), (case, c, m)
    assert table.set_index(["case", "class"]).loc[("b", 2), "flags"] == "empty_gt"
    doc = json.loads((out / "summary.json").read_text())
    assert doc["options"]["classes"] == [
        {"value": 1, "name": "1", "labels": [1]},
        {"value": 2, "name": "2", "labels": [2]},
    ]
    assert {(r["class"], r["n"]) for r in doc["empty_gt"]} == {(1, 0), (2, 1)}
    assert {r["class"] for r in doc["summary"]} == {1, 2}
    comps = pd.read_csv(out / "per_component.csv")
    assert comps[["case", "class", "component"]].values.tolist() == [["a", 1, 1], ["a", 2, 1], ["a", 2, 2], ["b", 1, 1]]
    plots = {q.name for q in (out / "plots").iterdir()}
    assert {"case_distribution_class1.png", "case_distribution_class2.png"} <= plots


def test_real_spine_pair_per_class_with_header_spacing(tmp_path):
    spine = Path(__file__).resolve().parents[1] / "data" / "spine"
    g, p = tmp_path / "gt", tmp_path / "pred"
    g.mkdir()
    p.mkdir()
    shutil.copy(spine / "ref.nii.gz", g / "spine_001.nii.gz")
    shutil.copy(spine / "pred.nii.gz", p / "spine_001_0000.nii.gz")
    out = tmp_path / "out"
    assert (
        main(
            [
                "evaluate",
                str(g),
                str(p),
                "--out",
                str(out),
                "--classes",
                "41,42,100",
                "--pred-suffix",
                "_0000",
                "--metrics",
                "dice,hd95",
                "--quiet",
                "--no-plots",
                "--bootstrap",
                "50",
            ]
        )
        == 0
    )
    ref, pred = load_image(spine / "ref.nii.gz"), load_image(spine / "pred.nii.gz")
    assert ref.spacing == pytest.approx((0.58594, 0.58594, 3.3), abs=1e-4)
    expected = evaluate(pred.array, ref.array, ["dice", "hd95"], classes=[41, 42, 100], spacing=ref.spacing)
    table = read_case_table(out)
    comps = pd.read_csv(out / "per_component.csv")
    assert table["class"].tolist() == [41, 42, 100] and (table["case"] == "spine_001").all()
    for _, row in table.iterrows():
        c = row["class"]
        assert row["spacing"] == "0.58594x0.58594x3.3"
        for m in ("dice", "hd95"):
            assert row[m] == pytest.approx(expected[c].standard[m])
            assert row[f"cc_{m}"] == pytest.approx(expected[c].cc[m])
        rows = comps[comps["class"] == c]
        assert rows["hd95"].to_numpy() == pytest.approx(expected[c].per_component["hd95"].to_numpy())
        assert rows["volume_mm3"].to_numpy() == pytest.approx(expected[c].per_component["volume_mm3"].to_numpy())


# ------------------------------------------------------------------ partition


def test_partition_writes_the_voronoi_regions_with_the_gt_geometry(tmp_path, capsys):
    gt = boxes(L1, L2, L3)
    affine = np.diag((-0.7, 0.9, 3.0, 1.0))  # a flipped axis and an origin away from 0
    affine[:3, 3] = (10.0, -20.0, 30.0)
    save_image(tmp_path / "gt.nii.gz", gt, like=Image(gt, SPACING, affine))
    assert main(["partition", str(tmp_path / "gt.nii.gz"), str(tmp_path / "regions.nii.gz")]) == 0
    assert "3 regions written" in capsys.readouterr().out
    loaded = load_image(tmp_path / "gt.nii.gz")
    regions = load_image(tmp_path / "regions.nii.gz")
    expected = voronoi_partition(loaded.array, spacing=loaded.spacing)
    np.testing.assert_array_equal(regions.array, expected)
    np.testing.assert_allclose(regions.affine, loaded.affine, atol=1e-5)
    assert regions.spacing == pytest.approx(SPACING)
    assert set(np.unique(regions.array)) == {1, 2, 3}
    # index units give another partition on this anisotropic grid
    assert main(["partition", str(tmp_path / "gt.nii.gz"), str(tmp_path / "voxel.mha"), "--spacing", "voxel"]) == 0
    voxel = load_image(tmp_path / "voxel.mha")
    np.testing.assert_array_equal(voxel.array, voronoi_partition(loaded.array))
    assert not np.array_equal(voxel.array, regions.array)
    np.testing.assert_allclose(voxel.affine, loaded.affine, atol=1e-5)
    # one label of a label map
    labels = boxes(L1 + (5,), L2 + (7,), L3 + (5,))
    write(tmp_path / "labels.nrrd", labels)
    assert main(["partition", str(tmp_path / "labels.nrrd"), str(tmp_path / "five.nii.gz"), "--class", "5"]) == 0
    five = load_image(tmp_path / "five.nii.gz")
    np.testing.assert_array_equal(five.array, voronoi_partition(labels == 5, spacing=SPACING))
    assert main(["partition", str(tmp_path / "labels.nrrd"), str(tmp_path / "x.nii.gz"), "--class", "9"]) == 2
    assert "does not occur" in capsys.readouterr().err
    assert main(["partition", str(tmp_path / "labels.nrrd"), str(tmp_path / "x.nii.gz")]) == 2
    assert "binary" in capsys.readouterr().err
    assert main(["partition", str(tmp_path / "none.nii.gz"), str(tmp_path / "x.nii.gz")]) == 2


# ------------------------------------------------------------------ compare


@pytest.fixture(scope="module")
def results(data):
    """Result folders of the three methods (method 0 is the one with plots)."""
    dirs = {0: data["out"]}
    for m in (1, 2):
        dirs[m] = data["root"] / f"out{m}"
        assert (
            main(
                [
                    "evaluate",
                    str(data["gt"]),
                    str(data["root"] / f"method{m}"),
                    "--out",
                    str(dirs[m]),
                    "--quiet",
                    "--no-plots",
                    "--bootstrap",
                    "50",
                ]
            )
            == 0
        )
    return dirs


def test_compare_two_methods_wilcoxon(results, tmp_path, capsys):
    code = main(
        ["compare", str(results[0]), str(results[1]), "--metric", "cc_dice", "--names", "A,B", "--out", str(tmp_path)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    expected = compare(
        {"A": pd.read_csv(results[0] / "per_case.csv"), "B": pd.read_csv(results[1] / "per_case.csv")}, "cc_dice"
    )
    assert expected.test == "wilcoxon"
    assert f"Wilcoxon test: statistic {expected.statistic:.4g}, p = {expected.pvalue:.4g}" in printed
    assert "higher is better" in printed and f"on {len(expected.scores)} paired cases" in printed
    written = pd.read_csv(tmp_path / "comparison.csv", index_col=0)
    assert list(written.columns) == ["A", "B"]
    assert written.index.tolist() == [str(c) for c in expected.scores.index]
    np.testing.assert_allclose(written.to_numpy(), expected.scores.to_numpy())
    assert (tmp_path / "comparison.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_three_methods_friedman(results, capsys):
    dirs = [str(results[m]) for m in range(3)]
    code = main(["compare", *dirs, "--metric", "cc_hd95"])
    printed = capsys.readouterr().out
    assert code == 0
    tables = {Path(d).name: pd.read_csv(Path(d) / "per_case.csv") for d in dirs}
    expected = compare(tables, "cc_hd95")
    assert expected.test == "friedman" and not expected.higher_is_better
    assert f"Friedman test: statistic {expected.statistic:.4g}, p = {expected.pvalue:.4g}" in printed
    assert "lower is better" in printed and "Nemenyi post-hoc p-values" in printed
    for name, rank in expected.mean_ranks.items():
        assert re.search(rf"{name}\s.*{rank:.4g}", printed), name
    # method 0 is best in every case but ties: lowest mean rank
    assert expected.mean_ranks.idxmin() == "out0"


def test_compare_pairs_numeric_looking_case_ids(tmp_path, capsys):
    """Ids such as 001 stay strings when read back, also when only one method has a non-numeric id."""
    g = tmp_path / "gt"
    g.mkdir()
    gts = gt_cases()
    ids = {"case_01": "001", "case_02": "002", "case_03": "010", "case_05": "011"}
    for case, new_id in ids.items():
        write(g / f"{new_id}.nii.gz", gts[case])
    for m in (0, 1):
        folder = tmp_path / f"pred{m}"
        folder.mkdir()
        for case, new_id in ids.items():
            write(folder / f"{new_id}.nii.gz", method_predictions(m)[case])
    write(tmp_path / "pred1" / "011_extra.nii.gz", gts["case_01"])  # an error row in method B only
    for m in (0, 1):
        main(
            [
                "evaluate",
                str(g),
                str(tmp_path / f"pred{m}"),
                "--out",
                str(tmp_path / f"out{m}"),
                "--quiet",
                "--no-plots",
                "--metrics",
                "dice",
                "--bootstrap",
                "50",
            ]
        )
    with pytest.warns(UserWarning, match="excluded"):
        code = main(["compare", str(tmp_path / "out0"), str(tmp_path / "out1"), "--out", str(tmp_path / "cmp")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "on 4 paired cases; 1 excluded" in printed and "011_extra" in printed
    written = pd.read_csv(tmp_path / "cmp" / "comparison.csv", index_col=0, dtype={"case": str})
    assert written.index.tolist() == ["001", "002", "010", "011"]


def test_compare_usage_errors(results, tmp_path, capsys):
    assert main(["compare", str(results[0]), str(results[1]), "--names", "A"]) == 2
    assert "one distinct name per folder" in capsys.readouterr().err
    assert main(["compare", str(results[0]), str(tmp_path)]) == 2
    assert "per_case.csv" in capsys.readouterr().err
    assert main(["compare", str(results[0])]) == 2  # one method: nothing to compare
    capsys.readouterr()


# ------------------------------------------------------------------ entry points


@pytest.mark.slow
def test_console_script_and_python_m(data, tmp_path):
    exe = Path(sys.executable).parent / ("ccmetrics.exe" if os.name == "nt" else "ccmetrics")
    script = str(exe) if exe.exists() else shutil.which("ccmetrics")
    assert script, "the ccmetrics console script is not installed"
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    for command in ("evaluate", "partition", "compare"):
        assert command in done.stdout
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ccmetrics",
            "evaluate",
            str(data["gt"]),
            str(data["root"] / "method0"),
            "--out",
            str(out),
            "--quiet",
            "--no-plots",
            "--bootstrap",
            "500",
            "--seed",
            "5",
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "8 cases in" in done.stdout
    # two worker processes write the same tables and summary as the in-process run
    for name in ("per_case.csv", "per_component.csv", "summary.json"):
        assert (out / name).read_bytes() == (data["out"] / name).read_bytes(), name
