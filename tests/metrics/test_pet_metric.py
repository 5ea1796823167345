"""The ``pet`` metric group of ``evaluate(image=...)`` against brute force with numpy (issue 41).

The references loop over ``label_components`` and ``voronoi_partition`` with plain masks, sums over sphere offsets
and all voxel pairs: none of the kernels of ccmetrics.metrics.pet is called.
"""

import itertools

import numpy as np
import pytest

from ccmetrics import evaluate
from ccmetrics.engine.components import label_components
from ccmetrics.engine.partition import voronoi_partition
from ccmetrics.metrics import registry

SPACINGS = [(3.0, 2.0364, 2.0364), (1.5, 4.0, 2.5)]
RADIUS = 6.2035


def scene(shape=(9, 12, 13), seed=0, blobs=4):
    rng = np.random.default_rng(seed)
    image = rng.gamma(2.0, 1.5, size=shape).astype(np.float32)
    gt = np.zeros(shape, bool)
    pred = np.zeros(shape, bool)
    for mask in (gt, pred):
        for _ in range(blobs):
            c = rng.integers(0, shape)
            s = rng.integers(1, 3, size=3)
            mask[tuple(slice(max(a - b, 0), a + b) for a, b in zip(c, s))] = True
    pred[0, 0, 0] = True  # a speck far from most lesions
    return image, gt, pred


def peak(image, at, spacing):
    """Brute-force SUVpeak around the voxels ``at`` (rows): every offset within the radius, voxels in the image."""
    reach = [int(np.floor(RADIUS / s)) for s in spacing]
    offsets = np.array(
        [
            o
            for o in itertools.product(*(range(-r, r + 1) for r in reach))
            if np.sum((np.array(o) * spacing) ** 2) <= RADIUS**2
        ]
    )
    best = -np.inf
    for v in at:
        pts = v + offsets
        ok = np.all((pts >= 0) & (pts < image.shape), axis=1)
        best = max(best, float(image[tuple(pts[ok].T)].astype(np.float64).mean()))
    return best


def farthest(points_mm):
    if len(points_mm) == 0:
        return np.nan
    d = points_mm[:, None, :] - points_mm[None, :, :]
    return float(np.sqrt((d**2).sum(axis=2).max()))


def per_mask(image, mask, spacing, connectivity=None):
    """Per component (rows) and per case (dict) of one mask, by loops."""
    labels, n = label_components(mask, connectivity)
    ml = np.prod(spacing) / 1000
    img = image.astype(np.float64)
    rows = []
    centroids = []
    for k in range(1, n + 1):
        at = np.argwhere(labels == k)
        v = img[labels == k]
        rows.append(
            {
                "suv_max": v.max(),
                "suv_mean": v.mean(),
                "suv_peak": peak(image, at, spacing),
                "mtv_ml": len(v) * ml,
                "tlg": v.sum() * ml,
            }
        )
        centroids.append(at.mean(axis=0) * spacing)
    v = img[mask]
    case = {
        "tmtv_ml": mask.sum() * ml,
        "tlg": v.sum() * ml,
        "suv_max": v.max() if len(v) else np.nan,
        "suv_mean": v.mean() if len(v) else np.nan,
        "dmax_mm": farthest(np.array(centroids).reshape(-1, 3)),
        "extent_mm": farthest(np.argwhere(mask) * np.asarray(spacing)),
    }
    return rows, case


def region_rows(image, gt, pred, spacing):
    partition = voronoi_partition(gt, spacing=spacing)
    ml = np.prod(spacing) / 1000
    out = []
    for k in range(1, int(partition.max()) + 1 if gt.any() else 1):
        v = image.astype(np.float64)[pred & (partition == k)]
        out.append(
            {
                "pred_mtv_ml": len(v) * ml,
                "pred_tlg": v.sum() * ml,
                "pred_suv_max": v.max() if len(v) else np.nan,
                "pred_suv_mean": v.mean() if len(v) else np.nan,
            }
        )
    return out


def check(result, image, gt, pred, spacing):
    gt_rows, gt_case = per_mask(image, gt, spacing)
    pred_rows, pred_case = per_mask(image, pred, spacing)
    table = result.per_component
    assert len(table) == len(gt_rows)
    for column in ("suv_max", "suv_mean", "suv_peak", "mtv_ml", "tlg"):
        np.testing.assert_allclose(table[column].to_numpy(), [r[column] for r in gt_rows], rtol=1e-9)
        np.testing.assert_allclose(result.per_prediction[column].to_numpy(), [r[column] for r in pred_rows], rtol=1e-9)
    regions = region_rows(image, gt, pred, spacing)
    for column in ("pred_mtv_ml", "pred_tlg", "pred_suv_max", "pred_suv_mean"):
        np.testing.assert_allclose(table[column].to_numpy(), [r[column] for r in regions], rtol=1e-9)
    for side, case in (("gt", gt_case), ("pred", pred_case)):
        for name, value in case.items():
            np.testing.assert_allclose(result.case_scores[f"{side}_{name}"], value, rtol=1e-9, err_msg=f"{side}_{name}")


@pytest.mark.parametrize("spacing", SPACINGS)
@pytest.mark.parametrize("seed", [0, 1])
def test_pet_columns_equal_brute_force_on_anisotropic_spacing(spacing, seed):
    image, gt, pred = scene(seed=seed)
    result = evaluate(gt=gt, pred=pred, metrics=["dice", "pet"], image=image, spacing=spacing)
    check(result, image, gt, pred, spacing)


def test_float64_and_fortran_scans_are_read_as_float32():
    image, gt, pred = scene(seed=2)
    wide = np.asfortranarray(image.astype(np.float64) + 1e-9)
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=wide, spacing=SPACINGS[0])
    check(result, wide.astype(np.float32), gt, pred, SPACINGS[0])


@pytest.mark.parametrize("which", ["gt", "pred", "both"])
def test_empty_masks(which):
    image, gt, pred = scene(seed=3)
    if which in ("gt", "both"):
        gt[:] = False
    if which in ("pred", "both"):
        pred[:] = False
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=image, spacing=SPACINGS[1])
    check(result, image, gt, pred, SPACINGS[1])
    for side, mask in (("gt", gt), ("pred", pred)):
        if not mask.any():
            assert result.case_scores[f"{side}_tmtv_ml"] == 0.0 and result.case_scores[f"{side}_tlg"] == 0.0
            for name in ("suv_max", "suv_mean", "dmax_mm", "extent_mm"):
                assert np.isnan(result.case_scores[f"{side}_{name}"])
    if which == "pred":  # every region empty: NaN SUVs, zero volume and TLG
        assert result.per_component["pred_suv_max"].isna().all() and (result.per_component["pred_mtv_ml"] == 0).all()


def test_one_lesion_has_dmax_zero():
    image, _, _ = scene(seed=4)
    gt = np.zeros(image.shape, bool)
    gt[3:5, 4:8, 2:4] = True
    pred = gt.copy()
    pred[3, 4, 2] = False
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=image, spacing=SPACINGS[0])
    check(result, image, gt, pred, SPACINGS[0])
    assert result.case_scores["gt_dmax_mm"] == 0.0
    assert result.case_scores["gt_extent_mm"] > 0


def test_ties_in_uptake_and_in_the_partition():
    """Equal SUV maxima, and a predicted voxel equidistant from two lesions (goes to the lowest label)."""
    image = np.ones((1, 3, 9), np.float32)
    image[0, 1, [1, 7]] = 5.0
    image[0, 1, 4] = 9.0
    gt = np.zeros(image.shape, bool)
    gt[0, 1, 0:3] = gt[0, 1, 6:9] = True
    pred = np.zeros_like(gt)
    pred[0, 1, 4] = True  # 2 voxels from both lesions: region 1
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=image, spacing=(1.0, 1.0, 1.0))
    check(result, image, gt, pred, (1.0, 1.0, 1.0))
    assert result.per_component["pred_suv_max"].tolist()[0] == 9.0
    assert np.isnan(result.per_component["pred_suv_max"].tolist()[1])
    assert result.per_component["suv_max"].tolist() == [5.0, 5.0]


OTHERS = ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"]


@pytest.mark.parametrize("metrics", [OTHERS, ["dice"]])
def test_adding_pet_changes_no_other_column(metrics):
    image, gt, pred = scene(seed=5)
    spacing = SPACINGS[0]
    without = evaluate(gt=gt, pred=pred, metrics=metrics, spacing=spacing)
    with_pet = evaluate(gt=gt, pred=pred, metrics=[*metrics, "pet"], image=image, spacing=spacing)
    import pandas.testing as pdt

    pdt.assert_frame_equal(with_pet.to_frame("c")[without.to_frame("c").columns], without.to_frame("c"))
    pet_columns = registry.get("pet").column_names
    assert {k: v for k, v in with_pet.case_row().items() if k not in pet_columns} == pytest.approx(
        without.case_row(), nan_ok=True
    )
    assert list(with_pet.case_row())[: len(without.case_row())] == list(without.case_row())
    if without.per_prediction is not None:
        frame = without.prediction_frame("c")
        pdt.assert_frame_equal(with_pet.prediction_frame("c")[frame.columns], frame)
    else:  # pet alone makes the per-prediction table, and no detection columns in per_component
        assert with_pet.per_prediction is not None
        assert "n_pred" not in with_pet.per_component


def test_errors_name_what_is_wrong():
    image, gt, pred = scene(seed=6)
    with pytest.raises(ValueError, match=r"the pet metrics need the scan: image=\.\.\."):
        evaluate(gt=gt, pred=pred, metrics=["dice", "pet"])
    with pytest.raises(ValueError, match=r"image shape \(9, 12, 12\) differs from the GT's shape \(9, 12, 13\)"):
        evaluate(gt=gt, pred=pred, metrics=["pet"], image=image[..., :-1])
    labels, _ = label_components(gt)
    at = tuple(np.argwhere(labels == 2)[0])
    bad = image.copy()
    bad[at] = np.nan
    with pytest.raises(
        ValueError, match=rf"non-finite SUV \(nan\) inside lesion 2 at voxel \({', '.join(map(str, at))}\)"
    ):
        evaluate(gt=gt, pred=pred, metrics=["pet"], image=bad)
    bad = image.copy()
    bad[0, 0, 0] = np.inf  # the prediction's speck, outside every lesion
    assert not gt[0, 0, 0]
    with pytest.raises(ValueError, match=r"non-finite SUV \(inf\) inside predicted component 1 at voxel \(0, 0, 0\)"):
        evaluate(gt=gt, pred=pred, metrics=["pet"], image=bad)
    # outside both masks and their SUVpeak spheres a NaN is never read
    far = np.zeros((40, 4, 4), np.float32)
    far[-1, -1, -1] = np.nan
    small = np.zeros(far.shape, bool)
    small[0, 0, 0] = True
    evaluate(gt=small, pred=small, metrics=["pet"], image=far)


def test_classes_take_one_scan():
    image, gt, pred = scene(seed=7)
    gt_map = gt.astype(np.uint8)
    gt_map[gt & (np.arange(gt.shape[-1]) > 6)] = 2
    pred_map = pred.astype(np.uint8) * 2
    results = evaluate(gt=gt_map, pred=pred_map, metrics=["pet"], image=image, classes=[1, 2], spacing=SPACINGS[1])
    for c, result in results.items():
        check(result, image, gt_map == c, pred_map == c, SPACINGS[1])
