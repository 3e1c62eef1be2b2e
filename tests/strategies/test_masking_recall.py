"""The ``masking-recall`` strategy: masking as observation-masking does (in batches, stable
copies), what it masks or drops archived and recalled, the pinned state snapshot of what was
dropped (rules, files), the window, pairing in every format, and no LLM call of its own."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import litellm
import pytest
from helpers.eval_sessions import PLANT, QUESTION, session, strategy_setup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import FORMATS, abstract_conversations, examples, render

from memctx.messages import (
    BlockKind,
    inspect_message,
    is_compaction_summary,
    is_recalled_block,
    message_text,
    pairing_violations,
)
from memctx.strategies import build_strategy, parse_strategy, strategy_info, strategy_names
from memctx.strategies.masking_recall import MaskingRecallStrategy
from memctx.strategies.observation_masking import ObservationMaskingStrategy

NAME = "masking-recall"
RULE = "Never push directly to main; always open a pull request first."


def _build(tmp_path: Path, spec: str = NAME, window: int = 1_000_000) -> MaskingRecallStrategy:
    strategy = build_strategy(spec, strategy_setup(tmp_path, window))
    assert isinstance(strategy, MaskingRecallStrategy)
    strategy.start_session("s1")
    return strategy


def _calls(transcript: list[dict[str, Any]]) -> list[int]:
    """Where an agent calls the model: after each user request and each tool output."""
    return [
        i + 1
        for i, m in enumerate(transcript)
        if i and m["role"] in ("user", "tool") and i + 1 <= len(transcript)
    ]


def _history(context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in context if not is_recalled_block(m)]


def _masked(message: dict[str, Any]) -> bool:
    return any(
        b.kind is BlockKind.TOOL_RESULT and "[output of " in b.text and " omitted: " in b.text
        for b in inspect_message(message).blocks
    )


def test_it_is_registered_and_parses_its_settings(tmp_path: Path) -> None:
    assert NAME in strategy_names()
    info = strategy_info(NAME)
    assert info.searches and not info.summaries
    default = _build(tmp_path)
    # At most keepLast (10) outputs verbatim, as observation-masking; masked 5 at a time.
    assert default.keep_last == 10 and default.masking.keep_last == default.masking.mask_every == 5
    # A summary's budget (compaction.maxSummaryTokens), at most 15 % of a small window.
    assert default.pin_tokens == default.config.compaction.max_summary_tokens == 4_096
    assert _build(tmp_path / "s", window=16_000).pin_tokens == 2_400
    assert default.compactor is None and default.summarizer is None  # nothing to summarise
    assert parse_strategy(f"{NAME}:keepLast=3,pinTokens=500") == (
        NAME,
        {"keepLast": 3, "pinTokens": 500},
    )
    three = _build(tmp_path / "b", f"{NAME}:keepLast=3,pinTokens=500")
    assert (three.masking.keep_last, three.masking.mask_every, three.pin_tokens) == (2, 1, 500)
    zero = _build(tmp_path / "c", f"{NAME}:keepLast=0")
    assert (zero.masking.keep_last, zero.masking.mask_every) == (0, 1)  # masked at once


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (f"{NAME}:keepLast=-1", "want an integer >= 0"),
        (f"{NAME}:pinTokens=x", "want an integer >= 0"),
        (f"{NAME}:pinTokens=600000", "pinTokens must be between 0 and half the window"),
        (f"{NAME}:pin=3", "it takes keepLast, pinTokens"),
    ],
)
def test_bad_settings_are_refused_with_the_fix(tmp_path: Path, spec: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        build_strategy(spec, strategy_setup(tmp_path, 1_000_000))


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_it_masks_as_observation_masking_does_in_batches_with_stable_copies(
    tmp_path: Path, fmt: str
) -> None:
    transcript = session("s1", 24, fmt=fmt, tool_words=120)
    strategy = _build(tmp_path, f"{NAME}:keepLast=4")
    reference = ObservationMaskingStrategy(strategy.setup, keep_last=2, mask_every=2)
    reference.start_session("s1")
    sent: dict[int, dict[str, Any]] = {}  # transcript index -> the masked copy sent
    maskings = 0
    previous: list[dict[str, Any]] = []
    for at in _calls(transcript):
        part = transcript[:at]
        context = _history(strategy.prepare(part).context)
        assert context == reference.prepare(part).context  # the same masking, nothing cut
        for i, message in enumerate(context):
            if _masked(message):
                assert sent.setdefault(i, message) is message  # built once, sent again
        changed = sum(a is not b for a, b in zip(previous, context, strict=False))
        maskings += changed > 0
        previous = context
    outputs = sum(m["role"] == "tool" or "tool_result" in str(m["content"]) for m in transcript)
    assert len(sent) >= outputs - 4  # all but the last 2..3 are masked
    assert 0 < maskings <= outputs // 2  # the prefix moves once per batch of 2, not every call


def test_a_masked_output_is_archived_and_recalled_by_a_later_question(tmp_path: Path) -> None:
    transcript = session("s1", 12, tool_words=80)
    transcript[3]["content"] += f"\n{PLANT}\n"  # turn 0's tool output
    strategy = _build(tmp_path, f"{NAME}:keepLast=2")
    for at in _calls(transcript):
        strategy.prepare(transcript[:at])
    question = {"role": "user", "content": QUESTION}
    context = strategy.prepare([*transcript, question]).context
    history = _history(context)
    assert _masked(history[3]) and "8743" not in " ".join(map(message_text, history))
    blocks = [message_text(m) for m in context if is_recalled_block(m)]
    assert blocks and "8743" in blocks[0]  # the original came back through recall
    control = _build(tmp_path / "control", f"{NAME}:keepLast=2")
    without = session("s1", 12, tool_words=80)
    for at in _calls(without):
        control.prepare(without[:at])
    recalled = [message_text(m) for m in control.prepare([*without, question]).context]
    assert "8743" not in " ".join(recalled)  # the answer came from the planted output only


def _snapshots(context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in context if is_compaction_summary(m)]


def test_what_the_cut_drops_is_archived_recalled_and_its_state_stays_pinned(
    tmp_path: Path,
) -> None:
    window = 6_000
    transcript = session("s1", 60, plants={1: PLANT, 2: RULE}, tool_words=150)
    assert RULE in message_text(transcript[9])
    strategy = _build(tmp_path, window=window)
    setup = strategy.setup
    count = setup.counter.count_message
    limit = window - setup.config.reserve_tokens  # the history's budget
    cap = setup.config.recall_cap_tokens(window)
    cut_moves, previous_head, previous_snapshot = 0, None, None
    rewritten = 0
    for at in _calls(transcript):
        part = transcript[:at]
        prepared = strategy.prepare(part)
        context = prepared.context
        # The history within observation-masking's budget; the recall block from the reserve.
        assert sum(map(count, _history(context))) <= limit
        assert sum(map(count, context)) <= limit + cap <= window
        assert not pairing_violations(context)
        assert context[0] is transcript[0] and context[-1] is part[-1]
        snapshots = _snapshots(context)
        assert len(snapshots) <= 1
        if snapshots:
            snapshot = snapshots[0]
            assert context[1] is snapshot  # right after the system prompt
            assert count(snapshot) <= strategy.pin_tokens
            if transcript[9] not in context:  # the rule was dropped: its state is pinned
                assert "Never push directly to main" in message_text(snapshot)
            rewritten += snapshot is not previous_snapshot
            previous_snapshot = snapshot
        head = next((m for m in context[1:] if not is_compaction_summary(m)), None)
        cut_moves += head is not previous_head
        previous_head = head
    assert prepared.trimmed and transcript[5] not in context  # the plant's turn was dropped
    assert cut_moves < len(_calls(transcript)) / 4  # the cut moves seldom, in batches
    assert 1 <= rewritten <= cut_moves  # the same snapshot dict until the cut moves (cached)
    question = {"role": "user", "content": QUESTION}
    context = strategy.prepare([*transcript, question]).context
    blocks = [message_text(m) for m in context if is_recalled_block(m)]
    assert blocks and "8743" in blocks[0]
    assert "Never push directly to main" in message_text(_snapshots(context)[0])


def test_the_snapshot_stays_pinned_through_a_turn_longer_than_the_window(
    tmp_path: Path,
) -> None:
    """A request followed by more tool output than the window holds: the cut cannot pass
    the request, so the engine trims inside the turn; the snapshot (the rule) stays, and
    every call still fits the window."""
    window = 6_000
    transcript = session("s1", 40, plants={2: RULE}, tool_words=150)
    transcript.append({"role": "user", "content": "Now profile every endpoint, one by one."})
    for i in range(40):
        transcript.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_p{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": f'{{"command": "bench {i}"}}'},
                    }
                ],
            }
        )
        words = " ".join(f"endpoint{i}_sample{j} took {j} ms" for j in range(60))
        transcript.append({"role": "tool", "tool_call_id": f"call_p{i}", "content": words})
    strategy = _build(tmp_path, window=window)
    count = strategy.setup.counter.count_message
    pinned_late = 0
    for at in _calls(transcript):
        context = strategy.prepare(transcript[:at]).context
        assert sum(map(count, context)) <= window
        assert not pairing_violations(context)
        if at > len(transcript) - 40 and transcript[9] not in context:
            snapshots = _snapshots(context)
            assert snapshots and "Never push directly to main" in message_text(snapshots[0])
            pinned_late += 1
    assert pinned_late > 10


def test_the_snapshot_keeps_the_artifact_trail_and_the_newest_state(tmp_path: Path) -> None:
    """Files touched by dropped tool calls are in the snapshot with their last action, and a
    later cut keeps what an earlier snapshot knew (the previous snapshot is read back)."""
    window = 6_000
    transcript = session("s1", 80, tool_words=150)
    moved = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_mv",
                "type": "function",
                "function": {
                    "name": "bash",
                    "arguments": '{"command": "git mv src/old_loader.py src/config/loader_v2.py"}',
                },
            }
        ],
    }
    result = {"role": "tool", "tool_call_id": "call_mv", "content": ""}
    transcript[3:3] = [moved, result]
    strategy = _build(tmp_path, window=window)
    seen_in: list[int] = []
    for at in _calls(transcript):
        context = strategy.prepare(transcript[:at]).context
        snapshots = _snapshots(context)
        if moved not in context and snapshots:
            assert "loader_v2.py" in message_text(snapshots[0])
            seen_in.append(at)
    assert len(seen_in) > 1
    assert strategy.prepare(transcript).trimmed


def test_no_llm_call_but_the_offline_extractor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models: list[str] = []
    real = litellm.completion

    def counting(**kwargs: Any) -> Any:
        models.append(str(kwargs.get("model")))
        return real(**kwargs)

    monkeypatch.setattr(litellm, "completion", counting)
    transcript = session("s1", 40, plants={1: PLANT, 2: RULE}, tool_words=150)
    strategy = _build(tmp_path, window=6_000)
    for at in _calls(transcript):
        part = transcript[:at]
        assert strategy.compact(part) is None  # it never compacts
        strategy.prepare(part)
    strategy.end_session(transcript)
    usage = strategy.close()
    assert models and set(models) == {"memctx/offline"}  # facts mined, offline rules only
    assert usage.get("cost_usd", 0.0) == 0.0


@st.composite
def _long_output_conversations(draw: st.DrawFn, fmt: str) -> list[dict[str, Any]]:
    has_system, conv = draw(abstract_conversations())
    for turn in conv:
        for call in turn.calls:
            call.result = call.result * draw(st.integers(1, 40))
    return render(fmt, has_system, conv)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(
    max_examples=examples(12, thorough_at_most=100),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data(), keep=st.integers(0, 3), window=st.sampled_from([1_500, 6_000, 100_000]))
def test_pairing_is_kept_and_the_input_never_changed(
    fmt: str, data: st.DataObject, keep: int, window: int
) -> None:
    transcript = data.draw(_long_output_conversations(fmt))
    frozen = copy.deepcopy(transcript)
    with tempfile.TemporaryDirectory() as store:
        strategy = _build(Path(store), f"{NAME}:keepLast={keep}", window=window)
        for end in range(1, len(transcript) + 1):
            context = strategy.prepare(transcript[:end]).context
            if not pairing_violations(transcript[:end]):
                assert not pairing_violations(context)
        strategy.close()
    assert transcript == frozen
