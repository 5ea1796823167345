"""Without an extra, ccmetrics degrades gracefully and says how to install it (issue 43, point 3).

Each check runs a fresh Python in which the extra cannot be imported (``sys.modules[name] = None``, what Python
does for a module it must not import: ``import name`` raises ImportError), as a user without it runs the command:

* ``ccmetrics compare`` of three methods without scikit-posthocs prints the means, the mean ranks and the Friedman
  test, numbers checked against scipy and pandas on the folders' ``per_case.csv``, and one line saying that the
  post-hoc tests need the ``stats`` extra;
* ``import ccmetrics.monai`` without torch (or MONAI) raises an ImportError that says what is missing and how to
  install it;
* every install advice in the package names something that can be installed: no ``ccmetrics-toolkit[...]`` from
  the package index (the distribution is not published there; ``ccmetrics`` there is another project).
"""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_without(module, code):
    """Run ``code`` in a fresh Python where ``import module`` fails; the finished process."""
    wrapper = f"import sys\nsys.modules[{module!r}] = None\n{code}"
    return subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """Result folders of three methods on five synthetic cases (``ccmetrics evaluate --metrics dice``)."""
    import nibabel as nib

    from ccmetrics.cli import main
    from ccmetrics.synthetic import lesion_case

    root = tmp_path_factory.mktemp("extras")
    gt_dir = root / "gt"
    gt_dir.mkdir()
    methods = {m: root / m for m in ("shifted", "eroded", "noisy")}
    for folder in methods.values():
        folder.mkdir()
    rng = np.random.default_rng(7)
    for i in range(5):
        gt, pred = lesion_case((40, 40, 32), n_lesions=4, radius_range=(2.0, 6.0), n_false_positives=1, seed=i)
        affine = np.diag([1.0, 1.0, 2.0, 1.0])
        nib.save(nib.Nifti1Image(gt.astype(np.uint8), affine), gt_dir / f"case_{i}.nii.gz")
        variants = {
            "shifted": np.roll(pred, 1 + i % 2, axis=0),
            "eroded": pred & (rng.random(pred.shape) < 0.7),
            "noisy": pred | (rng.random(pred.shape) < 0.002),
        }
        for m, mask in variants.items():
            nib.save(nib.Nifti1Image(mask.astype(np.uint8), affine), methods[m] / f"case_{i}.nii.gz")
    outs = {}
    for m, folder in methods.items():
        outs[m] = root / f"out_{m}"
        argv = ["evaluate", str(gt_dir), str(folder), "--out-dir", str(outs[m]), "--metrics", "dice", "--quiet"]
        assert main([*argv, "--no-plots", "--n-resamples", "50"]) == 0
    return outs


def test_compare_without_scikit_posthocs_prints_means_ranks_and_friedman(three_runs):
    names = list(three_runs)
    argv = ["compare", *map(str, three_runs.values()), "--metric", "cc_dice", "--names", ",".join(names)]
    done = run_without("scikit_posthocs", f"from ccmetrics.cli import main\nsys.exit(main({argv!r}))")
    assert done.returncode == 0, done.stderr
    printed = done.stdout + done.stderr
    # the reference: the folders' per-case CC-Dice, ranked by pandas (1 = best, ties averaged), tested by scipy
    scores = pd.concat(
        {m: pd.read_csv(d / "per_case.csv").set_index("case")["cc_dice"] for m, d in three_runs.items()}, axis=1
    )
    ranks = scores.rank(axis=1, ascending=False).mean()
    friedman = stats.friedmanchisquare(*(scores[m].to_numpy() for m in names))
    assert f"Friedman test: statistic {friedman.statistic:.4g}, p = {friedman.pvalue:.4g}" in printed
    for m in names:
        row = next(line for line in done.stdout.splitlines() if line.startswith(m))
        assert row.split()[1:] == [
            str(len(scores)),
            f"{scores[m].mean():.4g}",
            f"{scores[m].median():.4g}",
            f"{ranks[m]:.4g}",
        ]
    assert "Nemenyi post-hoc p-values" not in printed
    advice = [line for line in printed.splitlines() if "scikit-posthocs" in line]
    assert len(advice) == 1, printed  # one line, said once
    assert "stats extra" in advice[0] and "pip install scikit-posthocs" in advice[0]
    assert 'pip install -e ".[stats]"' in advice[0] and "ccmetrics-toolkit[" not in advice[0]


def test_the_python_api_without_scikit_posthocs():
    code = (
        "import pandas as pd\n"
        "from ccmetrics.analysis.stats import compare, friedman_nemenyi\n"
        "a = pd.DataFrame({'case': [1, 2, 3, 4], 'dice': [0.9, 0.8, 0.7, 0.6]})\n"
        "b = pd.DataFrame({'case': [1, 2, 3, 4], 'dice': [0.8, 0.7, 0.9, 0.5]})\n"
        "c = pd.DataFrame({'case': [1, 2, 3, 4], 'dice': [0.7, 0.6, 0.5, 0.4]})\n"
        "r = compare({'A': a, 'B': b, 'C': c}, 'dice')\n"
        "print(r.test, round(r.statistic, 6), round(r.pvalue, 6), r.mean_ranks.to_dict(), r.nemenyi, r.significance)\n"
        "print(r.posthoc_missing)\n"
        "try:\n"
        "    friedman_nemenyi(pd.DataFrame({'A': a.dice, 'B': b.dice, 'C': c.dice}))\n"
        "except ImportError as err:\n"
        "    print('ImportError:', err)\n"
    )
    done = run_without("scikit_posthocs", code)
    assert done.returncode == 0, done.stderr
    first, second, third = done.stdout.splitlines()
    # by hand: ranks per case (A, B, C) = (1, 2, 3), (1, 2, 3), (2, 1, 3), (1, 2, 3): rank sums 5, 7, 12, n 4, k 3;
    # chi2 = 12 / (n k (k + 1)) * sum(R^2) - 3 n (k + 1) = 12 / 48 * 218 - 48 = 6.5, p = exp(-6.5 / 2) (2 dof)
    assert first == f"friedman 6.5 {round(float(np.exp(-3.25)), 6)} {{'A': 1.25, 'B': 1.75, 'C': 3.0}} None None"
    assert second.startswith("the Nemenyi post-hoc tests need scikit-posthocs (the stats extra)")
    assert third.startswith("ImportError: the Nemenyi post-hoc tests need scikit-posthocs")


@pytest.mark.parametrize("module", ["torch", "monai"])
def test_import_ccmetrics_monai_without_torch_says_how_to_install_it(module):
    done = run_without(module, "import ccmetrics.monai")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: ccmetrics.monai needs {'PyTorch (torch)' if module == 'torch' else 'MONAI'}")
    assert "pip install torch" in last and "https://download.pytorch.org/whl/cpu" in last
    assert 'pip install -e ".[monai]"' in last and "ModuleNotFoundError" not in done.stderr.splitlines()[-1]
    assert run_without(module, "import ccmetrics; print(ccmetrics.evaluate.__name__)").stdout.strip() == "evaluate"


def test_install_advice_names_what_can_be_installed():
    """No advice to install ``ccmetrics-toolkit[...]`` from the package index, where it is not published."""
    found = []
    for path in sorted((ROOT / "ccmetrics").rglob("*.py")) + sorted((ROOT / "simulations").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"pip install [\"']?ccmetrics(-toolkit)?\[", line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
