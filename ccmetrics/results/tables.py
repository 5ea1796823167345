"""The tables of a run in an output folder: a set that always belongs together (the manifest), and the files
ccmetrics provably wrote there.

A **manifest names the set** (:func:`begin_tables`, :func:`finish_tables`, :func:`read_tables`): before the first
table is replaced, ``manifest.json`` says ``"state": "writing"``; when every file is written and the files of an
earlier run that this run does not produce are removed, it lists each file with its size and SHA-256 and the run's
id, ``"state": "complete"``. A reader (:meth:`ccmetrics.results.DatasetResult.read`, through :func:`read_tables`)
takes only a complete set whose files match their checksums, each file's checksum checked on the very bytes it
parses, so it never takes a ``per_case.csv`` of one run beside the ``summary.json`` of another, even while another
run rewrites them. A folder without a manifest was written by an earlier ccmetrics and is read as before.

**Ownership** (:func:`owned_outputs`): ccmetrics removes or replaces only files it provably wrote, those its
manifest lists with their checksum (and a ``report.html`` that names ccmetrics as its generator); a file of
someone else's where it writes its own is named in an error before anything is removed
(:func:`refuse_in_the_way`). The folder's lock, its records and the preparation of a run's folder are the
campaign's (:mod:`ccmetrics.campaign.output_folder`).

Cost: a manifest hashes each written file once (about 0.5 GB/s) and a reader hashes the files it reads once more.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import schema
from .._files import OutputWriteError, atomic_write
from .._interrupts import critical
from .._words import in_terms

__all__ = [
    "MANIFEST_NAME",
    "OUTPUT_NAMES",
    "RECORDS_FOLDER",
    "TABLE_OUTPUTS",
    "begin_tables",
    "drawn_by_ccmetrics",
    "finish_tables",
    "is_output_name",
    "owned_outputs",
    "read_tables",
    "refuse_in_the_way",
    "remove_outputs",
    "stale_outputs",
]

#: the folder of a run's case records, beside its tables (:mod:`ccmetrics.campaign.records` writes them)
RECORDS_FOLDER = "cases"
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
            if is_output_name(name) and isinstance(digest, dict) and _file_digest(out / name) == digest:
                mine[name] = digest
        if doc["state"] == "writing":  # stopped half-way: the files at its own names (report.html: its own proof)
            named = [n for n in OUTPUT_NAMES if is_output_name(n) and n != "report.html"] + _figures(out)
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


def is_output_name(name: str) -> bool:
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
    blocked = [n for n in (*OUTPUT_NAMES, *_figures(out)) if is_output_name(n) and n != "report.html"]
    blocked = [n for n in blocked if os.path.lexists(out / n) and n not in mine]
    for folder in (RECORDS_FOLDER, "plots"):
        path = out / folder
        if os.path.lexists(path) and (path.is_symlink() or not path.is_dir()):
            blocked.append(folder)
    return blocked


def refuse_in_the_way(out: Path, mine: dict[str, Any]) -> None:
    """Refuse a folder where a file that ccmetrics did not write (not in ``mine``, :func:`owned_outputs`) stands at
    the name of one of its tables or figures, or a file or link stands for ``cases/`` or ``plots/``.

    Raises
    ------
    ValueError
        The message names them and says what to do; nothing is removed.
    """
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


def remove_outputs(out: Path, names: Iterable[str]) -> list[str]:
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
    refuse_in_the_way(out, mine)
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
        remove_outputs(out, removed)
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
        f"run the same {in_terms('`ccmetrics evaluate` again with --resume', 'evaluation again with resume=True')}: "
        "it takes every finished case "
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
