"""The formats: files on disk to an :class:`Image` (the array and its geometry) and back.

NIfTI, MHA/MHD, NRRD (:mod:`~ccmetrics.formats.io`, size checks before any allocation), DICOM SEG and image
series (:mod:`~ccmetrics.formats.dicom`), putting two images on one grid in patient space
(:mod:`~ccmetrics.formats.grids`), nnU-Net's summary (:mod:`~ccmetrics.formats.nnunet`), models' probability maps
(:mod:`~ccmetrics.formats.probabilities`, nnU-Net's `.npz` included), and the types every
reader returns (:mod:`~ccmetrics.formats.image`). It uses the metrics layer only for the classes of label maps.
"""

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
    "nnunet_summary": "nnunet",
}

__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS, ("dicom", "grids", "image", "io", "nnunet", "probabilities"))
