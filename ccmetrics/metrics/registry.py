"""The metric registry: one record per metric, the one home of every fact about metrics.

Every module that needs to know something about a metric asks here: which metrics exist, which
are distances (a missed lesion's value counts as the worst distance), which direction is better,
their display names and units, the function that computes each and the table columns it produces.
:func:`ccmetrics.evaluate`, the data-set tables, :mod:`ccmetrics.analysis.stats`, :mod:`ccmetrics.analysis.plots`,
the report, the nuclei metrics, the simulations and the command line all read it, so adding a
metric is one :func:`register_metric` call.

A metric is computed by one of four engines, named in its record:

``counts``
    From voxel counts of each region (Dice, IoU): ``compute(intersection, pred_volume, gt_volume)``
    on arrays with one entry per region, vectorised over all regions at once.
``surface``
    From the two directed edge-distance lists of every region (NSD, HD, HD95, ASSD):
    ``compute(groups, tolerance)`` with a :class:`ccmetrics.engine.surface.GroupedDistances`; the edge voxels
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

This module holds the model (:class:`Metric`, :class:`Column`, :class:`CaseInputs`) and the registry's
functions. Its neighbours hold the rest, and it re-exports their names, so every ``registry.<name>`` works:
the records of the built-in metrics (:mod:`~ccmetrics.metrics.builtin_metrics`, registered when this module
is imported), plugin modules and objects given as metrics with the MONAI adapter
(:mod:`~ccmetrics.metrics.plugins`: :func:`load_plugin`, :class:`MonaiRegionMetric`, :func:`metric_for_object`,
:func:`resolve`) and the former names of the rules (:mod:`~ccmetrics.metrics.former_names`: :func:`legacy`).

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
>>> result = evaluate(gt=gt, pred=pred, metrics=["dice", "volume_similarity"])
>>> result.per_component.round(3)  # doctest: +NORMALIZE_WHITESPACE
           volume  detected   dice  volume_similarity
component
1              16      True  0.857              0.857
2               4      True  1.000              1.000
>>> get("volume_similarity").higher_is_better, display_name("cc_volume_similarity")
(True, 'CC-Volume similarity')
>>> unregister("volume_similarity")
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import schema
from ..engine.components import ComponentCache, Sites
from .builtin_metrics import builtin_records
from .former_names import legacy
from .plugins import MonaiRegionMetric, _is_monai_metric, load_plugin, metric_for_object, resolve

__all__ = [
    "CaseInputs",
    "Column",
    "DEFAULT_METRICS",
    "ENGINES",
    "KINDS",
    "Metric",
    "MonaiRegionMetric",
    "UNITS",
    "column",
    "columns_of",
    "display_name",
    "get",
    "has_direction",
    "higher_is_better",
    "is_distance",
    "load_plugin",
    "legacy",
    "markdown_table",
    "metric_for_object",
    "metrics",
    "names",
    "register",
    "register_metric",
    "resolve",
    "table_columns",
    "unit_label",
    "unregister",
    "worst_value",
]

#: how a metric is computed (see the module docstring)
ENGINES = ("counts", "surface", "region", "case")
#: what a value means: ``overlap`` a score in [0, 1], 1 best, 0 worst; ``distance`` >= 0, lower is better, 0 best, a
#: missing value counts as the case's worst distance; ``score`` any other bounded score, with its best and worst
#: values; ``count`` and ``volume`` of errors or findings; ``rate`` a share in [0, 1]; ``measure`` a quantity
#: measured in each mask (PET uptake, TMTV), compared between them rather than better or worse; ``case`` the record of a
#: case-level metric (its columns carry the kinds)
KINDS = ("overlap", "distance", "score", "count", "volume", "rate", "measure", "case")
#: units: ``""`` none; ``"length"`` mm with a spacing, voxels without; ``"volume"`` ml with a spacing, voxels without
UNITS = ("", "length", "volume")
#: the worst value of a distance: the case's worst distance (by default the image diagonal)
WORST_DISTANCE = "worst_distance"
#: the metrics evaluated when none are named
DEFAULT_METRICS = ("dice", "nsd", "hd95")
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
    higher_is_better : bool or None
        The direction of a score; None for a ``measure`` (a quantity measured in each mask and compared, neither
        better nor worse: set so whatever is given), which stats never rank (:func:`higher_is_better` refuses it).
    best : float or None
        The best value (for a per-region metric: its value when both masks are empty), None where
        there is none.
    worst : float, "worst_distance" or None
        The worst value: what an empty-GT case with a prediction scores, and what a distance's
        missing value counts as (``"worst_distance"``: the case's worst distance); None where unknown.
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
    higher_is_better: bool | None = True
    best: float | None = None
    unit: str = ""
    source: str = ""
    description: str = ""
    cc: bool = False
    worst: float | str | None = None

    def __post_init__(self) -> None:
        if self.kind == "measure":  # compared between the masks, never ranked: no direction, whatever was given
            object.__setattr__(self, "higher_is_better", None)
        elif self.higher_is_better is None:
            raise ValueError(f"column {self.name!r}: only a measure has no direction (higher_is_better=None)")

    @property
    def is_distance(self) -> bool:
        return self.kind == "distance"

    @property
    def has_direction(self) -> bool:
        """False for a measure (compared between the masks, neither higher nor lower better), else True.

        >>> column("gt_tmtv_ml").has_direction, column("gt_tmtv_ml").higher_is_better, column("dice").has_direction
        (False, None, True)
        """
        return self.higher_is_better is not None

    def facts(self) -> dict[str, Any]:
        """The column's facts as plain data (what a result folder's ``summary.json`` keeps, see :meth:`from_facts`)."""
        return {
            "display": self.display,
            "kind": self.kind,
            "higher_is_better": self.higher_is_better,
            "best": self.best,
            "worst": self.worst,
            "unit": self.unit,
            "cc": self.cc,
        }

    @classmethod
    def from_facts(cls, name: str, facts: Mapping[str, Any]) -> Column:
        """The column described by :meth:`facts` (unknown keys are ignored, missing ones take the defaults).

        >>> Column.from_facts("hd99", column("hd95").facts()).is_distance
        True
        """
        keys = ("display", "kind", "higher_is_better", "best", "worst", "unit", "cc")
        return cls(name, **{"display": name, **{k: facts[k] for k in keys if k in facts}})


@dataclass(frozen=True)
class Metric:
    """One metric: its facts, the function that computes it and the columns it produces.

    Attributes
    ----------
    name : str
        What ``evaluate(metrics=[...])``, ``--metrics`` and the tables call it (lower case).
    display : str
    kind : str
        ``"overlap"``, ``"distance"`` or ``"score"`` for the per-region engines, ``"case"`` for
        case-level metrics.
    engine : str
        One of :data:`ENGINES`.
    compute : callable
        The function the engine calls (signature per engine: see the module docstring).
    higher_is_better : bool
    best : float or None
        Value when both masks are empty (per-region metrics).
    worst : float, "worst_distance" or None
        The worst value (per-region metrics): ``"worst_distance"`` for a distance, 0 for an overlap
        score; None where unknown (the empty-GT rule then gives NaN).
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
    higher_is_better: bool | None = True
    best: float | None = None
    unit: str = ""
    columns: tuple[Column, ...] = ()
    description: str = ""
    builtin: bool = field(default=False, compare=False)
    worst: float | str | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {self.unit!r}")
        if (self.engine == "case") != (self.kind == "case"):
            raise ValueError(
                f"metric {self.name!r}: case-level metrics (engine 'case') have kind 'case', and only they"
            )
        if self.kind == "measure":  # as for its column: no direction
            object.__setattr__(self, "higher_is_better", None)
        if self.kind == "distance" and (self.worst not in (None, WORST_DISTANCE) or self.higher_is_better):
            raise ValueError(
                f"metric {self.name!r}: a distance is lower-is-better and its worst value is the case's worst distance"
            )
        if not self.columns:
            if self.engine == "case":
                raise ValueError(f"case-level metric {self.name!r} needs its columns")
            object.__setattr__(
                self,
                "columns",
                (
                    Column(
                        self.name,
                        self.display,
                        self.kind,
                        self.higher_is_better,
                        self.best,
                        self.unit,
                        description=self.description,
                        cc=True,
                        worst=self.worst,
                    ),
                ),
            )

    @property
    def per_region(self) -> bool:
        """True when it has a value per GT component and a CC version (every engine but ``case``)."""
        return self.engine != "case"

    @property
    def is_distance(self) -> bool:
        return self.kind == "distance"

    @property
    def column_names(self) -> tuple[str, ...]:
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
    detections : LesionDetections or None
        The lesions and prediction components already judged under the evaluation's detection rule
        (:func:`ccmetrics.metrics.detection_rules.judge`), when :func:`ccmetrics.evaluate` needed them.
    nearest : EdgeNearest or None
        The whole image's edge distances with the nearest voxel of each
        (:class:`ccmetrics.engine.geometry.EdgeNearest`), when :func:`ccmetrics.evaluate` measured them.
    image : ndarray of float32 or None
        The scan on the GT's grid (``evaluate(image=...)``), for the ``pet`` metrics.
    regions : CaseRegions or None
        The prediction's voxels and the Voronoi region of each (:class:`ccmetrics.engine.geometry.CaseRegions`).
    """

    pred: ComponentCache
    gt: ComponentCache
    gt_sites: Sites
    sites: str
    connectivity: int | None
    spacing: tuple[float, ...] | None
    detections: Any = None
    nearest: Any = None
    image: Any = None
    regions: Any = None


_REGISTRY: dict[str, Metric] = {}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: names the tables use for other things: no metric or column may take them
_RESERVED = frozenset(f.name for t in (schema.PER_COMPONENT, schema.PER_CASE) for f in t.fields + t.tail)
#: prefixes of derived columns (the CC mean; the report's standard - CC difference)
_RESERVED_PREFIXES = (schema.CC_PREFIX, "delta_")


def _same_definition(a: Metric, b: Metric) -> bool:
    """Whether two records compute with the same code (a module imported again, e.g. a plugin reloaded)."""
    f, g = a.compute, b.compute
    if isinstance(f, MonaiRegionMetric) and isinstance(g, MonaiRegionMetric):
        return type(f.metric) is type(g.metric) and f.settings() == g.settings()
    key = (getattr(f, "__module__", None), getattr(f, "__qualname__", None))
    return key[1] is not None and key == (getattr(g, "__module__", None), getattr(g, "__qualname__", None))


def register(metric: Metric, *, replace: bool = False) -> Metric:
    """Add a :class:`Metric` record; its name and its columns' names must be new (or ``replace=True``).

    Built-in metrics can be neither replaced nor shadowed, and names the tables use for other
    things (``case``, ``volume``, ``status``, ...) are refused. Registering the same code again
    under the same name (a module imported twice, a plugin reloaded) replaces the record.
    """
    if not isinstance(metric, Metric):
        raise TypeError(
            f"register takes a Metric record, got {type(metric).__name__}; use register_metric for a "
            f"function or a MONAI metric object"
        )
    for name in (metric.name,) + metric.column_names:
        if not _NAME.match(name) or name.startswith(_RESERVED_PREFIXES):
            raise ValueError(
                f"metric and column names are lower-case letters, digits and '_', starting with a "
                f"letter and not with {' or '.join(map(repr, _RESERVED_PREFIXES))} (derived columns), "
                f"got {name!r}"
            )
        if name in _RESERVED:
            raise ValueError(
                f"{name!r} is a column of the tables ({', '.join(sorted(_RESERVED))}); choose another "
                f"name for the metric"
            )
    taken = {c: m for m in _REGISTRY.values() for c in (m.name,) + m.column_names if m.name != metric.name}
    for name in (metric.name,) + metric.column_names:
        if name in taken:
            raise ValueError(f"{name!r} is already a column of the metric {taken[name].name!r}; choose another name")
    old = _REGISTRY.get(metric.name)
    if old is not None and (old.builtin or not (replace or _same_definition(old, metric))):
        what = "a built-in metric" if old.builtin else "registered already (pass replace=True to replace it)"
        raise ValueError(f"metric {metric.name!r} is {what}")
    _REGISTRY[metric.name] = metric
    return metric


def register_metric(
    name: str,
    compute: Any,
    *,
    kind: str | None = None,
    display: str | None = None,
    best: float | None = None,
    worst: float | None = None,
    unit: str | None = None,
    description: str = "",
    replace: bool = False,
) -> Metric:
    """Register a metric computed inside every Voronoi region; it then appears in every table, plot and report.

    Parameters
    ----------
    name : str
        Its name in ``metrics=[...]``, ``--metrics`` and the tables (lower case; not a name the tables
        use otherwise, such as ``volume``; no ``cc_`` prefix).
    compute : callable or MONAI metric object
        ``compute(pred, gt, spacing) -> float`` on the boolean numpy masks of one region's crop (the
        bounding box of both masks in the region) and of the whole image for the global value;
        ``spacing`` a tuple of mm or None. A metric that counts background voxels (specificity,
        accuracy) would depend on the crop: compute such a metric from the masks' foreground only.
        Or a MONAI ``CumulativeIterationMetric`` object, run on two-channel one-hot crops (spacing
        passed when it takes one; its buffer is reset after every call). A function must be
        importable by worker processes (defined at the top level of a module) to be used with
        ``evaluate_dataset(workers=...)``.
    kind : {"overlap", "distance", "score"}, optional
        ``"overlap"``: a score, 1 best and 0 worst (an empty-GT case with a prediction scores 0);
        ``"distance"``: lower is better, 0 best; a non-finite value (nothing predicted in a region)
        counts as the case's worst distance in every mean; ``"score"``: any other bounded score,
        with ``best`` and ``worst`` given (the direction follows from them). Default: ``"distance"``
        for a MONAI Hausdorff or surface distance object, else ``"overlap"``.
    display : str, optional
        Name on plots and the report (default: ``name``).
    best, worst : float, optional
        The values of a perfect and of the worst prediction; for ``"score"`` only (overlap: 1 and
        0; distance: 0 and the worst distance).
    unit : {"", "length", "volume"}, optional
        Default ``"length"`` for a distance, else ``""``.
    description : str
        One line for listings.
    replace : bool
        Replace a metric registered earlier under that name (never a built-in one). Registering the
        same function (or an equal MONAI object) again replaces it without being asked.

    Returns
    -------
    Metric
        The record (also kept in the registry).

    Examples
    --------
    >>> from monai.metrics import HausdorffDistanceMetric
    >>> m = register_metric("hd99", HausdorffDistanceMetric(percentile=99), display="HD99")
    >>> m.engine, m.kind, m.higher_is_better, m.unit
    ('region', 'distance', False, 'length')
    >>> unregister("hd99")
    >>> error = register_metric("error_rate", lambda p, g, s: 0.0, kind="score", best=0.0, worst=1.0)
    >>> error.higher_is_better, worst_value(error, 50.0)
    (False, 1.0)
    >>> unregister("error_rate")
    """
    if isinstance(compute, type):
        raise TypeError(
            f"compute takes a function or a MONAI metric object, got the class {compute.__name__}: pass "
            f"an instance such as {compute.__name__}() with its options"
        )
    monai_object = _is_monai_metric(compute)
    if not monai_object and not callable(compute):
        raise TypeError(
            f"compute must be a function compute(pred, gt, spacing) -> float or a MONAI metric object, "
            f"got {type(compute).__name__}"
        )
    inferred = "distance" if monai_object and is_distance(compute) else "overlap"
    kind = inferred if kind is None else kind
    if kind not in ("overlap", "distance", "score"):
        raise ValueError(
            f"kind must be 'overlap' (a score, 1 best, 0 worst), 'distance' (lower is better, 0 best) "
            f"or 'score' (with best and worst), got {kind!r}"
        )
    if monai_object and (kind == "distance") != (inferred == "distance"):
        raise ValueError(
            f"{type(compute).__name__} is {'a' if inferred == 'distance' else 'not a'} distance; "
            f"kind={kind!r} contradicts it"
        )
    worst_value_: float | str
    if kind == "score":
        if best is None or worst is None or not (math.isfinite(best) and math.isfinite(worst)) or best == worst:
            raise ValueError(
                "kind='score' needs its best and worst values, finite and different (e.g. best=0.0, "
                "worst=1.0 for an error rate)"
            )
        best, worst_value_ = float(best), float(worst)
    elif best is not None or worst is not None:
        raise ValueError(
            f"best and worst are fixed for kind={kind!r} (overlap: 1 and 0; distance: 0 and the case's "
            f"worst distance); use kind='score' for other values"
        )
    else:
        best, worst_value_ = (0.0, WORST_DISTANCE) if kind == "distance" else (1.0, 0.0)
    higher = kind != "distance" and best > float(worst_value_)  # a distance's worst is not a number
    record = Metric(
        name,
        display or name,
        kind,
        "region",
        MonaiRegionMetric(compute) if monai_object else compute,
        higher_is_better=higher,
        best=best,
        worst=worst_value_,
        unit=("length" if kind == "distance" else "") if unit is None else unit,
        description=description,
    )
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
        raise ValueError(
            f"unknown metric {name!r}; the metrics are {', '.join(names())}, or pass a MONAI metric "
            f"object (register a metric of your own with ccmetrics.register_metric)"
        )
    return metric


def metrics(engine: str | Sequence[str] | None = None, *, per_region: bool | None = None) -> list[Metric]:
    """The registered metrics in registration order (built-in ones first), optionally of some engines only."""
    engines = (engine,) if isinstance(engine, str) else engine
    return [
        m
        for m in _REGISTRY.values()
        if (engines is None or m.engine in engines) and (per_region is None or m.per_region == per_region)
    ]


def names(engine: str | Sequence[str] | None = None, *, per_region: bool | None = None) -> tuple[str, ...]:
    """Names of :func:`metrics`.

    >>> names(per_region=True)[:6], names(per_region=False)
    (('dice', 'iou', 'nsd', 'hd', 'hd95', 'assd'), ('pq', 'lesion_dice', 'detection', 'pet'))
    """
    return tuple(m.name for m in metrics(engine, per_region=per_region))


def table_columns(table: schema.TableSchema, metrics: Sequence[str | Metric], *, optional: bool = False) -> list[str]:
    """All columns of a tidy table for these metrics (names or records), in order: the schema's fixed ones around
    the metrics' own.

    >>> table_columns(schema.PER_CASE, ["dice", "detection"])[7:]  # doctest: +NORMALIZE_WHITESPACE
    ['spacing', 'n_components', 'empty_gt', 'pred_volume', 'worst_distance', 'dice', 'cc_dice', 'sensitivity',
     'precision', 'f1', 'fp_volume', 'fn_volume', 'split_lesions', 'merged_components', 'pred_volume_ml']
    >>> table_columns(schema.PER_COMPONENT, ["dice", "detection"])[-2:]
    ['worst_distance', 'dice']
    """
    records = [m if isinstance(m, Metric) else get(m) for m in metrics]
    if table is schema.PER_COMPONENT:
        own = [m.name for m in records if m.per_region]
    else:
        own = [c for m in records for c in ((m.name, schema.cc(m.name)) if m.per_region else m.column_names)]
    return table.columns(own, optional=optional)


def _known_columns() -> dict[str, Column]:
    return {c.name: c for m in _REGISTRY.values() for c in m.columns}


def column(name: str, extra: Mapping[str, Column] | None = None) -> Column | None:
    """The facts of a table column (``cc_`` prefix stripped): from ``extra`` (a result folder's), else the registry.

    None for a column no metric produces (``case``, ``volume``, ...).

    >>> column("cc_hd95").is_distance, column("fp_volume").higher_is_better, column("volume") is None
    (True, False, True)
    """
    base = schema.base(name)
    if extra and base in extra:
        return extra[base]
    return _known_columns().get(base)


def columns_of(metric_names: Iterable[str]) -> dict[str, Column]:
    """The columns the given metrics produce, by name (what a result folder records about its tables)."""
    return {c.name: c for name in metric_names for c in get(name).columns}


def is_distance(metric: Any, extra: Mapping[str, Column] | None = None) -> bool:
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


def has_direction(name: str, extra: Mapping[str, Column] | None = None) -> bool:
    """Whether a column can be ranked: False for a measure (PET uptake, TMTV: compared between the masks, neither
    higher nor lower better), True otherwise (a column no metric produces included).

    >>> has_direction("gt_tmtv_ml"), has_direction("pred_suv_max"), has_direction("cc_dice"), has_direction("x")
    (False, False, True, True)
    """
    found = column(name, extra)
    return found is None or found.has_direction


def higher_is_better(name: str, extra: Mapping[str, Column] | None = None, default: bool = True) -> bool:
    """The direction of a column (``cc_`` prefix allowed); ``default`` for a column no metric produces.

    Raises
    ------
    ValueError
        A measure (:func:`has_direction` False): it has no direction to rank by.

    >>> higher_is_better("cc_dice"), higher_is_better("hd95"), higher_is_better("fn_volume")
    (True, False, False)
    >>> higher_is_better("gt_tlg")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'gt_tlg' (GT TLG (ml)) is a measure: ... neither higher nor lower is better, so it is not ranked; ...
    """
    found = column(name, extra)
    if found is None:
        return default
    if found.higher_is_better is None:
        raise ValueError(
            f"{name!r} ({found.display}) is a measure: a quantity measured in each mask and compared between them, "
            "neither higher nor lower is better, so it is not ranked; rank an error of it with an explicit "
            "direction instead (e.g. |pred - gt| with higher_is_better=False)"
        )
    return found.higher_is_better


def display_name(name: str, extra: Mapping[str, Column] | None = None) -> str:
    """How a column is named on plots and pages: ``CC-`` before a CC column's display name; unknown names as they are.

    >>> display_name("hd95"), display_name("cc_dice"), display_name("custom"), display_name("lesion_dice")
    ('HD95', 'CC-Dice', 'custom', 'Lesion Dice')
    """
    if schema.base(name) != name:
        return "CC-" + display_name(schema.base(name), extra)
    found = column(name, extra)
    return name if found is None else found.display


def unit_label(name: str, spacing: bool = True, extra: Mapping[str, Column] | None = None) -> str:
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
    """The worst value of a per-region metric: ``worst_distance`` for a distance, else its record's ``worst``.

    What an empty-GT case with a prediction scores, and what a missed lesion's distance counts as;
    NaN where the worst value is unknown (a MONAI object that is not a distance).

    >>> worst_value("hd95", 50.0), worst_value("dice", 50.0)
    (50.0, 0.0)
    """
    record = get(metric) if isinstance(metric, str) else metric
    if is_distance(record):
        return float(worst_distance)
    worst = getattr(record, "worst", None)
    return math.nan if worst is None else float(worst)


def markdown_table() -> str:
    """The registered metrics as a Markdown table (the documentation's list of metrics is this table).

    >>> print(markdown_table().splitlines()[0])
    | name | what | engine | columns | better |
    """
    lines = ["| name | what | engine | columns | better |", "|---|---|---|---|---|"]
    for m in metrics():
        if m.per_region:
            cols = f"`{m.name}`, `cc_{m.name}`"
            better = {True: "higher", False: "lower", None: "neither (a measure)"}[m.higher_is_better]
        else:
            cols = ", ".join(f"`{c.name}`" for c in m.columns)
            ranked = [c for c in m.columns if c.has_direction]  # a measure is compared, neither better nor worse
            better = ", ".join(f"{c.name}: {'higher' if c.higher_is_better else 'lower'}" for c in ranked) or (
                "neither (measured in both masks and compared)"
            )
        what = m.description.replace("|", "\\|")
        lines.append(f"| `{m.name}` | {what} | {m.engine} | {cols} | {better} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- the built-in metrics, registered on import

for _metric in builtin_records():
    register(_metric)
del _metric
