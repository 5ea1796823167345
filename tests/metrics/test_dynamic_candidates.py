"""dynamic_candidates against report_guided_annotation's extract_lesion_candidates(threshold="dynamic")."""

import numpy as np
import pytest

from ccmetrics.metrics._dynamic_candidates import dynamic_candidates

rga = pytest.importorskip("report_guided_annotation")


def detection_map(labels, confidences):
    return np.where(labels > 0, confidences[np.maximum(labels, 1) - 1] if len(confidences) else 0, 0)


def check(prob):
    """Same detection map, index map and confidences as the reference; returns our (labels, confidences)."""
    expected, ref_conf, ref_index = rga.extract_lesion_candidates(prob, threshold="dynamic")
    labels, confidences = dynamic_candidates(prob)
    assert labels.dtype == np.int32 and labels.shape == prob.shape
    assert np.array_equal(detection_map(labels, confidences), expected)
    if ref_conf == [(1, 0.0)]:  # only small components at the first threshold: index 1 on every voxel
        assert not labels.any() and len(confidences) == 0
    else:
        assert np.array_equal(labels, ref_index)
        assert [(k, float(c)) for k, c in enumerate(confidences, 1)] == [(k, c) for k, c in ref_conf if c > 0]
    return labels, confidences


def gaussians(rng, shape, n_blobs, sigma=(1.0, 4.0)):
    grid = np.indices(shape, dtype=np.float64)
    prob = np.zeros(shape)
    for _ in range(n_blobs):
        centre = [rng.uniform(0, s) for s in shape]
        s = rng.uniform(*sigma, size=len(shape))
        r2 = sum(((g - c) / w) ** 2 for g, c, w in zip(grid, centre, s))
        prob = np.maximum(prob, rng.uniform(0, 1) * np.exp(-0.5 * r2))
    return prob


def random_shape(rng):
    return tuple(int(s) for s in rng.integers(24, 41, size=3))


@pytest.mark.parametrize("seed", range(16))
def test_smooth_blobs(seed):
    rng = np.random.default_rng(seed)
    prob = gaussians(rng, random_shape(rng), int(rng.integers(1, 13)))
    check(prob.astype(np.float32) if seed % 2 else prob)


@pytest.mark.parametrize("seed", range(8))
def test_summed_blobs(seed):
    rng = np.random.default_rng(100 + seed)
    shape = random_shape(rng)
    prob = sum(gaussians(rng, shape, 1) for _ in range(int(rng.integers(2, 10))))
    check(np.clip(prob, 0, 1))


@pytest.mark.parametrize("seed", range(8))
def test_plateaus_and_ties(seed):
    rng = np.random.default_rng(200 + seed)
    prob = gaussians(rng, random_shape(rng), int(rng.integers(3, 15)), sigma=(1.0, 3.0))
    decimals = 1 if seed % 2 else 2
    check(np.round(prob, decimals).astype(np.float32 if seed % 4 < 2 else np.float64))


@pytest.mark.parametrize("seed", range(6))
def test_tiny_candidates(seed):
    """Specks of 1..12 voxels (around the 10-voxel minimum), some holding the global max."""
    rng = np.random.default_rng(300 + seed)
    shape = random_shape(rng)
    prob = 0.6 * gaussians(rng, shape, int(rng.integers(1, 5)))
    for _ in range(int(rng.integers(5, 30))):
        size = int(rng.integers(1, 13))
        start = [int(rng.integers(0, s - 12)) for s in shape]
        axis = int(rng.integers(0, 3))
        index = [slice(a, a + 1) for a in start]
        index[axis] = slice(start[axis], start[axis] + size)  # a line of `size` voxels
        prob[tuple(index)] = rng.uniform(0.05, 1.0)
    check(prob)


@pytest.mark.parametrize("seed", range(6))
def test_touching_blobs(seed):
    """Cubes on a grid with 0- or 1-voxel gaps: 26-adjacent candidates are discarded, not merged."""
    rng = np.random.default_rng(400 + seed)
    prob = np.zeros((30, 30, 30))
    for i in range(0, 28, 4):
        for j in range(0, 28, 4):
            if rng.random() < 0.3:
                continue
            gap = int(rng.integers(0, 2))
            prob[i : i + 4 - gap, j : j + 4 - gap, 5:9] = rng.uniform(0.05, 1.0)
            prob[i + 1, j + 1, 6] = rng.uniform(0.05, 1.0)  # a peak inside
    check(prob)


@pytest.mark.parametrize("seed", range(4))
def test_noise(seed):
    rng = np.random.default_rng(500 + seed)
    prob = rng.random(random_shape(rng)) ** 3
    check(prob.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_values_exactly_at_the_threshold(dtype):
    # the threshold is peak / 2.5 in the computing dtype (float32 for float16 maps: 0.625 keeps it exact)
    peak = dtype(0.625 if dtype == np.float16 else 0.7)
    threshold = dtype((np.float32 if dtype == np.float16 else dtype)(peak) / 2.5)
    below = np.nextafter(threshold, dtype(0))
    prob = np.zeros((24, 24, 24), dtype)
    prob[2:8, 2:8, 2:8] = threshold  # exactly at the threshold: part of the first candidate
    prob[4, 4, 4] = peak
    prob[2:8, 2:8, 9:14] = below  # just below: a candidate of its own at the next threshold
    prob[14:20, 14:20, 14:20] = below
    labels, confidences = check(prob)
    assert (labels[2:8, 2:8, 2:8] == 1).all() and not (labels[2:8, 2:8, 9:14] == 1).any()
    assert len(confidences) == 3


def test_stopping_threshold_boundary():
    prob = np.zeros((20, 20, 20), np.float32)
    prob[2:6, 2:6, 2:6] = np.float32(0.01)  # not below 0.01 in float32 arithmetic
    prob[12:16, 12:16, 12:16] = np.nextafter(np.float32(0.01), np.float32(0))
    labels, confidences = check(prob)
    assert len(confidences) == 1


def test_all_zero_and_one_voxel():
    check(np.zeros((24, 24, 24)))
    check(np.ones((1, 1, 1)))
    prob = np.zeros((24, 24, 24))
    prob[10, 10, 10] = 0.9
    labels, confidences = check(prob)
    assert not labels.any()


def test_other_ranks():
    """The reference labels 3D only; below 0.01 it returns nothing before labelling, whatever the rank."""
    for prob in (np.zeros((30, 30)), np.full((4, 5, 6, 7), 0.005)):
        labels, confidences = dynamic_candidates(prob)
        assert not labels.any() and len(confidences) == 0
        assert not rga.extract_lesion_candidates(prob, threshold="dynamic")[0].any()
    prob = np.zeros((30, 30))
    prob[5:15, 5:15] = 0.5
    with pytest.raises(RuntimeError):
        rga.extract_lesion_candidates(prob, threshold="dynamic")
    with pytest.raises(ValueError, match="3D"):
        dynamic_candidates(prob)
    with pytest.raises(ValueError, match="NaN"):
        dynamic_candidates(np.full((5, 5, 5), np.nan))


def test_more_than_five_blobs():
    prob = np.zeros((20, 20, 40))
    for k in range(8):
        prob[2:6, 2:6, 5 * k : 5 * k + 3] = 0.9 - 0.1 * k
    labels, confidences = check(prob)
    assert len(confidences) == 5


def test_hand_built():
    """Expected candidates worked out by hand from the algorithm, not from the reference."""
    prob = np.zeros((10, 10, 24))
    prob[1:4, 1:4, 1:4] = 0.5  # A: 27 voxels, peak 0.8
    prob[2, 2, 2] = 0.8
    prob[1:4, 1:4, 4:6] = 0.25  # A's shoulder: below 0.8 / 2.5 = 0.32, touches A
    prob[6:9, 6:9, 1:4] = 0.4  # B: 27 voxels at 0.4 >= 0.32, peak 0.4
    prob[1:4, 6:9, 8:12] = 0.2  # C: 36 voxels at 0.2
    prob[8, 1, 20] = 0.2  # D: one voxel, too small
    prob[5:7, 5:7, 16:18] = 0.6  # E: 8 voxels, too small, with a higher peak than B
    # threshold 0.8 / 2.5 = 0.32: A (peak 0.8) and B (peak 0.4) are candidates, E is small: A is kept.
    # The max is now E's 0.6, never removed: threshold 0.24, where B is kept, then A's shoulder (18 voxels,
    # peak 0.25) is discarded since it touches A; C is below 0.24 and only E is left: the extraction ends.
    labels, confidences = dynamic_candidates(prob)
    expected = np.zeros(prob.shape, np.int32)
    expected[1:4, 1:4, 1:4] = 1
    expected[6:9, 6:9, 1:4] = 2
    assert np.array_equal(labels, expected)
    assert confidences.tolist() == [0.8, 0.4]
    check(prob)
    # without E the second threshold is B's 0.4 / 2.5 = 0.16: B is kept, the shoulder discarded, C kept;
    # then D's 0.2 gives 0.08, where D alone is too small
    prob[5:7, 5:7, 16:18] = 0
    labels, confidences = dynamic_candidates(prob)
    expected[1:4, 6:9, 8:12] = 3
    assert np.array_equal(labels, expected)
    assert confidences.tolist() == [0.8, 0.4, 0.2]
    check(prob)
