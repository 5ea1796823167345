"""The report's data: the result folder, the case ranking and the differences of its scores.

Nothing here draws or writes HTML. A result folder of ``ccmetrics evaluate`` is read with
:meth:`ccmetrics.campaign.dataset.DatasetResult.read` (tables), ``summary.json`` (counts, summary, options)
and ``plots/*.png`` (:func:`read_result_folder`); the cases are ranked worst first by the primary metric
(:func:`primary_metric`, :func:`worst_first`), and a case's ``standard − CC`` difference is undefined where either
value is ∞ (:func:`with_differences`, :func:`undefined_difference`). With the ``pet`` columns (each lesion's SUVmax and
MTV, :attr:`ResultFolder.uptake`) the missed lesions are ranked hottest first (:func:`hottest_first`) and counted
hot from :data:`HOT_SUV_MAX` (:meth:`ResultFolder.hot_suv_max`). The files a table names are found by
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
from collections.abc import Sequence
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
#: the SUVmax from which the report's summary counts a missed lesion as hot (a fixed cut-off; the evaluation's
#: ``suv_bins`` option, when it has one, gives its top edge instead: :meth:`ResultFolder.hot_suv_max`)
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

    def hot_suv_max(self) -> tuple[float, bool]:
        """The SUVmax from which a missed lesion counts as hot, and whether it is the top edge of the evaluation's
        ``suv_bins`` option (else the fixed :data:`HOT_SUV_MAX`)."""
        edges = self.options.get("suv_bins")
        if isinstance(edges, str):  # as the command line takes them: "2.5,4,10"
            edges = edges.split(",")
        try:
            values = [float(e) for e in edges] if edges else []
        except (TypeError, ValueError):
            values = []
        finite = [v for v in values if math.isfinite(v)]
        return (max(finite), True) if finite else (HOT_SUV_MAX, False)

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
