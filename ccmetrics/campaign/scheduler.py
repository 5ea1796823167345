"""Running a data set's cases so that no crash, kill or Ctrl-C loses a finished case.

:func:`run_cases` is the scheduler behind :func:`ccmetrics.evaluate_dataset`. For each case it:

1. on ``resume``, takes the case's record from ``OUT_DIR/cases/`` (:mod:`ccmetrics.campaign.records`) when
   its fingerprint (file sizes and modification times, value-changing options, version) still
   matches, its checksum holds and its last attempt did not fail for a reason that may not repeat;
   every other case is evaluated, and the reason is said (new, changed and how, failed last time,
   record damaged or edited);
2. estimates its peak memory from the image headers, before any voxel is read
   (:func:`ccmetrics.engine.memory.estimate_case_bytes`): over ``max_memory`` it becomes an error row
   that names the option;
3. evaluates it here (``workers=1``), in worker processes that survive their cases
   (``ccmetrics.campaign._workers``: a dead worker costs its case only, the case is tried again alone, a
   case over ``case_timeout`` is stopped, large cases run with fewer beside them), or on a Dask
   cluster (a case whose workers keep dying, ``KilledWorker``, becomes an error row);
4. writes its record the moment it is done (atomically), so the record folder grows as the run
   goes and a run killed at any moment keeps every finished case.

Ctrl-C (``KeyboardInterrupt``) stops the workers and raises :class:`Stopped` carrying what is
finished (:func:`ccmetrics.evaluate_dataset` turns it into :class:`EvaluationInterrupted`);
``ccmetrics evaluate`` then writes the tables of the finished cases and says how to resume. A record
that cannot be written (a full disk: :class:`ccmetrics.campaign.records.OutputWriteError`, naming the path) or a
failure of the scheduler itself stops the workers and raises :class:`Failed`, likewise carrying what
is finished (:class:`EvaluationFailed` to the caller): no such error ends a run without its finished
cases and the way to resume. The output folder is held by one run at a time
(:func:`ccmetrics.campaign.output_folder.locked`, taken by :func:`ccmetrics.evaluate_dataset`).

Every output, fresh or from a record, goes through the records' exact JSON encoding, so the final
tables do not depend on which cases were resumed, on the scheduler or on the worker count.
"""

from __future__ import annotations

import functools
import os
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import schema
from .._escaping import printable
from .._files import OutputWriteError
from .._interrupts import critical, raise_if_stopped
from ..engine.memory import over_limit
from ..results.run import RunInfo  # what a run did: kept with its result (the results layer)
from .options import CaseOutput, CaseTask, EvalOptions
from .records import CaseRecord, RecordsInTheWay, RecordStore, changes, encode_output

__all__ = [
    "EvaluationFailed",
    "EvaluationInterrupted",
    "Failed",
    "RecordsInTheWay",
    "RunInfo",
    "Stopped",
    "run_cases",
]


class Stopped(KeyboardInterrupt):
    """Ctrl-C inside :func:`run_cases`: the outputs of the finished cases and what the run did, for the caller."""

    def __init__(self, outputs: list[CaseOutput], run: RunInfo) -> None:
        super().__init__("stopped")
        self.outputs, self.run = outputs, run


class Failed(RuntimeError):
    """The run could not go on (:func:`run_cases`): a record could not be written, or the scheduler failed.
    Carries the finished outputs and what the run did, for the caller; the cause is chained."""

    def __init__(self, message: str, outputs: list[CaseOutput], run: RunInfo) -> None:
        super().__init__(message)
        self.outputs, self.run = outputs, run


class EvaluationFailed(RuntimeError):
    """:func:`ccmetrics.evaluate_dataset` could not go on: a record could not be written (a full disk, a folder
    that became read-only: ``__cause__`` is the :class:`~ccmetrics.campaign.records.OutputWriteError`, whose message
    names the path), or the scheduler itself failed (a bug: please report it).

    ``result`` is a :class:`~ccmetrics.DatasetResult` of the finished cases (``result.run.pending`` lists the
    others); their records are kept in ``out_dir``, so that, the cause fixed, the same call with
    ``run=RunOptions(resume=True, ...)`` evaluates only the rest.
    """

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`ccmetrics.evaluate_dataset`: the finished cases are in ``result``.

    ``result`` is a :class:`~ccmetrics.DatasetResult` of the finished cases only (its ``run.pending``
    lists the others); with an ``out_dir`` their records are kept, and running the same call with
    ``run=RunOptions(resume=True, ...)`` evaluates only the rest. A subclass of ``KeyboardInterrupt``: code that
    does not catch it stops as on any Ctrl-C.
    """

    def __init__(self, result: Any) -> None:
        super().__init__(f"interrupted: {len(result.run.pending)} case(s) not evaluated")
        self.result = result


def _note(text: str) -> None:
    from tqdm.auto import tqdm

    with critical():  # tqdm creates its lock on first use: a stop signal there would leave it half-made
        tqdm.write(printable(f"ccmetrics: {text}", newlines=True), file=sys.stderr)  # ids: no control character


@functools.cache
def _bar_class() -> Any:
    """tqdm's bar (``tqdm.auto``) without tqdm's monitor thread, which would stay running after the run (the figures
    are drawn on two cores only in a process of one thread: :mod:`ccmetrics.analysis._drawing`); the bar is redrawn
    at each case (``miniters=1``), the monitor's job."""
    from tqdm.auto import tqdm

    class Bar(tqdm):
        monitor_interval = 0  # (tqdm's documented switch: no monitor thread)

    return Bar


def _silent(text: str) -> None:
    """A routine note with ``progress=False`` (``--quiet``): not shown; ``result.run`` keeps what it says."""


#: the scheduler's callbacks (:mod:`ccmetrics.campaign.case` gives them): one case's output (a top-level function,
#: so that worker processes and Dask can import it), what a case's result depends on, the output of a case that
#: could not run, and a case's estimated peak memory in bytes (0: unknown)
_EvaluateCase = Callable[[CaseTask, EvalOptions], CaseOutput]
_FingerprintCase = Callable[[CaseTask], dict[str, Any]]
_FailCase = Callable[[CaseTask, str], CaseOutput]
_EstimateCase = Callable[[CaseTask], int]


def _evaluate_encoded(task: CaseTask, shared: tuple[_EvaluateCase, EvalOptions]) -> CaseOutput:
    """One case, wherever it runs (this process, a worker process, a Dask worker): ``evaluate(task, options)``
    (the data-set module's, handed in: this module never imports it), encoded as its record will hold it."""
    evaluate, options = shared
    return CaseOutput.from_dict(encode_output(dict(evaluate(task, options))))


class _Kept:
    """The run's account of its finished cases: each output recorded the moment it is done (its record written),
    counted and shown on the progress bar."""

    def __init__(
        self, store: RecordStore | None, prints: dict[str, dict[str, Any]], failure: _FailCase, info: RunInfo
    ) -> None:
        self.store, self.prints, self.failure, self.info = store, prints, failure, info
        self.outputs: dict[str, CaseOutput] = {}
        self.failed = 0
        self.bar: Any = None

    def keep(self, task: CaseTask, output: CaseOutput, retry: bool = False) -> None:
        retry = retry or bool(output.retry)  # e.g. over the memory limit once its voxels were counted
        with critical():  # the record and the run's account of it: both or neither
            if self.store is not None:
                self.store.write(CaseRecord(task.case, self.prints[task.case], output.to_dict(), retry=retry))
            self.outputs[task.case] = output
            self.info.evaluated += 1
        if any(row.get(schema.STATUS) == schema.FAILED for row in output.rows):
            self.failed += 1
        self.bar.set_postfix_str(f"failed {self.failed}", refresh=False)
        self.bar.update()
        raise_if_stopped()  # a stop signal whose exception something swallowed: stop now, between cases

    def fail(self, task: CaseTask, message: str) -> None:
        self.keep(task, CaseOutput.from_dict(encode_output(dict(self.failure(task, message)))), retry=True)

    def pending(self, tasks: list[CaseTask]) -> list[str]:
        """The cases not finished, for the caller (``info.pending``), sorted."""
        self.info.pending = sorted(t.case for t in tasks if t.case not in self.outputs)
        return self.info.pending


def run_cases(
    tasks: list[CaseTask],
    options: EvalOptions,
    *,
    evaluate: _EvaluateCase,
    fingerprint: _FingerprintCase,
    failure: _FailCase,
    estimate: _EstimateCase,
    workers: int = 1,
    client: Any = None,
    progress: bool = True,
    out_dir: str | os.PathLike | None = None,
    resume: bool = False,
    case_timeout: float | None = None,
    max_memory: float | None = None,
    memory_budget: float | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> tuple[list[CaseOutput], RunInfo]:
    """Evaluate the tasks (see the module docstring); return their outputs (any order, each as
    :func:`~ccmetrics.campaign.records.encode_output` gives it and its record holds it) and what the run did.

    ``evaluate(task, options)`` (one case's output; a top-level function, so that worker processes and Dask
    can import it), ``fingerprint(task)``, ``failure(task, message)`` (the output of a case that could not
    run) and ``estimate(task)`` (peak bytes, 0 unknown) come from :mod:`ccmetrics.campaign.case`. On Ctrl-C raises
    :class:`Stopped` with the finished outputs and ``info.pending``: the caller builds the partial result.
    ``meanwhile()`` is called once the cases run elsewhere (worker processes started, or Dask), for the caller's
    own work while this process waits for them (it must return at once: start a thread).
    """
    info = RunInfo()
    store = RecordStore(out_dir) if out_dir is not None else None
    kept = _Kept(store, {t.case: fingerprint(t) for t in tasks}, failure, info)
    shared = (evaluate, options)
    started: list[Any] = []  # worker processes started before the cases' estimates
    try:
        if store is not None and resume:
            _take_records(store, tasks, kept.prints, info, kept.outputs, routine=_note if progress else _silent)
        elif store is not None and (blocked := store.in_the_way(kept.prints)):
            raise RecordsInTheWay(blocked)
        todo = [t for t in tasks if t.case not in kept.outputs]
        if client is None and ((workers > 1 and len(todo) > 1) or case_timeout is not None):
            from ._workers import start_workers  # started now, their imports overlap the estimates below

            started = start_workers(_evaluate_encoded, shared, workers, len(todo))
            if meanwhile is not None:
                meanwhile()
        kept.bar = _bar_class()(
            total=len(tasks),
            initial=len(kept.outputs),
            unit="case",
            desc="evaluating",
            disable=not progress,
            miniters=1,
        )
        runnable = _estimated(todo, estimate, max_memory, kept)
        if client is not None:
            if meanwhile is not None:
                meanwhile()
            _run_dask(client, runnable, shared, kept.keep, kept.fail)
        elif (workers > 1 and len(runnable) > 1) or case_timeout is not None:
            taken, started = started, []
            _run_pool(runnable, shared, kept, workers, progress, case_timeout, memory_budget, taken)
        else:
            for task, _ in runnable:
                kept.keep(task, _evaluate_encoded(task, shared))
    except KeyboardInterrupt:
        kept.pending(tasks)
        raise Stopped(list(kept.outputs.values()), info) from None
    except OutputWriteError as exc:
        kept.pending(tasks)
        raise Failed(str(exc), list(kept.outputs.values()), info) from exc
    except RecordsInTheWay:  # before any case ran: the folder's problem, which its message names
        raise
    except Exception as exc:  # the scheduler's own failure: the finished cases stay kept, the run says how to go on
        kept.pending(tasks)
        message = f"the run's scheduler failed: {type(exc).__name__}: {exc} (please report this as a bug)"
        raise Failed(message, list(kept.outputs.values()), info) from exc
    finally:
        if started:  # started, but not used: the cases ran here (one left to run), or the run stopped first
            from ._workers import stop_workers

            stop_workers(started)
        if kept.bar is not None:
            kept.bar.close()
    return list(kept.outputs.values()), info


def _estimated(
    todo: list[CaseTask], estimate: _EstimateCase, max_memory: float | None, kept: _Kept
) -> list[tuple[CaseTask, int]]:
    """Each case with its estimated peak memory; a case over ``max_memory`` by its headers is failed at once."""
    runnable = []
    for task in todo:
        need = estimate(task)
        if max_memory is not None and need > max_memory:
            kept.fail(task, over_limit(need, max_memory, "by its headers, before reading", at_least=True))
        else:
            runnable.append((task, need))
    return runnable


def _run_pool(
    runnable: list[tuple[CaseTask, int]],
    shared: tuple[_EvaluateCase, EvalOptions],
    kept: _Kept,
    workers: int,
    progress: bool,
    case_timeout: float | None,
    memory_budget: float | None,
    started: list[Any],
) -> None:
    """The cases in local worker processes (:func:`ccmetrics.campaign._workers.run_jobs`), ``started`` first."""
    from ._workers import Job, run_jobs

    by_name = {t.case: t for t, _ in runnable}
    run_jobs(
        [Job(t.case, t, need) for t, need in runnable],
        _evaluate_encoded,
        shared,
        workers=workers,
        on_done=lambda job, encoded: kept.keep(by_name[job.name], encoded),
        on_failed=lambda job, message: kept.fail(by_name[job.name], message),
        note=_note,
        routine=_note if progress else _silent,
        timeout=case_timeout,
        budget_bytes=memory_budget,
        started=started,
    )


def _take_records(
    store: RecordStore,
    tasks: list[Any],
    prints: dict[str, dict[str, Any]],
    info: RunInfo,
    outputs: dict[str, CaseOutput],
    routine: Callable[[str], None] = _note,
) -> None:
    """Resume: put into ``outputs`` the output of every case whose record still stands; note in ``info`` why each
    other case is evaluated; remove the records of cases no longer in the folders, and the damaged records that
    ccmetrics provably wrote of such cases (a damaged record of a case still there is replaced when the case is
    recorded again). Every other file of the records folder is left alone and named. A damaged record is always
    noted; ``routine`` tells what was kept and which cases changed (silent with ``progress=False``).

    Raises
    ------
    RecordsInTheWay
        A file that ccmetrics did not write has the record name of a case (before anything is evaluated).
    """
    records, problems = store.scan()
    by_path: dict[Any, str] = {store.path(t.case): t.case for t in tasks}
    blocked = [p.path for p in problems if p.path in by_path and not p.marked]
    if blocked:
        raise RecordsInTheWay(blocked)
    damaged = {}
    for p in problems:
        case = p.case if p.ours else by_path.get(p.path) if p.marked else None
        if case is not None:
            damaged[case] = p.reason
    found = len(records) + len(problems)
    for task in tasks:
        record = records.pop(task.case, None)
        if record is None:
            info.reasons[task.case] = f"record {damaged[task.case]}" if task.case in damaged else "new"
        elif record.retry:
            info.reasons[task.case] = "failed last time: " + _first_error(record.output)
        elif record.fingerprint != prints[task.case]:
            info.reasons[task.case] = "; ".join(changes(record.fingerprint, prints[task.case])) or "changed"
        elif missing := _missing_map(record.output, store.folder.parent):
            info.reasons[task.case] = f"its outcome map {missing} is missing"
        else:
            outputs[task.case] = CaseOutput.from_dict(record.output)
    info.dropped_records = sorted(records)  # cases no longer in the folders
    gone = [p for p in problems if p.ours and p.case not in prints]  # damaged records of cases no longer there
    store.remove(paths=[r.path for r in records.values() if r.path is not None] + [p.path for p in gone])
    info.reused = len(outputs)
    if not found:
        return
    counts: dict[str, int] = {}
    for reason in info.reasons.values():
        counts[_kind(reason)] = counts.get(_kind(reason), 0) + 1
    detail = ", ".join(f"{n} {k}" for k, n in counts.items())
    dropped = info.dropped_records
    routine(
        f"resuming from {store.folder}: {info.reused} case(s) kept, {len(info.reasons)} to evaluate"
        + (f" ({detail})" if detail else "")
        + (
            f"; records of {len(dropped)} case(s) no longer in the folders removed: {', '.join(dropped)}"
            if dropped
            else ""
        )
    )
    for case, reason in info.reasons.items():
        if reason.startswith("record "):
            _note(f"  {case}: {reason}: evaluated again")
        elif reason != "new":
            routine(f"  {case}: {reason}")
    for problem in gone:
        _note(f"  record file {problem.path.name}: {problem.reason} (its case is no longer in the folders); removed")
    alone = [p for p in problems if p.path not in by_path and not (p.ours and p.case is not None)]
    if alone:
        shown = ", ".join(p.path.name for p in alone[:8]) + (", ..." if len(alone) > 8 else "")
        _note(
            f"  left alone in {store.folder}: {len(alone)} file(s) that ccmetrics cannot prove it wrote ({shown}; "
            f"{alone[0].path.name}: {alone[0].reason})"
        )


def _missing_map(output: Mapping[str, Any], out_dir: Any) -> str:
    """The first outcome map a recorded case names (``outcome_map_file``, relative to the output folder) that is no
    longer there, or ``""``."""
    for row in output.get("rows", ()):
        name = row.get(schema.OUTCOME_MAP_FILE)
        if isinstance(name, str) and name and not (Path(out_dir) / name).is_file():
            return name
    return ""


def _kind(reason: str) -> str:
    """The kind of a reason to evaluate a case again, for the resume note's counts."""
    if reason == "new":
        return "new"
    if reason.startswith("failed"):
        return "failed last time"
    return "record damaged" if reason.startswith("record ") else "changed"


def _first_error(output: Mapping[str, Any]) -> str:
    for row in output["rows"]:
        if row.get(schema.ERROR):
            return str(row[schema.ERROR])
    return "an error"


def _run_dask(
    client: Any,
    runnable: list[tuple[CaseTask, int]],
    shared: tuple[_EvaluateCase, EvalOptions],
    keep: Callable[[CaseTask, CaseOutput], None],
    fail: Callable[[CaseTask, str], None],
) -> None:
    """Each case a Dask task. A case whose workers died (``KilledWorker``: the scheduler counts every task a
    dying worker held, innocent ones queued beside the culprit included) is tried once more alone at the
    end, then becomes an error row; a task that raises is an error row at once."""
    from dask.distributed import as_completed

    def submit(task: Any) -> Any:
        key = f"ccmetrics-{task.case}-{uuid.uuid4().hex[:8]}"
        future = client.submit(_evaluate_encoded, task, shared, pure=False, key=key)
        futures[future] = task
        return future

    def settle(future: Any, last_try: bool) -> bool:
        """Keep the case's result or its error row; False for a KilledWorker to try again."""
        task = futures[future]
        try:
            keep(task, future.result())
        except Exception as exc:  # KilledWorker, a lost connection, ...: this case's row, not the run's end
            if type(exc).__name__ != "KilledWorker":
                fail(task, f"the Dask task failed: {type(exc).__name__}: {exc}")
            elif not last_try:
                return False
            else:
                fail(
                    task,
                    "Dask workers died while running this case (KilledWorker: the scheduler gave up after the "
                    "allowed failures; twice, the second time it ran alone) — out of memory?",
                )
        return True

    futures: dict[Any, Any] = {}
    try:
        suspects = [futures[f] for f in as_completed([submit(t) for t, _ in runnable]) if not settle(f, False)]
        for task in suspects:
            _note(f"{task.case}: Dask workers died while running it; trying this case again, alone")
            settle(submit(task), True)
    except KeyboardInterrupt:
        client.cancel(list(futures))
        raise
