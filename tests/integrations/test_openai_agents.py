"""The OpenAI Agents SDK adapter: a real ``Agent`` run by ``Runner.run`` with a function tool.

The SDK ships no test model, so its real ``OpenAIResponsesModel`` (the real ``openai`` async
client) talks to a fake Responses endpoint on 127.0.0.1 that plays the model: a request
ending in a user's ``read <path>`` is answered with a ``read_file`` function call, a
function output with a short message, and a question with whatever the input it received
says (so an answer the context lacks is missing from the reply). The endpoint records every
request body: the assertions are on what the model received, as the SDK serialised it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    Session,
    SQLiteSession,
    function_tool,
)
from agents.run_config import CallModelData, ModelInputData
from aiohttp import web
from openai import AsyncOpenAI

from memctx import MemoryContextConfig, TokenCounter, pairing_violations
from memctx.integrations.openai_agents import MemctxInputFilter
from memctx.strategies import BaseStrategy, Prepared, StrategySetup, make_strategy

WINDOW = 6_000
INSTRUCTIONS = "You are a coding agent. Read files with read_file before answering."
FACT = "Remember: the deployment password rotation job is named zebracorn-rotator."
QUESTION = "What is the deployment password rotation job named?"
API_KEY = "sk-test-0123456789abcdef0123456789abcdef"
WORDS = ["parser", "token", "cache", "buffer", "socket", "thread", "schema", "router"]


SECRET = "sk-proj-Zq8vR2mN7xK4pL9wT3yB6cF1hJ5dG0sA"


def file_text(path: str) -> str:
    """What the tool returns: about 1,800 characters, different for every file."""
    if path.endswith(".env"):
        return f"OPENAI_API_KEY={SECRET}\nDEBUG=1"
    seed = sum(map(ord, path))
    body = " ".join(f"{WORDS[(seed + j) % 8]}{(seed * j) % 97}" for j in range(220))
    return f"# {path}\n{body}"


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return file_text(path)


def _response(number: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


@dataclass
class FakeResponses:
    """The fake model behind ``POST /v1/responses``; ``bodies`` is every request it got."""

    bodies: list[dict[str, Any]] = field(default_factory=list)
    reasons: bool = False  # a reasoning model: a reasoning item before every output item

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        number = len(self.bodies)
        response = _response(number, self.reasoning(number) + self.answer(body))
        if not body.get("stream"):
            return web.json_response(response)
        # Server-sent events: the SDK takes the model's output from ``response.completed``.
        stream = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await stream.prepare(request)
        created = {**response, "status": "in_progress", "output": []}
        events = [
            ("response.created", {"response": created}),
            ("response.completed", {"response": response}),
        ]
        for sequence, (kind, data) in enumerate(events):
            event = {"type": kind, "sequence_number": sequence, **data}
            await stream.write(f"event: {kind}\ndata: {json.dumps(event)}\n\n".encode())
        await stream.write_eof()
        return stream

    def reasoning(self, number: int) -> list[dict[str, Any]]:
        if not self.reasons:
            return []
        summary = [{"type": "summary_text", "text": "I should look at what was asked."}]
        return [{"type": "reasoning", "id": f"rs_{number}", "summary": summary}]

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        number = len(self.bodies)
        last = body["input"][-1]
        if last.get("type") == "function_call_output":
            return [_message(number, "Read it.")]
        asked = _text(last)
        read = re.match(r"read (\S+)", asked)
        if read:
            call = {
                "type": "function_call",
                "id": f"fc_{number}",
                "call_id": f"call_{number}",
                "name": "read_file",
                "arguments": json.dumps({"path": read.group(1)}),
                "status": "completed",
            }
            return [call]
        # A question: answer with the rotation job's name when the input holds it.
        found = re.search(r"zebracorn-\w+", json.dumps(body["input"]))
        return [_message(number, f"It is {found.group(0)}." if found else "I do not know.")]


def _message(number: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{number}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


@dataclass
class Recorded:
    """What the SDK gave the filter and what the filter gave back, per model call."""

    given: list[list[Any]] = field(default_factory=list)
    returned: list[list[Any]] = field(default_factory=list)


def recording(memctx_filter: MemctxInputFilter, calls: Recorded) -> Any:
    async def recorded(data: CallModelData[Any]) -> ModelInputData:
        calls.given.append(list(data.model_data.input))
        out = await memctx_filter(data)
        calls.returned.append(list(out.input))
        return out

    return recorded


async def converse(
    memctx_filter: MemctxInputFilter,
    prompts: list[str],
    calls: Recorded | None = None,
    *,
    reasons: bool = False,
    session: Session | None = None,
    streamed: bool = False,
) -> tuple[FakeResponses, list[str]]:
    """One conversation, one ``Runner.run`` per prompt (each continuing the last's items, or
    the ``session``'s), against a fake Responses endpoint; returns the endpoint and the final
    outputs."""
    fake = FakeResponses(reasons=reasons)
    app = web.Application()
    app.router.add_post("/v1/responses", fake.handle)
    server = web.AppRunner(app, access_log=None)
    await server.setup()
    site = web.TCPSite(server, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    client = AsyncOpenAI(api_key=API_KEY, base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    agent = Agent(
        name="coder",
        instructions=INSTRUCTIONS,
        tools=[read_file],
        model=OpenAIResponsesModel("gpt-test", client),
        model_settings=ModelSettings(),
    )
    hook = memctx_filter if calls is None else recording(memctx_filter, calls)
    run_config = RunConfig(call_model_input_filter=hook, tracing_disabled=True)
    outputs: list[str] = []
    items: list[Any] = []
    try:
        for prompt in prompts:
            ask = {"role": "user", "content": prompt}
            if session is not None:
                result = await Runner.run(agent, [ask], run_config=run_config, session=session)
            elif streamed:
                streaming = Runner.run_streamed(agent, [*items, ask], run_config=run_config)
                async for _ in streaming.stream_events():
                    pass
                result = streaming
                items = result.to_input_list()
            else:
                result = await Runner.run(agent, [*items, ask], run_config=run_config)
                items = result.to_input_list()
            outputs.append(str(result.final_output))
    finally:
        await client.close()
        await server.cleanup()
    return fake, outputs


def reads(count: int, start: int = 0) -> list[str]:
    return [f"read src/module_{i}.py" for i in range(start, start + count)]


def small_config() -> MemoryContextConfig:
    return MemoryContextConfig.model_validate({"reserveTokens": 500, "hardCapTokens": 600})


def as_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model received as memctx counts it: the instructions, then the input."""
    return [{"role": "system", "content": body["instructions"]}, *body["input"]]


def assert_calls_paired(items: list[dict[str, Any]]) -> None:
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert sorted(calls) == sorted(outputs) and len(set(calls)) == len(calls)
    for i, item in enumerate(items):  # each output comes after its call
        if item.get("type") == "function_call_output":
            assert any(
                p.get("type") == "function_call" and p["call_id"] == item["call_id"]
                for p in items[:i]
            )
    assert pairing_violations(items) == []


def assert_valid_items(items: list[dict[str, Any]]) -> None:
    """Every item is one the Responses API takes: a typed item, or an easy-input message."""
    for item in items:
        kind = item.get("type")
        if kind in ("function_call", "function_call_output", "reasoning"):
            continue
        assert kind in (None, "message"), item
        assert item["role"] in ("user", "assistant", "system", "developer"), item
        assert isinstance(item["content"], (str, list)), item


def assert_unchanged_items_are_the_sdks(calls: Recorded) -> None:
    """An item the filter sends unchanged is the SDK's own object of that call."""
    for given, returned in zip(calls.given, calls.returned, strict=True):
        ids = {id(g) for g in given}
        for item in returned:
            if any(item == g for g in given):
                assert id(item) in ids


def test_memory_context_fits_the_window_keeps_pairs_and_recalls_a_trimmed_fact(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    memctx_filter = MemctxInputFilter(
        store_dir=store, session_id="chat-1", window=WINDOW, config=small_config()
    )
    calls = Recorded()
    prompts = [FACT, "read config/.env", *reads(12), QUESTION]
    with caplog.at_level(logging.DEBUG, logger="memctx"):
        fake, outputs = asyncio.run(converse(memctx_filter, prompts, calls))
    stats = memctx_filter.runner.stats
    assert stats.failures == 0 and stats.calls == len(fake.bodies) == 2 * 13 + 2

    counter = TokenCounter()
    for body in fake.bodies:
        assert body["instructions"] == INSTRUCTIONS  # top-level, as the agent set them
        assert counter.count_messages(as_messages(body)) <= WINDOW
        assert_calls_paired(body["input"])
        assert_valid_items(body["input"])
    # The agent's history outgrew the window: what the model got is less than it.
    assert counter.count_messages(calls.given[-1]) > WINDOW
    assert len(fake.bodies[-1]["input"]) < len(calls.given[-1])
    assert_unchanged_items_are_the_sdks(calls)

    # Compacted, and every later call continued the compacted history (its summary sent
    # along, not one compaction per call) although each run handed over the full history.
    summaries = [
        sum(_text(i).startswith("[Context compacted]") for i in body["input"])
        for body in fake.bodies
    ]
    first = summaries.index(1)
    assert 1 <= stats.compactions < 4 and all(n == 1 for n in summaries[first:])

    # The fact's message was trimmed away, and came back in the recall block.
    last = fake.bodies[-1]["input"]
    assert {"role": "user", "content": FACT} not in last
    recalled = [i for i in last if "<recalled-context" in _text(i)]
    assert len(recalled) == 1 and "zebracorn-rotator" in _text(recalled[0])
    assert outputs[-1] == "It is zebracorn-rotator."
    assert last[-1] == {"role": "user", "content": QUESTION}
    memctx_filter.close()

    # What memctx wrote is redacted: the secret a tool read never reaches the store, nor the
    # client's API key (which the filter never sees), nor the log.
    files = [p for p in store.rglob("*") if p.is_file()]
    assert files and any(SECRET in json.dumps(body) for body in fake.bodies)
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data and API_KEY.encode() not in data, path
    assert SECRET not in caplog.text and API_KEY not in caplog.text


class _Broken(BaseStrategy):
    name = "broken"

    def prepare(self, transcript: list[dict[str, Any]]) -> Prepared:
        raise RuntimeError("secret sk-live-123 in the conversation")


def test_a_failure_inside_memctx_does_not_break_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = make_strategy("full", store_dir=tmp_path, session_id="s", window=WINDOW)
    broken = _Broken(base.setup)  # type: ignore[attr-defined]
    assert isinstance(broken.setup, StrategySetup)
    memctx_filter = MemctxInputFilter(broken)
    calls = Recorded()
    with caplog.at_level(logging.WARNING, logger="memctx.integrations"):
        fake, outputs = asyncio.run(converse(memctx_filter, reads(2), calls))
    assert outputs == ["Read it.", "Read it."]
    assert memctx_filter.runner.stats.failures == len(fake.bodies) == 4
    for given, returned in zip(calls.given, calls.returned, strict=True):
        assert all(r is g for r, g in zip(returned, given, strict=True))  # passed through
    assert "RuntimeError" in caplog.text and "sk-live" not in caplog.text
    memctx_filter.close()


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_observation_masking_masks_old_outputs_and_keeps_pairs(
    tmp_path: Path, streamed: bool
) -> None:
    memctx_filter = MemctxInputFilter(
        "observation-masking:keepLast=2", store_dir=tmp_path, session_id="m", window=WINDOW
    )
    calls = Recorded()
    fake, outputs = asyncio.run(converse(memctx_filter, reads(5), calls, streamed=streamed))
    assert outputs == ["Read it."] * 5
    assert all(bool(body.get("stream")) is streamed for body in fake.bodies)
    last = fake.bodies[-1]["input"]
    outputs = [i["output"] for i in last if i.get("type") == "function_call_output"]
    assert len(outputs) == 5
    assert all(o.startswith("[output of read_file omitted") for o in outputs[:3])
    assert outputs[3:] == [file_text("src/module_3.py"), file_text("src/module_4.py")]
    for body in fake.bodies:
        assert_calls_paired(body["input"])
        assert_valid_items(body["input"])
    assert_unchanged_items_are_the_sdks(calls)
    assert memctx_filter.runner.stats.failures == 0
    memctx_filter.close()


def _items(turns: int, start: int = 0) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(start, start + turns):
        path = f"src/module_{i}.py"
        items += [
            {"role": "user", "content": f"read {path}"},
            {
                "type": "function_call",
                "call_id": f"c{i}",
                "name": "read_file",
                "arguments": json.dumps({"path": path}),
            },
            {"type": "function_call_output", "call_id": f"c{i}", "output": file_text(path)},
        ]
    return items


def test_after_a_compaction_the_next_calls_continue_the_compacted_history(
    tmp_path: Path,
) -> None:
    memctx_filter = MemctxInputFilter(
        store_dir=tmp_path, session_id="c", window=WINDOW, config=small_config()
    )
    history = _items(14)
    first = memctx_filter.filter(ModelInputData(input=list(history), instructions=INSTRUCTIONS))
    assert memctx_filter.runner.stats.compactions == 1
    assert first.instructions == INSTRUCTIONS
    summary = [i for i in first.input if _text(i).startswith("[Context compacted]")]
    assert len(summary) == 1

    # The SDK rebuilds its items every call: equal dicts, new objects, one new at the end.
    rebuilt = [dict(i) for i in history] + _items(1, start=14)[:1]
    second = memctx_filter.filter(ModelInputData(input=rebuilt, instructions=INSTRUCTIONS))
    assert memctx_filter.runner.stats.compactions == 1  # continued, not compacted again
    assert summary[0] in second.input
    assert second.input[-1] is rebuilt[-1]  # the new request, last
    sent_ids = {id(i) for i in second.input}
    assert not sent_ids & {id(i) for i in history}  # this call's objects, not the last's
    assert_calls_paired(second.input)

    # Another conversation through the same filter starts over from the items it gets.
    other = _items(2, start=40)
    third = memctx_filter.filter(ModelInputData(input=other, instructions=None))
    assert third.instructions is None
    kept = [i for i in third.input if "<recalled-context" not in _text(i)]
    assert len(kept) == len(other) and all(a is b for a, b in zip(kept, other, strict=True))
    memctx_filter.close()
    assert memctx_filter.close() == {}


def test_a_strategy_name_without_a_store_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="store_dir"):
        MemctxInputFilter("memory-context")


def reasoning_breaks(items: list[dict[str, Any]]) -> list[str]:
    """Where a reasoning model's output items lost their reasoning item, or the reverse: the
    Responses API refuses both ("function_call was provided without its required 'reasoning'
    item", "reasoning was provided without its required following item")."""
    breaks = []
    for i, item in enumerate(items):
        kind = item.get("type")
        before = items[i - 1].get("type") if i else None
        after = items[i + 1].get("type") if i + 1 < len(items) else None
        if kind == "reasoning" and after not in ("function_call", "message"):
            breaks.append(f"{item['id']} without its following item")
        produced = kind == "function_call" or (kind == "message" and item["role"] == "assistant")
        if produced and before != "reasoning":
            breaks.append(f"{item['id']} without its reasoning item")
    return breaks


@pytest.mark.parametrize(
    "strategy",
    ["memory-context", "memory-context-hook", "truncate"],
)
def test_reasoning_items_stay_with_the_items_they_precede(tmp_path: Path, strategy: str) -> None:
    memctx_filter = MemctxInputFilter(
        strategy, store_dir=tmp_path, session_id="r", window=WINDOW, config=small_config()
    )
    fake, _ = asyncio.run(converse(memctx_filter, [FACT, *reads(12), QUESTION], reasons=True))
    assert reasoning_breaks(fake.bodies[0]["input"]) == []
    assert [reasoning_breaks(body["input"]) for body in fake.bodies] == [[]] * len(fake.bodies)
    memctx_filter.close()


def test_with_an_sdk_session_the_compacted_history_is_continued(tmp_path: Path) -> None:
    memctx_filter = MemctxInputFilter(
        store_dir=tmp_path, session_id="chat-s", window=WINDOW, config=small_config()
    )
    session = SQLiteSession("chat-s")  # in memory: the SDK's own history store
    fake, outputs = asyncio.run(
        converse(memctx_filter, [FACT, *reads(12), QUESTION], session=session)
    )
    stored = asyncio.run(session.get_items())
    assert len(stored) == 2 + 12 * 4 + 2  # the session keeps the full record
    counter = TokenCounter()
    summaries = []
    for body in fake.bodies:
        assert counter.count_messages(as_messages(body)) <= WINDOW
        assert_calls_paired(body["input"])
        summaries.append(sum(_text(i).startswith("[Context compacted]") for i in body["input"]))
    first = summaries.index(1)
    assert all(n == 1 for n in summaries[first:])  # session items continue the compaction
    assert 1 <= memctx_filter.runner.stats.compactions < 4
    assert outputs[-1] == "It is zebracorn-rotator."
    session.close()
    memctx_filter.close()


def shell_turns(turns: int, size: int) -> list[dict[str, Any]]:
    """A local-shell tool's calls and outputs (the SDK's ``LocalShellTool``): call and output
    items paired by ``call_id``, like ``function_call`` but of another type."""
    items: list[dict[str, Any]] = []
    for i in range(turns):
        action = {"type": "exec", "command": ["ls", f"dir{i}"], "env": {}}
        items += [
            {"role": "user", "content": f"list dir{i}"},
            {"type": "local_shell_call", "id": f"ls_{i}", "call_id": f"lc{i}", "action": action},
            {
                "type": "local_shell_call_output",
                "id": f"lo_{i}",
                "call_id": f"lc{i}",
                "output": f"dir{i}: " + "entry " * (size // 6),
            },
        ]
    return items


def test_other_call_item_types_are_never_separated_from_their_outputs(tmp_path: Path) -> None:
    broken = []
    for size in range(300, 3_000, 60):
        memctx_filter = MemctxInputFilter(
            "truncate", store_dir=tmp_path, session_id=f"t{size}", window=WINDOW
        )
        items = [*shell_turns(12, size), {"role": "user", "content": "what now?"}]
        sent = memctx_filter.filter(ModelInputData(input=items, instructions=INSTRUCTIONS)).input
        calls = {i["call_id"] for i in sent if i.get("type") == "local_shell_call"}
        outputs = {i["call_id"] for i in sent if i.get("type") == "local_shell_call_output"}
        if calls != outputs:
            broken.append(size)
        memctx_filter.close()
    assert broken == []


def test_instructions_too_long_for_the_window_are_cut_and_stay_top_level(tmp_path: Path) -> None:
    memctx_filter = MemctxInputFilter(
        "memory-context-hook", store_dir=tmp_path, session_id="i", window=WINDOW
    )
    instructions = "Follow the house style. " + "Rule: keep functions short. " * 2_000
    items = _items(2)
    out = memctx_filter.filter(ModelInputData(input=list(items), instructions=instructions))
    assert out.instructions is not None and len(out.instructions) < len(instructions)
    assert out.instructions.startswith("Follow the house style.")
    assert all(i.get("role") != "system" for i in out.input)
    body = {"instructions": out.instructions, "input": out.input}
    assert TokenCounter().count_messages(as_messages(body)) <= WINDOW
    assert_calls_paired(out.input)
    memctx_filter.close()


def test_close_archives_the_conversation_for_the_next_one(tmp_path: Path) -> None:
    config = MemoryContextConfig.model_validate({"crossSession": True})
    first = MemctxInputFilter(store_dir=tmp_path, session_id="monday", window=WINDOW, config=config)
    asyncio.run(converse(first, [FACT, *reads(1)]))
    first.close()  # ends the session: its history goes to the archive
    second = MemctxInputFilter(
        store_dir=tmp_path, session_id="tuesday", window=WINDOW, config=config
    )
    fake, outputs = asyncio.run(converse(second, [QUESTION]))
    (body,) = fake.bodies
    recalled = [i for i in body["input"] if "<recalled-context" in _text(i)]
    assert len(recalled) == 1 and "zebracorn-rotator" in _text(recalled[0])
    assert outputs == ["It is zebracorn-rotator."]
    second.close()
