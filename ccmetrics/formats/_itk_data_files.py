"""The data files a MetaImage or NRRD header names, and the checks on them before SimpleITK opens them.

``_check_data_files`` refuses a header whose data files (``ElementDataFile``, NRRD's ``data file``: one name, a
``LIST`` or a ``%d`` pattern, as ``_data_file_names`` expands them) lie outside the header's folder (an absolute path,
``..``, a symbolic link to a file or folder elsewhere) or are no regular file (a FIFO, a device, a folder), and a
header whose data files cannot all be known (a header longer than its first MiB, a ``LIST`` longer than
``_MAX_LIST_BYTES``, more than ``_MAX_DATA_FILES`` names, a pattern SimpleITK would misread).  ``_metaimage_data`` and
``_nrrd_data`` say where a header's data lie (file, offset, encoding), for the size check
(``ccmetrics.formats._sizes._check_data_size``).

Cost: the header's text is read up to its end (at most its first MiB, ``_header_lines``), a ``LIST`` up to
``_MAX_LIST_BYTES``; then one ``stat`` and one ``realpath`` per data file named (at most ``_MAX_DATA_FILES``).
No voxel is read.  Private to :mod:`ccmetrics.formats`; its reader is :mod:`ccmetrics.formats.io`.
"""

from __future__ import annotations

import os
import re
import stat

from ._sizes import _CHUNK
from .image import ImageReadError

#: the most data files one header may name (a pattern such as ``slice%04d.raw 1 9999 1`` names them all); a header
#: that names more is refused rather than checked in part
_MAX_DATA_FILES = 100_000

#: the most bytes of a ``LIST`` of data file names (after the header's ``LIST`` line) that are read and checked
_MAX_LIST_BYTES = 16 << 20

#: C's ``int``, which MetaIO counts a ``%d`` pattern's numbers in
_INT_MAX = 2**31 - 1

_META_LOCAL = ("LOCAL", "Local", "local")  # MetaIO's names for data in the header's own file (case-sensitive)


def _check_data_files(path: str, metaimage: bool) -> None:
    """Refuse a MetaImage or NRRD header whose data files (``ElementDataFile``, NRRD's ``data file``: one name, a
    ``LIST`` or a ``%d`` pattern) lie outside the header's folder (an absolute path, ``..``, a symbolic link to a
    file or folder elsewhere), or are no regular file (a FIFO, which would block the read forever, a device such as
    ``/dev/zero``, which never ends, a folder): before SimpleITK opens them. A data file that does not exist is left
    to SimpleITK, which names it. A header whose data files cannot all be known (a header longer than its first MiB,
    a ``LIST`` longer than ``_MAX_LIST_BYTES``, more than ``_MAX_DATA_FILES`` names, a pattern SimpleITK would
    misread) is refused too."""
    field = "ElementDataFile" if metaimage else "data file"
    names = _data_file_names(path, metaimage)
    folder = os.path.dirname(os.path.abspath(path))
    real_folder = os.path.realpath(folder)
    for name in names:
        target = os.path.normpath(os.path.join(folder, name))
        if os.path.commonpath([folder, target]) != folder:
            raise ImageReadError(
                f"cannot read {path!r}: its data file {name!r} ({field}) lies outside the header's folder "
                f"{folder!r}; ccmetrics reads a header's data only from its own folder or below it: move or copy "
                "the data file beside the header and give its name there"
            )
        try:
            mode = os.stat(target).st_mode
        except OSError:
            mode = None  # missing: SimpleITK says so
        if mode is not None and not stat.S_ISREG(mode):
            raise ImageReadError(
                f"cannot read {path!r}: its data file {target!r} ({field}) is {_file_kind(mode)}, not a regular "
                "file (reading it could wait forever or never end): write the data into a regular file"
            )
        real = os.path.realpath(target)
        if os.path.commonpath([real_folder, real]) != real_folder:
            raise ImageReadError(
                f"cannot read {path!r}: its data file {name!r} ({field}) is a symbolic link (or lies under one) to "
                f"{real!r}, outside the header's folder {folder!r}; ccmetrics reads a header's data only from its "
                "own folder or below it: copy the data file beside the header instead of linking it"
            )


def _file_kind(mode: int) -> str:
    """What a non-regular file is, for messages."""
    kinds = [
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((what for test, what in kinds if test(mode)), "not a regular file")


def _meta_field(line: str) -> tuple[str, str]:
    """(key, value) of a MetaImage header line as MetaIO splits it: the key up to the first ``=`` or ``:``
    (case-sensitive, spaces around it dropped), the value after it, stripped."""
    match = re.match(r"\s*([^=:]*?)\s*[=:](.*)", line)
    return (match.group(1), match.group(2).strip()) if match else (line.strip(), "")


def _is_element_data_file(line: str) -> bool:
    """The line that ends a MetaImage header (MetaIO stops at ``ElementDataFile``, spelt so: other cases are
    ignored fields)."""
    return _meta_field(line)[0] == "ElementDataFile"


def _data_file_names(path: str, metaimage: bool) -> list[str]:
    """The data file names a MetaImage or NRRD header gives, as written (relative to its folder, or absolute): none
    for data in the file itself; a ``LIST``'s names (every line after it); a ``%d`` pattern's, from its first to
    its last number, as MetaIO or NRRD expands it (a MetaImage name also with ``.gz`` and ``.Z``, which MetaIO tries
    where the name is missing). Raises ImageReadError where they cannot all be known."""
    if metaimage:
        found = _header_lines(path, _is_element_data_file, what="its ElementDataFile line")
        if found is None:
            return []  # no ElementDataFile: SimpleITK says so
        lines, ends = found
        value = _meta_field(lines[-1])[1]
        if value in _META_LOCAL:
            return []
        if value[:4] == "LIST":  # the names follow the header, one a line (MetaIO keeps leading spaces)
            return _list_names(path, ends[-1], "ElementDataFile")
        if "%" in value:
            return _metaimage_pattern(path, value, lines)
        return [value, value + ".gz", value + ".Z"]
    found = _header_lines(path, lambda line: line == "", eof_ends=True, what="the blank line that ends its header")
    lines, ends = found if found is not None else ([], [])
    names: list[str] = []
    for n, line in enumerate(lines):
        key, sep, rest = line.partition(":")
        if n and sep and not line.startswith("#") and key.strip().lower() in ("data file", "datafile"):
            names += _nrrd_names(path, rest.strip(), ends[n])
            if rest.strip().upper().startswith("LIST"):
                break  # the rest of the file is the list's
    return names


def _nrrd_names(path: str, value: str, at: int) -> list[str]:
    """The names of one NRRD ``data file`` field ``value`` whose line ends at byte ``at``: a ``LIST`` (the rest of the
    header file, one name a line; with the field's own value where it is no ``LIST`` in capitals), a pattern
    ``<format> <min> <max> <step> [<subdim>]`` (a negative step counts down), or one name."""
    field = "data file"
    if value.upper().startswith("LIST"):
        return _list_names(path, at, field) + ([] if value.startswith("LIST") else [value])
    parts = value.split()
    if "%" in value and len(parts) >= 4:
        first, last, step = (_pattern_number(path, field, value, word) for word in parts[1:4])
        if step == 0:
            raise ImageReadError(
                f"cannot read {path!r}: its data file pattern {value!r} has step 0 (the form is "
                "'<format> <min> <max> <step>', with a step other than 0)"
            )
        count = max(0, (last - first) // step + 1)
        return _pattern_names(path, field, value, parts[0], range(first, first + step * count, step))
    return [value]


def _list_names(path: str, start: int, field: str) -> list[str]:
    """The names of a ``LIST`` of data files: every line of ``path`` from byte ``start`` on, trailing spaces and
    control characters dropped as MetaIO drops them (and all surrounding spaces, as NRRD may), blank lines skipped;
    refused past ``_MAX_LIST_BYTES`` or ``_MAX_DATA_FILES`` names rather than checked in part."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(_MAX_LIST_BYTES + 1)
    if len(data) > _MAX_LIST_BYTES:
        raise ImageReadError(
            f"cannot read {path!r}: its LIST of data files ({field}) runs past {_MAX_LIST_BYTES:,} bytes, more than "
            "ccmetrics checks; split the image or write its data into one file"
        )
    names: list[str] = []
    count = 0
    for raw in data.decode("latin-1").split("\n"):
        trimmed = re.sub(r"[^\x21-\x7e]+$", "", raw)
        count += bool(trimmed)
        names += [name for name in dict.fromkeys((trimmed, raw.strip())) if name]
    if count > _MAX_DATA_FILES:
        raise ImageReadError(
            f"cannot read {path!r}: its LIST of data files ({field}) names {count:,} files, more than the "
            f"{_MAX_DATA_FILES:,} ccmetrics checks; write the image's data into fewer files"
        )
    return names


def _pattern_number(path: str, field: str, value: str, word: str) -> int:
    """A number of a ``%d`` pattern, as C's ``(int) atof`` reads it; refused where it is no number or past C's
    ``int``."""
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", word):
        number = float(word)
        if abs(number) <= _INT_MAX:
            return int(number)
    raise ImageReadError(
        f"cannot read {path!r}: its data file pattern {value!r} ({field}) has {word!r} where a whole number from "
        f"{-_INT_MAX} to {_INT_MAX} belongs (the form is 'name%d.ext <first> <last> <step>')"
    )


def _metaimage_pattern(path: str, value: str, lines: list[str]) -> list[str]:
    """The names a MetaImage ``ElementDataFile`` pattern gives, counted as MetaIO counts them (``metaImage.cxx``):
    ``fmt`` alone is 1 to N (N: the last ``DimSize``), ``fmt first`` first to first + N - 1, ``fmt first last``
    steps by (last - first) / N (C's division), ``fmt first last step``; more words are a name with spaces and its
    three numbers. Whatever MetaIO would misread (a step of 0 or less: a division by zero or a loop without end) is
    refused."""
    field = "ElementDataFile"
    form = (
        "the form is 'name%d.ext', 'name%d.ext <first>', 'name%d.ext <first> <last>' or 'name%d.ext <first> <last> "
        "<step>', with whole numbers and a step above 0"
    )
    fields = dict(_meta_field(line) for line in lines)
    try:
        dims = [int(float(word)) for word in fields.get("DimSize", "").split()]
        ndims = int(float(fields["NDims"])) if "NDims" in fields else len(dims)
        slices = dims[ndims - 1] if 0 < ndims <= len(dims) else None
    except (ValueError, OverflowError):
        slices = None
    if slices is None:
        raise ImageReadError(
            f"cannot read {path!r}: its ElementDataFile is the pattern {value!r}, whose files are counted from the "
            f"last of NDims DimSize values, and its DimSize {fields.get('DimSize', '')!r} gives none"
        )
    if slices <= 0:
        return []  # no slice: nothing is read (and the empty axis is refused by its own check)
    words = value.split()
    first, last, step = 1, slices, 1
    if len(words) >= 5:  # MetaIO: the last three words are numbers (digits only), the rest the name
        if not all(word.isascii() and word.isdigit() for word in words[-3:]):
            raise ImageReadError(f"cannot read {path!r}: its ElementDataFile pattern {value!r} is misread: {form}")
        first, last, step = (_pattern_number(path, field, value, word) for word in words[-3:])
        words = [" ".join(words[:-3])]
    if len(words) >= 2:
        first = _pattern_number(path, field, value, words[1])
        last = first + slices - 1
    if len(words) >= 3:
        last = _pattern_number(path, field, value, words[2])
        span = last - first
        step = abs(span) // slices * (1 if span >= 0 else -1)  # C's division: toward 0
    if len(words) >= 4:
        step = _pattern_number(path, field, value, words[3])
    if step <= 0 or max(abs(first), abs(last)) > _INT_MAX:
        raise ImageReadError(
            f"cannot read {path!r}: its ElementDataFile pattern {value!r} gives a step of {step} for "
            f"{slices} slices (SimpleITK would divide by zero or never stop): {form}"
        )
    if 1 + (last - first) // step > slices:  # MetaIO reads no more files than slices
        last = (slices - 1) * step + first
    if last + step > _INT_MAX:
        raise ImageReadError(
            f"cannot read {path!r}: its ElementDataFile pattern {value!r} counts past {_INT_MAX} (C's int): {form}"
        )
    return _pattern_names(path, field, value, words[0], range(first, last + 1, step))


def _pattern_names(path: str, field: str, value: str, fmt: str, numbers: range) -> list[str]:
    """``fmt`` (one ``%d``-like conversion, as C's printf writes it) filled with each of ``numbers``; refused past
    ``_MAX_DATA_FILES`` names or where the format is not one whole-number conversion."""
    if len(numbers) > _MAX_DATA_FILES:
        raise ImageReadError(
            f"cannot read {path!r}: its data file pattern {value!r} ({field}) names {len(numbers):,} files, more "
            f"than the {_MAX_DATA_FILES:,} ccmetrics checks; write the image's data into fewer files"
        )
    spec = re.compile(r"%(?:%|([-+ 0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|j|z|t|L|q)?([diuxXo]))")
    found = [m for m in spec.finditer(fmt) if m.group(2)]
    if len(found) != 1 or "%" in spec.sub("", fmt):
        raise ImageReadError(
            f"cannot read {path!r}: its data file pattern {value!r} ({field}) needs exactly one whole-number "
            "conversion such as %d or %03d in its name (and %% for a % sign)"
        )
    m = found[0]
    kind = m.group(2)
    python = fmt[: m.start()] + "%" + m.group(1) + ("d" if kind in "diu" else kind) + fmt[m.end() :]
    return [python % (n & 0xFFFFFFFF if kind in "uxXo" else n) for n in numbers]


def _header_lines(path: str, last, eof_ends: bool = False, what: str = "its end"):
    """(text lines, the offset after each) of a text header, up to the line for which ``last(line)`` is true (or the
    end of the file, with ``eof_ends``); None where the file ends first. A header that runs past its first MiB is
    refused (``what``: what was not found there), as the data files it names could not all be checked."""
    lines: list[str] = []
    ends: list[int] = []
    with open(path, "rb") as f:
        while f.tell() < _CHUNK:
            raw = f.readline(_CHUNK)
            if not raw:
                return (lines, ends) if eof_ends else None
            lines.append(raw.decode("latin-1").rstrip("\r\n"))
            ends.append(f.tell())
            if last(lines[-1]):
                return lines, ends
        if not f.read(1):
            return (lines, ends) if eof_ends else None
    raise ImageReadError(
        f"cannot read {path!r}: its header runs past its first {_CHUNK:,} bytes without {what}; ccmetrics reads no "
        "longer header, as it could not check which data files SimpleITK would read (a FIFO, a file outside the "
        "header's folder): shorten the header"
    )


def _metaimage_data(path: str) -> tuple[str, int, str] | None:
    """(data file, offset of the data, ``"raw"`` or ``"deflate"``) of a MetaImage header."""
    found = _header_lines(path, _is_element_data_file, what="its ElementDataFile line")
    if found is None:
        return None
    lines, ends = found
    fields = dict(_meta_field(line) for line in lines)
    name = fields["ElementDataFile"]
    encoding = "deflate" if fields.get("CompressedData", "").lower() in ("true", "1") else "raw"
    if name in _META_LOCAL:
        return path, ends[-1], encoding
    if name[:4] == "LIST" or "%" in name or " " in name:
        return None
    skip = fields.get("HeaderSize", "0")
    offset = int(skip) if skip.lstrip("-").isdigit() and int(skip) > 0 else 0
    return os.path.join(os.path.dirname(path), name), offset, encoding


def _nrrd_data(path: str) -> tuple[str, int, str] | None:
    """(data file, offset of the data, encoding) of a NRRD header; None for what is not checked."""
    found = _header_lines(path, lambda line: line == "", eof_ends=True, what="the blank line that ends its header")
    if found is None:
        return None
    lines, ends = found
    end = ends[-1] if ends else 0
    fields = {}
    for line in lines[1:]:
        key, sep, value = line.partition(": ")
        if sep and not line.startswith("#"):
            fields[key.strip().lower()] = value.strip()
    encoding = {"gz": "gzip", "gzip": "gzip", "raw": "raw", "hex": "hex"}.get(fields.get("encoding", "raw").lower())
    if fields.get("encoding", "").lower() in ("txt", "text", "ascii"):
        encoding = "ascii"
    if encoding is None:
        return None  # bzip2: no cheap bound
    name = fields.get("data file", fields.get("datafile"))
    if name is None:
        return path, end, encoding
    if name.upper().startswith("LIST") or " " in name or "%" in name:
        return None
    return os.path.join(os.path.dirname(path), name), 0, encoding
