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
import shutil
import socket
import sys
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import schema
from .._files import OutputWriteError, atomic_write
from .._interrupts import critical
from .records import RECORDS_FOLDER, remove_temporaries

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
    "finish_tables",
    "locked",
    "prepare_out_dir",
    "read_tables",
    "stale_outputs",
]

#: the lock file of an output folder (hidden; never removed)
LOCK_NAME = ".ccmetrics.lock"
#: the file that names the run that wrote each table, written last
MANIFEST_NAME = "manifest.json"
#: files and folders that ccmetrics writes into an output folder (what ``overwrite`` removes)
OUTPUT_NAMES = (
    RECORDS_FOLDER,
    "per_case.csv",
    "per_component.csv",
    "per_prediction.csv",
    "summary.json",
    "nnunet_summary.json",
    "plots",
    "report.html",
    MANIFEST_NAME,
)
#: the outputs made from the tables of a run (all but the records and the manifest)
TABLE_OUTPUTS = tuple(n for n in OUTPUT_NAMES if n not in (RECORDS_FOLDER, MANIFEST_NAME))
_MANIFEST_FORMAT = 1


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
    fd = _acquire(out_dir, path, command)
    with _held_guard:
        _held[path] = _Hold(fd, me, 1)
    try:
        remove_temporaries(path, os.path.join(path, RECORDS_FOLDER), os.path.join(path, "plots"))
        yield Path(out_dir)
    finally:
        with _held_guard:
            del _held[path]
        if created:  # nothing written (e.g. the input was refused): no empty folder left behind
            with contextlib.suppress(OSError):
                if os.listdir(path) == [LOCK_NAME]:
                    os.unlink(os.path.join(path, LOCK_NAME))  # before the lock is released: see _acquire
                    os.rmdir(path)
        os.close(fd)  # releases the lock


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


def prepare_out_dir(out_dir: str | os.PathLike, *, resume: bool, overwrite: bool) -> None:
    """Refuse a non-empty output folder unless the caller chose to resume or to overwrite it.

    ``overwrite`` removes what ccmetrics wrote there (``OUTPUT_NAMES``; in ``plots/`` the figures it draws),
    nothing else. Call it while holding the folder's lock (:func:`ccmetrics.campaign.output_folder.locked`), so
    that no live run's files are removed.

    Raises
    ------
    ValueError
        The folder holds files and neither ``resume`` nor ``overwrite`` is set, or both are.
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
    if overwrite:
        plots = out / "plots"
        figures = [f"plots/{p.name}" for p in plots.iterdir() if _figure(p)] if plots.is_dir() else []
        _remove(out, [n for n in OUTPUT_NAMES if n != "plots"] + figures)
        with contextlib.suppress(OSError):
            plots.rmdir()  # when empty: only the user's own files keep it


def _remove(out: Path, names: Iterable[str]) -> list[str]:
    """Remove these outputs of the folder; an OS error is an :class:`~ccmetrics._files.OutputWriteError` naming the
    path."""
    removed = []
    for name in names:
        path = out / name
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            else:
                continue
        except OSError as exc:
            raise OutputWriteError(path, exc, "remove") from exc
        removed.append(name)
    return removed


# ---------------------------------------------------------------- the manifest


def begin_tables(out_dir: str | os.PathLike) -> None:
    """Mark the folder's tables as being rewritten (``manifest.json``: ``"state": "writing"``), before the
    first of them is replaced: a reader refuses the folder until :func:`finish_tables`."""
    doc = {"format": _MANIFEST_FORMAT, "state": "writing", "files": {}}
    atomic_write(Path(out_dir) / MANIFEST_NAME, lambda tmp: tmp.write_text(json.dumps(doc, indent=2)))


def stale_outputs(out_dir: str | os.PathLike, written: Iterable[str | os.PathLike]) -> list[str]:
    """The outputs of an earlier run in the folder that this run did not write (names relative to the folder;
    a figure as ``plots/name.png``): what :func:`finish_tables` removes. Only ccmetrics' own names count: its
    tables, ``report.html`` and, in ``plots/``, the figures it draws (:data:`ccmetrics.schema.PLOT_FILE`);
    other files there are left alone."""
    out = Path(out_dir)
    return _stale(out, {_relative(out, p) for p in written})


def _stale(out: Path, mine: set[str]) -> list[str]:
    stale = []
    for name in TABLE_OUTPUTS:
        path = out / name
        if name == "plots" and path.is_dir() and not path.is_symlink():
            stale += [f"plots/{p.name}" for p in sorted(path.iterdir()) if _figure(p) and f"plots/{p.name}" not in mine]
        elif (path.exists() or path.is_symlink()) and name not in mine:
            stale.append(name)
    return stale


def _figure(path: Path) -> bool:
    """Whether a file of ``plots/`` is a figure ccmetrics draws, by its name (other files there are the user's)."""
    return path.is_file() and schema.PLOT_FILE.fullmatch(path.name) is not None


def finish_tables(out_dir: str | os.PathLike, written: Iterable[str | os.PathLike]) -> list[str]:
    """Remove the outputs of an earlier run that this run did not write, then write the complete manifest:
    each written file's size and SHA-256 and this write's id. Returns the removed names."""
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


def read_tables(out_dir: str | os.PathLike, names: Iterable[str]) -> tuple[dict[str, bytes], bool]:
    """The bytes of these files of the folder's tables, as one run wrote them, and whether a manifest vouched
    for them.

    Each file is read once, and its checksum is checked on the bytes read, not on the file again (a writer may
    replace it in between); the manifest is read before and after, and the whole is read again if it changed
    meanwhile. A file the manifest does not list is not returned (it is not the run's). Without a manifest (an
    earlier ccmetrics wrote the folder) the files present are returned as they are, with ``False``.

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
            return {n: (out / n).read_bytes() for n in wanted if (out / n).is_file()}, False
        try:
            doc = json.loads(before)
            state, files = doc["state"], doc["files"]
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
        return got, True
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
