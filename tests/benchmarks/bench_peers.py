"""Benchmark ccmetrics against its peers: the same cases through each library that computes the same quantity.

Each row of the printed Markdown table is one quantity on one case, computed by ccmetrics and by one peer on the
same arrays, in the same process: both values, whether they agree (within the tolerance stated in the table's
notes) or differ by definition (the reason is given: a known difference of the peer's definition, see
``docs/definitions.md``), and each side's warm time: one call first (imports, numba compilation, caches: not
timed), then the median of ``--repeats`` calls (default 3). The speed-up is the peer's median over ccmetrics'.

Cases (all synthetic and seeded; ``--quick`` makes each smaller, for a smoke run):

1. **whole-body 3D, voxel units**: ``ccmetrics.synthetic.lesion_case`` of 256 x 256 x 160 (quick: 128 x 128 x 80),
   20 lesions (quick: 10), radii 1.5 to 22 x min(shape) / 300 voxels, 3 false-positive balls, no spacing.
   CC-Dice, CC-NSD (tolerance 1 voxel) and CC-HD95 (a region without prediction counts as the image diagonal)
   against the published CCMetrics 0.0.3 classes (one class per quantity; the mean over the GT components);
   CC-Dice against MONAI's ``DiceMetric(per_component=True)``; global Dice, HD95 and NSD against MONAI's
   ``compute_dice``, ``compute_hausdorff_distance(percentile=95)`` and ``compute_surface_dice``; global Dice and
   HD95 against MedPy's ``dc`` and ``hd95``; CC-Dice and CC-HD95 against panoptica's per-region evaluation
   (``per_region_evaluation=True``, ``region_avg_dsc`` and ``region_avg_hd95``).
2. **anisotropic**: the same arrays with a spacing of 0.8 x 0.8 x 3.0 mm: the global metrics against MONAI and
   MedPy with the same spacing; CC-Dice against MONAI's per-component Dice, which has no spacing argument, and
   CC-Dice and CC-HD95 against panoptica's per-region evaluation given ``voxelspacing`` (its values do not
   change with it).
3. **BraTS-like multi-label**: labels 1-3 nested (the GT lesions of case 1 as label 2, their one-voxel shell as 1,
   their cores two voxels in as 3; the same for the prediction), 1 x 1 x 1 mm: per-class global Dice and HD95
   (``evaluate(classes=[1, 2, 3])``) against MONAI on the one-hot label maps (one call for all classes on each
   side). The BraTS-2023 lesion-wise code is not a package: its row says so.
4. **2D nuclei tile**: ``ccmetrics.nuclei.synthetic.nuclei_tile`` of 1000 x 1000 with 700 nuclei (quick:
   512 x 512, 200): panoptic quality of the instance maps (IoU > 0.5) against MONAI's
   ``compute_panoptic_quality`` (PQ timed; SQ and RQ values only) and panoptica's PQ (``NaiveThresholdMatching``
   at IoU > 0.5).
5. **probability maps**: the detection maps of ``bench_detection.py`` (``make_case``: 6 positive cases of
   256 x 256 x 96 and 4 negative ones; quick: 3 + 2 of 96 x 96 x 64): AP, AUROC and the PI-CAI ranking score over
   the cases and the FROC's sensitivity at 1, 4 and 8 false positives per case (picai_eval's
   ``lesion_TPR_at_FPR``: the last FROC point at or below the rate, read from ccmetrics' FROC by that rule),
   ccmetrics (``find_candidates`` + ``match_candidates`` per case + ``detection_curves``, from the probability
   maps) against ``picai_eval.evaluate`` (on the detection maps, made before the timing, with
   ``num_parallel_calls=1``).

A peer that is not installed gives a row "not installed: pip install X". ``pip install -e ".[bench]"`` installs
MONAI, CCMetrics 0.0.3, picai_eval and MedPy; panoptica 2.1.7 pins numpy < 2.3, pandas < 3, rich < 14 and
connected-components-3d < 4, so it is not in the extra (install it in a separate environment for its rows).
Run from the repository root, with the project's virtual environment active::

    python tests/benchmarks/bench_peers.py            # the full cases (minutes: CCMetrics 0.0.3 is slow)
    python tests/benchmarks/bench_peers.py --quick    # smaller cases, about 3 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import math
import os
import platform
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

# measure the working tree's package, installed or not
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

import ccmetrics  # noqa: E402
from ccmetrics.synthetic import lesion_case  # noqa: E402

ANISOTROPIC_SPACING = (0.8, 0.8, 3.0)
NSD_TOLERANCE = 1.0
TOL_OVERLAP = 1e-6  # Dice, NSD, PQ, AP, AUROC: absolute
TOL_DISTANCE = 1e-4  # HD95: relative (MONAI's distances are float32)

# the reasons a peer's value differs by definition (docs/definitions.md)
WHY_TIES = "ties in the Voronoi partition: scan order (peer) against the lowest label (ccmetrics)"
WHY_MONAI_SPACING = "MONAI's per-component Dice ignores spacing (its partition is in voxels)"
WHY_MEDPY_HD95 = (
    "MedPy pools both directions' distances before the 95th percentile; MONAI/ccmetrics take the larger directed one"
)
WHY_PQ_SMOOTH = "MONAI adds 1e-6 to the PQ numerator"
WHY_PANOPTICA_SPACING = "panoptica's per-region evaluation ignores spacing (its values are those in voxels)"
WHY_PANOPTICA_HD95 = (
    "ties in the Voronoi partition (its Dice is the scan-order one); its per-region HD95 not checked further"
)
WHY_PANOPTICA_ZERO_TP = (
    "panoptica has no HD95 for a region without a true positive (a missed lesion: NotImplementedError by default; "
    "here its edge-case handler gives NaN and the mean over regions is NaN), ccmetrics the worst value"
)
WHY_EMPTY_GT = (
    "the GT label is empty: MONAI gives nan (ignore_empty), ccmetrics the worst value (definitions: Empty GT)"
)


@dataclass
class Row:
    case: str
    quantity: str
    peer: str
    ours: float | None = None
    theirs: float | None = None
    verdict: str = ""
    t_ours: float | None = None
    t_peer: float | None = None


ROWS: list[Row] = []


# ----------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def quiet():
    """Peers print banners (picai_eval) and warn about empty masks (MONAI); neither matters here."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def timed(call: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """(the call's result, the median of ``repeats`` timed calls after one untimed warm-up call)."""
    with quiet():
        result = call()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            result = call()
            times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def verdict(ours: float, theirs: float, relative: bool, why: str | None) -> str:
    if math.isinf(ours) and math.isinf(theirs) or (math.isnan(ours) and math.isnan(theirs)):
        return "agree"
    diff = abs(ours - theirs)
    tol = TOL_DISTANCE * max(1.0, abs(theirs)) if relative else TOL_OVERLAP
    if diff <= tol:
        return "agree"
    if why:
        return f"differs by {diff:.3g}; known difference: {why}"
    return f"**DIFFERS by {diff:.3g}, unexplained**"


def add(case, quantity, peer, ours, theirs, t_ours, t_peer, relative=False, why=None) -> None:
    ours, theirs = float(ours), float(theirs)
    ROWS.append(Row(case, quantity, peer, ours, theirs, verdict(ours, theirs, relative, why), t_ours, t_peer))


def missing(case: str, quantity: str, peer: str, text: str) -> None:
    ROWS.append(Row(case, quantity, peer, verdict=text))


def one_hot(mask: np.ndarray, n_classes: int = 2, dtype=None):
    """(1, n_classes, *shape) torch tensor of a label map (bool unless ``dtype``)."""
    import torch

    labels = torch.from_numpy(np.ascontiguousarray(mask).astype(np.int64))
    out = torch.stack([labels == c for c in range(n_classes)]).unsqueeze(0)
    return out if dtype is None else out.to(dtype)


def diagonal(shape, spacing=None) -> float:
    s = np.ones(len(shape)) if spacing is None else np.asarray(spacing, float)
    return float(np.sqrt(np.sum((np.asarray(shape, float) * s) ** 2)))


# ----------------------------------------------------------------------------- cases 1 and 2


def whole_body(shape, n_lesions: int):
    gt, pred = lesion_case(shape, n_lesions=n_lesions, radius_range=(1.5, max(3.0, 22.0 * min(shape) / 300.0)), seed=0)
    return gt, pred


def ours_metric(gt, pred, metric, spacing, repeats: int):
    metrics = [metric] if isinstance(metric, str) else list(metric)
    return timed(
        lambda: ccmetrics.evaluate(gt=gt, pred=pred, metrics=metrics, spacing=spacing, nsd_tolerance=NSD_TOLERANCE),
        repeats,
    )


def bench_volume(case: str, gt, pred, spacing, repeats: int, with_ccmetrics_003: bool) -> None:
    ours = {m: ours_metric(gt, pred, m, spacing, repeats) for m in ("dice", "nsd", "hd95")}
    have_monai = installed("monai") and installed("torch")

    if with_ccmetrics_003:
        if installed("CCMetrics") and installed("torch"):
            from CCMetrics import CCDiceMetric, CCHausdorffDistance95Metric, CCSurfaceDiceMetric

            y_pred, y = one_hot(pred), one_hot(gt)
            classes = {
                "dice": lambda: CCDiceMetric(),
                "nsd": lambda: CCSurfaceDiceMetric(class_thresholds=[NSD_TOLERANCE]),
                "hd95": lambda: CCHausdorffDistance95Metric(metric_worst_score=diagonal(gt.shape)),
            }
            for m, make in classes.items():

                def run(make=make):
                    metric = make()
                    metric(y_pred=y_pred, y=y)
                    return float(np.mean(metric.cc_aggregate(mode="overall").double().numpy()))

                value, t = timed(run, repeats)
                res, t_ours = ours[m]
                add(
                    case,
                    f"CC-{m.upper() if m != 'dice' else 'Dice'}",
                    "CCMetrics 0.0.3",
                    res.cc[m],
                    value,
                    t_ours,
                    t,
                    relative=m == "hd95",
                    why=WHY_TIES,
                )
        else:
            missing(case, "CC-Dice, CC-NSD, CC-HD95", "CCMetrics 0.0.3", "not installed: pip install ccmetrics==0.0.3")

    if have_monai:
        from monai.metrics import DiceMetric, compute_dice, compute_hausdorff_distance, compute_surface_dice

        y_pred, y = one_hot(pred, dtype=None), one_hot(gt, dtype=None)
        yf_pred, yf = y_pred.float(), y.float()

        def per_component():
            metric = DiceMetric(per_component=True)
            metric(y_pred=yf_pred, y=yf)
            return float(metric.aggregate().item())

        try:
            DiceMetric(per_component=True)
        except TypeError:
            missing(case, "CC-Dice", "MONAI DiceMetric(per_component=True)", "not in this MONAI version (1.4+)")
        else:
            value, t = timed(per_component, repeats)
            res, t_ours = ours["dice"]
            why = WHY_MONAI_SPACING if spacing is not None else WHY_TIES
            add(case, "CC-Dice", "MONAI DiceMetric(per_component=True)", res.cc["dice"], value, t_ours, t, why=why)

        sp = None if spacing is None else list(spacing)
        calls = {
            "dice": lambda: float(compute_dice(yf_pred, yf, include_background=False).item()),
            "hd95": lambda: float(
                compute_hausdorff_distance(y_pred, y, include_background=False, percentile=95, spacing=sp).item()
            ),
            "nsd": lambda: float(
                compute_surface_dice(
                    y_pred, y, class_thresholds=[NSD_TOLERANCE], include_background=False, spacing=sp
                ).item()
            ),
        }
        for m, call in calls.items():
            value, t = timed(call, repeats)
            res, t_ours = ours[m]
            add(
                case,
                f"global {m.upper() if m != 'dice' else 'Dice'}",
                "MONAI",
                res.standard[m],
                value,
                t_ours,
                t,
                relative=m == "hd95",
            )
    else:
        missing(case, "CC-Dice, global Dice/HD95/NSD", "MONAI", "not installed: pip install monai")

    if installed("medpy"):
        from medpy.metric import binary as medpy_binary

        value, t = timed(lambda: float(medpy_binary.dc(pred, gt)), repeats)
        res, t_ours = ours["dice"]
        add(case, "global Dice", "MedPy dc", res.standard["dice"], value, t_ours, t)
        value, t = timed(lambda: float(medpy_binary.hd95(pred, gt, voxelspacing=spacing)), repeats)
        res, t_ours = ours["hd95"]
        add(
            case, "global HD95", "MedPy hd95", res.standard["hd95"], value, t_ours, t, relative=True, why=WHY_MEDPY_HD95
        )
    else:
        missing(case, "global Dice, HD95", "MedPy", "not installed: pip install medpy")

    if installed("panoptica"):
        pan, t = timed(lambda: panoptica_regions(gt, pred, spacing), repeats)
        _, t_ours = ours_metric(gt, pred, ("dice", "hd95"), spacing, repeats)
        aniso = spacing is not None
        res = ours["dice"][0]
        why = WHY_PANOPTICA_SPACING if aniso else WHY_TIES
        add(case, "CC-Dice", "panoptica per-region", res.cc["dice"], pan[0], t_ours, t, why=why)
        res = ours["hd95"][0]
        why = WHY_PANOPTICA_ZERO_TP if math.isnan(pan[1]) else WHY_PANOPTICA_SPACING if aniso else WHY_PANOPTICA_HD95
        add(case, "CC-HD95", "panoptica per-region", res.cc["hd95"], pan[1], t_ours, t, True, why)
    else:
        missing(case, "per-region Dice, HD95", "panoptica", "not installed: pip install panoptica")


def panoptica_regions(gt, pred, spacing) -> tuple[float, float]:
    """panoptica's per-region evaluation (its Voronoi regions of the GT's components): mean Dice and HD95."""
    from panoptica import (
        ConnectedComponentsInstanceApproximator,
        InputType,
        Metric,
        NaiveThresholdMatching,
        Panoptica_Evaluator,
    )
    from panoptica.utils.edge_case_handling import EdgeCaseHandler, EdgeCaseResult, MetricZeroTPEdgeCaseHandling

    handling = EdgeCaseHandler().listmetric_zeroTP_handling  # its defaults, and HD95's, which it lacks: NaN
    handling[Metric.HD95] = MetricZeroTPEdgeCaseHandling(
        no_instances_result=EdgeCaseResult.NAN, default_result=EdgeCaseResult.NAN
    )
    evaluator = Panoptica_Evaluator(
        expected_input=InputType.SEMANTIC,
        instance_approximator=ConnectedComponentsInstanceApproximator(),
        instance_matcher=NaiveThresholdMatching(),
        per_region_evaluation=True,
        instance_metrics=[Metric.DSC],
        global_metrics=[Metric.DSC, Metric.HD95],
        edge_case_handler=EdgeCaseHandler(listmetric_zeroTP_handling=handling),
    )
    result = evaluator.evaluate(pred.astype(np.uint8), gt.astype(np.uint8), voxelspacing=spacing, verbose=False)[
        "ungrouped"
    ]
    return float(result.region_avg_dsc), float(result.region_avg_hd95)


def panoptica_pq(gt, pred) -> float:
    """panoptica's PQ of two instance maps, instances matched at IoU > 0.5."""
    from panoptica import InputType, Metric, NaiveThresholdMatching, Panoptica_Evaluator

    evaluator = Panoptica_Evaluator(
        expected_input=InputType.UNMATCHED_INSTANCE,
        instance_matcher=NaiveThresholdMatching(Metric.IOU, 0.5, strict_threshold=True),
        instance_metrics=[Metric.IOU],
        global_metrics=[],
    )
    result = evaluator.evaluate(pred.astype(np.int32), gt.astype(np.int32), verbose=False)["ungrouped"]
    return float(result.pq)


# ----------------------------------------------------------------------------- case 3


def brats_like(gt: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nested labels: the mask as 2, its one-voxel shell as 1, what is two voxels inside it as 3."""
    from scipy import ndimage

    def labels(mask):
        out = np.zeros(mask.shape, np.uint8)
        out[mask] = 2
        out[mask & ~ndimage.binary_erosion(mask)] = 1
        out[ndimage.binary_erosion(mask, iterations=2)] = 3
        return out

    return labels(gt), labels(pred)


def bench_multilabel(case: str, gt, pred, repeats: int) -> None:
    classes = [1, 2, 3]
    ours_dice, t_dice = timed(lambda: ccmetrics.evaluate(gt=gt, pred=pred, metrics=["dice"], classes=classes), repeats)
    ours_hd, t_hd = timed(lambda: ccmetrics.evaluate(gt=gt, pred=pred, metrics=["hd95"], classes=classes), repeats)
    if installed("monai") and installed("torch"):
        from monai.metrics import compute_dice, compute_hausdorff_distance

        y_pred, y = one_hot(pred, 4), one_hot(gt, 4)
        yf_pred, yf = y_pred.float(), y.float()
        dice, t_md = timed(lambda: compute_dice(yf_pred, yf, include_background=False)[0].double().numpy(), repeats)
        hd, t_mh = timed(
            lambda: compute_hausdorff_distance(y_pred, y, include_background=False, percentile=95)[0].double().numpy(),
            repeats,
        )
        for i, c in enumerate(classes):
            why = WHY_EMPTY_GT if not np.any(gt == c) else None
            add(case, f"Dice, label {c}", "MONAI", ours_dice[c].standard["dice"], dice[i], t_dice, t_md, why=why)
            add(case, f"HD95, label {c}", "MONAI", ours_hd[c].standard["hd95"], hd[i], t_hd, t_mh, True, why)
    else:
        missing(case, "per-label Dice, HD95", "MONAI", "not installed: pip install monai")
    missing(case, "lesion-wise Dice, HD95", "BraTS-2023 lesion-wise code", "not packaged (no pip install)")


# ----------------------------------------------------------------------------- case 4


def bench_nuclei(case: str, shape, n_nuclei: int, repeats: int) -> None:
    from ccmetrics.nuclei.synthetic import nuclei_tile

    gt, _, pred, _ = nuclei_tile(shape, n_nuclei=n_nuclei, seed=0)
    ours, t_ours = timed(lambda: ccmetrics.panoptic_quality(gt=gt, pred=pred, instances=True), repeats)
    if installed("monai") and installed("torch"):
        import torch
        from monai.metrics import compute_panoptic_quality

        tg, tp = torch.from_numpy(gt.astype(np.int64)), torch.from_numpy(pred.astype(np.int64))

        def monai_pq(name: str = "pq") -> float:
            return float(compute_panoptic_quality(tp, tg, metric_name=name).item())

        value, t = timed(monai_pq, repeats)
        add(case, "PQ", "MONAI compute_panoptic_quality", ours.pq, value, t_ours, t, why=WHY_PQ_SMOOTH)
        with quiet():  # SQ and RQ: values only (the same matching as PQ; not timed again)
            for name in ("sq", "rq"):
                add(case, name.upper(), "MONAI", getattr(ours, name), monai_pq(name), None, None, why=WHY_PQ_SMOOTH)
    else:
        missing(case, "PQ", "MONAI", "not installed: pip install monai")
    if installed("panoptica"):
        value, t = timed(lambda: panoptica_pq(gt, pred), repeats)
        add(case, "PQ", "panoptica", ours.pq, value, t_ours, t)
    else:
        missing(case, "PQ", "panoptica", "not installed: pip install panoptica")


# ----------------------------------------------------------------------------- case 5


def bench_probability(case: str, shape, n_pos: int, n_neg: int, repeats: int) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_detection import RULE, SEED0, make_case

    from ccmetrics.engine.components import find_sites
    from ccmetrics.metrics.candidates import find_candidates
    from ccmetrics.metrics.detection_curves import detection_curves, match_candidates

    cases = [make_case(shape, SEED0 + i) for i in range(n_pos)]
    cases += [make_case(shape, SEED0 + 10000 + j, n_lesions=0, n_false_positives=24) for j in range(n_neg)]
    ids = [f"case_{i:03d}" for i in range(len(cases))]

    def ours():
        matches = [match_candidates(find_candidates(prob), find_sites(gt), RULE) for gt, prob in cases]
        return detection_curves(matches, case_ids=ids, n_resamples=0)

    curves, t_ours = timed(ours, repeats)
    if not installed("picai_eval"):
        missing(case, "AP, AUROC, score", "picai_eval", "not installed: pip install picai_eval")
        return
    with quiet():
        import picai_eval
    det_maps = [np.ascontiguousarray(find_candidates(prob).detection_map()) for _, prob in cases]
    gts = [gt for gt, _ in cases]
    metrics, t = timed(
        lambda: picai_eval.evaluate(y_det=det_maps, y_true=gts, subject_list=ids, num_parallel_calls=1), repeats
    )
    add(case, "AP", "picai_eval.evaluate", curves.ap, metrics.AP, t_ours, t)
    add(case, "AUROC", "picai_eval.evaluate", curves.auroc, metrics.auroc, t_ours, t)
    add(case, "PI-CAI score", "picai_eval.evaluate", curves.picai_score, metrics.score, t_ours, t)
    for rate in (1.0, 4.0, 8.0):  # the FROC at picai_eval's rule: the last point with at most `rate` FP per case
        fppc, sens = curves.froc_fp_per_case, curves.froc_sensitivity
        ours_step = float(sens[fppc <= rate][-1]) if np.any(fppc <= rate) else 0.0
        theirs = metrics.lesion_TPR_at_FPR(rate)
        add(case, f"FROC sensitivity at {rate:g} FP/case", "picai_eval lesion_TPR_at_FPR", ours_step, theirs, t_ours, t)


# ----------------------------------------------------------------------------- table


def fmt_value(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"


def fmt_time(t: float | None) -> str:
    if t is None:
        return ""
    return f"{1000 * t:.1f} ms" if t < 1 else f"{t:.2f} s"


def table() -> str:
    lines = [
        "| case | quantity | peer | ccmetrics | peer value | agree? | ccmetrics time | peer time | speed-up |",
        "|---|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in ROWS:
        speed = ""
        if r.t_ours and r.t_peer:
            x = r.t_peer / r.t_ours
            speed = f"{x:.0f}×" if x >= 10 else f"{x:.2g}×"
        lines.append(
            f"| {r.case} | {r.quantity} | {r.peer} | {fmt_value(r.ours)} | {fmt_value(r.theirs)} | {r.verdict} | "
            f"{fmt_time(r.t_ours)} | {fmt_time(r.t_peer)} | {speed} |"
        )
    return "\n".join(lines)


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = [f"Python {platform.python_version()}", f"{os.cpu_count()} CPUs"]
    for dist in (
        "ccmetrics-toolkit",
        "numpy",
        "scipy",
        "torch",
        "monai",
        "ccmetrics",
        "picai_eval",
        "medpy",
        "panoptica",
    ):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} not installed")
    return ", ".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller cases (a smoke run)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per measurement (median; default 3)")
    parser.add_argument("--skip-ccmetrics-003", action="store_true", help="do not run the slow CCMetrics 0.0.3")
    args = parser.parse_args(argv)
    from ccmetrics.engine import warm_up

    warm_up()  # every kernel in numba's cache and loaded, as after `ccmetrics warm-up`: warm timings
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    shape = (128, 128, 80) if args.quick else (256, 256, 160)
    n_lesions = 10 if args.quick else 20
    print(versions(), flush=True)
    gt, pred = whole_body(shape, n_lesions)
    size = "×".join(map(str, shape))
    print(f"case 1/5: whole-body {size}, {n_lesions} lesions", flush=True)
    bench_volume(f"whole-body {size}", gt, pred, None, args.repeats, not args.skip_ccmetrics_003)
    print("case 2/5: anisotropic", flush=True)
    sp = "×".join(map(str, ANISOTROPIC_SPACING))
    bench_volume(f"same, {sp} mm", gt, pred, ANISOTROPIC_SPACING, args.repeats, False)
    print("case 3/5: BraTS-like labels", flush=True)
    bench_multilabel(f"BraTS-like {size}, labels 1-3", *brats_like(gt, pred), repeats=args.repeats)
    print("case 4/5: nuclei tile", flush=True)
    tile, n_nuclei = ((512, 512), 200) if args.quick else ((1000, 1000), 700)
    bench_nuclei(f"nuclei {tile[0]}×{tile[1]}, {n_nuclei}", tile, n_nuclei, args.repeats)
    print("case 5/5: probability maps", flush=True)
    pshape, n_pos, n_neg = ((96, 96, 64), 3, 2) if args.quick else ((256, 256, 96), 6, 4)
    bench_probability(f"{n_pos}+{n_neg} maps {'×'.join(map(str, pshape))}", pshape, n_pos, n_neg, args.repeats)

    print()
    print(table())
    print()
    print(
        f"Tolerances: Dice, NSD, PQ, AP, AUROC, score {TOL_OVERLAP:g} absolute; HD95 {TOL_DISTANCE:g} relative. "
        f"Times: median of {args.repeats} calls after one warm-up call, same process; ccmetrics' time is the "
        "`evaluate` call for that metric alone (CC and global values together)."
    )


if __name__ == "__main__":
    main()
