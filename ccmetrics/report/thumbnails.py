"""Thumbnails: the slices of :mod:`ccmetrics.report.geometry` drawn as one small palette PNG.

Without a scan, each panel shows the crop around a component: its Voronoi region white, other regions
light grey, outside the image darker grey, region borders as thin dark lines, the GT filled light blue
with a blue outline and the prediction outlined in orange (Okabe–Ito blue ``#0072B2`` and orange
``#E69F00``, distinguishable with the common colour-vision deficiencies). Pixels are square in mm
(``aspect`` from the spacing). Drawn with matplotlib's Figure and Agg canvas (no pyplot), then
quantised to a 16-colour palette: a 3-panel thumbnail of 120 px panels is 2-5 kB.

On a scan (planes with an ``intensity``, one PNG per channel) the panel is the scan in grey through a
:class:`Window`, and only lines are drawn over it, each with a thin dark halo so that it stays readable on
black and on white: the GT outlined in sky blue (``#56B4E9``), the prediction in orange, region borders
thin yellow (``#F0E442``), outside the image purple-grey. The window is chosen per channel by
:func:`choose_window`:

* **CT** (the channel's smallest value is below :data:`CT_MINIMUM`, -500: air is about -1000 HU; or
  asked for with ``"ct"``): the soft-tissue window, level 40 HU, width 400 HU (-160 HU black, 240 HU
  white);
* **anything else** (PET, MR, ...): from 0, or the crop's minimum when that is negative, black, to the
  crop's maximum, white (the crop: the thumbnail's panels of that channel), the scale shown beside the
  row (``0–12.3``);
* a level and width given by the user (``"-600/1500"``, a lung window) override both.

Lines are drawn without anti-aliasing and the PNG keeps a fixed palette of 248 greys and these
colours: 3-10 kB per channel.
"""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .geometry import PlaneView, ThumbnailGeometry, boundary_segments

__all__ = [
    "CT_MINIMUM",
    "CT_PRESETS",
    "LEGEND",
    "LEGEND_ON_IMAGE",
    "SOFT_TISSUE",
    "Renderer",
    "Window",
    "asked_window",
    "background",
    "caption",
    "channel_kind",
    "choose_window",
    "data_uri",
    "image_background",
    "number_text",
    "parse_window",
    "read_window",
    "render",
    "window_for",
    "window_specs",
    "window_values",
]

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

GT_ON_IMAGE = "#56B4E9"  # Okabe-Ito sky blue: bright on a dark scan, the halo keeps it on a bright one
BORDER_ON_IMAGE = "#F0E442"  # Okabe-Ito yellow
OUTSIDE_ON_IMAGE = (0.42, 0.36, 0.52)  # purple-grey: no grey value of a scan looks like it
HALO = (0.0, 0.0, 0.0, 0.6)

#: what the page's legend says for each colour of a thumbnail drawn on a scan
LEGEND_ON_IMAGE = (
    ("line", None, GT_ON_IMAGE, "ground truth (GT) lesion: sky-blue outline"),
    ("line", None, PRED_COLOR, "prediction: orange outline"),
    ("thin", None, BORDER_ON_IMAGE, "border between Voronoi regions"),
    ("fill", "#6B5C85", "#6B5C85", "purple-grey: outside the image"),
)

#: a channel whose smallest value is below this (HU) is taken for a CT: air is about -1000 HU
CT_MINIMUM = -500.0
#: the soft-tissue window of a CT: level and width in HU
SOFT_TISSUE = (40.0, 400.0)

#: the CT windows that have a name: level and width in HU
CT_PRESETS = {"soft": SOFT_TISSUE, "lung": (-600.0, 1500.0), "bone": (400.0, 1800.0), "brain": (40.0, 80.0)}

#: a window as the user gives it: ``"auto"``, ``"ct"``, ``"range"`` or (level, width)
WindowSpec = Union[str, tuple[float, float]]


def window_values(values: Any, low: float, high: float) -> np.ndarray:
    """Grey levels in [0, 1]: ``low`` and below black (0), ``high`` and above white (1), linear between; NaN stays NaN.

    Examples
    --------
    The CT soft-tissue window (level 40, width 400: -160 to 240 HU):

    >>> window_values([-1000, -160, 40, 240, 1000], -160, 240).tolist()
    [0.0, 0.0, 0.5, 1.0, 1.0]
    """
    if not high > low:
        raise ValueError(f"a window needs high > low, got {low} and {high}")
    return np.clip((np.asarray(values, dtype=np.float64) - low) / (high - low), 0.0, 1.0)


def number_text(v: float) -> str:
    """A scale end as shown: 3 significant digits, whole numbers from 1000 on, a minus sign.

    >>> number_text(12.345), number_text(0.0), number_text(-160.0), number_text(25412.6), number_text(0.01234)
    ('12.3', '0', '−160', '25413', '0.0123')
    """
    text = f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return text.replace("-", "−")


@dataclass(frozen=True)
class Window:
    """How a channel's values become grey levels: ``low`` black, ``high`` white.

    Attributes
    ----------
    low, high : float
    kind : str
        ``"ct"`` (the soft-tissue window), ``"level"`` (a level and width the user gave) or ``"range"``
        (from 0, or the crop's minimum, to the crop's maximum).

    Examples
    --------
    >>> w = Window.from_level(40, 400, "ct")
    >>> (w.low, w.high), w.text, w([-160, 40, 240]).tolist()
    ((-160.0, 240.0), 'L 40 W 400 HU', [0.0, 0.5, 1.0])
    >>> Window(0.0, 12.34, "range").text
    '0–12.3'
    """

    low: float
    high: float
    kind: str

    @classmethod
    def from_level(cls, level: float, width: float, kind: str = "level") -> Window:
        """The window of a level (its centre) and a width."""
        if not width > 0:
            raise ValueError(f"a window's width must be positive, got {width}")
        return cls(float(level) - float(width) / 2, float(level) + float(width) / 2, kind)

    @property
    def level(self) -> float:
        return (self.low + self.high) / 2

    @property
    def width(self) -> float:
        return self.high - self.low

    def __call__(self, values: Any) -> np.ndarray:
        """Grey levels of ``values`` (:func:`window_values`)."""
        return window_values(values, self.low, self.high)

    @property
    def text(self) -> str:
        """The scale as the page shows it: ``"L 40 W 400 HU"`` for a CT, ``"0–12.3"`` for a range."""
        if self.kind == "range":
            return f"{number_text(self.low)}–{number_text(self.high)}"
        return f"L {number_text(self.level)} W {number_text(self.width)}" + (" HU" if self.kind == "ct" else "")


def parse_window(text: WindowSpec) -> WindowSpec:
    """A window as given on the command line: ``auto``, ``ct``, ``range``, ``LEVEL/WIDTH`` or ``LOW:HIGH`` (a PET's
    ``0:10``); the CT presets' names are read by :func:`read_window`.

    Examples
    --------
    >>> parse_window("CT"), parse_window("-600/1500"), parse_window((40, 400)), parse_window("0:10")
    ('ct', (-600.0, 1500.0), (40.0, 400.0), (5.0, 10.0))
    """
    if isinstance(text, str):
        word = text.strip().lower()
        if word in ("auto", "ct", "range"):
            return word
        number = r"\s*([-+]?[\d.]+(?:e[-+]?\d+)?)\s*"
        ends = re.fullmatch(number + ":" + number, word)
        if ends is not None:
            low, high = float(ends[1]), float(ends[2])
            if not (math.isfinite(low) and math.isfinite(high) and high > low):
                raise ValueError(f"window {text!r}: LOW:HIGH needs two numbers, HIGH above LOW, such as 0:10")
            return ((low + high) / 2, high - low)
        match = re.fullmatch(number + "[/,]" + number, word)
        if match is None:
            raise ValueError(
                f"window {text!r}: expected auto, ct (level 40, width 400 HU), a CT preset "
                f"({', '.join(CT_PRESETS)}: ct=lung), range (0 to the crop's maximum), LEVEL/WIDTH such as "
                "-600/1500 or LOW:HIGH such as 0:10"
            )
        level, width = float(match[1]), float(match[2])
    else:
        level, width = (float(v) for v in text)
    if not (math.isfinite(level) and width > 0 and math.isfinite(width)):
        raise ValueError(f"window {text!r}: the level must be a number and the width positive")
    return (level, width)


def read_window(text: WindowSpec) -> WindowSpec:
    """:func:`parse_window`, and a CT preset by its name (:data:`CT_PRESETS`: ``soft`` is ``ct``, ``lung``,
    ``bone``, ``brain``).

    >>> read_window("soft"), read_window("Lung"), read_window("0:10")
    ('ct', (-600.0, 1500.0), (5.0, 10.0))
    """
    if isinstance(text, str) and text.strip().lower() in CT_PRESETS:
        preset = CT_PRESETS[text.strip().lower()]
        return "ct" if preset == SOFT_TISSUE else preset
    return parse_window(text)


def channel_kind(label: str, minimum: float) -> str:
    """``"pet"`` or ``"ct"``: by the channel's name (a word PET or PT, or CT), else by its smallest value (air in
    a CT, below :data:`CT_MINIMUM`).

    >>> channel_kind("FDG-PET", -5.0), channel_kind("CT", 0.0), channel_kind("0001", 0.0), channel_kind("0000", -1024)
    ('pet', 'ct', 'pet', 'ct')
    """
    from ..formats.scans import names_channel

    if names_channel(label, "PET"):
        return "pet"
    if names_channel(label, "CT"):
        return "ct"
    return "ct" if minimum < CT_MINIMUM else "pet"


def asked_window(windows: Mapping[str, WindowSpec], label: str, code: str, kind: str) -> WindowSpec:
    """The window asked for one channel (:func:`window_specs`), the one rule of the thumbnails and the viewer: by
    the channel's name (any case), its code (``0001``), its kind (``pet`` or ``ct``, :func:`channel_kind`), else
    ``*``, else ``"auto"``.

    >>> asked = window_specs({"pet": "0:10", "ct": "lung"})
    >>> asked_window(asked, "PT", "0001", "pet"), asked_window(asked, "0000", "0000", "ct")
    ((5.0, 10.0), (-600.0, 1500.0))
    >>> asked_window({"PET": "range"}, "pet", "0001", "pet"), asked_window({}, "PET", "0001", "pet")
    ('range', 'auto')
    """
    lowered = {str(k).lower(): v for k, v in windows.items()}
    for key in (label.lower(), code.lower(), kind):
        if key in lowered:
            return lowered[key]
    return windows.get("*", "auto")


def window_specs(window: WindowSpec | Mapping[str, WindowSpec] | None) -> dict[str, WindowSpec]:
    """The windows asked for, by channel: ``"*"`` for every channel not named.

    ``window`` is one window for every channel, or a mapping of channel (its name or its code such as
    ``"0001"``) to window.

    >>> window_specs("ct"), window_specs({"PET": "range", "*": "40/400"})
    ({'*': 'ct'}, {'PET': 'range', '*': (40.0, 400.0)})
    """
    if window is None:
        return {}
    if isinstance(window, Mapping):
        return {str(k): read_window(v) for k, v in window.items()}
    return {"*": read_window(window)}


def choose_window(values: Any, *, minimum: float | None = None, spec: WindowSpec = "auto") -> Window:
    """The window of one channel of a thumbnail (the rule of the module docstring).

    Parameters
    ----------
    values : array_like
        The channel's values in the crop (every panel of the row; NaN, outside the image, ignored).
    minimum : float, optional
        The smallest value of the whole channel (is it a CT?); default: the crop's.
    spec : str or (level, width)
        ``"auto"`` (CT or range, by ``minimum``), ``"ct"``, ``"range"`` or a level and width.

    Examples
    --------
    >>> crop = np.array([-1000.0, 30.0, 60.0, np.nan])
    >>> choose_window(crop).text                      # air in the crop: a CT
    'L 40 W 400 HU'
    >>> pet = np.array([0.2, 1.5, 12.3, np.nan])
    >>> w = choose_window(pet, minimum=0.0)
    >>> w.text, w(pet).round(3).tolist()[:3]          # 0 black, the crop's maximum white
    ('0–12.3', [0.016, 0.122, 1.0])
    >>> choose_window(np.array([-3.0, 5.0])).text     # a negative minimum starts the scale
    '−3–5'
    >>> choose_window(crop, spec=(-600, 1500)).text
    'L −600 W 1500'
    """
    spec = parse_window(spec)
    if not isinstance(spec, str):
        return Window.from_level(spec[0], spec[1], "level")
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if spec == "auto":
        smallest = minimum if minimum is not None else (float(finite.min()) if finite.size else 0.0)
        spec = "ct" if smallest < CT_MINIMUM else "range"
    if spec == "ct":
        return Window.from_level(*SOFT_TISSUE, "ct")
    low = min(0.0, float(finite.min())) if finite.size else 0.0
    high = float(finite.max()) if finite.size else 1.0
    if not high > low:  # a flat crop: black
        high = low + 1.0
    return Window(low, high, "range")


def window_for(geometry: ThumbnailGeometry, *, minimum: float | None = None, spec: WindowSpec = "auto") -> Window:
    """:func:`choose_window` on the intensity planes of ``geometry`` (one channel)."""
    values = [p.intensity.ravel() for p in geometry.planes if p.intensity is not None]
    if not values:
        raise ValueError("the thumbnail has no scan to window (geometry.with_image first)")
    return choose_window(np.concatenate(values), minimum=minimum, spec=spec)


def background(plane: PlaneView, own_region: int) -> np.ndarray:
    """RGB image ``(n_v, n_h, 3)`` of a plane (ready for ``imshow(origin="lower")``): regions and GT fill."""
    rgb = np.empty(plane.regions.shape + (3,))
    rgb[...] = OTHER_REGION
    rgb[(plane.regions == own_region) | (plane.regions == 0)] = OWN_REGION
    rgb[plane.regions < 0] = OUTSIDE
    rgb[plane.gt] = GT_FILL
    return rgb.transpose(1, 0, 2)


def image_background(plane: PlaneView, window: Window) -> np.ndarray:
    """RGB image ``(n_v, n_h, 3)`` of a plane's scan through ``window`` (outside the image: purple-grey).

    >>> from ccmetrics.report.geometry import PlaneView
    >>> m = np.zeros((2, 1), bool)
    >>> p = PlaneView("image", None, 0, 0, 1, m, m, np.array([[1], [-1]]), 1.0, np.array([[40.0], [np.nan]]))
    >>> image_background(p, Window.from_level(40, 400)).round(2).tolist()
    [[[0.5, 0.5, 0.5], [0.42, 0.36, 0.52]]]
    """
    if plane.intensity is None:
        raise ValueError("the plane has no scan (geometry.with_image first)")
    grey = np.nan_to_num(window(plane.intensity), nan=0.0)
    rgb = np.repeat(grey[..., None], 3, axis=-1)
    rgb[plane.regions < 0] = OUTSIDE_ON_IMAGE
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

    def _draw_plane(self, ax, plane: PlaneView, own_region: int, window: Window | None) -> None:
        from matplotlib.collections import LineCollection

        for artist in list(ax.images) + list(ax.collections):
            artist.remove()
        on_image = window is not None
        shown = background(plane, own_region) if window is None else image_background(plane, window)
        ax.imshow(shown, origin="lower", interpolation="nearest", aspect=plane.aspect)
        inside = np.where(plane.regions < 0, 0, plane.regions)  # no border line along the image's edge
        lines_drawn = (
            (
                (inside, BORDER_ON_IMAGE, 0.75, None),
                (plane.gt, GT_ON_IMAGE, 1.5, 2.7),
                (plane.pred, PRED_COLOR, 1.1, 2.3),
            )
            if on_image
            else (
                (inside, BORDER_COLOR, 0.5, None),
                (plane.gt, GT_COLOR, 1.8, None),
                (plane.pred, PRED_COLOR, 1.1, None),
            )
        )
        halos, strokes = [], []
        for labels, color, width, halo in lines_drawn:
            segments = boundary_segments(labels, plane.regions >= 0 if on_image else None)
            if len(segments):
                lines: Any = segments  # (n, 2, 2) points: what LineCollection takes, whatever its stubs say
                crisp = not on_image  # on a scan: no anti-aliasing, the palette keeps few colours
                strokes.append(
                    LineCollection(lines, colors=color, linewidths=width, capstyle="projecting", antialiaseds=crisp)
                )
                if halo:  # a dark halo under every line: readable on black and on white
                    halos.append(
                        LineCollection(lines, colors=[HALO], linewidths=halo, capstyle="projecting", antialiaseds=crisp)
                    )
        for collection in halos + strokes:
            ax.add_collection(collection)
        n_h, n_v = plane.gt.shape
        ax.set_xlim(-0.5, n_h - 0.5)
        ax.set_ylim(-0.5, n_v - 0.5)

    def render(self, geometry: ThumbnailGeometry, window: Window | None = None) -> bytes:
        """PNG bytes of the planes of ``geometry``, side by side.

        Planes without a scan: the empty background, a 16-colour palette image. Planes with one
        (:func:`ccmetrics.report.geometry.with_image`): the scan through ``window`` (default:
        :func:`window_for`), a 64-colour palette image.
        """
        from PIL import Image as PILImage

        if len(geometry.planes) != len(self.axes):
            raise ValueError(f"this renderer draws {len(self.axes)} panels, got {len(geometry.planes)} planes")
        on_image = all(p.intensity is not None for p in geometry.planes)
        if on_image and window is None:
            window = window_for(geometry)
        for ax, plane in zip(self.axes, geometry.planes):
            self._draw_plane(ax, plane, geometry.own_region, window if on_image else None)
        self.canvas.draw()
        rgb = np.ascontiguousarray(np.asarray(self.canvas.buffer_rgba())[..., :3])
        image = PILImage.fromarray(rgb)
        if on_image:  # crisp lines of a few colours over greys: a fixed palette keeps the grey levels
            image = image.quantize(palette=_on_image_palette(), dither=PILImage.Dither.NONE)
        else:
            image = image.quantize(colors=16, dither=PILImage.Dither.NONE)
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
        return out.getvalue()


def _rgb(color: Any) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return tuple(float(v) for v in to_rgb(color))  # type: ignore[return-value]


def _on_image_palette():
    """A PIL palette image: the colours drawn on a scan, each under the halo too, and greys for the rest."""
    from PIL import Image as PILImage

    colors = [_rgb(c) for c in (GT_ON_IMAGE, PRED_COLOR, BORDER_ON_IMAGE, OUTSIDE_ON_IMAGE)]
    colors += [tuple(v * (1 - HALO[3]) for v in c) for c in colors]  # under another line's halo
    greys = np.linspace(0, 255, 256 - len(colors)).round()
    entries = [(g, g, g) for g in greys] + [tuple(round(255 * v) for v in c) for c in colors]
    palette = PILImage.new("P", (1, 1))
    palette.putpalette([int(v) for entry in entries for v in entry])
    return palette


def render(geometry: ThumbnailGeometry, *, panel_px: int = 120, window: Window | None = None) -> bytes:
    """Draw one thumbnail (see :class:`Renderer`, which draws many faster)."""
    return Renderer(2 if len(geometry.planes) == 1 else 3, panel_px=panel_px).render(geometry, window)


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
