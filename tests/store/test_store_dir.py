"""One way to resolve a store directory, shared by every store (``resolve_store_dir``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memctx.errors import StoreError
from memctx.retrieval.embeddings import HashEmbedder
from memctx.store import (
    FactType,
    KnowledgeStore,
    MemoryFiles,
    NewFact,
    RawStore,
    resolve_store_dir,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return home


def test_the_readme_example_is_one_store_under_home(home: Path) -> None:
    where = "~/.memctx/store"
    raw = RawStore(where, embedder=HashEmbedder(), eviction_days=None)
    knowledge = KnowledgeStore(where)
    files = MemoryFiles(where, embedder=HashEmbedder())
    expected = home / ".memctx" / "store"
    assert resolve_store_dir(where) == expected
    assert raw.store_dir == knowledge.path.parent == files.workspace_dir == expected
    assert raw.add("s1", "user", "a note") is not None
    assert knowledge.ingest(NewFact(FactType.DECISION, "Use PostgreSQL"))[1] is not None
    assert sorted(p.name for p in expected.iterdir()) == [
        "knowledge.jsonl",
        "knowledge.jsonl.lock",
        "segments.jsonl",
        "segments.jsonl.lock",
        "vectors.bin",
        "vectors.meta.json",
    ]
    assert not (Path.cwd() / "~").exists()  # nothing split off under the working directory


def test_tilde_is_expanded_once(home: Path) -> None:
    assert resolve_store_dir(Path("~/a/~b")) == home / "a" / "~b"
    assert resolve_store_dir("rel/dir") == Path.cwd() / "rel" / "dir"  # absolute, resolved
    (Path.cwd() / "link").symlink_to(home)
    assert resolve_store_dir("link/x") == home / "x"


@pytest.mark.parametrize("bad", [None, "", "   ", "\t\n", b"/tmp/x", 5])
def test_blank_or_non_paths_are_refused_with_the_fix(bad: Any) -> None:
    with pytest.raises(StoreError, match=r"store_dir must be a (non-empty )?path.*e\.g\."):
        resolve_store_dir(bad)
    for make in (
        lambda: RawStore(bad, embedder=HashEmbedder()),
        lambda: KnowledgeStore(bad),
        lambda: MemoryFiles(bad, embedder=HashEmbedder()),
    ):
        with pytest.raises(StoreError, match="store_dir"):
            make()


def test_a_path_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("data")
    os.mkfifo(tmp_path / "pipe")
    makers: list[Callable[[Path], object]] = [
        resolve_store_dir,
        lambda p: RawStore(p, embedder=HashEmbedder()),
        KnowledgeStore,
        lambda p: MemoryFiles(p, embedder=HashEmbedder()),
    ]
    for path, kind in ((blocker, "a file"), (tmp_path / "pipe", "a FIFO")):
        for make in makers:
            with pytest.raises(StoreError, match=f"is {kind}.*, not a directory; pass a"):
                make(path)
    assert blocker.read_text() == "data"
