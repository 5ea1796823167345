"""The report's data: the result folder, the case ranking and the differences of its scores.

Nothing here draws or writes HTML. A result folder of ``ccmetrics evaluate`` is read with
:meth:`ccmetrics.campaign.dataset.DatasetResult.read` (tables), ``summary.json`` (counts, summary, options)
and ``plots/*.png`` (:func:`read_result_folder`); the cases are ranked worst first by the primary metric
(:func:`primary_metric`, :func:`worst_first`), and a case's ``standard − CC`` difference is undefined where either
value is ∞ (:func:`with_differences`, :func:`undefined_difference`). With the ``pet`` columns (each lesion's SUVmax and
MTV, :attr:`ResultFolder.uptake`) the missed lesions are ranked hottest first (:func:`hottest_first`) and counted
hot from :data:`HOT_SUV_MAX`. The files a table names are found by
:func:`resolve_image`.

The report's other rooms: one case's masks, lesions and false positives, read again from its files, and where each
lies (:mod:`ccmetrics.report.cases`: ``load_case``, ``read_pair``, ``read_map_pair``, ``find_components``,
``Regions``, ``Position``); the scans drawn under the masks (:mod:`ccmetrics.report.scans`: ``ImageFolder``,
``read_channel``). Their names are still read here (``ccmetrics.report.data.load_case``), the same objects.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import schema
from ..metrics import registry
from ..metrics.aggregation import cc_values

if TYPE_CHECKING:
    from ..campaign.options import EvalOptions
    from ..results.dataset import DatasetResult

__all__ = [
    "HOT_SUV_MAX",
    "ResultFolder",
    "hottest_first",
    "label",
    "primary_metric",
    "read_result_folder",
    "resolve_image",
    "undefined_difference",
    "voxel_ml",
    "with_differences",
    "worst_first",
]

#: the names of the rooms this module was cut into, still read here (the same objects, no warning)
ROOMS = {
    **dict.fromkeys(
        (
            "AXES",
            "CaseImages",
            "Component",
            "Position",
            "Regions",
            "find_components",
            "load_case",
            "masks_of",
            "position",
            "read_map_pair",
            "read_pair",
        ),
        "cases",
    ),
    **dict.fromkeys(("CHANNEL", "Channel", "ChannelFile", "ImageFolder", "read_channel"), "scans"),
}


#: the columns of ``per_component`` the report shows a lesion's uptake with (the ``pet`` metric group's): its SUVmax
#: and its metabolic tumour volume (ml)
SUV_MAX, MTV_ML = "suv_max", "mtv_ml"
#: the SUVmax from which the report's summary counts a missed lesion as hot (a fixed cut-off)
HOT_SUV_MAX = 4.0


def label(metric: str, columns: dict[str, registry.Column] | None = None) -> str:
    """Display name of a metric or score (:func:`ccmetrics.metrics.registry.display_name`; ``columns``: a folder's
    facts).

    >>> label("hd95"), label("cc_dice"), label("custom")
    ('HD95', 'CC-Dice', 'custom')
    """
    return registry.display_name(metric, columns)


@dataclass
class ResultFolder:
    """What ``ccmetrics evaluate`` wrote into a folder.

    Attributes
    ----------
    path : Path
    result : ccmetrics.DatasetResult
        The tables and the facts of their columns, as :meth:`ccmetrics.DatasetResult.read` gives them.
    doc : dict
        ``summary.json`` (``counts``, ``summary``, ``empty_gt``, ``errors``, ``ignored_files``, ``options``,
        ``columns``).
    plots : list of Path
        ``plots/*.png``, sorted.
    """

    path: Path
    result: DatasetResult
    doc: dict[str, Any]
    plots: list[Path]

    @property
    def per_case(self) -> pd.DataFrame:
        """The ``per_case`` table (see :mod:`ccmetrics.schema`)."""
        return self.result.per_case

    @property
    def per_component(self) -> pd.DataFrame:
        """The ``per_component`` table (see :mod:`ccmetrics.schema`)."""
        return self.result.per_component

    @property
    def columns(self) -> dict[str, registry.Column]:
        """The facts of the metric columns (``DatasetResult.columns``)."""
        return self.result.columns

    @property
    def options(self) -> dict[str, Any]:
        """``summary.json``'s ``options``, as written (the page shows them); parsed: :attr:`eval_options`."""
        return self.doc.get("options", {})

    @property
    def eval_options(self) -> EvalOptions:
        """The evaluation's options: :attr:`options` parsed
        (:attr:`~ccmetrics.results.dataset.DatasetResult.eval_options`; a folder written by an older version: its
        missing keys at their defaults)."""
        return self.result.eval_options

    @property
    def case_metrics(self) -> list[str]:
        """Metrics with a global and a CC value per case (``m`` and ``cc_m`` in ``per_case``)."""
        return self.result.cc_metrics

    @property
    def component_metrics(self) -> list[str]:
        """Metrics with a value per lesion (columns of ``per_component``)."""
        return [m for m in self.case_metrics if m in self.per_component]

    @property
    def case_scores(self) -> list[str]:
        """Case-level scores present in ``per_case`` (detection, PQ, Lesion Dice), in the registry's order."""
        return self.result.case_level_columns

    def is_distance(self, metric: str) -> bool:
        """Whether a metric is a distance (lower is better; a missing value counts as the worst distance)."""
        return registry.is_distance(metric, self.columns)

    def label(self, metric: str) -> str:
        """Display name of a metric or score by the folder's facts (also for metrics not registered here)."""
        return label(metric, self.columns)

    @property
    def uptake(self) -> bool:
        """Whether the lesions have their uptake measured (the ``pet`` metric group ran): ``per_component`` has
        ``suv_max`` (and ``mtv_ml``). The report then shows each lesion's SUVmax and MTV and lists the missed lesions
        hottest first; without, the page is as it was before the ``pet`` group existed."""
        return SUV_MAX in self.per_component

    @property
    def binary(self) -> bool:
        """True when the evaluation read binary masks (no ``--classes``)."""
        return self.eval_options.classes is None

    def class_labels(self, value: int) -> tuple[int, ...]:
        """The labels whose union is class ``value`` (one label, or a region's labels; folders written before named
        classes hold the label values only: each class is its label)."""
        for c in self.eval_options.classes or ():
            if c.value == int(value):
                return c.labels
        return (int(value),)


def read_result_folder(result_dir: os.PathLike) -> ResultFolder:
    """Read the output folder of ``ccmetrics evaluate``.

    Raises
    ------
    FileNotFoundError
        The folder holds no ``per_case.csv``.
    """
    from ..results.dataset import DatasetResult

    path = Path(result_dir)
    result = DatasetResult.read(path)
    doc = {"options": result.options, **result.saved}
    if "counts" not in doc:
        doc["counts"] = result.counts()
    plots = sorted((path / "plots").glob("*.png")) if (path / "plots").is_dir() else []
    return ResultFolder(path, result, doc, plots)


# ---------------------------------------------------------------- ranking


def primary_metric(metrics: Sequence[str], columns: dict[str, registry.Column] | None = None) -> str | None:
    """The metric the cases are ranked by: Dice if evaluated, else the first overlap metric, else the first.

    >>> primary_metric(["hd95", "nsd"]), primary_metric(["hd95"]), primary_metric([])
    ('nsd', 'hd95', None)
    """
    for m in ["dice"] + [m for m in metrics if not registry.is_distance(m, columns)] + list(metrics):
        if m in metrics:
            return m
    return None


def with_differences(per_case: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """``per_case`` plus ``delta_m = m - cc_m`` for each metric; NaN (shown as ``–``) where either value is not a
    finite number.

    A positive Dice difference means the global Dice looks better than the average lesion: it hides
    missed or poorly segmented small lesions. For distances a negative difference means the same.

    A distance of ∞ (the GT or the prediction is empty: no surface to measure from) has no difference with a
    number: ∞ minus a number is no measure of what the global value hides, and counting the ∞ as the case's
    worst distance, as the means do, would show a difference of 0 between "∞" and the worst distance that the CC
    value also is when every lesion is missed. So the difference is left undefined (NaN) and the page says why
    (:func:`undefined_difference`).

    Examples
    --------
    >>> t = pd.DataFrame({"dice": [0.9, 0.0], "cc_dice": [0.5, 0.0], "hd95": [30.0, float("inf")],
    ...                   "cc_hd95": [40.0, 100.0], "worst_distance": [100.0, 100.0]})
    >>> with_differences(t, ["dice", "hd95"])[["delta_dice", "delta_hd95"]].round(3).values.tolist()
    [[0.4, -10.0], [0.0, nan]]
    """
    out = per_case.copy()
    for m in metrics:
        standard, cc = (pd.to_numeric(out[c], errors="coerce").to_numpy(float) for c in (m, schema.cc(m)))
        defined = np.isfinite(standard) & np.isfinite(cc)
        out[f"delta_{m}"] = np.where(defined, standard - cc, np.nan)
    return out


def undefined_difference(standard: Any, cc: Any, name: str, worst: Any = None, unit: str = "mm") -> str | None:
    """Why a case's difference ``standard - cc`` of the metric called ``name`` is not shown (one of them is ∞), or
    None when it is shown or simply missing. ``worst``: the case's worst distance (in ``unit``), named in the text.

    >>> text = undefined_difference(float("inf"), 307.34996, "HD95", 307.34996)
    >>> text.split(": ")[0]
    'HD95 is ∞ (the GT or the prediction is empty'
    >>> text.split(". ")[1]
    "In the data-set means this ∞ counts as the case's worst distance, 307.3 mm."
    >>> undefined_difference(2.0, 3.0, "HD95") is None, undefined_difference(None, 3.0, "HD95")
    (True, None)
    """
    values = []
    for v in (standard, cc):
        try:
            values.append(float(v))
        except (TypeError, ValueError):
            return None
    infinite = [label for label, v in zip((name, f"CC-{name}"), values) if math.isinf(v)]
    if not infinite:
        return None
    verb = "is" if len(infinite) == 1 else "are"
    text = (
        f"{' and '.join(infinite)} {verb} ∞ (the GT or the prediction is empty: no surface to measure from), and ∞ "
        "minus a number is no number: no difference is shown. In the data-set means this ∞ counts as the case's "
        "worst distance"
    )
    try:
        worst_value = float(worst)
    except (TypeError, ValueError):
        worst_value = math.nan
    return text + (f", {worst_value:.4g} {unit}." if math.isfinite(worst_value) else ".")


def infinite_note(
    standard: Any,
    cc: Any,
    name: str,
    *,
    empty_gt: bool,
    n_lesions: int,
    worst: Any = None,
    worst_given: bool = False,
    unit: str = "mm",
) -> str | None:
    """Why a case's global distance (``standard``, of the metric called ``name``) is ∞ beside a finite CC value, as
    ``docs/definitions.md`` says: the prediction is empty (no predicted voxel) or the GT is; None when ``standard``
    is finite or missing, or ``cc`` is not finite.

    CC-``name`` counts each lesion with no predicted voxel in its Voronoi region (its distance ∞) as the case's worst
    distance ``worst`` (``--worst-distance``, else the image's diagonal ``sqrt(Σ(n_k·s_k)²)``), so an empty
    prediction gives every lesion that value; an empty GT gives CC the worst distance when the prediction is not empty.

    >>> note = infinite_note(float("inf"), 307.34996, "HD95", empty_gt=False, n_lesions=8, worst=307.34996)
    >>> note.split(". ")[0]
    'no predicted voxel: HD95 is ∞ (no surface to measure to)'
    >>> note.split(". ")[1]
    "CC-HD95 counts each of the 8 lesions, all missed (no predicted voxel in its region), as the worst distance, \
307.3 mm (the image's diagonal), and averages them: 307.3 mm."
    >>> infinite_note(float("inf"), 307.34996, "HD95", empty_gt=True, n_lesions=0, worst=307.34996,
    ...               worst_given=True).split(": ")[1]
    'HD95 is ∞ (no GT surface to measure from). CC-HD95 has no lesion to average over and is the worst distance, \
307.3 mm (--worst-distance).'
    >>> infinite_note(2.0, 3.0, "HD95", empty_gt=False, n_lesions=1) is None
    True
    """
    try:
        standard_value, cc_value = float(standard), float(cc)
    except (TypeError, ValueError):
        return None
    if not math.isinf(standard_value) or not math.isfinite(cc_value):
        return None
    try:
        worst_value = float(worst)
    except (TypeError, ValueError):
        worst_value = math.nan
    source = "--worst-distance" if worst_given else "the image's diagonal"
    worst_text = f"{worst_value:.4g} {unit} ({source})" if math.isfinite(worst_value) else f"({source})"
    if empty_gt:
        return (
            f"the GT is empty (a healthy control) and the prediction is not: {name} is ∞ (no GT surface to measure "
            f"from). CC-{name} has no lesion to average over and is the worst distance, {worst_text}."
        )
    lesions = "the lesion, missed" if n_lesions == 1 else f"each of the {n_lesions} lesions, all missed"
    return (
        f"no predicted voxel: {name} is ∞ (no surface to measure to). CC-{name} counts {lesions} (no predicted voxel "
        f"in its region), as the worst distance, {worst_text}, and averages them: {cc_value:.4g} {unit}."
    )


def options_shown(options: Mapping[str, Any]) -> list[dict[str, str]]:
    """The evaluation's options (``summary.json``'s ``options``) as the page lists them: each by its
    ``ccmetrics evaluate`` flag, its value as typed there and a short meaning (``flag``, ``value``, ``meaning``).
    Options not given (None) are left out, and so is ``tolerance_mm`` at its default 0.001 mm: how far the GT's and
    the prediction's grids may differ says nothing about the values, and beside the NSD tolerance it reads as one.

    >>> shown = options_shown({"metrics": ["dice", "nsd"], "nsd_tolerance": 1.0, "tolerance_mm": 0.001,
    ...                        "spacing": "header", "worst_distance": None})
    >>> [f"{o['flag']} {o['value']}" for o in shown]
    ['--metrics dice,nsd', '--nsd-tolerance 1', '--spacing header']
    >>> options_shown({"tolerance_mm": 0.01})[0]["meaning"]
    "how far the GT's and the prediction's grids may differ, in mm; not a metric's tolerance"
    """
    voxels = options.get("spacing") == "voxel"
    length = "voxels" if voxels else "mm"
    meanings = {
        "metrics": "metrics evaluated",
        "classes": "classes evaluated one by one",
        "ignore_label": "GT label set to background first",
        "spacing": "voxel spacing: from each GT file's header"
        if options.get("spacing") == "header"
        else "voxel spacing",
        "nsd_tolerance": f"NSD's tolerance, in {length}",
        "worst_distance": f"distance of a missed lesion in the means, in {length}",
        "connectivity": "connectivity of the GT's components",
        "detection_rule": "what counts as a detected lesion",
        "reference_images": "the scans DICOM SEGs are placed on",
        "gt_suffix": "the GT files' suffix",
        "pred_suffix": "the prediction files' suffix",
        "tolerance_mm": "how far the GT's and the prediction's grids may differ, in mm; not a metric's tolerance",
        "nnunet_summary": "nnU-Net's voxel counts per case",
        "write_maps": "each case's outcome map written",
        "candidates": "lesion candidates of each probability map",
        "confidence": "a candidate's confidence",
        "match_by": "how candidates are matched to lesions",
        "prob_channel": "the probability maps' channel",
        "thresholds": "thresholds of the probability maps",
    }
    maps = options.get("probabilities")
    flat = {k: v for k, v in options.items() if k != "probabilities"}
    if isinstance(maps, Mapping):  # the maps' options by their own flags (segment_from_map: no PRED_DIR, no flag)
        flat.update({_MAP_FLAGS[k]: v for k, v in maps.items() if k in _MAP_FLAGS})
    shown = []
    for key, value in flat.items():
        if value is None or value is False or value == [] or (key == "tolerance_mm" and value == 1e-3):
            continue
        if value is True:
            text = ""
        elif isinstance(value, (list, tuple)):
            text = ",".join(_option_text(v) for v in value)
        else:
            text = _option_text(value)
        shown.append({"flag": "--" + key.replace("_", "-"), "value": text, "meaning": meanings.get(key, "")})
    return shown


#: the keys of ``options["probabilities"]`` by the ``ccmetrics evaluate`` flag that sets them
_MAP_FLAGS = {
    "candidates": "candidates",
    "confidence": "confidence",
    "match_by": "match_by",
    "channel": "prob_channel",
    "thresholds": "thresholds",
}


def _option_text(value: Any) -> str:
    """One option's value as typed at the command line: ``1`` for 1.0, ``wt=1+2`` for a named class."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        if "labels" in value and "value" in value:  # a class: ``wt=1+2+3`` named, else its label
            labels = "+".join(map(str, value["labels"] or [value["value"]]))
            named = value.get("name") not in (None, "", str(value["value"]))
            return f"{value['name']}={labels}" if named else labels
        return ", ".join(f"{k} {_option_text(v)}" for k, v in value.items() if v is not None)
    return str(value)


def worst_first(
    per_case: pd.DataFrame, metric: str | None, columns: dict[str, registry.Column] | None = None
) -> list[int]:
    """Row positions of the evaluated cases, the worst CC value of ``metric`` first.

    Ties (and cases without a value) are ordered by the size of the difference ``|m - cc_m|``,
    largest first; error rows are left out.
    """
    ok = per_case[per_case[schema.STATUS] != schema.FAILED]
    position = {label: i for i, label in enumerate(per_case.index)}
    if metric is None or schema.cc(metric) not in ok:
        return [position[label] for label in ok.index]
    worst = ok[schema.WORST_DISTANCE] if schema.WORST_DISTANCE in ok else np.nan
    distance = registry.is_distance(metric, columns)
    cc = cc_values(ok[schema.cc(metric)], metric, worst, columns)
    badness = cc if distance else -cc
    gap = np.abs(ok[f"delta_{metric}"].to_numpy(float)) if f"delta_{metric}" in ok else np.zeros(len(ok))
    order = np.lexsort((np.nan_to_num(-gap, nan=0.0), np.nan_to_num(-badness, nan=np.inf)))
    return [position[ok.index[i]] for i in order]


def hottest_first(suv_max: Sequence[Any]) -> list[int]:
    """Positions of ``suv_max`` (a lesion's SUVmax each, in the page's order), the hottest first.

    Equal values keep their given order (a stable sort: on the page, the order of the cases, then the lesion
    number); values that are no number (NaN, None, empty: a lesion whose uptake was not measured) come last, in
    their given order. One sort, O(n log n).

    Examples
    --------
    >>> hottest_first([2.5, 15.2, float("nan"), 15.2, None, 4.0])
    [1, 3, 5, 0, 2, 4]
    >>> hottest_first([]), hottest_first([float("nan")])
    ([], [0])
    """
    keys = []
    for i, v in enumerate(suv_max):
        try:
            number = float(v)
        except (TypeError, ValueError):
            number = math.nan
        keys.append((math.isnan(number), -number if not math.isnan(number) else 0.0, i))
    return [i for *_, i in sorted(keys)]


# ---------------------------------------------------------------- images


def resolve_image(name: Any, result_dir: Path, image_root: os.PathLike | None = None) -> Path | None:
    """The file a ``gt_file``/``pred_file`` entry names, or None when it cannot be found.

    A relative path is looked up under ``image_root`` when given, else under the current folder,
    the result folder and its parent (``ccmetrics evaluate`` writes the paths as it was given them).
    """
    if not isinstance(name, str) or not name or name == "<array>":
        return None
    path = Path(name)
    if path.is_absolute():
        return path if path.is_file() else None
    bases = [Path(image_root)] if image_root is not None else [Path.cwd(), result_dir, result_dir.parent]
    return next((b / path for b in bases if (b / path).is_file()), None)


def voxel_ml(spacing: Any, header: Sequence[float]) -> float:
    """Millilitres per voxel under the evaluation's ``spacing`` option (NaN for ``"voxel"``).

    >>> voxel_ml("header", (2.0, 2.0, 3.0)), voxel_ml("voxel", (2.0, 2.0, 3.0)), voxel_ml([2.0], (1.0, 1.0, 1.0))
    (0.012, nan, 0.008)
    """
    if spacing == "voxel":
        return math.nan
    values = np.asarray(header if spacing == "header" else spacing, float).ravel()
    if values.size == 1:  # one number given for every axis
        values = np.repeat(values, len(header))
    return float(np.prod(values)) / 1000.0


def __getattr__(name: str):
    """A name of the rooms this module was cut into (:data:`ROOMS`), or one it held before the registry
    (deprecated, computed from it)."""
    room = ROOMS.get(name)
    if room is not None:
        return getattr(importlib.import_module(f"{__package__}.{room}"), name)
    return registry.legacy(__name__, name)
