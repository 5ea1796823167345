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

One module per format family, the names above re-exported here:

* :mod:`ccmetrics.nuclei.io.annotation` -- :class:`NucleiAnnotation`;
* :mod:`ccmetrics.nuclei.io.hovernet` -- :func:`read_hovernet`, :data:`PANNUKE_CLASSES`, :data:`CONIC_CLASSES`;
* :mod:`ccmetrics.nuclei.io.monusac` -- :func:`read_monusac_masks`, :data:`MONUSAC_CLASSES`;
* :mod:`ccmetrics.nuclei.io.geojson` -- :func:`read_geojson` with its rasteriser, :func:`write_geojson`;
* ``ccmetrics.nuclei.io._common`` -- the checks, relabelling and overlap painter the readers share.

numpy is the only import at module level; scipy, PIL and SimpleITK are imported by the
readers that need them.
"""

from __future__ import annotations

from . import hovernet, monusac
from ._common import PathLike as PathLike
from .annotation import NucleiAnnotation
from .geojson import _ring_mask as _ring_mask
from .geojson import read_geojson, write_geojson
from .hovernet import read_hovernet
from .monusac import MASK_EXTENSIONS as MASK_EXTENSIONS
from .monusac import read_monusac_masks

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

# the tables, assigned here (not only imported) so that the reference documents them on this page too
#: PanNuke ``masks.npy`` channels 0..4 (channel 5 is background), as classes 1..5
PANNUKE_CLASSES = hovernet.PANNUKE_CLASSES
#: CoNIC type-map values (channel 1 of ``labels.npy``), for reference; not attached by the reader
CONIC_CLASSES = hovernet.CONIC_CLASSES
#: MoNuSAC classes, the default of :func:`read_monusac_masks`
MONUSAC_CLASSES = monusac.MONUSAC_CLASSES
