"""Pairing: the cases of a data set, from two folders of image files or from the pairs given.

:func:`pair_folders` pairs the image files of a GT folder and a predictions folder by case id (the file name
without its extension and an optional suffix); :func:`tasks_from_pairs` takes ``{case: (gt, pred)}`` or
``[(case, gt, pred), ...]``. Nothing is dropped in silence: every image file of either folder becomes a
:class:`~ccmetrics.campaign.options.CaseTask` (a GT without prediction one with ``pred=None``, evaluated as
an empty prediction and flagged; a prediction without GT, or a case id given by two files, one whose
``error`` says so), and the files that are not images are returned as ignored (the result's
``ignored_files``). No image is read here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..formats.dicom import holds_dicom
from ..formats.io import image_id, is_image_file
from .options import CaseTask, _PathLike

__all__ = ["pair_folders", "tasks_from_pairs"]


def pair_folders(
    gt_dir: _PathLike,
    pred_dir: _PathLike,
    *,
    gt_suffix: str | None = None,
    pred_suffix: str | None = None,
    file_ending: str | None = None,
) -> tuple[list[CaseTask], list[str]]:
    """Pair the image files of two folders by case id.

    The case id is the file name minus its extension (``.nii.gz``, ``.nii``,
    ``.mha``, ``.mhd``, ``.nrrd``, ``.nhdr``, ``.dcm``: a DICOM SEG; a sub-folder holding DICOM
    files is a case too, named by the folder, read as the one SEG in it) minus an optional trailing
    ``gt_suffix`` / ``pred_suffix`` (a regular expression, e.g. ``"_0000"`` or
    ``"_pred"``). ``file_ending`` (nnU-Net's, e.g. ``".nii.gz"``): only files with this
    ending are paired; other files are listed as ignored.

    Returns
    -------
    tasks : list of CaseTask
        Sorted by case id: every GT file (with ``pred=None`` when its
        prediction is missing), every prediction without GT (``gt=None``),
        and an ``error`` task for an id given by two files of one folder.
    ignored : list of str
        Files that are not images (e.g. nnU-Net's ``plans.json``, an ``.mhd``'s
        ``.raw``), never evaluated, reported so that nothing disappears silently.

    Raises
    ------
    NotADirectoryError
        A folder does not exist.
    ValueError
        The GT folder holds no image file, or a suffix is not a valid regular expression.
    """
    for name, suffix in (("gt_suffix", gt_suffix), ("pred_suffix", pred_suffix)):
        try:
            re.compile(suffix or "")
        except re.error as exc:
            raise ValueError(f"{name} {suffix!r} is not a valid regular expression: {exc}") from None
    gt_files, gt_ignored = _scan(gt_dir, gt_suffix, "gt", file_ending)
    pred_files, pred_ignored = _scan(pred_dir, pred_suffix, "pred", file_ending)
    if not gt_files:
        endings = file_ending or ".nii.gz, .nii, .mha, .mhd, .nrrd or .nhdr"
        raise ValueError(f"no image file in the GT folder {gt_dir}; expected names ending in {endings}")
    tasks = []
    for case in sorted(set(gt_files) | set(pred_files)):
        gts, preds = gt_files.get(case, []), pred_files.get(case, [])
        task = CaseTask(case, gts[0] if gts else None, preds[0] if preds else None)
        if len(gts) > 1 or len(preds) > 1:
            dup = gts if len(gts) > 1 else preds
            task.error = f"case id {case!r} is given by several files: {', '.join(Path(p).name for p in dup)}"
        elif not gts:
            task.error = (
                f"no ground truth for this prediction (expected a GT file with case id {case!r} "
                f"in {gt_dir}; check --gt-suffix/--pred-suffix)"
            )
        tasks.append(task)
    return tasks, gt_ignored + pred_ignored


def _scan(
    folder: _PathLike, suffix: str | None, name: str, file_ending: str | None = None
) -> tuple[dict[str, list[str]], list[str]]:
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{name} folder {folder} does not exist or is not a folder")
    files: dict[str, list[str]] = {}
    ignored = []
    for path in sorted(folder.iterdir()):
        if path.is_dir():
            if holds_dicom(path) and not path.name.startswith("."):  # a case as a folder of DICOM (one SEG in it)
                files.setdefault(image_id(path.name + ".dcm", suffix), []).append(str(path))
            else:  # not searched: listed, so that files in it do not vanish unnoticed
                ignored.append(str(path) + os.sep)
            continue
        wanted = file_ending is None or path.name.endswith(file_ending)
        if wanted and is_image_file(path) and not path.name.startswith("."):  # hidden: e.g. macOS "._case.nii.gz"
            files.setdefault(image_id(path, suffix), []).append(str(path))
        else:
            ignored.append(str(path))
    return files, ignored


def tasks_from_pairs(pairs: Mapping[str, tuple[Any, Any]] | Iterable[tuple[str, Any, Any]]) -> list[CaseTask]:
    """Tasks from ``{case: (gt, pred)}`` or ``[(case, gt, pred), ...]``; gt/pred are paths, arrays or Images."""
    items = pairs.items() if isinstance(pairs, Mapping) else ((c, (g, p)) for c, g, p in pairs)
    tasks = [CaseTask(str(case), gt, pred) for case, (gt, pred) in items]
    cases = [t.case for t in tasks]
    if len(set(cases)) != len(cases):
        raise ValueError("case ids must be unique")
    for t in tasks:
        if t.gt is None:
            t.error = "no ground truth for this prediction"
    return tasks
