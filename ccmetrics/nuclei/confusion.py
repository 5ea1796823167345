"""Detection and classification scores of nuclei from a confusion matrix with a "no object" row and column.

Step 5 of :func:`ccmetrics.nuclei.evaluate` (see :mod:`ccmetrics.nuclei.metrics`): the one class-agnostic matching
gives the matrix, :func:`confusion_frame` labels it and :func:`metrics_from_confusion` scores detection (class
ignored) and classification (matched nuclei only) apart. Cost: O(C^2) for C classes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["NO_OBJECT", "confusion_frame", "metrics_from_confusion"]

#: label of row / column 0 of the confusion matrix
NO_OBJECT = "no object"


def _ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else math.nan


def confusion_frame(matrix: np.ndarray, classes: Sequence[Any]) -> pd.DataFrame:
    """Label a confusion matrix: rows GT class, columns predicted class, ``"no object"`` first.

    Examples
    --------
    >>> confusion_frame(np.array([[0, 1], [2, 3]]), [1])  # doctest: +NORMALIZE_WHITESPACE
    pred       no object  1
    gt
    no object          0  1
    1                  2  3
    """
    labels = [NO_OBJECT, *list(classes)]
    return pd.DataFrame(
        np.asarray(matrix),
        index=pd.Index(labels, name="gt", dtype=object),
        columns=pd.Index(labels, name="pred", dtype=object),
    )


def metrics_from_confusion(cm: np.ndarray | pd.DataFrame) -> tuple[dict[str, float], dict[str, Any]]:
    """Detection and classification scores from a confusion matrix with a "no object" row/column 0.

    Parameters
    ----------
    cm : ndarray or pandas.DataFrame, shape (C + 1, C + 1)
        Counts.  ``cm[i, j]`` (i, j >= 1): matched GT objects of class i
        predicted as class j; ``cm[0, j]``: unmatched predictions of class j
        (false positives); ``cm[i, 0]``: missed GT objects of class i (false
        negatives); ``cm[0, 0]`` must be 0.  A DataFrame's labels name the
        classes in ``per_class``.

    Returns
    -------
    detection : dict
        Class ignored. ``tp = sum(cm[1:, 1:])``, ``fp = sum(cm[0, :])``,
        ``fn = sum(cm[:, 0])``; ``precision = tp / (tp + fp)``,
        ``recall = tp / (tp + fn)``, ``f1 = 2 tp / (2 tp + fp + fn)`` (NaN when
        the denominator is 0).
    classification : dict
        On the matched objects only, ``M = cm[1:, 1:]``:
        ``n_matched``; ``accuracy = trace(M) / sum(M)``;
        ``balanced_accuracy``: the mean of the diagonal of the row-normalised
        M over the classes with matched GT objects (= the mean per-class
        recall); ``macro_f1`` and ``macro_f1_norm``: the mean of the per-class
        F1 (raw, row-normalised) over classes with matched GT or predicted
        objects; ``per_class``: a DataFrame (index: class) with ``support``
        (matched GT objects), ``n_predicted`` (matched objects predicted as the
        class), one-vs-rest ``precision``, ``recall``, ``f1`` on the raw counts
        and ``precision_norm``, ``recall_norm``, ``f1_norm`` on the
        row-normalised matrix (each GT class weighs the same, so precision no
        longer depends on class prevalence).  Undefined values are NaN.

    Examples
    --------
    Two classes; 10 GT objects of class 1 (8 matched: 6 right, 2 as class 2,
    2 missed), 4 of class 2 (all matched, 1 as class 1), 3 false positives:

    >>> cm = np.array([[0, 1, 2],
    ...                [2, 6, 2],
    ...                [0, 1, 3]])
    >>> det, cls = metrics_from_confusion(cm)
    >>> det["tp"], det["fp"], det["fn"], round(det["f1"], 4)
    (12, 3, 2, 0.8276)
    >>> cls["balanced_accuracy"]  # (6/8 + 3/4) / 2
    0.75
    >>> cls["per_class"][["precision", "recall", "precision_norm"]].round(4).values.tolist()
    [[0.8571, 0.75, 0.75], [0.6, 0.75, 0.75]]
    """
    labels = None
    if isinstance(cm, pd.DataFrame):
        labels = list(cm.index)[1:]
        cm = cm.to_numpy()
    m = np.asarray(cm)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
        raise ValueError(f"the confusion matrix must be square, (C + 1) x (C + 1), got shape {m.shape}")
    if not np.issubdtype(m.dtype, np.number) or np.isnan(m.astype(float)).any() or (m < 0).any():
        raise ValueError("the confusion matrix must hold non-negative counts")
    if m[0, 0] != 0:
        raise ValueError(
            f"cm[0, 0] (no GT object matched with no prediction) must be 0, got {m[0, 0]}; "
            "row and column 0 are the 'no object' row and column"
        )
    n = m.shape[0] - 1
    labels = list(range(1, n + 1)) if labels is None else labels
    inner = m[1:, 1:].astype(np.float64)
    tp, fp, fn = m[1:, 1:].sum(), m[0, :].sum(), m[:, 0].sum()
    tp, fp, fn = (int(v) if float(v).is_integer() else float(v) for v in (tp, fp, fn))
    detection = {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
    }

    rows, cols, diag = inner.sum(axis=1), inner.sum(axis=0), np.diag(inner)
    with np.errstate(invalid="ignore", divide="ignore"):
        normalised = np.where(rows[:, None] > 0, inner / np.where(rows > 0, rows, 1)[:, None], 0.0)
        n_rows, n_cols, n_diag = normalised.sum(axis=1), normalised.sum(axis=0), np.diag(normalised)

        def safe(num, den):
            return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)

        per_class = pd.DataFrame(
            {
                "support": rows,
                "n_predicted": cols,
                "precision": safe(diag, cols),
                "recall": safe(diag, rows),
                "f1": safe(2 * diag, rows + cols),
                "precision_norm": safe(n_diag, n_cols),
                "recall_norm": safe(n_diag, n_rows),
                "f1_norm": safe(2 * n_diag, n_rows + n_cols),
            },
            index=pd.Index(labels, name="class"),
        )
    present = rows > 0
    total = inner.sum()
    classification = {
        "n_matched": int(total) if float(total).is_integer() else float(total),
        "accuracy": _ratio(diag.sum(), total),
        "balanced_accuracy": float(n_diag[present].mean()) if present.any() else math.nan,
        "macro_f1": float(np.nanmean(per_class["f1"])) if per_class["f1"].notna().any() else math.nan,
        "macro_f1_norm": float(np.nanmean(per_class["f1_norm"])) if per_class["f1_norm"].notna().any() else math.nan,
        "per_class": per_class,
    }
    return detection, classification
