"""memctx in a LangChain v1 agent: ``create_agent(..., middleware=[MemctxMiddleware(...)])``.

Before every model call the agent makes, :meth:`MemctxMiddleware.wrap_model_call` turns the
request's messages (and its system message) into OpenAI Chat Completions dicts, steps a
memctx strategy over them (:class:`memctx.integrations.runner.StrategyRunner`) and sends the
model the strategy's context instead: trimmed to the window, tool calls still paired with
their results, with the ``<recalled-context>`` block of what memctx archived when the latest
request asks about it. When the strategy compacted, the agent's state is replaced too (the
way LangChain's own ``SummarizationMiddleware`` does, all messages removed then the kept ones
added), so the next calls start from the compacted history rather than compacting the same
messages again.

Messages the strategy kept unchanged come back as the caller's original ``BaseMessage``
objects (their ids, metadata and provider fields intact: memctx returns those dicts by
identity); only what memctx wrote (the recall block, a summary, a cut tool result) becomes a
new message. Being a hook inside someone else's agent it never raises: a failure inside
memctx (or in the translation) sends the request on as the agent built it, counted in
``runner.stats.failures`` and logged by its type only.

One middleware is one memctx session: give each conversation (each LangGraph thread) its own;
a call from a second thread goes on unchanged (counted, warned once) rather than mixing two
conversations in one session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from memctx.config import MemoryContextConfig
from memctx.messages import message_text
from memctx.strategies import Strategy

from .runner import StrategyRunner

__all__ = ["MemctxMiddleware"]

log = logging.getLogger("memctx.integrations")

Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


@dataclass(frozen=True)
class _Prepared:
    """One model call as memctx prepared it, in LangChain's objects.

    ``request`` is what the model gets; ``history`` the agent state's messages from now on
    when the strategy compacted (``None`` when it did not).
    """

    request: ModelRequest[Any]
    history: list[AnyMessage] | None


class _Translation:
    """LangChain messages as memctx dicts, and memctx's dicts back as LangChain messages.

    Each dict remembers the message it was made from (by the dict's identity), so a dict the
    strategy passed through unchanged maps back to the very object the agent gave.
    """

    def __init__(self, system: SystemMessage | None, messages: Sequence[BaseMessage]) -> None:
        self.system = system
        self.system_dict: dict[str, Any] | None = None
        self.dicts: list[dict[str, Any]] = []
        self.origin: dict[int, BaseMessage] = {}
        self.tool_results: dict[str, ToolMessage] = {}
        self.keep_alive: list[Mapping[str, Any]] = []
        if system is not None:
            self.system_dict = self._add(system)
        for message in messages:
            self._add(message)
            if isinstance(message, ToolMessage):
                self.tool_results[message.tool_call_id] = message

    def _add(self, message: BaseMessage) -> dict[str, Any]:
        converted = convert_to_openai_messages(message)
        self.dicts.append(converted)
        self.origin[id(converted)] = message
        return converted

    def message(self, item: Mapping[str, Any]) -> BaseMessage:
        """The LangChain message for one dict the strategy returned.

        A dict memctx wrote becomes one new message, the same object in the model's request
        and in the compacted history.
        """
        known = self.origin.get(id(item))
        if known is not None:
            return known
        made: BaseMessage
        call_id = item.get("tool_call_id")
        result = self.tool_results.get(call_id) if isinstance(call_id, str) else None
        if item.get("role") == "tool" and result is not None:
            # A cut or masked result: the same message (id, name, artifact), the new text.
            made = result.model_copy(update={"content": item.get("content") or ""})
        else:
            made = convert_to_messages([dict(item)])[0]
        self.keep_alive.append(item)  # its id() stays this dict's while the map holds it
        self.origin[id(item)] = made
        return made

    def split(
        self, items: Sequence[Mapping[str, Any]]
    ) -> tuple[SystemMessage | None, list[AnyMessage]]:
        """The system message and the rest, for a request.

        The leading system dicts are the request's system message: the agent's own when the
        strategy kept it unchanged, a copy of it with the new content when the strategy
        changed that one (as the planner adds its summary), else one message joining their
        texts (most providers take one system message, at the start).
        """
        lead = 0
        while lead < len(items) and items[lead].get("role") == "system":
            lead += 1
        system: SystemMessage | None
        if lead == 0:
            system = None
        elif lead == 1 and items[0] is self.system_dict:
            system = self.system
        elif lead == 1 and self.system is not None:  # the prompt with memctx's text added
            system = self.system.model_copy(update={"content": items[0].get("content") or ""})
        else:
            system = SystemMessage(content="\n\n".join(message_text(i) for i in items[:lead]))
        return system, [self.message(item) for item in items[lead:]]  # type: ignore[misc]

    def history(self, items: Sequence[Mapping[str, Any]]) -> list[AnyMessage]:
        """The agent state's messages for a compacted history: the system prompt is not
        part of the state (the agent adds it to every call), everything else is."""
        return [self.message(item) for item in items if item is not self.system_dict]  # type: ignore[misc]


class MemctxMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """memctx's context management before every model call of a LangChain v1 agent.

    Args:
        strategy: A registered strategy name (``"memory-context"`` by default, maybe with
            settings: ``"observation-masking:keepLast=5"``) or a strategy built already.
        store_dir: Where the strategy keeps its files; agents sharing it share memory.
            Required with a strategy name.
        session_id: This conversation's memctx session (letters, digits, ``._-``).
        window: The model's context window in tokens.
        config: memctx settings (:func:`memctx.load_config`); ``None`` means the defaults.

    Raises:
        ValueError, ConfigError, StoreError: Bad arguments (at construction only).
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
        super().__init__()
        self.runner = StrategyRunner(
            strategy, store_dir=store_dir, session_id=session_id, window=window, config=config
        )
        self._warned_state = False
        self._warned_thread = False
        self._thread: str | None = None  # the LangGraph thread served, once a call shows it

    def _prepare(self, request: ModelRequest[Any]) -> _Prepared:
        """The request memctx prepared; the request itself when memctx failed."""
        if not self._same_conversation(request):
            return _Prepared(request, None)
        try:
            translation = _Translation(request.system_message, request.messages)
        except Exception as exc:  # a message memctx's translation cannot read
            self.runner.stats.failures += 1
            log.warning(
                "memctx: reading the agent's messages failed (%s); the request goes on unchanged",
                type(exc).__name__,
            )
            return _Prepared(request, None)
        step = self.runner.step(translation.dicts)
        if step.failed:
            return _Prepared(request, None)
        try:
            system, messages = translation.split(step.context)
            history = None
            if step.compacted and self._state_may_be_replaced(request):
                history = translation.history(step.history)
            prepared = request.override(system_message=system, messages=messages)
        except Exception as exc:
            self.runner.stats.failures += 1
            log.warning(
                "memctx: translating the prepared call failed (%s); the request goes on unchanged",
                type(exc).__name__,
            )
            return _Prepared(request, None)
        return _Prepared(prepared, history)

    def _same_conversation(self, request: ModelRequest[Any]) -> bool:
        """Whether the request is from the LangGraph thread this middleware serves (the first
        it saw). One memctx session is one conversation: stepping another thread's history
        would mix two conversations' compaction and recall one's archive into the other."""
        info = getattr(request.runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if thread is None:
            return True
        if self._thread is None:
            self._thread = str(thread)
        if self._thread == str(thread):
            return True
        self.runner.stats.failures += 1
        if not self._warned_thread:
            self._warned_thread = True
            log.warning(
                "memctx: a model call from a second LangGraph thread goes on unchanged: one "
                "MemctxMiddleware serves one conversation; build one per thread (its own "
                "session_id, the same store_dir to share memory)"
            )
        return False

    def _state_may_be_replaced(self, request: ModelRequest[Any]) -> bool:
        """Whether the compacted history may become the agent's state: only when the request
        carries the state's own messages. A middleware outside this one that changed them
        (added, dropped or rewrote messages) would otherwise have its change written into
        the state, or lose messages memctx never saw (and so never archived)."""
        state = request.state.get("messages") if isinstance(request.state, Mapping) else None
        if (
            isinstance(state, list)
            and len(state) == len(request.messages)
            and all(ours is theirs for ours, theirs in zip(request.messages, state, strict=True))
        ):
            return True
        if not self._warned_state:
            self._warned_state = True
            log.warning(
                "memctx: the strategy compacted, but the model request does not carry the agent "
                "state's messages (a middleware before MemctxMiddleware changed them), so the "
                "state is left as it is (memctx goes on from its compacted history while the "
                "requests keep starting the same way); put MemctxMiddleware first in "
                "middleware=[...]"
            )
        return False

    @staticmethod
    def _result(
        prepared: _Prepared, response: ModelResponse[Any]
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        if prepared.history is None:
            return response
        # The model node adds the response to the state; this command then replaces the whole
        # state with the compacted history followed by the same response (applied in either
        # order, the state ends as compacted history + response).
        replace = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *prepared.history, *response.result]
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"messages": replace})
        )

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Handler
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """Send the model the strategy's context; replace the state when it compacted."""
        prepared = self._prepare(request)
        return self._result(prepared, handler(prepared.request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncHandler
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """:meth:`wrap_model_call` for async agents; memctx's work runs in a thread."""
        prepared = await asyncio.to_thread(self._prepare, request)
        return self._result(prepared, await handler(prepared.request))

    def end_session(self, messages: Sequence[BaseMessage]) -> None:
        """End the memctx session with the conversation's last messages (what the strategy
        archives so later sessions can recall it); never raises."""
        try:
            dicts = _Translation(None, messages).dicts
        except Exception as exc:
            self.runner.stats.failures += 1
            log.warning("memctx: reading the agent's messages failed (%s)", type(exc).__name__)
            return
        self.runner.end_session(dicts)

    def close(self) -> Mapping[str, float]:
        """Close the strategy (idempotent); its usage counters."""
        return self.runner.close()
