"""Names a module held in an earlier layout, kept for one release with a ``DeprecationWarning``.

A module lists them in its ``__getattr__`` (which Python calls only for names it does not hold):
``return deprecated(__name__, name, {"OLD": lambda: value}, "use ...")``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deprecated", "former_ci_level"]


def deprecated(
    module: str, name: str, values: Mapping[str, Callable[[], Any]], advice: str, stacklevel: int = 3
) -> Any:
    """The value of ``module.name`` computed by ``values[name]``, with a warning that says ``advice``.

    ``stacklevel`` 3 points the warning at the code that read the name when a module's ``__getattr__``
    calls this function directly.

    Raises
    ------
    AttributeError
        For any other name, as Python's own look-up would.
    """
    if name not in values:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} is deprecated: {advice}", DeprecationWarning, stacklevel=stacklevel)
    return values[name]()


def former_ci_level(ci_level: float, former: Mapping[str, Any], function: str, stacklevel: int = 3) -> float:
    """The confidence level of a bootstrap interval, given as ``ci_level=`` or by its former keyword
    ``confidence=`` (kept for one release, with a ``DeprecationWarning``: *confidence* is a lesion candidate's
    value now). ``former``: the other keywords the caller got (``**former``); ``function``: its name, for the
    messages. ``stacklevel`` 3 points the warning at the code that called ``function``.

    >>> former_ci_level(0.9, {}, "summary")
    0.9

    Raises
    ------
    TypeError
        A keyword other than ``confidence``, or ``confidence`` beside a ``ci_level`` other than its default.
    """
    unknown = sorted(set(former) - {"confidence"})
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    if "confidence" not in former:
        return ci_level
    if ci_level != 0.95:
        raise TypeError(
            f"{function}() got confidence= and ci_level=: give ci_level= only (confidence= is its former name)"
        )
    warnings.warn(
        f"{function}(confidence=...) is deprecated: use {function}(ci_level=...) (the interval's level; "
        "confidence is a lesion candidate's value)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return former["confidence"]
