"""CC-Metrics in a MONAI validation loop: a SupervisedEvaluator with CC-Dice as key metric and CC-HD95.

Nothing is trained. A small synthetic data set of 3D lesion cases (voxel
spacing 0.8 x 0.8 x 2 mm, stored in each image's affine) is run through a
"network" that only thresholds its input, and the evaluator reports CC-Dice
(key metric) and CC-HD95 in mm (additional metric). The handlers read the
spacing from the MetaTensor metadata of each prediction.

Run: python examples/monai_validation.py
"""

import numpy as np
import torch
from monai.data import DataLoader, Dataset, MetaTensor
from monai.engines import SupervisedEvaluator
from monai.handlers import from_engine
from monai.transforms import AsDiscreted, Compose

from ccmetrics.monai import CCDiceHandler, CCHausdorffDistance95Handler
from ccmetrics.synthetic import lesion_case

SPACING = (0.8, 0.8, 2.0)  # mm
SHAPE = (48, 48, 24)


class ThresholdNet(torch.nn.Module):
    """Stands in for a trained model: two-channel logits of ``image > 0.5``."""

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return torch.cat([0.5 - image, image - 0.5], dim=1)


def synthetic_cases(n_cases: int = 5, seed: int = 0):
    """``n_cases`` (pred, gt) pairs of boolean 3D masks with a few small lesions each."""
    cases = []
    for i in range(n_cases):
        gt, pred = lesion_case(SHAPE, n_lesions=4, radius_range=(3.0, 7.0), n_false_positives=1, seed=seed + i)
        cases.append((pred, gt))
    return cases


def make_dataset(cases, seed: int = 0):
    """MONAI-style dicts: a noisy image whose threshold is the prediction, and the label map."""
    rng = np.random.default_rng(seed)
    affine = torch.diag(torch.tensor([*SPACING, 1.0], dtype=torch.float64))
    data = []
    for pred, gt in cases:
        image = pred.astype(np.float32) + rng.uniform(-0.2, 0.2, pred.shape).astype(np.float32)
        data.append(
            {
                "image": MetaTensor(torch.from_numpy(image)[None], affine=affine),
                "label": MetaTensor(torch.from_numpy(gt.astype(np.uint8))[None], affine=affine),
            }
        )
    return data


def main(n_cases: int = 5, batch_size: int = 2):
    cases = synthetic_cases(n_cases)
    loader = DataLoader(Dataset(make_dataset(cases)), batch_size=batch_size, num_workers=0)
    to_pred_label = from_engine(["pred", "label"])
    evaluator = SupervisedEvaluator(
        device=torch.device("cpu"),
        val_data_loader=loader,
        network=ThresholdNet(),
        postprocessing=Compose(
            [AsDiscreted(keys="pred", argmax=True, to_onehot=2), AsDiscreted(keys="label", to_onehot=2)]
        ),
        key_val_metric={"val_cc_dice": CCDiceHandler(output_transform=to_pred_label)},
        additional_metrics={"val_cc_hd95": CCHausdorffDistance95Handler(output_transform=to_pred_label)},
    )
    evaluator.run()
    metrics = evaluator.state.metrics
    details = evaluator.state.metric_details  # per-image CC values, one row per image
    print(f"CC-Dice (key metric): {metrics['val_cc_dice']:.4f}")
    print(f"CC-HD95 (mm):         {metrics['val_cc_hd95']:.4f}")
    print("per image:  CC-Dice  CC-HD95 (mm)")
    for i, (dice, hd95) in enumerate(zip(details["val_cc_dice"][:, 0], details["val_cc_hd95"][:, 0])):
        print(f"  case {i}:   {float(dice):.4f}  {float(hd95):8.4f}")
    return metrics, details, cases


if __name__ == "__main__":
    main()
