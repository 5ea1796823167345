"""What ``ccmetrics`` prints, through real processes: ``--quiet`` (errors and one closing line), and a reader
that leaves the pipe early (``ccmetrics evaluate ... | head``).

The pipes are real: the reading end is closed by the test, or by ``head`` in a real shell, before or while the
command prints; the command must finish its work, say nothing about the pipe, and return its own exit code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

pytestmark = pytest.mark.slow  # real processes

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
CLOSING = re.compile(r"^6 cases in \d+\.\d s: 6 evaluated \(2 flagged\), (\d) failed; results in (.+)$")


def _env() -> dict[str, str]:
    return {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "error::UserWarning"}


def ccmetrics(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ccmetrics", *args], capture_output=True, text=True, env=_env(), timeout=300, **kwargs
    )


@pytest.fixture
def folders(tmp_path):
    """The example data set; ``broken`` has case_002's prediction on another grid (the case fails)."""
    shutil.copytree(DATA / "gt", tmp_path / "gt")
    shutil.copytree(DATA / "pred", tmp_path / "pred")
    shutil.copytree(DATA / "pred", tmp_path / "broken")
    image = nib.load(tmp_path / "pred" / "case_002.nii.gz")
    nib.save(nib.Nifti1Image(np.zeros((5, 5, 5), np.uint8), image.affine), tmp_path / "broken" / "case_002.nii.gz")
    return tmp_path


def test_quiet_prints_one_closing_line_and_nothing_on_stderr(folders):
    out = folders / "out"
    done = ccmetrics("evaluate", str(folders / "gt"), str(folders / "pred"), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and (m := CLOSING.match(lines[0])), done.stdout
    assert m.group(1) == "0" and Path(m.group(2)) == out
    assert done.stderr == ""  # no progress bar, no notes, no warnings
    assert json.loads((out / "summary.json").read_text())["counts"]["evaluated"] == 6  # the same tables
    # resuming: the routine note of what was kept is not shown either
    done = ccmetrics("evaluate", str(folders / "gt"), str(folders / "pred"), "--out", str(out), "--quiet", "--resume")
    assert done.returncode == 0 and done.stderr == "" and len(done.stdout.splitlines()) == 1
    loud = ccmetrics("evaluate", str(folders / "gt"), str(folders / "pred"), "--out", str(out), "--resume")
    assert "resuming from" in loud.stderr and "Summary over cases" in loud.stdout  # without --quiet: all of it


def test_quiet_shows_each_error_on_stderr_and_exits_1(folders):
    out = folders / "out"
    done = ccmetrics("evaluate", str(folders / "gt"), str(folders / "broken"), "--out", str(out), "--quiet")
    assert done.returncode == 1
    assert re.fullmatch(
        rf"6 cases in \d+\.\d s: 5 evaluated \(2 flagged\), 1 failed; results in {re.escape(str(out))}\n", done.stdout
    )
    errors = done.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("ccmetrics evaluate: case_002 failed: ")
    assert "shape" in errors[0]


def test_a_reader_that_left_the_pipe_ends_nothing(folders):
    """The reading end is closed before the command prints: it must still write every table, print no
    ``Broken pipe`` error, and exit 0 (before: exit 2, ``ccmetrics evaluate: error: [Errno 32] Broken pipe``)."""
    out = folders / "out"
    argv = [sys.executable, "-m", "ccmetrics", "evaluate", str(folders / "gt"), str(folders / "pred"), "--out"]
    proc = subprocess.Popen([*argv, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves at once
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception ignored" not in err
    assert json.loads((out / "summary.json").read_text())["counts"]["cases"] == 6
    # a failed case keeps its exit code 1 with the reader gone
    argv[5] = str(folders / "broken")
    proc = subprocess.Popen([*argv, str(folders / "out_b")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 1 and "Broken pipe" not in err


@pytest.mark.skipif(shutil.which("head") is None, reason="needs head")
def test_evaluate_and_compare_into_head(folders):
    """The pipes of the issue, in a real shell with ``pipefail``: the first line, exit 0, no error."""
    gt, pred = folders / "gt", folders / "pred"
    py = f"{sys.executable} -m ccmetrics"
    script = (
        f"set -o pipefail; {py} evaluate {gt} {pred} --out {folders / 'a'} | head -n 1 && "
        f"{py} evaluate {gt} {pred} --out {folders / 'b'} --quiet --no-plots && "
        f"{py} compare {folders / 'a'} {folders / 'b'} --names a,b --metric cc_dice --out {folders / 'c'} | head -n 1"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("6 cases in ") and CLOSING.match(lines[1]) and lines[2].startswith("cc_dice")
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr


def test_the_program_skips_the_tear_down_but_keeps_its_output_and_atexit_handlers(folders, capsys):
    """``ccmetrics.cli.run`` (the console script, ``python -m ccmetrics``) ends the process with ``os._exit`` once
    ``main`` returns: every line ``main`` prints still reaches a pipe, handlers registered with ``atexit`` still run,
    and the exit code is main's (1 here: a case failed)."""
    from ccmetrics.cli import main

    marker = folders / "atexit-ran"
    args = ["evaluate", str(folders / "gt"), str(folders / "broken"), "--out"]
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))\n"
        f"sys.argv = ['ccmetrics', *{args!r}, {str(folders / 'out_run')!r}]\n"
        "from ccmetrics.cli import run\n"
        "run()\n"
        "raise SystemExit(99)  # never reached: run() ends the process\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 1, done.stderr
    assert marker.read_text() == "ran"
    assert main([*args, str(folders / "out_main")]) == 1  # the same command in this process, the usual way
    expected = capsys.readouterr().out.replace(str(folders / "out_main"), str(folders / "out_run"))
    ignore = re.compile(r"\d+\.\d s")  # the timings
    assert ignore.sub("", done.stdout) == ignore.sub("", expected)
    assert done.stdout.rstrip().splitlines()[-1].startswith("Wrote ")
