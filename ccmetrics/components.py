"""Connected components of the ground truth and their statistics (one labelling pass).

The sites of the generalized Voronoi partition are either the connected
components of a binary mask (``sites="components"``) or the labels of an
instance map (``sites="labels"``).  Both end up as a :class:`Sites` object: the
flat indices of all site voxels grouped by site label 1..K.  Components are
numbered in raster (C) order of their first voxel, the order
``scipy.ndimage.label`` uses, so numbering never depends on the labelling
library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import cc3d
import numpy as np

from ._inputs import as_binary_mask, as_connectivity, as_label_map, as_sites_mode


@dataclass(frozen=True)
class Sites:
    """Voxels of the K Voronoi sites, grouped by site label.

    Attributes
    ----------
    shape : tuple of int
        Image shape.
    flat_index : ndarray of int64
        Flat (C-order) indices of all site voxels, sorted by site label, then index.
    label : ndarray of int32
        Site label (1..K) of each entry of ``flat_index`` (non-decreasing).
    starts : ndarray of int64, shape (K + 1,)
        Voxels of site k are ``flat_index[starts[k - 1]:starts[k]]``.
    source_label : ndarray
        For ``sites="labels"``, the original label value of each site; for
        components, simply 1..K.
    """

    shape: Tuple[int, ...]
    flat_index: np.ndarray
    label: np.ndarray
    starts: np.ndarray
    source_label: np.ndarray

    @property
    def n(self) -> int:
        """Number of sites K."""
        return len(self.starts) - 1

    @property
    def volumes(self) -> np.ndarray:
        """Voxel count of each site (length K)."""
        return np.diff(self.starts)

    def label_map(self, flat: bool = False) -> np.ndarray:
        """The sites as an int32 label map: site label 1..K at site voxels, 0 elsewhere.

        ``flat=True`` gives the C-order flat array (what flat indices address). The
        zeros come from ``calloc``, so only the pages under the sites are written.

        >>> s = find_sites(np.array([[1, 0, 1], [0, 0, 1]], bool))
        >>> s.label_map().tolist()
        [[1, 0, 2], [0, 0, 2]]
        """
        out = np.zeros(int(np.prod(self.shape)), dtype=np.int32)
        out[self.flat_index] = self.label
        return out if flat else out.reshape(self.shape)

    def coords(self) -> np.ndarray:
        """Voxel coordinates of all site voxels, shape (N, ndim), int64."""
        return np.stack(np.unravel_index(self.flat_index, self.shape), axis=1)


def _group(shape, flat_index: np.ndarray, label: np.ndarray, source_label: np.ndarray) -> Sites:
    order = np.argsort(label, kind="stable")
    label = label[order].astype(np.int32, copy=False)
    counts = np.bincount(label, minlength=len(source_label) + 1)[1:]
    starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return Sites(tuple(shape), flat_index[order], label, starts, source_label)


_PAD_BELOW = 1 << 20  # arrays up to this many voxels are always padded before cc3d (a cheap copy)


def cc3d_label(mask: np.ndarray, connectivity: int) -> Tuple[np.ndarray, int]:
    """``cc3d.connected_components`` on a boolean array, with a guard for a cc3d bug.

    cc3d 4.1 fails ("maximum length exception") on some small, sparse arrays,
    e.g. ``[1, 0, 1]`` of shape (3, 1, 1) or the 8 corners of a 3x3x3 cube at
    26-connectivity.  A one-voxel background border avoids it and changes no
    component: small arrays are always padded, large ones only on failure.
    """
    def padded() -> Tuple[np.ndarray, int]:
        labels, n = cc3d.connected_components(np.pad(mask, 1), connectivity=connectivity, return_N=True,
                                              binary_image=True)
        return labels[tuple(slice(1, 1 + size) for size in mask.shape)], n

    if mask.size <= _PAD_BELOW:
        return padded()
    try:
        return cc3d.connected_components(mask, connectivity=connectivity, return_N=True, binary_image=True)
    except RuntimeError:  # pragma: no cover (not seen on large arrays)
        return padded()


def _component_sites(mask: np.ndarray, connectivity: int) -> Sites:
    flat = np.flatnonzero(mask)
    if flat.size == 0:
        return _group(mask.shape, flat.astype(np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64))
    coords = np.unravel_index(flat, mask.shape)
    lo = [int(c.min()) for c in coords]
    hi = [int(c.max()) + 1 for c in coords]
    crop = mask[tuple(slice(a, b) for a, b in zip(lo, hi))]
    labelled, n = cc3d_label(crop, connectivity)
    raw = labelled[tuple(c - a for c, a in zip(coords, lo))]
    # renumber in raster order of the first voxel (flat is sorted, so first occurrence = first voxel)
    _, first = np.unique(raw, return_index=True)
    renumber = np.zeros(n + 1, dtype=np.int32)
    renumber[raw[np.sort(first)]] = np.arange(1, n + 1, dtype=np.int32)
    return _group(mask.shape, flat.astype(np.int64), renumber[raw], np.arange(1, n + 1))


def _label_sites(label_map: np.ndarray) -> Sites:
    flat = np.flatnonzero(label_map)
    values = label_map.ravel()[flat]
    source, inverse = np.unique(values, return_inverse=True)
    return _group(label_map.shape, flat.astype(np.int64), (inverse + 1).astype(np.int32), source)


def find_sites(gt: Any, sites: str = "components", connectivity: Optional[int] = None) -> Sites:
    """Validate ``gt`` and return its Voronoi sites.

    Parameters
    ----------
    gt : array_like or torch.Tensor
        Binary mask (``sites="components"``) or instance label map
        (``sites="labels"``), 2D or 3D.
    sites : {"components", "labels"}
        Connected components of the foreground, or one site per label value
        (touching instances stay separate; label values are sorted and
        renumbered 1..K, see ``Sites.source_label``).
    connectivity : int, optional
        For components: 26 (default), 18 or 6 in 3D; 8 (default) or 4 in 2D.
    """
    mode = as_sites_mode(sites)
    if mode == "labels":
        label_map = as_label_map(gt, "gt")
        as_connectivity(connectivity, label_map.ndim)  # validated, unused: labels define the sites
        return _label_sites(label_map)
    mask = as_binary_mask(gt, "gt")
    return _component_sites(mask, as_connectivity(connectivity, mask.ndim))


class ComponentCache:
    """Connected components of one validated boolean mask, computed once per connectivity.

    Lets several metrics of one case share the labelling work.
    """

    def __init__(self, mask: np.ndarray, known: Optional[Sites] = None, connectivity: Optional[int] = None):
        self.mask = mask
        self._sites: dict = {}
        if known is not None:  # components already found for this connectivity
            self._sites[as_connectivity(connectivity, mask.ndim)] = known

    def __call__(self, connectivity: Optional[int] = None) -> Sites:
        conn = as_connectivity(connectivity, self.mask.ndim)
        if conn not in self._sites:
            self._sites[conn] = _component_sites(self.mask, conn)
        return self._sites[conn]


def label_components(mask: Any, connectivity: Optional[int] = None) -> Tuple[np.ndarray, int]:
    """Label the connected components of a binary mask.

    Parameters
    ----------
    mask : array_like or torch.Tensor
        Binary 2D or 3D mask (bool, 0/1 integers or 0.0/1.0 floats).
    connectivity : int, optional
        26 (default), 18 or 6 in 3D; 8 (default) or 4 in 2D.

    Returns
    -------
    labels : ndarray of int32
        0 for background, 1..n for the components, numbered in raster (C) order
        of their first voxel.
    n : int
        Number of components.

    Examples
    --------
    >>> import numpy as np
    >>> from ccmetrics import label_components
    >>> mask = np.array([[1, 1, 0, 0],
    ...                  [0, 0, 0, 1],
    ...                  [1, 0, 0, 1]])
    >>> labels, n = label_components(mask)
    >>> n
    3
    >>> labels
    array([[1, 1, 0, 0],
           [0, 0, 0, 2],
           [3, 0, 0, 2]], dtype=int32)
    """
    found = find_sites(mask, "components", connectivity)
    return found.label_map(), found.n
