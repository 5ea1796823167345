"""The tidy tables' schema: every column name, its type and meaning, defined once.

Three tables carry every result of a data set, and everything downstream reads them: the CSV
files, :mod:`ccmetrics.stats`, :mod:`ccmetrics.plots`, the report and the command line.

``per_component`` (:data:`PER_COMPONENT`)
    One row per GT connected component (lesion) of every case and class.
``per_case`` (:data:`PER_CASE`)
    One row per case and class, every image file of both folders included (errors too).
``summary`` (:data:`SUMMARY`)
    One row per class, metric and aggregation: the data set's means, medians and intervals.

Metric columns follow the fixed ones: for a per-region metric ``m`` (:mod:`ccmetrics.registry`) the
raw value ``m`` in ``per_component``, the global value ``m`` and the CC mean ``cc_m`` in
``per_case``; a case-level metric adds its columns to ``per_case``. Code names columns through the
constants of this module (``schema.CASE``, :func:`cc`), never as string literals.

Examples
--------
>>> PER_CASE.columns(["dice", "detection"])[7:]  # doctest: +NORMALIZE_WHITESPACE
['spacing', 'n_components', 'empty_gt', 'pred_volume', 'worst_distance', 'dice', 'cc_dice', 'sensitivity',
 'precision', 'f1', 'fp_volume', 'fn_volume', 'pred_volume_ml']
>>> PER_COMPONENT.columns(["dice", "detection"])[-2:]
['worst_distance', 'dice']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

import pandas as pd

__all__ = ["AGGREGATIONS", "CC_PREFIX", "Field", "PER_CASE", "PER_COMPONENT", "STATUSES", "SUMMARY", "TableSchema",
           "base", "cc"]

# ---------------------------------------------------------------- column names

CASE = "case"
CLASS = "class"
COMPONENT = "component"
VOLUME = "volume"
VOLUME_MM3 = "volume_mm3"
GT_LABEL = "gt_label"
DETECTED = "detected"
WORST_DISTANCE = "worst_distance"

STATUS = "status"
FLAGS = "flags"
ERROR = "error"
GT_FILE = "gt_file"
PRED_FILE = "pred_file"
SPACING = "spacing"
N_COMPONENTS = "n_components"
EMPTY_GT = "empty_gt"
PRED_VOLUME = "pred_volume"
PRED_VOLUME_ML = "pred_volume_ml"

METRIC = "metric"
AGGREGATION = "aggregation"
N = "n"
MEAN = "mean"
MEDIAN = "median"
CI_LOW = "ci_low"
CI_HIGH = "ci_high"

READ_SECONDS = "read_seconds"
COMPUTE_SECONDS = "compute_seconds"

# ---------------------------------------------------------------- values

#: ``status`` of a per-case row: evaluated, evaluated with a flag, or not evaluated (``error`` says why)
OK, FLAGGED, FAILED = "ok", "flagged", "error"
STATUSES = (OK, FLAGGED, FAILED)
#: ``flags``: a GT without prediction file (evaluated as an empty prediction) ...
MISSING_PREDICTION = "missing_prediction"
#: ... and a case whose GT has no component (scored by the empty-GT rule, summarised apart)
EMPTY_GT_FLAG = "empty_gt"
#: flags are joined with this separator in one cell
FLAG_SEPARATOR = ";"

#: ``aggregation`` of a summary row: the global value per case; the CC mean per patient (mean of the case
#: means); the CC mean over all lesions pooled; a case-level score
STANDARD, CC_PATIENT, CC_POOLED, CASE_LEVEL = "standard", "cc_patient", "cc_pooled", "case"
AGGREGATIONS = (STANDARD, CC_PATIENT, CC_POOLED, CASE_LEVEL)

CC_PREFIX = "cc_"


def cc(metric: str) -> str:
    """The per-case column of a metric's CC mean.

    >>> cc("dice")
    'cc_dice'
    """
    return CC_PREFIX + metric


def base(column: str) -> str:
    """The metric of a column: ``cc_`` prefix removed.

    >>> base("cc_hd95"), base("dice")
    ('hd95', 'dice')
    """
    return column[len(CC_PREFIX):] if column.startswith(CC_PREFIX) else column


# ---------------------------------------------------------------- tables


@dataclass(frozen=True)
class Field:
    """A fixed column: its name, the dtype it is read with (pandas), whether every table has it, and its meaning."""

    name: str
    dtype: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class TableSchema:
    """One tidy table: fixed columns, then the metric columns of the metrics evaluated.

    Attributes
    ----------
    name : str
    file : str
        Its file in a result folder.
    fields : tuple of Field
        Fixed columns, in order, before the metric columns.
    tail : tuple of Field
        Fixed columns after the metric columns.
    key : tuple of str
        The columns rows are sorted by.
    """

    name: str
    file: str
    fields: Tuple[Field, ...]
    tail: Tuple[Field, ...] = ()
    key: Tuple[str, ...] = ()

    @property
    def fixed(self) -> List[str]:
        return [f.name for f in self.fields + self.tail]

    def columns(self, metrics: Sequence[str] = (), *, optional: bool = False) -> List[str]:
        """The columns of the table for these metric names (:mod:`ccmetrics.registry`); ``optional``: with
        the columns only some tables have (``gt_label``)."""
        fixed = [f.name for f in self.fields if f.required or optional]
        return fixed + metric_columns(self, metrics) + [f.name for f in self.tail if f.required or optional]

    def empty(self, metrics: Sequence[str] = ()) -> pd.DataFrame:
        """A table without rows, with its columns (what a data set in which every case failed gives)."""
        return pd.DataFrame(columns=self.columns(metrics))

    def validate(self, frame: pd.DataFrame, where: Optional[str] = None,
                 metric_columns: Iterable[str] = ()) -> pd.DataFrame:
        """Check that ``frame`` has every required column (and the given metric columns); name the first missing one.

        Raises
        ------
        ValueError
            ``"<where> has no column 'status' (...): ..."``, saying what the table should be.
        """
        where = where or self.file
        for f in self.fields + self.tail:
            if f.required and f.name not in frame.columns:
                raise ValueError(f"{where} has no column {f.name!r} ({f.description}); is it a {self.file} written "
                                 f"by `ccmetrics evaluate` (or DatasetResult.write)?")
        for column in metric_columns:
            if column not in frame.columns:
                raise ValueError(f"{where} has no column {column!r}, although the evaluation's metrics produce it: "
                                 f"was the table edited after `ccmetrics evaluate`?")
        return frame

    def read(self, path: "os.PathLike[str] | str", metric_columns: Iterable[str] = ()) -> pd.DataFrame:
        """Read the table from a CSV file with the schema's dtypes, then :meth:`validate` it.

        Empty cells are NaN, except in text columns (``""``); ``inf`` is read back as infinity.
        """
        text = [f.name for f in self.fields + self.tail if f.dtype == "str"]
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={c: str for c in text})
        for column in text:
            if column in frame:
                frame[column] = frame[column].astype(object).where(frame[column].notna(), "")
        return self.validate(frame, str(path), metric_columns)


def metric_columns(table: TableSchema, metrics: Sequence[str]) -> List[str]:
    """The metric columns a table holds for the given metric names, in order."""
    from . import registry

    out: List[str] = []
    for name in metrics:
        record = registry.get(name)
        if table is SUMMARY:
            continue
        if table is PER_COMPONENT:
            out += [record.name] if record.per_region else []
        elif record.per_region:
            out += [record.name, cc(record.name)]
        else:
            out += list(record.column_names)
    return out


PER_COMPONENT = TableSchema(
    "per_component", "per_component.csv",
    fields=(Field(CASE, "str", "the case id"),
            Field(CLASS, "int", "the class (label value; 1 for binary masks)"),
            Field(COMPONENT, "int", "the GT component, 1..K in raster order of its first voxel"),
            Field(VOLUME, "int", "its volume in voxels"),
            Field(VOLUME_MM3, "float", "its volume in mm³ (NaN without a spacing)"),
            Field(GT_LABEL, "int", "its label value in a GT instance map (sites='labels' only)", required=False),
            Field(DETECTED, "bool", "the component overlaps the prediction"),
            Field(WORST_DISTANCE, "float", "what a missed lesion's distances count as in means (mm or voxels)")),
    key=(CASE, CLASS, COMPONENT))

PER_CASE = TableSchema(
    "per_case", "per_case.csv",
    fields=(Field(CASE, "str", "the case id"),
            Field(CLASS, "int", "the class"),
            Field(STATUS, "str", "ok, flagged or error"),
            Field(FLAGS, "str", "missing_prediction and/or empty_gt, ';'-separated"),
            Field(ERROR, "str", "why the case could not be evaluated"),
            Field(GT_FILE, "str", "the GT file"),
            Field(PRED_FILE, "str", "the prediction file (empty when missing)"),
            Field(SPACING, "str", "the spacing used, e.g. 0.8x0.8x3, or 'voxel'"),
            Field(N_COMPONENTS, "float", "GT components"),
            Field(EMPTY_GT, "object", "the GT has no component (True/False; empty on error rows)"),
            Field(PRED_VOLUME, "float", "prediction voxels"),
            Field(WORST_DISTANCE, "float", "the case's worst distance")),
    tail=(Field(PRED_VOLUME_ML, "float", "prediction volume in ml (NaN without a spacing)"),),
    key=(CASE, CLASS))

SUMMARY = TableSchema(
    "summary", "summary.json",
    fields=(Field(CLASS, "int", "the class"),
            Field(METRIC, "str", "the column summarised"),
            Field(AGGREGATION, "str", "standard, cc_patient, cc_pooled or case"),
            Field(N, "int", "values summarised"),
            Field(MEAN, "float", "their mean"),
            Field(MEDIAN, "float", "their median"),
            Field(CI_LOW, "float", "bootstrap confidence interval of the mean, low end"),
            Field(CI_HIGH, "float", "and high end")),
    key=(CLASS, METRIC, AGGREGATION))

#: the empty-GT summary (per class): cases with an empty GT, how many have a prediction, its mean volume
WITH_FALSE_POSITIVE, FP_VOLUME_VOXELS_MEAN, FP_VOLUME_ML_MEAN = ("with_false_positive", "fp_volume_voxels_mean",
                                                                 "fp_volume_ml_mean")
TIMINGS_COLUMNS = (CASE, READ_SECONDS, COMPUTE_SECONDS)
EMPTY_GT_SUMMARY_COLUMNS = (CLASS, N, WITH_FALSE_POSITIVE, FP_VOLUME_VOXELS_MEAN, FP_VOLUME_ML_MEAN)


def split_flags(cell: object) -> List[str]:
    """The flags of a ``flags`` cell.

    >>> split_flags("missing_prediction;empty_gt"), split_flags("")
    (['missing_prediction', 'empty_gt'], [])
    """
    return [f for f in str(cell or "").split(FLAG_SEPARATOR) if f]


def join_flags(flags: Iterable[str]) -> str:
    """One ``flags`` cell."""
    return FLAG_SEPARATOR.join(flags)

