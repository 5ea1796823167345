"""Until the data-set run takes the scans (``images=``, ``--images``), ``pet`` is refused there at once (issue 41).

Not an error row per case: ``evaluate_dataset`` and ``ccmetrics evaluate`` stop before any case is read, the CLI before
its output folder is made, with a message that says where the scan is taken for now.
"""

import numpy as np
import pytest

from ccmetrics import EvalOptions, evaluate_dataset
from ccmetrics.cli import main
from ccmetrics.metrics import registry
from ccmetrics.metrics.pet_case import NO_SCANS_YET

MESSAGE = r"takes no scans yet.*ccmetrics\.evaluate\(gt=\.\.\., pred=\.\.\., metrics=\[\.\.\., 'pet'\], image=scan\)"


def _cases():
    gt = np.zeros((6, 6), bool)
    gt[1:3, 1:3] = True
    return {"a": (gt, gt), "b": (gt, np.zeros_like(gt))}


@pytest.mark.parametrize(
    "how",
    [
        {"metrics": ["dice", "pet"]},
        {"metrics": "PET"},
        {"metrics": ["dice", "Pet"]},
        {"metrics": [registry.get("pet")]},
        {"options": EvalOptions(metrics=("dice", "pet"))},
    ],
)
def test_evaluate_dataset_refuses_pet_at_once(how, tmp_path, monkeypatch):
    import ccmetrics.campaign.dataset as dataset

    def never(*args, **kwargs):
        raise AssertionError("a case was run")

    monkeypatch.setattr(dataset, "_evaluate", never)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=MESSAGE):
        evaluate_dataset(_cases(), out_dir=out, progress=False, **how)
    assert not out.exists()


def test_evaluate_dataset_without_pet_still_runs():
    result = evaluate_dataset(_cases(), metrics=["dice", "detection"], progress=False)
    assert len(result.per_case) == 2 and (result.per_case["status"] != "error").all()


def test_the_command_line_refuses_pet_before_making_its_folder(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(tmp_path / "gt"),
            str(tmp_path / "pred"),
            "--out-dir",
            str(out),
            "--metrics",
            "dice,pet",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and NO_SCANS_YET in " ".join(err.split()) and not out.exists()
