"""Cutting text under a token budget, at line breaks where it can.

One rule decides where a piece ends (:func:`split_text`): the longest run of whole lines that
fits the budget (``estimate_tokens``: at most ``3 x budget`` characters), or, when one line
alone is longer, a cut inside that line. Two cutters use it:

- :func:`split_text` cuts one text into consecutive pieces without losing a character
  (extraction uses it for a conversation entry larger than a prompt's budget).
- :func:`chunk_lines` / :func:`chunk_text` make overlapping chunks for indexes: consecutive
  chunks share a few whole lines so that a fact near a boundary is whole in one of them, and
  a single line longer than a chunk is cut into pieces that all carry its line number. Seed
  003 chunks memory files at ~400 tokens with 80 of overlap; memctx uses the same sizes for
  tool outputs and other long messages it archives, because one vector or one BM25 document
  for a 5,000-token log dilutes the one line a later question is about (and
  all-MiniLM-L6-v2 reads only its first 256 word pieces).
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

__all__ = [
    "CHUNK_OVERLAP_TOKENS",
    "CHUNK_TOKENS",
    "chunk_lines",
    "chunk_text",
    "split_lines",
    "split_text",
]

CHUNK_TOKENS = 400
CHUNK_OVERLAP_TOKENS = 80
_CHARS_PER_TOKEN = 3  # estimate_tokens = ceil(len / 3): a char budget is an exact token budget


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: split on ``\\n`` only, a final newline ends the last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _piece_end(text: str, start: int, max_chars: int) -> int:
    """Where the piece of ``text`` that begins at ``start`` ends (exclusive).

    The end of ``text`` when the rest fits ``max_chars``; else the last line break within
    reach (the piece stops before it: the longest run of whole lines that fits); else, when
    the line at ``start`` alone is longer than ``max_chars``, ``start + max_chars``.
    """
    if len(text) - start <= max_chars:
        return len(text)
    brk = text.rfind("\n", start, start + max_chars + 1)
    return brk if brk >= 0 else start + max_chars


def split_text(text: str, max_tokens: int) -> list[str]:
    """``text`` cut into consecutive pieces of at most ``max_tokens`` each, at line breaks.

    Each piece is the longest run of whole lines, from where the previous piece ended, that
    fits the budget. Only a line longer than the budget is cut inside: every
    ``3 x max_tokens`` characters, its last piece going on with the lines after it. Nothing
    is lost: where a piece ends at a line break, the break is what separates it from the next
    (rejoin with ``"\\n"``), and where it ends inside a line, the next piece goes on with that
    line (rejoin with nothing); a blank line at a cut stays in a piece (an empty piece when it
    is alone). ``[text]`` when ``text`` fits.

    Raises:
        ValueError: ``max_tokens`` is below 1.
    """
    if max_tokens < 1:
        raise ValueError(f"a piece must hold at least 1 token, got max_tokens={max_tokens}")
    max_chars = max_tokens * _CHARS_PER_TOKEN
    pieces: list[str] = []
    start = 0
    while True:
        end = _piece_end(text, start, max_chars)
        pieces.append(text[start:end])
        if end == len(text):
            return pieces
        # A cut inside a line never lands on a line break (the break would have been in reach).
        start = end + 1 if text[end] == "\n" else end


def chunk_lines(
    lines: list[str],
    max_tokens: int = CHUNK_TOKENS,
    overlap_tokens: int = CHUNK_OVERLAP_TOKENS,
) -> list[tuple[int, int, str]]:
    """Cut lines into ``(start_line, end_line, text)`` chunks (see the module docstring).

    ``lines`` hold no line breaks (as :func:`split_lines` gives them). Every chunk's
    ``estimate_tokens(text) <= max_tokens``, overlap included; every line is in at least one
    chunk.
    """
    max_chars = max_tokens * _CHARS_PER_TOKEN
    overlap_chars = overlap_tokens * _CHARS_PER_TOKEN
    text = "\n".join(lines)
    cost = [len(line) + 1 for line in lines]  # the line and its joining newline
    starts = list(accumulate(cost, initial=0))  # where each line begins in ``text``
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(lines)
    while i < n:
        if cost[i] - 1 > max_chars:  # one oversized line: pieces sharing its line number
            out += [(i + 1, i + 1, piece) for piece in split_text(lines[i], max_tokens)]
            i += 1
            continue
        end = _piece_end(text, starts[i], max_chars)
        j = bisect_right(starts, end)  # lines i .. j-1 end at or before ``end``
        out.append((i + 1, j, text[starts[i] : end]))
        if j >= n:
            break
        # Step back over whole trailing lines for the overlap, leaving room for line j and
        # always moving forward by at least one line.
        k, shared = j, 0
        while (
            k - 1 > i
            and shared + cost[k - 1] <= overlap_chars
            and shared + cost[k - 1] + cost[j] - 1 <= max_chars
        ):
            k -= 1
            shared += cost[k]
        i = k
    return out


def chunk_text(text: str, max_tokens: int = CHUNK_TOKENS) -> list[str]:
    """``text`` whole when it fits ``max_tokens`` (or ``max_tokens`` is 0), else its chunks.

    The overlap is a fifth of the budget (seed 003's 80 of 400). Every line of ``text`` is in
    at least one chunk and every chunk fits the budget.
    """
    if max_tokens <= 0 or len(text) <= max_tokens * _CHARS_PER_TOKEN:
        return [text]
    chunks = chunk_lines(split_lines(text), max_tokens, max_tokens // 5)
    return [chunk for _, _, chunk in chunks if chunk.strip()] or [text]
