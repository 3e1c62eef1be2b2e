"""Token counting: the seed's conservative estimate and an exact, cached per-model counter.

``estimate_tokens(text) = ceil(len(text) / 3)`` is the seed's rule: English runs about four
characters a token and Chinese about 1.5, so three over-counts English (trimming a little
early rather than overflowing) and stays safe on mixed CJK/English code. The README gives its
measured error against provider-reported input tokens on real Claude Code sessions.

The exact counter tokenizes with the model's own tokenizer through ``litellm.token_counter``.
Tokenizing is far slower than estimating, so counts are cached per message: a turn that adds
two messages to a 2,000-message context tokenizes two messages.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .anatomy import BlockKind, RoleKind, iter_blocks, message_fingerprint, role_kind

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "TokenCounter",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_tokens",
]

# Per-message framing (role markers, block separators) that no text accounts for. Providers
# document 3-4 tokens for OpenAI chat; Anthropic is similar. Small, but it adds up over
# thousands of short tool messages.
MESSAGE_OVERHEAD_TOKENS = 4
# Images are billed by pixel size, which a transcript rarely records. Anthropic bills
# (w*h)/750, about 1,600 tokens for a 1092x1092 image: count that, a safe upper middle.
IMAGE_TOKENS = 1600
# Tool calls carry a name and a JSON wrapper that the argument text does not include.
TOOL_CALL_OVERHEAD_TOKENS = 8


def estimate_tokens(text: str) -> int:
    """Conservative token estimate: ``ceil(len(text) / 3)``.

    Args:
        text: Any string; ``None`` or non-strings count as empty.

    Returns:
        The estimated token count (0 for empty text).
    """
    if not text or not isinstance(text, str):
        return 0
    return math.ceil(len(text) / 3)


def _message_cost(message: object, count_text: Callable[[str], int]) -> int:
    """Tokens for every block of ``message``: text, thinking, tool inputs and results."""
    if not isinstance(message, Mapping):
        return 0
    total = MESSAGE_OVERHEAD_TOKENS
    if role_kind(message) is RoleKind.UNKNOWN:
        # Not a shape memctx reads (an unknown item type, no role): it is still sent and
        # billed, so its JSON counts rather than a silent zero.
        return total + count_text(_json_text(message))
    for block in iter_blocks(message):
        if block.kind is BlockKind.IMAGE:
            total += IMAGE_TOKENS
        elif block.kind is BlockKind.TOOL_CALL:
            total += TOOL_CALL_OVERHEAD_TOKENS + count_text(block.tool_name or "")
            total += count_text(block.text)
        else:
            total += count_text(block.text)
    return total


def _json_text(message: Mapping[str, Any]) -> str:
    try:
        return json.dumps(message, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        # Nested past the interpreter's recursion limit, or circular: ``repr`` would recurse
        # the same way, so the leaves are gathered without recursion.
        return _leaves_text(message)


# Enough for any message a window can hold; a bigger structure costs the same bounded walk.
_LEAVES_MAX_CHARS = 8_000_000


def _leaves_text(value: object) -> str:
    """The keys and scalar leaves of a nested structure, walked without recursion, each
    container once (a circular one ends), up to :data:`_LEAVES_MAX_CHARS` characters."""
    parts: list[str] = []
    size = 0
    seen: set[int] = set()
    stack: list[object] = [value]
    while stack and size < _LEAVES_MAX_CHARS:
        item = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Mapping):
                keys = [str(k) if isinstance(k, str | int | float) else "?" for k in item]
                parts.extend(keys)
                size += sum(map(len, keys))
                stack.extend(item.values())
            else:
                stack.extend(item)
            continue
        leaf = item if isinstance(item, str) else type(item).__name__
        if isinstance(item, int | float | bool) or item is None:
            leaf = str(item)
        parts.append(leaf)
        size += len(leaf)
    return " ".join(parts)[:_LEAVES_MAX_CHARS]


def estimate_message_tokens(message: object) -> int:
    """Estimated tokens of one message in any supported format, every block kind included."""
    return _message_cost(message, estimate_tokens)


def estimate_messages_tokens(messages: Iterable[object]) -> int:
    """Estimated tokens of a list of messages."""
    return sum(estimate_message_tokens(m) for m in messages)


@dataclass(slots=True)
class _CacheStats:
    hits: int = 0
    misses: int = 0


class TokenCounter:
    """Counts message tokens with a cache, either estimated or exact for one model.

    Args:
        model: ``None`` or ``"estimate"`` for :func:`estimate_tokens`; otherwise a litellm
            model name (e.g. ``"claude-sonnet-4-5"``, ``"gpt-4o"``) whose tokenizer
            ``litellm.token_counter`` uses. litellm's bundled tokenizers work offline.
        max_entries: Cache bound; least recently used entries are dropped beyond it.

    The cache has two levels. The first is keyed by the identity of the message dict and
    checked against a cheap fingerprint, so an agent loop that passes the same dicts every
    turn pays one dictionary lookup per old message. The second is keyed by a sha256 of the
    message's canonical JSON, so equal messages in new dicts (a reloaded transcript, a
    copied list) are not tokenized again.
    """

    def __init__(self, model: str | None = None, *, max_entries: int = 100_000) -> None:
        self.model = None if model in (None, "", "estimate") else model
        self._max = max_entries
        self._by_identity: dict[int, tuple[object, tuple[int, ...], int]] = {}
        self._by_digest: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = _CacheStats()
        self._count_text: Callable[[str], int] = (
            estimate_tokens if self.model is None else _litellm_text_counter(self.model)
        )

    @property
    def exact(self) -> bool:
        return self.model is not None

    def count_text(self, text: str) -> int:
        """Tokens of a bare string under this counter's rule."""
        return self._count_text(text) if text else 0

    def count_message(self, message: object) -> int:
        """Tokens of one message, cached."""
        if not isinstance(message, Mapping):
            return 0
        if self.model is None:
            # Estimating is as cheap as hashing: caching would only cost memory.
            return _message_cost(message, estimate_tokens)
        fingerprint = message_fingerprint(message)
        key = id(message)
        with self._lock:
            entry = self._by_identity.get(key)
            if entry is not None and entry[0] is message and entry[1] == fingerprint:
                self.stats.hits += 1
                return entry[2]
        digest = _digest(message)
        with self._lock:
            tokens = self._by_digest.get(digest)
            if tokens is not None:
                self._by_digest.move_to_end(digest)
                self.stats.hits += 1
        if tokens is None:
            tokens = _message_cost(message, self._count_text)
            with self._lock:
                self.stats.misses += 1
                self._by_digest[digest] = tokens
                if len(self._by_digest) > self._max:
                    self._by_digest.popitem(last=False)
        with self._lock:
            if len(self._by_identity) >= self._max:
                self._by_identity.clear()  # identities go stale anyway; the digest level stays
            # Holding the dict keeps its id() from being reused by another object.
            self._by_identity[key] = (message, fingerprint, tokens)
        return tokens

    def count_messages(self, messages: Iterable[object]) -> int:
        """Tokens of a list of messages, each cached."""
        return sum(self.count_message(m) for m in messages)


def _digest(message: Mapping[str, Any]) -> str:
    try:
        raw = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        raw = _leaves_text(message)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def _litellm_text_counter(model: str) -> Callable[[str], int]:
    """A text counter using the model's tokenizer via litellm (imported lazily: ~2 s)."""
    # litellm fetches its price table from the network unless told to use the bundled one.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    def count(text: str) -> int:
        if not text:
            return 0
        return int(litellm.token_counter(model=model, text=text))

    count("warm up")  # fail at construction, not mid-turn, if the model has no tokenizer
    return count
