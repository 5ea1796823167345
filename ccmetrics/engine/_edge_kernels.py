"""Numba kernels of the edge tests of :mod:`ccmetrics.engine.surface`, for long voxel lists, and of a large mask's
voxel list.

Same rules as the numpy code they replace (:func:`ccmetrics.engine.surface.mask_edges`, the span-map branch of
:func:`ccmetrics.engine.surface.own_face_edges`), passes over the list without numpy temporaries, shared between
the CPU cores (:func:`ccmetrics.engine._launch.share`); the numpy code stays for short lists, so that small
images never import numba. :func:`mask_voxels` lists a mask's voxels in one pass over its memory (numpy's
``flatnonzero`` of a boolean mask makes two: a count, then the list), in C order whatever the mask's memory order.
"""

from __future__ import annotations

import numba
import numpy as np

from ._launch import KERNEL_OPTIONS, Kernel, share

_CHUNK = 1 << 16  # list entries per slice of the work


@numba.njit(**KERNEL_OPTIONS)
def _mask_edges(flat_index, shape, strides, mask, out, first, stop):  # pragma: no cover (compiled)
    """out[i]: voxel flat_index[i] has a face neighbour outside the image or outside ``mask`` (uint8)."""
    ndim = shape.shape[0]
    for i in range(first, stop):
        f = flat_index[i]
        rest = f
        edge = False
        for axis in range(ndim):
            stride = strides[axis]
            coord = rest // stride
            rest -= coord * stride
            if coord == 0 or coord == shape[axis] - 1 or mask[f - stride] == 0 or mask[f + stride] == 0:
                edge = True
                break
        out[i] = edge


@numba.njit(**KERNEL_OPTIONS)
def _own_edges_in_span(flat_index, labels, union_edge, origin, strides, label_map, out, phase, first, stop):
    """Phase 0: the label map of the flat span (from voxel ``origin``) for entries first to stop. Phase 1:
    out[i] for those entries: voxel i is a union edge, or a face neighbour holds another label."""
    if phase == 0:  # pragma: no cover (compiled)
        for i in range(first, stop):
            label_map[flat_index[i] - origin] = labels[i]
        return
    for i in range(first, stop):  # pragma: no cover (compiled)
        if union_edge[i]:
            out[i] = True
            continue
        a = flat_index[i] - origin  # an interior voxel: every face neighbour is in the list, so in the span
        m = labels[i]
        differs = False
        for stride in strides:
            if label_map[a - stride] != m or label_map[a + stride] != m:
                differs = True
                break
        out[i] = differs


@numba.njit(**KERNEL_OPTIONS)
def _mask_voxels(words, memory, shape, fortran, out):  # pragma: no cover (compiled)
    """The flat C-order indices of the non-zero bytes of ``memory`` (an image of ``shape`` (3 axes), C-ordered, or
    Fortran-ordered with ``fortran``), in memory order, into ``out``; how many, or -1 where ``out`` is too short.
    ``words``: the first ``len(memory) // 8`` 8-byte words of ``memory``, whose zero words are skipped whole."""
    a, b, c = shape[0], shape[1], shape[2]
    limit = out.shape[0]
    found = 0
    n_words = words.shape[0]
    for w in range(n_words + 1):
        if w < n_words:
            if words[w] == 0:
                continue
            first, stop = w * 8, w * 8 + 8
        else:  # the bytes after the last whole word
            first, stop = n_words * 8, memory.shape[0]
        if not fortran:  # C order: the memory position is the flat index
            for m in range(first, stop):
                if memory[m] != 0:
                    if found == limit:
                        return -1
                    out[found] = m
                    found += 1
            continue
        # Fortran order: memory position m = i + a * (j + b * k), C index (i * b + j) * c + k; found once a word
        i = first % a
        q = first // a
        j = q % b
        k = q // b
        for m in range(first, stop):
            if memory[m] != 0:
                if found == limit:
                    return -1
                out[found] = (i * b + j) * c + k
                found += 1
            i += 1
            if i == a:
                i = 0
                j += 1
                if j == b:
                    j = 0
                    k += 1
    return found


# the masks are only read: typed read-only (np.load's memory maps, np.frombuffer)
_MASK_EDGES = Kernel(
    _mask_edges, "void(int64[:], int64[:], int64[:], uint8[:], boolean[:], int64, int64)", read_only=(3,)
)
_OWN_EDGES = Kernel(
    _own_edges_in_span,
    "void(int64[:], int32[:], boolean[:], int64, int64[:], int32[:], boolean[:], int64, int64, int64)",
)

_MASK_VOXELS = Kernel(_mask_voxels, "int64(uint64[::1], uint8[::1], int64[:], boolean, int64[::1])", read_only=(0, 1))


def mask_voxels(memory: np.ndarray, shape, fortran: bool, limit: int) -> np.ndarray | None:
    """The flat C-order indices of a mask's voxels, in its memory order (sorted for a C-ordered mask), from its
    memory (``memory``: the mask's bytes as one contiguous uint8 or bool array, C order, or Fortran order with
    ``fortran``); None where it holds more than ``limit`` voxels (the scan stops there).

    One pass over the memory, skipping zero 8-byte words whole, and no count pass: the list is written into room
    for ``limit`` entries (untouched memory, of which only the pages written cost), then copied out of it.

    Examples
    --------
    >>> m = np.zeros((3, 4), bool, order="F"); m[0, 3] = m[2, 0] = m[2, 1] = True
    >>> mask_voxels(m.T.reshape(-1), m.shape, True, 10).tolist(), np.flatnonzero(m).tolist()
    ([8, 9, 3], [3, 8, 9])
    >>> mask_voxels(m.T.reshape(-1), m.shape, True, 2) is None
    True
    """
    memory = memory.view(np.uint8)
    words = memory[: len(memory) // 8 * 8].view(np.uint64)
    shape3 = np.array(tuple(shape) + (1,) * (3 - len(shape)), dtype=np.int64)  # a last axis of 1: the same indices
    out = np.empty(limit, np.int64)
    found = _MASK_VOXELS(words, memory, shape3, bool(fortran), out)
    return None if found < 0 else out[:found].copy()  # its own memory: the room's untouched pages go back at once


def mask_edges(flat_index, shape, strides, mask, out):
    """out[i]: voxel flat_index[i] has a face neighbour outside the image or outside ``mask`` (uint8)."""
    share(_MASK_EDGES, len(flat_index), (flat_index, shape, strides, mask, out), _CHUNK)


def own_edges_in_span(flat_index, labels, union_edge, first, span, strides, out):
    """The span-map edge test of :func:`ccmetrics.engine.surface.own_face_edges` (see ``_own_edges_in_span``)."""
    label_map = np.zeros(span, np.int32)
    for phase in (0, 1):
        share(
            _OWN_EDGES, len(flat_index), (flat_index, labels, union_edge, first, strides, label_map, out, phase), _CHUNK
        )
