"""The house shows its layers: the former module paths still import, as the same modules, with a warning that
names the new path; the layer packages import nothing heavy; the layer contract holds (``lint-imports``); no
private name or module crosses from one package to another."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

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


#: the package root's own private modules: the house's shared foundations, which every ccmetrics package may import
FOUNDATIONS = frozenset(
    {
        "_arguments",
        "_deprecation",
        "_escaping",
        "_files",
        "_inputs",
        "_interrupts",
        "_lazy",
        "_memory",
        "_moved",
        "_processes",
        "_words",
    }
)

#: private imports that cross packages and are still waiting for their switch to the public name
#: (``importing package: imported module.name``); the names to use instead are in the failure message of
#: :func:`test_no_private_name_or_module_crosses_a_package`.
#: switched by the lead: the campaign's rooms (dataset.py, being split) switch to ccmetrics.formats.io.load_image
#: (c_order=True), ccmetrics.engine.memory.MemoryLimitError and ccmetrics.engine.memory.memory_guard
CROSSING_ALLOWED: frozenset[str] = frozenset()  # "package: module.private_name" while a crossing is being removed


def _package(module: str) -> str:
    """The package a module belongs to: ``ccmetrics.<sub-package>``, ``ccmetrics`` for the package root's own
    modules (``schema``, ``_files``, ...), ``simulations``."""
    parts = module.split(".")
    if parts[0] == "ccmetrics" and len(parts) > 1 and (ROOT / "ccmetrics" / parts[1]).is_dir():
        return f"ccmetrics.{parts[1]}"
    return parts[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imports(module: str, source: str, is_package: bool = False):
    """``(line, imported module, imported name or None)`` for every import of ``module``'s ``source``, relative
    ones resolved, those inside functions and ``if TYPE_CHECKING:`` blocks included."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                yield node.lineno, base, alias.name


def _crosses(module: str, target: str, name: str | None) -> bool:
    """Whether ``module`` importing ``target`` (``from target import name``) takes a private module or name of
    another package."""
    here, there = _package(module), _package(target)
    if target.split(".")[0] not in ("ccmetrics", "simulations") or here == there:
        return False  # another library, or inside one package: private names are shared freely
    # the root's foundations are open to every ccmetrics package, never to the simulations
    open_ = FOUNDATIONS if there == "ccmetrics" and here != "simulations" else frozenset()
    inner = target.split(".")[1:]
    if any(_private(part) and not (i == 0 and part in open_) for i, part in enumerate(inner)):
        return True
    return name is not None and _private(name) and not (target == "ccmetrics" and name in open_)


def _crossings() -> dict[str, list[str]]:
    """Every import of a private module or name of another package than the importer's: ``{key: [where]}``."""
    found: dict[str, list[str]] = {}
    for top in ("ccmetrics", "simulations"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            module = ".".join(parts[:-1] if is_package else parts)
            for line, target, name in _imports(module, path.read_text(encoding="utf-8"), is_package):
                if _crosses(module, target, name):
                    key = f"{_package(module)}: {target}" + (f".{name}" if name else "")
                    found.setdefault(key, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def test_the_crossing_check_reads_imports_as_python_does():
    # relative imports resolve against the importing module's package (a package's __init__ is the package)
    got = list(_imports("ccmetrics.metrics.case", "from ..engine._budget import x\nfrom . import _engines\n"))
    assert got == [(1, "ccmetrics.engine._budget", "x"), (2, "ccmetrics.metrics", "_engines")]
    got = list(_imports("ccmetrics.engine", "def f():\n    from ._launch import w\n    from .. import _lazy\n", True))
    assert sorted(got) == [(2, "ccmetrics.engine._launch", "w"), (3, "ccmetrics", "_lazy")]
    assert _package("ccmetrics.nuclei.io.geojson") == "ccmetrics.nuclei" and _package("ccmetrics._files") == "ccmetrics"
    # across packages: private modules and names cross, public ones and dunders do not
    assert _crosses("ccmetrics.metrics.case", "ccmetrics.engine._kdtree", None)
    assert _crosses("ccmetrics.campaign.case", "ccmetrics.formats.io", "_load_image")
    assert _crosses("ccmetrics.cli", "ccmetrics.engine", "_launch")
    assert not _crosses("ccmetrics.metrics.case", "ccmetrics.engine.kdtree", "build")
    assert not _crosses("ccmetrics.cli", "ccmetrics", "__version__")
    # inside one package anything goes; the root's foundations are open to ccmetrics' packages, not simulations
    assert not _crosses("ccmetrics.metrics.case", "ccmetrics.metrics._engines", "_x")
    assert not _crosses("ccmetrics.metrics.case", "ccmetrics._inputs", "as_spacing")
    assert not _crosses("ccmetrics.metrics.case", "ccmetrics", "_words")
    assert _crosses("ccmetrics.metrics.case", "ccmetrics._inputs", "_private_helper")
    assert _crosses("ccmetrics.metrics.case", "ccmetrics.schema", "_x")
    assert _crosses("simulations.phantoms", "ccmetrics._inputs", "as_spacing")
    assert _crosses("ccmetrics.schema", "ccmetrics.engine._budget", "active")


def test_no_private_name_or_module_crosses_a_package():
    """A module imports from another package (a sub-package of ccmetrics: engine, metrics, formats, analysis,
    campaign, report, cli, nuclei, monai; the package root's own modules; simulations) its public modules and
    names only: no module whose path has a part starting with ``_`` (``__init__`` aside), no ``_name``. Inside one
    package private names are shared freely. The package root's private modules (``ccmetrics._files``,
    ``_inputs``, ``_escaping``, ``_interrupts``, ``_lazy``, ``_moved``, ``_words``, ``_deprecation``, ``_memory``,
    ``_arguments``, ``_processes``) are the
    house's shared foundations: every ccmetrics package may import them (their public names). ``simulations/``
    uses ccmetrics' public API only: not the foundations either."""
    found = _crossings()
    crossing = {key: where for key, where in found.items() if key not in CROSSING_ALLOWED}
    assert not crossing, "private names or modules imported from another package:\n" + "\n".join(
        f"  {key}  ({', '.join(where)})" for key, where in sorted(crossing.items())
    )
    switched = sorted(CROSSING_ALLOWED - found.keys())
    assert not switched, f"no longer imported, remove from CROSSING_ALLOWED: {switched}"


@pytest.mark.parametrize(
    ("public", "private"),
    [
        ("ccmetrics.engine.memory.MemoryLimitError", "ccmetrics.engine._budget.MemoryLimitError"),
        ("ccmetrics.engine.memory.MemoryGuard", "ccmetrics.engine._budget.MemoryGuard"),
        ("ccmetrics.engine.memory.memory_guard", "ccmetrics.engine._budget.memory_guard"),
        ("ccmetrics.engine.memory.active_guard", "ccmetrics.engine._budget.active"),
        ("ccmetrics.engine.threads.worker_threads", "ccmetrics.engine._threads.worker_threads"),
        ("ccmetrics.engine.threads.submit", "ccmetrics.engine._threads.submit"),
        ("ccmetrics.engine.kdtree.build", "ccmetrics.engine._kdtree.build"),
        ("ccmetrics.engine.kdtree.query", "ccmetrics.engine._kdtree.query"),
        ("ccmetrics.engine.kdtree.matches_scipy", "ccmetrics.engine._kdtree.matches_scipy"),
        ("ccmetrics.engine.order_statistics.order_statistics", "ccmetrics.engine._order_statistics.order_statistics"),
        ("ccmetrics.engine.warm_up", "ccmetrics.engine._launch.warm_up"),
    ],
)
def test_a_public_home_is_the_private_name_which_still_works(public, private):
    def resolve(dotted):
        module, name = dotted.rsplit(".", 1)
        return getattr(importlib.import_module(module), name)

    assert resolve(public) is resolve(private)


def _public_names(module: str) -> set[str]:
    """What ``module`` offers its users: its ``__all__`` and its public submodules."""
    loaded = importlib.import_module(module)
    path = Path(loaded.__file__).parent if loaded.__file__.endswith("__init__.py") else None
    subs = {p.stem for p in path.glob("*.py") if not p.stem.startswith("_")} if path else set()
    subs |= {p.name for p in path.iterdir() if (p / "__init__.py").is_file()} if path else set()
    return set(getattr(loaded, "__all__", ())) | subs


def _simulations_uses():
    """``(where, module, name)`` for every name the simulations take from ccmetrics: ``from ccmetrics.x import name``
    (imports inside functions included) and ``module.name`` where ``module`` was imported from ccmetrics."""
    for path in sorted((ROOT / "simulations").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules: dict[str, str] = {}  # local name -> the ccmetrics module it stands for
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ccmetrics":
                for alias in node.names:
                    yield where, node.module, alias.name
                    if isinstance(getattr(importlib.import_module(node.module), alias.name, None), ModuleType):
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "ccmetrics":
                        modules[alias.asname or "ccmetrics"] = alias.name if alias.asname else "ccmetrics"
                        parts = alias.name.split(".")
                        for i in range(1, len(parts)):
                            yield where, ".".join(parts[:i]), parts[i]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                yield f"{path.relative_to(ROOT)}:{node.lineno}", modules[node.value.id], node.attr


def test_the_simulations_use_the_public_api_only():
    """``simulations/`` (the paper's studies, a user of ccmetrics) takes from ccmetrics only what a module lists in
    its ``__all__`` or a public submodule: no ``ccmetrics.engine._x`` or ``ccmetrics.metrics._x`` module, no name a
    module keeps to itself (the private modules are also refused by an import-linter contract)."""
    uses = list(_simulations_uses())
    assert uses, "the simulations import ccmetrics"
    private = [f"{where}: {module}.{name}" for where, module, name in uses if _private(name) or "._" in module]
    outside = [
        f"{where}: {module}.{name}"
        for where, module, name in uses
        if not _private(name) and "._" not in module and name not in _public_names(module)
    ]
    assert not private and not outside, "the simulations use names outside ccmetrics' public API:\n" + "\n".join(
        private + outside
    )


def test_the_engine_lists_a_small_api_and_still_gives_the_names_it_listed_before():
    """``ccmetrics.engine.__all__`` is what users import from the package (ARCHITECTURE.md, "The public API"); every
    name the package listed before still reads as ``ccmetrics.engine.<name>``, the object of its module, silently."""
    import ccmetrics.engine as engine
    from ccmetrics.engine.memory import MemoryLimitError

    assert len(engine.__all__) <= 20 and set(engine.__all__) <= set(engine._EXPORTS)
    assert {"GroundTruth", "voronoi_partition", "EngineConfig", "warm_up", "MemoryLimitError"} <= set(engine.__all__)
    assert not any(name.startswith("BYTES_PER") for name in engine.__all__)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, module in engine._EXPORTS.items():
            assert getattr(engine, name) is getattr(importlib.import_module(f"ccmetrics.engine.{module}"), name)
        from ccmetrics.engine import BYTES_PER_RUN, format_bytes, torch_quantile  # noqa: F401
    assert engine.MemoryLimitError is MemoryLimitError
