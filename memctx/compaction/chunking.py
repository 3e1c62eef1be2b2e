"""Cutting a history into pieces for summaries, never between a tool call and its result.

Seed 001 splits a history two ways: into ``parts`` pieces of about equal tokens (the stages
of a staged summary, and what history pruning drops), and into chunks of at most
``max_tokens`` (the rolling summary's steps; one oversized message is a chunk alone). Both
cut only between *spans*: an assistant message with tool calls together with every message
that answers them and whatever lies between (:func:`memctx.messages.tool_spans`), so that a
summariser always sees a call with its result and a kept half never holds a result whose
call went to the other half.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memctx.messages import (
    InfoCache,
    estimate_message_tokens,
    is_turn_start,
    repair_with_sources,
    tool_spans,
)

__all__ = [
    "DEFAULT_PARTS",
    "PrunedHistory",
    "chunk_messages_by_max_tokens",
    "is_turn_start",
    "prune_history_for_context_share",
    "split_messages_by_token_share",
    "tail_start",
]

DEFAULT_PARTS = 2
Count = Callable[[Any], int]


def _unit_sizes(
    messages: Sequence[Any], count: Count, infos: InfoCache | None
) -> list[tuple[range, int]]:
    return [(u, sum(count(messages[i]) for i in u)) for u in tool_spans(messages, infos)]


def split_messages_by_token_share(
    messages: Sequence[Any],
    parts: int = DEFAULT_PARTS,
    *,
    count: Count = estimate_message_tokens,
    infos: InfoCache | None = None,
) -> list[list[Any]]:
    """Split ``messages`` into at most ``parts`` pieces of about equal tokens, oldest first.

    Seed 001's ``splitMessagesByTokenShare``: a piece closes when adding the next unit
    would pass ``total / parts`` (the last piece takes the rest). ``parts`` is clamped to
    ``[1, number of units]``.

    Args:
        messages: The messages to split (not modified; the pieces hold the same dicts).
        parts: How many pieces to aim for.
        count: Token count of one message.
        infos: Anatomy cache to reuse.

    Returns:
        The non-empty pieces in order; ``[]`` for no messages.
    """
    sized = _unit_sizes(messages, count, infos)
    if not sized:
        return []
    parts = min(max(1, int(parts)), len(sized))
    target = sum(size for _, size in sized) / parts
    chunks: list[list[Any]] = []
    current: list[Any] = []
    current_tokens = 0
    for unit, size in sized:
        if len(chunks) < parts - 1 and current and current_tokens + size > target:
            chunks.append(current)
            current, current_tokens = [], 0
        current.extend(messages[i] for i in unit)
        current_tokens += size
    if current:
        chunks.append(current)
    return chunks


def chunk_messages_by_max_tokens(
    messages: Sequence[Any],
    max_tokens: int,
    *,
    count: Count = estimate_message_tokens,
    infos: InfoCache | None = None,
) -> list[list[Any]]:
    """Cut ``messages`` into chunks of at most ``max_tokens`` tokens, oldest first.

    Seed 001's ``chunkMessagesByMaxTokens``. A unit larger than ``max_tokens`` (one huge
    message, or a call with a huge result) is a chunk alone: it is never cut inside.

    Args:
        messages: The messages to cut (not modified; the chunks hold the same dicts).
        max_tokens: Token limit of a chunk (>= 1).
        count: Token count of one message.
        infos: Anatomy cache to reuse.

    Returns:
        The chunks in order; ``[]`` for no messages.

    Raises:
        ValueError: ``max_tokens`` is below 1.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(
            f"max_tokens must be an int >= 1, got {max_tokens!r}: pass the largest chunk the "
            "summariser may receive, e.g. int(window * compute_adaptive_chunk_ratio(...))"
        )
    chunks: list[list[Any]] = []
    current: list[Any] = []
    current_tokens = 0
    for unit, size in _unit_sizes(messages, count, infos):
        if current and current_tokens + size > max_tokens:
            chunks.append(current)
            current, current_tokens = [], 0
        current.extend(messages[i] for i in unit)
        current_tokens += size
        if size > max_tokens:  # an oversized unit stays alone
            chunks.append(current)
            current, current_tokens = [], 0
    if current:
        chunks.append(current)
    return chunks


@dataclass(frozen=True, slots=True)
class PrunedHistory:
    """What :func:`prune_history_for_context_share` kept and dropped.

    Attributes:
        kept: The newest messages, pairs repaired (edited messages are copies).
        dropped: The oldest messages, in order, and any result repair had to remove.
        dropped_chunks: How many pieces were dropped.
        dropped_tokens: Tokens of ``dropped``.
        kept_tokens: Tokens of ``kept``.
        budget_tokens: ``floor(max_context_tokens * max_history_share)``.
    """

    kept: list[Any]
    dropped: list[Any]
    dropped_chunks: int
    dropped_tokens: int
    kept_tokens: int
    budget_tokens: int


def prune_history_for_context_share(
    messages: Sequence[Any],
    *,
    max_context_tokens: int,
    max_history_share: float = 0.5,
    parts: int = DEFAULT_PARTS,
    count: Count = estimate_message_tokens,
    infos: InfoCache | None = None,
) -> PrunedHistory:
    """Drop the oldest pieces of ``messages`` until they fit a share of the context.

    Seed 001's ``pruneHistoryForContextShare``: while the messages exceed
    ``max_context_tokens * max_history_share``, split them by token share into ``parts``
    and drop the first (oldest) piece, then repair tool pairing on the rest. Stops when one
    piece is left, even if it is still over the budget. Callers summarise ``dropped`` so
    that its content is not lost (the safeguard feeds that summary in as the previous one).

    Args:
        messages: The history to prune (not modified).
        max_context_tokens: The context window in tokens.
        max_history_share: Largest share of the window the history may take.
        parts: Pieces per split (2 halves the history each round).
        count: Token count of one message.
        infos: Anatomy cache to reuse.

    Returns:
        The kept and dropped messages and their sizes.
    """
    infos = infos if infos is not None else InfoCache()
    budget = max(1, int(max_context_tokens * max_history_share))
    kept = list(messages)
    dropped: list[Any] = []
    chunks_dropped = 0
    while kept and sum(count(m) for m in kept) > budget:
        pieces = split_messages_by_token_share(kept, parts, count=count, infos=infos)
        if len(pieces) <= 1:
            break
        oldest, rest = pieces[0], [m for piece in pieces[1:] for m in piece]
        repaired, sources = repair_with_sources(rest, cache=infos)
        survivors = set(sources)
        # A result whose call was in the dropped piece is removed by repair: count it as
        # dropped, so the caller can still summarise it.
        dropped.extend(oldest)
        dropped.extend(m for i, m in enumerate(rest) if i not in survivors)
        kept = repaired
        chunks_dropped += 1
    return PrunedHistory(
        kept=kept,
        dropped=dropped,
        dropped_chunks=chunks_dropped,
        dropped_tokens=sum(count(m) for m in dropped),
        kept_tokens=sum(count(m) for m in kept),
        budget_tokens=budget,
    )


def tail_start(
    transcript: Sequence[dict[str, Any]],
    head: int,
    budget: int,
    count: Callable[[dict[str, Any]], int],
    infos: InfoCache,
) -> int:
    """Index of the first message of the verbatim tail kept by a compaction.

    The newest messages within ``budget`` tokens, extended backwards (never forwards, the
    latest request must stay) to the nearest message that is not a tool result, so that no
    kept result loses its call. Returns ``len(transcript)`` when nothing fits and no earlier
    boundary exists after ``head``.
    """
    used = 0
    start = len(transcript)
    while start > head + 1:  # at least one message is left to compact
        size = count(transcript[start - 1])
        if used + size > budget:
            break
        used += size
        start -= 1
    while start < len(transcript) and start > head + 1:
        if not infos.info(transcript[start]).has_tool_results:
            break
        start -= 1
    return start
