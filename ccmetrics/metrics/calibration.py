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
sum), then a bin index and two weighted ``np.bincount`` over those, in chunks of 2**20 (float64 sums). Each array
is scanned in its own memory order (a NIfTI map read by nibabel is in Fortran order, the prepared GT in C order):
the voxels each holds not 0 are found forwards in its memory, turned into C-order indices and sorted (``O(k log k)``
for ``k`` of them), never an element-wise pass striding across one of the two. The sums run over the visited voxels
in C index order whatever the arrays' memory order, so the values do not depend on it. A map not in C order with
more than 1/32 of its voxels not 0 (a softmax never exactly 0) is copied to C order once (4 bytes a voxel).

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


#: above this fraction of non-zero voxels, a map not in C order is copied to it rather than its indices sorted
_SORT_FRACTION = 1 / 32


def _bins(p: np.ndarray, n_bins: int) -> np.ndarray:
    return np.minimum((p * n_bins).astype(np.int64), n_bins - 1)


def _memory_axes(a: np.ndarray) -> tuple[int, ...] | None:
    """The axes of ``a`` from the slowest-varying in memory to the fastest (``a.transpose(axes)`` is C-contiguous),
    or None when no permutation makes it so (a flipped or strided view)."""
    if a.flags.c_contiguous:
        return tuple(range(a.ndim))
    axes = tuple(int(i) for i in np.argsort([-s for s in a.strides], kind="stable"))
    return axes if a.transpose(axes).flags.c_contiguous else None


def _nonzero_c(a: np.ndarray, dense_fraction: float | None = None) -> np.ndarray | None:
    """The C-order flat indices of the non-zero entries of ``a``, sorted, found in ``a``'s own memory order (a
    Fortran-ordered array is read forwards, never across): ``O(k log k)`` beyond the pass, ``k`` of them. None
    when ``a`` is not in C order and more than ``dense_fraction`` of its entries are not 0."""
    axes = _memory_axes(a)
    if axes is None:  # a flipped or strided view: one copy
        a, axes = np.ascontiguousarray(a), tuple(range(a.ndim))
    stored = a.transpose(axes)  # C-contiguous: the memory order
    nonzero = stored.view(bool) if stored.dtype == bool else stored != 0  # numpy finds True fast, not floats
    if axes == tuple(range(a.ndim)):
        return np.flatnonzero(nonzero)
    if dense_fraction is not None and np.count_nonzero(nonzero) > dense_fraction * a.size:
        return None
    position = np.unravel_index(np.flatnonzero(nonzero), stored.shape)
    return np.sort(np.ravel_multi_index([position[axes.index(i)] for i in range(a.ndim)], a.shape))


def _all_nonzero_c(a: np.ndarray) -> np.ndarray:
    """:func:`_nonzero_c` of every layout."""
    found = _nonzero_c(a)
    assert found is not None  # no dense_fraction: never None
    return found


def _take_c(a: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``a``'s entries at the C-order flat indices ``index``, in that order, gathered without a copy of ``a``."""
    if a.flags.c_contiguous:
        return a.reshape(-1)[index]
    return a[np.unravel_index(index, a.shape)]


def _visited(p_all: np.ndarray, y_all: np.ndarray, left_out: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The map and GT values of the voxels where either is not 0 (and not ``left_out``), in C index order.

    Each array is scanned in its own memory order, so a map in Fortran order (nibabel's) beside a GT in C order
    costs what two C arrays do; a map of another order with more than 1/32 of its voxels not 0 is copied to C
    order once (sorting that many indices would cost more)."""
    in_map = None if p_all.flags.c_contiguous else _nonzero_c(p_all, _SORT_FRACTION)
    if in_map is None:
        p_all = np.ascontiguousarray(p_all)  # C order already, or many voxels not 0: one copy
    if p_all.flags.c_contiguous and y_all.flags.c_contiguous and (left_out is None or left_out.flags.c_contiguous):
        visited = p_all.reshape(-1) != 0  # a voxel with p = 0 outside the GT adds 0 to every sum: not visited
        visited |= y_all.reshape(-1)
        if left_out is not None:
            visited &= ~left_out.reshape(-1)
        index = np.flatnonzero(visited)
    else:
        index = np.concatenate([_all_nonzero_c(p_all) if in_map is None else in_map, _all_nonzero_c(y_all)])
        index.sort()
        index = index[np.concatenate([[True], index[1:] != index[:-1]])] if len(index) else index  # the union
        if left_out is not None:
            index = index[~np.isin(index, _all_nonzero_c(left_out), assume_unique=True)]
    return _take_c(p_all, index), _take_c(y_all, index)


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
    left_out = None
    if ignore is not None:
        left_out = np.asarray(ignore, bool)
        if left_out.shape != p_all.shape:
            raise ValueError(f"ignore has shape {left_out.shape}, prob {p_all.shape}")
        n -= int(np.count_nonzero(left_out))
    if n == 0:
        return {"brier": float("nan"), "ece": float("nan")}
    p_sel, y_sel = _visited(p_all, y_all, left_out)
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
