"""Tests of ccmetrics.analysis._drawing: figures shared with a fork are the same files as drawn in one process, and a
fork that fails, is killed, hangs or is stopped loses no figure and leaves no temporary file (real faults: a real
SIGKILL, a real hang, a real SIGINT)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ccmetrics.analysis import _drawing
from ccmetrics.analysis._drawing import can_fork, write_figures
from ccmetrics.analysis.plots import _figure

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")

PARENT = os.getpid()


def square(k=0):
    ax = _figure((2, 2))[0]
    ax.plot([0, 1, 2], [0, 1, k])
    ax.set_title(f"figure {k}")
    return ax.figure


def in_fork_only(action, k=0):
    """A figure job that does ``action`` in the fork (a process other than the test's), and draws normally here."""
    if os.getpid() != PARENT:
        action()
    return square(k)


def jobs(n=6, **special):
    out = [(f"f{k}.png", lambda k=k: square(k)) for k in range(n)]
    for k, make in special.items():
        out[int(k[1:])] = (f"f{k[1:]}.png", make)
    return out


def files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def expected(tmp_path):
    folder = tmp_path / "one-process"
    write_figures(jobs(), folder, fork=False)
    return files(folder)


def test_forked_figures_are_the_files_of_one_process_in_the_order_of_the_jobs(tmp_path, expected):
    paths = write_figures(jobs(), tmp_path / "forked", fork=True)
    assert [p.name for p in paths] == [f"f{k}.png" for k in range(6)]
    assert files(tmp_path / "forked") == expected


def test_the_forks_failed_job_is_drawn_here(tmp_path, expected):
    def fail():
        raise RuntimeError("only in the fork")

    made = jobs(**{f"_{k}": (lambda k=k: in_fork_only(fail, k)) for k in range(6)})
    write_figures(made, tmp_path / "out", fork=True)
    assert files(tmp_path / "out") == expected


def test_an_error_of_every_process_is_raised_here(tmp_path):
    def broken():
        raise ValueError("no such column")

    with pytest.raises(ValueError, match="no such column"):
        write_figures(jobs(**{"_3": broken}), tmp_path / "out", fork=True)


def test_a_fork_killed_by_sigkill_loses_no_figure_and_leaves_no_temporary_file(tmp_path, expected):
    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    made = jobs(**{f"_{k}": (lambda k=k: in_fork_only(die, k)) for k in range(6)})
    write_figures(made, tmp_path / "out", fork=True)
    assert files(tmp_path / "out") == expected


def test_a_hanging_fork_is_killed_and_its_figures_drawn_here(tmp_path, expected, monkeypatch):
    monkeypatch.setattr(_drawing, "_WAIT_AT_LEAST_S", 2.0)
    monkeypatch.setattr(_drawing, "_WAIT_FACTOR", 1.0)
    made = jobs(**{f"_{k}": (lambda k=k: in_fork_only(lambda: time.sleep(600), k)) for k in range(6)})
    start = time.monotonic()
    write_figures(made, tmp_path / "out", fork=True)
    assert time.monotonic() - start < 60
    assert files(tmp_path / "out") == expected


def test_a_stop_signal_ends_the_fork_too(tmp_path):
    """A real SIGINT to this process while it draws: the fork is ended before the stop goes on, nothing half-written."""
    script = textwrap.dedent(
        f"""
        import os, signal, sys, time
        from ccmetrics.analysis._drawing import write_figures
        from ccmetrics.analysis.plots import _figure

        parent, drawn = os.getpid(), []

        def job(k):
            if os.getpid() != parent:
                open({str(tmp_path / "fork.pid")!r}, "w").write(str(os.getpid()))
                time.sleep(600)
            drawn.append(k)
            if len(drawn) == 2:  # the fork has taken its job by now
                time.sleep(1.0)
                os.kill(parent, signal.SIGINT)
            ax = _figure((2, 2))[0]
            ax.plot([0, 1], [0, k])
            return ax.figure

        try:
            write_figures([(f"f{{k}}.png", lambda k=k: job(k)) for k in range(8)], {str(tmp_path / "out")!r}, fork=True)
        except KeyboardInterrupt:
            print("stopped")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "stopped", done.stderr
    fork = int((tmp_path / "fork.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(fork, 0)  # ended and reaped
    assert not [p.name for p in (tmp_path / "out").iterdir() if ".tmp" in p.name]


def test_no_fork_while_another_thread_runs():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_fork()
    finally:
        stop.set()
        thread.join()


def marked_square(k, marks):
    """``square(k)``, leaving a file named by the process that drew it."""
    if marks is not None:
        (marks / f"{k}.{os.getpid()}").touch()
    return square(k)


def picklable_jobs(n=6, marks=None):
    from functools import partial

    return [(f"f{k}.png", partial(marked_square, k, marks)) for k in range(n)]


def test_a_helper_started_ahead_draws_its_share_of_the_same_files(tmp_path, expected):
    with _drawing.drawing_ahead(fork=True):
        helper = _drawing._ahead
        assert helper is not None
        time.sleep(1.5)  # warm by now
        (tmp_path / "marks").mkdir()
        write_figures(picklable_jobs(marks=tmp_path / "marks"), tmp_path / "out")
    assert files(tmp_path / "out") == expected
    by = sorted(int(p.name.split(".")[1]) for p in (tmp_path / "marks").iterdir())
    assert helper.pid in by and os.getpid() in by and len(by) == 6  # both drew, each figure once
    with pytest.raises(ChildProcessError):
        os.waitpid(helper.pid, os.WNOHANG)  # ended and reaped


def test_a_helper_killed_before_the_figures_loses_none(tmp_path, expected):
    with _drawing.drawing_ahead(fork=True):
        os.kill(_drawing._ahead.pid, signal.SIGKILL)
        time.sleep(0.2)
        write_figures(picklable_jobs(), tmp_path / "out")
    assert files(tmp_path / "out") == expected


def test_jobs_that_cannot_be_pickled_are_drawn_here_and_an_unused_helper_ends_with_its_block(tmp_path, expected):
    with _drawing.drawing_ahead(fork=True):
        first = _drawing._ahead
        write_figures(jobs(), tmp_path / "out")  # lambdas: not picklable
        assert _drawing._ahead is None
    assert files(tmp_path / "out") == expected
    with _drawing.drawing_ahead(fork=True):
        unused = _drawing._ahead
    for helper in (first, unused):
        with pytest.raises(ChildProcessError):
            os.waitpid(helper.pid, os.WNOHANG)
