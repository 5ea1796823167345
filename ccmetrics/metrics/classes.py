"""Which classes of a label map are evaluated: :mod:`ccmetrics.formats.classes`, read here too.

The classes (``ClassSpec``, ``parse_classes``, ``remove_ignored``, ``class_values``) moved down to the formats,
the bottom layer, which reads them from DICOM SEG headers and nnU-Net's ``dataset.json``
(:func:`ccmetrics.formats.nnunet.read_dataset_json`); this documented path keeps giving the same objects, without
a warning, for the metrics layer that cuts its masks with them.

Examples
--------
>>> import ccmetrics.formats.classes
>>> ClassSpec is ccmetrics.formats.classes.ClassSpec
True
>>> [(c.value, c.name, c.labels) for c in parse_classes("wt=1+2+3,et=3")]
[(1, 'wt', (1, 2, 3)), (2, 'et', (3,))]
"""

from __future__ import annotations

from ..formats.classes import ClassSpec, class_values, parse_classes, remove_ignored
from ..formats.nnunet import DatasetJson, read_dataset_json

__all__ = ["ClassSpec", "DatasetJson", "class_values", "parse_classes", "read_dataset_json", "remove_ignored"]
