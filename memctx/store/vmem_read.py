"""Reading VMEM v1 files: stream, read whole, and describe what is wrong (format and
checks: :mod:`memctx.store.vmem_format`; writing and the layout: :mod:`memctx.store.vmem`)."""

from __future__ import annotations

import io
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from memctx.errors import VmemError

from .files import StoreFileError, open_nonblocking
from .vmem_format import (
    CHUNK_ENTRIES,
    UUID_SIZE,
    VMEM_HEADER,
    bad_entry_error,
    check_dim,
    entry_dtype,
    validate_header,
)

__all__ = ["iter_vmem", "iter_vmem_raw", "open_checked", "read_vmem", "vmem_status"]


def open_checked(path: Path, dim: int) -> tuple[io.BufferedReader, int]:
    """Open a VMEM file positioned at its first entry, after checking it; return the count."""
    check_dim(dim)
    try:
        handle = os.fdopen(open_nonblocking(path, os.O_RDONLY), "rb")
    except (OSError, StoreFileError) as exc:
        raise VmemError(f"{path}: cannot read the vector file: {exc}") from exc
    try:
        header = handle.read(VMEM_HEADER.size)
        count = validate_header(path, header, os.fstat(handle.fileno()).st_size, dim)
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
    dtype = entry_dtype(dim)
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
    """:func:`_raw_chunks` with the ids as UUIDs, each chunk's vectors checked."""
    first = 0
    for raw_ids, matrix in _raw_chunks(handle, path, dim, count, chunk):
        error = bad_entry_error(path, first, matrix, count)
        if error is not None:
            raise error
        first += len(matrix)
        ids = [
            uuid.UUID(bytes=raw_ids[i : i + UUID_SIZE]) for i in range(0, len(raw_ids), UUID_SIZE)
        ]
        yield ids, matrix


def iter_vmem_raw(
    path: Path | str, dim: int, chunk: int = CHUNK_ENTRIES
) -> Iterator[tuple[bytes, np.ndarray]]:
    """:func:`iter_vmem` with each chunk's ids as their 16-byte forms concatenated: a
    reader that matches ids as bytes skips building 20,000 ``uuid.UUID`` objects.

    The vectors' values are NOT checked: a reader that can do without a few rows (the raw
    store) sets aside the rows :func:`bad_vector_rows` flags instead of losing the file.

    Raises:
        VmemError: As :func:`iter_vmem`.
        ValueError: ``chunk`` is not positive.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    path = Path(path)
    handle, count = open_checked(path, dim)
    with handle:
        yield from _raw_chunks(handle, path, dim, count, chunk)


def iter_vmem(
    path: Path | str, dim: int, chunk: int = CHUNK_ENTRIES
) -> Iterator[tuple[list[uuid.UUID], np.ndarray]]:
    """Stream a whole VMEM v1 file, ``chunk`` entries at a time, after checking it.

    Memory stays at one chunk (4,096 entries of 384 dims are 6 MB) whatever the file size,
    so a caller can move the vectors where they belong without holding the file twice.

    Yields:
        ``(ids, matrix)`` per chunk: UUIDs in file order and a C-contiguous native float32
        ``(len(ids), dim)`` matrix of its own.

    Raises:
        VmemError: As :func:`read_vmem` (a structural fault before the first chunk; an
            unusable vector with the chunk that holds it), or the file shrank while it was
            read.
        ValueError: ``chunk`` is not positive.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    path = Path(path)
    handle, count = open_checked(path, dim)
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
        VmemError: The file is missing, unreadable or not a regular file, or has a truncated
            header, wrong magic, unsupported version, another dimension, a length that
            disagrees with its count, or an unusable vector (:func:`bad_vector_rows`).
    """
    path = Path(path)
    handle, count = open_checked(path, dim)
    ids: list[uuid.UUID] = []
    matrix = np.empty((count, dim), dtype=np.float32)
    with handle:
        for chunk_ids, chunk in _chunks(handle, path, dim, count, CHUNK_ENTRIES):
            matrix[len(ids) : len(ids) + len(chunk_ids)] = chunk
            ids += chunk_ids
    return ids, matrix


def vmem_status(path: Path | str, dim: int, *, values: bool = True) -> str | None:
    """Describe what is wrong with a VMEM file.

    Args:
        path: The VMEM file.
        dim: The expected dimension.
        values: Also read the entries and check each vector (:func:`bad_vector_rows`);
            ``False`` checks the header and the length only (no entry is read).

    Returns:
        ``None`` when the file is sound, else the reason (the same text :func:`read_vmem`
        would raise), including a missing file.
    """
    path = Path(path)
    try:
        handle, count = open_checked(path, dim)
    except VmemError as exc:
        return str(exc)
    with handle:
        if not values:
            return None
        first = 0
        try:
            for _ids, matrix in _raw_chunks(handle, path, dim, count, CHUNK_ENTRIES):
                error = bad_entry_error(path, first, matrix, count)
                if error is not None:
                    return str(error)
                first += len(matrix)
        except VmemError as exc:
            return str(exc)
    return None
