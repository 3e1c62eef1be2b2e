"""Replay a real transcript through :class:`memctx.MemoryContext`, one model call at a time.

Every assistant message of the transcript marks a model call; the context of that call is
what the agent had sent: the messages before it, and after a real compaction (Claude Code's
``compact_boundary``) the compaction summary and what followed. At the boundary the engine's
``on_before_compact`` gets the compacted history, as the agent's hook would. Each call's row
records the tokens in and out, trims, recall tokens, latency and the invariants (pairing
violations, window overflow), so a test or ``memctx replay`` can assert and print them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.messages import (
    RoleKind,
    TokenCounter,
    inspect_message,
    is_recalled_block,
    pairing_violations,
)
from memctx.runtime import MemoryContext
from memctx.transcripts import Transcript

__all__ = ["ReplayReport", "ReplayRow", "format_replay", "replay_transcript"]


@dataclass(frozen=True)
class ReplayRow:
    """One model call of the replay."""

    call: int
    messages_in: int
    tokens_in: int
    tokens_out: int
    trimmed: int
    recall_tokens: int
    latency_ms: float
    violations: int
    over_window: bool


@dataclass
class ReplayReport:
    """All calls of one transcript at one window, and the engine's final stats."""

    source: str
    window: int
    rows: list[ReplayRow] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        rows = self.rows
        lat = sorted(r.latency_ms for r in rows) or [0.0]
        return {
            "source": Path(self.source).name,
            "window": self.window,
            "calls": len(rows),
            "max_tokens_in": max((r.tokens_in for r in rows), default=0),
            "mean_tokens_out": round(statistics.fmean(r.tokens_out for r in rows)) if rows else 0,
            "max_tokens_out": max((r.tokens_out for r in rows), default=0),
            "trims": sum(r.trimmed > 0 for r in rows),
            "recalls": sum(r.recall_tokens > 0 for r in rows),
            "mean_recall_tokens": round(statistics.fmean(r.recall_tokens for r in rows))
            if rows
            else 0,
            "p50_ms": round(lat[len(lat) // 2], 2),
            "p95_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 2),
            "violations": sum(r.violations for r in rows),
            "over_window": sum(r.over_window for r in rows),
            "hook_failures": sum(
                v for k, v in self.stats.get("counts", {}).items() if k.endswith("_failures")
            ),
        }

    def as_dict(self) -> dict[str, Any]:
        return {"summary": self.summary(), "rows": [asdict(r) for r in self.rows]}


def _calls(transcript: Transcript) -> list[int]:
    """Indexes of the assistant messages: each is the answer to one model call."""
    return [
        i
        for i, m in enumerate(transcript.messages)
        if inspect_message(m).kind is RoleKind.ASSISTANT and i > 0
    ]


def replay_transcript(
    transcript: Transcript,
    *,
    window: int,
    store_dir: str | Path,
    config: MemoryContextConfig | None = None,
    session_id: str = "replay",
    max_calls: int | None = None,
) -> ReplayReport:
    """Play ``transcript`` through a fresh engine; see the module docstring."""
    cfg = config if config is not None else MemoryContextConfig(enabled=True)
    counter = TokenCounter(cfg.token_counter)
    report = ReplayReport(transcript.source, window)
    messages = transcript.messages
    boundary = transcript.compaction_boundary
    with MemoryContext(
        cfg, store_dir=store_dir, session_id=session_id, context_window_tokens=window
    ) as engine:
        compacted = False
        for n, i in enumerate(_calls(transcript)):
            if max_calls is not None and n >= max_calls:
                break
            start = 0
            if boundary is not None and i > boundary:
                if not compacted:
                    engine.on_before_compact(messages[:boundary])
                    compacted = True
                start = boundary
            context = messages[start:i]
            trims_before = engine.stats()["counts"].get("trimmed_messages", 0)
            began = time.perf_counter()
            out = engine.on_context(context)
            latency = (time.perf_counter() - began) * 1000.0
            trimmed = engine.stats()["counts"].get("trimmed_messages", 0) - trims_before
            recalled = [m for m in out if is_recalled_block(m)]
            tokens_out = counter.count_messages(out)
            report.rows.append(
                ReplayRow(
                    call=n,
                    messages_in=len(context),
                    tokens_in=counter.count_messages(context),
                    tokens_out=tokens_out,
                    trimmed=trimmed,
                    recall_tokens=counter.count_messages(recalled),
                    latency_ms=latency,
                    violations=len(pairing_violations(out)),
                    over_window=tokens_out > window,
                )
            )
        engine.wait_idle(600)  # extraction runs on the worker; a loaded CI box is slow
        report.stats = engine.stats()
    return report


def format_replay(reports: Sequence[ReplayReport]) -> str:
    """A fixed-width table, one line per transcript × window."""
    cols = [
        ("source", 14),
        ("window", 7),
        ("calls", 5),
        ("max_tokens_in", 13),
        ("mean_tokens_out", 15),
        ("max_tokens_out", 14),
        ("trims", 5),
        ("recalls", 7),
        ("mean_recall_tokens", 18),
        ("p50_ms", 7),
        ("p95_ms", 7),
        ("violations", 10),
        ("over_window", 11),
    ]
    lines = ["  ".join(name.rjust(w) for name, w in cols)]
    for r in reports:
        s = r.summary()
        s["source"] = str(s["source"])[:14]
        lines.append("  ".join(str(s[name]).rjust(w) for name, w in cols))
    return "\n".join(lines)
