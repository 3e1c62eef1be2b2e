"""End to end: the three real Claude Code sessions replayed call by call at 200K and 64K.

Each replay runs the context hook before every model call of the session and the compaction
hook at its real compaction. The table (tokens sent per call, trims, recall tokens, hook
latency) is printed; run with ``-s`` to see it, or use ``memctx replay``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.datasets import dataset_path

from memctx.harness.replay import ReplayReport, format_replay, replay_transcript
from memctx.transcripts.load import load_transcript

SESSIONS = (
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
)
WINDOWS = (200_000, 64_000)

pytestmark = pytest.mark.dataset


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[ReplayReport]:
    out = []
    for name in SESSIONS:
        transcript = load_transcript(dataset_path("claude-code", name))
        for window in WINDOWS:
            store: Path = tmp_path_factory.mktemp(f"replay-{window}")
            out.append(replay_transcript(transcript, window=window, store_dir=store))
    print("\n" + format_replay(out))
    return out


def test_every_call_is_valid_and_within_the_window(reports: list[ReplayReport]) -> None:
    assert len(reports) == len(SESSIONS) * len(WINDOWS)
    for report in reports:
        s = report.summary()
        assert s["calls"] > 100, s
        assert s["violations"] == 0, s
        assert s["over_window"] == 0, s
        assert s["hook_failures"] == 0, (s, report.stats.get("last_error"))
        assert all(r.tokens_out <= report.window - 4000 for r in report.rows), s


def test_the_small_window_trims_and_recalls(reports: list[ReplayReport]) -> None:
    for report in reports:
        s = report.summary()
        if report.window == 64_000:
            assert s["max_tokens_in"] > 64_000 and s["trims"] > 0, s
        else:
            assert s["trims"] == 0, s  # the sessions peak near 130K: nothing to trim at 200K
        assert s["recalls"] > 0, s
        cap = min(4000, report.window // 10)
        assert all(r.recall_tokens <= cap for r in report.rows), s


def test_the_compaction_was_archived_and_knowledge_extracted(reports: list[ReplayReport]) -> None:
    for report in reports:
        stats = report.stats
        assert stats["counts"]["on_before_compact"] == 1
        assert stats["archive"]["archived"] > 50
        assert stats["worker"]["done"].get("extraction") == 1, stats["worker"]
        assert stats["extraction"]["llm_calls"] > 0, stats["extraction"]
        assert stats["extraction"].get("llm_failures", 0) == 0, stats["extraction"]
        assert stats["knowledge"]["live"] > 0, (stats["knowledge"], stats["extraction"])
