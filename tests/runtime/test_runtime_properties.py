"""Invariants of the context hook over generated conversations in every provider format.

For each example: a fresh store, an engine with a generated window / reserve / cap, a first
call on the first part of the conversation (so the store holds something to recall) and a
call on the whole. Checked on every output: the recall block within its cap, the output
within the window whenever the protected messages fit, zero pairing violations, idempotence,
input never mutated, recalled blocks never archived. Malformed input never raises and comes
back unchanged.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx import MemoryContextConfig
from memctx.messages.markers import is_recalled_block
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_message_tokens
from memctx.runtime.engine import MemoryContext
from memctx.trim.smart import protected_mask
from tests.strategies import FORMATS, TrimCase, examples, fuzzed_conversations, trim_cases

# Each example runs the hooks over a store on disk: 40 per format everyday (seeded), at most
# 300 in the thorough pass.
EXAMPLES = examples(40, thorough_at_most=300)
_settings = settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _tokens(messages: list[Any]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


@st.composite
def setups(draw: st.DrawFn, fmt: str) -> tuple[TrimCase, int, MemoryContextConfig]:
    case = draw(trim_cases(fmt))
    total = _tokens(case.messages)
    window = draw(st.integers(40, max(60, 2 * total)))
    config = MemoryContextConfig(
        reserve_tokens=draw(st.sampled_from([0, 20, 200])),
        hard_cap_tokens=draw(st.sampled_from([30, 300, 4000])),
        protected_recent_messages=case.protected_recent,
        knowledge_extraction=False,
    )
    return case, window, config


def _valid_prefix(messages: list[Any]) -> list[Any]:
    """The longest prefix of at most half the messages that an agent could send: no call
    waiting for its result (agents call the model only once results are in)."""
    for end in range(max(1, len(messages) // 2), 0, -1):
        if not pairing_violations(messages[:end]):
            return messages[:end]
    return messages[:1]


def _check_output(mem: MemoryContext, given: list[Any], out: list[Any]) -> None:
    assert pairing_violations(out) == []
    blocks = [m for m in out if is_recalled_block(m)]
    assert len(blocks) <= 1
    for block in blocks:
        assert estimate_message_tokens(block) <= mem.recall_cap
    base = [m for m in given if not is_recalled_block(m)]
    keep = protected_mask(base, protected_recent=mem.config.protected_recent_messages)
    protected = sum(estimate_message_tokens(m) for m, k in zip(base, keep, strict=True) if k)
    if protected <= mem.safe_limit:
        assert _tokens(out) <= max(mem.window - mem.config.reserve_tokens, 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_property_context_hook_invariants(fmt: str) -> None:
    @_settings
    @given(setup=setups(fmt))
    def run(setup: tuple[TrimCase, int, MemoryContextConfig]) -> None:
        case, window, config = setup
        with tempfile.TemporaryDirectory() as tmp:
            mem = MemoryContext(
                config, store_dir=Path(tmp), session_id="p", context_window_tokens=window
            )
            with mem:
                half = _valid_prefix(case.messages)
                for given_msgs in (half, case.messages):
                    before = copy.deepcopy(given_msgs)
                    out = mem.on_context(given_msgs)
                    assert given_msgs == before  # never mutated
                    _check_output(mem, given_msgs, out)
                    assert mem.on_context(out) == out  # idempotent
                counts = mem.stats()["counts"]
                assert not any(k.endswith("_failures") for k in counts), mem.stats()["last_error"]
            segments = Path(tmp) / "segments.jsonl"
            if segments.exists():
                assert "<recalled-context" not in segments.read_text(encoding="utf-8")

    run()


@settings(max_examples=EXAMPLES)
@given(messages=fuzzed_conversations(), window=st.integers(1, 5000))
def test_property_hooks_never_raise_on_malformed_input(messages: list[Any], window: int) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        MemoryContext(
            MemoryContextConfig(knowledge_extraction=False),
            store_dir=Path(tmp),
            session_id="fuzz",
            context_window_tokens=window,
        ) as mem,
    ):
        before = copy.deepcopy(messages)
        out = mem.on_context(messages)
        assert messages == before
        if mem.stats()["counts"].get("on_context_failures"):
            assert out is messages  # failed: handed back untouched
        else:
            assert pairing_violations(out) == []
        assert mem.on_before_compact(messages) is None
