"""File-level pieces of the raw store: streaming, appends, paths, and preparing new segments.

:class:`memctx.store.raw.store.RawStore` holds the in-memory state and the locking protocol;
this module only knows bytes and files, so each piece can be tested and reasoned about on its
own. The record format and its types are in :mod:`memctx.store.raw.records` (re-exported here).
"""

from __future__ import annotations

import errno
import logging
import math
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

from memctx.errors import StoreError, VmemError
from memctx.fs import note_refusal
from memctx.messages import estimate_tokens
from memctx.text import Redactor, entities, tokenize, topics

from ..files import StoreFileError, problem_and_fix
from .records import (
    ChecksumError,
    Segment,
    SegmentInfo,
    clean_text,
    decode_info,
    decode_record,
    dedup_digest,
    encode_record,
    search_text,
    validate_name,
    validate_role,
    validate_session_id,
)

__all__ = [
    "LOCK_FILE",
    "MAX_LINE_BYTES",
    "SEGMENTS_FILE",
    "ChecksumError",
    "Prepared",
    "Segment",
    "SegmentInfo",
    "append_error",
    "check_inside",
    "child_path",
    "clean_text",
    "decode_info",
    "decode_record",
    "dedup_digest",
    "encode_record",
    "fd_ident",
    "file_size",
    "iter_lines",
    "path_ident",
    "prepare_segment",
    "read_runs",
    "rollback",
    "validate_role",
    "validate_session_id",
    "write_all",
]

SEGMENTS_FILE: Final = "segments.jsonl"
LOCK_FILE: Final = "segments.jsonl.lock"
# A line longer than this is damage (a segment is a message of at most a few hundred KB); it
# is skipped in bounded chunks instead of being read into memory whole.
MAX_LINE_BYTES: Final = 32 * 1024 * 1024


def iter_lines(fd: int, start: int) -> Iterator[tuple[int, int, bytes]]:
    """Stream the lines of the open file ``fd`` from byte ``start``, one at a time.

    Yields ``(offset, end, raw)``: the line occupies bytes ``[offset, end)``; ``raw`` ends with
    ``b"\\n"`` except for an unterminated tail (a torn write, or a write still in progress
    elsewhere), which comes last. The file is read through a 1 MiB buffer, so memory stays flat
    in the file size; a line over :data:`MAX_LINE_BYTES` is yielded as ``b"\\0\\n"`` (an
    invalid line) without ever being held in memory whole.
    """
    # A dup'ed descriptor reads the same inode as ``fd`` even if the path is replaced
    # meanwhile; the store reads contents with pread, so the shared position does not matter.
    with os.fdopen(os.dup(fd), "rb", buffering=1 << 20) as handle:
        handle.seek(start)
        offset = start
        while True:
            raw = handle.readline(MAX_LINE_BYTES)
            if not raw:
                return
            end = offset + len(raw)
            if len(raw) == MAX_LINE_BYTES and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):
                    raw = handle.readline(1 << 20)
                    end += len(raw)
                raw = b"\0\n" if raw else b"\0"  # no newline at all: an oversized torn tail
            yield offset, end, raw
            offset = end


def read_runs(fd: int, locs: list[tuple[int, int]], most: int = 1 << 22) -> Iterator[bytes]:
    """The lines at ``locs`` (offset, length without newline), newlines included, read as
    runs of adjacent lines (most of a file being compacted is live: a few thousand reads
    instead of one per line), at most ``most`` bytes a read."""
    i = 0
    while i < len(locs):
        start, end = locs[i][0], locs[i][0] + locs[i][1] + 1
        i += 1
        while i < len(locs) and locs[i][0] == end and end - start < most:
            end += locs[i][1] + 1
            i += 1
        yield os.pread(fd, end - start, start)


def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` with ONE ``os.write`` on an ``O_APPEND`` descriptor.

    One call makes the line a single append, so lines of writers that bypass the lock still
    cannot interleave inside each other. A short write (the disk filled up mid-way) is
    reported as ``ENOSPC`` so the caller rolls the partial line back.
    """
    written = os.write(fd, data)
    if written != len(data):
        raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes; disk full?)")


def child_path(directory: Path, name: str) -> Path:
    """``directory / name`` for a plain file name; anything that could leave it is refused."""
    path = directory / name
    if not name or name in (".", "..") or os.sep in name or "/" in name or path.parent != directory:
        raise StoreError(f"file name {name!r} must be a plain name inside {directory}")
    return path


def check_inside(directory: Path, path: Path) -> None:
    """Refuse a store file that is a symlink (counted), wherever it leads: the store is a
    boundary, and a link inside it today can be pointed outside tomorrow."""
    if os.path.islink(path):
        note_refusal(path)
        raise StoreFileError(
            f"{path} is a symlink; memctx never follows links inside its store directory "
            f"{directory}, so nothing was read or written through it. Remove the link (memctx "
            "never deletes it); the store creates its own file there"
        )
    real = Path(os.path.realpath(path))
    if real.parent != directory and not real.is_relative_to(directory):
        raise StoreError(
            f"{path} resolves to {real}, outside the store directory {directory}; "
            "store files must stay inside it (remove the symlink)"
        )


def path_ident(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path``, ``None`` if it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def fd_ident(fd: int) -> tuple[int, int]:
    """``(device, inode)`` of an open descriptor."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def file_size(path: Path) -> int | None:
    """Size of ``path`` in bytes, ``None`` if it does not exist or cannot be read."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def append_error(path: Path, exc: BaseException, count: int) -> StoreError:
    """The StoreError for a failed append: which file, why, that nothing was stored, the fix.

    ``cannot append to <path>: <problem>; <nothing stored>; <fix>``; a StoreError that
    already names its file and fix (a directory in place of a file...) keeps its text.
    """
    what = (
        "the segment was not stored" if count == 1 else f"none of the {count} segments was stored"
    )
    if isinstance(exc, StoreError) and not isinstance(exc, VmemError):
        return StoreError(f"{exc}; {what}")
    problem, fix = problem_and_fix(exc)
    if isinstance(exc, OSError) and exc.filename and Path(exc.filename) != path:
        problem = f"{problem} ({exc.filename})"
    return StoreError(f"cannot append to {path}: {problem}; {what}; {fix}")


def rollback(fd: int, size: int) -> None:
    """Cut a failed append back to ``size`` so no partial line stays (best effort)."""
    try:
        os.ftruncate(fd, size)
    except OSError as exc:
        # The partial line stays; readers skip it as torn or invalid, so it is never a record.
        logging.getLogger("memctx").error("cannot undo a partial append (fd %d): %s", fd, exc)


class Prepared(NamedTuple):
    """A new segment ready to be written: the record, its line, dedup digest and BM25 tokens."""

    segment: Segment
    digest: bytes
    line: bytes
    tokens: list[str]


def prepare_segment(
    item: tuple[str, str, str] | Mapping[str, Any],
    now: Callable[[], float],
    redactor: Redactor | None,
) -> Prepared:
    """Validate, redact and tag one new segment (pure CPU work, no lock needed).

    Args:
        item: ``(session_id, role, content)`` or a mapping with those keys and optional
            ``timestamp`` (epoch seconds, default ``now()``) and ``turn``.
        now: The store's clock.
        redactor: Masks secrets first, so nothing after this step sees them; ``None``: off.

    Raises:
        StoreError: An invalid field, named with what is allowed.
    """
    if isinstance(item, Mapping):
        sid, role, content = item.get("session_id"), item.get("role"), item.get("content")
        stamp, turn, name = item.get("timestamp"), item.get("turn"), item.get("name")
    else:
        (sid, role, content), stamp, turn, name = item, None, None, None
    sid, role, name = validate_session_id(sid), validate_role(role), validate_name(name)
    if not isinstance(content, str):
        raise StoreError(f"content must be a string, got {type(content).__name__}")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
        raise StoreError(f"turn must be a non-negative integer or None, got {turn!r}")
    stamp = now() if stamp is None else stamp
    if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not math.isfinite(stamp):
        raise StoreError(f"timestamp must be finite epoch seconds, got {stamp!r}")
    text = clean_text(content)
    if redactor is not None:
        text = redactor.redact(text)
        name = validate_name(redactor.redact(name)) if name is not None else None
    seg = Segment(
        id=str(uuid.uuid4()),
        session_id=sys.intern(sid),
        timestamp=float(stamp),
        role=sys.intern(role),
        content=text,
        tokens=estimate_tokens(text),
        turn=turn,
        topics=topics(text),
        entities=entities(text),
        name=name,
    )
    tokens = tokenize(search_text(text, seg.timestamp, seg.name))
    return Prepared(seg, dedup_digest(sid, role, text), encode_record(seg), tokens)
