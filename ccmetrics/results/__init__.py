"""The results: what a data-set run leaves, as tables that read back the same.

:class:`DatasetResult` (:mod:`~ccmetrics.results.dataset`) holds a run's tidy tables (:mod:`ccmetrics.schema`:
``per_case``, ``per_component``, ``per_prediction``, ``per_candidate``, ``thresholds``) with the facts of their
columns and :class:`RunInfo` (:mod:`~ccmetrics.results.run`), what the run did; it writes them into an output
folder and reads them back. The tables of a folder are one set, named by a manifest with each file's checksum
(:mod:`~ccmetrics.results.tables`: :func:`read_tables`, :func:`owned_outputs`). The layer sits below the campaign
(which makes results) and the analysis and report (which read them); the statistics of a result are
the analysis layer's (:mod:`~ccmetrics.analysis.summaries`), its methods call them.

Before ccmetrics 0.2, ``ccmetrics.results`` was the module of :class:`~ccmetrics.metrics.results.CaseResult`
(now :mod:`ccmetrics.metrics.results`): its names are still answered here, with a ``DeprecationWarning``.
"""

from typing import Any

from .._deprecation import deprecated
from .._lazy import attach

#: public name -> the module of this layer that defines it (loaded on first use)
_EXPORTS = {
    "DatasetResult": "dataset",
    "RunInfo": "run",
    "MANIFEST_NAME": "tables",
    "OUTPUT_NAMES": "tables",
    "owned_outputs": "tables",
    "read_tables": "tables",
}

_getattr, __dir__, __all__ = attach(__name__, _EXPORTS, ("dataset", "nnunet", "run", "tables"))


def __getattr__(name: str) -> Any:
    try:
        return _getattr(name)
    except AttributeError:
        pass
    import importlib

    former = importlib.import_module("ccmetrics.metrics.results")  # the module this name held before 0.2
    values = {n: (lambda n=n: getattr(former, n)) for n in vars(former) if not n.startswith("__")}
    return deprecated(
        __name__, name, values, f"ccmetrics.results is the results layer now: use ccmetrics.metrics.results.{name}"
    )
