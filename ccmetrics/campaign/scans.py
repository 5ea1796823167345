"""The scans of a data-set run (``evaluate_dataset(images=...)``, ``ccmetrics evaluate --images DIR``): which
metrics need them, each case's PET found before any case runs, and read on the case's grid while it runs.

The ``pet`` metrics and the ``suv_max`` detection rule read the scan (:mod:`ccmetrics.metrics.pet_case`); nothing
else does. :func:`check_scans_wanted` refuses, before anything is read, a run that needs scans without them or
is given scans that no metric reads. :func:`attach_scans` gives every case its PET: from a folder, nnU-Net's
channels ``CASE_0000``, ``CASE_0001``, ... (autoPET: CT ``_0000``, PET ``_0001``) or the one file ``CASE.nii.gz``
(:class:`ccmetrics.formats.scans.ImageFolder`), the channel chosen by ``pet_channel`` (``--pet-channel``), else
the one ``dataset.json``'s ``channel_names`` calls PET, else the only one
(:func:`ccmetrics.formats.scans.choose_channel`); or from a mapping ``{case: path, array or Image}``. A case
without its scan becomes an error row that names the files looked for; cases whose channels leave the choice open
stop the run at once (every case would fail the same way). :func:`read_case_scan` reads a case's scan once, as
float32, after its grid was checked from the header (:func:`ccmetrics.formats.scans.read_scan`): a scan on
another grid is the case's error row, never resampled. The values are taken as SUV (body weight).
Cost: one listing of the folder; per case, one header and one read of its PET.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._words import in_terms
from ..formats.io import Image, check_same_geometry
from ..formats.scans import ImageFolder, cannot_read, choose_channel, read_scan
from ..metrics.detection_rules import DetectionRule
from .options import CaseTask

__all__ = [
    "attach_scans",
    "check_scans_wanted",
    "looks_like_suv",
    "needs_scans",
    "read_case_scan",
    "SCAN_BYTES_PER_VOXEL",
]

#: what a case's scan adds to its peak memory while it is evaluated: the float32 scan
SCAN_BYTES_PER_VOXEL = 4


def looks_like_suv(scan: np.ndarray) -> bool:
    """Whether a scan's values can be SUV (body weight): none above ``ccmetrics.schema.SUV_CEILING`` (1000) nor
    below ``ccmetrics.schema.SUV_FLOOR`` (-100), NaN left out. A PET in Bq/ml reaches thousands, a CT's air is
    about -1000 HU: the case is flagged ``scan_not_suv`` (its values computed as given). One pass over the scan.

    >>> looks_like_suv(np.array([0.0, 2.5, 38.0])), looks_like_suv(np.array([-1000.0, 40.0])), looks_like_suv(
    ...     np.array([1200.0, 45000.0]))
    (True, False, False)
    """
    from .. import schema

    if scan.size == 0:
        return True
    with warnings.catch_warnings():  # an all-NaN scan: no value to judge (its lesions' NaN are their error)
        warnings.simplefilter("ignore", RuntimeWarning)
        high, low = np.nanmax(scan), np.nanmin(scan)
    if not (np.isfinite(high) and np.isfinite(low)):  # inf (padding) says nothing of the unit either
        finite = scan[np.isfinite(scan)]
        high, low = (finite.max(), finite.min()) if finite.size else (0.0, 0.0)
    return not (high > schema.SUV_CEILING or low < schema.SUV_FLOOR)


def needs_scans(metrics: Sequence[str], detection_rule: Any) -> bool:
    """Whether the metrics (names) or the detection rule read the scan: the ``pet`` metrics, the ``suv_max`` rule.

    >>> needs_scans(["dice", "pet"], None), needs_scans(["dice"], "suv_max"), needs_scans(["dice"], "iou:0.1")
    (True, True, False)
    """
    return (
        any(str(m).strip().lower() == "pet" for m in metrics) or DetectionRule.parse(detection_rule).kind == "suv_max"
    )


def check_scans_wanted(metrics: Sequence[str], detection_rule: Any, images: Any) -> None:
    """A ``ValueError`` before anything is read: metrics that read the scan without scans, or scans that nothing
    reads (they would be taken for nothing, as a silent no-op).

    >>> check_scans_wanted(["dice", "pet"], None, "images")
    >>> check_scans_wanted(["dice", "pet"], None, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the pet metrics read the PET scan: give the scans, images= (a folder or {case: scan}), one per case ...
    """
    reads = needs_scans(metrics, None)
    rule = DetectionRule.parse(detection_rule).kind == "suv_max"
    if images is None and (reads or rule):
        what = "the pet metrics read" if reads else "the detection rule suv_max reads"
        raise ValueError(
            f"{what} the PET scan: give the scans, {in_terms('--images DIR', 'images= (a folder or {case: scan})')}, "
            "one per case named like its GT (nnU-Net's CASE_0000.nii.gz, CASE_0001.nii.gz, ... with --pet-channel, "
            "or CASE.nii.gz)"
        )
    if images is not None and not (reads or rule):
        raise ValueError(
            "the scans (--images, images=) are read by the pet metrics and the suv_max detection rule only: add pet "
            "to --metrics (metrics=[..., 'pet']) or leave the scans out"
        )


def attach_scans(
    tasks: list[CaseTask],
    images: Any,
    *,
    pet_channel: int | None = None,
    channel_names: Sequence[str] | None = None,
) -> None:
    """Give each task its PET (``task.image``), or an ``error`` that names what was looked for.

    Parameters
    ----------
    tasks : list of CaseTask
        The run's cases (changed in place; a task with an error already keeps it).
    images : path or mapping
        A folder of scans, or ``{case: path, array or Image}``.
    pet_channel : int, optional
        The PET's channel number (``--pet-channel``) in a folder of nnU-Net channels.
    channel_names : sequence of str, optional
        The channels' names by number (``dataset.json``'s ``channel_names``): the one named PET is taken.

    Raises
    ------
    ValueError
        A case has several channels and none is chosen (``--pet-channel`` names it); the folder does not exist or
        holds no image; ``pet_channel`` with a mapping of scans.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for name in ["a_0000.nii.gz", "a_0001.nii.gz", "b_0000.nii.gz"]:
    ...     _ = (folder / name).write_bytes(b"")
    >>> tasks = [CaseTask("a", "gt/a.nii.gz"), CaseTask("b", "gt/b.nii.gz"), CaseTask("c", "gt/c.nii.gz")]
    >>> attach_scans(tasks, folder, pet_channel=1)
    >>> Path(tasks[0].image).name
    'a_0001.nii.gz'
    >>> tasks[1].error
    "case 'b' has no channel 1 (--pet-channel 1); its channels: 0000 (nnU-Net's b_0001 is looked for)"
    >>> tasks[2].error  # doctest: +ELLIPSIS
    "no scan for case 'c' in ...: expected c_0000.nii.gz, c_0001.nii.gz, ... or c.nii.gz"
    """
    if isinstance(images, Mapping):
        if pet_channel is not None:
            raise ValueError("pet_channel (--pet-channel) picks a channel in a folder of scans, not in a mapping")
        given = {str(k): v for k, v in images.items()}  # the cases of a mapping are named str(key)
        for task in tasks:
            if task.error:
                continue
            scan = given.get(task.case)
            if scan is None:
                task.error = f"no scan for case {task.case!r} among the images given (images=)"
            else:
                task.image = scan
        return
    folder = ImageFolder.scan(images)
    open_choice = None
    for task in tasks:
        if task.error:
            continue
        channels = []
        try:
            channels = folder.channels(task.case)
            if not channels:
                task.error = f"no scan for case {task.case!r} in {folder.path}: expected {folder.expected(task.case)}"
                continue
            chosen = choose_channel(
                channels, task.case, channel=pet_channel, names=channel_names, python="PairingOptions(pet_channel={})"
            )
            task.image = str(chosen.path)
        except ValueError as exc:
            if pet_channel is None and len(channels) > 1:
                open_choice = open_choice or exc
            task.error = str(exc)
    if open_choice is not None:  # every case would fail alike: say it once, before any case runs
        raise open_choice


def read_case_scan(item: Any, gt: Image, gt_known: bool, *, tolerance_mm: float, max_bytes: float | None) -> np.ndarray:
    """A case's scan as float32 on its GT's grid (the grid the case is evaluated on), read once.

    ``item``: a file (checked from its header first, :func:`ccmetrics.formats.scans.read_scan`), an
    :class:`~ccmetrics.formats.io.Image` (its geometry checked against the GT's when both are known) or an array
    (its shape checked).

    Raises
    ------
    ValueError
        Another grid (shape, spacing, origin or direction, with both values), an unreadable file, too much memory.
    """
    from ..formats.grids import on_grid
    from ..metrics.pet_case import as_scan

    if isinstance(item, (str, os.PathLike)):
        # masks given as arrays have no geometry: the scan's own grid stands in for it, its shape checked
        reference = gt if gt_known else Image(gt.array, *_own_grid(Path(item)))
        item = read_scan(item, reference, name=Path(item).name, tolerance_mm=tolerance_mm, max_bytes=max_bytes)
    elif isinstance(item, Image) and gt_known:
        problem = check_same_geometry(gt, item, atol_mm=tolerance_mm, names=("gt", "image"))
        if problem:  # the same lattice in another axis order is reoriented, as a file is (read_scan)
            try:
                item = on_grid(item, gt, atol_mm=tolerance_mm)
            except ValueError:
                raise ValueError(f"the scan is not on the GT's grid: {problem}") from None
    array = item.array if isinstance(item, Image) else item
    try:
        return as_scan(array, gt.array.shape)
    except TypeError as exc:  # a bool or complex scan: the input's problem, the case's error row
        raise ValueError(str(exc)) from None


def _own_grid(path: Path) -> tuple[tuple[float, ...], np.ndarray]:
    """A scan file's spacing and affine, from its header (a DICOM series: its files' headers)."""
    from ..formats.dicom import series_grid
    from ..formats.io import read_grid

    try:
        grid = series_grid(path) if path.is_dir() else read_grid(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"the scan: {cannot_read(path, exc)}") from None
    return tuple(grid.spacing), grid.affine
