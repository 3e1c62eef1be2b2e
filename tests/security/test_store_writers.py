"""Issue 26, item 3: many writers, one truth.

The attack as the issue lists it: two processes archive into one store at the same time,
one with the transformer and one with hash. ``vectors.bin`` ended up holding both
embedders' vectors while ``vectors.meta.json`` named one, and a reader found only 2-5 of 40
facts the other process wrote, even by exact query. Now a writer re-checks the metadata
under the store lock before every append and refuses (a clear :class:`StoreError`) to add
vectors to a file another embedder owns; every fact a writer acknowledged is found.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.embedder_writer import OtherHashEmbedder, fact

from memctx.errors import StoreError
from memctx.retrieval import HashEmbedder
from memctx.store import RawStore, search_store, vmem_status
from memctx.store.raw.records import vector_text
from memctx.store.vmem import read_vmem

WRITER = Path(__file__).resolve().parents[1] / "helpers" / "embedder_writer.py"
FACTS = 40


def _run_writers(store: Path, kinds: dict[str, str]) -> dict[str, tuple[set[int], list[str]]]:
    """Start one writer per session at once (after all are ready); per session, the facts it
    acknowledged and the refusals it printed."""
    procs = {
        session: subprocess.Popen(
            [sys.executable, str(WRITER), str(store), session, str(FACTS), kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for session, kind in kinds.items()
    }
    for session, proc in procs.items():
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", (
            f"{session}: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    for proc in procs.values():  # the start barrier: both go at once
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    out: dict[str, tuple[set[int], list[str]]] = {}
    for session, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        acked = {int(line.split()[1]) for line in stdout.splitlines() if line.startswith("ok ")}
        refused = [line for line in stdout.splitlines() if line.startswith("refused ")]
        out[session] = (acked, refused)
    return out


def _meta(store: Path) -> tuple[str, str, int]:
    meta = json.loads((store / "vectors.meta.json").read_text())
    return meta["embedder"], meta["version"], meta["dim"]


def _check_one_embedder(store: Path, owner_is_hash: bool) -> None:
    """Every vector in ``vectors.bin`` is the embedding of its segment by the embedder the
    metadata names (checked against the hash embedder: equal for a hash owner, unlike it
    for a transformer owner)."""
    assert vmem_status(store / "vectors.bin", 384) is None
    ids, matrix = read_vmem(store / "vectors.bin", 384)
    text_of = {}
    for line in (store / "segments.jsonl").read_text().splitlines():
        rec = json.loads(line)
        text_of[rec["id"]] = vector_text(rec["content"])
    hashed = HashEmbedder().embed([text_of[str(i)] for i in ids])
    same = np.isclose(np.sum(hashed * matrix, axis=1), 1.0, atol=1e-4)
    if owner_is_hash:
        assert same.all(), f"{(~same).sum()} of {len(ids)} vectors are not the hash embedder's"
    else:
        assert not same.any(), f"{same.sum()} of {len(ids)} hash vectors in a transformer file"


def _reader_finds(store: Path, embedder: object, sessions: dict[str, set[int]]) -> None:
    """A fresh reader finds every acknowledged fact, by exact query, as the best hit."""
    with RawStore(store, embedder=embedder, eviction_days=None) as reader:
        for session, acked in sessions.items():
            for index in sorted(acked):
                text = fact(session, index)
                hits = search_store(reader, text, limit=1, cross_session=True)
                assert hits, f"nothing found for {text!r}"
                assert reader.content(hits[0].key) == text, f"lost: {text!r}"


def test_two_writers_with_two_embedders_of_one_dimension_never_mix(tmp_path: Path) -> None:
    store = tmp_path / "store"
    result = _run_writers(store, {"alpha": "hash", "beta": "other-hash"})
    (a_acked, a_refused), (b_acked, b_refused) = result["alpha"], result["beta"]
    owner = _meta(store)[0]
    assert owner in ("hash", "other-hash")
    loser, loser_refused = ("beta", b_refused) if owner == "hash" else ("alpha", a_refused)
    # The writer whose embedder does not own the store is refused with a message that names
    # both embedders and the fix; the owner's facts are all stored.
    winner_acked = a_acked if owner == "hash" else b_acked
    assert len(winner_acked) == FACTS
    for line in loser_refused:
        assert "'hash'" in line and "'other-hash'" in line and "same embedding model" in line, line
    assert len(a_acked) + len(a_refused) == FACTS and len(b_acked) + len(b_refused) == FACTS
    assert len(loser_refused) == FACTS  # never one vector of the second embedder
    # One embedder's vectors in the file (hash and other-hash vectors are equal, so the
    # file's consistency is checked by the reader below and by the metadata).
    _check_one_embedder(store, owner_is_hash=True)
    reader_embedder = HashEmbedder() if owner == "hash" else OtherHashEmbedder()
    _reader_finds(store, reader_embedder, {"alpha": a_acked, "beta": b_acked})
    assert loser in ("alpha", "beta")


def test_an_append_after_another_embedder_took_the_store_is_refused(tmp_path: Path) -> None:
    """The in-process form of the race: A opens, B opens and writes, A appends."""
    store = tmp_path / "store"
    first = RawStore(store, embedder=HashEmbedder(), eviction_days=None).open()
    second = RawStore(store, embedder=OtherHashEmbedder(), eviction_days=None).open()
    assert second.add("s2", "user", "the zebrafish port is 7443") is not None
    with pytest.raises(StoreError, match=r"'other-hash'.*'hash'.*same embedding model"):
        first.add("s1", "user", "the zebrafish host is fish-01")
    with pytest.raises(StoreError, match="same embedding model"):
        first.compact()  # nor does a compaction rewrite the file with its own vectors
    assert _meta(store)[0] == "other-hash"
    ids, _ = read_vmem(store / "vectors.bin", 384)
    assert len(ids) == 1  # the refused append wrote nothing: no line, no vector
    assert len((store / "segments.jsonl").read_text().splitlines()) == 1
    # Reopening is what switches a store to another embedder: a whole, consistent rebuild.
    first.close()
    reopened = RawStore(store, embedder=HashEmbedder(), eviction_days=None).open()
    assert reopened.add("s1", "user", "the zebrafish host is fish-01") is not None
    assert _meta(store)[0] == "hash"
    _check_one_embedder(store, owner_is_hash=True)
    second.close()
    reopened.close()


def test_a_reader_does_not_take_another_embedders_vectors_on_refresh(tmp_path: Path) -> None:
    """A process whose embedder lost the store (another one opened it and rebuilt it with
    its own) re-embeds what that one appends, in memory, instead of taking its vectors."""
    store = tmp_path / "store"
    with RawStore(store, embedder=HashEmbedder(), eviction_days=None) as seed:
        seed.add("s1", "user", "the zebrafish port is 7443")
    reader = RawStore(store, embedder=HashEmbedder(), eviction_days=None).open()
    writer = RawStore(store, embedder=_Reversed(), eviction_days=None).open()  # rebuilds it
    assert _meta(store)[0] == "reversed-hash"
    added = writer.add("s1", "user", "the zebrafish host is fish-01")
    assert added is not None
    assert reader.refresh() == 1
    key = reader.key_for(added.id)
    assert key is not None
    want = HashEmbedder().embed([vector_text(added.content)])[0]
    assert np.allclose(reader.vectors.get(key), want, atol=1e-5), (
        "the reader took the other embedder's vector from the file"
    )
    with pytest.raises(StoreError, match="same embedding model"):
        reader.add("s1", "user", "the zebrafish region is eu-west")
    reader.close()
    writer.close()


class _Reversed(HashEmbedder):
    """Hash vectors reversed: unit vectors a reader must not mistake for its own."""

    name = "reversed-hash"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ascontiguousarray(super().embed(texts)[:, ::-1])


@pytest.mark.slow
def test_transformer_and_hash_writers_at_once_never_mix(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    store = tmp_path / "store"
    result = _run_writers(store, {"alpha": "transformer", "beta": "hash"})
    (a_acked, a_refused), (b_acked, b_refused) = result["alpha"], result["beta"]
    owner = _meta(store)[0]
    assert owner in ("transformer", "hash")
    _check_one_embedder(store, owner_is_hash=owner == "hash")
    assert len(a_acked) + len(a_refused) == FACTS and len(b_acked) + len(b_refused) == FACTS
    for line in a_refused + b_refused:
        assert "'transformer'" in line and "'hash'" in line, line
    # The reader embeds with hash: if the transformer owns the store it re-embeds on open.
    _reader_finds(store, HashEmbedder(), {"alpha": a_acked, "beta": b_acked})
