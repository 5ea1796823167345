"""Public names of a package loaded on first use (PEP 562, as scikit-image's ``lazy_loader`` does).

``import ccmetrics`` and ``import ccmetrics.engine`` stay instant: a package lists its public names and the
module of each, and :func:`attach` gives it the ``__getattr__`` and ``__dir__`` that import that module when
the name is first read (numpy, scipy, cc3d, numba load then, not before).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(
    package: str, exports: Mapping[str, str], submodules: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``: ``exports`` maps each public name to the
    module (relative to the package) that defines it; ``submodules`` are reachable as attributes.

    >>> getattr_, dir_, all_ = attach("ccmetrics.engine", {"EngineConfig": "config"})
    >>> getattr_("EngineConfig").__name__, all_
    ('EngineConfig', ['EngineConfig'])
    """
    subs = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        if name in subs:
            return importlib.import_module(f"{package}.{name}")
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports) | subs)

    return __getattr__, __dir__, list(exports)
