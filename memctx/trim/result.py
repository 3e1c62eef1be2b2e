"""What smart trim returns, and its last step: pairing repair over the survivors.

:func:`finish_trim` turns the removals of layers 2 and 3 into a :class:`TrimResult`. Layers
remove whole units, so the repair only ever finds something when the input itself broke a
pairing rule; then the result accounts for what it dropped or edited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from operator import is_
from typing import Any

import numpy as np

from memctx.messages import repair_with_sources

from .state import IntArray, ReadInfos, SessionState

__all__ = ["TrimCounts", "TrimResult", "finish_trim"]


@dataclass(frozen=True, slots=True)
class TrimCounts:
    """Messages removed, by the step that removed them.

    Attributes:
        bm25: Removed by layer 2 (low relevance to the query).
        oldest: Removed by layer 3 (oldest first).
        pairing: Dropped whole by the final pairing repair.
        pairing_edited: Kept, but as a copy without some blocks, by the pairing repair.
    """

    bm25: int = 0
    oldest: int = 0
    pairing: int = 0
    pairing_edited: int = 0

    @property
    def removed(self) -> int:
        """Messages removed in all (edited ones are kept, so not counted)."""
        return self.bm25 + self.oldest + self.pairing


@dataclass(frozen=True, slots=True)
class TrimResult:
    """What :func:`smart_trim` did.

    Attributes:
        kept: The messages to send, in their original order (unless the pairing repair
            moved a tool result to the front of its turn): the caller's own dicts, except
            copies the pairing repair had to edit. Without a trim, the input's contents.
        trimmed: The removed messages that may be archived (never a recalled block), in
            original order.
        did_trim: Whether anything was removed or edited.
        tokens_before: Tokens of the input.
        tokens_after: Tokens of ``kept``; above the limit only if the protected messages
            alone are (the runtime must then compact).
        layer_counts: Removals per layer; ``layer_counts.removed`` equals
            ``len(trimmed) + dropped_recalled``.
        dropped_recalled: Recalled blocks removed (never archived, so not in ``trimmed``).
        trimmed_at: Per message of ``trimmed``, its position in the input.
        kept_at: Per message of ``kept``, its position in the input; -1 for a copy the
            pairing repair edited. Empty when nothing was trimmed (``kept`` is the input).
    """

    kept: list[Any]
    trimmed: list[Any]
    did_trim: bool
    tokens_before: int
    tokens_after: int
    layer_counts: TrimCounts = field(default_factory=TrimCounts)
    dropped_recalled: int = 0
    trimmed_at: list[int] = field(default_factory=list)
    kept_at: list[int] = field(default_factory=list)


def finish_trim(
    messages: list[Any],
    state: SessionState,
    removed: IntArray,
    bm25: int,
    oldest: int,
    tokens_before: int,
    counter: Callable[[object], int],
) -> TrimResult:
    """Defensive pairing repair over the survivors, then the accounting."""
    facts = state.facts
    gone = np.zeros(len(messages), dtype=np.bool_)
    gone[removed] = True
    kept_at: list[int] = np.flatnonzero(~gone).tolist()
    kept = [messages[i] for i in kept_at]
    infos = ReadInfos(kept, [facts[i] for i in kept_at])
    repaired, sources = repair_with_sources(kept, cache=infos)
    counts = TrimCounts(bm25, oldest)
    if len(repaired) == len(kept) and all(map(is_, repaired, kept)):
        # The usual case: the repair found nothing. Layers 2 and 3 never remove a
        # protected message, so no recalled block is among the removed.
        at: list[int] = removed.tolist()
        return TrimResult(
            kept=repaired,
            trimmed=[messages[i] for i in at],
            did_trim=bool(counts.removed),
            tokens_before=tokens_before,
            tokens_after=tokens_before - int(state.tokens[removed].sum()),
            layer_counts=counts,
            trimmed_at=at,
            kept_at=kept_at,
        )
    # The repair may move a message within its turn, rename a reused id or move a late
    # result into another message: ``sources`` says which input each output stems from.
    present = set(sources)
    dropped = [kept_at[k] for k in range(len(kept)) if k not in present]  # dropped whole
    edited = sum(1 for m, k in zip(repaired, sources, strict=True) if m is not kept[k])
    gone[dropped] = True
    recalled = sum(1 for i in dropped if facts[i].recalled)
    trimmed_at = [i for i in np.flatnonzero(gone).tolist() if not facts[i].recalled]
    repaired_at = [
        kept_at[k] if m is kept[k] else -1 for m, k in zip(repaired, sources, strict=True)
    ]
    pairs = zip(repaired, repaired_at, strict=True)
    tokens_after = sum(facts[i].tokens if i >= 0 else counter(m) for m, i in pairs)
    counts = TrimCounts(bm25, oldest, len(dropped), edited)
    return TrimResult(
        kept=repaired,
        trimmed=[messages[i] for i in trimmed_at],
        did_trim=True,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        layer_counts=counts,
        dropped_recalled=recalled,
        trimmed_at=trimmed_at,
        kept_at=repaired_at,
    )
