"""AgentCompactor: the agent loop's compaction, seed 001's core behind the loop guard."""

from __future__ import annotations

from typing import Any

from memctx.compaction import AgentCompactor, CompactionSetup, archivable
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient
from memctx.messages import (
    InfoCache,
    TokenCounter,
    is_compaction_summary,
    pairing_violations,
    recalled_block_text,
)

WINDOW = 8_000  # reserve = min(20,000, 2,000): compaction past 6,000 tokens


def _history(turns: int, words: int = 120) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        call = f"c{t}"
        out += [
            {"role": "user", "content": f"Turn {t}: read file {t}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "read", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call, "content": f"line {t} " * words},
            {"role": "assistant", "content": f"Read file {t}."},
        ]
    return out


def _compactor() -> tuple[AgentCompactor, TokenCounter]:
    counter = TokenCounter()
    config = MemoryContextConfig()
    setup = CompactionSetup(
        client=LLMClient(), config=config, window=WINDOW, counter=counter, infos=InfoCache()
    )
    return AgentCompactor(setup), counter


def test_compacts_past_the_threshold_and_keeps_pairs() -> None:
    compactor, counter = _compactor()
    history = _history(30)
    tokens = counter.count_messages(history)
    assert compactor.threshold == 6_000 and tokens > 6_000
    assert compactor.maybe_compact(history[:9], counter.count_messages(history[:9]), turn=0) is None
    result = compactor.maybe_compact(history, tokens, turn=1)
    assert result is not None and is_compaction_summary(result.messages[1])
    assert result.tokens_after <= compactor.threshold
    assert not pairing_violations(result.messages)
    assert compactor.stats()["compactions"] == 1


def test_the_guard_defers_a_threshold_compaction_but_not_an_overflow() -> None:
    compactor, counter = _compactor()
    history = _history(30)
    result = compactor.maybe_compact(history, counter.count_messages(history), turn=1)
    assert result is not None
    grown = [*result.messages, *_history(13)[1:]]  # past the threshold, under the window
    tokens = counter.count_messages(grown)
    assert compactor.threshold < tokens <= WINDOW
    assert compactor.maybe_compact(grown, tokens, turn=2) is None  # within the spacing
    assert compactor.stats()["deferred"] == 1
    huge = [*grown, {"role": "user", "content": "paste " * 4_000}]  # the call would overflow
    urgent = compactor.maybe_compact(huge, counter.count_messages(huge), turn=2)
    assert urgent is not None and urgent.tokens_after <= compactor.threshold


def test_archivable_leaves_out_memctx_blocks_and_summaries() -> None:
    plain = {"role": "user", "content": "hello"}
    block = {"role": "user", "content": recalled_block_text("<detail>\nx\n</detail>")}
    summary = {"role": "user", "content": "[Context compacted] earlier work"}
    assert archivable([block, plain, summary]) == [plain]
