"""Durable per-case records: what makes a long evaluation survive a crash, a kill or Ctrl-C.

Every finished case is written at once into ``OUT_DIR/cases/`` as one small file, written to a
temporary name, flushed, fsync'd and renamed over its final name (then the folder is fsync'd), so a
record is either absent or whole, whatever moment the run is killed. A write that fails (a full disk,
a folder that became read-only) removes its temporary file and raises :class:`OutputWriteError`,
which names the path. The final tables of
:func:`ccmetrics.evaluate_dataset` are built from the records' contents, so a run resumed from them
(``resume=True``, ``ccmetrics evaluate --resume``) gives the same tables, bit for bit, as one that
was never interrupted: floats are written with Python's shortest round-trip ``repr`` and each
component table keeps its dtypes.

A record is two lines of JSON: a head ``{"format": 2, "sha256": ...}`` and the body, whose bytes the
SHA-256 covers, so a record edited by hand (still valid JSON) or damaged on disk is told from a good
one (:meth:`RecordStore.scan` names it) and its case is evaluated again. The body holds the case's
output and its **fingerprint**: for each input file its path, size and modification time (for an array
given directly: a SHA-1 of its bytes), the evaluation options that change values
(:meth:`ccmetrics.campaign.options.EvalOptions.key`) and the ccmetrics version. On resume a case is evaluated
again when its record is missing, unreadable or fails its checksum, when its fingerprint differs
(:func:`changes` says how), or when its last attempt failed for a reason that may not repeat (a worker
that died, a time-out, the memory limit: ``retry`` in the record).

A record's file name is its case id made safe for file names, never hidden (a leading ``.`` becomes ``_``),
plus a hash of the whole id, so that two ids never share a file; a record of an earlier ccmetrics under a hidden
name is still read. A file of the records folder is **provably ccmetrics'** (:meth:`RecordStore.owns`) when its
first line is a record's head and its name is the record name of the case its body names (or of the case being
recorded): only such files are ever removed or replaced (a damaged one: its case is evaluated again). Anything else
there is left alone (:meth:`RecordStore.scan` names it), and one at a case's record name stops the run before it
evaluates anything (:class:`RecordsInTheWay`).

What the fingerprint does not see: a file rewritten with the same size within the file system's
time resolution, or given an old modification time on purpose (``touch -d``); such a file is taken as
unchanged. Give ``--overwrite`` after replacing inputs that way.

Cost: one small file per case (a few kB per lesion table), written once; reading a folder of records
costs one SHA-256 and one JSON parse each.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy
from .._files import OutputWriteError, atomic_write, file_stem, fsync_folder
from .._interrupts import critical
from ..columns import Columns
from ..results.tables import RECORDS_FOLDER  # the sub-folder of the output folder: one record per finished case

if TYPE_CHECKING:
    import pandas as pd
else:  # imported where a table is made: a process that makes none never loads it
    pd = _lazy.module("pandas")

__all__ = [
    "RECORDS_FOLDER",
    "atomic_write",
    "CaseRecord",
    "OutputWriteError",
    "RecordProblem",
    "RecordStore",
    "changes",
    "decode_output",
    "decode_tables",
    "encode_output",
    "file_fingerprint",
    "RecordsInTheWay",
    "is_record_name",
    "is_temporary",
    "remove_temporaries",
    "temporary_of",
]

_FORMAT = 2  # 1: one JSON document without checksum (ccmetrics 0.1.0 and before: evaluated again)


def _stat(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def file_fingerprint(item: Any) -> dict[str, Any] | None:
    """What identifies one input: a file's path, size and modification time (ns) (of a folder: of each file in
    it), or an array's SHA-1.

    Examples
    --------
    >>> import numpy as np
    >>> file_fingerprint(None) is None
    True
    >>> file_fingerprint(np.zeros((2, 2), np.uint8))["sha1"][:8]
    '9069ca78'
    """
    if item is None:
        return None
    if isinstance(item, (str, os.PathLike)):
        path = os.fspath(item)
        try:
            stat = os.stat(path)
        except OSError:
            return {"path": path, "size": None, "mtime_ns": None}
        if os.path.isdir(path):  # a case given as a folder (DICOM): each file in it, hidden ones aside
            from ..formats.image import visible_files

            root = Path(path)
            files = visible_files(root)
            return {"path": path, "files": [[str(p.relative_to(path)), *_stat(p)] for p in files]}
        return {"path": path, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    array = getattr(item, "array", item)  # an Image: its voxels (its geometry comes with its file, if any)
    path = getattr(item, "path", None)
    array = np.ascontiguousarray(array)
    digest = hashlib.sha1(array.data).hexdigest() if array.size else "empty"
    out: dict[str, Any] = {"sha1": digest, "shape": list(array.shape), "dtype": str(array.dtype)}
    if path:
        out["path"] = path
    return out


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Why a case's record no longer stands: what differs between its stored and its current fingerprint.

    Examples
    --------
    >>> old = {"gt": {"path": "a.nii.gz", "size": 10, "mtime_ns": 1}, "pred": None, "options": {"metrics": ["dice"]}}
    >>> new = {"gt": {"path": "a.nii.gz", "size": 12, "mtime_ns": 2}, "pred": {"path": "p.nii.gz", "size": 3,
    ...        "mtime_ns": 1}, "options": {"metrics": ["dice", "nsd"]}}
    >>> changes(old, new)
    ['gt file changed (size 10 -> 12 bytes)', 'prediction added', 'option metrics changed']
    """
    out = []
    for key, name in (("gt", "gt"), ("pred", "prediction")):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if a is None or b is None:
            out.append(f"{name} {'added' if a is None else 'removed'}")
        elif a.get("path") != b.get("path"):
            out.append(f"{name} file is now {b.get('path')}")
        elif a.get("size") != b.get("size"):
            out.append(f"{name} file changed (size {a.get('size')} -> {b.get('size')} bytes)")
        elif "sha1" in a or "sha1" in b:
            out.append(f"{name} array changed")
        else:
            out.append(f"{name} file changed (modified since)")
    old_options, new_options = old.get("options", {}), new.get("options", {})
    for key in [*new_options, *(k for k in old_options if k not in new_options)]:
        if old_options.get(key) != new_options.get(key):
            out.append(f"option {key} changed")
    for key in ("error", "version"):
        if old.get(key) != new.get(key):
            out.append("pairing changed" if key == "error" else f"ccmetrics version {old.get(key)} -> {new.get(key)}")
    return out


# ---------------------------------------------------------------- exact JSON of one case's output


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _encode_frame(frame: pd.DataFrame | Columns | None) -> dict[str, Any] | None:
    if frame is None:
        return None
    if isinstance(frame, Columns):  # a table a worker made without pandas: the same encoding
        return frame.encoded()
    return {
        "columns": [str(c) for c in frame.columns],
        "dtypes": [str(t) for t in frame.dtypes],
        "data": [[_plain(v) for v in row] for row in frame.itertuples(index=False, name=None)],
    }


def _decode_frame(table: dict[str, Any] | None) -> pd.DataFrame | None:
    if table is None:
        return None
    frame = pd.DataFrame(table["data"], columns=table["columns"])
    text = _text_dtype()  # "str": text, as pandas names it (pandas 3: "str"; before: "object")
    return frame.astype({c: text if d == "str" else d for c, d in zip(table["columns"], table["dtypes"])})


@functools.cache
def _text_dtype() -> str:
    """The dtype pandas gives a column of text: what a table encoded without pandas (:meth:`Columns.encoded`, which
    names text ``"str"``) is decoded as, so that it equals the table pandas would have made."""
    return str(pd.Series(["text"]).dtype)


_TABLES = ("components", "predictions", "candidates", "thresholds")  # the tables of a case's output


def encode_output(output: dict[str, Any]) -> dict[str, Any]:
    """One case's output of :func:`ccmetrics.campaign.case.evaluate_task` as plain JSON-able data, losslessly.

    Floats keep every bit (JSON numbers written with ``repr``; NaN and infinities as JSON's
    ``NaN``/``Infinity``), the component and prediction tables keep their column order and dtypes.
    """
    return {
        "rows": [{k: _plain(v) for k, v in row.items()} for row in output["rows"]],
        "components": _encode_frame(output.get("components")),
        "predictions": _encode_frame(output.get("predictions")),
        "candidates": _encode_frame(output.get("candidates")),
        "thresholds": _encode_frame(output.get("thresholds")),
        "timing": {k: _plain(v) for k, v in output["timing"].items()},
        "retry": bool(output.get("retry", False)),
    }


def decode_tables(tables: Iterable[dict[str, Any] | None], text: Iterable[str] = ()) -> pd.DataFrame | None:
    """Many cases' encoded tables (one key of :func:`encode_output`'s outputs, in order) as one DataFrame: equal to
    ``pd.concat`` of each table with rows decoded (``ignore_index``), made with one DataFrame and one ``astype`` for
    each run of tables with the same columns and dtypes (a data set's tables: usually one). None when no table has
    a row.

    ``text``: columns of text, given pandas' text dtype whatever dtype a table names (pandas makes ``object`` of
    text joined with the ``float64`` of an empty list: a case's class without rows beside one with rows).

    Examples
    --------
    >>> a = {"columns": ["case", "dice"], "dtypes": ["object", "float64"], "data": [["a", 0.5], ["a", 1.0]]}
    >>> b = {"columns": ["case", "dice"], "dtypes": ["object", "float64"], "data": [["b", 0.25]]}
    >>> decode_tables([a, None, b])["dice"].tolist()
    [0.5, 1.0, 0.25]
    """
    runs: list[tuple[list[str], list[str], list[Any]]] = []
    for table in tables:
        if table is None or not table["data"]:
            continue
        if runs and runs[-1][0] == table["columns"] and runs[-1][1] == table["dtypes"]:
            runs[-1][2].extend(table["data"])
        else:
            runs.append((table["columns"], table["dtypes"], list(table["data"])))
    frames = [_decode_frame({"columns": c, "dtypes": d, "data": data}) for c, d, data in runs]
    if not frames:
        return None
    frame: pd.DataFrame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]  # type: ignore[assignment]
    return frame.astype({c: _text_dtype() for c in text if c in frame and frame[c].dtype != _text_dtype()})


def _checked_output(output: Any) -> dict[str, Any]:
    """A record's output, after checking that it has the shape :func:`encode_output` gives (rows, and tables of
    columns, dtypes and rows of as many values): TypeError for what is not decoded (the case is evaluated again)."""
    if not isinstance(output, dict) or not isinstance(output.get("rows"), list):
        raise TypeError("its output holds no rows")
    for key in _TABLES:
        table = output.get(key)
        if table is None:
            continue
        parts: list[Any] = (
            [table.get(part) for part in ("columns", "dtypes", "data")] if isinstance(table, dict) else []
        )
        if len(parts) != 3 or not all(isinstance(part, list) for part in parts):
            raise TypeError(f"its {key} table is not a table")
        columns, dtypes, data = (list(part) for part in parts)
        if len(dtypes) != len(columns) or not all(isinstance(row, list) and len(row) == len(columns) for row in data):
            raise TypeError(f"its {key} table has rows or dtypes of another width than its columns")
    return output


def decode_output(data: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`encode_output`: rows, the component, prediction and candidate tables with their dtypes,
    the timing."""
    return {
        "rows": data["rows"],
        "components": _decode_frame(data.get("components")),
        "predictions": _decode_frame(data.get("predictions")),
        "candidates": _decode_frame(data.get("candidates")),
        "thresholds": _decode_frame(data.get("thresholds")),
        "timing": data["timing"],
        "retry": data.get("retry", False),
    }


# ---------------------------------------------------------------- the folder of records


@dataclass
class CaseRecord:
    """A finished case as stored: its fingerprint, whether a new attempt may succeed, and its output as
    :func:`encode_output` gives it (plain JSON-able data; :func:`decode_output` makes its tables DataFrames)."""

    case: str
    fingerprint: dict[str, Any]
    output: dict[str, Any]
    retry: bool = False
    #: the file it was read from (None: not read from a file)
    path: Path | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RecordProblem:
    """A file of the records folder that cannot be taken: its path, its case (when the file still names one and its
    name is that case's record name) and why.

    ``marked``: its first line is the head of a record (:meth:`RecordStore.write`'s ``{"format": ..., "sha256":
    ...}``); ``ours``: besides, its name is the record name of the case its body names, so ccmetrics provably wrote
    it (it may be damaged or edited: its checksum fails). Only such a file is ever removed or replaced; any other
    is left alone.
    """

    path: Path
    case: str | None
    reason: str
    marked: bool = False
    ours: bool = False


class RecordStore:
    """The ``cases/`` folder of an output folder: one atomically written, checksummed record per finished case.

    Examples
    --------
    >>> import tempfile
    >>> store = RecordStore(tempfile.mkdtemp())
    >>> output = {"rows": [{"case": "a", "dice": 0.5}], "components": None, "timing": {"case": "a"}}
    >>> store.write(CaseRecord("a", {"gt": None}, encode_output(output)))
    >>> [r.output["rows"][0]["dice"] for r in store.read_all().values()]
    [0.5]
    """

    def __init__(self, out_dir: str | os.PathLike) -> None:
        self.folder = Path(out_dir) / RECORDS_FOLDER

    def path(self, case: str) -> Path:
        """The record file of a case: its id made safe for file names (never hidden: a leading ``.`` becomes
        ``_``), plus a hash of the whole id, so that two ids never share a file.

        >>> store = RecordStore("out")
        >>> store.path(".hidden").name, store.path("_hidden").name
        ('_hidden-92f73832be.json', '_hidden-fdbf8b02d0.json')
        """
        return self.folder / f"{file_stem(case)}-{_id_hash(case)}.json"

    def _paths(self, case: str) -> list[Path]:
        """Where a case's record may be: its name, and the hidden name that ccmetrics gave an id with a leading
        ``.`` before (still read, replaced when the case is recorded again)."""
        earlier = self.folder / f"{re.sub(r'[^A-Za-z0-9._-]', '_', case)[:80]}-{_id_hash(case)}.json"
        return [self.path(case)] + ([earlier] if earlier.name.startswith(".") else [])

    def write(self, record: CaseRecord) -> None:
        """Write a case's record atomically: a temporary file, flushed and fsync'd, renamed over the record (and the
        case's record under its earlier, hidden name removed, when ccmetrics provably wrote it).

        Raises
        ------
        OutputWriteError
            The record could not be written (its temporary file is removed; an earlier record stays).
        """
        body = json.dumps(
            {
                "case": record.case,
                "retry": record.retry,
                "fingerprint": record.fingerprint,
                "output": record.output,
            }
        ).encode()
        head = json.dumps({"format": _FORMAT, "sha256": hashlib.sha256(body).hexdigest()}).encode()
        final, *earlier = self._paths(record.case)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        with critical():  # a stop signal waits until the record is whole (or its temporary file gone)
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                with open(tmp, "wb") as f:
                    f.write(head + b"\n" + body + b"\n")
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, final)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                raise OutputWriteError(final, exc) from exc
            fsync_folder(self.folder)
            self.remove(paths=[p for p in earlier if self.owns(p, record.case)])

    def read_all(self) -> dict[str, CaseRecord]:
        """Every good record, by case id (:meth:`scan` without the problems)."""
        return self.scan()[0]

    def scan(self) -> tuple[dict[str, CaseRecord], list[RecordProblem]]:
        """Every good record by case id, and the other files of the folder and why they are not taken: unreadable,
        not a record (a file of someone else's: left alone), written by another format, or failing its checksum
        (edited or damaged). ``RecordProblem.ours`` tells a record ccmetrics provably wrote from the rest.

        Temporary files of an interrupted write are neither (:func:`remove_temporaries`), nor are hidden files
        other than a record under its earlier, hidden name.
        """
        out: dict[str, CaseRecord] = {}
        problems: list[RecordProblem] = []
        try:
            entries = sorted(self.folder.iterdir())
        except OSError:  # no records folder (or not a folder: prepare_out_dir names it)
            return out, problems
        for path in entries:
            hidden = path.name.startswith(".")
            if is_temporary(path.name):
                continue
            if path.is_symlink() or not path.is_file() or not path.name.endswith(".json"):
                if not hidden:
                    problems.append(RecordProblem(path, None, "not a ccmetrics record"))
                continue
            record, why, marked, case = self._read(path)
            named = case is not None and path in self._paths(case)
            if record is not None and named:
                if record.case not in out or path == self.path(record.case):  # the current name wins
                    record.path = path
                    out[record.case] = record
            elif hidden and not named:
                continue  # a hidden file of someone else's
            elif record is not None:
                problems.append(RecordProblem(path, None, "its name is not the name of the case it holds", True))
            else:
                problems.append(RecordProblem(path, case if named else None, why, marked, marked and named))
        return out, problems

    @staticmethod
    def _read(path: Path) -> tuple[CaseRecord | None, str, bool, str | None]:
        """The record in a file (or None and why), whether its first line is a record's head, and the case its body
        names (None when it names none)."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            return None, f"unreadable ({exc.strerror or exc})", False, None
        head_bytes, _, body = data.partition(b"\n")
        head = _head(head_bytes)
        if head is None:
            return None, "not a ccmetrics record", False, None
        if head["format"] != _FORMAT:
            old = head.get("case") if isinstance(head.get("case"), str) else None
            return None, f"written in record format {head['format']} (this ccmetrics writes {_FORMAT})", True, old
        body = body.rstrip(b"\n")
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        case = doc.get("case") if isinstance(doc, dict) and isinstance(doc.get("case"), str) else None
        if hashlib.sha256(body).hexdigest() != head["sha256"]:
            return None, "fails its checksum (edited or damaged)", True, case
        try:
            record = CaseRecord(doc["case"], doc["fingerprint"], _checked_output(doc["output"]), doc["retry"])
        except (KeyError, TypeError) as exc:
            return None, f"not a whole record ({type(exc).__name__}: {exc})", True, case
        return record, "", True, case

    def owns(self, path: Path, case: str | None = None) -> bool:
        """Whether ccmetrics provably wrote this file as a record: a regular file whose first line is a record's
        head and whose name is the record name of ``case`` (default: of the case its body names), checksum or not.

        >>> import tempfile
        >>> store = RecordStore(tempfile.mkdtemp())
        >>> store.write(CaseRecord("a", {}, encode_output({"rows": [], "timing": {}})))
        >>> store.owns(store.path("a")), store.owns(store.path("b"), "b")
        (True, False)
        """
        if path.is_symlink() or not path.is_file():
            return False
        _, _, marked, named = self._read(path)
        return marked and path in self._paths(case if case is not None else named or "")

    def in_the_way(self, cases: Iterable[str]) -> list[Path]:
        """The record names of these cases that hold something ccmetrics did not write (a folder, a link, a file of
        someone else's): writing the case's record would replace it (one listing of the folder, and a read of each
        file found at such a name)."""
        try:
            names = set(os.listdir(self.folder))
        except OSError:
            return []
        found = (self.path(c) for c in cases)
        return [p for p in found if p.name in names and (p.is_symlink() or not p.is_file() or not self._read(p)[2])]

    def remove(self, cases: Iterable[str] | None = (), paths: Iterable[Path] = ()) -> list[Path]:
        """Remove the records of these cases (every record with ``cases=None``) and these files, each only when
        ccmetrics provably wrote it (:meth:`owns`); anything else stays. Returns the removed paths.

        Raises
        ------
        OutputWriteError
            A record could not be removed (the message names it).
        """
        if not self.folder.is_dir():
            return []
        if cases is None:
            chosen = sorted(p for p in self.folder.iterdir() if p.name.endswith(".json") and self.owns(p))
        else:
            chosen = [p for c in cases for p in self._paths(c) if self.owns(p, c)]
        removed = []
        for path in [*chosen, *(p for p in paths if self.owns(p))]:
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise OutputWriteError(path, exc, "remove") from exc
            removed.append(path)
        return removed


def _id_hash(case: str) -> str:
    """The part of a record's name that keeps case ids apart (the SHA-1 of the whole id, 10 hex digits)."""
    return hashlib.sha1(case.encode()).hexdigest()[:10]


def _head(line: bytes) -> dict[str, Any] | None:
    """A record's first line as :meth:`RecordStore.write` writes it (``{"format": 2, "sha256": HEX}``; format 1, of
    ccmetrics 0.1.0: the whole record on one line, with its ``case``), or None for any other line."""
    try:
        head = json.loads(line)
    except ValueError:
        return None
    if not isinstance(head, dict) or type(head.get("format")) is not int:
        return None
    if head["format"] == 1:
        return head if isinstance(head.get("case"), str) and "fingerprint" in head else None
    sha = head.get("sha256")
    if set(head) != {"format", "sha256"} or not isinstance(sha, str) or re.fullmatch(r"[0-9a-f]{64}", sha) is None:
        return None
    return head


_TEMPORARY = re.compile(r"\.(?P<stem>.+)\.\d+\.tmp(?P<suffix>\.[A-Za-z0-9]+)?")
_RECORD_NAME = re.compile(r"[A-Za-z0-9._-]{1,80}-[0-9a-f]{10}\.json")


def temporary_of(name: str) -> str | None:
    """The file that a temporary name of :meth:`RecordStore.write` (``.NAME.PID.tmp``) or :func:`atomic_write`
    (``.STEM.PID.tmp.SUFFIX``) stands for; None for any other name.

    >>> temporary_of(".per_case.4242.tmp.csv"), temporary_of(".case_01-ab12.json.4242.tmp"), temporary_of("a.csv")
    ('per_case.csv', 'case_01-ab12.json', None)
    """
    found = _TEMPORARY.fullmatch(name)
    return None if found is None else found["stem"] + (found["suffix"] or "")


def is_temporary(name: str) -> bool:
    """Whether a file name is one of the temporary names :meth:`RecordStore.write` and :func:`atomic_write` use.

    >>> is_temporary(".per_case.4242.tmp.csv"), is_temporary(".case_01-ab12.json.4242.tmp"), is_temporary("a.csv")
    (True, True, False)
    """
    return temporary_of(name) is not None


def is_record_name(name: str) -> bool:
    """Whether a file name is one that :meth:`RecordStore.path` gives (an id made safe, a hash, ``.json``).

    >>> is_record_name(RecordStore("out").path("case 1").name), is_record_name("notes.json")
    (True, False)
    """
    return _RECORD_NAME.fullmatch(name) is not None


def remove_temporaries(folder: str | os.PathLike, finals: Callable[[str], bool] = is_record_name) -> int:
    """Remove the temporary files that a write stopped half-way left in ``folder``: only those whose final name is
    one ccmetrics writes there (``finals``; default: a record's name), so that a file of someone else's that merely
    looks temporary stays. Run it while no other process writes there (under the output folder's lock); returns
    how many were removed."""
    removed = 0
    try:
        names = [entry.name for entry in os.scandir(os.fspath(folder)) if entry.is_file(follow_symlinks=False)]
    except OSError:
        return 0
    for name in names:
        final = temporary_of(name)
        if final is not None and finals(final):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(os.fspath(folder), name))
                removed += 1
    return removed


class RecordsInTheWay(ValueError):
    """Files that ccmetrics did not write have the record names of cases (a run would replace them): the message
    names them and what to do."""

    def __init__(self, paths: list[Path]) -> None:
        shown = ", ".join(map(str, paths[:5])) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        super().__init__(
            f"{shown}: not written by ccmetrics (not a case record), but where the record of "
            f"{'its case' if len(paths) == 1 else 'their cases'} goes; ccmetrics removes no file of yours: move "
            f"{'it' if len(paths) == 1 else 'them'} out of {paths[0].parent}, or give another output folder (--out)"
        )
        self.paths = paths
