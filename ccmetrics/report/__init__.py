"""A visual per-lesion report of a ``ccmetrics evaluate`` output folder, as one self-contained HTML page.

``ccmetrics report RESULT_DIR --out report.html`` or :func:`write_report`. The page shows the
data-set summary (standard against CC metrics with confidence intervals, the evaluation's plots,
evaluated / flagged / failed cases), the cases ranked by the difference between a standard metric
and its CC variant and by their worst CC score, a filterable table of every lesion and false
positive, and per case every GT lesion and false positive with a thumbnail (axial, coronal and
sagittal slices through its centroid, GT and prediction contours, Voronoi region borders), on an
empty background or, with ``--images IMAGE_DIR`` (``write_report(..., images=...)``), on the scan: one
row of panels per channel (nnU-Net's ``CASE_0000``, ``CASE_0001``, ...: CT, PET), each in its own grey
scale, and each channel only where it lies on the GT's voxel grid (otherwise a note says why: a PET on another grid
is left out, the CT beside it drawn). Under each thumbnail, where the component lies: its centroid in patient
coordinates (RAS+ mm, as ``per_prediction.csv``'s ``centroid_x_mm`` ...) and the voxel its slices go through, 0-based
(numpy/nibabel, 3D Slicer) and 1-based (ITK-SNAP). Volumes are in ml throughout. A folder evaluated with
probability maps (``--probabilities``) gets a section of the lesion-detection curves (AP, AUROC, PI-CAI score,
CPM, the sensitivity at 1/8 to 8 false positives per case, the calibration, the best thresholds and their
figures, as ``summary.json`` holds them), and each lesion in the finder the confidence of the candidate matched
to it, or *missed*, beside the false-positive candidates with theirs.

Modules, in the order the data flows: :mod:`~ccmetrics.report.data` (tables, ranking, components
of the images, the scans' channels), :mod:`~ccmetrics.report.geometry` (crop boxes, contour lines,
the scan's slices), :mod:`~ccmetrics.report.thumbnails` (drawing, the grey-scale window),
:mod:`~ccmetrics.report.detection` (the probability maps' section and candidates), :mod:`~ccmetrics.report.model`
(the page's model: everything it shows as plain data), :mod:`~ccmetrics.report.render` (the Jinja2 template in
``templates/`` filled with the model), :mod:`~ccmetrics.report.page` (:func:`write_report`: both, into one file).
Needs Jinja2 and matplotlib (imported when a report is written).
"""

from .model import build_model
from .page import DEFAULT_MAX_CASES, ReportInfo, write_report
from .render import render_html

__all__ = ["DEFAULT_MAX_CASES", "ReportInfo", "build_model", "render_html", "write_report"]
