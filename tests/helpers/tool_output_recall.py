"""The recall blocks an agent gets after a bash tool output was archived: the set-up the
chunk-aware recall and excerpt tests share."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memctx import MemoryContextConfig
from memctx.messages import message_text
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext


def recall_after_tool_output(
    tmp_path: Path, output: str, others: Sequence[str], question: str
) -> list[str]:
    """Archive a request, a ``bash`` call returning ``output`` and the user messages
    ``others`` (hash embeddings, no extraction, a 2,000-token cap), then ask ``question``:
    the ``<recalled-context>`` texts of the context sent."""
    history = [
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "run"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}],
        },
        *({"role": "user", "content": text} for text in others),
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
        out = mem.on_context([{"role": "user", "content": question}])
    return [message_text(m) for m in out if "<recalled-context" in message_text(m)]
