"""``memctx/offline``: memctx's own deterministic model, served through litellm.

Registered as a litellm custom provider (``litellm.custom_provider_map``, the handler in
:mod:`memctx.offline.provider`, installed by :func:`register_offline_model` on first use),
so that ``litellm.completion(model="memctx/offline", messages=...)`` works with no network
and no key, and every caller goes through the same :class:`memctx.llm.client.LLMClient` path
whether the configured model is real or not. The reply depends only on the messages and
``max_tokens``: the same request always gets the same text. This module does not import
litellm, so importing memctx stays fast.

The model reads the task from the :func:`memctx.llm.client.task_marker` line in the prompt:

- ``extract-knowledge``: ``memctx.offline.extract.offline_extract_response(messages)``, a
  JSON array of knowledge records (rule-based extraction, imported on first use);
- ``summarize``: :func:`memctx.offline.snapshot.state_snapshot`, the session's state read
  from the text inside ``<conversation>...</conversation>`` in the last user message (the
  rendered history a compaction sends), within ``max_tokens``; without such a block, the
  extractive :func:`memctx.offline.summary.summarize_text` of all user messages;
- ``memory-flush``: :func:`memctx.offline.flush.offline_flush_response`, durable notes
  (decisions, config values, errors, file paths) as Markdown bullets, or ``NO_REPLY``;
- anything else: the same extractive summary of the last user message, short. Never an
  exception.

Token usage is reported with :func:`memctx.messages.tokens.estimate_tokens`, so accounting and
budgets work exactly as with a real model; the price is 0.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memctx.llm import OFFLINE_MODEL, task_of
from memctx.messages import message_text

from .flush import FLUSH_TASK, offline_flush_response
from .snapshot import state_snapshot
from .summary import summarize_text

__all__ = [
    "DEFAULT_REPLY_TOKENS",
    "DEFAULT_SUMMARY_TOKENS",
    "OFFLINE_PROVIDER",
    "offline_reply",
    "register_offline_model",
]

OFFLINE_PROVIDER = OFFLINE_MODEL.split("/", 1)[0]
# Budgets when the request sets no max_tokens: a summary sized like a real model's typical
# compaction summary, and a short answer for anything else.
DEFAULT_SUMMARY_TOKENS = 1024
DEFAULT_REPLY_TOKENS = 256
_CONVERSATION = re.compile(r"<conversation>(.*?)</conversation>", re.S)
_NOTHING = "(memctx/offline: no text to answer)"


def _user_texts(messages: Sequence[Any]) -> list[str]:
    return [
        message_text(m)
        for m in messages
        if isinstance(m, Mapping) and m.get("role") == "user" and message_text(m).strip()
    ]


def _extract(messages: Sequence[Any]) -> str:
    # Imported by name at call time: the rule-based extractor is its own module (and may be
    # swapped in tests); a missing one fails this call with a clear error, not the import.
    module = importlib.import_module("memctx.offline.extract")
    extract: Callable[[Sequence[Any]], object] = module.offline_extract_response
    reply = extract(list(messages))
    if not isinstance(reply, str):
        raise TypeError(
            "memctx.offline.extract.offline_extract_response must return a JSON array "
            f"string, got {type(reply).__name__}"
        )
    return reply


def _summarize(messages: Sequence[Any], max_tokens: int) -> str:
    users = _user_texts(messages)
    if not users:
        return _NOTHING
    blocks = _CONVERSATION.findall(users[-1])
    if blocks:
        return state_snapshot("\n".join(blocks), max_tokens) or _NOTHING
    # Several user turns: the last one is the request. A single one is the whole input, so
    # the request is looked for inside it (a "user:" line).
    last = users[-1] if len(users) > 1 else None
    return summarize_text("\n\n".join(users), max_tokens, last_request=last) or _NOTHING


def offline_reply(messages: Sequence[Any], max_tokens: int | None = None) -> str:
    """The offline model's reply to ``messages`` (deterministic).

    Args:
        messages: Chat messages; the task comes from their ``[memctx-task: ...]`` marker.
        max_tokens: Output budget for summaries and replies (extraction returns its JSON
            whole: cutting it would make it unparseable).

    Returns:
        The reply text.
    """
    task = task_of(messages)
    if task == "extract-knowledge":
        return _extract(messages)
    if task == "summarize":
        return _summarize(messages, max_tokens or DEFAULT_SUMMARY_TOKENS)
    if task == FLUSH_TASK:
        return offline_flush_response(messages, max_tokens or DEFAULT_SUMMARY_TOKENS)
    users = _user_texts(messages)
    budget = min(max_tokens or DEFAULT_REPLY_TOKENS, DEFAULT_REPLY_TOKENS)
    return (summarize_text(users[-1], budget) if users else "") or _NOTHING


def register_offline_model() -> bool:
    """Make ``memctx/offline`` callable through ``litellm.completion``.

    The first call imports litellm and the handler (:mod:`memctx.offline.provider`): that
    takes seconds, so it happens when the offline model is first used, not when memctx is
    imported. Idempotent and thread-safe; cheap enough to call before every request, which
    also restores the entry if other code replaced ``litellm.custom_provider_map``. A handler
    that someone else registered under the ``memctx`` provider is left in place.

    Returns:
        True when this call added the provider.
    """
    from .provider import install_offline_handler

    return install_offline_handler()
