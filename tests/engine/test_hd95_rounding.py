"""HD95 bit for bit with torch.quantile under every CPU dispatch of torch (adversarial, not only random).

torch's lerp rounds ``a + w * (b - a)`` once (one FMA) in its AVX2/AVX512 kernels and twice in its
baseline kernel, so quantiles differ by one float32 ulp between them on some vectors. The tests run
torch in subprocesses with ``ATEN_CPU_CAPABILITY`` set to each dispatch and compare with
``ccmetrics.engine.surface.torch_quantile`` under the same setting, on vectors chosen so that the two roundings
disagree (random vectors rarely hit them: that is how a one-ulp error once went unnoticed).
"""

import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from ccmetrics.engine.torch_emulation import _fma32, torch_lerp, torch_quantile


def exact_f32(x: Fraction) -> np.float32:
    """Round an exact rational to the nearest float32, ties to even (an independent reference)."""
    guess = np.float32(float(x))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    best = min(candidates, key=lambda c: (abs(Fraction(float(c)) - x), int(c.view(np.uint32)) & 1))
    return np.float32(best)


def test_fma32_equals_exact_rounding_on_midpoints_and_random():
    one = np.float32(1.0)
    odd = np.nextafter(one, np.float32(2))  # 1 + 2^-23, an odd mantissa
    a = np.float32(1 + 2.0**-23)
    b = np.float32(2.0**-24 * (1 - 2.0**-23))
    # a*b + c lands, in float64, exactly halfway between two float32: only the exact error decides
    cases = [(a, b, odd), (a, b, one), (-a, b, odd), (a, -b, one), (a, np.float32(2.0**-24 * (1 + 2.0**-23)), odd)]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 20000)).astype(np.float32) * np.float32(10) ** rng.integers(-3, 4, (3, 20000))
    cases += list(zip(*x))
    for a_, b_, c_ in cases:
        expected = exact_f32(Fraction(float(a_)) * Fraction(float(b_)) + Fraction(float(c_)))
        assert _fma32(np.array([a_]), np.array([b_]), np.array([c_]))[0] == expected, (a_, b_, c_)


def _disagreeing_vectors(n: int = 40):
    """Distance-like vectors whose 95th percentile differs between one and two roundings."""
    rng = np.random.default_rng(7)
    found = [np.array([1.0] * 8 + [math.sqrt(29)], np.float32)]  # the minimal known case
    while len(found) < n:
        k = int(rng.integers(2, 80))
        values = (np.sqrt(rng.integers(0, 900, k)) * rng.choice([1.0, 0.586, 0.9765625, 3.3])).astype(np.float32)
        ordered = np.sort(values)
        rank = np.float32(0.95) * np.float32(k - 1)
        lo, hi = int(np.floor(rank)), int(np.ceil(rank))
        w = np.float32(rank - np.float32(lo))
        if torch_lerp(ordered[lo], ordered[hi], w, fma=True) != torch_lerp(ordered[lo], ordered[hi], w, fma=False):
            found.append(values)
    return found


TORCH_SCRIPT = """
import json, sys, numpy as np, torch
from ccmetrics.engine.torch_emulation import lerp_uses_fma, torch_quantile
vectors = [np.array(v, np.float32) for v in json.loads(sys.stdin.read())]
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "fma": lerp_uses_fma(),
                  "torch": [torch.quantile(torch.from_numpy(v), 0.95).item() for v in vectors],
                  "ours": [torch_quantile(v, 0.95) for v in vectors]}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("capability", ["default", "avx2", "avx512"])
def test_quantile_bit_exact_under_each_torch_dispatch(capability):
    pytest.importorskip("torch")
    import os

    vectors = _disagreeing_vectors()
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    done = subprocess.run(
        [sys.executable, "-c", TORCH_SCRIPT],
        input=json.dumps([v.tolist() for v in vectors]),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    out = json.loads(done.stdout)
    if out["capability"].lower() != capability:
        pytest.skip(f"this CPU cannot run torch's {capability} kernels (got {out['capability']})")
    assert out["fma"] == (capability != "default")
    assert out["ours"] == out["torch"]  # every vector, bit for bit
    # and the vectors do tell the two roundings apart: the other rounding would have failed
    other = [torch_quantile_with(v, fma=capability == "default") for v in vectors]
    assert sum(a != b for a, b in zip(other, out["torch"])) == len(vectors)


def torch_quantile_with(values, fma):
    ordered = np.sort(values.astype(np.float32))
    rank = np.float32(0.95) * np.float32(len(ordered) - 1)
    lo, hi = int(np.floor(rank)), int(np.ceil(rank))
    return float(torch_lerp(ordered[lo], ordered[hi], np.float32(rank - np.float32(lo)), fma=fma))


def test_hd95_of_evaluate_equals_monai_on_an_fma_sensitive_case():
    """End to end: a 2D case whose HD95 directed distances are the minimal vector above."""
    torch = pytest.importorskip("torch")
    from monai.metrics import compute_hausdorff_distance

    from ccmetrics import evaluate

    # GT: a single pixel; prediction: 4 pixels at distance 1 and one at sqrt(17) = (1, 4) from it; the
    # pred->GT 95th percentile lerp(1, sqrt(17), 0.8) differs by one ulp between one and two roundings
    gt = np.zeros((20, 20), bool)
    gt[8, 8] = True
    pred = np.zeros_like(gt)
    for dy, dx in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        pred[8 + dy, 8 + dx] = True
    pred[9, 12] = True
    result = evaluate(pred, gt, ["hd95"])

    def onehot(m):
        t = torch.from_numpy(m)
        return torch.stack([~t, t])[None].float()

    monai = compute_hausdorff_distance(onehot(pred), onehot(gt), include_background=False, percentile=95)
    assert result.standard["hd95"] == float(monai[0, 0])
    distances = np.array([1, 1, 1, 1, math.sqrt(17)], np.float32)
    assert torch_quantile_with(distances, True) != torch_quantile_with(distances, False)
    assert result.standard["hd95"] == torch_quantile(distances, 0.95)


def one_component_scores(p, g, metrics, tolerance):
    """MONAI's reductions of one component's two distance lists, written plainly, one scalar at a time (the
    reference the vectorised reductions are checked against): both lists empty -> NSD 1, distances 0; one
    empty -> NSD from its formula, distances inf."""
    out = {}
    n = len(p) + len(g)
    for name in metrics:
        if n == 0:
            out[name] = 1.0 if name == "nsd" else 0.0
        elif name == "nsd":
            tau = np.float32(tolerance)
            out[name] = float(np.count_nonzero(p <= tau) + np.count_nonzero(g <= tau)) / n
        elif len(p) == 0 or len(g) == 0:
            out[name] = math.inf
        elif name == "hd":
            out[name] = float(max(p.max(), g.max()))
        elif name == "hd95":
            out[name] = max(torch_quantile(p, 0.95), torch_quantile(g, 0.95))
        else:
            out[name] = float(np.concatenate([p, g]).mean(dtype=np.float64))
    return out


@pytest.mark.parametrize("fma", [True, False])
def test_grouped_surface_scores_equal_per_component_bit_for_bit(monkeypatch, fma):
    """All components at once (group maxima, one sort, one vectorised lerp) equal the plain reductions one
    component at a time: rounding-sensitive vectors, empty sides, infinities, ties, single values, under both
    lerp roundings; and surface_scores (the one-group case) equals them too."""
    import ccmetrics.engine.torch_emulation as emulation
    from ccmetrics.engine.surface import grouped_surface_scores, surface_scores

    monkeypatch.setattr(emulation, "lerp_uses_fma", lambda: fma)
    rng = np.random.default_rng(3)
    sensitive = np.array([1.0] * 8 + [math.sqrt(29)], np.float32)
    groups_p, groups_g = [], []
    for i in range(400):
        kind = i % 8
        if kind == 0:
            p, g = sensitive.copy(), rng.permutation(sensitive)
        elif kind == 1:
            p, g = np.zeros(0, np.float32), rng.random(rng.integers(1, 30)).astype(np.float32)  # empty prediction side
        elif kind == 2:
            p, g = np.full(rng.integers(1, 9), np.inf, np.float32), np.zeros(0, np.float32)
        elif kind == 3:
            p, g = np.zeros(0, np.float32), np.zeros(0, np.float32)  # both empty
        elif kind == 4:
            p, g = np.float32([rng.random()]), np.float32([2.0, 2.0, 2.0])  # single value, ties
        else:
            p = (rng.random(rng.integers(1, 300)) * 40).astype(np.float32)
            g = np.sqrt(rng.integers(0, 400, rng.integers(1, 200))).astype(np.float32)
        groups_p.append(rng.permutation(p))
        groups_g.append(rng.permutation(g))
    metrics = ["nsd", "hd", "hd95", "assd"]
    expected = [one_component_scores(p, g, metrics, 1.5) for p, g in zip(groups_p, groups_g)]
    for p, g, e in zip(groups_p, groups_g, expected):
        one = surface_scores(p, g, metrics, 1.5)
        assert all(np.float64(e[m]).tobytes() == np.float64(one[m]).tobytes() for m in metrics), (e, one)
    bounds_p = np.cumsum([0] + [len(p) for p in groups_p])
    bounds_g = np.cumsum([0] + [len(g) for g in groups_g])
    got = grouped_surface_scores(np.concatenate(groups_p), bounds_p, np.concatenate(groups_g), bounds_g, metrics, 1.5)
    for e, r in zip(expected, got):
        for name in metrics:
            assert np.float64(e[name]).tobytes() == np.float64(r[name]).tobytes(), (name, e, r)
