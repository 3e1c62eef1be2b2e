"""Raw store under bad values: unusable vectors in ``vectors.bin`` and changed records in
``segments.jsonl``. One bad value costs one segment's vector (re-embedded) or one record (not
served), reported once; it never costs the store."""

from __future__ import annotations

import json
import logging
import struct
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memctx import MemoryContext, MemoryContextConfig
from memctx.retrieval.embeddings import HashEmbedder
from memctx.store import memory_search
from memctx.store.raw.io import decode_record, encode_record
from memctx.store.raw.store import RawStore, Segment
from memctx.store.vmem import iter_vmem_raw, read_vmem, vmem_entry_size, vmem_status

DIM = 384
NOW = 1_750_000_000.0
TOPICS = ["redis cache", "postgres migration", "webhook retries", "docker build", "auth tokens"]


class CountingEmbedder:
    """HashEmbedder counting the texts it embeds; ``zero_for`` texts get an all-zero vector."""

    def __init__(self, zero_for: str | None = None) -> None:
        self.inner = HashEmbedder()
        self.name, self.dim, self.version = self.inner.name, self.inner.dim, self.inner.version
        self.texts: list[str] = []
        self.zero_for = zero_for

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        out = self.inner.embed(texts)
        for i, text in enumerate(texts):
            if self.zero_for is not None and self.zero_for in text:
                out[i] = 0.0
        return out


def open_store(path: Path, embedder: Any = None) -> RawStore:
    return RawStore(path, embedder=embedder or CountingEmbedder(), eviction_days=None).open()


def build(path: Path, n: int = 12, embedder: Any = None) -> list[Segment]:
    with RawStore(path, embedder=embedder or HashEmbedder(), eviction_days=None) as store:
        segs = [
            store.add("s1", "user", f"note {i} about {TOPICS[i % 5]}", timestamp=NOW + i, turn=i)
            for i in range(n)
        ]
    assert all(s is not None for s in segs)
    return [s for s in segs if s is not None]


def entry_of(path: Path, segment_id: str) -> int:
    raw = b"".join(ids for ids, _ in iter_vmem_raw(path / "vectors.bin", DIM))
    return [str(uuid.UUID(bytes=raw[i : i + 16])) for i in range(0, len(raw), 16)].index(segment_id)


def poke(path: Path, entry: int, value: float | None) -> None:
    """Put ``value`` into component 7 of vector ``entry`` (``None``: zero the vector)."""
    raw = bytearray((path / "vectors.bin").read_bytes())
    start = 16 + entry * vmem_entry_size(DIM) + 16
    if value is None:
        raw[start : start + 4 * DIM] = bytes(4 * DIM)
    else:
        raw[start + 28 : start + 32] = struct.pack("<f", value)
    (path / "vectors.bin").write_bytes(bytes(raw))


# -- unusable vectors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [[float("nan")], [float("inf")], [float("-inf")], [None], [3e30], [float("nan"), None, 1e38]],
    ids=["nan", "inf", "-inf", "zeros", "absurd-norm", "three-at-once"],
)
def test_an_unusable_vector_is_re_embedded_reported_once_and_repaired(
    tmp_path: Path, values: list[float | None], caplog: pytest.LogCaptureFixture
) -> None:
    segs = build(tmp_path)
    damaged = [segs[3], segs[7], segs[10]][: len(values)]
    for seg, value in zip(damaged, values, strict=True):
        poke(tmp_path, entry_of(tmp_path, seg.id), value)
    assert vmem_status(tmp_path / "vectors.bin", DIM) is not None  # reported as damage
    counting = CountingEmbedder()
    with caplog.at_level(logging.WARNING, logger="memctx"):
        store = open_store(tmp_path, counting)  # used to raise "vectors must be finite"
    assert len(store) == 12 and len(store.vectors) == 12
    stats = store.stats()
    assert stats["bad_vectors"] == len(values)
    assert "not usable" in (stats["vectors_rebuilt"] or "")
    assert len(counting.texts) == len(values)  # only the damaged segments: embedded again
    assert any("not usable" in r.getMessage() for r in caplog.records)
    for seg in damaged:  # each is found by its own text again
        assert memory_search(store, seg.content, 1, session_id="s1")[0]["content"] == seg.content
        assert np.isfinite(store.vectors.get(store.key_of(seg.id) or -1)).all()
    # Repaired at once: the file is sound, and a reopen finds nothing to report or embed.
    assert vmem_status(tmp_path / "vectors.bin", DIM) is None
    assert store.add("s1", "user", "a new note after the repair", timestamp=NOW + 99) is not None
    store.close()
    again_embedder = CountingEmbedder()
    again = open_store(tmp_path, again_embedder)
    assert again.stats()["bad_vectors"] == 0 and again.stats()["vectors_rebuilt"] is None
    assert again_embedder.texts == [] and len(again) == 13


def test_an_unusable_vector_appended_by_another_process(tmp_path: Path) -> None:
    build(tmp_path, 6)
    reader = open_store(tmp_path)
    writer = open_store(tmp_path)
    seg = writer.add("s1", "user", "appended elsewhere about redis cache", timestamp=NOW + 50)
    assert seg is not None
    poke(tmp_path, entry_of(tmp_path, seg.id), float("nan"))  # damaged after it was written
    assert len(reader) == 7  # the refresh takes the others' vectors from the file's tail
    assert reader.stats()["bad_vectors"] == 1
    assert np.isfinite(reader.vectors.get(reader.key_of(seg.id) or -1)).all()
    assert reader.add("s1", "user", "the next write repairs the file", timestamp=NOW + 51)
    assert vmem_status(tmp_path / "vectors.bin", DIM) is None


def test_the_embedders_own_zero_vector_is_not_damage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    build(tmp_path, 4, embedder=CountingEmbedder(zero_for="EMPTY"))
    with RawStore(
        tmp_path, embedder=CountingEmbedder(zero_for="EMPTY"), eviction_days=None
    ) as store:
        assert store.add("s1", "user", "EMPTY marker", timestamp=NOW + 9) is not None
    for _ in range(2):
        with caplog.at_level(logging.WARNING, logger="memctx"):
            again = open_store(tmp_path, CountingEmbedder(zero_for="EMPTY"))
        assert again.stats()["bad_vectors"] == 0 and again.stats()["vectors_rebuilt"] is None
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        again.close()


def test_both_hooks_keep_working_over_a_damaged_vector_file(tmp_path: Path) -> None:
    config = MemoryContextConfig()
    history = [{"role": "system", "content": "You are a coding agent."}]
    history += [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}: {TOPICS[i % 5]}"}
        for i in range(12)
    ]

    def engine() -> MemoryContext:
        return MemoryContext(
            config, store_dir=tmp_path, session_id="s1", context_window_tokens=200_000
        )

    with engine() as mem:
        mem.on_before_compact(history)
        assert mem.wait_idle(30)
    ids, _ = read_vmem(tmp_path / "vectors.bin", DIM)
    assert ids
    poke(tmp_path, 0, float("nan"))
    later = {"role": "user", "content": "zeppelin hangar inventory is complete"}
    with engine() as mem:
        assert mem.on_context([*history, later])  # used to fail on every call
        mem.on_before_compact([*history, later])
        assert mem.wait_idle(30)
        assert "zeppelin" in mem.memory_search("zeppelin hangar", limit=3)[0]["content"]
    with RawStore(tmp_path, embedder=HashEmbedder(), eviction_days=None) as store:
        assert any("zeppelin" in s.content for s in store.segments())
    assert vmem_status(tmp_path / "vectors.bin", DIM) is None


# -- changed records -----------------------------------------------------------------------


def _flip(data: bytes, pos: int, bit: int) -> bytes:
    out = bytearray(data)
    out[pos] ^= 1 << bit
    return bytes(out)


def test_no_single_bit_flip_is_served_as_the_record() -> None:
    seg = Segment(str(uuid.uuid4()), "s1", NOW, "tool", "ok: 3 passed", 4, 2, ("ci",), ("x",))
    line = encode_record(seg)
    served = 0
    for pos in range(len(line)):
        for bit in range(8):
            try:
                got = decode_record(_flip(line, pos, bit))
            except ValueError:
                continue  # not a record, or one failing its checksum: skipped
            # Only a flip that changes nothing the record says may load: e.g. in the "crc"
            # key's name, which leaves the record's content as it was.
            assert got == seg, (pos, bit)
            served += 1
    assert served <= 3 * 8


def test_a_changed_record_is_never_served_and_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    segs = build(tmp_path, 6)
    path = tmp_path / "segments.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    target = segs[2]
    i = lines[2].index(b"note 2 about")
    lines[2] = _flip(lines[2], i + 5, 1)  # "note 2" -> "note 0": valid JSON, one bit
    assert json.loads(lines[2])["content"].startswith("note 0 about")
    path.write_bytes(b"".join(lines))
    with caplog.at_level(logging.WARNING, logger="memctx"):
        store = open_store(tmp_path)
    assert store.key_of(target.id) is None and len(store) == 5
    assert all("note 0 about postgres" not in s.content for s in store.segments())
    stats = store.stats()
    assert stats["checksum_mismatches"] == 1 and stats["skipped_lines"] == 0
    assert any("checksum" in r.getMessage() for r in caplog.records)
    # The same message archived again is stored again (the changed line was no record).
    assert store.add("s1", "user", target.content, timestamp=target.timestamp) is not None
    store.compact()  # and the changed line goes with the next compaction
    assert open_store(tmp_path).stats()["checksum_mismatches"] == 0


def test_a_record_changed_after_loading_is_not_served(tmp_path: Path) -> None:
    segs = build(tmp_path, 4)
    store = open_store(tmp_path)
    path = tmp_path / "segments.jsonl"
    data = path.read_bytes()
    at = data.index(b"note 1 about")
    with open(path, "r+b") as handle:  # in place: same inode, same size
        handle.seek(at + 9)
        handle.write(bytes([data[at + 9] ^ 0x01]))
    key = store.key_of(segs[1].id)
    assert key is not None
    with pytest.raises(KeyError):
        store.content(key)
    assert store.key_of(segs[1].id) is None and store.stats()["checksum_mismatches"] >= 1


def test_records_without_a_checksum_still_load(tmp_path: Path) -> None:
    segs = build(tmp_path, 3)
    path = tmp_path / "segments.jsonl"
    legacy = []
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        del record["crc"]  # as written before checksums, or by the seed
        legacy.append(json.dumps(record).encode())
    # And a record reformatted by a tool (spacing, escapes), its content intact, still checks.
    legacy[1] = json.dumps(json.loads(path.read_bytes().splitlines()[1]), indent=None).encode()
    path.write_bytes(b"\n".join(legacy) + b"\n")
    store = open_store(tmp_path)
    assert [s.id for s in store.segments()] == [s.id for s in segs]
    assert store.stats()["checksum_mismatches"] == 0
