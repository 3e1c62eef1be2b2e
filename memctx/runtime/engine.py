"""``MemoryContext``: one session's engine behind the two hooks an agent loop calls.

``on_context(messages)`` runs before every model call (seed 000, "Context Event"):

0. with ``contextPruning.mode`` ``cache-ttl``, old tool results are soft-trimmed or cleared
   in the copy sent once the prompt cache has gone cold, and the same pruned copies are sent
   on the warm calls after (:class:`memctx.trim.PruningSession`, seed 003; counted as
   ``prunings``); a pruned message that is trimmed later is archived whole;
1. drop recalled blocks from earlier turns;
2. build the query from the last 2–3 real user messages (:func:`memctx.recall.query.build_query`);
3. if the context is over ``safe_limit = window − reserve − cap`` and the query has ≥ 3
   characters, smart-trim it (BM25 against the query, then oldest first, then pairing
   repair). Beyond the seed: a context over the *window itself* is trimmed even with a short
   query (oldest first), because sending it would fail outright. When the messages
   ``protectedRecentMessages`` protects do not fit the window, fewer are protected, down
   to the last one (``protected_messages_unprotected``);
4. archive what was trimmed. With a cheap embedder (hash) this happens before the search, so
   a message trimmed this turn is recallable this turn (the seed's known limitation). With the
   transformer, segments are embedded on the background worker; until then they are found by
   keywords from an in-memory overlay (:mod:`memctx.runtime.archive`);
5. search details (raw store) and knowledge; segments still in the context are skipped
   (:mod:`memctx.runtime.recall_step`);
6. if a fact matches or the best detail scores at least ``autoRecallMinBestScore``, build
   the ``<recalled-context>`` block under ``min(hardCapTokens, 10% of window)``, or less
   when the kept messages leave less (``recall_cap_reduced``; never past the window, see
   :meth:`MemoryContext._recall_room`), and
   insert it where ``recallPlacement`` says: just before the latest user request by
   default (the prefix before it stays in the prompt cache), after the system prompt and a
   compaction summary (the seed's place), or at the end;
7. final check: pairing violations are repaired (input may arrive broken), counted;
8. a context that still does not fit ``window − reserve`` because a protected tool result
   is too large (a build log longer than the window) has its oversized tool results cut to
   head and tail in the copy sent, tighter while several together do not fit (seed 001's
   truncation,
   :func:`memctx.compaction.truncate_oversized_tool_results`; ``tool_results_cut``), so
   the call fits instead of failing every turn; the agent's own list keeps them whole. When
   even that does not fit the window, text blocks of any role longer than the allowance (a
   50 MB log pasted as the latest request) are cut the same way (``texts_cut``); only then
   is a call counted ``over_window``.

What each call did is kept as :attr:`MemoryContext.last_call`
(:class:`memctx.runtime.call_record.ContextCallRecord`).

``on_before_compact(messages)`` archives the messages verbatim (never recalled blocks) and
queues knowledge extraction on the worker. It returns nothing: the compaction summary is the
compactor's job.

Both hooks hold the engine's lock (hooks of one session run one at a time, from any thread)
and never raise: a failure is logged, counted in :meth:`MemoryContext.stats` and the hook
returns the messages it was given. The store is not needed to keep a context inside its
window: when archiving or recall fails (disk full, a read-only or damaged store), the turn
still trims and repairs, without archive or recall, and the failure is counted
(``archive_failures``, ``recall_failures``). An item that is not a message (not a dict, or
a dict whose ``role`` is not a string) is dropped from what either hook reads and sends,
counted as ``bad_messages_skipped``; a message the store cannot keep (a role it refuses) is
not archived, counted in the archive's ``bad_messages_skipped``; the rest goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from memctx.config import MemoryContextConfig
from memctx.errors import StoreError
from memctx.messages import (
    InfoCache,
    RoleKind,
    SdkMessages,
    TokenCounter,
    describe_unreadable,
    pairing_violations,
    repair_tool_pairing,
    role_kind,
)
from memctx.recall import build_query, insert_recall
from memctx.retrieval import Embedder, SearchParams
from memctx.store import resolve_store_dir
from memctx.trim import (
    IntArray,
    PruningSession,
    ReadInfos,
    SessionState,
    TrimCache,
    TrimResult,
    trim_read,
)

from .archive import Archive
from .call_record import CallNotes, ContextCallRecord, fallback_record, freeze_safely
from .oversized import cut_oversized_results, cut_oversized_texts
from .recall_step import RecallSetup, recall_turn
from .stats import DistinctKeys, HookTimer
from .worker import BackgroundWorker

__all__ = ["MemoryContext"]

logger = logging.getLogger("memctx")

_REGISTRY: dict[tuple[str, str], MemoryContext] = {}
_REGISTRY_LOCK = threading.Lock()
_OUTPUT_WAIT_S = 60.0


class MemoryContext:
    """Memory-enhanced context management for one agent session.

    Args:
        config: Settings; ``None`` means the defaults. A config with ``enabled=False``
            makes both hooks pass messages through untouched; the engine logs one warning
            saying so and :meth:`stats` reports ``"enabled": False``.
        store_dir: Directory of the raw store, knowledge store and LLM cache (shared by
            sessions; created on first write).
        session_id: This session's id (letters, digits, ``._-``; validated).
        context_window_tokens: The model's context window.
        embedder: Override the configured embedder (tests, custom models).
        llm: Override the LLM client used for knowledge extraction (an object with
            ``complete`` and ``is_offline``, e.g. :class:`memctx.llm.client.LLMClient`).
        clock: Epoch seconds (injectable for tests).

    Raises:
        StoreError: ``session_id`` or ``store_dir`` is invalid (the message says why).
        ValueError: ``context_window_tokens`` is not a positive integer.
    """

    def __init__(
        self,
        config: MemoryContextConfig | None = None,
        *,
        store_dir: str | Path,
        session_id: str,
        context_window_tokens: int = 200_000,
        embedder: Embedder | None = None,
        llm: Any | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(context_window_tokens, bool) or not isinstance(context_window_tokens, int):
            raise ValueError(f"context_window_tokens must be an int, got {context_window_tokens!r}")
        if context_window_tokens <= 0:
            raise ValueError(f"context_window_tokens must be > 0, got {context_window_tokens}")
        self.config = config if config is not None else MemoryContextConfig()
        self.session_id = session_id
        self.window = context_window_tokens
        self._lock = threading.RLock()
        self._infos = InfoCache()
        self._tokens = TokenCounter(self.config.token_counter)
        self._trim_cache = TrimCache()
        self._worker = BackgroundWorker(f"memctx-{session_id}")
        self._archive = Archive(
            self.config,
            store_dir=store_dir,
            session_id=session_id,
            embedder=embedder,
            llm=llm,
            worker=self._worker,
            infos=self._infos,
            clock=clock,
        )
        self._clock = clock
        # Seed 003's pruning of old tool results, before the trim: off unless configured.
        self._pruning = (
            PruningSession(self.config.context_pruning, self.window, infos=self._infos)
            if self.config.context_pruning.mode != "off"
            else None
        )
        self._timer = HookTimer()
        self._closed = False
        self._registry_key: tuple[str, str] | None = None
        self._counts: Counter[str] = Counter()
        self._sdk = SdkMessages()
        self._unknown_seen: dict[int, object] = {}
        self._unknown_logged = False
        self._last_error: str | None = None
        self._calls = 0  # on_context calls, failed ones included
        self._notes: CallNotes | None = None  # the call in progress
        self._last_call: ContextCallRecord | None = None
        self._trimmed_keys = DistinctKeys()  # trim-cache keys of every message ever trimmed
        params = SearchParams(
            vector_weight=self.config.vector_weight,
            text_weight=self.config.text_weight,
            speaker_prior=self.config.speaker_prior,
            decay=self.config.time_decay,
            decay_unit_seconds=3600.0,
            min_score=self.config.auto_recall_min_score,
        )
        self._recall_setup = RecallSetup(self.config, params, self.recall_cap, session_id)
        if not self.config.enabled:  # once per engine: a hook warning would repeat every turn
            logger.warning(
                "memctx is disabled by enabled=false in its config (session %s): on_context "
                "and on_before_compact pass messages through unchanged; drop enabled=false "
                "(the default is true) or set enabled=true to turn it on",
                session_id,
            )
        elif self.safe_limit == 0:  # the window is known only here: say so once, not per turn
            logger.warning(
                "memctx: reserveTokens %d and the recall cap %d leave no room for history in "
                "the %d-token window (session %s): every message smart trim may drop is dropped "
                "on every turn, and a recall block gets only what the rest leaves; lower "
                "reserveTokens, hardCapTokens or recallWindowRatio",
                self.config.reserve_tokens,
                self.recall_cap,
                self.window,
                session_id,
            )

    @classmethod
    def for_session(
        cls,
        config: MemoryContextConfig | None = None,
        *,
        store_dir: str | Path,
        session_id: str,
        **kwargs: Any,
    ) -> MemoryContext:
        """The one open engine of ``(store_dir, session_id)`` in this process, made on first use.

        The seed's singleton runtime: the context hook and the compaction hook of one session
        (often registered separately, maybe on different threads) must share one engine, or
        trimmed messages and extracted facts would live in two caches. Arguments other than
        the key apply only when the engine is created. :meth:`close` forgets it.
        """
        key = (str(resolve_store_dir(store_dir)), session_id)
        with _REGISTRY_LOCK:
            engine = _REGISTRY.get(key)
            if engine is None or engine._closed:
                engine = cls(config, store_dir=store_dir, session_id=session_id, **kwargs)
                engine._registry_key = key
                _REGISTRY[key] = engine
            return engine

    # -- limits --------------------------------------------------------------------------------

    @property
    def recall_cap(self) -> int:
        """Tokens the recall block may take: ``min(hardCapTokens, floor(window × 0.10))``."""
        return self.config.recall_cap_tokens(self.window)

    @property
    def safe_limit(self) -> int:
        """Context tokens above which smart trim runs: ``window − reserve − cap``."""
        return max(self.window - self.config.reserve_tokens - self.recall_cap, 0)

    # -- hooks ---------------------------------------------------------------------------------

    def on_context(self, messages: list[Any]) -> list[Any]:
        """The messages to send this turn: trimmed if needed, with recalled memory. Never raises.

        ``messages`` are dicts in any supported format (OpenAI chat, Anthropic, Pi, Gemini,
        Responses API items) or SDK objects (pydantic models, read through ``model_dump``): a
        message kept unchanged comes back as the caller's own object, a changed one as a dict.

        What the call did is in :attr:`last_call` afterwards.
        """
        with self._timer("on_context"), self._lock:
            self._calls += 1
            self._notes = None
            given = messages
            originals: dict[int, object] = {}
            try:
                if self.config.enabled:
                    given = messages
                    messages, originals = self._messages_only(messages)
                    given = SdkMessages.restore(messages, originals)
                out = self._context(messages)
            except Exception as exc:  # the hook contract: never raise into the agent
                self._fail("on_context", exc)
                self._last_call = fallback_record(
                    self._calls, given, self._last_error or "", self._tokens.count_message
                )
                return given
            self._counts["on_context"] += 1
            return SdkMessages.restore(out, originals)

    def _messages_only(self, messages: list[Any]) -> tuple[list[dict[str, Any]], dict[int, object]]:
        """``messages`` with SDK objects read as dicts (:class:`memctx.messages.SdkMessages`;
        the map gives each such dict's original) and without the items that are not
        messages, counted as ``bad_messages_skipped`` (:func:`only_messages`). Messages whose
        shape memctx cannot read are kept and counted once each as ``unknown_messages``."""
        _check_list(messages)
        read, originals = self._sdk.read(messages)
        kept = only_messages(read)
        if len(kept) < len(messages):
            self._counts["bad_messages_skipped"] += len(messages) - len(kept)
        self._note_unknown(kept)
        return kept, originals

    def _note_unknown(self, messages: list[dict[str, Any]]) -> None:
        """Count each message of a shape memctx cannot read once; log the first one's shape
        (type name and keys, never its content) once per session."""
        for message in messages:
            if role_kind(message) is not RoleKind.UNKNOWN or id(message) in self._unknown_seen:
                continue
            if len(self._unknown_seen) >= 100_000:
                self._unknown_seen.clear()
            self._unknown_seen[id(message)] = message  # held: its id cannot be reused
            self._counts["unknown_messages"] += 1
            if not self._unknown_logged:
                self._unknown_logged = True
                logger.warning(
                    "memctx cannot read a message shape (%s): it is kept and sent as given, "
                    "its tokens estimated from its JSON; further ones are counted as "
                    "unknown_messages",
                    describe_unreadable(message),
                )

    @property
    def last_call(self) -> ContextCallRecord | None:
        """What the latest ``on_context`` call did (:class:`ContextCallRecord`): tokens
        before and after, the messages trimmed and why, the items recalled with their
        scores, repairs, fallback; ``None`` before the first call."""
        with self._lock:
            return self._last_call

    def on_before_compact(self, messages: list[Any]) -> None:
        """Archive ``messages`` (about to be compacted) and queue knowledge extraction."""
        with self._timer("on_before_compact"), self._lock:
            try:
                if not isinstance(messages, list):
                    raise TypeError(
                        f"messages must be a list of message dicts, got {type(messages).__name__}"
                    )
                batch, _ = self._messages_only(messages)  # what is not a message: skipped
                if self.config.enabled:
                    with self._archive.writes_after():  # the worker starts when we return
                        self._archive.compacted(batch)
                self._counts["on_before_compact"] += 1
            except Exception as exc:
                self._fail("on_before_compact", exc)

    def memory_search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``memory_search`` tool: ``[{content, score, session_id, turn}]``, at most 20.

        Raises:
            TypeError: ``query`` is not a string or ``limit`` not an int.
            StoreError: The store cannot be read (the message says why).
        """
        if not isinstance(query, str):
            raise TypeError(
                f"memory_search query must be a string, got {type(query).__name__}: pass the "
                "text to search for"
            )
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"memory_search limit must be an int, got {type(limit).__name__}")
        with self._lock:
            # Ranked as this engine's recall is (vectorWeight, textWeight, speakerPrior,
            # timeDecay, autoRecallMinScore), not with the search's defaults.
            return self._archive.memory_search(query, limit, self._recall_setup.params)

    def read_output_ref(self, ref: str) -> str:
        """The whole text an archived note names (``tool-output/<name>.json``): the middle
        of a message too large to index, kept redacted in the store.

        Raises:
            StoreError: The ref is not a string, is malformed, or its file is missing or
                damaged.
        """
        if not isinstance(ref, str):
            raise StoreError(
                f"an output ref must be a string like 'tool-output/<name>.json', got "
                f"{type(ref).__name__}: pass the ref the archived note names"
            )
        try:
            return self._archive.read_output(ref)
        except StoreError:
            # Wait only for a ref this engine queued and the worker has not written yet: a
            # malformed or unknown ref is refused at once, not after a minute of waiting.
            if not self._archive.output_queued(ref):
                raise
            self._worker.wait_idle(_OUTPUT_WAIT_S)
            return self._archive.read_output(ref)

    # -- lifecycle -----------------------------------------------------------------------------

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for background archiving and extraction; ``False`` if ``timeout`` ran out."""
        return self._worker.wait_idle(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Finish background work, then release the stores' files."""
        self._worker.close(timeout)
        with self._lock:
            self._closed = True
            self._archive.close()
        with _REGISTRY_LOCK:
            if self._registry_key and _REGISTRY.get(self._registry_key) is self:
                del _REGISTRY[self._registry_key]

    def __enter__(self) -> MemoryContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> dict[str, Any]:
        """Counters, hook latencies (p50/p95 ms), failures, store and LLM figures, and
        ``last_call`` (:attr:`last_call` as a plain dict). Counts are ints over the engine's
        life: ``trims`` the calls that trimmed, ``trimmed_messages`` the distinct messages
        (by content) ever left out; what one call did is in ``last_call``."""
        with self._lock:
            last = self._last_call
            return {
                "session_id": self.session_id,
                "enabled": self.config.enabled,
                "window": self.window,
                "recall_cap": self.recall_cap,
                "safe_limit": self.safe_limit,
                "counts": dict(self._counts),
                "latency_ms": self._timer.summary(),
                "last_error": self._last_error,
                "last_call": last.as_dict() if last is not None else None,
                "worker": {
                    "pending": self._worker.pending,
                    "done": dict(self._worker.done),
                    "failed": dict(self._worker.failed),
                },
                **self._archive.stats(),
            }

    # -- the context event ---------------------------------------------------------------------

    def _fail(self, hook: str, exc: BaseException) -> None:
        self._counts[f"{hook}_failures"] += 1
        self._last_error = f"{hook}: {type(exc).__name__}: {exc}"
        logger.warning("memctx %s failed; messages passed through unchanged", hook, exc_info=exc)

    def _degraded(self, part: str, exc: BaseException) -> None:
        """Count a failure of ``part`` (archive, recall) that the turn survives without it.

        Logged the first time and whenever the error changes: a full disk fails every turn.
        """
        self._counts[f"{part}_failures"] += 1
        error = f"{part}: {type(exc).__name__}: {exc}"
        if error != self._last_error:
            logger.warning("memctx %s failed; the turn goes on without it", part, exc_info=exc)
        self._last_error = error
        if self._notes is not None:
            self._notes.failed(part, error)

    def _context(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _check_messages(messages)
        self._notes = CallNotes(self._calls, messages)
        if not self.config.enabled:
            self._notes.tokens_before = sum(map(self._tokens.count_message, messages))
            self._finish(messages, self._notes.tokens_before)
            return messages
        # The trim cache is this engine's own: holding its lock for the whole turn lets the
        # turn read its input once and hand that reading to smart trim and the archive.
        # Writes to the store queued by this call start when it returns: its own search sees
        # them in the pending overlay only, never half of them written (same input, same
        # block, whatever the worker's timing).
        with self._trim_cache.lock, self._archive.writes_after():
            return self._context_read(messages)

    def _context_read(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        count = self._tokens.count_message
        cache = self._trim_cache
        notes = self._notes
        assert notes is not None  # set by _context
        originals: dict[int, Any] = {}
        if self._pruning is not None:
            pruned = self._pruning.apply(messages, self._clock())
            if pruned.pruned_now:
                self._counts["prunings"] += 1
                self._counts["tool_results_soft_trimmed"] += pruned.soft_trimmed
                self._counts["tool_results_cleared"] += pruned.cleared
            messages, originals = pruned.messages, pruned.originals
        # For the usual input (last turn's list plus new messages) only the new ones are read.
        state = cache.read(messages, count)
        recalled = state.recalled
        turn_at: IntArray | None = None  # position in ``messages`` of each of ``base``
        if recalled.any():
            turn_at = np.flatnonzero(~recalled)
            base = [messages[i] for i in turn_at.tolist()]
            base_facts = [state.facts[i] for i in turn_at.tolist()]
            total = int(state.tokens[turn_at].sum())
        else:
            base = list(messages)
            base_facts = state.facts
            total = int(state.tokens.sum())
        notes.read(int(state.tokens.sum()), len(messages) - len(base), messages, originals, count)
        infos = ReadInfos(base, base_facts)
        query = build_query(base, infos)
        kept = base
        # Trim-cache keys of the messages sent (a superset is harmless: recalled blocks are
        # never archived), and those sent that the cache has not read (repair copies).
        kept_keys = state.keys
        unread: list[dict[str, Any]] = []
        trimmed = False
        overflow = total > self.window - self.config.reserve_tokens
        if total > self.safe_limit and (len(query.strip()) >= 3 or overflow):
            if turn_at is not None:  # recalled blocks dropped: smart trim reads ``base``
                state = cache.read(base, count)
            result = self._trim_to_fit(base, state, query, overflow)
            kept = result.kept
            total = result.tokens_after
            # Without a removal smart trim may have returned early, before its repair.
            trimmed = result.did_trim
            if result.did_trim:
                at = np.asarray(result.trimmed_at, dtype=np.int64)
                turns = turn_at[at] if turn_at is not None else at
                self._counts["trims"] += 1
                self._counts["trimmed_messages"] += self._trimmed_keys.add_new(state.keys[at])
                notes.trimmed_by(result, turns, state.tokens[at], len(query.strip()) < 3)
                try:
                    self._archive.trimmed(base, state.facts, at, state.keys[at], turns, originals)
                except Exception as exc:  # trimming needs no disk: send the trimmed context
                    self._degraded("archive", exc)
                kept_at = np.asarray(result.kept_at, dtype=np.int64)
                kept_keys = state.keys[kept_at[kept_at >= 0]]
                if len(kept_at) and kept_at.min() < 0:
                    unread = [m for m, i in zip(kept, result.kept_at, strict=True) if i < 0]
                # Ask with what the model will see: the same query next turn on this output,
                # which keeps the hook idempotent even if an old user message was trimmed.
                query = build_query(kept, infos)
        notes.query = query
        block = None
        room = self._recall_room(kept, total) if len(query.strip()) >= 3 else 0
        if len(query.strip()) >= 3 and room < self.recall_cap:
            self._counts["recall_cap_reduced"] += 1  # the kept messages leave less room
        if room > 0:
            try:
                in_context = self._archive.segments_in(kept_keys, unread)
                block = self._recall(query, kept, in_context, room)
            except Exception as exc:  # no recall this turn is better than no turn
                self._degraded("recall", exc)
        out = insert_recall(kept, block, infos, self.config.recall_placement)
        if block is not None:
            notes.recall_tokens = count(block)
            total += notes.recall_tokens
        # After a trim its own repair ran, and the block goes before any call, so only an
        # untrimmed input (the agent's own list, e.g. with nothing trimmable) can still hold
        # a broken pair.
        if not trimmed:
            violations = pairing_violations(out, cache=infos)
            if violations:
                self._counts["pairing_repairs"] += 1
                notes.pairing_repairs = len(violations)
                out = repair_tool_pairing(out, cache=infos)
                total = sum(count(m) for m in out)
        if total > self.window - self.config.reserve_tokens:
            out, total, cut = cut_oversized_results(
                out, total, self.window, self.window - self.config.reserve_tokens, count
            )
            self._counts["tool_results_cut"] += cut
            notes.tool_results_cut = cut
        if total > self.window:  # a text of any role longer than the window itself
            out, total, cut = cut_oversized_texts(
                out, total, self.window, self.window - self.config.reserve_tokens, count, infos
            )
            self._counts["texts_cut"] += cut
        if total > self.window:
            self._counts["over_window"] += 1  # the protected messages alone do not fit
        self._finish(out, total)
        return out

    def _trim_to_fit(
        self, base: list[dict[str, Any]], state: SessionState, query: str, force: bool
    ) -> TrimResult:
        """Smart trim of ``base`` under :attr:`safe_limit`, and within the window whatever
        ``protectedRecentMessages`` says.

        When the messages the setting protects do not fit the window even after the
        oversized tool results are cut, fewer recent messages are protected (half as many
        each time, down to the last one) and the oldest of them are trimmed and archived
        like any other: so a large setting (or a long recent exchange) never sends more than
        the window. What stays protected whatever the setting (system messages, a compaction
        summary, the last tool call with its results, the last message) can still exceed
        it; then the oversized cut and ``over_window`` are the last word.
        """
        protected = self.config.protected_recent_messages
        while True:
            result = trim_read(
                base,
                state,
                query,
                self.safe_limit,
                cache=self._trim_cache,
                protected_recent=protected,
                count_tokens=self._tokens.count_message,
                force=force,
            )
            if protected <= 1 or self._fits_window(result.kept, result.tokens_after):
                return result
            if protected == self.config.protected_recent_messages:
                self._counts["protected_messages_unprotected"] += 1  # once per call
            protected = max(1, min(protected, len(base)) // 2)
            force = True  # dropping protected messages is about the window, not the query

    def _fits_window(self, messages: list[dict[str, Any]], tokens: int) -> bool:
        """Whether ``messages`` fit the window once their oversized tool results are cut
        (the last step of :meth:`_context_read`)."""
        if tokens <= self.window:
            return True
        limit = self.window - self.config.reserve_tokens
        cut = cut_oversized_results(
            messages, tokens, self.window, limit, self._tokens.count_message
        )
        return cut[1] <= self.window

    def _recall_room(self, kept: list[dict[str, Any]], tokens: int) -> int:
        """Tokens the recall block may take this turn; 0 or less: no block.

        The trim leaves the block its cap within ``window - reserveTokens``. When the kept
        messages take more (protected messages the trim could not remove), the block still
        gets up to a tenth of the window (the seed's share; more only from what is left of
        ``window - reserveTokens``): the agent's own messages took the reply's reserve, and
        the turn's recall is what the eval measures with it. In no case does the block take
        the context past the window, so a cap as large as the window (``recallWindowRatio``
        1.0) gets only what the kept messages leave of ``window - reserveTokens``.
        Oversized tool results count as the cut leaves them, with room for the whole cap.
        """
        limit = self.window - self.config.reserve_tokens
        if tokens > limit:
            count = self._tokens.count_message
            budget = limit - self.recall_cap
            tokens = cut_oversized_results(kept, tokens, self.window, budget, count)[1]
        usual = min(self.recall_cap, self.window // 10)
        return min(self.recall_cap, self.window - tokens, max(limit - tokens, usual))

    def _finish(self, out: Sequence[Any], total: int) -> None:
        """Freeze the call's notes into :attr:`last_call` (a failure there costs the record
        its detail, counted, never the turn)."""
        if self._notes is not None:
            record, error = freeze_safely(self._notes, out, total, self.config, self._tokens)
            if error is not None:
                self._counts["record_failures"] += 1
                logger.warning("memctx could not record the call: %s", error)
            self._last_call, self._notes = record, None

    def _recall(
        self,
        query: str,
        kept: Sequence[dict[str, Any]],
        in_context: Collection[int],
        cap: int | None = None,
    ) -> dict[str, Any] | None:
        """The recall message for this turn, at most ``cap`` tokens (the recall cap when
        ``None``), or ``None`` when nothing relevant fits
        (:func:`memctx.runtime.recall_step.recall_turn`). ``in_context`` holds the raw-store
        keys of the archived segments whose message is being sent: the model sees them
        already."""
        setup = self._recall_setup
        if cap is not None and cap < setup.cap:
            setup = dataclasses.replace(setup, cap=cap)
        block, found = recall_turn(self._archive, setup, query, kept, in_context, self._tokens)
        for part in found.unavailable:  # knowledge_unavailable, raw_store_unavailable
            self._counts[f"{part}_unavailable"] += 1
        if self._notes is not None:
            self._notes.recalled(found.block, found.candidates, found.best_score)
        if found.block is not None:
            self._counts["recalls"] += 1
            self._counts["recall_tokens"] += found.block.tokens
        return block


def only_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """``messages`` without the items that are not messages: anything but a dict (``None``,
    strings, numbers, lists), and a dict whose ``role`` is there but not a string.

    They are dropped from what is sent, not passed on: a provider refuses a request that
    holds one, and kept in the list they made the whole turn fall back to the input
    unchanged, over the window. ``messages`` itself (the same list) when all are messages.
    """
    # The usual case in two C-level passes: every item a dict, every role a string.
    if all(map(isinstance, messages, repeat(dict))):
        roles = map(dict.get, messages, repeat("role"), repeat(""))
        if all(map(isinstance, roles, repeat(str))):
            return messages
    return [m for m in messages if isinstance(m, dict) and isinstance(m.get("role", ""), str)]


def _check_list(messages: object) -> None:
    if not isinstance(messages, list):
        raise TypeError(f"messages must be a list of message dicts, got {type(messages).__name__}")


def _check_messages(messages: object) -> None:
    if not isinstance(messages, list):
        raise TypeError(f"messages must be a list of message dicts, got {type(messages).__name__}")
    if all(map(isinstance, messages, repeat(dict))):  # the usual case, in one C-level pass
        return
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise TypeError(f"messages[{i}] must be a dict, got {type(m).__name__}")
