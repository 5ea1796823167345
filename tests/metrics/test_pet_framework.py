"""The ``pet`` group against an independent implementation of the lymphoma framework's patient measures (issue 41).

The reference below is written in this file from the definitions of microsoft/lymphoma-segmentation-dnn,
``metrics/metrics.py`` (Ahamed et al., "Comprehensive framework for evaluation of deep neural networks in detection
and quantification of lymphoma from PET/CT images"), with plain numpy and scipy, one function per measure as there:

* TMTV: the mask's voxel count × the voxel volume ``prod(spacing) / 1000`` (cm³ = ml);
* SUVmean: Σ SUV over the mask / its voxel count; SUVmax: the largest SUV in the mask;
* lesion count: the components of the mask with 18-connectivity (the framework calls
  ``cc3d.connected_components(connectivity=18)``; here ``scipy.ndimage.label`` with the 18-neighbourhood
  ``generate_binary_structure(3, 2)``, which numbers them in the same raster order);
* TLG: Σ over those lesions of MTV × SUVmean (the framework's loop over lesions);
* dissemination: the largest distance between two voxels of the mask, ``(Δ index × spacing)`` in every pair
  (the framework's O(n²) all-pairs distance; here ``scipy.spatial.distance.pdist``, so small cases only).

None of ccmetrics' kernels is called. ``evaluate(..., metrics=["pet"], image=scan, spacing=..., connectivity=18)``
must give these values: per case (``gt_`` and ``pred_`` columns of ``case_scores``) and per lesion (the framework's
per-lesion MTV and SUVmean inside its TLG, with SUVmax and TLG per lesion, in ``per_component`` for the GT's lesions
and ``per_prediction`` for the prediction's components).

Where ccmetrics differs from the framework, by definition (each checked below):

* **Spacing.** The framework reads the arrays transposed to (x, y, z) and the spacing as SimpleITK's (x, y, z), so
  each spacing entry belongs to the array axis of the same position; ccmetrics takes ``spacing`` in the array's own
  axis order, which is the same pairing. Without ``spacing`` ccmetrics counts a voxel as 1 mm wide (the framework
  always has one).
* **Units.** The framework reports its dissemination ("Dmax") in cm (``/ 10``); ccmetrics' ``extent_mm`` is in mm.
  ccmetrics' ``dmax_mm`` is another measure, Cottereau et al.'s Dmax: the distance between the two farthest lesion
  centroids (0 with one lesion), checked here against ``pdist`` over centroids.
* **Empty masks.** The framework gives SUVmean and SUVmax 0.0 for an empty mask and fails on its dissemination
  (``argmax`` of an empty array); ccmetrics gives NaN for SUVmax, SUVmean, Dmax and extent (undefined) and 0 for TMTV,
  TLG and the lesion count, as the framework does for those.
* **SUVmax over the product.** The framework takes ``max(scan × mask)`` over the whole image, so a mask whose SUVs are
  all negative gets 0; ccmetrics takes the maximum over the mask's voxels. The scans here are positive (gamma
  distributed), where the two agree.
* **Arithmetic.** ccmetrics reads the scan as float32 and sums in float64; the framework sums in the scan's own dtype.
  The reference here sums the float32 values in float64 too, so the comparison is to about 1e-12, not to float32
  rounding. TLG as Σ MTV × SUVmean over lesions equals Σ SUV × voxel volume up to that rounding.
* The framework's dissemination uses ``mask == 1`` and its other measures ``mask != 0``: the same for binary masks.

The last section checks the faster SUVpeak and extent paths (lesions cut by every face of the image, small lesions
read voxel by voxel, row ends left out between their neighbours) against brute force over sphere offsets and pdist;
SUVpeak on anisotropic spacing in general is checked in ``test_pet.py`` and ``test_pet_metric.py``.
"""

import itertools

import numpy as np
import pytest
from scipy import ndimage
from scipy.spatial.distance import pdist

from ccmetrics import evaluate
from ccmetrics.engine.components import find_sites
from ccmetrics.metrics.pet import extent_mm, suv_peak
from ccmetrics.synthetic import draw_ellipsoid

EIGHTEEN = ndimage.generate_binary_structure(3, 2)
RADIUS_MM = 6.2035  # PERCIST: the radius of a 1 cm³ sphere


# ----------------------------------------------------------------------------- the framework's definitions


def framework_lesions(mask):
    """Lesion labels and count with 18-connectivity (the framework's ``cc3d.connected_components(connectivity=18)``)."""
    labels, n = ndimage.label(mask, structure=EIGHTEEN)
    return labels, n


def framework_tmtv_ml(mask, spacing):
    return np.prod(spacing) / 1000 * np.count_nonzero(mask)


def framework_suv_mean(scan, mask):
    values = scan[mask != 0].astype(np.float64)
    return float("nan") if len(values) == 0 else values.sum() / len(values)  # the framework: 0.0 when empty


def framework_suv_max(scan, mask):
    values = scan[mask != 0].astype(np.float64)
    return float("nan") if len(values) == 0 else values.max()  # the framework: max(scan * mask), 0.0 when empty


def framework_per_lesion(scan, mask, spacing):
    """Per 18-connected lesion: MTV (ml) and SUVmean (the framework's TLG loop), SUVmax and TLG = MTV × SUVmean."""
    labels, n = framework_lesions(mask)
    voxel_ml = np.prod(spacing) / 1000
    rows = []
    for k in range(1, n + 1):
        values = scan[labels == k].astype(np.float64)
        mtv, suv_mean = len(values) * voxel_ml, values.sum() / len(values)
        rows.append({"mtv_ml": mtv, "suv_mean": suv_mean, "suv_max": values.max(), "tlg": mtv * suv_mean})
    return rows


def framework_tlg(scan, mask, spacing):
    return float(sum(row["mtv_ml"] * row["suv_mean"] for row in framework_per_lesion(scan, mask, spacing)))


def framework_dissemination_mm(mask, spacing):
    """The framework's dissemination (its "Dmax"), all pairs of voxels, in mm (the framework divides by 10: cm)."""
    points = np.argwhere(mask == 1) * np.asarray(spacing, dtype=np.float64)
    if len(points) == 0:
        return float("nan")  # the framework fails here (argmax of an empty array)
    return float(pdist(points).max()) if len(points) > 1 else 0.0


def centroid_dmax_mm(mask, spacing):
    """Cottereau et al.'s Dmax (not the framework's): the farthest pair of lesion centroids, 0 with one lesion."""
    labels, n = framework_lesions(mask)
    if n == 0:
        return float("nan")
    centroids = np.array(ndimage.center_of_mass(np.ones(mask.shape), labels, range(1, n + 1))) * np.asarray(spacing)
    return float(pdist(centroids).max()) if n > 1 else 0.0


def framework_case(scan, mask, spacing):
    return {
        "tmtv_ml": framework_tmtv_ml(mask, spacing),
        "tlg": framework_tlg(scan, mask, spacing),
        "suv_mean": framework_suv_mean(scan, mask),
        "suv_max": framework_suv_max(scan, mask),
        "lesion_count": framework_lesions(mask)[1],
        "extent_mm": framework_dissemination_mm(mask, spacing),
        "dmax_mm": centroid_dmax_mm(mask, spacing),
    }


def check_against_framework(result, scan, gt, pred, spacing):
    """Every per-case, per-lesion and per-prediction value of the pet group equals the framework's definitions."""
    for side, mask in (("gt", gt), ("pred", pred)):
        for name, expected in framework_case(scan, mask, spacing).items():
            got = result.case_scores[f"{side}_{name}"]
            if np.isnan(expected):
                assert np.isnan(got), f"{side}_{name}: {got}, expected undefined (NaN)"
            else:
                assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), f"{side}_{name}"
    for table, mask in ((result.per_component, gt), (result.per_prediction, pred)):
        rows = framework_per_lesion(scan, mask, spacing)
        assert len(table) == len(rows)  # the lesion count, one row per 18-connected lesion, in raster order
        for column in ("mtv_ml", "suv_mean", "suv_max", "tlg"):
            np.testing.assert_allclose(table[column].to_numpy(), [r[column] for r in rows], rtol=1e-12, err_msg=column)


# ----------------------------------------------------------------------------- cases


def blobs(rng, shape, n):
    mask = np.zeros(shape, bool)
    for _ in range(n):
        centre = rng.integers(0, shape)
        half = rng.integers(0, 3, size=3)
        mask[tuple(slice(max(c - h, 0), c + h + 1) for c, h in zip(centre, half))] = True
    return mask


def random_case(seed, shape=(9, 11, 13)):
    """Blocks and specks, and in each mask three voxels alone: two meeting at an edge (one lesion with 18-connectivity)
    and a third meeting the second at a corner only (a second lesion with 18-connectivity, none with 26)."""
    rng = np.random.default_rng(seed)
    scan = rng.gamma(2.0, 1.5, size=shape).astype(np.float32)
    gt, pred = blobs(rng, shape, 4), blobs(rng, shape, 5)
    pred |= rng.random(shape) < 0.01
    for mask in (gt, pred):
        z, y, x = (int(rng.integers(1, n - 4)) for n in shape)
        mask[z - 1 : z + 4, y - 1 : y + 4, x - 1 : x + 3] = False
        mask[z, y, x] = mask[z + 1, y + 1, x] = True  # an edge: 18-connected
        mask[z + 2, y + 2, x + 1] = True  # a corner of (z + 1, y + 1, x) only
    return scan, gt, pred


SPACINGS = [(3.0, 2.0364, 2.0364), (1.5, 4.0, 2.5), (0.8, 5.0, 1.3)]


@pytest.mark.parametrize("spacing", SPACINGS)
@pytest.mark.parametrize("seed", range(4))
def test_patient_and_lesion_values_equal_the_framework(seed, spacing):
    scan, gt, pred = random_case(seed)
    result = evaluate(gt=gt, pred=pred, metrics=["dice", "pet"], image=scan, spacing=spacing, connectivity=18)
    check_against_framework(result, scan, gt, pred, spacing)
    counts = (framework_lesions(gt)[1], framework_lesions(pred)[1])
    assert min(counts) >= 2
    # 26-connectivity joins the corner pair: the count follows the case's connectivity
    joined = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, spacing=spacing, connectivity=26)
    assert ndimage.label(gt, structure=np.ones((3, 3, 3)))[1] == joined.case_scores["gt_lesion_count"] < counts[0]


def test_fortran_order_and_a_float64_scan_give_the_same_values():
    scan, gt, pred = random_case(7)
    spacing = SPACINGS[1]
    wide = np.asfortranarray(scan.astype(np.float64))
    fortran = {"gt": np.asfortranarray(gt), "pred": np.asfortranarray(pred)}
    result = evaluate(**fortran, metrics=["pet"], image=wide, spacing=spacing, connectivity=18)
    check_against_framework(result, scan, gt, pred, spacing)  # the float32 values: the scan is read as float32


def test_without_spacing_a_voxel_is_one_mm():
    scan, gt, pred = random_case(8)
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, connectivity=18)
    check_against_framework(result, scan, gt, pred, (1.0, 1.0, 1.0))
    assert result.case_scores["gt_tmtv_ml"] == np.count_nonzero(gt) / 1000


@pytest.mark.parametrize("empty", ["gt", "pred", "both"])
def test_empty_masks(empty):
    scan, gt, pred = random_case(9)
    if empty in ("gt", "both"):
        gt[:] = False
    if empty in ("pred", "both"):
        pred[:] = False
    spacing = SPACINGS[0]
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, spacing=spacing, connectivity=18)
    check_against_framework(result, scan, gt, pred, spacing)
    for side in ("gt", "pred") if empty == "both" else (empty,):
        scores = {name: result.case_scores[f"{side}_{name}"] for name in ("tmtv_ml", "tlg", "lesion_count")}
        assert scores == {"tmtv_ml": 0.0, "tlg": 0.0, "lesion_count": 0}  # as the framework
        for name in ("suv_max", "suv_mean", "extent_mm", "dmax_mm"):  # the framework: 0.0, 0.0, an error; none
            assert np.isnan(result.case_scores[f"{side}_{name}"]), name


def test_one_lesion_has_dmax_zero_and_one_voxel_extent_zero():
    scan, _, _ = random_case(10)
    gt = np.zeros(scan.shape, bool)
    gt[2:5, 3:7, 4:6] = True
    gt[5, 7, 6] = True  # a corner: 26-connected only, so a second lesion with 18-connectivity
    pred = np.zeros_like(gt)
    pred[3, 4, 5] = True
    spacing = SPACINGS[2]
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, spacing=spacing, connectivity=26)
    assert result.case_scores["gt_lesion_count"] == 1 and result.case_scores["gt_dmax_mm"] == 0.0
    assert result.case_scores["gt_extent_mm"] == pytest.approx(framework_dissemination_mm(gt, spacing), rel=1e-12)
    assert result.case_scores["pred_dmax_mm"] == 0.0 and result.case_scores["pred_extent_mm"] == 0.0
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, spacing=spacing, connectivity=18)
    check_against_framework(result, scan, gt, pred, spacing)
    assert result.case_scores["gt_lesion_count"] == 2 and result.case_scores["gt_dmax_mm"] > 0


def test_tied_maxima():
    """Equal SUV maxima inside a lesion, between lesions, and between the GT and the prediction."""
    scan = np.ones((6, 7, 8), np.float32)
    gt = np.zeros(scan.shape, bool)
    gt[1:3, 1:3, 1:3] = gt[1:3, 4:6, 5:7] = True
    scan[1, 1, 1] = scan[2, 2, 2] = scan[1, 5, 6] = 7.5  # twice in lesion 1, once in lesion 2
    scan[gt & (scan < 7.5)] = 2.5
    pred = gt.copy()
    pred[1, 1, 1] = False  # one of the tied maxima left out: the same SUVmax
    spacing = SPACINGS[0]
    result = evaluate(gt=gt, pred=pred, metrics=["pet"], image=scan, spacing=spacing, connectivity=18)
    check_against_framework(result, scan, gt, pred, spacing)
    assert result.per_component["suv_max"].tolist() == [7.5, 7.5]
    assert result.case_scores["gt_suv_max"] == result.case_scores["pred_suv_max"] == 7.5


# ----------------------------------------------------------------------------- the fast paths of SUVpeak and extent


def brute_force_peak(scan, labels, n, spacing):
    """Largest mean SUV over the sphere around any voxel of each lesion: every offset, voxels inside the image."""
    reach = [int(RADIUS_MM // s) + 1 for s in spacing]
    offsets = np.array(list(itertools.product(*(range(-r, r + 1) for r in reach))))
    d = offsets * np.asarray(spacing)
    sphere = offsets[((d[:, 0] ** 2 + d[:, 1] ** 2) + d[:, 2] ** 2) <= RADIUS_MM**2]
    values = scan.astype(np.float64)
    out = []
    for k in range(1, n + 1):
        means = []
        for centre in np.argwhere(labels == k):
            at = centre + sphere
            inside = np.all((at >= 0) & (at < scan.shape), axis=1)
            means.append(values[tuple(at[inside].T)].mean())
        out.append(max(means))
    return np.array(out)


@pytest.mark.parametrize("spacing", [(3.0, 2.0364, 2.0364), (2.0364, 2.0364, 3.0), (1.0, 1.3, 0.9)])
def test_suv_peak_of_lesions_cut_by_every_face_of_the_image(spacing):
    """Compact lesions of a few hundred voxels (the bounding-box sums) at each face, edge and corner of the image,
    where the sphere's voxels inside the image are counted by their distances to the border; small lesions (read
    voxel by voxel) beside them."""
    rng = np.random.default_rng(1)
    shape = (16, 17, 18)
    scan = rng.gamma(2.0, 1.5, size=shape).astype(np.float32)
    labels = np.zeros(shape, np.int32)
    boxes = [
        (slice(0, 6), slice(3, 10), slice(4, 12)),  # z = 0
        (slice(10, 16), slice(5, 12), slice(3, 11)),  # z = end
        (slice(4, 11), slice(0, 5), slice(10, 18)),  # y = 0 and x = end
        (slice(9, 16), slice(11, 17), slice(0, 7)),  # z, y = end and x = 0: a corner
        (slice(0, 16), slice(8, 10), slice(14, 16)),  # through the volume, z = 0 and z = end
        (slice(7, 8), slice(14, 15), slice(9, 11)),  # two voxels: small
        (slice(0, 1), slice(0, 1), slice(0, 1)),  # the corner voxel: small
    ]
    for k, box in enumerate(boxes, start=1):
        labels[box] = np.where(labels[box] == 0, k, labels[box])
    n = len(boxes)
    expected = brute_force_peak(scan, labels, n, spacing)
    np.testing.assert_allclose(suv_peak(scan, labels, n, spacing), expected, rtol=1e-12)
    np.testing.assert_allclose(suv_peak(np.asfortranarray(scan), labels, n, spacing), expected, rtol=1e-12)


def test_a_non_finite_suv_is_named_for_the_first_lesion_whatever_its_size():
    """Small lesions are summed before the others: the error still names the lowest lesion whose sphere holds it."""
    scan = np.ones((12, 12, 30), np.float32)
    labels = np.zeros(scan.shape, np.int32)
    labels[2:8, 2:8, 2:8] = 1  # large (box sums)
    labels[6, 6, 20] = 2  # small (voxel by voxel)
    scan[6, 6, 22] = np.nan  # 2 voxels from lesion 2, far from lesion 1
    with pytest.raises(ValueError, match=r"lesion 2 or within the SUVpeak radius of its voxel \(6, 6, 20\)"):
        suv_peak(scan, labels, 2, (2.0, 2.0, 2.0))
    scan[7, 7, 10] = np.inf  # 6 mm from lesion 1's voxel (7, 7, 7): within the radius, and lesion 1 comes first
    with pytest.raises(ValueError, match=r"lesion 1 or within the SUVpeak radius"):
        suv_peak(scan, labels, 2, (2.0, 2.0, 2.0))


@pytest.mark.parametrize("seed", range(8))
def test_extent_equals_all_pairs_on_shapes_with_straight_convex_and_concave_rows(seed):
    """Row ends between the rows before and after are left out as candidates: never the farthest pair's."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(v) for v in rng.integers(3, 14, size=3))
    mask = ndimage.binary_dilation(rng.random(shape) < 0.03, structure=EIGHTEEN, iterations=int(rng.integers(1, 3)))
    mask[:, :, : shape[2] // 2] |= rng.random((shape[0], shape[1], 1)) < 0.3  # straight runs of equal ends
    spacing = tuple(rng.uniform(0.5, 4.0, size=3))
    cases = [(mask, spacing), (mask[shape[0] // 2], spacing[1:])]
    for _ in range(3):  # digital ellipsoids and ellipses: convex rows, most ends on a chord or beside one
        ball = np.zeros((15, 16, 17), bool)
        draw_ellipsoid(ball, rng.uniform(2, 14, size=3), rng.uniform(1.5, 9, size=3))
        cases += [(ball, tuple(rng.uniform(0.5, 4.0, size=3))), (ball[7], tuple(rng.uniform(0.5, 4.0, size=2)))]
    for m, s in cases:
        if m.any():
            expected = framework_dissemination_mm(m, s)
            assert extent_mm(m, s) == pytest.approx(expected, rel=1e-12)
            assert extent_mm(find_sites(m), s) == pytest.approx(expected, rel=1e-12)
