"""Every former spelling of every command's options (issue 40), through the one mechanism of
``ccmetrics/cli/_former.py``: it parses to the same value as the new spelling, warns (``DeprecationWarning`` naming
the new spelling), the command prints one note on stderr naming it (none with ``--quiet``), both spellings at once
are refused, and ``--help`` lists the former spelling after the new one."""

import warnings

import pytest

from ccmetrics.cli import build_parser
from ccmetrics.cli._former import spelling_given, take_former

#: command, the arguments before the option, new spelling, former spelling, dest, value given, value parsed
RENAMED = [
    ("evaluate", ["gt", "pred", "--out-dir", "o"], "--n-resamples", "--bootstrap", "n_resamples", "50", 50),
    ("evaluate", ["gt", "pred", "--out-dir", "o"], "--prob-channel", "--channel", "prob_channel", "2", 2),
    ("evaluate", ["gt", "pred"], "--out-dir", "--out", "out", "results", "results"),
    ("compare", ["a", "b"], "--n-resamples", "--bootstrap", "n_resamples", "500", 500),
    ("compare", ["a", "b"], "--out-dir", "--out", "out_dir", "comparison", "comparison"),
    ("report", ["results"], "--html", "--out", "html", "page.html", "page.html"),
    ("report", ["results"], "--max-image-memory", "--max-memory", "max_image_memory", "8G", "8G"),
    ("partition", ["gt.nii.gz", "regions.nii.gz"], "--label", "--class", "label", "5", 5),
]
IDS = [f"{command} {former}" for command, _, _, former, *_ in RENAMED]


def _parsed(argv):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args = build_parser().parse_args(argv)
    return args, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize(("command", "base", "new", "former", "dest", "value", "parsed"), RENAMED, ids=IDS)
def test_the_former_spelling_gives_the_same_value_warns_and_notes(
    capsys, command, base, new, former, dest, value, parsed
):
    by_new, none = _parsed([command, *base, new, value])
    by_former, messages = _parsed([command, *base, former, value])
    assert none == [] and getattr(by_new, dest) == getattr(by_former, dest) == parsed
    assert messages == [
        f"ccmetrics {command} {former} is deprecated: use {new} (the former spelling works until ccmetrics 0.3)"
    ]
    assert spelling_given(by_former, dest, new) == former and spelling_given(by_new, dest, new) == new
    take_former(by_new, command)
    assert capsys.readouterr().err == ""
    take_former(by_former, command)
    assert capsys.readouterr().err == f"ccmetrics {command}: note: {former} is deprecated: use {new}\n"


@pytest.mark.parametrize(("command", "base", "new", "former", "dest", "value", "parsed"), RENAMED, ids=IDS)
def test_both_spellings_are_refused(command, base, new, former, dest, value, parsed):
    args, _ = _parsed([command, *base, former, value, new, value])
    with pytest.raises(ValueError, match=rf"^{former} and {new} given: give {new} only \({former} is its former"):
        take_former(args, command)


def test_no_note_with_quiet(capsys):
    args, messages = _parsed(["evaluate", "gt", "pred", "--out", "o", "--bootstrap", "50", "--channel", "1", "--quiet"])
    assert len(messages) == 3  # the warnings stay (Python shows none by default outside __main__)
    take_former(args, "evaluate")
    assert capsys.readouterr().err == ""


def test_one_note_per_former_spelling_in_the_order_given(capsys):
    args, _ = _parsed(["compare", "a", "b", "--out", "c", "--bootstrap", "50"])
    take_former(args, "compare")
    assert capsys.readouterr().err.splitlines() == [
        "ccmetrics compare: note: --out is deprecated: use --out-dir",
        "ccmetrics compare: note: --bootstrap is deprecated: use --n-resamples",
    ]


@pytest.mark.parametrize(("command", "base", "new", "former", "dest", "value", "parsed"), RENAMED, ids=IDS)
def test_the_help_lists_the_former_spelling_after_the_new(capsys, command, base, new, former, dest, value, parsed):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    metavar = {"partition": "LABEL"}.get(command)
    if metavar is not None:
        assert f"{new} {metavar}, {former} {metavar}" in text
    else:
        assert f"{new} " in text and f", {former} " in text
    assert f"formerly {former}, kept for a release" in text


def test_former_cli_spellings_have_one_home():
    import ccmetrics.cli._common as common

    assert not hasattr(common, "_FormerSpelling")
