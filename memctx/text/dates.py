"""The date a message's text starts with, as chat exports and logs write a line's time, and
the speaker such a line names after it.

A message without a ``timestamp`` field may still say when it was written: an exported chat
(``[8 May 2023] Caroline: ...``, ``[2023-05-08 14:30] bob: ...``), a transcript pasted turn
by turn (``1:56 pm on 8 May, 2023 - Caroline: ...``), a journal (``Monday, May 8, 2023: ...``).
:func:`leading_date` reads that date, so that such a message is dated, grouped by day and
split into episodes as one with a ``timestamp`` is.

Only the very start of the text counts, and only a date that is plainly a prefix: inside
brackets (``[...]`` or ``(...)``), or followed by a separator (``:``, ``-``, ``–``, ``—``,
``|``) -- a sentence that opens with a date ("May 8, 2023 was the launch") or names one
later on is not the message's time. Formats: ISO 8601 (``2023-05-08``, with an optional
``T``/space time and zone), day-month-year and month-day-year with the month's name or its
three-letter abbreviation, an optional weekday before, an optional time before (``1:56 pm
on ...``) or after (``, 14:30``, `` at 2 pm``). Numeric ``05/08/2023`` forms are left alone:
day-first and month-first read differently and the text does not say which it is. Without
a zone the time is UTC, the store's clock.

:func:`leading_speaker` reads the name an exported chat line gives after its date
(``[8 May 2023] Caroline: ...`` is Caroline's): who said a message that carries no ``name``.
Only after a leading date: a line that merely opens with ``Note:`` or ``Error:`` names no one.
:func:`without_chat_prefix` is the line without both: the words said.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

__all__ = ["leading_date", "leading_day", "leading_speaker", "without_chat_prefix"]

_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_MONTH_OF = {name: i + 1 for i, name in enumerate(_MONTHS)} | {
    name[:3]: i + 1 for i, name in enumerate(_MONTHS)
}
_MONTH_OF["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTH_OF, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?:(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday)?\.?,?\s+)?"
_CLOCK = r"(?P<{p}hour>\d{{1,2}})(?::(?P<{p}minute>\d{{2}})(?::(?P<{p}second>\d{{2}}))?)?" + (
    r"(?:\s*(?P<{p}half>[ap])\.?m\.?)?"
)
_ISO = (
    r"(?P<iso_year>\d{4})-(?P<iso_month>\d{2})-(?P<iso_day>\d{2})"
    r"(?:[T ](?P<iso_hour>\d{2}):(?P<iso_minute>\d{2})(?::(?P<iso_second>\d{2})(?:\.\d+)?)?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2})?)?"
)
_DAY_MONTH = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+(?P<year>\d{4})"
_MONTH_DAY = (
    _MONTH.replace("month", "month2") + r"\s+(?P<day2>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year2>\d{4})"
)
_NAMED = (
    r"(?:"
    + _CLOCK.format(p="pre_")
    + r"\s+on\s+)?"
    + _WEEKDAY
    + r"(?:"
    + _DAY_MONTH
    + "|"
    + _MONTH_DAY
    + r")"
    + r"(?:,?\s+(?:at\s+)?"
    + _CLOCK.format(p="post_")
    + r")?"
)
_DATE = r"(?:" + _ISO + "|" + _NAMED + r")"
_BRACKETED = re.compile(r"\s*(?P<open>[\[(])\s*" + _DATE + r"\s*(?P<close>[\])])", re.IGNORECASE)
_PREFIX = re.compile(r"\s*" + _DATE + r"\s*(?::|[-–—|]\s)", re.IGNORECASE)
_CLOSING = {"[": "]", "(": ")"}
# After the date: one to four words of a name (letters first, then letters, digits, dots,
# apostrophes, hyphens), then a colon and a space, as chat exports write the speaker.
_SPEAKER = re.compile(r"\s*(?:[-–—|]\s*)?(?P<name>[^\W\d_][\w.'’-]*(?: [^\W\d_][\w.'’-]*){0,3}):\s")
_SPEAKER_CHARS = 40


def leading_date(text: str) -> float | None:
    """Epoch seconds of the date (and time) ``text`` starts with, else ``None``.

    ``None`` also for a date that does not exist (``31 February 2023``, ``2023-13-01``).
    """
    match = _date_prefix(text)
    if match is None:
        return None
    try:
        return _epoch(match)
    except (ValueError, OverflowError):
        return None


def leading_day(text: str) -> tuple[str, int] | None:
    """The day ``text`` opens with when its leading date names a day and no time:
    ``(YYYY-MM-DD, length)``, ``length`` covering the date, its brackets or separator and
    the spaces after (``[8 May 2023] Caroline: ...`` gives ``("2023-05-08", 13)``); else
    ``None``, as for a date with a time (``[2023-05-08 14:30] bob:``), which says more than
    its day."""
    match = _date_prefix(text)
    if match is None or match["iso_hour"] or match["pre_hour"] or match["post_hour"]:
        return None
    try:
        day = datetime.fromtimestamp(_epoch(match), UTC).strftime("%Y-%m-%d")
    except (ValueError, OverflowError):
        return None
    end = match.end()
    while end < len(text) and text[end].isspace():
        end += 1
    return day, end


def leading_speaker(text: str) -> str | None:
    """The speaker an exported chat line names after its leading date (``[8 May 2023]
    Caroline: ...`` gives ``Caroline``), else ``None``: no leading date, or no ``name:``
    (one to four words, at most 40 characters) right after it."""
    match = _date_prefix(text)
    said = None if match is None else _speaker_after(text, match.end())
    return None if said is None else said["name"]


def without_chat_prefix(text: str) -> str:
    """``text`` without the date it opens with and the speaker named after that date
    (``[8 May 2023] Caroline: I went ...`` gives ``I went ...``): what the line says. The
    text itself when it opens with no date (``Note: ...`` stays whole) or when nothing would
    be left."""
    match = _date_prefix(text)
    if match is None:
        return text
    said = _speaker_after(text, match.end())
    rest = text[match.end() if said is None else said.end() :].strip()
    return rest or text


def _speaker_after(text: str, end: int) -> re.Match[str] | None:
    """The ``name: `` right after a leading date that ends at ``end``, if there is one."""
    said = _SPEAKER.match(text, end, end + _SPEAKER_CHARS + 8)
    return None if said is None or len(said["name"]) > _SPEAKER_CHARS else said


def _date_prefix(text: str) -> re.Match[str] | None:
    head = text[:120]
    match = _BRACKETED.match(head)
    if match is not None and _CLOSING[match["open"]] != match["close"]:
        match = None
    if match is None:
        match = _PREFIX.match(head)
    return match


def _epoch(match: re.Match[str]) -> float:
    if match["iso_year"]:
        zone = _zone(match["zone"])
        stamp = datetime(
            int(match["iso_year"]),
            int(match["iso_month"]),
            int(match["iso_day"]),
            int(match["iso_hour"] or 0),
            int(match["iso_minute"] or 0),
            int(match["iso_second"] or 0),
            tzinfo=zone,
        )
        return stamp.timestamp()
    if match["day"]:
        year, month, day = match["year"], match["month"], match["day"]
    else:
        year, month, day = match["year2"], match["month2"], match["day2"]
    prefix = "pre_" if match["pre_hour"] else "post_"
    hour = int(match[f"{prefix}hour"] or 0)
    if match[f"{prefix}hour"] and match[f"{prefix}minute"] is None and not match[f"{prefix}half"]:
        raise ValueError("a bare number is not a time")
    half = (match[f"{prefix}half"] or "").lower()
    if half:
        if not 1 <= hour <= 12:
            raise ValueError("not a 12-hour clock")
        hour = hour % 12 + (12 if half == "p" else 0)
    stamp = datetime(
        int(year),
        _MONTH_OF[month.lower().rstrip(".")],
        int(day),
        hour,
        int(match[f"{prefix}minute"] or 0),
        int(match[f"{prefix}second"] or 0),
        tzinfo=UTC,
    )
    return stamp.timestamp()


def _zone(text: str | None) -> timezone:
    if not text or text.upper() == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
