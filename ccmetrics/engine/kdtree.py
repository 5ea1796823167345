"""The k-d tree with tight node boxes behind the exact nearest-point distances, for the layers above the engine.

The public face of the engine's compiled k-d tree (the numba kernels live in ``ccmetrics.engine._kdtree``, which
the engine's own modules import): every node keeps the bounding box of its own points, so a query visits a node
only when its box is nearer than the best point so far, also from far away from a flat point set. Distances are
summed axis by axis as scipy's ``cKDTree`` sums them, in float64, so they equal scipy's bit for bit wherever
:func:`matches_scipy` says scipy's build does not fuse the multiply-add on this machine.

* :func:`nearest_distances`, :func:`nearest_points`: the distance from each point of one set to the nearest
  point of another (and which point that is), as ``cKDTree.query`` gives them;
* :func:`build`, :func:`query`, :func:`query_parallel`: one tree built once and queried many times
  (``ccmetrics.metrics.lesions`` shares one tree per predicted component between the lesions it touches);
  the trees are the input of :func:`ccmetrics.engine.order_statistics.order_statistics`;
* :func:`matches_scipy`: whether this machine's scipy sums as these kernels do (checked once per process).

numba compiles the kernels on first use (or loads them from its cache): importing this module imports numba,
so callers import it where they need a tree, not at the top of a module.

Cost: build O(n log n) for voxel coordinates; a query O(log n) for points near the set and, unlike scipy's
tree, also for points far from a flat set. The kernels release the GIL.

Examples
--------
>>> import numpy as np
>>> from ccmetrics.engine.kdtree import build, query
>>> pts, nodes, box = build(np.array([[3.0, 4.0], [9.0, 8.0]]), 32)
>>> out = np.empty(2)
>>> query(pts, nodes, box, np.array([[0.0, 0.0, 0.0, 0.0], [9.0, 9.0, 0.0, 0.0]]), np.inf, out)
>>> out
array([5., 1.])
"""

from __future__ import annotations

from ._kdtree import build, matches_scipy, nearest_distances, nearest_points, query, query_parallel

__all__ = ["build", "matches_scipy", "nearest_distances", "nearest_points", "query", "query_parallel"]
