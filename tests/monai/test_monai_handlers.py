"""ccmetrics.monai handlers inside MONAI's SupervisedEvaluator give ccmetrics.evaluate's values.

The "network" is the identity: each data item's image is already the one-hot
prediction, so the evaluator sees exactly the arrays passed to evaluate.
"""

import runpy
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("monai")
pytest.importorskip("ignite")

from conftest import degrade, random_blobs  # noqa: E402
from monai.data import DataLoader, Dataset, MetaTensor  # noqa: E402
from monai.engines import SupervisedEvaluator  # noqa: E402
from monai.handlers import from_engine  # noqa: E402

from ccmetrics import evaluate  # noqa: E402
from ccmetrics.monai import (  # noqa: E402
    CCDiceHandler,
    CCHausdorffDistance95Handler,
    CCMetric,
    CCMetricHandler,
    CCSurfaceDiceHandler,
)

ROOT = Path(__file__).resolve().parents[2]
TO_PRED_LABEL = from_engine(["pred", "label"])


def one_hot(mask):
    m = torch.as_tensor(np.asarray(mask, dtype=bool))
    return torch.stack([~m, m]).float()  # channel-first (2, *spatial)


@pytest.fixture(scope="module")
def cases():
    rng = np.random.default_rng(17)
    out = []
    for shape in [(16, 14, 12)] * 3:
        gt = random_blobs(rng, shape, density=0.004)
        out.append((degrade(rng, gt), gt))
    return out


def items(cases, spacings=None, meta_key=None, meta=None):
    """Data dicts: image = one-hot prediction, label = one-hot GT; MetaTensors with an affine per spacing."""
    data = []
    for i, (pred, gt) in enumerate(cases):
        image, label = one_hot(pred), one_hot(gt)
        if spacings is not None:
            affine = torch.diag(torch.tensor([*spacings[i], 1.0], dtype=torch.float64))
            image, label = MetaTensor(image, affine=affine), MetaTensor(label, affine=affine)
        item = {"image": image, "label": label}
        if meta_key is not None:
            item[meta_key] = meta(i)
        data.append(item)
    return data


def run(data, key_metric, additional=None, batch_size=2, decollate=True):
    evaluator = SupervisedEvaluator(
        device=torch.device("cpu"),
        val_data_loader=DataLoader(Dataset(data), batch_size=batch_size, num_workers=0),
        network=torch.nn.Identity(),
        key_val_metric={"key": key_metric},
        additional_metrics=additional,
        decollate=decollate,
    )
    evaluator.run()
    return evaluator.state


def expected(cases, name, spacings=None, mode="patient", **options):
    results = [
        evaluate(pred=p, gt=g, metrics=[name], spacing=None if spacings is None else spacings[i], **options)
        for i, (p, g) in enumerate(cases)
    ]
    if mode == "patient":
        return np.mean([r.cc[name] for r in results]), [r.cc[name] for r in results]
    pooled = np.concatenate([r.per_component[name].replace(np.inf, r.worst_distance) for r in results])
    return pooled.mean(), None


def test_supervised_evaluator_values_equal_evaluate(cases):
    state = run(
        items(cases),
        CCDiceHandler(output_transform=TO_PRED_LABEL),
        {
            "hd95": CCHausdorffDistance95Handler(output_transform=TO_PRED_LABEL),
            "nsd2": CCSurfaceDiceHandler(nsd_tolerance=2.0, output_transform=TO_PRED_LABEL),
            "assd_overall": CCMetricHandler("assd", output_transform=TO_PRED_LABEL, mode="overall"),
            "hd95_worst": CCMetricHandler(CCMetric("hd95", worst_distance=10.0), output_transform=TO_PRED_LABEL),
        },
    )
    dice, per_image = expected(cases, "dice")
    assert state.metrics["key"] == pytest.approx(dice, rel=1e-12)
    np.testing.assert_allclose(state.metric_details["key"][:, 0].numpy(), per_image, rtol=1e-12)
    assert state.metric_details["key"].shape == (3, 1)
    assert state.metrics["hd95"] == pytest.approx(expected(cases, "hd95")[0], rel=1e-12)
    assert state.metrics["nsd2"] == pytest.approx(expected(cases, "nsd", nsd_tolerance=2.0)[0], rel=1e-12)
    assert state.metrics["assd_overall"] == pytest.approx(expected(cases, "assd", mode="overall")[0], rel=1e-12)
    assert state.metrics["hd95_worst"] == pytest.approx(expected(cases, "hd95", worst_distance=10.0)[0], rel=1e-12)


@pytest.mark.parametrize("decollate", [True, False])
def test_spacing_from_metatensor_affine(cases, decollate):
    """Per-image spacing from each MetaTensor's affine: lists after decollation, a batched MetaTensor without."""
    spacings = [(1.0, 1.0, 2.5), (0.5, 0.8, 1.0), (2.0, 2.0, 2.0)]
    state = run(
        items(cases, spacings), CCHausdorffDistance95Handler(output_transform=TO_PRED_LABEL), decollate=decollate
    )
    assert state.metrics["key"] == pytest.approx(expected(cases, "hd95", spacings)[0], rel=1e-12)
    assert state.metrics["key"] != pytest.approx(expected(cases, "hd95")[0], rel=1e-3)  # spacing mattered


def test_spacing_precedence(cases):
    spacings = [(1.0, 1.0, 2.5), (0.5, 0.8, 1.0), (2.0, 2.0, 2.0)]
    data = items(cases, spacings)
    # 1. the handler's spacing wins over the metadata (and over the metric's)
    handler = CCMetricHandler(CCMetric("hd", spacing=3.0), output_transform=TO_PRED_LABEL, spacing=(1.5, 1.5, 1.0))
    assert run(data, handler).metrics["key"] == pytest.approx(
        expected(cases, "hd", [(1.5, 1.5, 1.0)] * 3)[0], rel=1e-12
    )
    # 2. the metric's own spacing wins over the metadata
    handler = CCMetricHandler(CCMetric("hd", spacing=3.0), output_transform=TO_PRED_LABEL)
    assert run(data, handler).metrics["key"] == pytest.approx(expected(cases, "hd", [(3.0,) * 3] * 3)[0], rel=1e-12)
    # 3. metadata switched off: voxel units
    handler = CCMetricHandler("hd", output_transform=TO_PRED_LABEL, spacing_from_meta=False)
    assert run(data, handler).metrics["key"] == pytest.approx(expected(cases, "hd")[0], rel=1e-12)


@pytest.mark.parametrize(
    "meta_key, meta",
    [
        ("image_meta_dict", lambda s: {"affine": np.diag([*s, 1.0])}),
        ("pred_meta_dict", lambda s: {"pixdim": np.array([1.0, *s, 1.0, 1.0, 1.0, 1.0])}),
        ("label_meta_dict", lambda s: {"spacing": np.array(s)}),
    ],
)
def test_spacing_from_meta_dicts(cases, meta_key, meta):
    """Plain tensors with the legacy ``*_meta_dict`` entries (affine, NIfTI pixdim, or spacing)."""
    spacings = [(1.0, 1.0, 2.5), (0.5, 0.8, 1.0), (2.0, 2.0, 2.0)]
    data = items(cases, meta_key=meta_key, meta=lambda i: meta(spacings[i]))
    state = run(data, CCMetricHandler("assd", output_transform=TO_PRED_LABEL))
    assert state.metrics["key"] == pytest.approx(expected(cases, "assd", spacings)[0], rel=1e-12)


def test_handler_arguments():
    with pytest.raises(ValueError, match="set them on the CCMetric"):
        CCMetricHandler(CCMetric("dice"), mode="overall")
    with pytest.raises(ValueError, match="spacing"):
        CCMetricHandler("hd", spacing=(1.0, -1.0, 1.0))
    handler = CCSurfaceDiceHandler(nsd_tolerance=2.0, mode="overall")
    assert handler.metric_fn.metric == "nsd" and handler.metric_fn.nsd_tolerance == 2.0
    assert handler.metric_fn.mode == "overall"


@pytest.mark.slow
def test_example_runs_evaluator_and_matches_evaluate(capsys):
    namespace = runpy.run_path(str(ROOT / "examples" / "monai_validation.py"))
    metrics, details, cases = namespace["main"](n_cases=3, batch_size=2)
    spacing = namespace["SPACING"]
    results = [evaluate(pred=p, gt=g, metrics=["dice", "hd95"], spacing=spacing) for p, g in cases]
    assert metrics["val_cc_dice"] == pytest.approx(np.mean([r.cc["dice"] for r in results]), rel=1e-12)
    assert metrics["val_cc_hd95"] == pytest.approx(np.mean([r.cc["hd95"] for r in results]), rel=1e-12)
    np.testing.assert_allclose(details["val_cc_hd95"][:, 0].numpy(), [r.cc["hd95"] for r in results], rtol=1e-12)
    out = capsys.readouterr().out
    assert f"CC-Dice (key metric): {metrics['val_cc_dice']:.4f}" in out
    assert f"CC-HD95 (mm):         {metrics['val_cc_hd95']:.4f}" in out
