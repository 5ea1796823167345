"""Bit-exact snapshot of the case-level metrics (and the CC metrics beside them) on ~200 cases.

Run before and after a change of the engine to check that no value moved by one bit::

    python tests/case_level_snapshot.py record /tmp/before.pkl
    python tests/case_level_snapshot.py compare /tmp/before.pkl

The cases: random blobs in 2D and 3D, empty masks, touching lesions, one-voxel lesions, merged and split
components, anisotropic spacing, label maps with classes, predictions forming one large component over
many lesions. Values are kept as exact float hex strings (NaN equals NaN).
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import sys
import warnings

import numpy as np
import pandas as pd
from scipy import ndimage

import ccmetrics
from ccmetrics import detection, evaluate, lesion_dice, match_instances, panoptic_quality

METRICS = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]


def canonical(x):
    """A structure of exact, comparable values (floats as hex, NaN equal to NaN)."""
    if isinstance(x, pd.DataFrame):
        return ("df", list(map(str, x.columns)), list(map(str, x.index)), [canonical(x[c].tolist()) for c in x.columns])
    if isinstance(x, pd.Series):
        return ("series", list(map(str, x.index)), canonical(x.tolist()))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, {f.name: canonical(getattr(x, f.name)) for f in dataclasses.fields(x)})
    if isinstance(x, dict):
        return {str(k): canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [canonical(v) for v in x]
    if isinstance(x, np.ndarray):
        return ("arr", str(x.dtype), canonical(x.tolist()))
    if isinstance(x, (float, np.floating)):
        return ("f", float(x).hex(), type(x).__name__)
    if isinstance(x, (bool, np.bool_)):
        return ("b", bool(x))
    if isinstance(x, (int, np.integer)):
        return ("i", int(x), type(x).__name__)
    return ("o", repr(x))


def _blobs(rng, shape, density, grow, keep=1.0):
    seeds = rng.random(shape) < density
    blobs = ndimage.binary_dilation(seeds, iterations=grow) if grow else seeds
    return blobs & (rng.random(shape) < keep)


def cases():
    """(name, pred, gt, spacing, classes) of every case."""
    out = []
    rng = np.random.default_rng(2024)
    for i in range(60):  # random 3D blobs
        shape = tuple(int(v) for v in rng.integers(8, 36, 3))
        gt = _blobs(rng, shape, float(rng.choice([0.0005, 0.002, 0.01])), int(rng.integers(0, 3)), 0.9)
        shift = tuple(int(v) for v in rng.integers(-2, 3, 3))
        pred = np.roll(gt, shift, axis=(0, 1, 2)) & (rng.random(shape) < 0.9)
        pred |= rng.random(shape) < float(rng.choice([0.0, 0.002, 0.02]))
        spacing = None if i % 3 else tuple(float(v) for v in rng.choice([0.5, 1.0, 1.5, 3.0], 3))
        out.append((f"blobs3d-{i}", pred, gt, spacing, None))
    for i in range(50):  # random 2D blobs
        shape = tuple(int(v) for v in rng.integers(10, 80, 2))
        gt = _blobs(rng, shape, float(rng.choice([0.002, 0.01, 0.03])), int(rng.integers(0, 3)), 0.85)
        pred = np.roll(gt, tuple(int(v) for v in rng.integers(-2, 3, 2)), axis=(0, 1)) & (rng.random(shape) < 0.9)
        pred |= rng.random(shape) < float(rng.choice([0.0, 0.005, 0.05]))
        spacing = None if i % 2 else (float(rng.choice([0.4, 1.0, 2.5])), float(rng.choice([0.7, 1.0])))
        out.append((f"blobs2d-{i}", pred, gt, spacing, None))
    for i in range(20):  # one-voxel lesions on a lattice, random prediction forming big components
        step = int(rng.integers(2, 9))
        shape = (int(rng.integers(20, 70)), int(rng.integers(20, 70)))
        gt = np.zeros(shape, bool)
        gt[step // 2 :: step, step // 2 :: step] = True
        pred = rng.random(shape) < float(rng.choice([0.3, 0.6, 0.8]))
        out.append((f"lattice2d-{i}", pred, gt, None if i % 2 else (1.0, 2.0), None))
    for i in range(10):  # 3D lattices and one big prediction component
        step = int(rng.integers(3, 8))
        shape = tuple(int(v) for v in rng.integers(12, 26, 3))
        gt = np.zeros(shape, bool)
        gt[1::step, 2::step, 1::step] = True
        pred = rng.random(shape) < 0.5
        out.append((f"lattice3d-{i}", pred, gt, None if i % 2 else (2.0, 1.0, 0.5), None))
    # special cases
    z3 = np.zeros((12, 14, 10), bool)
    z2 = np.zeros((15, 17), bool)
    one = z3.copy()
    one[5, 6, 4] = True
    out += [
        ("empty3d", z3, z3, None, None),
        ("empty2d", z2, z2, None, None),
        ("empty-pred", z3, one, None, None),
        ("empty-gt", one, z3, None, None),
        ("one-voxel", one, one, (1.0, 1.0, 2.0), None),
        ("full", np.ones((6, 7, 5), bool), np.ones((6, 7, 5), bool), None, None),
        ("full-vs-one", np.ones((6, 7, 5), bool), one[:6, :7, :5] | False, None, None),
    ]
    touching = np.zeros((20, 20, 20), bool)
    touching[2:6, 2:6, 2:6] = True
    touching[6:9, 2:6, 2:6] = True  # touching blocks: one component
    touching[12:15, 12:15, 12:15] = True
    touching[15, 15, 15] = True  # corner touch
    split = touching.copy()
    split[4, :, :] = False
    merged = ndimage.binary_dilation(touching, iterations=2)
    out += [
        ("touching", touching, touching, None, None),
        ("split", split, touching, None, None),
        ("merged", merged, touching, (1.2, 1.0, 0.8), None),
        ("merged-rev", touching, merged, None, None),
    ]
    bar_gt = np.zeros((10, 10, 40), bool)
    for z in range(2, 38, 6):
        bar_gt[4:6, 4:6, z : z + 2] = True
    bar_pred = np.zeros_like(bar_gt)
    bar_pred[3:7, 3:7, 1:39] = True
    out.append(("bar-over-lesions", bar_pred, bar_gt, None, None))
    out.append(("bar-over-lesions-aniso", bar_pred, bar_gt, (0.5, 0.5, 3.0), None))
    for i in range(25):  # label maps with classes
        shape = (
            tuple(int(v) for v in rng.integers(10, 30, 3)) if i % 2 else tuple(int(v) for v in rng.integers(15, 60, 2))
        )
        gt = _blobs(rng, shape, 0.01, 1, 0.9).astype(np.int16) * rng.integers(1, 4, shape).astype(np.int16)
        gt = ndimage.grey_dilation(gt, size=(2,) * len(shape)) * (gt > 0)
        pred = np.where(rng.random(shape) < 0.85, gt, 0)
        pred = np.where(rng.random(shape) < 0.01, rng.integers(1, 4, shape), pred)
        out.append((f"classes-{i}", pred, gt, None if i % 3 else (1.0,) * len(shape), [1, 2, 3]))
    # border cases: lesions at the image border, dilation clipped
    border = np.zeros((9, 11, 7), bool)
    border[0, 0, 0] = border[8, 10, 6] = border[0, 5, 3] = True
    border[4:6, 10, 2:5] = True
    out.append(("border", np.roll(border, 1, axis=1), border, None, None))
    out.append(("border-2d", np.roll(border[0], 1, axis=0), border[0] | border[8], None, None))
    return out


def _case_record(pred, gt, spacing, classes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if classes is not None:
            rec = {}
            for c, r in evaluate(pred, gt, METRICS, classes=classes, spacing=spacing).items():
                rec[c] = _result(r)
            rec["pq-instances"] = panoptic_quality(pred, gt, instances=True)
            rec["match-centroid"] = match_instances(pred, gt, "centroid")
            rec["match-max_iou"] = match_instances(pred, gt, "max_iou")
            rec["match-iou-0.2"] = match_instances(pred, gt, "iou", 0.2)
            return rec
        rec = {"evaluate": _result(evaluate(pred, gt, METRICS, spacing=spacing))}
        low = 6 if gt.ndim == 3 else 4
        rec["evaluate-conn"] = _result(evaluate(pred, gt, METRICS, spacing=spacing, connectivity=low))
        rec["lesion_dice"] = lesion_dice(pred, gt, spacing=spacing)
        rec["lesion_dice-1-2"] = lesion_dice(pred, gt, spacing=spacing, dilation=1, min_volume=2)
        rec["lesion_dice-0-0"] = lesion_dice(pred, gt, dilation=0, min_volume=0)
        rec["detection"] = detection(pred, gt, spacing=spacing)
        rec["detection-low"] = detection(pred, gt, connectivity=low, volume_connectivity=low)
        rec["pq"] = panoptic_quality(pred, gt)
        rec["pq-low"] = panoptic_quality(pred, gt, connectivity=low, rule="centroid")
        rec["pq-max"] = panoptic_quality(pred, gt, rule="max_iou")
        return rec


def _result(r):
    return {
        "table": r.per_component,
        "cc": r.cc,
        "standard": r.standard,
        "details": r.details,
        "scores": getattr(r, "case_scores", None),
        "n_pred": r.pred_volume,
    }


def snapshot():
    return {name: canonical(_case_record(pred, gt, spacing, classes)) for name, pred, gt, spacing, classes in cases()}


def differences(a, b, path="") -> list[str]:
    if type(a) is not type(b):
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


if __name__ == "__main__":
    mode, where = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:  # force the shared-tree path of the lesions' HD95 (every lesion) to compare it too
        with ccmetrics.engine_config(
            own_tree_from=int(sys.argv[3]), own_tree_import_from=int(sys.argv[3]), compile_tree_from=int(sys.argv[3])
        ):
            now = snapshot()
    else:
        now = snapshot()
    print(len(now), "cases", ccmetrics.__file__, math.nan)
    if mode == "record":
        with open(where, "wb") as f:
            pickle.dump(now, f)
    else:
        with open(where, "rb") as f:
            before = pickle.load(f)
        diffs = differences(before, now)
        print("\n".join(diffs[:40]))
        print("IDENTICAL" if not diffs else f"{len(diffs)} DIFFERENCES")
        sys.exit(1 if diffs else 0)
