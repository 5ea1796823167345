"""Readers of nuclei annotation formats (ccmetrics.nuclei.io): every reader on small files
written here, round trips to the same partition and classes, and the error cases."""

import json
import os
import warnings

import numpy as np
import pytest
from scipy.io import savemat

from ccmetrics.nuclei.io import (
    MONUSAC_CLASSES,
    PANNUKE_CLASSES,
    NucleiAnnotation,
    _ring_mask,
    read_geojson,
    read_hovernet,
    read_monusac_masks,
    write_geojson,
)


def canonical(inst):
    """Relabel by first appearance in raster order: equal partitions give equal arrays."""
    flat = inst.ravel()
    ids, first = np.unique(flat, return_index=True)
    order = ids[np.argsort(first)]
    order = order[order != 0]
    lut = np.zeros(int(flat.max()) + 1 if flat.size else 1, np.int64)
    lut[order] = np.arange(1, order.size + 1)
    return lut[inst], {int(k): i + 1 for i, k in enumerate(order)}


def same_annotation(ann, inst, classes):
    """``ann`` has the partition of ``inst`` (any ids) and ``classes`` (keyed by ``inst``'s ids)."""
    a, amap = canonical(ann.instances)
    b, bmap = canonical(np.asarray(inst))
    assert np.array_equal(a, b)
    assert {amap[k]: c for k, c in ann.classes.items()} == {bmap[k]: c for k, c in classes.items()}


def square(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]


def feature(geometry, name=None, **extra):
    props = {"objectType": "annotation"}
    if name is not None:
        props["classification"] = {"name": name, "color": [255, 0, 0]}
    return {"type": "Feature", "geometry": geometry, "properties": props, **extra}


def dump(path, data):
    with open(path, "w") as f:
        json.dump(data, f)
    return str(path)


def random_labels(rng, shape, n):
    lab = rng.integers(0, n + 1, shape).astype(np.int32)
    return lab


INST = np.array(
    [
        [0, 1, 1, 0, 0, 0],
        [0, 1, 1, 0, 3, 3],
        [0, 0, 0, 0, 3, 0],
        [2, 2, 0, 0, 0, 0],
        [2, 2, 0, 5, 5, 0],
    ],
    np.int32,
)  # ids 1, 2, 3, 5: not consecutive


# --------------------------------------------------------------------------- NucleiAnnotation


def test_annotation_validates_and_converts():
    ann = NucleiAnnotation(np.array([[0, 1], [2, 2]], np.int64), {1: 3, 2: 0}, "x")
    assert ann.instances.dtype == np.int32 and ann.n_instances == 2
    assert np.array_equal(ann.type_map(), [[0, 3], [0, 0]])
    with pytest.raises(ValueError, match="exactly the keys 1..2"):
        NucleiAnnotation(np.array([[0, 1], [2, 2]]), {1: 3}, "x")
    with pytest.raises(ValueError, match="2D"):
        NucleiAnnotation(np.zeros((2, 2, 2), np.int32), {}, "x")
    with pytest.raises(ValueError, match="integer ids"):
        NucleiAnnotation(np.zeros((2, 2)), {}, "x")
    with pytest.raises(ValueError, match="ignore has shape"):
        NucleiAnnotation(np.zeros((2, 2), np.int32), {}, "x", ignore=np.zeros((3, 3), bool))


# --------------------------------------------------------------------------- HoVer-Net .mat


def test_mat_inst_type_matlab_doubles(tmp_path):
    p = tmp_path / "gt.mat"
    inst = np.array([[1, 1, 0], [0, 2, 2], [3, 0, 2]])
    savemat(
        p,
        {
            "inst_map": inst.astype(float),
            "type_map": np.zeros((3, 3)),
            "inst_type": np.array([[2.0], [1.0], [0.0]]),
            "inst_centroid": np.zeros((3, 2)),
        },
    )
    ann = read_hovernet(p)
    assert np.array_equal(ann.instances, inst) and ann.instances.dtype == np.int32
    assert ann.classes == {1: 2, 2: 1, 3: 0}  # inst_type wins over type_map; class 0 = unknown
    assert ann.source == str(p) and ann.class_names is None and ann.ignore is None


def test_mat_relabels_gaps_and_uses_inst_uid(tmp_path):
    p = tmp_path / "out.mat"
    # HoVer-Net inference output: inst_type in the order of inst_uid
    savemat(
        p, {"inst_map": INST, "inst_uid": np.array([[5], [1], [3], [2]]), "inst_type": np.array([[4], [1], [3], [2]])}
    )
    ann = read_hovernet(p)
    assert sorted(np.unique(ann.instances)) == [0, 1, 2, 3, 4]
    same_annotation(ann, INST, {1: 1, 2: 2, 3: 3, 5: 4})
    # ids keep their order: 1, 2, 3, 5 -> 1, 2, 3, 4
    assert np.array_equal(ann.instances, np.where(INST == 5, 4, INST))


def test_mat_inst_type_by_id_order(tmp_path):
    p = tmp_path / "gt.mat"
    savemat(p, {"inst_map": INST, "inst_type": np.array([[1], [2], [3], [9], [4]])})
    same_annotation(read_hovernet(p), INST, {1: 1, 2: 2, 3: 3, 5: 4})


def test_mat_type_map_and_class_rule(tmp_path):
    types = np.where(INST > 0, INST + 10, 0)
    p = tmp_path / "a.mat"
    savemat(p, {"inst_map": INST, "type_map": types})
    same_annotation(read_hovernet(p), INST, {1: 11, 2: 12, 3: 13, 5: 15})
    types[1, 5] = 7  # instance 3 now has pixels of classes 13 (2 px) and 7 (1 px)
    savemat(p, {"inst_map": INST, "type_map": types})
    with pytest.raises(
        ValueError,
        match=r"instance 3 has pixels of 2 classes.*class 7 \(1 px\), class 13 \(2 px\)"
        r".*class_rule='majority'",
    ):
        read_hovernet(p)
    same_annotation(read_hovernet(p, class_rule="majority"), INST, {1: 11, 2: 12, 3: 13, 5: 15})
    types[1, 4] = 7  # tie 7 (2 px) vs 13 (1 px) -> 7; make a 1:1 tie on instance 5
    types[4, 3] = 2
    savemat(p, {"inst_map": INST, "type_map": types})
    same_annotation(read_hovernet(p, class_rule="majority"), INST, {1: 11, 2: 12, 3: 7, 5: 2})
    with pytest.raises(ValueError, match="class_rule must be one of"):
        read_hovernet(p, class_rule="vote")


def test_mat_instances_only_and_type_map_argument(tmp_path):
    p = tmp_path / "a.mat"
    savemat(p, {"inst_map": INST})
    same_annotation(read_hovernet(p), INST, {1: 0, 2: 0, 3: 0, 5: 0})
    same_annotation(read_hovernet(p, type_map=np.where(INST > 0, 2, 0)), INST, {1: 2, 2: 2, 3: 2, 5: 2})


def test_mat_errors(tmp_path):
    p = tmp_path / "bad.mat"
    savemat(p, {"instances": INST, "types": np.ones((4, 1))})
    with pytest.raises(ValueError, match=r"no 'inst_map'.*keys found: instances, types"):
        read_hovernet(p)
    savemat(p, {"inst_map": INST, "inst_type": np.ones((3, 1))})
    with pytest.raises(ValueError, match=r"'inst_type' has 3 entries but 'inst_map' has instance id 5"):
        read_hovernet(p)
    savemat(p, {"inst_map": INST + 0.5})
    with pytest.raises(ValueError, match=r"bad.mat: the 'inst_map' is not integer-valued"):
        read_hovernet(p)
    savemat(p, {"inst_map": np.zeros((2, 2, 2))})
    with pytest.raises(ValueError, match=r"must be 2D \(H, W\), got shape \(2, 2, 2\)"):
        read_hovernet(p)
    savemat(p, {"inst_map": INST, "inst_uid": [[1], [2]], "inst_type": [[1], [1]]})
    with pytest.raises(ValueError, match=r"instances \[3, 5\] of 'inst_map' are not in 'inst_uid'"):
        read_hovernet(p)
    savemat(p, {"inst_map": INST, "inst_type": np.ones((5, 1))})
    with pytest.raises(ValueError, match="has its own classes"):
        read_hovernet(p, type_map=INST)
    with pytest.raises(ValueError, match="index= is for stacked .npy"):
        read_hovernet(p, index=0)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_hovernet(tmp_path / "missing.mat")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ValueError, match=r"unsupported file type '.txt'"):
        read_hovernet(tmp_path / "x.txt")
    (tmp_path / "junk.mat").write_bytes(b"not a mat file at all" * 10)
    with pytest.raises(ValueError, match="not a readable MATLAB .mat file"):
        read_hovernet(tmp_path / "junk.mat")


# --------------------------------------------------------------------------- .npy: plain, CoNIC, PanNuke


def test_npy_instance_map(tmp_path):
    p = tmp_path / "inst.npy"
    np.save(p, INST.astype(np.uint16))
    same_annotation(read_hovernet(p), INST, {1: 0, 2: 0, 3: 0, 5: 0})
    same_annotation(read_hovernet(p, type_map=INST * 2), INST, {1: 2, 2: 4, 3: 6, 5: 10})
    with pytest.raises(ValueError, match=r"type_map has shape \(2, 2\)"):
        read_hovernet(p, type_map=np.zeros((2, 2), int))
    np.save(p, INST - 1)
    with pytest.raises(ValueError, match="negative values"):
        read_hovernet(p)
    np.save(p, np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="holds Python objects"):
        read_hovernet(p)


def test_npy_conic_and_stack(tmp_path):
    types = np.where(INST > 0, INST % 3 + 1, 0)
    one = np.stack([INST, types], axis=-1)
    np.save(tmp_path / "one.npy", one)
    expected = {1: 2, 2: 3, 3: 1, 5: 3}
    same_annotation(read_hovernet(tmp_path / "one.npy"), INST, expected)
    stack = np.stack([np.zeros_like(one), one]).astype(np.int32)
    np.save(tmp_path / "labels.npy", stack)
    ann = read_hovernet(tmp_path / "labels.npy", index=1)
    same_annotation(ann, INST, expected)
    assert ann.source.endswith("labels.npy[1]")
    assert read_hovernet(tmp_path / "labels.npy", index=0).n_instances == 0
    with pytest.raises(ValueError, match=r"stack of 2 images.*pass index="):
        read_hovernet(tmp_path / "labels.npy")
    with pytest.raises(IndexError, match="holds 2 images"):
        read_hovernet(tmp_path / "labels.npy", index=2)
    np.save(tmp_path / "maps.npy", np.stack([INST, INST]))  # (N, H, W) stack of instance maps
    same_annotation(read_hovernet(tmp_path / "maps.npy", index=-1), INST, {1: 0, 2: 0, 3: 0, 5: 0})
    bad = one.copy()
    bad[0, 1, 1] = 9
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(ValueError, match=r"instance 1 has pixels of 2 classes"):
        read_hovernet(tmp_path / "bad.npy")
    with pytest.raises(ValueError, match=r"type_map= is for 2D instance maps"):
        read_hovernet(tmp_path / "one.npy", type_map=types)
    np.save(tmp_path / "three.npy", np.zeros((4, 4, 3)))
    with pytest.raises(ValueError, match=r"unsupported array shape \(4, 4, 3\).*np.moveaxis"):
        read_hovernet(tmp_path / "three.npy")


def pannuke_masks():
    m = np.zeros((6, 7, 6))  # float, like PanNuke's masks.npy
    m[0:2, 0:2, 0] = 1  # neoplastic, id 1
    m[4:6, 0:2, 0] = 2  # neoplastic, id 2
    m[0:2, 4:6, 1] = 1  # inflammatory, id 1 again: another nucleus
    m[3, 3:7, 4] = 7  # epithelial
    m[..., 5] = m[..., :5].sum(-1) == 0  # background channel, ignored
    return m


def test_npy_pannuke(tmp_path):
    m = pannuke_masks()
    np.save(tmp_path / "masks.npy", np.stack([m, m]))
    ann = read_hovernet(tmp_path / "masks.npy", index=1)
    assert ann.class_names == PANNUKE_CLASSES
    expected = np.zeros((6, 7), int)
    expected[0:2, 0:2] = 1
    expected[4:6, 0:2] = 2
    expected[0:2, 4:6] = 3
    expected[3, 3:7] = 4
    assert np.array_equal(ann.instances, expected)  # channel by channel, ids in order
    assert ann.classes == {1: 1, 2: 1, 3: 2, 4: 5}


def test_npy_pannuke_overlap(tmp_path):
    m = pannuke_masks()
    m[1, 1, 2] = 4  # a one-pixel connective nucleus on a neoplastic pixel
    np.save(tmp_path / "m.npy", m)
    with pytest.raises(
        ValueError,
        match=r"channel 2 \(Connective\) overlaps channel 0 \(Neoplastic\) in 1 pixels"
        r"\. Instances may not overlap",
    ):
        read_hovernet(tmp_path / "m.npy")
    m2 = pannuke_masks()
    m2[3, 3:5, 2] = 4  # connective on 2 epithelial pixels, epithelial also on a neoplastic one
    m2[0, 0, 4] = 7
    np.save(tmp_path / "m2.npy", m2)
    with pytest.raises(
        ValueError,
        match=r"channel 4 \(Epithelial\) overlaps channel 2 \(Connective\) in 2 pixels"
        r" \(and channel 0 \(Neoplastic\)\)",
    ):
        read_hovernet(tmp_path / "m2.npy")
    with pytest.warns(UserWarning, match=r"1 instance of channel 2 \(Connective\)"):
        first = read_hovernet(tmp_path / "m.npy", overlap="first")  # connective nucleus has no pixel left
    assert first.classes == {1: 1, 2: 1, 3: 2, 4: 5}
    last = read_hovernet(tmp_path / "m.npy", overlap="last")
    assert last.classes[int(last.instances[1, 1])] == 3 and last.n_instances == 5
    assert (last.instances == last.instances[1, 1]).sum() == 1 and (last.instances == 1).sum() == 3


# --------------------------------------------------------------------------- MoNuSAC masks


def save_png(path, arr):
    from PIL import Image

    Image.fromarray(arr).save(path)


def make_monusac(root, fmt="npy"):
    """One image folder: Epithelial (two files), Lymphocyte, Ambiguous."""
    shape = (5, 6)
    epi1 = np.zeros(shape, np.uint16)
    epi1[0:2, 0:2] = 300  # 16-bit id
    epi1[3:5, 0:2] = 301
    epi2 = np.zeros(shape, np.uint16)
    epi2[0, 3:5] = 1  # a second file of the same class, id 1 again
    lym = np.zeros(shape, np.uint8)
    lym[2:5, 4:6] = 255  # binary mask: one nucleus
    amb = np.zeros(shape, np.uint8)
    amb[2, 0:3] = 1
    files = {"Epithelial": [("a", epi1), ("b", epi2)], "Lymphocyte": [("m", lym)], "Ambiguous": [("m", amb)]}
    for cls, items in files.items():
        os.makedirs(root / cls)
        for stem, arr in items:
            if fmt == "npy":
                np.save(root / cls / f"{stem}.npy", arr)
            elif fmt == "png":
                save_png(root / cls / f"{stem}.png", arr)
            else:  # float32 TIFF, integer-valued, as some MoNuSAC conversions write them
                from PIL import Image

                Image.fromarray(arr.astype(np.float32)).save(root / cls / f"{stem}.tif")
    expected = np.zeros(shape, int)
    expected[0:2, 0:2] = 1
    expected[3:5, 0:2] = 2
    expected[0, 3:5] = 3
    expected[2:5, 4:6] = 4
    return expected, amb > 0


@pytest.mark.parametrize("fmt", ["npy", "png", "tif"])
def test_monusac_folder(tmp_path, fmt):
    expected, amb = make_monusac(tmp_path, fmt)
    ann = read_monusac_masks(tmp_path)  # the image folder
    assert np.array_equal(ann.instances, expected)
    assert ann.classes == {1: 1, 2: 1, 3: 1, 4: 2}
    assert np.array_equal(ann.ignore, amb)
    assert ann.class_names == MONUSAC_CLASSES and ann.source == str(tmp_path)


def test_monusac_class_names_dict_and_paths(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("image")
    expected, amb = make_monusac(tmp_path)
    ann = read_monusac_masks(tmp_path, class_names={"epithelial": 7, "LYMPHOCYTE": 8})  # case-insensitive
    assert ann.classes == {1: 7, 2: 7, 3: 7, 4: 8}
    # a mapping {class: files}; the ignore mask is None without an Ambiguous mask
    ann = read_monusac_masks(
        {"Lymphocyte": tmp_path / "Lymphocyte" / "m.npy", "Epithelial": [tmp_path / "Epithelial" / "a.npy"]}
    )
    assert ann.ignore is None
    assert ann.classes == {1: 2, 2: 1, 3: 1}
    assert ann.instances[2, 5] == 1 and ann.instances[0, 0] == 2
    # a list of files, classed by their folders
    ann = read_monusac_masks([tmp_path / "Epithelial" / "b.npy", tmp_path / "Ambiguous" / "m.npy"])
    assert ann.classes == {1: 1} and np.array_equal(ann.ignore, amb)
    # files named after their class, in one folder
    flat = tmp_path_factory.mktemp("flat")
    np.save(flat / "Neutrophil.npy", expected.astype(np.int32))
    ann = read_monusac_masks(flat)
    same_annotation(ann, expected, {1: 4, 2: 4, 3: 4, 4: 4})
    # Ambiguous as a class
    ann = read_monusac_masks(tmp_path, class_names={**MONUSAC_CLASSES, "Ambiguous": 5}, ignore_classes=())
    assert ann.ignore is None and sorted(ann.classes.values()) == [1, 1, 1, 2, 5]


def test_monusac_errors(tmp_path):
    make_monusac(tmp_path)
    os.makedirs(tmp_path / "Mitosis")
    np.save(tmp_path / "Mitosis" / "m.npy", np.zeros((5, 6), np.uint8))
    with pytest.raises(
        ValueError,
        match=r"unknown class 'Mitosis'.*known classes: Epithelial, Lymphocyte,"
        r" Macrophage, Neutrophil; ignored regions: Ambiguous",
    ):
        read_monusac_masks(tmp_path)
    os.remove(tmp_path / "Mitosis" / "m.npy")
    # overlap of two classes: names both classes and the pixel count
    lym = np.load(tmp_path / "Lymphocyte" / "m.npy")
    lym[0:2, 1:3] = 9  # on 2 pixels of an Epithelial nucleus
    np.save(tmp_path / "Lymphocyte" / "m.npy", lym)
    with pytest.raises(
        ValueError,
        match=r"the Lymphocyte mask .*m.npy overlaps the Epithelial mask .*a.npy in 2"
        r" pixels.*overlap='first'",
    ):
        read_monusac_masks(tmp_path)
    ann = read_monusac_masks(tmp_path, overlap="first")
    assert ann.instances[0, 1] == 1 and ann.instances[0, 2] == 4 and ann.classes[4] == 2
    ann = read_monusac_masks(tmp_path, overlap="last")
    assert ann.instances[0, 1] == 4 and ann.instances[0, 0] == 1 and ann.classes == {1: 1, 2: 1, 3: 1, 4: 2, 5: 2}
    # shape mismatch
    np.save(tmp_path / "Lymphocyte" / "m.npy", np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match=r"mask shape \(4, 4\) differs from \(5, 6\)"):
        read_monusac_masks(tmp_path)
    os.remove(tmp_path / "Lymphocyte" / "m.npy")
    # a colour PNG is not a label image
    save_png(tmp_path / "Lymphocyte" / "rgb.png", np.zeros((5, 6, 3), np.uint8))
    with pytest.raises(ValueError, match="colour image"):
        read_monusac_masks(tmp_path)
    empty = tmp_path / "Lymphocyte" / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no mask files"):
        read_monusac_masks(empty)
    with pytest.raises(ValueError, match="differ only in case"):
        read_monusac_masks(tmp_path, class_names={"A": 1, "a": 2})


def test_monusac_tiff_falls_back_to_simpleitk(tmp_path, monkeypatch):
    sitk = pytest.importorskip("SimpleITK")
    import PIL.Image

    mask = np.zeros((4, 5), np.int32)
    mask[1:3, 1:4] = 70000  # 32-bit id
    (tmp_path / "Macrophage").mkdir()
    sitk.WriteImage(sitk.GetImageFromArray(mask), str(tmp_path / "Macrophage" / "m.tif"))
    same_annotation(read_monusac_masks(tmp_path), mask, {70000: 3})

    def unreadable(*args, **kwargs):  # what PIL does with e.g. a float64 TIFF
        raise PIL.UnidentifiedImageError("cannot identify image file")

    monkeypatch.setattr(PIL.Image, "open", unreadable)
    same_annotation(read_monusac_masks(tmp_path), mask, {70000: 3})
    (tmp_path / "Macrophage" / "m.tif").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"cannot read this image \(PIL: cannot identify.*SimpleITK"):
        read_monusac_masks(tmp_path)


# --------------------------------------------------------------------------- GeoJSON reading


def test_geojson_hand_checked_square(tmp_path):
    p = dump(tmp_path / "a.geojson", [feature({"type": "Polygon", "coordinates": [square(1, 2, 4, 5)]})])
    ann = read_geojson(p, (7, 6))
    expected = np.zeros((7, 6), int)
    expected[2:5, 1:4] = 1  # x 1..4, y 2..5 -> rows 2..4, cols 1..3
    assert np.array_equal(ann.instances, expected)
    assert ann.classes == {1: 0} and ann.class_names == {}  # unclassified -> class 0


def test_geojson_pixel_centre_rule(tmp_path):
    # a triangle: hand-checked centres; edges through centres follow the half-open rule
    tri = {"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [0, 4], [0, 0]]]}
    ann = read_geojson(dump(tmp_path / "t.geojson", [feature(tri)]), (5, 5))
    # the hypotenuse x + y = 4 passes through centres (3.5, 0.5), (2.5, 1.5), ...: it is a right-hand
    # edge there, so those centres are outside
    expected = np.array(
        [
            [1, 1, 1, 0, 0],  # row 0, y 0.5: 0 <= x < 3.5
            [1, 1, 0, 0, 0],  # row 1, y 1.5: 0 <= x < 2.5
            [1, 0, 0, 0, 0],
            [0, 0, 0, 0, 0],  # row 3, y 3.5: 0 <= x < 0.5, the centre x = 0.5 is out
            [0, 0, 0, 0, 0],
        ]
    )
    assert np.array_equal(ann.instances, expected)
    # squares whose edges run through pixel centres: centres on the upper and left edges are
    # inside, on the lower and right edges outside; the shared edge x = 2.5 gives no overlap
    a = feature({"type": "Polygon", "coordinates": [square(0.5, 0.5, 2.5, 2.5)]})
    b = feature({"type": "Polygon", "coordinates": [square(2.5, 0.5, 4.5, 2.5)]})
    ann = read_geojson(dump(tmp_path / "ab.geojson", [a, b]), (3, 5))
    assert np.array_equal(ann.instances, [[1, 1, 2, 2, 0], [1, 1, 2, 2, 0], [0, 0, 0, 0, 0]])


def test_geojson_holes_multipolygon_and_classes(tmp_path):
    ring = {"type": "Polygon", "coordinates": [square(0, 0, 5, 5), square(1, 1, 3, 4)]}  # hole of 2x3 px
    multi = {"type": "MultiPolygon", "coordinates": [[square(6, 0, 7, 2)], [square(6, 4, 8, 5)]]}
    island = {"type": "Polygon", "coordinates": [square(1, 1, 2, 2)]}  # inside the hole
    feats = {
        "type": "FeatureCollection",
        "features": [feature(ring, "Tumor"), feature(multi, "Lymphocyte"), feature(island)],
    }
    ann = read_geojson(dump(tmp_path / "h.geojson", feats), (6, 8))
    expected = np.zeros((6, 8), int)
    expected[0:5, 0:5] = 1
    expected[1:4, 1:3] = 0
    expected[1, 1] = 3
    expected[0:2, 6] = 2
    expected[4, 6:8] = 2
    assert np.array_equal(ann.instances, expected)
    assert ann.class_names == {"Lymphocyte": 1, "Tumor": 2}  # sorted names, numbered 1..K
    assert ann.classes == {1: 2, 2: 1, 3: 0}
    ann = read_geojson(tmp_path / "h.geojson", (6, 8), class_map={"Tumor": 5, "Lymphocyte": 6, "Other": 7})
    assert ann.classes == {1: 5, 2: 6, 3: 0}
    assert ann.class_names == {"Tumor": 5, "Lymphocyte": 6, "Other": 7}


def test_geojson_unknown_class(tmp_path):
    p = dump(
        tmp_path / "c.geojson",
        [
            feature({"type": "Polygon", "coordinates": [square(0, 0, 2, 2)]}, "Tumor"),
            feature({"type": "Polygon", "coordinates": [square(3, 0, 4, 2)]}, "Stroma", id="abc"),
        ],
    )
    with pytest.raises(
        ValueError,
        match=r"'Stroma' not in class_map \(first at features\[1\] \(id 'abc'"
        r".*known names: 'Tumor', 'Immune'",
    ):
        read_geojson(p, (4, 4), class_map={"Tumor": 1, "Immune": 2})


def test_geojson_overlap(tmp_path):
    a = feature({"type": "Polygon", "coordinates": [square(0, 0, 3, 3)]}, "Tumor", id="first-uuid")
    b = feature({"type": "Polygon", "coordinates": [square(2, 1, 5, 3)]}, "Immune")
    p = dump(tmp_path / "o.geojson", [a, b])
    with pytest.raises(
        ValueError,
        match=r"features\[1\] \(class 'Immune'\) overlaps features\[0\] \(id 'first-uuid',"
        r" class 'Tumor'\) in 2 pixels.*overlap='first'",
    ):
        read_geojson(p, (4, 6))
    first = read_geojson(p, (4, 6), overlap="first")
    assert first.instances[1, 2] == 1 and (first.instances == 2).sum() == 4
    last = read_geojson(p, (4, 6), overlap="last")
    assert last.instances[1, 2] == 2 and (last.instances == 1).sum() == 7
    covered = feature({"type": "Polygon", "coordinates": [square(0, 0, 1, 1)]})
    p2 = dump(tmp_path / "o2.geojson", [covered, a])
    with pytest.warns(UserWarning, match=r"1 of 2 objects lost all their pixels.*features\[0\]"):
        ann = read_geojson(p2, (4, 6), overlap="last")
    assert ann.n_instances == 1 and ann.classes == {1: 1}


def test_geojson_clipping_empty_objects_and_formats(tmp_path):
    inside = {"type": "Polygon", "coordinates": [square(-2, -2, 2, 1)]}  # clipped to the image
    outside = {"type": "Polygon", "coordinates": [square(10, 10, 12, 12)]}
    tiny = {"type": "Polygon", "coordinates": [[[1.1, 3.1], [1.4, 3.1], [1.4, 3.4], [1.1, 3.1]]]}
    p = dump(
        tmp_path / "e.geojson",
        {"type": "FeatureCollection", "features": [feature(outside), feature(inside), feature(tiny)]},
    )
    with pytest.warns(
        UserWarning,
        match=r"2 of 3 objects cover no pixel centre inside the 4x4 image.*"
        r"features\[0\], features\[2\]",
    ):
        ann = read_geojson(p, (4, 4))
    assert np.array_equal(ann.instances, [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    # a single Feature, QuPath's old "names" classification, a GeometryCollection, 3D positions
    geom = {
        "type": "GeometryCollection",
        "geometries": [{"type": "Polygon", "coordinates": [[[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]]}],
    }
    one = {"type": "Feature", "geometry": geom, "properties": {"classification": {"names": ["Tumor", "Positive"]}}}
    ann = read_geojson(dump(tmp_path / "one.geojson", one), (2, 2))
    assert ann.class_names == {"Tumor: Positive": 1} and ann.instances[0, 0] == 1


def test_geojson_nucleus_geometry(tmp_path):
    cell = feature(
        {"type": "Polygon", "coordinates": [square(0, 0, 6, 6)]},
        "Tumor",
        nucleusGeometry={"type": "Polygon", "coordinates": [square(2, 2, 4, 4)]},
    )
    p = dump(tmp_path / "cells.geojson", [cell])
    assert (read_geojson(p, (6, 6)).instances > 0).sum() == 4
    assert (read_geojson(p, (6, 6), nucleus_geometry=False).instances > 0).sum() == 36


def test_geojson_errors(tmp_path):
    point = feature({"type": "Point", "coordinates": [1, 1]})
    with pytest.raises(ValueError, match=r"features\[0\]: geometry type 'Point' has no area"):
        read_geojson(dump(tmp_path / "p.geojson", [point]), (3, 3))
    (tmp_path / "bad.geojson").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_geojson(tmp_path / "bad.geojson", (3, 3))
    with pytest.raises(ValueError, match="shape must be"):
        read_geojson(dump(tmp_path / "ok.geojson", []), (3,))
    with pytest.raises(ValueError, match="expected a GeoJSON FeatureCollection"):
        read_geojson(dump(tmp_path / "pt.geojson", {"type": "Point", "coordinates": [0, 0]}), (3, 3))
    assert read_geojson(tmp_path / "ok.geojson", (3, 3)).n_instances == 0


def test_ring_scanline_matches_matplotlib():
    from matplotlib.path import Path

    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:20, 0:24]
    centres = np.stack([xx.ravel() + 0.5, yy.ravel() + 0.5], axis=1)
    for _ in range(100):
        n = rng.integers(3, 12)
        ring = rng.uniform(-3, 27, (n, 2)) + rng.uniform(0, 1e-3, (n, 2))  # centres never on an edge
        ours = _ring_mask(ring, 0, 0, 20, 24)
        theirs = Path(np.vstack([ring, ring[:1]]), closed=True).contains_points(centres)
        # matplotlib's fill rule for self-intersecting paths is even-odd for contains_points
        assert np.array_equal(ours.ravel(), theirs)
        # a window gives the same pixels as the whole image
        assert np.array_equal(_ring_mask(ring, 5, 3, 10, 12), ours[5:15, 3:15])


# --------------------------------------------------------------------------- GeoJSON writing: round trips


def round_trip(tmp_path, ann, **kw):
    p = tmp_path / "rt.geojson"
    names = write_geojson(p, ann, **kw)
    return read_geojson(p, ann.instances.shape, class_map=names), names


def test_write_geojson_round_trip_exact_random(tmp_path):
    rng = np.random.default_rng(0)
    for t in range(150):
        shape = tuple(rng.integers(1, 13, 2))
        lab = random_labels(rng, shape, int(rng.integers(1, 6)))
        ids = np.unique(lab)
        ids = ids[ids > 0]
        inst = np.searchsorted(np.r_[0, ids], lab).astype(np.int32)  # 1..N
        classes = {i + 1: int(rng.integers(0, 4)) for i in range(ids.size)}
        ann = NucleiAnnotation(inst, classes, "rand")
        back, _ = round_trip(tmp_path, ann)
        assert np.array_equal(back.instances, ann.instances), (t, inst)
        assert back.classes == ann.classes


def test_write_geojson_geometry(tmp_path):
    inst = np.zeros((7, 7), np.int32)
    inst[0:5, 0:5] = 1
    inst[1:4, 1:4] = 0
    inst[2, 2] = 2  # island in the hole, another instance
    inst[5, 5] = 1  # diagonal to nothing: a second part of instance 1
    inst[6, 6] = 3
    inst[5, 6] = 0
    ann = NucleiAnnotation(inst, {1: 1, 2: 2, 3: 0}, "x", class_names={"Tumor": 1, "Immune": 2})
    p = tmp_path / "g.geojson"
    assert write_geojson(p, ann) == {"Tumor": 1, "Immune": 2}
    feats = json.loads(p.read_text())["features"]
    assert [f["geometry"]["type"] for f in feats] == ["MultiPolygon", "Polygon", "Polygon"]
    outer, pixel = feats[0]["geometry"]["coordinates"]
    # exterior as traced (positive shoelace area), then the hole the other way round
    assert outer == [[[0, 0], [5, 0], [5, 5], [0, 5], [0, 0]], [[1, 4], [4, 4], [4, 1], [1, 1], [1, 4]]]
    assert pixel == [square(5, 5, 6, 6)]
    assert feats[2]["properties"] == {"objectType": "annotation"}  # class 0: unclassified
    assert feats[1]["properties"]["classification"] == {"name": "Immune"}
    back = read_geojson(p, inst.shape, class_map={"Tumor": 1, "Immune": 2})
    assert np.array_equal(back.instances, inst) and back.classes == ann.classes


def test_write_geojson_checkerboard_and_default_names(tmp_path):
    inst = ((np.indices((6, 6)).sum(0) % 2) * 1).astype(np.int32)  # one instance, 18 corner-touching pixels
    inst[2:4, 2:4] = 2
    ann = NucleiAnnotation(inst, {1: 3, 2: 3}, "x")
    back, names = round_trip(tmp_path, ann, object_type="detection")
    assert names == {"Class 3": 3}
    assert np.array_equal(back.instances, inst) and back.classes == {1: 3, 2: 3}
    feats = json.loads((tmp_path / "rt.geojson").read_text())["features"]
    assert feats[0]["properties"]["objectType"] == "detection"


def test_round_trip_from_every_reader(tmp_path):
    savemat(tmp_path / "a.mat", {"inst_map": INST, "inst_type": np.array([[1], [2], [3], [0], [4]])})
    np.save(tmp_path / "p.npy", pannuke_masks())
    make_monusac(tmp_path / "monusac")
    for ann in (
        read_hovernet(tmp_path / "a.mat"),
        read_hovernet(tmp_path / "p.npy"),
        read_monusac_masks(tmp_path / "monusac"),
    ):
        back, names = round_trip(tmp_path, ann)
        assert np.array_equal(back.instances, ann.instances) and back.classes == ann.classes
    # PanNuke's names are written and come back
    ann = read_hovernet(tmp_path / "p.npy")
    back, names = round_trip(tmp_path, ann)
    assert names == {"Neoplastic": 1, "Inflammatory": 2, "Epithelial": 5}


def test_write_geojson_realistic_size_is_fast(tmp_path):
    import time

    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[:300, :300]
    inst = np.zeros((300, 300), np.int32)
    for i, (cy, cx, r) in enumerate(zip(*rng.uniform([0, 0, 3], [300, 300, 8], (150, 3)).T)):
        inst[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = i + 1
    ids = np.unique(inst)[1:]
    inst = np.searchsorted(np.r_[0, ids], inst).astype(np.int32)
    ann = NucleiAnnotation(inst, {i + 1: 1 for i in range(ids.size)}, "x")
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back, _ = round_trip(tmp_path, ann)
    assert time.perf_counter() - t < 5
    assert np.array_equal(back.instances, inst)
