"""Staged summaries, the rolling previous summary, the merge step and the fallback ladder
(full -> small messages with the oversized ones noted -> plain notice), every call through
:class:`memctx.llm.LLMClient` with scripted completions, litellm's ``mock_response`` and the
offline model."""

from __future__ import annotations

from typing import Any

import pytest
from compaction_support import (
    ScriptedModel,
    assistant,
    budget,
    call,
    compaction_setup,
    conversation_of,
    failing_client,
    result,
    user,
    words,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.compaction import (
    DEFAULT_SUMMARY_FALLBACK,
    MERGE_SUMMARIES_INSTRUCTIONS,
    MIN_MESSAGES_FOR_SPLIT,
    PREVIOUS_SUMMARY_NOTE,
    SUMMARY_TASK,
    CompactionBudget,
    FallbackLevel,
    StagedSummary,
    Summarizer,
    fallback_notice,
    worst,
)
from memctx.llm import LLMClient
from memctx.messages import TokenCounter
from tests.strategies import examples

# litellm's mock_response path builds a response type that pydantic warns about (not ours).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Item .* is using the .ReadOnly. qualifier:UserWarning"
)


def summarizer(client: LLMClient, b: CompactionBudget | None = None) -> Summarizer:
    sizes = b or budget()
    return Summarizer(compaction_setup(client, window=sizes.window), sizes)


def huge_user(tag: str = "huge") -> dict[str, Any]:
    """A pasted log of about 3,000 tokens: over half of a 4,000-token summariser."""
    return user(words(tag, 1000))


# --- one call, rolling chunks, merge -------------------------------------------------------


def test_a_small_history_is_one_full_summary_call() -> None:
    model = ScriptedModel()
    s = summarizer(model.client())
    staged = s.in_stages([user("fix the parser in parser.py"), assistant("fixed it")])
    assert staged == StagedSummary("SUMMARY-0", FallbackLevel.FULL)
    (prompt,) = model.prompts
    assert "[User]: fix the parser in parser.py" in conversation_of(prompt)
    assert "[Assistant]: fixed it" in conversation_of(prompt)
    assert model.tasks() == [SUMMARY_TASK]
    assert model.max_tokens == [250]  # the budget's output limit
    usage = s.usage()
    assert (usage.calls, usage.failures, usage.refused) == (1, 0, 0)
    assert (usage.prompt_tokens, usage.completion_tokens) == (100, 10)


def test_chunks_are_summarised_in_order_each_given_the_summary_so_far() -> None:
    model = ScriptedModel()
    s = summarizer(model.client())
    messages = [user(words(tag, 40)) for tag in ("first", "second", "third")]
    text = s.summarize_chunks(messages, "EARLIER-SUMMARY", None, max_chunk=150)
    assert text == "SUMMARY-2"
    assert len(model.prompts) == 3
    for i, prompt in enumerate(model.prompts):
        body = conversation_of(prompt)
        rolling = "EARLIER-SUMMARY" if i == 0 else f"SUMMARY-{i - 1}"
        assert body.startswith(f"[Summary of earlier history]:\n{rolling}\n\n")
        assert PREVIOUS_SUMMARY_NOTE in prompt
        assert ("first0000", "second0000", "third0000")[i] in body
        assert sum(tag in body for tag in ("first0000", "second0000", "third0000")) == 1


def test_no_previous_summary_means_no_previous_block() -> None:
    model = ScriptedModel()
    summarizer(model.client()).in_stages([user("hello there")])
    assert "[Summary of earlier history]" not in model.prompts[0]
    assert PREVIOUS_SUMMARY_NOTE not in model.prompts[0]


def test_a_large_history_is_summarised_in_two_stages_then_merged() -> None:
    model = ScriptedModel()
    s = summarizer(model.client())
    # ~730 tokens each, over the adaptive chunk (15 % of 4,000): one message per chunk.
    messages = [user(words(f"part{k}x", 200)) for k in range(4)]
    assert len(messages) >= MIN_MESSAGES_FOR_SPLIT
    staged = s.in_stages(messages, "EARLIER-SUMMARY", "focus on the database")
    assert staged == StagedSummary("SUMMARY-4", FallbackLevel.FULL)
    *parts, merge = model.prompts
    assert len(parts) == 4
    for k, prompt in enumerate(parts):
        body = conversation_of(prompt)
        assert f"part{k}x0000" in body and "focus on the database" in prompt
        # Each stage rolls its own summary; the previous one goes only into the merge.
        assert "EARLIER-SUMMARY" not in prompt
        if k % 2:
            assert body.startswith(f"[Summary of earlier history]:\nSUMMARY-{k - 1}\n\n")
        else:
            assert "[Summary of earlier history]" not in body
    assert MERGE_SUMMARIES_INSTRUCTIONS in merge
    assert "Additional focus:\nfocus on the database" in merge
    assert conversation_of(merge) == (
        "[Summary of earlier history]:\nEARLIER-SUMMARY\n\n"
        "[Partial summary 1 of 2: oldest messages]:\nSUMMARY-1\n\n"
        "[Partial summary 2 of 2: most recent messages]:\nSUMMARY-3"
    )


def test_merge_failure_keeps_the_partial_summaries_in_order() -> None:
    def answer(prompt: str, i: int) -> str | Exception:
        if MERGE_SUMMARIES_INSTRUCTIONS in prompt:
            return RuntimeError("merge call timed out")
        return f"PART-{i}"

    model = ScriptedModel(answer)
    messages = [user(words(f"part{k}x", 200)) for k in range(4)]
    staged = summarizer(model.client()).in_stages(messages, "EARLIER-SUMMARY")
    assert staged.level is FallbackLevel.PARTIAL
    assert staged.text.startswith("EARLIER-SUMMARY\n\nPART-")
    first, second = staged.text.split("\n\n")[1:]
    assert int(first.removeprefix("PART-")) < int(second.removeprefix("PART-"))
    assert "Context contained" not in staged.text


# --- the fallback ladder -------------------------------------------------------------------


def test_an_oversized_message_is_noted_and_the_rest_summarised() -> None:
    model = ScriptedModel()
    s = summarizer(model.client())
    messages = [user("please look at this log"), huge_user(), assistant("the log shows a crash")]
    staged = s.with_fallback(messages, None, None, max_chunk=600)
    assert staged.level is FallbackLevel.PARTIAL
    summary, note = staged.text.rsplit("\n\n", 1)
    assert summary.startswith("SUMMARY-")
    assert note == "[Large user (~3K tokens) omitted from summary]"
    # The huge text never reached the model; its stub was summarised in its place.
    assert "huge0001" not in model.everything_sent
    assert any("[Large user (~3K tokens) omitted from summary]" in p for p in model.prompts)
    assert s.usage().refused == 1  # the full attempt was measured and not sent
    assert s.notes and "does not fit" in s.notes[0]


def test_a_provider_failure_on_the_full_summary_steps_down_to_partial() -> None:
    # ~1,700 tokens: a request that fits the window, but over half of it once padded.
    big = user(words("big", 640))

    def answer(prompt: str, i: int) -> str | Exception:
        if "big0001" in prompt:
            return RuntimeError("ContextWindowExceededError: prompt is too long")
        return f"SUMMARY-{i}"

    model = ScriptedModel(answer)
    s = summarizer(model.client())
    staged = s.with_fallback([user("start"), big, assistant("ok")], None, None, max_chunk=3000)
    assert staged.level is FallbackLevel.PARTIAL
    assert staged.text.endswith("\n\n[Large user (~2K tokens) omitted from summary]")
    assert "big0001" in model.prompts[0]  # the full request was sent, and failed
    assert all("big0001" not in p for p in model.prompts[1:])
    usage = s.usage()
    assert usage.failures == 1 and usage.refused == 0 and usage.calls == 2
    assert "full summary of 3 messages failed" in s.notes[0]


def test_when_every_call_fails_the_plain_notice_keeps_the_earlier_summary() -> None:
    s = summarizer(failing_client())
    messages = [user("a"), huge_user(), assistant("b"), user("c")]
    staged = s.with_fallback(messages, "EARLIER-SUMMARY", None, max_chunk=600)
    assert staged == StagedSummary(
        "Context contained 4 messages (1 oversized). Summary unavailable due to size limits."
        "\n\nEarlier summary:\nEARLIER-SUMMARY",
        FallbackLevel.NOTICE,
    )
    assert len(s.notes) == 2  # the full attempt and the one without the oversized message
    assert s.usage().failures == 2


def test_a_failure_with_nothing_oversized_goes_straight_to_the_notice() -> None:
    model = ScriptedModel(lambda prompt, i: RuntimeError("401 invalid api key"))
    s = summarizer(model.client())
    staged = s.with_fallback([user("a"), assistant("b")], None, None, max_chunk=600)
    assert staged.level is FallbackLevel.NOTICE
    assert staged.text == fallback_notice(2, 0)
    assert len(model.requests) == 1  # the same request again would fail the same way


def test_an_empty_reply_counts_as_a_failure() -> None:
    model = ScriptedModel(lambda prompt, i: "   ")
    s = summarizer(model.client())
    staged = s.in_stages([user("a"), assistant("b")])
    assert staged.level is FallbackLevel.NOTICE
    assert s.usage().failures == 1 and "empty summary" in s.notes[0]


def test_a_failed_staged_summary_counts_every_message_in_its_notice() -> None:
    s = summarizer(failing_client())
    messages = [user(words(f"m{k}x", 200)) for k in range(10)]
    staged = s.in_stages(messages, "EARLIER-SUMMARY")
    assert staged.level is FallbackLevel.NOTICE
    assert staged.text == fallback_notice(10, 0, "EARLIER-SUMMARY")
    # Both parts failed: no merge call is made for their notices.
    assert s.usage().calls == 2


def test_one_failed_part_makes_the_staged_summary_a_notice_level() -> None:
    def answer(prompt: str, i: int) -> str | Exception:
        if "m0x" in prompt:
            return RuntimeError("down for the oldest part")
        return f"SUMMARY-{i}"

    model = ScriptedModel(answer)
    messages = [user(words(f"m{k}x", 200)) for k in range(4)]
    staged = summarizer(model.client()).in_stages(messages)
    # The merge succeeds, but a part of the history reached only the notice.
    assert staged.level is FallbackLevel.NOTICE
    assert MERGE_SUMMARIES_INSTRUCTIONS in model.prompts[-1]
    assert "Context contained 2 messages" in conversation_of(model.prompts[-1])


def test_nothing_to_summarise_returns_the_previous_summary_without_a_call() -> None:
    model = ScriptedModel()
    s = summarizer(model.client())
    assert s.in_stages([], "EARLIER") == StagedSummary("EARLIER", FallbackLevel.FULL)
    assert s.in_stages([]) == StagedSummary(DEFAULT_SUMMARY_FALLBACK, FallbackLevel.FULL)
    unreadable = [{"role": "assistant", "content": ""}]
    assert s.in_stages(unreadable).text == DEFAULT_SUMMARY_FALLBACK
    assert model.requests == []


def test_worst_level() -> None:
    assert worst([]) is FallbackLevel.FULL
    assert worst([FallbackLevel.FULL, FallbackLevel.PARTIAL]) is FallbackLevel.PARTIAL
    assert worst([FallbackLevel.NOTICE, FallbackLevel.PARTIAL]) is FallbackLevel.NOTICE


# --- the real litellm layer and the offline model ------------------------------------------


def test_litellm_mock_responses_are_summaries_with_their_cost() -> None:
    import litellm

    sent: list[Any] = []

    def completion(**kwargs: Any) -> Any:
        sent.append(kwargs["messages"])
        return litellm.completion(**kwargs, mock_response="The parser fix is done.")

    s = summarizer(LLMClient("gpt-4o-mini", completion=completion, max_retries=0))
    staged = s.in_stages([user("fix the parser"), assistant("done")])
    assert staged == StagedSummary("The parser fix is done.", FallbackLevel.FULL)
    usage = s.usage()
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.cost_usd > 0
    assert len(sent) == 1


def test_a_litellm_provider_error_reaches_the_notice() -> None:
    import litellm

    def completion(**kwargs: Any) -> Any:
        return litellm.completion(**kwargs, mock_response="litellm.InternalServerError")

    s = summarizer(LLMClient("gpt-4o-mini", completion=completion, max_retries=0))
    staged = s.in_stages([user("fix the parser"), assistant("done")], "EARLIER")
    assert staged == StagedSummary(fallback_notice(2, 0, "EARLIER"), FallbackLevel.NOTICE)
    assert "InternalServerError" in s.notes[0]


def test_the_offline_model_writes_a_full_summary() -> None:
    s = summarizer(LLMClient())
    messages = [
        user("Use PostgreSQL 16 for the orders service; the config lives in config/db.yaml."),
        call("c1", "read", path="config/db.yaml"),
        result("c1", "host: db.internal\nport: 5432"),
        assistant("The database config points at db.internal:5432."),
    ]
    staged = s.in_stages(messages)
    assert staged.level is FallbackLevel.FULL
    assert "config/db.yaml" in staged.text
    assert s.usage().calls == 1 and s.usage().cost_usd == 0.0


# --- no request exceeds the summariser ------------------------------------------------------


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(st.integers(1, 1500), min_size=1, max_size=12),
    st.integers(600, 12_000),
    st.booleans(),
)
def test_every_request_sent_fits_the_summariser_window(
    sizes: list[int], window: int, previous: bool
) -> None:
    model = ScriptedModel(lambda prompt, i: words("s", 60))  # a 120-token reply
    b = budget(window, summary_tokens=max(1, window // 16))
    s = summarizer(model.client(), b)
    messages = [user(words(f"t{k}x", size)) for k, size in enumerate(sizes)]
    staged = s.in_stages(messages, "EARLIER " * 50 if previous else None)
    counter = TokenCounter()
    for request in model.requests:
        assert b.request_fits(counter.count_messages(request)), "an oversized request was sent"
    usage = s.usage()
    assert usage.calls == len(model.requests)
    if staged.level is FallbackLevel.FULL:
        assert usage.refused == usage.failures == 0 and s.notes == []
    else:
        assert usage.refused > 0 and s.notes
