"""Memory files: chunking, change-driven re-indexing, hybrid search, decay, guarded paths, and
every ``memorySearch`` setting changing what a search returns."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import random
import stat
import string
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from memctx.config import MemorySearchConfig, load_config
from memctx.errors import ConfigError, StoreError
from memctx.messages.tokens import estimate_tokens
from memctx.retrieval.embeddings import HashEmbedder
from memctx.store.memory_files import (
    CHUNK_OVERLAP_TOKENS,
    CHUNK_TOKENS,
    MAX_FILE_BYTES,
    MemoryFiles,
    chunk_lines,
    split_lines,
)

NOW = dt.datetime(2026, 3, 2, 12, 0).timestamp()  # local noon: "today" is 2026-03-02


class CountingEmbedder:
    """Wraps the hash embedder and counts what it is asked to embed."""

    def __init__(self) -> None:
        self._inner = HashEmbedder(dim=384)
        self.name, self.dim, self.version = self._inner.name, self._inner.dim, self._inner.version
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self._inner.embed(texts)

    @property
    def texts(self) -> int:
        return sum(len(c) for c in self.calls)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def mem(tmp_path: Path, embedder: CountingEmbedder) -> MemoryFiles:
    (tmp_path / "ws" / "memory").mkdir(parents=True)
    return MemoryFiles(tmp_path / "ws", embedder=embedder, clock=lambda: NOW)


def filler_lines(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(400)]
    out = []
    for i in range(n):
        width = rng.choice([0, 3, 8, 15, 30, 60])
        out.append(" ".join(rng.choice(vocab) for _ in range(width)) if i % 17 else "")
    return out


def write(mem: MemoryFiles, rel: str, lines: list[str]) -> Path:
    path = mem.workspace_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


# --- chunking --------------------------------------------------------------------------------


def test_chunking_covers_every_line_within_budget() -> None:
    lines = filler_lines(2000)
    chunks = chunk_lines(lines)
    covered: set[int] = set()
    for (start, end, text), nxt in zip(chunks, [*chunks[1:], None], strict=True):
        assert 1 <= start <= end <= 2000
        assert text == "\n".join(lines[start - 1 : end])
        assert estimate_tokens(text) <= CHUNK_TOKENS
        covered.update(range(start, end + 1))
        if nxt is not None:
            assert start < nxt[0] <= end + 1  # forward, no gap
            shared = "\n".join(lines[nxt[0] - 1 : end])
            assert estimate_tokens(shared) <= CHUNK_OVERLAP_TOKENS
    assert covered == set(range(1, 2001))
    overlaps = sum(1 for a, b in itertools.pairwise(chunks) if b[0] <= a[1])
    assert overlaps > len(chunks) // 2  # overlap is the rule, not the exception


def test_oversized_line_is_cut_into_pieces_of_its_line() -> None:
    long_line = "x" * 5000
    chunks = chunk_lines(["before", long_line, "after"])
    pieces = [c for c in chunks if c[0] == c[1] == 2]
    assert "".join(text for _, _, text in pieces) == long_line
    assert all(estimate_tokens(text) <= CHUNK_TOKENS for _, _, text in chunks)
    assert {n for s, e, _ in chunks for n in range(s, e + 1)} == {1, 2, 3}


def test_split_lines_numbers_like_an_editor() -> None:
    assert split_lines("a\r\nb\n\nc") == ["a", "b", "", "c"]
    assert split_lines("a\n") == ["a"] and split_lines("") == []


def test_memory_files_chunk_a_2000_line_file(mem: MemoryFiles) -> None:
    lines = filler_lines(2000)
    write(mem, "memory/notes.md", lines)
    chunks = mem.chunks()
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    blank = {i + 1 for i, line in enumerate(lines) if not line.strip()}
    assert covered | blank == set(range(1, 2001))
    assert all(c.path == "memory/notes.md" for c in chunks)


# --- indexing --------------------------------------------------------------------------------


def test_reindex_only_on_change(mem: MemoryFiles, embedder: CountingEmbedder) -> None:
    write(mem, "MEMORY.md", ["# Long-term", "Prefers Rust for CLIs"])
    daily = write(mem, "memory/2026-03-01.md", filler_lines(300))
    assert mem.sync() == 2
    first = embedder.texts
    assert first == mem.stats()["chunks"]
    assert mem.sync() == 0 and embedder.texts == first  # nothing changed: nothing embedded

    content = daily.read_text()
    daily.write_text(content)  # same bytes, new mtime: hashed, not re-chunked
    assert mem.sync() == 0 and embedder.texts == first

    with open(daily, "a") as fh:
        fh.write("Decided to ship on Friday\n")
    assert mem.sync() == 1
    # Only chunks whose text changed are embedded again: the tail, not the whole log.
    assert 1 <= embedder.texts - first <= 2
    assert mem.stats()["files_reindexed"] == 3


def test_deleted_file_leaves_the_index(mem: MemoryFiles) -> None:
    path = write(mem, "memory/projects.md", ["Project Falcon uses gRPC"])
    write(mem, "MEMORY.md", ["Prefers tabs"])
    assert any(h.path == "memory/projects.md" for h in mem.search("Falcon gRPC"))
    path.unlink()
    assert all(h.path != "memory/projects.md" for h in mem.search("Falcon gRPC"))
    assert {c.path for c in mem.chunks()} == {"MEMORY.md"}


def test_search_finds_a_planted_line(mem: MemoryFiles) -> None:
    lines = filler_lines(2000, seed=3)
    planted = "The staging database password rotates every Tuesday at 04:00 UTC"
    lines[1234] = planted
    write(mem, "memory/ops.md", lines)
    write(mem, "MEMORY.md", filler_lines(100, seed=4))
    hits = mem.search("when does the staging database password rotate", limit=3)
    top = hits[0]
    assert planted in top.text and top.start_line <= 1235 <= top.end_line
    assert top.path == "memory/ops.md" and 0 < top.score <= 1.0
    assert mem.memory_get(top.path, 1235, 1) == planted


def test_search_of_nothing_finds_nothing(mem: MemoryFiles) -> None:
    write(mem, "MEMORY.md", ["x"])
    assert mem.search("") == [] and mem.search("x", limit=0) == []


def test_bad_settings_are_refused_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="MemorySearchConfig"):
        MemoryFiles(tmp_path, embedder=CountingEmbedder(), config={"chunkTokens": 100})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="halfLifeDays"):
        settings({"query": {"hybrid": {"temporalDecay": {"halfLifeDays": 0}}}})
    with pytest.raises(ConfigError, match="must sum to 1"):
        settings({"query": {"hybrid": {"vectorWeight": 0.9, "textWeight": 0.3}}})
    with pytest.raises(ConfigError, match="chunkOverlapTokens"):
        settings({"chunkTokens": 100, "chunkOverlapTokens": 100})


def settings(data: dict[str, object]) -> MemorySearchConfig:
    """A ``memorySearch`` section; text caps lifted unless ``data`` sets one."""
    return MemorySearchConfig.from_dict({"maxInjectedChars": 10**8, **data})


def decay(enabled: bool, half_life_days: float = 30.0) -> MemorySearchConfig:
    return settings(
        {
            "query": {
                "hybrid": {"temporalDecay": {"enabled": enabled, "halfLifeDays": half_life_days}}
            }
        }
    )


def test_half_life_decays_daily_logs_only(tmp_path: Path) -> None:
    note = ["Kubernetes cluster upgrade to version 1.29 planned with blue green rollout"]
    ws = tmp_path / "ws"
    for rel in ("MEMORY.md", "memory/projects.md", "memory/2026-01-01.md", "memory/2026-03-02.md"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(note[0] + "\n")  # 2026-01-01 is 60 days before NOW

    def scores(config: MemorySearchConfig) -> dict[str, float]:
        mem = MemoryFiles(ws, embedder=CountingEmbedder(), clock=lambda: NOW, config=config)
        return {h.path: h.score for h in mem.search("kubernetes cluster upgrade", limit=10)}

    flat = scores(decay(False))
    assert len(set(flat)) == 4 and len({round(s, 6) for s in flat.values()}) == 1
    decayed = scores(decay(True, 30))
    for evergreen in ("MEMORY.md", "memory/projects.md", "memory/2026-03-02.md"):
        assert decayed[evergreen] == pytest.approx(flat[evergreen])
    assert decayed["memory/2026-01-01.md"] == pytest.approx(flat["memory/2026-01-01.md"] / 4)
    assert next(iter(decayed)) != "memory/2026-01-01.md"
    # A shorter half-life decays the same note further: the setting is read, not a constant.
    faster = scores(decay(True, 15))
    assert faster["memory/2026-01-01.md"] == pytest.approx(flat["memory/2026-01-01.md"] / 16)


def test_symlink_out_of_the_workspace_is_not_indexed(mem: MemoryFiles, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("Top secret launch codes\n")
    (mem.workspace_dir / "memory" / "link.md").symlink_to(outside)
    assert mem.chunks() == []


# --- memory_get and its guards ---------------------------------------------------------------


def test_memory_get_ranges(mem: MemoryFiles) -> None:
    write(mem, "memory/notes.md", [f"line {i}" for i in range(1, 11)])
    write(mem, "MEMORY.md", ["one", "two"])
    assert mem.memory_get("memory/notes.md", 3, 2) == "line 3\nline 4"
    assert mem.memory_get("memory/notes.md", 9) == "line 9\nline 10"
    assert mem.memory_get("memory/notes.md") == "\n".join(f"line {i}" for i in range(1, 11))
    assert mem.memory_get("memory/notes.md", 20) == ""
    assert mem.memory_get("memory/notes.md", 2, 0) == ""
    assert mem.memory_get("MEMORY.md", 2, 5) == "two"
    assert mem.memory_get("memory/2020-01-01.md") == ""  # not written yet: empty, not an error
    with pytest.raises(ValueError):
        mem.memory_get("MEMORY.md", 0)
    with pytest.raises(ValueError):
        mem.memory_get("MEMORY.md", 1, -1)


def test_memory_get_refusals(mem: MemoryFiles, tmp_path: Path) -> None:
    ws = mem.workspace_dir
    (tmp_path / "x.md").write_text("outside\n")
    (ws / "README.md").write_text("not memory\n")
    (ws / "memory" / "notes.txt").write_text("not markdown\n")
    inside = write(mem, "memory/ok.md", ["fine"])
    (ws / "memory" / "out.md").symlink_to(tmp_path / "x.md")
    (ws / "memory" / "sneaky.md").symlink_to(ws / "memory" / "notes.txt")
    cases = {
        "../x.md": "'..'",
        "memory/../MEMORY.md": "'..'",
        str(inside): "absolute",
        str(tmp_path / "x.md"): "absolute",
        "memory/out.md": "is a symlink",  # a link is refused wherever it points
        "memory/sneaky.md": "is a symlink",
        "memory/notes.txt": "only .md",
        "README.md": "outside the memory files",
        "memory": "only .md",
        "": "empty",
    }
    for path, why in cases.items():
        with pytest.raises(StoreError, match=why) as info:
            mem.memory_get(path)
        assert repr(path) in str(info.value) and "allowed: MEMORY.md or memory/" in str(info.value)
    assert mem.memory_get("memory/ok.md") == "fine"


# --- append_daily ----------------------------------------------------------------------------


def test_append_daily_appends_redacted_lines(mem: MemoryFiles) -> None:
    rng = random.Random(11)
    token = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    path = mem.append_daily("Release branch cut")
    assert path == mem.workspace_dir / "memory" / "2026-03-02.md"
    mem.append_daily(f"CI uses {token} to push tags\n")
    text = path.read_text()
    assert token not in text and "[REDACTED:" in text
    assert text.startswith("Release branch cut\nCI uses ") and text.endswith("\n")
    assert mem.memory_get("memory/2026-03-02.md", 1, 1) == "Release branch cut"
    other = mem.append_daily("Older note", date="2026-02-27")
    assert other.name == "2026-02-27.md"
    assert mem.append_daily("typed date", date=dt.date(2026, 2, 27)) == other
    assert any(h.path == "memory/2026-03-02.md" for h in mem.search("release branch"))


def test_append_daily_creates_memory_dir_and_ends_torn_lines(tmp_path: Path) -> None:
    mem = MemoryFiles(tmp_path / "fresh", embedder=CountingEmbedder(), clock=lambda: NOW)
    path = mem.append_daily("first")
    with open(path, "a") as fh:
        fh.write("hand edit without newline")
    mem.append_daily("second")
    assert split_lines(path.read_text()) == ["first", "hand edit without newline", "second"]
    with pytest.raises(ValueError):
        mem.append_daily("   ")
    with pytest.raises(ValueError):
        mem.append_daily("x", date="yesterday")


def test_append_daily_refuses_a_memory_dir_pointing_out(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "memory").symlink_to(elsewhere)
    mem = MemoryFiles(tmp_path / "ws", embedder=CountingEmbedder(), clock=lambda: NOW)
    with pytest.raises(StoreError, match="is a symlink"):
        mem.append_daily("note")
    assert list(elsewhere.iterdir()) == []


# -- files only, bounded -----------------------------------------------------------------------


def _within(seconds: float, work: Callable[[], object], fifo: Path) -> object:
    """``work()`` in a thread; fail if it blocks (then release the FIFO so it can end)."""
    out: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        raise AssertionError(f"blocked on {fifo}")
    if errors:
        raise errors[0]
    return out[0]


def test_memory_get_on_a_named_pipe_never_blocks(mem: MemoryFiles) -> None:
    fifo = mem.workspace_dir / "memory" / "pipe.md"
    os.mkfifo(fifo)
    (mem.workspace_dir / "memory" / "notes.md").write_text("the deploy uses blue/green\n")
    with pytest.raises(StoreError) as info:
        _within(10, lambda: mem.memory_get("memory/pipe.md"), fifo)
    message = str(info.value)
    assert str(fifo) in message and "named pipe" in message and "move it away" in message
    # Indexing and searching skip it too, and still find the regular file.
    hits = _within(10, lambda: mem.search("blue/green deploy"), fifo)
    assert isinstance(hits, list) and [h.path for h in hits] == ["memory/notes.md"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # left as it was


def test_a_fifo_swapped_in_after_listing_is_refused(
    mem: MemoryFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file is listed as regular, then replaced by a FIFO before it is read: the check is
    # on the descriptor opened, so nothing blocks.
    path = mem.workspace_dir / "memory" / "swap.md"
    path.write_text("first version\n")
    assert mem.sync() == 1
    path.unlink()
    os.mkfifo(path)
    monkeypatch.setattr(Path, "is_file", lambda self: True)
    assert _within(10, mem.sync, path) == 0  # kept the last good index, said why
    assert [c.text for c in mem.chunks() if c.path == "memory/swap.md"] == ["first version"]


def test_one_memory_file_is_read_up_to_the_cap(mem: MemoryFiles) -> None:
    line = "x" * 99 + "\n"
    count = MAX_FILE_BYTES // len(line) + 500  # over the cap
    (mem.workspace_dir / "MEMORY.md").write_text(line * count)
    text = mem.memory_get("MEMORY.md")
    lines = text.split("\n")
    assert len(lines) == MAX_FILE_BYTES // len(line)  # whole lines only, up to the cap
    assert all(x == "x" * 99 for x in lines)
    mem.sync()
    assert max(c.end_line for c in mem.chunks()) <= MAX_FILE_BYTES // len(line)


# -- memorySearch drives the search --------------------------------------------------------------

QUERY = "rollback procedure"
KEYWORD_NOTE = "rollback procedure checklist lives in the ops wiki"  # words, no meaning
MEANING_NOTE = "to revert a bad release redeploy the previous tag"  # meaning, no words


class TableEmbedder:
    """Chosen vectors: the query and MEANING_NOTE are close (cosine 0.8), KEYWORD_NOTE is
    orthogonal to the query, anything else points elsewhere; so the vector and the keyword
    channels disagree, and only the weights decide between the two notes."""

    name, dim, version = "table", 4, "table-1"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        table = {
            QUERY: [1.0, 0.0, 0.0, 0.0],
            MEANING_NOTE: [0.8, 0.6, 0.0, 0.0],
            KEYWORD_NOTE: [0.0, 1.0, 0.0, 0.0],
        }
        return np.array([table.get(t, [0.0, 0.0, 0.0, 1.0]) for t in texts], dtype=np.float32)


def ranked(tmp_path: Path, config: MemorySearchConfig | None) -> list[tuple[str, float]]:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "memory" / "ops.md").write_text(KEYWORD_NOTE + "\n")
    (ws / "memory" / "release.md").write_text(MEANING_NOTE + "\n")
    (ws / "MEMORY.md").write_text("lunch is at noon\n")
    mem = MemoryFiles(ws, embedder=TableEmbedder(), clock=lambda: NOW, config=config)
    return [(h.path, h.score) for h in mem.search(QUERY, limit=5)]


def hybrid(**values: object) -> MemorySearchConfig:
    return settings({"query": {"hybrid": values}})


def test_weights_change_the_ranking(tmp_path: Path) -> None:
    default = ranked(tmp_path, None)
    assert [p for p, _ in default] == ["memory/release.md", "memory/ops.md"]
    # 0.7 x 0.8 + 0.3 x 0 against 0.7 x 0 + 0.3 x 1 (BM25 max-normalised).
    assert [s for _, s in default] == pytest.approx([0.56, 0.3], abs=1e-6)
    text_heavy = ranked(tmp_path, hybrid(vectorWeight=0.2, textWeight=0.8))
    assert [p for p, _ in text_heavy] == ["memory/ops.md", "memory/release.md"]
    assert [s for _, s in text_heavy] == pytest.approx([0.8, 0.16], abs=1e-6)


def test_hybrid_off_is_vector_only(tmp_path: Path) -> None:
    vector_only = ranked(tmp_path, hybrid(enabled=False))
    # The keyword-only note has cosine 0 and is not found; the other scores its cosine whole.
    assert vector_only == [("memory/release.md", pytest.approx(0.8, abs=1e-6))]
    # The weights are those of the fusion: with the fusion off they change nothing.
    assert ranked(tmp_path, hybrid(enabled=False, vectorWeight=0.2, textWeight=0.8)) == (
        vector_only
    )


def test_decay_ranks_an_old_dated_note_below_a_new_one_and_spares_memory_md(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("The staging database listens on port 5433\n")  # evergreen
    (ws / "memory" / "2025-12-01.md").write_text("The staging database listens on port 5432\n")
    (ws / "memory" / "2026-03-01.md").write_text("The staging database now listens on port 6543\n")

    def search(config: MemorySearchConfig) -> list[tuple[str, float]]:
        mem = MemoryFiles(ws, embedder=CountingEmbedder(), clock=lambda: NOW, config=config)
        return [(h.path, h.score) for h in mem.search("staging database port", limit=3)]

    plain, decayed = dict(search(decay(False))), search(decay(True, 30))
    # Without decay the old note outranks the new one (it matches the query more closely).
    assert plain["memory/2025-12-01.md"] > plain["memory/2026-03-01.md"]
    order = [path for path, _ in decayed]
    assert order.index("memory/2026-03-01.md") < order.index("memory/2025-12-01.md")
    assert dict(decayed)["MEMORY.md"] == pytest.approx(plain["MEMORY.md"])  # never decayed
    assert dict(decayed)["memory/2025-12-01.md"] < plain["memory/2025-12-01.md"] / 4  # 91 days


def test_max_injected_chars_caps_what_search_returns(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for n in range(12):  # 12 notes of 10 lines, each note one chunk of ~520 characters
        lines = [f"deploy step {n}.{i}: run the migration, restart worker {i}" for i in range(10)]
        (ws / "memory" / f"note{n}.md").write_text("\n".join(lines) + "\n")

    def hits(cap: int) -> list[str]:
        config = MemorySearchConfig.from_dict({"maxInjectedChars": cap})
        mem = MemoryFiles(ws, embedder=CountingEmbedder(), clock=lambda: NOW, config=config)
        found = mem.search("deploy migration restart worker", limit=10)
        for hit in found:  # a hit cut to the cap says which lines it still shows
            shown = mem.memory_get(hit.path, hit.start_line, hit.end_line - hit.start_line + 1)
            assert shown == hit.text or (cap < len(shown) and shown.startswith(hit.text))
        return [h.text for h in found]

    whole = hits(10**8)
    assert len(whole) == 10 and sum(map(len, whole)) > 5_000
    default = hits(4_000)  # the default cap
    assert sum(map(len, default)) <= 4_000 and len(default) < len(whole)
    for cap in (100, 1_000, 1_500):
        capped = hits(cap)
        assert 0 < sum(map(len, capped)) <= cap
        assert capped[:-1] == whole[: len(capped) - 1]  # best first, whole
        assert whole[len(capped) - 1].startswith(capped[-1])  # the last one cut, not reordered
    # The best hit's first line alone is over a tiny cap: a piece of it, not nothing.
    assert hits(20) == [whole[0][:20]]
    assert MemoryFiles(ws, embedder=CountingEmbedder()).config.max_injected_chars == 4_000


def test_chunk_sizes_change_the_chunking(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    lines = filler_lines(300)
    (ws / "memory" / "notes.md").write_text("\n".join(lines) + "\n")

    def chunks(config: MemorySearchConfig | None) -> list[tuple[int, int, str]]:
        mem = MemoryFiles(ws, embedder=CountingEmbedder(), config=config)
        return [(c.start_line, c.end_line, c.text) for c in mem.chunks()]

    default = chunks(None)
    assert default == [c for c in chunk_lines(lines) if c[2].strip()]
    small = chunks(settings({"chunkTokens": 100, "chunkOverlapTokens": 20}))
    assert len(small) > 3 * len(default)
    assert max(estimate_tokens(t) for _, _, t in small) <= 100
    assert max(estimate_tokens(t) for _, _, t in default) > 100
    assert any(b[0] <= a[1] for a, b in itertools.pairwise(small))  # some lines shared
    no_overlap = chunks(settings({"chunkTokens": 100, "chunkOverlapTokens": 0}))
    # No line in two chunks (a line longer than a chunk is cut into pieces of that line).
    assert all(b[0] >= a[1] for a, b in itertools.pairwise(no_overlap))
    assert sum(len(t) for *_, t in no_overlap) < sum(len(t) for *_, t in small)


def test_an_openclaw_json_memory_search_section_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(
        """{
          agents: {
            defaults: {
              memorySearch: {
                query: { hybrid: { enabled: true, vectorWeight: 0.2, textWeight: 0.8 } },
                maxInjectedChars: 30,
              },
            },
          },
        }"""
    )
    config = load_config(path).memory_search
    found = ranked(tmp_path, config)
    # Text-heavy weights put the keyword note first; 30 characters cut it to its first 30.
    assert found == [("memory/ops.md", pytest.approx(0.8, abs=1e-6))]
    mem = MemoryFiles(tmp_path / "ws", embedder=TableEmbedder(), config=config)
    assert [h.text for h in mem.search(QUERY)] == [KEYWORD_NOTE[:30]]
