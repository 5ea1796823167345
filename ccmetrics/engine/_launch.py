"""Launching ccmetrics' numba kernels: one signature each, compiled on first use, shared between the CPU cores.

Start-up. numba compiles a kernel the first time it is called (or loads it from its cache: ``__pycache__``
beside the code, or ``NUMBA_CACHE_DIR``), once for every combination of argument types it meets. Each kernel
here is a :class:`Kernel`: compiled for its one signature (arrays of layout ``A`` accept any strides, so one
machine-code version serves C-ordered arrays and transposed views alike) when it is first called, never
for another; the callers convert their arguments to it. A module of kernels is imported only when one of its
kernels is needed, so a call compiles only what it uses. :func:`warm_up` compiles every kernel into the
cache (``ccmetrics warm-up``).

When a kernel pays. Compiling a kernel costs 0.2-3 s (its load from the cache about 0.05 s, numba's import
0.5 s), while numpy, scipy or cc3d do the same work more slowly, with the same values. :func:`pays` tells a
caller whether a task of some size goes to the kernels of a module, from three thresholds of
:class:`ccmetrics.EngineConfig` by what this process has: the kernels already compiled or loaded here; numba's
cache holding them (``import_from`` while numba is not loaded); or neither (``compile_from``: the kernels are
compiled only for work that pays for it). Tasks that the fallback served although the kernels would have served
them once loaded are counted per module, and once they reach the threshold together the kernels serve the next
ones: a process that evaluates many cases pays the compile once. Whether numba's cache holds a module's kernels
is read from a marker this module writes beside the cache (``ccmetrics-kernels.json`` in ``NUMBA_CACHE_DIR``, or in
``__pycache__`` beside the kernels, else in the user's cache folder) whenever a kernel has been compiled or loaded,
keyed by the module's file and its modification time and size (numba's own key) and by the numba and Python
versions; no numba name is read. A stale marker costs time only (a compile where a load was expected).

Cores. The kernels are serial and release the GIL; :func:`share` runs one on slices of its work in Python
threads (:func:`ccmetrics.engine.config.thread_count` of them, as the engine's other work), which costs no
compilation (numba's ``parallel=True`` doubled the compile time of a kernel) and no threading layer. One
lock keeps one shared launch at a time: each already keeps every core busy. Values never depend on the
threads: each slice is computed as a whole, by the same code.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from .config import thread_count

__all__ = ["HELPER_OPTIONS", "KERNEL_OPTIONS", "MODULES", "PARALLEL", "Kernel", "pays", "share", "threshold", "warm_up"]

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
#: modules (``_kdtree``, ...) with a kernel compiled or loaded in this process
_READY: set[str] = set()
#: per module, the work its fallback served in this process from the kernels' loaded threshold
_SERVED: dict[str, int] = {}
_SERVED_LOCK = threading.Lock()
#: the marker of each folder of :func:`_marker_folders`, read once per process: module file -> its entry
_MARKED: list[dict[str, Any]] = []
MARKER = "ccmetrics-kernels.json"
_KEYS: dict[str, tuple[str, list[Any]] | None] = {}


class Kernel:
    """A numba dispatcher called from Python with one signature only, compiled (or loaded) on first call.

    Arguments are converted to the signature's types as numba converts them (a C-ordered array to layout
    ``A``, an int to float64); others are refused (``TypeError``), so that no second version is compiled.
    A kernel needed for two signatures is two :class:`Kernel` objects, each with its own dispatcher of the same
    function and a ``variant`` that tells their names apart.
    """

    def __init__(self, dispatcher: Any, signature: str, variant: str = "", read_only: Sequence[int] = ()):
        """``signature``: numba's signature as text (``"void(int64[:], float64[:])"``); ``read_only``: the positions
        of the array arguments the kernel only reads, typed read-only (what the text cannot say), so that a read-only
        array (``np.load``'s memory map, ``np.frombuffer``) is taken as well as a writeable one."""
        self.dispatcher = dispatcher
        self.signature: Any = _read_only(signature, read_only) if read_only else signature
        self.variant = variant
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
                module = self.dispatcher.py_func.__module__.rsplit(".", 1)[-1]
                module += f"[{self.variant}]" if self.variant else ""
                _READY.add(module)
                _mark(module)

    def __call__(self, *args: Any) -> Any:
        self.compile()
        return self.dispatcher(*args)


def _read_only(signature: str, positions: Sequence[int]) -> Any:
    """numba's signature of ``signature`` with the array arguments at ``positions`` read-only (a writeable array
    converts to one; numba refuses the other way)."""
    from numba.core import sigutils  # a kernel's module has imported numba already

    args, result = sigutils.normalize_signature(signature)
    typed = tuple(arg.copy(readonly=True) if i in positions else arg for i, arg in enumerate(args))
    return typed if result is None else result(*typed)  # no result type given: numba infers it, as from the text


def threshold(module: str, loaded_from: int, import_from: int, compile_from: int) -> int:
    """The work (voxels, points: the caller's unit) from which the kernels of ``ccmetrics.engine.<module>`` serve a
    task (``module[variant]`` for a kernel compiled once per image dtype, e.g. ``_sphere_kernels[float64]``):
    ``loaded_from`` once one of them is compiled or loaded in this process, or once numba is loaded and its cache
    holds them; ``import_from`` when the cache holds them and numba is not loaded yet; ``compile_from`` otherwise
    (neither below ``loaded_from``); ``loaded_from`` also once the tasks from ``loaded_from`` that the fallback
    served in this process reach that threshold together (see :func:`pays`).

    >>> threshold("_no_such_module", 10, 100, 1000)
    1000
    """
    if module in _READY:
        return loaded_from
    if _cached(module):
        limit = loaded_from if "numba" in sys.modules else max(import_from, loaded_from)
    else:
        limit = max(compile_from, loaded_from)
    return loaded_from if _SERVED.get(module, 0) >= limit else limit


def pays(module: str, work: int, loaded_from: int, import_from: int, compile_from: int) -> bool:
    """Whether a task of ``work`` units goes to the kernels of ``ccmetrics.engine.<module>`` (:func:`threshold`).

    A task from ``loaded_from`` units that stays below the threshold is counted as served by the fallback; when this
    process's count reaches the threshold, this task and the next ones go to the kernels (compiled once).
    Values never depend on it: the kernels and their fallbacks give the same numbers.

    >>> pays("_no_such_module", 5, 10, 100, 1000), pays("_no_such_module", 2000, 10, 100, 1000)
    (False, True)
    """
    limit = threshold(module, loaded_from, import_from, compile_from)
    if work >= limit:
        return True
    if work < loaded_from:
        return False
    with _SERVED_LOCK:
        _SERVED[module] = served = _SERVED.get(module, 0) + int(work)
    return served >= limit


def _marker_folders() -> list[Path]:
    """Where the marker may live: ``NUMBA_CACHE_DIR`` (numba's cache), or ``__pycache__`` beside the kernels (numba's
    default); then the user's cache folder (``XDG_CACHE_HOME``, or ``~/.cache``: left out where no home folder is
    known), where those cannot be written."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    folders = [Path(cache) if cache else Path(__file__).with_name("__pycache__")]
    try:
        folders.append(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ccmetrics")
    except (KeyError, RuntimeError, OSError):  # no HOME and no passwd entry (a container's anonymous user)
        pass
    return folders


def _key(module: str) -> tuple[str, list[Any]] | None:
    """The marker's key of a module of kernels (its file, and ``[variant]`` for a kernel compiled once per dtype) and
    what must match: the file's modification time and size, the numba and Python versions; None where the file
    cannot be read (found once per process)."""
    if module not in _KEYS:
        name, bracket, variant = module.rsplit(".", 1)[-1].partition("[")
        path = Path(__file__).with_name(name + ".py")
        try:
            stat = path.stat()
            from importlib.metadata import version

            value = [stat.st_mtime_ns, stat.st_size, version("numba"), list(sys.version_info[:2])]
            _KEYS[module] = str(path) + bracket + variant, value
        except Exception:  # noqa: BLE001 (no file, no numba metadata: never marked)
            _KEYS[module] = None
    return _KEYS[module]


def _read_marker() -> list[dict[str, Any]]:
    """The marker's entries in each folder (read once per process; an unreadable marker has none)."""
    if not _MARKED:
        for folder in _marker_folders():
            try:
                entries = json.loads((folder / MARKER).read_text())
                _MARKED.append(entries if isinstance(entries, dict) else {})
            except Exception:  # noqa: BLE001 (missing, unreadable or not JSON: no entries)
                _MARKED.append({})
    return _MARKED


def _cached(module: str) -> bool:
    """Whether a marker says numba's cache holds the kernels of ``ccmetrics.engine.<module>`` (any folder's)."""
    key = _key(module)
    return key is not None and any(entries.get(key[0]) == key[1] for entries in _read_marker())


def _mark(module: str) -> None:
    """Record that the kernels of ``module`` are in numba's cache, in the first folder that can be written (best
    effort: a lost race between processes loses an entry, which costs time only; the file is replaced whole, from a
    temporary file of a unique name)."""
    key = _key(module)
    if key is None or _cached(module):
        return
    for folder, known in zip(_marker_folders(), _read_marker()):
        known[key[0]] = key[1]
        temporary = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            try:
                entries = json.loads((folder / MARKER).read_text())
                entries = entries if isinstance(entries, dict) else {}
            except Exception:  # noqa: BLE001 (none yet, or unreadable: written anew)
                entries = {}
            entries[key[0]] = key[1]
            handle, temporary = tempfile.mkstemp(prefix=f".{MARKER}.", dir=folder)
            with os.fdopen(handle, "w") as out:
                json.dump(entries, out, indent=1)
            os.replace(temporary, folder / MARKER)
            return
        except Exception:  # noqa: BLE001 (a folder that cannot be written: the next one)
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)


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
