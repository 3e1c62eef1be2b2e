"""Worked cases of the provider pairing rules and their repair."""

from __future__ import annotations

import copy
from typing import Any

from memctx.messages.pairing import ViolationKind, pairing_violations, repair_tool_pairing


def _use(i: str, name: str = "read") -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": name, "input": {"path": f"{i}.py"}}


def _res(i: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": text}


def _kinds(messages: list[Any]) -> list[str]:
    return [v.kind.value for v in pairing_violations(messages)]


SYSTEM = {"role": "system", "content": "be careful"}
USER = {"role": "user", "content": "fix the parser"}


def test_one_orphan_among_three_results_keeps_the_other_two() -> None:
    messages = [
        SYSTEM,
        USER,
        {"role": "assistant", "content": [_use("a"), _use("b")]},
        {"role": "user", "content": [_res("a"), _res("gone"), _res("b")]},
    ]
    assert _kinds(messages) == ["orphan_result"]
    repaired = repair_tool_pairing(messages)
    assert [b["tool_use_id"] for b in repaired[3]["content"]] == ["a", "b"]
    assert repaired[:3] == messages[:3] and repaired[2] is messages[2]
    assert messages[3]["content"][1]["tool_use_id"] == "gone", "input must not be mutated"


def test_parallel_calls_with_one_lost_result_lose_only_that_call() -> None:
    messages = [
        USER,
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "reading"}, _use("a"), _use("b")],
        },
        {"role": "user", "content": [_res("a")]},
        {"role": "assistant", "content": "done"},
    ]
    assert _kinds(messages) == ["missing_result"]
    repaired = repair_tool_pairing(messages)
    assert [b.get("id") for b in repaired[1]["content"]] == [None, "a"]
    assert pairing_violations(repaired) == []


def test_duplicate_result_is_removed_and_first_kept() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": [_res("a", "first"), _res("a", "second")]},
    ]
    assert _kinds(messages) == ["duplicate_result"]
    repaired = repair_tool_pairing(messages)
    assert repaired[2]["content"] == [_res("a", "first")]


def test_trailing_call_without_result_is_removed_and_empty_message_dropped() -> None:
    messages = [USER, {"role": "assistant", "content": [_use("a")]}]
    assert _kinds(messages) == ["missing_result"]
    assert repair_tool_pairing(messages) == [USER]


def test_result_before_its_call_is_an_orphan_and_the_call_is_missing() -> None:
    messages = [
        USER,
        {"role": "user", "content": [_res("a")]},
        {"role": "assistant", "content": [{"type": "text", "text": "t"}, _use("a")]},
    ]
    assert sorted(_kinds(messages)) == ["missing_result", "orphan_result"]
    repaired = repair_tool_pairing(messages)
    assert repaired == [USER, {"role": "assistant", "content": [{"type": "text", "text": "t"}]}]


def test_consecutive_assistant_messages_are_one_turn_for_block_results() -> None:
    # Claude Code logs one record per block; Anthropic merges consecutive same-role messages.
    messages = [
        USER,
        {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": [_use("a")]},
        {"role": "assistant", "content": [_use("b")]},
        {"role": "user", "content": [_res("a")]},
        {"role": "user", "content": [_res("b")]},
    ]
    assert pairing_violations(messages) == []


def test_result_in_a_later_turn_is_orphaned() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": [_res("a")]},
        {"role": "assistant", "content": "next"},
        {"role": "user", "content": [_res("a")]},
    ]
    assert _kinds(messages) == ["orphan_result"]


def _oa_call(i: str) -> dict[str, Any]:
    return {"id": i, "type": "function", "function": {"name": "bash", "arguments": "{}"}}


def test_openai_tool_message_after_user_message_is_misplaced() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1")]},
        {"role": "user", "content": "wait"},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    assert sorted(_kinds(messages)) == ["misplaced_result", "missing_result"]
    repaired = repair_tool_pairing(messages)
    # The assistant message had nothing but the call: it goes, and so does the tool message.
    assert repaired == [USER, {"role": "user", "content": "wait"}]


def test_openai_tool_message_must_answer_the_directly_preceding_assistant() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": "a", "tool_calls": [_oa_call("c1")]},
        {"role": "assistant", "content": "b"},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    assert "misplaced_result" in _kinds(messages)
    repaired = repair_tool_pairing(messages)
    assert "tool_calls" not in repaired[1], "an empty tool_calls list is a provider error"
    assert repaired[1]["content"] == "a"
    assert pairing_violations(repaired) == []


def test_duplicate_call_ids_across_turns() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
    ]
    assert "duplicate_call" in _kinds(messages)
    repaired = repair_tool_pairing(messages)
    assert [m.get("content") for m in repaired] == ["fix the parser", None, "1"]


def test_gemini_calls_without_ids_pair_by_name_in_order() -> None:
    model = {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "read", "args": {"p": 1}}},
            {"functionCall": {"name": "read", "args": {"p": 2}}},
        ],
    }
    answer = {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "read", "response": {"o": 1}}},
            {"functionResponse": {"name": "read", "response": {"o": 2}}},
        ],
    }
    assert pairing_violations([USER, model, answer]) == []
    one_answer = copy.deepcopy(answer)
    one_answer["parts"].pop()
    assert _kinds([USER, model, one_answer]) == ["missing_result"]
    repaired = repair_tool_pairing([USER, model, one_answer])
    assert len(repaired[1]["parts"]) == 1


def test_pi_tool_result_role_and_call_spellings() -> None:
    for spelling in ("toolCall", "toolUse", "tool_use", "functionCall"):
        messages = [
            USER,
            {"role": "assistant", "content": [{"type": spelling, "id": "t1", "name": "bash"}]},
            {"role": "toolResult", "toolCallId": "t1", "toolName": "bash", "content": []},
        ]
        assert pairing_violations(messages) == [], spelling
        assert _kinds(messages[:2]) == ["missing_result"], spelling


def test_system_prompt_is_never_dropped_or_edited() -> None:
    odd_system = {"role": "system", "content": [_res("zz")]}
    messages = [odd_system, USER, {"role": "user", "content": [_res("orphan")]}]
    repaired = repair_tool_pairing(messages)
    assert repaired[0] is odd_system
    assert repaired == [odd_system, USER]


def test_thinking_alone_is_not_worth_keeping() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}, _use("a")]},
    ]
    assert repair_tool_pairing(messages) == [USER]


def test_unknown_fields_and_blocks_pass_through() -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "mystery", "payload": 1}, _use("a")],
        "x-trace": "keep",
    }
    repaired = repair_tool_pairing([USER, message])
    assert repaired[1] == {
        "role": "assistant",
        "content": [{"type": "mystery", "payload": 1}],
        "x-trace": "keep",
    }


def test_violation_reports_location() -> None:
    messages = [USER, {"role": "user", "content": [{"type": "text", "text": "x"}, _res("q")]}]
    (v,) = pairing_violations(messages)
    assert (v.kind, v.message_index, v.field, v.block_index, v.tool_id) == (
        ViolationKind.ORPHAN_RESULT,
        1,
        "content",
        1,
        "q",
    )
    assert "message 1 content[1]" in str(v)
