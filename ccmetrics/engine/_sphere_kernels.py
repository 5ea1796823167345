"""The numba kernel behind :mod:`ccmetrics.engine.sphere_means`: the largest sphere mean around the voxels of a lesion.

For each lesion of a list (its voxels: sorted C-order flat indices, a slice of one grouped voxel list) the kernel
takes the sum of the image over the sphere around each of its voxels, in exactly the float64 operations of the
numpy code it replaces (``ccmetrics.metrics.pet``, the compact-lesion path of SUVpeak), so the values are the same
bit for bit:

* a row sum of half-width w at (z, y, x) is ``v(x)``, then ``+ v(x - 1)``, ``+ v(x + 1)``, ``+ v(x - 2)``,
  ``+ v(x + 2)``, ... up to w, each ``v`` the image's value as float64 (0.0 outside the image);
* a voxel's sum starts at 0.0 and adds the row sums of the sphere's rows in the order given (the rows sorted by
  width, as the numpy code adds them);
* its mean divides the sum by the number of the sphere's voxels inside the image.

The lesion is swept plane by plane along z. The row sums of each width of a plane (its bounding box's rows grown
by the sphere's reach along y, its bounding box's x) are computed from one image row at a time (read as float64
into a small buffer padded with zeros), each width's from the narrower one's; a ring buffer keeps them for the
2 r_z + 1 latest planes (a few hundred kB for a large lesion: cache resident), so that once a plane is in, the
voxels of the lesion plane r_z before it have all their rows: each adds its rows' sums, four neighbouring voxels at
a time (four independent chains, each in the fixed order). Cost per lesion O(box x (2 w_max + 1) + V x rows), box
being its bounding box grown by the reach along z and y: the image is read once, around the lesion only. The loops'
indices are unsigned where they are hot (numba checks a signed index for wrap-around at every access).

A voxel whose sum is not finite (a NaN or inf within its sphere) marks its lesion, whose peak the caller then finds
(and refuses) the way the numpy code does; so does a lesion whose bounding box is sparse (more than a given number
of its voxels per lesion voxel), which the numpy code measures per voxel with running sums (other values, in the
last bits).
"""

from __future__ import annotations

import numba
import numpy as np

from ._launch import KERNEL_OPTIONS, Kernel

__all__ = ["sphere_mean_peaks"]

_SIGNATURE = (
    "void({image}[:, :, :], int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64[::1],"
    " int64[::1], int64, int64, float64[::1], int8[::1])"
)


def _sphere_mean_peaks(
    image, flat, starts, lesions, reach, dz, dy, width_index, widths, full, box_ratio, out, status
):  # pragma: no cover (compiled)
    """out[j]: the largest sphere mean over the voxels of lesion ``lesions[j]``, where status[j] is 0.

    ``flat``/``starts``: the grouped voxel lists (lesion k: ``flat[starts[k]:starts[k + 1]]``, sorted, not empty);
    ``reach``: the sphere's reach along the three axes; ``dz``, ``dy``, ``width_index``: the sphere's rows in the
    order their sums are added, each with the index of its half-width in ``widths`` (the distinct half-widths,
    ascending); ``full``: the sphere's voxel count. status[j]: 0 done; 1 a sum was not finite; 2 not done, the
    lesion's bounding box holding more than ``box_ratio`` voxels per lesion voxel.
    """
    n_z, n_y, n_x = image.shape
    pz, py, px = reach[0], reach[1], reach[2]
    n_rows = len(dz)
    n_widths = len(widths)
    plane = n_y * n_x
    total = np.empty(n_x)  # one run's sphere sums
    shift = np.empty(n_rows, dtype=np.int64)
    # pass 1: each lesion's runs of consecutive voxels along x (z, y, x, length) and its bounding box
    voxels = 0
    for j in range(len(lesions)):
        voxels += starts[lesions[j] + 1] - starts[lesions[j]]
    runs = np.empty((voxels, 4), dtype=np.int64)
    run_starts = np.empty(len(lesions) + 1, dtype=np.int64)  # (not np.zeros: one overload less to compile)
    run_starts[0] = 0
    boxes = np.empty((len(lesions), 6), dtype=np.int64)  # first and last voxel of each bounding box
    largest_ring = 0
    n_runs = 0
    for j in range(len(lesions)):
        k = lesions[j]
        z0, y0, x0 = n_z, n_y, n_x
        z1, y1, x1 = -1, -1, -1
        i, stop = starts[k], starts[k + 1]
        while i < stop:
            f = flat[i]
            z = f // plane  # a division per run, not per voxel
            y = (f - z * plane) // n_x
            x = f - z * plane - y * n_x
            n = 1
            while i + n < stop and flat[i + n] == f + n and x + n < n_x:
                n += 1
            runs[n_runs, 0], runs[n_runs, 1], runs[n_runs, 2], runs[n_runs, 3] = z, y, x, n
            n_runs += 1
            z0, z1 = min(z0, z), max(z1, z)
            y0, y1 = min(y0, y), max(y1, y)
            x0, x1 = min(x0, x), max(x1, x + n - 1)
            i += n
        run_starts[j + 1] = n_runs
        boxes[j, 0], boxes[j, 1], boxes[j, 2], boxes[j, 3], boxes[j, 4], boxes[j, 5] = z0, y0, x0, z1, y1, x1
        if (z1 - z0 + 1) * (y1 - y0 + 1) * (x1 - x0 + 1) > box_ratio * (stop - starts[k]):
            status[j] = 2
            continue
        largest_ring = max(largest_ring, (2 * pz + 1) * (y1 - y0 + 1 + 2 * py) * (x1 - x0 + 1 + 2 * px) * n_widths)
    ring_planes = 2 * pz + 1
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)
    u_rows = np.uint64(n_rows)
    ring_buffer = np.empty(largest_ring)  # one buffer for all lesions
    line = np.empty(n_x + 2 * px)  # one image row around a lesion, float64, 0.0 outside the image
    acc = np.empty(n_x + 2 * px)  # its row sums
    # pass 2: each compact lesion, plane by plane along z: the row sums of each width of the plane (the rows of
    # its bounding box grown by the reach), kept for the 2 pz + 1 latest planes, then the voxels of the lesion's
    # plane whose spheres they complete
    for j in range(len(lesions)):
        if status[j] == 2:
            continue
        z0, y0, x0, z1, y1, x1 = boxes[j, 0], boxes[j, 1], boxes[j, 2], boxes[j, 3], boxes[j, 4], boxes[j, 5]
        depth = z1 - z0 + 1 + 2 * pz
        height = y1 - y0 + 1 + 2 * py
        length = x1 - x0 + 1
        wide = length + 2 * px
        layer = ring_planes * height * wide  # the ring of one width: ring[(wi * ring_planes + slot) * ...]
        ring = ring_buffer
        peak = -np.inf
        finite = True
        near_z = z0 < pz or z1 + pz >= n_z
        near_y = y0 < py or y1 + py >= n_y
        near_x = x0 < px or x1 + px >= n_x
        u, u_stop = run_starts[j], run_starts[j + 1]
        for a in range(depth):
            z = z0 - pz + a
            slot = a % ring_planes
            for b in range(height):
                y = y0 - py + b
                at = (slot * height + b) * wide
                if z < 0 or z >= n_z or y < 0 or y >= n_y:
                    for wi in range(n_widths):
                        for c in range(px, px + length):
                            ring[wi * layer + at + c] = 0.0
                    continue
                # (unsigned loop indices: numba checks a signed index for wrap-around at every access)
                for e in range(np.uint64(wide)):
                    line[e] = 0.0
                first_x, stop_x = max(0, x0 - px), min(x1 + px + 1, n_x)
                source_row = image[z, y, first_x:stop_x]
                target_row = line[first_x - (x0 - px) : stop_x - (x0 - px)]
                for e in range(np.uint64(stop_x - first_x)):
                    target_row[e] = source_row[e]
                n_c = np.uint64(length)
                centre = line[px : px + length]
                for c in range(n_c):
                    acc[c] = centre[c]
                d = 1
                for wi in range(n_widths):
                    while d <= widths[wi]:
                        left = line[px - d : px - d + length]
                        for c in range(n_c):
                            acc[c] = acc[c] + left[c]
                        right = line[px + d : px + d + length]
                        for c in range(n_c):
                            acc[c] = acc[c] + right[c]
                        d += 1
                    into = ring[wi * layer + at + px : wi * layer + at + px + length]
                    for c in range(n_c):
                        into[c] = acc[c]
            if a < 2 * pz:
                continue
            zl = z0 + a - 2 * pz  # the lesion's plane: the planes of its spheres are in the ring
            for r in range(n_rows):  # each row's place in the ring, relative to a voxel's
                slot = (a - pz + dz[r]) % ring_planes
                shift[r] = ((width_index[r] * ring_planes + slot) * height + dy[r]) * wide
            while u < u_stop and runs[u, 0] == zl:
                y, x, n = runs[u, 1], runs[u, 2], runs[u, 3]
                at = (y - y0 + py) * wide + (x - x0 + px)
                q = 0
                while q + 4 <= n:  # four voxels at a time: four independent chains
                    t0 = t1 = t2 = t3 = 0.0
                    for r in range(u_rows):
                        source = np.uint64(at + shift[r] + q)
                        t0 += ring[source]
                        t1 += ring[source + one]
                        t2 += ring[source + two]
                        t3 += ring[source + three]
                    total[q], total[q + 1], total[q + 2], total[q + 3] = t0, t1, t2, t3
                    q += 4
                while q < n:
                    t0 = 0.0
                    for r in range(u_rows):
                        t0 += ring[np.uint64(at + shift[r] + q)]
                    total[q] = t0
                    q += 1
                edge_zy = (near_z and (zl < pz or zl >= n_z - pz)) or (near_y and (y < py or y >= n_y - py))
                for q in range(n):
                    xq = x + q
                    count = full
                    if edge_zy or (near_x and (xq < px or xq >= n_x - px)):
                        count = 0
                        for r in range(n_rows):
                            zz, yy = zl + dz[r], y + dy[r]
                            if zz >= 0 and zz < n_z and yy >= 0 and yy < n_y:
                                w = widths[width_index[r]]
                                count += min(xq + w, n_x - 1) - max(xq - w, 0) + 1
                    if not np.isfinite(total[q]):
                        finite = False
                    mean = total[q] / count
                    if mean > peak:
                        peak = mean
                u += 1
        out[j] = peak
        status[j] = 0 if finite else 1


def _compiled(image: str) -> Kernel:
    """The kernel for images of one dtype: its own dispatcher (numba's cache holds both in one index)."""
    dispatcher = numba.njit(**KERNEL_OPTIONS)(_sphere_mean_peaks)
    return Kernel(dispatcher, _SIGNATURE.format(image=image), variant=image, read_only=(0,))  # the scan: only read


_PEAKS = {np.dtype(np.float32): _compiled("float32"), np.dtype(np.float64): _compiled("float64")}


def sphere_mean_peaks(image, *args) -> None:
    """The kernel for ``image``'s dtype (float32 or float64) on the arguments of :func:`_sphere_mean_peaks`."""
    _PEAKS[image.dtype](image, *args)
