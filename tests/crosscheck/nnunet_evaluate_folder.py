"""Cross-check ``nnunet_summary.json`` against nnU-Net's own evaluation code, key for key and bit for bit.

Not part of the test suite (nnU-Net v2 pulls torch, blosc2 and more); ``tests/formats/test_nnunet.py`` holds a
re-implementation of nnU-Net's definitions instead. This script runs the real thing:

1. the keys: for dataset.json label sets written every way nnU-Net accepts them (an int label, a list of one
   label such as ``[3]`` as nnU-Net's BraTS conversion writes it, a list of several, the same as tuples, with
   and without a region of several labels), the keys and their order in ccmetrics' ``nnunet_summary`` equal
   ``label_or_region_to_key`` of ``LabelManager.foreground_regions`` (a data set with a region of two or more
   labels) or ``foreground_labels`` (any other), the list ``compute_metrics_on_folder2`` evaluates;
2. end to end, for a region-based dataset.json (``[1, 2, 3]``, ``[2, 3]``, ``[3]``, ``1``, ignore label 4) and
   a label-based one (``2``, ``3``, ``[1]`` in that order, ignore label 4): writes 72 BraTS-like cases with varied
   degradations (shifted and noisy predictions, a label absent from both files so that Dice is NaN, a missed
   label, empty predictions, empty ground truths, swapped labels, perfect predictions; some case names sort
   differently from their file names), runs ``ccmetrics evaluate GT PRED --dataset-json dataset.json
   --nnunet-summary`` and nnU-Net's ``nnUNetv2_evaluate_folder`` code (``compute_metrics_on_folder2``:
   SimpleITK reader, LabelManager, ``np.nanmean`` per key, ``np.mean`` over the keys), and compares the keys
   exactly, the cases in order, and every ``Dice``, ``IoU``, ``TP``, ``FP``, ``FN``, ``TN``, ``n_pred`` and
   ``n_ref`` per case and key, of ``mean`` and of ``foreground_mean`` as identical: the same type and, for
   floats, the same bits (``float.hex``), NaN where nnU-Net writes NaN.

It also counts the means where a plain mean of the finite values in case-name order (ccmetrics' computation
before it followed nnU-Net's) differs from nnU-Net's: the data make the averaging order matter.

Run with nnU-Net importable, from the repository root, e.g. with nnunetv2 2.8.1 unpacked in ``/tmp/nnu/lib``
and stubs for the modules it imports but these checks never use (``blosc2``, ``skimage.io``, ``tifffile``,
``dynamic_network_architectures.building_blocks.helper``) in ``/tmp/nnu/stub``::

    PYTHONPATH=/tmp/nnu/lib:/tmp/nnu/stub python tests/crosscheck/nnunet_evaluate_folder.py
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "formats"))

from test_nnunet import brats_case, degrade, write_nifti  # noqa: E402

CASES = 72
KEYS = ("Dice", "IoU", "FP", "TP", "FN", "TN", "n_pred", "n_ref")

# label sets as Python dicts: tuples cannot be written to JSON, so these are checked through the Python API
KEY_FORMS: list[dict[str, Any]] = [
    {"background": 0, "a": 1, "b": 2},
    {"background": 0, "b": 2, "a": 1, "c": 3},
    {"background": 0, "b": 2, "a": [1], "c": 3, "ignore": 4},
    {"background": 0, "a": (1,), "b": 2},
    {"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3], "enhancing tumor": 3},
    {"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3], "enhancing tumor": [3], "ignore": 4},
    {"background": 0, "whole tumor": (1, 2, 3), "tumor core": (2, 3), "enhancing tumor": (3,)},
    {"background": 0, "x": [3, 1, 2], "y": [2], "z": 1},
    {"background": 0, "kidney": [1, 2], "tumour": (2,), "cyst": 3},
]

DATASETS: dict[str, dict[str, Any]] = {
    "regions": {
        "labels": {
            "background": 0,
            "whole tumor": [1, 2, 3],
            "tumor core": [2, 3],
            "enhancing tumor": [3],
            "edema": 1,
            "ignore": 4,
        },
        "regions_class_order": [1, 2, 3, 1],
        "file_ending": ".nii.gz",
    },
    "labels": {
        "labels": {"background": 0, "core": 2, "enhancing": 3, "edema": [1], "ignore": 4},
        "file_ending": ".nii.gz",
    },
}


def identical(a: Any, b: Any) -> bool:
    """Same type and value; floats bit for bit (``float.hex``: NaN equals NaN, -0.0 differs from 0.0)."""
    if type(a) is not type(b):
        return False
    return a.hex() == b.hex() if isinstance(a, float) else a == b


def nnunet_keys(labels: dict[str, Any]) -> list[str]:
    """nnU-Net's keys, in its order, for a ``labels`` dict: what ``compute_metrics_on_folder2`` evaluates."""
    from nnunetv2.evaluation.evaluate_predictions import label_or_region_to_key
    from nnunetv2.utilities.label_handling.label_handling import LabelManager

    regions = any(isinstance(v, (list, tuple)) and len(v) > 1 for v in labels.values())
    n = sum(k not in ("background", "ignore") for k in labels)
    manager = LabelManager(labels, regions_class_order=list(range(1, n + 1)) if regions else None)
    evaluated = manager.foreground_regions if manager.has_regions else manager.foreground_labels
    return [label_or_region_to_key(r) for r in evaluated]


def ccmetrics_keys(labels: dict[str, Any]) -> list[str]:
    """The keys, in order, of ``mean`` in ccmetrics' ``nnunet_summary`` for the classes of a ``labels`` dict."""
    from ccmetrics import schema
    from ccmetrics.formats.nnunet import nnunet_summary
    from ccmetrics.metrics.classes import parse_classes

    classes = parse_classes({k: v for k, v in labels.items() if k not in ("background", "ignore")})
    rows = [
        {
            schema.CASE: "c",
            schema.CLASS: c.value,
            schema.STATUS: schema.OK,
            schema.FLAGS: "",
            schema.ERROR: "",
            schema.GT_FILE: "gt/c.nii.gz",
            schema.PRED_FILE: "pred/c.nii.gz",
            **{k: 1 for k in (schema.TP_VOXELS, schema.FP_VOXELS, schema.FN_VOXELS, schema.TN_VOXELS)},
        }
        for c in classes
    ]
    summary = nnunet_summary(pd.DataFrame(rows), {"classes": [c.to_dict() for c in classes]}, [])
    return list(summary["mean"])


def check_keys() -> int:
    failures = 0
    for labels in KEY_FORMS:
        theirs, ours = nnunet_keys(labels), ccmetrics_keys(labels)
        failures += ours != theirs
        print(f"  {'ok' if ours == theirs else 'DIFFERENT':9} {labels}: nnU-Net {theirs}, ccmetrics {ours}")
    return failures


def write_cases(gt_dir: Path, pred_dir: Path) -> None:
    """72 cases, nine kinds of prediction; three case names (``BraTS_004-b`` ...) whose files sort before the
    file of the case named as their prefix (``-`` < ``.``) although the names sort after it."""
    for i in range(CASES):
        gt = brats_case(100 + i, ignore=4 if i % 3 else None)
        pred = degrade(brats_case(100 + i), 200 + i)
        rng = np.random.default_rng(300 + i)
        kind = i % 9
        if kind == 1:  # label 3 absent from both: Dice of 3 and (3,) NaN
            gt[gt == 3], pred[pred == 3] = 2, 2
        elif kind == 2:  # label 3 missed
            pred[pred == 3] = 2
        elif kind == 3:  # an empty prediction
            pred[:] = 0
        elif kind == 4:  # an empty ground truth (ignore slab kept): NaN where the prediction is empty too
            gt[np.isin(gt, [1, 2, 3])] = 0
            pred[:] = 0
            if i % 2:
                pred[rng.random(pred.shape) < 0.002] = 1
        elif kind == 5:  # labels 1 and 2 swapped
            pred = np.where(pred == 1, 2, np.where(pred == 2, 1, pred)).astype(np.uint8)
        elif kind == 6:  # perfect outside the ignored voxels
            pred = np.where(gt == 4, 0, gt).astype(np.uint8)
        elif kind == 7:  # shifted far
            pred = np.roll(pred, int(rng.integers(3, 6)), axis=0)
        elif kind == 8:  # noisy
            noise = rng.random(pred.shape) < 0.05
            pred[noise] = rng.integers(0, 4, int(noise.sum()))
        name = f"BraTS_{i - 1:03d}-b" if i in (5, 17, 29) else f"BraTS_{i:03d}"
        write_nifti(gt_dir / f"{name}.nii.gz", gt)
        write_nifti(pred_dir / f"{name}.nii.gz", pred)


def compare(ours: dict[str, Any], theirs: dict[str, Any], keys: list[str]) -> tuple[int, list[tuple[Any, ...]]]:
    """Every value nnU-Net writes, against ours: (values compared, differences)."""
    compared, differences = 0, []

    def check(where: str, key: str, name: str, a: Any, b: Any) -> None:
        nonlocal compared
        compared += 1
        if not identical(a, b):
            differences.append((where, key, name, a, b))

    if list(ours["mean"]) != keys:
        differences.append(("keys of mean, in order", "", "", list(ours["mean"]), keys))
    names = [Path(c["prediction_file"]).name for c in theirs["metric_per_case"]]
    by_name = {Path(c["prediction_file"]).name: c for c in ours["metric_per_case"]}
    if list(by_name) != names:
        moved = [(a, b) for a, b in zip(by_name, names) if a != b]
        differences.append(("case order", "", "", f"{len(moved)} places differ, e.g. ours, nnU-Net's", moved[:2]))
    for b in theirs["metric_per_case"]:  # each case against ours of the same file, whatever the order
        name = Path(b["prediction_file"]).name
        a = by_name[name]
        if sorted(a["metrics"]) != sorted(b["metrics"]):
            differences.append((name, "keys", "", sorted(a["metrics"]), sorted(b["metrics"])))
            continue
        for key, values in b["metrics"].items():
            for m in KEYS:
                check(name, key, m, a["metrics"][key][m], values[m])
    if sorted(ours["mean"]) != sorted(theirs["mean"]):
        differences.append(("mean", "keys", "", sorted(ours["mean"]), sorted(theirs["mean"])))
    else:
        for key, values in theirs["mean"].items():
            for m in KEYS:
                check("mean", key, m, ours["mean"][key][m], values[m])
    for m in KEYS:
        check("foreground_mean", "", m, ours["foreground_mean"][m], theirs["foreground_mean"][m])
    return compared, differences


def order_matters(theirs: dict[str, Any]) -> int:
    """Means of nnU-Net's summary that a plain mean of the finite values in case-name order would miss."""
    cases = sorted(theirs["metric_per_case"], key=lambda c: Path(c["prediction_file"]).name.split(".")[0])
    count = 0
    for key, values in theirs["mean"].items():
        for m in KEYS:
            column = np.array([c["metrics"][key][m] for c in cases], dtype=float)
            finite = column[~np.isnan(column)]
            count += finite.size > 0 and float(finite.mean()) != values[m]
    return count


def check_dataset(kind: str, doc: dict[str, Any], root: Path) -> int:
    from nnunetv2.evaluation.evaluate_predictions import compute_metrics_on_folder2

    gt_dir, pred_dir = root / kind / "labelsTr", root / kind / "pred"
    gt_dir.mkdir(parents=True)
    pred_dir.mkdir()
    write_cases(gt_dir, pred_dir)
    dataset_json, plans = root / kind / "dataset.json", root / kind / "plans.json"
    dataset_json.write_text(json.dumps(doc))
    plans.write_text("{}")  # nnU-Net reads only the label manager's class from the plans (none: LabelManager)
    out = root / kind / "ccmetrics"
    cmd = [sys.executable, "-m", "ccmetrics", "evaluate", str(gt_dir), str(pred_dir), "--out", str(out)]
    cmd += ["--dataset-json", str(dataset_json), "--nnunet-summary", "--metrics", "dice,detection"]
    cmd += ["--quiet", "--no-plots"]
    subprocess.run(cmd, check=True, capture_output=True)
    ours = json.loads((out / "nnunet_summary.json").read_text())
    summary = root / kind / "nnunet_summary.json"
    compute_metrics_on_folder2(str(gt_dir), str(pred_dir), str(dataset_json), str(plans), str(summary), 1)
    theirs = json.loads(summary.read_text())  # as nnU-Net writes it (keys as text, sort_keys)
    keys = nnunet_keys(doc["labels"])
    compared, differences = compare(ours, theirs, keys)
    nan_dice = sum(math.isnan(c["metrics"][k]["Dice"]) for c in theirs["metric_per_case"] for k in keys)
    means = len(keys) * len(KEYS) + len(KEYS)
    mean_differences = sum(d[0] in ("mean", "foreground_mean") for d in differences)
    print(
        f"{kind}: keys {keys}; {compared} values compared ({len(theirs['metric_per_case'])} cases x {len(keys)} "
        f"keys x {len(KEYS)} + {means} means; {nan_dice} Dice NaN), {len(differences)} different "
        f"({mean_differences} of the {means} means); a plain mean of the finite values in case-name order "
        f"would miss {order_matters(theirs)} of nnU-Net's {len(keys) * len(KEYS)} per-key means"
    )
    for d in differences[:12]:
        print("  ", d)
    if len(differences) > 12:
        print(f"   ... and {len(differences) - 12} more")
    return len(differences)


def main() -> int:
    from importlib.metadata import version

    print(f"nnunetv2 {version('nnunetv2')}, numpy {np.__version__}")
    print("keys for every way of writing labels and regions:")
    failures = check_keys()
    root = Path(tempfile.mkdtemp())
    for kind, doc in DATASETS.items():
        failures += check_dataset(kind, doc, root)
    print("identical" if not failures else "DIFFERENT")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
