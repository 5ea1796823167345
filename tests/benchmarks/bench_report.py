"""Size and time of ``ccmetrics report`` on a 100-case data set (issue target: a page under 30 MB).

Writes ``--cases`` synthetic cases (192×192×128 at 2×2×3 mm, about 15 lesions each, a degraded prediction
with false positives; ``ccmetrics.synthetic.lesion_case``) as NIfTI into a temporary folder, evaluates
them with ``ccmetrics evaluate`` and writes the report with the default ``--max-cases 20`` and with
thumbnails for every case. Run from the repository root::

    python tests/benchmarks/bench_report.py
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    args = parser.parse_args()

    from ccmetrics.cli import main as cli
    from ccmetrics.formats.io import save_image
    from ccmetrics.synthetic import lesion_case

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for sub in ("gt", "pred"):
            (root / sub).mkdir()
        for i in range(args.cases):
            gt, pred = lesion_case(
                (192, 192, 128), n_lesions=15, radius_range=(1.5, 12), n_false_positives=3, seed=500 + i
            )
            for sub, mask in (("gt", gt), ("pred", pred)):
                save_image(root / sub / f"case_{i:03d}.nii.gz", mask.astype(np.uint8), spacing=(2.0, 2.0, 3.0))
        start = time.perf_counter()
        assert (
            cli(
                [
                    "evaluate",
                    str(root / "gt"),
                    str(root / "pred"),
                    "--out",
                    str(root / "out"),
                    "--workers",
                    "2",
                    "--metrics",
                    "dice,nsd,hd95,detection",
                    "--quiet",
                ]
            )
            == 0
        )
        print(f"evaluate: {time.perf_counter() - start:.1f} s")
        rows = []
        for label, extra in (
            ("default (--max-cases 20)", []),
            (f"--max-cases {args.cases}", ["--max-cases", str(args.cases)]),
        ):
            out = root / f"report_{len(rows)}.html"
            start = time.perf_counter()
            assert cli(["report", str(root / "out"), "--out", str(out)] + extra) == 0
            rows.append((label, time.perf_counter() - start, os.path.getsize(out) / 2**20))
    print(f"\n| report of {args.cases} cases | time (s) | page size (MiB) |\n|---|---:|---:|")
    for label, seconds, size in rows:
        print(f"| {label} | {seconds:.1f} | {size:.1f} |")


if __name__ == "__main__":
    main()
