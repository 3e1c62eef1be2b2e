"""chunk_text: long archived messages cut on line boundaries under a token budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.messages.tokens import estimate_tokens
from memctx.text.chunking import chunk_text, split_lines


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


@settings(max_examples=200, deadline=None)
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
