"""How one message's text becomes the pieces the archive stores: redacted whole, then cut.

Order matters for secrets. Chunking first and redacting each chunk misses what a chunk
boundary hides: the body lines of a private key after the chunk with its ``BEGIN`` line, or a
token cut in two by a split inside a long line. So the whole text is redacted first and the
redacted text is cut.

Cost is bounded per message. Indexing is linear in the text (a 20 MB tool output made
~20,000 chunks, 94 s and 918 MB in one hook), so a text over ``max_chars`` is archived as
its head and tail (``max_chars / 2`` each, cut at line breaks) with the note of
:func:`memctx.text.omission_note` between them, naming the file the middle is kept in whole
(:mod:`memctx.store.payloads`); the middle is redacted and written there later, off the
hook. The head and tail are redacted with a margin around their cut, so a secret that
straddles it is seen whole. (Not :func:`memctx.text.cut_middle` itself: these cuts move to
line breaks and around secrets, and the head and tail are redacted and chunked apart, the
note a piece of its own.)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from memctx.text import Redactor, chunk_text, omission_note

__all__ = ["MessagePieces", "message_pieces"]

# Redaction reads this much past a head/tail cut: more than a PEM block of a 4,096-bit key
# (~3.3 KB), which is the longest secret a rule matches whole.
_MARGIN = 16_384


@dataclass(frozen=True, slots=True)
class MessagePieces:
    """What to archive of one message.

    Attributes:
        chunks: Redacted pieces to store as segments, in text order.
        overflow: The unredacted middle that was not indexed (``None``: the whole text was).
        overflow_name: The name it is to be kept under (``tool-output/<name>.json``).
        overflow_lines: First and last line numbers (1-based) of the middle.
    """

    chunks: tuple[str, ...]
    overflow: str | None = None
    overflow_name: str = ""
    overflow_lines: tuple[int, int] = (0, 0)


def _redact(text: str, redactor: Redactor | None) -> str:
    return redactor.redact(text) if redactor is not None else text


def _line_end(text: str, at: int) -> int:
    brk = text.find("\n", at)
    return len(text) if brk < 0 else brk + 1


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _head(text: str, cut: int, redactor: Redactor | None) -> tuple[str, int]:
    """The redacted head up to ``cut``, moved to the end of the line of any secret the cut
    would split (found by redacting a margin past it), and where it now ends."""
    if redactor is None:
        return text[:cut], cut
    for hit in redactor.redact_with_report(text[: cut + _MARGIN]).hits:
        if hit.start < cut < hit.end:
            cut = _line_end(text, hit.end)
    return redactor.redact(text[:cut]), cut


def _tail(text: str, start: int, redactor: Redactor | None) -> tuple[str, int]:
    """The redacted tail from ``start``, moved back to the start of the line of any secret
    that began before it (a private key's ``BEGIN`` line within the margin)."""
    if redactor is None:
        return text[start:], start
    base = max(start - _MARGIN, 0)
    hits = redactor.redact_with_report(text[base:]).hits
    for hit in sorted(hits, key=lambda h: -h.start):
        if base + hit.start < start < base + hit.end:
            start = _line_start(text, base + hit.start)
    return redactor.redact(text[start:]), start


def message_pieces(
    text: str, *, redactor: Redactor | None, chunk_tokens: int, max_chars: int
) -> MessagePieces:
    """Redact ``text``, bound it to about ``max_chars`` of indexed text, and chunk it.

    Args:
        text: The message's archived text (:func:`memctx.runtime.archive_keys.archive_text`).
        redactor: Masks secrets (``None``: redaction is off).
        chunk_tokens: Chunk size (0: one piece).
        max_chars: Characters indexed at most (plus a line and a secret at each cut); a
            longer text keeps its head and tail and puts the middle aside. The middle is at
            least a quarter of ``max_chars`` (a text less than 1.5x over is indexed whole),
            so the kept file is never a short, guessable text.
    """
    if len(text) <= max_chars * 3 // 2:
        return MessagePieces(tuple(_chunks(_redact(text, redactor), chunk_tokens)))
    half = max_chars // 2
    head, head_end = _head(text, _line_start(text, half) or half, redactor)
    tail, tail_start = _tail(text, _line_end(text, len(text) - half), redactor)
    if tail_start < head_end:  # a secret straddled both cuts (only with a tiny max_chars)
        tail, tail_start = _redact(text[head_end:], redactor), head_end
    middle = text[head_end:tail_start]
    first = text.count("\n", 0, head_end) + 1
    last = first + middle.count("\n")
    name = hashlib.sha256(middle.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    note = omission_note(len(middle), kept_in=f"tool-output/{name}.json")
    chunks = [*_chunks(head, chunk_tokens), note, *_chunks(tail, chunk_tokens)]
    return MessagePieces(tuple(c for c in chunks if c.strip()), middle, name, (first, last))


def _chunks(text: str, chunk_tokens: int) -> list[str]:
    return chunk_text(text, chunk_tokens) if chunk_tokens else [text]
