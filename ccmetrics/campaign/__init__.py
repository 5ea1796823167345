"""The campaigns: a data set's cases evaluated so that no crash, kill or Ctrl-C loses a finished one.

:func:`evaluate_dataset` (:mod:`~ccmetrics.campaign.dataset`) with its options (:mod:`~ccmetrics.campaign.options`:
:class:`EvalOptions`, :class:`CaseTask`), the pairing of folders (:mod:`~ccmetrics.campaign.pairing`), one case
evaluated (:mod:`~ccmetrics.campaign.case`) and the result (:mod:`~ccmetrics.campaign.result`:
:class:`DatasetResult`, its tables, read and write), the scheduler (:mod:`~ccmetrics.campaign.scheduler`: records,
resume, worker processes, Dask), the durable per-case records (:mod:`~ccmetrics.campaign.records`) and the
output folder's lock and manifest (:mod:`~ccmetrics.campaign.output_folder`). Every name of the former
``ccmetrics.campaign`` module (``EvaluationInterrupted``, ``run_cases``, ...) is here too.
"""

from .._lazy import attach

#: public name -> the module of this layer that defines it (loaded on first use)
_EXPORTS = {
    "ProbabilityOptions": "probabilities",
    "CaseTask": "options",
    "EvalOptions": "options",
    "pair_folders": "pairing",
    "tasks_from_pairs": "pairing",
    "EMPTY_GT": "case",
    "MISSING_PREDICTION": "case",
    "evaluate_task": "case",
    "DatasetResult": "result",
    "evaluate_dataset": "dataset",
    "FolderInUse": "output_folder",
    "LOCK_NAME": "output_folder",
    "MANIFEST_NAME": "output_folder",
    "OUTPUT_NAMES": "output_folder",
    "begin_tables": "output_folder",
    "finish_tables": "output_folder",
    "locked": "output_folder",
    "prepare_out_dir": "output_folder",
    "read_tables": "output_folder",
    "stale_outputs": "output_folder",
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
    "RunInfo": "scheduler",
    "Stopped": "scheduler",
    "run_cases": "scheduler",
}

__getattr__, __dir__, __all__ = attach(
    __name__,
    _EXPORTS,
    ("case", "dataset", "options", "output_folder", "pairing", "probabilities", "records", "result", "scheduler"),
)
