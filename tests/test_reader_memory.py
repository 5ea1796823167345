"""Every reader estimates its allocation from headers and honours the memory limit (issue 39, points 11-14, 16).

Real files built field by field (a ``.npz`` whose ``.npy`` header declares 750 channels, sparse NIfTI files whose
header claims 4 GiB, DICOM SEGs far apart, a PNG decompression bomb, a zig-zag GeoJSON), read in a subprocess under a
real address-space cap (``prlimit --as``) where the old code allocated gigabytes: there it ended in a MemoryError,
here each read is answered from the headers, within the cap.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from ccmetrics.engine._budget import MemoryLimitError
from ccmetrics.formats.io import load_image, save_image
from ccmetrics.formats.probabilities import ProbabilityError, ProbabilityMemoryError, read_probabilities

#: the address-space cap of the subprocesses: about 1.4 GiB above what Python with ccmetrics' readers maps
CAP = str(2 * 2**30)
SPATIAL = (64, 128, 128)  # nnU-Net's (z, y, x): 4 MiB of float32 a channel


def _capped(code: str, cap: str = CAP, timeout: float = 120) -> dict:
    """Run ``code`` (which prints one JSON line last) in a fresh Python under ``prlimit --as=cap``."""
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is not installed")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(
        ["prlimit", f"--as={cap}", sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"no output (exit {done.returncode}): {done.stderr[-3000:]}"
    return json.loads(lines[-1])


def _forged_npz(path: Path, channels: int, held: np.ndarray) -> None:
    """A whole nnU-Net ``.npz`` of ``channels`` channels of ``held``'s shape: ``held``'s first, zeros after them
    (streamed into the zip member at the fastest compression: a few MB on disk for gigabytes of voxels)."""
    header = {"descr": "<f4", "fortran_order": False, "shape": (channels, *held.shape[1:])}
    zeros = np.zeros(held[0].size, "<f4").tobytes()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("probabilities.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            f.write(np.ascontiguousarray(held, "<f4").tobytes())
            for _ in range(channels - len(held)):
                f.write(zeros)


def _truncated_npz(path: Path, channels: int, held: np.ndarray) -> None:
    """An ``.npz`` whose ``probabilities.npy`` header declares ``channels`` channels of ``held``'s shape while its
    data hold only ``held``'s channels: a header that lies about its size."""
    header = {"descr": "<f4", "fortran_order": False, "shape": (channels, *held.shape[1:])}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("probabilities.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            f.write(np.ascontiguousarray(held, "<f4").tobytes())


def _sparse_nifti(path: Path, shape: tuple[int, ...], spacing: float = 1.0) -> None:
    """A float32 ``.nii`` whose header claims ``shape``, its data a sparse file of that size (zeros, no disk)."""
    hdr = bytearray(352)
    struct.pack_into("<i", hdr, 0, 348)
    dims = [len(shape), *shape] + [1] * (7 - len(shape))
    struct.pack_into("<8h", hdr, 40, *dims)
    struct.pack_into("<hh", hdr, 70, 16, 32)  # datatype float32, bitpix
    struct.pack_into("<8f", hdr, 76, 1.0, spacing, spacing, spacing, 1, 1, 1, 1)
    struct.pack_into("<f", hdr, 108, 352.0)  # vox_offset
    struct.pack_into("<f", hdr, 112, 1.0)  # scl_slope
    struct.pack_into("<B", hdr, 123, 2)  # xyzt_units: mm
    struct.pack_into("<hh", hdr, 252, 0, 1)  # qform_code 0, sform_code 1
    for row, values in enumerate(np.diag([spacing, spacing, spacing, 1.0])[:3]):
        struct.pack_into("<4f", hdr, 280 + 16 * row, *values)
    hdr[344:348] = b"n+1\0"
    with open(path, "wb") as f:
        f.write(hdr)
        f.truncate(352 + int(np.prod(shape)) * 4)


@pytest.fixture
def gt(tmp_path):
    path = tmp_path / "gt.nii.gz"
    save_image(path, np.zeros(tuple(reversed(SPATIAL)), np.uint8))
    return load_image(path)


# ---------------------------------------------------------------- 11. probability maps


@pytest.mark.slow
def test_npz_of_750_channels_is_read_one_channel_at_a_time(tmp_path, gt):
    """750 channels (3.1 GB, a few MB on disk): channel 1 is read under a 2 GB cap (the old code allocated the
    stack)."""
    rng = np.random.default_rng(3)
    held = rng.random((2, *SPATIAL), dtype=np.float32)
    _forged_npz(tmp_path / "case.npz", 750, held)
    assert (tmp_path / "case.npz").stat().st_size < 40 * 2**20
    out = _capped(f"""
        import json, numpy as np
        from ccmetrics.formats.io import load_image
        from ccmetrics.formats.probabilities import read_probabilities
        try:
            m = read_probabilities({str(tmp_path / "case.npz")!r}, like=load_image({str(gt.path)!r}), channel=1)
            print(json.dumps({{"sum": float(m.array.astype(np.float64).sum()), "first": float(m.array[1, 2, 3])}}))
        except BaseException as e:
            print(json.dumps({{"error": type(e).__name__ + ": " + str(e)[:300]}}))
    """)
    assert "error" not in out, out
    assert out["sum"] == pytest.approx(float(held[1].astype(np.float64).sum()), rel=1e-9)
    assert out["first"] == float(held[1][3, 2, 1])


def test_npz_channels_over_max_memory_are_refused_from_the_header(tmp_path, gt):
    held = np.full((3, *SPATIAL), 0.25, np.float32)
    _forged_npz(tmp_path / "case.npz", 40, held)
    with pytest.raises(ProbabilityMemoryError) as caught:
        read_probabilities(tmp_path / "case.npz", like=gt, channel=2, max_bytes=2**20)
    message = str(caught.value)
    assert isinstance(caught.value, MemoryLimitError) and isinstance(caught.value, ProbabilityError)
    assert "to read 1 of its 40 channels" in message and "--max-memory" in message
    assert "over the memory limit of 1.0 MiB" in message
    m = read_probabilities(tmp_path / "case.npz", like=gt, channel=2, max_bytes=64 * 2**20)
    assert m.array.shape == gt.array.shape and float(m.array.max()) == 0.25


def test_npz_of_fortran_order_and_float16_gives_the_channels_np_load_gives(tmp_path, gt):
    from ccmetrics.formats.probabilities import read_probability_channels

    rng = np.random.default_rng(5)
    stack = rng.random((4, *SPATIAL[:1], 6, 5)).astype(np.float32)
    small = load_image(_save(tmp_path / "small.nii.gz", np.zeros((5, 6, SPATIAL[0]), np.uint8)))
    for name, array in (("f", np.asfortranarray(stack)), ("h", stack.astype(np.float16))):
        np.savez_compressed(tmp_path / f"{name}.npz", probabilities=array)
        maps = read_probability_channels(tmp_path / f"{name}.npz", (3, 1), like=small)
        for c in (1, 3):
            assert np.array_equal(maps[c].array, np.load(tmp_path / f"{name}.npz")["probabilities"][c].T)


def _save(path: Path, array: np.ndarray) -> Path:
    save_image(path, array)
    return path


@pytest.mark.slow
def test_nifti_map_on_another_grid_is_refused_from_its_header(tmp_path, gt):
    """A map whose header claims 4 GiB on another grid: refused naming the shapes, under a 2 GB cap."""
    _sparse_nifti(tmp_path / "case.nii", (1024, 1024, 1024))
    out = _capped(f"""
        import json
        from ccmetrics.formats.io import load_image
        from ccmetrics.formats.probabilities import read_probabilities
        try:
            read_probabilities({str(tmp_path / "case.nii")!r}, like=load_image({str(gt.path)!r}))
            print(json.dumps({{"error": "read"}}))
        except BaseException as e:
            print(json.dumps({{"error": type(e).__name__ + ": " + str(e)}}))
    """)
    assert out["error"].startswith("ProbabilityError: "), out
    assert "shape differs: gt (128, 128, 64), probabilities (1024, 1024, 1024)" in out["error"]


def test_nifti_map_over_max_memory_is_refused_before_reading(tmp_path):
    _sparse_nifti(tmp_path / "case.nii", (64, 64, 64))
    _sparse_nifti(tmp_path / "gt.nii", (64, 64, 64))
    with pytest.raises(ProbabilityMemoryError, match=r"needs about 2\.0 MiB to read it .*--max-memory"):
        read_probabilities(tmp_path / "case.nii", like=load_image(tmp_path / "gt.nii"), max_bytes=2**19)


def test_a_probability_just_above_one_is_shown_with_its_digits(tmp_path, gt):
    """16: 1.0000001 in float32 was shown as 1 ("values from 0.05 to 1, outside [0, 1]")."""
    p = np.full(gt.array.shape, 0.05, np.float32)
    p[3, 2, 1] = np.float32(1.0000001)
    save_image(tmp_path / "p.nii.gz", p, like=gt)
    with pytest.raises(ProbabilityError, match=r"holds values from 0\.05 to 1\.0000001, outside \[0, 1\]"):
        read_probabilities(tmp_path / "p.nii.gz", like=gt)


# ---------------------------------------------------------------- 12. report --images


def _case_grid(shape=(8, 8, 8)):
    from ccmetrics.formats.image import Image

    return Image(np.broadcast_to(np.zeros((), np.uint8), shape), (1.0, 1.0, 1.0), np.eye(4), None)


@pytest.mark.slow
def test_report_scan_on_another_grid_is_refused_from_its_header(tmp_path):
    _sparse_nifti(tmp_path / "a_0000.nii", (1024, 1024, 1024))
    out = _capped(f"""
        import json, numpy as np
        from ccmetrics.formats.image import Image
        from ccmetrics.report.data import ImageFolder, read_channel
        grid = Image(np.broadcast_to(np.zeros((), np.uint8), (8, 8, 8)), (1.0, 1.0, 1.0), np.eye(4), None)
        try:
            channel, problem = read_channel(ImageFolder.scan({str(tmp_path)!r}).channels("a")[0], grid)
            print(json.dumps({{"channel": channel is not None, "problem": problem}}))
        except BaseException as e:
            print(json.dumps({{"error": type(e).__name__ + ": " + str(e)}}))
    """)
    assert out == {"channel": False, "problem": "channel 0000: shape differs: gt (8, 8, 8), image (1024, 1024, 1024)"}


def test_report_scan_over_the_memory_limit_is_not_read(tmp_path):
    from ccmetrics.report.data import ImageFolder, read_channel

    _sparse_nifti(tmp_path / "a_0000.nii", (8, 8, 8))
    file = ImageFolder.scan(tmp_path).channels("a")[0]
    channel, problem = read_channel(file, _case_grid(), max_bytes=4096)
    assert channel is None
    assert problem == (
        "channel 0000: reading a_0000.nii (8 x 8 x 8 voxels) needs about 6.0 KiB, over the report's memory limit of "
        "4.0 KiB: it is not drawn (raise the limit with ccmetrics report --max-memory, or free memory)"
    )
    channel, problem = read_channel(file, _case_grid())  # the default limit: a share of the memory available
    assert problem is None and channel.array.shape == (8, 8, 8)


# ---------------------------------------------------------------- 13. DICOM SEGs far apart


@pytest.mark.slow
def test_two_segs_far_apart_are_refused_before_their_union_grid_is_allocated(tmp_path):
    pytest.importorskip("highdicom")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_dicom_example", Path(__file__).resolve().parents[1] / "examples" / "make_dicom_example.py"
    )
    ex = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(ex)  # type: ignore[union-attr]
    shape = (24, 20, 4)
    labels = np.zeros(shape, np.uint8)
    labels[5:9, 5:9, 1:3] = 1  # the first and last slices are empty: the SEGs omit them
    for folder, z in (("gt", 40.0), ("pred", 40.0 + 4e6)):  # 4,000 km apart: 2 million slices of 2 mm between them
        affine = ex.ct_geometry(shape, (0.7, 0.9), 2.0, (1, 0, 0, 0, 1, 0), (-10.0, 7.5, z), -1)
        source = ex.write_ct_series(tmp_path / f"ct_{folder}", np.zeros(shape, np.int16), affine, uid_seed=7)
        ex.write_seg(tmp_path / folder / "case_1.dcm", labels, source, {1: "lesion"})
    out = _capped(f"""
        import json
        from ccmetrics import evaluate_dataset
        try:
            r = evaluate_dataset({str(tmp_path / "gt")!r}, {str(tmp_path / "pred")!r}, ["dice"], progress=False,
                                 workers=1, max_memory="1G")
            print(json.dumps({{"status": r.per_case["status"].iloc[0], "error": r.per_case["error"].iloc[0]}}))
        except BaseException as e:
            print(json.dumps({{"status": "raised", "error": type(e).__name__ + ": " + str(e)}}))
    """)
    assert out["status"] == "error", out
    assert out["error"].startswith("needs about 1.8 GiB to place both SEGs on the grid that spans them (24 x 20 x "), (
        out
    )
    assert "over the memory limit of 1.0 GiB: raise --max-memory" in out["error"]
    assert "give the source images (--reference-images" in out["error"]


# ---------------------------------------------------------------- 14. nuclei


def _png_bomb(path: Path, width: int, height: int) -> None:
    """A greyscale PNG of ``width`` x ``height`` zeros, its IDAT deflated as a stream (a few hundred kB)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    deflate = zlib.compressobj(9)
    row = bytes(width + 1)  # filter byte 0, then the row's zeros
    rows = 256
    body = b"".join(deflate.compress(row * rows) for _ in range(height // rows))
    body += deflate.compress(row * (height % rows)) + deflate.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b""))


def test_a_png_that_pil_refuses_as_a_bomb_is_not_decoded_by_another_reader(tmp_path):
    from PIL import Image as PILImage

    from ccmetrics.nuclei.io import read_monusac_masks

    side = int((2 * PILImage.MAX_IMAGE_PIXELS) ** 0.5) + 16  # past PIL's error threshold (twice its warning's)
    (tmp_path / "Epithelial").mkdir()
    _png_bomb(tmp_path / "Epithelial" / "mask.png", side, side)
    assert (tmp_path / "Epithelial" / "mask.png").stat().st_size < 2**20
    with pytest.raises(ValueError, match=r"mask\.png: PIL refuses to decode it as a possible decompression bomb"):
        read_monusac_masks(tmp_path)


@pytest.mark.slow
def test_a_zigzag_geojson_is_rasterised_in_memory_of_its_bounding_box(tmp_path):
    """10,000 edges, each as tall as the 2,000-row image: 2e7 scan-line crossings at once took over a GB."""
    n, height, width = 10_000, 2_000, 400
    xs = np.linspace(1, width - 1, n)
    ys = np.where(np.arange(n) % 2 == 0, 0.2, height - 0.2)
    ring = [[float(x), float(y)] for x, y in zip(xs, ys)] + [[width - 1.0, height + 5.0], [1.0, height + 5.0]]
    ring.append(ring[0])
    geometry = {"type": "Polygon", "coordinates": [ring]}
    path = tmp_path / "zigzag.geojson"
    path.write_text(json.dumps({"type": "Feature", "geometry": geometry, "properties": {}}))
    out = _capped(
        f"""
        import json
        from ccmetrics.nuclei.io import read_geojson
        try:
            ann = read_geojson({str(path)!r}, ({height}, {width}))
            print(json.dumps({{"pixels": int((ann.instances > 0).sum()), "n": ann.n_instances}}))
        except BaseException as e:
            print(json.dumps({{"error": type(e).__name__ + ": " + str(e)[:300]}}))
    """,
        cap=str(900 * 2**20),
    )
    assert "error" not in out, out
    assert out["n"] == 1
    # the even-odd fill of the ring, row by row (an independent count): crossings of each row's centre line
    rows = np.arange(height) + 0.5
    ring_a = np.array(ring[:-1])
    x0, y0 = ring_a[:, 0], ring_a[:, 1]
    x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
    expected = 0
    for y in rows:
        inside = (np.minimum(y0, y1) <= y) & (y < np.maximum(y0, y1))
        xs_cross = np.sort(x0[inside] + (y - y0[inside]) * (x1[inside] - x0[inside]) / (y1[inside] - y0[inside]))
        a, b = np.ceil(xs_cross[0::2] - 0.5), np.ceil(xs_cross[1::2] - 0.5)
        expected += int(np.clip(b, 0, width).sum() - np.clip(a, 0, width).sum())
    assert out["pixels"] == expected


def test_a_geojson_edge_at_1e308_is_refused_naming_the_coordinate(tmp_path):
    from ccmetrics.nuclei.io import read_geojson

    ring = [[1.0, 1.0], [1e308, 2.0], [3.0, 5.0], [1.0, 1.0]]
    path = tmp_path / "far.geojson"
    path.write_text(json.dumps({"type": "Feature", "id": "n1", "geometry": {"type": "Polygon", "coordinates": [ring]}}))
    with pytest.raises(ValueError) as caught:
        read_geojson(path, (10, 10))
    assert "features[0] (id 'n1'): coordinate x = 1e+308 of vertex 1 of ring 0 lies beyond ±9007199254740992 " in str(
        caught.value
    )


def test_report_max_memory_option_leaves_a_channel_out_with_its_reason(tmp_path, capsys):
    """``ccmetrics report --images DIR --max-memory SIZE``: a channel whose header says it needs more is not read and
    the page says why; without the option the same channel is drawn (the default: a share of the memory available).
    """
    from ccmetrics import evaluate_dataset
    from ccmetrics.cli import main
    from ccmetrics.report import write_report

    for sub in ("gt", "pred", "images"):
        (tmp_path / sub).mkdir()
    gt = np.zeros((24, 24, 8), np.uint8)
    gt[8:14, 8:14, 2:6] = 1
    save_image(tmp_path / "gt" / "a.nii.gz", gt, spacing=(2.0, 2.0, 3.0))
    save_image(tmp_path / "pred" / "a.nii.gz", np.roll(gt, 1, 0), spacing=(2.0, 2.0, 3.0))
    pet = np.where(gt > 0, 8.0, 1.0).astype(np.float32)
    save_image(tmp_path / "images" / "a_0000.nii.gz", pet, spacing=(2.0, 2.0, 3.0))
    evaluate_dataset(tmp_path / "gt", tmp_path / "pred", ["dice"], progress=False).write(tmp_path / "out", plots=False)
    need = 3 * pet.size * pet.itemsize  # what read_channel counts: the array, the reader's copy, a reoriented copy
    args = ["report", str(tmp_path / "out"), "--images", str(tmp_path / "images"), "--out"]
    assert main([*args, str(tmp_path / "small.html"), "--max-memory", str(need - 1)]) == 0
    page = (tmp_path / "small.html").read_text()
    assert "over the report&#39;s memory limit" in page and "--max-memory" in page
    assert main([*args, str(tmp_path / "default.html")]) == 0
    assert "memory limit" not in (tmp_path / "default.html").read_text()
    info = write_report(tmp_path / "out", tmp_path / "exact.html", images=tmp_path / "images", max_memory=need)
    assert info.n_on_image == 1 and info.channels == ["0000"]
    capsys.readouterr()
    assert main(["report", str(tmp_path / "out"), "--max-memory", "1G"]) == 2
    assert "--max-memory go with --images" in capsys.readouterr().err


def test_a_damaged_npz_is_refused_whichever_channel_is_read(tmp_path, gt):
    """The stream is read to the member's end, where zipfile checks the CRC: a changed byte in channel 0 is found
    when channel 0 is read (the reader used to stop after the last channel asked for), as np.load finds it."""
    stack = np.full((3, *SPATIAL), 0.25, np.float32)
    stack[2] = 0.75
    for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        path = tmp_path / f"case{compression}.npz"
        with zipfile.ZipFile(path, "w", compression) as archive:
            with archive.open("probabilities.npy", "w") as f:
                np.lib.format.write_array(f, stack)
            good = archive.getinfo("probabilities.npy").CRC
        damaged = stack.copy()
        damaged[0, 1, 2, 3] = 0.125
        with zipfile.ZipFile(path, "w", compression) as archive:
            with archive.open("probabilities.npy", "w") as f:
                np.lib.format.write_array(f, damaged)
            bad = archive.getinfo("probabilities.npy").CRC
        raw = path.read_bytes()
        path.write_bytes(raw.replace(bad.to_bytes(4, "little"), good.to_bytes(4, "little")))  # the old CRC kept
        with pytest.raises(zipfile.BadZipFile):
            with np.load(path) as held:
                held["probabilities"]
        for channel in (0, 1):
            with pytest.raises(ProbabilityError, match="Bad CRC-32"):
                read_probabilities(path, like=gt, channel=channel)


def test_an_npz_header_that_claims_more_than_its_entry_holds_is_refused_before_allocating(tmp_path, gt):
    """No max_bytes (the Python API's default): a header declaring 3.7 GiB over 400 bytes of data is refused from the
    zip entry's sizes, under a 1 GiB cap (the reader used to allocate first: a bare MemoryError)."""
    header = {"descr": "<f4", "fortran_order": False, "shape": (2, 1000, 1000, 1000)}
    with zipfile.ZipFile(tmp_path / "lie.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("probabilities.npy", "w") as f:
            np.lib.format.write_array_header_1_0(f, header)
            f.write(np.zeros(100, "<f4").tobytes())
    out = _capped(
        f"""
        import json, numpy as np
        from ccmetrics.formats.image import Image
        from ccmetrics.formats.probabilities import read_probabilities
        like = Image(np.broadcast_to(np.zeros((), np.uint8), (1000, 1000, 1000)), (1.0, 1.0, 1.0), np.eye(4))
        try:
            read_probabilities({str(tmp_path / "lie.npz")!r}, like=like, channel=1)
            print(json.dumps({{"read": True}}))
        except BaseException as e:
            print(json.dumps({{"error": type(e).__name__ + ": " + str(e)}}))
        """
    )
    assert out["error"].startswith("ProbabilityError: "), out
    assert (
        "declares 8,000,000,000 bytes (shape (2, 1000, 1000, 1000), float32), but its zip entry holds" in out["error"]
    )
