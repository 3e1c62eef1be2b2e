"""Time smart_trim the way the runtime calls it: every turn, on the whole resent history.

Builds a seeded coding session of about 2,000 messages (user text, assistant text with tool
calls, tool results of 200-5,000 characters) in the Anthropic and the OpenAI shape, then
replays the last turns: each call gets the same dicts as the turn before plus the turn's new
messages, with a warm :class:`TrimCache`. The query changes when the user speaks (every
few turns), as the runtime's query is the last user messages. Reports wall-clock and
process CPU time per call (the latter is steadier on a shared machine).

Usage: ``.venv/bin/python scripts/bench_trim.py [--messages 2000] [--turns 200]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from memctx.messages.tokens import estimate_message_tokens
from memctx.trim.smart import TrimCache, smart_trim

_TOPICS = [
    "payment webhook signature verification stripe",
    "database migration postgres schema index",
    "config loader yaml env override",
    "auth token refresh session cookie",
    "cache eviction lru ttl redis",
    "parser tokenizer ast error recovery",
    "frontend react component state hook",
    "ci pipeline docker build cache layer",
    "logging structured json trace span",
    "rate limiter bucket burst retry backoff",
]
_FILLER = (
    "the function returns value when called with argument and then we check result "
    "error line file module import class def self return none true false test assert "
    "expected actual diff patch commit branch merge rebase build run output status"
).split()


def _words(rng: random.Random, topic: str, n: int) -> str:
    topical = topic.split()
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.15:
            out.append(rng.choice(topical))
        elif r < 0.25:
            out.append(f"src/{rng.choice(topical)}/{rng.choice(_FILLER)}_{rng.randrange(50)}.py")
        elif r < 0.3:
            out.append(f"{rng.choice(topical)}{rng.choice(_FILLER).title()}Handler")
        elif r < 0.35:
            out.append(str(rng.randrange(10_000)))
        else:
            out.append(rng.choice(_FILLER))
    return " ".join(out)


def _turn(rng: random.Random, fmt: str, n: int, with_user: bool) -> list[dict[str, Any]]:
    topic = rng.choice(_TOPICS)
    out: list[dict[str, Any]] = []
    if with_user:
        text = _words(rng, topic, rng.randrange(8, 60))
        out.append(
            {"role": "user", "content": [{"type": "text", "text": text}]}
            if fmt == "anthropic"
            else {"role": "user", "content": text}
        )
    calls = [
        (f"{'toolu' if fmt == 'anthropic' else 'call'}_{n:05d}_{k}", rng.choice(["read", "bash"]))
        for k in range(rng.choice([0, 1, 1, 1, 2, 3]))
    ]
    say = _words(rng, topic, rng.randrange(5, 80))
    args = [{"path": f"src/{topic.split()[0]}/{rng.choice(_FILLER)}.py"} for _ in calls]
    results = [_words(rng, topic, rng.randrange(35, 850)) for _ in calls]  # ~200-5,000 chars
    if fmt == "anthropic":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": say}]
        blocks += [
            {"type": "tool_use", "id": cid, "name": name, "input": a}
            for (cid, name), a in zip(calls, args, strict=True)
        ]
        out.append({"role": "assistant", "content": blocks})
        if calls:
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": cid, "content": r}
                        for (cid, _), r in zip(calls, results, strict=True)
                    ],
                }
            )
        return out
    message: dict[str, Any] = {"role": "assistant", "content": say}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": str(a)}}
            for (cid, name), a in zip(calls, args, strict=True)
        ]
    out.append(message)
    out += [
        {"role": "tool", "tool_call_id": cid, "content": r}
        for (cid, _), r in zip(calls, results, strict=True)
    ]
    return out


def session(fmt: str, n_messages: int, seed: int = 7) -> list[list[dict[str, Any]]]:
    """Turns of a seeded session in ``fmt``; the first is the system prompt."""
    rng = random.Random(seed)
    turns: list[list[dict[str, Any]]] = [[{"role": "system", "content": "You are a coder."}]]
    total = 1
    while total < n_messages:
        turn = _turn(rng, fmt, len(turns), with_user=rng.random() < 0.25 or len(turns) == 1)
        turns.append(turn)
        total += len(turn)
    return turns


def _last_user_text(history: list[dict[str, Any]]) -> str:
    for message in reversed(history):
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            return content
        texts = [b["text"] for b in content if b.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def bench(fmt: str, n_messages: int, turns: int, limit_share: float) -> None:
    all_turns = session(fmt, n_messages)
    start = max(1, len(all_turns) - turns)
    history = [m for t in all_turns[:start] for m in t]
    total = sum(estimate_message_tokens(m) for m in history)
    limit = int(total * limit_share)
    cache = TrimCache()
    t0 = time.perf_counter()
    first = smart_trim(history, _last_user_text(history), limit, cache=cache)
    cold = time.perf_counter() - t0
    wall: list[float] = []
    cpu: list[float] = []
    removed: list[int] = []
    for turn in all_turns[start:]:
        history = history + turn  # the runtime's input: same old dicts plus the new ones
        query = _last_user_text(history)
        t0, c0 = time.perf_counter(), time.process_time()
        result = smart_trim(history, query, limit, cache=cache)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
        removed.append(len(result.trimmed))
    print(
        f"{fmt:9s} messages={len(history):5d} tokens~{total:,} limit={limit:,} "
        f"cold={cold * 1e3:.0f} ms  trimmed/turn~{statistics.median(removed):.0f} "
        f"(first call: {first.layer_counts})\n"
        f"          warm wall {_percentiles(wall)}\n          warm cpu  {_percentiles(cpu)}"
    )


def _percentiles(seconds: list[float]) -> str:
    ms = sorted(s * 1e3 for s in seconds)
    p95 = ms[round(0.95 * (len(ms) - 1))]
    return f"p50={statistics.median(ms):.2f} ms p95={p95:.2f} ms max={ms[-1]:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--limit-share", type=float, default=0.35)
    args = parser.parse_args()
    for fmt in ("anthropic", "openai"):
        bench(fmt, args.messages, args.turns, args.limit_share)


if __name__ == "__main__":
    main()
