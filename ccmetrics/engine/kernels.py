"""When a compiled kernel pays for its compile: the rule of the engine's numba kernels, for the layers above it.

The public face of ``ccmetrics.engine._launch`` (which launches the kernels). A kernel costs 0.2-3 s to compile the
first time (0.05 s to load from numba's cache, numba's import 0.5 s), while numpy, scipy or cc3d give the same
values more slowly. :func:`pays` says whether a task of some size goes to the kernels of a module (``"_kdtree"``,
``"_order_statistics"``, ``"_sphere_kernels"``, ...): from ``loaded_from`` units once they are loaded in this
process (or numba is loaded and its cache holds them), from ``import_from`` when the cache holds them, from
``compile_from`` when it does not (the first run after an install), or once the tasks that the fallback served in
this process from ``loaded_from`` units reach the threshold together. :func:`threshold` gives that threshold.
The thresholds are fields of :class:`ccmetrics.EngineConfig`; ``ccmetrics warm-up`` fills numba's cache.

Cost: a dictionary look-up, and once per process the read of a small JSON marker beside numba's cache.

Examples
--------
>>> from ccmetrics.engine.kernels import pays
>>> pays("_no_such_module", 5, 10, 100, 1000), pays("_no_such_module", 5000, 10, 100, 1000)
(False, True)
"""

from __future__ import annotations

from ._launch import pays, threshold

__all__ = ["pays", "threshold"]
