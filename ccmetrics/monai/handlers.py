"""Ignite handlers for CC-Metrics, usable as ``key_val_metric`` or in ``additional_metrics`` of MONAI engines.

MONAI's ``IgniteMetricHandler.update`` calls its metric without keyword
arguments, so a voxel spacing could not reach it. :class:`CCMetricHandler`
overrides ``update`` to pass one: the handler's ``spacing`` if given, else none
when the metric has its own, else the spacing found in the batch's metadata.

Metadata is looked up, first hit wins:

1. ``y_pred`` then ``y`` as returned by ``output_transform``, when they are
   MetaTensors (a batched MetaTensor, or a list of them after decollation):
   the spacing is derived from their ``affine`` (as ``MetaTensor.pixdim``
   does), which follows any resampling done by the transforms;
2. the ``"pred_meta_dict"``, ``"label_meta_dict"`` then ``"image_meta_dict"``
   entries of ``engine.state.output`` then ``engine.state.batch`` (a dict of
   batched metadata, or a list of per-image dicts after decollation): their
   ``"affine"``, else ``"pixdim"`` (NIfTI order, ``pixdim[1:ndim+1]``), else
   ``"spacing"``.

A source is used only if it gives a valid spacing for every image of the
batch. Without any, distances are in voxels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np
import torch
from monai.handlers.ignite_metric import IgniteMetricHandler
from monai.utils import IgniteInfo, MetricReduction, min_version, optional_import

from .._arguments import public_arguments
from .._inputs import as_spacing, to_numpy
from .metric import CCMetric

reinit__is_reduced, _ = optional_import(
    "ignite.metrics.metric", IgniteInfo.OPT_IMPORT_VERSION, min_version, "reinit__is_reduced", as_type="decorator"
)

__all__ = ["CCMetricHandler", "CCDiceHandler", "CCSurfaceDiceHandler", "CCHausdorffDistance95Handler", "META_KEYS"]

#: metadata dictionaries searched in ``engine.state.output`` and ``engine.state.batch``, in this order
META_KEYS = ("pred_meta_dict", "label_meta_dict", "image_meta_dict")


_NOT_FOUND = "not found"  # the iteration's metadata was searched and gave no spacing


def _identity(x: Any) -> Any:
    return x


class CCMetricHandler(IgniteMetricHandler):
    """Ignite handler computing a CC-Metric over an epoch, with spacing from the image metadata.

    Parameters
    ----------
    metric : str, MONAI metric object or CCMetric
        A :class:`~ccmetrics.monai.metric.CCMetric`, or what builds one: a built-in name (``"dice"``,
        ``"iou"``, ``"nsd"``, ``"hd"``, ``"hd95"``, ``"assd"``) or a MONAI metric
        object, together with ``metric_kwargs``.
    output_transform : callable
        Extracts ``(y_pred, y)`` from ``engine.state.output``, e.g.
        ``monai.handlers.from_engine(["pred", "label"])``: batch-first one-hot
        tensors or lists of channel-first ones.
    save_details : bool
        Store the per-image CC values (``CCMetric.get_buffer()``, one row per
        image, one column per channel) in ``engine.state.metric_details[name]``.
    spacing : float or sequence of float, optional
        Voxel spacing in mm for every image. When given it wins over the
        metric's own spacing and over the metadata.
    spacing_from_meta : bool
        Read the spacing of each image from the metadata (see the module
        docstring) when neither the handler nor the metric has a spacing.
        Default True.
    **metric_kwargs
        ``include_background``, ``nsd_tolerance``, ``worst_distance``,
        ``reduction``, ``get_not_nans``, ``aggregation`` of :class:`~ccmetrics.monai.metric.CCMetric`; not
        allowed together with a ready :class:`~ccmetrics.monai.metric.CCMetric`.

    Notes
    -----
    Spacing precedence: handler ``spacing`` > the metric's ``spacing`` >
    metadata > none (voxel units). A MetaTensor made without metadata carries
    an identity affine, i.e. a 1 mm spacing, which gives the same values as
    voxel units. While metadata is read, ``output_transform`` runs twice per
    iteration (it should have no side effects, as ``from_engine`` has none).

    The engine's metric value is ``CCMetric.aggregate()``: by default the mean
    over images and channels of the per-image CC values (``aggregation="cc_patient"``);
    ``aggregation="cc_pooled"`` pools all components.

    Examples
    --------
    With a plain ignite ``Engine`` whose output is ``(y_pred, y)``:

    >>> import torch
    >>> from ignite.engine import Engine
    >>> from ccmetrics.monai import CCDiceHandler
    >>> gt = torch.zeros(1, 1, 8, 8, dtype=torch.bool)
    >>> gt[..., 1:3, 1:3] = True             # two lesions
    >>> gt[..., 5:7, 5:7] = True
    >>> pred = gt.clone()
    >>> pred[..., 5:7, 5:7] = False          # the second one is missed
    >>> one_hot = lambda m: torch.cat([~m, m], dim=1)
    >>> engine = Engine(lambda engine, batch: batch)
    >>> CCDiceHandler().attach(engine, "cc_dice")
    >>> engine.run([(one_hot(pred), one_hot(gt))]).metrics["cc_dice"]
    0.5
    """

    def __init__(
        self,
        metric: Any = "dice",
        output_transform: Callable = _identity,
        save_details: bool = True,
        spacing: Any | None = None,
        *,
        spacing_from_meta: bool = True,
        **metric_kwargs: Any,
    ) -> None:
        if isinstance(metric, CCMetric):
            if metric_kwargs:
                raise ValueError(
                    f"options {sorted(metric_kwargs)} apply only when the handler builds the metric; "
                    f"set them on the CCMetric instead"
                )
            metric_fn = metric
        else:
            metric_fn = CCMetric(metric, **metric_kwargs)
        if spacing is not None:
            as_spacing(spacing, np.size(to_numpy(spacing, "spacing")) if not np.isscalar(spacing) else 1)
        self.spacing = spacing
        self.spacing_from_meta = bool(spacing_from_meta)
        self._queued: Any = None  # per-image spacings of the running iteration (see iteration_completed)
        super().__init__(metric_fn=metric_fn, output_transform=output_transform, save_details=save_details)

    @torch.no_grad()
    def iteration_completed(self, engine: Any) -> None:
        """Find the spacing of every image of the iteration, then let ignite call :meth:`update`.

        Ignite unrolls lists of channel-first tensors (the output of
        decollated engines) into one ``update`` call per image, which loses the
        image's index in ``engine.state``; so the per-image spacings are found
        here, from the whole iteration's output, and handed to the ``update``
        calls in order. (``output_transform`` runs twice per iteration.)
        """
        self._queued = None
        if self._wants_meta():
            output = self._output_transform(engine.state.output)
            if isinstance(output, Mapping) and self.required_output_keys is not None:
                output = tuple(output.get(k) for k in self.required_output_keys)
            if isinstance(output, Sequence) and len(output) == 2:
                found = self.meta_spacing(output[0], output[1], engine)
                self._queued = _NOT_FOUND if found is None else list(found)
        try:
            super().iteration_completed(engine)
        finally:
            self._queued = None

    @reinit__is_reduced
    def update(self, output: Sequence[Any]) -> None:
        """Evaluate ``(y_pred, y)`` (a batch or one image), with the spacing chosen as described above."""
        if len(output) != 2:
            raise ValueError(f"output must have length 2, got {len(output)}.")
        y_pred, y = output
        spacing: Any = None
        if self.spacing is not None:
            spacing = self.spacing
        elif self._wants_meta():
            queued = getattr(self, "_queued", None)
            n = _batch_layout(y_pred)[0]
            if isinstance(queued, list) and 0 < n <= len(queued):
                spacing = queued[:n]
                del queued[:n]
            elif queued is None:  # update called directly, not by iteration_completed
                spacing = self.meta_spacing(y_pred, y, self._engine)
        if spacing is None:
            self.metric_fn(y_pred, y)
        else:
            self.metric_fn(y_pred, y, spacing=spacing)

    def _wants_meta(self) -> bool:
        return self.spacing is None and self.spacing_from_meta and getattr(self.metric_fn, "spacing", None) is None

    def meta_spacing(self, y_pred: Any, y: Any, engine: Any = None) -> list[tuple] | None:
        """Per-image spacing of a batch from its metadata (see the module docstring), or None."""
        n, ndim = _batch_layout(y_pred)
        if n == 0:
            return None
        for source in (y_pred, y):
            found = _spacing_from_meta_tensors(source, n, ndim)
            if found is not None:
                return found
        state = getattr(engine, "state", None)
        for container in (getattr(state, "output", None), getattr(state, "batch", None)):
            for key in META_KEYS:
                found = _spacing_from_meta_dicts(container, key, n, ndim)
                if found is not None:
                    return found
        return None


class CCDiceHandler(CCMetricHandler):
    """CC-Dice handler: :class:`CCMetricHandler` with ``metric="dice"``.

    Parameters
    ----------
    include_background, reduction, aggregation
        As in :class:`~ccmetrics.monai.metric.CCMetric`.
    output_transform, save_details, spacing, spacing_from_meta
        As in :class:`CCMetricHandler`.
    """

    @public_arguments("CCDiceHandler", renamed={"mode": "aggregation"})
    def __init__(
        self,
        include_background: bool = False,
        reduction: MetricReduction | str = MetricReduction.MEAN,
        aggregation: str = "cc_patient",
        output_transform: Callable = _identity,
        save_details: bool = True,
        spacing: Any | None = None,
        *,
        spacing_from_meta: bool = True,
    ) -> None:
        super().__init__(
            "dice",
            output_transform,
            save_details,
            spacing,
            spacing_from_meta=spacing_from_meta,
            include_background=include_background,
            reduction=reduction,
            aggregation=aggregation,
        )


class CCSurfaceDiceHandler(CCMetricHandler):
    """CC-NSD (normalized surface Dice) handler: :class:`CCMetricHandler` with ``metric="nsd"``.

    Parameters
    ----------
    nsd_tolerance : float
        Tolerance in mm with a spacing (handler, metric or metadata), else in voxels. Default 1.0.
    include_background, reduction, aggregation
        As in :class:`~ccmetrics.monai.metric.CCMetric`.
    output_transform, save_details, spacing, spacing_from_meta
        As in :class:`CCMetricHandler`.
    """

    @public_arguments("CCSurfaceDiceHandler", renamed={"mode": "aggregation"})
    def __init__(
        self,
        nsd_tolerance: float = 1.0,
        include_background: bool = False,
        reduction: MetricReduction | str = MetricReduction.MEAN,
        aggregation: str = "cc_patient",
        output_transform: Callable = _identity,
        save_details: bool = True,
        spacing: Any | None = None,
        *,
        spacing_from_meta: bool = True,
    ) -> None:
        super().__init__(
            "nsd",
            output_transform,
            save_details,
            spacing,
            spacing_from_meta=spacing_from_meta,
            nsd_tolerance=nsd_tolerance,
            include_background=include_background,
            reduction=reduction,
            aggregation=aggregation,
        )


class CCHausdorffDistance95Handler(CCMetricHandler):
    """CC-HD95 handler: :class:`CCMetricHandler` with ``metric="hd95"``.

    Parameters
    ----------
    worst_distance : float, optional
        Value of a missed lesion's HD95 in the means (mm with a spacing, else
        voxels). Default: each image's diagonal.
    include_background, reduction, aggregation
        As in :class:`~ccmetrics.monai.metric.CCMetric`.
    output_transform, save_details, spacing, spacing_from_meta
        As in :class:`CCMetricHandler`.
    """

    @public_arguments("CCHausdorffDistance95Handler", renamed={"mode": "aggregation"})
    def __init__(
        self,
        worst_distance: float | None = None,
        include_background: bool = False,
        reduction: MetricReduction | str = MetricReduction.MEAN,
        aggregation: str = "cc_patient",
        output_transform: Callable = _identity,
        save_details: bool = True,
        spacing: Any | None = None,
        *,
        spacing_from_meta: bool = True,
    ) -> None:
        super().__init__(
            "hd95",
            output_transform,
            save_details,
            spacing,
            spacing_from_meta=spacing_from_meta,
            worst_distance=worst_distance,
            include_background=include_background,
            reduction=reduction,
            aggregation=aggregation,
        )


# -- metadata ---------------------------------------------------------------------------------------------


def _batch_layout(y_pred: Any) -> tuple:
    """(number of images, number of spatial dimensions) of a batch tensor or a list of channel-first ones."""
    if isinstance(y_pred, (list, tuple)):
        if not y_pred or not hasattr(y_pred[0], "ndim"):
            return 0, 0
        return len(y_pred), y_pred[0].ndim - 1
    if hasattr(y_pred, "ndim") and y_pred.ndim >= 3:
        return y_pred.shape[0], y_pred.ndim - 2
    return 0, 0


def _valid(spacing: Any, ndim: int) -> tuple | None:
    try:
        return as_spacing(spacing, ndim)
    except (TypeError, ValueError):
        return None


def _spacing_from_affine(affine: Any, ndim: int) -> tuple | None:
    """Column norms of the affine's linear part (as ``monai.data.utils.affine_to_spacing``)."""
    try:
        a = np.asarray(to_numpy(affine, "affine"), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if a.ndim != 2 or min(a.shape) < ndim:
        return None
    return _valid(np.sqrt((a[:ndim, :ndim] ** 2).sum(axis=0)), ndim)


def _all_or_none(values: list[tuple | None], n: int) -> list[tuple] | None:
    if len(values) != n or any(v is None for v in values):
        return None
    return values  # type: ignore[return-value]


def _spacing_from_meta_tensors(x: Any, n: int, ndim: int) -> list[tuple] | None:
    """Per-image spacing from a batched MetaTensor or a list of MetaTensors (their affine)."""
    if isinstance(x, (list, tuple)):
        if not all(hasattr(i, "affine") and hasattr(i, "meta") for i in x):
            return None
        return _all_or_none([_spacing_from_affine(i.affine, ndim) for i in x], n)
    if not (hasattr(x, "affine") and hasattr(x, "meta")):
        return None
    affine = x.affine
    if affine.ndim == 3:  # batched
        return _all_or_none([_spacing_from_affine(a, ndim) for a in affine], n)
    return _all_or_none([_spacing_from_affine(affine, ndim)] * n, n)


def _spacing_from_meta_dict(meta: Any, ndim: int, n: int) -> list[tuple] | None:
    """Per-image spacing from one metadata dict (batched when its arrays have a leading batch axis)."""
    if not isinstance(meta, Mapping):
        return None
    if meta.get("affine") is not None:
        a = np.asarray(to_numpy(meta["affine"], "affine"), dtype=np.float64)
        items = list(a) if a.ndim == 3 else [a] * n
        return _all_or_none([_spacing_from_affine(i, ndim) for i in items], n)
    for key, start in (("pixdim", 1), ("spacing", 0)):
        if meta.get(key) is not None:
            v = np.asarray(to_numpy(meta[key], key), dtype=np.float64)
            rows = list(v) if v.ndim == 2 else [v] * n
            return _all_or_none([_valid(r[start : start + ndim], ndim) for r in rows], n)
    return None


def _spacing_from_meta_dicts(container: Any, key: str, n: int, ndim: int) -> list[tuple] | None:
    """Per-image spacing from ``container[key]`` (a dict) or ``[d[key] for d in container]`` (decollated)."""
    try:
        if isinstance(container, Mapping):
            return _spacing_from_meta_dict(container.get(key), ndim, n)
        if (
            isinstance(container, (list, tuple))
            and len(container) == n
            and all(isinstance(d, Mapping) for d in container)
        ):
            per_item = [_spacing_from_meta_dict(d.get(key), ndim, 1) for d in container]
            return _all_or_none([p[0] if p else None for p in per_item], n)
    except (TypeError, ValueError):
        return None
    return None
