"""The detection-rule example of docs/definitions.md: five rules on a one-row image, and the tables they give.

Run: python examples/detection_rules.py
"""

import numpy as np

from ccmetrics import evaluate

gt = np.zeros((1, 20), bool)
gt[0, 0:10] = True  # lesion 1: 10 voxels
gt[0, 12:16] = True  # lesion 2: 4 voxels
pred = np.zeros_like(gt)
pred[0, 0:3] = True  # 3 voxels on lesion 1 ...
pred[0, 5:7] = True  # ... and 2 more in a second component: lesion 1 is split (union: 5 of its 10 voxels)
pred[0, 11:17] = True  # lesion 2 whole and 2 voxels beyond (IoU 4/6)
for rule in ["overlap", "iou:0.5", "dice:0.7", "coverage:0.6", "centroid"]:
    r = evaluate(gt=gt, pred=pred, metrics=["detection"], detection_rule=rule)
    detected, s = r.per_component["detected"].tolist(), r.case_scores
    print(f"{rule:<12} detected {detected}  sensitivity {s['sensitivity']:.2f}  precision {s['precision']:.2f}")
r = evaluate(gt=gt, pred=pred, metrics=["detection"], detection_rule="dice:0.7")
print(r.per_component[["volume", "detected", "n_pred", "split"]])
print(r.per_prediction[["volume", "gt_lesions", "n_gt", "merged", "best_iou", "outcome", "region"]])
