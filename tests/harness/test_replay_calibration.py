"""``memctx replay`` in the provider's tokens: calibration from reported usage, and our
compactions printed beside the ones the transcript records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memctx.cli import main
from memctx.harness import format_replay, recorded_compactions, replay_transcript
from memctx.messages import TokenCounter
from memctx.transcripts import Transcript, Usage

UNSEEN, SCALE = 25_000, 1.1  # the "provider": a system prompt + tools, and its tokenizer


def claude_like(pairs: int = 100, recorded_at_provider: int = 130_000) -> Transcript:
    """One request, then tool calls of ~1,000 counted tokens each; every assistant message
    reports the input its call billed; one recorded auto-compaction."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the flaky test suite."}]
    for k in range(pairs):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {k}: reading the next module."},
                    {"type": "tool_use", "id": f"t{k}", "name": "read", "input": {"n": k}},
                ],
            }
        )
        body = f"module {k} line {{}}: assert retry_count == {k}\n"
        text = "".join(body.format(j) for j in range(70))
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": text}],
            }
        )
    messages.append({"role": "assistant", "content": "All modules read."})
    counter = TokenCounter()
    usage: dict[int, Usage] = {}
    counted = 0
    boundary = None
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            billed = UNSEEN + round(SCALE * counted)
            usage[i] = Usage(input_tokens=billed)
            if boundary is None and billed >= recorded_at_provider:
                boundary = i
        counted += counter.count_message(message)
    assert boundary is not None
    return Transcript(
        messages=messages,
        format="anthropic",
        source="/data/claude-like.jsonl",
        compaction_boundary=boundary,
        usage=usage,
        meta={"compactions": [{"trigger": "auto", "pre_tokens": recorded_at_provider}]},
    )


def test_the_window_is_read_in_the_providers_tokens(tmp_path: Path) -> None:
    transcript = claude_like()
    report = replay_transcript(
        transcript, window=150_000, strategy="openclaw", calibrate=None, store_dir=tmp_path
    )
    fit = report.fit
    assert fit is not None and abs(fit.unseen - UNSEEN) <= 50
    assert fit.scale == pytest.approx(SCALE, abs=0.002)
    assert report.budget == fit.to_counted(150_000) and report.summary()["budget"] == report.budget
    assert report.summary()["violations"] == 0
    assert max(c.sent_tokens for c in report.calls) <= report.budget
    ours = report.compactions()
    assert ours and all(p.after < p.before for p in ours)
    assert [p.call for p in ours] == [c.call for c in report.calls if "compaction" in c.events]
    # openclaw compacts past window - reserve, about where this transcript says it did.
    first = report.provider_tokens(ours[0].before)
    assert first is not None and abs(first - 130_000) <= 0.1 * 150_000
    data = report.as_dict()
    assert data["calibration"]["unseen"] == fit.unseen
    assert data["compactions"][0]["provider_before"] == first
    assert data["recorded_compactions"] == [
        {"at": transcript.compaction_boundary, "pre_tokens": 130_000, "trigger": "auto"}
    ]
    text = format_replay([report])
    assert f"calibrated: provider ≈ {fit.unseen:,} + 1.100 x counted" in text
    assert "recorded #1" in text and "(preTokens, auto)" in text
    assert "nearest to recorded #1: openclaw #1" in text
    largest = report.summary()["llm_largest_prompt"]
    assert 0 < largest <= report.budget  # no summary input over the summariser's window
    assert f"largest summary or extraction input: {largest:,} tokens" in text


def test_without_calibration_the_window_is_the_counted_one(tmp_path: Path) -> None:
    transcript = claude_like()
    report = replay_transcript(transcript, window=150_000, strategy="truncate")
    assert report.fit is None and report.budget == 150_000
    plain = Transcript(transcript.messages, "anthropic", "/data/plain.json")
    assert replay_transcript(plain, window=150_000, strategy="full", calibrate=None).fit is None
    with pytest.raises(ValueError, match="no-calibrate"):
        replay_transcript(plain, window=150_000, strategy="full", calibrate=True)
    with pytest.raises(ValueError, match="system prompt, tool definitions"):
        replay_transcript(transcript, window=20_000, strategy="full", calibrate=True)


def test_recorded_compactions_read_what_the_transcript_holds() -> None:
    transcript = claude_like()
    [only] = recorded_compactions(transcript)
    assert (only.at, only.pre_tokens, only.trigger) == (
        transcript.compaction_boundary,
        130_000,
        "auto",
    )
    two = Transcript(
        transcript.messages,
        "claude-code",
        "x.jsonl",
        compaction_boundary=9,
        meta={"compactions": [{"trigger": "manual", "pre_tokens": 5}, {"pre_tokens": True}]},
    )
    # Only the last boundary's position is known; a non-integer preTokens is not trusted.
    assert [(r.at, r.pre_tokens, r.trigger) for r in recorded_compactions(two)] == [
        (None, 5, "manual"),
        (9, None, None),
    ]
    bare = Transcript(transcript.messages, "claude-code", "x.jsonl", compaction_boundary=4)
    assert [(r.at, r.pre_tokens) for r in recorded_compactions(bare)] == [(4, None)]


def test_cli_replays_several_strategies_and_says_how_it_calibrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = claude_like(pairs=30, recorded_at_provider=50_000)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"messages": transcript.messages}))
    code = main(
        ["replay", str(path), "--window", "60000", "--strategy", "truncate", "--strategy", "full"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "calibrated" not in out  # a plain file reports no usage
    assert out.count("claude-like") == 0 and "truncate" in out and "  full" in out
    table = [line.split() for line in out.splitlines() if line.lstrip().startswith("t.json ")]
    rows = [row for row in table if row[2] == "60000"]  # source, strategy, window, ...
    assert [row[1] for row in rows] == ["truncate", "full"]  # one row per strategy, in order
    code = main(["replay", str(path), "--window", "60000", "--strategy", "full", "--calibrate"])
    assert code == 2 and "no-calibrate" in capsys.readouterr().err  # a usage error
