"""A model's probability map for one case, read on the case's ground-truth grid and checked.

:func:`read_probabilities` returns an :class:`~ccmetrics.formats.image.Image` whose array is float32 and indexed
as :func:`~ccmetrics.formats.io.load_image` indexes the GT's (``array[i, j, k]``, file order), and
:func:`probability_file` finds a case's file in a folder. Two kinds of files are read:

* an image file (NIfTI, MHA/MHD, NRRD: what :func:`~ccmetrics.formats.io.load_image` reads), float, boolean or
  0/1 integer, with its own geometry, which must be the GT's (``like``; checked by
  :func:`~ccmetrics.formats.io.check_same_geometry`). A 4D NIfTI ``(x, y, z, c)`` (channels last, as MONAI's
  ``SaveImage`` writes them) is read only with ``channel=``: that index along its last axis;
* nnU-Net's ``CASE.npz`` (``nnUNetv2_predict --save_probabilities``: key ``probabilities``; nnU-Net v1's
  ``--save_npz``: key ``softmax``), shape ``(C, *spatial)``, one channel per class (background first) or
  per region. It holds no geometry: it takes ``like``'s, which is therefore required.

Axis order of the ``.npz``: nnU-Net reads images through SimpleITK (``SimpleITKIO``:
``sitk.GetArrayFromImage``, numpy order ``(z, y, x)``; its ``NibabelIO`` transposes nibabel's array to the
same order) and writes the probabilities in that order, a 2D image as ``(C, 1, y, x)``.
:func:`~ccmetrics.formats.io.load_image` returns ``(x, y, z)``: SimpleITK's array transposed, nibabel's as it
is. A channel is therefore transposed (all axes reversed, a view) to lie voxel for voxel on ``like.array``.
nnU-Net's ``NibabelIOWithReorient`` writes the ``.npz`` in the image's RAS-reoriented order, which the file
does not record: such a map lies on the GT's grid only when the GT is itself RAS-oriented.

Checks, each refused with a :class:`ProbabilityError` that names the file, what was found and the fix: a
missing file; another grid than ``like`` (shape, spacing, origin, direction, with both values); NaN or
infinite values (counted); values outside [0, 1] (the minimum and maximum found: logits need a sigmoid or
softmax first); a multi-channel file without ``channel=`` (except nnU-Net's two channels of a binary task,
whose channel 1 is the foreground), or a channel that does not exist.

Memory: every read is estimated from headers before any voxel is read, and with ``max_bytes`` (the data-set run's
``--max-memory``) refused over it (:class:`ProbabilityMemoryError`). An image file's grid is compared with
``like``'s from its header (:func:`~ccmetrics.formats.io.read_grid`) before its voxels are read, so a file of
another grid costs its header only.

Cost: an image file is read once by :func:`~ccmetrics.formats.io.load_image` (size checks before any
allocation, as there); a float32 array is returned as it is, other dtypes are cast once. A ``.npz`` member's
shape and dtype are read from its header, and checked against ``like``, before it is decompressed; the member is
then decompressed as a stream, 16 MiB at a time, to its end (zipfile checks its CRC there), and only the channels
asked for are kept (as float32): a map of 100 classes costs the memory of the classes read, not of the
``(C, *spatial)`` stack. A header that declares more bytes than its zip entry can hold is refused before anything is
allocated. The value checks are a minimum
and a maximum over the array (two passes, no temporary); NaN and infinities are only counted when those are not finite.

Exactness: confidences are float32, as picai_eval's ``read_prediction`` casts them. Boolean, 0/1 integer
and float16 maps (nnU-Net's older ``.npz``) are exact in float32; a float64 map is rounded to the nearest
float32 (relative error at most 2**-24), and its values are checked after that rounding.
"""

from __future__ import annotations

import math
import operator
import os
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._memory import MemoryLimitError, format_bytes, over_limit
from .image import Image, ImageHeader, ImageReadError, missing_file_message
from .io import (
    _check_nifti,
    _geometry,
    _plain_nifti,
    _to_mm,
    check_same_geometry,
    image_id,
    is_image_file,
    load_image,
    read_grid,
)

__all__ = [
    "NPZ_KEYS",
    "ProbabilityError",
    "ProbabilityMemoryError",
    "probability_case_id",
    "probability_file",
    "read_probabilities",
    "read_probability_channels",
]

#: the keys of nnU-Net's ``.npz``, in the order they are looked for: v2's ``--save_probabilities``, v1's ``--save_npz``
NPZ_KEYS = ("probabilities", "softmax")
_HINT = "\n(is the file truncated or corrupt? write or copy it again)"


class ProbabilityError(ValueError):
    """A probability map that cannot be used: missing, on another grid than the GT, with values that are
    no probabilities, or with several channels and none chosen. The message names the file, the problem
    and the fix."""


def read_probability_channels(
    path,
    channels: Any,
    *,
    like: Image | None = None,
    tolerance_mm: float | None = None,
    max_bytes: float | None = None,
) -> dict[int, Image]:
    """Several channels of one probability file, each as :func:`read_probabilities` reads one; a ``.npz`` is
    decompressed once for all of them.

    Parameters
    ----------
    path : str or os.PathLike
    channels : sequence of int
        The channels (of a ``.npz``: its first axis; of a 4D NIfTI: its last). A 3D image file holds one map:
        it is the map of a single channel asked for.
    like, tolerance_mm, max_bytes
        As in :func:`read_probabilities` (``max_bytes``: for all the channels together).

    Returns
    -------
    dict of int to Image
        Each channel's float32 map, checked (values in [0, 1], finite).

    Examples
    --------
    >>> import os, tempfile
    >>> from ccmetrics.formats.io import load_image, save_image
    >>> folder = tempfile.mkdtemp()
    >>> save_image(os.path.join(folder, "gt.nii.gz"), np.zeros((4, 3, 2), np.uint8))
    >>> gt = load_image(os.path.join(folder, "gt.nii.gz"))
    >>> p = np.full((2, 3, 4), 0.25, np.float32)
    >>> np.savez_compressed(os.path.join(folder, "c.npz"), probabilities=np.stack([p, p * 2, p * 3, 1 - p * 6]))
    >>> maps = read_probability_channels(os.path.join(folder, "c.npz"), (1, 2), like=gt)
    >>> {k: float(v.array[0, 0, 0]) for k, v in maps.items()}
    {1: 0.5, 2: 0.75}
    """
    wanted = [int(c) for c in channels]
    if len(set(wanted)) != len(wanted) or not wanted:
        raise ValueError(f"channels must be distinct channel numbers, got {channels!r}")
    name = os.path.basename(os.fspath(path)).lower()
    if len(wanted) == 1 or not name.endswith(".npz"):
        share = None if max_bytes is None else max_bytes / len(wanted)  # one channel in memory at a time, each kept
        return {
            c: read_probabilities(path, like=like, channel=c, tolerance_mm=tolerance_mm, max_bytes=share)
            for c in wanted
        }
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ProbabilityError(missing_file_message(path, "probability file"))
    images = _read_npz(path, like, wanted, max_bytes)
    for image in images.values():
        _check_values(path, image.array)
    return images


def read_probabilities(
    path,
    *,
    like: Image | None = None,
    channel: int | None = None,
    tolerance_mm: float | None = None,
    max_bytes: float | None = None,
) -> Image:
    """A probability map as float32 Image (array axes as load_image gives them, i.e. the GT's).

    Parameters
    ----------
    path : str or os.PathLike
        An image file (``.nii``, ``.nii.gz``, ``.mha``, ``.mhd``, ``.nrrd``, ``.nhdr``) or nnU-Net's ``.npz``.
    like : Image, optional
        The case's GT (:func:`~ccmetrics.formats.io.load_image`): an image file must lie on its grid, a
        ``.npz`` takes its geometry (required for a ``.npz``). None: an image file is read unchecked.
    channel : int, optional
        The class's channel: of a ``.npz``, an index of its first axis (default 1 when it holds two
        channels, a binary task's foreground; required otherwise); of a 4D NIfTI, an index of its last
        axis (required). Not used for a 2D or 3D image file, which holds one map.
    tolerance_mm : float, optional
        Tolerance on the origin (mm) when comparing an image file's grid with ``like``'s; default that of
        :func:`~ccmetrics.formats.io.check_same_geometry` (1e-3 mm). Spacing and direction are compared as it does.
    max_bytes : float, optional
        The most memory (bytes) the read may take: the map returned and what reading it needs (a ``.npz``: the
        channels asked for and one 16 MiB piece of the file at a time; an image file: its array, the readers'
        copies and the float32 map), estimated from the headers before any voxel is read. Over it,
        :class:`ProbabilityMemoryError`, which names ``--max-memory``. None: no limit.

    Returns
    -------
    Image
        float32 array on ``like``'s grid (its shape), with the file's geometry (a ``.npz``: ``like``'s).

    Raises
    ------
    ProbabilityError
        For a missing or unreadable file, a file of another kind, another grid than ``like``, NaN or
        infinite values, values outside [0, 1], or a channel missing or not chosen (see the module docstring).
        The grid is checked from the header, before any voxel is read.
    ProbabilityMemoryError
        (a ProbabilityError) The read would take more than ``max_bytes``.

    Examples
    --------
    >>> import os, tempfile
    >>> from ccmetrics.formats.io import load_image, save_image
    >>> folder = tempfile.mkdtemp()
    >>> save_image(os.path.join(folder, "case.nii.gz"), np.zeros((4, 3, 2), np.uint8), spacing=(0.5, 0.5, 2.0))
    >>> gt = load_image(os.path.join(folder, "case.nii.gz"))
    >>> p = np.linspace(0, 1, 24, dtype=np.float32).reshape(4, 3, 2)
    >>> save_image(os.path.join(folder, "case.mha"), p, like=gt)
    >>> probs = read_probabilities(os.path.join(folder, "case.mha"), like=gt)
    >>> probs.array.dtype, probs.array.shape, bool(np.array_equal(probs.array, p))
    (dtype('float32'), (4, 3, 2), True)

    nnU-Net's ``.npz`` holds ``(C, z, y, x)``: its channel 1 is read transposed, on the GT's grid.

    >>> np.savez_compressed(os.path.join(folder, "case.npz"), probabilities=np.stack([1 - p.T, p.T]))
    >>> bool(np.array_equal(read_probabilities(os.path.join(folder, "case.npz"), like=gt).array, p))
    True
    >>> save_image(os.path.join(folder, "logits.nii.gz"), p * 8 - 4, like=gt)
    >>> read_probabilities(os.path.join(folder, "logits.nii.gz"), like=gt)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ccmetrics.formats.probabilities.ProbabilityError: '...logits.nii.gz' holds values from -4 to 4, outside [0, 1]...
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ProbabilityError(
            f"{path!r} is a folder: give one case's probability file (probability_file(folder, case) finds it)"
        )
    if not os.path.isfile(path):
        raise ProbabilityError(missing_file_message(path, "probability file"))
    name = os.path.basename(path).lower()
    if name.endswith(".npz") and len(name) > 4:
        image = _read_npz(path, like, [channel], max_bytes)[channel]
    elif is_image_file(path) and not name.endswith(".dcm"):
        image = _read_image(path, channel, like, tolerance_mm, max_bytes)
    else:
        raise ProbabilityError(
            f"cannot read {path!r} as a probability map: unknown extension; ccmetrics reads "
            ".nii, .nii.gz, .mha, .mhd, .nrrd, .nhdr and nnU-Net's .npz (convert the file to one of these)"
        )
    _check_values(path, image.array)
    return image


def _read_image(
    path: str, channel: int | None, like: Image | None, tolerance_mm: float | None, max_bytes: float | None
) -> Image:
    """An image file as float32 Image; a 4D NIfTI: its ``channel`` along the last axis. Its grid is compared with
    ``like``'s and its memory with ``max_bytes`` from the header, before any voxel is read."""
    lower = os.path.basename(path).lower()
    if lower.endswith((".nii", ".nii.gz")):
        try:  # a plain header (most maps) is read without nibabel: its import and load cost a worker 0.5 s
            plain = _plain_nifti(path, warn=True, count=False)  # (warned before the grid check that it may explain)
            hdr: Any = None
            lazy: Any = None
            if plain is None:
                hdr, lazy = _check_nifti(path, warn=True, count=False)
            shape = tuple(int(s) for s in (plain.shape if plain is not None else hdr.get_data_shape()))
            while len(shape) > 3 and shape[-1] == 1:
                shape = shape[:-1]
            if len(shape) == 4 and hdr is None:  # a 4D map: its channel is read through nibabel's proxy
                hdr, lazy = _check_nifti(path, warn=True, count=False)
        except ImageReadError as e:
            raise ProbabilityError(str(e)) from e
        if len(shape) == 4:
            return _nifti_channel(path, hdr, lazy, shape, channel, like, tolerance_mm, max_bytes)
    try:
        grid = read_grid(path)
    except (OSError, ValueError) as e:  # ImageReadError is a ValueError
        raise ProbabilityError(str(e)) from e
    _check_grid(path, like, grid, tolerance_mm)
    header = ImageHeader(path, grid.array.shape, grid.array.dtype, grid.spacing)
    _check_memory(path, _image_read_bytes(header), max_bytes, "to read it")
    try:
        image = load_image(path)
    except (OSError, ValueError) as e:  # ImageReadError is a ValueError
        raise ProbabilityError(str(e)) from e
    array = _as_float32(path, image.array)
    return Image(array, image.spacing, image.affine, image.path, image.affine_3d)


def _nifti_channel(
    path: str,
    hdr: Any,
    lazy: Any,
    shape: tuple[int, ...],
    channel: int | None,
    like: Image | None,
    tolerance_mm: float | None,
    max_bytes: float | None,
) -> Image:
    """Channel ``channel`` along the last axis of the 4D NIfTI ``path`` (nibabel's lazy image ``lazy``), its grid and
    memory checked first."""
    if channel is None:
        raise ProbabilityError(
            f"{path!r} is a 4D image of shape {shape}: {shape[-1]} maps along its last axis; choose the "
            f"class's one with channel= (0 to {shape[-1] - 1}; --classes on the command line), "
            "or save that map as a 3D image"
        )
    index = _channel_index(path, channel, shape[-1], "along its last axis")
    try:
        affine = _to_mm(path, np.array(lazy.affine, dtype=float), int(hdr["xyzt_units"]))
        spacing, affine = _geometry(path, affine, 3)
    except ImageReadError as e:
        raise ProbabilityError(str(e)) from e
    stored = np.dtype(hdr.get_data_dtype())
    grid = Image(np.broadcast_to(np.zeros((), stored), shape[:3]), spacing, affine, path)
    _check_grid(path, like, grid, tolerance_mm)
    voxels = math.prod(shape[:3])
    # the channel as stored, nibabel's scaled float64 copy, and the float32 map
    _check_memory(path, voxels * (stored.itemsize + 8 + 4), max_bytes, f"to read its channel {index}")
    try:
        array = np.asanyarray(lazy.dataobj[..., index])  # nibabel reads this channel only, scaled
    except MemoryError:
        raise
    except Exception as e:  # EOFError, zlib.error, OSError, ...
        raise ProbabilityError(f"cannot read channel {index} of {path!r} with nibabel: {e}{_HINT}") from e
    array = array.reshape(shape[:3])
    return Image(_as_float32(path, array), spacing, affine, path)


def _check_grid(path: str, like: Image | None, grid: Image, tolerance_mm: float | None) -> None:
    """ProbabilityError when the map's ``grid`` (read from its header) is not ``like``'s."""
    if like is None:
        return
    tolerance = {} if tolerance_mm is None else {"atol_mm": float(tolerance_mm)}
    problem = check_same_geometry(like, grid, names=("gt", "probabilities"), **tolerance)
    if problem:
        raise ProbabilityError(
            f"{path!r} does not lie on the GT's voxel grid (GT: {like.path!r}): {problem}; "
            "write the probability map on the GT's grid (its shape, spacing, origin and direction), "
            "or check that both files belong to the same case"
        )


def _image_read_bytes(header: ImageHeader) -> int:
    """What reading an image file as a float32 map takes at its peak: its array, the readers' copies (SimpleITK: its
    image and the transposed copy; nibabel: the unscaled array of a scaled float map) and the float32 map."""
    name = (header.path or "").lower()
    copies = 2 if name.endswith((".mha", ".mhd", ".nrrd", ".nhdr")) else int(header.dtype.kind == "f")
    as_float32 = 0 if header.dtype == np.float32 else 4 * header.voxels
    return header.nbytes * (1 + copies) + as_float32


class ProbabilityMemoryError(ProbabilityError, MemoryLimitError):
    """A probability map whose read would exceed the memory limit (``max_bytes=``, ``--max-memory``), found from its
    header before any voxel is read; a :class:`ProbabilityError` and a
    :class:`ccmetrics.engine.memory.MemoryLimitError` (a data-set run marks the case for a retry)."""


def _check_memory(path: str, need: float, max_bytes: float | None, what: str) -> None:
    """ProbabilityMemoryError when ``need`` bytes exceed ``max_bytes``."""
    if max_bytes is not None and need > max_bytes:
        raise ProbabilityMemoryError(f"{path!r}: {over_limit(need, max_bytes, what)}")


def _channel_index(path: str, channel: Any, count: int, where: str) -> int:
    """``channel`` as an index in ``range(count)``, else ProbabilityError naming the number of channels."""
    try:
        index = operator.index(channel)
    except TypeError:
        index = -1
    if isinstance(channel, bool) or not 0 <= index < count:
        raise ProbabilityError(
            f"{path!r} holds {count} channel{'s' if count != 1 else ''} {where} (0 to {count - 1}): "
            f"channel {channel!r} does not exist; choose one of them with channel="
        )
    return index


def _read_npz(path: str, like: Image | None, channels: list[Any], max_bytes: float | None = None) -> dict[Any, Image]:
    """nnU-Net's ``.npz``: the chosen channels (None: the default one), transposed onto ``like``'s grid, float32;
    the member is decompressed once, as a stream, and only the chosen channels are kept (:func:`_npz_channels`)."""
    if like is None:
        raise ProbabilityError(
            f"{path!r} is an nnU-Net .npz, which holds no geometry: pass like= (the case's GT, "
            "load_image(gt_file)) to read it on the GT's grid"
        )
    key, shape, dtype, fortran = _npz_header(path)
    if dtype.kind not in "biuf":
        raise ProbabilityError(
            f"{path!r}: its array {key!r} holds {dtype} values; a probability map holds floats in [0, 1]"
        )
    if len(shape) < 2:
        raise ProbabilityError(
            f"{path!r}: its array {key!r} has shape {shape}; nnU-Net writes (C, z, y, x) (a 2D image: "
            "(C, 1, y, x)): write the probabilities with nnUNetv2_predict --save_probabilities"
        )
    two_d = like.array.ndim == 2 and len(shape) == 4 and shape[1] == 1  # nnU-Net's 2D images: (C, 1, y, x)
    spatial = shape[2:] if two_d else shape[1:]
    count = shape[0]
    if None in channels:
        if count != 2:
            raise ProbabilityError(
                f"{path!r} holds {count} channel{'s' if count != 1 else ''} (nnU-Net's order: background "
                "first, then the labels of dataset.json, or one per region): choose the class's one with "
                f"channel= (0 to {count - 1}; --classes on the command line)"
            )
    # None: a binary task's foreground (background, foreground)
    where = "(the first axis of nnU-Net's (C, z, y, x))"
    index = {c: _channel_index(path, 1 if c is None else c, count, where) for c in channels}
    reversed_shape = tuple(reversed(spatial))
    if reversed_shape != like.array.shape:
        hint = ""
        if tuple(spatial) == like.array.shape:
            hint = (
                "; its axes seem to be in load_image's (x, y, z) order already, where nnU-Net writes "
                "SimpleITK's (z, y, x): write it as nnU-Net does"
            )
        raise ProbabilityError(
            f"{path!r} does not lie on the GT's voxel grid (GT: {like.path!r}): shape differs: "
            f"gt {like.array.shape}, probabilities {reversed_shape} (the .npz's spatial shape {tuple(spatial)} "
            f"in nnU-Net's (z, y, x) order, reversed){hint}; check that both files belong to the same case"
        )
    voxels = math.prod(spatial)
    chosen = sorted(set(index.values()))
    need = len(chosen) * voxels * 4 + _PIECE  # the float32 channels kept and one piece of the stream
    _check_memory(path, need, max_bytes, f"to read {len(chosen)} of its {count} channels")
    _check_npz_claim(path, key, count * voxels * dtype.itemsize, (count, *shape[1:]), dtype)
    # each channel on like's grid (nnU-Net's axes reversed): stored C order, its bytes are this array's in Fortran order
    try:
        arrays = {i: np.empty(reversed_shape, np.float32, order="C" if fortran else "F") for i in chosen}
    except MemoryError:
        raise ProbabilityMemoryError(
            f"{path!r}: reading {len(chosen)} of its {count} channels needs {format_bytes(need)}, more than the memory "
            "left: free memory, or set a limit with max_memory= (--max-memory) so that such a case waits or is refused"
        ) from None
    flat = {i: a.reshape(-1, order="C" if fortran else "F") for i, a in arrays.items()}  # views: filled in place
    _npz_channels(path, key, (count, *shape[1:]), dtype, fortran, flat)
    affine = np.array(like.affine, dtype=float)
    return {c: Image(arrays[i], tuple(like.spacing), affine.copy(), path) for c, i in index.items()}


#: bytes of a ``.npz`` member decompressed at a time
_PIECE = 1 << 24
#: deflate never compresses more than this (1032:1), plus a little for the stream's own bytes
_DEFLATE_RATIO, _DEFLATE_SLACK = 1032, 1 << 16


def _check_npz_claim(path: str, key: str, total: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Refuse a ``.npz`` whose ``.npy`` header declares more bytes than its zip entry can hold, before the channels
    are allocated: the entry's uncompressed size must hold the array; a stored entry's bytes, and a deflated one's at
    the most compression deflate allows, must fit in the file (Python ints: no overflow)."""
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(f"{key}.npy")
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise ProbabilityError(f"cannot read {path!r}: {e}{_HINT}") from e
    on_disk = os.path.getsize(path)
    ceiling = info.compress_size * (_DEFLATE_RATIO if info.compress_type == zipfile.ZIP_DEFLATED else 1)
    if total > info.file_size or info.compress_size > on_disk or info.file_size > ceiling + _DEFLATE_SLACK:
        raise ProbabilityError(
            f"cannot read {path!r}: its array {key!r} declares {total:,} bytes (shape {shape}, {dtype}), but its zip "
            f"entry holds {info.file_size:,} bytes ({info.compress_size:,} stored, of a {on_disk:,}-byte file){_HINT}"
        )


def _npz_channels(
    path: str, key: str, shape: tuple[int, ...], dtype: np.dtype, fortran: bool, out: dict[int, np.ndarray]
) -> None:
    """Fill ``out`` (channel -> flat float32 array, in the file's order of the voxels, C or Fortran) with those
    channels of the ``(C, *spatial)`` array ``key`` of the ``.npz`` ``path``, read as a stream of :data:`_PIECE` bytes:
    memory grows with the channels asked for, not with the file's. Integer channels hold only 0 and 1
    (:func:`_check_integers`)."""
    count, voxels, size = shape[0], math.prod(shape[1:]), dtype.itemsize
    channels = sorted(out)
    total = count * voxels * size
    try:
        with zipfile.ZipFile(path) as archive, archive.open(f"{key}.npy") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            read(f)
            start = f.tell()

            def take(length: int, at: int) -> np.ndarray:
                """``length`` bytes from offset ``at`` of the array's data (forwards only), as ``dtype`` values."""
                if f.tell() != start + at:
                    f.seek(start + at)
                data = f.read(length)
                if len(data) != length:
                    raise ProbabilityError(
                        f"cannot read {path!r}: its array {key!r} ends after {f.tell() - start:,} of the {total:,} "
                        f"bytes its header declares (shape {shape}, {dtype}){_HINT}"
                    )
                return np.frombuffer(data, dtype)

            if not fortran:  # C order: each channel is one run of bytes
                step = max(1, _PIECE // size)
                for c in channels:
                    for lo in range(0, voxels, step):
                        hi = min(voxels, lo + step)
                        out[c][lo:hi] = _checked(path, take((hi - lo) * size, (c * voxels + lo) * size))
            else:  # Fortran order: the channel varies fastest, every piece holds all of them
                rows = max(1, _PIECE // (size * count))
                for lo in range(0, voxels, rows):
                    hi = min(voxels, lo + rows)
                    piece = take((hi - lo) * count * size, lo * count * size).reshape(hi - lo, count)
                    for c in channels:
                        out[c][lo:hi] = _checked(path, piece[:, c])
            while f.read(_PIECE):  # the rest of the member, thrown away: zipfile checks the CRC at its end
                pass
    except ProbabilityError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise ProbabilityError(f"cannot read {path!r}: {e}{_HINT}") from e


def _checked(path: str, values: np.ndarray) -> np.ndarray:
    """``values`` of a map stored as integers hold only 0 and 1 (:func:`_check_integers`); returned as they are."""
    if values.dtype.kind in "iu":
        _check_integers(path, values)
    return values


def _npz_header(path: str) -> tuple[str, tuple[int, ...], np.dtype, bool]:
    """(key, shape, dtype, Fortran order) of the probability array of the ``.npz`` ``path``, from its ``.npy`` header
    only."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.namelist()
            key = next((k for k in NPZ_KEYS if f"{k}.npy" in members), None)
            if key is None:
                found = sorted(m[:-4] if m.endswith(".npy") else m for m in members)
                raise ProbabilityError(
                    f"{path!r} holds the arrays {found}, none named 'probabilities' (nnU-Net v2's "
                    "--save_probabilities) or 'softmax' (nnU-Net v1's --save_npz): save the probabilities "
                    "under one of these names"
                )
            with archive.open(f"{key}.npy") as f:
                version = np.lib.format.read_magic(f)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, fortran, dtype = read(f)
    except ProbabilityError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise ProbabilityError(f"cannot read {path!r} as a .npz: {e}{_HINT}") from e
    return key, tuple(int(s) for s in shape), np.dtype(dtype), bool(fortran)


def _as_float32(path: str, array: np.ndarray, copy: bool = False) -> np.ndarray:
    """``array`` as float32 (no copy when it is float32 already, unless ``copy``); ProbabilityError for a
    dtype that is no float, integer or bool."""
    if array.dtype.kind not in "biuf":
        raise ProbabilityError(
            f"{path!r} holds {array.dtype} values; a probability map holds floats in [0, 1] "
            "(or a 0/1 mask): save it as float32"
        )
    if array.dtype.kind in "iu":  # kept for the message of _check_values: integers are no probabilities
        _check_integers(path, array)
    return array.astype(np.float32, copy=copy)


def _check_integers(path: str, array: np.ndarray) -> None:
    """An integer map holds only 0 and 1 (a mask), else ProbabilityError with the values found."""
    if array.size == 0:
        return
    lo, hi = array.min(), array.max()
    if lo < 0 or hi > 1:
        raise ProbabilityError(
            f"{path!r} holds {array.dtype} values from {lo} to {hi}, outside [0, 1]: an integer image must "
            "hold only 0 and 1 (a mask); scale a map stored as integers to [0, 1] first (e.g. divide 0-255 by "
            "255) and save it as float32"
        )


def _check_values(path: str, array: np.ndarray) -> None:
    """ProbabilityError when the float ``array`` holds NaN, infinities or values outside [0, 1]."""
    if array.size == 0:
        return
    lo, hi = float(array.min()), float(array.max())  # NaN propagates, -inf and +inf are the extremes
    if not (np.isfinite(lo) and np.isfinite(hi)):
        nan = int(np.count_nonzero(np.isnan(array)))
        pos = int(np.count_nonzero(array == np.inf))
        neg = int(np.count_nonzero(array == -np.inf))
        raise ProbabilityError(
            f"{path!r} holds {nan:,} NaN, {pos:,} +inf and {neg:,} -inf values (of {array.size:,} voxels): "
            "a probability map must be finite; check the model's output (an overflow, a division by zero) "
            "and write the map again"
        )
    if lo < 0 or hi > 1:
        lo_text, hi_text = (_value_text(v, array.dtype) for v in (lo, hi))
        raise ProbabilityError(
            f"{path!r} holds values from {lo_text} to {hi_text}, outside [0, 1]: probabilities are needed; "
            "if these are logits, apply a sigmoid (one map per class) or a softmax (over the classes) first"
        )


def _value_text(value: float, dtype: np.dtype) -> str:
    """``value`` with every digit its ``dtype`` needs to be told apart from its neighbours (the shortest text that
    reads back as the same value: 1.0000001 of a float32, not 1), for messages.

    >>> _value_text(1.0000001192092896, np.dtype(np.float32)), _value_text(-4.0, np.dtype(np.float32))
    ('1.0000001', '-4')
    >>> _value_text(3e38, np.dtype(np.float32)), _value_text(0.05000000074505806, np.dtype(np.float32))
    ('3e+38', '0.05')
    """
    typed = dtype.type(value) if dtype.kind == "f" else np.float64(value)
    if typed != 0 and not 1e-4 <= abs(typed) < 1e16:
        return np.format_float_scientific(typed, unique=True, trim="-")
    return np.format_float_positional(typed, unique=True, trim="-")


def probability_case_id(name: str) -> str | None:
    """The case id of a probability file's name (``CASE.npz`` or an image file, not a DICOM SEG), else None.

    >>> probability_case_id("case_7.npz"), probability_case_id("case_7.nii.gz"), probability_case_id("plans.json")
    ('case_7', 'case_7', None)
    """
    if name.lower().endswith(".npz") and len(name) > 4:
        return name[:-4]
    if is_image_file(name) and not name.lower().endswith(".dcm"):
        return image_id(name)
    return None


def probability_file(folder, case_id: str) -> Path | None:
    """The probability file of case ``case_id`` in ``folder``: named like the GT (``CASE.nii.gz``,
    ``CASE.mha``, ``CASE.nrrd``, ``CASE.npz``, ...), or None when there is none.

    Parameters
    ----------
    folder : str or os.PathLike
        Its files are compared by case id (:func:`~ccmetrics.formats.io.image_id`; ``CASE.npz``: ``CASE``);
        hidden files are left out, subfolders are not searched. A broken symbolic link is returned, for
        :func:`read_probabilities` to say what is wrong with it.
    case_id : str
        The GT's :func:`~ccmetrics.formats.io.image_id`.

    Raises
    ------
    ProbabilityError
        When ``folder`` is no folder, or two files hold the case in a way that leaves the choice open,
        naming them. One ``CASE.npz`` beside one image ``CASE.nii.gz`` is nnU-Net's ``--save_probabilities``
        layout (the image is its segmentation): the ``.npz`` is taken.

    Notes
    -----
    Cost: one listing of ``folder`` per call.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for name in ("case_001.npz", "case_002.nii.gz", "case_0010.mha", "notes.txt"):
    ...     _ = (folder / name).write_bytes(b"")
    >>> probability_file(folder, "case_001").name, probability_file(folder, "case_003")
    ('case_001.npz', None)
    """
    root = Path(folder)
    if not root.is_dir():
        if root.exists():
            raise ProbabilityError(f"{os.fspath(folder)!r} is a file, not a folder: give the probability maps' folder")
        raise ProbabilityError(missing_file_message(root, "probability folder"))
    found = sorted(
        p
        for p in root.iterdir()
        if not p.name.startswith(".") and (p.is_file() or p.is_symlink()) and probability_case_id(p.name) == case_id
    )
    npz = [p for p in found if p.name.lower().endswith(".npz")]
    if len(found) == 2 and len(npz) == 1:  # nnU-Net: the segmentation beside the probabilities
        return npz[0]
    if len(found) > 1:
        raise ProbabilityError(
            f"{len(found)} files in {os.fspath(folder)!r} hold case {case_id!r}: "
            f"{', '.join(p.name for p in found)}; keep one probability map per case in the folder"
        )
    return found[0] if found else None
