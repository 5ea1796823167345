"""QuPath GeoJSON: polygons rasterised (``read_geojson``) and pixel outlines traced back (``write_geojson``).

**Pixel geometry.**  QuPath coordinates are ``(x, y) = (column, row)`` in pixels, pixel ``(row, col)`` is the
unit square ``[col, col + 1] x [row, row + 1]`` and belongs to a polygon when its centre ``(col + 0.5, row +
0.5)`` is inside (even-odd rule per ring, holes subtracted, the parts of a MultiPolygon united).  A centre
exactly on an edge follows the half-open rule of scan-line filling: inside on a left or upper edge, outside on a
right or lower one, so polygons that share an edge never share a pixel.

**Reading.**  Each object is scan-line filled over the bounding box of its exterior only, a band of rows at a
time, each band with about as many crossings as the box has pixels: memory grows with the box and the ring, never
with their product.  Coordinates beyond ``2**53`` pixels are refused naming them.  Objects are painted with the
overlap rule, in feature order.

**Writing.**  The outlines follow the pixel edges exactly, holes included, so that reading the file back gives the
same instance map; the boundary edges are linked by a local rule and the rings ordered by pointer jumping, linear
in the number of boundary pixel edges, vectorised.

numpy is the only import at module level; scipy is imported by the writer.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._common import _OVERLAP, PathLike, _check_choice, _check_file, _Painter, _warn_dropped
from .annotation import NucleiAnnotation

__all__ = ["read_geojson", "write_geojson"]


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
