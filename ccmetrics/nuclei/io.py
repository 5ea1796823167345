"""Readers for the nuclei annotation formats pathologists have, and a GeoJSON writer.

Every reader returns a :class:`NucleiAnnotation`: one ``(H, W)`` int32 instance map and
the class of every instance, whatever the source format.

================================  ==========================================================
reader                            formats
================================  ==========================================================
:func:`read_hovernet`             HoVer-Net / CoNSeP ``.mat`` (``inst_map`` + ``inst_type``
                                  or ``type_map``), CoNIC ``.npy`` ``(H, W, 2)``, PanNuke
                                  ``.npy`` ``(H, W, 6)``, plain 2D instance maps; stacked
                                  ``(N, H, W[, C])`` files with ``index=``
:func:`read_monusac_masks`        MoNuSAC-style per-class n-ary masks (``.npy``, ``.png``,
                                  ``.tif``), ``Ambiguous`` regions as an ignore mask
:func:`read_geojson`              QuPath GeoJSON export (Polygon, MultiPolygon, holes)
:func:`write_geojson`             the inverse of :func:`read_geojson`, exact to the pixel
================================  ==========================================================

Conventions, the same for every reader:

* **Instance ids** are ``1..N`` without gaps, ``0`` is background.  They keep the order of
  the source: sorted original ids (``.mat``/``.npy``), channel by channel (PanNuke), mask
  file by mask file (MoNuSAC), feature by feature (GeoJSON).  An instance map whose ids
  are already ``1..N`` comes back unchanged.
* **Class 0 means unknown / unclassified**, never background: an instance map without
  types, a HoVer-Net ``inst_type`` of 0, a QuPath object without classification.  Every
  instance has an entry in ``NucleiAnnotation.classes``; real classes are ``>= 1``.
* **Overlaps are errors** by default: two objects (GeoJSON features, PanNuke channels,
  MoNuSAC masks) claiming the same pixel raise a ``ValueError`` that names both and the
  number of pixels; ``overlap="first"`` keeps the pixel with the earlier object,
  ``overlap="last"`` gives it to the later one (an object left without pixels is dropped
  with a warning).
* **Pixel geometry** (GeoJSON): QuPath coordinates are ``(x, y) = (column, row)`` in
  pixels, pixel ``(row, col)`` is the unit square ``[col, col + 1] x [row, row + 1]`` and
  belongs to a polygon when its centre ``(col + 0.5, row + 0.5)`` is inside (even-odd
  rule per ring, holes subtracted, the parts of a MultiPolygon united).  A centre exactly
  on an edge follows the half-open rule of scan-line filling: inside on a left or upper
  edge, outside on a right or lower one, so polygons that share an edge never share a
  pixel.  Polygons are rasterised by scan lines over their bounding box only.

numpy is the only import at module level; scipy, PIL and SimpleITK are imported by the
readers that need them.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

__all__ = [
    "NucleiAnnotation",
    "read_hovernet",
    "read_monusac_masks",
    "read_geojson",
    "write_geojson",
    "PANNUKE_CLASSES",
    "CONIC_CLASSES",
    "MONUSAC_CLASSES",
]

#: PanNuke ``masks.npy`` channels 0..4 (channel 5 is background), as classes 1..5
PANNUKE_CLASSES = {"Neoplastic": 1, "Inflammatory": 2, "Connective": 3, "Dead": 4, "Epithelial": 5}
#: CoNIC type-map values (channel 1 of ``labels.npy``), for reference; not attached by the reader
CONIC_CLASSES = {"Neutrophil": 1, "Epithelial": 2, "Lymphocyte": 3, "Plasma": 4, "Eosinophil": 5, "Connective": 6}
#: MoNuSAC classes, the default of :func:`read_monusac_masks`
MONUSAC_CLASSES = {"Epithelial": 1, "Lymphocyte": 2, "Macrophage": 3, "Neutrophil": 4}

MASK_EXTENSIONS = (".npy", ".png", ".tif", ".tiff")
_OVERLAP = ("error", "first", "last")
_CLASS_RULES = ("error", "majority")
_INT32_MAX = int(np.iinfo(np.int32).max)

PathLike = Union[str, "os.PathLike[str]"]


# --------------------------------------------------------------------------- result type


@dataclass(frozen=True, eq=False)
class NucleiAnnotation:
    """A nuclei annotation: one instance map and the class of every instance.

    Attributes
    ----------
    instances : numpy.ndarray
        ``(H, W)`` int32 instance map: 0 is background, instances are ``1..N`` without gaps.
    classes : dict of int to int
        Class of every instance id ``1..N`` (exactly these keys).  ``0`` means unknown /
        unclassified; real classes are ``>= 1``.
    source : str
        Where it was read from: the file or folder (``path[i]`` for image ``i`` of a
        stacked ``.npy``).
    ignore : numpy.ndarray or None
        ``(H, W)`` bool mask of regions to leave out of an evaluation (MoNuSAC
        ``Ambiguous`` regions); ``None`` when the source has none.
    class_names : dict of str to int or None
        Class name -> class id, where the format names its classes (PanNuke, MoNuSAC,
        GeoJSON); ``None`` otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> ann = NucleiAnnotation(np.array([[0, 1], [2, 2]], np.int32), {1: 3, 2: 0}, "example")
    >>> ann.n_instances
    2
    >>> ann.type_map()
    array([[0, 3],
           [0, 0]], dtype=int32)
    """

    instances: np.ndarray
    classes: dict[int, int]
    source: str
    ignore: np.ndarray | None = None
    class_names: dict[str, int] | None = None

    def __post_init__(self):
        inst = np.asarray(self.instances)
        if inst.ndim != 2:
            raise ValueError(f"NucleiAnnotation.instances must be a 2D (H, W) map, got shape {inst.shape}")
        if not (inst.dtype == bool or np.issubdtype(inst.dtype, np.integer)):
            raise ValueError(f"NucleiAnnotation.instances must hold integer ids, got dtype {inst.dtype}")
        n = int(inst.max()) if inst.size else 0
        if inst.size and int(inst.min()) < 0:
            raise ValueError("NucleiAnnotation.instances has negative ids; 0 is background, ids are 1..N")
        if n > _INT32_MAX:
            raise ValueError(f"NucleiAnnotation.instances has id {n}, more than int32 holds")
        if inst.dtype != np.int32:
            inst = inst.astype(np.int32)
        object.__setattr__(self, "instances", inst)
        classes = {int(k): int(v) for k, v in dict(self.classes).items()}
        if set(classes) != set(range(1, n + 1)):
            missing = sorted(set(range(1, n + 1)) - set(classes))[:5]
            extra = sorted(set(classes) - set(range(1, n + 1)))[:5]
            raise ValueError(
                f"NucleiAnnotation.classes must have exactly the keys 1..{n} (one class per instance id);"
                f" missing {missing}, not in the map {extra}"
            )
        object.__setattr__(self, "classes", classes)
        if self.ignore is not None:
            ign = np.asarray(self.ignore)
            if ign.shape != inst.shape:
                raise ValueError(f"NucleiAnnotation.ignore has shape {ign.shape}, the instance map {inst.shape}")
            object.__setattr__(self, "ignore", ign.astype(bool, copy=False))
        if self.class_names is not None:
            object.__setattr__(self, "class_names", {str(k): int(v) for k, v in dict(self.class_names).items()})

    @property
    def n_instances(self) -> int:
        """Number of instances ``N``."""
        return len(self.classes)

    def type_map(self) -> np.ndarray:
        """``(H, W)`` int32 class of every pixel: 0 on background and on unknown-class instances."""
        lut = np.zeros(self.n_instances + 1, np.int32)
        for k, c in self.classes.items():
            lut[k] = c
        return lut[self.instances]

    def __repr__(self) -> str:
        extra = "" if self.ignore is None else f", ignore={int(self.ignore.sum())} px"
        return (
            f"NucleiAnnotation({self.instances.shape[0]}x{self.instances.shape[1]}, "
            f"{self.n_instances} instances, classes {sorted(set(self.classes.values()))}{extra}, "
            f"source={self.source!r})"
        )


# --------------------------------------------------------------------------- helpers


def _check_choice(value: str, choices: Sequence[str], name: str) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def _check_file(path: PathLike) -> str:
    p = os.fspath(path)
    if not os.path.isfile(p):
        if os.path.isdir(p):
            raise ValueError(f"{p}: is a folder; expected a file")
        raise FileNotFoundError(f"{p}: no such file")
    return p


def _as_labels(arr: Any, where: str, what: str) -> np.ndarray:
    """Validate integer labels (ints, bools or integer-valued floats, >= 0) and return int32."""
    a = np.asarray(arr)
    if a.dtype == bool:
        return a.astype(np.int32)
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{where}: the {what} has dtype {a.dtype}; expected integer labels (0 = background)")
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if not bad.any():
            bad = a != np.round(a)
        if bad.any():
            pos = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{where}: the {what} is not integer-valued ({int(bad.sum())} pixels, e.g. {a[pos]!r} at index"
                f" {pos}); expected integer labels (0 = background). Was it resized or saved with"
                f" interpolation or lossy compression? Resample with nearest neighbour and save losslessly"
            )
    if a.size:
        lo, hi = a.min(), a.max()
        if lo < 0:
            pos = tuple(int(i) for i in np.argwhere(a < 0)[0])
            raise ValueError(
                f"{where}: the {what} has negative values ({lo!r} at index {pos}); labels must be >= 0 (0 = background)"
            )
        if hi > _INT32_MAX:
            raise ValueError(f"{where}: the {what} has label {hi!r}, more than int32 holds")
    return a.astype(np.int32)


def _as_int_vector(arr: Any, where: str, what: str) -> np.ndarray:
    a = np.asarray(arr)
    if a.size == 0:
        return np.zeros(0, np.int64)
    if a.ndim > 2 or (a.ndim == 2 and 1 not in a.shape):
        raise ValueError(f"{where}: {what} must be a vector (N,), (N, 1) or (1, N), got shape {a.shape}")
    return _as_labels(a.ravel(), where, what).astype(np.int64)


def _relabel(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Renumber the non-zero labels to 1..N in increasing order; return (map, original ids)."""
    if labels.size == 0:
        return labels.astype(np.int32), np.zeros(0, np.int64)
    hi = int(labels.max())
    if hi == 0:
        return labels.astype(np.int32), np.zeros(0, np.int64)
    if hi <= 4 * labels.size + 1024:
        ids = np.flatnonzero(np.bincount(labels.ravel(), minlength=hi + 1))
        ids = ids[ids > 0]
    else:
        ids = np.unique(labels)
        ids = ids[ids > 0].astype(np.int64)
    if ids.size == hi:  # already 1..N
        return labels.astype(np.int32), ids.astype(np.int64)
    lut = np.zeros(hi + 1, np.int32)
    lut[ids] = np.arange(1, ids.size + 1, dtype=np.int32)
    return lut[labels], ids.astype(np.int64)


def _classes_from_type_map(
    inst: np.ndarray, orig_ids: np.ndarray, tmap: np.ndarray, rule: str, where: str
) -> dict[int, int]:
    """Class of every instance of a relabelled map from a per-pixel type map."""
    n = orig_ids.size
    if n == 0:
        return {}
    fg = inst > 0
    i = inst[fg].astype(np.int64)
    t = tmap[fg].astype(np.int64)
    base = int(t.max()) + 1
    keys, counts = np.unique(i * base + t, return_counts=True)
    k_inst, k_type = keys // base, keys % base
    n_types = np.bincount(k_inst, minlength=n + 1)
    bad = np.flatnonzero(n_types > 1)
    if bad.size and rule == "error":
        first = bad[0]
        sel = k_inst == first
        found = ", ".join(f"class {c} ({p} px)" for c, p in zip(k_type[sel], counts[sel]))
        more = f" ({bad.size - 1} more instances have several classes)" if bad.size > 1 else ""
        raise ValueError(
            f"{where}: instance {int(orig_ids[first - 1])} has pixels of {int(sel.sum())} classes in the type"
            f" map: {found}{more}. An instance has one class: fix the type map, or pass"
            f" class_rule='majority' to give each instance the class of most of its pixels"
        )
    order = np.lexsort((k_type, -counts, k_inst))  # per instance: most pixels first, ties -> lowest class
    first_rows = np.unique(k_inst[order], return_index=True)[1]
    chosen = order[first_rows]
    return {int(a): int(b) for a, b in zip(k_inst[chosen], k_type[chosen])}


class _Painter:
    """Paints objects into one instance map, one id per object, with the overlap rule."""

    def __init__(self, shape: tuple[int, int], overlap: str, where: str, one_per_object: bool = False):
        self.one_per_object = one_per_object
        self.inst = np.zeros(shape, np.int32)
        self.overlap = overlap
        self.where = where
        self.cls: list[int] = [0]
        self.owner: list[int] = [-1]  # object index per id
        self.names: list[str] = []  # description per object index
        self.dropped: list[str] = []

    def add(self, window: tuple[slice, slice], local: np.ndarray, classes: Sequence[int], name: str) -> None:
        """Paint ``local`` (labels 1..n, 0 = nothing) at ``window``; label k gets class classes[k-1]."""
        obj = len(self.names)
        self.names.append(name)
        region = self.inst[window]
        fg = local > 0
        if not fg.any():
            return
        clash = fg & (region > 0)
        if clash.any():
            if self.overlap == "error":
                prev = region[clash]
                owners, counts = np.unique(np.asarray(self.owner, np.int64)[prev], return_counts=True)
                o = int(np.argmax(counts))
                other = (
                    f" (and {', '.join(self.names[int(x)] for x in owners if x != owners[o])})"
                    if owners.size > 1
                    else ""
                )
                raise ValueError(
                    f"{self.where}: {name} overlaps {self.names[int(owners[o])]} in {int(counts[o])} pixels"
                    f"{other}. Instances may not overlap: fix the annotation, or pass overlap='first' (the"
                    f" earlier object keeps the pixels) or overlap='last' (the later one takes them)"
                )
            if self.overlap == "first":
                fg = fg & ~clash
        n = len(classes)
        if not fg.any():
            self.dropped.append(self._lost(name, n))
            return
        base = len(self.cls) - 1
        region[fg] = local[fg] + base
        self.cls.extend(int(c) for c in classes)
        self.owner.extend([obj] * n)

    def _lost(self, name: str, n: int) -> str:
        return name if self.one_per_object else f"{n} instance{'s' if n > 1 else ''} of {name}"

    def result(self) -> tuple[np.ndarray, dict[int, int], list[str]]:
        """(instance map with ids 1..N, classes, descriptions of objects left without pixels)."""
        n = len(self.cls) - 1
        present = np.bincount(self.inst.ravel(), minlength=n + 1) > 0
        present[0] = True
        inst = self.inst
        keep = np.flatnonzero(present)[1:]
        if keep.size < n:
            lost = np.flatnonzero(~present)
            owners, counts = np.unique(np.asarray(self.owner, np.int64)[lost], return_counts=True)
            self.dropped.extend(self._lost(self.names[int(o)], int(c)) for o, c in zip(owners, counts))
            lut = np.zeros(n + 1, np.int32)
            lut[keep] = np.arange(1, keep.size + 1, dtype=np.int32)
            inst = lut[inst]
        classes = {i + 1: self.cls[int(k)] for i, k in enumerate(keep)}
        return inst, classes, self.dropped


def _warn_dropped(where: str, dropped: list[str], total: int, why: str) -> None:
    if dropped:
        shown = ", ".join(dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
        warnings.warn(
            f"{where}: {len(dropped)} of {total} objects {why} and were left out: {shown}", UserWarning, stacklevel=3
        )


# --------------------------------------------------------------------------- HoVer-Net / CoNIC / PanNuke


def read_hovernet(
    path: PathLike,
    *,
    type_map: np.ndarray | None = None,
    class_rule: str = "error",
    index: int | None = None,
    overlap: str = "error",
) -> NucleiAnnotation:
    """Read a HoVer-Net / CoNSeP ``.mat`` file or a CoNIC / PanNuke / plain ``.npy`` array.

    ``.mat`` (read with :func:`scipy.io.loadmat`; MATLAB v7.3 / HDF5 files are not supported):

    * ``inst_map`` ``(H, W)``: the instance map (MATLAB doubles are fine if integer-valued);
    * ``inst_type`` ``(N, 1)``: class per instance, ``inst_type[k - 1]`` for id ``k``
      (CoNSeP ground truth), or in the order of ``inst_uid`` when that key is present
      (HoVer-Net's inference output);
    * otherwise ``type_map`` ``(H, W)``: each instance gets the class of its pixels;
    * otherwise every class is 0 (unknown).  ``inst_centroid`` and other keys are ignored.

    ``.npy`` (read with ``allow_pickle=False``):

    * ``(H, W)``: an instance map alone; classes 0 unless ``type_map=`` is given;
    * ``(H, W, 2)``, CoNIC: channel 0 the instance map, channel 1 the type map;
    * ``(H, W, 6)``, PanNuke: channels 0-4 hold the instances of one class each, as
      classes 1-5 (:data:`PANNUKE_CLASSES`: neoplastic, inflammatory, connective, dead,
      epithelial), channel 5 (background) is ignored.  Ids may repeat across channels:
      each channel's instances get their own ids, channel 0 first;
    * ``(N, H, W)``, ``(N, H, W, 2)``, ``(N, H, W, 6)``: a stack of these (CoNIC
      ``labels.npy``, PanNuke ``masks.npy``); pass ``index`` to pick one image (the file is
      memory-mapped, only that image is read).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.mat`` or ``.npy`` file.
    type_map : numpy.ndarray, optional
        ``(H, W)`` per-pixel classes for a file that holds an instance map only.
    class_rule : {"error", "majority"}
        An instance whose pixels have several classes in a type map raises ``ValueError``
        naming the instance and its classes, or (``"majority"``) gets the class of most of
        its pixels (ties: the lowest class).  Type-map value 0 counts as a class (unknown).
    index : int, optional
        The image of a stacked ``.npy``; required for 4D arrays.
    overlap : {"error", "first", "last"}
        PanNuke only: a pixel claimed by two channels raises ``ValueError``, or stays with
        the lower (``"first"``) or goes to the higher (``"last"``) channel.

    Returns
    -------
    NucleiAnnotation
        Ids ``1..N`` in the order of the original ids (PanNuke: channel by channel);
        ``class_names`` is :data:`PANNUKE_CLASSES` for PanNuke, ``None`` otherwise.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from scipy.io import savemat
    >>> folder = tempfile.mkdtemp()
    >>> inst = np.array([[1, 1, 0], [0, 2, 2], [0, 0, 2]])
    >>> savemat(os.path.join(folder, "a.mat"), {"inst_map": inst.astype(float), "inst_type": [[3], [1]]})
    >>> ann = read_hovernet(os.path.join(folder, "a.mat"))
    >>> ann.instances
    array([[1, 1, 0],
           [0, 2, 2],
           [0, 0, 2]], dtype=int32)
    >>> ann.classes
    {1: 3, 2: 1}
    >>> np.save(os.path.join(folder, "conic.npy"), np.stack([inst, np.where(inst > 0, 4, 0)], axis=-1))
    >>> read_hovernet(os.path.join(folder, "conic.npy")).classes
    {1: 4, 2: 4}
    """
    p = _check_file(path)
    _check_choice(class_rule, _CLASS_RULES, "class_rule")
    _check_choice(overlap, _OVERLAP, "overlap")
    ext = os.path.splitext(p)[1].lower()
    if ext == ".mat":
        if index is not None:
            raise ValueError(f"{p}: index= is for stacked .npy files; a .mat file holds one image")
        return _read_hovernet_mat(p, type_map, class_rule)
    if ext == ".npy":
        return _read_hovernet_npy(p, type_map, class_rule, index, overlap)
    raise ValueError(
        f"{p}: unsupported file type {ext or '(no extension)'!r}; read_hovernet reads .mat"
        f" (HoVer-Net / CoNSeP) and .npy (CoNIC, PanNuke, instance maps); use"
        f" read_monusac_masks for mask images and read_geojson for QuPath exports"
    )


def _extra_type_map(type_map, inst: np.ndarray, where: str) -> np.ndarray:
    tmap = _as_labels(type_map, where, "type_map argument")
    if tmap.shape != inst.shape:
        raise ValueError(f"{where}: type_map has shape {tmap.shape}, the instance map {inst.shape}")
    return tmap


def _read_hovernet_mat(p: str, type_map, class_rule: str) -> NucleiAnnotation:
    import scipy.io

    try:
        m = scipy.io.loadmat(p)
    except NotImplementedError as e:  # v7.3
        raise ValueError(
            f"{p}: MATLAB v7.3 (HDF5) files are not supported ({e}); save it again with"
            f" save(..., '-v7') in MATLAB, or read it with h5py and pass the arrays to"
            f" NucleiAnnotation"
        ) from None
    except Exception as e:
        raise ValueError(f"{p}: not a readable MATLAB .mat file ({type(e).__name__}: {e})") from None
    keys = sorted(k for k in m if not k.startswith("__"))
    if "inst_map" not in m:
        raise ValueError(
            f"{p}: no 'inst_map' in this .mat file (keys found: {', '.join(keys) or 'none'}). HoVer-Net /"
            f" CoNSeP files hold 'inst_map' (H, W) and 'inst_type' (N, 1) or 'type_map' (H, W); for other"
            f" layouts load the arrays yourself and build a NucleiAnnotation"
        )
    raw = np.asarray(m["inst_map"])
    if raw.ndim != 2:
        raise ValueError(f"{p}: 'inst_map' must be 2D (H, W), got shape {raw.shape}")
    labels = _as_labels(raw, p, "'inst_map'")
    inst, ids = _relabel(labels)
    have_types = "inst_type" in m or "type_map" in m
    if type_map is not None and have_types:
        raise ValueError(f"{p}: the file has its own classes ('inst_type' or 'type_map'); leave out type_map=")
    if "inst_type" in m:
        types = _as_int_vector(m["inst_type"], p, "'inst_type'")
        if "inst_uid" in m:
            uid = _as_int_vector(m["inst_uid"], p, "'inst_uid'")
            if uid.size != types.size:
                raise ValueError(
                    f"{p}: 'inst_uid' has {uid.size} entries, 'inst_type' {types.size};"
                    f" they must pair up (class inst_type[i] of instance inst_uid[i])"
                )
            lookup = dict(zip(uid.tolist(), types.tolist()))
            missing = [int(k) for k in ids if int(k) not in lookup]
            if missing:
                raise ValueError(
                    f"{p}: instances {missing[:10]} of 'inst_map' are not in 'inst_uid'"
                    f" ({len(missing)} in all); every instance needs a class"
                )
            classes = {i + 1: int(lookup[int(k)]) for i, k in enumerate(ids)}
        else:
            if ids.size and types.size < ids[-1]:
                raise ValueError(
                    f"{p}: 'inst_type' has {types.size} entries but 'inst_map' has instance id {int(ids[-1])};"
                    f" inst_type[k - 1] is the class of instance k, so it needs one entry per id up to the"
                    f" largest (or an 'inst_uid' key listing the id of each entry)"
                )
            classes = {i + 1: int(types[k - 1]) for i, k in enumerate(ids)}
    elif "type_map" in m:
        tmap = np.asarray(m["type_map"])
        if tmap.shape != raw.shape:
            raise ValueError(f"{p}: 'type_map' has shape {tmap.shape}, 'inst_map' {raw.shape}")
        classes = _classes_from_type_map(inst, ids, _as_labels(tmap, p, "'type_map'"), class_rule, p)
    elif type_map is not None:
        classes = _classes_from_type_map(inst, ids, _extra_type_map(type_map, inst, p), class_rule, p)
    else:
        classes = {i + 1: 0 for i in range(ids.size)}
    return NucleiAnnotation(inst, classes, p)


def _read_hovernet_npy(p: str, type_map, class_rule: str, index: int | None, overlap: str) -> NucleiAnnotation:
    try:
        arr = np.load(p, mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        raise ValueError(
            f"{p}: this .npy holds Python objects (a pickled dict or list?), not an array"
            f" ({e}); HoVer-Net .npy inputs are (H, W), (H, W, 2) or (H, W, 6) label arrays"
        ) from None
    except Exception as e:
        raise ValueError(f"{p}: not a readable .npy file ({type(e).__name__}: {e})") from None
    source = p
    if index is not None:
        if arr.ndim not in (3, 4):
            raise ValueError(
                f"{p}: index= is for stacked arrays (N, H, W) or (N, H, W, C); this one has shape {arr.shape}"
            )
        n = arr.shape[0]
        if not -n <= index < n:
            raise IndexError(f"{p}: index {index} out of range; the file holds {n} images")
        arr = arr[index]
        source = f"{p}[{index}]"
    elif arr.ndim == 4:
        raise ValueError(
            f"{p}: this file holds a stack of {arr.shape[0]} images, shape {arr.shape}"
            f" (CoNIC labels.npy / PanNuke masks.npy); pass index= to read one"
        )
    arr = np.asarray(arr)
    where = source
    if arr.ndim == 2:
        labels = _as_labels(arr, where, "instance map")
        inst, ids = _relabel(labels)
        if type_map is not None:
            classes = _classes_from_type_map(inst, ids, _extra_type_map(type_map, inst, where), class_rule, where)
        else:
            classes = {i + 1: 0 for i in range(ids.size)}
        return NucleiAnnotation(inst, classes, source)
    if type_map is not None:
        raise ValueError(
            f"{where}: type_map= is for 2D instance maps; this array of shape {arr.shape} has its own classes"
        )
    if arr.ndim == 3 and arr.shape[2] == 2:  # CoNIC
        inst, ids = _relabel(_as_labels(arr[..., 0], where, "instance map (channel 0)"))
        tmap = _as_labels(arr[..., 1], where, "type map (channel 1)")
        return NucleiAnnotation(inst, _classes_from_type_map(inst, ids, tmap, class_rule, where), source)
    if arr.ndim == 3 and arr.shape[2] == 6:  # PanNuke
        painter = _Painter(arr.shape[:2], overlap, where)
        for ch, name in enumerate(PANNUKE_CLASSES):
            local, ids = _relabel(_as_labels(arr[..., ch], where, f"channel {ch} ({name})"))
            painter.add((slice(None), slice(None)), local, [ch + 1] * ids.size, f"channel {ch} ({name})")
        inst, classes, dropped = painter.result()
        if dropped:
            warnings.warn(
                f"{where}: with overlap={overlap!r}, instances that lost all their pixels to another"
                f" channel were left out: {', '.join(dropped)}",
                UserWarning,
                stacklevel=3,
            )
        return NucleiAnnotation(inst, classes, source, class_names=dict(PANNUKE_CLASSES))
    raise ValueError(
        f"{where}: unsupported array shape {arr.shape}; expected (H, W) instance map, (H, W, 2) CoNIC"
        f" (instances, types), (H, W, 6) PanNuke masks, or a stack of these with index=. Channel-first"
        f" data (C, H, W) must be moved to the last axis: np.moveaxis(a, 0, -1)"
    )


# --------------------------------------------------------------------------- mask images


def _read_label_image(path: str) -> np.ndarray:
    """A 2D label image from .npy, .png or .tif (PIL, then SimpleITK for what PIL cannot read)."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npy":
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as e:
            raise ValueError(f"{path}: not a readable .npy array ({type(e).__name__}: {e})") from None
    elif ext in (".png", ".tif", ".tiff"):
        arr = None
        error = None
        from PIL import Image as PILImage

        try:
            with PILImage.open(path) as im:
                frames = getattr(im, "n_frames", 1)
                if frames > 1:
                    raise ValueError(f"{path}: has {frames} pages/frames; a mask must be one 2D image")
                if im.mode in ("RGB", "RGBA", "CMYK", "YCbCr", "LAB", "HSV", "LA", "PA", "RGBX"):
                    raise ValueError(
                        f"{path}: a colour image (mode {im.mode}); an n-ary mask must be a single-channel"
                        f" label image (one integer id per nucleus, 0 = background)"
                    )
                arr = np.array(im)
        except ValueError:
            raise
        except PILImage.DecompressionBombError as e:  # final: no other reader decodes what PIL refuses to
            raise ValueError(
                f"{path}: PIL refuses to decode it as a possible decompression bomb ({e}); a mask this large is "
                "not read: check the file, or, if it is genuine, raise PIL.Image.MAX_IMAGE_PIXELS before reading it"
            ) from None
        except Exception as e:  # PIL cannot read it (float64 TIFF, unusual compression...)
            error = e
        if arr is None:
            try:
                import SimpleITK as sitk

                arr = sitk.GetArrayFromImage(sitk.ReadImage(path))
            except Exception as e2:
                raise ValueError(
                    f"{path}: cannot read this image (PIL: {error}; SimpleITK: {e2}); convert"
                    f" the mask to .npy with numpy"
                ) from None
    else:
        raise ValueError(f"{path}: unsupported mask type {ext!r}; expected one of {', '.join(MASK_EXTENSIONS)}")
    if arr.ndim != 2:
        raise ValueError(f"{path}: a mask must be a 2D (H, W) label image, got shape {arr.shape}")
    return arr


def _is_mask_file(name: str) -> bool:
    return not name.startswith(".") and name.lower().endswith(MASK_EXTENSIONS)


def _mask_files_by_class(folder_or_paths) -> list[tuple[str, str]]:
    """(class name, file) pairs in reading order."""
    if isinstance(folder_or_paths, Mapping):
        pairs: list[tuple[str, str]] = []
        for name, files in folder_or_paths.items():
            if isinstance(files, (str, os.PathLike)):
                files = [files]
            pairs.extend((str(name), _check_file(f)) for f in files)
        return pairs
    if isinstance(folder_or_paths, (str, os.PathLike)):
        root = os.fspath(folder_or_paths)
        if os.path.isfile(root):
            return [(os.path.basename(os.path.dirname(os.path.abspath(root))), root)]
        if not os.path.isdir(root):
            raise FileNotFoundError(f"{root}: no such file or folder")
        entries = sorted(e for e in os.listdir(root) if not e.startswith("."))
        pairs = []
        for e in entries:
            sub = os.path.join(root, e)
            if os.path.isdir(sub):
                pairs.extend(
                    (e, os.path.join(sub, f))
                    for f in sorted(os.listdir(sub))
                    if _is_mask_file(f) and os.path.isfile(os.path.join(sub, f))
                )
        if not pairs:  # no class folders: files named after their class
            pairs = [
                (os.path.splitext(e)[0], os.path.join(root, e))
                for e in entries
                if _is_mask_file(e) and os.path.isfile(os.path.join(root, e))
            ]
        if not pairs:
            raise ValueError(
                f"{root}: no mask files ({', '.join(MASK_EXTENSIONS)}) in class folders"
                f" (<image>/<ClassName>/<mask>) nor named after their class (<image>/<ClassName>.npy);"
                f" found: {', '.join(entries[:20]) or 'nothing'}"
            )
        return pairs
    pairs = []
    for f in folder_or_paths:
        f = _check_file(f)
        pairs.append((os.path.basename(os.path.dirname(os.path.abspath(f))), f))
    if not pairs:
        raise ValueError("read_monusac_masks: no mask files given")
    return pairs


def read_monusac_masks(
    folder_or_paths,
    class_names: Mapping[str, int] | None = None,
    *,
    ignore_classes: Sequence[str] = ("Ambiguous",),
    overlap: str = "error",
) -> NucleiAnnotation:
    """Combine MoNuSAC-style per-class n-ary masks into one instance map.

    An n-ary mask is a 2D label image of one class: 0 background, one integer id per
    nucleus (a binary mask is one nucleus).  The class comes from the name of the mask's
    folder (MoNuSAC layout ``<patient>/<image>/<ClassName>/<mask>.tif``) or file.

    Parameters
    ----------
    folder_or_paths : str, os.PathLike, sequence of paths, or mapping
        * an image folder with one sub-folder per class, each holding one or more mask
          files (``.npy``, ``.png``, ``.tif``); when it has no such sub-folders, its mask
          files named after their class (``Epithelial.npy``);
        * a sequence of mask files, each classed by the name of its folder;
        * a mapping ``{class name: file or list of files}``.

        PNG and TIFF are read with PIL (8/16/32-bit integer, 32-bit float) and, failing
        that, SimpleITK; ``.npy`` with numpy.  Float masks must be integer-valued.
    class_names : mapping of str to int, optional
        Class name -> class id (matched case-insensitively).  Default
        :data:`MONUSAC_CLASSES`: Epithelial 1, Lymphocyte 2, Macrophage 3, Neutrophil 4, so
        that ids are the same in every image whatever classes it holds.  An unknown name
        raises ``ValueError`` listing the known ones.
    ignore_classes : sequence of str
        Names (case-insensitive) whose masks are regions to ignore, not nuclei: their
        non-zero pixels form ``NucleiAnnotation.ignore``.  Pass ``()`` to treat
        ``Ambiguous`` as a class of ``class_names``.
    overlap : {"error", "first", "last"}
        Two masks (of two classes, or two files of one class) with a nucleus on the same
        pixel raise ``ValueError`` naming both classes, files and the pixel count; or the
        earlier (``"first"``) / later (``"last"``) file keeps the pixel.  Files are read
        in the order listed (folders: sorted class names, then sorted file names).

    Returns
    -------
    NucleiAnnotation
        Ids ``1..N`` file by file; ``ignore`` is ``None`` when no ignore-class mask was
        found; ``class_names`` is the mapping used.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> image = tempfile.mkdtemp()
    >>> for name, mask in {"Epithelial": [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 2, 2]],
    ...                    "Lymphocyte": [[0, 0, 0, 7], [0, 0, 0, 7], [0, 0, 0, 0]],
    ...                    "Ambiguous": [[0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]]}.items():
    ...     os.mkdir(os.path.join(image, name))
    ...     np.save(os.path.join(image, name, "mask.npy"), np.array(mask, np.uint16))
    >>> ann = read_monusac_masks(image)
    >>> ann.instances
    array([[1, 1, 0, 3],
           [0, 0, 0, 3],
           [0, 0, 2, 2]], dtype=int32)
    >>> ann.classes
    {1: 1, 2: 1, 3: 2}
    >>> ann.ignore.astype(int)
    array([[0, 0, 0, 0],
           [1, 1, 0, 0],
           [0, 0, 0, 0]])
    """
    _check_choice(overlap, _OVERLAP, "overlap")
    names = dict(MONUSAC_CLASSES if class_names is None else class_names)
    lookup: dict[str, tuple[str, int]] = {}
    for name, k in names.items():
        key = str(name).lower()
        if key in lookup and lookup[key][0] != name:
            raise ValueError(f"class_names has {lookup[key][0]!r} and {name!r}, which differ only in case")
        if int(k) < 0:
            raise ValueError(f"class_names[{name!r}] = {k}; class ids are >= 0 (0 = unknown)")
        lookup[key] = (str(name), int(k))
    ignore_lower = {str(n).lower() for n in ignore_classes}
    pairs = _mask_files_by_class(folder_or_paths)
    if isinstance(folder_or_paths, (str, os.PathLike)):
        source = os.fspath(folder_or_paths)
    else:
        source = os.path.commonpath([os.path.abspath(f) for _, f in pairs]) if len(pairs) > 1 else pairs[0][1]

    resolved: list[tuple[str, str, int | None]] = []
    for cname, f in pairs:
        key = cname.lower()
        if key in ignore_lower:
            resolved.append((cname, f, None))
        elif key in lookup:
            resolved.append((lookup[key][0], f, lookup[key][1]))
        else:
            known = ", ".join(sorted(name for name, _ in lookup.values()))
            raise ValueError(
                f"{f}: unknown class {cname!r} (the name of the mask's class folder, or of the file for"
                f" masks named after their class); known classes: {known}; ignored regions:"
                f" {', '.join(ignore_classes) or 'none'}. Pass class_names={{name: class id, ...}} to read"
                f" other classes"
            )

    painter: _Painter | None = None
    ignore = None
    total = 0
    for cname, f, class_id in resolved:
        arr = _read_label_image(f)
        if painter is None:
            painter = _Painter(arr.shape, overlap, source)
        elif arr.shape != painter.inst.shape:
            raise ValueError(
                f"{f}: mask shape {arr.shape} differs from {painter.inst.shape} of {resolved[0][1]};"
                f" all masks of one image must have the same shape"
            )
        labels = _as_labels(arr, f, "mask")
        if class_id is None:
            ignore = (labels > 0) if ignore is None else (ignore | (labels > 0))
            continue
        local, ids = _relabel(labels)
        total += ids.size
        painter.add((slice(None), slice(None)), local, [class_id] * ids.size, f"the {cname} mask {f}")
    assert painter is not None  # resolved holds a file at least: _mask_files_by_class found one
    inst, classes, dropped = painter.result()
    if dropped:
        warnings.warn(
            f"{source}: with overlap={overlap!r}, instances that lost all their pixels to another"
            f" mask were left out: {', '.join(dropped)}",
            UserWarning,
            stacklevel=2,
        )
    return NucleiAnnotation(inst, classes, source, ignore=ignore, class_names=names)


# --------------------------------------------------------------------------- GeoJSON


#: GeoJSON coordinates beyond this (2**53 pixels) are refused: float64 no longer tells pixel centres apart there
_LIMIT_COORDINATE = float(2**53)


def _ring_mask(ring: np.ndarray, r0: int, c0: int, h: int, w: int) -> np.ndarray:
    """Pixels of the window [r0, r0+h) x [c0, c0+w) whose centres are inside ``ring`` (even-odd).

    The crossings of the scan lines with the edges are made a band of rows at a time, each band with at most about
    as many crossings as the window has pixels (or the ring vertices, if more): memory grows with the window (the
    ring's bounding box) and the ring, never with their product (a zig-zag ring of many tall edges)."""
    diff = np.zeros((h, w + 1), np.int32)
    if len(ring) >= 2 and np.array_equal(ring[0], ring[-1]):
        ring = ring[:-1]
    if len(ring) < 3 or h <= 0 or w <= 0:
        return diff[:, :w] > 0
    x0, y0 = ring[:, 0], ring[:, 1]
    x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
    lo, hi = np.minimum(y0, y1), np.maximum(y0, y1)
    # rows whose centre y = r + 0.5 satisfies lo <= y < hi (half-open: every closed ring crosses a row evenly)
    ra = np.clip(np.ceil(lo - 0.5), r0, r0 + h).astype(np.int64)
    rb = np.clip(np.ceil(hi - 0.5), r0, r0 + h).astype(np.int64)
    per_row = np.zeros(h + 1, np.int64)  # crossings per row of the window
    keep = rb > ra
    np.add.at(per_row, ra[keep] - r0, 1)
    np.add.at(per_row, rb[keep] - r0, -1)
    per_row = np.cumsum(per_row[:h])
    budget = max(h * (w + 1) // 4, len(ring), 1 << 16)
    band_start, ends = 0, np.cumsum(per_row)
    while band_start < h:
        before = ends[band_start - 1] if band_start else 0
        band_end = max(band_start + 1, int(np.searchsorted(ends, before + budget, side="right")))
        _band_crossings(diff, x0, y0, x1, y1, ra, rb, r0 + band_start, r0 + min(band_end, h), r0, c0, w)
        band_start = band_end
    return np.cumsum(diff[:, :w], axis=1) > 0


def _band_crossings(diff, x0, y0, x1, y1, ra, rb, top: int, bottom: int, r0: int, c0: int, w: int) -> None:
    """Add the spans of rows [top, bottom) of the window (scan-line crossings paired left to right) to ``diff``."""
    ra = np.maximum(ra, top)
    rb = np.minimum(rb, bottom)
    cnt = np.clip(rb - ra, 0, None)
    total = int(cnt.sum())
    if total == 0:
        return
    e = np.repeat(np.arange(len(x0)), cnt)
    rows = ra[e] + (np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    yc = rows + 0.5
    x = x0[e] + (yc - y0[e]) * (x1[e] - x0[e]) / (y1[e] - y0[e])
    order = np.lexsort((x, rows))
    rows, x = rows[order], x[order]
    if rows.size % 2 or not np.array_equal(rows[0::2], rows[1::2]):  # cannot happen for a closed ring
        raise AssertionError("odd number of crossings in a scan line")
    at = (rows[0::2] - top) * (w + 1)  # each span's row in the band, flat
    ca = np.clip(np.ceil(x[0::2] - 0.5) - c0, 0, w).astype(np.int64)  # centre c+0.5 >= x_a
    cb = np.clip(np.ceil(x[1::2] - 0.5) - c0, 0, w).astype(np.int64)  # centre c+0.5 <  x_b
    size = (bottom - top) * (w + 1)
    spans = np.bincount(at + ca, minlength=size) - np.bincount(at + cb, minlength=size)
    diff[top - r0 : bottom - r0] += spans.reshape(bottom - top, w + 1).astype(np.int32)


def _window(pts: np.ndarray, shape: tuple[int, int]) -> tuple[int, int, int, int]:
    """Rows [r0, r1) and columns [c0, c1) of the image whose pixel centres lie in the box of ``pts``."""
    r0 = max(0, int(math.ceil(pts[:, 1].min() - 0.5)))
    r1 = min(shape[0], int(math.ceil(pts[:, 1].max() - 0.5)))
    c0 = max(0, int(math.ceil(pts[:, 0].min() - 0.5)))
    c1 = min(shape[1], int(math.ceil(pts[:, 0].max() - 0.5)))
    return r0, r1, c0, c1


def _rasterise(polygons: list[list[np.ndarray]], shape: tuple[int, int]):
    """(window, mask) of the pixels of a list of polygons (exterior, holes...), or None if none.

    Each polygon is filled in the bounding box of its exterior only, then united.
    """
    pieces = []
    for poly in polygons:
        if not poly or len(poly[0]) < 3:
            continue
        r0, r1, c0, c1 = _window(poly[0], shape)
        if r1 <= r0 or c1 <= c0:
            continue
        m = _ring_mask(poly[0], r0, c0, r1 - r0, c1 - c0)
        for hole in poly[1:]:
            if m.any():
                m &= ~_ring_mask(hole, r0, c0, r1 - r0, c1 - c0)
        if m.any():
            pieces.append((r0, c0, m))
    if not pieces:
        return None
    if len(pieces) == 1:
        r0, c0, m = pieces[0]
        return (slice(r0, r0 + m.shape[0]), slice(c0, c0 + m.shape[1])), m
    R0 = min(r for r, _, _ in pieces)
    C0 = min(c for _, c, _ in pieces)
    R1 = max(r + m.shape[0] for r, _, m in pieces)
    C1 = max(c + m.shape[1] for _, c, m in pieces)
    mask = np.zeros((R1 - R0, C1 - C0), bool)
    for r0, c0, m in pieces:
        mask[r0 - R0 : r0 - R0 + m.shape[0], c0 - C0 : c0 - C0 + m.shape[1]] |= m
    return (slice(R0, R1), slice(C0, C1)), mask


def _rings(coords, where: str) -> list[np.ndarray]:
    rings: list[np.ndarray] = []
    for ring in coords or []:
        try:
            a = np.asarray(ring, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: a polygon ring is not a list of [x, y] positions") from None
        if a.size == 0:
            continue
        if a.ndim != 2 or a.shape[1] < 2:
            raise ValueError(f"{where}: a polygon ring must be a list of [x, y] positions, got shape {a.shape}")
        a = a[:, :2]
        if not np.isfinite(a).all():
            raise ValueError(f"{where}: a polygon has non-finite coordinates")
        far = np.abs(a) > _LIMIT_COORDINATE
        if far.any():
            vertex, axis = (int(v) for v in np.argwhere(far)[0])
            raise ValueError(
                f"{where}: coordinate {'xy'[axis]} = {float(a[vertex, axis])!r} of vertex {vertex} of ring "
                f"{len(rings)} lies beyond ±{_LIMIT_COORDINATE:.0f} pixels, where pixel centres can no longer be told "
                "apart: fix the object's geometry (QuPath exports pixel coordinates of the image)"
            )
        rings.append(a)
    return rings


def _polygons(geom, where: str) -> list[list[np.ndarray]]:
    if not isinstance(geom, Mapping):
        raise ValueError(f"{where}: has no geometry (got {geom!r}); every object must be a Polygon or MultiPolygon")
    kind = geom.get("type")
    if kind == "Polygon":
        return [_rings(geom.get("coordinates"), where)]
    if kind == "MultiPolygon":
        return [_rings(p, where) for p in geom.get("coordinates") or []]
    if kind == "GeometryCollection":
        return [p for g in geom.get("geometries") or [] for p in _polygons(g, where)]
    raise ValueError(
        f"{where}: geometry type {kind!r} has no area; only Polygon and MultiPolygon (or a"
        f" GeometryCollection of them) can be rasterised. Remove such objects from the export"
        f" (QuPath: export only the nuclei / detections)"
    )


def _class_name(feature: Mapping) -> str | None:
    props = feature.get("properties") or {}
    c = props.get("classification")
    if isinstance(c, str):
        return c or None
    if isinstance(c, Mapping):
        if c.get("name"):
            return str(c["name"])
        if c.get("names"):
            return ": ".join(map(str, c["names"]))
    return None


def _describe(i: int, feature: Mapping) -> str:
    props = feature.get("properties") or {}
    extra = []
    if feature.get("id") is not None:
        extra.append(f"id {feature['id']!r}")
    if props.get("name"):
        extra.append(f"name {props['name']!r}")
    c = _class_name(feature)
    if c:
        extra.append(f"class {c!r}")
    return f"features[{i}]" + (f" ({', '.join(extra)})" if extra else "")


def _features(data, where: str) -> list[Mapping]:
    if isinstance(data, Mapping):
        kind = data.get("type")
        if kind == "FeatureCollection":
            feats = data.get("features") or []
        elif kind == "Feature":
            feats = [data]
        elif kind in ("Polygon", "MultiPolygon", "GeometryCollection"):
            feats = [{"type": "Feature", "geometry": data, "properties": {}}]
        else:
            raise ValueError(
                f"{where}: expected a GeoJSON FeatureCollection, Feature or list of features,"
                f" got an object of type {kind!r}"
            )
    elif isinstance(data, list):
        feats = data
    else:
        raise ValueError(f"{where}: expected a GeoJSON FeatureCollection or a list of features")
    for i, f in enumerate(feats):
        if not isinstance(f, Mapping):
            raise ValueError(f"{where}: features[{i}] is not a GeoJSON object")
    return [
        f if f.get("type") == "Feature" or "geometry" in f else {"type": "Feature", "geometry": f, "properties": {}}
        for f in feats
    ]


def read_geojson(
    path: PathLike,
    shape: tuple[int, int],
    class_map: Mapping[str, int] | None = None,
    *,
    overlap: str = "error",
    nucleus_geometry: bool = True,
) -> NucleiAnnotation:
    """Rasterise a QuPath GeoJSON export into an instance map, one instance per object.

    Parameters
    ----------
    path : str or os.PathLike
        A GeoJSON file: a FeatureCollection, a list of Features or one Feature, each with a
        Polygon, MultiPolygon or GeometryCollection of them (holes are subtracted, the parts
        of a MultiPolygon united into one instance).
    shape : tuple of int
        ``(H, W)`` of the image, in pixels at the resolution of the coordinates.  Pixels
        outside are clipped away.
    class_map : mapping of str to int, optional
        ``properties.classification.name`` -> class id (exact names; QuPath derived classes
        as ``"Tumor: Positive"``).  A name not in it raises ``ValueError`` listing the known
        names.  Default: the file's names, sorted, numbered ``1..K``; this numbering depends
        on the names present in the file, so pass a mapping to compare several files.
        Objects without classification get class 0 (unknown) either way.
    overlap : {"error", "first", "last"}
        Two objects on the same pixel raise ``ValueError`` naming both and the pixel count;
        or the earlier (``"first"``) / later (``"last"``) feature keeps the pixel.
    nucleus_geometry : bool
        QuPath cell objects carry the nucleus outline in ``nucleusGeometry`` beside the
        cell outline ``geometry``; use the nucleus (default) or the cell.

    Returns
    -------
    NucleiAnnotation
        Ids ``1..N`` in feature order; ``class_names`` is the mapping used.  Objects that
        cover no pixel centre inside the image (tiny, or outside) are left out with a
        ``UserWarning``.

    Notes
    -----
    ``(x, y)`` are ``(column, row)`` in pixels with ``(0, 0)`` the top-left corner of the
    image.  A pixel belongs to an object when its centre ``(col + 0.5, row + 0.5)`` is
    inside (even-odd per ring, half-open on edges, see the module notes).  Each object is
    scan-line filled over its own bounding box, so the cost grows with the objects' sizes,
    not with the image's.

    Examples
    --------
    >>> import json, os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> square = {"type": "Polygon", "coordinates": [[[1, 2], [4, 2], [4, 5], [1, 5], [1, 2]]]}
    >>> feature = {"type": "Feature", "geometry": square,
    ...            "properties": {"classification": {"name": "Tumor"}}}
    >>> with open(os.path.join(folder, "nuclei.geojson"), "w") as f:
    ...     json.dump({"type": "FeatureCollection", "features": [feature]}, f)
    >>> ann = read_geojson(os.path.join(folder, "nuclei.geojson"), (6, 5))
    >>> ann.instances
    array([[0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0],
           [0, 1, 1, 1, 0],
           [0, 1, 1, 1, 0],
           [0, 1, 1, 1, 0],
           [0, 0, 0, 0, 0]], dtype=int32)
    >>> ann.classes, ann.class_names
    ({1: 1}, {'Tumor': 1})
    """
    import json

    p = _check_file(path)
    _check_choice(overlap, _OVERLAP, "overlap")
    try:
        size: tuple[int, ...] = tuple(int(s) for s in shape)
    except TypeError:
        raise ValueError(f"shape must be (H, W), got {shape!r}") from None
    if len(size) != 2 or min(size) < 1:
        raise ValueError(f"shape must be (H, W) with positive sizes, got {size!r}")
    try:
        with open(p, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not valid JSON ({e}); expected a GeoJSON export") from None
    features = _features(data, p)
    names = [_class_name(f) for f in features]
    if class_map is None:
        mapping = {n: i + 1 for i, n in enumerate(sorted({n for n in names if n is not None}))}
    else:
        mapping = {str(k): int(v) for k, v in dict(class_map).items()}
        unknown = sorted({n for n in names if n is not None and n not in mapping})
        if unknown:
            first = next(i for i, n in enumerate(names) if n in unknown)
            raise ValueError(
                f"{p}: class name(s) {', '.join(map(repr, unknown))} not in class_map (first at"
                f" {_describe(first, features[first])}); known names: {', '.join(map(repr, mapping)) or 'none'}."
                f" Add them to class_map, or pass class_map=None to number the file's names"
            )
    painter = _Painter(size, overlap, p, one_per_object=True)
    empty = []
    for i, (f, name) in enumerate(zip(features, names)):
        desc = _describe(i, f)
        geom = f.get("nucleusGeometry") if nucleus_geometry and f.get("nucleusGeometry") else f.get("geometry")
        hit = _rasterise(_polygons(geom, f"{p}: {desc}"), size)
        if hit is None:
            empty.append(desc)
            continue
        window, mask = hit
        painter.add(window, mask.astype(np.int32), [0 if name is None else mapping[name]], desc)
    inst, classes, dropped = painter.result()
    _warn_dropped(p, empty, len(features), f"cover no pixel centre inside the {size[0]}x{size[1]} image")
    _warn_dropped(p, dropped, len(features), f"lost all their pixels to other objects (overlap={overlap!r})")
    return NucleiAnnotation(inst, classes, p, class_names=mapping)


# --------------------------------------------------------------------------- GeoJSON writer

# pixel side k: 0 top, 1 right, 2 bottom, 3 left; walked clockwise on screen (y down)
_DR = (-1, 0, 1, 0)
_DC = (0, 1, 0, -1)
_START_X = (0, 1, 1, 0)  # start corner of side k, relative to the pixel's top-left (col, row)
_START_Y = (0, 0, 1, 1)


def _trace_outlines(labels: np.ndarray) -> dict[int, list[list[list[list[int]]]]]:
    """Exact outlines of every label: {label: [polygon = [exterior, holes...] as closed (x, y) rings]}.

    The rings run along pixel edges, so every pixel centre is strictly inside or outside.
    Each 4-connected piece of a label is one polygon: pixels touching only at a corner are
    separate, and a ring may touch another one, or itself, at such a corner.  Vectorised:
    the boundary edges are linked by a local rule and the cycles ordered by pointer jumping.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    H, W = labels.shape
    P = np.zeros((H + 2, W + 2), np.int64)
    P[1:-1, 1:-1] = labels
    Wp = W + 2
    S = P.size
    flat = P.ravel()
    offs = (-Wp, 1, Wp, -1)
    inside = np.flatnonzero(flat)
    parts = []
    for k in range(4):
        f = inside[flat[inside + offs[k]] != flat[inside]]
        parts.append(k * S + f)
    edges = np.concatenate(parts)  # sorted: side-major, then pixel
    E = edges.size
    if E == 0:
        return {}
    succ = np.empty_like(edges)
    pos = 0
    for k, ek in enumerate(parts):
        f = ek - k * S
        lab = flat[f]
        k1 = (k + 1) % 4
        q = f + offs[k1]
        succ[pos : pos + ek.size] = np.where(
            flat[q] != lab,
            k1 * S + f,  # convex corner: turn around f
            np.where(
                flat[q + offs[k]] != lab,
                k * S + q,  # straight on along q
                ((k - 1) % 4) * S + q + offs[k],
            ),
        )  # concave corner, diagonal pixel
        pos += ek.size
    nxt = np.searchsorted(edges, succ)
    # each cycle's representative: its smallest edge index (pointer jumping)
    rep = np.arange(E)
    jump = nxt
    while True:
        new = np.minimum(rep, rep[jump])
        jump = jump[jump]
        if np.array_equal(new, rep):
            break
        rep = new
    # steps from each edge to its cycle's last edge (list ranking on the cycles cut at rep)
    last = nxt == rep
    dist = (~last).astype(np.int64)
    jump = np.where(last, np.arange(E), nxt)
    while not np.array_equal(jump[jump], jump):  # the only fixed points are the last edges
        dist = dist + dist[jump]
        jump = jump[jump]
    order = np.lexsort((-dist, rep))  # ring by ring, each from its representative edge onwards
    side = edges // S
    pix = edges % S
    row = pix // Wp - 1
    col = pix % Wp - 1
    vx = col + np.asarray(_START_X)[side]
    vy = row + np.asarray(_START_Y)[side]
    area2 = np.bincount(rep, weights=vx * vy[nxt] - vx[nxt] * vy, minlength=E)
    # the previous edge of every edge, to find corners (direction changes)
    prev = np.empty(E, np.int64)
    prev[nxt] = np.arange(E)
    corner = side != side[prev]
    o = order[corner[order]]  # ordered corner edges
    ring_of = rep[o]
    starts = np.flatnonzero(np.r_[True, ring_of[1:] != ring_of[:-1]])
    ends = np.r_[starts[1:], o.size]
    xy = np.stack([vx[o], vy[o]], axis=1).tolist()
    reps = ring_of[starts]
    # 4-connected pieces of equal labels: a ring's pixels all lie in one piece
    pr, pc = np.nonzero(labels)
    node = np.full(labels.shape, -1, np.int64)
    node[pr, pc] = np.arange(pr.size)
    a: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for dr, dc in ((0, 1), (1, 0)):
        same = labels[: H - dr, : W - dc] == labels[dr:, dc:]
        same &= labels[: H - dr, : W - dc] != 0
        a[0].append(node[: H - dr, : W - dc][same])
        a[1].append(node[dr:, dc:][same])
    i, j = np.concatenate(a[0]), np.concatenate(a[1])
    _, piece = connected_components(coo_matrix((np.ones(i.size), (i, j)), shape=(pr.size, pr.size)), directed=False)
    ring_piece = piece[node[row[reps], col[reps]]]
    ring_label = flat[pix[reps]]
    polygons: dict[int, list[list]] = {}
    by_piece: dict[int, list] = {}
    holes = []
    for n in range(reps.size):
        ring = xy[starts[n] : ends[n]]
        ring.append(ring[0])
        if area2[reps[n]] > 0:  # traced like a pixel: the exterior of its piece
            poly = [ring]
            polygons.setdefault(int(ring_label[n]), []).append(poly)
            by_piece[int(ring_piece[n])] = poly
        else:
            holes.append((int(ring_piece[n]), ring))
    for pc_, ring in holes:
        by_piece[pc_].append(ring)
    return polygons


def write_geojson(
    path: PathLike,
    annotation: NucleiAnnotation,
    *,
    class_names: Mapping[str, int] | None = None,
    object_type: str = "annotation",
) -> dict[str, int]:
    """Write an annotation as a GeoJSON FeatureCollection that QuPath imports.

    One Feature per instance, in id order, whose Polygon (or MultiPolygon, for an instance
    in several pieces) follows the pixel edges exactly, holes included: reading the file
    back with :func:`read_geojson` and the returned class mapping gives the same instance
    map and classes.  Coordinates are integer pixel corners, ``(x, y) = (column, row)``;
    each 4-connected piece of an instance is one polygon (pixels that touch only at a
    corner are separate pieces, whose rings may touch at that corner).  Exterior rings have
    positive signed area in ``(x, y)`` (counter-clockwise with y up, as RFC 7946 asks),
    holes negative.  Cost: linear in the number of boundary pixel edges, vectorised.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (``.geojson``).
    annotation : NucleiAnnotation
        What to write.
    class_names : mapping of str to int, optional
        Class name -> class id for ``properties.classification.name``; default
        ``annotation.class_names``; classes without a name are written ``"Class <id>"``.
        Class 0 instances without a name are written unclassified.
    object_type : str
        QuPath's ``properties.objectType``: ``"annotation"`` or ``"detection"``.

    Returns
    -------
    dict of str to int
        The class names written -> class ids: the ``class_map`` to read the file back.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> ring = np.array([[1, 1, 1, 0], [1, 0, 1, 0], [1, 1, 1, 2]], np.int32)  # a nucleus with a hole
    >>> ann = NucleiAnnotation(ring, {1: 2, 2: 0}, "example")
    >>> path = os.path.join(tempfile.mkdtemp(), "nuclei.geojson")
    >>> write_geojson(path, ann)
    {'Class 2': 2}
    >>> back = read_geojson(path, ring.shape, class_map={'Class 2': 2})
    >>> bool((back.instances == ring).all()), back.classes
    (True, {1: 2, 2: 0})
    """
    import json

    names = dict(annotation.class_names or {}) if class_names is None else dict(class_names)
    by_id: dict[int, str] = {}
    for class_name, k in names.items():
        by_id.setdefault(int(k), str(class_name))
    outlines = _trace_outlines(annotation.instances)
    features = []
    used: dict[str, int] = {}
    for k in range(1, annotation.n_instances + 1):
        polys = outlines[k]
        geom = (
            {"type": "Polygon", "coordinates": polys[0]}
            if len(polys) == 1
            else {"type": "MultiPolygon", "coordinates": polys}
        )
        props: dict[str, Any] = {"objectType": object_type}
        c = annotation.classes[k]
        name: str | None = by_id.get(c, None if c == 0 else f"Class {c}")
        if name is not None:
            if used.get(name, c) != c:
                raise ValueError(
                    f"class name {name!r} would stand for classes {used[name]} and {c}; pass"
                    f" class_names with one name per class"
                )
            used[name] = c
            props["classification"] = {"name": name}
        features.append({"type": "Feature", "geometry": geom, "properties": props})
    with open(os.fspath(path), "w", encoding="utf-8") as fh:
        json.dump({"type": "FeatureCollection", "features": features}, fh)
    return dict(sorted(used.items(), key=lambda kv: (kv[1], kv[0])))
