"""The response cache shared by every worker of a run: several processes writing the same
and different keys at once, readers never seeing a partial entry."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

from memctx.llm import CachedResponse, ResponseCache, cache_key

SHARED = [cache_key(model="m", messages=[{"role": "user", "content": f"shared {i}"}],
                    temperature=0, max_tokens=None) for i in range(8)]  # fmt: skip
ROUNDS = 6
WRITERS = 3
# Large entries: a writer that wrote in place would be caught half-way by the reader.
FILLER = "the quick brown fox jumps over the lazy dog " * 500


def _own_key(writer: int, i: int) -> str:
    return cache_key(
        model="m", messages=[{"role": "user", "content": f"own {writer} {i}"}],
        temperature=0, max_tokens=None,
    )  # fmt: skip


def _entry(text: str) -> CachedResponse:
    return CachedResponse(f"{text} {FILLER}", "m", 100, 10, 0.001, True, "answer-probe")


def _write(folder: str, writer: int) -> None:
    """In a spawned process: every shared key ROUNDS times, and keys of its own."""
    cache = ResponseCache(folder)
    for round_ in range(ROUNDS):
        for key in SHARED:
            assert cache.put(key, _entry(f"writer {writer} round {round_}"))
        assert cache.put(_own_key(writer, round_), _entry(f"own {writer} {round_}"))


def test_concurrent_writers_leave_whole_entries(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    stop = threading.Event()
    seen: list[str] = []
    partial: list[str] = []

    def read() -> None:
        # Reads the files themselves, not through get() (which hides a corrupt entry).
        while not stop.is_set():
            for key in SHARED:
                try:
                    raw = cache.path_for(key).read_text(encoding="utf-8")
                except FileNotFoundError:
                    continue
                try:
                    record = json.loads(raw)
                except ValueError:
                    partial.append(key)
                    continue
                seen.append(record["text"][:20])

    reader = threading.Thread(target=read)
    reader.start()
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=_write, args=(str(tmp_path / "cache"), w)) for w in range(WRITERS)
    ]
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=300)
            assert proc.exitcode == 0
    finally:
        stop.set()
        reader.join()
    assert not partial  # a reader never saw half an entry
    assert seen  # the reader did read while the writers wrote
    for key in SHARED:
        entry = cache.get(key)
        assert entry is not None and entry.text.startswith("writer ")
        assert entry.text.endswith(FILLER)
    for writer in range(WRITERS):
        for round_ in range(ROUNDS):
            entry = cache.get(_own_key(writer, round_))
            assert entry is not None and entry.text.startswith(f"own {writer} {round_} ")
    leftovers = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.suffix != ".json"]
    assert not leftovers  # no temporary file left behind
