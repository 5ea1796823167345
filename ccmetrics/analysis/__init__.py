"""The analysis: tables to statistics and figures.

The statistics of a data set's result (:mod:`~ccmetrics.analysis.summaries`: its summary, per subgroup, of its
empty-GT cases, its calibration and size bins; :class:`~ccmetrics.results.DatasetResult`'s methods call them),
bootstrap intervals and paired comparisons of methods (:mod:`~ccmetrics.analysis.stats`), the figures of a
result folder (:mod:`~ccmetrics.analysis.plots`) and of its detection curves
(:mod:`~ccmetrics.analysis.detection_plots`), lesion-size bins (:mod:`~ccmetrics.analysis.sizes`) and subgroups
from a metadata table (:mod:`~ccmetrics.analysis.subgroups`), and the signs that a run's GT and predictions were
swapped (:mod:`~ccmetrics.analysis.swap`). It reads the tidy tables of :mod:`ccmetrics.schema`;
it knows nothing of how they were made.
"""

from .._lazy import attach

#: public name -> the module of this layer that defines it (loaded on first use)
_EXPORTS = {
    "plot_froc": "detection_plots",
    "plot_pr": "detection_plots",
    "plot_roc": "detection_plots",
    "write_detection_plots": "detection_plots",
    "plot_by_group": "plots",
    "plot_case_distribution": "plots",
    "plot_comparison": "plots",
    "plot_detection_by_size": "plots",
    "plot_metric_vs_volume": "plots",
    "plot_standard_vs_cc": "plots",
    "write_plots": "plots",
    "write_result_plots": "plots",
    "DEFAULT_SIZE_EDGES_ML": "sizes",
    "DEFAULT_SIZE_EDGES_VOXELS": "sizes",
    "bin_labels": "sizes",
    "lesion_volumes": "sizes",
    "parse_size_bins": "sizes",
    "quantification_table": "quantification",
    "size_table": "sizes",
    "swap_signs": "swap",
    "Comparison": "stats",
    "FriedmanNemenyi": "stats",
    "NO_DIFFERENCE": "stats",
    "bootstrap_ci": "stats",
    "bootstrap_ci_pooled": "stats",
    "compare": "stats",
    "friedman_nemenyi": "stats",
    "calibration_summary": "summaries",
    "empty_gt_summary": "summaries",
    "group_summary": "summaries",
    "quantification_summary": "summaries",
    "size_summary": "summaries",
    "summary": "summaries",
    "EMPTY_VALUE": "subgroups",
    "MISSING_GROUP": "subgroups",
    "case_groups": "subgroups",
    "read_metadata": "subgroups",
}

__getattr__, __dir__, __all__ = attach(
    __name__,
    _EXPORTS,
    ("detection_plots", "plots", "quantification", "sizes", "stats", "subgroups", "summaries", "swap"),
)
