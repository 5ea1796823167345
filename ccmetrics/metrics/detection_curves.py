"""Lesion-level detection curves: candidates matched one-to-one to lesions, then FROC, AP, AUROC and CPM.

The matching lives in :mod:`ccmetrics.metrics.candidate_matching` (its names are re-exported here); this module
turns the matches of all cases into the curves, their summaries and intervals, and the candidate tables.

The conventions are picai_eval's (the PI-CAI challenge's evaluation, version 1.4), reproduced exactly and
tested against it; where picai_eval's numbers are not what its documentation says, this module says so.

Matching (:func:`match_candidates`), per case
---------------------------------------------
1. The score of every lesion–candidate pair under the detection rule (``iou:T``, ``dice:T``, ``coverage:T``
   or ``overlap``; pairwise, lesion against one candidate), from the overlap list of
   :func:`~ccmetrics.metrics.matching.site_overlaps`: pairs that do not touch score 0 without being visited.
2. A pair *passes* when its score reaches the threshold (inclusive: an IoU of exactly 0.1 passes ``iou:0.1``;
   ``overlap``: any shared voxel).
3. ``match_by="overlap"`` (picai_eval): passing pairs weigh ``1 + score``, the others 0, and the Hungarian
   algorithm (:func:`scipy.optimize.linear_sum_assignment`, ``maximize=True``) picks the one-to-one
   assignment of the largest total: the number of matches *plus* their summed overlap, so two well-overlapping
   matches can beat three weak ones. ``match_by="confidence"`` (what picai_eval issue #24 asks for): weights
   ``1 + confidence``, so among candidates passing the rule the most confident is the true positive.
   The solver runs on the full lesions x candidates matrix in lesion and candidate order, with picai_eval's
   overlap (1e-8 added to numerator and denominator), so that an exact tie goes its way; a candidate of
   confidence 0 (a prediction's component where the map is 0: in no detection map) is never matched.
4. Matched candidates are true positives (``"tp"``); an unmatched candidate is a false positive (``"fp"``),
   except that with ``ignore_unmatched_passing=True`` (picai_eval's
   ``allow_unmatched_candidates_with_minimal_overlap``, its default) an unmatched candidate that passes the
   rule with some lesion is left out (``"ignored"``): neither true nor false positive.
5. The case's confidence is its highest candidate confidence, ignored candidates included (picai_eval: the
   maximum of the detection map); 0 without candidates.

Curves (:func:`detection_curves`), over all cases
-------------------------------------------------
The *entries* are one per lesion (target 1, the matched candidate's confidence, 0 when missed) and one per
false positive (target 0, its confidence).

- **AP**: picai_eval's: scikit-learn's precision–recall curve over the entries, precision set to 0 at the
  threshold 0 (missed lesions), ``AP = Σ (R_i − R_{i−1}) P_i`` over the distinct confidences in descending
  order. Undefined (NaN) without lesions, where picai_eval gives 0 (scikit-learn warns that there is no positive
  and sets the recall to 1): a set of cases without lesions has no AP, and its bootstrap resamples are left out
  of the interval rather than counted as 0.
- **AUROC**, case level: cases are positive when they hold a lesion, scored by their confidence; the area
  under the ROC curve by the trapezoidal rule (ties in score enter together: a tie between a positive and a
  negative case counts one half). Undefined without positive or without negative cases.
- **FROC**: at each distinct candidate confidence t > 0 (descending), sensitivity = lesions matched by a
  candidate of confidence ≥ t / lesions, and false positives per case = false positives of confidence ≥ t /
  cases. Two differences from picai_eval, both on purpose: picai_eval overwrites its last operating point
  with the one before it (at false positives = ∞), which loses the lowest threshold's sensitivity when every
  lesion was found; and above 10,000 distinct confidences it keeps a subsample of them. Here every point is
  kept as computed; the curve is extended flat to the right.
- **CPM** (the LUNA16 competition performance metric): the mean sensitivity at 1/8, 1/4, 1/2, 1, 2, 4 and 8
  false positives per case, ``np.interp`` of sensitivity over false positives per case on the FROC's points
  with (0, 0) prepended: linear between operating points, the higher sensitivity on a vertical step, the last
  sensitivity beyond the last point. (LUNA16's own scripts differ in this detail; this is the rule.)
- **picai_score**: (AUROC + AP) / 2, the PI-CAI ranking score.
- **Confidence intervals**: a case-level percentile bootstrap (cases resampled with replacement, a case's
  entries together), ``n_resamples`` resamples seeded by ``seed`` as the summary's intervals; resamples where
  a value is undefined are left out.

Cost: matching is O(P) for the P touching pairs plus the Hungarian step on the passing pairs' rows and
columns; the curves sort the E entries once (O(E log E)), and each bootstrap resample is a weighted cumulative
sum over them, batched (O(n_resamples · E) time, bounded memory).

Examples
--------
A lesion found by the more confident of two candidates, and a false positive in a case without lesions:

>>> import numpy as np
>>> from ccmetrics.engine.components import find_sites
>>> from ccmetrics.metrics.candidates import find_candidates
>>> gt = np.zeros((1, 12), bool); gt[0, 0:4] = True
>>> prob = np.zeros((1, 12), np.float32); prob[0, 0:3] = 0.75; prob[0, 6:8] = 0.5
>>> m = match_candidates(find_candidates(prob), find_sites(gt), "iou:0.1")
>>> m.outcome.tolist(), m.lesion.tolist(), m.lesion_confidence.tolist()
(['tp', 'fp'], [1, 0], [0.75])
>>> empty = np.zeros((1, 12), bool); prob2 = np.zeros((1, 12), np.float32); prob2[0, 9] = 0.25
>>> m2 = match_candidates(find_candidates(prob2), find_sites(empty), "iou:0.1")
>>> curves = detection_curves([m, m2], case_ids=["a", "b"], n_resamples=0)
>>> round(curves.ap, 4), curves.auroc, curves.froc_fp_per_case.tolist(), curves.froc_sensitivity.tolist()
(1.0, 1.0, [0.0, 0.5, 1.0], [1.0, 1.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy, schema
from ..engine.geometry import patient_coordinates, site_centroids
from .candidate_matching import MATCH_BY, OUTCOMES, CandidateMatch, match_candidates, pair_scores
from .candidates import Candidates

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = [
    "CPM_RATES",
    "MATCH_BY",
    "OUTCOMES",
    "candidate_frame",
    "compare_detection_curves",
    "detection_curves_from_entries",
    "detection_curves_from_tables",
    "CandidateMatch",
    "DetectionCurves",
    "detection_curves",
    "match_candidates",
    "pair_scores",
]

#: false positives per case at which the CPM averages the sensitivity (LUNA16)
CPM_RATES = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True)
class DetectionCurves:
    """Lesion-level detection curves of a set of cases, and their scalar summaries.

    Scalars are NaN where undefined (AP and CPM without lesions, AUROC without positive or negative cases);
    each ``*_ci`` is a (low, high) percentile bootstrap interval over cases ((nan, nan) when
    ``n_resamples`` is 0 or fewer than two cases).

    Attributes
    ----------
    ap, auroc, picai_score, cpm : float
    ap_ci, auroc_ci, picai_score_ci, cpm_ci : tuple of float
    froc_threshold, froc_fp_per_case, froc_sensitivity : ndarray
        The FROC's operating points, one per distinct candidate confidence > 0, in descending confidence.
    pr_threshold, pr_recall, pr_precision : ndarray
        The precision–recall curve's points (distinct entry confidences, descending; precision 0 at 0).
    roc_fpr, roc_tpr : ndarray
        The case-level ROC curve from (0, 0) to (1, 1).
    n_cases, n_lesions, n_positive_cases, n_true_positives, n_false_positives : int
        ``n_true_positives``: lesions matched by a candidate of confidence > 0.
    """

    ap: float
    auroc: float
    picai_score: float
    cpm: float
    ap_ci: tuple[float, float]
    auroc_ci: tuple[float, float]
    picai_score_ci: tuple[float, float]
    cpm_ci: tuple[float, float]
    froc_threshold: np.ndarray
    froc_fp_per_case: np.ndarray
    froc_sensitivity: np.ndarray
    pr_threshold: np.ndarray
    pr_recall: np.ndarray
    pr_precision: np.ndarray
    roc_fpr: np.ndarray
    roc_tpr: np.ndarray
    n_cases: int
    n_lesions: int
    n_positive_cases: int
    n_true_positives: int
    n_false_positives: int
    extra: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data, as ``summary.json``'s ``detection_curves`` keeps it (NaN as None).

        Each scalar is ``{"value": v, "ci": [low, high]}``; ``froc``, ``pr`` and ``roc`` list the curves' points.

        >>> c = detection_curves_from_entries(["a", "b"], [1, 0], [0.5, 0.9], ["a", "b"], [1, 0], [0.5, 0.9],
        ...                                   n_resamples=0)
        >>> d = c.to_dict()
        >>> d["ap"], d["froc"][0]
        ({'value': 0.5, 'ci': [None, None]}, {'threshold': 0.9, 'fp_per_case': 0.5, 'sensitivity': 0.0})
        """

        def plain(v: float) -> float | None:
            return float(v) if np.isfinite(v) else None

        def scalar(v: float, ci: tuple[float, float]) -> dict[str, Any]:
            return {"value": plain(v), "ci": [plain(ci[0]), plain(ci[1])]}

        return {
            "n_cases": self.n_cases,
            "n_positive_cases": self.n_positive_cases,
            "n_lesions": self.n_lesions,
            "n_true_positives": self.n_true_positives,
            "n_false_positives": self.n_false_positives,
            "ap": scalar(self.ap, self.ap_ci),
            "auroc": scalar(self.auroc, self.auroc_ci),
            "picai_score": scalar(self.picai_score, self.picai_score_ci),
            "cpm": scalar(self.cpm, self.cpm_ci),
            "sensitivity_at_fp_per_case": {f"{r:g}": plain(self.sensitivity_at(r)) for r in CPM_RATES},
            "froc": [
                {"threshold": plain(t), "fp_per_case": plain(x), "sensitivity": plain(y)}
                for t, x, y in zip(self.froc_threshold, self.froc_fp_per_case, self.froc_sensitivity)
            ],
            "pr": [
                {"threshold": plain(t), "recall": plain(r), "precision": plain(p)}
                for t, r, p in zip(self.pr_threshold, self.pr_recall, self.pr_precision)
            ],
            "roc": [{"fpr": plain(x), "tpr": plain(y)} for x, y in zip(self.roc_fpr, self.roc_tpr)],
        }

    def sensitivity_at(self, fp_per_case: float) -> float:
        """The FROC's sensitivity at a number of false positives per case (the CPM's interpolation rule).

        >>> c = detection_curves_from_entries(["a", "b"], [1, 0], [0.5, 0.9], ["a", "b"], [1, 0], [0.5, 0.9],
        ...                                   n_resamples=0)
        >>> c.froc_fp_per_case.tolist(), c.froc_sensitivity.tolist()
        ([0.5, 0.5], [0.0, 1.0])
        >>> c.sensitivity_at(0.25), c.sensitivity_at(0.5), c.sensitivity_at(8)
        (0.0, 1.0, 1.0)
        """
        return float(_interp_sensitivity(np.array([fp_per_case]), self.froc_fp_per_case, self.froc_sensitivity)[0])


def _interp_sensitivity(rates: np.ndarray, fppc: np.ndarray, sens: np.ndarray) -> np.ndarray:
    return np.interp(rates, np.concatenate([[0.0], fppc]), np.concatenate([[0.0], sens]))


def _groups(sorted_conf: np.ndarray) -> np.ndarray:
    """Index of the last entry of each run of equal confidences (entries sorted descending)."""
    if len(sorted_conf) == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.r_[sorted_conf[1:] != sorted_conf[:-1], True])


class _Sorted:
    """The entries sorted by confidence, descending, with the distinct thresholds found once."""

    def __init__(self, target: np.ndarray, conf: np.ndarray, case_index: np.ndarray):
        order = np.argsort(-conf, kind="stable")
        self.target = target[order].astype(np.float64)
        self.conf = conf[order]
        self.case = case_index[order]
        self.last = _groups(self.conf)
        self.threshold = self.conf[self.last]

    def counts(self, weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Cumulative (true, false) weights at each distinct threshold; ``weight`` is (B, n_cases) or None."""
        if weight is None:
            tp = np.cumsum(self.target)[self.last]
            return tp, np.cumsum(1.0 - self.target)[self.last] if len(self.target) else tp
        w = weight[:, self.case]
        tp = np.cumsum(w * self.target, axis=1)[:, self.last]
        fp = np.cumsum(w * (1.0 - self.target), axis=1)[:, self.last]
        return tp, fp


def _pr(tp: np.ndarray, fp: np.ndarray, positives: np.ndarray, threshold: np.ndarray):
    """Precision (0 at the threshold 0, as picai_eval sets it) and recall at the descending thresholds (last axis)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where((tp + fp > 0) & (threshold > 0), tp / (tp + fp), 0.0)
        recall = tp / positives[..., None]
    return precision, recall


def _ap(tp: np.ndarray, fp: np.ndarray, positives: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """picai_eval's AP from cumulative counts at the descending thresholds (last axis)."""
    precision, recall = _pr(tp, fp, positives, threshold)
    d_recall = np.diff(recall, axis=-1, prepend=0.0)
    return np.where(positives > 0, np.sum(d_recall * precision, axis=-1), np.nan)


def _froc(tp: np.ndarray, fp: np.ndarray, positives: np.ndarray, n_cases: int, threshold: np.ndarray):
    keep = threshold > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = tp[..., keep] / positives[..., None]
    return fp[..., keep] / n_cases, sens


def _auroc(target: np.ndarray, score: np.ndarray, weight: np.ndarray | None):
    """Trapezoidal ROC AUC over cases (ties together); also the curve when ``weight`` is None."""
    order = np.argsort(-score, kind="stable")
    t, s = target[order].astype(np.float64), score[order]
    last = _groups(s)
    w = np.ones((1, len(t))) if weight is None else weight[:, order]
    tps = np.cumsum(w * t, axis=1)[:, last]
    fps = np.cumsum(w * (1.0 - t), axis=1)[:, last]
    tps = np.concatenate([np.zeros((len(w), 1)), tps], axis=1)
    fps = np.concatenate([np.zeros((len(w), 1)), fps], axis=1)
    p, n = tps[:, -1:], fps[:, -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr, fpr = tps / p, fps / n
        area = np.sum(np.diff(fpr, axis=1) * (tpr[:, 1:] + tpr[:, :-1]) / 2, axis=1)
    area = np.where((p[:, 0] > 0) & (n[:, 0] > 0), area, np.nan)
    return area, fpr[0], tpr[0]


def _percentile_ci(values: np.ndarray, confidence: float) -> tuple[float, float]:
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return (float("nan"), float("nan"))
    alpha = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(values, [alpha, 100 - alpha])
    return float(lo), float(hi)


def detection_curves_from_entries(
    entry_case: Sequence[Any],
    target: Any,
    confidence: Any,
    case_ids: Sequence[Any],
    case_target: Any,
    case_confidence: Any,
    *,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> DetectionCurves:
    """The curves from tidy entries: one row per lesion or false positive, and one per case.

    Parameters
    ----------
    entry_case, target, confidence : sequences of equal length
        Each entry's case id, target (1 lesion, 0 false positive) and confidence (0 for a missed lesion).
    case_ids, case_target, case_confidence : sequences of equal length
        Every case (those without entries too): its id, whether it holds a lesion, its confidence.
    n_resamples, confidence_level, seed
        The case-level bootstrap (``n_resamples=0``: no intervals).

    Returns
    -------
    DetectionCurves
    """
    case_ids = list(case_ids)
    index = {c: i for i, c in enumerate(case_ids)}
    if len(index) != len(case_ids):
        raise ValueError("case_ids holds a case twice")
    try:
        entry_index = np.array([index[c] for c in entry_case], np.int64)
    except KeyError as exc:
        raise ValueError(f"an entry names case {exc.args[0]!r}, which is not in case_ids") from None
    target_arr = np.asarray(target, np.int64)
    conf = np.asarray(confidence, np.float64)
    case_t = np.asarray(case_target, np.int64)
    case_s = np.asarray(case_confidence, np.float64)
    if not (len(target_arr) == len(conf) == len(entry_index)):
        raise ValueError("entry_case, target and confidence must have the same length")
    if not (len(case_t) == len(case_s) == len(case_ids)):
        raise ValueError("case_ids, case_target and case_confidence must have the same length")
    for name, values in (("confidence", conf), ("case_confidence", case_s)):
        if len(values) and (not np.all(np.isfinite(values)) or values.min() < 0):
            raise ValueError(f"{name} must hold finite values >= 0")
    n = len(case_ids)
    entries = _Sorted(target_arr, conf, entry_index)
    tp, fp = entries.counts(None)
    positives = np.array(float(target_arr.sum()))
    ap = float(_ap(tp, fp, positives, entries.threshold))
    fppc, sens = _froc(tp, fp, positives, max(n, 1), entries.threshold)
    cpm = float(np.mean(_interp_sensitivity(np.array(CPM_RATES), fppc, sens))) if positives > 0 else float("nan")
    area, roc_fpr, roc_tpr = _auroc(case_t, case_s, None)
    auroc = float(area[0])
    precision, recall = _pr(tp, fp, positives, entries.threshold)
    cis = _bootstrap(entries, case_t, case_s, n, n_resamples, confidence_level, seed)
    return DetectionCurves(
        ap=ap,
        auroc=auroc,
        picai_score=(auroc + ap) / 2,
        cpm=cpm,
        ap_ci=cis["ap"],
        auroc_ci=cis["auroc"],
        picai_score_ci=cis["picai_score"],
        cpm_ci=cis["cpm"],
        froc_threshold=entries.threshold[entries.threshold > 0],
        froc_fp_per_case=fppc,
        froc_sensitivity=sens,
        pr_threshold=entries.threshold,
        pr_recall=recall,
        pr_precision=precision,
        roc_fpr=roc_fpr,
        roc_tpr=roc_tpr,
        n_cases=n,
        n_lesions=int(positives),
        n_positive_cases=int(case_t.sum()),
        n_true_positives=int(((target_arr == 1) & (conf > 0)).sum()),
        n_false_positives=int(((target_arr == 0) & (conf > 0)).sum()),
    )


_SCALARS = ("ap", "auroc", "picai_score", "cpm")


def _weights(n: int, n_resamples: int, seed: int, batch: int):
    """Case weights of the bootstrap resamples (how often each case is drawn), in batches of ``batch`` resamples."""
    draws = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    for start in range(0, n_resamples, batch):
        chunk = draws[start : start + batch]
        weight = np.zeros((len(chunk), n))
        np.add.at(weight, (np.repeat(np.arange(len(chunk)), n), chunk.ravel()), 1.0)
        yield weight


def _resampled(entries: _Sorted, case_t, case_s, n: int, weight: np.ndarray) -> dict[str, np.ndarray]:
    """AP, AUROC, PI-CAI score and CPM of each resample (rows of ``weight``: case weights)."""
    tp, fp = entries.counts(weight)
    if len(entries.target):
        positives = (weight[:, entries.case] * entries.target).sum(axis=1)
    else:
        positives = np.zeros(len(weight))
    ap = _ap(tp, fp, positives, entries.threshold)
    fppc, sens = _froc(tp, fp, positives, n, entries.threshold)
    rates = np.array(CPM_RATES)
    cpm = np.array(
        [
            np.mean(_interp_sensitivity(rates, fppc[i], sens[i])) if positives[i] > 0 else np.nan
            for i in range(len(weight))
        ]
    )
    auroc = _auroc(case_t, case_s, weight)[0]
    return {"ap": ap, "auroc": auroc, "picai_score": (ap + auroc) / 2, "cpm": cpm}


def _batch(*entries: _Sorted, n: int) -> int:
    return max(1, 4_000_000 // max(max(len(e.target) for e in entries), n, 1))


def _bootstrap(entries: _Sorted, case_t, case_s, n: int, n_resamples: int, confidence: float, seed: int) -> dict:
    if n_resamples <= 0 or n < 2:
        return {k: (float("nan"), float("nan")) for k in _SCALARS}
    values: dict[str, list] = {k: [] for k in _SCALARS}
    for weight in _weights(n, n_resamples, seed, _batch(entries, n=n)):
        for k, v in _resampled(entries, case_t, case_s, n, weight).items():
            values[k].append(v)
    return {k: _percentile_ci(np.concatenate(v), confidence) for k, v in values.items()}


def detection_curves(
    matches: Sequence[CandidateMatch],
    *,
    case_ids: Sequence[Any] | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> DetectionCurves:
    """The detection curves of a set of cases, each a :class:`CandidateMatch` (see the module docstring).

    Parameters
    ----------
    matches : sequence of CandidateMatch
        One per case, from :func:`match_candidates`.
    case_ids : sequence, optional
        The cases' names (default 0, 1, …).
    n_resamples, confidence_level, seed
        The case-level bootstrap (``n_resamples=0``: no intervals).

    Returns
    -------
    DetectionCurves
    """
    ids = list(range(len(matches))) if case_ids is None else list(case_ids)
    if len(ids) != len(matches):
        raise ValueError(f"{len(ids)} case_ids for {len(matches)} cases")
    entry_case: list = []
    targets, confs = [], []
    for cid, m in zip(ids, matches):
        t, c = m.entries()
        entry_case.extend([cid] * len(t))
        targets.append(t)
        confs.append(c)
    return detection_curves_from_entries(
        entry_case,
        np.concatenate(targets) if targets else np.zeros(0),
        np.concatenate(confs) if confs else np.zeros(0),
        ids,
        [int(m.n_lesions > 0) for m in matches],
        [m.case_confidence for m in matches],
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
    )


def candidate_frame(
    candidates: Candidates,
    match: CandidateMatch,
    case: str | None = None,
    class_value: int = 1,
    *,
    voxel_mm3: float = float("nan"),
    affine: Any = None,
) -> pd.DataFrame:
    """The per-candidate table of one case in the tidy data-set format (:data:`ccmetrics.schema.PER_CANDIDATE`).

    Parameters
    ----------
    candidates, match
        The case's candidates and their matching.
    case, class_value
        The case id and class of every row.
    voxel_mm3 : float
        One voxel's volume in mm³ (NaN without a spacing).
    affine : ndarray, optional
        The image's voxel-to-patient (RAS, mm) matrix; the centroids in mm are NaN without it.

    Examples
    --------
    >>> from ccmetrics.engine.components import find_sites
    >>> from ccmetrics.metrics.candidates import find_candidates
    >>> gt = np.zeros((1, 8), bool); gt[0, :3] = True
    >>> prob = np.zeros((1, 8), np.float32); prob[0, :2] = 0.5; prob[0, 6] = 0.25
    >>> c = find_candidates(prob)
    >>> frame = candidate_frame(c, match_candidates(c, find_sites(gt)), "a")
    >>> print(frame[["candidate", "confidence", "volume", "outcome", "lesion", "score"]].to_string(index=False))
     candidate  confidence  volume outcome  lesion    score
             1        0.50       2      tp       1 0.666667
             2        0.25       1      fp       0 0.000000
    """
    voxel = site_centroids(candidates.sites)
    padded = np.full((len(voxel), 3), np.nan)
    padded[:, : voxel.shape[1]] = voxel
    patient = patient_coordinates(voxel, affine)
    volume = candidates.volumes.astype(np.int64)
    frame = pd.DataFrame(
        {
            schema.CASE: case,
            schema.CLASS: int(class_value),
            schema.CANDIDATE: np.arange(1, candidates.n + 1, dtype=np.int64),
            schema.CONFIDENCE: match.confidence,
            schema.VOLUME: volume,
            schema.VOLUME_MM3: volume * float(voxel_mm3),
            schema.OUTCOME: match.outcome.astype(object),
            schema.LESION: match.lesion,
            schema.SCORE: match.score,
            **{c: padded[:, i] for i, c in enumerate(schema.CENTROID_VOXEL)},
            **{c: patient[:, i] for i, c in enumerate(schema.CENTROID_MM)},
        }
    )
    return frame[schema.PER_CANDIDATE.columns()]


def _table_entries(per_case: pd.DataFrame, per_candidate: pd.DataFrame) -> dict[str, Any]:
    """The entries and cases of one class's tables (see :func:`detection_curves_from_tables`)."""
    cases = per_case[schema.CASE].astype(str).tolist()
    if len(set(cases)) != len(cases):
        raise ValueError("per_case holds a case twice: give the rows of one class (per_case[per_case['class'] == c])")
    n_lesions = per_case[schema.N_COMPONENTS].to_numpy()
    if np.isnan(n_lesions.astype(float)).any():
        raise ValueError("per_case holds rows without n_components (failed cases): leave them out first")
    n_lesions = n_lesions.astype(np.int64)
    cand_case = per_candidate[schema.CASE].astype(str).to_numpy()
    outcome = per_candidate[schema.OUTCOME].to_numpy()
    conf = per_candidate[schema.CONFIDENCE].to_numpy(float)
    is_tp, is_fp = outcome == schema.TRUE_POSITIVE, (outcome == schema.FALSE_POSITIVE) & (conf > 0)
    found = pd.Series(cand_case[is_tp]).value_counts()
    missed = n_lesions - np.array([int(found.get(c, 0)) for c in cases], np.int64)
    if (missed < 0).any():
        raise ValueError(
            "per_candidate holds more true positives for a case than its n_components: tables of two runs?"
        )
    return {
        "entry_case": np.concatenate(
            [cand_case[is_tp], cand_case[is_fp], np.repeat(np.array(cases, object), missed)]
        ).tolist(),
        "target": np.concatenate([np.ones(is_tp.sum()), np.zeros(is_fp.sum()), np.ones(missed.sum())]),
        "confidence": np.concatenate([conf[is_tp], conf[is_fp], np.zeros(missed.sum())]),
        "case_ids": cases,
        "case_target": (n_lesions > 0).astype(int),
        "case_confidence": per_case[schema.CASE_CONFIDENCE].to_numpy(float),
    }


def detection_curves_from_tables(
    per_case: pd.DataFrame,
    per_candidate: pd.DataFrame,
    *,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> DetectionCurves:
    """The curves of one class from the tidy tables: ``per_case`` (its evaluated rows: ``case``, ``n_components``,
    ``case_confidence``) and ``per_candidate`` (its rows).

    Each case's lesions are its ``n_components``; those without a true-positive candidate enter as missed (0).
    Rows of failed cases must be left out by the caller (they have no ``n_components``): such a case is no case
    of the curves, and the caller says so.

    Examples
    --------
    >>> per_case = pd.DataFrame({"case": ["a", "b"], "n_components": [2, 0], "case_confidence": [0.9, 0.4]})
    >>> per_candidate = pd.DataFrame({"case": ["a", "b"], "confidence": [0.9, 0.4], "outcome": ["tp", "fp"]})
    >>> c = detection_curves_from_tables(per_case, per_candidate, n_resamples=0)
    >>> c.n_lesions, c.ap, c.auroc, c.froc_sensitivity.tolist()
    (2, 0.5, 1.0, [0.5, 0.5])
    """
    return detection_curves_from_entries(
        **_table_entries(per_case, per_candidate),
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        seed=seed,
    )


def _prepared(inputs: dict[str, Any], order: list[str]) -> tuple[_Sorted, np.ndarray, np.ndarray]:
    index = {c: i for i, c in enumerate(order)}
    keep = [i for i, c in enumerate(inputs["case_ids"]) if c in index]
    at = np.array([index[inputs["case_ids"][i]] for i in keep], np.int64)
    case_t = np.zeros(len(order), np.int64)
    case_s = np.zeros(len(order))
    case_t[at] = np.asarray(inputs["case_target"])[keep]
    case_s[at] = np.asarray(inputs["case_confidence"], float)[keep]
    chosen = np.array([c in index for c in inputs["entry_case"]], bool)
    entry_index = np.array([index[c] for c, k in zip(inputs["entry_case"], chosen) if k], np.int64)
    entries = _Sorted(np.asarray(inputs["target"])[chosen].astype(np.int64), inputs["confidence"][chosen], entry_index)
    return entries, case_t, case_s


def compare_detection_curves(
    a: tuple[pd.DataFrame, pd.DataFrame],
    b: tuple[pd.DataFrame, pd.DataFrame],
    *,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> tuple[pd.DataFrame, list[str]]:
    """AP, AUROC, the PI-CAI score and CPM of two runs on the same cases, and a paired bootstrap of each difference.

    Parameters
    ----------
    a, b : tuple of pandas.DataFrame
        Each run's ``(per_case, per_candidate)`` of one class (evaluated rows of ``per_case``). Only the cases
        evaluated in both enter.
    n_resamples, confidence_level, seed
        The paired case-level bootstrap: the same resampled cases for both runs, each resample's difference
        ``a − b``; the interval is its percentile interval, the p-value two-sided,
        ``2 · min((1 + #{d ≤ 0}) / (1 + B), (1 + #{d ≥ 0}) / (1 + B))`` over the B resamples, at most 1 (a
        bootstrap p-value, approximate, never below 2 / (1 + B)).

    Returns
    -------
    table : pandas.DataFrame
        Index ``metric`` (ap, auroc, picai_score, cpm); columns ``a``, ``b``, ``difference``, ``ci_low``,
        ``ci_high``, ``p_value``, ``n``.
    excluded : list of str
        Cases evaluated in one run only.

    Examples
    --------
    >>> pc = pd.DataFrame({"case": ["x", "y", "z"], "n_components": [1, 0, 1], "case_confidence": [0.9, 0.2, 0.8]})
    >>> good = pd.DataFrame({"case": ["x", "y", "z"], "confidence": [0.9, 0.2, 0.8], "outcome": ["tp", "fp", "tp"]})
    >>> bad = good.assign(outcome=["fp", "fp", "tp"])
    >>> table, excluded = compare_detection_curves((pc, good), (pc, bad), n_resamples=200)
    >>> table.loc["ap", ["a", "b", "difference"]].round(3).tolist(), excluded
    ([1.0, 0.25, 0.75], [])
    """
    inputs = [_table_entries(*a), _table_entries(*b)]
    both = sorted(set(inputs[0]["case_ids"]) & set(inputs[1]["case_ids"]))
    excluded = sorted(set(inputs[0]["case_ids"]) ^ set(inputs[1]["case_ids"]))
    n = len(both)
    prepared = [_prepared(x, both) for x in inputs]
    point = [_resampled(e, t, s, max(n, 1), np.ones((1, n))) for e, t, s in prepared]
    diffs: dict[str, list] = {k: [] for k in _SCALARS}
    if n_resamples > 0 and n >= 2:
        for weight in _weights(n, n_resamples, seed, _batch(prepared[0][0], prepared[1][0], n=n)):
            ra, rb = (_resampled(e, t, s, n, weight) for e, t, s in prepared)
            for k in _SCALARS:
                diffs[k].append(ra[k] - rb[k])
    rows = []
    for k in _SCALARS:
        d = np.concatenate(diffs[k]) if diffs[k] else np.zeros(0)
        d = d[np.isfinite(d)]
        lo, hi = _percentile_ci(d, confidence_level)
        below, above = (1 + np.sum(d <= 0)) / (1 + len(d)), (1 + np.sum(d >= 0)) / (1 + len(d))
        p = min(1.0, 2 * min(below, above)) if len(d) else float("nan")
        va, vb = float(point[0][k][0]), float(point[1][k][0])
        rows.append(
            {"metric": k, "a": va, "b": vb, "difference": va - vb, "ci_low": lo, "ci_high": hi, "p_value": p, "n": n}
        )
    return pd.DataFrame(rows).set_index("metric"), excluded
