"""No secret reaches disk: every secret class, in every message position and format, through
both hooks, and none of its bytes in any file under the store (segments, knowledge, the LLM
cache, kept outputs, indexes)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import SECRET_CLASSES, SecretCase, examples, secret_example, secrets_by_class

from memctx import MemoryContextConfig
from memctx.retrieval import HashEmbedder
from memctx.runtime import MemoryContext

POSITIONS = (
    "user_text",
    "assistant_text",
    "openai_tool_arguments",
    "openai_tool_output",
    "anthropic_tool_use_input",
    "anthropic_tool_result",
    "gemini_function_response",
)
_WORDS = "parser cache worker queue schema router build deploy test log".split()


def _filler(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_WORDS, k=n))


def _placed(position: str, text: str, i: int) -> list[dict[str, Any]]:
    """``text`` where ``position`` says, as a valid exchange of that provider's shape."""
    cid = f"call_{i}"
    if position == "user_text":
        return [{"role": "user", "content": text}]
    if position == "assistant_text":
        return [{"role": "assistant", "content": text}]
    if position in ("openai_tool_arguments", "openai_tool_output"):
        args = json.dumps({"command": text if position == "openai_tool_arguments" else "ls"})
        call = {"id": cid, "type": "function", "function": {"name": "bash", "arguments": args}}
        output = text if position == "openai_tool_output" else "done"
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": cid, "content": output},
        ]
    if position in ("anthropic_tool_use_input", "anthropic_tool_result"):
        command = text if position == "anthropic_tool_use_input" else "ls"
        output = text if position == "anthropic_tool_result" else "done"
        use = {"type": "tool_use", "id": cid, "name": "bash", "input": {"command": command}}
        result = {"type": "tool_result", "tool_use_id": cid, "content": output}
        return [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    call = {"functionCall": {"name": "bash", "args": {"command": "ls"}}}
    response = {"functionResponse": {"name": "bash", "response": {"output": text}}}
    return [{"role": "model", "parts": [call]}, {"role": "user", "parts": [response]}]


def _conversation(
    cases: list[SecretCase], position: str, seed: int, pad: int = 40
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i, case in enumerate(cases):
        # Secrets sit inside longer outputs too, so some are cut into chunks around them.
        before, after = _filler(rng, rng.randint(0, pad)), _filler(rng, rng.randint(0, pad * 30))
        text = f"{before}\n{case.text}\n{after}"
        out.append({"role": "user", "content": f"step {i}: {_filler(rng, 6)}"})
        out += _placed(position, text, i)
        out.append({"role": "assistant", "content": f"done with step {i}"})
    out.append({"role": "user", "content": "what is left to deploy?"})
    return out


def _needles(case: SecretCase) -> list[str]:
    """What must not be on disk: the secret, each long line of a multi-line one, and their
    JSON-escaped forms (files hold JSON)."""
    parts = [line for line in case.secret.splitlines() if len(line) >= 16] or [case.secret]
    out = []
    for part in parts:
        once = json.dumps(part)[1:-1]
        out += [part, once, json.dumps(once)[1:-1]]
    return out


def _disk(store: Path) -> bytes:
    """Every file under the store, as bytes: a UTF-8 needle is found in the bytes exactly
    when it is in the decoded text, and bytes search at twice the speed."""
    return b"\n".join(p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file())


def _run_both_hooks(store: Path, messages: list[dict[str, Any]], window: int) -> None:
    config = MemoryContextConfig(hardCapTokens=500)
    with MemoryContext(
        config,
        store_dir=store,
        session_id="s1",
        context_window_tokens=window,
        embedder=HashEmbedder(),
    ) as mem:
        mem.on_context(messages)  # trims and archives the old part
        mem.on_before_compact(messages)  # archives all of it, extracts knowledge
        mem.wait_idle(120)
        assert not any(k.endswith("failures") for k in mem.stats()["counts"])


def _leaks(cases: list[SecretCase], disk: bytes) -> list[str]:
    # Each distinct needle searched once: most secrets read the same JSON-escaped, and a
    # search of a store of every class costs a pass over megabytes.
    kinds_of: dict[bytes, set[str]] = {}
    for case in cases:
        for needle in _needles(case):
            kinds_of.setdefault(needle.encode("utf-8"), set()).add(case.kind)
    return sorted({kind for needle, kinds in kinds_of.items() if needle in disk for kind in kinds})


def test_every_secret_class_in_every_position_stays_off_disk(tmp_path: Path) -> None:
    cases = [secret_example(kind, seed) for kind in SECRET_CLASSES for seed in range(2)]
    leaks = {}
    for position in POSITIONS:
        store = tmp_path / position
        _run_both_hooks(store, _conversation(cases, position, seed=1), window=8_000)
        assert (store / "segments.jsonl").stat().st_size > 0
        found = _leaks(cases, _disk(store))
        if found:
            leaks[position] = found
    assert not leaks, leaks


# Each example runs both hooks over a store end to end (about half a second); the test above
# covers every class in every position, this one their mixes, windows and offsets.
@settings(
    max_examples=examples(25, thorough_at_most=200),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cases=st.lists(secrets_by_class(), min_size=1, max_size=6),
    position=st.sampled_from(POSITIONS),
    seed=st.integers(0, 2**16),
    window=st.sampled_from([4_000, 20_000]),
)
def test_property_no_secret_reaches_disk(
    tmp_path_factory: Any, cases: list[SecretCase], position: str, seed: int, window: int
) -> None:
    store = tmp_path_factory.mktemp("secrets")
    _run_both_hooks(store, _conversation(cases, position, seed, pad=400), window)
    assert not _leaks(cases, _disk(store))
