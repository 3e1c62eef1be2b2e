"""on_context with seed 003's pruning: before the trim, cache-aware, nothing lost."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from memctx import MemoryContextConfig
from memctx.messages.pairing import pairing_violations
from memctx.runtime.engine import MemoryContext
from memctx.text.cut import OMISSION_NOTE_RE

WINDOW = 40_000  # safe limit 32,000 tokens; soft-trim from 12,000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def build_log(k: int) -> str:
    """12,000 characters with a line only its middle holds (what soft-trim cuts)."""
    head = "".join(f"step {j} of build {k}: ok\n" for j in range(200))[:5_000]
    middle = f"build {k} warning: quokka{k} flag deprecated in setup.cfg\n"
    tail = "".join(f"test {j} of build {k}: passed\n" for j in range(300))[:6_900]
    return head + middle + tail


def transcript(builds: int, fillers: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the build green."},
    ]
    for k in range(builds):
        fn = {"name": "bash", "arguments": f'{{"cmd": "make build{k}"}}'}
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"b{k}", "type": "function", "function": fn}],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"b{k}", "content": build_log(k)})
    for i in range(fillers):
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"note {i}: " + "lorem ipsum dolor " * 160})
    out.append({"role": "user", "content": "what is the payment webhook url again?"})
    return out


def engine(tmp_path: Path, clock: Clock, **pruning: Any) -> MemoryContext:
    config = MemoryContextConfig(contextPruning={"mode": "cache-ttl", "ttl": "5m", **pruning})
    return MemoryContext(
        config,
        store_dir=tmp_path / "store",
        session_id="s1",
        context_window_tokens=WINDOW,
        clock=clock,
    )


def test_old_tool_results_are_pruned_in_the_copy_sent_and_the_same_copies_sent_while_warm(
    tmp_path: Path,
) -> None:
    clock = Clock()
    messages = transcript(6)
    snapshot = copy.deepcopy(messages)
    with engine(tmp_path, clock, hardClear={"enabled": False}) as mem:
        out = mem.on_context(messages)
        counts = mem.stats()["counts"]
        sent = {m["tool_call_id"]: m for m in out if m.get("role") == "tool"}
        # The last three assistant turns keep their results; the older ones are cut.
        assert [k for k, m in sent.items() if OMISSION_NOTE_RE.search(m["content"])] == [
            "b0",
            "b1",
            "b2",
        ]
        assert counts["prunings"] == 1 and counts["tool_results_soft_trimmed"] == 3
        assert messages == snapshot and pairing_violations(out) == []
        clock.now += 60  # warm: the same dicts again, so the cached prefix is unchanged
        grown = [*messages, {"role": "assistant", "content": "Build 5 passed."}]
        again = mem.on_context(grown)
        resent = {m["tool_call_id"]: m for m in again if m.get("role") == "tool"}
        assert all(resent[k] is sent[k] for k in ("b0", "b1", "b2"))
        assert mem.stats()["counts"]["prunings"] == 1


def test_a_pruned_result_that_is_trimmed_later_is_archived_whole(tmp_path: Path) -> None:
    clock = Clock()
    messages = transcript(6, fillers=30)  # over the safe limit even pruned: smart trim runs
    with engine(tmp_path, clock, hardClear={"enabled": False}) as mem:
        out = mem.on_context(messages)
        assert mem.stats()["counts"]["trims"] == 1
        assert not any("quokka0" in str(m.get("content")) for m in out)
        mem.wait_idle()
        hits = mem.memory_search("quokka0 flag deprecated setup.cfg", limit=5)
    # The line soft-trim cut from the middle of build 0's log is in the archive.
    assert any("quokka0 flag deprecated" in hit["content"] for hit in hits)


def test_pruning_off_sends_tool_results_whole(tmp_path: Path) -> None:
    messages = transcript(6)
    config = MemoryContextConfig()
    with MemoryContext(
        config, store_dir=tmp_path / "s", session_id="s1", context_window_tokens=WINDOW
    ) as mem:
        out = mem.on_context(messages)
        assert "prunings" not in mem.stats()["counts"]
    assert [m["content"] for m in out if m.get("role") == "tool"] == [
        m["content"] for m in messages if m.get("role") == "tool"
    ]
