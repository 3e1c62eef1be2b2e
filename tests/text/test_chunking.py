"""Cutting text under a token budget: split_text (one text into pieces, nothing lost) and
chunk_text / chunk_lines (overlapping chunks), which share split_text's rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.messages.tokens import estimate_tokens
from memctx.text.chunking import chunk_lines, chunk_text, split_lines, split_text
from tests.strategies import examples, multiline_texts


def test_short_text_and_zero_budget_stay_whole() -> None:
    assert chunk_text("one line", 400) == ["one line"]
    long = "\n".join(f"line {i} " + "x" * 50 for i in range(200))
    assert chunk_text(long, 0) == [long]
    assert chunk_text(long[:1200], 400) == [long[:1200]]  # exactly the budget


def test_long_text_is_cut_on_lines_with_overlap() -> None:
    lines = [f"line {i:03d} " + "y" * 40 for i in range(300)]
    chunks = chunk_text("\n".join(lines), 400)
    assert len(chunks) > 10
    assert all(estimate_tokens(c) <= 400 for c in chunks)
    # Whole lines only, in order, consecutive chunks sharing a few lines.
    assert all(set(split_lines(c)) <= set(lines) for c in chunks)
    first, second = split_lines(chunks[0]), split_lines(chunks[1])
    assert first[0] == lines[0] and second[0] in first and second[0] != first[0]


def test_one_oversized_line_is_cut_into_pieces() -> None:
    chunks = chunk_text("z" * 5000, 400)
    assert "".join(chunks) == "z" * 5000 and all(len(c) <= 1200 for c in chunks)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.text(alphabet="abc xyz0123\t", max_size=300), min_size=1, max_size=60),
    st.integers(min_value=20, max_value=500),
)
def test_every_line_is_kept_and_every_chunk_fits(lines: list[str], budget: int) -> None:
    text = "\n".join(lines)
    chunks = chunk_text(text, budget)
    if estimate_tokens(text) <= budget or not text.strip():
        assert chunks == [text]  # short enough (or nothing but blank lines) to stay whole
        return
    assert all(estimate_tokens(c) <= budget for c in chunks)  # so a no-op would fail here
    joined = "\n".join(chunks)
    for line in split_lines(text):
        if line.strip() and len(line) <= 3 * budget:
            assert line in joined


# --- split_text: one text cut into pieces, nothing lost ---------------------------------------


def _cuts(text: str, pieces: list[str]) -> list[bool]:
    """Rebuild ``text`` from ``pieces`` (a line break between two pieces, or nothing where a
    piece ends inside a line); asserts nothing is lost, returns for each cut whether it falls
    inside a line."""
    pos, inside = 0, []
    for k, piece in enumerate(pieces):
        assert text.startswith(piece, pos), f"piece {k} is not the text at {pos}"
        pos += len(piece)
        if k < len(pieces) - 1:
            inside.append(text[pos] != "\n")
            pos += 0 if inside[-1] else 1
    assert pos == len(text), "text after the last piece is lost"
    return inside


def test_split_text_keeps_a_text_that_fits_whole_and_refuses_a_zero_budget() -> None:
    assert split_text("", 1) == [""]
    assert split_text("abc\ndef", 3) == ["abc\ndef"]  # 7 characters: 3 tokens
    with pytest.raises(ValueError, match="at least 1 token"):
        split_text("abc", 0)


def test_split_text_cuts_at_line_breaks_and_keeps_blank_lines() -> None:
    assert split_text("aaa\nbb\ncc", 2) == ["aaa\nbb", "cc"]  # whole lines, as many as fit
    # The blank line and the final newline are text too: nothing is dropped at a cut.
    assert split_text("aaa\n\nb", 1) == ["aaa", "\nb"]
    assert split_text("aaa\n", 1) == ["aaa", ""]


def test_split_text_cuts_inside_a_line_only_when_it_alone_is_over_the_budget() -> None:
    text = "x\nabcdefghijk\n12345678\n9"
    pieces = split_text(text, 2)  # 6 characters
    assert pieces == ["x", "abcdef", "ghijk", "123456", "78\n9"]
    assert _cuts(text, pieces) == [False, True, False, True]
    # The tail of a cut line goes on with the lines after it.
    assert split_text("abcdefg\nh\ni", 2) == ["abcdef", "g\nh\ni"]


@settings(max_examples=examples(300), deadline=None)
@given(multiline_texts, st.integers(min_value=1, max_value=12))
def test_split_text_loses_nothing_fits_and_takes_as_many_lines_as_fit(
    text: str, budget: int
) -> None:
    max_chars = 3 * budget
    pieces = split_text(text, budget)
    if len(text) <= max_chars:
        assert pieces == [text]
        return
    assert all(estimate_tokens(p) <= budget for p in pieces)
    inside = _cuts(text, pieces)
    pos = 0
    for k, piece in enumerate(pieces[:-1]):
        pos += len(piece)
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos) if "\n" in text[pos:] else len(text)
        if inside[k]:
            # Inside a line only when that line alone is over the budget, and then a full piece.
            assert line_end - line_start > max_chars and len(piece) == max_chars
        else:
            # Greedy: the next line would not have fitted after this piece.
            nxt = text.find("\n", pos + 1)
            next_line = text[pos + 1 : nxt if nxt >= 0 else len(text)]
            assert len(piece) + 1 + len(next_line) > max_chars
            pos += 1


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.text(alphabet="ab \t", max_size=40), min_size=1, max_size=40), st.integers(1, 30)
)
def test_chunks_without_overlap_are_split_texts_pieces(lines: list[str], budget: int) -> None:
    # One rule for where a piece ends: chunk_lines without overlap cuts like split_text (on
    # texts whose lines all fit; an over-budget line's pieces keep its line number there).
    budget = max(budget, *(-(-len(line) // 3) for line in lines))
    chunks = chunk_lines(lines, budget, 0)
    assert [text for _, _, text in chunks] == split_text("\n".join(lines), budget)
    assert [s for s, _, _ in chunks] == [1, *(e + 1 for _, e, _ in chunks[:-1])]
