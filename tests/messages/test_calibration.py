"""Token counters against provider-reported usage: the README's figures stay true."""

from __future__ import annotations

import pytest
from helpers.datasets import dataset_path

from memctx.cli.foundation import claude_sessions
from memctx.messages.calibration import measure_counter
from memctx.messages.tokens import TokenCounter


def test_measure_counter_recovers_a_known_scale() -> None:
    # Messages of 300 characters; a "provider" that bills exactly 1 token per 2 characters
    # plus a 1,000-token system prompt. ceil(len/3) counts 100 + 4 overhead per message.
    messages = [{"role": "user", "content": "x" * 300} for _ in range(10)]
    usage = {i: 1000 + 150 * i for i in range(1, 10)}
    result = measure_counter(messages, usage, TokenCounter(), source="synthetic")
    assert result is not None
    assert result.calls == 8
    assert result.growth_ratio == pytest.approx(104 / 150)
    assert result.bias < 0  # the estimate under-counts this provider


@pytest.mark.dataset
def test_estimate_error_on_real_claude_code_sessions_matches_the_readme() -> None:
    sessions = claude_sessions([dataset_path("claude-code").parent])  # the datasets root
    assert len(sessions) == 3
    for session in sessions:
        usage = {i: u.context_tokens for i, u in session.usage.items()}
        result = measure_counter(
            session.messages,
            usage,
            TokenCounter(),
            source=session.source,
            compaction_boundary=session.compaction_boundary,
            compact_summary=session.compact_summary,
        )
        assert result is not None and result.calls > 100
        # README: ceil(len/3) counts 82-89% of what Claude billed for these sessions.
        assert 0.78 <= result.growth_ratio <= 0.93, result
        assert result.mean_abs_error < 0.15, result


def test_fit_usage_recovers_the_unseen_part_and_the_scale() -> None:
    from memctx.messages import fit_usage

    # Each message counts 104 (ceil(300/3) + 4); the "provider" bills 1.25 tokens per counted
    # token plus 20,000 the transcript does not hold. After the compaction at message 6 it
    # bills differently (re-attached files): those calls must not move the fit.
    messages = [{"role": "user", "content": "x" * 300} for _ in range(10)]
    usage = {i: 20_000 + round(1.25 * 104 * i) for i in range(1, 6)}
    usage.update({7: 90_000, 8: 95_000})
    fit = fit_usage(messages, usage, TokenCounter(), compaction_boundary=6)
    assert fit is not None and fit.calls == 5
    assert fit.unseen == 20_000 and fit.scale == pytest.approx(1.25)
    assert fit.max_error <= 1
    assert fit.to_provider(1_000) == 21_250 and fit.to_counted(21_250) == 1_000
    assert "20,000 + 1.250 x counted (5 calls" in fit.describe()
    # Too little to fit: one call, or calls of one size.
    assert fit_usage(messages, {3: 5_000}, TokenCounter()) is None
    assert fit_usage(messages, {3: 5_000, 4: 6_000}, TokenCounter(), compaction_boundary=4) is None
    # A fit that makes no sense (the bill shrinks as the transcript grows) is refused.
    assert fit_usage(messages, {2: 9_000, 5: 1_000}, TokenCounter()) is None
