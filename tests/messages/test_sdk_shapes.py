"""Messages as the OpenAI and Anthropic SDKs hand them over: read, trimmed, repaired, given back.

Real SDK objects (pydantic models) go through ``MemoryContext.on_context``: what memctx keeps
unchanged comes back as the caller's object, a changed message as its dict form, and the
result, read back as dicts, breaks no pairing rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock
from openai.types.chat import ChatCompletionMessage

from memctx import MemoryContextConfig
from memctx.messages import RoleKind, inspect_message
from memctx.messages.markers import is_recalled_block
from memctx.messages.pairing import pairing_violations
from memctx.messages.sdk import SdkMessages, as_message_dict, describe_unreadable
from memctx.messages.tokens import (
    TokenCounter,
    estimate_message_tokens,
    estimate_messages_tokens,
)
from memctx.runtime.engine import MemoryContext

WINDOW = 20_000
DECISION = "Decision: the payment webhook lives in src/pay/hook.py"


def openai_call(i: int) -> ChatCompletionMessage:
    return ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path": "f{i}.py"}}'},
                }
            ],
        }
    )


def anthropic_call(i: int) -> Message:
    return Message.model_validate(
        {
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": f"Reading f{i}.py"},
                {"type": "tool_use", "id": f"toolu_{i}", "name": "read_file", "input": {"i": i}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def output(i: int) -> str:
    words = ["lorem", "ipsum", "dolor", "amet", "tempor", "magna", "aliqua"]
    return f"file {i}: " + " ".join(words[(i + j) % 7] for j in range(500))


def as_dicts(messages: list[Any]) -> list[dict[str, Any]]:
    out = [as_message_dict(m) for m in messages]
    assert all(m is not None for m in out)
    return [m for m in out if m is not None]


def test_openai_message_reads_like_its_dict() -> None:
    message = openai_call(1)
    read = as_message_dict(message)
    assert read is not None
    info = inspect_message(read)
    assert info.kind is RoleKind.ASSISTANT and info.tool_call_ids == ("call_1",)
    assert info.tool_names == ("read_file",)


def test_anthropic_message_reads_as_its_request_form() -> None:
    read = as_message_dict(anthropic_call(2))
    assert read is not None and set(read) == {"role", "content"}  # no id, model, usage
    info = inspect_message(read)
    assert info.tool_call_ids == ("toolu_2",) and info.text == "Reading f2.py"


def test_blocks_as_objects_mixed_with_dicts_are_read() -> None:
    tool_use = ToolUseBlock(type="tool_use", id="toolu_9", name="ls", input={"d": "."})
    assistant = {"role": "assistant", "content": [TextBlock(type="text", text="hi"), tool_use]}
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "a.py"}],
    }
    read = [as_message_dict(assistant), as_message_dict(result)]
    assert read[1] is result  # a plain dict is itself
    assert inspect_message(read[0]).tool_call_ids == ("toolu_9",)
    assert pairing_violations([{"role": "user", "content": "go"}, *read]) == []
    assert assistant["content"][1] is tool_use  # the caller's dict is never edited


def test_what_is_no_message_stays_unread() -> None:
    for item in (None, 3, "text", object()):
        assert as_message_dict(item) is None
    sdk = SdkMessages()
    read, originals = sdk.read([None, {"role": "user", "content": "x"}])
    assert read[0] is None and not originals


def test_the_same_object_reads_as_the_same_dict_every_turn() -> None:
    sdk = SdkMessages()
    message = openai_call(3)
    first, _ = sdk.read([message])
    second, _ = sdk.read([message])
    assert first[0] is second[0]


def test_unreadable_shapes_are_described_without_content() -> None:
    described = describe_unreadable({"type": "web_search_call", "secret": "sk-do-not-log"})
    assert "web_search_call" in described and "secret" in described
    assert "sk-do-not-log" not in described


def session(call: Any, result: Any, n: int) -> list[Any]:
    msgs: list[Any] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": DECISION},
        {"role": "assistant", "content": "Understood, webhook in src/pay/hook.py."},
    ]
    for i in range(n):
        msgs += [{"role": "user", "content": f"read file {i}"}, call(i), result(i)]
    msgs.append({"role": "user", "content": "now run the linter over the tests folder"})
    return msgs


def openai_result(i: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"call_{i}", "content": output(i)}


def anthropic_result(i: int) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": output(i)}
    return {"role": "user", "content": [block]}


@pytest.mark.parametrize(
    ("call", "result"), [(openai_call, openai_result), (anthropic_call, anthropic_result)]
)
def test_sdk_objects_through_on_context_trim_recall_and_pair(
    tmp_path: Path, call: Any, result: Any
) -> None:
    msgs = session(call, result, 30)
    assert estimate_messages_tokens(as_dicts(msgs)) > 14_000
    config = MemoryContextConfig()
    with MemoryContext(
        config, store_dir=tmp_path / "s", session_id="s1", context_window_tokens=WINDOW
    ) as mem:
        out = mem.on_context(msgs)
        assert mem.stats()["counts"]["trims"] == 1
        assert len(out) < len(msgs)
        given = {id(m) for m in msgs}
        objects = [m for m in out if not isinstance(m, dict)]
        assert objects and all(id(m) in given for m in objects)  # kept: the caller's objects
        read = as_dicts(out)
        assert pairing_violations(read) == []
        assert estimate_messages_tokens(read) <= WINDOW - 4000
        later = mem.on_context(
            [
                *out,
                {"role": "assistant", "content": "Linter is clean."},
                {"role": "user", "content": "where does the payment webhook live?"},
            ]
        )
        blocks = [m for m in later if isinstance(m, dict) and is_recalled_block(m)]
        assert len(blocks) == 1 and "src/pay/hook.py" in blocks[0]["content"]
        assert pairing_violations(as_dicts(later)) == []
        assert mem.stats()["counts"].get("unknown_messages", 0) == 0


def test_an_sdk_call_left_without_its_result_is_repaired(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "content": "go"},
        openai_call(1),  # its tool result was lost
        {"role": "user", "content": "and now?"},
    ]
    with MemoryContext(
        MemoryContextConfig(),
        store_dir=tmp_path / "s",
        session_id="s1",
        context_window_tokens=WINDOW,
    ) as mem:
        out = mem.on_context(msgs)
    assert pairing_violations(as_dicts(out)) == []
    assert all(inspect_message(m).tool_call_ids == () for m in as_dicts(out))
    assert out[0] is msgs[0] and out[-1] is msgs[-1]


def test_unknown_items_are_counted_logged_once_and_cost_tokens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    unknown = {"type": "web_search_call", "id": "ws_1", "action": {"query": "x" * 3000}}
    assert estimate_message_tokens(unknown) > 1000
    msgs = [{"role": "user", "content": "search"}, unknown, {"role": "user", "content": "go on"}]
    with MemoryContext(
        MemoryContextConfig(),
        store_dir=tmp_path / "s",
        session_id="s1",
        context_window_tokens=WINDOW,
    ) as mem:
        with caplog.at_level("WARNING", logger="memctx"):
            mem.on_context(msgs)
            mem.on_context([*msgs, {"type": "file_search_call", "id": "fs_1"}])
        assert mem.stats()["counts"]["unknown_messages"] == 2
    warned = [r.getMessage() for r in caplog.records if "cannot read" in r.getMessage()]
    assert len(warned) == 1 and "web_search_call" in warned[0] and "xxx" not in warned[0]


def test_responses_sdk_items_read_as_items() -> None:
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

    item = ResponseFunctionToolCall(
        type="function_call", call_id="c1", name="sh", arguments="{}", id="fc_1", status="completed"
    )
    message = ResponseOutputMessage.model_validate(
        {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        }
    )
    read = [as_message_dict(item), as_message_dict(message)]
    assert inspect_message(read[0]).tool_call_ids == ("c1",)
    assert inspect_message(read[1]).text == "hi"
    answered = [{"role": "user", "content": "go"}, read[0]]
    answered.append({"type": "function_call_output", "call_id": "c1", "output": "ok"})
    assert pairing_violations(answered) == []


def test_an_unknown_item_nested_past_the_recursion_limit_or_circular_still_costs_tokens() -> None:
    deep: dict[str, Any] = {"type": "x_call", "v": "leaf " * 100}
    for _ in range(5_000):  # deeper than json.dumps and repr can go
        deep = {"type": "x_call", "inner": deep}
    circular: dict[str, Any] = {"type": "x_call", "text": "word " * 600}
    circular["self"] = circular
    for item in (deep, circular):
        assert estimate_message_tokens(item) > 150
        assert TokenCounter().count_message(item) == estimate_message_tokens(item)
