"""2D nuclei: instance segmentation and classification, evaluated as Foucart et al. recommend.

Detection, classification and segmentation are scored apart on one
class-agnostic matching (:mod:`ccmetrics.metrics.matching`); Panoptic Quality per
class and the CC-Metrics with the GT nuclei as sites come beside them.

* :func:`evaluate` -- one image -> :class:`~ccmetrics.nuclei.metrics.NucleiResult`;
* :func:`metrics_from_confusion` -- detection and classification scores from a
  confusion matrix with a "no object" row and column;
* :func:`evaluate_many` -- a data set, per image, per patient (slide) and
  pooled -> :class:`NucleiDatasetResult`;
* :func:`compare_methods` -- Friedman and Nemenyi tests of several methods per
  patient (:func:`ccmetrics.analysis.stats.friedman_nemenyi`).

Importing this package loads nothing beyond ccmetrics' own dependencies.
"""

from .aggregate import NucleiDatasetResult, compare_methods, evaluate_many
from .metrics import NO_OBJECT, NucleiResult, evaluate, metrics_from_confusion

__all__ = [
    "evaluate",
    "NucleiResult",
    "metrics_from_confusion",
    "NO_OBJECT",
    "evaluate_many",
    "NucleiDatasetResult",
    "compare_methods",
]
