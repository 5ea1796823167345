"""Write the small example data set shipped in ``examples/data`` (run from the repository root).

Six synthetic PET-like cases of 96×96×48 voxels at 2.0×2.0×3.0 mm, as NIfTI:

* ``case_001`` … ``case_004``: a few ellipsoidal lesions each and a degraded
  prediction (shifted and scaled lesions, every fifth lesion missed, small
  false positives), from :func:`ccmetrics.synthetic.lesion_case`;
* ``case_005``: a GT whose prediction file is missing (evaluated as an empty
  prediction and flagged);
* ``case_006``: a healthy control (empty GT) with one small false positive.

``pred_b`` holds a second model's predictions of the same cases, for comparisons: every lesion
over-segmented by one voxel (a dilation with the face-connected cross), the smallest lesion of each
case missed, no false positive (``case_006`` empty, ``case_005`` predicted too).

    python examples/make_example_data.py            # writes examples/data/{gt,pred,pred_b}
"""

import sys
from pathlib import Path

import numpy as np
from scipy import ndimage

from ccmetrics import label_components
from ccmetrics.formats.io import save_image
from ccmetrics.synthetic import draw_ellipsoid, lesion_case

SHAPE = (96, 96, 48)
SPACING = (2.0, 2.0, 3.0)
AFFINE = np.diag(SPACING + (1.0,))
AFFINE[:3, 3] = (-96.0, -96.0, -72.0)  # centred field of view, mm


def make_cases():
    """Yield (case id, gt, pred or None) for the six cases; deterministic."""
    for i in range(1, 6):
        gt, pred = lesion_case(SHAPE, n_lesions=3 + i, radius_range=(2.5, 10.0), n_false_positives=1, seed=100 + i)
        yield f"case_{i:03d}", gt, (pred if i != 5 else None)
    gt = np.zeros(SHAPE, bool)
    pred = np.zeros(SHAPE, bool)
    draw_ellipsoid(pred, (40, 50, 20), (2.5, 2.5, 1.5))
    yield "case_006", gt, pred


def second_model(gt: np.ndarray) -> np.ndarray:
    """Model B: every lesion one voxel larger, the smallest lesion missed."""
    labels, n = label_components(gt)
    if n == 0:
        return np.zeros_like(gt)
    smallest = int(np.argmin(np.bincount(labels.ravel())[1:])) + 1
    return ndimage.binary_dilation(gt & (labels != smallest))


def main(out: Path = Path("examples/data")) -> None:
    from ccmetrics.formats.io import Image

    like = Image(np.zeros(SHAPE, np.uint8), SPACING, AFFINE)
    for sub in ("gt", "pred", "pred_b"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for case, gt, pred in make_cases():
        save_image(out / "gt" / f"{case}.nii.gz", gt.astype(np.uint8), like=like)
        if pred is not None:
            save_image(out / "pred" / f"{case}.nii.gz", pred.astype(np.uint8), like=like)
        save_image(out / "pred_b" / f"{case}.nii.gz", second_model(gt).astype(np.uint8), like=like)
    print(f"wrote {out / 'gt'}, {out / 'pred'} and {out / 'pred_b'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("examples/data"))
