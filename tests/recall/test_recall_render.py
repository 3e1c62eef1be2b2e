"""The recall block renderer: grouping, order, gaps, budget, determinism, CJK."""

from __future__ import annotations

import random

import pytest

from memctx.messages.tokens import estimate_tokens
from memctx.recall.render import RecallHit, compact_text, render_recall


def _hit(turn: int, text: str = "", session: str = "s1", **kw: object) -> RecallHit:
    fields: dict[str, object] = {
        "text": text or f"message {turn}",
        "session": session,
        "date": {"s1": "8 May 2023", "s2": "9 June 2023"}.get(session, ""),
        "speaker": "Ann" if turn % 2 else "Bo",
        "turn": turn,
        "time": {"s1": 1.0, "s2": 2.0}.get(session),
    }
    fields.update(kw)
    return RecallHit(**fields)  # type: ignore[arg-type]


def test_one_header_per_session_in_chronological_order() -> None:
    # Ranked: a June turn first, then two May turns out of order.
    hits = [_hit(20, session="s2"), _hit(4), _hit(3)]
    block = render_recall(hits, budget=1000)
    assert block.text == (
        "[8 May 2023]\nAnn: message 3\nBo: message 4\n[9 June 2023]\nBo: message 20"
    )
    assert block.included == (0, 1, 2)  # in the order kept, i.e. ranked
    assert block.tokens == estimate_tokens(block.text)


def test_skipped_turns_are_marked_and_the_mark_goes_when_the_gap_closes() -> None:
    gap = render_recall([_hit(3), _hit(5)], budget=1000)
    assert gap.text == "[8 May 2023]\nAnn: message 3\n…\nAnn: message 5"
    closed = render_recall([_hit(3), _hit(5), _hit(4)], budget=1000)
    assert closed.text == "[8 May 2023]\nAnn: message 3\nBo: message 4\nAnn: message 5"
    plain = render_recall([_hit(3), _hit(5)], budget=1000, gap_marker="")
    assert plain.text == "[8 May 2023]\nAnn: message 3\nAnn: message 5"


def test_a_hit_that_does_not_fit_is_skipped_and_later_ones_still_tried() -> None:
    long = _hit(1, text="x" * 300)
    hits = [_hit(3), long, _hit(5)]
    block = render_recall(hits, budget=20)
    assert block.included == (0, 2)
    assert "x" not in block.text
    assert block.tokens <= 20


def test_nothing_fits_gives_an_empty_block() -> None:
    assert render_recall([_hit(1)], budget=0) == render_recall([], budget=50)
    empty = render_recall([_hit(1)], budget=0)
    assert (empty.text, empty.included, empty.tokens) == ("", (), 0)


def test_repeated_hits_are_kept_once() -> None:
    block = render_recall([_hit(3), _hit(3, text="other words")], budget=1000)
    assert block.included == (0,)


def test_headers_without_date_or_session() -> None:
    undated = RecallHit(text="hello", session="abc", speaker="user", turn=1)
    dated = RecallHit(text="earlier", session="s0", date="1 May 2023", turn=1, time=0.0)
    bare = RecallHit(text="no session", turn=7)
    block = render_recall([undated, bare, dated], budget=1000)
    # Dated sessions first, then the undated ones in the order they were kept.
    assert block.text == "[1 May 2023]\nearlier\n[session abc]\nuser: hello\nno session"


def test_budget_holds_for_any_input_and_counter() -> None:
    rng = random.Random(7)
    words = ["alpha", "beta", "猫が好き", "λ", "  ", "\n", "x" * 40, "ok"]

    def word_count(text: str) -> int:
        return len(text.split())

    for case in range(300):
        hits = [
            RecallHit(
                text=" ".join(rng.choice(words) for _ in range(rng.randint(0, 30))),
                session=f"s{rng.randint(0, 4)}",
                date=rng.choice(["", "8 May 2023", "9 June 2023"]),
                speaker=rng.choice(["", "Ann", "ユーザー"]),
                turn=rng.randint(0, 40),
                time=rng.choice([None, 1.0, 2.0, 3.0]),
            )
            for _ in range(rng.randint(0, 25))
        ]
        budget = rng.randint(0, 400)
        count = estimate_tokens if case % 2 else word_count
        block = render_recall(hits, budget, count=count)
        assert block.tokens == count(block.text) <= budget
        assert len(set(block.included)) == len(block.included)
        assert render_recall(hits, budget, count=count) == block  # deterministic
        for i in block.included:
            assert compact_text(hits[i].text) in block.text
        # Greedy: a hit left out repeats a kept one or does not fit next to those before it.
        for j in set(range(len(hits))) - set(block.included):
            before = [hits[i] for i in block.included if i < j]
            if any((h.session, h.turn) == (hits[j].session, hits[j].turn) for h in before):
                continue
            assert render_recall([*before, hits[j]], budget, count=count).included == tuple(
                range(len(before))
            )


def test_cjk_text_is_kept_and_counted() -> None:
    hits = [
        RecallHit(
            text="我们周末去露营了，带着孩子们。",
            session="s1",
            date="2023年5月8日",
            speaker="小明",
            turn=1,
        ),
        RecallHit(
            text="猫の名前はミソです。", session="s1", date="2023年5月8日", speaker="花子", turn=2
        ),
    ]
    block = render_recall(hits, budget=1000)
    assert (
        block.text
        == "[2023年5月8日]\n小明: 我们周末去露营了，带着孩子们。\n花子: 猫の名前はミソです。"
    )
    assert block.tokens == estimate_tokens(block.text)
    tight = render_recall(hits, budget=block.tokens - 1)
    assert tight.included == (0,) and tight.tokens <= block.tokens - 1


def test_compact_text_drops_only_meaningless_whitespace() -> None:
    assert compact_text("  hello there  ") == "hello there"
    assert (
        compact_text("def f():\r\n    return 1   \n\n\n# done\n")
        == "def f():\n    return 1\n# done"
    )
    assert compact_text("") == ""


def test_grouping_saves_tokens_over_a_date_per_turn() -> None:
    hits = [_hit(t) for t in range(1, 11)]
    grouped = render_recall(hits, budget=10_000)
    per_turn = sum(estimate_tokens(f"[{h.date}] {h.speaker}: {h.text}") for h in hits)
    assert grouped.tokens < per_turn


@pytest.mark.parametrize("budget", [5, 12, 30])
def test_small_budgets_never_overflow(budget: int) -> None:
    hits = [_hit(t, session="s1" if t < 5 else "s2") for t in range(10)]
    assert render_recall(hits, budget).tokens <= budget
