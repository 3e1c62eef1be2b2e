"""``make bench``: speed of the per-turn foundations, as ratios against baselines in-process.

Absolute times depend on the machine; ratios measured in the same process do not (much).
Each line names what is measured, the baseline, and the ratio.

- Exact token counting for one new turn on a 2,000-message context: cached counter vs
  tokenizing every message again (what a counter without a cache does each turn).
- Pairing check and repair of a 2,000-message conversation (1,000 tool calls): time vs one
  ``json.dumps`` of the same conversation, a floor for any pass that reads every message.
- Speed goals of single components (redaction, hash embedding, VMEM read, the scenario
  generator), each against a baseline (``memctx.bench.speed``).
- The raw store at 20,000 segments (search latency, add, reopen, memory) against the seed's
  naive approach (``memctx.bench.store``), when present.
- Token, cost and hook-latency deltas of the ``planner`` strategy against ``truncate`` and
  ``memory-context`` on the long-haul suite and the real Claude Code sessions
  (``memctx.bench.planner``).
- LoCoMo evidence recall with ablations, hash and transformer (``memctx.bench.locomo.methods``),
  when ``../shared/datasets/locomo`` is present. Transformer embeddings are cached under
  ``.cache/memctx/`` so a second run skips the ~1 minute of embedding.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memctx.transcripts import shared_datasets_dir

__all__ = ["main"]


def _conversation(n_pairs: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    words = [
        "def",
        "parse",
        "token",
        "error",
        "config",
        "path",
        "test",
        "assert",
        "return",
        "import",
        "class",
        "self",
    ]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(n_pairs):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 200)))
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": text[:200]},
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"p": i}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": text}],
            }
        )
    return messages


def _time(fn: Callable[[], object], repeat: int = 7) -> float:
    """Median seconds of ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from memctx.messages import InfoCache, TokenCounter, pairing_violations, repair_tool_pairing

    messages = _conversation(1000)
    print(f"conversation: {len(messages)} messages, {len(json.dumps(messages)) / 1e6:.1f} MB")

    cached = TokenCounter("claude-sonnet-4-5")
    cached.count_messages(messages)
    turn = [*messages, {"role": "user", "content": "next step please"}]
    with_cache = _time(lambda: cached.count_messages(turn))
    without = _time(lambda: TokenCounter("claude-sonnet-4-5").count_messages(turn), repeat=3)
    print(
        f"exact tokens, one new turn: cached {with_cache * 1e3:.2f} ms vs re-tokenizing all "
        f"{without * 1e3:.0f} ms -> {without / with_cache:.0f}x faster"
    )

    floor = _time(lambda: json.dumps(messages))
    check = _time(lambda: pairing_violations(messages))
    cache = InfoCache()
    pairing_violations(messages, cache=cache)
    cached_check = _time(lambda: pairing_violations(turn, cache=cache))
    repair = _time(lambda: repair_tool_pairing(messages))
    damaged = [m for i, m in enumerate(messages) if i % 7 != 3]
    repair_damaged = _time(lambda: repair_tool_pairing(damaged))
    print(
        f"pairing_violations: {check * 1e3:.1f} ms ({check / floor:.1f}x one json.dumps); "
        f"repair valid: {repair * 1e3:.1f} ms ({repair / floor:.1f}x); "
        f"repair with 1/7 of messages cut: {repair_damaged * 1e3:.1f} ms "
        f"({repair_damaged / floor:.1f}x)"
    )
    print(
        f"pairing_violations with an InfoCache, one new turn: {cached_check * 1e3:.1f} ms "
        f"-> {check / cached_check:.1f}x faster than uncached"
    )

    from .speed import run_speed_goals

    print("\n== speed goals of single components ==")
    run_speed_goals()

    from .proxy import run_proxy_bench

    print("\n== the proxy's added latency ==")
    run_proxy_bench()

    try:
        from .store import run_store_bench
    except ImportError:
        print("\nraw store benchmark: not available in this version")
    else:
        print("\n== raw store, 20,000 segments ==")
        run_store_bench()

    from .bounds import run_bounds_bench

    print("\n== bounded cost on huge input (each case in a fresh process) ==")
    run_bounds_bench()

    from .runtime import run_runtime_bench

    print("\n== context hook, 2,000 messages, 20,000 archived segments ==")
    run_runtime_bench()

    from .planner import main as run_planner_bench

    print("\n== planner (seed 004) against truncate and memory-context, long sessions ==")
    run_planner_bench()

    from .claude_code_hook import run_hook_bench

    print("\n== memctx claude-code hook, each event a fresh process ==")
    run_hook_bench()

    locomo = datasets_dir() / "locomo" / "locomo7.json"
    if not locomo.exists():
        print(f"\nLoCoMo: {locomo} not found; set MEMCTX_DATASETS to the datasets folder")
        return
    from .locomo.methods import run_locomo

    print("\n== LoCoMo evidence recall (categories 1-4) ==")
    run_locomo(locomo, cache_dir=Path(".cache") / "memctx")


def datasets_dir() -> Path:
    return shared_datasets_dir()


if __name__ == "__main__":
    main()
