"""memctx as an inspect_ai compaction strategy: ``react(compaction=MemctxCompaction(...))``.

inspect_ai's agents (``react()``, or any loop built on ``inspect_ai.model.compaction()``)
keep a compacted view of the conversation and, once that view passes the strategy's
``threshold`` (tokens, as the target model counts them), hand it to the strategy's
``compact()`` and send what it returns. :class:`MemctxCompaction` is such a strategy: it
keeps the session's whole history as OpenAI Chat Completions dicts (each inspect message
translated once, so a strategy sees the same dict objects every call and the history only
grows, as memctx's strategies expect), steps a :class:`~.runner.StrategyRunner` on it and
translates the context back: messages the strategy kept are the caller's own
``ChatMessage`` objects (ids, metadata and provider fields intact); only the ones memctx
wrote (the ``<recalled-context>`` block, a summary, a masked tool output) are new.

Three things follow from inspect's side of the contract:

- The strategy runs when inspect's view passes the threshold, not before every call: in
  between, inspect appends new messages to the view as they are, so a recall block is
  chosen at a compaction and stays until the next. The default threshold is ``window -
  reserveTokens / 2``: memctx sends at most ``window - reserveTokens``, which leaves half
  the reserve for the tool definitions inspect adds to its count (and the other half for
  the reply); once the conversation is that long memctx runs every few calls.
- inspect asks again while the answer still exceeds the threshold, and fails the sample
  after a few passes that do not shrink it. memctx would only repeat its answer, so when
  inspect asks again about it (memctx's token estimate and the model's tokenizer differ,
  the tool definitions take more than half the reserve, or the strategy never cuts, like
  ``full``), inspect's own ``CompactionTrim`` trims the view inspect gave, as if memctx
  were not there; it also does when memctx fails. The agent goes on, and
  :attr:`MemctxCompaction.fallbacks` counts it.
- One strategy object serves every sample of a task, so each sample (inspect's per-sample
  ``store()``) gets its own memctx session: ``session_id`` for the first, ``<session_id>-2``,
  ``-3`` ... after it.

``type`` is ``"edit"``: memctx never calls the agent's model to compact (``memory-context``
summarises with its own ``extractionModel``, ``memctx/offline`` by default), so it is not a
``"summary"``; and it is not inspect's ``"trim"`` either, which keeps a suffix of the
conversation (inspect's log recovery relies on that) -- memctx drops messages by relevance,
keeps the system prompt, masks outputs and inserts a recall block: it edits the view.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    CompactionStrategy,
    CompactionTrim,
    Model,
)
from inspect_ai.tool import ToolCall, ToolInfo
from inspect_ai.util import Store, store

from memctx.config import MemoryContextConfig
from memctx.messages import is_compaction_summary
from memctx.strategies import Messages, Strategy

from .runner import StrategyRunner

__all__ = ["MemctxCompaction"]

log = logging.getLogger("memctx.integrations")


def _bundled_tiktoken_cache() -> str | None:
    """litellm's folder of tiktoken encodings (o200k_base among them), found without
    importing litellm (seconds); None when it is not where litellm keeps it."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return str(folder) if folder.is_dir() else None


# inspect counts a view's tokens with tiktoken's o200k_base, which tiktoken downloads on
# first use; litellm, a memctx dependency, ships it, so compaction works offline unless the
# user chose another cache.
_CACHE = _bundled_tiktoken_cache()
if _CACHE is not None:
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", _CACHE)


@dataclass
class _Session:
    """One sample's memctx session and the translation state between its two shapes."""

    runner: StrategyRunner
    history: Messages = field(default_factory=list)
    # inspect ids of every message this session has accounted for: the caller's (translated
    # into ``history``) and the ones built from memctx's dicts.
    known: set[str] = field(default_factory=set)
    # id(dict) -> (the dict, the inspect message it stands for); the dict is held so its
    # id() cannot be reused by another object while the entry exists.
    originals: dict[int, tuple[dict[str, Any], ChatMessage]] = field(default_factory=dict)
    built: dict[int, tuple[dict[str, Any], ChatMessage]] = field(default_factory=dict)
    tool_results: dict[str, ChatMessageTool] = field(default_factory=dict)  # call id -> result
    tool_calls: dict[str, ToolCall] = field(default_factory=dict)  # call id -> the call
    # One compaction round: inspect asks, and asks again while the answer is over its
    # threshold (with that answer): the view it gave first, the ids of the last answer, and
    # whether memctx (not the trim) gave it.
    round_view: list[ChatMessage] = field(default_factory=list)
    last_answer: list[str] | None = None
    answered_by_memctx: bool = False

    def accounted(self, message: ChatMessage) -> bool:
        """Whether ``message`` is already in the history or was built by memctx, counting a
        message inspect merged from such messages (consecutive user messages, for providers
        that want them merged) as accounted too."""
        if message.id in self.known:
            return True
        merged = (message.metadata or {}).get("combined_from")
        if isinstance(merged, list) and merged and all(part in self.known for part in merged):
            self.known.add(_message_id(message))
            return True
        return False


class MemctxCompaction(CompactionStrategy):
    """A memctx strategy as inspect_ai's compaction (see the module docstring).

    Args:
        strategy: A registered strategy name (``memory-context`` by default, maybe with
            settings: ``"observation-masking:keepLast=5"``), or a strategy built already
            (it serves one session: the first sample; later samples get inspect's trim).
        store_dir: Where the strategy keeps its files; sessions sharing it share memory (with
            ``crossSession``). Required with a strategy name.
        session_id: The first sample's memctx session; later samples add ``-2``, ``-3`` ...
        window: The model's context window in tokens, as memctx counts them.
        config: memctx settings (:func:`memctx.load_config`); ``None`` means the defaults.
        threshold: When inspect hands the view over: tokens, or a share of the model's
            context window (inspect's meaning); ``None`` means ``window - reserveTokens / 2``.

    Raises:
        ValueError, ConfigError, StoreError: Bad arguments, here rather than inside the agent.
    """

    def __init__(
        self,
        strategy: str | Strategy = "memory-context",
        *,
        store_dir: str | Path | None = None,
        session_id: str = "default",
        window: int = 128_000,
        config: MemoryContextConfig | None = None,
        threshold: int | float | None = None,
    ) -> None:
        if threshold is None:
            reserve = (config or MemoryContextConfig()).reserve_tokens
            if window <= reserve:
                raise ValueError(
                    f"window {window} leaves no room above reserveTokens {reserve}: pass the "
                    "model's real window, lower reserveTokens in config, or set threshold="
                )
            threshold = window - reserve // 2
        super().__init__(type="edit", threshold=threshold, memory=False)
        self._runner_args: dict[str, Any] = {
            "store_dir": store_dir,
            "window": window,
            "config": config,
        }
        self._strategy = strategy
        self._session_id = session_id
        # Built now so a wrong name, store or setting fails here, before any sample runs.
        self.runner = StrategyRunner(strategy, session_id=session_id, **self._runner_args)
        self.fallback = CompactionTrim(threshold=threshold, memory=False)
        self.fallbacks = 0  # compactions inspect's trim did instead of memctx
        self._sessions: dict[int, tuple[Store, _Session | None]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def runners(self) -> list[StrategyRunner]:
        """Every sample's runner, the first one (:attr:`runner`) first."""
        with self._lock:
            return [self.runner] + [
                s.runner for _, s in self._sessions.values() if s and s.runner is not self.runner
            ]

    def _session(self) -> _Session | None:
        """The current sample's session (its inspect ``store()``), made on first use."""
        sample_store = store()
        with self._lock:
            entry = self._sessions.get(id(sample_store))
            if entry is not None and entry[0] is sample_store:
                return entry[1]
            if self._closed:
                return None
            if not self._sessions:
                runner: StrategyRunner | None = self.runner
            elif isinstance(self._strategy, str):
                session_id = f"{self._session_id}-{len(self._sessions) + 1}"
                runner = StrategyRunner(self._strategy, session_id=session_id, **self._runner_args)
            else:
                runner = None  # a built strategy holds one session's state
            if runner is None:
                if len(self._sessions) == 1:
                    log.warning(
                        "memctx: a strategy built already serves one sample; the others get "
                        "inspect's trim (pass a strategy name for one session per sample)"
                    )
                    self._sessions[id(sample_store)] = (sample_store, None)
                return None
            session = _Session(runner)
            self._sessions[id(sample_store)] = (sample_store, session)
            return session

    async def compact(
        self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]
    ) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        """The view memctx's strategy makes of ``messages``; inspect's trim when memctx fails
        or inspect asks again (module docstring). Never raises from memctx."""
        session: _Session | None = None
        try:
            session = self._session()
            if session is not None:
                if session.last_answer != [m.id for m in messages]:
                    session.round_view = list(messages)
                    # memctx's hooks are synchronous (search, archive): off the event loop,
                    # so the other samples of the eval keep running meanwhile.
                    answer = await anyio.to_thread.run_sync(self._step, session, messages)
                    if answer is not None:
                        session.last_answer = [_message_id(m) for m in answer[0]]
                        session.answered_by_memctx = True
                        return answer
                elif session.answered_by_memctx:
                    # memctx's answer did not fit inspect's count: trim what inspect gave,
                    # as if memctx were not there, rather than memctx's larger history.
                    messages = session.round_view
        except Exception as exc:  # a hook inside the agent: log by type, fall back
            log.warning("memctx: inspect compaction failed (%s)", type(exc).__name__)
        self.fallbacks += 1
        trimmed, _ = await self.fallback.compact(model, messages, tools)
        if session is not None:
            ids = [_message_id(m) for m in trimmed]
            session.last_answer, session.answered_by_memctx = list(ids), False
            session.known.update(ids)  # the caller's messages, maybe re-made by the trim
        return trimmed, None

    def _step(
        self, session: _Session, messages: list[ChatMessage]
    ) -> tuple[list[ChatMessage], ChatMessageUser | None] | None:
        """memctx's view of ``messages`` (and the summary to record, when it compacted), or
        ``None`` when memctx failed."""
        for message in messages:
            if not session.accounted(message):
                as_dict = _to_dict(message)
                session.history.append(as_dict)
                session.originals[id(as_dict)] = (as_dict, message)
                session.known.add(_message_id(message))
                if isinstance(message, ChatMessageTool) and message.tool_call_id:
                    session.tool_results[message.tool_call_id] = message
                if isinstance(message, ChatMessageAssistant):
                    session.tool_calls.update((c.id, c) for c in message.tool_calls or ())
        step = session.runner.step(session.history)
        if step.failed:
            return None
        if step.compacted:
            session.history = step.history
            kept = {id(d) for d in step.history}
            session.originals = {k: v for k, v in session.originals.items() if k in kept}
        view = [_to_inspect(session, d) for d in step.context]
        in_view = {id(d) for d in step.context}
        session.built = {k: v for k, v in session.built.items() if k in in_view}
        summary = None
        if step.compacted:
            built = (session.built.get(id(d)) for d in step.context if is_compaction_summary(d))
            summary = next(
                (b[1] for b in built if b is not None and isinstance(b[1], ChatMessageUser)), None
            )
        return view, summary

    def close(self) -> None:
        """End every sample's session and close its strategy (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sessions = [s for _, s in self._sessions.values() if s is not None]
            if not any(s.runner is self.runner for s in sessions):
                sessions.insert(0, _Session(self.runner))
        for session in sessions:
            session.runner.end_session(session.history)
            session.runner.close()


def _to_dict(message: ChatMessage) -> dict[str, Any]:
    """The OpenAI Chat Completions dict memctx reads for an inspect message: its text (what
    memctx counts, trims, archives and searches), tool calls and tool call ids. Images and
    other media are not in it (memctx does not count them); the message itself still goes
    to the model whole, as the caller's object, unless memctx rewrites it."""
    if isinstance(message, ChatMessageTool):
        text = f"Error: {message.error.message}" if message.error else message.text
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "name": message.function or "",
            "content": text,
        }
    if isinstance(message, ChatMessageAssistant) and message.tool_calls:
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
        return {"role": "assistant", "content": message.text, "tool_calls": calls}
    return {"role": message.role, "content": message.text}


def _to_inspect(session: _Session, message: dict[str, Any]) -> ChatMessage:
    """The inspect message for one dict of memctx's context: the caller's own object when
    memctx kept it, else one built once per dict (a masked output is the same object on every
    call, so inspect's view and the provider's prompt cache see it unchanged)."""
    for table in (session.originals, session.built):
        entry = table.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
    built = _from_dict(session, message)
    session.built[id(message)] = (message, built)
    session.known.add(_message_id(built))
    return built


def _from_dict(session: _Session, message: dict[str, Any]) -> ChatMessage:
    """A new inspect message for a dict memctx wrote or changed: a tool result or a tool
    call keeps the original's fields (function, error, call arguments) with memctx's text."""
    role = message.get("role")
    text = _text(message.get("content"))
    if role == "tool":
        call_id = str(message.get("tool_call_id") or "")
        original = session.tool_results.get(call_id)
        if original is not None:  # a masked or cut output
            return original.model_copy(update={"id": _new_id(), "content": text})
        return ChatMessageTool(content=text, tool_call_id=call_id, function=message.get("name"))
    if role == "assistant":
        calls = [_tool_call(session, c) for c in message.get("tool_calls") or ()]
        return ChatMessageAssistant(content=text, tool_calls=calls or None)
    if role == "system":
        return ChatMessageSystem(content=text)
    return ChatMessageUser(content=text)


def _tool_call(session: _Session, call: dict[str, Any]) -> ToolCall:
    known = session.tool_calls.get(str(call.get("id")))
    if known is not None:
        return known
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError:
        arguments = {}
    return ToolCall(
        id=str(call.get("id")),
        function=str(function.get("name", "")),
        arguments=arguments if isinstance(arguments, dict) else {},
    )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _new_id() -> str:
    return uuid.uuid4().hex


def _message_id(message: ChatMessage) -> str:
    if message.id is None:  # inspect gives every message an id; a None would break its own
        message.id = _new_id()  # bookkeeping too, so give it one rather than fail the agent
    return message.id
