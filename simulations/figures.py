"""The CC-Metrics paper's simulation figures: run the scenarios, write each figure as CSV and PNG.

* :func:`fig2`: erode all components; erode only the smallest; dilate three equal balls (predictions
  merge); the Lesion Dice pitfall (a large lesion's over-segmentation reaching a small lesion);
* :func:`fig3`: HD95 and CC-HD95 when eroding the largest vs the smallest component; NSD and CC-NSD when
  shifting them;
* :func:`fig4` / :func:`fig5`: on a cohort, drop, over-segment (dilate), under-segment (erode) or add a
  false positive next to n components, the n smallest vs the n largest, n = 1..10; Dice, NSD and HD95,
  standard vs CC; median and 25th/75th percentiles over the cases with at least n (n + 1 when
  dropping) components (Fig. 4), or over a constant subset of cases (Fig. 5).

Each function returns the paths it wrote. Figures use matplotlib's Agg canvas, never pyplot.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ccmetrics import schema
from ccmetrics.metrics import registry

from .phantoms import Case, cohort, lesion_dice_pitfall, paper_spheres, three_balls
from .run import Scenario, SimulationResult, run, summarize

__all__ = ["cohort_scenarios", "default_cohort", "fig2", "fig3", "fig4", "fig5", "run_cohort"]

STANDARD, CC, OTHER = "tab:blue", "tab:orange", "tab:green"
#: the metrics of the cohort figures (Fig. 4 and 5), each with its CC version
COHORT_METRICS = ("dice", "nsd", "hd95")


def _name(metric: str) -> str:
    """A metric's name on the figures: the registry's display name, with its unit (the phantoms are in mm).

    >>> _name("hd95"), _name("cc_nsd")
    ('HD95 (mm)', 'CC-NSD')
    """
    unit = registry.unit_label(metric)
    return registry.display_name(metric) + (f" ({unit})" if unit else "")


def _figure(rows: int, cols: int, size=(4.2, 3.4)):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(size[0] * cols, size[1] * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _save(fig, result: SimulationResult, out: Path, name: str, extra: dict[str, pd.DataFrame] | None = None):
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}_per_step.csv", out / f"{name}_per_component.csv", out / f"{name}.png"]
    result.per_step.to_csv(paths[0], index=False)
    result.per_component.to_csv(paths[1], index=False)
    for key, table in (extra or {}).items():
        paths.append(out / f"{name}_{key}.csv")
        table.to_csv(paths[-1], index=False)
    fig.savefig(paths[2], dpi=110)
    return paths


def _curve(ax, table: pd.DataFrame, column: str, **style):
    ax.plot(table["step"], table[column], marker="o", ms=3, **style)


def _component_curves(ax, result: SimulationResult, scenario: str, metric: str, components=None):
    comp = result.per_component[result.per_component["scenario"] == scenario]
    colors = ("tab:gray", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
    for i, (c, rows) in enumerate(comp.groupby("component")):
        if components is None or c in components:
            volume = int(rows["volume"].iloc[0])
            ax.plot(
                rows["step"],
                rows[metric],
                ls="--",
                lw=1,
                color=colors[i % len(colors)],
                label=f"{metric}, component {c} ({volume} vx)",
            )


def fig2(out: Path, *, quick: bool = False, workers: int = 1, progress: bool = True) -> list[Path]:
    """Fig. 2: Dice, CC-Dice, PQ and Lesion Dice under erosion and dilation of the paper's phantoms."""
    spheres = paper_spheres(0.25 if quick else 1.0)
    steps = list(range(0, 11 if quick else 21))
    metrics = ("dice", "pq")
    erode_all = Scenario("erode_all", "erode", steps, "all", metrics=metrics)
    erode_small = Scenario("erode_smallest", "erode", steps, ("smallest", 1), metrics=metrics)
    dilate_balls = Scenario(
        "dilate_three_balls",
        "dilate",
        list(range(0, 11)),
        "all",
        metrics=("dice", "pq", "lesion_dice"),
        lesion_dice_options={"dilation": 1, "min_volume": 2.0},
    )
    pitfall = Scenario(
        "lesion_dice_pitfall",
        "dilate",
        list(range(0, 9)),
        ("largest", 1),
        metrics=("dice", "lesion_dice"),
        lesion_dice_options={"dilation": 1, "min_volume": 2.0},
    )
    result = SimulationResult.concat(
        [
            run([erode_all, erode_small], [spheres], workers=workers, progress=progress),
            run([dilate_balls], [three_balls(10 if quick else 20)], progress=False),
            run([pitfall], [lesion_dice_pitfall()], progress=False),
        ]
    )
    table = result.per_step
    fig, axes = _figure(2, 2)
    titles = {
        "erode_all": "erode all components",
        "erode_smallest": "erode only the smallest component",
        "dilate_three_balls": "dilate three equal balls (merge at steps 3 and 7)",
        "lesion_dice_pitfall": "dilate the large lesion next to a small one",
    }
    for ax, name in zip(axes.flat, titles):
        rows = table[table["scenario"] == name]
        for column, color in (("dice", STANDARD), (schema.cc("dice"), CC)):
            _curve(ax, rows, column, color=color, label=registry.display_name(column))
        if "pq" in rows and rows["pq"].notna().any():
            _curve(ax, rows, "pq", color=OTHER, label=registry.display_name("pq"))
        if "lesion_dice" in rows and rows["lesion_dice"].notna().any():
            label = f"{registry.display_name('lesion_dice')} (BraTS, dilation 1)"
            _curve(ax, rows, "lesion_dice", color="tab:purple", label=label)
        if name in ("erode_all", "erode_smallest"):
            _component_curves(ax, result, name, "dice")
        ax.set(title=titles[name], xlabel="step (voxels)", ylabel="score", ylim=(-0.03, 1.03))
        ax.legend(fontsize="x-small")
    fig.suptitle(f"Fig. 2: {spheres.case} ({'x'.join(map(str, spheres.gt.shape))}), three balls, Lesion Dice pitfall")
    return _save(fig, result, Path(out), "fig2")


def fig3(out: Path, *, quick: bool = False, workers: int = 1, progress: bool = True) -> list[Path]:
    """Fig. 3: HD95 / CC-HD95 eroding the largest vs the smallest component; NSD / CC-NSD shifting them."""
    spheres = paper_spheres(0.25 if quick else 1.0)
    steps = list(range(0, 6 if quick else 11))
    scenarios = [
        Scenario(f"{kind}_{order}", kind, steps, (order, 1), metrics=metric)
        for kind, metric in (("erode", ("hd95",)), ("shift", ("nsd",)))
        for order in ("largest", "smallest")
    ]
    result = run(scenarios, [spheres], workers=workers, progress=progress)
    table = result.per_step
    fig, axes = _figure(1, 2)
    for ax, kind, metric in ((axes[0, 0], "erode", "hd95"), (axes[0, 1], "shift", "nsd")):
        for order, ls in (("largest", "-"), ("smallest", "--")):
            rows = table[table["scenario"] == f"{kind}_{order}"]
            _curve(ax, rows, metric, color=STANDARD, ls=ls, label=f"{registry.display_name(metric)}, {order} degraded")
            cc = schema.cc(metric)
            _curve(ax, rows, cc, color=CC, ls=ls, label=f"{registry.display_name(cc)}, {order} degraded")
        ax.set(title=f"{kind} the largest vs the smallest component", xlabel="step (voxels)", ylabel=_name(metric))
        ax.legend(fontsize="x-small")
    fig.suptitle("Fig. 3: a global metric depends on which lesion is degraded; its CC version does not")
    return _save(fig, result, Path(out), "fig3")


def cohort_scenarios(max_n: int = 10) -> list[Scenario]:
    """The Fig. 4/5 scenarios: drop / over-segment / under-segment / add a false positive, n smallest or largest."""
    steps = list(range(1, max_n + 1))
    kinds = (
        ("drop", "drop", 1),
        ("oversegment", "dilate", 2),
        ("undersegment", "erode", 1),
        ("false_positive", "add_false_positives", 1),
    )
    return [
        Scenario(
            f"{name}_{order}",
            kind,
            steps,
            order,
            magnitude=magnitude,
            metrics=COHORT_METRICS,
            nsd_tolerance=2.0,
        )
        for name, kind, magnitude in kinds
        for order in ("smallest", "largest")
    ]


def run_cohort(
    cases: Sequence[Case], *, max_n: int = 10, workers: int = 1, progress: bool = True, seed: int = 0
) -> SimulationResult:
    """Every Fig. 4/5 scenario on ``cases``."""
    return run(cohort_scenarios(max_n), cases, workers=workers, progress=progress, seed=seed)


def _cohort_figure(result: SimulationResult, out: Path, name: str, subset: str) -> list[Path]:
    columns = [c for m in COHORT_METRICS for c in (m, schema.cc(m))]
    summary = summarize(result.per_step, columns, subset=subset)
    kinds = ("drop", "oversegment", "undersegment", "false_positive")
    fig, axes = _figure(len(kinds), 3, size=(3.6, 2.7))
    for r, kind in enumerate(kinds):
        for c, metric in enumerate(COHORT_METRICS):
            ax = axes[r, c]
            for order, ls in (("smallest", "-"), ("largest", "--")):
                for column, color in ((metric, STANDARD), (schema.cc(metric), CC)):
                    rows = summary[(summary["scenario"] == f"{kind}_{order}") & (summary["metric"] == column)]
                    label = f"{_name(column)}, n {order}"
                    ax.plot(rows["step"], rows["median"], color=color, ls=ls, marker="o", ms=2.5, label=label)
                    ax.fill_between(rows["step"], rows["q25"], rows["q75"], color=color, alpha=0.12)
            ax.set(title=f"{kind.replace('_', ' ')}: {_name(metric)}", xlabel="n components")
            if r == 0 and c == 0:
                ax.legend(fontsize="xx-small")
    n_cases = result.per_step["case"].nunique()
    rule = (
        "cases with at least n components (n + 1 when dropping)"
        if subset == "at_least"
        else f"a constant subset: the cases with enough components for n = {int(result.per_step['step'].max())}"
    )
    fig.suptitle(f"Fig. {name[3:]}: median and 25th-75th percentile over {rule} (cohort of {n_cases} cases)")
    return _save(fig, result, Path(out), name, {"summary": summary})


def _cohort(
    out: Path,
    *,
    name: str,
    subset: str,
    cases: Sequence[Case] | None,
    quick: bool,
    workers: int,
    progress: bool,
    result: SimulationResult | None,
) -> list[Path]:
    """Fig. 4 or 5: run the cohort scenarios unless ``result`` is given, then draw them over ``subset``."""
    if result is None:
        cases = cases if cases is not None else default_cohort(quick)
        result = run_cohort(cases, max_n=5 if quick else 10, workers=workers, progress=progress)
    return _cohort_figure(result, Path(out), name, subset)


def fig4(
    out: Path,
    *,
    cases: Sequence[Case] | None = None,
    quick: bool = False,
    workers: int = 1,
    progress: bool = True,
    result: SimulationResult | None = None,
) -> list[Path]:
    """Fig. 4 on a cohort (default :func:`~simulations.phantoms.cohort`; ``quick``: 4 small cases)."""
    return _cohort(
        out, name="fig4", subset="at_least", cases=cases, quick=quick, workers=workers, progress=progress, result=result
    )


def fig5(
    out: Path,
    *,
    cases: Sequence[Case] | None = None,
    quick: bool = False,
    workers: int = 1,
    progress: bool = True,
    result: SimulationResult | None = None,
) -> list[Path]:
    """Fig. 5: as Fig. 4 over a constant subset of cases."""
    return _cohort(
        out, name="fig5", subset="constant", cases=cases, quick=quick, workers=workers, progress=progress, result=result
    )


def default_cohort(quick: bool = False) -> list[Case]:
    """The default cohort: 60 cases of 160×160×120 at 2×2×3 mm (``quick``: 4 cases of 64×64×48)."""
    if quick:
        return cohort(4, seed=0, shape=(64, 64, 48))
    return cohort(60, seed=0)
