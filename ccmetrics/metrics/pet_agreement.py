"""Agreement between a model's and the reference's measurements: Bland–Altman, ICC(A,1), Lin's CCC.

The statistics of the ``pet`` group's quantification table (definitions: ``docs/definitions.md``, PET
quantification), over the cases of a class (TMTV, TLG, SUVmax, ...) or over its detected lesions. Each
takes the reference values ``gt`` and the model's ``pred``, paired entry by entry; a pair where either
value is NaN is left out (e.g. SUVmax of an empty mask), and ``n`` counts the pairs kept. Cost O(n).

Examples
--------
>>> a = agreement([10.0, 20.0, 30.0, 40.0], [12.0, 19.0, 33.0, 44.0])
>>> a["n"], a["bias"], round(a["icc"], 4), round(a["ccc"], 4)
(4, 2.0, 0.98, 0.9735)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["agreement", "bland_altman", "icc_a1", "lin_ccc", "paired_values", "relative_error", "rounding_zero"]

#: the normal quantile of the 95 % limits of agreement (Bland & Altman)
LOA_Z = 1.96


def paired_values(gt: Any, pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (gt, pred) as float64 arrays, without the pairs where either value is NaN.

    Raises ``ValueError`` for inputs of different lengths or an infinite value.

    >>> paired_values([1, 2, float("nan")], [1.5, float("nan"), 3])
    (array([1.]), array([1.5]))
    """
    x = np.asarray(gt, dtype=np.float64).reshape(-1)
    y = np.asarray(pred, dtype=np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"gt and pred must pair up: {len(x)} against {len(y)} values")
    if np.isinf(x).any() or np.isinf(y).any():
        raise ValueError("gt and pred must be finite (NaN marks an undefined value, and its pair is left out)")
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def bland_altman(gt: Any, pred: Any) -> tuple[float, float, float]:
    """Bias and 95 % limits of agreement (Bland & Altman, 1986).

    Returns
    -------
    bias, loa_low, loa_high : float
        ``bias`` = mean(pred − gt); the limits bias ∓ 1.96 × SD(pred − gt), SD with ddof 1. ``bias`` is
        NaN without a pair, the limits NaN with fewer than two.

    Examples
    --------
    >>> bland_altman([1.0, 2.0, 3.0], [2.0, 2.0, 5.0])
    (1.0, -0.96, 2.96)
    """
    x, y = paired_values(gt, pred)
    if len(x) == 0:
        return float("nan"), float("nan"), float("nan")
    diff = y - x
    bias = float(diff.mean())
    if len(x) < 2:
        return bias, float("nan"), float("nan")
    sd = float(diff.std(ddof=1))
    return bias, bias - LOA_Z * sd, bias + LOA_Z * sd


def icc_a1(gt: Any, pred: Any) -> float:
    """ICC(A,1): two-way, absolute agreement, single measures (McGraw & Wong, 1996; Shrout & Fleiss ICC(2,1)).

    With the n pairs as the rows of an n × 2 table (k = 2 raters), the two-way ANOVA mean squares of rows
    (MSR, n − 1 df), columns (MSC, 1 df) and residual (MSE, n − 1 df) give
    ``(MSR − MSE) / (MSR + (k − 1) MSE + k (MSC − MSE) / n)``, pingouin's ``intraclass_corr`` "ICC2" /
    "ICC(A,1)".

    Returns
    -------
    float
        NaN with fewer than two pairs, or when the denominator is 0 (every value the same: no variance to
        agree on). Values may be negative (agreement below chance).

    Examples
    --------
    >>> round(icc_a1([1.0, 2.0, 4.0, 3.0], [1.5, 2.5, 3.5, 3.9]), 6)
    0.863477
    >>> icc_a1([2.0, 2.0], [2.0, 2.0]), icc_a1([0.1] * 3, [0.1] * 3)  # no variance, also after rounding
    (nan, nan)
    """
    x, y = paired_values(gt, pred)
    n, k = len(x), 2
    if n < 2:
        return float("nan")
    table = np.stack([x, y], axis=1)
    grand = table.mean()
    ss_rows = k * float(((table.mean(axis=1) - grand) ** 2).sum())
    ss_cols = n * float(((table.mean(axis=0) - grand) ** 2).sum())
    ss_error = float(((table - table.mean(axis=1, keepdims=True) - table.mean(axis=0) + grand) ** 2).sum())
    msr, msc, mse = ss_rows / (n - 1), ss_cols / (k - 1), ss_error / ((n - 1) * (k - 1))
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    return float((msr - mse) / denominator) if denominator > rounding_zero(table) else float("nan")


def lin_ccc(gt: Any, pred: Any) -> float:
    """Lin's concordance correlation coefficient, with population moments (Lin, 1989).

    ``2 s_xy / (s_x² + s_y² + (x̄ − ȳ)²)``, the (co)variances with ddof 0.

    Returns
    -------
    float
        NaN with fewer than two pairs, or when the denominator is 0 (both constant and equal).

    Examples
    --------
    >>> lin_ccc([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]), lin_ccc([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    (1.0, 0.5714285714285715)
    """
    x, y = paired_values(gt, pred)
    if len(x) < 2:
        return float("nan")
    mx, my = x.mean(), y.mean()
    sxy = float(((x - mx) * (y - my)).mean())
    denominator = float(((x - mx) ** 2).mean() + ((y - my) ** 2).mean() + (mx - my) ** 2)
    return 2 * sxy / denominator if denominator > rounding_zero(x, y) else float("nan")


def rounding_zero(*values: Any) -> float:
    """The largest (co)variance that rounding alone makes of equal values: (64 ε max|v|)², ε the float64 machine
    epsilon, max over every value given (0 for none).

    ``[0.1] * 3`` has a variance of about 1e-35, not 0, in float64: ICC(A,1) and CCC take a denominator at or
    below this bound as 0 (no variance: NaN), here and in the bootstrap of
    :mod:`ccmetrics.analysis.quantification` (the one home of the rule).

    >>> x = np.array([0.1] * 3)
    >>> bool(x.var() > 0), bool(x.var() <= rounding_zero(x, [0.1]))
    (True, True)
    >>> rounding_zero([]) == 0.0
    True
    """
    scale = max((float(np.abs(np.asarray(v, dtype=np.float64)).max(initial=0.0)) for v in values), default=0.0)
    return (64 * float(np.finfo(np.float64).eps) * scale) ** 2


def relative_error(gt: Any, pred: Any) -> np.ndarray:
    """(pred − gt) / gt per pair (NaN where gt is 0 or either value is NaN), as the lymphoma framework reports.

    >>> relative_error([10.0, 0.0, 4.0], [12.0, 1.0, float("nan")])
    array([0.2, nan, nan])
    """
    x = np.asarray(gt, dtype=np.float64).reshape(-1)
    y = np.asarray(pred, dtype=np.float64).reshape(-1)
    if x.shape != y.shape:
        raise ValueError(f"gt and pred must pair up: {len(x)} against {len(y)} values")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x != 0, (y - x) / np.where(x != 0, x, 1.0), np.nan)


def agreement(gt_values: Any, pred_values: Any) -> dict[str, Any]:
    """Every agreement statistic of the pairs (reference, model), for one measure.

    Parameters
    ----------
    gt_values, pred_values : array_like of float
        The reference's and the model's value of the measure, paired entry by entry (cases, or detected
        lesions). Pairs with a NaN are left out; an infinite value is a ``ValueError``.

    Returns
    -------
    dict
        ``n`` (int, pairs kept); ``bias``, ``loa_low``, ``loa_high`` (:func:`bland_altman`); ``icc``
        (:func:`icc_a1`); ``ccc`` (:func:`lin_ccc`); ``mean_relative_error`` and
        ``mean_abs_relative_error`` (floats: the means over the pairs kept with gt ≠ 0, NaN when none);
        ``relative_error`` (ndarray, one per input pair, :func:`relative_error`). Undefined statistics are
        NaN: ``bias`` without a pair; the limits, ICC and CCC with fewer than two pairs, ICC and CCC also
        without variance (every value the same).

    Examples
    --------
    >>> a = agreement([1.0, 2.0, 3.0], [2.0, 2.0, 5.0])
    >>> a["n"], a["bias"], a["loa_low"], a["loa_high"]
    (3, 1.0, -0.96, 2.96)
    >>> a["relative_error"], a["mean_relative_error"]
    (array([1.        , 0.        , 0.66666667]), 0.5555555555555555)
    >>> agreement([5.0], [4.0])["icc"]
    nan
    """
    x, y = paired_values(gt_values, pred_values)
    bias, low, high = bland_altman(x, y)
    rel = relative_error(gt_values, pred_values)
    kept = rel[~np.isnan(rel)]
    return {
        "n": int(len(x)),
        "bias": bias,
        "loa_low": low,
        "loa_high": high,
        "icc": icc_a1(x, y),
        "ccc": lin_ccc(x, y),
        "mean_relative_error": float(kept.mean()) if len(kept) else float("nan"),
        "mean_abs_relative_error": float(np.abs(kept).mean()) if len(kept) else float("nan"),
        "relative_error": rel,
    }
