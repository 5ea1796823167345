"""Every code block of the README and the documentation runs, and prints what the page shows.

For each page, in order, in a scratch folder holding a copy of ``examples/`` (the paths the pages use):

* a ``python`` block runs in a fresh interpreter; when it ends with comment lines (``# ...``), they are the
  last lines it prints;
* a ``bash`` block runs command by command (``&&`` and new lines split them); a comment line right after a
  command is what that command prints, and a ``text`` block that follows a ``bash`` block with no other
  block between them is what its last command prints (timings such as ``in 0.2 s`` aside).

Installation steps (``python3 -m venv``, ``. .venv/bin/activate``, ``pip install``), the test suite
(``python -m pytest``) and the documentation build (``sphinx-build``) are not run here: ``.ci/run`` runs
exactly them on a fresh clone. ``text`` blocks are output or synopses, never run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "CONTRIBUTING.md"]
SKIPPED = re.compile(
    r"^(python3? -m venv|\. \.venv/bin/activate|(python -m )?pip install|python -m pytest|sphinx-build)"
)
TIMING = re.compile(r"in \d+(\.\d+)? s\b")
SIZE = re.compile(r"\(\d+ kB\)")  # a page's size moves with the PNG encoder of the installed matplotlib
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """(language, code, offset) of every fenced block, in order."""
    return [(m.group(1), m.group(2), m.start()) for m in FENCE.finditer(page.read_text())]


def commands(code: str) -> list[tuple[str, list[str]]]:
    """(command, the comment lines after it) of a bash block."""
    out: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("# ") and out:
            out[-1][1].append(line[2:])
        elif line.strip() and not line.startswith("#"):
            out += [(part.strip(), []) for part in line.split("&&")]
    return out


def normal(text: str) -> list[str]:
    return [SIZE.sub("(_ kB)", TIMING.sub("in _ s", line.rstrip())) for line in text.strip("\n").splitlines()]


def run(command: str, cwd: Path) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "MPLBACKEND": "Agg"}
    done = subprocess.run(
        shlex.split(command, comments=True), cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{command!r} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_of_the_page_runs(page, tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    found = blocks(page)
    ran = runnable = 0
    for i, (language, code, _) in enumerate(found):
        if language == "python":
            done = subprocess.run(
                [sys.executable, "-c", code],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=600,
                env={**os.environ, "MPLBACKEND": "Agg"},
            )
            runnable += 1
            assert done.returncode == 0, f"{page.name}, block {i}:\n{code}\n{done.stderr[-3000:]}"
            lines = code.rstrip("\n").splitlines()
            shown = []
            while lines and lines[-1].startswith("# "):
                shown.insert(0, lines.pop()[2:])
            if shown:
                assert normal(done.stdout)[-len(shown) :] == normal("\n".join(shown)), f"{page.name}, block {i}"
            ran += 1
        elif language == "bash":
            printed = ""
            for command, shown in commands(code):
                if SKIPPED.match(command):
                    continue
                runnable += 1
                printed = run(command, tmp_path)
                if shown:
                    assert normal(printed) == normal("\n".join(shown)), f"{page.name}: {command}"
                ran += 1
            follows = found[i + 1] if i + 1 < len(found) else None
            if follows is not None and follows[0] == "text" and printed:
                assert normal(printed) == normal(follows[1]), f"{page.name}: the output shown after block {i}"
    assert ran == runnable


def test_the_install_steps_the_pages_skip_are_those_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    for step in (
        "python3 -m venv .venv",
        ". .venv/bin/activate",
        "pip install --quiet torch==2.13.0",
        'pip install --quiet -e ".[test,dev]"',
        "python -m pytest",
        "sphinx-build -W -n",
    ):
        assert step in ci, step
