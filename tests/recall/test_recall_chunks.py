"""Chunk-aware recall through the context hook: a long tool output is archived in chunks,
and a chunk that answers the question is recalled even when another chunk of the same
output scores better; the output's chunks are shown as one item, labelled once."""

from __future__ import annotations

from pathlib import Path

from memctx.recall import parse_recall_block
from tests.helpers.tool_output_recall import recall_after_tool_output

# A test run's output: the command and the suite's module names up front, the verdict at
# the end, far enough apart to land in different chunks.
LOG = "\n".join(
    [
        "$ mix test --cover",
        *(f"Compiling lib/spotter/module_{n}.ex (mix test dependency)" for n in range(60)),
        *(f"test/spotter/module_{n}_test.exs ....  [module {n}]" for n in range(60)),
        "Finished in 4.2 seconds (0.9s async, 3.3s sync)",
        "297 tests, 11 failures",
    ]
)
OTHERS = [
    "The orders queue listens on port 8743.",
    "We deploy the billing service to Fly.io in the Frankfurt region.",
    "Invoices live in PostgreSQL 15; the replica accepts no writes.",
    "Customer emails are sent through Postmark, never SES.",
]


def test_the_chunk_holding_the_answer_is_recalled_with_its_message_label_once(
    tmp_path: Path,
) -> None:
    blocks = recall_after_tool_output(
        tmp_path, LOG, OTHERS, "How many failures did the mix test run of the suite have?"
    )
    assert len(blocks) == 1
    entries = [e for e in parse_recall_block(blocks[0]) if e.kind == "detail"]
    logs = [e for e in entries if e.label == "tool bash"]
    assert len(logs) == 1, [e.label for e in entries]  # one item for the output
    assert "297 tests, 11 failures" in logs[0].text
    # Each line of the output is shown at most once (the chunks' overlap is not repeated).
    lines = [line for line in logs[0].text.split("\n") if line != "…"]
    assert len(lines) == len(set(lines))
