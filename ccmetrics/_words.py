"""Counts in words: a noun in the singular for exactly one, in the plural for any other count.

The one home of the plural rule of every text ccmetrics writes: the figures' titles
(:mod:`ccmetrics.analysis.plots`), the report page and its summary line (:mod:`ccmetrics.report.page`) and
what the command line prints (``ccmetrics.cli._text``). A noun's plural is the noun and ``s`` unless
:data:`PLURALS` names another. Imports nothing of ccmetrics: every layer may use it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PLURALS", "count", "noun"]

#: the words whose plural is not the word and ``s``
PLURALS = {"is": "are", "has": "have", "was": "were", "class": "classes"}


def noun(n: Any, word: str) -> str:
    """``word`` as it goes with the count ``n``: singular for ``n == 1``, plural for any other count.

    Parameters
    ----------
    n : number or None
        The count (None, or anything that is not 1: the plural).
    word : str
        The noun (or verb) in the singular.

    Returns
    -------
    str

    Examples
    --------
    >>> noun(1, "case"), noun(0, "case"), noun(2.0, "lesion"), noun(None, "case"), noun(2, "has")
    ('case', 'cases', 'lesions', 'cases', 'have')
    """
    return word if n == 1 else PLURALS.get(word, word + "s")


def count(n: Any, word: str) -> str:
    """``n`` and the noun that goes with it (:func:`noun`).

    Examples
    --------
    >>> count(1, "empty-GT case"), count(0, "lesion"), count(2, "error row"), count(3, "class")
    ('1 empty-GT case', '0 lesions', '2 error rows', '3 classes')
    """
    return f"{n} {noun(n, word)}"
