"""The output folder of an evaluation run: one writer at a time, and tables that always belong together.

Three rules keep ``OUT_DIR`` consistent whatever happens to the processes that write it:

* **One run at a time** (:func:`locked`): a run takes an exclusive OS file lock (``flock``) on
  ``OUT_DIR/.ccmetrics.lock`` for as long as it writes there, and writes its process id, host, start
  time and command into that file. A second run into the same folder (a second ``--resume``, an
  ``--overwrite`` while the first still writes) is refused with a message naming the first. The kernel
  releases the lock when the process ends, however it ends (SIGKILL, a crash, a power loss of an NFS
  client), so a killed run never leaves a stale lock. A run that created the folder and wrote nothing
  (its input was refused) removes the lock file and the folder again; a run that locks checks that the
  file it locked is still the one at that name (the same inode), and tries again otherwise, so two runs
  never lock two different files of one name. Where ``fcntl`` does not exist (Windows) there is no lock.
  Within one process the lock is re-entrant for the thread that holds it.
* **A manifest names the set** (:func:`begin_tables`, :func:`finish_tables`, :func:`read_tables`):
  before the first table is replaced, ``manifest.json`` says ``"state": "writing"``; when every file
  is written and the files of an earlier run that this run does not produce are removed, it lists each
  file with its size and SHA-256 and the run's id, ``"state": "complete"``. A reader
  (:meth:`ccmetrics.DatasetResult.read`, through :func:`read_tables`) takes only a complete set whose files
  match their checksums, each file's checksum checked on the very bytes it parses, so it never takes a
  ``per_case.csv`` of one run beside the ``summary.json`` of another, even while another run rewrites them. A folder
  without a manifest was written by an earlier ccmetrics and is read as before.
* **Nothing of the user's is removed** (:func:`prepare_out_dir`, :func:`finish_tables`): ccmetrics removes or
  replaces only files it provably wrote (:func:`owned_outputs`; the records it can read as its own,
  :meth:`~ccmetrics.campaign.records.RecordStore.owns`), never a folder; a file of someone else's where it writes
  its own is named in an error before anything is removed. An output folder that holds an input, or whose
  ``cases/`` or ``plots/`` leads into one, is refused (:func:`check_inputs`), and so is one reached through a
  symbolic link whose target does not exist (:func:`locked`: following it would create the target).
* **Temporaries are cleaned** when a run takes the lock (:func:`ccmetrics.campaign.records.remove_temporaries`):
  no other process can be writing them then.

Cost: a lock is one ``open`` and one ``flock``; a manifest hashes each written file once (about 0.5 GB/s)
and a reader hashes the files it reads once more.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import socket
import sys
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import schema
from .._files import OutputWriteError, atomic_write, refuse_dangling_link
from .._interrupts import critical
from .records import RECORDS_FOLDER, RecordsInTheWay, RecordStore, is_record_name, remove_temporaries

try:
    import fcntl
except ImportError:  # Windows: no flock; runs are not guarded against each other there
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "LOCK_NAME",
    "MANIFEST_NAME",
    "OUTPUT_NAMES",
    "FolderInUse",
    "begin_tables",
    "check_inputs",
    "drawn_by_ccmetrics",
    "finish_tables",
    "locked",
    "owned_outputs",
    "prepare_out_dir",
    "read_tables",
    "stale_outputs",
]

#: the lock file of an output folder (hidden; never removed)
LOCK_NAME = ".ccmetrics.lock"
#: the file that names the run that wrote each table, written last
MANIFEST_NAME = "manifest.json"
#: files and folders that ccmetrics writes into an output folder (``overwrite`` removes those it provably wrote:
#: :func:`owned_outputs`, and the records :meth:`~ccmetrics.campaign.records.RecordStore.owns`)
OUTPUT_NAMES = (
    RECORDS_FOLDER,
    "per_case.csv",
    "per_component.csv",
    "per_prediction.csv",
    "per_candidate.csv",
    "thresholds.csv",
    "summary.json",
    "nnunet_summary.json",
    "plots",
    "report.html",
    MANIFEST_NAME,
)
#: the outputs made from the tables of a run (all but the records and the manifest)
TABLE_OUTPUTS = tuple(n for n in OUTPUT_NAMES if n not in (RECORDS_FOLDER, MANIFEST_NAME))
#: 2: the CSV tables' text cells are written neutralised (:func:`ccmetrics._escaping.write_csv`); 1: as they were
_MANIFEST_FORMAT = 2


class FolderInUse(OSError):
    """Another run writes into the output folder (it holds the folder's lock)."""


@dataclass
class _Hold:
    fd: int
    thread: int
    depth: int


_held: dict[str, _Hold] = {}
_held_guard = threading.Lock()


@contextlib.contextmanager
def locked(out_dir: str | os.PathLike, command: str | None = None) -> Iterator[Path]:
    """Hold the output folder's lock for the ``with`` block (creating the folder); see the module docstring.

    Parameters
    ----------
    out_dir : path
        The output folder.
    command : str, optional
        What this run is, for the message another run gets (default: this process's command line).

    Raises
    ------
    FolderInUse
        Another process (or another thread of this one) holds the lock: the message names its process id,
        host, start time and command, and what to do.
    OSError
        The folder or its lock file cannot be created (e.g. a read-only file system).

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> with locked(out):
    ...     with locked(out):  # the same thread: re-entrant
    ...         pass
    """
    refuse_dangling_link(out_dir, "--out")
    path = os.path.realpath(out_dir)
    me = threading.get_ident()
    with _held_guard:
        hold = _held.get(path)
        if hold is not None and hold.thread == me:
            hold.depth += 1
        elif hold is not None:
            raise FolderInUse(
                f"another evaluation of this process writes into {out_dir} (thread {hold.thread}): give each its "
                f"own output folder"
            )
    if hold is not None:
        try:
            yield Path(out_dir)
        finally:
            with _held_guard:
                hold.depth -= 1
        return
    created = not os.path.isdir(path)
    os.makedirs(path, exist_ok=True)
    before = None if created or os.path.lexists(os.path.join(path, LOCK_NAME)) else _listing(path)
    fd = _acquire(out_dir, path, command)
    with _held_guard:
        _held[path] = _Hold(fd, me, 1)
    try:
        remove_temporaries(path, _output_name)  # only what ccmetrics' own writes left: their final names are ours
        remove_temporaries(os.path.join(path, RECORDS_FOLDER), is_record_name)
        remove_temporaries(os.path.join(path, "plots"), lambda name: _output_name(f"plots/{name}"))
        yield Path(out_dir)
    finally:
        with _held_guard:
            del _held[path]
        if created:  # nothing written (e.g. the input was refused): no empty folder left behind
            with contextlib.suppress(OSError):
                if os.listdir(path) == [LOCK_NAME]:
                    os.unlink(os.path.join(path, LOCK_NAME))  # before the lock is released: see _acquire
                    os.rmdir(path)
        elif before is not None:  # a folder of the user's that this run left as it found it: no lock file either
            with contextlib.suppress(OSError):
                if _listing(path) - {LOCK_NAME} <= before:  # nothing added (its own temporaries may be gone)
                    os.unlink(os.path.join(path, LOCK_NAME))
        os.close(fd)  # releases the lock


def _listing(path: str) -> set[str]:
    """The names in a folder and, one level down, in its folders (``cases/x.json``): what a run may have added."""
    names = set()
    for entry in os.scandir(path):
        names.add(entry.name)
        if entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(OSError):
                names.update(f"{entry.name}/{sub}" for sub in os.listdir(entry.path))
    return names


def check_inputs(out_dir: str | os.PathLike, inputs: Iterable[tuple[str, Any]]) -> None:
    """Refuse an output folder that holds one of the run's inputs, or whose records or plots folder is (or is
    inside) one: ccmetrics writes and replaces files there. Links are followed on both sides.

    ``inputs``: ``(what, path)`` pairs, e.g. ``("GT folder (GT_DIR)", "proj/cases")``; other items (arrays, None)
    are skipped.

    Raises
    ------
    ValueError
        The message names the output folder and the input.

    Examples
    --------
    >>> import tempfile, os
    >>> out = tempfile.mkdtemp()
    >>> check_inputs(out, [("GT folder (GT_DIR)", os.path.dirname(out) + "/elsewhere")])
    >>> check_inputs(out, [("GT folder (GT_DIR)", os.path.join(out, "cases"))])
    Traceback (most recent call last):
    ...
    ValueError: the output folder ... (--out) holds the GT folder (GT_DIR) .../cases: ...
    """
    out = Path(os.path.realpath(out_dir))
    spots = {name: Path(os.path.realpath(out / name)) for name in (RECORDS_FOLDER, "plots")}
    for what, item in inputs:
        if not isinstance(item, (str, os.PathLike)):
            continue
        where = Path(os.path.realpath(item))
        if where == out or out in where.parents:
            problem = f"the output folder {os.fspath(out_dir)} (--out) holds the {what} {os.fspath(item)}"
        else:
            inside = [n for n, spot in spots.items() if where == spot or where in spot.parents or spot in where.parents]
            if not inside:
                continue
            kind = "records" if inside[0] == RECORDS_FOLDER else "figures"
            problem = f"{Path(out_dir) / inside[0]}, where ccmetrics writes its {kind}, leads into the {what} {item}"
        raise ValueError(
            f"{problem}: ccmetrics writes and replaces its files in the output folder, so no input may be there; "
            "give an --out (out_dir) outside every input folder, e.g. a new folder beside them"
        )


def _acquire(out_dir: str | os.PathLike, path: str, command: str | None) -> int:
    lock_path = os.path.join(path, LOCK_NAME)
    for _ in range(100):
        try:
            os.makedirs(path, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by child processes
        except FileNotFoundError:  # the folder was removed meanwhile by a run that created it and wrote nothing
            continue
        except OSError as exc:  # a read-only file system, no permission: before anything was done
            raise OutputWriteError(lock_path, exc) from exc
        if fcntl is None:
            return fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(os.pread(fd, 65536, 0) or b"{}")
            except (OSError, ValueError):
                holder = {}
            os.close(fd)
            raise FolderInUse(_busy_message(out_dir, holder)) from None
        except OSError:
            os.close(fd)
            raise
        try:
            same = os.stat(lock_path).st_ino == os.fstat(fd).st_ino
        except OSError:  # removed by the run that held it
            same = False
        if same:
            break
        os.close(fd)  # locked a file that its holder removed meanwhile: lock the one at that name now
    else:
        raise FolderInUse(f"the lock file {lock_path} keeps being replaced: is another program removing it?")
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": command if command is not None else " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }
    with contextlib.suppress(OSError):  # the details help the message of another run; the lock is what counts
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
    return fd


def _busy_message(out_dir: str | os.PathLike, holder: dict[str, Any]) -> str:
    if holder.get("host") == socket.gethostname() and not _alive(holder.get("pid")):
        holder = {}  # the details of an earlier holder: the new one has not written its own yet
    if holder.get("pid"):
        host = holder.get("host")
        where = f"pid {holder['pid']}" + (f" on {host}" if host and host != socket.gethostname() else "")
        who = f"another ccmetrics run ({where}, started {holder.get('started', '?')}: {holder.get('command', '?')})"
        stop = f"stop it (kill {holder['pid']})" if not host or host == socket.gethostname() else "stop it"
    else:
        who, stop = "another ccmetrics run (just starting)", "stop it"
    return (
        f"{who} is writing into {out_dir}: wait until it ends, {stop}, or give another output folder (--out); "
        f"two runs into one folder would evaluate every case twice and could remove each other's files"
    )


def _alive(pid: Any) -> bool:
    """Whether a process of this host has that id (signal 0 tests it without sending anything)."""
    try:
        os.kill(int(pid), 0)
    except PermissionError:  # it exists, under another user
        return True
    except (OSError, ValueError, TypeError):
        return False
    return True


def prepare_out_dir(out_dir: str | os.PathLike, *, resume: bool, overwrite: bool, cases: Iterable[str] = ()) -> None:
    """Refuse a non-empty output folder unless the caller chose to resume or to overwrite it.

    ``overwrite`` removes what ccmetrics provably wrote there, nothing else: the records of ``cases/`` it can read as
    its own (:meth:`~ccmetrics.campaign.records.RecordStore.owns`) and the tables, figures and ``report.html`` it
    wrote (:func:`owned_outputs`); the folders ``cases/`` and ``plots/`` go when nothing else is left in them. With
    ``resume`` or ``overwrite``, a file of someone else's where ccmetrics writes its own (a ``per_case.csv`` that no
    manifest of ccmetrics vouches for, a file for a folder, a file at the record name of one of ``cases``, the run's
    case ids, that is no record of ccmetrics) is named in an error, and nothing is removed. Call it
    while holding the folder's lock (:func:`ccmetrics.campaign.output_folder.locked`), so that no live run's files are
    removed.

    Raises
    ------
    ValueError
        The folder holds files and neither ``resume`` nor ``overwrite`` is set, or both are; or files that
        ccmetrics did not write are where it writes its own (the message names them).
    """
    if resume and overwrite:
        raise ValueError("choose one of --resume (resume=True) and --overwrite (overwrite=True), not both")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} is a file: give a folder")
    entries = sorted(p.name for p in out.iterdir() if p.name != LOCK_NAME) if out.is_dir() else []
    if entries and not (resume or overwrite):
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise ValueError(
            f"output folder {out} is not empty ({shown}): run with --resume (resume=True) to continue the "
            f"run recorded there, or --overwrite (overwrite=True) to replace its results"
        )
    if not entries:
        return
    mine = owned_outputs(out)
    _refuse_in_the_way(out, mine)
    blocked = RecordStore(out).in_the_way(cases)
    if blocked:  # before anything is removed
        raise RecordsInTheWay(blocked)
    if overwrite:
        with critical():
            RecordStore(out).remove(None)  # every record ccmetrics can read as its own; other files there stay
            with contextlib.suppress(OSError):
                (out / RECORDS_FOLDER).rmdir()  # when empty: only the user's own files keep it
            _remove(out, sorted(mine, key=lambda n: n == MANIFEST_NAME))  # the manifest last
            with contextlib.suppress(OSError):
                (out / "plots").rmdir()


def owned_outputs(out_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The files of the output folder, beside its records, that ccmetrics provably wrote (names relative to it, a
    figure as ``plots/name.png``), each with its size and SHA-256 (``report.html``: the empty dict).

    Proof is: the folder's ``manifest.json`` is complete and lists the file with this checksum (the tables, figures
    and ``nnunet_summary.json`` of the run that wrote it; the manifest itself); a manifest that says ``writing``
    (a run of ccmetrics was stopped while it replaced the set) vouches for the files at ccmetrics' own table and
    figure names (:data:`OUTPUT_NAMES`, :data:`ccmetrics.schema.PLOT_FILE`); ``report.html`` names ccmetrics as its
    generator in its first lines. A file without such proof (of an earlier ccmetrics without manifest, edited
    since, someone else's) is not ccmetrics' to remove.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = (out / "per_case.csv").write_text("mine")
    >>> owned_outputs(out)
    {}
    """
    return _owned(Path(out_dir))


def _owned(out: Path, hashed: bool = True) -> dict[str, dict[str, Any]]:
    """:func:`owned_outputs`; ``hashed=False``: the files that a stopped run's manifest vouches for by name get no
    checksum (the empty dict)."""
    doc = _manifest_doc(out)
    mine: dict[str, dict[str, Any]] = {}
    if doc is not None:
        mine[MANIFEST_NAME] = _digest((out / MANIFEST_NAME).read_bytes()) if hashed else {}
        listed: dict[str, Any] = doc["files"] if doc["state"] == "complete" else {}
        for name, digest in listed.items():
            if _output_name(name) and isinstance(digest, dict) and _file_digest(out / name) == digest:
                mine[name] = digest
        if doc["state"] == "writing":  # stopped half-way: the files at its own names (report.html: its own proof)
            named = [n for n in OUTPUT_NAMES if _output_name(n) and n != "report.html"] + _figures(out)
            for name in named:
                if name not in mine and not (out / name).is_symlink() and (out / name).is_file():
                    mine[name] = (_file_digest(out / name) or {}) if hashed else {}
    if drawn_by_ccmetrics(out / "report.html"):
        mine["report.html"] = {}
    return mine


def _manifest_doc(out: Path) -> dict[str, Any] | None:
    """The folder's manifest when it is one of ccmetrics' (its format, a state, a table of files), else None."""
    path = out / MANIFEST_NAME
    if path.is_symlink() or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(doc, dict)
        or type(doc.get("format")) is not int
        or doc.get("state") not in ("writing", "complete")
        or not isinstance(doc.get("files"), dict)
    ):
        return None
    return doc


def _output_name(name: str) -> bool:
    """Whether a name (relative to the output folder) is one that ccmetrics writes beside its records."""
    if name.startswith("plots/"):
        return schema.PLOT_FILE.fullmatch(name[len("plots/") :]) is not None
    return name in OUTPUT_NAMES and name not in (RECORDS_FOLDER, "plots")


def _file_digest(path: Path) -> dict[str, Any] | None:
    """A regular file's size and SHA-256 (None for a link, a folder, nothing)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return _digest(path.read_bytes())
    except OSError:
        return None


def _figures(out: Path) -> list[str]:
    plots = out / "plots"
    if plots.is_symlink() or not plots.is_dir():
        return []
    return [f"plots/{p.name}" for p in sorted(plots.iterdir()) if schema.PLOT_FILE.fullmatch(p.name)]


def drawn_by_ccmetrics(path: Path) -> bool:
    """Whether ``report.html`` is one that ``ccmetrics report`` drew (its generator, in its first 4 kB)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            start = f.read(4096)
    except OSError:
        return False
    return b'<meta name="generator" content="ccmetrics' in start


def _in_the_way(out: Path, mine: dict[str, Any]) -> list[str]:
    """What stands where ccmetrics writes its own files without being provably its own: a file at a table's
    name or a figure's (in ``plots/``), a file or link for ``cases/`` or ``plots/``."""
    blocked = [n for n in (*OUTPUT_NAMES, *_figures(out)) if _output_name(n) and n != "report.html"]
    blocked = [n for n in blocked if os.path.lexists(out / n) and n not in mine]
    for folder in (RECORDS_FOLDER, "plots"):
        path = out / folder
        if os.path.lexists(path) and (path.is_symlink() or not path.is_dir()):
            blocked.append(folder)
    return blocked


def _refuse_in_the_way(out: Path, mine: dict[str, Any]) -> None:
    blocked = _in_the_way(out, mine)
    if blocked:
        shown = ", ".join(blocked[:6]) + (f" and {len(blocked) - 6} more" if len(blocked) > 6 else "")
        raise ValueError(
            f"{out} holds {shown}, where ccmetrics writes its own output, but ccmetrics did not write "
            f"{'it' if len(blocked) == 1 else 'them'} (no complete manifest.json of ccmetrics lists "
            f"{'it' if len(blocked) == 1 else 'them'} with this checksum: someone else's, edited since, or of a "
            "ccmetrics before 0.2); ccmetrics removes no file of yours: move "
            f"{'it' if len(blocked) == 1 else 'them'} out of {out}, or give another output folder (--out)"
        )


def _remove(out: Path, names: Iterable[str]) -> list[str]:
    """Remove these files of the folder (never a folder: a name that became one is skipped); an OS error is an
    :class:`~ccmetrics._files.OutputWriteError` naming the path."""
    removed = []
    for name in names:
        path = out / name
        try:
            if path.is_symlink() or not path.is_file():
                continue
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OutputWriteError(path, exc, "remove") from exc
        removed.append(name)
    return removed


# ---------------------------------------------------------------- the manifest


def begin_tables(out_dir: str | os.PathLike) -> None:
    """Mark the folder's tables as being rewritten (``manifest.json``: ``"state": "writing"``), before the
    first of them is replaced: a reader refuses the folder until :func:`finish_tables`. The manifest keeps what
    ccmetrics provably wrote, as :func:`owned_outputs` says before the first is replaced: a file of someone else's
    where ccmetrics writes its own is refused here, so that :func:`finish_tables` removes ccmetrics' files only.

    Raises
    ------
    ValueError
        A file that ccmetrics did not write is where it writes its own (named; nothing is written).
    """
    out = Path(out_dir)
    mine = owned_outputs(out)
    _refuse_in_the_way(out, mine)
    doc = {"format": _MANIFEST_FORMAT, "state": "writing", "files": {}}
    atomic_write(out / MANIFEST_NAME, lambda tmp: tmp.write_text(json.dumps(doc, indent=2)))


def stale_outputs(out_dir: str | os.PathLike, written: Iterable[str | os.PathLike]) -> list[str]:
    """The outputs of an earlier run in the folder that this run did not write (names relative to the folder;
    a figure as ``plots/name.png``): what :func:`finish_tables` removes. Only files that ccmetrics provably wrote
    count (:func:`owned_outputs`: its tables and figures as the earlier manifest lists them, its ``report.html``);
    other files are left alone."""
    out = Path(out_dir)
    return _stale(out, {_relative(out, p) for p in written})


def _stale(out: Path, mine: set[str]) -> list[str]:
    owned = _owned(out, hashed=False)
    return sorted(n for n in owned if n != MANIFEST_NAME and n not in mine)


def finish_tables(out_dir: str | os.PathLike, written: Iterable[str | os.PathLike]) -> list[str]:
    """Remove the outputs of an earlier run that this run did not write (those ccmetrics provably wrote:
    :func:`stale_outputs`), then write the complete manifest: each written file's size and SHA-256 and this write's
    id. Returns the removed names."""
    out = Path(out_dir)
    files = sorted({_relative(out, p) for p in written})
    removed = _stale(out, set(files))
    with critical():  # the removals and the manifest: one step that a stop signal does not cut
        _remove(out, removed)
        plots = out / "plots"
        with contextlib.suppress(OSError):
            if plots.is_dir() and not plots.is_symlink() and not any(plots.iterdir()):
                plots.rmdir()
        _write_manifest(out, files)
    return removed


def _write_manifest(out: Path, files: list[str]) -> None:
    doc = {
        "format": _MANIFEST_FORMAT,
        "state": "complete",
        "run": uuid.uuid4().hex,
        "written": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "files": {name: _digest((out / name).read_bytes()) for name in files},
    }
    atomic_write(out / MANIFEST_NAME, lambda tmp: tmp.write_text(json.dumps(doc, indent=2)))


def read_tables(out_dir: str | os.PathLike, names: Iterable[str]) -> tuple[dict[str, bytes], int]:
    """The bytes of these files of the folder's tables, as one run wrote them, and the format of the manifest that
    vouched for them (0: none; from 2 on, the CSV files' text cells are neutralised: read them with
    ``TableSchema.read(..., neutralised=True)``).

    Each file is read once, and its checksum is checked on the bytes read, not on the file again (a writer may
    replace it in between); the manifest is read before and after, and the whole is read again if it changed
    meanwhile. A file the manifest does not list is not returned (it is not the run's). Without a manifest (an
    earlier ccmetrics wrote the folder) the files present are returned as they are, with 0.

    Raises
    ------
    ValueError
        The tables are being written or their writer was stopped, a file is missing or differs from the
        file the run wrote, or the tables keep changing while read: the message says how to rebuild them.
    """
    out = Path(out_dir)
    wanted = list(names)
    fix = (
        "run the same `ccmetrics evaluate` again with --resume (resume=True): it takes every finished case "
        f"from {out / RECORDS_FOLDER} and rewrites the tables"
    )
    for _ in range(5):
        before = _manifest_bytes(out)
        if before is None:
            return {n: (out / n).read_bytes() for n in wanted if (out / n).is_file()}, 0
        try:
            doc = json.loads(before)
            state, files, form = doc["state"], doc["files"], int(doc["format"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{out / MANIFEST_NAME} cannot be read ({exc}): {fix}") from None
        if state != "complete":
            raise ValueError(
                f"the tables in {out} are incomplete: the run writing them was stopped before it finished, or is "
                f"writing them now; {fix}"
            )
        got, problem = {}, ""
        for name in (n for n in wanted if n in files):
            try:
                data = (out / name).read_bytes()
            except OSError:
                problem = f"{out / name} is missing from the tables its run wrote (manifest.json lists it): {fix}"
                break
            if _digest(data) != files[name]:
                problem = (
                    f"{out / name} is not the file its run wrote (its size or SHA-256 differs from manifest.json: "
                    f"changed since, or copied from another run): {fix}"
                )
                break
            got[name] = data
        if _manifest_bytes(out) != before:
            continue  # rewritten while read: read the new set
        if problem:
            raise ValueError(problem)
        return got, form
    raise ValueError(f"the tables in {out} kept changing while they were read: another run is writing them")


def _manifest_bytes(out: Path) -> bytes | None:
    try:
        return (out / MANIFEST_NAME).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"{out / MANIFEST_NAME} cannot be read: {exc}") from None


def _relative(out: Path, path: str | os.PathLike) -> str:
    """A written file's name relative to the output folder (``plots/x.png``)."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(out))).as_posix()


def _digest(data: bytes) -> dict[str, Any]:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
