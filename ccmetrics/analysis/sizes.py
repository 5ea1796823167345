"""Lesion-size and SUVmax bins: detection rate, CC-Dice and counts per bin, and false positives by bin.

One home for the size bins that the summary (``summary.json``'s ``by_size``), the command line
(``--size-bins 0.1,1,10``) and the detection-by-size plot share. Bin edges are inner edges in ml
(``0.1, 1, 10`` gives ``<0.1``, ``0.1–1``, ``1–10``, ``≥10`` ml); a lesion of volume v falls in
``[low, high)``. Without a voxel spacing (volumes in voxels) the edges are voxel counts.

Per class and bin (:func:`size_table`): ``lesions`` (GT components), ``detected`` (under the
evaluation's detection rule), ``detection_rate``, ``cc_dice`` (the mean Dice of the bin's lesions: the
pooled CC-Dice of that size; NaN without the ``dice`` metric) and, with ``per_prediction``,
``false_positives`` (predicted components that are false positives, binned by their own volume).
Cost: one pass over each table.

Examples
--------
>>> import pandas as pd
>>> comps = pd.DataFrame({"class": 1, "volume": [50, 2000, 30000], "volume_mm3": [50.0, 2000.0, 30000.0],
...                       "detected": [False, True, True], "dice": [0.0, 0.8, 0.9]})
>>> size_table(comps, [0.1, 1, 10])[["bin", "lesions", "detected", "detection_rate", "cc_dice"]]
        bin  lesions  detected  detection_rate  cc_dice
0   <0.1 ml        1         0             0.0      0.0
1  0.1–1 ml        0         0             NaN      NaN
2   1–10 ml        1         1             1.0      0.8
3    ≥10 ml        1         1             1.0      0.9
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import schema

__all__ = [
    "DEFAULT_SIZE_EDGES_ML",
    "DEFAULT_SIZE_EDGES_VOXELS",
    "DEFAULT_SUV_EDGES",
    "bin_labels",
    "lesion_volumes",
    "parse_size_bins",
    "parse_suv_bins",
    "size_table",
    "suv_table",
]

#: the default inner edges in ml (<0.1, 0.1–1, 1–10, ≥10 ml)
DEFAULT_SIZE_EDGES_ML = (0.1, 1.0, 10.0)
#: the default inner edges in voxels, for volumes without a spacing
DEFAULT_SIZE_EDGES_VOXELS = (10.0, 100.0, 1000.0)
#: the default inner SUVmax edges of ``by_suv`` (<2.5, 2.5–4, 4–10, ≥10): 2.5 the classic threshold of FDG avidity,
#: 4 the report's "hot" missed lesion
DEFAULT_SUV_EDGES = (2.5, 4.0, 10.0)


def parse_size_bins(value: Any) -> tuple[float, ...]:
    """Inner bin edges from text (``"0.1,1,10"``) or numbers: positive, increasing.

    >>> parse_size_bins("0.1, 1,10")
    (0.1, 1.0, 10.0)
    """
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        edges = tuple(float(v) for v in parts if str(v).strip())
    except ValueError:
        raise ValueError(f"size bins must be numbers (ml) such as 0.1,1,10, got {value!r}") from None
    positive = all(e > 0 and math.isfinite(e) for e in edges)
    if not edges or not positive or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"size bins must be increasing positive numbers (ml) such as 0.1,1,10, got {value!r}")
    return edges


def bin_labels(edges: Sequence[float], unit: str) -> list[str]:
    """Labels of the bins around inner ``edges``: ``<e0``, ``e0–e1``, ..., ``≥en`` with the unit (voxels: vx).

    >>> bin_labels([0.1, 1], "ml")
    ['<0.1 ml', '0.1–1 ml', '≥1 ml']
    """
    unit = "vx" if unit == "voxels" else unit
    out = [f"<{edges[0]:g} {unit}"]
    out += [f"{a:g}–{b:g} {unit}" for a, b in zip(edges, edges[1:])]
    return out + [f"≥{edges[-1]:g} {unit}"]


def lesion_volumes(frame: pd.DataFrame, unit: str = "ml") -> tuple[np.ndarray, str]:
    """Each row's volume and its unit: in ``unit`` (``"ml"`` or ``"mm³"``) when every row has ``volume_mm3``
    (the evaluation had a spacing), else in voxels (``volume``). The one rule the size bins and the plots read.

    >>> lesion_volumes(pd.DataFrame({"volume": [8, 27], "volume_mm3": [4.0, 13.5]}))
    (array([0.004 , 0.0135]), 'ml')
    >>> lesion_volumes(pd.DataFrame({"volume": [8, 27], "volume_mm3": [4.0, None]}), unit="mm³")
    (array([ 8., 27.]), 'voxels')
    """
    if unit not in ("ml", "mm³"):
        raise ValueError(f"unit must be 'ml' or 'mm³', got {unit!r}")
    if schema.VOLUME_MM3 in frame and len(frame) and frame[schema.VOLUME_MM3].notna().all():
        return frame[schema.VOLUME_MM3].to_numpy(float) / (1000.0 if unit == "ml" else 1.0), unit
    if schema.VOLUME not in frame:
        raise ValueError(
            f"the table has no column {schema.VOLUME!r} (nor {schema.VOLUME_MM3!r} in every row): add the lesion "
            "size in voxels (CaseResult.to_frame and the per-component tables have it)"
        )
    return frame[schema.VOLUME].to_numpy(float), "voxels"


def size_table(
    per_component: pd.DataFrame,
    edges: Sequence[float] | None = None,
    *,
    per_prediction: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Lesions, detections, detection rate, CC-Dice and false positives per class and size bin.

    Parameters
    ----------
    per_component : pandas.DataFrame
        The tidy per-lesion table (``class``, ``volume``, ``volume_mm3``, ``detected``, ``dice``).
    edges : sequence of float, optional
        Inner edges in ml (voxels when a table has no ``volume_mm3``); default
        :data:`DEFAULT_SIZE_EDGES_ML` (:data:`DEFAULT_SIZE_EDGES_VOXELS`).
    per_prediction : pandas.DataFrame, optional
        The per-prediction table: adds ``false_positives`` per bin.

    Returns
    -------
    pandas.DataFrame
        Columns ``class``, ``bin``, ``low``, ``high``, ``unit``, ``lesions``, ``detected``,
        ``detection_rate``, ``cc_dice``, and ``false_positives`` with ``per_prediction``.
    """
    if len(per_component):
        _, unit = lesion_volumes(per_component)
    elif per_prediction is not None and len(per_prediction):  # no lesion: the false positives' unit
        _, unit = lesion_volumes(per_prediction)
    else:
        unit = "ml"
    if edges is None:
        edges = DEFAULT_SIZE_EDGES_ML if unit == "ml" else DEFAULT_SIZE_EDGES_VOXELS
    edges = parse_size_bins(edges)
    full = np.array([0.0, *edges, math.inf])
    labels = bin_labels(edges, unit)
    found = set(per_component[schema.CLASS].unique()) if len(per_component) else set()
    if per_prediction is not None and len(per_prediction):  # a class with false positives and no lesion: its row too
        found |= set(per_prediction[schema.CLASS].unique())
    classes = sorted(found) or [1]
    rows = []
    for c in classes:
        comps = per_component[per_component[schema.CLASS] == c] if len(per_component) else per_component
        volumes = lesion_volumes(comps)[0] if len(comps) else np.zeros(0)
        where = np.searchsorted(full, volumes, side="right") - 1
        detected = comps[schema.DETECTED].to_numpy(bool) if len(comps) else np.zeros(0, bool)
        dice = comps["dice"].to_numpy(float) if "dice" in comps else np.full(len(comps), math.nan)
        fp_where = None
        if per_prediction is not None:
            preds = per_prediction[
                (per_prediction[schema.CLASS] == c) & (per_prediction[schema.OUTCOME] == schema.FALSE_POSITIVE)
            ]
            fp_volumes, fp_unit = lesion_volumes(preds) if len(preds) else (np.zeros(0), unit)
            if fp_unit != unit:
                raise ValueError("per_component and per_prediction give volumes in different units")
            fp_where = np.searchsorted(full, fp_volumes, side="right") - 1
        rows += _bin_rows(c, labels, full, unit, where, detected, dice, fp_where)
    return pd.DataFrame(rows)


def _bin_rows(
    c: Any,
    labels: Sequence[str],
    full: np.ndarray,
    unit: str,
    where: np.ndarray,
    detected: np.ndarray,
    dice: np.ndarray,
    fp_where: np.ndarray | None,
) -> list[dict[str, Any]]:
    """One class's rows of a bin table: per bin ``i`` (the lesions with ``where == i``), its lesions, detections,
    detection rate, CC-Dice, and false positives (``fp_where == i``) when binned."""
    rows = []
    for i, label in enumerate(labels):
        inside = where == i
        n = int(inside.sum())
        row: dict[str, Any] = {
            schema.CLASS: c,
            "bin": label,
            "low": float(full[i]),
            "high": float(full[i + 1]),
            "unit": unit,
            "lesions": n,
            "detected": int(detected[inside].sum()),
            "detection_rate": float(detected[inside].mean()) if n else math.nan,
            "cc_dice": float(np.mean(dice[inside])) if n else math.nan,
        }
        if fp_where is not None:
            row["false_positives"] = int((fp_where == i).sum())
        rows.append(row)
    return rows


def parse_suv_bins(value: Any) -> tuple[float, ...]:
    """Inner SUVmax bin edges from text (``"2.5,4,10"``) or numbers: increasing.

    >>> parse_suv_bins("2.5, 4,10")
    (2.5, 4.0, 10.0)
    >>> parse_suv_bins("4,2.5")
    Traceback (most recent call last):
    ...
    ValueError: SUV bins must be increasing numbers (SUVmax), e.g. --suv-bins 2.5,4,10, got '4,2.5'
    """
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        edges = tuple(float(v) for v in parts if str(v).strip())
    except ValueError:
        raise ValueError(f"SUV bins must be numbers (SUVmax), e.g. --suv-bins 2.5,4,10, got {value!r}") from None
    finite = all(math.isfinite(e) for e in edges)
    if not edges or not finite or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"SUV bins must be increasing numbers (SUVmax), e.g. --suv-bins 2.5,4,10, got {value!r}")
    return edges


def suv_table(
    per_component: pd.DataFrame,
    edges: Sequence[float] | None = None,
    *,
    per_prediction: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Lesions, detections, detection rate, CC-Dice and false positives per class and SUVmax bin (``by_suv``).

    A lesion falls in the bin ``[low, high)`` of its ``suv_max`` (the ``pet`` metrics' column; the first bin has no
    lower end, the last no upper end); a false positive (``per_prediction``'s ``outcome`` ``fp``) in the bin of its
    own ``suv_max``, so that one on the bladder (SUVmax 30) is told from one in noise. A lesion without an SUVmax
    (a table of older runs) is in no bin, so a class's ``lesions`` may sum to fewer than its rows. Cost: one pass over
    each table.

    Parameters
    ----------
    per_component : pandas.DataFrame
        The tidy per-lesion table with ``class``, ``detected``, ``suv_max`` (and ``dice``).
    edges : sequence of float, optional
        Inner edges (SUVmax); default :data:`DEFAULT_SUV_EDGES` (2.5, 4, 10).
    per_prediction : pandas.DataFrame, optional
        The per-prediction table with ``outcome`` and ``suv_max``: adds ``false_positives`` per bin.

    Returns
    -------
    pandas.DataFrame
        Columns ``class``, ``bin``, ``low``, ``high``, ``unit`` (``SUV``), ``lesions``, ``detected``,
        ``detection_rate``, ``cc_dice`` (and ``false_positives``); empty without a ``suv_max`` or a ``detected``
        column (no SUVmax measured, or no detection rule to count by).

    Examples
    --------
    >>> comps = pd.DataFrame({"class": 1, "suv_max": [2.0, 3.0, 15.2], "detected": [False, True, False],
    ...                       "dice": [0.0, 0.7, 0.0]})
    >>> suv_table(comps)[["bin", "lesions", "detected", "detection_rate", "cc_dice"]]
             bin  lesions  detected  detection_rate  cc_dice
    0   <2.5 SUV        1         0             0.0      0.0
    1  2.5–4 SUV        1         1             1.0      0.7
    2   4–10 SUV        0         0             NaN      NaN
    3    ≥10 SUV        1         0             0.0      0.0
    """
    if "suv_max" not in per_component or schema.DETECTED not in per_component:
        return pd.DataFrame(columns=[schema.CLASS, "bin", "low", "high", "unit", "lesions", "detected"])
    edges = parse_suv_bins(DEFAULT_SUV_EDGES if edges is None else edges)
    full = np.array([-math.inf, *edges, math.inf])
    labels = bin_labels(edges, "SUV")
    found = set(per_component[schema.CLASS].unique()) if len(per_component) else set()
    fps = None
    if per_prediction is not None and "suv_max" in per_prediction and schema.OUTCOME in per_prediction:
        fps = per_prediction[per_prediction[schema.OUTCOME] == schema.FALSE_POSITIVE]
        found |= set(fps[schema.CLASS].unique())
    rows = []
    for c in sorted(found) or [1]:
        comps = per_component[per_component[schema.CLASS] == c]
        suv = comps["suv_max"].to_numpy(float)
        where = np.where(np.isnan(suv), -1, np.searchsorted(full, suv, side="right") - 1)
        detected = comps[schema.DETECTED].to_numpy(bool)
        dice = comps["dice"].to_numpy(float) if "dice" in comps else np.full(len(comps), math.nan)
        fp_where = None
        if fps is not None:
            fp_suv = fps.loc[fps[schema.CLASS] == c, "suv_max"].to_numpy(float)
            fp_where = np.where(np.isnan(fp_suv), -1, np.searchsorted(full, fp_suv, side="right") - 1)
        rows += _bin_rows(c, labels, full, "SUV", where, detected, dice, fp_where)
    return pd.DataFrame(rows)
