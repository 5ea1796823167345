"""Former spellings of command-line options, kept for one release: the one mechanism every sub-command uses.

A renamed option is added with :func:`add_former`: the former spelling is a second option string of the same option,
listed in ``--help`` after the new one (``--out-dir OUT_DIR, --out OUT_DIR``), its help ending "formerly --out, kept
for a release". Giving it stores the value as the new spelling does (after its ``type``) and warns
(``DeprecationWarning``, while the command line is parsed) naming the new spelling. The sub-command calls
:func:`take_former` first thing in its ``run``: it prints one note per former spelling on stderr, naming the new one
(none with ``--quiet``, where the command has it), and refuses both spellings of one option (a usage error).

Examples
--------
>>> import argparse, warnings
>>> parser = argparse.ArgumentParser(prog="ccmetrics report")
>>> _ = add_former(parser, "--html", "--out", default=None, metavar="FILE", help="HTML file to write")
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     args = parser.parse_args(["--out", "page.html"])
>>> args.html, str(caught[0].message)
('page.html', 'ccmetrics report --out is deprecated: use --html (the former spelling works until ccmetrics 0.3)')
>>> take_former(args, "report", say=print)
ccmetrics report: note: --out is deprecated: use --html
>>> spelling_given(args, "html", "--html")
'--out'
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["add_former", "spelling_given", "take_former"]

#: the parsed arguments' attribute that records, per ``dest`` of a renamed option, the spellings given in order
GIVEN = "spellings_given"

#: the words every former spelling's help ends with
KEPT = "formerly {former}, kept for a release"


class _Former(argparse.Action):
    """An option with a former spelling: stores its value as ``store`` does; the former spelling warns
    (``DeprecationWarning``) naming the new one; each spelling given is recorded (:data:`GIVEN`)."""

    def __init__(self, option_strings: list[str], dest: str, former: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.former = former
        self.new = option_strings[0]

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None
    ) -> None:
        spellings = namespace.__dict__.setdefault(GIVEN, {})
        spellings.setdefault(self.dest, (self.new, self.former, []))[2].append(option_string)
        if option_string == self.former:
            message = f"{parser.prog} {self.former} is deprecated: use {self.new} (the former spelling works until "
            message += "ccmetrics 0.3)"
            warnings.warn(message, DeprecationWarning, stacklevel=2)
        setattr(namespace, self.dest, values)


def add_former(parser: argparse.ArgumentParser, new: str, former: str, **kwargs: Any) -> argparse.Action:
    """Add the option ``new`` (``"--out-dir"``) with its former spelling ``former`` (``"--out"``); ``kwargs`` as
    ``add_argument`` takes them for a stored value (``dest=``, ``type=``, ``default=``, ``metavar=``, ``help=``).
    The help gets the words :data:`KEPT`."""
    text = kwargs.pop("help", None)
    kept = KEPT.format(former=former)
    kwargs["help"] = f"{text}; {kept}" if text else kept
    return parser.add_argument(new, former, action=_Former, former=former, **kwargs)


def spelling_given(args: argparse.Namespace, dest: str, new: str) -> str:
    """The spelling the command line gave last for the option whose ``dest`` is ``dest`` (``new`` if none), to
    name it in a message as the user wrote it."""
    recorded = getattr(args, GIVEN, {}).get(dest)
    return recorded[2][-1] if recorded else new


def take_former(args: argparse.Namespace, command: str, say: Callable[[str], None] | None = None) -> None:
    """For each former spelling given: one note on stderr naming the new spelling (``say``; default: the command
    line's ``_say``), none with ``--quiet``.

    Raises
    ------
    ValueError
        Both spellings of one option were given.
    """
    if say is None:
        from ._common import _say

        say = _say
    notes = []
    for new, former, spellings in getattr(args, GIVEN, {}).values():
        if former not in spellings:
            continue
        if new in spellings:
            raise ValueError(f"{former} and {new} given: give {new} only ({former} is its former spelling)")
        notes.append(f"ccmetrics {command}: note: {former} is deprecated: use {new}")
    if not getattr(args, "quiet", False):
        for note in notes:
            say(note)
