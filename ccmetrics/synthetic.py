"""Synthetic lesion cases for demos, tests and benchmarks.

Shapes are drawn into their bounding boxes only, so even a whole-body-sized
volume is built in well under a second.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["draw_ellipsoid", "lesion_case"]


def draw_ellipsoid(mask: np.ndarray, center: ArrayLike, radii: ArrayLike) -> None:
    """Set to True, in place, the voxels of ``mask`` inside an axis-aligned ellipsoid.

    Parameters
    ----------
    mask : ndarray of bool
        2D or 3D image, modified in place; parts outside the image are clipped.
    center : sequence of float
        Centre, in voxel coordinates.
    radii : sequence of float
        Semi-axes, in voxels (an ellipse in 2D).

    Examples
    --------
    >>> m = np.zeros((5, 5), bool)
    >>> draw_ellipsoid(m, (2, 2), (1, 1))
    >>> m.astype(int)
    array([[0, 0, 0, 0, 0],
           [0, 0, 1, 0, 0],
           [0, 1, 1, 1, 0],
           [0, 0, 1, 0, 0],
           [0, 0, 0, 0, 0]])
    """
    center, radii = np.asarray(center, dtype=float), np.asarray(radii, dtype=float)
    lo = [max(0, int(np.floor(c - r))) for c, r in zip(center, radii)]
    hi = [min(n, int(np.ceil(c + r)) + 1) for c, r, n in zip(center, radii, mask.shape)]
    if any(a >= b for a, b in zip(lo, hi)):
        return
    grids = np.ogrid[tuple(slice(a, b) for a, b in zip(lo, hi))]
    inside = sum(((g - c) / r) ** 2 for g, c, r in zip(grids, center, radii)) <= 1.0
    mask[tuple(slice(a, b) for a, b in zip(lo, hi))] |= inside


def lesion_case(
    shape: tuple[int, ...] = (400, 400, 300),
    n_lesions: int = 20,
    radius_range: tuple[float, float] = (1.5, 22.0),
    n_false_positives: int = 3,
    seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """A GT with ellipsoidal lesions and a degraded prediction of it (the benchmark case).

    GT: ``n_lesions`` ellipsoids at uniformly random centres; each has a base
    radius drawn log-uniformly in ``radius_range`` (voxels) and per-axis radii
    of 0.75-1.25 times it, clipped to the range.  Prediction: each lesion
    shifted by -2..2 voxels per axis and scaled by 0.8, 1.0, 1.2 in turn;
    every fifth lesion is missed; plus ``n_false_positives`` balls of radius
    2-6 at random positions.  Lesions may touch or merge, as in real data.

    Returns
    -------
    gt, pred : ndarray of bool

    Examples
    --------
    >>> gt, pred = lesion_case((64, 64, 48), n_lesions=5, radius_range=(2, 6), seed=1)
    >>> gt.shape, gt.dtype, bool(gt.any() and pred.any())
    ((64, 64, 48), dtype('bool'), True)
    """
    rng = np.random.default_rng(seed)
    gt = np.zeros(shape, dtype=bool)
    pred = np.zeros(shape, dtype=bool)
    low, high = np.log(radius_range[0]), np.log(radius_range[1])
    scales = (0.8, 1.0, 1.2)
    for i in range(n_lesions):
        center = rng.uniform(0, shape)
        base = np.exp(rng.uniform(low, high))
        radii = np.clip(base * rng.uniform(0.75, 1.25, len(shape)), *radius_range)
        draw_ellipsoid(gt, center, radii)
        if i % 5 == 4:
            continue  # missed lesion
        shift = rng.integers(-2, 3, len(shape))
        draw_ellipsoid(pred, center + shift, radii * scales[i % 3])
    for _ in range(n_false_positives):
        draw_ellipsoid(pred, rng.uniform(0, shape), (rng.uniform(2, 6),) * len(shape))
    return gt, pred
