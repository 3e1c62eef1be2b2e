"""Issue 26, items 5 and 7: whatever one message holds, ``on_context`` fits the window.

Smart trim protects the latest request, and only tool results used to be cut when the
protected part alone did not fit: a 2 MB log pasted as the user's latest message went out
whole, over any window. Now text blocks of any role too long for the window are cut to head
and tail in the copy sent (``texts_cut``), like oversized tool results, in every provider
shape; the agent's own list keeps them whole and the recall block is never cut.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

from memctx import MemoryContext, MemoryContextConfig
from memctx.messages import TokenCounter, message_text

WINDOW = 32_000


def _engine(tmp_path: Path) -> MemoryContext:
    return MemoryContext(
        MemoryContextConfig(), store_dir=tmp_path, session_id="s", context_window_tokens=WINDOW
    )


def _log(chars: int) -> str:
    line = "2026-11-29T04:15:01Z INFO zebrafish worker 17 processed batch ok\n"
    return "FIRST LINE of the pasted log\n" + line * (chars // len(line)) + "LAST LINE: 3 failed"


def _shapes(text: str) -> dict[str, dict[str, Any]]:
    return {
        "openai": {"role": "user", "content": text},
        "anthropic": {"role": "user", "content": [{"type": "text", "text": text}]},
        "gemini": {"role": "user", "parts": [{"text": text}]},
        "single-block": {"role": "user", "content": {"type": "text", "text": text}},
    }


@pytest.mark.parametrize("shape", ["openai", "anthropic", "gemini", "single-block"])
def test_a_pasted_log_larger_than_the_window_is_cut_in_the_copy_sent(
    tmp_path: Path, shape: str
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Look at the zebrafish worker."},
        {"role": "assistant", "content": "Paste me its log."},
        _shapes(_log(2_000_000))[shape],
    ]
    before = copy.deepcopy(history)
    with _engine(tmp_path) as mem:
        out = mem.on_context(history)
        counts = mem.stats()["counts"]
        counter = TokenCounter()
        assert sum(counter.count_message(m) for m in out) <= WINDOW
        assert counts["texts_cut"] == 1 and counts.get("over_window", 0) == 0
    assert history == before  # the agent's own list keeps the log whole
    sent = message_text(out[-1])
    assert sent.startswith("FIRST LINE") and sent.endswith("LAST LINE: 3 failed")
    assert "characters omitted" in sent
    assert {k for k in out[-1]} == {k for k in history[-1]}  # the shape it came in


@given(
    role=st.sampled_from(["system", "user", "assistant"]),
    chars=st.integers(min_value=100_000, max_value=600_000),
    at=st.integers(min_value=0, max_value=3),
)
@settings(max_examples=examples(12), deadline=None)
def test_property_no_text_of_any_role_makes_a_call_exceed_the_window(
    tmp_path_factory: pytest.TempPathFactory, role: str, chars: int, at: int
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Where is the zebrafish worker configured?"},
        {"role": "assistant", "content": "In config/worker.toml."},
        {"role": "user", "content": "And its retries?"},
        {"role": "assistant", "content": "Three, with backoff."},
    ]
    history.insert(at, {"role": role, "content": _log(chars)})
    history.append({"role": "user", "content": "Summarise the log above."})
    with _engine(tmp_path_factory.mktemp("store")) as mem:
        out = mem.on_context(history)
        assert not mem.stats()["counts"].get("on_context_failures", 0)
    counter = TokenCounter()
    assert sum(counter.count_message(m) for m in out) <= WINDOW
    assert out[-1]["content"] == "Summarise the log above."
