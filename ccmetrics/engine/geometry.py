"""The geometry of one case: the Voronoi region of every prediction voxel, counts, edge voxels and distances.

Everything is derived from two voxel lists (sorted flat indices of the prediction and of the GT
sites), never from an image-sized label map, so time and memory grow with the foreground:

* :class:`PredictionVoxels`: the prediction's voxels (one ``flatnonzero``), its runs along the last
  axis and, for surface metrics, the edge voxels of the whole mask (face-neighbour look-ups in the
  input mask itself);
* :class:`CaseRegions`: the region of every prediction voxel (inside the GT: the site it lies in,
  a look-up in the GT and a binary search over the GT's runs, or, for an instance label map, the
  label value itself; outside: the nearest site, :func:`ccmetrics.engine.partition.assign_nearest_flat`,
  or a look-up in the region map the caller kept with :meth:`ccmetrics.GroundTruth.region_map`)
  and the per-region counts;
* :class:`CaseSurfaces`, only when a surface metric is asked for: the edge voxels of every
  region's prediction and GT, and the directed edge distances over the whole image and per region;
  a region's distance is the whole image's wherever the nearest point the whole image's query named
  lies in that region (bit for bit the same minimum), so only the rest is queried again (edges cut
  by region borders, a missed lesion's GT edges).

With a thread pool the whole-image distances (which need no regions) run beside the nearest-site
search, or after it when many prediction voxels lie outside the GT (the nearest-label transform
then keeps every core busy), and the per-region queries run on every worker; the values do not
depend on the threads (:class:`ccmetrics.EngineConfig` sets the thresholds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._threads import submit
from .components import Runs, coordinates, sorted_voxels
from .config import current, thread_count
from .ground_truth import GroundTruth
from .partition import assign_nearest_flat
from .surface import (
    GroupedDistances,
    directed_distances,
    grouped_directed_distances,
    mask_edges,
    nearest_points,
    own_face_edges,
    physical,
)

__all__ = ["CaseRegions", "CaseSurfaces", "EdgeNearest", "PredictionVoxels", "patient_coordinates", "site_centroids"]


def patient_coordinates(voxel: np.ndarray, affine: Any | None) -> np.ndarray:
    """Voxel coordinates (N, ndim) in patient (RAS) mm, as (N, 3) with NaN for missing axes (and all NaN without
    ``affine``, the image's ``(ndim + 1)`` square voxel-to-patient matrix).

    >>> patient_coordinates(np.array([[1.5, 2.0]]), np.diag([0.5, 2.0, 1.0])).tolist()
    [[0.75, 4.0, nan]]
    """
    voxel = np.asarray(voxel, dtype=float)
    out = np.full((len(voxel), 3), np.nan)
    if affine is not None and len(voxel):
        matrix = np.asarray(affine, dtype=float)
        n = matrix.shape[0] - 1
        out[:, :n] = voxel[:, :n] @ matrix[:n, :n].T + matrix[:n, n]
    return out


def site_centroids(sites: Any) -> np.ndarray:
    """The centroid (mean voxel index) of each site of a :class:`~ccmetrics.engine.components.Sites`, (K, ndim).

    >>> from ccmetrics.engine.components import find_sites
    >>> site_centroids(find_sites(np.array([[1, 1, 0, 1]], bool))).tolist()
    [[0.0, 0.5], [0.0, 3.0]]
    """
    if sites.n == 0:
        return np.zeros((0, len(sites.shape)))
    # the coordinate sums are whole numbers (exact in float64), from the runs where known: O(runs), not O(voxels)
    return np.stack(sites.coordinate_sums(), axis=1) / sites.volumes[:, None]


def image_diagonal(shape: Sequence[int], spacing: Sequence[float] | None = None) -> float:
    """The default worst distance: the image diagonal ``sqrt(sum((n_k * s_k)**2))``, in voxels or mm.

    >>> round(image_diagonal((240, 240, 155), (1.0, 1.0, 1.0)), 1)
    373.1
    """
    s = spacing if spacing is not None else (1.0,) * len(shape)
    return math.sqrt(sum((n * sk) ** 2 for n, sk in zip(shape, s)))


class PredictionVoxels:
    """The prediction's voxel list: sorted flat indices, its runs and (``edges=True``) the edges of the whole mask."""

    def __init__(self, pred_mask: np.ndarray, edges: bool = True, flat: np.ndarray | None = None):
        """``flat``: the mask's sorted flat indices when known (:func:`~ccmetrics.engine.components.binary_mask_voxels`
        found them); else one ``flatnonzero`` of the mask."""
        self.flat = sorted_voxels(pred_mask) if flat is None else flat
        self.union_edge = mask_edges(self.flat, pred_mask.shape, pred_mask.ravel()) if edges else None
        self.runs = Runs(self.flat, pred_mask.shape)


@dataclass(frozen=True)
class EdgeNearest:
    """The whole image's edge distances of one case, with the nearest point of each (:meth:`CaseSurfaces.nearest`).

    Edge voxels are the union edges of each mask (a face neighbour outside it). Each distance is the exact minimum
    of the rounded distances (physical, with the case's spacing) over the other mask's edge voxels, attained at the
    named voxel; a metric that measures a subset of those voxels against a subset of the other mask's (a lesion
    against its prediction components) can take the value wherever the named voxel lies in its subset: the minimum
    there is the same value, bit for bit.

    Attributes
    ----------
    gt_flat : ndarray of int64
        Flat indices of the GT's edge voxels (in the order of the GT's sites).
    gt_distance : ndarray of float32
        Distance from each to the nearest prediction edge voxel.
    gt_nearest : ndarray of int64
        Flat index of that prediction edge voxel.
    pred_flat : ndarray of int64
        Flat indices of the prediction's edge voxels, increasing.
    pred_distance : ndarray of float32
        Distance from each to the nearest GT edge voxel.
    pred_nearest : ndarray of int64
        Flat index of that GT edge voxel.
    """

    gt_flat: np.ndarray
    gt_distance: np.ndarray
    gt_nearest: np.ndarray
    pred_flat: np.ndarray
    pred_distance: np.ndarray
    pred_nearest: np.ndarray


class CaseSurfaces:
    """Edge voxels and edge distances of one case, per region and over the whole image.

    Created from the two voxel lists before the regions are known: the whole-image distances need
    no regions and can start at once (:meth:`start_whole_image`, which :class:`CaseRegions` calls
    beside its search); :meth:`add_regions` then groups the edge voxels of every region's
    prediction and GT.

    The per-region distances reuse the whole image's where they must be equal. The whole-image
    query also names a nearest point (:func:`ccmetrics.engine.surface.nearest_points`). A region's
    target is a subset of the whole image's target. So when the named point lies in the source
    point's own region, the region's minimum is that same rounded value, bit for bit, as long as both
    queries return the exact minimum of the rounded distances: this module's k-d tree always does, and
    scipy's does on voxel lattices (``ccmetrics.engine._kdtree`` names the contrived non-lattice sets
    where its pruning misses it by one float64 ulp).

    * GT edges: a site's edge voxels are its union edges (GT components, or labels that touch no
      other label). Otherwise nothing is reused.
    * Prediction edges: a region's prediction edges are the whole prediction's edges in it plus
      *cut* edges, voxels whose face neighbour lies in another region.
    * Cut edges are new sources (prediction to GT), queried anew. They are also new targets (GT to
      prediction), so a region holding any is measured anew in that direction.

    Only the rest is queried, region by region: sources whose nearest point lies in another region
    (a missed lesion's GT edges, whose region holds no prediction), and the regions with cut edges.
    """

    def __init__(self, pred: PredictionVoxels, truth: GroundTruth, spacing: tuple[float, ...] | None):
        union_edge = pred.union_edge
        if union_edge is None:
            raise ValueError("CaseSurfaces needs the prediction's edges: PredictionVoxels(pred_mask, edges=True)")
        geometry = truth.geometry
        self.shape, self.spacing, self.n = truth.shape, spacing, geometry.found.n
        self._pred, self._pred_union_edge, self._truth = pred, union_edge, truth
        self._gt_union = geometry.coords[geometry.union_edge]
        self._pred_union = coordinates(pred.flat[union_edge], self.shape)
        self._whole: tuple[Any, Any] | None = None  # the two directions' futures
        self._pred_edges: list[np.ndarray] = []
        self._gt_edges: list[np.ndarray] = []
        self._pred_own = np.zeros(0, dtype=np.int64)  # rows of pred.flat of the regions' prediction edges, in order
        self._pred_region = np.zeros(0, dtype=np.int32)
        # reuse the whole image's distances per region (fixed here: it decides what the whole-image query returns):
        # a site's edges are its union edges, and regions are few (from grouped_from on, two grouped queries serve
        # all regions anyway)
        self._reuse = 0 < self.n < current().grouped_from and (
            truth.sites == "components" or bool(np.array_equal(geometry.union_edge, geometry.own_edge))
        )

    def start_whole_image(self, pool: ThreadPoolExecutor | None = None) -> None:
        """Start the whole-image edge distances (on the pool, or now without one)."""
        if self._whole is None:
            p, g = physical(self._pred_union, self.spacing), physical(self._gt_union, self.spacing)
            measure = nearest_points if self._reuse else directed_distances  # (distance, index) where reused
            self._whole = submit(pool, measure, p, g), submit(pool, measure, g, p)

    def _whole_results(self) -> tuple[Any, Any]:
        self.start_whole_image()
        return self._whole[0].result(), self._whole[1].result()  # type: ignore[index]

    def nearest(self) -> EdgeNearest | None:
        """The whole image's edge distances with the nearest voxel of each (:class:`EdgeNearest`), where the
        whole-image query named them (per-region reuse in force, see the class); else None."""
        if not self._reuse:
            return None
        (whole_pg, nearest_gt), (whole_gp, nearest_pred) = self._whole_results()
        geometry = self._truth.geometry
        gt_flat = geometry.found.flat_index[geometry.union_edge]
        pred_flat = self._pred.flat[self._pred_union_edge]
        if len(pred_flat) == 0 or len(gt_flat) == 0:  # nothing named: the other mask has no edge voxel
            return None
        return EdgeNearest(gt_flat, whole_gp, pred_flat[nearest_pred], pred_flat, whole_pg, gt_flat[nearest_gt])

    def add_regions(self, pred_region: np.ndarray) -> None:
        """Group the edge voxels of every region's prediction (region of each prediction voxel given) and GT."""
        geometry, pred = self._truth.geometry, self._pred
        own_label = pred_region if self.n else np.ones_like(pred_region)
        own = np.flatnonzero(own_face_edges(pred.flat, self.shape, own_label, self._pred_union_edge, pred.runs))
        # edge voxels grouped by region (site voxels are already sorted by label)
        self._gt_edges = self._group(geometry.coords[geometry.own_edge], geometry.found.label[geometry.own_edge])
        own_region = pred_region[own]
        order = np.argsort(own_region, kind="stable")
        self._pred_own, self._pred_region = own[order], pred_region
        self._pred_edges = self._group(coordinates(pred.flat[self._pred_own], self.shape), own_region[order])

    def _group(self, coords: np.ndarray, labels: np.ndarray) -> list[np.ndarray]:
        bounds = np.searchsorted(labels, np.arange(1, self.n + 2))
        return [coords[bounds[i] : bounds[i + 1]] for i in range(self.n)]

    def whole_image(self) -> GroupedDistances:
        """Edge distances of the whole prediction and the whole GT (one group)."""
        pg, gp = self._whole_results()
        return GroupedDistances.single(pg[0], gp[0]) if self._reuse else GroupedDistances.single(pg, gp)

    def per_region(self, pool: ThreadPoolExecutor | None = None) -> GroupedDistances:
        """Prediction->GT and GT->prediction edge distances inside the regions 1..K.

        From ``grouped_from`` regions on (nuclei: thousands of small regions), two KD-tree queries serve
        all regions (:func:`ccmetrics.engine.surface.grouped_directed_distances`, the region as an extra
        coordinate). Otherwise the whole image's distances are reused where they are the region's (see
        the class), and the rest is measured with one tree per region and direction; with a pool, these
        queries are submitted at once, largest first, small ones batched (at least ``thread_batch_points``
        edge voxels per task) so that threads pay off. Every way gives the same values bit for bit.
        """
        pred_edges, gt_edges = self._pred_edges, self._gt_edges
        bounds_p = np.cumsum([0] + [len(e) for e in pred_edges])
        bounds_g = np.cumsum([0] + [len(e) for e in gt_edges])
        if self.n >= current().grouped_from:
            d_pg, d_gp = self._grouped(pool)
            return GroupedDistances(d_pg, bounds_p, d_gp, bounds_g)
        d_pg = np.empty(int(bounds_p[-1]), dtype=np.float32)
        d_gp = np.empty(int(bounds_g[-1]), dtype=np.float32)
        todo_p = np.ones(len(d_pg), dtype=bool)  # still to measure
        todo_g = np.ones(len(d_gp), dtype=bool)
        if self._reuse:
            self._reuse_whole(d_pg, todo_p, d_gp, todo_g)
        units = []  # (direction, region, rows to measure within the region's sources)
        for i in range(self.n):
            for d, (todo, bounds) in enumerate(((todo_p, bounds_p), (todo_g, bounds_g))):
                rows = np.flatnonzero(todo[bounds[i] : bounds[i + 1]])
                if len(rows):
                    units.append((d, i, rows))
        for (d, i, rows), values in zip(units, self._measure(units, pool)):
            (d_pg if d == 0 else d_gp)[(bounds_p if d == 0 else bounds_g)[i] + rows] = values
        return GroupedDistances(d_pg, bounds_p, d_gp, bounds_g)

    def _reuse_whole(self, d_pg: np.ndarray, todo_p: np.ndarray, d_gp: np.ndarray, todo_g: np.ndarray) -> None:
        """Fill in the per-region distances that are the whole image's (the class's rule); clear their ``todo``."""
        (whole_pg, nearest_gt), (whole_gp, nearest_pred) = self._whole_results()
        geometry = self._truth.geometry
        site = geometry.found.label[geometry.own_edge]  # of each GT edge: the whole image's order is the regions'
        union = np.flatnonzero(self._pred_union_edge)  # rows of pred.flat of the whole image's prediction edges
        rows, region = self._pred_own, self._pred_region
        if len(union) == 0:  # no prediction: nothing to reuse
            return
        is_union = self._pred_union_edge[rows]
        own_region = region[rows]
        whole = np.flatnonzero(is_union)  # the regions' prediction edges the whole image measured, and where
        at = np.searchsorted(union, rows[whole])
        keep = site[nearest_gt[at]] == own_region[whole]
        d_pg[whole[keep]] = whole_pg[at[keep]]
        todo_p[whole[keep]] = False
        cut = np.zeros(self.n + 1, dtype=bool)  # regions with edges that are not the whole prediction's
        cut[own_region[~is_union]] = True
        same = (region[union][nearest_pred] == site) & ~cut[site]
        d_gp[same] = whole_gp[same]
        todo_g[same] = False

    def _measure(self, units: list, pool: ThreadPoolExecutor | None) -> list[np.ndarray]:
        """The distances of each unit ``(direction, region, rows)``: from those rows of the region's sources
        (prediction edges for direction 0, GT edges for 1) to all of its targets."""

        def one(d: int, i: int, rows: np.ndarray) -> np.ndarray:
            source, target = (self._pred_edges[i], self._gt_edges[i])[:: 1 if d == 0 else -1]
            return directed_distances(physical(source[rows], self.spacing), physical(target, self.spacing))

        if pool is None:
            return [one(*unit) for unit in units]
        cost = [len(rows) + len((self._gt_edges if d == 0 else self._pred_edges)[i]) for d, i, rows in units]
        batches: list[list[int]] = []
        total = 0
        for k in sorted(range(len(units)), key=lambda k: -cost[k]):
            if not batches or total >= current().thread_batch_points:
                batches.append([])
                total = 0
            batches[-1].append(k)
            total += cost[k]

        def run(batch: list[int]) -> dict[int, np.ndarray]:
            return {k: one(*units[k]) for k in batch}

        where: dict[int, Any] = {}
        for batch in batches:
            future = submit(pool, run, batch)
            where.update((k, future) for k in batch)
        return [where[k].result()[k] for k in range(len(units))]

    def _grouped(self, pool: ThreadPoolExecutor | None) -> tuple[np.ndarray, np.ndarray]:
        """Two KD-tree queries for all regions (the region as an extra coordinate), shared by the pool's threads."""
        pred_edges, gt_edges = self._pred_edges, self._gt_edges
        labels = np.arange(1, self.n + 1)
        dim = len(self.shape)
        p = physical(np.concatenate(pred_edges) if pred_edges else np.zeros((0, dim), np.int64), self.spacing)
        g = physical(np.concatenate(gt_edges) if gt_edges else np.zeros((0, dim), np.int64), self.spacing)
        p_group = np.repeat(labels, [len(e) for e in pred_edges])
        g_group = np.repeat(labels, [len(e) for e in gt_edges])
        span = image_diagonal(self.shape, self.spacing)
        workers = 1 if pool is None else thread_count()
        return (
            grouped_directed_distances(p, p_group, g, g_group, span, workers),
            grouped_directed_distances(g, g_group, p, p_group, span, workers),
        )


class CaseRegions:
    """The Voronoi region of every prediction voxel of one case, and the counts of every region.

    Attributes
    ----------
    pred_flat : ndarray of int64
        The prediction's voxels (sorted flat indices).
    pred_region : ndarray of int32
        The region (GT site 1..K, 0 without sites) of each.
    pred_volume, intersection : ndarray of int64, shape (K,)
        Prediction voxels in each region, and those of them inside the region's site.

    ``beside(pool)``, when given, is started beside the nearest-site search (or right after it, when
    many prediction voxels lie outside the GT): :meth:`CaseSurfaces.start_whole_image`.
    """

    def __init__(
        self,
        pred: PredictionVoxels,
        truth: GroundTruth,
        spacing: tuple[float, ...] | None,
        pool: ThreadPoolExecutor | None = None,
        beside: Callable[[ThreadPoolExecutor | None], None] | None = None,
    ):
        geometry = truth.geometry
        found = geometry.found
        self.shape, self.found = truth.shape, found
        self._gt_coords = geometry.coords
        self.pred_flat = pred.flat
        values = truth.array.ravel()[self.pred_flat]
        inside = values != 0
        # other work (``beside(pool)``: the whole-image distances) starts beside the nearest-site search, or after
        # it when that search keeps every core busy (many prediction voxels outside the GT)
        late = len(inside) - np.count_nonzero(inside) >= current().global_after
        if beside is not None and not late:
            beside(pool)
        region = np.zeros(len(self.pred_flat), dtype=np.int32)
        if truth.sites == "labels":  # inside: the site of the label value
            region[inside] = found.labels_of_sources(values[inside])
        else:  # inside: the site, found in the GT's voxel list
            region[inside] = geometry.raster_label[geometry.runs.locate(self.pred_flat[inside])]
        del values
        if found.n and not inside.all():
            kept = truth.kept_region_map(spacing)
            if kept is not None:  # a region map the caller prepared (GroundTruth.region_map): read, not searched
                region[~inside] = kept.ravel()[self.pred_flat[~inside]]
            else:
                own = geometry.own_edge
                region[~inside] = assign_nearest_flat(
                    self.pred_flat[~inside], self.shape, geometry.coords[own], found.label[own], spacing
                )
        if beside is not None and late:
            beside(pool)
        self.pred_region = region
        counts = np.bincount(region, minlength=found.n + 1)
        self.pred_volume = counts[1:]
        self.intersection = np.bincount(region[inside], minlength=found.n + 1)[1:]
        self._region_starts = np.cumsum(counts) - counts  # where each region starts in _by_region
        self._by_region: np.ndarray | None = None  # prediction voxels grouped by region, on the first masks()

    def masks(self, c: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Boolean prediction and GT masks of region ``c`` on its crop (the whole image for ``None``).

        The crop is the bounding box of both masks in the region (a region always holds its site's
        GT voxels): outside it, region ``c``'s masks are empty, so any metric of the masks' foreground
        (overlaps, surface distances) is that of the full image; a metric that counts background
        voxels (specificity, accuracy) would see the crop's background only.
        """
        if c is None:
            pred, gt = coordinates(self.pred_flat, self.shape), self._gt_coords
        else:
            if self._by_region is None:  # one sort for all regions, not one scan of the prediction per region
                self._by_region = self.pred_flat[np.argsort(self.pred_region, kind="stable")]
            start = self._region_starts[c]
            pred = coordinates(self._by_region[start : start + self.pred_volume[c - 1]], self.shape)
            gt = self._gt_coords[self.found.starts[c - 1] : self.found.starts[c]]
        both = np.concatenate([pred, gt])
        if c is None or len(both) == 0:
            lo, crop_shape = np.zeros(len(self.shape), dtype=np.int64), self.shape
        else:
            lo = both.min(axis=0)
            crop_shape = tuple(both.max(axis=0) - lo + 1)
        return _dense(pred - lo, crop_shape), _dense(gt - lo, crop_shape)


def _dense(coords: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    out = np.zeros(tuple(int(s) for s in shape), dtype=bool)
    out[tuple(coords.T)] = True
    return out
