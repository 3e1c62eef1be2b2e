"""Recall only when it helps: in an agent loop whose latest user text is filler ("Done with
turn 0.", "[tool call] read_file", "ok"), an archive of unrelated facts yields no
``<recalled-context`` block, while a real question about an archived fact still gets one.

``autoRecallMinBestScore`` (the default measured in the config's field docs) is what
separates them: the tests below also show that without it (0.0) the filler turns do get a
block, and that it holds with either embedder.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.embedders import loaded_transformer

from memctx import MemoryContextConfig
from memctx.messages import is_recalled_block, message_text
from memctx.retrieval import Embedder, HashEmbedder
from memctx.runtime import MemoryContext

FACTS = (
    "The orders queue listens on port 8743.",
    "We deploy the billing service to Fly.io in the Frankfurt region.",
    "Invoices live in PostgreSQL 15; the replica accepts no writes.",
    "Stripe webhooks are verified with the signing secret from the vault.",
    "The mobile app pins TLS certificates for api.example.com.",
    "Grafana alerts page the duty engineer after five minutes.",
    "Customer emails are sent through Postmark, never SES.",
    "The search cluster runs OpenSearch 2.11 with three shards.",
    "Feature flags are stored in LaunchDarkly under the project acme-web.",
    "Nightly backups are copied to a bucket in eu-west-1 and kept thirty days.",
    "The CSV export caps each sheet at fifty thousand rows.",
    "Password resets expire after twenty minutes.",
)
QUESTION = "Which port does the orders queue listen on?"
FILLER = ("Done with turn 0.", "[tool call] read_file", "ok", "Done with turn 3.", "continue")


@pytest.fixture(scope="module", params=["hash", "transformer"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    return HashEmbedder() if request.param == "hash" else loaded_transformer()


def _engine(tmp_path: Path, embedder: Embedder, **settings: Any) -> MemoryContext:
    kind = "hash" if embedder.name == "hash" else "transformer"
    config = MemoryContextConfig(embedding_model=kind, **settings)
    mem = MemoryContext(
        config,
        store_dir=tmp_path / "store",
        session_id="s1",
        context_window_tokens=200_000,
        embedder=embedder,
    )
    mem.on_before_compact([{"role": "user", "content": fact} for fact in FACTS])
    assert mem.wait_idle(120)
    return mem


def _agent_loop(filler: str, turns: int = 4) -> Iterator[list[dict[str, Any]]]:
    """The history an agent sends on each of ``turns`` calls: a tool call and its result,
    then the user's filler (the latest user text each time)."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for turn in range(turns):
        call = f"call_{turn}"
        fn = {"name": "read_file", "arguments": '{"path": "src/app.py"}'}
        history += [
            {"role": "user", "content": filler},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call, "type": "function", "function": fn}],
            },
            {"role": "tool", "tool_call_id": call, "content": "def main():\n    return 0\n"},
            {"role": "assistant", "content": f"Done with turn {turn}."},
        ]
        yield [*history, {"role": "user", "content": filler}]


def _block(messages: list[dict[str, Any]]) -> str | None:
    return next((message_text(m) for m in messages if is_recalled_block(m)), None)


@pytest.mark.parametrize("filler", FILLER)
def test_filler_turns_get_no_block_and_a_real_question_does(
    tmp_path: Path, embedder: Embedder, filler: str
) -> None:
    with _engine(tmp_path, embedder) as mem:
        for sent in _agent_loop(filler):
            out = mem.on_context(sent)
            assert _block(out) is None, (filler, _block(out))
            record = mem.last_call
            assert record is not None and not record.recall_inserted
            assert record.recall in ("no_match", "no_query") and record.recall_tokens == 0
            assert record.best_score < record.min_best_score
            assert out == sent
        asked = [
            *sent,
            {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": QUESTION},
        ]
        block = _block(mem.on_context(asked))
        record = mem.last_call
    assert block is not None and "port 8743" in block
    assert record is not None and record.recall_inserted and record.recall_tokens > 0
    assert record.best_score >= record.min_best_score > 0
    assert all(item.score >= record.min_score for item in record.recalled if item.kind == "detail")


def test_without_a_minimum_score_the_filler_gets_a_block(
    tmp_path: Path, embedder: Embedder
) -> None:
    """What the default prevents: with no bar every candidate passes, relevant or not."""
    with _engine(tmp_path, embedder, auto_recall_min_best_score=0.0) as mem:
        out = mem.on_context(next(_agent_loop("Done with turn 0.")))
        assert _block(out) is not None
        assert mem.last_call is not None and mem.last_call.recall_inserted


def test_the_bar_is_on_the_best_candidate_by_default() -> None:
    config = MemoryContextConfig()
    assert (config.auto_recall_min_best_score, config.auto_recall_min_score) == (0.2, 0.0)
    assert (
        MemoryContextConfig.from_dict({"autoRecallMinBestScore": 0.3}).auto_recall_min_best_score
        == 0.3
    )
    assert MemoryContextConfig.seed_preset().auto_recall_min_score == 0.7


def test_a_matching_fact_justifies_a_block_on_its_own(tmp_path: Path) -> None:
    """Facts have their own bar (the knowledge store's keyword match): with no archived
    message able to clear the detail bar, a question a fact answers still gets a block."""
    with _engine(tmp_path, HashEmbedder(), auto_recall_min_best_score=1.0) as mem:
        assert mem.stats()["knowledge"]["live"] >= 1  # the offline extractor kept the port
        out = mem.on_context([{"role": "user", "content": QUESTION}])
        record = mem.last_call
        assert _block(mem.on_context([{"role": "user", "content": "Done with turn 0."}])) is None
    block = _block(out)
    assert block is not None and "<knowledge>" in block and "8743" in block
    assert record is not None and record.best_score < 1.0
    assert any(item.source == "knowledge" for item in record.recalled)


def test_the_bar_is_on_the_best_candidate_not_on_each(tmp_path: Path) -> None:
    """Once the best message justifies a block, lower-ranked ones fill it too (an answer
    may sit in one): only ``autoRecallMinScore`` (0.0 by default) bars each message."""
    day, now = 86_400.0, time.time()
    # Each fact a day apart: an episode of its own, so no fact lifts another's score.
    batch = [
        {"role": "user", "content": fact, "timestamp": now - (len(FACTS) - i) * day}
        for i, fact in enumerate(FACTS)
    ]
    config = MemoryContextConfig(knowledge_extraction=False)
    with MemoryContext(
        config, store_dir=tmp_path / "store", session_id="s1", context_window_tokens=200_000
    ) as mem:
        mem.on_before_compact(batch)
        assert mem.wait_idle(60)
        out = mem.on_context([{"role": "user", "content": QUESTION}])
        record = mem.last_call
    block = _block(out)
    assert block is not None and "port 8743" in block
    assert record is not None and record.best_score >= record.min_best_score
    low = [r for r in record.recalled if r.kind == "detail" and r.score < record.min_best_score]
    assert low and all(r.preview in " ".join(block.split()) for r in low)
