"""Calibration of a probability map: voxel-level Brier score and expected calibration error, and the lesion-level
reliability of candidate confidences.

Voxel level, per case (:func:`voxel_calibration`), with ``p`` the map and ``y`` the GT mask (0/1) over all N voxels:

- **Brier score** ``= Σ (p − y)² / N``. Background voxels count like any other, so a map that is 0 far from the
  lesions scores near 0 whatever it does at them: compare Brier scores of cases of one size and one prevalence.
- **Expected calibration error (ECE)** with ``n_bins`` equal-width bins of ``p`` over [0, 1] (bin ``k`` holds
  ``k / n_bins <= p < (k + 1) / n_bins``, the last bin closed at 1): ``Σ_k (n_k / N) · |mean(y in k) − mean(p in
  k)|``, the usual binning of Guo et al. (2017), 10 bins by default.

Lesion level, over a data set (:func:`lesion_reliability`): the candidates' confidences binned the same way against
the fraction of them that are true positives (``ignored`` candidates left out: neither true nor false). A
calibrated detector's candidates of confidence 0.8 are lesions 80 % of the time; ``ece`` in the table's
attributes is the same weighted gap over candidates.

Cost: one pass over the map and the GT to find the voxels where either is not 0 (the others add nothing to any
sum), then a bin index and two weighted ``np.bincount`` over those, in chunks of 2**20 (float64 sums).

Examples
--------
>>> import numpy as np
>>> prob = np.array([[0.875, 0.75, 0.125, 0.0]], np.float32)
>>> gt = np.array([[1, 0, 0, 0]], bool)
>>> c = voxel_calibration(prob, gt)
>>> round(c["brier"], 4), round(c["ece"], 4)
(0.1484, 0.25)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy, schema

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = ["DEFAULT_BINS", "lesion_reliability", "voxel_calibration"]

#: equal-width confidence bins over [0, 1]
DEFAULT_BINS = 10
#: voxels per chunk of the float64 sums
_CHUNK = 1 << 20


def _bins(p: np.ndarray, n_bins: int) -> np.ndarray:
    return np.minimum((p * n_bins).astype(np.int64), n_bins - 1)


def voxel_calibration(prob: Any, gt: Any, *, n_bins: int = DEFAULT_BINS, ignore: Any = None) -> dict[str, float]:
    """The case's voxel-level Brier score and ECE (the module docstring gives both definitions).

    Parameters
    ----------
    prob : array_like
        The probability map, values in [0, 1].
    gt : array_like of bool
        The GT mask, same shape.
    n_bins : int
        Equal-width bins of the ECE.
    ignore : array_like of bool, optional
        Voxels left out (nnU-Net's ignore label): N counts the others.

    Returns
    -------
    dict
        ``{"brier": ..., "ece": ...}``.
    """
    p_all = np.asarray(prob)
    y_all = np.asarray(gt).astype(bool, copy=False)
    if p_all.shape != y_all.shape:
        raise ValueError(f"prob has shape {p_all.shape}, gt {y_all.shape}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    n = p_all.size
    visited = p_all != 0  # a voxel with p = 0 outside the GT adds 0 to every sum below: only the others are visited
    visited |= y_all
    if ignore is not None:
        left_out = np.asarray(ignore, bool)
        if left_out.shape != p_all.shape:
            raise ValueError(f"ignore has shape {left_out.shape}, prob {p_all.shape}")
        visited &= ~left_out
        n -= int(np.count_nonzero(left_out))
    if n == 0:
        return {"brier": float("nan"), "ece": float("nan")}
    p_sel = p_all[visited]
    y_sel = y_all[visited]
    squares = 0.0
    sum_p = np.zeros(n_bins)
    sum_y = np.zeros(n_bins)
    for start in range(0, len(p_sel), _CHUNK):  # float64 sums over chunks: bounded memory
        p = p_sel[start : start + _CHUNK].astype(np.float64)
        y = y_sel[start : start + _CHUNK]
        squares += float(np.sum((p - y) ** 2))
        k = _bins(p, n_bins)
        sum_p += np.bincount(k, weights=p, minlength=n_bins)
        sum_y += np.bincount(k, weights=y, minlength=n_bins)
    brier = squares / n
    ece = float(np.sum(np.abs(sum_y - sum_p)) / n)  # Σ (n_k/N) |sum_y/n_k - sum_p/n_k|
    return {"brier": brier, "ece": ece}


def lesion_reliability(per_candidate: pd.DataFrame, *, n_bins: int = DEFAULT_BINS) -> pd.DataFrame:
    """The reliability table of candidate confidences: per bin, candidates, true positives and their fraction.

    Parameters
    ----------
    per_candidate : pandas.DataFrame
        The ``per_candidate`` table (``confidence``, ``outcome``), of one class.
    n_bins : int
        Equal-width bins over [0, 1].

    Returns
    -------
    pandas.DataFrame
        ``bin_low``, ``bin_high``, ``n``, ``tp``, ``tp_fraction`` (NaN for an empty bin), ``mean_confidence``;
        ``attrs["ece"]``: ``Σ (n_k / n) |tp_fraction_k − mean_confidence_k|`` over the candidates.

    Examples
    --------
    >>> table = lesion_reliability(pd.DataFrame({"confidence": [0.95, 0.9, 0.15, 0.5],
    ...                                          "outcome": ["tp", "fp", "fp", "ignored"]}), n_bins=2)
    >>> table[["bin_low", "n", "tp", "tp_fraction"]].to_dict("list")
    {'bin_low': [0.0, 0.5], 'n': [1, 2], 'tp': [0, 1], 'tp_fraction': [0.0, 0.5]}
    >>> round(table.attrs["ece"], 4)
    0.3333
    """
    judged = per_candidate[per_candidate[schema.OUTCOME] != schema.IGNORED]
    conf = judged[schema.CONFIDENCE].to_numpy(float)
    tp = (judged[schema.OUTCOME] == schema.TRUE_POSITIVE).to_numpy()
    k = _bins(conf, n_bins)
    count = np.bincount(k, minlength=n_bins)
    hits = np.bincount(k, weights=tp, minlength=n_bins)
    sum_conf = np.bincount(k, weights=conf, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = hits / count
        mean_conf = sum_conf / count
    edges = np.arange(n_bins + 1) / n_bins
    table = pd.DataFrame(
        {
            "bin_low": edges[:-1],
            "bin_high": edges[1:],
            "n": count.astype(np.int64),
            "tp": hits.astype(np.int64),
            "tp_fraction": fraction,
            "mean_confidence": mean_conf,
        }
    )
    total = int(count.sum())
    table.attrs["ece"] = float(np.sum(np.abs(hits - sum_conf)) / total) if total else float("nan")
    return table
