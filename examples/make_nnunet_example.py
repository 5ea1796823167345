"""Write a small nnU-Net v2 style data set with regions and an ignore label (run from the repository root).

Four synthetic brain-tumour-like cases of 48×44×36 voxels at 1×1×2 mm: edema (label 1) around a tumour
core (2) holding enhancing tumour (3), a second smaller lesion, and a slab of unannotated voxels (label 4,
``ignore``) at the edge of each GT; the predictions are the same lesions shifted by up to two voxels, with
a few scattered false positives of label 2. ``dataset.json`` defines the BraTS regions (whole tumour 1+2+3,
tumour core 2+3, enhancing tumour 3) with ``regions_class_order`` and the ignore label, as nnU-Net v2
expects them.

    python examples/make_nnunet_example.py nnunet_example   # writes nnunet_example/{labelsTr,pred,dataset.json}
"""

import json
import sys
from pathlib import Path

import numpy as np

from ccmetrics.formats.io import save_image

SHAPE = (48, 44, 36)
SPACING = (1.0, 1.0, 2.0)
LABELS = {"background": 0, "whole tumor": [1, 2, 3], "tumor core": [2, 3], "enhancing tumor": 3, "ignore": 4}


def tumour(seed: int) -> np.ndarray:
    """One case's label map (without the ignore slab); deterministic."""
    rng = np.random.default_rng(seed)
    grid = np.indices(SHAPE).astype(float)
    out = np.zeros(SHAPE, np.uint8)
    for k in range(2):
        centre = rng.uniform(9, np.array(SHAPE) - 9)
        r = np.sqrt(((grid - centre[:, None, None, None]) ** 2).sum(0))
        size = rng.uniform(4, 7) * (1.0 if k == 0 else 0.5)
        out[r < size * 1.6] = 1
        out[r < size] = 2
        out[r < size * 0.5] = 3
    return out


def make_cases():
    """Yield (case id, gt, pred) for the four cases."""
    for i in range(4):
        gt = tumour(30 + i)
        rng = np.random.default_rng(60 + i)
        pred = np.roll(gt, rng.integers(-2, 3, 3), axis=(0, 1, 2)).copy()
        pred[(rng.random(SHAPE) < 0.0002) & (pred == 0)] = 2
        gt[:, :, : 2 + i % 2] = 4  # the first slices: not annotated
        yield f"BraTS_{i:03d}", gt, pred


def main(out: Path) -> None:
    for sub in ("labelsTr", "pred"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for case, gt, pred in make_cases():
        save_image(out / "labelsTr" / f"{case}.nii.gz", gt, spacing=SPACING)
        save_image(out / "pred" / f"{case}.nii.gz", pred, spacing=SPACING)
    doc = {"channel_names": {"0": "T1"}, "labels": LABELS, "regions_class_order": [1, 2, 3]}
    doc |= {"numTraining": 4, "file_ending": ".nii.gz"}
    (out / "dataset.json").write_text(json.dumps(doc, indent=2))
    print(f"wrote 4 cases into {out}/labelsTr and {out}/pred, and {out}/dataset.json")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "nnunet_example"))
