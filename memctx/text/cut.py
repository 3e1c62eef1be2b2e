"""The head/tail cut: a long text's beginning and end kept, its middle replaced by one note.

Every place memctx shortens a text it shows a model cuts the same way, with the same note:
seed 003's soft-trim of old tool results, seed 001's overflow truncation of oversized ones,
the summariser's view of a tool result, the extraction prompt's excerpts, and the archive of
a huge message (whose middle is kept in a file, named in the note). The head keeps the
command and the first output; the tail keeps what tools print last (failures, test
summaries, exit codes). The note says how many characters are gone, so a model knows the
output was longer and reads again what it needs, and, where known, where they are kept::

    [... 12,345 characters omitted ...]
    [... 12,345 characters omitted, kept in tool-output/3f2a....json ...]

Each caller chooses its own sizes; :data:`OMISSION_NOTE_RE` reads a note back.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["OMISSION_NOTE_RE", "cut_middle", "is_cut_middle", "omission_note"]

OMISSION_NOTE_RE: Final = re.compile(
    r"\[\.\.\. (?P<chars>\d[\d,]*) characters omitted(?:, kept in (?P<kept_in>\S+))? \.\.\.\]"
)
"""A note :func:`omission_note` writes: ``chars`` (with thousands commas) and ``kept_in``."""


def omission_note(omitted: int, *, kept_in: str | None = None) -> str:
    """The note that stands for ``omitted`` characters left out (kept in ``kept_in``, if given).

    Raises:
        ValueError: ``omitted`` is negative, or ``kept_in`` is empty or holds whitespace (it
            names a file or ref, read back by :data:`OMISSION_NOTE_RE`).
    """
    if omitted < 0:
        raise ValueError(f"omitted must be >= 0, got {omitted}")
    if kept_in is not None and (not kept_in or any(c.isspace() for c in kept_in)):
        raise ValueError(f"kept_in must be a path or ref without spaces, got {kept_in!r}")
    where = f", kept in {kept_in}" if kept_in else ""
    return f"[... {omitted:,} characters omitted{where} ...]"


def cut_middle(text: str, head: int, tail: int, *, kept_in: str | None = None) -> str:
    """``text``'s first ``head`` and last ``tail`` characters around one :func:`omission_note`.

    ``head + "\\n" + note + "\\n" + tail``; ``text`` itself (the same object) when that would
    not be shorter, so a text only slightly over ``head + tail`` stays whole and a caller can
    tell "cut" from "kept" with ``is``.

    Args:
        text: The text to shorten.
        head: Characters kept from its start.
        tail: Characters kept from its end.
        kept_in: Where the whole text (or its omitted middle) can be read, if anywhere.

    Raises:
        ValueError: ``head`` or ``tail`` is negative, or ``kept_in`` is not a plain name.
    """
    if head < 0 or tail < 0:
        raise ValueError(f"head and tail must be >= 0, got {head} and {tail}")
    omitted = len(text) - head - tail
    if omitted <= 0:
        return text
    note = omission_note(omitted, kept_in=kept_in)
    cut = f"{text[:head]}\n{note}\n{text[len(text) - tail :]}"
    return cut if len(cut) < len(text) else text


def is_cut_middle(text: str, head: int, tail: int) -> bool:
    """Whether ``text`` is what :func:`cut_middle` made with these ``head`` and ``tail``
    sizes: cutting it again would only shrink the kept parts and lose the count."""
    if text[head : head + 1] != "\n":
        return False
    note = OMISSION_NOTE_RE.match(text, head + 1)
    return (
        note is not None
        and text[note.end() : note.end() + 1] == "\n"
        and (len(text) - note.end() - 1 == tail)
    )
