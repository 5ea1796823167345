"""The house shows its layers: the former module paths still import, as the same modules, with a warning that
names the new path; the layer packages import nothing heavy; the layer contract holds (``lint-imports``)."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from ccmetrics._moved import MOVED

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_former_module_path_is_the_module_with_a_warning(old):
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {MOVED[old]}") as caught:
        module = importlib.import_module(old)
    assert module is new
    assert caught[0].filename == __file__  # pointed at the code that imported it


def test_former_attributes_and_from_imports_warn_at_the_caller():
    code = (
        "import warnings, sys\n"
        "warnings.simplefilter('always')\n"
        "import ccmetrics\n"
        "io = ccmetrics.io\n"
        "from ccmetrics.partition import voronoi_partition\n"
        "from ccmetrics.campaign import EvaluationInterrupted, run_cases\n"  # the former module is now the package
        "import ccmetrics.engine.partition as new\n"
        "assert voronoi_partition is new.voronoi_partition and io is sys.modules['ccmetrics.formats.io']\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
    assert len(lines) == 2 and lines[0].startswith("<string>:4:") and lines[1].startswith("<string>:5:")


def test_a_name_that_was_never_a_module_is_not_answered():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ccmetrics.instances")
    with pytest.raises(AttributeError):
        import ccmetrics

        ccmetrics.not_a_module  # noqa: B018


def _loaded_after(imports, modules):
    """Which of ``modules`` a fresh interpreter holds after ``import`` of ``imports`` (a comma-separated list)."""
    code = f"import sys, {imports}\nprint(sorted(m for m in {tuple(modules)!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return done.stdout.strip()


def test_the_layer_packages_import_nothing_heavy():
    layers = "ccmetrics.engine, ccmetrics.metrics, ccmetrics.formats, ccmetrics.analysis, ccmetrics.campaign"
    assert _loaded_after(layers, ("numpy", "scipy", "pandas", "numba", "cc3d", "nibabel")) == "[]"


def test_the_process_that_schedules_cases_loads_no_case_machinery():
    # evaluate_dataset's own process reads headers and writes records; its workers evaluate the cases. The k-d trees
    # (scipy.spatial, about 0.13 s to import) and the morphology (scipy.ndimage) load in the workers, not here before
    # they start: that import is on the path to the first case of every run with workers. pandas (0.12 s) loads
    # while the workers run (the tables are made at the end), nibabel only for a header that is not plain NIfTI-1
    campaign = "ccmetrics.campaign.dataset, ccmetrics.campaign.scheduler"
    assert _loaded_after(campaign, ("scipy.spatial", "scipy.ndimage", "numba", "nibabel", "pandas")) == "[]"


def test_the_layer_contract_holds():
    if shutil.which("lint-imports") is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    with warnings.catch_warnings():
        done = subprocess.run(["lint-imports", "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout
    assert "0 broken" in done.stdout
