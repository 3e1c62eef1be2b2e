"""MemctxMiddleware in a real LangChain v1 agent (``create_agent``) with LangChain's fake model.

The model is ``GenericFakeChatModel`` with one addition LangChain's fakes lack, ``bind_tools``
(``create_agent`` binds the agent's tools to the model), and it records every message list it
receives, so the tests check what the model was actually sent. A second middleware, inside
memctx's, records each request as memctx handed it on, next to the agent's state, to check
that unchanged messages are the state's own objects.
"""

from __future__ import annotations

import asyncio
import logging
import re
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from memctx import MemoryContextConfig, TokenCounter, pairing_violations
from memctx.integrations.langchain_middleware import MemctxMiddleware
from memctx.strategies import BaseStrategy, Prepared, make_strategy
from tests.strategies import examples

WINDOW = 6_000
FACT = "zebracorn-rotator"
QUESTION = "What is the deployment password rotation job named?"
DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


class ToolCallingFakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, plus ``bind_tools`` and a record of its inputs."""

    received: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.received.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def _script() -> Iterator[AIMessage]:
    """Each user turn: one call of the tool, then a short answer."""
    n = 0
    while True:
        yield AIMessage(
            content="", tool_calls=[{"name": "read_module", "args": {"n": n}, "id": f"call-{n}"}]
        )
        yield AIMessage(content=f"Read module {n}; it looks fine.")
        n += 1


@tool
def read_module(n: int) -> str:
    """Read module number n of the project."""
    return f"# part{n}.py\n" + "".join(
        f"def helper_{n}_{i}(x):\n    return x + {i}\n" for i in range(25)
    )


def _turn_text(i: int) -> str:
    text = f"Step {i}: please review module part{i}.py and " + "its helper functions " * 30
    if i == 1:
        text = f"Remember: the deployment password rotation job is named {FACT}. " + text
    return text


class Recorder(AgentMiddleware[AgentState[Any], Any, Any]):
    """Records each request after memctx's middleware (which is outside this one)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest[Any]] = []

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        self.requests.append(request)
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        self.requests.append(request)
        return await handler(request)


def _agent(
    middleware: MemctxMiddleware,
    system: str | SystemMessage = "You are a careful coding agent.",
    outer: Sequence[AgentMiddleware[AgentState[Any], Any, Any]] = (),
) -> tuple[Any, ToolCallingFakeModel, Recorder]:
    model = ToolCallingFakeModel(messages=_script())
    recorder = Recorder()
    agent = create_agent(
        model,
        tools=[read_module],
        system_prompt=system,
        middleware=[*outer, middleware, recorder],
        checkpointer=InMemorySaver(),
    )
    return agent, model, recorder


def _dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    return [convert_to_openai_messages(m) for m in messages]


def _check_every_call(model: ToolCallingFakeModel) -> None:
    counter = TokenCounter()
    for sent in model.received:
        dicts = _dicts(sent)
        assert counter.count_messages(dicts) <= WINDOW
        assert not pairing_violations(dicts)


def _converse(agent: Any, turns: int, thread: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    for i in range(turns):
        agent.invoke({"messages": [HumanMessage(_turn_text(i))]}, config)
    return config


def test_a_long_agent_run_fits_the_window_compacts_the_state_and_recalls_a_trimmed_fact(
    tmp_path: Path,
) -> None:
    memctx = MemctxMiddleware(store_dir=tmp_path / "store", session_id="lc-e2e", window=WINDOW)
    agent, model, recorder = _agent(memctx)
    config = _converse(agent, 14, "t1")
    result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)
    assert result["messages"][-1].content.startswith("Read module")  # the agent ran to the end

    assert len(model.received) == 2 * 15
    _check_every_call(model)
    assert memctx.runner.stats.calls == 30 and memctx.runner.stats.failures == 0

    # The strategy compacted and the agent's state followed: it no longer holds every
    # message of the run, it starts from memctx's summary, and the turns after it are intact.
    assert memctx.runner.stats.compactions >= 1
    state = agent.get_state(config).values["messages"]
    assert len(state) < 4 * 15
    assert any("[Context compacted]" in str(m.content) for m in state)
    assert state[-1].id == result["messages"][-1].id
    assert state[-2].content == read_module.invoke({"n": 14})
    assert all(m.id for m in state)
    assert not pairing_violations(_dicts(state))

    # The message with the fact is gone from what the model got; the recall block brings it back.
    last = model.received[-2]  # the question's first call (the last one answers the tool result)
    assert isinstance(last[-1], HumanMessage) and last[-1].content == QUESTION
    plain = [m for m in last if "<recalled-context" not in str(m.content)]
    recalled = [m for m in last if "<recalled-context" in str(m.content)]
    assert not any("Remember: the deployment" in str(m.content) for m in plain)
    assert recalled and FACT in str(recalled[0].content)
    assert last[0].type == "system" and last[0].content == "You are a careful coding agent."

    # What memctx handed on: unchanged messages are the state's own objects (ids and all).
    for request in recorder.requests:
        by_id = {m.id: m for m in request.state["messages"]}
        kept = [m for m in request.messages if m.id in by_id]
        assert kept and all(m is by_id[m.id] for m in kept)
        assert request.system_message is not None
    memctx.close()


class _Broken(BaseStrategy):
    name = "broken"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        raise RuntimeError("secret sk-live-123 in the conversation")


def test_a_failure_inside_memctx_does_not_break_the_agent_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = make_strategy("full", store_dir=tmp_path, session_id="s", window=WINDOW)
    memctx = MemctxMiddleware(_Broken(base.setup))  # type: ignore[attr-defined]
    agent, model, recorder = _agent(memctx)
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        config = _converse(agent, 3, "t-broken")
    state = agent.get_state(config).values["messages"]
    assert len(state) == 4 * 3 and state[-1].content == "Read module 2; it looks fine."
    # The model got the agent's own request each time, untouched.
    assert [r.messages for r in recorder.requests] == [m[1:] for m in model.received]
    assert recorder.requests[-1].messages == state[:-1]
    assert memctx.runner.stats.failures == 6
    assert "RuntimeError" in caplog.text and "sk-live" not in caplog.text


def test_observation_masking_masks_old_tool_results_for_the_model_only(tmp_path: Path) -> None:
    memctx = MemctxMiddleware(
        "observation-masking:keepLast=2", store_dir=tmp_path, session_id="mask", window=WINDOW
    )
    agent, model, _ = _agent(memctx)
    config = _converse(agent, 4, "t-mask")
    sent = model.received[-1]
    results = [m for m in sent if isinstance(m, ToolMessage)]
    full = read_module.invoke({"n": 0})
    assert len(results) == 4
    masked = [m for m in results if m.content != read_module.invoke({"n": int(m.tool_call_id[5:])})]
    assert masked and len(masked) == 2
    state = agent.get_state(config).values["messages"]
    for m in masked:  # the masked result keeps its message (id, tool_call_id, name) ...
        (original,) = [s for s in state if s.id == m.id]
        assert m is not original and m.tool_call_id == original.tool_call_id
        assert m.name == original.name == "read_module"
    assert full in [s.content for s in state]  # ... and the state keeps the full text
    assert memctx.runner.stats.compactions == 0 and memctx.runner.stats.failures == 0
    _check_every_call(model)
    memctx.close()


def test_the_async_agent_compacts_and_fits_the_window(tmp_path: Path) -> None:
    memctx = MemctxMiddleware(store_dir=tmp_path, session_id="lc-async", window=WINDOW)
    agent, model, _ = _agent(memctx)

    async def run() -> dict[str, Any]:
        config = {"configurable": {"thread_id": "t-async"}}
        for i in range(12):
            await agent.ainvoke({"messages": [HumanMessage(_turn_text(i))]}, config)
        return config

    config = asyncio.run(run())
    _check_every_call(model)
    assert memctx.runner.stats.compactions >= 1 and memctx.runner.stats.failures == 0
    assert len(agent.get_state(config).values["messages"]) < 4 * 12
    memctx.close()


class _NotesInSystem(BaseStrategy):
    """Adds a line to the system prompt, as the planner strategy adds its session summary."""

    name = "notes-in-system"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        system, *rest = transcript
        return Prepared(context=[{**system, "content": system["content"] + NOTE}, *rest])


NOTE = "\n\nNotes: the tests must stay green."


def test_a_system_prompt_memctx_edits_stays_the_agents_message_with_the_new_text(
    tmp_path: Path,
) -> None:
    base = make_strategy("full", store_dir=tmp_path, session_id="s", window=WINDOW)
    memctx = MemctxMiddleware(_NotesInSystem(base.setup))  # type: ignore[attr-defined]
    prompt = SystemMessage("You are terse.", id="sys-1", additional_kwargs={"origin": "app"})
    agent, model, recorder = _agent(memctx, prompt)
    _converse(agent, 2, "t-system")
    for sent, request in zip(model.received, recorder.requests, strict=True):
        system = sent[0]
        assert [m.type for m in sent].count("system") == 1
        assert system.content == "You are terse." + NOTE
        assert system.id == "sys-1" and system.additional_kwargs == {"origin": "app"}
        assert request.system_message is system
        assert all(m is s for m, s in zip(request.messages, request.state["messages"], strict=True))
    assert memctx.runner.stats.failures == 0


class _SecondSystem(BaseStrategy):
    """Inserts a second system message after the prompt."""

    name = "second-system"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        system, *rest = transcript
        return Prepared(context=[system, {"role": "system", "content": "Extra rule."}, *rest])


def test_system_messages_memctx_adds_reach_the_model_as_one_leading_system_message(
    tmp_path: Path,
) -> None:
    base = make_strategy("full", store_dir=tmp_path, session_id="s", window=WINDOW)
    memctx = MemctxMiddleware(_SecondSystem(base.setup))  # type: ignore[attr-defined]
    agent, model, _ = _agent(memctx, "You are terse.")
    _converse(agent, 1, "t-second")
    for sent in model.received:
        assert [m.type for m in sent].count("system") == 1
        assert sent[0].type == "system" and sent[0].content == "You are terse.\n\nExtra rule."
        assert sent[1].type == "human"
    assert memctx.runner.stats.failures == 0


def test_a_later_session_recalls_what_an_ended_one_said(tmp_path: Path) -> None:
    config = MemoryContextConfig.model_validate({"crossSession": True})
    first = MemctxMiddleware(store_dir=tmp_path, session_id="a", window=WINDOW, config=config)
    agent, _, _ = _agent(first)
    thread = _converse(agent, 3, "t-a")  # short: nothing archived while it runs
    first.end_session(agent.get_state(thread).values["messages"])
    first.close()
    assert first.runner.stats.failures == 0

    second = MemctxMiddleware(store_dir=tmp_path, session_id="b", window=WINDOW, config=config)
    agent, model, _ = _agent(second)
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "t-b"}})
    recalled = [m for m in model.received[0] if "<recalled-context" in str(m.content)]
    assert recalled and FACT in str(recalled[0].content)
    second.close()


class DateNote(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware that adds a message to each request (not to the state)."""

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        note = HumanMessage("Today is Monday.")
        return handler(request.override(messages=[note, *request.messages]))


def test_a_request_a_middleware_outside_changed_never_replaces_the_state(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memctx = MemctxMiddleware(store_dir=tmp_path, session_id="outer", window=WINDOW)
    agent, model, _ = _agent(memctx, outer=[DateNote()])
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        config = _converse(agent, 12, "t-outer")
    # The state keeps everything; memctx goes on from its own compacted history (the
    # runner's continuation), so the same messages are not compacted on every later call.
    assert memctx.runner.stats.compactions >= 1 and memctx.runner.stats.failures == 0
    assert memctx.runner.stats.compactions < memctx.runner.stats.calls // 4
    state = agent.get_state(config).values["messages"]
    assert len(state) == 4 * 12  # nothing of the state lost, the note never written into it
    assert not any(m.content == "Today is Monday." for m in state)
    assert caplog.text.count("put MemctxMiddleware first") == 1
    _check_every_call(model)
    memctx.close()


def test_a_second_thread_is_passed_through_and_never_sees_the_first_ones_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memctx = MemctxMiddleware(store_dir=tmp_path, session_id="one", window=WINDOW)
    agent, model, recorder = _agent(memctx)
    first = _converse(agent, 12, "t-first")  # the fact is archived in this thread's session
    calls = len(model.received)
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        for _ in range(2):
            other = {"configurable": {"thread_id": "t-other"}}
            agent.invoke({"messages": [HumanMessage(QUESTION)]}, other)
    for sent, request in zip(model.received[calls:], recorder.requests[calls:], strict=True):
        assert sent[1:] == request.state["messages"]  # the agent's own request, unchanged
        assert not any("<recalled-context" in str(m.content) for m in sent)
    assert memctx.runner.stats.failures == 4
    assert caplog.text.count("build one per thread") == 1
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, first)  # the first thread still works
    assert any("<recalled-context" in str(m.content) for m in model.received[-2])
    assert memctx.runner.stats.failures == 4
    memctx.close()


@st.composite
def _conversations(draw: st.DrawFn) -> list[BaseMessage]:
    """Turns of a user request, an assistant making 0-3 parallel tool calls, their results
    (of very different sizes) and a closing answer, as LangChain messages with ids."""
    out: list[BaseMessage] = []
    for turn in range(draw(st.integers(1, 12))):
        out.append(HumanMessage("request " * draw(st.integers(1, 400)), id=f"h{turn}"))
        calls = [f"c{turn}-{k}" for k in range(draw(st.integers(0, 3)))]
        if calls:
            out.append(
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "read_module", "args": {"n": turn}, "id": c} for c in calls
                    ],
                    id=f"a{turn}",
                )
            )
            for c in calls:
                text = "line of output\n" * draw(st.integers(0, 600))
                out.append(ToolMessage(text, tool_call_id=c, name="read_module", id=f"t{c}"))
        out.append(AIMessage(f"answer {turn}", id=f"r{turn}"))
    out.append(HumanMessage("and now?", id="last"))
    return out


@settings(max_examples=examples(50), deadline=None)
@given(
    _conversations(),
    st.sampled_from(["truncate", "observation-masking:keepLast=1"]),  # memory-context: above
    st.integers(6_000, 30_000),  # truncate's budget is window - reserveTokens (4,000)
)
def test_what_the_model_gets_is_paired_within_the_window_and_the_agents_own_objects(
    conversation: list[BaseMessage], strategy: str, window: int
) -> None:
    system = SystemMessage("You are a careful coding agent.", id="sys")
    sent: list[ModelRequest[Any]] = []

    def handler(request: ModelRequest[Any]) -> ModelResponse[Any]:
        sent.append(request)
        return ModelResponse(result=[AIMessage("ok")])

    with tempfile.TemporaryDirectory() as store:
        memctx = MemctxMiddleware(strategy, store_dir=store, session_id="p", window=window)
        messages: list[Any] = list(conversation)
        request = ModelRequest(
            model=ToolCallingFakeModel(messages=_script()),
            messages=messages,
            system_message=system,
            state=AgentState(messages=messages),
        )
        memctx.wrap_model_call(request, handler)
        memctx.close()
    assert memctx.runner.stats.failures == 0
    (got,) = sent
    assert got.system_message is system
    dicts = _dicts([system, *got.messages])
    assert not pairing_violations(dicts)
    assert TokenCounter().count_messages(dicts) <= window
    by_id = {m.id: m for m in conversation}
    originals = [m for m in got.messages if any(m is o for o in conversation)]
    positions = [conversation.index(m) for m in originals]
    assert positions == sorted(positions)  # the agent's order kept
    for m in got.messages:
        original = by_id.get(m.id)
        if original is not None and m is not original:  # memctx cut a tool result's text
            assert isinstance(m, ToolMessage) and isinstance(original, ToolMessage)
            assert m.tool_call_id == original.tool_call_id and m.name == original.name
    assert got.messages[-1] is conversation[-1]  # the latest request always goes


def test_a_strategy_name_without_a_store_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="store_dir"):
        MemctxMiddleware("memory-context")


def test_the_documented_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    blocks = [b for b in blocks if "MemctxMiddleware" in b]  # the LangChain section's
    assert blocks
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the example's store goes here
    namespace: dict[str, Any] = {"__name__": "doc_example"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    stats = namespace["memctx"].runner.stats  # the example's long conversation was compacted
    assert stats.compactions >= 1 and stats.failures == 0
