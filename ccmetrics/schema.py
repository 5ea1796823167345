"""The tidy tables' schema: every column name, its type and meaning, defined once.

Three tables carry every result of a data set, and everything downstream reads them: the CSV
files, :mod:`ccmetrics.analysis.stats`, :mod:`ccmetrics.analysis.plots`, the report and the command line.

``per_component`` (:data:`PER_COMPONENT`)
    One row per GT connected component (lesion) of every case and class.
``per_case`` (:data:`PER_CASE`)
    One row per case and class, every image file of both folders included (errors too).
``per_prediction`` (:data:`PER_PREDICTION`)
    One row per predicted connected component of every case and class (with the ``detection``
    metric): matched or not, its size, the lesions it overlaps and where it lies.
``per_candidate`` (:data:`PER_CANDIDATE`)
    One row per lesion candidate of a probability map (``--probabilities``): its confidence, whether it is a
    true positive, the lesion it is matched to, and where it lies.
``thresholds`` (:data:`THRESHOLDS`)
    One row per case, class and threshold of a probability map (``--thresholds``): the per-region metrics of
    ``prob >= threshold``, global and CC.
``summary`` (:data:`SUMMARY`)
    One row per class, metric and aggregation: the data set's means, medians and intervals.

Metric columns follow the fixed ones: for a per-region metric ``m`` (:mod:`ccmetrics.metrics.registry`) the
raw value ``m`` in ``per_component``, the global value ``m`` and the CC mean ``cc_m`` in
``per_case``; a case-level metric adds its columns to ``per_case``. Code names columns through the
constants of this module (``schema.CASE``, :func:`cc`), never as string literals.

This module is a foundation: it imports nothing of ccmetrics but the text rule of CSV cells
(``ccmetrics._escaping``; which columns a metric produces is the registry's fact,
:func:`ccmetrics.metrics.registry.table_columns`).

Examples
--------
>>> PER_CASE.columns(["dice", "cc_dice"])[-4:]
['worst_distance', 'dice', 'cc_dice', 'pred_volume_ml']
>>> cc("hd95"), base("cc_hd95")
('cc_hd95', 'hd95')
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported where a table is made: the command line's parser needs none
    import pandas as pd

__all__ = [
    "PLOT_FILE",
    "CC_PREFIX",
    "EMPTY_GT_SUMMARY_COLUMNS",
    "Field",
    "PER_CASE",
    "PER_CASE_FRONT",
    "PER_CANDIDATE",
    "PER_COMPONENT",
    "PER_PREDICTION",
    "SUMMARY",
    "THRESHOLDS",
    "TableSchema",
    "base",
    "cc",
    "join_flags",
]

# ---------------------------------------------------------------- column names

CASE = "case"
CLASS = "class"
CLASS_NAME = "class_name"
TP_VOXELS, FP_VOXELS, FN_VOXELS, TN_VOXELS = "tp_voxels", "fp_voxels", "fn_voxels", "tn_voxels"
COMPONENT = "component"
VOLUME = "volume"
VOLUME_MM3 = "volume_mm3"
GT_LABEL = "gt_label"
DETECTED = "detected"
N_PRED = "n_pred"
SPLIT = "split"
PREDICTION = "prediction"
GT_LESIONS = "gt_lesions"
N_GT = "n_gt"
MERGED = "merged"
BEST_IOU = "best_iou"
OUTCOME = "outcome"
REGION = "region"
CENTROID_VOXEL = ("centroid_i", "centroid_j", "centroid_k")
CENTROID_MM = ("centroid_x_mm", "centroid_y_mm", "centroid_z_mm")
WORST_DISTANCE = "worst_distance"

STATUS = "status"
FLAGS = "flags"
ERROR = "error"
GT_FILE = "gt_file"
PRED_FILE = "pred_file"
PROB_FILE = "prob_file"
IMAGE_FILE = "image_file"
OUTCOME_MAP_FILE = "outcome_map_file"
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

CANDIDATE = "candidate"
CONFIDENCE = "confidence"
LESION = "lesion"
SCORE = "score"
CASE_CONFIDENCE = "case_confidence"
THRESHOLD = "threshold"
BRIER = "brier"
ECE = "ece"

READ_SECONDS = "read_seconds"
COMPUTE_SECONDS = "compute_seconds"

#: the names of the figures ccmetrics draws into ``OUT_DIR/plots`` (:func:`ccmetrics.analysis.plots.write_plots`, and
#: ``by_group_cc_<m>.png``), ``_class<k>`` for each class of several: a later run removes an earlier run's figure
#: only by these names (other files there are the user's)
PLOT_FILE = re.compile(
    r"(?:metric_vs_volume_\w+|standard_vs_cc_\w+|by_group_cc_\w+|detection_by_size(?:_class\d+)?"
    r"|case_distribution(?:_class\d+)?|(?:froc|pr|roc|thresholds|reliability)(?:_class\d+)?"
    r"|(?:bland_altman|pred_vs_ref)_\w+|detection_by_suv(?:_class\d+)?)\.png"
)

# ---------------------------------------------------------------- values

#: ``status`` of a per-case row: evaluated, evaluated with a flag, or not evaluated (``error`` says why)
OK, FLAGGED, FAILED = "ok", "flagged", "error"
#: ``flags``: a GT without prediction file (evaluated as an empty prediction) ...
MISSING_PREDICTION = "missing_prediction"
#: ... a case whose GT has no component (scored by the empty-GT rule, summarised apart) ...
EMPTY_GT_FLAG = "empty_gt"
#: ... and a case of DICOM SEGs without their empty frames whose grid is the span of the frames they hold
#: (:mod:`ccmetrics.formats.grids`): the image's extent, and so the default worst distance, was inferred
EXTENT_INFERRED = "extent_inferred"
#: ... and a case whose scan's values cannot be SUV (above ``SUV_CEILING`` or below ``SUV_FLOOR`` somewhere):
#: activity in Bq/ml, or a CT in HU, taken for the PET (``--images``, ``--pet-channel``); its pet values are computed
#: as given, and flagged
SCAN_NOT_SUV = "scan_not_suv"
#: the bounds of a scan taken as SUV: no body-weight SUV reaches 1000, and none falls below -100 (noise after
#: reconstruction dips slightly below 0; a CT's air is about -1000 HU, a PET in Bq/ml reaches thousands)
SUV_CEILING, SUV_FLOOR = 1000.0, -100.0
#: flags are joined with this separator in one cell
FLAG_SEPARATOR = ";"

#: ``outcome`` of a predicted component: it overlaps a detected lesion, or not
TRUE_POSITIVE, FALSE_POSITIVE = "tp", "fp"
#: ``outcome`` of a lesion candidate that passes the rule with a lesion matched to another candidate: left out
#: (picai_eval's ``allow_unmatched_candidates_with_minimal_overlap``)
IGNORED = "ignored"
#: separator of the lesion numbers in a ``gt_lesions`` cell
LESION_SEPARATOR = ";"

#: ``aggregation`` of a summary row: the global value per case; the CC mean per patient (mean of the case
#: means); the CC mean over all lesions pooled; a case-level score
STANDARD, CC_PATIENT, CC_POOLED, CASE_LEVEL = "standard", "cc_patient", "cc_pooled", "case"

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
    return column[len(CC_PREFIX) :] if column.startswith(CC_PREFIX) else column


# ---------------------------------------------------------------- tables


@dataclass(frozen=True)
class Field:
    """A fixed column: its name, what its values are, whether every table has it, and its meaning.

    ``dtype`` says what the column holds (``"str"``, ``"int"``, ``"float"``, ``"bool"``, ``"object"``
    for True/False with empty cells); reading a CSV file keeps ``text`` columns as text (so that ids
    such as ``001`` or ``NA`` survive) and fills the empty cells of ``filled`` columns with ``""``.
    """

    name: str
    dtype: str
    description: str
    required: bool = True
    text: bool = False
    filled: bool = False


@dataclass(frozen=True)
class TableSchema:
    """One tidy table: fixed columns, then the metric columns of the metrics evaluated.

    Attributes
    ----------
    name : str
    file : str
        Its file in a result folder (``summary.json`` keeps the summary as a list of records).
    fields : tuple of Field
        Fixed columns, in order, before the metric columns.
    tail : tuple of Field
        Fixed columns after the metric columns.
    key : tuple of str
        The columns rows are sorted by.
    """

    name: str
    file: str
    fields: tuple[Field, ...]
    tail: tuple[Field, ...] = ()
    key: tuple[str, ...] = ()

    def columns(self, metric_columns: Sequence[str] = (), *, optional: bool = False) -> list[str]:
        """All columns of the table, in order: the fixed ones around ``metric_columns`` (those the metrics
        produce, :func:`ccmetrics.metrics.registry.table_columns`); ``optional``: with the columns only some tables
        have (``gt_label``)."""
        fixed = [f.name for f in self.fields if f.required or optional]
        return fixed + list(metric_columns) + [f.name for f in self.tail if f.required or optional]

    def empty(self, metric_columns: Sequence[str] = ()) -> pd.DataFrame:
        """A table without rows, with its columns (what a data set in which every case failed gives)."""
        import pandas as pd

        return pd.DataFrame(columns=self.columns(metric_columns))

    def validate(
        self, frame: pd.DataFrame, where: str | None = None, metric_columns: Iterable[str] = ()
    ) -> pd.DataFrame:
        """Check that ``frame`` has every required column (and the given metric columns); name the first missing one.

        Raises
        ------
        ValueError
            ``"<where> has no column 'status' (...): ..."``, saying what the table should be.
        """
        where = where or self.file
        for f in self.fields + self.tail:
            if f.required and f.name not in frame.columns:
                raise ValueError(
                    f"{where} has no column {f.name!r} ({f.description}); is it a {self.file} written "
                    f"by `ccmetrics evaluate` (or DatasetResult.write)?"
                )
        for column in metric_columns:
            if column not in frame.columns:
                raise ValueError(
                    f"{where} has no column {column!r}, although the evaluation's metrics produce it: "
                    f"was the table edited after `ccmetrics evaluate`?"
                )
        return frame

    def read(
        self,
        path: os.PathLike[str] | str,
        metric_columns: Iterable[str] = (),
        *,
        source: Any = None,
        neutralised: bool = True,
    ) -> pd.DataFrame:
        """Read the table from its CSV file (or from ``source``, a file object holding the bytes of the file
        at ``path``, e.g. bytes already checked against a manifest), then :meth:`validate` it.

        ``text`` columns are read as text and ``filled`` ones get ``""`` for an empty cell (see
        :class:`Field`); the other columns are pandas' reading of the values (``inf`` is infinity, an
        empty cell NaN). Text that ``ccmetrics._escaping.write_csv`` neutralised (a leading ``'``) is read
        as it was before; ``neutralised=False`` for a file written before ccmetrics neutralised text (its
        folder's manifest is of format 1, or it has none: :func:`ccmetrics.campaign.output_folder.read_tables`).
        """
        if not str(path).endswith(".csv"):
            raise ValueError(
                f"the {self.name} table is not kept as a CSV file ({self.file}): read {path} as what it is"
            )
        fields = self.fields + self.tail
        text = {f.name: str for f in fields if f.text}
        import pandas as pd

        from ._escaping import spreadsheet_restored

        frame = pd.read_csv(path if source is None else source, keep_default_na=False, na_values=[""], dtype=text)
        if neutralised:
            frame = spreadsheet_restored(frame)  # the text as it was before write_csv neutralised it
        for f in fields:
            if f.filled and f.name in frame:
                frame[f.name] = frame[f.name].astype(object).fillna("")  # an all-empty column is read as float NaN
        return self.validate(frame, str(path), metric_columns)


#: the fields that open the per-lesion and per-prediction tables: the case, the class and its name
_CLASS_NAME_FIELD = Field(
    CLASS_NAME,
    "str",
    "the class's name (label maps: the dataset.json key or --classes name)",
    required=False,
    text=True,
)
_CASE_CLASS = (
    Field(CASE, "str", "the case id", text=True),
    Field(CLASS, "int", "the class (label value; 1 for binary masks; 1..n when a class is a region)"),
    _CLASS_NAME_FIELD,
)
#: a component's volume, in voxels and mm³
_VOLUMES = (
    Field(VOLUME, "int", "its volume in voxels"),
    Field(VOLUME_MM3, "float", "its volume in mm³ (NaN without a spacing)"),
)


#: a component's centroid, in voxels and in patient mm
_CENTROIDS = (
    *(
        Field(c, "float", f"its centroid, voxel index along axis {i} (NaN for a missing axis)")
        for i, c in enumerate(CENTROID_VOXEL)
    ),
    *(
        Field(c, "float", f"its centroid in patient (RAS) mm, {c[9]} (NaN without the image's geometry)")
        for c in CENTROID_MM
    ),
)


#: one row per GT connected component (lesion) of every case and class
PER_COMPONENT = TableSchema(
    "per_component",
    "per_component.csv",
    fields=(
        *_CASE_CLASS,
        Field(COMPONENT, "int", "the GT component, 1..K in raster order of its first voxel"),
        *_VOLUMES,
        Field(GT_LABEL, "int", "its label value in a GT instance map (sites='labels' only)", required=False),
        Field(
            DETECTED, "bool", "the lesion is detected under the detection rule (default: it overlaps the prediction)"
        ),
        Field(N_PRED, "int", "prediction components overlapping it (with the detection metric)", required=False),
        Field(
            SPLIT, "bool", "two or more prediction components overlap it (with the detection metric)", required=False
        ),
        Field(WORST_DISTANCE, "float", "what a missed lesion's distances count as in means (mm or voxels)"),
    ),
    key=(CASE, CLASS, COMPONENT),
)

#: one row per predicted connected component of every case and class (with the ``detection`` metric)
PER_PREDICTION = TableSchema(
    "per_prediction",
    "per_prediction.csv",
    fields=(
        *_CASE_CLASS,
        Field(PREDICTION, "int", "the predicted component, 1..M in raster order of its first voxel"),
        *_VOLUMES,
        Field(
            GT_LESIONS,
            "str",
            "the GT components (per_component's numbers) it overlaps, ';'-separated",
            text=True,
            filled=True,
        ),
        Field(N_GT, "int", "how many GT components it overlaps"),
        Field(MERGED, "bool", "it overlaps two or more GT components"),
        Field(BEST_IOU, "float", "its highest IoU with one GT component (0 when it overlaps none)"),
        Field(OUTCOME, "str", "tp (it overlaps a lesion detected under the rule) or fp"),
        Field(
            REGION,
            "int",
            "the GT component whose Voronoi region holds most of its voxels (ties: the lowest; 0 without GT)",
        ),
        *_CENTROIDS,
    ),
    key=(CASE, CLASS, PREDICTION),
)

#: one row per lesion candidate of every case and class (with probability maps)
PER_CANDIDATE = TableSchema(
    "per_candidate",
    "per_candidate.csv",
    fields=(
        *_CASE_CLASS,
        Field(CANDIDATE, "int", "the candidate, 1..M in raster order of its first voxel"),
        Field(CONFIDENCE, "float", "its confidence (the probability map's maximum inside it, or the mean)"),
        *_VOLUMES,
        Field(
            OUTCOME,
            "str",
            "tp (matched to a lesion), fp, or ignored (passes the rule with a lesion matched to another)",
        ),
        Field(LESION, "int", "the GT component (per_component's number) it is matched to; 0 when it is not"),
        Field(
            SCORE, "float", "the detection rule's score with that lesion (unmatched: its best score with any lesion)"
        ),
        *_CENTROIDS,
    ),
    key=(CASE, CLASS, CANDIDATE),
)

#: one row per case, class and threshold of the probability map (``--thresholds``)
THRESHOLDS = TableSchema(
    "thresholds",
    "thresholds.csv",
    fields=(
        *_CASE_CLASS,
        Field(THRESHOLD, "float", "the threshold t: the segmentation is prob >= t"),
        Field(EMPTY_GT, "bool", "the GT has no component (left out of the means per threshold)"),
        Field(WORST_DISTANCE, "float", "the case's worst distance"),
    ),
    key=(CASE, CLASS, THRESHOLD),
)

#: one row per case and class, every image file of both folders included (errors too)
PER_CASE = TableSchema(
    "per_case",
    "per_case.csv",
    fields=(
        Field(CASE, "str", "the case id", text=True),
        Field(CLASS, "int", "the class"),
        _CLASS_NAME_FIELD,
        Field(STATUS, "str", "ok, flagged or error"),
        Field(
            FLAGS,
            "str",
            "missing_prediction, empty_gt, extent_inferred, scan_not_suv (--images), ';'-separated",
            filled=True,
        ),
        Field(ERROR, "str", "why the case could not be evaluated", filled=True),
        Field(GT_FILE, "str", "the GT file"),
        Field(PRED_FILE, "str", "the prediction file (empty when missing)"),
        Field(
            PROB_FILE,
            "str",
            "the probability map's file (--probabilities; empty when missing)",
            required=False,
            filled=True,
        ),
        Field(
            IMAGE_FILE,
            "str",
            "the PET scan's file (--images; empty when missing, <array> when given as an array)",
            required=False,
            filled=True,
        ),
        Field(
            OUTCOME_MAP_FILE,
            "str",
            "the case's outcome map, relative to the output folder (--write-maps; empty on error rows)",
            required=False,
            filled=True,
        ),
        Field(SPACING, "str", "the spacing used, e.g. 0.8x0.8x3, or 'voxel'"),
        Field(N_COMPONENTS, "float", "GT components (empty on error rows)"),
        Field(EMPTY_GT, "object", "the GT has no component (True/False; empty on error rows)"),
        Field(PRED_VOLUME, "float", "prediction voxels"),
        Field(WORST_DISTANCE, "float", "the case's worst distance"),
    ),
    tail=(
        Field(PRED_VOLUME_ML, "float", "prediction volume in ml (NaN without a spacing)"),
        Field(
            CASE_CONFIDENCE,
            "float",
            "the case's confidence: its highest candidate confidence, 0 without candidates (--probabilities)",
            required=False,
        ),
        Field(BRIER, "float", "voxel-level Brier score of the probability map (--probabilities)", required=False),
        Field(
            ECE,
            "float",
            "voxel-level expected calibration error of the map, 10 equal-width bins (--probabilities)",
            required=False,
        ),
        *(
            Field(
                name,
                "int",
                f"nnU-Net's {name[:2].upper()} voxel count (--nnunet-summary; ignore label left out)",
                required=False,
            )
            for name in (TP_VOXELS, FP_VOXELS, FN_VOXELS, TN_VOXELS)
        ),
    ),
    key=(CASE, CLASS),
)
#: the per-case table's first columns: the case (and class name, when classes have names), its status and its files
PER_CASE_FRONT = tuple(f.name for f in PER_CASE.fields[:8])

#: one row per class, metric and aggregation (kept in ``summary.json``)
SUMMARY = TableSchema(
    "summary",
    "summary.json",
    fields=(
        Field(CLASS, "int", "the class"),
        Field(METRIC, "str", "the column summarised"),
        Field(AGGREGATION, "str", "standard, cc_patient, cc_pooled or case"),
        Field(N, "int", "values summarised"),
        Field(MEAN, "float", "their mean"),
        Field(MEDIAN, "float", "their median"),
        Field(CI_LOW, "float", "bootstrap confidence interval of the mean, low end"),
        Field(CI_HIGH, "float", "and high end"),
    ),
    key=(CLASS, METRIC, AGGREGATION),
)

#: the empty-GT summary (per class): cases with an empty GT, how many have a prediction, its mean volume
WITH_FALSE_POSITIVE, FP_VOLUME_VOXELS_MEAN, FP_VOLUME_ML_MEAN = (
    "with_false_positive",
    "fp_volume_voxels_mean",
    "fp_volume_ml_mean",
)
EMPTY_GT_SUMMARY_COLUMNS = (CLASS, N, WITH_FALSE_POSITIVE, FP_VOLUME_VOXELS_MEAN, FP_VOLUME_ML_MEAN)


def join_flags(flags: Iterable[str]) -> str:
    """One ``flags`` cell.

    >>> join_flags(["missing_prediction", "empty_gt"])
    'missing_prediction;empty_gt'
    """
    return FLAG_SEPARATOR.join(flags)
