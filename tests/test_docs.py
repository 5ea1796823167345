"""Every code block of the README and the documentation runs, and prints what the page shows.

The pages run in order (the README, the documentation pages, CONTRIBUTING.md) in one scratch folder holding a
copy of ``examples/`` (the paths the pages use), as a reader who follows them top to bottom; afterwards every
file they wrote must be in ``.gitignore``. In each page:

* a ``python`` block runs in a fresh interpreter; a run of comment lines (``# ...``) right after a top-level
  ``print(...)`` is everything the block printed since the previous such run (a note ``<- ...`` at the end of
  a shown line is the page's, not the output's);
* a ``bash`` block runs command by command (``&&`` and new lines split them); a comment line right after a
  command is what that command prints, and a ``text`` block that follows a ``bash`` block with no other
  block between them is what its last command prints (timings such as ``in 0.2 s`` aside);
* a ``{literalinclude}`` of a Python file followed by a ``text`` block: the file runs as a script and prints
  that block.

Installation steps (``python3 -m venv``, ``. .venv/bin/activate``, ``pip install``), the test suite
(``python -m pytest``) and the documentation build (``sphinx-build``) are not run here: ``.ci/run`` runs
exactly them on a fresh clone (checked below). ``text`` blocks are output or synopses, never run; the other
MyST directives (``{include}``, ``{toctree}``, ``{eval-rst}``) are Sphinx's.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "CONTRIBUTING.md"]
SKIPPED = re.compile(
    r"^(python3? -m venv|\. \.venv/bin/activate|(python -m )?pip install|python -m pytest|sphinx-build)"
)
TIMING = re.compile(r"in \d+(\.\d+)? s\b")
SIZE = re.compile(r"\(\d+(\.\d+)? [kM]B\)")  # a page's size moves with the PNG encoder of the installed matplotlib
NOTE = re.compile(r"\s+<- .*$")  # a page's note beside a shown output line
FENCE = re.compile(r"^```(\{[\w-]+\}|\w*)([^\n]*)\n(.*?)^```\n", re.S | re.M)  # language or MyST directive
SHOWN = "\x1e-- the output shown so far --"  # printed by the test after each run of shown lines
#: flags .ci/run adds to a command that the pages show without them: quieter output, every warning at once
CI_ONLY_FLAGS = {"--quiet", "--keep-going"}
#: flags the pages add to a command that .ci/run runs without them (none today; pyproject's addopts list the skips)
PAGE_ONLY_FLAGS: set[str] = set()
#: skipped commands that .ci/run replaces by a larger one: the README's core install, without extras, is
#: part of CI's `pip install -e ".[test,dev]"`
ALTERNATIVES = {"pip install -e ."}


def blocks(page: Path) -> list[tuple[str, str, str]]:
    """(language or ``{directive}``, its argument, code) of every fenced block, in order."""
    text = page.read_text()
    found = [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(text)]
    fences = [line for line in text.splitlines() if line.startswith("```")]
    assert len(fences) == 2 * len(found), f"{page.name}: a fence the test does not recognise"
    return found


def commands(code: str) -> list[tuple[str, list[str]]]:
    """(command, the comment lines after it) of a bash block."""
    out: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("# ") and out:
            out[-1][1].append(line[2:])
        elif line.strip() and not line.startswith("#"):
            out += [(part.strip(), []) for part in line.split("&&")]
    return out


def shown_output(code: str) -> tuple[str, list[list[str]]]:
    """The code with a marker printed after each run of comment lines that follows a top-level ``print``,
    and those runs (their ``# `` taken off, and any ``<- note``)."""
    lines = code.splitlines()
    ends = {
        node.end_lineno
        for node in ast.parse(code).body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "print"
    }
    out: list[str] = []
    runs: list[list[str]] = []
    for number, line in enumerate(lines, 1):
        out.append(line)
        if number not in ends:
            continue
        shown = []
        for after in lines[number:]:
            if after != "#" and not after.startswith("# "):
                break
            shown.append(NOTE.sub("", after[2:]))
        if shown:  # the marker goes right after the print: the comment lines that follow do not run
            out.append(f"print({SHOWN!r})")
            runs.append(shown)
    return "\n".join(out) + "\n", runs


def normal(text: str) -> list[str]:
    return [SIZE.sub("(_ kB)", TIMING.sub("in _ s", line.rstrip())) for line in text.strip("\n").splitlines()]


def run(argv: list[str], cwd: Path) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "MPLBACKEND": "Agg"}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{shlex.join(argv)!r} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_shown_output_finds_every_run_after_a_print():
    code = "x = 1\nprint(x)\n# 1\nprint(\n    x + 1,\n)\n#\n# 2     <- a note\ny = 2  # not output\n# a comment\n"
    marked, runs = shown_output(code)
    assert runs == [["1"], ["", "2"]]
    out = subprocess.run([sys.executable, "-c", marked], capture_output=True, text=True, check=True).stdout
    assert out == f"1\n{SHOWN}\n2\n{SHOWN}\n"


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> dict:
    """One folder for every page, as a reader has it: a copy of ``examples/``, then what each page wrote."""
    folder = tmp_path_factory.mktemp("reader")
    shutil.copytree(ROOT / "examples", folder / "examples")
    return {"folder": folder, "ran": []}


def _run_in_order(page: Path, reader: dict) -> None:
    """Run every page before ``page`` that has not run yet, then ``page``, in the reader's one folder."""
    for earlier in PAGES[: PAGES.index(page) + 1]:
        if earlier not in reader["ran"]:
            reader["ran"].append(earlier)  # once, even if it fails: the later pages then fail as a reader's would
            run_page(earlier, reader["folder"])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_of_the_page_runs(page, reader):
    """The pages run in order (README first) in one folder: each page after the ones before it, as a reader who
    follows them top to bottom meets them (a page whose command collides with an earlier page's output fails)."""
    _run_in_order(page, reader)


def test_the_pages_leave_only_ignored_files(reader):
    """What the pages write is in ``.gitignore``: after running them all, ``git status`` of a clone stays clean."""
    _run_in_order(PAGES[-1], reader)
    folder = reader["folder"]
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").rglob("*") if p.is_file()}
    written = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() not in shipped and "__pycache__" not in p.parts
    )
    assert written, "the pages wrote nothing?"
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "--non-matching", "--stdin"],
        cwd=ROOT,
        input="\n".join(written),
        capture_output=True,
        text=True,
    )
    if done.returncode == 128:
        pytest.skip(f"git check-ignore cannot run here: {done.stderr.strip()}")
    not_ignored = [line.split("\t")[-1] for line in done.stdout.splitlines() if line.startswith("::")]
    assert not not_ignored, f"files the pages write that .gitignore does not cover: {not_ignored}"


def run_page(page: Path, folder: Path) -> None:
    """Run the page's blocks in ``folder`` and check what they print against what the page shows."""
    found = blocks(page)
    for i, (language, argument, code) in enumerate(found):
        follows = found[i + 1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
        printed: str | None = None  # what the block's last command printed, None if it was not run
        if language == "python":
            marked, runs = shown_output(code)
            done = subprocess.run(
                [sys.executable, "-c", marked],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=600,
                env={**os.environ, "MPLBACKEND": "Agg"},
            )
            assert done.returncode == 0, f"{page.name}, block {i}:\n{code}\n{done.stderr[-3000:]}"
            parts = done.stdout.split(SHOWN + "\n")
            assert len(parts) == len(runs) + 1, f"{page.name}, block {i}: {done.stdout}"
            for k, (part, shown) in enumerate(zip(parts, runs)):
                assert normal(part) == normal("\n".join(shown)), f"{page.name}, block {i}, shown output {k}"
            continue
        if language == "bash":
            for command, shown in commands(code):
                if SKIPPED.match(command):
                    printed = None
                    continue
                printed = run(shlex.split(command, comments=True), folder)
                if shown:
                    assert normal(printed) == normal("\n".join(shown)), f"{page.name}: {command}"
        elif language == "{literalinclude}" and argument.endswith(".py") and follows is not None:
            script = (page.parent / argument).resolve()
            printed = run([sys.executable, str(script)], folder)
        else:
            continue
        if follows is not None:
            assert printed is not None, f"{page.name}: block {i + 1} shows the output of a command not run here"
            assert printed.strip(), f"{page.name}: block {i + 1} shows output, block {i} printed nothing"
            assert normal(printed) == normal(follows[2]), f"{page.name}: the output shown after block {i}"


def _normal_command(argv: list[str]) -> str:
    if argv[:3] == ["python", "-m", "pip"]:
        argv = argv[2:]
    return " ".join(arg for arg in argv if arg not in CI_ONLY_FLAGS | PAGE_ONLY_FLAGS)


def test_the_commands_the_pages_skip_are_those_ci_runs():
    ci = set()
    for line in (ROOT / ".ci" / "run").read_text().splitlines():
        argv = shlex.split(line, comments=True)
        if argv[:1] == ["step"]:
            argv = argv[2:]  # step "name" command...
        if argv[:1] == ["quiet"]:
            argv = argv[1:]
        ci.add(_normal_command(argv))
    skipped = {
        command
        for page in PAGES
        for language, _, code in blocks(page)
        if language == "bash"
        for command, _ in commands(code)
        if SKIPPED.match(command)
    }
    shown = {_normal_command(shlex.split(command)) for command in skipped}
    assert {"python -m pytest -q", "sphinx-build -W -n -q -b html docs docs/_build/html"} <= shown
    for command in skipped - ALTERNATIVES:
        assert _normal_command(shlex.split(command)) in ci, command
    assert ALTERNATIVES <= skipped  # each alternative is still shown


# The README is the project's front door (issue 43): short, and every page of the documentation one link away.
README_MAX_LINES = 300
#: pages that only include a file of the repository's root: the README links that file
INCLUDES = {"architecture.md": "ARCHITECTURE.md", "contributing.md": "CONTRIBUTING.md", "changelog.md": "CHANGELOG.md"}
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def _links(page: Path) -> set[Path]:
    """The pages of the repository that ``page`` links to (Markdown links, resolved from its folder)."""
    return {(page.parent / target).resolve() for target, _ in LINK.findall(page.read_text()) if "://" not in target}


def _documentation_pages() -> list[Path]:
    docs = ROOT / "docs"
    return sorted(p for p in docs.rglob("*.md") if "_build" not in p.relative_to(docs).parts)


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move reference material to docs/"


def test_the_readme_links_every_documentation_page():
    """Every page under docs/ (the site's front page aside) is one link from the README: a tutorial nobody links is
    a tutorial nobody reads (issue 43: the probability-maps tutorial was linked from nowhere)."""
    linked = _links(ROOT / "README.md")
    for page in _documentation_pages():
        if page.name == "index.md" and page.parent == ROOT / "docs":
            continue
        target = ROOT / INCLUDES[page.name] if page.name in INCLUDES and page.parent == ROOT / "docs" else page
        assert target.resolve() in linked, f"README.md does not link {target.relative_to(ROOT)}"
    for target in linked:
        assert target.exists(), f"README.md links {target}, which does not exist"


def test_getting_started_links_every_tutorial():
    page = ROOT / "docs" / "getting-started.md"
    linked = _links(page)
    for tutorial in sorted((ROOT / "docs" / "tutorials").glob("*.md")):
        assert tutorial.resolve() in linked, f"{page.name} does not link tutorials/{tutorial.name}"


def test_every_documentation_page_is_in_a_toctree():
    """Sphinx builds a page no toctree lists with a warning; this says which page, without a build."""
    index = (ROOT / "docs" / "index.md").read_text()
    toctrees = re.findall(r"```\{toctree\}\n(.*?)```", index, re.S)
    listed = {line.strip() for block in toctrees for line in block.splitlines()}
    for page in _documentation_pages():
        name = page.relative_to(ROOT / "docs").with_suffix("").as_posix()
        assert name == "index" or name in listed, f"docs/index.md's toctrees do not list {name}"


def test_the_readme_says_how_to_install_and_what_skips():
    """Install advice that works from a checkout, the package index's other ``ccmetrics`` named, the tests' skip
    reasons shown and the browser tests' packages named (issue 43, points 3 and 10)."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "Never `pip install ccmetrics`" in readme and "CC-Metrics 0.0.3" in readme
    assert 'pip install -e ".[stats]"' in readme and "pip install torch==2.13.0" in readme
    assert not re.search(r"pip install \S*ccmetrics-toolkit", readme)  # not on the index: fails as advice
    assert "python -m pytest -q" in readme and "each skipped test with its reason" in readme
    assert "apt install chromium chromium-driver" in readme
