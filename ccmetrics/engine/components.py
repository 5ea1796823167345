"""Connected components of the ground truth and their statistics (sparse, no full-size label image).

The sites of the generalized Voronoi partition are either the connected
components of a binary mask (``sites="components"``) or the labels of an
instance map (``sites="labels"``).  Both end up as a :class:`Sites` object: the
flat indices of all site voxels grouped by site label 1..K.  Components are
numbered in raster (C) order of their first voxel, the order
``scipy.ndimage.label`` uses, so numbering never depends on the labelling
algorithm.

Components are found on the foreground voxel list, not on the image: one
``flatnonzero`` pass over the mask gives the sorted flat indices, which split
into :class:`Runs` (maximal sequences of consecutive voxels along the last
axis); runs in neighbouring rows that touch (per the connectivity) are joined
by one binary search per run and neighbouring row, and the run graph's
components (``scipy.sparse.csgraph``) give every voxel its label.  Cost: one
pass over the image, then O(N + R log R) for N foreground voxels in R runs;
memory: a few arrays of N entries, never an image-sized label map (a 1024³
case with 40 lesions labels its 1.4 M GT voxels in a fraction of a second,
where cc3d needed a 4-byte label image and several seconds).  A fragmented
foreground (more than one run per 256 voxels of its bounding box: noise, many
specks) is labelled by cc3d on its bounding box instead, where a label image
is the cheaper structure (:func:`component_labels`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cc3d
import numpy as np

from .._inputs import SPARSE_COPY_FRACTION, as_binary_mask, as_connectivity, as_label_map, as_sites_mode
from ._launch import threshold
from .config import current

__all__ = [
    "CheckedMask",
    "ComponentCache",
    "Runs",
    "Sites",
    "binary_mask_voxels",
    "component_labels",
    "coordinates",
    "find_sites",
    "label_components",
    "run_components",
    "sorted_voxels",
]


class CheckedMask:
    """A validated binary mask whose C-ordered boolean array and sorted voxel list are built on first use.

    Validation (the checks and messages of ``as_binary_mask``) happens here, at once; the work that turns a
    Fortran-ordered mask into a C-ordered one waits for :meth:`arrays`, so that :func:`ccmetrics.evaluate` can do
    it for the GT and the prediction on two threads, each beside the rest of its own preparation. ``shape`` and
    ``ndim`` are known before. :meth:`arrays` is safe to call from several threads (the work is done once).

    A Fortran-ordered numpy array (as NIfTI files store images) is validated as its transpose, which is C-ordered
    (no copy); :meth:`arrays` finds its non-zero voxels in its own memory order, turns their flat indices into C
    order, sorts them and writes them into a zeroed C-ordered mask: one pass over the image instead of three
    (count, find, and the evaluation's own ``flatnonzero`` of the copy). Masks with more than
    ``SPARSE_COPY_FRACTION`` of their voxels set, and every other input, get ``as_binary_mask`` at once and no
    voxel list (``np.flatnonzero`` of the mask gives it).

    Examples
    --------
    >>> m = np.zeros((2, 20), np.uint8, order="F"); m[0, 1] = m[1, 19] = 1  # as NIfTI gives it: Fortran order
    >>> checked = CheckedMask(m, "gt")
    >>> checked.shape, checked.done
    ((2, 20), False)
    >>> mask, flat = checked.arrays()
    >>> bool(mask.flags.c_contiguous), mask.dtype, flat.tolist(), np.flatnonzero(mask).tolist(), checked.done
    (True, dtype('bool'), [1, 39], [1, 39], True)
    """

    def __init__(self, x: Any, name: str):
        self._flipped: np.ndarray | None = None
        self._result: tuple[np.ndarray, np.ndarray | None] | None = None
        if isinstance(x, np.ndarray) and x.ndim in (2, 3) and x.flags.f_contiguous and not x.flags.c_contiguous:
            self._flipped = as_binary_mask(x.T, name)  # C-contiguous: validated and viewed as bool, not copied
            self.shape: tuple[int, ...] = x.shape
        else:
            self._result = (as_binary_mask(x, name), None)
            self.shape = self._result[0].shape
        self.ndim = len(self.shape)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # pickled without its lock (a lock cannot be pickled)
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        """True once the C-ordered mask exists."""
        return self._result is not None

    def arrays(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The mask as a C-contiguous boolean array (equal to ``as_binary_mask(x, name)``), and its voxels' sorted
        flat (C-order) indices when finding the C-ordered mask found them already (else None)."""
        if self._result is None:
            with self._lock:
                if self._result is None:
                    self._result = self._from_fortran()
        return self._result

    def _from_fortran(self) -> tuple[np.ndarray, np.ndarray | None]:
        flipped, shape = self._flipped, self.shape
        assert flipped is not None
        limit = int(math.prod(shape) * SPARSE_COPY_FRACTION)
        if _scan_pays(flipped.size):  # C-order indices straight from the Fortran-ordered memory, one pass
            flat = _scan(flipped, shape, True, limit)
        else:
            found = np.flatnonzero(flipped)  # the Fortran-order flat indices of the input's voxels
            flat = (
                None if len(found) > limit else np.ravel_multi_index(np.unravel_index(found, shape, order="F"), shape)
            )
        if flat is None:  # dense: copied whole
            return np.ascontiguousarray(flipped.T), None
        flat.sort()
        mask = np.zeros(shape, dtype=bool)
        mask.reshape(-1)[flat] = True
        self._flipped = None
        return mask, flat


def _scan_pays(size: int) -> bool:
    """Whether a mask of ``size`` voxels is listed by the kernel of ``ccmetrics.engine._edge_kernels``: from
    ``scan_kernel_from`` voxels, once that module's kernels are loaded in this process (or numba is loaded and its
    cache holds them); a scan alone never pays for numba's import (its own kernel is compiled once where the cache
    lacks it, about 0.3 s). Always where the threshold is 0."""
    start = current().scan_kernel_from
    never = 1 << 62 if start else 0
    return size >= threshold("_edge_kernels", start, never, never)


def _scan(memory: np.ndarray, shape: tuple[int, ...], fortran: bool, limit: int) -> np.ndarray | None:
    """The kernel's list of a mask's voxels (``_edge_kernels.mask_voxels``), or None where it holds more than
    ``limit`` or the list's room cannot be had."""
    from ._edge_kernels import mask_voxels  # numba: imported when the kernel pays

    try:
        return mask_voxels(memory.reshape(-1), shape, fortran, limit)
    except MemoryError:  # the room of `limit` entries refused (a strict overcommit policy): numpy's two passes
        return None


def sorted_voxels(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(mask)`` of a C-contiguous boolean mask: the sorted flat indices of its voxels.

    Large masks (``scan_kernel_from`` voxels, :class:`ccmetrics.EngineConfig`, once the edge kernels are loaded) are
    listed by a numba kernel in one pass over their memory that skips zero 8-byte words (about 2 ms for 400 x 400 x
    300, against 4.7 ms for numpy's count and list); masks with more than ``SPARSE_COPY_FRACTION`` of their voxels
    set, whose list would not fit the room it takes, by numpy after the kernel stopped there (up to one pass more).

    Examples
    --------
    >>> sorted_voxels(np.array([[0, 1, 1], [1, 0, 0]], bool)).tolist()
    [1, 2, 3]
    """
    if mask.flags.c_contiguous and mask.dtype == bool and _scan_pays(mask.size):
        flat = _scan(mask, mask.shape, False, int(mask.size * SPARSE_COPY_FRACTION))
        if flat is not None:
            return flat
    return np.flatnonzero(mask)


def binary_mask_voxels(x: Any, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """A validated binary mask as a C-contiguous boolean array, and its voxels' sorted flat (C-order) indices when
    finding the mask's C-ordered copy found them already (else None: ``np.flatnonzero`` of the mask gives them).

    ``CheckedMask(x, name).arrays()``: see :class:`CheckedMask` for the work and its cost. The mask equals
    ``as_binary_mask(x, name)``.

    Examples
    --------
    >>> m = np.zeros((2, 20), np.uint8, order="F"); m[0, 1] = m[1, 19] = 1  # as NIfTI gives it: Fortran order
    >>> mask, flat = binary_mask_voxels(m, "gt")
    >>> bool(mask.flags.c_contiguous), mask.dtype, flat.tolist(), np.flatnonzero(mask).tolist()
    (True, dtype('bool'), [1, 39], [1, 39])
    >>> binary_mask_voxels(np.eye(2, dtype=bool), "gt")[1] is None  # C-ordered: nothing found yet
    True
    """
    return CheckedMask(x, name).arrays()


def coordinates(flat_index: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Voxel coordinates, shape (N, ndim), int64, of flat C-order indices into an image of ``shape``.

    Examples
    --------
    >>> coordinates(np.array([0, 5, 11]), (3, 4)).tolist()
    [[0, 0], [1, 1], [2, 3]]
    """
    return np.stack(np.unravel_index(flat_index, shape), axis=1)


@dataclass(frozen=True)
class Sites:
    """Voxels of the K Voronoi sites, grouped by site label.

    Attributes
    ----------
    shape : tuple of int
        Image shape.
    flat_index : ndarray of int64
        Flat (C-order) indices of all site voxels, sorted by site label, then index.
    label : ndarray of int32
        Site label (1..K) of each entry of ``flat_index`` (non-decreasing).
    starts : ndarray of int64, shape (K + 1,)
        Voxels of site k are ``flat_index[starts[k - 1]:starts[k]]``.
    source_label : ndarray
        For ``sites="labels"``, the original label value of each site; for
        components, simply 1..K.
    """

    shape: tuple[int, ...]
    flat_index: np.ndarray
    label: np.ndarray
    starts: np.ndarray
    source_label: np.ndarray
    #: the site voxels in raster order (sorted flat indices, the site label of each), when known: what
    #: :meth:`labels_at` searches; found from ``flat_index`` on first use otherwise
    raster: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)
    #: the :class:`Runs` of ``raster``'s voxels, when known (the components of a mask: their labelling found them)
    raster_runs: Runs | None = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        """Number of sites K."""
        return len(self.starts) - 1

    @property
    def volumes(self) -> np.ndarray:
        """Voxel count of each site (length K)."""
        return np.diff(self.starts)

    def labels_of_sources(self, values: np.ndarray) -> np.ndarray:
        """The site label (1..K) of each source label value in ``values`` (each one of ``source_label``).

        With ``sites="labels"`` this is the region of a voxel inside the GT, read from the label map
        itself: the identity when the labels are already 1..K, else a binary search over the K sorted
        source labels (never over the voxels).

        >>> s = find_sites(np.array([[0, 7, 7, 3]]), sites="labels")
        >>> s.labels_of_sources(np.array([7, 3, 7])).tolist()
        [2, 1, 2]
        """
        values = np.asarray(values)
        source = self.source_label
        if len(source) and int(source[0]) == 1 and int(source[-1]) == len(source):  # sorted and unique: 1..K
            return values.astype(np.int32)
        return (np.searchsorted(source, values) + 1).astype(np.int32)

    def label_map(self, flat: bool = False) -> np.ndarray:
        """The sites as an int32 label map: site label 1..K at site voxels, 0 elsewhere.

        ``flat=True`` gives the C-order flat array (what flat indices address). The
        zeros come from ``calloc``, so only the pages under the sites are written.

        >>> s = find_sites(np.array([[1, 0, 1], [0, 0, 1]], bool))
        >>> s.label_map().tolist()
        [[1, 0, 2], [0, 0, 2]]
        """
        out = np.zeros(int(np.prod(self.shape)), dtype=np.int32)
        out[self.flat_index] = self.label
        return out if flat else out.reshape(self.shape)

    def coords(self) -> np.ndarray:
        """Voxel coordinates of all site voxels, shape (N, ndim), int64."""
        return coordinates(self.flat_index, self.shape)

    def coordinate_sums(self) -> list[np.ndarray]:
        """Per axis, the sum of each site's voxel coordinates (float64 of length K; whole numbers, exact below 2**53).

        From the runs of the raster-ordered voxel list when they are known (:attr:`raster_runs`) and no run holds two
        sites: one product a run per axis, the last axis' run sums by formula, O(runs); else from every voxel's
        coordinates, O(N). The sums are whole numbers either way, so both give the same floats.

        >>> s = find_sites(np.array([[1, 1, 0, 1], [0, 0, 0, 1]], bool))
        >>> [v.tolist() for v in s.coordinate_sums()]
        [[0.0, 1.0], [1.0, 6.0]]
        """
        m, shape = self.n, self.shape
        runs = self.raster_runs
        if self.raster is not None and runs is not None:
            label = self.raster[1]
            site = label[runs.first].astype(np.int64)
            if np.array_equal(np.repeat(site, runs.length), label):  # every run within one site
                length = runs.length
                coords = np.unravel_index(runs.start, shape)
                sums = [np.bincount(site - 1, weights=c * length, minlength=m) for c in coords[:-1]]
                last = coords[-1] * length + length * (length - 1) // 2
                return [*sums, np.bincount(site - 1, weights=last, minlength=m)]
        which = self.label - 1
        return [np.bincount(which, weights=c, minlength=m) for c in np.unravel_index(self.flat_index, shape)]

    def labels_at(self, flat_query: np.ndarray) -> np.ndarray:
        """The site label (int32, 0 outside every site) at each queried flat index.

        The raster-ordered voxel list itself (``raster``, when known) is answered from it, O(N); small dense
        images gather from :meth:`label_map`; otherwise a binary search in the raster-ordered voxel list
        (sorted once on first use when unknown), so no image-sized map is built: O(M log N) for M queries and
        N site voxels.

        >>> s = find_sites(np.array([[1, 0, 1], [0, 0, 1]], bool))
        >>> s.labels_at(np.array([0, 1, 2, 5])).tolist()
        [1, 0, 2, 2]
        """
        q = np.asarray(flat_query, dtype=np.int64)
        n = len(self.flat_index)
        if self.raster is not None and len(q) == n and (q is self.raster[0] or np.array_equal(q, self.raster[0])):
            return self.raster[1].astype(np.int32, copy=True)  # every site voxel, in raster order: no search
        if math.prod(self.shape) <= 32 * (n + len(q)):
            return self.label_map(flat=True)[q]
        if self.raster is None:
            order = np.argsort(self.flat_index, kind="stable")
            object.__setattr__(self, "raster", (self.flat_index[order], self.label[order]))
        flat, label = self.raster  # type: ignore[misc]
        out = np.zeros(len(q), dtype=np.int32)
        if n:
            at = np.minimum(np.searchsorted(flat, q), n - 1)
            hit = flat[at] == q
            out[hit] = label[at[hit]]
        return out

    def edges(
        self, label_map: np.ndarray | None = None, own: Any = None, coords: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Edge voxels of every site and of the union of all sites (MONAI's rule: a face neighbour outside).

        A site voxel is an edge voxel of its site when one of its face neighbours (6 in 3D, 4 in
        2D) lies outside the image or outside the site, and an edge voxel of the union when that
        neighbour lies outside every site (:func:`ccmetrics.engine.surface.face_edges`).

        Parameters
        ----------
        label_map : ndarray, flat, size prod(shape), optional
            A map of the image that tells the sites apart at their voxels and is 0 elsewhere.
            Default: :meth:`label_map` (one int32 image); pass the input you already hold instead
            (a boolean mask of components, an instance label map) to build none.
        own : scalar or ndarray, optional
            The value a neighbour must have in ``label_map`` to be of the same site: one per site
            voxel, or one for all. Default ``self.label``; ``True`` with a boolean mask of
            components (face neighbours in the mask are in the same component whatever the
            connectivity); the source labels with an instance label map.
        coords : ndarray, optional
            :meth:`coords`, when already computed.

        Returns
        -------
        own_edge, union_edge : ndarray of bool, shape (N,)
            Per site voxel (in the order of ``flat_index``).

        Examples
        --------
        >>> s = find_sites(np.array([[1, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]], bool))
        >>> own, union = s.edges()
        >>> own.tolist() == union.tolist(), int(own.sum()), len(own)
        (True, 9, 9)
        >>> s = find_sites(np.array([[1, 1, 2, 2]]), "labels")
        >>> s.edges()[0].tolist(), s.edges()[1].tolist()
        ([True, True, True, True], [True, True, True, True])
        """
        from .surface import face_edges

        if label_map is None:
            label_map = self.label_map(flat=True)
        return face_edges(
            self.flat_index,
            self.coords() if coords is None else coords,
            self.shape,
            label_map,
            self.label if own is None else own,
        )

    @classmethod
    def grouped(
        cls, shape, flat_index: np.ndarray, label: np.ndarray, source_label: np.ndarray, raster: bool = False
    ) -> Sites:
        """Sites from voxels in any order: flat indices, site label 1..K of each, source label of each site.

        ``raster=True``: ``flat_index`` is sorted (raster order); the two arrays are then kept as
        :attr:`raster` for :meth:`labels_at`.
        """
        order = np.argsort(label, kind="stable")
        grouped_label = label[order].astype(np.int32, copy=False)
        counts = np.bincount(grouped_label, minlength=len(source_label) + 1)[1:]
        starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        kept = (np.asarray(flat_index, np.int64), np.asarray(label, np.int32)) if raster else None
        return cls(
            tuple(shape), flat_index[order].astype(np.int64, copy=False), grouped_label, starts, source_label, kept
        )


class Runs:
    """A sorted list of flat voxel indices as runs of consecutive voxels along the last axis.

    Runs never cross a row (a line along the last axis), so every run is one
    interval of one row.  :meth:`locate` finds arbitrary voxels in the list by
    a binary search over the R runs rather than over the N voxels.

    Attributes
    ----------
    first : ndarray of int64
        Position, in the voxel list, of each run's first voxel.
    start : ndarray of int64
        Flat index of each run's first voxel (increasing).
    length : ndarray of int64
        Voxels in each run.
    """

    def __init__(self, flat_index: np.ndarray, shape: Sequence[int]):
        flat_index = np.asarray(flat_index, dtype=np.int64)
        n, width = len(flat_index), int(shape[-1])
        begins = np.ones(n, dtype=bool)
        if n > 1:
            np.not_equal(flat_index[1:], flat_index[:-1] + 1, out=begins[1:])
            begins[1:] |= flat_index[1:] % width == 0  # a new row starts a new run
        self.first = np.flatnonzero(begins)
        self.start = flat_index[self.first]
        self.length = np.diff(np.append(self.first, n))
        self.shape = tuple(int(v) for v in shape)

    def __len__(self) -> int:
        return len(self.first)

    def locate(self, flat_query: np.ndarray) -> np.ndarray:
        """Position of each queried flat index in the voxel list, or -1 where it is not in the list."""
        q = np.asarray(flat_query, dtype=np.int64)
        if len(self.start) == 0:
            return np.full(q.shape, -1, dtype=np.int64)
        j = np.searchsorted(self.start, q, side="right") - 1
        jj = np.maximum(j, 0)
        offset = q - self.start[jj]
        found = (j >= 0) & (offset < self.length[jj])
        return np.where(found, self.first[jj] + offset, -1)


def _neighbour_rows(shape: Sequence[int], connectivity: int):
    """Forward neighbour rows of a row, as (row offsets per axis, reach along the last axis).

    Rows are lines along the last axis; two runs in neighbouring rows touch when
    their intervals, widened by the reach (1: corner/edge neighbours count, 0:
    only the voxel straight across), overlap.
    """
    if len(shape) == 2:
        return [((1,), 1 if connectivity == 8 else 0)]
    face = 0 if connectivity == 6 else 1
    rows = [((0, 1), face), ((1, 0), face)]
    if connectivity != 6:  # rows diagonal in the first two axes
        reach = 1 if connectivity == 26 else 0
        rows += [((1, -1), reach), ((1, 1), reach)]
    return rows


def run_components(
    flat_index: np.ndarray, shape: Sequence[int], connectivity: int, runs: Runs | None = None
) -> tuple[np.ndarray, int]:
    """Connected components of a sorted voxel list, numbered in raster order of their first voxel.

    Parameters
    ----------
    flat_index : ndarray of int64
        Sorted flat (C-order) indices of the foreground voxels.
    shape : sequence of int
        Image shape (2D or 3D).
    connectivity : int
        8 or 4 in 2D; 26, 18 or 6 in 3D.
    runs : Runs, optional
        ``Runs(flat_index, shape)``, when already built.

    Returns
    -------
    labels : ndarray of int32
        Component (1..n) of each voxel of ``flat_index``.
    n : int

    >>> import numpy as np
    >>> mask = np.array([[1, 1, 0, 0], [0, 0, 0, 1], [1, 0, 0, 1]], bool)
    >>> run_components(np.flatnonzero(mask), mask.shape, 8)
    (array([1, 1, 2, 3, 2], dtype=int32), 3)
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    runs = Runs(flat_index, shape) if runs is None else runs
    if len(runs) == 0:
        return np.zeros(0, dtype=np.int32), 0
    width = int(shape[-1])
    row = runs.start // width
    x0 = runs.start - row * width
    x1 = x0 + runs.length - 1
    end = runs.start + runs.length - 1
    row_index = np.unravel_index(row, tuple(shape[:-1]))
    sources, targets = [], []
    for offsets, reach in _neighbour_rows(shape, connectivity):
        valid = np.ones(len(runs), dtype=bool)
        for coord, step, size in zip(row_index, offsets, shape[:-1]):
            valid &= (coord + step >= 0) & (coord + step < size)
        a = np.flatnonzero(valid)
        target = np.ravel_multi_index(tuple(c[a] + s for c, s in zip(row_index, offsets)), tuple(shape[:-1]))
        base = target.astype(np.int64) * width
        lo = np.searchsorted(end, base + np.maximum(x0[a] - reach, 0), side="left")
        hi = np.searchsorted(runs.start, base + np.minimum(x1[a] + reach, width - 1), side="right")
        count = np.maximum(hi - lo, 0)
        if count.sum() == 0:
            continue
        sources.append(np.repeat(a, count))
        first = np.repeat(lo - np.concatenate(([0], np.cumsum(count)[:-1])), count)
        targets.append(first + np.arange(int(count.sum())))
    r = len(runs)
    if sources:
        i, j = np.concatenate(sources), np.concatenate(targets)
    else:
        i = j = np.zeros(0, dtype=np.int64)
    graph = coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(r, r)).tocsr()
    n, raw = connected_components(graph, directed=True, connection="weak")
    # renumber in raster order of the first voxel (runs are in raster order)
    _, first_run = np.unique(raw, return_index=True)
    renumber = np.empty(n, dtype=np.int32)
    renumber[raw[np.sort(first_run)]] = np.arange(1, n + 1, dtype=np.int32)
    return np.repeat(renumber[raw], runs.length), int(n)


def cc3d_label(mask: np.ndarray, connectivity: int) -> tuple[np.ndarray, int]:
    """``cc3d.connected_components`` on a boolean array, with a guard for a cc3d bug.

    cc3d 4.1 fails ("maximum length exception") on some small, sparse arrays,
    e.g. ``[1, 0, 1]`` of shape (3, 1, 1) or the 8 corners of a 3x3x3 cube at
    26-connectivity.  A one-voxel background border avoids it and changes no
    component: small arrays are always padded, large ones only on failure.
    """

    label: Any = cc3d.connected_components  # its stubs type `connectivity` as a Literal of the allowed values

    def padded() -> tuple[np.ndarray, int]:
        labels, n = label(np.pad(mask, 1), connectivity=connectivity, return_N=True, binary_image=True)
        return labels[tuple(slice(1, 1 + size) for size in mask.shape)], n

    if mask.size <= current().pad_below:
        return padded()
    try:
        return label(mask, connectivity=connectivity, return_N=True, binary_image=True)
    except RuntimeError:  # pragma: no cover (not seen on large arrays)
        return padded()


def component_labels(
    mask: np.ndarray, flat_index: np.ndarray, connectivity: int, runs: Runs | None = None
) -> tuple[np.ndarray, int]:
    """Component label (1..n, raster order of the first voxel) of each foreground voxel of ``mask``.

    ``flat_index`` holds the sorted flat indices of the foreground (``np.flatnonzero(mask)``).
    Sparse foregrounds (fewer than one run per 256 voxels of their bounding box: lesions,
    organs) use the run graph of :func:`run_components`, whose cost and memory grow with the
    foreground only; fragmented ones (noise, many tiny specks) are labelled by cc3d on their
    bounding box (a view of ``mask``), where the label image is the cheaper structure.
    ``runs`` may pass ``Runs(flat_index, mask.shape)`` when already built.
    """
    runs = Runs(flat_index, mask.shape) if runs is None else runs
    if len(runs) == 0:
        return np.zeros(0, dtype=np.int32), 0
    first = np.unravel_index(runs.start, mask.shape)
    last = np.unravel_index(runs.start + runs.length - 1, mask.shape)
    lo = [int(c.min()) for c in first]
    hi = [int(c.max()) + 1 for c in last]
    if len(runs) * current().dense_runs < math.prod(b - a for a, b in zip(lo, hi)):
        return run_components(flat_index, mask.shape, connectivity, runs)
    crop = mask[tuple(slice(a, b) for a, b in zip(lo, hi))]
    labelled, n = cc3d_label(crop, connectivity)
    raw = labelled[tuple(c - a for c, a in zip(first, lo))]  # one label per run
    del labelled
    # renumber in raster order of the first voxel (runs are sorted, so first occurrence = first voxel)
    _, first_run = np.unique(raw, return_index=True)
    renumber = np.zeros(n + 1, dtype=np.int32)
    renumber[raw[np.sort(first_run)]] = np.arange(1, n + 1, dtype=np.int32)
    return np.repeat(renumber[raw], runs.length), int(n)


def raster_sites(
    array: np.ndarray, sites: str, connectivity: int, flat: np.ndarray | None = None, runs: Runs | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Runs]:
    """The sites of a validated GT in raster order, before grouping.

    ``array`` is a boolean mask (``sites="components"``, labelled with ``connectivity``)
    or an integer label map (``sites="labels"``).  Returns the sorted flat indices of all
    site voxels (int64), the site label 1..K of each (int32), the source label of each
    site and the voxels' :class:`Runs`.  :meth:`Sites.grouped` turns the first three into
    :class:`Sites`.  ``flat`` (``np.flatnonzero(array)``) and ``runs`` may be passed when
    already computed: the image is then not scanned again.
    """
    if flat is None:
        flat = sorted_voxels(array) if array.dtype == bool else np.flatnonzero(array)
    runs = Runs(flat, array.shape) if runs is None else runs
    if sites == "labels":
        source, inverse = np.unique(array.ravel()[flat], return_inverse=True)
        return flat, (inverse + 1).astype(np.int32), source, runs
    labels, n = component_labels(array, flat, connectivity, runs)
    return flat, labels, np.arange(1, n + 1), runs


def _component_sites(
    mask: np.ndarray, connectivity: int, flat: np.ndarray | None = None, runs: Runs | None = None
) -> Sites:
    flat, labels, source, runs = raster_sites(mask, "components", connectivity, flat, runs)
    found = Sites.grouped(mask.shape, flat, labels, source, raster=True)
    object.__setattr__(found, "raster_runs", runs)  # kept: per-site sums over runs (results.prediction_table)
    return found


def find_sites(gt: Any, sites: str = "components", connectivity: int | None = None) -> Sites:
    """Validate ``gt`` and return its Voronoi sites.

    Parameters
    ----------
    gt : array_like or torch.Tensor
        Binary mask (``sites="components"``) or instance label map
        (``sites="labels"``), 2D or 3D.
    sites : {"components", "labels"}
        Connected components of the foreground, or one site per label value
        (touching instances stay separate; label values are sorted and
        renumbered 1..K, see ``Sites.source_label``).
    connectivity : int, optional
        For components: 26 (default), 18 or 6 in 3D; 8 (default) or 4 in 2D.
    """
    mode = as_sites_mode(sites)
    if mode == "labels":
        label_map = as_label_map(gt, "gt")
        as_connectivity(connectivity, label_map.ndim)  # validated, unused: labels define the sites
        return Sites.grouped(label_map.shape, *raster_sites(label_map, "labels", 0)[:3], raster=True)
    mask = as_binary_mask(gt, "gt")
    return _component_sites(mask, as_connectivity(connectivity, mask.ndim))


class ComponentCache:
    """Connected components of one validated boolean mask, computed once per connectivity.

    Lets several metrics of one case share the labelling work. ``flat`` (the sorted flat indices of the
    mask's voxels) and ``runs`` (their :class:`Runs`), when the caller holds them already (the engine's
    prediction voxel list), spare every labelling its pass over the image.
    """

    def __init__(
        self,
        mask: np.ndarray,
        known: Sites | None = None,
        connectivity: int | None = None,
        flat: np.ndarray | None = None,
        runs: Runs | None = None,
    ):
        self.mask = mask
        self._sites: dict = {}
        self._flat, self._runs = flat, runs
        if known is not None:  # components already found for this connectivity
            self._sites[as_connectivity(connectivity, mask.ndim)] = known

    def __call__(self, connectivity: int | None = None) -> Sites:
        conn = as_connectivity(connectivity, self.mask.ndim)
        if conn not in self._sites:
            if self._flat is None:
                self._flat = sorted_voxels(self.mask)
            if self._runs is None:
                self._runs = Runs(self._flat, self.mask.shape)
            self._sites[conn] = _component_sites(self.mask, conn, self._flat, self._runs)
        return self._sites[conn]


def label_components(mask: Any, connectivity: int | None = None) -> tuple[np.ndarray, int]:
    """Label the connected components of a binary mask.

    Parameters
    ----------
    mask : array_like or torch.Tensor
        Binary 2D or 3D mask (bool, 0/1 integers or 0.0/1.0 floats).
    connectivity : int, optional
        26 (default), 18 or 6 in 3D; 8 (default) or 4 in 2D.

    Returns
    -------
    labels : ndarray of int32
        0 for background, 1..n for the components, numbered in raster (C) order
        of their first voxel.
    n : int
        Number of components.

    Examples
    --------
    >>> import numpy as np
    >>> from ccmetrics import label_components
    >>> mask = np.array([[1, 1, 0, 0],
    ...                  [0, 0, 0, 1],
    ...                  [1, 0, 0, 1]])
    >>> labels, n = label_components(mask)
    >>> n
    3
    >>> labels
    array([[1, 1, 0, 0],
           [0, 0, 0, 2],
           [3, 0, 0, 2]], dtype=int32)
    """
    found = find_sites(mask, "components", connectivity)
    return found.label_map(), found.n
