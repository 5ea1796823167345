"""The metric registry: one record per metric, the one home of every fact about metrics.

Every module that needs to know something about a metric asks here: which metrics exist, which
are distances (a missed lesion's value counts as the worst distance), which direction is better,
their display names and units, the function that computes each and the table columns it produces.
:func:`ccmetrics.evaluate`, the data-set tables, :mod:`ccmetrics.stats`, :mod:`ccmetrics.plots`,
the report, the nuclei metrics, the simulations and the command line all read it, so adding a
metric is one :func:`register_metric` call.

A metric is computed by one of four engines, named in its record:

``counts``
    From voxel counts of each region (Dice, IoU): ``compute(intersection, pred_volume, gt_volume)``
    on arrays with one entry per region, vectorised over all regions at once.
``surface``
    From the two directed edge-distance lists of every region (NSD, HD, HD95, ASSD):
    ``compute(groups, tolerance)`` with a :class:`ccmetrics.surface.GroupedDistances`; the edge voxels
    and distances are found once per case and shared by every surface metric.
``region``
    A function of the two masks of one region, ``compute(pred, gt, spacing) -> float`` on the region's
    crop (bounding box of both masks in the region, which changes no value of a metric that only
    sees the masks); the whole image for the global value. User metrics and MONAI metric objects
    run here.
``case``
    A case-level comparison with no CC version (Panoptic Quality, BraTS Lesion Dice, detection):
    ``compute(inputs)`` with the case's :class:`CaseInputs` returns a result object, and each of the
    record's :class:`Column` s reads one of its attributes.

The first three give one value per GT component (its Voronoi region) and one for the whole image:
their column ``m`` in ``per_component``, ``m`` (global) and ``cc_m`` (CC mean) in ``per_case``.

Examples
--------
A metric of one's own, computed inside every Voronoi region and averaged like the others:

>>> import numpy as np
>>> from ccmetrics import evaluate, register_metric
>>> def volume_similarity(pred, gt, spacing):
...     total = pred.sum() + gt.sum()
...     return 1.0 - abs(float(pred.sum()) - float(gt.sum())) / total if total else 1.0
>>> record = register_metric("volume_similarity", volume_similarity, display="Volume similarity")
>>> gt = np.zeros((12, 12), bool); gt[1:5, 1:5] = True; gt[8:10, 8:10] = True
>>> pred = gt.copy(); pred[1, 1:5] = False
>>> evaluate(pred, gt, ["dice", "volume_similarity"]).per_component.round(3)  # doctest: +NORMALIZE_WHITESPACE
           volume  detected   dice  volume_similarity
component
1              16      True  0.857              0.857
2               4      True  1.000              1.000
>>> get("volume_similarity").higher_is_better, display_name("cc_volume_similarity")
(True, 'CC-Volume similarity')
>>> unregister("volume_similarity")
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import schema
from .components import ComponentCache, Sites
from .overlap import OVERLAP_FORMULAS
from .surface import SURFACE_REDUCTIONS

__all__ = ["CaseInputs", "Column", "ENGINES", "KINDS", "Metric", "column", "columns_of", "display_name", "get",
           "higher_is_better", "is_distance", "load_plugin", "markdown_table", "metric_for_object", "metrics", "names",
           "register", "register_metric", "resolve", "unit_label", "unregister", "worst_value"]

#: how a metric is computed (see the module docstring)
ENGINES = ("counts", "surface", "region", "case")
#: what a value means: ``overlap`` a score in [0, 1], 1 best; ``distance`` >= 0, lower is better, a missing
#: value counts as the worst distance; ``count`` and ``volume`` of errors (lower is better) or of findings;
#: ``rate`` a share in [0, 1]; ``case`` the record of a case-level metric (its columns carry the kinds)
KINDS = ("overlap", "distance", "count", "volume", "rate", "case")
#: units: ``""`` none; ``"length"`` mm with a spacing, voxels without; ``"volume"`` ml with a spacing, voxels without
UNITS = ("", "length", "volume")
_MONAI_DISTANCE_CLASSES = ("HausdorffDistanceMetric", "SurfaceDistanceMetric")


@dataclass(frozen=True)
class Column:
    """The facts of one table column (a score).

    Attributes
    ----------
    name : str
        The column name in the tables (``cc_<name>`` for a CC mean).
    display : str
        How plots and the report name it.
    kind : str
        One of :data:`KINDS` but ``"case"``.
    higher_is_better : bool
    best : float or None
        The best value (both masks empty), None where there is none.
    unit : str
        One of :data:`UNITS`.
    source : str
        For a case-level metric: the attribute of its result object that holds the value.
    description : str
    cc : bool
        The metric has a value per component, so the tables have ``cc_<name>`` beside ``<name>``.
    """

    name: str
    display: str
    kind: str = "overlap"
    higher_is_better: bool = True
    best: Optional[float] = None
    unit: str = ""
    source: str = ""
    description: str = ""
    cc: bool = False

    @property
    def is_distance(self) -> bool:
        return self.kind == "distance"

    def facts(self) -> Dict[str, Any]:
        """The column's facts as plain data (what a result folder's ``summary.json`` keeps, see :meth:`from_facts`)."""
        return {"display": self.display, "kind": self.kind, "higher_is_better": self.higher_is_better,
                "best": self.best, "unit": self.unit, "cc": self.cc}

    @classmethod
    def from_facts(cls, name: str, facts: Mapping[str, Any]) -> "Column":
        """The column described by :meth:`facts` (unknown keys are ignored, missing ones take the defaults).

        >>> Column.from_facts("hd99", column("hd95").facts()).is_distance
        True
        """
        known = {k: facts[k] for k in ("display", "kind", "higher_is_better", "best", "unit", "cc") if k in facts}
        return cls(name, **{"display": name, **known})


@dataclass(frozen=True)
class Metric:
    """One metric: its facts, the function that computes it and the columns it produces.

    Attributes
    ----------
    name : str
        What ``evaluate(metrics=[...])``, ``--metrics`` and the tables call it (lower case).
    display : str
    kind : str
        ``"overlap"`` or ``"distance"`` for the per-region engines, ``"case"`` for case-level metrics.
    engine : str
        One of :data:`ENGINES`.
    compute : callable
        The function the engine calls (signature per engine: see the module docstring).
    higher_is_better : bool
    best : float or None
        Value when both masks are empty (per-region metrics).
    unit : str
    columns : tuple of Column
        The columns it produces: itself for a per-region metric, one per score for a case-level one.
    description : str
        One line for ``--help``, the README and the docs.
    builtin : bool
        Part of ccmetrics (cannot be replaced or removed).
    """

    name: str
    display: str
    kind: str
    engine: str
    compute: Callable[..., Any]
    higher_is_better: bool = True
    best: Optional[float] = None
    unit: str = ""
    columns: Tuple[Column, ...] = ()
    description: str = ""
    builtin: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {self.unit!r}")
        if (self.engine == "case") != (self.kind == "case"):
            raise ValueError(f"metric {self.name!r}: case-level metrics (engine 'case') have kind 'case', "
                             f"and only they")
        if not self.columns:
            if self.engine == "case":
                raise ValueError(f"case-level metric {self.name!r} needs its columns")
            object.__setattr__(self, "columns", (Column(self.name, self.display, self.kind, self.higher_is_better,
                                                        self.best, self.unit, description=self.description,
                                                        cc=True),))

    @property
    def per_region(self) -> bool:
        """True when it has a value per GT component and a CC version (every engine but ``case``)."""
        return self.engine != "case"

    @property
    def is_distance(self) -> bool:
        return self.kind == "distance"

    @property
    def column_names(self) -> Tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class CaseInputs:
    """What a case-level metric's ``compute`` gets: the case's validated masks with their shared labelling.

    Attributes
    ----------
    pred, gt : ComponentCache
        The boolean prediction and GT masks, with their connected components computed once per
        connectivity and shared by every case-level metric of the case.
    gt_sites : Sites
        The Voronoi sites (GT components, or the instances with ``sites="labels"``).
    sites : str
        ``"components"`` or ``"labels"``.
    connectivity : int or None
        The evaluation's component connectivity (None: the full one).
    spacing : tuple of float or None
    """

    pred: ComponentCache
    gt: ComponentCache
    gt_sites: Sites
    sites: str
    connectivity: Optional[int]
    spacing: Optional[Tuple[float, ...]]


_REGISTRY: Dict[str, Metric] = {}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def register(metric: Metric, *, replace: bool = False) -> Metric:
    """Add a :class:`Metric` record; its name and its columns' names must be new (or ``replace=True``).

    Built-in metrics can be neither replaced nor shadowed.
    """
    if not isinstance(metric, Metric):
        raise TypeError(f"register takes a Metric record, got {type(metric).__name__}; use register_metric for a "
                        f"function or a MONAI metric object")
    for name in (metric.name,) + metric.column_names:
        if not _NAME.match(name) or name.startswith(schema.CC_PREFIX):
            raise ValueError(f"metric and column names are lower-case letters, digits and '_', starting with a "
                             f"letter and not with 'cc_' (the CC columns' prefix), got {name!r}")
    taken = {c: m for m in _REGISTRY.values() for c in (m.name,) + m.column_names if m.name != metric.name}
    for name in (metric.name,) + metric.column_names:
        if name in taken:
            raise ValueError(f"{name!r} is already a column of the metric {taken[name].name!r}; choose another name")
    old = _REGISTRY.get(metric.name)
    if old is not None and (old.builtin or not replace):
        what = "a built-in metric" if old.builtin else "registered already (pass replace=True to replace it)"
        raise ValueError(f"metric {metric.name!r} is {what}")
    _REGISTRY[metric.name] = metric
    return metric


def register_metric(
    name: str,
    compute: Any,
    *,
    kind: str = "overlap",
    display: Optional[str] = None,
    higher_is_better: Optional[bool] = None,
    best: Optional[float] = None,
    unit: Optional[str] = None,
    description: str = "",
    replace: bool = False,
) -> Metric:
    """Register a metric computed inside every Voronoi region; it then appears in every table, plot and report.

    Parameters
    ----------
    name : str
        Its name in ``metrics=[...]``, ``--metrics`` and the tables (lower case, no ``cc_`` prefix).
    compute : callable or MONAI metric object
        ``compute(pred, gt, spacing) -> float`` on boolean numpy masks of one region's crop (and of
        the whole image for the global value), ``spacing`` a tuple of mm or None; or a MONAI
        ``CumulativeIterationMetric`` object, run on two-channel one-hot crops (spacing passed when
        its ``__call__`` takes one). A function must be importable by worker processes
        (defined at the top level of a module) to be used with ``evaluate_dataset(workers=...)``.
    kind : {"overlap", "distance"}
        ``"overlap"``: a score, 1 best and 0 worst (an empty-GT case with a prediction scores 0);
        ``"distance"``: lower is better, 0 best; a non-finite value (nothing predicted in a region)
        counts as the case's worst distance in every mean.
    display : str, optional
        Name on plots and the report (default: ``name``).
    higher_is_better, best, unit
        Default from ``kind``: True, 1.0, ``""`` for overlap; False, 0.0, ``"length"`` for distance.
    description : str
        One line for listings.
    replace : bool
        Replace a metric registered earlier under that name (never a built-in one).

    Returns
    -------
    Metric
        The record (also kept in the registry).

    Examples
    --------
    >>> import numpy as np
    >>> from monai.metrics import HausdorffDistanceMetric
    >>> m = register_metric("hd99", HausdorffDistanceMetric(percentile=99), kind="distance", display="HD99")
    >>> m.engine, m.is_distance, m.unit
    ('region', True, 'length')
    >>> unregister("hd99")
    """
    if kind not in ("overlap", "distance"):
        raise ValueError(f"kind must be 'overlap' (a score, 1 best) or 'distance' (lower is better, 0 best), "
                         f"got {kind!r}")
    distance = kind == "distance"
    if isinstance(compute, type):
        raise TypeError(f"compute takes a function or a MONAI metric object, got the class {compute.__name__}: pass "
                        f"an instance such as {compute.__name__}() with its options")
    if _is_monai_metric(compute):
        compute = MonaiRegionMetric(compute)
    elif not callable(compute):
        raise TypeError(f"compute must be a function compute(pred, gt, spacing) -> float or a MONAI metric object, "
                        f"got {type(compute).__name__}")
    record = Metric(name, display or name, kind, "region", compute,
                    higher_is_better=(not distance) if higher_is_better is None else bool(higher_is_better),
                    best=(0.0 if distance else 1.0) if best is None else float(best),
                    unit=("length" if distance else "") if unit is None else unit, description=description)
    return register(record, replace=replace)


def unregister(name: str) -> None:
    """Remove a metric registered with :func:`register_metric` (built-in ones stay)."""
    metric = get(name)
    if metric.builtin:
        raise ValueError(f"{name!r} is a built-in metric and cannot be removed")
    del _REGISTRY[metric.name]


def get(name: str) -> Metric:
    """The record of a metric by name (case-insensitive); an unknown name is a ``ValueError`` listing the known ones."""
    key = name.lower() if isinstance(name, str) else name
    metric = _REGISTRY.get(key)
    if metric is None:
        raise ValueError(f"unknown metric {name!r}; the metrics are {', '.join(names())}, or pass a MONAI metric "
                         f"object (register a metric of your own with ccmetrics.register_metric)")
    return metric


def metrics(engine: Union[str, Sequence[str], None] = None, *, per_region: Optional[bool] = None) -> List[Metric]:
    """The registered metrics in registration order (built-in ones first), optionally of some engines only."""
    engines = (engine,) if isinstance(engine, str) else engine
    return [m for m in _REGISTRY.values()
            if (engines is None or m.engine in engines) and (per_region is None or m.per_region == per_region)]


def names(engine: Union[str, Sequence[str], None] = None, *, per_region: Optional[bool] = None) -> Tuple[str, ...]:
    """Names of :func:`metrics`.

    >>> names(per_region=True)[:6], names(per_region=False)
    (('dice', 'iou', 'nsd', 'hd', 'hd95', 'assd'), ('pq', 'lesion_dice', 'detection'))
    """
    return tuple(m.name for m in metrics(engine, per_region=per_region))


def _known_columns() -> Dict[str, Column]:
    return {c.name: c for m in _REGISTRY.values() for c in m.columns}


def column(name: str, extra: Optional[Mapping[str, Column]] = None) -> Optional[Column]:
    """The facts of a table column (``cc_`` prefix stripped): from ``extra`` (a result folder's), else the registry.

    None for a column no metric produces (``case``, ``volume``, ...).

    >>> column("cc_hd95").is_distance, column("fp_volume").higher_is_better, column("volume") is None
    (True, False, True)
    """
    base = schema.base(name)
    if extra and base in extra:
        return extra[base]
    return _known_columns().get(base)


def columns_of(metric_names: Iterable[str]) -> Dict[str, Column]:
    """The columns the given metrics produce, by name (what a result folder records about its tables)."""
    return {c.name: c for name in metric_names for c in get(name).columns}


def is_distance(metric: Any, extra: Optional[Mapping[str, Column]] = None) -> bool:
    """True for a distance: a name or column (``cc_`` prefix allowed), a record, or a MONAI distance object.

    >>> is_distance("hd95"), is_distance("cc_assd"), is_distance("dice"), is_distance("lesion_hd95")
    (True, True, False, True)
    """
    if isinstance(metric, (Metric, Column)):
        return metric.is_distance
    if isinstance(metric, str):
        found = column(metric, extra)
        return found is not None and found.is_distance
    if isinstance(metric, MonaiRegionMetric):
        metric = metric.metric
    return any(cls.__name__ in _MONAI_DISTANCE_CLASSES for cls in type(metric).__mro__)


def higher_is_better(name: str, extra: Optional[Mapping[str, Column]] = None, default: bool = True) -> bool:
    """The direction of a column (``cc_`` prefix allowed); ``default`` for a column no metric produces.

    >>> higher_is_better("cc_dice"), higher_is_better("hd95"), higher_is_better("fn_volume")
    (True, False, False)
    """
    found = column(name, extra)
    return default if found is None else found.higher_is_better


def display_name(name: str, extra: Optional[Mapping[str, Column]] = None) -> str:
    """How a column is named on plots and pages: ``CC-`` before a CC column's display name; unknown names as they are.

    >>> display_name("hd95"), display_name("cc_dice"), display_name("custom"), display_name("lesion_dice")
    ('HD95', 'CC-Dice', 'custom', 'Lesion Dice')
    """
    if schema.base(name) != name:
        return "CC-" + display_name(schema.base(name), extra)
    found = column(name, extra)
    return name if found is None else found.display


def unit_label(name: str, spacing: bool = True, extra: Optional[Mapping[str, Column]] = None) -> str:
    """The unit of a column's values as shown: ``"mm"``/``"voxels"`` for lengths, ``"ml"``/``"voxels"`` for volumes.

    >>> unit_label("hd95"), unit_label("hd95", spacing=False), unit_label("fp_volume"), unit_label("dice")
    ('mm', 'voxels', 'ml', '')
    """
    found = column(name, extra)
    unit = "" if found is None else found.unit
    if unit == "length":
        return "mm" if spacing else "voxels"
    if unit == "volume":
        return "ml" if spacing else "voxels"
    return ""


def worst_value(metric: Any, worst_distance: float) -> float:
    """The worst value of a per-region metric: ``worst_distance`` for a distance, 0 for an overlap score.

    What an empty-GT case with a prediction scores, and what a missed lesion's distance counts as.

    >>> worst_value("hd95", 50.0), worst_value("dice", 50.0)
    (50.0, 0.0)
    """
    return float(worst_distance) if is_distance(metric) else 0.0


def load_plugin(spec: str) -> ModuleType:
    """Import a module that registers metrics (``ccmetrics evaluate --plugin``): a module name or a ``.py`` file.

    A file is imported by its name from its folder, which is put on ``sys.path`` (worker processes
    started by ``evaluate_dataset(workers=...)`` inherit it, so they import the functions of its
    metrics too; Dask workers need the module on their own path).

    Raises
    ------
    FileNotFoundError
        A ``.py`` file that does not exist.
    ImportError
        The module cannot be imported, or a file's name is taken by another module.
    """
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"plugin file {spec} does not exist")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module = importlib.import_module(path.stem)
        if Path(getattr(module, "__file__", "") or "").resolve() != path.resolve():
            raise ImportError(f"plugin {spec}: the module name {path.stem!r} is taken by {module.__file__}; "
                              f"rename the file")
        return module
    return importlib.import_module(spec)


# ---------------------------------------------------------------- metrics given as arguments

def _is_monai_metric(obj: Any) -> bool:
    return callable(obj) and hasattr(obj, "_compute_tensor") and not isinstance(obj, type)


class MonaiRegionMetric:
    """A MONAI metric object as a ``region`` engine function: ``(pred, gt, spacing) -> float`` on two-channel crops.

    The object is copied (never touching the caller's buffer); the foreground channel's value is
    kept. torch is imported on the first call.
    """

    def __init__(self, metric: Any):
        import copy

        self.metric = copy.deepcopy(metric)
        self._spacing = None

    def __call__(self, pred: Any, gt: Any, spacing: Optional[Sequence[float]] = None) -> float:
        import torch

        def one_hot(mask):
            fg = torch.from_numpy(mask)
            return torch.stack([~fg, fg]).unsqueeze(0).float()

        if self._spacing is None:
            params = inspect.signature(self.metric._compute_tensor).parameters.values()
            self._spacing = any(p.kind is p.VAR_KEYWORD or p.name == "spacing" for p in params)
        kwargs = {"spacing": spacing} if self._spacing and spacing is not None else {}
        value = self.metric(y_pred=one_hot(pred), y=one_hot(gt), **kwargs)
        if isinstance(value, (tuple, list)):
            value = value[0]
        return float(value.reshape(value.shape[0], -1)[0, -1])

    def __repr__(self) -> str:
        return f"MonaiRegionMetric({type(self.metric).__name__})"


def metric_for_object(obj: Any, name: Optional[str] = None) -> Metric:
    """A (not registered) record for a MONAI metric object: engine ``region``, named after its class.

    Hausdorff and surface distance objects are distances (their NaN or inf counts as the worst
    distance); any other is an overlap score, whose empty-GT value is NaN (its best and worst values
    are unknown).
    """
    if isinstance(obj, type):
        raise TypeError(f"metrics takes MONAI metric objects, got the class {obj.__name__}: pass an instance "
                        f"such as {obj.__name__}() with its options")
    if not _is_monai_metric(obj):
        raise ValueError(f"metrics must be names or MONAI metric objects, got {type(obj).__name__}")
    column_name = name or type(obj).__name__
    kind = "distance" if is_distance(obj) else "overlap"
    return Metric(column_name, column_name, kind, "region", MonaiRegionMetric(obj),
                  higher_is_better=kind != "distance", best=None, unit="length" if kind == "distance" else "")


def resolve(metrics_arg: Union[str, Metric, Sequence[Any]]) -> List[Metric]:
    """The records of a ``metrics`` argument: names (case-insensitive), :class:`Metric` records, MONAI objects.

    Repeated names count once; MONAI objects get their class name as column name (``_2``, ``_3``
    for repeats). An empty list, an unknown name or another object is an error that says the fix.

    >>> [m.name for m in resolve(["Dice", "pq", "dice"])]
    ['dice', 'pq']
    """
    if isinstance(metrics_arg, (str, Metric)) or not isinstance(metrics_arg, (Sequence, Mapping)):
        metrics_arg = [metrics_arg]
    out: List[Metric] = []
    for m in metrics_arg:
        if isinstance(m, Metric):
            record = m
        elif isinstance(m, str):
            record = get(m)
        else:
            taken = {r.name for r in out}
            base = type(m).__name__
            column_name, k = base, 2
            while column_name in taken:
                column_name, k = f"{base}_{k}", k + 1
            record = metric_for_object(m, column_name)
        if record.name not in {r.name for r in out}:
            out.append(record)
    if not out:
        raise ValueError("metrics is empty")
    return out


def markdown_table() -> str:
    """The registered metrics as a Markdown table (the README's list of metrics is this table).

    >>> print(markdown_table().splitlines()[0])
    | name | what | engine | columns | better |
    """
    lines = ["| name | what | engine | columns | better |", "|---|---|---|---|---|"]
    for m in metrics():
        if m.per_region:
            cols = f"`{m.name}`, `cc_{m.name}`"
            better = "higher" if m.higher_is_better else "lower"
        else:
            cols = ", ".join(f"`{c.name}`" for c in m.columns)
            better = ", ".join(f"{c.name}: {'higher' if c.higher_is_better else 'lower'}" for c in m.columns)
        what = m.description.replace("|", "\\|")
        lines.append(f"| `{m.name}` | {what} | {m.engine} | {cols} | {better} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- built-in metrics

def _pq(inputs: CaseInputs) -> Any:
    from .panoptic import pq_from_sites

    gt = inputs.gt_sites if inputs.sites == "labels" else inputs.gt(inputs.connectivity)
    return pq_from_sites(inputs.pred(inputs.connectivity), gt)


def _lesion_dice(inputs: CaseInputs) -> Any:
    from .lesions import lesion_dice_from_components

    return lesion_dice_from_components(inputs.pred, inputs.gt, spacing=inputs.spacing)


def _detection(inputs: CaseInputs) -> Any:
    from .lesions import detection_from_components

    return detection_from_components(inputs.pred, inputs.gt, inputs.connectivity, inputs.spacing)


def _builtin() -> List[Metric]:
    overlap = [("dice", "Dice", "Dice coefficient 2|P∩G| / (|P| + |G|)"),
               ("iou", "IoU", "intersection over union |P∩G| / |P∪G|")]
    surface = [("nsd", "NSD", "overlap", "normalised surface distance (surface Dice) at the NSD tolerance"),
               ("hd", "HD", "distance", "Hausdorff distance: the larger directed maximum of the edge distances"),
               ("hd95", "HD95", "distance", "the larger of the two directed 95th percentiles of the edge distances"),
               ("assd", "ASSD", "distance", "average symmetric surface distance (mean of all edge distances)")]
    out = [Metric(name, display, "overlap", "counts", OVERLAP_FORMULAS[name], best=1.0, description=text,
                  builtin=True) for name, display, text in overlap]
    for name, display, kind, text in surface:
        reduction = SURFACE_REDUCTIONS[name]
        out.append(Metric(name, display, kind, "surface", reduction, higher_is_better=kind != "distance",
                          best=reduction.both_empty, unit="length" if kind == "distance" else "", description=text,
                          builtin=True))
    score = dict(kind="rate")
    out += [
        Metric("pq", "PQ", "case", "case", _pq, builtin=True,
               description="Panoptic Quality: components matched at IoU > 0.5 (GT instances with sites='labels')",
               columns=(Column("pq", "PQ", source="pq", **score), Column("sq", "SQ", source="sq", **score),
                        Column("rq", "RQ", source="rq", **score))),
        Metric("lesion_dice", "Lesion Dice", "case", "case", _lesion_dice, builtin=True,
               description="BraTS-2023 lesion-wise Dice and HD95 (ccmetrics.lesion_dice's defaults: glioma)",
               columns=(Column("lesion_dice", "Lesion Dice", "overlap", best=1.0, source="dice"),
                        Column("lesion_hd95", "Lesion HD95", "distance", False, 0.0, "length", source="hd95"))),
        Metric("detection", "Detection", "case", "case", _detection, builtin=True,
               description="lesion detection (any overlap) and the autoPET false positive / negative volumes",
               columns=(Column("sensitivity", "Sensitivity", source="sensitivity", **score),
                        Column("precision", "Precision", source="precision", **score),
                        Column("f1", "F1", source="f1", **score),
                        Column("fp_volume", "FP volume", "volume", False, 0.0, "volume",
                               source="false_positive_volume"),
                        Column("fn_volume", "FN volume", "volume", False, 0.0, "volume",
                               source="false_negative_volume"))),
    ]
    return out


for _metric in _builtin():
    register(_metric)
del _metric
