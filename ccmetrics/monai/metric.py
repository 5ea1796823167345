"""CC-Metrics as a MONAI ``CumulativeIterationMetric``.

:class:`CCMetric` takes batch-first one-hot tensors, as MONAI's own metrics do,
and evaluates every image and foreground channel with :func:`ccmetrics.evaluate`;
nothing here computes a metric or a partition itself.

Two buffers are kept:

* the MONAI buffer (``get_buffer()``): one row per image, one column per
  evaluated channel, holding that image's CC value (the mean over its GT
  components).  Every row has the same shape, so MONAI's distributed gathering
  (``evenly_divisible_all_gather``) works unchanged;
* the component buffer (``get_component_buffer()``): the raw per-component
  values of every image and channel (ragged, gathered with
  ``torch.distributed.all_gather_object`` when a process group is running).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
import torch
from monai.metrics import CumulativeIterationMetric
from monai.utils import MetricReduction, look_up_option

from .._arguments import public_arguments
from .._inputs import as_non_negative, as_spacing, to_numpy
from ..metrics import registry
from ..metrics.aggregation import cc_values
from ..metrics.case import evaluate

__all__ = ["CCMetric"]

#: the two CC aggregations, named as the tables' ``summary.aggregation``: the mean of the case CC values, or
#: every lesion of the data set pooled
AGGREGATIONS = ("cc_patient", "cc_pooled")
#: their former names (MONAI's ``mode=``, the published interface's ``cc_reduction``), still read
AGGREGATION_MODES = ("patient", "overall")


class ChannelResult(NamedTuple):
    """CC evaluation of one image and one channel (internal record shared with the drop-in classes)."""

    value: float  #: the case's CC value (``CaseResult.cc``)
    components: np.ndarray  #: raw per-component values, float64 (inf: missed lesion, distances)
    pooled: np.ndarray  #: values entering "cc_pooled" pooling (see :meth:`CCMetric.aggregate`)
    worst: float  #: the worst distance used for this image (``CaseResult.worst_distance``)
    empty_gt: bool
    pred_empty: bool


def metric_column(metric: Any) -> str:
    """The ``CaseResult`` column a metric name or MONAI metric object is reported under."""
    return metric if isinstance(metric, str) else type(metric).__name__


def check_metric(metric: Any) -> Any:
    """Validate a metric argument: a registry name (returned lower-cased) or a MONAI metric object."""
    record = registry.resolve([metric])[0]
    if not record.per_region:
        raise ValueError(f"{metric!r} is a case-level metric without components; use ccmetrics.evaluate for it")
    return record.name if isinstance(metric, str) else metric


def evaluate_channel(
    pred: np.ndarray,
    gt: np.ndarray,
    metric: Any,
    spacing: tuple[float, ...] | None,
    nsd_tolerance: float,
    worst_distance: float | None,
) -> ChannelResult:
    """Run :func:`ccmetrics.evaluate` on one binary image and collect what the buffers need."""
    result = evaluate(
        gt=gt, pred=pred, metrics=[metric], spacing=spacing, nsd_tolerance=nsd_tolerance, worst_distance=worst_distance
    )
    column = result.metrics[0]
    value = float(result.cc[column])
    raw = np.array(result.per_component[column], dtype=np.float64)  # a writable copy
    if result.empty_gt:
        pooled = np.array([value])  # one entry per empty-GT image, as in the published code
    else:
        pooled = cc_values(raw, metric, result.worst_distance)  # what ``cc`` averages
    return ChannelResult(value, raw, pooled, float(result.worst_distance), bool(result.empty_gt), not bool(pred.any()))


def one_hot_masks(x: Any, name: str) -> np.ndarray:
    """Validate a batch-first one-hot tensor (B, C, H, W[, D]) and return it as a numpy bool array.

    Binary values are checked on the tensor's own device, and only the boolean
    mask (one byte per voxel) is copied to the CPU. See :func:`check_one_hot`
    for the channel layout.
    """
    if x is None:
        raise ValueError(f"{name} is required: CC-Metrics compare a prediction with a ground truth")
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(x)
    if not isinstance(x, torch.Tensor):
        raise ValueError(
            f"{name} must be a batch-first torch tensor (B, C, spatial...) or a list of "
            f"channel-first tensors, got {type(x).__name__}"
        )
    t = x.detach()
    if hasattr(t, "as_tensor"):  # MetaTensor -> plain tensor
        t = t.as_tensor()
    if t.ndim not in (4, 5):
        raise ValueError(
            f"{name} must be a batch-first one-hot tensor of shape (B, C, H, W) or "
            f"(B, C, H, W, D), got {t.ndim} dimensions with shape {tuple(t.shape)}"
        )
    if t.shape[1] < 2:
        raise ValueError(
            f"{name} must be one-hot with at least 2 channels (background and foreground), got "
            f"shape {tuple(t.shape)}; convert class indices with "
            f"monai.transforms.AsDiscrete(to_onehot=num_classes)"
        )
    if t.dtype != torch.bool:
        if t.is_complex():
            raise ValueError(f"{name} has unsupported dtype {t.dtype}")
        if t.is_floating_point() and torch.isnan(t).any():
            raise ValueError(f"{name} contains NaN values")
        bad = (t != 0) & (t != 1)
        if bad.any():
            example = float(t[bad].flatten()[0])
            raise ValueError(
                f"{name} must be binarized one-hot (values 0 and 1 only), but it holds {example:g}; "
                f"use monai.transforms.AsDiscrete(argmax=True, to_onehot=num_classes) for "
                f"predictions and AsDiscrete(to_onehot=num_classes) for labels"
            )
        t = t != 0
    return np.ascontiguousarray(t.cpu().numpy())


def check_one_hot(masks: np.ndarray, name: str) -> None:
    """Every voxel of a (B, C, ...) boolean array must have exactly one channel set.

    Otherwise a batch of 3D binary masks (B, H, W, D) would be read as 2D
    images with H channels; overlapping channels need ``multi_label=True``.
    """
    per_voxel = masks.sum(axis=1, dtype=np.int64)
    wrong = per_voxel != 1
    if wrong.any():
        raise ValueError(
            f"{name} must be one-hot, shape (B, C, H, W[, D]) with exactly one channel set per voxel, "
            f"but in an array of shape {masks.shape} a voxel has {int(per_voxel[wrong][0])} channels "
            f"set. A batch of binary masks (B, H, W[, D]) needs a channel axis and "
            f"AsDiscrete(to_onehot=2); for overlapping channels (e.g. BraTS TC/WT/ET) pass "
            f"multi_label=True"
        )


def _is_vector(s: Any) -> bool:
    if isinstance(s, torch.Tensor):
        return s.ndim >= 1
    if isinstance(s, np.ndarray):
        return s.ndim >= 1
    return isinstance(s, (list, tuple))


def spacing_per_image(spacing: Any, batch: int, ndim: int) -> list[tuple[float, ...] | None]:
    """Expand a spacing argument to one validated spacing (or None) per image.

    Accepted: ``None``; one number; one number per spatial axis (all images);
    one entry per image: a list of ``batch`` entries that are each ``None``
    (voxel units) or a sequence (one number per axis, or ``[s]`` for
    isotropic), or a ``(batch, ndim)`` array. A flat list of numbers is always
    read as one number per axis.
    """
    if spacing is None:
        return [None] * batch
    if isinstance(spacing, (torch.Tensor, np.ndarray)):
        arr = to_numpy(spacing, "spacing")
        if arr.ndim == 2:
            spacing = list(arr)
        else:
            return [as_spacing(arr, ndim)] * batch
    if isinstance(spacing, (list, tuple)) and spacing and all(s is None or _is_vector(s) for s in spacing):
        if len(spacing) != batch:
            raise ValueError(f"spacing holds {len(spacing)} per-image entries but the batch has {batch} images")
        return [as_spacing(s, ndim) for s in spacing]
    return [as_spacing(spacing, ndim)] * batch


def reduce_values(f: torch.Tensor, reduction: MetricReduction | str) -> tuple[torch.Tensor, torch.Tensor]:
    """``monai.metrics.utils.do_metric_reduction`` without its cast to float32.

    NaN entries are skipped; a mean over no value is 0, as in MONAI.
    """
    f = f.clone()
    nans = torch.isnan(f)
    not_nans = (~nans).to(f.dtype)
    reduction = look_up_option(reduction, MetricReduction)
    if reduction == MetricReduction.NONE:
        return f, not_nans
    f[nans] = 0
    zero = torch.zeros((), dtype=f.dtype, device=f.device)

    def mean(total, count):
        return torch.where(count > 0, total / count.clamp(min=1), zero)

    if reduction == MetricReduction.MEAN:  # mean over channels, then over images
        count = not_nans.sum(dim=1)
        per_image = mean(f.sum(dim=1), count)
        count = (count > 0).to(f.dtype).sum(dim=0)
        return mean(per_image.sum(dim=0), count), count
    if reduction == MetricReduction.SUM:
        return f.sum(dim=(0, 1)), not_nans.sum(dim=(0, 1))
    if reduction == MetricReduction.MEAN_BATCH:
        count = not_nans.sum(dim=0)
        return mean(f.sum(dim=0), count), count
    if reduction == MetricReduction.SUM_BATCH:
        return f.sum(dim=0), not_nans.sum(dim=0)
    if reduction == MetricReduction.MEAN_CHANNEL:
        count = not_nans.sum(dim=1)
        return mean(f.sum(dim=1), count), count
    if reduction == MetricReduction.SUM_CHANNEL:
        return f.sum(dim=1), not_nans.sum(dim=1)
    raise ValueError(f"unsupported reduction {reduction}")  # pragma: no cover (look_up_option raises first)


def all_gather_list(items: list[Any]) -> list[Any]:
    """Concatenate a per-rank list over all ranks (rank order), or return it as is without a process group."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return list(items)
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, list(items))
    return [item for part in parts for item in part]


class CCMetric(CumulativeIterationMetric):
    """CC-Metrics (per connected component) as a MONAI cumulative metric.

    Each image of a batch and each foreground channel is evaluated on its own
    with :func:`ccmetrics.evaluate`: the channel's GT is split into connected
    components, the image into their Voronoi regions, and ``metric`` is
    computed inside each region; the image's CC value is the mean over its
    components.

    Parameters
    ----------
    metric : str or MONAI metric object
        ``"dice"``, ``"iou"``, ``"nsd"``, ``"hd"``, ``"hd95"``, ``"assd"``, or a
        MONAI metric object (e.g. ``SurfaceDistanceMetric(symmetric=False)``),
        which ``evaluate`` runs on each component's crop.
    include_background : bool
        Evaluate channel 0 as well (as its own foreground mask). Default False.
    spacing : float or sequence of float, optional
        Voxel spacing in mm for all images (one number, or one per spatial
        axis). Distances, ``nsd_tolerance`` and ``worst_distance`` are then in mm
        and the Voronoi partition is physical; otherwise everything is in
        voxels. A ``spacing=`` passed to a call overrides it for that call
        (one value for the batch or one entry per image).
    nsd_tolerance : float
        NSD tolerance, in the units of the distances. Default 1.0.
    worst_distance : float, optional
        Replaces infinite distances (a GT component with no prediction in its
        region) in the means. Default: each image's diagonal
        ``sqrt(sum((n_k * s_k)**2))``.
    reduction : str
        MONAI reduction applied by :meth:`aggregate` (``"mean"``, ``"sum"``,
        ``"mean_batch"``, ``"sum_batch"``, ``"mean_channel"``, ``"sum_channel"``,
        ``"none"``); NaN entries are skipped as in MONAI. Default ``"mean"``.
    get_not_nans : bool
        Make :meth:`aggregate` return ``(value, not_nans)``.
    aggregation : {"cc_patient", "cc_pooled"}
        Default aggregation of :meth:`aggregate` (used by the ignite handlers), named as the tables'
        ``summary.aggregation``. ``mode="patient"`` / ``mode="overall"``, the former keyword and values, are
        still read for a release, with a ``DeprecationWarning``.
    multi_label : bool
        Accept channels that overlap or leave voxels without any channel.

    Notes
    -----
    **Input**: batch-first one-hot tensors ``(B, C, H, W)`` or ``(B, C, H, W, D)``
    with values 0/1 (bool, integer or float), ``C >= 2``, on any device, or
    lists of channel-first tensors (as all MONAI metrics take them). Every
    voxel must have exactly one channel set (so that a batch of 3D masks
    ``(B, H, W, D)`` is not read as 2D images with H channels); pass
    ``multi_label=True`` for overlapping channels (e.g. BraTS TC/WT/ET).
    Invalid input raises ``ValueError`` naming the expected layout.

    **Buffers**: ``get_buffer()`` holds one row per image and one column per
    evaluated channel (``C - 1``, or ``C`` with ``include_background``): the
    image's CC value (float64, on the input's device). ``get_component_buffer()``
    holds the raw per-component values (inf for a missed lesion with distance
    metrics, as in ``CaseResult.per_component``).

    **Empty GT** (a channel without foreground in an image): the case value is
    ``CaseResult.cc``'s convention from the original code: the best value
    (Dice 1, distance 0) if the prediction channel is empty too, else the worst
    (0, or the worst distance); NaN for MONAI metric objects, which the
    reductions skip as MONAI does. Such an image has no component; in
    ``"cc_pooled"`` pooling it counts as one entry holding its case value, as the
    published CCMetrics code does.

    Examples
    --------
    Two images of one lesion each; the second lesion is missed:

    >>> import torch
    >>> from ccmetrics.monai import CCMetric
    >>> gt = torch.zeros(2, 1, 8, 8, dtype=torch.bool)
    >>> gt[:, :, 2:5, 2:5] = True
    >>> pred = gt.clone()
    >>> pred[1] = False
    >>> one_hot = lambda m: torch.cat([~m, m], dim=1)
    >>> metric = CCMetric("dice")
    >>> metric(one_hot(pred), one_hot(gt))
    tensor([[1.],
            [0.]], dtype=torch.float64)
    >>> metric.aggregate().item()
    0.5
    """

    @public_arguments("CCMetric", renamed={"mode": "aggregation"})
    def __init__(
        self,
        metric: Any = "dice",
        *,
        include_background: bool = False,
        spacing: Any | None = None,
        nsd_tolerance: float = 1.0,
        worst_distance: float | None = None,
        reduction: MetricReduction | str = MetricReduction.MEAN,
        get_not_nans: bool = False,
        aggregation: str = "cc_patient",
        multi_label: bool = False,
    ) -> None:
        super().__init__()
        self.metric = check_metric(metric)
        self.multi_label = bool(multi_label)
        self.include_background = bool(include_background)
        if spacing is not None:
            if isinstance(spacing, (list, tuple)) and any(_is_vector(s) for s in spacing):
                raise ValueError(
                    "spacing given to the constructor applies to all images: one number or one per "
                    "axis; pass per-image spacings to each call instead"
                )
            as_spacing(spacing, len(spacing) if _is_vector(spacing) else 1)  # validates the values
        self.spacing = spacing
        self.nsd_tolerance = as_non_negative(nsd_tolerance, "nsd_tolerance")
        self.worst_distance = None if worst_distance is None else as_non_negative(worst_distance, "worst_distance")
        self.reduction = look_up_option(reduction, MetricReduction)
        self.get_not_nans = bool(get_not_nans)
        self.aggregation = as_aggregation(aggregation, "CCMetric")

    @property
    def mode(self) -> str:
        """The former name of ``aggregation``, in its former values ``"patient"`` / ``"overall"``."""
        return AGGREGATION_MODES[AGGREGATIONS.index(self.aggregation)]

    @mode.setter
    def mode(self, value: str) -> None:
        warnings.warn("CCMetric.mode is deprecated: use CCMetric.aggregation", DeprecationWarning, stacklevel=2)
        self.aggregation = as_aggregation(value)

    @property
    def metric_name(self) -> str:
        """The metric's name: the built-in name or the MONAI object's class name."""
        return metric_column(self.metric)

    def reset(self) -> None:
        """Empty both buffers."""
        super().reset()
        self._components: list[list[torch.Tensor]] = []
        self._pooled: list[list[torch.Tensor]] = []

    # -- computation ---------------------------------------------------------------------------------

    def evaluate_batch(self, y_pred: Any, y: Any, spacing: Any = None) -> list[list[ChannelResult]]:
        """Evaluate every image and channel of a batch; returns ``results[image][channel]``."""
        pred, gt = one_hot_masks(y_pred, "y_pred"), one_hot_masks(y, "y")
        if pred.shape != gt.shape:
            raise ValueError(f"y_pred and y must have the same shape, got {pred.shape} and {gt.shape}")
        if not self.multi_label:
            check_one_hot(pred, "y_pred")
            check_one_hot(gt, "y")
        batch, channels, ndim = pred.shape[0], pred.shape[1], pred.ndim - 2
        spacings = spacing_per_image(self.spacing if spacing is None else spacing, batch, ndim)
        first = 0 if self.include_background else 1
        return [
            [
                evaluate_channel(
                    pred[b, c], gt[b, c], self.metric, spacings[b], self.nsd_tolerance, self.worst_distance
                )
                for c in range(first, channels)
            ]
            for b in range(batch)
        ]

    def _compute_tensor(
        self,
        y_pred: torch.Tensor,
        y: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """Evaluate one batch: returns a (B, channels) tensor of CC values and fills the component buffer.

        Keyword arguments: ``spacing`` only (see :func:`spacing_per_image`).
        """
        spacing = kwargs.pop("spacing", None)
        if kwargs:
            raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}; only spacing= is accepted")
        results = self.evaluate_batch(y_pred, y, spacing)
        for row in results:
            self._components.append([torch.from_numpy(r.components) for r in row])
            self._pooled.append([torch.from_numpy(r.pooled) for r in row])
        device = y_pred.device if isinstance(y_pred, torch.Tensor) else torch.device("cpu")
        dtype = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
        values = [[r.value for r in row] for row in results]
        return torch.tensor(values, dtype=dtype, device=device)

    def _compute_list(self, y_pred: Any, y: Any = None, **kwargs: Any) -> torch.Tensor:
        """Lists of channel-first tensors: one image at a time, with per-image spacing entries split."""
        if not isinstance(y_pred, (list, tuple)) or not isinstance(y, (list, tuple)):
            raise ValueError("y_pred and y must both be batch-first tensors or both lists of channel-first tensors")
        if len(y_pred) != len(y):
            raise ValueError(f"y_pred and y hold {len(y_pred)} and {len(y)} images")
        if not y_pred:
            raise ValueError("y_pred is an empty list")
        spacing = kwargs.pop("spacing", None)
        if kwargs:
            raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}; only spacing= is accepted")
        first = y_pred[0]
        ndim = (first.ndim if hasattr(first, "ndim") else np.ndim(first)) - 1
        spacings: list[Any] = [None] * len(y_pred)
        if spacing is not None:
            spacings = spacing_per_image(spacing, len(y_pred), ndim)
        rows = [
            self._compute_tensor(torch.as_tensor(p)[None], torch.as_tensor(g)[None], spacing=s)
            for p, g, s in zip(y_pred, y, spacings)
        ]
        return torch.cat([r.to(rows[0].device) for r in rows], dim=0)

    # -- results ---------------------------------------------------------------------------------------

    def get_component_buffer(self) -> list[list[torch.Tensor]]:
        """Raw per-component values: ``buffer[image][channel]`` is a 1D float64 tensor.

        Images are in the order of ``get_buffer()``'s rows (gathered over all
        ranks when a ``torch.distributed`` process group is running: then every
        rank must call this, as with ``get_buffer``). Channels are the evaluated
        ones (``C - 1``, or ``C`` with ``include_background``). Values are those
        of ``CaseResult.per_component``: distances are ``inf`` for a GT component
        whose region holds no prediction; an image with an empty GT channel has
        an empty tensor.
        """
        return [list(row) for row in all_gather_list(self._components)]

    @public_arguments("CCMetric.aggregate", renamed={"mode": "aggregation"})
    def aggregate(
        self,
        aggregation: str | None = None,
        reduction: MetricReduction | str | None = None,
    ) -> Any:
        """Aggregate the buffers over the data set.

        Parameters
        ----------
        aggregation : {"cc_patient", "cc_pooled"}, optional
            ``"cc_patient"``: reduce the per-image CC values (the mean of the case
            means with ``reduction="mean"``). ``"cc_pooled"``: pool every
            component of every image (each empty-GT image counts once with its
            case value) and reduce those, so that every lesion of the data set
            weighs the same; infinite or NaN distances count as the image's
            worst distance, exactly as in the case means. Default: ``self.aggregation``.
            ``mode=``, its former name, and the former values ``"patient"``, ``"overall"`` are still
            read for a release, with a ``DeprecationWarning``.
        reduction : str, optional
            Default ``self.reduction``. With ``"cc_pooled"`` only ``"mean"``,
            ``"sum"`` (over all channels' components) and ``"mean_batch"``,
            ``"sum_batch"`` (one value per channel) apply; use
            :meth:`get_component_buffer` for the values themselves.

        Returns
        -------
        torch.Tensor, or ``(value, not_nans)`` with ``get_not_nans=True``
            float64 (float32 on MPS), on the device of the inputs.

        Raises
        ------
        ValueError
            Nothing to aggregate yet, an unknown aggregation, or a reduction that
            ``"cc_pooled"`` cannot apply.
        """
        aggregation = self.aggregation if aggregation is None else as_aggregation(aggregation, "CCMetric.aggregate")
        reduction = MetricReduction(look_up_option(self.reduction if reduction is None else reduction, MetricReduction))
        data = self.get_buffer()
        if not isinstance(data, torch.Tensor):
            raise ValueError("nothing to aggregate: call the metric on a batch first")
        if aggregation == "cc_patient":
            f, not_nans = reduce_values(data, reduction)
        else:
            f, not_nans = self._aggregate_overall(reduction, data.dtype, data.device)
        return (f, not_nans) if self.get_not_nans else f

    def _aggregate_overall(
        self, reduction: MetricReduction, dtype: torch.dtype, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor]:
        pooled = all_gather_list(self._pooled)
        channels = [torch.cat([row[c] for row in pooled]).to(dtype=dtype, device=device) for c in range(len(pooled[0]))]
        if reduction in (MetricReduction.MEAN, MetricReduction.SUM):  # all components as one column
            return reduce_values(torch.cat(channels)[:, None], reduction)
        if reduction in (MetricReduction.MEAN_BATCH, MetricReduction.SUM_BATCH):
            parts = [reduce_values(v[:, None], reduction) for v in channels]
            return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
        raise ValueError(
            f"reduction {reduction.value!r} does not apply to mode='overall', aggregation='cc_pooled' (components "
            f"are pooled over images); use 'mean', 'sum', 'mean_batch' or 'sum_batch', or "
            f"get_component_buffer()"
        )


def as_aggregation(value: str, call: str | None = None) -> str:
    """``"cc_patient"`` or ``"cc_pooled"``, the former values ``"patient"`` and ``"overall"`` read as those (with a
    ``DeprecationWarning`` naming the new one when ``call`` names the function that took them).

    Examples
    --------
    >>> as_aggregation("cc_pooled"), as_aggregation("overall")
    ('cc_pooled', 'cc_pooled')
    """
    if value in AGGREGATIONS:
        return value
    if value in AGGREGATION_MODES:
        new = AGGREGATIONS[AGGREGATION_MODES.index(value)]
        if call is not None:
            warnings.warn(
                f"{call}(mode={value!r}) is deprecated: use {call}(aggregation={new!r})", DeprecationWarning, 4
            )
        return new
    raise ValueError(
        f"aggregation must be one of {AGGREGATIONS} (or their former mode values {AGGREGATION_MODES}), got {value!r}"
    )
