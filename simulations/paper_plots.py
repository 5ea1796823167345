"""The figures of ``python -m simulations paper``: each notebook panel beside its corrected version.

``paper_fig2.png`` (3 rows) and ``paper_fig3.png`` (2 rows): the left column draws the notebook's
protocol as the notebooks plotted it (their steps, curves, legend and axis labels, their red step
markers), the right column the same panel with ccmetrics' definitions (:mod:`simulations.paper`). Drawn
on matplotlib's Agg canvas, never pyplot. :func:`write` runs the paper and writes its tables and figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .paper import CORRECTED, NOTEBOOK, TEXT, Steps, run_paper

__all__ = ["PANEL_SIZE", "draw", "write"]

#: the notebooks' figure size of one panel (inches)
PANEL_SIZE = (6.4, 3.2)
_GREY = dict(ls="--", alpha=0.9, color="grey", lw=1)


def _figure(rows: int):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(PANEL_SIZE[0] * 2, PANEL_SIZE[1] * rows + 0.4), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, 2, squeeze=False)


def _rows(table: pd.DataFrame, scenario: str, protocol: str, panel: str | None = None) -> pd.DataFrame:
    keep = (table["scenario"] == scenario) & (table["protocol"] == protocol)
    if panel is not None:
        keep &= table["panel"] == panel
    return table[keep].sort_values("step")


def _finish(ax, xlabel: str, title: str, ticks: Sequence[int] | None = None, marks: Sequence[int] = ()) -> None:
    for step in marks:
        ax.axvline(x=step, color="red", ls="--", lw=1)
    ax.grid(visible=True, which="both", ls="--", lw=0.5)
    ax.legend(loc="best", fontsize="small", frameon=True)
    ax.set_ylabel("Metric Score")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="medium")
    if ticks is not None:
        ax.set_xticks(list(ticks))


def _erosion_dice(ax, per_step, per_component, panel: str, scenario: str, protocol: str, title: str, marks) -> None:
    """Fig. 2 top and middle: Dice, CC-Dice, PQ and each component's Dice (grey, dashed)."""
    rows = _rows(per_step, scenario, protocol, panel)
    ax.plot(rows["step"], rows["dice"], label="Standard Dice", lw=2, marker="o")
    ax.plot(rows["step"], rows["cc_dice"], label="CC Dice", lw=2, marker="s")
    ax.plot(rows["step"], rows["pq"], label="Panoptic Quality", lw=2, marker="^")
    comps = _rows(per_component, scenario, protocol, panel)
    groups = list(comps.groupby("component"))
    for i, (_, part) in enumerate(groups):
        label = "CC-Components " if i == len(groups) - 1 else None
        ax.plot(part["step"], part["dice"], label=label, **_GREY)
    _finish(ax, "Erosion steps from Ground Truth", title, range(int(rows["step"].max()) + 1), marks)


def _lesion_dice(ax, per_step, protocol: str, shown: int | None, title: str, marks) -> None:
    """Fig. 2 bottom: Dice, CC-Dice and Lesion Dice under dilation."""
    rows = _rows(per_step, "dilate_three_balls", protocol)
    if shown is not None:
        rows = rows[rows["step"] < shown]
    ax.plot(rows["step"], rows["dice"], label="Standard Dice", lw=2, marker="x", ls="--")
    ax.plot(rows["step"], rows["cc_dice"], label="CC-Dice", lw=2, marker="^", alpha=0.8, ls="-.")
    label = "Lesion-Wise Dice" if protocol == NOTEBOOK else "Lesion-Wise Dice (BraTS-2023 glioma settings)"
    ax.plot(rows["step"], rows["lesion_dice"], label=label, lw=2, marker="s")
    xlabel = "Dilation steps from GT" if protocol == NOTEBOOK else "Dilations from GT (one per step)"
    _finish(ax, xlabel, title, marks=marks)


def _hd(ax, per_step, protocol: str, shown: int | None, title: str) -> None:
    """Fig. 3 top: global HD95 and the curve the notebook labels CC-HD95, eroding the largest or the smallest."""
    cc = "cc_hd" if protocol == NOTEBOOK else "cc_hd95"  # the notebook plots the CC mean of the plain HD
    styles: dict[str, dict[str, Any]] = {
        "largest": dict(marker="^", color="Gold", ls="--"),
        "smallest": dict(marker="x", color="Indigo", ls=":"),
    }
    last = 0
    for order, marker in (("largest", "^"), ("smallest", "x")):
        rows = _rows(per_step, f"erode_{order}", protocol, "top")
        if shown is not None:
            rows = rows[rows["step"] < shown]
        suffix = "" if protocol == NOTEBOOK else ", " + str(rows["target"].iloc[0]).split(" (")[0]
        ax.plot(rows["step"], rows["hd95"], label=f"Standard HD95 (erode {order}{suffix})", lw=2, marker=marker)
        last = max(last, int(rows["step"].max()))
    for order in ("largest", "smallest"):
        rows = _rows(per_step, f"erode_{order}", protocol, "top")
        if shown is not None:
            rows = rows[rows["step"] < shown]
        ax.plot(rows["step"], rows[cc], label=f"CC-HD95 {order} (erode {order})", **styles[order])
    if protocol == CORRECTED:
        from matplotlib.ticker import FixedLocator, ScalarFormatter

        ax.set_yscale("symlog", linthresh=10)  # plain tick labels: no mathtext (and no font look-ups)
        ax.yaxis.set_major_locator(FixedLocator([0, 2, 4, 6, 8, 10, 30, 100, 300, 1000]))
        ax.yaxis.set_major_formatter(ScalarFormatter())
    _finish(ax, "Erosion steps from Ground Truth", title, range(last + 1))


def _nsd(ax, per_step, protocol: str, shown: int | None, title: str) -> None:
    """Fig. 3 bottom: global and CC surface Dice shifting the largest or the smallest ball."""
    styles = {
        ("largest", "nsd"): dict(lw=2, marker="^", ls="-"),
        ("largest", "cc_nsd"): dict(lw=2, marker="x", color="Indigo", ls=":"),
        ("smallest", "nsd"): dict(lw=2, marker="x", ls="-."),
        ("smallest", "cc_nsd"): dict(lw=2, marker="^", color="Gold", ls="--"),
    }
    last = 0
    for order in ("largest", "smallest"):
        rows = _rows(per_step, f"shift_{order}", protocol)
        if shown is not None:
            rows = rows[rows["step"] < shown]
        last = max(last, int(rows["step"].max()))
        for column, name in (("nsd", "Standard Surface Dice"), ("cc_nsd", "CC-Standard Surface Dice")):
            ax.plot(rows["step"], rows[column], label=f"{name} (shift {order})", **styles[(order, column)])
    _finish(ax, "Shift steps from Ground Truth", title, range(last + 1))


def draw(per_step: pd.DataFrame, per_component: pd.DataFrame, steps: Steps, out: Path) -> list[Path]:
    """Draw ``paper_fig2.png`` and ``paper_fig3.png`` into ``out`` from :func:`simulations.paper.run_paper`'s tables."""
    full = steps.scale == 1
    voxels = steps.shift_voxels
    fig, axes = _figure(3)
    title = "Fig. 2 top, notebook protocol:\nComparison of Panoptic Quality, Dice and CC-Dice"
    marks = (3, 7, 12, 14) if full else ()  # the notebook's red lines
    _erosion_dice(axes[0, 0], per_step, per_component, "top", "erode_all", NOTEBOOK, title, marks)
    title = (
        "Fig. 2 top, corrected (PQ on 26-connected components):\nthe same curves; the CC distances differ (not drawn)"
    )
    _erosion_dice(axes[0, 1], per_step, per_component, "top", "erode_all", CORRECTED, title, ())
    axes[1, 0].axis("off")
    axes[1, 0].text(
        0.5, 0.5,
        "Fig. 2 middle (erode only the smallest ball)\nhas no notebook in the authors' paper_asset/:\n"
        "the panel on the right is our reading of the text\n(simulations.figures.fig2, 3x3x3 cube erosion)",
        ha="center", va="center", fontsize="medium",
    )  # fmt: skip
    title = "Fig. 2 middle, our reading of the text:\nerode only the smallest ball"
    _erosion_dice(axes[1, 1], per_step, per_component, "middle", "erode_smallest", TEXT, title, ())
    title = "Fig. 2 bottom, notebook protocol: step i = i + 1 dilations,\n"
    title += "BraTS code without lesion dilation or volume threshold"
    _lesion_dice(axes[2, 0], per_step, NOTEBOOK, steps.dilate_shown, title, (3, 7) if full else ())
    title = "Fig. 2 bottom, corrected: one dilation per step,\nBraTS-2023 glioma Lesion Dice (3 dilations, > 50 voxels)"
    _lesion_dice(axes[2, 1], per_step, CORRECTED, None, title, ())
    fig.suptitle("CC-Metrics paper, Fig. 2: the authors' notebooks (left) and ccmetrics' definitions (right)")
    out = Path(out)
    paths = [out / "paper_fig2.png", out / "paper_fig3.png"]
    fig.savefig(paths[0], dpi=100)

    fig, axes = _figure(2)
    title = "Fig. 3 top, notebook protocol: 'largest' is the r 50 ball;\nthe curves labelled CC-HD95 are CC-HD"
    _hd(axes[0, 0], per_step, NOTEBOOK, steps.erode_one_shown, title)
    title = "Fig. 3 top, corrected: the r 100 ball as largest, CC-HD95,\n"
    title += "a vanished ball counts the image diagonal (symlog axis)"
    _hd(axes[0, 1], per_step, CORRECTED, None, title)
    title = f"Fig. 3 bottom, notebook protocol: np.roll by {voxels} voxels per step\n(wraps around the image border)"
    _nsd(axes[1, 0], per_step, NOTEBOOK, steps.shift_shown, title)
    title = f"Fig. 3 bottom, corrected: shift by {voxels} voxels per step,\nno wrap-around, every step"
    _nsd(axes[1, 1], per_step, CORRECTED, None, title)
    fig.suptitle("CC-Metrics paper, Fig. 3: the authors' notebooks (left) and ccmetrics' definitions (right)")
    fig.savefig(paths[1], dpi=100)
    return paths


def write(out: Path, *, quick: bool = False, workers: int = 1, progress: bool = True) -> list[Path]:
    """Run :func:`simulations.paper.run_paper` and write ``paper_per_step.csv``, ``paper_per_component.csv``,
    ``paper_fig2.png`` and ``paper_fig3.png`` into ``out``; return the paths."""
    steps = Steps.quick() if quick else Steps()
    per_step, per_component = run_paper(steps, workers=workers, progress=progress)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "paper_per_step.csv", out / "paper_per_component.csv"]
    per_step.to_csv(paths[0], index=False)
    per_component.to_csv(paths[1], index=False)
    return paths + draw(per_step, per_component, steps, out)
