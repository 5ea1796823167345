"""Files that are never seen half-written, and write errors that name the file.

:func:`atomic_write` writes to a temporary file beside the target, fsyncs it, renames it over the target
and fsyncs the folder, inside a critical section (:mod:`ccmetrics._interrupts`: a stop signal waits for
the end); an OS error (a full disk, no permission) removes the temporary file and is raised as
:class:`OutputWriteError`, which names the path. Used by the records, the tables, the manifest and the
figures alike. Cost: one fsync of the file and one of its folder.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._interrupts import critical

__all__ = [
    "OutputWriteError",
    "atomic_write",
    "dangling_link",
    "fsync_folder",
    "refuse_dangling_link",
    "temporary_path",
]


class OutputWriteError(OSError):
    """A file of the output folder could not be written (a full disk, no permission, a read-only folder):
    an ``OSError`` with the original ``errno`` and ``strerror`` whose message names the path.

    Examples
    --------
    >>> import errno
    >>> str(OutputWriteError("out/per_case.csv", OSError(errno.ENOSPC, "No space left on device")))
    'cannot write out/per_case.csv: No space left on device (errno 28)'
    """

    def __init__(self, path: str | os.PathLike, cause: OSError, action: str = "write") -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), os.fspath(path))
        self.path, self.action = os.fspath(path), action

    def __str__(self) -> str:
        errno = f" (errno {self.errno})" if self.errno else ""
        return f"cannot {self.action} {self.path}: {self.strerror}{errno}"


def file_stem(text: str) -> str:
    """``text`` (a case id) made safe as a file name's stem: characters other than ASCII letters, digits, ``.``, ``_``
    and ``-`` become ``_``, at most 80 of them, and a leading ``.`` becomes ``_`` (never a hidden file). Callers add
    a hash of ``text`` wherever two texts could give one name (the case's record; an outcome map).

    >>> file_stem("a/b"), file_stem(".hidden"), file_stem("Case 1")
    ('a_b', '_hidden', 'Case_1')
    """
    return re.sub(r"^\.", "_", re.sub(r"[^A-Za-z0-9._-]", "_", text)[:80])


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any], extension: str | None = None) -> Path:
    """Write a file so that it is never seen half-written: ``write(tmp)`` to a temporary file beside it
    (same extension, so writers that pick a format by name still do: ``extension`` where it has two dots, e.g.
    ``".nii.gz"``), fsync, then rename over ``path``.
    An ``OSError`` (a full disk, no permission) removes the temporary file and is raised as
    :class:`OutputWriteError`, which names ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "table.csv"
    >>> atomic_write(target, lambda tmp: tmp.write_text("a,b\\n1,2\\n")).read_text().splitlines()
    ['a,b', '1,2']
    """
    final = Path(path)
    tmp = temporary_path(final, os.getpid(), extension)
    with critical():  # a stop signal waits until the file is replaced (or its temporary file gone)
        try:
            write(tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except OSError as exc:
            raise OutputWriteError(final, exc) from exc
        finally:
            with contextlib.suppress(OSError):
                if tmp.exists():
                    tmp.unlink()
        fsync_folder(final.parent)
    return final


def temporary_path(path: str | os.PathLike, pid: int, extension: str | None = None) -> Path:
    """The temporary file beside ``path`` that :func:`atomic_write` in process ``pid`` writes first (the same
    extension: ``extension`` where it has two dots): what to remove after that process was killed.

    >>> temporary_path("out/plots/roc.png", 42).as_posix()
    'out/plots/.roc.42.tmp.png'
    """
    final = Path(path)
    suffix = final.suffix if extension is None else extension
    return final.with_name(f".{final.name[: len(final.name) - len(suffix)]}.{pid}.tmp{suffix}")


def fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def dangling_link(path: str | os.PathLike) -> str | None:
    """The first symbolic link of ``path`` (itself or a folder above it) whose target does not exist, or None:
    creating ``path`` through it would create the link's target, parents and all.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "link").symlink_to(folder / "gone")
    >>> dangling_link(folder / "link" / "out") == str(folder / "link"), dangling_link(folder / "out")
    (True, None)
    """
    full = Path(os.path.abspath(path))
    for part in [full, *full.parents]:
        if part.is_symlink() and not part.exists():
            return str(part)
    return None


def refuse_dangling_link(path: str | os.PathLike, option: str) -> None:
    """Raise ``NotADirectoryError`` naming ``option``, the link and its target when ``path`` goes through a symbolic
    link whose target does not exist (:func:`dangling_link`): ccmetrics creates no link's target."""
    link = dangling_link(path)
    if link is not None:
        raise NotADirectoryError(
            f"{os.fspath(path)} ({option}) goes through the symbolic link {link}, whose target {os.readlink(link)} "
            f"does not exist: ccmetrics creates no link's target; create the target folder first, or give another "
            f"{option}"
        )
