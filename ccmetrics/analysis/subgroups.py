"""Results by subgroup (scanner, site, sex, ...): the summary of each group of cases from a metadata table.

A metadata table (CSV) has one row per case: a ``case`` column with the case ids of the evaluation
(or, without one, its first column) and any number of descriptive columns. ``group_by`` names one or
more of them; every combination of their values present is a group, and the data set's summary
(:meth:`ccmetrics.campaign.dataset.DatasetResult.summary`: means, medians, bootstrap intervals) is computed on
the cases of each group alone. Cases of the evaluation missing from the table form the group
:data:`MISSING_GROUP`, so that no case leaves the results in silence; an empty cell is the group
:data:`EMPTY_VALUE`. Cost: one summary per group.

Examples
--------
>>> import pandas as pd
>>> meta = pd.DataFrame({"case": ["a", "b", "c"], "scanner": ["X", "Y", "X"]})
>>> case_groups(meta, ["scanner"], ["a", "b", "c", "d"])
{'a': ('X',), 'b': ('Y',), 'c': ('X',), 'd': ('(not in metadata)',)}
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import schema

__all__ = ["EMPTY_VALUE", "MISSING_GROUP", "case_groups", "read_metadata"]

#: the group of the cases that the metadata table does not list
MISSING_GROUP = "(not in metadata)"
#: the group value of an empty cell
EMPTY_VALUE = "(empty)"


def read_metadata(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a metadata CSV as text (case ids such as ``001`` keep their zeros), with a ``case`` column.

    Raises
    ------
    ValueError
        No rows, or a case id given twice.
    """
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if frame.empty:
        raise ValueError(f"{path} holds no row: give one row per case, with a 'case' column")
    if schema.CASE not in frame.columns:
        frame = frame.rename(columns={frame.columns[0]: schema.CASE})
    duplicated = frame[schema.CASE][frame[schema.CASE].duplicated()].unique().tolist()
    if duplicated:
        raise ValueError(f"{path} lists case(s) {duplicated[:5]} twice: give one row per case")
    return frame


def case_groups(metadata: pd.DataFrame, group_by: Sequence[str], cases: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """The group (a tuple of the ``group_by`` columns' values) of each case of the evaluation.

    Raises
    ------
    ValueError
        A ``group_by`` column that the table lacks (the message lists the table's columns).
    """
    group_by = list(group_by)
    if not group_by:
        raise ValueError("group_by is empty: name one or more columns of the metadata table")
    missing = [c for c in group_by if c not in metadata.columns]
    if missing:
        raise ValueError(
            f"the metadata table has no column {missing[0]!r}; its columns: {', '.join(map(str, metadata.columns))}"
        )
    rows = metadata.set_index(metadata[schema.CASE].astype(str))
    out: dict[str, tuple[str, ...]] = {}
    for case in cases:
        key = str(case)
        if key in rows.index:
            values = rows.loc[key, group_by]
            out[key] = tuple(str(v) if str(v) != "" else EMPTY_VALUE for v in values)
        else:
            out[key] = (MISSING_GROUP,) * len(group_by)
    return out
