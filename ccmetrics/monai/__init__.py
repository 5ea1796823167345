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

Without torch or MONAI, ``import ccmetrics.monai`` raises an ImportError that names what is missing and how to
install it (``INSTALL``; the ``monai`` extra); the rest of ccmetrics needs neither.
"""

#: how to install what this subpackage needs (the ``monai`` extra; ccmetrics-toolkit is not on the package index)
INSTALL = (
    "pip install torch (on a machine without GPU its CPU build: pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu, as pytorch.org says), then pip install monai pytorch-ignite; "
    'or pip install -e ".[monai]" in a checkout of ccmetrics'
)


def _require(module: str, name: str) -> None:
    """Import ``module`` or raise ImportError saying that ccmetrics.monai needs ``name`` and how to install it."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"ccmetrics.monai needs {name}, which is not installed: {INSTALL}. "
            "The rest of ccmetrics (evaluate, the command line) works without it."
        ) from err


_require("torch", "PyTorch (torch)")
_require("monai", "MONAI (monai)")

from .compat import (  # noqa: E402 (after the check of what they import)
    CCBaseMetric,
    CCDiceMetric,
    CCHausdorffDistance95Metric,
    CCHausdorffDistanceMetric,
    CCSurfaceDiceMetric,
    CCSurfaceDistanceMetric,
)
from .handlers import CCDiceHandler, CCHausdorffDistance95Handler, CCMetricHandler, CCSurfaceDiceHandler  # noqa: E402
from .metric import CCMetric  # noqa: E402

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
