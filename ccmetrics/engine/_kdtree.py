"""A k-d tree with tight node boxes for exact nearest-point distances (numba kernels behind ``surface``).

Why not scipy's ``cKDTree`` everywhere: its queries bound a node by the splitting planes above it, not by
the node's points, so from afar a flat point set (the edge voxels of a large prediction seen from a lesion
in its middle) looks as near as the query's own plane: a query visits every leaf within the distance of
its nearest point, tens of microseconds for each of thousands of queries. Here every node keeps the
bounding box of its own points, so a node is visited only when its box is nearer than the best point so
far; a query also starts from the nearest point of the query before it (queries come in raster order).

Exactness. A point's squared distance is summed axis by axis as scipy's KD-tree sums it,
``r = 0; r += (x_k - y_k)**2`` in float64 (no fused multiply-add), and the answer is the smallest of
these rounded values over all points, then its square root. A node is skipped only when the squared
distance to its box, summed over the axes in the same order, exceeds the best value so far: each term
of the box sum is a rounded square of a rounded difference no larger than the point's (rounding is
monotone), so the box sum never exceeds the rounded distance of any point inside (zero and subnormal
values included), and no point at the rounded minimum is ever skipped. This equals scipy's answer
except where scipy's own pruning, which updates node bounds incrementally, rounds past the nearest
point: an adversarial search found such sets (a few ulps between near-ties, at coordinates of 1e2 to
1e9), one query in about 16 million there, never on voxel lattices, and the float32 values callers keep
were equal in those cases. Whether scipy's build sums as above on this machine (a compiler may fuse the
multiply-add on CPUs with FMA) is checked once per process on random points (:func:`matches_scipy`);
where it does not, callers keep scipy.

Cost: build O(n log n) for voxel coordinates (midpoint splits of the widest box side, both sides never
empty: depth about 3 log2 of the extent; clustered floating-point data with coordinates spread over
hundreds of binary orders can make the tree deep and 5-10x slower than scipy's); a query O(log n) for
points near the set and, unlike scipy's tree, also for points far from a flat set. Kernels release the
GIL, so callers' threads run queries side by side.
"""

from __future__ import annotations

import numba
import numpy as np

from ._launch import HELPER_OPTIONS, KERNEL_OPTIONS, Kernel, share

_LEAF = 32
_PARALLEL_CHUNK = 4096  # queries per parallel task (each chunk starts its own chain of hints)


#: entries of the work stacks: a midpoint split at least halves the widest side's width, which for float64
#: coordinates can happen at most about 2100 times per axis, so no tree is deeper than 4 * 2100 levels and
#: a depth-first stack never holds more than two entries per level
_STACK = 1 << 15


@numba.njit(**HELPER_OPTIONS)
def _bounds(points, perm, first, stop, box, k):
    """box[k] = the lows (columns 0-3) and highs (4-7) of points[perm[first:stop]] (padding axes 0)."""
    m = points.shape[1]
    for d in range(4):
        box[k, d] = np.inf if d < m else 0.0
        box[k, 4 + d] = -np.inf if d < m else 0.0
    for i in range(first, stop):
        p = perm[i]
        for d in range(m):
            v = points[p, d]
            if v < box[k, d]:
                box[k, d] = v
            if v > box[k, 4 + d]:
                box[k, 4 + d] = v


@numba.njit(**KERNEL_OPTIONS)
def _build(points, leafsize):  # pragma: no cover (compiled)
    """Tree over ``points`` (n, m <= 4) float64: ``(pts, nodes, box, perm)``.

    ``pts`` (n, 4): the points in tree order (``pts[i]`` is ``points[perm[i]]``), padded with zero
    coordinates (adding 0.0 to a sum is exact); node i holds ``pts[nodes[i, 0]:nodes[i, 1]]`` inside
    its box ``box[i, :4]`` (lows) to ``box[i, 4:]`` (highs); its children are ``nodes[i, 2]`` and
    ``nodes[i, 2] + 1`` (negative: a leaf); node 0 is the root. Rows past the last node are unused.
    """
    n, m = points.shape
    perm = np.empty(n, np.int64)  # 0, 1, ..., n - 1 (a loop: np.arange and np.zeros would each compile an overload)
    for i in range(n):
        perm[i] = i
    cap = 2 * (n // leafsize) + 16
    nodes = np.empty((cap, 3), np.int64)  # start, end, left
    box = np.empty((cap, 8))
    nodes[0, 0], nodes[0, 1] = 0, n
    _bounds(points, perm, np.int64(0), np.int64(n), box, np.int64(0))  # int64: one version (no literals)
    count = 1
    stack = np.empty(_STACK, np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        nodes[node, 2] = -1
        s, e = nodes[node, 0], nodes[node, 1]
        if e - s <= leafsize:
            continue
        dim = 0
        width = -1.0
        for d in range(m):
            w = box[node, 4 + d] - box[node, d]
            if w > width:
                width, dim = w, d
        if width <= 0.0:
            continue  # all points equal: one leaf
        low, high = box[node, dim], box[node, 4 + dim]
        split = 0.5 * (low + high)
        if split <= low:  # high is the next float after low
            split = high
        i, j = s, e - 1  # partition perm[s:e]: coordinate < split first
        while i <= j:
            if points[perm[i], dim] < split:
                i += 1
            else:
                perm[i], perm[j] = perm[j], perm[i]
                j -= 1
        if i == s or i == e:
            continue
        if count + 2 > cap:  # grow the node arrays
            cap = 2 * cap
            grown_nodes = np.empty((cap, 3), np.int64)
            grown_box = np.empty((cap, 8))
            for r in range(count):  # here, not in a helper: one typed for two arrays compiled twice (0.3 s more)
                for c in range(3):  # loops: numba compiles a slice assignment about 10x slower
                    grown_nodes[r, c] = nodes[r, c]
                for c in range(8):
                    grown_box[r, c] = box[r, c]
            nodes, box = grown_nodes, grown_box
        a = count
        count += 2
        nodes[node, 2] = a
        nodes[a, 0], nodes[a, 1] = s, i
        nodes[a + 1, 0], nodes[a + 1, 1] = i, e
        _bounds(points, perm, np.int64(s), np.int64(i), box, np.int64(a))
        _bounds(points, perm, np.int64(i), np.int64(e), box, np.int64(a + 1))
        stack[top] = a
        stack[top + 1] = a + 1
        top += 2
    pts = np.empty((n, 4))
    for i in range(n):
        for d in range(m):
            pts[i, d] = points[perm[i], d]
        for d in range(m, 4):
            pts[i, d] = 0.0
    return pts, nodes, box, perm


@numba.njit(**KERNEL_OPTIONS)
def _query_range(pts, nodes, box, queries, bound2, out, index, first, stop):  # pragma: no cover (compiled)
    """:func:`query` for the queries first to stop; ``index``: the nearest point's row in ``pts`` (-1: none)."""
    m = queries.shape[1]
    stack = np.empty(_STACK, np.int64)
    hint = -1
    for qi in range(first, stop):
        q0 = queries[qi, 0]
        q1 = queries[qi, 1] if m > 1 else 0.0
        q2 = queries[qi, 2] if m > 2 else 0.0
        q3 = queries[qi, 3] if m > 3 else 0.0
        best = bound2
        found = -1
        if hint >= 0:  # the previous query's nearest point: a tight first bound for raster-ordered queries
            r = _point(pts, hint, q0, q1, q2, q3)
            if r < best:
                best, found = r, hint
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            if _box(box, node, q0, q1, q2, q3) > best:
                continue
            child = nodes[node, 2]
            if child < 0:
                for i in range(nodes[node, 0], nodes[node, 1]):
                    r = _point(pts, i, q0, q1, q2, q3)
                    if r < best:
                        best, found = r, i
                continue
            da = _box(box, child, q0, q1, q2, q3)
            db = _box(box, child + 1, q0, q1, q2, q3)
            near, far, dn, df = (child, child + 1, da, db) if da <= db else (child + 1, child, db, da)
            if df <= best:  # the nearer child is popped first
                stack[top] = far
                top += 1
            if dn <= best:
                stack[top] = near
                top += 1
        index[qi] = found
        if found >= 0:
            out[qi] = np.sqrt(best)
            hint = found
        else:
            out[qi] = np.inf


@numba.njit(**HELPER_OPTIONS, inline="always")
def _point(pts, i, q0, q1, q2, q3):
    """Squared distance summed axis by axis from 0.0, as scipy's KD-tree sums it."""
    r = 0.0
    a = q0 - pts[i, 0]
    r += a * a
    a = q1 - pts[i, 1]
    r += a * a
    a = q2 - pts[i, 2]
    r += a * a
    a = q3 - pts[i, 3]
    r += a * a
    return r


@numba.njit(**HELPER_OPTIONS, inline="always")
def _side(x, lo, hi):
    a = max(lo - x, x - hi, 0.0)  # at most one of the two differences is positive
    return a * a


@numba.njit(**HELPER_OPTIONS, inline="always")
def _box(box, k, q0, q1, q2, q3):
    return (
        _side(q0, box[k, 0], box[k, 4])
        + _side(q1, box[k, 1], box[k, 5])
        + _side(q2, box[k, 2], box[k, 6])
        + _side(q3, box[k, 3], box[k, 7])
    )


#: one version each: float64 points of any strides (coordinates of 1 to 4 axes), int64 nodes
_BUILD = Kernel(_build, "(float64[:, :], int64)")
_QUERY = Kernel(
    _query_range,
    "void(float64[:, :], int64[:, :], float64[:, :], float64[:, :], float64, float64[:], int64[:], int64, int64)",
)


def build(points: np.ndarray, leafsize: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tree ``(pts, nodes, box)`` over ``points`` (n, m <= 4) float64, leaves of at most ``leafsize`` points
    (``pts``: the points in tree order, padded to 4 coordinates)."""
    return _BUILD(points, leafsize)[:3]


def query(pts, nodes, box, queries, bound2, out, index=None) -> None:
    """Squared-distance minimum of each query (k, m) over the tree's points, square-rooted, into ``out``
    (float64): ``inf`` where no point is nearer than ``bound2`` (squared; ``inf`` for no bound); with ``index``
    (int64), the nearest point's row in ``pts`` too (-1 where none)."""
    index = np.empty(len(queries), np.int64) if index is None else index
    _QUERY(pts, nodes, box, queries, bound2, out, index, 0, len(queries))


def query_parallel(pts, nodes, box, queries, bound2, out, chunk, index=None) -> None:
    """:func:`query` with chunks of ``chunk`` queries shared between the CPU cores (same values)."""
    index = np.empty(len(queries), np.int64) if index is None else index
    share(_QUERY, len(queries), (pts, nodes, box, queries, bound2, out, index), chunk)


def nearest_distances(source: np.ndarray, target: np.ndarray, bound: float = np.inf, workers: int = 1) -> np.ndarray:
    """Distance (float64) from each source point to the nearest target point, as scipy's KD-tree gives it.

    Parameters
    ----------
    source, target : ndarray of float64, shape (N, m), (M, m), 1 <= m <= 4, M >= 1
    bound : float
        Points at ``bound`` or farther are not neighbours: ``inf`` where none is nearer (as scipy's
        ``distance_upper_bound``).
    workers : int
        More than 1: the queries are shared between the CPU cores (numba's threads; call it from one
        thread at a time). Same values.

    Examples
    --------
    >>> import numpy as np
    >>> nearest_distances(np.array([[0.0, 0.0], [9.0, 9.0]]), np.array([[3.0, 4.0], [9.0, 8.0]]))
    array([5., 1.])
    """
    return nearest_points(source, target, bound, workers)[0]


def nearest_points(
    source: np.ndarray, target: np.ndarray, bound: float = np.inf, workers: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`nearest_distances` and which target point is the nearest: ``(distance, index)``.

    ``index`` (int64) is a row of ``target`` at the minimum distance, ``len(target)`` where no point is
    nearer than ``bound`` (as scipy's ``cKDTree.query``).

    Examples
    --------
    >>> import numpy as np
    >>> nearest_points(np.array([[0.0, 0.0], [9.0, 9.0]]), np.array([[3.0, 4.0], [9.0, 8.0]]))
    (array([5., 1.]), array([0, 1]))
    """
    source = np.ascontiguousarray(source, dtype=np.float64)
    if source.ndim != 2 or np.ndim(target) != 2 or not 1 <= source.shape[1] == np.shape(target)[1] <= 4:
        raise ValueError(
            f"source and target must be (N, m) and (M, m) point arrays with 1 <= m <= 4, "
            f"got shapes {source.shape} and {np.shape(target)}"
        )
    if len(target) == 0:
        raise ValueError("target is empty: there is no nearest point")
    pts, nodes, box, perm = _BUILD(np.ascontiguousarray(target, dtype=np.float64), _LEAF)
    out = np.empty(len(source))
    found = np.empty(len(source), np.int64)
    bound2 = float(bound) * float(bound)
    if workers > 1 and len(source) >= 2 * _PARALLEL_CHUNK:
        query_parallel(pts, nodes, box, source, bound2, out, _PARALLEL_CHUNK, found)
    else:
        query(pts, nodes, box, source, bound2, out, found)
    index = np.full(len(source), len(perm), dtype=np.int64)
    hit = found >= 0
    index[hit] = perm[found[hit]]
    return out, index


_MATCHES: list = []


def matches_scipy() -> bool:
    """Whether :func:`nearest_distances` equals scipy's ``cKDTree.query`` bit for bit on this machine.

    Checked once per process on random points in 2, 3 and 4 dimensions, where a fused multiply-add in
    scipy's compiled sum (some compilers and CPUs) would change the last bits of most distances.
    """
    if not _MATCHES:
        from scipy.spatial import cKDTree

        rng = np.random.default_rng(20261122)
        same = True
        for m in (2, 3, 4):
            target, source = rng.normal(size=(400, m)) * 37.3, rng.normal(size=(400, m)) * 41.9
            same &= bool(np.array_equal(cKDTree(target).query(source)[0], nearest_distances(source, target)))
        _MATCHES.append(same)
    return _MATCHES[0]
