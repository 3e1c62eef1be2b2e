"""``make bench``: the context hook at scale, against the seed's per-turn approach rebuilt naively.

Set-up (seeded): a raw store of 20,000 archived ~900-character segments (hash embeddings,
all of this session) and a coding session of 2,000 messages (user requests, assistant text
with tool calls in Anthropic shape, tool results of 200–5,000 characters), far over a 200K
window, so smart trim runs on every turn. Each measured turn appends a user request, a tool
call, its result and a reply, then calls ``on_context`` with the whole history, as agents do.

The baseline is what the seed's TypeScript does per turn, in Python with no caches: estimate
every message's tokens, tokenize every candidate and build a fresh BM25 (``rank_bm25``) for
the trim, repair pairing from scratch, then the same store search and recall block. Both run
in the same process on the same data; the ratio is what ``make bench`` prints.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memctx._bench_corpus import T_END, make_corpus
from memctx._config import MemoryContextConfig
from memctx._raw_store import RawStore
from memctx._runtime import MemoryContext

__all__ = ["make_session", "run_runtime_bench"]

SESSION = "bench-session"
TARGET_P50_MS, TARGET_P95_MS = 15.0, 40.0


def make_session(n_messages: int, seed: int = 0) -> list[dict[str, Any]]:
    """A seeded coding session of about ``n_messages`` Anthropic-shaped messages."""
    rng = random.Random(seed)
    texts = [item["content"] for item in make_corpus(600, seed=seed + 7)]
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    i = 0
    while len(msgs) < n_messages:
        msgs += _turn(rng, texts, i)
        i += 1
    return msgs


def _turn(rng: random.Random, texts: list[str], i: int) -> list[dict[str, Any]]:
    request = rng.choice(texts)[: rng.randint(60, 400)]
    output = "\n".join(rng.choice(texts) for _ in range(rng.randint(1, 6)))[
        : rng.randint(200, 5000)
    ]
    call_id = f"toolu_{i:05d}"
    return [
        {"role": "user", "content": request},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": rng.choice(texts)[:200]},
                {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"cmd": f"t{i}"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
        },
        {"role": "assistant", "content": rng.choice(texts)[: rng.randint(50, 600)]},
    ]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _fill_store(directory: Path, n: int, seed: int) -> None:
    from memctx._embeddings import HashEmbedder

    items = make_corpus(n, seed=seed)
    shift = time.time() - T_END  # the corpus ends "now", so age eviction keeps it all
    for item in items:
        item["session_id"] = SESSION
        item["timestamp"] += shift
    with RawStore(directory, embedder=HashEmbedder(), eviction_days=None) as store:
        for start in range(0, n, 2000):
            store.add_many(items[start : start + 2000])


def _measure(hook: Callable[[list[dict[str, Any]]], object], history: list[dict[str, Any]],
             turns: int, seed: int) -> list[float]:  # fmt: skip
    rng = random.Random(seed + 99)
    texts = [m["content"] for m in history if isinstance(m.get("content"), str)]
    out = []
    for t in range(turns):
        history += _turn(rng, texts, 100_000 + t)
        start = time.perf_counter()
        hook(history)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def run_runtime_bench(
    n_context: int = 2_000, n_archived: int = 20_000, turns: int = 40, seed: int = 0
) -> dict[str, Any]:
    """Measure and print ``on_context`` p50/p95 and the ratio to the naive baseline."""
    from memctx._bench_runtime_naive import NaiveSeedHook

    with tempfile.TemporaryDirectory(prefix="memctx-bench-rt-") as tmp:
        root = Path(tmp)
        _fill_store(root, n_archived, seed)
        full = make_session(n_context, seed)
        config = MemoryContextConfig(enabled=True, knowledge_extraction=False)
        with MemoryContext(
            config, store_dir=root, session_id=SESSION, context_window_tokens=200_000
        ) as mem:
            # The session grows turn by turn, as a real one does: each message is trimmed
            # (and archived) once, when it first falls out, not all at once.
            start = time.perf_counter()
            history = full[:1]
            for end in range(5, len(full) + 1, 4):
                history = full[:end]
                mem.on_context(history)
            first = (time.perf_counter() - start) * 1000.0 / max(1, len(full) // 4)
            before = dict(mem.stats()["counts"])
            fast = _measure(mem.on_context, history, turns, seed)
            stats = mem.stats()
            for name in ("trims", "recalls"):
                stats["counts"][name] = stats["counts"].get(name, 0) - before.get(name, 0)
            naive_hook = NaiveSeedHook(mem)
            naive = _measure(naive_hook, history, max(turns // 8, 3), seed + 1)
    p50, p95 = statistics.median(fast), _pct(fast, 0.95)
    naive_p50 = statistics.median(naive)
    result = {
        "messages": len(history),
        "archived_segments": stats.get("raw_store", {}).get("segments"),
        "growth_mean_ms": first,
        "p50_ms": p50,
        "p95_ms": p95,
        "naive_p50_ms": naive_p50,
        "speedup": naive_p50 / p50 if p50 else float("inf"),
        "trims": stats["counts"].get("trims", 0),
        "recalls": stats["counts"].get("recalls", 0),
    }
    print(
        f"on_context, {result['messages']} messages in context, "
        f"{result['archived_segments']} archived segments (hash), {turns} turns:"
    )
    for name, value, target in (("p50", p50, TARGET_P50_MS), ("p95", p95, TARGET_P95_MS)):
        verdict = "PASS" if value <= target else "MISS"
        print(f"  {name} {value:7.2f} ms   target <= {target:.0f} ms   {verdict}")
    print(f"  growing the session to {n_context} messages: {first:.1f} ms per turn on average")
    print(
        f"  seed's per-turn approach rebuilt naively (fresh BM25 + token counts each turn): "
        f"p50 {naive_p50:.1f} ms -> memctx is {result['speedup']:.1f}x faster"
    )
    print(f"  trims {result['trims']}, recalls {result['recalls']} of {turns} turns")
    return result


if __name__ == "__main__":
    run_runtime_bench()
