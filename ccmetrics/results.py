"""The result of one evaluated case, and its rows in the tidy tables (:mod:`ccmetrics.schema`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import schema
from .components import Sites

__all__ = ["CaseResult"]


@dataclass
class CaseResult:
    """Result of :func:`ccmetrics.evaluate` for one case (and one class).

    Attributes
    ----------
    per_component : pandas.DataFrame
        One row per GT component (index ``component``, 1..K in raster order):
        ``volume`` (voxels), ``volume_mm3`` (when a spacing is given),
        ``gt_label`` (with ``sites="labels"``), ``detected`` (the component
        overlaps the prediction), then one column per metric with the raw
        value of that component's region: distances are ``inf`` when the
        region holds no prediction.
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
        :class:`~ccmetrics.panoptic.PQResult`, ``"lesion_dice"`` ->
        :class:`~ccmetrics.lesions.LesionDiceResult`, ``"detection"`` ->
        :class:`~ccmetrics.lesions.DetectionResult`.
    case_scores : dict
        Scores of the case-level comparison metrics asked for (no CC version), one per column of
        their registry records (:mod:`ccmetrics.registry`): ``pq``, ``sq``, ``rq``; ``lesion_dice``,
        ``lesion_hd95``; ``sensitivity``, ``precision``, ``f1``, ``fp_volume``, ``fn_volume``.
    pred_volume : int
        Prediction voxels in the image (for an empty GT: the false-positive volume).
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
        >>> frame = evaluate(gt.copy(), gt, ["dice"]).to_frame("case_01")
        >>> print(frame[["case", "class", "component", "volume", "detected", "dice"]].to_string(index=False))
           case  class  component  volume  detected  dice
        case_01      1          1       9      True   1.0
        case_01      1          2       4      True   1.0
        """
        table = self.per_component.reset_index()
        if schema.VOLUME_MM3 not in table:
            table.insert(table.columns.get_loc(schema.VOLUME) + 1, schema.VOLUME_MM3, np.nan)
        table.insert(0, schema.CASE, case)
        table.insert(1, schema.CLASS, int(class_value))
        metrics = [c for c in table.columns if c in self.metrics]
        others = [c for c in table.columns if c not in self.metrics]
        table[schema.WORST_DISTANCE] = float(self.worst_distance)
        return table[others + [schema.WORST_DISTANCE] + metrics]

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


def component_table(found: Sites, spacing: tuple[float, ...] | None, sites: str) -> pd.DataFrame:
    """The first columns of ``per_component``: one row per site (component 1..K), its volume and label."""
    table = pd.DataFrame(index=pd.RangeIndex(1, found.n + 1, name=schema.COMPONENT))
    table[schema.VOLUME] = found.volumes
    if spacing is not None:
        table[schema.VOLUME_MM3] = found.volumes * float(np.prod(spacing))
    if sites == "labels":
        table[schema.GT_LABEL] = found.source_label
    return table
