"""The report's data: the result folder, the case ranking, and each case's lesions and false positives.

Nothing here draws or writes HTML. A result folder of ``ccmetrics evaluate`` is read with
:meth:`ccmetrics.campaign.dataset.DatasetResult.read` (tables), ``summary.json`` (counts, summary, options)
and ``plots/*.png``. Images are read again from the files named in ``per_case.csv`` only to find
what the tables do not hold: the false-positive components (prediction components that overlap no
GT voxel, labelled with :func:`ccmetrics.label_components` at the evaluation's connectivity) and the
Voronoi region each one falls in (the GT component whose region holds most of its voxels). Regions are
found voxel by voxel where needed (:class:`Regions`: the false positives' voxels and the thumbnails'
slices), with :func:`ccmetrics.engine.partition.assign_nearest`, which equals :func:`ccmetrics.voronoi_partition`
voxel for voxel, so no dense region map of a large image is ever built. A case evaluated without a prediction
file, on the segmentation of its probability map (``ccmetrics evaluate GT_DIR --probabilities PROB_DIR``), is
read as the evaluation read it: ``prob > 0.5`` of the map ``prob_file`` names (:func:`read_map_pair`), the
prediction's place taken by that segmentation.

The scans the thumbnails are drawn on (``ccmetrics report --images IMAGE_DIR``) are found here too:
:class:`ImageFolder` lists IMAGE_DIR once and gives each case its channels, nnU-Net's
``CASE_0000.nii.gz``, ``CASE_0001.nii.gz``, ... or the one file ``CASE.nii.gz``; :func:`read_channel`
reads one channel and checks it lies on the GT's voxel grid (:func:`ccmetrics.formats.io.check_same_geometry`,
the evaluation's tolerance). The caller reads one channel at a time, cuts the slices it needs and lets
the array go.

Where a component lies (:func:`position`): its centroid in patient coordinates, RAS+ mm, from the GT's affine
(:func:`ccmetrics.engine.geometry.patient_coordinates`, as ``per_prediction.csv``'s centroid columns), and the voxel
the thumbnail's planes go through, 0-based and counted from 1 (ITK-SNAP). A case's ``standard − CC`` difference is
undefined where either value is ∞ (:func:`with_differences`, :func:`undefined_difference`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import schema
from ..formats.io import Image
from ..metrics import registry
from ..metrics.aggregation import cc_values

if TYPE_CHECKING:
    from ..campaign.dataset import DatasetResult

__all__ = [
    "CaseImages",
    "Channel",
    "ChannelFile",
    "Component",
    "ImageFolder",
    "Position",
    "Regions",
    "ResultFolder",
    "find_components",
    "label",
    "load_case",
    "masks_of",
    "position",
    "primary_metric",
    "read_channel",
    "read_map_pair",
    "read_pair",
    "read_result_folder",
    "resolve_image",
    "undefined_difference",
    "voxel_ml",
    "with_differences",
    "worst_first",
]


def label(metric: str, columns: dict[str, registry.Column] | None = None) -> str:
    """Display name of a metric or score (:func:`ccmetrics.metrics.registry.display_name`; ``columns``: a folder's
    facts).

    >>> label("hd95"), label("cc_dice"), label("custom")
    ('HD95', 'CC-Dice', 'custom')
    """
    return registry.display_name(metric, columns)


@dataclass
class ResultFolder:
    """What ``ccmetrics evaluate`` wrote into a folder.

    Attributes
    ----------
    path : Path
    result : ccmetrics.DatasetResult
        The tables and the facts of their columns, as :meth:`ccmetrics.DatasetResult.read` gives them.
    doc : dict
        ``summary.json`` (``counts``, ``summary``, ``empty_gt``, ``errors``, ``ignored_files``, ``options``,
        ``columns``).
    plots : list of Path
        ``plots/*.png``, sorted.
    """

    path: Path
    result: DatasetResult
    doc: dict[str, Any]
    plots: list[Path]

    @property
    def per_case(self) -> pd.DataFrame:
        """The ``per_case`` table (see :mod:`ccmetrics.schema`)."""
        return self.result.per_case

    @property
    def per_component(self) -> pd.DataFrame:
        """The ``per_component`` table (see :mod:`ccmetrics.schema`)."""
        return self.result.per_component

    @property
    def columns(self) -> dict[str, registry.Column]:
        """The facts of the metric columns (``DatasetResult.columns``)."""
        return self.result.columns

    @property
    def options(self) -> dict[str, Any]:
        return self.doc.get("options", {})

    @property
    def case_metrics(self) -> list[str]:
        """Metrics with a global and a CC value per case (``m`` and ``cc_m`` in ``per_case``)."""
        return self.result.cc_metrics

    @property
    def component_metrics(self) -> list[str]:
        """Metrics with a value per lesion (columns of ``per_component``)."""
        return [m for m in self.case_metrics if m in self.per_component]

    @property
    def case_scores(self) -> list[str]:
        """Case-level scores present in ``per_case`` (detection, PQ, Lesion Dice), in the registry's order."""
        return self.result.case_level_columns

    def is_distance(self, metric: str) -> bool:
        """Whether a metric is a distance (lower is better; a missing value counts as the worst distance)."""
        return registry.is_distance(metric, self.columns)

    def label(self, metric: str) -> str:
        """Display name of a metric or score by the folder's facts (also for metrics not registered here)."""
        return label(metric, self.columns)

    @property
    def binary(self) -> bool:
        """True when the evaluation read binary masks (no ``--classes``)."""
        return not self.options.get("classes")

    def class_labels(self, value: int) -> tuple[int, ...]:
        """The labels whose union is class ``value`` (one label, or a region's labels)."""
        for c in self.options.get("classes") or []:
            if isinstance(c, dict) and int(c["value"]) == int(value):
                return tuple(int(v) for v in c["labels"])
        return (int(value),)  # folders written before named classes: the class is its label


def read_result_folder(result_dir: os.PathLike) -> ResultFolder:
    """Read the output folder of ``ccmetrics evaluate``.

    Raises
    ------
    FileNotFoundError
        The folder holds no ``per_case.csv``.
    """
    from ..campaign.dataset import DatasetResult

    path = Path(result_dir)
    result = DatasetResult.read(path)
    doc = {"options": result.options, **result.saved}
    if "counts" not in doc:
        doc["counts"] = result.counts()
    plots = sorted((path / "plots").glob("*.png")) if (path / "plots").is_dir() else []
    return ResultFolder(path, result, doc, plots)


# ---------------------------------------------------------------- ranking


def primary_metric(metrics: Sequence[str], columns: dict[str, registry.Column] | None = None) -> str | None:
    """The metric the cases are ranked by: Dice if evaluated, else the first overlap metric, else the first.

    >>> primary_metric(["hd95", "nsd"]), primary_metric(["hd95"]), primary_metric([])
    ('nsd', 'hd95', None)
    """
    for m in ["dice"] + [m for m in metrics if not registry.is_distance(m, columns)] + list(metrics):
        if m in metrics:
            return m
    return None


def with_differences(per_case: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """``per_case`` plus ``delta_m = m - cc_m`` for each metric; NaN (shown as ``–``) where either value is not a
    finite number.

    A positive Dice difference means the global Dice looks better than the average lesion: it hides
    missed or poorly segmented small lesions. For distances a negative difference means the same.

    A distance of ∞ (the GT or the prediction is empty: no surface to measure from) has no difference with a
    number: ∞ minus a number is no measure of what the global value hides, and counting the ∞ as the case's
    worst distance, as the means do, would show a difference of 0 between "∞" and the worst distance that the CC
    value also is when every lesion is missed. So the difference is left undefined (NaN) and the page says why
    (:func:`undefined_difference`).

    Examples
    --------
    >>> t = pd.DataFrame({"dice": [0.9, 0.0], "cc_dice": [0.5, 0.0], "hd95": [30.0, float("inf")],
    ...                   "cc_hd95": [40.0, 100.0], "worst_distance": [100.0, 100.0]})
    >>> with_differences(t, ["dice", "hd95"])[["delta_dice", "delta_hd95"]].round(3).values.tolist()
    [[0.4, -10.0], [0.0, nan]]
    """
    out = per_case.copy()
    for m in metrics:
        standard, cc = (pd.to_numeric(out[c], errors="coerce").to_numpy(float) for c in (m, schema.cc(m)))
        defined = np.isfinite(standard) & np.isfinite(cc)
        out[f"delta_{m}"] = np.where(defined, standard - cc, np.nan)
    return out


def undefined_difference(standard: Any, cc: Any, name: str, worst: Any = None, unit: str = "mm") -> str | None:
    """Why a case's difference ``standard - cc`` of the metric called ``name`` is not shown (one of them is ∞), or
    None when it is shown or simply missing. ``worst``: the case's worst distance (in ``unit``), named in the text.

    >>> text = undefined_difference(float("inf"), 307.34996, "HD95", 307.34996)
    >>> text.split(": ")[0]
    'HD95 is ∞ (the GT or the prediction is empty'
    >>> text.split(". ")[1]
    "In the data-set means this ∞ counts as the case's worst distance, 307.3 mm."
    >>> undefined_difference(2.0, 3.0, "HD95") is None, undefined_difference(None, 3.0, "HD95")
    (True, None)
    """
    values = []
    for v in (standard, cc):
        try:
            values.append(float(v))
        except (TypeError, ValueError):
            return None
    infinite = [label for label, v in zip((name, f"CC-{name}"), values) if math.isinf(v)]
    if not infinite:
        return None
    verb = "is" if len(infinite) == 1 else "are"
    text = (
        f"{' and '.join(infinite)} {verb} ∞ (the GT or the prediction is empty: no surface to measure from), and ∞ "
        "minus a number is no number: no difference is shown. In the data-set means this ∞ counts as the case's "
        "worst distance"
    )
    try:
        worst_value = float(worst)
    except (TypeError, ValueError):
        worst_value = math.nan
    return text + (f", {worst_value:.4g} {unit}." if math.isfinite(worst_value) else ".")


def worst_first(
    per_case: pd.DataFrame, metric: str | None, columns: dict[str, registry.Column] | None = None
) -> list[int]:
    """Row positions of the evaluated cases, the worst CC value of ``metric`` first.

    Ties (and cases without a value) are ordered by the size of the difference ``|m - cc_m|``,
    largest first; error rows are left out.
    """
    ok = per_case[per_case[schema.STATUS] != schema.FAILED]
    position = {label: i for i, label in enumerate(per_case.index)}
    if metric is None or schema.cc(metric) not in ok:
        return [position[label] for label in ok.index]
    worst = ok[schema.WORST_DISTANCE] if schema.WORST_DISTANCE in ok else np.nan
    distance = registry.is_distance(metric, columns)
    cc = cc_values(ok[schema.cc(metric)], metric, worst, columns)
    badness = cc if distance else -cc
    gap = np.abs(ok[f"delta_{metric}"].to_numpy(float)) if f"delta_{metric}" in ok else np.zeros(len(ok))
    order = np.lexsort((np.nan_to_num(-gap, nan=0.0), np.nan_to_num(-badness, nan=np.inf)))
    return [position[ok.index[i]] for i in order]


# ---------------------------------------------------------------- images


def resolve_image(name: Any, result_dir: Path, image_root: os.PathLike | None = None) -> Path | None:
    """The file a ``gt_file``/``pred_file`` entry names, or None when it cannot be found.

    A relative path is looked up under ``image_root`` when given, else under the current folder,
    the result folder and its parent (``ccmetrics evaluate`` writes the paths as it was given them).
    """
    if not isinstance(name, str) or not name or name == "<array>":
        return None
    path = Path(name)
    if path.is_absolute():
        return path if path.is_file() else None
    bases = [Path(image_root)] if image_root is not None else [Path.cwd(), result_dir, result_dir.parent]
    return next((b / path for b in bases if (b / path).is_file()), None)


@dataclass
class Component:
    """A connected component of one case: a GT lesion or a false-positive prediction component.

    Attributes
    ----------
    kind : str
        ``"lesion"`` or ``"false_positive"``.
    label : int
        Its number: the GT component number of ``per_component.csv``, or the false positive's number
        among the prediction components (raster order of :func:`ccmetrics.label_components`).
    voxels : int
        Volume in voxels.
    centroid : tuple of float
        Mean voxel index.
    bbox : tuple of (start, stop)
        Bounding box, stop exclusive.
    region : int
        GT component whose Voronoi region holds it (a lesion: itself; a false positive: the region
        holding most of its voxels, ties to the lowest number; 0 without GT).
    """

    kind: str
    label: int
    voxels: int
    centroid: tuple[float, ...]
    bbox: tuple[tuple[int, int], ...]
    region: int

    def extent_mm(self, spacing: Sequence[float]) -> float:
        """Largest side of the bounding box in mm."""
        return max((stop - start) * float(s) for (start, stop), s in zip(self.bbox, spacing))

    @property
    def center(self) -> tuple[int, ...]:
        """The voxel the thumbnail's planes go through: the centroid rounded to the nearest voxel (halves up).

        >>> Component("lesion", 1, 2, (3.5, 0.49), ((3, 5), (0, 1)), 1).center
        (4, 0)
        """
        return tuple(int(math.floor(x + 0.5)) for x in self.centroid)


#: what the page calls an array axis (``array[i, j, k]``, nibabel's and ITK's index order)
AXES = "ijk"


@dataclass(frozen=True)
class Position:
    """Where a component lies, in the numbers a viewer shows.

    Attributes
    ----------
    voxel : tuple of int
        The centroid rounded to the nearest voxel (:attr:`Component.center`): the voxel the thumbnail's planes go
        through, as 0-based indices ``(i, j, k)`` of the GT's voxel grid (``array[i, j, k]`` of nibabel; the index
        order of ITK and SimpleITK's ``GetPixel``; 3D Slicer's Data Probe shows these 0-based IJK).
    mm : tuple of float or None
        The centroid (unrounded) in patient coordinates, RAS+ mm (x grows to the patient's right, y to anterior,
        z to superior; nibabel's and 3D Slicer's convention), exactly as ``per_prediction.csv``'s ``centroid_x_mm``,
        ``centroid_y_mm``, ``centroid_z_mm`` (:func:`ccmetrics.engine.geometry.patient_coordinates`); two values for a
        2D image; None without the image's affine.

    Examples
    --------
    >>> p = position(Component("lesion", 1, 2, (16.25, 57.0, 40.5), ((16, 17), (57, 58), (40, 42)), 1),
    ...              np.array([[-2.0, 0, 0, 90], [0, 2.0, 0, -130], [0, 0, 3.0, -72], [0, 0, 0, 1]]))
    >>> p.voxel, p.one_based, p.mm
    ((16, 57, 41), (17, 58, 42), (57.5, -16.0, 49.5))
    >>> p.voxel_text, p.mm_text
    ('i 16, j 57, k 41', 'x 57.5, y −16.0, z 49.5 mm')
    """

    voxel: tuple[int, ...]
    mm: tuple[float, ...] | None

    @property
    def one_based(self) -> tuple[int, ...]:
        """The voxel counted from 1, as ITK-SNAP's Cursor Inspector shows it (its index plus one)."""
        return tuple(v + 1 for v in self.voxel)

    @property
    def voxel_text(self) -> str:
        """``"i 16, j 57, k 41"``: the 0-based voxel, axis by axis."""
        return ", ".join(f"{AXES[a]} {v}" for a, v in enumerate(self.voxel))

    @property
    def one_based_text(self) -> str:
        """``"17, 58, 42"``: the voxel counted from 1 (ITK-SNAP)."""
        return ", ".join(str(v) for v in self.one_based)

    @property
    def mm_text(self) -> str | None:
        """``"x −12.3, y 45.6, z 78.9 mm"`` (0.1 mm, a true minus sign), None without the affine."""
        if self.mm is None:
            return None
        values = ", ".join(f"{name} {_mm(v)}" for name, v in zip("xyz", self.mm))
        return values + " mm"


def _mm(value: float) -> str:
    """A coordinate in mm to 0.1 mm, with a minus sign (never ``−0.0``).

    >>> _mm(-12.345), _mm(-0.04), _mm(3.0)
    ('−12.3', '0.0', '3.0')
    """
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text.replace("-", "−")


def position(component: Component, affine: np.ndarray | None) -> Position:
    """The :class:`Position` of a component of an image whose voxel-to-RAS matrix is ``affine``.

    ``affine`` is the ``(ndim + 1)`` square matrix of :class:`ccmetrics.formats.image.Image` (None: no mm).
    """
    from ..engine.geometry import patient_coordinates

    mm = None
    if affine is not None:
        ndim = len(component.centroid)
        mm = tuple(float(v) for v in patient_coordinates(np.array([component.centroid]), affine)[0][:ndim])
    return Position(component.center, mm)


class Regions:
    """The Voronoi region of any voxel on demand, without the dense map.

    A voxel of a GT component belongs to that component; any other voxel gets the component with
    the nearest surface voxel, exact ties to the lowest number: :func:`ccmetrics.engine.partition.assign_nearest`,
    equal voxel for voxel to :func:`ccmetrics.voronoi_partition` (about 1-2 µs per voxel asked for,
    after one pass over the GT surface).

    Parameters
    ----------
    gt_labels : ndarray of int
        GT components numbered 1..n.
    spacing : sequence of float, optional
        Voxel size (the evaluation's; None: voxel units).

    Examples
    --------
    >>> gt_labels = np.array([[1, 0, 0, 0, 2, 2]])
    >>> Regions(gt_labels)(np.argwhere(np.ones((1, 6), bool))).tolist()
    [1, 1, 1, 2, 2, 2]
    """

    def __init__(self, gt_labels: np.ndarray, spacing: Sequence[float] | None = None):
        self.gt_labels = gt_labels
        self.spacing = spacing
        self.n = int(gt_labels.max()) if gt_labels.size else 0
        self._surface = None

    def _surfaces(self):
        if self._surface is None:  # on first use: one pass over the GT
            from ..engine.components import find_sites
            from ..engine.partition import site_surfaces

            sites = find_sites(self.gt_labels, "labels")  # labels 1..n: numbered as they are
            self._surface = site_surfaces(sites)
        return self._surface

    def __call__(self, coords: np.ndarray) -> np.ndarray:
        """Region labels (int32, 0 without GT) of voxels ``coords`` (shape (N, ndim), inside the image)."""
        from ..engine.partition import assign_nearest

        coords = np.asarray(coords, dtype=np.int64).reshape(-1, self.gt_labels.ndim)
        labels = self.gt_labels[tuple(coords.T)].astype(np.int32)
        outside = labels == 0
        if self.n and outside.any():
            surface_coords, surface_labels = self._surfaces()
            labels[outside] = assign_nearest(coords[outside], surface_coords, surface_labels, self.spacing)
        return labels


@dataclass
class CaseImages:
    """The masks of one case and its components.

    Attributes
    ----------
    gt, pred : ndarray of bool
    regions : Regions
        The Voronoi region of any voxel (``regions.gt_labels``: GT components numbered as in
        ``per_component.csv``).
    spacing : tuple of float
        Voxel size from the GT header (mm), for drawing.
    lesions, false_positives : list of Component
    affine : ndarray or None
        The GT file's voxel-to-world matrix (the ``affine`` of :class:`ccmetrics.formats.image.Image`): an image
        drawn under the masks must have the same (:func:`read_channel`).
    affine_3d : ndarray or None
        A 2D GT's full 4 x 4 affine, which places its plane in 3D (``Image.affine_3d``): a scan in another plane, or
        in a parallel one, is not drawn under it.
    """

    gt: np.ndarray
    pred: np.ndarray
    regions: Regions
    spacing: tuple[float, ...]
    lesions: list[Component] = field(default_factory=list)
    false_positives: list[Component] = field(default_factory=list)
    affine: np.ndarray | None = None
    affine_3d: np.ndarray | None = None

    def grid(self) -> Image:
        """The GT's voxel grid (shape, spacing, affine) as an :class:`ccmetrics.formats.image.Image` holding no voxels
        (a read-only zero-stride array): what :func:`read_channel` checks a scan against, kept without the masks.

        >>> gt = np.zeros((4, 4, 2), bool)
        >>> grid = CaseImages(gt, gt, Regions(gt.astype(int)), (1.0, 1.0, 2.0)).grid()
        >>> grid.array.shape, grid.spacing, grid.affine.diagonal().tolist(), grid.array.strides
        ((4, 4, 2), (1.0, 1.0, 2.0), [1.0, 1.0, 2.0, 1.0], (0, 0, 0))
        """
        affine = self.affine if self.affine is not None else np.diag(tuple(self.spacing) + (1.0,))
        array = np.broadcast_to(np.zeros((), np.uint8), self.gt.shape)
        return Image(array, tuple(self.spacing), affine, None, self.affine_3d)


def _components(labels: np.ndarray, n: int, kind: str, keep=None, regions=None) -> list[Component]:
    from scipy import ndimage

    found = []
    for k, box in enumerate(ndimage.find_objects(labels, max_label=n), start=1):
        if box is None or (keep is not None and k not in keep):
            continue
        where = np.nonzero(labels[box] == k)
        centroid = tuple(float(w.mean() + s.start) for w, s in zip(where, box))
        found.append(
            Component(
                kind,
                k,
                int(where[0].size),
                centroid,
                tuple((s.start, s.stop) for s in box),
                k if regions is None else int(regions.get(k, 0)),
            )
        )
    return found


def find_components(
    gt: np.ndarray,
    pred: np.ndarray,
    spacing: Sequence[float] | None = None,
    connectivity: int | None = None,
    false_positives: Sequence[int] | None = None,
) -> tuple[Regions, list[Component], list[Component]]:
    """The GT components and the false-positive prediction components of one case.

    Parameters
    ----------
    gt, pred : ndarray of bool
    spacing : sequence of float, optional
        The evaluation's spacing (distances of the Voronoi partition), None for voxel units.
    connectivity : int, optional
        The evaluation's connectivity (26 / 8 by default), used for both masks.
    false_positives : sequence of int, optional
        The prediction components (numbered 1..M in raster order, as ``per_prediction.csv``) that are
        false positives under the evaluation's detection rule; default: those overlapping no GT voxel
        (the ``overlap`` rule).

    Returns
    -------
    regions : Regions
        The GT components (``regions.gt_labels``) and the region of any voxel.
    lesions : list of Component
    false_positives : list of Component
        The false-positive prediction components, each with the region it falls in.

    Examples
    --------
    >>> gt = np.zeros((12, 12), bool); gt[1:3, 1:3] = True; gt[9:11, 9:11] = True
    >>> pred = np.zeros_like(gt); pred[1:3, 1:3] = True; pred[9:11, 4:6] = True
    >>> _, lesions, fps = find_components(gt, pred)
    >>> [(c.label, c.voxels) for c in lesions], [(c.label, c.voxels, c.region) for c in fps]
    ([(1, 4), (2, 4)], [(2, 4, 2)])
    """
    from ..engine.components import label_components

    gt_labels, n_gt = label_components(gt, connectivity)
    pred_labels, n_pred = label_components(pred, connectivity)
    if false_positives is None:
        overlapping = np.bincount(pred_labels[gt], minlength=n_pred + 1)
        fp_labels = [k for k in range(1, n_pred + 1) if overlapping[k] == 0]
    else:
        fp_labels = sorted(int(k) for k in false_positives)
        if fp_labels and (fp_labels[0] < 1 or fp_labels[-1] > n_pred):
            raise ValueError(
                f"per_prediction.csv names prediction component {fp_labels[-1]}, but the file holds {n_pred}: "
                "was the prediction changed after the evaluation?"
            )
    regions = Regions(gt_labels, spacing)
    owner_region: dict[int, int] = {}
    if fp_labels and n_gt:
        is_fp = np.zeros(n_pred + 1, bool)
        is_fp[fp_labels] = True
        query = np.argwhere(is_fp[pred_labels])
        assigned = regions(query)
        owner = pred_labels[tuple(query.T)]
        for k in fp_labels:
            owner_region[k] = int(np.argmax(np.bincount(assigned[owner == k])))  # most voxels; ties: lowest
    lesions = _components(gt_labels, n_gt, "lesion")
    fps = _components(pred_labels, n_pred, "false_positive", keep=set(fp_labels), regions=owner_region)
    return regions, lesions, fps


def masks_of(array: np.ndarray, class_value: int | Sequence[int] | None) -> np.ndarray:
    """The mask evaluated: ``array == class_value`` for label maps (the union of a region's labels when
    a sequence), ``array != 0`` for binary masks."""
    if class_value is None:
        return array != 0
    if isinstance(class_value, (int, np.integer)):
        return array == class_value
    return np.isin(array, list(class_value))


def load_case(
    gt_file: Path | None,
    pred_file: Path | None,
    *,
    class_value: int | Sequence[int] | None = None,
    spacing: Any = "header",
    connectivity: int | None = None,
    ignore_label: int | None = None,
    false_positives: Sequence[int] | None = None,
    reference_images: Any = None,
    tolerance_mm: float = 1e-3,
    pair: tuple[Image, np.ndarray] | None = None,
) -> CaseImages:
    """Read one case's files, on one grid as the evaluation put them, and find its components.

    Parameters
    ----------
    gt_file : Path
    pred_file : Path or None
        None: the prediction is missing (evaluated as empty).
    class_value : int or sequence of int, optional
        The label of a label map, or a region's labels (evaluations with ``--classes``); None for
        binary masks.
    spacing : "header", "voxel" or sequence of float
        The evaluation's ``spacing`` option (for the Voronoi distances).
    connectivity : int, optional
    ignore_label : int, optional
        The evaluation's ignore label: its GT voxels become background in both masks first.
    false_positives : sequence of int, optional
        The false-positive prediction components under the evaluation's rule (:func:`find_components`).
    reference_images, tolerance_mm
        The evaluation's ``reference_images`` and ``tolerance_mm``: a DICOM SEG is reoriented or placed on
        the common grid by :func:`ccmetrics.formats.grids.align_pair`, as the evaluation did.
    pair : (Image, ndarray), optional
        The two files already read by :func:`read_pair` (one read for every class of a case); the files
        are then not read again.

    Raises
    ------
    OSError, ValueError
        A file cannot be read, or the two images are not on one grid.
    """
    from ..metrics.classes import remove_ignored

    if pair is None:
        pair = read_pair(gt_file, pred_file, reference_images=reference_images, tolerance_mm=tolerance_mm)
    gt_image, pred_array = pair
    gt_array, pred_array, _ = remove_ignored(gt_image.array, pred_array, ignore_label)
    gt, pred = masks_of(gt_array, class_value), masks_of(pred_array, class_value)
    header = tuple(float(s) for s in gt_image.spacing)
    metric_spacing = header if spacing == "header" else None if spacing == "voxel" else tuple(spacing)
    regions, lesions, fps = find_components(gt, pred, metric_spacing, connectivity, false_positives)
    affine = np.array(gt_image.affine, dtype=float)
    return CaseImages(gt, pred, regions, header, lesions, fps, affine, gt_image.affine_3d)


def read_pair(
    gt_file: Path | None, pred_file: Path | None, *, reference_images: Any = None, tolerance_mm: float = 1e-3
) -> tuple[Image, np.ndarray]:
    """A case's GT image and prediction array on one grid, as the evaluation put them
    (:func:`ccmetrics.formats.grids.align_pair`); a missing prediction (``pred_file`` None) is all zeros.

    Raises
    ------
    OSError, ValueError
        A file cannot be read, or the two images are not on one grid.
    """
    from ..formats.grids import align_pair
    from ..formats.io import load_image

    read = None if pred_file is None else load_image(pred_file)
    gt_image, read, _ = align_pair(load_image(gt_file), read, reference=reference_images, atol_mm=tolerance_mm)
    return gt_image, (np.zeros_like(gt_image.array) if read is None else read.array)


def read_map_pair(
    gt_file: Path | None,
    prob_file: Path,
    *,
    channel: int | None = None,
    reference_images: Any = None,
    tolerance_mm: float = 1e-3,
) -> tuple[Image, np.ndarray]:
    """A case's GT image and the segmentation of its probability map, ``prob > 0.5``
    (:data:`ccmetrics.campaign.probabilities.SEGMENTATION_THRESHOLD`), as the evaluation made it when no
    prediction was given (``ccmetrics evaluate GT_DIR --probabilities PROB_DIR``): the GT put on its grid as
    :func:`read_pair` puts it, the map read once on that grid
    (:func:`ccmetrics.formats.probabilities.read_probabilities`, ``like`` the GT, the run's ``channel``) and let go
    once compared: what is kept is the boolean segmentation, as a prediction file's array would be.

    Raises
    ------
    ccmetrics.formats.probabilities.ProbabilityError
        The map cannot be read or used (missing, another grid, values outside [0, 1], a channel missing): the
        message names the file.
    OSError, ValueError
        The GT cannot be read.

    Examples
    --------
    >>> import tempfile
    >>> from ccmetrics.formats.io import save_image
    >>> folder = Path(tempfile.mkdtemp())
    >>> save_image(folder / "gt.nii.gz", np.zeros((4, 1, 1), np.uint8))
    >>> save_image(folder / "prob.nii.gz", np.array([0.2, 0.5, 0.51, 1.0], np.float32).reshape(4, 1, 1))
    >>> gt, seg = read_map_pair(folder / "gt.nii.gz", folder / "prob.nii.gz")
    >>> seg.ravel().tolist()
    [False, False, True, True]
    """
    from ..campaign.probabilities import SEGMENTATION_THRESHOLD
    from ..formats.grids import align_pair
    from ..formats.io import load_image
    from ..formats.probabilities import ProbabilityError, read_probabilities

    gt_image, _, _ = align_pair(load_image(gt_file), None, reference=reference_images, atol_mm=tolerance_mm)
    try:
        prob = read_probabilities(prob_file, like=gt_image, channel=channel, tolerance_mm=tolerance_mm)
    except ProbabilityError:
        raise
    except (OSError, ValueError) as exc:  # whatever else reading it raised is the map's problem too
        raise ProbabilityError(f"{os.fspath(prob_file)!r}: {exc}") from exc
    return gt_image, np.greater(prob.array, SEGMENTATION_THRESHOLD)


# ---------------------------------------------------------------- the scans under the masks

#: nnU-Net's channel suffix of an image file name: ``CASE_0000``, ``CASE_0001``, ...
CHANNEL = re.compile(r"^(?P<case>.+)_(?P<code>\d{4})$")


@dataclass(frozen=True)
class ChannelFile:
    """One channel of a case's scan.

    Attributes
    ----------
    code : str
        nnU-Net's channel number, ``"0000"``, ``"0001"``, ..., or ``""`` for a file named by the case id
        alone (one channel).
    path : Path
    """

    code: str
    path: Path

    def label(self, names: Sequence[str] | None = None) -> str:
        """What the page calls the channel: ``names[int(code)]`` when given (a file named by the case id:
        ``names[0]``), else the code (``"image"`` for a file named by the case id).

        >>> pet = ChannelFile("0001", Path("a_0001.nii.gz"))
        >>> pet.label(), pet.label(["CT", "PET"])
        ('0001', 'PET')
        >>> ChannelFile("", Path("a.nii.gz")).label()
        'image'
        """
        number = int(self.code) if self.code else 0
        if names and number < len(names) and names[number]:
            return str(names[number])
        return self.code or "image"


@dataclass
class ImageFolder:
    """The scans of a data set: a folder listed once, each case's channels looked up by name.

    A case ``CASE`` has the channels ``CASE_0000``, ``CASE_0001``, ... (nnU-Net's ``imagesTr``
    naming, one file per channel such as CT and PET), or, when there is none, the one channel
    ``CASE``; each with any extension of :data:`ccmetrics.formats.io.IMAGE_EXTENSIONS` but ``.dcm`` (the name
    without it is :func:`ccmetrics.formats.io.image_id`), or a sub-folder of that name holding a DICOM image
    series (:func:`ccmetrics.formats.dicom.read_series`). Other sub-folders are not searched.

    Attributes
    ----------
    path : Path
    files : dict of str to list of Path
        Image id (file name without extension) to the files of that id.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for name in ["a_0000.nii.gz", "a_0001.nii.gz", "b.mha", "notes.txt"]:
    ...     _ = (folder / name).write_bytes(b"")
    >>> images = ImageFolder.scan(folder)
    >>> [(c.code, c.path.name) for c in images.channels("a")], [c.path.name for c in images.channels("b")]
    ([('0000', 'a_0000.nii.gz'), ('0001', 'a_0001.nii.gz')], ['b.mha'])
    >>> images.channels("c")
    []
    """

    path: Path
    files: dict[str, list[Path]]

    @classmethod
    def scan(cls, path: os.PathLike) -> ImageFolder:
        """List the image files of ``path``.

        Raises
        ------
        FileNotFoundError
            ``path`` is not a folder.
        ValueError
            It holds no image file.
        """
        from ..formats.io import image_id, is_image_file

        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"images: no such folder {str(folder)!r}; give the folder that holds the scans, one file per "
                "case and channel (nnU-Net's CASE_0000.nii.gz, CASE_0001.nii.gz, ..., or CASE.nii.gz)"
            )
        from ..formats.dicom import holds_dicom

        files: dict[str, list[Path]] = {}
        for entry in sorted(folder.iterdir()):
            if entry.is_file() and is_image_file(entry) and not entry.name.lower().endswith(".dcm"):
                files.setdefault(image_id(entry), []).append(entry)
            elif entry.is_dir() and not entry.name.startswith(".") and holds_dicom(entry):  # a DICOM series
                files.setdefault(entry.name, []).append(entry)
        if not files:
            raise ValueError(
                f"images: {str(folder)!r} holds no image file (names ending in one of "
                f"{', '.join(_image_extensions())}); give the folder of the scans"
            )
        return cls(folder, files)

    def channels(self, case: str) -> list[ChannelFile]:
        """The channels of ``case``, in the order of their numbers; empty when none is found.

        Raises
        ------
        ValueError
            A channel has several files (``CASE_0000.nii.gz`` and ``CASE_0000.mha``): which one is meant?
        """
        numbered = sorted(
            (match["code"], paths)
            for name, paths in self.files.items()
            if (match := CHANNEL.match(name)) is not None and match["case"] == case
        )
        if not numbered and case in self.files:
            numbered = [("", self.files[case])]
        for _, paths in numbered:
            if len(paths) > 1:
                names = ", ".join(p.name for p in paths)
                raise ValueError(f"several files for one channel: {names}; keep one of them in {self.path}")
        return [ChannelFile(code, paths[0]) for code, paths in numbered]

    def expected(self, case: str) -> str:
        """The names looked for, for a message.

        >>> ImageFolder(Path("images"), {}).expected("a")
        'a_0000.nii.gz, a_0001.nii.gz, ... or a.nii.gz'
        """
        return f"{case}_0000.nii.gz, {case}_0001.nii.gz, ... or {case}.nii.gz"


def _image_extensions() -> tuple[str, ...]:
    from ..formats.io import IMAGE_EXTENSIONS

    return IMAGE_EXTENSIONS


@dataclass
class Channel:
    """One channel of a case's scan, read and checked against the GT's voxel grid.

    Attributes
    ----------
    label : str
        What the page calls it (:meth:`ChannelFile.label`).
    array : ndarray
        The voxels, as :func:`ccmetrics.formats.io.load_image` reads them (shape of the GT).
    minimum : float
        The smallest value of the whole channel (NaN ignored): a CT holds air, about -1000 HU
        (:func:`ccmetrics.report.thumbnails.choose_window`).
    """

    label: str
    array: np.ndarray
    minimum: float


def read_channel(
    file: ChannelFile,
    images: CaseImages | Image,
    *,
    label: str | None = None,
    tolerance_mm: float = 1e-3,
    max_bytes: float | None = None,
) -> tuple[Channel | None, str | None]:
    """Read one channel of a case's scan if it lies on the GT's voxel grid: the grid and the memory it needs are
    checked from its header first (:func:`ccmetrics.formats.io.read_grid`; a DICOM series:
    :func:`ccmetrics.formats.dicom.series_grid`), so a scan on another grid or too large costs its header only.

    Parameters
    ----------
    file : ChannelFile
    images : CaseImages or Image
        The case's masks, with the GT's ``spacing`` and ``affine``, or their grid alone
        (:meth:`CaseImages.grid`).
    label : str, optional
        The channel's name in messages (default: :meth:`ChannelFile.label`).
    tolerance_mm : float
        Tolerance on the origin (the evaluation's ``tolerance_mm``); spacing and direction as
        :func:`ccmetrics.formats.io.check_same_geometry` checks them for a prediction.
    max_bytes : float, optional
        The most memory reading the channel may take (its array, the reader's copies and a reoriented copy);
        default :data:`ccmetrics.engine.memory.DEFAULT_MEMORY_FRACTION` of the memory available now.

    Returns
    -------
    channel : Channel or None
        None when the file cannot be read or lies on another grid: it must not be drawn.
    problem : str or None
        Why not, naming the channel: ``"channel 0001: shape differs: gt (96, 96, 48), image (48, 48, 48)"``;
        shape, spacing, origin or direction, with both values.

    Examples
    --------
    >>> import tempfile
    >>> from ccmetrics.formats.io import save_image
    >>> folder = Path(tempfile.mkdtemp())
    >>> save_image(folder / "a_0000.nii.gz", np.full((4, 4, 2), -1000, np.int16), spacing=(1.0, 1.0, 2.0))
    >>> gt = np.zeros((4, 4, 2), bool)
    >>> case = CaseImages(gt, gt, Regions(gt.astype(int)), (1.0, 1.0, 2.0), affine=np.diag([1.0, 1.0, 2.0, 1.0]))
    >>> channel, problem = read_channel(ImageFolder.scan(folder).channels("a")[0], case)
    >>> channel.label, channel.array.shape, channel.minimum, problem
    ('0000', (4, 4, 2), -1000.0, None)
    >>> case.affine[2, 3] = 6.0  # the GT starts two slices further: the scan is not drawn
    >>> read_channel(ImageFolder.scan(folder).channels("a")[0], case)
    (None, 'channel 0000: origin differs: gt (0.0, 0.0, 6.0) mm, image (0.0, 0.0, 0.0) mm')
    """
    from ..formats.dicom import read_series
    from ..formats.grids import on_grid
    from ..formats.io import check_same_geometry, load_image

    name = file.label() if label is None else label
    reference = images.grid() if isinstance(images, CaseImages) else images
    refused = _scan_refused(file, reference, name, tolerance_mm, max_bytes)
    if refused:
        return None, refused
    try:
        image = read_series(file.path) if file.path.is_dir() else load_image(file.path)
    except (OSError, ValueError) as exc:
        return None, f"channel {name}: cannot read {file.path.name}: {exc}"
    problem = check_same_geometry(reference, image, atol_mm=tolerance_mm, names=("gt", "image"))
    if problem:  # the same grid in another axis order (a DICOM series beside a NIfTI GT) is reoriented
        try:
            image = on_grid(image, reference, atol_mm=tolerance_mm)
        except ValueError:
            return None, f"channel {name}: {problem}"
    array = image.array
    minimum = float(np.nanmin(array)) if array.dtype.kind == "f" else float(array.min())
    return Channel(name, array, minimum), None


def _scan_refused(
    file: ChannelFile, reference: Image, name: str, tolerance_mm: float, max_bytes: float | None
) -> str | None:
    """Why a scan is not read, from its header alone (None: read it): another grid than ``reference`` (one lattice
    covering it voxel for voxel, in any axis order, is kept for :func:`read_channel`), or more memory than
    ``max_bytes`` (default: the share of the available memory that ``ccmetrics evaluate`` takes)."""
    from ..engine.memory import DEFAULT_MEMORY_FRACTION, available_memory_bytes, format_bytes
    from ..formats.dicom import series_grid
    from ..formats.grids import union_grid
    from ..formats.io import check_same_geometry, read_grid

    try:
        grid = series_grid(file.path) if file.path.is_dir() else read_grid(file.path)
    except ImportError:  # a DICOM series without pydicom: its grid is known once SimpleITK has read it
        return None
    except (OSError, ValueError) as exc:
        return f"channel {name}: cannot read {file.path.name}: {exc}"
    problem = check_same_geometry(reference, grid, atol_mm=tolerance_mm, names=("gt", "image"))
    if problem:
        try:  # the same grid in another axis order: the union of both is the GT's grid, voxel for voxel
            union = union_grid(reference, grid, atol_mm=tolerance_mm)
            same = union.array.shape == reference.array.shape and grid.array.size == reference.array.size
        except ValueError:
            same = False
        if not same or not np.allclose(union.affine, reference.affine, atol=tolerance_mm):
            return f"channel {name}: {problem}"
    limit = max_bytes if max_bytes is not None else DEFAULT_MEMORY_FRACTION * available_memory_bytes()
    need = 3 * grid.array.size * max(grid.array.dtype.itemsize, 2)  # the array, the reader's copy, a reoriented copy
    if need > limit:
        return (
            f"channel {name}: reading {file.path.name} ({' x '.join(map(str, grid.array.shape))} voxels) needs about "
            f"{format_bytes(need)}, over the report's memory limit of {format_bytes(limit)}: it is not drawn "
            "(raise the limit with ccmetrics report --max-memory, or free memory)"
        )
    return None


def voxel_ml(spacing: Any, header: Sequence[float]) -> float:
    """Millilitres per voxel under the evaluation's ``spacing`` option (NaN for ``"voxel"``).

    >>> voxel_ml("header", (2.0, 2.0, 3.0)), voxel_ml("voxel", (2.0, 2.0, 3.0)), voxel_ml([2.0], (1.0, 1.0, 1.0))
    (0.012, nan, 0.008)
    """
    if spacing == "voxel":
        return math.nan
    values = np.asarray(header if spacing == "header" else spacing, float).ravel()
    if values.size == 1:  # one number given for every axis
        values = np.repeat(values, len(header))
    return float(np.prod(values)) / 1000.0


def __getattr__(name: str):  # names this module held before the registry: deprecated, computed from it
    return registry.legacy(__name__, name)
