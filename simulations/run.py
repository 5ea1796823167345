"""Scenarios and their runner: phantom(s) × degradation × steps × metrics → tidy tables.

A :class:`Scenario` names a degradation of :mod:`simulations.degrade`, its steps and its target. The
runner degrades each case's GT at every step and evaluates the prediction with
:func:`ccmetrics.evaluate` (standard and CC metrics, every component's own value, PQ) and, when asked,
:func:`ccmetrics.lesion_dice`. Results are two tidy tables (:class:`SimulationResult`): ``per_step``
(one row per scenario, case and step) and ``per_component`` (one row per GT component as well).

Cost per case: the GT is labelled once (:class:`~simulations.degrade.Components`, shared by all
steps) and prepared once per scenario (:class:`ccmetrics.GroundTruth`: sites, surfaces, components,
on a box holding the GT and every prediction of the scenario, padded by a few voxels); each step
degrades the targeted components on their bounding boxes and evaluates the prediction in that box,
with the worst distance of the whole image. Cropping changes no value: the Voronoi regions, edges, components
and distances inside the box are those of the whole image (a region's voxels keep their nearest site; voxels on the box
border are on the image border or background), which the tests check against the uncropped
evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ccmetrics import GroundTruth, evaluate, lesion_dice
from ccmetrics.metrics import registry
from ccmetrics.metrics.aggregation import image_diagonal

from .degrade import DEGRADATIONS, Components
from .phantoms import Case

__all__ = ["Scenario", "SimulationResult", "evaluate_step", "run", "run_case", "scenario_box", "summarize"]

_CROP_MARGIN = 5  # voxels around GT ∪ prediction: covers Lesion Dice's dilations (3) plus one


@dataclass(frozen=True)
class Scenario:
    """One degradation study.

    Parameters
    ----------
    name : str
    degradation : str
        ``erode``, ``dilate``, ``shift``, ``drop`` or ``add_false_positives``.
    steps : sequence of int
        The x axis: iterations (``erode``/``dilate``), voxels (``shift``), or, with
        ``target="smallest"``/``"largest"``, the number n of components affected.
    target : "all", int, ("smallest", n), ("largest", n), "smallest" or "largest"
        Which components are degraded; ``"smallest"``/``"largest"`` make the step the count n (the n
        smallest / largest), each degraded by ``magnitude`` (erode, dilate, shift).
    magnitude : int
        Iterations or voxels for count steps.
    metrics : sequence of str
        For :func:`ccmetrics.evaluate`: ``dice``, ``iou``, ``nsd``, ``hd``, ``hd95``, ``assd``, ``pq``;
        and ``lesion_dice`` (with ``lesion_dice_options``, BraTS glioma defaults otherwise).
    options : dict
        Extra arguments of the degradation (``axis`` for shift).
    lesion_dice_options : dict
        ``dilation`` and ``min_volume`` of :func:`ccmetrics.lesion_dice` (its own defaults, BraTS glioma's,
        otherwise).
    nsd_tolerance : float
        mm (or voxels without spacing).
    """

    name: str
    degradation: str
    steps: Sequence[int]
    target: Any = "all"
    magnitude: int = 1
    metrics: Sequence[str] = registry.DEFAULT_METRICS
    options: dict[str, Any] = field(default_factory=dict)
    lesion_dice_options: dict[str, Any] = field(default_factory=dict)
    nsd_tolerance: float = 1.0

    def __post_init__(self):
        if self.degradation not in DEGRADATIONS:
            raise ValueError(f"unknown degradation {self.degradation!r}; choose one of {sorted(DEGRADATIONS)}")
        if self.degradation in ("drop", "add_false_positives") and self.target not in ("smallest", "largest"):
            if any(step > 1 for step in self.steps):  # steps beyond 1 would all give the same prediction
                raise ValueError(
                    f"a {self.degradation} scenario counts components with its steps: use target "
                    f"'smallest' or 'largest' (a fixed target {self.target!r} only has steps 0 and 1)"
                )

    @property
    def counts_components(self) -> bool:
        """True when the step is the number of components affected."""
        return self.target in ("smallest", "largest")

    def prediction(self, case: Case, step: int, components: Components, seed: int = 0) -> np.ndarray:
        """The degraded prediction of ``case`` at ``step``."""
        fn = DEGRADATIONS[self.degradation]
        kwargs = dict(self.options, components=components)
        if self.degradation == "add_false_positives":
            kwargs.update(seed=seed, spacing=case.spacing)
        if self.counts_components and self.degradation in ("erode", "dilate", "shift"):
            return fn(case.gt, self.magnitude, (self.target, step), **kwargs)
        return fn(case.gt, step, self.target, **kwargs)


@dataclass
class SimulationResult:
    """Tidy results: ``per_step`` (scenario, case, step, n_components, global ``m``, CC ``cc_m``, PQ,
    Lesion Dice) and ``per_component`` (scenario, case, step, component, volume, each metric)."""

    per_step: pd.DataFrame
    per_component: pd.DataFrame

    @staticmethod
    def concat(results: Sequence[SimulationResult]) -> SimulationResult:
        return SimulationResult(
            pd.concat([r.per_step for r in results], ignore_index=True),
            pd.concat([r.per_component for r in results], ignore_index=True),
        )


def _crop_box(gt: np.ndarray, pred: np.ndarray) -> tuple[slice, ...]:
    both = gt | pred
    if not both.any():
        return tuple(slice(0, 1) for _ in gt.shape)
    box = []
    for axis in range(gt.ndim):
        other = tuple(a for a in range(gt.ndim) if a != axis)
        idx = np.flatnonzero(both.any(axis=other))
        box.append(slice(max(int(idx[0]) - _CROP_MARGIN, 0), min(int(idx[-1]) + 1 + _CROP_MARGIN, gt.shape[axis])))
    return tuple(box)


def scenario_box(scenario: Scenario, components: Components) -> tuple[slice, ...]:
    """One box holding the GT and every prediction of ``scenario`` (with the crop margin).

    The GT's bounding box, grown by the largest dilation or shift of the scenario; the whole image
    for false positives, which may fall anywhere in a region.
    """
    shape = np.array(components.sites.shape)
    if scenario.degradation == "add_false_positives" or components.n == 0:
        return tuple(slice(0, int(n)) for n in shape)
    grow = 0
    if scenario.degradation in ("dilate", "shift"):
        grow = scenario.magnitude if scenario.counts_components else max(scenario.steps)
    lo = np.maximum(components.lo.min(axis=0) - grow - _CROP_MARGIN, 0)
    hi = np.minimum(components.hi.max(axis=0) + grow + _CROP_MARGIN, shape)
    return tuple(slice(int(a), int(b)) for a, b in zip(lo, hi))


def evaluate_step(
    scenario: Scenario,
    case: Case,
    step: int,
    pred: np.ndarray,
    crop: bool = True,
    prepared: tuple[tuple[slice, ...], GroundTruth] | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Evaluate one prediction of ``case``: a ``per_step`` row and its ``per_component`` rows.

    ``prepared``: a box holding every prediction of the scenario and the GT cropped to it as a
    :class:`ccmetrics.GroundTruth` (labelled once for all steps); a prediction reaching outside the
    box is evaluated on its own box instead.
    """
    gt = case.gt
    if prepared is not None and int(np.count_nonzero(pred[prepared[0]])) == int(np.count_nonzero(pred)):
        box, gt_crop = prepared
    else:
        box = _crop_box(gt, pred) if crop else tuple(slice(None) for _ in gt.shape)
        gt_crop = gt[box]
    worst = image_diagonal(gt.shape, case.spacing)
    names = [m for m in scenario.metrics if m != "lesion_dice"] or ["dice"]  # evaluate gives the counts too
    result = evaluate(
        gt=gt_crop,
        pred=pred[box],
        metrics=names,
        spacing=case.spacing,
        worst_distance=worst,
        nsd_tolerance=scenario.nsd_tolerance,
    )
    row: dict[str, Any] = {
        "scenario": scenario.name,
        "case": case.case,
        "step": int(step),
        "n_components": result.n_components,
    }
    row.update(result.case_row())
    if "lesion_dice" in scenario.metrics:
        ld = lesion_dice(gt=gt[box], pred=pred[box], spacing=case.spacing, **scenario.lesion_dice_options)
        row.update(lesion_dice=ld.dice, lesion_hd95=ld.hd95)
    frame = result.to_frame(case.case)
    frame.insert(0, "scenario", scenario.name)
    frame.insert(2, "step", int(step))
    return row, frame.drop(columns=["class"])


def run_case(scenario: Scenario, case: Case, crop: bool = True, seed: int = 0) -> SimulationResult:
    """Every step of ``scenario`` on one case (the GT labelled once)."""
    components = Components.of(case.gt)
    prepared = None
    if crop:
        box = scenario_box(scenario, components)
        prepared = (box, GroundTruth(case.gt[box]))
    rows, frames = [], []
    for step in scenario.steps:
        pred = scenario.prediction(case, int(step), components, seed=seed)
        row, frame = evaluate_step(scenario, case, int(step), pred, crop, prepared)
        rows.append(row)
        frames.append(frame)
    return SimulationResult(pd.DataFrame(rows), pd.concat(frames, ignore_index=True))


def run(
    scenarios: Sequence[Scenario], cases: Sequence[Case], *, workers: int = 1, progress: bool = True, seed: int = 0
) -> SimulationResult:
    """Run every scenario on every case → one :class:`~simulations.run.SimulationResult` (rows in scenario, case order).

    ``workers > 1`` runs (scenario, case) pairs in worker processes; the tables are the same.
    """
    from tqdm.auto import tqdm

    tasks = [(s, c) for s in scenarios for c in cases]
    bar = tqdm(total=len(tasks), unit="case", desc="simulating", disable=not progress)
    try:
        if workers > 1 and len(tasks) > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                futures = [pool.submit(run_case, s, c, True, seed) for s, c in tasks]
                results = []
                for f in futures:  # in task order: identical tables whatever the worker count
                    results.append(f.result())
                    bar.update()
        else:
            results = []
            for s, c in tasks:
                results.append(run_case(s, c, True, seed))
                bar.update()
    finally:
        bar.close()
    return SimulationResult.concat(results)


def summarize(
    per_step: pd.DataFrame, columns: Sequence[str], *, subset: str = "at_least", max_step: int | None = None
) -> pd.DataFrame:
    """Median and 25th/75th percentiles over cases, per scenario, step and column.

    ``subset="at_least"``: at step n, only the cases with at least n components (n + 1 for ``drop``
    scenarios, named ``drop*``, so that one component is left), as in the paper's Fig. 4.
    ``subset="constant"``: the same cases at every step, those with enough components for the largest
    step (``max_step``, default the largest step in the table), as in Fig. 5. ``subset="all"``: every case.
    Distances are averaged as they are in the table (CC values already count a missed lesion as the
    worst distance; a global distance of an empty prediction is replaced by the case's worst distance).
    """
    from ccmetrics.metrics.aggregation import cc_values

    out = []
    for scenario, table in per_step.groupby("scenario", sort=False):
        extra = 1 if str(scenario).startswith("drop") else 0
        top = int(table["step"].max()) if max_step is None else max_step
        n0 = table[table["step"] == table["step"].min()].set_index("case")["n_components"]
        step_key: Any  # a pandas group key
        for step_key, rows in table.groupby("step", sort=True):
            step = int(step_key)
            if subset == "at_least":
                keep = n0[n0 >= step + extra].index
            elif subset == "constant":
                keep = n0[n0 >= top + extra].index
            elif subset == "all":
                keep = n0.index
            else:
                raise ValueError(f"subset must be 'at_least', 'constant' or 'all', got {subset!r}")
            rows = rows[rows["case"].isin(keep)]
            for column in columns:
                values = cc_values(rows[column], column, rows["worst_distance"])
                values = values[~np.isnan(values)]
                q = np.percentile(values, [25, 50, 75]) if len(values) else [np.nan] * 3
                out.append(
                    {
                        "scenario": scenario,
                        "step": step,
                        "metric": column,
                        "n_cases": len(values),
                        "q25": q[0],
                        "median": q[1],
                        "q75": q[2],
                    }
                )
    return pd.DataFrame(out)
