"""The turn-based compactor of seed 002: the cut at complete turns, the summary through the
seed-001 summariser, safe failure, the discarded messages, the dual-threshold trigger with
turn 0 and the loop guard; and properties in the four provider formats: an agent loop never
compacts on turn 0 or on consecutive turns and stays within the guard's bound, tool pairs
are never split, the recent turns are kept verbatim, a failure changes nothing."""

from __future__ import annotations

import copy
import math
from itertools import pairwise
from typing import Any

import pytest
from compaction_support import (
    ScriptedModel,
    assistant,
    call,
    compaction_setup,
    failing_client,
    result,
    system,
    user,
    words,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.compaction import (
    SUMMARY_ESTIMATE_SLACK,
    TRUNCATION_MARKER,
    LoopGuard,
    Summarizer,
    TurnCompactionResult,
    TurnCompactionStatus,
    TurnCompactor,
    compact_turns,
    is_turn_start,
    plan_turn_cut,
    summary_message,
)
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient
from memctx.messages import (
    COMPACTED_PREFIX,
    InfoCache,
    TokenCounter,
    is_compaction_summary,
    is_recalled_block,
    leading_system_count,
    pairing_violations,
    recalled_block_text,
)
from tests.strategies import (
    FORMATS,
    TurnLoopCase,
    compaction_conversations,
    damaged_conversations,
    examples,
    is_plain_user_text,
    turn_loop_cases,
)

_settings = settings(
    max_examples=examples(40, thorough_at_most=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
COUNTER = TokenCounter()
WINDOW = 200_000


def config(threshold: int = 1_000, recent: int = 2, spacing: int = 3, **extra: Any) -> Any:
    compaction = {
        "auto_compact_threshold": threshold,
        "recent_turn_budget": recent,
        "min_turns_between_compactions": spacing,
        **extra,
    }
    return MemoryContextConfig(compaction=compaction)


def turn(k: int, size: int = 20) -> list[dict[str, Any]]:
    """One turn: the request, a tool call and its result, the reply."""
    cid = f"call_{k}"
    return [
        user(words(f"ask{k}x", size)),
        call(cid, "read", path=f"src/mod{k}.py"),
        result(cid, words(f"out{k}x", size)),
        assistant(f"done {k}"),
    ]


def history(n: int, size: int = 20) -> list[dict[str, Any]]:
    return [system(), *(m for k in range(n) for m in turn(k, size))]


def compact(
    messages: list[Any], client: LLMClient, *, window: int = WINDOW, **kwargs: Any
) -> TurnCompactionResult:
    """compact_turns, checking that the caller's list and dicts are left as they were."""
    settings = kwargs.pop("config", None) or config()
    snapshot, ids = copy.deepcopy(messages), [id(m) for m in messages]
    out = compact_turns(messages, compaction_setup(client, settings, window=window), **kwargs)
    assert messages == snapshot and [id(m) for m in messages] == ids
    assert out.tokens_after == COUNTER.count_messages(out.messages)
    return out


def assert_unchanged(out: TurnCompactionResult, messages: list[Any]) -> None:
    assert [id(m) for m in out.messages] == [id(m) for m in messages]
    assert out.kept == out.messages and out.discarded == [] and out.summary_message is None


# --- the cut -------------------------------------------------------------------------------


def test_a_turn_starts_at_a_user_message_that_is_not_a_tool_result_or_a_marker() -> None:
    infos = InfoCache()
    anthropic_result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
    }
    assert is_turn_start(user("fix it"), infos)
    assert not is_turn_start(assistant("ok"), infos)
    assert not is_turn_start(result("c", "ok"), infos)
    assert not is_turn_start(anthropic_result, infos)
    assert not is_turn_start(summary_message("earlier"), infos)
    assert not is_turn_start(user(recalled_block_text("<detail>x</detail>")), infos)


def test_the_cut_keeps_the_last_complete_turns() -> None:
    messages = history(5)
    cut = plan_turn_cut(messages, 2, InfoCache())
    assert (cut.head, cut.cut, cut.turns, cut.kept_turns) == (1, 1 + 3 * 4, 5, 2)
    # The budget is a maximum: the oldest turn is always summarised (Meerkat's rule).
    assert plan_turn_cut(messages, 5, InfoCache()).kept_turns == 4
    assert plan_turn_cut(messages, 9, InfoCache()).cut == 1 + 4
    one_long_turn = [system(), *turn(0), *[m for k in range(1, 6) for m in turn(k)[1:3]]]
    whole = plan_turn_cut(one_long_turn, 4, InfoCache())
    assert (whole.cut, whole.kept_turns, whole.turns) == (len(one_long_turn), 0, 1)


def test_a_cut_that_would_part_a_call_from_its_result_moves_back_a_turn() -> None:
    # A damaged history: the user interjected between a call and its result.
    messages = [
        system(),
        *turn(0),
        user("first"),
        call("c1", "bash", cmd="make"),
        user("interjection"),
        result("c1", "built"),
        assistant("done"),
        *turn(2),
    ]
    cut = plan_turn_cut(messages, 2, InfoCache())
    assert messages[cut.cut]["content"] == "first" and cut.kept_turns == 3
    out = compact(messages, ScriptedModel().client(), config=config(recent=2))
    assert out.compacted and pairing_violations(out.messages) == []
    # The history was damaged: repair reorders the kept turn (the result goes first), but
    # the call and its result are both kept and nothing of the turn is lost.
    assert out.messages[2] is messages[cut.cut] and out.messages[3] is messages[cut.cut + 1]
    assert len(out.messages) == 2 + len(messages) - cut.cut
    assert [id(m) for m in out.discarded] == [id(m) for m in messages[1 : cut.cut]]


# --- compact_turns -------------------------------------------------------------------------


def test_old_turns_become_one_summary_and_the_recent_turns_stay_verbatim() -> None:
    model = ScriptedModel()
    messages = history(5)
    out = compact(messages, model.client(), turn=7)
    assert out.status is TurnCompactionStatus.COMPACTED and out.compacted and not out.failed
    assert out.messages[0] is messages[0]
    assert out.summary == "SUMMARY-0" and out.messages[1] == summary_message("SUMMARY-0")
    assert out.summary_message is out.messages[1]
    assert out.messages[1]["content"].startswith(f"{COMPACTED_PREFIX} ")
    assert [id(m) for m in out.messages[2:]] == [id(m) for m in messages[-8:]]
    assert [id(m) for m in out.kept] == [id(messages[0]), *(id(m) for m in messages[-8:])]
    assert [id(m) for m in out.discarded] == [id(m) for m in messages[1:-8]]
    assert out.to_index == out.discarded and out.turn == 7
    assert out.tokens_before == COUNTER.count_messages(messages) > out.tokens_after
    assert out.reason == "compacted 12 messages into a summary; kept the last 2 of 5 turns"
    (prompt,) = model.prompts
    assert "CONTEXT COMPACTION" in prompt  # seed 002's handoff prompt
    assert "ask0x0000" in prompt and "ask2x0000" in prompt and "ask3x0000" not in prompt
    assert "careful coding agent" not in prompt  # the system prompt stays apart
    assert model.max_tokens == [4096] and out.usage.calls == 1


def test_the_summary_output_is_limited_to_max_summary_tokens() -> None:
    model = ScriptedModel(lambda prompt, i: words("long", 5_000))
    out = compact(history(4), model.client(), config=config(max_summary_tokens=300))
    assert model.max_tokens == [300]
    assert out.compacted and out.summary.endswith(TRUNCATION_MARKER.strip())
    assert COUNTER.count_message(out.summary_message) <= math.ceil(300 * SUMMARY_ESTIMATE_SLACK)
    # Small windows lower the limit as seed 001 does (1/16 of the window).
    small = ScriptedModel()
    compact(history(4), small.client(), config=config(), window=3_200)
    assert small.max_tokens == [200]


def test_earlier_summaries_roll_forward_and_markers_are_not_indexed_again() -> None:
    model = ScriptedModel()
    earlier = summary_message("the parser was fixed")
    recalled = user(recalled_block_text("<detail>\nuser: old fact\n</detail>"))
    messages = [system(), earlier, recalled, *history(3)[1:]]
    out = compact(messages, model.client(), config=config(recent=1))
    assert out.compacted
    (prompt,) = model.prompts
    assert "Summary of earlier history" in prompt and "the parser was fixed" in prompt
    assert out.discarded[:2] == [earlier, recalled]
    assert out.to_index == out.discarded[2:]
    assert not any(is_compaction_summary(m) or is_recalled_block(m) for m in out.to_index)
    assert sum(is_compaction_summary(m) for m in out.messages) == 1


def test_only_markers_before_the_kept_turns_is_nothing_to_compact() -> None:
    model = ScriptedModel()
    # A history before any turn holding only an earlier summary and a recalled block.
    messages = [system(), summary_message("before"), user(recalled_block_text("<d>x</d>"))]
    out = compact(messages, model.client(), config=config(recent=2))
    assert out.status is TurnCompactionStatus.NOTHING_TO_COMPACT
    assert "recentTurnBudget" in out.reason and model.requests == []
    assert_unchanged(out, messages)


def test_fewer_turns_than_the_budget_still_summarise_the_oldest() -> None:
    messages = [system(), summary_message("before"), *history(2)[1:]]
    out = compact(messages, ScriptedModel().client(), config=config(recent=2))
    assert out.compacted and out.messages[2:] == messages[2 + 4 :]  # the second turn stays
    assert [id(m) for m in out.discarded] == [id(m) for m in messages[1 : 2 + 4]]


def test_a_failed_summary_leaves_the_history_unchanged_and_says_why() -> None:
    messages = history(5)
    snapshot = copy.deepcopy(messages)
    out = compact(messages, failing_client())
    assert out.status is TurnCompactionStatus.FAILED and out.failed and not out.compacted
    assert out.messages == snapshot
    assert_unchanged(out, messages)
    assert "no summary could be written" in out.error and "provider unavailable" in out.error
    assert out.reason.startswith("compaction failed, history unchanged: ")
    assert out.usage.failures >= 1 and out.notes


def test_anything_raising_is_a_failure_that_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(self: Summarizer, *args: Any, **kwargs: Any) -> Any:
        raise KeyError("bad reply shape")

    monkeypatch.setattr(Summarizer, "in_stages", boom)
    messages = history(5)
    snapshot = copy.deepcopy(messages)
    out = compact(messages, ScriptedModel().client())
    assert out.failed and out.error == "KeyError: 'bad reply shape'"
    assert out.messages == snapshot
    assert_unchanged(out, messages)


def test_the_offline_model_compacts_deterministically() -> None:
    first = compact(history(6, size=60), LLMClient())
    second = compact(history(6, size=60), LLMClient())
    assert first.compacted and first.messages == second.messages
    assert first.summary and first.summary == second.summary


def test_bad_arguments_name_the_problem() -> None:
    setup = compaction_setup(LLMClient(), config(), window=WINDOW)
    with pytest.raises(TypeError, match="list of message dicts"):
        compact_turns("hello", setup)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="context window"):
        compaction_setup(LLMClient(), config(), window=-5)
    compactor = TurnCompactor(setup)
    with pytest.raises(ValueError, match="turn must be an int"):
        compactor.maybe_compact(history(3), turn=-1, last_input_tokens=None)


# --- TurnCompactor: trigger, turn 0, guard -------------------------------------------------


def test_the_dual_threshold() -> None:
    compactor = TurnCompactor(compaction_setup(LLMClient(), config(threshold=1_000), window=WINDOW))
    due = compactor.due
    assert due(3, last_input_tokens=1_000, estimated_tokens=10) == (
        "last input 1,000 tokens >= threshold 1,000"
    )
    assert due(3, last_input_tokens=None, estimated_tokens=1_200) == (
        "estimated history 1,200 tokens >= threshold 1,000"
    )
    assert due(3, last_input_tokens=999, estimated_tokens=999) is None
    assert due(0, last_input_tokens=10**9, estimated_tokens=10**9) is None


def test_never_on_turn_0() -> None:
    model = ScriptedModel()
    compactor = TurnCompactor(compaction_setup(model.client(), config(threshold=1), window=WINDOW))
    messages = history(6)
    out = compactor.maybe_compact(messages, turn=0, last_input_tokens=10**9)
    assert out.status is TurnCompactionStatus.NOT_DUE and out.reason == "never on turn 0"
    assert_unchanged(out, messages)
    assert model.requests == [] and compactor.stats()["compactions"] == 0


def test_under_the_threshold_is_not_due_and_costs_no_call() -> None:
    model = ScriptedModel()
    compactor = TurnCompactor(
        compaction_setup(model.client(), config(threshold=10**6), window=WINDOW)
    )
    out = compactor.maybe_compact(history(6), turn=4, last_input_tokens=5)
    assert out.status is TurnCompactionStatus.NOT_DUE and "under the threshold" in out.reason
    assert out.tokens_before == COUNTER.count_messages(history(6))  # counted when not given
    assert model.requests == []


def test_min_turns_between_compactions_is_respected() -> None:
    model = ScriptedModel()
    compactor = TurnCompactor(
        compaction_setup(model.client(), config(threshold=2_000, spacing=3), window=WINDOW)
    )
    messages = history(8)
    statuses = []
    for t in range(1, 8):
        # The provider reports a full context every turn; each compaction is effective.
        out = compactor.maybe_compact(messages, turn=t, last_input_tokens=10**6)
        statuses.append(out.status)
        messages = [*out.messages, *turn(100 + t)]
    c, d = TurnCompactionStatus.COMPACTED, TurnCompactionStatus.DEFERRED
    assert statuses == [c, d, d, c, d, d, c]  # turns 1, 4 and 7
    assert compactor.stats() == {
        "compactions": 3,
        "deferred": 4,
        "ineffective": 0,
        "failed": 0,
        "streak": 0,
        "waiting_until_turn": 10,
    }


def test_a_compaction_that_stays_over_the_threshold_backs_off() -> None:
    # The kept turn alone is over the threshold: compacting cannot help.
    model = ScriptedModel()
    compactor = TurnCompactor(
        compaction_setup(model.client(), config(threshold=50, recent=1, spacing=2), window=WINDOW)
    )
    messages = history(3, size=40)
    compacted_at = []
    for t in range(1, 40):
        out = compactor.maybe_compact(messages, turn=t, last_input_tokens=None)
        if out.compacted:
            compacted_at.append(t)
            assert "estimated history" in out.reason
        messages = [*out.messages, *turn(100 + t, size=40)]
    assert compacted_at == [1, 5, 13, 29]  # waits of 4, 8, 16 turns
    stats = compactor.stats()
    assert stats["ineffective"] == 4 and stats["streak"] == 4
    assert stats["waiting_until_turn"] == 29 + 32  # the cap


def test_a_failure_is_recorded_in_the_shared_guard() -> None:
    guard = LoopGuard(min_turns_between=3)
    compactor = TurnCompactor(
        compaction_setup(failing_client(), config(threshold=1), window=WINDOW), guard=guard
    )
    messages = history(5)
    out = compactor.maybe_compact(messages, turn=2, last_input_tokens=None)
    assert out.failed and out.messages == messages
    assert out.reason.startswith("estimated history") and "history unchanged" in out.reason
    assert guard.failed == 1 and guard.waiting_until_turn == 2 + 6
    assert "provider unavailable" in guard.reason
    later = compactor.maybe_compact(messages, turn=3, last_input_tokens=None)
    assert later.status is TurnCompactionStatus.DEFERRED and "provider unavailable" in later.reason


# --- properties in the four formats --------------------------------------------------------


def _turn_starts(messages: list[Any]) -> list[int]:
    """Where turns start, read independently of the module: plain user text, no marker."""
    head = leading_system_count(messages, InfoCache())
    return [
        i
        for i in range(head, len(messages))
        if is_plain_user_text(messages[i])
        and not is_compaction_summary(messages[i])
        and not is_recalled_block(messages[i])
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_recent_turns_stay_verbatim_and_pairs_whole(fmt: str) -> None:
    @_settings
    @given(compaction_conversations(fmt), st.integers(1, 6))
    def check(messages: list[Any], recent: int) -> None:
        assert pairing_violations(messages) == []
        out = compact(messages, ScriptedModel().client(), config=config(recent=recent))
        assert pairing_violations(out.messages) == []
        starts = _turn_starts(messages)
        head = leading_system_count(messages, InfoCache())
        keep = min(recent, max(len(starts) - 1, 0))  # the oldest turn is always summarised
        cut = starts[-keep] if keep else len(messages)
        if not any(
            not is_compaction_summary(m) and not is_recalled_block(m) for m in messages[head:cut]
        ):
            assert out.status is TurnCompactionStatus.NOTHING_TO_COMPACT
            assert_unchanged(out, messages)
            return
        assert out.compacted
        assert [id(m) for m in out.messages[:head]] == [id(m) for m in messages[:head]]
        assert out.messages[head] is out.summary_message
        assert [id(m) for m in out.messages[head + 1 :]] == [id(m) for m in messages[cut:]]
        assert [id(m) for m in out.discarded] == [id(m) for m in messages[head:cut]]

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_damaged_histories_come_out_with_whole_pairs(fmt: str) -> None:
    @_settings
    @given(damaged_conversations(fmt), st.integers(1, 4))
    def check(messages: list[Any], recent: int) -> None:
        out = compact(messages, ScriptedModel().client(), config=config(recent=recent))
        if out.compacted:
            assert pairing_violations(out.messages) == []
            kept_ids = {id(m) for m in out.kept}
            assert not any(id(m) in kept_ids for m in out.discarded)
        else:
            assert_unchanged(out, messages)

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_failed_compaction_leaves_every_history_unchanged(fmt: str) -> None:
    @_settings
    @given(compaction_conversations(fmt), st.integers(1, 4))
    def check(messages: list[Any], recent: int) -> None:
        snapshot = copy.deepcopy(messages)
        out = compact(messages, failing_client(), config=config(recent=recent))
        assert not out.compacted
        assert out.messages == snapshot  # deep compare
        assert_unchanged(out, messages)

    check()


def _segments(messages: list[Any]) -> list[list[Any]]:
    """The conversation cut into turns (the system prompt goes with the first)."""
    bounds = [0, *(i for i in _turn_starts(messages) if i > 0), len(messages)]
    return [messages[a:b] for a, b in pairwise(bounds) if b > a]


def _summariser(case: TurnLoopCase) -> ScriptedModel:
    def answer(prompt: str, index: int) -> str | Exception:
        if case.fail_every and index % case.fail_every == case.fail_every - 1:
            return RuntimeError("rate limited")
        return words(f"s{index}x", case.summary_words)

    return ScriptedModel(answer)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_agent_loop_never_compacts_on_turn_0_or_consecutive_turns(fmt: str) -> None:
    @_settings
    @given(turn_loop_cases(fmt))
    def check(case: TurnLoopCase) -> None:
        cfg = config(
            threshold=case.threshold,
            recent=case.recent_turn_budget,
            spacing=case.min_turns_between,
            max_summary_tokens=case.max_summary_tokens,
        )
        model = _summariser(case)
        compactor = TurnCompactor(compaction_setup(model.client(), cfg, window=case.window))
        guard = compactor.guard
        limit = max(min(case.max_summary_tokens, case.window // 16), 1)
        segments = _segments(case.messages)
        history: list[Any] = []
        last_input: int | None = None
        attempts: list[tuple[int, int]] = []  # (turn, the guard's streak after it)
        for t, segment in enumerate(segments):
            history = [*history, *segment]
            snapshot, ids = copy.deepcopy(history), [id(m) for m in history]
            calls_before = len(model.requests)
            out = compactor.maybe_compact(history, turn=t, last_input_tokens=last_input)
            assert history == snapshot and [id(m) for m in history] == ids
            assert pairing_violations(out.messages) == []
            if t == 0:
                assert out.status is TurnCompactionStatus.NOT_DUE
            if out.compacted or out.failed:
                if attempts:
                    previous, streak = attempts[-1]
                    assert t - previous >= guard.backoff_turns(streak) >= 2
                attempts.append((t, guard.streak))
                assert all(m == limit for m in model.max_tokens[calls_before:])
            else:
                assert len(model.requests) == calls_before  # no attempt, no call
            if not out.compacted:
                assert out.messages == snapshot and [id(m) for m in out.messages] == ids
            elif len(_turn_starts(history)) >= 2:
                kept = out.messages[-len(segment) :]
                assert [id(m) for m in kept] == [id(m) for m in segment]  # newest turn
            else:  # one turn: the budget keeps at most all but the oldest, so none
                assert out.messages[-1] is out.summary_message
            history = out.messages
            last_input = COUNTER.count_messages(history) if case.report_input else None
        turns = [t for t, _ in attempts]
        assert 0 not in turns
        assert all(b - a >= 2 for a, b in pairwise(turns))  # never two turns in a row
        assert len(turns) <= guard.max_compactions(len(segments))
        assert guard.stats()["compactions"] == len(turns)

    check()
