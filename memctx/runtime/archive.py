"""The engine's side of the stores: what gets archived, when, and what is still pending.

Stores open lazily on first use (the seed's cold start): a session that never overflows never
reads ``segments.jsonl``.

Archiving rules:

- Recalled blocks are never archived (they are memory already).
- A message is archived once per engine: agents resend their whole history every turn and
  the same old messages are trimmed again and again. A trimmed message is known by its
  trim-cache key (:attr:`memctx.trim.cache.MessageFacts.key`, the same for equal content
  in a new dict), and the keys already archived are skipped in one numpy pass
  (:class:`memctx.runtime.archive_keys.KeySet`) without redacting or hashing the text again.
  Messages the trim cache has not read (compaction, repair copies) are keyed by role + text,
  remembered by dict identity. The store's own sha256 dedup catches repeats across processes.
- With a cheap embedder (hash, ~0.1 ms per text) segments are written before the hook
  searches, so they are recallable in the same turn. With the transformer (~25 ms per text
  on two cores) the write and the embedding run on the background worker; meanwhile the
  segments sit in an in-memory overlay that the hook searches by BM25 alone, so they are
  recallable in the same turn as well, only without the vector half of the score.
- Compacting the raw store (rewriting its files once ~10% of the lines are dead, 0.1-0.3 s
  at 20,000 segments) runs on the background worker, never in a hook: no search needs it.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from memctx import offline  # noqa: F401  (registers memctx/offline with the LLM client)
from memctx.config import MemoryContextConfig
from memctx.errors import StoreError
from memctx.messages import (
    BlockKind,
    InfoCache,
    MessageInfo,
    RoleKind,
    is_recalled_block,
    message_fingerprint,
    safe_label,
)
from memctx.recall import RecallItem, detail_label, message_source
from memctx.retrieval import BM25Index, Embedder, SearchParams, make_embedder
from memctx.store import (
    KNOWLEDGE_FILE,
    OUTPUT_DIR,
    KnowledgeStore,
    RawStore,
    memory_search,
    read_output_ref,
    refused_paths,
    resolve_store_dir,
    validate_name,
    validate_role,
    validate_session_id,
    write_output_ref,
)
from memctx.text import Redactor, tokenize
from memctx.trim import IntArray, MessageFacts

from .archive_keys import KeySet, SegmentKeys, archive_text, message_time
from .extraction_view import extraction_view
from .pieces import message_pieces
from .worker import BackgroundWorker

__all__ = ["Archive", "archive_text", "message_time"]

logger = logging.getLogger("memctx")

# What one hook archives before it returns; the rest goes to the background worker in
# batches. A session's first call can trim tens of thousands of messages at once (50,000 in
# one history took 12 s to archive inline): the hook stays bounded, and the messages become
# recallable as soon as the worker has written them.
_SYNC_MESSAGES = 2_000
_SYNC_CHARS = 1_000_000
_BATCH_MESSAGES = 2_000
_TOOL_NAMES_KEPT = 4_096  # call id -> tool name, for results that carry only the id


@dataclass(frozen=True, slots=True)
class _Source:
    """One message to archive, read: its key, and what its segments are made of."""

    key: Hashable
    role: str
    text: str
    stamp: float
    turn: int | None
    name: str | None


class Archive:
    """Lazily opened raw + knowledge stores, archiving, the pending overlay, extraction."""

    def __init__(
        self,
        config: MemoryContextConfig,
        *,
        store_dir: str | Path,
        session_id: str,
        embedder: Embedder | None,
        llm: Any | None,
        worker: BackgroundWorker,
        infos: InfoCache,
        clock: Callable[[], float],
    ) -> None:
        self._session = validate_session_id(session_id)
        self._config = config
        self._dir = resolve_store_dir(store_dir)  # one reading of '~' for every file
        self._embedder = embedder
        self._llm = llm
        self._worker = worker
        self._infos = infos
        self._clock = clock
        self._redactor = Redactor() if config.redaction else None
        self._raw: RawStore | None = None
        self._knowledge: KnowledgeStore | None = None
        self._mutex = threading.Lock()  # guards the two dicts below against the worker
        # message key -> the raw store's keys of its segments (one per chunk; empty: nothing
        # stored). Keys, not segment ids: a search leaves out the segments in the context by
        # key, and a store keeps a segment id's key for its whole life (RawStore.key_for).
        self._seg_of: dict[Hashable, tuple[int, ...]] = {}
        self._seg_keys = SegmentKeys()  # the same for trim-cache keys, as arrays
        self._pending: dict[Hashable, list[dict[str, Any]]] = {}  # message key -> not yet stored
        self._queued: Counter[Hashable] = Counter()  # message key -> batches queued, unsearched
        self._keys: dict[int, tuple[object, tuple[int, ...], int]] = {}
        self._compaction_queued = False
        self._done = KeySet()  # trim-cache keys of trimmed messages already archived
        # Background jobs queued in a hook, with their kind: the worker starts them when the
        # hook returns (:meth:`writes_after`).
        self._held: list[tuple[Callable[[], object], str]] | None = None
        self._refs_queued: set[str] = set()  # output refs queued on the worker, not written
        self.counts: Counter[str] = Counter()
        self.extraction: dict[str, float] = {}
        self._tool_names: dict[str, str] = {}  # call id -> tool name (the latest calls)

    # -- stores ------------------------------------------------------------------------------

    @property
    def raw(self) -> RawStore:
        if self._raw is None:
            embedder = self._embedder
            if embedder is None:
                cache = None
                if self._config.embedding_model == "transformer":
                    cache = self._dir / "embeddings.cache"
                embedder = make_embedder(
                    self._config.embedding_model,
                    cache_path=cache,
                    model=self._config.transformer_model,
                )
                self._embedder = embedder
            self._raw = RawStore(
                self._dir,
                embedder=embedder,
                session_id=self._session,
                max_segments=self._config.max_segments,
                eviction_days=self._config.eviction_days,
                redactor=self._redactor,
                clock=self._clock,
            ).open()
            # Rewriting the files (~0.1-0.3 s at 20,000 segments) is no work for the hook:
            # the background worker does it (:meth:`_compact_later`).
            self._raw.auto_compact = False
        return self._raw

    @property
    def knowledge(self) -> KnowledgeStore:
        if self._knowledge is None:
            self._knowledge = KnowledgeStore(
                self._dir, redactor=self._redactor or Redactor(), clock=self._clock
            )
        return self._knowledge

    def has_segments(self) -> bool:
        return len(self.raw) > 0

    def has_knowledge(self) -> bool:
        """Whether a knowledge search can find anything (one ``lstat``, no lock, per turn).

        Anything but a regular file there (a directory, a FIFO, a symlink) says yes: the
        search then fails, and the failure is counted (``knowledge_unavailable``) instead
        of passing unnoticed as an empty store.
        """
        try:
            st = os.lstat(self._dir / KNOWLEDGE_FILE)
        except FileNotFoundError:
            return False
        except OSError:
            return True
        return st.st_size > 0 or not stat.S_ISREG(st.st_mode)

    @property
    def cheap_embedder(self) -> bool:
        """Whether embedding inline costs little (hash, or a transformer that fell back)."""
        return str(getattr(self.raw.embedder, "name", "")).startswith("hash")

    def llm_client(self) -> Any:
        if self._llm is None:
            from memctx.llm import LLMClient

            self._llm = LLMClient(self._config.extraction_model, cache_dir=self._dir / "llm-cache")
        return self._llm

    # -- archiving ---------------------------------------------------------------------------

    def message_key(self, message: dict[str, Any]) -> int:
        """An in-process key for "this message": role and archived text."""
        fingerprint = message_fingerprint(message)
        entry = self._keys.get(id(message))
        if entry is not None and entry[0] is message and entry[1] == fingerprint:
            return entry[2]
        info = self._infos.info(message)
        key = hash((info.role, archive_text(info)))
        if len(self._keys) > 200_000:
            self._keys.clear()
        self._keys[id(message)] = (message, fingerprint, key)
        return key

    def key_of(self, message: dict[str, Any], known: Mapping[int, MessageFacts]) -> Hashable:
        """The archive key of ``message``: its trim-cache key (an int) when this turn read it
        (no fingerprinting: the turn already did), else ``("h", role + text hash)``."""
        facts = known.get(id(message))
        return facts.key if facts is not None else ("h", self.message_key(message))

    def segments_in(self, keys: IntArray, unread: Sequence[dict[str, Any]] = ()) -> IntArray:
        """Raw-store keys of the archived segments whose message is being sent (a segment
        may appear twice).

        Args:
            keys: Trim-cache keys (:attr:`MessageFacts.key`) of the messages sent.
            unread: Messages sent that the trim cache has not read (found by role + text).
        """
        with self._mutex:
            seg_of = self._seg_of
            if not seg_of:
                return np.zeros(0, dtype=np.int64)
            # Store keys, not segment ids: no string is hashed or looked up again per turn.
            found = self._seg_keys.of(keys)
            if unread:
                more = (seg_of.get(("h", self.message_key(m))) or () for m in unread)
                found = np.concatenate((found, np.fromiter(chain.from_iterable(more), np.int64)))
        return found

    def trimmed(
        self,
        context: Sequence[dict[str, Any]],
        facts: Sequence[MessageFacts],
        at: IntArray,
        keys: IntArray,
        turns: IntArray,
        originals: Mapping[int, dict[str, Any]] | None = None,
    ) -> None:
        """Archive the messages smart trim removed from ``context``.

        Args:
            context: The messages smart trim was given.
            facts: Their trim-cache readings (``facts[i]`` is ``context[i]``'s).
            at: Positions in ``context`` of the removed messages.
            keys: Their trim-cache keys (:attr:`MessageFacts.key`), in the order of ``at``.
            turns: Their turns (positions in the hook's input), in the order of ``at``.
            originals: ``id(copy) -> original`` for messages of ``context`` that are pruned
                copies (:class:`memctx.trim.PruningSession`): the original is archived,
                under the copy's key, so nothing pruning cut is lost.
        """
        # Most of them were trimmed (and archived) on earlier turns too: skip those in one
        # vector pass over their keys, before any per-message work.
        fresh = np.flatnonzero(~self._done.has(keys))
        if not len(fresh):
            return
        new_at: list[int] = at[fresh].tolist()
        chosen = [context[i] for i in new_at]
        known = {id(context[i]): facts[i] for i in new_at}
        for k, i in enumerate(new_at):
            original = originals.get(id(context[i])) if originals else None
            if original is not None:
                chosen[k] = original
                read = facts[i]
                known[id(original)] = MessageFacts(read.key, original, read.tokens)
        pairs = zip(chosen, turns[fresh].tolist(), strict=True)
        self._store(pairs, known)
        with self._mutex:
            held = [k for k in keys[fresh].tolist() if self._known(k)]
        self._done.add(held)

    def _known(self, key: Hashable) -> bool:
        """Whether the message is archived, pending or queued (caller holds the mutex)."""
        return key in self._seg_of or key in self._pending or key in self._queued

    def compacted(self, messages: Sequence[dict[str, Any]]) -> None:
        """Archive messages about to be compacted, then queue knowledge extraction."""
        ids = self._store(((m, i) for i, m in enumerate(messages)), {})
        if self._config.knowledge_extraction:
            batch = [m for m in messages if not is_recalled_block(m)]
            if batch:
                self._submit(lambda: self._extract(batch, ids), "extraction")
                self.counts["extractions_queued"] += 1

    def _store(
        self,
        pairs: Iterable[tuple[dict[str, Any], int | None]],
        known: Mapping[int, MessageFacts],
    ) -> list[str]:
        sources: list[_Source] = []
        now = self._clock()
        horizon = now - self._config.eviction_days * 86_400.0  # a text's date before it: now
        with self._mutex:
            seen: set[Hashable] = set()
            for message, turn in pairs:
                key = self.key_of(message, known)
                if key in seen:  # the same text again in this batch: its call ids still count
                    self._remember_tools(self._infos.info(message))
                    continue
                if self._known(key):
                    continue  # archived on an earlier turn: the usual case, keep it cheap
                facts = known.get(id(message))
                if facts.recalled if facts is not None else is_recalled_block(message):
                    self.counts["recalled_blocks_skipped"] += 1
                    continue
                seen.add(key)
                info = facts.info if facts is not None else self._infos.info(message)
                role = _role(info.role)
                if role is None:
                    # One unreadable message must not cost the batch: skip it, count it.
                    self.counts["bad_messages_skipped"] += 1
                    self._seg_of[key] = ()
                    continue
                text = archive_text(info, self._redactor)
                if not text.strip():
                    self._seg_of[key] = ()  # nothing to archive; do not look again
                    continue
                role, name = self._provenance(info, role, message)
                stamp = message_time(
                    message, now, "" if role == "tool" else text, not_before=horizon
                )
                sources.append(_Source(key, role, text, stamp, turn, name))
        if not sources:
            return []
        if self._redactor is not None:
            sources = _redacted_sources(sources, self._redactor)
        now_part, later = _split_for_hook(sources)
        if later:
            self._queue_later(later)
        keys, items = self._items(now_part)
        if not items:
            return []
        if self.cheap_embedder:
            return self._write(keys, items)
        with self._mutex:
            for key, item in zip(keys, items, strict=True):
                self._pending.setdefault(key, []).append(item)
            # Under the mutex: the block's end either sees this batch or we see it ended.
            held = self._held
            if held is not None:
                held.append((partial(self._write, keys, items), "archive"))
        if held is None:
            self._worker.submit(partial(self._write, keys, items), "archive")
        return []

    def _provenance(
        self, info: MessageInfo, role: str, message: Mapping[str, Any]
    ) -> tuple[str, str | None]:
        """Who wrote the message, as the store keeps it: its role and name.

        A message carrying any tool result is archived as role ``tool`` named after its
        tool(s), whatever its own role (an Anthropic ``tool_result`` comes in a ``user``
        message): the least-trusted author of its text names all of it, so text a tool
        returned is never recalled as the user's. The tool's name is the result's own, or
        the matching call's (remembered from the calls archived before it).
        """
        if info.kind is not RoleKind.TOOL and not info.has_tool_results:
            self._remember_tools(info)
            return role, _speaker(message)
        names = [
            b.tool_name or self._tool_names.get(b.tool_id or "", "")
            for b in info.blocks
            if b.kind is BlockKind.TOOL_RESULT
        ]
        name = safe_label(",".join(dict.fromkeys(n for n in names if n)), "")
        return "tool", name or None

    def _remember_tools(self, info: MessageInfo) -> None:
        """Note the tool name of every call ``info`` makes, by call id (the latest kept)."""
        if not info.has_tool_calls:
            return
        for block in info.blocks:
            if block.kind is BlockKind.TOOL_CALL and block.tool_id and block.tool_name:
                self._tool_names[block.tool_id] = block.tool_name
                if len(self._tool_names) > _TOOL_NAMES_KEPT:
                    del self._tool_names[next(iter(self._tool_names))]

    def _items(self, sources: Sequence[_Source]) -> tuple[list[Hashable], list[dict[str, Any]]]:
        """The segments of ``sources`` (redacted, bounded, chunked); oversized middles are
        queued to be kept whole on the worker."""
        keys: list[Hashable] = []
        items: list[dict[str, Any]] = []
        for src in sources:
            pieces = message_pieces(
                src.text,
                redactor=self._redactor,
                chunk_tokens=self._config.archive_chunk_tokens,
                max_chars=self._config.archive_max_message_chars,
            )
            if pieces.overflow is not None:
                self.counts["oversized_messages"] += 1
                first, last = pieces.overflow_lines
                with self._mutex:
                    self._refs_queued.add(_ref_of(pieces.overflow_name))
                keep = partial(
                    self._keep_output,
                    pieces.overflow_name,
                    pieces.overflow,
                    f"{src.role} message, lines {first}-{last}",
                )
                self._submit(keep, "output_ref")
            base = {"session_id": self._session, "role": src.role, "timestamp": src.stamp}
            for piece in pieces.chunks:
                keys.append(src.key)
                items.append({**base, "content": piece, "turn": src.turn, "name": src.name})
        return keys, items

    def _queue_later(self, sources: list[_Source]) -> None:
        """Archive ``sources`` on the worker, a batch at a time, unsearched until written."""
        self.counts["archive_deferred"] += len(sources)
        with self._mutex:
            self._queued.update(src.key for src in sources)
            for start in range(0, len(sources), _BATCH_MESSAGES):
                job = partial(self._write_later, sources[start : start + _BATCH_MESSAGES])
                if self._held is not None:
                    self._held.append((job, "archive"))
                else:
                    self._worker.submit(job, "archive")

    def _write_later(self, sources: Sequence[_Source]) -> None:
        """A deferred batch, on the worker: cut, redact and write."""
        try:
            keys, items = self._items(sources)
            if items:
                self._write(keys, items)
        finally:
            with self._mutex:
                for src in sources:
                    self._queued[src.key] -= 1
                    if self._queued[src.key] <= 0:
                        del self._queued[src.key]

    def _keep_output(self, name: str, middle: str, what: str) -> None:
        """Redact the middle of an oversized message and keep it whole (worker)."""
        try:
            text = self._redactor.redact(middle) if self._redactor is not None else middle
            write_output_ref(self._dir, name, text, what=what)
            self.counts["output_refs"] += 1
        finally:
            with self._mutex:
                self._refs_queued.discard(_ref_of(name))

    def output_queued(self, ref: str) -> bool:
        """Whether ``ref`` names a text queued to be kept that the worker has not written."""
        with self._mutex:
            return ref in self._refs_queued

    def _submit(self, job: Callable[[], object], kind: str) -> None:
        """Queue ``job`` on the worker, or hold it for the end of :meth:`writes_after`."""
        with self._mutex:
            if self._held is not None:
                self._held.append((job, kind))
                return
        self._worker.submit(job, kind)

    @contextmanager
    def writes_after(self) -> Iterator[None]:
        """Hold the background jobs queued inside the block; queue them when it ends.

        Both hooks run inside it. For the context hook it means that its own search never
        sees half of its writes. For both it keeps the worker from starting a long job (the
        redaction of a 50 MB middle, an extraction) while the hook runs: Python's regular
        expressions hold the GIL for a whole scan, and a hook thread waiting for it made a
        50 MB message's hook take 9 s instead of 0.3 s. A hook on another thread meanwhile
        has its jobs held too (one hook's length at most); nothing is lost, since the swap
        below and every append happen under the mutex. Nested, the outer block queues.
        """
        with self._mutex:
            outer = self._held is None
            if outer:
                self._held = []
        try:
            yield
        finally:
            if outer:
                with self._mutex:
                    held, self._held = self._held or [], None
                for job, kind in held:
                    self._worker.submit(job, kind)

    def _write(self, keys: list[Hashable], items: list[dict[str, Any]]) -> list[str]:
        try:
            segments = self.raw.add_many(items)
        finally:
            with self._mutex:
                for key in keys:
                    self._pending.pop(key, None)
        ids = []
        # None: a duplicate the store already holds (add_many), or, never, a segment the
        # store did not index (key_for): it was indexed just now.
        raw = self.raw
        store_keys = [None if s is None else raw.key_for(s.id) for s in segments]
        with self._mutex:
            for key, segment, store_key in zip(keys, segments, store_keys, strict=True):
                known = self._seg_of.get(key, ())
                if segment is not None:
                    if store_key is not None:
                        known = (*known, store_key)
                    ids.append(segment.id)
                self._seg_of[key] = known
            for key in dict.fromkeys(keys):  # the chunks of a message are all in one batch
                if isinstance(key, int):
                    self._seg_keys.set(key, self._seg_of[key])
        self.counts["archived"] += len(ids)
        self.counts["archive_duplicates"] += len(items) - len(ids)
        self._compact_later()
        return ids

    def _compact_later(self) -> None:
        """Queue one compaction of the raw store on the worker once it is due.

        Searches do not need it (dead lines are invisible to them), so it waits for the
        worker; a closed worker means the engine is closing, and it runs here instead.
        """
        raw = self.raw
        if self._compaction_queued or not raw.compaction_due():
            return

        def compact() -> None:
            try:
                raw.maybe_compact()
            finally:
                self._compaction_queued = False

        self._compaction_queued = True
        if not self._worker.submit(compact, "compaction"):
            compact()

    def pending_items(self, query: str, limit: int) -> list[RecallItem]:
        """Overlay hits: archived this turn, not yet embedded (BM25 only, scaled by its weight)."""
        with self._mutex:
            pending = [item for items in self._pending.values() for item in items]
        q = tokenize(query)
        if not pending or not q:
            return []
        index = BM25Index()
        index.add_many((i, tokenize(item["content"])) for i, item in enumerate(pending))
        scores = index.normalized_scores(q)
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        out = []
        for i, score in best:
            item = pending[i]
            text = item["content"]
            if self._redactor is not None:
                text = self._redactor.redact(text)
            weighted = self._config.text_weight * score
            if weighted >= self._config.auto_recall_min_score and score > 0:
                order = (float(item["timestamp"]), i)
                source = message_source(
                    item["session_id"], float(item["timestamp"]), item["turn"], item["role"]
                )
                out.append(
                    RecallItem(
                        "detail",
                        text,
                        weighted,
                        detail_label(item["role"], item["name"]),
                        f"pending:{i}",
                        order,
                        source,
                        item["session_id"],
                    )
                )
        return out

    # -- extraction and search -----------------------------------------------------------------

    def _extract(self, messages: Sequence[Mapping[str, Any]], source_ids: list[str]) -> None:
        from memctx.extraction import extract_and_update

        start = time.perf_counter()
        # Extraction reads a bounded view of each message (on the worker, off the hook): its
        # calls and tokens are bounded per message, whatever the message's role and size.
        cap = self._config.extraction_max_message_tokens * 3
        views = [extraction_view(m, cap) for m in messages]
        rewritten = sum(v is not m for v, m in zip(views, messages, strict=True))
        if rewritten:
            self.counts["extraction_messages_rewritten"] += rewritten
        report = extract_and_update(
            views,
            store=self.knowledge,
            client=self.llm_client(),
            session_id=self._session,
            source_ids=source_ids,
        )
        for name, value in report.as_dict().items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                self.extraction[name] = self.extraction.get(name, 0) + value
        seconds = self.extraction.get("seconds", 0.0) + time.perf_counter() - start
        self.extraction["seconds"] = seconds

    def read_output(self, ref: str) -> str:
        return read_output_ref(self._dir, ref)

    def memory_search(self, query: str, limit: int, params: SearchParams) -> list[dict[str, Any]]:
        """The ``memory_search`` tool over this archive, ranked with ``params`` (the
        engine's: the same weights its recall uses)."""
        return memory_search(
            self.raw,
            query,
            limit,
            session_id=self._session,
            cross_session=self._config.cross_session,
            params=params,
        )

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "archive": dict(self.counts),
            "pending_segments": sum(map(len, self._pending.values())),
            "extraction": dict(self.extraction),
            # The store boundary: symlinks and hard-linked files refused under this store
            # (every part, in this process); knowledge_unavailable and raw_store_unavailable
            # (a damaged store skipped by a turn's recall) are in the engine's counts.
            "store_paths_refused": refused_paths(self._dir),
        }
        if self._raw is not None:
            out["raw_store"] = self._raw.stats()
            embedder = self._raw.embedder
            out["embedder"] = {
                "name": getattr(embedder, "name", "?"),
                "version": getattr(embedder, "version", "?"),  # the transformer: its model
                "dim": getattr(embedder, "dim", None),
                "fallback_reason": getattr(embedder, "fallback_reason", None),
            }
        if self._knowledge is not None:
            out["knowledge"] = self._knowledge.stats()
        if self._llm is not None and hasattr(self._llm, "usage"):
            usage = self._llm.usage()
            out["llm"] = usage.as_dict() if hasattr(usage, "as_dict") else usage
        return out

    def close(self) -> None:
        if self._raw is not None:
            self._raw.close()


def _split_for_hook(sources: list[_Source]) -> tuple[list[_Source], list[_Source]]:
    """The messages to archive in the hook (the newest, up to its budget) and the rest."""
    chars = 0
    cut = len(sources)
    while cut > 0:
        size = len(sources[cut - 1].text)
        taken = len(sources) - cut
        if taken and (taken >= _SYNC_MESSAGES or chars + size > _SYNC_CHARS):
            break
        chars += size
        cut -= 1
    return sources[cut:], sources[:cut]


def _role(role: str | None) -> str | None:
    """The role as the store keeps it (``unknown`` when the message has none), or ``None``
    for a role the store refuses (``"tool result"``, a NUL, a surrogate)."""
    try:
        return validate_role(role or "unknown")
    except StoreError:
        return None


def _redacted_sources(sources: list[_Source], redactor: Redactor) -> list[_Source]:
    """The batch with its speakers' names redacted and the secrets cut over two
    neighbouring messages masked in both (each text is redacted on its own later)."""
    texts = redactor.redact_across([src.text for src in sources])
    names = redactor.redact_across([src.name or "" for src in sources])
    return [
        replace(src, text=text, name=_redacted_name(name or None, redactor))
        for src, text, name in zip(sources, texts, names, strict=True)
    ]


def _redacted_name(name: str | None, redactor: Redactor) -> str | None:
    """A speaker's name with its secrets masked; dropped if the marker makes it unusable."""
    if name is None:
        return None
    try:
        return validate_name(redactor.redact(name))
    except StoreError:
        return None


def _speaker(message: Mapping[str, Any]) -> str | None:
    """The message's ``name`` (who spoke, in a multi-party chat), when it is a usable one."""
    try:
        return validate_name(message.get("name"))
    except StoreError:
        return None  # a name the store refuses is dropped, the message archived all the same


def _ref_of(name: str) -> str:
    """The ref a kept text's note names (:func:`memctx.store.write_output_ref`)."""
    return f"{OUTPUT_DIR}/{name}.json"
