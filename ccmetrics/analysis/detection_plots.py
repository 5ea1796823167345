"""Figures of the lesion-level detection curves: FROC, precision–recall and case-level ROC.

Each function draws one :class:`~ccmetrics.metrics.detection_curves.DetectionCurves` (computed from the tidy
tables by :meth:`ccmetrics.campaign.dataset.DatasetResult.detection_curves`) on the Agg canvas, never pyplot;
the legend states the curve's summary value with its bootstrap interval, computed from the data (a legend only
where something labelled is drawn: ``_legend``).
:func:`write_detection_plots` writes ``froc.png``, ``pr.png`` and ``roc.png`` (``_class<k>`` for each class of
several); :func:`write_threshold_plots` writes ``thresholds.png``, the global and CC means of each metric against
the threshold of the probability map (``--thresholds``), the best threshold by each marked;
:func:`write_reliability_plots` writes ``reliability.png``, the lesion-level reliability diagram of the candidates'
confidences.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Mapping
from functools import partial

import numpy as np

from .._words import count
from ..metrics.detection_curves import CPM_RATES, DetectionCurves
from ._drawing import FigureJob, write_figures
from .plots import _figure, _legend

__all__ = [
    "plot_froc",
    "plot_pr",
    "plot_reliability",
    "plot_roc",
    "plot_thresholds",
    "write_detection_plots",
    "write_reliability_plots",
    "write_threshold_plots",
]


def _value(name: str, value: float, ci: tuple[float, float]) -> str:
    if not math.isfinite(value):
        return f"{name} undefined"
    if all(math.isfinite(v) for v in ci):
        return f"{name} {value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
    return f"{name} {value:.3f}"


def plot_froc(curves: DetectionCurves, *, ax=None):
    """The FROC: lesion sensitivity against false positives per case (log axis), the CPM's rates marked.

    The x axis is ticked at 0 and the CPM's rates, labelled ``1/8``, ``1/4``, ``1/2``, ``1``, ``2``, ``4``, ``8`` (and
    the powers of 2 after them up to the curve's last point), with a margin that draws the last marker whole; the
    legend stands beside the axes when the figure is made here.

    >>> from ccmetrics.metrics.detection_curves import detection_curves_from_entries
    >>> c = detection_curves_from_entries(["a", "a", "b"], [1, 0, 0], [0.9, 0.5, 0.4], ["a", "b"], [1, 0],
    ...                                   [0.9, 0.4], n_resamples=0)
    >>> plot_froc(c).get_xlabel()
    'false positives per case'
    """
    own = ax is None
    ax = ax if ax is not None else _figure((5.5, 4))[0]
    x = np.concatenate([[0.0], curves.froc_fp_per_case])
    y = np.concatenate([[0.0], curves.froc_sensitivity])
    last = max(float(x[-1]), max(CPM_RATES))
    ax.step(
        np.append(x, last),
        np.append(y, y[-1]),
        where="post",
        color="tab:blue",
        label=_value("CPM", curves.cpm, curves.cpm_ci),
    )
    at = [curves.sensitivity_at(r) for r in CPM_RATES]
    ax.plot(CPM_RATES, at, "o", color="tab:orange", ms=4, label="sensitivity at 1/8 … 8 FP per case")
    ax.set_xscale("symlog", linthresh=CPM_RATES[0])
    _fp_rate_ticks(ax.xaxis, last)
    ax.set_xlim(0, last * 1.15)  # a margin for the last rate's marker, drawn whole
    ax.set_ylim(0, 1.04)
    ax.set_xlabel("false positives per case")
    ax.set_ylabel("lesion sensitivity")
    ax.set_title(f"FROC: {count(curves.n_lesions, 'lesion')}, {count(curves.n_cases, 'case')}")
    _legend(ax, loc="lower right", fontsize=8, outside=own)  # beside the axes: the markers can be anywhere
    return ax


def _fp_rate_ticks(axis, last: float) -> None:
    """Tick the FROC's x axis at 0, the CPM's rates and the powers of 2 after them up to ``last``, labelled as the
    rates are said: ``1/8``, ``1/4``, ``1/2``, ``1``, ``2``, ``4``, ``8`` (no minor ticks).

    >>> ax = _figure((4, 3))[0]
    >>> _fp_rate_ticks(ax.xaxis, 20.0)
    >>> [ax.xaxis.get_major_formatter()(t) for t in ax.get_xticks()]
    ['0', '1/8', '1/4', '1/2', '1', '2', '4', '8', '16']
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    rates = [0.0, *CPM_RATES]
    while rates[-1] * 2 <= last:
        rates.append(rates[-1] * 2)

    def label(x: float, pos: object = None) -> str:
        if x <= 0:
            return "0"
        return f"{x:g}" if x >= 1 else f"1/{round(1 / x):d}"

    axis.set_major_locator(FixedLocator(rates))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_locator(NullLocator())


def plot_pr(curves: DetectionCurves, *, ax=None):
    """Lesion-level precision against recall (the step curve AP integrates)."""
    ax = ax if ax is not None else _figure((5.5, 4))[0]
    keep = curves.pr_threshold > 0
    recall = np.concatenate([[0.0], curves.pr_recall[keep]])
    precision = np.concatenate([[curves.pr_precision[keep][0] if keep.any() else 1.0], curves.pr_precision[keep]])
    ax.step(recall, precision, where="pre", color="tab:blue", label=_value("AP", curves.ap, curves.ap_ci))
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("recall (lesion sensitivity)")
    ax.set_ylabel("precision")
    ax.set_title(f"Precision–recall: {count(curves.n_lesions, 'lesion')}")
    _legend(ax, loc="lower left", fontsize=8)
    return ax


def plot_roc(curves: DetectionCurves, *, ax=None):
    """The case-level ROC (a case is positive when it holds a lesion, scored by its highest confidence)."""
    ax = ax if ax is not None else _figure((4.5, 4))[0]
    ax.plot(curves.roc_fpr, curves.roc_tpr, color="tab:blue", label=_value("AUROC", curves.auroc, curves.auroc_ci))
    ax.plot([0, 1], [0, 1], ":", color="grey", lw=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("false positive rate (cases)")
    ax.set_ylabel("true positive rate (cases)")
    negatives = curves.n_cases - curves.n_positive_cases
    ax.set_title(f"ROC: {count(curves.n_positive_cases, 'case')} with lesions, {negatives} without")
    _legend(ax, loc="lower right", fontsize=8)
    return ax


def write_detection_plots(curves: Mapping[int, DetectionCurves], out_dir) -> list[pathlib.Path]:
    """Write ``froc.png``, ``pr.png`` and ``roc.png`` (120 dpi) of each class's curves into ``out_dir``.

    One class: no suffix; several: ``_class<k>``. Returns the paths written.
    """
    return write_figures(_detection_jobs(curves), out_dir)


def _figure_of(draw, *args, **kwargs):
    """The figure of the axes ``draw(*args, **kwargs)`` returns."""
    return draw(*args, **kwargs).figure


def _detection_jobs(curves: Mapping[int, DetectionCurves]) -> list[FigureJob]:
    """The figures of :func:`write_detection_plots`, as jobs of :func:`ccmetrics.analysis._drawing.write_figures`."""
    jobs: list[FigureJob] = []
    for k, curve in curves.items():
        sfx = "" if len(curves) == 1 else f"_class{k}"
        for name, draw in (("froc", plot_froc), ("pr", plot_pr), ("roc", plot_roc)):
            jobs.append((f"{name}{sfx}.png", partial(_figure_of, draw, curve)))
    return jobs


def plot_thresholds(means, best, metric: str, *, class_value: int = 1, ax=None, columns=None):
    """Global and CC means of one metric against the threshold of the probability map, each best threshold marked.

    >>> import pandas as pd
    >>> means = pd.DataFrame({"class": 1, "threshold": [0.3, 0.5], "n": 2, "dice": [0.9, 0.95],
    ...                       "cc_dice": [0.8, 0.6]})
    >>> plot_thresholds(means, {"1/dice": {"standard": 0.5, "cc": 0.3}}, "dice").get_xlabel()
    'threshold of the probability map'
    """
    from ..metrics import registry
    from ..schema import CLASS, THRESHOLD, cc

    ax = ax if ax is not None else _figure((5.5, 4))[0]
    table = means[means[CLASS] == class_value]
    name = registry.display_name(metric, columns)
    picks = best.get(f"{class_value}/{metric}", {})
    for kind, column, color, label in (
        ("standard", metric, "tab:blue", f"global {name}"),
        ("cc", cc(metric), "tab:orange", f"CC {name}"),
    ):
        if column not in table:
            continue
        ax.plot(table[THRESHOLD], table[column], "o-", color=color, ms=3, label=label)
        if kind in picks:
            t = picks[kind]
            y = float(table.loc[table[THRESHOLD] == t, column].iloc[0])
            ax.plot([t], [y], "*", color=color, ms=12, label=f"best by {label}: {t:g}")
    ax.set_xlabel("threshold of the probability map")
    ax.set_ylabel(f"mean {name} over cases with lesions")
    ax.set_title(f"{name} against the threshold ({count(int(table['n'].max()) if len(table) else 0, 'case')})")
    _legend(ax, fontsize=8, outside=True)  # beside the axes, over no point; none when the table holds neither column
    return ax


def write_threshold_plots(means, best, out_dir, columns=None) -> list[pathlib.Path]:
    """Write ``thresholds.png`` (``_class<k>`` for each class of several): one panel per swept metric."""
    return write_figures(_threshold_jobs(means, best, columns), out_dir)


def _threshold_figure(means, best, metrics, k, columns):
    from ..schema import cc

    axes = _figure((5 * len(metrics), 4), ncols=len(metrics))
    for ax, m in zip(axes, metrics):
        if m in means.columns or cc(m) in means.columns:
            plot_thresholds(means, best, m, class_value=int(k), ax=ax, columns=columns)
    return axes[0].figure


def _threshold_jobs(means, best, columns=None) -> list[FigureJob]:
    """The figures of :func:`write_threshold_plots`, as jobs of :func:`ccmetrics.analysis._drawing.write_figures`."""
    from ..schema import CLASS

    classes = sorted(means[CLASS].unique())
    metrics = sorted({key.split("/", 1)[1] for key in best}, key=lambda m: list(means.columns).index(m))
    jobs: list[FigureJob] = []
    for k in classes:
        sfx = "" if len(classes) == 1 else f"_class{k}"
        jobs.append((f"thresholds{sfx}.png", partial(_threshold_figure, means, best, metrics, k, columns)))
    return jobs


def plot_reliability(table, *, ax=None, title: str = "Reliability of candidate confidences"):
    """The lesion-level reliability diagram: per confidence bin, the fraction of candidates that are lesions,
    against the diagonal of perfect calibration; each bar labelled with its candidates.

    >>> import pandas as pd
    >>> from ccmetrics.metrics.calibration import lesion_reliability
    >>> t = lesion_reliability(pd.DataFrame({"confidence": [0.9, 0.2], "outcome": ["tp", "fp"]}))
    >>> plot_reliability(t).get_ylabel()
    'fraction that are lesions (true positives)'
    """
    ax = ax if ax is not None else _figure((5, 4))[0]
    width = table["bin_high"] - table["bin_low"]
    ax.bar(
        table["bin_low"],
        table["tp_fraction"].fillna(0),
        width=width,
        align="edge",
        color="tab:blue",
        edgecolor="white",
        alpha=0.8,
        label="true-positive fraction",
    )
    for row in table.itertuples():
        if row.n:
            ax.annotate(
                f"{row.n}",
                (row.bin_low + (row.bin_high - row.bin_low) / 2, 0.01),
                ha="center",
                va="bottom",
                fontsize=7,
                color="white" if row.tp_fraction > 0.08 else "black",
            )
    ax.plot([0, 1], [0, 1], ":", color="grey", lw=1, label="perfect calibration")
    ece = table.attrs.get("ece", float("nan"))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("candidate confidence (bin; count at the foot of each bar)")
    ax.set_ylabel("fraction that are lesions (true positives)")
    ax.set_title(f"{title}\nECE {ece:.3f}" if math.isfinite(ece) else title, fontsize=10)
    _legend(ax, loc="upper left", fontsize=8)
    return ax


def write_reliability_plots(tables, out_dir) -> list[pathlib.Path]:
    """Write ``reliability.png`` (``_class<k>`` for each class of several) from each class's reliability table."""
    return write_figures(_reliability_jobs(tables), out_dir)


def _reliability_jobs(tables) -> list[FigureJob]:
    """The figures of :func:`write_reliability_plots`, as jobs of :func:`ccmetrics.analysis._drawing.write_figures`."""
    jobs: list[FigureJob] = []
    for k, table in tables.items():
        sfx = "" if len(tables) == 1 else f"_class{k}"
        jobs.append((f"reliability{sfx}.png", partial(_figure_of, plot_reliability, table)))
    return jobs
