"""The VMEM v1 format itself: header, entry layout, the structural and the value checks.

:mod:`memctx.store.vmem` documents the layout and reads and writes files with these pieces;
:mod:`memctx.store.vmem_read` streams and checks them.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Final

import numpy as np

from memctx.errors import VmemError

__all__ = [
    "CHUNK_ENTRIES",
    "MAX_NORM",
    "MIN_NORM",
    "U32_MAX",
    "UUID_SIZE",
    "VMEM_HEADER",
    "VMEM_MAGIC",
    "VMEM_VERSION",
    "bad_entry_error",
    "bad_vector_rows",
    "check_dim",
    "entry_dtype",
    "validate_header",
    "vmem_entry_size",
]

VMEM_MAGIC: Final = b"VMEM"
VMEM_VERSION: Final = 1
# magic, version, dim, count: 16 bytes, little-endian whatever the host byte order.
VMEM_HEADER: Final = struct.Struct("<4sIII")
UUID_SIZE: Final = 16
U32_MAX: Final = 2**32 - 1
CHUNK_ENTRIES: Final = 4096  # entries per read: 6 MB at 384 dims
MIN_NORM: Final = 1e-6  # a usable vector's L2 norm is at least this...
MAX_NORM: Final = 1e6  # ...and at most this (memctx's embedders write norm 1)


def bad_vector_rows(matrix: np.ndarray) -> np.ndarray:
    """Which rows of an ``(n, dim)`` matrix are not usable vectors: a NaN or infinite value,
    or an L2 norm outside ``[MIN_NORM, MAX_NORM]`` (all zeros included).

    Returns:
        A boolean array of ``n`` entries, True for each unusable row.
    """
    # One pass, no copy: a NaN makes the sum NaN, an infinity or an overflow makes it inf,
    # and both fail the range test below, as zeros and underflows do.
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        squares = np.einsum("ij,ij->i", matrix, matrix)
    usable: np.ndarray = (squares >= MIN_NORM * MIN_NORM) & (squares <= MAX_NORM * MAX_NORM)
    return ~usable


def _describe_row(vector: np.ndarray) -> str:
    if np.isnan(vector).any():
        return "it holds NaN"
    if not np.isfinite(vector).all():
        return "it holds an infinite value"
    norm = float(np.linalg.norm(vector.astype(np.float64)))
    return "it is all zeros" if norm == 0 else f"its norm {norm:.3g} is absurd"


def bad_entry_error(path: Path, first: int, matrix: np.ndarray, count: int) -> VmemError | None:
    """The error for the first unusable vector of a chunk starting at entry ``first``."""
    bad = np.flatnonzero(bad_vector_rows(matrix))
    if not len(bad):
        return None
    row = int(bad[0])
    return VmemError(
        f"{path}: entry {first + row} of {count} is not a usable vector: "
        f"{_describe_row(matrix[row])} (a damaged file; the store re-embeds that segment)"
    )


def vmem_entry_size(dim: int) -> int:
    """Bytes per entry: a 16-byte UUID plus ``dim`` float32 values."""
    return UUID_SIZE + 4 * dim


def entry_dtype(dim: int) -> np.dtype[np.void]:
    """The structured dtype of one entry: ``id`` (16 bytes) and ``vec`` (``dim`` float32)."""
    # One structured record per entry lets numpy parse the whole body in one step; "<f4"
    # pins little-endian floats so big-endian hosts read the same file correctly.
    return np.dtype([("id", "u1", (UUID_SIZE,)), ("vec", "<f4", (dim,))])


def check_dim(dim: int) -> None:
    """Raise ``ValueError`` unless ``dim`` is a positive integer that fits a u32."""
    if not isinstance(dim, int) or isinstance(dim, bool) or not 0 < dim <= U32_MAX:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")


def validate_header(path: Path, header: bytes, file_len: int, dim: int) -> int:
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
