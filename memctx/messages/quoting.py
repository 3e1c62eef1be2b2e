"""Archived text as data inside memctx's own markup: the one encoding, the one line prefix.

memctx puts archived text back into prompts it frames itself (the ``<recalled-context>``
block, the extraction prompt's ``[role]`` entries). Whoever wrote that text (a web page a
tool fetched, a file the agent read, a CI log) must not be able to speak as memctx's
framing: close the block, open another section, forge a day header, a gap marker or a
speaker. Two rules, both cheap for code and reversible:

- **Nothing reads as markup.** :func:`quote_text` encodes every ``<`` as ``&lt;``, and every
  character a model could take for one, as ``&#xHEX;``: the fullwidth ``＜``, the small
  ``﹤``, ``‹``, the angle brackets ``〈 〈 ⟨ ❬ ❮ ❰ ⧼``, the modifier ``˂`` and the Canadian
  syllabic ``ᐸ``. With no opening bracket left, no case or spacing variant of a tag
  (``< /Recalled-Context >``) can appear either. ``&`` is encoded as ``&amp;`` only where
  it precedes ``lt;``, ``amp;`` or ``#x`` (where it would otherwise read as one of these
  encodings), so ``a && b`` in a shell line stays as it was. :func:`unquote_text` is the
  exact inverse: ``unquote_text(quote_text(s)) == s`` for every string.
- **No line of quoted text starts where memctx's lines start.** Every line of a quoted text
  after its first is prefixed with :data:`CONTINUATION` (two spaces); memctx's own lines
  (items, headers, gap markers, tags) never start with a space, so a line inside archived
  text can never be read as one of them. Every kind of line break a reader may honour
  (``\\r``, ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``, ``\\u2029``) counts as
  one: :func:`normalize_breaks` turns them into ``\\n`` first, so none can start a line
  the prefix did not mark.

:func:`safe_label` makes a speaker's or a tool's name a label: one line, letters, digits and
a little punctuation (no ``:``, ``[``, ``]``, ``<``), bounded in length.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

__all__ = [
    "CONTINUATION",
    "LABEL_MAX_CHARS",
    "indent_continuation",
    "normalize_breaks",
    "quote_text",
    "safe_label",
    "unquote_text",
]

CONTINUATION: Final = "  "
LABEL_MAX_CHARS: Final = 40

# Characters a model may read as the "<" opening a tag.
_LOOKALIKES: Final = "＜﹤‹〈〈⟨❬❮❰⧼˂ᐸ"
_QUOTE_RE: Final = re.compile(f"[<{_LOOKALIKES}]|&(?=lt;|amp;|#x)")
_UNQUOTE_RE: Final = re.compile(r"&(?:lt|amp|#x([0-9A-F]{1,6}));")
_OTHER_BREAKS: Final = re.compile("\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_LABEL_DROP: Final = re.compile(r"[^\w .,'()+-]+")


def _quote_one(match: re.Match[str]) -> str:
    char = match.group(0)
    if char == "<":
        return "&lt;"
    if char == "&":
        return "&amp;"
    return f"&#x{ord(char):X};"


def _unquote_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code is not None:
        return chr(int(code, 16))
    return "<" if match.group(0) == "&lt;" else "&"


def quote_text(text: str) -> str:
    """``text`` with everything that could read as markup encoded (see the module doc)."""
    if "<" not in text and "&" not in text and text.isascii():
        return text  # the usual case: nothing to encode, no regex pass
    return _QUOTE_RE.sub(_quote_one, text)


def unquote_text(text: str) -> str:
    """The inverse of :func:`quote_text`."""
    return _UNQUOTE_RE.sub(_unquote_one, text) if "&" in text else text


def normalize_breaks(text: str) -> str:
    """``text`` with every line break a reader may honour written as ``\\n``."""
    if text.isascii() and not any(c in text for c in "\r\v\f\x1c\x1d\x1e"):
        return text
    return _OTHER_BREAKS.sub("\n", text)


def indent_continuation(text: str) -> str:
    """``text`` with :data:`CONTINUATION` before every line after the first (``text`` must
    have its line breaks normalised)."""
    return text.replace("\n", "\n" + CONTINUATION) if "\n" in text else text


@lru_cache(maxsize=4096)  # labels repeat: the same roles, names and tools on every item
def safe_label(name: str, default: str = "unknown") -> str:
    """``name`` as a label: letters, digits, spaces and ``.,'()+-`` only, one line,
    whitespace collapsed, at most :data:`LABEL_MAX_CHARS` characters, not starting with
    ``-``; ``default`` when nothing is left."""
    cleaned = " ".join(_LABEL_DROP.sub(" ", name).split())[:LABEL_MAX_CHARS].strip()
    cleaned = cleaned.lstrip("-").strip()
    return cleaned or default
