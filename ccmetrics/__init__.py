"""ccmetrics: segmentation quality per connected component (CC-Metrics).

``import ccmetrics`` is instant: the public names below are loaded on first use
(PEP 562, as scikit-image does), so numpy, scipy, cc3d and pandas are imported
when a function is first called or imported; nibabel and SimpleITK when a file
is read, matplotlib when a figure is drawn, torch and MONAI when a MONAI metric
object or tensor is used.
"""

import importlib

#: public name -> the submodule that defines it
_EXPORTS = {
    "label_components": "components",
    "DatasetResult": "dataset",
    "EvalOptions": "dataset",
    "evaluate_dataset": "dataset",
    "BUILTIN_METRICS": "case",
    "CaseResult": "results",
    "GroundTruth": "ground_truth",
    "evaluate": "case",
    "EngineConfig": "config",
    "engine_config": "config",
    "Metric": "registry",
    "register_metric": "registry",
    "Matching": "matching",
    "match_instances": "matching",
    "DetectionResult": "lesions",
    "LesionDiceResult": "lesions",
    "detection": "lesions",
    "lesion_dice": "lesions",
    "MultiPQResult": "panoptic",
    "PQResult": "panoptic",
    "multiclass_pq": "panoptic",
    "panoptic_quality": "panoptic",
    "voronoi_partition": "partition",
}

#: submodules reachable as attributes (``ccmetrics.io.load_image``) without an explicit import
_SUBMODULES = (
    "aggregation",
    "case",
    "components",
    "config",
    "dataset",
    "geometry",
    "ground_truth",
    "io",
    "lesions",
    "matching",
    "monai",
    "nuclei",
    "overlap",
    "panoptic",
    "partition",
    "plots",
    "registry",
    "report",
    "results",
    "schema",
    "stats",
    "surface",
    "synthetic",
    "torch_emulation",
)

__all__ = list(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ccmetrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
