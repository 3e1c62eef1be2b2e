"""The date a message's text starts with (memctx.text.leading_date) and the speaker named
after it (leading_speaker), and the archive reading the date as the message's time when the
message has no timestamp of its own."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctx.config import MemoryContextConfig
from memctx.retrieval.embeddings import HashEmbedder
from memctx.runtime.engine import MemoryContext
from memctx.store import RawStore
from memctx.text.dates import leading_date, leading_day, leading_speaker, without_chat_prefix


def _at(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()  # type: ignore[arg-type, misc]


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("[8 May 2023] Caroline: I went to a support group", _at(2023, 5, 8)),
        ("[2023-05-08 14:30] bob: the deploy is done", _at(2023, 5, 8, 14, 30)),
        ("[2023-05-08T10:00:00+02:00] x", _at(2023, 5, 8, 8)),
        ("2023-05-08T10:00:00Z - build green", _at(2023, 5, 8, 10)),
        ("1:56 pm on 8 May, 2023 - Caroline: hi", _at(2023, 5, 8, 13, 56)),
        ("Monday, May 8, 2023: started the journal", _at(2023, 5, 8)),
        ("(May 8th, 2023) notes", _at(2023, 5, 8)),
        ("[8 May 2023 at 2:30 pm] x", _at(2023, 5, 8, 14, 30)),
        ("[Tue, 9 May 2023 08:01] x", _at(2023, 5, 9, 8, 1)),
        ("  [Sept. 3, 2021] x", _at(2021, 9, 3)),
        ("[12 am on 1 Jan 2024] x", _at(2024, 1, 1)),
        ("2023-05-08: x", _at(2023, 5, 8)),
    ],
)
def test_a_date_the_text_starts_with_is_read(text: str, when: float) -> None:
    assert leading_date(text) == when


@pytest.mark.parametrize(
    "text",
    [
        "May 8, 2023 was the day we launched",  # a sentence opening with a date
        "I met her on [8 May 2023] at the park",  # a date later in the text
        "We shipped it. [2023-05-08] was the day",
        "[31 February 2023] x",  # no such day
        "[2023-13-01] x",
        "[8 May 2023) x",  # brackets that do not match
        "[8 May 2023 14] x",  # a bare number is not a time
        "[13:00 pm on 8 May 2023] x",  # not a 12-hour time
        "[05/08/2023] x",  # day-first or month-first: the text does not say
        "[8 Mayo 2023] x",
        "",
    ],
)
def test_a_date_that_is_not_a_prefix_or_not_a_date_is_not_read(text: str) -> None:
    assert leading_date(text) is None


@given(st.text(max_size=200))
def test_any_text_gives_a_time_or_none_and_never_raises(text: str) -> None:
    value = leading_date(text)
    assert value is None or isinstance(value, float)


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 12, 31)))
def test_an_iso_prefix_reads_back_the_minute_it_names(when: datetime) -> None:
    stamp = when.replace(second=0, microsecond=0, tzinfo=UTC)
    assert leading_date(f"[{stamp:%Y-%m-%d %H:%M}] someone: hello") == stamp.timestamp()


@pytest.mark.parametrize(
    ("text", "speaker"),
    [
        ("[8 May 2023] Caroline: I went to a support group", "Caroline"),
        ("[2023-05-08 14:30] bob: the deploy is done", "bob"),
        ("1:56 pm on 8 May, 2023 - Caroline: hi", "Caroline"),
        ("[Tue, 9 May 2023 08:01] Dr. Jane O'Neil: the results are in", "Dr. Jane O'Neil"),
        ("2023-05-08: Melanie: a date, then a name", "Melanie"),
        ("[8 May 2023] - Ana-Maria: a dash between", "Ana-Maria"),
    ],
)
def test_the_speaker_after_a_leading_date_is_read(text: str, speaker: str) -> None:
    assert leading_speaker(text) == speaker


@pytest.mark.parametrize(
    "text",
    [
        "Caroline: no date before the name",
        "Note: a label is not a speaker without a chat line's date",
        "[8 May 2023] went to the park, then home",  # no colon
        "[8 May 2023] one two three four five: too many words for a name",
        "[8 May 2023] 42: a number is not a name",
        "[8 May 2023] Caroline:no space after the colon",
        "I met her on [8 May 2023] Caroline: mid-sentence",
        f"[8 May 2023] {'Abcdefghij ' * 3}Abcdefghijk: over forty characters",
        "",
    ],
)
def test_no_speaker_without_a_leading_date_and_a_short_name(text: str) -> None:
    assert leading_speaker(text) is None


@given(st.text(max_size=200))
def test_any_text_gives_a_speaker_or_none_and_never_raises(text: str) -> None:
    name = leading_speaker(text)
    assert name is None or (0 < len(name) <= 40 and ":" not in name and "\n" not in name)


@pytest.mark.parametrize(
    ("text", "day", "rest"),
    [
        ("[8 May 2023] Caroline: hi", "2023-05-08", "Caroline: hi"),
        ("8 May 2023: Caroline: hi", "2023-05-08", "Caroline: hi"),
        ("2023-05-08 | deploy done", "2023-05-08", "deploy done"),
        ("Monday, May 8, 2023:\n  notes", "2023-05-08", "notes"),
        ("  (May 8th, 2023)  - x", "2023-05-08", "- x"),
    ],
)
def test_a_leading_date_that_names_only_a_day_is_read_with_its_extent(
    text: str, day: str, rest: str
) -> None:
    lead = leading_day(text)
    assert lead is not None and lead[0] == day and text[lead[1] :] == rest


@pytest.mark.parametrize(
    "text",
    [
        "[2023-05-08 14:30] bob: a time says more than the day",
        "1:56 pm on 8 May, 2023 - Caroline: hi",
        "[8 May 2023, 10:00] x",
        "[31 February 2023] no such day",
        "We met on [8 May 2023]",
        "05/08/2023: numeric, order unknown",
        "",
    ],
)
def test_no_leading_day_for_a_time_a_bad_date_or_none(text: str) -> None:
    assert leading_day(text) is None


@given(st.text(max_size=200))
def test_any_text_gives_a_leading_day_within_it_or_none(text: str) -> None:
    lead = leading_day(text)
    assert lead is None or (len(lead[0]) == 10 and 0 < lead[1] <= len(text))


NOW = _at(2024, 1, 10, 12)


def _stamps(
    tmp_path: Path, messages: list[dict[str, object]], eviction_days: int = 3650
) -> dict[str, float]:
    """Archive ``messages`` at NOW; each stored text's timestamp."""
    config = MemoryContextConfig().with_overrides({"evictionDays": eviction_days})
    with MemoryContext(
        config,
        store_dir=tmp_path / "store",
        session_id="s1",
        context_window_tokens=20_000,
        embedder=HashEmbedder(),
        clock=partial(float, NOW),
    ) as engine:
        engine.on_before_compact(messages)
        engine.wait_idle(60)
    store = RawStore(tmp_path / "store", embedder=HashEmbedder(), eviction_days=None)
    try:
        return {seg.content: seg.timestamp for seg in store.segments()}
    finally:
        store.close()


def test_the_archive_dates_a_message_by_its_text_only_without_a_timestamp(
    tmp_path: Path,
) -> None:
    stamped = _at(2023, 12, 1, 9)
    stamps = _stamps(
        tmp_path,
        [
            {"role": "user", "content": "[8 May 2023] Caroline: I went to a support group"},
            {
                "role": "assistant",
                "content": "[9 May 2023] Melanie: sounds great",
                "timestamp": stamped,
            },
            {"role": "user", "content": "We met on [8 May 2023] at the park"},
            {"role": "user", "content": "[8 May 2025] Caroline: a date after now"},
            {"role": "tool", "tool_call_id": "c1", "content": "[2023-05-08 10:00] INFO started"},
        ],
    )
    assert stamps["[8 May 2023] Caroline: I went to a support group"] == _at(2023, 5, 8)
    # A message with a timestamp keeps it, whatever its text says.
    assert stamps["[9 May 2023] Melanie: sounds great"] == stamped
    # A date mid-sentence, a date later than the clock, a tool's log line: the archive's time.
    assert stamps["We met on [8 May 2023] at the park"] == NOW
    assert stamps["[8 May 2025] Caroline: a date after now"] == NOW
    assert stamps["[2023-05-08 10:00] INFO started"] == NOW


def test_a_date_in_the_text_never_makes_a_message_expire_on_arrival(tmp_path: Path) -> None:
    """Past the eviction horizon a date read from the text is not the message's time (the
    message would be evicted as soon as it is stored); a set ``timestamp`` is the caller's."""
    old = _at(2020, 1, 1)
    stamps = _stamps(
        tmp_path,
        [
            {"role": "user", "content": "[1 Jan 2020] notes: the staging port is 8443"},
            {"role": "user", "content": "[5 Jan 2024] notes: the API moved to v2"},
            {"role": "user", "content": "pasted with its own time", "timestamp": old},
        ],
        eviction_days=90,
    )
    assert stamps["[1 Jan 2020] notes: the staging port is 8443"] == NOW
    assert stamps["[5 Jan 2024] notes: the API moved to v2"] == _at(2024, 1, 5)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[8 May 2023] Caroline: I went to a support group", "I went to a support group"),
        ("1:56 pm on 8 May, 2023 - Caroline: hi", "hi"),
        ("[2023-05-08 14:30] the deploy is done", "the deploy is done"),  # no speaker
        ("2023-05-08: Melanie: a date, then a name", "a date, then a name"),
        (
            "Note: a label without a chat line's date stays",
            "Note: a label without a chat line's date stays",
        ),
        ("Caroline: no date before the name", "Caroline: no date before the name"),
        ("[8 May 2023] Caroline: ", "[8 May 2023] Caroline: "),  # nothing said: the text itself
        ("I met her on [8 May 2023] Caroline: hi", "I met her on [8 May 2023] Caroline: hi"),
    ],
)
def test_without_chat_prefix_leaves_the_words_said(text: str, said: str) -> None:
    assert without_chat_prefix(text) == said


@given(st.text(max_size=200))
def test_without_chat_prefix_keeps_a_tail_of_the_text_and_never_raises(text: str) -> None:
    said = without_chat_prefix(text)
    assert said == text or (said and said.strip() == said and said in text)
