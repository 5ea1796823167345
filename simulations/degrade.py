"""Degradations of a ground truth: pure functions of (mask, step, target, seed) → a prediction mask.

Each function starts from the GT (a "perfect prediction") and degrades the *targeted* GT components:

* :func:`erode` / :func:`dilate`: ``step`` iterations of binary erosion / dilation with the 3×3×3 cube
  (3×3 in 2D); voxels outside the image count as background;
* :func:`shift`: move the components by ``step`` voxels along ``axis`` (voxels leaving the image are lost);
* :func:`drop`: remove ``step`` components;
* :func:`add_false_positives`: add ``step`` false-positive balls, one in the Voronoi region of each
  targeted component, of the volume of the case's 25th-percentile lesion.

Targets (:func:`select`): ``"all"``, one component label ``c`` (1..K, raster order), or
``("smallest", n)`` / ``("largest", n)``. For :func:`drop` and :func:`add_false_positives` the step is the
number of components affected with target ``"smallest"`` or ``"largest"`` (the ``step`` smallest or
largest); another target is a fixed set, affected from step 1 on; step 0 is always the GT itself.

Cost: the GT is labelled once into a :class:`Components` (pass it as ``components=`` to reuse it over
steps); each step copies the mask once and works on every targeted component's bounding box only
(padded by the step for dilation and shift), never on the whole volume per component. Per-component
erosion and dilation equal the same operation on the whole mask, because distinct 26-connected
components never lie in each other's 3×3×3 neighbourhood (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from scipy import ndimage

from ccmetrics.engine.components import Sites, find_sites

__all__ = ["DEGRADATIONS", "Components", "add_false_positives", "dilate", "drop", "erode", "select", "shift"]

#: :func:`add_false_positives` computes the whole Voronoi partition once its nearest-site searches have covered
#: 1 / PARTITION_RATIO of the image's voxels (a search costs about 30 times a partition's voxel)
PARTITION_RATIO = 32

Target = Union[str, int, tuple[str, int]]


@dataclass(frozen=True, eq=False)
class Components:
    """The GT's connected components, their voxels, bounding boxes and volumes (one labelling pass).

    Attributes
    ----------
    sites : ccmetrics.engine.components.Sites
        Voxels of each component (labels 1..K in raster order, as :func:`ccmetrics.evaluate`).
    lo, hi : ndarray of int, shape (K, ndim)
        Bounding box of each component: ``lo <= coords < hi``.
    """

    sites: Sites
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, gt: np.ndarray, connectivity: int | None = None) -> Components:
        sites = find_sites(np.asarray(gt, dtype=bool), "components", connectivity)
        coords = sites.coords()
        k, ndim = sites.n, len(sites.shape)
        lo, hi = np.zeros((k, ndim), np.int64), np.zeros((k, ndim), np.int64)
        for c in range(k):
            part = coords[sites.starts[c] : sites.starts[c + 1]]
            lo[c], hi[c] = part.min(axis=0), part.max(axis=0) + 1
        return cls(sites, lo, hi)

    @property
    def n(self) -> int:
        return self.sites.n

    @property
    def volumes(self) -> np.ndarray:
        """Voxels per component (length K)."""
        return self.sites.volumes

    def coords(self, c: int) -> np.ndarray:
        """Voxel coordinates of component ``c`` (1..K), shape (V, ndim)."""
        s = self.sites
        return np.stack(np.unravel_index(s.flat_index[s.starts[c - 1] : s.starts[c]], s.shape), axis=1)

    def box_mask(self, c: int, pad: Sequence[int]) -> tuple[tuple[slice, ...], np.ndarray, np.ndarray]:
        """Component ``c`` in its bounding box padded by ``pad`` voxels per axis (clipped to the image).

        Returns ``(box, mask, lo)``: the box as slices of the image, the component's mask inside it,
        and the box's first voxel.
        """
        lo = np.maximum(self.lo[c - 1] - np.asarray(pad), 0)
        hi = np.minimum(self.hi[c - 1] + np.asarray(pad), self.sites.shape)
        mask = np.zeros(tuple(hi - lo), bool)
        mask[tuple((self.coords(c) - lo).T)] = True
        return tuple(slice(a, b) for a, b in zip(lo, hi)), mask, lo


def _components(gt: np.ndarray, components: Components | None) -> Components:
    if components is None:
        return Components.of(gt)
    if tuple(components.sites.shape) != tuple(np.shape(gt)):
        raise ValueError(f"components were computed for shape {components.sites.shape}, the mask has {np.shape(gt)}")
    return components


def select(components: Components, target: Target) -> list[int]:
    """Labels (1..K) of the targeted components.

    ``"all"``; a label ``c``; ``("smallest", n)`` / ``("largest", n)``: the n smallest / largest by
    volume (ties: lower label first), fewer when the case has fewer components.

    >>> gt = np.zeros((9, 9), bool); gt[0, 0] = gt[4:6, 4:6] = gt[8, 6:9] = True
    >>> comps = Components.of(gt)
    >>> comps.volumes.tolist(), select(comps, ("smallest", 2)), select(comps, ("largest", 1))
    ([1, 4, 3], [1, 3], [2])
    """
    k = components.n
    if isinstance(target, str):
        if target != "all":
            raise ValueError(
                f"target must be 'all', a component label, ('smallest', n) or ('largest', n); got {target!r}"
            )
        return list(range(1, k + 1))
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        if not 1 <= target <= k:
            raise ValueError(f"component {target} does not exist: the GT has {k} components (labels 1..{k})")
        return [int(target)]
    if isinstance(target, tuple) and len(target) == 2 and target[0] in ("smallest", "largest"):
        n = int(target[1])
        if n < 0:
            raise ValueError(f"the number of targeted components must be >= 0, got {n}")
        order = np.argsort(components.volumes, kind="stable")
        if target[0] == "largest":
            order = np.argsort(-components.volumes, kind="stable")
        return sorted(int(c) + 1 for c in order[:n])
    raise ValueError(f"target must be 'all', a component label, ('smallest', n) or ('largest', n); got {target!r}")


def _check_step(step: int) -> int:
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise ValueError(f"step must be a whole number >= 0, got {step!r}")
    return int(step)


def _replace(gt: np.ndarray, comps: Components, labels: Sequence[int], pad: Sequence[int], op) -> np.ndarray:
    """Copy ``gt``, remove the targeted components, and add ``op(mask, lo)`` of each in its padded box."""
    out = np.array(gt, dtype=bool, copy=True)
    pieces = []
    for c in labels:
        box, mask, lo = comps.box_mask(c, pad)
        out[box] &= ~mask
        pieces.append((box, op(mask, lo)))
    for box, new in pieces:  # all removed first: a grown component is never cut by a later removal
        out[box] |= new
    return out


def _cube_filter(mask: np.ndarray, step: int, grow: bool) -> np.ndarray:
    """``step`` iterations of binary erosion (``grow=False``) or dilation with the 3×3×3 cube, outside = 0.

    Iterating the 3-cube ``step`` times equals one pass with the (2 step + 1)-cube, which is separable:
    a 1D minimum (maximum) filter of that length along each axis, O(voxels) whatever the step.
    """
    out = mask.view(np.uint8)
    size = 2 * step + 1
    for axis in range(mask.ndim):
        if grow:
            out = ndimage.maximum_filter1d(out, size, axis=axis, mode="constant", cval=0)
        else:
            out = ndimage.minimum_filter1d(out, size, axis=axis, mode="constant", cval=0)
    return out.astype(bool)


def erode(
    gt: np.ndarray, step: int, target: Target = "all", *, seed: Any = None, components: Components | None = None
) -> np.ndarray:
    """``step`` binary erosions (3×3×3 cube) of the targeted components.

    >>> gt = np.zeros((7, 7), bool); gt[1:6, 1:6] = True
    >>> int(erode(gt, 1).sum()), int(erode(gt, 2).sum()), int(erode(gt, 3).sum())
    (9, 1, 0)
    """
    step = _check_step(step)
    comps = _components(gt, components)
    if step == 0:
        return np.array(gt, dtype=bool, copy=True)
    return _replace(gt, comps, select(comps, target), [0] * np.ndim(gt), lambda m, lo: _cube_filter(m, step, False))


def dilate(
    gt: np.ndarray, step: int, target: Target = "all", *, seed: Any = None, components: Components | None = None
) -> np.ndarray:
    """``step`` binary dilations (3×3×3 cube) of the targeted components (they may merge).

    >>> gt = np.zeros((7, 7), bool); gt[3, 3] = True
    >>> int(dilate(gt, 1).sum()), int(dilate(gt, 3).sum())
    (9, 49)
    """
    step = _check_step(step)
    comps = _components(gt, components)
    if step == 0:
        return np.array(gt, dtype=bool, copy=True)
    return _replace(gt, comps, select(comps, target), [step] * np.ndim(gt), lambda m, lo: _cube_filter(m, step, True))


def shift(
    gt: np.ndarray,
    step: int,
    target: Target = "all",
    *,
    axis: int = 0,
    seed: Any = None,
    components: Components | None = None,
) -> np.ndarray:
    """Move the targeted components by ``step`` voxels along ``axis`` (positive direction).

    >>> gt = np.zeros((6, 3), bool); gt[1:3, 1] = True
    >>> np.flatnonzero(shift(gt, 2)[:, 1]).tolist()
    [3, 4]
    """
    step = _check_step(step)
    comps = _components(gt, components)
    ndim = np.ndim(gt)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis must be an axis of the {ndim}D mask, got {axis}")
    axis %= ndim
    pad = [0] * ndim
    pad[axis] = step

    def move(mask: np.ndarray, lo: np.ndarray) -> np.ndarray:
        out = np.zeros_like(mask)
        src = [slice(None)] * ndim
        dst = [slice(None)] * ndim
        n = mask.shape[axis]
        if step < n:
            src[axis], dst[axis] = slice(0, n - step), slice(step, n)
            out[tuple(dst)] = mask[tuple(src)]
        return out

    return _replace(gt, comps, select(comps, target), pad, move)


def _count_target(target: Target, step: int, comps: Components) -> list[int]:
    """The components a counting degradation (drop, false positives) affects at ``step``.

    ``"smallest"`` / ``"largest"``: the ``step`` smallest / largest. Any other target (``"all"``, a
    label, ``("smallest", n)``) is a fixed set: none at step 0, the set from step 1 on. Step 0 always
    leaves the GT unchanged.
    """
    if target in ("smallest", "largest"):
        return select(comps, (target, step))
    return select(comps, target) if step > 0 else []


def drop(
    gt: np.ndarray, step: int, target: Target = "smallest", *, seed: Any = None, components: Components | None = None
) -> np.ndarray:
    """Remove ``step`` components: the ``step`` smallest (``target="smallest"``) or largest, or ``target``'s.

    >>> gt = np.zeros((9, 9), bool); gt[0, 0] = gt[4:6, 4:6] = gt[8, 6:9] = True
    >>> int(drop(gt, 1).sum()), int(drop(gt, 2, "largest").sum())
    (7, 1)
    """
    step = _check_step(step)
    comps = _components(gt, components)
    return _replace(gt, comps, _count_target(target, step, comps), [0] * np.ndim(gt), lambda m, lo: np.zeros_like(m))


def add_false_positives(
    gt: np.ndarray,
    step: int,
    target: Target = "smallest",
    *,
    seed: int = 0,
    spacing: Sequence[float] | None = None,
    volume: float | None = None,
    components: Components | None = None,
    max_tries: int = 200,
) -> np.ndarray:
    """Add one false-positive ball in the Voronoi region of each of ``step`` targeted components.

    Each ball has ``volume`` voxels (default: the 25th percentile of the case's lesion volumes), is
    placed at a random position (``seed``) whose nearest GT component is the targeted one (exact rule,
    :func:`ccmetrics.engine.partition.assign_nearest`; every voxel of the ball when such a free position is found
    in ``max_tries`` batches, else its centre only), and neither touches the GT nor another false positive
    (so it is a component of its own). With a ``spacing`` the ball is round in mm.

    Raises ``ValueError`` when no such position is found in ``max_tries`` batches of candidates.

    Cost: each batch's nearest components come from the exact nearest-site search, about 1-2 µs a voxel (the
    candidates', and every voxel of a ball that might fit). Once this search has covered ``1 / PARTITION_RATIO`` of
    the image's voxels (a crowded image, where most balls touch the GT or leave the region), the whole Voronoi
    partition is computed once (:func:`ccmetrics.voronoi_partition`, about 50 ns a voxel) and read instead: the
    same labels (both follow the exact rule, ties to the lowest label), so the same false positives.

    >>> gt = np.zeros((40, 40), bool); gt[5:9, 5:9] = gt[30:34, 30:34] = True
    >>> from ccmetrics import label_components
    >>> pred = add_false_positives(gt, 1, "smallest", seed=0, volume=5)
    >>> label_components(pred)[1], bool((pred & ~gt).sum() >= 5)
    (3, True)
    """
    from ccmetrics.engine.partition import assign_nearest, site_surfaces, voronoi_partition

    step = _check_step(step)
    comps = _components(gt, components)
    labels = _count_target(target, step, comps)
    out = np.array(gt, dtype=bool, copy=True)
    if not labels:
        return out
    ndim = np.ndim(gt)
    shape = np.array(np.shape(gt))
    volume = float(np.percentile(comps.volumes, 25)) if volume is None else float(volume)
    spacing_arr = np.ones(ndim) if spacing is None else np.asarray(spacing, float)
    voxel = float(np.prod(spacing_arr))
    unit = (3 * volume * voxel / (4 * np.pi)) ** (1 / 3) if ndim == 3 else np.sqrt(volume * voxel / np.pi)
    radii = np.maximum(unit / spacing_arr, 0.5)
    site_map = comps.sites.label_map(flat=True)
    surface, surface_labels = site_surfaces(comps.sites, site_map)
    rng = np.random.default_rng(seed)
    region: list[np.ndarray] = []  # the whole partition, once the searches have cost about as much
    searched = [0]

    def nearest(points: np.ndarray) -> np.ndarray:
        if not region and searched[0] * PARTITION_RATIO >= out.size:
            region.append(voronoi_partition(comps.sites, spacing=spacing))
        if region:
            return region[0][tuple(points.T)]
        searched[0] += len(points) + 256  # a search's fixed cost, about that of 256 voxels
        return assign_nearest(points, surface, surface_labels, spacing)

    reach = np.ceil(radii).astype(int) + 1  # a ball plus one voxel of clearance
    if np.any(shape < 2 * reach + 1):
        raise ValueError(
            f"a false positive of {volume:g} voxels does not fit in an image of shape {tuple(int(n) for n in shape)}"
        )
    for c in labels:
        fallback = None  # a free ball whose centre only is in c's region: placed when no ball fits inside
        for _ in range(max_tries):
            candidates = rng.integers(reach, np.maximum(shape - reach, reach + 1), size=(256, ndim))
            placed = False
            for center in candidates[nearest(candidates) == c]:
                box = tuple(slice(int(a - r), int(a + r + 1)) for a, r in zip(center, reach))
                if out[box].any():  # would touch the GT or another false positive
                    continue
                grids = np.ogrid[tuple(slice(-r, r + 1) for r in reach)]
                ball = sum((g / rr) ** 2 for g, rr in zip(grids, radii)) <= 1.0
                voxels = np.argwhere(ball) + (center - reach)  # every voxel in c's region, not only the centre
                if np.any(nearest(voxels) != c):
                    fallback = (box, ball) if fallback is None else fallback
                    continue
                out[box] |= ball
                placed = True
                break
            if placed:
                break
        else:
            if fallback is not None:
                out[fallback[0]] |= fallback[1]
                continue
            raise ValueError(
                f"found no free position for a false positive of {volume:g} voxels in the region "
                f"of component {c}; pass a smaller volume="
            )
    return out


#: the degradations by name, as scenarios refer to them
DEGRADATIONS = {
    "erode": erode,
    "dilate": dilate,
    "shift": shift,
    "drop": drop,
    "add_false_positives": add_false_positives,
}
