"""Names a module held in an earlier layout, kept for one release with a ``DeprecationWarning``.

A module lists them in its ``__getattr__`` (which Python calls only for names it does not hold):
``return deprecated(__name__, name, {"OLD": lambda: value}, "use ...")``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deprecated"]


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
