"""DICOM SEG segmentations read as label maps, with their geometry in ccmetrics' axis order.

:func:`read_seg` reads a DICOM Segmentation (a ``.dcm`` file, or a folder holding exactly one SEG
among other files) with highdicom and returns a :class:`SegImage`: an :class:`ccmetrics.formats.image.Image`
whose array is a label map (each voxel holds the number of the segment it belongs to, 0 outside
every segment) and whose geometry comes from the SEG's own plane positions, orientation and spacing.
:func:`ccmetrics.formats.io.load_image` calls it for such paths, so a SEG can stand wherever a NIfTI can.

Axes, as :mod:`ccmetrics.formats.io` documents them for every format: ``array[i, j, k]`` with ``i`` along a
frame's columns (the direction of DICOM's first ImageOrientationPatient vector), ``j`` along its rows
and ``k`` along the stack of frames, and ``affine`` mapping ``(i, j, k, 1)`` to RAS+ world mm (DICOM's
LPS with x and y negated). That is the order in which SimpleITK (and so ``dcm2niix``-like converters)
read the source CT, up to the direction of ``k``; :mod:`ccmetrics.formats.grids` turns one into the other.

* **Segments are classes**: segment number ``n`` becomes label ``n``; ``SegImage.segments`` maps the
  numbers to the segments' labels (:func:`segment_classes` makes classes of them). Overlapping segments
  cannot be one label map and are refused, naming the segments.
* **Binary and fractional** SEGs: a fractional segment holds the voxels whose fraction is at least
  ``fractional_threshold`` (0.5 by default; the largest stored fraction counts as 1).
* **Omitted frames**: writers may leave out empty frames (highdicom does by default). The array then
  spans only the planes from the first to the last frame the SEG holds; ``SegImage.complete``
  says whether that is the whole source series (the planes equal the source images the SEG lists).
  An incomplete SEG is placed on a full grid before it is compared (:func:`ccmetrics.formats.grids.align_pair`):
  the other file's, else the source series' (:func:`series_grid`), else the span of both SEGs.

Cost: highdicom decodes each stored frame once; the label map is one array of the volume's size
(uint8 up to 255 segments) plus one segment's volume at a time. Needs the ``dicom`` extra (highdicom, pydicom:
``pip install highdicom pydicom``, or ``pip install -e ".[dicom]"`` in a checkout; Python >= 3.10), imported on
first use.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .image import Image, ImageHeader, ImageReadError, missing_file_message, rounded, visible_files

__all__ = [
    "DEFAULT_FRACTIONAL_THRESHOLD",
    "SegImage",
    "check_union_memory",
    "find_seg_file",
    "holds_dicom",
    "is_dicom_path",
    "read_seg",
    "read_seg_header",
    "read_series",
    "segment_classes",
    "series_grid",
]

#: a fractional segment holds the voxels whose fraction (0 to 1) is at least this
DEFAULT_FRACTIONAL_THRESHOLD = 0.5
_SLICE_RTOL = 0.02  # slice positions may deviate by 2 % of the step (scanners round them; SimpleITK reads such)
_NOT_IMAGES = ("SEG", "RTSTRUCT", "SR", "KO", "PR", "REG", "RTPLAN", "RTDOSE")  # modalities that are no scan
_SEG_SOP_CLASSES = ("1.2.840.10008.5.1.4.1.1.66.4", "1.2.840.10008.5.1.4.1.1.66.7")  # Segmentation, Label Map SEG
_LPS_TO_RAS = np.diag([-1.0, -1.0, 1.0, 1.0])
_INSTALL = (
    "reading DICOM needs highdicom and pydicom (the dicom extra, Python >= 3.10): pip install highdicom pydicom, "
    'or pip install -e ".[dicom]" in a checkout of ccmetrics'
)


@dataclass(frozen=True, eq=False, repr=False)
class SegImage(Image):
    """A DICOM SEG as a label map (:func:`read_seg`): an :class:`~ccmetrics.formats.image.Image` and what the SEG says.

    Attributes
    ----------
    segments : dict of int to str
        Segment number (the label in ``array``) to the segment's label.
    complete : bool
        True when the array's planes are all the source images the SEG lists; False when the writer
        left out empty frames at either end (then the array spans the frames the SEG holds).
    series_uid : str or None
        The SeriesInstanceUID of the source series the SEG refers to.
    frame_of_reference : str or None
        The SEG's FrameOfReferenceUID.
    step_known : bool
        Whether the distance between planes is known: stated (SpacingBetweenSlices) or read from a
        complete stack. Without it, highdicom takes the smallest gap between the frames the SEG holds,
        which is a multiple of the true step when frames are missing: such a SEG is placed frame by frame
        (by position) on a full grid, and refused without one.
    """

    segments: dict[int, str] = field(default_factory=dict)
    complete: bool = True
    series_uid: str | None = None
    frame_of_reference: str | None = None
    step_known: bool = True

    def __repr__(self) -> str:
        return (
            f"SegImage(shape={self.array.shape}, spacing={rounded(self.spacing)}, segments={self.segments}, "
            f"complete={self.complete}, path={self.path!r})"
        )


def _pydicom() -> Any:
    try:
        import pydicom
    except ImportError:
        raise ImportError(_INSTALL) from None
    return pydicom


def is_dicom_path(path: Any) -> bool:
    """True for a path ending in ``.dcm`` (any case) or an existing folder: what :func:`read_seg` takes.

    >>> is_dicom_path("pred/case_001.dcm"), is_dicom_path("pred/case_001.nii.gz")
    (True, False)
    """
    if not isinstance(path, (str, os.PathLike)):
        return False
    return os.fspath(path).lower().endswith(".dcm") or os.path.isdir(path)


def holds_dicom(folder: Any, look_at: int = 64) -> bool:
    """Whether a folder holds DICOM files (searched recursively): a name ending in ``.dcm``, or the ``DICM``
    mark at byte 128 of one of the first ``look_at`` files (exports from PACS often have no extension).

    >>> import tempfile
    >>> holds_dicom(tempfile.mkdtemp())
    False
    """
    for n, path in enumerate(visible_files(folder)):
        if path.name.lower().endswith(".dcm"):
            return True
        if n < look_at:
            try:
                with open(path, "rb") as f:
                    if f.read(132)[128:] == b"DICM":
                        return True
            except OSError:
                continue
    return False


def _is_seg(path: Path) -> bool:
    pydicom = _pydicom()
    try:
        ds = pydicom.dcmread(path, stop_before_pixels=True, specific_tags=["SOPClassUID", "Modality"])
    except Exception:  # not DICOM at all
        return False
    return str(ds.get("SOPClassUID", "")) in _SEG_SOP_CLASSES or ds.get("Modality", "") == "SEG"


def find_seg_file(path: Any) -> Path:
    """The SEG file itself, or the one SEG file in a folder (searched recursively).

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``, or a folder without a DICOM SEG.
    ValueError
        A folder with several SEG files (each is a segmentation of its own: point at one).
    """
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise FileNotFoundError(missing_file_message(path, "DICOM SEG"))
    found = [p for p in visible_files(path) if _is_seg(p)]
    if not found:
        raise FileNotFoundError(f"no DICOM SEG file in the folder {str(path)!r} (a SEG has Modality SEG)")
    if len(found) > 1:
        names = ", ".join(str(p.relative_to(path)) for p in found[:5])
        raise ValueError(
            f"the folder {str(path)!r} holds {len(found)} DICOM SEG files ({names}): give one file, or "
            "one folder per case with one SEG in each"
        )
    return found[0]


_SEGMENTS_END = 0x00620002  # SegmentSequence: the last tag segment_classes needs
_HEADER_END = 0x52009229  # SharedFunctionalGroupsSequence, before the per-frame groups: read_seg_header's last
_PER_FRAME_GROUPS = 0x52009230  # PerFrameFunctionalGroupsSequence (read only where the shared group lacks sizes)


def _dataset(path: Path, *, pixels: bool, upto: int | None = None) -> Any:
    """The SEG's dataset: whole, or its header up to tag ``upto`` (not the per-frame groups of a large SEG)."""
    pydicom = _pydicom()
    try:
        if upto is None:
            ds = pydicom.dcmread(path, stop_before_pixels=not pixels)
        else:
            from pydicom.filereader import read_partial

            with open(path, "rb") as f:
                ds = read_partial(f, stop_when=lambda tag, vr, length: tag > upto)
    except Exception as exc:
        raise ImageReadError(f"cannot read {str(path)!r} as DICOM: {exc}\n(is the file truncated or corrupt?)") from exc
    if not (str(ds.get("SOPClassUID", "")) in _SEG_SOP_CLASSES or ds.get("Modality", "") == "SEG"):
        raise ValueError(
            f"{str(path)!r} is a DICOM file of modality {ds.get('Modality', '?')}, not a segmentation (SEG): "
            "ccmetrics reads masks; give the SEG file (or convert the mask to NIfTI)"
        )
    return ds


def _segment_names(ds: Any) -> dict[int, str]:
    """Segment number to label; a Label Map SEG's segment 0 (its background) is no segment."""
    names = {int(s.SegmentNumber): str(s.get("SegmentLabel", s.SegmentNumber)) for s in ds.SegmentSequence}
    names.pop(0, None)
    return names


def _referenced(ds: Any) -> tuple[str | None, int]:
    """The source series' UID and how many of its images the SEG lists (0: it lists none)."""
    series = list(ds.get("ReferencedSeriesSequence", []))
    if len(series) != 1:
        return None, 0
    return str(series[0].SeriesInstanceUID), len(series[0].get("ReferencedInstanceSequence", []))


def _pixel_measures(ds: Any) -> Any:
    """The PixelMeasuresSequence item: the shared one, else the first frame's (both are allowed), else {}."""
    for groups in ("SharedFunctionalGroupsSequence", "PerFrameFunctionalGroupsSequence"):
        for item in ds.get(groups, [])[:1]:
            if "PixelMeasuresSequence" in item:
                return item.PixelMeasuresSequence[0]
    return {}


def read_seg_header(path: Any) -> ImageHeader:
    """A SEG's shape (an upper bound: all listed source images, or all frames), dtype and spacing,
    from its header: no frame is decoded (what :func:`ccmetrics.formats.io.read_header` returns for a SEG)."""
    file = find_seg_file(path)
    ds = _dataset(file, pixels=False, upto=_HEADER_END)
    if not _pixel_measures(ds):  # spacing given per frame: read the per-frame groups too
        ds = _dataset(file, pixels=False, upto=_PER_FRAME_GROUPS)
    _, listed = _referenced(ds)
    planes = max(listed, int(ds.get("NumberOfFrames", 1)) // max(1, len(ds.SegmentSequence)))
    measures = _pixel_measures(ds)
    row, col = (float(v) for v in measures.get("PixelSpacing", (1.0, 1.0)))
    between = float(measures.get("SpacingBetweenSlices", measures.get("SliceThickness", 1.0)) or 1.0)
    dtype = np.dtype(np.uint8 if max(_segment_names(ds), default=0) < 256 else np.uint16)
    return ImageHeader(str(file), (int(ds.Columns), int(ds.Rows), planes), dtype, (col, row, between))


def read_seg(path: Any, *, fractional_threshold: float = DEFAULT_FRACTIONAL_THRESHOLD) -> SegImage:
    """Read a DICOM SEG as a label map with its geometry (axes and conventions: the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        A SEG file, or a folder holding exactly one (other DICOM files beside it are skipped).
    fractional_threshold : float
        For a FRACTIONAL SEG: a voxel belongs to a segment when its fraction is at least this.

    Returns
    -------
    SegImage
        ``array[i, j, k]`` (i: columns, j: rows, k: planes) holding segment numbers; RAS ``affine``.

    Raises
    ------
    ImportError
        Without the ``dicom`` extra.
    ValueError
        Not a SEG, segments that overlap, frames that are not one regularly spaced 3D stack, or a tiled
        (slide microscopy) SEG.

    Examples
    --------
    >>> from ccmetrics.formats.dicom import read_seg
    >>> seg = read_seg("dicom_example/pred/case_001.dcm")  # doctest: +SKIP
    >>> seg.array.shape, seg.spacing, seg.segments, seg.complete  # doctest: +SKIP
    ((64, 56, 10), (0.8, 0.8, 2.5), {1: 'lesion'}, False)
    """
    if not 0.0 < fractional_threshold <= 1.0:
        raise ValueError(f"fractional_threshold must be in (0, 1], got {fractional_threshold!r}")
    try:
        import highdicom as hd
    except ImportError:
        raise ImportError(_INSTALL) from None
    file = find_seg_file(path)
    ds = _dataset(file, pixels=True)
    try:
        seg = hd.seg.Segmentation.from_dataset(ds, copy=False)
    except Exception as exc:
        raise ImageReadError(f"cannot read {str(file)!r} as a DICOM SEG: {exc}") from exc
    if seg.is_tiled:
        raise ValueError(f"{str(file)!r} is a tiled (slide) SEG: ccmetrics evaluates 3D volumes in patient space")
    names = _segment_names(ds)
    fractional = seg.segmentation_type == hd.seg.SegmentationTypeValues.FRACTIONAL
    labels: np.ndarray | None = None
    affine = np.eye(4)
    for number in sorted(names):
        try:
            volume = seg.get_volume(segment_numbers=[number], rescale_fractional=True, rtol=_SLICE_RTOL)
        except (RuntimeError, ValueError) as exc:
            raise ValueError(
                f"{str(file)!r}: the frames of segment {number} are not one regularly spaced 3D stack ({exc}); "
                "ccmetrics compares segmentations on a voxel grid"
            ) from exc
        if labels is None:
            labels = np.zeros(volume.shape[:3], np.uint8 if max(names) < 256 else np.uint16)
            affine = volume.affine
        elif volume.shape[:3] != labels.shape or not np.allclose(volume.affine, affine, atol=1e-4):
            raise ValueError(f"{str(file)!r}: segment {number} lies on another grid than segment {min(names)}")
        values = volume.array[..., 0]
        inside = values >= fractional_threshold if fractional else values > 0
        taken = labels[inside]
        if taken.any():
            other = int(taken[taken > 0][0])
            raise ValueError(
                f"{str(file)!r}: segments {other} ({names[other]!r}) and {number} ({names[number]!r}) overlap in "
                f"{int(np.count_nonzero(taken))} voxels; ccmetrics reads a SEG as a label map (one segment per "
                "voxel): write the segments without overlap, or as separate SEG files"
            )
        labels[inside] = number
    if labels is None:
        raise ValueError(f"{str(file)!r} defines no segment")
    # highdicom: array [plane, row, column], affine to LPS; ccmetrics: [column, row, plane] to RAS
    array = np.ascontiguousarray(labels.transpose(2, 1, 0))
    ras = _LPS_TO_RAS @ affine[:, [2, 1, 0, 3]]
    spacing = tuple(float(s) for s in np.linalg.norm(ras[:3, :3], axis=0))
    series, listed = _referenced(ds)
    complete = listed in (0, array.shape[2])
    stated = "SpacingBetweenSlices" in _pixel_measures(ds)
    return SegImage(
        array,
        spacing,
        ras,
        str(file),
        segments=names,
        complete=complete,
        step_known=stated or (complete and array.shape[2] > 1),
        series_uid=series,
        frame_of_reference=str(ds.get("FrameOfReferenceUID", "")) or None,
    )


def segment_classes(paths: Any, *, skip_unreadable: bool = False) -> tuple[Any, ...]:
    """Classes (:class:`ccmetrics.formats.classes.ClassSpec`) for the segments of one or more SEG files, read
    from their headers: one class per segment number, named by the first file's label for it.

    ``skip_unreadable``: leave out files that cannot be read (each case reports its own), unless none can be
    read (then the first error is raised).

    >>> segment_classes([])
    ()
    """
    from .classes import ClassSpec

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    names: dict[int, str] = {}
    conflicts: dict[int, set[str]] = {}
    first_error: Exception | None = None
    read = 0
    for p in paths:
        try:
            found = _segment_names(_dataset(find_seg_file(p), pixels=False, upto=_SEGMENTS_END))
        except (OSError, ValueError) as exc:
            if not skip_unreadable:
                raise
            first_error = first_error or exc
            continue
        read += 1
        for number, name in found.items():
            if names.setdefault(number, name) != name:
                conflicts.setdefault(number, {names[number]}).add(name)
    if conflicts:
        warnings.warn(
            "segment numbers name different segments in different SEG files ("
            + "; ".join(f"{n}: {', '.join(sorted(v))}" for n, v in sorted(conflicts.items()))
            + "): classes go by number and are named by the first file; a case whose GT and prediction disagree "
            "gets an error row",
            stacklevel=2,
        )
    if first_error is not None and not read:
        raise first_error
    return tuple(ClassSpec(n, names[n], (n,)) for n in sorted(names))


@dataclass(frozen=True)
class _Slice:
    position: np.ndarray
    orientation: tuple[float, ...]
    pixel_spacing: tuple[float, float]
    rows: int
    columns: int


def _series_index(folder: str) -> dict[str, list[_Slice]]:
    """Every image series under ``folder``, by SeriesInstanceUID: each file's geometry (headers only), one
    entry per SOPInstanceUID (a copy of a file beside it counts once); kept while no file changes."""
    files = visible_files(folder)
    signature = tuple((str(p), p.stat().st_mtime_ns) for p in files)
    return _indexed(folder, signature)


@functools.lru_cache(maxsize=8)
def _indexed(folder: str, signature: tuple[tuple[str, int], ...]) -> dict[str, list[_Slice]]:
    pydicom = _pydicom()
    tags = ["SeriesInstanceUID", "SOPInstanceUID", "ImagePositionPatient", "ImageOrientationPatient",
            "PixelSpacing", "Rows", "Columns"]  # fmt: skip
    index: dict[str, list[_Slice]] = {}
    seen: set[str] = set()
    for name, _ in signature:
        try:
            ds = pydicom.dcmread(name, stop_before_pixels=True, specific_tags=tags)
        except Exception:
            continue
        if "ImagePositionPatient" not in ds or "SeriesInstanceUID" not in ds:
            continue
        uid = str(ds.get("SOPInstanceUID", name))
        if uid in seen:
            continue
        seen.add(uid)
        index.setdefault(str(ds.SeriesInstanceUID), []).append(
            _Slice(
                np.array([float(v) for v in ds.ImagePositionPatient]),
                tuple(float(v) for v in ds.ImageOrientationPatient),
                (float(ds.PixelSpacing[0]), float(ds.PixelSpacing[1])),
                int(ds.Rows),
                int(ds.Columns),
            )
        )
    return index


def series_grid(folder: Any, series_uid: str | None = None) -> Image:
    """The voxel grid of a DICOM image series (e.g. the CT a SEG was drawn on), from headers only.

    Parameters
    ----------
    folder : str or os.PathLike
        Searched recursively; its files' headers are read once per process (kept for the next call).
    series_uid : str, optional
        Which series (a SEG's ``SegImage.series_uid``); default: the folder's only series.

    Returns
    -------
    Image
        Its ``array`` is a read-only zero-stride array of the grid's shape (no memory): only the shape,
        spacing and affine are meant. Axes ``[column, row, plane]``, planes in file-position order along
        the slice normal (ascending), RAS affine.

    Raises
    ------
    ValueError
        No such series, or slices that differ in orientation or size, or are not evenly spaced.
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise NotADirectoryError(f"reference images folder {folder!r} does not exist or is not a folder")
    index = _series_index(os.path.abspath(folder))
    if series_uid is None:
        if len(index) != 1:
            raise ValueError(
                f"{folder!r} holds {len(index)} image series and the SEG names none of them "
                "(ReferencedSeriesSequence): give a folder holding only its series"
            )
        series_uid = next(iter(index))
    if series_uid not in index:
        raise ValueError(
            f"the series {series_uid} that the SEG refers to is not in {folder!r} "
            f"(found {len(index)} other series): give the folder of the images the SEG was drawn on"
        )
    slices = index[series_uid]
    first = slices[0]
    if any(
        (s.orientation, s.pixel_spacing, s.rows, s.columns)
        != (first.orientation,) + (first.pixel_spacing, first.rows, first.columns)
        for s in slices
    ):
        raise ValueError(f"the images of series {series_uid} differ in orientation, pixel spacing or size")
    row_dir, col_dir = np.array(first.orientation[:3]), np.array(first.orientation[3:])
    normal = np.cross(row_dir, col_dir)
    along = sorted((float(s.position @ normal), i) for i, s in enumerate(slices))
    positions = np.array([slices[i].position for _, i in along])
    steps = np.diff(positions, axis=0)
    step = steps.mean(axis=0) if len(steps) else normal * 1.0
    if len(steps) and not np.allclose(steps, step, atol=_SLICE_RTOL * np.linalg.norm(step)):
        raise ValueError(f"the images of series {series_uid} are not evenly spaced: ccmetrics needs a voxel grid")
    lps = np.eye(4)
    lps[:3, 0] = row_dir * first.pixel_spacing[1]  # along a row: the column index grows
    lps[:3, 1] = col_dir * first.pixel_spacing[0]
    lps[:3, 2] = step
    lps[:3, 3] = positions[0]
    ras = _LPS_TO_RAS @ lps
    shape = (first.columns, first.rows, len(slices))
    spacing = tuple(float(s) for s in np.linalg.norm(ras[:3, :3], axis=0))
    return Image(np.broadcast_to(np.zeros((), np.uint8), shape), spacing, ras, folder)


def read_series(folder: Any) -> Image:
    """Read the DICOM image series of a folder (e.g. the CT or PET a SEG was drawn on) as an Image.

    SimpleITK (GDCM) finds the series, sorts its slices along the slice normal and applies the rescale
    slope and intercept (CT in HU); the array is turned into ccmetrics' order ``[column, row, plane]``
    with a RAS affine, as for every reader. Files of other modalities in the folder (a SEG, RTSTRUCT, ...)
    are skipped; needs no extra.

    Raises
    ------
    NotADirectoryError, ValueError
        No folder, no image series in it, or several (give one folder per series).

    Examples
    --------
    >>> from ccmetrics.formats.dicom import read_series
    >>> ct = read_series("dicom_example/ct/case_001")  # doctest: +SKIP
    >>> ct.array.shape, ct.spacing  # doctest: +SKIP
    ((64, 56, 20), (0.8, 0.8, 2.5))
    """
    import SimpleITK as sitk

    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise NotADirectoryError(f"DICOM series folder {folder!r} does not exist or is not a folder")
    pydicom = _pydicom_or_none()
    found = []
    for uid in sitk.ImageSeriesReader.GetGDCMSeriesIDs(folder) or ():
        files = sitk.ImageSeriesReader.GetGDCMSeriesFileNames(folder, uid)
        if pydicom is not None:
            modality = pydicom.dcmread(files[0], stop_before_pixels=True, specific_tags=["Modality"]).get("Modality")
            if modality in _NOT_IMAGES:
                continue
        found.append(files)
    if len(found) != 1:
        what = "no DICOM image series" if not found else f"{len(found)} DICOM image series"
        raise ValueError(f"{folder!r} holds {what}: give one folder per series (its slices, any other files)")
    reader = sitk.ImageSeriesReader()
    reader.SetFileNames(found[0])
    try:
        image = reader.Execute()
    except RuntimeError as exc:
        raise ImageReadError(f"cannot read the DICOM series in {folder!r}: {exc}") from exc
    array = sitk.GetArrayFromImage(image)
    if array.ndim != 3:
        raise ValueError(f"{folder!r}: a series of {array.ndim}D arrays; ccmetrics reads 3D scalar series")
    lps = np.eye(4)
    spacing = np.array(image.GetSpacing(), float)
    lps[:3, :3] = np.array(image.GetDirection(), float).reshape(3, 3) * spacing
    lps[:3, 3] = image.GetOrigin()
    return Image(np.ascontiguousarray(array.transpose(2, 1, 0)), tuple(spacing.tolist()), _LPS_TO_RAS @ lps, folder)


def check_union_memory(gt: Image, pred: Image | None, *, reference: Any = None, max_bytes: float | None = None) -> None:
    """Refuse two SEGs whose common grid is the span of both (:func:`ccmetrics.formats.grids.align_pair` without
    ``reference`` and without an image of full extent) when placing them there would exceed ``max_bytes``: checked
    from the grid's shape (:func:`ccmetrics.formats.grids.union_grid`, no voxel), before the grid is allocated.

    Two small SEGs far apart span a large grid: 12 kB of SEGs 500 mm apart need a grid of hundreds of MB per SEG.

    Parameters
    ----------
    gt, pred : Image
        As read (a SEG: :class:`SegImage`); anything but two SEGs placed on their span is not checked here.
    reference : str or os.PathLike, optional
        The source images (``--reference-images``): with them, the grid is the series', not the span.
    max_bytes : float, optional
        The case's memory limit (``--max-memory``); None: nothing is checked.

    Raises
    ------
    ccmetrics.engine.memory.MemoryLimitError
        Naming the grid, what placing both SEGs on it needs, ``--max-memory`` and ``--reference-images``.

    Examples
    --------
    >>> a = SegImage(np.zeros((2, 2, 1), np.uint8), (1.0, 1.0, 1.0), np.eye(4), complete=False)
    >>> b = SegImage(np.zeros((2, 2, 1), np.uint8), (1.0, 1.0, 1.0), np.eye(4), complete=False)
    >>> check_union_memory(a, b, max_bytes=8)
    >>> far = np.eye(4); far[2, 3] = 999.0  # 999 mm further along the stack: a grid of 2 x 2 x 1000 voxels
    >>> b = SegImage(np.zeros((2, 2, 1), np.uint8), (1.0, 1.0, 1.0), far, complete=False)
    >>> check_union_memory(a, b, max_bytes=2**12)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ccmetrics._memory.MemoryLimitError: needs about 7.8 KiB to place both SEGs on the grid that spans them ...
    """
    from .._memory import MemoryLimitError, over_limit
    from .grids import union_grid

    segs = [x for x in (gt, pred) if isinstance(x, SegImage)]
    if max_bytes is None or reference is not None or len(segs) != 2 or any(x.complete for x in segs):
        return
    try:
        grid = union_grid(segs[0], segs[1])
    except ValueError:  # not one lattice: align_pair says why
        return
    shape = grid.array.shape
    need = math.prod(shape) * sum(x.array.dtype.itemsize for x in segs)  # each SEG placed on the grid
    if need > max_bytes:
        basis = (
            f"to place both SEGs on the grid that spans them ({' x '.join(map(str, shape))} voxels: their origins lie "
            f"{_distance_text(segs)} apart)"
        )
        raise MemoryLimitError(
            f"{over_limit(need, max_bytes, basis)}; or give the source images (--reference-images, reference_images=), "
            "whose grid the SEGs are then placed on"
        )


def _distance_text(segs: list[SegImage]) -> str:
    """The distance between the origins of two SEGs, for messages."""
    return f"{float(np.linalg.norm(segs[0].origin - segs[1].origin)):.6g} mm"


def _pydicom_or_none() -> Any:
    try:
        import pydicom
    except ImportError:
        return None
    return pydicom
