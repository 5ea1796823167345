"""The options of a data-set evaluation and its unit of work.

:class:`EvalOptions` is what :func:`~ccmetrics.campaign.dataset.evaluate_dataset` makes of its arguments
(:meth:`EvalOptions.build`, checked once), as one frozen object that every case gets, in this process, in
worker processes and on a Dask cluster; its :meth:`~EvalOptions.key` (the options that change values) is part
of each case's record, so that ``resume`` evaluates a case again when one of them changed. :class:`CaseTask`
is one case to evaluate: its id, its GT and prediction (paths, arrays or Images), its probability map, or the
error already known to break it (:mod:`ccmetrics.campaign.pairing` makes the tasks).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from ..engine.config import EngineConfig
from ..engine.config import current as current_engine
from ..formats.io import Image
from ..metrics import registry
from ..metrics.classes import ClassSpec, parse_classes
from ..metrics.detection_rules import DetectionRule
from .probabilities import ProbabilityOptions

__all__ = ["CaseTask", "EvalOptions"]

_PathLike = Union[str, os.PathLike]


@dataclass
class CaseTask:
    """One case to evaluate: its id, its GT and prediction (a path, an array or an
    :class:`~ccmetrics.formats.image.Image`).

    ``pred=None`` means the prediction is missing (evaluated as empty and
    flagged, unless the segmentation comes from the probability map); ``gt=None`` means there is no GT (an
    error row); ``error`` set means the case is already known to be broken (e.g. two GT files with one id).
    """

    case: str
    gt: Any = None
    pred: Any = None
    error: str = ""
    #: the case's probability map (a path, an array or an Image), with ``probabilities``
    prob: Any = None

    def file_names(self) -> tuple[str, str]:
        return _describe(self.gt), _describe(self.pred)


@dataclass(frozen=True)
class EvalOptions:
    """The options of a data-set evaluation, as one frozen object: what
    :func:`~ccmetrics.campaign.dataset.evaluate_dataset` makes of its arguments (:meth:`EvalOptions.build`), and
    what every case gets, in this process, in worker processes and on Dask.

    Attributes
    ----------
    metrics : tuple of str
        The metric names, per-region metrics first.
    classes : tuple of ClassSpec or None
        The classes of label maps (None: binary masks).
    spacing : {"header", "voxel"} or numbers
        Where each case's voxel spacing comes from.
    nsd_tolerance, worst_distance, connectivity, detection_rule
        As in :func:`ccmetrics.evaluate` (``detection_rule`` in its text form, e.g. ``"iou:0.5"``).
    tolerance_mm : float
        Largest origin difference between a case's GT and prediction.
    records : tuple of ccmetrics.metrics.registry.Metric
        The registry records of metrics registered by the user (built-in ones go by name), so that worker
        processes compute them without importing the code that registered them (their ``compute`` must be
        importable there).
    engine : EngineConfig
        The caller's engine configuration, which worker processes apply too (a context variable does not
        cross processes).
    max_case_bytes : float or None
        The memory limit of one case (``max_memory``).
    ignore_label : int or None
        nnU-Net's ignore label of label maps.
    nnunet_counts : bool
        Count nnU-Net's TP/FP/FN/TN voxels too (``nnunet_summary``).
    reference_images : str or None
        The folder of DICOM series that places DICOM SEGs.
    segment_classes : bool
        The classes are the segments found in DICOM SEGs (checked per case).
    probabilities : ProbabilityOptions or None
        How the cases' probability maps are read, their candidates found and matched
        (:mod:`ccmetrics.campaign.probabilities`); None: no maps.

    Examples
    --------
    >>> options = EvalOptions.build(["dice", "detection"], spacing="voxel")
    >>> options.metrics, options.detection_rule
    (('dice', 'detection'), 'overlap')
    >>> options.key()["metrics"]
    ['dice', 'detection']
    """

    metrics: tuple[str, ...] = registry.DEFAULT_METRICS
    classes: tuple[ClassSpec, ...] | None = None
    spacing: Any = "header"
    nsd_tolerance: float = 1.0
    worst_distance: float | None = None
    connectivity: int | None = None
    tolerance_mm: float = 1e-3
    records: tuple[registry.Metric, ...] = ()
    engine: EngineConfig = field(default_factory=EngineConfig)
    max_case_bytes: float | None = None
    detection_rule: str = "overlap"
    ignore_label: int | None = None
    nnunet_counts: bool = False
    reference_images: str | None = None
    segment_classes: bool = False
    probabilities: ProbabilityOptions | None = None

    @classmethod
    def build(
        cls,
        metrics: str | Sequence[Any] = registry.DEFAULT_METRICS,
        *,
        classes: Any = None,
        spacing: Any = "header",
        nsd_tolerance: float = 1.0,
        worst_distance: float | None = None,
        connectivity: int | None = None,
        tolerance_mm: float = 1e-3,
        max_case_bytes: float | None = None,
        detection_rule: Any = None,
        ignore_label: int | None = None,
        nnunet_summary: bool = False,
        reference_images: _PathLike | None = None,
        probabilities: ProbabilityOptions | None = None,
    ) -> EvalOptions:
        """The options from :func:`~ccmetrics.campaign.dataset.evaluate_dataset`'s arguments, checked (the messages
        name the options).

        The engine configuration is the one in force here. ``classes=None`` means binary masks, unless the
        cases hold DICOM SEGs: see :meth:`with_segment_classes`. With ``probabilities`` the detection rule
        defaults to ``iou:0.1`` (picai_eval's), and the task is binary.
        """
        records = registry.resolve(metrics)
        if any(isinstance(m.compute, registry.MonaiRegionMetric) and m.name not in registry.names() for m in records):
            raise ValueError(
                "evaluate_dataset takes metric names only (a MONAI metric object has no name that the "
                "tables of every worker share): register the object first, e.g. "
                "ccmetrics.register_metric('masd', SurfaceDistanceMetric(symmetric=True), kind='distance'), "
                "and pass its name"
            )
        if isinstance(spacing, str) and spacing not in ("header", "voxel"):
            raise ValueError(f"spacing must be 'header', 'voxel' or numbers, got {spacing!r}")
        parsed = parse_classes(classes) if classes is not None else None
        if probabilities is not None:  # each class's channel: its label value
            probabilities = probabilities.with_classes(parsed)
            detection_rule = "iou:0.1" if detection_rule is None else detection_rule
        ignore_label = _checked_ignore_label(ignore_label, parsed)
        if reference_images is not None:
            if not os.path.isdir(reference_images):
                raise NotADirectoryError(f"reference images folder {os.fspath(reference_images)!r} does not exist")
            reference_images = os.path.abspath(reference_images)
        ordered = [m for m in records if m.per_region] + [m for m in records if not m.per_region]
        return cls(
            tuple(m.name for m in ordered),
            parsed,
            spacing,
            float(nsd_tolerance),
            worst_distance,
            connectivity,
            float(tolerance_mm),
            tuple(m for m in ordered if not m.builtin),
            current_engine(),
            max_case_bytes,
            str(DetectionRule.parse(detection_rule)),
            ignore_label,
            bool(nnunet_summary),
            None if reference_images is None else str(reference_images),
            probabilities=probabilities,
        )

    def with_segment_classes(self, tasks: Sequence[CaseTask]) -> EvalOptions:
        """Without classes, and with DICOM SEGs among the tasks' files: one class per segment number found in them,
        named by the segment's label (:func:`ccmetrics.formats.dicom.segment_classes`), checked per case; else
        itself."""
        found = _segment_classes(tasks) if self.classes is None else None
        return self if found is None else dataclasses.replace(self, classes=found, segment_classes=True)

    def ordered_metrics(self) -> list[registry.Metric]:
        """The registry records of the metrics, in the tables' order."""
        return registry.resolve(self.metric_arguments())

    def record(self, gt_suffix: str | None = None, pred_suffix: str | None = None) -> dict[str, Any]:
        """The options as ``summary.json`` keeps them: those that change values, then how the files were paired."""
        key = self.key()
        tolerance = key.pop("tolerance_mm")
        return {**key, "gt_suffix": gt_suffix, "pred_suffix": pred_suffix, "tolerance_mm": tolerance}

    def metric_arguments(self) -> list[Any]:
        """The ``metrics`` argument of :func:`ccmetrics.evaluate`: names, and records of the user's metrics."""
        records = {r.name: r for r in self.records}
        return [records.get(m, m) for m in self.metrics]

    def key(self) -> dict[str, Any]:
        """The options that change values or a case's output (``nnunet_summary``: its voxel counts), as plain data (a
        case's record holds them: change one and ``resume`` evaluates the case again). The engine configuration
        changes no value and is left out; the options of the files made from the tables alone (size bins, groups,
        the bootstrap) are applied to the records' tables by each run."""
        spacing = self.spacing if isinstance(self.spacing, str) else [float(v) for v in np.atleast_1d(self.spacing)]
        return {
            "metrics": list(self.metrics),
            "classes": [c.to_dict() for c in self.classes] if self.classes else None,
            "ignore_label": self.ignore_label,
            "spacing": spacing,
            "nsd_tolerance": self.nsd_tolerance,
            "worst_distance": self.worst_distance,
            "connectivity": self.connectivity,
            "detection_rule": self.detection_rule,
            "tolerance_mm": self.tolerance_mm,
            **({"reference_images": self.reference_images} if self.reference_images else {}),
            **({"probabilities": self.probabilities.key()} if self.probabilities else {}),
            **({"nnunet_summary": True} if self.nnunet_counts else {}),  # its counts are columns of the records
        }


def _describe(item: Any) -> str:
    if item is None:
        return ""
    if isinstance(item, Image):
        return item.path or "<array>"
    if isinstance(item, (str, os.PathLike)):
        return str(item)
    return "<array>"


def _checked_ignore_label(ignore_label: Any, classes: tuple[ClassSpec, ...] | None) -> int | None:
    """The ignore label as an int, checked against the classes (it needs them and must not be one of theirs)."""
    if ignore_label is None:
        return None
    if classes is None:
        raise ValueError("ignore_label (--ignore-label) works on label maps: give the classes too (--classes)")
    if isinstance(ignore_label, bool) or not isinstance(ignore_label, (int, np.integer)) or ignore_label <= 0:
        raise ValueError(f"ignore_label must be a label value > 0, got {ignore_label!r}")
    if any(int(ignore_label) in c.labels for c in classes):
        raise ValueError(f"the ignore label {ignore_label} is also one of the classes' labels")
    return int(ignore_label)


def _segment_classes(tasks: Sequence[CaseTask]) -> tuple[ClassSpec, ...] | None:
    """One class per segment of the DICOM SEGs among the tasks' files (GT files first for the names), or None."""
    from ..formats.dicom import is_dicom_path, segment_classes

    ready = [t for t in tasks if not t.error]
    segs = [item for item in [t.gt for t in ready] + [t.pred for t in ready] if is_dicom_path(item)]
    if not segs:
        return None
    try:  # an unreadable SEG: its case says so; the others name the classes
        return segment_classes(segs, skip_unreadable=True) or None
    except (OSError, ValueError) as exc:
        raise ValueError(f"no DICOM SEG among the inputs can be read: {exc}") from exc
