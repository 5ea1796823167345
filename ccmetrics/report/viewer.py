"""The viewer of a case in the report: its scan and outcome labels, cropped, downsampled and compressed for the page.

The page's viewer (``templates/viewer.js``, our own small canvas module) shows a coronal and a sagittal
maximum-intensity projection (MIP) and the axial, coronal and sagittal planes through a cursor, every GT lesion and
predicted component coloured by its outcome. This module writes what it draws, per case:

* **the outcome of every voxel** as a map of component numbers (:func:`component_map`): a GT lesion's voxels its
  entry (*found* or *missed*: ``per_component.csv``'s ``detected``, as the page's tables show it), a predicted
  component's voxels outside the GT its entry (*false positive*: the false positives the report already lists, those
  of ``per_prediction.csv``'s ``outcome``; any other: *true-positive prediction*). Nothing is judged again here: the
  outcomes are the tables'. Codes and colours (Okabe-Ito, readable with the common colour-vision deficiencies) are
  those of the outcome maps ``ccmetrics evaluate --write-maps`` writes: 1 found (bluish green), 2 missed (orange), 3
  true-positive prediction outside the GT (sky blue), 4 false positive (reddish purple); the GT over the prediction;
* **split and merged** (:func:`overlaps`): a lesion that two or more predicted components overlap is *split*
  (``per_component.csv``'s ``n_pred``), a predicted component that overlaps two or more lesions *merged*
  (``per_prediction.csv``'s ``n_gt``), and so are the lesions it covers; counted here from the same two labellings
  the tables count from. The page hatches them over their outcome's colour (split ``/``, merged ``\\``: dark
  stripes, read without the colours) and the cursor's label says ``split (2 predictions)``, ``merged (covers 3
  lesions)``; the outcome colours stay the tables';
* **the scan** (:class:`ScanPicker`): one channel, the PET where there is one (a channel named PET, PT, FDG-PET...,
  else one that is not a CT), else the CT, mapped to grey through one fixed window for every case
  (:func:`viewer_window`: PET SUV 0-10 by default, ``--window pet=0:10``; CT the soft-tissue preset, ``ct=lung`` ...)
  and stored as uint8 (:func:`window_uint8`). Without a scan the viewer draws the labels on black.

Bounded: the volume is cropped to the body (the scan's voxels above :func:`body_threshold`) and the labels, plus
:data:`MARGIN_MM`, then reduced by a real factor (:func:`choose_grid`: blocks of whole voxels, each displayed voxel
the maximum of its block, :func:`reduce_max`, so that a small hot lesion stays in the MIP; a label block keeps its
most telling outcome: missed, then false positive, found, true-positive prediction) until the longest axis has at
most :data:`MAX_AXIS` voxels and the scan and the label maps compress (zlib, read in the browser by
``DecompressionStream('deflate')``) to at most :data:`BUDGET_BYTES`: a whole-body case adds at most about 2 MB to the
page (base64), whatever its noise. Cost: one pass over the case's voxels per factor tried (usually one), and one
labelling of the prediction (its components' numbers, as ``per_prediction.csv`` numbers them).

Where the data go (:func:`place_data`): inline in the page (one file), or for a large data set in a folder beside it
(``report_files/``, one script a case, injected when its viewer is opened: a page opened as a file may load
scripts but not fetch files); ``auto`` goes beside the page beyond :data:`INLINE_LIMIT_BYTES` (50 MB). Either way
a case's data are parsed and inflated only when its viewer is opened.

Where the cursor is, the page writes as the tables do: the voxel ``(i, j, k)``, 0-based, of the GT's grid, and its
patient coordinates, RAS+ mm, from the GT's affine (the matrix :func:`ccmetrics.engine.geometry.patient_coordinates`
takes, here sent to the page). Planes as the thumbnails': axial ``k`` constant (``i`` right, ``j`` up), coronal
``j`` (``i`` right, ``k`` up), sagittal ``i`` (``j`` right, ``k`` up); mm drawn to scale.
"""

from __future__ import annotations

import base64
import json
import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from ..results.outcomes import FALSE_POSITIVE, FOUND, MISSED, OUTCOME_LABELS, TP_OUTSIDE_GT, hex_colour
from . import thumbnails

__all__ = [
    "BUDGET_BYTES",
    "DEFAULT_PET_WINDOW",
    "MARGIN_MM",
    "MAX_AXIS",
    "INLINE_LIMIT_BYTES",
    "OUTCOMES",
    "VIEWER_DATA",
    "ComponentMap",
    "Grid",
    "ScanPicker",
    "body_threshold",
    "build_case",
    "choose_grid",
    "component_map",
    "crop_box",
    "data_folder",
    "decode",
    "json_text",
    "label_box",
    "legend",
    "overlaps",
    "place_data",
    "reduce_max",
    "viewer_window",
    "window_uint8",
]

#: code: (name, colour, what the legend says); codes and colours: :mod:`ccmetrics.results.outcomes`
OUTCOMES = {
    label.value: (name, hex_colour(label.rgb), label.description)
    for label, name in zip(OUTCOME_LABELS, ("found", "missed", "true positive", "false positive"))
}
#: which outcome a MIP ray or a downsampled block shows when it holds several: the higher first
PRIORITY = {MISSED: 4, FALSE_POSITIVE: 3, FOUND: 2, TP_OUTSIDE_GT: 1}
#: the PET's window in the viewer unless told otherwise: SUV 0 black, 10 white, the same for every case
DEFAULT_PET_WINDOW = (0.0, 10.0)
#: the longest axis of a case's volume in the page, in voxels
MAX_AXIS = 256
#: the most a case's scan and label maps may take compressed (base64 in the page: 4/3 of it)
BUDGET_BYTES = 1_400_000
#: the margin kept around the body and the labels when a case is cropped
MARGIN_MM = 10.0
#: where the cases' viewer data go (:func:`place_data`)
VIEWER_DATA = ("auto", "inline", "folder")
#: ``auto`` writes the viewer data beside the page once they would make it larger than this
INLINE_LIMIT_BYTES = 50_000_000
#: the first line of each script :func:`place_data` writes (only those it removes again)
DATA_MARKER = "// ccmetrics report: the viewer data of a case (ccmetrics.report.viewer.place_data)"
#: each further try of :func:`build_case` over the budget shrinks the volume by this factor per axis
SHRINK = 1.25


# ---------------------------------------------------------------- the labels


@dataclass
class ComponentMap:
    """Every GT lesion and predicted component of a case and class, and the map of where they are.

    Attributes
    ----------
    index : ndarray of uint16
        0 for none, else the component's entry number (1-based into ``components``): a GT lesion's voxels its
        lesion, a prediction's voxels outside the GT its component. Of the GT's shape, or cut to the components'
        bounding box (``offset``: where its first voxel lies; what is kept while the scan is read is that box).
    components : list of dict
        ``{"kind": "lesion" | "prediction", "label", "outcome" (a code of OUTCOMES), "voxel" (its centroid rounded,
        0-based i, j, k), "id" (its row on the page, or None)}``, a lesion's with ``n_pred`` (the predicted
        components overlapping it; 2 or more: split) and ``merged`` (the most lesions one of these covers; 2 or
        more: merged), a prediction's with ``n_gt`` (the lesions it overlaps; 2 or more: merged)
        (:func:`overlaps`): first the lesions (entry k is lesion k), then the predicted components (entry
        n_lesions + m is prediction component m).
    """

    index: np.ndarray
    components: list[dict[str, Any]] = field(default_factory=list)
    offset: tuple[int, ...] | None = None

    def box(self) -> tuple[tuple[int, int], ...] | None:
        """The bounding box of the components on the GT's grid (None: none)."""
        box = _box(self.index > 0)
        offset = self.offset or (0,) * self.index.ndim
        return None if box is None else tuple((a + o, b + o) for (a, b), o in zip(box, offset))

    def within(self, box: Sequence[tuple[int, int]]) -> np.ndarray:
        """The map on the crop ``box`` of the GT's grid (zeros where it holds nothing).

        >>> m = ComponentMap(np.array([[[1, 2]]], np.uint16), offset=(1, 0, 3))
        >>> m.within([(0, 2), (0, 1), (2, 6)]).tolist()
        [[[0, 0, 0, 0]], [[0, 1, 2, 0]]]
        """
        offset = self.offset or (0,) * self.index.ndim
        out = np.zeros(tuple(b - a for a, b in box), np.uint16)
        source, target = [], []
        for (a, b), o, n in zip(box, offset, self.index.shape):
            lo, hi = max(a, o), min(b, o + n)
            if hi <= lo:
                return out
            source.append(slice(lo - o, hi - o))
            target.append(slice(lo - a, hi - a))
        out[tuple(target)] = self.index[tuple(source)]
        return out

    def outcomes(self) -> np.ndarray:
        """The outcome code of every voxel (uint8, 0 for none).

        >>> m = ComponentMap(np.array([0, 1, 2], np.uint16), [{"outcome": MISSED}, {"outcome": FALSE_POSITIVE}])
        >>> m.outcomes().tolist()
        [0, 2, 4]
        """
        table = np.array([0] + [c["outcome"] for c in self.components], np.uint8)
        return table[self.index]


def component_map(
    gt_labels: np.ndarray,
    pred: np.ndarray,
    lesions: Sequence[Mapping[str, Any]],
    false_positives: Sequence[Mapping[str, Any]],
    connectivity: int | None = None,
) -> ComponentMap:
    """The components of a case and class with the outcomes its tables give them.

    Parameters
    ----------
    gt_labels : ndarray of int
        The GT's components numbered as ``per_component.csv`` (``CaseImages.regions.gt_labels``).
    pred : ndarray of bool
        The prediction evaluated.
    lesions : sequence of dict
        The page's lesion entries (``label``, ``detected``, ``position``, ``id``): ``detected`` from
        ``per_component.csv``.
    false_positives : sequence of dict
        The page's false-positive entries (``label``: the prediction component's number, raster order, as
        ``per_prediction.csv`` numbers them); every other predicted component is a true positive.
    connectivity : int, optional
        The evaluation's (the prediction's components are numbered with it).

    Examples
    --------
    >>> gt = np.array([[[1, 1, 0, 0, 2, 0, 0]]])
    >>> pred = np.array([[[0, 1, 1, 0, 0, 0, 1]]], bool)
    >>> lesions = [{"label": 1, "detected": True, "id": "a-lesion-1"}, {"label": 2, "detected": False, "id": None}]
    >>> m = component_map(gt, pred, lesions, [{"label": 2, "id": "a-fp-2"}])
    >>> m.outcomes().tolist(), [(c["kind"], c["label"], c["outcome"], c["voxel"]) for c in m.components]
    ([[[1, 1, 3, 0, 2, 0, 4]]], [('lesion', 1, 1, [0, 0, 1]), ('lesion', 2, 2, [0, 0, 4]), \
('prediction', 1, 3, [0, 0, 2]), ('prediction', 2, 4, [0, 0, 6])])
    >>> [c.get("n_pred", c.get("n_gt")) for c in m.components]  # lesion 1 and prediction 1 overlap
    [1, 0, 1, 0]
    """
    from ..engine.components import label_components

    pred_labels, n_pred = label_components(pred, connectivity)
    n_gt = int(gt_labels.max()) if gt_labels.size else 0
    if n_gt + n_pred > np.iinfo(np.uint16).max:
        raise ValueError(f"{n_gt} lesions and {n_pred} predicted components: too many for the viewer (65535 at most)")
    if len(lesions) != n_gt:
        raise ValueError(f"the table lists {len(lesions)} lesions, the GT holds {n_gt}: was it changed?")
    index = np.zeros(gt_labels.shape, np.uint16)
    inside = gt_labels > 0
    index[inside] = gt_labels[inside]
    outside = (pred_labels > 0) & ~inside
    index[outside] = (pred_labels[outside] + n_gt).astype(np.uint16)
    n_pred_of, n_gt_of, merged_with = overlaps(gt_labels, pred_labels, n_gt, n_pred)
    components: list[dict[str, Any]] = []
    gt_centres = _centres(gt_labels, n_gt)
    for les, centre in zip(sorted(lesions, key=lambda r: int(r["label"])), gt_centres):
        position = les.get("position")
        voxel = list(position["voxel"]) if position else centre
        outcome = FOUND if les["detected"] else MISSED
        k = int(les["label"])
        components.append(
            {
                "kind": "lesion",
                "label": k,
                "outcome": outcome,
                "voxel": voxel,
                "id": les.get("id"),
                "n_pred": int(n_pred_of[k]),
                "merged": int(merged_with[k]),
            }
        )
    fps = {int(f["label"]): f for f in false_positives}
    for m, centre in enumerate(_centres(pred_labels, n_pred), start=1):
        fp = fps.get(m)
        outcome = FALSE_POSITIVE if fp is not None else TP_OUTSIDE_GT
        position = fp.get("position") if fp is not None else None
        voxel = list(position["voxel"]) if position else centre
        components.append(
            {
                "kind": "prediction",
                "label": m,
                "outcome": outcome,
                "voxel": voxel,
                "id": fp.get("id") if fp is not None else None,
                "n_gt": int(n_gt_of[m]),
            }
        )
    box = _box(index > 0)
    if box is None:
        return ComponentMap(np.zeros((0,) * index.ndim, np.uint16), components, (0,) * index.ndim)
    return ComponentMap(index[tuple(slice(a, b) for a, b in box)].copy(), components, tuple(a for a, _ in box))


def overlaps(gt_labels: np.ndarray, pred_labels: np.ndarray, n_gt: int, n_pred: int):
    """Which GT lesions and predicted components overlap (share a voxel): how many predictions cover each lesion
    (``per_component.csv``'s ``n_pred``; 2 or more: *split*), how many lesions each prediction covers
    (``per_prediction.csv``'s ``n_gt``; 2 or more: *merged*), and for each lesion the most lesions that one
    prediction covering it covers (2 or more: the lesion is merged with another).

    Cost: one pass over the voxels and a sort of the distinct (lesion, prediction) pairs of the overlapping voxels.

    Returns
    -------
    n_pred : ndarray of int, n_gt + 1
        Entry k: lesion k's (entry 0 unused).
    n_gt : ndarray of int, n_pred + 1
        Entry m: prediction component m's.
    merged : ndarray of int, n_gt + 1
        Entry k: the largest ``n_gt`` of the predictions overlapping lesion k (0: none overlaps it).

    Examples
    --------
    >>> gt = np.array([1, 1, 0, 2, 0, 3, 3, 3])
    >>> pred = np.array([1, 0, 0, 1, 0, 2, 0, 3])  # 1 covers lesions 1 and 2, lesion 3 is split by 2 and 3
    >>> [a.tolist() for a in overlaps(gt, pred, 3, 3)]
    [[0, 1, 1, 2], [0, 2, 1, 1], [0, 2, 2, 1]]
    """
    both = (gt_labels > 0) & (pred_labels > 0)
    key = gt_labels[both].astype(np.int64) * (n_pred + 1) + pred_labels[both].astype(np.int64)
    pairs = np.unique(key)
    lesion, prediction = pairs // (n_pred + 1), pairs % (n_pred + 1)
    n_pred_of = np.bincount(lesion, minlength=n_gt + 1)
    n_gt_of = np.bincount(prediction, minlength=n_pred + 1)
    merged = np.zeros(n_gt + 1, np.int64)
    np.maximum.at(merged, lesion, n_gt_of[prediction])
    return n_pred_of, n_gt_of, merged


def _centres(labels: np.ndarray, n: int) -> list[list[int]]:
    """Each component's centroid rounded to the nearest voxel, halves up (``Component.center``), 1..n."""
    if n == 0:
        return []
    coords = np.nonzero(labels)
    which = labels[coords]
    counts = np.bincount(which, minlength=n + 1)[1:].astype(float)
    means = [np.bincount(which, weights=c.astype(float), minlength=n + 1)[1:] / np.maximum(counts, 1) for c in coords]
    return [[int(math.floor(m[k] + 0.5)) for m in means] for k in range(n)]


# ---------------------------------------------------------------- the scan


def window_uint8(values: Any, low: float, high: float) -> np.ndarray:
    """The grey levels stored in the page: ``round(255 (v - low) / (high - low))``, clipped to 0..255; NaN is 0.

    >>> window_uint8([-1.0, 0.0, 1.0, 5.0, 10.0, 12.0, float("nan")], 0.0, 10.0).tolist()
    [0, 0, 26, 128, 255, 255, 0]
    """
    grey = np.nan_to_num(thumbnails.window_values(values, low, high), nan=0.0)
    return np.floor(grey * 255.0 + 0.5).astype(np.uint8)


def viewer_window(spec: thumbnails.WindowSpec, kind: str) -> thumbnails.Window:
    """The viewer's window of a channel of ``kind`` (``"pet"`` or ``"ct"``): one for every case, never the crop's.

    A level and width given are taken; ``"ct"`` is the soft-tissue window; ``"auto"`` and ``"range"`` (per crop in
    the thumbnails) are here the fixed window of the kind: a CT soft tissue, anything else :data:`DEFAULT_PET_WINDOW`.

    >>> viewer_window("auto", "pet").text, viewer_window("auto", "ct").text, viewer_window((5.0, 10.0), "pet").text
    ('0–10', 'L 40 W 400 HU', 'L 5 W 10')
    """
    spec = thumbnails.read_window(spec)
    if not isinstance(spec, str):
        return thumbnails.Window.from_level(spec[0], spec[1], "level")
    if spec == "ct" or kind == "ct":
        return thumbnails.Window.from_level(*thumbnails.SOFT_TISSUE, "ct")
    return thumbnails.Window(*DEFAULT_PET_WINDOW, "range")


def body_threshold(kind: str, window: thumbnails.Window) -> float:
    """The value above which a voxel is the body, for the crop: a CT's -500 HU (air is about -1000), else 1% of the
    window above its low end (a PET's background).

    >>> body_threshold("ct", viewer_window("auto", "ct")), body_threshold("pet", viewer_window("auto", "pet"))
    (-500.0, 0.1)
    """
    if kind == "ct":
        return thumbnails.CT_MINIMUM
    return window.low + 0.01 * window.width


def crop_box(boxes: Sequence[Sequence[tuple[int, int]] | None], shape: Sequence[int], spacing: Sequence[float]):
    """The union of ``boxes`` (each ``(start, stop)`` per axis, None for none) plus :data:`MARGIN_MM` on each side,
    within the image; the whole image when there is no box.

    >>> crop_box([((10, 20), (5, 6), (0, 1)), None], (100, 100, 10), (2.0, 2.0, 5.0))
    ((5, 25), (0, 11), (0, 3))
    >>> crop_box([None], (4, 4, 4), (1.0, 1.0, 1.0))
    ((0, 4), (0, 4), (0, 4))
    """
    given = [b for b in boxes if b is not None]
    if not given:
        return tuple((0, int(n)) for n in shape)
    out = []
    for a, (n, s) in enumerate(zip(shape, spacing)):
        margin = int(math.ceil(MARGIN_MM / float(s))) if s > 0 else 0
        start = min(b[a][0] for b in given) - margin
        stop = max(b[a][1] for b in given) + margin
        out.append((max(0, start), min(int(n), stop)))
    return tuple(out)


def _box(mask: np.ndarray) -> tuple[tuple[int, int], ...] | None:
    """The bounding box of a mask's True voxels (stop exclusive), None when it has none."""
    if not mask.any():
        return None
    out = []
    for a in range(mask.ndim):
        hit = np.flatnonzero(mask.any(axis=tuple(b for b in range(mask.ndim) if b != a)))
        out.append((int(hit[0]), int(hit[-1]) + 1))
    return tuple(out)


def label_box(maps: Sequence[ComponentMap | None]) -> tuple[tuple[int, int], ...] | None:
    """The bounding box of the components of every class of a case (None when none has any).

    >>> index = np.zeros((5, 5, 5), np.uint16); index[1, 2:4, 3] = 1
    >>> label_box([ComponentMap(index), None])
    ((1, 2), (2, 4), (3, 4))
    """
    boxes = [b for b in (m.box() for m in maps if m is not None) if b is not None]
    if not boxes:
        return None
    return tuple((min(b[a][0] for b in boxes), max(b[a][1] for b in boxes)) for a in range(len(boxes[0])))


@dataclass
class _Picked:
    label: str
    kind: str
    window: thumbnails.Window
    box: tuple[tuple[int, int], ...]
    grey: np.ndarray  # uint8, the box's voxels


class ScanPicker:
    """Takes each channel of a case's scan as it is read (:func:`ccmetrics.report.on_scan.on_image`'s
    ``on_channel``) and keeps the viewer's: the PET (a channel named PET, PT, FDG-PET ..., else one that is not a
    CT, the first), else the first CT; windowed to uint8 at once and cropped to the body and ``label_box``, so that
    only that crop is kept (a byte a voxel).

    Parameters
    ----------
    windows : mapping
        The windows asked for (``--window``): by channel name (any case), code, kind (``pet``, ``ct``) or ``*``.
    label_box : tuple or None
        The bounding box of the labels of every class of the case (kept inside the crop).
    spacing : sequence of float

    Examples
    --------
    >>> ct = np.full((6, 6, 6), -1000.0); ct[1:5, 1:5, 1:5] = 40.0
    >>> pet = np.zeros((6, 6, 6)); pet[2:4, 2:4, 2:4] = 5.0
    >>> picker = ScanPicker({}, None, (10.0, 10.0, 10.0))
    >>> picker("CT", "0000", ct, -1000.0); picker("0001", "0001", pet, 0.0)
    >>> picker.picked.label, picker.picked.kind, picker.picked.window.text, picker.picked.box
    ('0001', 'pet', '0–10', ((1, 5), (1, 5), (1, 5)))
    """

    def __init__(self, windows: Mapping[str, thumbnails.WindowSpec], label_box, spacing: Sequence[float]):
        self.windows = dict(windows)
        self.label_box = label_box
        self.spacing = tuple(float(s) for s in spacing)
        self.picked: _Picked | None = None

    def spec(self, label: str, code: str, kind: str) -> thumbnails.WindowSpec:
        """The window asked for this channel (:func:`ccmetrics.report.thumbnails.asked_window`, the thumbnails'
        rule)."""
        return thumbnails.read_window(thumbnails.asked_window(self.windows, label, code, kind))

    def __call__(self, label: str, code: str, array: np.ndarray, minimum: float) -> None:
        if array.ndim != 3:
            return
        kind = thumbnails.channel_kind(label, minimum)
        if self.picked is not None and (self.picked.kind == "pet" or kind == "ct"):
            return  # a PET is kept; a CT only until a PET comes
        window = viewer_window(self.spec(label, code, kind), kind)
        body = _box(np.asarray(array) > body_threshold(kind, window))
        box = crop_box([body, self.label_box], array.shape, self.spacing)
        grey = window_uint8(array[tuple(slice(a, b) for a, b in box)], window.low, window.high)
        self.picked = _Picked(label, kind, window, box, grey)


# ---------------------------------------------------------------- the grid in the page


@dataclass(frozen=True)
class Grid:
    """How the page's volume lies on the GT's grid: the crop, and the blocks of voxels each displayed voxel covers.

    Attributes
    ----------
    box : tuple of (start, stop)
        The crop, GT voxels (stop exclusive).
    starts : tuple of ndarray
        Per axis, the first GT voxel of each displayed voxel's block (absolute indices, increasing, from ``start``);
        a block ends where the next starts, the last at ``stop``.
    spacing_mm : tuple of float
        A displayed voxel's size: the GT's spacing times the axis' mean block length (blocks differ by one voxel at
        most).
    """

    box: tuple[tuple[int, int], ...]
    starts: tuple[np.ndarray, ...]
    spacing_mm: tuple[float, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(s) for s in self.starts)


def choose_grid(box: Sequence[tuple[int, int]], spacing: Sequence[float], factor: float = 1.0) -> Grid:
    """The blocks of a crop reduced ``factor`` times (at least enough that the longest axis has :data:`MAX_AXIS`
    voxels): an axis of ``n`` voxels becomes ``m = ceil(n / f)`` blocks, block ``d`` starting at ``floor(d n / m)``.

    >>> g = choose_grid([(10, 15), (0, 600), (0, 1)], (1.0, 1.0, 2.0))
    >>> g.shape, g.starts[0].tolist(), g.starts[1][:3].tolist(), g.spacing_mm
    ((3, 256, 1), [10, 11, 13], [0, 2, 4], (1.6666666666666667, 2.34375, 2.0))
    """
    lengths = [b - a for a, b in box]
    f = max(1.0, float(factor), max(lengths) / MAX_AXIS)
    starts, sizes = [], []
    for (a, b), s in zip(box, spacing):
        n = b - a
        m = max(1, min(n, int(math.ceil(n / f)))) if n > 0 else 0
        starts.append(a + (np.arange(m) * n) // max(m, 1))
        sizes.append(float(s) * n / m if m else float(s))
    return Grid(tuple((int(a), int(b)) for a, b in box), tuple(starts), tuple(sizes))


def reduce_max(array: np.ndarray, grid: Grid) -> np.ndarray:
    """The crop of ``array`` (of the GT's shape, or already cropped to ``grid.box``) reduced to ``grid``: each
    displayed voxel the maximum of its block (``np.maximum.reduceat`` axis by axis: the maximum of maxima).

    >>> a = np.arange(8).reshape(8, 1, 1)
    >>> reduce_max(a, Grid(((0, 8), (0, 1), (0, 1)), (np.array([0, 3, 6]), np.array([0]), np.array([0])),
    ...                    (1.0, 1.0, 1.0))).ravel().tolist()
    [2, 5, 7]
    """
    if array.shape != tuple(b - a for a, b in grid.box):
        array = array[tuple(slice(a, b) for a, b in grid.box)]
    out = array
    for axis, (starts, (a, b)) in enumerate(zip(grid.starts, grid.box)):
        if len(starts) == b - a:
            continue  # one voxel a block
        out = np.maximum.reduceat(out, starts - a, axis=axis)
    return np.ascontiguousarray(out)


def _reduce_labels(crop: np.ndarray, components: Sequence[Mapping[str, Any]], grid: Grid) -> np.ndarray:
    """The component map on the crop (:meth:`ComponentMap.within`) reduced to ``grid``: each block keeps its
    component of the highest :data:`PRIORITY` (among equal ones, the last entry)."""
    if all(len(s) == b - a for s, (a, b) in zip(grid.starts, grid.box)):
        return np.ascontiguousarray(crop)
    priority = np.array([0] + [PRIORITY[c["outcome"]] for c in components], np.int32)
    key = priority[crop] * 65536 + crop.astype(np.int32)
    return (reduce_max(key, grid) & 0xFFFF).astype(np.uint16)


def _deflate(array: np.ndarray) -> bytes:
    return zlib.compress(np.ascontiguousarray(array).tobytes(), 6)


def decode(text: str, dtype: Any, shape: Sequence[int]) -> np.ndarray:
    """A volume as the page holds it (base64 of zlib of its C-order bytes, little-endian) read back.

    >>> v = np.arange(6, dtype=np.uint16).reshape(1, 2, 3)
    >>> np.array_equal(decode(base64.b64encode(zlib.compress(v.tobytes())).decode(), "<u2", (1, 2, 3)), v)
    True
    """
    raw = zlib.decompress(base64.b64decode(text))
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(tuple(shape))


def build_case(
    maps: Sequence[ComponentMap | None],
    shape: Sequence[int],
    affine: np.ndarray,
    spacing: Sequence[float],
    scan: _Picked | None,
    *,
    budget_bytes: int = BUDGET_BYTES,
) -> tuple[dict[str, Any], list[dict[str, Any] | None]]:
    """The page's data of one case: its volume (the scan, or none, and the grid) and each class's labels.

    ``shape``: the GT's. The crop is the picked scan's (the body and the labels), or without a scan the labels'
    box, plus the margin; reduced until the longest axis is at most :data:`MAX_AXIS` and the scan and the label
    maps compress to at most ``budget_bytes`` together (each try shrinks the volume ``SHRINK`` times per axis).

    Returns
    -------
    volume : dict
        ``shape`` (displayed voxels i, j, k), ``starts`` (per axis, the GT voxel each displayed voxel's block
        starts at), ``stops``, ``spacing_mm``, ``affine`` (the GT's voxel-to-RAS matrix, 4 x 4), ``scan`` (base64
        zlib uint8, or None), ``channel``, ``kind``, ``window`` (its text), ``low``, ``high``, ``bytes``.
    labels : list of dict or None
        Per class (None where ``maps`` has None): ``labels`` (base64 zlib of the component map, uint8 when 255
        entries or fewer, else little-endian uint16), ``dtype`` and ``components``.
    """
    if scan is not None:
        box = scan.box
    else:
        box = crop_box([label_box(maps)], shape, spacing)
    factor = 1.0
    while True:
        grid = choose_grid(box, spacing, factor)
        grey = _deflate(reduce_max(scan.grey, grid)) if scan is not None else None
        labels: list[tuple[bytes, str] | None] = []
        for m in maps:
            if m is None:
                labels.append(None)
                continue
            reduced = _reduce_labels(m.within(grid.box), m.components, grid)
            small = len(m.components) < 256
            labels.append((_deflate(reduced.astype(np.uint8 if small else "<u2")), "uint8" if small else "uint16"))
        total = (len(grey) if grey else 0) + sum(len(v[0]) for v in labels if v is not None)
        if total <= budget_bytes or max(grid.shape) <= 1:
            break
        factor = max(factor, max(b - a for a, b in box) / max(grid.shape)) * SHRINK
    volume = {
        "shape": list(grid.shape),
        "starts": [s.tolist() for s in grid.starts],
        "stops": [b for _, b in grid.box],
        "spacing_mm": list(grid.spacing_mm),
        "affine": np.asarray(affine, float).tolist(),
        "scan": base64.b64encode(grey).decode("ascii") if grey is not None else None,
        "channel": scan.label if scan is not None else None,
        "kind": scan.kind if scan is not None else None,
        "window": _window_text(scan) if scan is not None else None,
        "low": scan.window.low if scan is not None else None,
        "high": scan.window.high if scan is not None else None,
        "bytes": total,
    }
    out: list[dict[str, Any] | None] = []
    for m, v in zip(maps, labels):
        if m is None or v is None:
            out.append(None)
            continue
        out.append({"labels": base64.b64encode(v[0]).decode("ascii"), "dtype": v[1], "components": m.components})
    return volume, out


def _window_text(scan: _Picked) -> str:
    """``"SUV 0–10"`` for a PET's range, the window's text otherwise (``"L 40 W 400 HU"``)."""
    w = scan.window
    if scan.kind == "pet":
        return f"SUV {thumbnails.number_text(w.low)}–{thumbnails.number_text(w.high)}"
    return w.text


def legend() -> list[dict[str, Any]]:
    """The outcomes as the page's legend and script take them: code, name, colour, text, priority."""
    return [
        {"code": code, "name": name, "colour": colour, "text": text, "priority": PRIORITY[code]}
        for code, (name, colour, text) in OUTCOMES.items()
    ]


def json_text(value: Any) -> str:
    """JSON for a ``<script type="application/json">`` element: ``</`` written ``<\\/`` (never ends the element).

    >>> json_text({"a": "</script>"})
    '{"a":"<\\\\/script>"}'
    """
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


# ---------------------------------------------------------------- inline, or in a folder beside the page


def data_folder(out: os.PathLike) -> Path:
    """The folder beside the page ``out`` that holds its viewer data in the ``folder`` mode: ``report_files`` for
    ``report.html``.

    >>> data_folder("x/report.html").as_posix()
    'x/report_files'
    """
    out = Path(out)
    return out.with_name(out.stem + "_files")


def place_data(
    cases: Sequence[dict[str, Any]], out: os.PathLike, mode: str = "auto", *, limit_bytes: int = INLINE_LIMIT_BYTES
) -> str:
    """Put the cases' viewer data in the page (``inline``) or in files beside it (``folder``); returns the mode taken.

    ``auto`` (the default) is ``inline`` while the viewer data of every case take at most ``limit_bytes``
    (:data:`INLINE_LIMIT_BYTES`, 50 MB) and ``folder`` beyond. In the ``folder`` mode each case's data (its volume
    and the label maps of its classes) go into one script ``<page>_files/<anchor>.js`` (``data_folder``) that
    the page injects (``<script src>``) only when that case's viewer is opened: a script, not a ``fetch``, because
    a page opened from a file may not fetch files (Chromium), but may load scripts. It stores each JSON text in
    ``window.ccmetricsViewerFiles`` under its id, parsed only then. In the page there stays, per class, the
    ``-viewer-data`` element with ``{"src": "<page>_files/<anchor>.js"}``. The scripts a former page wrote into
    that folder are removed first (those whose first line is ``DATA_MARKER``: no other file is touched); the
    folder is not created in the ``inline`` mode.

    ``cases``: the model's (:func:`ccmetrics.report.build_model`), each with its ``viewer`` (None, or with
    ``volume_id``, ``volume_json`` (on the case's first class), ``data_json``), changed in place. Cost: one write
    of each case's data.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "report.html"
    >>> cases = [{"anchor": "case-a", "viewer": {"volume_id": "case-a-viewer-volume", "volume_json": '{"shape":[1]}',
    ...           "data_json": '{"labels":"","volume":"case-a-viewer-volume"}'}}, {"anchor": "case-b", "viewer": None}]
    >>> place_data(cases, out, "auto"), cases[0]["viewer"]["data_json"]
    ('inline', '{"labels":"","volume":"case-a-viewer-volume"}')
    >>> place_data(cases, out, "folder"), cases[0]["viewer"]["data_json"], cases[0]["viewer"]["volume_json"]
    ('folder', '{"src":"report_files/case-a.js"}', None)
    >>> print((out.parent / "report_files" / "case-a.js").read_text().splitlines()[2])
    f["case-a-viewer-volume"] = "{\\"shape\\":[1]}";
    """
    if mode not in VIEWER_DATA:
        raise ValueError(f"the viewer data go {mode!r}: say one of {', '.join(VIEWER_DATA)}")
    drawn = [c for c in cases if c.get("viewer")]
    if mode == "auto":
        size = sum(len(c["viewer"].get("volume_json") or "") + len(c["viewer"]["data_json"]) for c in drawn)
        mode = "inline" if size <= limit_bytes else "folder"
    if mode == "inline" or not drawn:
        return mode
    folder = data_folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.js"):
        if _ours(old):
            old.unlink()
    by_volume: dict[str, list[dict[str, Any]]] = {}
    for c in drawn:
        by_volume.setdefault(c["viewer"]["volume_id"], []).append(c)
    for number, (volume_id, group) in enumerate(by_volume.items(), start=1):
        first = group[0]["anchor"]
        name = f"{first}.js" if len(first) <= 200 else f"case{number:05d}.js"
        lines = [DATA_MARKER, "(function (f) {"]
        for c in group:
            v = c["viewer"]
            if v.get("volume_json"):
                lines.append(f"f[{_js_string(volume_id)}] = {_js_string(v['volume_json'])};")
            lines.append(f"f[{_js_string(c['anchor'])}] = {_js_string(v['data_json'])};")
        lines.append("}(window.ccmetricsViewerFiles = window.ccmetricsViewerFiles || {}));")
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        src = f"{quote(folder.name)}/{quote(name)}"
        for c in group:
            c["viewer"]["volume_json"] = None
            c["viewer"]["data_json"] = json_text({"src": src})
            c["viewer"]["src"] = src
    return "folder"


def _ours(path: Path) -> bool:
    """Whether a script was written by :func:`place_data` (its first line ``DATA_MARKER``)."""
    try:
        with path.open("rb") as f:
            return f.read(len(DATA_MARKER) + 1) == DATA_MARKER.encode() + b"\n"
    except OSError:
        return False


def _js_string(text: str) -> str:
    """A JavaScript string literal of ``text`` (JSON's, with U+2028 and U+2029 escaped as older engines need)."""
    return json.dumps(text).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
