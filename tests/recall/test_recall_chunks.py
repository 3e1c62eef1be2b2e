"""Chunk-aware recall through the context hook: a long tool output is archived in chunks,
and a chunk that answers the question is recalled even when another chunk of the same
output scores better; the output's chunks are shown as one item, labelled once."""

from __future__ import annotations

from pathlib import Path

from memctx import MemoryContextConfig
from memctx.messages import message_text
from memctx.recall import parse_recall_block
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext

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
    history = [
        {"role": "user", "content": "run the whole suite"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "mix test"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": LOG}],
        },
        *({"role": "user", "content": text} for text in OTHERS),
    ]
    config = MemoryContextConfig(knowledge_extraction=False, hard_cap_tokens=2_000)
    with MemoryContext(
        config,
        store_dir=tmp_path,
        session_id="s1",
        context_window_tokens=200_000,
        embedder=HashEmbedder(),
    ) as mem:
        mem.on_before_compact(history)
        assert mem.wait_idle(60)
        out = mem.on_context(
            [
                {
                    "role": "user",
                    "content": "How many failures did the mix test run of the suite have?",
                }
            ]
        )
    blocks = [message_text(m) for m in out if "<recalled-context" in message_text(m)]
    assert len(blocks) == 1
    entries = [e for e in parse_recall_block(blocks[0]) if e.kind == "detail"]
    logs = [e for e in entries if e.label == "tool bash"]
    assert len(logs) == 1, [e.label for e in entries]  # one item for the output
    assert "297 tests, 11 failures" in logs[0].text
    # Each line of the output is shown at most once (the chunks' overlap is not repeated).
    lines = [line for line in logs[0].text.split("\n") if line != "…"]
    assert len(lines) == len(set(lines))
