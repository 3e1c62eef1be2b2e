"""The knowledge store: short extracted facts in ``knowledge.jsonl``, updated Mem0-style.

Records are ``{id, type, content, context, timestamp, supersededBy?, sessionId?, source?}``
(DESIGN.md's fields; ``timestamp`` in epoch seconds; the optional keys are written only when
set, ``source`` listing provenance such as segment ids).

The file is an append-only log: every change (ADD, UPDATE in place, SUPERSEDE) appends the
*full* new version of each record it touches and, on load, the last record per id wins. A crash
can then tear only the line being written, never an older fact, and no update rewrites the
file. An unreadable line is skipped and counted (an unterminated last one also as ``torn``),
never fatal; the next append first ends it with a newline so it cannot glue onto a good record.
Writers hold a ``filelock.FileLock`` on ``knowledge.jsonl.lock`` and write their complete lines
with one ``os.write`` on an ``O_APPEND`` descriptor, so processes never interleave. The
in-memory state is always *read back* from the file (after our own appends too, and after
other processes' appends or compactions), so memory never disagrees with disk. When dead
versions outnumber live facts the log is compacted: latest versions to a temp file, fsync,
``os.replace``.

Operations are ADD / UPDATE / SUPERSEDE / NONE. DELETE is not an operation: the seed disables
it because an extraction LLM may hallucinate the deletion of a valid fact; SUPERSEDE is the
soft delete (the old fact stays on disk, hidden from search, reachable through
:meth:`KnowledgeStore.history`).

The rule-based :func:`decide_update` (the no-LLM path) compares a new fact with the most
similar live facts of the same type. ``A`` and ``B`` are the two texts' *terms*: the shared
tokenizer's words (CJK bigrams included) without identifier sub-tokens, which would otherwise
dilute the overlap (``PostgreSQL`` is one term, not ``postgre`` + ``sql``).

1. same normalised text (case, punctuation and spacing ignored) -> NONE;
2. overlap ``|A & B| / min(|A|, |B|) >= 0.5`` with a shared non-numeric subject term,
   and either a *polarity* change (a negation such as "not"/"never"/"without"/"未" in one text
   only) or a *changed value* on both sides (each text has a value absent from the other) ->
   SUPERSEDE. Values are words with a digit (ports, versions, IPs), paths and dotted names,
   quoted strings, the right side of ``key=value`` / ``key: value``, and capitalised names
   that do not open a sentence (``PostgreSQL``, ``Docker``, ``AWS``);
3. Jaccard ``|A & B| / |A | B| >= 0.9`` -> NONE; ``A`` a strict subset of ``B`` and the new
   text longer -> UPDATE (more detail); ``B`` a subset of ``A`` -> NONE (already known);
4. otherwise ADD.

Limits, by construction of a lexical rule: a replacement phrased with no shared words ("Use
PostgreSQL instead of MySQL" then "Switched to SQLite for tests") is an ADD; a lower-case value
outside ``key=value`` (``use postgres`` -> ``use sqlite``) or a capitalised name opening a
sentence is not seen as a value, so only the subset/duplicate rules apply; word order is
ignored (``A instead of B`` vs ``B instead of A`` is a duplicate); values written only in CJK
characters are not detected. The LLM path replaces this rule where an LLM is available.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout

from memctx._bm25 import lucene_idf
from memctx._errors import StoreError
from memctx._redact import Redactor
from memctx._text import STOPWORDS, is_cjk, tokenize, tokenize_unique

__all__ = [
    "KNOWLEDGE_FILE",
    "Fact",
    "FactType",
    "KnowledgeStore",
    "NewFact",
    "UpdateDecision",
    "UpdateOp",
    "decide_update",
    "required_matches",
]

logger = logging.getLogger("memctx")

KNOWLEDGE_FILE = "knowledge.jsonl"
_LOCK_TIMEOUT_S = 30.0
_CANDIDATES = 8  # live facts a new fact is compared with, most similar first

UpdateOp = Literal["ADD", "UPDATE", "SUPERSEDE", "NONE"]


class FactType(StrEnum):
    DECISION = "decision"
    IMPLEMENTATION = "implementation"
    CONFIG = "config"
    ISSUE = "issue"
    TASK_STATE = "task_state"
    ARCHITECTURE = "architecture"


@dataclass(frozen=True)
class NewFact:
    """A fact proposed by extraction, before the store gives it an id.

    Raises:
        ValueError: ``type`` is not a :class:`FactType` value or ``content`` is blank.
    """

    type: FactType
    content: str
    context: str = ""
    session_id: str | None = None
    source: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", FactType(self.type))
        if not self.content.strip():
            raise ValueError("a fact needs non-blank content")


@dataclass(frozen=True)
class UpdateDecision:
    """What to do with a :class:`NewFact`; ``target_id`` names the fact UPDATE/SUPERSEDE acts on
    (for NONE, the fact that already says it, when known)."""

    op: UpdateOp
    fact: NewFact
    target_id: str | None = None


@dataclass(frozen=True)
class Fact:
    """One stored fact (the latest version of its id)."""

    id: str
    type: FactType
    content: str
    context: str
    timestamp: float
    superseded_by: str | None = None
    session_id: str | None = None
    source: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        """Whether no newer fact supersedes this one."""
        return self.superseded_by is None

    def to_record(self) -> dict[str, Any]:
        """The ``knowledge.jsonl`` record (optional keys only when set)."""
        rec: dict[str, Any] = {
            "id": self.id,
            "type": self.type.value,
            "content": self.content,
            "context": self.context,
            "timestamp": self.timestamp,
        }
        if self.superseded_by is not None:
            rec["supersededBy"] = self.superseded_by
        if self.session_id is not None:
            rec["sessionId"] = self.session_id
        if self.source:
            rec["source"] = list(self.source)
        return rec

    @classmethod
    def from_record(cls, rec: object) -> Fact:
        """Parse a record; ``ValueError`` when a field is missing or has the wrong type."""
        if not isinstance(rec, dict):
            raise ValueError("record is not an object")
        fid, content, ts = rec.get("id"), rec.get("content"), rec.get("timestamp")
        context, sup, sid = rec.get("context", ""), rec.get("supersededBy"), rec.get("sessionId")
        source = rec.get("source", [])
        if not (
            isinstance(fid, str)
            and fid
            and isinstance(content, str)
            and isinstance(context, str)
            and isinstance(ts, int | float)
            and not isinstance(ts, bool)
            and math.isfinite(ts)
            and isinstance(sup, str | None)
            and isinstance(sid, str | None)
            and isinstance(source, list)
            and all(isinstance(s, str) for s in source)
        ):
            raise ValueError("record has a missing or mistyped field")
        kind = FactType(str(rec.get("type")))
        return cls(fid, kind, content, context, float(ts), sup, sid, tuple(source))


def required_matches(distinct_query_tokens: int) -> int:
    """The seed's adaptive match threshold: how many distinct query tokens a fact must contain.

    ``q <= 2``: all; ``q <= 8``: half, rounded up; ``q > 8``: ``min(ceil(0.3 q), 6)``, so a long
    query still finds a fact that shares its few key words.
    """
    q = distinct_query_tokens
    if q <= 2:
        return q
    if q <= 8:
        return math.ceil(q / 2)
    return min(math.ceil(0.3 * q), 6)


# --- the rule-based update decision --------------------------------------------------------

_NEGATIONS = frozenset({"not", "no", "never", "without", "cannot", "none", "nothing", "nor"})
_CJK_NEGATIONS = ("不", "没", "未", "无")
_WORD_RE = re.compile(r"[A-Za-z0-9_](?:[\w./\-]*[\w/])?")
_QUOTED_RE = re.compile(r"([\"'`])([^\"'`\n]{1,80})\1")
_KEY_VALUE_RE = re.compile(r"\b[A-Za-z_][\w.\-]*\s*[=:]\s*([^\s,;]+)")
_SENTENCE_END = frozenset(".!?:;\n")
_NORM_RE = re.compile(r"[\W_]+")
_TERM_RE = re.compile(r"\w+(?:[./\-]\w+)*")


def _terms(text: str) -> set[str]:
    """Word-level terms (see the module docstring)."""
    out: set[str] = set()
    for word in _TERM_RE.findall(text):
        if is_cjk(word):
            out.update(tokenize(word))
        elif word.lower() not in STOPWORDS:
            out.add(word.lower())
    return out


def _normalised(text: str) -> str:
    return _NORM_RE.sub(" ", text.lower()).strip()


def _negated(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return any(w in _NEGATIONS or w.endswith("n't") for w in words) or any(
        c in text for c in _CJK_NEGATIONS
    )


def _values(text: str) -> set[str]:
    """The value-like words of ``text`` (see the module docstring), lower-cased."""
    out = {m.group(2).strip().lower() for m in _QUOTED_RE.finditer(text)}
    out |= {m.group(1).strip(".,").lower() for m in _KEY_VALUE_RE.finditer(text)}
    for m in _WORD_RE.finditer(text):
        word = m.group()
        before = text[: m.start()].rstrip()
        opens_sentence = not before or before[-1] in _SENTENCE_END
        if (
            any(c.isdigit() for c in word)
            or "/" in word
            or "." in word
            or any(c.isupper() for c in word[1:])
            or (word[0].isupper() and not opens_sentence)
        ):
            out.add(word.lower())
    return {v for v in out if v}


def _relation(old: str, new: str) -> UpdateOp:
    """How ``new`` relates to the existing fact ``old`` (ADD = unrelated)."""
    if _normalised(old) == _normalised(new):
        return "NONE"
    a, b = _terms(old), _terms(new)
    if not a or not b:
        return "ADD"
    shared = a & b
    if len(shared) / min(len(a), len(b)) >= 0.5 and any(not t.isdigit() for t in shared):
        if _negated(old) != _negated(new):
            return "SUPERSEDE"
        # A value counts as changed only when its tokens are absent from the other text, so
        # "PostgreSQL" vs "postgresql" is not a change.
        gone = [v for v in _values(old) if not _terms(v) <= b]
        came = [v for v in _values(new) if not _terms(v) <= a]
        if gone and came:
            return "SUPERSEDE"
    if len(shared) / len(a | b) >= 0.9:
        return "NONE"
    if a < b and len(new) > len(old):
        return "UPDATE"
    return "NONE" if b <= a else "ADD"


def decide_update(new: NewFact, existing: list[Fact]) -> UpdateDecision:
    """Rule-based ADD / UPDATE / SUPERSEDE / NONE for ``new`` against ``existing`` facts.

    Only live facts of the same type count; the :data:`_CANDIDATES` most similar (term
    Jaccard, then newest) are compared. A duplicate among them wins (NONE); otherwise the most
    similar fact with an UPDATE or SUPERSEDE relation is the target; otherwise ADD.
    """
    b = _terms(new.content)

    def jaccard(f: Fact) -> float:
        a = _terms(f.content)
        return len(a & b) / len(a | b) if a | b else 0.0

    pool = [f for f in existing if f.live and f.type == new.type]
    ranked = sorted(pool, key=lambda f: (-jaccard(f), -f.timestamp))[:_CANDIDATES]
    relations = [(f, _relation(f.content, new.content)) for f in ranked]
    for f, op in relations:
        if op == "NONE":
            return UpdateDecision("NONE", new, f.id)
    for f, op in relations:
        if op != "ADD":
            return UpdateDecision(op, new, f.id)
    return UpdateDecision("ADD", new)


# --- the store ------------------------------------------------------------------------------


def _line(fact: Fact) -> bytes:
    text = json.dumps(fact.to_record(), ensure_ascii=False, separators=(",", ":"))
    return text.encode() + b"\n"


class KnowledgeStore:
    """Facts in ``<store_dir>/knowledge.jsonl`` with keyword search (see the module docstring).

    Args:
        store_dir: Directory of the store; created if missing.
        redactor: Masks secrets in ``content`` and ``context`` before anything is written.
        clock: Epoch seconds for new versions' timestamps (injectable for tests).

    Thread-safe; several processes may share one store directory.

    Raises:
        StoreError: The directory or the file cannot be created, read or locked.
    """

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        redactor: Redactor | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._dir = Path(store_dir)
        self._path = self._dir / KNOWLEDGE_FILE
        self._redactor = redactor if redactor is not None else Redactor()
        self._clock = clock
        self._mutex = threading.RLock()
        self._counters = {"unknown_targets": 0, "compactions": 0}
        self._reset()
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create knowledge store dir {self._dir}: {exc}") from exc
        self._file_lock = FileLock(str(self._path) + ".lock", timeout=_LOCK_TIMEOUT_S)
        with self._locked():
            pass

    @property
    def path(self) -> Path:
        """The ``knowledge.jsonl`` file."""
        return self._path

    # -- reading the log

    def _reset(self) -> None:
        self._facts: dict[str, Fact] = {}
        self._tokens: dict[str, frozenset[str]] = {}
        self._postings: dict[str, set[str]] = {}
        self._file_id: tuple[int, int] | None = None
        self._offset = 0
        self._lines = 0  # non-empty lines in the file, readable or not
        self._bad = {"skipped_lines": 0, "torn_lines": 0}  # of the file as read now

    def _put(self, fact: Fact) -> None:
        for tok in self._tokens.pop(fact.id, frozenset()):
            self._postings[tok].discard(fact.id)
            if not self._postings[tok]:
                del self._postings[tok]
        toks = frozenset(tokenize_unique(f"{fact.content}\n{fact.context}"))
        self._tokens[fact.id] = toks
        for tok in toks:
            self._postings.setdefault(tok, set()).add(fact.id)
        self._facts[fact.id] = fact

    def _read_new(self) -> None:
        """Read what was appended since the last read (caller holds the file lock)."""
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            if self._file_id is not None:
                self._reset()
            return
        except OSError as exc:
            raise StoreError(f"cannot stat {self._path}: {exc}") from exc
        if (st.st_dev, st.st_ino) != self._file_id or st.st_size < self._offset:
            self._reset()  # compacted (replaced) or truncated by someone: read it all again
            self._file_id = (st.st_dev, st.st_ino)
        if st.st_size == self._offset:
            return
        try:
            with open(self._path, "rb") as fh:
                fh.seek(self._offset)
                for raw in fh:  # streaming: never the whole file in memory at once
                    self._offset += len(raw)
                    self._ingest(raw)
        except OSError as exc:
            raise StoreError(f"cannot read {self._path}: {exc}") from exc

    def _ingest(self, raw: bytes) -> None:
        if not raw.strip():
            return
        self._lines += 1
        try:
            self._put(Fact.from_record(json.loads(raw)))
        except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            self._bad["skipped_lines"] += 1
            torn = not raw.endswith(b"\n")  # we hold the lock, so no writer is mid-line
            self._bad["torn_lines"] += torn
            kind = "torn last" if torn else "unreadable"
            logger.warning(
                "%s: skipped %s line at byte %d", self._path, kind, self._offset - len(raw)
            )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._mutex:
            try:
                self._file_lock.acquire()
            except (Timeout, OSError) as exc:
                raise StoreError(f"cannot lock {self._path}.lock: {exc}") from exc
            try:
                self._read_new()
                yield
            finally:
                self._file_lock.release()

    def _refresh(self) -> None:
        """Catch up with other processes; a stat when nothing changed, the lock otherwise."""
        with self._mutex:
            try:
                st = os.stat(self._path)
                if (st.st_dev, st.st_ino) == self._file_id and st.st_size == self._offset:
                    return
            except OSError:
                pass
            with self._locked():
                pass

    def reload(self) -> None:
        """Forget the in-memory state and replay the whole log."""
        with self._mutex:
            self._reset()
            self._refresh()

    # -- writing

    def _append(self, facts: list[Fact]) -> None:
        """Append complete lines with one write, then read them back (caller holds the lock)."""
        data = b"".join(_line(f) for f in facts)
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # end a torn line so it stays a line of its own
                if os.write(fd, data) != len(data):
                    raise OSError("short write (disk full?)")
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(f"cannot append to {self._path}: {exc}") from exc
        finally:
            self._read_new()  # memory mirrors disk, even after a partial write
        if self._lines - len(self._facts) > len(self._facts):
            self._compact_locked()

    def _compact_locked(self) -> None:
        tmp = self._path.with_name(f".{KNOWLEDGE_FILE}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.writelines(_line(f) for f in self._facts.values())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self._path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StoreError(f"cannot compact {self._path}: {exc}") from exc
        self._counters["compactions"] += 1
        self._reset()
        self._read_new()

    def compact(self) -> None:
        """Rewrite the log with only the latest version of each fact (atomic replace)."""
        with self._locked():
            self._compact_locked()

    def apply(self, decision: UpdateDecision) -> Fact | None:
        """Carry out one decision; returns the fact written (None for NONE).

        UPDATE keeps the target's id and type and gives it the new content, context and
        timestamp; SUPERSEDE adds the new fact and marks the target ``supersededBy`` it. An
        UPDATE/SUPERSEDE whose target is unknown or already superseded becomes an ADD (counted
        in ``stats()["unknown_targets"]``) so that the fact is not lost.

        Raises:
            StoreError: The write failed (the in-memory state still matches the file).
        """
        with self._locked():
            return self._apply(decision)

    def _apply(self, d: UpdateDecision) -> Fact | None:
        if d.op == "NONE":
            return None
        if d.op not in ("ADD", "UPDATE", "SUPERSEDE"):
            raise ValueError(f"unknown update op {d.op!r} (DELETE is disabled by design)")
        new, now = d.fact, self._clock()
        content, context = self._redactor.redact(new.content), self._redactor.redact(new.context)
        target = self._facts.get(d.target_id) if d.target_id else None
        op = d.op
        if op != "ADD" and (target is None or not target.live):
            self._counters["unknown_targets"] += 1
            logger.info("knowledge %s target %r unknown or superseded: adding", op, d.target_id)
            op = "ADD"
        if op == "UPDATE" and target is not None:
            sources = tuple(dict.fromkeys((*target.source, *new.source)))
            written = replace(
                target,
                content=content,
                context=context,
                timestamp=now,
                session_id=new.session_id or target.session_id,
                source=sources,
            )
            self._append([written])
            return self._facts.get(written.id)
        fresh = Fact(
            str(uuid.uuid4()), new.type, content, context, now, None, new.session_id, new.source
        )
        batch = [fresh]
        if target is not None:  # SUPERSEDE: the new fact first, so a crash never hides both
            batch.append(replace(target, superseded_by=fresh.id))
        self._append(batch)
        return self._facts.get(fresh.id)

    def decide(self, new: NewFact) -> UpdateDecision:
        """The rule-based decision for ``new`` (redacted first, as stored facts are)."""
        self._refresh()
        with self._mutex:
            return self._decide(new)

    def ingest(self, new: NewFact) -> tuple[UpdateDecision, Fact | None]:
        """:meth:`decide` then :meth:`apply`, atomically across processes."""
        with self._locked():
            decision = self._decide(new)
            return decision, self._apply(decision)

    def _decide(self, new: NewFact) -> UpdateDecision:
        new = replace(new, content=self._redactor.redact(new.content))
        toks = tokenize_unique(new.content)
        ids = set().union(*(self._postings.get(t, set()) for t in toks))
        return decide_update(new, [self._facts[i] for i in ids])

    # -- queries

    def search(
        self, query: str, limit: int = 10, include_superseded: bool = False
    ) -> list[tuple[Fact, float]]:
        """Facts matching ``query`` under the adaptive threshold, best first.

        Score: the IDF-weighted share of the distinct query tokens the fact contains (content
        and context), IDF being Lucene's over all stored facts, so rare words count more and a
        fact with every query token scores 1.0. Ties: newer first.
        """
        q = tokenize_unique(query)
        if not q or limit <= 0:
            return []
        self._refresh()
        need = required_matches(len(q))
        with self._mutex:
            counts: dict[str, int] = {}
            for tok in q:
                for fid in self._postings.get(tok, ()):
                    counts[fid] = counts.get(fid, 0) + 1
            n = len(self._facts)
            idf = {t: lucene_idf(n, len(self._postings.get(t, ()))) for t in q}
            total = sum(idf.values())
            hits = []
            for fid, count in counts.items():
                fact = self._facts[fid]
                if count >= need and (include_superseded or fact.live):
                    got = sum(idf[t] for t in q if t in self._tokens[fid])
                    hits.append((fact, min(1.0, got / total)))
        hits.sort(key=lambda h: (-h[1], -h[0].timestamp, h[0].id))
        return hits[:limit]

    def live_facts(self) -> list[Fact]:
        """Facts not superseded, in first-written order."""
        self._refresh()
        with self._mutex:
            return [f for f in self._facts.values() if f.live]

    def get(self, fact_id: str) -> Fact | None:
        """The latest version of a fact (superseded or not), or None."""
        self._refresh()
        with self._mutex:
            return self._facts.get(fact_id)

    def history(self, fact_id: str) -> list[Fact]:
        """The supersede chain through ``fact_id``, oldest first (``[]`` if unknown)."""
        self._refresh()
        with self._mutex:
            if fact_id not in self._facts:
                return []
            by_successor = {f.superseded_by: f for f in self._facts.values() if f.superseded_by}
            head, seen = self._facts[fact_id], {fact_id}
            while (prev := by_successor.get(head.id)) is not None and prev.id not in seen:
                head = prev
                seen.add(head.id)
            chain = [head]  # forward from the oldest; the membership tests stop a corrupt cycle
            while (nxt := self._facts.get(chain[-1].superseded_by or "")) and nxt not in chain:
                chain.append(nxt)
            return chain

    def stats(self) -> dict[str, int]:
        """Counts: facts, live, superseded, log lines, dead lines, skipped/torn lines, unknown
        update targets, compactions."""
        self._refresh()
        with self._mutex:
            live = sum(f.live for f in self._facts.values())
            return {
                "facts": len(self._facts),
                "live": live,
                "superseded": len(self._facts) - live,
                "log_lines": self._lines,
                "dead_lines": self._lines - len(self._facts),
                **self._bad,
                **self._counters,
            }
