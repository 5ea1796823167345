"""Signs that the GT and prediction folders of a run were given the wrong way round.

``evaluate(pred, gt)`` by position took MONAI's order (now ``evaluate(gt=..., pred=...)`` by keyword),
``evaluate_dataset(gt, pred)`` and ``ccmetrics evaluate GT PRED`` nnU-Net's: swapping them is easy, and most
metrics still run (Dice is symmetric, CC-Dice and the lesion counts are not). :func:`swap_signs` reads a finished
run's tables and names each sign it finds, computed from the data:

* **files**: some prediction files have no GT file while every GT file has a prediction (a model's folder
  lacks cases, the reference does not);
* **components**: over the cases where both hold something, the GT has at least twice as many connected
  components as the predictions (a model usually predicts more components than there are lesions; needs the
  ``detection`` metric, whose ``per_prediction`` table counts the predicted components);
* **names**: the GT folder is named like predictions (``pred``, ``infer``, ``output``, ``result``, ``seg``) or the
  prediction folder like a reference (``gt``, ``label``, ``truth``, ``ref``, ``manual``, ``annot``).

No sign is proof; the command line prints them as a note. Cost: one pass over the per-case and per-prediction
tables.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from .. import schema

__all__ = ["swap_signs"]

_PREDICTION_NAME = re.compile(r"pred|infer|output|result|seg(?!ment)", re.I)
_REFERENCE_NAME = re.compile(r"(?<![a-z])gt(?![a-z])|label|truth|ref|manual|annot", re.I)
#: how many times more GT components than predicted ones make a sign (over at least this many cases)
COMPONENT_RATIO, MIN_CASES = 2.0, 3


def _folder(files: pd.Series) -> str | None:
    """The folder most of the files are in, or None without files."""
    files = files.fillna("").astype(str)
    parents = files[files != ""].map(lambda f: str(Path(f).parent))
    return None if parents.empty else str(parents.mode().iloc[0])


def swap_signs(result: Any) -> list[str]:
    """Each sign that the run's GT and predictions were swapped, as a sentence; empty when none.

    Parameters
    ----------
    result : ccmetrics.DatasetResult
        A run of :func:`ccmetrics.evaluate_dataset` (or one read back with ``DatasetResult.read``).

    Returns
    -------
    list of str
        One sentence per sign (see the module docstring), each with the numbers it rests on.

    Examples
    --------
    >>> import numpy as np
    >>> from ccmetrics import evaluate_dataset
    >>> gt = np.zeros((20, 20, 20), np.uint8); gt[2:6, 2:6, 2:6] = 1
    >>> cases = {"a": (gt, gt), "b": (gt, gt)}
    >>> swap_signs(evaluate_dataset(cases, metrics=["dice"], progress=False))
    []
    """
    table = result.per_case.drop_duplicates(schema.CASE)
    signs = []

    def given(column: str) -> pd.Series:
        return table[column].fillna("").astype(str) != "" if column in table else pd.Series(False, table.index)

    no_gt = table[~given("gt_file") & given("pred_file")]
    if len(no_gt) and not result.counts()[schema.MISSING_PREDICTION]:  # every GT file has a prediction
        names = ", ".join(no_gt[schema.CASE].astype(str).head(5)) + (" ..." if len(no_gt) > 5 else "")
        signs.append(
            f"{len(no_gt)} prediction file(s) have no GT ({names}) while every GT file has a prediction "
            "(a model's output usually lacks cases, the reference does not)"
        )
    per_prediction = result.per_prediction
    if per_prediction is not None and schema.N_COMPONENTS in result.per_case:
        found = result.per_case[result.per_case[schema.STATUS] != schema.FAILED]
        gt_counts = found.groupby(schema.CASE)[schema.N_COMPONENTS].sum()
        pred_counts = per_prediction.groupby(schema.CASE).size().reindex(gt_counts.index, fill_value=0)
        both = (gt_counts > 0) & (pred_counts > 0)
        n_gt, n_pred = int(gt_counts[both].sum()), int(pred_counts[both].sum())
        if both.sum() >= MIN_CASES and n_gt >= COMPONENT_RATIO * n_pred:
            signs.append(
                f"the GT holds {n_gt} connected components in the {int(both.sum())} cases where both hold some, "
                f"the predictions {n_pred} ({n_gt / n_pred:.1f}x fewer; a model usually predicts more components "
                "than there are lesions)"
            )
    if "gt_file" in table and "pred_file" in table:
        gt_dir, pred_dir = _folder(table["gt_file"]), _folder(table["pred_file"])
        odd = [
            f"the GT folder {gt_dir} is named like predictions"
            if gt_dir and _PREDICTION_NAME.search(Path(gt_dir).name) and not _REFERENCE_NAME.search(Path(gt_dir).name)
            else "",
            f"the prediction folder {pred_dir} is named like a reference"
            if pred_dir
            and _REFERENCE_NAME.search(Path(pred_dir).name)
            and not _PREDICTION_NAME.search(Path(pred_dir).name)
            else "",
        ]
        if any(odd):
            signs.append(" and ".join(s for s in odd if s))
    return signs
