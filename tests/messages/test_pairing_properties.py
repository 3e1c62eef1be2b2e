"""Property tests: repair_tool_pairing in each of the four provider formats."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.messages.anatomy import InfoCache, RoleKind, inspect_message, role_kind
from memctx.messages.pairing import pairing_violations, repair_tool_pairing
from tests.strategies import (
    FORMATS,
    damaged_conversations,
    fuzzed_conversations,
    valid_conversations,
)

# The issue asks for at least 1,000 examples per format in CI; locally too, it is fast.
EXAMPLES = int(os.environ.get("MEMCTX_PROPERTY_EXAMPLES", "1000"))
_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _block_signatures(message: Any) -> list[tuple[str, str, int]]:
    return [(b.kind.value, b.field, b.index) for b in inspect_message(message).blocks]


def _assert_subsequence_of(original: list[Any], repaired: list[Any]) -> None:
    """Order kept, nothing invented: each output message is an input message or a trimmed
    copy of one, in the same relative order, and system messages all survive untouched."""
    by_mid = {m["mid"]: m for m in original if isinstance(m, dict) and "mid" in m}
    mids = [m["mid"] for m in repaired if isinstance(m, dict) and "mid" in m]
    assert mids == sorted(mids) and len(set(mids)) == len(mids)
    for message in repaired:
        if not (isinstance(message, dict) and "mid" in message):
            continue
        source = by_mid[message["mid"]]
        if message is source:
            continue
        # An edited copy: same role and fields, every remaining block taken from the source.
        assert message["role"] == source["role"]
        for key in ("content", "parts", "tool_calls"):
            if isinstance(message.get(key), list):
                remaining = iter(source[key])
                assert all(any(b is s for s in remaining) for b in message[key])
    for message in original:
        if role_kind(message) is RoleKind.SYSTEM:
            assert any(m is message for m in repaired), "a system message was dropped or edited"


@pytest.mark.parametrize("fmt", FORMATS)
def test_repair_of_damaged_conversations_is_valid_ordered_and_idempotent(fmt: str) -> None:
    @_settings
    @given(damaged_conversations(fmt))
    def check(messages: list[Any]) -> None:
        snapshot = copy.deepcopy(messages)
        repaired = repair_tool_pairing(messages)
        assert messages == snapshot, "repair modified the caller's messages"
        assert pairing_violations(repaired) == []
        cache = InfoCache()  # a warm cache must not change any answer
        for _ in range(2):
            assert pairing_violations(messages, cache=cache) == pairing_violations(messages)
            assert repair_tool_pairing(messages, cache=cache) == repaired
        again = repair_tool_pairing(repaired)
        assert again == repaired
        assert all(a is b for a, b in zip(again, repaired, strict=True))
        _assert_subsequence_of(messages, repaired)

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_valid_conversations_are_left_exactly_as_they_are(fmt: str) -> None:
    @_settings
    @given(valid_conversations(fmt))
    def check(messages: list[Any]) -> None:
        assert pairing_violations(messages) == [], pairing_violations(messages)
        repaired = repair_tool_pairing(messages)
        assert len(repaired) == len(messages)
        assert all(a is b for a, b in zip(repaired, messages, strict=True))

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_deleting_any_single_result_is_detected(fmt: str) -> None:
    """pairing_violations is not vacuous: losing one answer is always reported."""

    @settings(max_examples=max(EXAMPLES // 4, 50), deadline=None)
    @given(valid_conversations(fmt), st.data())
    def check(messages: list[Any], data: st.DataObject) -> None:
        holders = [i for i, m in enumerate(messages) if inspect_message(m).tool_result_ids]
        if not holders:
            return
        damaged = copy.deepcopy(messages)
        del damaged[data.draw(st.sampled_from(holders))]
        kinds = {v.kind.value for v in pairing_violations(damaged)}
        assert "missing_result" in kinds

    check()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fuzzed_conversations())
def test_malformed_entries_never_crash_and_pass_through(messages: list[Any]) -> None:
    snapshot = copy.deepcopy(messages)
    violations = pairing_violations(messages)
    assert all(v.message_index < len(messages) for v in violations)
    repaired = repair_tool_pairing(messages)
    assert messages == snapshot
    assert pairing_violations(repaired) == []
    assert repair_tool_pairing(repaired) == repaired
    # Entries that are not messages are never judged, so never removed.
    unreadable = [m for m in messages if role_kind(m) in (RoleKind.UNKNOWN, RoleKind.SYSTEM)]
    kept = [m for m in repaired if role_kind(m) in (RoleKind.UNKNOWN, RoleKind.SYSTEM)]
    assert len(kept) == len(unreadable)
