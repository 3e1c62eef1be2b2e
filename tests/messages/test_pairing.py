"""Worked cases of the provider pairing rules and their repair."""

from __future__ import annotations

import copy
import operator
from typing import Any

import pytest
from helpers.datasets import dataset_path

from memctx.messages import inspect_message, message_text
from memctx.messages.pairing import (
    ViolationKind,
    pairing_violations,
    repair_tool_pairing,
    repair_with_sources,
)
from memctx.transcripts import load_transcript
from tests.strategies import FORMATS, Call, Turn, rename_ids, render


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


def test_openai_tool_message_after_user_message_moves_before_it() -> None:
    # OpenAI wants the tool messages right after the assistant message: the user's
    # interjection goes after them, and nothing is lost.
    messages = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1")]},
        {"role": "user", "content": "wait"},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    assert _kinds(messages) == ["result_not_first"]
    repaired = repair_tool_pairing(messages)
    assert [id(m) for m in repaired] == [id(messages[i]) for i in (0, 1, 3, 2)]
    assert pairing_violations(repaired) == []


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


def test_duplicate_call_ids_across_turns_are_renamed_not_dropped() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
    ]
    snapshot = copy.deepcopy(messages)
    assert _kinds(messages) == ["duplicate_call", "orphan_result"]
    repaired = repair_tool_pairing(messages)
    assert messages == snapshot, "the caller's dicts must not be edited"
    assert [m.get("content") for m in repaired] == ["fix the parser", None, "1", None, "2"]
    assert repaired[:3] == messages[:3] and all(map(operator.is_, repaired[:3], messages[:3]))
    assert repaired[3]["tool_calls"][0]["id"] == "c1-2"
    assert repaired[3]["tool_calls"][0]["function"] is messages[3]["tool_calls"][0]["function"]
    assert repaired[4] == {"role": "tool", "tool_call_id": "c1-2", "content": "2"}
    assert pairing_violations(repaired) == []
    assert repair_tool_pairing(repaired) == repaired


def test_renamed_ids_skip_ids_in_use_and_are_deterministic() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": [_res("a")]},
        {"role": "assistant", "content": [_use("a-2")]},
        {"role": "user", "content": [_res("a-2")]},
        {"role": "assistant", "content": [_use("a"), _use("a")]},
        {"role": "user", "content": [_res("a", "x"), _res("a", "y")]},
    ]
    repaired = repair_tool_pairing(messages)
    assert [b["id"] for b in repaired[5]["content"]] == ["a-3", "a-4"]
    assert [(b["tool_use_id"], b["content"]) for b in repaired[6]["content"]] == [
        ("a-3", "x"),
        ("a-4", "y"),
    ]
    assert pairing_violations(repaired) == []
    assert repair_tool_pairing(messages) == repaired


def test_a_reused_id_within_one_turn_keeps_its_first_call() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a"), _use("a")]},
        {"role": "user", "content": [_res("a", "first"), _res("a", "second")]},
    ]
    repaired = repair_tool_pairing(messages)
    assert [b["id"] for b in repaired[1]["content"]] == ["a", "a-2"]
    assert [b["tool_use_id"] for b in repaired[2]["content"]] == ["a", "a-2"]
    assert pairing_violations(repaired) == []


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


# --- Anthropic: the results open the user turn that answers the calls -----------------------


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def test_user_text_before_the_results_is_rejected_and_the_results_move_first() -> None:
    # Anthropic merges the two user messages into [text, tool_result] and answers 400:
    # "Did not find 1 tool_result block(s) at the beginning of this message".
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": "also X"},
        {"role": "user", "content": [_res("a")]},
    ]
    (v,) = pairing_violations(messages)
    assert (v.kind, v.message_index, v.tool_id) == (ViolationKind.RESULT_NOT_FIRST, 3, "a")
    repaired, sources = repair_with_sources(messages)
    # The result-only message moves as it is; the user's text follows it, untouched.
    assert sources == [0, 1, 3, 2]
    assert [id(m) for m in repaired] == [id(messages[i]) for i in sources]
    assert pairing_violations(repaired) == []
    # Text after all the results, in their message or the next, is what Anthropic expects.
    after = [*messages[:2], {"role": "user", "content": [_res("a"), _text("thanks")]}, USER]
    assert pairing_violations(after) == []


def test_a_result_after_text_in_the_same_message_moves_to_its_front() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a"), _use("b")]},
        {"role": "user", "content": [_res("a"), _text("look"), _res("b")]},
    ]
    assert _kinds(messages) == ["result_not_first"]
    repaired = repair_tool_pairing(messages)
    assert repaired[2]["content"] == [_res("a"), _res("b"), _text("look")]
    assert all(any(b is s for s in messages[2]["content"]) for b in repaired[2]["content"])
    assert messages[2]["content"][1] == _text("look"), "input must not be mutated"


def test_late_results_join_the_turn_before_its_first_text() -> None:
    # A string interjection, then a message with text and a result: the result goes to the
    # front of the turn, the string content becomes a text block with the same words.
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": "also X"},
        {"role": "user", "content": [_text("and Y"), _res("a")]},
    ]
    assert _kinds(messages) == ["result_not_first"]
    repaired, sources = repair_with_sources(messages)
    assert repaired[2:] == [
        {"role": "user", "content": [_res("a"), _text("also X")]},
        {"role": "user", "content": [_text("and Y")]},
    ]
    assert sources == [0, 1, 2, 3]  # edited copies, each of the message in its place
    assert pairing_violations(repaired) == []


def test_late_results_join_a_result_only_message_already_in_front() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a"), _use("b")]},
        {"role": "user", "content": [_res("a")]},
        {"role": "user", "content": [_text("note"), _res("b")]},
    ]
    repaired = repair_tool_pairing(messages)
    assert repaired[2:] == [
        {"role": "user", "content": [_res("a"), _res("b")]},
        {"role": "user", "content": [_text("note")]},
    ]


def test_gemini_response_after_user_text_moves_first() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {}}}]}
    note = {"role": "user", "parts": [{"text": "hurry"}]}
    messages = [USER, call, note, answer]
    assert _kinds(messages) == ["result_not_first"]
    assert repair_tool_pairing(messages) == [USER, call, answer, note]


# --- one provider's shape per pair ----------------------------------------------------------


def test_openai_call_answered_by_an_anthropic_block_is_a_format_mismatch() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": "reading", "tool_calls": [_oa_call("c1")]},
        {"role": "user", "content": [_res("c1")]},
    ]
    assert sorted(_kinds(messages)) == ["format_mismatch", "missing_result"]
    # No provider takes the pair: it goes; the assistant's own text stays.
    assert repair_tool_pairing(messages) == [USER, {"role": "assistant", "content": "reading"}]


def test_anthropic_call_answered_by_an_openai_tool_message_is_a_format_mismatch() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_text("reading"), _use("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "out"},
    ]
    assert sorted(_kinds(messages)) == ["format_mismatch", "missing_result"]
    repaired = repair_tool_pairing(messages)
    assert repaired == [USER, {"role": "assistant", "content": [_text("reading")]}]


def test_a_matching_answer_wins_over_a_mismatched_one() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [_use("a")]},
        {"role": "user", "content": [_res("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "out"},
    ]
    assert _kinds(messages) == ["format_mismatch"]
    assert repair_tool_pairing(messages) == messages[:3]


def test_gemini_call_answered_by_an_anthropic_block_is_a_format_mismatch() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "read", "id": "g1"}}]}
    messages = [USER, call, {"role": "user", "content": [_res("g1")]}]
    assert sorted(_kinds(messages)) == ["format_mismatch", "missing_result"]
    assert pairing_violations(repair_tool_pairing(messages)) == []


def test_each_provider_pairs_with_its_own_result_shapes() -> None:
    oa = {"role": "assistant", "content": None, "tool_calls": [_oa_call("c")]}
    legacy = {"role": "assistant", "content": None, "function_call": {"name": "bash"}}
    gemini = {"role": "model", "parts": [{"functionCall": {"name": "bash", "id": "c"}}]}
    accepted = [
        [oa, {"role": "tool", "tool_call_id": "c", "content": "x"}],
        [legacy, {"role": "function", "name": "bash", "content": "x"}],
        [{"role": "assistant", "content": [_use("c")]}, {"role": "user", "content": [_res("c")]}],
        [
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "bash"}]},
            {"role": "toolResult", "toolCallId": "c", "content": []},
        ],
        [gemini, {"role": "user", "parts": [{"functionResponse": {"name": "bash", "id": "c"}}]}],
        [gemini, {"role": "function", "parts": [{"functionResponse": {"name": "bash"}}]}],
    ]
    for pair in accepted:
        assert pairing_violations([USER, *pair]) == [], pair
    rejected = [
        [oa, {"role": "toolResult", "toolCallId": "c", "content": []}],
        [
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "bash"}]},
            {"role": "tool", "tool_call_id": "c", "content": "x"},
        ],
        [gemini, {"role": "tool", "tool_call_id": "c", "content": "x"}],
    ]
    for pair in rejected:
        assert "format_mismatch" in _kinds([USER, *pair]), pair


# --- hostile input ----------------------------------------------------------------------------


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"a": value}
    return value


# (message, whether repair keeps it after an assistant turn calling "a")
HOSTILE = [
    ({"role": "user", "content": 10**5000}, True),
    ({"role": "user", "content": _deep(10_000)}, True),
    ({"role": "user", "content": [{"type": []}, {"type": {"x": 1}}]}, True),
    ({"role": "tool", "tool_call_id": "a", "content": 10**5000}, True),
    ({"role": "tool", "tool_call_id": "a", "content": _deep(10_000)}, True),
    ({"role": "user", "content": [{**_res("a"), "content": _deep_dict(10_000)}]}, True),
    ({"role": "tool", "tool_call_id": 10**5000, "content": "x"}, False),  # answers nothing
    ({"role": "assistant", "content": [{**_use("b"), "input": _deep_dict(10_000)}]}, False),
    ({"role": "assistant", "content": [{"type": "tool_use", "id": 10**5000, "name": "x"}]}, False),
]


def test_hostile_messages_never_raise_and_pass_through() -> None:
    for hostile, kept in HOSTILE:
        call: dict[str, Any] = {"role": "assistant", "content": [_use("a")]}
        if hostile["role"] == "tool":  # answered in OpenAI's shape: called in it too
            call = {"role": "assistant", "content": None, "tool_calls": [_oa_call("a")]}
        messages = [USER, call, hostile]
        pairing_violations(messages)
        repaired = repair_tool_pairing(messages)
        assert pairing_violations(repaired) == []
        assert any(m is hostile for m in repaired) is kept
        # Also with nothing around it, and twice in a row.
        pairing_violations([hostile])
        assert pairing_violations(repair_tool_pairing([hostile, hostile])) == []


def test_a_hostile_payload_still_answers_its_call() -> None:
    for content in (10**5000, _deep(10_000), _deep_dict(10_000)):
        answer = {"role": "tool", "tool_call_id": "c1", "content": content}
        messages = [USER, {"role": "assistant", "tool_calls": [_oa_call("c1")]}, answer]
        assert pairing_violations(messages) == []
        assert repair_tool_pairing(messages)[2] is answer


# --- a call id reused by a later, unrelated call ---------------------------------------------

SWE_AGENT_REPLAY = (
    "replay__marshmallow-code__marshmallow-1867__function_calling__install-1__"
    "marshmallow-code__marshmallow-1867.traj"
)


def _call_ids(messages: list[Any]) -> list[str | None]:
    return [i for m in messages for i in inspect_message(m).tool_call_ids]


@pytest.mark.dataset
def test_swe_agent_replay_reusing_call_ids_keeps_every_message() -> None:
    # SWE-agent's replay gave later, unrelated calls the ids of earlier ones: messages 8, 18
    # and 20 reuse call_5iDd... (first used at 6), 12 reuses call_ahTo... (10), 14 reuses
    # call_q3Vs... (4). Repair used to drop their five tool messages and the five calls.
    path = dataset_path("swe-agent", SWE_AGENT_REPLAY)
    messages = load_transcript(path).messages
    before = pairing_violations(messages)
    assert [(v.kind.value, v.message_index) for v in before] == [
        (kind, at + step)
        for at in (8, 12, 14, 18, 20)
        for kind, step in (("duplicate_call", 0), ("orphan_result", 1))
    ]
    repaired = repair_tool_pairing(messages)
    assert pairing_violations(repaired) == []
    assert len(repaired) == len(messages) == 24
    assert [message_text(m) for m in repaired] == [message_text(m) for m in messages]
    ids = _call_ids(repaired)
    assert len(set(ids)) == len(ids)
    reused = "call_5iDdbOYybq7L19vqXmR0DPaU"
    assert [_call_ids([repaired[i]])[0] for i in (6, 8, 18, 20)] == [
        reused,
        f"{reused}-2",
        f"{reused}-3",
        f"{reused}-4",
    ]
    for index in (8, 12, 14, 18, 20):  # each renamed call is answered under its new id
        answer = inspect_message(repaired[index + 1])
        assert list(answer.tool_result_ids) == _call_ids([repaired[index]])


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_reused_id_is_renamed_in_every_format(fmt: str) -> None:
    turns = [
        Turn(None, "reading", None, [Call("read", {"path": "a.py"}, "one")]),
        Turn("next", "again", None, [Call("grep", {"path": "b.py"}, "two")]),
        Turn("more", "once more", None, [Call("read", {"path": "c.py"}, "three")]),
    ]
    messages = render(fmt, True, turns)
    first, *later = _call_ids(messages)
    for call_id in later:  # every later call and its result take the first call's id
        for message in messages:
            rename_ids(message, call_id, first)
    assert {v.kind.value for v in pairing_violations(messages)} == {
        "duplicate_call",
        "orphan_result",
    }
    snapshot = copy.deepcopy(messages)
    repaired = repair_tool_pairing(messages)
    assert messages == snapshot
    assert pairing_violations(repaired) == []
    assert [m["mid"] for m in repaired] == [m["mid"] for m in messages]
    assert _call_ids(repaired) == [first, f"{first}-2", f"{first}-3"]
    assert [message_text(m) for m in repaired] == [message_text(m) for m in messages]
