"""examples/nuclei.py: the printed report equals values recomputed here by brute force, and the figure is written."""

import contextlib
import io
import re
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

import ccmetrics
from ccmetrics.nuclei.synthetic import nuclei_tile

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "nuclei.py"
CROSS = ndimage.generate_binary_structure(2, 1)
TOL3, TOL2 = 6e-4, 6e-3  # numbers printed with 3 and 2 decimals


def _numbers(line):
    return [float(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)", line)]  # not the 1 of F1


def _line(lines, start):
    found = [ln for ln in lines if ln.startswith(start)]
    assert found, f"no line starting with {start!r}"
    return found[0]


def _hd95(a, b):
    """MONAI's HD95 of two masks: edges = mask XOR erosion (cross), larger of the directed 95th percentiles."""
    ea = np.argwhere(a & ~ndimage.binary_erosion(a, CROSS))
    eb = np.argwhere(b & ~ndimage.binary_erosion(b, CROSS))
    d = np.sqrt(((ea[:, None, :] - eb[None, :, :]) ** 2).sum(-1))
    return max(np.quantile(d.min(axis=1), 0.95), np.quantile(d.min(axis=0), 0.95))


def _brute_force(gt, pred):
    """Loop over the GT nuclei and every prediction whose box meets theirs (others have IoU 0).

    Returns the GT and predicted labels, the pairs with IoU > 0.5 -> (IoU, HD95), and the centroid-rule
    matches -> IoU (the best-overlapping prediction, ties to the lowest label, whose rounded centroid lies
    in the GT nucleus).
    """
    gl = [int(v) for v in np.unique(gt[gt > 0])]
    pl = np.array([int(v) for v in np.unique(pred[pred > 0])])
    p_objects = ndimage.find_objects(pred)
    p_box = np.array([[s.start, s.stop, t.start, t.stop] for s, t in (p_objects[k - 1] for k in pl)])
    p_window = dict(zip(pl.tolist(), p_box.tolist()))
    ys, xs = np.nonzero(pred)
    labels = pred[ys, xs]
    n = np.maximum(np.bincount(labels), 1)
    cy, cx = np.bincount(labels, ys) / n, np.bincount(labels, xs) / n
    p_centroid = {int(k): (int(np.floor(cy[k] + 0.5)), int(np.floor(cx[k] + 0.5))) for k in pl}  # rounded half up
    iou_pairs, centroid_pairs = {}, {}
    boxes = ndimage.find_objects(gt)
    for g in gl:
        r, c = boxes[g - 1]
        near = pl[(p_box[:, 0] < r.stop) & (p_box[:, 1] > r.start) & (p_box[:, 2] < c.stop) & (p_box[:, 3] > c.start)]
        best, best_iou = None, 0.0
        for p in near:
            r0, r1, c0, c1 = p_window[int(p)]
            win = (slice(min(r.start, r0), max(r.stop, r1)), slice(min(c.start, c0), max(c.stop, c1)))
            a, b = gt[win] == g, pred[win] == p
            inter = int((a & b).sum())
            if inter == 0:
                continue
            iou = inter / int((a | b).sum())
            if iou > 0.5:
                iou_pairs[(g, int(p))] = (iou, _hd95(a, b))
            if iou > best_iou:  # near is sorted: ties go to the lowest prediction label
                best, best_iou = int(p), iou
        if best is not None and gt[p_centroid[best]] == g:
            centroid_pairs[(g, best)] = best_iou
    return gl, [int(k) for k in pl], iou_pairs, centroid_pairs


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig") / "nuclei.png"
    saved = sys.argv
    sys.argv = [str(SCRIPT), "--out", str(out)]
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            namespace = runpy.run_path(str(SCRIPT), run_name="__main__")
    finally:
        sys.argv = saved
    return buf.getvalue(), namespace, out


def test_tile_is_what_the_example_says():
    from_script = runpy.run_path(str(SCRIPT))
    tile = from_script["TILE"]
    assert tile["n_classes"] == 4 and tile["split_rate"] > 0 and tile["boundary_noise"] > 0
    gt, gc, pred, pc = nuclei_tile(**tile)
    assert len(np.unique(gt[gt > 0])) >= 300  # hundreds of nuclei
    # touching: many pairs of different GT nuclei are 4-neighbours
    a, b = gt[:, :-1].ravel(), gt[:, 1:].ravel()
    touching = {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist()) if x and y and x != y}
    assert len(touching) > 100
    assert set(gc.values()) == {1, 2, 3, 4}
    # deterministic
    gt2, _, pred2, pc2 = nuclei_tile(**tile)
    assert np.array_equal(gt, gt2) and np.array_equal(pred, pred2) and pc == pc2


def test_synthetic_prediction_errors():
    """nuclei_tile's over-segmentation and one-pixel boundary noise (off by default: the same tile as before)."""
    base = dict(shape=(200, 200), n_nuclei=60, seed=3)
    gt, gc, pred, pc = nuclei_tile(**base)
    gt0, gc0, pred0, pc0 = nuclei_tile(**base, split_rate=0.0, boundary_noise=0.0)
    assert np.array_equal(gt, gt0) and np.array_equal(pred, pred0) and (gc, pc) == (gc0, pc0)

    gt1, gc1, split, split_cls = nuclei_tile(**base, split_rate=1.0)
    assert np.array_equal(gt, gt1) and gc == gc1
    assert np.array_equal(split > 0, pred > 0)  # the same pixels, cut into more nuclei
    sizes = np.bincount(pred.ravel())
    n_big = int((sizes[1:] >= 8).sum())
    assert len(np.unique(split)) - len(np.unique(pred)) == n_big  # every nucleus of 8 px or more cut in two
    for new in set(split_cls) - set(pc):
        parent = np.unique(pred[split == new])
        assert len(parent) == 1 and split_cls[new] == pc[int(parent[0])]

    _, _, noisy, noisy_cls = nuclei_tile(**base, boundary_noise=0.3)
    assert noisy_cls == pc
    padded = np.pad(pred, 1)
    on_boundary = (
        (padded[:-2, 1:-1] != pred)
        | (padded[2:, 1:-1] != pred)
        | (padded[1:-1, :-2] != pred)
        | (padded[1:-1, 2:] != pred)
    )
    changed = noisy != pred
    assert changed.sum() > 100 and on_boundary[changed].all()  # only pixels on either side of an outline
    grown = changed & (pred == 0)
    assert (noisy[changed & (pred > 0)] == 0).all() and (noisy[grown] > 0).all()


def test_report_equals_brute_force(run):
    out, namespace, _ = run
    lines = out.splitlines()
    assert len(lines) <= 45
    gt, gc, pred, pc = nuclei_tile(**namespace["TILE"])
    gl, pl, pairs, centroid_pairs = _brute_force(gt, pred)
    # IoU > 0.5 pairs are one-to-one
    assert len({g for g, _ in pairs}) == len(pairs) == len({p for _, p in pairs})
    tp, fp, fn = len(pairs), len(pl) - len(pairs), len(gl) - len(pairs)
    assert f"{len(gl)} GT nuclei of 4 classes, {len(pl)} predicted" in lines[0]

    det = _numbers(_line(lines, "Detection"))
    assert det[:3] == [tp, fp, fn]
    assert det[3:] == pytest.approx([tp / (tp + fp), tp / (tp + fn), 2 * tp / (2 * tp + fp + fn)], abs=TOL3)

    classes = [1, 2, 3, 4]
    cm = np.zeros((5, 5), int)
    for g, p in pairs:
        cm[gc[g], pc[p]] += 1
    for g in set(gl) - {g for g, _ in pairs}:
        cm[gc[g], 0] += 1
    for p in set(pl) - {p for _, p in pairs}:
        cm[0, pc[p]] += 1
    inner = cm[1:, 1:]
    recall = np.diag(inner) / inner.sum(1)
    f1 = 2 * np.diag(inner) / (inner.sum(0) + inner.sum(1))
    cls = _numbers(_line(lines, "Classification"))
    assert cls[0] == tp
    assert cls[1:] == pytest.approx([np.trace(inner) / tp, recall.mean(), f1.mean()], abs=TOL3)

    ious = np.array([v[0] for v in pairs.values()])
    hd95 = np.array([v[1] for v in pairs.values()])
    seg = _numbers(_line(lines, "Segmentation"))
    assert seg[0] == tp
    assert seg[1:3] == pytest.approx([ious.mean(), np.mean(2 * ious / (1 + ious))], abs=TOL3)
    assert seg[3] == pytest.approx(hd95.mean(), abs=TOL2)

    # the confusion matrix as printed
    at = lines.index(_line(lines, "no object "))
    assert _numbers(lines[at]) == cm[0].tolist()
    for k in classes:
        assert _numbers(lines[at + k]) == [k, *cm[k].tolist()]

    # CC-Metrics: ccmetrics.evaluate with the GT nuclei (renumbered in raster order) as Voronoi sites
    _, first = np.unique(gt.ravel(), return_index=True)
    order = np.argsort(first[1:], kind="stable")
    renumber = np.zeros(gt.max() + 1, np.int32)
    renumber[np.array(gl)[order]] = np.arange(1, len(gl) + 1)
    case = ccmetrics.evaluate(pred=pred > 0, gt=renumber[gt], metrics=["dice", "nsd", "hd95"], sites="labels")
    cc = _numbers(_line(lines, "CC-Metrics"))
    assert cc[-3:-1] == pytest.approx([case.cc["dice"], case.cc["nsd"]], abs=TOL3)
    assert cc[-1] == pytest.approx(case.cc["hd95"], abs=TOL2)
    component_class = np.array([gc[g] for g in np.array(gl)[order]])
    cc_dice = case.per_component["dice"].to_numpy()

    # PQ: class-agnostic from the brute force and from ccmetrics.panoptic_quality; per class, the IoU > 0.5 pairs
    # of the same class (they are the pairs of a matching within the class), and ccmetrics.multiclass_pq
    rq = tp / (tp + fp / 2 + fn / 2)
    pq = ccmetrics.panoptic_quality(pred=pred, gt=gt, instances=True)
    assert pq.pq == pytest.approx(ious.mean() * rq) and (pq.tp, pq.fp, pq.fn) == (tp, fp, fn)
    lut_g, lut_p = np.zeros(gt.max() + 1, int), np.zeros(pred.max() + 1, int)
    lut_g[list(gc)], lut_p[list(pc)] = list(gc.values()), list(pc.values())
    mpq = ccmetrics.multiclass_pq(pred=[pred], pred_classes=[lut_p[pred]], gt=[gt], gt_classes=[lut_g[gt]], n_classes=4)
    for k in classes:
        n_gt, n_pred = sum(gc[g] == k for g in gl), sum(pc[p] == k for p in pl)
        iou_k = [v[0] for (g, p), v in pairs.items() if gc[g] == pc[p] == k]
        tp_k = len(iou_k)
        sq_k, rq_k = np.mean(iou_k), tp_k / (tp_k + (n_pred - tp_k) / 2 + (n_gt - tp_k) / 2)
        assert mpq.per_class.loc[k, "pq"] == pytest.approx(sq_k * rq_k)
        seg_k = [v for (g, _), v in pairs.items() if gc[g] == k]  # segmentation: matched pairs by GT class
        row = _numbers(_line(lines, f"{k:>5} "))
        assert row[:3] == [k, n_gt, n_pred]
        assert row[3:5] == pytest.approx([f1[k - 1], np.mean([v[0] for v in seg_k])], abs=TOL3)
        assert row[5] == pytest.approx(np.mean([v[1] for v in seg_k]), abs=TOL2)
        assert row[6:] == pytest.approx([cc_dice[component_class == k].mean(), sq_k * rq_k, sq_k, rq_k], abs=TOL3)
    row = _numbers(_line(lines, "  all "))
    assert row[:2] == [len(gl), len(pl)]
    assert row[2:4] + row[5:] == pytest.approx(
        [f1.mean(), ious.mean(), case.cc["dice"], ious.mean() * rq, ious.mean(), rq], abs=TOL3
    )
    assert row[4] == pytest.approx(hd95.mean(), abs=TOL2)
    assert _numbers(_line(lines, "mPQ"))[0] == pytest.approx(mpq.pq, abs=TOL3)

    # centroid rule
    c_tp = len(centroid_pairs)
    c_fp, c_fn = len(pl) - c_tp, len(gl) - c_tp
    c_iou = np.mean(list(centroid_pairs.values()))
    centroid = _numbers(lines[lines.index(_line(lines, "Centroid rule")) + 1])
    assert centroid[:3] == [c_tp, c_fp, c_fn]
    assert centroid[3:6] == pytest.approx(
        [2 * c_tp / (2 * c_tp + c_fp + c_fn), c_iou, c_iou * c_tp / (c_tp + c_fp / 2 + c_fn / 2)], abs=TOL3
    )
    assert c_tp > tp  # the centroid rule still matches nuclei that over-segmentation cost under IoU > 0.5

    assert f"GeoJSON (QuPath): {len(pl)} detections written" in out
    assert "read back: the same instances and classes" in out


def test_figure_is_written(run):
    from matplotlib.image import imread

    _, namespace, out = run
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 200_000
    img = imread(str(out))
    assert img.shape[:2] == (671, 1210)
    rgb = img[..., :3]
    for _, colour in namespace["STATUS"].values():  # every match status is drawn
        assert (np.abs(rgb - np.array(colour)).max(axis=-1) < 0.01).sum() > 100
    assert namespace["FIGURE"] == ROOT / "examples" / "figures" / "nuclei.png"
