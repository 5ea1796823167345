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


def __getattr__(name: str) -> Any:
    import importlib

    def value(where: tuple[str, str]) -> Any:
        return getattr(importlib.import_module(where[0]), where[1])

    module, new = _MOVED.get(name, ("ccmetrics.results.dataset", name))
    return deprecated(
        __name__,
        name,
        {n: functools.partial(value, w) for n, w in _MOVED.items()},
        f"import {new} from {module} (the results layer; ccmetrics.DatasetResult is the same class)",
    )
