"""The replay engine: one scenario through one strategy, call by call, every call checked.

:func:`run_scenario` plays the agent loop. Sessions run in order against one work directory.
Within a session every assistant message of the transcript marks one model call: the
strategy may first compact the transcript (:meth:`~memctx.harness.Strategy.compact`),
then prepares the call's context from the transcript so far; the assistant message is then
appended. Every probe is one extra call at its position (``Probe.at``) with the question
appended as a user message for that call only. Each call is recorded as a
:class:`~memctx.harness.schema.CallRow` and each probe scored as a
:class:`~memctx.harness.schema.ProbeRow`.

Checks at every call: tool pairing of the context (zero violations for every strategy), the
recalled block within the recall cap, the context within the window (for ``full`` an
oversized call is only "not fit"), no planted secret in a recalled block; at the end, no
planted secret in any file under the work directory.

Determinism: the same inputs give the same rows apart from ``latency_ms`` and ``wall_s``.
The engine hands the strategy a clock that advances a fixed step per call (store timestamps
and time decay never read the wall clock), and strategies wait for their background work
(embedding, extraction) after each hook, outside the timed section, so what a call can
recall never depends on thread scheduling.

Cost per call is priced later (:mod:`memctx.harness.metrics`); here ``cached_tokens`` counts
the leading messages identical (same dict, else equal) to the previous request of the
session, which is what a provider's prompt cache would serve.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.messages import InfoCache, RoleKind, token_text
from memctx.strategies import (
    Messages,
    Prepared,
    Strategy,
    StrategySetup,
    build_strategy,
    parse_strategy,
    strategy_info,
)

from .answers import normalise_answer
from .embedders import job_embedder
from .ledger import ContextLedger, IdentityInfos, Measure, MessageMeter, MeteredCounter
from .scenario import Probe, Scenario
from .schema import NO_EMBEDDING, CallRow, ProbeRow

__all__ = [
    "CLOCK_START",
    "CLOCK_STEP",
    "VIOLATION_KINDS",
    "ScenarioResult",
    "job_config",
    "run_scenario",
]

VIOLATION_KINDS = ("pairing", "hard_cap", "window", "secrets")
CLOCK_START = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a fixed origin for store timestamps
CLOCK_STEP = 60.0  # one minute per model call


@dataclass
class ScenarioResult:
    """What one scenario × strategy × embedding produced.

    Attributes:
        probes: One row per probe, in scenario order.
        calls: One row per model call (transcript calls and probe calls), in order.
        stats: ``llm_tokens``, ``llm_prompt_tokens``, ``llm_completion_tokens``,
            ``llm_largest_prompt_tokens`` (the largest input of one summary or extraction call),
            ``llm_cost_usd``, ``compactions``, ``trims``, ``calls``, ``violation_kinds``,
            ``hook_latencies_ms`` (one per call), ``hook_failures``, ``wall_s``, ``window``,
            ``answer_model``.
        explained: For each probe id asked for with ``explain``: what its call saw (the
            transcript, the context sent, the events, the strategy's own record of the
            call); read by :mod:`memctx.harness.explain`.
    """

    probes: list[ProbeRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    explained: dict[str, dict[str, Any]] = field(default_factory=dict)


class _Clock:
    """Deterministic epoch seconds: :data:`CLOCK_START` plus one step per call made."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> float:
        return CLOCK_START + self.ticks * CLOCK_STEP


@dataclass
class _Replay:
    """The running state of one replay."""

    scenario: Scenario
    name: str
    embedding: str
    window: int
    strategy: Strategy
    meter: MessageMeter
    infos: InfoCache
    clock: _Clock
    judge: Any = None
    explain: frozenset[str] = frozenset()
    result: ScenarioResult = field(default_factory=ScenarioResult)
    violations: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    ledger: ContextLedger = field(init=False)
    compactions: int = 0
    trims: int = 0

    def __post_init__(self) -> None:
        self.ledger = ContextLedger(self.meter.tokens, self.meter.recalled, self.infos)

    def call(self, messages: Messages) -> tuple[Prepared, Measure]:
        """Prepare one call and run the per-call checks."""
        self.clock.ticks += 1
        prepared = self.strategy.prepare(messages)
        context = prepared.context
        self.latencies.append(prepared.latency_ms)
        self.trims += prepared.trimmed
        measure = self.ledger.measure(context, now=self.clock())
        if not measure.pairing_ok:
            self.violations["pairing"] += 1
        cap = prepared.recall_cap
        if cap is not None and any(measure.sizes[i] > cap for i in measure.blocks):
            self.violations["hard_cap"] += 1
        if measure.sent > self.window and self.name != "full":
            self.violations["window"] += 1
        for i in measure.blocks:
            text = token_text(context[i])
            self.violations["secrets"] += sum(s in text for s in self.scenario.secrets)
        return prepared, measure

    def row(
        self,
        session: str,
        at: int,
        history: int,
        prepared: Prepared,
        measure: Measure,
        *,
        probe: str | None,
        events: list[str],
        output: int = 0,
        compacted_from: int = 0,
    ) -> None:
        if prepared.trimmed:
            events.append("trim")
        if measure.sent > self.window:
            events.append("overflow")
        # Only a transcript the provider would refuse whole needs a recovery path.
        needed = max(history, compacted_from) > self.window
        recovery = (prepared.recovery or "not reported") if needed else ""
        self.result.calls.append(
            CallRow(
                suite=self.scenario.suite,
                scenario=self.scenario.id,
                strategy=self.name,
                embedding=self.embedding,
                session=session,
                call=len(self.result.calls),
                at=at,
                history_tokens=history,
                sent_tokens=measure.sent,
                cached_tokens=measure.cached,
                recall_tokens=measure.recall,
                probe=probe,
                output_tokens=output,
                events=events,
                latency_ms=round(prepared.latency_ms, 3),
                compacted_from=compacted_from,
                recovery=recovery,
            )
        )

    def compact(self, transcript: Messages, tokens: int) -> tuple[Messages, int, list[str]]:
        replaced = self.strategy.compact(transcript, tokens)
        if replaced is None:
            return transcript, tokens, []
        self.compactions += 1
        return replaced, sum(self.meter.tokens(m) for m in replaced), ["compaction"]

    def probe(
        self,
        session: str,
        transcript: Messages,
        tokens: int,
        probe: Probe,
        events: list[str],
        compacted_from: int = 0,
    ) -> None:
        question = {"role": "user", "content": probe.question}
        prepared, measure = self.call([*transcript, question])
        self.row(
            session,
            probe.at,
            tokens,
            prepared,
            measure,
            probe=probe.id,
            events=events,
            compacted_from=compacted_from,
        )
        sent, recall = measure.sent, measure.recall
        fit = sent <= self.window
        # The question itself is left out: it must not count as its own answer.
        texts = [self.meter.text(m) for m in prepared.context if m is not question]
        answers = [normalise_answer(a) for a in probe.answers]
        present = any(a in t for a in answers for t in texts)
        spans = [normalise_answer(e) for e in probe.evidence_text]
        evidence = sum(any(e in t for t in texts) for e in spans) / len(spans) if spans else 0.0
        stale = not present and any(normalise_answer(s) in t for s in probe.stale for t in texts)
        hits = self.strategy.search(probe.question)
        tool_hit = None
        if hits is not None:
            found = normalise_answer("\n".join(hits))
            tool_hit = fit and (present or any(a in found for a in answers))
            found_secrets = sum(s in "\n".join(hits) for s in self.scenario.secrets)
            self.violations["secrets"] += found_secrets
        if probe.id in self.explain:
            self.capture(probe, transcript, prepared, measure.sent, events)
        answer = verdict = None
        if self.judge is not None and fit:
            answer, verdict = self.judge.answer_and_judge(prepared.context, probe)
        self.result.probes.append(
            ProbeRow(
                suite=self.scenario.suite,
                scenario=self.scenario.id,
                strategy=self.name,
                embedding=self.embedding,
                probe=probe.id,
                kind=probe.kind,
                tags=list(probe.tags),
                fits=fit,
                recall_accuracy=present if fit else None,
                tool_accuracy=(present if tool_hit is None else tool_hit) if fit else None,
                evidence_recall=round(evidence, 4) if fit else None,
                stale_rate=stale if fit else None,
                sent_tokens=sent,
                recall_tokens=recall,
                has_tool=hits is not None,
                answer=answer,
                judged=verdict,
                question=probe.question,
                answers=list(probe.answers),
            )
        )

    def capture(
        self, probe: Probe, transcript: Messages, prepared: Prepared, sent: int, events: list[str]
    ) -> None:
        """Keep what ``probe``'s call saw, for :mod:`memctx.harness.explain`."""
        record: Any = getattr(getattr(self.strategy, "engine", None), "last_call", None)
        self.result.explained[probe.id] = {
            "transcript": list(transcript),
            "context": list(prepared.context),
            "sent_tokens": sent,
            "window": self.window,
            "events": list(events),
            "trimmed": prepared.trimmed,
            "recovery": prepared.recovery,
            # The hook's own account of the call, as plain data (its as_dict).
            "call_record": record.as_dict() if hasattr(record, "as_dict") else None,
        }


def run_scenario(
    scenario: Scenario,
    strategy: str,
    embedding: str,
    *,
    window: int | None = None,
    config: MemoryContextConfig | None = None,
    answer_model: str = "claude-sonnet-4-5",
    work_dir: Path,
    llm: Any | None = None,
    explain: Collection[str] = (),
) -> ScenarioResult:
    """Replay ``scenario`` through ``strategy`` and score every probe.

    Args:
        scenario: The sessions and probes.
        strategy: A registered strategy (:func:`memctx.strategies.strategy_names`), maybe
            with settings (``observation-masking:keepLast=5``).
        embedding: ``"hash"`` or ``"transformer"`` (it sets ``embeddingModel``); strategies
            that never search report ``"-"`` whatever is given.
        window: Context window in tokens; ``None`` means the scenario's own.
        config: memctx settings (``None``: the defaults). Cross-session recall is switched
            on for multi-session scenarios unless the config sets ``crossSession``; the
            settings a scenario names in ``meta["settings"]`` apply unless the config sets
            them.
        answer_model: The litellm model the calls are priced with (recorded in ``stats``;
            prices are applied by :func:`memctx.harness.metrics.aggregate`).
        work_dir: A fresh directory for the strategy's stores (created if missing).
        llm: ``None`` (presence scoring only), a litellm model string, or a client with
            ``complete`` (e.g. an :class:`~memctx.llm.client.LLMClient`): the model answers each
            fitted probe from its context and judges the answer (``ProbeRow.answer``/``judged``).
        explain: Probe ids whose calls to keep whole in ``ScenarioResult.explained``.

    Returns:
        The probe rows, call rows and totals.

    Raises:
        ValueError: Unknown strategy or invalid window.
        ConfigError: A setting in the strategy's name conflicts with ``config``.
        StrategyError: A plugin strategy broke the protocol (named in the message).
    """
    from .answer import ProbeJudge

    began = time.perf_counter()
    window = window or scenario.window
    if window <= 0:
        raise ValueError(f"window must be a positive number of tokens, got {window}")
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    searches = strategy_info(parse_strategy(strategy)[0]).searches
    config = job_config(config, scenario, embedding if searches else NO_EMBEDDING)
    counter = MeteredCounter(config.token_counter)
    infos = IdentityInfos()
    clock = _Clock()
    setup = StrategySetup(
        window,
        config,
        work / "store",
        counter,
        infos,
        clock,
        embedder=job_embedder(embedding, config.transformer_model) if searches else None,
        wait_for_background=True,
    )
    chosen = build_strategy(strategy, setup)
    judge = ProbeJudge.create(llm, work / "judge") if llm is not None else None
    replay = _Replay(
        scenario,
        strategy,
        embedding if searches else NO_EMBEDDING,
        window,
        chosen,
        counter.meter,
        infos,
        clock,
        judge,
        frozenset(explain),
    )
    try:
        _play(replay, scenario)
    finally:
        usage = chosen.close()
    replay.violations["secrets"] += _secrets_on_disk(scenario.secrets, work, skip=work / "judge")
    prompt = int(usage.get("prompt_tokens", 0))
    completion = int(usage.get("completion_tokens", 0))
    replay.result.stats = {
        "llm_tokens": prompt + completion,
        "llm_prompt_tokens": prompt,
        "llm_completion_tokens": completion,
        "llm_largest_prompt_tokens": int(usage.get("largest_prompt_tokens", 0)),
        "llm_cost_usd": float(usage.get("cost_usd", 0.0)),
        "compactions": replay.compactions,
        "trims": replay.trims,
        "calls": len(replay.result.calls),
        "violation_kinds": {k: replay.violations.get(k, 0) for k in VIOLATION_KINDS},
        "hook_latencies_ms": replay.latencies,
        "hook_failures": int(usage.get("hook_failures", 0)),
        "wall_s": round(time.perf_counter() - began, 3),
        "window": window,
        "answer_model": answer_model,
    }
    return replay.result


def job_config(
    config: MemoryContextConfig | None, scenario: Scenario, embedding: str
) -> MemoryContextConfig:
    """The config one replay runs with: ``config`` (the defaults when ``None``), the job's
    embedder as ``embeddingModel`` (``"-"``: a strategy that never embeds keeps the config's),
    cross-session recall on for a scenario of several sessions, and what the scenario's data
    needs (``meta["settings"]``: LoCoMo's 2023 dates need a long retention), each unless
    ``config`` sets it."""
    config = config if config is not None else MemoryContextConfig()
    explicit = config.explicit_settings()
    needed = MemoryContextConfig().with_overrides(dict(scenario.meta.get("settings") or {}))
    settings = {k: v for k, v in needed.explicit_settings().items() if k not in explicit}
    if "crossSession" not in explicit:
        settings["crossSession"] = len(scenario.sessions) > 1
    if embedding != NO_EMBEDDING:
        settings["embeddingModel"] = embedding
    return config.with_overrides(settings)


def _play(replay: _Replay, scenario: Scenario) -> None:
    """Every session in order: compaction, calls and probes at their positions."""
    probes_at: dict[tuple[str, int], list[Probe]] = {}
    for probe in scenario.probes:
        probes_at.setdefault((probe.session_id, probe.at), []).append(probe)
    meter, strategy = replay.meter, replay.strategy
    for session in scenario.sessions:
        strategy.start_session(session.id)
        replay.ledger.reset()
        transcript: Messages = []
        tokens = 0
        messages = session.messages
        for index in range(len(messages) + 1):
            for probe in probes_at.get((session.id, index), ()):
                before = tokens
                transcript, tokens, events = replay.compact(transcript, tokens)
                replay.probe(session.id, transcript, tokens, probe, events, before if events else 0)
            if index == len(messages):
                break
            message = messages[index]
            if transcript and replay.infos.info(message).kind is RoleKind.ASSISTANT:
                before = tokens
                transcript, tokens, events = replay.compact(transcript, tokens)
                prepared, measure = replay.call(transcript)
                output = meter.tokens(message)
                replay.row(
                    session.id,
                    index,
                    tokens,
                    prepared,
                    measure,
                    probe=None,
                    events=events,
                    output=output,
                    compacted_from=before if events else 0,
                )
            transcript.append(message)
            tokens += meter.tokens(message)
        strategy.end_session(transcript)


def _secrets_on_disk(secrets: Sequence[str], root: Path, *, skip: Path) -> int:
    """How many planted secrets appear in any file under ``root`` (``skip`` excepted)."""
    if not secrets or not root.exists():
        return 0
    needles = {s: s.encode("utf-8") for s in secrets}
    found: set[str] = set()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or skip in path.parents:
            continue
        data = path.read_bytes()
        found.update(s for s, raw in needles.items() if raw in data)
    return len(found)
