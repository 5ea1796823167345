"""The kernels' work arrays, filled by loops instead of numpy's constructors (numba compiles each constructor it
meets: np.arange and np.zeros cost seconds of the first run): the same trees and order statistics, checked
against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from ccmetrics.engine.kdtree import build
from ccmetrics.engine.order_statistics import order_statistics


@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [1, 5, 33, 700])
def test_tree_holds_every_point_once_padded_with_zeros(m, n):
    """``pts`` is the points in some order, each once, its columns past the m coordinates exactly 0.0; every node's
    box is the min and max of its points (brute force); the root holds them all and children split their parent."""
    rng = np.random.default_rng(n * 10 + m)
    points = rng.integers(-5, 5, size=(n, m)).astype(np.float64) * 0.37  # ties on every axis
    pts, nodes, box = build(points, 8)
    assert pts.shape == (n, 4)
    assert np.all(pts[:, m:] == 0.0) and not np.signbit(pts[:, m:]).any()
    rows = sorted(map(tuple, pts[:, :m].tolist()))
    assert rows == sorted(map(tuple, points.tolist()))
    assert nodes[0, 0] == 0 and nodes[0, 1] == n
    stack = [0]
    while stack:
        k = stack.pop()
        first, stop, left = nodes[k]
        held = pts[first:stop]
        np.testing.assert_array_equal(box[k, :m], held[:, :m].min(axis=0))
        np.testing.assert_array_equal(box[k, 4 : 4 + m], held[:, :m].max(axis=0))
        np.testing.assert_array_equal(box[k, m:4], 0.0)
        if left >= 0:
            assert nodes[left, 0] == first and nodes[left, 1] == nodes[left + 1, 0] and nodes[left + 1, 1] == stop
            stack += [left, left + 1]
        else:
            assert stop - first <= 8 or np.all(held == held[0])


def _distances(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Every source -> nearest target distance, summed in the kernels' order (0.0, then axis by axis)."""
    diff = source[:, None, :] - target[None, :, :]
    squared = np.zeros(diff.shape[:2])
    for d in range(source.shape[1]):
        squared = squared + diff[:, :, d] * diff[:, :, d]
    return np.sqrt(squared.min(axis=1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_order_statistics_match_the_sorted_distances(seed):
    """The k-th smallest distances of a forest's points (two trees, one a single leaf) to a GT tree equal the
    sorted brute-force distances, bit for bit, at the first ranks, a middle one and the last."""
    rng = np.random.default_rng(seed)
    spacing = np.array([0.8, 0.8, 2.0])
    big = rng.integers(0, 20, size=(400, 3)) * spacing
    small = rng.integers(0, 20, size=(5, 3)) * spacing
    target = rng.integers(5, 15, size=(60, 3)) * spacing  # lattice points: many equal distances
    pts_a, nodes_a, box_a = build(big, 32)
    pts_b, nodes_b, box_b = build(small, 32)
    pts = np.concatenate([pts_a, pts_b])
    nodes = np.concatenate([nodes_a, nodes_b])
    nodes[len(nodes_a) :, :2] += len(pts_a)
    nodes[len(nodes_a) :, 2] = np.where(nodes_b[:, 2] >= 0, nodes_b[:, 2] + len(nodes_a), -1)
    box = np.concatenate([box_a, box_b])
    gpts, gnodes, gbox = build(target, 32)
    expected = np.sort(_distances(np.concatenate([big, small]), target))
    roots = np.array([0, len(nodes_a)])
    for k_lo, k_hi in [(0, 1), (0, 0), (200, 201), (383, 384), (403, 404)]:
        lo, hi = order_statistics(pts, nodes, box, roots, gpts, gnodes, gbox, k_lo, k_hi)
        assert (lo, hi) == (expected[k_lo], expected[k_hi])
    only_small = order_statistics(pts, nodes, box, roots[1:], gpts, gnodes, gbox, 0, 4)
    assert only_small == (np.sort(_distances(small, target))[0], np.sort(_distances(small, target))[4])
