"""Claude Code session files (JSONL records as Claude Code writes them) for the hook tests."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

TOPICS = (
    "the database migration",
    "the login page",
    "the payment webhook",
    "the search index",
    "the deploy script",
    "the cache layer",
)


def _record(kind: str, index: int, session: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u-{index:05d}",
        "parentUuid": f"u-{index - 1:05d}" if index else None,
        "sessionId": session,
        "timestamp": f"2026-03-01T10:{index // 60 % 60:02d}:{index % 60:02d}.000Z",
        "cwd": "/home/dev/project",
        "message": message,
    }


def session_records(session: str, turns: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """A seeded coding session: ``turns`` user requests, each answered with one tool call
    and its result, then a reply. Turn 3 states the fact the tests look for."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for turn in range(turns):
        topic = rng.choice(TOPICS)
        ask = f"Please look at {topic} and fix the failing test number {turn}."
        if turn == 3:
            ask = "Remember: the staging database password rotates every Tuesday at 04:00 UTC."
        call_id = f"toolu_{seed:02d}{turn:04d}"
        out.append(_record("user", len(out), session, {"role": "user", "content": ask}))
        out.append(
            _record(
                "assistant",
                len(out),
                session,
                {
                    "role": "assistant",
                    "id": f"msg_{seed}_{turn}",
                    "content": [
                        {"type": "text", "text": f"Checking {topic}."},
                        {
                            "type": "tool_use",
                            "id": call_id,
                            "name": "Bash",
                            "input": {"command": f"pytest -k case_{turn}"},
                        },
                    ],
                },
            )
        )
        out.append(
            _record(
                "user",
                len(out),
                session,
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call_id,
                            "content": f"{rng.randint(1, 9)} passed in 0.{turn}s ({topic})",
                        }
                    ],
                },
            )
        )
        out.append(
            _record(
                "assistant",
                len(out),
                session,
                {
                    "role": "assistant",
                    "id": f"msg_{seed}_{turn}_r",
                    "content": [{"type": "text", "text": f"Done with {topic} (turn {turn})."}],
                },
            )
        )
    return out


def write_session(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
