"""Bounded cost on huge input: what one hook call may take, in time and memory.

An agent hands memctx whatever its tools produced, and its user whatever they paste. Four
inputs that used to cost time and memory in proportion to their size (measured before the
bounds: 94 s and 918 MB, 3,163 extraction calls, 16 s, 12 s) each run in a fresh process,
so its peak resident memory is its own:

- ``compact-20mb``: ``on_before_compact`` of one 20 MB tool output (log lines).
- ``compact-50mb-user``: ``on_before_compact`` of one 50 MB user message; its extraction
  calls are counted against their bound too (``extractionMaxMessageTokens``).
- ``trim-5mb``: ``on_context`` that trims a 5.5 MB tool output out of a session.
- ``first-50k``: the first ``on_context`` over a 50,000-message history.

Each line prints the hook's wall time and the process's peak RSS against the stated bound
(its own: :func:`memctx.bench.peak.own_peak_mb`, read in the case's process at its end),
and the time against a floor measured in the same process: one ``json.dumps`` of the input,
the least any hook that reads its input must spend. The background work the hook queued
(archiving the rest, keeping an oversized output whole) is timed apart: it is off the
agent's path.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from .peak import CaseFailed, child_env, own_peak_mb, run_case_process

__all__ = ["BOUNDS", "Bound", "run_bounds_bench"]


@dataclass(frozen=True)
class Bound:
    """A case and its stated bound: hook seconds and peak resident MB."""

    case: str
    what: str
    seconds: float
    peak_mb: float
    counts_calls: bool = False  # whether the case's extraction calls have a bound too


BOUNDS = (
    Bound("compact-20mb", "on_before_compact of one 20 MB tool output", 5.0, 600.0),
    Bound("compact-50mb-user", "on_before_compact of one 50 MB user message", 5.0, 600.0, True),
    Bound("trim-5mb", "on_context trimming a 5.5 MB tool output", 3.0, 500.0),
    Bound("first-50k", "first on_context over 50,000 messages", 10.0, 1200.0),
)


def _log(chars: int, seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    size = 0
    i = 0
    while size < chars:
        line = (
            f"2026-03-0{1 + i % 9} 12:{i % 60:02d}:{(i * 7) % 60:02d} INFO worker[{i % 17}] "
            f"processed batch {i} in {rng.randint(1, 999)} ms ok={rng.random() < 0.9}"
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def _call(call_id: str) -> dict[str, Any]:
    function = {"name": "bash", "arguments": '{"cmd": "cat worker.log"}'}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def _chat(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = rng.choice(["parser", "lexer", "cache", "router", "worker"])
        out.append({"role": "user", "content": f"question {i} about module_{i % 300}.py {topic}"})
        out.append({"role": "assistant", "content": f"edited module_{i % 300}.py line {i % 900}"})
    return out


def _input(case: str) -> tuple[str, list[dict[str, Any]]]:
    system = {"role": "system", "content": "You are a coding agent."}
    if case == "compact-20mb":
        output = {"role": "tool", "tool_call_id": "c1", "content": _log(20_000_000, 1)}
        return "compact", [system, *_chat(5, 1), _call("c1"), output]
    if case == "compact-50mb-user":
        said = {"role": "user", "content": _log(50_000_000, 5)}
        # Last in the batch, so the hook archives it inline (head, tail, note), as it does
        # the 20 MB output: the harder case for the hook's time.
        return "compact", [system, *_chat(5, 5), said]
    if case == "trim-5mb":
        output = {"role": "tool", "tool_call_id": "c1", "content": _log(5_500_000, 2)}
        tail = [_call("c2"), {"role": "tool", "tool_call_id": "c2", "content": "ok"}]
        later = [*_chat(10, 3), *tail, {"role": "user", "content": "what did the batches print?"}]
        return "context", [system, *_chat(10, 2), _call("c1"), output, *later]
    if case == "first-50k":
        return "context", [system, *_chat(25_000, 4)]
    raise ValueError(f"unknown case {case!r}: use one of {[b.case for b in BOUNDS]}")


def _run_one(case: str) -> dict[str, float]:
    """Run ``case`` in this process; the figures as a dict (printed as JSON by ``main``)."""
    from memctx import MemoryContext, MemoryContextConfig

    hook, messages = _input(case)
    start = time.perf_counter()
    json.dumps(messages)
    floor = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="memctx-bounds-") as tmp:
        mem = MemoryContext(
            MemoryContextConfig(),
            store_dir=tmp,
            session_id="bounds",
            context_window_tokens=200_000,
        )
        start = time.perf_counter()
        if hook == "compact":
            mem.on_before_compact(messages)
        else:
            mem.on_context(messages)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        mem.wait_idle()
        background = time.perf_counter() - start
        stats = mem.stats()
        failures = sum(v for k, v in stats["counts"].items() if k.endswith("failures"))
        failures += sum(stats["worker"]["failed"].values())
        mem.close()
    return {
        "seconds": seconds,
        "background": background,
        "floor": floor,
        "peak_mb": own_peak_mb(),
        "failures": failures,
        "extraction_calls": int(stats["extraction"].get("llm_calls", 0)),
    }


def calls_bound() -> int:
    """Extraction calls the user-message case may make: its one long message's bound
    (:func:`memctx.runtime.extraction_calls_bound` at the default setting) and one request
    for the ten short messages before it."""
    from memctx import MemoryContextConfig
    from memctx.runtime import extraction_calls_bound

    return extraction_calls_bound(MemoryContextConfig().extraction_max_message_tokens) + 1


def run_bounds_bench() -> bool:
    """Run every case in its own process; print each against its bound. ``True``: all met."""
    ok = True
    for bound in BOUNDS:
        try:
            r = run_case_process(
                [sys.executable, "-m", "memctx.bench.bounds", bound.case], env=child_env()
            )
        except CaseFailed as exc:
            print(f"{bound.case}: FAILED to run: {exc}")
            ok = False
            continue
        met = r["seconds"] <= bound.seconds and r["peak_mb"] <= bound.peak_mb and not r["failures"]
        calls = ""
        if bound.counts_calls:
            most = calls_bound()
            met = met and r["extraction_calls"] <= most
            calls = f", {r['extraction_calls']} extraction calls (bound {most})"
        ok = ok and met
        print(
            f"{bound.what}: hook {r['seconds']:.2f} s (bound {bound.seconds:.0f} s; "
            f"{r['seconds'] / r['floor']:.0f}x one json.dumps of the input), peak RSS "
            f"{r['peak_mb']:.0f} MB (bound {bound.peak_mb:.0f} MB), then {r['background']:.1f} s "
            f"of background work{calls}; {'PASS' if met else 'MISS'}"
        )
    return ok


def main(argv: list[str]) -> None:
    if argv:
        print(json.dumps(_run_one(argv[0])))
    else:
        run_bounds_bench()


if __name__ == "__main__":
    main(sys.argv[1:])
