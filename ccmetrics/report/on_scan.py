"""The scans under a case's thumbnails (``ccmetrics report --images``): what was asked for, and each channel cut.

:func:`open_scans` lists the scans' folder once (:class:`~ccmetrics.report.scans.ImageFolder`) with the channels'
names, windows and the report's memory limit (``max_image_memory``, formerly ``max_memory``: :func:`image_memory`);
:func:`on_image` reads each channel of one case once (:func:`~ccmetrics.report.scans.read_channel`), cuts it for
every thumbnail of every class of the case and lets the array go before the next channel is read: what is kept is
the slices (:class:`ChannelRows`), and why a channel, or the whole scan, is not drawn (:class:`Scan`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engine.memory import parse_memory
from . import geometry, thumbnails
from .scans import ImageFolder, mask_values, read_channel

if TYPE_CHECKING:
    from .model import WindowArg

__all__ = ["ChannelRows", "Scan", "Scans", "image_memory", "on_image", "open_scans"]


@dataclass
class Scans:
    """What ``images=`` asked for: the folder, the channels' names and windows, the evaluation's tolerance."""

    folder: ImageFolder
    names: Sequence[str] | None
    windows: dict[str, thumbnails.WindowSpec]
    tolerance_mm: float
    max_bytes: float | None = None  # None: evaluate's share of the memory available when a channel is read

    def window(self, label: str, code: str, minimum: float) -> thumbnails.WindowSpec:
        """The window asked for a channel (:func:`ccmetrics.report.thumbnails.asked_window`: its name, code, kind
        from its name or ``minimum``, or ``*``), the viewer's rule."""
        kind = thumbnails.channel_kind(label, minimum)
        return thumbnails.asked_window(self.windows, label, code, kind)


@dataclass
class ChannelRows:
    """One channel of a case, cut for every thumbnail: what is kept of it once its array is let go."""

    label: str
    geometries: dict[tuple, geometry.ThumbnailGeometry]
    minimum: float
    window: thumbnails.WindowSpec


@dataclass
class Scan:
    """What could be drawn of one case's scan: the channels cut for every thumbnail, the channels left out (each
    ``(label, why)``), and why nothing is drawn on the scan (None when at least one channel is); ``masks``: every
    channel was left out because it holds a mask, not a scan (:func:`~ccmetrics.report.scans.mask_values`)."""

    rows: list[ChannelRows] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    note: str | None = None
    masks: bool = False


def on_image(
    grid: Any,
    geometries: dict[tuple, geometry.ThumbnailGeometry],
    scans: Scans,
    case: str,
    on_channel: Callable[[str, str, Any, float], None] | None = None,
) -> Scan:
    """Every channel of a case's scan cut for the thumbnails of all its classes, one channel in memory at a
    time, each read once. ``grid``: the GT's (:meth:`ccmetrics.report.cases.CaseImages.grid`). ``on_channel``
    (the viewer's :class:`~ccmetrics.report.viewer.ScanPicker`) is called with each channel on the grid
    (``label, code, array, minimum``) before its array is let go.

    Each channel is drawn if it lies on the GT's grid, whatever the others do: a PET on another grid beside a CT on
    the GT's leaves the CT drawn, and the PET is left out with the reason (``left_out``). A channel that holds a mask
    (a few distinct integer values: ``--images`` given the GT's folder, say) is left out too, never drawn as grey
    levels. A case without a scan, or with no channel on the grid, is drawn on the empty background (``note`` says
    why; ``masks`` when every channel was a mask).
    """
    try:
        files = scans.folder.channels(case)
    except ValueError as exc:
        return Scan(note=str(exc))
    if not files:
        return Scan(note=f"no image found in {scans.folder.path} (looked for {scans.folder.expected(case)})")
    scan = Scan()
    n_masks = 0
    for file in files:
        label = file.label(scans.names)
        named = f"{file.code} ({label})" if file.code and label != file.code else label
        channel, problem = read_channel(
            file, grid, label=named, tolerance_mm=scans.tolerance_mm, max_bytes=scans.max_bytes
        )
        values = mask_values(channel.array) if channel is not None else None
        if values is not None:
            n_masks += 1
            shown = ", ".join(f"{v:g}" for v in values)
            problem = f"channel {named} holds a mask, not a scan: only {len(values)} distinct integer values ({shown})"
            channel = None
        if problem or channel is None:
            scan.left_out.append((label, problem or f"channel {named} could not be read"))
        else:
            if on_channel is not None:
                on_channel(label, file.code, channel.array, channel.minimum)
            cut = {key: geometry.with_image(g, channel.array) for key, g in geometries.items()}
            scan.rows.append(ChannelRows(label, cut, channel.minimum, scans.window(label, file.code, channel.minimum)))
        channel = None  # only the slices are kept: the array goes before the next channel is read
    if not scan.rows:  # no channel on the grid: the empty background, and why
        return Scan(note="; ".join(why for _, why in scan.left_out), masks=n_masks == len(files))
    return scan


def image_memory(max_image_memory: str | int | None, former: dict[str, Any], function: str) -> str | int | None:
    """The report's memory limit for reading one channel of a scan, given as ``max_image_memory=`` or by its former
    keyword ``max_memory=`` (kept for one release with a ``DeprecationWarning``: ``max_memory`` is a case's peak in
    :func:`ccmetrics.evaluate_dataset`). ``former``: the caller's other keywords; ``function``: its name, for the
    messages (the warning points at the code that called it).

    >>> image_memory("4G", {}, "write_report")
    '4G'

    Raises
    ------
    TypeError
        A keyword other than ``max_memory``, or both spellings.
    """
    unknown = sorted(set(former) - {"max_memory"})
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    if "max_memory" not in former:
        return max_image_memory
    if max_image_memory is not None:
        raise TypeError(
            f"{function}() got max_memory= and max_image_memory=: give max_image_memory= only (max_memory= is its "
            "former name)"
        )
    warnings.warn(
        f"{function}(max_memory=...) is deprecated: use {function}(max_image_memory=...) (the memory reading one "
        "channel of a scan may take; max_memory is a case's peak in evaluate_dataset)",
        DeprecationWarning,
        stacklevel=3,
    )
    return former["max_memory"]


def open_scans(
    images: os.PathLike | None, channel_names: Sequence[str] | None, window: WindowArg, max_image_memory: Any
) -> Scans | None:
    """The scans' folder, listed once, with the channels' names, windows and memory limit (None without images)."""
    if images is None:
        return None
    windows = thumbnails.window_specs(window)
    limit = None if max_image_memory is None else parse_memory(max_image_memory)
    return Scans(ImageFolder.scan(images), list(channel_names or []), windows, 1e-3, limit)
