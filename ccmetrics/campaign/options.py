"""The options of a data-set evaluation and its unit of work.

The options come as frozen objects that the command line, Python and Dask build the same way, each a keyword
argument of :func:`~ccmetrics.campaign.dataset.evaluate_dataset`:

* :class:`EvalOptions` (``options=``): what changes values (metrics, classes, spacing, tolerances, the detection
  rule, ...). Its :meth:`~EvalOptions.key` (the options that change values) is part of each case's record, so that
  ``resume`` evaluates a case again when one of them changed; :meth:`~EvalOptions.checked` is what the evaluation
  makes of it, once, before the cases run (:meth:`EvalOptions.build` checks keywords directly);
* :class:`~ccmetrics.campaign.probabilities.ProbabilityOptions` (``maps=``): how probability maps are used;
* :class:`RunOptions` (``run=``): how the run goes (workers, Dask, the output folder, resume, limits), which
  changes no value;
* :class:`PairingOptions` (``pairing=``): how the files of two folders are paired into cases.

:class:`CaseTask` is one case to evaluate: its id, its GT and prediction (paths, arrays or Images), its probability
map, or the error already known to break it (:mod:`ccmetrics.campaign.pairing` makes the tasks);
:class:`CaseOutput` is what one case gives back (its rows and tables), from a worker to the run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from ..engine.config import EngineConfig
from ..engine.config import current as current_engine
from ..formats.io import Image
from ..metrics import registry
from ..metrics.classes import ClassSpec, parse_classes
from ..metrics.detection_rules import DetectionRule
from ._renamed import former_fields
from .probabilities import ProbabilityOptions

__all__ = ["CaseOutput", "CaseTask", "EvalOptions", "PairingOptions", "RunOptions"]

_PathLike = Union[str, os.PathLike]
#: the spellings of voxel units that ``spacing`` accepts, all read as ``"voxel"``
_VOXEL_SPACINGS = ("voxel", "voxels", None)


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
    #: the case's PET scan (a path, an array or an Image), with ``images`` (:mod:`ccmetrics.campaign.scans`)
    image: Any = None

    def file_names(self) -> tuple[str, str]:
        return _describe(self.gt), _describe(self.pred)


@dataclass
class CaseOutput:
    """What one case gives back, from :func:`~ccmetrics.campaign.case.evaluate_task` (in a worker) to the run
    (:func:`~ccmetrics.campaign.scheduler.run_cases`, the record, the assembly of the tables).

    Read as a mapping of its fields too (``output["rows"]``, ``output.get("candidates")``, ``dict(output)``), as the
    dict it was before.

    Attributes
    ----------
    rows : list of dict
        The per-case rows, one per class.
    components, predictions, candidates, thresholds : table or None
        The case's per-component, per-prediction (with the ``detection`` metric), per-candidate (with probability
        maps) and threshold (with ``thresholds``) tables: :class:`~ccmetrics.columns.Columns` or DataFrames as
        evaluated, or encoded as its record holds them (:func:`~ccmetrics.campaign.records.encode_output`).
    timing : dict
        The case and its seconds reading and computing.
    retry : bool
        A new attempt may succeed (over the memory limit, a worker that died): ``resume`` evaluates it again.

    Examples
    --------
    >>> out = CaseOutput([{"case": "a", "class": 1}], timing={"case": "a"})
    >>> out["rows"][0]["case"], out.get("predictions"), sorted(out)[:2]
    ('a', None, ['candidates', 'components'])
    """

    rows: list[dict[str, Any]]
    components: Any = None
    predictions: Any = None
    candidates: Any = None
    thresholds: Any = None
    timing: dict[str, Any] = field(default_factory=dict)
    retry: bool = False

    def __getitem__(self, key: str) -> Any:
        if key not in _OUTPUT_FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_OUTPUT_FIELDS)

    def __len__(self) -> int:
        return len(_OUTPUT_FIELDS)

    def __contains__(self, key: object) -> bool:
        return key in _OUTPUT_FIELDS

    def get(self, key: str, default: Any = None) -> Any:
        """The field ``key``, or ``default`` for a name that is no field (as a dict's ``get``)."""
        return getattr(self, key) if key in _OUTPUT_FIELDS else default

    def keys(self) -> tuple[str, ...]:
        """The fields' names, in order (``dict(output)`` reads them)."""
        return _OUTPUT_FIELDS

    def to_dict(self) -> dict[str, Any]:
        """Its fields as a dict, in their order (that of :func:`~ccmetrics.campaign.records.encode_output`)."""
        return {name: getattr(self, name) for name in _OUTPUT_FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseOutput:
        """From a dict of its fields (a record's ``output``; missing tables are None)."""
        if isinstance(data, CaseOutput):
            return data
        return cls(
            data["rows"],
            **{k: data.get(k) for k in ("components", "predictions", "candidates", "thresholds")},
            timing=data["timing"],
            retry=bool(data.get("retry", False)),
        )


_OUTPUT_FIELDS = ("rows", "components", "predictions", "candidates", "thresholds", "timing", "retry")


@former_fields({"max_case_bytes": "max_memory", "nnunet_counts": "nnunet_summary", "records": "metric_definitions"})
@dataclass(frozen=True)
class EvalOptions:
    """The options that change values, as one frozen object: what every case gets, in this process, in worker
    processes and on Dask; :func:`~ccmetrics.campaign.dataset.evaluate_dataset`'s ``options=``.

    Made by keywords (``EvalOptions(metrics=["dice"], classes="1,2", spacing="voxel")``): the metrics, classes,
    spacing and detection rule are read at once into their forms below; the rest is checked by
    :meth:`checked` (which :func:`~ccmetrics.campaign.dataset.evaluate_dataset` calls) or :meth:`build`.

    Attributes
    ----------
    metrics : tuple of str
        The metric names (given: names, Metric definitions or one name), per-region metrics first once checked.
    classes : tuple of ClassSpec or None
        The classes of label maps (given: anything :func:`~ccmetrics.metrics.classes.parse_classes` reads; None:
        binary masks).
    spacing : {"header", "voxel"} or numbers
        Where each case's voxel spacing comes from (``"voxels"`` and None are read as ``"voxel"``).
    nsd_tolerance, worst_distance, connectivity, detection_rule
        As in :func:`ccmetrics.evaluate` (``detection_rule`` in its text form, e.g. ``"iou:0.5"``; None: the
        default, ``overlap``, or ``iou:0.1`` with probability maps).
    tolerance_mm : float
        Largest origin difference between a case's GT and prediction.
    metric_definitions : tuple of ccmetrics.metrics.registry.Metric
        The definitions (registry entries) of metrics registered by the user (built-in ones go by name), so that
        worker processes compute them without importing the code that registered them (their ``compute`` must be
        importable there). Formerly ``records``: *record* is a case's durable file (``OUT_DIR/cases/``).
    engine : EngineConfig
        The caller's engine configuration, which worker processes apply too (a context variable does not
        cross processes; :meth:`checked` takes the one in force when none other was given).
    max_memory : float or None
        The memory limit of one case in bytes (:class:`RunOptions`'s ``max_memory``, resolved; formerly
        ``max_case_bytes``). It changes no value: it is not in :meth:`key`.
    ignore_label : int or None
        nnU-Net's ignore label of label maps.
    nnunet_summary : bool
        Count nnU-Net's TP/FP/FN/TN voxels too (formerly ``nnunet_counts``).
    reference_images : str or None
        The folder of DICOM series that places DICOM SEGs.
    segment_classes : bool
        The classes are the segments found in DICOM SEGs (checked per case).
    probabilities : ProbabilityOptions or None
        How the cases' probability maps are read, their candidates found and matched
        (:mod:`ccmetrics.campaign.probabilities`); None: no maps.
    write_maps : bool
        Write each case's outcome map (found, missed, true-positive prediction outside the GT, false positive) into
        the output folder's ``maps/`` (:mod:`ccmetrics.campaign.maps`); its file is the per-case table's
        ``outcome_map_file``. In :meth:`key` (a case's output), so that ``resume`` writes the maps of cases recorded
        without them.
    maps_dir : str or None
        Where the maps go: the output folder's ``maps/``, absolute (set by
        :func:`~ccmetrics.campaign.dataset.evaluate_dataset` from ``out_dir``; not in :meth:`key`).

    Examples
    --------
    >>> options = EvalOptions.build(["dice", "detection"], spacing="voxel")
    >>> options.metrics, options.detection_rule, options.rule()
    (('dice', 'detection'), None, 'overlap')
    >>> options.key()["metrics"]
    ['dice', 'detection']
    >>> EvalOptions(metrics="dice", classes="1,2", spacing="voxels").checked().key() == EvalOptions.build(
    ...     "dice", classes=[1, 2], spacing="voxel").key()
    True
    """

    metrics: tuple[str, ...] = registry.DEFAULT_METRICS
    classes: tuple[ClassSpec, ...] | None = None
    spacing: Any = "header"
    nsd_tolerance: float = 1.0
    worst_distance: float | None = None
    connectivity: int | None = None
    tolerance_mm: float = 1e-3
    metric_definitions: tuple[registry.Metric, ...] = ()
    engine: EngineConfig = field(default_factory=EngineConfig)
    max_memory: float | None = None
    detection_rule: str | None = None
    ignore_label: int | None = None
    nnunet_summary: bool = False
    reference_images: str | None = None
    segment_classes: bool = False
    probabilities: ProbabilityOptions | None = None
    write_maps: bool = False
    maps_dir: str | None = None

    def __post_init__(self) -> None:
        """The metrics, classes, spacing and detection rule in their forms (each step leaves its own output as it
        is: ``dataclasses.replace`` reads them again)."""
        put = object.__setattr__
        metrics = (self.metrics,) if isinstance(self.metrics, (str, registry.Metric)) else tuple(self.metrics)
        if not all(isinstance(m, str) for m in metrics):  # Metric definitions or MONAI objects: names and definitions
            resolved = registry.resolve(list(metrics))
            _refuse_unnamed(resolved)
            known = {m.name for m in self.metric_definitions}
            added = tuple(m for m in resolved if not m.builtin and m.name not in known)
            put(self, "metric_definitions", self.metric_definitions + added)
            metrics = tuple(m.name for m in resolved)
        put(self, "metrics", metrics)
        if self.classes is not None and not (
            isinstance(self.classes, tuple) and all(isinstance(c, ClassSpec) for c in self.classes)
        ):
            put(self, "classes", parse_classes(self.classes))
        if self.spacing is None or (isinstance(self.spacing, str) and self.spacing in _VOXEL_SPACINGS):
            put(self, "spacing", "voxel")
        elif isinstance(self.spacing, str) and self.spacing != "header":
            raise ValueError(f"spacing must be 'header', 'voxel' or numbers, got {self.spacing!r}")
        if self.detection_rule is not None:
            put(self, "detection_rule", str(DetectionRule.parse(self.detection_rule)))

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
        max_memory: float | None = None,
        detection_rule: Any = None,
        ignore_label: int | None = None,
        nnunet_summary: bool = False,
        reference_images: _PathLike | None = None,
        probabilities: ProbabilityOptions | None = None,
        max_case_bytes: float | None = None,
        write_maps: bool = False,
    ) -> EvalOptions:
        """The options from keywords, checked (:meth:`checked`; the messages name the options).

        The engine configuration is the one in force here. ``classes=None`` means binary masks, unless the
        cases hold DICOM SEGs: see :meth:`with_segment_classes`. With ``probabilities`` the detection rule
        defaults to ``iou:0.1`` (picai_eval's), and the task is binary. ``max_case_bytes``: the former name of
        ``max_memory`` (deprecated).
        """
        if max_case_bytes is not None:
            from ._renamed import warn_former

            warn_former("EvalOptions.build(max_case_bytes=...)", "EvalOptions.build(max_memory=...)")
            max_memory = max_case_bytes if max_memory is None else max_memory
        return cls(
            metrics=metrics,  # type: ignore[arg-type]  # read into a tuple of names by __post_init__
            classes=classes,
            spacing=spacing,
            nsd_tolerance=nsd_tolerance,
            worst_distance=worst_distance,
            connectivity=connectivity,
            tolerance_mm=tolerance_mm,
            max_memory=max_memory,
            detection_rule=detection_rule,
            ignore_label=ignore_label,
            nnunet_summary=nnunet_summary,
            reference_images=None if reference_images is None else os.fspath(reference_images),
            probabilities=probabilities,
            write_maps=write_maps,
        ).checked()

    def checked(self) -> EvalOptions:
        """The options as the cases get them, checked: the metrics per-region first (a MONAI metric object must be
        registered by name), the probability maps' channels of the classes, the default detection rule, the
        ignore label against the classes, the reference images' folder (absolute), the engine configuration in
        force here (unless one was given). Each check's output passes it again."""
        definitions = registry.resolve(self.metric_arguments())
        _refuse_unnamed(definitions)
        ordered = [m for m in definitions if m.per_region] + [m for m in definitions if not m.per_region]
        probabilities = self.probabilities
        if probabilities is not None:  # each class's channel: its label value
            probabilities = probabilities.with_classes(self.classes)
        reference = self.reference_images
        if reference is not None:
            if not os.path.isdir(reference):
                raise NotADirectoryError(f"reference images folder {os.fspath(reference)!r} does not exist")
            reference = str(os.path.abspath(reference))
        return dataclasses.replace(
            self,
            metrics=tuple(m.name for m in ordered),
            metric_definitions=tuple(m for m in ordered if not m.builtin),
            nsd_tolerance=float(self.nsd_tolerance),
            tolerance_mm=float(self.tolerance_mm),
            engine=current_engine() if self.engine == EngineConfig() else self.engine,
            detection_rule=self.detection_rule,  # None stays the default: iou:0.1 once maps are added (rule())
            ignore_label=_checked_ignore_label(self.ignore_label, self.classes),
            nnunet_summary=bool(self.nnunet_summary),
            reference_images=reference,
            probabilities=probabilities,
            write_maps=bool(self.write_maps),
        )

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> EvalOptions:
        """The options that a folder's ``summary.json`` (``options``) or a case's record (``fingerprint["options"]``)
        keeps: those that change values (:meth:`key`); older folders' missing keys take their defaults.

        Examples
        --------
        >>> options = EvalOptions.build(["dice"], classes="a=1,b=1+2", spacing=(1, 1, 2), nnunet_summary=True)
        >>> EvalOptions.from_record(options.to_summary("_0000")).key() == options.key()
        True
        """
        classes = record.get("classes")
        spacing = record.get("spacing", "header")
        maps = record.get("probabilities")
        return cls(
            metrics=tuple(record.get("metrics") or registry.DEFAULT_METRICS),
            classes=None if not classes else tuple(_class_of(c) for c in classes),
            spacing=spacing if isinstance(spacing, str) or spacing is None else tuple(spacing),
            nsd_tolerance=float(record.get("nsd_tolerance", 1.0)),
            worst_distance=record.get("worst_distance"),
            connectivity=record.get("connectivity"),
            tolerance_mm=float(record.get("tolerance_mm", 1e-3)),
            detection_rule=record.get("detection_rule"),
            ignore_label=record.get("ignore_label"),
            nnunet_summary=bool(record.get("nnunet_summary", False)),
            reference_images=record.get("reference_images"),
            probabilities=None if maps is None else ProbabilityOptions.from_record(maps),
            write_maps=bool(record.get("write_maps", False)),
        )

    def rule(self) -> str:
        """The detection rule in its text form: the one given, else the default (``overlap``; ``iou:0.1``, picai_eval's,
        with probability maps)."""
        if self.detection_rule is not None:
            return self.detection_rule
        return "iou:0.1" if self.probabilities is not None else "overlap"

    def with_segment_classes(self, tasks: Sequence[CaseTask]) -> EvalOptions:
        """Without classes, and with DICOM SEGs among the tasks' files: one class per segment number found in them,
        named by the segment's label (:func:`ccmetrics.formats.dicom.segment_classes`), checked per case; else
        itself."""
        found = _segment_classes(tasks) if self.classes is None else None
        return self if found is None else dataclasses.replace(self, classes=found, segment_classes=True)

    def ordered_metrics(self) -> list[registry.Metric]:
        """The definitions (registry entries) of the metrics, in the tables' order."""
        return registry.resolve(self.metric_arguments())

    def to_summary(self, gt_suffix: str | None = None, pred_suffix: str | None = None) -> dict[str, Any]:
        """The options as ``summary.json`` keeps them (``options``): those that change values, then how the files
        were paired; :meth:`from_record` and :meth:`PairingOptions.from_record` read them back. Formerly
        ``record()``.

        Examples
        --------
        >>> summary = EvalOptions.build(["dice"], spacing="voxel").to_summary("_0000")
        >>> summary["metrics"], summary["spacing"], summary["gt_suffix"]
        (['dice'], 'voxel', '_0000')
        """
        key = self.key()
        tolerance = key.pop("tolerance_mm")
        return {**key, "gt_suffix": gt_suffix, "pred_suffix": pred_suffix, "tolerance_mm": tolerance}

    def record(self, gt_suffix: str | None = None, pred_suffix: str | None = None) -> dict[str, Any]:
        """Former name of :meth:`to_summary` (deprecated)."""
        from ._renamed import warn_former

        warn_former("EvalOptions.record()", "EvalOptions.to_summary()")
        return self.to_summary(gt_suffix, pred_suffix)

    def metric_arguments(self) -> list[Any]:
        """The ``metrics`` argument of :func:`ccmetrics.evaluate`: names, and the definitions of the user's metrics."""
        definitions = {m.name: m for m in self.metric_definitions}
        return [definitions.get(m, m) for m in self.metrics]

    def key(self) -> dict[str, Any]:
        """The options that change values or a case's output (``nnunet_summary``: its voxel counts; ``write_maps``: its
        outcome maps), as plain data (a
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
            "detection_rule": self.rule(),
            "tolerance_mm": self.tolerance_mm,
            **({"reference_images": self.reference_images} if self.reference_images else {}),
            **({"probabilities": self.probabilities.key()} if self.probabilities else {}),
            **({"nnunet_summary": True} if self.nnunet_summary else {}),  # its counts are columns of the records
            **({"write_maps": True} if self.write_maps else {}),  # its files are written by the cases
        }


@dataclass(frozen=True)
class RunOptions:
    """How a run goes, as one frozen object (:func:`~ccmetrics.campaign.dataset.evaluate_dataset`'s ``run=``):
    none of it changes a value, so none of it is in a case's record.

    Attributes
    ----------
    workers : int
        Worker processes on this machine (1: in this process).
    dask : str or dask.distributed.Client, optional
        Run the cases on a Dask cluster: its scheduler's address (a client is made, and closed after the run) or a
        client (formerly ``client=``).
    progress : bool
        Show a progress bar (tqdm, on stderr).
    out_dir : path, optional
        The folder that records every finished case at once (``OUT_DIR/cases/``).
    resume, overwrite : bool
        Take the cases whose records still stand; remove what an earlier run wrote first.
    case_timeout : float, optional
        Seconds a case may take (worker processes; not with ``dask``).
    max_memory : int or str, optional
        Largest estimated peak memory of one case (bytes, or text such as ``"16G"``).

    Examples
    --------
    >>> RunOptions(workers=4, progress=False).workers
    4
    """

    workers: int = 1
    dask: Any = None
    progress: bool = True
    out_dir: _PathLike | None = None
    resume: bool = False
    overwrite: bool = False
    case_timeout: float | None = None
    max_memory: float | str | None = None

    def check(self) -> None:
        """Raise ``ValueError`` for options that do not go together, before anything is read."""
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"workers must be a whole number >= 1, got {self.workers!r}")
        if self.case_timeout is not None and (self.dask is not None or not self.case_timeout > 0):
            raise ValueError(
                "case_timeout (--case-timeout) takes seconds > 0 and works with local worker processes, not on a "
                f"Dask cluster (got {self.case_timeout!r}{' with a client' if self.dask is not None else ''})"
            )
        if self.out_dir is None and (self.resume or self.overwrite):
            raise ValueError("resume and overwrite need out_dir, the folder that keeps the case records")


@dataclass(frozen=True)
class PairingOptions:
    """How the files of a GT folder and a predictions folder are paired into cases
    (:func:`~ccmetrics.campaign.pairing.pair_folders`; :func:`~ccmetrics.campaign.dataset.evaluate_dataset`'s
    ``pairing=``).

    Attributes
    ----------
    gt_suffix, pred_suffix : str, optional
        Regular expressions removed from the end of file names (after the extension) to form case ids.
    dataset_json : path or DatasetJson, optional
        An nnU-Net v2 ``dataset.json``: its labels and regions become the classes, its ``ignore`` label the
        ignore label, and only files ending in its ``file_ending`` are paired; the scans' channel its
        ``channel_names`` call PET is the PET.
    pet_channel : int, optional
        The PET's channel number among each case's scans (nnU-Net's ``CASE_0001``: 1) in the folder of scans
        (``images=``, ``--images``); default: the one ``dataset.json`` names PET, else the only one.

    Examples
    --------
    >>> PairingOptions(gt_suffix="_0000").pred_suffix is None
    True
    """

    gt_suffix: str | None = None
    pred_suffix: str | None = None
    dataset_json: Any = None
    pet_channel: int | None = None

    def __post_init__(self) -> None:
        channel = self.pet_channel
        if channel is not None and (
            isinstance(channel, bool) or not isinstance(channel, (int, np.integer)) or channel < 0
        ):
            raise ValueError(f"pet_channel (--pet-channel) is a channel number >= 0 (1 for CASE_0001), got {channel!r}")

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PairingOptions:
        """The pairing a folder's ``summary.json`` (``options``) keeps (its ``dataset.json`` is not kept)."""
        return cls(
            gt_suffix=record.get("gt_suffix"),
            pred_suffix=record.get("pred_suffix"),
            pet_channel=record.get("pet_channel"),
        )


def _refuse_unnamed(records: Sequence[registry.Metric]) -> None:
    if any(isinstance(m.compute, registry.MonaiRegionMetric) and m.name not in registry.names() for m in records):
        raise ValueError(
            "evaluate_dataset takes metric names only (a MONAI metric object has no name that the "
            "tables of every worker share): register the object first, e.g. "
            "ccmetrics.register_metric('masd', SurfaceDistanceMetric(symmetric=True), kind='distance'), "
            "and pass its name"
        )


def _class_of(data: Mapping[str, Any] | int) -> ClassSpec:
    """A class from its record (:meth:`ClassSpec.to_dict`); folders written before classes had names hold the label
    value only (as :attr:`~ccmetrics.results.DatasetResult.class_names` reads them)."""
    if not isinstance(data, Mapping):
        return ClassSpec(int(data), str(int(data)), (int(data),))
    return ClassSpec(int(data["value"]), str(data["name"]), tuple(int(v) for v in data["labels"]))


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
