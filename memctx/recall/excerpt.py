"""The lines of a long tool output that a question is about, for the recall block.

A recalled chunk of a tool output is up to 400 tokens of lines, and what made it relevant
is usually one or two of them (``review requested on #3863`` in a request log, ``api_port:
9052`` among a hundred settings). Shown whole, six such chunks fill a 2,400-token block;
shown as the lines that hold the query's words with one line of context around each, the
same block holds several times as many, so a fact ranked tenth is shown too.

:func:`query_excerpt` picks those lines: each line's weight is the IDF of the query's words
it holds; the best :data:`MOST_LINES` lines weighing at least half the best line's are
kept, each with :data:`CONTEXT_LINES` around it. The excerpt is the runs of kept lines in
their order, which the block shows with its own gap marker between them (a marker archived
text cannot forge). A text is shown whole when it is short (under :data:`MIN_LINES` lines),
when no line holds a query word (the vector search found it: there is no telling which line
matters), or when the excerpt would keep most of it anyway.
"""

from __future__ import annotations

from memctx.retrieval import QueryTerms, line_weights

__all__ = ["CONTEXT_LINES", "MIN_LINES", "MOST_LINES", "query_excerpt"]

MIN_LINES = 12  # shorter texts are shown whole: an excerpt would save little
MOST_LINES = 6  # lines that hold the query's words, at most
CONTEXT_LINES = 1  # shown before and after each (a setting's section, a log line's cause)
_KEEP_SHARE = 0.5  # of the best line's weight, for another line to be kept
_WHOLE_SHARE = 0.6  # an excerpt keeping more of the lines than this: the text is shown whole


def query_excerpt(text: str, weights: QueryTerms) -> tuple[str, ...] | None:
    """The runs of lines of ``text`` that hold the query's words (``weights``:
    :func:`memctx.retrieval.query_weights`), with their context; ``None`` when the text is
    to be shown whole."""
    if not weights:
        return None
    lines = text.split("\n")
    if len(lines) < MIN_LINES:
        return None
    scored = [(w, i) for i, w in enumerate(line_weights(text, weights)) if w > 0.0]
    if not scored:
        return None
    best = max(weight for weight, _ in scored)
    top = sorted(scored, key=lambda s: (-s[0], s[1]))[:MOST_LINES]
    kept = sorted(
        {
            j
            for weight, i in top
            if weight >= _KEEP_SHARE * best
            for j in range(max(0, i - CONTEXT_LINES), min(len(lines), i + CONTEXT_LINES + 1))
        }
    )
    if len(kept) > _WHOLE_SHARE * len(lines):
        return None
    runs: list[str] = []
    start = previous = kept[0]
    for j in kept[1:]:
        if j != previous + 1:
            runs.append("\n".join(lines[start : previous + 1]))
            start = j
        previous = j
    runs.append("\n".join(lines[start : previous + 1]))
    return tuple(runs)
