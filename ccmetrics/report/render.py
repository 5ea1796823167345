"""Rendering the report page: the Jinja2 template in ``templates/`` filled with a model, and what it shows numbers with.

:func:`render_html` fills ``templates/report.html.j2`` with a :func:`~ccmetrics.report.model.build_model` dict (plain
dicts and lists), with the style (``report.css``) and the scripts (``report.js``; ``viewer.js``, the cases'
viewer) inline: one self-contained page.
The template's filters are here: :func:`fmt` (a number as the page shows it), :func:`sort_value` (the exact number
of a ``data-value`` attribute, read by the page's sorting and the tests), counts with their noun, a measured quantity
with its unit (:func:`measured`, :func:`significant`: "SUVmax 15.2", "MTV 3.41 ml", "–" for none); and
:func:`anchor`, the HTML id of a case section, unique and one-to-one (the model gives every section and row its id
with it). Jinja2 and MarkupSafe are imported when a page is rendered.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from .._words import noun

__all__ = ["anchor", "fmt", "measured", "render_html", "significant", "sort_value"]

TEMPLATES = Path(__file__).parent / "templates"


def _noun(n: Any, word: str) -> str:
    """``word`` as it goes with the count ``n``, a table value read as a number (``ccmetrics._words.noun``):
    singular for exactly 1, plural for any other count (0, 2, none).

    >>> _noun(1, "case"), _noun(0, "case"), _noun(2.0, "lesion"), _noun(None, "case"), _noun(2, "has")
    ('case', 'cases', 'lesions', 'cases', 'have')
    """
    return noun(_number(n), word)


def _count(n: Any, word: str) -> str:
    """``n`` and ``word``, plural unless ``n == 1`` (``–`` for no number, as :func:`fmt` shows it).

    >>> _count(1, "case"), _count(3, "case"), _count(0, "empty-GT case"), _count(None, "case")
    ('1 case', '3 cases', '0 empty-GT cases', '– cases')
    """
    return f"{fmt(n)} {_noun(n, word)}"


def _number(value: Any) -> float | None:
    """A table value as a float, None when empty."""
    if value is None or isinstance(value, str) and not value:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def fmt(value: Any, digits: int = 4) -> str:
    """A number as shown on the page (``digits`` significant digits, ``∞``, ``–`` for none).

    >>> fmt(0.4510065294), fmt(float("inf")), fmt(None), fmt(12), fmt(98.7511473)
    ('0.451', '∞', '–', '12', '98.75')
    """
    v = _number(value)
    if v is None:
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == int(v) and abs(v) < 1e15 and not isinstance(value, float):
        return str(int(v))
    return f"{v:.{digits}g}"


def significant(value: Any, digits: int = 3) -> str:
    """A measured quantity's number: ``digits`` significant digits, never in exponent form (a number with ``digits``
    or more integer digits is rounded to a whole one), ``–`` for no number (None, NaN).

    >>> significant(15.2345), significant(3.4123), significant(4.0), significant(0.012345), significant(1234.5)
    ('15.2', '3.41', '4.00', '0.0123', '1234')
    >>> significant(0), significant(-2.345), significant(float("nan")), significant(None)
    ('0', '-2.35', '–', '–')
    """
    v = _number(value)
    if v is None:
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:.{decimals}f}"


def measured(value: Any, name: str, unit: str = "") -> str:
    """A measured quantity in words: its name, its number (:func:`significant`) and its unit; ``–`` without the unit
    for no number.

    >>> measured(15.2345, "SUVmax"), measured(3.4123, "MTV", "ml"), measured(float("nan"), "MTV", "ml")
    ('SUVmax 15.2', 'MTV 3.41 ml', 'MTV –')
    """
    text = significant(value)
    return f"{name} {text}" + (f" {unit}" if unit and text != "–" else "")


def sort_value(value: Any) -> str:
    """A number for a ``data-value`` attribute (read by the page's sorting and the tests): exact, or empty.

    >>> sort_value(0.1), sort_value(float("inf")), sort_value(float("nan"))
    ('0.1', 'Infinity', '')
    """
    v = _number(value)
    if v is None:
        return ""
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def anchor(case: str, class_value: Any, multi_class: bool) -> str:
    """An HTML id for a case section, unique to its case and class; the ids of its rows add ``-lesion-<k>``,
    ``-fp-<k>`` or ``-candidate-<k>``.

    Letters, digits and ``_`` are kept; every other character is written as ``.<hex code>.``. That is one-to-one
    and never writes ``-``, so the id's parts (``case``, the case, ``class<c>``, the row) never run into each
    other: "case 001" and "case_001", or the case "a-lesion-1" and lesion 1 of case "a", get ids of their own.

    >>> anchor("case 001/a", 1, False), anchor("case_001", 1, False), anchor("x", 2, True)
    ('case-case.20.001.2f.a', 'case-case_001', 'case-x-class2')
    >>> anchor("a-lesion-1", 1, False), anchor("a", 1, False) + "-lesion-1"
    ('case-a.2d.lesion.2d.1', 'case-a-lesion-1')
    """
    text = "case-" + re.sub(r"[^A-Za-z0-9_]", lambda m: f".{ord(m.group()):x}.", str(case))
    return text + (f"-class{class_value}" if multi_class else "")


def render_html(model: dict[str, Any]) -> str:
    """Fill the template with a :func:`~ccmetrics.report.model.build_model` dict."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["fmt"] = fmt
    env.filters["count"] = _count
    env.filters["noun"] = _noun
    env.filters["sortval"] = sort_value
    env.filters["measured"] = measured
    env.filters["significant"] = significant
    env.globals["abs_sortval"] = lambda v: "" if (number := _number(v)) is None else sort_value(abs(number))
    style = Markup((TEMPLATES / "report.css").read_text(encoding="utf-8"))
    script = Markup((TEMPLATES / "report.js").read_text(encoding="utf-8"))
    viewer_script = Markup((TEMPLATES / "viewer.js").read_text(encoding="utf-8"))
    env.filters["json_script"] = Markup  # JSON already safe in a <script> element (viewer.json_text: no "</")
    return env.get_template("report.html.j2").render(style=style, script=script, viewer_script=viewer_script, **model)
