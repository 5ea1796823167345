"""The README example, the quickstart script and the demo give the numbers the README shows."""

import math
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_values_are_hand_computed(capsys):
    namespace = runpy.run_path(str(ROOT / "examples" / "quickstart.py"))
    result = namespace["result"]
    # region 1: the exact 36-px square plus the 4-px false positive; region 2: nothing predicted
    assert result.per_component["dice"].tolist() == pytest.approx([72 / 76, 0.0])
    assert result.standard["dice"] == pytest.approx(72 / 80)
    assert result.cc["dice"] == pytest.approx(72 / 76 / 2)
    # NSD: 20 square edges at distance 0, 4 false-positive edges at 10-11 px; 20 GT edges at 0
    assert result.per_component.loc[1, "nsd"] == pytest.approx(40 / 44)
    # HD95: sorted pred->GT distances are 20 zeros, 10, 10, 11, 11; rank 0.95 * 23 = 21.85
    assert result.per_component.loc[1, "hd95"] == pytest.approx(10.85, abs=1e-5)
    assert math.isinf(result.per_component.loc[2, "hd95"])
    assert result.cc["hd95"] == pytest.approx((10.85 + math.hypot(20, 20)) / 2, abs=1e-5)
    out = capsys.readouterr().out
    assert "0.473684" in out and "19.567136" in out  # the numbers printed in the README


def test_demo_runs_and_prints_the_table(capsys):
    from ccmetrics import demo, evaluate
    from ccmetrics.synthetic import lesion_case

    demo.main()
    out = capsys.readouterr().out
    gt, pred = lesion_case(shape=(160, 160, 120), n_lesions=8, radius_range=(1.5, 15.0), n_false_positives=2, seed=4)
    result = evaluate(gt=gt, pred=pred, metrics=["dice", "nsd", "hd95"], spacing=(1.0, 1.0, 2.0), nsd_tolerance=2.0)
    assert f"{result.cc['dice']:.3f}" in out and f"{result.standard['hd95']:.3f}" in out
    assert f"{result.n_components} GT lesions" in out


def test_synthetic_case_follows_its_recipe():
    from ccmetrics import label_components
    from ccmetrics.synthetic import lesion_case

    gt, pred = lesion_case((80, 80, 60), n_lesions=10, radius_range=(2, 6), n_false_positives=3, seed=0)
    n = label_components(gt)[1]
    assert 7 <= n <= 10  # lesions may merge
    # every fifth lesion is missed: at least one GT component has no prediction at all
    labels, _ = label_components(gt)
    hit = np.unique(labels[pred & gt])
    assert len(hit[hit > 0]) < n


def test_shipped_example_data_equal_the_script(tmp_path):
    import runpy

    from ccmetrics.formats.io import load_image

    script = runpy.run_path(str(ROOT / "examples" / "make_example_data.py"))
    script["main"](tmp_path)
    for folder in ("gt", "pred", "pred_b"):
        shipped = sorted(p.name for p in (ROOT / "examples" / "data" / folder).iterdir())
        assert shipped == sorted(p.name for p in (tmp_path / folder).iterdir())
        for name in shipped:
            a, b = load_image(ROOT / "examples" / "data" / folder / name), load_image(tmp_path / folder / name)
            assert np.array_equal(a.array, b.array) and a.spacing == b.spacing == (2.0, 2.0, 3.0)
            assert np.allclose(a.affine, b.affine)
    assert not (ROOT / "examples" / "data" / "pred" / "case_005.nii.gz").exists()  # the missing prediction


def test_readme_first_command_prints_what_the_readme_shows(tmp_path, capsys):
    """The README's set-up command 1 (its `ccmetrics evaluate` part) prints the text shown there, timing aside."""
    import os
    import re
    import shlex

    from ccmetrics.cli import main

    readme = (ROOT / "README.md").read_text()
    command = re.search(r"pip install -e \. && (ccmetrics evaluate [^\n]+)", readme).group(1)
    argv = shlex.split(command)[1:]
    shown = re.search(r"```text\n(6 cases in .*?)\n```", readme, re.S).group(1)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for src in ("gt", "pred"):  # the command's relative paths, in a scratch folder
            (tmp_path / "examples" / "data").mkdir(parents=True, exist_ok=True)
            os.symlink(ROOT / "examples" / "data" / src, tmp_path / "examples" / "data" / src)
        assert main(argv) == 0
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr().out.strip()
    timing = re.compile(r"in \d+\.\d s")
    assert timing.sub("in _ s", printed) == timing.sub("in _ s", shown.strip())
    assert (tmp_path / "results" / "plots" / "metric_vs_volume_dice.png").is_file()


def test_docs_nuclei_snippet_and_output(capsys, tmp_path):
    import re
    import runpy
    import sys

    from ccmetrics import nuclei
    from ccmetrics.nuclei.synthetic import nuclei_tile

    # the attributes the documentation's snippet uses exist and hold what it says
    gt_inst, gt_class, pred_inst, pred_class = nuclei_tile((128, 128), n_nuclei=40, seed=0)
    r = nuclei.evaluate(
        gt_inst, gt_class, pred_inst, pred_class, matching_rule="centroid", ignore_mask=np.zeros((128, 128), bool)
    )
    for name in ("confusion", "detection", "classification", "segmentation", "pq", "cc", "per_pair", "per_class"):
        assert getattr(r, name) is not None, name
    page = (ROOT / "docs" / "tutorials" / "nuclei.md").read_text()
    shown = re.search(r"```text\n(Synthetic tile .*?)\n```", page, re.S).group(1)
    argv = sys.argv
    sys.argv = ["nuclei.py", "--out", str(tmp_path / "nuclei.png")]
    try:
        runpy.run_path(str(ROOT / "examples" / "nuclei.py"), run_name="__main__")
    finally:
        sys.argv = argv
    assert capsys.readouterr().out.strip() == shown.strip()


def test_detection_rules_example_hand_computed(capsys):
    namespace = runpy.run_path(str(ROOT / "examples" / "detection_rules.py"))
    r = namespace["r"]  # the dice:0.7 result
    # lesion 1: 10 voxels, union of two components (3 + 2 voxels) inside it: Dice 10/15 < 0.7; lesion 2: 8/10
    assert r.per_component["detected"].tolist() == [False, True]
    assert r.per_component["n_pred"].tolist() == [2, 1] and r.per_component["split"].tolist() == [True, False]
    assert r.per_prediction["best_iou"].tolist() == pytest.approx([0.3, 0.2, 4 / 6])
    assert r.case_scores["precision"] == pytest.approx(1 / 3) and r.case_scores["sensitivity"] == 0.5
    out = capsys.readouterr().out
    assert "iou:0.5      detected [True, True]" in out and "coverage:0.6 detected [False, True]" in out


def test_dicom_example_without_pydicom_names_the_extra(tmp_path):
    # sys.modules[name] = None makes the package unimportable, as on a machine without it
    code = (
        "import sys, runpy; sys.modules['pydicom'] = None; "
        f"sys.argv = ['make_dicom_example.py', {str(tmp_path / 'out')!r}]; "
        f"runpy.run_path({str(ROOT / 'examples' / 'make_dicom_example.py')!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert 'needs pydicom: install the dicom extra, pip install -e ".[dicom]"' in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()
