"""Raw store: records, dedup, lazy init, restart, vectors.bin repair, eviction, compaction,
cross-session filtering, redaction, validation, and the rule-based tags."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import string
import tempfile
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx.errors import StoreError
from memctx.retrieval.bm25 import TermCounts
from memctx.retrieval.embeddings import HashEmbedder
from memctx.retrieval.hybrid import hybrid_search
from memctx.store.raw import store as store_module
from memctx.store.raw import term_cache as terms_module
from memctx.store.raw.io import child_path, decode_info, decode_record, encode_record
from memctx.store.raw.records import VECTOR_TEXT_VERSION, search_text
from memctx.store.raw.store import RawStore, Segment
from memctx.store.raw.term_counter import TermCounter
from memctx.store.vmem import read_vmem, write_vmem
from memctx.text.keywords import tokenize
from memctx.text.tagging import MAX_ENTITIES, entities, topics
from tests.strategies import examples


def _store_settings(everyday: int) -> settings:
    """Each example builds a store on disk: at most 250 examples in the thorough pass."""
    return settings(
        max_examples=examples(everyday, thorough_at_most=250),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


class CountingEmbedder:
    """HashEmbedder that counts calls, to prove a restart embeds nothing."""

    def __init__(self, dim: int = 384) -> None:
        self.inner = HashEmbedder(dim)
        self.name, self.dim, self.version = self.inner.name, dim, self.inner.version
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


DAY = 86_400.0
NOW = 1_750_000_000.0
TEXTS = [
    "The database migration failed with IntegrityError on table users",
    "Run pytest -k test_login to reproduce the auth bug in src/auth/login.py",
    "Deploy to staging with docker compose; the service listens on localhost:8080",
    "数据库连接池配置错误，需要修复 config/db.yaml 里的端口",
    "Bump requests to v2.32.3 in requirements.txt (see #123)",
    "The frontend React component UserCard renders slowly; profile it",
]


def make_store(path: Path, **kw: Any) -> RawStore:
    kw.setdefault("embedder", CountingEmbedder())
    kw.setdefault("clock", Clock(NOW))
    return RawStore(path, **kw)


def fill(store: RawStore, n: int = len(TEXTS), session: str = "s1", t0: float = NOW - 100) -> None:
    for i in range(n):
        text = TEXTS[i % len(TEXTS)] + ("" if i < len(TEXTS) else f" #{i}")
        store.add(session, "user" if i % 2 else "assistant", text, timestamp=t0 + i, turn=i)


def file_lines(path: Path) -> list[bytes]:
    return (path / "segments.jsonl").read_bytes().splitlines()


def search_ids(store: RawStore, query: str, k: int = 3) -> list[str]:
    vec = store.embedder.embed([query])[0]
    return [store.segment(key).id for key, _ in store.vectors.top_k(vec, k)]


# -- records, dedup, lazy init ---------------------------------------------------------------


def test_nothing_touches_disk_before_the_first_add(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = make_store(root, session_id="s1")
    assert len(store) == 0
    assert store.visible_keys() == frozenset()
    assert store.stats()["segments"] == 0
    assert store.bm25.top_k(["x"], 3) == []
    assert not root.exists()
    store.add("s1", "user", "hello")
    assert sorted(p.name for p in root.iterdir()) == [
        "segments.jsonl",
        "segments.jsonl.lock",
        "vectors.bin",
        "vectors.meta.json",
    ]
    assert (root / "segments.jsonl").stat().st_mode & 0o077 == 0  # private to the user


def test_add_fields_and_on_disk_record(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    seg = store.add("s1", "tool", TEXTS[0], turn=3)
    assert seg is not None
    assert uuid.UUID(seg.id).version == 4
    assert seg.timestamp == NOW and seg.turn == 3 and seg.tokens == -(-len(TEXTS[0]) // 3)
    assert seg.topics == ("database", "bug")
    assert "IntegrityError" in seg.entities
    (line,) = file_lines(tmp_path)
    record = json.loads(line)
    assert list(record) == [
        *("id", "sessionId", "timestamp", "role", "content", "tokens", "metadata"),
        "crc",  # the record's checksum, its last member (memctx.store.checksum)
    ]
    assert record["metadata"] == {
        "topics": ["database", "bug"],
        "entities": list(seg.entities),
        "turn": 3,
    }
    assert record["timestamp"] == NOW  # epoch seconds, a JSON number
    assert decode_record(line) == seg


def test_dedup_on_session_role_and_redacted_content(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert store.add("s1", "user", "same text") is not None
    assert store.add("s1", "user", "same text") is None
    assert store.add("s1", "assistant", "same text") is not None
    assert store.add("s2", "user", "same text") is not None
    # Two secrets that redact to the same marker are one message once redacted.
    key_a, key_b = "sk-" + "a1B2" * 10, "sk-" + "c3D4" * 10
    assert store.add("s1", "user", f"key {key_a}") is not None
    assert store.add("s1", "user", f"key {key_b}") is None
    out = store.add_many(
        [("s3", "user", "x y"), ("s3", "user", "x y"), ("s1", "user", "same text")]
    )
    assert [o is not None for o in out] == [True, False, False]
    assert len(store) == 5 and len(file_lines(tmp_path)) == 5
    store.close()
    assert make_store(tmp_path).add("s1", "user", "same text") is None  # dedup survives reopen


def test_reopen_gives_equal_segments(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    fill(store)
    store.add("s2", "user", "emoji 😀 and a lone surrogate \ud83d end", timestamp=NOW - 5)
    before = list(store.segments())
    store.close()
    again = make_store(tmp_path)
    assert list(again.segments()) == before
    assert "\ufffd" in before[-1].content  # the lone surrogate became U+FFFD, valid UTF-8
    assert again.keys_for_session("s2") == [again.key_of(before[-1].id)]


def test_encode_decode_round_trip_and_tolerant_timestamps() -> None:
    seg = Segment(str(uuid.uuid4()), "s", 1.25, "user", 'a "q"\nb', 3, None, ("api",), ("x_y",))
    assert decode_record(encode_record(seg).rstrip(b"\n")) == seg
    record = json.loads(encode_record(seg))
    del record["crc"]  # a record made by hand (or by the seed) has none
    record["timestamp"] = 1_700_000_000_500  # milliseconds (the seed's Date.now())
    assert decode_record(json.dumps(record).encode()).timestamp == 1_700_000_000.5
    record["timestamp"] = "2024-01-02T03:04:05Z"
    assert decode_record(json.dumps(record).encode()).timestamp == 1_704_164_645.0
    for bad in ({"sessionId": "../x"}, {"id": "nope"}, {"content": 5}, {"timestamp": None}):
        with pytest.raises(ValueError):
            decode_record(json.dumps({**record, **bad}).encode())


def test_decoding_accepts_exactly_what_json_loads_accepts() -> None:
    # The load path parses lines without json.loads' Python layers; it must agree with it
    # on every line, valid or not (an invalid line is skipped and counted, never fatal).
    seg = Segment(str(uuid.uuid4()), "s", 1.0, "user", "x", 1, None, (), ())
    # A record without its crc: these lines change its content (test_checksum_* covers it).
    good = re.sub(rb',"crc":"[0-9a-f]{8}"}$', b"}", encode_record(seg).rstrip(b"\n"))
    lines = [
        good,
        good + b"\n",
        good + b" \t\r\n",
        b" " + good,
        "\ufeff".encode() + good,
        good + b" x",
        good + good,
        good[:-1],
        good + b"\x0b",
        good.replace(b'"x"', b'"\xff"'),
        good.replace(b'"x"', '"é\ud800"'.encode("utf-8", "surrogatepass")),
        good.replace(b'"x"', b"NaN"),
        b"{" * 100_000,
        b"[1]",
        b"",
        good.decode().encode("utf-16"),
    ]
    for line in lines:
        try:
            parsed = json.loads(line)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("content"), str):
            info, content = decode_info(line)
            assert decode_record(line) == Segment(
                info.id,
                info.session_id,
                info.timestamp,
                info.role,
                content,
                info.tokens,
                info.turn,
                info.topics,
                info.entities,
            )
        else:
            with pytest.raises(ValueError):
                decode_info(line)


def test_decoded_tags_are_shared_and_tolerate_hand_edits() -> None:
    seg = Segment(str(uuid.uuid4()), "s", 1.0, "user", "x", 1, 3, ("api", "bug"), ("KeyError",))
    record = json.loads(encode_record(seg))
    first = decode_record(json.dumps(record).encode())  # reformatted, content intact: checks
    del record["crc"]  # edited by hand from here on
    second = decode_record(json.dumps({**record, "id": str(uuid.uuid4())}).encode())
    assert first.topics == ("api", "bug") and first.topics is second.topics  # one tuple
    assert first.entities is second.entities and first.turn == 3
    record["metadata"]["topics"] = ["api", 5, ["nested"], "db"]
    assert decode_record(json.dumps(record).encode()).topics == ("api", "db")
    record["metadata"]["topics"] = "not a list"
    assert decode_record(json.dumps(record).encode()).topics == ()
    # Checked session ids and roles are remembered per kind: valid as one is not the other.
    long = "a" * 100  # a valid session id, too long for a role
    assert decode_record(json.dumps({**record, "sessionId": long}).encode()).session_id == long
    with pytest.raises(ValueError, match="role"):
        decode_record(json.dumps({**record, "role": long}).encode())
    assert decode_record(json.dumps({**record, "role": "."}).encode()).role == "."
    with pytest.raises(ValueError, match="session id"):
        decode_record(json.dumps({**record, "sessionId": "."}).encode())
    with pytest.raises(ValueError, match="session id"):
        decode_record(json.dumps({**record, "sessionId": ["s"]}).encode())


# -- restart and vectors.bin -----------------------------------------------------------------


def test_fast_restart_embeds_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    fill(store, 30)
    expected = search_ids(store, "database migration IntegrityError")
    store.close()
    counting = CountingEmbedder()
    again = make_store(tmp_path, embedder=counting).open()
    assert counting.calls == 0 and len(again) == 30
    assert again.stats()["vectors_rebuilt"] is None
    assert search_ids(again, "database migration IntegrityError") == expected


def _truncate_header(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:10])


def _bad_magic(path: Path) -> None:
    path.write_bytes(b"XMEM" + path.read_bytes()[4:])


def _other_dim(path: Path) -> None:
    ids, _ = read_vmem(path, 384)
    write_vmem(path, ids, np.ones((len(ids), 16), dtype=np.float32))


def _extra_bytes(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"\0" * 100)


def _short_count(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[12:16] = (int.from_bytes(data[12:16], "little") + 3).to_bytes(4, "little")
    path.write_bytes(bytes(data))


def _missing_ids(path: Path) -> None:
    ids, matrix = read_vmem(path, 384)
    write_vmem(path, ids[:-4], matrix[:-4])


def _deleted(path: Path) -> None:
    path.unlink()


def _other_embedder(path: Path) -> None:
    meta = path.with_name("vectors.meta.json")
    meta.write_text(json.dumps({"embedder": "transformer", "version": "minilm", "dim": 384}))


@pytest.mark.parametrize(
    "damage",
    [
        _truncate_header,
        _bad_magic,
        _other_dim,
        _extra_bytes,
        _short_count,
        _missing_ids,
        _deleted,
        _other_embedder,
    ],
)
def test_damaged_vectors_are_rebuilt_once(
    tmp_path: Path, damage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(tmp_path)
    fill(store, 20)
    expected = search_ids(store, "docker compose staging deploy")
    store.close()
    damage(tmp_path / "vectors.bin")
    counting = CountingEmbedder()
    with caplog.at_level(logging.WARNING, logger="memctx"):
        again = make_store(tmp_path, embedder=counting).open()
        reason = again.stats()["vectors_rebuilt"]
        assert reason
        assert search_ids(again, "docker compose staging deploy") == expected
    warnings = [r for r in caplog.records if "vectors.bin" in r.getMessage()]
    assert len(warnings) == 1 and reason in warnings[0].getMessage()
    # Whole entries before a cut-short append are kept; the rest is re-embedded (+ the query).
    kept = {_missing_ids: 16, _extra_bytes: 20, _short_count: 20}.get(damage, 0)
    assert counting.texts == 20 - kept + 1
    # The file was rewritten: the next start is fast again and reports nothing.
    counting = CountingEmbedder()
    third = make_store(tmp_path, embedder=counting).open()
    assert counting.calls == 0 and third.stats()["vectors_rebuilt"] is None
    ids, _ = read_vmem(tmp_path / "vectors.bin", 384)
    assert {str(i) for i in ids} >= {s.id for s in third.segments()}


class _Recording(CountingEmbedder):
    """Keeps every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


def _said(content: str, name: str | None = None) -> dict[str, Any]:
    """A user message of session ``s1`` at ``NOW``, by ``name`` when given."""
    message: dict[str, Any] = {"session_id": "s1", "role": "user", "content": content}
    return message | {"timestamp": NOW} | ({"name": name} if name else {})


def test_the_vector_embeds_the_words_said_and_bm25_the_day_and_speaker(tmp_path: Path) -> None:
    recording = _Recording()
    store = make_store(tmp_path, embedder=recording)
    store.add_many(
        [
            _said("I went to a support group", "Caroline"),
            ("s1", "user", "[8 May 2023] Melanie: I painted a lake sunrise"),
            _said("Note: the build is green"),
        ]
    )
    assert recording.seen == [
        "I went to a support group",
        "I painted a lake sunrise",
        "Note: the build is green",  # no chat line's date: a label stays with the text
    ]
    # Who and when are found by keyword, and the stored content is the message's own.
    for query, content in [
        ("Caroline", "I went to a support group"),
        ("Melanie", "[8 May 2023] Melanie: I painted a lake sunrise"),
    ]:
        top = store.bm25.top_k(tokenize(query), 1)[0][0]
        assert store.content(top) == content
    may = {store.content(k) for k, _ in store.bm25.top_k(tokenize("May 2023"), 5)}
    assert "[8 May 2023] Melanie: I painted a lake sunrise" in may
    # A message dated only by its timestamp is found by that day's words, which are in no
    # text of it: the day line BM25 searches, not its vector.
    day = datetime.fromtimestamp(NOW, UTC)
    on_its_day = store.bm25.top_k(tokenize(f"{day:%B} {day.year}"), 5)
    assert "I went to a support group" in {store.content(k) for k, _ in on_its_day}


def test_vectors_of_the_previous_vector_text_are_embedded_again(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    store.add_many([_said("I went to a support group", "Caroline")])
    store.close()
    meta_path = tmp_path / "vectors.meta.json"
    meta = json.loads(meta_path.read_text())
    assert meta["version"].endswith(f"+text{VECTOR_TEXT_VERSION}")
    meta["version"] = meta["version"].replace(f"+text{VECTOR_TEXT_VERSION}", "+text2")
    meta_path.write_text(json.dumps(meta))  # written when the vector held the day and name
    recording = _Recording()
    again = make_store(tmp_path, embedder=recording).open()
    assert again.stats()["vectors_rebuilt"]
    assert recording.seen == ["I went to a support group"]


def test_vectors_of_other_processes_are_read_not_embedded(tmp_path: Path) -> None:
    reader_embedder = CountingEmbedder()
    reader = make_store(tmp_path, embedder=reader_embedder)
    writer = make_store(tmp_path)
    fill(writer, 10)
    assert len(reader) == 10 and reader_embedder.calls == 0  # fresh open
    writer.add("s1", "user", "one more about kubernetes helm charts")
    assert reader.refresh() == 1 and reader_embedder.calls == 0  # from the tail of vectors.bin
    writer.compact()  # a new inode: the reader reloads, from vectors.bin
    assert len(reader) == 11 and reader_embedder.calls == 0
    assert search_ids(reader, "kubernetes helm", 1) == search_ids(writer, "kubernetes helm", 1)


def test_a_segment_id_keeps_its_key_for_the_life_of_the_store(tmp_path: Path) -> None:
    # The runtime keeps the key of every segment it archived (RawStore.key_for) to leave the
    # ones in the context out of each search: a key must name its segment through evictions,
    # compactions, reloads after another process rewrote the files, and a close and reopen,
    # and must never be handed to another segment.
    store = make_store(tmp_path, max_segments=6)
    other = make_store(tmp_path, max_segments=6)  # another process on the same files
    segs = [
        store.add("s1", "user", f"note {i} about redis", timestamp=NOW - 100 + i) for i in range(8)
    ]
    assert all(segs)
    ids = [s.id for s in segs if s is not None]
    keys = [store.key_for(i) for i in ids]
    assert None not in keys and len(set(keys)) == len(keys)
    assert store.key_for("never-stored") is None
    # The two oldest were evicted (capacity 6): no longer live, still the same keys.
    assert [store.key_of(i) for i in ids[:2]] == [None, None]
    assert [store.key_for(i) for i in ids] == keys
    assert [store.key_of(i) for i in ids[2:]] == keys[2:]
    store.compact()
    assert [store.key_for(i) for i in ids] == keys
    late = other.add("s1", "user", "a note from the other process", timestamp=NOW)
    other.compact()  # a new inode: ``store`` reloads its index from the files
    assert late is not None
    assert store.refresh() >= 1 and [store.key_of(i) for i in ids[3:]] == keys[3:]
    assert [store.key_for(i) for i in ids] == keys
    store.close()  # a later use reopens lazily, with the same keys
    assert len(store) == 6 and [store.key_for(i) for i in ids] == keys
    new = store.add("s1", "user", "a fresh note", timestamp=NOW + 1)
    assert new is not None
    fresh = [store.key_for(new.id), store.key_for(late.id)]
    assert None not in fresh and not set(fresh) & set(keys)


# -- torn and invalid lines ------------------------------------------------------------------


def test_torn_last_line_is_skipped_counted_and_cannot_swallow_the_next(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    fill(store, 3)
    store.close()
    line = file_lines(tmp_path)[0]
    with open(tmp_path / "segments.jsonl", "ab") as handle:
        handle.write(b"not json\n" + line + b"\n" + line[: len(line) // 2])  # torn tail
    again = make_store(tmp_path)
    stats = again.stats()
    assert (stats["segments"], stats["torn_lines"], stats["skipped_lines"]) == (3, 1, 1)
    assert stats["superseded_lines"] == 1  # the repeated record: the later copy is the live one
    seg = again.add("s9", "user", "after the crash")
    assert seg is not None
    again.close()
    third = make_store(tmp_path)
    assert third.key_of(seg.id) is not None and len(third) == 4
    assert third.stats()["skipped_lines"] == 2  # the fragment is now an invalid middle line


# -- eviction and compaction -----------------------------------------------------------------


def test_capacity_evicts_oldest_by_timestamp(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_segments=5)
    stamps = [50, 10, 40, 20, 30, 60, 5, 70]
    segs = [
        store.add("s1", "user", f"message {i}", timestamp=NOW - 100 + t)
        for i, t in enumerate(stamps)
    ]
    assert len(store) == 5
    live = {s.id for s in store.segments()}
    assert live == {segs[i].id for i in (0, 2, 4, 5, 7)}  # type: ignore[union-attr]
    assert len(store.bm25) == len(store.vectors) == 5
    assert store.stats()["evicted"] == 3
    store.close()
    assert {s.id for s in make_store(tmp_path, max_segments=5).segments()} == live


def test_age_eviction_follows_the_clock(tmp_path: Path) -> None:
    clock = Clock(NOW)
    store = make_store(tmp_path, eviction_days=10, clock=clock)
    old = store.add("s1", "user", "old note about redis cache", timestamp=NOW - 9 * DAY)
    new = store.add("s1", "user", "new note about redis cache", timestamp=NOW - 1 * DAY)
    assert old is not None and new is not None
    assert store.add("s1", "user", "too old already", timestamp=NOW - 11 * DAY) is None
    clock.now = NOW + 2 * DAY
    visible = store.visible_keys("s1")
    assert visible is not None and [store.segment(k).id for k in visible] == [new.id]
    assert len(store.vectors) == 1 and len(store.bm25) == 1
    assert [k for k, _ in store.bm25.top_k(tokenize("redis cache"), 5)] == list(visible)
    store.close()
    assert [s.id for s in make_store(tmp_path, eviction_days=10, clock=clock).segments()] == [
        new.id
    ]


def test_compaction_is_amortised_and_keeps_file_and_index_consistent(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_segments=20)
    for i in range(300):
        store.add("s1", "user", f"note {i} about topic {i % 7}", timestamp=NOW - 1000 + i)
    stats = store.stats()
    assert stats["segments"] == 20 and stats["compactions"] >= 3
    assert stats["compactions"] <= 300 // 64  # amortised: never per add
    assert len(file_lines(tmp_path)) == 20 + stats["dead_lines"] <= 20 + 64
    store.compact()
    records = [json.loads(line) for line in file_lines(tmp_path)]
    live = [s.id for s in store.segments()]
    assert [r["id"] for r in records] == live
    ids, _ = read_vmem(tmp_path / "vectors.bin", 384)
    assert sorted(map(str, ids)) == sorted(live)
    assert [store.content(store.key_of(i) or -1) for i in live] == [r["content"] for r in records]
    store.close()
    counting = CountingEmbedder()
    again = make_store(tmp_path, max_segments=20, embedder=counting)
    assert [s.id for s in again.segments()] == live and counting.calls == 0


def test_without_auto_compact_dead_lines_wait_for_maybe_compact(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_segments=20)
    store.auto_compact = False
    assert not store.maybe_compact()  # nothing written yet: nothing to do
    for i in range(200):
        store.add("s1", "user", f"note {i} about topic {i % 7}", timestamp=NOW - 1000 + i)
    stats = store.stats()
    assert stats["compactions"] == 0 and stats["dead_lines"] == 180
    assert store.compaction_due()
    live = [s.id for s in store.segments()]
    assert store.maybe_compact() and not store.compaction_due()
    assert not store.maybe_compact()  # not due any more
    assert store.stats()["compactions"] == 1 and store.stats()["dead_lines"] == 0
    assert [json.loads(line)["id"] for line in file_lines(tmp_path)] == live
    assert [s.id for s in store.segments()] == live


# -- cross-session -----------------------------------------------------------------------------


def test_cross_session_filter(tmp_path: Path) -> None:
    store = make_store(tmp_path, session_id="s1")
    fill(store, 6, session="s1")
    fill(store, 6, session="s2")
    mine = store.visible_keys()
    assert mine is not None and {store.segment(k).session_id for k in mine} == {"s1"}
    assert store.visible_keys("s2", cross_session=True) is None
    allowed = store.allowed("s2")
    hits = store.bm25.top_k(tokenize("database migration"), 10, allowed=allowed)
    assert hits and all(store.segment(k).session_id == "s2" for k, _ in hits)
    vec = store.embedder.embed(["database"])[0]
    assert all(k in mine for k, _ in store.vectors.top_k(vec, 10, allowed=mine))
    assert store.keys_for_session("s2") == sorted(store.visible_keys("s2") or ())


@_store_settings(60)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(TEXTS), st.integers(0, 5)),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from([*TEXTS, "database", "配置", "zzz"]),
)
def test_property_no_search_returns_another_sessions_segment(
    items: list[tuple[str, str, int]], session: str, query: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp))
        store.add_many([(sid, "user", f"{text} v{n}") for sid, text, n in items])
        allowed = store.visible_keys(session)
        assert allowed is not None
        hits = hybrid_search(
            query,
            bm25=store.bm25,
            vectors=store.vectors,
            embedder=store.embedder,
            episodes=store.episodes,
            allowed=allowed,
            limit=20,
        )
        assert all(store.segment(h.key).session_id == session for h in hits)
        store.close()


# -- redaction ---------------------------------------------------------------------------------


def _secret() -> str:
    # Built at run time from the OS's randomness: a real key looks like this, and no fixed
    # value (that a rule could special-case) is ever in the source.
    return "sk-" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))


@_store_settings(100)
@given(
    st.text(max_size=200),
    st.text(max_size=200),
    st.sampled_from([" ", "\n", "=", ": ", '"', "'", "Bearer ", "api_key=", "\t"]),
)
def test_property_secrets_never_reach_any_file(before: str, after: str, sep: str) -> None:
    secret = _secret()
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp))
        store.add("s1", "tool", f"{before}{sep}{secret} {after}")
        store.add_many([("s2", "user", f"token: {secret}"), ("s1", "assistant", f"{secret}")])
        store.compact()
        store.close()
        for path in Path(tmp).rglob("*"):
            data = path.read_bytes()
            body = secret[3:].encode()
            assert secret.encode() not in data, path
            assert all(body[i : i + 16] not in data for i in range(len(body) - 15)), path


def test_redaction_can_be_disabled(tmp_path: Path) -> None:
    secret = _secret()
    store = make_store(tmp_path, redactor=None)
    store.add("s1", "user", f"key {secret}")
    assert secret.encode() in (tmp_path / "segments.jsonl").read_bytes()


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["../x", "/abs", "", "a" * 129, ".", "..", "a/b", "a b", "x\n", None]
)
def test_invalid_session_ids_are_refused(tmp_path: Path, bad: Any) -> None:
    store = make_store(tmp_path / "s")
    with pytest.raises(StoreError, match="invalid session id"):
        store.add(bad, "user", "text")
    with pytest.raises(StoreError, match=r"invalid session id|needs a session_id"):
        store.visible_keys(bad)
    if bad is not None:  # None means "no default session"
        with pytest.raises(StoreError, match="invalid session id"):
            make_store(tmp_path / "s", session_id=bad)
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("good", ["a", "s-1.2:3_x", "a" * 128, "..."])
def test_valid_session_ids(tmp_path: Path, good: str) -> None:
    assert make_store(tmp_path).add(good, "user", "text") is not None


def test_other_invalid_arguments(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    for kwargs, match in [
        ({"role": "us er"}, "invalid role"),
        ({"content": b"bytes"}, "content must be a string"),
        ({"timestamp": float("nan")}, "timestamp"),
        ({"turn": -1}, "turn"),
    ]:
        args = {"session_id": "s1", "role": "user", "content": "x", **kwargs}
        with pytest.raises(StoreError, match=match):
            store.add(**args)
    with pytest.raises(StoreError, match="store_dir"):
        RawStore("", embedder=HashEmbedder())
    with pytest.raises(StoreError, match="max_segments"):
        make_store(tmp_path, max_segments=0)
    with pytest.raises(StoreError, match="eviction_days"):
        make_store(tmp_path, eviction_days=-1)
    with pytest.raises(StoreError, match="plain name"):
        child_path(tmp_path, "../segments.jsonl")
    assert len(store) == 0


def test_store_files_cannot_escape_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    root = tmp_path / "store"
    root.mkdir()
    (root / "segments.jsonl").symlink_to(outside)
    with pytest.raises(StoreError, match="is a symlink"):
        make_store(root).add("s1", "user", "text")
    assert outside.read_text() == ""


def test_store_dir_is_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = make_store(Path("a/../b"))
    assert store.store_dir == (tmp_path / "b").resolve()


def test_a_bad_embedder_stores_nothing(tmp_path: Path) -> None:
    class Broken(CountingEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((len(texts), 3), dtype=np.float32)

    with pytest.raises(StoreError, match="shape"):
        make_store(tmp_path, embedder=Broken()).add("s1", "user", "x")
    assert not (tmp_path / "segments.jsonl").exists()


def test_threads_adding_at_once(tmp_path: Path) -> None:
    store = make_store(tmp_path)

    def work(t: int) -> None:
        for i in range(25):
            store.add(f"t{t}", "user", f"thread {t} message {i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store) == 100 == len(store.vectors) == len(store.bm25)
    store.close()
    assert len(make_store(tmp_path)) == 100


# -- tagging -----------------------------------------------------------------------------------


def test_topics_english_and_chinese() -> None:
    assert topics("Deploying to staging failed; fix the Postgres migration") == (
        "database",
        "deployment",
        "bug",
    )
    assert topics("数据库迁移失败，需要修复测试并重新部署") == (
        "database",
        "testing",
        "deployment",
        "bug",
    )
    assert topics("认证配置和性能优化，前端组件依赖升级") == (
        "auth",
        "performance",
        "config",
        "frontend",
        "dependency",
    )
    assert topics("the api endpoint returns 500") == ("api",)
    assert topics("latest contest results") == ()  # "test" inside a word is not testing
    assert topics("") == ()


def test_entities_kinds_order_and_cap() -> None:
    text = (
        "KeyError in src/memctx/_raw_store.py, see #123 and https://example.com/a/b. "
        "Postgres on localhost:5432, PORT=8080, bump to v1.2.3. Call `parse_config()` "
        "from parseConfigFile and MAX_RETRIES; api_key=[REDACTED:openai_key] and/or ok"
    )
    assert entities(text) == (
        "KeyError",
        "src/memctx/_raw_store.py",
        "#123",
        "https://example.com/a/b",
        "localhost:5432",
        "port 8080",
        "v1.2.3",
        "parse_config()",
        "parseConfigFile",
        "MAX_RETRIES",
        "api_key",
    )
    assert entities("修改 config/app.yaml 的端口，报错 ValueError") == (
        "config/app.yaml",
        "ValueError",
    )
    many = " ".join(f"Error{i}Error" for i in range(40))
    assert len(entities(many)) == MAX_ENTITIES
    assert entities(text) == entities(text)  # deterministic


# -- bm25.cache: term counts that spare a reopen the tokenizing ---------------------------------


def _scores(store: RawStore, queries: Sequence[str]) -> list[dict[int, float]]:
    return [store.bm25.scores(tokenize(q)) for q in queries]


def _hybrid_keys(store: RawStore, query: str = "database port") -> list[int]:
    found = hybrid_search(
        query,
        bm25=store.bm25,
        vectors=store.vectors,
        embedder=store.embedder,
        episodes=store.episodes,
    )
    return [hit.key for hit in found]


_QUERIES = ["database migration", "pytest auth bug", "docker staging port", "数据库 端口", "#123"]


def _counting_tokenize(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the texts a load counts terms of (instead of taking them from the cache)."""
    calls: list[str] = []
    real = TermCounter.counts

    def spy(self: TermCounter, texts: Sequence[str]) -> TermCounts:
        calls.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(TermCounter, "counts", spy)
    return calls


def test_reopen_takes_term_counts_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "STALE_MIN", 4)
    store = make_store(tmp_path)
    fill(store, 40)
    expected = _scores(store, _QUERIES)
    hits = _hybrid_keys(store)
    store.close()  # 40 segments not in a cache yet: written now
    assert (tmp_path / "bm25.cache").stat().st_mode & 0o077 == 0
    calls = _counting_tokenize(monkeypatch)
    again = make_store(tmp_path).open()
    assert calls == []  # every segment's counts came from the cache
    assert _scores(again, _QUERIES) == expected
    assert _hybrid_keys(again) == hits
    again.add("s1", "user", "a brand new line about kubernetes", timestamp=NOW)
    again.close()  # one new segment: below the threshold, the cache is left as it is
    third = make_store(tmp_path).open()
    # Counted with the date it is searched by; the stored content is the text alone.
    assert calls == [search_text("a brand new line about kubernetes", NOW)]
    top = third.bm25.top_k(tokenize("kubernetes"), 1)[0][0]
    assert third.content(top) == "a brand new line about kubernetes"


def test_a_damaged_or_foreign_cache_is_ignored_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "STALE_MIN", 4)
    store = make_store(tmp_path)
    fill(store, 20)
    expected = _scores(store, _QUERIES)
    store.close()
    cache = tmp_path / "bm25.cache"
    good = cache.read_bytes()
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0xFF
    for bad in (bytes(damaged), good[:-5], b"junk", b""):
        cache.write_bytes(bad)
        calls = _counting_tokenize(monkeypatch)
        again = make_store(tmp_path).open()
        assert len(calls) == 20 and _scores(again, _QUERIES) == expected
        assert cache.read_bytes() == good  # rewritten after the load (same store, same bytes)
        again.close()
        monkeypatch.undo()
        monkeypatch.setattr(store_module, "STALE_MIN", 4)
    monkeypatch.setattr(terms_module, "TOKENIZER_VERSION", 99)  # another tokenizer wrote it
    calls = _counting_tokenize(monkeypatch)
    make_store(tmp_path).open()
    assert len(calls) == 20


def test_cache_entries_follow_the_content_not_the_segment_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "STALE_MIN", 4)
    store = make_store(tmp_path)
    fill(store, 12)
    store.close()
    lines = file_lines(tmp_path)
    record = json.loads(lines[3])
    del record["crc"]  # an edited record drops its checksum
    record["content"] = "hand edited: now about zeppelins"
    lines[3] = json.dumps(record).encode()
    (tmp_path / "segments.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    calls = _counting_tokenize(monkeypatch)
    again = make_store(tmp_path).open()
    # Only the changed line is counted again (with the date it is searched by).
    assert calls == [search_text("hand edited: now about zeppelins", record["timestamp"])]
    assert again.get(again.bm25.top_k(tokenize("zeppelins"), 1)[0][0]).id == record["id"]


def test_appends_fsync_only_when_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    for durable in (False, True):
        store = make_store(tmp_path / str(durable), durable=durable)
        store.add("s1", "user", "first line creates the files", timestamp=NOW)
        monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
        store.add("s1", "user", "a second line", timestamp=NOW)
        monkeypatch.undo()
        # durable: segments.jsonl once, vectors.bin twice (entries, then the count)
        assert len(synced) == (3 if durable else 0)
        synced.clear()
        store.close()


def test_contents_stay_right_while_the_content_cache_evicts_by_size(tmp_path: Path) -> None:
    # Segments whose contents together exceed the read cache's character bound (one alone
    # exceeds it): read back in turn, again and again, each is always its own text.
    store = RawStore(tmp_path, embedder=HashEmbedder(), redactor=None, eviction_days=None)
    sizes = [1_400_000, 1_400_000, 1_400_000, 4_500_000, 30, 30_000]
    texts = [f"part{i} " + "xyz"[i % 3] * size for i, size in enumerate(sizes)]
    segments = store.add_many([{"session_id": "s", "role": "tool", "content": t} for t in texts])
    keys: list[int] = []
    for segment in segments:
        key = store.key_of(segment.id) if segment is not None else None
        assert key is not None
        keys.append(key)
    for round_ in range(3):
        order = list(range(len(texts)))[round_:] + list(range(len(texts)))[:round_]
        for i in order + order[::-1]:
            assert store.content(keys[i]) == texts[i]
    store.close()
