"""Cutting long text into line-aligned chunks: memory files and long archived messages.

A chunk holds whole lines up to a token budget (``estimate_tokens``: at most ``3 x budget``
characters); consecutive chunks share a few whole lines so that a fact near a boundary is
whole in one of them; a single line longer than a chunk is cut into pieces that all carry
its line number. Seed 003 chunks memory files at ~400 tokens with 80 of overlap; memctx uses
the same sizes for tool outputs and other long messages it archives, because one vector or
one BM25 document for a 5,000-token log dilutes the one line a later question is about (and
all-MiniLM-L6-v2 reads only its first 256 word pieces).
"""

from __future__ import annotations

__all__ = ["CHUNK_OVERLAP_TOKENS", "CHUNK_TOKENS", "chunk_lines", "chunk_text", "split_lines"]

CHUNK_TOKENS = 400
CHUNK_OVERLAP_TOKENS = 80
_CHARS_PER_TOKEN = 3  # estimate_tokens = ceil(len / 3): a char budget is an exact token budget


def split_lines(text: str) -> list[str]:
    """Lines as editors number them: split on ``\\n`` only, a final newline ends the last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def chunk_lines(
    lines: list[str],
    max_tokens: int = CHUNK_TOKENS,
    overlap_tokens: int = CHUNK_OVERLAP_TOKENS,
) -> list[tuple[int, int, str]]:
    """Cut lines into ``(start_line, end_line, text)`` chunks (see the module docstring).

    Every chunk's ``estimate_tokens(text) <= max_tokens``, overlap included; every line is in
    at least one chunk.
    """
    max_chars = max_tokens * _CHARS_PER_TOKEN
    overlap_chars = overlap_tokens * _CHARS_PER_TOKEN
    cost = [len(line) + 1 for line in lines]  # the line and its joining newline
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(lines)
    while i < n:
        if cost[i] - 1 > max_chars:  # one oversized line: pieces sharing its line number
            line = lines[i]
            out += [(i + 1, i + 1, line[k : k + max_chars]) for k in range(0, len(line), max_chars)]
            i += 1
            continue
        j, size = i, 0
        while j < n and size + cost[j] - 1 <= max_chars:
            size += cost[j]
            j += 1
        out.append((i + 1, j, "\n".join(lines[i:j])))
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
