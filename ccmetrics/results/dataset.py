"""The result of a data-set evaluation: its tidy tables, read and write (their statistics: ``ccmetrics.analysis``).

:class:`DatasetResult`: two tidy tables hold what everything downstream (CSV files, :mod:`ccmetrics.analysis.stats`,
:mod:`ccmetrics.analysis.plots`, the report, the command line) reads:

* ``per_component``: one row per GT connected component (lesion) of every
  case and class (see :meth:`ccmetrics.CaseResult.to_frame`);
* ``per_case``: one row per case and class: ``status`` (``ok``, ``flagged``,
  ``error``), ``flags``, ``error``, the files, the global metric ``m``, the CC
  value ``cc_m`` and the case-level scores.

With the ``detection`` metric and with probability maps there are ``per_prediction``, ``per_candidate`` and
``thresholds`` too. Every case appears in ``per_case``, its errors included; the files found without a partner
image are listed in ``unpaired_files`` (formerly ``ignored_files``). :meth:`DatasetResult.write` writes the tables,
``summary.json`` and the plots into a folder as one set (:mod:`ccmetrics.results.tables`, under the folder's lock:
:func:`ccmetrics.campaign.output_folder.locked`); :meth:`DatasetResult.read` reads such a set back, validated against
:mod:`ccmetrics.schema`. The statistics (:meth:`DatasetResult.summary`, :meth:`~DatasetResult.group_summary`,
:meth:`~DatasetResult.empty_gt_summary`, :meth:`~DatasetResult.calibration`, :meth:`~DatasetResult.size_table`) and
the figures are the analysis layer's (:mod:`ccmetrics.analysis.summaries`, :mod:`ccmetrics.analysis.plots`):
the methods call them.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .. import _lazy, schema
from .._deprecation import former_ci_level
from .._escaping import write_csv
from .._files import atomic_write
from ..metrics import registry
from ..metrics.detection_curves import DetectionCurves, detection_curves_from_tables
from ..metrics.thresholds import threshold_summary
from ..schema import CASE, CLASS, ERROR, FAILED, FLAGGED, FLAGS, STATUS
from .run import RunInfo
from .tables import begin_tables, finish_tables, read_tables

if TYPE_CHECKING:
    import pandas as pd

    from ..campaign.options import EvalOptions, PairingOptions
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = ["DatasetResult"]

# the flags that :mod:`ccmetrics.campaign.case` sets, counted by DatasetResult.counts
MISSING_PREDICTION = schema.MISSING_PREDICTION
EMPTY_GT = schema.EMPTY_GT_FLAG
_PathLike = Union[str, os.PathLike]


@dataclass
class DatasetResult:
    """Result of :func:`~ccmetrics.campaign.dataset.evaluate_dataset`: the tidy tables and what could not be
    evaluated.

    Attributes
    ----------
    per_component : pandas.DataFrame
        One row per GT component of every evaluated case and class.
    per_case : pandas.DataFrame
        One row per case and class (errors included), sorted by case and class.
    unpaired_files : list of str
        Files found in the folders that are not an image with a partner (non-image files, folders; never
        evaluated). Formerly ``ignored_files`` (the former keyword and attribute still work, with a
        ``DeprecationWarning``; ``summary.json`` keeps the key ``ignored_files``).
    timings : pandas.DataFrame
        Per case: ``read_seconds`` and ``compute_seconds``.
    options : dict
        The evaluation settings as ``summary.json`` keeps them
        (:meth:`~ccmetrics.campaign.options.EvalOptions.to_summary`); as option objects: :attr:`eval_options`,
        :attr:`pairing_options`.
    columns : dict of str to ccmetrics.metrics.registry.Column
        The facts of the metric columns (display name, direction, unit, whether a CC version
        exists), kept in ``summary.json`` so that a folder describes its own tables, also for
        metrics that the reading process has not registered. Default: the registry's records of
        ``options["metrics"]``.
    saved : dict
        What ``summary.json`` held when the result was read with :meth:`read` (its ``summary``,
        ``counts``, ``empty_gt``, ...); empty otherwise.
    run : ccmetrics.results.RunInfo
        What the run did: cases taken from the records of an earlier run (``reused``), evaluated and
        why, and, after Ctrl-C, the cases not evaluated (``pending``; ``run.complete`` is False).
    per_prediction : pandas.DataFrame or None
        With the ``detection`` metric: one row per predicted component of every evaluated case and
        class (:data:`ccmetrics.schema.PER_PREDICTION`), sorted by case, class and component; else None.
    per_candidate : pandas.DataFrame or None
        With probability maps: one row per lesion candidate of every evaluated case
        (:data:`ccmetrics.schema.PER_CANDIDATE`), sorted by case, class and candidate; else None. The detection
        curves: :meth:`detection_curves`.
    thresholds : pandas.DataFrame or None
        With probability maps and ``thresholds``: the per-region metrics of ``prob >= t`` per case, class and
        threshold (:data:`ccmetrics.schema.THRESHOLDS`); their means and the best threshold by each score:
        :meth:`threshold_summary`.
    """

    per_component: pd.DataFrame
    per_case: pd.DataFrame
    unpaired_files: list[str] = field(default_factory=list)
    timings: pd.DataFrame = field(default_factory=lambda: pd.DataFrame())
    options: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, registry.Column] = field(default_factory=dict)
    saved: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    run: RunInfo = field(default_factory=RunInfo, repr=False, compare=False)
    per_prediction: pd.DataFrame | None = None
    per_candidate: pd.DataFrame | None = None
    thresholds: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        if not self.columns:
            self.columns = _columns_of(self.options.get("metrics", []), self.per_case)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A result pickled before ``unpaired_files`` had its name holds ``ignored_files``: read as the new name."""
        if "ignored_files" in state:
            state = {("unpaired_files" if k == "ignored_files" else k): v for k, v in state.items()}
        self.__dict__.update(state)

    @property
    def ignored_files(self) -> list[str]:
        """Former name of ``unpaired_files`` (deprecated)."""
        warnings.warn(
            "DatasetResult.ignored_files is deprecated: use DatasetResult.unpaired_files",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.unpaired_files

    @property
    def eval_options(self) -> EvalOptions:
        """``options`` as the :class:`~ccmetrics.campaign.options.EvalOptions` that made the values (those that
        change values; a folder written by an older version: its missing keys take their defaults), read by the one
        parser of such records, :meth:`EvalOptions.from_record <ccmetrics.campaign.options.EvalOptions.from_record>`.

        Examples
        --------
        >>> import pandas as pd
        >>> options = {"metrics": ["dice"], "spacing": "voxel", "classes": [1, 2], "gt_suffix": "_0000"}
        >>> result = DatasetResult(pd.DataFrame(), pd.DataFrame(), options=options)
        >>> result.eval_options.spacing, [c.value for c in result.eval_options.classes]
        ('voxel', [1, 2])
        >>> result.pairing_options.gt_suffix
        '_0000'
        """
        from ..campaign.options import EvalOptions  # up a layer, at call time (pyproject's ignore_imports)

        return EvalOptions.from_record(self.options)

    @property
    def pairing_options(self) -> PairingOptions:
        """``options``' pairing (``gt_suffix``, ``pred_suffix``) as a
        :class:`~ccmetrics.campaign.options.PairingOptions` (its ``dataset.json`` is not kept)."""
        from ..campaign.options import PairingOptions  # up a layer, at call time (pyproject's ignore_imports)

        return PairingOptions.from_record(self.options)

    @property
    def class_names(self) -> dict[int, str]:
        """The name of each class value (label maps evaluated with classes); empty for binary masks."""
        out = {}
        for c in self.options.get("classes") or []:  # folders written before names existed hold the labels only
            value, name = (int(c["value"]), str(c["name"])) if isinstance(c, dict) else (int(c), str(c))
            out[value] = name
        return out

    @property
    def cc_metrics(self) -> list[str]:
        """Metrics with a global and a CC value per case (``m`` and ``cc_m`` in ``per_case``), in evaluation order."""
        return [m for m, c in self.columns.items() if c.cc and m in self.per_case and schema.cc(m) in self.per_case]

    @property
    def case_level_columns(self) -> list[str]:
        """Columns of case-level scores in ``per_case`` (PQ, Lesion Dice, detection), in the registry's order."""
        order = {c.name: i for i, c in enumerate(c for m in registry.metrics() for c in m.columns)}
        found = [m for m, c in self.columns.items() if not c.cc and m in self.per_case]
        return sorted(found, key=lambda m: order.get(m, len(order)))

    @property
    def errors(self) -> pd.DataFrame:
        """The error rows of ``per_case``."""
        return self.per_case[self.per_case[STATUS] == FAILED]

    def counts(self) -> dict[str, int]:
        """Cases (not case-class rows): total, evaluated, flagged, failed, empty GT, missing prediction."""
        by_case = self.per_case.groupby(CASE, sort=False)
        failed = by_case[STATUS].apply(lambda s: (s == FAILED).any())
        flagged = by_case[STATUS].apply(lambda s: (s == FLAGGED).any()) & ~failed
        flags = by_case[FLAGS].apply(lambda s: schema.join_flags(s.fillna("")))
        return {
            "cases": int(len(failed)),
            "evaluated": int((~failed).sum()),
            "flagged": int(flagged.sum()),
            "failed": int(failed.sum()),
            "empty_gt": int(flags.str.contains(EMPTY_GT).sum()),
            "missing_prediction": int(flags.str.contains(MISSING_PREDICTION).sum()),
        }

    def detection_curves(
        self, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
    ) -> dict[int, DetectionCurves]:
        """The lesion-level detection curves (AP, AUROC, FROC, CPM) of each class, from ``per_case`` and
        ``per_candidate`` (:func:`ccmetrics.metrics.detection_curves.detection_curves_from_tables`); empty without
        probability maps. Failed cases are no cases of the curves (:attr:`errors` lists them); the intervals use
        the summary's case-level bootstrap (same ``ci_level``, formerly ``confidence``, ``n_resamples``, ``seed``).
        """
        ci_level = former_ci_level(ci_level, former, "DatasetResult.detection_curves")
        if self.per_candidate is None:
            return {}
        out = {}
        evaluated = self.per_case[self.per_case[STATUS] != FAILED]
        for c, rows in evaluated.groupby(CLASS, sort=True):
            candidates = self.per_candidate[self.per_candidate[CLASS] == c]
            out[int(c)] = detection_curves_from_tables(
                rows, candidates, n_resamples=n_resamples, confidence_level=ci_level, seed=seed
            )
        return out

    def calibration(
        self, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
    ) -> dict[int, dict[str, Any]]:
        """Per class: the mean voxel-level Brier score and ECE of the maps, with their bootstrap intervals, and the
        lesion-level reliability table of the candidates' confidences; empty without probability maps
        (:func:`ccmetrics.analysis.summaries.calibration_summary`; ``ci_level`` formerly ``confidence``)."""
        from ..analysis.summaries import calibration_summary

        ci_level = former_ci_level(ci_level, former, "DatasetResult.calibration")
        return calibration_summary(self, ci_level=ci_level, n_resamples=n_resamples, seed=seed)

    def quantification(
        self, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any
    ) -> pd.DataFrame:
        """The agreement of the model's PET measurements with the reference's, per class, level (``patient``,
        ``lesion``) and measure: bias, limits of agreement, ICC(A,1), Lin's CCC with bootstrap intervals over cases,
        and the relative error (:func:`ccmetrics.analysis.quantification.quantification_table`); empty without the
        ``pet`` metric. ``summary.json`` keeps it as ``quantification``."""
        from ..analysis.summaries import quantification_summary

        ci_level = former_ci_level(ci_level, former, "DatasetResult.quantification")
        return quantification_summary(self, ci_level=ci_level, n_resamples=n_resamples, seed=seed)

    def threshold_summary(self) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
        """The means per class and threshold of the ``thresholds`` table over the cases with GT lesions, and the best
        threshold by each global and CC score (:func:`ccmetrics.metrics.thresholds.threshold_summary`)."""
        if self.thresholds is None:
            raise ValueError("no thresholds were swept: evaluate with thresholds= (--thresholds) first")
        swept = [m for m in self.options.get("metrics", []) if m in self.thresholds.columns]
        return threshold_summary(self.thresholds, swept)

    def summary(self, *, ci_level: float = 0.95, n_resamples: int = 2000, seed: int = 0, **former: Any) -> pd.DataFrame:
        """Mean, median and bootstrap confidence interval of every score, per class: ``standard``, ``cc_patient``,
        ``cc_pooled`` and ``case`` aggregations of the evaluated cases with GT lesions
        (:func:`ccmetrics.analysis.summaries.summary`; ``ci_level`` formerly ``confidence``).

        Returns
        -------
        pandas.DataFrame
            Index (class, metric, aggregation); columns ``n``, ``mean``,
            ``median``, ``ci_low``, ``ci_high``.
        """
        from ..analysis.summaries import summary

        ci_level = former_ci_level(ci_level, former, "DatasetResult.summary")
        return summary(self, ci_level=ci_level, n_resamples=n_resamples, seed=seed)

    def subset(self, cases: Iterable[str]) -> DatasetResult:
        """The result restricted to some cases (their rows in every table; options and columns kept)."""
        keep = {str(c) for c in cases}

        def rows(frame: pd.DataFrame | None) -> pd.DataFrame | None:
            if frame is None or not len(frame):
                return frame
            return frame[frame[CASE].astype(str).isin(keep)].reset_index(drop=True)

        per_component, per_case = rows(self.per_component), rows(self.per_case)
        assert per_component is not None and per_case is not None
        return DatasetResult(
            per_component,
            per_case,
            options=self.options,
            columns=self.columns,
            per_prediction=rows(self.per_prediction),
            per_candidate=rows(self.per_candidate),
            thresholds=rows(self.thresholds),
        )

    def group_summary(
        self,
        metadata: Any,
        group_by: str | Sequence[str],
        *,
        ci_level: float = 0.95,
        n_resamples: int = 2000,
        seed: int = 0,
        **former: Any,
    ) -> pd.DataFrame:
        """:meth:`summary` of each subgroup of cases (by scanner, centre, sex, ...) from a metadata table
        (:func:`ccmetrics.analysis.summaries.group_summary`, which says more; ``ci_level`` formerly ``confidence``)."""
        from ..analysis.summaries import group_summary

        ci_level = former_ci_level(ci_level, former, "DatasetResult.group_summary")
        return group_summary(self, metadata, group_by, ci_level=ci_level, n_resamples=n_resamples, seed=seed)

    def empty_gt_summary(self) -> pd.DataFrame:
        """Per class: cases with an empty GT, how many have a false positive, and their false-positive volume
        (:func:`ccmetrics.analysis.summaries.empty_gt_summary`)."""
        from ..analysis.summaries import empty_gt_summary

        return empty_gt_summary(self)

    def size_table(self, edges: Sequence[float] | None = None) -> pd.DataFrame:
        """Lesions, detection rate, CC-Dice and false positives per class and lesion-size bin.

        ``edges``: inner bin edges in ml (voxels without a spacing); default 0.1, 1, 10 ml
        (:func:`ccmetrics.analysis.summaries.size_summary`). Lesions of evaluated cases only.
        """
        from ..analysis.summaries import size_summary

        return size_summary(self, edges)

    def suv_table(self, edges: Sequence[float] | None = None) -> pd.DataFrame:
        """Lesions, detection rate, CC-Dice and false positives per class and SUVmax bin; empty without the ``pet``
        metric. ``edges``: inner SUVmax edges; default 2.5, 4, 10 (:func:`ccmetrics.analysis.summaries.suv_summary`).
        Lesions of evaluated cases only; a false positive in the bin of its own SUVmax."""
        from ..analysis.summaries import suv_summary

        return suv_summary(self, edges)

    def write(
        self,
        out_dir: _PathLike,
        *,
        plots: bool = True,
        summary: pd.DataFrame | None = None,
        size_bins: Sequence[float] | None = None,
        suv_bins: Sequence[float] | None = None,
        groups: tuple[list[str], pd.DataFrame, dict[str, tuple[str, ...]]] | None = None,
        curves: dict[int, DetectionCurves] | None = None,
        calibration: dict[int, dict[str, Any]] | None = None,
        quantification: pd.DataFrame | None = None,
        overwrite: bool = False,
        **summary_options: Any,
    ) -> dict[str, Any]:
        """Write ``per_component.csv``, ``per_case.csv``, ``summary.json`` and ``plots/`` into ``out_dir``
        (and ``per_prediction.csv`` with the ``detection`` metric).

        Parameters
        ----------
        out_dir : path
            The folder (created if needed).
        plots : bool
            Write the plots too.
        summary : pandas.DataFrame, optional
            The :meth:`summary` frame when computed already (``ccmetrics evaluate`` prints it too);
            by default computed here, with ``summary_options``.
        size_bins : sequence of float, optional
            Inner edges (ml) of the lesion-size bins of ``summary.json``'s ``by_size`` and of the
            detection-by-size plot (:meth:`size_table`); default 0.1, 1, 10 ml.
        suv_bins : sequence of float, optional
            Inner SUVmax edges of ``summary.json``'s ``by_suv`` (with the ``pet`` metric; :meth:`suv_table`) and of the
            detection-by-SUVmax plot; default 2.5, 4, 10.
        groups : tuple, optional
            ``(group_by columns, group_summary frame, case -> group)``: kept in ``summary.json``'s
            ``groups`` and drawn as ``plots/by_group_cc_<m>.png`` (``ccmetrics evaluate --metadata``).
        curves, calibration : dict, optional
            The :meth:`detection_curves` and :meth:`calibration` when computed already; by default computed here
            (with probability maps), with ``summary_options``.
        quantification : pandas.DataFrame, optional
            The :meth:`quantification` when computed already; by default computed here (with the ``pet`` metric),
            with ``summary_options``.
        overwrite : bool
            Write even where ``ccmetrics report`` drew a ``report.html`` from the earlier tables (it is then removed:
            it would describe tables that are gone); by default such a folder is refused, as ``ccmetrics evaluate``
            refuses a non-empty folder without ``--overwrite``. The earlier tables and figures are replaced as ever;
            a ``report.html`` of the user's own, the records of ``cases/`` and the user's files are never removed.
        **summary_options
            The options of :meth:`summary` (``ci_level``, ``n_resamples``, ``seed``), without ``summary``.

        Returns
        -------
        dict
            The paths written, by name (``per_component``, ``per_case``, ``summary``, ``plots``, and
            ``per_prediction`` when there is that table), and ``removed``: the files of an earlier run
            in ``out_dir`` that this one does not produce (e.g. ``per_prediction.csv`` after a run
            without ``detection``, plots of other metrics, a ``report.html`` drawn from earlier tables),
            removed so that every file there belongs to these tables.

        Raises
        ------
        ValueError
            Both ``summary`` and ``summary_options`` given.
        FileExistsError
            ``out_dir`` holds a ``report.html`` drawn by ``ccmetrics report`` and ``overwrite`` is False.
        ccmetrics.campaign.records.OutputWriteError
            A file cannot be written (a full disk, no permission): the message names it.
        ccmetrics.campaign.output_folder.FolderInUse
            Another process writes into ``out_dir``.

        Notes
        -----
        The files are written as one set (:mod:`ccmetrics.results.tables`), under the output folder's lock
        (:func:`ccmetrics.campaign.output_folder.locked`): ``manifest.json`` says
        ``writing`` before the first is replaced and lists every file with its checksum once all are
        written, so :meth:`read` never takes tables of two runs side by side, whenever the writing stops.
        """
        if summary is not None and summary_options:
            raise ValueError(
                f"write takes the summary frame or the options to compute it ({', '.join(summary_options)}), "
                f"not both: pass the options to summary() instead"
            )
        from ..campaign.output_folder import locked, refuse_stale_report  # the run's (see pyproject's layers)

        if "confidence" in summary_options:  # its former name: warned here, at the caller
            summary_options["ci_level"] = former_ci_level(
                summary_options.pop("ci_level", 0.95), {"confidence": summary_options.pop("confidence")}, "write"
            )
        out = Path(out_dir)
        with locked(out):  # no other run writes here meanwhile
            if not overwrite:
                refuse_stale_report(out)
            begin_tables(out)  # until finish_tables, a reader refuses the folder
            extra = {"curves": curves, "calibration": calibration, "quantification": quantification, "suv": suv_bins}
            written = self._write_tables(out, plots, summary, size_bins, groups, extra, summary_options)
            files = [p for key, p in written.items() if key != "plots"] + written["plots"]
            written["removed"] = finish_tables(out, files)
        return written

    def _write_tables(
        self,
        out: Path,
        plots: bool,
        summary: pd.DataFrame | None,
        size_bins: Sequence[float] | None,
        groups: tuple[list[str], pd.DataFrame, dict[str, tuple[str, ...]]] | None,
        extra: dict[str, Any],
        summary_options: dict[str, Any],
    ) -> dict[str, Any]:
        paths = {t.name: out / t.file for t in (schema.PER_COMPONENT, schema.PER_CASE, schema.SUMMARY)}
        # each file replaced whole (temporary file, then rename): never a half-written table over a good one; text
        # cells a spreadsheet would run are written neutralised (_escaping), read() gives the text back
        atomic_write(paths[schema.PER_COMPONENT.name], lambda tmp: write_csv(self.per_component, tmp))
        atomic_write(paths[schema.PER_CASE.name], lambda tmp: write_csv(self.per_case, tmp))
        if self.per_prediction is not None:
            predictions = self.per_prediction
            paths[schema.PER_PREDICTION.name] = out / schema.PER_PREDICTION.file
            atomic_write(paths[schema.PER_PREDICTION.name], lambda tmp: write_csv(predictions, tmp))
        if self.per_candidate is not None:
            candidates = self.per_candidate
            paths[schema.PER_CANDIDATE.name] = out / schema.PER_CANDIDATE.file
            atomic_write(paths[schema.PER_CANDIDATE.name], lambda tmp: write_csv(candidates, tmp))
        curves = extra["curves"]
        calibration = extra["calibration"]
        if self.per_candidate is not None:
            curves = self.detection_curves(**summary_options) if curves is None else curves
            calibration = self.calibration(**summary_options) if calibration is None else calibration
        curves, calibration = curves or {}, calibration or {}
        swept = None
        if self.thresholds is not None:
            table = self.thresholds
            paths[schema.THRESHOLDS.name] = out / schema.THRESHOLDS.file
            atomic_write(paths[schema.THRESHOLDS.name], lambda tmp: write_csv(table, tmp))
            swept = self.threshold_summary()
        if summary is None:
            summary = self.summary(**summary_options)
        doc = {
            "counts": self.counts(),
            "summary": _records(summary.reset_index()),
            "empty_gt": _records(self.empty_gt_summary().reset_index()),
            "errors": _records(self.errors[[CASE, CLASS, ERROR]]),
            "ignored_files": self.unpaired_files,  # the key of summary.json keeps its name
            "options": self.options,
            "columns": {name: column.facts() for name, column in self.columns.items()},
            "run": self.run.to_dict(),
            "by_size": _records(self.size_table(size_bins).replace(math.inf, np.nan)),  # last bin: high null
        }
        quantification = extra["quantification"]
        if quantification is None:
            quantification = self.quantification(**summary_options)
        if len(quantification):  # only with the pet metric's columns
            doc["quantification"] = _records(quantification)
        by_suv = self.suv_table(extra["suv"])
        if len(by_suv):  # only with the pet metric's suv_max: lesions by their uptake
            doc["by_suv"] = _records(by_suv.replace([math.inf, -math.inf], np.nan))  # open ends: null
        if curves:
            doc["detection_curves"] = {str(c): curve.to_dict() for c, curve in curves.items()}
        if calibration:
            doc["calibration"] = {
                str(c): {
                    **{k: v for k, v in e.items() if k != "lesion_reliability"},
                    "lesion_reliability": _records(e["lesion_reliability"]),
                }
                for c, e in calibration.items()
            }
        if swept is not None:
            doc["thresholds"] = {"means": _records(swept[0].replace([math.inf, -math.inf], np.nan)), "best": swept[1]}
        if groups is not None:
            doc["groups"] = {"by": groups[0], "summary": _records(groups[1])}
        text = json.dumps(doc, indent=2, allow_nan=False)
        atomic_write(paths[schema.SUMMARY.name], lambda tmp: tmp.write_text(text))
        if schema.TP_VOXELS in self.per_case:
            from .nnunet import nnunet_summary

            columns = [schema.cc(m) for m in self.cc_metrics] + self.case_level_columns
            nnunet = json.dumps(
                nnunet_summary(self.per_case, self.options, columns), indent=2
            )  # NaN as nnU-Net writes it
            paths["nnunet_summary"] = out / "nnunet_summary.json"
            atomic_write(paths["nnunet_summary"], lambda tmp: tmp.write_text(nnunet))
        written: dict[str, Any] = {**paths, "plots": []}
        if plots:
            from ..analysis.plots import write_result_plots

            written["plots"] = write_result_plots(
                self,
                out / "plots",
                size_bins=size_bins,
                suv_bins=extra["suv"],
                curves=curves,
                calibration=calibration,
                swept=swept,
                groups=groups,
            )
        return written

    @classmethod
    def read(cls, out_dir: _PathLike) -> DatasetResult:
        """Load a result folder written by :meth:`write` (or by ``ccmetrics evaluate``), validated against the schema.

        Only a whole set of tables is read: with a ``manifest.json`` (written since records carry checksums), its state
        must be complete and every file it lists must match its checksum; a file it does not list (left by
        someone else) is not read.

        Raises
        ------
        FileNotFoundError
            The folder holds no ``per_case.csv``.
        ValueError
            A table lacks a column of :mod:`ccmetrics.schema` (the message names it), or the tables are not
            one run's whole set (being written, their writer stopped, a file changed since): the message
            says to run the evaluation again with ``--resume``.
        """
        out = Path(out_dir)
        tables = (schema.PER_CASE, schema.PER_COMPONENT, schema.PER_PREDICTION, schema.PER_CANDIDATE, schema.THRESHOLDS)
        data, form = read_tables(out, [schema.SUMMARY.file, *(t.file for t in tables)])  # one run's set, checked
        neutralised = form >= 2  # text cells written with a leading ' (manifest format 2 on); earlier: as they were
        case_file = out / schema.PER_CASE.file
        if schema.PER_CASE.file not in data:
            raise FileNotFoundError(
                f"{out} holds no {schema.PER_CASE.file}: give a folder written by `ccmetrics evaluate`"
            )
        doc = json.loads(data[schema.SUMMARY.file]) if schema.SUMMARY.file in data else {}
        options = doc.get("options", {})
        per_case = schema.PER_CASE.read(
            case_file, source=io.BytesIO(data[schema.PER_CASE.file]), neutralised=neutralised
        )
        columns = (
            {name: registry.Column.from_facts(name, facts) for name, facts in doc["columns"].items()}
            if "columns" in doc
            else _columns_of(options.get("metrics", []), per_case)
        )
        evaluated = bool((per_case[STATUS] != FAILED).any())
        schema.PER_CASE.validate(
            per_case,
            str(case_file),
            [name for m, c in columns.items() if c.cc or evaluated for name in ((m, schema.cc(m)) if c.cc else (m,))],
        )
        per_component = pd.DataFrame()
        if schema.PER_COMPONENT.file in data:
            per_component = schema.PER_COMPONENT.read(
                out / schema.PER_COMPONENT.file,
                [m for m, c in columns.items() if c.cc],
                source=io.BytesIO(data[schema.PER_COMPONENT.file]),
                neutralised=neutralised,
            )
        per_prediction = None
        if schema.PER_PREDICTION.file in data:
            source = io.BytesIO(data[schema.PER_PREDICTION.file])
            per_prediction = schema.PER_PREDICTION.read(
                out / schema.PER_PREDICTION.file, source=source, neutralised=neutralised
            )
        per_candidate = None
        if schema.PER_CANDIDATE.file in data:
            source = io.BytesIO(data[schema.PER_CANDIDATE.file])
            per_candidate = schema.PER_CANDIDATE.read(
                out / schema.PER_CANDIDATE.file, source=source, neutralised=neutralised
            )
        thresholds = None
        if schema.THRESHOLDS.file in data:
            source = io.BytesIO(data[schema.THRESHOLDS.file])
            thresholds = schema.THRESHOLDS.read(out / schema.THRESHOLDS.file, source=source, neutralised=neutralised)
        return cls(
            per_component,
            per_case,
            options=options,
            columns=columns,
            saved=doc,
            per_prediction=per_prediction,
            per_candidate=per_candidate,
            thresholds=thresholds,
        )


def _takes_former_keywords(init: Any) -> Any:
    """``DatasetResult(ignored_files=...)``, the former name of ``unpaired_files=``: accepted, with a warning."""

    @functools.wraps(init)
    def __init__(self: DatasetResult, *args: Any, **kwargs: Any) -> None:
        if "ignored_files" in kwargs:
            if "unpaired_files" in kwargs:
                raise TypeError("DatasetResult() got ignored_files= and unpaired_files=: give unpaired_files= only")
            warnings.warn(
                "DatasetResult(ignored_files=...) is deprecated: use DatasetResult(unpaired_files=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            kwargs["unpaired_files"] = kwargs.pop("ignored_files")
        init(self, *args, **kwargs)

    return __init__


DatasetResult.__init__ = _takes_former_keywords(DatasetResult.__init__)  # type: ignore[method-assign]


def _columns_of(names: Sequence[str], per_case: pd.DataFrame) -> dict[str, registry.Column]:
    """The registry's facts of the columns of these metrics; a name this process has not registered is taken
    for a per-region metric when its CC column exists, with default facts."""
    out: dict[str, registry.Column] = {}
    for name in names:
        try:
            out.update(registry.columns_of([name]))
        except ValueError:
            out[name] = registry.Column(name, name, cc=schema.cc(name) in per_case)
    return out


def _records(frame: pd.DataFrame) -> list[dict[Any, Any]]:
    out = []
    for rec in frame.to_dict(orient="records"):
        rec = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in rec.items()}
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()})
    return out
