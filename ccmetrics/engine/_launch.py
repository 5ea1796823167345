"""Launching ccmetrics' numba kernels: one signature each, compiled on first use, shared between the CPU cores.

Start-up. numba compiles a kernel the first time it is called (or loads it from its cache: ``__pycache__``
beside the code, or ``NUMBA_CACHE_DIR``), once for every combination of argument types it meets. Each kernel
here is a :class:`Kernel`: compiled for its one signature (arrays of layout ``A`` accept any strides, so one
machine-code version serves C-ordered arrays and transposed views alike) when it is first called, never
for another; the callers convert their arguments to it. A module of kernels is imported only when one of its
kernels is needed, so a call compiles only what it uses. :func:`warm_up` compiles every kernel into the
cache (``ccmetrics warm-up``).

Cores. The kernels are serial and release the GIL; :func:`share` runs one on slices of its work in Python
threads (:func:`ccmetrics.engine.config.thread_count` of them, as the engine's other work), which costs no
compilation (numba's ``parallel=True`` doubled the compile time of a kernel) and no threading layer. One
lock keeps one shared launch at a time: each already keeps every core busy. Values never depend on the
threads: each slice is computed as a whole, by the same code.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from .config import thread_count

__all__ = ["HELPER_OPTIONS", "KERNEL_OPTIONS", "MODULES", "PARALLEL", "Kernel", "share", "warm_up"]

PARALLEL = threading.Lock()

#: the modules of numba kernels (``ccmetrics.engine.<name>``), each imported on first use
MODULES = ("_edge_kernels", "_kdtree", "_nearest_label", "_order_statistics", "_sphere_kernels")

#: numba's options for a kernel (a function called from Python through a :class:`Kernel`): cached, releasing the
#: GIL, numpy's error model (no exception raised for a division by zero), and no C-callable wrapper (numba's
#: ``cfunc`` wrapper of every function: a kernel is never called from C)
KERNEL_OPTIONS: dict[str, Any] = {"cache": True, "nogil": True, "error_model": "numpy", "no_cfunc_wrapper": True}
#: numba's options for a helper called from kernels only: no Python wrapper either (the code that unboxes and
#: boxes its arguments, compiled for each function: about a tenth less time to compile the kernels that call
#: helpers; the machine code a kernel runs is the same)
HELPER_OPTIONS: dict[str, Any] = {**KERNEL_OPTIONS, "no_cpython_wrapper": True}

_KERNELS: list[Kernel] = []
_COMPILING = threading.Lock()


class Kernel:
    """A numba dispatcher called from Python with one signature only, compiled (or loaded) on first call.

    Arguments are converted to the signature's types as numba converts them (a C-ordered array to layout
    ``A``, an int to float64); others are refused (``TypeError``), so that no second version is compiled.
    A kernel needed for two signatures is two :class:`Kernel` objects, each with its own dispatcher of the same
    function and a ``variant`` that tells their names apart.
    """

    def __init__(self, dispatcher: Any, signature: str, variant: str = ""):
        self.dispatcher = dispatcher
        self.signature = signature
        self.name = f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__name__}" + (
            f"[{variant}]" if variant else ""
        )
        self._ready = False
        _KERNELS.append(self)

    def compile(self) -> None:
        """Compile the signature, or load it from numba's cache (once per process)."""
        if self._ready:
            return
        with _COMPILING:
            if not self._ready:
                self.dispatcher.compile(self.signature)
                self.dispatcher.disable_compile()
                self._ready = True

    def __call__(self, *args: Any) -> Any:
        self.compile()
        return self.dispatcher(*args)


def share(kernel: Kernel, n: int, args: Sequence[Any], chunk: int) -> None:
    """``kernel(*args, first, stop)`` over ``range(n)`` in slices of ``chunk``, in worker threads (at most
    :func:`~ccmetrics.engine.config.thread_count`; none for a single slice)."""
    kernel.compile()
    slices = [(first, min(n, first + chunk)) for first in range(0, n, max(1, chunk))]
    threads = min(thread_count(), len(slices))
    with PARALLEL:
        if threads < 2:
            for first, stop in slices:
                kernel(*args, first, stop)
            return
        run: Callable[[tuple[int, int]], Any] = lambda s: kernel.dispatcher(*args, *s)  # noqa: E731
        list(_pool(threads).map(run, slices))


_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process's pool of ``threads`` kernel threads, started once (and again in a forked child, whose copy
    of the parent's threads does not run)."""
    key = (os.getpid(), threads)
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ThreadPoolExecutor(threads, thread_name_prefix="ccmetrics-kernel")
    return pool


def warm_up() -> list[tuple[str, float, bool]]:
    """Compile every kernel (or load it from the cache): ``(name, seconds, compiled)`` for each, compiled False
    where numba's cache held it already."""
    for module in MODULES:
        importlib.import_module(f"{__package__}.{module}")
    done = []
    for kernel in _KERNELS:
        before = sum(kernel.dispatcher.stats.cache_misses.values())
        start = time.perf_counter()
        kernel.compile()
        seconds = time.perf_counter() - start
        done.append((kernel.name, seconds, sum(kernel.dispatcher.stats.cache_misses.values()) > before))
    return done
