"""The nuclei of one image as instances: those left out by an ignore mask, and the distances of matched pairs.

Steps 3 and 6 of :func:`ccmetrics.nuclei.evaluate` (see :mod:`ccmetrics.nuclei.metrics`): :func:`ignored_instances`
and :func:`keep_sites` drop the instances lying in the ignore mask without a pass over the image;
:func:`pair_distances` gives every matched pair's HD and HD95 as MONAI computes them, in padded, vectorised
batches over the edge pixels of all instances (:func:`rows_quantile`: ``torch.quantile`` of many rows at once).
"""

from __future__ import annotations

import numpy as np

from ..engine.components import Sites, find_sites  # noqa: F401 (find_sites: doctest)
from ..engine.config import current
from ..engine.surface import SURFACE_REDUCTIONS, physical
from ..engine.torch_emulation import quantile_rank, torch_lerp, torch_quantile  # noqa: F401 (doctest)

__all__ = ["ignored_instances", "keep_sites", "pair_distances", "rows_quantile"]


def keep_sites(sites: Sites, keep: np.ndarray) -> Sites:
    """The instances flagged in ``keep`` only, renumbered 1..K' (order and source labels kept).

    Examples
    --------
    >>> s = find_sites(np.array([[4, 4, 0, 9, 7]]), "labels")
    >>> k = keep_sites(s, np.array([True, False, True]))
    >>> k.source_label.tolist(), k.flat_index.tolist(), k.label.tolist()
    ([4, 9], [0, 1, 3], [1, 1, 2])
    """
    keep = np.asarray(keep, dtype=bool)
    if keep.all():
        return sites
    at = keep[sites.label - 1]
    new_label = (np.cumsum(keep)[sites.label[at] - 1]).astype(np.int32)
    volumes = sites.volumes[keep]
    starts = np.concatenate(([0], np.cumsum(volumes))).astype(np.int64)
    return Sites(sites.shape, sites.flat_index[at], new_label, starts, sites.source_label[keep])


def ignored_instances(sites: Sites, ignore: np.ndarray, fraction: float = 0.5) -> np.ndarray:
    """Flag the instances lying in an ignore mask: more than ``fraction`` of their pixels inside it.

    Examples
    --------
    >>> s = find_sites(np.array([[1, 1, 1, 2, 2]]), "labels")
    >>> ignore = np.array([[0, 0, 1, 1, 1]], bool)
    >>> ignored_instances(s, ignore).tolist(), ignored_instances(s, ignore, 0.0).tolist()
    ([False, True], [True, True])
    """
    inside = np.bincount(sites.label[ignore.ravel()[sites.flat_index]], minlength=sites.n + 1)[1:]
    return inside > fraction * sites.volumes


def _edges_by_site(sites: Sites, spacing) -> tuple[np.ndarray, np.ndarray]:
    """Physical coordinates of every instance's own edge pixels (grouped by site) and the group starts."""
    coords = sites.coords()
    own, _ = sites.edges(coords=coords)
    starts = np.searchsorted(sites.label[own], np.arange(1, sites.n + 2)).astype(np.int64)
    return physical(coords[own], spacing), starts


def pair_distances(
    gt_edges: np.ndarray,
    gt_starts: np.ndarray,
    pred_edges: np.ndarray,
    pred_starts: np.ndarray,
    pair_gt: np.ndarray,
    pair_pred: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Hausdorff distance and HD95 of many (GT, prediction) pairs of edge-point sets, as MONAI computes them.

    All point-to-point distances of a pair are computed (the edge sets of
    nuclei are small), in padded batches of similar sizes; each directed
    distance list is cast to float32 as MONAI does, HD is the larger
    maximum and HD95 the larger of the two directed 95th percentiles
    (:func:`rows_quantile`, i.e. :func:`ccmetrics.engine.torch_emulation.torch_quantile`
    vectorised).

    Parameters
    ----------
    gt_edges, pred_edges : ndarray, shape (E, ndim)
        Edge-point coordinates (physical units), grouped by instance.
    gt_starts, pred_starts : ndarray of int
        Instance k's points are ``edges[starts[k]:starts[k + 1]]``.
    pair_gt, pair_pred : ndarray of int
        Instance index (0-based) of each pair.

    Returns
    -------
    hd, hd95 : ndarray of float64
        One value per pair; the empty-set rule of :func:`ccmetrics.engine.surface.empty_rule` (inf when
        one of the two sets is empty).

    Examples
    --------
    >>> g = np.array([[0.0, 0.0], [0.0, 1.0]]); p = np.array([[0.0, 3.0]])
    >>> pair_distances(g, np.array([0, 2]), p, np.array([0, 1]), np.array([0]), np.array([0]))
    (array([3.]), array([2.95000005]))
    """
    n_pairs = len(pair_gt)
    hd, hd95 = np.full(n_pairs, np.inf), np.full(n_pairs, np.inf)
    if n_pairs == 0:
        return hd, hd95
    g_lo, g_n = gt_starts[pair_gt], gt_starts[pair_gt + 1] - gt_starts[pair_gt]
    p_lo, p_n = pred_starts[pair_pred], pred_starts[pair_pred + 1] - pred_starts[pair_pred]
    ok = (g_n > 0) & (p_n > 0)
    order = np.flatnonzero(ok)[np.argsort(np.maximum(g_n, p_n)[ok], kind="stable")]
    far = 1e9  # padding points, far from everything and from each other's padding
    max_batch = current().pair_batch_entries
    start = 0
    while start < len(order):
        # grow the batch while the padded block stays small (pairs are sorted by size)
        big_g, big_p = int(g_n[order[start]]), int(p_n[order[start]])
        stop = start
        while stop < len(order):
            k = order[stop]
            mg, mp = max(big_g, int(g_n[k])), max(big_p, int(p_n[k]))
            if stop > start and (stop - start + 1) * mg * mp > max_batch:
                break
            big_g, big_p, stop = mg, mp, stop + 1
        batch = order[start:stop]
        start = stop
        steps_g, steps_p = np.arange(big_g), np.arange(big_p)
        valid_g = steps_g[None, :] < g_n[batch, None]
        valid_p = steps_p[None, :] < p_n[batch, None]
        G = gt_edges[np.where(valid_g, g_lo[batch, None] + steps_g[None, :], 0)]
        P = pred_edges[np.where(valid_p, p_lo[batch, None] + steps_p[None, :], 0)]
        G[~valid_g] = far
        P[~valid_p] = -far
        diff = P[:, :, None, :] - G[:, None, :, :]
        d = np.sqrt(np.einsum("bpgk,bpgk->bpg", diff, diff))
        p2g = np.where(valid_p, d.min(axis=2), np.inf).astype(np.float32)
        g2p = np.where(valid_g, d.min(axis=1), np.inf).astype(np.float32)
        hd[batch] = np.maximum(
            np.where(valid_p, p2g, -np.inf).max(axis=1), np.where(valid_g, g2p, -np.inf).max(axis=1)
        ).astype(np.float64)
        hd95[batch] = np.maximum(rows_quantile(p2g, p_n[batch], 0.95), rows_quantile(g2p, g_n[batch], 0.95))
    return (SURFACE_REDUCTIONS["hd"].finish(hd, p_n, g_n), SURFACE_REDUCTIONS["hd95"].finish(hd95, p_n, g_n))


def rows_quantile(values: np.ndarray, counts: np.ndarray, q: float) -> np.ndarray:
    """:func:`ccmetrics.engine.torch_emulation.torch_quantile` of each row's first ``counts[i]`` values, vectorised.

    The same float32 arithmetic as ``torch.quantile`` (rank, floor/ceil
    neighbours, :func:`ccmetrics.engine.torch_emulation.torch_lerp`), bit for bit; entries
    past ``counts[i]`` must be ``inf`` (they sort last and are never used).

    Examples
    --------
    >>> v = np.array([[2.0, 3.0, np.inf], [1.0, 5.0, 4.0]], np.float32)
    >>> rows_quantile(v, np.array([2, 3]), 0.95).tolist() == [torch_quantile(v[0, :2], 0.95),
    ...                                                        torch_quantile(v[1], 0.95)]
    True
    """
    ordered = np.sort(values.astype(np.float32, copy=False), axis=1)
    below, above, weight = quantile_rank(counts, q)
    rows = np.arange(len(ordered))
    return torch_lerp(ordered[rows, below], ordered[rows, above], weight).astype(np.float64)
