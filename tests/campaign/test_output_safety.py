"""The output folder keeps what is not ccmetrics' (issue 39, points 4-7 and the dangling ``--out`` of 16).

* ``--overwrite`` removes only what ccmetrics provably wrote: records it can read as its own, the files its manifest
  lists with their checksums; a file of the user's where ccmetrics writes is named in an error, and an ``--out`` that
  holds an input (or whose ``cases/`` leads into one) is refused before anything is removed;
* ``--resume`` leaves every file of ``cases/`` that is not provably a record alone and names it; a damaged record of
  ccmetrics' is evaluated again and replaced;
* a resume that adds an option that changes an output file gives the files a fresh run gives, byte for byte;
* a case id with a leading dot gets a visible record, which a resume takes;
* an ``--out`` that is a dangling symbolic link is refused, and its target is not created.

Every folder here is real: files written field by field, real links, the real command line (in-process ``main``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ccmetrics import evaluate_dataset
from ccmetrics.campaign.records import RecordStore
from ccmetrics.campaign.scheduler import RecordsInTheWay
from ccmetrics.cli import main
from ccmetrics.formats.io import save_image

SPACING = (1.0, 1.0, 2.0)


def arrays(i: int) -> tuple[np.ndarray, np.ndarray]:
    """A GT with one or two lesions and a prediction that shifts one and adds a false positive."""
    gt = np.zeros((16, 16, 8), np.uint8)
    gt[2:6, 2:6, 2:5] = 1
    gt[10:13, 9:12, 4:6] = i % 2
    pred = np.roll(gt, i % 2, axis=0)
    pred[12:14, 2:4, 1] = 1
    return gt, pred


def make_folders(root: Path, n: int = 4, gt_name: str = "gt") -> tuple[Path, Path]:
    """``n`` cases as .nii.gz in root/<gt_name> and root/pred, and probability maps in root/prob."""
    for d in (gt_name, "pred", "prob"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for i in range(n):
        gt, pred = arrays(i)
        prob = (pred * 0.8).astype(np.float32)
        prob[0:2, 14:16, 6] = 0.3
        save_image(root / gt_name / f"c{i}.nii.gz", gt, spacing=SPACING)
        save_image(root / "pred" / f"c{i}.nii.gz", pred, spacing=SPACING)
        save_image(root / "prob" / f"c{i}.nii.gz", prob, spacing=SPACING)
    return root / gt_name, root / "pred"


def files(out: Path) -> dict[str, bytes]:
    """Every output file beside the records, the lock and the manifest (whose run id and time differ by design);
    ``summary.json`` without its ``run`` (what this run took from records and why: a resume says so)."""
    found = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if not path.is_file() or rel.startswith("cases/") or rel in ("manifest.json", ".ccmetrics.lock"):
            continue
        data = path.read_bytes()
        if rel == "summary.json":
            doc = json.loads(data)
            doc.pop("run")
            data = json.dumps(doc).encode()
        found[rel] = data
    return found


def record_names(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "cases").iterdir())


# ---------------------------------------------------------------- 4. --overwrite removes only ccmetrics' files


@pytest.mark.slow
def test_overwrite_with_the_gt_folder_in_out_cases_is_refused_and_removes_nothing(tmp_path, capsys):
    proj = tmp_path / "proj"
    gt, pred = make_folders(proj, 2, gt_name="cases")
    (gt / "clinical.json").write_text('{"c0": "T2"}')
    before = {p.name: p.read_bytes() for p in gt.iterdir()}
    code = main(["evaluate", str(gt), str(pred), "--out", str(proj), "--overwrite", "--metrics", "dice", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"the output folder {proj} (--out-dir) holds the GT folder (GT_DIR) {gt}" in err
    assert "please report" not in err
    assert {p.name: p.read_bytes() for p in gt.iterdir()} == before  # the GT and clinical.json are whole
    # through Python, with the probability maps inside the output folder
    run = tmp_path / "run"
    run.mkdir()
    (proj / "prob").rename(run / "maps")
    with pytest.raises(ValueError, match=r"holds the probability maps \(--probabilities\) .*run/maps: ccmetrics"):
        evaluate_dataset(gt, probabilities=run / "maps", out_dir=run, overwrite=True, progress=False)
    assert len(list((run / "maps").iterdir())) == 2 and {p.name: p.read_bytes() for p in gt.iterdir()} == before


def test_an_out_whose_cases_folder_leads_into_an_input_is_refused(tmp_path):
    gt, pred = make_folders(tmp_path / "data", 1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "cases").symlink_to(gt)  # OUT/cases is the GT folder by a link
    with pytest.raises(ValueError) as refused:
        evaluate_dataset(gt, pred, ["dice"], out_dir=out, overwrite=True, progress=False)
    assert f"{out / 'cases'}, where ccmetrics writes its records, leads into the GT folder" in str(refused.value)
    assert str(gt) in str(refused.value)
    assert sorted(p.name for p in gt.iterdir()) == ["c0.nii.gz"]
    # cases given one by one: a file inside the output folder is refused too, and named with its case
    inside = out / "mine.nii.gz"
    inside.write_bytes((gt / "c0.nii.gz").read_bytes())
    (out / "cases").unlink()
    with pytest.raises(ValueError, match=r"holds the file of case 'x' .*mine\.nii\.gz"):
        evaluate_dataset({"x": (inside, inside)}, metrics=["dice"], out_dir=out, overwrite=True, progress=False)
    assert inside.exists()


def test_overwrite_removes_its_records_and_tables_and_nothing_else(tmp_path):
    gt, pred = make_folders(tmp_path, 3)
    out = tmp_path / "out"
    first = evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False)
    first.write(out, plots=False)
    records = record_names(out)
    assert len(records) == 3
    # the user's files beside the records: a JSON of theirs, a note, a folder with a file, a JSON shaped like a head
    (out / "cases" / "clinical.json").write_text('{"c0": "T2"}')
    (out / "cases" / "notes.txt").write_text("mine")
    (out / "cases" / "sub").mkdir()
    (out / "cases" / "sub" / "a.json").write_text("{}")
    (out / "cases" / "looks.json").write_text('{"format": 2}\n{"case": "c0"}\n')
    (out / "plots").mkdir()
    (out / "plots" / "mine.png").write_bytes(b"png of mine")
    # a record of ccmetrics' whose case is gone and whose body was edited (checksum fails): still provably its own
    gone = RecordStore(out).path("gone")
    head, body = RecordStore(out).path("c0").read_bytes().split(b"\n", 1)
    gone.write_bytes(head + b"\n" + body.replace(b'"c0"', b'"gone"'))
    second = evaluate_dataset(gt, pred, ["dice", "iou"], out_dir=out, overwrite=True, progress=False)
    assert second.run.evaluated == 3
    assert (out / "cases" / "clinical.json").read_text() == '{"c0": "T2"}'
    assert (out / "cases" / "notes.txt").read_text() == "mine"
    assert (out / "cases" / "sub" / "a.json").read_text() == "{}"
    assert (out / "cases" / "looks.json").read_text() == '{"format": 2}\n{"case": "c0"}\n'
    assert (out / "plots" / "mine.png").read_bytes() == b"png of mine"
    assert not gone.exists()  # ccmetrics' own
    assert not (out / "per_case.csv").exists() and not (out / "manifest.json").exists()  # the earlier tables
    assert sorted(RecordStore(out).read_all()) == ["c0", "c1", "c2"]
    assert all(r.fingerprint["options"]["metrics"] == ["dice", "iou"] for r in RecordStore(out).read_all().values())


def test_a_file_of_the_users_where_ccmetrics_writes_is_named_and_kept(tmp_path):
    gt, pred = make_folders(tmp_path, 2)
    out = tmp_path / "out"
    evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False).write(out, plots=False)
    edited = (out / "per_case.csv").read_text().replace("c1", "c1 (checked by Dr. A)")
    (out / "per_case.csv").write_text(edited)  # opened in a spreadsheet and saved: no longer ccmetrics' file
    for flag in ("overwrite", "resume"):
        with pytest.raises(ValueError) as refused:
            evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False, **{flag: True})
        message = str(refused.value)
        assert f"{out} holds per_case.csv, where ccmetrics writes its own output, but ccmetrics did not write it" in (
            message
        )
        assert "--out" in message and "move it out" in message
        assert (out / "per_case.csv").read_text() == edited
        assert len(RecordStore(out).read_all()) == 2  # nothing removed
    # a folder written by someone else: a summary.json without any manifest of ccmetrics
    other = tmp_path / "other"
    other.mkdir()
    (other / "summary.json").write_text('{"theirs": 1}')
    with pytest.raises(ValueError, match="holds summary.json, where ccmetrics writes its own output"):
        evaluate_dataset(gt, pred, ["dice"], out_dir=other, overwrite=True, progress=False)
    assert (other / "summary.json").read_text() == '{"theirs": 1}'


# ---------------------------------------------------------------- 5. --resume leaves foreign files alone


def test_resume_leaves_files_that_are_not_records_alone_and_names_them(tmp_path, capsys):
    gt, pred = make_folders(tmp_path, 3)
    out = tmp_path / "out"
    evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False)
    foreign = {
        "clinical.json": '{"c0": "T2"}',
        "broken.json": "{not json",
        "looks.json": '{"format": 2}\n{"case": "c0"}\n',  # a head without a checksum: not a record's
        "notes.txt": "mine",
    }
    for name, text in foreign.items():
        (out / "cases" / name).write_text(text)
    capsys.readouterr()
    again = evaluate_dataset(gt, pred, ["dice"], out_dir=out, resume=True, progress=False)
    err = capsys.readouterr().err
    assert again.run.reused == 3 and again.run.evaluated == 0
    for name, text in foreign.items():
        assert (out / "cases" / name).read_text() == text
    assert "left alone in" in err and "4 file(s) that ccmetrics cannot prove it wrote" in err
    assert "broken.json" in err and "clinical.json" in err and "removed" not in err


def test_a_damaged_record_is_evaluated_again_and_a_foreign_file_at_a_records_name_is_refused(tmp_path, capsys):
    gt, pred = make_folders(tmp_path, 3)
    out = tmp_path / "out"
    fresh = evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False)
    store = RecordStore(out)
    # ours, edited: the checksum fails; the case is evaluated again and its record replaced by a good one
    path = store.path("c1")
    head, body = path.read_bytes().split(b"\n", 1)
    path.write_bytes(head + b"\n" + body.replace(b'"retry": false', b'"retry": true '))
    capsys.readouterr()
    again = evaluate_dataset(gt, pred, ["dice"], out_dir=out, resume=True, progress=False)
    err = capsys.readouterr().err
    assert again.run.reasons == {"c1": "record fails its checksum (edited or damaged)"}
    assert "c1: record fails its checksum (edited or damaged): evaluated again" in err
    assert again.per_case.equals(fresh.per_case)
    assert sorted(store.read_all()) == ["c0", "c1", "c2"]
    # a file of the user's at a case's record name: named, kept, nothing evaluated
    path.write_text('{"mine": true}')
    with pytest.raises(RecordsInTheWay) as refused:
        evaluate_dataset(gt, pred, ["dice"], out_dir=out, resume=True, progress=False)
    assert str(path) in str(refused.value) and "not written by ccmetrics" in str(refused.value)
    assert "move it out of" in str(refused.value) and "--out" in str(refused.value)
    assert path.read_text() == '{"mine": true}'
    with pytest.raises(RecordsInTheWay):  # and by an --overwrite, which keeps it too
        evaluate_dataset(gt, pred, ["dice"], out_dir=out, overwrite=True, progress=False)
    assert path.read_text() == '{"mine": true}'


# ---------------------------------------------------------------- 6. a resume with an output option


@pytest.mark.slow
def test_a_resume_that_adds_an_output_option_gives_the_files_of_a_fresh_run(tmp_path, capsys):
    gt, pred = make_folders(tmp_path, 4)
    (tmp_path / "meta.csv").write_text("case,site\nc0,A\nc1,B\nc2,A\nc3,B\n")
    base = ["evaluate", str(gt), str(pred), "--metrics", "dice,detection", "--bootstrap", "20", "--quiet"]
    options = {
        "--nnunet-summary": ["--nnunet-summary"],
        "--size-bins": ["--size-bins", "0.01,0.05"],
        "--group-by": ["--metadata", str(tmp_path / "meta.csv"), "--group-by", "site"],
        "--probabilities": ["--probabilities", str(tmp_path / "prob")],
        "--thresholds": ["--probabilities", str(tmp_path / "prob"), "--thresholds", "0.2,0.5"],
    }
    for name, extra in options.items():
        out, fresh = tmp_path / f"out{name}", tmp_path / f"fresh{name}"
        assert main([*base, "--out", str(out)]) == 0
        (out / "cases" / next(iter(record_names(out)))).unlink()  # partly recorded, as after a kill
        capsys.readouterr()
        assert main([*base, "--out", str(out), "--resume", *extra]) == 0, (name, capsys.readouterr().err)
        assert main([*base, "--out", str(fresh), *extra]) == 0, name
        assert files(out) == files(fresh), name
        assert json.loads((out / "manifest.json").read_text())["state"] == "complete"
        if name == "--nnunet-summary":  # its counts are in the records: every case again, and why
            assert "nnunet_summary.json" in files(out)
            summary = json.loads((out / "summary.json").read_text())
            assert summary["run"]["evaluated"] == 4
            assert set(summary["run"]["reasons"].values()) == {"new", "option nnunet_summary changed"}


# ---------------------------------------------------------------- 7. a case id with a leading dot


def test_a_case_id_with_a_leading_dot_has_a_visible_record_that_resume_takes(tmp_path):
    gt, pred = arrays(1)
    cases = {".hidden": (gt, pred), "_hidden": (gt, gt), "..": (gt, pred), "plain": (gt, pred)}
    out = tmp_path / "out"
    evaluate_dataset(cases, metrics=["dice"], out_dir=out, progress=False)
    names = record_names(out)
    assert len(names) == 4 and not [n for n in names if n.startswith(".")], names
    again = evaluate_dataset(cases, metrics=["dice"], out_dir=out, resume=True, progress=False)
    assert again.run.reused == 4 and again.run.reasons == {}
    # a record of an earlier ccmetrics under the hidden name: read, and replaced by the visible one when rewritten
    store = RecordStore(out)
    visible = store.path(".hidden")
    hidden = visible.with_name("." + visible.name[1:])
    visible.rename(hidden)
    taken = evaluate_dataset(cases, metrics=["dice"], out_dir=out, resume=True, progress=False)
    assert taken.run.reused == 4
    evaluate_dataset(cases, metrics=["dice", "iou"], out_dir=out, resume=True, progress=False)  # all recorded again
    assert not hidden.exists() and visible.exists() and len(record_names(out)) == 4


# ---------------------------------------------------------------- 16. a dangling --out


def test_an_out_that_is_a_dangling_link_is_refused_and_its_target_not_created(tmp_path, capsys):
    gt, pred = arrays(0)
    target = tmp_path / "nowhere" / "deep"
    link = tmp_path / "out"
    link.symlink_to(target)
    with pytest.raises(NotADirectoryError) as refused:
        evaluate_dataset({"a": (gt, pred)}, metrics=["dice"], out_dir=link, progress=False)
    assert f"goes through the symbolic link {link}, whose target {target} does not exist" in str(refused.value)
    assert not (tmp_path / "nowhere").exists()
    folders = make_folders(tmp_path / "data", 1)
    code = main(["evaluate", *map(str, folders), "--out", str(link / "run"), "--metrics", "dice", "--quiet"])
    assert code == 2 and f"symbolic link {link}, whose target {target}" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


# ---------------------------------------------------------------- found by a review: files of the user's, continued


def test_a_report_html_of_the_users_survives_overwrite_resume_and_report(tmp_path, capsys):
    """Only ``report.html`` that ``ccmetrics report`` drew is ccmetrics': one of the user's (no generator tag) stays
    through an ``--overwrite``, a ``--resume`` (which write the tables under a manifest that says "writing"), and
    ``ccmetrics report`` refuses to replace it unless given another ``--out``."""
    gt, pred = make_folders(tmp_path, 2)
    out = tmp_path / "out"
    evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False).write(out, plots=False)
    mine = "<html>my own notes</html>"
    (out / "report.html").write_text(mine)
    again = evaluate_dataset(gt, pred, ["dice"], out_dir=out, overwrite=True, progress=False)
    again.write(out, plots=False)
    assert (out / "report.html").read_text() == mine
    evaluate_dataset(gt, pred, ["dice"], out_dir=out, resume=True, progress=False).write(out, plots=False)
    assert (out / "report.html").read_text() == mine
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'report.html'} exists and was not drawn by ccmetrics report" in err and "--out FILE" in err
    assert (out / "report.html").read_text() == mine
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0 and main(["report", str(out)]) == 0  # its own report: replaced


def test_files_that_merely_look_temporary_stay_and_a_refused_run_leaves_no_lock(tmp_path, capsys):
    """The lock cleans only the temporaries of ccmetrics' own writes (their final names are its outputs'); a folder
    of the user's that a refused run did not change keeps no lock file."""
    gt, pred = make_folders(tmp_path, 1)
    proj = tmp_path / "proj"
    proj.mkdir()
    user = {".budget.2024.tmp.xlsx": b"xlsx", ".thesis.3.tmp": b"tex", "notes.txt": b"mine"}
    for name, data in user.items():
        (proj / name).write_bytes(data)
    (proj / ".per_case.77.tmp.csv").write_bytes(b"left by a stopped write")  # ccmetrics' own: per_case.csv
    code = main(["evaluate", str(gt), str(pred), "--out", str(proj), "--metrics", "dice", "--quiet"])
    assert code == 2 and "is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in proj.iterdir()) == sorted(user)
    assert all((proj / name).read_bytes() == data for name, data in user.items())


def test_an_overwrite_refused_for_a_file_at_a_records_name_removes_nothing(tmp_path):
    gt, pred = make_folders(tmp_path, 3)
    out = tmp_path / "out"
    evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False).write(out, plots=False)
    path = RecordStore(out).path("c1")
    path.write_text('{"mine": true}')
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(RecordsInTheWay):
        evaluate_dataset(gt, pred, ["dice"], out_dir=out, overwrite=True, progress=False)
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # the tables, the manifest, the other records: all still there


@pytest.mark.slow
def test_compare_and_report_refuse_an_out_through_a_dangling_link(tmp_path, capsys):
    gt, pred = make_folders(tmp_path, 2)
    out = tmp_path / "out"
    evaluate_dataset(gt, pred, ["dice"], out_dir=out, progress=False).write(out, plots=False)
    link = tmp_path / "dl"
    link.symlink_to(tmp_path / "nowhere")
    capsys.readouterr()
    assert main(["compare", str(out), str(out), "--names", "a,b", "--out", str(link / "cmp")]) == 2
    assert f"goes through the symbolic link {link}, whose target" in capsys.readouterr().err
    assert main(["report", str(out), "--out", str(link / "r.html")]) == 2
    assert f"goes through the symbolic link {link}, whose target" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


def test_a_process_forked_under_the_lock_does_not_keep_the_folder_locked(tmp_path):
    """A real fork while the output folder is locked (as the figures' helper and the workers are) holds a copy of the
    lock's descriptor; when the run's ``with locked(...)`` ends, the folder is free at once, for another process too,
    although the forked process still lives."""
    import os
    import signal
    import time

    from ccmetrics.campaign.output_folder import FolderInUse, locked

    out = tmp_path / "out"
    with locked(out):
        (out / "per_case.csv").write_text("case\n")  # a run that wrote something: its lock file stays
        child = os.fork()
        if child == 0:  # the forked process: keeps its copy of the descriptor for a while, then ends
            time.sleep(30)
            os._exit(0)
        with pytest.raises(FolderInUse):  # held: another process is refused
            _lock_elsewhere(out)
    try:
        assert os.waitpid(child, os.WNOHANG) == (0, 0)  # still alive, its descriptor still open
        _lock_elsewhere(out)  # another process takes the lock at once
        with locked(out):  # and so does this one again
            pass
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def _lock_elsewhere(out):
    """Take the folder's lock in another process; raise FolderInUse when that process was refused."""
    import subprocess
    import sys

    from ccmetrics.campaign.output_folder import FolderInUse

    code = (
        "import sys\nfrom ccmetrics.campaign.output_folder import FolderInUse, locked\n"
        f"try:\n    with locked({str(out)!r}): pass\nexcept FolderInUse:\n    sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode == 3:
        raise FolderInUse("refused")
    assert done.returncode == 0, done.stderr
