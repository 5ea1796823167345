"""Turning user input into validated numpy arrays, spacings and connectivities.

Every public function of ccmetrics passes its arguments through here, so that
bad input fails in one place with one kind of message: a ``ValueError`` (or
``TypeError`` for an unsupported type) that names the argument and the
problem.  Nothing here imports torch: tensors are recognised by duck typing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: largest voxel size accepted (mm), and its inverse the smallest: beyond, distances overflow or underflow
MAX_SPACING = 1e6
#: connectivities accepted per number of spatial dimensions, default first
CONNECTIVITIES = {2: (8, 4), 3: (26, 18, 6)}


class NotBinaryError(ValueError):
    """A mask that holds an integer label other than 0 and 1 (``value``): a label map given where a binary mask
    is expected. ``name`` is the argument's name; callers that know the user's terms (a data set, the command
    line) catch it to say how to evaluate the labels there."""

    def __init__(self, message: str, name: str, value: int) -> None:
        super().__init__(message)
        self.name, self.value = name, value


def to_numpy(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a numpy array (torch tensors are detached and moved to the CPU)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        # torch.Tensor or monai MetaTensor, recognised without importing torch
        t = x.detach().cpu()
        if hasattr(t, "as_tensor"):  # MetaTensor -> plain tensor
            t = t.as_tensor()
        if str(t.dtype) in ("torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2"):
            t = t.float()  # no numpy equivalent; 0/1 and integers are exact in float32
        return t.numpy()
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    raise TypeError(f"{name} must be a numpy array or a torch tensor, got {type(x).__name__}")


#: a non-C-contiguous array with at most this share of non-zero voxels is made C-contiguous by
#: scattering its non-zero voxels (``c_contiguous``); denser ones are copied whole
SPARSE_COPY_FRACTION = 1 / 16


def c_contiguous(arr: np.ndarray) -> np.ndarray:
    """Return ``arr`` as a C-contiguous array with the same values (``arr`` itself when it already is).

    Images read from NIfTI files are Fortran-ordered, and numpy's transposing copy of a
    400 x 400 x 300 mask takes about 0.1 s, as long as the rest of a case's evaluation.
    Masks are mostly background, so a Fortran-ordered array is scanned in its own memory
    order instead (``arr.T`` is C-contiguous; numpy finds the non-zero entries of a boolean
    array an order of magnitude faster than of any other dtype), and its non-zero voxels are
    written into a zeroed C-ordered array: about 0.02 s for the same mask. Arrays with more
    than ``SPARSE_COPY_FRACTION`` of their voxels non-zero, and arrays of any other layout,
    get numpy's copy. The result equals ``np.ascontiguousarray(arr)`` element for element.

    Examples
    --------
    >>> a = np.asfortranarray(np.eye(4, dtype=np.uint8))
    >>> c = c_contiguous(a)
    >>> bool(c.flags.c_contiguous), bool((c == a).all())
    (True, True)
    """
    if arr.flags.c_contiguous:
        return arr
    if arr.ndim < 2 or not arr.flags.f_contiguous or arr.size == 0:
        return np.ascontiguousarray(arr)
    flipped = arr.T  # C-contiguous view: the same memory with the axes reversed
    nonzero = flipped.view(bool) if arr.dtype == bool else flipped != 0
    count = int(np.count_nonzero(nonzero))
    if count > arr.size * SPARSE_COPY_FRACTION:
        return np.ascontiguousarray(arr)
    flat = np.flatnonzero(nonzero)  # raster order of the flipped axes: the Fortran-order indices of arr
    return scatter_c_order(flat, flipped.reshape(-1)[flat], arr.shape, arr.dtype)


def scatter_c_order(where: np.ndarray, values: np.ndarray, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A zeroed C-ordered array of ``shape`` and ``dtype`` holding ``values`` at the Fortran-order flat indices
    ``where``: the non-zero voxels of a Fortran-ordered array, found in its own memory order, written in C order
    (:func:`c_contiguous`; ``ccmetrics.formats.io`` for a gzipped NIfTI file read piece by piece).

    Examples
    --------
    >>> a = np.asfortranarray(np.arange(6, dtype=np.uint8).reshape(2, 3))
    >>> found = np.flatnonzero(a.T)  # a.T: the same memory, C-contiguous
    >>> scatter_c_order(found, a.T.reshape(-1)[found], a.shape, a.dtype).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    out = np.zeros(shape, dtype=dtype)
    if len(where):
        out.reshape(-1)[np.ravel_multi_index(np.unravel_index(where, shape, order="F"), shape)] = values
    return out


def check_ndim(arr: np.ndarray, name: str) -> None:
    if arr.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be a 2D or 3D image (spatial dimensions only, no batch or channel "
            f"axis), got {arr.ndim} dimensions with shape {arr.shape}"
        )


def as_binary_mask(x: Any, name: str) -> np.ndarray:
    """Validate a binary mask and return it as a C-contiguous boolean array.

    Accepts booleans, any integer dtype holding only 0 and 1, and floats holding
    only 0.0 and 1.0.  Anything else (probabilities, label maps, NaN) raises a
    ``ValueError`` that says what was found.
    """
    arr = to_numpy(x, name)
    check_ndim(arr, name)
    if arr.dtype == bool:
        return c_contiguous(arr)
    if np.issubdtype(arr.dtype, np.integer):
        if arr.size:
            hi = arr.max()
            lo = arr.min() if np.issubdtype(arr.dtype, np.signedinteger) else 0  # one pass for unsigned
            if lo < 0 or hi > 1:
                bad = hi if hi > 1 else lo
                raise NotBinaryError(
                    f"{name} must be a binary mask (0/1), but it holds the value {int(bad)}; "
                    f"for a class label map pass classes=[...] to evaluate, for a GT instance map "
                    f"sites='labels', or pass a mask such as {name} == label",
                    name,
                    int(bad),
                )
        if arr.itemsize == 1:  # 0/1 bytes are valid booleans: viewed, not converted
            return c_contiguous(arr.view(bool))
        return c_contiguous(arr != 0)
    if np.issubdtype(arr.dtype, np.floating):
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN values")
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            raise ValueError(
                f"{name} must be a binary mask, but it holds non-binary values such as "
                f"{float(arr[bad].flat[0]):g}; threshold probabilities first (e.g. {name} > 0.5)"
            )
        return c_contiguous(arr != 0)
    raise ValueError(f"{name} has unsupported dtype {arr.dtype}; use bool, integer or float")


def as_probability_map(x: Any, name: str = "the probability map") -> np.ndarray:
    """A 2D or 3D probability map as float32 (no copy when it is float32 already; bool and integers cast), checked:
    finite, in [0, 1]. Float64 is rounded to float32, as picai_eval does.

    >>> as_probability_map(np.array([[0.5, 1.0]])).dtype
    dtype('float32')
    """
    arr = to_numpy(x, name)
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        arr = arr.astype(np.float32)
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    if arr.ndim not in (2, 3):
        raise ValueError(f"{name} must be 2D or 3D, got shape {arr.shape}")
    arr = arr.astype(np.float32, copy=False)
    lo, hi = float(arr.min(initial=0.0)), float(arr.max(initial=0.0))  # NaN propagates; +-inf are extremes
    if not (np.isfinite(lo) and np.isfinite(hi)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} holds {bad} NaN or infinite values")
    if lo < 0 or hi > 1:
        raise ValueError(
            f"{name} must lie in [0, 1], found values from {lo:g} to {hi:g}: apply the model's sigmoid or softmax first"
        )
    return arr


def as_label_map(x: Any, name: str) -> np.ndarray:
    """Validate an integer label map (0 = background, other values = labels)."""
    arr = to_numpy(x, name)
    check_ndim(arr, name)
    if arr.dtype == bool:
        return np.ascontiguousarray(arr, dtype=np.uint8)
    if np.issubdtype(arr.dtype, np.floating):
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN values")
        if (arr != np.round(arr)).any():
            raise ValueError(f"{name} must hold integer labels, but it holds non-integer values")
        arr = arr.astype(np.int64)
    elif not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} has unsupported dtype {arr.dtype}; use an integer label map")
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative labels, found {arr.min()}")
    return c_contiguous(arr)


def check_same_shape(pred: Any, gt: Any) -> None:
    """Refuse a prediction and a GT (arrays, or anything with a ``shape``) of different shapes."""
    if pred.shape != gt.shape:
        raise ValueError(f"pred and gt must have the same shape, got {pred.shape} and {gt.shape}")


def as_spacing(spacing: Any | None, ndim: int) -> tuple[float, ...] | None:
    """Validate a voxel spacing: ``None``, one positive number, or one per axis."""
    if spacing is None:
        return None
    if isinstance(spacing, (bool, np.bool_)) or (
        isinstance(spacing, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in spacing)
    ):
        raise TypeError(f"spacing must be a number or a sequence of numbers (mm per axis), got {spacing!r}")
    raw = spacing if np.isscalar(spacing) else to_numpy(spacing, "spacing")
    try:
        values = np.atleast_1d(np.asarray(raw, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"spacing must be a number or a sequence of numbers, got {spacing!r}") from None
    if values.ndim != 1:
        raise ValueError(f"spacing must be a number or a sequence of {ndim} numbers, got shape {values.shape}")
    if values.size == 1:
        values = np.repeat(values, ndim)
    if values.size != ndim:
        raise ValueError(f"spacing has {values.size} values but the image has {ndim} dimensions")
    if values.dtype == bool or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"spacing values must be positive and finite, got {tuple(values.tolist())}")
    if np.any(values > MAX_SPACING) or np.any(values < 1.0 / MAX_SPACING):
        raise ValueError(
            f"spacing values must lie between {1 / MAX_SPACING:g} and {MAX_SPACING:g} (mm), got "
            f"{tuple(values.tolist())}; give the voxel size in mm (or none, for voxel units)"
        )
    return tuple(float(v) for v in values)


def as_connectivity(connectivity: int | None, ndim: int) -> int:
    """Validate a connectivity; ``None`` gives 26 in 3D and 8 in 2D."""
    allowed = CONNECTIVITIES[ndim]
    if connectivity is None:
        return allowed[0]
    if connectivity not in allowed:
        raise ValueError(f"connectivity for {ndim}D images must be one of {sorted(allowed)}, got {connectivity}")
    return int(connectivity)


def as_sites_mode(sites: str) -> str:
    if sites not in ("components", "labels"):
        raise ValueError(f"sites must be 'components' or 'labels', got {sites!r}")
    return sites


def as_non_negative(value: Any, name: str) -> float:
    """Validate a finite number >= 0 (a tolerance or a distance)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(out) or out < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return out
