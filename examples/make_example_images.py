"""Write fake scans under the example data set, for ``ccmetrics report --images`` (run from the repository root).

For each GT of ``examples/data/gt`` two channels, named as nnU-Net names them, on the GT's voxel grid:

* ``CASE_0000.nii.gz``, a CT (int16, HU): air -1000 around an elliptic body (soft tissue 40 HU, a fat
  rim at -100 HU, a "liver" at 60 HU, a vertebra at 700 HU), the GT lesions hypodense (10 HU), noise;
* ``CASE_0001.nii.gz``, a PET (float32, SUV-like): 1 in the body, 2 in the liver, each lesion 4-10,
  blurred as a PET scanner blurs, noise;

except ``case_004``, whose PET is left on its own coarser grid (48×48×48 voxels of 4×4×3 mm, as a PET
reconstructed but not resampled to the CT): the report must not draw that case on the scan, and an evaluation
with ``--metrics ...,pet`` gives it an error row. With ``--all-on-grid`` every PET is on its GT's grid (an
autoPET-style data set: the PET resampled to the CT). Deterministic.

    python examples/make_example_images.py images        # writes images/case_00N_000{0,1}.nii.gz
    python examples/make_example_images.py pet_images --all-on-grid
"""

from pathlib import Path

import numpy as np
from scipy import ndimage

from ccmetrics import label_components
from ccmetrics.formats.io import Image, load_image, save_image

#: the case whose PET is not resampled to the GT's grid
OTHER_GRID = "case_004"


def body(shape):
    """Masks of the body, its fat rim, the liver and the vertebra (the same in every slice)."""
    i, j = np.ogrid[: shape[0], : shape[1]]
    ci, cj = (shape[0] - 1) / 2, (shape[1] - 1) / 2
    r = ((i - ci) / (0.54 * shape[0])) ** 2 + ((j - cj) / (0.47 * shape[1])) ** 2
    inside, core = r <= 1.0, r <= 0.8
    liver = ((i - ci + 0.18 * shape[0]) / (0.16 * shape[0])) ** 2 + ((j - cj) / (0.2 * shape[1])) ** 2 <= 1.0
    spine = ((i - ci) / (0.05 * shape[0])) ** 2 + ((j - cj + 0.26 * shape[1]) / (0.05 * shape[1])) ** 2 <= 1.0
    return [np.broadcast_to(m[:, :, None], shape) for m in (inside, inside & ~core, liver & core, spine & core)]


def fake_scans(gt: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(CT, PET) under one GT mask."""
    rng = np.random.default_rng(seed)
    inside, fat, liver, spine = body(gt.shape)
    ct = np.full(gt.shape, -1000.0)
    ct[inside] = 40.0
    ct[fat] = -100.0
    ct[liver] = 60.0
    ct[spine] = 700.0
    ct[gt] = 10.0
    ct = ndimage.gaussian_filter(ct, 0.6) + rng.normal(0.0, 10.0, gt.shape)
    pet = np.zeros(gt.shape)
    pet[inside] = 1.0
    pet[liver] = 2.0
    labels, n = label_components(gt)
    uptake = np.concatenate([[0.0], rng.uniform(4.0, 10.0, n)])
    pet = np.maximum(pet, uptake[labels])
    pet = ndimage.gaussian_filter(pet, 1.2) * rng.normal(1.0, 0.08, gt.shape)
    return np.round(ct).astype(np.int16), np.round(np.clip(pet, 0.0, None), 2).astype(np.float32)


def main(out: Path, gt_dir: Path = Path("examples/data/gt"), all_on_grid: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(gt_dir.glob("*.nii.gz"))
    for seed, path in enumerate(files):
        gt = load_image(path)
        case = path.name[: -len(".nii.gz")]
        ct, pet = fake_scans(gt.array != 0, seed)
        save_image(out / f"{case}_0000.nii.gz", ct, like=gt)
        if case == OTHER_GRID and not all_on_grid:  # 4×4×3 mm: every second voxel along i and j, the same field of view
            affine = gt.affine.copy()
            affine[:2, :2] *= 2
            affine[:2, 3] += 0.5 * np.diag(gt.affine)[:2]  # the centre of the first 2×2 voxels
            coarse = pet.reshape(pet.shape[0] // 2, 2, pet.shape[1] // 2, 2, -1).mean(axis=(1, 3))
            save_image(out / f"{case}_0001.nii.gz", coarse, like=Image(coarse, (4.0, 4.0, 3.0), affine))
        else:
            save_image(out / f"{case}_0001.nii.gz", pet, like=gt)
    where = "every PET on its GT's grid" if all_on_grid else f"{OTHER_GRID}'s PET on its own grid"
    print(f"wrote {2 * len(files)} images of {len(files)} cases to {out} ({where})")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="images", help="the folder to write (default: images)")
    parser.add_argument("--all-on-grid", action="store_true", help="every PET on its GT's grid (autoPET-style)")
    args = parser.parse_args()
    main(Path(args.out), all_on_grid=args.all_on_grid)
