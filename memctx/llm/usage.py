"""Accounting for LLM calls: what a reply reports and counters per task (prices are in
:mod:`memctx.llm.prices`).

Kept apart from :mod:`memctx.llm.client` so the client stays control flow; the harness reads these
value objects to report "LLM tokens spent on summaries and extraction" and ``cost_usd``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType
from typing import Any

from memctx.messages import estimate_messages_tokens, estimate_tokens

__all__ = [
    "LLMUsage",
    "TaskUsage",
    "UsageRecorder",
    "read_response",
    "response_field",
]


@dataclass(frozen=True, slots=True)
class TaskUsage:
    """Counters for one task (or all of them).

    ``calls`` counts every request: cache hits, spent calls and failures alike. Tokens and
    cost count only calls that reached the model; what cache hits would have used is kept
    apart in the ``cached_*`` and ``saved_cost_usd`` fields. ``unpriced_calls`` counts spent
    calls to models missing from litellm's price table (their cost is recorded as 0).
    ``largest_prompt_tokens`` is a maximum, not a sum: the largest prompt a spent call sent
    (whether a compaction's input ever exceeded the summariser's window).
    """

    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0
    unpriced_calls: int = 0
    prompt_tokens: int = 0
    largest_prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    saved_cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The counters as a plain JSON-ready dict."""
        return {f.name: getattr(self, f.name) for f in fields(TaskUsage)}


@dataclass(frozen=True, slots=True)
class LLMUsage(TaskUsage):
    """Totals over every task, plus the same counters per task (``by_task``)."""

    by_task: Mapping[str, TaskUsage] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Totals and ``by_task`` as a plain JSON-ready dict."""
        out = TaskUsage.as_dict(self)
        out["by_task"] = {name: u.as_dict() for name, u in sorted(self.by_task.items())}
        return out


_COUNTER_NAMES = frozenset(f.name for f in fields(TaskUsage))
_MAXIMA = frozenset({"largest_prompt_tokens"})  # kept as the largest value seen, not summed


class UsageRecorder:
    """Thread-safe running totals, overall and per task."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total: dict[str, float] = {}
        self._by_task: dict[str, dict[str, float]] = {}

    def add(self, task: str, **amounts: float) -> None:
        """Add ``amounts`` (counter name -> increment) to the totals and to ``task``'s."""
        unknown = set(amounts) - _COUNTER_NAMES
        if unknown:
            raise ValueError(f"unknown usage counters {sorted(unknown)}")
        with self._lock:
            for tally in (self._total, self._by_task.setdefault(task, {})):
                for name, amount in amounts.items():
                    if name in _MAXIMA:
                        tally[name] = max(tally.get(name, 0), amount)
                    else:
                        tally[name] = tally.get(name, 0) + amount

    def snapshot(self) -> LLMUsage:
        """A consistent copy of every counter; later calls do not change it."""
        with self._lock:
            total = _freeze(self._total)
            by_task = {task: _freeze(t) for task, t in self._by_task.items()}
        return LLMUsage(**asdict(total), by_task=MappingProxyType(by_task))


def _freeze(tally: Mapping[str, float]) -> TaskUsage:
    # Integer counters stay ints in reports; only the dollar amounts are floats.
    values: dict[str, Any] = {
        f.name: (float if isinstance(f.default, float) else int)(tally.get(f.name, 0))
        for f in fields(TaskUsage)
    }
    return TaskUsage(**values)


def response_field(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, ``obj.name`` otherwise, ``None`` when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def read_response(raw: Any, sent: Sequence[Mapping[str, Any]]) -> tuple[str, int, int]:
    """Text and token counts from a litellm ``ModelResponse`` (or the same shape as dicts).

    Providers that report no usage get memctx's estimate, so accounting never shows a
    spent call as free of tokens.

    Args:
        raw: What the completion function returned.
        sent: The messages sent, for the estimate when usage is missing.

    Returns:
        ``(text, prompt_tokens, completion_tokens)``.

    Raises:
        ValueError: ``raw`` has no choices.
    """
    choices = response_field(raw, "choices")
    if not choices or not isinstance(choices, Sequence):
        raise ValueError(
            f"a reply without choices (a {type(raw).__name__}); a completion function must "
            "return a litellm ModelResponse or a dict with 'choices'"
        )
    content = response_field(response_field(choices[0], "message"), "content")
    if isinstance(content, list):  # some providers return content blocks
        content = "".join(str(response_field(b, "text") or "") for b in content)
    text = content if isinstance(content, str) else ""
    usage = response_field(raw, "usage")
    prompt, completion = (
        response_field(usage, "prompt_tokens"),
        response_field(usage, "completion_tokens"),
    )
    prompt_tokens = prompt if isinstance(prompt, int) else estimate_messages_tokens(sent)
    completion_tokens = completion if isinstance(completion, int) else estimate_tokens(text)
    return text, prompt_tokens, completion_tokens
