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

The file has no checksum, so the only integrity check is structural: the header must be
well formed and the file length must equal ``16 + count * (16 + 4 * dim)`` exactly. Every
failure raises :class:`~memctx.errors.VmemError` naming the file and the mismatch; the raw
store treats that as "rebuild the vectors from ``segments.jsonl``", which is always possible
because vectors are a cache of the segments (the seed's cold-start rule: the file only saves
re-embedding).

Crash safety:

* :func:`write_vmem` is atomic: a temporary file in the same directory is written, fsynced
  and moved over the target with ``os.replace``, so a reader sees the old file or the new one.
* :func:`append_vmem` writes the new entries first and rewrites the header's count second
  (``fsync``-ing each only when asked to be ``durable``: see the function).
  A crash between the two leaves a file *longer* than its count says; a crash in the middle
  of the entries leaves a partial entry at the end. Both make the length disagree with the
  count, so :func:`read_vmem` raises ("extra bytes") and :func:`vmem_status` reports it; the
  store then rewrites the file from its segments. The 4-byte count update itself is a single
  aligned write inside the first disk sector, which no common file system tears.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import struct
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import numpy as np

from memctx.errors import VmemError

__all__ = [
    "VMEM_HEADER",
    "VMEM_MAGIC",
    "VMEM_VERSION",
    "append_vmem",
    "iter_vmem",
    "iter_vmem_raw",
    "read_vmem",
    "vmem_entry_size",
    "vmem_status",
    "write_vmem",
]

VMEM_MAGIC: Final = b"VMEM"
VMEM_VERSION: Final = 1
# magic, version, dim, count: 16 bytes, little-endian whatever the host byte order.
VMEM_HEADER: Final = struct.Struct("<4sIII")
_UUID_SIZE: Final = 16
_U32_MAX: Final = 2**32 - 1
_CHUNK_ENTRIES: Final = 4096  # entries per read: 6 MB at 384 dims


def vmem_entry_size(dim: int) -> int:
    """Bytes per entry: a 16-byte UUID plus ``dim`` float32 values."""
    return _UUID_SIZE + 4 * dim


def _entry_dtype(dim: int) -> np.dtype[np.void]:
    # One structured record per entry lets numpy parse the whole body in one step; "<f4"
    # pins little-endian floats so big-endian hosts read the same file correctly.
    return np.dtype([("id", "u1", (_UUID_SIZE,)), ("vec", "<f4", (dim,))])


def _check_dim(dim: int) -> None:
    if not isinstance(dim, int) or isinstance(dim, bool) or not 0 < dim <= _U32_MAX:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")


def _validate(path: Path, header: bytes, file_len: int, dim: int) -> int:
    """Check a header and the file length; return the entry count or raise VmemError."""
    if len(header) < VMEM_HEADER.size:
        raise VmemError(
            f"{path}: truncated header: the file has {file_len} bytes, a VMEM header needs "
            f"{VMEM_HEADER.size}"
        )
    magic, version, file_dim, count = VMEM_HEADER.unpack_from(header)
    if magic != VMEM_MAGIC:
        raise VmemError(f"{path}: wrong magic {magic!r}, expected {VMEM_MAGIC!r}: not a VMEM file")
    if version != VMEM_VERSION:
        raise VmemError(
            f"{path}: unsupported VMEM version {version}, this reader knows version {VMEM_VERSION}"
        )
    if file_dim != dim:
        raise VmemError(
            f"{path}: dimension mismatch: the file holds {file_dim}-dim vectors, expected {dim} "
            "(was the embedding model changed?)"
        )
    entry = vmem_entry_size(dim)
    expected = VMEM_HEADER.size + count * entry
    if file_len != expected:
        body = file_len - VMEM_HEADER.size
        whole, rest = divmod(body, entry)
        kind = "file too short" if file_len < expected else "extra bytes after the last entry"
        raise VmemError(
            f"{path}: {kind}: the header says {count} entries ({expected} bytes in all) but the "
            f"file has {file_len} bytes ({whole} whole entries + {rest} bytes); an interrupted "
            "write or append"
        )
    return int(count)


def _id_bytes(ids: Sequence[uuid.UUID] | bytes) -> bytes:
    """The 16-byte forms of ``ids`` concatenated (``ids`` may already be that)."""
    if isinstance(ids, bytes):
        if len(ids) % _UUID_SIZE:
            raise ValueError(f"raw ids must be 16 bytes each, got {len(ids)} bytes")
        return ids
    if not all(isinstance(i, uuid.UUID) for i in ids):
        raise TypeError("ids must be uuid.UUID instances")
    return b"".join(i.bytes for i in ids)


def _as_matrix(raw_ids: bytes, vectors: np.ndarray) -> np.ndarray:
    """Validate arguments and return the vectors as a C-contiguous little-endian matrix."""
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be a 2-D (n, dim) array, got shape {vectors.shape}")
    if len(raw_ids) // _UUID_SIZE != vectors.shape[0]:
        raise ValueError(f"{len(raw_ids) // _UUID_SIZE} ids for {vectors.shape[0]} vectors")
    _check_dim(int(vectors.shape[1]))
    return np.ascontiguousarray(vectors, dtype="<f4")


def _entry_chunks(raw_ids: bytes, matrix: np.ndarray) -> Iterator[bytes]:
    """The entries as bytes, at most :data:`_CHUNK_ENTRIES` at a time (memory stays flat)."""
    dtype = _entry_dtype(matrix.shape[1])
    ids = np.frombuffer(raw_ids, dtype=np.uint8).reshape(-1, _UUID_SIZE)
    for start in range(0, len(matrix), _CHUNK_ENTRIES):
        stop = min(start + _CHUNK_ENTRIES, len(matrix))
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


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is; not every platform lets a
    # directory be opened (Windows), and then the rename is the best we can do.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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
    if len(matrix) > _U32_MAX:
        raise ValueError(f"a VMEM file holds at most {_U32_MAX} entries")
    header = VMEM_HEADER.pack(VMEM_MAGIC, VMEM_VERSION, matrix.shape[1], len(matrix))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(header)
            for chunk in _entry_chunks(raw_ids, matrix):
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


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
        fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        write_vmem(path, raw_ids, matrix)
        return
    try:
        size = os.fstat(fd).st_size
        count = _validate(path, os.pread(fd, VMEM_HEADER.size, 0), size, dim)
        if not len(matrix):
            return
        new_count = count + len(matrix)
        if new_count > _U32_MAX:
            raise ValueError(f"a VMEM file holds at most {_U32_MAX} entries")
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


def _open_checked(path: Path, dim: int) -> tuple[io.BufferedReader, int]:
    """Open a VMEM file positioned at its first entry, after checking it; return the count."""
    _check_dim(dim)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - the callers close it
    except OSError as exc:
        raise VmemError(f"{path}: cannot read the vector file: {exc}") from exc
    try:
        header = handle.read(VMEM_HEADER.size)
        count = _validate(path, header, os.fstat(handle.fileno()).st_size, dim)
    except OSError as exc:
        handle.close()
        raise VmemError(f"{path}: cannot read the vector file: {exc}") from exc
    except VmemError:
        handle.close()
        raise
    return handle, count


def _raw_chunks(
    handle: io.BufferedReader, path: Path, dim: int, count: int, chunk: int
) -> Iterator[tuple[bytes, np.ndarray]]:
    """The entries after the header, ``chunk`` at a time, read into one reused buffer:
    their ids as 16-byte forms concatenated, and their vectors."""
    dtype = _entry_dtype(dim)
    buffer = np.empty(max(1, min(chunk, count)), dtype=dtype)
    done = 0
    while done < count:
        n = min(chunk, count - done)
        try:
            got = handle.readinto(buffer[:n].data.cast("B"))
        except OSError as exc:
            raise VmemError(f"{path}: cannot read the vector file: {exc}") from exc
        if got != n * dtype.itemsize:
            raise VmemError(f"{path}: file too short: it shrank while being read")
        # Always a copy: the buffer is reused for the next chunk (ascontiguousarray would
        # hand out a view of it for a one-row chunk), and a contiguous native matrix.
        yield buffer["id"][:n].tobytes(), buffer["vec"][:n].astype(np.float32, order="C", copy=True)
        done += n


def _chunks(
    handle: io.BufferedReader, path: Path, dim: int, count: int, chunk: int
) -> Iterator[tuple[list[uuid.UUID], np.ndarray]]:
    """:func:`_raw_chunks` with the ids as UUIDs."""
    for raw_ids, matrix in _raw_chunks(handle, path, dim, count, chunk):
        ids = [
            uuid.UUID(bytes=raw_ids[i : i + _UUID_SIZE]) for i in range(0, len(raw_ids), _UUID_SIZE)
        ]
        yield ids, matrix


def iter_vmem_raw(
    path: Path | str, dim: int, chunk: int = _CHUNK_ENTRIES
) -> Iterator[tuple[bytes, np.ndarray]]:
    """:func:`iter_vmem` with each chunk's ids as their 16-byte forms concatenated: a
    reader that matches ids as bytes skips building 20,000 ``uuid.UUID`` objects.

    Raises:
        VmemError: As :func:`iter_vmem`.
        ValueError: ``chunk`` is not positive.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    path = Path(path)
    handle, count = _open_checked(path, dim)
    with handle:
        yield from _raw_chunks(handle, path, dim, count, chunk)


def iter_vmem(
    path: Path | str, dim: int, chunk: int = _CHUNK_ENTRIES
) -> Iterator[tuple[list[uuid.UUID], np.ndarray]]:
    """Stream a whole VMEM v1 file, ``chunk`` entries at a time, after checking it.

    Memory stays at one chunk (4,096 entries of 384 dims are 6 MB) whatever the file size,
    so a caller can move the vectors where they belong without holding the file twice.

    Yields:
        ``(ids, matrix)`` per chunk: UUIDs in file order and a C-contiguous native float32
        ``(len(ids), dim)`` matrix of its own.

    Raises:
        VmemError: As :func:`read_vmem` (raised before the first chunk), or the file shrank
            while it was read.
        ValueError: ``chunk`` is not positive.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    path = Path(path)
    handle, count = _open_checked(path, dim)
    with handle:
        yield from _chunks(handle, path, dim, count, chunk)


def read_vmem(path: Path | str, dim: int) -> tuple[list[uuid.UUID], np.ndarray]:
    """Read a whole VMEM v1 file.

    The entries are read a chunk at a time straight into the result, so reading needs the
    result's memory plus one chunk, not a second copy of the whole file.

    Args:
        path: The VMEM file.
        dim: The dimension the caller's embedder produces; the file must match it.

    Returns:
        The ids in file order and a C-contiguous ``(count, dim)`` float32 matrix (a private
        copy the caller may modify).

    Raises:
        VmemError: The file is missing or unreadable, or has a truncated header, wrong magic,
            unsupported version, another dimension, or a length that disagrees with its count.
    """
    path = Path(path)
    handle, count = _open_checked(path, dim)
    ids: list[uuid.UUID] = []
    matrix = np.empty((count, dim), dtype=np.float32)
    with handle:
        for chunk_ids, chunk in _chunks(handle, path, dim, count, _CHUNK_ENTRIES):
            matrix[len(ids) : len(ids) + len(chunk_ids)] = chunk
            ids += chunk_ids
    return ids, matrix


def vmem_status(path: Path | str, dim: int) -> str | None:
    """Describe what is wrong with a VMEM file without reading its entries.

    Args:
        path: The VMEM file.
        dim: The expected dimension.

    Returns:
        ``None`` when the header is valid and the length matches the count, else the reason
        (the same text :func:`read_vmem` would raise), including a missing file.
    """
    path = Path(path)
    _check_dim(dim)
    try:
        with open(path, "rb") as handle:
            header = handle.read(VMEM_HEADER.size)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        return f"{path}: cannot read the vector file: {exc}"
    try:
        _validate(path, header, size, dim)
    except VmemError as exc:
        return str(exc)
    return None
