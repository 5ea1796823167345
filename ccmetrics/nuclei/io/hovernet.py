"""HoVer-Net / CoNSeP ``.mat`` files and CoNIC / PanNuke / plain ``.npy`` arrays: ``read_hovernet``.

``.mat`` files are read with :func:`scipy.io.loadmat` (the instance map, and the classes from ``inst_type``,
``inst_uid`` + ``inst_type`` or a per-pixel ``type_map``); ``.npy`` files are memory-mapped, so that one image
of a stacked CoNIC ``labels.npy`` or PanNuke ``masks.npy`` is read alone.  An instance's class from a type map
comes from one sort of the (instance, class) pairs of its pixels, the majority rule included; PanNuke's five
class channels are painted one after the other with the overlap rule.  Cost: linear in the pixels of the image
(a sort of its foreground pixels when a type map gives the classes).

numpy is the only import at module level; scipy is imported for ``.mat`` files.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from ._common import _OVERLAP, PathLike, _as_labels, _check_choice, _check_file, _Painter, _relabel
from .annotation import NucleiAnnotation

__all__ = ["read_hovernet", "PANNUKE_CLASSES", "CONIC_CLASSES"]

#: PanNuke ``masks.npy`` channels 0..4 (channel 5 is background), as classes 1..5
PANNUKE_CLASSES = {"Neoplastic": 1, "Inflammatory": 2, "Connective": 3, "Dead": 4, "Epithelial": 5}
#: CoNIC type-map values (channel 1 of ``labels.npy``), for reference; not attached by the reader
CONIC_CLASSES = {"Neutrophil": 1, "Epithelial": 2, "Lymphocyte": 3, "Plasma": 4, "Eosinophil": 5, "Connective": 6}
_CLASS_RULES = ("error", "majority")


def _as_int_vector(arr: Any, where: str, what: str) -> np.ndarray:
    a = np.asarray(arr)
    if a.size == 0:
        return np.zeros(0, np.int64)
    if a.ndim > 2 or (a.ndim == 2 and 1 not in a.shape):
        raise ValueError(f"{where}: {what} must be a vector (N,), (N, 1) or (1, N), got shape {a.shape}")
    return _as_labels(a.ravel(), where, what).astype(np.int64)


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
