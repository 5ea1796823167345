"""The checks of an image file's size against its header's claim, and the gzip reader that inflates a ``.nii.gz``.

A header that claims more voxels than the file holds is refused before the claimed array is resident
(:func:`ccmetrics.formats.io.read_header`'s notes say what each format checks): ``_check_data_size`` compares the
file's (or data file's) size with the bytes the header's shape and dtype claim (``_claim``), a gzip stream against
deflate's 1032:1 bound, then its trailer, then (where they disagree) the bytes it inflates to (``_inflated_size``).

A ``.nii.gz`` read with nibabel (the default) is inflated by ``_gunzip_array`` itself, 1 MiB at a time, straight into
an ``np.empty`` buffer whose pages are committed only as they are written, member by member (``_gzip_body``) with
each gzip trailer checked; the stream's end, not its trailer (which can be forged), decides: a stream shorter than
the header's size is refused where it ends, at the cost of the data it really holds.  nibabel's scaling
(``scl_slope``, ``scl_inter``) is then applied as nibabel applies it (``ccmetrics.formats._nifti_readers``).  A mask
read in C order keeps only its non-zero voxels while they are few (``_Sparse``).  ``_no_memory`` is the error for a
valid file too large for the memory left.

Cost: a size check is one ``stat`` (raw data), plus one seek for a gzip trailer that agrees; a disagreeing trailer
costs one pass of inflating, a MiB at a time (at most two MiB held), stopped at the header's size.
``_gunzip_array`` is one pass over the file, memory of the compressed file plus the array (CRC-32 and inflate
from python-isal where it is installed, about 8x and 2x faster than zlib's).  Private to :mod:`ccmetrics.formats`;
its reader is :mod:`ccmetrics.formats.io`.
"""

from __future__ import annotations

import math
import os
import re
import struct
import zlib
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .._inputs import SPARSE_COPY_FRACTION, scatter_c_order
from .image import _HINT, ImageMemoryError, ImageReadError

try:  # python-isal's CRC-32 (the same numbers, about 8x faster than zlib's: a third of a .nii.gz read) and inflate
    # (the same bytes, about 2x faster than zlib's)
    from isal.isal_zlib import crc32 as _crc32
    from isal.isal_zlib import decompressobj as _inflater
except ImportError:  # pragma: no cover (isal is optional)
    from zlib import crc32 as _crc32
    from zlib import decompressobj as _inflater  # type: ignore[assignment]


_WINDOW = 1 << 16  # compressed bytes given to zlib at a time (what it keeps back is copied on each call)
_NOT_ZERO = re.compile(rb"[^\0]")


def _gunzip_array(
    path: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    offset: int,
    order: Literal["C", "F"] = "F",
    c_order: bool = False,
) -> np.ndarray:
    """The array of ``shape`` and ``dtype`` (``order``: nibabel's, Fortran for NIfTI) at byte ``offset``
    of the decompressed gzip file ``path``, unscaled.

    What nibabel's ``np.asanyarray(img.dataobj)`` returns for a file without scaling, bit for bit,
    decompressed faster and safer: the compressed file is read in one call and inflated 1 MiB at a time
    straight into the array's buffer, which stays in the CPU cache (``GzipFile`` grows one large ``bytes``
    object per read and copies it again).  The buffer is ``np.empty``: its pages are committed only as
    they are written, so a header that claims more voxels than the stream holds costs no more memory
    than the stream's own data.

    Gzip files of several members (``bgzip``, concatenated files, zero padding between them) are
    followed member by member (RFC 1952: each member's header parsed here, its deflate data inflated
    raw, its CRC-32 and size checked against its trailer when its end is reached).  Decompression
    stops once the array is full (data after it are ignored, as nibabel does); a stream that ends
    before, a member whose trailer disagrees with its data (a forged size, a corrupt CRC), or bytes
    that start no member raise :class:`~ccmetrics.formats.image.ImageReadError` (nibabel: ``EOFError``,
    ``BadGzipFile``).
    With ``c_order`` (voxels of one byte, ``order`` "F"), the array is returned C-contiguous (the same values):
    while the voxels found non-zero stay few (``ccmetrics._inputs.SPARSE_COPY_FRACTION``), only they are kept,
    found in each decompressed MiB while it is in the CPU cache, and written into a zeroed C-ordered array at the
    end (``ccmetrics._inputs.scatter_c_order``): no Fortran-ordered array is written, and none is scanned and copied
    again into C order (what the engine needs: ``ccmetrics._inputs.c_contiguous``); more of them, and the array is
    the Fortran-ordered one, as without.

    Cost: one pass over the file, memory of the compressed file plus the array. Of a 400 x 400 x 300 mask's
    0.015 s, zlib's CRC-32 takes 0.011 s; with ``isal`` (python-isal) installed its CRC-32 is used (0.0015 s), and
    its inflate: the same bytes, 10 ms instead of 25 ms a 256 x 256 x 128 float32 map of
    ``tests/benchmarks/bench_picai.py``; a damaged stream's message is ISA-L's then ("Invalid deflate block found").
    With ``c_order``, a mask's read in C order takes about what its Fortran-ordered read takes without (its
    C-ordered copy took another 0.011 s).
    """
    nbytes = math.prod(shape) * dtype.itemsize
    need = offset + nbytes  # bytes of the decompressed stream
    sparse: _Sparse | None = _Sparse(nbytes) if c_order and dtype.itemsize == 1 and order == "F" else None
    out = np.empty(nbytes if sparse is None else 0, np.uint8)  # (sparse: allocated when it is dense after all)
    buffer = out.data  # a writable memoryview of the array
    with open(path, "rb") as f:
        data = f.read()
    view = memoryview(data)
    skip, pos, inflated = offset, 0, 0  # header bytes still to skip, voxel bytes written, bytes inflated
    at = 0  # the next compressed byte
    lie = ""  # what the last member's trailer claimed, when it disagreed with the member

    def fail(why: str) -> ImageReadError:
        return ImageReadError(f"cannot read {path!r}: {_claim(shape, dtype)}, but {why}{_HINT}")

    while pos < nbytes:
        found = _NOT_ZERO.search(data, at)  # zero padding between members, as gzip and GzipFile allow
        if found is None:
            break  # the end of the file
        at = _gzip_body(data, found.start())
        if at < 0:
            raise fail(
                f"the file decompresses to {inflated:,} bytes, {need:,} needed: byte {found.start():,} "
                f"starts no gzip member (nor zero padding between members); the file is corrupt"
            )
        member, crc, size = _inflater(-zlib.MAX_WBITS), 0, 0  # raw deflate: the trailer checked here
        while pos < nbytes and not member.eof:
            window = view[at : at + _WINDOW]
            piece = memoryview(member.decompress(window, _CHUNK))
            at += len(window) - len(member.unused_data if member.eof else member.unconsumed_tail)  # input left
            if not len(piece) and not len(window):
                break  # the file ends inside the member
            crc, size, inflated = _crc32(piece, crc), size + len(piece), inflated + len(piece)
            if skip:  # the header and extensions before the voxels
                cut = min(skip, len(piece))
                piece, skip = piece[cut:], skip - cut
            take = min(len(piece), nbytes - pos)
            if sparse is not None and not sparse.add(piece[:take], pos):  # too many non-zero voxels: dense
                out = sparse.dense(pos)
                buffer, sparse = out.data, None
            if sparse is None:
                buffer[pos : pos + take] = piece[:take]
            pos += take
        if not member.eof or len(data) < at + 8:
            break  # the array is full, or the file ends before the member's trailer
        want_crc, want_size = struct.unpack_from("<II", data, at)
        at += 8
        if want_size != size % 2**32:
            lie = f"its gzip trailer claims {want_size:,} bytes for a member that holds {size:,} (forged or corrupt)"
            if pos < nbytes and _NOT_ZERO.search(data, at) is None:
                break  # nothing follows: the short stream is the error, the trailer named in it
            raise fail(f"the file is corrupt: {lie}")
        if want_crc != crc:
            raise fail(
                f"the file is corrupt: a gzip member's data have CRC-32 {crc:08x}, its trailer says {want_crc:08x}"
            )
    if pos < nbytes:
        raise fail(f"the file decompresses to {inflated:,} bytes, {need:,} needed" + (f"; {lie}" if lie else ""))
    if sparse is not None:
        return sparse.c_ordered(shape).view(dtype)
    return np.ndarray(shape, dtype=dtype, buffer=out, order=order)


class _Sparse:
    """The non-zero bytes of a Fortran-ordered array of one-byte voxels, decompressed piece by piece: their flat
    (Fortran) indices and values, kept while they are at most ``SPARSE_COPY_FRACTION`` of the ``nbytes`` voxels
    (the share up to which ``ccmetrics._inputs.c_contiguous`` scatters them too; beyond, their indices and values
    would take more memory than a half of the array, and the Fortran-ordered array with numpy's copy is as fast)."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes, self.limit, self.count = nbytes, int(nbytes * SPARSE_COPY_FRACTION), 0
        self.indices: list[np.ndarray] = []
        self.values: list[np.ndarray] = []

    def add(self, piece: Any, at: int) -> bool:
        """Keep the non-zero bytes of ``piece`` (voxels ``at`` on); False (nothing kept) when too many are."""
        data = np.frombuffer(piece, np.uint8)
        if not data.size:
            return True
        # 0/1 bytes are valid booleans, whose non-zero entries numpy finds several times faster
        found = np.flatnonzero(data.view(bool) if data.max() <= 1 else data)
        if self.count + found.size > self.limit:
            return False
        if found.size:
            self.count += found.size
            self.values.append(data[found])
            self.indices.append(found + at)
        return True

    def _flat(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.indices:
            return np.zeros(0, np.int64), np.zeros(0, np.uint8)
        return np.concatenate(self.indices), np.concatenate(self.values)

    def dense(self, seen: int) -> np.ndarray:
        """The buffer of a dense read, its first ``seen`` bytes (those added so far) written, the rest uncommitted."""
        out = np.empty(self.nbytes, np.uint8)
        out[:seen] = 0
        where, values = self._flat()
        out[where] = values
        self.indices, self.values = [], []
        return out

    def c_ordered(self, shape: tuple[int, ...]) -> np.ndarray:
        """The whole array, C-ordered, as uint8."""
        where, values = self._flat()
        return scatter_c_order(where, values, shape, np.uint8)


def _gzip_body(data: bytes, at: int) -> int:
    """Where the deflate data of the gzip member whose header starts at byte ``at`` of ``data`` begin (RFC 1952:
    10 bytes, then the optional extra field, name, comment and header CRC); ``len(data)`` when the file ends
    inside the header, -1 when ``at`` starts no gzip member (not its magic bytes and deflate method, or
    reserved flags set, as zlib refuses)."""
    head = data[at : at + 10]
    if head[:3] != b"\x1f\x8b\x08"[: len(head)] or (len(head) > 3 and head[3] & 0xE0):
        return -1
    if len(head) < 10:
        return len(data)
    flags, body = head[3], at + 10
    if flags & 4:  # FEXTRA: a 2-byte length, then the field
        body += 2 + int.from_bytes(data[body : body + 2], "little")
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & bit:
            end = data.find(b"\0", body)
            body = len(data) if end < 0 else end + 1
    if flags & 2:  # FHCRC
        body += 2
    return min(body, len(data))


#: deflate (gzip, zlib) never compresses more than 1032:1 (Mark Adler, zlib's FAQ); a
#: compressed file of n bytes cannot hold more than this times n bytes
_DEFLATE_RATIO_BOUND = 1032
_CHUNK = 1 << 20  # bytes decompressed at a time when counting


def _check_data_size(
    path: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    *,
    have_at: int,
    gzip_stream: int | None,
    includes_offset: bool = False,
    data_file: str | None = None,
    encoding: str = "raw",
    reader: str = "",
    count: bool = True,
) -> None:
    """Raise ImageReadError when the header's ``shape`` and ``dtype`` claim more bytes than the file
    holds, without allocating them.

    The data lie in ``data_file`` (default ``path``) from byte ``have_at`` on.  ``gzip_stream``:
    the byte where a gzip stream starts (``None``: not gzip); with ``includes_offset`` the stream
    also holds the ``have_at`` bytes before the data (``.nii.gz``).  ``encoding``: ``"raw"``,
    ``"gzip"`` (then ``gzip_stream`` is set), ``"deflate"`` (zlib, not counted: only the 1032:1
    bound), ``"hex"`` (2 characters a byte) or ``"ascii"`` (a value and a separator a voxel).
    ``reader``: the reader that would have read it, for the message.

    A gzip stream is checked against deflate's 1032:1 bound, then (``count``) against its trailer, the
    uncompressed size mod 2**32 of its last member: agreeing, it is taken as it is (one seek; a trailer
    can be forged, and it only tells the last member's size); disagreeing (several members, bytes after
    the stream, truncation, a lie), the stream is inflated and counted up to the header's size.  Without
    ``count`` only the bound is checked: for a caller that inflates the stream into the array itself and
    refuses it where it ends (``_gunzip_array``), for which counting would be a second pass.
    """
    data_file = path if data_file is None else data_file
    voxels = math.prod(int(s) for s in shape)  # Python ints: a product past 2**63 cannot wrap
    data = voxels * dtype.itemsize
    size = os.path.getsize(data_file)
    claim = _claim(shape, dtype)
    where = (f" with {reader}" if reader else "") + ("" if data_file == path else f" (data in {data_file!r})")

    def fail(holds: str) -> None:
        raise ImageReadError(f"cannot read {path!r}{where}: {claim}, but {holds}{_HINT}")

    if gzip_stream is not None:
        need = data + (have_at if includes_offset else 0)  # bytes of the decompressed stream
        compressed = size - gzip_stream
        if need > _DEFLATE_RATIO_BOUND * compressed:
            fail(
                f"the file holds {compressed:,} compressed bytes, which decompress to at most "
                f"{_DEFLATE_RATIO_BOUND * compressed:,} (deflate compresses at most {_DEFLATE_RATIO_BOUND}:1)"
            )
        if not count:
            return  # the caller inflates the stream itself and stops where it ends (_gunzip_array)
        with open(data_file, "rb") as f:  # gzip's last 4 bytes: the uncompressed size mod 2**32
            f.seek(-4, os.SEEK_END)
            if int.from_bytes(f.read(4), "little") == need % 2**32:
                return
        try:  # several gzip members, bytes after the stream, or truncation: count, stopping at need
            total = _inflated_size(data_file, gzip_stream, need)
        except (zlib.error, OSError) as e:
            raise ImageReadError(f"cannot read {path!r}{where}: {e}{_HINT}") from e
        if total < need:
            fail(f"the file decompresses to {total:,} bytes, {need:,} needed")
        return
    have = size - have_at
    if encoding == "raw" and have < data:
        after = f" after its {have_at:,}-byte header" if have_at else ""
        fail(f"the {'file' if data_file == path else 'data file'} holds {max(have, 0):,} bytes of data{after}")
    elif encoding == "deflate" and data > _DEFLATE_RATIO_BOUND * have:
        fail(
            f"the file holds {max(have, 0):,} compressed bytes, which decompress to at most "
            f"{_DEFLATE_RATIO_BOUND * max(have, 0):,} (deflate compresses at most {_DEFLATE_RATIO_BOUND}:1)"
        )
    elif encoding == "hex" and 2 * data > have:
        fail(f"the file holds {max(have, 0):,} hex characters, 2 a byte")
    elif encoding == "ascii" and 2 * voxels - 1 > have:
        fail(f"the file holds {max(have, 0):,} characters, at least 2 a voxel (a digit and a separator)")


def _claim(shape: tuple[int, ...], dtype: np.dtype) -> str:
    """What a header claims, for messages: ``its header claims 4x5x6 voxels of uint8 (120 bytes of data)``."""
    data = math.prod(int(s) for s in shape) * dtype.itemsize
    return f"its header claims {'x'.join(map(str, shape))} voxels of {dtype} ({data:,} bytes of data)"


def _inflated_size(path: str, offset: int, limit: int) -> int:
    """Bytes the gzip stream (one or more members) from byte ``offset`` of ``path`` decompresses to,
    counted up to ``limit``: decompressed a MiB at a time, never holding more than two MiB."""
    total = 0
    with open(path, "rb") as f:
        f.seek(offset)
        inflate = zlib.decompressobj(47)  # gzip or zlib header
        pending = b""
        while total < limit:
            if not pending:
                pending = f.read(_CHUNK)
                if not pending:
                    break
            total += len(inflate.decompress(pending, min(_CHUNK, limit - total)))
            if inflate.eof:  # the next member, after gzip's optional zero padding
                pending = inflate.unused_data.lstrip(b"\0")
                inflate = zlib.decompressobj(47)
            else:
                pending = inflate.unconsumed_tail
    return total


def _no_memory(path: str, shape: Sequence[int], dtype: np.dtype) -> ImageMemoryError:
    """The error for a file whose voxels do not fit in the memory left: what the image needs, and the fixes."""
    need = math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize
    return ImageMemoryError(
        f"not enough memory to read {path!r}: its {'x'.join(map(str, shape))} voxels of {np.dtype(dtype)} need "
        f"{need:,} bytes ({need / 2**30:.2f} GiB) at once; free memory or run it on a machine with more, and give "
        "a data-set run a memory limit (--max-memory; max_memory= in Python) to refuse such a case from its header "
        "before reading it"
    )
