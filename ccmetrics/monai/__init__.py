"""CC-Metrics inside MONAI: a cumulative metric, ignite handlers and drop-ins for the published classes.

This subpackage imports torch, MONAI (and, for the handlers, pytorch-ignite);
``import ccmetrics`` alone does not. Import it explicitly::

    from ccmetrics.monai import CCMetric, CCDiceHandler, CCHausdorffDistance95Handler

* :class:`~ccmetrics.monai.metric.CCMetric`: a ``monai.metrics.CumulativeIterationMetric`` taking
  batch-first one-hot tensors (2D or 3D, any batch size, each foreground
  channel on its own, any device), ``aggregate(aggregation="cc_patient" | "cc_pooled")``.
* :class:`CCMetricHandler`, :class:`CCDiceHandler`,
  :class:`CCSurfaceDiceHandler`, :class:`CCHausdorffDistance95Handler`:
  ``IgniteMetricHandler`` subclasses for ``SupervisedEvaluator``
  (``key_val_metric`` / ``additional_metrics``) that take the voxel spacing
  from the batch metadata.
* :class:`CCDiceMetric`, :class:`CCSurfaceDiceMetric`,
  :class:`CCHausdorffDistanceMetric`, :class:`CCHausdorffDistance95Metric`,
  :class:`CCSurfaceDistanceMetric` (and :class:`CCBaseMetric`): the published
  ``CCMetrics`` API; changing the import is enough to switch.

All values are computed by :func:`ccmetrics.evaluate`, one image and channel at a time.
"""

from .compat import (
    CCBaseMetric,
    CCDiceMetric,
    CCHausdorffDistance95Metric,
    CCHausdorffDistanceMetric,
    CCSurfaceDiceMetric,
    CCSurfaceDistanceMetric,
)
from .handlers import CCDiceHandler, CCHausdorffDistance95Handler, CCMetricHandler, CCSurfaceDiceHandler
from .metric import CCMetric

__all__ = [
    "CCMetric",
    "CCMetricHandler",
    "CCDiceHandler",
    "CCSurfaceDiceHandler",
    "CCHausdorffDistance95Handler",
    "CCBaseMetric",
    "CCDiceMetric",
    "CCSurfaceDiceMetric",
    "CCHausdorffDistanceMetric",
    "CCHausdorffDistance95Metric",
    "CCSurfaceDistanceMetric",
]
