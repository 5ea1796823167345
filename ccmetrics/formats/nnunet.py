"""nnU-Net's ``summary.json``, written from ccmetrics' tables and extended with the CC and lesion-wise scores.

``nnUNetv2_evaluate_folder`` writes, per case and per label or region, the voxel counts TP, FP, FN and
TN, ``Dice = 2 TP / (2 TP + FP + FN)`` and ``IoU = TP / (TP + FP + FN)`` (both NaN when
``TP + FP + FN = 0``), ``n_pred = TP + FP`` and ``n_ref = TP + FN``, with the voxels of the ignore
label left out of all four counts; ``mean`` holds the NaN-ignoring mean of every value over the cases
per label or region, ``foreground_mean`` the mean of those means over the labels or regions (label 0
left out). Keys: ``"2"`` for a label, ``"(1, 2, 3)"`` for a region.

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
from typing import Any

import numpy as np
import pandas as pd

from .. import schema

__all__ = ["nnunet_summary"]


def _key(labels: list[int]) -> str:
    return str(labels[0]) if len(labels) == 1 else str(tuple(labels))


def _plain(value: Any) -> Any:
    value = value.item() if isinstance(value, np.generic) else value
    return float(value) if isinstance(value, float) else value


def nnunet_summary(per_case: pd.DataFrame, options: dict[str, Any], extra_columns: list[str]) -> dict[str, Any]:
    """nnU-Net's ``summary.json`` (``metric_per_case``, ``mean``, ``foreground_mean``) from a ``per_case`` table.

    Parameters
    ----------
    per_case : pandas.DataFrame
        ``DatasetResult.per_case`` (:class:`ccmetrics.campaign.dataset.DatasetResult`) of an evaluation with
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
    classes = options.get("classes") or [{"value": 1, "name": "1", "labels": [1]}]
    keys = {int(c["value"]): _key(list(c["labels"])) for c in classes}
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
        for _, row in rows.sort_values(schema.CLASS).iterrows():
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
                "metrics": metrics,
                "prediction_file": str(first[schema.PRED_FILE]),
                "reference_file": str(first[schema.GT_FILE]),
            }
        )
    mean: dict[str, dict[str, float]] = {}
    for key in keys.values():
        names = list(per_case_list[0]["metrics"][key]) if per_case_list else []
        mean[key] = {}
        for name in names:
            values = np.array([c["metrics"][key].get(name, math.nan) for c in per_case_list], dtype=float)
            finite = values[~np.isnan(values)]
            mean[key][name] = float(finite.mean()) if finite.size else math.nan  # np.nanmean, without its warning
    foreground = [k for k in mean if k != "0"]
    names = list(mean[foreground[0]]) if foreground else []
    foreground_mean = {name: float(np.mean([mean[k][name] for k in foreground])) for name in names}
    return {"metric_per_case": per_case_list, "mean": mean, "foreground_mean": foreground_mean, "left_out": left_out}
