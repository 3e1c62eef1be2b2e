"""Real compactions against memctx: hand-written probes on real Claude Code sessions.

Each session in ``../shared/datasets/claude-code/`` records one compaction: everything before
its ``compact_boundary`` was replaced by Claude Code's own summary (the ``isCompactSummary``
message). ``datasets/claude-code/<session>.probes.json`` holds probes written by hand from
reading the history before the boundary (files edited, commands and results, errors and
fixes, decisions, config values, task state, the user's instructions), each answer a short
string found verbatim in its evidence records.

**The ``claude-code`` suite of ``memctx eval``.** :func:`claude_code_scenarios` makes each
session a scenario: the history before the boundary as one session, every probe asked at its
end, at Claude Code's window (200,000 tokens in the provider's count, converted with the
session's reported usage). Every strategy plays it through the replay engine, and its probe
rows and records are the synthetic suites' (``recall_accuracy``: an answer in the context the
model would receive). Each probe is tagged ``in-summary`` or ``dropped-by-summary``: whether
Claude Code's own summary kept its answer.

**Claude Code's own summary against memctx** (:func:`compare_compactions`, the suite's extra
table, ``claude_code.md``): at the boundary, each question is also asked of

- ``claude-code summary``: what Claude Code kept (the boundary's messages up to and
  including its summary);
- ``summary + memctx recall``: the same, with memctx's ``on_context`` over an archive of the
  compacted history (the product's path: ``on_before_compact`` then ``on_context``);
- ``memctx recall at the summary's tokens``: memctx alone, its recall cap set to the
  summary's own tokens: the same budget, a different choice of what to keep;
- ``memctx summary at the summary's tokens``: the summary memctx's compaction asks of its
  summariser (the rendered history in the compaction's request, :func:`summary_request`),
  written by the offline model with Claude Code's summary tokens as its output limit, one
  call over the whole history: no LLM, the same budget;
- ``memctx summary + memctx recall``: that summary with ``on_context`` over the archive, as
  ``summary + memctx recall`` does with Claude Code's;

and the table puts the strategies' rows of the run (:func:`strategy_rows`) beside them.

A probe is kept when one of its answers is in the context (the question itself left out),
case-insensitively, as the harness judges every probe.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memctx.compaction import SUMMARY_TASK, render_messages, summary_request
from memctx.config import MemoryContextConfig
from memctx.errors import MemctxError
from memctx.llm import LLMClient
from memctx.messages import TokenCounter, inspect_message, message_text
from memctx.runtime import MemoryContext
from memctx.transcripts import Transcript, load_transcript

from .adapters import transcript_scenario
from .answers import normalise_answer
from .replay import transcript_fit
from .scenario import Probe, Scenario, Session
from .schema import NO_EMBEDDING, ProbeRow

__all__ = [
    "CLAUDE_CODE_CONFIGS",
    "CLAUDE_CODE_SUITE",
    "CLAUDE_CODE_WINDOW",
    "HAND_PROBES",
    "PROBES_FORMAT",
    "ComparisonRow",
    "HandProbe",
    "ProbesError",
    "claude_code_scenario",
    "claude_code_scenarios",
    "compare_compactions",
    "format_comparison",
    "load_hand_probes",
    "strategy_rows",
    "write_claude_code_section",
]

CLAUDE_CODE_SUITE = "claude-code"
CLAUDE_CODE_WINDOW = 200_000  # Claude Code's window, in the provider's tokens
# The hand-written probes, one file per session (the sessions themselves are external data).
HAND_PROBES = Path(__file__).resolve().parents[2] / "datasets" / "claude-code"
PROBES_FORMAT = "memctx-probes/1"
SUMMARY = "claude-code summary"
SUMMARY_RECALL = "summary + memctx recall"
RECALL_ONLY = "memctx recall at the summary's tokens"
OWN_SUMMARY = "memctx summary at the summary's tokens"
OWN_SUMMARY_RECALL = "memctx summary + memctx recall"
CLAUDE_CODE_CONFIGS = (SUMMARY, SUMMARY_RECALL, RECALL_ONLY, OWN_SUMMARY, OWN_SUMMARY_RECALL)
# A hand probe's kind as the harness's fact kinds name it (for per-kind slicing).
_KINDS = {
    "file": "implementation",
    "command": "implementation",
    "error-fix": "issue",
    "decision": "decision",
    "config": "config",
    "task-state": "task_state",
    "instruction": "decision",
}


class ProbesError(MemctxError):
    """A probes file that cannot be used (the message names the file and the fix)."""


@dataclass(frozen=True, slots=True)
class HandProbe:
    """One hand-written probe (``datasets/claude-code/<session>.probes.json``)."""

    id: str
    kind: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[str, ...]
    in_summary: bool


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One configuration on one session.

    Attributes:
        session: The session id.
        config: One of :data:`CLAUDE_CODE_CONFIGS` (the module docstring), or a strategy
            (``memory-context × hash``).
        kept: Probe ids whose answer is in the context.
        probes: Probes asked.
        tokens: Mean context tokens at the boundary (the question left out; a strategy's:
            the probe call's context as the run measured it, the question in).
    """

    session: str
    config: str
    kept: tuple[str, ...]
    probes: int
    tokens: float


def load_hand_probes(path: Path) -> tuple[str, list[HandProbe]]:
    """``(session id, probes)`` from a probes file.

    Raises:
        ProbesError: Not JSON, another format, or a probe without a question or answers.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ProbesError(f"cannot read probes {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != PROBES_FORMAT:
        raise ProbesError(f"{path} is not a {PROBES_FORMAT} file (its 'format' field)")
    probes = []
    for item in data.get("probes", []):
        answers = tuple(a for a in item.get("answers", []) if isinstance(a, str) and a.strip())
        if not isinstance(item.get("question"), str) or not answers:
            raise ProbesError(f"{path}: probe {item.get('id')!r} needs a question and answers")
        probes.append(
            HandProbe(
                str(item["id"]),
                str(item.get("kind", "")),
                item["question"],
                answers,
                tuple(item.get("evidence", ())),
                bool(item.get("in_summary", False)),
            )
        )
    return str(data.get("session", Path(path).stem)), probes


def compare_compactions(
    transcript_path: Path, probes_path: Path, *, window: int = CLAUDE_CODE_WINDOW
) -> list[ComparisonRow]:
    """Claude Code's summary and memctx's two paths (module docstring) on one session, hash
    embeddings; the strategies' rows come from the run (:func:`strategy_rows`).

    Raises:
        ProbesError: The probes file is unusable, or the session records no compaction.
    """
    session, probes = load_hand_probes(probes_path)
    transcript = load_transcript(transcript_path)
    history, kept_by_claude = _split(transcript, transcript_path)
    counter = TokenCounter()
    summary_tokens = sum(counter.count_message(m) for m in kept_by_claude)
    own = offline_summary(history, summary_tokens, counter)
    rows = [
        _judge(session, SUMMARY, probes, lambda q: kept_by_claude, counter),
        _judge(session, OWN_SUMMARY, probes, lambda q: own, counter),
    ]
    with tempfile.TemporaryDirectory(prefix="memctx-cc-") as tmp:
        for config, base, cap in (
            (SUMMARY_RECALL, kept_by_claude, None),
            (RECALL_ONLY, [], summary_tokens),
            (OWN_SUMMARY_RECALL, own, None),
        ):
            overrides = {"hardCapTokens": cap, "recallWindowRatio": 1.0} if cap else {}
            engine = MemoryContext(
                MemoryContextConfig().with_overrides(overrides),
                store_dir=Path(tmp) / config.replace(" ", "-").replace("'", ""),
                session_id=session,
                context_window_tokens=window,
            )
            with engine:
                engine.on_before_compact(history)
                engine.wait_idle()

                def context(
                    question: str, base: list[Any] = base, engine: MemoryContext = engine
                ) -> list[Any]:
                    asked = {"role": "user", "content": question}
                    return [m for m in engine.on_context([*base, asked]) if m is not asked]

                rows.append(_judge(session, config, probes, context, counter))
    return sorted(rows, key=lambda row: CLAUDE_CODE_CONFIGS.index(row.config))


def offline_summary(history: Sequence[Any], max_tokens: int, counter: TokenCounter) -> list[Any]:
    """memctx's own summary of ``history`` as one user message of at most ``max_tokens``
    (by ``counter``): the compaction's summary request (:func:`summary_request` over
    :func:`render_messages`, the default prompt) answered by the offline model, its output
    limit lowered by the message's own overhead so that the message fits ``max_tokens``."""
    overhead = counter.count_message({"role": "user", "content": ""})
    limit = max(1, max_tokens - overhead)
    request = summary_request(render_messages(inspect_message(m) for m in history))
    reply = LLMClient().complete(request, task=SUMMARY_TASK, max_tokens=limit)
    return [{"role": "user", "content": reply.text}]


def _split(transcript: Transcript, path: Path) -> tuple[list[Any], list[Any]]:
    """The history before the boundary, and what Claude Code kept (up to its summary)."""
    boundary, summary_at = transcript.compaction_boundary, transcript.compact_summary
    if boundary is None or summary_at is None:
        raise ProbesError(f"{path} records no compaction to compare with")
    return transcript.messages[:boundary], transcript.messages[boundary : summary_at + 1]


def _judge(
    session: str,
    config: str,
    probes: Sequence[HandProbe],
    context: Any,
    counter: TokenCounter,
) -> ComparisonRow:
    kept, tokens = [], []
    for probe in probes:
        messages = context(probe.question)
        text = normalise_answer("\n".join(message_text(m) for m in messages))
        tokens.append(sum(counter.count_message(m) for m in messages))
        if any(normalise_answer(a) in text for a in probe.answers):
            kept.append(probe.id)
    mean = sum(tokens) / len(tokens) if tokens else 0.0
    return ComparisonRow(session, config, tuple(kept), len(probes), round(mean, 1))


def claude_code_scenario(
    transcript_path: Path, probes_path: Path, *, window: int = CLAUDE_CODE_WINDOW
) -> Scenario:
    """One session as a scenario of the ``claude-code`` suite: the history before its
    boundary, every hand probe asked at its end, at ``window`` provider tokens converted to
    the harness's count with the session's reported usage (as replays read it).

    Raises:
        ProbesError: The probes file is unusable, or the session records no compaction.
    """
    session, probes = load_hand_probes(probes_path)
    transcript = load_transcript(transcript_path)
    history, _ = _split(transcript, transcript_path)
    fit = transcript_fit(transcript)
    budget = fit.to_counted(window) if fit is not None else window
    base = transcript_scenario(transcript, window=budget)
    return dataclasses.replace(
        base,
        id=f"claude-code-{session}",
        suite=CLAUDE_CODE_SUITE,
        sessions=(Session(id=session, messages=tuple(history)),),
        probes=tuple(
            Probe(
                id=p.id,
                session_id=session,
                at=len(history),
                question=p.question,
                answers=p.answers,
                evidence_text=p.answers,
                stale=(),
                kind=_KINDS.get(p.kind, "decision"),
                tags=(CLAUDE_CODE_SUITE, "in-summary" if p.in_summary else "dropped-by-summary"),
            )
            for p in probes
        ),
        meta={**base.meta, "session": session, "provider_window": window},
    )


def _pairs(sessions_dir: Path, probes_dir: Path) -> list[tuple[Path, Path]]:
    """(transcript, probes file) of every session of ``sessions_dir`` with probes."""
    pairs = [
        (sessions_dir / f"{path.name.removesuffix('.probes.json')}.jsonl", path)
        for path in sorted(probes_dir.glob("*.probes.json"))
    ]
    return [(t, p) for t, p in pairs if t.exists()]


def claude_code_scenarios(
    sessions_dir: Path,
    probes_dir: Path,
    *,
    window: int = CLAUDE_CODE_WINDOW,
    limit: int | None = None,
) -> list[Scenario]:
    """Every session of ``sessions_dir`` that has a probes file in ``probes_dir``, as a
    scenario (the first ``limit`` only when given).

    Raises:
        ProbesError: No session has probes, or a probes file is unusable.
    """
    pairs = _pairs(sessions_dir, probes_dir)
    if not pairs:
        raise ProbesError(
            f"no Claude Code session in {sessions_dir} has probes in {probes_dir}; set "
            "MEMCTX_DATASETS to the folder holding claude-code/"
        )
    return [claude_code_scenario(t, p, window=window) for t, p in pairs[:limit]]


def strategy_rows(played: Sequence[tuple[Scenario, Sequence[ProbeRow]]]) -> list[ComparisonRow]:
    """The run's rows for :func:`format_comparison`: per session and strategy × embedding,
    the probes whose answer its context held and its mean context tokens at the boundary.

    Args:
        played: ``(scenario, probe rows)`` of each ``claude-code`` job of the run.
    """
    rows = []
    for scenario, probes in played:
        if not probes:
            continue
        first = probes[0]
        label = first.strategy
        if first.embedding != NO_EMBEDDING:
            label += f" × {first.embedding}"
        kept = tuple(row.probe for row in probes if row.recall_accuracy)
        mean = sum(row.sent_tokens for row in probes) / len(probes)
        session = str(scenario.meta.get("session", scenario.id))
        rows.append(ComparisonRow(session, label, kept, len(probes), round(mean, 1)))
    return rows


def format_comparison(rows: Sequence[ComparisonRow], probes: dict[str, list[HandProbe]]) -> str:
    """A Markdown table: per session and configuration, probes kept (of which Claude Code's
    summary held the answer / did not) and mean context tokens at the boundary."""
    lines = [
        "| session | configuration | kept | of those the summary holds | of those it drops | "
        "context tokens |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        held = {p.id for p in probes.get(row.session, []) if p.in_summary}
        dropped = {p.id for p in probes.get(row.session, [])} - held
        kept = set(row.kept)
        lines.append(
            f"| {row.session[:8]} | {row.config} | {len(kept)} / {row.probes} | "
            f"{len(kept & held)} / {len(held)} | {len(kept & dropped)} / {len(dropped)} | "
            f"{row.tokens:,.0f} |"
        )
    return "\n".join(lines)


def write_claude_code_section(
    out_dir: Path,
    sessions_dir: Path,
    probes_dir: Path,
    played: Sequence[tuple[Scenario, Sequence[ProbeRow]]],
    *,
    window: int = CLAUDE_CODE_WINDOW,
    limit: int | None = None,
) -> str:
    """The suite's extra table: Claude Code's summary and memctx's paths
    (:func:`compare_compactions`) on every session the run played, then the run's strategies
    (:func:`strategy_rows`), written to ``out_dir/claude_code.md`` and ``claude_code.json``.

    Returns:
        The Markdown table.

    Raises:
        ProbesError: No session has probes, or a probes file is unusable.
    """
    pairs = _pairs(sessions_dir, probes_dir)[:limit]
    mine = strategy_rows(played)
    rows: list[ComparisonRow] = []
    probes: dict[str, list[HandProbe]] = {}
    for transcript, probe_file in pairs:
        session, hand = load_hand_probes(probe_file)
        probes[session] = hand
        rows += compare_compactions(transcript, probe_file, window=window)
        rows += [r for r in mine if r.session == session]
    table = format_comparison(rows, probes)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "claude_code.md").write_text(
        "# Real compactions: Claude Code's summary against memctx\n\n"
        f"Probes written by hand before each session's compact_boundary; window {window:,} "
        "provider tokens; Claude Code's summary and memctx's recall paths with hash "
        "embeddings, the strategies as the run played them (their records are the "
        "claude-code suite's); memctx's summaries are the offline model's state snapshots "
        "(no LLM), its own at most the tokens of Claude Code's.\n\n" + table + "\n",
        encoding="utf-8",
    )
    (out_dir / "claude_code.json").write_text(
        json.dumps([dataclasses.asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8"
    )
    return table
