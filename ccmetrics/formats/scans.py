"""The scans of a data set: each case's channels found in a folder, one channel chosen, read on the GT's grid.

:class:`ImageFolder` lists a folder once and gives each case its channels: nnU-Net's ``CASE_0000.nii.gz``,
``CASE_0001.nii.gz``, ... (e.g. autoPET's CT ``_0000`` and PET ``_0001``), or the one file ``CASE.nii.gz`` (or a
DICOM series' folder). :func:`choose_channel` picks the channel a metric needs (the PET: the one asked for, the one
``dataset.json``'s ``channel_names`` calls PET, or the only one) and :func:`read_scan` reads it, after checking
from its header alone that it lies on the GT's voxel grid (:func:`ccmetrics.formats.io.check_same_geometry`, the
evaluation's tolerance; the same lattice in another axis order is reoriented) and that reading it fits the memory
limit. ``ccmetrics evaluate --images`` (the ``pet`` metrics) and ``ccmetrics report --images`` (the thumbnails)
both find and read scans here. Cost: one listing of the folder; per channel read, its header, then its voxels once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._memory import format_bytes
from .io import Image

__all__ = [
    "CHANNEL",
    "ChannelFile",
    "ImageFolder",
    "cannot_read",
    "choose_channel",
    "names_channel",
    "read_scan",
    "scan_bytes",
    "scan_problem",
]


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
        from .io import image_id, is_image_file

        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"images: no such folder {str(folder)!r}; give the folder that holds the scans, one file per "
                "case and channel (nnU-Net's CASE_0000.nii.gz, CASE_0001.nii.gz, ..., or CASE.nii.gz)"
            )
        from .dicom import holds_dicom

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
    from .io import IMAGE_EXTENSIONS

    return IMAGE_EXTENSIONS


def choose_channel(
    channels: Sequence[ChannelFile],
    case: str,
    *,
    channel: int | None = None,
    names: Sequence[str] | None = None,
    wanted: str = "PET",
    option: str = "--pet-channel",
    python: str = "",
) -> ChannelFile:
    """The channel of a case's scan that a metric reads: channel ``channel`` when given; else the one that ``names``
    (``dataset.json``'s ``channel_names``, by channel number) calls ``wanted`` (:func:`names_channel`: e.g. "PET",
    "PT", "FDG-PET" for the PET); else the only one.

    Parameters
    ----------
    channels : sequence of ChannelFile
        The case's channels (:meth:`ImageFolder.channels`); a file named by the case id alone is channel 0.
    case : str
        The case id, for the messages.
    channel : int, optional
        The channel asked for (``--pet-channel``).
    names : sequence of str, optional
        The channels' names by number.
    wanted, option, python : str
        What the channel holds, the option that chooses it and its Python spelling, for the messages.

    Raises
    ------
    ValueError
        No channel; the channel asked for is not there; several channels and none chosen: the message names them
        (with their names) and the option.

    Examples
    --------
    >>> ct, pet = ChannelFile("0000", Path("a_0000.nii.gz")), ChannelFile("0001", Path("a_0001.nii.gz"))
    >>> choose_channel([ct, pet], "a", names=["CT", "PET"]).path.name
    'a_0001.nii.gz'
    >>> choose_channel([ct, pet], "a", channel=0).path.name
    'a_0000.nii.gz'
    >>> choose_channel([ChannelFile("", Path("a.nii.gz"))], "a").path.name
    'a.nii.gz'
    >>> choose_channel([ct, pet], "a")
    Traceback (most recent call last):
    ...
    ValueError: case 'a' has 2 channels (0000, 0001): choose the PET with --pet-channel (e.g. --pet-channel 1)
    """
    if not channels:
        raise ValueError(f"case {case!r} has no scan")
    numbers = [int(c.code) if c.code else 0 for c in channels]
    shown = ", ".join(c.code or "(one file)" for c in channels)
    if names:
        shown = ", ".join(f"{c.code or '(one file)'} {c.label(names)}" for c in channels)
    if channel is not None:
        if channel in numbers:
            return channels[numbers.index(channel)]
        raise ValueError(
            f"case {case!r} has no channel {channel} ({option} {channel}); its channels: {shown} (nnU-Net's "
            f"{case}_{channel:04d} is looked for)"
        )
    if len(channels) == 1:
        return channels[0]
    if names:
        named = [c for c, n in zip(channels, numbers) if n < len(names) and names_channel(names[n], wanted)]
        if len(named) == 1:
            return named[0]
    example = channels[-1].code.lstrip("0") or "0"
    in_python = f"; {python.format(example)} in Python" if python else ""
    raise ValueError(
        f"case {case!r} has {len(channels)} channels ({shown}): choose the {wanted} with {option} "
        f"(e.g. {option} {example}{in_python})"
    )


#: the DICOM modality codes and common names that also call a channel what it holds (lower case)
_ALSO_CALLED = {"pet": ("pt",)}


def names_channel(name: object, wanted: str) -> bool:
    """Whether a channel's name (``dataset.json``'s ``channel_names``) calls it ``wanted``: the whole name, or one of
    its words (split at anything but letters and digits), equal to ``wanted`` or, for PET, to DICOM's modality
    code PT; case-insensitive.

    >>> [names_channel(n, "PET") for n in ["PET", "pt", "FDG-PET", "PSMA_PET", "CT", "PETRA", "suv"]]
    [True, True, True, True, False, False, False]
    """
    words = {wanted.lower(), *_ALSO_CALLED.get(wanted.lower(), ())}
    text = str(name).strip().lower()
    return text in words or any(word in words for word in re.split(r"[^0-9a-z]+", text))


def cannot_read(path: Path, exc: BaseException) -> str:
    """Why a scan file could not be read, naming it once (the readers' own messages already name the file).

    >>> cannot_read(Path("a_0001.nii.gz"), ValueError("cannot read 'a_0001.nii.gz': not a gzip file"))
    "cannot read 'a_0001.nii.gz': not a gzip file"
    >>> cannot_read(Path("a_0001.nii.gz"), OSError("permission denied"))
    'cannot read a_0001.nii.gz: permission denied'
    """
    text = str(exc)
    return text if text.startswith("cannot read") else f"cannot read {path.name}: {text}"


def scan_problem(path: Path, reference: Image, name: str, tolerance_mm: float) -> tuple[Image | None, str | None]:
    """Whether a scan lies on the GT's voxel grid, from its header alone (a DICOM series: its files' headers).

    Returns ``(grid, None)`` (the header as an :class:`~ccmetrics.formats.io.Image` of zeros' shape and dtype:
    :func:`ccmetrics.formats.io.read_grid`) when it does, also as the same lattice in another axis order (reoriented
    on reading); ``(None, None)`` when the header cannot say (a DICOM series without pydicom); ``(None, problem)``
    otherwise, the problem naming the channel: ``"channel 0001: shape differs: gt (96, 96, 48), image (48, 48,
    48)"`` (shape, spacing, origin or direction, both values), or why the header cannot be read.
    """
    from .dicom import series_grid
    from .grids import union_grid
    from .io import check_same_geometry, read_grid

    try:
        grid = series_grid(path) if path.is_dir() else read_grid(path)
    except ImportError:  # a DICOM series without pydicom: its grid is known once SimpleITK has read it
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"channel {name}: {cannot_read(path, exc)}"
    problem = check_same_geometry(reference, grid, atol_mm=tolerance_mm, names=("gt", "image"))
    if problem:
        try:  # the same grid in another axis order: the union of both is the GT's grid, voxel for voxel
            union = union_grid(reference, grid, atol_mm=tolerance_mm)
            same = union.array.shape == reference.array.shape and grid.array.size == reference.array.size
        except ValueError:
            same = False
        if not same or not np.allclose(union.affine, reference.affine, atol=tolerance_mm):
            return None, f"channel {name}: {problem}"
    return grid, None


def scan_bytes(grid: Image) -> int:
    """The memory reading a scan may take, from its header: its array, the reader's copy and a reoriented or
    float32 copy (3 × its voxels × its bytes per voxel, at least 4: an integer DICOM series or file with a rescale
    slope is read as floats, whatever its stored type).

    >>> scan_bytes(Image(np.zeros((4, 4, 2), np.float32), (1.0, 1.0, 1.0), np.eye(4)))
    384
    """
    return 3 * int(grid.array.size) * max(grid.array.dtype.itemsize, 4)


def read_scan(
    path: os.PathLike | str,
    reference: Image,
    *,
    name: str = "image",
    tolerance_mm: float = 1e-3,
    max_bytes: float | None = None,
) -> Image:
    """A scan read on the GT's voxel grid: its header checked first (:func:`scan_problem`, and the memory reading it
    takes against ``max_bytes``), so that a scan on another grid or too large costs its header only; then read once
    (NIfTI, MHA, NRRD, or a DICOM series' folder) and reoriented when it is the GT's lattice in another axis order.

    Raises
    ------
    ValueError
        Another grid, an unreadable file, or more memory than ``max_bytes``: the message names the channel (``name``)
        and the difference, with both values. No resampling is ever done.

    Examples
    --------
    >>> import tempfile
    >>> from ccmetrics.formats.io import save_image
    >>> folder = Path(tempfile.mkdtemp())
    >>> save_image(folder / "a_0001.nii.gz", np.full((4, 4, 2), 2.5, np.float32), spacing=(1.0, 1.0, 2.0))
    >>> gt = Image(np.zeros((4, 4, 2), np.uint8), (1.0, 1.0, 2.0), np.diag([1.0, 1.0, 2.0, 1.0]))
    >>> float(read_scan(folder / "a_0001.nii.gz", gt, name="0001").array.max())
    2.5
    >>> gt.affine[2, 3] = 6.0  # the GT starts two slices further
    >>> read_scan(folder / "a_0001.nii.gz", gt, name="0001")
    Traceback (most recent call last):
    ...
    ValueError: channel 0001: origin differs: gt (0.0, 0.0, 6.0) mm, image (0.0, 0.0, 0.0) mm
    """
    from .dicom import read_series
    from .grids import on_grid
    from .io import check_same_geometry, load_image

    path = Path(path)
    grid, problem = scan_problem(path, reference, name, tolerance_mm)
    if problem:
        raise ValueError(problem)
    if grid is not None and max_bytes is not None and scan_bytes(grid) > max_bytes:
        raise ValueError(
            f"channel {name}: reading {path.name} ({' x '.join(map(str, grid.array.shape))} voxels) needs about "
            f"{format_bytes(scan_bytes(grid))}, over the memory limit of {format_bytes(max_bytes)}: raise --max-memory "
            "(max_memory=) if the machine has the memory"
        )
    try:
        image = read_series(path) if path.is_dir() else load_image(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"channel {name}: {cannot_read(path, exc)}") from None
    problem = check_same_geometry(reference, image, atol_mm=tolerance_mm, names=("gt", "image"))
    if problem:  # the same grid in another axis order (a DICOM series beside a NIfTI GT) is reoriented
        try:
            image = on_grid(image, reference, atol_mm=tolerance_mm)
        except ValueError:
            raise ValueError(f"channel {name}: {problem}") from None
    return image
