"""The report's lesion detection from probability maps: the section of curves and each candidate's confidence.

A result folder of ``ccmetrics evaluate --probabilities`` holds ``per_candidate.csv`` (every lesion candidate of
the maps, its confidence and outcome: ``tp`` matched to the GT lesion ``lesion``, ``fp`` or ``ignored``) and, in
``summary.json``, ``detection_curves`` (AP, AUROC, PI-CAI score, CPM with their intervals, the sensitivity at
1/8 to 8 false positives per case), ``calibration`` and, with ``--thresholds``, ``thresholds``. Nothing here
recomputes them: :func:`section` reads ``summary.json`` as the evaluation wrote it and finds the figures the
evaluation drew (``plots/froc.png``, ``pr.png``, ``roc.png``, ``reliability.png``, ``thresholds.png``,
``_class<k>`` for each class of several). :func:`attach_candidates` gives each lesion of the page the confidence
of the candidate matched to it (None: missed) and each case its false-positive candidates. A folder without
``per_candidate.csv`` gets neither (the page is then the page without probability maps).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd

from .. import schema
from . import data

__all__ = [
    "FIGURES",
    "MAX_CASE_CANDIDATES",
    "SCORES",
    "attach_candidates",
    "candidate_counts",
    "candidate_groups",
    "figure_paths",
    "fp_rate_label",
    "lesion_confidences",
    "section",
]

#: the detection section's figures, in the page's order (the file name before ``_class<k>`` and ``.png``)
FIGURES = ("froc", "pr", "roc", "reliability", "thresholds")
#: the scores of ``detection_curves`` shown with their intervals: key and display name
SCORES = (("ap", "AP"), ("auroc", "AUROC"), ("picai_score", "PI-CAI score"), ("cpm", "CPM"))
#: a case section lists at most this many false-positive candidates, the most confident first (the finder: all)
MAX_CASE_CANDIDATES = 10


def fp_rate_label(key: Any) -> str:
    """A false-positive rate of ``sensitivity_at_fp_per_case`` as the page writes it.

    >>> fp_rate_label("0.125"), fp_rate_label("1"), fp_rate_label(8.0)
    ('1/8', '1', '8')
    """
    return str(Fraction(float(key)).limit_denominator(1024))


# ---------------------------------------------------------------- candidates of the cases


def candidate_groups(per_candidate: pd.DataFrame) -> dict[tuple[str, int], pd.DataFrame]:
    """``per_candidate`` split by case and class, keyed ``(case, class)`` (the case as text)."""
    out: dict[tuple[str, int], pd.DataFrame] = {}
    key: Any  # (case, class)
    for key, rows in per_candidate.groupby([schema.CASE, schema.CLASS], sort=False):
        out[(str(key[0]), int(key[1]))] = rows
    return out


def lesion_confidences(candidates: pd.DataFrame) -> dict[int, tuple[int, float]]:
    """The candidate matched to each lesion of one case and class, and its confidence.

    Parameters
    ----------
    candidates : DataFrame
        Rows of ``per_candidate`` of one case and class.

    Returns
    -------
    dict of int to (int, float)
        Lesion (``per_component``'s number) to ``(candidate, confidence)`` of the ``tp`` candidate whose
        ``lesion`` it is; a lesion without one is missing (missed). The matching is one to one; were a lesion
        named twice, the more confident candidate is kept.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": [1, 2, 3], "confidence": [0.9, 0.4, 0.7], "outcome": ["tp", "fp", "tp"],
    ...                   "lesion": [2, 0, 1]})
    >>> lesion_confidences(t)
    {2: (1, 0.9), 1: (3, 0.7)}
    """
    out: dict[int, tuple[int, float]] = {}
    matched = candidates[(candidates[schema.OUTCOME] == schema.TRUE_POSITIVE) & (candidates[schema.LESION] > 0)]
    for row in matched.itertuples(index=False):
        lesion, confidence = int(getattr(row, schema.LESION)), float(getattr(row, schema.CONFIDENCE))
        if lesion not in out or confidence > out[lesion][1]:
            out[lesion] = (int(getattr(row, schema.CANDIDATE)), confidence)
    return out


def _false_positives(candidates: pd.DataFrame, anchor: str, unit: str) -> list[dict[str, Any]]:
    """The ``fp`` candidates of one case and class, the most confident first (ties: by number)."""
    fps = candidates[candidates[schema.OUTCOME] == schema.FALSE_POSITIVE]
    fps = fps.sort_values([schema.CONFIDENCE, schema.CANDIDATE], ascending=[False, True])
    return [
        {
            "id": f"{anchor}-candidate-{int(getattr(row, schema.CANDIDATE))}",
            "label": int(getattr(row, schema.CANDIDATE)),
            "candidate": int(getattr(row, schema.CANDIDATE)),
            "confidence": float(getattr(row, schema.CONFIDENCE)),
            "volume": getattr(row, schema.VOLUME_MM3) / 1000.0 if unit == "ml" else getattr(row, schema.VOLUME),
            "score": getattr(row, schema.SCORE),
        }
        for row in fps.itertuples(index=False)
    ]


def _on_components(false_positives: Sequence[dict[str, Any]], candidates: pd.DataFrame) -> set[int]:
    """Give each false-positive component of the page the confidence of the candidate that is it, when the
    candidates were the prediction's components (``--candidates prediction``: the same numbers, checked by volume);
    returns their numbers."""
    by_number = {int(getattr(r, schema.CANDIDATE)): r for r in candidates.itertuples(index=False)}
    same = set()
    for fp in false_positives:
        row = by_number.get(int(fp["label"]))
        if row is not None and int(getattr(row, schema.VOLUME)) == fp.get("voxels"):
            fp.update(candidate=int(fp["label"]), confidence=float(getattr(row, schema.CONFIDENCE)))
            same.add(int(fp["label"]))
    return same


def attach_candidates(
    cases: Sequence[dict[str, Any]], per_candidate: pd.DataFrame, unit: str, *, method: str | None = None
) -> None:
    """Put the candidates of the probability maps into the case entries of the page.

    Each lesion gets ``confidence`` (of the candidate matched to it; None: missed) and ``candidate`` (its
    number, or None). With ``method`` ``"prediction"`` (the candidates were the prediction's components), each
    false-positive component read from the images gets the ``confidence`` and ``candidate`` of the candidate
    that is it. Each case gets ``fp_candidates`` (its ``fp`` candidates not already shown as a false-positive
    component, the most confident first: ``id``, ``label`` and ``candidate`` (its number), ``confidence``,
    ``volume`` in ``unit``, ``score``), ``n_fp_candidates`` (all its ``fp`` candidates), ``n_fp_on_components``
    and ``n_ignored_candidates``; a failed case gets an empty list and zeros.
    """
    groups = candidate_groups(per_candidate)
    empty = per_candidate.iloc[:0]
    for case in cases:
        mine = groups.get((str(case["case"]), int(case["class"])), empty)
        matched = lesion_confidences(mine)
        for lesion in case["lesions"]:
            candidate, confidence = matched.get(int(lesion["label"]), (None, None))
            lesion.update(candidate=candidate, confidence=confidence)
        same = _on_components(case["false_positives"] or [], mine) if method == "prediction" else set()
        fps = _false_positives(mine, case["anchor"], unit)
        case.update(
            fp_candidates=[fp for fp in fps if fp["label"] not in same],
            n_fp_candidates=len(fps),
            n_fp_on_components=sum(fp["label"] in same for fp in fps),
            n_ignored_candidates=int((mine[schema.OUTCOME] == schema.IGNORED).sum()) if len(mine) else 0,
        )


def candidate_counts(cases: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The page's counts of lesions and candidates, after :func:`attach_candidates`.

    Keys: ``lesions``, ``missed`` (lesions without a candidate), ``fp_candidates``, ``fp_on_components`` (those
    shown as false-positive components of the segmentation), ``found_without_candidate``
    (lesions the segmentation detected that no candidate matched) and ``candidate_not_found`` (lesions matched by a
    candidate that the segmentation missed).
    """
    lesions = [lesion for case in cases for lesion in case["lesions"]]
    return {
        "lesions": len(lesions),
        "missed": sum(lesion["confidence"] is None for lesion in lesions),
        "fp_candidates": sum(case["n_fp_candidates"] for case in cases),
        "fp_on_components": sum(case["n_fp_on_components"] for case in cases),
        "found_without_candidate": sum(bool(les["detected"]) and les["confidence"] is None for les in lesions),
        "candidate_not_found": sum(not les["detected"] and les["confidence"] is not None for les in lesions),
    }


# ---------------------------------------------------------------- the section


def _interval(entry: Any) -> dict[str, Any]:
    """``{"value": v, "ci": [low, high]}`` of ``summary.json`` as ``value``, ``low``, ``high`` (None: undefined)."""
    entry = entry if isinstance(entry, dict) else {}
    ci = entry.get("ci") or [None, None]
    return {"value": entry.get("value"), "low": ci[0], "high": ci[1]}


def _figure(folder: data.ResultFolder, stem: str, suffix: str) -> dict[str, Any] | None:
    """The evaluation's figure ``plots/<stem><suffix>.png`` as an inline image, None when it was not drawn."""
    from .thumbnails import data_uri

    path = folder.path / "plots" / f"{stem}{suffix}.png"
    if path not in folder.plots:
        return None
    return {"kind": stem, "name": path.name, "src": data_uri(path.read_bytes())}


def _calibration(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The calibration of one class: voxel Brier score and ECE with intervals, the candidates' reliability bins.

    ``n_candidates``, ``n_lesion_candidates`` and ``mean_confidence`` are the sums and the weighted mean over
    the reliability bins (every candidate is in one bin).
    """
    if not entry:
        return None
    bins = [b for b in entry.get("lesion_reliability") or [] if b.get("n")]
    n = sum(int(b["n"]) for b in bins)
    weighted = sum(int(b["n"]) * float(b["mean_confidence"]) for b in bins if b.get("mean_confidence") is not None)
    for b in bins:
        fraction, confidence = b.get("tp_fraction"), b.get("mean_confidence")
        b["gap"] = None if fraction is None or confidence is None else float(fraction) - float(confidence)
    return {
        "n_cases": entry.get("n_cases"),
        "brier": _interval(entry.get(schema.BRIER)),
        "ece": _interval(entry.get(schema.ECE)),
        "lesion_ece": entry.get("lesion_ece"),
        "bins": bins,
        "n_candidates": n,
        "n_lesion_candidates": sum(int(b["tp"]) for b in bins),
        "mean_confidence": weighted / n if n else None,
    }


def _thresholds(doc: dict[str, Any], class_value: int, folder: data.ResultFolder) -> dict[str, Any] | None:
    """The best threshold of the map by each global and CC score of one class, with the means there."""
    swept = doc.get("thresholds")
    if not isinstance(swept, dict):
        return None
    means = [m for m in swept.get("means") or [] if int(m[schema.CLASS]) == class_value]
    at = {float(m[schema.THRESHOLD]): m for m in means}
    best = []
    for key, picks in (swept.get("best") or {}).items():
        k, metric = key.split("/", 1)
        if int(k) != class_value:
            continue
        row: dict[str, Any] = {"key": metric, "name": folder.label(metric), "cc_name": folder.label(schema.cc(metric))}
        for kind, column in (("standard", metric), ("cc", schema.cc(metric))):
            t = picks.get(kind)
            row[kind] = t
            row[f"{kind}_mean"] = None if t is None else at.get(float(t), {}).get(column)
        best.append(row)
    if not means and not best:
        return None
    thresholds = sorted(at)
    return {
        "best": best,
        "n_thresholds": len(thresholds),
        "low": thresholds[0] if thresholds else None,
        "high": thresholds[-1] if thresholds else None,
        "n_cases": max((int(m["n"]) for m in means if m.get("n") is not None), default=None),
    }


def _one_class(
    folder: data.ResultFolder, key: str, curves: dict[str, Any], suffixes: dict[str, str], title: str
) -> dict[str, Any]:
    """The section's entry of one class (``key``: the class in ``summary.json``)."""
    doc = folder.doc
    k = int(key)
    rates = curves.get("sensitivity_at_fp_per_case") or {}
    n_cases, n_positive = curves.get("n_cases"), curves.get("n_positive_cases")
    calibration = _calibration((doc.get("calibration") or {}).get(key))
    thresholds = _thresholds(doc, k, folder)
    scores = [{"key": s, "name": name, **_interval(curves.get(s))} for s, name in SCORES]
    figures = [
        _figure(folder, stem, suffixes[stem])
        for stem in FIGURES
        if not (stem == "reliability" and calibration is None) and not (stem == "thresholds" and thresholds is None)
    ]
    return {
        "class": k,
        "title": title,
        "n_cases": n_cases,
        "n_positive_cases": n_positive,
        "n_negative_cases": None if n_cases is None or n_positive is None else int(n_cases) - int(n_positive),
        "n_lesions": curves.get("n_lesions"),
        "n_true_positives": curves.get("n_true_positives"),
        "n_false_positives": curves.get("n_false_positives"),
        "scores": scores,
        "score": {s["key"]: s for s in scores},
        "sensitivity": [
            {"key": r, "rate": fp_rate_label(r), "value": rates[r]} for r in sorted(rates, key=lambda r: float(r))
        ],
        "calibration": calibration,
        "thresholds": thresholds,
        "figures": [f for f in figures if f is not None],
    }


def section(folder: data.ResultFolder) -> list[dict[str, Any]]:
    """The lesion-detection section of the page: one entry per class of ``summary.json``'s ``detection_curves``.

    Each entry: ``class``, ``title`` (the class's name; empty for one class), counts (``n_cases``,
    ``n_positive_cases``, ``n_negative_cases``, ``n_lesions``, ``n_true_positives``, ``n_false_positives``),
    ``scores`` (AP, AUROC, PI-CAI score, CPM: ``key``, ``name``, ``value``, ``low``, ``high``; ``score``: the same
    by key), ``sensitivity``
    (``rate`` such as ``"1/8"``, ``value``), ``calibration`` (``_calibration``, None without),
    ``thresholds`` (the best threshold by each score, None without ``--thresholds``) and ``figures`` (the
    evaluation's figures, inline). Empty for a folder without probability maps.
    """
    curves = folder.doc.get("detection_curves")
    if not isinstance(curves, dict) or not curves:
        return []
    names = folder.result.class_names
    several = {
        "froc": len(curves) > 1,
        "pr": len(curves) > 1,
        "roc": len(curves) > 1,
        "reliability": len(folder.doc.get("calibration") or {}) > 1,
        "thresholds": len({m[schema.CLASS] for m in (folder.doc.get("thresholds") or {}).get("means") or []}) > 1,
    }
    out = []
    for key in sorted(curves, key=int):
        suffixes = {stem: f"_class{int(key)}" if several[stem] else "" for stem in FIGURES}
        title = names.get(int(key), f"class {int(key)}") if len(curves) > 1 else ""
        out.append(_one_class(folder, key, curves[key], suffixes, title))
    return out


def figure_paths(entries: Sequence[dict[str, Any]], folder: data.ResultFolder) -> set[Path]:
    """The plot files the section shows (left out of the page's other plots)."""
    return {folder.path / "plots" / f["name"] for e in entries for f in e["figures"]}
