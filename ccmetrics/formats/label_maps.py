"""Label maps for other viewers: a uint8 label map written as NIfTI on a reference grid (or as a DICOM SEG of the
image series it was drawn on), and its colour tables.

A viewer shows a label map in colour from a table that names each label: ITK-SNAP reads its *label description*
file (File > Segmentation > Import label descriptions; one line a label, ``IDX R G B A VIS MSH "LABEL"``, the
opacity ``A`` from 0 to 1), 3D Slicer a *colour table* (``.ctbl``, loaded as a colour node: one line a label,
``index name R G B A``, components 0..255, the name one word). :func:`write_label_map` writes the map with the
reference image's geometry (:func:`~ccmetrics.formats.io.save_image`: its affine as qform and sform), never seen
half-written (written to a temporary file, then renamed); :func:`write_label_map_seg` writes it as a DICOM SEG
(highdicom, one segment a label, OHIF and 3D Slicer read it) on the images of its source series;
:func:`itksnap_label_description` and :func:`slicer_color_table` give the two tables' text for a list of
:class:`Label`.

Cost: one compressed write of the map (about a byte a voxel before compression); the tables are a few lines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._files import atomic_write
from .image import Image

__all__ = [
    "Label",
    "itksnap_label_description",
    "seg_source_series",
    "slicer_color_table",
    "write_colour_tables",
    "write_label_map",
    "write_label_map_seg",
]


@dataclass(frozen=True)
class Label:
    """One label of a label map: its value, its name (one word: 3D Slicer's tables take no space in a name), its
    colour (red, green, blue, 0..255) and what it means (ITK-SNAP shows it as the label's description).

    Examples
    --------
    >>> Label(1, "found_lesion", (0, 158, 115), "GT lesion detected").name
    'found_lesion'
    """

    value: int
    name: str
    rgb: tuple[int, int, int]
    description: str

    def __post_init__(self) -> None:
        if not 0 < int(self.value) < 256:
            raise ValueError(f"a label of a uint8 map is 1..255 (0 is the background), got {self.value}")
        if not self.name or any(c.isspace() for c in self.name):
            raise ValueError(f"a label's name is one word (3D Slicer's tables split at spaces), got {self.name!r}")
        if len(self.rgb) != 3 or not all(0 <= int(v) <= 255 for v in self.rgb):
            raise ValueError(f"a label's colour is three values 0..255 (red, green, blue), got {self.rgb!r}")
        if '"' in self.description:
            raise ValueError(f"a label's description holds no '\"' (ITK-SNAP quotes it), got {self.description!r}")


def itksnap_label_description(labels: Sequence[Label]) -> str:
    """ITK-SNAP's label description file for ``labels``: the background ``0`` (clear), then one line a label,
    opaque, visible in the slices and in 3D.

    Examples
    --------
    >>> text = itksnap_label_description([Label(2, "missed_lesion", (230, 159, 0), "GT lesion missed")])
    >>> for line in text.splitlines()[-2:]:
    ...     print(line)
        0     0    0    0        0  0  0    "Clear Label"
        2   230  159    0        1  1  1    "GT lesion missed"
    """
    lines = [
        "################################################",
        "# ITK-SnAP Label Description File",
        "# File format:",
        "# IDX   -R-  -G-  -B-  -A--  VIS MSH  LABEL",
        "# Fields:",
        "#    IDX:   Zero-based index",
        "#    -R-:   Red color component (0..255)",
        "#    -G-:   Green color component (0..255)",
        "#    -B-:   Blue color component (0..255)",
        "#    -A-:   Label transparency (0.00 .. 1.00)",
        "#    VIS:   Label visibility (0 or 1)",
        "#    MSH:   Label mesh visibility (0 or 1)",
        "#  LABEL:   Label description",
        "################################################",
        _itksnap_line(0, (0, 0, 0), 0, "Clear Label"),
    ]
    lines += [_itksnap_line(int(label.value), label.rgb, 1, label.description) for label in labels]
    return "\n".join(lines) + "\n"


def _itksnap_line(value: int, rgb: Sequence[int], shown: int, text: str) -> str:
    r, g, b = (int(v) for v in rgb)
    return f'{value:5d} {r:5d} {g:4d} {b:4d} {shown:8d}  {shown}  {shown}    "{text}"'


def slicer_color_table(labels: Sequence[Label]) -> str:
    """3D Slicer's colour table (``.ctbl``) for ``labels``: ``index name R G B A`` a line, the background ``0``
    transparent, every label opaque (A = 255).

    Examples
    --------
    >>> print(slicer_color_table([Label(1, "found_lesion", (0, 158, 115), "GT lesion detected")]), end="")
    # Color table file written by ccmetrics
    # 2 values
    0 background 0 0 0 0
    1 found_lesion 0 158 115 255
    """
    lines = ["# Color table file written by ccmetrics", f"# {len(labels) + 1} values", "0 background 0 0 0 0"]
    lines += [f"{int(label.value)} {label.name} {' '.join(str(int(v)) for v in label.rgb)} 255" for label in labels]
    return "\n".join(lines) + "\n"


def write_colour_tables(folder: str | os.PathLike, labels: Sequence[Label], stem: str) -> list[Path]:
    """Write ``folder/stem.txt`` (ITK-SNAP's label description) and ``folder/stem.ctbl`` (3D Slicer's colour table),
    each atomically; returns their paths.

    Examples
    --------
    >>> import tempfile
    >>> paths = write_colour_tables(tempfile.mkdtemp(), [Label(4, "false_positive", (204, 121, 167), "FP")], "labels")
    >>> [p.name for p in paths], paths[1].read_text().splitlines()[-1]
    (['labels.txt', 'labels.ctbl'], '4 false_positive 204 121 167 255')
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, text in ((".txt", itksnap_label_description(labels)), (".ctbl", slicer_color_table(labels))):
        written.append(atomic_write(folder / f"{stem}{suffix}", _text_writer(text)))
    return written


def _text_writer(text: str) -> Callable[[Path], Any]:
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    return write


def write_label_map(path: str | os.PathLike, array: np.ndarray, like: Image) -> Path:
    """Write a uint8 label map as NIfTI (``.nii.gz`` or ``.nii``) on ``like``'s grid: its shape, and its affine as
    qform and sform (:func:`~ccmetrics.formats.io.save_image`; a 2D image in the plane its file placed it in). The
    file is replaced atomically (written beside it under a temporary name, fsynced, renamed); its folder is
    created. An ``OSError`` (a full disk, no permission) is raised as an ``OutputWriteError`` (an ``OSError``),
    which names the file.

    Raises
    ------
    ValueError
        Another extension than NIfTI's, a map of another shape than ``like``'s, or values above 255.

    Examples
    --------
    >>> import tempfile, nibabel
    >>> like = Image(np.zeros((3, 2, 2), np.uint8), (0.5, 1.0, 3.0), np.diag([0.5, 1.0, 3.0, 1.0]))
    >>> labels = np.zeros((3, 2, 2), np.uint8); labels[1, 0, 0] = 4
    >>> path = write_label_map(Path(tempfile.mkdtemp()) / "maps" / "a.nii.gz", labels, like)
    >>> back = nibabel.load(path)
    >>> back.get_data_dtype(), int(np.asarray(back.dataobj)[1, 0, 0]), np.diag(back.affine).tolist()
    (dtype('uint8'), 4, [0.5, 1.0, 3.0, 1.0])
    """
    from .io import save_image

    path = Path(path)
    if not path.name.endswith((".nii.gz", ".nii")):
        raise ValueError(f"a label map is written as NIfTI: name it .nii.gz or .nii, got {path.name!r}")
    array = np.asarray(array)
    if array.shape != like.array.shape:
        raise ValueError(f"the label map's shape {array.shape} differs from its reference image's {like.array.shape}")
    if array.dtype != np.uint8:
        if array.size and (array.min() < 0 or array.max() > 255):
            raise ValueError("a label map holds values 0..255 (written as uint8)")
        array = array.astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    extension = ".nii.gz" if path.name.endswith(".nii.gz") else ".nii"
    return atomic_write(path, lambda tmp: save_image(tmp, array, like=like), extension)  # NIfTI by its name


def write_label_map_seg(
    path: str | os.PathLike,
    array: np.ndarray,
    like: Image,
    source_folder: str | os.PathLike,
    series_uid: str,
    labels: Sequence[Label],
    *,
    software_version: str = "",
) -> Path:
    """Write a uint8 label map on ``like``'s grid as a DICOM SEG of the image series it was drawn on (highdicom).

    Each label of ``labels`` is one segment (its number the label's value, its label the label's name, its
    recommended display colour the label's colour); every source image is one frame a segment (empty frames kept),
    so the SEG covers the whole series. The series is ``series_uid`` among the files under ``source_folder`` (e.g.
    ``--reference-images``; a SEG's ``SegImage.series_uid``), read without their pixels.

    Algorithm: each source image's pixels are placed on ``like``'s grid through their patient coordinates (its
    ImagePositionPatient, ImageOrientationPatient and PixelSpacing; RAS = LPS with x and y negated) and the frame
    gathers the map's label there, so any orientation and slice order of the series is followed. Cost: one header
    read of each file under the folder, one gather of the map (O(voxels)), highdicom's encoding (1 bit a voxel and
    segment).

    Raises
    ------
    ImportError
        Without highdicom (``pip install highdicom pydicom``, or ``pip install -e ".[dicom]"`` in a checkout).
    ValueError
        No image of that series in the folder, or a source pixel that is no voxel of ``like``'s grid (the map is not
        on the series' grid).
    """
    from .dicom import _pydicom

    pydicom = _pydicom()
    try:
        import highdicom as hd
        from pydicom.sr.codedict import codes
    except ImportError:
        raise ImportError(
            'writing a DICOM SEG needs highdicom: pip install highdicom pydicom, or pip install -e ".[dicom]" in a '
            "checkout of ccmetrics"
        ) from None
    from .image import visible_files

    array = np.asarray(array)
    if array.shape != like.array.shape or array.ndim != 3:
        raise ValueError(f"the label map's shape {array.shape} differs from its reference image's {like.array.shape}")
    sources, seen = [], set()
    for name in visible_files(source_folder):
        try:
            ds = pydicom.dcmread(name, stop_before_pixels=True)
        except Exception:  # not DICOM: other files may lie beside the series
            continue
        if str(ds.get("SeriesInstanceUID", "")) != series_uid or "ImagePositionPatient" not in ds:
            continue
        if str(ds.SOPInstanceUID) not in seen:
            seen.add(str(ds.SOPInstanceUID))
            sources.append(ds)
    if not sources:
        raise ValueError(f"no image of series {series_uid} under {os.fspath(source_folder)!r}: give its folder")
    inverse = np.linalg.inv(np.asarray(like.affine, dtype=float))
    frames = np.stack([_frame_on_grid(ds, array, inverse) for ds in sources])  # (frames, rows, columns)
    pixels = np.stack([frames == label.value for label in labels], axis=-1).astype(np.uint8)
    descriptions = [
        hd.seg.SegmentDescription(
            segment_number=i + 1,
            segment_label=label.name,
            segmented_property_category=codes.SCT.MorphologicallyAbnormalStructure,
            segmented_property_type=codes.SCT.Lesion,
            algorithm_type=hd.seg.SegmentAlgorithmTypeValues.AUTOMATIC,
            algorithm_identification=hd.AlgorithmIdentificationSequence(
                name="ccmetrics", version=software_version or "0", family=codes.DCM.ArtificialIntelligence
            ),
            display_color=hd.color.CIELabColor.from_rgb(*(int(v) for v in label.rgb))
            if hasattr(hd.color.CIELabColor, "from_rgb")
            else None,
        )
        for i, label in enumerate(labels)
    ]
    if any(int(label.value) != i + 1 for i, label in enumerate(labels)):
        raise ValueError("a DICOM SEG numbers its segments 1..n: give the labels 1..n in order")
    seg = hd.seg.Segmentation(
        source_images=sources,
        pixel_array=pixels,
        segmentation_type=hd.seg.SegmentationTypeValues.BINARY,
        segment_descriptions=descriptions,
        series_instance_uid=hd.UID(),
        series_number=900,
        sop_instance_uid=hd.UID(),
        instance_number=1,
        manufacturer="ccmetrics",
        manufacturer_model_name="ccmetrics",
        software_versions=software_version or "0",
        device_serial_number="0",
        omit_empty_frames=False,
        content_label="OUTCOMES",
        content_description="lesion outcomes: found, missed, TP and FP prediction",
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda tmp: seg.save_as(tmp))


def _frame_on_grid(ds: Any, array: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """One source image's frame (rows, columns) of the map: each pixel's voxel on the map's grid, by its patient
    coordinates; a pixel off the grid (or between voxels) raises ``ValueError``."""
    rows, columns = int(ds.Rows), int(ds.Columns)
    orientation = np.array([float(v) for v in ds.ImageOrientationPatient])
    row_spacing, column_spacing = (float(v) for v in ds.PixelSpacing)  # between rows, between columns
    r, c = np.meshgrid(np.arange(rows), np.arange(columns), indexing="ij")
    lps = (
        np.array([float(v) for v in ds.ImagePositionPatient])[:, None, None]
        + orientation[:3, None, None] * column_spacing * c
        + orientation[3:, None, None] * row_spacing * r
    )
    ras = lps * np.array([-1.0, -1.0, 1.0])[:, None, None]
    voxel = np.tensordot(inverse[:3, :3], ras, axes=1) + inverse[:3, 3][:, None, None]
    index = np.rint(voxel).astype(np.int64)
    shape = np.array(array.shape)[:, None, None]
    if np.abs(voxel - index).max(initial=0.0) > 1e-3 or (index < 0).any() or (index >= shape).any():
        raise ValueError(
            f"image {ds.SOPInstanceUID} of the series does not lie on the label map's grid: a DICOM SEG is written "
            "on its source series' grid"
        )
    return array[index[0], index[1], index[2]]


def seg_source_series(path: Any) -> str | None:
    """The SeriesInstanceUID of the image series a DICOM SEG (a file, or a folder holding one) was drawn on (its
    ReferencedSeriesSequence), or None: no DICOM SEG, or one that names no single series. Reads its header only.

    Examples
    --------
    >>> seg_source_series("case_001.nii.gz") is None
    True
    """
    from .dicom import _dataset, _referenced, find_seg_file, is_dicom_path

    if path is None or not isinstance(path, (str, os.PathLike)) or not is_dicom_path(path):
        return None
    try:
        ds = _dataset(find_seg_file(path), pixels=False, upto=_REFERENCES_END)
    except (OSError, ValueError):
        return None
    return _referenced(ds)[0]


#: ReferencedSeriesSequence: the last tag :func:`seg_source_series` reads
_REFERENCES_END = 0x00081115
