"""The knowledge store: short extracted facts in ``knowledge.jsonl``, updated Mem0-style.

Records are ``{id, type, content, context, timestamp, supersededBy?, sessionId?, source?,
origin?}`` (DESIGN.md's fields; ``timestamp`` in epoch seconds; the optional keys are written
only when set, ``source`` listing provenance such as segment ids, ``origin`` the kind of
message the fact was extracted from: ``user``, ``assistant``, ``tool:<name>``, decided by
extraction's code, not by its model; records written before it existed load as unknown).

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

Each record carries a ``crc`` (:mod:`memctx.store.checksum`; records written before it load
as they are). A record that fails it changed on disk after it was written: it is counted
(``checksum_mismatches``), never served, and its fact is withdrawn until a later intact
version arrives, since the version read last decides a fact's state and that one is unknown.
The directory is resolved like every store's (:func:`memctx.store.files.resolve_store_dir`),
and a directory, FIFO or socket in place of ``knowledge.jsonl`` is refused with an error
that names the fix, without blocking and without touching it.

The types and the rule-based update decision live in :mod:`memctx.store.knowledge_rules`.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace

from memctx.retrieval import lucene_idf
from memctx.text import tokenize_unique

from .knowledge_log import KNOWLEDGE_FILE, KnowledgeLog
from .knowledge_rules import (
    Fact,
    FactType,
    NewFact,
    UpdateDecision,
    UpdateOp,
    decide_update,
    least_trusted,
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


# --- the store ------------------------------------------------------------------------------


class KnowledgeStore(KnowledgeLog):
    """Facts in ``<store_dir>/knowledge.jsonl`` with keyword search (see the module docstring).

    Args:
        store_dir: Directory of the store (:func:`memctx.store.files.resolve_store_dir`);
            created if missing.
        redactor: Masks secrets in ``content`` and ``context`` before anything is written.
        clock: Epoch seconds for new versions' timestamps (injectable for tests).

    Thread-safe; several processes may share one store directory.

    Raises:
        StoreError: The directory or the file cannot be created, read or locked.
    """

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
                # The text may carry what both said: the less trusted source names it.
                origin=least_trusted((target.origin, new.origin)),
            )
            self._append([written])
            return self._facts.get(written.id)
        fresh = Fact(
            str(uuid.uuid4()),
            new.type,
            content,
            context,
            now,
            None,
            new.session_id,
            new.source,
            new.origin,
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
        """Counts: facts, live, superseded, log lines, dead lines, skipped/torn lines, records
        failing their checksum, unknown update targets, compactions."""
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
