"""Worker threads of one evaluation: a pool for large images, and calls that run in it or at once.

Every task runs in a copy of the submitting thread's context, so the engine configuration in force
(:func:`ccmetrics.engine_config`) holds inside the workers too. Values never depend on the threads:
each task computes a fixed part of the work, and results are combined in a fixed order.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from .config import current, thread_count

__all__ = ["Done", "submit", "worker_threads"]


@contextlib.contextmanager
def worker_threads(shape: Sequence[int]) -> Iterator[ThreadPoolExecutor | None]:
    """A thread pool for one evaluation of an image of ``shape`` (None: run serially), closed on exit.

    Images from ``threads_from`` voxels get :func:`ccmetrics.engine.config.thread_count` threads, when that is 2 or
    more (:class:`ccmetrics.EngineConfig`).
    """
    config = current()
    threads = thread_count(config)
    if threads < 2 or math.prod(shape) < config.threads_from:
        yield None
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="ccmetrics") as pool:
        yield pool


class Done:
    """The result of a call run at once, with a future's ``result()``."""

    def __init__(self, value: Any):
        self.value = value

    def result(self) -> Any:
        return self.value


def submit(pool: ThreadPoolExecutor | None, fn: Callable[..., Any], *args: Any) -> Future | Done:
    """Run ``fn(*args)`` in the pool (in a copy of this context), or at once without a pool."""
    if pool is None:
        return Done(fn(*args))
    return pool.submit(contextvars.copy_context().run, fn, *args)
