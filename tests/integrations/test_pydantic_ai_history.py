"""MemctxHistory in a real Pydantic AI agent whose FunctionModel records what it was sent.

The agent runs many turns (``agent.run_sync`` with ``message_history`` carried over), each
calling a real tool whose output is large, so the window forces memctx to trim and compact;
the tests then look at the messages the model was actually sent.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memctx import MemoryContextConfig, TokenCounter
from memctx.integrations.pydantic_ai_history import MemctxHistory
from memctx.strategies import BaseStrategy, Prepared, Strategy, make_strategy

WINDOW = 6_000
FACT = "Remember: the deployment password rotation job is named zebracorn-rotator."
QUESTION = "What is the deployment password rotation job named?"
SYSTEM = "You are a careful coding agent."
INSTRUCTIONS = "Answer tersely."


@dataclass
class Recorder:
    """The scripted model: a tool call for each new user prompt, then a text answer; it
    records every list of messages it was sent, and the instructions sent with them."""

    calls: list[list[ModelMessage]] = field(default_factory=list)
    instructions: list[str | None] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls.append(list(messages))
        self.instructions.append(info.instructions)
        last = messages[-1]
        prompts = [p for p in last.parts if isinstance(p, UserPromptPart)]
        if prompts and not str(prompts[-1].content).startswith("<recalled-context"):
            n = len(self.calls)
            return ModelResponse(
                parts=[
                    ToolCallPart("read_file", {"path": f"src/part{n}.py"}, tool_call_id=f"call-{n}")
                ]
            )
        return ModelResponse(parts=[TextPart("Done. " + "noted " * 30)])


def _agent(
    recorder: Recorder, history: MemctxHistory, *, as_processor: bool = False
) -> Agent[None, str]:
    capability: Any = ProcessHistory(history) if as_processor else history
    agent = Agent(
        FunctionModel(recorder),
        system_prompt=SYSTEM,
        instructions=INSTRUCTIONS,
        capabilities=[capability],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return f"# {path}\n" + "def helper(x):\n    return x + 1\n" * 40

    return agent


def _conversation(agent: Agent[None, str], turns: int) -> list[ModelMessage]:
    history: list[ModelMessage] | None = None
    for i in range(turns):
        text = f"Step {i}: look at module part{i}.py and its " + "helper functions " * 25
        if i == 1:
            text = f"{FACT} {text}"
        history = agent.run_sync(text, message_history=history).all_messages()
    assert history is not None
    return history


def _as_dicts(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """What the model was sent, as OpenAI dicts, written independently of the adapter."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": json.dumps(p.args)},
                }
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            out.append(
                {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}
            )
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": str(part.content),
                    }
                )
            elif isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": str(part.content)})
    return out


def _unpaired(messages: list[ModelMessage]) -> set[str]:
    """Tool call ids without their result (or results without their call)."""
    calls = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    results = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}
    return calls ^ results


def _texts(messages: list[ModelMessage]) -> list[str]:
    return [str(getattr(p, "content", "")) for m in messages for p in m.parts]


def test_memory_context_fits_the_window_keeps_pairs_and_recalls_a_trimmed_fact(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    memctx = MemctxHistory(store_dir=tmp_path, session_id="s1", window=WINDOW)
    agent = _agent(recorder, memctx)
    history = _conversation(agent, 9)
    result = agent.run_sync(QUESTION, message_history=history)

    counter = TokenCounter()
    for sent, instructions in zip(recorder.calls, recorder.instructions, strict=True):
        assert instructions == INSTRUCTIONS  # sent by Pydantic AI, untouched
        assert isinstance(sent[-1], ModelRequest)
        assert not _unpaired(sent)
        tokens = counter.count_messages(_as_dicts(sent)) + counter.count_text(INSTRUCTIONS)
        assert tokens <= WINDOW
        assert SYSTEM in _texts(sent[:1])  # the system prompt stays first
    # The window forced compactions: the run now keeps the compacted history, summary first.
    assert memctx.runner.stats.compactions >= 1
    kept = _texts(history)
    assert kept[0] == SYSTEM and kept[1].startswith("[Context compacted]")
    assert len(history) < 4 * 9
    asked = recorder.calls[-2]  # the question's call (the last one answers its tool result)
    # The message holding the fact is gone (a compaction summary may carry the fact too).
    assert not any(
        FACT in t and not t.startswith(("<recalled-context", "[Context compacted]"))
        for t in _texts(asked)
    )
    recalled = [t for t in _texts(asked) if t.startswith("<recalled-context")]
    assert recalled and "zebracorn-rotator" in recalled[0]
    # The recall block is for that one call: the run's stored history does not keep it.
    assert not any(t.startswith("<recalled-context") for t in _texts(result.all_messages()))
    assert memctx.runner.stats.failures == 0
    memctx.close()


def test_messages_the_strategy_kept_reach_the_model_as_the_original_objects(tmp_path: Path) -> None:
    recorder = Recorder()
    memctx = MemctxHistory(store_dir=tmp_path, session_id="s2", window=WINDOW)
    agent = _agent(recorder, memctx)
    history = _conversation(agent, 8)
    recorder.calls.clear()
    agent.run_sync("Next step: summarise part7.py", message_history=history)
    sent = recorder.calls[0]
    originals = {id(m) for m in history}
    kept = [m for m in sent if id(m) in originals]
    assert len(kept) >= 3  # the recent turns: not copies
    # The run ids and timestamps of what was kept are the originals' own.
    assert all(m.run_id is not None for m in kept)
    # And every message that is not an original carries something memctx made or changed.
    made = [m for m in sent[:-1] if id(m) not in originals]
    for message in made:
        texts = _texts([message])
        assert any(
            t.startswith(("<recalled-context", "[Context compacted]")) for t in texts
        ) or any(isinstance(p, ToolReturnPart) for p in message.parts), texts
    memctx.close()


def test_observation_masking_masks_old_tool_outputs_and_keeps_ids_and_names(tmp_path: Path) -> None:
    recorder = Recorder()
    memctx = MemctxHistory("observation-masking:keepLast=2", store_dir=tmp_path, window=20_000)
    agent = _agent(recorder, memctx)
    history = _conversation(agent, 6)
    sent = recorder.calls[-1]
    returns = [p for m in sent for p in m.parts if isinstance(p, ToolReturnPart)]
    originals = {
        p.tool_call_id: p for m in history for p in m.parts if isinstance(p, ToolReturnPart)
    }
    masked = [p for p in returns if p.content != originals[p.tool_call_id].content]
    assert masked and len(masked) < len(returns)
    assert all(p.tool_name == "read_file" and len(str(p.content)) < 400 for p in masked)
    assert not _unpaired(sent)
    # The run keeps the real outputs; only the model's view was masked.
    assert all(p.content.startswith("# src/") for p in originals.values())
    memctx.close()


def test_a_streamed_run_is_sent_the_trimmed_context(tmp_path: Path) -> None:
    received: list[list[ModelMessage]] = []

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        received.append(list(messages))
        yield "hello "
        yield "world"

    memctx = MemctxHistory("truncate", store_dir=tmp_path, window=8_000)
    agent = Agent(FunctionModel(stream_function=stream), capabilities=[memctx])

    async def conversation() -> list[ModelMessage]:
        history: list[ModelMessage] | None = None
        for i in range(10):
            async with agent.run_stream(
                f"turn {i} " + "word " * 600, message_history=history
            ) as run:
                assert await run.get_output() == "hello world"
            history = run.all_messages()
        assert history is not None
        return history

    history = asyncio.run(conversation())
    assert len(history) == 20  # the run keeps everything ...
    counter = TokenCounter()
    assert len(received[-1]) < len(history)  # ... the model got the window's worth
    assert counter.count_messages(_as_dicts(received[-1])) <= 8_000
    assert received[-1][-1] is history[-2]  # the new prompt, the agent's own object
    assert memctx.runner.stats.failures == 0
    memctx.close()


def test_a_context_without_the_new_request_is_not_sent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A window smaller than the reply's reserve: truncate keeps nothing of the conversation,
    # which Pydantic AI cannot send; the agent's own messages go instead, counted.
    memctx = MemctxHistory("truncate", store_dir=tmp_path, window=5_000)
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("word " * 3_000)])]
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        history, context, compacted = memctx.step(messages)
    assert context == messages and context[0] is messages[0] and history == messages
    assert not compacted and memctx.runner.stats.failures == 1
    assert "ValueError" in caplog.text and "word" not in caplog.text
    memctx.close()


class _Broken(BaseStrategy):
    name = "broken"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        raise RuntimeError("token sk-live-123 quoted from the conversation")


def test_a_failure_inside_memctx_leaves_the_agent_running_on_its_own_history(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = make_strategy("full", store_dir=tmp_path, session_id="s", window=WINDOW)
    memctx = MemctxHistory(_Broken(base.setup))  # type: ignore[attr-defined]
    recorder = Recorder()
    agent = _agent(recorder, memctx)
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        history = _conversation(agent, 3)
    first = len(recorder.calls)
    assert agent.run_sync("done?", message_history=history).output.startswith("Done.")
    assert memctx.runner.stats.failures == memctx.runner.stats.calls > 0
    # The model got the whole history, as the agent had it: the same objects.
    sent = recorder.calls[first]
    assert len(sent) == len(history) + 1
    assert all(a is b for a, b in zip(sent, history, strict=False))
    assert "RuntimeError" in caplog.text and "sk-live" not in caplog.text


def test_as_a_plain_history_processor_its_output_is_sent_and_stored(tmp_path: Path) -> None:
    recorder = Recorder()
    memctx = MemctxHistory("truncate", store_dir=tmp_path, window=WINDOW)
    agent = _agent(recorder, memctx, as_processor=True)
    history = _conversation(agent, 10)
    counter = TokenCounter()
    for sent in recorder.calls:
        assert not _unpaired(sent)
        assert counter.count_messages(_as_dicts(sent)) <= WINDOW
    # Pydantic AI stores what a processor returns: the history is the trimmed one.
    assert counter.count_messages(_as_dicts(history)) <= WINDOW
    assert memctx.runner.stats.calls == len(recorder.calls)
    memctx.close()


def _thinking_history(n: int, feedback: bool) -> list[ModelMessage]:
    messages: list[ModelMessage] = [
        ModelRequest(
            parts=[SystemPromptPart(SYSTEM), UserPromptPart("start")], instructions=INSTRUCTIONS
        )
    ]
    for i in range(n):
        calls = [
            ToolCallPart("read_file", {"path": f"f{i}-{k}"}, tool_call_id=f"c{i}-{k}")
            for k in range(1 + i % 3)
        ]
        messages.append(
            ModelResponse(parts=[ThinkingPart(f"think {i}"), TextPart(f"reading {i}"), *calls])
        )
        returns: list[Any] = [
            ToolReturnPart(
                "read_file", f"content {c.tool_call_id}\n" + "x = 1\n" * 200, c.tool_call_id
            )
            for c in calls
        ]
        if feedback and i % 2:
            returns.append(RetryFeedbackPart("try again", retry=RetryInfo("model_retry")))
        messages.append(ModelRequest(parts=returns))
    messages.append(ModelResponse(parts=[TextPart("ok")]))
    messages.append(ModelRequest(parts=[UserPromptPart("next")]))
    return messages


@pytest.fixture(scope="module")
def full_strategy(tmp_path_factory: pytest.TempPathFactory) -> Strategy:
    store = tmp_path_factory.mktemp("full")
    return make_strategy("full", store_dir=store, session_id="p", window=1_000_000)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 8), feedback=st.booleans())
def test_a_history_the_strategy_keeps_whole_comes_back_as_the_same_objects(
    full_strategy: Strategy, n: int, feedback: bool
) -> None:
    memctx = MemctxHistory(full_strategy)
    messages = _thinking_history(n, feedback)
    history, context, compacted = memctx.step(messages, INSTRUCTIONS)
    assert not compacted and memctx.runner.stats.failures == 0
    assert len(context) == len(messages) and all(
        a is b for a, b in zip(context, messages, strict=True)
    )
    assert len(history) == len(messages) and all(
        a is b for a, b in zip(history, messages, strict=True)
    )


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh store folder on each call (hypothesis examples cannot use tmp_path)."""
    return (tmp_path_factory.mktemp(f"store{i}") for i in itertools.count())


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(1, 12),
    feedback=st.booleans(),
    strategy=st.sampled_from(["truncate", "observation-masking:keepLast=1", "memory-context"]),
    window=st.sampled_from([5_000, 8_000, 16_000]),  # above the 4,000 reserved for the reply
)
def test_what_is_sent_is_paired_ends_with_a_request_and_keeps_the_originals_in_order(
    stores: Iterator[Path], n: int, feedback: bool, strategy: str, window: int
) -> None:
    memctx = MemctxHistory(strategy, store_dir=next(stores), window=window)
    messages = _thinking_history(n, feedback)
    _, context, _ = memctx.step(messages, INSTRUCTIONS)
    assert memctx.runner.stats.failures == 0
    assert isinstance(context[-1], ModelRequest) and not _unpaired(context)
    assert context[-1].parts[-1] is messages[-1].parts[-1]  # the new prompt is sent
    position = {id(m): i for i, m in enumerate(messages)}
    kept = [position[id(m)] for m in context if id(m) in position]
    assert kept == sorted(kept)  # the originals keep their order
    parts = {id(p) for m in messages for p in m.parts}
    for message in context:  # a copy holds the original's parts, or parts memctx made
        if id(message) not in position:
            for part in message.parts:
                assert id(part) in parts or isinstance(
                    part, UserPromptPart | SystemPromptPart | TextPart | ToolReturnPart
                )
    memctx.close()


def test_a_masked_result_keeps_its_place_in_its_request(tmp_path: Path) -> None:
    memctx = MemctxHistory("observation-masking:keepLast=1", store_dir=tmp_path, window=50_000)
    messages = _thinking_history(4, feedback=True)
    _, context, _ = memctx.step(messages, INSTRUCTIONS)
    assert len(context) == len(messages)
    for sent, original in zip(context, messages, strict=True):
        assert type(sent) is type(original)
        assert [type(p) for p in sent.parts] == [type(p) for p in original.parts]
        if sent is not original:  # a copy only where a tool output was masked
            assert isinstance(sent, ModelRequest) and sent.run_id == original.run_id
            ids = [getattr(p, "tool_call_id", None) for p in sent.parts]
            assert ids == [getattr(p, "tool_call_id", None) for p in original.parts]
    assert any(a is not b for a, b in zip(context, messages, strict=True))
    memctx.close()


def test_a_call_without_its_result_is_dropped_from_its_response_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    memctx = MemctxHistory("memory-context", store_dir=tmp_path, window=50_000)
    answered = ToolCallPart("read_file", {"path": "a"}, tool_call_id="a")
    response = ModelResponse(
        parts=[
            ThinkingPart("which files?"),
            TextPart("reading"),
            answered,
            ToolCallPart("read_file", {"path": "b"}, tool_call_id="b"),  # its result was lost
        ],
        provider_details={"kept": True},
    )
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart(SYSTEM), UserPromptPart("go")]),
        response,
        ModelRequest(parts=[ToolReturnPart("read_file", "A", "a")]),
        ModelResponse(parts=[TextPart("ok")]),
        ModelRequest(parts=[UserPromptPart("next")]),
    ]
    assert _unpaired(messages) == {"b"}
    _, context, _ = memctx.step(messages, None)
    assert not _unpaired(context)
    sent = context[1]
    assert isinstance(sent, ModelResponse) and sent is not response
    assert sent.parts == [response.parts[0], response.parts[1], answered]  # thinking, text kept
    assert sent.provider_details == {"kept": True}
    assert all(a is b for i, (a, b) in enumerate(zip(context, messages, strict=True)) if i != 1)
    memctx.close()


def test_an_ended_session_is_recalled_by_the_next_one_sharing_the_store(tmp_path: Path) -> None:
    config = MemoryContextConfig(cross_session=True)
    first = MemctxHistory(store_dir=tmp_path, session_id="monday", window=WINDOW, config=config)
    history = _conversation(_agent(Recorder(), first), 3)
    first.end_session(history)
    first.close()
    recorder = Recorder()
    second = MemctxHistory(store_dir=tmp_path, session_id="tuesday", window=WINDOW, config=config)
    _agent(recorder, second).run_sync(QUESTION)
    recalled = [t for t in _texts(recorder.calls[0]) if t.startswith("<recalled-context")]
    assert recalled and "zebracorn-rotator" in recalled[0]
    assert second.runner.stats.failures == 0
    second.close()


def test_a_name_without_a_store_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="store_dir"):
        MemctxHistory("memory-context")


def test_config_reaches_the_strategy(tmp_path: Path) -> None:
    config = MemoryContextConfig(reserve_tokens=1234)
    memctx = MemctxHistory("truncate", store_dir=tmp_path, window=WINDOW, config=config)
    assert memctx.runner.strategy.setup.config.reserve_tokens == 1234  # type: ignore[attr-defined]
    memctx.close()
