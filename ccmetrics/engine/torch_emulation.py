"""torch's float32 arithmetic emulated in numpy, bit for bit: ``torch.lerp`` and ``torch.quantile``.

MONAI reduces surface distances with ``torch.quantile`` on float32 tensors; ccmetrics computes the
same numbers without torch. torch forms the quantile's rank in float32, takes the floor and ceiling
neighbours of the sorted values and interpolates with ``torch.lerp``, whose CPU kernel either
contracts ``a + w * (b - a)`` into one fused multiply-add (FMA, rounded once: the AVX2/AVX512 and
ARM64 kernels) or rounds the product and the sum separately (the baseline x86-64 kernel). Which one
torch picks decides the last float32 bit of about one HD95 in several thousand, so the emulation
follows the kernel torch would pick on this machine (:func:`lerp_uses_fma`), and an FMA is emulated
exactly (``_fma32``: the float64 product is exact, TwoSum corrects the halfway cases).

Cost: a sort of the values (the quantile's), then a few vectorised float32/float64 operations per
value; nothing here imports torch.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys

import numpy as np

__all__ = ["lerp_uses_fma", "quantile_rank", "torch_lerp", "torch_quantile"]


def lerp_uses_fma() -> bool:
    """Whether ``torch.lerp`` on this CPU rounds as one fused multiply-add (FMA), as torch's dispatch decides.

    torch compiles its CPU kernels once per instruction set and picks one at run time: the AVX2 and
    AVX512 kernels (x86-64 CPUs with AVX2 and FMA) contract ``a + w * (b - a)`` into one FMA, rounded
    once; the baseline x86-64 kernel (``ATEN_CPU_CAPABILITY=default``, or a CPU without AVX2) rounds the
    product and the sum separately. The choice follows torch where it is imported already, otherwise
    ``ATEN_CPU_CAPABILITY`` and the CPU's features as numpy reports them, without importing torch.
    On ARM64, where FMA is baseline, FMA is assumed (not tested here).
    """
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "backends"):
        capability = torch.backends.cpu.get_cpu_capability().upper()
        if capability in ("AVX2", "AVX512"):
            return True
        if capability in ("DEFAULT", "NO AVX"):
            return platform.machine().lower() in ("aarch64", "arm64")
    requested = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if platform.machine().lower() in ("aarch64", "arm64"):
        return True
    if requested == "default":
        return False
    try:
        umath = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # numpy < 2
        umath = importlib.import_module("numpy.core._multiarray_umath")
    features = umath.__cpu_features__
    return bool(features.get("AVX2") and features.get("FMA3"))


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` of float32 arrays rounded once to float32 (an exact emulation of ``fmaf``).

    The product of two float32 is exact in float64; the float64 sum is corrected with its exact error
    (TwoSum), which decides the rounding where the float64 sum lies exactly halfway between two float32.
    """
    a64, b64, c64 = (np.asarray(x, np.float64) for x in (a, b, c))
    p = a64 * b64
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c64
        t = s - p
        err = (p - (s - t)) + (c64 - t)
        r = s.astype(np.float32)
        up, down = np.nextafter(r, np.float32(np.inf)), np.nextafter(r, np.float32(-np.inf))
        r64 = r.astype(np.float64)
        r = np.where((s == (r64 + up.astype(np.float64)) / 2) & (err > 0), up, r)
        r = np.where((s == (r64 + down.astype(np.float64)) / 2) & (err < 0), down, r)
    return r.astype(np.float32)


def torch_lerp(start: np.ndarray, end: np.ndarray, weight: np.ndarray, fma: bool | None = None) -> np.ndarray:
    """``torch.lerp(start, end, weight)`` on float32 arrays, bit for bit.

    torch's formula: ``start + weight * (end - start)`` for ``weight < 0.5``, else
    ``end - (end - start) * (1 - weight)``, each either as one FMA or rounded twice
    (:func:`lerp_uses_fma`; pass ``fma`` to choose).
    """
    start, end, weight = (np.asarray(x, np.float32) for x in (start, end, weight))
    fma = lerp_uses_fma() if fma is None else fma
    with np.errstate(invalid="ignore", over="ignore"):
        diff = (end - start).astype(np.float32)
        rest = (np.float32(1) - weight).astype(np.float32)
        small = weight < np.float32(0.5)
        if fma:
            out = np.where(small, _fma32(weight, diff, start), _fma32(-diff, rest, end))
            plain = np.where(small, start + weight * diff, end - diff * rest)
            out = np.where(np.isfinite(out) | ~np.isfinite(plain), out, plain)  # inf operands: as rounded twice
        else:
            out = np.where(small, start + weight * diff, end - diff * rest)
    return out.astype(np.float32)


def torch_quantile(values: np.ndarray, q: float) -> float:
    """Linear-interpolation quantile computed bit for bit as ``torch.quantile`` on float32.

    torch forms the rank in float32, takes floor and ceil neighbours of the
    sorted values and interpolates with ``torch.lerp`` (:func:`torch_lerp`: one
    FMA or two roundings, as torch's CPU dispatch does on this machine).
    Any ``inf`` neighbour pair gives ``nan`` (inf - inf), as in MONAI.

    >>> import math
    >>> v = np.array([1.0] * 8 + [math.sqrt(29)], np.float32)
    >>> torch_quantile(v, 0.95) in (3.631098508834839, 3.6310982704162598)  # with / without FMA
    True
    """
    ordered = np.sort(values.astype(np.float32, copy=False))
    below, above, weight = quantile_rank(np.array([len(ordered)]), q)
    return float(torch_lerp(ordered[below[0]], ordered[above[0]], weight[0]))


def quantile_rank(counts: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torch.quantile's neighbours and weight for sorted lists of ``counts`` values (float32 rank, as torch).

    Returns the positions below and above the rank (int64) and the interpolation weight (float32), for
    :func:`torch_lerp`; one home for :func:`torch_quantile` and its vectorised uses.
    """
    rank = np.float32(q) * (np.asarray(counts) - 1).astype(np.float32)
    below = np.floor(rank).astype(np.int64)
    above = np.ceil(rank).astype(np.int64)
    return below, above, (rank - below.astype(np.float32)).astype(np.float32)
