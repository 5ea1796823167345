"""``DatasetResult.options`` as option objects (issue 40, point 6): the dict ``summary.json`` keeps stays
``options``; ``eval_options`` and ``pairing_options`` read it with the one parser of such records
(``EvalOptions.from_record``, ``PairingOptions.from_record``), in memory, from a folder, and from a folder written
by an older version."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

import ccmetrics
from ccmetrics.campaign import EvalOptions, PairingOptions
from ccmetrics.formats.io import save_image
from ccmetrics.results import DatasetResult


def _folders(tmp_path):
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    gt.mkdir()
    pred.mkdir()
    labels = np.zeros((10, 10, 4), np.uint8)
    labels[1:4, 1:4, 1:3] = 1
    labels[6:9, 6:9, 1:3] = 2
    for case in ("a", "b"):
        save_image(gt / f"{case}_0000.nii.gz", labels)
        save_image(pred / f"{case}.nii.gz", np.roll(labels, 1, axis=0))
    return gt, pred


def test_the_options_of_a_run_as_objects_in_memory_and_read_back(tmp_path):
    gt, pred = _folders(tmp_path)
    options = EvalOptions(metrics=["dice", "hd95"], classes="1,2", spacing="voxel", nsd_tolerance=2.0)
    pairing = PairingOptions(gt_suffix="_0000")
    result = ccmetrics.evaluate_dataset(
        gt, pred, options=options, pairing=pairing, run=ccmetrics.RunOptions(progress=False)
    )
    assert isinstance(result.options, dict)  # as summary.json keeps it
    assert result.eval_options.key() == options.checked().key()
    assert result.pairing_options == pairing
    result.write(tmp_path / "out", plots=False)
    back = DatasetResult.read(tmp_path / "out")
    assert back.options == result.options
    assert back.eval_options == result.eval_options and back.pairing_options == pairing


def test_the_options_of_an_older_folder(tmp_path):
    """Keys missing from an older summary take their defaults; classes held as label values are read."""
    table = pd.DataFrame()
    result = DatasetResult(table, table, options={"metrics": ["dice"], "classes": [1, 2], "spacing": [1, 1, 2]})
    options = result.eval_options
    assert options.metrics == ("dice",) and options.spacing == (1, 1, 2) and options.detection_rule is None
    assert [(c.value, c.name) for c in options.classes] == [(1, "1"), (2, "2")]
    assert result.pairing_options == PairingOptions()
    assert DatasetResult(table, table).eval_options.key() == EvalOptions.build().key()
    json.dumps(result.options)  # the dict itself is unchanged, plain data
