"""The ``pet`` metric group of one case: the scan inside the masks, on the case's shared work.

:func:`ccmetrics.evaluate` with ``metrics=[..., "pet"]`` and ``image=scan`` calls :func:`pet_from_inputs` once per
case (the record in :mod:`ccmetrics.metrics.builtin_metrics`), on the work the case did already: the GT's lesions
(its sites: components at the case's connectivity, or the instances with ``sites="labels"``), the prediction's
components at the same connectivity, and the Voronoi region of every predicted voxel
(:class:`ccmetrics.engine.geometry.CaseRegions`). Nothing is labelled or partitioned again; the scan is read at the
lesion and predicted voxels (one gather each) plus a box around each component for SUVpeak. The kernels are those
of :mod:`ccmetrics.metrics.pet` (definitions: ``docs/definitions.md``, PET quantification).

What the group adds to a :class:`~ccmetrics.metrics.results.CaseResult`:

* ``per_component`` (one row per lesion): ``suv_max``, ``suv_mean``, ``suv_peak``, ``mtv_ml``, ``tlg`` of the
  lesion, and ``pred_mtv_ml``, ``pred_tlg``, ``pred_suv_max``, ``pred_suv_mean`` of the predicted voxels inside
  its Voronoi region (NaN SUVs and 0 volume when the region holds none);
* ``per_prediction`` (one row per predicted component): ``suv_max``, ``suv_mean``, ``suv_peak``, ``mtv_ml``,
  ``tlg``. The group makes the per-prediction table even without the ``detection`` metric (its rows need the
  prediction's components, labelled anyway); ``per_component`` then has no ``n_pred``/``split`` columns, which
  stay the detection metric's;
* ``case_scores`` (the per-case table): ``gt_`` and ``pred_`` versions of ``tmtv_ml``, ``tlg``, ``suv_max``,
  ``suv_mean`` (over all voxels of the mask), ``dmax_mm`` (farthest pair of component centroids; 0 with one
  component), ``extent_mm`` (farthest pair of voxels) and ``lesion_count`` (the GT's lesions, the prediction's
  components). An empty mask: TMTV, TLG and lesion count 0, the others NaN.

The scan's values are taken as SUV (body weight). Volumes are in ml and distances in mm with the case's spacing;
without one (voxel units) a voxel counts as 1 mm wide, so ``mtv_ml`` is the voxel count / 1000.

Examples
--------
>>> import numpy as np
>>> from ccmetrics import evaluate
>>> gt = np.zeros((1, 8), bool); gt[0, 1:3] = True
>>> pred = np.zeros_like(gt); pred[0, 2:4] = True
>>> scan = np.array([[0.5, 2.0, 6.0, 3.0, 1.0, 1.0, 1.0, 1.0]])
>>> r = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, spacing=(10.0, 10.0))  # 0.1 ml per voxel
>>> r.per_component[["suv_max", "suv_mean", "mtv_ml", "tlg", "pred_suv_max", "pred_mtv_ml"]].round(3)
... # doctest: +NORMALIZE_WHITESPACE
           suv_max  suv_mean  mtv_ml  tlg  pred_suv_max  pred_mtv_ml
component
1              6.0       4.0     0.2  0.8           6.0          0.2
>>> r.case_scores["gt_tlg"], r.case_scores["pred_suv_mean"], r.case_scores["gt_extent_mm"]
(0.8, 4.5, 10.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._inputs import check_ndim, to_numpy
from ..engine.components import Sites
from ..engine.threads import submit, worker_threads
from . import pet

if TYPE_CHECKING:
    from .registry import CaseInputs

__all__ = [
    "PER_COMPONENT_COLUMNS",
    "PER_PREDICTION_COLUMNS",
    "PetResult",
    "as_scan",
    "pet_from_inputs",
]

#: the columns the group adds to ``per_component``, in order
PER_COMPONENT_COLUMNS = (
    "suv_max",
    "suv_mean",
    "suv_peak",
    "mtv_ml",
    "tlg",
    "pred_mtv_ml",
    "pred_tlg",
    "pred_suv_max",
    "pred_suv_mean",
)
#: the columns the group adds to ``per_prediction``, in order
PER_PREDICTION_COLUMNS = ("suv_max", "suv_mean", "suv_peak", "mtv_ml", "tlg")
#: the per-case measures, each with a ``gt_`` and a ``pred_`` column
CASE_MEASURES = ("tmtv_ml", "tlg", "suv_max", "suv_mean", "dmax_mm", "extent_mm", "lesion_count")
NEEDS_IMAGE = "the pet metrics need the scan: image=... (the PET in SUV, on the GT's grid)"


def as_scan(image: Any, shape: tuple[int, ...]) -> np.ndarray:
    """The scan as float32 on the GT's grid: read once (no copy of a float32 array), its shape checked.

    Raises
    ------
    ValueError
        A shape other than the GT's (the message names both).
    TypeError
        Values that are not real numbers.

    Examples
    --------
    >>> as_scan(np.ones((2, 3)), (2, 3)).dtype
    dtype('float32')
    >>> as_scan(np.ones((3, 2)), (2, 3))
    Traceback (most recent call last):
    ...
    ValueError: image shape (3, 2) differs from the GT's shape (2, 3): the scan must be on the GT's grid
    """
    arr = to_numpy(image, "image")
    check_ndim(arr, "image")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"image must hold real numbers (SUV), got dtype {arr.dtype}")
    if arr.shape != tuple(shape):
        raise ValueError(
            f"image shape {arr.shape} differs from the GT's shape {tuple(shape)}: the scan must be on the GT's grid"
        )
    return arr.astype(np.float32, copy=False)


@dataclass
class PetResult:
    """The ``pet`` group of one case: per-lesion and per-prediction columns, and the per-case measures.

    Attributes
    ----------
    per_component : dict of str to ndarray
        :data:`PER_COMPONENT_COLUMNS`, one entry per GT lesion (site 1..K).
    per_prediction : dict of str to ndarray
        :data:`PER_PREDICTION_COLUMNS`, one entry per predicted component (1..M, the case's connectivity).
    gt_tmtv_ml, pred_tmtv_ml, gt_tlg, pred_tlg, gt_suv_max, pred_suv_max, gt_suv_mean, pred_suv_mean,
    gt_dmax_mm, pred_dmax_mm, gt_extent_mm, pred_extent_mm : float
        The per-case measures of each mask (see the module docstring).
    gt_lesion_count, pred_lesion_count : int
        The GT's lesions (its sites) and the prediction's components (the case's connectivity).
    """

    per_component: dict[str, np.ndarray] = field(default_factory=dict)
    per_prediction: dict[str, np.ndarray] = field(default_factory=dict)
    gt_tmtv_ml: float = 0.0
    pred_tmtv_ml: float = 0.0
    gt_tlg: float = 0.0
    pred_tlg: float = 0.0
    gt_suv_max: float = float("nan")
    pred_suv_max: float = float("nan")
    gt_suv_mean: float = float("nan")
    pred_suv_mean: float = float("nan")
    gt_dmax_mm: float = float("nan")
    pred_dmax_mm: float = float("nan")
    gt_extent_mm: float = float("nan")
    pred_extent_mm: float = float("nan")
    gt_lesion_count: int = 0
    pred_lesion_count: int = 0


def _refuse_non_finite_prediction(image: np.ndarray, components: Sites) -> None:
    """A ``ValueError`` naming the first predicted voxel (and its component) where the scan is NaN or inf."""
    values = image.reshape(-1)[components.flat_index] if image.flags.c_contiguous else None
    if values is None:
        values = image[np.unravel_index(components.flat_index, components.shape)]
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        at = int(bad[0])
        where = tuple(int(c) for c in np.unravel_index(int(components.flat_index[at]), components.shape))
        raise ValueError(
            f"non-finite SUV ({values[at]}) inside predicted component {int(components.label[at])} at voxel "
            f"{where}: the scan must be finite wherever it is measured"
        )


def _per_mask(image: np.ndarray, sites: Sites, spacing: Any, prefix: str) -> tuple[dict[str, np.ndarray], dict]:
    """One mask's components (per-component uptake and SUVpeak) and its per-case measures, keyed ``prefix + name``."""
    uptake = pet.lesion_uptake(image, sites, spacing=spacing)
    columns = {name: uptake[name] for name in ("suv_max", "suv_mean", "mtv_ml", "tlg")}
    try:
        columns["suv_peak"] = pet.suv_peak(image, sites, spacing=spacing)
    except ValueError as exc:  # pet.suv_peak says "lesion": a predicted component is named so
        if prefix != "pred_":
            raise
        raise ValueError(str(exc).replace("inside lesion ", "inside predicted component ", 1)) from None
    # the mask's totals from its components' (every voxel in one): pet.patient_uptake without a second gather
    tmtv, tlg = float(uptake["mtv_ml"].sum()), float(uptake["tlg"].sum())
    case = {
        f"{prefix}tmtv_ml": tmtv,
        f"{prefix}tlg": tlg,
        f"{prefix}suv_max": float(uptake["suv_max"].max()) if sites.n else float("nan"),
        f"{prefix}suv_mean": tlg / tmtv if sites.n else float("nan"),
    }
    case[f"{prefix}dmax_mm"] = pet.dmax_mm(pet.centroids_mm(sites, spacing=spacing))
    case[f"{prefix}extent_mm"] = pet.extent_mm(sites, spacing=spacing)
    case[f"{prefix}lesion_count"] = int(sites.n)
    return {name: columns[name] for name in PER_PREDICTION_COLUMNS}, case


def pet_from_inputs(inputs: CaseInputs) -> PetResult:
    """The ``pet`` group on a case's :class:`~ccmetrics.metrics.registry.CaseInputs` (its ``compute``).

    Needs ``inputs.image`` (the scan, float32 on the GT's grid: :func:`as_scan`) and ``inputs.regions`` (the
    predicted voxels and the Voronoi region of each, :class:`~ccmetrics.engine.geometry.CaseRegions`).

    Raises
    ------
    ValueError
        Without the scan; a NaN or inf SUV inside a lesion (names the lesion and the voxel), inside a predicted
        component (names it and the voxel), or within the SUVpeak sphere of one of their voxels.
    """
    if inputs.image is None:
        raise ValueError(NEEDS_IMAGE)
    image, spacing, lesions = inputs.image, inputs.spacing, inputs.gt_sites
    components = inputs.pred(inputs.connectivity)
    with worker_threads(image.shape) as pool:  # a large image: the prediction's measures beside the lesions'
        pending = None if pool is None else submit(pool, _per_mask, image, components, spacing, "pred_")
        gt_columns, gt_case = _per_mask(image, lesions, spacing, "gt_")  # lesions first: their NaN names the lesion
        _refuse_non_finite_prediction(image, components)
        regions = inputs.regions
        if lesions.n:
            inside = pet.region_uptake(image, regions.pred_flat, regions.pred_region, lesions.n, spacing)
        else:  # no lesion, no region: the predicted voxels belong to none
            inside = {name: np.zeros(0) for name in PER_COMPONENT_COLUMNS[5:]}
        if pending is None:
            pred_columns, pred_case = _per_mask(image, components, spacing, "pred_")
        else:
            pred_columns, pred_case = pending.result()
    per_component = {**gt_columns, **inside}
    return PetResult(
        {name: per_component[name] for name in PER_COMPONENT_COLUMNS}, pred_columns, **gt_case, **pred_case
    )
