"""Pairing: the cases of a data set, from two folders of image files or from the pairs given.

:func:`pair_folders` pairs the image files of a GT folder and a predictions folder by case id (the file name
without its extension and an optional suffix); :func:`tasks_from_pairs` takes ``{case: (gt, pred)}`` or
``[(case, gt, pred), ...]``. Nothing is dropped in silence: every image file of either folder becomes a
:class:`~ccmetrics.campaign.options.CaseTask` (a GT without prediction one with ``pred=None``, evaluated as
an empty prediction and flagged; a prediction without GT, or a case id given by two files, one whose
``error`` says so), and the files that are not images are returned as ignored (the result's
``ignored_files``). No image is read here.

A prediction named differently from its GT (``case_003_pred.nii.gz`` beside ``case_003.nii.gz``) is found by
:func:`suffix_hint`: the suffix that, removed, would pair the most unpaired files, and the option that removes it.
Cost: each unpaired id's prefixes looked up in a set of the other folder's unpaired ids, O(total length of the ids).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .._words import count, in_terms
from ..formats.dicom import holds_dicom
from ..formats.io import image_id, is_image_file
from .options import CaseTask, _PathLike

__all__ = ["SuffixHint", "pair_folders", "suffix_hint", "tasks_from_pairs"]


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
    _refuse_files(gt_dir, pred_dir)
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
                f"in {gt_dir}; check {in_terms('--gt-suffix/--pred-suffix', 'gt_suffix=/pred_suffix=')})"
            )
        tasks.append(task)
    hint = suffix_hint(tasks)
    if hint is not None:  # the unpaired files of that suffix: the option that pairs them, in their error
        for task in tasks:
            if task.case in hint.cases and task.error.startswith("no ground truth"):
                task.error = (
                    f"no ground truth for this prediction: its name ends in {hint.suffix!r}, "
                    f"{hint.option_words()} pairs it with the GT case {hint.cases[task.case]!r}"
                )
    return tasks, gt_ignored + pred_ignored


def _refuse_files(gt_dir: _PathLike, pred_dir: _PathLike) -> None:
    """Two files given where two folders are expected: one error that names them (both at once)."""
    files = [
        (in_terms(what, python), folder)
        for what, python, folder in (("GT_DIR", "gt_dir", gt_dir), ("PRED_DIR", "pred_dir", pred_dir))
        if Path(folder).is_file()
    ]
    if not files:
        return
    named = " and ".join(f"{what} {folder}" for what, folder in files)
    one_case = in_terms(
        "to evaluate one case, put each of its files in a folder of its own",
        "for one case, call ccmetrics.evaluate(gt=..., pred=...) on the two files' arrays",
    )
    one = len(files) == 1
    raise NotADirectoryError(
        f"{named} {'is a file' if one else 'are files'}, not {'a folder' if one else 'folders'}: "
        f"the GT and the predictions are two folders of image files, paired by file name (e.g. "
        f"{Path(files[0][1]).parent}); {one_case}"
    )


class SuffixHint(NamedTuple):
    """A suffix that pairs unpaired files: found by :func:`suffix_hint`."""

    #: ``"pred"`` (remove it from the predictions' names) or ``"gt"``
    side: str
    #: the text removed from the end of the names, e.g. ``"_pred"``
    suffix: str
    #: unpaired case id (as the folders have it now) -> the case id it pairs with
    cases: dict[str, str]

    def option(self) -> str:
        """The command line's option that pairs them, e.g. ``--pred-suffix _pred``."""
        import shlex

        return f"--{self.side}-suffix {shlex.quote(re.escape(self.suffix))}"

    def option_words(self) -> str:
        """The option in the caller's terms (``ccmetrics._words.in_terms``)."""
        return in_terms(self.option(), f"{self.side}_suffix={re.escape(self.suffix)!r}")

    def sentence(self) -> str:
        """What was found, in one sentence: how many files the suffix pairs, one of them, and the option.

        >>> SuffixHint("pred", "_pred", {"case_3_pred": "case_3", "case_4_pred": "case_4"}).sentence()
        "2 unpaired predictions end in '_pred' (case_3_pred beside the GT case_3): pred_suffix='_pred' pairs them"
        """
        (example, stem), n = next(iter(self.cases.items())), len(self.cases)
        which, other = ("prediction", "the GT") if self.side == "pred" else ("GT file", "the prediction")
        return (
            f"{count(n, 'unpaired ' + which)} {'ends' if n == 1 else 'end'} in {self.suffix!r} ({example} beside "
            f"{other} {stem}): {self.option_words()} pairs {'it' if n == 1 else 'them'}"
        )


def suffix_hint(tasks: Iterable[CaseTask]) -> SuffixHint | None:
    """The suffix whose removal would pair the most files that are unpaired: a prediction whose id is a GT's id and
    a suffix (``case_003_pred`` beside ``case_003``: ``--pred-suffix _pred``), or a GT whose id is a prediction's
    and a suffix. None when no suffix pairs any.

    Each unpaired id is matched to the longest id of the other side that begins it (``case_10_pred`` to
    ``case_10``, not ``case_1``), by looking up its prefixes in a set: cost O(total length of the unpaired ids).

    Examples
    --------
    >>> from ccmetrics.campaign.options import CaseTask
    >>> tasks = [CaseTask("case_1", "g1", None), CaseTask("case_10", "g10", None),
    ...          CaseTask("case_10_pred", None, "p10"), CaseTask("case_1_pred", None, "p1"), CaseTask("x", "gx", "px")]
    >>> hint = suffix_hint(tasks)
    >>> hint.side, hint.suffix, hint.cases, hint.option()
    ('pred', '_pred', {'case_10_pred': 'case_10', 'case_1_pred': 'case_1'}, '--pred-suffix _pred')
    >>> suffix_hint([CaseTask("a", "ga", "pa")]) is None
    True

    Never a suffix that would give two predictions one id (``case0`` and ``case0_pred`` would both be ``case0``):

    >>> suffix_hint([CaseTask("case0", "g0", "p0"), CaseTask("case0_pred", None, "p0b"),
    ...              CaseTask("case1", "g1", None), CaseTask("case1_pred", None, "p1")]) is None
    True
    """
    tasks = list(tasks)
    lone_gt = {t.case for t in tasks if t.gt is not None and t.pred is None and not t.error}
    lone_pred = {t.case for t in tasks if t.pred is not None and t.gt is None}
    best: SuffixHint | None = None
    for side, longer, shorter in (("pred", lone_pred, lone_gt), ("gt", lone_gt, lone_pred)):
        found: dict[str, tuple[str, str]] = {}
        for case in sorted(longer):
            stem = next((case[:k] for k in range(len(case) - 1, 0, -1) if case[:k] in shorter), None)
            if stem is not None:
                found[case] = (stem, case[len(stem) :])
        # a suffix whose removal would give a file the id of another file on its side would break a pair that
        # works now (``case0`` beside ``case0_pred``): never suggested
        ids = {t.case for t in tasks if (t.pred if side == "pred" else t.gt) is not None}
        counts = Counter(
            suffix
            for _, suffix in found.values()
            if not any(i.endswith(suffix) and i[: len(i) - len(suffix)] in ids for i in ids)
        )
        if not counts:
            continue
        suffix, n = min(counts.items(), key=lambda item: (-item[1], item[0]))
        if best is None or n > len(best.cases):
            best = SuffixHint(side, suffix, {c: stem for c, (stem, s) in found.items() if s == suffix})
    return best


def _scan(
    folder: _PathLike, suffix: str | None, name: str, file_ending: str | None = None
) -> tuple[dict[str, list[str]], list[str]]:
    folder = Path(folder)
    if not folder.is_dir():
        what = in_terms({"gt": "GT_DIR", "pred": "PRED_DIR"}.get(name, name), f"{name} folder")
        if folder.is_file():
            raise NotADirectoryError(
                f"{what} {folder} is a file, not a folder: give the folder that holds the "
                f"{'GT images' if name == 'gt' else 'predictions'}, one file per case (e.g. {folder.parent})"
            )
        raise NotADirectoryError(f"{what} {folder} does not exist")
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
