"""Bad input fails with a clear ValueError naming the problem; good input of any kind is accepted."""

import re
import zlib

import numpy as np
import pytest

from ccmetrics import evaluate, label_components, voronoi_partition

GT = np.zeros((6, 7, 8), bool)
GT[1:3, 1:3, 1:3] = True


@pytest.mark.parametrize(
    "pred,gt,kwargs,message",
    [
        (np.zeros((6, 7, 9), bool), GT, {}, "same shape"),
        (np.full(GT.shape, 0.7, np.float32), GT, {}, "non-binary values such as 0.7"),
        (np.where(GT, np.nan, 0.0), GT, {}, "NaN"),
        (GT.astype(np.uint8) * 2, GT, {}, "holds the value 2"),
        (GT, GT.astype(np.int16) - 1, {}, "holds the value -1"),
        (GT[None], GT[None], {}, "2D or 3D image"),
        (GT[0, 0], GT[0, 0], {}, "2D or 3D image"),
        (GT, GT, {"spacing": (1.0, 1.0)}, "spacing has 2 values but the image has 3"),
        (GT, GT, {"spacing": (1.0, 0.0, 1.0)}, "positive and finite"),
        (GT, GT, {"spacing": (1.0, -2.0, 1.0)}, "positive and finite"),
        (GT, GT, {"spacing": (1.0, np.inf, 1.0)}, "positive and finite"),
        (GT, GT, {"connectivity": 8}, "connectivity for 3D images"),
        (GT, GT, {"metrics": ["dice", "jaccard"]}, "unknown metric 'jaccard'"),
        (GT, GT, {"metrics": []}, "metrics is empty"),
        (GT, GT, {"nsd_tolerance": -1}, "nsd_tolerance"),
        (GT, GT, {"worst_distance": float("nan")}, "worst_distance"),
        (GT, GT, {"sites": "instances"}, "sites must be"),
        (GT, GT, {"classes": [1], "sites": "labels"}, "classes=... needs"),
    ],
)
def test_bad_input_raises_clear_value_error(pred, gt, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate(pred, gt, **kwargs)


def test_unsupported_types():
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        evaluate("mask", GT)
    with pytest.raises(ValueError, match="unsupported dtype"):
        evaluate(GT.astype(complex), GT)


def test_partition_and_labelling_validate_too():
    with pytest.raises(ValueError, match="connectivity for 2D images"):
        label_components(np.ones((3, 3)), connectivity=26)
    with pytest.raises(ValueError, match="spacing has 3 values"):
        voronoi_partition(np.ones((3, 3)), spacing=(1, 1, 1))
    with pytest.raises(ValueError, match="non-negative labels"):
        voronoi_partition(-np.ones((3, 3), int), sites="labels")


def test_accepted_inputs_agree():
    reference = evaluate(GT, GT)
    for pred in (GT.astype(np.int8), GT.astype(np.uint16), GT.astype(np.float64), GT.tolist()):
        assert evaluate(pred, GT).cc == reference.cc
    assert evaluate(GT, GT, spacing=2.0).spacing == (2.0, 2.0, 2.0)
    assert evaluate(GT, GT, spacing=np.array([1, 2, 3])).spacing == (1.0, 2.0, 3.0)
    assert evaluate(GT[:, :, ::2], GT[:, :, ::2]).cc["dice"] == 1.0  # non-contiguous views


@pytest.mark.parametrize(
    "spacing, error, message",
    [
        (True, TypeError, "number or a sequence of numbers"),
        ([True, 1.0], TypeError, "number or a sequence of numbers"),
        (1e300, ValueError, "between 1e-06 and 1e\\+06"),
        ((1.0, 1e-300), ValueError, "between 1e-06 and 1e\\+06"),
    ],
)
def test_spacing_holes_are_closed(spacing, error, message):
    gt = np.zeros((6, 6), bool)
    gt[2, 2] = True
    with pytest.raises(error, match=message):
        evaluate(gt, gt, ["hd95"], spacing=spacing)


@pytest.mark.parametrize(
    "classes, error",
    [
        (1, TypeError),
        ([1.5], TypeError),
        ([True], TypeError),
        ([1, 1], ValueError),
        ([-1], ValueError),
        ([], ValueError),
    ],
)
def test_classes_must_be_integer_labels(classes, error):
    labels = np.zeros((6, 6), np.uint8)
    labels[1:3, 1:3] = 1
    with pytest.raises(error, match="classes|class labels"):
        evaluate(labels, labels, ["dice"], classes=classes)


def test_numpy_class_labels_are_accepted():
    labels = np.zeros((6, 6), np.uint8)
    labels[1:3, 1:3] = 1
    assert list(evaluate(labels, labels, ["dice"], classes=np.array([1, 2]))) == [1, 2]


def test_monai_metric_class_instead_of_instance():
    pytest.importorskip("monai")
    from monai.metrics import HausdorffDistanceMetric

    gt = np.zeros((6, 6), bool)
    gt[2, 2] = True
    with pytest.raises(TypeError, match=r"pass an instance such as HausdorffDistanceMetric\(\)"):
        evaluate(gt, gt, [HausdorffDistanceMetric])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"min_volume": -1}, "min_volume"),
        ({"dilation": -1}, "dilation"),
        ({"dilation": 1.5}, "dilation"),
        ({"worst_hd95": float("nan")}, "worst_hd95"),
    ],
)
def test_lesion_dice_options_are_checked(kwargs, message):
    from ccmetrics import lesion_dice

    gt = np.zeros((8, 8, 8), bool)
    gt[2:4, 2:4, 2:4] = True
    with pytest.raises(ValueError, match=message):
        lesion_dice(gt, gt, **kwargs)


# --- c_contiguous: Fortran-ordered images (as NIfTI files give them) made C-ordered ---------------


@pytest.mark.parametrize("dtype", [bool, np.uint8, np.int16, np.uint32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 5), (9, 8, 6), (2, 3, 4, 5), (1, 11, 1)])
@pytest.mark.parametrize("density", [0.0, 0.01, 0.05, 0.3, 1.0])
def test_c_contiguous_equals_numpy_copy(dtype, shape, density):
    from ccmetrics._inputs import c_contiguous

    rng = np.random.default_rng(zlib.crc32(repr((np.dtype(dtype).str, shape, density)).encode()))
    values = rng.integers(1, 200, size=shape) * (rng.random(shape) < density)
    if dtype is bool:
        values = values > 0
    arr = np.asfortranarray(values.astype(dtype))
    got = c_contiguous(arr)
    assert got.flags.c_contiguous and got.dtype == arr.dtype and got.shape == arr.shape
    np.testing.assert_array_equal(got, arr)
    assert got.tobytes() == np.ascontiguousarray(arr).tobytes()


def test_c_contiguous_other_layouts():
    from ccmetrics._inputs import c_contiguous

    c = np.zeros((4, 5, 6), np.uint8)
    c[1, 2, 3] = 7
    assert c_contiguous(c) is c  # already C-ordered: not copied
    for view in (c[:, ::2], c.transpose(1, 0, 2), c[::-1], np.asfortranarray(c)[:, 1:]):
        got = c_contiguous(view)
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, view)
    empty = np.asfortranarray(np.zeros((0, 3, 4), np.uint8))
    assert c_contiguous(empty).shape == (0, 3, 4)
    # a sparse Fortran-ordered mask with the last and first voxel set, and negative and NaN-free floats
    f = np.asfortranarray(np.zeros((40, 30, 20), np.float32))
    f[0, 0, 0], f[-1, -1, -1], f[3, 29, 0] = -1.5, 2.0, np.float32(1e-30)
    np.testing.assert_array_equal(c_contiguous(f), f)


def test_binary_mask_from_fortran_order_is_c_ordered():
    from ccmetrics._inputs import as_binary_mask, as_label_map

    rng = np.random.default_rng(3)
    labels = np.asfortranarray((rng.random((30, 20, 10)) < 0.02) * rng.integers(1, 5, (30, 20, 10)))
    for dtype in (np.uint8, np.int32, np.float32):
        got = as_binary_mask((labels > 0).astype(dtype), "gt")
        assert got.dtype == bool and got.flags.c_contiguous
        np.testing.assert_array_equal(got, labels > 0)
    got = as_label_map(labels, "gt")
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, labels)
