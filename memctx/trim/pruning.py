"""Tool-output pruning (seed 003's session pruning): old tool results trimmed in the copy sent.

Compaction rewrites the history for good; pruning only changes what one request carries,
and only tool results: user and assistant messages are never touched, and the caller's list
and dicts never change. It runs before memctx's smart trim, in two levels, as OpenClaw's
``contextPruning`` does:

1. **Soft-trim.** Once the context fills ``softTrimRatio`` (0.3) of the window, every
   prunable tool result longer than ``softTrim.maxChars`` (4,000) keeps its first
   ``headChars`` (1,500) and last ``tailChars`` (1,500) characters around a note of how many
   characters were left out (:func:`memctx.text.cut_middle`), so the model knows to read
   again what it needs. A result cut this way already is left as it is.
2. **Hard-clear.** If the context still fills ``hardClearRatio`` (0.5) of the window and the
   prunable results hold at least ``minPrunableToolChars`` (50,000) characters, they are
   replaced by ``hardClear.placeholder``, oldest first, until it no longer does.

Prunable: tool results after the first user message (what an agent reads before it, its
identity files, stays) and before the ``keepLastAssistants``-th assistant message from the
end (the last 3 turns' results stay whole); with fewer assistant messages than that, nothing
is pruned. A result holding an image is left alone: it is often what the turn is about and
cannot be cut in half. Sizes are in characters; the fill ratio is memctx's token estimate
against the window. Ids, names and error flags stay, so the tool pairing is the input's.

When to prune (``mode``) is the caller's decision: ``cache-ttl`` prunes only once the prompt
cache has gone cold (:func:`pruning_due`), so a warm cached prefix is never invalidated.
:class:`PruningSession` is that decision kept across calls: it prunes when due and, on the
warm calls after, sends the same pruned copies again (the very same dicts), so the prefix the
provider cached stays byte for byte what it was: pruning afresh on a warm call would
invalidate it, and sending the results whole again would too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memctx.config import ContextPruningConfig
from memctx.messages import (
    BlockKind,
    BlockRef,
    InfoCache,
    RoleKind,
    estimate_message_tokens,
    is_turn_start,
    tool_result_text,
    with_tool_result_text,
)
from memctx.text import cut_middle, is_cut_middle

__all__ = [
    "PruneResult",
    "PruningSession",
    "SessionPrune",
    "prune_tool_results",
    "pruning_due",
]


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What :func:`prune_tool_results` did.

    Attributes:
        messages: The context to send (the caller's own dicts where unchanged).
        soft_trimmed: Tool results cut to head and tail.
        cleared: Tool results replaced by the placeholder.
        tokens_before: The context's estimated tokens before.
        tokens_after: And after.
    """

    messages: list[Any]
    soft_trimmed: int = 0
    cleared: int = 0
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def pruned(self) -> bool:
        """Whether any tool result changed."""
        return bool(self.soft_trimmed or self.cleared)


def pruning_due(config: ContextPruningConfig, now: float, last_call_at: float | None) -> bool:
    """Whether to prune before a call at ``now`` (epoch seconds).

    ``off`` never prunes. ``cache-ttl`` prunes when the prompt cache is cold: no call yet, or
    the last one at least ``ttl`` ago (a cached prefix expires after its TTL, and the next
    request writes the whole prompt to the cache again, pruned or not).
    """
    if config.mode == "off":
        return False
    return last_call_at is None or now - last_call_at >= config.ttl_seconds


def prune_tool_results(
    messages: Sequence[Any],
    config: ContextPruningConfig,
    window: int,
    *,
    infos: InfoCache | None = None,
) -> PruneResult:
    """Soft-trim, then hard-clear, the prunable tool results of ``messages`` (module docstring).

    Runs whatever ``config.mode`` says: deciding when to prune is :func:`pruning_due`'s job.

    Args:
        messages: The context about to be sent, in any supported format; not modified.
        config: ``contextPruning``: ratios, protected turns, sizes, placeholder.
        window: The model's context window in tokens.
        infos: Anatomy cache to share with the caller.

    Returns:
        The pruned context and what changed.

    Raises:
        ValueError: ``window`` is not a positive int.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(f"window must be a positive number of tokens, got {window!r}")
    infos = infos if infos is not None else InfoCache()
    out = list(messages)
    sizes = [estimate_message_tokens(m) for m in out]
    total = sum(sizes)
    unchanged = PruneResult(out, tokens_before=total, tokens_after=total)
    span = _prunable_span(out, config.keep_last_assistants, infos)
    if span is None or total < config.soft_trim_ratio * window:
        return unchanged
    targets = [
        (i, ref)
        for i in range(*span)
        for ref in infos.info(out[i]).blocks
        if ref.kind is BlockKind.TOOL_RESULT and not _holds_image(out[i], ref)
    ]
    # Each result's text as it stands; a message with several results is edited one block
    # at a time with the refs read from the original (payload edits never move a block).
    texts = [tool_result_text(out[i], ref) for i, ref in targets]

    def edit(k: int, text: str) -> None:
        nonlocal total
        i, ref = targets[k]
        out[i] = with_tool_result_text(out[i], ref, text)
        texts[k] = text
        size = estimate_message_tokens(out[i])
        total += size - sizes[i]
        sizes[i] = size

    soft = config.soft_trim
    trimmed = 0
    for k, text in enumerate(texts):
        # A result trimmed already would only shrink further on every call, its count lost
        # (pruning is idempotent).
        if len(text) <= soft.max_chars or is_cut_middle(text, soft.head_chars, soft.tail_chars):
            continue
        cut = cut_middle(text, soft.head_chars, soft.tail_chars)
        if len(cut) < len(text):  # pruning saves room: a cut with its note must be shorter
            edit(k, cut)
            trimmed += 1
    cleared = 0
    hard = config.hard_clear
    if (
        hard.enabled
        and total >= config.hard_clear_ratio * window
        and sum(map(len, texts)) >= config.min_prunable_tool_chars
    ):
        for k, text in enumerate(texts):
            if total < config.hard_clear_ratio * window:
                break
            if len(hard.placeholder) < len(text):  # a longer placeholder would add tokens
                edit(k, hard.placeholder)
                cleared += 1
    if not trimmed and not cleared:
        return unchanged
    return PruneResult(out, trimmed, cleared, unchanged.tokens_before, total)


def _prunable_span(
    messages: Sequence[Any], keep_last_assistants: int, infos: InfoCache
) -> tuple[int, int] | None:
    """``(start, end)`` of the messages whose tool results may be pruned, or ``None``."""
    end = len(messages)
    if keep_last_assistants > 0:
        seen = 0
        for i in range(len(messages) - 1, -1, -1):
            if infos.info(messages[i]).kind is RoleKind.ASSISTANT:
                seen += 1
                if seen == keep_last_assistants:
                    end = i
                    break
        else:
            return None  # too few turns to know which are the recent ones
    start = next((i for i, m in enumerate(messages) if is_turn_start(m, infos)), len(messages))
    return (start, end) if start < end else None


def _holds_image(message: Any, ref: BlockRef) -> bool:
    """Whether the tool result ``ref`` carries an image block (Anthropic, Pi)."""
    if not isinstance(message, Mapping):
        return False
    if ref.field == "":
        payload = message.get("content")
    else:
        items = message.get(ref.field)
        block = (
            items[ref.index] if isinstance(items, list) and 0 <= ref.index < len(items) else None
        )
        payload = block.get("content") if isinstance(block, Mapping) else None
    return isinstance(payload, list) and any(
        isinstance(item, Mapping) and item.get("type") == "image" for item in payload
    )


@dataclass(frozen=True, slots=True)
class SessionPrune:
    """One call of a :class:`PruningSession`.

    Attributes:
        messages: The context to send: the caller's dicts, with pruned copies in place of
            the messages whose tool results were pruned when pruning last ran.
        originals: ``id(copy) -> original`` for every copy sent (what the agent really
            holds, and what an archive must keep).
        ran: Pruning ran on this call (it was due); otherwise earlier edits were re-applied.
        soft_trimmed: Tool results soft-trimmed when pruning last ran.
        cleared: Tool results cleared when pruning last ran.
    """

    messages: list[Any]
    originals: dict[int, Any] = field(default_factory=dict)
    ran: bool = False
    soft_trimmed: int = 0
    cleared: int = 0

    @property
    def pruned_now(self) -> bool:
        """Pruning ran on this call and changed tool results (what a caller counts)."""
        return self.ran and bool(self.soft_trimmed or self.cleared)


class PruningSession:
    """Seed 003's pruning across the calls of one session, cache-aware.

    When pruning is due (:func:`pruning_due`: ``cache-ttl`` and the cache cold) it prunes the
    caller's messages afresh; on every other call it re-applies what the last pruning did,
    with the same copy objects, to the messages still present; messages added since are sent
    as they are until pruning is due again. The caller's list and dicts are never changed.

    Args:
        config: ``contextPruning``.
        window: The model's context window in tokens.
        infos: Anatomy cache to share with the caller.
    """

    def __init__(
        self, config: ContextPruningConfig, window: int, *, infos: InfoCache | None = None
    ) -> None:
        self.config = config
        self.window = window
        self._infos = infos if infos is not None else InfoCache()
        # id(original) -> (original, copy): holding the original keeps its id unique.
        self._edits: dict[int, tuple[Any, Any]] = {}
        self._counts = (0, 0)  # (soft-trimmed, cleared) of the pruning in force
        self._last_call_at: float | None = None

    def reset(self) -> None:
        """Forget the edits and the last call (a new session)."""
        self._edits.clear()
        self._counts = (0, 0)
        self._last_call_at = None

    def apply(self, messages: Sequence[Any], now: float) -> SessionPrune:
        """The context to send for a call at ``now`` (epoch seconds); see the class docstring."""
        due = pruning_due(self.config, now, self._last_call_at)
        self._last_call_at = now
        if due:
            return self._prune(messages)
        if not self._edits:
            return SessionPrune(list(messages))
        out = list(messages)
        originals: dict[int, Any] = {}
        kept: dict[int, tuple[Any, Any]] = {}
        for i, message in enumerate(out):
            edit = self._edits.get(id(message))
            if edit is not None and edit[0] is message:
                out[i] = edit[1]
                originals[id(edit[1])] = message
                kept[id(message)] = edit
        self._edits = kept  # messages no longer sent (compacted away) are forgotten
        return SessionPrune(out, originals, False, *self._counts)

    def _prune(self, messages: Sequence[Any]) -> SessionPrune:
        result = prune_tool_results(messages, self.config, self.window, infos=self._infos)
        edits: dict[int, tuple[Any, Any]] = {}
        originals: dict[int, Any] = {}
        out = result.messages
        for i, (before, after) in enumerate(zip(messages, out, strict=True)):
            if after is before:
                continue
            old = self._edits.get(id(before))
            if old is not None and old[0] is before and old[1] == after:
                after = out[i] = old[1]  # the same copy again: its reading stays cached
            edits[id(before)] = (before, after)
            originals[id(after)] = before
        self._edits = edits
        self._counts = (result.soft_trimmed, result.cleared)
        return SessionPrune(out, originals, True, *self._counts)
