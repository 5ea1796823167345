"""The engine configuration: every size threshold that picks an algorithm, in one frozen object.

ccmetrics computes each value by one rule but can take several paths to it: a KD-tree or the
separable nearest-label transform for the Voronoi regions, numpy or numba kernels for the edge
voxels, scipy's or its own k-d tree for the distances, one tree per region or one grouped tree for
all, serial or threaded. Which path runs depends on the size of the work only, through the
thresholds below; **the values never depend on the path** (the tests compute every path of every
engine on the same inputs and compare them bit for bit, forcing each path with this object).

The configuration lives in a context variable. :func:`engine_config` changes it for the code inside
a ``with`` block, ccmetrics' own worker threads included (they run in a copy of the caller's
context); other threads and worker processes (``evaluate_dataset(workers=...)``, Dask) keep the
defaults. Reading it costs a context-variable look-up, nothing per voxel.

Examples
--------
Force worker threads and one grouped KD-tree query for every region, even on a small image:

>>> import numpy as np
>>> from ccmetrics import engine_config, evaluate
>>> gt = np.zeros((20, 20), bool); gt[2:8, 2:8] = True; gt[12:15, 12:15] = True
>>> pred = np.roll(gt, 1, axis=0)
>>> with engine_config(threads_from=0, threads=2, grouped_from=1):
...     forced = evaluate(gt=gt, pred=pred, metrics=["dice", "hd95"]).cc
>>> forced == evaluate(gt=gt, pred=pred, metrics=["dice", "hd95"]).cc
True
>>> current().grouped_from  # back to the default outside the block
64
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMPILE_TWINS",
    "KERNEL_THRESHOLDS",
    "EngineConfig",
    "available_cpus",
    "current",
    "engine_config",
    "thread_count",
]


@dataclass(frozen=True)
class EngineConfig:
    """The size thresholds that choose between equivalent algorithms (each field: what it switches and why).

    Attributes
    ----------
    threads_from : int
        Images from this many voxels are evaluated with worker threads (KD-tree queries release the
        GIL); below it the pool costs more than it saves. Default 2**20.
    threads : int or None
        Worker threads for such images; None (default): the CPUs this process may use, at most
        ``max_threads``. Fewer than 2 means serial.
    max_threads : int
        Upper bound of the default thread count. Default 4.
    thread_batch_points : int
        Edge voxels per thread task at least when per-region distances are spread over threads
        (smaller tasks cost more in scheduling than they save). Default 4096.
    grouped_from : int
        Regions from which one grouped KD-tree query (the region as an extra coordinate) serves all
        regions instead of one tree per region: about 30x faster for thousands of small regions
        (nuclei), 2x slower for a dozen large ones. Default 64.
    global_after : int
        Prediction voxels outside the GT from which the whole-image distances start after the
        nearest-site search instead of beside it (the nearest-label transform then keeps every core
        busy on its own). Default 2**15.
    dense_min_queries : int
        Query voxels from which the nearest-site search may label their whole bounding box with the
        separable nearest-label transform (about 30-50 ns a box voxel, against 1-2 µs a KD-tree
        query) ... Default 2**15.
    dense_max_ratio : int
        ... when the box holds at most this many voxels per query voxel (0: never). Default 32.
    block_min_queries : int
        Otherwise, from this many query voxels, whole blocks of voxels whose nearest site is certain
        are labelled first (:func:`ccmetrics.engine.partition.assign_nearest`) ... Default 2**14.
    block_max_sites : int
        ... when there are at most this many sites (one KD-tree query per block and site). Default 256.
    span_map_ratio : int
        A voxel list whose flat-index span holds at most this many voxels per listed voxel gets a
        small label map of the span for its edge tests (at most this many small integers per voxel);
        sparser lists use binary searches over their runs (0: always). Default 8.
    kernels_from : int
        Voxel lists from this many voxels find their edges with the numba kernels of
        ``ccmetrics.engine._edge_kernels`` (both cores) instead of numpy. Default 2**18.
    loaded_kernels_from : int
        ... and a whole mask's edges from this many voxels once the kernel is loaded in this process, or
        numba is loaded and its cache holds the kernel (its load paid for already; the kernel is about 4
        times faster than numpy from here). Default 2**14.
    scan_kernel_from : int
        Boolean masks from this many voxels have their voxels listed by the numba kernel of
        ``ccmetrics.engine._edge_kernels`` (one pass over the memory, in C order also from a Fortran-ordered
        mask: about 2 ms for 400x400x300 against numpy's 4.7 ms, 3.8 ms against 6.9 ms from Fortran order) once
        that module's kernels are loaded in this process, or numba is loaded and its cache holds them (the
        scan alone never pays for numba's import); 0: always. Default 2**22.
    own_tree_from : int
        Points (source and target together) from which distances come from ccmetrics' own k-d tree
        (tight node boxes: fast also far from a flat edge set) instead of scipy's, once its kernels are
        loaded in this process, or numba is loaded and its cache holds them ... Default 2**15.
    own_tree_import_from : int
        ... or from this many while numba is not loaded yet and its cache holds them (numba's first
        import and the kernels' load take about 0.5 s, more than scipy's tree costs below this size),
        or once the calls from ``own_tree_from`` points that scipy's tree served in this process reach
        this many points together (a process evaluating many large cases pays the load once).
        Default 2**18.
    compile_edges_from, compile_tree_from, compile_partition_from, compile_peak_from : int
        Where numba's cache does not hold a module's kernels yet (an empty cache: the first run after
        an install), the work from which they are compiled for a task instead of ``kernels_from``,
        ``own_tree_import_from`` (also for Lesion Dice's order statistics), ``dense_min_queries`` and
        ``peak_kernel_from``: voxels of a mask's edge test, points of a distance query, query voxels of the
        dense partition, lesion voxels of SUVpeak; or once the tasks that numpy, scipy or cc3d served
        in this process from the loaded threshold reach it together (:func:`ccmetrics.engine.kernels.pays`).
        Compiling costs about 0.9 s (edges), 5 s (trees and order statistics), 1.5 s (partition) and
        2.6 s (SUVpeak), numba's import 0.5 s more, while the fallback loses about 30 ns a voxel, 0.5 µs
        a point, 0.2 µs a query voxel and 90 ns a lesion voxel: below these sizes it loses less than the
        compile costs (a 120x120x80 case with an all-foreground prediction: 1.2 s a call against 10 s of
        compiling), and a process compiles once its fallbacks have lost about as much as the compile
        costs. ``ccmetrics warm-up`` compiles every kernel into the cache. Defaults 2**25, 2**23,
        2**23, 2**25.
    pad_below : int
        Arrays up to this many voxels are always padded before cc3d labels them (a cheap copy that
        avoids a cc3d failure on some small sparse arrays); larger ones only after a failure.
        Default 2**20.
    dense_runs : int
        A foreground with fewer runs than one per this many voxels of its bounding box is labelled by
        the run graph (cost grows with the foreground); a more fragmented one by cc3d on its
        bounding box. Default 256.
    pair_batch_entries : int
        Padded point-to-point distance entries per batch when the nuclei metrics measure many small
        pairs at once (memory: 8 bytes each). Default 2**22.
    query_chunk : int
        Query voxels per KD-tree batch of the nearest-site search (memory: about 100 bytes each). Default
        2**18.
    tie_candidates : int
        Surface voxels examined at first for a query voxel whose nearest site may be tied (then 4, 16, ...
        times as many while all are within the tie margin); at least 2. Default 8.
    union_tree_from : int
        A BraTS lesion touching this many prediction components or more (on the shared k-d trees) gets one
        tree of all their edge voxels for its distances, instead of a query of each component's tree with
        the minimum kept (one query per voxel, not one per component: 3,072 components crossing one lesion
        took 9 GiB when their distances were stacked). Default 8.
    assignment_full_below : int
        Lesions x candidates from which the one-to-one matching of a probability map's candidates is solved on the
        rows and columns holding a passing pair only, instead of the full matrix picai_eval solves (the same total;
        an exact tie may be broken otherwise). Default 2**22 (32 MiB).
    hull_from : int
        Points from which the farthest pair of a point set (PET Dmax between lesion centroids,
        :func:`ccmetrics.metrics.pet.farthest_pair_distance`) is searched among the vertices of their convex hull
        instead of over all pairs (below it, the O(n²) distances cost less than building the hull). Default 2048.
    peak_box_ratio : int
        SUVpeak (:func:`ccmetrics.metrics.pet.suv_peak`): a lesion whose box (its bounding box grown by the sphere's
        reach) holds at most this many voxels per lesion voxel has the sphere's sums taken over the whole box at
        once; a sparser lesion per voxel (the same values). Default 16.
    peak_kernel_from : int
        SUVpeak: lesion voxels (of one mask's compact lesions) from which the sphere sums are taken by the compiled
        kernel (:mod:`ccmetrics.engine.sphere_means`) when numba's cache holds it and numba is not loaded yet
        (their import and load cost about a second); once the kernel is loaded in the process, or numba is loaded
        and its cache holds the kernel, it is always used. The same values either way. Default 2**15.
    region_map_from : int
        Evaluations of one prepared GT (the thresholds of a probability map) from which its dense Voronoi
        partition is computed once and read by each (one nearest-label transform of the image, against a
        nearest-site search of the voxels outside the GT per evaluation). Default 4.
    """

    threads_from: int = 1 << 20
    threads: int | None = None
    max_threads: int = 4
    thread_batch_points: int = 4096
    grouped_from: int = 64
    global_after: int = 1 << 15
    dense_min_queries: int = 1 << 15
    dense_max_ratio: int = 32
    block_min_queries: int = 1 << 14
    block_max_sites: int = 256
    span_map_ratio: int = 8
    kernels_from: int = 1 << 18
    loaded_kernels_from: int = 1 << 14
    scan_kernel_from: int = 1 << 22
    own_tree_from: int = 1 << 15
    own_tree_import_from: int = 1 << 18
    compile_edges_from: int = 1 << 25
    compile_tree_from: int = 1 << 23
    compile_partition_from: int = 1 << 23
    compile_peak_from: int = 1 << 25
    pad_below: int = 1 << 20
    dense_runs: int = 256
    pair_batch_entries: int = 1 << 22
    query_chunk: int = 1 << 18
    tie_candidates: int = 8
    union_tree_from: int = 8
    region_map_from: int = 4
    hull_from: int = 2048
    peak_box_ratio: int = 16
    peak_kernel_from: int = 1 << 15
    assignment_full_below: int = 1 << 22

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "threads" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"EngineConfig.{f.name} must be a whole number >= 0, got {value!r}")
        least = {"max_threads": 1, "pair_batch_entries": 1, "query_chunk": 1, "tie_candidates": 2, "union_tree_from": 1}
        for name, low in least.items():  # tie_candidates: a tie is told by at least two
            if getattr(self, name) < low:
                raise ValueError(f"EngineConfig.{name} must be at least {low}, got {getattr(self, name)!r}")

    def with_kernels(self, always: bool) -> EngineConfig:
        """A copy where every numba kernel runs from the first voxel, point or lesion (``always``: compiled at once
        where numba's cache lacks it) or never (numpy, scipy and cc3d): each threshold of :data:`KERNEL_THRESHOLDS`
        set together with its compile twin, so that no kernel is left to the default by a forgotten name.

        >>> forced = EngineConfig().with_kernels(True)
        >>> forced.kernels_from, forced.compile_tree_from, forced.peak_kernel_from, forced.compile_peak_from
        (0, 0, 0, 0)
        >>> EngineConfig().with_kernels(False).compile_edges_from == 1 << 40
        True
        """
        return self.replace(**dict.fromkeys(KERNEL_THRESHOLDS, 0 if always else 1 << 40))

    def compiling_as_cached(self) -> EngineConfig:
        """A copy that compiles a kernel missing from numba's cache from the size at which a cached one is loaded
        (each ``compile_*_from`` set to its twin of :data:`COMPILE_TWINS`): the behaviour before the compile
        thresholds, for benchmarks of the first run.

        >>> EngineConfig().compiling_as_cached().compile_tree_from == EngineConfig().own_tree_import_from
        True
        """
        return self.replace(**{name: getattr(self, twin) for name, twin in COMPILE_TWINS.items()})

    def replace(self, **changes: Any) -> EngineConfig:
        """A copy with some fields changed; an unknown name is an error that lists the fields.

        >>> EngineConfig().replace(grouped_from=1).grouped_from
        1
        """
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"EngineConfig has no field {unknown[0]!r}; the fields are {sorted(names)}")
        return dataclasses.replace(self, **changes)


#: the thresholds from which a numba kernel replaces numpy, scipy or cc3d (the loaded and import thresholds, and
#: their compile twins): what :meth:`EngineConfig.with_kernels` sets
KERNEL_THRESHOLDS = (
    "kernels_from",
    "loaded_kernels_from",
    "compile_edges_from",
    "scan_kernel_from",
    "own_tree_from",
    "own_tree_import_from",
    "compile_tree_from",
    "dense_min_queries",
    "compile_partition_from",
    "peak_kernel_from",
    "compile_peak_from",
)

#: each compile threshold (numba's cache lacks the kernel) and the threshold it stands in for when the cache holds it
COMPILE_TWINS = {
    "compile_edges_from": "kernels_from",
    "compile_tree_from": "own_tree_import_from",
    "compile_partition_from": "dense_min_queries",
    "compile_peak_from": "peak_kernel_from",
}

_CURRENT: contextvars.ContextVar[EngineConfig] = contextvars.ContextVar(
    "ccmetrics_engine_config",
    default=EngineConfig(),  # noqa: B039 (a frozen dataclass: never mutated, only replaced)
)


def current() -> EngineConfig:
    """The configuration in force in this context (the defaults unless :func:`engine_config` changed it)."""
    return _CURRENT.get()


@contextlib.contextmanager
def engine_config(config: EngineConfig | None = None, **changes: Any) -> Iterator[EngineConfig]:
    """Use another engine configuration inside a ``with`` block: a whole :class:`EngineConfig`, or fields to change.

    Overrides nest; the previous configuration comes back on exit, also after an exception.

    >>> with engine_config(grouped_from=1) as config:
    ...     config.grouped_from, current().grouped_from
    (1, 1)
    >>> with engine_config(EngineConfig(threads=1)):
    ...     current().threads
    1
    """
    new = (config if config is not None else current()).replace(**changes)
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)


def thread_count(config: EngineConfig | None = None) -> int:
    """Worker threads for a large image: ``config.threads``, else this process's CPUs (at most ``max_threads``)."""
    config = config if config is not None else current()
    if config.threads is not None:
        return config.threads
    return min(available_cpus(), config.max_threads)


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the system has one, else all of the machine's.

    Returns
    -------
    int
        ``len(os.sched_getaffinity(0))`` (Linux: a container's or ``taskset``'s limit included), else
        ``os.cpu_count()`` (macOS, Windows), at least 1.

    Examples
    --------
    >>> n = available_cpus()
    >>> n >= 1 and n <= (os.cpu_count() or 1)
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS, Windows)
        return os.cpu_count() or 1
