"""Explain one probe of a finished run: what the model would have received, and why.

The run's files hold figures, not contexts (a context per probe per strategy would be
gigabytes). Replays are deterministic, so :func:`explain_probe` plays the probe's scenario
again through the one strategy × embedding, keeps that probe's call whole
(``run_scenario(explain=...)``) and checks that it scores as the run recorded. It then says
where the answer was in the history, whether each evidence message was sent verbatim,
recalled or left out, which stretches of the history were not sent, what the recall block
held and, for memctx's own hook, its record of the call (trimmed messages and the step that
removed each, recalled items with their scores). Behind ``memctx show RUN PROBE_ID``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.messages import is_recalled_block, token_text

from .answers import normalise_answer
from .engine import run_scenario
from .run import EvalOptions, load_suite_scenarios
from .runs import find_run
from .scenario import Probe, Scenario
from .schema import upgrade_summary

__all__ = ["ContextLine", "EvidenceLine", "ProbeExplanation", "explain_probe", "format_explanation"]

_PREVIEW = 160


@dataclass(frozen=True)
class EvidenceLine:
    """Where one evidence message of the probe went.

    Attributes:
        ref: The message's id, ``"<session>:<index>"``.
        fate: ``"sent"`` (verbatim), ``"recalled"`` (its text inside the recall block),
            ``"changed"`` (part of it sent, e.g. pruned or summarised) or ``"not sent"``.
        preview: The start of its text.
    """

    ref: str
    fate: str
    preview: str


@dataclass(frozen=True)
class ContextLine:
    """One message of the context sent.

    Attributes:
        index: Its position in the context.
        role: Its role.
        kind: ``"message"``, ``"recall block"`` or ``"question"`` (the probe itself).
        chars: Its text length.
        holds_answer: An expected answer is in it.
        preview: The start of its text.
    """

    index: int
    role: str
    kind: str
    chars: int
    holds_answer: bool
    preview: str


@dataclass(frozen=True)
class ProbeExplanation:
    """One probe under one strategy × embedding, explained (see the module docs)."""

    run: str
    suite: str
    scenario: str
    strategy: str
    embedding: str
    probe: Probe
    window: int
    sent_tokens: int
    fits: bool
    answer_in_context: bool
    answer_in_recall: bool
    recorded_correct: bool | None
    history_messages: int
    answer_messages: list[int]
    evidence: list[EvidenceLine]
    not_sent: list[tuple[int, int]]
    context: list[ContextLine]
    recall_block: str | None
    events: list[str]
    recovery: str
    call_record: dict[str, Any] | None = None
    others: list[dict[str, Any]] = field(default_factory=list)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…"


def _rows(run_dir: Path, probe_id: str) -> list[dict[str, Any]]:
    found = []
    with (run_dir / "results.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if probe_id in line:
                row = json.loads(line)
                if row.get("probe") == probe_id:
                    found.append(row)
    return found


def _scenario(summary: Mapping[str, Any], suite: str, scenario_id: str) -> Scenario:
    config = summary.get("config") or {}
    datasets = str((summary.get("provenance") or {}).get("datasets", ""))
    quick = bool(config.get("quick"))
    real = (summary.get("real_data") or {}).get("datasets")  # a real-data suite's folder
    options = EvalOptions(
        suites=(suite,),
        quick=quick,
        seed=int(config.get("seed", 0)),
        datasets_dir=None if quick or datasets in ("", "datasets/v1") else Path(datasets),
        real_datasets=Path(real) if real else None,
        limit=config.get("limit"),
    )
    for scenario in load_suite_scenarios(options)[suite]:
        if scenario.id == scenario_id:
            return scenario
    raise ValueError(
        f"scenario {scenario_id!r} of suite {suite!r} is not in the datasets the run used "
        f"({datasets or 'datasets/v1'}); explain the run on the checkout that made it"
    )


def _fates(history: Sequence[Any], context: Sequence[Any]) -> list[str]:
    """For each history message: sent verbatim, recalled, changed, or not sent."""
    sent_ids = {id(m) for m in context}
    plain = [normalise_answer(token_text(m)) for m in context if not is_recalled_block(m)]
    recalled = "\n".join(normalise_answer(token_text(m)) for m in context if is_recalled_block(m))
    sent_texts = set(plain)
    joined = "\n".join(plain)
    fates = []
    for message in history:
        text = normalise_answer(token_text(message))
        if id(message) in sent_ids or text in sent_texts or (text and text in joined):
            fates.append("sent")
        elif text and text in recalled:
            fates.append("recalled")
        elif text and text[:80] in joined:
            fates.append("changed")
        else:
            fates.append("not sent")
    return fates


def _spans(fates: Sequence[str]) -> list[tuple[int, int]]:
    """Runs of history indices whose messages were not sent, as (first, last)."""
    spans: list[tuple[int, int]] = []
    for i, fate in enumerate(fates):
        if fate != "not sent":
            continue
        if spans and spans[-1][1] == i - 1:
            spans[-1] = (spans[-1][0], i)
        else:
            spans.append((i, i))
    return spans


def explain_probe(
    run: str | Path,
    probe_id: str,
    *,
    strategy: str | None = None,
    embedding: str | None = None,
    reports: Path = Path("reports"),
) -> ProbeExplanation:
    """Replay ``probe_id`` of ``run`` through one of its strategies and explain its call.

    Args:
        run: A run folder, its ``summary.json``, a run id or ``latest``.
        probe_id: The probe's id (the ``probe`` column of ``results.jsonl``).
        strategy: Which strategy's call to explain; default: ``memory-context`` when the run
            has it, else the first strategy that ran the probe.
        embedding: Which embedding; default: the first the strategy ran with.
        reports: Where run ids are looked up.

    Raises:
        FileNotFoundError: No such run.
        ValueError: No such probe, or no row for that strategy × embedding (the message
            lists the ones there are).
    """
    run_dir = find_run(run, reports)
    summary = upgrade_summary(json.loads((run_dir / "summary.json").read_text(encoding="utf-8")))
    rows = _rows(run_dir, probe_id)
    if not rows:
        raise ValueError(
            f"no probe {probe_id!r} in {run_dir / 'results.jsonl'}; pass an id from its "
            "'probe' column (each line of results.jsonl names one)"
        )
    names = list(dict.fromkeys(r["strategy"] for r in rows))
    chosen = strategy or ("memory-context" if "memory-context" in names else names[0])
    matching = [r for r in rows if r["strategy"] == chosen and embedding in (None, r["embedding"])]
    if not matching:
        pairs = ", ".join(f"{r['strategy']}/{r['embedding']}" for r in rows)
        raise ValueError(
            f"probe {probe_id!r} has no row for {chosen}/{embedding or 'any'}; ran with: {pairs}"
        )
    row = matching[0]
    scenario = _scenario(summary, row["suite"], row["scenario"])
    probe = next(p for p in scenario.probes if p.id == probe_id)
    config = summary.get("config") or {}
    windows = config.get("windows") or [None]
    with tempfile.TemporaryDirectory(prefix="memctx-explain-") as work:
        result = run_scenario(
            scenario,
            row["strategy"],
            row["embedding"] if row["embedding"] != "none" else "hash",
            window=windows[0],
            config=MemoryContextConfig().with_overrides(dict(config.get("overrides") or {})),
            work_dir=Path(work),
            explain={probe_id},
        )
    seen = result.explained[probe_id]
    replayed = next(p for p in result.probes if p.probe == probe_id)
    session = next(s for s in scenario.sessions if s.id == probe.session_id)
    history = list(session.messages[: probe.at])
    context = seen["context"]
    answers = [normalise_answer(a) for a in probe.answers]
    fates = _fates(history, context)
    lines = []
    recall_text = None
    for i, message in enumerate(context):
        text = token_text(message)
        norm = normalise_answer(text)
        last = i == len(context) - 1 and text == probe.question
        kind = "question" if last else "recall block" if is_recalled_block(message) else "message"
        if kind == "recall block":
            recall_text = text
        holds = kind != "question" and any(a in norm for a in answers)
        role = str(message.get("role", "")) if isinstance(message, Mapping) else ""
        lines.append(ContextLine(i, role, kind, len(text), holds, _preview(text)))
    by_ref = {f"{probe.session_id}:{i}": i for i in range(len(history))}
    evidence = [
        EvidenceLine(
            ref,
            fates[by_ref[ref]] if ref in by_ref else "not in this session",
            _preview(token_text(history[by_ref[ref]])) if ref in by_ref else "",
        )
        for ref in probe.evidence
    ]
    answer_messages = [
        i
        for i, m in enumerate(history)
        if any(a in normalise_answer(token_text(m)) for a in answers)
    ]
    in_recall = recall_text is not None and any(a in normalise_answer(recall_text) for a in answers)
    return ProbeExplanation(
        run=run_dir.resolve().name,
        suite=row["suite"],
        scenario=row["scenario"],
        strategy=row["strategy"],
        embedding=row["embedding"],
        probe=probe,
        window=int(seen["window"]),
        sent_tokens=int(seen["sent_tokens"]),
        fits=bool(replayed.fits),
        answer_in_context=any(line.holds_answer for line in lines),
        answer_in_recall=in_recall,
        recorded_correct=row.get("recall_accuracy"),
        history_messages=len(history),
        answer_messages=answer_messages,
        evidence=evidence,
        not_sent=_spans(fates),
        context=lines,
        recall_block=recall_text,
        events=list(seen["events"]),
        recovery=str(seen["recovery"]),
        call_record=seen["call_record"],
        others=[
            {k: r.get(k) for k in ("strategy", "embedding", "fits", "recall_accuracy")}
            for r in rows
        ],
    )


def format_explanation(ex: ProbeExplanation, *, full_recall: bool = True) -> str:
    """The explanation as text for the terminal."""
    p = ex.probe
    verdict = (
        "over the window: the provider would refuse it"
        if not ex.fits
        else "the answer IS in the context"
        if ex.answer_in_context
        else "the answer is NOT in the context"
    )
    out = [
        f"probe {p.id} ({p.kind}) in {ex.suite}/{ex.scenario}, session {p.session_id}, "
        f"asked after message {p.at}",
        f"  question: {p.question}",
        f"  expected: {' | '.join(p.answers)}"
        + (f"  (stale: {' | '.join(p.stale)})" if p.stale else ""),
        f"strategy {ex.strategy} × {ex.embedding}: {ex.sent_tokens:,} of {ex.window:,} tokens "
        f"sent; {verdict}" + (" (via the recall block)" if ex.answer_in_recall else ""),
    ]
    if ex.recorded_correct is not None and ex.recorded_correct != ex.answer_in_context:
        out.append("  warning: the run recorded a different outcome (was it made by other code?)")
    out.append(
        "all strategies on this probe (from the run): "
        + ", ".join(
            f"{o['strategy']}/{o['embedding']} "
            + ("unfit" if not o["fits"] else "hit" if o["recall_accuracy"] else "miss")
            for o in ex.others
        )
    )
    where = ", ".join(str(i) for i in ex.answer_messages[:10]) or "none"
    out.append(f"history: {ex.history_messages} messages; the answer is in message(s) {where}")
    for e in ex.evidence:
        out.append(f"  evidence {e.ref}: {e.fate}: {e.preview}")
    if ex.not_sent:
        spans = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ex.not_sent[:12])
        count = sum(b - a + 1 for a, b in ex.not_sent)
        out.append(
            f"not sent: {count} message(s): {spans}" + (" …" if len(ex.not_sent) > 12 else "")
        )
    why = ", ".join(ex.events) or "none at this call"
    out.append(f"events: {why}" + (f"; recovery: {ex.recovery}" if ex.recovery else ""))
    record = ex.call_record
    if record:
        trimmed = record.get("trimmed") or []
        layers: dict[str, int] = {}
        for t in trimmed:
            layers[str(t.get("layer"))] = layers.get(str(t.get("layer")), 0) + 1
        out.append(
            f"memctx's record of the call: {record.get('tokens_before', '?')} → "
            f"{record.get('tokens_after', '?')} tokens; trimmed {len(trimmed)} "
            f"({', '.join(f'{k} {v}' for k, v in layers.items()) or 'none'}); recall "
            f"{record.get('recall', '?')} (min score {record.get('min_score', 0)})"
        )
        for item in (record.get("recalled") or [])[:10]:
            out.append(
                f"  recalled {item.get('kind', '?')} score {float(item.get('score', 0)):.3f}: "
                f"{item.get('preview', '')}"
            )
    out.append(f"context sent ({len(ex.context)} messages):")
    for line in ex.context:
        mark = " <- answer" if line.holds_answer else ""
        head = f"  [{line.index}] {line.role or '-'} {line.kind}, {line.chars:,} chars"
        out.append(f"{head}{mark}: {line.preview}")
    if ex.recall_block and full_recall:
        out += ["recall block:", ex.recall_block]
    return "\n".join(out)
