"""ccmetrics: segmentation quality per connected component (CC-Metrics).

Importing ccmetrics loads numpy, scipy, cc3d and pandas only; nibabel and
SimpleITK are imported when a file is read, matplotlib when a figure is drawn,
torch and MONAI when a MONAI metric object or tensor is used.
"""
from .components import label_components
from .dataset import DatasetResult, evaluate_dataset
from .evaluate import BUILTIN_METRICS, CaseResult, evaluate
from .matching import Matching, match_instances
from .lesions import DetectionResult, LesionDiceResult, detection, lesion_dice
from .panoptic import MultiPQResult, PQResult, multiclass_pq, panoptic_quality
from .partition import voronoi_partition

__all__ = [
    "BUILTIN_METRICS", "CaseResult", "evaluate", "evaluate_dataset", "DatasetResult", "label_components", "voronoi_partition",
    "match_instances", "Matching", "panoptic_quality", "multiclass_pq", "PQResult", "MultiPQResult",
    "lesion_dice", "detection", "LesionDiceResult", "DetectionResult",
]
__version__ = "0.1.0"
