"""Package-level promises: light import, public API, entry points."""

import subprocess
import sys


def test_import_loads_no_heavy_module():
    # what makes an import slow: the package itself loads none of it (names load on first use)
    heavy = (
        "torch",
        "monai",
        "matplotlib",
        "nibabel",
        "SimpleITK",
        "dask",
        "scikit_posthocs",
        "pandas",
        "scipy",
        "cc3d",
        "numpy",
    )
    code = f"import sys, ccmetrics; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_api():
    import ccmetrics

    for name in (
        "evaluate",
        "CaseResult",
        "voronoi_partition",
        "label_components",
        "evaluate_dataset",
        "DatasetResult",
    ):
        assert name in ccmetrics.__all__ and hasattr(ccmetrics, name)


def test_names_resolve_whatever_the_import_order():
    code = (
        "import ccmetrics\n"
        "import ccmetrics.metrics.case, ccmetrics.campaign.dataset  # submodules first: the names stay the functions\n"
        "assert callable(ccmetrics.evaluate) and ccmetrics.evaluate.__module__ == 'ccmetrics.metrics.case'\n"
        "assert ccmetrics.formats.io.load_image and ccmetrics.analysis.stats.compare and ccmetrics.nuclei.evaluate\n"
        "from ccmetrics import evaluate, evaluate_dataset, Matching\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "ok"


def test_unknown_attribute():
    import pytest

    import ccmetrics

    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        ccmetrics.evaluat  # noqa: B018
