"""Thumbnails: the slices of :mod:`ccmetrics.report.geometry` drawn as one small palette PNG.

Each panel shows the crop around a component: its Voronoi region white, other regions light grey,
outside the image darker grey, region borders as thin dark lines, the GT filled light blue with a
blue outline and the prediction outlined in orange (Okabe–Ito blue ``#0072B2`` and orange
``#E69F00``, distinguishable with the common colour-vision deficiencies). Pixels are square in mm
(``aspect`` from the spacing). Drawn with matplotlib's Figure and Agg canvas (no pyplot), then
quantised to a 16-colour palette: a 3-panel thumbnail of 120 px panels is 2-5 kB.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np

from .geometry import PlaneView, ThumbnailGeometry, boundary_segments

__all__ = ["LEGEND", "Renderer", "background", "caption", "data_uri", "render"]

GT_COLOR = "#0072B2"  # Okabe-Ito blue
PRED_COLOR = "#E69F00"  # Okabe-Ito orange
GT_FILL = (0.78, 0.87, 0.94)
OWN_REGION = (1.0, 1.0, 1.0)
OTHER_REGION = (0.86, 0.86, 0.86)
OUTSIDE = (0.55, 0.55, 0.55)
BORDER_COLOR = "#333333"
FRAME_COLOR = "#777777"

#: what the page's legend says for each colour
LEGEND = (
    ("fill", "#C7DEF0", GT_COLOR, "ground truth (GT) lesion: filled, blue outline"),
    ("line", None, PRED_COLOR, "prediction: orange outline"),
    ("thin", None, BORDER_COLOR, "border between Voronoi regions (each voxel belongs to its nearest GT lesion)"),
    ("fill", "#FFFFFF", "#999999", "white: the region of the lesion shown (the region a false positive falls in)"),
    ("fill", "#DBDBDB", "#999999", "light grey: other lesions' regions"),
    ("fill", "#8C8C8C", "#8C8C8C", "dark grey: outside the image"),
)


def background(plane: PlaneView, own_region: int) -> np.ndarray:
    """RGB image ``(n_v, n_h, 3)`` of a plane (ready for ``imshow(origin="lower")``): regions and GT fill."""
    rgb = np.empty(plane.regions.shape + (3,))
    rgb[...] = OTHER_REGION
    rgb[(plane.regions == own_region) | (plane.regions == 0)] = OWN_REGION
    rgb[plane.regions < 0] = OUTSIDE
    rgb[plane.gt] = GT_FILL
    return rgb.transpose(1, 0, 2)


class Renderer:
    """Draws thumbnails of ``n_planes`` panels on one reused figure (creating axes costs more than drawing).

    Parameters
    ----------
    ndim : int
        2 (one panel) or 3 (axial, coronal, sagittal).
    panel_px : int
        Width and height of one panel in pixels; panels are 4 px apart.
    dpi : int

    Examples
    --------
    >>> from ccmetrics.report.geometry import crop_box, thumbnail_geometry
    >>> gt = np.zeros((20, 20), bool); gt[8:12, 8:12] = True
    >>> g = thumbnail_geometry((10, 10), crop_box((10, 10), (6, 6)), gt, np.roll(gt, 2, 0), gt.astype(int),
    ...                        (1.0, 1.0), own_region=1)
    >>> png = Renderer(2, panel_px=60).render(g)
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """

    def __init__(self, ndim: int, *, panel_px: int = 120, dpi: int = 100):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        n = 3 if ndim == 3 else 1
        width_px = panel_px * n + 4 * (n - 1)
        self.figure = Figure(figsize=(width_px / dpi, panel_px / dpi), dpi=dpi, facecolor="white")
        self.canvas = FigureCanvasAgg(self.figure)
        panel, gap = panel_px / width_px, 4 / width_px
        self.axes = [self.figure.add_axes((i * (panel + gap), 0.0, panel, 1.0)) for i in range(n)]
        for ax in self.axes:
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_color(FRAME_COLOR)
                spine.set_linewidth(0.8)

    def _draw_plane(self, ax, plane: PlaneView, own_region: int) -> None:
        from matplotlib.collections import LineCollection

        for artist in list(ax.images) + list(ax.collections):
            artist.remove()
        ax.imshow(background(plane, own_region), origin="lower", interpolation="nearest", aspect=plane.aspect)
        inside = np.where(plane.regions < 0, 0, plane.regions)  # no border line along the image's edge
        for labels, color, width in (
            (inside, BORDER_COLOR, 0.5),
            (plane.gt, GT_COLOR, 1.8),
            (plane.pred, PRED_COLOR, 1.1),
        ):
            segments = boundary_segments(labels)
            if len(segments):
                lines: Any = segments  # (n, 2, 2) points: what LineCollection takes, whatever its stubs say
                ax.add_collection(LineCollection(lines, colors=color, linewidths=width, capstyle="projecting"))
        n_h, n_v = plane.gt.shape
        ax.set_xlim(-0.5, n_h - 0.5)
        ax.set_ylim(-0.5, n_v - 0.5)

    def render(self, geometry: ThumbnailGeometry) -> bytes:
        """PNG bytes (a 16-colour palette image) of the planes of ``geometry``, side by side."""
        from PIL import Image as PILImage

        if len(geometry.planes) != len(self.axes):
            raise ValueError(f"this renderer draws {len(self.axes)} panels, got {len(geometry.planes)} planes")
        for ax, plane in zip(self.axes, geometry.planes):
            self._draw_plane(ax, plane, geometry.own_region)
        self.canvas.draw()
        rgb = np.ascontiguousarray(np.asarray(self.canvas.buffer_rgba())[..., :3])
        image = PILImage.fromarray(rgb).quantize(colors=16, dither=PILImage.Dither.NONE)
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
        return out.getvalue()


def render(geometry: ThumbnailGeometry, *, panel_px: int = 120) -> bytes:
    """Draw one thumbnail (see :class:`Renderer`, which draws many faster)."""
    return Renderer(2 if len(geometry.planes) == 1 else 3, panel_px=panel_px).render(geometry)


def data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` for an ``<img src>``.

    >>> data_uri(b"abc")
    'data:image/png;base64,YWJj'
    """
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def caption(geometry: ThumbnailGeometry) -> str:
    """One line under a thumbnail: the planes, left to right, and the field of view.

    Examples
    --------
    >>> from ccmetrics.report.geometry import crop_box, thumbnail_geometry
    >>> gt = np.zeros((9, 9, 9), bool)
    >>> g = thumbnail_geometry((4, 4, 4), crop_box((4, 4, 4), (2, 2, 2)), gt, gt, gt.astype(int), (2.0, 2.0, 2.0))
    >>> caption(g)
    'axial k=4 · coronal j=4 · sagittal i=4 · 10 mm across'
    """
    return " · ".join([p.caption for p in geometry.planes] + [f"{geometry.field_of_view_mm:.0f} mm across"])
