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
failure raises :class:`~memctx._errors.VmemError` naming the file and the mismatch; the raw
store treats that as "rebuild the vectors from ``segments.jsonl``", which is always possible
because vectors are a cache of the segments (the seed's cold-start rule: the file only saves
re-embedding).

Crash safety:

* :func:`write_vmem` is atomic: a temporary file in the same directory is written, fsynced
  and moved over the target with ``os.replace``, so a reader sees the old file or the new one.
* :func:`append_vmem` writes the new entries first and rewrites the header's count second.
  A crash between the two leaves a file *longer* than its count says; a crash in the middle
  of the entries leaves a partial entry at the end. Both make the length disagree with the
  count, so :func:`read_vmem` raises ("extra bytes") and :func:`vmem_status` reports it; the
  store then rewrites the file from its segments. The 4-byte count update itself is a single
  aligned write inside the first disk sector, which no common file system tears.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from memctx._errors import VmemError

__all__ = [
    "VMEM_HEADER",
    "VMEM_MAGIC",
    "VMEM_VERSION",
    "append_vmem",
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


def _as_matrix(ids: Sequence[uuid.UUID], vectors: np.ndarray) -> np.ndarray:
    """Validate arguments and return the vectors as a C-contiguous little-endian matrix."""
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be a 2-D (n, dim) array, got shape {vectors.shape}")
    if len(ids) != vectors.shape[0]:
        raise ValueError(f"{len(ids)} ids for {vectors.shape[0]} vectors")
    if not all(isinstance(i, uuid.UUID) for i in ids):
        raise TypeError("ids must be uuid.UUID instances")
    _check_dim(int(vectors.shape[1]))
    return np.ascontiguousarray(vectors, dtype="<f4")


def _entries_bytes(ids: Sequence[uuid.UUID], matrix: np.ndarray) -> bytes:
    records = np.empty(len(ids), dtype=_entry_dtype(matrix.shape[1]))
    if len(ids):
        raw_ids = b"".join(i.bytes for i in ids)
        records["id"] = np.frombuffer(raw_ids, dtype=np.uint8).reshape(len(ids), _UUID_SIZE)
        records["vec"] = matrix
    return records.tobytes()


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is; not every platform lets a
    # directory be opened (Windows), and then the rename is the best we can do.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_vmem(path: Path | str, ids: Sequence[uuid.UUID], vectors: np.ndarray) -> None:
    """Write a complete VMEM v1 file atomically (temp file, fsync, ``os.replace``).

    Args:
        path: Target file; its directory must exist.
        ids: One UUID per vector row.
        vectors: ``(n, dim)`` array; converted to little-endian float32.

    Raises:
        ValueError: Shapes disagree or ``dim`` is not positive.
        TypeError: An id is not a ``uuid.UUID``.
    """
    path = Path(path)
    matrix = _as_matrix(ids, vectors)
    if len(ids) > _U32_MAX:
        raise ValueError(f"a VMEM file holds at most {_U32_MAX} entries")
    header = VMEM_HEADER.pack(VMEM_MAGIC, VMEM_VERSION, matrix.shape[1], len(ids))
    payload = _entries_bytes(ids, matrix)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(header)
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def append_vmem(path: Path | str, ids: Sequence[uuid.UUID], vectors: np.ndarray) -> None:
    """Append entries to a VMEM file, creating it with a header when it is missing.

    The entries are written and fsynced first, then the header's count is rewritten and
    fsynced (see the module docstring for what a crash in between leaves). The existing file
    is checked first: appending to a damaged file would bury the damage.

    Args:
        path: The VMEM file.
        ids: One UUID per vector row.
        vectors: ``(n, dim)`` array with the file's dimension.

    Raises:
        VmemError: The existing file is not a valid VMEM v1 file of this dimension.
        ValueError: Shapes disagree, or the count would overflow u32.
    """
    path = Path(path)
    matrix = _as_matrix(ids, vectors)
    dim = int(matrix.shape[1])
    if not path.exists():
        write_vmem(path, ids, matrix)
        return
    with open(path, "r+b") as handle:
        header = handle.read(VMEM_HEADER.size)
        count = _validate(path, header, os.fstat(handle.fileno()).st_size, dim)
        if not len(ids):
            return
        new_count = count + len(ids)
        if new_count > _U32_MAX:
            raise ValueError(f"a VMEM file holds at most {_U32_MAX} entries")
        handle.seek(0, os.SEEK_END)
        handle.write(_entries_bytes(ids, matrix))
        handle.flush()
        os.fsync(handle.fileno())
        # The count goes last so that a reader never trusts entries that are not all there.
        handle.seek(12)
        handle.write(struct.pack("<I", new_count))
        handle.flush()
        os.fsync(handle.fileno())


def read_vmem(path: Path | str, dim: int) -> tuple[list[uuid.UUID], np.ndarray]:
    """Read a whole VMEM v1 file.

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
    _check_dim(dim)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise VmemError(f"{path}: cannot read the vector file: {exc}") from exc
    count = _validate(path, data[: VMEM_HEADER.size], len(data), dim)
    records = np.frombuffer(data, dtype=_entry_dtype(dim), count=count, offset=VMEM_HEADER.size)
    # The structured view is strided; one copy makes a contiguous native float32 matrix
    # (for 20,000 x 384 about 30 MB) that the vector index can use without another copy.
    matrix = np.ascontiguousarray(records["vec"], dtype=np.float32)
    raw_ids = records["id"].tobytes()
    ids = [uuid.UUID(bytes=raw_ids[i : i + _UUID_SIZE]) for i in range(0, len(raw_ids), _UUID_SIZE)]
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
