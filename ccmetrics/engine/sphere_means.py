"""The largest mean of an image over a sphere centred on a lesion voxel (SUVpeak), for the layers above the engine.

The public face of the engine's compiled kernel (``ccmetrics.engine._sphere_kernels``): :func:`sphere_mean_peaks`
gives, for each lesion of a list, the largest mean of the image over the sphere around one of its voxels, the
sphere given as rows along the last axis (offsets (dz, dy) and half-width w, from
``ccmetrics.metrics.pet``), its voxels outside the image left out. The sums are float64 and taken in a fixed
order (each row from its centre outwards, left before right; the rows in the order given, from 0.0), the order
of the numpy code of :func:`ccmetrics.metrics.pet.suv_peak`, so the peaks are those of that code, bit for bit.

numba compiles the kernel on first use (or loads it from its cache): importing this module imports numba, so
callers import it where they need it, not at the top of a module.

Cost: per lesion, the row sums of each width over its bounding box grown by the sphere's reach along the first
two axes (O(box x (2 w + 1))), then one sum per row of the sphere at each voxel (O(V x rows)). The kernel
releases the GIL.

Examples
--------
A cross of 5 pixels (radius 1) around each of the two voxels of a lesion, (1, 1) and (1, 2) of a 3 x 5 image:
the first cross sums 1 + 2 + 8 (its row) + 0 + 0 = 11, the second 2 + 8 + 2 + 0 + 0 = 12, so the peak is 12 / 5;
around (1, 0), at the image's border, the cross holds 4 pixels: (1 + 2) / 4:

>>> import numpy as np
>>> image = np.zeros((1, 3, 5))
>>> image[0, 1, :] = [1.0, 2.0, 8.0, 2.0, 1.0]
>>> rows = (np.array([0, 0, 0]), np.array([-1, 0, 1]), np.array([0, 1, 0]))  # (dz, dy, w) of the cross
>>> peaks, status = sphere_mean_peaks(image, np.array([6, 7]), np.array([0, 2]), np.array([0]), rows)
>>> peaks.tolist(), status.tolist()
([2.4], [0])
>>> sphere_mean_peaks(image, np.array([5]), np.array([0, 1]), np.array([0]), rows)[0].tolist()
[0.75]
"""

from __future__ import annotations

import numpy as np

from ._sphere_kernels import sphere_mean_peaks as _kernel

__all__ = ["sphere_mean_peaks"]


def sphere_mean_peaks(
    image: np.ndarray,
    flat: np.ndarray,
    starts: np.ndarray,
    lesions: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    box_ratio: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The largest sphere mean over the voxels of each listed lesion, and whether it was measured.

    Parameters
    ----------
    image : ndarray of float32 or float64, 3D
        The image, any memory order (read in place); other real dtypes are read as float64 (a copy).
    flat, starts : ndarray of int64
        The lesions' voxels grouped by lesion: lesion k's sorted C-order flat indices are
        ``flat[starts[k]:starts[k + 1]]``.
    lesions : ndarray of int
        The lesions (0-based) to measure, each with at least one voxel.
    rows : tuple of three ndarray of int
        The sphere as rows along the last axis: offsets dz, dy and half-width w of each (symmetric in x).
    box_ratio : int, optional
        Leave out (status 2) a lesion whose bounding box holds more than this many voxels per lesion voxel
        (``ccmetrics.metrics.pet`` measures those per voxel, with running sums). Default: none left out.

    Returns
    -------
    peaks : ndarray of float64
        Per listed lesion, the largest mean over its voxels' spheres (each mean over the sphere's voxels inside
        the image); meaningful where ``status`` is 0.
    status : ndarray of int8
        Per listed lesion: 0 measured; 1 a sphere sum was NaN or inf (a non-finite value within the sphere of one
        of its voxels); 2 left out (``box_ratio``).
    """
    if image.dtype not in (np.float32, np.float64):
        image = image.astype(np.float64)
    dz, dy, w = (np.asarray(r, dtype=np.int64) for r in rows)
    order = np.argsort(w, kind="stable")  # the rows' sums added width by width, each width's rows in their order
    widths, width_index = np.unique(w[order], return_inverse=True)
    reach = np.array([np.abs(dz).max(), np.abs(dy).max(), w.max()], dtype=np.int64)
    ratio = np.iinfo(np.int64).max // max(int(image.size), 1) if box_ratio is None else int(box_ratio)
    peaks = np.empty(len(lesions))
    status = np.zeros(len(lesions), dtype=np.int8)
    _kernel(
        image,
        np.ascontiguousarray(flat, dtype=np.int64),
        np.ascontiguousarray(starts, dtype=np.int64),
        np.ascontiguousarray(lesions, dtype=np.int64),
        reach,
        np.ascontiguousarray(dz[order]),
        np.ascontiguousarray(dy[order]),
        width_index.astype(np.int64),
        widths.astype(np.int64),
        int((2 * w + 1).sum()),
        ratio,
        peaks,
        status,
    )
    return peaks, status
