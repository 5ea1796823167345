"""What the nuclei readers share: argument and file checks, label validation, relabelling and the painter.

* :func:`_as_labels` validates integer labels (ints, bools, integer-valued floats, ``>= 0``, within int32) and
  names the first bad pixel; :func:`_relabel` renumbers the non-zero labels to ``1..N`` in increasing order (a
  ``bincount`` when the largest label is small, ``np.unique`` otherwise), both linear in the pixels;
* :class:`_Painter` paints objects (a GeoJSON feature, a PanNuke channel, a MoNuSAC mask) into one instance map
  with the overlap rule (``"error"`` names both objects and the pixel count, ``"first"``, ``"last"``), each
  object over its own window only, and renumbers the ids of objects left without pixels away at the end;
* :func:`_warn_dropped` is the one warning for objects a reader left out.

numpy is the only import at module level.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

__all__ = [
    "PathLike",
    "_OVERLAP",
    "_INT32_MAX",
    "_check_choice",
    "_check_file",
    "_as_labels",
    "_relabel",
    "_Painter",
    "_warn_dropped",
]

_OVERLAP = ("error", "first", "last")
_INT32_MAX = int(np.iinfo(np.int32).max)

PathLike = Union[str, "os.PathLike[str]"]


def _check_choice(value: str, choices: Sequence[str], name: str) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def _check_file(path: PathLike) -> str:
    p = os.fspath(path)
    if not os.path.isfile(p):
        if os.path.isdir(p):
            raise ValueError(f"{p}: is a folder; expected a file")
        raise FileNotFoundError(f"{p}: no such file")
    return p


def _as_labels(arr: Any, where: str, what: str) -> np.ndarray:
    """Validate integer labels (ints, bools or integer-valued floats, >= 0) and return int32."""
    a = np.asarray(arr)
    if a.dtype == bool:
        return a.astype(np.int32)
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{where}: the {what} has dtype {a.dtype}; expected integer labels (0 = background)")
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if not bad.any():
            bad = a != np.round(a)
        if bad.any():
            pos = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{where}: the {what} is not integer-valued ({int(bad.sum())} pixels, e.g. {a[pos]!r} at index"
                f" {pos}); expected integer labels (0 = background). Was it resized or saved with"
                f" interpolation or lossy compression? Resample with nearest neighbour and save losslessly"
            )
    if a.size:
        lo, hi = a.min(), a.max()
        if lo < 0:
            pos = tuple(int(i) for i in np.argwhere(a < 0)[0])
            raise ValueError(
                f"{where}: the {what} has negative values ({lo!r} at index {pos}); labels must be >= 0 (0 = background)"
            )
        if hi > _INT32_MAX:
            raise ValueError(f"{where}: the {what} has label {hi!r}, more than int32 holds")
    return a.astype(np.int32)


def _relabel(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Renumber the non-zero labels to 1..N in increasing order; return (map, original ids)."""
    if labels.size == 0:
        return labels.astype(np.int32), np.zeros(0, np.int64)
    hi = int(labels.max())
    if hi == 0:
        return labels.astype(np.int32), np.zeros(0, np.int64)
    if hi <= 4 * labels.size + 1024:
        ids = np.flatnonzero(np.bincount(labels.ravel(), minlength=hi + 1))
        ids = ids[ids > 0]
    else:
        ids = np.unique(labels)
        ids = ids[ids > 0].astype(np.int64)
    if ids.size == hi:  # already 1..N
        return labels.astype(np.int32), ids.astype(np.int64)
    lut = np.zeros(hi + 1, np.int32)
    lut[ids] = np.arange(1, ids.size + 1, dtype=np.int32)
    return lut[labels], ids.astype(np.int64)


class _Painter:
    """Paints objects into one instance map, one id per object, with the overlap rule."""

    def __init__(self, shape: tuple[int, int], overlap: str, where: str, one_per_object: bool = False):
        self.one_per_object = one_per_object
        self.inst = np.zeros(shape, np.int32)
        self.overlap = overlap
        self.where = where
        self.cls: list[int] = [0]
        self.owner: list[int] = [-1]  # object index per id
        self.names: list[str] = []  # description per object index
        self.dropped: list[str] = []

    def add(self, window: tuple[slice, slice], local: np.ndarray, classes: Sequence[int], name: str) -> None:
        """Paint ``local`` (labels 1..n, 0 = nothing) at ``window``; label k gets class classes[k-1]."""
        obj = len(self.names)
        self.names.append(name)
        region = self.inst[window]
        fg = local > 0
        if not fg.any():
            return
        clash = fg & (region > 0)
        if clash.any():
            if self.overlap == "error":
                prev = region[clash]
                owners, counts = np.unique(np.asarray(self.owner, np.int64)[prev], return_counts=True)
                o = int(np.argmax(counts))
                other = (
                    f" (and {', '.join(self.names[int(x)] for x in owners if x != owners[o])})"
                    if owners.size > 1
                    else ""
                )
                raise ValueError(
                    f"{self.where}: {name} overlaps {self.names[int(owners[o])]} in {int(counts[o])} pixels"
                    f"{other}. Instances may not overlap: fix the annotation, or pass overlap='first' (the"
                    f" earlier object keeps the pixels) or overlap='last' (the later one takes them)"
                )
            if self.overlap == "first":
                fg = fg & ~clash
        n = len(classes)
        if not fg.any():
            self.dropped.append(self._lost(name, n))
            return
        base = len(self.cls) - 1
        region[fg] = local[fg] + base
        self.cls.extend(int(c) for c in classes)
        self.owner.extend([obj] * n)

    def _lost(self, name: str, n: int) -> str:
        return name if self.one_per_object else f"{n} instance{'s' if n > 1 else ''} of {name}"

    def result(self) -> tuple[np.ndarray, dict[int, int], list[str]]:
        """(instance map with ids 1..N, classes, descriptions of objects left without pixels)."""
        n = len(self.cls) - 1
        present = np.bincount(self.inst.ravel(), minlength=n + 1) > 0
        present[0] = True
        inst = self.inst
        keep = np.flatnonzero(present)[1:]
        if keep.size < n:
            lost = np.flatnonzero(~present)
            owners, counts = np.unique(np.asarray(self.owner, np.int64)[lost], return_counts=True)
            self.dropped.extend(self._lost(self.names[int(o)], int(c)) for o, c in zip(owners, counts))
            lut = np.zeros(n + 1, np.int32)
            lut[keep] = np.arange(1, keep.size + 1, dtype=np.int32)
            inst = lut[inst]
        classes = {i + 1: self.cls[int(k)] for i, k in enumerate(keep)}
        return inst, classes, self.dropped


def _warn_dropped(where: str, dropped: list[str], total: int, why: str) -> None:
    if dropped:
        shown = ", ".join(dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
        warnings.warn(
            f"{where}: {len(dropped)} of {total} objects {why} and were left out: {shown}", UserWarning, stacklevel=3
        )
