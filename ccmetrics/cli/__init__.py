"""The ``ccmetrics`` command line: a thin layer over the Python API.

Sub-commands:

* ``ccmetrics evaluate GT_DIR PRED_DIR --out OUT_DIR`` → :func:`ccmetrics.evaluate_dataset`,
  writes ``per_component.csv``, ``per_case.csv``, ``summary.json`` and ``plots/``;
* ``ccmetrics partition GT_FILE OUT_FILE`` → :func:`ccmetrics.voronoi_partition`, written
  with the GT's geometry;
* ``ccmetrics compare RESULT_DIR_A RESULT_DIR_B ... --metric cc_dice`` →
  :func:`ccmetrics.analysis.stats.compare` on the folders' ``per_case.csv``;
* ``ccmetrics report RESULT_DIR --out report.html [--images IMAGE_DIR]`` →
  :func:`ccmetrics.report.write_report`, one self-contained HTML page with every lesion and false
  positive (with ``--images``: its thumbnails drawn on the scans);
* ``ccmetrics warm-up`` → compiles every numba kernel into numba's cache (``NUMBA_CACHE_DIR``).

Exit codes: 0 success; 1 when a case failed (its error row says why);
2 for a usage error or input that cannot be evaluated at all (a missing
folder, an unknown metric, an output folder another run writes into);
3 when ``evaluate`` could not go on (a full disk, a folder that became
read-only: the message names the path) — the finished cases are kept,
``--resume`` continues once the cause is fixed; 130 when ``evaluate`` was
stopped with Ctrl-C (143: SIGTERM), at any moment, the writing of the tables
included — the finished cases are kept, ``--resume`` continues.

:func:`main` returns the exit code (for callers in Python); the program itself
(:func:`run`: the ``ccmetrics`` script, ``python -m ccmetrics``) then ends the
process at once, without the interpreter's tear-down of the loaded libraries.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import _compare, _evaluate, _partition, _report, _warm_up
from ._common import (
    EXIT_CASE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    _printable_warnings,
    _reader_may_leave,
    _say,
    _signals_ignored,
    _stop_code,
)
from ._stop import _recorded, _say_stopped, _stop_signals
from ._text import report

__all__ = [
    "EXIT_CASE_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "build_parser",
    "end_process",
    "main",
    "report",
    "run",
]

_COMMANDS = {
    "evaluate": _evaluate,
    "partition": _partition,
    "compare": _compare,
    "report": _report,
    "warm-up": _warm_up,
}


def build_parser() -> argparse.ArgumentParser:
    """The ``ccmetrics`` command's argument parser (its sub-commands and every option, as ``--help`` shows them)."""
    parser = argparse.ArgumentParser(prog="ccmetrics", description="Segmentation metrics per connected component.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS.values():
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ccmetrics`` with ``argv`` (default: the command line); return the exit code (module docstring).

    SIGINT and SIGTERM stop the command cleanly from the first line on (see ``ccmetrics._interrupts``); on
    the real command line (``argv`` None) they stay ignored after it returns, while the interpreter shuts down,
    so that the exit code is the one returned; a caller that passes ``argv`` gets its handlers back.
    """
    from .. import _interrupts

    _interrupts.received.clear()
    with _stop_signals(restore=argv is not None), _reader_may_leave(), _printable_warnings():
        args = argparse.Namespace(command=None, out=None)
        try:
            args = build_parser().parse_args(argv)
            args.argv = list(argv) if argv is not None else sys.argv[1:]  # to print the command that resumes
            try:
                return _COMMANDS[args.command].run(args)
            except (ValueError, TypeError, OSError, ImportError) as exc:  # OSError: missing files, unreachable --dask
                _say(f"ccmetrics {args.command}: error: {exc}")
                return EXIT_USAGE
        except KeyboardInterrupt:  # wherever it came: no traceback, and for `evaluate` the way to go on
            with _signals_ignored():
                if args.command == "evaluate" and args.out is not None and hasattr(args, "argv"):
                    _say_stopped(args, "Stopped", _recorded(args.out))
                else:
                    _say(f"ccmetrics{' ' + args.command if args.command else ''}: stopped")
            return _stop_code()


def run() -> NoReturn:
    """The ``ccmetrics`` program (its console script and ``python -m ccmetrics``): :func:`main` on the command
    line, then the process ends at once with main's exit code.

    A finished command has written and closed every file it makes. What is left is the interpreter's tear-down
    of the libraries the command loaded (pandas, scipy, matplotlib), 0.3-0.4 s of a small evaluation's 2.5 s
    here, which nothing a user waits for needs. So the ``atexit`` handlers run (multiprocessing's, logging's,
    Dask's), the output streams are flushed, and ``os._exit`` ends the process with the exit code. An exception
    that escapes :func:`main`, or ``SystemExit`` (``--help``, a usage error), ends it the usual way.
    """
    end_process(main())


def end_process(code: int) -> NoReturn:
    """End this process now with exit code ``code``, as the ``ccmetrics`` program ends (:func:`run`): the ``atexit``
    handlers run, standard output and error are flushed, and the interpreter's tear-down is skipped
    (``os._exit``). For a process whose work is done and whose files are closed."""
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
