"""Cross-check which channel of nnU-Net's ``--save_probabilities`` ``.npz`` ccmetrics reads for each class.

Not part of the test suite (nnU-Net v2 pulls torch, blosc2 and more). nnU-Net's ``LabelManager`` decides the
channels of a model from its dataset.json: a label-based model writes a softmax over ``all_labels`` (background 0,
then every label value, sorted); a region-based one (a label given as a list) one sigmoid per entry of
``foreground_regions`` (the foreground entries of ``labels`` in their order, no background). This script builds
the ``LabelManager`` of several dataset.json label dictionaries and checks, for every class ccmetrics makes of the
same dataset.json, that the channel ccmetrics reads (``ProbabilityOptions.with_classes``) is the channel of that
label or region in nnU-Net's list.

Run with nnU-Net importable (``pip install nnunetv2`` in another environment; nothing of its network code is
needed), from the repository root: ``python tests/crosscheck/nnunet_probability_channels.py``. Checked with
nnunetv2 2.8.1 (its ``label_handling`` module, with ``acvl_utils`` and ``batchgenerators``): every class agreed.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

LABEL_DICTS = [
    ({"background": 0, "lesion": 1}, None),
    ({"background": 0, "liver": 1, "tumour": 2}, None),
    ({"background": 0, "a": 1, "b": 2, "c": 3, "ignore": 4}, None),
    ({"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3], "enhancing tumor": 3}, [1, 2, 3]),
    ({"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3], "enhancing tumor": [3], "ignore": 4}, [1, 2, 3]),
    ({"background": 0, "kidney": [1, 2], "tumour": 2}, [1, 2]),
]


def main() -> int:
    from nnunetv2.utilities.label_handling.label_handling import LabelManager

    from ccmetrics.campaign.probabilities import ProbabilityOptions
    from ccmetrics.metrics.classes import read_dataset_json

    failures = 0
    for labels, order in LABEL_DICTS:
        manager = LabelManager(labels, regions_class_order=order)
        channels = (
            [tuple(r) if isinstance(r, (list, tuple)) else (int(r),) for r in manager.foreground_regions]
            if manager.has_regions
            else [(int(v),) for v in manager.all_labels]
        )
        path = Path(tempfile.mkdtemp()) / "dataset.json"
        path.write_text(json.dumps({"labels": labels, "regions_class_order": order, "file_ending": ".nii.gz"}))
        spec = read_dataset_json(path)
        region_based = any(c.is_region for c in spec.classes)
        options = ProbabilityOptions.build(None, None, pred_given=True, region_based=region_based)
        chosen = dict(options.with_classes(spec.classes).class_channels)
        for c in spec.classes:
            ours = chosen[c.value]
            theirs = channels.index(tuple(int(v) for v in c.labels))
            verdict = "ok" if ours == theirs else "DIFFERENT"
            failures += ours != theirs
            print(f"{verdict:9} {c.name!r:20} labels {c.labels}: ccmetrics channel {ours}, nnU-Net channel {theirs}")
    print("every class agrees with nnU-Net's LabelManager" if not failures else f"{failures} classes differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
