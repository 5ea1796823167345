"""Data-derived text kept inert wherever ccmetrics writes or prints it: the one home of these rules.

Case ids come from file names, class names from ``dataset.json``, messages quote paths: text that someone else
chose. Two places would run it:

* **Spreadsheets.** A CSV cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
  formula to Excel and LibreOffice (``=HYPERLINK(...)``, ``+cmd|' /C calc'!A0``). Every CSV file ccmetrics
  writes holds such text cells neutralised as OWASP recommends, with a leading ``'``
  (:func:`spreadsheet_cell`); a cell that starts with ``'`` gets one more, so that the encoding is injective and
  :func:`spreadsheet_text` (what :meth:`ccmetrics.schema.TableSchema.read` applies) gives back exactly the text
  written. Only text is touched: numbers, negative ones included, are written as they are. Cost: one pass over
  the text cells.
* **Terminals.** A control character (``ESC [8m`` hides the rest of the line, ``ESC ]0;...BEL`` retitles the
  window, ``CR`` goes back to the start of the line) or a bidirectional override in a printed id would change
  what the user sees. :func:`printable` shows each as its escape (``\\x1b``, ``\\u202e``); the command line
  passes through it every data-derived text it prints.

The report's HTML ids are made unique where they are made (:func:`ccmetrics.report.page.anchor`); HTML escaping
is Jinja's.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SPREADSHEET_TRIGGERS",
    "printable",
    "spreadsheet_cell",
    "spreadsheet_restored",
    "spreadsheet_safe",
    "spreadsheet_text",
    "write_csv",
]

#: the first characters that make a spreadsheet run a cell (OWASP, "CSV Injection")
SPREADSHEET_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
#: what neutralises a cell: a leading apostrophe (a text cell to Excel and LibreOffice)
_QUOTE = "'"

#: control characters (C0, DEL, C1) and the bidirectional formatting characters, each by its escape
_ESCAPES = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))},
    **{c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))},
}
_ESCAPES_BUT_NEWLINE = {c: e for c, e in _ESCAPES.items() if c != ord("\n")}


def printable(text: Any, *, newlines: bool = False) -> str:
    """``text`` (``str()`` of it) as a terminal may show it: every control character and bidirectional override
    as its escape, the rest as it is.

    ``newlines``: keep ``\\n`` (for a message of several lines that ccmetrics built; an id or a name keeps none).

    Examples
    --------
    >>> print(printable("case\\x1b[8m failed\\r"))
    case\\x1b[8m failed\\x0d
    >>> printable("a\\nb"), printable("a\\nb", newlines=True)
    ('a\\\\x0ab', 'a\\nb')
    >>> printable("résumé\\u202e"), printable(3)
    ('résumé\\\\u202e', '3')
    """
    return str(text).translate(_ESCAPES_BUT_NEWLINE if newlines else _ESCAPES)


def spreadsheet_cell(text: str) -> str:
    """A text cell as a CSV file holds it: with a leading ``'`` when a spreadsheet would run it (it starts with one
    of :data:`SPREADSHEET_TRIGGERS`) or when it starts with ``'`` itself (so that :func:`spreadsheet_text` undoes
    every cell exactly); otherwise as it is.

    Examples
    --------
    >>> [spreadsheet_cell(t) for t in ("=1+1", "-1", "'", "'=a", "case_001", "")]
    ["'=1+1", "'-1", "''", "''=a", 'case_001', '']
    """
    return _QUOTE + text if text.startswith((*SPREADSHEET_TRIGGERS, _QUOTE)) else text


def spreadsheet_text(cell: str) -> str:
    """The text a :func:`spreadsheet_cell` holds: one leading ``'`` removed.

    Examples
    --------
    >>> texts = ["=1+1", "-x", "'=a", "'", "@SUM(A1)", "\\tx", "\\rx", "+cmd|' /C calc'!A0", "-1", "a'b", ""]
    >>> [spreadsheet_text(spreadsheet_cell(t)) for t in texts] == texts
    True
    """
    return cell[1:] if cell.startswith(_QUOTE) else cell


def _is_text(dtype: Any) -> bool:
    """Whether a column of this dtype may hold text (object, pandas' string, categorical)."""
    import pandas as pd

    return pd.api.types.is_object_dtype(dtype) or isinstance(dtype, (pd.StringDtype, pd.CategoricalDtype))


def _map_text(frame: pd.DataFrame, rule: Any) -> pd.DataFrame:
    """``frame`` with ``rule`` applied to every text cell and text column name (a copy; numbers untouched)."""
    import pandas as pd

    def apply(value: Any) -> Any:
        return rule(value) if isinstance(value, str) else value

    frame = frame.copy()
    for i in range(frame.shape[1]):
        series = frame.iloc[:, i]
        if _is_text(series.dtype):
            frame.isetitem(i, series.map(apply).array)
    if not isinstance(frame.columns, pd.MultiIndex):
        frame.columns = pd.Index([apply(c) for c in frame.columns], dtype=frame.columns.dtype)
    if not isinstance(frame.index, pd.MultiIndex) and _is_text(frame.index.dtype):
        frame.index = frame.index.map(apply)
    frame.index.names = [apply(n) for n in frame.index.names]
    return frame


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as a CSV file may hold it: its text cells, text column names and text index labels through
    :func:`spreadsheet_cell` (a copy; numeric columns untouched).

    Examples
    --------
    >>> import pandas as pd
    >>> spreadsheet_safe(pd.DataFrame({"case": ["=1+1", "a"], "dice": [-1.0, 0.5]})).to_dict("list")
    {'case': ["'=1+1", 'a'], 'dice': [-1.0, 0.5]}
    """
    return _map_text(frame, spreadsheet_cell)


def spreadsheet_restored(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame read from a CSV file :func:`write_csv` wrote, with its text as it was: :func:`spreadsheet_text` of
    every text cell and column name (a copy).

    Examples
    --------
    >>> import io, pandas as pd
    >>> frame = pd.DataFrame({"case": ["=1+1", "-1", "'"], "dice": [-1.0, 0.5, 1.0]})
    >>> buffer = io.StringIO()
    >>> write_csv(frame, buffer)
    >>> read = spreadsheet_restored(pd.read_csv(io.StringIO(buffer.getvalue()), dtype={"case": str}))
    >>> read.equals(frame)
    True
    """
    return _map_text(frame, spreadsheet_text)


def write_csv(frame: pd.DataFrame, path: os.PathLike[str] | str | Any, *, index: bool = False) -> None:
    """Write ``frame`` as a CSV file (or into an open text file) with its text neutralised
    (:func:`spreadsheet_safe`): how every CSV file of ccmetrics is written. Rows end with ``\\n``; with
    ``\\r\\n`` when a text holds a carriage return (so that the csv module quotes that cell).

    Examples
    --------
    >>> import io, pandas as pd
    >>> buffer = io.StringIO()
    >>> write_csv(pd.DataFrame({"case": ["@SUM(A1)"], "hd95": [-2.5]}), buffer)
    >>> print(buffer.getvalue(), end="")
    case,hd95
    '@SUM(A1),-2.5
    """
    safe = spreadsheet_safe(frame)
    # Python's csv module (before 3.12) quotes a field holding a line end only if the line terminator has that
    # character: with "\n", a bare "\r" in a text cell would end the row for every reader
    texts = [*safe.columns, *safe.index.names, *(safe.index if index else ())]
    texts += [v for i in range(safe.shape[1]) if _is_text(safe.iloc[:, i].dtype) for v in safe.iloc[:, i]]
    carriage = any(isinstance(v, str) and "\r" in v for v in texts)
    safe.to_csv(path, index=index, lineterminator="\r\n" if carriage else "\n")
