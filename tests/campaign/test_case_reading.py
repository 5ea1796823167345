"""A data set's per-case read: masks come C-ordered from the reader (``_load_image(..., c_order=True)``), with
nibabel's values and dtype, whatever the file holds; and worker processes share the CPUs."""

import dataclasses
import gzip
import os
import sys

import nibabel as nib
import numpy as np
import pytest

from ccmetrics._inputs import SPARSE_COPY_FRACTION
from ccmetrics.formats.image import ImageReadError
from ccmetrics.formats.io import _gunzip_array, _load_image, load_image


def _write(path, array, slope=None):
    img = nib.Nifti1Image(array, np.diag([2.0, 2.0, 3.0, 1.0]), dtype=array.dtype)
    if slope is not None:
        img.header.set_slope_inter(slope, 1.0)
    nib.save(img, str(path))
    return path


def _mask(shape, fraction, seed=0, high=2):
    rng = np.random.default_rng(seed)
    return ((rng.random(shape) < fraction) * rng.integers(1, high, shape)).astype(np.uint8)


def _assert_c_read(path):
    want = np.asanyarray(nib.load(str(path), mmap=False).dataobj)
    got = _load_image(path, c_order=True).array
    want = want.reshape(got.shape)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.flags.writeable
    plain = load_image(path).array  # the public reader keeps the file's (Fortran) order
    assert plain.flags.f_contiguous or plain.ndim < 2 or plain.size <= 1
    return got


@pytest.mark.parametrize("shape", [(3, 1, 1), (31, 17), (40, 30, 20), (9, 8, 7, 1), (200, 180, 100)])
@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.5])
def test_c_ordered_read_equals_nibabel(tmp_path, shape, fraction):
    got = _assert_c_read(_write(tmp_path / "m.nii.gz", _mask(shape, fraction)))
    if fraction < SPARSE_COPY_FRACTION and np.prod(shape) > 1:
        assert got.flags.c_contiguous  # sparse: C-ordered at once


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.float32])
def test_c_ordered_read_other_dtypes_and_labels(tmp_path, dtype):
    array = _mask((60, 50, 40), 0.02, seed=3, high=200).astype(dtype)  # label values, not only 0/1
    if np.dtype(dtype) == np.int8:
        array[array > 0] = -array[array > 0] // 2 - 1  # negative labels too
    got = _assert_c_read(_write(tmp_path / "l.nii.gz", array))
    assert got.flags.c_contiguous == (np.dtype(dtype).itemsize == 1)


def test_c_ordered_read_turns_dense_midway(tmp_path):
    # sparse in the first MiBs, dense afterwards: the voxels kept so far go into the Fortran-ordered array
    array = np.zeros((160, 160, 120), np.uint8)
    array[:, :, 80:] = 1
    array[5, 7, 3] = array[100, 2, 10] = 1
    got = _assert_c_read(_write(tmp_path / "d.nii.gz", array))
    assert got.flags.f_contiguous


def test_c_ordered_read_scaled_file(tmp_path):
    got = _assert_c_read(_write(tmp_path / "s.nii.gz", _mask((30, 20, 10), 0.05), slope=0.5))
    assert got.dtype == np.float64


def test_c_ordered_read_of_several_members_and_cut_stream(tmp_path):
    array = _mask((80, 70, 60), 0.02, seed=5)
    raw = _write(tmp_path / "x.nii", array).read_bytes()
    cuts = [0, 100, 352, 353, 90000, len(raw)]
    path = tmp_path / "many.nii.gz"
    path.write_bytes(b"".join(gzip.compress(raw[a:b]) for a, b in zip(cuts, cuts[1:])))
    _assert_c_read(path)
    whole = gzip.compress(raw)
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ImageReadError):
        _load_image(path, c_order=True)
    with pytest.raises(ImageReadError):  # the fast path itself, asked for more voxels than the stream holds
        _gunzip_array(str(tmp_path / "many.nii.gz"), (80, 70, 61), np.dtype(np.uint8), 352, c_order=True)


def test_workers_get_a_share_of_the_cpus(monkeypatch):
    from ccmetrics.campaign import _workers

    monkeypatch.setattr(_workers, "_cpus", lambda: 2)
    assert _workers._share(2) == 1 and _workers._share(1) == 2 and _workers._share(4) == 1
    monkeypatch.delenv(_workers.THREADS_VARIABLE, raising=False)
    assert _workers.worker_threads() is None
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the caller's setting is kept
    # as in a new worker, where numba is not loaded yet: here, numba's threads would be launched with 1 and clash
    # with this process's later compilations (numba refuses another NUMBA_NUM_THREADS once its threads run)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    _workers._share_threads(1)
    assert _workers.worker_threads() == 1
    assert os.environ["NUMBA_NUM_THREADS"] == "1" and os.environ["OMP_NUM_THREADS"] == "3"


def test_engine_threads_in_a_worker(monkeypatch):
    from ccmetrics.campaign import _workers
    from ccmetrics.campaign.dataset import EvalOptions, _engine_of
    from ccmetrics.engine.config import EngineConfig

    options = EvalOptions.build(["dice"])
    monkeypatch.delenv(_workers.THREADS_VARIABLE, raising=False)
    assert _engine_of(options) is options.engine  # not in a worker: the caller's configuration
    monkeypatch.setenv(_workers.THREADS_VARIABLE, "1")
    assert _engine_of(options).threads == 1
    chosen = dataclasses.replace(options, engine=EngineConfig(threads=3))
    assert _engine_of(chosen).threads == 3  # the caller's choice stands


def test_worker_processes_start_with_their_share_in_their_environment(monkeypatch):
    from ccmetrics.campaign import _workers

    names = ["CCMETRICS_WORKER_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"]
    for name in names:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # the caller's own setting
    monkeypatch.setattr(_workers, "_cpus", lambda: 4)
    seen, failed = {}, []
    _workers.run_jobs(  # os.getenv(name, None) in a worker: what its environment says
        [_workers.Job(name, name) for name in names],
        os.getenv,
        None,
        workers=2,
        on_done=lambda job, value: seen.__setitem__(job.name, value),
        on_failed=lambda job, message: failed.append(message),
    )
    assert not failed
    assert seen == {
        "CCMETRICS_WORKER_THREADS": "2",
        "NUMBA_NUM_THREADS": "2",
        "OPENBLAS_NUM_THREADS": "2",
        "OMP_NUM_THREADS": "7",
    }
    assert [os.environ.get(name) for name in names] == [None, None, None, "7"]  # this process's unchanged
