"""Measure where a minimum hybrid score would cut, on LoCoMo (hash or transformer).

For every conversation: archive its turns, ask its own questions (categories 1-4) and record
the score of each evidence hit in the top 50 ("relevant"); ask the questions of the *other*
conversations and record the best score ("off-topic": nothing there should be recalled).
Prints, per threshold, the share of evidence hits kept and of off-topic queries that would
still inject something. Usage: python scripts/measure_min_score.py [hash|transformer]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from memctx.bench.locomo.methods import archive_conversation
from memctx.harness.locomo import load_locomo
from memctx.retrieval.embeddings import make_embedder
from memctx.store.memory_search import search_store

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo7.json"


def main(kind: str) -> None:
    convs = load_locomo(DATA)
    embedder = make_embedder(kind, cache_path=Path(".cache") / "memctx" / f"embeddings-{kind}.bin")  # type: ignore[arg-type]
    relevant: list[float] = []
    off_topic: list[float] = []
    with tempfile.TemporaryDirectory() as root:
        for conv in convs:
            store, turn_of_key = archive_conversation(conv, embedder, Path(root))
            ids = {t.index: t.dia_id for t in conv.turns}
            for q in conv.questions:
                if q.category not in (1, 2, 3, 4):
                    continue
                hits = search_store(store, q.question, limit=50, cross_session=True)
                ev = set(q.evidence)
                relevant += [h.score for h in hits if ids[turn_of_key[h.key]] in ev]
            for other in convs:
                if other is conv:
                    continue
                for q in other.questions[::4]:
                    hits = search_store(store, q.question, limit=1, cross_session=True)
                    off_topic.append(hits[0].score if hits else 0.0)
    rel, off = np.array(relevant), np.array(off_topic)
    print(f"{kind}: {len(rel)} evidence hits, {len(off)} off-topic queries")
    print("threshold  evidence kept  off-topic injecting")
    for t in (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7):
        print(f"{t:9.2f}  {np.mean(rel >= t):13.1%}  {np.mean(off >= t):19.1%}")
    print("percentiles relevant 5/25/50:", np.percentile(rel, [5, 25, 50]).round(3))
    print("percentiles off-topic 50/90/99:", np.percentile(off, [50, 90, 99]).round(3))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "hash")
