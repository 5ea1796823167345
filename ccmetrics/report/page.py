"""The report page written: :func:`~ccmetrics.report.page.write_report` builds the model and renders it in one file.

:func:`~ccmetrics.report.model.build_model` (:mod:`~ccmetrics.report.model`) turns a result folder into plain dicts
and lists (everything the page shows), :func:`~ccmetrics.report.render.render_html` (:mod:`~ccmetrics.report.render`)
fills ``templates/report.html.j2`` with them, :func:`write_report` does both and writes one self-contained file:
images as base64 PNG data URIs, style and script inline, no request to a server or the internet. What it wrote, and
the line the command prints, is a :class:`ReportInfo`.

The images of every evaluated case are read again (to find the false positives and their regions). Voronoi regions
are found only for the voxels needed (the false positives and the thumbnails' slices), exactly as
:func:`ccmetrics.voronoi_partition` would label them. The scans are read only for the cases drawn, one channel at a
time; only their slices are kept (in a multi-class evaluation, once per class section of the case).

The names this module held before it was split (``build_model``, ``render_html``, ``fmt``, ``anchor``,
``sort_value``, ``SEGMENTED_FROM_MAP``, ...) are still importable from it, the same objects.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import model as _model
from . import render as _render
from . import viewer as _viewer
from .model import AGGREGATIONS, PLOT_CAPTIONS, WindowArg, build_model
from .model import MAP_UNREADABLE as MAP_UNREADABLE  # the former page's names, re-exported
from .model import SEGMENTED_FROM_MAP as SEGMENTED_FROM_MAP
from .on_scan import image_memory
from .render import TEMPLATES as TEMPLATES
from .render import _count, anchor, fmt, render_html, sort_value

__all__ = [
    "AGGREGATIONS",
    "DEFAULT_MAX_CASES",
    "PLOT_CAPTIONS",
    "ReportInfo",
    "anchor",
    "build_model",
    "fmt",
    "render_html",
    "sort_value",
    "write_report",
]

#: thumbnails are drawn for this many cases unless told otherwise (the command's ``--max-cases``)
DEFAULT_MAX_CASES = 20


@dataclass
class ReportInfo:
    """What :func:`write_report` wrote.

    Attributes
    ----------
    path : Path
    size_bytes : int
    n_cases : int
        Case (and class) rows of ``per_case.csv``.
    n_thumbnail_cases : int
        Cases drawn with thumbnails.
    n_thumbnails : int
    n_lesions, n_false_positives : int
        Rows of the lesion finder (false positives only of cases whose images were read).
    unreadable : list of str
        Cases whose images could not be read, with the reason.
    images : Path or None
        The folder of the scans the thumbnails are drawn on (``images=``), None: the empty background.
    n_on_image : int
        Cases whose thumbnails are drawn on the scan.
    channels : list of str
        The channels drawn, in the order of their rows (their names, or codes such as ``0000``).
    not_on_image : list of str
        Cases with thumbnails drawn on the empty background although ``images`` was given, each with
        the reason: no image found, or no channel on the GT's grid (shape, spacing, origin or direction
        differs from the GT's) or readable.
    channels_left_out : list of str
        Cases drawn on the scan with one or more of its channels left out, each with the reason (that channel on
        another grid, or unreadable): the other channels are drawn.
    n_viewers : int
        Case (and class) sections with a viewer (:mod:`ccmetrics.report.viewer`).
    viewer_folder : Path or None
        The folder beside the page that holds the viewers' data (``viewer_data="folder"``); None: in the page.
    images_masks : str or None
        Why ``images`` was not drawn on: it holds masks, not scans (it is the GT's or the prediction's folder, or
        every image read from it holds a few distinct integer values); None when it was (or none was given).
    n_fp_candidates : int or None
        False-positive candidates of the probability maps listed in the lesion finder; None for a folder
        without probability maps (no ``per_candidate.csv``).
    """

    path: Path
    size_bytes: int
    n_cases: int
    n_thumbnail_cases: int
    n_thumbnails: int
    n_lesions: int
    n_false_positives: int
    unreadable: list[str] = field(default_factory=list)
    images: Path | None = None
    n_on_image: int = 0
    channels: list[str] = field(default_factory=list)
    not_on_image: list[str] = field(default_factory=list)
    n_fp_candidates: int | None = None
    channels_left_out: list[str] = field(default_factory=list)
    n_viewers: int = 0
    viewer_folder: Path | None = None
    images_masks: str | None = None

    @classmethod
    def of(cls, out: Path, model: dict[str, Any]) -> ReportInfo:
        """What the page written to ``out`` from ``model`` (:func:`~ccmetrics.report.model.build_model`) holds."""
        return cls(
            out,
            out.stat().st_size,
            len(model["cases"]),
            model["n_drawn"],
            sum(bool(r["thumb"]) for r in model["finder"]),
            sum(r["kind"] == "lesion" for r in model["finder"]),
            sum(r["kind"] == "false_positive" for r in model["finder"]),
            [f"{c['title']}: {c['problem']}" for c in model["unreadable"]],
            Path(model["images"]) if model["images"] is not None else None,
            model["n_on_image"],
            model["channels"],
            [f"{c['title']}: {c['image_note']}" for c in model["image_notes"]],
            n_fp_candidates=None if model["candidate_counts"] is None else model["candidate_counts"]["fp_candidates"],
            channels_left_out=[f"{c['title']}: {c['channel_note']}" for c in model["channel_notes"]],
            n_viewers=model["n_viewers"],
            images_masks=(
                f"--images {model['images_masks']['path']} holds masks, not scans: {model['images_masks']['why']}; "
                "the thumbnails are drawn without scans"
                if model.get("images_masks")
                else None
            ),
        )

    def __str__(self) -> str:
        size = self.size_bytes
        human = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
        text = (
            f"Wrote {self.path} ({human}): {_count(self.n_cases, 'case')}, thumbnails for "
            f"{self.n_thumbnail_cases} ({_count(self.n_thumbnails, 'image')}), {_count(self.n_lesions, 'lesion')}, "
            f"{_count(self.n_false_positives, 'false positive')}"
        )
        if self.n_fp_candidates is not None:
            text += f", {_count(self.n_fp_candidates, 'false-positive candidate')} of the probability maps"
        if self.unreadable:
            text += f"; images of {_count(len(self.unreadable), 'case')} could not be read:\n  " + "\n  ".join(
                self.unreadable
            )
        if self.images_masks:
            text += f"\n{self.images_masks}"
        if self.images is not None:
            channels = f" (channels {', '.join(self.channels)})" if self.channels else ""
            text += f"\nThumbnails drawn on the images in {self.images}: {_count(self.n_on_image, 'case')}{channels}"
            if self.not_on_image:
                text += f"; {_count(len(self.not_on_image), 'case')} on the empty background:\n  " + "\n  ".join(
                    self.not_on_image
                )
            reasons = {line.partition(": ")[2] for line in self.channels_left_out}
            if len(self.channels_left_out) > 1 and len(reasons) == 1 and len(self.channels_left_out) == self.n_on_image:
                text += f"\nChannels left out (the other channels drawn) in every case: {reasons.pop()}"
            elif self.channels_left_out:
                text += (
                    f"\nChannels left out (the other channels drawn) in {_count(len(self.channels_left_out), 'case')}:"
                    + "".join(f"\n  {line}" for line in self.channels_left_out)
                )
        if self.viewer_folder is not None:
            text += f"\nViewer data in {self.viewer_folder}: keep this folder beside the page"
        return text


def __getattr__(name: str) -> Any:
    """The former page's other names (its private helpers, now in :mod:`~ccmetrics.report.model` and
    :mod:`~ccmetrics.report.render`), answered from there: ``page._case_entry`` is ``model._case_entry``."""
    for module in (_model, _render):
        if name in vars(module):
            return vars(module)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def write_report(
    result_dir: os.PathLike,
    out: os.PathLike,
    *,
    max_cases: int | None = None,
    image_root: os.PathLike | None = None,
    panel_px: int = 120,
    title: str | None = None,
    images: os.PathLike | None = None,
    channel_names: Sequence[str] | None = None,
    window: WindowArg = None,
    max_image_memory: str | int | None = None,
    with_viewer: bool = True,
    viewer_data: str = "auto",
    **former: Any,
) -> ReportInfo:
    """Write the per-lesion report of a ``ccmetrics evaluate`` output folder as one self-contained HTML file.

    Parameters
    ----------
    result_dir : path
        Folder written by ``ccmetrics evaluate`` (``per_case.csv``, ``per_component.csv``,
        ``summary.json``, ``plots/``).
    out : path
        The HTML file to write (its folder is created).
    max_cases : int, optional
        Draw thumbnails for this many cases, those with the worst CC value of the primary metric
        (Dice if evaluated) first; None: every case (the command's default is 20). Every case and
        lesion is listed in the tables whatever this number.
    image_root : path, optional
        Folder that relative paths in ``per_case.csv`` start from (default: tried from the current
        folder, the result folder and its parent).
    panel_px : int
        Size of one thumbnail panel in pixels.
    title : str, optional
    images : path, optional
        Folder of the scans to draw the thumbnails on (default: none, the empty background). A case
        ``CASE`` has the channels ``CASE_0000``, ``CASE_0001``, ... (nnU-Net's naming; e.g. CT and PET),
        or the one channel ``CASE``, with any extension of :data:`ccmetrics.formats.io.IMAGE_EXTENSIONS`. Each
        channel is one row of panels. Each channel is drawn only where it lies on its GT's voxel grid (shape,
        spacing, origin and direction, checked as the evaluation checks a prediction): a channel on another grid,
        or unreadable, is left out with a note saying why (the case's other channels are drawn;
        ``ReportInfo.channels_left_out``); a case without a scan, or none of whose channels lies on the grid, is
        drawn on the empty background with a note saying why (``ReportInfo.not_on_image``).
    channel_names : sequence of str, optional
        Names of the channels in the order of their numbers (``["CT", "PET"]``); default: the codes
        (``0000``, ``0001``; ``image`` for a file named by the case id).
    window : str, (level, width) or mapping, optional
        How a channel's values become grey (:mod:`ccmetrics.report.thumbnails`): ``"auto"`` (default: a channel
        with values below -500 is a CT, in the soft-tissue window; any other from 0 to the crop's maximum), ``"ct"``,
        ``"range"``, ``(level, width)``, ``"-600/1500"``, ``"LOW:HIGH"`` (``"0:10"``) or a CT preset (``"soft"``,
        ``"lung"``, ``"bone"``, ``"brain"``); a mapping gives one per channel name (any case), code or kind
        (``{"PET": "range", "*": "ct"}``, ``{"pet": "0:10", "ct": "lung"}``), one rule for the thumbnails and the
        viewer (:func:`ccmetrics.report.thumbnails.asked_window`). The viewer's window is fixed for every case: the
        one asked for, else SUV 0-10 for a PET and the soft-tissue window for a CT
        (:func:`ccmetrics.report.viewer.viewer_window`).
    max_image_memory : str or int, optional
        The most memory reading one channel of a scan may take (``"4G"``, bytes, as
        :func:`ccmetrics.engine.memory.parse_memory` reads it), judged from its header before it is read; a channel
        over it is left out with a note (default: the share of the available memory that ``ccmetrics evaluate``
        takes, :data:`ccmetrics.engine.memory.DEFAULT_MEMORY_FRACTION`). Formerly ``max_memory=``, still taken
        for one release with a ``DeprecationWarning`` (``max_memory`` is a case's peak in ``evaluate_dataset``).
    with_viewer : bool
        Give each drawn case a viewer (:mod:`ccmetrics.report.viewer`): a coronal and a sagittal maximum-intensity
        projection and three planes through a cursor, every lesion and predicted component coloured by its outcome,
        on the PET (one fixed window for every case: SUV 0-10, or ``window={"pet": "0:10"}``), else the CT, else on
        black; at most about 2 MB a case. Default True.
    viewer_data : {"auto", "inline", "folder"}
        Where the viewers' data go (:func:`ccmetrics.report.viewer.place_data`): in the page (``inline``), or in
        the folder beside it (``folder``: ``report_files/`` for ``report.html``, one script a case, loaded when
        its viewer is opened, also from a page opened as a file; keep the folder with the page); ``auto``
        (default): inline up to 50 MB of viewer data, beside the page beyond.

    Returns
    -------
    ReportInfo
        The path, its size and what it holds (``str(info)`` is the line the command prints).

    Raises
    ------
    FileNotFoundError
        No ``per_case.csv`` in ``result_dir``, or ``images`` is not a folder.
    ValueError
        ``images`` holds no image file, or ``window`` or ``max_image_memory`` cannot be read.
    TypeError
        ``max_memory=`` beside ``max_image_memory=``.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from ccmetrics import evaluate_dataset
    >>> from ccmetrics.formats.io import save_image
    >>> root = Path(tempfile.mkdtemp())
    >>> for sub in ("gt", "pred", "images"):
    ...     (root / sub).mkdir()
    >>> gt = np.zeros((24, 24, 8), np.uint8); gt[8:14, 8:14, 2:6] = 1
    >>> save_image(root / "gt" / "a.nii.gz", gt, spacing=(2.0, 2.0, 3.0))
    >>> save_image(root / "pred" / "a.nii.gz", np.roll(gt, 1, 0), spacing=(2.0, 2.0, 3.0))
    >>> pet = np.where(gt > 0, 8.0, 1.0).astype(np.float32)
    >>> save_image(root / "images" / "a_0000.nii.gz", pet, spacing=(2.0, 2.0, 3.0))
    >>> _ = evaluate_dataset(root / "gt", root / "pred", ["dice"], progress=False).write(root / "out", plots=False)
    >>> info = write_report(root / "out", root / "report.html", images=root / "images", channel_names=["PET"])
    >>> info.n_on_image, info.channels, info.not_on_image
    (1, ['PET'], [])
    """
    model = build_model(
        result_dir,
        max_cases=max_cases,
        image_root=image_root,
        panel_px=panel_px,
        title=title,
        images=images,
        channel_names=channel_names,
        window=window,
        max_image_memory=image_memory(max_image_memory, former, "write_report"),
        with_viewer=with_viewer,
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    mode = _viewer.place_data(model["cases"], out, viewer_data)
    html = render_html(model)
    out.write_text(html, encoding="utf-8")
    info = ReportInfo.of(out, model)
    if mode == "folder" and info.n_viewers:
        info.viewer_folder = _viewer.data_folder(out)
    return info
