"""Former home of :class:`~ccmetrics.results.DatasetResult`, kept for one release: its names now live in
:mod:`ccmetrics.results.dataset` (the results layer) and :mod:`ccmetrics.analysis.summaries` (the statistics), and
are answered here with a ``DeprecationWarning`` that names the new home."""

from __future__ import annotations

import functools
from typing import Any

from .._deprecation import deprecated

__all__: list[str] = []

#: name -> (module that holds it now, its name there)
_MOVED = {
    "DatasetResult": ("ccmetrics.results.dataset", "DatasetResult"),
    "RunInfo": ("ccmetrics.results.run", "RunInfo"),
    "MISSING_PREDICTION": ("ccmetrics.results.dataset", "MISSING_PREDICTION"),
    "EMPTY_GT": ("ccmetrics.results.dataset", "EMPTY_GT"),
}


#: where the other names the former module held (its own imports) are found now, in this order
_HOMES = (
    "ccmetrics.results.tables",
    "ccmetrics.campaign.output_folder",
    "ccmetrics.schema",
    "ccmetrics.metrics.detection_curves",
    "ccmetrics.metrics.thresholds",
    "ccmetrics.metrics.calibration",
    "ccmetrics.metrics.aggregation",
    "ccmetrics._escaping",
    "ccmetrics._files",
    "ccmetrics.results.dataset",
)


def _home(name: str) -> tuple[str, str]:
    """Where ``name`` lives now: :data:`_MOVED`, else the first of :data:`_HOMES` that holds it."""
    import importlib

    if name in _MOVED:
        return _MOVED[name]
    for module in _HOMES:
        if not name.startswith("__") and hasattr(importlib.import_module(module), name):
            return module, name
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __getattr__(name: str) -> Any:
    import importlib

    module, new = _home(name)
    return deprecated(
        __name__,
        name,
        {name: functools.partial(lambda m, n: getattr(importlib.import_module(m), n), module, new)},
        f"import {new} from {module} (the results layer; ccmetrics.DatasetResult is the same class)",
    )
