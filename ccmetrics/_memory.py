"""The memory-limit error and its wording, shared by every layer: the formats' readers refuse a file from its
header, the engine refuses a case from its counts, the campaign a case from its estimate, all with one error.

:class:`MemoryLimitError` (a ``ValueError``) is the one class whatever path it is imported from
(``ccmetrics.engine.memory.MemoryLimitError``, ``ccmetrics.engine._budget.MemoryLimitError``: the same object), so
``except MemoryLimitError`` catches them all, and it pickles by this module's name.  :func:`over_limit` words the
message (what the case needs, on what basis, the fix) and :func:`format_bytes` writes a size in binary units.
The memory model itself (the estimate of a case, the limit handed down to the engine) is
:mod:`ccmetrics.engine.memory`, which re-exports these names. Imports nothing.

Examples
--------
>>> format_bytes(3 * 2**30)
'3.0 GiB'
>>> raise MemoryLimitError(over_limit(3 * 2**30, 2**30, "by its headers"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ccmetrics._memory.MemoryLimitError: needs about 3.0 GiB by its headers (estimated peak), over the memory limit ...
"""

from __future__ import annotations

__all__ = ["MemoryLimitError", "format_bytes", "over_limit"]


class MemoryLimitError(ValueError):
    """A case whose estimated peak exceeds the memory limit, found before the memory is taken.

    The message says what the case needs, for which counts, and the fix (a larger ``--max-memory``,
    ``max_memory=``, or a larger machine).
    """


def over_limit(need: float, limit: float, basis: str, *, at_least: bool = False) -> str:
    """The error of a case whose estimated peak ``need`` exceeds ``limit`` (bytes): what it needs, on what
    ``basis`` the estimate rests, and what to do (one wording for the check before and after reading).

    Examples
    --------
    >>> over_limit(3 * 2**30, 2**30, "by its headers")[:60]
    'needs about 3.0 GiB by its headers (estimated peak), over th'
    """
    return (
        f"needs {'at least ' if at_least else ''}about {format_bytes(need)} {basis} (estimated peak), over the "
        f"memory limit of {format_bytes(limit)}: raise --max-memory (max_memory=) if the machine has the "
        f"memory, or evaluate this case on a larger machine"
    )


def format_bytes(n: float) -> str:
    """A memory size for messages, in binary units.

    Examples
    --------
    >>> format_bytes(512), format_bytes(300 * 2**20), format_bytes(7.83 * 2**30)
    ('512 B', '300 MiB', '7.8 GiB')
    """
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{int(n)} B"
