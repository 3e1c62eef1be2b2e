"""Raw store capacity shared fairly: eviction takes from the largest session first, and one
message keeps at most ``max(1,000, 5 % of maxSegments)`` segments (its head and tail)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memctx.retrieval.embeddings import HashEmbedder
from memctx.store.raw.quota import MessageRun, message_key, message_quota, plan_batch
from memctx.store.raw.records import SegmentInfo
from memctx.store.raw.store import RawStore

NOW = 1_750_000_000.0
DAY = 86_400.0


def make_store(path: Path, **kw: Any) -> RawStore:
    kw.setdefault("embedder", HashEmbedder())
    kw.setdefault("clock", lambda: NOW)
    return RawStore(path, **kw)


def chunks(n: int, session: str = "big", turn: int = 7, stamp: float = NOW) -> list[dict[str, Any]]:
    """``n`` chunks of one tool message, as the runtime's archive gives them."""
    return [
        {
            "session_id": session,
            "role": "tool",
            "content": f"chunk {i} of the build log: step {i} compiled module_{i}.o",
            "timestamp": stamp,
            "turn": turn,
        }
        for i in range(n)
    ]


def fill_sessions(store: RawStore, sessions: int, per: int, t0: float) -> dict[str, set[str]]:
    ids: dict[str, set[str]] = {}
    for s in range(sessions):
        stored = store.add_many(
            [
                {
                    "session_id": f"other{s}",
                    "role": "user",
                    "content": f"session {s} note {i} about topic {i % 7}",
                    "timestamp": t0 + i,
                    "turn": i,
                }
                for i in range(per)
            ]
        )
        ids[f"other{s}"] = {seg.id for seg in stored if seg is not None}
    return ids


def test_the_bound() -> None:
    assert message_quota(20_000) == 1_000  # the default maxSegments
    assert message_quota(100_000) == 5_000  # 5 % of a larger store
    assert message_quota(50) == 1_000  # a small store: fair eviction does the rest


def test_one_huge_message_evicts_no_other_session(tmp_path: Path) -> None:
    # The attack at the default maxSegments: a ~20 MB tool output cut into 19,872 chunks.
    store = make_store(tmp_path, eviction_days=None)
    others = fill_sessions(store, 3, 100, NOW - 10 * DAY)
    big = chunks(19_872)
    stored = store.add_many(big)
    kept = [seg for seg in stored if seg is not None]
    assert len(kept) == 1_000
    assert [s.content for s in kept] == [c["content"] for c in big[:500] + big[-500:]]
    assert store.stats()["message_chunks_dropped"] == 18_872
    for session, ids in others.items():  # every other session keeps every segment
        assert {store.segment(k).id for k in store.keys_for_session(session)} == ids
    store.close()
    again = make_store(tmp_path, eviction_days=None)
    assert len(again) == 1_300 and len(again.keys_for_session("big")) == 1_000


def test_a_message_added_chunk_by_chunk_keeps_its_head_and_latest_tail(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_segments=4_000, eviction_days=None)  # quota 1,000
    big = chunks(2_500)
    for i in range(0, len(big), 100):
        store.add_many(big[i : i + 100])
    contents = [s.content for s in store.segments()]
    assert contents == [c["content"] for c in big[:500] + big[-500:]]
    assert store.stats()["message_chunks_dropped"] == 1_500
    store.close()
    assert [s.content for s in make_store(tmp_path, max_segments=4_000).segments()] == contents


def test_separate_messages_are_not_capped(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_segments=4_000, eviction_days=None)
    items = [{**c, "turn": i} for i, c in enumerate(chunks(1_500))]  # 1,500 messages, 1 chunk
    assert all(seg is not None for seg in store.add_many(items))
    tuples = [("s2", "user", f"plain note {i}") for i in range(1_200)]  # no turn: each alone
    assert all(seg is not None for seg in store.add_many(tuples))
    assert store.stats()["message_chunks_dropped"] == 0


def test_capacity_evicts_from_the_largest_session_first(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_segments=60, eviction_days=None)
    others = fill_sessions(store, 2, 20, NOW - 5 * DAY)  # older than everything after
    for i in range(100):  # a busy session, one message at a time
        store.add("busy", "user", f"busy note {i}", timestamp=NOW + i, turn=i)
    assert len(store) == 60
    sizes = {s: len(store.keys_for_session(s)) for s in ("other0", "other1", "busy")}
    assert sizes == {"other0": 20, "other1": 20, "busy": 20}  # a fair share each
    busy = [store.get(k).content for k in store.keys_for_session("busy")]
    assert busy == [f"busy note {i}" for i in range(80, 100)]  # its own oldest went first
    for session, ids in others.items():
        assert {store.segment(k).id for k in store.keys_for_session(session)} == ids
    # Beyond the fair share, the larger sessions give up their oldest segments.
    for i in range(30):
        store.add("other0", "user", f"late other0 note {i}", timestamp=NOW + 200 + i, turn=i)
    sizes = {s: len(store.keys_for_session(s)) for s in ("other0", "other1", "busy")}
    assert sizes == {"other0": 20, "other1": 20, "busy": 20}
    contents = [store.get(k).content for k in store.keys_for_session("other0")]
    assert contents == [f"late other0 note {i}" for i in range(10, 30)]
    live = {s.id for s in store.segments()}
    store.close()
    assert {s.id for s in make_store(tmp_path, max_segments=60).segments()} == live


def test_age_still_evicts_every_session_oldest_first(tmp_path: Path) -> None:
    now = [NOW]
    store = make_store(tmp_path, eviction_days=10, clock=lambda: now[0])
    store.add("small", "user", "small old note", timestamp=NOW - 9 * DAY, turn=1)
    for i in range(5):
        store.add("large", "user", f"large note {i}", timestamp=NOW - (8.5 - i) * DAY, turn=i)
    now[0] = NOW + 2 * DAY  # the small session's note and the oldest large ones age out
    store.visible_keys(cross_session=True)
    assert store.keys_for_session("small") == []
    assert [store.get(k).content for k in store.keys_for_session("large")] == [
        "large note 1",
        "large note 2",
        "large note 3",
        "large note 4",
    ]


@pytest.mark.parametrize("batch", [1, 7, 64, 1_000])
def test_planned_batches_keep_what_indexing_keeps(batch: int) -> None:
    # A writer never writes what indexing would set aside; indexing (file order, as at a
    # reopen) keeps the head and the latest tail of every message, whatever the batches.
    def info(stamp: float, turn: int | None) -> SegmentInfo:
        return SegmentInfo("id", "s", stamp, "tool", 1, turn, (), ())

    infos = [info(1.0, 3)] * 23 + [info(1.0, None)] * 2 + [info(2.0, 4)] * 4
    messages = [message_key(i) for i in infos]
    run = MessageRun(10)
    written: list[int] = []
    set_aside: list[int] = []
    for start in range(0, len(infos), batch):
        part = messages[start : start + batch]
        for i, keep in enumerate(plan_batch(part, run)):
            if keep:
                written.append(start + i)
                over = run.add(infos[start + i], start + i)
                if over is not None:
                    set_aside.append(over)
    assert sorted(set(written) - set(set_aside)) == [*range(5), *range(18, 29)]
    reopened = MessageRun(10)  # the same records indexed again, in file order
    again = {reopened.add(infos[i], i) for i in written}
    assert sorted(set(written) - again) == [*range(5), *range(18, 29)]
