"""End to end: the three real Claude Code sessions replayed call by call at 200K and 64K.

Each replay goes through the harness replay engine with the ``memory-context-hook``
strategy: the context hook before every model call of the session, the compaction hook at
its real compaction, no compaction of the agent's own. The table (tokens sent per call,
trims, recall tokens, hook latency) is printed; run with ``-s`` to see it, or use
``memctx replay``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.datasets import dataset_path

from memctx.harness import ReplayReport, format_replay, replay_transcript
from memctx.retrieval.embeddings import HashEmbedder
from memctx.store import KnowledgeStore, RawStore
from memctx.strategies import HOOK_STRATEGY
from memctx.transcripts.load import load_transcript

SESSIONS = (
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
)
WINDOWS = (200_000, 64_000)

pytestmark = pytest.mark.dataset


@pytest.fixture(scope="module")
def replays(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[ReplayReport, Path]]:
    """Each report with the work directory its stores were kept in."""
    out = []
    for name in SESSIONS:
        transcript = load_transcript(dataset_path("claude-code", name))
        for window in WINDOWS:
            work: Path = tmp_path_factory.mktemp(f"replay-{window}")
            out.append((replay_transcript(transcript, window=window, store_dir=work), work))
    print("\n" + format_replay([report for report, _ in out]))
    return out


def test_every_call_is_valid_and_within_the_window(
    replays: list[tuple[ReplayReport, Path]],
) -> None:
    assert len(replays) == len(SESSIONS) * len(WINDOWS)
    for report, _ in replays:
        s = report.summary()
        assert s["strategy"] == HOOK_STRATEGY
        assert s["calls"] > 100, s
        assert s["violations"] == 0, (s, report.violation_kinds())
        assert s["over_window"] == 0, s
        assert s["hook_failures"] == 0, s
        assert all(c.sent_tokens <= report.window - 4000 for c in report.calls), s
        # One latency per call, and the percentiles come from them.
        assert len(report.result.stats["hook_latencies_ms"]) == s["calls"]
        assert 0 < s["p50_ms"] <= s["p95_ms"], s


def test_the_small_window_trims_and_recalls(replays: list[tuple[ReplayReport, Path]]) -> None:
    for report, _ in replays:
        s = report.summary()
        trimmed = [c for c in report.calls if "trim" in c.events]
        assert s["trims"] == len(trimmed), s
        if report.window == 64_000:
            assert s["max_history"] > 64_000 and s["trims"] > 0, s
        else:
            assert s["trims"] == 0, s  # the sessions peak near 130K: nothing to trim at 200K
        assert s["recalls"] == sum(c.recall_tokens > 0 for c in report.calls) > 0, s
        assert s["mean_recall"] > 0, s
        cap = min(4000, report.window // 10)
        assert all(c.recall_tokens <= cap for c in report.calls), s


def test_the_compaction_was_archived_and_knowledge_extracted(
    replays: list[tuple[ReplayReport, Path]],
) -> None:
    for report, work in replays:
        stats = report.result.stats
        # The one compaction the session records was replayed, at the first call after it.
        assert stats["compactions"] == 1
        (at,) = [i for i, c in enumerate(report.calls) if "compaction" in c.events]
        assert report.calls[at].history_tokens < report.calls[at - 1].history_tokens
        # Extraction is the strategy's only LLM work (it never summarizes).
        assert stats["llm_tokens"] > 0 and stats["hook_failures"] == 0
        store = work / "store"
        with RawStore(store, embedder=HashEmbedder(), eviction_days=None) as raw:
            assert len(raw) > 50
        assert KnowledgeStore(store).stats()["live"] > 0
