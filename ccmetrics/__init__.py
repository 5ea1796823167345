"""ccmetrics: segmentation quality per connected component (CC-Metrics).

Importing ccmetrics loads numpy, scipy, cc3d and pandas only; torch and MONAI
are imported lazily, when a MONAI metric object or tensor is used.
"""
from .components import label_components
from .evaluate import BUILTIN_METRICS, CaseResult, evaluate
from .partition import voronoi_partition

__all__ = ["BUILTIN_METRICS", "CaseResult", "evaluate", "label_components", "voronoi_partition"]
__version__ = "0.1.0"
