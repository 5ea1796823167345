"""Public names of a package loaded on first use (PEP 562, as scikit-image's ``lazy_loader`` does), and
libraries imported on first use.

``import ccmetrics`` and ``import ccmetrics.engine`` stay instant: a package lists its public names and the
module of each, and :func:`attach` gives it the ``__getattr__`` and ``__dir__`` that import that module when
the name is first read (numpy, scipy, cc3d, numba load then, not before).

:func:`module` stands for a library that a module names at its top but needs only in some of its functions:
pandas (0.1 s to import) is imported when a table is first made, so that the process that schedules a data
set's cases starts its workers without it, and a worker imports it only if its cases make tables.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["attach", "module"]


class _Deferred(types.ModuleType):
    """A stand-in for a module, imported when one of its attributes is first read; its names are then copied
    here, so that later look-ups cost what they cost on the module itself."""

    def __getattr__(self, name: str) -> Any:
        loaded = importlib.import_module(self.__name__)
        vars(self).update(vars(loaded))
        return getattr(loaded, name)


def module(name: str) -> types.ModuleType:
    """The module ``name``, imported when one of its attributes is first read (the module itself where it is
    imported already). Nothing is put into ``sys.modules``: other code that imports ``name`` imports it as usual.

    >>> json = module("json")
    >>> json.dumps([1, 2])
    '[1, 2]'
    """
    loaded = sys.modules.get(name)
    return loaded if loaded is not None else _Deferred(name)


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
