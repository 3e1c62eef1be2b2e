"""The benchmark's baseline: the seed's context hook, per turn, with nothing kept between turns.

What it does each call, like the seed's TypeScript: count every message's tokens, work out
the protected set, tokenize every candidate message and build a fresh ``rank_bm25`` index
to score them against the query, drop the lowest scores (then the oldest) until the context
fits, repair pairing from scratch, then search the store and build the recall block exactly
as memctx does (the store's own indexes are incremental in the seed too). Trimmed messages
are not archived here: the seed does that asynchronously, outside the hook's time.
"""

from __future__ import annotations

from typing import Any

from rank_bm25 import BM25Okapi

from memctx.messages import (
    InfoCache,
    estimate_message_tokens,
    is_recalled_block,
    repair_tool_pairing,
    token_text,
)
from memctx.recall import build_query, insert_recall
from memctx.runtime import MemoryContext
from memctx.text import tokenize
from memctx.trim import TrimCache, protected_mask

__all__ = ["NaiveSeedHook"]


class NaiveSeedHook:
    """``hook(messages)`` the seed's way; recall through ``engine`` (same store, same block)."""

    def __init__(self, engine: MemoryContext) -> None:
        self._engine = engine

    def __call__(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        engine = self._engine
        infos = InfoCache()  # fresh: nothing survives from the previous turn
        base = [m for m in messages if not is_recalled_block(m)]
        query = build_query(base, infos)
        costs = [estimate_message_tokens(m) for m in base]
        total = sum(costs)
        kept = base
        if total > engine.safe_limit and len(query.strip()) >= 3:
            keep = protected_mask(
                base, protected_recent=engine.config.protected_recent_messages, cache=TrimCache()
            )
            candidates = [i for i, k in enumerate(keep) if not k]
            corpus = [tokenize(token_text(base[i])) or ["∅"] for i in candidates]
            scores = BM25Okapi(corpus).get_scores(tokenize(query)) if corpus else []
            order = sorted(range(len(candidates)), key=lambda j: (scores[j], candidates[j]))
            removed: set[int] = set()
            for j in order:
                if total <= engine.safe_limit:
                    break
                removed.add(candidates[j])
                total -= costs[candidates[j]]
            kept = repair_tool_pairing([m for i, m in enumerate(base) if i not in removed])
        block = engine._recall(query, kept, set()) if len(query.strip()) >= 3 else None
        return insert_recall(kept, block, infos)
