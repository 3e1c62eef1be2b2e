"""What smart trim returns, and its last step: pairing repair over the survivors.

:func:`finish_trim` turns the removals of layers 2 and 3 into a :class:`TrimResult`. Layers
remove whole units, so the repair only ever finds something when the input itself broke a
pairing rule; then the result accounts for what it dropped or edited.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import is_
from typing import Any

import numpy as np

from memctx.messages import repair_tool_pairing

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
        kept: The messages to send, in their original order: the caller's own dicts, except
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
    repaired = repair_tool_pairing(kept, cache=ReadInfos(kept, [facts[i] for i in kept_at]))
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
    lost, edited = _align(kept, repaired)
    dropped = [kept_at[k] for k in lost]  # positions in ``messages`` dropped whole
    gone[dropped] = True
    recalled = sum(1 for i in dropped if facts[i].recalled)
    trimmed_at = [i for i in np.flatnonzero(gone).tolist() if not facts[i].recalled]
    # Copies made by the repair are new objects, so their ids differ from every original's.
    original_at = {id(messages[i]): i for i in kept_at}
    repaired_at = [original_at.get(id(m), -1) for m in repaired]
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


_BLOCK_FIELDS = ("content", "tool_calls", "parts")


def _align(before: Sequence[object], after: Sequence[object]) -> tuple[list[int], int]:
    """Which messages of ``before`` the repair dropped, and how many it edited.

    The repair keeps order and returns each survivor either as the same object or as a
    shallow copy that lost some blocks (its other values are the very same objects).
    """
    originals = {id(m) for m in before}
    lost: list[int] = []
    edited = k = 0
    for i, message in enumerate(before):
        if k < len(after):
            candidate = after[k]
            if candidate is message:
                k += 1
                continue
            if id(candidate) not in originals and _is_edit_of(candidate, message):
                k += 1
                edited += 1
                continue
        lost.append(i)
    return lost, edited


def _is_edit_of(copy: object, original: object) -> bool:
    """Whether ``copy`` is ``original`` with some blocks removed by the pairing repair."""
    if not (isinstance(copy, Mapping) and isinstance(original, Mapping)):
        return False
    if not copy.keys() <= original.keys():
        return False
    for key, value in copy.items():
        old = original[key]
        if value is old:
            continue
        if key not in _BLOCK_FIELDS or not isinstance(value, list):
            return False
        if isinstance(old, list):
            rest = iter(old)  # a subsequence, by identity: blocks are never copied
            if not all(any(b is s for s in rest) for b in value):
                return False
        elif not (isinstance(old, Mapping) and not value):  # a lone result block, removed
            return False
    return True
