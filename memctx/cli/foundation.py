"""Foundation measurements on real transcripts, printed as plain tables.

``memctx check`` and ``memctx calibrate`` (and, until the evaluation harness lands,
``memctx eval``) call these. Every figure in the README's "Measured on real sessions"
section comes from here, so re-running the command reproduces it.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memctx.errors import TranscriptError
from memctx.messages import (
    CounterError,
    TokenCounter,
    iter_blocks,
    measure_counter,
    pairing_violations,
    repair_tool_pairing,
)
from memctx.text import Redactor
from memctx.transcripts import Transcript, load_transcripts

from .options import fail, one_line

__all__ = ["calibrate_tokens", "check_transcripts", "deletion_trials"]

DELETE_SHARE = 0.20


def deletion_trials(messages: Sequence[Any], trials: int, *, seed: int = 0) -> tuple[int, int]:
    """Delete a random 20% of messages ``trials`` times, repair, count what is left broken.

    Returns:
        (violations before repair, summed over trials; violations after repair, summed).
    """
    before = after = 0
    n = len(messages)
    for trial in range(trials):
        rng = random.Random(f"{seed}:{trial}")  # str seeds hash stably across processes
        dropped = set(rng.sample(range(n), k=int(n * DELETE_SHARE)))
        damaged = [m for i, m in enumerate(messages) if i not in dropped]
        before += len(pairing_violations(damaged))
        after += len(pairing_violations(repair_tool_pairing(damaged)))
    return before, after


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    text_rows = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in text_rows)]) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in text_rows]
    return "\n".join(out)


def _strings(messages: Iterable[Any]) -> Iterable[str]:
    for message in messages:
        for block in iter_blocks(message):
            if block.text:
                yield block.text


def check_transcripts(paths: Sequence[Path], *, trials: int = 50) -> int:
    """Load, judge and repair every transcript; print one row each. Non-zero on failure."""
    redactor = Redactor()
    rows: list[tuple[object, ...]] = []
    failures = 0
    for path in paths:
        try:
            loaded = load_transcripts(path)
        except TranscriptError as exc:
            rows.append((path.name[:48], "-", "-", "-", "-", "-", f"ERROR: {one_line(str(exc))}"))
            failures += 1
            continue
        for index, transcript in enumerate(loaded):
            name = path.name if len(loaded) == 1 else f"{path.name}#{index}"
            as_loaded = len(pairing_violations(transcript.messages))
            before, after = deletion_trials(transcript.messages, trials)
            hits = sum(
                len(redactor.redact_with_report(s).hits) for s in _strings(transcript.messages)
            )
            failures += after > 0
            rows.append(
                (
                    name[:48],
                    transcript.format,
                    len(transcript.messages),
                    as_loaded,
                    before,
                    after,
                    hits,
                )
            )
    print(
        _table(
            (
                "transcript",
                "format",
                "messages",
                "violations",
                f"after {trials}x20% cut",
                "after repair",
                "redaction hits",
            ),
            rows,
        )
    )
    print(f"\n{len(rows)} transcripts, {failures} with load errors or violations left after repair")
    return 1 if failures else 0


def claude_sessions(root: Path) -> list[Transcript]:
    """The real Claude Code sessions: the ones with a recorded compaction.

    A file that cannot be loaded is left out, with a warning on stderr naming it and why.
    """
    sessions = []
    for path in sorted((root / "claude-code").glob("*.jsonl")):
        try:
            transcript = load_transcripts(path)[0]
        except TranscriptError as exc:
            print(f"memctx: warning: skipped {one_line(str(exc))}", file=sys.stderr)
            continue
        if transcript.compaction_boundary is not None and transcript.usage:
            sessions.append(transcript)
    return sessions


def calibrate_tokens(root: Path, *, models: Sequence[str] | None = None) -> int:
    """Print each counter's error against Claude Code's reported input tokens."""
    sessions = claude_sessions(root)
    if not sessions:
        return fail(
            f"no Claude Code session with a compaction and usage under {root / 'claude-code'}; "
            "pass --datasets DIR, a folder holding claude-code/*.jsonl"
        )
    counters = [TokenCounter()] + [TokenCounter(m) for m in (models or ["claude-sonnet-4-5"])]
    results: list[CounterError] = []
    for counter in counters:
        for session in sessions:
            usage = {i: u.context_tokens for i, u in session.usage.items()}
            measured = measure_counter(
                session.messages,
                usage,
                counter,
                source=Path(session.source).stem[:8],
                compaction_boundary=session.compaction_boundary,
                compact_summary=session.compact_summary,
                label="ceil(len/3)" if not counter.exact else f"exact:{counter.model}",
            )
            if measured is not None:
                results.append(measured)
    print(
        _table(
            ("counter", "session", "calls", "mean |err|", "median", "p90", "bias", "growth ratio"),
            (
                (
                    r.counter,
                    r.source,
                    r.calls,
                    f"{r.mean_abs_error:.1%}",
                    f"{r.median_abs_error:.1%}",
                    f"{r.p90_abs_error:.1%}",
                    f"{r.bias:+.1%}",
                    f"{r.growth_ratio:.2f}",
                )
                for r in results
            ),
        )
    )
    print(
        "\nerr = (counted + per-session constant - reported) / reported, the constant (system\n"
        "prompt + tool definitions, absent from transcripts) taken from the first call of each\n"
        "segment; growth ratio = counted / reported growth of the conversation itself."
    )
    return 0
