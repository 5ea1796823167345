"""The campaigns: a data set's cases evaluated so that no crash, kill or Ctrl-C loses a finished one.

:func:`evaluate_dataset` (:mod:`~ccmetrics.campaign.dataset`) with its options (:mod:`~ccmetrics.campaign.options`:
:class:`EvalOptions`, :class:`CaseTask`), the pairing of folders (:mod:`~ccmetrics.campaign.pairing`), one case
evaluated (:mod:`~ccmetrics.campaign.case`), the scheduler (:mod:`~ccmetrics.campaign.scheduler`: records,
resume, worker processes, Dask), the durable per-case records (:mod:`~ccmetrics.campaign.records`) and the
output folder's lock (:mod:`~ccmetrics.campaign.output_folder`). Every name of the former ``ccmetrics.campaign``
module (``EvaluationInterrupted``, ``run_cases``, ...) is here too. The result of a run
(:class:`~ccmetrics.results.DatasetResult`, :class:`~ccmetrics.results.RunInfo`, the tables' manifest) is the
results layer's (:mod:`ccmetrics.results`): its names are still answered here, with a ``DeprecationWarning``,
until ccmetrics 0.3.
"""

from typing import Any

from .._deprecation import deprecated
from .._lazy import attach

#: public name -> the module of this layer that defines it (loaded on first use)
_EXPORTS = {
    "ProbabilityOptions": "probabilities",
    "CaseOutput": "options",
    "CaseTask": "options",
    "EvalOptions": "options",
    "PairingOptions": "options",
    "RunOptions": "options",
    "pair_folders": "pairing",
    "tasks_from_pairs": "pairing",
    "EMPTY_GT": "case",
    "MISSING_PREDICTION": "case",
    "evaluate_task": "case",
    "evaluate_dataset": "dataset",
    "FolderInUse": "output_folder",
    "LOCK_NAME": "output_folder",
    "locked": "output_folder",
    "prepare_out_dir": "output_folder",
    "CaseRecord": "records",
    "OutputWriteError": "records",
    "RECORDS_FOLDER": "records",
    "RecordProblem": "records",
    "RecordStore": "records",
    "atomic_write": "records",
    "changes": "records",
    "decode_output": "records",
    "decode_tables": "records",
    "encode_output": "records",
    "file_fingerprint": "records",
    "is_temporary": "records",
    "remove_temporaries": "records",
    "EvaluationFailed": "scheduler",
    "EvaluationInterrupted": "scheduler",
    "Failed": "scheduler",
    "Stopped": "scheduler",
    "run_cases": "scheduler",
}

#: former names of this package that are the results layer's now -> their module there
_MOVED = {
    "DatasetResult": "dataset",
    "RunInfo": "run",
    "MANIFEST_NAME": "tables",
    "OUTPUT_NAMES": "tables",
    "begin_tables": "tables",
    "finish_tables": "tables",
    "read_tables": "tables",
    "stale_outputs": "tables",
}

_getattr, __dir__, __all__ = attach(
    __name__,
    _EXPORTS,
    ("case", "dataset", "options", "output_folder", "pairing", "probabilities", "records", "result", "scheduler"),
)


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        return _getattr(name)
    import importlib

    module = f"ccmetrics.results.{_MOVED[name]}"
    value = {name: lambda: getattr(importlib.import_module(module), name)}
    return deprecated(__name__, name, value, f"import {name} from ccmetrics.results (the results layer)")
