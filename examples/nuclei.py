"""Nuclei: detection, classification and segmentation scored apart, next to Panoptic Quality.

A synthetic tissue tile (``ccmetrics.nuclei.synthetic.nuclei_tile``): hundreds of
touching and overlapping nuclei of 4 classes, and a prediction that misses nuclei, swaps
classes, over-segments nuclei and has one-pixel noise on its outlines.  The script prints
the disentangled report of ``ccmetrics.nuclei.evaluate`` (IoU > 0.5 matching, then the
centroid rule for comparison), writes the prediction as QuPath GeoJSON and reads it back,
and draws GT and prediction outlines coloured by match status.

Run: python examples/nuclei.py [--out PATH]   (default: examples/figures/nuclei.png)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from ccmetrics.nuclei import evaluate
from ccmetrics.nuclei.io import NucleiAnnotation, read_geojson, write_geojson
from ccmetrics.nuclei.synthetic import nuclei_tile

FIGURE = Path(__file__).resolve().parent / "figures" / "nuclei.png"
#: the tile: 800 nuclei drawn on 512 x 512 px (later ones on top); the prediction finds 92 % of them (shifted by up
#: to 1 px, axes scaled by 0.9-1.1), gives 80 % the right class, adds 5 % false positives, cuts 8 % of its nuclei
#: in two and flips a quarter of the pixels along its outlines
TILE = dict(
    shape=(512, 512), n_nuclei=800, n_classes=4, seed=0, shift=1, scale=0.1, split_rate=0.08, boundary_noise=0.25
)
CROP = (slice(60, 316), slice(180, 436))  # the part of the tile drawn (256 x 256 px, shown 2 x 2 screen px each)

#: match status -> (label, RGB)
STATUS = {
    1: ("matched, same class", (0.10, 0.62, 0.12)),
    2: ("matched, wrong class", (1.00, 0.55, 0.00)),
    3: ("missed GT nucleus", (0.85, 0.05, 0.10)),
    4: ("false positive", (0.45, 0.20, 0.85)),
}


def make_tile():
    """GT instance map, GT classes {id: class}, predicted instance map, predicted classes."""
    return nuclei_tile(**TILE)


def report(gt, pred, res, res_centroid) -> list:
    """The printed lines."""
    d, c, s, p, cc = res.detection, res.classification, res.segmentation, res.pq, res.cc
    n_gt, n_pred = len(np.unique(gt[gt > 0])), len(np.unique(pred[pred > 0]))
    pc = res.per_class
    lines = [
        f"Synthetic tile {gt.shape[0]} x {gt.shape[1]} px: {n_gt} GT nuclei of {len(res.classes)} classes, "
        f"{n_pred} predicted",
        "(misses, class swaps, over-segmented nuclei, one-pixel noise on the predicted outlines)",
        "",
        "Matching IoU > 0.5, class-agnostic; then each task on its own:",
        f"Detection       TP {d['tp']}  FP {d['fp']}  FN {d['fn']}    precision {d['precision']:.3f}  "
        f"recall {d['recall']:.3f}  F1 {d['f1']:.3f}",
        f"Classification  on the {c['n_matched']} matched nuclei: accuracy {c['accuracy']:.3f}  "
        f"balanced accuracy {c['balanced_accuracy']:.3f}  macro F1 {c['macro_f1']:.3f}",
        f"Segmentation    of the {s['n_pairs']} matched pairs: mean IoU {s['iou']:.3f}  Dice {s['dice']:.3f}  "
        f"HD95 {s['hd95']:.2f} px",
        f"CC-Metrics      GT nuclei as Voronoi sites: CC-Dice {cc['cc_dice']:.3f}  CC-NSD {cc['cc_nsd']:.3f}  "
        f"CC-HD95 {cc['cc_hd95']:.2f} px",
        "",
        "Confusion matrix (rows GT class, columns predicted class; no object = missed / false positive):",
        "GT \\ pred   no object" + "".join(f"{k:>6}" for k in res.classes),
        *(
            f"{name!s:<11}{row[0]:>10}" + "".join(f"{v:>6}" for v in row[1:])
            for name, row in zip(res.confusion.index, res.confusion_matrix.tolist())
        ),
        "",
        "class  n_GT n_pred | cls F1  seg IoU  seg HD95  CC-Dice |    PQ     SQ     RQ",
    ]
    for k in res.classes:
        row = pc.loc[k]
        lines.append(
            f"{k:>5} {int(row['n_gt']):>5} {int(row['n_pred']):>6} | {row['f1']:6.3f} "
            f"{row['seg_iou']:8.3f} {row['seg_hd95']:9.2f} {row['cc_dice']:8.3f} | "
            f"{row['pq']:.3f}  {row['sq']:.3f}  {row['rq']:.3f}"
        )
    lines += [
        f"  all {n_gt:>5} {n_pred:>6} | {c['macro_f1']:6.3f} {s['iou']:8.3f} {s['hd95']:9.2f} {cc['cc_dice']:8.3f} | "
        f"{p['pq']:.3f}  {p['sq']:.3f}  {p['rq']:.3f}   (class-agnostic PQ)",
        f"mPQ (mean of the per-class PQ) {p['mpq']:.3f}.  Class-agnostic PQ = SQ x RQ = mean IoU x detection F1;",
        "per class, a class swap costs the GT class a FN and the predicted class a FP.",
        "",
    ]
    d2, s2, p2 = res_centroid.detection, res_centroid.segmentation, res_centroid.pq
    lines += [
        "Centroid rule (the best-overlapping prediction, if its centroid lies in the GT nucleus):",
        f"Detection       TP {d2['tp']}  FP {d2['fp']}  FN {d2['fn']}    F1 {d2['f1']:.3f};  "
        f"mean IoU {s2['iou']:.3f};  PQ {p2['pq']:.3f}  mPQ {p2['mpq']:.3f}",
    ]
    return lines


def geojson_round_trip(pred, pred_class) -> str:
    """Write the prediction as QuPath GeoJSON, read it back, and say whether it came back unchanged."""
    ids, inverse = np.unique(pred, return_inverse=True)  # ids[0] == 0: background stays 0
    inst = inverse.reshape(pred.shape).astype(np.int32)
    ann = NucleiAnnotation(inst, {i: pred_class[int(ids[i])] for i in range(1, len(ids))}, "prediction")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prediction.geojson")
        class_map = write_geojson(path, ann, object_type="detection")
        size = os.path.getsize(path)
        back = read_geojson(path, pred.shape, class_map)
    same = bool(np.array_equal(back.instances, ann.instances)) and back.classes == ann.classes
    return (
        f"GeoJSON (QuPath): {ann.n_instances} detections written ({size / 1e6:.1f} MB) and read back: "
        f"{'the same instances and classes' if same else 'DIFFERENT instances or classes'}"
    )


def status_maps(res, gt, pred):
    """Per-pixel match status (0 = background, 1..4 as in STATUS) of the GT and of the predicted nuclei."""
    pp = res.per_pair
    tp = pp[pp["match"] == "tp"]
    same = (tp["gt_class"] == tp["pred_class"]).to_numpy()
    gt_lut = np.zeros(int(gt.max()) + 1, np.uint8)
    pred_lut = np.zeros(int(pred.max()) + 1, np.uint8)
    gt_lut[tp["gt_label"].to_numpy(int)] = np.where(same, 1, 2)
    pred_lut[tp["pred_label"].to_numpy(int)] = np.where(same, 1, 2)
    gt_lut[pp.loc[pp["match"] == "fn", "gt_label"].to_numpy(int)] = 3
    pred_lut[pp.loc[pp["match"] == "fp", "pred_label"].to_numpy(int)] = 4
    return gt_lut[gt], pred_lut[pred]


def overlay(inst, status, zoom=2):
    """RGB image, each pixel ``zoom`` x ``zoom``: nuclei filled light and outlined in the colour of their status."""
    padded = np.pad(inst, 1, mode="edge")
    edge = (inst > 0) & (
        (padded[:-2, 1:-1] != inst)
        | (padded[2:, 1:-1] != inst)
        | (padded[1:-1, :-2] != inst)
        | (padded[1:-1, 2:] != inst)
    )
    colours = np.array([(1.0, 1.0, 1.0)] + [rgb for _, rgb in STATUS.values()])
    img = 1.0 - 0.3 * (1.0 - colours[status])  # light fill, white background
    img[edge] = colours[status[edge]]
    return np.repeat(np.repeat(img, zoom, 0), zoom, 1)


def draw(res, gt, pred, path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    gt_status, pred_status = status_maps(res, gt, pred)
    counts = res.per_pair["match"].value_counts()
    tp = res.per_pair[res.per_pair["match"] == "tp"]
    n = {
        1: int((tp["gt_class"] == tp["pred_class"]).sum()),
        2: int((tp["gt_class"] != tp["pred_class"]).sum()),
        3: int(counts.get("fn", 0)),
        4: int(counts.get("fp", 0)),
    }
    width, height = 1210, 671  # figure pixels at dpi 110; each panel is 512 x 512: one tile pixel = 2 x 2
    fig = Figure(figsize=(width / 110, height / 110), dpi=110)
    FigureCanvasAgg(fig)
    rows, cols = CROP
    extent = (cols.start, cols.stop, rows.stop, rows.start)
    for i, (title, inst, status) in enumerate((("Ground truth", gt, gt_status), ("Prediction", pred, pred_status))):
        ax = fig.add_axes((((60, 640)[i]) / width, 110 / height, 512 / width, 512 / height))
        ax.imshow(overlay(inst[CROP], status[CROP]), extent=extent, interpolation="nearest")
        ax.set_title(title, fontsize=12)
        ax.tick_params(labelsize=8)
    handles = [Patch(facecolor=rgb, edgecolor=rgb, label=f"{label} ({n[k]})") for k, (label, rgb) in STATUS.items()]
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=4,
        frameon=False,
        fontsize=10,
        title=f"Match status (IoU > 0.5): counts over the whole {gt.shape[0]} x {gt.shape[1]} px tile, "
        f"{rows.stop - rows.start} x {cols.stop - cols.start} px crop shown",
        title_fontsize=10,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(FIGURE), help="figure file (default: %(default)s)")
    args = parser.parse_args(argv)
    gt, gt_class, pred, pred_class = make_tile()
    res = evaluate(gt=gt, gt_classes=gt_class, pred=pred, pred_classes=pred_class, matching_rule="iou")
    res_centroid = evaluate(
        gt=gt, gt_classes=gt_class, pred=pred, pred_classes=pred_class, matching_rule="centroid", metrics=()
    )
    for line in report(gt, pred, res, res_centroid):
        print(line)
    print(geojson_round_trip(pred, pred_class))
    draw(res, gt, pred, args.out)


if __name__ == "__main__":
    main()
