"""The figures of PET quantification (the ``pet`` metrics): how the model's TMTV and TLG agree with the reference's,
and which lesions it finds by their uptake.

* :func:`plot_bland_altman`: per case, the difference pred − gt against the mean of the two, with the bias and the
  limits of agreement (bias ∓ 1.96 SD, ddof 1; :func:`ccmetrics.metrics.pet_agreement.bland_altman`), the x axis
  logarithmic when the positive means span more than two decades;
* :func:`plot_pred_vs_ref`: per case, the model's value against the reference's with the identity line, both axes
  logarithmic when the positive values span more than two decades (the cases a log axis cannot show, a value of 0,
  are counted in the title);
* :func:`plot_detection_by_suv`: the detection rate per SUVmax bin of the lesions
  (:func:`ccmetrics.analysis.sizes.suv_table`).

:func:`write_pet_plots` writes them into ``OUT_DIR/plots`` (``bland_altman_tmtv_ml.png``, ``bland_altman_tlg.png``,
``pred_vs_ref_tmtv_ml.png``, ``pred_vs_ref_tlg.png``, ``detection_by_suv.png``; ``_class<k>`` per class of
several). Cases that failed are left out; every number drawn is computed from the tables. Cost: one pass over
the per-case and per-component tables per figure.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .._words import count
from ..metrics.pet_agreement import bland_altman
from ..schema import CLASS, DETECTED, FAILED, STATUS
from ._drawing import FigureJob, write_figures
from .plots import CC_COLOR, MISSED_COLOR, STANDARD_COLOR, _detection_bars, _figure, _legend
from .sizes import suv_table

__all__ = ["plot_bland_altman", "plot_detection_by_suv", "plot_pred_vs_ref", "write_pet_plots", "PET_PLOT_MEASURES"]

#: the per-case measures drawn by :func:`write_pet_plots`, with their axis labels
PET_PLOT_MEASURES = {"tmtv_ml": "TMTV (ml)", "tlg": "TLG (ml)"}


def _pairs(per_case: pd.DataFrame, measure: str, class_value: Any) -> tuple[np.ndarray, np.ndarray]:
    """The (gt, pred) values of a measure over the evaluated cases of a class, both finite."""
    rows = per_case[per_case[STATUS] != FAILED] if STATUS in per_case else per_case
    if class_value is not None:
        rows = rows[rows[CLASS] == class_value]
    for column in (f"gt_{measure}", f"pred_{measure}"):
        if column not in rows:
            raise ValueError(f"per_case has no column {column!r}: evaluate with --metrics ...,pet and --images")
    gt, pred = rows[f"gt_{measure}"].to_numpy(float), rows[f"pred_{measure}"].to_numpy(float)
    finite = np.isfinite(gt) & np.isfinite(pred)
    return gt[finite], pred[finite]


def _wide(values: np.ndarray) -> bool:
    """Whether the positive values span more than two decades (a log axis shows them better)."""
    positive = values[values > 0]
    return len(positive) >= 2 and positive.max() > 100 * positive.min()


def _label(measure: str) -> str:
    return PET_PLOT_MEASURES.get(measure, measure)


def _suffix(class_value: Any) -> str:
    return "" if class_value is None else f" (class {class_value})"


def plot_bland_altman(per_case: pd.DataFrame, measure: str = "tmtv_ml", *, ax=None, class_value=None):
    """Bland–Altman plot of a per-case measure: pred − gt against (gt + pred) / 2, one point per case.

    Parameters
    ----------
    per_case : pandas.DataFrame
        The per-case table with ``gt_<measure>`` and ``pred_<measure>`` (the ``pet`` metrics); failed cases and
        cases where either value is undefined are left out.
    measure : str
        ``tmtv_ml``, ``tlg``, ``suv_max``, ... (the ``pet`` group's per-case measures).
    ax : matplotlib Axes, optional
    class_value : int, optional
        Only this class's rows.

    Returns
    -------
    matplotlib.figure.Figure
        The bias and the limits of agreement are horizontal lines, their values in the legend.

    Examples
    --------
    >>> table = pd.DataFrame({"gt_tlg": [10.0, 20.0, 40.0], "pred_tlg": [12.0, 19.0, 45.0]})
    >>> figure = plot_bland_altman(table, "tlg")
    >>> [round(line.get_ydata()[0], 3) for line in figure.axes[0].get_lines()]  # 2 ∓ 1.96 × 3: bias, then limits
    [2.0, -3.88, 7.88]
    """
    gt, pred = _pairs(per_case, measure, class_value)
    own = ax is None
    ax = ax if ax is not None else _figure((6.0, 4.4))[0]
    mean, diff = (gt + pred) / 2.0, pred - gt
    ax.scatter(mean, diff, s=18, color=STANDARD_COLOR, alpha=0.8, label=count(len(gt), "case"))
    bias, loa_low, loa_high = bland_altman(gt, pred)
    if math.isfinite(bias):
        ax.axhline(bias, color=CC_COLOR, label=f"bias {bias:.3g}")
    if math.isfinite(loa_low):
        for value in (loa_low, loa_high):
            ax.axhline(value, color=MISSED_COLOR, linestyle="--")
        ax.lines[-1].set_label(f"limits of agreement {loa_low:.3g} to {loa_high:.3g}")
    if _wide(mean):
        ax.set_xscale("log")
        left_out = int((mean <= 0).sum())
        if left_out:
            ax.text(0.01, 0.01, f"{count(left_out, 'case')} with mean 0 not shown (log axis)", transform=ax.transAxes)
    ax.set(
        xlabel=f"mean of model and reference, {_label(measure)}",
        ylabel=f"model − reference, {_label(measure)}",
        title=f"Bland–Altman, {_label(measure)}{_suffix(class_value)}",
    )
    _legend(ax, loc="best", fontsize="small", outside=own)  # beside the axes, where it covers no case
    return ax.figure


def plot_pred_vs_ref(per_case: pd.DataFrame, measure: str = "tmtv_ml", *, ax=None, class_value=None):
    """The model's value of a per-case measure against the reference's, one point per case, the identity line.

    Both axes are logarithmic when the positive values span more than two decades; the cases with a value of 0
    cannot be drawn there, and the title counts them.

    Examples
    --------
    >>> table = pd.DataFrame({"gt_tmtv_ml": [0.5, 8.0, 300.0, 0.0], "pred_tmtv_ml": [0.4, 9.0, 280.0, 1.2]})
    >>> figure = plot_pred_vs_ref(table, "tmtv_ml")
    >>> figure.axes[0].get_xscale(), figure.axes[0].get_title()
    ('log', 'Model vs reference, TMTV (ml): 4 cases, 1 with a 0 not shown (log axes)')
    """
    gt, pred = _pairs(per_case, measure, class_value)
    ax = ax if ax is not None else _figure((5.0, 5.0))[0]
    both = np.concatenate([gt, pred])
    log = _wide(both)
    shown = (gt > 0) & (pred > 0) if log else np.ones(len(gt), bool)
    ax.scatter(gt[shown], pred[shown], s=18, color=STANDARD_COLOR, alpha=0.8)
    if shown.any():
        xs, ys = gt[shown], pred[shown]
        low, high = min(float(xs.min()), float(ys.min())), max(float(xs.max()), float(ys.max()))
        ax.plot([low, high], [low, high], color="grey", linewidth=1, label="identity")
    title = f"Model vs reference, {_label(measure)}{_suffix(class_value)}: {count(len(gt), 'case')}"
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
        hidden = int((~shown).sum())
        if hidden:
            title += f", {hidden} with a 0 not shown (log axes)"
    ax.set(xlabel=f"reference, {_label(measure)}", ylabel=f"model, {_label(measure)}", title=title)
    return ax.figure


def plot_detection_by_suv(
    per_component: pd.DataFrame, *, bins: Sequence[float] | None = None, ax=None, class_value=None
):
    """Detection rate per SUVmax bin of the lesions (``[low, high)``; default bins <2.5, 2.5–4, 4–10, ≥10).

    Each bar is annotated with ``detected/total``; an empty bin says ``n = 0``. ``class_value``: only that class's
    lesions; None pools every lesion of the table (all classes together).

    Examples
    --------
    >>> comps = pd.DataFrame({"class": 1, "suv_max": [2.0, 3.0, 15.2], "detected": [False, True, True]})
    >>> [t.get_text() for t in plot_detection_by_suv(comps).axes[0].texts]
    ['0/1', '1/1', 'n = 0', '1/1']
    """
    df = per_component if class_value is None else per_component[per_component[CLASS] == class_value]
    for col in ("suv_max", DETECTED):
        if col not in df:
            raise ValueError(f"per_component has no column {col!r}: evaluate with --metrics ...,pet and --images")
    table = suv_table(df.assign(**{CLASS: 1}), bins)  # one class: this class's lesions, or all of them pooled
    ax, counts = _detection_bars(table, ax)
    ax.set(
        xlabel="lesion SUVmax",
        ylabel="detection rate",
        title=f"Lesion detection by SUVmax{_suffix(class_value)} ({count(int(counts.sum()), 'lesion')})",
    )
    return ax.figure


def write_pet_plots(result: Any, out_dir: Any, *, suv_bins: Sequence[float] | None = None) -> list[pathlib.Path]:
    """Write the PET figures of a result (:class:`~ccmetrics.results.DatasetResult`) into ``out_dir``; none without
    the ``pet`` metric's columns. Returns the paths written."""
    jobs = _pet_jobs(result, suv_bins)
    return write_figures(jobs, out_dir) if jobs else []  # (no folder made for no figure)


def _pet_jobs(result: Any, suv_bins: Sequence[float] | None = None) -> list[FigureJob]:
    """The figures of :func:`write_pet_plots`, as jobs of :func:`ccmetrics.analysis._drawing.write_figures`."""
    per_case, per_component = result.per_case, result.per_component
    if "gt_tmtv_ml" not in per_case:
        return []
    classes: list[Any] = sorted(per_case[CLASS].dropna().unique()) if CLASS in per_case else [None]
    several = len(classes) > 1 and None not in classes
    jobs: list[FigureJob] = []
    for c in classes:
        value = c if several else None
        sfx = f"_class{int(c)}" if value is not None else ""
        rows = per_case if value is None else per_case[per_case[CLASS] == value]
        for measure in PET_PLOT_MEASURES:
            if len(_pairs(rows, measure, None)[0]):
                jobs.append((f"bland_altman_{measure}{sfx}.png", partial(plot_bland_altman, rows, measure)))
                jobs.append((f"pred_vs_ref_{measure}{sfx}.png", partial(plot_pred_vs_ref, rows, measure)))
        comps = per_component if value is None else per_component[per_component[CLASS] == value]
        evaluated = per_case.loc[per_case[STATUS] != FAILED, "case"].unique()
        comps = comps[comps["case"].isin(evaluated)] if len(comps) else comps
        if len(comps) and "suv_max" in comps and DETECTED in comps:
            jobs.append((f"detection_by_suv{sfx}.png", partial(plot_detection_by_suv, comps, bins=suv_bins)))
    return jobs
