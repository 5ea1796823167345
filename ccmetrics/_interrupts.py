"""Stop signals that never cut a write in half: the stop exception, critical sections that defer it, and a check.

``ccmetrics evaluate`` turns SIGINT and SIGTERM into :class:`Stop` (a ``KeyboardInterrupt``) so that a run
stops where it is and says how to go on. Raised at an arbitrary bytecode, such an exception can land where it
does harm: half-way through writing a record or a table, inside tqdm's creation of its lock, or in a weakref
callback or ``__del__``, where Python prints "Exception ignored" and the signal is lost. Three tools:

* :func:`critical`: code inside it (writing a record, a table, the manifest; a progress note) is not
  interrupted: a handler that sees :func:`deferring` true calls :func:`defer` instead of raising, and the stop is
  raised when the outermost critical section ends (or dropped there if a stop is already on its way out);
* :func:`raise_if_stopped`: a check between steps that raises :class:`Stop` for a signal whose exception was
  swallowed somewhere (the handler records every signal it receives);
* :class:`Stop` is a subclass, so the interpreter does not mistake it for an unhandled ``KeyboardInterrupt``
  at exit (CPython flags an exact ``KeyboardInterrupt`` leaving code run by ``exec``, and then ends the process by
  SIGINT whatever exit code the program returns).

Only the main thread handles signals, so the state here is the main thread's; other threads never defer.
Cost: a counter and a list.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["Stop", "critical", "defer", "deferring", "raise_if_stopped", "received"]


class Stop(KeyboardInterrupt):
    """A stop signal (SIGINT or SIGTERM) turned into an exception: ``signum`` says which."""

    def __init__(self, signum: int = 0) -> None:
        super().__init__(signum)
        self.signum = signum


_depth = 0
_pending: list[int] = []
#: every stop signal received by the handler of this process (in order), whether or not its exception got through
received: list[int] = []


def deferring() -> bool:
    """Whether the main thread is inside a :func:`critical` section (a handler should then :func:`defer`)."""
    return _depth > 0 and threading.current_thread() is threading.main_thread()


def defer(signum: int) -> None:
    """Keep a stop signal for the end of the outermost critical section."""
    _pending.append(signum)


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """A section that a stop signal does not cut: the stop is raised when the outermost section ends.

    >>> try:
    ...     with critical():
    ...         defer(2)  # as the handler does while deferring()
    ...         print("written")
    ... except Stop as stop:
    ...     print("then stopped by signal", stop.signum)
    written
    then stopped by signal 2
    """
    global _depth
    main = threading.current_thread() is threading.main_thread()
    if main:
        _depth += 1
    try:
        yield
    finally:
        if main:
            _depth -= 1
            if _depth == 0 and _pending:
                signum = _pending[0]
                _pending.clear()
                if not _leaving_with_stop():
                    raise Stop(signum)


def _leaving_with_stop() -> bool:
    import sys

    exc = sys.exc_info()[1]
    return isinstance(exc, KeyboardInterrupt)


def raise_if_stopped() -> None:
    """Raise :class:`Stop` if a stop signal was received whose exception has not reached the code that handles it
    (it was swallowed: by a weakref callback, a ``__del__``, a library's broad ``except``)."""
    if received:
        raise Stop(received[0])
