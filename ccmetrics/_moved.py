"""The module paths of the flat layout (ccmetrics 0.1), kept for one release as aliases with a warning.

The modules now live in folders that name their layer (``ccmetrics.engine``, ``.metrics``, ``.formats``,
``.analysis``, ``.campaign``). ``import ccmetrics.io`` (or ``from ccmetrics.partition import ...``, or the
attribute ``ccmetrics.io``) still works: a finder on ``sys.meta_path`` answers the former name with the module
itself (``ccmetrics.io is ccmetrics.formats.io``: the same functions, the same state) and a
``DeprecationWarning`` that names the new path, pointed at the code that imported it. Names that were never
modules of the package are not answered (an import of them fails as before). Cost: one dictionary look-up per
import of a ``ccmetrics.*`` name.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from types import FrameType
from typing import Any

__all__ = ["MOVED", "install", "warn_moved"]

#: former module -> its module now (``ccmetrics.campaign`` is now the package that re-exports its names)
MOVED = {
    "ccmetrics.components": "ccmetrics.engine.components",
    "ccmetrics.partition": "ccmetrics.engine.partition",
    "ccmetrics.surface": "ccmetrics.engine.surface",
    "ccmetrics.geometry": "ccmetrics.engine.geometry",
    "ccmetrics.ground_truth": "ccmetrics.engine.ground_truth",
    "ccmetrics.config": "ccmetrics.engine.config",
    "ccmetrics.torch_emulation": "ccmetrics.engine.torch_emulation",
    "ccmetrics.resources": "ccmetrics.engine.memory",
    "ccmetrics.registry": "ccmetrics.metrics.registry",
    "ccmetrics.overlap": "ccmetrics.metrics.overlap",
    "ccmetrics.panoptic": "ccmetrics.metrics.panoptic",
    "ccmetrics.lesions": "ccmetrics.metrics.lesions",
    "ccmetrics.matching": "ccmetrics.metrics.matching",
    "ccmetrics.detection_rules": "ccmetrics.metrics.detection_rules",
    "ccmetrics.aggregation": "ccmetrics.metrics.aggregation",
    "ccmetrics.case": "ccmetrics.metrics.case",
    "ccmetrics.classes": "ccmetrics.metrics.classes",
    # ccmetrics.results (CaseResult's module) is the results layer now: its package answers CaseResult's names
    "ccmetrics.io": "ccmetrics.formats.io",
    "ccmetrics.dicom": "ccmetrics.formats.dicom",
    "ccmetrics.grids": "ccmetrics.formats.grids",
    "ccmetrics.nnunet": "ccmetrics.formats.nnunet",
    "ccmetrics.stats": "ccmetrics.analysis.stats",
    "ccmetrics.plots": "ccmetrics.analysis.plots",
    "ccmetrics.sizes": "ccmetrics.analysis.sizes",
    "ccmetrics.subgroups": "ccmetrics.analysis.subgroups",
    "ccmetrics.dataset": "ccmetrics.campaign.dataset",
    "ccmetrics.records": "ccmetrics.campaign.records",
    "ccmetrics.output_folder": "ccmetrics.campaign.output_folder",
}


def warn_moved(old: str, level: int = 3) -> None:
    """Warn that the module ``old`` moved, naming its new path; ``level`` 3 points the warning at the code that
    imported it or read the attribute (``warnings`` skips the import machinery's own frames)."""
    new = MOVED[old]
    warnings.warn(
        f"{old} moved to {new} (the layers of ccmetrics are folders now): import it from there; the former path "
        f"works until ccmetrics 0.3",
        DeprecationWarning,
        stacklevel=level,
    )


class _Alias:
    """Loader of a former module name: the module at its new path, under both names."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module(self.new)

    def exec_module(self, module: Any) -> None:  # the module ran already, under its new name
        pass


class _Finder:
    """Answers the former module names only (``sys.meta_path``)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in MOVED:
            return None
        level = 3
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and "importlib" in frame.f_code.co_filename:
            if "_bootstrap" not in frame.f_code.co_filename:  # importlib.import_module: warnings does not skip it
                level += 1
            frame = frame.f_back
        warn_moved(name, level)
        return importlib.util.spec_from_loader(name, _Alias(MOVED[name]))  # type: ignore[arg-type]


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
