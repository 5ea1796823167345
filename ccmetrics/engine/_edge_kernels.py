"""Numba kernels of the edge tests of :mod:`ccmetrics.engine.surface`, for long voxel lists.

Same rules as the numpy code they replace (:func:`ccmetrics.engine.surface.mask_edges`, the span-map branch of
:func:`ccmetrics.engine.surface.own_face_edges`), passes over the list without numpy temporaries, shared between
the CPU cores (:func:`ccmetrics.engine._launch.share`); the numpy code stays for short lists, so that small
images never import numba.
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


_MASK_EDGES = Kernel(_mask_edges, "void(int64[:], int64[:], int64[:], uint8[:], boolean[:], int64, int64)")
_OWN_EDGES = Kernel(
    _own_edges_in_span,
    "void(int64[:], int32[:], boolean[:], int64, int64[:], int32[:], boolean[:], int64, int64, int64)",
)


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
