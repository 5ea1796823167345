"""A memory limit handed down to the engine, checked once the component counts are known.

A case's memory grows with its voxels and foreground, which are known before it is evaluated, and
with its counts (GT components, predicted components, runs of voxels and, with Lesion Dice, the voxels
of the GT components' dilations), which only the labelling tells:
:func:`ccmetrics.campaign.dataset.evaluate_task` checks the first part itself and hands the limit down in a
:class:`MemoryGuard` (:func:`memory_guard`, a context variable, as :func:`ccmetrics.engine_config`
hands down the engine configuration); :func:`ccmetrics.evaluate` looks it up once and, after labelling
the GT's components (and the prediction's, where its metrics label them), calls
:meth:`MemoryGuard.check` with the counts, before a per-component table, distance list or encoding
is made.  Over the limit, :class:`MemoryLimitError` (a ``ValueError``) names ``--max-memory`` and the
counts; the data-set run makes it the case's error row.  The model of what the counts cost is
:func:`ccmetrics.engine.memory.component_bytes`; :meth:`MemoryGuard.check_bytes` serves an engine step whose
cost the counts cannot tell, before it allocates.

Without a guard (every plain :func:`ccmetrics.evaluate` call) nothing is checked: the cost is one
context-variable look-up per call.  ccmetrics' worker threads run in a copy of the caller's context
and see the same guard; other threads and processes do not.

Examples
--------
>>> import numpy as np
>>> from ccmetrics import evaluate
>>> gt = np.zeros((40, 40), bool); gt[::2, ::2] = True  # 400 one-pixel lesions
>>> with memory_guard(2**18) as guard:  # 256 KiB for everything the counts cost  # doctest: +ELLIPSIS
...     evaluate(gt=gt, pred=gt, metrics=["dice"])
Traceback (most recent call last):
...
ccmetrics._memory.MemoryLimitError: needs about 363 KiB for its 400 GT components, ...: raise --max-memory ...
>>> with memory_guard(2**30) as guard:
...     evaluate(gt=gt, pred=gt, metrics=["dice"]).n_components, guard.checks[0][0].gt
(400, 400)
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._memory import MemoryLimitError, over_limit

if TYPE_CHECKING:
    from .ground_truth import PreparedSites
    from .memory import ComponentCounts

__all__ = ["MemoryGuard", "MemoryLimitError", "active", "memory_guard"]


@dataclass
class MemoryGuard:
    """The memory limit of one case and what its checks counted.

    Attributes
    ----------
    limit : float
        Bytes the case may take at its peak (``--max-memory``).
    base : float
        Bytes already counted before the engine runs: the inputs, their foreground and the engine's fixed
        and per-voxel share (:func:`ccmetrics.engine.memory.estimate_case_bytes` with ``foreground=``).
    charged : float
        Bytes that the counts of earlier checks under this guard need: the classes of one label map are
        evaluated one after the other and their tables are kept together, so each class adds its own.
    checks : list of (ComponentCounts, int)
        The counts of every check and the bytes :func:`ccmetrics.engine.memory.component_bytes` gave them.
    """

    limit: float
    base: float = 0.0
    charged: float = 0.0
    checks: list[tuple[ComponentCounts, int]] = field(default_factory=list)

    def check(
        self,
        metrics: Sequence[Any],
        *,
        gt: int,
        pred: int = 0,
        runs: int = 0,
        voxels: int = 0,
        ndim: int = 3,
        gt_sites: PreparedSites | None = None,
    ) -> None:
        """Refuse the evaluation if ``base + charged`` and what these counts need exceed the limit.

        Parameters
        ----------
        metrics : sequence
            The metrics being evaluated (names or registry records).
        gt, pred, runs, voxels, ndim : int
            The counts (:class:`ccmetrics.engine.memory.ComponentCounts`).
        gt_sites : PreparedSites, optional
            The GT's prepared sites (:attr:`ccmetrics.GroundTruth.geometry`): they count the GT's voxels and,
            with ``lesion_dice``, bound its components' dilations (:func:`ccmetrics.engine.memory.dilated_voxels`:
            one pass over the site voxels' coordinates, no copy of them). Without them each component counts
            as one voxel's dilation.

        Raises
        ------
        MemoryLimitError
            Naming the estimate, the counts, the limit and ``--max-memory (max_memory=)``.
        """
        from .memory import ComponentCounts, component_bytes, dilated_voxels

        gt_voxels = dilated = 0
        if gt_sites is not None:
            gt_voxels = len(gt_sites.coords)
            if "lesion_dice" in {str(getattr(m, "name", m)) for m in metrics}:
                dilated = dilated_voxels(gt_sites.coords, gt_sites.found.starts, gt_sites.found.shape)
        counts = ComponentCounts(gt, pred, runs, voxels, ndim, gt_voxels=gt_voxels, dilated=dilated)
        extra = component_bytes(counts, metrics)
        self.checks.append((counts, extra))
        need = self.base + self.charged + extra
        if need > self.limit:
            raise MemoryLimitError(over_limit(need, self.limit, f"for its {counts.describe()}"))
        self.charged += extra

    def check_bytes(self, nbytes: float, what: str) -> None:
        """Refuse a step of the engine that is about to take ``nbytes`` beyond what the counts need, if the
        limit would be exceeded: for costs the counts cannot tell (``what`` names them in the message).

        >>> guard = MemoryGuard(limit=2**30, base=2**29)
        >>> guard.check_bytes(2**29, "one lesion's distances")
        >>> guard.check_bytes(2**29 + 1, "one lesion's distances")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ccmetrics._memory.MemoryLimitError: needs about 1.0 GiB for one lesion's distances (estimated peak), ...
        """
        need = self.base + self.charged + nbytes
        if need > self.limit:
            raise MemoryLimitError(over_limit(need, self.limit, f"for {what}"))


_GUARD: contextvars.ContextVar[MemoryGuard | None] = contextvars.ContextVar("ccmetrics_memory_guard", default=None)


def active() -> MemoryGuard | None:
    """The guard in force in this context, or None (no limit: nothing is checked)."""
    return _GUARD.get()


@contextlib.contextmanager
def memory_guard(limit: float | None, base: float = 0.0) -> Iterator[MemoryGuard | None]:
    """Check the evaluations inside a ``with`` block against a memory limit of ``limit`` bytes.

    ``base``: the bytes the caller counted already (see :class:`MemoryGuard`). ``limit=None`` changes
    nothing (an outer guard, if any, stays in force) and yields it. The previous guard comes back on
    exit, also after an exception.

    >>> with memory_guard(2**30, base=2**29) as guard:
    ...     active() is guard, guard.limit - guard.base
    (True, 536870912.0)
    >>> active() is None
    True
    """
    if limit is None:
        yield _GUARD.get()
        return
    guard = MemoryGuard(float(limit), float(base))
    token = _GUARD.set(guard)
    try:
        yield guard
    finally:
        _GUARD.reset(token)
