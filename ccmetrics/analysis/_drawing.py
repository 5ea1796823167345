"""Figures drawn and written on two cores: the figures of a result folder, shared between this process and a fork.

A result folder's figures (:func:`ccmetrics.analysis.plots.write_result_plots`) are independent: each is built from
the tables, laid out, drawn and written as a PNG, about 0.1-0.4 s each, all of it in matplotlib's Python code
(one core). :func:`write_figures` takes them as *jobs*, a file name and a function that returns the figure, and
where it can (Linux, two cores or more, two jobs or more, no other Python thread running) forks once: the two
processes take the jobs one at a time from a shared pipe (the larger figures first, as given), so neither waits
while the other has work. A fork made here inherits matplotlib and the tables: nothing is pickled, nothing imported
again. Within :func:`drawing_ahead` (``ccmetrics evaluate``) the helper was forked when the run began, at the
lowest priority, and has imported matplotlib meanwhile; the jobs reach it pickled, in an unnamed temporary file.

Nothing is lost and nothing is written twice:

* each process writes its figures with :func:`ccmetrics._files.atomic_write` (a temporary file named by its own
  pid, renamed over the target), and the fork reports each job it has written through a second pipe;
* a job the fork did not report (it failed, was killed, or did not end within ``max(60 s, 10 x`` this process's
  own drawing time ``)``, when it is killed) is drawn again here, so that its error, if any, is raised here as
  without the fork, and any temporary file the fork left is removed;
* a stop signal or an error here stops the fork too (SIGTERM, SIGKILL after 1 s) before it goes on; Ctrl-C reaches
  both processes, and ``ccmetrics evaluate``'s handlers let each finish the file it is writing; a fork whose parent
  dies is killed by the kernel (``PR_SET_PDEATHSIG``);
* a system that refuses a pipe, the temporary file or the fork, or jobs that cannot be pickled: every figure is
  drawn here, one after another.

Cost: one ``fork`` (a few ms: the page tables; memory is shared until written) and two pipes. On the 30 maps of
``tests/benchmarks/bench_picai.py`` (eight figures) the figures took about 2.1 s on one core.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .._files import atomic_write, temporary_path
from .._processes import die_with_parent

__all__ = ["FigureJob", "can_fork", "drawing_ahead", "save_png", "write_figures"]

#: a figure's file name in the output folder, and the function that builds the figure (a matplotlib Figure)
FigureJob = tuple[str, Callable[[], Any]]

_INDEX = struct.Struct("<I")  # a job's index, as passed through the pipes (4 bytes: atomic on a pipe)
_WAIT_AT_LEAST_S = 60.0
_WAIT_FACTOR = 10.0
_ahead: _Helper | None = None  # the helper of the current drawing_ahead block, until write_figures takes it


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether :func:`write_figures` shares its jobs with a fork here: Linux, two cores or more, and no Python thread
    but this one (a fork copies only the calling thread; a lock another thread holds would stay held in the fork)."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and _cores() >= 2
        and threading.active_count() == 1
        and threading.current_thread() is threading.main_thread()
    )


def _write(job: FigureJob, out: Path) -> Path:
    name, make = job
    figure = make()
    return atomic_write(out / name, lambda tmp: save_png(figure, tmp))


def save_png(figure: Any, path: Any, dpi: int = 120) -> None:
    """``figure.savefig(path, dpi=dpi)``, the same bytes, its layout computed once: ``savefig`` runs a figure's layout
    engine twice, in a first pass that draws nothing and again in the drawing; here the engine runs once at ``dpi``
    and is then removed (the axes keep its positions). About 12 % less time on the figures of a result folder.

    >>> import io
    >>> from ccmetrics.analysis.plots import _figure
    >>> ax = _figure((3, 2))[0]
    >>> _ = ax.set(title="a title", xlabel="x")
    >>> once, twice = io.BytesIO(), io.BytesIO()
    >>> ax.figure.savefig(twice, dpi=120, format="png")
    >>> save_png(ax.figure, once, dpi=120)
    >>> once.getvalue() == twice.getvalue()
    True
    """
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    engine = figure.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        figure.set_dpi(dpi)
        engine.execute(figure)
        figure.set_layout_engine(None)
    figure.savefig(path, dpi=dpi, format="png")


def write_figures(jobs: Sequence[FigureJob], out_dir: Any, *, fork: bool | None = None) -> list[Path]:
    """Build and write each job's figure as ``out_dir/<name>`` (120 dpi PNG), two at a time where :func:`can_fork`;
    the paths in the order of ``jobs``. Within :func:`drawing_ahead`, its helper (already warm) takes jobs too.

    ``fork``: None decides by :func:`can_fork`; False draws every figure here, one after another; True forks
    wherever ``os.fork`` exists (the tests). The files are the same either way.

    Examples
    --------
    >>> import tempfile
    >>> from ccmetrics.analysis.plots import _figure
    >>> def square():
    ...     ax = _figure((2, 2))[0]
    ...     ax.plot([0, 1], [0, 1])
    ...     return ax.figure
    >>> paths = write_figures([("a.png", square), ("b.png", square)], tempfile.mkdtemp())
    >>> [p.name for p in paths], all(p.stat().st_size > 0 for p in paths)
    (['a.png', 'b.png'], True)
    """
    global _ahead
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = list(jobs)
    helper, _ahead = _ahead, None  # (a helper takes one set of jobs)
    if helper is not None and fork is not False and len(jobs) >= 2:
        try:
            blob = pickle.dumps((out, jobs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 (a job that cannot travel: drawn without the helper)
            helper.release(signal.SIGTERM)
        else:
            return _share(helper, jobs, out, blob)
    elif helper is not None:
        helper.release(signal.SIGTERM)
    if fork is None:
        fork = len(jobs) >= 2 and can_fork()
    if not fork or len(jobs) < 2 or not hasattr(os, "fork"):
        return [_write(job, out) for job in jobs]
    _warm_up()  # (once, here: the fork inherits it)
    helper = _Helper.start(jobs, out)
    if helper is None:  # no pipe, no fork (a limit of the system): every figure here
        return [_write(job, out) for job in jobs]
    return _share(helper, jobs, out, None)


@contextlib.contextmanager
def drawing_ahead(enabled: bool = True, *, fork: bool | None = None) -> Iterator[None]:
    """Within the block, a helper process forked now imports matplotlib and draws a tiny figure (about 0.8 s of
    one core here), at the lowest priority, while this process computes what the figures show; the figures that
    :func:`ccmetrics.analysis.plots.write_result_plots` (and the other ``write_*`` functions) then write are shared
    with it, one at a time. The helper ends with the block, used or not. ``ccmetrics evaluate`` runs within one.

    Only on Linux with two cores or more, in a process of one thread (``fork=None``; True forks wherever ``os.fork``
    exists, False never); elsewhere the block does nothing. Jobs that cannot be pickled are drawn in this process.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from ccmetrics.analysis.plots import drawing_ahead, write_plots
    >>> per_case = pd.DataFrame({"case": ["a", "b"], "class": 1, "status": "ok", "empty_gt": False,
    ...     "dice": [0.87, 0.7], "cc_dice": [0.45, 0.7]})
    >>> with drawing_ahead():
    ...     paths = write_plots(None, per_case, tempfile.mkdtemp())
    >>> [p.name for p in paths]
    ['standard_vs_cc_dice.png', 'case_distribution.png']
    """
    global _ahead
    if not enabled or not (can_fork() if fork is None else fork and hasattr(os, "fork")):
        yield
        return
    outer, helper = _ahead, _Helper.start(None, None)  # (None: no fork possible here; the figures are drawn alone)
    _ahead = helper
    try:
        yield
    finally:
        _ahead = outer
        if helper is not None:
            helper.release(signal.SIGTERM)  # (unused, or released already: it holds no file of the output)


class _Helper:
    """A forked process that draws jobs: those it inherits (``jobs``), or, started ahead, those pickled into its
    ``shared`` file once ``go`` is written. Both processes take job indices from the ``todo`` pipe, all written
    before either reads (its read end non-blocking: empty means done); the helper reports each written through
    ``done``. ``fds``: this process's descriptors still open (each closed once, never a number reused since)."""

    def __init__(self, pid: int, todo_r: int, todo_w: int, done_r: int, go_w: int, shared: Any) -> None:
        self.pid, self.todo_r, self.todo_w, self.done_r, self.go_w = pid, todo_r, todo_w, done_r, go_w
        self.shared = shared
        self.fds = {todo_r, todo_w, done_r, go_w}
        self.closed = False

    def close_fd(self, fd: int) -> None:
        if fd in self.fds:
            self.fds.discard(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    @classmethod
    def start(cls, jobs: list[FigureJob] | None, out: Path | None = None) -> _Helper | None:
        """Fork the helper (``jobs``: inherited, their indices queued now); None where the system refuses a pipe,
        the temporary file or the fork (the caller draws alone)."""
        made: list[int] = []
        shared = None
        try:
            for _ in range(3):
                made += os.pipe()
            todo_r, todo_w, done_r, done_w, go_r, go_w = made
            os.set_blocking(todo_r, False)
            if jobs is not None:
                _queue(todo_w, len(jobs))
            shared = tempfile.TemporaryFile() if jobs is None else None  # (no name: gone with its last descriptor)
            sys.stdout.flush()
            sys.stderr.flush()
            parent = os.getpid()
            pid = os.fork()
        except OSError:
            for fd in made:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if shared is not None:
                shared.close()
            return None
        if pid == 0:  # the helper: never returns
            code = 1
            try:
                die_with_parent(parent)
                for fd in (todo_w, done_r, go_w):
                    os.close(fd)
                if jobs is None:
                    os.nice(19)  # started ahead: only a core nothing else wants (the cases' workers come first)
                    _warm_up()
                    if os.read(go_r, 1) == b"1":  # (end of file: the block ended without figures)
                        assert shared is not None
                        shared.seek(0)
                        out, jobs = pickle.load(shared)
                if jobs is not None and out is not None:
                    for i in _take(todo_r):
                        _write(jobs[i], out)
                        os.write(done_w, _INDEX.pack(i))
                code = 0
            except BaseException:  # noqa: BLE001 (its jobs are drawn again by the parent, which raises the error)
                pass
            finally:
                with contextlib.suppress(BaseException):
                    sys.stderr.flush()
                os._exit(code)
        os.close(done_w)
        os.close(go_r)
        return cls(pid, todo_r, todo_w, done_r, go_w, shared)

    def close(self, signum: int | None = None) -> None:
        """End the helper (``signum``: signal it first; SIGKILL after a grace time) and reap it; the write ends of
        the pipes closed (the read ends stay for :meth:`release`)."""
        self.close_fd(self.todo_w)
        self.close_fd(self.go_w)
        if not self.closed:
            _end(self.pid, signum, grace_s=1.0)
            self.closed = True

    def release(self, signum: int | None = None) -> None:
        """:meth:`close`, then every descriptor and the shared file closed."""
        self.close(signum)
        for fd in list(self.fds):
            self.close_fd(fd)
        if self.shared is not None:
            self.shared.close()


def _queue(fd: int, n: int) -> None:
    """Write the job indices 0 to ``n - 1`` into the pipe ``fd`` (whole, however the writes are cut)."""
    data = memoryview(b"".join(_INDEX.pack(i) for i in range(n)))
    while len(data):
        data = data[os.write(fd, data) :]


def _share(helper: _Helper, jobs: list[FigureJob], out: Path, blob: bytes | None) -> list[Path]:
    """Draw ``jobs`` here and in ``helper`` (``blob``: the pickled ``(out, jobs)`` it has not inherited)."""
    paths: dict[int, Path] = {}
    drawn: set[int] = set()
    ended = False
    try:
        if blob is not None:
            try:
                assert helper.shared is not None
                _queue(helper.todo_w, len(jobs))  # (in the pipe before the helper reads it)
                helper.shared.write(blob)
                helper.shared.flush()
                del blob
                os.write(helper.go_w, b"1")
            except OSError:  # a full temporary folder, a helper that has died: every job drawn here
                helper.close(signal.SIGKILL)
        helper.close_fd(helper.todo_w)
        start = time.perf_counter()
        for i in _take(helper.todo_r):
            paths[i] = _write(jobs[i], out)
        own_s = time.perf_counter() - start
        if not helper.closed:
            drawn = _reports(helper.done_r, deadline=time.monotonic() + max(_WAIT_AT_LEAST_S, _WAIT_FACTOR * own_s))
        helper.close()  # (its pipe is closed: it is exiting)
        ended = True
    finally:
        if not ended:  # a stop or an error here: the helper is stopped as this process would be, then killed
            helper.close(signal.SIGTERM)
        helper.release()
        for i, (name, _) in enumerate(jobs):  # what a killed helper left half-written
            if i not in drawn:
                with contextlib.suppress(OSError):
                    temporary_path(out / name, helper.pid).unlink()
    for i, job in enumerate(jobs):
        if i not in paths and i not in drawn:  # the helper's job that it did not finish: drawn here, any error raised
            paths[i] = _write(job, out)
        elif i not in paths:
            paths[i] = out / job[0]
    return [paths[i] for i in range(len(jobs))]


def _warm_up() -> None:
    """What every first figure of a process pays (matplotlib's and PIL's imports, the font file, the text layout
    caches: about 0.8 s of one core here), paid once before the fork, which inherits it, or by the helper of
    :func:`drawing_ahead`: a tiny figure drawn into memory."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(1, 1), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    ax.plot([1, 10], [1, 2], "o-", label="a")
    ax.set(xscale="log", title="a", xlabel="a")
    ax.legend()
    figure.savefig(io.BytesIO(), format="png", dpi=20)


def _take(fd: int):
    """Job indices read one at a time from the shared pipe ``fd`` (non-blocking, every index written before) until
    it is empty."""
    while True:
        try:
            raw = os.read(fd, _INDEX.size)
        except BlockingIOError:  # empty: no job left
            return
        if len(raw) < _INDEX.size:  # (end of file, or a cut read: never with writes of whole indices)
            return
        yield _INDEX.unpack(raw)[0]


def _reports(fd: int, deadline: float) -> set[int]:
    """The indices the helper reported written, read until it closes its end (it ended) or the deadline passes."""
    drawn: set[int] = set()
    pending = b""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            return drawn  # too late: the helper is killed, its unreported jobs drawn here
        raw = os.read(fd, 4096)
        if not raw:
            return drawn
        pending += raw
        whole = len(pending) - len(pending) % _INDEX.size
        drawn.update(i for (i,) in _INDEX.iter_unpack(pending[:whole]))
        pending = pending[whole:]


def _end(pid: int, first: int | None, grace_s: float) -> None:
    """Send the helper signal ``first`` (None: none), wait up to ``grace_s`` for it to end, then kill and reap it,
    whatever interrupts the wait (a second stop signal)."""
    try:
        if first is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, first)
        for _ in range(max(1, int(grace_s / 0.01))):
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
            time.sleep(0.01)
    except ChildProcessError:  # (already reaped)
        return
    finally:
        with contextlib.suppress(ChildProcessError, ProcessLookupError):
            if not os.waitpid(pid, os.WNOHANG)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
