"""The ``observation-masking`` strategy in every provider shape: what it masks and how, pairing,
the caller's dicts, the cached prefix, the window, and its ``keepLast`` setting."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FORMATS, Call, Turn, abstract_conversations, examples, render

from memctx.config import MemoryContextConfig
from memctx.messages import (
    BlockKind,
    InfoCache,
    RoleKind,
    TokenCounter,
    inspect_message,
    pairing_violations,
)
from memctx.strategies import StrategySetup, build_strategy, parse_strategy, strategy_names
from memctx.strategies.observation_masking import (
    DEFAULT_KEEP_LAST,
    ObservationMaskingStrategy,
    masked_placeholder,
)
from memctx.strategies.truncate import TruncateStrategy

NAME = "observation-masking"


def _setup(window: int = 1_000_000) -> StrategySetup:
    return StrategySetup(
        window=window,
        config=MemoryContextConfig(),
        store_dir=Path("unused"),
        counter=TokenCounter(),
        infos=InfoCache(),
        clock=lambda: 1_767_225_600.0,
    )


def _conversation(fmt: str, turns: int = 8, size: int = 400) -> list[dict[str, Any]]:
    """A system prompt, then per turn a user request, an assistant turn with two parallel
    calls (``bash`` and ``grep``) and their outputs; turn 0's bash output is 1,234 chars."""
    conv = [
        Turn(
            f"request {i}",
            f"working on {i}",
            None,
            [
                Call("bash", {"turn": i}, ("b" if i else "B") * (1_234 if i == 0 else size + i)),
                Call("grep", {"turn": i}, "g" * (size + 50 + i), is_error=i % 3 == 0),
            ],
        )
        for i in range(turns)
    ]
    return render(fmt, True, conv)


def _outputs(messages: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    """(message index, block) of every tool output, in order."""
    return [
        (i, b)
        for i, m in enumerate(messages)
        for b in inspect_message(m).blocks
        if b.kind is BlockKind.TOOL_RESULT
    ]


def _masked(block: Any) -> bool:
    return "[output of " in block.text and " omitted: " in block.text


def _calls(transcript: list[dict[str, Any]]) -> list[int]:
    """Where the engine makes a model call: before every run of assistant messages but the
    first (a Responses answer spreads over several items: a message, then its calls)."""
    kinds = [inspect_message(m).kind for m in transcript]
    return [
        i
        for i, kind in enumerate(kinds)
        if i and kind is RoleKind.ASSISTANT and kinds[i - 1] is not RoleKind.ASSISTANT
    ] + [len(transcript)]


def test_it_is_registered_and_takes_keep_last_from_its_name() -> None:
    assert NAME in strategy_names()
    default = build_strategy(NAME, _setup())
    assert isinstance(default, ObservationMaskingStrategy)
    assert default.keep_last == DEFAULT_KEEP_LAST == 10
    assert not default.searches and default.close() == {}  # no LLM, no search
    assert parse_strategy(f"{NAME}:keepLast=5") == (NAME, {"keepLast": 5})
    five = build_strategy(f"{NAME}: keepLast = 5", _setup())
    assert isinstance(five, ObservationMaskingStrategy) and five.keep_last == 5
    assert ObservationMaskingStrategy(_setup(), keep_last=0).keep_last == 0


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (f"{NAME}:keepLast=x", "want an integer >= 0"),
        (f"{NAME}:keepLast=-1", "want an integer >= 0"),
        (f"{NAME}:keep=3", "has no setting 'keep'; it takes keepLast"),
        (f"{NAME}:keepLast", "expected NAME:KEY=VALUE"),
        (f"{NAME}:", "expected NAME:KEY=VALUE"),
        ("truncate:keepLast=3", "it takes none"),
        ("nope:keepLast=3", "unknown strategy"),
    ],
)
def test_bad_settings_are_refused_with_the_fix(spec: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        build_strategy(spec, _setup())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("keep", [0, 3, DEFAULT_KEEP_LAST])
def test_all_but_the_last_n_outputs_are_masked_in_every_format(fmt: str, keep: int) -> None:
    transcript = _conversation(fmt)
    frozen = copy.deepcopy(transcript)
    strategy = build_strategy(f"{NAME}:keepLast={keep}", _setup())
    strategy.start_session("s")
    prepared = strategy.prepare(transcript)
    context = prepared.context
    assert transcript == frozen  # the caller's dicts are never modified
    assert len(context) == len(transcript) and not prepared.trimmed
    before, after = _outputs(transcript), _outputs(context)
    assert len(before) == len(after) == 16  # results are replaced, never removed
    masked = [b for _, b in after if _masked(b)]
    assert len(masked) == 16 - keep
    for (i, old), (j, new) in zip(before, after, strict=True):
        assert i == j and (new.tool_id, new.is_error) == (old.tool_id, old.is_error)
        if not _masked(new):
            assert new.text == old.text
    untouched = {i for i, _ in before} - {i for i, b in after if _masked(b)}
    assert all(context[i] is transcript[i] for i in untouched)
    assert all(not _masked(b) for _, b in after[16 - keep :])  # the newest N are verbatim
    assert pairing_violations(context) == pairing_violations(transcript) == []
    # Messages without outputs are sent as they are (the same dicts).
    for i, message in enumerate(transcript):
        if not inspect_message(message).has_tool_results:
            assert context[i] is message


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_placeholder_names_the_tool_and_the_size(fmt: str) -> None:
    transcript = _conversation(fmt)
    strategy = ObservationMaskingStrategy(_setup(), keep_last=2)
    strategy.start_session("s")
    context = strategy.prepare(transcript).context
    (index, first), *_ = _outputs(transcript)
    (_, masked), (_, second) = _outputs(context)[:2]
    line = masked_placeholder("bash", len(first.text))
    assert line == "[output of bash omitted: 1,234 chars]" or fmt == "gemini"
    if fmt == "gemini":  # the response object keeps its shape: {"output": line}
        part = context[index]["parts"][0]["functionResponse"]
        assert part["response"] == {"output": line} and part["name"] == "bash"
    else:
        assert masked.text == line
    assert "[output of grep omitted: " in second.text
    if fmt in ("anthropic", "pi"):
        assert second.is_error  # error flags stay
    if fmt == "anthropic":  # tool_result blocks name no tool: the call's name is used
        block = context[index]["content"][0]
        assert block == {**transcript[index]["content"][0], "content": line}


def test_outputs_shorter_than_their_placeholder_stay_verbatim() -> None:
    transcript = _conversation("openai", size=5)
    short = [
        m for m in transcript if m["role"] == "tool" and len(m["content"]) < len("[output of ")
    ]
    strategy = ObservationMaskingStrategy(_setup(), keep_last=0)
    strategy.start_session("s")
    context = strategy.prepare(transcript).context
    assert all(m in context for m in short) and short  # not worth masking: nothing saved
    assert context[3]["content"] == "[output of bash omitted: 1,234 chars]"


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_prefix_stays_stable_call_after_call(fmt: str) -> None:
    transcript = _conversation(fmt, turns=12)
    strategy = ObservationMaskingStrategy(_setup(), keep_last=4)
    strategy.start_session("s")
    question = {"role": "user", "content": "Which port?"}
    previous: list[dict[str, Any]] = []
    was_masked: list[bool] = []
    for at in _calls(transcript):
        part = transcript[:at]
        # A probe's question at every call, as the engine asks it; the call after it no
        # longer has the question.
        probed = strategy.prepare([*part, question]).context
        context = strategy.prepare(part).context
        assert probed[-1] is question
        assert all(a is b for a, b in zip(context, probed[:-1], strict=True))
        fresh = ObservationMaskingStrategy(_setup(), keep_last=4)
        fresh.start_session("s")
        assert fresh.prepare(part).context == context  # incremental == from scratch
        outputs = _outputs(context)
        masked = [_masked(b) for _, b in outputs]
        kept = min(4, len(masked))
        assert masked == [True] * (len(masked) - kept) + [False] * kept
        # A masked output stays masked, and of the previous call's messages only those with
        # an output masked by this call changed: the rest are the same dicts, which the
        # ledger prices as cache reads.
        then = was_masked + [False] * (len(masked) - len(was_masked))
        assert all(now for now, before in zip(masked, then, strict=True) if before)
        newly = {
            i for (i, _), now, before in zip(outputs, masked, then, strict=True) if now > before
        }
        changed = {i for i, message in enumerate(previous) if context[i] is not message}
        assert changed <= newly
        previous, was_masked = context, masked


@pytest.mark.parametrize("every", [1, 3])
def test_masking_waits_for_a_batch_of_mask_every_outputs(every: int) -> None:
    transcript = _conversation("openai", turns=12)
    strategy = ObservationMaskingStrategy(_setup(), keep_last=2, mask_every=every)
    strategy.start_session("s")
    masked_before = 0
    for at in _calls(transcript):
        outputs = _outputs(strategy.prepare(transcript[:at]).context)
        masked = sum(_masked(b) for _, b in outputs)
        due = max(0, len(outputs) - 2)
        # Masked only when a whole batch has left the last 2, then all of them at once.
        assert masked == (due if due - masked_before >= every else masked_before)
        masked_before = masked
    assert masked_before and len(_outputs(transcript)) - masked_before < 2 + every
    with pytest.raises(ValueError, match="mask_every must be an integer >= 1"):
        ObservationMaskingStrategy(_setup(), mask_every=0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_never_over_the_window_dropping_the_oldest_like_truncate(fmt: str) -> None:
    setup = _setup(window=7_000)
    budget = setup.window - setup.config.reserve_tokens  # 3,000: the reply's reserve is kept
    count = setup.counter.count_message
    transcript = _conversation(fmt, turns=30, size=900)
    strategy = ObservationMaskingStrategy(setup)
    strategy.start_session("s")
    trimmed = 0
    for at in _calls(transcript):
        part = transcript[:at]
        prepared = strategy.prepare(part)
        context = prepared.context
        assert sum(map(count, context)) <= budget
        assert not pairing_violations(context)
        assert context[0] is part[0] and context[-1] is part[-1]
        # The masked context, cut by truncate's own code when it is over the budget.
        unbounded = ObservationMaskingStrategy(_setup())
        unbounded.start_session("s")
        masked = unbounded.prepare(part).context
        if sum(map(count, masked)) > budget:
            assert prepared.trimmed
            assert context == TruncateStrategy(setup).prepare(masked).context
        else:
            assert not prepared.trimmed and context == masked
        trimmed += prepared.trimmed
    assert trimmed  # the test reached the window


@st.composite
def _long_output_conversations(draw: st.DrawFn, fmt: str) -> list[dict[str, Any]]:
    has_system, conv = draw(abstract_conversations())
    for turn in conv:
        for call in turn.calls:
            call.result = call.result * draw(st.integers(1, 12))  # some short, most long
    return render(fmt, has_system, conv)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=examples(60))
@given(data=st.data(), keep=st.integers(0, 4))
def test_masking_never_changes_pairing_nor_the_input(
    fmt: str, data: st.DataObject, keep: int
) -> None:
    transcript = data.draw(_long_output_conversations(fmt))
    frozen = copy.deepcopy(transcript)
    strategy = ObservationMaskingStrategy(_setup(), keep_last=keep)
    strategy.start_session("s")
    for end in range(1, len(transcript) + 1):
        context = strategy.prepare(transcript[:end]).context
        assert pairing_violations(context) == pairing_violations(transcript[:end])
        ids = [inspect_message(m).tool_result_ids for m in context]
        assert ids == [inspect_message(m).tool_result_ids for m in transcript[:end]]
    assert transcript == frozen
