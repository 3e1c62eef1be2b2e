"""``make bench``: the context hook at scale, against the seed's per-turn approach rebuilt naively.

Set-up (seeded): a raw store of 20,000 archived ~900-character segments of 50 earlier
sessions (hash embeddings) and a coding session that grows turn by turn to 2,000 messages
(user requests, assistant text with tool calls in Anthropic shape, tool results of
200–5,000 characters), far over a 200K window, so smart trim runs on every turn. Two cases:
the default (``crossSession`` off: the session sees its own archive) and ``crossSession`` on
(every one of the 20,000+ segments is searched). Each measured turn appends a user request, a tool
call, its result and a reply, then calls ``on_context`` with the whole history, as agents do.

The baseline is what the seed's TypeScript does per turn, in Python with no caches: estimate
every message's tokens, tokenize every candidate and build a fresh BM25 (``rank_bm25``) for
the trim, repair pairing from scratch, then the same store search and recall block. Both run
in the same process on the same data; the ratio is what ``make bench`` prints.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.runtime import MemoryContext
from memctx.store import RawStore

from .corpus import T_END, make_corpus
from .runtime_naive import NaiveSeedHook

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
    """``n`` archived segments of 50 earlier sessions, ending now (age eviction keeps them)."""
    from memctx.retrieval import HashEmbedder

    items = make_corpus(n, seed=seed)
    shift = time.time() - T_END
    for item in items:
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


def _run_case(
    root: Path, full: list[dict[str, Any]], *, cross_session: bool, turns: int, seed: int,
    naive_turns: int,
) -> dict[str, Any]:  # fmt: skip
    config = MemoryContextConfig(knowledge_extraction=False, cross_session=cross_session)
    with MemoryContext(
        config, store_dir=root, session_id=SESSION, context_window_tokens=200_000
    ) as mem:
        # The session grows turn by turn, as a real one does: each message is trimmed (and
        # archived) once, when it first falls out, not all at once.
        start = time.perf_counter()
        history = full[:1]
        for end in range(5, len(full) + 1, 4):
            history = full[:end]
            mem.on_context(history)
        growth = (time.perf_counter() - start) * 1000.0 / max(1, len(full) // 4)
        before = dict(mem.stats()["counts"])
        fast = _measure(mem.on_context, history, turns, seed)
        after = mem.stats()
        naive = _measure(NaiveSeedHook(mem), history, naive_turns, seed + 1) if naive_turns else []
    p50 = statistics.median(fast)
    naive_p50 = statistics.median(naive) if naive else float("nan")
    return {
        "cross_session": cross_session,
        "messages": len(history),
        "archived_segments": after.get("raw_store", {}).get("segments"),
        "growth_mean_ms": growth,
        "p50_ms": p50,
        "p95_ms": _pct(fast, 0.95),
        "naive_p50_ms": naive_p50,
        "speedup": naive_p50 / p50 if naive else float("nan"),
        "trims": after["counts"].get("trims", 0) - before.get("trims", 0),
        "recalls": after["counts"].get("recalls", 0) - before.get("recalls", 0),
    }


def run_runtime_bench(
    n_context: int = 2_000, n_archived: int = 20_000, turns: int = 40, seed: int = 0
) -> list[dict[str, Any]]:
    """Measure and print ``on_context`` p50/p95 and the ratio to the naive baseline."""
    results = []
    with tempfile.TemporaryDirectory(prefix="memctx-bench-rt-") as tmp:
        filled = Path(tmp) / "filled"
        _fill_store(filled, n_archived, seed)
        full = make_session(n_context, seed)
        for cross in (False, True):
            root = Path(tmp) / f"case-{cross}"
            shutil.copytree(filled, root)
            results.append(
                _run_case(
                    root,
                    full,
                    cross_session=cross,
                    turns=turns,
                    seed=seed,
                    naive_turns=0 if cross else max(turns // 8, 3),
                )
            )
    for r in results:
        scope = (
            "every segment visible (crossSession on)"
            if r["cross_session"]
            else "own session visible (crossSession off, the default)"
        )
        print(
            f"on_context, {r['messages']} messages in context, {r['archived_segments']} "
            f"archived segments (hash), {scope}, {turns} turns:"
        )
        for name, target in (("p50", TARGET_P50_MS), ("p95", TARGET_P95_MS)):
            value = r[f"{name}_ms"]
            verdict = "PASS" if value <= target else "MISS"
            print(f"  {name} {value:7.2f} ms   target <= {target:.0f} ms   {verdict}")
        print(f"  growing the session to {n_context} messages: {r['growth_mean_ms']:.1f} ms/turn")
        if not r["cross_session"]:
            print(
                "  seed's per-turn approach rebuilt naively (fresh BM25 + token counts each "
                f"turn): p50 {r['naive_p50_ms']:.1f} ms -> memctx is {r['speedup']:.1f}x faster"
            )
        print(f"  trims {r['trims']}, recalls {r['recalls']} of {turns} turns")
    return results


if __name__ == "__main__":
    run_runtime_bench()
