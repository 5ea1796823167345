"""Words: counts in words, and the user's own terms (the command line's options, or Python's keywords).

The one home of the plural rule of every text ccmetrics writes: the figures' titles
(:mod:`ccmetrics.analysis.plots`), the report page and its summary line (:mod:`ccmetrics.report.page`) and
what the command line prints (``ccmetrics.cli._text``). A noun's plural is the noun and ``s`` unless
:data:`PLURALS` names another.

The one home too of the rule that a message speaks the user's language: :func:`in_terms` gives the command
line's words (``--resume``) while a command of ``ccmetrics`` runs (:func:`command_line`), and Python's words
(``resume=True``) otherwise, so that an error raised by the same code reads as the command line's advice at the
command line and as Python's in Python. Imports nothing of ccmetrics: every layer may use it. Cost: a context
variable read per message.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["PLURALS", "command_line", "count", "ignored_summary", "in_terms", "noun"]

#: True while a command of the ``ccmetrics`` program runs (in its thread: a context variable)
_AT_THE_COMMAND_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar("ccmetrics_command_line", default=False)

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


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """Within the block, :func:`in_terms` gives the command line's words (a command of ``ccmetrics`` runs).

    Examples
    --------
    >>> with command_line():
    ...     in_terms("--resume", "resume=True")
    '--resume'
    >>> in_terms("--resume", "resume=True")
    'resume=True'
    """
    token = _AT_THE_COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _AT_THE_COMMAND_LINE.reset(token)


def in_terms(cli: str, python: str) -> str:
    """``cli`` (an option as the command line spells it) inside :func:`command_line`, else ``python`` (the same
    advice as a Python caller spells it).

    Parameters
    ----------
    cli : str
        The words for the command line, e.g. ``"--resume"``.
    python : str
        The words for Python, e.g. ``"resume=True"``.

    Returns
    -------
    str

    Examples
    --------
    >>> "run again with " + in_terms("--overwrite", "overwrite=True")
    'run again with overwrite=True'
    """
    return cli if _AT_THE_COMMAND_LINE.get() else python


def ignored_summary(names: Sequence[str], sep: str = os.sep) -> str:
    """The files (and subfolders: names ending in ``sep``) an evaluation left out, counted by kind in words, for the
    command line's one line and the report's heading of the list.

    Files are counted by their extension (two for a compressed one: ``.nii.gz``), hidden files apart: a file left
    out may be an image (hidden, or not of the data set's ``file_ending``).

    >>> ignored_summary(["p/a.pkl", "p/b.pkl", "p/c.json", "p/sub/", "p/d.pkl"], sep="/")
    '4 files left out (3 .pkl, 1 .json) and 1 subfolder (not searched)'
    >>> ignored_summary(["p/README", "p/._case_1.nii.gz", "p/case_2.mha"], sep="/")
    '3 files left out (1 .mha, 1 hidden, 1 no extension)'
    """
    folders = [n for n in names if n.endswith(sep)]
    files = [n for n in names if not n.endswith(sep)]
    kinds = Counter(_kind_of(n.rsplit(sep, 1)[-1]) for n in files)
    parts = []
    if files:
        by_kind = ", ".join(f"{k} {ext}" for ext, k in sorted(kinds.items(), key=lambda e: (-e[1], e[0])))
        parts.append(f"{count(len(files), 'file')} left out ({by_kind})")
    if folders:
        parts.append(f"{count(len(folders), 'subfolder')} (not searched)")
    return " and ".join(parts)


def _kind_of(name: str) -> str:
    """A file's kind for :func:`ignored_summary`: ``hidden``, its extension (``.nii.gz`` for a compressed file),
    or ``no extension``."""
    if name.startswith("."):
        return "hidden"
    stem, ext = os.path.splitext(name)
    if ext.lower() in (".gz", ".bz2", ".xz", ".zst"):
        ext = os.path.splitext(stem)[1] + ext
    return ext or "no extension"
