"""Excerpts of long tool outputs in the recall block: the lines that hold the question's
words, with their context, runs marked by the block's own gap marker; short outputs, outputs
with no such line, and prose shown whole."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.recall import parse_recall_block
from memctx.recall.excerpt import MIN_LINES, query_excerpt
from memctx.retrieval import query_weights
from tests.helpers.tool_output_recall import recall_after_tool_output

LOG = "\n".join(
    [f"INFO  GET /api/items/{n} 200 in {n % 90}ms" for n in range(40)]
    + ["INFO  review requested on #3863"]
    + [f"WARN  POST /api/carts/{n} 404 in {n % 70}ms" for n in range(40)]
)


def _weights(query: str) -> dict[frozenset[str], float]:
    """Every word of ``query`` weighing 1 (its stemmed and its surface form)."""
    return query_weights(query, lambda _token: 1.0)


def test_the_line_holding_the_question_is_kept_with_its_neighbours() -> None:
    runs = query_excerpt(LOG, _weights("which PR has a review requested?"))
    assert runs is not None and len(runs) == 1
    lines = runs[0].split("\n")
    assert lines == [
        "INFO  GET /api/items/39 200 in 39ms",
        "INFO  review requested on #3863",
        "WARN  POST /api/carts/0 404 in 0ms",
    ]


def test_separate_hits_make_separate_runs_in_order() -> None:
    text = "\n".join(
        ["retry_limit: 3"] + [f"filler_{n}: {n}" for n in range(30)] + ["retry_delay: 250ms"]
    )
    runs = query_excerpt(text, _weights("retry delay limit"))
    assert runs == ("retry_limit: 3\nfiller_0: 0", "filler_29: 29\nretry_delay: 250ms")


def test_whole_when_short_unmatched_or_mostly_kept() -> None:
    short = "\n".join(f"port: {n}" for n in range(MIN_LINES - 1))
    assert query_excerpt(short, _weights("port")) is None
    assert query_excerpt(LOG, _weights("kubernetes")) is None  # found by its vector
    assert query_excerpt(LOG, {}) is None
    # Every line holds the question's words equally: six of them are no excerpt of the
    # output, but they are all the lines there is a reason to show first.
    runs = query_excerpt(LOG, _weights("items carts api"))
    assert runs is not None and runs[0].startswith("INFO  GET /api/items/0 ")


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from(["alpha beta", "gamma", "", "beta delta", "eps"]), max_size=40),
    st.sets(st.sampled_from(["alpha", "beta", "gamma", "delta"]), max_size=3),
)
def test_an_excerpt_is_runs_of_the_texts_own_lines_in_order(
    lines: list[str], words: set[str]
) -> None:
    text = "\n".join(lines)
    runs = query_excerpt(text, {frozenset([w]): 1.0 for w in words})
    if runs is None:
        return
    position = 0
    for run in runs:
        at = text.find(run, position)
        assert at >= 0 and (at == 0 or text[at - 1] == "\n")
        position = at + len(run)
    assert sum(run.count("\n") + 1 for run in runs) < len(lines)


def test_the_hook_shows_the_excerpt_and_parses_back(tmp_path: Path) -> None:
    blocks = recall_after_tool_output(
        tmp_path,
        LOG,
        ["We deploy the billing service to Fly.io."],
        "Which PR has a review requested?",
    )
    assert len(blocks) == 1
    logs = [e for e in parse_recall_block(blocks[0]) if e.label == "tool bash"]
    assert len(logs) == 1
    assert "review requested on #3863" in logs[0].text
    # The chunk holding it is shown as the lines about it: the item has a gap where its
    # other lines were, and fewer lines than the output.
    assert "…" in logs[0].text.split("\n")
    assert len(logs[0].text.split("\n")) < len(LOG.split("\n"))
