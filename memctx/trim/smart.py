"""Smart trim (seed 000): drop the least relevant old messages before the context overflows.

Runs only when the context is over ``safe_limit`` tokens *and* the query has at least three
characters: a one-word turn ("y", "ok") gives recall nothing to search with, and a trim with
no recall to compensate would only destroy context (``force=True`` overrides the query rule
for a context that would otherwise overflow). Three layers, then a pairing check:

1. **Protect** system messages (any position), a compaction summary among the first three
   messages after the leading system messages, the last ``protected_recent`` user/assistant
   messages, the last tool call with its results (the whole span), recalled blocks, and
   entries that are not message dicts.
2. **BM25**: score every unprotected message against the query (Lucene IDF over the
   unprotected set, the repository's tokenizer) and remove the lowest-scoring first, older
   first on ties, until the total fits; only messages scoring below ``relevant_share`` of
   the best score are removed here.
3. **Oldest**: if still over, remove the remaining unprotected messages oldest first.

Removal works on *units* (:func:`memctx.messages.tool_units`): a message with tool calls
and every message answering them go together, costing their summed tokens, so no layer ever
leaves an orphaned call or result.
A unit with any protected member is protected whole. Finally
:func:`memctx.messages.pairing.repair_tool_pairing` runs defensively (it only finds something when
the input itself broke a pairing rule); what it removes is counted.

Why layer 2 stops at ``relevant_share``: if it removed in score order until the total fit,
layer 3 could never run and an old but relevant message would outlive every newer, equally
relevant one. Instead the clearly weaker matches go first, by score, and among the relevant
ones recency decides. ``relevant_share=0`` gives plain oldest-first truncation (with the
protections); ``relevant_share=math.inf`` gives pure score order.

Messages are the caller's own dicts and are returned as they are; only pairing repair ever
makes (shallow) copies, of the messages it has to edit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memctx.messages import RoleKind, estimate_message_tokens, is_compaction_summary

from .cache import BoolArray, FloatArray, IntArray, SessionState, TrimCache
from .result import TrimCounts, TrimResult, finish_trim

__all__ = [
    "DEFAULT_PROTECTED_RECENT",
    "MIN_QUERY_CHARS",
    "RELEVANT_SHARE",
    "TrimCache",
    "TrimCounts",
    "TrimResult",
    "protected_mask",
    "smart_trim",
    "trim_read",
]

MIN_QUERY_CHARS = 3
DEFAULT_PROTECTED_RECENT = 6
RELEVANT_SHARE = 0.5
# How far after the leading system messages a compaction summary is looked for. The seed
# says index 1-2 with the system prompt at 0; Anthropic and Pi keep the system prompt out of
# the list, which puts the summary at 0.
_SUMMARY_WINDOW = 3


def _protect(messages: Sequence[object], state: SessionState, protected_recent: int) -> BoolArray:
    """Layer 1: per message, whether no layer may remove it (whole units)."""
    facts = state.facts
    n = len(facts)
    extra: list[int] = []  # protected by position; ``fixed`` covers the rest
    leading = 0
    while leading < n and facts[leading].info.kind is RoleKind.SYSTEM:
        leading += 1
    for i in range(leading, min(n, leading + _SUMMARY_WINDOW)):
        if is_compaction_summary(messages[i], facts[i].info):
            extra.append(i)
    seen = 0
    i = n - 1
    while i >= 0 and seen < protected_recent:
        if facts[i].conversational:
            extra.append(i)
            seen += 1
        i -= 1
    # The last tool call and its results, with everything between them.
    for i in range(n - 1, -1, -1):
        if facts[i].assistant_calls:
            extra.extend(range(i, state.units.members[state.units.root[i]][-1] + 1))
            break
    root = state.unit_roots()
    protected_root = np.zeros(n, dtype=np.bool_)
    protected_root[root[state.fixed]] = True
    protected_root[root[np.asarray(extra, dtype=np.int64)]] = True
    keep: BoolArray = protected_root[root]
    return keep


def protected_mask(
    messages: Sequence[object],
    *,
    protected_recent: int = DEFAULT_PROTECTED_RECENT,
    count_tokens: Callable[[object], int] | None = None,
    cache: TrimCache | None = None,
) -> list[bool]:
    """Layer 1 on its own: per message, whether :func:`smart_trim` may never remove it.

    Arguments are those of :func:`smart_trim`. Includes whole units: the calls and results
    paired with a protected message are protected too.
    """
    cache = cache if cache is not None else TrimCache()
    counter = count_tokens if count_tokens is not None else estimate_message_tokens
    with cache.lock:
        state = cache.read(messages, counter)
        mask: list[bool] = _protect(messages, state, protected_recent).tolist()
        return mask


def smart_trim(
    messages: Sequence[Any],
    query: str,
    safe_limit: int,
    *,
    protected_recent: int = DEFAULT_PROTECTED_RECENT,
    count_tokens: Callable[[object], int] | None = None,
    relevant_share: float = RELEVANT_SHARE,
    cache: TrimCache | None = None,
    force: bool = False,
) -> TrimResult:
    """Trim ``messages`` to ``safe_limit`` tokens, keeping what the query needs.

    Args:
        messages: The conversation in any supported format; never modified.
        query: What the next turn is about (the last user messages). Shorter than three
            characters once stripped: nothing is trimmed.
        safe_limit: Token budget for the messages (``context_window - reserve - hard_cap``).
        protected_recent: How many of the last user/assistant messages are never trimmed.
        count_tokens: Tokens of one message; :func:`memctx.messages.tokens.estimate_message_tokens`
            by default, or e.g. ``TokenCounter("gpt-4o").count_message``.
        relevant_share: Layer 2 removes only messages scoring below this share of the best
            score; the rest are left to the oldest-first layer (see the module docs).
        cache: A :class:`TrimCache` reused across turns, so only new messages are read.
        force: Trim even when the query is too short. For a context that would otherwise
            overflow the window, where losing old messages beats failing the call; without
            query terms, layer 3 (oldest first) does the work.

    Returns:
        A :class:`TrimResult`. Idempotent: trimming its ``kept`` again with the same query
        and limit removes nothing when ``tokens_after <= safe_limit`` (and otherwise too,
        since everything unprotected is already gone).
    """
    cache = cache if cache is not None else TrimCache()
    counter = count_tokens if count_tokens is not None else estimate_message_tokens
    with cache.lock:
        messages = list(messages)
        state = cache.read(messages, counter)
        return trim_read(
            messages,
            state,
            query,
            safe_limit,
            cache=cache,
            protected_recent=protected_recent,
            count_tokens=counter,
            relevant_share=relevant_share,
            force=force,
        )


def trim_read(
    messages: list[Any],
    state: SessionState,
    query: str,
    safe_limit: int,
    *,
    cache: TrimCache,
    protected_recent: int = DEFAULT_PROTECTED_RECENT,
    count_tokens: Callable[[object], int] = estimate_message_tokens,
    relevant_share: float = RELEVANT_SHARE,
    force: bool = False,
) -> TrimResult:
    """:func:`smart_trim` of messages the caller has just read with ``cache``.

    For a caller that needs the reading itself (the runtime: token total, recalled blocks,
    anatomy), so that one turn reads its input once. The caller holds ``cache.lock`` and
    ``state`` is what ``cache.read(messages, count_tokens)`` returned under it.
    """
    total = int(state.tokens.sum())
    if total <= safe_limit or (len(query.strip()) < MIN_QUERY_CHARS and not force):
        return TrimResult(messages, [], False, total, total)
    keep = _protect(messages, state, protected_recent)
    candidates = np.flatnonzero(~keep)
    if not len(candidates):
        return TrimResult(messages, [], False, total, total)
    scores = cache.relevance(state, candidates, query)
    excess = total - safe_limit
    removed, bm25, oldest = _choose(state, candidates, scores, excess, relevant_share)
    return finish_trim(messages, state, removed, bm25, oldest, total, count_tokens)


def _choose(
    state: SessionState,
    candidates: IntArray,
    scores: FloatArray,
    excess: int,
    relevant_share: float,
) -> tuple[IntArray, int, int]:
    """Layers 2 and 3: which candidate units go, as message positions, and per-layer counts.

    ``scores`` are per candidate message, normalised so the best is 1.0 (all zero when
    nothing matches, and then nothing is "weak": time order decides).
    """
    root = state.unit_roots()
    roots, unit = np.unique(root[candidates], return_inverse=True)
    unit_score = np.zeros(len(roots), dtype=np.float64)
    np.maximum.at(unit_score, unit, scores)  # a unit is as relevant as its best message
    unit_tokens = np.zeros(len(roots), dtype=np.int64)
    np.add.at(unit_tokens, unit, state.tokens[candidates])
    unit_size = np.bincount(unit, minlength=len(roots))
    threshold = relevant_share if unit_score.max() > 0 else 0.0
    weak = np.flatnonzero(unit_score < threshold)
    # Layer 2: lowest score first, then older first (roots are first indices).
    weak = weak[np.lexsort((roots[weak], unit_score[weak]))]
    layer2 = _prefix_covering(weak, unit_tokens, excess)
    gone = np.zeros(len(roots), dtype=np.bool_)
    gone[layer2] = True
    excess -= int(unit_tokens[layer2].sum())
    layer3 = np.zeros(0, dtype=np.int64)
    if excess > 0:  # Layer 3: what is left, oldest first.
        layer3 = _prefix_covering(np.flatnonzero(~gone), unit_tokens, excess)
        gone[layer3] = True
    removed = candidates[gone[unit]]
    return removed, int(unit_size[layer2].sum()), int(unit_size[layer3].sum())


def _prefix_covering(order: IntArray, unit_tokens: IntArray, excess: int) -> IntArray:
    """The shortest prefix of ``order`` whose units' tokens reach ``excess`` (or all)."""
    if excess <= 0 or not len(order):
        return order[:0]
    reached = np.cumsum(unit_tokens[order])
    return order[: int(np.searchsorted(reached, excess, side="left")) + 1]
