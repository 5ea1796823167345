"""Backwards-compatible home of instance matching and Panoptic Quality.

The code now lives in :mod:`ccmetrics.matching` (class-agnostic matching,
shared by PQ, the nuclei metrics and the lesion-level scores) and
:mod:`ccmetrics.panoptic` (Panoptic Quality); this module re-exports their
public names so that ``from ccmetrics.instances import ...`` keeps working.
"""

from .matching import (  # noqa: F401
    MATCHING_RULES,
    Matching,
    Overlaps,
    check_matching_rule,
    choose_pairs,
    instance_overlaps,
    match_instances,
    match_overlaps,
    match_sites,
    site_overlaps,
)
from .panoptic import (  # noqa: F401
    AGGREGATIONS,
    MultiPQResult,
    PQResult,
    class_counts,
    instance_classes,
    multiclass_pq,
    panoptic_quality,
    pq_from_counts,
)

__all__ = ["MATCHING_RULES", "Matching", "Overlaps", "check_matching_rule", "choose_pairs", "instance_overlaps",
           "match_instances", "match_overlaps", "match_sites", "site_overlaps", "AGGREGATIONS", "MultiPQResult",
           "PQResult", "class_counts", "instance_classes", "multiclass_pq", "panoptic_quality", "pq_from_counts"]
