"""How ``ccmetrics evaluate`` stops: signals turned into a clean stop, and the last words of a stopped or failed run
(what is kept, what is left, the command that goes on)."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from ._common import EXIT_RUN_FAILED, _say, _signals_ignored, _stop_code
from ._text import report


@contextlib.contextmanager
def _stop_signals(restore: bool = True) -> Iterator[None]:
    """For the whole command: SIGINT and SIGTERM raise :class:`ccmetrics._interrupts.Stop` (a
    ``KeyboardInterrupt``: the finished cases are kept, the way to go on is printed), or, inside a critical section
    (a record or table being written), are kept for its end; each is noted in ``_interrupts.received`` (the exit
    code, and the checks that find a stop whose exception was swallowed). On exit the previous handlers come back
    (``restore``) or the signals stay ignored. Nothing changes where signals cannot be handled (not the main
    thread)."""
    from .. import _interrupts

    def handler(signum, frame):
        _interrupts.received.append(signum)
        if _interrupts.deferring():
            _interrupts.defer(signum)
        else:
            raise _interrupts.Stop(signum)

    hook = sys.unraisablehook

    def quiet_about_stops(unraisable):  # a stop raised where Python cannot raise it (a __del__, a weakref callback)
        if not isinstance(unraisable.exc_value, _interrupts.Stop):  # is dropped without a traceback: the checks
            hook(unraisable)  # between the steps find it (raise_if_stopped); any other such error is shown

    previous = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread
        pass
    sys.unraisablehook = quiet_about_stops
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for signum, old in previous.items():
            signal.signal(signum, old if restore else signal.SIG_IGN)


def _command(args: argparse.Namespace) -> str:
    return shlex.join(["ccmetrics", *args.argv])


def _resume_command(args: argparse.Namespace) -> str:
    """The command that continues this run: the same arguments, options written out in full (argparse takes
    unique prefixes such as ``--overw``), without ``--resume`` and ``--overwrite``, then ``--resume``."""
    known = [o for action in args.parser._actions for o in action.option_strings if o.startswith("--")]
    out = []
    for arg in args.argv:
        name, eq, value = arg.partition("=")
        if name.startswith("--") and name not in known:
            matches = [o for o in known if o.startswith(name)]
            name = matches[0] if len(matches) == 1 else name
        if name not in ("--resume", "--overwrite"):
            out.append(name + eq + value)
    return shlex.join(["ccmetrics", *out]) + " --resume"


def _recorded(out: str) -> int:
    """Records in the output folder (finished cases of this run and earlier ones), counted by their files."""
    from ..campaign.records import RECORDS_FOLDER

    folder = Path(out) / RECORDS_FOLDER
    try:
        return sum(1 for p in folder.glob("*.json") if not p.name.startswith("."))
    except OSError:
        return 0


def _say_stopped(args: argparse.Namespace, what: str, finished: int, pending: int | None = None) -> None:
    """The last words of a stopped ``evaluate``: what is kept, what is left, the command that goes on."""
    left = "" if pending is None else f", {pending} not evaluated"
    _say(
        f"\n{what}: {finished} case(s) finished and kept in {Path(args.out) / 'cases'}{left}. To finish, run:\n"
        f"  {_resume_command(args)}"
    )


def _listed(names: list[str]) -> str:
    """Up to 8 names, then how many more."""
    return ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def _say_removed(removed: list[str]) -> None:
    """Name the files of an earlier run that this run's options do not produce (removed by ``DatasetResult.write``)."""
    if not removed:
        return
    print(
        f"Removed {_listed(removed)}: written by an earlier run into this folder, not produced with these options"
        + (" (run `ccmetrics report` again for a report of these tables)" if "report.html" in removed else "")
    )


def _interrupted(stop, args: argparse.Namespace, seconds: float) -> int:
    """Write the tables of the finished cases (a second Ctrl-C skips them), say what is left and how to resume;
    130 (Ctrl-C) or 143 (SIGTERM)."""
    result = stop.result
    finished = result.counts()["cases"] if len(result.per_case) else 0
    note = "The tables written cover the finished cases only."
    if len(result.per_case):
        try:
            summary = result.summary(n_resamples=args.n_resamples, seed=args.seed)
            written = result.write(args.out, plots=False, summary=summary, overwrite=True)
            print(report(result, seconds, summary=summary))
            _say_removed(written["removed"])
        except KeyboardInterrupt:  # a second Ctrl-C: no tables, still the way to go on
            note = "Stopped again while writing the tables of the finished cases: not written."
        except OSError as exc:  # OutputWriteError: a full disk, no permission
            note = f"The tables of the finished cases could not be written ({exc})."
    with _signals_ignored():
        _say(f"\n{note}" if len(result.per_case) else "")
        _say_stopped(args, "Stopped", finished, len(result.run.pending))
    return _stop_code()


def _failed(args: argparse.Namespace, exc: BaseException, result) -> int:
    """The run could not go on (a full disk, ...): say why, what is kept and how to go on; exit 3."""
    import errno

    cause = {
        errno.ENOSPC: "free space on that disk",
        getattr(errno, "EDQUOT", -1): "free space within your disk quota",
        errno.EACCES: "make the output folder writable",
        errno.EPERM: "make the output folder writable",
        errno.EROFS: "give an output folder on a writable file system (or remount it)",
    }
    os_error = next((e for e in _causes(exc) if isinstance(e, OSError)), None)
    fix = cause.get(os_error.errno if os_error is not None else None, "fix the cause")
    finished = result.counts()["cases"] if len(result.per_case) else 0
    pending = len(result.run.pending)
    with _signals_ignored():
        _say(f"ccmetrics evaluate: error: {exc}")
        _say(
            f"{finished} case(s) finished and kept in {Path(args.out) / 'cases'}"
            + (f", {pending} not evaluated" if pending else "; the tables were not (all) written")
            + f". {fix[0].upper() + fix[1:]}, then run:\n  {_resume_command(args)}"
        )
    return EXIT_RUN_FAILED


def _causes(exc: BaseException | None) -> Iterator[BaseException]:
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__
