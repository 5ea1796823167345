"""The engine configuration is a public object: every value it accepts gives the default configuration's values,
and what cannot work is refused with a message (found by an adversarial sweep of every field)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ccmetrics import EngineConfig, GroundTruth, engine_config, evaluate

METRICS = ["dice", "nsd", "hd95", "assd", "pq", "lesion_dice", "detection"]


def _cases():
    rng = np.random.default_rng(0)
    gt = np.zeros((20, 20), bool)
    gt[2:5, 2:5] = True
    gt[12:15, 12:15] = True
    pred = np.zeros_like(gt)
    pred[2:5, 6:8] = True  # beside one lesion: every voxel outside the GT settled by the first block size
    out = [(pred, gt, None)]
    g = rng.random((24, 20, 12)) < 0.01
    out.append((np.roll(g, 1, 0) | (rng.random(g.shape) < 0.02), g, (1.0, 0.7, 2.0)))
    lattice = np.zeros((40, 50), bool)
    lattice[2::5, 3::6] = True  # one-voxel lesions, one large random prediction component
    out.append((rng.random(lattice.shape) < 0.5, lattice, None))
    return out


def _values(config):
    rows = []
    with engine_config(config):
        for pred, gt, spacing in _cases():
            result = evaluate(pred, gt, METRICS, spacing=spacing)
            rows.append(repr((result.per_component.to_numpy().tolist(), sorted(result.case_row().items()))))
    return rows


@pytest.fixture(scope="module")
def default_values():
    return _values(EngineConfig())


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(EngineConfig)])
def test_every_accepted_value_gives_the_same_values(field, default_values):
    for value in (0, 1, 2, 3, 1 << 40):
        try:
            config = EngineConfig().replace(**{field: value})
        except ValueError as exc:
            assert f"EngineConfig.{field} must be at least" in str(exc)
            continue
        assert _values(config) == default_values, (field, value)


def test_small_block_thresholds_no_longer_fail():
    """block_min_queries 0-3 failed with 'zero-size array to reduction operation maximum' whenever every voxel
    outside the GT was settled by the first block size."""
    pred, gt, _ = _cases()[0]
    expected = evaluate(pred, gt, ["dice", "hd95"]).per_component
    for value in range(4):
        with engine_config(block_min_queries=value):
            assert evaluate(pred, gt, ["dice", "hd95"]).per_component.equals(expected)


def test_what_cannot_work_is_refused_with_a_message():
    with pytest.raises(ValueError, match="tie_candidates must be at least 2"):
        EngineConfig(tie_candidates=1)
    with pytest.raises(ValueError, match="query_chunk must be at least 1"):
        EngineConfig(query_chunk=0)
    with pytest.raises(ValueError, match="must be a whole number >= 0"):
        EngineConfig(grouped_from=-1)


def test_a_kept_region_map_cannot_be_made_writeable_by_any_route():
    """Not the view, nor any array on the way to its memory (``.base``): later evaluations read the map."""
    gt = np.zeros((1, 12), bool)
    gt[0, 1] = gt[0, 9:11] = True
    truth = GroundTruth(gt)
    kept = truth.region_map()
    array = kept
    while isinstance(array, np.ndarray):
        with pytest.raises(ValueError):
            array.flags.writeable = True
        array = array.base
    pred = np.zeros_like(gt)
    pred[0, 1:7] = True
    assert evaluate(pred, truth, ["dice"]).per_component["dice"].round(4).tolist() == [0.3333, 0.0]
