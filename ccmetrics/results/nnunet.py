"""nnU-Net's ``summary.json``, written from ccmetrics' tables and extended with the CC and lesion-wise scores.

(Formerly ``ccmetrics.formats.nnunet.nnunet_summary``, still read there with a ``DeprecationWarning``; the reader of
nnU-Net's ``dataset.json`` is :mod:`ccmetrics.formats.nnunet`.)

``nnUNetv2_evaluate_folder`` writes, per case and per label or region, the voxel counts TP, FP, FN and
TN, ``Dice = 2 TP / (2 TP + FP + FN)`` and ``IoU = TP / (TP + FP + FN)`` (both NaN when
``TP + FP + FN = 0``), ``n_pred = TP + FP`` and ``n_ref = TP + FN``, with the voxels of the ignore
label left out of all four counts; ``mean`` holds the NaN-ignoring mean of every value over the cases
per label or region, ``foreground_mean`` the mean of those means over the labels or regions (label 0
left out). Keys (``label_or_region_to_key``: ``str`` of the label or region): ``"2"`` for a label,
``"(1, 2, 3)"`` for a region, ``"(3,)"`` for a region of one label (``"enhancing tumor": [3]`` in a
``dataset.json`` that has regions: ``one_label_region``).

The means are nnU-Net's arithmetic, bit for bit: for each key and value, ``np.nanmean`` of the list of the
cases' values in nnU-Net's case order (the prediction files' names, sorted), NaN included (it sums the
array with NaN set to 0, so leaving the NaN out first would sum in another order and can change the last
bit); ``foreground_mean`` is ``np.mean`` of the keys' means in nnU-Net's order of the labels or regions:
a data set with a region of two or more labels evaluates its ``labels`` entries in the file's order, any
other data set its labels sorted (``LabelManager.foreground_regions`` / ``foreground_labels``).

:func:`nnunet_summary` builds the same structure from a data set's ``per_case`` table evaluated with
``nnunet_summary=True`` (which adds the voxel counts ``tp_voxels`` ...), and adds to each label's or
region's entry the CC mean of every per-region metric (``cc_dice``, ``cc_hd95``, ...; a missed
lesion's distance is the case's worst distance) and the case-level scores (``lesion_dice``,
``sensitivity``, ...). Cases without a prediction file or whose evaluation failed are not in
``metric_per_case`` (nnU-Net evaluates the predictions it finds); they are listed under
``left_out`` with the reason. Cost: one pass over the table.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .. import schema
from ..formats.classes import ClassSpec

__all__ = ["nnunet_summary"]


def _nnunet_order(classes: list[ClassSpec]) -> list[ClassSpec]:
    """The classes in the order nnU-Net evaluates them: as given when one is a region of two or more labels
    (``LabelManager.foreground_regions``: ``labels`` in the dataset.json's order), else sorted by label
    (``foreground_labels``)."""
    if any(c.is_region for c in classes):
        return list(classes)
    return sorted(classes, key=lambda c: c.labels[0])


def _nanmean(values: list[Any]) -> float:
    """``np.nanmean`` of the values in their order, as nnU-Net takes it (ints as an int64 array, floats with
    their NaN as a float64 array; anything else, e.g. a missing value, as float); NaN, silently, if all are."""
    array = np.asarray(values)
    if array.dtype.kind not in "iuf":
        array = np.array(values, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice": nnU-Net writes NaN too
        return float(np.nanmean(array))


def _plain(value: Any) -> Any:
    value = value.item() if isinstance(value, np.generic) else value
    return float(value) if isinstance(value, float) else value


def nnunet_summary(per_case: pd.DataFrame, options: dict[str, Any], extra_columns: list[str]) -> dict[str, Any]:
    """nnU-Net's ``summary.json`` (``metric_per_case``, ``mean``, ``foreground_mean``) from a ``per_case`` table.

    Parameters
    ----------
    per_case : pandas.DataFrame
        ``DatasetResult.per_case`` (:class:`ccmetrics.results.DatasetResult`) of an evaluation with
        ``nnunet_summary=True``.
    options : dict
        ``DatasetResult.options`` (its ``classes`` give the keys; binary masks: ``"1"``).
    extra_columns : list of str
        ccmetrics' columns added to each entry (CC means, case-level scores).

    Returns
    -------
    dict
        JSON-able; NaN where nnU-Net writes NaN.

    Raises
    ------
    ValueError
        The table has no voxel counts: evaluate with ``nnunet_summary=True`` (``--nnunet-summary``).
    """
    if schema.TP_VOXELS not in per_case:
        raise ValueError("per_case holds no voxel counts: evaluate with nnunet_summary=True (--nnunet-summary)")
    specs = [  # folders written before class names existed hold the labels only
        ClassSpec.from_dict(c) if isinstance(c, dict) else ClassSpec(int(c), str(c), (int(c),))
        for c in options.get("classes") or []
    ]
    classes = _nnunet_order(specs or [ClassSpec(1, "1", (1,))])
    keys = {c.value: c.nnunet_key for c in classes}  # in nnU-Net's order
    per_case_list: list[dict[str, Any]] = []
    left_out: list[dict[str, str]] = []
    for case, rows in per_case.groupby(schema.CASE, sort=True):
        first = rows.iloc[0]
        failed = (rows[schema.STATUS] == schema.FAILED).any()
        no_prediction = schema.MISSING_PREDICTION in str(first[schema.FLAGS])
        if failed or no_prediction:
            reason = str(rows[schema.ERROR].iloc[0]) if failed else "no prediction file"
            left_out.append({"case": str(case), "reason": reason})
            continue
        metrics: dict[str, dict[str, Any]] = {}
        for _, row in rows.iterrows():
            tp, fp, fn, tn = (
                int(row[c]) for c in (schema.TP_VOXELS, schema.FP_VOXELS, schema.FN_VOXELS, schema.TN_VOXELS)
            )
            entry: dict[str, Any] = {}
            if tp + fp + fn == 0:
                entry["Dice"], entry["IoU"] = math.nan, math.nan
            else:
                entry["Dice"], entry["IoU"] = 2 * tp / (2 * tp + fp + fn), tp / (tp + fp + fn)
            entry.update({"FP": fp, "TP": tp, "FN": fn, "TN": tn, "n_pred": fp + tp, "n_ref": fn + tp})
            entry.update({c: _plain(row[c]) for c in extra_columns if c in row.index})
            metrics[keys[int(row[schema.CLASS])]] = entry
        per_case_list.append(
            {
                "metrics": {k: metrics[k] for k in keys.values() if k in metrics},  # nnU-Net's order
                "prediction_file": str(first[schema.PRED_FILE]),
                "reference_file": str(first[schema.GT_FILE]),
            }
        )
    # nnU-Net's case order: its prediction files' names, sorted (subfiles); the sort is stable for equal names
    per_case_list.sort(key=lambda c: os.path.basename(c["prediction_file"]))
    mean: dict[str, dict[str, float]] = {}
    for key in keys.values():
        names = list(per_case_list[0]["metrics"][key]) if per_case_list else []
        mean[key] = {name: _nanmean([c["metrics"][key].get(name, math.nan) for c in per_case_list]) for name in names}
    foreground = [k for k in mean if k != "0"]
    names = list(mean[foreground[0]]) if foreground else []
    foreground_mean = {name: float(np.mean([mean[k][name] for k in foreground])) for name in names}
    return {"metric_per_case": per_case_list, "mean": mean, "foreground_mean": foreground_mean, "left_out": left_out}
