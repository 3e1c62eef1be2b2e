"""Property tests of compact_history in each of the four provider formats.

- No summary input splits a tool pair: every chunk a summary request is built from passes
  the pairing checker, and so does the compacted history.
- The result fits ``target_tokens``, or :class:`CompactionError` is raised, and then only
  when not even the system messages and the plain notice fit.
- The caller's list and dicts are never modified, whether the compaction succeeds, falls
  back to the notice, or fails.
- No request larger than the summariser's window is sent.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest
from compaction_support import ScriptedModel, compaction_setup, failing_client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.compaction import (
    CompactionBudget,
    CompactionError,
    FallbackLevel,
    Summarizer,
    compact_history,
    min_summary_tokens,
)
from memctx.compaction import summarize as summarize_module
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient
from memctx.messages import (
    InfoCache,
    TokenCounter,
    is_compaction_summary,
    leading_system_count,
    pairing_violations,
)
from tests.strategies import FORMATS, CompactionCase, compaction_cases, examples

_settings = settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
COUNTER = TokenCounter()
CLIENTS = ("offline", "scripted", "failing", "flaky")


def _client(kind: str, model: ScriptedModel) -> LLMClient:
    if kind == "offline":
        return LLMClient()
    if kind == "failing":
        return failing_client()
    return model.client()


def _flaky(prompt: str, index: int) -> str | Exception:
    """Every third call fails; the others answer a short summary."""
    return RuntimeError("rate limited") if index % 3 == 1 else f"summary {index}"


class ChunkRecorder:
    """Wraps :meth:`Summarizer.generate`: the chunks every summary request is built from."""

    def __init__(self) -> None:
        self.chunks: list[list[Any]] = []
        self.total = 0
        original = Summarizer.generate

        def generate(
            summarizer: Summarizer, chunk: Sequence[Any], previous: Any, instructions: Any
        ) -> str:
            self.chunks.append(list(chunk))
            self.total += 1
            return original(summarizer, chunk, previous, instructions)

        self.generate = generate


def _config(case: CompactionCase) -> MemoryContextConfig:
    return MemoryContextConfig(compaction={"mode": "safeguard" if case.safeguard else "default"})


@pytest.mark.parametrize("fmt", FORMATS)
def test_compaction_fits_or_raises_keeps_pairs_and_never_touches_the_caller(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = ChunkRecorder()
    monkeypatch.setattr(summarize_module.Summarizer, "generate", recorder.generate)

    @_settings
    @given(compaction_cases(fmt), st.sampled_from(CLIENTS))
    def check(case: CompactionCase, kind: str) -> None:
        messages = case.messages
        assert pairing_violations(messages) == []
        snapshot = copy.deepcopy(messages)
        originals = list(messages)
        recorder.chunks.clear()
        model = ScriptedModel(_flaky if kind == "flaky" else None)
        config = _config(case)
        try:
            out = compact_history(
                messages,
                compaction_setup(_client(kind, model), config, window=case.window),
                keep_recent_tokens=case.keep_recent_tokens,
            )
        except CompactionError:
            assert messages == snapshot, "a failed compaction changed the caller's history"
            assert all(m is o for m, o in zip(messages, originals, strict=True))
            b = CompactionBudget.from_config(
                config, case.window, keep_recent_tokens=case.keep_recent_tokens
            )
            head = COUNTER.count_messages(messages[: leading_system_count(messages, InfoCache())])
            assert head + min_summary_tokens(COUNTER) > b.target_tokens, (
                "raised although the system messages and the notice fit"
            )
            return
        assert messages == snapshot, "compact_history modified the caller's history"
        assert all(m is o for m, o in zip(messages, originals, strict=True))

        # Every summary input holds whole tool pairs (merge inputs are not messages).
        for chunk in recorder.chunks:
            if not any(isinstance(m, dict) and "memctx-partial-summary" in m for m in chunk):
                assert pairing_violations(chunk) == [], chunk
        # ... and so does the output, which fits its target.
        assert pairing_violations(out.messages) == []
        assert out.tokens_after == COUNTER.count_messages(out.messages) <= out.target_tokens
        assert out.tokens_before == COUNTER.count_messages(messages)

        if not out.compacted:
            assert [id(m) for m in out.messages] == [id(m) for m in messages]
            assert out.level is None and model.requests == []
            return
        # System messages first and untouched, then the summary, then the caller's dicts.
        head = leading_system_count(messages, InfoCache())
        assert [id(m) for m in out.messages[:head]] == [id(m) for m in messages[:head]]
        assert out.messages[head] is out.summary_message
        assert is_compaction_summary(out.summary_message)
        position = {id(m): i for i, m in enumerate(messages)}
        tail = [position[id(m)] for m in out.messages[head + 1 :] if id(m) in position]
        assert tail == sorted(tail)
        copies = [m for m in out.messages[head + 1 :] if id(m) not in position]
        assert copies == [], "valid input: the kept tail needs no repair"
        # Every message is kept or replaced by the summary.
        dropped = {id(m) for m in out.dropped}
        assert all(id(m) in dropped or id(m) in {id(k) for k in out.kept} for m in messages)

        if kind == "failing":
            assert out.level in (None, FallbackLevel.NOTICE, FallbackLevel.FULL)
            if out.usage.calls:
                assert out.level is FallbackLevel.NOTICE
        if kind in ("scripted", "flaky"):
            assert out.usage.calls == len(model.requests)
            b = CompactionBudget.from_config(
                config, case.window, keep_recent_tokens=case.keep_recent_tokens
            )
            for request in model.requests:
                assert b.request_fits(COUNTER.count_messages(request))

    check()
    assert recorder.total > 0, "no summary request was ever built: the property is vacuous"
