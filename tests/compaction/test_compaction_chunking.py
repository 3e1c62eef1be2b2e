"""Chunking for summaries: by token share, by max tokens, history pruning, and the tool units
no cut may separate, in every format the strategies generate."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from compaction_support import assistant, call, calls, result, user, words
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.compaction import (
    DEFAULT_PARTS,
    chunk_messages_by_max_tokens,
    prune_history_for_context_share,
    split_messages_by_token_share,
)
from memctx.messages import estimate_message_tokens, pairing_violations
from memctx.messages.units import tool_spans
from tests.strategies import FORMATS, compaction_conversations, examples

_settings = settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def sized(*tokens: int) -> tuple[list[dict[str, Any]], Any]:
    messages = [user(f"m{i}") | {"size": t} for i, t in enumerate(tokens)]
    return messages, lambda m: m["size"]


def ids(chunks: list[list[Any]]) -> list[list[int]]:
    return [[id(m) for m in chunk] for chunk in chunks]


def flat(chunks: list[list[Any]]) -> list[Any]:
    return [m for chunk in chunks for m in chunk]


TOOL_TURN = [
    user("fix the parser"),  # 0
    calls(("c1", "read", {"path": "a.py"}), ("c2", "grep", {"q": "x"})),  # 1
    result("c1", "contents of a.py"),  # 2
    result("c2", "no match"),  # 3
    assistant("found it"),  # 4
]


# --- tool spans ----------------------------------------------------------------------------


def test_a_call_and_all_its_results_are_one_span() -> None:
    assert tool_spans(TOOL_TURN) == [range(0, 1), range(1, 4), range(4, 5)]
    assert tool_spans([]) == []


def test_interleaved_calls_merge_into_one_span() -> None:
    messages = [
        call("a", "read", path="x"),
        call("b", "read", path="y"),  # a damaged order: b's call before a's result
        result("a", "x"),
        result("b", "y"),
        user("next"),
    ]
    assert tool_spans(messages) == [range(0, 4), range(4, 5)]


def test_gemini_results_without_ids_pair_with_the_nearest_earlier_call() -> None:
    messages = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {}}}]},
        {"role": "model", "parts": [{"text": "done"}]},
    ]
    assert tool_spans(messages) == [range(0, 1), range(1, 3), range(3, 4)]


# --- split by token share ------------------------------------------------------------------


def test_split_makes_pieces_of_about_equal_tokens() -> None:
    messages, count = sized(10, 10, 10, 10)
    assert ids(split_messages_by_token_share(messages, 2, count=count)) == ids(
        [messages[:2], messages[2:]]
    )
    pieces = split_messages_by_token_share(messages, 3, count=count)
    assert len(pieces) == 3 and flat(pieces) == messages
    assert DEFAULT_PARTS == 2


def test_split_closes_a_piece_before_it_would_pass_the_share() -> None:
    messages, count = sized(30, 5, 5, 40)  # total 80, share 40: 30+5+5 = 40 does not pass
    assert ids(split_messages_by_token_share(messages, 2, count=count)) == ids(
        [messages[:3], messages[3:]]
    )


def test_split_clamps_parts_and_handles_nothing() -> None:
    messages, count = sized(10, 10)
    assert len(split_messages_by_token_share(messages, 9, count=count)) == 2
    assert ids(split_messages_by_token_share(messages, 0, count=count)) == ids([messages])
    assert split_messages_by_token_share([], 2) == []


def test_split_never_cuts_inside_a_tool_unit() -> None:
    big = [*TOOL_TURN[:2], result("c1", words("out", 300)), TOOL_TURN[3], TOOL_TURN[4]]
    pieces = split_messages_by_token_share(big, 2)
    # The huge unit would pass the share: the piece closes before it, and the call stays
    # with both of its results.
    assert ids(pieces) == ids([big[:1], big[1:]])
    assert all(pairing_violations(p) == [] for p in pieces)


# --- chunk by max tokens -------------------------------------------------------------------


def test_an_oversized_single_message_is_a_chunk_alone() -> None:
    messages, count = sized(10, 10, 500, 10, 10)
    chunks = chunk_messages_by_max_tokens(messages, 50, count=count)
    assert ids(chunks) == ids([messages[:2], [messages[2]], messages[3:]])


def test_an_oversized_message_after_a_full_chunk_is_still_alone() -> None:
    messages, count = sized(45, 500)
    assert ids(chunk_messages_by_max_tokens(messages, 50, count=count)) == ids(
        [[messages[0]], [messages[1]]]
    )


def test_chunks_never_pass_the_limit_otherwise() -> None:
    messages, count = sized(20, 20, 20, 20, 20)
    chunks = chunk_messages_by_max_tokens(messages, 45, count=count)
    assert ids(chunks) == ids([messages[:2], messages[2:4], messages[4:]])


def test_a_call_with_a_huge_result_is_one_chunk_never_cut() -> None:
    turn = [
        user("go"),
        call("c1", "bash", cmd="make"),
        result("c1", words("log", 400)),
        assistant("ok"),
    ]
    chunks = chunk_messages_by_max_tokens(turn, 50)
    assert ids(chunks) == ids([[turn[0]], turn[1:3], [turn[3]]])


@pytest.mark.parametrize("bad", [0, -3, True, 2.5])
def test_chunk_rejects_a_bad_limit(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_messages_by_max_tokens(TOOL_TURN, bad)
    assert chunk_messages_by_max_tokens([], 10) == []


# --- properties in every format ------------------------------------------------------------


def _units_of(messages: list[Any]) -> dict[int, range]:
    return {i: u for u in tool_spans(messages) for i in u}


@pytest.mark.parametrize("fmt", FORMATS)
def test_chunks_and_pieces_never_separate_a_call_from_its_result(fmt: str) -> None:
    @_settings
    @given(compaction_conversations(fmt), st.integers(1, 4000), st.integers(1, 5))
    def check(messages: list[Any], max_tokens: int, parts: int) -> None:
        assert pairing_violations(messages) == []
        snapshot = copy.deepcopy(messages)
        unit_of = _units_of(messages)
        position = {id(m): i for i, m in enumerate(messages)}

        chunks = chunk_messages_by_max_tokens(messages, max_tokens)
        assert [id(m) for m in flat(chunks)] == [id(m) for m in messages]
        for chunk in chunks:
            assert chunk, "an empty chunk"
            assert pairing_violations(chunk) == [], chunk
            size = sum(estimate_message_tokens(m) for m in chunk)
            first = unit_of[position[id(chunk[0])]]
            if size > max_tokens:  # only one unit may pass the limit, alone
                assert len(chunk) == len(first), "an oversized unit shares its chunk"
        for i, message in enumerate(messages):
            unit = unit_of[i]
            if len(unit) == 1 and estimate_message_tokens(message) > max_tokens:
                assert [message] in chunks, "an oversized message is not alone"

        pieces = split_messages_by_token_share(messages, parts)
        assert [id(m) for m in flat(pieces)] == [id(m) for m in messages]
        assert 1 <= len(pieces) <= parts
        for piece in pieces:
            assert piece and pairing_violations(piece) == [], piece
        assert messages == snapshot

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_pruning_keeps_a_valid_newest_part_within_the_share(fmt: str) -> None:
    @_settings
    @given(
        compaction_conversations(fmt),
        st.integers(50, 20_000),
        st.sampled_from([0.1, 0.3, 0.5, 0.9]),
    )
    def check(messages: list[Any], window: int, share: float) -> None:
        snapshot = copy.deepcopy(messages)
        pruned = prune_history_for_context_share(
            messages, max_context_tokens=window, max_history_share=share
        )
        assert messages == snapshot
        budget = max(1, int(window * share))
        assert pruned.budget_tokens == budget
        assert pairing_violations(pruned.kept) == []
        # Valid input: nothing is edited, every message is kept or dropped, in order.
        assert [id(m) for m in pruned.dropped + pruned.kept] == [id(m) for m in messages]
        assert pruned.kept_tokens == sum(estimate_message_tokens(m) for m in pruned.kept)
        assert pruned.dropped_tokens == sum(estimate_message_tokens(m) for m in pruned.dropped)
        assert (pruned.dropped_chunks > 0) == bool(pruned.dropped)
        if pruned.kept_tokens > budget:  # over the share only when one piece is left
            assert len(split_messages_by_token_share(pruned.kept, 2)) <= 1
        if pruned.dropped:  # it stopped as soon as the rest fitted
            total = sum(estimate_message_tokens(m) for m in messages)
            assert total > budget

    check()


def test_pruning_drops_the_oldest_half_each_round_and_reports_it() -> None:
    messages, count = sized(100, 100, 100, 100, 100, 100, 100, 100)
    pruned = prune_history_for_context_share(
        messages, max_context_tokens=500, max_history_share=0.5, count=count
    )
    # 800 > 250: drop 4 (400 left), then 2 (200 left).
    assert pruned.dropped_chunks == 2
    assert [id(m) for m in pruned.kept] == [id(m) for m in messages[6:]]
    assert (pruned.dropped_tokens, pruned.kept_tokens, pruned.budget_tokens) == (600, 200, 250)


def test_pruning_counts_a_result_repair_removed_as_dropped() -> None:
    # A damaged history: an orphan result in the kept part is removed by the repair, and
    # reported as dropped so that the caller can still summarise it.
    a, b, c, d = (user(f"{x} " * 200) for x in "abcd")
    orphan = result("zz", "orphan output")
    pruned = prune_history_for_context_share([a, b, c, orphan, d], max_context_tokens=600)
    assert pruned.dropped_chunks == 1
    assert [id(m) for m in pruned.kept] == [id(c), id(d)]
    assert [id(m) for m in pruned.dropped] == [id(a), id(b), id(orphan)]
    assert pairing_violations(pruned.kept) == []


def test_pruning_does_nothing_when_the_history_fits() -> None:
    pruned = prune_history_for_context_share(TOOL_TURN, max_context_tokens=100_000)
    assert pruned.dropped == [] and pruned.dropped_chunks == 0
    assert [id(m) for m in pruned.kept] == [id(m) for m in TOOL_TURN]
