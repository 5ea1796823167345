"""Ground truths for the degradation simulations: the paper's phantoms, a synthetic cohort, real masks.

* :func:`paper_spheres`: the CC-Metrics paper's toy ground truth (three balls in 500³);
* :func:`three_balls`: three equal balls whose dilated predictions merge at given dilation steps;
* :func:`lesion_dice_pitfall`: the two-lesion layout of the paper's Lesion Dice pitfall (Fig. 2 bottom);
* :func:`cohort`: a reproducible PET/CT-like cohort for the Fig. 4/5 studies;
* :func:`read_cohort`: any folder of GT masks, read with :func:`ccmetrics.formats.io.load_image`.

Every phantom is a :class:`Case`: an id, a boolean mask and a voxel spacing (mm). Shapes are drawn into
their bounding boxes only, so the 500³ phantom is built in about a second.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ccmetrics.synthetic import draw_ellipsoid

__all__ = [
    "PAPER_SPHERES",
    "Case",
    "cohort",
    "draw_ball",
    "lesion_dice_pitfall",
    "paper_spheres",
    "read_cohort",
    "three_balls",
]


@dataclass(frozen=True, eq=False)
class Case:
    """One ground truth of a simulation: ``case`` id, ``gt`` (bool array) and ``spacing`` (mm per axis)."""

    case: str
    gt: np.ndarray
    spacing: tuple[float, ...] = (1.0, 1.0, 1.0)


def draw_ball(mask: np.ndarray, center: Sequence[float], radius: float) -> None:
    """Set, in place, the voxels whose squared distance to ``center`` is strictly less than ``radius²``.

    >>> m = np.zeros((5, 5, 5), bool); draw_ball(m, (2, 2, 2), 1.5); int(m.sum())
    19
    """
    lo = [max(0, int(math.floor(c - radius))) for c in center]
    hi = [min(n, int(math.ceil(c + radius)) + 1) for c, n in zip(center, mask.shape)]
    if any(a >= b for a, b in zip(lo, hi)):
        return
    grids = np.ogrid[tuple(slice(a, b) for a, b in zip(lo, hi))]
    inside = sum((g - c) ** 2 for g, c in zip(grids, center)) < radius**2
    mask[tuple(slice(a, b) for a, b in zip(lo, hi))] |= inside


#: the paper's toy ground truth: (centre, radius) of each ball in a 500³ volume
PAPER_SPHERES = (((169, 426, 271), 50), ((394, 247, 333), 100), ((187, 431, 423), 20))


def paper_spheres(scale: float = 1.0) -> Case:
    """The CC-Metrics paper's toy ground truth: three balls of radius 50, 100 and 20 voxels in 500³.

    Voxel ``(i, j, k)`` is inside a ball when its squared distance to the centre is strictly less
    than r². Components in raster order: r = 50 (1), r = 20 (2), r = 100 (3). ``scale`` shrinks the
    volume, the centres and the radii alike (``scale=0.25``: 125³, for quick runs).

    >>> case = paper_spheres()
    >>> case.gt.shape, int(case.gt.sum())
    ((500, 500, 500), 4744233)
    """
    size = int(round(500 * scale))
    gt = np.zeros((size,) * 3, bool)
    for center, radius in PAPER_SPHERES:
        draw_ball(gt, tuple(c * scale for c in center), radius * scale)
    return Case("paper_spheres" if scale == 1 else f"paper_spheres_x{scale:g}", gt, (1.0, 1.0, 1.0))


def three_balls(radius: int = 10, merge_steps: tuple[int, int] = (3, 7)) -> Case:
    """Three equal balls in a row whose dilated predictions merge at the given dilation steps.

    Dilating each ball by s steps of the 3×3×3 cube grows it by s voxels along the row axis, so two
    balls whose gap (background voxels between them on the row) is g touch (become one 26-connected
    component) once ``2 s >= g``: gaps of ``2 * merge_steps[i]`` voxels merge at exactly those steps.

    >>> case = three_balls()
    >>> from ccmetrics import label_components
    >>> label_components(case.gt)[1]
    3
    """
    gaps = [2 * s for s in merge_steps]
    size = 2 * radius + 2 * max(merge_steps) + 8
    length = 6 * radius - 3 + sum(gaps) + 2 * (max(merge_steps) + 4)
    shape = (length, size, size)
    gt = np.zeros(shape, bool)
    x = max(merge_steps) + 4 + radius - 1
    for i in range(3):
        draw_ball(gt, (x, size // 2, size // 2), radius)
        if i < 2:
            x += 2 * radius - 1 + gaps[i]
    return Case("three_balls", gt, (1.0, 1.0, 1.0))


def lesion_dice_pitfall(size: int = 64) -> Case:
    """The Lesion Dice pitfall's GT: a large and a small lesion close to each other (paper Fig. 2 bottom).

    BraTS' Lesion Dice dilates each GT lesion and counts every prediction component touching the
    dilation as its TP: a prediction of the large lesion that grows towards the small one ends up
    assigned to both, and the small lesion is scored by the large one's prediction.
    """
    gt = np.zeros((size, size, size), bool)
    draw_ball(gt, (size // 2 - 10, size // 2, size // 2), 12)
    draw_ball(gt, (size // 2 + 10, size // 2, size // 2), 4)
    return Case("lesion_dice_pitfall", gt, (1.0, 1.0, 1.0))


def _irregular_lesion(mask: np.ndarray, center: np.ndarray, radius: float, rng: np.random.Generator) -> None:
    """A lobulated lesion: the union of 1-4 ellipsoids around ``center`` (radii in voxels)."""
    n_lobes = int(rng.integers(1, 5))
    for lobe in range(n_lobes):
        offset = np.zeros(3) if lobe == 0 else rng.normal(0, 0.45 * radius, 3)
        radii = radius * rng.uniform(0.55, 1.0, 3) * (1.0 if lobe == 0 else rng.uniform(0.4, 0.8))
        draw_ellipsoid(mask, center + offset, np.maximum(radii, 0.8))


def cohort(
    n_cases: int = 30,
    seed: int = 0,
    *,
    shape: tuple[int, int, int] = (160, 160, 120),
    spacing: tuple[float, float, float] = (2.0, 2.0, 3.0),
) -> list[Case]:
    """A reproducible synthetic PET/CT-like cohort for the Fig. 4/5 studies.

    Per case: a lesion count with mean about 10 and a long tail (a negative binomial, clipped to 1-60);
    lesion volumes log-normal (median 2 ml, clipped to 0.1-300 ml) at ``spacing`` (mm); lobulated shapes
    (unions of 1-4 ellipsoids); about one lesion in five placed next to the previous one, 2-5 voxels
    apart, so that they touch after dilation. Lesions may also merge into one component, as in real data.

    Parameters
    ----------
    n_cases : int
    seed : int
        The cohort depends on it only: the same seed gives the same masks.
    shape, spacing
        Image size (voxels) and voxel spacing (mm).

    Returns
    -------
    list of Case
        ``case_000``, ``case_001``, ...

    Examples
    --------
    >>> cases = cohort(2, seed=1, shape=(64, 64, 48))
    >>> [c.case for c in cases], cases[0].spacing
    (['case_000', 'case_001'], (2.0, 2.0, 3.0))
    >>> bool(np.array_equal(cases[1].gt, cohort(2, seed=1, shape=(64, 64, 48))[1].gt))
    True
    """
    rng = np.random.default_rng(seed)
    voxel_ml = float(np.prod(spacing)) / 1000.0
    cases = []
    for i in range(n_cases):
        gt = np.zeros(shape, bool)
        n = int(np.clip(1 + rng.negative_binomial(1.2, 0.12), 1, 60))
        volumes_ml = np.clip(rng.lognormal(np.log(2.0), 1.4, n), 0.1, 300.0)
        previous: tuple[np.ndarray, float] | None = None
        for volume in volumes_ml:
            radius = (3 * volume / voxel_ml / (4 * np.pi)) ** (1 / 3)  # voxels, for an isotropic ball
            radius = min(radius, min(shape) / 4)
            if previous is not None and rng.random() < 0.2:  # a close neighbour
                direction = rng.normal(size=3)
                direction /= np.linalg.norm(direction)
                center = previous[0] + direction * (previous[1] + radius + rng.uniform(2, 5))
            else:
                center = rng.uniform(radius + 1, np.array(shape) - radius - 1)
            _irregular_lesion(gt, center, radius, rng)
            previous = (center, radius)
        cases.append(Case(f"case_{i:03d}", gt, tuple(float(s) for s in spacing)))
    return cases


def read_cohort(gt_dir, *, suffix: str | None = None) -> list[Case]:
    """Every GT mask of a folder (any format :mod:`ccmetrics.formats.io` reads), binarised as ``gt != 0``.

    Spacing from the headers. Raises ``ValueError`` when the folder holds no image.
    """
    from ccmetrics.formats.io import image_id, is_image_file, load_image

    paths = sorted(p for p in Path(gt_dir).iterdir() if p.is_file() and is_image_file(p))
    if not paths:
        raise ValueError(f"no image file in {gt_dir}")
    cases = []
    for path in paths:
        image = load_image(path)
        cases.append(Case(image_id(path, suffix), np.asarray(image.array) != 0, tuple(image.spacing)))
    return cases
