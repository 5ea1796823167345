"""A metric of one's own, for ``ccmetrics evaluate --plugin examples/lab_metrics.py --metrics dice,volsim``.

Importing this file registers ``volsim`` (volume similarity): ``1 - |V_pred - V_gt| / (V_pred + V_gt)`` of the
two masks of each Voronoi region, and of the whole image for the global value. It then appears in every table,
plot, summary and report, like the built-in metrics (``docs/metrics.md``).
"""

from ccmetrics import register_metric


def volume_similarity(pred, gt, spacing):
    """1 - |V_pred - V_gt| / (V_pred + V_gt) of two boolean masks; 1 when both are empty."""
    total = float(pred.sum()) + float(gt.sum())
    return 1.0 - abs(float(pred.sum()) - float(gt.sum())) / total if total else 1.0


register_metric("volsim", volume_similarity, display="Volume similarity", description="volume similarity")
