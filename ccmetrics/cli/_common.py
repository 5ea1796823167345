"""What the sub-commands share: the exit codes, argument types, and the state of a stop (the signals received)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

from .._escaping import printable

__all__ = [
    "EXIT_CASE_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
]

EXIT_OK, EXIT_CASE_FAILED, EXIT_USAGE = 0, 1, 2
#: exit code of an ``evaluate`` that could not go on (a full disk, ...): finished cases kept, ``--resume`` continues
EXIT_RUN_FAILED = 3
#: exit codes of a stopped ``evaluate``: 128 + the signal's number, as shells report it
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


def _classes_arg(text: str):
    from ..metrics.classes import parse_classes

    try:
        return parse_classes(text)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{exc} (e.g. 1,2 or 'wt=1+2+3,tc=2+3,et=3')") from None


def _name_list(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _spacing_arg(text: str):
    if text in ("header", "voxel"):
        return text
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--spacing takes 'header', 'voxel' or numbers like 0.8,0.8,3, got {text!r}"
        ) from None


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM ignored while the last words of a stopped run are printed (a further Ctrl-C would
    only cut them)."""
    previous = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, signal.SIG_IGN)
    except ValueError:
        pass
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _stop_code() -> int:
    """130 after Ctrl-C (SIGINT), 143 after SIGTERM: the first signal received decides."""
    from .._interrupts import received

    return EXIT_TERMINATED if received and received[0] == signal.SIGTERM else EXIT_INTERRUPTED


class _PipeGuard:
    """``sys.stdout`` while a command runs: once the reader of a pipe has left (``ccmetrics ... | head``), what
    is printed further is dropped instead of ending the command with ``BrokenPipeError``; the command finishes
    its work (the tables are written before anything is printed) and returns its own exit code. What is printed
    goes through :func:`ccmetrics._escaping.printable` (``\\n`` kept): a control character of a case id or a
    class name is shown as its escape, never run by the terminal."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(printable(text, newlines=True))  # ids and names: no control character reaches it
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_left()

    def _reader_left(self) -> None:
        self.gone = True
        with contextlib.suppress(AttributeError, OSError, ValueError):  # not a real file (a test's capture)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())  # what the stream still buffers goes nowhere at exit
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def _reader_may_leave() -> Iterator[None]:
    """Run the block with :class:`_PipeGuard` as ``sys.stdout``."""
    real = sys.stdout
    sys.stdout = _PipeGuard(real)
    try:
        yield
    finally:
        guard, sys.stdout = sys.stdout, real
        if getattr(guard, "gone", False):
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                real.flush()


def _say(text: Any) -> None:
    """Print ``text`` on stderr as :func:`ccmetrics._escaping.printable` shows it (``\\n`` kept): every message of
    the command line on stderr goes through here, as its stdout goes through :class:`_PipeGuard`."""
    print(printable(text, newlines=True), file=sys.stderr)


@contextlib.contextmanager
def _printable_warnings() -> Iterator[None]:
    """Python warnings shown as :func:`_say` shows a message (a warning may quote a segment's or a file's name):
    their text formatted through :func:`ccmetrics._escaping.printable`. Only the shown text changes (a caller that
    records warnings gets them as they were); the formatter as it was after the block."""
    import warnings

    plain = warnings.formatwarning

    def shown(message: Any, category: Any, filename: str, lineno: int, line: Any = None) -> str:
        return printable(plain(message, category, filename, lineno, line), newlines=True)

    warnings.formatwarning = shown
    try:
        yield
    finally:
        warnings.formatwarning = plain
