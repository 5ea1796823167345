"""Synthetic nuclei tiles for demos, tests and benchmarks.

Nuclei are drawn into their bounding boxes only (O(total nucleus area)), so a
2000 x 2000 tile with 3000 nuclei is built in a fraction of a second.
"""

from __future__ import annotations

import numpy as np

__all__ = ["nuclei_tile"]


def _stamp(out: np.ndarray, label: int, center, radii, angle: float) -> None:
    r = float(max(radii))
    lo = np.maximum(np.floor(np.asarray(center) - r).astype(int), 0)
    hi = np.minimum(np.ceil(np.asarray(center) + r).astype(int) + 1, out.shape)
    if (lo >= hi).any():
        return
    y, x = np.ogrid[lo[0] : hi[0], lo[1] : hi[1]]
    dy, dx = y - center[0], x - center[1]
    c, s = np.cos(angle), np.sin(angle)
    u, v = c * dy + s * dx, -s * dy + c * dx
    inside = (u / radii[0]) ** 2 + (v / radii[1]) ** 2 <= 1.0
    out[lo[0] : hi[0], lo[1] : hi[1]][inside] = label


def nuclei_tile(
    shape: tuple[int, int] = (2000, 2000),
    n_nuclei: int = 3000,
    n_classes: int = 4,
    radius_range: tuple[float, float] = (4.0, 9.0),
    seed: int | None = 0,
    *,
    shift: int = 2,
    scale: float = 0.2,
    split_rate: float = 0.0,
    boundary_noise: float = 0.0,
) -> tuple[np.ndarray, dict[int, int], np.ndarray, dict[int, int]]:
    """A GT nuclei tile and a plausible prediction of it.

    GT: ``n_nuclei`` rotated ellipses (semi-axes drawn in ``radius_range``)
    at random centres, labelled 1..n in drawing order; later nuclei occlude
    earlier ones, so touching nuclei occur; classes uniform in 1..n_classes.
    Prediction: 92 % of the nuclei, shifted by -``shift``..``shift`` pixels
    and scaled by 1 -/+ ``scale`` (defaults: -2..2 and 0.8-1.2), with the
    right class 80 % of the time; plus 5 % false positives; labels in random
    order, unrelated to the GT's.  Then, optionally (both off by default, and
    the tile is then the same as without these options):

    * ``split_rate``: that fraction of the predicted nuclei is
      over-segmented, cut across its long axis at a random position (35-65 %
      of its pixels on one side) into two instances of the same class (the
      new one gets the next free label);
    * ``boundary_noise``: one-pixel noise on the predicted outlines; each edge
      pixel of a nucleus (a 4-neighbour outside it) is removed, and each
      background pixel 4-adjacent to a nucleus is added to it (to its
      neighbour above, below, left or right, the first found), with this
      probability.

    Parameters
    ----------
    shape, n_nuclei, n_classes, radius_range, seed
        Tile size, number of GT nuclei drawn, classes 1..n_classes, range of
        the semi-axes (pixels), random seed.
    shift, scale, split_rate, boundary_noise
        Errors of the prediction, see above.

    Returns
    -------
    gt_inst : ndarray of int32
    gt_class : dict
        GT instance id -> class (every id of ``gt_inst``; possibly a few more,
        of nuclei occluded completely).
    pred_inst : ndarray of int32
    pred_class : dict

    Examples
    --------
    >>> gt, gc, pred, pc = nuclei_tile((200, 200), 30, seed=1)
    >>> gt.shape, set(np.unique(gt[gt > 0]).tolist()) <= set(gc), set(np.unique(pred[pred > 0]).tolist()) <= set(pc)
    ((200, 200), True, True)
    """
    rng = np.random.default_rng(seed)
    gt = np.zeros(shape, dtype=np.int32)
    pred = np.zeros(shape, dtype=np.int32)
    n_fp = int(round(0.05 * n_nuclei))
    pred_ids = rng.permutation(np.arange(1, n_nuclei + n_fp + 1)) + 100
    gt_class: dict[int, int] = {}
    pred_class: dict[int, int] = {}
    for i in range(n_nuclei):
        center = rng.uniform((0, 0), shape)
        radii = rng.uniform(*radius_range, 2)
        angle = rng.uniform(0, np.pi)
        cls = int(rng.integers(1, n_classes + 1))
        _stamp(gt, i + 1, center, radii, angle)
        gt_class[i + 1] = cls
        if rng.random() < 0.92:
            pid = int(pred_ids[i])
            _stamp(
                pred,
                pid,
                center + rng.integers(-shift, shift + 1, 2),
                radii * rng.uniform(1 - scale, 1 + scale, 2),
                angle + rng.normal(0, 0.2),
            )
            pred_class[pid] = cls if rng.random() < 0.8 else int(rng.integers(1, n_classes + 1))
    for j in range(n_fp):
        pid = int(pred_ids[n_nuclei + j])
        _stamp(pred, pid, rng.uniform((0, 0), shape), rng.uniform(*radius_range, 2), rng.uniform(0, np.pi))
        pred_class[pid] = int(rng.integers(1, n_classes + 1))
    if split_rate > 0:
        _over_segment(pred, pred_class, split_rate, rng)
    if boundary_noise > 0:
        _boundary_noise(pred, boundary_noise, rng)
    return gt, gt_class, pred, pred_class


def _over_segment(pred: np.ndarray, pred_class: dict[int, int], rate: float, rng) -> None:
    """Cut a fraction ``rate`` of the instances of ``pred`` in two, across their long axis (in place)."""
    flat = pred.reshape(-1)
    fg = np.flatnonzero(flat)
    order = fg[np.argsort(flat[fg], kind="stable")]
    ids, starts = np.unique(flat[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    next_id = max(pred_class, default=0) + 1
    for k in np.flatnonzero(rng.random(len(ids)) < rate):
        idx = order[starts[k] : ends[k]]
        if len(idx) < 8:
            continue
        y, x = np.unravel_index(idx, pred.shape)
        y, x = y - y.mean(), x - x.mean()
        # long axis from the second moments, in closed form (no sign ambiguity of an eigensolver)
        theta = 0.5 * np.arctan2(2 * (x * y).sum(), (y * y).sum() - (x * x).sum())
        proj = np.cos(theta) * y + np.sin(theta) * x
        cut = np.quantile(proj, rng.uniform(0.35, 0.65))
        flat[idx[proj > cut]] = next_id
        pred_class[next_id] = pred_class[int(ids[k])]
        next_id += 1


def _boundary_noise(pred: np.ndarray, p: float, rng) -> None:
    """Remove edge pixels of the instances and add background pixels next to them, each with probability p."""
    padded = np.pad(pred, 1)
    neighbours = (padded[:-2, 1:-1], padded[2:, 1:-1], padded[1:-1, :-2], padded[1:-1, 2:])  # up, down, left, right
    edge = (pred > 0) & np.logical_or.reduce([n != pred for n in neighbours])
    grow_to = np.zeros_like(pred)
    for n in reversed(neighbours):  # the first non-zero neighbour in the order up, down, left, right
        grow_to = np.where(n > 0, n, grow_to)
    outside = (pred == 0) & (grow_to > 0)
    flip = rng.random(pred.shape) < p
    pred[edge & flip] = 0
    pred[outside & flip] = grow_to[outside & flip]
