"""Benchmark lesion detection from probability maps: ccmetrics against picai_eval, and a data set against nibabel.

What it measures (all inputs synthetic and seeded; ``--quick`` for a one-minute smoke run):

1. **Per case, on identical inputs** (``--pair-cases`` cases of ``--pair-shape``, default 6 of 256 x 256 x 96,
   built in memory). Case ``i``: ``ccmetrics.synthetic.lesion_case(shape, n_lesions=20, radius_range=(1.5, R),
   n_false_positives=8, seed=SEED0 + i)`` with ``R = max(3, 22 * min(shape) / 300)`` (the default case's lesion
   sizes scaled to the volume), the GT written as uint8 (what a reader returns from a uint8 file; both libraries
   get this same array); its probability map: each 26-connected component of the degraded prediction (16 of the
   20 lesions, shifted and scaled, plus 8 false-positive balls) blurred with a Gaussian of sigma 1.5 voxels inside
   its padded bounding box, scaled to a peak drawn uniformly in [0.05, 0.99] (seeded), the blobs combined by
   their maximum and values below 0.02 set to 0: a smooth float32 map in [0, 1] that is 0 away from the blobs.
   Timed per case, each call alone:

   * picai_eval 1.4: ``evaluate_case(y_det=detection_map, y_true=gt)``, ``detection_map`` being
     ``find_candidates(prob).detection_map()`` (each component of ``prob > 0`` holding its maximum: picai's
     convention; made before the timing); against ccmetrics ``match_candidates(find_candidates(prob),
     find_sites(gt), "iou:0.1")`` on the map itself (candidates, GT labelling and matching included);
   * report_guided_annotation: ``extract_lesion_candidates(prob, threshold="dynamic")`` against
     ``find_candidates(prob, "dynamic")``;
   * the whole-case path a user runs, on the first ``--whole-cases`` cases: ``ccmetrics.evaluate_dataset({case:
     (gt, pred)}, metrics=["dice"], probabilities={case: prob}, candidates="components", progress=False)`` with
     ``pred=None`` (as the issue writes it) and with ``pred=prob > 0.5`` (what the command line segments when it
     has no predictions folder): input checks, dice, candidates, matching and the per-case tables.

   Before any timing the outputs are checked on every case: the lesion entries ``(target, confidence)``, sorted,
   and the case confidence equal picai_eval's exactly, and the dynamic detection maps equal
   report_guided_annotation's voxel for voxel; a difference stops the script. Each of these calls first runs once
   on a small case (imports, numba compilation: not timed). Then ``--repeats`` rounds each time every case once,
   the implementations in turn. Reported: per implementation the median over cases and rounds, with the min and
   max; the ratio per case is picai's median over the rounds / ours, summarised by its median (min - max) over
   cases.

   The curves over these cases and ``--negatives`` cases without lesions (default 4; ``lesion_case`` with
   ``n_lesions=0, n_false_positives=24``, seed ``SEED0 + 10000 + j``: the map holds 24 false-positive blobs,
   about as many peaks as a positive case's, so that the case-level AUROC is neither undefined nor trivially 1;
   checked as above, not timed per case): picai_eval's ``Metrics(lesion_results,
   case_target, case_pred)`` with ``.AP``, ``.auroc`` and ``.score`` read, and its
   ``bootstrap_score_ci(n_bootstraps=--bootstrap, seed=0)``, against ``detection_curves(matches, n_resamples=0)``
   and ``n_resamples=--bootstrap`` (AP, AUROC, picai score, CPM, FROC; intervals of all four); AP, AUROC and the
   score must agree to 1e-9.

2. **A data set of probability maps against nibabel's read** (``--cases`` cases of ``--shape``, default 24 of
   400 x 400 x 300; the issue's target is 200 such cases, whose files and time would exceed the default run:
   the 200-case times printed are ``measured wall x 200 / cases``, a linear extrapolation labelled as such, which
   counts the command's start-up 200 / cases times). Case ``i`` is made as above from ``lesion_case(shape, 20,
   seed=SEED0 + i)`` (lesion radii 1.5-22 voxels) and written, into ``DATA`` (``--data``, default
   ``/tmp/ccmetrics-bench-detection/<shape>``), with a 2 x 2 x 3 mm spacing as
   ``DATA/gt/case_NNNN.nii.gz`` (uint8) and ``DATA/prob/case_NNNN.nii.gz`` (float32), optionally (``--npz``) also
   as nnU-Net's ``DATA/npz/case_NNNN.npz`` (``probabilities``: (2, z, y, x) float32, channel 1 the map, as
   ``nnUNetv2_predict --save_probabilities`` writes), over ``--gen-workers`` processes. Cases already written are
   kept (each file written under a hidden name and renamed); ``DATA/params.json`` records how they were made and
   a folder made otherwise is refused. Timed, ``--dataset-repeats`` times each, alternating:

   * ``python -m ccmetrics evaluate DATA/gt --probabilities DATA/prob --out OUT --metrics dice --workers
     --workers --quiet`` (``ccmetrics evaluate``, from this working tree, plots and the 2000-resample bootstrap
     included: the command's defaults), end to end in a subprocess: interpreter start, imports, pool start, every
     case read and evaluated, tables, summary, plots; and the same with ``--no-plots`` (skipped with
     ``--no-plots-row``), to show what the figures cost;
   * nibabel alone in one process reading every case's two files: ``np.asanyarray(nib.load(path,
     mmap=False).dataobj)`` (the arrays in their stored dtypes, uint8 and float32, no conversion; the loop
     only, without the interpreter start; in a subprocess started before the timing).

   The ratio is ccmetrics' median wall / nibabel's median read time (target: at most 2). Peak memory: a thread
   samples every 0.1 s ``VmHWM`` (the kernel's high-water mark of a process's resident memory) of the command's
   process and of its pool workers (its children running ``spawn_main``); reported: the largest worker peak
   against the map's float32 size. Whether the map is read once, as float32: in this process,
   ``tracemalloc``'s peak of numpy allocations during ``read_probabilities(map, like=gt)`` and during one whole
   case (``evaluate_dataset`` with ``workers=1`` on the first case's files), both as multiples of the map's size.

Machine load: over every timed section the machine's busy CPU time (``/proc/stat``) minus this benchmark's own
(its process and its waited-for children) is CPU taken by other processes; the script warns when it exceeded
10 % of the CPUs while the benchmark got under 90 % of the CPUs it could use, and it checks for 2 s before
starting that the machine is idle. ``--profile`` (automatic when a target is missed) prints the cProfile top
entries of ccmetrics' per-case path (part 1), and of the command's main process (``python -m cProfile -m ccmetrics
evaluate ...``; the workers' time shows there as waiting) and of three data-set cases evaluated in this process
(part 2).

Run from the repository root, with the project's virtual environment active (picai_eval and
report_guided_annotation installed)::

    python tests/benchmarks/bench_detection.py                    # ~7 minutes on 2 cores
    python tests/benchmarks/bench_detection.py --quick            # smoke run, ~1 minute
    python tests/benchmarks/bench_detection.py --cases 200 --dataset-repeats 1 --skip-pairs   # the issue's 200
    python tests/benchmarks/bench_detection.py --npz              # also nnU-Net .npz maps
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

# measure the working tree's package, installed or not
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
from bench_dataset import _cpu_times, _nproc, _status_kib  # noqa: E402  (the same machine measurements)

import ccmetrics  # noqa: E402
from ccmetrics.synthetic import lesion_case  # noqa: E402

N_LESIONS = 20
N_FALSE_POSITIVES = 8
NEGATIVE_BLOBS = 24  # false-positive blobs of a case without lesions: about as many peaks as a positive case's
SIGMA = 1.5
FLOOR = 0.02
PEAK_RANGE = (0.05, 0.99)
SEED0 = 2000
PAIR_SHAPE = (256, 256, 96)
SHAPE = (400, 400, 300)
SPACING = (2.0, 2.0, 3.0)
RULE = "iou:0.1"
TARGET_PER_CASE = 20.0  # picai / ccmetrics per case, at least
TARGET_READ = 2.0  # ccmetrics evaluate wall / nibabel read, at most
ISSUE_CASES = 200
DEFAULT_DATA = "/tmp/ccmetrics-bench-detection"
MIB = 1024 * 1024


# ----------------------------------------------------------------------------- cases


def radius_range(shape) -> tuple[float, float]:
    """``lesion_case``'s default radii (1.5-22 voxels for 400 x 400 x 300), the upper end scaled to the volume."""
    return 1.5, max(3.0, 22.0 * min(shape) / 300.0)


def make_case(
    shape, seed: int, n_lesions: int = N_LESIONS, n_false_positives: int = N_FALSE_POSITIVES
) -> tuple[np.ndarray, np.ndarray]:
    """``(gt, prob)``: the uint8 GT of ``lesion_case`` and a smooth float32 map around its degraded prediction
    (``n_lesions=0``: a negative case, its map holding false-positive blobs only)."""
    from scipy import ndimage

    shape = tuple(int(s) for s in shape)
    gt, pred = lesion_case(
        shape, n_lesions=n_lesions, radius_range=radius_range(shape), n_false_positives=n_false_positives, seed=seed
    )
    rng = np.random.default_rng(seed + 1_000_000)
    labels, _ = ndimage.label(pred, structure=np.ones((3,) * len(shape), bool))
    prob = np.zeros(shape, np.float32)
    pad = int(np.ceil(4 * SIGMA)) + 1
    for k, box in enumerate(ndimage.find_objects(labels), 1):
        box = tuple(slice(max(0, s.start - pad), min(n, s.stop + pad)) for s, n in zip(box, shape))
        blob = ndimage.gaussian_filter((labels[box] == k).astype(np.float32), SIGMA)
        blob *= np.float32(rng.uniform(*PEAK_RANGE) / max(float(blob.max()), 1e-6))
        np.maximum(prob[box], blob, out=prob[box])
    prob[prob < FLOOR] = 0
    np.clip(prob, 0, 1, out=prob)
    return gt.astype(np.uint8), prob


def tiny_case() -> tuple[np.ndarray, np.ndarray]:
    """A small case for warming up imports and first-use code paths (numba)."""
    return make_case((48, 48, 32), 1)


# ----------------------------------------------------------------------------- machine load


def _own_cpu() -> float:
    """CPU seconds of this process and of its terminated, waited-for children (and theirs)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Watch:
    """CPU taken by other processes during a timed section (see the module docstring)."""

    sections: list[dict] = []

    def __init__(self, name: str, parallel: int = 1):
        self.name, self.parallel = name, parallel

    def __enter__(self):
        self.machine0, self.own0, self.start = _cpu_times(), _own_cpu(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self.start
        machine1, own = _cpu_times(), _own_cpu() - self.own0
        if self.machine0 and machine1 and wall > 0:
            busy = machine1["busy"] - self.machine0["busy"]
            others = max(0.0, busy - own)
            n = _nproc()
            contended = others > 0.1 * wall * n and own < 0.9 * wall * min(self.parallel, n)
            Watch.sections.append(
                {"name": self.name, "wall": wall, "own": own, "others": others, "nproc": n, "contended": contended}
            )
        return False


def idle_check(seconds: float = 2.0) -> str:
    a = _cpu_times()
    time.sleep(seconds)
    b = _cpu_times()
    if not a or not b:
        return "machine load: /proc/stat unreadable, not checked"
    busy = b["busy"] - a["busy"]
    share = busy / (seconds * _nproc())
    line = f"machine load before starting: {100 * share:.0f} % of {_nproc()} CPUs busy over {seconds:.0f} s"
    if share > 0.1:
        line += " -- WARNING: the machine is not idle; timings will be inflated"
    return line


def load_report() -> list[str]:
    bad = [s for s in Watch.sections if s["contended"]]
    worst = max(Watch.sections, key=lambda s: s["others"] / (s["wall"] * s["nproc"]), default=None)
    lines = []
    if worst:
        lines.append(
            "machine load: other processes took at most "
            f"{100 * worst['others'] / (worst['wall'] * worst['nproc']):.0f} % "
            f"of the CPUs in a timed section ({worst['name']}); {len(Watch.sections)} sections watched"
        )
    for s in bad:
        lines.append(
            f"WARNING: during '{s['name']}' other processes used {100 * s['others'] / (s['wall'] * s['nproc']):.0f} % "
            f"of the CPUs and the benchmark got {100 * s['own'] / s['wall']:.0f} % of one CPU: its times are "
            "inflated; run again on a quiet machine"
        )
    return lines


# ----------------------------------------------------------------------------- part 1: per case


@contextlib.contextmanager
def quiet_stdout():
    """picai_eval and report_guided_annotation print banners when imported; scikit-learn, under picai_eval's
    bootstrap, warns of resamples holding one class."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def import_references():
    with quiet_stdout():
        import picai_eval.eval as picai_eval
        import picai_eval.metrics as picai_metrics
        import report_guided_annotation as rga
    return picai_eval, picai_metrics, rga


def ours_case(gt, prob):
    from ccmetrics.engine.components import find_sites
    from ccmetrics.metrics.candidates import find_candidates
    from ccmetrics.metrics.detection_curves import match_candidates

    return match_candidates(find_candidates(prob), find_sites(gt), RULE)


def detection_map_of(prob) -> np.ndarray:
    """picai's detection map of a probability map: each component of ``prob > 0`` holding its maximum."""
    from ccmetrics.metrics.candidates import find_candidates

    return np.ascontiguousarray(find_candidates(prob).detection_map())


def ours_dynamic(prob):
    from ccmetrics.metrics.candidates import find_candidates

    return find_candidates(prob, "dynamic")


def ours_whole(case: str, gt, prob, pred):
    return ccmetrics.evaluate_dataset(
        {case: (gt, pred)}, metrics=["dice"], probabilities={case: prob}, candidates="components", progress=False
    )


def sorted_entries(pairs) -> list[tuple[int, float]]:
    return sorted((int(t), float(c)) for t, c in pairs)


def verify(cases, det_maps, refs) -> tuple[dict, list[str]]:
    """Check every case's outputs; return picai's per-case results (for the curves) and a summary."""
    picai_eval, _, rga = refs
    results, n_entries, n_lesions, n_cands, n_dyn = {}, 0, 0, 0, 0
    for i, ((gt, prob), det) in enumerate(zip(cases, det_maps)):
        y_list, conf = picai_eval.evaluate_case(y_det=det, y_true=gt)[:2]
        m = ours_case(gt, prob)
        target, confidence = m.entries()
        if sorted_entries(zip(target, confidence)) != sorted_entries((t, c) for t, c, _ in y_list):
            sys.exit(f"case {i}: the lesion entries differ from picai_eval's; not timing different outputs")
        if m.case_confidence != float(conf):
            sys.exit(f"case {i}: case confidence {m.case_confidence} vs picai_eval's {float(conf)}")
        with quiet_stdout():
            ref_map = rga.extract_lesion_candidates(prob, threshold="dynamic")[0]
        dyn = ours_dynamic(prob)
        if not np.array_equal(dyn.detection_map(), ref_map):
            sys.exit(f"case {i}: the dynamic detection map differs from report_guided_annotation's")
        for pred in (None, prob > 0.5):
            per_cand = ours_whole("c", gt, prob, pred).per_candidate
            got = sorted(zip(per_cand["outcome"], per_cand["confidence"].astype(float)))
            if got != sorted(zip(m.outcome.tolist(), m.confidence.tolist())):
                sys.exit(f"case {i}: evaluate_dataset's candidates differ from find_candidates + match_candidates")
        results[f"case_{i:03d}"] = (y_list, float(conf))
        n_entries += len(y_list)
        n_lesions += m.n_lesions
        n_cands += len(m.confidence)
        n_dyn += dyn.n
    summary = [
        f"checked on {len(cases)} cases: lesion entries (target, confidence) sorted and case confidence equal "
        f"picai_eval's exactly ({n_entries} entries, {n_lesions} lesions, {n_cands} candidates of prob > 0); "
        f"dynamic detection maps equal report_guided_annotation's voxel for voxel ({n_dyn} candidates); "
        f"evaluate_dataset's per_candidate (outcome, confidence) equal match_candidates' (pred None and prob > 0.5)"
    ]
    return results, summary


def timed(call, *args, **kwargs) -> float:
    start = time.perf_counter()
    call(*args, **kwargs)
    return time.perf_counter() - start


def time_pairs(cases, det_maps, refs, repeats: int, whole_cases: int) -> dict[str, np.ndarray]:
    """Seconds, shape (repeats, cases), per call (NaN where a call was not timed on a case)."""
    picai_eval, _, rga = refs
    n = len(cases)
    keys = ["picai", "ours", "rga", "ours_dynamic", "whole_none", "whole_seg"]
    out = {k: np.full((repeats, n), np.nan) for k in keys}
    for r in range(repeats):
        for i, ((gt, prob), det) in enumerate(zip(cases, det_maps)):
            gc.collect()
            out["picai"][r, i] = timed(picai_eval.evaluate_case, y_det=det, y_true=gt)
            out["ours"][r, i] = timed(ours_case, gt, prob)
            with quiet_stdout():
                out["rga"][r, i] = timed(rga.extract_lesion_candidates, prob, threshold="dynamic")
            out["ours_dynamic"][r, i] = timed(ours_dynamic, prob)
            if i < whole_cases:
                seg = prob > 0.5
                out["whole_none"][r, i] = timed(ours_whole, f"c{i}", gt, prob, None)
                out["whole_seg"][r, i] = timed(ours_whole, f"c{i}", gt, prob, seg)
    return out


def time_curves(cases, picai_results, refs, repeats: int, n_boot: int) -> tuple[dict, list[str]]:
    _, picai_metrics, _ = refs
    from ccmetrics.metrics.detection_curves import detection_curves

    lesion_results = {c: y for c, (y, _) in picai_results.items()}
    case_pred = {c: conf for c, (_, conf) in picai_results.items()}
    case_target = {c: int(max((t for t, *_ in y), default=0)) for c, y in lesion_results.items()}
    ids = list(picai_results)
    matches = [ours_case(gt, prob) for gt, prob in cases]

    def picai_scalars():
        m = picai_metrics.Metrics(lesion_results=lesion_results, case_target=case_target, case_pred=case_pred)
        return m, (m.AP, m.auroc, m.score)

    with quiet_stdout():
        ref, (ap, auroc, score) = picai_scalars()
    ours = detection_curves(matches, case_ids=ids, n_resamples=0)
    for name, a, b in (("AP", ours.ap, ap), ("AUROC", ours.auroc, auroc), ("score", ours.picai_score, score)):
        if not abs(a - b) <= 1e-9:
            sys.exit(f"curves: {name} {a!r} (ccmetrics) vs {b!r} (picai_eval) differ by more than 1e-9")
    times = {k: [] for k in ("picai", "ours", "picai_boot", "ours_boot")}
    for _ in range(repeats):
        with quiet_stdout():
            times["picai"].append(timed(picai_scalars))
        times["ours"].append(timed(detection_curves, matches, case_ids=ids, n_resamples=0))
        if n_boot:
            with quiet_stdout():
                times["picai_boot"].append(timed(ref.bootstrap_score_ci, n_bootstraps=n_boot, seed=0))
            times["ours_boot"].append(timed(detection_curves, matches, case_ids=ids, n_resamples=n_boot))
    lines = [
        f"curves over {len(ids)} cases ({ours.n_lesions} lesions, {ours.n_false_positives} false positives): "
        f"AP {ours.ap:.6f}, AUROC {ours.auroc:.6f}, score {ours.picai_score:.6f}; equal to picai_eval's to 1e-9 "
        f"(|diff| AP {abs(ours.ap - ap):.1e}, AUROC {abs(ours.auroc - auroc):.1e}, "
        f"score {abs(ours.picai_score - score):.1e})"
    ]
    return times, lines


def spread(values) -> str:
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return f"{np.median(v):.3g} ({v.min():.3g} - {v.max():.3g})"


def ms(values) -> str:
    v = 1000 * np.asarray(values, float)
    v = v[np.isfinite(v)]
    return f"{np.median(v):.1f} ({v.min():.1f} - {v.max():.1f})"


def per_case_ratio(ref: np.ndarray, ours: np.ndarray) -> np.ndarray:
    """Per case: the reference's median over the rounds / ours."""
    keep = np.all(np.isfinite(ours), axis=0)
    return np.median(ref[:, keep], axis=0) / np.median(ours[:, keep], axis=0)


def part_pairs(args, refs) -> dict:
    shape = args.pair_shape
    print(f"\n== 1. per case: {args.pair_cases} cases of {'x'.join(map(str, shape))}, picai_eval vs ccmetrics")
    start = time.perf_counter()
    cases = [make_case(shape, SEED0 + i) for i in range(args.pair_cases)]
    negatives = [
        make_case(shape, SEED0 + 10_000 + j, n_lesions=0, n_false_positives=NEGATIVE_BLOBS)
        for j in range(args.negatives)
    ]
    det_maps = [detection_map_of(prob) for _, prob in cases + negatives]
    print(
        f"built in {time.perf_counter() - start:.1f} s; per case: {N_LESIONS} lesions drawn (radii "
        f"{radius_range(shape)[0]:g}-{radius_range(shape)[1]:.1f} voxels), map nonzero in "
        f"{100 * np.mean([np.count_nonzero(p) / p.size for _, p in cases]):.2f} % of the voxels"
    )
    picai_eval, _, rga = refs
    gt, prob = tiny_case()  # warm-up: imports, numba, first-use paths
    picai_eval.evaluate_case(y_det=detection_map_of(prob), y_true=gt)
    ours_case(gt, prob)
    with quiet_stdout():
        rga.extract_lesion_candidates(prob, threshold="dynamic")
    ours_dynamic(prob)
    ours_whole("w", gt, prob, None)
    ours_whole("w", gt, prob, prob > 0.5)
    with Watch("verification"):
        picai_results, lines = verify(cases + negatives, det_maps, refs)
    for line in lines:
        print(line)
    whole = min(args.whole_cases, args.pair_cases)
    print(
        f"timing: {args.repeats} rounds x {args.pair_cases} cases (evaluate_dataset on the first {whole})...",
        flush=True,
    )
    with Watch("per-case timings"):
        t = time_pairs(cases, det_maps[: len(cases)], refs, args.repeats, whole)
    with Watch("curves"):
        curves, curve_lines = time_curves(cases + negatives, picai_results, refs, args.repeats, args.bootstrap)
    for line in curve_lines:
        print(line)
    res = {
        "shape": shape,
        "cases": args.pair_cases,
        "negatives": args.negatives,
        "repeats": args.repeats,
        "whole": whole,
        "t": t,
        "curves": curves,
    }
    res["ratio"] = per_case_ratio(t["picai"], t["ours"])
    res["ratio_dynamic"] = per_case_ratio(t["rga"], t["ours_dynamic"])
    res["ratio_whole"] = per_case_ratio(t["picai"], t["whole_seg"])
    print(
        f"per case, median (min - max) over cases and rounds: picai_eval evaluate_case {spread(t['picai'])} s, "
        f"ccmetrics find_candidates + match_candidates {spread(t['ours'])} s; ratio per case "
        f"{spread(res['ratio'])}x"
    )
    print(
        f"dynamic candidates: report_guided_annotation {spread(t['rga'])} s, ccmetrics {spread(t['ours_dynamic'])} s; "
        f"ratio per case {spread(res['ratio_dynamic'])}x"
    )
    probe = ours_whole("probe", cases[0][0], cases[0][1], None).per_case.iloc[0]  # what pred=None does
    segmented = int(probe["pred_volume"]) == int(np.count_nonzero(cases[0][1] > 0.5))
    what = "segmented as prob > 0.5" if segmented else f"pred_volume {probe['pred_volume']}"
    print(
        f"evaluate_dataset, one case in memory (first {whole} cases): pred=None {spread(t['whole_none'])} s "
        f"({what}; flags: {probe['flags'] or 'none'}), pred=prob > 0.5 "
        f"{spread(t['whole_seg'])} s; picai evaluate_case / this {spread(res['ratio_whole'])}x"
    )
    res["cases_data"] = cases
    return res


def profile_pairs(res) -> None:
    gt, prob = res["cases_data"][0]
    print("\n== cProfile: ccmetrics find_candidates + match_candidates on case 0, 5 calls (top 15 by cumulative time)")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(5):
        ours_case(gt, prob)
    prof.disable()
    pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(15)


# ----------------------------------------------------------------------------- part 2: data set


def case_id(i: int) -> str:
    return f"case_{i:04d}"


def params_of(shape) -> dict:
    return {
        "generator": "bench_detection.make_case (ccmetrics.synthetic.lesion_case + blurred prediction)",
        "shape": list(shape),
        "n_lesions": N_LESIONS,
        "n_false_positives": N_FALSE_POSITIVES,
        "radius_range": list(radius_range(shape)),
        "sigma": SIGMA,
        "floor": FLOOR,
        "peak_range": list(PEAK_RANGE),
        "spacing_mm": list(SPACING),
        "seed": f"{SEED0} + case index",
        "files": "gt uint8 .nii.gz, prob float32 .nii.gz, npz (2, z, y, x) float32",
    }


def paths(data: Path, i: int) -> dict[str, Path]:
    return {
        "gt": data / "gt" / f"{case_id(i)}.nii.gz",
        "prob": data / "prob" / f"{case_id(i)}.nii.gz",
        "npz": data / "npz" / f"{case_id(i)}.npz",
    }


def _generate_one(data: str, i: int, shape, kinds) -> float:
    from ccmetrics.formats.io import save_image

    start = time.perf_counter()
    gt, prob = make_case(shape, SEED0 + i)
    for kind, path in paths(Path(data), i).items():
        if kind not in kinds or path.is_file():
            continue
        tmp = path.with_name("." + path.name + (".tmp.npz" if kind == "npz" else ".tmp.nii.gz"))
        if kind == "npz":  # nnU-Net's layout: (C, z, y, x), the reversed axes of the nibabel array
            np.savez_compressed(tmp, probabilities=np.stack([1 - prob.T, prob.T]))
        else:
            save_image(tmp, gt if kind == "gt" else prob, spacing=SPACING)
        os.replace(tmp, path)
    return time.perf_counter() - start


def ensure_data(data: Path, cases: int, shape, workers: int, kinds) -> dict | None:
    params_file = data / "params.json"
    params = params_of(shape)
    if params_file.is_file():
        found = json.loads(params_file.read_text())
        if found != params:
            sys.exit(f"{data} holds cases made with other settings ({found}); delete it or pass another --data")
    for kind in kinds:
        (data / kind).mkdir(parents=True, exist_ok=True)
    params_file.write_text(json.dumps(params, indent=2))
    missing = [i for i in range(cases) if not all(paths(data, i)[k].is_file() for k in kinds)]
    if not missing:
        return None
    print(f"generating {len(missing)} of {cases} cases into {data} with {workers} processes...", flush=True)
    start = time.perf_counter()
    if workers > 1 and len(missing) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            list(
                pool.map(
                    _generate_one, [str(data)] * len(missing), missing, [shape] * len(missing), [kinds] * len(missing)
                )
            )
    else:
        for i in missing:
            _generate_one(str(data), i, shape, kinds)
    return {"generated": len(missing), "wall": time.perf_counter() - start}


class TreeSampler(threading.Thread):
    """Samples ``VmHWM`` of a process and of its children running ``spawn_main`` (the pool's workers)."""

    def __init__(self, pid: int, interval: float = 0.1):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.main_kib = 0
        self.workers_kib: dict[int, int] = {}
        self.stop_event = threading.Event()

    def _workers(self) -> list[int]:
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) != self.pid:
                        continue
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"spawn_main" in f.read():
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
        return out

    def run(self) -> None:
        if not os.path.isdir("/proc"):
            return
        while not self.stop_event.is_set():
            self.main_kib = max(self.main_kib, _status_kib(self.pid, "VmHWM") or 0)
            for pid in self._workers():
                hwm = _status_kib(pid, "VmHWM")
                if hwm is not None:
                    self.workers_kib[pid] = max(hwm, self.workers_kib.get(pid, 0))
            self.stop_event.wait(self.interval)


def cli_command(gt_dir: Path, prob_dir: Path, out: Path, workers: int, extra=()) -> list[str]:
    cmd = ["-m", "ccmetrics", "evaluate", str(gt_dir), "--probabilities", str(prob_dir)]
    return cmd + ["--out", str(out), "--metrics", "dice", "--workers", str(workers), "--quiet", *extra]


def run_cli(gt_dir: Path, prob_dir: Path, workers: int, extra=(), profile: str | None = None) -> dict:
    """``ccmetrics evaluate`` end to end in a subprocess; wall time and sampled peaks (``profile``: under cProfile,
    its statistics written there)."""
    out = Path(tempfile.mkdtemp(prefix="ccmetrics-bench-out-"))
    shutil.rmtree(out)
    cmd = [sys.executable, *(["-m", "cProfile", "-o", profile] if profile else [])]
    cmd += cli_command(gt_dir, prob_dir, out, workers, extra)
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - start
    sampler.stop_event.set()
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"ccmetrics evaluate failed (rc {proc.returncode}):\n{stdout[-2000:]}\n{stderr[-4000:]}")
    summary = json.loads((out / "summary.json").read_text())
    plots = len(list((out / "plots").glob("*.png"))) if (out / "plots").is_dir() else 0
    shutil.rmtree(out, ignore_errors=True)
    return {
        "wall": wall,
        "worker_peak_mib": max(sampler.workers_kib.values(), default=0) / 1024,
        "workers_seen": len(sampler.workers_kib),
        "main_peak_mib": sampler.main_kib / 1024,
        "summary": summary,
        "plots": plots,
        "cmd": cmd,
    }


def read_loop(data: Path, cases: int, kind: str) -> dict:
    """Body of the ``--read-baseline`` subprocess: nibabel (or np.load for npz) reading every case's two files."""
    import nibabel as nib

    per_case = []
    start = time.perf_counter()
    for i in range(cases):
        t0 = time.perf_counter()
        p = paths(data, i)
        np.asanyarray(nib.load(str(p["gt"]), mmap=False).dataobj)
        if kind == "npz":
            with np.load(p["npz"]) as z:
                z["probabilities"]
        else:
            np.asanyarray(nib.load(str(p["prob"]), mmap=False).dataobj)
        per_case.append(time.perf_counter() - t0)
    return {"wall": time.perf_counter() - start, "per_case_median": float(np.median(per_case))}


def run_read(data: Path, cases: int, kind: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--read-baseline", kind, "--data", str(data)]
    cmd += ["--cases", str(cases)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"read baseline failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def linked_folder(data: Path, cases: int, kinds) -> Path:
    """A temporary folder whose ``kind/`` subfolders link the first ``cases`` cases' files (the command reads
    folders)."""
    src = Path(tempfile.mkdtemp(prefix="ccmetrics-bench-links-"))
    for k in kinds:
        (src / k).mkdir()
        for i in range(cases):
            (src / k / paths(data, i)[k].name).symlink_to(paths(data, i)[k])
    return src


def evaluate_folder(src: Path):
    """What ``ccmetrics evaluate src/gt --probabilities src/prob --metrics dice`` computes, in this process."""
    return ccmetrics.evaluate_dataset(str(src / "gt"), None, ["dice"], probabilities=str(src / "prob"), progress=False)


def memory_in_process(data: Path) -> dict:
    """tracemalloc peaks of reading case 0's map and of evaluating case 0, against the map's float32 size."""
    from ccmetrics.formats.io import load_image
    from ccmetrics.formats.probabilities import read_probabilities

    p = paths(data, 0)
    gt = load_image(str(p["gt"]))
    map_bytes = 4 * gt.array.size
    read_probabilities(str(p["prob"]), like=gt)  # warm-up
    gc.collect()
    tracemalloc.start()
    prob = read_probabilities(str(p["prob"]), like=gt)
    read_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    dtype = str(prob.array.dtype)
    del prob
    src = linked_folder(data, 1, ["gt", "prob"])
    evaluate_folder(src)  # warm-up
    gc.collect()
    tracemalloc.start()
    evaluate_folder(src)
    case_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    shutil.rmtree(src, ignore_errors=True)
    return {
        "map_mib": map_bytes / MIB,
        "gt_mib": gt.array.nbytes / MIB,
        "read_peak_mib": read_peak / MIB,
        "case_peak_mib": case_peak / MIB,
        "dtype": dtype,
    }


def profile_dataset(src: Path, cases: int, workers: int) -> None:
    """cProfile of the command's main process (workers' time shows as waiting) and of 3 cases in this process."""
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "cli.prof")
        r = run_cli(src / "gt", src / "prob", workers, profile=prof)
        print(
            f"\n== cProfile: the command's main process, {cases} cases, workers={workers} ({r['wall']:.1f} s "
            "under the profiler; top 25 by cumulative time)"
        )
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
    n = min(cases, 3)
    one = linked_folder(src, n, ["gt", "prob"])
    evaluate_folder(one)  # warm-up
    print(f"\n== cProfile: evaluate_dataset(workers=1) on {n} data-set cases from their files (top 25, cumulative)")
    prof = cProfile.Profile()
    prof.enable()
    evaluate_folder(one)
    prof.disable()
    shutil.rmtree(one, ignore_errors=True)
    pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(25)


def part_dataset(args) -> dict:
    data, shape = Path(args.data), args.shape
    kinds = ["gt", "prob"] + (["npz"] if args.npz else [])
    print(f"\n== 2. data set: {args.cases} cases of {'x'.join(map(str, shape))} in {data}")
    gen = ensure_data(data, args.cases, shape, args.gen_workers, kinds)
    print(
        f"generated {gen['generated']} cases in {gen['wall']:.0f} s"
        if gen
        else "all cases already written (delete the folder to regenerate)"
    )
    sizes = {k: [paths(data, i)[k].stat().st_size for i in range(args.cases)] for k in kinds}
    print(
        "on disk: "
        + ", ".join(f"{k} {sum(v) / MIB:.0f} MiB ({np.mean(v) / MIB:.2f} MiB each)" for k, v in sizes.items())
        + f"; a map is {4 * np.prod(shape) / MIB:.0f} MiB as float32"
    )
    # the folders the command reads must hold exactly these cases
    src = data
    on_disk = len(list((data / "gt").glob("case_*.nii.gz")))
    if on_disk != args.cases:  # the folders the command reads must hold exactly these cases
        src = linked_folder(data, args.cases, kinds)
        print(f"(the folder holds {on_disk} cases: the first {args.cases} linked into {src})")
    variants = [("nii", "prob", ())]
    if not args.no_plots_row:
        variants.append(("nii, --no-plots", "prob", ("--no-plots",)))
    if args.npz:
        variants.append(("npz", "npz", ()))
    runs = {name: {"kind": kind, "extra": extra, "cli": [], "read": []} for name, kind, extra in variants}
    print(
        f"timing: {args.dataset_repeats} rounds of ccmetrics evaluate (workers={args.workers}; "
        f"{', '.join(runs)}) and of the read baseline...",
        flush=True,
    )
    run_read(data, min(2, args.cases), "prob")  # warm the page cache and the imports' files
    reads: dict[str, list] = {}
    for r in range(args.dataset_repeats):
        for name, v in runs.items():
            with Watch(f"ccmetrics evaluate ({name}), round {r + 1}", parallel=args.workers):
                v["cli"].append(run_cli(src / "gt", src / v["kind"], args.workers, v["extra"]))
            if len(reads.setdefault(v["kind"], [])) <= r:
                with Watch(f"read baseline ({v['kind']}), round {r + 1}"):
                    reads[v["kind"]].append(run_read(data, args.cases, v["kind"]))
    for v in runs.values():
        v["read"] = reads[v["kind"]]
    mem = memory_in_process(data)
    out = {"cases": args.cases, "shape": shape, "runs": runs, "mem": mem, "sizes": sizes, "src": src}
    for k, v in runs.items():
        cli = [x["wall"] for x in v["cli"]]
        read = [x["wall"] for x in v["read"]]
        s = v["cli"][-1]["summary"]
        det = s.get("detection_curves", {})
        det = det.get("1", det) if isinstance(det, dict) else {}
        ap = det.get("ap", {}).get("value") if isinstance(det.get("ap"), dict) else None
        print(
            f"[{k}] ccmetrics evaluate: {spread(cli)} s wall (median (min - max) of {len(cli)}; "
            f"{statistics.median(cli) / args.cases:.3f} s per case; {v['cli'][-1]['plots']} plots); AP {ap}; "
            f"nibabel{' + np.load' if v['kind'] == 'npz' else ''} read of GT + map in one process: {spread(read)} s "
            f"({statistics.median(read) / args.cases:.3f} s per case); "
            f"ratio {statistics.median(cli) / statistics.median(read):.2f}x"
        )
        peaks = [x["worker_peak_mib"] for x in v["cli"]]
        print(
            f"[{k}] peak RSS per worker (VmHWM, largest of {v['cli'][-1]['workers_seen']} workers): "
            f"{spread(peaks)} MiB; "
            f"command's main process {spread([x['main_peak_mib'] for x in v['cli']])} MiB"
        )
    print(
        "case 0 in this process (tracemalloc, numpy allocations): read_probabilities peak "
        f"{mem['read_peak_mib']:.0f} MiB = {mem['read_peak_mib'] / mem['map_mib']:.2f}x the {mem['map_mib']:.0f} MiB "
        f"float32 map (array {mem['dtype']}); "
        f"the whole case (read GT + map, dice, candidates, matching) {mem['case_peak_mib']:.0f} MiB = "
        f"{mem['case_peak_mib'] / mem['map_mib']:.2f}x the map (GT uint8 {mem['gt_mib']:.0f} MiB)"
    )
    out["command"] = " ".join(["python", *cli_command(Path("GT_DIR"), Path("PROB_DIR"), Path("OUT"), args.workers)])
    return out


# ----------------------------------------------------------------------------- report


def machine_info() -> list[str]:
    import nibabel
    import scipy

    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    mem = ""
    try:
        mem = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 1024**3:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    def v(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return [
        f"nproc {_nproc()} (os.cpu_count() {os.cpu_count()}), {cpu}{mem}",
        f"python {platform.python_version()} ({platform.machine()}, {platform.system()})",
        f"numpy {np.__version__}, scipy {scipy.__version__}, nibabel {nibabel.__version__}, "
        f"picai_eval {v('picai_eval')}, report_guided_annotation {v('report_guided_annotation')}, "
        f"ccmetrics {ccmetrics.__version__} ({os.path.dirname(ccmetrics.__file__)})",
    ]


def table_pairs(res: dict) -> str:
    t, c, shape = res["t"], res["curves"], "x".join(map(str, res["shape"]))
    rows = [
        f"| per case ({res['cases']} cases of {shape}, {N_LESIONS} lesions; median (min - max) over cases x "
        f"{res['repeats']} rounds) | reference (ms) | ccmetrics (ms) | reference / ccmetrics per case |",
        "|---|---:|---:|---:|",
        f"| candidates (prob > 0) + matching, iou:0.1: picai_eval `evaluate_case` vs `find_candidates` + "
        f"`match_candidates` | {ms(t['picai'])} | {ms(t['ours'])} | {spread(res['ratio'])}x |",
        f'| dynamic candidates: report_guided_annotation vs `find_candidates(prob, "dynamic")` | {ms(t["rga"])} | '
        f"{ms(t['ours_dynamic'])} | {spread(res['ratio_dynamic'])}x |",
        f"| whole case in memory, `evaluate_dataset` (dice, candidates, matching, tables; pred = prob > 0.5; "
        f"{res['whole']} cases) vs picai `evaluate_case` | {ms(t['picai'][:, : res['whole']])} | "
        f"{ms(t['whole_seg'])} | "
        f"{spread(res['ratio_whole'])}x |",
        f"| curves over {res['cases']} + {res['negatives']} negative cases: picai `Metrics` AP + AUROC + score vs "
        "`detection_curves(n_resamples=0)` "
        f"(median (min - max) of {res['repeats']}) | {ms(c['picai'])} | {ms(c['ours'])} | "
        f"{statistics.median(c['picai']) / statistics.median(c['ours']):.3g}x |",
    ]
    if c["picai_boot"]:
        rows.append(
            f"| bootstrap, {BOOT[0]} resamples: picai `bootstrap_score_ci` (AUROC, AP, score) vs "
            f"`detection_curves(n_resamples=...)` (AP, AUROC, score, CPM, FROC) | {ms(c['picai_boot'])} | "
            f"{ms(c['ours_boot'])} | {statistics.median(c['picai_boot']) / statistics.median(c['ours_boot']):.3g}x |"
        )
    return "\n".join(rows)


BOOT = [0]


def table_dataset(res: dict, workers: int) -> str:
    n, shape = res["cases"], "x".join(map(str, res["shape"]))
    rows = [
        f"| {n} cases of {shape} (median (min - max) of rounds) | ccmetrics evaluate, {workers} workers, wall (s) | "
        f"nibabel read, 1 process (s) | ratio | {ISSUE_CASES} cases, linear extrapolation (ccmetrics / nibabel) | "
        "peak RSS per worker (MiB) | map as float32 (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for k, v in res["runs"].items():
        cli = [x["wall"] for x in v["cli"]]
        read = [x["wall"] for x in v["read"]]
        mc, mr = statistics.median(cli), statistics.median(read)
        label = {
            "nii": "float32 .nii.gz maps + uint8 .nii.gz GT (the command above)",
            "nii, --no-plots": "the same, with --no-plots",
            "npz": "nnU-Net .npz maps (read baseline: np.load) + uint8 .nii.gz GT",
        }[k]
        extra = "(measured)" if n == ISSUE_CASES else f"{mc * ISSUE_CASES / n:.0f} s / {mr * ISSUE_CASES / n:.0f} s"
        rows.append(
            f"| {label} | {spread(cli)} | {spread(read)} | {mc / mr:.2f}x | {extra} | "
            f"{spread([x['worker_peak_mib'] for x in v['cli']])} | {res['mem']['map_mib']:.0f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    shape = lambda s: tuple(int(x) for x in s.replace("x", ",").split(","))  # noqa: E731
    parser.add_argument("--pair-cases", type=int, default=6, help="cases of part 1 (default 6)")
    parser.add_argument(
        "--pair-shape", type=shape, default=PAIR_SHAPE, help="shape of part 1's cases (default 256,256,96)"
    )
    parser.add_argument(
        "--negatives", type=int, default=4, help="cases without lesions added to part 1's curves (default 4)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="rounds of part 1's timings (default 3)")
    parser.add_argument(
        "--whole-cases", type=int, default=3, help="cases also run through evaluate_dataset (default 3)"
    )
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples timed (default 1000; 0: skip)")
    parser.add_argument("--cases", type=int, default=24, help="cases of the data set (default 24)")
    parser.add_argument(
        "--shape", type=shape, default=SHAPE, help="shape of the data set's cases (default 400,400,300)"
    )
    parser.add_argument("--data", default=DEFAULT_DATA, help=f"data folder (default {DEFAULT_DATA}/SHAPE)")
    parser.add_argument("--workers", type=int, default=2, help="workers of ccmetrics evaluate (default 2)")
    parser.add_argument("--dataset-repeats", type=int, default=3, help="rounds of part 2's timings (default 3)")
    parser.add_argument("--gen-workers", type=int, default=2, help="processes generating the data (default 2)")
    parser.add_argument(
        "--no-plots-row", action="store_true", help="skip the run of the command with --no-plots (a row of part 2)"
    )
    parser.add_argument("--npz", action="store_true", help="also write and evaluate nnU-Net .npz maps")
    parser.add_argument("--skip-pairs", action="store_true", help="skip part 1")
    parser.add_argument("--skip-dataset", action="store_true", help="skip part 2")
    parser.add_argument("--profile", action="store_true", help="print cProfile top entries (automatic on a miss)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 3 cases of 96x96x48, 2 rounds; 6 data-set cases of 160x160x120, 1 round",
    )
    parser.add_argument("--read-baseline", choices=["prob", "npz"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from ccmetrics.engine import warm_up

    warm_up()  # every kernel in numba's cache and loaded, as after `ccmetrics warm-up`: warm timings
    if args.quick:
        args.pair_cases, args.pair_shape, args.repeats, args.whole_cases, args.bootstrap = 3, (96, 96, 48), 2, 2, 200
        args.negatives = 2
        args.cases, args.shape, args.dataset_repeats = 6, (160, 160, 120), 1
    if args.data == DEFAULT_DATA:
        args.data = os.path.join(DEFAULT_DATA, "x".join(map(str, args.shape)))
    if args.read_baseline:
        print(json.dumps(read_loop(Path(args.data), args.cases, args.read_baseline)))
        return
    BOOT[0] = args.bootstrap

    print("== machine")
    for line in machine_info():
        print(line)
    print(idle_check(), flush=True)

    pairs = dataset = None
    if not args.skip_pairs:
        refs = import_references()
        pairs = part_pairs(args, refs)
    if not args.skip_dataset:
        dataset = part_dataset(args)

    missed_pairs = pairs is not None and float(np.median(pairs["ratio"])) < TARGET_PER_CASE
    ratio_read = None
    if dataset is not None:
        v = dataset["runs"]["nii"]
        ratio_read = statistics.median(x["wall"] for x in v["cli"]) / statistics.median(x["wall"] for x in v["read"])
    missed_read = ratio_read is not None and ratio_read > TARGET_READ

    print("\n== targets")
    if pairs is not None:
        r = float(np.median(pairs["ratio"]))
        print(
            f"per case, picai_eval / ccmetrics >= {TARGET_PER_CASE:g}x: {r:.0f}x -> "
            f"{'met' if not missed_pairs else 'NOT MET'}"
        )
    if ratio_read is not None:
        print(
            f"data set, ccmetrics evaluate wall <= {TARGET_READ:g}x nibabel's read ({dataset['cases']} cases of "
            f"{'x'.join(map(str, dataset['shape']))}): {ratio_read:.2f}x -> {'met' if not missed_read else 'NOT MET'}"
        )
    if args.profile or missed_pairs:
        if pairs is not None:
            profile_pairs(pairs)
    if args.profile or missed_read:
        if dataset is not None:
            profile_dataset(dataset["src"], dataset["cases"], args.workers)

    if dataset is not None and dataset["src"] != Path(args.data):
        shutil.rmtree(dataset["src"], ignore_errors=True)

    print()
    for line in load_report():
        print(line)
    print("\n== README tables (ms, s and MiB; 'reference' is picai_eval 1.4 / report_guided_annotation)\n")
    if pairs is not None:
        print(table_pairs(pairs))
        print()
    if dataset is not None:
        print(f"command: `{dataset['command']}` (DIRs under {args.data})\n")
        print(table_dataset(dataset, args.workers))


if __name__ == "__main__":
    main()
