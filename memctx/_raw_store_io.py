"""File-level pieces of the raw store: segment records, validation, streaming, appends, rewrites.

:mod:`memctx._raw_store` holds the in-memory state and the locking protocol; this module only
knows bytes and files, so each piece can be tested and reasoned about on its own.

``segments.jsonl`` holds one JSON object per line, UTF-8, written compactly
(``ensure_ascii=False``: Chinese text costs 3 bytes a character, not 6)::

    {"id": "<uuid4>", "sessionId": "s1", "timestamp": 1718000000.25, "role": "user",
     "content": "...", "tokens": 42,
     "metadata": {"topics": ["database"], "entities": ["KeyError"], "turn": 7}}

``timestamp`` is **epoch seconds as a JSON number** (UTC by definition, sub-second precision,
and a float written by ``json`` reads back bit-for-bit, so a reopened store equals the one
that wrote it). Readers also accept epoch milliseconds (any number above 10^11, the seed's
``Date.now()``) and ISO-8601 strings (a missing zone means UTC), so hand-made or seed-made
files load. ``turn`` sits in ``metadata`` beside the seed's ``topics`` and ``entities``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import math
import os
import re
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, NamedTuple

from memctx._errors import StoreError
from memctx._redact import Redactor
from memctx._tagging import entities, topics
from memctx._text import tokenize
from memctx._tokens import estimate_tokens

__all__ = [
    "LOCK_FILE",
    "MAX_LINE_BYTES",
    "SEGMENTS_FILE",
    "Prepared",
    "Segment",
    "SegmentInfo",
    "append_error",
    "check_inside",
    "child_path",
    "clean_text",
    "decode_record",
    "dedup_digest",
    "encode_record",
    "fd_ident",
    "file_size",
    "fsync_dir",
    "iter_lines",
    "path_ident",
    "prepare_segment",
    "rewrite_file",
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

_SESSION_RE: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_ROLE_RE: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_SURROGATE_RE: Final = re.compile(r"[\ud800-\udfff]")
_UUID_RE: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MS_THRESHOLD: Final = 1e11  # epoch seconds reach 1e11 in the year 5138; ms passed it in 1973


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a safe session id, else raise :class:`StoreError`.

    Allowed: 1-128 characters from ``A-Z a-z 0-9 . _ : -``, not ``.`` or ``..``. Ids may end
    up in file names (summary sidecars), so nothing that can name a directory or escape one.
    """
    if (
        not isinstance(session_id, str)
        or not _SESSION_RE.fullmatch(session_id)
        or (session_id in (".", ".."))
    ):
        raise StoreError(
            f"invalid session id {session_id!r}: use 1-128 characters from A-Z a-z 0-9 . _ : - "
            "(not '.' or '..', no slashes or spaces)"
        )
    return session_id


def validate_role(role: object) -> str:
    """Return ``role`` if it is 1-64 characters from ``A-Z a-z 0-9 . _ : -``, else raise."""
    if not isinstance(role, str) or not _ROLE_RE.fullmatch(role):
        raise StoreError(
            f"invalid role {role!r}: use 1-64 characters from A-Z a-z 0-9 . _ : - "
            "(e.g. 'user', 'assistant', 'tool')"
        )
    return role


def clean_text(text: str) -> str:
    """Replace lone surrogates (invalid in UTF-8, e.g. from a cut emoji) with U+FFFD."""
    if text.isascii():  # the common case, and a C-speed check: no surrogate possible
        return text
    return _SURROGATE_RE.sub("\ufffd", text) if _SURROGATE_RE.search(text) else text


def dedup_digest(session_id: str, role: str, content: str) -> bytes:
    """The seed's dedup key: ``sha256(sessionId + role + content)`` (plain concatenation)."""
    return hashlib.sha256((session_id + role + content).encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A segment without its content: what the store keeps in memory for every segment."""

    id: str
    session_id: str
    timestamp: float
    role: str
    tokens: int
    turn: int | None
    topics: tuple[str, ...]
    entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Segment:
    """One archived message (redacted), as stored in ``segments.jsonl``.

    Attributes:
        id: uuid4 string; also the vector's id in ``vectors.bin``.
        session_id: The session that archived it.
        timestamp: Epoch seconds (UTC).
        role: The message role (``user``, ``assistant``, ``tool``...).
        content: The redacted text.
        tokens: ``estimate_tokens(content)``.
        turn: The caller's turn number, if it gave one.
        topics: Rule-based topic tags (:func:`memctx._tagging.topics`).
        entities: Rule-based entity tags (:func:`memctx._tagging.entities`).
    """

    id: str
    session_id: str
    timestamp: float
    role: str
    content: str
    tokens: int
    turn: int | None
    topics: tuple[str, ...]
    entities: tuple[str, ...]

    @property
    def info(self) -> SegmentInfo:
        """The segment's metadata (everything but the content)."""
        return SegmentInfo(
            self.id,
            self.session_id,
            self.timestamp,
            self.role,
            self.tokens,
            self.turn,
            self.topics,
            self.entities,
        )


def encode_record(seg: Segment) -> bytes:
    """The JSON line of ``seg``, newline included (``json`` escapes newlines inside strings)."""
    record = {
        "id": seg.id,
        "sessionId": seg.session_id,
        "timestamp": seg.timestamp,
        "role": seg.role,
        "content": seg.content,
        "tokens": seg.tokens,
        "metadata": {"topics": list(seg.topics), "entities": list(seg.entities), "turn": seg.turn},
    }
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode("utf-8")


def _timestamp(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("timestamp is a boolean")
    if isinstance(value, int | float):
        stamp = float(value)
        stamp = stamp / 1000.0 if abs(stamp) >= _MS_THRESHOLD else stamp
    elif isinstance(value, str):
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        stamp = parsed.timestamp()
    else:
        raise ValueError(f"timestamp {value!r} is neither a number nor an ISO-8601 string")
    if not math.isfinite(stamp):
        raise ValueError("timestamp is not finite")
    return stamp


def _str_tuple(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    try:
        # Tags repeat across segments: one shared string each. map() keeps this in C.
        return tuple(map(sys.intern, value))
    except TypeError:  # a hand-edited file with a non-string tag: keep the strings
        return tuple(sys.intern(v) for v in value if isinstance(v, str))


def decode_record(line: bytes) -> Segment:
    """Parse one line of ``segments.jsonl`` (without its newline).

    Raises:
        ValueError: The line is not a valid segment record (bad JSON, missing or mistyped
            field, invalid id, session id or role). The store skips and counts such lines.
    """
    try:
        obj = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    content = obj.get("content")
    if not isinstance(content, str):
        raise ValueError("content is missing or not a string")
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    turn = meta.get("turn", obj.get("turn"))
    if isinstance(turn, bool) or not isinstance(turn, int | None):
        raise ValueError("turn is not an integer")
    tokens = obj.get("tokens")
    try:
        seg_id = obj.get("id")
        if not isinstance(seg_id, str) or not _UUID_RE.fullmatch(seg_id):  # fast path: canonical
            seg_id = str(uuid.UUID(str(seg_id)))
        session_id = sys.intern(validate_session_id(obj.get("sessionId")))
        role = sys.intern(validate_role(obj.get("role")))
    except StoreError as exc:
        raise ValueError(str(exc)) from exc
    return Segment(
        id=seg_id,
        session_id=session_id,
        timestamp=_timestamp(obj.get("timestamp")),
        role=role,
        content=clean_text(content),
        tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0,
        turn=turn,
        topics=_str_tuple(meta.get("topics")),
        entities=_str_tuple(meta.get("entities")),
    )


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


def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` with ONE ``os.write`` on an ``O_APPEND`` descriptor.

    One call makes the line a single append, so lines of writers that bypass the lock still
    cannot interleave inside each other. A short write (the disk filled up mid-way) is
    reported as ``ENOSPC`` so the caller rolls the partial line back.
    """
    written = os.write(fd, data)
    if written != len(data):
        raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes; disk full?)")


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable (best effort where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def rewrite_file(path: Path, chunks: Iterable[bytes]) -> None:
    """Replace ``path`` atomically: temp file in the same directory, fsync, ``os.replace``.

    Readers see the old file or the new one, never a mix; a crash leaves the old file and at
    worst a stray ``.tmp`` file. Raises ``OSError`` (the caller turns it into StoreError).
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def child_path(directory: Path, name: str) -> Path:
    """``directory / name`` for a plain file name; anything that could leave it is refused."""
    path = directory / name
    if not name or name in (".", "..") or os.sep in name or "/" in name or path.parent != directory:
        raise StoreError(f"file name {name!r} must be a plain name inside {directory}")
    return path


def check_inside(directory: Path, path: Path) -> None:
    """Refuse a store file that is a symlink leading outside the store directory."""
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
    """The StoreError for a failed append: which file, why, and that nothing was stored."""
    reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
    if isinstance(exc, OSError) and exc.filename and Path(exc.filename) != path:
        reason = f"{reason} ({exc.filename})"
    what = (
        "the segment was not stored" if count == 1 else f"none of the {count} segments was stored"
    )
    return StoreError(f"cannot append to {path}: {reason}; {what}")


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
        stamp, turn = item.get("timestamp"), item.get("turn")
    else:
        (sid, role, content), stamp, turn = item, None, None
    sid, role = validate_session_id(sid), validate_role(role)
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
    )
    return Prepared(seg, dedup_digest(sid, role, text), encode_record(seg), tokenize(text))
