"""Two order statistics of the distances from a forest of k-d trees to a tree, without measuring them all.

The public face of the engine's compiled kernel (``ccmetrics.engine._order_statistics``) for the layers above
it. :func:`order_statistics` gives the k_lo-th and k_hi-th smallest (from 0) distances from the points under
some roots of a forest (the prediction components' trees shared by the lesions they touch, in
``ccmetrics.metrics.lesions``) to the points of a GT tree: what a lesion's 95th percentile of the prediction ->
GT distances needs (torch's quantile interpolates between two ranks). Every frontier node carries bounds of its
points' distances; each round settles the nodes entirely below or above the k-th smallest bounds, splits the
others and measures the leaves that straddle them point by point, so one lesion never costs the size of a large
component it shares with many others.

The trees are those of :func:`ccmetrics.engine.kdtree.build` (4 coordinates: the physical ones, padded), and
the distances it measures are those of :func:`ccmetrics.engine.kdtree.query`, bit for bit. numba compiles the
kernel on first use (or loads it from its cache): import this module where it is needed.

Examples
--------
The 2nd and 3rd smallest (from 0) of the distances 0, 1, 2, 3 from four points on a line to a GT point:

>>> import numpy as np
>>> from ccmetrics.engine.kdtree import build
>>> from ccmetrics.engine.order_statistics import order_statistics
>>> pts, nodes, box = build(np.array([[0.0], [1.0], [2.0], [3.0]]), 32)
>>> gpts, gnodes, gbox = build(np.array([[0.0]]), 32)
>>> order_statistics(pts, nodes, box, np.array([0]), gpts, gnodes, gbox, 2, 3)
(2.0, 3.0)
"""

from __future__ import annotations

from ._order_statistics import order_statistics

__all__ = ["order_statistics"]
