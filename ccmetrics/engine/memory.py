r"""Memory limits before allocation: the machine's available memory and the estimated peak of a case.

A data-set run checks each case against its memory limit (``--max-memory``, ``max_memory=``) three
times, each before the memory it is about is taken:

1. from the files' headers alone (:func:`ccmetrics.formats.io.read_header`), before a voxel is read;
2. after reading, with the foreground counted (:func:`ccmetrics.campaign.dataset.evaluate_task`);
3. in the engine, once it has labelled the components (a :class:`MemoryGuard` that :func:`memory_guard`
   hands down), with the counts that the per-component tables, distances and encodings grow with.

* :func:`available_memory_bytes`: what the machine (and the process's cgroup, in a container)
  can still give;
* :func:`estimate_case_bytes`: the peak memory that reading a GT and a prediction, evaluating them
  (:func:`ccmetrics.evaluate`) and encoding the result for the parent (what a worker process of
  :func:`ccmetrics.evaluate_dataset` does) adds to a running worker;
* :func:`component_bytes`: its part that grows with the counts (:class:`ComponentCounts`);
* :func:`dilated_voxels`: the bound of the voxels of Lesion Dice's dilations, one of those counts;
* :func:`parse_memory`: a command-line value (``"8G"``, ``"512MiB"``) in bytes;
* :data:`DEFAULT_MEMORY_FRACTION`: the share of the available memory a run plans to use;
* :func:`memory_guard`, :class:`MemoryGuard`, :func:`active_guard`, :class:`MemoryLimitError`: the limit
  handed down to the engine (a context variable) and the error over it (implemented in
  ``ccmetrics.engine._budget`` and, with :func:`over_limit` and :func:`format_bytes`, in the foundation
  ``ccmetrics._memory`` that the formats' readers share; re-exported here, the same objects).

The estimate is ``gt.nbytes + pred.nbytes`` (the arrays the readers return) plus the engine's
peak: :data:`FIXED_BYTES` (256 MiB: numba's compilation on a worker's first case, pools) and
:data:`BYTES_PER_VOXEL` (167) bytes per voxel from the headers alone, or, when the foreground counts
are known (after reading, before evaluating), :data:`BYTES_PER_IMAGE_VOXEL` (5) per voxel plus
:data:`BYTES_PER_FOREGROUND_VOXEL` (270) per foreground voxel; plus the copies that inputs wider than
one byte cost on their way to boolean masks, and at least the readers' transient copies.  With the
counts (``components=``) it adds :func:`component_bytes`:

* :data:`BYTES_PER_GT_COMPONENT` (450) per GT component (Voronoi site);
* :data:`BYTES_PER_PRED_COMPONENT` (2000) per predicted component, where the metrics label them
  (``pq``, ``lesion_dice``, ``detection``);
* :data:`BYTES_PER_RUN` (240) per run of voxels of both masks (fragmentation: specks and lines cost
  more per foreground voxel than blobs, one run a voxel against one per row of a blob);
* with ``lesion_dice``: :data:`BYTES_PER_DILATED_VOXEL` (64) per voxel of the GT components' BraTS
  dilations beyond :data:`DILATION_IN_FOREGROUND` (4) per GT voxel, which the foreground factor pays
  for (the voxels of the dilations bounded by :func:`dilated_voxels`, each component's padded bounding
  box: 263 for a one-voxel component, 49 per voxel of a line, about twice a blob's own voxels), and
  :data:`BYTES_PER_UNION_VOXEL` (20) per such voxel of their union (at most the image).

Foreground factors (``python tests/benchmarks/bench_memory.py --half``; the table is in
:data:`BYTES_PER_VOXEL`'s comment): two uint8 ``.nii.gz`` files read and evaluated with every metric
group (dice, nsd, hd95, pq, lesion_dice, detection) as the first case of a fresh process, sparse
lesions from 128³ to 512³ and smooth blobs of 30 % and 50 % foreground at 128³ and 256³.  The
engine's memory grows with the foreground (about 5 bytes per voxel with sparse lesions, 130-200
with 30-50 % foreground), so the factor from headers alone assumes 30 % foreground in each mask
(:data:`ASSUMED_FOREGROUND`), the worst measured times 1.5: it covers every measured case, the 50 %
ones included, and overestimates sparse cases about 40 times (512³: 23 GB estimated, 0.5 GB
measured); pass ``foreground=`` for a close estimate.

Count factors: the same, through the worker's path (:func:`ccmetrics.campaign.dataset.evaluate_task`,
:func:`ccmetrics.campaign.records.encode_output`, ``pickle.dumps``), on adversarial cases where the counts, not
the foreground, grow; 2 cores; the grid of a size n is n x n x 3n/4; peak: VmHWM above the process after
its imports, MB; the estimates, MB, with the foreground counted and with the counts too; dilated: the
bound of :func:`dilated_voxels` (counted with ``lesion_dice`` only); metrics: 6 all six groups, 5 without
lesion_dice, 3 the command line's default; checked as with ``--max-memory``, at the limit
``--skip-above`` (default: half the machine's available memory).  Rows of::

    python tests/benchmarks/bench_memory.py --half
    python tests/benchmarks/bench_memory.py --kinds lesions missed crossings spread huge fragments \
        false-positives --sizes 128 160 192 --skip-above 15e9
    python tests/benchmarks/bench_memory.py --kinds lesions missed crossings fragments false-positives \
        --sizes 128 192 --metrics dice,nsd,hd95,pq,detection
    python tests/benchmarks/bench_memory.py --kinds lesions crossings --sizes 128 192 --metrics dice,nsd,hd95

::

    case                 metrics    gt cc  pred cc       runs      dilated          fg     peak  with fg with counts
    lesions 128                6  196,608  196,608    393,216   50,788,979     393,216   2418.4    385.6      4193.3
    lesions 160                6  384,000  384,000    768,000   99,571,067     768,000   4836.8    497.3      7958.1
    lesions 192                6  663,552  663,552  1,327,104  172,482,435   1,327,104   7861.5    663.9     13583.3
    missed 128                 6  196,608        0    196,608   50,788,979     196,608   2294.5    332.5      3699.8
    missed 160                 6  384,000        0    384,000   99,571,067     384,000   4548.0    393.6      6994.3
    missed 192                 6  663,552        0    663,552  172,482,435     663,552   7443.1    484.8     11917.8
    crossings 128              6    3,072    3,072    786,432   18,670,080     786,432    871.9    491.8      1813.7
    crossings 160              6    4,800    4,800  1,536,000   36,696,960   1,536,000   1596.1    704.7      3298.5
    crossings 192              6    6,912    6,912  2,654,208   63,680,256   2,654,208   2681.2   1022.2      5518.1
    spread 128                 6    3,072    3,072      6,144      764,361       6,144     82.9    281.1       353.3
    spread 192                 6   10,368   10,368     20,736    2,629,235      20,736    273.8    311.2       558.9
    huge 128                   6        1        2     24,984    1,572,864   1,572,736    288.9    704.1       710.1
    huge 192                   6        1        2     56,136    5,308,416   5,307,952    684.0   1738.7      1752.2
    fragments 128              6        1   98,296    110,788    1,572,864     884,664    194.4    518.3       741.5
    fragments 192              6        1  331,747    359,815    5,308,416   2,985,723    723.5   1111.7      1861.6
    false-positives 128        6        1  184,817    186,277       95,000     216,305    208.9    337.8       752.2
    false-positives 192        6        1  623,772    627,048      264,600     730,012    750.0    502.7      1900.7
    lesions 128                5  196,608  196,608    393,216            -     393,216    552.4    385.6       961.7
    lesions 192                5  663,552  663,552  1,327,104            -   1,327,104   1435.3    663.9      2608.1
    missed 192                 5  663,552        0    663,552            -     663,552    549.5    484.8       942.6
    crossings 192              5    6,912    6,912  2,654,208            -   2,654,208    906.8   1022.2      1676.2
    fragments 192              5        1  331,747    359,815            -   2,985,723    585.7   1111.7      1861.6
    false-positives 192        5        1  623,772    627,048            -     730,012    787.7    502.7      1900.7
    lesions 128                3  196,608        0    393,216            -     393,216    306.6    385.6       568.5
    crossings 192              3    6,912        0  2,654,208            -   2,654,208    864.9   1022.2      1662.4
    sparse 512³                6       20       19     16,941      770,416     453,479    516.7   1330.4      1334.5
    heavy 256³                 6       47      119    514,816   17,091,029  10,066,884   1498.4   3103.9      3227.7
    half 256³                  6       15       58    598,166   16,804,444  16,777,672   2088.4   4915.8      5059.5

``lesions``: a one-voxel GT lesion at every voxel whose indices are all even, predicted exactly;
``missed``: the same, nothing predicted; ``spread``: one-voxel lesions 8 apart (one BraTS lesion
each); ``huge``: one ellipsoid over half the image; ``fragments``: it, predicted as its even-index
voxels; ``false-positives``: a 2 % ellipsoid, even-index voxels outside a 6 % one predicted;
``crossings``: GT lines crossed by predicted lines.  The estimate with the foreground alone falls short
by up to 15 times (``missed 192``, all six groups: Lesion Dice's dilations, 263 voxels a lesion).  The
model of the previous release (each component's dilation counted as one voxel's, 60 and 110 bytes per
dilated and union voxel) fell short on ``crossings 160`` and ``192`` with all six groups (1485 and 2305 MB
estimated, about 1600 and 2680 measured: a line dilates to 49 voxels per voxel, not 263 per line), and
on ``fragments 192`` (1905 estimated, 2140 measured, before the shared k-d trees of one-voxel predicted
components stopped costing about 4 KB each in ``ccmetrics.metrics.lesions``).

Fit: the smallest factors (a linear program, minimising the sum of estimate / peak) under which the
estimate less 192 MiB of its fixed 256 covers 148 measurements beyond the foreground estimate: these seven
kinds at sizes 64, 96, 128, 160 and 192 with dice alone, the three default metrics, five and six groups,
and the sparse, heavy and half cases with all six (the other 64 MiB of the fixed part left to the smallest
cases, whose peaks are mostly numba's first-use compilation), :data:`DILATION_IN_FOREGROUND` set to 4:
~283 bytes per GT component, ~1,280 per predicted component, ~155 per run, ~42 per dilated and ~13 per
union voxel; each times about 1.5.  The estimates with the counts cover every measured peak at least 1.5
times (``missed 160``, all six groups; a line's dilation costs ~32 bytes a voxel, so ``crossings`` with
Lesion Dice about 2 times), the same less the whole fixed part 0.98 times or more (``lesions 128`` with
the three default metrics: 307 MB measured); the sparse, heavy and half cases keep their estimates (0.3 %
higher to 2 % lower: the runs' factor; their dilations stay within 4 voxels a GT voxel).

Not in the model: the foreground's share of Lesion Dice (:data:`DILATION_IN_FOREGROUND` dilated voxels per
GT voxel) is counted for the whole GT, so a GT of large blobs beside long thin lesions counts the blobs'
share against the lines' dilations; the bound of a component's dilation by its bounding box is loose for
a long diagonal or curved one (up to 263 voxels a voxel: an over-estimate); with ``sites="labels"`` the
bound is taken per instance, not per component.  Not an upper bound for every input either; measure again
(the bench script) after the engine changes, and with more threads (measured with 2).  Not counted: the
worker's own interpreter and imports (about 200 MB per process, there before its first case).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import numpy as np

from .._memory import MemoryLimitError, format_bytes, over_limit
from ._budget import MemoryGuard, memory_guard
from ._budget import active as active_guard

__all__ = [
    "MemoryGuard",
    "MemoryLimitError",
    "active_guard",
    "memory_guard",
    "format_bytes",
    "over_limit",
    "ASSUMED_FOREGROUND",
    "BYTES_PER_FOREGROUND_VOXEL",
    "BYTES_PER_IMAGE_VOXEL",
    "BYTES_PER_VOXEL",
    "DEFAULT_MEMORY_FRACTION",
    "FIXED_BYTES",
    "BYTES_PER_DILATED_VOXEL",
    "BYTES_PER_GT_COMPONENT",
    "BYTES_PER_PRED_COMPONENT",
    "BYTES_PER_RUN",
    "BYTES_PER_UNION_VOXEL",
    "DILATION_IN_FOREGROUND",
    "LESION_DILATION_ITERATIONS",
    "LESION_DILATION_VOXELS",
    "ComponentCounts",
    "available_memory_bytes",
    "component_bytes",
    "dilated_voxels",
    "estimate_case_bytes",
    "parse_memory",
]

#: the share of the available memory a data-set run plans to use, for all its workers together
DEFAULT_MEMORY_FRACTION = 0.8

#: bytes a case adds whatever its size: numba's compilation of the paths the first case of a worker
#: takes (about 190 MB measured for the heavy cases), thread pools, allocator slack
FIXED_BYTES = 256 * 2**20

#: engine bytes per image voxel, beyond the input arrays (sparse cases: at most about 3.4 measured)
BYTES_PER_IMAGE_VOXEL = 5.0

#: engine bytes per foreground voxel (GT plus prediction: a voxel in both counts twice); the worst
#: measured was about 172 (heavy 256³; 178 with an earlier engine), times about 1.5
BYTES_PER_FOREGROUND_VOXEL = 270.0

#: the foreground :func:`estimate_case_bytes` assumes from headers alone: 30 % of each mask
ASSUMED_FOREGROUND = 0.6

#: engine bytes per voxel from the headers alone: ``BYTES_PER_IMAGE_VOXEL + ASSUMED_FOREGROUND *
#: BYTES_PER_FOREGROUND_VOXEL``.  Measured with ``python tests/benchmarks/bench_memory.py --half --path evaluate``
#: (uint8 .nii.gz, all six metric groups, the first case of a fresh process; peak above its imports; on
#: the worker's path, the bench's default since, the module docstring's table)::
#:
#:     case        voxels       fg gt/pred %  peak MB  B/voxel  estimate MB  with foreground=
#:     sparse 128³   2,097,152   0.3 / 0.3       28.3    13.47        622.9       286.6
#:     heavy 128³    2,097,152  30.2 / 30.1     330.1   157.42        622.9       624.5
#:     sparse 256³  16,777,216   0.2 / 0.2       91.1     5.43       3103.8       404.5
#:     heavy 256³   16,777,216  30.0 / 30.0    2089.9   124.57       3103.8      3103.9
#:     sparse 384³  56,623,104   0.2 / 0.1      247.1     4.36       9837.7       717.4
#:     sparse 512³ 134,217,728   0.2 / 0.1      530.4     3.95      22951.2      1330.4
#:     half 128³     2,097,152  50.0 / 50.1     415.2   197.97        622.9       850.1
#:     half 256³    16,777,216  50.0 / 50.0    2304.9   137.38       3103.8      4915.8
#:
#: Fit: sparse cases, at most ~3.4 B/voxel beyond the 2 B/voxel inputs (384³-512³: 2.0-2.4); heavy
#: 256³, (2089.9 MB - 256 MiB - inputs - 3.4 B/voxel) / 10.07 M foreground voxels = 172 B per
#: foreground voxel; the factors keep the margins of an earlier engine's measurement (3.3 and 178 B,
#: times 1.5), which cover these with room.
BYTES_PER_VOXEL = BYTES_PER_IMAGE_VOXEL + ASSUMED_FOREGROUND * BYTES_PER_FOREGROUND_VOXEL

_METRICS_ALL = ("dice", "nsd", "hd95", "pq", "lesion_dice", "detection")


def available_memory_bytes() -> int:
    """Bytes of memory the machine can still give to new work, without swapping.

    Linux: ``MemAvailable`` of ``/proc/meminfo`` (free memory plus the page cache and the
    buffers that can be dropped); elsewhere psutil's ``virtual_memory().available`` when psutil
    is installed, else the free physical pages (``os.sysconf``).  Inside a cgroup with a memory
    limit (a container, a batch job), the limit minus the cgroup's usage when that is smaller.

    Returns
    -------
    int
        Bytes, at least 0.

    Examples
    --------
    >>> available_memory_bytes() > 0
    True
    """
    found = _meminfo_available()
    if found is None:
        try:
            import psutil

            found = int(psutil.virtual_memory().available)
        except ImportError:
            found = None
    if found is None:
        try:
            found = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError) as e:
            raise OSError("cannot tell the available memory on this system: give a memory limit instead") from e
    limit = _cgroup_room()
    return max(0, min(found, limit) if limit is not None else found)


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (no limit) -> None


def _cgroup_room() -> int | None:
    """The memory limit of this process's cgroup minus its usage (v2, then v1); None without a limit."""
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 2**60:  # v1 writes "no limit" as ~2**63
            return max(0, limit - usage)
    return None


def _conversion_bytes(header: ImageHeader) -> int:
    """Bytes of the boolean mask :func:`ccmetrics.evaluate` makes of an input that is not 1 byte a
    voxel (``ccmetrics._inputs.as_binary_mask``: uint8 and bool are viewed, not copied), with the
    three boolean temporaries of the 0/1 check of floats."""
    if header.dtype.itemsize == 1 and header.dtype.kind in "biu":
        return 0
    return header.voxels * (4 if header.dtype.kind in "fc" else 1)


def _read_copies_bytes(header: ImageHeader) -> int:
    """Transient copies while a file is read: SimpleITK holds its image, numpy's copy of it and
    the transposed contiguous array (two beyond the result); nibabel one unscaled array for a
    NIfTI with ``scl_slope`` (its scaled result is float64)."""
    name = (header.path or "").lower()
    if name.endswith((".mha", ".mhd", ".nrrd", ".nhdr")):
        return 2 * header.nbytes
    if name.endswith((".nii", ".nii.gz")) and header.dtype.kind == "f":
        return header.nbytes
    return 0


@dataclass(frozen=True)
class ComponentCounts:
    """What a case's memory grows with beyond its voxels and foreground: counts the engine knows once it has
    labelled the components, before it builds anything per component (:func:`component_bytes`).

    Attributes
    ----------
    gt : int
        GT components (the Voronoi sites: components, or instance labels with ``sites="labels"``).
    pred : int
        Predicted components, where the metrics label them (``pq``, ``lesion_dice``, ``detection``, a
        detection rule other than ``"overlap"``); 0 otherwise.
    runs : int
        Runs of voxels along the last axis in the GT and the prediction together
        (:class:`ccmetrics.engine.components.Runs`): how fragmented the masks are (a run per voxel for specks
        and lines, far fewer for blobs).
    voxels : int
        Voxels of the image (0: unknown).
    ndim : int
        Dimensions of the image (2 or 3).
    gt_voxels : int
        Voxels of the GT's sites (its foreground; 0: unknown).
    dilated : int
        With ``lesion_dice``: at most the voxels of the BraTS dilations of the GT's components, together
        (:func:`dilated_voxels`; 0: unknown, each component counted as one voxel's,
        :data:`LESION_DILATION_VOXELS`).

    Examples
    --------
    >>> ComponentCounts(gt=196_608, pred=196_608, runs=393_216).describe()
    '196,608 GT components, 196,608 predicted components and 393,216 voxel runs'
    >>> ComponentCounts(gt=3_072, pred=3_072, runs=786_432, dilated=18_670_080).describe()
    '3,072 GT components, 3,072 predicted components, 786,432 voxel runs and 18,670,080 voxels of dilated lesions'
    """

    gt: int
    pred: int = 0
    runs: int = 0
    voxels: int = 0
    ndim: int = 3
    gt_voxels: int = 0
    dilated: int = 0

    def describe(self) -> str:
        """The counts in words, for messages."""
        if self.dilated:
            return (
                f"{self.gt:,} GT components, {self.pred:,} predicted components, {self.runs:,} voxel runs and "
                f"{self.dilated:,} voxels of dilated lesions"
            )
        return f"{self.gt:,} GT components, {self.pred:,} predicted components and {self.runs:,} voxel runs"


#: engine, tables and encoding bytes per GT component (per-component table rows, per-region values and
#: distances, the worker's encoded rows and their pickle), beyond what the foreground costs: fitted ~283
#: (one-voxel lesions), times about 1.5
BYTES_PER_GT_COMPONENT = 450.0

#: bytes per predicted component where the metrics label them (PQ's matching, the detection's per-prediction
#: table, its encoding): fitted ~1,280 (predicted lattices of one-voxel components), times about 1.5
BYTES_PER_PRED_COMPONENT = 2000.0

#: bytes per run of voxels (GT and prediction): fragmented masks (lines, specks) cost more per foreground voxel
#: than blobs (run graphs, edge voxels, tied nearest-site candidates): fitted ~155, times about 1.5
BYTES_PER_RUN = 240.0

#: voxels of the BraTS dilation of a one-voxel component (3 iterations of the 2-connectivity cross, as
#: ``lesion_dice`` dilates every GT component), by the number of dimensions
LESION_DILATION_VOXELS = {2: 49, 3: 263}

#: the iterations of that dilation (``ccmetrics.metrics.lesions.BRATS_DILATION``): how far a component's dilation
#: reaches beyond its bounding box
LESION_DILATION_ITERATIONS = 3

#: ``lesion_dice``: bytes per voxel of the GT components' dilations (their voxel lists, one component after
#: the other, then together, sorted for their union) beyond :data:`DILATION_IN_FOREGROUND` per GT voxel:
#: fitted ~42, times about 1.5
BYTES_PER_DILATED_VOXEL = 64.0

#: ``lesion_dice``: bytes per voxel of the union of those dilations (labelled on its runs to form the lesions;
#: at most the image): fitted ~13, times about 1.5
BYTES_PER_UNION_VOXEL = 20.0

#: ``lesion_dice``: dilated voxels per GT voxel that :data:`BYTES_PER_FOREGROUND_VOXEL` pays for already: the
#: foreground factor was measured with Lesion Dice on blobs, whose dilations (as :func:`dilated_voxels` bounds
#: them) are 2.0-3.6 times their voxels (the sparse, heavy and half cases from 128³ to 512³; small lesions
#: more: sparse 128³, 7.4); lines dilate to 47 times theirs, one-voxel lesions to 263 times
DILATION_IN_FOREGROUND = 4.0


def dilated_voxels(coords: np.ndarray, starts: np.ndarray, shape: Sequence[int]) -> int:
    """At most how many voxels the BraTS dilations of the GT's components hold together (``lesion_dice``
    dilates each component inside its bounding box padded by :data:`LESION_DILATION_ITERATIONS`).

    Each component counts the smaller of its padded bounding box (clipped to the image) and
    :data:`LESION_DILATION_VOXELS` per voxel: exact for a line along an axis and a one-voxel component away
    from the image's border, about twice a blob's dilation. O(voxels) with no copy of them; a GT component
    of the full connectivity holds one or more sites (each at most its bound), so the sum bounds it too.

    Parameters
    ----------
    coords : ndarray of int, shape (N, ndim)
        The coordinates of the GT's site voxels, grouped by site
        (``PreparedSites.coords`` of :mod:`ccmetrics.engine.ground_truth`).
    starts : ndarray of int, shape (K + 1,)
        Where each site starts in ``coords``, and N (``Sites.starts`` of :mod:`ccmetrics.engine.components`).
    shape : sequence of int
        The image's shape.

    Returns
    -------
    int

    Examples
    --------
    Two lines of 100 voxels along the first axis of a 100 x 40 x 40 image, and a one-voxel lesion: 7 x 7
    voxels of each line's cross-section, 263 for the voxel:

    >>> coords = np.array([(i, 10, 10) for i in range(100)] + [(i, 30, 10) for i in range(100)] + [(50, 20, 30)])
    >>> dilated_voxels(coords, np.array([0, 100, 200, 201]), (100, 40, 40))
    10063
    """
    if len(starts) < 2 or len(coords) == 0:
        return 0
    reach, ndim = LESION_DILATION_ITERATIONS, len(shape)
    low = np.maximum(np.minimum.reduceat(coords, starts[:-1], axis=0) - reach, 0)
    high = np.minimum(np.maximum.reduceat(coords, starts[:-1], axis=0) + reach + 1, np.asarray(shape))
    boxes = np.prod((high - low).astype(np.float64), axis=1)
    per_voxel = LESION_DILATION_VOXELS.get(ndim, LESION_DILATION_VOXELS[3])
    return int(np.minimum(boxes, per_voxel * np.diff(starts).astype(np.float64)).sum())


def component_bytes(counts: ComponentCounts, metrics: str | Sequence[Any] = _METRICS_ALL) -> int:
    """Estimated bytes a case needs for its counts, beyond :func:`estimate_case_bytes` with ``foreground=``.

    ``BYTES_PER_GT_COMPONENT * gt + BYTES_PER_PRED_COMPONENT * pred + BYTES_PER_RUN * runs``, and with the
    ``lesion_dice`` metric ``BYTES_PER_DILATED_VOXEL * E + BYTES_PER_UNION_VOXEL * min(E, voxels)`` for
    ``E = max(0, dilated - DILATION_IN_FOREGROUND * gt_voxels)``, the dilated voxels beyond those the
    foreground factor pays for (``dilated`` unknown: ``D * gt``, each component's dilation counted as one
    voxel's, :data:`LESION_DILATION_VOXELS`). The module docstring has the measurements behind the factors.

    Parameters
    ----------
    counts : ComponentCounts
        The case's counts.
    metrics : str or sequence
        The metrics (names, registry records): only ``lesion_dice`` changes the estimate.

    Returns
    -------
    int
        Bytes.

    Examples
    --------
    196,608 one-voxel GT lesions, each predicted, with the detection metric: about half a GiB for the counts;
    with Lesion Dice, its dilations add about 3 GiB:

    >>> counts = ComponentCounts(gt=196_608, pred=196_608, runs=393_216, voxels=128 * 128 * 96)
    >>> round(component_bytes(counts, ["dice", "detection"]) / 2**30, 2)
    0.54
    >>> round(component_bytes(counts, ["dice", "lesion_dice"]) / 2**30, 2)
    3.65

    3,072 GT lines of 128 voxels crossed by as many predicted lines: their dilations hold 18.7 million voxels
    (``dilated``), where one voxel's dilation a component would count 0.8 million (0.25 GiB):

    >>> lines = ComponentCounts(3_072, 3_072, 786_432, 128 * 128 * 96, gt_voxels=393_216, dilated=18_670_080)
    >>> round(component_bytes(lines, ["dice", "lesion_dice"]) / 2**30, 2)
    1.23
    """
    names = {str(getattr(m, "name", m)) for m in ([metrics] if isinstance(metrics, str) else metrics)}
    total = BYTES_PER_GT_COMPONENT * counts.gt + BYTES_PER_PRED_COMPONENT * counts.pred + BYTES_PER_RUN * counts.runs
    if "lesion_dice" in names:
        dilated = counts.dilated or LESION_DILATION_VOXELS.get(counts.ndim, LESION_DILATION_VOXELS[3]) * counts.gt
        beyond = max(0.0, dilated - DILATION_IN_FOREGROUND * counts.gt_voxels)
        union = min(beyond, counts.voxels) if counts.voxels else beyond
        total += BYTES_PER_DILATED_VOXEL * beyond + BYTES_PER_UNION_VOXEL * union
    return int(np.ceil(total))


class ImageHeader(Protocol):
    """What the estimate reads of a header (:class:`ccmetrics.formats.ImageHeader` has it): the file's path, the
    array's dtype, its voxels and bytes."""

    @property
    def path(self) -> str | None: ...

    @property
    def dtype(self) -> np.dtype: ...

    @property
    def voxels(self) -> int: ...

    @property
    def nbytes(self) -> int: ...


@dataclass(frozen=True)
class _MaskHeader:
    """The header of a missing prediction: a boolean mask of the GT's voxels (what the readers' caller makes)."""

    voxels: int
    path: None = None
    dtype: np.dtype = np.dtype(bool)

    @property
    def nbytes(self) -> int:
        return self.voxels


def estimate_case_bytes(
    gt: ImageHeader,
    pred: ImageHeader | None,
    metrics: str | Sequence[Any] = _METRICS_ALL,
    *,
    foreground: int | None = None,
    components: ComponentCounts | None = None,
) -> int:
    """Estimated peak memory of reading a case's two files, evaluating it and encoding its result, from their headers.

    Parameters
    ----------
    gt : ImageHeader
        The ground truth's header (:func:`ccmetrics.formats.io.read_header`).
    pred : ImageHeader or None
        The prediction's; None when there is none (counted as a boolean mask of the GT's shape).
    metrics : str or sequence
        The metrics to evaluate, as :func:`ccmetrics.evaluate` takes them.  The voxel and foreground
        factors are the ones measured with all six metric groups, the largest (metrics of the user's
        or MONAI objects run on one region's crop at a time); with ``components``, ``lesion_dice``
        adds its own part (:func:`component_bytes`).
    foreground : int, optional
        The foreground voxels of the GT plus those of the prediction, when known (after reading
        the arrays, before evaluating them); default: :data:`ASSUMED_FOREGROUND` of the voxels.
    components : ComponentCounts, optional
        The counts, when known (the engine knows them once it has labelled the components): adds
        :func:`component_bytes`.

    Returns
    -------
    int
        Bytes: ``gt.nbytes + pred.nbytes`` (the arrays) + the boolean masks of inputs wider than
        one byte + ``FIXED_BYTES + BYTES_PER_IMAGE_VOXEL * voxels + BYTES_PER_FOREGROUND_VOXEL *
        foreground`` (the engine; without ``foreground``: ``BYTES_PER_VOXEL * voxels``) + the
        counts' part, and at least the readers' transient copies.  See the module docstring for what
        the factors cover;
        the worker's own baseline (interpreter, imports) is not included.

    Examples
    --------
    >>> import numpy as np
    >>> from ccmetrics.formats.io import ImageHeader
    >>> h = ImageHeader("case.nii.gz", (400, 400, 300), np.dtype(np.uint8), (1.0, 1.0, 1.0))
    >>> estimate_case_bytes(h, h) == 2 * h.nbytes + FIXED_BYTES + int(np.ceil(BYTES_PER_VOXEL * h.voxels))
    True
    >>> round(estimate_case_bytes(h, h) / 2**30, 1), round(estimate_case_bytes(h, h, foreground=10**6) / 2**30, 1)
    (7.8, 0.8)
    >>> counts = ComponentCounts(gt=20_000, pred=20_000, runs=60_000, voxels=h.voxels)
    >>> round(estimate_case_bytes(h, h, ["dice", "pq"], foreground=10**6, components=counts) / 2**30, 2)
    0.87
    """
    if pred is None:
        pred = _MaskHeader(gt.voxels)  # a boolean mask of the GT's shape
    voxels = max(gt.voxels, pred.voxels)
    if foreground is None:
        per_voxel = BYTES_PER_VOXEL * voxels
    else:
        per_voxel = BYTES_PER_IMAGE_VOXEL * voxels + BYTES_PER_FOREGROUND_VOXEL * max(int(foreground), 0)
    engine = FIXED_BYTES + int(np.ceil(per_voxel)) + (component_bytes(components, metrics) if components else 0)
    inputs = gt.nbytes + pred.nbytes + _conversion_bytes(gt) + _conversion_bytes(pred)
    reading = max(gt.nbytes + _read_copies_bytes(gt), gt.nbytes + pred.nbytes + _read_copies_bytes(pred))
    return int(max(inputs + engine, reading))


_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:([kmgt])(i?)(b?)|(b?))\s*$", re.IGNORECASE)


def parse_memory(text: str | int) -> int:
    """Bytes of a memory size written for a command line.

    Parameters
    ----------
    text : str or int
        A positive number of bytes, optionally with a unit: ``K``, ``M``, ``G``, ``T`` and
        ``KiB``, ``MiB``, ``GiB``, ``TiB`` are powers of 1024 (as Slurm's ``--mem`` and Docker
        read them); ``KB``, ``MB``, ``GB``, ``TB`` are powers of 1000 (SI); ``B`` or nothing:
        bytes.  Case and spaces do not matter; decimals are allowed (rounded down to a byte).

    Returns
    -------
    int
        Bytes, at least 1.

    Raises
    ------
    ValueError
        For anything else, naming what was given and the accepted forms.

    Examples
    --------
    >>> parse_memory("8G"), parse_memory("512M"), parse_memory("2.5GiB"), parse_memory("1000000")
    (8589934592, 536870912, 2684354560, 1000000)
    >>> parse_memory("2 GB")
    2000000000
    """
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        if text <= 0:
            raise ValueError(f"a memory size must be positive, got {text}")
        return int(text)
    match = _MEMORY.match(str(text)) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f"cannot read {text!r} as a memory size: write a number of bytes with an optional unit, "
            "e.g. 8G, 512M, 2.5GiB (powers of 1024), 16GB (powers of 1000) or 1000000 (bytes)"
        )
    number, unit, binary, byte, _ = match.groups()
    unit = (unit or "").lower()
    scale = 1000 ** " kmgt".index(unit) if unit and byte and not binary else _UNITS[unit]
    value = int(Decimal(number) * scale)
    if value <= 0:
        raise ValueError(f"a memory size must be positive, got {text!r}")
    return value
