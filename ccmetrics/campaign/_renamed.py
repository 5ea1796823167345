"""Former field names of the option objects, kept for one release with a ``DeprecationWarning``.

:func:`former_fields` makes a frozen dataclass's constructor take a former keyword (``max_case_bytes=``) as its
new field (``max_memory=``), with one warning that names the new form, and adds a read-only property of the
former name that warns too. The fields, their order, the pickled state and :meth:`key` are the new ones only; a
state pickled by an earlier version, with the former names, unpickles as the new fields.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any, Callable, TypeVar

__all__ = ["former_fields", "warn_former"]

T = TypeVar("T")


def warn_former(old: str, new: str, stacklevel: int = 3) -> None:
    """The warning of a former name: ``old`` is deprecated, use ``new``."""
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=stacklevel)


def former_fields(renamed: Mapping[str, str]) -> Callable[[type[T]], type[T]]:
    """A class decorator for a dataclass: ``renamed`` maps each former keyword to its field."""

    def decorate(cls: type[T]) -> type[T]:
        init = cls.__init__
        name = cls.__name__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            for old, new in renamed.items():
                if old in kwargs:
                    value = kwargs.pop(old)
                    if new in kwargs:
                        raise TypeError(f"{name}() got {old}= and {new}=: give {new}= only ({old}= is its former name)")
                    warn_former(f"{name}({old}=...)", f"{name}({new}=...)")
                    kwargs[new] = value
            init(self, *args, **kwargs)

        def __setstate__(self: Any, state: Mapping[str, Any]) -> None:
            """A pickled state of an earlier version holds former field names: read as the new ones."""
            state = dict(state)
            for old, new in renamed.items():
                if old in state:
                    state.setdefault(new, state.pop(old))
            self.__dict__.update(state)

        setattr(cls, "__init__", __init__)  # noqa: B010 (a method replaced: mypy refuses the assignment)
        setattr(cls, "__setstate__", __setstate__)  # noqa: B010
        for old, new in renamed.items():
            setattr(cls, old, _former_property(name, old, new))
        return cls

    return decorate


def _former_property(owner: str, old: str, new: str) -> property:
    def get(self: Any) -> Any:
        warn_former(f"{owner}.{old}", f"{owner}.{new}")
        return getattr(self, new)

    get.__doc__ = f"Former name of ``{new}`` (deprecated)."
    return property(get)
