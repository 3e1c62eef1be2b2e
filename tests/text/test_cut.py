"""The head/tail cut of a long text and its one note."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.text.cut import OMISSION_NOTE_RE, cut_middle, is_cut_middle, omission_note
from tests.strategies import examples

_texts = st.text(st.characters(codec="utf-8"), max_size=400) | st.text("ab\n", max_size=3000)
_sizes = st.integers(0, 500)
_places = st.none() | st.from_regex(r"tool-output/[0-9a-f]{1,32}\.json", fullmatch=True)


@settings(max_examples=examples(300), deadline=None)
@given(_texts, _sizes, _sizes, _places)
def test_a_cut_is_head_note_tail_of_the_original(
    text: str, head: int, tail: int, kept_in: str | None
) -> None:
    cut = cut_middle(text, head, tail, kept_in=kept_in)
    omitted = len(text) - head - tail
    if cut is text:
        # Unchanged only when the text is short enough: nothing to leave out, or the note
        # would not make it shorter.
        note = omission_note(max(omitted, 0), kept_in=kept_in)
        assert omitted <= 0 or head + tail + len(note) + 2 >= len(text)
        return
    note = omission_note(omitted, kept_in=kept_in)
    assert cut == text[:head] + "\n" + note + "\n" + text[len(text) - tail :]
    assert len(cut) < len(text)  # shorter than the original, so never longer plus the note
    # The note reads back: how much is gone and where it is kept.
    found = OMISSION_NOTE_RE.search(cut, head)
    assert found is not None and found.start() == head + 1
    assert int(found["chars"].replace(",", "")) == omitted and found["kept_in"] == kept_in
    # A cut knows itself, so it is never cut again.
    assert is_cut_middle(cut, head, tail)


@settings(max_examples=examples(200), deadline=None)
@given(_texts, _sizes, _sizes)
def test_text_shorter_than_head_and_tail_is_never_touched(text: str, head: int, tail: int) -> None:
    if len(text) <= head + tail:
        assert cut_middle(text, head, tail) is text


def test_the_note_format() -> None:
    text = "H" * 3_000 + "M" * 12_345 + "T" * 1_000
    cut = cut_middle(text, 3_000, 1_000)
    assert cut == "H" * 3_000 + "\n[... 12,345 characters omitted ...]\n" + "T" * 1_000
    kept = cut_middle(text, 3_000, 1_000, kept_in="tool-output/ab12.json")
    assert "\n[... 12,345 characters omitted, kept in tool-output/ab12.json ...]\n" in kept
    assert cut_middle("x" * 50, 10, 0) == "x" * 10 + "\n[... 40 characters omitted ...]\n"
    assert not is_cut_middle(text, 3_000, 1_000) and not is_cut_middle(cut, 2_999, 1_000)
    assert not is_cut_middle(cut, 3_000, 999)


def test_bad_sizes_and_places_are_refused() -> None:
    with pytest.raises(ValueError, match="head and tail"):
        cut_middle("abc", -1, 0)
    with pytest.raises(ValueError, match="kept_in"):
        cut_middle("x" * 100, 1, 1, kept_in="a file with spaces")
    with pytest.raises(ValueError, match="omitted"):
        omission_note(-1)
