"""Which classes of a label map are evaluated: labels, regions (unions of labels), names, the ignore label.

A foundation of the formats (the bottom layer): a DICOM SEG's segments and an nnU-Net ``dataset.json`` are read
into these classes, which every layer above cuts its masks with (also importable as
``ccmetrics.metrics.classes``, the same objects).

A class is one binary mask cut from a label map: a single label (``gt == 2``) or a *region*, the union
of several labels (BraTS: whole tumour = labels 1, 2, 3; tumour core = 2, 3; enhancing = 3; regions may
overlap). Every class is evaluated on its own, as one binary case, and named in the tables.

Where classes come from:

* ``--classes 1,2`` (``classes=[1, 2]``): labels 1 and 2, named ``"1"`` and ``"2"``;
* ``--classes "wt=1+2+3,tc=2+3,et=3"`` (``parse_classes``): named regions and labels;
* an nnU-Net v2 ``dataset.json`` (:func:`ccmetrics.formats.nnunet.read_dataset_json`): every key of ``labels`` except
  ``background`` and ``ignore``, a label or a region (a list of labels), named by its key; the
  ``ignore`` label and the ``file_ending``.

The ``class`` column of the tables holds the label value when every class is one label (as before
names existed), else the class's position 1..n; ``class_name`` holds its name.

The ignore label (nnU-Net: voxels without annotation): its voxels, found in the GT, are set to
background in *both* the GT and the prediction before anything else (:func:`remove_ignored`). nnU-Net
leaves them out of TP, FP and FN, so Dice and IoU equal nnU-Net's; for the other metrics an ignored
voxel is background: a prediction there is neither a false positive nor a component, and distances
are measured as if the region had no annotation and no prediction.

Examples
--------
>>> [(c.value, c.name, c.labels) for c in parse_classes("wt=1+2+3,tc=2+3,et=3")]
[(1, 'wt', (1, 2, 3)), (2, 'tc', (2, 3)), (3, 'et', (3,))]
>>> [c.value for c in parse_classes([2, 5])]
[2, 5]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ClassSpec", "class_values", "parse_classes", "remove_ignored"]

_NAME = re.compile(r"^[A-Za-z0-9_.\- ]+$")


@dataclass(frozen=True)
class ClassSpec:
    """One evaluated class: its ``class`` value in the tables, its name, and the labels whose union it is.

    Attributes
    ----------
    value : int
        The ``class`` value in the tables.
    name : str
    labels : tuple of int
        The labels whose union the class is, in the order given.
    one_label_region : bool
        A region of one label: given as a list (``"enhancing tumor": [3]``, as nnU-Net's BraTS conversion
        writes it) in a ``dataset.json`` (or mapping) that also has a region of two or more labels. nnU-Net then
        evaluates it as the tuple ``(3,)`` and keys it ``"(3,)"``; in a data set without such a region it
        evaluates the label 3 (key ``"3"``), so this is False there, as for every other class.
    """

    value: int
    name: str
    labels: tuple[int, ...]
    one_label_region: bool = False

    @property
    def is_region(self) -> bool:
        """Whether the class is the union of two or more labels."""
        return len(self.labels) > 1

    @property
    def nnunet_key(self) -> str:
        """The class's key in nnU-Net's ``summary.json``: ``"2"`` for a label, ``"(1, 2, 3)"`` for a region.

        nnU-Net's ``label_or_region_to_key`` is ``str()`` of what it evaluates: an int label, or a region as
        the tuple of its labels in the order given, ``"(3,)"`` for a region of one label
        (``one_label_region``).

        >>> ClassSpec(1, "et", (3,)).nnunet_key, ClassSpec(3, "et", (3,), one_label_region=True).nnunet_key
        ('3', '(3,)')
        """
        if len(self.labels) == 1 and not self.one_label_region:
            return str(self.labels[0])
        return str(tuple(self.labels))

    def mask(self, label_map: np.ndarray) -> np.ndarray:
        """The class's boolean mask in a label map (``label_map == label``, or the union of its labels).

        >>> ClassSpec(1, "tc", (2, 3)).mask(np.array([0, 1, 2, 3])).tolist()
        [False, False, True, True]
        """
        if len(self.labels) == 1:
            return label_map == self.labels[0]
        return np.isin(label_map, self.labels)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (``one_label_region`` only where True, so other classes' records are unchanged)."""
        data: dict[str, Any] = {"value": self.value, "name": self.name, "labels": list(self.labels)}
        if self.one_label_region:
            data["one_label_region"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClassSpec:
        """The ClassSpec of :meth:`to_dict`'s data."""
        labels = tuple(int(v) for v in data["labels"])
        return cls(int(data["value"]), str(data["name"]), labels, bool(data.get("one_label_region", False)))


def _label(text: Any, where: str) -> int:
    if isinstance(text, bool):
        raise ValueError(f"{where}: {text!r} is not a label value")
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not an integer label") from None
    if value < 0:
        raise ValueError(f"{where}: label values are >= 0, got {value}")
    return value


def _number(
    specs: list[tuple[str, tuple[int, ...]]], one_label_regions: frozenset[str] = frozenset()
) -> tuple[ClassSpec, ...]:
    """ClassSpecs with their ``class`` values: the label when every class is one label, else 1..n; the classes
    named in ``one_label_regions`` are regions of one label (``one_label_region``)."""
    if not specs:
        raise ValueError("classes is empty: name at least one label or region")
    names = [n for n, _ in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"class names must be distinct, got {names}")
    for name, labels in specs:
        if len(set(labels)) != len(labels):
            raise ValueError(f"class {name!r} repeats a label: {list(labels)}")
        if 0 in labels:
            raise ValueError(f"class {name!r} holds label 0, the background; name foreground labels only")
    single = all(len(labels) == 1 for _, labels in specs)
    if single:
        values = [labels[0] for _, labels in specs]
        if len(set(values)) != len(values):
            raise ValueError(f"two classes are the same label: {values}")
        return tuple(ClassSpec(labels[0], name, labels) for name, labels in specs)
    return tuple(
        ClassSpec(i, name, labels, name in one_label_regions) for i, (name, labels) in enumerate(specs, start=1)
    )


def parse_classes(classes: Any) -> tuple[ClassSpec, ...]:
    """Classes from labels (``[1, 2]``, ``"1,2"``), named regions (``"wt=1+2+3,tc=2+3,et=3"``) or ClassSpecs.

    Parameters
    ----------
    classes : sequence of int, str, or sequence of ClassSpec
        Integers are labels named by their value; in text, ``name=l1+l2`` is a region named ``name``,
        ``name=3`` a named label, a bare number a label; a mapping name -> label or list of labels
        (as ``dataset.json``'s ``labels``) is taken in its order; there, as in nnU-Net, a list of one label
        is a region of one label (``one_label_region``) when another entry is a list of two or
        more labels, else the label.

    Returns
    -------
    tuple of ClassSpec

    Raises
    ------
    ValueError, TypeError
        Empty, repeated names or labels, label 0, a negative or non-integer label.

    Examples
    --------
    >>> [(c.value, c.name, c.labels) for c in parse_classes("liver=1, tumour=2")]
    [(1, 'liver', (1,)), (2, 'tumour', (2,))]
    >>> parse_classes({"whole tumor": [1, 2, 3], "enhancing tumor": 3})[1].nnunet_key
    '3'
    >>> parse_classes({"whole tumor": [1, 2, 3], "enhancing tumor": [3]})[1].nnunet_key
    '(3,)'
    >>> parse_classes({"edema": [1], "core": 2})[0].nnunet_key
    '1'
    """
    if isinstance(classes, ClassSpec):
        classes = [classes]
    if isinstance(classes, (list, tuple)) and classes and all(isinstance(c, ClassSpec) for c in classes):
        values = [c.value for c in classes]
        if len(set(values)) != len(values) or len({c.name for c in classes}) != len(classes):
            raise ValueError(f"classes must have distinct values and names, got {list(classes)}")
        return tuple(classes)
    if isinstance(classes, dict):
        # nnU-Net's LabelManager: a data set has regions when an entry is a list or tuple of 2+ labels; then
        # every list or tuple is a region (a tuple, also of one label), else every entry is a label
        has_regions = any(isinstance(v, (list, tuple)) and len(v) > 1 for v in classes.values())
        specs, one_label_regions = [], set()
        for name, labels in classes.items():
            if has_regions and isinstance(labels, (list, tuple)) and len(labels) == 1:
                one_label_regions.add(str(name))
            labels = labels if isinstance(labels, (list, tuple)) else [labels]
            specs.append((str(name), tuple(_label(v, f"class {name!r}") for v in labels)))
        return _number(specs, frozenset(one_label_regions))
    if isinstance(classes, str):
        specs = []
        for part in (p.strip() for p in classes.split(",")):
            if not part:
                continue
            name, sep, labels = (s.strip() for s in part.partition("="))
            if not sep:
                value = _label(part, "classes")
                specs.append((str(value), (value,)))
                continue
            if not name or not _NAME.match(name):
                raise ValueError(
                    f"class name {name!r} in {classes!r}: use letters, digits, '_', '-', '.' or spaces, e.g. wt=1+2+3"
                )
            specs.append((name, tuple(_label(v, f"class {name!r}") for v in labels.split("+"))))
        return _number(specs)
    if np.isscalar(classes):
        raise TypeError(f"classes must be a sequence of labels such as [1, 2] or text such as '1,2', got {classes!r}")
    values = list(np.asarray(classes).ravel()) if isinstance(classes, np.ndarray) else list(classes)
    for c in values:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, np.integer)):
            raise TypeError(f"classes must hold integer labels, got {c!r} in {classes!r}")
    if len(set(int(c) for c in values)) != len(values):
        raise ValueError(f"classes must be distinct, got {classes!r}")
    return _number([(str(int(c)), (_label(c, "classes"),)) for c in values])


def remove_ignored(gt: np.ndarray, pred: np.ndarray, ignore_label: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Set the voxels the GT marks with ``ignore_label`` to background in both label maps.

    Returns the two maps (copies where something changed; the inputs are not modified) and the
    number of ignored voxels.

    >>> gt, pred = np.array([1, 2, 2, 0]), np.array([1, 1, 0, 1])
    >>> remove_ignored(gt, pred, 2)
    (array([1, 0, 0, 0]), array([1, 0, 0, 1]), 2)
    """
    if ignore_label is None:
        return gt, pred, 0
    ignored = gt == ignore_label
    count = int(np.count_nonzero(ignored))
    if not count:
        return gt, pred, 0
    gt, pred = gt.copy(), pred.copy()
    gt[ignored] = 0
    pred[ignored] = 0
    return gt, pred, count


def class_values(classes: Sequence[ClassSpec] | None) -> list[int]:
    """The ``class`` values of the tables: the classes', or ``[1]`` for a binary evaluation."""
    return [c.value for c in classes] if classes else [1]
