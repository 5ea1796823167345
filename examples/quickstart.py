"""Quick start: CC-Metrics on a toy 2D case with one large and one small lesion.

Run: python examples/quickstart.py
"""

import numpy as np

from ccmetrics import evaluate, voronoi_partition

gt = np.zeros((20, 20), bool)
gt[2:8, 2:8] = True  # a large lesion (36 pixels)
gt[14:16, 14:16] = True  # a small lesion (4 pixels)

pred = np.zeros_like(gt)
pred[2:8, 2:8] = True  # the large lesion is found exactly
pred[17:19, 2:4] = True  # a false positive; the small lesion is missed

result = evaluate(gt=gt, pred=pred, metrics=["dice", "nsd", "hd95"])
print(result.per_component)
print(result.summary())
print("Voronoi regions:\n", voronoi_partition(gt))
