"""One tool output larger than the window: every strategy survives it, and says how.

The user-reported failure ("prompt is too long: 207547 tokens > 200000" on every turn after
one huge `cat`) must not happen to any strategy: each call's context fits the window
(``full`` excepted: it is the unmanaged ceiling and sends everything), the tool pairing
holds, and every call whose transcript exceeded the window carries the recovery path the
strategy took, which ``memctx replay`` prints.
"""

from __future__ import annotations

from typing import Any

import pytest

from memctx.harness import DEFAULT_STRATEGIES, format_replay, replay_transcript
from memctx.strategies import HOOK_STRATEGY
from memctx.transcripts import Transcript

WINDOW = 32_000


def tool_turn(k: int, chars: int) -> list[dict[str, Any]]:
    line = f"src/mod{k}.py: line of output number {k}\n"
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Reading module {k}."},
                {"type": "tool_use", "id": f"t{k}", "name": "read", "input": {"n": k}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": f"t{k}",
                    "content": line * (chars // len(line)),
                }
            ],
        },
    ]


def transcript(huge: int = 1, chars: int = 150_000) -> Transcript:
    """Twelve ordinary tool calls, ``huge`` outputs of ``chars`` (~50K tokens each, more
    than the window) in a row, eight more calls."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing build."}]
    for k in range(12):
        messages += tool_turn(k, 6_000)
    for k in range(huge):
        messages += tool_turn(90 + k, chars)
    for k in range(12, 20):
        messages += tool_turn(k, 6_000)
    messages.append({"role": "assistant", "content": "Done."})
    return Transcript(messages=messages, format="anthropic", source="/data/huge-output.json")


@pytest.mark.parametrize("huge", [1, 3])
@pytest.mark.parametrize("strategy", [*DEFAULT_STRATEGIES, HOOK_STRATEGY])
def test_every_strategy_survives_a_tool_output_over_the_window(strategy: str, huge: int) -> None:
    report = replay_transcript(transcript(huge), window=WINDOW, strategy=strategy)
    summary = report.summary()
    paths = report.recovery_paths()
    assert paths and summary["recoveries"] == sum(paths.values()), (strategy, summary)
    assert "not reported" not in paths, paths
    assert summary["violations"] == 0, (strategy, report.violation_kinds())
    needing = [c for c in report.calls if c.recovery]
    assert all(max(c.history_tokens, c.compacted_from) > WINDOW for c in needing)
    if strategy == "full":  # the ceiling does not recover: the provider would refuse these
        assert set(paths) == {"none: sent whole"} and summary["over_window"] == len(needing)
    else:
        assert summary["over_window"] == 0, summary
        assert all(c.sent_tokens <= WINDOW for c in report.calls)
    text = format_replay([report])
    assert "exceeded the window:" in text and next(iter(paths)) in text


def test_the_recovery_paths_name_what_each_design_does() -> None:
    def paths(strategy: str, huge: int = 3) -> set[str]:
        report = replay_transcript(transcript(huge), window=WINDOW, strategy=strategy)
        return set(report.recovery_paths())

    assert paths("truncate") == {"dropped the oldest messages"}
    assert all(p.startswith("masked old tool outputs") for p in paths("observation-masking"))
    # The hook alone: trim, and the oversized results cut in the copy sent.
    assert "on_context trimmed, cut 3 oversized tool results" in paths(HOOK_STRATEGY)
    # Seed 001's ladder: after a compaction the loop guard makes the next one wait, so the
    # second huge output is refused by the "provider" and overflow recovery compacts.
    meerkat = paths("meerkat")
    assert "compacted past the threshold" in meerkat
    assert any(p.startswith("overflow recovery: compacted x") for p in meerkat), meerkat
    assert "compacted past the threshold" in paths("openclaw", huge=1)
