"""The VMEM v1 vector file (``vectors.bin``): read, write, append, check.

Layout (little-endian), exactly as the seed and ``DESIGN.md`` fix it so files stay portable:

==========  ======  ==================================================
offset      size    field
==========  ======  ==================================================
0           4       magic ``b"VMEM"``
4           4       u32 version, always 1
8           4       u32 dim
12          4       u32 count
16          ...     ``count`` entries: 16-byte UUID (``uuid.UUID.bytes``) + ``dim`` float32
==========  ======  ==================================================

The file has no checksum, so its integrity checks are structural and by value: the header
must be well formed, the file length must equal ``16 + count * (16 + 4 * dim)`` exactly, and
every vector must be usable (:func:`bad_vector_rows`: no NaN or infinity, and a norm within
``[1e-6, 1e6]``: all-zero rows and absurd norms are what a flipped exponent bit or a zeroed
block leaves; every memctx embedder writes unit vectors). Every failure raises
:class:`~memctx.errors.VmemError` naming the file and the mismatch (:func:`read_vmem`,
:func:`iter_vmem`; :func:`vmem_status` returns the same text). The raw store reads with
:func:`iter_vmem_raw`, which checks the structure only, and sets aside the unusable rows
itself: one bad value costs one re-embedding, never the file. It treats a structural failure as
"rebuild the vectors from ``segments.jsonl``", which is always possible because vectors are a
cache of the segments (the seed's cold-start rule: the file only saves re-embedding). Only a
regular file is read: a directory, FIFO or socket in its place is a :class:`VmemError` too,
and opening never blocks. Writers refuse non-finite vectors (``ValueError``).

Crash safety:

* :func:`write_vmem` is atomic (:func:`memctx.fs.atomic_write`): a temporary file in the same
  directory is written, fsynced and moved over the target with ``os.replace``, so a reader
  sees the old file or the new one.
* :func:`append_vmem` writes the new entries first and rewrites the header's count second
  (``fsync``-ing each only when asked to be ``durable``: see the function).
  A crash between the two leaves a file *longer* than its count says; a crash in the middle
  of the entries leaves a partial entry at the end. Both make the length disagree with the
  count, so :func:`read_vmem` raises ("extra bytes") and :func:`vmem_status` reports it; the
  store then rewrites the file from its segments. The 4-byte count update itself is a single
  aligned write inside the first disk sector, which no common file system tears.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import struct
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from memctx.errors import VmemError
from memctx.fs import NOFOLLOW, atomic_write, check_single_link, note_refusal

from .files import O_CLOEXEC
from .vmem_format import (
    CHUNK_ENTRIES,
    MAX_NORM,
    MIN_NORM,
    U32_MAX,
    UUID_SIZE,
    VMEM_HEADER,
    VMEM_MAGIC,
    VMEM_VERSION,
    bad_vector_rows,
    check_dim,
    entry_dtype,
    validate_header,
    vmem_entry_size,
)
from .vmem_read import iter_vmem, iter_vmem_raw, read_vmem, vmem_status

__all__ = [
    "MAX_NORM",
    "MIN_NORM",
    "VMEM_HEADER",
    "VMEM_MAGIC",
    "VMEM_VERSION",
    "append_vmem",
    "bad_vector_rows",
    "iter_vmem",
    "iter_vmem_raw",
    "read_vmem",
    "vmem_entry_size",
    "vmem_status",
    "write_vmem",
]


def _id_bytes(ids: Sequence[uuid.UUID] | bytes) -> bytes:
    """The 16-byte forms of ``ids`` concatenated (``ids`` may already be that)."""
    if isinstance(ids, bytes):
        if len(ids) % UUID_SIZE:
            raise ValueError(f"raw ids must be 16 bytes each, got {len(ids)} bytes")
        return ids
    if not all(isinstance(i, uuid.UUID) for i in ids):
        raise TypeError("ids must be uuid.UUID instances")
    return b"".join(i.bytes for i in ids)


def _as_matrix(raw_ids: bytes, vectors: np.ndarray) -> np.ndarray:
    """Validate arguments and return the vectors as a C-contiguous little-endian matrix."""
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be a 2-D (n, dim) array, got shape {vectors.shape}")
    if len(raw_ids) // UUID_SIZE != vectors.shape[0]:
        raise ValueError(f"{len(raw_ids) // UUID_SIZE} ids for {vectors.shape[0]} vectors")
    check_dim(int(vectors.shape[1]))
    matrix = np.ascontiguousarray(vectors, dtype="<f4")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors must be finite (no NaN or infinity): they would damage the file")
    return matrix


def _entry_chunks(raw_ids: bytes, matrix: np.ndarray) -> Iterator[bytes]:
    """The entries as bytes, at most :data:`CHUNK_ENTRIES` at a time (memory stays flat)."""
    dtype = entry_dtype(matrix.shape[1])
    ids = np.frombuffer(raw_ids, dtype=np.uint8).reshape(-1, UUID_SIZE)
    for start in range(0, len(matrix), CHUNK_ENTRIES):
        stop = min(start + CHUNK_ENTRIES, len(matrix))
        records = np.empty(stop - start, dtype=dtype)
        records["id"] = ids[start:stop]
        records["vec"] = matrix[start:stop]
        yield records.tobytes()


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError(errno.EIO, f"pwrite wrote nothing at offset {offset}")
        view, offset = view[written:], offset + written


def write_vmem(path: Path | str, ids: Sequence[uuid.UUID] | bytes, vectors: np.ndarray) -> None:
    """Write a complete VMEM v1 file atomically (temp file, fsync, ``os.replace``).

    Args:
        path: Target file; its directory must exist.
        ids: One UUID per vector row, or their 16-byte forms concatenated.
        vectors: ``(n, dim)`` array; converted to little-endian float32.

    Raises:
        ValueError: Shapes disagree or ``dim`` is not positive.
        TypeError: An id is not a ``uuid.UUID``.
    """
    path = Path(path)
    raw_ids = _id_bytes(ids)
    matrix = _as_matrix(raw_ids, vectors)
    if len(matrix) > U32_MAX:
        raise ValueError(f"a VMEM file holds at most {U32_MAX} entries")
    header = VMEM_HEADER.pack(VMEM_MAGIC, VMEM_VERSION, matrix.shape[1], len(matrix))
    chunks = itertools.chain([header], _entry_chunks(raw_ids, matrix))
    atomic_write(path, chunks, sync_dir=True)


def append_vmem(
    path: Path | str,
    ids: Sequence[uuid.UUID] | bytes,
    vectors: np.ndarray,
    durable: bool = True,
) -> None:
    """Append entries to a VMEM file, creating it with a header when it is missing.

    The entries are written first, then the header's count is rewritten (see the module
    docstring for what a crash in between leaves). The existing file is checked first:
    appending to a damaged file would bury the damage.

    With ``durable`` each of the two writes is followed by an ``fsync``, so the append
    survives a power loss or an OS crash. Without it the writes only reach the page cache,
    which is enough to survive the *process* being killed (``kill -9``, an OOM kill): the
    kernel writes the pages back whoever owns them. The two fsyncs are most of an append's
    cost (about 0.3 ms of a 1-2 ms add on an SSD), and ``vectors.bin`` is a cache that the
    store rebuilds from ``segments.jsonl`` whenever it disagrees with it.

    Args:
        path: The VMEM file.
        ids: One UUID per vector row, or their 16-byte forms concatenated.
        vectors: ``(n, dim)`` array with the file's dimension.
        durable: ``fsync`` after the entries and after the count (the default).

    Raises:
        VmemError: The existing file is not a valid VMEM v1 file of this dimension.
        ValueError: Shapes disagree, or the count would overflow u32.
    """
    path = Path(path)
    raw_ids = _id_bytes(ids)
    matrix = _as_matrix(raw_ids, vectors)
    dim = int(matrix.shape[1])
    try:
        # Plain descriptor calls: an append is a hot path (every archived message).
        # O_NONBLOCK: a FIFO in its place is refused below, never waited on (it changes
        # nothing for a regular file).
        # O_NOFOLLOW: a link in its place is refused, never written through.
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | O_CLOEXEC | NOFOLLOW)
    except FileNotFoundError:
        write_vmem(path, raw_ids, matrix)
        return
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        note_refusal(path)
        raise VmemError(
            f"{path}: a symlink; memctx does not write through it (the store "
            "replaces it with its own file)"
        ) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise VmemError(f"{path}: not a regular file; move it away (the store rebuilds it)")
        try:
            check_single_link(fd, path)
        except OSError as exc:  # a hard link planted to a file elsewhere: rewritten, not appended
            raise VmemError(str(exc.strerror)) from exc
        size = st.st_size
        count = validate_header(path, os.pread(fd, VMEM_HEADER.size, 0), size, dim)
        if not len(matrix):
            return
        new_count = count + len(matrix)
        if new_count > U32_MAX:
            raise ValueError(f"a VMEM file holds at most {U32_MAX} entries")
        for chunk in _entry_chunks(raw_ids, matrix):
            _pwrite_all(fd, chunk, size)
            size += len(chunk)
        if durable:
            os.fsync(fd)
        # The count goes last so that a reader never trusts entries that are not all there.
        _pwrite_all(fd, struct.pack("<I", new_count), 12)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
