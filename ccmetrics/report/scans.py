"""The scans the report draws its thumbnails on (``ccmetrics report --images IMAGE_DIR``): found, checked, read.

:class:`ImageFolder` lists IMAGE_DIR once and gives each case its channels, nnU-Net's ``CASE_0000.nii.gz``,
``CASE_0001.nii.gz``, ... or the one file ``CASE.nii.gz`` (or a DICOM series' folder); :func:`read_channel` reads
one channel and checks it lies on the GT's voxel grid (:func:`ccmetrics.formats.io.check_same_geometry`, the
evaluation's tolerance), from its header first, where also the memory it needs is checked against the report's
limit (``--max-image-memory``), so a scan on another grid or too large costs its header only. The caller reads one
channel at a time, cuts the slices it needs and lets the array go. Nothing here draws or writes HTML.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..formats.io import Image
from .cases import CaseImages, Regions  # noqa: F401  (Regions: the examples build a case)

__all__ = ["CHANNEL", "Channel", "ChannelFile", "ImageFolder", "read_channel"]


#: nnU-Net's channel suffix of an image file name: ``CASE_0000``, ``CASE_0001``, ...
CHANNEL = re.compile(r"^(?P<case>.+)_(?P<code>\d{4})$")


@dataclass(frozen=True)
class ChannelFile:
    """One channel of a case's scan.

    Attributes
    ----------
    code : str
        nnU-Net's channel number, ``"0000"``, ``"0001"``, ..., or ``""`` for a file named by the case id
        alone (one channel).
    path : Path
    """

    code: str
    path: Path

    def label(self, names: Sequence[str] | None = None) -> str:
        """What the page calls the channel: ``names[int(code)]`` when given (a file named by the case id:
        ``names[0]``), else the code (``"image"`` for a file named by the case id).

        >>> pet = ChannelFile("0001", Path("a_0001.nii.gz"))
        >>> pet.label(), pet.label(["CT", "PET"])
        ('0001', 'PET')
        >>> ChannelFile("", Path("a.nii.gz")).label()
        'image'
        """
        number = int(self.code) if self.code else 0
        if names and number < len(names) and names[number]:
            return str(names[number])
        return self.code or "image"


@dataclass
class ImageFolder:
    """The scans of a data set: a folder listed once, each case's channels looked up by name.

    A case ``CASE`` has the channels ``CASE_0000``, ``CASE_0001``, ... (nnU-Net's ``imagesTr``
    naming, one file per channel such as CT and PET), or, when there is none, the one channel
    ``CASE``; each with any extension of :data:`ccmetrics.formats.io.IMAGE_EXTENSIONS` but ``.dcm`` (the name
    without it is :func:`ccmetrics.formats.io.image_id`), or a sub-folder of that name holding a DICOM image
    series (:func:`ccmetrics.formats.dicom.read_series`). Other sub-folders are not searched.

    Attributes
    ----------
    path : Path
    files : dict of str to list of Path
        Image id (file name without extension) to the files of that id.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for name in ["a_0000.nii.gz", "a_0001.nii.gz", "b.mha", "notes.txt"]:
    ...     _ = (folder / name).write_bytes(b"")
    >>> images = ImageFolder.scan(folder)
    >>> [(c.code, c.path.name) for c in images.channels("a")], [c.path.name for c in images.channels("b")]
    ([('0000', 'a_0000.nii.gz'), ('0001', 'a_0001.nii.gz')], ['b.mha'])
    >>> images.channels("c")
    []
    """

    path: Path
    files: dict[str, list[Path]]

    @classmethod
    def scan(cls, path: os.PathLike) -> ImageFolder:
        """List the image files of ``path``.

        Raises
        ------
        FileNotFoundError
            ``path`` is not a folder.
        ValueError
            It holds no image file.
        """
        from ..formats.io import image_id, is_image_file

        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"images: no such folder {str(folder)!r}; give the folder that holds the scans, one file per "
                "case and channel (nnU-Net's CASE_0000.nii.gz, CASE_0001.nii.gz, ..., or CASE.nii.gz)"
            )
        from ..formats.dicom import holds_dicom

        files: dict[str, list[Path]] = {}
        for entry in sorted(folder.iterdir()):
            if entry.is_file() and is_image_file(entry) and not entry.name.lower().endswith(".dcm"):
                files.setdefault(image_id(entry), []).append(entry)
            elif entry.is_dir() and not entry.name.startswith(".") and holds_dicom(entry):  # a DICOM series
                files.setdefault(entry.name, []).append(entry)
        if not files:
            raise ValueError(
                f"images: {str(folder)!r} holds no image file (names ending in one of "
                f"{', '.join(_image_extensions())}); give the folder of the scans"
            )
        return cls(folder, files)

    def channels(self, case: str) -> list[ChannelFile]:
        """The channels of ``case``, in the order of their numbers; empty when none is found.

        Raises
        ------
        ValueError
            A channel has several files (``CASE_0000.nii.gz`` and ``CASE_0000.mha``): which one is meant?
        """
        numbered = sorted(
            (match["code"], paths)
            for name, paths in self.files.items()
            if (match := CHANNEL.match(name)) is not None and match["case"] == case
        )
        if not numbered and case in self.files:
            numbered = [("", self.files[case])]
        for _, paths in numbered:
            if len(paths) > 1:
                names = ", ".join(p.name for p in paths)
                raise ValueError(f"several files for one channel: {names}; keep one of them in {self.path}")
        return [ChannelFile(code, paths[0]) for code, paths in numbered]

    def expected(self, case: str) -> str:
        """The names looked for, for a message.

        >>> ImageFolder(Path("images"), {}).expected("a")
        'a_0000.nii.gz, a_0001.nii.gz, ... or a.nii.gz'
        """
        return f"{case}_0000.nii.gz, {case}_0001.nii.gz, ... or {case}.nii.gz"


def _image_extensions() -> tuple[str, ...]:
    from ..formats.io import IMAGE_EXTENSIONS

    return IMAGE_EXTENSIONS


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
    from ..formats.dicom import read_series
    from ..formats.grids import on_grid
    from ..formats.io import check_same_geometry, load_image

    name = file.label() if label is None else label
    reference = images.grid() if isinstance(images, CaseImages) else images
    refused = _scan_refused(file, reference, name, tolerance_mm, max_bytes)
    if refused:
        return None, refused
    try:
        image = read_series(file.path) if file.path.is_dir() else load_image(file.path)
    except (OSError, ValueError) as exc:
        return None, f"channel {name}: cannot read {file.path.name}: {exc}"
    problem = check_same_geometry(reference, image, atol_mm=tolerance_mm, names=("gt", "image"))
    if problem:  # the same grid in another axis order (a DICOM series beside a NIfTI GT) is reoriented
        try:
            image = on_grid(image, reference, atol_mm=tolerance_mm)
        except ValueError:
            return None, f"channel {name}: {problem}"
    array = image.array
    minimum = float(np.nanmin(array)) if array.dtype.kind == "f" else float(array.min())
    return Channel(name, array, minimum), None


def _scan_refused(
    file: ChannelFile, reference: Image, name: str, tolerance_mm: float, max_bytes: float | None
) -> str | None:
    """Why a scan is not read, from its header alone (None: read it): another grid than ``reference`` (one lattice
    covering it voxel for voxel, in any axis order, is kept for :func:`read_channel`), or more memory than
    ``max_bytes`` (default: the share of the available memory that ``ccmetrics evaluate`` takes)."""
    from ..engine.memory import DEFAULT_MEMORY_FRACTION, available_memory_bytes, format_bytes
    from ..formats.dicom import series_grid
    from ..formats.grids import union_grid
    from ..formats.io import check_same_geometry, read_grid

    try:
        grid = series_grid(file.path) if file.path.is_dir() else read_grid(file.path)
    except ImportError:  # a DICOM series without pydicom: its grid is known once SimpleITK has read it
        return None
    except (OSError, ValueError) as exc:
        return f"channel {name}: cannot read {file.path.name}: {exc}"
    problem = check_same_geometry(reference, grid, atol_mm=tolerance_mm, names=("gt", "image"))
    if problem:
        try:  # the same grid in another axis order: the union of both is the GT's grid, voxel for voxel
            union = union_grid(reference, grid, atol_mm=tolerance_mm)
            same = union.array.shape == reference.array.shape and grid.array.size == reference.array.size
        except ValueError:
            same = False
        if not same or not np.allclose(union.affine, reference.affine, atol=tolerance_mm):
            return f"channel {name}: {problem}"
    limit = max_bytes if max_bytes is not None else DEFAULT_MEMORY_FRACTION * available_memory_bytes()
    need = 3 * grid.array.size * max(grid.array.dtype.itemsize, 2)  # the array, the reader's copy, a reoriented copy
    if need > limit:
        return (
            f"channel {name}: reading {file.path.name} ({' x '.join(map(str, grid.array.shape))} voxels) needs about "
            f"{format_bytes(need)}, over the report's memory limit of {format_bytes(limit)}: it is not drawn "
            "(raise the limit with ccmetrics report --max-memory, or free memory)"
        )
    return None
