"""Degradation simulations of the CC-Metrics paper (Jaus et al., AAAI 2025), on its phantoms or any masks.

Start from a perfect prediction (the GT), degrade it step by step and watch global metrics, Panoptic
Quality, Lesion Dice and the CC variants react:

* :mod:`simulations.phantoms`: the paper's phantoms, a synthetic PET/CT-like cohort, real GT folders;
* :mod:`simulations.degrade`: erosion, dilation, shift, dropped components, false positives, on the
  targeted components' bounding boxes;
* :mod:`simulations.run`: scenarios and the runner → tidy tables; medians and quartiles over cases;
* :mod:`simulations.figures`: the paper's Fig. 2-5 as CSV and PNG;
* :mod:`simulations.paper` (drawn by :mod:`simulations.paper_plots`): every panel of Fig. 2 and 3 with the
  protocol of the authors' notebooks beside ccmetrics' definitions, number for number;
* ``python -m simulations {fig2,fig3,fig4,fig5,all,custom,paper} --out DIR``: the command line.

This package imports :mod:`ccmetrics`; ccmetrics never imports it.
"""

from .degrade import Components, add_false_positives, dilate, drop, erode, select, shift
from .phantoms import Case, cohort, lesion_dice_pitfall, paper_spheres, read_cohort, three_balls
from .run import Scenario, SimulationResult, run, summarize

__all__ = [
    "Case",
    "Components",
    "Scenario",
    "SimulationResult",
    "add_false_positives",
    "cohort",
    "dilate",
    "drop",
    "erode",
    "lesion_dice_pitfall",
    "paper_spheres",
    "read_cohort",
    "run",
    "select",
    "shift",
    "summarize",
    "three_balls",
]
