"""The engine: arrays to geometry, exactly and in time that grows with the foreground.

Connected components and their run-length voxel lists (:mod:`~ccmetrics.engine.components`), the generalized
Voronoi partition (:mod:`~ccmetrics.engine.partition`: nearest site, exact ties to the lowest label), the
prepared ground truth (:mod:`~ccmetrics.engine.ground_truth`), every prediction voxel's region and the edge
distances of a case (:mod:`~ccmetrics.engine.geometry`, :mod:`~ccmetrics.engine.surface`), the k-d tree and
nearest-label kernels, the engine configuration (:mod:`~ccmetrics.engine.config`: which path, never which
value), torch's float32 quantile emulated (:mod:`~ccmetrics.engine.torch_emulation`), and the memory model
that the campaigns check before they allocate (:mod:`~ccmetrics.engine.memory`). It imports nothing of the
layers above it (metrics, formats, analysis, campaign, report, the command line).

The layers above use the public modules and names only: the k-d tree (:mod:`~ccmetrics.engine.kdtree`), the
order statistics of a lesion's distances (:mod:`~ccmetrics.engine.order_statistics`), the worker threads of an
evaluation (:mod:`~ccmetrics.engine.threads`), when a compiled kernel pays for its compile
(:mod:`~ccmetrics.engine.kernels`), the memory limit handed down to the engine
(:func:`~ccmetrics.engine.memory.memory_guard`, :class:`~ccmetrics.engine.memory.MemoryLimitError`) and
``warm_up()`` (compile every numba kernel into numba's cache: ``ccmetrics warm-up``). The modules whose names
start with ``_`` (the kernels, their launcher, the guard's implementation) are the engine's own.

What users import from the package itself (``__all__``, ``PUBLIC``): the prepared ground truth, the Voronoi
partition and its sites' surfaces, the components, the engine configuration, ``warm_up``, and the memory limit
(``memory_guard``, ``MemoryLimitError``, ``parse_memory``, ``estimate_case_bytes``). Every other name of the
engine's public modules (the memory model's factors, the surface kernels, torch's quantile, ...) is imported from
its module (``from ccmetrics.engine.memory import BYTES_PER_RUN``); ``ccmetrics.engine.<name>`` still gives those
that the package listed before, unchanged.
"""

from .._lazy import attach

#: public name -> the module of this layer that defines it (loaded on first use)
_EXPORTS = {
    "ComponentCache": "components",
    "Runs": "components",
    "Sites": "components",
    "component_labels": "components",
    "coordinates": "components",
    "find_sites": "components",
    "label_components": "components",
    "run_components": "components",
    "EngineConfig": "config",
    "current": "config",
    "engine_config": "config",
    "thread_count": "config",
    "CaseRegions": "geometry",
    "CaseSurfaces": "geometry",
    "PredictionVoxels": "geometry",
    "GroundTruth": "ground_truth",
    "PreparedSites": "ground_truth",
    "ASSUMED_FOREGROUND": "memory",
    "BYTES_PER_DILATED_VOXEL": "memory",
    "BYTES_PER_FOREGROUND_VOXEL": "memory",
    "BYTES_PER_GT_COMPONENT": "memory",
    "BYTES_PER_IMAGE_VOXEL": "memory",
    "BYTES_PER_PRED_COMPONENT": "memory",
    "BYTES_PER_RUN": "memory",
    "BYTES_PER_UNION_VOXEL": "memory",
    "BYTES_PER_VOXEL": "memory",
    "ComponentCounts": "memory",
    "DEFAULT_MEMORY_FRACTION": "memory",
    "DILATION_IN_FOREGROUND": "memory",
    "FIXED_BYTES": "memory",
    "LESION_DILATION_ITERATIONS": "memory",
    "LESION_DILATION_VOXELS": "memory",
    "available_memory_bytes": "memory",
    "component_bytes": "memory",
    "dilated_voxels": "memory",
    "estimate_case_bytes": "memory",
    "format_bytes": "memory",
    "over_limit": "memory",
    "parse_memory": "memory",
    "MemoryLimitError": "memory",
    "memory_guard": "memory",
    "assign_nearest": "partition",
    "assign_nearest_flat": "partition",
    "site_surfaces": "partition",
    "voronoi_partition": "partition",
    "GroupedDistances": "surface",
    "SURFACE_REDUCTIONS": "surface",
    "SurfaceReduction": "surface",
    "directed_distances": "surface",
    "empty_rule": "surface",
    "face_edges": "surface",
    "grouped_directed_distances": "surface",
    "grouped_surface_scores": "surface",
    "mask_edges": "surface",
    "nearest_points": "surface",
    "own_face_edges": "surface",
    "physical": "surface",
    "surface_scores": "surface",
    "lerp_uses_fma": "torch_emulation",
    "quantile_rank": "torch_emulation",
    "torch_lerp": "torch_emulation",
    "torch_quantile": "torch_emulation",
    "warm_up": "_launch",
}

#: what users import from ``ccmetrics.engine`` (``__all__``); the other names of ``_EXPORTS`` stay readable here
PUBLIC = (
    "GroundTruth",
    "voronoi_partition",
    "site_surfaces",
    "label_components",
    "find_sites",
    "Sites",
    "EngineConfig",
    "engine_config",
    "current",
    "warm_up",
    "MemoryLimitError",
    "memory_guard",
    "parse_memory",
    "estimate_case_bytes",
)

__getattr__, __dir__, _everything = attach(
    __name__,
    _EXPORTS,
    ("components", "config", "geometry", "ground_truth", "memory", "partition", "surface", "torch_emulation"),
)
__all__ = list(PUBLIC)
