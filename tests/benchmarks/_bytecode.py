"""Compile the package's Python bytecode before a start-up is timed, as an installed package has it.

``pip install`` compiles every module of a package to bytecode (``__pycache__/*.pyc``), and an editable
install writes it on the first import; every later process reads it. An environment that sets
``PYTHONDONTWRITEBYTECODE`` (the machine these benchmarks were run on does) never writes it, so every process
would compile ccmetrics' modules from their source again: about 0.05 s more in each process of a run (the
evaluating process and each worker). The start-up benchmarks call :func:`compile_package` first, so that they
time the start-up of an installed package, and print what it did.
"""

from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path


def compile_package(package: str = "ccmetrics") -> str:
    """Write the bytecode of ``package`` (found on ``sys.path``) where Python reads it; return a line that says so."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{package} is not importable")
    root = Path(spec.origin).parent
    if not compileall.compile_dir(str(root), quiet=1, workers=1):
        raise SystemExit(f"compiling the bytecode of {root} failed")
    flag = os.environ.get("PYTHONDONTWRITEBYTECODE")
    note = f" (PYTHONDONTWRITEBYTECODE={flag} here: Python reads bytecode but never writes it)" if flag else ""
    return (
        f"bytecode of {root} compiled first, as `pip install` leaves a package{note}; Python {sys.version.split()[0]}"
    )
