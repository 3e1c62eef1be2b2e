"""Pydantic AI: a memctx strategy before every model request of a Pydantic AI agent.

``MemctxHistory`` is a Pydantic AI capability (``Agent(model, capabilities=[MemctxHistory(...)])``)
and also a plain history processor (``ProcessHistory(MemctxHistory(...))``). Pydantic AI 2
removed ``Agent(history_processors=...)``: a processor now runs inside the ``ProcessHistory``
capability, whose output replaces BOTH what the model is sent and the run's stored history
(``request_context.messages`` and ``ctx.messages[:]``). That is wrong for memctx: the recall
block and the trimming are for one call, and a stored history that lost them would lose them
for good. So as a capability (the recommended use) the model is sent the strategy's context
while the run keeps its history, replaced only when the strategy compacts it (the summary then
stands for what it replaced, which memctx archived). Used as a plain processor, what it returns
is stored too; memctx copes (an old recall block is replaced each call, trimmed messages were
archived), but the history the caller gets back is the trimmed one.

Pydantic AI's messages are translated to OpenAI Chat Completions dicts, the format memctx reads
best: a ``ModelRequest`` becomes one dict per part (``SystemPromptPart`` -> system,
``UserPromptPart`` and retry feedback -> user, ``ToolReturnPart`` -> tool with its
``tool_call_id``), a ``ModelResponse`` one assistant dict (its text, and its ``ToolCallPart``
as ``tool_calls`` with the exact ids). The agent's instructions, which Pydantic AI sends apart
from the messages, go first as a system dict so they count against the window; they are never
sent back as a message. Each dict remembers the part or message it came from, and the dicts are
kept across calls for objects seen before, because the strategies follow an agent's history by
identity. On the way back, everything the strategy left unchanged is the caller's original
object (run ids, timestamps, metadata, provider details and thinking kept); only the parts
memctx created or changed (the recall block, a summary, a masked tool result) are new parts,
put into a copy of the message they belong to. Parts memctx has no dict for (Pydantic AI's
bookkeeping: instruction and tool-availability deltas, thinking, native tool parts) travel with
their message. A failure anywhere in memctx or in this translation sends the messages as the
agent had them; it is counted in ``runner.stats.failures`` and logged by type only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext

from memctx.config import MemoryContextConfig
from memctx.strategies import Messages, Strategy

from .runner import StrategyRunner

__all__ = ["MemctxHistory"]

log = logging.getLogger("memctx.integrations")

Dict = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class _Origin:
    """Where a dict came from: message ``message`` of the list, and for a request its part
    ``part`` (``None`` for a response, which is one dict)."""

    message: int
    part: int | None = None


def _user_text(content: Any) -> str:
    """A user prompt's text as memctx reads it; non-text content is named, not dropped, so
    it is visible in what memctx counts and archives (its tokens are undercounted)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for item in content:
        if isinstance(item, str):
            texts.append(item)
        else:
            kind = getattr(item, "kind", None) or type(item).__name__
            where = getattr(item, "url", None)
            texts.append(f"[{kind}: {where}]" if where else f"[{kind}]")
    return "\n".join(texts)


def _request_part_dict(part: Any) -> Dict | None:
    """The OpenAI dict of one request part; ``None`` for the framework's bookkeeping parts."""
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": _user_text(part.content)}
    if isinstance(part, ToolReturnPart):
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": _shown(part)}
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:  # legacy, still loadable
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": _shown(part)}
    if isinstance(part, RetryPromptPart | RetryFeedbackPart):
        return {"role": "user", "content": _shown(part)}
    return None


def _shown(part: ToolReturnPart | RetryPromptPart | RetryFeedbackPart) -> str:
    """The text the model is shown for a tool result or a retry; its raw content when the
    framework cannot render it (a part built by hand without its retry info)."""
    try:
        if isinstance(part, ToolReturnPart):
            return part.model_response_str()
        return part.model_response()
    except Exception:
        return (
            _user_text(part.content) if isinstance(part.content, str | list) else str(part.content)
        )


def _response_dict(message: ModelResponse) -> Dict:
    """The assistant dict of a response: its text and its tool calls with their exact ids."""
    text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
    calls = [
        {
            "id": p.tool_call_id,
            "type": "function",
            "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
        }
        for p in message.parts
        if isinstance(p, ToolCallPart)
    ]
    out: Dict = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


@dataclasses.dataclass
class _Translation:
    """One history as dicts, with what is needed to bring a strategy's output back."""

    messages: Sequence[ModelMessage]
    dicts: Messages
    origins: dict[int, _Origin]  # id(dict) -> where it came from
    produced: dict[int, int]  # message index -> how many dicts it produced
    instruction_dict: Dict | None


class _Translator:
    """Pydantic AI messages to OpenAI dicts and back, for one session.

    The dicts of objects seen by the previous call are reused (the strategies follow an
    agent's history by identity); the cache holds only the objects of the last call.
    """

    def __init__(self) -> None:
        # id(object) -> (the object, kept so its id stays its own; the dict made for it; the
        # ids of what the dict was made from, so content replaced in place is seen)
        self._cache: dict[int, tuple[object, Dict, tuple[int, ...]]] = {}
        self._instructions: tuple[str, Dict] | None = None

    def _cached(
        self,
        fresh: dict[int, tuple[object, Dict, tuple[int, ...]]],
        obj: object,
        key: tuple[int, ...],
        make: Any,
    ) -> Dict | None:
        hit = self._cache.get(id(obj))
        if hit is not None and hit[0] is obj and hit[2] == key:
            made: Dict | None = hit[1]
        else:
            made = make()
        if made is not None:
            fresh[id(obj)] = (obj, made, key)
        return made

    def to_dicts(self, messages: Sequence[ModelMessage], instructions: str | None) -> _Translation:
        fresh: dict[int, tuple[object, Dict, tuple[int, ...]]] = {}
        dicts: Messages = []
        origins: dict[int, _Origin] = {}
        produced: dict[int, int] = {}
        instruction_dict: Dict | None = None
        if instructions:
            if self._instructions is None or self._instructions[0] != instructions:
                self._instructions = (instructions, {"role": "system", "content": instructions})
            instruction_dict = self._instructions[1]
            dicts.append(instruction_dict)
        for index, message in enumerate(messages):
            count = 0
            if isinstance(message, ModelRequest):
                for part_index, part in enumerate(message.parts):
                    made = self._cached(
                        fresh,
                        part,
                        (id(getattr(part, "content", None)),),
                        lambda p=part: _request_part_dict(p),
                    )
                    if made is not None:
                        dicts.append(made)
                        origins[id(made)] = _Origin(index, part_index)
                        count += 1
            else:
                seen = tuple(map(id, message.parts)) + tuple(
                    id(getattr(p, "content", getattr(p, "args", None))) for p in message.parts
                )
                made = self._cached(fresh, message, seen, lambda m=message: _response_dict(m))
                assert made is not None
                dicts.append(made)
                origins[id(made)] = _Origin(index)
                count = 1
            produced[index] = count
        self._cache = fresh
        return _Translation(messages, dicts, origins, produced, instruction_dict)

    def from_dicts(self, tr: _Translation, out: Messages) -> list[ModelMessage]:
        """The messages for ``out`` (a strategy's history or context built from ``tr``)."""
        return _Rebuild(tr).run(out)


class _Rebuild:
    """Brings a strategy's dicts back to Pydantic AI messages (see the module docstring)."""

    def __init__(self, tr: _Translation) -> None:
        self.tr = tr
        self.result: list[ModelMessage] = []
        # Requests that produced no dict (bookkeeping only) go back in their original order.
        self.silent = [i for i, n in tr.produced.items() if n == 0]
        self.silent_next = 0
        self.calls: dict[str, tuple[int, ToolCallPart]] = {}  # call id -> (response, part)
        self.returns: dict[str, tuple[int, int, ToolReturnPart]] = {}  # -> (request, index, part)
        for index, message in enumerate(tr.messages):
            for part_index, part in enumerate(message.parts):
                if isinstance(part, ToolCallPart):
                    self.calls[part.tool_call_id] = (index, part)
                elif isinstance(part, ToolReturnPart):
                    self.returns[part.tool_call_id] = (index, part_index, part)
        self.by_value: dict[str, _Origin] | None = None
        # The request being gathered: its original message (if any), its parts, whether
        # it is exactly the original's dicts.
        self.origin: int | None = None
        self.parts: list[tuple[int | None, Any]] = []  # (original part index or None, part)
        self.exact = True

    def run(self, out: Messages) -> list[ModelMessage]:
        tr = self.tr
        cut, first_kept = self._shared_tail(out)
        for item in out[:cut]:
            if item is tr.instruction_dict or (
                tr.instruction_dict is not None
                and item.get("role") == "system"
                and item.get("content") == tr.instruction_dict["content"]
            ):
                continue  # sent by Pydantic AI itself, apart from the messages
            origin = tr.origins.get(id(item)) or self._equal_origin(item)
            if item.get("role") == "assistant":
                self._flush()
                self._response(item, origin)
            else:
                self._request_part(item, origin)
        self._flush()
        self._emit_silent(first_kept)
        self.result.extend(tr.messages[first_kept:])
        return self.result

    def _shared_tail(self, out: Messages) -> tuple[int, int]:
        """Where the end of ``out`` that is whole original messages, unchanged, starts:
        ``(position in out, index of its first message)``. Those messages go back as they
        are, without a walk (a long history's context is mostly its kept tail)."""
        dicts, origins = self.tr.dicts, self.tr.origins
        shared, most = 0, min(len(out), len(dicts))
        while shared < most and out[-1 - shared] is dicts[-1 - shared]:
            shared += 1
        start = len(dicts) - shared
        while start < len(dicts):
            origin = origins.get(id(dicts[start]))
            before = origins.get(id(dicts[start - 1])) if start else None
            if origin is not None and (
                origin.part is None or before is None or before.message != origin.message
            ):
                return len(out) - (len(dicts) - start), origin.message
            start += 1
        return len(out), len(self.tr.messages)

    def _equal_origin(self, item: Dict) -> _Origin | None:
        """The origin of a dict memctx copied without changing it (built on first need)."""
        if self.by_value is None:
            self.by_value = {}
            for made in self.tr.dicts:
                origin = self.tr.origins.get(id(made))
                if origin is not None:
                    self.by_value.setdefault(_value_key(made), origin)
        return self.by_value.get(_value_key(item))

    def _emit_silent(self, before: int) -> None:
        while self.silent_next < len(self.silent) and self.silent[self.silent_next] < before:
            self.result.append(self.tr.messages[self.silent[self.silent_next]])
            self.silent_next += 1

    def _emit(self, message: ModelMessage, index: int | None) -> None:
        if index is not None:
            self._emit_silent(index)
        self.result.append(message)

    def _response(self, item: Dict, origin: _Origin | None) -> None:
        messages = self.tr.messages
        if origin is not None:
            self._emit(messages[origin.message], origin.message)
            return
        kept_ids = [c.get("id") for c in item.get("tool_calls") or [] if isinstance(c, Mapping)]
        source = next((self.calls[i][0] for i in kept_ids if i in self.calls), None)
        text = item.get("content")
        text = text if isinstance(text, str) else _user_text(text or [])
        if source is None:
            self._emit(ModelResponse(parts=[TextPart(text)]), None)
            return
        original = messages[source]
        assert isinstance(original, ModelResponse)
        old_text = "".join(p.content for p in original.parts if isinstance(p, TextPart))
        parts: list[ModelResponsePart] = []
        for part in original.parts:
            if isinstance(part, ToolCallPart) and part.tool_call_id not in kept_ids:
                continue
            if isinstance(part, TextPart) and text != old_text:
                if text and not any(isinstance(p, TextPart) for p in parts):
                    parts.append(TextPart(text))
                continue
            parts.append(part)
        self._emit(dataclasses.replace(original, parts=parts), source)

    def _request_part(self, item: Dict, origin: _Origin | None) -> None:
        messages = self.tr.messages
        if origin is not None:
            if self.origin is not None and self.origin != origin.message:
                self._flush()
            self.origin = origin.message
            request = messages[origin.message]
            assert origin.part is not None
            self.parts.append((origin.part, request.parts[origin.part]))
            return
        self.exact = False
        role = item.get("role")
        content = item.get("content")
        text = content if isinstance(content, str) else _user_text(content or [])
        if role == "tool":
            call_id = str(item.get("tool_call_id", ""))
            found = self.returns.get(call_id)
            if found is not None:  # a result memctx changed (masked, cut): same part, new text
                index, part_index, original = found
                if self.origin is not None and self.origin != index:
                    self._flush()
                self.origin = index
                self.parts.append((part_index, dataclasses.replace(original, content=text)))
                return
            call = self.calls.get(call_id)
            name = call[1].tool_name if call else "tool"
            self.parts.append(
                (None, ToolReturnPart(tool_name=name, content=text, tool_call_id=call_id))
            )
        elif role == "system":
            self.parts.append((None, SystemPromptPart(text)))
        else:
            self.parts.append((None, UserPromptPart(text)))

    def _flush(self) -> None:
        if not self.parts:
            self.origin, self.exact = None, True
            return
        messages = self.tr.messages
        index = self.origin
        if index is None:
            self._emit(ModelRequest(parts=[part for _, part in self.parts]), None)
        else:
            original = messages[index]
            assert isinstance(original, ModelRequest)
            if self.exact and len(self.parts) == self.tr.produced[index]:
                self._emit(original, index)
            else:
                self._emit(
                    dataclasses.replace(original, parts=self._with_bookkeeping(original)), index
                )
        self.origin, self.parts, self.exact = None, [], True

    def _with_bookkeeping(self, original: ModelRequest) -> list[ModelRequestPart]:
        """The gathered parts, with the original's parts that had no dict at their place."""
        silent = [(i, p) for i, p in enumerate(original.parts) if _request_part_dict(p) is None]
        parts: list[ModelRequestPart] = []
        for original_index, part in self.parts:
            while silent and original_index is not None and silent[0][0] < original_index:
                parts.append(silent.pop(0)[1])
            parts.append(part)
        parts.extend(p for _, p in silent)
        return parts


class MemctxHistory(AbstractCapability[Any]):
    """memctx's context management for a Pydantic AI agent (see the module docstring).

    Use one per conversation: ``Agent(model, capabilities=[MemctxHistory(...)])`` for an agent
    that holds one conversation, or ``agent.run(..., capabilities=[MemctxHistory(...)])`` per
    conversation. It is also a history processor: ``ProcessHistory(MemctxHistory(...))``.

    Args:
        strategy: A registered strategy name (``"memory-context"`` by default, maybe with
            settings: ``"observation-masking:keepLast=5"``) or a built strategy.
        store_dir: Where memctx keeps its files; conversations sharing it share memory.
            Required with a strategy name.
        session_id: This conversation's id (letters, digits, ``._-``).
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
        self.runner = StrategyRunner(
            strategy, store_dir=store_dir, session_id=session_id, window=window, config=config
        )
        self._translator = _Translator()
        self._lock = threading.Lock()  # one translation cache: one step at a time

    def __repr__(self) -> str:
        return f"MemctxHistory(strategy={self.runner.strategy.name!r})"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built from a live strategy and store, not from an agent spec

    def step(
        self, messages: Sequence[ModelMessage], instructions: str | None = None
    ) -> tuple[list[ModelMessage], list[ModelMessage], bool]:
        """One model request: ``(history to keep, messages to send, compacted)``; never raises.

        Args:
            messages: The run's history, ending with the request about to be sent.
            instructions: The instructions Pydantic AI sends with it (counted, never returned).
        """
        with self._lock:
            return self._step(messages, instructions)

    def _step(
        self, messages: Sequence[ModelMessage], instructions: str | None
    ) -> tuple[list[ModelMessage], list[ModelMessage], bool]:
        try:
            tr = self._translator.to_dicts(messages, instructions)
        except Exception as exc:
            return self._failed(messages, exc)
        step = self.runner.step(tr.dicts)
        if step.failed:
            return list(messages), list(messages), False
        try:
            context = self._translator.from_dicts(tr, step.context)
            history = (
                self._translator.from_dicts(tr, step.history) if step.compacted else list(messages)
            )
        except Exception as exc:
            return self._failed(messages, exc)
        if not context or not isinstance(context[-1], ModelRequest):
            return self._failed(messages, ValueError("the strategy left no request to send"))
        return history, context, step.compacted

    def _failed(
        self, messages: Sequence[ModelMessage], exc: Exception
    ) -> tuple[list[ModelMessage], list[ModelMessage], bool]:
        self.runner.stats.failures += 1
        log.warning(
            "memctx: the Pydantic AI adapter failed (%s); the messages go on as the agent had them",
            type(exc).__name__,
        )
        return list(messages), list(messages), False

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """The model is sent the strategy's context; the run keeps its history, replaced only
        when the strategy compacted it."""
        try:
            parts = request_context.model_request_parameters.instruction_parts or []
            instructions = "\n\n".join(p.content for p in parts if p.content)
        except Exception:  # a Pydantic AI without instruction parts: the last request's
            instructions = ""
        messages = list(request_context.messages)
        # A step can take a while (a compaction writes its summary): off the event loop.
        history, context, compacted = await asyncio.to_thread(
            self.step, messages, instructions or _last_instructions(messages)
        )
        request_context.messages = context
        if compacted:
            ctx.messages[:] = history
        return request_context

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """As a plain history processor: the messages to send (Pydantic AI stores them too)."""
        return self.step(messages, _last_instructions(messages))[1]

    def end_session(self, messages: Sequence[ModelMessage]) -> None:
        """End the conversation with its last history (the strategy archives what it keeps
        for later sessions); never raises."""
        with self._lock:
            try:
                dicts = self._translator.to_dicts(messages, None).dicts
            except Exception as exc:
                self._failed(messages, exc)
                return
            self.runner.end_session(dicts)

    def close(self) -> Mapping[str, float]:
        """Close the strategy (idempotent); its usage counters."""
        return self.runner.close()


def _value_key(item: Mapping[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, default=str)


def _last_instructions(messages: Sequence[ModelMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and message.instructions:
            return message.instructions
    return None
