"""The scans the report draws its thumbnails on (``ccmetrics report --images IMAGE_DIR``): found, checked, read.

:class:`ImageFolder` (from :mod:`ccmetrics.formats.scans`, where ``ccmetrics evaluate --images`` finds its scans
too) lists IMAGE_DIR once and gives each case its channels, nnU-Net's ``CASE_0000.nii.gz``,
``CASE_0001.nii.gz``, ... or the one file ``CASE.nii.gz`` (or a DICOM series' folder); :func:`read_channel` reads
one channel and checks it lies on the GT's voxel grid (:func:`ccmetrics.formats.io.check_same_geometry`, the
evaluation's tolerance), from its header first, where also the memory it needs is checked against the report's
limit (``--max-image-memory``), so a scan on another grid or too large costs its header only. The caller reads one
channel at a time, cuts the slices it needs and lets the array go. Nothing here draws or writes HTML.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path  # noqa: F401  (the examples)

import numpy as np

from ..formats.io import Image
from ..formats.scans import CHANNEL, ChannelFile, ImageFolder  # found by the formats layer; the names stay here too
from .cases import CaseImages, Regions  # noqa: F401  (Regions: the examples build a case)

__all__ = ["CHANNEL", "MAX_MASK_VALUES", "Channel", "ChannelFile", "ImageFolder", "mask_values", "read_channel"]

#: a channel holding at most this many distinct values, all integers, is a mask (a label map), not a scan: a CT or a
#: PET holds thousands
MAX_MASK_VALUES = 16


@dataclass
class Channel:
    """One channel of a case's scan, read and checked against the GT's voxel grid.

    Attributes
    ----------
    label : str
        What the page calls it (:meth:`ChannelFile.label`).
    array : ndarray
        The voxels, as :func:`ccmetrics.formats.io.load_image` reads them (shape of the GT).
    minimum : float
        The smallest value of the whole channel (NaN ignored): a CT holds air, about -1000 HU
        (:func:`ccmetrics.report.thumbnails.choose_window`).
    """

    label: str
    array: np.ndarray
    minimum: float


def read_channel(
    file: ChannelFile,
    images: CaseImages | Image,
    *,
    label: str | None = None,
    tolerance_mm: float = 1e-3,
    max_bytes: float | None = None,
) -> tuple[Channel | None, str | None]:
    """Read one channel of a case's scan if it lies on the GT's voxel grid: the grid and the memory it needs are
    checked from its header first (:func:`ccmetrics.formats.io.read_grid`; a DICOM series:
    :func:`ccmetrics.formats.dicom.series_grid`), so a scan on another grid or too large costs its header only.

    Parameters
    ----------
    file : ChannelFile
    images : CaseImages or Image
        The case's masks, with the GT's ``spacing`` and ``affine``, or their grid alone
        (:meth:`~ccmetrics.report.cases.CaseImages.grid`).
    label : str, optional
        The channel's name in messages (default: :meth:`ChannelFile.label`).
    tolerance_mm : float
        Tolerance on the origin (the evaluation's ``tolerance_mm``); spacing and direction as
        :func:`ccmetrics.formats.io.check_same_geometry` checks them for a prediction.
    max_bytes : float, optional
        The most memory reading the channel may take (its array, the reader's copies and a reoriented copy);
        default :data:`ccmetrics.engine.memory.DEFAULT_MEMORY_FRACTION` of the memory available now.

    Returns
    -------
    channel : Channel or None
        None when the file cannot be read or lies on another grid: it must not be drawn.
    problem : str or None
        Why not, naming the channel: ``"channel 0001: shape differs: gt (96, 96, 48), image (48, 48, 48)"``;
        shape, spacing, origin or direction, with both values.

    Examples
    --------
    >>> import tempfile
    >>> from ccmetrics.formats.io import save_image
    >>> folder = Path(tempfile.mkdtemp())
    >>> save_image(folder / "a_0000.nii.gz", np.full((4, 4, 2), -1000, np.int16), spacing=(1.0, 1.0, 2.0))
    >>> gt = np.zeros((4, 4, 2), bool)
    >>> case = CaseImages(gt, gt, Regions(gt.astype(int)), (1.0, 1.0, 2.0), affine=np.diag([1.0, 1.0, 2.0, 1.0]))
    >>> channel, problem = read_channel(ImageFolder.scan(folder).channels("a")[0], case)
    >>> channel.label, channel.array.shape, channel.minimum, problem
    ('0000', (4, 4, 2), -1000.0, None)
    >>> case.affine[2, 3] = 6.0  # the GT starts two slices further: the scan is not drawn
    >>> read_channel(ImageFolder.scan(folder).channels("a")[0], case)
    (None, 'channel 0000: origin differs: gt (0.0, 0.0, 6.0) mm, image (0.0, 0.0, 0.0) mm')
    """
    from ..formats.scans import read_scan

    name = file.label() if label is None else label
    reference = images.grid() if isinstance(images, CaseImages) else images
    refused = _scan_refused(file, reference, name, tolerance_mm, max_bytes)
    if refused:
        return None, refused
    try:
        image = read_scan(file.path, reference, name=name, tolerance_mm=tolerance_mm)
    except ValueError as exc:
        return None, str(exc)
    array = image.array
    minimum = float(np.nanmin(array)) if array.dtype.kind == "f" else float(array.min())
    return Channel(name, array, minimum), None


def _scan_refused(
    file: ChannelFile, reference: Image, name: str, tolerance_mm: float, max_bytes: float | None
) -> str | None:
    """Why a scan is not read, from its header alone (None: read it): another grid than ``reference``
    (:func:`ccmetrics.formats.scans.scan_problem`), or more memory than ``max_bytes`` (default: the share of the
    available memory that ``ccmetrics evaluate`` takes)."""
    from ..engine.memory import DEFAULT_MEMORY_FRACTION, available_memory_bytes, format_bytes
    from ..formats.scans import scan_bytes, scan_problem

    grid, problem = scan_problem(file.path, reference, name, tolerance_mm)
    if problem or grid is None:
        return problem
    limit = max_bytes if max_bytes is not None else DEFAULT_MEMORY_FRACTION * available_memory_bytes()
    need = scan_bytes(grid)
    if need > limit:
        return (
            f"channel {name}: reading {file.path.name} ({' x '.join(map(str, grid.array.shape))} voxels) needs about "
            f"{format_bytes(need)}, over the report's memory limit of {format_bytes(limit)}: it is not drawn "
            "(raise the limit with ccmetrics report --max-memory, or free memory)"
        )
    return None


def mask_values(array: np.ndarray, max_values: int = MAX_MASK_VALUES) -> list[float] | None:
    """The distinct values of ``array`` when it looks like a mask (at most ``max_values`` of them, all integers, the
    smallest 0: a label map, such as a GT given as ``--images``), else None (a scan).

    Cost: a strided sample of about 1/64 of the voxels first, which already holds more distinct values than
    ``max_values`` in any CT or PET; only an array that passes it is read whole (``np.unique``, O(n log n)).

    Examples
    --------
    >>> mask_values(np.array([[0, 1], [1, 2]], np.uint8))
    [0.0, 1.0, 2.0]
    >>> mask_values(np.array([0.0, 1.0, 0.5])) is None  # not integers
    True
    >>> mask_values(np.arange(20)) is None  # too many values
    True
    >>> mask_values(np.array([1.0, 8.0])) is None  # no background 0: a (synthetic) scan
    True
    >>> mask_values(np.zeros((0,))) is None  # nothing to judge
    True
    """
    if array.size == 0 or array.dtype.kind not in "biuf":
        return None
    step = tuple(slice(None, None, 4) for _ in range(array.ndim)) if array.ndim >= 3 else ()
    for part in (array[step], array) if step else (array,):
        values = np.unique(part).astype(np.float64)
        if values.size > max_values or not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            return None
    if values[0] != 0:  # a mask's background is 0, its labels above: a flat synthetic scan (1 and 8) is no mask
        return None
    return [float(v) for v in values]
