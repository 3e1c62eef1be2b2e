"""Acceptance on real data: every transcript loads, and repair survives random 20% cuts."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.datasets import DATASETS, dataset_path

from memctx.cli.foundation import deletion_trials
from memctx.messages.pairing import pairing_violations, repair_tool_pairing
from memctx.transcripts.load import load_transcripts

PATTERNS = (
    "claude-code/*.jsonl",
    "claude-code/*/subagents/*.jsonl",
    "swe-agent/*.traj",
    "openhands-swe-gym/sample_raw.json",
    "swe-agent-nebius/sample_raw.json",
)
FILES = sorted(p for pattern in PATTERNS for p in DATASETS.glob(pattern))


def test_the_datasets_hold_the_expected_files() -> None:
    dataset_path()
    assert len(FILES) >= 20, FILES  # 12 Claude Code, 8 SWE-agent, 2 samples


@pytest.mark.dataset
@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(Path(p).relative_to(DATASETS)))
def test_random_twenty_percent_cuts_repair_to_zero_violations(path: Path) -> None:
    transcripts = load_transcripts(path)
    assert transcripts
    for transcript in transcripts:
        assert transcript.messages
        repaired = repair_tool_pairing(transcript.messages)
        assert pairing_violations(repaired) == []
        before, after = deletion_trials(transcript.messages, trials=50, seed=7)
        assert after == 0
        has_tools = any(
            isinstance(m, dict)
            and (
                m.get("tool_calls") or m.get("role") == "tool" or isinstance(m.get("content"), list)
            )
            for m in transcript.messages
        )
        if has_tools and len(transcript.messages) > 10:
            # The cuts really did break pairing: the test is not passing vacuously.
            assert before > 0
