"""Package-level promises: light import, public API."""

import subprocess
import sys


def test_import_does_not_load_torch_or_monai():
    code = "import sys, ccmetrics; print('torch' in sys.modules, 'monai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_public_api():
    import ccmetrics

    for name in ("evaluate", "CaseResult", "voronoi_partition", "label_components"):
        assert name in ccmetrics.__all__ and hasattr(ccmetrics, name)
