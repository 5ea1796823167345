"""Tests of ccmetrics.resources: available memory, memory sizes, and the estimate covering a measured peak."""

import json
import subprocess
import sys

import numpy as np
import pytest

from ccmetrics import resources
from ccmetrics.io import ImageHeader, read_header, save_image
from ccmetrics.resources import (
    BYTES_PER_VOXEL,
    DEFAULT_MEMORY_FRACTION,
    FIXED_BYTES,
    available_memory_bytes,
    estimate_case_bytes,
    parse_memory,
)
from ccmetrics.synthetic import lesion_case

GiB, MiB = 2**30, 2**20


@pytest.mark.parametrize(
    "text, expected",
    [
        ("8G", 8 * GiB),
        ("8g", 8 * GiB),
        ("512M", 512 * MiB),
        ("2.5GiB", int(2.5 * GiB)),
        ("2.5 gib", int(2.5 * GiB)),
        ("1000000", 1_000_000),
        ("1000000B", 1_000_000),
        (" 16 GB ", 16_000_000_000),
        ("1.5TB", 1_500_000_000_000),
        ("100k", 102_400),
        ("100KiB", 102_400),
        ("100kB", 100_000),
        (".5M", 512 * 1024),
        ("123456789012345678", 123456789012345678),
        (4096, 4096),
    ],
)
def test_parse_memory(text, expected):
    assert parse_memory(text) == expected


@pytest.mark.parametrize("text", ["", "G", "8X", "-1G", "8 G B", "1e9", "inf", "nan", "0", "0.0G", "8GG", "ten", 0, -5])
def test_parse_memory_rejects(text):
    with pytest.raises(ValueError, match=r"memory size"):
        parse_memory(text)


def test_parse_memory_message_says_the_forms():
    with pytest.raises(ValueError, match=r"cannot read '8X' as a memory size: .*8G, 512M, 2\.5GiB"):
        parse_memory("8X")


def test_available_memory():
    available = available_memory_bytes()
    assert isinstance(available, int) and available > 0
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    assert available <= total
    assert 0 < DEFAULT_MEMORY_FRACTION < 1


def test_available_memory_fallbacks(monkeypatch):
    monkeypatch.setattr(resources, "_meminfo_available", lambda: None)
    monkeypatch.setattr(resources, "_cgroup_room", lambda: None)
    assert available_memory_bytes() > 0  # psutil or os.sysconf
    monkeypatch.setattr(resources, "_meminfo_available", lambda: 10 * GiB)
    monkeypatch.setattr(resources, "_cgroup_room", lambda: 3 * GiB)  # a container's limit below the machine's
    assert available_memory_bytes() == 3 * GiB


def test_estimate_formula():
    h = ImageHeader("gt.nii.gz", (400, 400, 300), np.dtype(np.uint8), (1.0, 1.0, 1.0))
    voxels = 400 * 400 * 300
    engine = int(np.ceil(BYTES_PER_VOXEL * voxels)) + FIXED_BYTES
    assert estimate_case_bytes(h, h) == 2 * voxels + engine
    assert estimate_case_bytes(h, h, ["dice"]) == estimate_case_bytes(h, h)
    assert estimate_case_bytes(h, None) == 2 * voxels + engine  # a missing prediction: an empty bool mask
    wide = ImageHeader("gt.nii.gz", h.shape, np.dtype(np.int32), h.spacing)
    assert estimate_case_bytes(wide, h) == 4 * voxels + voxels + voxels + engine  # + its bool mask
    scaled = ImageHeader("gt.nii.gz", h.shape, np.dtype(np.float64), h.spacing)
    assert estimate_case_bytes(scaled, h) == 8 * voxels + voxels + 4 * voxels + engine
    # doubling every axis: 8 times the per-voxel part
    big = ImageHeader("gt.nii.gz", (800, 800, 600), np.dtype(np.uint8), h.spacing)
    assert estimate_case_bytes(big, big) - FIXED_BYTES == pytest.approx(8 * (estimate_case_bytes(h, h) - FIXED_BYTES))


def test_estimate_counts_simpleitk_copies():
    # reading a float64 MHA holds SimpleITK's image, numpy's copy and the transposed copy at once
    h = ImageHeader("gt.mha", (100, 100, 100), np.dtype(np.float64), (1.0, 1.0, 1.0))
    assert estimate_case_bytes(h, h) >= 2 * h.nbytes + 2 * h.nbytes


CHILD = r"""
import json, resource, sys
import ccmetrics, nibabel, SimpleITK
from ccmetrics import evaluate
from ccmetrics.io import load_image

def rss(field="VmRSS"):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))

base = rss()
gt, pred = load_image(sys.argv[1]), load_image(sys.argv[2])
evaluate(pred.array, gt.array, ["dice", "nsd", "hd95", "pq", "lesion_dice", "detection"], spacing=gt.spacing)
print(json.dumps({"peak": rss("VmHWM") - base}))  # own peak: ru_maxrss carries the parent's RSS across exec
"""


@pytest.mark.parametrize("kind", ["sparse", "heavy"])
def test_estimate_covers_the_measured_peak(tmp_path, kind):
    """The first case of a fresh process (numba's compilation included), all six metric groups."""
    if kind == "sparse":
        gt, pred = lesion_case((96, 96, 96), n_lesions=12, radius_range=(1.5, 8), seed=3)
    else:  # about 30 % foreground: a smooth field's top 30 %, the prediction shifted
        from scipy import ndimage

        rng = np.random.default_rng(0)
        field = ndimage.zoom(rng.standard_normal((6, 6, 6)), 16, order=1)
        gt = field > np.quantile(field, 0.7)
        pred = np.roll(field, 2, axis=0) > np.quantile(field, 0.7)
    paths = [str(tmp_path / "gt.nii.gz"), str(tmp_path / "pred.nii.gz")]
    for path, mask in zip(paths, (gt, pred)):
        save_image(path, mask.view(np.uint8))
    out = subprocess.run([sys.executable, "-c", CHILD, *paths], capture_output=True, text=True, check=True)
    peak = json.loads(out.stdout.strip().splitlines()[-1])["peak"]
    estimate = estimate_case_bytes(read_header(paths[0]), read_header(paths[1]))
    assert 0 < peak <= estimate, f"measured {peak / MiB:.0f} MiB, estimated {estimate / MiB:.0f} MiB"
    assert estimate < 20 * max(peak, FIXED_BYTES)  # an estimate, not a refusal of everything
