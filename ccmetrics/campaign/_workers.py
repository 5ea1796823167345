"""Local worker processes that outlive the cases that kill them.

:func:`run_jobs` hands jobs to ``workers`` long-lived processes (``spawn``: a fresh interpreter,
no fork of a process that may hold threads), one job per process at a time, each over its own
pipe, so the parent always knows which case a process holds. Then:

* a process that dies (a signal such as the out-of-memory killer's SIGKILL, a segfault in a C
  extension, ``os._exit``) costs only its case: the process is replaced, the case is tried once more
  *alone* (no other case runs beside it, so it has the machine's memory), and if it dies again it
  is reported failed with how the process ended;
* a process that dies while it waits for its next job (idle, or between two jobs) costs nothing: it is
  found dead before a job is handed to it (or the hand-over fails), replaced, and the job goes to
  another process without counting as an attempt;
* a job whose function raises, whose payload cannot be sent or whose result cannot be received is
  reported failed with the exception; its process goes on with the next job;
* a case that runs longer than ``timeout`` seconds has its process killed and is reported failed;
* jobs carry an estimate of their peak memory: a job starts only while the running jobs' estimates
  plus its own fit the ``budget`` (or when nothing else runs), so a large case runs with fewer cases
  beside it instead of failing;
* Ctrl-C (``KeyboardInterrupt`` in the parent) ends every worker before it propagates; the workers
  ignore SIGINT themselves (a terminal sends it to the whole process group), so they print nothing;
* a parent that dies without a word (SIGKILL) takes its workers with it on Linux (``PR_SET_PDEATHSIG``):
  none goes on computing, or hanging, for a run that no longer exists.

Threads: a worker's share of the CPUs is ``cpus // workers`` (at least 1): a worker's numba kernels, OpenMP
and BLAS libraries and the engine's thread pool (``ccmetrics.engine.config.EngineConfig.threads``, where the
caller left it unset) use that many threads, so that ``workers`` processes do not oversubscribe the cores (with
two workers on two cores, each thread of a parallel region would wait for one that the other worker displaced).
Variables the caller set (``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``, ...) are kept.

Cost: one process start per worker (about a second: the imports), plus one per death or time-out;
a job and its result cross a pipe once each (pickled). A process that sends a result gets its next job at once,
before the caller's ``on_done`` records that result: it computes while the parent writes (about 5-10 ms a case
the worker once waited for, with each case recorded).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from .._processes import die_with_parent
from ..engine.config import available_cpus
from ..engine.memory import format_bytes

__all__ = ["THREADS_VARIABLE", "Job", "exit_description", "run_jobs", "worker_threads"]

#: the environment variable that tells a worker process its share of the CPUs (set by :func:`run_jobs`; read by
#: :func:`worker_threads`)
THREADS_VARIABLE = "CCMETRICS_WORKER_THREADS"
#: the thread counts of the libraries a worker may load, each set to its share unless the caller set it
_THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass
class Job:
    """One unit of work: its name (for messages), its payload, and its estimated peak memory in bytes."""

    name: str
    payload: Any
    need_bytes: int = 0
    attempts: int = 0


def exit_description(exitcode: int | None) -> str:
    """How a worker process ended, in words, with the likely cause.

    Examples
    --------
    >>> exit_description(-9)
    'worker killed by signal 9 (SIGKILL) — out of memory?'
    >>> exit_description(-11)
    'worker crashed with signal 11 (SIGSEGV) — a fault in a C extension?'
    >>> exit_description(3)
    'worker exited with code 3'
    """
    if exitcode is None:
        return "worker ended in an unknown way"
    if exitcode >= 0:
        return f"worker exited with code {exitcode}"
    number = -exitcode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = "unknown signal"
    if number == getattr(signal, "SIGKILL", 9):
        return f"worker killed by signal {number} ({name}) — out of memory?"
    if name in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"):
        return f"worker crashed with signal {number} ({name}) — a fault in a C extension?"
    return f"worker ended by signal {number} ({name})"


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Start children with SIGINT ignored (inherited through spawn's exec): Ctrl-C is the parent's to handle."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals cannot be changed here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _child_environment(threads: int) -> Iterator[None]:
    """Start children with the thread counts of their share in their environment (inherited through spawn's exec):
    the libraries read them as they load, numpy's OpenBLAS among the first modules a child imports (its threads
    started for nothing cost about 0.2 s of CPU in each new worker). The caller's own settings are kept."""
    added = [name for name in (THREADS_VARIABLE, *_THREAD_VARIABLES) if name not in os.environ] if threads else []
    for name in added:
        os.environ[name] = str(threads)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@dataclass
class _Raised:
    """What a worker sends back when the job's function raised: the exception in words."""

    message: str


def worker_threads() -> int | None:
    """In a worker process of :func:`run_jobs`: the threads it may use (its share of the CPUs); None elsewhere."""
    value = os.environ.get(THREADS_VARIABLE, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def _cpus() -> int:
    return available_cpus()


def _share_threads(threads: int) -> None:
    """In a new worker process: its libraries' thread counts (already in its environment from the start,
    :func:`_child_environment`: this is the same where it could not be set there)."""
    os.environ[THREADS_VARIABLE] = str(threads)
    for name in _THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))
    numba = sys.modules.get("numba")  # loaded already (by a module of the job's function): limited at once
    if numba is not None:
        with contextlib.suppress(Exception):
            numba.set_num_threads(min(int(os.environ["NUMBA_NUM_THREADS"]), numba.config.NUMBA_NUM_THREADS))


def _leave() -> None:
    """End this worker process now: its results are sent, and it holds nothing to clean up (the parent writes every
    file), so the interpreter's tear-down (a few tenths of a second with the evaluation's modules loaded, which the
    parent would wait for) is skipped."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def _worker_main(
    conn: Any, function: Callable[[Any, Any], Any], shared: Any, parent: int = 0, threads: int = 0
) -> None:
    if threads:
        _share_threads(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent:
        die_with_parent(parent)
    while True:
        try:
            payload = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            _leave()
        if payload is None:
            _leave()
        try:
            result = function(payload, shared)
        except Exception as exc:  # this job's failure, not the process's: it takes the next job
            result = _Raised(f"{type(exc).__name__}: {exc}")
        try:
            conn.send(result)
        except (EOFError, OSError):  # the parent is gone
            _leave()
        except Exception as exc:  # the result cannot be pickled
            conn.send(_Raised(f"its result cannot be sent back: {type(exc).__name__}: {exc}"))


class _Worker:
    def __init__(self, context: Any, function: Callable[[Any, Any], Any], shared: Any, threads: int = 0) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child, function, shared, os.getpid(), threads), daemon=True
        )
        with _sigint_ignored(), _child_environment(threads):
            self.process.start()
        child.close()
        self.job: Job | None = None
        self.started = 0.0
        self.released = False

    def give(self, job: Job) -> None:
        """Hand the job over. Raises ``OSError`` (``BrokenPipeError``) when the process has died, and the
        pickling error when the payload cannot be sent; neither counts as an attempt."""
        self.conn.send(job.payload)
        self.job, self.started = job, time.monotonic()
        job.attempts += 1

    def release(self) -> None:
        """Tell the idle process to end (it exits at once; :meth:`stop` later joins it)."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.released = True

    def stop(self, kill: bool = False) -> None:
        if self.released and not kill:
            pass  # told to end already
        elif self.process.is_alive():
            if kill:
                self.process.kill()
            else:
                with contextlib.suppress(OSError):
                    self.conn.send(None)
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def _context() -> Any:
    return multiprocessing.get_context("spawn")


def _share(workers: int) -> int:
    """Each of ``workers`` processes' share of this process's CPUs, in threads (at least 1)."""
    return max(1, _cpus() // max(1, workers))


def start_workers(function: Callable[[Any, Any], Any], shared: Any, workers: int, count: int) -> list[_Worker]:
    """Start ``count`` (at most ``workers``) processes for :func:`run_jobs` with ``workers`` (its ``started``) before
    the jobs are known: their start-up (the imports, about a second) then overlaps the caller's own preparations.
    :func:`run_jobs` ends them; :func:`stop_workers` ends them where it was not called (or failed)."""
    context, threads = _context(), _share(workers)
    return [_Worker(context, function, shared, threads) for _ in range(max(0, min(count, workers)))]


def stop_workers(started: list[_Worker]) -> None:
    """Kill what is left of processes of :func:`start_workers` (nothing, once :func:`run_jobs` has ended them)."""
    for w in started:
        w.stop(kill=True)


def run_jobs(
    jobs: list[Job],
    function: Callable[[Any, Any], Any],
    shared: Any,
    *,
    workers: int,
    on_done: Callable[[Job, Any], None],
    on_failed: Callable[[Job, str], None],
    note: Callable[[str], None] = print,
    routine: Callable[[str], None] | None = None,
    timeout: float | None = None,
    budget_bytes: float | None = None,
    started: list[_Worker] | None = None,
) -> None:
    """Run ``function(job.payload, shared)`` for every job in ``workers`` processes; see the module docstring.

    ``function`` and ``shared`` must be picklable (a top-level function); ``shared`` is sent once
    per process. ``on_done(job, result)`` and ``on_failed(job, message)`` are called in this process
    as jobs end, in completion order; ``note(text)`` tells of a worker that died and of retries, ``routine(text)``
    (default ``note``) of memory waits. ``started``: processes of :func:`start_workers` (for the same ``function``,
    ``shared`` and ``workers``), used first; this function ends them too.

    A process with no job left to take (none waiting, none to try again) is told to end at once, while the others
    finish their last jobs; a process that dies later costs a new one only if its job must be tried again.
    """
    pool = _Pool(function, shared, workers, on_failed, note, note if routine is None else routine, budget_bytes)
    pool.queue.extend(jobs)
    pool.idle.extend(started or [])
    try:
        while pool.queue or pool.alone or pool.busy:
            if (
                not pool.queue and not pool.alone
            ):  # nothing left for the idle processes: they end while the others finish
                pool.release_idle()
            pool.dispatch()
            if not pool.busy:
                continue
            wait_s = None
            if timeout is not None:
                wait_s = max(0.0, min(w.started + timeout for w in pool.busy) - time.monotonic())
            wait([w.conn for w in pool.busy] + [w.process.sentinel for w in pool.busy], timeout=wait_s)
            now = time.monotonic()
            for w in list(pool.busy):
                pool.settle(w, now, timeout, on_done)
    finally:
        for w in pool.busy + pool.idle + pool.released:
            w.stop(kill=bool(pool.busy))


class _Pool:
    """The state of :func:`run_jobs`: the jobs waiting, those to try again alone, and the processes (idle, busy,
    told to end)."""

    def __init__(
        self,
        function: Callable[[Any, Any], Any],
        shared: Any,
        workers: int,
        on_failed: Callable[[Job, str], None],
        note: Callable[[str], None],
        routine: Callable[[str], None],
        budget_bytes: float | None,
    ) -> None:
        self.function, self.shared, self.workers = function, shared, workers
        self.on_failed, self.note, self.routine, self.budget_bytes = on_failed, note, routine, budget_bytes
        self.context = _context()
        self.threads = _share(workers)  # each worker's share of the CPUs
        self.queue: deque[Job] = deque()
        self.alone: deque[Job] = deque()  # cases whose worker died: tried again with nothing beside them
        self.idle: list[_Worker] = []
        self.released: list[_Worker] = []  # told to end: nothing was left for them
        self.busy: list[_Worker] = []
        self.waited: set[int] = set()

    def worker(self) -> _Worker:
        while self.idle:
            w = self.idle.pop()
            if w.process.is_alive():
                return w
            self.lost(w)
        return _Worker(self.context, self.function, self.shared, self.threads)

    def lost(self, w: _Worker) -> None:
        """A process that died holding no job (the out-of-memory killer may pick an idle one): replaced."""
        w.process.join(timeout=5)
        self.note(f"a worker process died while waiting for a case ({exit_description(w.process.exitcode)}); replaced")
        w.stop(kill=True)

    def release_idle(self) -> None:
        """Tell the idle processes to end: nothing is left for them."""
        self.released += self.idle
        for w in self.idle:
            w.release()
        self.idle.clear()

    def start(self, job: Job) -> None:
        for _ in range(3):  # a process that dies at the hand-over is replaced; three in a row: not by chance
            w = self.worker()
            try:
                w.give(job)
            except (EOFError, OSError):
                self.lost(w)
                continue
            except Exception as exc:  # the payload cannot be pickled: this job's failure
                self.idle.append(w)
                self.on_failed(job, f"cannot be sent to a worker process: {type(exc).__name__}: {exc}")
                return
            self.busy.append(w)
            return
        w = self.worker()
        w.give(job)  # a fourth failure is the pool's, not a case's: it reaches the caller
        self.busy.append(w)

    def finish(self, w: _Worker) -> None:
        self.busy.remove(w)
        w.job = None
        self.idle.append(w)

    def died(self, w: _Worker) -> None:
        self.busy.remove(w)
        job = w.job
        assert job is not None
        w.process.join(timeout=5)
        how = exit_description(w.process.exitcode)
        w.stop(kill=True)
        if job.attempts < 2:
            self.note(f"{job.name}: {how}; trying this case again, alone")
            self.alone.append(job)
        else:
            self.on_failed(job, f"{how} (twice; the second time it ran alone)")

    def dispatch(self) -> None:
        """Hand waiting jobs to free processes: a job tried again alone once nothing runs, else jobs in order while
        processes are free and the memory budget allows."""
        if self.alone:
            if not self.busy:
                self.start(self.alone.popleft())
            return
        while self.queue and len(self.busy) < self.workers:
            job = self.queue[0]
            used = sum(w.job.need_bytes for w in self.busy if w.job is not None)
            if self.busy and self.budget_bytes is not None and used + job.need_bytes > self.budget_bytes:
                if id(job) not in self.waited:
                    self.waited.add(id(job))
                    self.routine(
                        f"{job.name}: needs about {format_bytes(job.need_bytes)} (estimate), so fewer "
                        f"cases run beside it (memory budget {format_bytes(self.budget_bytes)})"
                    )
                break
            self.start(self.queue.popleft())

    def settle(self, w: _Worker, now: float, timeout: float | None, on_done: Callable[[Job, Any], None]) -> None:
        """A busy process after a wait: its result taken (its next job handed over first), or its death or time-out
        handled; nothing while it still computes."""
        current = w.job
        assert current is not None
        if w.conn.poll():
            try:
                result = w.conn.recv()
            except (EOFError, OSError):  # died before or while answering
                self.died(w)
                return
            except Exception as exc:  # a whole message that does not unpickle: the pipe is still in step
                self.finish(w)
                self.on_failed(current, f"its result could not be received: {type(exc).__name__}: {exc}")
                return
            self.finish(w)
            self.dispatch()  # the process's next job first: it computes while this result is recorded here
            if isinstance(result, _Raised):
                self.on_failed(current, f"raised in its worker process: {result.message}")
            else:
                on_done(current, result)
        elif not w.process.is_alive():
            self.died(w)
        elif timeout is not None and now - w.started >= timeout:
            self.busy.remove(w)
            w.stop(kill=True)
            self.on_failed(current, f"took longer than the case time-out ({timeout:g} s): its worker was stopped")
