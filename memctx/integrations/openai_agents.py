"""memctx in an OpenAI Agents SDK agent: a model-input filter run before every model call.

The SDK (``openai-agents``, pinned at 0.20.0) calls ``RunConfig(call_model_input_filter=...)``
right before each model call with the items it is about to send (Responses API input items:
``message``, ``function_call``, ``function_call_output``, ``reasoning``...) and the agent's
instructions, and sends what the filter returns. That is where a strategy belongs: memctx
reads these items as they are (its fifth message format, calls paired with their outputs by
``call_id``), so :class:`MemctxInputFilter` hands them to a
:class:`~memctx.integrations.runner.StrategyRunner` untranslated and sends back its context:
the recall block, trimming, masking, a compaction summary. Items the strategy kept unchanged
are the SDK's own objects; new ones are items memctx wrote in the same shape (an easy-input
``{"role": "user", "content": ...}`` message for a recall block or a summary, a
``function_call_output`` copy with its output masked or cut).

Why a filter and not a session wrapper: the filter sees every model call, within a run (tool
loops) as well as across runs, with or without a ``Session``, while a session is read only
when a run starts. The SDK's own history keeps growing and is rebuilt every call; the runner
goes on from its compacted history while the items given start with the ones that compaction
stood for (:mod:`memctx.integrations.runner`). That memory lives in the filter, one per
conversation: a new process compacts again once, and what the session stores stays the
agent's full record (memctx archives what it compacts away, so nothing is lost to recall).

The instructions go to the strategy as a leading system message, so they count against the
window and are protected as the system prompt, and come back as ``instructions``.

Not supported: server-side conversation state (``previous_response_id``,
``conversation_id``), where the SDK sends only the new items and the server holds the rest.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from agents import TResponseInputItem
from agents.run_config import CallModelData, ModelInputData

from memctx.config import MemoryContextConfig
from memctx.messages import is_recalled_block
from memctx.strategies import Messages, Strategy

from .runner import StrategyRunner

__all__ = ["MemctxInputFilter"]

log = logging.getLogger("memctx.integrations")


class MemctxInputFilter:
    """A memctx strategy as the Agents SDK's ``call_model_input_filter`` (module docstring).

    Use one per conversation::

        memctx_filter = MemctxInputFilter(store_dir="~/.memctx", session_id="chat-42")
        result = await Runner.run(
            agent, "fix the tests", run_config=RunConfig(call_model_input_filter=memctx_filter)
        )
        memctx_filter.close()

    Args:
        strategy: A registered strategy name (``memory-context`` by default, maybe with
            settings: ``"observation-masking:keepLast=5"``), or a strategy built already.
        store_dir: Where the strategy keeps its files; conversations sharing it share memory.
            Required with a strategy name.
        session_id: The conversation (letters, digits, ``._-``).
        window: The model's context window in tokens.
        config: memctx settings (:func:`memctx.load_config`); ``None`` means the defaults.

    Raises:
        ValueError, ConfigError, StoreError: Bad arguments (from
            :class:`~memctx.integrations.runner.StrategyRunner`), at construction only.
    """

    def __init__(
        self,
        strategy: str | Strategy = "memory-context",
        *,
        store_dir: str | Path | None = None,
        session_id: str = "default",
        window: int = 128_000,
        config: MemoryContextConfig | None = None,
    ) -> None:
        self.runner = StrategyRunner(
            strategy, store_dir=store_dir, session_id=session_id, window=window, config=config
        )
        self._lock = threading.Lock()

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The SDK's hook: the strategy's work runs in a worker thread, off the event loop."""
        return await asyncio.to_thread(self.filter, data.model_data)

    def filter(self, model_data: ModelInputData) -> ModelInputData:
        """What to send instead of ``model_data``; never raises (on a failure inside memctx,
        ``model_data`` itself goes on, and the failure is counted in ``runner.stats``)."""
        try:
            with self._lock:
                return self._filtered(model_data)
        except Exception as exc:  # a hook inside the agent: log by type only, count, pass on
            self.runner.stats.failures += 1
            log.warning(
                "memctx: filtering the model input failed (%s); it goes on unchanged",
                type(exc).__name__,
            )
            return model_data

    def _filtered(self, model_data: ModelInputData) -> ModelInputData:
        # Responses input items are TypedDicts: the dicts memctx reads as its fifth format.
        items = cast(Messages, list(model_data.input))
        instructions = model_data.instructions
        head: Messages = [{"role": "system", "content": instructions}] if instructions else []
        step = self.runner.step(head + items)
        if step.failed:
            return model_data
        context = step.context
        first = context[0] if context else None
        if head and first is not None and first is not head[0] and _is_instructions(first, head):
            # The instructions as memctx sends them (cut to fit a small window, say).
            content = first.get("content")
            instructions = content if isinstance(content, str) else instructions
        sent = _without_instructions(context, head)
        return ModelInputData(input=cast(list[TResponseInputItem], sent), instructions=instructions)

    def close(self) -> Mapping[str, float]:
        """End the session with its last history (archived for later recall by the memory
        strategies) and close the strategy; idempotent, never raises. Returns the strategy's
        LLM usage (``{}`` when it failed or was closed already)."""
        with self._lock:
            self.runner.end_session()
            return self.runner.close()

    def __enter__(self) -> MemctxInputFilter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_instructions(message: dict[str, Any], head: Messages) -> bool:
    """``message`` carries the instructions: the system message put first for them, or the
    copy memctx made of it (cut to fit), never a block memctx added."""
    if not head:
        return False
    if message is head[0]:
        return True
    return message.get("role") == "system" and not is_recalled_block(message)


def _without_instructions(messages: Sequence[dict[str, Any]], head: Messages) -> Messages:
    """``messages`` without the leading system message that carried the instructions."""
    if messages and _is_instructions(messages[0], head):
        return list(messages[1:])
    return list(messages)
