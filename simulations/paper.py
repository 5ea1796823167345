"""The paper's toy figures number for number: the authors' protocol beside the protocol of the text.

The CC-Metrics paper's Fig. 2 and 3 were made by four notebooks in the authors' repository
(``alexanderjaus/CC-Metrics``, folder ``paper_asset/``). They differ from the paper's text in ways a
reader cannot guess; this module runs every panel both ways, on the same predictions:

``notebook``
    What the notebooks ran. Components numbered by ``cc3d.connected_components`` on the array as
    nibabel reads it (Fortran order: 1 = the r 50 ball, 2 = the r 100 ball, 3 = the r 20 ball);
    MONAI's metrics on each masked Voronoi region, averaged raw: a region without prediction gives
    HD and ASD ``inf`` (so CC-HD and CC-ASD become ``inf``) and HD95 NaN, which MONAI's mean reduction
    turns into 0 (so CC-HD95 *falls* when a lesion vanishes): the explicit rule of
    :data:`MONAI_EMPTY_REGION`, checked against MONAI itself by the tests.
``corrected``
    ccmetrics' definitions (:func:`ccmetrics.evaluate`): a vanished lesion's distance counts as the
    worst distance (the image diagonal); HD95 where the paper says HD95; the r 100 ball as "largest";
    the other corrections of :data:`DIFFERENCES`.
``text``
    Fig. 2 (middle), erode only the smallest ball, has no notebook: the panel of
    :func:`simulations.figures.fig2` (our reading of the text: cube erosion, Dice, CC-Dice, PQ), kept as it is.

The panels (steps as in the notebooks; :class:`Steps`):

* Fig. 2 top, ``erode_all``: the whole prediction eroded with the 3×3×3 cube, 20 steps; Dice, HD, HD95,
  ASD, NSD and PQ (``scipy.ndimage.label``'s 6-connectivity, IoU > 0.5), each with its CC version;
* Fig. 2 middle, ``erode_smallest``: no notebook (``text``);
* Fig. 2 bottom, ``dilate_three_balls``: three balls of radius 30 in 250³ (:func:`lesion_dice_balls`),
  dilated twice before the first step and once per step after it; Dice, CC-Dice and the BraTS-2023
  Lesion Dice as the notebook called it (no lesion dilation, no volume threshold);
* Fig. 3 top, ``erode_smallest`` / ``erode_largest``: one ball eroded per step with scipy's default
  structure (the 6-connected cross), 25 steps (the figure shows 20); the notebook's "largest" is the
  r 50 ball, its curves labelled CC-HD95 are the CC mean of the plain HD;
* Fig. 3 bottom, ``shift_smallest`` / ``shift_largest``: one ball moved by ``np.roll`` of 4 voxels along
  axis 1 per step, found again each step as the component of its voxel count (the notebook's loop
  stops when there is none: the r 20 ball wraps around the image border at step 13); 25 steps, the
  figure shows 13.

Cost: each phantom is labelled and prepared once per process (:class:`Reference`: a
:class:`ccmetrics.GroundTruth` on a box holding GT and prediction, reused by every step of every panel);
each step changes the degraded ball in its bounding box only (an erosion is a threshold of one distance
transform), and one :func:`ccmetrics.evaluate` gives both views; the shifts of the r 100 ball (4 million voxels
outside the GT each step) and the dilations read the region of those voxels from one kept Voronoi partition
(:meth:`ccmetrics.GroundTruth.region_map`); the notebook's 6-connected PQ labels the GT once. The eight tasks of
:data:`TASKS` run in ``workers`` processes: the whole run took 101 s in one process on a 2-core machine, 69 s
with two. The
drawing, and :func:`simulations.paper_plots.write` that runs it all, in :mod:`simulations.paper_plots`
(``python -m simulations paper --out DIR``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import ndimage

from ccmetrics.engine.surface import GroupedDistances, SurfaceReduction
from ccmetrics.metrics.registry import Metric

from .phantoms import PAPER_SPHERES, Case, draw_ball, paper_spheres

__all__ = [
    "ASD",
    "DIFFERENCES",
    "LESION_DICE_BALLS",
    "MONAI_EMPTY_REGION",
    "PANELS",
    "TASKS",
    "Reference",
    "RollState",
    "Scores",
    "Steps",
    "erode_steps",
    "lesion_dice_balls",
    "monai_cc_mean",
    "protocol_labels",
    "reference",
    "roll_steps",
    "run_paper",
    "run_task",
    "score",
    "shift_clipped",
    "views",
]

#: the protocols: the notebooks', ccmetrics' definitions, our reading of the text (Fig. 2 middle)
NOTEBOOK, CORRECTED, TEXT = "notebook", "corrected", "text"
#: the base metrics of every panel on the 500³ phantom (with :data:`ASD`), each with its CC version
SURFACE_METRICS = ("dice", "hd", "hd95", "nsd")
#: the per-region value MONAI gives a Voronoi region that holds GT but no prediction, after the mean
#: reduction the notebooks call (``metric.aggregate()``): Dice and NSD 0, HD and ASD ``inf``, HD95 NaN
#: reduced to 0. ccmetrics keeps every such distance ``inf`` and counts it as the worst distance.
MONAI_EMPTY_REGION = {"dice": 0.0, "nsd": 0.0, "hd": math.inf, "hd95": 0.0, "asd": math.inf}
#: the Lesion Dice phantom of the notebook (Fig. 2 bottom): (centre, radius) of three balls in 250³
LESION_DICE_BALLS = (((75, 75, 75), 30), ((145, 75, 75), 30), ((75, 160, 75), 30))
#: the panels: (figure, panel, scenario) -> what it degrades, in the notebook's words
PANELS = {
    ("2", "top", "erode_all"): "every ball eroded with the 3x3x3 cube, one iteration per step",
    ("2", "middle", "erode_smallest"): "the r 20 ball eroded with the 3x3x3 cube (no notebook)",
    ("2", "bottom", "dilate_three_balls"): "three r 30 balls dilated with the 3x3x3 cube",
    ("3", "top", "erode_smallest"): "the r 20 ball eroded with the 6-connected cross",
    ("3", "top", "erode_largest"): "notebook: the r 50 ball; corrected: the r 100 ball (cross)",
    ("3", "bottom", "shift_smallest"): "the r 20 ball moved 4 voxels along axis 1 per step",
    ("3", "bottom", "shift_largest"): "the r 100 ball moved 4 voxels along axis 1 per step",
}
#: where the notebooks part ways with the paper's text, one line each (the README lists them)
DIFFERENCES = (
    "Component numbers are cc3d's on the Fortran-ordered array nibabel returns (1 = r 50, 2 = r 100, "
    "3 = r 20), not raster order; exact Voronoi ties go to the lowest of these numbers.",
    "A lesion that vanishes makes MONAI's HD and ASD inf in its region and its HD95 NaN, reduced to 0: "
    "the notebooks' CC-HD becomes inf and their CC-HD95 falls; ccmetrics counts the image diagonal.",
    "Fig. 2 top: PQ labels components with scipy's default 6-connectivity (ccmetrics: 26); on these "
    "balls both give the same PQ.",
    "Fig. 2 middle (erode only the smallest) has no notebook: the panel is our reading of the text.",
    "Fig. 2 bottom: three r 30 balls in 250³; the notebook's step i is i + 1 dilations (two before its first "
    "step), and its BraTS code runs without lesion dilation or volume threshold (BraTS-2023 glioma: 3 "
    "dilations, 50 voxels), which gives the same Lesion Dice on these balls.",
    "Fig. 3 top: one ball is eroded with scipy's default cross (Fig. 2 uses the cube); 'largest' is the "
    "r 50 ball, the r 100 ball is never eroded.",
    "Fig. 3 top: the curves labelled CC-HD95 are the CC mean of the plain HD; the figure stops at step "
    "19, one step before the r 20 ball vanishes (CC-HD inf, CC-HD95 falls).",
    "Fig. 3 bottom: a step moves the ball 4 voxels with np.roll, which wraps it around the image border: "
    "the r 20 ball splits at step 13 and the loop stops; the figure shows steps 0-12 of both balls.",
)


# ----------------------------------------------------------------------------------------------------
# the average surface distance, directed (MONAI's SurfaceDistanceMetric(symmetric=False))
# ----------------------------------------------------------------------------------------------------


def _mean_pred_to_gt(groups: GroupedDistances, tolerance: float) -> np.ndarray:
    """Per group, the mean distance of the prediction's edge voxels to the GT's edge voxels (float64 mean)."""
    out = np.zeros(len(groups))
    d, bounds = groups.pred_to_gt, groups.pred_bounds
    for i in np.flatnonzero((groups.n_pred > 0) & (groups.n_gt > 0)).tolist():
        out[i] = float(d[bounds[i] : bounds[i + 1]].mean(dtype=np.float64))
    return out


#: MONAI's ``SurfaceDistanceMetric(symmetric=False)``, which the notebooks computed: the mean distance from
#: the prediction's edge voxels to the nearest GT edge voxel; ``inf`` when either mask is empty. A
#: :class:`ccmetrics.metrics.registry.Metric` record passed to :func:`ccmetrics.evaluate` (never registered).
ASD = Metric(
    "asd",
    "ASD (prediction to GT)",
    "distance",
    "surface",
    SurfaceReduction(_mean_pred_to_gt, both_empty=0.0, one_empty=math.inf),
    higher_is_better=False,
    best=0.0,
    worst="worst_distance",  # the case's worst distance (Metric.worst)
    unit="length",
    description="average surface distance from the prediction's edge voxels to the GT's (directed)",
)


def monai_cc_mean(values: Iterable[float], empty: Iterable[bool], metric: str) -> float:
    """The notebooks' CC value: the plain mean of MONAI's per-region values, in region order.

    ``values``: ccmetrics' value of each region (equal to MONAI's where the region holds prediction);
    ``empty``: the regions with no prediction, which get :data:`MONAI_EMPTY_REGION`'s value. An ``inf``
    makes the mean ``inf``.

    >>> monai_cc_mean([2.0, math.inf, 4.0], [False, True, False], "hd95")
    2.0
    >>> monai_cc_mean([2.0, math.inf], [False, True], "hd")
    inf
    """
    taken = [MONAI_EMPTY_REGION[metric] if e else float(v) for v, e in zip(values, empty)]
    return sum(taken) / len(taken)


# ----------------------------------------------------------------------------------------------------
# phantoms and the prepared reference
# ----------------------------------------------------------------------------------------------------


def lesion_dice_balls(scale: float = 1.0) -> Case:
    """The Lesion Dice notebook's GT: three balls of radius 30 in 250³ (:data:`LESION_DICE_BALLS`).

    Voxel inside when its squared distance to the centre is strictly below r², as the notebook draws
    them (its loop over ``[c - r, c + r)`` misses no such voxel). ``scale`` shrinks everything alike.

    >>> case = lesion_dice_balls(); case.gt.shape, int(case.gt.sum())
    ((250, 250, 250), 338793)
    """
    size = int(round(250 * scale))
    gt = np.zeros((size,) * 3, bool)
    for center, radius in LESION_DICE_BALLS:
        draw_ball(gt, tuple(c * scale for c in center), radius * scale)
    name = "lesion_dice_balls" if scale == 1 else f"lesion_dice_balls_x{scale:g}"
    return Case(name, gt, (1.0, 1.0, 1.0))


def protocol_labels(gt: np.ndarray, order: str = "F") -> np.ndarray:
    """The notebooks' component numbers: ``cc3d.connected_components`` (26-connectivity) as uint8.

    cc3d numbers components in the array's memory order: the 500³ phantom was read by nibabel, which
    returns a Fortran-ordered array (``order="F"``), the Lesion Dice phantom was made by ``np.zeros``
    (``order="C"``).
    """
    import cc3d

    arr = np.asfortranarray(gt, dtype=np.uint8) if order == "F" else np.ascontiguousarray(gt, dtype=np.uint8)
    labels, n = cc3d.connected_components(arr, connectivity=26, return_N=True)
    if n > 255:
        raise ValueError(f"{n} components: more than the uint8 label map holds")
    return np.ascontiguousarray(labels, dtype=np.uint8)


@dataclass(eq=False)
class Reference:
    """A GT prepared once for every step of every panel.

    Attributes
    ----------
    case : Case
    labels : ndarray of uint8
        The notebooks' component numbers (:func:`protocol_labels`).
    boxes : list of tuple of slice
        Bounding box of component ``c`` at ``boxes[c - 1]``.
    radii : ndarray
        The radius of each component's ball (from ``balls``).
    worst_distance : float
        The image diagonal: what ccmetrics counts for a vanished lesion.
    crops : list of tuple of slice
        Boxes a prediction is evaluated in, smallest first: the GT's bounding box; the same box across
        the whole axis 1 (the axis the notebooks shift along) and the box grown by 24 voxels (more than
        the notebooks' dilations), the smaller of the two first; the whole image. :meth:`prepared` gives
        the first that holds the prediction, with ``labels`` cropped to it as a
        :class:`ccmetrics.GroundTruth` (``sites="labels"``: exact Voronoi ties go to the lowest number, as
        the notebooks' ``argmin`` over per-component distance maps), prepared once. A box holding both
        masks changes no value (voxels outside it are background either way; distances and regions are
        those of the image), given the whole image's worst distance.
    """

    case: Case
    labels: np.ndarray
    boxes: list[tuple[slice, ...]]
    radii: np.ndarray
    worst_distance: float
    crops: list[tuple[slice, ...]]
    _truths: dict[int, Any] = field(default_factory=dict, repr=False)
    _sites6: dict[tuple, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, case: Case, balls: Sequence[tuple[Sequence[float], float]], scale: float, order: str) -> Reference:
        from ccmetrics.metrics.aggregation import image_diagonal

        labels = protocol_labels(case.gt, order)
        boxes = [b for b in ndimage.find_objects(labels) if b is not None]
        radii = np.zeros(len(boxes))
        for center, radius in balls:
            radii[int(labels[tuple(int(round(c * scale)) for c in center)]) - 1] = radius * scale
        lo = np.min([[s.start for s in b] for b in boxes], axis=0)
        hi = np.max([[s.stop for s in b] for b in boxes], axis=0)
        tight = [slice(int(a), int(b)) for a, b in zip(lo, hi)]
        grown = [slice(max(0, int(a) - 24), min(n, int(b) + 24)) for a, b, n in zip(lo, hi, labels.shape)]
        wide = list(tight)
        wide[1] = slice(0, labels.shape[1])
        crops = sorted([tuple(grown), tuple(wide)], key=lambda box: np.prod([s.stop - s.start for s in box]))
        crops = [tuple(tight), *crops, tuple(slice(0, n) for n in labels.shape)]
        return cls(case, labels, boxes, radii, image_diagonal(case.gt.shape, case.spacing), crops)

    @property
    def n(self) -> int:
        return len(self.boxes)

    @property
    def truth(self) -> Any:
        """The whole image's :class:`ccmetrics.GroundTruth` (``sites="labels"``), prepared once."""
        return self._truth(len(self.crops) - 1)

    def _truth(self, i: int) -> Any:
        if i not in self._truths:
            from ccmetrics import GroundTruth

            self._truths[i] = GroundTruth(self.labels[self.crops[i]], sites="labels")
        return self._truths[i]

    def prepared(self, pred: np.ndarray) -> tuple[tuple[slice, ...], Any]:
        """The smallest of the ``crops`` holding every voxel of ``pred``, and the GT prepared on it."""
        total = int(np.count_nonzero(pred))
        for i, box in enumerate(self.crops):
            if i == len(self.crops) - 1 or int(np.count_nonzero(pred[box])) == total:
                return box, self._truth(i)
        raise AssertionError("unreachable")  # pragma: no cover

    def sites6(self, box: tuple[slice, ...], c: int = 0) -> Any:
        """The 6-connected components of the GT in ``box`` (of component ``c`` alone when given), found once:
        the GT side of the notebook's PQ."""
        from ccmetrics.engine.components import find_sites

        key = (tuple((s.start, s.stop) for s in box), c)
        if key not in self._sites6:
            self._sites6[key] = find_sites(self.labels[box] == c if c else self.labels[box] > 0, "components", 6)
        return self._sites6[key]

    def name(self, c: int) -> str:
        """``"r 20 ball (component 3)"``: how the tables and figures name component ``c``."""
        return f"r {self.radii[c - 1]:g} ball (component {c})"

    def number(self, radius: float) -> int:
        """The component number of the ball of ``radius`` (at the reference's scale)."""
        return int(np.flatnonzero(np.isclose(self.radii, radius))[0]) + 1

    def mask(self, c: int) -> np.ndarray:
        """Component ``c`` in its bounding box."""
        return self.labels[self.boxes[c - 1]] == c


_REFERENCES: dict[tuple[str, float], Reference] = {}


def reference(kind: str, scale: float) -> Reference:
    """The prepared phantom of a panel, built once per process: ``"spheres"`` or ``"lesion_dice"``."""
    key = (kind, scale)
    if key not in _REFERENCES:
        if kind == "spheres":
            _REFERENCES[key] = Reference.of(paper_spheres(scale), PAPER_SPHERES, scale, "F")
        else:
            _REFERENCES[key] = Reference.of(lesion_dice_balls(scale), LESION_DICE_BALLS, scale, "C")
    return _REFERENCES[key]


# ----------------------------------------------------------------------------------------------------
# the notebooks' degradations, step by step on one working prediction
# ----------------------------------------------------------------------------------------------------


def erode_steps(
    ref: Reference, components: Sequence[int], structure: str, last: int
) -> Iterator[tuple[np.ndarray, bool]]:
    """``(prediction, changed)`` at steps 0..``last``: each listed component eroded once more per step.

    ``structure``: ``"cube"`` (3×3×3, the notebooks' ``structuring_element``) or ``"cross"`` (scipy's
    default, the 6-connected cross). ``k`` iterations of ``binary_erosion`` keep the voxels whose distance
    to the background (chessboard for the cube, taxicab for the cross, voxels outside the image counting as
    background) exceeds ``k``: one distance transform per component gives every step. Each component is
    eroded in its bounding box, which equals ``binary_erosion`` of the whole prediction (the notebooks)
    because distinct components never lie in each other's 3×3×3 neighbourhood. The same array is yielded
    each time, changed in place; ``changed`` is False once every listed component has vanished (the
    prediction is then the previous step's).
    """
    pred = np.array(ref.case.gt, dtype=bool, copy=True)
    metric = {"cube": "chessboard", "cross": "taxicab"}[structure]
    depth = {}
    for c in components:
        padded = np.pad(ref.mask(c), 1)  # the box's outside is background
        depth[c] = ndimage.distance_transform_cdt(padded, metric=metric)[1:-1, 1:-1, 1:-1]
    deepest = max(int(d.max()) for d in depth.values())  # every depth from 1 to the maximum occurs
    yield pred, True
    for k in range(1, last + 1):
        if k > deepest:
            yield pred, False
            continue
        for c in components:
            view = pred[ref.boxes[c - 1]]
            view &= depth[c] == 0  # the component's voxels removed (the box holds no other component's)
            view |= depth[c] > k
        yield pred, True


@dataclass
class RollState:
    """The rolled component: its mask in its box ``[lo, lo + mask.shape)`` until a step wraps it around the
    image border, its voxel coordinates from then on; and the steps done."""

    lo: np.ndarray
    mask: np.ndarray | None
    coords: np.ndarray | None = None
    wrapped: bool = False
    steps: int = 0

    def coordinates(self) -> np.ndarray:
        """The component's voxels (N, 3)."""
        if self.coords is not None:
            return self.coords
        assert self.mask is not None
        return np.argwhere(self.mask) + self.lo

    def box(self, pad: int = 0, shape: Sequence[int] | None = None) -> tuple[slice, ...]:
        """The component's bounding box grown by ``pad`` voxels (clipped to ``shape``)."""
        if self.mask is not None:
            lo, hi = self.lo - pad, self.lo + np.array(self.mask.shape) + pad
        else:
            lo, hi = self.coordinates().min(axis=0) - pad, self.coordinates().max(axis=0) + 1 + pad
        lo = np.maximum(lo, 0)
        hi = hi if shape is None else np.minimum(hi, shape)
        return tuple(slice(int(x), int(y)) for x, y in zip(lo, hi))


def _still_one_component(pred: np.ndarray, state: RollState, volume: int) -> bool:
    """The notebook's check before each roll: one component of the prediction has exactly ``volume`` voxels.

    The moved voxels must form one 26-connected component of the current prediction of that size (the other
    balls keep their own sizes, checked to differ before the first step). While the component has not
    wrapped around, a translated copy of a connected ball, it is that component exactly when no other
    prediction voxel lies in its bounding box grown by one voxel; otherwise cc3d labels that box.
    """
    import cc3d

    box = state.box(1, pred.shape)
    if state.mask is not None and int(np.count_nonzero(pred[box])) == volume:
        return True
    labels = cc3d.connected_components(np.ascontiguousarray(pred[box], dtype=np.uint8), connectivity=26)
    own = labels[tuple((state.coordinates() - [s.start for s in box]).T)]
    return bool(own.min() == own.max() and own[0] > 0 and np.count_nonzero(labels == own[0]) == volume)


def roll_steps(ref: Reference, c: int, voxels: int, last: int, axis: int = 1) -> Iterator[tuple[np.ndarray, RollState]]:
    """The SDice notebook's shift: component ``c`` moved by ``np.roll(mask, voxels, axis)`` once per step.

    Yields ``(prediction, state)`` for steps 0..``last``, or fewer: before each step the notebook finds
    the component again as the only one of its voxel count, and stops when there is none (the ball wrapped
    around the image border and split). The same array is yielded each time, changed in place.
    """
    pred = np.array(ref.case.gt, dtype=bool, copy=True)
    box = ref.boxes[c - 1]
    state = RollState(np.array([s.start for s in box]), ref.mask(c))
    volumes = np.bincount(ref.labels.ravel(), minlength=ref.n + 1)[1:]
    volume = int(volumes[c - 1])
    yield pred, state
    if np.count_nonzero(volumes == volume) > 1:  # another ball of that size: the notebook finds two and stops
        return
    n = pred.shape[axis]
    for _ in range(last):
        if not _still_one_component(pred, state, volume):
            return
        old = state.box()
        if state.mask is not None and old[axis].stop + voxels <= n:  # moved within the image: box to box
            pred[old] &= ~state.mask
            state.lo[axis] += voxels
            pred[state.box()] |= state.mask
        else:
            coords = state.coordinates()
            pred[tuple(coords.T)] = False
            moved = coords.copy()
            moved[:, axis] += voxels
            state.wrapped |= bool((moved[:, axis] >= n).any())
            moved[:, axis] %= n
            pred[tuple(moved.T)] = True
            state.coords, state.mask = moved, None
        state.steps += 1
        yield pred, state


def shift_clipped(ref: Reference, c: int, voxels: int, axis: int = 1) -> np.ndarray:
    """Component ``c`` moved by ``voxels`` along ``axis`` with no wrap-around: voxels leaving the image are lost.

    The corrected protocol's shift (:func:`simulations.degrade.shift` on the component); equal to the
    notebook's rolled prediction as long as no voxel has wrapped around.
    """
    pred = np.array(ref.case.gt, dtype=bool, copy=True)
    coords = np.argwhere(ref.mask(c)) + [s.start for s in ref.boxes[c - 1]]
    pred[tuple(coords.T)] = False
    coords[:, axis] += voxels
    coords = coords[coords[:, axis] < pred.shape[axis]]
    pred[tuple(coords.T)] = True
    return pred


# ----------------------------------------------------------------------------------------------------
# scores: one evaluation, two views
# ----------------------------------------------------------------------------------------------------


@dataclass
class Scores:
    """One prediction evaluated once: what both views are made of.

    ``standard``: the global metrics; ``cc``: ccmetrics' CC means (vanished lesion = worst distance);
    ``raw``: each region's value (ccmetrics', distances ``inf`` without prediction), in component-number
    order; ``empty``: the regions without prediction; ``pq6`` / ``cc_pq6``: the notebook's PQ and CC-PQ
    (6-connectivity), when asked.
    """

    standard: dict[str, float]
    cc: dict[str, float]
    raw: dict[str, np.ndarray]
    empty: np.ndarray
    pq6: float = math.nan
    cc_pq6: float = math.nan
    extra: dict[str, float] = field(default_factory=dict)


def _pq6(pred: np.ndarray, gt_sites: Any) -> float:
    """The notebook's PQ: ``scipy.ndimage.label``'s 6-connected components, IoU > 0.5 (GT components given)."""
    from ccmetrics.engine.components import find_sites
    from ccmetrics.metrics.panoptic import pq_from_sites

    return float(pq_from_sites(find_sites(pred, "components", 6), gt_sites).pq)


def score(
    pred: np.ndarray, ref: Reference, metrics: Sequence[Any], *, pq6: bool = False, region_map: bool = False
) -> Scores:
    """Evaluate ``pred`` against ``ref`` once (:func:`ccmetrics.evaluate` with the GT prepared on a crop).

    ``pq6``: also the notebook's PQ (``scipy.ndimage.label``'s 6-connectivity) and its CC-PQ (the same in
    each region, the prediction taken inside the GT: only for predictions inside the GT, as the notebook's
    erosions). ``region_map``: keep the crop's Voronoi partition (:meth:`ccmetrics.GroundTruth.region_map`,
    computed on the first such call) for predictions that put many voxels outside the GT (the shifts).
    """
    from ccmetrics import engine_config, evaluate

    box, truth = ref.prepared(pred)
    if region_map:
        truth.region_map()
    crop = pred[box]
    # the run-length label map of the crop's span (not a binary search per voxel) for the prediction's edges
    with engine_config(span_map_ratio=64):
        result = evaluate(
            gt=truth, pred=crop, metrics=list(metrics), worst_distance=ref.worst_distance, nsd_tolerance=1.0
        )
    table = result.per_component
    names = [m if isinstance(m, str) else m.name for m in metrics]
    per_region = [m for m in names if m in table.columns]
    raw = {m: table[m].to_numpy(dtype=float) for m in per_region}
    empty = np.isinf(raw["hd"]) if "hd" in raw else np.zeros(ref.n, bool)
    standard = {m: float(result.standard[m]) for m in per_region}
    standard.update((k, float(v)) for k, v in result.case_scores.items())
    out = Scores(standard, {m: float(result.cc[m]) for m in per_region}, raw, empty)
    if pq6:
        labels = ref.labels[box]
        if (crop & (labels == 0)).any():
            raise ValueError("the notebook's CC-PQ is computed here for predictions inside the GT only")
        out.pq6 = _pq6(crop, ref.sites6(box))
        per = [_pq6(pred[b] & (ref.labels[b] == c), ref.sites6(b, c)) for c, b in enumerate(ref.boxes, 1)]
        out.cc_pq6 = sum(per) / len(per)
        out.extra.update({f"pq_{c}": v for c, v in enumerate(per, 1)})
    return out


def views(
    ref: Reference, s: Scores, base: dict[str, Any], metrics: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The notebook's and the corrected views of one evaluation: ``(per-step rows, per-component rows)``.

    Each row is ``base`` with ``protocol``, the global metrics (the same in both views) and the CC means: the
    notebook's by :func:`monai_cc_mean`, the corrected ones ccmetrics'; PQ: the notebook's 6-connected PQ
    and CC-PQ when computed, ccmetrics' PQ in the corrected view.
    """
    steps, comps = [], []
    for protocol in (NOTEBOOK, CORRECTED):
        row = dict(base, protocol=protocol)
        for m in metrics:
            row[m] = s.standard[m]
            if protocol == NOTEBOOK:
                row[f"cc_{m}"] = monai_cc_mean(s.raw[m], s.empty, m)
            else:
                row[f"cc_{m}"] = s.cc[m]
        if protocol == NOTEBOOK and not math.isnan(s.pq6):
            row.update(pq=s.pq6, cc_pq=s.cc_pq6)
        elif protocol == CORRECTED and "pq" in s.standard:
            row["pq"] = s.standard["pq"]
        steps.append(row)
        for c in range(1, ref.n + 1):
            comp = dict(base, protocol=protocol, component=c, radius=ref.radii[c - 1])
            for m in metrics:
                value = s.raw[m][c - 1]
                comp[m] = MONAI_EMPTY_REGION[m] if protocol == NOTEBOOK and s.empty[c - 1] else value
            if protocol == NOTEBOOK and f"pq_{c}" in s.extra:
                comp["pq"] = s.extra[f"pq_{c}"]
            comps.append(comp)
    return steps, comps


# ----------------------------------------------------------------------------------------------------
# the panels
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Steps:
    """How far each panel goes, and how much of it the figures show (the notebooks' numbers by default).

    ``quick()``: a few steps on the quarter-size phantoms, for the tests.
    """

    scale: float = 1.0
    erode_all: int = 20
    erode_one: int = 25
    erode_one_shown: int = 20
    shift: int = 25
    shift_shown: int = 13
    shift_voxels: int = 4
    dilate: int = 20
    dilate_shown: int = 16

    @classmethod
    def quick(cls) -> Steps:
        return cls(0.25, 6, 7, 6, 6, 5, 1, 5, 5)


def _panel(figure: str, panel: str, scenario: str, target: str) -> dict[str, Any]:
    return {"figure": figure, "panel": panel, "scenario": scenario, "target": target}


def _erode_all(steps: Steps) -> tuple[list, list]:
    ref = reference("spheres", steps.scale)
    metrics = [*SURFACE_METRICS, ASD, "pq"]
    rows: list[dict[str, Any]] = []
    comps: list[dict[str, Any]] = []
    s = None
    for step, (pred, changed) in enumerate(erode_steps(ref, range(1, ref.n + 1), "cube", steps.erode_all)):
        s = score(pred, ref, metrics, pq6=True) if changed or s is None else s
        base = dict(_panel("2", "top", "erode_all", "all"), step=step, erosions=step)
        r, c = views(ref, s, base, [*SURFACE_METRICS, "asd"])
        rows += r
        comps += c
    return rows, comps


def _erode_smallest_text(steps: Steps) -> tuple[list, list]:
    """Fig. 2 middle as :func:`simulations.figures.fig2` draws it (cube erosion of the smallest ball)."""
    ref = reference("spheres", steps.scale)
    c = ref.number(20 * steps.scale)
    rows, comps = [], []
    s = None
    for step, (pred, changed) in enumerate(erode_steps(ref, [c], "cube", steps.erode_all)):
        s = score(pred, ref, ["dice", "pq"]) if changed or s is None else s  # a vanished ball: as before
        base = dict(_panel("2", "middle", "erode_smallest", ref.name(c)), step=step, erosions=step)
        rows.append(dict(base, protocol=TEXT, dice=s.standard["dice"], cc_dice=s.cc["dice"], pq=s.standard["pq"]))
        for k in range(1, ref.n + 1):
            comps.append(dict(base, protocol=TEXT, component=k, radius=ref.radii[k - 1], dice=s.raw["dice"][k - 1]))
    return rows, comps


def _erode_one(steps: Steps, which: str) -> tuple[list, list]:
    """Fig. 3 top: ``smallest`` (both views), ``largest_notebook`` (r 50) or ``largest_corrected`` (r 100)."""
    ref = reference("spheres", steps.scale)
    radius = {"smallest": 20, "largest_notebook": 50, "largest_corrected": 100}[which]
    c = ref.number(radius * steps.scale)
    scenario = "erode_smallest" if which == "smallest" else "erode_largest"
    metrics = [*SURFACE_METRICS, "asd"]
    rows, comps = [], []
    s = None
    for step, (pred, changed) in enumerate(erode_steps(ref, [c], "cross", steps.erode_one)):
        s = score(pred, ref, [*SURFACE_METRICS, ASD]) if changed or s is None else s
        base = dict(_panel("3", "top", scenario, ref.name(c)), step=step, erosions=step)
        r, k = views(ref, s, base, metrics)
        keep = {"smallest": (NOTEBOOK, CORRECTED), "largest_notebook": (NOTEBOOK,), "largest_corrected": (CORRECTED,)}
        rows += [x for x in r if x["protocol"] in keep[which]]
        comps += [x for x in k if x["protocol"] in keep[which]]
    return rows, comps


def _shift_one(steps: Steps, which: str) -> tuple[list, list]:
    """Fig. 3 bottom: the notebook's rolls of one ball, and the corrected shift (no wrap-around) to the last step.

    Where no voxel has wrapped around, the corrected prediction is the rolled one, and its evaluation is reused.
    """
    ref = reference("spheres", steps.scale)
    c = ref.number((20 if which == "smallest" else 100) * steps.scale)
    scenario = f"shift_{which}"
    keep_map = which == "largest"  # 4 million voxels outside the GT each step: read from one kept region map
    metrics = [*SURFACE_METRICS, "asd"]
    rows, comps = [], []
    done: set[int] = set()
    for pred, state in roll_steps(ref, c, steps.shift_voxels, steps.shift):
        step = state.steps
        s = score(pred, ref, [*SURFACE_METRICS, ASD], region_map=keep_map)
        base = dict(_panel("3", "bottom", scenario, ref.name(c)), step=step, voxels=step * steps.shift_voxels)
        r, k = views(ref, s, base, metrics)
        keep = (NOTEBOOK, CORRECTED) if not state.wrapped else (NOTEBOOK,)
        rows += [x for x in r if x["protocol"] in keep]
        comps += [x for x in k if x["protocol"] in keep]
        if not state.wrapped:
            done.add(step)
    for step in range(steps.shift + 1):
        if step in done:
            continue
        pred = shift_clipped(ref, c, step * steps.shift_voxels)
        s = score(pred, ref, [*SURFACE_METRICS, ASD], region_map=keep_map)
        base = dict(_panel("3", "bottom", scenario, ref.name(c)), step=step, voxels=step * steps.shift_voxels)
        r, k = views(ref, s, base, metrics)
        rows += [x for x in r if x["protocol"] == CORRECTED]
        comps += [x for x in k if x["protocol"] == CORRECTED]
    return rows, comps


def _dilate_three_balls(steps: Steps) -> tuple[list, list]:
    """Fig. 2 bottom: notebook step i is i + 1 dilations (i >= 1) with its Lesion Dice; corrected: i dilations."""
    from ccmetrics.engine.components import ComponentCache
    from ccmetrics.metrics.lesions import lesion_dice_from_components

    from .degrade import Components, dilate

    ref = reference("lesion_dice", steps.scale)
    gt = ref.case.gt
    components = Components.of(gt)
    gt_cc = ComponentCache(gt)  # the GT's components, labelled once for every step's two Lesion Dice
    notebook_steps = {0: 0, **{i: i + 1 for i in range(1, steps.dilate + 1)}}
    rows, comps = [], []
    for k in range(0, steps.dilate + 2):
        pred = dilate(gt, k, "all", components=components)
        s = score(pred, ref, ["dice"], region_map=True)
        pred_cc = ComponentCache(pred)
        for protocol, step in ((NOTEBOOK, [i for i, d in notebook_steps.items() if d == k]), (CORRECTED, [k])):
            if protocol == NOTEBOOK:  # the notebook's call: no lesion dilation, no volume threshold
                ld = lesion_dice_from_components(pred_cc, gt_cc, dilation=0, min_volume=0.0).dice
                cc = monai_cc_mean(s.raw["dice"], s.empty, "dice")
            else:  # BraTS-2023 glioma settings (lesion_dice's defaults)
                ld = lesion_dice_from_components(pred_cc, gt_cc).dice
                cc = s.cc["dice"]
            for i in step:
                base = dict(_panel("2", "bottom", "dilate_three_balls", "all"), step=i, dilations=k)
                rows.append(dict(base, protocol=protocol, dice=s.standard["dice"], cc_dice=cc, lesion_dice=ld))
                comps += [
                    dict(base, protocol=protocol, component=c, radius=ref.radii[c - 1], dice=s.raw["dice"][c - 1])
                    for c in range(1, ref.n + 1)
                ]
    return rows, comps


#: the tasks of a run, longest first (worker processes take them in this order)
TASKS: tuple[tuple[str, Callable[..., tuple[list, list]], str | None], ...] = (
    ("3_bottom_largest", _shift_one, "largest"),
    ("2_top", _erode_all, None),
    ("3_bottom_smallest", _shift_one, "smallest"),
    ("2_bottom", _dilate_three_balls, None),
    ("3_top_largest_corrected", _erode_one, "largest_corrected"),
    ("3_top_largest_notebook", _erode_one, "largest_notebook"),
    ("3_top_smallest", _erode_one, "smallest"),
    ("2_middle", _erode_smallest_text, None),
)


def run_task(name: str, steps: Steps) -> tuple[list, list]:
    """One task of :data:`TASKS` → (per-step rows, per-component rows)."""
    for key, fn, arg in TASKS:
        if key == name:
            return fn(steps) if arg is None else fn(steps, arg)
    raise ValueError(f"unknown task {name!r}; expected one of {[t[0] for t in TASKS]}")


#: column order of the tables
STEP_COLUMNS = (
    "figure", "panel", "scenario", "protocol", "target", "step", "erosions", "dilations", "voxels",
    "dice", "cc_dice", "hd", "cc_hd", "hd95", "cc_hd95", "nsd", "cc_nsd", "asd", "cc_asd", "pq", "cc_pq",
    "lesion_dice",
)  # fmt: skip
#: column order of the per-component table
COMPONENT_COLUMNS = (
    "figure", "panel", "scenario", "protocol", "target", "step", "erosions", "dilations", "voxels",
    "component", "radius", "dice", "hd", "hd95", "nsd", "asd", "pq",
)  # fmt: skip


def _table(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    table = pd.DataFrame(rows)
    for column in columns:
        if column not in table:
            table[column] = np.nan
    order = {"top": 0, "middle": 1, "bottom": 2, NOTEBOOK: 0, CORRECTED: 1, TEXT: 2}
    keys = ["figure", "panel", "scenario", "protocol", "step"] + (["component"] if "component" in columns else [])
    key = lambda col: col.map(order) if col.name in ("panel", "protocol") else col  # noqa: E731
    return table[list(columns)].sort_values(keys, kind="stable", key=key).reset_index(drop=True)


def run_paper(
    steps: Steps | None = None, *, workers: int = 1, progress: bool = True, tasks: Sequence[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every panel of Fig. 2 and 3, both protocols → ``(per_step, per_component)`` tidy tables.

    ``per_step``: one row per figure, panel, scenario, protocol and step: the degradation (``erosions``,
    ``dilations`` or ``voxels`` moved), the global metrics and their CC versions (``cc_``), PQ, CC-PQ,
    Lesion Dice. ``per_component``: each component's value (numbered as the notebooks, with its
    ``radius``). ``workers > 1`` runs the tasks in worker processes (each prepares its own phantoms).
    """
    from tqdm.auto import tqdm

    steps = steps or Steps()
    names = [t[0] for t in TASKS] if tasks is None else list(tasks)
    rows: list[dict[str, Any]] = []
    comps: list[dict[str, Any]] = []
    bar = tqdm(total=len(names), unit="panel", desc="paper", disable=not progress)
    try:
        if workers > 1 and len(names) > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                for r, c in pool.map(run_task, names, [steps] * len(names)):
                    rows += r
                    comps += c
                    bar.update()
        else:
            for name in names:
                r, c = run_task(name, steps)
                rows += r
                comps += c
                bar.update()
    finally:
        bar.close()
    return _table(rows, STEP_COLUMNS), _table(comps, COMPONENT_COLUMNS)
