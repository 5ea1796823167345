"""Drop-in replacements for the published CC-Metrics classes (PyPI ``ccmetrics`` 0.0.3, ``import CCMetrics``).

Changing ``from CCMetrics import CCDiceMetric`` to
``from ccmetrics.monai import CCDiceMetric`` is enough to switch: the
constructors take the same arguments, and ``__call__``, ``cc_aggregate``,
``get_buffer`` and ``reset`` return the same types and shapes. The values are
equal wherever both partitions agree (the published code breaks exact Voronoi
ties by scan order, this package by the lowest component label as the paper
states; only prediction voxels on such ties can change a value).

What the drop-in classes add: any batch size, 2D or 3D images, more than one
foreground channel (one buffer entry per image and channel, image-major),
an optional ``spacing=`` per call, and a default worst distance (the image
diagonal) when ``metric_worst_score`` is not given.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from monai.metrics import (
    DiceMetric,
    HausdorffDistanceMetric,
    MeanIoU,
    SurfaceDiceMetric,
    SurfaceDistanceMetric,
)

from ..metrics.aggregation import fill_missing, is_distance_metric
from .metric import CCMetric

__all__ = [
    "CCBaseMetric",
    "CCDiceMetric",
    "CCHausdorffDistanceMetric",
    "CCHausdorffDistance95Metric",
    "CCSurfaceDistanceMetric",
    "CCSurfaceDiceMetric",
]


def _equivalent(base: Any) -> tuple:
    """The ``evaluate`` metric equal to a MONAI metric object, and the NSD tolerance.

    Configurations with a built-in equivalent use it (fast, exact); any other
    (directed or non-Euclidean distances, other percentiles, one-sided surface
    distance, sub-voxel NSD, other metric classes) is run by ``evaluate`` as
    the MONAI object itself on each component's crop.
    """
    euclidean = getattr(base, "distance_metric", "euclidean") == "euclidean"
    if isinstance(base, DiceMetric):
        return "dice", 1.0
    if isinstance(base, MeanIoU):
        return "iou", 1.0
    if isinstance(base, HausdorffDistanceMetric) and euclidean and not base.directed:
        if base.percentile is None:
            return "hd", 1.0
        if base.percentile == 95:
            return "hd95", 1.0
    if isinstance(base, SurfaceDistanceMetric) and euclidean and base.symmetric:
        return "assd", 1.0
    if isinstance(base, SurfaceDiceMetric):
        thresholds = [float(t) for t in base.class_thresholds]
        if not thresholds or len(set(thresholds)) != 1:
            raise ValueError(
                f"class_thresholds must hold one tolerance (the same for every foreground channel), "
                f"got {base.class_thresholds}"
            )
        if euclidean and not base.use_subvoxels:
            return "nsd", thresholds[0]
        base = copy.deepcopy(base)
        base.class_thresholds = thresholds[:1]  # evaluate runs it on two-channel crops
        return base, thresholds[0]
    return copy.deepcopy(base), 1.0


class CCBaseMetric:
    """A CC-Metric with the published ``CCMetrics.CCBaseMetric`` interface, computed by ``ccmetrics.evaluate``.

    Parameters
    ----------
    BaseMetric : type
        The MONAI metric class (``DiceMetric``, ``HausdorffDistanceMetric``,
        ``SurfaceDistanceMetric``, ``SurfaceDiceMetric``, ``MeanIoU``, or any
        ``CumulativeIterationMetric``), built as ``BaseMetric(*args, **kwargs)``
        exactly as in the published code; configurations with a built-in
        equivalent are computed natively, others by running that object on
        each component's crop.
    *args
        Passed to ``BaseMetric`` (e.g. ``class_thresholds`` of ``SurfaceDiceMetric``).
    use_caching : bool
        Accepted for compatibility; it changes nothing. The published code
        uses it to create ``caching_dir`` and to let ``cache_datapoint`` save
        Voronoi partitions to ``.npy`` files (its ``__call__`` never reads them).
        Here the partition is computed on the fly in a fraction of the time,
        nothing is written and no directory is created.
    caching_dir : str
        Accepted for compatibility; unused.
    metric_best_score : float
        Value of an image whose GT and prediction are both empty. Required.
    metric_worst_score : float, optional
        Value of an image with an empty GT but a non-empty prediction, and
        replacement for ``inf``/``nan`` in :meth:`cc_aggregate` (missed
        lesions of distance metrics). For distance metrics it may be left out
        (the published code requires it): each image's diagonal is then used,
        in voxels, or mm with a ``spacing``.
    **kwargs
        ``cc_reduction`` (``"patient"``, default, or ``"overall"``: the default
        mode of :meth:`cc_aggregate`; the published interface's keyword and values, kept), or
        ``aggregation`` (``"cc_patient"`` or ``"cc_pooled"``, the same two as
        :class:`~ccmetrics.monai.metric.CCMetric` and the tables name them); everything else goes to ``BaseMetric``
        (e.g. ``percentile``, ``symmetric``, ``class_thresholds``).
        ``include_background=True`` raises, as in the published code.

    Notes
    -----
    Buffer (``get_buffer()``): one tensor per image and foreground channel.
    With a non-empty GT it holds the raw per-component values, shape ``(K, 1)``
    (float64 for Dice, float32 otherwise, as the published classes): ``inf``
    for missed lesions with HD and surface distance, ``nan`` with HD95 as
    MONAI gives. With an empty GT it holds one value, shape ``(1,)``:
    ``metric_best_score`` if the prediction is empty too, else the worst score.

    Examples
    --------
    >>> import torch
    >>> from ccmetrics.monai import CCDiceMetric
    >>> gt = torch.zeros(1, 1, 10, 10, 10, dtype=torch.bool)
    >>> gt[..., 1:4, 1:4, 1:4] = True
    >>> gt[..., 6:9, 6:9, 6:9] = True
    >>> pred = gt.clone()
    >>> pred[..., 6:9, 6:9, 6:9] = False
    >>> metric = CCDiceMetric(cc_reduction="patient")
    >>> metric(y_pred=torch.cat([~pred, pred], 1), y=torch.cat([~gt, gt], 1))
    >>> metric.cc_aggregate()
    tensor([0.5000], dtype=torch.float64)
    >>> metric.cc_aggregate(mode="overall")
    tensor([1., 0.], dtype=torch.float64)
    """

    def __init__(
        self,
        BaseMetric: Any,
        *args: Any,
        use_caching: bool = False,
        caching_dir: str = ".cache",
        metric_best_score: float | None = None,
        metric_worst_score: float | None = None,
        **kwargs: Any,
    ) -> None:
        if metric_best_score is None:
            raise ValueError("metric_best_score must be defined")
        if kwargs.get("include_background", False):
            raise ValueError("Background class is not supported")
        kwargs["include_background"] = False
        aggregation = kwargs.pop("aggregation", None)
        if aggregation is not None and kwargs.get("cc_reduction") is not None:
            raise ValueError("give cc_reduction or aggregation, not both: they name the same choice")
        self.cc_reduction = _check_mode(kwargs.pop("cc_reduction", None) or aggregation or "patient")
        self.metric_perfect_score = float(metric_best_score)
        self.metric_worst_score = None if metric_worst_score is None else float(metric_worst_score)
        self.use_caching = bool(use_caching)
        self.caching_dir = caching_dir
        self.base_metric = BaseMetric(*args, **kwargs)
        metric, tolerance = _equivalent(self.base_metric)
        self._distance = is_distance_metric(metric)
        if self.metric_worst_score is None and not self._distance:
            raise ValueError("metric_worst_score must be defined for metrics other than distances")
        self._dtype = torch.float64 if metric == "dice" else torch.float32
        self._cc = CCMetric(metric, nsd_tolerance=tolerance)
        self.buffer_collection: list[torch.Tensor] = []
        self._worst: list[float] = []  # the worst score used for each buffer entry

    def __call__(self, y_pred: Any, y: Any, spacing: Any | None = None) -> None:
        """Evaluate a batch and append one buffer entry per image and foreground channel.

        Parameters
        ----------
        y_pred, y : torch.Tensor or numpy.ndarray
            Binarized one-hot, ``(B, C, H, W[, D])``, ``C >= 2``, on any device.
        spacing : optional
            Voxel spacing in mm (one number, one per axis, or one entry per
            image); an extension, the published classes have none.

        Returns
        -------
        None
        """
        for row in self._cc.evaluate_batch(y_pred, y, spacing):
            for r in row:
                worst = r.worst if self.metric_worst_score is None else self.metric_worst_score
                if r.empty_gt:
                    entry = torch.tensor([self.metric_perfect_score if r.pred_empty else worst])
                else:
                    values = torch.from_numpy(r.components).reshape(-1, 1)
                    if isinstance(self._cc.metric, str) and self._cc.metric == "hd95":
                        values = torch.where(torch.isinf(values), torch.nan, values)  # MONAI's HD95 gives nan
                    entry = values.to(self._dtype)
                self.buffer_collection.append(entry)
                self._worst.append(worst)

    def cc_aggregate(self, mode: str | None = None) -> torch.Tensor:
        """Aggregate the buffer, with ``inf`` and ``nan`` replaced by the worst score.

        Parameters
        ----------
        mode : {"patient", "overall"}, optional
            ``"patient"``: a 1D tensor of per-image means (one per image and
            foreground channel). ``"overall"``: all per-component values
            concatenated (squeezed, as in the published code: a 0-d tensor for
            a single value). Default: ``cc_reduction``. The tables' names ``"cc_patient"`` and
            ``"cc_pooled"`` are read as these two.

        Returns
        -------
        torch.Tensor
        """
        mode = _check_mode(self.cc_reduction if mode is None else mode)
        if not self.buffer_collection:
            raise ValueError("nothing to aggregate: call the metric on a batch first")
        cleaned = [
            torch.from_numpy(fill_missing(x.cpu().numpy(), w)).reshape(-1, 1)
            for x, w in zip(self.buffer_collection, self._worst)
        ]
        if mode == "patient":
            return torch.stack([x.mean() for x in cleaned])
        return torch.cat(cleaned).squeeze()

    def get_buffer(self) -> list[torch.Tensor]:
        """The list of buffer entries (one tensor per image and foreground channel)."""
        return self.buffer_collection

    def reset(self) -> None:
        """Empty the buffer."""
        self.buffer_collection = []
        self._worst = []

    def cache_datapoint(self, y: Any) -> None:
        """Accepted for compatibility: does nothing (no partition is cached, nothing is written).

        Raises ``ValueError`` when caching is disabled, as the published code does.
        """
        if not self.use_caching:
            raise ValueError("Caching is disabled")


class CCDiceMetric(CCBaseMetric):
    """CC-Dice, drop-in for ``CCMetrics.CCDiceMetric`` (see :class:`CCBaseMetric`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(DiceMetric, *args, metric_best_score=1.0, metric_worst_score=0.0, **kwargs)


class CCHausdorffDistanceMetric(CCBaseMetric):
    """CC-HD, drop-in for ``CCMetrics.CCHausdorffDistanceMetric``.

    ``metric_worst_score`` (voxels, or mm with a spacing) replaces missed
    lesions; default: the image diagonal. See :class:`CCBaseMetric`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(HausdorffDistanceMetric, *args, metric_best_score=0.0, **kwargs)


class CCHausdorffDistance95Metric(CCBaseMetric):
    """CC-HD95, drop-in for ``CCMetrics.CCHausdorffDistance95Metric``.

    ``metric_worst_score`` (voxels, or mm with a spacing) replaces missed
    lesions; default: the image diagonal. See :class:`CCBaseMetric`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(HausdorffDistanceMetric, *args, metric_best_score=0.0, percentile=95, **kwargs)


class CCSurfaceDistanceMetric(CCBaseMetric):
    """CC mean surface distance, drop-in for ``CCMetrics.CCSurfaceDistanceMetric``.

    As MONAI's ``SurfaceDistanceMetric``, ``symmetric=False`` (the default) is
    the mean distance from the prediction's surface to the GT's;
    ``symmetric=True`` is the ASSD. ``metric_worst_score`` default: the image
    diagonal. See :class:`CCBaseMetric`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(SurfaceDistanceMetric, *args, metric_best_score=0.0, **kwargs)


class CCSurfaceDiceMetric(CCBaseMetric):
    """CC-NSD, drop-in for ``CCMetrics.CCSurfaceDiceMetric``.

    ``class_thresholds=[t]`` is the NSD tolerance ``t`` (voxels, or mm with a
    spacing); several foreground channels need one common tolerance. See
    :class:`CCBaseMetric`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(SurfaceDiceMetric, *args, metric_best_score=1.0, metric_worst_score=0.0, **kwargs)


#: the tables' names of the two aggregations, read as the published interface's ``"patient"`` and ``"overall"``
_PUBLISHED_MODES = {"cc_patient": "patient", "cc_pooled": "overall"}


def _check_mode(mode: str) -> str:
    mode = _PUBLISHED_MODES.get(mode, mode) if isinstance(mode, str) else mode
    if mode not in ("patient", "overall"):
        raise ValueError(
            f"Unknown aggregation function {mode}; use 'patient' or 'overall' (or 'cc_patient' or 'cc_pooled')"
        )
    return mode
