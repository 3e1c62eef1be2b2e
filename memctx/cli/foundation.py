"""Foundation measurements on real transcripts, printed as plain tables.

``memctx check``, ``memctx calibrate`` and ``memctx foundation`` (both) call these, on
transcript files, ``FILE#N`` or folders (:mod:`memctx.cli.inputs`). Names are printed
whole: a file found in a folder by its path in that folder, so that two folders'
``sample_raw.json`` stay apart. Every figure in the README's "Measured on real sessions"
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
from memctx.transcripts import Transcript

from .inputs import (
    expand_transcript_arg,
    load_transcript_arg,
    split_transcript_arg,
    transcript_files,
)
from .options import OptionError, fail, one_line

__all__ = ["calibrate_tokens", "check_transcripts", "claude_sessions", "deletion_trials"]

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
    return "\n".join(line.rstrip() for line in out)


def _strings(messages: Iterable[Any]) -> Iterable[str]:
    for message in messages:
        for block in iter_blocks(message):
            if block.text:
                yield block.text


def check_transcripts(paths: Sequence[str | Path], *, trials: int = 50) -> int:
    """Load, judge and repair every transcript; print one row each. Non-zero on failure.

    ``paths`` are transcript arguments (:mod:`memctx.cli.inputs`): files, ``FILE#N`` or
    folders; a file that cannot be read is a row saying why, and a failure.
    """
    redactor = Redactor()
    rows: list[tuple[object, ...]] = []
    failures = 0
    for name, loaded in _loadable(paths):
        if isinstance(loaded, str):
            rows.append((name, "-", "-", "-", "-", "-", f"ERROR: {loaded}"))
            failures += 1
            continue
        for shown, transcript in loaded:
            as_loaded = len(pairing_violations(transcript.messages))
            before, after = deletion_trials(transcript.messages, trials)
            hits = sum(
                len(redactor.redact_with_report(s).hits) for s in _strings(transcript.messages)
            )
            failures += after > 0
            rows.append(
                (
                    shown,
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


def _loadable(
    paths: Sequence[str | Path],
) -> Iterable[tuple[str, list[tuple[str, Transcript]] | str]]:
    """Each transcript argument ``paths`` expand to, by name (relative to the folder it was
    found in, so that two folders' ``sample_raw.json`` stay apart), with its transcripts and
    their names (``FILE#N`` for one of several) or why it cannot be read (a folder without
    transcripts, a file that does not load)."""
    for path in paths:
        try:
            args = expand_transcript_arg(str(path))
        except OptionError as exc:
            yield str(path), one_line(str(exc))
            continue
        for arg, named in args:
            file = str(split_transcript_arg(arg)[0])
            name = Path(file).name if named else str(Path(file).relative_to(path))
            try:
                loaded = load_transcript_arg(arg)
            except (TranscriptError, OptionError) as exc:
                yield name + arg[len(file) :], one_line(str(exc))
                continue
            # A transcript's source is the file's path, then "#N" when it is one of several.
            yield name, [(name + t.source[len(file) :], t) for t in loaded]


def claude_sessions(paths: Sequence[str | Path]) -> list[Transcript]:
    """The Claude Code sessions among ``paths`` (files, ``FILE#N`` or folders, see
    :mod:`memctx.cli.inputs`) that calibration can use: those with a recorded compaction and
    reported usage.

    A file found in a folder that cannot be loaded is left out, with a warning on stderr
    naming it and why; a file named on the command line that cannot be loaded is an error.

    Raises:
        TranscriptError, OptionError: A named file that cannot be read, or a folder holding
            no transcript file.
    """
    sessions = []
    for arg, named in transcript_files([str(p) for p in paths]):
        try:
            loaded = load_transcript_arg(arg)
        except (TranscriptError, OptionError) as exc:
            if named:
                raise
            print(f"memctx: warning: skipped {one_line(str(exc))}", file=sys.stderr)
            continue
        sessions += [t for t in loaded if t.compaction_boundary is not None and t.usage]
    return sessions


def calibrate_tokens(
    paths: Sequence[str | Path], *, models: Sequence[str] | None = None, required: bool = True
) -> int:
    """Print each counter's error against Claude Code's reported input tokens.

    Args:
        paths: Transcript files, ``FILE#N`` or folders (see :func:`claude_sessions`).
        models: litellm models whose exact tokenizer to measure beside ``ceil(len/3)``.
        required: No usable session is an error (exit 2); otherwise a note, exit 0.
    """
    sessions = claude_sessions(paths)
    if not sessions:
        where = ", ".join(str(p) for p in paths)
        missing = f"no Claude Code session with a compaction and usage in {where}"
        if not required:
            print(f"no token calibration: {missing}")
            return 0
        return fail(
            f"{missing}; pass Claude Code session files (*.jsonl) or a folder holding them "
            "(the datasets root or its claude-code folder)"
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
                source=Path(session.source).name,
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
