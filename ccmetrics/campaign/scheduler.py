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

import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import schema
from .._escaping import printable
from .._files import OutputWriteError
from .._interrupts import critical, raise_if_stopped
from ..engine.memory import over_limit
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


@dataclass
class RunInfo:
    """What a run did: cases taken from records, evaluated and why, failed by a crash, and not reached."""

    reused: int = 0
    evaluated: int = 0
    reasons: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    dropped_records: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.pending

    def to_dict(self) -> dict[str, Any]:
        return {"complete": self.complete, **asdict(self)}


class Stopped(KeyboardInterrupt):
    """Ctrl-C inside :func:`run_cases`: the outputs of the finished cases and what the run did, for the caller."""

    def __init__(self, outputs: list[dict[str, Any]], run: RunInfo) -> None:
        super().__init__("stopped")
        self.outputs, self.run = outputs, run


class Failed(RuntimeError):
    """The run could not go on (:func:`run_cases`): a record could not be written, or the scheduler failed.
    Carries the finished outputs and what the run did, for the caller; the cause is chained."""

    def __init__(self, message: str, outputs: list[dict[str, Any]], run: RunInfo) -> None:
        super().__init__(message)
        self.outputs, self.run = outputs, run


class EvaluationFailed(RuntimeError):
    """:func:`ccmetrics.evaluate_dataset` could not go on: a record could not be written (a full disk, a folder
    that became read-only: ``__cause__`` is the :class:`~ccmetrics.campaign.records.OutputWriteError`, whose message
    names the path), or the scheduler itself failed (a bug: please report it).

    ``result`` is a :class:`~ccmetrics.DatasetResult` of the finished cases (``result.run.pending`` lists the
    others); their records are kept in ``out_dir``, so that, the cause fixed, the same call with
    ``resume=True`` evaluates only the rest.
    """

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`ccmetrics.evaluate_dataset`: the finished cases are in ``result``.

    ``result`` is a :class:`~ccmetrics.DatasetResult` of the finished cases only (its ``run.pending``
    lists the others); with an ``out_dir`` their records are kept, and running the same call with
    ``resume=True`` evaluates only the rest. A subclass of ``KeyboardInterrupt``: code that does not
    catch it stops as on any Ctrl-C.
    """

    def __init__(self, result: Any) -> None:
        super().__init__(f"interrupted: {len(result.run.pending)} case(s) not evaluated")
        self.result = result


def _note(text: str) -> None:
    from tqdm.auto import tqdm

    with critical():  # tqdm creates its lock on first use: a stop signal there would leave it half-made
        tqdm.write(printable(f"ccmetrics: {text}", newlines=True), file=sys.stderr)  # ids: no control character


def _silent(text: str) -> None:
    """A routine note with ``progress=False`` (``--quiet``): not shown; ``result.run`` keeps what it says."""


def _evaluate_encoded(task: Any, shared: tuple[Callable[[Any, Any], dict[str, Any]], Any]) -> dict[str, Any]:
    """One case, wherever it runs (this process, a worker process, a Dask worker): ``evaluate(task, options)``
    (the data-set module's, handed in: this module never imports it), encoded as its record will hold it."""
    evaluate, options = shared
    return encode_output(evaluate(task, options))


def run_cases(
    tasks: list[Any],
    options: Any,
    *,
    evaluate: Callable[[Any, Any], dict[str, Any]],
    fingerprint: Callable[[Any], dict[str, Any]],
    failure: Callable[[Any, str], dict[str, Any]],
    estimate: Callable[[Any], int],
    workers: int = 1,
    client: Any = None,
    progress: bool = True,
    out_dir: str | os.PathLike | None = None,
    resume: bool = False,
    case_timeout: float | None = None,
    max_memory: float | None = None,
    memory_budget: float | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> tuple[list[dict[str, Any]], RunInfo]:
    """Evaluate the tasks (see the module docstring); return their outputs (any order, each as
    :func:`~ccmetrics.campaign.records.encode_output` gives it and its record holds it) and what the run did.

    ``evaluate(task, options)`` (one case's output; a top-level function, so that worker processes and Dask
    can import it), ``fingerprint(task)``, ``failure(task, message)`` (the output of a case that could not
    run) and ``estimate(task)`` (peak bytes, 0 unknown) come from :mod:`ccmetrics.campaign.case`. On Ctrl-C raises
    :class:`Stopped` with the finished outputs and ``info.pending``: the caller builds the partial result.
    ``meanwhile()`` is called once the cases run elsewhere (worker processes started, or Dask), for the caller's
    own work while this process waits for them (it must return at once: start a thread).
    """
    from tqdm.auto import tqdm

    info = RunInfo()
    store = RecordStore(out_dir) if out_dir is not None else None
    prints = {t.case: fingerprint(t) for t in tasks}
    outputs: dict[str, dict[str, Any]] = {}
    failed = [0]
    bar: Any = None
    started: list[Any] = []  # worker processes started before the cases' estimates

    def keep(task: Any, output: dict[str, Any], retry: bool = False) -> None:
        retry = retry or bool(output.get("retry"))  # e.g. over the memory limit once its voxels were counted
        with critical():  # the record and the run's account of it: both or neither
            if store is not None:
                store.write(CaseRecord(task.case, prints[task.case], output, retry=retry))
            outputs[task.case] = output
            info.evaluated += 1
        if any(row.get(schema.STATUS) == schema.FAILED for row in output["rows"]):
            failed[0] += 1
        bar.set_postfix_str(f"failed {failed[0]}", refresh=False)
        bar.update()
        raise_if_stopped()  # a stop signal whose exception something swallowed: stop now, between cases

    def fail(task: Any, message: str) -> None:
        keep(task, encode_output(failure(task, message)), retry=True)

    try:
        if store is not None and resume:
            _take_records(store, tasks, prints, info, outputs, routine=_note if progress else _silent)
        elif store is not None and (blocked := store.in_the_way(prints)):
            raise RecordsInTheWay(blocked)
        todo = [t for t in tasks if t.case not in outputs]
        pool = client is None and ((workers > 1 and len(todo) > 1) or case_timeout is not None)
        if pool:  # started now, their imports overlap the estimates (headers read here) below
            from ._workers import start_workers

            started = start_workers(_evaluate_encoded, (evaluate, options), workers, len(todo))
            if meanwhile is not None:
                meanwhile()
        bar = tqdm(total=len(tasks), initial=len(outputs), unit="case", desc="evaluating", disable=not progress)
        runnable = []
        for task in todo:
            need = estimate(task)
            if max_memory is not None and need > max_memory:
                fail(task, over_limit(need, max_memory, "by its headers, before reading", at_least=True))
            else:
                runnable.append((task, need))
        if client is not None:
            if meanwhile is not None:
                meanwhile()
            _run_dask(client, runnable, (evaluate, options), keep, fail)
        elif (workers > 1 and len(runnable) > 1) or case_timeout is not None:
            from ._workers import Job, run_jobs

            taken, started = started, []
            by_name = {t.case: t for t, _ in runnable}
            run_jobs(
                [Job(t.case, t, need) for t, need in runnable],
                _evaluate_encoded,
                (evaluate, options),
                workers=workers,
                on_done=lambda job, encoded: keep(by_name[job.name], encoded),
                on_failed=lambda job, message: fail(by_name[job.name], message),
                note=_note,
                routine=_note if progress else _silent,
                timeout=case_timeout,
                budget_bytes=memory_budget,
                started=taken,
            )
        else:
            for task, _ in runnable:
                keep(task, _evaluate_encoded(task, (evaluate, options)))
    except KeyboardInterrupt:
        info.pending = sorted(t.case for t in tasks if t.case not in outputs)
        raise Stopped(list(outputs.values()), info) from None
    except OutputWriteError as exc:
        info.pending = sorted(t.case for t in tasks if t.case not in outputs)
        raise Failed(str(exc), list(outputs.values()), info) from exc
    except RecordsInTheWay:  # before any case ran: the folder's problem, which its message names
        raise
    except Exception as exc:  # the scheduler's own failure: the finished cases stay kept, the run says how to go on
        info.pending = sorted(t.case for t in tasks if t.case not in outputs)
        message = f"the run's scheduler failed: {type(exc).__name__}: {exc} (please report this as a bug)"
        raise Failed(message, list(outputs.values()), info) from exc
    finally:
        if started:  # started, but not used: the cases ran here (one left to run), or the run stopped first
            from ._workers import stop_workers

            stop_workers(started)
        if bar is not None:
            bar.close()
    return list(outputs.values()), info


def _take_records(
    store: RecordStore,
    tasks: list[Any],
    prints: dict[str, dict[str, Any]],
    info: RunInfo,
    outputs: dict[str, dict[str, Any]],
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
    by_path = {store.path(t.case): t.case for t in tasks}
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
        else:
            outputs[task.case] = record.output
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


def _kind(reason: str) -> str:
    """The kind of a reason to evaluate a case again, for the resume note's counts."""
    if reason == "new":
        return "new"
    if reason.startswith("failed"):
        return "failed last time"
    return "record damaged" if reason.startswith("record ") else "changed"


def _first_error(output: dict[str, Any]) -> str:
    for row in output["rows"]:
        if row.get(schema.ERROR):
            return str(row[schema.ERROR])
    return "an error"


def _run_dask(client: Any, runnable: list[tuple[Any, int]], shared: Any, keep: Callable, fail: Callable) -> None:
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
