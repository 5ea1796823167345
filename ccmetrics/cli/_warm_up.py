"""``ccmetrics warm-up``: compile every numba kernel into numba's cache, once for a machine or a cluster.

numba keeps its compiled kernels in ``__pycache__`` beside the code, or in ``NUMBA_CACHE_DIR`` when it is set
(e.g. a folder on storage every worker of a cluster reads: one warm-up serves them all, as long as they run
the same ccmetrics, numba and CPU kind). A process that finds a kernel there loads it instead of compiling it.
Without a warm-up a kernel is compiled only for work that pays for its compile (``EngineConfig.compile_*_from``),
numpy, scipy and cc3d serving smaller tasks with the same values, more slowly; once the cache holds the kernels (a
marker, ``ccmetrics-kernels.json``, written beside the cache says so), every task that gains from them uses them.
"""

from __future__ import annotations

import argparse
import os
import time

from ._common import EXIT_OK


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``warm-up`` sub-command."""
    return sub.add_parser(
        "warm-up",
        help="compile every numba kernel into numba's cache (NUMBA_CACHE_DIR, or __pycache__)",
        description="Compile every numba kernel of ccmetrics, or load it from numba's cache, so that later runs "
        "(also other processes and machines sharing the cache folder) compile nothing and use the kernels "
        "wherever they are faster (without it, a kernel is compiled only for work that pays for its compile). "
        "The cache is NUMBA_CACHE_DIR when set, else __pycache__ beside the installed code.",
    )


def run(args: argparse.Namespace) -> int:
    from ..engine import warm_up

    start = time.perf_counter()
    done = warm_up()
    for name, seconds, compiled in done:
        print(f"{'compiled' if compiled else 'cached  '} {seconds:6.2f} s  {name}")
    n_compiled = sum(compiled for _, _, compiled in done)
    where = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside the code"
    print(
        f"{len(done)} kernels ready in {time.perf_counter() - start:.1f} s: {n_compiled} compiled, "
        f"{len(done) - n_compiled} from the cache ({where})"
    )
    return EXIT_OK
