"""Figures from the tidy result tables.

``per_component`` has one row per ground-truth lesion (``case``, ``class``, ``component``, ``volume``,
``volume_mm3``, ``detected``, ``worst_distance``, one column per metric); ``per_case`` one row per case
and class (``case``, ``class``, ``status``, ``empty_gt``, global ``m`` and CC ``cc_m`` per metric).
Every function returns a :class:`matplotlib.figure.Figure`. matplotlib is imported only when a figure
is made, and figures use the Agg canvas directly, never pyplot: nothing depends on a display or on
pyplot's global state. Rows of ``per_case`` with status ``"error"`` are skipped; rows with an empty GT
are left out of the per-case plots (their scores follow a special rule) and the caption says how many.
:func:`write_plots` writes the standard set of PNGs into a folder.

Volumes are in ml (``volume_mm3 / 1000``) in every figure, as in the summary and the report, or in voxels when a
lesion's ``volume_mm3`` is unknown (no spacing). Counts are written with their noun in the singular for one
(``1 empty-GT case``). A legend is drawn only when something labelled was drawn (``_legend``): a figure with
nothing to show (every case failed, a class with no lesion) warns nothing. Lengths are labelled with their unit
(``HD95 (mm)``; voxels where the table's ``spacing`` says ``voxel``). Every figure fits its canvas: a figure made here
puts the legend of its points beside the axes (or under the panels) and grows with its caption, never cutting a text
nor covering a point (checked for every figure by ``tests/analysis/test_figures_fit.py``).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd

from .._words import count
from ..metrics import registry
from ..metrics.aggregation import cc_values
from ..schema import CASE, CLASS, DETECTED, EMPTY_GT, FAILED, SPACING, STATUS, WORST_DISTANCE, base, cc
from ._drawing import FigureJob, drawing_ahead, write_figures
from .sizes import lesion_volumes, size_table

__all__ = [
    "drawing_ahead",
    "plot_case_distribution",
    "plot_comparison",
    "plot_detection_by_size",
    "plot_by_group",
    "plot_metric_vs_volume",
    "plot_standard_vs_cc",
    "write_plots",
    "write_result_plots",
]

STANDARD_COLOR, CC_COLOR, MISSED_COLOR = "tab:blue", "tab:orange", "tab:red"


def _per_region_metrics(columns=None):
    """Every metric with a CC version that the registry or the table's facts know, the built-in ones first."""
    names = list(registry.names(per_region=True))
    return names + [m for m, c in (columns or {}).items() if c.cc and m not in names]


def _figure(figsize, ncols=1, **kw):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig.subplots(1, ncols, squeeze=False, **kw)[0]


def _require(df, columns, table, fix):
    for col in columns:
        if col not in df.columns:
            raise ValueError(f"{table} has no column {col!r}; {fix}")


def _of_class(df, class_value, table):
    if class_value is None:
        return df
    _require(df, [CLASS], table, "pass class_value=None to pool all rows")
    return df[df[CLASS] == class_value]


def _legend(ax, **kw):
    """Draw ``ax``'s legend if anything on it is labelled (matplotlib warns "No artists with labels found to put in
    legend" otherwise); the legend, or None. ``outside=True``: right of the axes, where it covers no point, the figure
    widened by the legend's width, when the figure has a layout engine to make room for it (every figure of
    :func:`_figure`); else where ``loc`` says.

    >>> ax = _figure((2, 2))[0]
    >>> _legend(ax) is None
    True
    >>> _ = ax.plot([0, 1], [0, 1], label="identity")
    >>> _legend(ax).get_texts()[0].get_text()
    'identity'
    """
    if "handles" not in kw and not ax.get_legend_handles_labels()[0]:
        return None
    if "handles" in kw and not kw["handles"]:
        return None
    fig = ax.figure
    if not kw.pop("outside", False) or fig.get_layout_engine() is None:
        return ax.legend(**kw)
    # right of the axes, where it covers no point; the figure widened by the legend's width, which its layout engine
    # (ours: constrained) gives to the legend, so that the axes keep their width
    kw.update(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    legend = ax.legend(**kw)
    fig.set_figwidth(fig.get_figwidth() + legend.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi + 0.1)
    return legend


def _fit_width(fig, text, pad_in=0.3):
    """Widen ``fig`` (never narrow it) until ``text``, a figure-level text such as the suptitle, fits with ``pad_in``
    inches to spare: its width measured by the Agg renderer, so that a caption is never cut at both ends.

    >>> fig = _figure((2, 2))[0].figure
    >>> _fit_width(fig, fig.suptitle("a caption far wider than two inches")) > 2
    True
    """
    renderer = fig.canvas.get_renderer()
    need = text.get_window_extent(renderer).width / fig.dpi + pad_in
    if need > fig.get_figwidth():
        fig.set_figwidth(need)
    return float(fig.get_figwidth())


def _unit(columns, df, facts=None):
    """The unit of the values of ``columns`` as shown on an axis: ``"mm"``, ``"ml"``, ``"voxels"``, ``"mm or
    voxels"`` (the rows' ``spacing`` mixes both), or ``""`` (a score, or columns of different units).

    Lengths and volumes are in voxels where the table's ``spacing`` column says ``voxel`` (a run without spacing),
    in mm or ml otherwise (and where the table does not say).

    >>> _unit(["hd95", "cc_hd95"], pd.DataFrame({"spacing": ["0.8x0.8x3", "voxel"]}))
    'mm or voxels'
    >>> _unit(["hd95"], pd.DataFrame({"spacing": ["voxel"]})), _unit(["dice", "nsd"], pd.DataFrame())
    ('voxels', '')
    """
    units = {registry.unit_label(c, extra=facts) for c in columns}
    if len(units) != 1 or "" in units:
        return ""
    unit = units.pop()
    if SPACING in df.columns and len(df):
        voxel = df[SPACING].astype(str).eq("voxel").to_numpy()
        if voxel.all():
            return "voxels"
        if voxel.any():
            return f"{unit} or voxels"
    return unit


def _with_unit(label, unit):
    return f"{label} ({unit})" if unit else label


def _plain_log_ticks(axis):
    """Label a log axis with plain numbers (``0.1``, ``1``, ``10`` ml), on the ticks matplotlib labels anyway."""
    from matplotlib.ticker import LogFormatterSciNotation

    class Plain(LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            return f"{x:g}" if super().__call__(x, pos) else ""

    axis.set_major_formatter(Plain())
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def _suffix(class_value):
    return "" if class_value is None else f" (class {class_value})"


def _usable_cases(per_case, class_value):
    """Rows of per_case to plot, and the counts of empty-GT and error rows left out."""
    df = _of_class(per_case, class_value, "per_case")
    n_error = n_empty = 0
    if STATUS in df.columns:
        error = (df[STATUS] == FAILED).to_numpy()
        n_error, df = int(error.sum()), df[~error]
    if EMPTY_GT in df.columns:
        empty = df[EMPTY_GT].eq(True).to_numpy()
        n_empty, df = int(empty.sum()), df[~empty]
    return df, n_empty, n_error


def _case_values(df, column, columns=None):
    """A per-case column as plotted: a non-finite distance (empty prediction) counts as the case's worst
    distance when the table has ``worst_distance``, the rule the summary uses (:mod:`ccmetrics.metrics.aggregation`)."""
    values = df[column].to_numpy(float)
    if WORST_DISTANCE in df.columns:
        values = cc_values(values, column, df[WORST_DISTANCE].to_numpy(float), columns)
    return values


def _caption(n, n_empty, n_error, n_dropped=0, width=200):
    parts = [
        f"n = {count(n, 'case')} with lesions",
        f"{count(n_empty, 'empty-GT case')} not shown" * bool(n_empty),
        f"{count(n_error, 'error row')} skipped" * bool(n_error),
        f"{count(n_dropped, 'non-finite value')} dropped" * bool(n_dropped),
    ]
    lines = []
    for p in filter(None, parts):  # wrap between parts only
        if lines and len(lines[-1]) + len(p) + 2 <= width:
            lines[-1] += f"; {p}"
        else:
            lines.append(p)
    return ";\n".join(lines)


def _metric_columns(df, metrics, columns=None):
    if metrics is None:
        return [c for m in _per_region_metrics(columns) for c in (m, cc(m)) if c in df.columns]
    cols = []
    for m in metrics:
        found = [c for c in ((m,) if base(m) != m else (m, cc(m))) if c in df.columns]
        if not found:
            raise ValueError(
                f"per_case has no column {m!r} (nor 'cc_{m}'); pass metrics= among the "
                f"columns it has, or evaluate that metric"
            )
        cols += [c for c in found if c not in cols]
    return cols


def plot_metric_vs_volume(per_component, metric="dice", *, ax=None, class_value=None, columns=None):
    """Per-lesion ``metric`` against lesion volume (log x), missed lesions marked in red.

    The x axis is in ml when ``volume_mm3`` is known for every lesion, else in voxels. For an overlap
    metric, dashed lines show the plain mean over lesions (what CC-Metrics average) and the
    volume-weighted mean (close to the global score), which makes the size bias of a global score
    visible; a black line gives the median per log-size bin. Missed lesions' infinite distances are
    drawn at ``worst_distance`` when that column exists, else dropped (counted in the title).

    Parameters
    ----------
    per_component : pandas.DataFrame
        The tidy per-lesion table; needs ``metric`` and ``volume`` (or ``volume_mm3``); ``detected``
        is used when present.
    metric : str
        The metric column on the y axis.
    ax : matplotlib.axes.Axes, optional
        Draw into it; by default a new Figure is made.
    class_value : int, optional
        Only lesions of this class; by default all rows.
    columns : mapping of str to ccmetrics.metrics.registry.Column, optional
        Facts of metrics this process has not registered (a result folder's
        ``DatasetResult.columns``); the registry's otherwise.

    Returns
    -------
    matplotlib.figure.Figure
    """
    df = _of_class(per_component, class_value, "per_component")
    _require(df, [metric], "per_component", "pass metric= one of its metric columns")
    vol, unit = lesion_volumes(df, unit="ml")
    y = df[metric].to_numpy(float)
    distance = registry.is_distance(metric, columns)
    at_worst = WORST_DISTANCE in df.columns and distance and bool(np.isinf(y).any())
    if at_worst:
        y = np.where(np.isinf(y), df[WORST_DISTANCE].to_numpy(float), y)
    detected = df[DETECTED].to_numpy(bool) if DETECTED in df.columns else np.ones(len(df), bool)
    ok = np.isfinite(y) & (vol > 0)
    own = ax is None
    ax = ax if ax is not None else _figure((6.4, 4.6))[0]
    for mask, kw in (
        (ok & detected, dict(color=STANDARD_COLOR, marker="o", alpha=0.6, label="detected")),
        (ok & ~detected, dict(color=MISSED_COLOR, marker="x", label="missed")),
    ):
        if mask.any():
            kw["label"] += f" ({mask.sum()}{', at worst distance' * (at_worst and kw['marker'] == 'x')})"
            ax.scatter(vol[mask], y[mask], s=18, **kw)
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis)
    v, w = vol[ok], y[ok]
    if len(v) >= 6 and v.max() > v.min():
        edges = np.geomspace(v.min(), v.max() * (1 + 1e-9), 7)
        idx = np.searchsorted(edges, v, side="right") - 1
        mids = [(math.sqrt(edges[i] * edges[i + 1]), np.median(w[idx == i])) for i in range(6) if (idx == i).sum() >= 2]
        if mids:
            ax.plot(*zip(*mids), color="black", lw=1.5, label="binned median")
    if not distance and len(v):
        ax.axhline(w.mean(), color="tab:green", ls="--", lw=1, label=f"mean per lesion {w.mean():.2f}")
        wm = np.average(w, weights=v)
        ax.axhline(wm, color="tab:purple", ls=":", lw=1.5, label=f"volume-weighted mean {wm:.2f} (≈ global)")
    dropped = int((~ok).sum())
    note = f"; {dropped} not drawn (non-finite value or zero volume)" if dropped else ""
    y_unit = registry.unit_label(metric, spacing=unit == "ml", extra=columns)  # lengths in voxels without spacing
    ax.set(
        xlabel=f"lesion volume ({unit}, log scale)",
        ylabel=_with_unit(f"{registry.display_name(metric, columns)} per lesion", y_unit),
        title=f"{metric} per lesion vs size{_suffix(class_value)}\n{count(int(ok.sum()), 'lesion')}{note}",
    )
    _legend(ax, fontsize="small", loc="best", outside=own)  # beside the axes, where it covers no lesion
    return ax.figure


def plot_standard_vs_cc(per_case, metric="dice", *, ax=None, class_value=None, columns=None):
    """Per-case standard (global) value of ``metric`` (x) against its CC value (y), with the identity.

    Error rows and empty-GT rows are left out, as are points with a non-finite value; the title counts
    them. With several classes in the table (and ``class_value=None``) each class gets its own colour.
    For an overlap metric, points under the line are cases scored lower per lesion than globally.

    Parameters
    ----------
    per_case : pandas.DataFrame
        The tidy per-case table; needs ``metric`` and ``cc_<metric>``; ``status``, ``empty_gt`` and
        ``class`` are used when present.
    metric, ax, class_value, columns
        As in :func:`plot_metric_vs_volume`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    cc_column = cc(metric)
    _require(per_case, [metric, cc_column], "per_case", "pass metric= a metric evaluated with its CC value")
    df, n_empty, n_error = _usable_cases(per_case, class_value)
    x, y = _case_values(df, metric, columns), _case_values(df, cc_column, columns)
    ok = np.isfinite(x) & np.isfinite(y)
    own = ax is None
    ax = ax if ax is not None else _figure((5.6, 5.6))[0]
    groups = df[CLASS].to_numpy() if CLASS in df.columns else np.zeros(len(df))
    classes = pd.unique(groups[ok])
    for k in classes:
        m = ok & (groups == k)
        ax.scatter(x[m], y[m], s=20, alpha=0.7, label=f"class {k}" if len(classes) > 1 else None)
    if ok.any():
        lo, hi = min(x[ok].min(), y[ok].min()), max(x[ok].max(), y[ok].max())
        pad = 0.05 * (hi - lo) if hi > lo else 0.05 * max(abs(hi), 1.0)
        lo, hi = lo - pad, hi + pad
        ax.plot([lo, hi], [lo, hi], color="0.5", ls="--", lw=1, label="identity (CC = standard)")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_aspect("equal", adjustable="box")
    unit = _unit([metric, cc_column], df, columns)
    name = registry.display_name(metric, columns)
    ax.set(
        xlabel=f"standard {name} (global, per case{'; ' * bool(unit)}{unit})",
        ylabel=f"CC-{name} (mean over lesions{'; ' * bool(unit)}{unit})",
        title=f"{metric}: standard vs CC{_suffix(class_value)}\n"
        f"{_caption(int(ok.sum()), n_empty, n_error, int((~ok).sum()), width=60)}",
    )
    ax.title.set_fontsize("medium")
    # nothing to show (every case failed, a class without lesions): none; beside the axes, where it covers no case
    _legend(ax, fontsize="small", loc="best", outside=own)
    return ax.figure


def _boxes(ax, df, cols, rng, columns=None):
    dropped = 0
    for i, c in enumerate(cols):
        v = _case_values(df, c, columns)
        dropped += int((~np.isfinite(v)).sum())
        v = v[np.isfinite(v)]
        color = CC_COLOR if base(c) != c else STANDARD_COLOR
        if len(v):
            ax.boxplot(
                [v],
                positions=[i],
                widths=0.55,
                showfliers=False,
                patch_artist=True,
                boxprops=dict(facecolor=color, alpha=0.3),
                medianprops=dict(color="black"),
            )
            ax.scatter(i + rng.uniform(-0.18, 0.18, len(v)), v, s=10, color=color, alpha=0.7, zorder=3)
    ax.set_xticks(range(len(cols)), cols, rotation=30 if len(cols) > 6 else 0)
    ax.set_xlim(-0.6, len(cols) - 0.4)
    return dropped


def plot_case_distribution(per_case, metrics=None, *, ax=None, class_value=None, columns=None):
    """Distribution of per-case scores (box plus jittered points), standard and CC side by side.

    Error and empty-GT rows are left out; non-finite values are dropped and counted in the title.

    Parameters
    ----------
    per_case : pandas.DataFrame
        The tidy per-case table.
    metrics : sequence of str, optional
        Base names (``"dice"`` gives ``dice`` and ``cc_dice``) or explicit columns (``"cc_dice"``);
        by default every metric with a CC version (the registry's) and its ``cc_`` column.
    ax : matplotlib.axes.Axes, optional
        Draw everything into it; by default a new Figure with overlap and distance metrics in two
        panels (their scales differ).
    class_value : int, optional
        Only rows of this class; by default all rows.
    columns : mapping, optional
        As in :func:`plot_metric_vs_volume`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    cols = _metric_columns(per_case, metrics, columns)
    if not cols:
        raise ValueError(
            f"per_case has none of the columns {', '.join(_per_region_metrics(columns))} (nor cc_ "
            "versions); pass metrics= with the columns to show"
        )
    df, n_empty, n_error = _usable_cases(per_case, class_value)
    own = ax is None
    if own:
        overlap = [c for c in cols if not registry.is_distance(c, columns)]
        groups = [g for g in (overlap, [c for c in cols if c not in overlap]) if g]
        axes = _figure((1.4 + 1.1 * len(cols), 4.6), len(groups), width_ratios=[len(g) for g in groups])
    else:
        groups, axes = [cols], [ax]
    rng = np.random.default_rng(0)
    dropped = sum(_boxes(a, df, g, rng, columns) for a, g in zip(axes, groups))
    for a, g in zip(axes, groups):
        a.set_ylabel(_axis_label(g, df, columns))
    from matplotlib.patches import Patch

    handles = [
        Patch(color=STANDARD_COLOR, alpha=0.5, label="standard (global)"),
        Patch(color=CC_COLOR, alpha=0.5, label="CC (per lesion)"),
    ]
    title = f"Per-case scores{_suffix(class_value)}\n{_caption(len(df), n_empty, n_error, dropped)}"
    if not own:
        _legend(ax, handles=handles, fontsize="small", loc="best")
        ax.set_title(title, fontsize="medium")
        return ax.figure
    fig = axes[0].figure
    # under the panels, where it covers no case; the figure as wide as its caption (one metric makes it narrow)
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize="small", frameon=False)
    _fit_width(fig, fig.suptitle(title, fontsize="medium"))
    return fig


def _axis_label(cols, df, columns=None):
    """The y label of a panel of per-case columns: the metric's name when the panel shows one (``Dice``,
    ``HD95 (mm)``), else what they are (``score``, ``distance (mm)``, ``value`` for measures or a mix), with the
    unit of lengths and volumes (:func:`_unit`)."""
    kinds = {registry.is_distance(c, columns) if registry.has_direction(c, columns) else None for c in cols}
    unit = _unit(cols, df, columns)
    bases = {base(c) for c in cols}
    if len(bases) == 1 and kinds in ({True}, {False}):
        return _with_unit(registry.display_name(bases.pop(), columns), unit)
    return _with_unit("distance" if kinds == {True} else "score" if kinds == {False} else "value", unit)


def _detection_bars(table, ax=None):
    """The bars of a per-bin detection table (:func:`ccmetrics.analysis.sizes.size_table` or ``suv_table``, one
    class): each bin's detection rate annotated ``detected/total`` (an empty bin: ``n = 0``). Returns the Axes and
    the lesions per bin."""
    counts, hits = table["lesions"].to_numpy(), table["detected"].to_numpy()
    rates = np.nan_to_num(table["detection_rate"].to_numpy(float))
    ax = ax if ax is not None else _figure((6.0, 4.4))[0]
    ax.bar(range(len(rates)), rates, color=STANDARD_COLOR, alpha=0.8, width=0.7)
    for i, (h, n) in enumerate(zip(hits, counts)):
        ax.text(i, rates[i] + 0.02, f"{h}/{n}" if n else "n = 0", ha="center", va="bottom", fontsize="small")
    ax.set_xticks(range(len(table)), table["bin"].tolist())
    ax.set_ylim(0, 1.12)
    return ax, counts


def plot_detection_by_size(per_component, *, bins=None, ax=None, class_value=None):
    """Detection rate (share of lesions with ``detected`` True) per lesion-size bin.

    Parameters
    ----------
    per_component : pandas.DataFrame
        The tidy per-lesion table; needs ``detected`` and ``volume`` (or ``volume_mm3``).
    bins : sequence of float, optional
        Inner bin edges in ml, or in voxels when ``volume_mm3`` is not known for every lesion
        (:mod:`ccmetrics.analysis.sizes`, as ``--size-bins``); a lesion falls in ``[low, high)``. Default
        ``(0.1, 1, 10)`` ml (<0.1 ml, 0.1–1 ml, 1–10 ml, ≥10 ml), or ``(10, 100, 1000)`` voxels.
        Full edges from 0 to infinity (mm³ or voxels), as earlier versions took, are accepted too.

    ax, class_value
        As in :func:`plot_metric_vs_volume`.

    Each bar is annotated with ``detected/total``; an empty bin has height 0 and says ``n = 0``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    df = _of_class(per_component, class_value, "per_component")
    _require(df, [DETECTED], "per_component", "it is True where the lesion overlaps the prediction")
    _, unit = lesion_volumes(df, unit="ml")
    if bins is not None and len(bins) >= 2 and bins[0] == 0 and math.isinf(bins[-1]):  # full edges (mm³ or voxels)
        bins = [b / 1000.0 if unit == "ml" else b for b in bins[1:-1]]
    table = size_table(df if CLASS in df.columns else df.assign(**{CLASS: 1}), bins)
    table = table[table[CLASS] == table[CLASS].iloc[0]]
    ax, counts = _detection_bars(table, ax)
    ax.set(
        xlabel=f"lesion size ({unit})",
        ylabel="detection rate",
        title=f"Lesion detection by size{_suffix(class_value)} ({count(int(counts.sum()), 'lesion')})",
    )
    return ax.figure


def plot_by_group(per_case, groups, column, group_label="group"):
    """Per-case values of one column by subgroup (``--metadata``/``--group-by``), one panel per class.

    Parameters
    ----------
    per_case : pandas.DataFrame
        The tidy per-case table; evaluated cases with GT lesions are drawn.
    groups : mapping of str to tuple of str
        Case id -> its group (:func:`ccmetrics.analysis.subgroups.case_groups`).
    column : str
        E.g. ``"cc_dice"``.
    group_label : str
        The grouping's name, for the axis.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _require(per_case, [column], "per_case", "evaluate with the metric first")
    df, _, _ = _usable_cases(per_case, None)
    classes = sorted(df[CLASS].unique()) if CLASS in df.columns and len(df) else [None]
    names = sorted(set(groups.values()))
    axes = _figure((2.0 + 1.1 * len(names) * len(classes), 4.4), len(classes))
    rng = np.random.default_rng(0)
    for ax, k in zip(axes, classes):
        rows = df if k is None else df[df[CLASS] == k]
        for i, name in enumerate(names):
            inside = np.array([groups.get(str(c)) == name for c in rows[CASE]], bool)
            values = rows.loc[inside, column].to_numpy(float)
            values = values[np.isfinite(values)]
            if values.size:
                ax.scatter(i + rng.uniform(-0.15, 0.15, values.size), values, s=14, color=CC_COLOR, alpha=0.7)
                ax.plot([i - 0.25, i + 0.25], [np.median(values)] * 2, color="black", lw=2)
            ax.text(i, 1.02, f"n = {values.size}", transform=ax.get_xaxis_transform(), ha="center", fontsize="small")
        ax.set_xticks(range(len(names)), [" / ".join(n) for n in names], rotation=30 if len(names) > 3 else 0)
        ylabel = _with_unit(registry.display_name(column), _unit([column], rows))
        ax.set(xlabel=group_label, ylabel=ylabel, title=f"{column} by {group_label}{_suffix(k)}\n")
    return axes[0].figure


def plot_comparison(scores: pd.DataFrame, mean_ranks: pd.Series, metric: str):
    """Compare methods: per-case scores joined across methods (left), mean ranks (right, lower is better).

    Parameters
    ----------
    scores : pandas.DataFrame
        Index: case, columns: methods, values: ``metric`` per case.
    mean_ranks : pandas.Series
        Method → mean rank; methods are ordered by it in both panels.
    metric : str
        Name of the score, for the axis label.

    Returns
    -------
    matplotlib.figure.Figure
    """
    missing = [m for m in mean_ranks.index if m not in scores.columns]
    if missing:
        raise ValueError(f"scores has no column {missing[0]!r}; mean_ranks and scores must name the same methods")
    if scores.empty or mean_ranks.empty:
        raise ValueError("scores and mean_ranks must not be empty")
    methods = list(mean_ranks.sort_values(kind="stable").index)
    left, right = _figure((4.0 + 1.2 * len(methods), 4.6), 2, width_ratios=[3, 2])
    x = np.arange(len(methods))
    values = scores[methods].to_numpy(float)
    left.plot(x, values.T, color="0.6", alpha=0.4, lw=0.8)
    for i in x:
        left.scatter(np.full(len(values), i), values[:, i], s=14, zorder=3)
        left.plot([i - 0.25, i + 0.25], [np.nanmedian(values[:, i])] * 2, color="black", lw=2, zorder=4)
    rot = dict(rotation=30, ha="right") if len(methods) > 3 else {}
    left.set_xticks(x, methods, **rot)
    left.set(ylabel=metric, title=f"{metric} per case ({count(len(scores), 'case')}; bar = median)")
    bars = right.bar(x, mean_ranks[methods].to_numpy(float), color=STANDARD_COLOR, alpha=0.8)
    right.bar_label(bars, fmt="%.2f", fontsize="small")
    right.set_xticks(x, methods, **rot)
    right.set(ylabel="mean rank (lower is better)", title="mean rank")
    right.margins(y=0.12)
    return left.figure


def write_plots(per_component, per_case, out_dir, *, metrics=None, columns=None, size_bins=None):
    """Write the standard figures as PNGs (120 dpi) into ``out_dir`` (created) and return their paths.

    Files: ``metric_vs_volume_<m>.png`` for the first overlap metric present (dice, iou, nsd),
    ``detection_by_size.png`` (when ``detected`` exists), ``standard_vs_cc_<m>.png`` for each metric
    with both ``m`` and ``cc_m``, and ``case_distribution.png``. With several classes each gets its own
    files, suffixed ``_class<k>``. An empty (or None) table is skipped, so fewer paths come back.

    Parameters
    ----------
    per_component, per_case : pandas.DataFrame or None
        The tidy tables.
    out_dir : str or pathlib.Path
        Folder for the PNGs, created with its parents if needed.
    metrics : sequence of str, optional
        Base metric names to plot; by default every metric with a CC version (the registry's, and
        those of ``columns``) where present.
    columns : mapping of str to ccmetrics.metrics.registry.Column, optional
        Facts of metrics this process has not registered (a result folder's); the registry's otherwise.
    size_bins : sequence of float, optional
        Inner edges (ml) of the detection-by-size bins (:mod:`ccmetrics.analysis.sizes`).

    Returns
    -------
    list of pathlib.Path
        The files written, in the order above (class by class).

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from ccmetrics.analysis.plots import write_plots
    >>> per_component = pd.DataFrame({"case": ["a", "a", "b"], "class": 1, "component": [1, 2, 1],
    ...     "volume": [500, 20, 80], "volume_mm3": [500.0, 20.0, 80.0], "detected": [True, False, True],
    ...     "worst_distance": 300.0, "dice": [0.9, 0.0, 0.7]})
    >>> per_case = pd.DataFrame({"case": ["a", "b", "c"], "class": 1, "status": "ok",
    ...     "empty_gt": [False, False, True], "dice": [0.87, 0.7, 1.0], "cc_dice": [0.45, 0.7, 1.0]})
    >>> paths = write_plots(per_component, per_case, tempfile.mkdtemp())
    >>> [p.name for p in paths]  # doctest: +NORMALIZE_WHITESPACE
    ['metric_vs_volume_dice.png', 'detection_by_size.png', 'standard_vs_cc_dice.png',
     'case_distribution.png']
    """
    return write_figures(_plot_jobs(per_component, per_case, metrics, columns, size_bins), out_dir)


def _plot_jobs(per_component, per_case, metrics=None, columns=None, size_bins=None) -> list[FigureJob]:
    """The figures of :func:`write_plots`, as jobs of :func:`ccmetrics.analysis._drawing.write_figures`."""
    pcomp = per_component if per_component is not None else pd.DataFrame()
    pcase = per_case if per_case is not None else pd.DataFrame()
    names = list(metrics) if metrics is not None else _per_region_metrics(columns)
    classes = sorted({k for t in (pcomp, pcase) if CLASS in t.columns for k in t[CLASS].dropna().unique()})
    overlap = [m for m in _per_region_metrics(columns) if not registry.is_distance(m, columns)]
    jobs: list[FigureJob] = []
    for k in classes if len(classes) > 1 else [None]:
        sfx = "" if k is None else f"_class{k}"
        comp = pcomp if k is None or CLASS not in pcomp.columns else pcomp[pcomp[CLASS] == k]
        case = pcase if k is None or CLASS not in pcase.columns else pcase[pcase[CLASS] == k]
        kc = dict(class_value=k) if k is not None and CLASS in comp.columns else {}
        ks = dict(class_value=k) if k is not None and CLASS in case.columns else {}
        if len(comp):
            m = next((m for m in overlap if m in names and m in comp.columns), None)
            if m is not None:
                make = partial(plot_metric_vs_volume, comp, m, columns=columns, **kc)
                jobs.append((f"metric_vs_volume_{m}{sfx}.png", make))
            if DETECTED in comp.columns:
                jobs.append(
                    (f"detection_by_size{sfx}.png", partial(plot_detection_by_size, comp, bins=size_bins, **kc))
                )
        if len(case):
            for m in names:
                if m in case.columns and cc(m) in case.columns:
                    make = partial(plot_standard_vs_cc, case, m, columns=columns, **ks)
                    jobs.append((f"standard_vs_cc_{m}{sfx}.png", make))
            present = [m for m in names if m in case.columns or cc(m) in case.columns]
            if present:
                make = partial(plot_case_distribution, case, present, columns=columns, **ks)
                jobs.append((f"case_distribution{sfx}.png", make))
    return jobs


def write_result_plots(
    result, out_dir, *, size_bins=None, suv_bins=None, curves=None, calibration=None, swept=None, groups=None
):
    """Write the figures of a data set's result into ``out_dir`` (created) and return their paths: those of
    :func:`write_plots`, then the detection curves', the reliability diagrams', the thresholds' and the subgroups'
    when given (what :meth:`ccmetrics.results.DatasetResult.write` puts into ``plots/``).

    Parameters
    ----------
    result : ccmetrics.results.DatasetResult
        The tables, with their options (``metrics``) and column facts.
    out_dir : str or pathlib.Path
        The folder of the figures (``OUT_DIR/plots``).
    size_bins : sequence of float, optional
        Inner edges (ml) of the detection-by-size bins.
    suv_bins : sequence of float, optional
        Inner SUVmax edges of the detection-by-SUVmax bins (with the ``pet`` metric: the PET figures of
        :func:`ccmetrics.analysis.pet_plots.write_pet_plots`).
    curves : dict, optional
        Class to :class:`~ccmetrics.metrics.detection_curves.DetectionCurves`
        (:meth:`~ccmetrics.results.DatasetResult.detection_curves`): FROC, PR and ROC figures.
    calibration : dict, optional
        :func:`ccmetrics.analysis.summaries.calibration_summary`'s entries: their reliability diagrams.
    swept : tuple, optional
        :meth:`~ccmetrics.results.DatasetResult.threshold_summary`'s ``(means, best)``: the metrics by threshold.
    groups : tuple, optional
        ``(group_by columns, group_summary frame, case -> group)``: ``by_group_cc_<m>.png`` of the first CC metric.

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    from .detection_plots import _detection_jobs, _reliability_jobs, _threshold_jobs
    from .pet_plots import _pet_jobs

    jobs = _plot_jobs(result.per_component, result.per_case, result.options.get("metrics"), result.columns, size_bins)
    jobs += _pet_jobs(result, suv_bins)
    if curves:
        jobs += _detection_jobs(curves)
    if calibration:
        jobs += _reliability_jobs({c: e["lesion_reliability"] for c, e in calibration.items()})
    if swept is not None and len(swept[0]):
        jobs += _threshold_jobs(swept[0], swept[1], result.columns)
    if groups is not None and result.cc_metrics:
        m = result.cc_metrics[0]
        jobs.append(
            (f"by_group_{cc(m)}.png", partial(plot_by_group, result.per_case, groups[2], cc(m), " / ".join(groups[0])))
        )
    return write_figures(jobs, out_dir)


def __getattr__(name: str):  # names this module held before the registry: deprecated, computed from it
    return registry.legacy(__name__, name)
