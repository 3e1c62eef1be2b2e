"""Property tests: smart_trim in each of the four provider formats."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.messages.anatomy import RoleKind, inspect_message, role_kind
from memctx.messages.markers import is_compaction_summary, is_recalled_block
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_message_tokens
from memctx.trim.smart import MIN_QUERY_CHARS, TrimCache, TrimResult, protected_mask, smart_trim
from tests.strategies import (
    FORMATS,
    TrimCase,
    examples,
    fuzzed_conversations,
    trim_cases,
    trim_queries,
)

# Generating conversations dominates the run time: 80 per format everyday (seeded); the
# thorough profile runs its own count (docs/testing.md).
_settings = settings(
    max_examples=examples(80),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _tokens(messages: list[Any]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def _limit(case: TrimCase) -> int:
    return math.floor(case.limit_share * _tokens(case.messages))


def _must_keep(messages: list[Any], protected_recent: int) -> list[int]:
    """The protection rules, written out plainly (without units): indices never trimmed."""
    infos = [inspect_message(m) for m in messages]
    keep = {i for i, m in enumerate(messages) if role_kind(m) is RoleKind.SYSTEM}
    keep |= {i for i, m in enumerate(messages) if is_recalled_block(m)}
    leading = 0
    while leading < len(messages) and role_kind(messages[leading]) is RoleKind.SYSTEM:
        leading += 1
    keep |= {
        i
        for i in range(leading, min(len(messages), leading + 3))
        if is_compaction_summary(messages[i])
    }
    conversational = [
        i
        for i, info in enumerate(infos)
        if info.kind in (RoleKind.USER, RoleKind.ASSISTANT)
        and not info.is_tool_result_only
        and not is_recalled_block(messages[i])
    ]
    keep |= set(conversational[max(0, len(conversational) - protected_recent) :])
    callers = [
        i for i, info in enumerate(infos) if info.kind is RoleKind.ASSISTANT and info.has_tool_calls
    ]
    if callers:  # the last call and every result message up to the next assistant message
        last = callers[-1]
        keep.add(last)
        j = last + 1
        while j < len(messages) and infos[j].kind is not RoleKind.ASSISTANT:
            if infos[j].has_tool_results:
                keep.update(range(last, j + 1))
            j += 1
    return sorted(keep)


def _check_accounting(messages: list[Any], result: TrimResult) -> None:
    """Nothing silently lost, nothing invented, order kept (valid input: no repair edits)."""
    ids = [id(m) for m in messages]
    kept = [id(m) for m in result.kept]
    trimmed = [id(m) for m in result.trimmed]
    assert sorted(kept + trimmed) == sorted(ids), "a message was lost, copied or invented"
    position = {id(m): i for i, m in enumerate(messages)}
    assert [position[k] for k in kept] == sorted(position[k] for k in kept)
    assert [position[t] for t in trimmed] == sorted(position[t] for t in trimmed)
    counts = result.layer_counts
    assert counts.removed == len(result.trimmed) + result.dropped_recalled
    assert counts.pairing == counts.pairing_edited == result.dropped_recalled == 0
    assert result.did_trim == bool(result.trimmed)
    assert result.tokens_before == _tokens(messages)
    assert result.tokens_after == _tokens(result.kept)
    assert not any(is_recalled_block(m) for m in result.trimmed)


@pytest.mark.parametrize("fmt", FORMATS)
def test_trim_keeps_pairing_protection_accounting_and_is_idempotent(fmt: str) -> None:
    @_settings
    @given(trim_cases(fmt))
    def check(case: TrimCase) -> None:
        messages, query, limit = case.messages, case.query, _limit(case)
        assert pairing_violations(messages) == []
        snapshot = copy.deepcopy(messages)
        result = smart_trim(messages, query, limit, protected_recent=case.protected_recent)
        assert messages == snapshot, "smart_trim modified the caller's messages"

        assert pairing_violations(result.kept) == []
        _check_accounting(messages, result)
        kept = {id(m) for m in result.kept}
        for i in _must_keep(messages, case.protected_recent):
            assert id(messages[i]) in kept, f"protected message {i} was trimmed"

        if _tokens(messages) <= limit or len(query.strip()) < MIN_QUERY_CHARS:
            assert not result.did_trim and result.kept == messages
            return
        mask = protected_mask(messages, protected_recent=case.protected_recent)
        protected_tokens = _tokens([m for m, k in zip(messages, mask, strict=True) if k])
        if protected_tokens <= limit:
            assert result.tokens_after <= limit
        else:  # best effort: everything unprotected is gone
            assert [id(m) for m, k in zip(messages, mask, strict=True) if k] == [
                id(m) for m in result.kept
            ]

        again = smart_trim(result.kept, query, limit, protected_recent=case.protected_recent)
        assert not again.did_trim and again.trimmed == []
        assert all(x is y for x, y in zip(again.kept, result.kept, strict=True))

    check()


def _assert_same_result(messages: list[Any], one: TrimResult, other: TrimResult) -> None:
    """The same messages kept and trimmed: the same objects, or equal repair-made copies."""
    originals = {id(m) for m in messages}
    assert len(one.kept) == len(other.kept)
    for x, y in zip(one.kept, other.kept, strict=True):
        assert x is y or (x == y and id(x) not in originals and id(y) not in originals)
    assert [id(m) for m in one.trimmed] == [id(m) for m in other.trimmed]
    assert one.layer_counts == other.layer_counts
    assert (one.tokens_before, one.tokens_after) == (other.tokens_before, other.tokens_after)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_warm_cache_over_a_growing_history_answers_like_a_cold_one(fmt: str) -> None:
    @settings(max_examples=examples(40, thorough_at_most=250))
    @given(trim_cases(fmt), st.data())
    def check(case: TrimCase, data: st.DataObject) -> None:
        cache = TrimCache()
        messages = case.messages
        # The agent-loop pattern: each call resends the history plus the new messages; now
        # and then the caller passes something else (the trimmed list) or another query.
        cuts = sorted(data.draw(st.lists(st.integers(1, len(messages)), max_size=5)))
        for cut in [*cuts, len(messages)]:
            history = messages[:cut]
            query = data.draw(trim_queries)
            limit = math.floor(case.limit_share * _tokens(history))
            cold = smart_trim(history, query, limit, protected_recent=case.protected_recent)
            warm = smart_trim(
                history, query, limit, protected_recent=case.protected_recent, cache=cache
            )
            _assert_same_result(history, warm, cold)
            if data.draw(st.booleans()):
                smart_trim(warm.kept, query, limit, cache=cache)

    check()


@settings(max_examples=examples(80))
@given(fuzzed_conversations(), trim_queries, st.floats(0, 1.2))
def test_damaged_and_malformed_input_never_crashes_and_comes_out_valid(
    messages: list[Any], query: str, share: float
) -> None:
    snapshot = copy.deepcopy(messages)
    limit = math.floor(share * _tokens(messages))
    result = smart_trim(messages, query, limit, cache=TrimCache())
    assert messages == snapshot
    if result.did_trim:
        assert pairing_violations(result.kept) == []
    counts = result.layer_counts
    assert counts.removed == len(result.trimmed) + result.dropped_recalled
    assert len(result.kept) + counts.removed == len(messages)
    originals = {id(m) for m in messages}
    copies = [m for m in result.kept if id(m) not in originals]
    assert len(copies) == counts.pairing_edited
    assert all(id(m) in originals for m in result.trimmed)
    # Entries that are not messages, and system messages, are never removed or edited.
    for message in messages:
        if role_kind(message) is RoleKind.SYSTEM or not isinstance(message, dict):
            assert any(m is message for m in result.kept)
    assert smart_trim(result.kept, query, limit).did_trim is False or result.tokens_after > limit
