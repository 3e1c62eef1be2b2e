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

The types and the rule-based update decision live in :mod:`memctx.store.knowledge_rules`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from filelock import FileLock, Timeout

from memctx.errors import StoreError
from memctx.retrieval import lucene_idf
from memctx.text import Redactor, tokenize_unique

from .knowledge_rules import (
    Fact,
    FactType,
    NewFact,
    UpdateDecision,
    UpdateOp,
    decide_update,
    required_matches,
)

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
        fact with every query token scores 1.0. Ties: newer first, then by content (ids are
        random, so they must not decide the order).
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
        hits.sort(key=lambda h: (-h[1], -h[0].timestamp, h[0].content, h[0].id))
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
