"""A validated ground truth with its Voronoi sites, their voxels and edges: prepared once, shared by many predictions.

Preparing a GT costs one pass over the image (``flatnonzero``), the labelling of its components on
the voxel list (:mod:`ccmetrics.engine.components`) and one face-neighbour look-up per GT voxel for the
edges; :func:`ccmetrics.evaluate` does it beside listing the prediction's voxels. Pass a
:class:`GroundTruth` instead of an array to evaluate many predictions of one case (degradation
steps, checkpoints) without repeating that work. When many of those predictions lie far outside the
GT (shifted lesions, false positives), :meth:`GroundTruth.region_map` keeps the dense Voronoi
partition (one nearest-label transform of the image, 4 bytes a voxel kept): every later evaluation
with that spacing reads the region of its voxels outside the GT from it instead of searching.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._inputs import as_connectivity, as_label_map, as_sites_mode, as_spacing
from .components import CheckedMask, ComponentCache, Runs, Sites, raster_sites
from .partition import voronoi_partition
from .surface import mask_edges

__all__ = ["GroundTruth", "PreparedSites"]


@dataclass(frozen=True)
class PreparedSites:
    """What :meth:`GroundTruth.prepare` finds.

    Attributes
    ----------
    found : Sites
        The sites, their voxels grouped by site label.
    coords : ndarray of int64, shape (N, ndim)
        Coordinates of ``found.flat_index``.
    own_edge, union_edge : ndarray of bool, shape (N,)
        Edge voxels of each site and of all sites together (:meth:`~ccmetrics.engine.components.Sites.edges`).
    runs : Runs
        The site voxels in raster order, as runs along the last axis.
    raster_label : ndarray of int32
        The site label of each voxel of ``runs``' (raster-order) list.
    flat : ndarray of int64
        That list itself: the sorted flat indices of the GT's voxels, so that labelling the GT at another
        connectivity (detection's volumes, Lesion Dice) needs no second pass over the image.
    """

    found: Sites
    coords: np.ndarray
    own_edge: np.ndarray
    union_edge: np.ndarray
    runs: Runs
    raster_label: np.ndarray
    flat: np.ndarray


class GroundTruth:
    """A validated GT with its sites, their surfaces and components, prepared once for many predictions.

    Parameters
    ----------
    gt : array_like or torch.Tensor
        Binary mask (``sites="components"``) or instance label map (``sites="labels"``), 2D or 3D.
    sites : {"components", "labels"}
    connectivity : int, optional
    prepare : bool
        Find the sites now (default). ``False`` only validates: :meth:`prepare` then does the work
        later, e.g. on another thread beside other work (:func:`ccmetrics.evaluate` does this).

    Examples
    --------
    >>> import numpy as np
    >>> from ccmetrics import evaluate
    >>> gt = np.zeros((20, 20), bool); gt[2:8, 2:8] = True; gt[14:16, 14:16] = True
    >>> prepared = GroundTruth(gt)
    >>> [round(evaluate(gt=prepared, pred=np.roll(gt, k, axis=0), metrics=["dice"]).cc["dice"], 4) for k in (0, 1)]
    [1.0, 0.6667]
    >>> shifted = np.roll(gt, 1, axis=0)
    >>> evaluate(gt=gt, pred=shifted, metrics=["dice"]).cc == evaluate(gt=prepared, pred=shifted, metrics=["dice"]).cc
    True
    >>> GroundTruth(gt, prepare=False).prepared
    False
    """

    def __init__(self, gt: Any, *, sites: str = "components", connectivity: int | None = None, prepare: bool = True):
        self.sites = as_sites_mode(sites)
        self.connectivity = connectivity
        self._flat: np.ndarray | None = None  # the mask's sorted voxels, when making it C-ordered found them
        # validated now; a Fortran-ordered mask is made C-ordered in prepare (beside the prediction's own work)
        self._checked: CheckedMask | None = None
        self._array: np.ndarray | None = None
        if self.sites == "labels":
            self._array = as_label_map(gt, "gt")
            self.shape: tuple[int, ...] = tuple(self._array.shape)
        else:
            self._checked = CheckedMask(gt, "gt")
            self.shape = self._checked.shape
        self._conn = as_connectivity(connectivity, len(self.shape))
        self._prepared: PreparedSites | None = None
        self._components: ComponentCache | None = None
        self._region_maps: dict[tuple[float, ...] | None, np.ndarray] = {}
        if prepare:
            self.prepare()

    @property
    def array(self) -> np.ndarray:
        """The validated GT: a C-contiguous boolean mask (``sites="components"``) or the label map."""
        checked = self._checked
        if self._array is None and checked is not None:
            array, flat = checked.arrays()  # done once, whichever thread asks first
            self._array, self._flat = array, flat
            self._checked = None  # (after the array is set: a thread that finds neither finds the array)
        assert self._array is not None
        return self._array

    def prepare(self) -> GroundTruth:
        """Find the sites, their coordinates and edges (once; later calls return at once)."""
        if self._prepared is None:
            array = self.array  # a Fortran-ordered mask is made C-ordered here, when it is not yet
            flat, raster_label, source, runs = raster_sites(array, self.sites, self._conn, self._flat)
            self._flat = None  # kept as the prepared sites' ``flat``
            found = Sites.grouped(array.shape, flat, raster_label, source)
            coords = found.coords()
            # edges looked up in the GT itself: a face neighbour in the mask is in the same component (any
            # connectivity), so a component's own edges are the mask's edges (one test, as the prediction's:
            # mask_edges); with instance labels, a neighbour is in the same site when it holds the same label value
            if self.sites == "components":
                union_edge = mask_edges(found.flat_index, array.shape, array.ravel())
                own_edge = union_edge.copy()
            else:
                own_edge, union_edge = found.edges(array.ravel(), found.source_label[found.label - 1], coords)
            self._prepared = PreparedSites(found, coords, own_edge, union_edge, runs, raster_label, flat)
        return self

    @property
    def prepared(self) -> bool:
        """True once :meth:`prepare` has run."""
        return self._prepared is not None

    @property
    def geometry(self) -> PreparedSites:
        """The prepared sites (:meth:`prepare` runs first if needed)."""
        return self.prepare()._prepared  # type: ignore[return-value]

    @property
    def found(self) -> Sites:
        """The sites."""
        return self.geometry.found

    def components(self) -> ComponentCache:
        """The GT mask's :class:`~ccmetrics.engine.components.ComponentCache` (shared by PQ, Lesion Dice, detection)."""
        if self._components is None:
            # once prepared, its voxel list and runs: labelling at another connectivity scans the image no more
            flat, runs = (self._prepared.flat, self._prepared.runs) if self._prepared is not None else (None, None)
            if self.sites == "components":
                self._components = ComponentCache(
                    self.array, known=self.found, connectivity=self.connectivity, flat=flat, runs=runs
                )
            else:
                self._components = ComponentCache(self.array != 0, flat=flat, runs=runs)
        return self._components

    def region_map(self, spacing: Any | None = None) -> np.ndarray:
        """The dense Voronoi partition of the image (:func:`ccmetrics.voronoi_partition`), kept for reuse.

        Computed once per spacing (one nearest-label transform of the whole image: about 1 s for
        400x400x300 on 2 cores, 16 bytes a voxel while it runs) and kept (int32, 4 bytes a voxel). Every
        later :func:`ccmetrics.evaluate` of this GT with the same ``spacing`` then reads the region of
        each prediction voxel outside the GT from it, instead of a nearest-site search per evaluation:
        worth it when many predictions of one case put many voxels outside the GT. The values are the
        same either way (the same exact rule: ties to the lowest site label).

        Parameters
        ----------
        spacing : float or sequence of float, optional
            The spacing the evaluations will pass (distances in voxels without one).

        Returns
        -------
        ndarray of int32
            Region label 1..K of every voxel (all zeros without sites); a read-only view of the kept map.

        Examples
        --------
        >>> import numpy as np
        >>> from ccmetrics import evaluate
        >>> gt = np.zeros((1, 12), bool); gt[0, 1] = gt[0, 9:11] = True
        >>> truth = GroundTruth(gt)
        >>> truth.region_map().tolist()
        [[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]]
        >>> pred = np.zeros_like(gt); pred[0, 1:7] = True  # voxels 1-5 in region 1, voxel 6 in region 2
        >>> evaluate(gt=truth, pred=pred, metrics=["dice"]).per_component["dice"].round(4).tolist()
        [0.3333, 0.0]
        >>> plain = evaluate(gt=gt, pred=pred, metrics=["dice"]).per_component
        >>> plain.equals(evaluate(gt=truth, pred=pred, metrics=["dice"]).per_component)
        True
        """
        key = as_spacing(spacing, len(self.shape))
        if key not in self._region_maps:
            partition = np.ascontiguousarray(voronoi_partition(self.found, key))
            # kept in an immutable bytes object: no array on the way to it (``.base``) can be made writeable
            # again, so no caller can change what later evaluations read (one copy of the map, once)
            kept = np.frombuffer(partition.tobytes(), dtype=partition.dtype).reshape(partition.shape)
            del partition
            self._region_maps[key] = kept
        return self._region_maps[key].view()  # read-only for good: its memory belongs to a bytes object

    def kept_region_map(self, spacing: tuple[float, ...] | None) -> np.ndarray | None:
        """The region map :meth:`region_map` kept for this (validated) ``spacing``, or None."""
        return self._region_maps.get(spacing)

    def check_options(self, sites: str, connectivity: int | None) -> GroundTruth:
        """Refuse options other than those it was prepared with (the defaults always pass); return itself."""
        if (sites, connectivity) not in (("components", None), (self.sites, self.connectivity)):
            raise ValueError(
                f"this GroundTruth was prepared with sites={self.sites!r}, connectivity="
                f"{self.connectivity!r}; evaluate got sites={sites!r}, connectivity={connectivity!r}: "
                f"prepare it with the options you want"
            )
        return self
