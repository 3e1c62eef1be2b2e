"""Smart trim: protections, BM25 then oldest-first removal, pairing, accounting, caching."""

from __future__ import annotations

import copy
import math
import operator
from typing import Any

import pytest

from memctx.messages.anatomy import inspect_message
from memctx.messages.markers import is_compaction_summary
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_message_tokens
from memctx.messages.units import tool_units
from memctx.trim.smart import (
    TrimCache,
    TrimCounts,
    protected_mask,
    smart_trim,
    trim_read,
)
from memctx.trim.state import ReadInfos
from tests.strategies import FORMATS, RECALLED_TEXT, SUMMARY_TEXTS, Call, Turn, render

Message = dict[str, Any]


def sys_(text: str = "You are a careful coding agent.") -> Message:
    return {"role": "system", "content": text}


def u(text: str) -> Message:
    return {"role": "user", "content": text}


def a(text: str) -> Message:
    return {"role": "assistant", "content": text}


def call(ids: list[str], text: str = "") -> Message:
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}}
            for i in ids
        ],
    }


def tool(call_id: str, text: str = "file contents") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def tokens(messages: list[Any]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def filler(n: int) -> str:
    """Text matching none of the queries below."""
    return " ".join(f"lorem{n}" for _ in range(40))


def recent() -> list[Message]:
    """Six conversation messages: always the protected tail."""
    return [u(f"tail question {i}") if i % 2 == 0 else a(f"tail answer {i}") for i in range(6)]


def same(xs: list[Any], ys: list[Any]) -> bool:
    return len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys, strict=True))


QUERY = "webhook signature verification"

# --- when it runs ---------------------------------------------------------------------------


def test_under_the_limit_returns_the_input_unchanged() -> None:
    messages = [sys_(), u(filler(1)), a(filler(2)), *recent()]
    result = smart_trim(messages, QUERY, tokens(messages))
    assert same(result.kept, messages) and result.kept is not messages
    assert (result.trimmed, result.did_trim) == ([], False)
    assert result.tokens_before == result.tokens_after == tokens(messages)
    assert result.layer_counts == TrimCounts()


@pytest.mark.parametrize("query", ["", "ok", " y ", "a\n\n", "  ab  "])
def test_short_queries_skip_trimming_even_over_the_limit(query: str) -> None:
    messages = [sys_(), u(filler(1)), a(filler(2)), *recent()]
    result = smart_trim(messages, query, 0)
    assert same(result.kept, messages) and not result.did_trim and result.trimmed == []


def test_three_characters_are_enough_and_force_overrides_the_query_rule() -> None:
    messages = [sys_(), u(filler(1)), a(filler(2)), *recent()]
    assert smart_trim(messages, "abc", 0).did_trim
    forced = smart_trim(messages, "y", 0, force=True)
    assert forced.trimmed == messages[1:3] and forced.layer_counts.oldest == 2


# --- layer 1: protections -------------------------------------------------------------------


def test_system_messages_are_protected_in_any_position() -> None:
    middle = sys_("Note: the repository moved to src/.")
    messages = [sys_(), u(filler(1)), a(filler(2)), middle, u(filler(3)), *recent()]
    result = smart_trim(messages, QUERY, 0)
    assert same(result.kept, [messages[0], middle, *messages[-6:]])
    assert result.trimmed == [messages[1], messages[2], messages[4]]


@pytest.mark.parametrize("text", SUMMARY_TEXTS)
@pytest.mark.parametrize(
    ("before", "protected"),
    [
        (["system"], True),  # the seed's index 1
        (["system", "developer"], True),  # index 2 after two system messages
        ([], True),  # Anthropic / Pi: the system prompt is not in the list
        (["system", "user"], True),  # index 2
        (["system", "user", "assistant", "user"], False),  # index 4: an old summary
    ],
)
def test_a_compaction_summary_near_the_start_is_protected(
    text: str, before: list[str], protected: bool
) -> None:
    head = [{"role": r, "content": filler(i)} for i, r in enumerate(before)]
    summary = u(text)
    messages = [*head, summary, a(filler(9)), u(filler(10)), *recent()]
    result = smart_trim(messages, QUERY, 0)
    assert any(m is summary for m in result.kept) is protected
    assert any(m is summary for m in result.trimmed) is not protected


def test_compaction_summary_recognition() -> None:
    assert is_compaction_summary({"role": "compactionSummary", "summary": "..."})
    assert is_compaction_summary({"role": "user", "content": "x", "isCompactSummary": True})
    anthropic = {"role": "user", "content": [{"type": "text", "text": "\n" + SUMMARY_TEXTS[1]}]}
    assert is_compaction_summary(anthropic)
    assert is_compaction_summary({"role": "user", "parts": [{"text": SUMMARY_TEXTS[0]}]})
    assert not is_compaction_summary(u("Please add a [Context compacted] banner"))
    assert not is_compaction_summary(tool("c1", SUMMARY_TEXTS[0]))  # a tool output quoting it
    assert not is_compaction_summary(None)
    assert not is_compaction_summary("[Context compacted]")


def test_pi_compaction_summary_message_at_the_start_is_protected() -> None:
    summary = {"role": "compactionSummary", "summary": filler(0), "tokensBefore": 90_000}
    messages = [summary, u(filler(1)), a(filler(2)), *recent()]
    result = smart_trim(messages, QUERY, 0)
    assert result.kept[0] is summary and result.trimmed == messages[1:3]


@pytest.mark.parametrize("n", [0, 1, 3, 6, 10])
def test_the_last_n_conversation_messages_are_protected(n: int) -> None:
    chat = [u(filler(i)) if i % 2 == 0 else a(filler(i)) for i in range(20)]
    messages = [sys_(), *chat]
    result = smart_trim(messages, QUERY, 0, protected_recent=n)
    assert same(result.kept, [messages[0], *chat[len(chat) - n :]])
    assert result.trimmed == chat[: len(chat) - n]


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_tool_result_messages_do_not_count_toward_the_recent_ones(fmt: str) -> None:
    turns = [
        Turn("old question " + filler(1), filler(2), None),
        Turn(None, "looking", None, calls=[Call("read", {"p": 1}, filler(3))]),
        Turn(None, "and more", None, calls=[Call("grep", {"p": 2}, filler(4))]),
    ]
    messages = render(fmt, False, turns)
    # user, assistant, call 1, results 1, call 2, results 2: the last three conversation
    # messages are call 2, call 1 and the first assistant reply.
    result = smart_trim(messages, QUERY, 0, protected_recent=3)
    assert same(result.kept, messages[1:])
    assert result.trimmed == [messages[0]]


def test_the_last_tool_call_and_its_results_are_protected_together() -> None:
    call_msg = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "reading both"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}},
            {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b.py"}},
        ],
    }
    r1 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]}
    # Results first in the merged user turn (Anthropic's rule), then the user's own text.
    r2 = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
            {"type": "text", "text": "also check c.py"},
        ],
    }
    chat = [u(filler(i)) if i % 2 == 0 else a(filler(i)) for i in range(8)]
    messages = [u(filler(20)), call_msg, r1, r2, *chat]
    assert pairing_violations(messages) == []
    result = smart_trim(messages, QUERY, 0, protected_recent=2)
    assert same(result.kept, [call_msg, r1, r2, *chat[-2:]])
    assert pairing_violations(result.kept) == []


def test_a_protected_result_protects_its_call() -> None:
    # The results message also carries user text, so it counts as a recent message; its
    # call message, one further back, must stay with it.
    call_msg = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}}],
    }
    answer = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": filler(5)},
            {"type": "text", "text": "now fix it"},
        ],
    }
    messages = [u(filler(1)), a(filler(2)), call_msg, answer, a("fixed"), u("thanks"), a("ok")]
    result = smart_trim(messages, QUERY, 0, protected_recent=4)
    assert same(result.kept, messages[2:])


def test_recalled_blocks_are_protected_and_never_offered_for_archiving() -> None:
    recalled = u(RECALLED_TEXT)
    old_recalled = {"role": "user", "content": [{"type": "text", "text": RECALLED_TEXT}]}
    messages = [sys_(), recalled, u(filler(1)), a(filler(2)), old_recalled, u(filler(3))]
    messages += recent()
    result = smart_trim(messages, QUERY, 0)
    assert same(result.kept, [messages[0], recalled, old_recalled, *messages[-6:]])
    assert all(m is not recalled and m is not old_recalled for m in result.trimmed)
    assert result.dropped_recalled == 0


def test_entries_that_are_not_messages_pass_through() -> None:
    messages: list[Any] = [None, sys_(), u(filler(1)), 42, a(filler(2)), *recent()]
    result = smart_trim(messages, QUERY, 0)
    assert same(result.kept, [None, messages[1], 42, *messages[-6:]])
    assert result.trimmed == [messages[2], messages[4]]


def test_protected_mask_matches_what_smart_trim_keeps_at_limit_zero() -> None:
    messages = [sys_(), u(filler(1)), call(["c1"]), tool("c1"), a(filler(2)), *recent()]
    mask = protected_mask(messages, protected_recent=2)
    result = smart_trim(messages, QUERY, 0, protected_recent=2)
    assert same(result.kept, [m for m, k in zip(messages, mask, strict=True) if k])
    assert mask[2] and mask[3]  # the last tool span, although older than the last two


# --- layers 2 and 3 -------------------------------------------------------------------------


def scored_history() -> tuple[list[Message], dict[str, Message]]:
    """Old messages with known relevance to QUERY, then the protected tail."""
    old = {
        "zero_old": u(filler(1)),
        "zero_a": a(filler(2)),
        "relevant": u("The webhook signature verification uses the stripe signing secret."),
        "zero_b": a(filler(3)),
        "weak": u("webhook " + filler(4)),
        "zero_new": a(filler(5)),
    }
    return [sys_(), *old.values(), *recent()], old


def test_layer_two_removes_non_matching_messages_oldest_first() -> None:
    messages, old = scored_history()
    limit = tokens(messages) - tokens([old["zero_old"], old["zero_a"]])
    result = smart_trim(messages, QUERY, limit)
    assert result.trimmed == [old["zero_old"], old["zero_a"]]
    assert result.layer_counts == TrimCounts(bm25=2)
    assert result.tokens_after == limit


def test_layer_two_removes_lower_scores_first_whatever_their_age() -> None:
    messages, old = scored_history()
    zeros = [old["zero_old"], old["zero_a"], old["zero_b"], old["zero_new"]]
    result = smart_trim(messages, QUERY, tokens(messages) - tokens(zeros))
    assert result.trimmed == zeros  # the weak match is older than zero_new, and stays
    one_more = smart_trim(messages, QUERY, tokens(messages) - tokens(zeros) - 1)
    assert one_more.trimmed == [*zeros[:3], old["weak"], zeros[3]]
    assert any(m is old["relevant"] for m in one_more.kept)
    assert one_more.layer_counts == TrimCounts(bm25=5)


def test_layer_three_removes_relevant_messages_oldest_first_when_still_over() -> None:
    messages, old = scored_history()
    result = smart_trim(messages, QUERY, tokens(recent()) + tokens([messages[0]]) - 1)
    assert result.trimmed == list(old.values())
    assert result.layer_counts == TrimCounts(bm25=5, oldest=1)


def test_without_any_match_time_order_decides() -> None:
    messages, old = scored_history()
    limit = tokens(messages) - tokens([old["zero_old"], old["zero_a"]])
    result = smart_trim(messages, "kubernetes helm chart", limit)
    assert result.trimmed == [old["zero_old"], old["zero_a"]]
    assert result.layer_counts == TrimCounts(oldest=2)


def test_among_relevant_messages_recency_decides_unless_relevant_share_says_otherwise() -> None:
    best = u("Webhook signature verification: HMAC.")  # older, and the best match
    good = a("webhook signature verification checked " + filler(8)[:60])  # ~0.8 of best
    messages = [sys_(), u(filler(1)), best, a(filler(2)), good, *recent()]
    limit = tokens(messages) - tokens([messages[1], messages[3]]) - 1  # one relevant must go
    default = smart_trim(messages, QUERY, limit)
    assert default.trimmed == [messages[1], best, messages[3]]
    assert default.layer_counts == TrimCounts(bm25=2, oldest=1)
    by_score = smart_trim(messages, QUERY, limit, relevant_share=math.inf)
    assert by_score.trimmed == [messages[1], messages[3], good]
    assert by_score.layer_counts == TrimCounts(bm25=3)
    truncate = smart_trim(messages, QUERY, limit, relevant_share=0.0)
    assert truncate.trimmed == messages[1:4] and truncate.layer_counts == TrimCounts(oldest=3)


def test_relevant_old_message_outlives_newer_irrelevant_ones() -> None:
    history: list[Message] = [sys_()]
    history.append(u("Decision: the payment webhook signature verification uses HMAC-SHA256."))
    history.append(a("Noted, HMAC-SHA256 for webhook signature verification."))
    for i in range(30):
        history.append(u(filler(i)) if i % 2 == 0 else a(filler(i)))
    history += recent()
    result = smart_trim(history, "how do we do webhook signature verification?", 600)
    assert result.did_trim and result.tokens_after <= 600
    assert same(result.kept[:3], history[:3])


# --- pairing --------------------------------------------------------------------------------


def parallel_conversation(fmt: str, relevant: bool) -> list[Any]:
    output = "def verify_webhook_signature(): ..." if relevant else filler(7)
    turns = [
        Turn("start " + filler(1), filler(2), None),
        Turn(
            None,
            "reading three files",
            None,
            calls=[Call("read", {"path": f"f{i}.py", "n": i}, output + f" {i}") for i in range(3)],
        ),
        Turn(filler(3), filler(4), None),
        # A later call, so the parallel one is not the protected last tool span.
        Turn("tail question", "listing", None, calls=[Call("bash", {"cmd": "ls"}, "a.py")]),
        *[Turn(f"tail question {i}", f"tail answer {i}", None) for i in range(3)],
    ]
    return render(fmt, True, turns)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_with_three_results_is_removed_as_one_unit(fmt: str) -> None:
    messages = parallel_conversation(fmt, relevant=False)
    infos = [inspect_message(m) for m in messages]
    # One message calls three tools (Responses items: one item per call); one more calls later.
    *callers, later = [i for i, info in enumerate(infos) if info.has_tool_calls]
    answers = [i for i, info in enumerate(infos[:later]) if info.has_tool_results]
    assert sum(len(infos[i].tool_call_ids) for i in callers) == 3
    # Just over by one token: dropping a single result would do, but the unit goes whole.
    limit = tokens(messages) - tokens(messages[1 : callers[0]]) - 1
    result = smart_trim(messages, "kubernetes", limit)
    assert pairing_violations(result.kept) == []
    # Responses items: each call item and its output are a unit of their own (the others
    # still pair), so the first call goes with its output and the rest may stay.
    whole = [callers[0], answers[0]] if fmt == "responses" else [*callers, *answers]
    unit = [messages[i] for i in whole]
    assert all(any(m is t for t in result.trimmed) for m in unit)
    assert result.layer_counts.pairing == 0 and result.layer_counts.pairing_edited == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_relevant_call_unit_survives_whole(fmt: str) -> None:
    messages = parallel_conversation(fmt, relevant=True)
    infos = [inspect_message(m) for m in messages]
    paired = [
        m for m, i in zip(messages, infos, strict=True) if i.tool_call_ids or i.tool_result_ids
    ]
    result = smart_trim(messages, "verify webhook signature", tokens(messages) - 60)
    assert result.did_trim and pairing_violations(result.kept) == []
    assert all(any(m is k for k in result.kept) for m in paired)


@pytest.mark.parametrize("fmt", FORMATS)
def test_limit_zero_leaves_a_valid_conversation(fmt: str) -> None:
    messages = parallel_conversation(fmt, relevant=False)
    result = smart_trim(messages, QUERY, 0, protected_recent=2)
    assert pairing_violations(result.kept) == []
    assert result.layer_counts.removed == len(result.trimmed) > 0


def test_gemini_calls_without_ids_pair_by_position() -> None:
    turns = [
        Turn("start", filler(1), None, calls=[Call("read", {"n": 1}, filler(2))]),
        Turn(None, filler(3), None, calls=[Call("read", {"n": 2}, filler(4))]),
        *[Turn(f"tail question {i}", f"tail answer {i}", None) for i in range(4)],
    ]
    messages = render("gemini", False, turns, gemini_ids=False)
    units = tool_units(messages)
    assert units[:4] == [[0], [1, 2], [3, 4], [5]]
    result = smart_trim(messages, QUERY, tokens(messages) - tokens(messages[:2]))
    assert result.trimmed == messages[:3] and pairing_violations(result.kept) == []


def test_tool_units_join_an_assistant_turn_split_over_messages() -> None:
    first = {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "r"}]}
    second = {"role": "assistant", "content": [{"type": "tool_use", "id": "y", "name": "r"}]}
    results = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "x", "content": "1"},
            {"type": "tool_result", "tool_use_id": "y", "content": "2"},
        ],
    }
    orphan = tool("nobody")
    units = tool_units([u("go"), first, second, results, orphan])
    assert units == [[0], [1, 2, 3], [4]]


def test_results_broken_in_the_input_are_repaired_and_counted() -> None:
    orphan = tool("ghost", "stale output")
    span = [call(["c1"]), orphan, tool("c1")]  # the orphan sits inside the protected span
    edited = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "gone", "content": "x"},
            {"type": "text", "text": "please continue"},
        ],
    }
    messages = [sys_(), u(filler(1)), a(filler(2)), *span, edited, a("continuing")]
    snapshot = copy.deepcopy(messages)
    result = smart_trim(messages, QUERY, 0, protected_recent=2)
    assert messages == snapshot
    assert pairing_violations(result.kept) == []
    assert result.layer_counts == TrimCounts(oldest=2, pairing=1, pairing_edited=1)
    assert result.trimmed == [messages[1], messages[2], orphan]
    copied = result.kept[-2]
    assert copied is not edited and copied["content"] == [edited["content"][1]]
    assert result.tokens_after == tokens(result.kept)
    assert result.layer_counts.removed == len(result.trimmed) + result.dropped_recalled
    assert [messages[i] for i in result.trimmed_at] == result.trimmed
    assert result.kept_at == [0, 3, 5, -1, 7]  # the edited copy has no position


# --- accounting, immutability, idempotence --------------------------------------------------


def test_caller_messages_are_not_mutated_and_kept_ones_are_the_same_objects() -> None:
    messages = parallel_conversation("anthropic", relevant=False)
    snapshot = copy.deepcopy(messages)
    result = smart_trim(messages, QUERY, tokens(messages) // 2)
    assert messages == snapshot
    ids = {id(m) for m in messages}
    assert all(id(m) in ids for m in result.kept + result.trimmed)
    assert len(result.kept) + len(result.trimmed) == len(messages)


def test_counts_and_tokens_add_up() -> None:
    messages, _ = scored_history()
    limit = tokens(messages) // 2
    result = smart_trim(messages, QUERY, limit)
    assert same([messages[i] for i in result.trimmed_at], result.trimmed)
    assert same([messages[i] for i in result.kept_at], result.kept)
    assert result.tokens_before == tokens(messages)
    assert result.tokens_after == tokens(result.kept) <= limit
    counts = result.layer_counts
    assert counts.removed == counts.bm25 + counts.oldest == len(result.trimmed)
    assert result.did_trim


def test_trimming_the_result_again_does_nothing() -> None:
    messages, _ = scored_history()
    for limit in (0, tokens(messages) // 2, tokens(messages) - 1):
        first = smart_trim(messages, QUERY, limit)
        again = smart_trim(first.kept, QUERY, limit)
        assert not again.did_trim and same(again.kept, first.kept)


def test_best_effort_when_the_protected_messages_alone_do_not_fit() -> None:
    messages, _ = scored_history()
    result = smart_trim(messages, QUERY, 10)
    assert result.tokens_after > 10
    assert same(result.kept, [messages[0], *messages[-6:]])


# --- the cache ------------------------------------------------------------------------------


def test_a_warm_cache_gives_the_same_answers_and_reads_only_new_messages() -> None:
    messages, _ = scored_history()
    cache = TrimCache()
    history = list(messages)
    for turn in range(6):
        limit = tokens(history) // 2
        cold = smart_trim(history, QUERY, limit)
        before = (cache.misses, cache.tokenized)
        warm = smart_trim(history, QUERY, limit, cache=cache)
        assert same(warm.kept, cold.kept) and warm.trimmed == cold.trimmed
        assert warm.layer_counts == cold.layer_counts
        if turn:
            assert cache.misses - before[0] == 2  # the two messages added last turn
            assert cache.tokenized - before[1] <= 2  # the two that left the protected tail
        history = [*history, u(f"question {turn} " + filler(turn)), a(f"answer {turn}")]


def test_a_message_edited_in_place_is_read_again() -> None:
    messages, old = scored_history()
    cache = TrimCache()
    limit = tokens(messages) - tokens([old["zero_old"]])
    assert smart_trim(messages, QUERY, limit, cache=cache).trimmed == [old["zero_old"]]
    old["zero_old"]["content"] = "webhook signature verification, all of it " + filler(1)
    limit = tokens(messages) - tokens([old["zero_a"]])
    result = smart_trim(messages, QUERY, limit, cache=cache)
    assert result.trimmed == [old["zero_a"]] and result.tokens_before == tokens(messages)
    assert same(result.kept, smart_trim(messages, QUERY, limit).kept)


def test_a_block_list_grown_in_place_is_read_again() -> None:
    messages = [sys_(), *parallel_conversation("anthropic", relevant=False)]
    cache = TrimCache()
    before = cache.read(messages, estimate_message_tokens).facts[-3].tokens
    grown = messages[-3]["content"]
    assert isinstance(grown, list)
    grown.append({"type": "text", "text": filler(9)})  # same list object, one block more
    state = cache.read(messages, estimate_message_tokens)
    assert state.facts[-3].tokens == estimate_message_tokens(messages[-3]) > before


def test_trim_read_is_smart_trim_on_a_reading_the_caller_holds() -> None:
    messages, _ = scored_history()
    limit = tokens(messages) // 2
    cache = TrimCache()
    with cache.lock:
        state = cache.read(messages, estimate_message_tokens)
        total = int(state.tokens.sum())
        result = trim_read(messages, state, QUERY, limit, cache=cache)
    assert total == tokens(messages)
    expected = smart_trim(messages, QUERY, limit)
    assert same(result.kept, expected.kept) and same(result.trimmed, expected.trimmed)
    assert result.trimmed_at == expected.trimmed_at


def test_read_infos_answer_by_identity_at_both_ends_and_in_the_middle() -> None:
    messages = [u(f"question {i}") if i % 2 == 0 else a(f"answer {i}") for i in range(200)]
    facts = TrimCache().read(messages, estimate_message_tokens).facts
    infos = ReadInfos(messages, facts)
    assert infos.info(messages[-1]) is facts[-1].info and infos.info(messages[0]) is facts[0].info
    assert infos.info(messages[100]) is facts[100].info  # completes the map on a miss
    assert infos.facts_of(u("question 0")) is None  # equal content, another dict
    assert infos.info(u("stranger")).text == "stranger"
    assert all(map(operator.is_, infos.infos(messages), [f.info for f in facts]))
    assert [i.text for i in infos.infos(messages[::-1])] == [m["content"] for m in messages[::-1]]


def test_a_different_token_counter_is_not_mixed_with_cached_counts() -> None:
    messages, _ = scored_history()
    cache = TrimCache()

    def thousand(message: object) -> int:
        return 1000

    assert smart_trim(messages, QUERY, 10**9, cache=cache).tokens_before == tokens(messages)
    big = smart_trim(messages, QUERY, 10**9, count_tokens=thousand, cache=cache)
    assert big.tokens_before == 1000 * len(messages)
    assert smart_trim(messages, QUERY, 10**9, cache=cache).tokens_before == tokens(messages)


def test_the_cache_follows_a_history_that_is_replaced() -> None:
    messages, _ = scored_history()
    cache = TrimCache()
    smart_trim(messages, QUERY, 0, cache=cache)
    compacted = [messages[0], u(SUMMARY_TEXTS[0]), *recent(), u(filler(40)), a(filler(41))]
    result = smart_trim(compacted, QUERY, 0, cache=cache)
    assert same(result.kept, smart_trim(compacted, QUERY, 0).kept)
    assert result.kept[1] is compacted[1]


def test_equal_messages_in_new_dicts_are_not_read_or_tokenized_again() -> None:
    messages, _ = scored_history()
    cache = TrimCache()
    first = smart_trim(messages, QUERY, tokens(messages) // 2, cache=cache)
    tokenized = cache.tokenized
    copies = copy.deepcopy(messages)  # e.g. a pruning step that rebuilds every message
    again = smart_trim(copies, QUERY, tokens(messages) // 2, cache=cache)
    assert cache.reused == len(messages) and cache.tokenized == tokenized
    assert [m["content"] for m in again.kept] == [m["content"] for m in first.kept]
    assert all(any(m is c for c in copies) for m in again.kept)  # the new dicts, not old ones
    follow = [*copies, u("next question"), a("next answer")]
    assert same(
        smart_trim(follow, QUERY, tokens(follow) // 2, cache=cache).kept,
        smart_trim(follow, QUERY, tokens(follow) // 2).kept,
    )
