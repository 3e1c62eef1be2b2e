"""A writer process for ``tests/store/test_raw_store_faults.py``.

Usage::

    python raw_store_writer.py STORE_DIR SESSION COUNT [BATCH] [wait]

Opens a :class:`memctx.store.RawStore` on ``STORE_DIR``, prints ``ready``; with ``wait``,
waits for one line on stdin (the parent's start barrier, released once every writer is
ready), then archives ``COUNT`` segments of session ``SESSION``, ``BATCH`` per ``add_many``
call, and prints each stored segment's id on its own line, flushed, as soon as the call has
returned. The parent knows that every id it read was acknowledged by the store before
whatever happens next (e.g. SIGKILL).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from memctx.retrieval.embeddings import HashEmbedder
from memctx.store.raw.store import RawStore

_WORDS = "alpha beta gamma delta schema migration pytest deploy cache token latency".split()


def content(session: str, index: int) -> str:
    """A deterministic, unique message of a few hundred characters."""
    body = " ".join(_WORDS[(index * 7 + k) % len(_WORDS)] for k in range(40 + index % 60))
    return f"{session} message {index}: {body}"


def main() -> None:
    store_dir, session, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    wait = len(sys.argv) > 5 and sys.argv[5] == "wait"
    store = RawStore(store_dir, embedder=HashEmbedder(), eviction_days=None).open()
    print("ready", flush=True)
    if wait:
        sys.stdin.readline()
    for start in range(0, count, batch):
        stop = min(count, start + batch)
        items = [(session, "user", content(session, i)) for i in range(start, stop)]
        for seg in store.add_many(items):
            if seg is not None:
                print(seg.id, flush=True)
    store.close()


if __name__ == "__main__":
    main()
