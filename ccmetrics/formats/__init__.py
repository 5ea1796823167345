"""The formats: files on disk to an :class:`Image` (the array and its geometry) and back.

NIfTI, MHA/MHD, NRRD (:mod:`~ccmetrics.formats.io`, size checks before any allocation), DICOM SEG and image
series (:mod:`~ccmetrics.formats.dicom`), putting two images on one grid in patient space
(:mod:`~ccmetrics.formats.grids`), nnU-Net's ``dataset.json`` (:mod:`~ccmetrics.formats.nnunet`), models'
probability maps (:mod:`~ccmetrics.formats.probabilities`, nnU-Net's `.npz` included), the classes of a label map
(:mod:`~ccmetrics.formats.classes`: labels, regions, the ignore label), and the types every reader returns
(:mod:`~ccmetrics.formats.image`). The bottom layer: it imports no other layer of ccmetrics, only the package root's
foundations (a memory limit's error from ``ccmetrics._memory``).
"""

import importlib
from typing import Any

from .._deprecation import deprecated
from .._lazy import attach

#: public name -> the module of this layer that defines it (loaded on first use)
_EXPORTS = {
    "ProbabilityError": "probabilities",
    "probability_file": "probabilities",
    "read_probabilities": "probabilities",
    "DEFAULT_FRACTIONAL_THRESHOLD": "dicom",
    "SegImage": "dicom",
    "find_seg_file": "dicom",
    "holds_dicom": "dicom",
    "is_dicom_path": "dicom",
    "read_seg": "dicom",
    "read_seg_header": "dicom",
    "read_series": "dicom",
    "segment_classes": "dicom",
    "series_grid": "dicom",
    "align_pair": "grids",
    "on_grid": "grids",
    "union_grid": "grids",
    "Image": "image",
    "ImageHeader": "image",
    "ImageReadError": "image",
    "missing_file_message": "image",
    "rounded": "image",
    "visible_files": "image",
    "IMAGE_EXTENSIONS": "io",
    "check_same_geometry": "io",
    "image_id": "io",
    "is_image_file": "io",
    "load_image": "io",
    "read_header": "io",
    "save_image": "io",
    "DatasetJson": "nnunet",
    "read_dataset_json": "nnunet",
    "ClassSpec": "classes",
    "parse_classes": "classes",
    "remove_ignored": "classes",
}

_getattr, __dir__, __all__ = attach(
    __name__, _EXPORTS, ("classes", "dicom", "grids", "image", "io", "nnunet", "probabilities")
)


def __getattr__(name: str) -> Any:
    """A public name, loaded on first use; ``nnunet_summary`` of the former layout with a ``DeprecationWarning``."""
    if name == "nnunet_summary":  # the summary writer moved up to the results (imported by name: see formats.nnunet)
        return deprecated(
            __name__,
            name,
            {name: lambda: importlib.import_module("ccmetrics.results.nnunet").nnunet_summary},
            "use ccmetrics.results.nnunet.nnunet_summary; the former path works until ccmetrics 0.3",
        )
    return _getattr(name)
