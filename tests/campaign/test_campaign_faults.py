"""Campaigns keep every promise under real faults (issue 27), each tested with the fault itself:

* a worker process killed by SIGKILL while it waits for its next case (the parent stopped with SIGSTOP to make
  the window certain);
* SIGINT and SIGTERM while the tables and plots are written, and a second Ctrl-C while a stopped run writes the
  tables of its finished cases (a test plugin, ``tests/faults/slow_final_phase.py``, slows that step);
* a second process on the same output folder (a second ``--resume``, an ``--overwrite``), and a first run
  killed by SIGKILL, whose lock the kernel releases;
* a narrower ``--resume`` after a run that wrote more files;
* a real full disk (a small tmpfs, where this machine lets the tests mount one), during the cases and during the
  final tables;
* a record edited by hand that is still valid JSON;
* the scheduler's own failures: a job function that raises, a payload that cannot be pickled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_campaign import (  # the shared fixtures and helpers of the campaign tests
    FAULTS,
    ROOT,
    cli,
    data,  # a fixture
    evaluate_args,
    faults,  # a fixture
    make_dataset,
    tables,
    wait_for_records,
)

from ccmetrics import DatasetResult, schema
from ccmetrics.campaign._workers import Job, run_jobs
from ccmetrics.campaign.records import RecordStore

pytestmark = pytest.mark.slow  # real processes or whole commands: left out by pytest -m 'not slow'

SLOW = FAULTS / "slow_final_phase.py"


def run_in_background(args, env=None):
    """``python -m ccmetrics ARGS`` in its own session (its own process group), not waited for."""
    full_env = {**os.environ, "CCM_FAULT_SLEEP": "0", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "ccmetrics", *map(str, args)],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(path, process, limit=120):
    start = time.monotonic()
    while not Path(path).exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() - start < limit, f"{path} did not appear in {limit} s"
        time.sleep(0.02)


def worker_pids(parent):
    """The worker processes of a run (``multiprocessing`` spawn children of ``parent``)."""
    pids = []
    for task in Path(f"/proc/{parent}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"spawn_main" in cmdline:
                pids.append(int(child))
    return pids


def state(pid):
    """The process state letter of /proc/PID/stat (R running, S sleeping, T stopped, Z zombie)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def with_plots(args):
    return [a for a in args if a != "--no-plots"]


# ---------------------------------------------------------------- 1. a worker that dies while idle


def test_a_worker_killed_while_waiting_for_its_next_case_costs_nothing(data):
    gt, pred, reference = data
    out = Path(str(reference) + f"-idle-{uuid.uuid4().hex[:6]}")
    run = run_in_background(evaluate_args(gt, pred, out, "--workers", "2"), env={"CCM_FAULT_SLEEP": "0.05"})
    try:
        wait_for_records(out, 2, run)
        os.kill(run.pid, signal.SIGSTOP)  # the parent cannot hand out the next case now
        deadline = time.monotonic() + 30
        workers = worker_pids(run.pid)
        while time.monotonic() < deadline and (len(workers) < 2 or any(state(p) != "S" for p in workers)):
            time.sleep(0.2)  # each worker finishes its case, sends the result and waits for the next
            workers = worker_pids(run.pid)
        time.sleep(1.0)
        assert len(workers) == 2 and all(state(p) == "S" for p in workers)
        for pid in workers:  # both idle workers die, as the out-of-memory killer may pick them
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
    finally:
        os.kill(run.pid, signal.SIGCONT)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stderr
    assert "Broken pipe" not in stderr and "Traceback" not in stderr
    assert "a worker process died while waiting for a case (worker killed by signal 9 (SIGKILL)" in stderr
    assert tables(out) == tables(reference)  # every case, once, with the values of an undisturbed run


def test_a_job_that_raises_or_cannot_be_sent_fails_alone():
    import faulty_metrics

    done, failed = {}, {}
    jobs = [Job("a", ("a", 0.01)), Job("boom", ("boom", -1.0)), Job("lambda", lambda: None), Job("b", ("b", 0.01))]
    run_jobs(
        jobs,
        faulty_metrics.timed_sleep,
        0.0,
        workers=2,
        on_done=lambda job, result: done.setdefault(job.name, result),
        on_failed=lambda job, message: failed.setdefault(job.name, message),
        note=lambda text: None,
    )
    assert sorted(done) == ["a", "b"]
    assert failed["boom"].startswith("raised in its worker process: ValueError: sleep length must be non-negative")
    assert failed["lambda"].startswith("cannot be sent to a worker process:")


def test_a_freed_worker_takes_its_next_case_before_the_result_is_recorded(tmp_path):
    # the parent records a result (decoding, writing, fsync) while the process that sent it computes its next case:
    # here the second job's file appears while the first result's callback waits, which it could not before
    import faulty_metrics

    started_meanwhile = []

    def on_done(job, result):
        if job.name == "first":
            marker, deadline = tmp_path / "second", time.monotonic() + 20
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            started_meanwhile.append(marker.exists())

    run_jobs(
        [Job("first", "first"), Job("second", "second")],
        faulty_metrics.touch,
        str(tmp_path),
        workers=1,
        on_done=on_done,
        on_failed=lambda job, message: pytest.fail(message),
        note=lambda text: None,
    )
    assert started_meanwhile == [True]


# ---------------------------------------------------------------- 2. signals in the final phase


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_tables_are_written_stops_cleanly(data, tmp_path, signum):
    gt, pred, reference = data
    out, marker = tmp_path / "out", tmp_path / "plotting"
    args = with_plots(evaluate_args(gt, pred, out, "--plugin", SLOW))
    run = run_in_background(args, env={"CCM_SLOW_PLOTS": "60", "CCM_FINAL_MARKER": str(marker)})
    wait_for(marker, run)  # every case done, tables written, the plots about to be drawn
    os.killpg(run.pid, signum)
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum], stderr
    assert "Traceback" not in stderr
    assert "Stopped while writing the tables: 10 case(s) finished and kept" in stderr
    assert "--resume" in stderr.splitlines()[-1]
    assert json.loads((out / "manifest.json").read_text())["state"] == "writing"
    with pytest.raises(ValueError, match="incomplete: the run writing them was stopped.*resume"):
        DatasetResult.read(out)
    report = cli("report", out)
    assert report.returncode == 2 and "--resume" in report.stderr
    again = cli(*with_plots(evaluate_args(gt, pred, out, "--resume")))
    assert again.returncode == 0, again.stderr
    assert "10 case(s) kept, 0 to evaluate" in again.stderr
    assert tables(out) == tables(reference)
    assert len(DatasetResult.read(out).per_case) == 10


def test_a_stopped_resume_never_leaves_tables_of_two_runs(tmp_path):
    """The issue's case: a run of 4 cases, 2 cases added, the resume stopped while writing: a reader must not
    take the new per_case.csv beside the old summary.json."""
    gt, pred = make_dataset(tmp_path, 6, seed=11)
    hidden = tmp_path / "later"
    hidden.mkdir()
    for folder in (gt, pred):
        for name in ("case_04.nii.gz", "case_05.nii.gz"):
            (hidden / folder.name).mkdir(exist_ok=True)
            shutil.move(folder / name, hidden / folder.name / name)
    out = tmp_path / "out"
    assert cli(*with_plots(evaluate_args(gt, pred, out))).returncode == 0
    assert len(DatasetResult.read(out).per_case) == 4
    for folder in (gt, pred):
        for name in ("case_04.nii.gz", "case_05.nii.gz"):
            shutil.move(hidden / folder.name / name, folder / name)
    marker = tmp_path / "plotting"
    args = with_plots(evaluate_args(gt, pred, out, "--resume", "--plugin", SLOW))
    run = run_in_background(args, env={"CCM_SLOW_PLOTS": "60", "CCM_FINAL_MARKER": str(marker)})
    wait_for(marker, run)
    os.killpg(run.pid, signal.SIGKILL)  # no chance to clean up at all
    run.communicate(timeout=60)
    assert len(pd.read_csv(out / "per_case.csv")) == 6  # the new table is there ...
    with pytest.raises(ValueError, match="incomplete"):  # ... and is not taken beside the old files
        DatasetResult.read(out)
    assert cli(*with_plots(evaluate_args(gt, pred, out, "--resume"))).returncode == 0
    result = DatasetResult.read(out)
    assert len(result.per_case) == 6 and result.saved["counts"]["cases"] == 6


def test_a_second_ctrl_c_while_the_finished_cases_are_written(data, tmp_path):
    gt, pred, reference = data
    out, marker = tmp_path / "out", tmp_path / "writing"
    args = evaluate_args(gt, pred, out, "--workers", "2", "--plugin", SLOW)
    run = run_in_background(args, env={"CCM_FAULT_SLEEP": "0.05", "CCM_SLOW_WRITE": "60", "CCM_FINAL_MARKER": marker})
    wait_for_records(out, 2, run)
    os.killpg(run.pid, signal.SIGINT)  # the first Ctrl-C: the run stops and writes its finished cases' tables
    wait_for(marker, run)
    os.killpg(run.pid, signal.SIGINT)  # the second, while they are written
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "Stopped again while writing the tables of the finished cases: not written" in stderr
    assert "--resume" in stderr
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 0, done.stderr
    assert tables(out) == tables(reference)


# ---------------------------------------------------------------- 3. one run per output folder


def test_a_second_run_into_the_same_folder_is_refused_and_a_killed_run_leaves_no_lock(data, tmp_path):
    gt, pred, reference = data
    out = tmp_path / "out"
    first = run_in_background(evaluate_args(gt, pred, out), env={"CCM_FAULT_SLEEP": "0.3"})
    try:
        wait_for_records(out, 1, first)
        second = cli(*evaluate_args(gt, pred, out, "--resume"))
        assert second.returncode == 2
        assert f"another ccmetrics run (pid {first.pid}, started " in second.stderr
        assert "is writing into" in second.stderr and "--out" in second.stderr
        kept = len(RecordStore(out).read_all())
        overwrite = cli(*evaluate_args(gt, pred, out, "--overwrite"))
        assert overwrite.returncode == 2 and f"pid {first.pid}" in overwrite.stderr
        assert len(RecordStore(out).read_all()) >= kept  # nothing of the live run removed
        assert first.poll() is None
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the kernel releases its lock
        first.communicate(timeout=60)
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 0, done.stderr
    assert tables(out) == tables(reference)


def test_refused_input_leaves_no_folder_behind(tmp_path):
    out = tmp_path / "out"
    done = cli("evaluate", tmp_path / "nowhere", tmp_path / "nowhere", "--out", out, "--quiet")
    assert done.returncode == 2 and not out.exists()


# ---------------------------------------------------------------- 4. a narrower resume


def test_a_narrower_resume_removes_the_files_it_does_not_produce(tmp_path):
    gt, pred = make_dataset(tmp_path, 4, seed=7)
    out = tmp_path / "out"
    wide = ["evaluate", gt, pred, "--out", out, "--metrics", "dice,nsd,detection", "--nnunet-summary", "--quiet"]
    assert cli(*wide, "--bootstrap", "50").returncode == 0
    assert cli("report", out).returncode == 0
    before = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {"per_prediction.csv", "nnunet_summary.json", "report.html", "plots/standard_vs_cc_nsd.png"} <= before
    figures = [p.name for p in (out / "plots").iterdir()]
    assert all(schema.PLOT_FILE.fullmatch(name) for name in figures), figures  # how they are told apart
    for mine in ("my_figure.png", "case_distribution_mine.png", "notes.txt"):  # files that are not ccmetrics' stay
        (out / "plots" / mine).write_bytes(b"the user's own")
    narrow = cli("evaluate", gt, pred, "--out", out, "--metrics", "dice", "--bootstrap", "50", "--resume")
    assert narrow.returncode == 0, narrow.stderr
    after = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    for stale in ("per_prediction.csv", "nnunet_summary.json", "report.html", "plots/standard_vs_cc_nsd.png"):
        assert stale not in after and stale in narrow.stdout
    assert "run `ccmetrics report` again" in narrow.stdout
    assert "plots/standard_vs_cc_dice.png" in after
    assert {"plots/my_figure.png", "plots/case_distribution_mine.png", "plots/notes.txt"} <= after
    assert "case_distribution_mine" not in narrow.stdout
    result = DatasetResult.read(out)
    assert result.per_prediction is None and "nsd" not in result.per_case
    # a file of another run put back beside the tables is not taken
    (out / "per_prediction.csv").write_text("case,class\n")
    assert DatasetResult.read(out).per_prediction is None


# ---------------------------------------------------------------- 6. a full disk


@pytest.fixture
def small_disk(tmp_path):
    """A real tmpfs of 96 KiB (24 pages; grown by remounting), where this machine allows mounting; skipped elsewhere."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or done.returncode}): needs root")

    def resize(size):
        subprocess.run(["mount", "-o", f"remount,size={size}", str(mount)], check=True)

    yield mount, resize
    subprocess.run(["umount", "-l", str(mount)], check=False)


def temporaries(out):
    return [p for p in Path(out).rglob("*") if ".tmp" in p.name]


def test_a_full_disk_names_the_path_and_the_resume_command(tmp_path, small_disk):
    mount, resize = small_disk
    gt, pred = make_dataset(tmp_path, 40, seed=3)
    out = mount / "out"
    args = evaluate_args(gt, pred, out)
    full = cli(*args)
    assert full.returncode == 3, full.stderr
    assert "No space left on device" in full.stderr and f"cannot write {out}" in full.stderr
    assert "Free space on that disk, then run:" in full.stderr and full.stderr.rstrip().endswith("--resume")
    assert "Traceback" not in full.stderr
    kept = RecordStore(out).read_all()
    assert 0 < len(kept) < 40 and not temporaries(out)
    resize("64m")
    # a temporary file left by a write that a kill cut short is cleaned by the next run
    (out / "cases" / f".case_00-0123456789.json.{os.getpid()}.tmp").write_text("{")
    done = cli(*args, "--resume")
    assert done.returncode == 0, done.stderr
    assert f"{len(kept)} case(s) kept, {40 - len(kept)} to evaluate" in done.stderr
    assert not temporaries(out)
    reference = tmp_path / "reference"
    assert cli(*evaluate_args(gt, pred, reference)).returncode == 0
    assert tables(out) == tables(reference)


def test_a_disk_that_fills_while_the_tables_are_written(tmp_path, small_disk):
    mount, resize = small_disk
    resize("16m")
    gt, pred = make_dataset(tmp_path, 6, seed=4)
    out, marker = mount / "out", tmp_path / "writing"
    args = evaluate_args(gt, pred, out, "--plugin", SLOW)
    run = run_in_background(args, env={"CCM_SLOW_WRITE": "2", "CCM_FINAL_MARKER": str(marker)})
    wait_for(marker, run)
    filler = mount / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)  # until the disk is full
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 3, stderr
    assert f"cannot write {out}" in stderr and "No space left on device" in stderr
    assert "6 case(s) finished and kept" in stderr and stderr.rstrip().endswith("--resume")
    assert not temporaries(out)
    filler.unlink()
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 0, done.stderr
    assert len(DatasetResult.read(out).per_case) == 6


# ---------------------------------------------------------------- 7. an edited record


def test_an_edited_record_is_evaluated_again(data, tmp_path):
    gt, pred, reference = data
    out = tmp_path / "out"
    shutil.copytree(reference, out)
    path = RecordStore(out).path("case_03")
    value = RecordStore(out).read_all()["case_03"].output["rows"][0]["dice"]
    text = path.read_text()
    assert text.count(repr(value)) >= 1
    path.write_text(text.replace(repr(value), repr(round(value + 0.25, 6))))  # still valid JSON
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 0, done.stderr
    assert "case_03: record fails its checksum (edited or damaged): evaluated again" in done.stderr
    assert "9 case(s) kept, 1 to evaluate (1 record damaged)" in done.stderr
    assert tables(out) == tables(reference)


def test_garbled_record_files_are_named_and_kept(data, tmp_path):
    """Issue 39: a file that ccmetrics cannot prove it wrote is never removed. At a case's record name it stops the
    run before anything is evaluated, named with what to do; elsewhere in the records folder it is left alone."""
    gt, pred, reference = data
    out = tmp_path / "out"
    shutil.copytree(reference, out)
    store = RecordStore(out)
    store.path("case_05").write_bytes(b"\x00\x01 not json")
    (store.folder / "stray.json").write_text('{"format": 2, "sha256": "0"}\n{}\n')
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 2, done.stderr
    assert f"{store.path('case_05')}: not written by ccmetrics (not a case record)" in done.stderr
    assert "ccmetrics removes no file of yours" in done.stderr and "--out" in done.stderr
    assert store.path("case_05").read_bytes() == b"\x00\x01 not json"
    assert (store.folder / "stray.json").exists()
    store.path("case_05").unlink()  # the user moves it away: the resume evaluates that case, stray.json stays
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 0, done.stderr
    assert "left alone in" in done.stderr and "stray.json" in done.stderr
    assert (store.folder / "stray.json").read_text() == '{"format": 2, "sha256": "0"}\n{}\n'
    assert np.array_equal(sorted(store.read_all()), [f"case_{i:02d}" for i in range(10)])
    assert tables(out) == tables(reference)


def test_a_folder_where_a_record_belongs_is_named_and_kept(data, tmp_path):
    gt, pred, reference = data
    out = tmp_path / "out"
    shutil.copytree(reference, out)
    path = RecordStore(out).path("case_03")
    path.unlink()
    (path / "inside").mkdir(parents=True)
    done = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert done.returncode == 2, done.stderr
    assert f"{path}: not written by ccmetrics" in done.stderr
    assert (path / "inside").is_dir()


# ---------------------------------------------------------------- signals, continued


def test_a_stop_signal_inside_a_critical_section_waits_for_its_end():
    """A real SIGINT to this process while a record is written (the CLI's handler installed): the write finishes,
    the stop is raised at the section's end; outside a section it is raised at once."""
    from ccmetrics import _interrupts
    from ccmetrics.cli._stop import _stop_signals

    _interrupts.received.clear()
    steps = []
    with _stop_signals():
        with pytest.raises(_interrupts.Stop):
            with _interrupts.critical():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # the handler has run by now: deferred, not raised
                steps.append("written")
        assert steps == ["written"]
        with pytest.raises(_interrupts.Stop):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
    assert _interrupts.received == [signal.SIGINT, signal.SIGINT]
    _interrupts.received.clear()


@pytest.mark.parametrize("where", ["del", "exec"])
def test_a_stop_that_python_swallows_or_misreads_still_ends_the_run_cleanly(data, tmp_path, where):
    """SIGTERM while the plots are drawn, landing inside an object's __del__ (Python prints "Exception ignored"
    and drops the exception) or inside code run by exec (CPython then ends a process by SIGINT if an exact
    KeyboardInterrupt left it): still exit 143, no traceback, and the result as it stands."""
    gt, pred, reference = data
    out, marker = tmp_path / "out", tmp_path / "plotting"
    args = with_plots(evaluate_args(gt, pred, out, "--plugin", SLOW))
    env = {"CCM_SLOW_PLOTS": "20", "CCM_FINAL_MARKER": str(marker), "CCM_WAIT_IN": where}
    run = run_in_background(args, env=env)
    wait_for(marker, run)
    time.sleep(0.2)
    os.kill(run.pid, signal.SIGTERM)
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 143, (run.returncode, stderr)
    assert "Traceback" not in stderr
    if where == "del":  # the exception was dropped inside __del__; the run finished the plots, then stopped
        assert "Stopped after the tables were written" in stderr
        assert len(DatasetResult.read(out).per_case) == 10
    else:
        assert "Stopped while writing the tables" in stderr and "--resume" in stderr


def test_the_command_line_ignores_signals_once_it_has_returned():
    """After `ccmetrics` returns its exit code, the interpreter's shutdown is not cut by a late signal."""
    code = (
        "import signal, sys\n"
        "sys.argv = ['ccmetrics', 'report', '/nonexistent-folder']\n"
        "from ccmetrics.cli import main\n"
        "code = main()\n"
        "ignored = [signal.getsignal(s) is signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM)]\n"
        "print(code, *ignored)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.split() == ["2", "True", "True"], done.stderr


def test_the_resume_command_writes_abbreviated_options_in_full():
    from ccmetrics.cli import build_parser
    from ccmetrics.cli._stop import _resume_command

    argv = ["evaluate", "gt", "pred", "--out", "o", "--metr", "dice", "--overw", "--work=2"]
    args = build_parser().parse_args(argv)
    args.argv = argv
    assert _resume_command(args) == "ccmetrics evaluate gt pred --out o --metrics dice --workers=2 --resume"


def test_workers_die_with_a_parent_killed_by_sigkill(faults, tmp_path):
    gt, pred = make_dataset(tmp_path, 4, {1: faults.HANG, 2: faults.HANG}, seed=2)
    run = run_in_background(evaluate_args(gt, pred, tmp_path / "out", "--workers", "2"))
    deadline = time.monotonic() + 60
    while len(worker_pids(run.pid)) < 2 or len(RecordStore(tmp_path / "out").read_all()) < 1:
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.1)
    time.sleep(2.0)  # case_00 is done: both workers now hang, in case_01 and case_02
    workers = worker_pids(run.pid)
    assert len(workers) == 2
    os.kill(run.pid, signal.SIGKILL)  # the parent only: no chance to stop its workers
    run.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() and state(pid) != "Z" for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived its killed parent"
        time.sleep(0.1)


def test_reading_while_another_process_rewrites_never_mixes_two_runs(tmp_path):
    """A real second process rewrites the tables of one folder over and over, alternately with 6 cases and with
    3; every read in between is one run's whole set or an error that says so."""
    gt, pred = make_dataset(tmp_path, 6, seed=12)
    out = tmp_path / "out"
    assert cli(*evaluate_args(gt, pred, out)).returncode == 0
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from ccmetrics import DatasetResult\n"
            "full = DatasetResult.read(sys.argv[1])\n"
            "part = full.subset(['case_00', 'case_01', 'case_02'])\n"
            "for i in range(60):\n"
            "    (full if i % 2 else part).write(sys.argv[1], plots=False, n_resamples=20)\n",
            str(out),
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    whole, refused = 0, 0
    while writer.poll() is None:
        try:
            result = DatasetResult.read(out)
        except ValueError as exc:
            assert "incomplete" in str(exc) or "kept changing" in str(exc), exc
            refused += 1
            continue
        n = len(result.per_case)
        assert n in (3, 6)
        assert result.saved["counts"]["cases"] == n and result.per_component["case"].nunique() <= n
        assert set(result.per_prediction["case"]) <= set(result.per_case["case"])
        whole += 1
    assert writer.returncode == 0, writer.stderr.read()
    assert whole > 0


# ---------------------------------------------------------------- permissions


def as_unprivileged(args):
    """The command without root's power to ignore file permissions (``setpriv`` drops the capabilities), so that
    a folder without write permission refuses it for real; skipped where that cannot be done."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run without the capability to ignore permissions")
    prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner"]
    if os.geteuid() != 0:
        prefix = []  # a normal user: permissions hold already
    return [*prefix, sys.executable, "-m", "ccmetrics", *map(str, args)]


def test_a_folder_without_write_permission_names_the_path_and_the_resume_command(data, tmp_path):
    gt, pred, _ = data
    out = tmp_path / "out"
    assert cli(*with_plots(evaluate_args(gt, pred, out))).returncode == 0
    plots = out / "plots"
    plots.chmod(0o555)  # the figures cannot be removed now
    try:
        done = subprocess.run(
            as_unprivileged(evaluate_args(gt, pred, out, "--resume")), capture_output=True, text=True, cwd=ROOT
        )
    finally:
        plots.chmod(0o755)
    assert done.returncode == 3, done.stderr
    assert f"cannot remove {plots}" in done.stderr and "Permission denied" in done.stderr
    assert "Make the output folder writable, then run:" in done.stderr and done.stderr.rstrip().endswith("--resume")
    assert "Traceback" not in done.stderr
    again = cli(*evaluate_args(gt, pred, out, "--resume"))
    assert again.returncode == 0, again.stderr
    assert "Removed plots/" in again.stdout and len(DatasetResult.read(out).per_case) == 10
