"""The ``memctx claude-code hook`` command's wall time over a 2,000-message transcript, each
event in a fresh process as Claude Code runs it, against Claude Code's hook timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .runtime import make_session

__all__ = ["run_hook_bench"]

CLAUDE_CODE_HOOK_TIMEOUT_S = 60.0
"""Claude Code's default timeout of a command hook."""


def _records(messages: list[dict[str, Any]], session: str) -> str:
    """``messages`` (no system message) as a Claude Code session file."""
    lines = []
    for i, message in enumerate(m for m in messages if m["role"] != "system"):
        lines.append(
            json.dumps(
                {
                    "type": message["role"],
                    "uuid": f"u-{i:06d}",
                    "parentUuid": f"u-{i - 1:06d}" if i else None,
                    "sessionId": session,
                    "timestamp": f"2026-03-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:"
                    f"{i % 60:02d}.000Z",
                    "message": message,
                }
            )
        )
    return "\n".join(lines) + "\n"


def _run(event: dict[str, Any], store: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memctx.cli", "claude-code", "hook", "--store", str(store)],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start, done.stdout


def run_hook_bench(n_messages: int = 2_000, prompts: int = 5, seed: int = 0) -> dict[str, Any]:
    """Time PreCompact (the whole transcript, then the same again), UserPromptSubmit and
    SessionStart(compact), each as the real command; print each against the timeout."""
    session = "bench-claude-code"
    messages = make_session(n_messages, seed)
    with tempfile.TemporaryDirectory(prefix="memctx-bench-cc-") as tmp:
        transcript = Path(tmp) / f"{session}.jsonl"
        transcript.write_text(_records(messages, session), encoding="utf-8")
        store = Path(tmp) / "store"
        event = {
            "session_id": session,
            "transcript_path": str(transcript),
            "cwd": tmp,
            "hook_event_name": "PreCompact",
            "trigger": "auto",
        }
        out: dict[str, Any] = {"messages": len(messages)}
        out["precompact_s"], _ = _run(event, store)
        out["precompact_again_s"], _ = _run(event, store)
        asked = [m["content"] for m in messages if m["role"] == "user"]
        times, printed = [], 0
        for prompt in asked[:: max(len(asked) // prompts, 1)][:prompts]:
            ask = {**event, "hook_event_name": "UserPromptSubmit", "prompt": str(prompt)[:200]}
            took, text = _run(ask, store)
            times.append(took)
            printed += bool(text)
        out["prompt_s"] = sorted(times)[len(times) // 2]
        out["prompt_max_s"] = max(times)
        out["prompts_answered"] = printed
        start_event = {**event, "hook_event_name": "SessionStart", "source": "compact"}
        out["session_start_s"], _ = _run(start_event, store)
    print(f"hook command over a {out['messages']:,}-message transcript (hash embeddings):")
    for label, key in (
        ("PreCompact, whole transcript", "precompact_s"),
        ("PreCompact, same transcript again", "precompact_again_s"),
        (f"UserPromptSubmit median of {len(times)}", "prompt_s"),
        ("UserPromptSubmit max", "prompt_max_s"),
        ("SessionStart compact", "session_start_s"),
    ):
        value = out[key]
        share = value / CLAUDE_CODE_HOOK_TIMEOUT_S
        print(f"  {label:36s} {value:6.2f} s  ({share:.0%} of Claude Code's 60 s hook timeout)")
    print(f"  prompts answered with additionalContext: {printed} of {len(times)}")
    return out


if __name__ == "__main__":
    run_hook_bench()
