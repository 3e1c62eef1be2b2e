"""Issue 26, item 4: one message costs a bounded number of extraction calls, whatever its role.

The attack: one 50 MB user message through ``on_before_compact`` made 3,323 extraction calls
and 19.9 M prompt tokens; a 4 MB one already 266. Tool results were excerpted when rendered,
user and assistant text was not. The bound is ``extractionMaxMessageTokens`` (16,000 by
default): extraction reads a message's head and tail, half of it each.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

from memctx import MemoryContext, MemoryContextConfig
from memctx.extraction.extract import DEFAULT_MAX_INPUT_TOKENS
from memctx.extraction.prompt import prompt_overhead_tokens, render_messages
from memctx.runtime.extraction_view import extraction_view

_LINE = "we decided the zebrafish deploy listens on port 7443 behind the proxy\n"


def _calls_bound(max_message_tokens: int) -> int:
    """Extraction calls one message may cost: its read view over the per-call budget, plus
    one for the chunk it shares with its neighbours."""
    budget = DEFAULT_MAX_INPUT_TOKENS - prompt_overhead_tokens()
    return math.ceil(1.5 * max_message_tokens / budget) + 1


def _extraction_calls(tmp_path: Any, messages: list[dict[str, Any]], **config: Any) -> int:
    cfg = MemoryContextConfig(**config)
    with MemoryContext(cfg, store_dir=tmp_path, session_id="s", context_window_tokens=32_000) as m:
        m.on_before_compact(messages)
        assert m.wait_idle(120)
        stats = m.stats()
    assert not stats["worker"]["failed"], stats["worker"]
    return int(stats["extraction"]["llm_calls"])


@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_4mb_message_costs_a_bounded_number_of_extraction_calls(tmp_path: Any, role: str) -> None:
    # As the issue ran it (4 MB made 266 calls): now the default bound holds.
    text = _LINE * (4_000_000 // len(_LINE))
    messages = [
        {"role": "user", "content": "hello"},
        {"role": role, "content": text},
        {"role": "assistant", "content": "ok"},
    ]
    calls = _extraction_calls(tmp_path, messages)
    assert 1 <= calls <= _calls_bound(16_000) + 2  # + the two short neighbours' chunk


def test_anthropic_text_blocks_are_bounded_per_message(tmp_path: Any) -> None:
    # Many blocks instead of one long string: the bound is per message, not per block.
    blocks = [{"type": "text", "text": _LINE * 200} for _ in range(300)]  # ~4 MB
    messages = [{"role": "user", "content": blocks}, {"role": "assistant", "content": "ok"}]
    calls = _extraction_calls(tmp_path, messages, extraction_max_message_tokens=2_000)
    assert 1 <= calls <= _calls_bound(2_000) + 1


_ROLES = st.sampled_from(["user", "assistant", "tool", "toolResult", "model", "custom"])


@st.composite
def _messages(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(_ROLES)
    size = draw(st.integers(0, 60_000))
    piece = draw(st.sampled_from([_LINE, "x" * 97, "ü" * 13 + "\n"]))
    text = (piece * (size // len(piece) + 1))[:size]
    shape = draw(st.sampled_from(["str", "blocks", "results", "calls", "gemini"]))
    if shape == "str":
        return {"role": role, "content": text, "tool_call_id": "t1"}
    n = draw(st.integers(1, 40))
    part = text[: max(1, size // n)]
    if shape == "blocks":
        return {"role": role, "content": [{"type": "text", "text": part} for _ in range(n)]}
    if shape == "results":
        content = [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": part} for i in range(n)
        ]
        return {"role": role, "content": [{"type": "text", "text": part}, *content]}
    if shape == "calls":
        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": part}}
            for i in range(n)
        ]
        return {"role": "assistant", "content": part, "tool_calls": calls}
    parts = [{"text": part}, {"functionResponse": {"name": "grep", "response": {"out": part}}}]
    return {"role": role, "parts": parts * n}


@settings(max_examples=examples(60), deadline=None)
@given(message=_messages(), max_tokens=st.integers(1_000, 8_000))
def test_what_extraction_reads_of_any_message_is_bounded(
    message: dict[str, Any], max_tokens: int
) -> None:
    max_chars = max_tokens * 3
    view = extraction_view(message, max_chars)
    rendered = "\n".join(render_messages([view]))
    # Every rendered entry carries a short label ("[tool result: grep] ") and the note.
    assert len(rendered) <= max_chars * 3 // 2 + 200 * (1 + len(render_messages([message])))
    assert len(rendered) <= max(len("\n".join(render_messages([message]))), max_chars * 2)
    if view is not message:
        # Who said it is kept: every label of the view is one of the original's labels.
        def labels(msg: dict[str, Any] | Any) -> set[str]:
            return {e.split("]", 1)[0] for e in render_messages([msg])}

        assert labels(view) <= labels(message)


def test_a_long_block_after_short_ones_keeps_its_head_and_tail() -> None:
    first = {"type": "text", "text": "we chose redis"}
    long = {"type": "text", "text": "HEAD " + "x" * 100_000 + " TAIL"}
    view = extraction_view({"role": "assistant", "content": [first, long]}, 3_000)
    rendered = "\n".join(render_messages([view]))
    assert "we chose redis" in rendered and "HEAD" in rendered and "TAIL" in rendered
    assert "characters omitted" in rendered
    assert len(rendered) < 5_000
