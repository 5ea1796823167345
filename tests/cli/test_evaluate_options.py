"""``ccmetrics evaluate``'s renamed options (issue 40): the former spellings ``--out``, ``--bootstrap`` and
``--channel`` still parse, with a ``DeprecationWarning`` naming the new one, and the command builds the same option
objects as Python."""

import warnings

import pytest

from ccmetrics.campaign import EvalOptions, PairingOptions, ProbabilityOptions, RunOptions
from ccmetrics.cli import build_parser
from ccmetrics.cli._evaluate import _options

NEW = ["evaluate", "gt", "pred", "--out-dir", "out", "--n-resamples", "50", "--prob-channel", "1"]
FORMER = ["evaluate", "gt", "pred", "--out", "out", "--bootstrap", "50", "--channel", "1"]


def _parsed(argv):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args = build_parser().parse_args(argv)
    return args, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


def test_former_spellings_warn_and_give_the_same_values():
    new, none = _parsed(NEW)
    old, messages = _parsed(FORMER)
    assert none == []
    renamed = [("--bootstrap", "--n-resamples"), ("--channel", "--prob-channel"), ("--out", "--out-dir")]
    assert sorted(messages) == [
        f"ccmetrics evaluate {former} is deprecated: use {current} (the former spelling works until ccmetrics 0.3)"
        for former, current in renamed
    ]
    for name in ("out", "n_resamples", "prob_channel"):
        assert getattr(old, name) == getattr(new, name)
    assert (new.out, new.n_resamples, new.prob_channel) == ("out", 50, 1)


def test_the_command_builds_the_option_objects_as_python_does():
    args, _ = _parsed(
        NEW + ["--metrics", "dice", "--spacing", "voxel", "--workers", "2", "--quiet", "--gt-suffix", "_0000",
               "--thresholds", "0.5", "--dask", "tcp://scheduler:8786", "--nnunet-summary"]
    )  # fmt: skip
    objects = _options(args)
    assert objects["options"] == EvalOptions(metrics=["dice"], spacing="voxel", nnunet_summary=True)
    assert objects["maps"] == ProbabilityOptions(prob_channel=1, thresholds="0.5")
    assert objects["run"] == RunOptions(workers=2, dask="tcp://scheduler:8786", progress=False, out_dir="out")
    assert objects["pairing"] == PairingOptions(gt_suffix="_0000")


def test_the_help_names_the_new_spellings(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--out-dir OUT_DIR, --out OUT_DIR" in text and "--n-resamples N, --bootstrap N" in text
    assert "--prob-channel C, --channel C" in text
