"""Class-agnostic one-to-one matching of GT and predicted instances (objects).

One matcher serves Panoptic Quality (:mod:`ccmetrics.metrics.panoptic`), the nuclei
metrics (:mod:`ccmetrics.nuclei`) and the case-level scores of
:func:`ccmetrics.evaluate`.

Algorithm
---------
1. **All pairwise overlaps in one pass** (:func:`site_overlaps`): the
   prediction's instance index is looked up at every GT voxel (a binary search
   in the prediction's raster-ordered voxel list,
   :meth:`~ccmetrics.engine.components.Sites.labels_at`, or a gather from a label map
   for small dense images: never an image-sized map of a large image); the
   (GT, prediction) index pairs of the voxels where both are set are counted
   with one ``np.unique``.  The result, :class:`Overlaps`, holds the instance
   sizes and every non-zero intersection.  Cost: O(N_gt log N_pred) plus
   O(N log N) for the count, with N the number of GT foreground voxels; never
   one pass per object, and independent of label values (labels are only
   renumbered 0..K-1 in sorted order).
2. **Choosing the pairs** (:func:`choose_pairs`), on the overlap list only:

   * ``"iou"``: pairs with IoU strictly above ``threshold``.  For thresholds
     >= 0.5 such pairs are unique by construction (two objects cannot both
     cover more than half of a third one's union); below 0.5 a Hungarian
     assignment maximising the total IoU picks among them
     (:func:`scipy.optimize.linear_sum_assignment` on the overlapping rows and
     columns only).
   * ``"centroid"``: for each GT object the overlapping prediction of highest
     IoU (ties to the lowest prediction label), accepted when that
     prediction's centroid, rounded half up, lies inside the GT object.  A
     prediction's centroid lies in at most one GT object, so matches are
     unique.  Centroids cost one ``np.bincount`` per axis.
   * ``"max_iou"``: a one-to-one assignment maximising the total IoU among all
     overlapping pairs (Hungarian).

   The Hungarian step costs O(k^3) in the number k of objects taking part in
   overlaps; for instance maps the overlap graph is sparse, so k is small.

Restricting the matching to a subset of objects (one class of a multi-class
map, objects outside an ignore mask) needs no new pass over the image:
:meth:`Overlaps.subset` filters the overlap list.

Examples
--------
>>> import numpy as np
>>> from ccmetrics.metrics.matching import match_instances
>>> gt = np.array([[1, 1, 1, 0, 2, 2]])
>>> pred = np.array([[5, 5, 0, 0, 0, 3]])
>>> m = match_instances(gt=gt, pred=pred)
>>> m.tp, m.fp, m.fn
(1, 1, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy
from .._arguments import public_arguments
from .._inputs import as_label_map, check_same_shape
from ..columns import Columns, stored, table_fields
from ..engine.components import Sites, find_sites

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = [
    "MATCHING_RULES",
    "Overlaps",
    "Matching",
    "site_overlaps",
    "instance_overlaps",
    "choose_pairs",
    "match_overlaps",
    "match_sites",
    "match_instances",
    "check_matching_rule",
]

#: the matching rules understood by every function of this module
MATCHING_RULES = ("iou", "centroid", "max_iou")


@dataclass(frozen=True)
class Overlaps:
    """Instance sizes and the non-zero pairwise overlaps of two instance maps (voxels).

    Instances are indexed 0..K-1 in the order of their (sorted) label values.

    Attributes
    ----------
    gt_labels, pred_labels : ndarray
        Original label value of each GT / predicted instance.
    gt_sizes, pred_sizes : ndarray of int
        Voxel count of each instance.
    pair_gt, pair_pred : ndarray of int64
        Instance index of the GT and of the prediction of each overlapping
        pair, sorted by GT index, then prediction index.
    pair_intersection : ndarray of int64
        Voxels shared by each pair (> 0).
    pred_centroid_gt : ndarray of int64 or None
        For the centroid rule: the index of the GT instance containing each
        prediction's centroid (rounded half up), -1 when it lies in none.
    """

    gt_labels: np.ndarray
    gt_sizes: np.ndarray
    pred_labels: np.ndarray
    pred_sizes: np.ndarray
    pair_gt: np.ndarray
    pair_pred: np.ndarray
    pair_intersection: np.ndarray
    pred_centroid_gt: np.ndarray | None = None

    @cached_property
    def pair_iou(self) -> np.ndarray:
        """IoU of each overlapping pair, ``|G ∩ P| / (|G| + |P| - |G ∩ P|)``."""
        union = self.gt_sizes[self.pair_gt] + self.pred_sizes[self.pair_pred] - self.pair_intersection
        return self.pair_intersection / union

    def subset(self, gt_keep: np.ndarray, pred_keep: np.ndarray) -> Overlaps:
        """The overlaps among the kept instances only, re-indexed 0..K'-1 (order kept).

        Parameters
        ----------
        gt_keep, pred_keep : ndarray of bool
            One flag per GT / predicted instance.

        Returns
        -------
        Overlaps
            As if the other instances had never been in the maps.

        Examples
        --------
        >>> gt = np.array([[1, 1, 2, 2]]); pred = np.array([[7, 7, 8, 8]])
        >>> ov = instance_overlaps(gt=gt, pred=pred)
        >>> ov.subset(np.array([False, True]), np.array([True, True])).pair_intersection.tolist()
        [2]
        """
        gt_keep, pred_keep = np.asarray(gt_keep, bool), np.asarray(pred_keep, bool)
        gt_new = np.cumsum(gt_keep) - 1
        pred_new = np.cumsum(pred_keep) - 1
        pair = gt_keep[self.pair_gt] & pred_keep[self.pair_pred]
        centroid = None
        if self.pred_centroid_gt is not None:
            old = self.pred_centroid_gt[pred_keep]
            inside = old >= 0
            centroid = np.full(len(old), -1, dtype=np.int64)
            centroid[inside] = np.where(gt_keep[old[inside]], gt_new[old[inside]], -1)
        return Overlaps(
            self.gt_labels[gt_keep],
            self.gt_sizes[gt_keep],
            self.pred_labels[pred_keep],
            self.pred_sizes[pred_keep],
            gt_new[self.pair_gt[pair]],
            pred_new[self.pair_pred[pair]],
            self.pair_intersection[pair],
            centroid,
        )


def _centroid_sites(pred_sites: Sites, gt_sites: Sites) -> np.ndarray:
    """Index of the GT site holding each prediction's rounded (half up) centroid, -1 for none."""
    if pred_sites.n == 0:
        return np.zeros(0, dtype=np.int64)
    coords = pred_sites.coords()
    which = pred_sites.label - 1
    centroid = np.stack(
        [np.floor(np.bincount(which, weights=c, minlength=pred_sites.n) / pred_sites.volumes + 0.5) for c in coords.T],
        axis=1,
    ).astype(np.int64)
    return gt_sites.labels_at(np.ravel_multi_index(tuple(centroid.T), gt_sites.shape)).astype(np.int64) - 1


def site_overlaps(pred_sites: Sites, gt_sites: Sites, *, centroids: bool = False) -> Overlaps:
    """Instance sizes and all non-zero pairwise overlaps, from the voxel lists of both maps.

    One gather of the prediction's instance index at every GT voxel: the cost
    depends on the number of foreground voxels, never on the number of pairs.

    Parameters
    ----------
    pred_sites, gt_sites : Sites
        Instances of the prediction and of the GT, from
        :func:`ccmetrics.engine.components.find_sites` (``"labels"`` for instance
        maps, ``"components"`` for binary masks); same image shape.
    centroids : bool
        Also locate each prediction's centroid in the GT (needed by the
        ``"centroid"`` rule; one more pass over the prediction voxels).

    Returns
    -------
    Overlaps

    Examples
    --------
    >>> gt = find_sites(np.array([[1, 1, 1, 0]]), "labels")
    >>> pred = find_sites(np.array([[0, 4, 4, 4]]), "labels")
    >>> ov = site_overlaps(pred, gt)
    >>> ov.pair_intersection.tolist(), ov.pair_iou.tolist()
    ([2], [0.5])
    """
    if pred_sites.shape != gt_sites.shape:
        raise ValueError(f"pred and gt must have the same shape, got {pred_sites.shape} and {gt_sites.shape}")
    at_gt = pred_sites.labels_at(gt_sites.flat_index)  # no image-sized label map for large images
    both = at_gt > 0
    g = gt_sites.label[both].astype(np.int64) - 1
    p = at_gt[both].astype(np.int64) - 1
    n_pred = max(pred_sites.n, 1)
    keys, counts = np.unique(g * n_pred + p, return_counts=True)
    centroid = _centroid_sites(pred_sites, gt_sites) if centroids else None
    return Overlaps(
        gt_sites.source_label,
        gt_sites.volumes,
        pred_sites.source_label,
        pred_sites.volumes,
        keys // n_pred,
        keys % n_pred,
        counts.astype(np.int64),
        centroid,
    )


@public_arguments(
    "instance_overlaps",
    positional_inputs=("pred", "gt"),
    renamed={"pred_instances": "pred", "gt_instances": "gt"},
)
def instance_overlaps(pred: Any, gt: Any, *, centroids: bool = False) -> Overlaps:
    """Instance sizes and all non-zero pairwise overlaps of two instance label maps (voxels).

    Pass the maps by keyword, ``instance_overlaps(gt=..., pred=...)``; by position (prediction first) and as
    ``pred_instances=``, ``gt_instances=`` they still work for a release, with a ``DeprecationWarning``.

    Examples
    --------
    >>> ov = instance_overlaps(gt=np.array([[1, 1, 1]]), pred=np.array([[3, 3, 0]]))
    >>> ov.gt_labels.tolist(), ov.pred_labels.tolist(), ov.pair_iou.round(3).tolist()
    ([1], [3], [0.667])
    """
    pred_map = as_label_map(pred, "pred")
    gt_map = as_label_map(gt, "gt")
    check_same_shape(pred_map, gt_map)
    return site_overlaps(find_sites(pred_map, "labels"), find_sites(gt_map, "labels"), centroids=centroids)


def check_matching_rule(rule: str, threshold: float) -> float:
    """Validate a matching rule and IoU threshold; return the threshold as a float.

    Examples
    --------
    >>> check_matching_rule("iou", 0.5)
    0.5
    >>> check_matching_rule("dice", 0.5)
    Traceback (most recent call last):
    ...
    ValueError: rule must be one of ('iou', 'centroid', 'max_iou'), got 'dice'
    """
    if rule not in MATCHING_RULES:
        raise ValueError(f"rule must be one of {MATCHING_RULES}, got {rule!r}")
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be a number in [0, 1), got {threshold!r}") from None
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    return threshold


def _assign(ov: Overlaps, keep: np.ndarray) -> np.ndarray:
    """Indices of pairs (within ``keep``) of a one-to-one assignment maximising total IoU."""
    cand = np.flatnonzero(keep)
    if cand.size == 0:
        return cand
    rows, g = np.unique(ov.pair_gt[cand], return_inverse=True)
    cols, p = np.unique(ov.pair_pred[cand], return_inverse=True)
    weight = np.zeros((len(rows), len(cols)))
    index = np.full((len(rows), len(cols)), -1)
    weight[g, p] = ov.pair_iou[cand]
    index[g, p] = cand
    from scipy.optimize import linear_sum_assignment  # scipy.optimize: 40 ms to import, needed here only

    r, c = linear_sum_assignment(weight, maximize=True)
    chosen = index[r, c]
    return np.sort(chosen[chosen >= 0])


def _centroid_rule(ov: Overlaps) -> np.ndarray:
    if ov.pred_centroid_gt is None:
        raise ValueError("the centroid rule needs the prediction centroids: site_overlaps(..., centroids=True)")
    if ov.pair_gt.size == 0:
        return np.zeros(0, dtype=np.int64)
    # for each GT, the overlapping prediction of highest IoU (ties: lowest prediction label)
    order = np.lexsort((ov.pair_pred, -ov.pair_iou, ov.pair_gt))
    first = order[np.r_[True, np.diff(ov.pair_gt[order]) != 0]]
    return np.sort(first[ov.pred_centroid_gt[ov.pair_pred[first]] == ov.pair_gt[first]])


def choose_pairs(ov: Overlaps, rule: str = "iou", threshold: float = 0.5) -> np.ndarray:
    """Indices (into ``ov``'s pair arrays, ascending) of the one-to-one matches under ``rule``.

    Parameters
    ----------
    ov : Overlaps
        From :func:`site_overlaps` (with ``centroids=True`` for the
        ``"centroid"`` rule).
    rule, threshold
        As in :func:`match_instances`.

    Returns
    -------
    ndarray of int64

    Examples
    --------
    >>> ov = instance_overlaps(gt=np.array([[1, 1, 2, 2]]), pred=np.array([[4, 4, 4, 0]]))
    >>> choose_pairs(ov, "iou").tolist(), choose_pairs(ov, "max_iou").tolist()
    ([0], [0])
    """
    threshold = check_matching_rule(rule, threshold)
    if rule == "iou":
        keep = ov.pair_iou > threshold
        return np.flatnonzero(keep) if threshold >= 0.5 else _assign(ov, keep)
    if rule == "max_iou":
        return _assign(ov, ov.pair_intersection > 0)
    return _centroid_rule(ov)


@table_fields("pairs")  # held as Columns until read as DataFrames
@dataclass(frozen=True)
class Matching:
    """One-to-one matches between GT and predicted instances.

    Attributes
    ----------
    pairs : pandas.DataFrame
        One row per match: ``gt_label``, ``pred_label``, ``iou``, ``intersection``
        (voxels), sorted by GT label.
    unmatched_gt, unmatched_pred : ndarray
        Labels of the missed GT instances (FN) and unmatched predictions (FP).

    ``tp``, ``fp`` and ``fn`` count the matches, unmatched predictions and
    missed GT instances.

    Examples
    --------
    >>> m = match_instances(gt=np.array([[1, 1, 0, 0]]), pred=np.array([[2, 2, 0, 9]]))
    >>> m.tp, m.fp, m.fn, m.unmatched_pred.tolist()
    (1, 1, 0, [9])
    """

    pairs: pd.DataFrame
    unmatched_gt: np.ndarray
    unmatched_pred: np.ndarray

    @property
    def tp(self) -> int:
        return len(stored(self, "pairs"))

    @property
    def fp(self) -> int:
        return len(self.unmatched_pred)

    @property
    def fn(self) -> int:
        return len(self.unmatched_gt)

    @classmethod
    def from_overlaps(cls, ov: Overlaps, chosen: np.ndarray) -> Matching:
        """Build a :class:`Matching` from an overlap list and the chosen pair indices."""
        g, p = ov.pair_gt[chosen], ov.pair_pred[chosen]
        order = np.argsort(ov.gt_labels[g], kind="stable")  # by GT label (pandas' stable sort_values)
        pairs = Columns(
            {
                "gt_label": ov.gt_labels[g][order],
                "pred_label": ov.pred_labels[p][order],
                "iou": ov.pair_iou[chosen][order],
                "intersection": ov.pair_intersection[chosen][order],
            },
            length=len(order),
        )
        gt_free = np.ones(len(ov.gt_labels), bool)
        gt_free[g] = False
        pred_free = np.ones(len(ov.pred_labels), bool)
        pred_free[p] = False
        return cls(pairs, ov.gt_labels[gt_free], ov.pred_labels[pred_free])  # type: ignore[arg-type]  # a table field


def match_overlaps(ov: Overlaps, rule: str = "iou", threshold: float = 0.5) -> Matching:
    """Match the instances of an overlap list; see :func:`match_instances` for the rules.

    Examples
    --------
    >>> ov = instance_overlaps(gt=np.array([[1, 1, 2, 2]]), pred=np.array([[4, 4, 4, 0]]))
    >>> match_overlaps(ov).pairs[["gt_label", "pred_label"]].values.tolist()
    [[1, 4]]
    """
    return Matching.from_overlaps(ov, choose_pairs(ov, rule, threshold))


def match_sites(pred_sites: Sites, gt_sites: Sites, rule: str = "iou", threshold: float = 0.5) -> Matching:
    """Match precomputed instances (:class:`~ccmetrics.engine.components.Sites`) one-to-one.

    The entry point for callers that already labelled their masks (connected
    components or instance maps), so the labelling is never repeated.

    Parameters
    ----------
    pred_sites, gt_sites : Sites
        From :func:`ccmetrics.engine.components.find_sites`; same image shape.
    rule, threshold
        As in :func:`match_instances`.

    Returns
    -------
    Matching

    Examples
    --------
    >>> gt = find_sites(np.array([[1, 1, 0, 0, 1]]), "components")
    >>> pred = find_sites(np.array([[1, 1, 1, 0, 0]]), "components")
    >>> m = match_sites(pred, gt)
    >>> m.tp, m.fp, m.fn
    (1, 0, 1)
    """
    threshold = check_matching_rule(rule, threshold)
    return match_overlaps(site_overlaps(pred_sites, gt_sites, centroids=rule == "centroid"), rule, threshold)


@public_arguments(
    "match_instances",
    positional_inputs=("pred", "gt"),
    renamed={"pred_instances": "pred", "gt_instances": "gt", "rule": "matching_rule", "threshold": "iou_threshold"},
)
def match_instances(pred: Any, gt: Any, matching_rule: str = "iou", iou_threshold: float = 0.5) -> Matching:
    """Match predicted to GT instances one-to-one.

    Pass the maps by keyword, ``match_instances(gt=gt, pred=pred)``; by position (``match_instances(pred, gt)``,
    prediction first) they still work for a release, with a ``DeprecationWarning``. The former keywords
    ``pred_instances``, ``gt_instances``, ``rule`` and ``threshold`` are still read, with a
    ``DeprecationWarning`` naming the new one.

    Parameters
    ----------
    pred, gt : array_like or torch.Tensor
        Instance label maps (2D or 3D, 0 = background); any label values.
    matching_rule : {"iou", "centroid", "max_iou"}
        ``"iou"``: pairs with IoU strictly above ``iou_threshold`` (a pair at exactly the threshold is no
        match; the detection rule ``"iou:T"`` of :mod:`ccmetrics.metrics.detection_rules` instead accepts
        IoU >= T); unique by
        construction for thresholds >= 0.5, a maximum-total-IoU (Hungarian)
        assignment among those pairs below 0.5.  ``"centroid"``: for each GT
        instance, the overlapping prediction of highest IoU, accepted when the
        prediction's centroid (rounded half up) lies inside that GT instance.
        ``"max_iou"``: a one-to-one assignment maximising the total IoU among
        all overlapping pairs.
    iou_threshold : float
        IoU threshold of the ``"iou"`` rule, in [0, 1), strictly exceeded by a match (ignored by the others).

    Returns
    -------
    Matching

    Examples
    --------
    >>> gt = np.array([[1, 1, 0, 2, 2]])
    >>> pred = np.array([[7, 7, 0, 0, 9]])
    >>> m = match_instances(gt=gt, pred=pred)
    >>> m.pairs[["gt_label", "pred_label", "iou"]].values.tolist()
    [[1.0, 7.0, 1.0]]
    >>> m.unmatched_gt.tolist(), m.unmatched_pred.tolist()  # IoU exactly 0.5 is no match
    ([2], [9])
    """
    threshold = check_matching_rule(matching_rule, iou_threshold)
    pred_map, gt_map = as_label_map(pred, "pred"), as_label_map(gt, "gt")
    check_same_shape(pred_map, gt_map)
    return match_sites(find_sites(pred_map, "labels"), find_sites(gt_map, "labels"), matching_rule, threshold)
