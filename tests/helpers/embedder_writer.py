"""A writer process for ``tests/security/test_store_writers.py``: one embedder, one store.

Usage::

    python embedder_writer.py STORE_DIR SESSION COUNT EMBEDDER

``EMBEDDER`` is ``hash`` (:class:`HashEmbedder`, 384-dim), ``other-hash`` (the same vectors
under another name: a second embedder of the same dimension whose difference only the
metadata can tell) or ``transformer`` (all-MiniLM-L6-v2, 384-dim). Opens a
:class:`memctx.store.RawStore` on ``STORE_DIR``, prints ``ready``, waits for one line on
stdin (the parent's start barrier, released once every writer is ready), then archives
``COUNT`` facts of ``SESSION`` one ``add`` at a time, printing ``ok <index>`` for each one the
store acknowledged and ``refused <index> <message>`` for each it refused, flushed at once.
It lives here, not in the test module, so that the writers start without importing pytest.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from memctx.errors import StoreError
from memctx.retrieval.embeddings import HashEmbedder, TransformerEmbedder
from memctx.store.raw.store import RawStore


class OtherHashEmbedder(HashEmbedder):
    """Hash vectors under another name: what a second, same-dimension embedder looks like
    to the store (only ``vectors.meta.json`` can tell them apart)."""

    name = "other-hash"


def fact(session: str, index: int) -> str:
    """A unique fact with a unique code word, found by exact query."""
    code = f"{session}-code-{index:03d}"
    return f"{session} fact {index}: the {code} service listens on port {7000 + index}"


def make(kind: str) -> object:
    if kind == "hash":
        return HashEmbedder()
    if kind == "other-hash":
        return OtherHashEmbedder()
    if kind == "transformer":
        emb = TransformerEmbedder(batch_size=32)
        emb.load()
        return emb
    raise SystemExit(f"unknown embedder {kind!r}")


def main() -> None:
    store_dir, session, count, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = RawStore(store_dir, embedder=make(kind), eviction_days=None).open()
    print("ready", flush=True)
    sys.stdin.readline()
    for index in range(count):
        try:
            seg = store.add(session, "user", fact(session, index))
        except StoreError as exc:
            print(f"refused {index} {str(exc).replace(chr(10), ' ')}", flush=True)
            continue
        if seg is not None:
            print(f"ok {index}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
