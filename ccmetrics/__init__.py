"""ccmetrics: segmentation quality per connected component (CC-Metrics).

``import ccmetrics`` is instant: the public names below are loaded on first use
(PEP 562, as scikit-image does), so numpy, scipy and cc3d are imported when a
function is first called or imported; pandas when a table is first read (results
hold their tables as columns until then: :mod:`ccmetrics.columns`); nibabel when
a NIfTI header is not a plain NIfTI-1 one and SimpleITK for the other formats,
matplotlib when a figure is drawn, torch and MONAI when a MONAI metric object or
tensor is used.
"""

import importlib

from . import _moved

#: public name -> the module that defines it
_EXPORTS = {
    "label_components": "engine.components",
    "GroundTruth": "engine.ground_truth",
    "EngineConfig": "engine.config",
    "engine_config": "engine.config",
    "voronoi_partition": "engine.partition",
    "BUILTIN_METRICS": "metrics.case",
    "evaluate": "metrics.case",
    "CaseResult": "metrics.results",
    "Metric": "metrics.registry",
    "register_metric": "metrics.registry",
    "Matching": "metrics.matching",
    "match_instances": "metrics.matching",
    "DetectionResult": "metrics.lesions",
    "LesionDiceResult": "metrics.lesions",
    "detection": "metrics.lesions",
    "lesion_dice": "metrics.lesions",
    "MultiPQResult": "metrics.panoptic",
    "PQResult": "metrics.panoptic",
    "multiclass_pq": "metrics.panoptic",
    "panoptic_quality": "metrics.panoptic",
    "DatasetResult": "results.dataset",
    "EvalOptions": "campaign.options",
    "PairingOptions": "campaign.options",
    "RunOptions": "campaign.options",
    "ProbabilityOptions": "campaign.probabilities",
    "evaluate_dataset": "campaign.dataset",
}

#: the layers, the domains and the foundations, reachable as attributes (``ccmetrics.formats.load_image``)
#: without an explicit import
_SUBMODULES = (
    "analysis",
    "campaign",
    "engine",
    "formats",
    "metrics",
    "monai",
    "nuclei",
    "report",
    "results",
    "schema",
    "synthetic",
)

__all__ = list(_EXPORTS)
__version__ = "0.1.0"

_moved.install()  # the former module paths (ccmetrics.io, ...): aliases with a warning


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    former = f"{__name__}.{name}"
    if former in _moved.MOVED:  # ccmetrics.io and the like: the module at its new path, with a warning
        _moved.warn_moved(former, level=3)
        return importlib.import_module(_moved.MOVED[former])
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ccmetrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
