"""MemoryContext: the context hook, the compaction hook, failure isolation, the registry."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx import MemoryContextConfig, load_config
from memctx.errors import StoreError
from memctx.messages import recalled_block_text
from memctx.messages.markers import is_recalled_block
from memctx.messages.pairing import pairing_violations
from memctx.messages.tokens import estimate_messages_tokens
from memctx.retrieval.embeddings import HashEmbedder
from memctx.runtime.engine import MemoryContext
from memctx.store import RawStore
from tests.strategies import examples

DAY = 86_400.0
WINDOW = 20_000  # cap = min(4000, 2000) = 2000; safe limit = 20000 - 4000 - 2000 = 14000


def cfg(**kw: Any) -> MemoryContextConfig:
    return MemoryContextConfig(**kw)


def engine(tmp_path: Path, **kw: Any) -> MemoryContext:
    config = kw.pop("config", cfg())
    return MemoryContext(
        config, store_dir=tmp_path / "store", session_id="s1", context_window_tokens=WINDOW, **kw
    )


def filler(i: int, size: int = 3000) -> dict[str, Any]:
    words = ["lorem", "ipsum", "dolor", "amet", "tempor", "magna", "aliqua"]
    text = " ".join(words[(i + j) % len(words)] for j in range(size // 6))
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}: {text}"}


def long_session(
    n: int = 40, question: str = "now run the linter over the tests folder"
) -> list[dict[str, Any]]:
    """A system prompt, one early decision, filler, and a last request unrelated to it."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    msgs.append(
        {"role": "user", "content": "Decision: the payment webhook lives in src/pay/hook.py"}
    )
    msgs.append({"role": "assistant", "content": "Understood, webhook in src/pay/hook.py."})
    msgs += [filler(i) for i in range(n)]
    msgs.append({"role": "user", "content": question})
    return msgs


def ask_later(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent continues from what it sent, then asks about the trimmed decision."""
    return [
        *out,
        {"role": "assistant", "content": "Linter is clean."},
        {"role": "user", "content": "where does the payment webhook live?"},
    ]


def test_small_context_passes_through_without_a_block(tmp_path: Path) -> None:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello there"}]
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        assert out == msgs and all(a is b for a, b in zip(out, msgs, strict=True))
        assert mem.stats()["counts"] == {"on_context": 1}


def test_trimmed_messages_are_archived_and_recalled_later(tmp_path: Path) -> None:
    msgs = long_session()
    assert estimate_messages_tokens(msgs) > 14_000
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        assert estimate_messages_tokens(out) <= WINDOW - 4000
        assert not pairing_violations(out)
        assert msgs[1] not in out and out[-1] is msgs[-1] and out[0] is msgs[0]
        stats = mem.stats()
        assert stats["counts"]["trims"] == 1 and stats["archive"]["archived"] > 0
        segments = (tmp_path / "store" / "segments.jsonl").read_text()
        assert "src/pay/hook.py" in segments
        later = mem.on_context(ask_later(out))
        blocks = [m for m in later if is_recalled_block(m)]
        assert len(blocks) == 1 and "src/pay/hook.py" in blocks[0]["content"]
        # Right before the latest request (the default placement): the prefix stays cached.
        assert later[0] is msgs[0] and later[-2] is blocks[0] and later[-1]["role"] == "user"
        assert estimate_messages_tokens(blocks) <= mem.recall_cap
        assert estimate_messages_tokens(later) <= WINDOW - 4000


def test_archived_messages_still_in_the_context_are_never_recalled(tmp_path: Path) -> None:
    # The engine keeps the store keys of what it archived and leaves the segments of the
    # messages it sends out of the search. Those keys must still name the same segments
    # after another process rewrote the store without an older segment (a reload in which
    # every later segment moves up in the file).
    store_dir = tmp_path / "store"
    first = RawStore(store_dir, embedder=HashEmbedder())
    first.add("s1", "user", "an older note about the logo colours", timestamp=time.time() - DAY)
    first.close()
    msgs = long_session()
    decision = msgs[1:3]  # the decision and its acknowledgement
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        assert not any(m in out for m in decision)  # trimmed, so archived

        def recalled(context: list[dict[str, Any]]) -> str:
            blocks = [m["content"] for m in mem.on_context(context) if is_recalled_block(m)]
            return "".join(blocks)

        question = {"role": "user", "content": "where does the payment webhook live?"}
        assert "src/pay/hook.py" in recalled([msgs[0], question])
        # The same question with the decision in the context: nothing to recall about it.
        assert "src/pay/hook.py" not in recalled([msgs[0], *decision, question])
        live = mem.stats()["raw_store"]["segments"]
        other = RawStore(store_dir, embedder=HashEmbedder(), max_segments=live)
        other.add("s1", "user", "the payment webhook retries live in src/pay/retry.py")
        other.compact()  # the older note evicted, the files rewritten: the engine reloads
        other.close()
        shown = recalled([msgs[0], *decision, question])
        assert "src/pay/hook.py" not in shown and "src/pay/retry.py" in shown
        assert "src/pay/hook.py" in recalled([msgs[0], question])
        assert mem.stats()["counts"].get("recall_failures", 0) == 0


def test_relevant_messages_survive_the_trim(tmp_path: Path) -> None:
    msgs = long_session(question="where does the payment webhook live?")
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        assert msgs[1] in out and len(out) < len(msgs)


def test_on_context_is_idempotent(tmp_path: Path) -> None:
    with engine(tmp_path) as mem:
        out = mem.on_context(long_session())
        again = mem.on_context(out)
        assert again == out


def test_old_recalled_blocks_are_replaced_and_never_archived(tmp_path: Path) -> None:
    stale = {"role": "user", "content": recalled_block_text("OLD SECRET")}
    msgs = long_session()
    msgs.insert(1, stale)
    with engine(tmp_path) as mem:
        out = mem.on_context(msgs)
        assert stale not in out
        mem.on_before_compact(msgs)
        mem.wait_idle(30)
        store = tmp_path / "store" / "segments.jsonl"
        assert "OLD SECRET" not in store.read_text()


def test_short_query_skips_trim_below_the_window_but_not_above(tmp_path: Path) -> None:
    def session(n: int) -> list[dict[str, Any]]:
        notes = [{"role": "assistant", "content": filler(i)["content"]} for i in range(n)]
        return [{"role": "system", "content": "sys"}, *notes, {"role": "user", "content": "ok"}]

    msgs = session(15)  # over the safe limit (14,000), under window - reserve (16,000)
    assert 14_000 < estimate_messages_tokens(msgs) < WINDOW - 4000
    with engine(tmp_path) as mem:
        assert mem.on_context(msgs) == msgs  # "ok" is no query: no trim, no recall
        big = session(25)  # over the window itself: sending it would fail, so trim anyway
        assert estimate_messages_tokens(big) > WINDOW
        out = mem.on_context(big)
        assert estimate_messages_tokens(out) <= WINDOW - 4000
        assert out[0] is big[0] and out[-1] is big[-1]
        assert not any(is_recalled_block(m) for m in out)


def test_compaction_hook_archives_and_extracts_knowledge(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "content": "We decided to use PostgreSQL instead of MySQL for orders."},
        {"role": "assistant", "content": "OK: switching the orders service to PostgreSQL."},
        {"role": "user", "content": "The API server port is 8080."},
    ]
    with engine(tmp_path) as mem:
        assert mem.on_before_compact(msgs) is None
        assert mem.wait_idle(60)
        stats = mem.stats()
        assert stats["archive"]["archived"] == 3
        assert stats["worker"]["done"].get("extraction") == 1
        assert stats["worker"]["failed"] == {}
        hits = mem.memory_search("which database for orders", limit=3)
        assert hits and "PostgreSQL" in hits[0]["content"]
        assert set(hits[0]) == {"content", "score", "session_id", "turn"}


def test_memory_search_ranks_with_the_engines_own_settings(tmp_path: Path) -> None:
    """The tool ranks as the engine's recall does: its speakerPrior (and weights) apply."""
    chat = [
        {
            "role": "user" if i % 2 else "assistant",
            "name": "Caroline" if i % 2 else "Melanie",
            "content": f"the trip number {i} to the lake was {'great' if i % 3 else 'long'}",
        }
        for i in range(24)
    ]

    def scores(prior: float) -> dict[str, tuple[str, float]]:
        config = MemoryContextConfig(knowledge_extraction=False, speaker_prior=prior)
        store = tmp_path / f"prior-{prior}"
        with MemoryContext(
            config,
            store_dir=store,
            session_id="s1",
            context_window_tokens=WINDOW,
            embedder=HashEmbedder(),
        ) as mem:
            mem.on_before_compact(chat)
            assert mem.wait_idle(60)
            hits = mem.memory_search("how was the trip to the lake, Melanie?", limit=20)
        by_text = {m["content"]: m["name"] for m in chat}
        return {h["content"]: (by_text[h["content"]], h["score"]) for h in hits}

    # Two weights of the prior (both leave the names out of the query's vector): Caroline's
    # messages keep 0.4 of their score where they kept 0.7; Melanie's (the speaker the
    # question names) keep all of it either way.
    mild, strong = scores(0.3), scores(0.6)
    shared = mild.keys() & strong.keys()
    assert {mild[t][0] for t in shared} == {"Caroline", "Melanie"}
    for text in shared:
        ratio = 0.4 / 0.7 if mild[text][0] == "Caroline" else 1.0
        assert strong[text][1] == pytest.approx(mild[text][1] * ratio, abs=2e-6)


@pytest.mark.parametrize(
    "bad",
    [None, "text", 42, [1, 2], [{"role": "user", "content": "x"}, None], {"role": "user"}],
)
def test_hooks_never_raise_on_malformed_input(tmp_path: Path, bad: Any) -> None:
    with engine(tmp_path) as mem:
        out = mem.on_context(bad)
        counts = mem.stats()["counts"]
        if isinstance(bad, list):  # what is not a message is dropped and counted, no failure
            skipped = sum(not isinstance(m, dict) for m in bad)
            assert out == [m for m in bad if isinstance(m, dict)]
            assert counts["bad_messages_skipped"] == skipped
            assert "on_context_failures" not in counts
        else:  # not a list at all: the caller's error, handed back
            assert out is bad
            assert counts["on_context_failures"] == 1
            assert "TypeError" in mem.stats()["last_error"]
        assert mem.on_before_compact(bad) is None
        counts = mem.stats()["counts"]
        if isinstance(bad, list):  # a batch: what is not a message is skipped, the rest kept
            skipped = sum(not isinstance(m, dict) for m in bad)
            assert counts["bad_messages_skipped"] == 2 * skipped
            assert "on_before_compact_failures" not in counts
        else:
            assert counts["on_before_compact_failures"] == 1


def test_an_internal_failure_returns_the_input_and_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memctx.runtime.engine as runtime

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("index exploded")

    monkeypatch.setattr(runtime, "trim_read", broken)
    msgs = long_session()
    with engine(tmp_path) as mem:
        assert mem.on_context(msgs) is msgs
        assert mem.stats()["counts"]["on_context_failures"] == 1
        assert "index exploded" in mem.stats()["last_error"]


def test_disabled_config_passes_everything_through(tmp_path: Path) -> None:
    msgs = long_session()
    with engine(tmp_path, config=MemoryContextConfig(enabled=False)) as mem:
        assert mem.on_context(msgs) is msgs
        mem.on_before_compact(msgs)
    assert not (tmp_path / "store" / "segments.jsonl").exists()


def test_disabled_engine_warns_once_and_stats_say_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    msgs = long_session()
    with (
        caplog.at_level("WARNING", logger="memctx"),
        engine(tmp_path, config=MemoryContextConfig(enabled=False)) as mem,
    ):
        for _ in range(3):
            assert mem.on_context(msgs) is msgs
            mem.on_before_compact(msgs)
        stats = mem.stats()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert "disabled by enabled=false" in warnings[0]
    assert "set enabled=true" in warnings[0]
    assert stats["enabled"] is False


def test_a_config_that_never_mentions_enabled_is_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file setting only hardCapTokens gives a working engine, without the warning."""
    file = tmp_path / "my.toml"
    file.write_text("hardCapTokens = 1500\n", encoding="utf-8")
    msgs = long_session(question="where does the payment webhook live?")
    with (
        caplog.at_level("WARNING", logger="memctx"),
        engine(tmp_path, config=load_config(file)) as mem,
    ):
        out = mem.on_context(msgs)
        stats = mem.stats()
    assert stats["enabled"] is True
    assert stats["recall_cap"] == 1500
    assert estimate_messages_tokens(out) < estimate_messages_tokens(msgs)  # trimmed
    assert not [r for r in caplog.records if "disabled" in r.getMessage()]


@pytest.mark.parametrize("placement", ["after-system", "before-request", "end"])
def test_the_block_goes_where_recall_placement_says(tmp_path: Path, placement: str) -> None:
    summary = {
        "role": "user",
        "content": "This session is being continued from a previous conversation. Summary: ...",
        "isCompactSummary": True,
    }
    msgs = long_session()
    msgs.insert(1, summary)
    # The query has nothing to do with the archive: without the relevance bar every call
    # still gets a block, and this test is about where it goes.
    config = cfg(recallPlacement=placement, autoRecallMinBestScore=0.0)
    with engine(tmp_path, config=config) as mem:
        out = mem.on_context(msgs)
        again = mem.on_context(out)
    at = [i for i, m in enumerate(out) if is_recalled_block(m)]
    expected = {"after-system": 2, "before-request": len(out) - 2, "end": len(out) - 1}
    assert at == [expected[placement]]
    if placement == "after-system":  # the seed's place: after the system prompt and summary
        assert out[1] is summary
    if placement == "before-request":
        assert out[-1] is msgs[-1] and out[-1]["role"] == "user"
    assert again == out  # the hook is idempotent wherever the block sits
    assert pairing_violations(out) == []


def test_invalid_session_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="session"):
        MemoryContext(cfg(), store_dir=tmp_path, session_id="../escape")
    with pytest.raises(ValueError, match="context_window_tokens"):
        MemoryContext(cfg(), store_dir=tmp_path, session_id="ok", context_window_tokens=0)


def test_for_session_shares_one_engine_until_closed(tmp_path: Path) -> None:
    a = MemoryContext.for_session(cfg(), store_dir=tmp_path, session_id="shared")
    b = MemoryContext.for_session(None, store_dir=tmp_path / ".", session_id="shared")
    c = MemoryContext.for_session(cfg(), store_dir=tmp_path, session_id="other")
    assert a is b and a is not c
    a.close()
    d = MemoryContext.for_session(cfg(), store_dir=tmp_path, session_id="shared")
    assert d is not a
    d.close()
    c.close()


class SlowEmbedder:
    """A transformer stand-in: expensive (not ``hash``), blocks until released."""

    name, dim, version = "slow-test", 64, "1"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.inner = HashEmbedder(64)

    def embed(self, texts: Any) -> np.ndarray:
        if len(texts) > 1:  # archiving batches wait; single query embeds do not
            self.gate.wait(30)
        return self.inner.embed(texts)


def test_expensive_embedder_archives_in_background_but_recalls_at_once(
    tmp_path: Path,
) -> None:
    slow = SlowEmbedder()
    with engine(tmp_path, embedder=slow) as mem:
        out = mem.on_context(long_session())
        assert mem.stats()["pending_segments"] > 0  # the worker is stuck in embed()
        later = mem.on_context(ask_later(out))
        blocks = [m for m in later if is_recalled_block(m)]
        assert blocks and "src/pay/hook.py" in blocks[0]["content"]
        slow.gate.set()
        assert mem.wait_idle(30)
        assert mem.stats()["pending_segments"] == 0
        assert mem.stats()["archive"]["archived"] > 0
        again = mem.on_context(ask_later(out))  # now found through the store itself
        assert "src/pay/hook.py" in next(m for m in again if is_recalled_block(m))["content"]


def test_concurrent_hooks_from_threads_do_not_break(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    mem = engine(tmp_path)

    def run(k: int) -> None:
        try:
            for j in range(5):
                msgs = long_session(n=30 + k + j)
                out = mem.on_context(msgs)
                assert not pairing_violations(out)
                mem.on_before_compact(msgs[:5])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    mem.wait_idle(60)
    counts = mem.stats()["counts"]
    mem.close()
    assert not errors
    assert counts["on_context"] == 20 and counts["on_before_compact"] == 20
    assert "on_context_failures" not in counts


def test_store_compaction_runs_on_the_worker_never_in_the_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memctx.store import RawStore

    threads: list[str] = []
    original = RawStore._compact

    def spy(self: RawStore) -> None:
        threads.append(threading.current_thread().name)
        original(self)

    monkeypatch.setattr(RawStore, "_compact", spy)
    history = long_session(n=10)
    with engine(tmp_path, config=cfg(max_segments=20)) as mem:
        for i in range(10, 130, 2):  # old messages fall out, get archived, then evicted
            history = [*history[:-1], filler(i), filler(i + 1), history[-1]]
            mem.on_context(history)
        assert mem.wait_idle(30)
        store = mem.stats()["raw_store"]
        counts = mem.stats()["counts"]
    assert counts["trims"] >= 50 and "on_context_failures" not in counts
    assert store["segments"] == 20 and store["compactions"] >= 1
    assert store["dead_lines"] <= 64 + 20  # compacted, as often as an add would have
    assert threads and set(threads) == {"memctx-s1"}  # the worker's thread, not the hook's


def test_turns_of_archived_messages_are_their_positions_in_the_input(tmp_path: Path) -> None:
    msgs = long_session()
    recalled = {"role": "user", "content": recalled_block_text("old")}
    with_block = [msgs[0], recalled, *msgs[1:]]
    with engine(tmp_path) as mem:
        mem.on_context(with_block)
        turns = {s.content: s.turn for s in mem._archive.raw.segments()}
    assert turns  # something was trimmed and archived
    for i, m in enumerate(with_block):
        if m["content"] in turns:
            assert turns[m["content"]] == i


def test_key_set_answers_for_arrays_of_keys() -> None:
    from memctx.runtime.archive_keys import KeySet

    keys = KeySet()
    assert not keys.has(np.array([0, 5, 10**6], dtype=np.int64)).any()
    keys.add([])
    keys.add([3, 5000])  # grows past its first size
    found = keys.has(np.array([3, 4, 5000, 5001, 10**7], dtype=np.int64))
    assert found.tolist() == [True, False, True, False, False]


@settings(max_examples=examples(100))
@given(
    st.lists(st.tuples(st.integers(0, 3000), st.lists(st.integers(0, 10**6), max_size=4))),
    st.lists(st.integers(0, 5000), max_size=40),
)
def test_segment_keys_answer_like_a_dict_of_tuples(
    sets: list[tuple[int, list[int]]], probe: list[int]
) -> None:
    from memctx.runtime.archive_keys import SegmentKeys

    index, model = SegmentKeys(), {}
    for key, store_keys in sets:  # grows past its first sizes; a key set again: the latest
        index.set(key, store_keys)
        model[key] = store_keys
    want = [k for key in probe for k in model.get(key, [])]
    assert index.of(np.array(probe, dtype=np.int64)).tolist() == want


def test_a_broken_pair_is_repaired_when_nothing_could_be_trimmed(tmp_path: Path) -> None:
    # Over the window less the reserve (within the window itself), but every message is
    # protected: smart trim returns early, before its own repair, so the hook must still
    # repair the unanswered call.
    call = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    msgs = [
        {"role": "user"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "assistant", "content": "done"},
        {"role": "assistant", "content": "done again"},
    ]
    with MemoryContext(
        cfg(knowledge_extraction=False, reserve_tokens=1),
        store_dir=tmp_path / "store",
        session_id="s1",
        context_window_tokens=estimate_messages_tokens(msgs),
    ) as mem:
        out = mem.on_context(msgs)
        assert estimate_messages_tokens(msgs) > mem.window - mem.config.reserve_tokens
        assert pairing_violations(out) == [] and out == [msgs[0], *msgs[2:]]
        assert mem.stats()["counts"]["pairing_repairs"] == 1
        assert mem.on_context(out) == out


def _log_session(needle_at: int) -> list[dict[str, Any]]:
    """A tool call whose 6,000-token log has one line that matters, then filler."""
    lines = [f"INFO  GET /api/orders/{i} 200 in {i % 97}ms" for i in range(600)]
    lines[needle_at] = "DEBUG deps: payment signature verifier backend=quillon-hmac"
    call = {"id": "call_log", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    msgs.append({"role": "user", "content": "tail the service log please"})
    msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
    msgs.append({"role": "tool", "tool_call_id": "call_log", "content": "\n".join(lines)})
    msgs += [filler(i) for i in range(30)]
    # A later tool span: the last one is protected from trimming, this log must not be.
    late = {**call, "id": "call_ls"}
    msgs.append({"role": "assistant", "content": None, "tool_calls": [late]})
    msgs.append({"role": "tool", "tool_call_id": "call_ls", "content": "src tests docs"})
    msgs.append({"role": "user", "content": "now run the linter over the tests folder"})
    return msgs


@pytest.mark.parametrize("embedder", [None, "slow"])
def test_a_long_tool_output_is_archived_in_chunks_and_the_relevant_one_recalled(
    tmp_path: Path, embedder: str | None
) -> None:
    msgs = _log_session(needle_at=430)
    slow = SlowEmbedder() if embedder else None
    with engine(tmp_path, embedder=slow) as mem:
        out = mem.on_context(msgs)
        assert msgs[3] not in out  # the log was trimmed
        question = {"role": "user", "content": "which payment signature verifier backend?"}
        later = mem.on_context([*out, {"role": "assistant", "content": "Clean."}, question])
        (block,) = [m["content"] for m in later if is_recalled_block(m)]
        # The chunk holding line 430 is recalled, not the log's head (a head cut of the
        # whole output would show line 0 and miss the needle).
        assert "backend=quillon-hmac" in block and "/api/orders/0 " not in block
        assert estimate_messages_tokens([later[1]]) <= mem.recall_cap
        if slow is not None:
            slow.gate.set()
        assert mem.wait_idle(30)
        stored = (tmp_path / "store" / "segments.jsonl").read_text().splitlines()
        log_parts = [line for line in stored if "/api/orders/" in line]
        assert len(log_parts) >= 10  # ~6,000 tokens in chunks of at most 400
        assert any("quillon-hmac" in line for line in log_parts)


def test_chunking_off_archives_the_log_whole(tmp_path: Path) -> None:
    with engine(tmp_path, config=cfg(archive_chunk_tokens=0)) as mem:
        mem.on_context(_log_session(needle_at=430))
        assert mem.wait_idle(30)
        stored = (tmp_path / "store" / "segments.jsonl").read_text().splitlines()
        assert len([line for line in stored if "/api/orders/" in line]) == 1


class RacingEmbedder:
    """Deterministic vectors; either the store writes (batches) or the queries are slow."""

    name, dim, version = "racing-test", 64, "1"

    def __init__(self, slow_writes: bool) -> None:
        self.inner = HashEmbedder(64)
        self.slow_writes = slow_writes

    def embed(self, texts: Any) -> np.ndarray:
        import time

        if (len(texts) > 1) == self.slow_writes:
            time.sleep(0.02)
        return self.inner.embed(texts)


def test_what_a_call_recalls_does_not_depend_on_the_workers_timing(tmp_path: Path) -> None:
    # Background writes start only after the call that queued them, so the call's own search
    # finds this turn's messages in the pending overlay whether the worker is fast (writes
    # done while the query embeds) or slow. Between calls the worker's progress does matter;
    # the harness waits for it there, and so does this test.
    def play(slow_writes: bool) -> list[str]:
        blocks = []
        clock = lambda: 1_767_225_600.0  # noqa: E731 (a fixed time: labels must not differ)
        embedder = RacingEmbedder(slow_writes)
        with engine(tmp_path / f"slow-{slow_writes}", embedder=embedder, clock=clock) as mem:
            history = long_session(n=30)
            for i in range(8):
                ask = "where does the payment webhook live?" if i % 2 else f"lint folder {i}"
                # The agent goes on from what it sent (as it would after a trim).
                out = mem.on_context([*history, {"role": "user", "content": ask}])
                blocks.append("\n".join(m["content"] for m in out if is_recalled_block(m)))
                history = [*out, filler(100 + i)]
                assert mem.wait_idle(30)
        return blocks

    fast = play(slow_writes=False)
    assert any("src/pay/hook.py" in b for b in fast)
    assert play(slow_writes=True) == fast


def test_a_block_of_short_turns_is_filled_until_no_detail_of_its_size_fits(
    tmp_path: Path,
) -> None:
    # 600 chat turns of about 60 tokens that all match the question: the first 32 candidates
    # fill 93 % of the cap, with room for two more. The search must go on until the room
    # left is smaller than a typical detail (a fixed "90 % full" rule stopped there).
    animals = ["cats", "dogs", "birds", "fish", "horses", "goats"]
    turns = [
        {
            "role": "user" if i % 2 else "assistant",
            "content": f"Day {i}: we talked about pets, {animals[i % len(animals)]} mostly, "
            f"for {i % 7 + 1} minutes, " + " ".join(f"w{(i * 7 + j) % 97}" for j in range(28)),
        }
        for i in range(600)
    ]
    config = cfg(knowledgeExtraction=False)
    with engine(tmp_path, config=config) as mem:
        mem.on_before_compact(turns)
        assert mem.wait_idle(60)
        out = mem.on_context([{"role": "user", "content": "what did we say about pets?"}])
        (block,) = [m for m in out if is_recalled_block(m)]
        details = [
            line
            for line in block["content"].split("\n")
            if line.startswith(("user: ", "assistant: "))
        ]
        room = mem.recall_cap - estimate_messages_tokens([block])
        sizes = sorted(estimate_messages_tokens([{"role": "user", "content": d}]) for d in details)
        assert room < sizes[len(sizes) // 2], (room, sizes[len(sizes) // 2], len(details))


def _tool_call(k: int, output: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": f"c{k}", "content": output},
    ]


@pytest.mark.parametrize("huge", [1, 3])
def test_tool_outputs_larger_than_the_window_are_cut_in_the_copy_sent(
    tmp_path: Path, huge: int
) -> None:
    # The newest tool calls are protected from trimming; outputs of ~40K tokens each
    # (twice the window) would make every call fail. They are cut to head and tail in the
    # context sent, tighter when several together still do not fit.
    logs = [
        f"build step {k}\n" + "compiling module\n" * 7_000 + f"FAILED: test_{k}\n"
        for k in range(huge)
    ]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    messages.append({"role": "user", "content": "run the whole build and show every log"})
    for k, log in enumerate(logs):
        messages += _tool_call(k, log)
    before = [dict(m) for m in messages]
    with engine(tmp_path) as mem:
        out = mem.on_context(messages)
        counts = mem.stats()["counts"]
    assert messages == before  # the agent's own list keeps the outputs whole
    assert estimate_messages_tokens(out) <= WINDOW - cfg().reserve_tokens
    assert pairing_violations(out) == []
    assert counts["tool_results_cut"] == huge and counts.get("over_window", 0) == 0
    sent = [m["content"] for m in out if m.get("role") == "tool"]
    assert len(sent) == huge
    for k, text in enumerate(sent):  # head and tail survive: what failed prints last
        assert text.startswith(f"build step {k}") and text.rstrip().endswith(f"FAILED: test_{k}")
