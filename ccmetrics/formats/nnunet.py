"""nnU-Net's ``dataset.json``: the classes (labels and regions), the ignore label and the file ending of a data set.

nnU-Net v2 describes a data set in ``dataset.json``: ``labels`` maps each name to a label value or, for a
region-based data set, to the list of labels whose union the region is (``regions_class_order`` then gives the
order of the model's channels); ``labels["ignore"]`` is the label of voxels without annotation, and
``file_ending`` (``".nii.gz"``) the images' extension. :func:`read_dataset_json` reads them into the classes of
:mod:`ccmetrics.formats.classes` (as nnU-Net's ``LabelManager`` does: a list of one label is a region of one label
when another entry is a list of two or more), refusing, with the key and what nnU-Net expects, anything nnU-Net
would not read. Cost: one small JSON file.

nnU-Net's ``summary.json``, which ccmetrics writes from its tables, is :mod:`ccmetrics.results.nnunet`
(``ccmetrics.formats.nnunet.nnunet_summary`` still gives it, with a ``DeprecationWarning``, until ccmetrics 0.3).
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass
from typing import Any

from .._deprecation import deprecated
from .classes import ClassSpec, _label, parse_classes

__all__ = ["DatasetJson", "read_dataset_json"]


@dataclass(frozen=True)
class DatasetJson:
    """What ccmetrics takes from an nnU-Net v2 ``dataset.json``.

    Attributes
    ----------
    classes : tuple of ClassSpec
        Every key of ``labels`` but ``background`` and ``ignore``, in the file's order.
    ignore_label : int or None
        The value of ``labels["ignore"]``, if any.
    file_ending : str
        E.g. ``".nii.gz"``: only files with this ending are paired.
    regions_class_order : tuple of int or None
    path : str
    channel_names : tuple of str
        The image channels' names by number (``channel_names``, nnU-Net v1's ``modality``), e.g. ``("CT", "PET")``;
        empty when the file names none.
    """

    classes: tuple[ClassSpec, ...]
    ignore_label: int | None
    file_ending: str
    regions_class_order: tuple[int, ...] | None
    path: str
    channel_names: tuple[str, ...] = ()

    @property
    def has_regions(self) -> bool:
        return any(c.is_region for c in self.classes)


def read_dataset_json(path: str | os.PathLike[str]) -> DatasetJson:
    """Read the labels, regions, ignore label and file ending of an nnU-Net v2 ``dataset.json``.

    Raises
    ------
    FileNotFoundError
    ValueError
        Not JSON, no ``labels`` or ``file_ending``, a label that is not an integer, a region without
        ``regions_class_order``: the message says which key and what nnU-Net expects.

    Examples
    --------
    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "dataset.json")
    >>> with open(path, "w") as f:
    ...     json.dump({"labels": {"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3],
    ...                "enhancing tumor": 3, "ignore": 4}, "regions_class_order": [1, 2, 3],
    ...                "file_ending": ".nii.gz"}, f)
    >>> d = read_dataset_json(path)
    >>> [(c.value, c.name, c.nnunet_key) for c in d.classes], d.ignore_label, d.file_ending
    ([(1, 'whole tumor', '(1, 2, 3)'), (2, 'tumor core', '(2, 3)'), (3, 'enhancing tumor', '3')], 4, '.nii.gz')

    A list of one label, as nnU-Net's BraTS conversion scripts write ``"enhancing tumor": [3]``, is a region
    of one label, keyed ``"(3,)"`` as nnU-Net keys it:

    >>> with open(path, "w") as f:
    ...     json.dump({"labels": {"background": 0, "whole tumor": [1, 2, 3], "enhancing tumor": [3]},
    ...                "regions_class_order": [1, 3], "file_ending": ".nii.gz"}, f)
    >>> [c.nnunet_key for c in read_dataset_json(path).classes]
    ['(1, 2, 3)', '(3,)']
    """
    path = os.fspath(path)
    try:
        with open(path) as f:
            doc = json.load(f)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}): give nnU-Net's dataset.json") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("labels"), dict):
        raise ValueError(
            f'{path} has no \'labels\' mapping (nnU-Net v2: "labels": {{"background": 0, "tumour": 1}}); '
            f"is it an nnU-Net v2 dataset.json? (v1's 'labels' maps values to names: convert it first)"
        )
    ending = doc.get("file_ending")
    if not isinstance(ending, str) or not ending.startswith("."):
        raise ValueError(f"{path} has no 'file_ending' such as \".nii.gz\" (nnU-Net v2 needs one)")
    labels = dict(doc["labels"])
    background = labels.pop("background", None)
    if background is not None and _label(background, f"{path}: labels['background']") != 0:
        raise ValueError(f"{path}: labels['background'] must be 0 (nnU-Net's convention), got {background!r}")
    ignore = labels.pop("ignore", None)
    ignore_label = None if ignore is None else _label(ignore, f"{path}: labels['ignore']")
    if not labels:
        raise ValueError(f"{path}: 'labels' names no foreground label besides background and ignore")
    classes = parse_classes(labels)
    order = doc.get("regions_class_order")
    if any(c.is_region for c in classes) and order is None:
        raise ValueError(f"{path} defines regions (a label given as a list) but no 'regions_class_order'")
    if ignore_label is not None and any(ignore_label in c.labels for c in classes):
        raise ValueError(f"{path}: the ignore label {ignore_label} is also part of a class")
    order_values = tuple(int(v) for v in order) if order is not None else None
    return DatasetJson(classes, ignore_label, ending, order_values, path, _channel_names(doc, path))


def _channel_names(doc: dict[str, Any], path: str) -> tuple[str, ...]:
    """``channel_names`` (or v1's ``modality``), ``{"0": "CT", "1": "PET"}``, as names by channel number.

    >>> _channel_names({"channel_names": {"1": "PET", "0": "CT"}}, "dataset.json")
    ('CT', 'PET')
    >>> _channel_names({}, "dataset.json")
    ()
    """
    names = doc.get("channel_names", doc.get("modality"))
    if names is None:
        return ()
    if not isinstance(names, dict):
        raise ValueError(f'{path}: \'channel_names\' must map channel numbers to names, e.g. {{"0": "CT", "1": "PET"}}')
    try:
        numbered = {int(k): str(v) for k, v in names.items()}
    except ValueError:
        raise ValueError(f'{path}: \'channel_names\' keys must be channel numbers ("0", "1", ...)') from None
    return tuple(numbered.get(i, "") for i in range(max(numbered) + 1)) if numbered else ()


def __getattr__(name: str) -> Any:
    """The summary writer of the former layout (``nnunet_summary``), with a ``DeprecationWarning``."""
    # imported by name: the formats are the bottom layer and never import the results' package above them
    return deprecated(
        __name__,
        name,
        {"nnunet_summary": lambda: importlib.import_module("ccmetrics.results.nnunet").nnunet_summary},
        "use ccmetrics.results.nnunet.nnunet_summary (the formats layer no longer writes result tables); "
        "the former path works until ccmetrics 0.3",
    )
