"""Separable nearest-label transform with a second-label bound (numba kernels behind ``partition``).

For every voxel x of a label map (sites > 0, background 0) the transform computes

* ``d1(x)``: the squared physical distance to the nearest site voxel,
* ``l1(x)``: the label of a site voxel at that distance,
* ``d2(x)``: the squared distance to the nearest site voxel whose label is *not* ``l1(x)``,

in three one-dimensional passes (axis 2, then 1, then 0), as the separable squared EDT of Saito and
Toriwaki with the lower envelope of parabolas of Felzenszwalb and Huttenlocher in each line. The pair
``(d1, l1)`` travels through the passes as in a feature transform; ``d2`` follows from the same
decomposition: the nearest voxel of another label than ``L`` seen from x in a line is, for every
position q of the line, ``d1(q)`` when ``l1(q) != L`` and ``d2(q)`` otherwise, so each line takes one
lower envelope for ``d1`` and one per distinct label of its ``l1`` (1 to 3 in a typical line).

Exactness. The envelopes are evaluated in float64, their breakpoints from offsets between parabolas
(no ``w q^2`` term, whose rounding on long lines would swallow the differences it compares), and the
three maps are stored between passes in float32 (d1, d2) and int32 (l1). Each pass multiplies the relative
error by at most (1 + 2^-24) and
only two one-sided bounds are needed: ``d1`` is never below ``(1 - 2e-7)`` times the true distance of
label ``l1`` and never above ``(1 + 2e-7)`` times the true nearest distance, ``d2`` never above
``(1 + 2e-7)`` times the true distance of the nearest other label (by induction over the passes: a
line's envelope takes its minimum over the candidates of the previous pass). So where ``d2 <= d1 *
(1 + 2e-6)`` (another label within the margin: a tie or a near-tie, with a safety factor of 5) the
voxel is *flagged* and the caller decides it with the exact per-voxel rule of :mod:`ccmetrics.engine.partition`;
where it is not flagged, every other label is farther than label ``l1`` under any summation order, so
``l1`` is the unique nearest site and the voxel needs no further work.

Cost: three passes over the volume, each O(n) per line times (1 + distinct labels in the line);
memory 12 bytes per voxel (d1, d2 in float32, l1 in int32). Lines are shared between the CPU cores
(:func:`ccmetrics.engine._launch.share`); the result does not depend on the number of threads.
"""

from __future__ import annotations

import numba
import numpy as np

from ._launch import HELPER_OPTIONS, KERNEL_OPTIONS, Kernel, share
from .config import thread_count

_INF = np.inf
_REL_MARGIN = 2e-6  # relative margin on squared distances within which another label flags the voxel


@numba.njit(**HELPER_OPTIONS)
def _envelope(f, n, w, v, z):
    """Lower envelope of the parabolas q -> f[q] + w (x - q)^2 (finite f only); returns its size."""
    k = -1
    for q in range(n):
        fq = f[q]
        if fq == _INF:
            continue
        s = -_INF
        while k >= 0:
            p = v[k]
            # breakpoint from offsets: ((f_q - f_p) / (w (q - p)) + p + q) / 2, never w q^2, whose rounding
            # would swallow the differences of f on long lines (q ~ 2^21)
            s = ((fq - f[p]) / (w * (q - p)) + (p + q)) * 0.5
            if s <= z[k]:
                k -= 1
                s = -_INF
            else:
                break
        k += 1
        v[k] = q
        z[k] = s
    return k + 1


@numba.njit(**HELPER_OPTIONS)
def _line(f1, l1, f2, n, spacing, g1, m1, g2, v, z, fl, seen):
    """One line: (f1, l1, f2) -> (g1, m1, g2). Work arrays v, z, fl, seen of length >= n + 1."""
    w = spacing * spacing
    size = _envelope(f1, n, w, v, z)
    if size == 0:
        for x in range(n):
            g1[x] = _INF
            m1[x] = 0
            g2[x] = _INF
        return
    k = 0
    for x in range(n):
        while k + 1 < size and z[k + 1] < x:
            k += 1
        p = v[k]
        a = (x - p) * spacing
        g1[x] = f1[p] + a * a
        m1[x] = l1[p]
    # second label: one envelope per distinct label of m1 in this line
    n_seen = 0
    for x in range(n):
        lab = m1[x]
        if x > 0 and lab == m1[x - 1]:
            continue
        new = True
        for i in range(n_seen):
            if seen[i] == lab:
                new = False
                break
        if new:
            seen[n_seen] = lab
            n_seen += 1
    for i in range(n_seen):
        lab = seen[i]
        for q in range(n):
            fl[q] = f2[q] if l1[q] == lab else f1[q]
        size = _envelope(fl, n, w, v, z)
        k = 0
        for x in range(n):
            if m1[x] != lab:
                continue
            if size == 0:
                g2[x] = _INF
                continue
            while k + 1 < size and z[k + 1] < x:
                k += 1
            p = v[k]
            a = (x - p) * spacing
            g2[x] = fl[p] + a * a


@numba.njit(**KERNEL_OPTIONS)
def _pass(spacing, d1, l1, d2, mode, first, stop):  # pragma: no cover (compiled)
    """One pass, in place, along axis 1 of the 3D views (d1, l1, d2), for the axis-0 slices first to stop.

    ``mode`` 0 (the first pass): the sites are the voxels with l1 > 0, no second label yet. 1: a pass of the
    maps. 2 (the last pass): only labels are written, negated where another label lies within the margin.
    """
    n = d1.shape[1]
    n2 = d1.shape[2]
    # the work arrays of _line (here, not in a helper of their own: one function less to compile)
    f1, f2, g1, g2, fl = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    lb, m1 = np.empty(n, np.int32), np.empty(n, np.int32)
    v, z, seen = np.empty(n + 1, np.int64), np.empty(n + 1), np.empty(n + 1, np.int32)
    for i in range(first, stop):
        for k in range(n2):
            any_site = False
            for j in range(n):
                if mode == 0:
                    lab = l1[i, j, k]
                    lb[j] = lab
                    f2[j] = _INF  # no second label before the first pass
                    if lab > 0:
                        f1[j] = 0.0
                        any_site = True
                    else:
                        f1[j] = _INF
                else:
                    f1[j] = d1[i, j, k]
                    lb[j] = l1[i, j, k]
                    f2[j] = d2[i, j, k]
                    if f1[j] != _INF:
                        any_site = True
            if not any_site:  # no site reached this line yet: it stays at infinity
                if mode == 0:
                    for j in range(n):
                        d1[i, j, k] = _INF
                        l1[i, j, k] = 0
                        d2[i, j, k] = _INF
                continue
            _line(f1, lb, f2, n, spacing, g1, m1, g2, v, z, fl, seen)
            for j in range(n):
                if mode == 2:
                    lab = m1[j]
                    if g1[j] > 0.0 and g2[j] <= g1[j] * (1.0 + _REL_MARGIN):
                        lab = -lab
                    l1[i, j, k] = lab
                else:
                    d1[i, j, k] = g1[j]
                    l1[i, j, k] = m1[j]
                    d2[i, j, k] = g2[j]


#: every pass, on any strides (the first and last passes see transposed views)
_PASS = Kernel(_pass, "void(float64, float32[:, :, :], int32[:, :, :], float32[:, :, :], int64, int64, int64)")


def _run_pass(spacing: float, d1: np.ndarray, l1: np.ndarray, d2: np.ndarray, mode: int) -> None:
    """One pass over the axis-0 slices of the views, shared between the worker threads (slices of a few lines
    each, so that the threads finish together)."""
    n0 = d1.shape[0]
    share(_PASS, n0, (float(spacing), d1, l1, d2, mode), max(1, -(-n0 // (4 * max(1, thread_count())))))


def nearest_label(labels: np.ndarray, spacing) -> np.ndarray:
    """Nearest-site label of every voxel, negated where another label is within the tie margin.

    Parameters
    ----------
    labels : ndarray of int, 1D to 3D
        Sites (label > 0) and background (0); at least one site.
    spacing : sequence of float
        Voxel spacing, one per axis.

    Returns
    -------
    ndarray of int32, same shape
        ``l`` where site ``l`` is the unique nearest site (beyond the margin), ``-l`` where another
        label may lie within ``2e-6`` (relative, on squared distances) of the nearest one: those voxels
        need the exact rule. Site voxels carry their own label.
    """
    labels = np.asarray(labels)
    shape = labels.shape
    spacing = [float(s) for s in spacing]
    while labels.ndim < 3:
        labels = labels[None]
        spacing = [1.0] + spacing
    l1 = np.array(labels, dtype=np.int32, order="C")  # the sites, then the nearest labels (a copy: written)
    d1 = np.empty(l1.shape, dtype=np.float32)  # float32 storage between passes: see the module notes
    d2 = np.empty(l1.shape, dtype=np.float32)
    axis2 = (0, 2, 1)  # axis 2 seen as axis 1 of transposed views (no copy)
    axis0 = (1, 0, 2)  # axis 0 likewise
    _run_pass(spacing[2], d1.transpose(axis2), l1.transpose(axis2), d2.transpose(axis2), 0)
    _run_pass(spacing[1], d1, l1, d2, 1)
    _run_pass(spacing[0], d1.transpose(axis0), l1.transpose(axis0), d2.transpose(axis0), 2)
    return l1.reshape(shape)
