"""Message anatomy across the four provider shapes, and tolerance of malformed input."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings

from memctx.messages import recalled_block_text
from memctx.messages.anatomy import (
    BlockKind,
    RoleKind,
    inspect_message,
    message_text,
    role_kind,
    token_text,
    with_tool_id,
)
from memctx.messages.markers import is_recalled_block
from tests.strategies import examples, hostile_messages


def test_openai_assistant_with_tool_calls() -> None:
    msg = {
        "role": "assistant",
        "content": "checking",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"cmd":"ls"}'},
            }
        ],
    }
    info = inspect_message(msg)
    assert info.kind is RoleKind.ASSISTANT
    assert info.text == "checking"
    assert info.tool_call_ids == ("c1",)
    assert info.tool_names == ("bash",)
    assert '"cmd":"ls"' in token_text(msg) and "bash" in token_text(msg)


def test_openai_tool_message_and_swe_agent_id_list() -> None:
    assert inspect_message(
        {"role": "tool", "tool_call_id": "c1", "content": "out"}
    ).tool_result_ids == ("c1",)
    swe = {"role": "tool", "tool_call_ids": ["c9"], "content": [{"type": "text", "text": "x"}]}
    info = inspect_message(swe)
    assert info.kind is RoleKind.TOOL and info.tool_result_ids == ("c9",)
    assert message_text(swe) == "x"


def test_anthropic_blocks_thinking_and_error_flag() -> None:
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "s"},
            {"type": "text", "text": "I'll read it"},
            {"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "/a.py"}},
        ],
    }
    info = inspect_message(assistant)
    assert [b.kind for b in info.blocks] == [
        BlockKind.THINKING,
        BlockKind.TEXT,
        BlockKind.TOOL_CALL,
    ]
    assert info.text == "I'll read it"  # thinking is not the message's text
    assert "plan" in token_text(assistant) and "/a.py" in token_text(assistant)
    user = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu1",
                "is_error": True,
                "content": [{"type": "text", "text": "No such file"}],
            },
        ],
    }
    uinfo = inspect_message(user)
    assert uinfo.tool_result_ids == ("tu1",) and uinfo.is_error and uinfo.is_tool_result_only
    assert message_text(user) == "No such file"


def test_pi_shapes() -> None:
    call = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "p1", "name": "edit", "arguments": {"a": 1}}],
    }
    assert inspect_message(call).tool_call_ids == ("p1",)
    result = {
        "role": "toolResult",
        "toolCallId": "p1",
        "toolName": "edit",
        "isError": True,
        "content": [{"type": "text", "text": "failed"}],
    }
    info = inspect_message(result)
    assert info.kind is RoleKind.TOOL and info.tool_result_ids == ("p1",) and info.is_error
    assert info.tool_names == ("edit",)


def test_gemini_parts() -> None:
    model = {
        "role": "model",
        "parts": [{"text": "ok"}, {"functionCall": {"name": "f", "args": {"x": 1}}}],
    }
    info = inspect_message(model)
    assert (
        info.kind is RoleKind.ASSISTANT
        and info.tool_call_ids == (None,)
        and info.tool_names == ("f",)
    )
    resp = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "f", "id": "g1", "response": {"error": "boom"}}}],
    }
    rinfo = inspect_message(resp)
    assert rinfo.tool_result_ids == ("g1",) and rinfo.is_error


def test_recalled_block_detection() -> None:
    assert is_recalled_block({"role": "user", "content": recalled_block_text("")})
    assert not is_recalled_block({"role": "assistant", "content": "<recalled-context>"})
    assert not is_recalled_block({"role": "user", "content": "talk about <recalled-context> tags"})


def test_unknown_role_and_non_dicts() -> None:
    for junk in (None, 3, "text", [], {"content": "no role"}, {"role": 5}, {"role": "alien"}):
        assert role_kind(junk) is RoleKind.UNKNOWN
        inspect_message(junk)


@settings(max_examples=examples(200), deadline=None)
@given(hostile_messages)
def test_malformed_messages_never_crash_and_are_not_mutated(message: Any) -> None:
    snapshot = copy.deepcopy(message)
    info = inspect_message(message)
    message_text(message)
    token_text(message)
    assert isinstance(info.text, str)
    assert message == snapshot


def test_info_cache_reads_each_dict_once_and_notices_replaced_content() -> None:
    from memctx.messages.anatomy import InfoCache

    cache = InfoCache()
    messages = [{"role": "user", "content": f"m{i}"} for i in range(10)]
    first = cache.infos(messages)
    assert cache.misses == 10 and cache.hits == 0
    assert cache.infos(messages) == first and cache.hits == 10 and cache.misses == 10
    messages[3]["content"] = [{"type": "tool_result", "tool_use_id": "x", "content": "r"}]
    assert cache.info(messages[3]).tool_result_ids == ("x",)
    assert cache.misses == 11
    assert cache.info(dict(messages[4])) == first[4]  # equal dict, new identity: read again
    assert cache.misses == 12


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def test_hostile_values_read_without_raising() -> None:
    huge = 10**5000  # str() refuses ints over 4,300 digits
    deep = _deep(10_000)  # json.dumps and str() overflow the stack
    tool = {"role": "tool", "tool_call_id": "a", "content": huge}
    assert message_text(tool) == hex(huge)
    assert inspect_message({"role": "tool", "tool_call_id": huge}).tool_result_ids == (hex(huge),)
    deep_tool = {"role": "tool", "tool_call_id": "a", "content": deep}
    assert inspect_message(deep_tool).tool_result_ids == ("a",)
    assert message_text(deep_tool) == "<unreadable list>"
    unhashable = {"role": "user", "content": [{"type": []}, {"type": {"a": 1}}, {"type": 3}]}
    assert [b.kind for b in inspect_message(unhashable).blocks] == [BlockKind.OTHER] * 3
    for message in (
        {"role": "user", "content": huge},
        {"role": "user", "content": deep},
        {"role": "assistant", "content": [{"type": "tool_use", "id": huge, "input": deep}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": deep}]},
        {"role": "tool", "content": [{"type": []}, {"type": "tool_result", "content": huge}]},
        {"role": "model", "parts": [{"functionResponse": {"name": "f", "response": deep}}]},
    ):
        info = inspect_message(message)
        assert info.kind in (RoleKind.USER, RoleKind.ASSISTANT, RoleKind.TOOL)
        token_text(message)
        message_text(message)


# Every place a call or result id is written, in each shape the readers know.
_FN = {"name": "bash", "arguments": "{}"}
WITH_IDS: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "x", "function": _FN}, {"id": "y", "function": _FN}],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "t"},
            {"type": "tool_use", "id": "x", "name": "read", "input": {}},
            {"type": "toolCall", "id": "y", "name": "edit", "arguments": {}},
        ],
    },
    {"role": "assistant", "content": [{"type": "functionCall", "functionCall": {"id": "x"}}]},
    {"role": "model", "parts": [{"text": "t"}, {"functionCall": {"name": "f", "id": "x"}}]},
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "x", "content": "ok"},
            {"type": "toolResult", "toolCallId": "y"},
            {"type": "tool_result", "tool_use_id": None, "id": "z"},
        ],
    },
    {"role": "user", "content": {"type": "tool_result", "tool_use_id": "x"}},
    {"role": "user", "parts": [{"functionResponse": {"name": "f", "id": "x", "response": {}}}]},
    {"role": "function", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
    {"role": "tool", "tool_call_id": "x", "content": "out"},
    {"role": "toolResult", "toolCallId": "x", "content": []},
    {"role": "tool", "tool_call_ids": ["x", "w"], "content": "out"},  # SWE-agent
    {"role": "tool", "tool_call_id": None, "tool_call_ids": ["x"], "content": "out"},
]


def test_with_tool_id_writes_what_the_readers_read() -> None:
    for message in WITH_IDS:
        snapshot = copy.deepcopy(message)
        before = inspect_message(message).blocks
        tools = [
            p
            for p, b in enumerate(before)
            if b.kind in (BlockKind.TOOL_CALL, BlockKind.TOOL_RESULT)
        ]
        assert tools, message
        for at in tools:
            after = inspect_message(with_tool_id(message, before[at], "fresh-2")).blocks
            assert [b.tool_id for b in after] == [
                "fresh-2" if p == at else b.tool_id for p, b in enumerate(before)
            ], message
            assert [(b.kind, b.field, b.index, b.text, b.tool_name) for b in after] == [
                (b.kind, b.field, b.index, b.text, b.tool_name) for b in before
            ]
        assert message == snapshot, "the original must not change"
