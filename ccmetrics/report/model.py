"""The report page's model: a result folder's tables, images and thumbnails as the plain data the template shows.

:func:`build_model` reads a ``ccmetrics evaluate`` output folder (:func:`~ccmetrics.report.data.read_result_folder`)
and turns it into plain dicts and lists: the summary and plots, every case (ranked worst first, failed cases last)
with its metrics, lesions and false positives, the lesion finder, and with probability maps the detection section
and candidates (:mod:`~ccmetrics.report.detection`). Thumbnails (base64 PNG data URIs,
:mod:`~ccmetrics.report.thumbnails`) are drawn for the ``max_cases`` worst cases; :mod:`~ccmetrics.report.render`
fills the template with the model, :func:`~ccmetrics.report.page.write_report` does both. Cost: every evaluated
case's images are read again (its false positives and Voronoi regions), each case's files once for all its classes.

With ``images=IMAGE_DIR`` (``ccmetrics report --images``) the thumbnails are drawn on the scans: per
drawn case, its mask files are read once for all its classes, each class's crops cut and its masks let go,
then each channel of the scan is read once (:class:`~ccmetrics.report.scans.ImageFolder`,
:func:`~ccmetrics.report.scans.read_channel`), its slices cut for every thumbnail of every class of the case
(:func:`~ccmetrics.report.geometry.with_image`) and the channel let go before the next one is read: at
most one channel of one case is in memory. A thumbnail gets one row per channel, with the channel's
window (:func:`~ccmetrics.report.thumbnails.choose_window`). Each channel is checked on its own: a channel on
another voxel grid than its GT, or unreadable, is left out (a CT on the GT's grid is drawn beside a PET that is not),
with a note on the page saying why, counted in :class:`~ccmetrics.report.page.ReportInfo` (``channels_left_out``); a
case whose scan is missing, or none of whose channels can be drawn, is drawn on the empty background, with a note
saying why, counted in ``not_on_image``.

Where each lesion and false positive lies is written under its thumbnail (:class:`~ccmetrics.report.cases.Position`):
its centroid in patient coordinates, RAS+ mm (x to the patient's right, y anterior, z superior: the
convention of nibabel and 3D Slicer, and exactly the numbers of ``per_prediction.csv``'s ``centroid_x_mm``,
``centroid_y_mm``, ``centroid_z_mm``), computed from the GT's affine; and the voxel the thumbnail's planes go
through (the centroid rounded), as the 0-based indices ``i, j, k`` of the GT's voxel grid (numpy/nibabel,
SimpleITK's ``GetPixel``, 3D Slicer's Data Probe) and counted from 1 as ITK-SNAP's Cursor Inspector shows it.

With the scan's uptake measured (the ``pet`` metric group: ``per_component.csv`` has ``suv_max`` and ``mtv_ml``,
:attr:`~ccmetrics.report.data.ResultFolder.uptake`), each lesion (and false positive, from ``per_prediction.csv``)
shows its SUVmax and MTV; the lesion finder lists the missed lesions first, the hottest first
(:func:`~ccmetrics.report.data.hottest_first`: equal SUVmax in the page's order, no SUVmax last), then every case's
other rows as without; each case names its hottest missed lesion, and the summary counts the missed lesions with
SUVmax at or above :data:`~ccmetrics.report.data.HOT_SUV_MAX` (``uptake``). Without those columns the page is
byte for byte what it was before.

Volumes are in ml throughout (``volume_mm3 / 1000``; in voxels for an evaluation in voxel units). A case's
``standard − CC`` difference with ∞ on either side is shown as ``–`` with a note: ∞ minus a number is no number
(:func:`~ccmetrics.report.data.with_differences`).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Union

import pandas as pd

from .. import schema
from . import cases, data, detection, geometry, thumbnails, viewer
from .on_scan import ChannelRows, Scan, Scans, image_memory, on_image, open_scans
from .render import _number, anchor
from .scans import MAX_MASK_VALUES

__all__ = ["AGGREGATIONS", "PLOT_CAPTIONS", "build_model"]

#: captions of the plots ``ccmetrics evaluate`` writes (file name pattern → caption)
PLOT_CAPTIONS = (
    (
        r"metric_vs_volume_(\w+?)(_class\d+)?$",
        "Per-lesion {0} against lesion volume: missed lesions (red) sit at 0 "
        "whatever their size. CC-{0} averages these points with equal weight.",
    ),
    (
        r"standard_vs_cc_(\w+?)(_class\d+)?$",
        "Global {0} against CC-{0}, one point per case: points off the identity "
        "line are cases where the global value hides what happens per lesion.",
    ),
    (r"case_distribution(_class\d+)?$", "Distribution of the per-case values, global and CC."),
    (r"detection_by_size(_class\d+)?$", "Detection rate per lesion-size bin."),
    (
        r"detection_by_suv(_class\d+)?$",
        "Detection rate per bin of the lesions' SUVmax: does the model miss hot lesions?",
    ),
    (
        r"bland_altman_tmtv_ml(_class\d+)?$",
        "Bland–Altman plot of the total metabolic tumour volume (TMTV, ml), one point per case: model − reference "
        "against their mean, with the bias and the limits of agreement (bias ∓ 1.96 SD).",
    ),
    (
        r"bland_altman_tlg(_class\d+)?$",
        "Bland–Altman plot of the total lesion glycolysis (TLG), one point per case: model − reference against their "
        "mean, with the bias and the limits of agreement (bias ∓ 1.96 SD).",
    ),
    (
        r"pred_vs_ref_tmtv_ml(_class\d+)?$",
        "The model's total metabolic tumour volume (TMTV, ml) against the reference's, one point per case, with the "
        "identity line.",
    ),
    (
        r"pred_vs_ref_tlg(_class\d+)?$",
        "The model's total lesion glycolysis (TLG) against the reference's, one point per case, with the identity "
        "line.",
    ),
    (
        r"bland_altman_(\w+?)(_class\d+)?$",
        "Bland–Altman plot of {0}, one point per case: model − reference against their mean, with the bias and "
        "the limits of agreement (bias ∓ 1.96 SD).",
    ),
    (
        r"pred_vs_ref_(\w+?)(_class\d+)?$",
        "The model's {0} against the reference's, one point per case, with the identity line.",
    ),
)
#: why a case whose segmentation was its probability map's (``--probabilities`` without PRED_DIR) is not drawn when
#: ``per_case.csv`` names no map file (the map was given as an array); a map file is read and ``prob > 0.5`` drawn
SEGMENTED_FROM_MAP = (
    "the prediction is the probability map's segmentation (prob > 0.5), and per_case.csv names no map file "
    "(given as an array): no thumbnails, no false-positive components (the map's candidates are listed)"
)
#: why a case is not drawn when its false positives depend on the scan and no per_prediction table holds them
SUV_MAX_WITHOUT_TABLE = (
    "the false positives under the detection rule suv_max depend on the scan, and this evaluation wrote no "
    "per_prediction.csv: no thumbnails; evaluate again with the detection metric group (--metrics ...,detection)"
)
#: why a case segmented from its probability map is not drawn: the map (named in the reason) cannot be read now
MAP_UNREADABLE = (
    "could not read the probability map whose segmentation (prob > 0.5) was the prediction, so no thumbnails and "
    "no false-positive components (the map's candidates are listed): {reason}"
)
AGGREGATIONS = {
    schema.STANDARD: "standard (global value per case)",
    schema.CC_PATIENT: "CC, per patient (mean of case means)",
    schema.CC_POOLED: "CC, pooled (every lesion weighs the same)",
    schema.CASE_LEVEL: "case-level score",
}


# ---------------------------------------------------------------- the plots


def _plot_caption(path: Path, label: Callable[[str], str], by_size: list[dict] | None = None) -> str:
    """The caption of a plot file, its metric named by ``label`` (a folder's :meth:`~data.ResultFolder.label`); the
    detection-by-size plot's states each bin's lesions found, from ``summary.json``'s ``by_size`` (never a claim the
    data do not show)."""
    for pattern, caption in PLOT_CAPTIONS:
        match = re.match(pattern, path.stem)
        if match:
            groups = [label(g) for g in match.groups() if g and not g.startswith("_class")]
            suffix = re.search(r"_class(\d+)$", path.stem)
            text = caption.format(*groups)
            if path.stem.startswith("detection_by_size") and by_size:
                text += _size_rates(by_size, int(suffix.group(1)) if suffix else None)
            return text + (f" (class {suffix.group(1)})" if suffix else "")
    return path.stem.replace("_", " ")


def _size_rates(by_size: list[dict], class_value: int | None) -> str:
    """`` Lesions found: 0.1–1 ml 4 of 6, ...`` for the bins holding lesions (of one class, or of the only one).

    >>> _size_rates([{"class": 1, "bin": "<1 ml", "lesions": 1, "detected": 1},
    ...              {"class": 1, "bin": "1–10 ml", "lesions": 13, "detected": 8}], None)
    ' Lesions found per bin: <1 ml 1 of 1, 1–10 ml 8 of 13.'
    """
    rows = [r for r in by_size if r.get("lesions") and (class_value is None or r.get("class") == class_value)]
    if not rows:
        return ""
    return " Lesions found per bin: " + ", ".join(f"{r['bin']} {r['detected']} of {r['lesions']}" for r in rows) + "."


# ---------------------------------------------------------------- one case


def _case_images(folder: data.ResultFolder, row: pd.Series, image_root, pairs: dict | None = None) -> tuple:
    """(CaseImages or None, problem text or None) for one per-case row.

    ``pairs``: the files already read for another class of the case (:func:`ccmetrics.report.cases.read_pair`,
    by file names), filled as files are read. A case evaluated on its probability map's segmentation (no
    ``pred_file``, ``options.probabilities.segment_from_map``) reads its ``prob_file`` once and takes ``prob > 0.5``
    as the prediction (:func:`ccmetrics.report.cases.read_map_pair`); a map that cannot be read now is the case's
    problem (:data:`MAP_UNREADABLE`, naming the file and why), the rest of the report is written all the same.
    """
    from ..formats.probabilities import ProbabilityError

    pairs = {} if pairs is None else pairs
    if row[schema.STATUS] == schema.FAILED:
        return None, None
    gt_file = data.resolve_image(row.get(schema.GT_FILE), folder.path, image_root)
    pred_name = row.get(schema.PRED_FILE)
    pred_given = _named(pred_name)
    map_file = None  # the probability map whose prob > 0.5 was the prediction
    if not pred_given and _segmented_from_map(folder):
        map_name = row.get(schema.PROB_FILE)
        if not _named(map_name) or map_name == "<array>":
            return None, SEGMENTED_FROM_MAP
        # a map no longer found is passed on as named: reading it says that it is missing
        map_file = data.resolve_image(map_name, folder.path, image_root) or Path(str(map_name))
    pred_file = data.resolve_image(pred_name, folder.path, image_root) if pred_given else None
    missing = [
        str(n)
        for n, f, given in ((row.get(schema.GT_FILE), gt_file, True), (pred_name, pred_file, pred_given))
        if given and f is None
    ]
    if missing:
        return None, "image file not found: " + ", ".join(missing)
    try:
        labels = None if folder.binary else folder.class_labels(int(row[schema.CLASS]))
        predictions = folder.result.per_prediction
        false_positives = None  # without per_prediction.csv: judged here under the evaluation's rule
        if predictions is not None and len(predictions):
            mine = predictions[
                (predictions[schema.CASE].astype(str) == str(row[schema.CASE]))
                & (predictions[schema.CLASS] == row[schema.CLASS])
                & (predictions[schema.OUTCOME] == schema.FALSE_POSITIVE)
            ]
            false_positives = mine[schema.PREDICTION].astype(int).tolist()
        elif predictions is not None:
            false_positives = []
        key = (str(gt_file), str(pred_file), str(map_file))
        options = folder.eval_options
        if false_positives is None and options.rule().startswith("suv_max"):
            return None, SUV_MAX_WITHOUT_TABLE
        reference, tolerance = options.reference_images, options.tolerance_mm
        if key not in pairs and map_file is not None:
            channel = options.probabilities.prob_channel if options.probabilities is not None else None
            try:
                pairs[key] = cases.read_map_pair(
                    gt_file, map_file, channel=channel, reference_images=reference, tolerance_mm=tolerance
                )
            except ProbabilityError as exc:
                reason = str(exc) if str(map_file) in str(exc) else f"{map_file}: {exc}"
                return None, MAP_UNREADABLE.format(reason=reason)
        if key not in pairs:
            pairs[key] = cases.read_pair(gt_file, pred_file, reference_images=reference, tolerance_mm=tolerance)
        images = cases.load_case(
            gt_file,
            pred_file,
            class_value=labels,
            spacing=options.spacing,
            connectivity=options.connectivity,
            ignore_label=options.ignore_label,
            false_positives=false_positives,
            rule=options.rule(),
            reference_images=reference,
            tolerance_mm=tolerance,
            pair=pairs[key],
        )
    except (OSError, ValueError) as exc:
        return None, f"could not read the images: {exc}"
    return images, None


def _named(cell: Any) -> bool:
    """Whether a file cell of ``per_case.csv`` names a file (not empty, not NaN)."""
    return isinstance(cell, str) and bool(cell)


def _segmented_from_map(folder: data.ResultFolder) -> bool:
    """Whether a case without a prediction file was evaluated on its probability map's ``prob > 0.5``."""
    maps = folder.eval_options.probabilities
    return maps is not None and maps.segment_from_map


def _check_consistent(images: cases.CaseImages, components: pd.DataFrame) -> str | None:
    """A problem text when the images no longer hold the lesions of ``per_component.csv``."""
    volumes = [c.voxels for c in images.lesions]
    listed = components[schema.VOLUME].astype(int).tolist() if len(components) else []
    if volumes != listed:
        return (
            f"the image files do not match per_component.csv ({len(volumes)} lesions in the images, "
            f"{len(listed)} in the table, or other volumes): were they changed after `ccmetrics evaluate`? "
            f"Thumbnails and false positives are left out"
        )
    return None


#: the ``window`` argument: one window for every channel, or one per channel name or code
WindowArg = Union[str, tuple[float, float], Mapping[str, Union[str, tuple[float, float]]], None]


def _geometries(images: cases.CaseImages) -> dict[tuple, geometry.ThumbnailGeometry]:
    """The crop of every component of a case, keyed ``(kind, label)``: small arrays, kept without the masks."""
    geometries = {}
    for c in images.lesions + images.false_positives:
        box = geometry.crop_box(c.center, geometry.half_widths(c.extent_mm(images.spacing), images.spacing))
        geometries[(c.kind, c.label)] = geometry.thumbnail_geometry(
            c.center, box, images.gt, images.pred, images.regions, images.spacing, own_region=c.region
        )
    return geometries


def _thumbnails(
    geometries: dict[tuple, geometry.ThumbnailGeometry],
    channels: Sequence[ChannelRows],
    ndim: int,
    panel_px: int,
    left_out: Sequence[tuple[str, str]] = (),
) -> dict[tuple, dict[str, Any]]:
    """The thumbnails of every component of a case, drawn on each of ``channels`` (the same keys cut from
    each) or on the empty background without one.

    Each thumbnail is ``{"src", "caption", "rows", "left_out"}``: ``rows`` holds one ``{"label", "src", "scale",
    "low", "high"}`` per channel of the scan drawn (one row with label None on the empty background), ``src``
    is the first row's image; ``left_out`` one ``{"label", "why"}`` per channel not drawn (on another grid, or
    unreadable) beside channels that are.
    """
    renderer = thumbnails.Renderer(ndim, panel_px=panel_px)
    missing = [{"label": label, "why": why} for label, why in left_out] if channels else []
    out = {}
    for key, g in geometries.items():
        rows: list[dict[str, str | None]] = []
        for channel in channels:
            on_image = channel.geometries[key]
            window = thumbnails.window_for(on_image, minimum=channel.minimum, spec=channel.window)
            rows.append(
                {
                    "label": channel.label,
                    "src": thumbnails.data_uri(renderer.render(on_image, window)),
                    "scale": window.text,
                    "low": thumbnails.number_text(window.low),
                    "high": thumbnails.number_text(window.high),
                }
            )
        if not rows:
            src = thumbnails.data_uri(renderer.render(g))
            rows.append({"label": None, "src": src, "scale": None, "low": None, "high": None})
        out[key] = {"src": rows[0]["src"], "caption": thumbnails.caption(g), "rows": rows, "left_out": missing}
    return out


@dataclass
class _Pending:
    """A drawn case and class whose entry waits for the scan: its thumbnails' crops and the GT's grid."""

    entry: dict[str, Any]
    geometries: dict[tuple, geometry.ThumbnailGeometry]
    grid: Any = None


def _drawn_case(
    folder: data.ResultFolder,
    items: Sequence[tuple[int, pd.Series, pd.DataFrame]],
    *,
    scans: Scans | None,
    image_root,
    panel_px: int,
    with_viewer: bool = True,
    **entry_options: Any,
) -> dict[int, dict[str, Any]]:
    """The entries of every drawn class of one case (``(position, row, components)`` each), by position.

    The case's files are read once for all its classes (``pairs``), each class's masks let go once its crops
    are cut (and, for the viewer, its map of components made: :func:`~ccmetrics.report.viewer.component_map`), then
    each channel of the scan is read once and cut for the thumbnails of every class (the viewer keeps its channel,
    cropped: :class:`~ccmetrics.report.viewer.ScanPicker`).
    """
    pairs: dict = {}
    pending: list[_Pending] = []
    maps: list[viewer.ComponentMap | None] = []
    for position, row, comps in items:
        images, problem = _loaded(folder, row, comps, image_root, pairs)
        entry = _case_entry(folder, row, comps, images, problem, rank=position + 1, draw=True, **entry_options)
        if images is None:
            pending.append(_Pending(entry, {}))
        else:
            pending.append(_Pending(entry, _geometries(images), images.grid()))
        maps.append(_component_map(folder, images, entry) if with_viewer and images is not None else None)
        images = None  # the masks go before the next class is read
    pairs.clear()
    merged = {(i, *key): g for i, p in enumerate(pending) for key, g in p.geometries.items()}
    grid = next((p.grid for p in pending if p.grid is not None), None)
    case = str(items[0][1][schema.CASE])
    picker = None
    if scans is not None and grid is not None and any(m is not None for m in maps):
        picker = viewer.ScanPicker(scans.windows, viewer.label_box(maps), grid.spacing)
    scan = Scan() if scans is None or not merged else on_image(grid, merged, scans, case, on_channel=picker)
    if grid is not None and any(m is not None for m in maps) and merged:
        _attach_viewer([p.entry for p in pending], maps, grid, picker.picked if picker is not None else None)
    out = {}
    for i, ((position, _, _), p) in enumerate(zip(items, pending)):
        mine = [
            replace(c, geometries={key[1:]: g for key, g in c.geometries.items() if key[0] == i}) for c in scan.rows
        ]
        thumbs = _thumbnails(p.geometries, mine, p.grid.array.ndim, panel_px, scan.left_out) if p.geometries else {}
        _attach(p.entry, thumbs, scan, [c.label for c in scan.rows])
        out[position] = p.entry
    return out


def _component_map(
    folder: data.ResultFolder, images: cases.CaseImages, entry: dict[str, Any]
) -> viewer.ComponentMap | None:
    """The viewer's map of a class's components, with the outcomes of its entry (None for a 2D case)."""
    if images.gt.ndim != 3:
        return None
    try:
        return viewer.component_map(
            images.regions.gt_labels,
            images.pred,
            entry["lesions"],
            entry["false_positives"] or [],
            folder.eval_options.connectivity,
        )
    except ValueError as exc:  # too many components for a uint16 map, or a GT changed since: said on the page
        entry["viewer_note"] = f"No viewer for this case: {exc}"
        return None


def _attach_viewer(entries: Sequence[dict[str, Any]], maps: Sequence[Any], grid: Any, picked: Any) -> None:
    """Each drawn class's ``viewer`` (:func:`ccmetrics.report.viewer.build_case`): the case's volume is written
    once, with its first class, the others point to it."""
    volume, labels = viewer.build_case(maps, grid.array.shape, grid.affine, grid.spacing, picked)
    first = next(e for e, m in zip(entries, maps) if m is not None)
    volume_id = f"{first['anchor']}-viewer-volume"
    for entry, class_labels in zip(entries, labels):
        if class_labels is None:
            continue
        entry["viewer"] = {
            "volume_id": volume_id,
            "volume_json": viewer.json_text(volume) if entry is first else None,
            "data_json": viewer.json_text({**class_labels, "volume": volume_id}),
            "channel": volume["channel"],
            "window": volume["window"],
            "shape": volume["shape"],
            "bytes": volume["bytes"],
        }


def _attach(entry: dict[str, Any], thumbs: dict[tuple, dict[str, Any]], scan: Scan, channels: list[str]) -> None:
    """Put a case entry's thumbnails in place (each lesion's and false positive's ``thumb``), with the case's
    ``image_note`` (nothing drawn on the scan, and why) or ``channel_note`` (the channels left out, and why)."""
    for lesion in entry["lesions"]:
        lesion["thumb"] = thumbs.get(("lesion", lesion["label"]))
    for fp in entry["false_positives"] or []:
        fp["thumb"] = thumbs.get(("false_positive", fp["label"]))
    channels = channels if thumbs else []
    left_out = "; ".join(why for _, why in scan.left_out) if thumbs and channels and scan.left_out else None
    entry.update(
        drawn=bool(thumbs),
        on_image=bool(thumbs) and bool(channels),
        channels=channels,
        image_note=scan.note if thumbs else None,
        image_masks=bool(thumbs) and scan.masks,
        channel_note=left_out,
        channels_left_out=[label for label, _ in scan.left_out] if left_out else [],
    )


def _position(component: cases.Component, images: cases.CaseImages) -> dict[str, Any]:
    """Where a lesion or false positive lies, as the page shows it (:class:`~ccmetrics.report.cases.Position`):
    ``mm`` (its centroid in RAS+ mm, as ``per_prediction.csv``'s ``centroid_x_mm`` ...; None without the affine),
    ``mm_text``, ``voxel`` (the voxel the thumbnail's planes go through, 0-based ``i, j, k``), ``voxel_text`` and
    ``one_based`` (that voxel counted from 1, as ITK-SNAP shows it)."""
    where = cases.position(component, images.affine)
    return {
        "mm": where.mm,
        "mm_text": where.mm_text,
        "voxel": where.voxel,
        "voxel_text": where.voxel_text,
        "one_based": where.one_based_text,
    }


def _class_title(row: pd.Series, class_value: Any) -> str:
    """How a case's class is named in its title: the class name when the evaluation gave names."""
    name = row.get(schema.CLASS_NAME)
    return str(name) if isinstance(name, str) and name else f"class {class_value}"


def _hottest(lesions: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The hottest of ``lesions`` (the largest SUVmax; equal ones: the first given), None when none has an SUVmax."""
    order = data.hottest_first([les["suv_max"] for les in lesions])
    first = lesions[order[0]] if order else None
    return first if first is not None and _number(first["suv_max"]) is not None else None


def _prediction_uptake(folder: data.ResultFolder, row: pd.Series) -> dict[int, tuple[Any, Any]]:
    """The SUVmax and MTV (ml) of each prediction component of a case and class, by its number, from
    ``per_prediction.csv`` (empty when that table does not have them)."""
    predictions = folder.result.per_prediction
    if predictions is None or data.SUV_MAX not in predictions or not len(predictions):
        return {}
    mine = predictions[
        (predictions[schema.CASE].astype(str) == str(row[schema.CASE]))
        & (predictions[schema.CLASS] == row[schema.CLASS])
    ]
    mtv = mine[data.MTV_ML] if data.MTV_ML in mine else pd.Series(None, index=mine.index, dtype=float)
    return {int(k): (s, v) for k, s, v in zip(mine[schema.PREDICTION], mine[data.SUV_MAX], mtv)}


def _loaded(
    folder: data.ResultFolder, row: pd.Series, comps: pd.DataFrame, image_root, pairs: dict | None = None
) -> tuple[cases.CaseImages | None, str | None]:
    """A case's masks when they still hold the lesions of ``per_component.csv``, else None and why."""
    images, problem = _case_images(folder, row, image_root, pairs)
    if images is not None:
        problem = _check_consistent(images, comps)
        if problem:
            images = None
    return images, problem


def _case_entry(
    folder: data.ResultFolder,
    row: pd.Series,
    comps: pd.DataFrame,
    images: cases.CaseImages | None,
    problem: str | None,
    *,
    multi_class: bool,
    draw: bool,
    rank: int | None,
    unit: str,
) -> dict[str, Any]:
    """A case's section without thumbnails (:func:`_attach` puts them in)."""
    case, class_value = str(row[schema.CASE]), row[schema.CLASS]
    name = anchor(case, class_value, multi_class)
    found = {c.label: c for c in images.lesions} if images is not None else {}
    uptake = folder.uptake
    lesions = []
    comp: Any  # a row of itertuples (its fields are not typed)
    for comp in comps.itertuples(index=False):
        k = int(comp.component)
        volume = comp.volume_mm3 / 1000.0 if unit == "ml" else comp.volume
        lesions.append(
            {
                "id": f"{name}-lesion-{k}",
                "label": k,
                "volume": volume,
                "detected": bool(comp.detected),
                "suv_max": getattr(comp, data.SUV_MAX, None),
                "mtv_ml": getattr(comp, data.MTV_ML, None),
                "metrics": {m: getattr(comp, m) for m in folder.component_metrics},
                "position": _position(found[k], images) if k in found and images is not None else None,
                "thumb": None,
            }
        )
    fps = None
    if images is not None:
        ml = data.voxel_ml(folder.eval_options.spacing, images.spacing)
        fp_uptake = _prediction_uptake(folder, row) if uptake else {}
        fps = [
            {
                "id": f"{name}-fp-{c.label}",
                "label": c.label,
                "volume": c.voxels * ml if unit == "ml" else c.voxels,
                "region": c.region or None,
                "voxels": c.voxels,
                "suv_max": fp_uptake.get(c.label, (None, None))[0],
                "mtv_ml": fp_uptake.get(c.label, (None, None))[1],
                "position": _position(c, images),
                "thumb": None,
            }
            for c in images.false_positives
        ]
    distance_unit = "voxels" if unit == "voxels" else "mm"
    metrics = []
    for m in folder.case_metrics:
        standard, cc = row.get(m), row.get(schema.cc(m))
        metric_name = folder.label(m)
        why = data.undefined_difference(standard, cc, metric_name, row.get(schema.WORST_DISTANCE), distance_unit)
        infinite = (
            data.infinite_note(
                standard,
                cc,
                metric_name,
                empty_gt=str(row.get(schema.EMPTY_GT)) == "True",
                n_lesions=len(lesions),
                worst=row.get(schema.WORST_DISTANCE),
                worst_given=folder.options.get("worst_distance") is not None,
                unit=distance_unit,
            )
            if folder.is_distance(m)
            else None
        )
        metrics.append(
            {
                "key": m,
                "name": metric_name,
                "standard": standard,
                "cc": cc,
                "delta": row.get(f"delta_{m}"),
                "delta_note": why,
                "infinite_note": infinite,
            }
        )
    scores = [{"key": s, "name": folder.label(s), "value": row.get(s)} for s in folder.case_scores]
    return {
        "case": case,
        "class": class_value,
        "title": case + (f" ({_class_title(row, class_value)})" if multi_class else ""),
        "anchor": name,
        "status": row[schema.STATUS],
        "flags": row.get(schema.FLAGS) or "",
        "error": row.get(schema.ERROR) or "",
        "gt_file": row.get(schema.GT_FILE) if isinstance(row.get(schema.GT_FILE), str) else "",
        "pred_file": row.get(schema.PRED_FILE) if isinstance(row.get(schema.PRED_FILE), str) else "",
        "prob_file": row.get(schema.PROB_FILE) if isinstance(row.get(schema.PROB_FILE), str) else "",
        "segmented_from_map": _segmented_from_map(folder) and not _named(row.get(schema.PRED_FILE)),
        "rank": rank,
        "drawn": False,
        "thumbnails_wanted": draw,
        "problem": problem,
        "on_image": False,
        "channels": [],
        "image_note": None,
        "image_masks": False,
        "channel_note": None,
        "channels_left_out": [],
        "viewer": None,
        "viewer_note": None,
        "metrics": metrics,
        "scores": scores,
        "lesions": lesions,
        "false_positives": fps,
        "n_lesions": len(lesions),
        "n_missed": sum(not les["detected"] for les in lesions),
        "hottest_missed": _hottest([les for les in lesions if not les["detected"]]) if uptake else None,
        "n_fp": None if fps is None else len(fps),
        "empty_gt": str(row.get(schema.EMPTY_GT)) == "True",
    }


# ---------------------------------------------------------------- the whole page


def build_model(
    result_dir: os.PathLike,
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
    **former: Any,
) -> dict[str, Any]:
    """Everything the page shows, as plain Python data (the template's context).

    Parameters are those of :func:`~ccmetrics.report.page.write_report`. Keys: ``title``, ``source``, ``counts``,
    ``problems``, ``summary`` (the rows of ``summary.json``, each with its metric's display ``name``),
    ``empty_gt``, ``plots``, ``cases`` (in the order of the per-case sections: worst CC value of the
    primary metric first, failed cases last), ``finder`` (every lesion and false positive), ``primary``,
    ``metrics``, ``unit``, ``images`` (the scans' folder or None), ``image_notes`` (the drawn cases not
    drawn on the scan, each with its ``image_note``), ``channel_notes`` (the cases drawn on the scan with a channel
    left out, each with its ``channel_note``), ``n_on_image``, ``channels``; each lesion and false positive of a case
    whose images were read has its ``position`` (``_position``), each case metric its ``delta_note`` (why its
    difference is not shown, :func:`ccmetrics.report.data.undefined_difference`); with probability maps
    (``per_candidate.csv``): ``with_candidates`` True, each lesion's ``confidence`` (None: missed) and each
    case's ``fp_candidates`` (:func:`ccmetrics.report.detection.attach_candidates`), ``finder`` rows of kind
    ``fp_candidate``, and ``detection`` (the section of curves, :func:`ccmetrics.report.detection.section`;
    empty without); ``uptake`` (how many missed lesions were hot, and the hottest; None without the ``pet``
    columns), and with it each lesion's and false positive's ``suv_max`` and ``mtv_ml`` (None without), each case's
    ``hottest_missed`` (the lesion dict of its missed lesion of largest SUVmax, the lowest number among equal ones;
    None: none missed, none with an SUVmax, or no ``pet`` columns), and the missed lesions first in ``finder``, the
    hottest first; and more.

    Raises
    ------
    FileNotFoundError
        No ``per_case.csv`` in ``result_dir``, or ``images`` is not a folder.
    ValueError
        ``images`` holds no image file, or ``window`` or ``max_image_memory`` cannot be read.
    """
    max_image_memory = image_memory(max_image_memory, former, "build_model")
    scans = open_scans(images, channel_names, window, max_image_memory)  # first: a wrong folder fails at once
    folder = data.read_result_folder(result_dir)
    if scans is not None:
        scans.tolerance_mm = folder.eval_options.tolerance_mm  # the evaluation's
    masks_why = _mask_folder(scans, folder, image_root) if scans is not None else None
    masks_path = str(scans.folder.path) if scans is not None else None
    if masks_why is not None:
        scans = None  # never drawn as grey levels: the thumbnails are drawn without scans
    metrics = folder.case_metrics
    primary = data.primary_metric(metrics, folder.columns)
    per_case = data.with_differences(folder.per_case, metrics).reset_index(drop=True)
    order = data.worst_first(per_case, primary, folder.columns)
    ranked = set(order)
    order += [i for i in range(len(per_case)) if i not in ranked]  # failed cases last
    n_draw = len(order) if max_cases is None else max(0, int(max_cases))
    multi_class = per_case[schema.CLASS].nunique() > 1 if len(per_case) else False
    unit = "voxels" if folder.eval_options.spacing == "voxel" else "ml"
    cases = _cases(
        folder,
        per_case,
        order,
        n_draw,
        scans=scans,
        image_root=image_root,
        panel_px=panel_px,
        multi_class=multi_class,
        unit=unit,
        with_viewer=with_viewer,
    )
    maps = _probability_model(folder, cases, unit)  # first: each lesion's confidence into the cases
    finder = _finder(cases, uptake=folder.uptake)
    by_gap = sorted(cases, key=lambda c: _gap_key(c, primary))
    counts = folder.doc.get("counts", {})
    problems = [c for c in cases if c["status"] != schema.OK]
    if masks_why is None and scans is not None:
        masks_why = _masks_read(cases)
        if masks_why is not None:
            scans = None
            for c in cases:
                c.update(image_note=None, image_masks=False)
    images_masks = None if masks_why is None else {"path": masks_path, "why": masks_why}
    return {
        "title": title or f"Per-lesion report: {folder.path.resolve().name}",
        "source": str(folder.path.resolve()),
        "written": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "version": _version(),
        "counts": counts,
        "problems": problems,
        "unreadable": [c for c in cases if c["problem"]],
        "ignored_files": folder.doc.get("ignored_files", []),
        "ignored_summary": _ignored_summary(folder.doc.get("ignored_files", [])),
        "summary": [{**r, "name": folder.label(r["metric"])} for r in folder.doc.get("summary", [])],
        "empty_gt": [e for e in folder.doc.get("empty_gt", []) if e.get("n")],
        "aggregations": AGGREGATIONS,
        "plots": _plots(folder, maps),
        "cases": cases,
        "cases_by_gap": by_gap,
        "finder": finder,
        "multi_class": multi_class,
        "primary": primary,
        "primary_name": folder.label(primary) if primary else "",
        "metrics": [{"key": m, "name": folder.label(m)} for m in metrics],
        "component_metrics": [{"key": m, "name": folder.label(m)} for m in folder.component_metrics],
        "scores": [{"key": s, "name": folder.label(s)} for s in folder.case_scores],
        "unit": unit,
        "max_cases": n_draw,
        "n_drawn": sum(c["drawn"] for c in cases),
        "options": folder.options,
        "options_shown": data.options_shown(folder.options),
        "legend": thumbnails.LEGEND,
        "legend_on_image": thumbnails.LEGEND_ON_IMAGE,
        "is_distance": {m: folder.is_distance(m) for m in metrics},
        "images": str(scans.folder.path) if scans is not None else None,
        "images_masks": images_masks,
        "image_notes": [c for c in cases if c["image_note"]],
        "channel_notes": [c for c in cases if c["channel_note"]],
        "common_channel_note": _common_channel_note(cases),
        "n_on_image": sum(c["on_image"] for c in cases),
        "channels": list(dict.fromkeys(label for c in cases for label in c["channels"])),
        "uptake": _uptake(folder, cases),
        "viewer_legend": viewer.json_text(viewer.legend()),
        "n_viewers": sum(c["viewer"] is not None for c in cases),
        "viewer_max_axis": viewer.MAX_AXIS,
        **maps,
    }


def _mask_folder(scans: Scans, folder: data.ResultFolder, image_root) -> str | None:
    """Why ``--images`` holds masks and not scans, seen from the paths alone (no image read): it is the folder of
    the GT files or of the prediction files of ``per_case.csv``; None when it is neither."""
    try:
        images = scans.folder.path.resolve()
    except OSError:
        return None
    per_case = folder.per_case
    for column, what in ((schema.GT_FILE, "GT"), (schema.PRED_FILE, "prediction")):
        names: list[Any] = per_case[column].tolist() if column in per_case else []
        for name in dict.fromkeys(n for n in names if _named(n)):
            found = data.resolve_image(name, folder.path, image_root)
            if found is not None and found.resolve().parent == images:
                return f"it is the folder of the {what} files the evaluation read"
    return None


def _masks_read(cases: Sequence[dict[str, Any]]) -> str | None:
    """Why ``--images`` holds masks and not scans, seen from the images read: every drawn case found only masks in
    it (each channel a few distinct integer values, :func:`~ccmetrics.report.scans.mask_values`); None when a case
    found a scan, or none was read."""
    tried = [c for c in cases if c["drawn"] and (c["on_image"] or c["image_note"])]
    if not tried or not all(c["image_masks"] for c in tried):
        return None
    first = tried[0]
    return (
        f"every image of it read ({len(tried)} {'case' if len(tried) == 1 else 'cases'}) holds at most "
        f"{MAX_MASK_VALUES} distinct integer values, as a GT or a prediction does ({first['title']}: "
        f"{first['image_note'].partition('not a scan: ')[2]})"
    )


def _common_channel_note(cases: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The channels left out of every case drawn on the scan, for the same reason (two cases or more): said once at
    the top of the page, and not again in each case (``note``, ``left_out``, ``drawn`` and ``n`` cases); else None."""
    on_image = [c for c in cases if c["on_image"]]
    notes = {(c["channel_note"], tuple(c["channels_left_out"]), tuple(c["channels"])) for c in on_image}
    if len(on_image) < 2 or len(notes) != 1:
        return None
    note, left_out, drawn = notes.pop()
    if not note:
        return None
    return {"note": note, "left_out": list(left_out), "drawn": list(drawn), "n": len(on_image)}


def _plots(folder: data.ResultFolder, maps: dict[str, Any]) -> list[dict[str, Any]]:
    """The figures of the folder's ``plots/`` the page shows (those of the detection section are shown there)."""
    return [
        {
            "name": p.name,
            "caption": _plot_caption(p, folder.label, folder.doc.get("by_size")),
            "src": thumbnails.data_uri(p.read_bytes()),
        }
        for p in folder.plots
        if p not in detection.figure_paths(maps["detection"], folder)
    ]


def _cases(
    folder: data.ResultFolder,
    per_case: pd.DataFrame,
    order: Sequence[int],
    n_draw: int,
    *,
    scans: Scans | None,
    image_root,
    panel_px: int,
    multi_class: bool,
    unit: str,
    with_viewer: bool = True,
) -> list[dict[str, Any]]:
    """Every case's entry (:func:`_case_entry`) in the order of the page (``order``: rows of ``per_case``). The first
    ``n_draw`` evaluated ones are drawn, each case with all its classes (:func:`_drawn_case`); the others are listed
    without thumbnails, their images read once each (their false positives)."""
    components = folder.per_component
    by_case = (
        {(str(c), k): g.sort_values(schema.COMPONENT) for (c, k), g in components.groupby([schema.CASE, schema.CLASS])}
        if len(components)
        else {}
    )
    entries: dict[int, dict[str, Any]] = {}
    drawn: dict[tuple[str, str], list[tuple[int, pd.Series, pd.DataFrame]]] = {}  # by case and GT file
    for position, i in enumerate(order):
        row = per_case.iloc[i]
        evaluated = row[schema.STATUS] != schema.FAILED
        comps = by_case.get((str(row[schema.CASE]), row[schema.CLASS]), components.iloc[:0])
        if evaluated and position < n_draw:  # drawn: with the other classes of its case, after this loop
            drawn.setdefault((str(row[schema.CASE]), str(row.get(schema.GT_FILE))), []).append((position, row, comps))
            continue
        masks, problem = _loaded(folder, row, comps, image_root)
        rank = position + 1 if evaluated else None
        entries[position] = _case_entry(
            folder, row, comps, masks, problem, multi_class=multi_class, draw=False, rank=rank, unit=unit
        )
    for items in drawn.values():
        entries.update(
            _drawn_case(
                folder,
                items,
                scans=scans,
                image_root=image_root,
                panel_px=panel_px,
                with_viewer=with_viewer,
                multi_class=multi_class,
                unit=unit,
            )
        )
    return [entries[position] for position in range(len(order))]


def _probability_model(folder: data.ResultFolder, cases: Sequence[dict[str, Any]], unit: str) -> dict[str, Any]:
    """The page's keys of the probability maps: ``detection`` (the section; empty without maps),
    ``with_candidates``, ``candidate_counts`` (None without), ``probabilities`` (the evaluation's options of the
    maps) and ``max_fp_candidates``. With ``per_candidate.csv``, each lesion's confidence and each case's
    false-positive candidates are put into ``cases`` (:func:`ccmetrics.report.detection.attach_candidates`)."""
    candidates = folder.result.per_candidate
    options = folder.options.get("probabilities") or {}  # the page shows them as written
    maps = folder.eval_options.probabilities
    if candidates is not None:
        detection.attach_candidates(cases, candidates, unit, method=None if maps is None else maps.candidates)
    return {
        "detection": detection.section(folder),
        "with_candidates": candidates is not None,
        "candidate_counts": None if candidates is None else detection.candidate_counts(cases),
        "probabilities": options,
        "max_fp_candidates": detection.MAX_CASE_CANDIDATES,
    }


def _finder(cases: Sequence[dict[str, Any]], *, uptake: bool = False) -> list[dict[str, Any]]:
    """The rows of the lesion finder: per case its lesions, its false positives, then (with probability maps)
    its false-positive candidates, the most confident first (``kind``: ``"lesion"``, ``"false_positive"``,
    ``"fp_candidate"``).

    With ``uptake`` (the lesions' SUVmax measured), the missed lesions of all cases come first, the hottest first
    (:func:`ccmetrics.report.data.hottest_first`: equal SUVmax in the order above, a lesion without SUVmax after
    them), then the other rows in the order above."""
    finder = []
    for case in cases:
        for les in case["lesions"]:
            finder.append({**les, "case": case, "kind": "lesion"})
        for fp in case["false_positives"] or []:
            finder.append({**fp, "case": case, "kind": "false_positive", "detected": None})
        for i, candidate in enumerate(case.get("fp_candidates") or []):
            shown = i < detection.MAX_CASE_CANDIDATES  # listed in the case's section too: the link goes to its row
            row = {**candidate, "case": case, "kind": "fp_candidate", "detected": None, "region": None, "thumb": None}
            finder.append({"suv_max": None, "mtv_ml": None, **row, "id": candidate["id"] if shown else case["anchor"]})
    if not uptake:
        return finder
    missed = [r for r in finder if r["kind"] == "lesion" and not r["detected"]]
    rest = [r for r in finder if not (r["kind"] == "lesion" and not r["detected"])]
    return [missed[i] for i in data.hottest_first([r["suv_max"] for r in missed])] + rest


def _uptake(folder: data.ResultFolder, cases: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The summary's line on the missed lesions by uptake; None without the ``pet`` columns.

    Keys: ``threshold`` (the SUVmax from which a lesion counts as hot, :data:`~ccmetrics.report.data.HOT_SUV_MAX`),
    ``n_lesions`` (GT lesions of the evaluated
    cases), ``n_missed``, ``n_hot`` (missed with SUVmax ≥ ``threshold``), ``n_unmeasured`` (missed without an
    SUVmax) and ``hottest`` (the missed lesion of largest SUVmax with its ``case``: equal ones in the page's order;
    None when none has one).
    """
    if not folder.uptake:
        return None
    threshold = data.HOT_SUV_MAX
    missed = [{**les, "case": c} for c in cases for les in c["lesions"] if not les["detected"]]
    values = [_number(r["suv_max"]) for r in missed]
    return {
        "threshold": threshold,
        "n_lesions": sum(len(c["lesions"]) for c in cases),
        "n_missed": len(missed),
        "n_hot": sum(v is not None and v >= threshold for v in values),
        "n_unmeasured": sum(v is None for v in values),
        "hottest": _hottest(missed),
    }


#: more ignored files than this are counted by kind in the page's line, their list folded under it
IGNORED_LISTED = 3


def _ignored_summary(names: Sequence[str]) -> str | None:
    """The page's line on the files the evaluation ignored when they are many (None for a few: listed as they are)."""
    from .._words import ignored_summary

    return ignored_summary(names) if len(names) > IGNORED_LISTED else None


def _gap_key(case: dict[str, Any], primary: str | None):
    delta = next((m["delta"] for m in case["metrics"] if m["key"] == primary), None)
    v = _number(delta)
    return (v is None, -abs(v) if v is not None else 0.0)


def _version() -> str:
    from .. import __version__

    return __version__
