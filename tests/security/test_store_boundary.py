"""Issue 26, item 2: the store is a boundary, and a damaged part disables only itself.

Attacks as the issue lists them: ``knowledge.jsonl``, ``llm-cache/`` or ``tool-output/``
planted as symlinks (memctx appended to whatever they pointed at), and one damaged file
(``knowledge.jsonl`` or ``segments.jsonl`` a directory) turning off every recall block. The
property tests plant a link (or a hard link) at any store path memctx opens or creates and
check that nothing outside the store changes and the refusal is counted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

from memctx import MemoryContextConfig
from memctx.compaction import FlushTracker, SessionSummary, sidecar_path
from memctx.config import PlannerConfig
from memctx.errors import StoreError
from memctx.llm.cache import CachedResponse, ResponseCache
from memctx.messages import recalled_block_text
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext
from memctx.store import KnowledgeStore, MemoryFiles, RawStore, read_output_ref, write_output_ref
from memctx.store.files import StoreFileError, refused_paths
from memctx.store.knowledge_rules import FactType, NewFact

KEY = "ab" * 32
NOW = dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC).timestamp()


def _outside(tmp_path: Path) -> tuple[Path, Path]:
    """A victim folder with a victim file (a stand-in for ``~/.bashrc``), outside the store."""
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir(exist_ok=True)
    victim = victim_dir / "bashrc"
    victim.write_text("export PATH=$HOME/bin:$PATH\n")
    return victim_dir, victim


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


def _fact(text: str) -> NewFact:
    return NewFact(FactType.DECISION, text, "said by user")


def _cached() -> CachedResponse:
    return CachedResponse("an answer", "model", 10, 2, 0.0, True, "extract")


# -- the attacks as written ---------------------------------------------------------------------


def test_a_knowledge_file_symlinked_to_bashrc_is_refused_and_bashrc_is_untouched(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _, victim = _outside(tmp_path)
    before = victim.read_bytes()
    (store / "knowledge.jsonl").symlink_to(victim)
    with pytest.raises(StoreFileError, match="symlink"):
        KnowledgeStore(store).ingest(_fact("We deploy zebrafish on Fridays"))
    assert victim.read_bytes() == before
    assert (store / "knowledge.jsonl").is_symlink()  # left as it was: never deleted
    assert refused_paths(store) >= 1


def test_a_knowledge_lock_symlinked_out_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _, victim = _outside(tmp_path)
    before = victim.read_bytes()
    (store / "knowledge.jsonl.lock").symlink_to(victim)
    with pytest.raises(StoreError):
        KnowledgeStore(store).ingest(_fact("We deploy zebrafish on Fridays"))
    assert victim.read_bytes() == before


def test_an_llm_cache_symlinked_out_is_never_written_through(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    victim_dir, _ = _outside(tmp_path)
    before = _snapshot(victim_dir)
    (store / "llm-cache").symlink_to(victim_dir, target_is_directory=True)
    cache = ResponseCache(store / "llm-cache")
    assert cache.put(KEY, _cached()) is False
    assert cache.get(KEY) is None
    assert _snapshot(victim_dir) == before
    assert refused_paths(store) >= 1


def test_an_llm_cache_subfolder_symlinked_out_is_never_written_through(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "llm-cache").mkdir(parents=True)
    victim_dir, _ = _outside(tmp_path)
    before = _snapshot(victim_dir)
    (store / "llm-cache" / KEY[:2]).symlink_to(victim_dir, target_is_directory=True)
    assert ResponseCache(store / "llm-cache").put(KEY, _cached()) is False
    assert _snapshot(victim_dir) == before


def test_a_tool_output_folder_symlinked_out_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    victim_dir, _ = _outside(tmp_path)
    before = _snapshot(victim_dir)
    (store / "tool-output").symlink_to(victim_dir, target_is_directory=True)
    with pytest.raises(StoreFileError, match="symlink"):
        write_output_ref(store, "c" * 32, "a long tool output", what="test")
    assert _snapshot(victim_dir) == before
    real = write_output_ref(tmp_path / "other", "c" * 32, "kept elsewhere", what="test")
    (victim_dir / "tool-output").symlink_to(tmp_path / "other" / "tool-output")
    with pytest.raises(StoreError, match="symlink"):
        read_output_ref(store, real.ref)  # reading through the link is refused too


def test_a_hard_link_to_a_file_outside_is_never_appended_to(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _, victim = _outside(tmp_path)
    before = victim.read_bytes()
    os.link(victim, store / "knowledge.jsonl")
    with pytest.raises(StoreFileError, match="hard links"):
        KnowledgeStore(store).ingest(_fact("We deploy zebrafish on Fridays"))
    assert victim.read_bytes() == before


def test_a_hard_linked_segments_file_is_never_appended_to(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    _, victim = _outside(tmp_path)
    victim.write_text("")
    os.link(victim, store / "segments.jsonl")
    with pytest.raises(StoreError, match="hard links"):
        RawStore(store, embedder=HashEmbedder(dim=64)).add("s1", "user", "zebrafish port 7443")
    assert victim.read_bytes() == b""


def test_memory_flush_state_and_sidecar_links_are_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    victim_dir, victim = _outside(tmp_path)
    before = _snapshot(victim_dir)
    (store / "flush").mkdir(parents=True)
    (store / "flush" / "s1").symlink_to(victim_dir, target_is_directory=True)
    tracker = FlushTracker(store / "flush" / "s1", store_dir=store)
    tracker.note_compaction(1000)
    assert tracker.problem is not None and "symlink" in tracker.problem
    (store / "sessions").mkdir()
    path = sidecar_path(store / "sessions" / "s1.jsonl")
    path.symlink_to(victim)
    summary = SessionSummary.open(path, PlannerConfig(), store_dir=store)
    summary.update([{"role": "user", "content": "zebrafish port is 7443"}])
    assert _snapshot(victim_dir) == before
    assert refused_paths(store) >= 2


def test_a_memory_folder_symlinked_out_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    victim_dir, _ = _outside(tmp_path)
    before = _snapshot(victim_dir)
    (workspace / "memory").symlink_to(victim_dir, target_is_directory=True)
    mem = MemoryFiles(workspace, embedder=HashEmbedder(dim=64), clock=lambda: NOW)
    with pytest.raises(StoreError, match="symlink"):
        mem.append_daily("zebrafish port is 7443")
    assert _snapshot(victim_dir) == before


# -- the class: any store path a link -----------------------------------------------------------

# Files memctx writes in place (appends): a hard link planted there must be refused. The
# others are replaced by a rename, which cannot write into a hard link's other name.
APPENDED = {"knowledge.jsonl", "segments.jsonl", "vectors.bin", "memory/2026-03-02.md"}

# Every file and folder the engine and its parts open or create under the store directory.
STORE_PATHS = [
    "knowledge.jsonl",
    "knowledge.jsonl.lock",
    "segments.jsonl",
    "segments.jsonl.lock",
    "vectors.bin",
    "vectors.meta.json",
    "llm-cache",
    f"llm-cache/{KEY[:2]}",
    f"llm-cache/{KEY[:2]}/{KEY[2:4]}",
    f"llm-cache/{KEY[:2]}/{KEY[2:4]}/{KEY}.json",
    "tool-output",
    f"tool-output/{'d' * 32}.json",
    "flush",
    "flush/s1",
    "flush/s1/memory-flush.json",
    "sessions",
    "sessions/s1.jsonl.summary.json",
    "memory",
    "memory/2026-03-02.md",
    "MEMORY.md",
]


def _touch_everything(store: Path) -> None:
    """Use every part that writes under ``store``, swallowing the refusals (which are the
    point): what matters is what happens outside."""
    attempts: list[Callable[[], object]] = [
        lambda: KnowledgeStore(store).ingest(_fact("We deploy zebrafish on Fridays")),
        lambda: RawStore(store, embedder=HashEmbedder(dim=64)).add("s1", "user", "port 7443"),
        lambda: ResponseCache(store / "llm-cache").put(KEY, _cached()),
        lambda: ResponseCache(store / "llm-cache").get(KEY),
        lambda: write_output_ref(store, "d" * 32, "a long tool output", what="test"),
        lambda: read_output_ref(store, f"tool-output/{'d' * 32}.json"),
        lambda: FlushTracker(store / "flush" / "s1", store_dir=store).note_compaction(10),
        lambda: SessionSummary.open(
            sidecar_path(store / "sessions" / "s1.jsonl"), PlannerConfig(), store_dir=store
        ).update([{"role": "user", "content": "zebrafish port is 7443"}]),
        lambda: MemoryFiles(store, embedder=HashEmbedder(dim=64), clock=lambda: NOW).append_daily(
            "zebrafish port is 7443"
        ),
        lambda: MemoryFiles(store, embedder=HashEmbedder(dim=64), clock=lambda: NOW).search(
            "zebrafish port"
        ),
    ]
    for attempt in attempts:
        with contextlib.suppress(StoreError, OSError, ValueError):
            attempt()


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    linked=st.sampled_from(STORE_PATHS),
    hard=st.booleans(),
    victim_is_dir=st.booleans(),
)
def test_any_store_path_planted_as_a_link_changes_nothing_outside(
    tmp_path_factory: pytest.TempPathFactory, linked: str, hard: bool, victim_is_dir: bool
) -> None:
    root = tmp_path_factory.mktemp("boundary")
    store = root / "store"
    victim_dir, victim = _outside(root)
    target = victim_dir if victim_is_dir else victim
    path = store / linked
    path.parent.mkdir(parents=True, exist_ok=True)
    if hard and not victim_is_dir:
        os.link(victim, path)
    else:
        path.symlink_to(target, target_is_directory=victim_is_dir)
    before = _snapshot(victim_dir)
    refused = refused_paths(store)
    _touch_everything(store)
    assert _snapshot(victim_dir) == before, f"{linked} led a write outside the store"
    if not hard or linked in APPENDED:
        assert refused_paths(store) > refused, f"{linked}: the refusal was not counted"


# -- a damaged part disables only itself --------------------------------------------------------

WINDOW = 8_000


def _engine(store: Path) -> MemoryContext:
    config = MemoryContextConfig(hardCapTokens=800, reserveTokens=800, knowledgeExtraction=True)
    return MemoryContext(
        config, store_dir=store, session_id="s1", context_window_tokens=WINDOW,
        embedder=HashEmbedder(),
    )  # fmt: skip


def _history() -> list[dict[str, Any]]:
    filler = " ".join(f"word{i}" for i in range(300))
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Decision: the zebrafish service listens on port 7443."},
        {"role": "assistant", "content": "Noted: zebrafish listens on port 7443."},
        *(
            {"role": "user" if i % 2 else "assistant", "content": f"{filler} step {i}"}
            for i in range(12)
        ),
    ]


def _seeded_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    with _engine(store) as mem:
        mem.on_before_compact(_history())
        assert mem.wait_idle(60)
    return store


def _recall(store: Path, *, search: bool = True) -> tuple[str, dict[str, Any]]:
    question = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Which port does the zebrafish service listen on?"},
    ]
    with _engine(store) as mem:
        out = mem.on_context(question)
        hits = mem.memory_search("zebrafish port 7443") if search else []
        stats = mem.stats()
    block = "".join(recalled_block_text(m) or "" for m in out if isinstance(m.get("content"), str))
    stats["hits"] = hits
    return block, stats


def _break(path: Path, how: str) -> None:
    if path.exists():
        path.rename(path.with_name(path.name + ".moved"))
    if how == "directory":
        path.mkdir()
    elif how == "symlink":
        path.symlink_to(path.with_name(path.name + ".moved"))
    else:  # unreadable: a FIFO never has content
        os.mkfifo(path)


@pytest.mark.parametrize("how", ["directory", "symlink", "fifo"])
def test_a_broken_knowledge_store_leaves_raw_recall_working(tmp_path: Path, how: str) -> None:
    store = _seeded_store(tmp_path)
    _break(store / "knowledge.jsonl", how)
    block, stats = _recall(store)
    assert "7443" in block, "no recall block although the raw store is intact"
    assert stats["counts"].get("knowledge_unavailable", 0) >= 1
    assert stats["counts"].get("raw_store_unavailable", 0) == 0
    assert any("7443" in hit["content"] for hit in stats["hits"])
    assert stats["store_paths_refused"] >= (how == "symlink")


@pytest.mark.parametrize("how", ["directory", "symlink", "fifo"])
def test_a_broken_raw_store_leaves_knowledge_recall_working(tmp_path: Path, how: str) -> None:
    store = _seeded_store(tmp_path)
    assert (store / "knowledge.jsonl").stat().st_size > 0, "the seeding extracted no fact"
    _break(store / "segments.jsonl", how)
    block, stats = _recall(store, search=False)  # memory_search reads the raw store only
    assert "7443" in block, "no recall block although the knowledge store is intact"
    assert stats["counts"].get("raw_store_unavailable", 0) >= 1
    assert stats["counts"].get("knowledge_unavailable", 0) == 0


def test_the_planner_never_writes_through_a_symlinked_sessions_folder(tmp_path: Path) -> None:
    """The planner keeps payloads and the sidecar under ``<store>/sessions``: a link planted
    there is refused like one at the top of the store (the walk starts at the store)."""
    from helpers.eval_sessions import session, strategy_setup

    from memctx.strategies.planner import PlannerStrategy

    victim_dir, _ = _outside(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    (store / "sessions").symlink_to(victim_dir, target_is_directory=True)
    before = _snapshot(victim_dir)
    strategy = PlannerStrategy(strategy_setup(store, window=200_000))
    strategy.start_session("s1")
    messages = session("s1", 4, tool_words=50)
    log = "".join(f"compile unit {j}: ok\n" for j in range(3_000))
    messages[1 + 4 * 2 + 2] = {**messages[1 + 4 * 2 + 2], "content": log}
    transcript: list[dict[str, Any]] = []
    for message in messages:
        if transcript and message["role"] == "assistant":
            strategy.prepare(transcript)
        transcript.append(message)
    assert _snapshot(victim_dir) == before
    assert strategy.counts["payload_refs"] == 0 and strategy.counts["payload_write_failures"] >= 1
    assert refused_paths(store) >= 1
