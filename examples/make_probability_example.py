"""Write GT masks and two models' probability maps in nnU-Net's ``--save_probabilities`` layout (run from the
repository root).

Twelve synthetic PET-like cases of 64×64×32 voxels at 2×2×3 mm, nine with one to four lesions (ellipsoids of
radius 1.5 to 6 voxels), three without. Each model's map is the GT blurred, each lesion found with its own
strength (small ones fainter, some missed), plus a few false-positive blobs; model ``b`` is the noisier of the two.
The files are written as nnU-Net v2 writes them: the GT through SimpleITK (``CASE.nii.gz``, as
``labelsTr`` holds it), and per model ``CASE.npz`` (key ``probabilities``, shape (2, z, y, x): SimpleITK's array
order) beside the segmentation ``CASE.nii.gz`` (the argmax) and a ``CASE.pkl``-like ``CASE.json``.

    python examples/make_probability_example.py prob_example   # writes prob_example/{gt,model_a,model_b}
"""

import json
import sys
from pathlib import Path

import numpy as np
import SimpleITK as sitk
from scipy import ndimage

SHAPE = (64, 64, 32)  # x, y, z (the GT's array as ccmetrics reads it)
SPACING = (2.0, 2.0, 3.0)
CASES = 12


def case_arrays(i: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One case's GT and the two models' probability maps, (x, y, z); deterministic."""
    rng = np.random.default_rng(500 + i)
    grid = np.indices(SHAPE).astype(np.float32)
    gt = np.zeros(SHAPE, bool)
    lesions = []
    for _ in range(0 if i % 4 == 3 else int(rng.integers(1, 5))):
        centre = rng.uniform(8, np.array(SHAPE) - 8)
        radius = rng.uniform(1.5, 6.0) * np.array([1.0, 1.0, 0.7])
        inside = (((grid - centre[:, None, None, None]) / radius[:, None, None, None]) ** 2).sum(0) <= 1
        gt |= inside
        lesions.append((inside, min(1.0, float(radius[0]) / 4.0)))  # small lesions come out fainter
    maps = {}
    for model, (lo, hi), noise in (("a", (0.35, 1.0), 2), ("b", (0.1, 0.9), 4)):
        own = np.random.default_rng([500 + i, ord(model)])
        raw = np.zeros(SHAPE, np.float32)
        for inside, size in lesions:
            raw[inside] = size * own.uniform(lo, hi) if own.uniform() < 0.9 else 0.0
        for _ in range(int(own.integers(0, noise + 1))):  # false positives
            x, y, z = (int(own.integers(4, s - 4)) for s in SHAPE)
            raw[x - 2 : x + 2, y - 2 : y + 2, z - 1 : z + 2] = own.uniform(0.2, 0.8)
        prob = np.clip(ndimage.gaussian_filter(raw, sigma=(1.2, 1.2, 0.8)) * 1.6, 0, 1)
        prob[prob < 0.02] = 0  # what a softmax calls background
        maps[model] = prob.astype(np.float32)
    return gt.astype(np.uint8), maps


def write_like_nnunet(path: Path, zyx: np.ndarray, reference: sitk.Image) -> None:
    image = sitk.GetImageFromArray(zyx)
    image.CopyInformation(reference)
    sitk.WriteImage(image, str(path))


def main(out: Path) -> None:
    for sub in ("gt", "model_a", "model_b"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for i in range(CASES):
        case = f"case_{i:03d}"
        gt, maps = case_arrays(i)
        reference = sitk.GetImageFromArray(gt.T.copy())  # SimpleITK's array order is (z, y, x)
        reference.SetSpacing(SPACING)
        reference.SetOrigin((-64.0, -64.0, -48.0))
        sitk.WriteImage(reference, str(out / "gt" / f"{case}.nii.gz"))
        for model, prob in maps.items():
            folder = out / f"model_{model}"
            zyx = prob.T.copy()
            np.savez_compressed(folder / f"{case}.npz", probabilities=np.stack([1 - zyx, zyx]))
            write_like_nnunet(folder / f"{case}.nii.gz", (zyx > 0.5).astype(np.uint8), reference)
            (folder / f"{case}.json").write_text(json.dumps({"spacing": list(SPACING)}))
    print(f"wrote {CASES} cases to {out}: gt/, model_a/ and model_b/ (CASE.npz beside CASE.nii.gz, as nnU-Net)")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "prob_example"))
