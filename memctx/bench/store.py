"""The raw store at full size (issue 3, "Performance"): search, add, reopen, memory.

``python -m memctx.bench.store`` (and ``make bench``) builds a 20,000-segment store of
seeded coding-session text (:mod:`memctx.bench.corpus`) in a temporary directory and
prints one line per figure: value, target, PASS/MISS, and the speed-up against the seed's
naive approach measured in the same run (``rank_bm25.BM25Okapi`` rebuilt on every add plus
a Python loop computing one cosine per stored vector).

What each figure measures:

- **search**: :func:`memctx.store.memory_search.search_store` (hybrid: BM25 + cosine, neighbour
  smoothing, episode boost, limit 10) over every session (``cross_session``: all 20,000
  segments are candidates), p50 and p95 over 200 seeded queries asked three times; one
  session's view too; and the p50 again in the fresh process of the reopen below.
- **add**: :meth:`RawStore.add`, one segment per call as an agent archives, on the full
  store (each add evicts the oldest segment), amortised over one compaction cycle: every
  add until the one that compacts the file, included (2,001 at 20,000 segments); and
  :meth:`RawStore.add_many` in batches of 100. Both include redaction, tagging, hash
  embedding, the JSONL append and the ``vectors.bin`` append (``durable=False``).
- **reopen** and **memory**: a fresh interpreter opens the closed store and runs a first
  search (``vectors.bin`` healthy, so nothing is embedded), then 99 more; its peak RSS
  (its own: ``VmHWM``, :func:`memctx.bench.peak.own_peak_mb`) is the store's resident
  memory, printed next to the RSS of the bare interpreter with memctx imported. The
  reopen is also timed without ``bm25.cache`` (the first open after a crash), when every
  segment's terms are counted again.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .corpus import T_END, make_corpus, make_queries
from .peak import child_env, run_case_process

__all__ = ["CountingEmbedder", "run_store_bench"]


class CountingEmbedder:
    """Hash embeddings that count the texts embedded (a healthy reopen embeds none)."""

    def __init__(self, dim: int = 384) -> None:
        from memctx.retrieval import HashEmbedder

        self.inner = HashEmbedder(dim)
        self.name, self.dim, self.version = self.inner.name, dim, self.inner.version
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.embed(texts)


def _pct(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _report(
    out: dict[str, Any], key: str, label: str, value: float, unit: str, target: float | None
) -> str:
    """Print one figure: value, target, PASS/MISS; returns the verdict ('' without target)."""
    out[key] = value
    verdict = ""
    shown = f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    line = f"  {label:<46} {shown:>9} {unit:<4}"
    if target is not None:
        verdict = "PASS" if value <= target else "MISS"
        out[f"{key}_pass"] = verdict == "PASS"
        line += f" target <= {target:g} {unit:<4} {verdict}"
    print(line, flush=True)
    return verdict


_REOPEN_SCRIPT = r"""
import json, sys, time
from memctx.bench.corpus import T_END, make_queries
from memctx.bench.peak import own_peak_mb
from memctx.bench.store import CountingEmbedder
from memctx.store.memory_search import search_store
from memctx.store.raw.store import RawStore
base = own_peak_mb()
directory, seed, searches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
queries = make_queries(searches, seed)
embedder = CountingEmbedder()
start = time.perf_counter()
store = RawStore(directory, embedder=embedder, clock=lambda: T_END + 86_400.0).open()
embedded = embedder.texts  # segments re-embedded by the load (0 with a healthy vectors.bin)
search_store(store, queries[0], limit=10, cross_session=True)
reopen = time.perf_counter() - start
times = []
for q in queries[1:]:
    t = time.perf_counter()
    search_store(store, q, limit=10, cross_session=True)
    times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({"reopen_s": reopen, "embedded": embedded, "segments": len(store),
                  "base_mb": base, "peak_mb": own_peak_mb(),
                  "search_p50_s": times[len(times) // 2] if times else None}))
"""


def _reopen_in_fresh_process(directory: Path, seed: int, searches: int = 100) -> dict[str, Any]:
    # A fresh interpreter: no warm tokenizer caches, and a peak of its own (VmHWM, see
    # memctx.bench.peak: ru_maxrss would carry this process's larger peak across exec).
    args = [sys.executable, "-c", _REOPEN_SCRIPT, str(directory), str(seed), str(searches)]
    return run_case_process(args, env=child_env(), timeout=300)


def _naive_baseline(
    tokens: list[list[str]],
    vectors: np.ndarray,
    new_tokens: list[list[str]],
    query_tokens: list[list[str]],
    query_vectors: np.ndarray,
    directory: Path,
) -> tuple[float, float]:
    """Seconds per add and per search of the seed's naive approach at ``len(tokens)`` docs.

    Add: append the JSONL line and the vector, then rebuild ``BM25Okapi`` over every
    document. Search: ``BM25Okapi.get_scores``, one cosine per stored vector in a Python
    loop (numpy per vector, the kindest reading of "Python loop"), max-normalised BM25,
    0.7/0.3 mix, top 10.
    """
    from rank_bm25 import BM25Okapi

    corpus = list(tokens)
    rows = [np.asarray(v, dtype=np.float32) for v in vectors]
    path = directory / "naive.jsonl"
    add_times = []
    bm25 = BM25Okapi(corpus)
    for toks in new_tokens:
        start = time.perf_counter()
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"content": " ".join(toks)}) + "\n")
        rows.append(rows[len(rows) % len(tokens)])
        corpus.append(toks)
        bm25 = BM25Okapi(corpus)
        add_times.append(time.perf_counter() - start)
    search_times = []
    for q_tok, q_vec in zip(query_tokens, query_vectors, strict=True):
        start = time.perf_counter()
        text = bm25.get_scores(q_tok)
        best = float(text.max()) if len(text) else 0.0
        q_norm = float(np.linalg.norm(q_vec)) or 1.0
        scored = []
        for i, row in enumerate(rows):
            cos = float(np.dot(row, q_vec)) / ((float(np.linalg.norm(row)) or 1.0) * q_norm)
            bm = float(text[i]) / best if best > 0 else 0.0
            scored.append((0.7 * cos + 0.3 * bm, i))
        scored.sort(reverse=True)
        _ = scored[:10]
        search_times.append(time.perf_counter() - start)
    return statistics.median(add_times), statistics.median(search_times)


def _time_each(fn: Callable[[Any], object], items: Sequence[Any]) -> list[float]:
    times = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - start)
    return times


def _add_until_compaction(store: Any, items: Sequence[dict[str, Any]]) -> list[float]:
    """Seconds of each :meth:`RawStore.add` (one segment per call, as an agent archives),
    until the add that compacts the file, included."""
    before = store.stats()["compactions"]
    times = []
    for item in items:
        start = time.perf_counter()
        store.add(**item)
        times.append(time.perf_counter() - start)
        if store.stats()["compactions"] > before:  # outside the timing: a refresh, a stat
            return times
    raise RuntimeError(f"{len(items)} adds did not compact the store; the benchmark needs more")


def _embedding_figures(out: dict[str, Any], texts: list[str]) -> None:
    from memctx.retrieval import (
        CachedEmbedder,
        EmbeddingUnavailable,
        HashEmbedder,
        TransformerEmbedder,
    )

    sentences = [t[:200] for t in texts[:64]]
    hashed = CachedEmbedder(HashEmbedder())
    first = _time_each(lambda _: hashed.embed(sentences), [0])[0]
    second = statistics.median(_time_each(lambda _: hashed.embed(sentences), range(5)))
    out["hash_cache_speedup"] = first / second
    print(
        f"  {'hash embedding, 64 sentences: cached vs not':<46} {second * 1e3:>9.2f} ms   "
        f"vs {first * 1e3:.1f} ms -> {first / second:.0f}x faster on a cache hit"
    )
    model = TransformerEmbedder(batch_size=32)
    try:
        model.load()
    except EmbeddingUnavailable as exc:
        print(f"  transformer embeddings: skipped, the model cannot load ({exc})")
        return
    model.embed(sentences[:32])  # first real batch: lazy allocations, thread pools
    seconds = statistics.median(_time_each(lambda _: model.embed(sentences), range(3)))
    out["transformer_sentences_per_s"] = len(sentences) / seconds
    print(
        f"  {'transformer throughput (batch 32, 64 sentences)':<46} "
        f"{len(sentences) / seconds:>9.0f} sentences/s ({seconds * 1e3:.0f} ms a pass)"
    )
    cached = CachedEmbedder(model)
    first = _time_each(lambda _: cached.embed(sentences), [0])[0]
    second = statistics.median(_time_each(lambda _: cached.embed(sentences), range(5)))
    out["transformer_cache_speedup"] = first / second
    print(
        f"  {'transformer, 64 sentences: cached vs not':<46} {second * 1e3:>9.2f} ms   "
        f"vs {first * 1e3:.0f} ms -> {first / second:,.0f}x faster on a cache hit"
    )
    # The larger model transformerModel offers, on the same sentences: what its accuracy
    # costs in embedding time, as a ratio to MiniLM's measured just above.
    larger = TransformerEmbedder(batch_size=32, model="all-mpnet-base-v2")
    try:
        larger.load()
    except EmbeddingUnavailable as exc:
        print(f"  all-mpnet-base-v2: skipped, the model cannot load ({exc})")
        return
    larger.embed(sentences[:32])
    slow = statistics.median(_time_each(lambda _: larger.embed(sentences), range(3)))
    out["mpnet_sentences_per_s"] = len(sentences) / slow
    out["mpnet_time_ratio"] = slow / seconds
    print(
        f"  {'all-mpnet-base-v2 throughput (the same 64)':<46} "
        f"{len(sentences) / slow:>9.0f} sentences/s -> {slow / seconds:.1f}x MiniLM's time"
    )


def _files(directory: Path) -> str:
    sizes = {p.name: p.stat().st_size for p in sorted(directory.iterdir()) if p.is_file()}
    return ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in sizes.items() if size)


def run_store_bench(n: int = 20_000, seed: int = 0) -> dict[str, Any]:
    """Build an ``n``-segment store, measure it against the targets and the naive baseline.

    Prints one line per figure and returns them (in the printed units), with ``*_pass``
    booleans for the figures with a target and the ``*_speedup`` ratios.
    """
    from memctx.store import RawStore, search_store
    from memctx.text import tokenize

    out: dict[str, Any] = {"n": n, "seed": seed}
    # Single adds run until the first compaction they trigger (2,001 at n = 20,000: dead
    # lines must pass 10% of the live ones), so the mean is over one whole compaction cycle.
    max_single, batch, n_batches = n // 5 + 1_000, 100, 21
    started = time.perf_counter()
    items = make_corpus(n + max_single + batch * n_batches, seed)
    base, singles, batched = items[:n], items[n : n + max_single], items[n + max_single :]
    queries = make_queries(200, seed)
    chars = statistics.mean(len(it["content"]) for it in base)
    sessions = sorted({it["session_id"] for it in base})
    with tempfile.TemporaryDirectory(prefix="memctx-bench-") as tmp:
        directory = Path(tmp) / "store"
        store = RawStore(
            directory, embedder=CountingEmbedder(), max_segments=n, clock=lambda: T_END + 86_400.0
        )
        start = time.perf_counter()
        for i in range(0, n, 500):
            store.add_many(base[i : i + 500])
        build = time.perf_counter() - start
        store.close()  # as a session ends: writes bm25.cache
        print(
            f"  store: {n:,} segments of {chars:.0f} chars on average ({len(sessions)} sessions), "
            f"hash embeddings, seed {seed}; built with add_many(500) in {build:.1f} s",
            flush=True,
        )

        def search_all(query: str) -> object:
            return search_store(store, query, limit=10, cross_session=True)

        _time_each(search_all, queries[:5])  # the first reopens the store; warm-up
        times = _time_each(search_all, queries * 3)  # 3 rounds: less at the mercy of a hiccup
        p50, p95 = _pct(times, 50) * 1e3, _pct(times, 95) * 1e3
        own = [(q, sessions[i % len(sessions)]) for i, q in enumerate(queries)]
        own_times = _time_each(
            lambda qs: search_store(store, qs[0], limit=10, session_id=qs[1]), own
        )
        add_times = _add_until_compaction(store, singles)
        n_single, single_compactions = len(add_times), store.stats()["compactions"]
        many_times = _time_each(
            store.add_many, [batched[i : i + batch] for i in range(0, len(batched), batch)]
        )
        batch_compactions = store.stats()["compactions"] - single_compactions
        vecs = store.vectors.vectors()[:n].copy()
        store.close()
        files = _files(directory)

        # The first open after a crash: no bm25.cache (it writes a new one at the end).
        (directory / "bm25.cache").unlink(missing_ok=True)
        cold = _reopen_in_fresh_process(directory, seed, searches=1)
        fresh = _reopen_in_fresh_process(directory, seed)

        print("  naive baseline (BM25Okapi rebuilt per add + Python-loop cosine) ...", flush=True)
        naive_add, naive_search = _naive_baseline(
            [tokenize(it["content"]) for it in base],
            vecs,
            [tokenize(it["content"]) for it in singles[:3]],
            [tokenize(q) for q in queries[:20]],
            CountingEmbedder().embed(queries[:20]),
            Path(tmp),
        )
        shutil.rmtree(directory, ignore_errors=True)

    add_mean = statistics.mean(add_times) * 1e3
    many_mean = sum(many_times) / len(batched) * 1e3
    search_ratio = naive_search * 1e3 / p50
    add_ratio = naive_add * 1e3 / add_mean
    out["search_speedup"], out["add_speedup"] = search_ratio, add_ratio
    print(f"  files: {files}")
    print(f"\n  {'figure':<46} {'value':>9} {'':<4} target")
    _report(out, "search_p50_ms", f"hybrid search p50 (all {n:,} visible)", p50, "ms", 5)
    _report(out, "search_p95_ms", f"hybrid search p95 (all {n:,} visible)", p95, "ms", 15)
    if fresh.get("search_p50_s"):
        fresh50 = fresh["search_p50_s"] * 1e3
        _report(
            out,
            "fresh_search_p50_ms",
            "  same p50 in the freshly reopened process",
            fresh50,
            "ms",
            5,
        )
    own50, own95 = _pct(own_times, 50) * 1e3, _pct(own_times, 95) * 1e3
    _report(out, "session_search_p50_ms", "hybrid search p50 (one session)", own50, "ms", 5)
    _report(out, "session_search_p95_ms", "hybrid search p95 (one session)", own95, "ms", 15)
    _report(out, "add_ms", f"add one, amortised ({n_single:,} adds, full store)", add_mean, "ms", 2)
    print(f"  {'':<46} ({single_compactions} compaction included: the one these adds caused)")
    _report(out, "add_p50_ms", "add one, p50", _pct(add_times, 50) * 1e3, "ms", None)
    _report(out, "add_p99_ms", "add one, p99", _pct(add_times, 99) * 1e3, "ms", None)
    _report(out, "add_many_ms", f"add_many({batch}), per segment, amortised", many_mean, "ms", 2)
    print(f"  {'':<46} ({batch_compactions} compaction(s) included)")
    _report(out, "reopen_s", "reopen + first search (fresh process)", fresh["reopen_s"], "s", 2)
    _report(out, "reopen_embedded", "  texts embedded while reopening", fresh["embedded"], "", 0)
    _report(
        out, "reopen_cold_s", "  same, without bm25.cache (after a crash)", cold["reopen_s"], "s", 2
    )
    _report(out, "peak_rss_mb", "peak RSS: reopen + 100 searches", fresh["peak_mb"], "MB", 250)
    _report(out, "base_rss_mb", "  bare interpreter + memctx imports", fresh["base_mb"], "MB", None)
    cold_label = "  peak RSS of the reopen without bm25.cache"
    _report(out, "cold_rss_mb", cold_label, cold["peak_mb"], "MB", 250)
    print(
        f"  {'speed-up vs naive, search (both at N=' + format(n, ',') + ')':<46} "
        f"{search_ratio:>9.0f} x    naive {naive_search * 1e3:.0f} ms vs p50 {p50:.2f} ms "
        f"(expect >= 20x) {'PASS' if search_ratio >= 20 else 'MISS'}"
    )
    print(
        f"  {'speed-up vs naive, add (both at N=' + format(n, ',') + ')':<46} "
        f"{add_ratio:>9.0f} x    naive {naive_add * 1e3:.0f} ms vs {add_mean:.2f} ms "
        f"(expect >= 20x) {'PASS' if add_ratio >= 20 else 'MISS'}"
    )
    _embedding_figures(out, [it["content"] for it in base])
    out["total_s"] = time.perf_counter() - started
    print(f"  (store benchmark took {out['total_s']:.0f} s)")
    return out


if __name__ == "__main__":
    run_store_bench()
