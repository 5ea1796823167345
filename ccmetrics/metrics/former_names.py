"""The names the rules of the metrics had in their homes before the registry, kept one release with a warning.

``aggregation.DISTANCE_METRICS`` and ``BEST_VALUE``, ``stats.LOWER_IS_BETTER``, ``plots.OVERLAP`` and ``DISTANCE``,
``report.data.METRIC_LABELS``, ``case.CASE_METRICS`` and ``parse_metrics``: :func:`legacy` computes each from the
built-in records of :mod:`ccmetrics.metrics.registry` (which re-exports it; the modules call
``registry.legacy`` from their ``__getattr__``), so none of these lists is written down a second time.
"""

from __future__ import annotations

from typing import Any, Callable

from .._deprecation import deprecated
from .plugins import MonaiRegionMetric, resolve

__all__ = ["legacy"]


#: built-in metrics added after these names were deprecated: the former lists never held them
_NEWER_METRICS = frozenset({"pet"})


def legacy(module: str, name: str) -> Any:
    """The value of a name that a module held before the registry (kept for one release, with a warning).

    ``aggregation.DISTANCE_METRICS`` and ``BEST_VALUE``, ``stats.LOWER_IS_BETTER``, ``plots.OVERLAP`` and
    ``DISTANCE``, ``report.data.METRIC_LABELS``, ``case.CASE_METRICS`` and ``parse_metrics``, computed
    from the built-in records; modules call it from their ``__getattr__``.

    Raises
    ------
    AttributeError
        Any other name, as Python's own look-up would.
    """
    from .registry import metrics  # at call time: the registry imports this module

    builtin = [m for m in metrics(per_region=True) if m.builtin]
    former = [m for m in metrics() if m.builtin and m.name not in _NEWER_METRICS]  # the metrics these names knew
    columns = [c for m in former for c in m.columns]
    values: dict[str, dict[str, Callable[[], Any]]] = {
        "ccmetrics.metrics.aggregation": {
            "DISTANCE_METRICS": lambda: tuple(m.name for m in builtin if m.is_distance),
            "BEST_VALUE": lambda: {m.name: m.best for m in builtin},
        },
        "ccmetrics.analysis.stats": {
            "LOWER_IS_BETTER": lambda: frozenset(c.name for c in columns if c.higher_is_better is False),
        },
        "ccmetrics.analysis.plots": {
            "OVERLAP": lambda: tuple(m.name for m in builtin if not m.is_distance),
            "DISTANCE": lambda: tuple(m.name for m in builtin if m.is_distance),
        },
        "ccmetrics.report.data": {"METRIC_LABELS": lambda: {c.name: c.display for c in columns}},
        "ccmetrics.metrics.case": {
            "CASE_METRICS": lambda: {m.name: m.column_names for m in former if not m.per_region},
            "parse_metrics": lambda: _parse_metrics,
        },
    }
    advice = "the facts of the metrics live in ccmetrics.metrics.registry (records, is_distance, higher_is_better, "
    advice += "display_name, resolve)"
    return deprecated(module, name, values.get(module, {}), advice, stacklevel=4)


def _parse_metrics(metrics_arg: Any) -> tuple[list[str], list[str], dict[str, Any]]:
    """The former ``case.parse_metrics``: (per-region names, case-level names, MONAI objects by column name)."""
    from .registry import names

    records = resolve(metrics_arg)
    known = set(names())
    return (
        [m.name for m in records if m.per_region and m.name in known],
        [m.name for m in records if not m.per_region],
        {m.name: m.compute.metric for m in records if isinstance(m.compute, MonaiRegionMetric) and m.name not in known},
    )
