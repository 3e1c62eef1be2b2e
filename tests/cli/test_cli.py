"""The memctx command line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import PLANT, session

from memctx.cli import main
from memctx.retrieval.embeddings import HashEmbedder
from memctx.store.raw.store import RawStore
from memctx.strategies import (
    HOOK_STRATEGY,
    BaseStrategy,
    Messages,
    Prepared,
    register_strategy,
    strategy_names,
)


def test_search_prints_memory_search_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None) as store:
        store.add("s1", "user", "the staging database runs on port 5433", turn=4)
        store.add("s1", "assistant", "unrelated note about the README")
    assert main(["search", str(tmp_path), "which port does staging use", "--limit", "1"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["content"] == "the staging database runs on port 5433"
    assert (hits[0]["session_id"], hits[0]["turn"]) == ("s1", 4)


def test_search_on_a_folder_without_a_store_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", str(tmp_path), "anything"]) == 2
    assert "no segments.jsonl" in capsys.readouterr().err


def test_check_reports_a_broken_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    )
    assert main(["check", str(good), str(bad), "--trials", "2"]) == 1
    out = capsys.readouterr().out
    assert "good.json" in out and "ERROR" in out


# -- memctx replay ---------------------------------------------------------------------------

KINDS = ("pairing", "hard_cap", "window", "secrets")
SUMMARY = "This session is being continued from a previous conversation. Summary: turns 0-11."
WINDOW = "12000"


def _transcript(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """An OpenAI-shaped session of ~14K tokens with one recorded compaction in the middle:
    too long for a 12K window before the compaction, so the context hook must trim."""
    first = session("s", 12, plants={1: PLANT}, tool_words=500)
    messages = [*first, {"role": "user", "content": SUMMARY}, *session("t", 6, seed=1)[1:]]
    path = tmp_path / "session.json"
    path.write_text(json.dumps(messages))
    return path, messages


def _assistant_calls(messages: list[dict[str, Any]]) -> int:
    return sum(m["role"] == "assistant" for m in messages[1:])


def _replay_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = main(["replay", *argv, "--json"])
    return status, json.loads(capsys.readouterr().out)


def test_replay_runs_the_context_hook_alone_through_the_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, messages = _transcript(tmp_path)
    status, (report,) = _replay_json(capsys, str(path), "--window", WINDOW)
    assert status == 0
    summary, calls = report["summary"], report["calls"]
    assert summary["strategy"] == HOOK_STRATEGY and summary["window"] == int(WINDOW)
    assert summary["calls"] == len(calls) == _assistant_calls(messages)
    assert {c["strategy"] for c in calls} == {HOOK_STRATEGY}
    # The summary is computed from the call rows.
    assert summary["trims"] == sum("trim" in c["events"] for c in calls) > 0
    assert summary["recalls"] == sum(c["recall_tokens"] > 0 for c in calls) > 0
    assert summary["max_sent"] == max(c["sent_tokens"] for c in calls) <= int(WINDOW)
    assert (summary["violations"], summary["over_window"]) == (0, 0)
    assert report["violation_kinds"] == dict.fromkeys(KINDS, 0)
    # The recorded compaction is replayed once, at the first call after the summary, and
    # never again: the hook strategy does not compact by itself.
    at = messages.index({"role": "user", "content": SUMMARY})
    compacted = [c for c in calls if "compaction" in c["events"]]
    assert summary["compactions"] == 1 and len(compacted) == 1
    assert compacted[0]["at"] == min(c["at"] for c in calls if c["at"] > at)
    before = [c for c in calls if c["at"] < at][-1]
    assert compacted[0]["history_tokens"] < before["history_tokens"]
    assert summary["llm_tokens"] > 0  # the archived history went to knowledge extraction


def test_replay_prints_a_section_per_report_then_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, messages = _transcript(tmp_path)
    assert main(["replay", str(path), "--window", WINDOW, "--window", "200000", "--per-turn"]) == 0
    lines = capsys.readouterr().out.splitlines()
    titles = [i for i, line in enumerate(lines) if line.endswith(" tokens")]
    assert [lines[i] for i in titles] == [
        f"session.json through {HOOK_STRATEGY} at 12,000 tokens",
        f"session.json through {HOOK_STRATEGY} at 200,000 tokens",
    ]
    clean = "  violations 0 (pairing 0, hard_cap 0, window 0, secrets 0)"
    assert [lines[i + 1] for i in titles] == [clean, clean]  # each check by name
    first = lines[titles[0] : titles[1]]
    # Our compaction beside the recorded one, then one line per call.
    assert any(line.startswith(f"  {HOOK_STRATEGY} #1 ") for line in first)
    header = next(i for i, line in enumerate(first) if line.split()[:2] == ["call", "at"])
    per_call = first[header + 1 : -1]
    assert first[-1] == "" and len(per_call) == _assistant_calls(messages)
    assert [int(line.split()[0]) for line in per_call] == list(range(len(per_call)))
    assert any(line.endswith("trim") for line in per_call)
    assert any("compaction" in line for line in per_call)
    # The table last: one row per report, in order.
    top = next(i for i, line in enumerate(lines) if line.split()[:1] == ["source"])
    assert top > titles[1] and lines[top - 1] == ""
    assert lines[top].split()[:5] == ["source", "strategy", "window", "budget", "calls"]
    assert [row.split()[:3] for row in lines[top + 1 :]] == [
        ["session.json", HOOK_STRATEGY, WINDOW],
        ["session.json", HOOK_STRATEGY, "200000"],
    ]


def test_replay_through_a_named_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = _transcript(tmp_path)
    status, (truncated,) = _replay_json(
        capsys, str(path), "--window", WINDOW, "--strategy", "truncate"
    )
    assert status == 0
    assert {c["strategy"] for c in truncated["calls"]} == {"truncate"}
    assert truncated["summary"]["trims"] > 0
    assert truncated["summary"]["compactions"] == truncated["summary"]["llm_tokens"] == 0
    # Over the window is "not fit" for full, not a violation: exit 0.
    status, (full,) = _replay_json(capsys, str(path), "--window", "5000", "--strategy", "full")
    assert status == 0
    assert full["summary"]["over_window"] > 0 and full["summary"]["violations"] == 0


class _DropToolResults(BaseStrategy):
    """Sends the transcript without its tool results: every tool call is orphaned."""

    name = "drop-tool-results"

    def prepare(self, transcript: Messages) -> Prepared:
        return Prepared([m for m in transcript if m.get("role") != "tool"])


def test_replay_exit_codes_name_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = _transcript(tmp_path)
    assert main(["replay", str(path), "--window", WINDOW, "--strategy", "nope"]) == 2
    assert "valid:" in capsys.readouterr().err
    assert main(["replay", str(path), "--set", "hardCapTokens=-1"]) == 2
    assert "hardCapTokens" in capsys.readouterr().err
    if _DropToolResults.name not in strategy_names():
        register_strategy(_DropToolResults.name, _DropToolResults)
    status = main(["replay", str(path), "--window", WINDOW, "--strategy", _DropToolResults.name])
    assert status == 1
    assert re.search(r"violations [1-9]\d* \(pairing [1-9]", capsys.readouterr().out)


def test_replay_applies_the_config_file_and_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = _transcript(tmp_path)
    _, (plain,) = _replay_json(capsys, str(path), "--window", WINDOW)
    assert max(c["recall_tokens"] for c in plain["calls"]) > 300
    config = tmp_path / "memctx.json"
    config.write_text(json.dumps({"hardCapTokens": 300}))
    status, (capped,) = _replay_json(capsys, str(path), "--window", WINDOW, "--config", str(config))
    assert status == 0
    assert 0 < max(c["recall_tokens"] for c in capped["calls"]) <= 300
    given = ("--config", str(config), "--set", "hardCapTokens=1")  # --set wins over the file
    _, (tiny,) = _replay_json(capsys, str(path), "--window", WINDOW, *given)
    assert max(c["recall_tokens"] for c in tiny["calls"]) <= 1
    # The file's enabled=false is kept, as the library keeps it: memctx off, nothing recalled;
    # --set enabled=true turns it back on.
    config.write_text(json.dumps({"enabled": False, "hardCapTokens": 300}))
    _, (off,) = _replay_json(capsys, str(path), "--window", WINDOW, "--config", str(config))
    assert max(c["recall_tokens"] for c in off["calls"]) == 0
    given = ("--config", str(config), "--set", "enabled=true")
    _, (on,) = _replay_json(capsys, str(path), "--window", WINDOW, *given)
    assert 0 < max(c["recall_tokens"] for c in on["calls"]) <= 300
