"""Campaigns that survive failure, tested with real faults: a worker killed by SIGKILL, a real segfault, a
real hang, a real Ctrl-C (SIGINT to the process group, as a terminal sends it), a parent killed with
SIGKILL, a Dask LocalCluster whose worker dies, and resumed runs compared bit for bit with uninterrupted ones.

The faults come from ``tests/faults/faulty_metrics.py``, a plugin metric that kills, crashes or hangs its
own process on the case whose lesion has a chosen voxel count; on every other region it computes Dice, so
its values are checked against the built-in Dice of the same run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ccmetrics import evaluate_dataset
from ccmetrics.campaign.dataset import CaseTask, EvalOptions, evaluate_task, failed_output
from ccmetrics.campaign.records import CaseRecord, RecordStore, decode_output, decode_tables, encode_output
from ccmetrics.campaign.scheduler import EvaluationInterrupted
from ccmetrics.formats.io import save_image

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

ROOT = Path(__file__).resolve().parents[2]
FAULTS = Path(__file__).resolve().parents[1] / "faults"
PLUGIN = FAULTS / "faulty_metrics.py"
sys.path.insert(0, str(FAULTS))

SHAPE = (40, 36, 12)
TABLES = ("per_case.csv", "per_component.csv")


def line(n, start=(2, 2, 2)):
    """A lesion of exactly n voxels: a straight run along axis 0 (n <= 30)."""
    x, y, z = start
    out = np.zeros(SHAPE, np.uint8)
    out[x : x + n, y, z] = 1
    return out


def make_case(rng, victim=None):
    """A GT with two or three lesions (sizes never a fault size) and a prediction that shifts, trims or misses them."""
    gt = np.zeros(SHAPE, np.uint8)
    gt[20:24, 20:25, 4:7] = 1  # 60 voxels
    gt[30:33, 5:8, 2:4] = 1  # 18 voxels
    if rng.random() < 0.5:
        gt[5:9, 28:32, 8:10] = 1  # 32 voxels
    if victim is not None:
        gt |= line(victim)
    pred = np.roll(gt, int(rng.integers(0, 2)), axis=0)
    pred[30:33, 5:8, 2:4] = rng.random() < 0.7
    pred[10:12, 10:12, 10] = rng.random() < 0.5  # false positive
    return gt, pred


def make_dataset(root, n, victims=None, seed=0):
    """``n`` cases (case_00, ...) as .nii.gz in root/gt and root/pred; ``victims``: {index: fault size}."""
    rng = np.random.default_rng(seed)
    for folder in ("gt", "pred"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(n):
        gt, pred = make_case(rng, (victims or {}).get(i))
        save_image(root / "gt" / f"case_{i:02d}.nii.gz", gt, spacing=(0.8, 0.8, 2.0))
        save_image(root / "pred" / f"case_{i:02d}.nii.gz", pred, spacing=(0.8, 0.8, 2.0))
    return root / "gt", root / "pred"


def cli(*args, env=None, **kwargs):
    full_env = {**os.environ, "CCM_FAULT_SLEEP": "0", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ccmetrics", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=full_env,
        **kwargs,
    )


def evaluate_args(gt, pred, out, *extra):
    common = ["--metrics", "dice,hd95,faulty,detection", "--plugin", PLUGIN, "--no-plots"]
    return ["evaluate", gt, pred, "--out", out, *common, "--bootstrap", "50", *extra]


def tables(out):
    return {name: (Path(out) / name).read_bytes() for name in TABLES}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("campaign")
    gt, pred = make_dataset(root, 10)
    reference = root / "reference"
    done = cli(*evaluate_args(gt, pred, reference))
    assert done.returncode == 0, done.stderr
    return gt, pred, reference


@pytest.fixture(scope="module", autouse=True)
def faults():
    """The fault plugin, registered in this process while this module's tests run (the reference runs
    compute "faulty" here), and unregistered after, so that no other test module sees it."""
    import faulty_metrics

    from ccmetrics.metrics import registry

    registry.register_metric("faulty", faulty_metrics.faulty, kind="overlap", replace=True)
    yield faulty_metrics
    registry.unregister("faulty")


# ---------------------------------------------------------------- records


def test_record_encoding_is_exact(tmp_path):
    rng = np.random.default_rng(3)
    gt, pred = make_case(rng)
    gt[0, 0, 0] = 1  # a one-voxel lesion: distances of odd floats
    options = EvalOptions(("dice", "nsd", "hd95", "assd", "pq", "lesion_dice", "detection"), spacing=(0.7, 0.9, 2.3))
    output = evaluate_task(CaseTask("c", gt, pred), options)
    back = decode_output(json.loads(json.dumps(encode_output(output))))
    pd.testing.assert_frame_equal(back["components"], output["components"].frame(), check_exact=True)
    for a, b in zip(back["rows"], output["rows"]):
        assert a.keys() == b.keys()
        for key in a:
            same = a[key] == b[key] or (a[key] != a[key] and b[key] != b[key])  # NaN equals NaN here
            plain = b[key].item() if isinstance(b[key], np.generic) else b[key]
            assert same and type(a[key]) is type(plain), key
    store = RecordStore(tmp_path)
    assert store.path("a/b c") != store.path("a_b_c")  # ids that sanitise alike keep distinct files


def test_tables_decoded_at_once_equal_each_decoded_and_concatenated():
    # the final tables are decoded once for the whole data set (decode_tables); they must equal what concatenating
    # each case's decoded table gives: dtypes (int, bool, str, float with NaN and infinities), column order, index
    rng = np.random.default_rng(5)
    options = EvalOptions(("dice", "hd95", "pq", "detection"), spacing=(0.7, 0.9, 2.3))
    outputs = []
    for i in range(6):
        gt, pred = make_case(rng)
        if i == 2:
            pred[:] = 0  # every lesion missed: infinite distances
        if i == 4:
            gt[:] = 0  # no lesion: an empty component table
        outputs.append(encode_output(evaluate_task(CaseTask(f"c{i}", gt, pred), options)))
    outputs.insert(3, encode_output(failed_output(CaseTask("bad", "no.nii.gz", None), options, "unreadable")))
    outputs = json.loads(json.dumps(outputs))  # as the records hold them
    # a run of tables with other columns in the middle (a component table whose case had classes, here faked)
    other = dict(outputs[1]["components"])
    other["columns"] = [*other["columns"], "extra"]
    other["dtypes"] = [*other["dtypes"], "int64"]
    other["data"] = [[*row, 7] for row in other["data"]]
    outputs[1] = {**outputs[1], "components": other}
    for key in ("components", "predictions"):
        tables = [o[key] for o in outputs]
        each = [decode_output(o)[key] for o in outputs]
        want = pd.concat([t for t in each if t is not None and len(t)], ignore_index=True)
        got = decode_tables(tables)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        assert list(got.dtypes.astype(str)) == list(want.dtypes.astype(str))
        assert got.columns.dtype == want.columns.dtype
    assert decode_tables([None, outputs[0]["components"] | {"data": []}]) is None


def test_text_columns_keep_their_dtype_whatever_class_is_empty():
    # a case whose class 2 has no predicted component beside class 1's one: pandas joins the text column gt_lesions
    # with the float64 of an empty list into object; the data set's tables hold it as text in every run, as they
    # do when no class is empty, and records that name it otherwise (a run of an earlier version) are read so too
    gt = np.zeros((20, 20, 20), np.uint8)
    gt[5, 5, 5] = 1
    text = str(pd.Series(["text"]).dtype)
    with_empty = evaluate_dataset({"c": (gt, gt.copy())}, None, ["detection"], classes=[1, 2], progress=False)
    alone = evaluate_dataset({"c": (gt, gt.copy())}, None, ["detection"], classes=[1], progress=False)
    for result in (with_empty, alone):
        assert str(result.per_prediction["gt_lesions"].dtype) == text
        assert result.per_prediction["gt_lesions"].tolist() == ["1"]
    table = encode_output(evaluate_task(CaseTask("c", gt, gt.copy()), EvalOptions(("detection",))))["predictions"]
    old = {**table, "dtypes": ["object" if c == "gt_lesions" else d for c, d in zip(table["columns"], table["dtypes"])]}
    for tables in ([old], [table, old], [old, table]):
        assert str(decode_tables(tables, text=["case", "gt_lesions"])["gt_lesions"].dtype) == text
    assert str(decode_tables([table, old])["gt_lesions"].dtype) == "object"  # (what pandas joins them to)


def test_a_resumed_run_keeps_text_columns_as_text_from_older_records(tmp_path):
    # records written by an earlier version may name a text column "object": a resume that takes them beside new
    # ones still gives the column as text, equal to the run that wrote them all
    gt = np.zeros((20, 20, 20), np.uint8)
    gt[5, 5, 5], gt[12:14, 12:14, 3] = 1, 1
    cases = {"a": (gt, gt.copy()), "b": (gt, np.roll(gt, 1, axis=0))}
    first = evaluate_dataset(cases, None, ["detection"], progress=False, out_dir=tmp_path)
    store = RecordStore(tmp_path)
    record = store.read_all()["a"]
    table = record.output["predictions"]
    table["dtypes"] = ["object" if c == "gt_lesions" else d for c, d in zip(table["columns"], table["dtypes"])]
    store.write(record)
    again = evaluate_dataset(cases, None, ["detection"], progress=False, out_dir=tmp_path, resume=True)
    assert again.run.reused == 2
    pd.testing.assert_frame_equal(again.per_prediction, first.per_prediction, check_exact=True)


def test_a_record_whose_table_is_not_whole_is_not_taken(tmp_path):
    # a record holds its output encoded and is decoded only when the tables are made: a table of the wrong shape
    # (written by a bug, or edited with its checksum made again) must be found when the record is read
    options = EvalOptions(("dice",))
    gt, pred = make_case(np.random.default_rng(8))
    good = encode_output(evaluate_task(CaseTask("a", gt, pred), options))
    store = RecordStore(tmp_path)
    store.write(CaseRecord("a", {"gt": None}, good))
    short = {**good, "components": {**good["components"], "data": [row[:-1] for row in good["components"]["data"]]}}
    store.write(CaseRecord("b", {"gt": None}, short))
    store.write(CaseRecord("c", {"gt": None}, {**good, "predictions": {"columns": ["x"]}}))
    records, problems = store.scan()
    assert sorted(records) == ["a"]
    assert sorted((p.case, p.reason.split(":")[0]) for p in problems) == [
        ("b", "not a whole record (TypeError"),
        ("c", "not a whole record (TypeError"),
    ]


def test_non_empty_out_folder_names_both_choices(data, tmp_path):
    gt, pred, reference = data
    done = cli(*evaluate_args(gt, pred, reference))
    assert done.returncode == 2
    assert "--resume" in done.stderr and "--overwrite" in done.stderr
    both = cli(*evaluate_args(gt, pred, tmp_path / "x", "--resume", "--overwrite"))
    assert both.returncode == 2 and "not both" in both.stderr
    with pytest.raises(ValueError, match="resume=True"):
        evaluate_dataset(gt, pred, ["dice"], out_dir=reference, progress=False)


def test_uninterrupted_run_keeps_one_record_per_case(data):
    gt, pred, reference = data
    records = RecordStore(reference).read_all()
    per_case = pd.read_csv(reference / "per_case.csv", dtype={"case": str})
    assert sorted(records) == sorted(per_case["case"]) and len(records) == 10
    assert (per_case["status"] != "error").all()
    assert np.array_equal(per_case["faulty"], per_case["dice"])  # the plugin computes Dice off its victims
    assert np.array_equal(per_case["cc_faulty"], per_case["cc_dice"])
    summary = json.loads((reference / "summary.json").read_text())
    assert summary["run"] == {
        "complete": True,
        "reused": 0,
        "evaluated": 10,
        "reasons": {},
        "pending": [],
        "dropped_records": [],
    }


# ---------------------------------------------------------------- crashes are rows


def test_killed_and_crashed_workers_cost_only_their_case(faults, tmp_path, monkeypatch):
    victims = {2: faults.KILL, 5: faults.SEGV, 7: faults.ONCE}
    gt, pred = make_dataset(tmp_path, 9, victims, seed=1)
    out = tmp_path / "out"
    done = cli(*evaluate_args(gt, pred, out, "--workers", "2"), env={"CCM_FAULT_DIR": str(tmp_path)})
    assert done.returncode == 1, done.stderr  # a case failed; the run finished
    per_case = pd.read_csv(out / "per_case.csv", dtype={"case": str}).set_index("case")
    assert len(per_case) == 9
    killed, crashed = per_case.loc["case_02"], per_case.loc["case_05"]
    assert killed["status"] == "error" and "killed by signal 9 (SIGKILL) — out of memory?" in killed["error"]
    assert "twice" in killed["error"]
    assert crashed["status"] == "error" and "signal 11 (SIGSEGV)" in crashed["error"]
    assert "trying this case again, alone" in done.stderr
    ok = per_case.drop(index=["case_02", "case_05"])
    assert (ok["status"] == "ok").all()  # case_07 died once, then ran alone and succeeded
    assert (tmp_path / "once-19").exists()
    # every surviving case has the values of an in-process run of the same files
    monkeypatch.setenv("CCM_FAULT_DIR", str(tmp_path))  # the "once" marker exists: no kill here
    reference = evaluate_dataset(
        {c: (gt / f"{c}.nii.gz", pred / f"{c}.nii.gz") for c in ok.index},
        metrics=["dice", "hd95", "faulty", "detection"],
        progress=False,
    ).per_case.set_index("case")
    for column in ("dice", "cc_dice", "hd95", "cc_hd95", "faulty", "cc_faulty", "sensitivity"):
        assert np.array_equal(ok[column].to_numpy(float), reference[column].to_numpy(float)), column
    # the failed cases are recorded as worth another try
    records = RecordStore(out).read_all()
    assert records["case_02"].retry and records["case_05"].retry and not records["case_00"].retry


def test_a_hanging_case_is_stopped_by_the_case_timeout(faults, tmp_path):
    gt, pred = make_dataset(tmp_path, 3, {1: faults.HANG}, seed=2)
    out = tmp_path / "out"
    start = time.monotonic()
    done = cli(*evaluate_args(gt, pred, out, "--case-timeout", "8"))
    assert time.monotonic() - start < 60
    assert done.returncode == 1, done.stderr
    per_case = pd.read_csv(out / "per_case.csv", dtype={"case": str}).set_index("case")
    assert per_case.loc["case_01", "status"] == "error"
    assert "case time-out (8 s)" in per_case.loc["case_01", "error"]
    assert (per_case.drop(index="case_01")["status"] == "ok").all()


# ---------------------------------------------------------------- Ctrl-C, kills and resume


def start_run(gt, pred, out, *extra, sleep="0.05"):
    env = {**os.environ, "CCM_FAULT_SLEEP": sleep}
    args = [sys.executable, "-m", "ccmetrics", *map(str, evaluate_args(gt, pred, out, *extra))]
    return subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def wait_for_records(out, n, process, limit=120):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if len(list((Path(out) / "cases").glob("*.json"))) >= n:
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} records after {limit} s")


def test_ctrl_c_then_kill_then_resume_equals_an_uninterrupted_run(data, tmp_path):
    gt, pred, reference = data
    out = tmp_path / "out"
    # 1. Ctrl-C, as a terminal sends it: SIGINT to the whole process group (workers included)
    run = start_run(gt, pred, out, "--workers", "2")
    wait_for_records(out, 2, run)
    os.killpg(run.pid, signal.SIGINT)
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "--resume" in stderr and "not evaluated" in stderr
    finished = RecordStore(out).read_all()
    partial = pd.read_csv(out / "per_case.csv", dtype={"case": str})
    assert 2 <= len(finished) < 10 and sorted(partial["case"]) == sorted(finished)
    assert json.loads((out / "summary.json").read_text())["run"]["complete"] is False
    # 2. resumed, then killed outright (SIGKILL to parent and workers: no chance to clean up)
    run = start_run(gt, pred, out, "--workers", "2", "--resume")
    wait_for_records(out, len(finished) + 2, run)
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    kept = RecordStore(out).read_all()
    # a SIGKILL can land in the middle of a record's write: its temporary file may stay until the next run
    assert len(kept) >= len(finished) + 2
    # 3. resumed to the end: the tables equal those of the uninterrupted run, byte for byte, and the temporary
    # files of the killed writes are gone
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 0, done.stderr
    assert not [p.name for p in (out / "cases").iterdir() if ".tmp" in p.name]
    assert f"{len(kept)} case(s) kept, {10 - len(kept)} to evaluate" in done.stderr
    assert tables(out) == tables(reference)
    run_info = json.loads((out / "summary.json").read_text())["run"]
    assert run_info["complete"] and run_info["reused"] == len(kept)
    ref_summary = json.loads((reference / "summary.json").read_text())["summary"]
    assert json.loads((out / "summary.json").read_text())["summary"] == ref_summary


def test_serial_ctrl_c_in_python_keeps_the_finished_cases(data, tmp_path):
    gt, pred, _ = data
    code = (
        "import os, signal, threading, sys\n"
        f"sys.path.insert(0, {str(FAULTS)!r})\n"
        "import faulty_metrics\n"
        "from ccmetrics import evaluate_dataset\n"
        "from ccmetrics.campaign import EvaluationInterrupted\n"
        "threading.Timer(2.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        f"    evaluate_dataset({str(gt)!r}, {str(pred)!r}, ['dice', 'faulty'], out_dir={str(tmp_path / 'o')!r},"
        " progress=False)\n"
        "except EvaluationInterrupted as stop:\n"
        "    print(len(stop.result.per_case), len(stop.result.run.pending))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "CCM_FAULT_SLEEP": "0.2"}
    )
    finished, pending = map(int, done.stdout.split())
    assert finished + pending == 10 and 1 <= finished < 10, done.stderr
    assert len(RecordStore(tmp_path / "o").read_all()) == finished


def test_resume_after_adding_a_case_and_after_changing_an_option(tmp_path):
    gt, pred = make_dataset(tmp_path, 4, seed=5)
    out = tmp_path / "out"
    assert cli(*evaluate_args(gt, pred, out)).returncode == 0
    # a case added to both folders: only it is evaluated
    rng = np.random.default_rng(9)
    new_gt, new_pred = make_case(rng)
    save_image(gt / "case_09.nii.gz", new_gt, spacing=(0.8, 0.8, 2.0))
    save_image(pred / "case_09.nii.gz", new_pred, spacing=(0.8, 0.8, 2.0))
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 0, done.stderr
    assert "4 case(s) kept, 1 to evaluate (1 new)" in done.stderr
    fresh = tmp_path / "fresh"
    assert cli(*evaluate_args(gt, pred, fresh)).returncode == 0
    assert tables(out) == tables(fresh)
    # a changed prediction file: that case only
    changed_pred = np.zeros(SHAPE, np.uint8)
    save_image(pred / "case_01.nii.gz", changed_pred, spacing=(0.8, 0.8, 2.0))
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert "4 case(s) kept, 1 to evaluate (1 changed)" in done.stderr
    assert "case_01: prediction file changed" in done.stderr
    per_case = pd.read_csv(out / "per_case.csv", dtype={"case": str}).set_index("case")
    assert per_case.loc["case_01", "dice"] == 0.0
    # a changed option: every case, and the tables equal a fresh run with it
    done = cli(*evaluate_args(gt, pred, out, "--resume", "--connectivity", "6"))
    assert "0 case(s) kept, 5 to evaluate (5 changed)" in done.stderr or "5 changed" in done.stderr, done.stderr
    assert "option connectivity changed" in done.stderr
    fresh6 = tmp_path / "fresh6"
    assert cli(*evaluate_args(gt, pred, fresh6, "--connectivity", "6")).returncode == 0
    assert tables(out) == tables(fresh6)
    # a case removed from the folders: its record goes, and the output says so
    (gt / "case_03.nii.gz").unlink()
    (pred / "case_03.nii.gz").unlink()
    done = cli(*evaluate_args(gt, pred, out, "--resume", "--connectivity", "6"))
    assert "no longer in the folders removed: case_03" in done.stderr
    assert "case_03" not in pd.read_csv(out / "per_case.csv", dtype={"case": str})["case"].tolist()


def test_overwrite_starts_again(data, tmp_path):
    gt, pred, reference = data
    out = tmp_path / "out"
    assert cli(*evaluate_args(gt, pred, out, "--metrics", "dice")).returncode == 0
    (out / "notes.txt").write_text("mine")
    done = cli(*evaluate_args(gt, pred, out, "--overwrite"))
    assert done.returncode == 0 and tables(out) == tables(reference)
    assert (out / "notes.txt").read_text() == "mine"  # only what ccmetrics wrote is replaced


# ---------------------------------------------------------------- Dask


def test_dask_cluster_losing_a_worker_gives_an_error_row(faults, tmp_path, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    import dask

    gt, pred = make_dataset(tmp_path, 5, {3: faults.KILL}, seed=4)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("CCM_FAULT_SLEEP", "0")
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        result = evaluate_dataset(gt, pred, ["dice", "faulty"], client=client, out_dir=tmp_path / "o", progress=False)
    per_case = result.per_case.set_index("case")
    assert per_case.loc["case_03", "status"] == "error"
    assert "KilledWorker" in per_case.loc["case_03", "error"]
    ok = per_case.drop(index="case_03")
    assert (ok["status"] == "ok").all() and len(ok) == 4
    assert np.array_equal(ok["faulty"], ok["dice"])
    assert len(RecordStore(tmp_path / "o").read_all()) == 5


def test_evaluation_interrupted_is_a_keyboard_interrupt():
    assert issubclass(EvaluationInterrupted, KeyboardInterrupt)


# ---------------------------------------------------------------- memory


def test_a_case_over_the_memory_limit_is_refused_from_its_header(tmp_path):
    """Honest headers of a 2000³ case (sparse files: the full size, no disk blocks): refused before reading."""
    gt, pred = make_dataset(tmp_path, 2, seed=6)
    import nibabel as nib

    for folder in (gt, pred):
        header = nib.Nifti1Header()
        header.set_data_shape((2000, 2000, 2000))
        header.set_data_dtype(np.uint8)
        path = folder / "huge.nii"
        with open(path, "wb") as f:
            f.write(header.binaryblock + b"\0" * 4)  # vox_offset 352
            f.truncate(352 + 2000**3)
    out = tmp_path / "out"
    code = (
        "import resource, subprocess, sys\n"
        f"done = subprocess.run({[sys.executable, '-m', 'ccmetrics', *map(str, evaluate_args(gt, pred, out))]!r},"
        " capture_output=True, text=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stderr.write(done.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    returncode, peak_kib = map(int, done.stdout.split())
    assert returncode == 1, done.stderr
    assert peak_kib < 1_500_000  # reading one of the two files alone would take 8 GB
    per_case = pd.read_csv(out / "per_case.csv", dtype={"case": str}).set_index("case")
    error = per_case.loc["huge", "error"]
    assert per_case.loc["huge", "status"] == "error" and "--max-memory" in error and "by its header" in error
    assert (per_case.drop(index="huge")["status"] == "ok").all()
    # a limit given by hand refuses the small cases too, and says how much they need
    small = evaluate_dataset(gt, pred, ["dice"], max_memory="1K", progress=False).per_case.set_index("case")
    assert small["status"].eq("error").all() and small.loc["case_00", "error"].startswith("needs at least about ")


def test_the_memory_limit_is_checked_again_once_the_foreground_is_counted(tmp_path):
    """Memory grows with the foreground, which only the voxels tell: a dense case passes the header check
    (no foreground assumed), then is refused once read, before the engine allocates; a sparse one runs."""
    from ccmetrics.engine.memory import BYTES_PER_FOREGROUND_VOXEL

    dense = np.zeros((200, 200, 100), np.uint8)
    dense[:, :100] = 1  # 2M foreground voxels in each mask
    sparse = np.zeros_like(dense)
    sparse[10:14, 10:14, 10:14] = 1
    limit = 600 * 2**20
    assert 4 * 10**6 * BYTES_PER_FOREGROUND_VOXEL > limit  # the dense case's estimate is over the limit
    result = evaluate_dataset(
        {"dense": (dense, dense), "sparse": (sparse, sparse)},
        metrics=["dice"],
        max_memory="600M",
        out_dir=tmp_path,
        progress=False,
    ).per_case.set_index("case")
    assert result.loc["dense", "status"] == "error"
    assert "for its 4000000 foreground voxels" in result.loc["dense", "error"]
    assert result.loc["sparse", "status"] == "ok" and result.loc["sparse", "dice"] == 1.0
    assert RecordStore(tmp_path).read_all()["dense"].retry  # a larger limit next time: tried again on resume


def test_a_lying_header_is_an_error_row_without_reading_gigabytes(tmp_path):
    gt, pred = make_dataset(tmp_path, 2, seed=7)
    import nibabel as nib

    header = nib.Nifti1Header()
    header.set_data_shape((1300, 1300, 1300))
    header.set_data_dtype(np.uint8)
    (gt / "liar.nii").write_bytes(header.binaryblock + b"\0" * 4 + b"\1" * 1000)  # claims 2.2 GB, holds 1 kB
    (pred / "liar.nii").write_bytes((gt / "liar.nii").read_bytes())
    result = evaluate_dataset(gt, pred, ["dice"], progress=False).per_case.set_index("case")
    assert result.loc["liar", "status"] == "error"
    assert "1300" in result.loc["liar", "error"] or "bytes" in result.loc["liar", "error"]
    assert (result.drop(index="liar")["status"] == "ok").all()


def test_large_jobs_run_with_fewer_beside_them(faults):
    """The scheduler of the worker processes: a job larger than the budget's share waits for room."""
    from ccmetrics.campaign._workers import Job, run_jobs

    # a ends well before b, so that the big job meets a running job (b) and must wait: the note is then due
    # whatever the machine's speed (if a and b ended together, big would start alone without waiting)
    jobs = [Job("a", ("a", 0.1), 1), Job("b", ("b", 1.5), 1), Job("big", "big", 3), Job("c", "c", 1), Job("d", "d", 1)]
    done, notes = {}, []
    run_jobs(
        jobs,
        faults.timed_sleep,
        0.4,
        workers=2,
        on_done=lambda job, result: done.__setitem__(result[0], result[1:]),
        on_failed=lambda job, message: pytest.fail(message),
        note=notes.append,
        budget_bytes=3,
    )
    assert sorted(done) == ["a", "b", "big", "c", "d"]
    start, end = done["big"]
    for name in ("a", "b", "c", "d"):
        other_start, other_end = done[name]
        assert other_end <= start or other_start >= end, f"{name} ran beside the big job"
    assert any("big: needs about" in n and "fewer cases run beside it" in n for n in notes)
