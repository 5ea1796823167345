"""Candidates matched one-to-one to lesions, case by case: the first half of the lesion-level detection curves.

The conventions are picai_eval's (the PI-CAI challenge's evaluation, version 1.4), reproduced exactly and
tested against it; :mod:`ccmetrics.metrics.detection_curves` turns the matches of all cases into FROC, AP,
AUROC and CPM.

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

Cost: O(P) for the P touching pairs plus the Hungarian step on the passing pairs' rows and columns.

Examples
--------
A lesion found by the more confident of two candidates:

>>> import numpy as np
>>> from ccmetrics.engine.components import find_sites
>>> from ccmetrics.metrics.candidates import find_candidates
>>> gt = np.zeros((1, 12), bool); gt[0, 0:4] = True
>>> prob = np.zeros((1, 12), np.float32); prob[0, 0:3] = 0.75; prob[0, 6:8] = 0.5
>>> m = match_candidates(find_candidates(prob), find_sites(gt), "iou:0.1")
>>> m.outcome.tolist(), m.lesion.tolist(), m.lesion_confidence.tolist()
(['tp', 'fp'], [1, 0], [0.75])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.components import Sites
from ..engine.config import current
from .candidates import Candidates
from .detection_rules import DetectionRule
from .matching import site_overlaps

__all__ = ["MATCH_BY", "OUTCOMES", "CandidateMatch", "match_candidates", "pair_scores"]

#: what a candidate can be after matching
OUTCOMES = ("tp", "fp", "ignored")
#: what the one-to-one assignment maximizes besides the number of matches: the summed overlap (picai_eval) or
#: the summed confidence
MATCH_BY = ("overlap", "confidence")


def pair_scores(rule: DetectionRule, intersection: np.ndarray, gt_size: np.ndarray, cand_size: np.ndarray):
    """The detection rule's score of lesion–candidate pairs, and whether each passes.

    Parameters
    ----------
    rule : DetectionRule
        ``iou:T``, ``dice:T``, ``coverage:T`` or ``overlap`` (which scores by IoU and passes any shared voxel).
    intersection, gt_size, cand_size : ndarray of int
        Per pair: shared voxels, the lesion's voxels, the candidate's voxels.

    Returns
    -------
    score : ndarray of float64
    passes : ndarray of bool

    Examples
    --------
    >>> score, ok = pair_scores(DetectionRule.parse("iou:0.1"), np.array([1, 1]), np.array([10, 10]),
    ...                         np.array([1, 2]))
    >>> score.tolist(), ok.tolist()
    ([0.1, 0.09090909090909091], [True, False])
    """
    inter = np.asarray(intersection, np.float64)
    g = np.asarray(gt_size, np.float64)
    c = np.asarray(cand_size, np.float64)
    if rule.kind in ("centroid", "suv_max"):
        raise ValueError(
            f"the {rule.kind} rule gives no score to match candidates by: use iou:T (picai_eval's iou:0.1), dice:T, "
            "coverage:T or overlap"
        )
    if rule.kind == "dice":
        score = 2 * inter / (g + c)
    elif rule.kind == "coverage":
        score = inter / g
    else:
        score = inter / (g + c - inter)
    passes = inter > 0 if rule.kind == "overlap" else (inter > 0) & (score >= float(rule.threshold or 0.0))
    return score, passes


@dataclass(frozen=True)
class CandidateMatch:
    """One case's candidates matched to its lesions.

    Candidates are numbered 1..M and lesions 1..K as in their :class:`~ccmetrics.engine.components.Sites`;
    arrays are indexed from 0.

    Attributes
    ----------
    rule : DetectionRule
    match_by : str
    confidence : ndarray of float64, (M,)
        Each candidate's confidence.
    outcome : ndarray of str, (M,)
        ``"tp"``, ``"fp"`` or ``"ignored"``.
    lesion : ndarray of int64, (M,)
        The lesion a true positive is matched to; 0 otherwise.
    score : ndarray of float64, (M,)
        The rule's score with the matched lesion; for the others, the best score with any lesion (0 if none).
    lesion_candidate : ndarray of int64, (K,)
        The candidate matched to each lesion; 0 when missed.
    lesion_confidence : ndarray of float64, (K,)
        The matched candidate's confidence; 0 when missed.
    case_confidence : float
        The highest candidate confidence, 0 without candidates.
    """

    rule: DetectionRule
    match_by: str
    confidence: np.ndarray
    outcome: np.ndarray
    lesion: np.ndarray
    score: np.ndarray
    lesion_candidate: np.ndarray
    lesion_confidence: np.ndarray
    case_confidence: float

    @property
    def n_lesions(self) -> int:
        """Lesions of the case."""
        return len(self.lesion_candidate)

    @property
    def tp(self) -> int:
        """Matched candidates (= found lesions)."""
        return int((self.outcome == "tp").sum())

    @property
    def fp(self) -> int:
        """False-positive candidates."""
        return int((self.outcome == "fp").sum())

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """``(target, confidence)``: one entry per lesion (1, its confidence or 0), then per false positive (0, …) of
        confidence > 0 (one of confidence 0 is in no detection map picai_eval reads, and on no operating point).

        These are picai_eval's ``lesion_results`` (without the overlap) in this module's order.
        """
        fp = self.confidence[(self.outcome == "fp") & (self.confidence > 0)]
        target = np.concatenate([np.ones(self.n_lesions, np.int8), np.zeros(len(fp), np.int8)])
        return target, np.concatenate([self.lesion_confidence, fp])


def match_candidates(
    candidates: Candidates,
    lesions: Sites,
    rule: Any = "iou:0.1",
    *,
    match_by: str = "overlap",
    ignore_unmatched_passing: bool = True,
) -> CandidateMatch:
    """Match one case's candidates to its lesions one-to-one (the module's steps 1–5).

    Parameters
    ----------
    candidates : Candidates
        From :func:`~ccmetrics.metrics.candidates.find_candidates`.
    lesions : Sites
        The GT's lesions (:func:`~ccmetrics.engine.components.find_sites`; picai_eval labels them
        26-connected, the default).
    rule : str or DetectionRule
        Default ``"iou:0.1"``, picai_eval's.
    match_by : {"overlap", "confidence"}
        What the assignment maximizes after the number of matches (see the module docstring).
    ignore_unmatched_passing : bool
        picai_eval's ``allow_unmatched_candidates_with_minimal_overlap`` (default True).

    Returns
    -------
    CandidateMatch

    Examples
    --------
    picai_eval's objective keeps two good matches rather than three weak ones? Here one lesion, two
    candidates: the better-overlapping one wins, the other (passing too) is left out:

    >>> from ccmetrics.engine.components import find_sites
    >>> from ccmetrics.metrics.candidates import find_candidates
    >>> gt = np.zeros((1, 10), bool); gt[0, :6] = True
    >>> prob = np.zeros((1, 10), np.float32); prob[0, :4] = 0.25; prob[0, 5] = 0.5
    >>> m = match_candidates(find_candidates(prob), find_sites(gt))
    >>> m.outcome.tolist(), m.lesion_confidence.tolist()
    (['tp', 'ignored'], [0.25])
    >>> match_candidates(find_candidates(prob), find_sites(gt), match_by="confidence").lesion_confidence.tolist()
    [0.5]
    """
    rule = DetectionRule.parse(rule)
    if match_by not in MATCH_BY:
        raise ValueError(f"match_by must be 'overlap' (picai_eval) or 'confidence', got {match_by!r}")
    sites = candidates.sites
    if sites.shape != lesions.shape:
        raise ValueError(f"the candidates' image has shape {sites.shape}, the GT {lesions.shape}")
    k, m = lesions.n, sites.n
    conf = np.asarray(candidates.confidence, np.float64)
    ov = site_overlaps(sites, lesions)
    g_size, c_size = ov.gt_sizes[ov.pair_gt], ov.pred_sizes[ov.pair_pred]
    score, passes = pair_scores(rule, ov.pair_intersection, g_size, c_size)
    passes &= conf[ov.pair_pred] > 0  # confidence 0: no candidate of the detection map picai_eval reads
    pg, pc, ps = ov.pair_gt[passes], ov.pair_pred[passes], score[passes]
    lesion_candidate = np.zeros(k, np.int64)
    cand_lesion = np.zeros(m, np.int64)
    cand_score = np.zeros(m)
    if len(score):
        np.maximum.at(cand_score, ov.pair_pred, score)  # the best score of each candidate, for the table
    if len(ps):
        if match_by == "overlap":
            value = _picai_weights(rule, ov.pair_intersection[passes], g_size[passes], c_size[passes], ps)
        else:
            value = conf[pc]
        gi, ci = _assign(pg, pc, 1 + value, k, m)
        lesion_candidate[gi] = ci + 1
        cand_lesion[ci] = gi + 1
        order = np.argsort(pg * m + pc)
        at = np.searchsorted((pg * m + pc)[order], gi * m + ci)
        cand_score[ci] = ps[order][at]  # the rule's exact score with the matched lesion
    outcome = np.full(m, "fp", dtype="<U7")
    if ignore_unmatched_passing and len(pc):
        outcome[np.unique(pc)] = "ignored"
    outcome[cand_lesion > 0] = "tp"
    lesion_conf = np.where(lesion_candidate > 0, conf[np.maximum(lesion_candidate - 1, 0)] if m else 0.0, 0.0)
    return CandidateMatch(
        rule,
        match_by,
        conf,
        outcome,
        cand_lesion,
        cand_score,
        lesion_candidate,
        lesion_conf.astype(np.float64),
        candidates.case_confidence,
    )


def _picai_weights(rule: DetectionRule, inter, g_size, c_size, score) -> np.ndarray:
    """picai_eval's overlap of each passing pair, with its 1e-8 in numerator and denominator (which orders pairs
    of equal IoU by the smaller union): so that the assignment breaks exact ties as picai_eval's does."""
    eps = 1e-8
    inter, g, c = (np.asarray(a, np.float64) for a in (inter, g_size, c_size))
    if rule.kind in ("iou", "overlap"):
        return (inter + eps) / (g + c - inter + eps)
    if rule.kind == "dice":
        return (2 * inter + eps) / (g + c + eps)
    return np.asarray(score, np.float64)


def _assign(pg: np.ndarray, pc: np.ndarray, weight: np.ndarray, k: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The Hungarian assignment maximizing the summed weight of the passing pairs (lesion, candidate indices).

    Solved on the full lesions x candidates matrix as picai_eval does (so that exact ties go its way) up to
    :attr:`ccmetrics.engine.config.EngineConfig.assignment_full_below` entries; above, on the rows and columns that
    hold a passing pair only (the same total; an exact tie may then be broken otherwise).
    """
    if k * m <= current().assignment_full_below:
        rows, cols = np.arange(k), np.arange(m)
        matrix = np.zeros((k, m))
        matrix[pg, pc] = weight
    else:
        rows, rinv = np.unique(pg, return_inverse=True)
        cols, cinv = np.unique(pc, return_inverse=True)
        matrix = np.zeros((len(rows), len(cols)))
        matrix[rinv, cinv] = weight
    from scipy.optimize import linear_sum_assignment  # scipy.optimize: 40 ms to import, needed here only

    r, c = linear_sum_assignment(matrix, maximize=True)
    keep = matrix[r, c] > 0
    return rows[r[keep]], cols[c[keep]]
