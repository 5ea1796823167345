"""The result of one evaluated case, and its rows in the tidy tables (:mod:`ccmetrics.schema`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy, schema
from ..columns import Columns, stored, table_fields
from ..engine.components import Sites
from ..engine.geometry import patient_coordinates

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = ["CaseResult"]


@table_fields("per_component", "per_prediction")  # held as Columns until read as DataFrames
@dataclass
class CaseResult:
    """Result of :func:`ccmetrics.evaluate` for one case (and one class).

    Attributes
    ----------
    per_component : pandas.DataFrame
        One row per GT component (index ``component``, 1..K in raster order):
        ``volume`` (voxels), ``volume_mm3`` (when a spacing is given),
        ``gt_label`` (with ``sites="labels"``), ``detected`` (under the detection
        rule; default: the component overlaps the prediction), with the
        ``detection`` metric ``n_pred`` (prediction components overlapping it) and
        ``split`` (two or more), then one column per metric with the raw
        value of that component's region: distances are ``inf`` when the
        region holds no prediction; with the ``pet`` metrics, last, the lesion's
        ``suv_max``, ``suv_mean``, ``suv_peak``, ``mtv_ml``, ``tlg`` and the
        prediction's ``pred_mtv_ml``, ``pred_tlg``, ``pred_suv_max``,
        ``pred_suv_mean`` inside its Voronoi region.
    cc : dict
        Metric name -> CC-metric: the mean over components, with infinite
        distances replaced by ``worst_distance``.
    standard : dict
        Metric name -> the usual global metric on the whole image (both masks
        empty: the best value; exactly one empty: Dice/IoU/NSD 0, distances inf).
    n_components : int
        Number of GT components K.
    empty_gt : bool
        True when the GT is empty: ``cc`` then holds the best value if the
        prediction is empty too, else the worst (0, or ``worst_distance``), as
        in the original CC-Metrics code.
    worst_distance : float
        Value used for missing distances (voxels, or mm with a spacing).
    spacing : tuple of float or None
        Voxel spacing used for distances and volumes.
    metrics : list of str
        The per-component metric columns, in order.
    details : dict
        Full results of the case-level metrics asked for: ``"pq"`` ->
        :class:`~ccmetrics.metrics.panoptic.PQResult`, ``"lesion_dice"`` ->
        :class:`~ccmetrics.metrics.lesions.LesionDiceResult`, ``"detection"`` ->
        :class:`~ccmetrics.metrics.lesions.DetectionResult`.
    case_scores : dict
        Scores of the case-level comparison metrics asked for (no CC version), one per column of
        their registry records (:mod:`ccmetrics.metrics.registry`): ``pq``, ``sq``, ``rq``; ``lesion_dice``,
        ``lesion_hd95``; ``sensitivity``, ``precision``, ``f1``, ``fp_volume``, ``fn_volume``.
    pred_volume : int
        Prediction voxels in the image (for an empty GT: the false-positive volume).
    per_prediction : pandas.DataFrame or None
        With the ``detection`` metric: one row per predicted connected component (index
        ``prediction``, 1..M in raster order): ``volume``, ``volume_mm3`` (with a spacing),
        ``gt_lesions`` (the components it overlaps, ``"1;3"``), ``n_gt``, ``merged``, ``best_iou``,
        ``outcome`` (``"tp"`` or ``"fp"`` under the rule), ``region`` (the component whose Voronoi
        region holds most of it; 0 without GT) and its centroid ``centroid_i``, ``centroid_j``
        (, ``centroid_k``) in voxels; with the ``pet`` metrics also ``suv_max``, ``suv_mean``, ``suv_peak``,
        ``mtv_ml``, ``tlg``. None without the detection and pet metrics.
    detection_rule : str
        The rule ``detected`` follows (:mod:`ccmetrics.metrics.detection_rules`).
    gt_volume, overlap_volume : int
        GT voxels in the image, and prediction voxels inside the GT (``|GT ∩ prediction|``): with
        ``pred_volume``, the voxel counts TP, FP and FN of the whole image without another pass over it.
    """

    per_component: pd.DataFrame
    cc: dict[str, float]
    standard: dict[str, float]
    n_components: int
    empty_gt: bool
    worst_distance: float
    spacing: tuple[float, ...] | None = None
    metrics: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    case_scores: dict[str, float] = field(default_factory=dict)
    pred_volume: int = 0
    per_prediction: pd.DataFrame | None = None
    detection_rule: str = "overlap"
    gt_volume: int = 0
    overlap_volume: int = 0

    def summary(self) -> pd.DataFrame:
        """Table with one row per score and columns ``standard`` and ``cc`` (NaN where not defined).

        Case-level scores (PQ, Lesion Dice, detection) have no CC version and
        appear in the ``standard`` column.
        """
        standard = {**self.standard, **self.case_scores}
        rows = list(dict.fromkeys(list(self.cc) + list(standard)))
        return pd.DataFrame(
            {schema.STANDARD: [standard.get(m, np.nan) for m in rows], "cc": [self.cc.get(m, np.nan) for m in rows]},
            index=pd.Index(rows, name=schema.METRIC),
        )

    def to_frame(self, case: str | None = None, class_value: int = 1) -> pd.DataFrame:
        """The per-component table in the tidy data-set format, ready to concatenate across cases.

        Columns (:data:`ccmetrics.schema.PER_COMPONENT`): ``case``, ``class``, ``component``,
        ``volume`` (voxels), ``volume_mm3`` (NaN without a spacing), ``gt_label`` (with
        ``sites="labels"``), ``detected``, ``worst_distance`` (what a missed lesion's distances
        count as in means), then the metrics' raw values.

        Examples
        --------
        >>> import numpy as np
        >>> from ccmetrics import evaluate
        >>> gt = np.zeros((12, 12), bool); gt[1:4, 1:4] = True; gt[8:10, 8:10] = True
        >>> frame = evaluate(gt=gt, pred=gt.copy(), metrics=["dice"]).to_frame("case_01")
        >>> print(frame[["case", "class", "component", "volume", "detected", "dice"]].to_string(index=False))
           case  class  component  volume  detected  dice
        case_01      1          1       9      True   1.0
        case_01      1          2       4      True   1.0
        """
        rows = self.component_rows(case, class_value)
        return rows.frame() if isinstance(rows, Columns) else rows

    def component_rows(self, case: str | None = None, class_value: int = 1) -> Columns | pd.DataFrame:
        """:meth:`to_frame`'s table as the result holds its tables: :class:`~ccmetrics.columns.Columns` while
        ``per_component`` has not been read as a DataFrame (what a data set's worker encodes without pandas), else
        the DataFrame."""
        table = stored(self, "per_component").reset_index()
        if schema.VOLUME_MM3 not in table:
            table.insert(list(table.columns).index(schema.VOLUME) + 1, schema.VOLUME_MM3, np.nan)
        table.insert(0, schema.CASE, case)
        table.insert(1, schema.CLASS, int(class_value))
        fixed = {schema.CASE, schema.CLASS, schema.COMPONENT, *(f.name for f in schema.PER_COMPONENT.fields)}
        metrics = [c for c in table.columns if c in self.metrics]
        others = [c for c in table.columns if c not in self.metrics and c in fixed]
        extra = [c for c in table.columns if c not in self.metrics and c not in fixed]  # the pet metrics' columns
        table[schema.WORST_DISTANCE] = float(self.worst_distance)
        return table[others + [schema.WORST_DISTANCE] + metrics + extra]

    def prediction_frame(
        self, case: str | None = None, class_value: int = 1, affine: Any | None = None
    ) -> pd.DataFrame | None:
        """The per-prediction table in the tidy data-set format (:data:`ccmetrics.schema.PER_PREDICTION`).

        ``affine``: the image's voxel-to-patient (RAS, mm) matrix, ``(ndim + 1)`` square, as
        :class:`ccmetrics.formats.image.Image` holds it; the centroids' ``centroid_x_mm`` ... are NaN without it.
        None when the case was evaluated without the ``detection`` metric.

        Examples
        --------
        >>> import numpy as np
        >>> from ccmetrics import evaluate
        >>> gt = np.zeros((8, 8), bool); gt[1:3, 1:3] = True
        >>> pred = np.zeros_like(gt); pred[1:3, 1:4] = True; pred[6, 6] = True
        >>> result = evaluate(gt=gt, pred=pred, metrics=["detection"])
        >>> frame = result.prediction_frame("c1", affine=np.diag([0.5, 0.5, 1.0]))
        >>> columns = ["prediction", "volume", "gt_lesions", "outcome", "centroid_i", "centroid_x_mm"]
        >>> print(frame[columns].to_string(index=False))
         prediction  volume gt_lesions outcome  centroid_i  centroid_x_mm
                  1       6          1      tp         1.5           0.75
                  2       1                 fp         6.0           3.00
        """
        rows = self.prediction_rows(case, class_value, affine)
        return rows.frame() if isinstance(rows, Columns) else rows

    def prediction_rows(
        self, case: str | None = None, class_value: int = 1, affine: Any | None = None
    ) -> Columns | pd.DataFrame | None:
        """:meth:`prediction_frame`'s table as the result holds its tables (see :meth:`component_rows`)."""
        held = stored(self, "per_prediction")
        if held is None:
            return None
        table = held.reset_index()
        if schema.VOLUME_MM3 not in table:
            table.insert(list(table.columns).index(schema.VOLUME) + 1, schema.VOLUME_MM3, np.nan)
        for column in schema.CENTROID_VOXEL:
            if column not in table:
                table[column] = np.nan
        patient = patient_coordinates(table[list(schema.CENTROID_VOXEL)].to_numpy(float), affine)
        for i, column in enumerate(schema.CENTROID_MM):
            table[column] = patient[:, i]
        fixed = schema.PER_PREDICTION.columns()
        extra = [c for c in table.columns if c not in fixed]  # the pet metrics' columns
        table.insert(0, schema.CASE, case)
        table.insert(1, schema.CLASS, int(class_value))
        return table[fixed + extra]

    def case_row(self) -> dict[str, Any]:
        """One row of the tidy per-case table: counts, global (``m``), CC (``cc_m``) and case-level scores.

        Keys: ``n_components``, ``empty_gt``, ``pred_volume`` (voxels),
        ``worst_distance``, then for each metric ``m`` the global value ``m``
        and the CC value ``cc_m``, then ``case_scores``.
        """
        row: dict[str, Any] = {
            schema.N_COMPONENTS: self.n_components,
            schema.EMPTY_GT: self.empty_gt,
            schema.PRED_VOLUME: self.pred_volume,
            schema.WORST_DISTANCE: float(self.worst_distance),
        }
        for m in self.metrics:
            row[m] = self.standard.get(m, np.nan)
            row[schema.cc(m)] = self.cc.get(m, np.nan)
        row.update(self.case_scores)
        return row

    def __repr__(self) -> str:
        flag = ", empty GT" if self.empty_gt else ""
        return (
            f"CaseResult({self.n_components} components{flag})\n"
            f"{self.summary().to_string(float_format=lambda v: f'{v:.4f}')}"
        )


def component_table(found: Sites, spacing: tuple[float, ...] | None, sites: str) -> Columns:
    """The first columns of ``per_component``: one row per site (component 1..K), its volume and label."""
    table = Columns(length=found.n, index_name=schema.COMPONENT, start=1)
    table[schema.VOLUME] = found.volumes
    if spacing is not None:
        table[schema.VOLUME_MM3] = found.volumes * float(np.prod(spacing))
    if sites == "labels":
        table[schema.GT_LABEL] = found.source_label
    return table


def prediction_table(
    pred_sites: Sites,
    detections: Any,
    pred_flat: np.ndarray,
    pred_region: np.ndarray,
    spacing: tuple[float, ...] | None,
) -> Columns:
    """``per_prediction``: one row per predicted component (1..M), from the case's judged detections.

    ``detections`` is the :class:`~ccmetrics.metrics.detection_rules.LesionDetections` of the case;
    ``pred_flat`` and ``pred_region`` the prediction's voxels (sorted flat indices) and the Voronoi
    region of each (:class:`ccmetrics.engine.geometry.CaseRegions`). Cost: the component of each
    prediction voxel (read from the components' raster list when ``pred_flat`` is that list, else one binary
    search each), a few bincounts (or a sort of the (component, region) pairs when there are many of both).
    """
    m = pred_sites.n
    table = Columns(length=m, index_name=schema.PREDICTION, start=1)
    volumes = pred_sites.volumes
    table[schema.VOLUME] = volumes
    if spacing is not None:
        table[schema.VOLUME_MM3] = volumes * float(np.prod(spacing))
    lesions: list[list[int]] = [[] for _ in range(m)]
    for g, p in zip(detections.pair_gt.tolist(), detections.pair_pred.tolist()):  # sorted by lesion: each list ascends
        lesions[p - 1].append(g)
    table[schema.GT_LESIONS] = [schema.LESION_SEPARATOR.join(map(str, ls)) for ls in lesions]
    table[schema.N_GT] = detections.n_gt
    table[schema.MERGED] = detections.merged
    table[schema.BEST_IOU] = detections.best_iou
    table[schema.OUTCOME] = np.where(detections.pred_tp, schema.TRUE_POSITIVE, schema.FALSE_POSITIVE)
    region = np.zeros(m, dtype=np.int64)
    if m and len(pred_flat):
        component = pred_sites.labels_at(pred_flat).astype(np.int64)  # the raster list itself: no search
        k = int(pred_region.max()) + 1
        pairs = component * k + pred_region
        if (m + 1) * k <= 4 * len(pairs) + (1 << 16):  # few (component, region) keys: counted, not sorted
            every = np.bincount(pairs, minlength=(m + 1) * k)
            keys = np.flatnonzero(every)
            counts = every[keys]
        else:
            keys, counts = np.unique(pairs, return_counts=True)
        comp, reg = keys // k, keys % k
        best = np.lexsort((reg, -counts, comp))  # per component: most voxels first, then the lowest region
        first = best[np.r_[True, np.diff(comp[best]) != 0]]
        region[comp[first] - 1] = reg[first]
    table[schema.REGION] = region
    if m:
        for column, total in zip(schema.CENTROID_VOXEL, pred_sites.coordinate_sums()):
            table[column] = total / volumes
    else:
        for column in schema.CENTROID_VOXEL[: len(pred_sites.shape)]:
            table[column] = np.zeros(0)
    return table
