"""Cross-check ``nnunet_summary.json`` against nnU-Net's own evaluation code on the same folders.

Not part of the test suite (nnU-Net v2 pulls torch, blosc2 and more); ``tests/formats/test_nnunet.py`` holds a
re-implementation of nnU-Net's definitions instead. This script runs the real thing:

1. writes the BraTS-like data set of ``tests/formats/test_nnunet.py`` (4 cases, regions whole tumour 1+2+3,
   tumour core 2+3, enhancing tumour 3, ignore label 4, one case without label 3) into a temporary folder;
2. runs ``ccmetrics evaluate GT PRED --dataset-json dataset.json --nnunet-summary``;
3. runs ``nnunetv2.evaluation.evaluate_predictions.compute_metrics_on_folder`` (SimpleITK reader, the
   regions and the ignore label as nnU-Net's ``LabelManager`` gives them for this dataset.json);
4. compares every ``Dice``, ``IoU``, ``TP``, ``FP``, ``FN``, ``TN``, ``n_pred``, ``n_ref`` per case and key,
   ``mean`` and ``foreground_mean``, and prints the verdict.

Run with nnU-Net importable, e.g. ``pip install nnunetv2`` in another environment, then from the
repository root: ``python tests/crosscheck/nnunet_evaluate_folder.py``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "formats"))

from test_nnunet import BRATS, brats_case, degrade, write_nifti  # noqa: E402

KEYS = ("Dice", "IoU", "FP", "TP", "FN", "TN", "n_pred", "n_ref")


def same(a, b) -> bool:
    return (isinstance(a, float) and math.isnan(a) and isinstance(b, float) and math.isnan(b)) or a == b


def main() -> int:
    from nnunetv2.evaluation.evaluate_predictions import compute_metrics_on_folder
    from nnunetv2.imageio.simpleitk_reader_writer import SimpleITKIO

    root = Path(tempfile.mkdtemp())
    gt_dir, pred_dir = root / "labelsTr", root / "pred"
    gt_dir.mkdir()
    pred_dir.mkdir()
    for i in range(4):
        gt, pred = brats_case(10 + i, ignore=4), degrade(brats_case(10 + i), 20 + i)
        if i == 3:
            pred[pred == 3] = 2
            gt[gt == 3] = 2
        write_nifti(gt_dir / f"BraTS_{i:03d}.nii.gz", gt)
        write_nifti(pred_dir / f"BraTS_{i:03d}.nii.gz", pred)
    dataset_json = root / "dataset.json"
    dataset_json.write_text(
        json.dumps({"labels": {**BRATS, "ignore": 4}, "regions_class_order": [1, 2, 3], "file_ending": ".nii.gz"})
    )
    out = root / "ccmetrics"
    cmd = [sys.executable, "-m", "ccmetrics", "evaluate", str(gt_dir), str(pred_dir), "--out", str(out)]
    cmd += ["--dataset-json", str(dataset_json), "--nnunet-summary", "--metrics", "dice,detection", "--quiet"]
    subprocess.run(cmd, check=True, capture_output=True)
    ours = json.loads((out / "nnunet_summary.json").read_text())
    compute_metrics_on_folder(
        str(gt_dir),
        str(pred_dir),
        str(root / "nnunet_summary.json"),
        SimpleITKIO(),
        ".nii.gz",
        [(1, 2, 3), (2, 3), 3],
        ignore_label=4,
        num_processes=1,
    )
    theirs = json.loads((root / "nnunet_summary.json").read_text())  # as nnU-Net writes it (keys as text)
    compared, differences = 0, []
    assert len(ours["metric_per_case"]) == len(theirs["metric_per_case"])
    for a, b in zip(ours["metric_per_case"], theirs["metric_per_case"]):
        assert Path(a["prediction_file"]).name == Path(b["prediction_file"]).name
        for key, values in b["metrics"].items():
            for name in KEYS:
                compared += 1
                if not same(a["metrics"][key][name], values[name]):
                    differences.append(
                        (Path(b["prediction_file"]).name, key, name, a["metrics"][key][name], values[name])
                    )
    for key, values in theirs["mean"].items():
        for name in KEYS:
            compared += 1
            if not same(ours["mean"][key][name], values[name]):
                differences.append(("mean", key, name, ours["mean"][key][name], values[name]))
    for name in KEYS:
        compared += 1
        if not same(ours["foreground_mean"][name], theirs["foreground_mean"][name]):
            differences.append(
                ("foreground_mean", "", name, ours["foreground_mean"][name], theirs["foreground_mean"][name])
            )
    nan_cases = sum(math.isnan(c["metrics"]["3"]["Dice"]) for c in theirs["metric_per_case"])
    print(
        f"nnunetv2 {__import__('importlib.metadata').metadata.version('nnunetv2')}: {compared} values compared "
        f"({len(theirs['metric_per_case'])} cases x {len(theirs['mean'])} keys x {len(KEYS)} + means; "
        f"{nan_cases} case(s) with Dice NaN), {len(differences)} different"
    )
    for d in differences[:20]:
        print("  ", d)
    print("identical" if not differences else "DIFFERENT")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
