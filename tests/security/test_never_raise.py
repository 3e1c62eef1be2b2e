"""Issue 26, item 5: never raise, never pass through invalid.

Each test reproduces one attack of the issue as written: a lone surrogate that lost a whole
extraction batch, a ``None`` among the messages that made ``on_context`` hand back 48,290
tokens for a 32,000 window, a depth bomb that raised out of ``call_memory_tool``,
``read_output_ref`` of ``None`` / bytes, and a malformed ref that waited for background work.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

from memctx import MemoryContext, MemoryContextConfig
from memctx.errors import MemctxError, StoreError
from memctx.llm.cache import CachedResponse, ResponseCache
from memctx.messages import TokenCounter
from memctx.runtime import call_memory_tool
from memctx.store import FactType, KnowledgeStore, NewFact
from memctx.text import Redactor

_FACTS = [
    "We decided to use PostgreSQL 16 for the zebrafish orders service.",
    "The zebrafish API listens on port 7443 in staging.",
    "We chose Redis for the session cache layer of zebrafish.",
    "Bug: the zebrafish importer crashes on empty CSV files, fix pending.",
    "We decided to deploy zebrafish with blue-green releases.",
    "The zebrafish build uses Python 3.12 and uv.",
]


def _engine(tmp_path: Path, window: int = 32_000, **config: Any) -> MemoryContext:
    cfg = MemoryContextConfig(**config)
    return MemoryContext(cfg, store_dir=tmp_path, session_id="s", context_window_tokens=window)


def _facts_of(store: Path, messages: list[dict[str, Any]]) -> list[str]:
    with _engine(store) as mem:
        mem.on_before_compact(messages)
        assert mem.wait_idle(60)
        assert not mem.stats()["worker"]["failed"]
    return [f.content for f in KnowledgeStore(store, redactor=Redactor()).live_facts()]


def test_one_lone_surrogate_costs_at_most_its_own_message(tmp_path: Path) -> None:
    # The batch of 7: the seventh holds "\ud83d"; all six other facts were lost.
    clean = _facts_of(tmp_path / "clean", [{"role": "user", "content": f} for f in _FACTS])
    bad = "We decided to use Kafka \ud83d for the zebrafish event bus."
    messages = [{"role": "user", "content": f} for f in [*_FACTS, bad]]
    facts = _facts_of(tmp_path / "bad", messages)
    assert len(clean) >= 4
    assert set(clean) <= set(facts)
    assert not any("\ud83d" in f for f in facts)
    (tmp_path / "bad" / "knowledge.jsonl").read_bytes().decode("utf-8")  # valid UTF-8


_SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])


@given(text=st.tuples(st.text(max_size=30), _SURROGATES, st.text(max_size=30)).map("".join))
@settings(max_examples=examples(40), deadline=None)
def test_the_response_cache_keeps_any_text(tmp_path_factory: Any, text: str) -> None:
    # Surrogates anywhere in a response: written, read back as they were (or, never, lost).
    cache = ResponseCache(tmp_path_factory.mktemp("cache"))
    key = "a" * 64
    entry = CachedResponse(text, "m", 1, 2, 0.0, False, "extract-knowledge")
    if cache.put(key, entry):  # not stored only when the text holds a secret
        assert cache.get(key) == entry


def test_a_fact_with_a_surrogate_is_stored(tmp_path: Path) -> None:
    store = KnowledgeStore(tmp_path, redactor=Redactor())
    fact = NewFact(FactType.DECISION, "use kafka \ud83d now", "said \udc00", None, ())
    _, written = store.ingest(fact)
    assert written is not None
    again = KnowledgeStore(tmp_path, redactor=Redactor()).live_facts()
    assert [f.content for f in again] == ["use kafka \ufffd now"]


def _session(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        out.append({"role": "user", "content": f"question {i} about module_{i}.py " + "x " * 300})
        out.append({"role": "assistant", "content": f"edited module_{i}.py " + "y " * 300})
    out.append({"role": "user", "content": "what did we change in module_3.py?"})
    return out


@pytest.mark.parametrize("junk", [None, 7, "a string", ["a", "list"], object(), 1.5])
def test_a_non_message_among_the_messages_is_dropped_and_the_output_fits(
    tmp_path: Path, junk: object
) -> None:
    messages: list[Any] = _session(240)
    messages.insert(5, junk)
    counter = TokenCounter()
    assert sum(counter.count_message(m) for m in messages if isinstance(m, dict)) > 32_000
    with _engine(tmp_path) as mem:
        out = mem.on_context(messages)
        stats = mem.stats()
    assert all(isinstance(m, dict) for m in out)
    assert sum(counter.count_message(m) for m in out) <= 32_000 - mem.config.reserve_tokens
    assert stats["counts"]["bad_messages_skipped"] == 1
    assert not stats["counts"].get("on_context_failures")


_BOMBS = [
    "[" * 100_000 + "]" * 100_000,
    '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"query": "' + "zebrafish " * 2_000_000 + '"}',
    "{" * 50_000,
    '{"query": 12345678901234567890123456789}',
    '{"query": null, "limit": 10000000000000000000000}',
    '{"ref": [1, 2]}',
    "\ud83d",
    "",
    "null",
]


@pytest.mark.parametrize("tool", ["memory_search", "read_output_ref", "nope"])
@pytest.mark.parametrize("arguments", _BOMBS, ids=range(len(_BOMBS)))
def test_memory_tools_answer_every_input_with_text(
    tmp_path: Path, tool: str, arguments: str
) -> None:
    with _engine(tmp_path) as mem:
        answer = call_memory_tool(mem, tool, arguments)
    assert isinstance(answer, str)
    assert len(answer) < 2_000  # an error names the problem; it does not echo the input


@pytest.mark.parametrize("arguments", [None, 5, b"{}", ["query"], {"query": {"deep": []}}])
def test_memory_tools_answer_wrong_argument_types(tmp_path: Path, arguments: Any) -> None:
    with _engine(tmp_path) as mem:
        for tool in ("memory_search", "read_output_ref", None, 3):
            assert call_memory_tool(mem, tool, arguments).startswith("error:")  # type: ignore[arg-type]


@pytest.mark.parametrize("ref", [None, b"tool-output/ab.json", 12, ["x"], 1.5])
def test_read_output_ref_refuses_wrong_types_with_store_error(tmp_path: Path, ref: Any) -> None:
    with _engine(tmp_path) as mem, pytest.raises(StoreError, match="string"):
        mem.read_output_ref(ref)


class _HeldModel:
    """An extraction model that answers only once released: the worker stays busy."""

    is_offline = True

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()

    def complete(
        self, messages: list[dict[str, Any]], *, task: str, max_tokens: int | None = None
    ) -> Any:
        self.started.set()
        self.release.wait(30)
        raise MemctxError("no answer")


def test_a_malformed_ref_is_refused_without_waiting_for_background_work(tmp_path: Path) -> None:
    model = _HeldModel()
    # Released from another thread only later: a refusal that waited for the worker would
    # find it idle afterwards.
    timer = threading.Timer(5.0, model.release.set)
    cfg = MemoryContextConfig()
    with MemoryContext(cfg, store_dir=tmp_path, session_id="s", llm=model) as mem:
        mem.on_before_compact([{"role": "user", "content": _FACTS[0]}])
        assert model.started.wait(30)
        timer.start()
        try:
            for ref in ("../../etc/passwd", "tool-output/zz.json", "x" * 10_000):
                with pytest.raises(StoreError):
                    mem.read_output_ref(ref)
                assert mem.stats()["worker"]["pending"] >= 1
            # A well-formed ref nobody queued is refused at once too.
            with pytest.raises(StoreError):
                mem.read_output_ref("tool-output/" + "ab" * 16 + ".json")
            assert mem.stats()["worker"]["pending"] >= 1
        finally:
            model.release.set()
            timer.cancel()


def test_a_queued_ref_is_still_waited_for(tmp_path: Path) -> None:
    # The wait that stays: a note's ref read before the busy worker wrote its file.
    model = _HeldModel()
    big = "\n".join(f"line {i} of the zebrafish build log" for i in range(20_000))
    cfg = MemoryContextConfig(archive_max_message_chars=4096)
    with MemoryContext(cfg, store_dir=tmp_path, session_id="s", llm=model) as mem:
        mem.on_before_compact([{"role": "user", "content": _FACTS[0]}])
        assert model.started.wait(30)
        mem.on_before_compact([{"role": "user", "content": big}])  # its middle queued behind
        refs = [
            w.strip(",.]")
            for h in mem.memory_search("characters omitted kept", 20)
            for w in h["content"].split()
            if w.startswith("tool-output/")
        ]
        assert refs
        assert not (tmp_path / refs[0]).exists()
        threading.Timer(0.5, model.release.set).start()
        assert "line 10000 of" in mem.read_output_ref(refs[0])
