"""Tool-output pruning (seed 003): soft-trim, hard-clear, the protected turns, cache-ttl."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from memctx.config import ContextPruningConfig
from memctx.messages import InfoCache, RoleKind, pairing_violations
from memctx.text.cut import cut_middle
from memctx.trim import PruningSession, prune_tool_results, pruning_due
from tests.strategies import FORMATS, PruningCase, examples, pruning_cases

WINDOW = 10_000  # soft-trim from 3,000 estimated tokens, hard-clear from 5,000


def cfg(**kw: Any) -> ContextPruningConfig:
    return ContextPruningConfig(mode="cache-ttl", **kw)


def call(k: int) -> dict[str, Any]:
    fn = {"name": "read", "arguments": f'{{"path": "src/m{k}.py"}}'}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{k}", "type": "function", "function": fn}],
    }


def result(k: int, chars: int) -> dict[str, Any]:
    body = "".join(f"line {j} of module {k}\n" for j in range(chars // 20 + 1))[:chars]
    return {"role": "tool", "tool_call_id": f"c{k}", "content": body}


def session(sizes: list[int], *, reads_first: int = 0) -> list[dict[str, Any]]:
    """``reads_first`` tool calls before the first user message, then the request, then one
    call per size, then a reply."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for k in range(reads_first):
        out += [call(100 + k), result(100 + k, 12_000)]
    out.append({"role": "user", "content": "Fix the flaky test."})
    for k, size in enumerate(sizes):
        out += [call(k), result(k, size)]
    out.append({"role": "assistant", "content": "Found it."})
    return out


def tool_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_nothing_happens_below_the_soft_trim_ratio() -> None:
    messages = session([12_000, 500, 500, 500])
    out = prune_tool_results(messages, cfg(), 200_000)
    assert not out.pruned and all(a is b for a, b in zip(out.messages, messages, strict=True))


def test_soft_trim_keeps_head_and_tail_with_the_original_size() -> None:
    messages = session([12_000, 9_000, 300, 300, 300])  # ~7K tokens: over 0.3 of 10K
    out = prune_tool_results(messages, cfg(hardClear={"enabled": False}), WINDOW)
    first, second, *rest = tool_texts(out.messages)
    original = messages[3]["content"]
    assert first == cut_middle(original, 1_500, 1_500)
    assert first.startswith(original[:1_500]) and first.endswith(original[-1_500:])
    assert "\n[... 9,000 characters omitted ...]\n" in first
    assert len(second) < 9_000 and rest == tool_texts(messages)[2:]  # short ones untouched
    assert (out.soft_trimmed, out.cleared) == (2, 0)
    assert out.tokens_after < out.tokens_before


def test_the_last_assistant_turns_and_what_precedes_the_first_request_stay_whole() -> None:
    messages = session([12_000, 12_000, 12_000, 12_000, 12_000], reads_first=1)
    out = prune_tool_results(messages, cfg(), WINDOW)
    texts = tool_texts(out.messages)
    # The identity read before the first user message, and the results of the last three
    # assistant messages (the reply and the last two calls), are untouched.
    assert texts[0] == messages[2]["content"]
    assert texts[-2:] == tool_texts(messages)[-2:]
    assert all(t != o for t, o in zip(texts[1:4], tool_texts(messages)[1:4], strict=True))
    # With fewer assistant messages than keepLastAssistants nothing is prunable.
    assert not prune_tool_results(messages, cfg(keepLastAssistants=20), WINDOW).pruned


def test_hard_clear_runs_oldest_first_until_under_the_ratio() -> None:
    messages = session([30_000, 30_000, 30_000, 30_000, 300, 300])
    out = prune_tool_results(
        messages, cfg(softTrim={"maxChars": 100_000, "headChars": 10, "tailChars": 10}), 60_000
    )
    texts = tool_texts(out.messages)
    placeholder = "[Old tool result content cleared]"
    # ~40K tokens of results at a 60K window: two cleared bring it under 30K, then it stops.
    assert texts[:2] == [placeholder] * 2 and texts[2] != placeholder
    assert out.cleared == 2 and out.tokens_after < 0.5 * 60_000 <= out.tokens_before
    # Not when disabled, nor when the prunable results hold too little.
    assert prune_tool_results(messages, cfg(hardClear={"enabled": False}), 60_000).cleared == 0
    assert prune_tool_results(messages, cfg(minPrunableToolChars=10**6), 60_000).cleared == 0


def test_a_tool_result_holding_an_image_is_left_alone() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
    }
    big = "x" * 12_000
    messages = [
        {"role": "user", "content": "Why does the chart look wrong?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "s1", "name": "shot", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "s1",
                    "content": [{"type": "text", "text": big}, image],
                }
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "s2", "name": "cat", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s2", "content": big}]},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"role": "user", "content": "d"},
        {"role": "assistant", "content": "e"},
    ]
    out = prune_tool_results(messages, cfg(), 8_000)
    assert out.messages[2] is messages[2]  # the screenshot's result
    assert out.messages[4] is not messages[4] and out.soft_trimmed == 1


def test_bad_window_names_the_problem() -> None:
    with pytest.raises(ValueError, match="positive number of tokens"):
        prune_tool_results([], cfg(), 0)


def test_cache_ttl_prunes_only_once_the_cache_is_cold() -> None:
    on, off = ContextPruningConfig(mode="cache-ttl", ttl="5m"), ContextPruningConfig()
    assert not pruning_due(off, 1_000.0, None)
    assert pruning_due(on, 1_000.0, None)  # no call yet: nothing cached
    assert not pruning_due(on, 1_000.0 + 299, 1_000.0)  # warm: a prune would rewrite it
    assert pruning_due(on, 1_000.0 + 300, 1_000.0)


_settings = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_pruning_changes_only_old_tool_results_and_never_the_callers_list(fmt: str) -> None:
    @_settings
    @given(pruning_cases(fmt))
    def check(case: PruningCase) -> None:
        config = cfg(**case.settings)
        snapshot = copy.deepcopy(case.messages)
        out = prune_tool_results(case.messages, config, case.window)
        assert case.messages == snapshot  # the caller's list and dicts are untouched
        assert len(out.messages) == len(case.messages)
        assert pairing_violations(out.messages) == pairing_violations(case.messages) == []
        infos = InfoCache()
        changed = [
            i
            for i, (a, b) in enumerate(zip(out.messages, case.messages, strict=True))
            if a is not b
        ]
        for i in changed:  # only tool results, with their ids and names
            before, after = infos.info(case.messages[i]), infos.info(out.messages[i])
            assert before.has_tool_results and before.kind is not RoleKind.ASSISTANT
            assert [(b.kind, b.tool_id, b.tool_name) for b in before.blocks] == [
                (b.kind, b.tool_id, b.tool_name) for b in after.blocks
            ]
        assert out.soft_trimmed + out.cleared >= len(changed) and out.pruned == bool(changed)
        assistants = [
            i for i, m in enumerate(case.messages) if infos.info(m).kind is RoleKind.ASSISTANT
        ]
        keep = config.keep_last_assistants
        if keep and len(assistants) >= keep:  # the protected tail is identical
            assert all(i < assistants[-keep] for i in changed)
        elif keep:
            assert not changed
        again = prune_tool_results(out.messages, config, case.window)
        assert again.messages == out.messages  # idempotent: a pruned context prunes to itself

    check()


def test_a_pruning_session_prunes_when_cold_and_resends_the_same_copies_while_warm() -> None:
    session_ = PruningSession(cfg(ttl="5m", hardClear={"enabled": False}), WINDOW)
    messages = session([12_000, 9_000, 300, 300, 300])
    snapshot = copy.deepcopy(messages)
    first = session_.apply(messages, 1_000.0)  # no call yet: the cache is cold
    assert first.ran and first.soft_trimmed == 2
    pruned_at = [
        i for i, (a, b) in enumerate(zip(first.messages, messages, strict=True)) if a is not b
    ]
    assert pruned_at == [3, 5]
    assert all(first.originals[id(first.messages[i])] is messages[i] for i in pruned_at)
    # Warm: the agent appended a big result; the same copies go out again, the new result
    # whole (pruning it now would rewrite the cached prefix).
    grown = [*messages, call(9), result(9, 12_000), {"role": "assistant", "content": "ok"}]
    warm = session_.apply(grown, 1_000.0 + 60)
    assert not warm.ran and warm.soft_trimmed == 2
    assert all(warm.messages[i] is first.messages[i] for i in pruned_at)
    assert warm.messages[len(messages) + 1] is grown[len(messages) + 1]
    # Cold again: pruning runs afresh, keeps its earlier copies and reaches the new result.
    cold = session_.apply(grown, 1_000.0 + 60 + 300)
    assert cold.ran and all(cold.messages[i] is first.messages[i] for i in pruned_at)
    assert messages == snapshot  # the caller's list and dicts never change
    # A compaction removed the pruned results: nothing stale is re-applied.
    compacted = [messages[0], {"role": "user", "content": "Summary so far."}, *grown[-3:]]
    after = session_.apply(compacted, 1_000.0 + 420)
    assert after.originals == {} and all(
        a is b for a, b in zip(after.messages, compacted, strict=True)
    )


def test_a_pruning_session_that_is_off_sends_the_messages_as_they_are() -> None:
    session_ = PruningSession(ContextPruningConfig(), WINDOW)
    messages = session([12_000, 9_000, 300, 300, 300])
    out = session_.apply(messages, 1_000.0)
    assert not out.ran and out.originals == {}
    assert all(a is b for a, b in zip(out.messages, messages, strict=True))


def test_a_trimmed_result_is_never_trimmed_again() -> None:
    # Head + tail + the note is longer than maxChars here: without recognising its own cut,
    # pruning would cut the note out on every call and the count of what is gone with it.
    config = cfg(softTrim={"maxChars": 3_010, "headChars": 1_500, "tailChars": 1_500})
    messages = session([12_000, 9_000, 300, 300, 300])
    once = prune_tool_results(messages, config, WINDOW)
    first = tool_texts(once.messages)[0]
    assert len(first) > 3_010 and "[... 9,000 characters omitted ...]" in first
    twice = prune_tool_results(once.messages, config, WINDOW)
    assert tool_texts(twice.messages) == tool_texts(once.messages) and not twice.pruned
