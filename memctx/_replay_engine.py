"""The replay engine: one scenario through one strategy, call by call, with every check.

It plays the agent loop. For each session in order, every assistant message of the
transcript marks one model call: the strategy may first compact the transcript, then
prepares the context of the call from the transcript so far; the assistant message is then
appended. Each probe is one extra call at its position with the question appended as a user
message; the question never enters the transcript. Every call is checked (tool pairing,
recall cap, window) and recorded as a :class:`~memctx._eval_schema.CallRow`; every probe is
scored as a :class:`~memctx._eval_schema.ProbeRow`. At the end, no planted secret may be in
any file the strategy wrote.

Determinism: the engine gives the strategy a clock that advances one minute per call and
strategies wait for their background work outside the timed hook, so the same scenario
gives the same rows apart from latency.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctx._anatomy import RoleKind, inspect_message, is_recalled_block, token_text
from memctx._config import MemoryContextConfig
from memctx._eval_schema import NO_EMBEDDING, CallRow, ProbeRow
from memctx._pairing import pairing_violations
from memctx._scenario import Probe, Scenario
from memctx._strategies import StrategySetup, make_strategy
from memctx._tokens import TokenCounter

__all__ = ["ScenarioResult", "normalise", "run_scenario"]

_SPACE = re.compile(r"\s+")
_CLOCK_START = 1_767_225_600.0  # 2026-01-01 UTC: a fixed origin for store timestamps
_CLOCK_STEP = 60.0


@dataclass
class ScenarioResult:
    """What one scenario × strategy × embedding produced."""

    probes: list[ProbeRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def normalise(text: str) -> str:
    """Lower case, whitespace collapsed: how answers are looked for in a context."""
    return _SPACE.sub(" ", text).strip().casefold()


class _Clock:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> float:
        return _CLOCK_START + self.calls * _CLOCK_STEP


@dataclass
class _Run:
    scenario: Scenario
    strategy_name: str
    embedding: str
    window: int
    counter: TokenCounter
    result: ScenarioResult
    violations: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    previous: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    compactions: int = 0
    trims: int = 0


def run_scenario(
    scenario: Scenario,
    strategy: str,
    embedding: str,
    *,
    window: int | None = None,
    config_overrides: Mapping[str, Any] | None = None,
    answer_model: str = "claude-sonnet-4-5",
    work_dir: Path,
    llm: Any | None = None,
) -> ScenarioResult:
    """Replay ``scenario`` through ``strategy`` and score every probe.

    Args:
        scenario: The sessions and probes.
        strategy: A registered strategy name.
        embedding: ``"hash"``/``"transformer"``, or ``"-"`` for strategies that never search.
        window: Context window; ``None`` means the scenario's own.
        config_overrides: memctx config overrides (dotted or camelCase keys).
        answer_model: Recorded only; prices are applied when aggregating.
        work_dir: A fresh directory for the strategy's stores.
        llm: A litellm model string or an object with ``complete`` (an
            :class:`~memctx._llm.LLMClient`) to answer and judge each probe; ``None`` skips.

    Returns:
        The probe rows, call rows and totals (LLM tokens, compactions, violations).
    """
    from memctx._eval_answer import ProbeJudge

    began = time.perf_counter()
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    window = window or scenario.window
    config = MemoryContextConfig(enabled=True).with_overrides(dict(config_overrides or {}))
    counter = TokenCounter(config.token_counter)
    clock = _Clock()
    setup = StrategySetup(
        window=window,
        embedding=embedding if embedding != NO_EMBEDDING else "hash",
        config=config,
        work_dir=Path(work_dir),
        counter=counter,
        clock=clock,
        cross_session=len(scenario.sessions) > 1,
    )
    chosen = make_strategy(strategy, setup)
    judge = ProbeJudge.create(llm, Path(work_dir) / "judge") if llm is not None else None
    run = _Run(scenario, strategy, embedding, window, counter, ScenarioResult())
    probes_at: dict[tuple[str, int], list[Probe]] = {}
    for probe in scenario.probes:
        probes_at.setdefault((probe.session_id, probe.at), []).append(probe)
    try:
        for session in scenario.sessions:
            chosen.start_session(session.id)
            run.previous = []
            transcript: list[dict[str, Any]] = []
            tokens = 0
            messages = session.messages
            for index in range(len(messages) + 1):
                for probe in probes_at.get((session.id, index), ()):
                    _probe_call(run, chosen, transcript, tokens, probe, clock, judge)
                if index == len(messages):
                    break
                message = messages[index]
                if index > 0 and inspect_message(message).kind is RoleKind.ASSISTANT:
                    compacted = chosen.compact(transcript, tokens)
                    if compacted is not None:
                        transcript = compacted
                        tokens = counter.count_messages(transcript)
                        run.compactions += 1
                    _model_call(
                        run,
                        chosen,
                        session.id,
                        index,
                        transcript,
                        tokens,
                        message,
                        clock,
                        compacted is not None,
                    )
                transcript.append(message)
                tokens += counter.count_message(message)
            chosen.end_session(transcript)
    finally:
        usage = chosen.close()
    leaked = _secrets_on_disk(scenario.secrets, Path(work_dir))
    run.violations["secrets"] += leaked
    run.result.stats = {
        "llm_tokens": int(usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)),
        "llm_prompt_tokens": int(usage.get("prompt_tokens", 0)),
        "llm_completion_tokens": int(usage.get("completion_tokens", 0)),
        "compactions": run.compactions,
        "trims": run.trims,
        "calls": run.calls,
        "violation_kinds": {k: run.violations.get(k, 0) for k in _VIOLATION_KINDS},
        "latencies_ms": run.latencies,
        "wall_s": round(time.perf_counter() - began, 3),
        "window": window,
    }
    return run.result


_VIOLATION_KINDS = ("pairing", "hard_cap", "window", "secrets")


def _model_call(
    run: _Run,
    strategy: Any,
    session_id: str,
    index: int,
    transcript: list[dict[str, Any]],
    tokens: int,
    produced: Mapping[str, Any],
    clock: _Clock,
    compacted: bool,
) -> None:
    prepared, sent, recall = _call(run, strategy, transcript, clock)
    events = ["compaction"] if compacted else []
    if prepared.trimmed:
        events.append("trim")
    if sent > run.window:
        events.append("overflow")
    run.result.calls.append(
        _call_row(
            run,
            session_id,
            index,
            tokens,
            sent,
            prepared,
            recall,
            False,
            events,
            run.counter.count_message(produced),
        )
    )


def _call(run: _Run, strategy: Any, messages: list[dict[str, Any]], clock: _Clock) -> Any:
    clock.calls += 1
    run.calls += 1
    prepared = strategy.prepare(messages)
    context = prepared.context
    run.latencies.append(prepared.latency_ms)
    if prepared.trimmed:
        run.trims += 1
    sent = run.counter.count_messages(context)
    blocks = [m for m in context if is_recalled_block(m)]
    recall = run.counter.count_messages(blocks)
    if pairing_violations(context):
        run.violations["pairing"] += 1
    # The cap binds the block's text; a message's own framing is a few tokens more.
    block_text = sum(run.counter.count_text(token_text(b)) for b in blocks)
    if prepared.recall_cap is not None and block_text > prepared.recall_cap:
        run.violations["hard_cap"] += 1
    if sent > run.window and run.strategy_name != "full":
        run.violations["window"] += 1
    if run.scenario.secrets and blocks:
        text = "\n".join(token_text(b) for b in blocks)
        run.violations["secrets"] += sum(secret in text for secret in run.scenario.secrets)
    return prepared, sent, recall


def _call_row(
    run: _Run,
    session_id: str,
    at: int,
    history: int,
    sent: int,
    prepared: Any,
    recall: int,
    probe: bool,
    events: list[str],
    output: int,
) -> CallRow:
    cached = _cached_prefix(run, prepared.context)
    return CallRow(
        suite=run.scenario.suite,
        scenario=run.scenario.id,
        strategy=run.strategy_name,
        embedding=run.embedding,
        session=session_id,
        call=len(run.result.calls),
        at=at,
        history_tokens=history,
        sent_tokens=sent,
        cached_tokens=cached,
        recall_tokens=recall,
        probe=probe,
        output_tokens=output,
        events=events,
        latency_ms=round(prepared.latency_ms, 3),
    )


def _cached_prefix(run: _Run, context: list[dict[str, Any]]) -> int:
    """Tokens of the leading messages identical to the previous request's (cache reads)."""
    cached = 0
    for old, new in zip(run.previous, context, strict=False):
        if old is not new and old != new:
            break
        cached += run.counter.count_message(new)
    run.previous = context
    return cached


def _probe_call(
    run: _Run,
    strategy: Any,
    transcript: list[dict[str, Any]],
    tokens: int,
    probe: Probe,
    clock: _Clock,
    judge: Any,
) -> None:
    question = {"role": "user", "content": probe.question}
    prepared, sent, recall = _call(run, strategy, [*transcript, question], clock)
    events = ["trim"] if prepared.trimmed else []
    fit = sent <= run.window
    if not fit:
        events.append("overflow")
    run.result.calls.append(
        _call_row(run, probe.session_id, probe.at, tokens, sent, prepared, recall, True, events, 0)
    )
    # The question itself is left out: it must not count as an answer.
    text = normalise("\n".join(token_text(m) for m in prepared.context if m is not question))
    answers = [normalise(a) for a in probe.answers]
    present = fit and any(a in text for a in answers)
    evidence = [normalise(e) for e in probe.evidence_text]
    share = sum(e in text for e in evidence) / len(evidence) if evidence and fit else 0.0
    stale = fit and not present and any(normalise(s) in text for s in probe.stale)
    hits = strategy.search(probe.question)
    tool_hit = None
    if hits is not None:
        found = normalise("\n".join(hits))
        tool_hit = present or (fit and any(a in found for a in answers))
    answer = verdict = None
    if judge is not None and fit:
        answer, verdict = judge.answer_and_judge(prepared.context, probe)
    run.result.probes.append(
        ProbeRow(
            suite=run.scenario.suite,
            scenario=run.scenario.id,
            strategy=run.strategy_name,
            embedding=run.embedding,
            probe=probe.id,
            kind=probe.kind,
            tags=list(probe.tags),
            fit=fit,
            correct=present,
            evidence=round(share, 4),
            stale=stale,
            context_tokens=sent,
            recall_tokens=recall,
            tool_hit=tool_hit,
            answer=answer,
            judged=verdict,
        )
    )


def _secrets_on_disk(secrets: Sequence[str], root: Path) -> int:
    """How many planted secrets appear in any file under ``root``."""
    if not secrets or not root.exists():
        return 0
    found: set[str] = set()
    needles = [(s, s.encode("utf-8")) for s in secrets]
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        for secret, raw in needles:
            if raw in data:
                found.add(secret)
    return len(found)
