"""Package-level promises: light import, public API, entry points."""

import subprocess
import sys


def test_import_loads_no_heavy_module():
    heavy = ("torch", "monai", "matplotlib", "nibabel", "SimpleITK", "dask", "scikit_posthocs")
    code = f"import sys, ccmetrics; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_api():
    import ccmetrics

    for name in ("evaluate", "CaseResult", "voronoi_partition", "label_components", "evaluate_dataset",
                 "DatasetResult"):
        assert name in ccmetrics.__all__ and hasattr(ccmetrics, name)
