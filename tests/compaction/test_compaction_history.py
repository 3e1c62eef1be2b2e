"""compact_history: the cut, the rolling previous summary, the split-turn prefix, history
pruning to maxHistoryShare, the safeguard sections, fitting the target, and errors that
leave the caller's history as it was."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from compaction_support import (
    ScriptedModel,
    assistant,
    call,
    calls,
    compaction_setup,
    conversation_of,
    failing_client,
    pi_call,
    pi_result,
    result,
    system,
    user,
    words,
)

from memctx.compaction import (
    DEFAULT_SUMMARY_FALLBACK,
    SPLIT_TURN_HEADER,
    STRUCTURED_PROMPT,
    TOOL_FAILURES_HEADER,
    TRUNCATION_MARKER,
    TURN_PREFIX_INSTRUCTIONS,
    CompactionBudget,
    CompactionError,
    CompactionResult,
    CompactionSetup,
    FallbackLevel,
    SummaryPrompt,
    compact_history,
    fit_summary,
    min_summary_tokens,
    plan_cut,
    summary_message,
)
from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient
from memctx.messages import (
    COMPACTED_PREFIX,
    InfoCache,
    TokenCounter,
    pairing_violations,
    recalled_block_text,
)

COUNTER = TokenCounter()


def config(mode: str = "default", reserve: int = 200, **extra: Any) -> MemoryContextConfig:
    return MemoryContextConfig(compaction={"mode": mode, "reserve_tokens_floor": reserve, **extra})


def default_config() -> MemoryContextConfig:
    """``config()``, under a name that the ``config`` keyword of :func:`compact` leaves visible."""
    return config()


def turns(tag: str, n: int, size: int = 60) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(n):
        out += [user(words(f"{tag}{k}x", size)), assistant(f"done {tag} {k}")]
    return out


def compact(
    messages: list[Any],
    model: ScriptedModel | None = None,
    *,
    client: LLMClient | None = None,
    config: MemoryContextConfig | None = None,
    window: int = 4000,
    prompt: SummaryPrompt = "handoff",
    **kwargs: Any,
) -> CompactionResult:
    writer = model.client() if model is not None else client
    assert writer is not None, "give a scripted model or a client"
    settings = config if config is not None else default_config()
    setup = compaction_setup(writer, settings, window=window, prompt=prompt)
    snapshot = copy.deepcopy(messages)
    out = compact_history(messages, setup, **kwargs)
    assert messages == snapshot, "the caller's history was modified"
    assert out.tokens_after == COUNTER.count_messages(out.messages) <= out.target_tokens
    assert pairing_violations(out.messages) == []
    return out


# --- the cut and the result ----------------------------------------------------------------


def test_the_old_part_is_replaced_by_one_summary_message() -> None:
    model = ScriptedModel()
    messages = [system(), *turns("turn", 8, size=40)]  # one summary chunk
    keep = COUNTER.count_messages(messages[-2:])  # exactly the last turn
    out = compact(messages, model, keep_recent_tokens=keep)
    assert out.compacted and out.level is FallbackLevel.FULL and not out.split_turn
    assert out.summary == "SUMMARY-0"
    assert out.summary_message == summary_message("SUMMARY-0")
    assert out.messages[0] is messages[0]
    assert out.messages[1] is out.summary_message
    assert out.messages[1]["content"].startswith(COMPACTED_PREFIX)
    tail = out.messages[2:]
    assert tail and all(any(m is t for t in messages) for m in tail)  # the caller's dicts
    cut = len(messages) - len(tail)
    assert [id(m) for m in tail] == [id(m) for m in messages[cut:]]
    assert tail[0]["role"] == "user"  # the cut falls between turns
    assert [id(m) for m in out.dropped] == [id(m) for m in messages[1:cut]]
    assert [id(m) for m in out.kept] == [id(messages[0]), *(id(m) for m in tail)]
    assert [id(m) for m in tail] == [id(m) for m in messages[-2:]]
    (prompt,) = model.prompts
    assert "turn0x0000" in prompt and "turn7x0000" not in prompt
    assert "You are a careful coding agent" not in prompt  # the system prompt stays apart
    assert out.tokens_before == COUNTER.count_messages(messages)
    assert out.usage.calls == 1 and out.notes == ()


def test_plan_cut_keeps_the_newest_messages_within_the_tail_budget() -> None:
    messages = [system(), *turns("turn", 6)]
    b = CompactionBudget.from_config(config(), 4000, keep_recent_tokens=500)
    cut = plan_cut(messages, b, COUNTER, InfoCache())
    assert cut.head == 1
    assert COUNTER.count_messages(messages[cut.cut :]) <= 500
    assert COUNTER.count_messages(messages[cut.cut - 1 :]) > 500
    # The tail opens with an assistant reply: the turn is split, its prefix starts at the
    # turn's user message.
    assert messages[cut.cut]["role"] == "assistant"
    assert cut.split_turn and cut.turn_start == cut.cut - 1
    whole = CompactionBudget.from_config(
        config(), 4000, keep_recent_tokens=COUNTER.count_messages(messages[-4:])
    )
    between = plan_cut(messages, whole, COUNTER, InfoCache())
    assert between.cut == len(messages) - 4 and not between.split_turn


def test_the_rolling_previous_summary_goes_into_the_prompt() -> None:
    model = ScriptedModel()
    recalled = user(recalled_block_text("<knowledge>\n- RECALLED-FACT\n</knowledge>"))
    messages = [
        system(),
        summary_message("EARLIER-IN-HISTORY: the parser was rewritten"),
        *turns("turn", 3),
        recalled,
        *turns("late", 3),
    ]
    keep = COUNTER.count_messages(messages[-2:])
    out = compact(messages, model, keep_recent_tokens=keep, previous_summary="CALLER-SUMMARY")
    (prompt,) = model.prompts
    body = conversation_of(prompt)
    assert body.startswith(
        "[Summary of earlier history]:\nCALLER-SUMMARY\n\n"
        "EARLIER-IN-HISTORY: the parser was rewritten\n\n"
    )
    assert "[User]: [Context compacted]" not in body  # not summarised as a message too
    assert "RECALLED-FACT" not in prompt  # recalled blocks are recomputed, not summarised
    assert all(m is not recalled and m is not messages[1] for m in out.messages)
    assert sum(1 for m in out.messages if str(m.get("content", "")).startswith(COMPACTED_PREFIX))
    assert out.messages[1] is out.summary_message


def test_instructions_and_the_structured_prompt_reach_the_model() -> None:
    model = ScriptedModel()
    messages = [system(), *turns("turn", 4)]
    compact(
        messages,
        model,
        keep_recent_tokens=COUNTER.count_messages(messages[-2:]),
        instructions="keep the database decisions",
        prompt="structured",
    )
    (prompt,) = model.prompts
    assert STRUCTURED_PROMPT in prompt
    assert prompt.endswith("Additional focus:\nkeep the database decisions")


def test_a_cut_inside_a_turn_summarises_its_prefix_apart() -> None:
    def answer(prompt: str, i: int) -> str:
        return "PREFIX-SUMMARY" if TURN_PREFIX_INSTRUCTIONS in prompt else "HISTORY-SUMMARY"

    model = ScriptedModel(answer)
    messages = [
        system(),
        user("TURN-A: set up the project"),
        assistant("set up"),
        user("TURN-B: migrate the schema to v2"),
        call("c1", "read", path="schema.sql"),
        result("c1", words("schema", 100)),
        call("c2", "edit", path="schema.sql"),
        result("c2", "ok"),
        assistant("migrated"),
    ]
    out = compact(messages, model, keep_recent_tokens=60)
    assert out.split_turn
    assert out.messages[2] is messages[6]  # the tail opens with the second call
    assert out.summary == f"HISTORY-SUMMARY\n\n---\n\n{SPLIT_TURN_HEADER}\n\nPREFIX-SUMMARY"
    main, prefix = model.prompts
    assert "TURN-A" in main and "TURN-B" not in main and "schema0000" not in main
    assert TURN_PREFIX_INSTRUCTIONS in prefix
    assert "TURN-B" in prefix and "schema0000" in prefix and "TURN-A" not in prefix
    assert "[Summary of earlier history]" not in prefix


# --- safeguard mode ------------------------------------------------------------------------


def _safeguard_history() -> list[Any]:
    return [
        system(),
        summary_message("Earlier.\n\n<read-files>\nlegacy.py\n</read-files>"),
        user("fix the build"),
        pi_call("t1", "bash", cmd="make"),
        pi_result("t1", "bash", "make: *** [all] Error 2\n" + "x" * 400, is_error=True),
        pi_call("t2", "read", path="src/a.py"),
        pi_result("t2", "read", "def a(): ..."),
        pi_call("t3", "edit", path="src/b.py"),
        pi_result("t3", "edit", "applied"),
        assistant("fixed"),
        *turns("tail", 2, size=10),
    ]


def test_safeguard_appends_tool_failures_and_file_lists() -> None:
    model = ScriptedModel(lambda prompt, i: "HISTORY-SUMMARY")
    messages = _safeguard_history()
    keep = COUNTER.count_messages(messages[-4:])
    out = compact(messages, model, config=config("safeguard"), keep_recent_tokens=keep)
    sections = out.summary.split("\n\n")
    assert sections[0] == "HISTORY-SUMMARY"
    failures = out.summary[out.summary.index(TOOL_FAILURES_HEADER) :].split("\n\n")[0]
    (entry,) = failures.splitlines()[1:]
    assert entry.startswith("- bash: make: *** [all] Error 2 xxx")
    assert len(entry) == len("- bash: ") + 240
    assert "<read-files>\nlegacy.py\nsrc/a.py\n</read-files>" in out.summary
    assert "<modified-files>\nsrc/b.py\n</modified-files>" in out.summary
    assert out.summary.index(TOOL_FAILURES_HEADER) < out.summary.index("<read-files>")


def test_default_mode_adds_no_safeguard_sections() -> None:
    model = ScriptedModel(lambda prompt, i: "HISTORY-SUMMARY")
    messages = _safeguard_history()
    keep = COUNTER.count_messages(messages[-4:])
    out = compact(messages, model, keep_recent_tokens=keep)
    assert out.summary == "HISTORY-SUMMARY"


OLD_TURNS, NEW_TURNS = 8, 8


def _pruning_history() -> list[Any]:
    # ~5,400 tokens to summarise (over 0.5 x 8,000), ~5,400 kept verbatim: the kept part
    # passes 0.5 x 1.2 of the window, so safeguard mode prunes the old part first.
    return [system(), *turns("old", OLD_TURNS, size=200), *turns("new", NEW_TURNS, size=200)]


def _pruning_compact(
    messages: list[Any], model: ScriptedModel, mode: str = "safeguard"
) -> CompactionResult:
    keep = COUNTER.count_messages(messages[-2 * NEW_TURNS :])
    assert keep > 8000 * 0.5 * 1.2
    return compact(
        messages, model, config=config(mode, reserve=0), window=8000, keep_recent_tokens=keep
    )


def test_history_pruning_summarises_the_dropped_part_first_as_previous_summary() -> None:
    def answer(prompt: str, i: int) -> str:
        return "DROPPED-SUMMARY" if "old0x0000" in prompt else f"MAIN-SUMMARY-{i}"

    model = ScriptedModel(answer)
    messages = _pruning_history()
    out = _pruning_compact(messages, model)
    dropped, main = model.prompts
    gone = [k for k in range(OLD_TURNS) if f"old{k}x0000" in dropped]
    assert gone == list(range(len(gone))) and 0 < len(gone) < OLD_TURNS  # the oldest ones
    assert out.pruned_messages == 2 * len(gone)
    assert any(f"history pruning: {2 * len(gone)} older messages" in n for n in out.notes)
    body = conversation_of(main)
    assert body.startswith("[Summary of earlier history]:\nDROPPED-SUMMARY\n\n")
    assert all(f"old{k}x0000" in body for k in range(len(gone), OLD_TURNS))
    assert all(f"old{k}x0000" not in body for k in gone)
    assert "new0x0000" not in body
    # What is summarised after pruning fits maxHistoryShare of the window.
    rest = messages[1 + 2 * len(gone) : 1 + 2 * OLD_TURNS]
    assert COUNTER.count_messages(rest) <= 8000 * 0.5
    assert out.summary == "MAIN-SUMMARY-1"
    assert out.messages[2] is messages[1 + 2 * OLD_TURNS]  # the kept tail starts at new0
    assert out.level is FallbackLevel.FULL


def test_without_safeguard_nothing_is_pruned() -> None:
    model = ScriptedModel()
    out = _pruning_compact(_pruning_history(), model, mode="default")
    assert out.pruned_messages == 0
    assert not any("pruning" in n for n in out.notes)
    assert not any(p.count("[Summary of earlier history]:\nSUMMARY-") for p in model.prompts[:1])
    sent = model.everything_sent
    assert all(f"old{k}x0000" in sent for k in range(OLD_TURNS))


def test_file_lists_of_earlier_summaries_survive_history_pruning() -> None:
    model = ScriptedModel(lambda prompt, i: f"SUMMARY-{i} without any file list")
    messages = _pruning_history()
    messages.insert(1, summary_message("Earlier.\n\n<read-files>\nlegacy.py\n</read-files>"))
    messages.insert(3, call("c1", "read", path="src/a.py"))
    messages.insert(4, result("c1", "contents"))
    out = compact(
        messages,
        model,
        config=config("safeguard", reserve=0),
        window=8000,
        keep_recent_tokens=COUNTER.count_messages(messages[-2 * NEW_TURNS :]),
    )
    assert out.pruned_messages > 0
    assert "<read-files>\nlegacy.py\nsrc/a.py\n</read-files>" in out.summary


# --- fitting the target, errors, nothing to do ---------------------------------------------


def test_a_summary_too_long_for_the_room_is_cut_to_fit() -> None:
    model = ScriptedModel(lambda prompt, i: words("verbose", 3000))  # ~11,000 tokens
    out = compact([system(), *turns("turn", 8)], model, keep_recent_tokens=300)
    assert out.level is FallbackLevel.FULL
    assert out.summary.endswith(TRUNCATION_MARKER)
    assert out.summary.startswith("verbose0000 verbose0001")
    assert out.tokens_after <= out.target_tokens == 4000 - 200
    assert out.tokens_after > out.target_tokens - 10  # cut to the room, not far below


def test_failed_summaries_leave_the_notice_and_still_fit() -> None:
    messages = [system(), *turns("turn", 8)]
    out = compact(messages, client=failing_client(), keep_recent_tokens=300)
    assert out.level is FallbackLevel.NOTICE
    assert out.summary.startswith("Context contained ")
    assert out.usage.failures >= 1 and out.notes


def test_the_offline_default_model_compacts() -> None:
    out = compact([system(), *turns("turn", 8)], client=LLMClient(), keep_recent_tokens=300)
    assert out.level is FallbackLevel.FULL and out.summary


def test_a_history_with_nothing_new_to_summarise_is_returned_unchanged() -> None:
    model = ScriptedModel()
    messages = [system(), summary_message("earlier"), user("hi")]
    out = compact(messages, model, keep_recent_tokens=1000)
    assert not out.compacted and out.level is None and out.summary == ""
    assert [id(m) for m in out.messages] == [id(m) for m in messages]
    assert model.requests == []


def test_old_recalled_blocks_alone_are_replaced_when_the_history_is_too_large() -> None:
    recalled = user(recalled_block_text("<knowledge>\n" + "- fact\n" * 30 + "</knowledge>"))
    messages = [recalled, copy.deepcopy(recalled), user("start"), assistant("done")]
    model = ScriptedModel()
    out = compact(messages, model, config=config(reserve=20_000), window=150)
    assert out.compacted and model.requests == []
    assert out.summary == DEFAULT_SUMMARY_FALLBACK
    assert [id(m) for m in out.kept] == [id(messages[2]), id(messages[3])]


def test_a_small_window_compacts_instead_of_raising() -> None:
    # The output limit of a 100-token window (6) is smaller than the plain notice: the cut
    # must leave room for the notice, not for the output limit only.
    messages = [
        user("start"),
        assistant("done"),
        calls(("c1", "read", {"path": "a.py"}), ("c2", "read", {"path": "b.py"})),
        result("c1", "fix"),
        result("c2", "fix"),
    ]
    # The verbatim tail would be the parallel call and its results (~45 tokens), leaving
    # 30 of the 75 target tokens: less than the notice needs.
    tail = COUNTER.count_messages(messages[2:])
    assert 75 - tail < min_summary_tokens(COUNTER)
    out = compact(messages, client=failing_client(), config=config(reserve=20_000), window=100)
    assert out.compacted and out.target_tokens == 75
    assert out.level is FallbackLevel.NOTICE


def test_system_messages_too_large_raise_and_change_nothing() -> None:
    model = ScriptedModel()
    messages = [system(words("rules", 2000)), *turns("turn", 3)]
    snapshot = copy.deepcopy(messages)
    with pytest.raises(CompactionError, match="system prompt"):
        compact_history(messages, compaction_setup(model.client(), config(), window=4000))
    assert messages == snapshot and model.requests == []


def test_an_unfittable_history_without_old_messages_raises() -> None:
    messages = [system(words("rules", 2000))]
    snapshot = copy.deepcopy(messages)
    with pytest.raises(CompactionError, match="nothing older"):
        compact_history(messages, compaction_setup(failing_client(), config(), window=4000))
    assert messages == snapshot


def test_bad_arguments() -> None:
    client = failing_client()
    with pytest.raises(TypeError, match="list of message dicts"):
        compact_history("hello", compaction_setup(client, config(), window=4000))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keep_recent_tokens"):
        compact_history(
            [user("x")], compaction_setup(client, config(), window=10), keep_recent_tokens=-1
        )


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        ({"window": 0}, ValueError, "window must be a positive number"),
        ({"window": 4000, "summarizer_window": -1}, ValueError, "window must be a positive"),
        ({"window": True}, ValueError, "window must be a positive number"),
        ({"window": 4000, "prompt": "poem"}, ValueError, "unknown summary prompt 'poem'"),
        ({"window": 4000, "config": {"compaction": {}}}, TypeError, "MemoryContextConfig"),
    ],
)
def test_a_bad_setup_is_refused_when_built_naming_the_fix(
    fields: dict[str, Any], error: type[Exception], match: str
) -> None:
    fields = {"client": failing_client(), "config": config(), **fields}
    with pytest.raises(error, match=match):
        CompactionSetup(**fields)


def test_the_setup_budget_is_the_configs_budget_for_its_windows() -> None:
    setup = compaction_setup(failing_client(), config(), window=64_000, summarizer_window=8000)
    assert setup.budget() == CompactionBudget.from_config(config(), 64_000, summarizer_window=8000)
    assert setup.budget(7).keep_recent_tokens == 7
    assert setup.reserve == 200 and setup.budget().target_tokens == 64_000 - 200


# --- fit_summary ---------------------------------------------------------------------------


def _fit_budget() -> CompactionBudget:
    return CompactionBudget.from_config(config(), 4000)


def test_fit_keeps_everything_that_fits() -> None:
    text = fit_summary("MAIN", ["SPLIT", "", "FILES"], 1000, COUNTER, _fit_budget())
    assert text == "MAIN\n\nSPLIT\n\nFILES"


def test_fit_gives_up_the_lowest_priority_section_whole_before_cutting_much() -> None:
    main = words("main", 30)
    split, failures, files = words("split", 20), words("fail", 20), words("file", 120)
    size = COUNTER.count_message(summary_message(f"{main}\n\n{split}\n\n{failures}"))
    text = fit_summary(main, [split, failures, files], size, COUNTER, _fit_budget())
    assert text == f"{main}\n\n{split}\n\n{failures}"  # the file list went, whole


def test_fit_cuts_the_summary_with_a_marker() -> None:
    main = words("main", 300)
    text = fit_summary(main, ["SPLIT"], 200, COUNTER, _fit_budget())
    assert COUNTER.count_message(summary_message(text)) <= 200
    assert text.endswith(f"{TRUNCATION_MARKER}\n\nSPLIT")
    assert text.startswith("main0000 main0001")


def test_fit_raises_when_no_summary_fits() -> None:
    with pytest.raises(CompactionError, match="too few for any summary"):
        fit_summary("MAIN " * 50, [], 5, COUNTER, _fit_budget())
