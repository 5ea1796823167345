"""Numba kernels of the edge tests of :mod:`ccmetrics.engine.surface`, for long voxel lists.

Same rules as the numpy code they replace (:func:`ccmetrics.engine.surface.mask_edges`, the span-map branch of
:func:`ccmetrics.engine.surface.own_face_edges`), passes over the list without numpy temporaries, shared between
the CPU cores; the numpy code stays for short lists, so that small images never import numba.
"""

from __future__ import annotations

import numba
import numpy as np

from ._launch import PARALLEL


@numba.njit(cache=True, nogil=True, parallel=True)
def _mask_edges(flat_index, shape, strides, mask, out):
    """out[i]: voxel flat_index[i] has a face neighbour outside the image or outside ``mask`` (uint8)."""
    ndim = shape.shape[0]
    for i in numba.prange(flat_index.shape[0]):
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


@numba.njit(cache=True, nogil=True, parallel=True)
def _own_edges_in_span(flat_index, labels, union_edge, first, span, strides, out):
    """out[i]: voxel i is a union edge, or a face neighbour holds another label (a map of the flat span)."""
    n = flat_index.shape[0]
    label_map = np.zeros(span, np.int32)
    for i in numba.prange(n):
        label_map[flat_index[i] - first] = labels[i]
    for i in numba.prange(n):
        if union_edge[i]:
            out[i] = True
            continue
        a = flat_index[i] - first  # an interior voxel: every face neighbour is in the list, so in the span
        m = labels[i]
        differs = False
        for stride in strides:
            if label_map[a - stride] != m or label_map[a + stride] != m:
                differs = True
                break
        out[i] = differs


def mask_edges(flat_index, shape, strides, mask, out):
    """out[i]: voxel flat_index[i] has a face neighbour outside the image or outside ``mask`` (uint8)."""
    with PARALLEL:
        _mask_edges(flat_index, shape, strides, mask, out)


def own_edges_in_span(flat_index, labels, union_edge, first, span, strides, out):
    """The span-map edge test of :func:`ccmetrics.engine.surface.own_face_edges` (see ``_own_edges_in_span``)."""
    with PARALLEL:
        _own_edges_in_span(flat_index, labels, union_edge, first, span, strides, out)
