"""The output folder of an evaluation run: one writer at a time, and nothing of the user's removed.

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
* **A manifest names the set** (:mod:`ccmetrics.results.tables`: :func:`~ccmetrics.results.tables.begin_tables`,
  :func:`~ccmetrics.results.tables.finish_tables`, :func:`~ccmetrics.results.tables.read_tables`): a reader takes
  only a complete set of one run's tables whose files match their checksums.
* **Nothing of the user's is removed** (:func:`prepare_out_dir`, :func:`~ccmetrics.results.tables.finish_tables`):
  ccmetrics removes or replaces only files it provably wrote (:func:`~ccmetrics.results.tables.owned_outputs`; the
  records it can read as its own, :meth:`~ccmetrics.campaign.records.RecordStore.owns`), never a folder; a file of
  someone else's where it writes its own is named in an error before anything is removed. An output folder that holds an
  input, or whose ``cases/`` or ``plots/`` leads into one, is refused (:func:`check_inputs`), and so is one reached
  through a symbolic link whose target does not exist (:func:`locked`: following it would create the target).
* **Temporaries are cleaned** when a run takes the lock (:func:`ccmetrics.campaign.records.remove_temporaries`):
  no other process can be writing them then.

The manifest and the tables' ownership moved to :mod:`ccmetrics.results.tables` (the names ``begin_tables``,
``finish_tables``, ``read_tables``, ``owned_outputs``, ``stale_outputs``, ``drawn_by_ccmetrics``, ``MANIFEST_NAME``,
``OUTPUT_NAMES`` still work here, with a ``DeprecationWarning``, until ccmetrics 0.3).

Cost: a lock is one ``open`` and one ``flock``.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import os
import socket
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._deprecation import deprecated
from .._files import OutputWriteError, refuse_dangling_link
from .._interrupts import critical
from .._words import in_terms
from ..results import tables
from .records import RECORDS_FOLDER, RecordsInTheWay, RecordStore, is_record_name, remove_temporaries

try:
    import fcntl
except ImportError:  # Windows: no flock; runs are not guarded against each other there
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "FolderInUse", "check_inputs", "locked", "prepare_out_dir", "refuse_stale_report"]

#: the names that moved to :mod:`ccmetrics.results.tables` (kept here for one release, with a warning)
_MOVED = (
    "MANIFEST_NAME",
    "OUTPUT_NAMES",
    "TABLE_OUTPUTS",
    "begin_tables",
    "drawn_by_ccmetrics",
    "finish_tables",
    "owned_outputs",
    "read_tables",
    "stale_outputs",
)


def __getattr__(name: str) -> Any:
    if name == "atomic_write":  # imported here before: its home is the foundation ccmetrics._files
        from .. import _files

        return deprecated(__name__, name, {name: lambda: _files.atomic_write}, "import it from ccmetrics._files")
    advice = f"import {name} from ccmetrics.results.tables (the tables' manifest is the results layer's)"
    return deprecated(__name__, name, {n: functools.partial(getattr, tables, n) for n in _MOVED}, advice)


#: the lock file of an output folder (hidden; never removed)
LOCK_NAME = ".ccmetrics.lock"


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
        remove_temporaries(path, tables.is_output_name)  # only what ccmetrics' own writes left: their final names
        remove_temporaries(os.path.join(path, RECORDS_FOLDER), is_record_name)
        remove_temporaries(os.path.join(path, "plots"), lambda name: tables.is_output_name(f"plots/{name}"))
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
        _release(fd)


def _release(fd: int) -> None:
    """Release the folder's lock and close its descriptor. The lock is released outright (``LOCK_UN``), not by the
    close: a process forked while it was held (the figures' helper, a worker) shares the lock through its copy of the
    descriptor, and a close alone would leave the folder locked until that process ends."""
    try:
        if fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


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
    ValueError: the output folder ... (out_dir) holds the GT folder (GT_DIR) .../cases: ...
    """
    out = Path(os.path.realpath(out_dir))
    spots = {name: Path(os.path.realpath(out / name)) for name in (RECORDS_FOLDER, "plots")}
    for what, item in inputs:
        if not isinstance(item, (str, os.PathLike)):
            continue
        where = Path(os.path.realpath(item))
        if where == out or out in where.parents:
            problem = (
                f"the output folder {os.fspath(out_dir)} ({in_terms('--out-dir', 'out_dir')}) holds the {what} "
                f"{os.fspath(item)}"
            )
        else:
            inside = [n for n, spot in spots.items() if where == spot or where in spot.parents or spot in where.parents]
            if not inside:
                continue
            kind = "records" if inside[0] == RECORDS_FOLDER else "figures"
            problem = f"{Path(out_dir) / inside[0]}, where ccmetrics writes its {kind}, leads into the {what} {item}"
        raise ValueError(
            f"{problem}: ccmetrics writes and replaces its files in the output folder, so no input may be there; "
            f"give an {in_terms('--out-dir', 'out_dir')} outside every input folder, e.g. a new folder beside them"
        )


def _acquire(out_dir: str | os.PathLike, path: str, command: str | None) -> int:
    lock_path = os.path.join(path, LOCK_NAME)
    for _ in range(100):
        try:
            os.makedirs(path, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by exec'd processes (forks do)
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
    its own (:meth:`~ccmetrics.campaign.records.RecordStore.owns`) and the tables, figures and ``report.html`` it wrote
    (:func:`~ccmetrics.results.tables.owned_outputs`); the folders ``cases/`` and ``plots/`` go when nothing else is
    left in them. With ``resume`` or ``overwrite``, a file of someone else's where ccmetrics writes its own (a
    ``per_case.csv`` that no manifest of ccmetrics vouches for, a file for a folder, a file at the record name of one of
    ``cases``, the run's case ids, that is no record of ccmetrics) is named in an error, and nothing is removed. Call it
    while holding the folder's lock (:func:`ccmetrics.campaign.output_folder.locked`), so that no live run's files are
    removed.

    Raises
    ------
    ValueError
        The folder holds files and neither ``resume`` nor ``overwrite`` is set, or both are; or files that
        ccmetrics did not write are where it writes its own (the message names them).
    """
    if resume and overwrite:
        raise ValueError(
            f"choose one of {in_terms('--resume', 'resume=True')} and {in_terms('--overwrite', 'overwrite=True')}, "
            "not both"
        )
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {out} is a file: give a folder")
    entries = sorted(p.name for p in out.iterdir() if p.name != LOCK_NAME) if out.is_dir() else []
    if entries and not (resume or overwrite):
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise ValueError(
            f"output folder {out} is not empty ({shown}): run with {in_terms('--resume', 'resume=True')} to "
            f"continue the run recorded there, or {in_terms('--overwrite', 'overwrite=True')} to replace its results"
        )
    if not entries:
        return
    mine = tables.owned_outputs(out)
    tables.refuse_in_the_way(out, mine)
    blocked = RecordStore(out).in_the_way(cases)
    if blocked:  # before anything is removed
        raise RecordsInTheWay(blocked)
    if overwrite:
        with critical():
            RecordStore(out).remove(None)  # every record ccmetrics can read as its own; other files there stay
            with contextlib.suppress(OSError):
                (out / RECORDS_FOLDER).rmdir()  # when empty: only the user's own files keep it
            tables.remove_outputs(out, sorted(mine, key=lambda n: n == tables.MANIFEST_NAME))  # the manifest last
            with contextlib.suppress(OSError):
                (out / "plots").rmdir()


def refuse_stale_report(out_dir: str | os.PathLike) -> None:
    """Refuse to write tables where ``ccmetrics report`` drew a ``report.html`` from the earlier ones: a write of new
    tables (``DatasetResult.write``) removes it, since it would describe tables that are gone; the caller says so
    first with ``overwrite=True`` (``--overwrite``), as ``ccmetrics evaluate`` refuses a non-empty folder without
    ``--resume`` or ``--overwrite``.

    Only a report that ccmetrics drew counts (:func:`~ccmetrics.results.tables.drawn_by_ccmetrics`: its generator tag);
    a ``report.html`` of the user's is never removed, nor refused. The tables and figures of an earlier write are the
    set that a write replaces, as ever. Cost: one ``stat`` and the first 4 kB of the file.

    Raises
    ------
    FileExistsError
        The message names the report and the way on: ``overwrite=True`` (``--overwrite``) or another folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> refuse_stale_report(out)  # no report: nothing to refuse
    >>> _ = (out / "report.html").write_text("<p>my own notes</p>")
    >>> refuse_stale_report(out)  # the user's own page: a write leaves it alone
    >>> _ = (out / "report.html").write_text('<meta name="generator" content="ccmetrics 0.2">')
    >>> refuse_stale_report(out)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileExistsError: .../report.html was drawn by `ccmetrics report` from the tables there: ...
    """
    report = Path(out_dir) / "report.html"
    if tables.drawn_by_ccmetrics(report):
        raise FileExistsError(
            f"{report} was drawn by `ccmetrics report` from the tables there: writing new tables would remove it (it "
            f"would describe tables that are gone); {in_terms('run with --overwrite', 'pass overwrite=True')} to write "
            "them and remove it (`ccmetrics report` draws it again), or give another folder"
        )
