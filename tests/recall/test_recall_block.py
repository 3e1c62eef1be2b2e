"""The ``<recalled-context>`` block: format, budget split, the drop ladder, the hard cap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.messages.markers import is_recalled_block
from memctx.messages.tokens import estimate_tokens
from memctx.recall.block import (
    GAP_MARKER,
    RecallItem,
    build_recall_block,
    compact_text,
    parse_recall_block,
    recall_message,
)
from memctx.text import chunk_text
from tests.strategies import examples

T0 = 1_770_724_260.0  # 2026-02-10 11:51 UTC
DAY = 86_400.0


def fact(text: str, score: float, kind: str = "decision") -> RecallItem:
    return RecallItem("knowledge", text, score, kind, f"f-{text[:8]}")


def detail(
    text: str,
    score: float,
    role: str = "assistant",
    at: float = T0,
    seq: int | None = None,
    session: str = "s1",
) -> RecallItem:
    order = (at, seq if seq is not None else 0)
    return RecallItem("detail", text, score, role, f"s-{text[:8]}", order, "", session, seq)


def test_format_matches_the_seed() -> None:
    block = build_recall_block(
        [fact("Use Stripe for payments", 0.9)],
        [detail("Added signature verification in src/payment/webhook.ts", 0.8)],
        4000,
    )
    assert block is not None
    assert block.text.startswith('<recalled-context source="memory-context">\n<knowledge>\n')
    assert is_recalled_block({"role": "user", "content": block.text})
    assert block.text.endswith("</recalled-context>")
    assert "<knowledge>\n- [decision] Use Stripe for payments\n</knowledge>" in block.text
    assert (
        "<detail>\n[2026-02-10]\nassistant: Added signature verification in "
        "src/payment/webhook.ts\n</detail>"
    ) in block.text
    assert block.tokens == estimate_tokens(block.text)
    assert is_recalled_block(recall_message(block))


def test_nothing_found_gives_no_block() -> None:
    assert build_recall_block([], [], 4000) is None
    assert build_recall_block([fact("x y z", 1.0)], [], 0) is None


def test_lowest_scoring_details_are_dropped_first() -> None:
    details = [detail(f"detail number {i} " + "word " * 60, score=i / 10) for i in range(10)]
    block = build_recall_block([], details, 400)
    assert block is not None
    kept_scores = sorted(d.score for d in block.details)
    assert kept_scores, "something must fit in 400 tokens"
    dropped = [d.score for d in details if d.score not in kept_scores]
    assert max(dropped) <= min(kept_scores)
    assert block.tokens <= 400
    assert block.dropped == len(dropped)


def test_knowledge_share_is_reserved_and_unused_share_goes_to_details() -> None:
    facts = [fact(f"fact {i} " + "term " * 30, 1.0 - i / 100) for i in range(20)]
    details = [detail(f"detail {i} " + "body " * 40, 0.5) for i in range(20)]
    block = build_recall_block(facts, details, 1000, knowledge_share=0.3)
    assert block is not None
    knowledge_tokens = sum(estimate_tokens(k.line) for k in block.knowledge)
    assert 0 < knowledge_tokens <= 300
    assert block.details
    # Without facts the details may use the whole cap.
    only = build_recall_block([], details, 1000)
    assert only is not None and len(only.details) > len(block.details)


def test_a_huge_detail_is_cut_not_allowed_to_fill_everything() -> None:
    huge = detail("HEAD " + "x" * 50_000, 0.99)
    small = detail("the small relevant line", 0.5)
    block = build_recall_block([], [huge, small], 2000)
    assert block is not None
    refs = {d.ref for d in block.details}
    assert refs == {huge.ref, small.ref}
    cut = next(d for d in block.details if d.ref == huge.ref)
    assert cut.text.startswith("HEAD ") and cut.text.endswith("…[cut]")
    assert block.tokens <= 2000


def test_details_are_shown_in_time_order_under_one_header_per_day() -> None:
    late = detail("late event", 0.9, "user", T0 + 30 * DAY)
    early = detail("early event", 0.1, "user", T0)
    same_day = detail("later that day", 0.5, "assistant", T0 + 3600)
    block = build_recall_block([], [late, early, same_day], 4000)
    assert block is not None
    section = block.text.split("<detail>\n", 1)[1].split("\n</detail>", 1)[0]
    assert section.splitlines() == [
        "[2026-02-10]",
        "user: early event",
        GAP_MARKER,  # no archive positions given: adjacency unknown, so a gap is marked
        "assistant: later that day",
        "[2026-03-12]",
        "user: late event",
    ]


def test_a_chat_line_does_not_repeat_the_day_its_header_shows() -> None:
    """An exported chat's ``[date] name: text`` under that date's header shows ``name:
    text``; a date of another day, a date with a time, or a date alone are shown as they are
    (each says something the header does not)."""
    items = [
        detail("[10 Feb 2026] Caroline: I went to a support group", 0.9, "user", T0, seq=1),
        detail("[9 Feb 2026] Melanie: a date of another day", 0.8, "user", T0, seq=2),
        detail("[10 Feb 2026 09:30] Melanie: a time", 0.7, "user", T0, seq=3),
        detail("[10 Feb 2026]", 0.6, "user", T0, seq=4),
    ]
    block = build_recall_block([], items, 4000)
    assert block is not None
    section = block.text.split("<detail>\n", 1)[1].split("\n</detail>", 1)[0]
    assert section.splitlines() == [
        "[2026-02-10]",
        "user: Caroline: I went to a support group",
        "user: [9 Feb 2026] Melanie: a date of another day",
        "user: [10 Feb 2026 09:30] Melanie: a time",
        "user: [10 Feb 2026]",
    ]
    # What the line leaves out is the header's day; the parser reads the line as shown.
    assert parse_recall_block(block.text)[0].text == items[0].shown_text


def test_consecutive_archive_positions_are_not_separated_by_a_gap_marker() -> None:
    items = [detail(f"line {n}", 1.0 - n / 10, "user", T0, seq=n) for n in (4, 5, 7)]
    block = build_recall_block([], items, 4000)
    assert block is not None
    assert "user: line 4\nuser: line 5\n…\nuser: line 7" in block.text


def test_details_of_several_sessions_name_their_session() -> None:
    here = detail("from this session", 0.9, session="s1")
    there = detail("from an earlier one", 0.8, session="s0", at=T0 - DAY)
    block = build_recall_block([], [here, there], 4000)
    assert block is not None
    assert "[2026-02-09 session s0]\nassistant: from an earlier one" in block.text
    assert "[2026-02-10 session s1]\nassistant: from this session" in block.text


def test_whitespace_without_meaning_is_dropped_indentation_kept() -> None:
    block = build_recall_block([], [detail("def f():\n\n    return 1   \n\n", 0.5)], 4000)
    assert block is not None
    # Lines after an item's first carry the two-space continuation prefix before their own.
    assert "assistant: def f():\n      return 1\n</detail>" in block.text


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab \t\r\n\x0b\x0c\x1c\x85\u2028\u3000")), max_size=40)
)
def test_compacting_only_drops_whitespace_never_joins_words(text: str) -> None:
    # The call record's preview of a recalled item flattens whitespace without compacting
    # first: the same words in the same order, whatever compact_text dropped.
    assert compact_text(text).split() == text.split()


@settings(max_examples=examples(200))
@given(
    st.text(alphabet=st.sampled_from(list("ab \t\r\n\x0b\x0c\x1c\x85\u2028\u3000")), max_size=60)
)
def test_compacting_is_its_two_regex_passes(text: str) -> None:
    # compact_text skips a pass that cannot match; the result is the passes' own (after every
    # kind of line break is written as "\n").
    import re

    text = re.sub("\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]", "\n", text)
    lines = re.sub(r"[ \t]+$", "", text, flags=re.MULTILINE)
    assert compact_text(text) == re.sub(r"\n{2,}", "\n", lines).strip()


def test_the_block_fills_its_cap_with_short_details() -> None:
    # Chat-sized details: the fill's per-item upper bound must not leave the cap half empty.
    items = [detail(f"short note number {n} about the deploy", 1.0, seq=n) for n in range(400)]
    block = build_recall_block([], items, 2000)
    assert block is not None
    assert 0.95 * 2000 <= block.tokens <= 2000


def test_knowledge_only_fallback_when_no_detail_fits() -> None:
    # A counter that makes every "z" dear: not one character of the detail fits, so it is
    # dropped (not shown as an empty cut) and the block falls back to knowledge only.
    def count(text: str) -> int:
        return estimate_tokens(text) + 50 * text.count("z")

    block = build_recall_block([fact("short fact", 1.0)], [detail("z" * 400, 0.9)], 60, count=count)
    assert block is not None
    assert block.knowledge and not block.details and block.dropped == 1
    assert count(block.text) <= 60


def test_gemini_conversations_get_a_parts_message() -> None:
    block = build_recall_block([fact("a b c", 1.0)], [], 500)
    assert block is not None
    gemini = recall_message(block, [{"role": "user", "parts": [{"text": "hi"}]}])
    assert gemini == {"role": "user", "parts": [{"text": block.text}]}
    assert is_recalled_block(gemini)
    plain = recall_message(block, [{"role": "user", "content": "hi"}])
    assert plain == {"role": "user", "content": block.text}


_texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=3000
)


@settings(max_examples=examples(150), deadline=None)
@given(
    facts=st.lists(st.tuples(_texts, st.floats(0, 1)), max_size=12),
    details=st.lists(st.tuples(_texts, st.floats(0, 1)), max_size=25),
    cap=st.integers(1, 5000),
    share=st.floats(0, 1),
)
def test_property_block_never_exceeds_the_cap(
    facts: list[tuple[str, float]], details: list[tuple[str, float]], cap: int, share: float
) -> None:
    block = build_recall_block(
        [fact(t, s) for t, s in facts],
        [detail(t, s) for t, s in details],
        cap,
        knowledge_share=share,
    )
    if block is not None:
        assert estimate_tokens(block.text) <= cap
        assert block.knowledge or block.details


@pytest.mark.parametrize("cap", [50, 200, 4000])
def test_build_is_deterministic(cap: int) -> None:
    facts = [fact(f"f{i} alpha beta", 0.5) for i in range(5)]
    details = [detail(f"d{i} gamma", 0.5) for i in range(8)]
    a = build_recall_block(facts, details, cap)
    b = build_recall_block(list(reversed(facts)), list(reversed(details)), cap)
    assert a == b


def test_ties_are_broken_by_archive_order_never_by_the_random_id() -> None:
    # Parallel tool results archived in the same second: equal scores and labels. Their
    # order (and which one the cap drops) must follow the archive, whatever ids they got.
    texts = ["first result " * 20, "second result " * 20, "third result " * 20]

    def block(refs: list[str], cap: int) -> str:
        items = [
            RecallItem("detail", t, 0.5, "user", ref, (1_770_000_000.0, n))
            for n, (t, ref) in enumerate(zip(texts, refs, strict=True))
        ]
        built = build_recall_block([], items, cap)
        assert built is not None
        return built.text

    for cap in (400, 200):
        a = block(["z-id", "a-id", "m-id"], cap)
        assert a == block(["a-id", "z-id", "b-id"], cap)
    full = block(["z", "a", "m"], 400)
    assert full.index("first") < full.index("second") < full.index("third")
    squeezed = block(["z", "a", "m"], 200)
    assert "first" in squeezed and "third" not in squeezed  # the later tie is dropped first


def _log_chunks(
    text: str, scores: list[float], first_seq: int = 10, owns: list[float] | None = None
) -> list[RecallItem]:
    """``text`` chunked as the archive chunks it, one detail per chunk (consecutive keys)."""
    pieces = chunk_text(text, 120)
    assert len(pieces) == len(scores), len(pieces)
    return [
        RecallItem(
            "detail",
            piece,
            score,
            "tool bash",
            f"c{n}",
            (T0, first_seq + n),
            "s1|7|tool",
            "s1",
            first_seq + n,
            own=owns[n] if owns else None,
        )
        for n, (piece, score) in enumerate(zip(pieces, scores, strict=True))
    ]


LOG = "\n".join(f"line {n:03d} compiling module_{n}.ex ok" for n in range(40))


def test_chunks_of_one_message_compete_on_their_own_scores() -> None:
    # The second and fourth chunk of one output outscore another message: both are shown
    # with it; the low-scoring chunks have no room left.
    log = _log_chunks(LOG, [0.2, 0.9, 0.1, 0.8, 0.1])
    other = detail("the webhook lives in src/pay/hook.py", 0.5)
    block = build_recall_block([], [*log, other], 350)
    assert block is not None and block.tokens <= 350
    assert [d.chunks or (d.ref,) for d in block.details] == [(other.ref,), ("c1", "c3")]
    # One item for the message: its label once, a gap marker between its two runs.
    assert block.text.count("tool bash: ") == 1
    assert f"\n{GAP_MARKER}\n  line 024" in block.details[1].line
    assert block.details[1].runs == (compact_text(log[1].text), compact_text(log[3].text))
    # Asked for one chunk per message, the best one stands for it.
    one = build_recall_block([], [*log, other], 350, per_source=1)
    assert one is not None
    assert [d.ref for d in one.details if d.source] == ["c1"] and not one.details[0].chunks


def test_a_chunk_lifted_only_by_its_neighbours_does_not_crowd_out_another_message() -> None:
    # The search lifts every chunk of a relevant log by its neighbours: the other chunks
    # score like the best one but match the query little themselves. They compete on their
    # own match, so the other message gets the room.
    log = _log_chunks(LOG, [0.9, 0.85, 0.85, 0.85, 0.85], owns=[0.95, 0.1, 0.1, 0.1, 0.1])
    other = detail("the cache is Redis 7.2", 0.5)
    block = build_recall_block([], [*log, other], 200)
    assert block is not None
    assert [d.chunks or (d.ref,) for d in block.details] == [(other.ref,), ("c0",)]
    # With room for the next chunk too: the one that matches on its own enters on its score
    # (before the shorter last chunk), the one lifted by its neighbours does not.
    weak = build_recall_block([], [*log, other], 300)
    strong_log = _log_chunks(LOG, [0.9, 0.85, 0.85, 0.85, 0.85], owns=[0.95, 0.9, 0.1, 0.1, 0.1])
    strong = build_recall_block([], [*strong_log, other], 300)
    assert weak is not None and strong is not None
    assert "c1" not in weak.details[1].chunks
    assert [d.chunks or (d.ref,) for d in strong.details] == [(other.ref,), ("c0", "c1")]


def test_adjacent_chunks_are_merged_without_their_overlap() -> None:
    log = _log_chunks(LOG, [0.9, 0.9, 0.9, 0.9, 0.9])
    block = build_recall_block([], log, 4000)
    assert block is not None
    (item,) = block.details
    assert item.chunks == ("c0", "c1", "c2", "c3", "c4") and not item.runs
    # The whole output once, each line once, in order: the overlap is not repeated.
    assert compact_text(item.text) == LOG
    assert block.text.count("line 017 ") == 1
    assert block.text.count("tool bash: ") == 1
    assert (item.seq, item.seq_end) == (10, 14)


def test_a_merged_item_is_adjacent_to_the_message_after_it() -> None:
    log = _log_chunks(LOG, [0.9, 0.9, 0.1, 0.1, 0.9])
    after = RecallItem("detail", "next message", 0.8, "assistant", "n", (T0, 15), "", "s1", 15)
    block = build_recall_block([], [*log, after], 400)
    assert block is not None
    assert [d.chunks or (d.ref,) for d in block.details] == [("c0", "c1", "c4"), ("n",)]
    section = block.text.split("<detail>\n", 1)[1]
    # A gap inside the message (chunks 2-3 left out), none between its last chunk and the
    # next message.
    assert section.count(GAP_MARKER) == 1
    assert "module_39.ex ok\nassistant: next message" in section


def test_merged_items_parse_back_and_respect_the_cap() -> None:
    from memctx.recall import parse_recall_block

    log = _log_chunks(LOG, [0.9, 0.3, 0.8, 0.2, 0.7])
    for cap in (120, 250, 400, 4000):
        block = build_recall_block([], log, cap)
        if block is None:
            continue
        assert estimate_tokens(block.text) <= cap
        entries = parse_recall_block(block.text)
        assert [(e.label, e.text) for e in entries] == [
            ("tool bash", compact_text(d.text)) for d in block.details
        ]
        for item in block.details:
            for run in item.text.split(f"\n{GAP_MARKER}\n"):
                assert run.removesuffix(" …[cut]") in LOG


@settings(max_examples=examples(100), deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab …\n<x", max_size=30), min_size=1, max_size=60),
    scores=st.lists(st.floats(0, 1), min_size=1, max_size=40),
    cap=st.integers(30, 3000),
)
def test_property_chunks_of_one_message_show_its_text_once_in_order(
    lines: list[str], scores: list[float], cap: int
) -> None:
    text = "\n".join(lines)
    pieces = chunk_text(text, 20)
    items = [
        RecallItem("detail", p, scores[n % len(scores)], "tool sh", f"c{n}", (T0, n), "m", "s", n)
        for n, p in enumerate(pieces)
    ]
    block = build_recall_block([], items, cap)
    if block is None:
        return
    assert estimate_tokens(block.text) <= cap
    assert len(block.details) == 1 and block.text.count("tool sh: ") == 1
    (item,) = block.details
    whole = compact_text(text)
    at = 0
    for run in item.runs or (item.text,):  # every run is a stretch of the text, in order
        run = compact_text(run).removesuffix(" …[cut]")
        found = whole.find(run, at)
        assert found >= 0
        at = found + len(run)


def test_before_request_never_parts_a_tool_call_from_its_result() -> None:
    from memctx.messages import InfoCache
    from memctx.messages.pairing import pairing_violations
    from memctx.recall import insert_recall

    block = {"role": "user", "content": "<recalled-context>x</recalled-context>"}
    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}],
    }
    request = {"role": "user", "content": "list the files"}
    messages = [{"role": "system", "content": "s"}, request, call, result]
    out = insert_recall(messages, block, InfoCache(), "before-request")
    # The latest request is before the call: the block goes before it, not before the result.
    assert out == [messages[0], block, request, call, result] and pairing_violations(out) == []
    # No request at all (a history of tool results): after the system messages.
    assert (
        insert_recall(messages[:1] + messages[2:], block, InfoCache(), "before-request")[1] is block
    )
    assert insert_recall(messages, None, InfoCache(), "end") is messages
