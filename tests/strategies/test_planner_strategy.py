"""The planner strategy: payload refs, summary sidecar, pruning and the planner in one loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.eval_sessions import PLANT, scenario, session, strategy_setup

from memctx.compaction import SUMMARY_MARKER, sidecar_path
from memctx.harness.engine import run_scenario
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_messages_tokens
from memctx.strategies import build_strategy, strategy_info
from memctx.strategies.planner import PlannerStrategy

SECRET = "sk-proj-Zq8rT2vLm9XwK4pNc7YbD3hJf6GsA1eU"


def _with_build_log(messages: list[dict[str, Any]], at: int, middle: str) -> None:
    """Make the tool output of turn ``at`` a 60,000-character log with ``middle`` inside."""
    index = 1 + 4 * at + 2  # system, then request, call, result, reply per turn
    log = "".join(f"compile unit {j}: ok\n" for j in range(1_500))
    messages[index] = {**messages[index], "content": log[:30_000] + middle + log[30_000:60_000]}


def _play(strategy: PlannerStrategy, messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    sent, transcript = [], []
    for message in messages:
        if transcript and message["role"] == "assistant":
            sent.append(strategy.prepare(transcript).context)
        transcript.append(message)
    return sent


def test_planner_is_registered_without_summaries_or_embeddings(tmp_path: Path) -> None:
    assert not strategy_info("planner").summaries and not strategy_info("planner").searches
    strategy = build_strategy("planner:pruning=off", strategy_setup(tmp_path))
    assert isinstance(strategy, PlannerStrategy) and not strategy.searches


def test_an_oversized_output_is_sent_as_a_preview_with_a_ref_the_agent_can_read_back(
    tmp_path: Path,
) -> None:
    strategy = PlannerStrategy(strategy_setup(tmp_path, window=200_000))
    strategy.start_session("s1")
    messages = session("s1", 6, tool_words=50)
    _with_build_log(messages, 2, f"\nerror: linker cannot find -lquokka\nOPENAI_API_KEY={SECRET}\n")
    sent = _play(strategy, messages)
    last = sent[-1]
    log = next(m for m in last if m.get("tool_call_id") == "call_s1_2")
    assert len(log["content"]) < 3_000 and 'read_output_ref("tool-output/' in log["content"]
    assert strategy.counts["payload_refs"] == 1
    assert all(m is n for m, n in zip(sent[-2][:-2], last[: len(sent[-2]) - 2], strict=False))
    found = strategy.search("why can the linker not find quokka?")
    assert found and "cannot find -lquokka" in found[0] and SECRET not in found[0]
    files = list((tmp_path / "sessions" / "tool-output").glob("*.json"))
    assert len(files) == 1 and SECRET not in files[0].read_text()


def test_a_small_window_cuts_history_and_injects_the_summary_into_the_system_prompt(
    tmp_path: Path,
) -> None:
    window = 6_000
    strategy = PlannerStrategy(strategy_setup(tmp_path, window=window))
    strategy.start_session("s1")
    messages = session("s1", 40, plants={1: PLANT}, tool_words=120)
    sent = _play(strategy, messages)
    assert all(estimate_messages_tokens(c) <= window for c in sent)
    assert all(pairing_violations(c) == [] for c in sent)
    last = sent[-1]
    assert last[0]["role"] == "system" and SUMMARY_MARKER in last[0]["content"]
    assert sum(SUMMARY_MARKER in str(m.get("content")) for m in last) == 1
    assert strategy.counts["summary_injections"] > 0
    # The sidecar kept the session's items on disk, none of them its own injected text.
    saved = json.loads(sidecar_path(tmp_path / "sessions" / "s1.jsonl").read_text())
    assert saved["lastProcessedMessageCount"] > 0 and saved["items"]
    assert not any(SUMMARY_MARKER in item["text"] for item in saved["items"])


def test_a_roomy_window_sends_the_transcript_as_it_is_without_a_summary(tmp_path: Path) -> None:
    strategy = PlannerStrategy(strategy_setup(tmp_path, window=200_000))
    strategy.start_session("s1")
    messages = session("s1", 10, tool_words=40)
    sent = _play(strategy, messages)
    assert sent[-1] == messages[: len(sent[-1])]
    assert strategy.counts["summary_injections"] == 0


def test_a_replay_through_the_engine_has_no_violations_and_no_secret_on_disk(
    tmp_path: Path,
) -> None:
    case = scenario(turns=40, window=6_000, secret=SECRET, tool_words=150)
    result = run_scenario(case, "planner", "hash", work_dir=tmp_path)
    assert result.stats["violation_kinds"] == {
        "pairing": 0,
        "hard_cap": 0,
        "window": 0,
        "secrets": 0,
    }
    assert result.stats["trims"] > 0


def _long_last_turn(outputs: int, words: int, request_words: int = 10) -> list[dict[str, Any]]:
    """A session whose latest request is followed by ``outputs`` tool exchanges of
    ``words`` words each (or whose request itself is ``request_words`` long)."""
    messages = session("s1", 4, tool_words=20)
    request = " ".join(f"step{j}" for j in range(request_words))
    messages.append({"role": "user", "content": f"Run every check now: {request}"})
    for k in range(outputs):
        call_id = f"call_last_{k}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "make check"}'},
                    }
                ],
            }
        )
        text = " ".join(f"line{k}_{j} ok" for j in range(words))
        messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
    return messages


@pytest.mark.parametrize(
    ("outputs", "words", "request_words"),
    [(6, 600, 10), (1, 3_000, 10), (0, 0, 4_000)],  # the 2nd goes to a file ref, as ever
    ids=["a turn of many outputs", "one output larger than the window", "a huge request"],
)
def test_a_latest_turn_larger_than_the_window_is_cut_to_fit(
    tmp_path: Path, outputs: int, words: int, request_words: int
) -> None:
    """When even the latest request and its last exchange exceed the window, the call is
    still within it (oversized results cut, then the oldest dropped) and pairs its calls."""
    window = 4_000
    strategy = PlannerStrategy(strategy_setup(tmp_path, window=window))
    strategy.start_session("s1")
    messages = _long_last_turn(outputs, words, request_words)
    assert strategy.setup.counter.count_messages(messages[-(2 * outputs + 1) :]) > window
    prepared = strategy.prepare(messages)
    assert strategy.setup.counter.count_messages(prepared.context) <= window
    assert not pairing_violations(prepared.context)
    assert prepared.context[0]["role"] == "system"  # the system prompt stays
    if outputs != 1:
        assert "planner: only the latest request" in prepared.recovery
