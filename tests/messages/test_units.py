"""Tool units and spans: a call and its results are never separated, in every provider shape."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.messages.anatomy import inspect_message
from memctx.messages.pairing import pairing_violations
from memctx.messages.units import ToolUnits, tool_spans, tool_units
from tests.strategies import FORMATS, damaged_conversations, examples, valid_conversations

_settings = settings(
    max_examples=examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _check_shapes(messages: list[Any]) -> tuple[list[list[int]], list[range]]:
    """The structural invariants of both views, for any input; returns the two views."""
    units, spans = tool_units(messages), tool_spans(messages)
    n = len(messages)
    # Units partition the indices: each index in exactly one unit, units sorted inside and
    # ordered by their first index.
    assert sorted(i for unit in units for i in unit) == list(range(n))
    assert all(unit == sorted(unit) for unit in units)
    assert [unit[0] for unit in units] == sorted(unit[0] for unit in units)
    # Spans are consecutive and cover the list in order.
    assert [i for span in spans for i in span] == list(range(n))
    assert all(len(span) > 0 for span in spans)
    # Each unit lies inside one span, and each span is no longer than its units make it:
    # every boundary inside a span is crossed by some unit.
    span_of = {i: k for k, span in enumerate(spans) for i in span}
    assert all(len({span_of[i] for i in unit}) == 1 for unit in units)
    for span in spans:
        for cut in range(span.start + 1, span.stop):
            assert any(unit[0] < cut <= unit[-1] for unit in units), (span, cut)
    return units, spans


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_and_its_results_are_never_split(fmt: str) -> None:
    @_settings
    @given(valid_conversations(fmt), st.data())
    def check(messages: list[Any], data: st.DataObject) -> None:
        assert pairing_violations(messages) == []
        units, spans = _check_shapes(messages)
        # Removing any whole units (what smart trim does) leaves no call without its results
        # and no result without its call: pairing's own rules, checked independently.
        dropped = data.draw(st.sets(st.integers(0, max(len(units) - 1, 0))))
        gone = {i for k in dropped if k < len(units) for i in units[k]}
        assert pairing_violations([m for i, m in enumerate(messages) if i not in gone]) == []
        # Cutting at any span boundary (what compaction does) leaves two valid halves.
        cut = spans[data.draw(st.integers(0, len(spans) - 1))].start
        assert pairing_violations(messages[:cut]) == []
        assert pairing_violations(messages[cut:]) == []

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_units_and_spans_hold_their_shape_on_damaged_histories(fmt: str) -> None:
    @_settings
    @given(damaged_conversations(fmt))
    def check(messages: list[Any]) -> None:
        _check_shapes(messages)

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_extending_piece_by_piece_equals_reading_at_once(fmt: str) -> None:
    # Smart trim's cache extends one session's units turn by turn and rewrites only the roots
    # from the index extend() reports: everything before it must be unchanged.
    @_settings
    @given(damaged_conversations(fmt), st.lists(st.integers(0, 40), max_size=6))
    def check(messages: list[Any], cuts: list[int]) -> None:
        infos = [inspect_message(m) for m in messages]
        units = ToolUnits()
        for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(infos)], strict=True):
            before = list(units.root)
            changed = units.extend(infos[a:b])
            assert changed <= len(before)
            assert units.root[:changed] == before[:changed]
        assert len(units) == len(messages)
        assert units.units() == tool_units(messages)
        assert units.spans() == tool_spans(messages)

    check()


def test_the_two_views_differ_where_a_message_sits_between_a_call_and_its_result() -> None:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh"}}],
    }
    typed = {"role": "user", "content": "also run the linter"}  # typed while the tool ran
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    messages = [{"role": "user", "content": "go"}, call, typed, result]
    # Removal: the call goes with its result, the user's words stay.
    assert tool_units(messages) == [[0], [1, 3], [2]]
    # Cuts: nothing between the call and its result may be cut apart.
    assert tool_spans(messages) == [range(0, 1), range(1, 4)]
