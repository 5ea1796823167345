"""Independent reference computations shared by the tests.

Nothing here uses ccmetrics' own partition or metric code: the partition is the
brute-force loop of one EDT per component (the original CC-Metrics algorithm),
and metric values come from MONAI on full-size masked volumes.
"""

import warnings

import numpy as np
import pytest
from scipy import ndimage

ALL_METRICS = ["dice", "iou", "nsd", "hd", "hd95", "assd"]


def brute_force_partition(sites_map, spacing=None):
    """Per-site EDT loop with strict '<': ties go to the lowest site label.

    Returns (partition, tie) where tie marks voxels at equal minimal distance
    from two or more sites.
    """
    labels = np.unique(sites_map)
    labels = labels[labels > 0]
    best = np.full(sites_map.shape, np.inf)
    out = np.zeros(sites_map.shape, np.int32)
    tie = np.zeros(sites_map.shape, bool)
    for c in labels:
        d = ndimage.distance_transform_edt(sites_map != c, sampling=spacing)
        tie |= d == best
        closer = d < best
        tie &= ~closer
        best[closer] = d[closer]
        out[closer] = c
    return out, tie


def scipy_components(mask, connectivity):
    """Components via scipy.ndimage.label (raster-order numbering)."""
    rank = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}[connectivity]
    structure = ndimage.generate_binary_structure(mask.ndim, rank)
    return ndimage.label(mask, structure=structure)


def one_hot(mask):
    import torch

    t = torch.from_numpy(np.ascontiguousarray(mask, dtype=bool))
    return torch.stack([~t, t]).unsqueeze(0).float()


def monai_metrics(pred, gt, spacing=None, tolerance=1.0):
    """MONAI 1.6's own values for each built-in metric on two full-size binary masks."""
    from monai.metrics import DiceMetric, HausdorffDistanceMetric, MeanIoU, SurfaceDiceMetric, SurfaceDistanceMetric

    p, g = one_hot(pred), one_hot(gt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "dice": float(DiceMetric(include_background=False)(p, g)[0, 0]),
            "iou": float(MeanIoU(include_background=False)(p, g)[0, 0]),
            "nsd": float(SurfaceDiceMetric([tolerance], include_background=False)(p, g, spacing=spacing)[0, 0]),
            "hd": float(HausdorffDistanceMetric(include_background=False)(p, g, spacing=spacing)[0, 0]),
            "hd95": float(
                HausdorffDistanceMetric(include_background=False, percentile=95)(p, g, spacing=spacing)[0, 0]
            ),
            "assd": float(SurfaceDistanceMetric(include_background=False, symmetric=True)(p, g, spacing=spacing)[0, 0]),
        }


def random_blobs(rng, shape, density=0.03, grow=1, keep=0.8):
    """Random irregular blobs: dilated random seeds with holes punched in."""
    seeds = rng.random(shape) < density
    blobs = ndimage.binary_dilation(seeds, iterations=grow) if grow else seeds
    return blobs & (rng.random(shape) < keep)


def degrade(rng, gt):
    """A prediction: GT shifted by up to 2 voxels, thinned, plus scattered false positives."""
    shifted = np.roll(gt, tuple(rng.integers(-2, 3, gt.ndim)), axis=tuple(range(gt.ndim)))
    return (shifted & (rng.random(gt.shape) < 0.9)) | (rng.random(gt.shape) < 0.003)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Before the skip reasons (``-rfEs`` in pyproject.toml's addopts: each skip's reason names what it needs, the
    browser tests Debian's ``chromium`` and ``chromium-driver``), one line on how to run the tests skipped for a missing
    Python package: the ``test`` extra installs them all."""
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = [str(report.longrepr[-1]) for report in skipped if isinstance(report.longrepr, tuple)]
    python_package = ("could not import", "pip install", "scikit-posthocs not installed")
    if any(words in reason for reason in reasons for words in python_package):
        terminalreporter.write_line(
            "Each skipped test below says what it needs; those skipped for a missing Python package run after "
            'pip install -e ".[test]".'
        )


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


#: a GT of two components with an isolated tie at (0, 0, 0): squared distance 49 from (2, 3, 6) in
#: component 1 and from (2, 6, 3) in component 2, while every neighbour of the corner is strictly closer to one
CORNER_TIE_VOXELS = [
    (0, 3, 7),
    (1, 3, 7),
    (2, 3, 6),
    (1, 0, 7),
    (1, 0, 8),
    (1, 1, 9),
    (1, 2, 9),
    (1, 3, 9),
    (1, 4, 9),
    (1, 5, 6),
    (1, 5, 7),
    (1, 5, 8),
    (2, 5, 5),
    (2, 6, 3),
    (2, 6, 4),
    (3, 5, 5),
    (4, 3, 5),
    (4, 4, 5),
]


def corner_tie_gt():
    gt = np.zeros((5, 7, 10), bool)
    gt[tuple(np.array(CORNER_TIE_VOXELS).T)] = True
    return gt


def many_query_case(seed):
    """A sparse or lattice-symmetric GT (seeds 3-5: many exact ties far from the sites) with every voxel
    outside it as a query: (gt, spacing, surface coords, surface labels, query, brute-force labels, ties)."""
    from ccmetrics import label_components
    from ccmetrics.engine.components import find_sites
    from ccmetrics.engine.partition import site_surfaces

    rng = np.random.default_rng(seed)
    shape = [(30, 28, 22), (40, 36), (26, 30, 24)][seed % 3]
    spacing = [(1.0, 1.0, 2.5), (0.7, 1.3), None][seed % 3]
    gt = rng.random(shape) < 0.004
    if seed >= 3:
        gt = np.zeros(shape, bool)
        gt[tuple(slice(4, n - 4, 6) for n in shape)] = True
    found = find_sites(gt)
    coords, labels = site_surfaces(found, found.label_map(flat=True))
    expected, tie = brute_force_partition(label_components(gt)[0], spacing)
    return gt, spacing, coords, labels, np.argwhere(~gt), expected, tie
