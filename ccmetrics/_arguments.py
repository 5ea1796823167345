"""How the public functions take their arguments: the GT and the prediction by keyword, renamed keywords still read.

Every public function that takes a GT and a prediction accepts them as ``gt=`` and ``pred=`` (``gt_classes=``,
``pred_classes=`` beside them where classes come apart). Those that took them by position in MONAI's order,
prediction first (``evaluate(pred, gt)``), still do for a release, with a ``DeprecationWarning`` that shows the
keyword form, because swapped arrays give plausible wrong numbers. A keyword renamed so that one idea has one
name (``docs/glossary.md``) is still read for a release, with a ``DeprecationWarning`` that names the new one.
Both rules live in one decorator, :func:`public_arguments`; the function it wraps keeps its own signature
(``inspect.signature`` and the documentation show it) and its own body.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing import ParamSpec

    P = ParamSpec("P")
    R = TypeVar("R")

__all__ = ["public_arguments", "renamed_keywords"]


def renamed_keywords(call: str, kwargs: dict[str, Any], renamed: Mapping[str, str], stacklevel: int = 3) -> dict:
    """``kwargs`` with each former keyword of ``renamed`` (``{old: new}``) read as its new name, with a warning.

    Raises
    ------
    TypeError
        When a former keyword and its new name are both given.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     renamed_keywords("detection", {"rule": "iou:0.5"}, {"rule": "detection_rule"})
    {'detection_rule': 'iou:0.5'}
    >>> str(caught[0].message)
    'detection(rule=...) is deprecated: use detection(detection_rule=...)'
    """
    if not renamed.keys() & kwargs.keys():
        return kwargs
    out = dict(kwargs)
    for old, new in renamed.items():
        if old not in out:
            continue
        if new in out:
            raise TypeError(
                f"{call}() got {old}= and {new}=, the same argument under its former and new name: pass {new}= only"
            )
        warnings.warn(f"{call}({old}=...) is deprecated: use {call}({new}=...)", DeprecationWarning, stacklevel)
        out[new] = out.pop(old)
    return out


def _keyword_form(call: str, names: Sequence[str], inputs: Sequence[str]) -> str:
    """``call(gt=..., pred=..., rest=...)``: every input (the GT before the prediction) and the other names given by
    position, as keywords."""
    ordered = sorted(inputs, key=lambda n: not n.startswith("gt")) + [n for n in names if n not in inputs]
    return f"{call}({', '.join(f'{n}=...' for n in ordered)})"


def public_arguments(
    call: str, *, positional_inputs: Sequence[str] = (), renamed: Mapping[str, str] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a public function: warn on its inputs given by position, read its former keywords.

    Parameters
    ----------
    call : str
        The function's name as users write it in a call (``"evaluate"``, ``"nuclei.evaluate"``).
    positional_inputs : sequence of str
        The parameters (GT and prediction) whose positional use is deprecated: a call that gives any of them by
        position warns once, with the keyword form of the call. Empty: positions are left alone.
    renamed : mapping of str to str, optional
        Former keyword -> its new name; a call with the former one warns and passes it as the new one.

    Returns
    -------
    callable
        The decorator; the decorated function has the wrapped one's signature (``__wrapped__``).

    Notes
    -----
    A call that gives one parameter both by position and by keyword is refused with a ``TypeError`` that shows
    the keyword form (Python's own message would not say which order the function expects).

    Examples
    --------
    >>> import warnings
    >>> @public_arguments("score", positional_inputs=("pred", "gt"), renamed={"rule": "matching_rule"})
    ... def score(pred=None, gt=None, matching_rule="iou"):
    ...     return pred - gt, matching_rule
    >>> score(gt=1, pred=3)
    (2, 'iou')
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     score(3, 1, rule="centroid")
    (2, 'centroid')
    >>> [str(w.message) for w in caught]  # doctest: +NORMALIZE_WHITESPACE
    ['score(rule=...) is deprecated: use score(matching_rule=...)',
     'score(pred, gt) with the GT and the prediction given by position (prediction first, as MONAI orders
     them) is deprecated: pass them by keyword: score(gt=..., pred=...)']
    >>> score(3, pred=1)
    Traceback (most recent call last):
    ...
    TypeError: score() got pred by position and by keyword: pass the inputs by keyword only: score(gt=..., pred=...)
    """
    renamed = dict(renamed or {})

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        parameters = inspect.signature(func).parameters.values()
        order = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        unknown = [n for n in positional_inputs if n not in order]
        if unknown:
            raise ValueError(f"{call}: no positional parameter {unknown}")

        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if renamed:
                kwargs = renamed_keywords(call, kwargs, renamed)  # type: ignore[assignment]
            if args:
                given = order[: len(args)]
                both = [n for n in given if n in kwargs]
                if both:
                    form = _keyword_form(call, given, positional_inputs)
                    raise TypeError(
                        f"{call}() got {both[0]} by position and by keyword: pass the inputs by keyword only: {form}"
                    )
                if any(n in positional_inputs for n in given):
                    warnings.warn(
                        f"{call}({', '.join(given)}) with the GT and the prediction given by position (prediction "
                        f"first, as MONAI orders them) is deprecated: pass them by keyword: "
                        f"{_keyword_form(call, given, positional_inputs)}",
                        DeprecationWarning,
                        stacklevel=2,
                    )
            return func(*args, **kwargs)

        return wrapper

    return decorate
