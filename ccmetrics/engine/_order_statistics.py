"""Two order statistics of the distances from a forest of k-d trees to a tree, without measuring them all.

:func:`order_statistics` gives the k_lo-th and k_hi-th smallest (from 0) distances from the points under some
roots of a forest (the prediction components' trees shared by the lesions they touch,
``ccmetrics.metrics.lesions``) to the points of a GT tree: what a lesion's 95th percentile of the prediction
-> GT distances needs (torch's quantile interpolates between two ranks). Every frontier node carries bounds of
its points' distances (the distance of its box centre to the GT, minus and plus the box's half diagonal). Each
round takes the k-th smallest lower bound and upper bound over the frontier (each node counted with its
points) and the exact distances found so far: nodes entirely below or above them are settled (counted or
dropped), the others split, and leaves straddling them are measured point by point. So one lesion never costs
the size of a large component it shares with many others.

The nearest-point search sums squared distances as :mod:`ccmetrics.engine._kdtree` does (scipy's order,
``r = 0; r += (x_k - y_k)**2`` in float64), so the distances it measures are theirs, bit for bit. The trees are
those of :func:`ccmetrics.engine._kdtree.build` (4 coordinates: the physical ones, padded). numba compiles the
kernels on first use (or loads them from its cache); this module is imported only when they are needed.
"""

from __future__ import annotations

import numba
import numpy as np

from ._launch import HELPER_OPTIONS, KERNEL_OPTIONS, Kernel

__all__ = ["order_statistics"]


@numba.njit(**HELPER_OPTIONS)
def _nearest(queries, gpts, gnodes, gbox, stack):  # pragma: no cover (compiled)
    """The distance from each query point to the nearest point of the GT tree (gpts, gnodes, gbox)."""
    found = np.empty(len(queries))
    for qi in range(len(queries)):
        best = np.inf
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            r = 0.0
            for d in range(4):
                a = max(gbox[node, d] - queries[qi, d], queries[qi, d] - gbox[node, 4 + d], 0.0)
                r += a * a
            if r > best:
                continue
            child = gnodes[node, 2]
            if child < 0:
                for i in range(gnodes[node, 0], gnodes[node, 1]):
                    r = 0.0
                    for d in range(4):
                        a = queries[qi, d] - gpts[i, d]
                        r += a * a
                    if r < best:
                        best = r
            else:
                stack[top] = child
                stack[top + 1] = child + 1
                top += 2
        found[qi] = np.sqrt(best)
    return found


@numba.njit(**HELPER_OPTIONS)
def _queries(pts, nodes, box, rows, leaves, n_leaf_points):  # pragma: no cover (compiled)
    """The frontier's box centres and their half diagonals, then every point of the leaves to measure."""
    n = len(rows)
    queries = np.empty((n + n_leaf_points, 4))  # every row written below (np.zeros would compile an overload)
    radius = np.empty(n)
    for i in range(n):
        k = rows[i]
        r = 0.0
        for d in range(4):
            queries[i, d] = 0.5 * (box[k, d] + box[k, 4 + d])
            h = 0.5 * (box[k, 4 + d] - box[k, d])
            r += h * h
        radius[i] = np.sqrt(r)
    q = n
    for leaf in leaves:
        for j in range(nodes[leaf, 0], nodes[leaf, 1]):
            for d in range(4):
                queries[q, d] = pts[j, d]
            q += 1
    for r in range(q, n + n_leaf_points):  # none, where n_leaf_points counts the leaves' points
        for d in range(4):
            queries[r, d] = 0.0
    return queries, radius


@numba.njit(**HELPER_OPTIONS)
def _weighted_rank(v, c, rank):  # pragma: no cover (compiled)
    """The rank-th smallest (from 0) of the values ``v``, each counted ``c`` times (a weighted quickselect that
    reorders ``v`` and ``c``); inf when there are not so many."""
    first, stop = 0, len(v)
    while True:
        if stop - first <= 16:  # an insertion sort (numba's argsort costs seconds of compilation)
            for i in range(first + 1, stop):
                x, y = v[i], c[i]
                j = i - 1
                while j >= first and v[j] > x:
                    v[j + 1], c[j + 1] = v[j], c[j]
                    j -= 1
                v[j + 1], c[j + 1] = x, y
            acc = 0
            for i in range(first, stop):
                acc += c[i]
                if acc > rank:
                    return v[i]
            return np.inf
        x, y, z = v[first], v[(first + stop) // 2], v[stop - 1]
        pivot = max(min(x, y), min(max(x, y), z))
        lt, i, gt = first, first, stop - 1
        while i <= gt:
            if v[i] < pivot:
                v[lt], v[i] = v[i], v[lt]
                c[lt], c[i] = c[i], c[lt]
                lt += 1
                i += 1
            elif v[i] > pivot:
                v[gt], v[i] = v[i], v[gt]
                c[gt], c[i] = c[i], c[gt]
                gt -= 1
            else:
                i += 1
        low = 0
        for j in range(first, lt):
            low += c[j]
        if rank < low:
            stop = lt
            continue
        equal = 0
        for j in range(lt, gt + 1):
            equal += c[j]
        if rank < low + equal:
            return pivot
        rank -= low + equal
        first = gt + 1


@numba.njit(**HELPER_OPTIONS)
def _bound(bounds, count, exact, m, rank):  # pragma: no cover (compiled)
    """The rank-th smallest of the frontier's bounds (each node counted with its points) and the exact distances."""
    n = len(bounds)
    v = np.empty(n + m)
    c = np.empty(n + m, np.int64)
    for i in range(n):
        v[i], c[i] = bounds[i], count[i]
    for i in range(m):
        v[n + i], c[n + i] = exact[i], 1
    return _weighted_rank(v, c, rank)


@numba.njit(**KERNEL_OPTIONS)
def _settle(pts, nodes, box, roots, gpts, gnodes, gbox, k_lo, k_hi):  # pragma: no cover (compiled)
    """The exact distances left around the k_lo-th and k_hi-th smallest (from 0) distances from the points under
    the nodes ``roots`` of the forest (pts, nodes, box) to the GT tree (gpts, gnodes, gbox), and how many
    points lie below them: the ranks k - below among those distances sorted; see the module docstring."""
    stack = np.empty(1 << 15, np.int64)
    n = len(roots)
    rows = np.empty(n, np.int64)
    for i in range(n):
        rows[i] = roots[i]
    count = np.empty(n, np.int64)
    for i in range(n):
        count[i] = nodes[roots[i], 1] - nodes[roots[i], 0]
    n_leaf_points = np.int64(0)  # int64 from the start: one version of _queries (no literal)
    leaves = np.empty(0, np.int64)
    exact = np.empty(64)
    m = 0
    below = 0
    lo = np.empty(n)
    hi = np.empty(n)
    while n > 0 or n_leaf_points > 0:
        # 1. nearest GT point of every frontier box centre and of every point of the leaves to measure
        queries, radius = _queries(pts, nodes, box, rows, leaves, n_leaf_points)
        found = _nearest(queries, gpts, gnodes, gbox, stack)
        for i in range(n):
            slack = 1e-9 * (found[i] + radius[i]) + 1e-9  # far above the rounding of any distance
            lo[i] = found[i] - radius[i] - slack
            hi[i] = found[i] + radius[i] + slack
        if m + n_leaf_points > len(exact):
            grown = np.empty(2 * (m + n_leaf_points))
            for i in range(m):  # loops: a slice assignment costs seconds of compilation
                grown[i] = exact[i]
            exact = grown
        for i in range(n_leaf_points):
            exact[m + i] = found[n + i]
        m += n_leaf_points
        if n == 0:
            break
        # 2. bounds of the two order statistics among the points not settled yet
        lower = _bound(lo, count, exact, m, k_lo - below)
        upper = _bound(hi, count, exact, m, k_hi - below)
        # 3. settle what lies below or above both; split the rest, measure the straddling leaves
        kept = 0
        for i in range(m):
            if exact[i] < lower:
                below += 1
            elif exact[i] <= upper:
                exact[kept] = exact[i]
                kept += 1
        m = kept
        new_rows = np.empty(2 * n, np.int64)
        leaves = np.empty(n, np.int64)
        n_new = 0
        n_leaves = 0
        n_leaf_points = 0
        for i in range(n):
            if hi[i] < lower:
                below += count[i]
            elif lo[i] <= upper:
                child = nodes[rows[i], 2]
                if child < 0:
                    leaves[n_leaves] = rows[i]
                    n_leaves += 1
                    n_leaf_points += count[i]
                else:
                    new_rows[n_new] = child
                    new_rows[n_new + 1] = child + 1
                    n_new += 2
        leaves = leaves[:n_leaves]
        n = n_new
        rows = new_rows[:n]
        count = np.empty(n, np.int64)
        for i in range(n):
            count[i] = nodes[rows[i], 1] - nodes[rows[i], 0]
        lo = np.empty(n)
        hi = np.empty(n)
    return exact[:m], below


_SETTLE = Kernel(
    _settle,
    "(float64[:, :], int64[:, :], float64[:, :], int64[:], float64[:, :], int64[:, :], float64[:, :], int64, int64)",
)


def order_statistics(pts, nodes, box, roots, gpts, gnodes, gbox, k_lo: int, k_hi: int) -> tuple[float, float]:
    """The k_lo-th and k_hi-th smallest (from 0) distances from the points under the nodes ``roots`` of the
    forest (pts, nodes, box) to the GT tree (gpts, gnodes, gbox); see the module docstring."""
    exact, below = _SETTLE(pts, nodes, box, roots, gpts, gnodes, gbox, k_lo, k_hi)
    ordered = np.sort(exact)
    return float(ordered[k_lo - below]), float(ordered[k_hi - below])
