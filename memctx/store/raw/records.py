"""Segment records of the raw store: validation, the in-memory types, encoding and decoding.

``segments.jsonl`` holds one JSON object per line, UTF-8, written compactly
(``ensure_ascii=False``: Chinese text costs 3 bytes a character, not 6)::

    {"id": "<uuid4>", "sessionId": "s1", "timestamp": 1718000000.25, "role": "user",
     "content": "...", "tokens": 42,
     "metadata": {"topics": ["database"], "entities": ["KeyError"], "turn": 7}}

Each record memctx writes ends with ``"crc": "<8 hex digits>"`` (:mod:`memctx.store.checksum`):
a record whose content changed since it was written (a flipped bit that leaves valid JSON, an
edited value) fails it and is never served: the store skips and counts it
(``checksum_mismatches``). Records without ``crc`` (older files, the seed's own) load as
before; to edit a record by hand, drop its ``crc``.

``timestamp`` is **epoch seconds as a JSON number** (UTC by definition, sub-second precision,
and a float written by ``json`` reads back bit-for-bit, so a reopened store equals the one
that wrote it). Readers also accept epoch milliseconds (any number above 10^11, the seed's
``Date.now()``) and ISO-8601 strings (a missing zone means UTC), so hand-made or seed-made
files load. ``turn`` sits in ``metadata`` beside the seed's ``topics`` and ``entities``.

Decoding is the bulk of loading a store (20,000 lines, ~15 us each), so it skips what it
safely can: ``json.loads``' Python layers, re-checking the same few session ids and roles,
and interning the same tag lists again (see :func:`decode_info`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, cast

from memctx.errors import StoreError
from memctx.text import leading_speaker, without_chat_prefix

from ..checksum import ChecksumError, canonical_json, seal_record, verify_record

__all__ = [
    "VECTOR_TEXT_VERSION",
    "ChecksumError",
    "Segment",
    "SegmentInfo",
    "clean_text",
    "decode_info",
    "decode_record",
    "dedup_digest",
    "encode_record",
    "seal_record",
    "search_text",
    "speaker_of",
    "validate_name",
    "validate_role",
    "validate_session_id",
    "vector_text",
]

# What a segment's vector embeds: bump when vector_text changes, so that vectors of the old
# text are re-embedded (the BM25 term cache has its own version). 2: the date and name
# added; 3: the words said alone (vector_text), the date and name left to BM25.
VECTOR_TEXT_VERSION: Final = 3
_MONTHS: Final = (
    "January February March April May June July August September October November December"
).split()

_SESSION_RE: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_ROLE_RE: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_SURROGATE_RE: Final = re.compile(r"[\ud800-\udfff]")
_UUID_RE: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# What JSONDecoder.raw_decode calls (the C scanner; typeshed does not declare the attribute).
_JSON_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = cast(Any, json.JSONDecoder()).scan_once
_TAG_TUPLES: dict[tuple[str, ...], tuple[str, ...]] = {}  # see _str_tuple
_TAG_TUPLES_MAX: Final = 65_536
# Session ids and roles that passed their check, each kind apart (see _checked).
_VALID_SESSIONS: dict[str, str] = {}
_VALID_ROLES: dict[str, str] = {}
_VALID_MAX: Final = 4096
_NAME_MAX: Final = 64
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


def validate_name(name: object) -> str | None:
    """A speaker's name (OpenAI's ``name`` on a message), whitespace collapsed; ``None`` for
    none. Raise :class:`StoreError` for a name that is not a short single-line string."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise StoreError(f"name must be a string, got {type(name).__name__}")
    name = " ".join(name.split())
    if not name:
        return None
    if len(name) > _NAME_MAX:
        raise StoreError(f"name {name[:20]!r}... is over {_NAME_MAX} characters: shorten it")
    return sys.intern(name)


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
    name: str | None = None
    # Who said it, for ranking (hybrid search's speaker prior): its ``name``, or for a
    # participant's message without one the speaker its text names (:func:`speaker_of`).
    speaker: str | None = None


def speaker_of(role: str, name: str | None, content: str) -> str | None:
    """Who said a segment: a participant's (user's, assistant's) ``name``, else the speaker
    an exported chat line names after its date (``[8 May 2023] Caroline: ...``); ``None``
    for a tool's output or an unnamed message. Only a ranking signal: what the block shows
    as the speaker is ``name`` alone, never a name read from archived text."""
    if role not in ("user", "assistant"):
        return None
    return name or leading_speaker(content)


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
        topics: Rule-based topic tags (:func:`memctx.text.tagging.topics`).
        entities: Rule-based entity tags (:func:`memctx.text.tagging.entities`).
        name: Who spoke, when the message named its speaker (OpenAI's ``name``: the
            participants of a multi-party chat); the recall block shows it instead of
            the role.
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
    name: str | None = None

    @classmethod
    def of(cls, info: SegmentInfo, content: str) -> Segment:
        """The segment ``info`` describes, with its ``content``."""
        return cls(
            info.id,
            info.session_id,
            info.timestamp,
            info.role,
            content,
            info.tokens,
            info.turn,
            info.topics,
            info.entities,
            info.name,
        )

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
            self.name,
            speaker_of(self.role, self.name, self.content),
        )


def encode_record(seg: Segment) -> bytes:
    """The JSON line of ``seg``, newline included (``json`` escapes newlines inside strings)."""
    meta: dict[str, Any] = {
        "topics": list(seg.topics),
        "entities": list(seg.entities),
        "turn": seg.turn,
    }
    if seg.name is not None:  # only when there is one: records without it stay as they were
        meta["name"] = seg.name
    record = {
        "id": seg.id,
        "sessionId": seg.session_id,
        "timestamp": seg.timestamp,
        "role": seg.role,
        "content": seg.content,
        "tokens": seg.tokens,
        "metadata": meta,
    }
    return seal_record(canonical_json(record).encode("utf-8")) + b"\n"


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
        # Tags repeat across segments, and so do whole tag lists: one shared tuple (of
        # shared strings) for each, looked up by the fresh tuple (its own key and value,
        # so the cache holds nothing the segments do not). Half the cost of interning
        # every string of every list; map() keeps the interning in C.
        fresh = tuple(value)
        shared = _TAG_TUPLES.get(fresh)
        if shared is None:
            if len(_TAG_TUPLES) >= _TAG_TUPLES_MAX:
                _TAG_TUPLES.clear()
            shared = tuple(map(sys.intern, fresh))
            _TAG_TUPLES[shared] = shared
        return shared
    except TypeError:  # a hand-edited file with a non-string tag: keep the strings
        return tuple(sys.intern(v) for v in value if isinstance(v, str))


def decode_record(line: bytes) -> Segment:
    """Parse one line of ``segments.jsonl`` (its newline may be there or not).

    Raises:
        ValueError: The line is not a valid segment record (bad JSON, missing or mistyped
            field, invalid id, session id or role). The store skips and counts such lines.
        ChecksumError: The record has a ``crc`` that its bytes do not match (a
            ``ValueError`` too); the store skips and counts these apart.
    """
    info, content = decode_info(line)
    return Segment.of(info, content)


def decode_info(line: bytes) -> tuple[SegmentInfo, str]:
    """:func:`decode_record` as ``(segment.info, segment.content)``, without building the
    :class:`Segment` (what loading a store keeps).

    Raises:
        ValueError: As :func:`decode_record`.
    """
    obj = _loads(line)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    if "crc" in obj:
        verify_record(line, obj)
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
        session_id = _checked(obj.get("sessionId"), validate_session_id, _VALID_SESSIONS)
        role = _checked(obj.get("role"), validate_role, _VALID_ROLES)
        name = validate_name(meta.get("name"))
    except StoreError as exc:
        raise ValueError(str(exc)) from exc
    content = clean_text(content)
    info = SegmentInfo(
        seg_id,
        session_id,
        _timestamp(obj.get("timestamp")),
        role,
        tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0,
        turn,
        _str_tuple(meta.get("topics")),
        _str_tuple(meta.get("entities")),
        name,
        speaker_of(role, name, content),
    )
    return info, content


def _checked(value: Any, validate: Callable[[object], str], valid: dict[str, str]) -> str:
    """``sys.intern(validate(value))``, remembered in ``valid``: a file repeats a few
    session ids and roles 20,000 times (``StoreError`` as ``validate`` raises it)."""
    known = valid.get(value) if type(value) is str else None
    if known is None:
        known = sys.intern(validate(value))
        if len(valid) >= _VALID_MAX:
            valid.clear()
        valid[known] = known
    return known


def _loads(line: bytes) -> Any:
    """``json.loads(line)``, with ``ValueError`` for anything that is not JSON."""
    try:
        if line[:1] != b"{" or line[1:2] == b"\0":
            return json.loads(line)
        # What json.loads does with such bytes (detect_encoding says UTF-8, and there is
        # no leading whitespace to skip), minus its Python layers: a few us of a ~15 us
        # line, 20,000 times per load. Only JSON whitespace may follow the value.
        text = line.decode("utf-8", "surrogatepass")
        try:
            obj, end = _JSON_SCAN(text, 0)
        except StopIteration as err:
            raise json.JSONDecodeError("Expecting value", text, err.value) from None
        if end != len(text) and text[end:].strip(" \t\n\r"):
            raise json.JSONDecodeError("Extra data", text, end)
        return obj
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from exc


def search_text(content: str, timestamp: float, name: str | None = None) -> str:
    """What a segment is searched by: the day it was said (``8 May 2023``), who said it (a
    message's ``name``, if any) and its text.

    A question that names a day, a month or a year ("what did we change on 3 March?", "the
    deploy in May 2023") then finds what was said on it, and one that names a participant
    what they said, by keyword; a question without either is hardly affected (a date's words
    are in every segment of its day, so they weigh little). The stored text stays the
    message's own: the recall block shows the day once per day and the speaker before the
    line. Measured on LoCoMo through ``on_context`` (``make bench``): the date lifts
    evidence recall by 1-2 points with either embedder; for a chat whose speakers are only
    in ``name``, the name is what lets "What did Caroline research?" find Caroline's words.
    The vector embeds :func:`vector_text` instead.
    """
    day = datetime.fromtimestamp(timestamp, UTC)
    said = f"{name}: {content}" if name else content
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}\n{said}"


def vector_text(content: str) -> str:
    """What a segment's vector embeds: the words said, without when or by whom (no day line,
    no ``name``, and an exported chat line without its ``[8 May 2023] Caroline:`` prefix,
    :func:`memctx.text.without_chat_prefix`).

    A sentence embedding of a short message is pulled by every word of it: with the day and
    the speaker in, two messages of one day, or of one speaker, look alike whatever they are
    about, and a question lands near whatever its speaker said that day. When and who are
    keyword matters (BM25 indexes :func:`search_text`) and the speaker prior's (hybrid
    search, which embeds the query without the speakers' names too). Measured on LoCoMo
    through ``on_context`` at 2,000 tokens (docs/results.md): all-MiniLM-L6-v2 89.3 -> 90.0 %
    with dates in ``timestamp``, 88.9 -> 89.8 % with dates only in the text; hash
    embeddings, a bag of words like BM25, 85.8 -> 85.8 % and 85.2 -> 85.5 %.
    """
    return without_chat_prefix(content)
