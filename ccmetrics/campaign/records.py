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
(:meth:`ccmetrics.campaign.dataset.EvalOptions.key`) and the ccmetrics version. On resume a case is evaluated
again when its record is missing, unreadable or fails its checksum, when its fingerprint differs
(:func:`changes` says how), or when its last attempt failed for a reason that may not repeat (a worker
that died, a time-out, the memory limit: ``retry`` in the record).

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
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lazy
from .._files import OutputWriteError, atomic_write, fsync_folder
from .._interrupts import critical
from ..columns import Columns

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
    "is_temporary",
    "remove_temporaries",
]

#: the sub-folder of the output folder that holds one record per finished case
RECORDS_FOLDER = "cases"
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
    """One case's output of :func:`ccmetrics.campaign.dataset.evaluate_task` as plain JSON-able data, losslessly.

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


@dataclass(frozen=True)
class RecordProblem:
    """A record file that cannot be taken: its path, its case (when the file still names one) and why."""

    path: Path
    case: str | None
    reason: str


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
        """The record file of a case: its id made safe for file names, plus a hash (ids stay distinct)."""
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", case)[:80]
        return self.folder / f"{safe}-{hashlib.sha1(case.encode()).hexdigest()[:10]}.json"

    def write(self, record: CaseRecord) -> None:
        """Write a case's record atomically: a temporary file, flushed and fsync'd, renamed over the record.

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
        final = self.path(record.case)
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

    def read_all(self) -> dict[str, CaseRecord]:
        """Every good record, by case id (:meth:`scan` without the problems)."""
        return self.scan()[0]

    def scan(self) -> tuple[dict[str, CaseRecord], list[RecordProblem]]:
        """Every good record by case id, and the record files that cannot be taken and why: unreadable,
        not a record, written by another format, or failing its checksum (edited by hand or damaged).

        Temporary files of an interrupted write are neither (:func:`remove_temporaries`).
        """
        out: dict[str, CaseRecord] = {}
        problems: list[RecordProblem] = []
        if not self.folder.is_dir():
            return out, problems
        for path in sorted(self.folder.glob("*.json")):
            if path.name.startswith("."):
                continue
            record, why = self._read(path)
            if record is None:
                problems.append(RecordProblem(path, _case_named(path), why))
            elif self.path(record.case) != path:
                problems.append(RecordProblem(path, None, "its name does not match the case it holds"))
            else:
                out[record.case] = record
        return out, problems

    @staticmethod
    def _read(path: Path) -> tuple[CaseRecord | None, str]:
        try:
            data = path.read_bytes()
        except OSError as exc:
            return None, f"unreadable ({exc.strerror or exc})"
        head_bytes, _, body = data.partition(b"\n")
        try:
            head = json.loads(head_bytes)
            if not isinstance(head, dict) or "format" not in head:
                raise ValueError
        except ValueError:
            return None, "not a ccmetrics record (damaged?)"
        if head["format"] != _FORMAT:
            return None, f"written in record format {head['format']} (this ccmetrics writes {_FORMAT})"
        body = body.rstrip(b"\n")
        if hashlib.sha256(body).hexdigest() != head.get("sha256"):
            return None, "fails its checksum (edited or damaged)"
        try:
            doc = json.loads(body)
            record = CaseRecord(doc["case"], doc["fingerprint"], _checked_output(doc["output"]), doc["retry"])
        except (ValueError, KeyError, TypeError) as exc:
            return None, f"not a whole record ({type(exc).__name__}: {exc})"
        return record, ""

    def remove(self, cases: Iterable[str] | None = None, paths: Iterable[Path] = ()) -> None:
        """Remove the records of these cases (all records, and stray temporaries, when None) and these files."""
        if not self.folder.is_dir():
            return
        chosen = self.folder.glob("*") if cases is None else (self.path(c) for c in cases)
        for path in [*chosen, *paths]:
            try:
                if path.is_dir() and not path.is_symlink():  # a folder where a record belongs: in the way
                    shutil.rmtree(path)
                elif path.is_file() or path.is_symlink():
                    path.unlink()
            except OSError as exc:
                raise OutputWriteError(path, exc, "remove") from exc


def _case_named(path: Path) -> str | None:
    """The case a damaged record file belongs to, when its body still says (else None)."""
    try:
        body = path.read_bytes().partition(b"\n")[2]
        case = json.loads(body).get("case")
    except (OSError, ValueError, AttributeError):
        return None
    return case if isinstance(case, str) else None


def is_temporary(name: str) -> bool:
    """Whether a file name is one of the temporary names :meth:`RecordStore.write` and :func:`atomic_write` use.

    >>> is_temporary(".per_case.4242.tmp.csv"), is_temporary(".case_01-ab12.json.4242.tmp"), is_temporary("a.csv")
    (True, True, False)
    """
    return name.startswith(".") and re.search(r"\.\d+\.tmp(\.|$)", name) is not None


def remove_temporaries(*folders: str | os.PathLike) -> int:
    """Remove the temporary files that a write stopped half-way left in these folders (run while no other
    process writes there: under the output folder's lock); returns how many."""
    removed = 0
    for folder in folders:
        try:
            names = [entry.name for entry in os.scandir(os.fspath(folder)) if entry.is_file(follow_symlinks=False)]
        except OSError:
            continue
        for name in names:
            if is_temporary(name):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(os.fspath(folder), name))
                    removed += 1
    return removed
