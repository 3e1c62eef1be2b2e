"""Scripted summarisers and small message builders for the compaction tests.

Every LLM call goes through the real :class:`memctx.llm.LLMClient` (its error wrapping,
retries and usage accounting); only litellm's completion function is replaced by a
scripted callable, as ``tests/llm`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memctx.compaction import SUMMARY_TASK, CompactionBudget, CompactionSetup
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient, task_of

Reply = str | Exception


class ScriptedModel:
    """A litellm-style completion callable that records every request it answers.

    Args:
        answer: Gives the reply (or an exception to raise) for the request's user prompt and
            the request's index; ``None`` answers ``"SUMMARY-<index>"``.
    """

    def __init__(self, answer: Callable[[str, int], Reply] | None = None) -> None:
        self.answer = answer
        self.requests: list[list[dict[str, Any]]] = []
        self.max_tokens: list[int | None] = []

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        messages = kwargs["messages"]
        index = len(self.requests)
        self.requests.append(messages)
        self.max_tokens.append(kwargs.get("max_tokens"))
        prompt = str(messages[-1]["content"])
        reply = self.answer(prompt, index) if self.answer is not None else f"SUMMARY-{index}"
        if isinstance(reply, Exception):
            raise reply
        return {
            "choices": [{"message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
        }

    def client(self) -> LLMClient:
        """An :class:`LLMClient` answered by this script (no retries, no waits)."""
        return LLMClient("scripted-summariser", completion=self, max_retries=0, retry_backoff_s=0)

    @property
    def prompts(self) -> list[str]:
        """The user prompt of each request: the rendered conversation and the task."""
        return [str(r[-1]["content"]) for r in self.requests]

    @property
    def everything_sent(self) -> str:
        """Every message of every request, as one string."""
        return "\n".join(str(m.get("content")) for r in self.requests for m in r)

    def tasks(self) -> list[str | None]:
        return [task_of(r) for r in self.requests]


def failing(**kwargs: Any) -> Any:
    """A completion function whose provider is down."""
    raise RuntimeError("provider unavailable")


def failing_client() -> LLMClient:
    return LLMClient("scripted-summariser", completion=failing, max_retries=0, retry_backoff_s=0)


def conversation_of(prompt: str) -> str:
    """The ``<conversation>`` block of a summary prompt."""
    start = prompt.index("<conversation>\n") + len("<conversation>\n")
    return prompt[start : prompt.index("\n</conversation>")]


def compaction_setup(
    client: LLMClient, config: MemoryContextConfig | None = None, *, window: int, **fields: Any
) -> CompactionSetup:
    """The compaction set-up of ``client`` (default settings unless ``config``); ``fields``:
    ``summarizer_window``, ``prompt``, ``counter``, ``infos``."""
    settings = config if config is not None else MemoryContextConfig()
    return CompactionSetup(client=client, config=settings, window=window, **fields)


def budget(
    summarizer_window: int = 4000,
    *,
    summary_tokens: int = 250,
    window: int | None = None,
    target_tokens: int | None = None,
    keep_recent_tokens: int = 0,
    safety_margin: float = 1.2,
    safeguard: bool = False,
) -> CompactionBudget:
    """A budget with explicit sizes (the summariser tests do not go through a config)."""
    w = window if window is not None else summarizer_window
    return CompactionBudget(
        window=w,
        summarizer_window=summarizer_window,
        target_tokens=target_tokens if target_tokens is not None else w,
        keep_recent_tokens=keep_recent_tokens,
        summary_tokens=summary_tokens,
        safety_margin=safety_margin,
        safeguard=safeguard,
    )


# --- OpenAI-format message builders --------------------------------------------------------


def system(text: str = "You are a careful coding agent.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    """An assistant message with one tool call."""
    return calls((cid, name, args))


def calls(*specs: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant message with parallel tool calls ``(id, name, arguments)``."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for cid, name, args in specs
        ],
    }


def result(cid: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def pi_result(
    cid: str, name: str, text: str, *, is_error: bool = False, **extra: Any
) -> dict[str, Any]:
    """A Pi/OpenClaw ``toolResult`` message (``extra``: e.g. ``details``)."""
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        **extra,
    }


def pi_call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args}],
    }


def words(tag: str, n: int) -> str:
    """``n`` distinct-looking words tagged ``tag`` (about ``n * (len(tag) + 5) / 3`` tokens)."""
    return " ".join(f"{tag}{i:04d}" for i in range(n))


__all__ = [
    "SUMMARY_TASK",
    "ScriptedModel",
    "assistant",
    "budget",
    "call",
    "calls",
    "compaction_setup",
    "conversation_of",
    "failing",
    "failing_client",
    "pi_call",
    "pi_result",
    "result",
    "system",
    "user",
    "words",
]
