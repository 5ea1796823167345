"""Lesion-level metrics: BraTS-2023 Lesion Dice / HD95, detection counts, autoPET volumes.

All of them start from the connected components of the GT and the prediction
(:func:`ccmetrics.components.find_sites`) and work on voxel lists and on
component bounding boxes, never on one full-size mask per lesion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import ndimage

from ._inputs import as_binary_mask, as_connectivity, as_non_negative, as_spacing, check_same_shape
from .components import ComponentCache, Sites, cc3d_label
from .overlap import overlap_scores
from .surface import directed_distances, physical, surface_scores

__all__ = [
    "BRATS_DILATION",
    "BRATS_MIN_VOLUME",
    "BRATS_WORST_HD95",
    "DetectionResult",
    "LesionDiceResult",
    "detection",
    "detection_from_components",
    "lesion_dice",
    "lesion_dice_from_components",
]

#: BraTS-2023's penalty distance (mm) for missed lesions and false positives
BRATS_WORST_HD95 = 374.0
#: BraTS-2023's glioma settings: dilation iterations of the GT before lesions are formed, and the lesion volume
#: threshold (mm³, or voxels without a spacing) at or below which a lesion is not counted
BRATS_DILATION, BRATS_MIN_VOLUME = 3, 50.0


def _pair(pred: Any, gt: Any, spacing: Any | None) -> tuple[np.ndarray, np.ndarray, tuple[float, ...] | None]:
    pred_mask, gt_mask = as_binary_mask(pred, "pred"), as_binary_mask(gt, "gt")
    check_same_shape(pred_mask, gt_mask)
    return pred_mask, gt_mask, as_spacing(spacing, gt_mask.ndim)


def _voxel_volume(spacing: Sequence[float] | None) -> float:
    return float(np.prod(spacing)) if spacing is not None else 1.0


def _touches(sites: Sites, other: np.ndarray) -> np.ndarray:
    """For each site, whether any of its voxels is set in the boolean image ``other``."""
    hit = other.ravel()[sites.flat_index]
    return np.bincount(sites.label[hit], minlength=sites.n + 1)[1:] > 0


# --------------------------------------------------------------------------- detection


@dataclass(frozen=True)
class DetectionResult:
    """Lesion detection counts and autoPET false positive / negative volumes.

    Attributes
    ----------
    tp, fn : int
        GT components overlapping / not overlapping the prediction.
    fp : int
        Prediction components overlapping no GT.
    n_pred_components : int
    sensitivity : float
        ``tp / (tp + fn)``; NaN without GT components.
    precision : float
        Share of prediction components overlapping the GT; NaN without any.
    f1 : float
        Harmonic mean of sensitivity and precision (0 when both are 0, NaN
        when either is NaN).
    false_positive_volume, false_negative_volume : float
        autoPET: total volume of prediction components without GT overlap,
        and of GT components without prediction overlap, labelled with
        ``volume_connectivity`` (18 in 3D, as autoPET's script). Millilitres
        when a spacing (mm) is given, voxels otherwise.
    volume_unit : str
        ``"ml"`` or ``"voxels"``.
    """

    tp: int
    fn: int
    fp: int
    n_pred_components: int
    sensitivity: float
    precision: float
    f1: float
    false_positive_volume: float
    false_negative_volume: float
    volume_unit: str


def detection(
    pred: Any,
    gt: Any,
    *,
    connectivity: int | None = None,
    spacing: Any | None = None,
    volume_connectivity: int | None = None,
) -> DetectionResult:
    """Lesion detection counts and the autoPET false positive / negative volumes.

    Parameters
    ----------
    pred, gt : array_like or torch.Tensor
        Binary masks, 2D or 3D.
    connectivity : int, optional
        Components for the counts: 26 (default), 18, 6 in 3D; 8 (default), 4 in 2D.
    spacing : float or sequence of float, optional
        Voxel spacing in mm; volumes are then in ml.
    volume_connectivity : int, optional
        Components for the two volumes: 18 in 3D (autoPET's official script)
        and 8 in 2D by default.

    Returns
    -------
    DetectionResult

    Examples
    --------
    >>> gt = np.zeros((10, 10), bool); gt[1:3, 1:3] = True; gt[6:8, 6:8] = True
    >>> pred = np.zeros_like(gt); pred[1:3, 1:4] = True; pred[0, 9] = True
    >>> d = detection(pred, gt)
    >>> d.tp, d.fn, d.fp, d.sensitivity, d.precision
    (1, 1, 1, 0.5, 0.5)
    >>> d.false_positive_volume, d.false_negative_volume, d.volume_unit
    (1.0, 4.0, 'voxels')
    """
    pred_mask, gt_mask, spacing = _pair(pred, gt, spacing)
    return detection_from_components(
        ComponentCache(pred_mask), ComponentCache(gt_mask), connectivity, spacing, volume_connectivity
    )


def detection_from_components(
    pred_cc: ComponentCache,
    gt_cc: ComponentCache,
    connectivity: int | None = None,
    spacing: Sequence[float] | None = None,
    volume_connectivity: int | None = None,
) -> DetectionResult:
    """:func:`detection` on masks whose components are already (or lazily) labelled.

    Lets a caller that evaluates several metrics of one case share the
    labelling work (:func:`ccmetrics.evaluate` does).

    Parameters
    ----------
    pred_cc, gt_cc : ComponentCache
        The validated boolean prediction and GT masks with their component
        caches (:class:`ccmetrics.components.ComponentCache`).
    connectivity, volume_connectivity
        As in :func:`detection`.
    spacing : tuple of float, optional
        Already validated spacing (``ccmetrics._inputs.as_spacing``) in mm.

    Returns
    -------
    DetectionResult

    Examples
    --------
    >>> gt = np.zeros((6, 6), bool); gt[1:3, 1:3] = True
    >>> d = detection_from_components(ComponentCache(gt.copy()), ComponentCache(gt))
    >>> d.tp, d.fp, d.fn
    (1, 0, 0)
    """
    pred_mask, gt_mask = pred_cc.mask, gt_cc.mask
    ndim = gt_mask.ndim
    conn = as_connectivity(connectivity, ndim)
    vol_conn = as_connectivity(
        volume_connectivity if volume_connectivity is not None else (18 if ndim == 3 else 8), ndim
    )
    gt_sites, pred_sites = gt_cc(conn), pred_cc(conn)
    detected = _touches(gt_sites, pred_mask)
    pred_hits = _touches(pred_sites, gt_mask)
    tp, fn = int(detected.sum()), int((~detected).sum())
    fp, n_pred = int((~pred_hits).sum()), pred_sites.n
    sensitivity = tp / (tp + fn) if tp + fn else math.nan
    precision = (n_pred - fp) / n_pred if n_pred else math.nan
    if math.isnan(sensitivity) or math.isnan(precision):
        f1 = math.nan
    else:
        f1 = 2 * sensitivity * precision / (sensitivity + precision) if sensitivity + precision else 0.0

    if vol_conn != conn:
        gt_sites, pred_sites = gt_cc(vol_conn), pred_cc(vol_conn)
        detected, pred_hits = _touches(gt_sites, pred_mask), _touches(pred_sites, gt_mask)
    scale = _voxel_volume(spacing) / 1000.0 if spacing is not None else 1.0
    fp_volume = float(pred_sites.volumes[~pred_hits].sum()) * scale
    fn_volume = float(gt_sites.volumes[~detected].sum()) * scale
    return DetectionResult(
        tp, fn, fp, n_pred, sensitivity, precision, f1, fp_volume, fn_volume, "ml" if spacing is not None else "voxels"
    )


# --------------------------------------------------------------------------- BraTS Lesion Dice


def _voxels_of(sites: Sites, labels: Sequence[int] | np.ndarray) -> np.ndarray:
    """Positions (into ``sites.flat_index``) of the voxels of the given site labels."""
    if len(labels) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(sites.starts[k - 1], sites.starts[k]) for k in labels])


@dataclass(frozen=True)
class LesionDiceResult:
    """BraTS-2023 lesion-wise scores of one case.

    Attributes
    ----------
    dice : float
        ``sum(Dice of each lesion) / (#lesions + #FP)``; 1 when there is
        neither a lesion nor a false positive.
    hd95 : float
        ``(sum(HD95 of each lesion) + worst * #FP) / (#lesions + #FP)``, a
        missed lesion counting ``worst`` (374); 0 when there is neither.
    tp, fn : int
        Lesions (above the volume threshold) with / without a touching
        prediction component.
    fp : int
        Prediction components touching no dilated lesion (of any size).
    per_lesion : pandas.DataFrame
        One row per lesion, small ones included (column ``counted`` False):
        ``volume`` (voxels), ``volume_mm3``, ``n_gt_components``,
        ``pred_components`` (labels of the touching prediction components,
        raster order), ``dice``, ``hd95`` (raw, inf when missed).
    """

    dice: float
    hd95: float
    tp: int
    fp: int
    fn: int
    per_lesion: pd.DataFrame


def _dilate_components(sites: Sites, coords: np.ndarray, structure: np.ndarray, iterations: int):
    """Dilate every component (``coords``: :meth:`Sites.coords`) inside its bounding box padded by the dilation."""
    shape = np.array(sites.shape)
    for k in range(sites.n):
        c = coords[sites.starts[k] : sites.starts[k + 1]]
        lo = np.maximum(c.min(axis=0) - iterations, 0)
        hi = np.minimum(c.max(axis=0) + iterations + 1, shape)
        local = np.zeros(tuple(hi - lo), dtype=bool)
        local[tuple((c - lo).T)] = True
        if iterations:
            local = ndimage.binary_dilation(local, structure=structure, iterations=iterations)
        yield tuple(slice(a, b) for a, b in zip(lo, hi)), local


def lesion_dice(
    pred: Any,
    gt: Any,
    *,
    dilation: int = BRATS_DILATION,
    min_volume: float = BRATS_MIN_VOLUME,
    spacing: Any | None = None,
    worst_hd95: float = BRATS_WORST_HD95,
) -> LesionDiceResult:
    """BraTS-2023 Lesion Dice and lesion-wise HD95.

    1. GT components (full connectivity) are dilated (``dilation`` iterations
       of the connectivity-2 cross); GT components in one dilated component
       form one lesion (GT voxels only).
    2. Lesions of volume <= ``min_volume`` (mm³, or voxels without spacing)
       are not counted.
    3. Every prediction component touching a dilated lesion is a true
       positive for it, even without overlap, and the lesion's prediction is
       the union of those components; one component may serve several lesions.
    4. Prediction components touching no dilated lesion are false positives.

    Parameters
    ----------
    pred, gt : array_like or torch.Tensor
        Binary masks, 2D or 3D.
    dilation : int
        Dilation iterations: 3 for glioma (default), 1 for metastases and
        meningioma; 0 means no dilation (unlike scipy's ``iterations=0``,
        which dilates until nothing changes).
    min_volume : float
        Lesion volume threshold: 50 mm³ for glioma (default), 2 for
        metastases.  Without a spacing it is in voxels.
    spacing : float or sequence of float, optional
        Voxel spacing in mm, for lesion volumes and HD95 (voxel units otherwise).
    worst_hd95 : float
        HD95 of a missed lesion and of each false positive (374 in BraTS).

    Returns
    -------
    LesionDiceResult

    Notes
    -----
    The per-lesion HD95 is MONAI's (maximum of the two directed 95th
    percentiles over edge voxels), the one ccmetrics uses everywhere.  The
    official BraTS code uses the area-weighted HD95 of DeepMind's
    surface-distance package, a different number; Dice and the counts are
    the same.

    Examples
    --------
    >>> gt = np.zeros((40, 40, 40), bool); gt[5:10, 5:10, 5:10] = True
    >>> pred = gt.copy(); pred[30:33, 30:33, 30:33] = True  # a distant 27-voxel FP
    >>> r = lesion_dice(pred, gt)
    >>> r.dice, r.hd95, r.tp, r.fp, r.fn
    (0.5, 187.0, 1, 1, 0)
    """
    pred_mask, gt_mask, spacing = _pair(pred, gt, spacing)
    if isinstance(dilation, bool) or not isinstance(dilation, (int, np.integer)) or dilation < 0:
        raise ValueError(f"dilation must be a whole number of iterations >= 0, got {dilation!r}")
    min_volume = as_non_negative(min_volume, "min_volume")
    worst_hd95 = as_non_negative(worst_hd95, "worst_hd95")
    return lesion_dice_from_components(
        ComponentCache(pred_mask), ComponentCache(gt_mask), dilation, min_volume, spacing, worst_hd95
    )


def lesion_dice_from_components(
    pred_cc: ComponentCache,
    gt_cc: ComponentCache,
    dilation: int = BRATS_DILATION,
    min_volume: float = BRATS_MIN_VOLUME,
    spacing: Sequence[float] | None = None,
    worst_hd95: float = BRATS_WORST_HD95,
) -> LesionDiceResult:
    """:func:`lesion_dice` on masks whose components are already (or lazily) labelled.

    Parameters
    ----------
    pred_cc, gt_cc : ComponentCache
        The validated boolean prediction and GT masks with their component
        caches (:class:`ccmetrics.components.ComponentCache`).
    dilation, min_volume, worst_hd95
        As in :func:`lesion_dice`.
    spacing : tuple of float, optional
        Already validated spacing (``ccmetrics._inputs.as_spacing``) in mm.

    Returns
    -------
    LesionDiceResult

    Examples
    --------
    >>> gt = np.zeros((20, 20, 20), bool); gt[5:10, 5:10, 5:10] = True
    >>> r = lesion_dice_from_components(ComponentCache(gt.copy()), ComponentCache(gt))
    >>> r.dice, r.hd95
    (1.0, 0.0)
    """
    pred_mask, gt_mask = pred_cc.mask, gt_cc.mask
    if int(dilation) != dilation or dilation < 0:
        raise ValueError(f"dilation must be a non-negative integer, got {dilation!r}")
    ndim = gt_mask.ndim
    full = as_connectivity(None, ndim)
    structure = ndimage.generate_binary_structure(ndim, 2)
    gt_sites, pred_sites = gt_cc(full), pred_cc(full)
    gt_coords, pred_coords = gt_sites.coords(), pred_sites.coords()

    # 1. merge GT components whose dilations touch (26-connectivity labelling of the dilated GT)
    dilations = list(_dilate_components(gt_sites, gt_coords, structure, int(dilation)))
    first_voxel = gt_sites.flat_index[gt_sites.starts[:-1]]
    raw_lesion = np.zeros(0, dtype=np.int64)
    if gt_sites.n:  # label the dilated GT on the bounding box of all dilations only
        lo = np.min([[s.start for s in box] for box, _ in dilations], axis=0)
        hi = np.max([[s.stop for s in box] for box, _ in dilations], axis=0)
        dilated = np.zeros(tuple(hi - lo), dtype=bool)
        for box, local in dilations:
            dilated[tuple(slice(s.start - a, s.stop - a) for s, a in zip(box, lo))] |= local
        merged, _ = cc3d_label(dilated, full)
        raw_lesion = merged[tuple((gt_coords[gt_sites.starts[:-1]] - lo).T)]
        del merged, dilated
    # lesions numbered in raster order of their first GT voxel
    order = np.unique(raw_lesion, return_index=True)[1]
    renumber = {int(raw_lesion[i]): n + 1 for n, i in enumerate(sorted(order, key=lambda i: first_voxel[i]))}
    lesion_of_component = np.array([renumber[int(r)] for r in raw_lesion], dtype=np.int64)
    n_lesions = len(renumber)

    # 3. prediction components touching each lesion's dilation (= union of its components' dilations)
    pred_map = pred_sites.label_map()
    touching: list[set] = [set() for _ in range(n_lesions)]
    for k, (box, local) in enumerate(dilations):
        found = np.unique(pred_map[box][local])
        touching[lesion_of_component[k] - 1].update(int(v) for v in found[found > 0])

    # per-lesion Dice and HD95 from voxel lists
    _, gt_edge = gt_sites.edges(gt_mask.ravel(), True, gt_coords)  # the union's edges: the mask tells them
    _, pred_edge = pred_sites.edges(pred_map.ravel(), coords=pred_coords)
    in_pred = pred_mask.ravel()[gt_sites.flat_index]
    voxel_volume = _voxel_volume(spacing)
    rows = []
    for lesion in range(1, n_lesions + 1):
        mine = _voxels_of(gt_sites, np.flatnonzero(lesion_of_component == lesion) + 1)
        comps = sorted(touching[lesion - 1])
        chosen = _voxels_of(pred_sites, comps)
        volume = len(mine)
        dice = float(overlap_scores(int(in_pred[mine].sum()), len(chosen), volume, "dice"))
        g = physical(gt_coords[mine[gt_edge[mine]]], spacing)
        p = physical(pred_coords[chosen[pred_edge[chosen]]], spacing)
        hd95 = surface_scores(directed_distances(p, g), directed_distances(g, p), ["hd95"], 1.0)["hd95"]
        rows.append(
            {
                "volume": volume,
                "volume_mm3": volume * voxel_volume,
                "n_gt_components": int((lesion_of_component == lesion).sum()),
                "pred_components": comps,
                "dice": dice,
                "hd95": hd95,
                "counted": volume * voxel_volume > min_volume,
            }
        )
    columns = ["volume", "volume_mm3", "n_gt_components", "pred_components", "dice", "hd95", "counted"]
    table = pd.DataFrame(
        {c: [row[c] for row in rows] for c in columns}, index=pd.RangeIndex(1, n_lesions + 1, name="lesion")
    )

    served = set().union(*touching) if touching else set()
    fp = pred_sites.n - len(served)
    counted = table.loc[table["counted"].astype(bool)]
    tp = int((counted["pred_components"].map(len) > 0).sum())
    fn = len(counted) - tp
    denominator = len(counted) + fp
    if denominator == 0:
        return LesionDiceResult(1.0, 0.0, 0, 0, 0, table)
    hd95 = counted["hd95"].where(np.isfinite(counted["hd95"]), worst_hd95)
    return LesionDiceResult(
        float(counted["dice"].sum() / denominator),
        float((hd95.sum() + worst_hd95 * fp) / denominator),
        tp,
        fp,
        fn,
        table,
    )
