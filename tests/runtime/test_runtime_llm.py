"""The real-model path end to end, scripted: extraction JSON with errors, update decisions
decided by the model, and the response cache (a repeat costs nothing).

The "model" is a scripted handler that answers by task and returns real litellm responses
(``litellm.completion(..., mock_response=...)``) for a priced model, so tokens and cost go
through litellm's price table exactly as they would with a provider.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import litellm
import pytest

from memctx import MemoryContext, MemoryContextConfig
from memctx.extraction.extract import extract_and_update
from memctx.llm.client import LLMClient, task_of
from memctx.store.knowledge import KnowledgeStore

pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")

MODEL = "anthropic/claude-sonnet-4-5"

FIRST = [
    {"role": "user", "content": "Let's use PostgreSQL instead of MySQL for the orders service."},
    {"role": "assistant", "content": "Done: orders now talks to PostgreSQL. Port set to 8080."},
]
LATER = [
    {"role": "user", "content": "Change of plan: the orders service uses SQLite from now on."},
    {"role": "assistant", "content": "Switched orders to SQLite."},
]

FACTS_1 = [
    {"type": "decision", "content": "Orders service uses PostgreSQL instead of MySQL"},
    {"type": "config", "content": "Orders API server listens on port 8080"},
]
FACTS_2 = [{"type": "decision", "content": "Orders service uses SQLite instead of PostgreSQL"}]


class ScriptedModel:
    """Answers like a model would, by task; the first extraction answer is broken JSON."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __call__(self, **kwargs: Any) -> Any:
        messages = kwargs["messages"]
        task = task_of(messages) or "?"
        self.calls[task] += 1
        text = json.dumps({"op": "NONE", "target": None})
        if task == "extract-knowledge":
            repair = messages[-1]["role"] == "user" and "could not be used" in str(
                messages[-1]["content"]
            )
            conversation = str(messages[1]["content"])
            if "SQLite" in conversation:
                text = json.dumps(FACTS_2)
            elif repair:
                text = json.dumps(FACTS_1)
            else:
                text = '[{"type": "decision", "content": "Orders service uses Postgre'  # torn
        elif task == "decide-update":
            body = str(messages[-1]["content"])
            if "SQLite" in body and "PostgreSQL instead of MySQL" in body:
                existing = [ln for ln in body.splitlines() if ln[:1].isdigit()]
                target = next(i for i, ln in enumerate(existing, 1) if "PostgreSQL" in ln)
                text = json.dumps({"op": "SUPERSEDE", "target": target})
            else:
                text = json.dumps({"op": "ADD", "target": None})
        return litellm.completion(model=MODEL, messages=messages, mock_response=text)


def test_extraction_repairs_json_decides_with_the_model_and_caches(tmp_path: Path) -> None:
    model = ScriptedModel()
    client = LLMClient(MODEL, cache_dir=tmp_path / "llm-cache", completion=model)
    assert not client.is_offline
    store = KnowledgeStore(tmp_path / "k1")

    first = extract_and_update(FIRST, store=store, client=client, session_id="s")
    assert first.repairs == 1 and first.parse_failures == 0
    assert first.added == 2
    assert model.calls["extract-knowledge"] == 2  # the torn answer, then the repaired one

    later = extract_and_update(LATER, store=store, client=client, session_id="s")
    assert later.superseded == 1, later.as_dict()
    assert model.calls["decide-update"] >= 1
    live = [f.content for f in store.live_facts()]
    assert "Orders service uses SQLite instead of PostgreSQL" in live
    assert "Orders service uses PostgreSQL instead of MySQL" not in live
    hits = store.search("orders service database PostgreSQL SQLite")
    assert all("instead of MySQL" not in f.content for f, _ in hits)  # superseded: hidden

    usage = client.usage()
    assert usage.cost_usd > 0 and usage.prompt_tokens > 0  # priced by litellm's table
    calls_before, cost_before = sum(model.calls.values()), usage.cost_usd

    # The same work again on a fresh store: every answer comes from the disk cache.
    again = extract_and_update(FIRST, store=KnowledgeStore(tmp_path / "k2"), client=client)
    assert again.added == 2 and again.repairs == 1
    assert sum(model.calls.values()) == calls_before  # the model was not called
    after = client.usage()
    assert after.cost_usd == cost_before  # a hit costs nothing...
    assert after.cache_hits >= 2 and after.saved_cost_usd > 0  # ...and says what it saved


def test_the_engine_uses_a_real_model_in_the_background(tmp_path: Path) -> None:
    model = ScriptedModel()
    client = LLMClient(MODEL, cache_dir=tmp_path / "llm-cache", completion=model)
    with MemoryContext(
        MemoryContextConfig(), store_dir=tmp_path, session_id="s", llm=client
    ) as mem:
        mem.on_before_compact(FIRST)
        mem.on_before_compact(LATER)
        assert mem.wait_idle(60)
        stats = mem.stats()
        assert stats["extraction"]["superseded"] == 1, stats["extraction"]
        assert stats["knowledge"]["live"] == 2 and stats["knowledge"]["superseded"] == 1
        assert stats["llm"]["cost_usd"] > 0
        question = [{"role": "user", "content": "which database does the orders service use?"}]
        block = mem.on_context(question)[0]["content"]
        knowledge = block[block.index("<knowledge>") : block.index("</knowledge>")]
        # The user worded the decision (the assistant's echo holds fewer of its words).
        assert "[decision, from user] Orders service uses SQLite" in knowledge
        assert "instead of MySQL" not in knowledge  # superseded facts are not recalled
