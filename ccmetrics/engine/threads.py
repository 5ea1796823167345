"""Worker threads of one evaluation: a pool for large images, and calls that run in it or at once.

The public face of ``ccmetrics.engine._threads`` for the layers above the engine (:mod:`ccmetrics.metrics.case`
runs a case's classes and metrics in these threads). :func:`worker_threads` opens a pool of
:func:`ccmetrics.engine.config.thread_count` threads for an image of ``threads_from`` voxels or more
(:class:`ccmetrics.EngineConfig`), or none; :func:`submit` runs a call in it, in a copy of the caller's context
(so the engine configuration and the memory limit in force hold inside the workers too), or at once without a
pool (a :class:`Done`, with a future's ``result()``). Values never depend on the threads: each task computes a
fixed part of the work, and results are combined in a fixed order.

Examples
--------
>>> from ccmetrics.engine.threads import submit, worker_threads
>>> with worker_threads((4, 4)) as pool:  # a small image: no pool, calls run at once
...     pool, submit(pool, sum, [1, 2, 3]).result()
(None, 6)
"""

from __future__ import annotations

from ._threads import Done, submit, worker_threads

__all__ = ["Done", "submit", "worker_threads"]
