"""One case of the report: its masks read again as the evaluation read them, its lesions and false positives.

Images are read again from the files named in ``per_case.csv`` only to find what the tables do not hold: the
false-positive components (prediction components that overlap no GT voxel, or those ``per_prediction.csv`` names
under the evaluation's detection rule, labelled with :func:`ccmetrics.label_components` at the evaluation's
connectivity) and the Voronoi region each one falls in (the GT component whose region holds most of its voxels).
Regions are found voxel by voxel where needed (:class:`Regions`: the false positives' voxels and the thumbnails'
slices), with :func:`ccmetrics.engine.partition.assign_nearest`, which equals :func:`ccmetrics.voronoi_partition`
voxel for voxel, so no dense region map of a large image is ever built. A case evaluated without a prediction
file, on the segmentation of its probability map (``ccmetrics evaluate GT_DIR --probabilities PROB_DIR``), is
read as the evaluation read it: ``prob > 0.5`` of the map ``prob_file`` names (:func:`read_map_pair`), the
prediction's place taken by that segmentation.

Where a component lies (:func:`position`): its centroid in patient coordinates, RAS+ mm, from the GT's affine
(:func:`ccmetrics.engine.geometry.patient_coordinates`, as ``per_prediction.csv``'s centroid columns), and the voxel
the thumbnail's planes go through, 0-based and counted from 1 (ITK-SNAP). Nothing here draws or writes HTML.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.io import Image

__all__ = [
    "AXES",
    "CaseImages",
    "Component",
    "Position",
    "Regions",
    "find_components",
    "load_case",
    "masks_of",
    "position",
    "read_map_pair",
    "read_pair",
]


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
        drawn under the masks must have the same (:func:`~ccmetrics.report.scans.read_channel`).
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
        (a read-only zero-stride array): what :func:`~ccmetrics.report.scans.read_channel` checks a scan against, kept
        without the masks.

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
    rule: Any = None,
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
        false positives under the evaluation's detection rule; default: those that
        :func:`ccmetrics.metrics.detection_rules.judge` finds no true positive under ``rule``.
    rule : str, optional
        The evaluation's detection rule when ``false_positives`` is not given (no ``per_prediction.csv``);
        default ``"overlap"``: a component is a false positive when it overlaps no GT voxel. ``suv_max`` needs
        the scan, which this function does not have: it raises ``ValueError``.

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
    if false_positives is None and rule not in (None, "overlap"):  # the rule's one home judges them
        from ..engine.components import find_sites
        from ..metrics.detection_rules import judge

        judged = judge(find_sites(pred, connectivity=connectivity), find_sites(gt, connectivity=connectivity), rule)
        fp_labels = [k + 1 for k, hit in enumerate(judged.pred_tp) if not hit]
    elif false_positives is None:
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
    rule: Any = None,
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
    rule : str, optional
        The evaluation's detection rule, judging the components when ``false_positives`` is not given.
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
    from ..formats.classes import remove_ignored

    if pair is None:
        pair = read_pair(gt_file, pred_file, reference_images=reference_images, tolerance_mm=tolerance_mm)
    gt_image, pred_array = pair
    gt_array, pred_array, _ = remove_ignored(gt_image.array, pred_array, ignore_label)
    gt, pred = masks_of(gt_array, class_value), masks_of(pred_array, class_value)
    header = tuple(float(s) for s in gt_image.spacing)
    metric_spacing = header if spacing == "header" else None if spacing == "voxel" else tuple(spacing)
    regions, lesions, fps = find_components(gt, pred, metric_spacing, connectivity, false_positives, rule)
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
