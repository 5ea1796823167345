"""What became of each component, as a code: the labels of the outcome maps (``ccmetrics evaluate --write-maps``,
:mod:`ccmetrics.campaign.maps`) and the colours of the report's viewer (:mod:`ccmetrics.report.viewer`), one home
for both.

A GT lesion is *found* or *missed* as the per-component table's ``detected`` says; a predicted component is a true
or a false positive as the per-prediction table's ``outcome`` says. The colours are Okabe and Ito's (bluish green,
orange, sky blue, reddish purple: distinguishable with the common colour-vision deficiencies).

Examples
--------
>>> [(label.value, label.name, hex_colour(label.rgb)) for label in OUTCOME_LABELS][:2]
[(1, 'found_lesion', '#009E73'), (2, 'missed_lesion', '#E69F00')]
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formats.label_maps import Label

__all__ = ["FALSE_POSITIVE", "FOUND", "MISSED", "OUTCOME_LABELS", "TP_OUTSIDE_GT", "hex_colour"]

#: the codes: a found GT lesion, a missed one, a true-positive prediction (its voxels outside the GT), a false one
FOUND, MISSED, TP_OUTSIDE_GT, FALSE_POSITIVE = 1, 2, 3, 4
#: each code's name (one word: 3D Slicer's colour tables), colour and meaning
OUTCOME_LABELS = (
    Label(FOUND, "found_lesion", (0, 158, 115), "found GT lesion (detected)"),
    Label(MISSED, "missed_lesion", (230, 159, 0), "missed GT lesion (not detected)"),
    Label(TP_OUTSIDE_GT, "tp_outside_gt", (86, 180, 233), "true-positive prediction outside the GT"),
    Label(FALSE_POSITIVE, "false_positive", (204, 121, 167), "false-positive prediction"),
)


def hex_colour(rgb: Sequence[int]) -> str:
    """A colour as HTML writes it.

    >>> hex_colour((204, 121, 167))
    '#CC79A7'
    """
    return "#" + "".join(f"{int(c):02X}" for c in rgb)
