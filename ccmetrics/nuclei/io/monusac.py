"""MoNuSAC-style per-class n-ary masks combined into one instance map: ``read_monusac_masks``.

An n-ary mask is a 2D label image of one class (0 background, one id per nucleus), found as
``<image>/<ClassName>/<mask>`` or ``<image>/<ClassName>.<ext>``, given as a list of files or as a mapping
``{class name: files}``.  ``.npy`` masks are read with numpy, PNG and TIFF with PIL and, for what PIL cannot
decode (float64 TIFF, unusual compression), SimpleITK; PIL's decompression-bomb refusal is final.  Each mask is
relabelled and painted with the overlap rule; ``Ambiguous`` masks form the ignore mask.  Cost: linear in the
pixels of every mask file, one mask in memory beside the instance map.

numpy is the only import at module level; PIL and SimpleITK are imported for mask images.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ._common import _OVERLAP, _as_labels, _check_choice, _check_file, _Painter, _relabel
from .annotation import NucleiAnnotation

__all__ = ["read_monusac_masks", "MONUSAC_CLASSES"]

#: MoNuSAC classes, the default of :func:`read_monusac_masks`
MONUSAC_CLASSES = {"Epithelial": 1, "Lymphocyte": 2, "Macrophage": 3, "Neutrophil": 4}

MASK_EXTENSIONS = (".npy", ".png", ".tif", ".tiff")


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
