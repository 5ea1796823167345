"""The wheel, not the checkout: installed into a fresh virtual environment, it runs the README's first command.

The test builds the wheel itself, never reusing ``dist/`` or ``build/`` (a stale wheel or ``build/lib``
would test old code): the checkout's tracked files (``git ls-files``), as they are in the working tree,
uncommitted changes included, are copied into a temporary folder and built there (``--no-isolation``:
setuptools >= 77 from the test environment); the wheel's files under ``ccmetrics/`` and ``simulations/``
must be exactly those tracked files. The wheel goes into a new virtual environment with ``--no-deps``; its
dependencies come from the test environment's site-packages, added as a plain path (so that the checkout's
editable install is not loaded), and the test checks that ``ccmetrics`` is imported from the fresh
environment. The README's first command then
runs on a copy of the example data, outside the checkout, and ``ccmetrics report`` writes its page: a
file missing from the package (the report's templates, ``py.typed``) fails here.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

ROOT = Path(__file__).resolve().parents[1]


def _tracked() -> list[str]:
    """The checkout's tracked files that the working tree holds (a deleted one is not part of it)."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"the wheel test builds from the tracked files of a git checkout: {done.stderr.strip()}")
    return [name for name in done.stdout.split("\0") if name and (ROOT / name).is_file()]


def _wheel(tmp: Path) -> tuple[Path, dict[str, bytes]]:
    """The wheel built from a copy of the tracked files, and that copy's files of the two packages."""
    pytest.importorskip("build", reason="the wheel test builds with `build` (pip install build)")
    source = tmp / "source"
    for name in _tracked():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    packages = {  # read from the copy: the checkout may change while the test runs
        path.relative_to(source).as_posix(): path.read_bytes()
        for folder in ("ccmetrics", "simulations")
        for path in (source / folder).rglob("*")
        if path.is_file()
    }
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp / "dist"), str(source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("ccmetrics_toolkit-*.whl")
    return wheel, packages


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    wheel, packages = _wheel(tmp)
    env = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    python = env / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")  # paths only: no .pth run
    return env, wheel, packages


def test_the_wheel_holds_the_package_data_and_metadata(venv):
    import ccmetrics

    _, wheel, _ = venv
    names = zipfile.ZipFile(wheel).namelist()
    for needed in (
        "ccmetrics/py.typed",
        "ccmetrics/report/templates/report.html.j2",
        "ccmetrics/report/templates/report.css",
        "ccmetrics/report/templates/report.js",
        "simulations/__main__.py",
    ):
        assert needed in names, needed
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert f"Version: {ccmetrics.__version__}" in metadata and "License-Expression: Apache-2.0" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_the_wheel_holds_exactly_the_tracked_package_files(venv):
    _, wheel, tracked = venv
    assert "ccmetrics/__init__.py" in tracked and "ccmetrics/report/templates/report.html.j2" in tracked
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name for name in archive.namelist() if name.startswith(("ccmetrics/", "simulations/"))}
        assert packaged == set(tracked), (sorted(packaged - set(tracked)), sorted(set(tracked) - packaged))
        for name, content in sorted(tracked.items()):
            assert archive.read(name) == content, name


def test_the_wheel_runs_the_readme_command_and_the_report(venv, tmp_path):
    env, _, _ = venv
    where = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import ccmetrics; print(ccmetrics.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert where.startswith(str(env)), where  # the installed wheel, not the checkout
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"pip install -e \. && (ccmetrics evaluate [^\n]+)", readme).group(1)
    shown = re.search(r"```text\n(6 cases in .*?)\n```", readme, re.S).group(1)
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "examples" / "data")
    run_env = {**os.environ, "PATH": f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(shlex.split(command), capture_output=True, text=True, cwd=tmp_path, env=run_env)
    assert done.returncode == 0, done.stderr
    timing = re.compile(r"in \d+\.\d s")
    assert timing.sub("in _ s", done.stdout.strip()) == timing.sub("in _ s", shown.strip())
    done = subprocess.run(["ccmetrics", "report", "results"], capture_output=True, text=True, cwd=tmp_path, env=run_env)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "results" / "report.html").read_text()
    assert "case_001" in page and "<style>" in page and "data:image/png;base64," in page
