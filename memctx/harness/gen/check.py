"""Invariants of a generated scenario, checked on every scenario the generator emits.

The harness scores a probe by whether an answer string is present in the context, so a
scenario is only meaningful if (after the harness's normalisation: case-folded, whitespace
collapsed):

- every probe is asked at a user-turn boundary (the transcript ends on a final assistant
  message) after its evidence;
- each evidence message contains its ``evidence_text`` and an answer alias;
- the answers occur in the evidence messages and nowhere else in the scenario, and never in
  the question;
- stale (superseded) values occur only in messages before the evidence;
- every session is free of tool-pairing violations;
- every secret occurs in some tool output, is masked by :func:`memctx.redact`, and is never
  part of an answer.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

from memctx.messages import pairing_violations, token_text
from memctx.text import redact

from ..answers import normalise_answer
from ..scenario import Scenario

__all__ = ["Corpus", "scenario_problems"]


class Corpus:
    """Normalised text of every message of a scenario, searchable in one pass per needle."""

    def __init__(self, scenario: Scenario) -> None:
        self.refs: list[str] = []
        texts: list[str] = []
        for session in scenario.sessions:
            for i, message in enumerate(session.messages):
                self.refs.append(f"{session.id}:{i}")
                texts.append(normalise_answer(token_text(message)))
        self.texts = texts
        self._starts: list[int] = []
        pos = 0
        for text in texts:
            self._starts.append(pos)
            pos += len(text) + 1
        self._joined = "\x00".join(texts)
        self._index = {ref: i for i, ref in enumerate(self.refs)}

    def where(self, needle: str) -> list[str]:
        """Refs of the messages whose normalised text contains ``needle`` (normalised)."""
        needle = normalise_answer(needle)
        found: dict[int, None] = {}
        start = self._joined.find(needle) if needle else -1
        while start >= 0:
            found[bisect.bisect_right(self._starts, start) - 1] = None
            start = self._joined.find(needle, start + 1)
        return [self.refs[i] for i in found]

    def text(self, ref: str) -> str:
        return self.texts[self._index[ref]]

    def order(self, ref: str) -> int:
        return self._index[ref]


def _final_assistant(message: dict[str, Any]) -> bool:
    if message.get("role") != "assistant" or message.get("tool_calls"):
        return False
    content = message.get("content")
    return not (isinstance(content, list) and any(b.get("type") == "tool_use" for b in content))


def _problems(scenario: Scenario) -> Iterator[str]:
    corpus = Corpus(scenario)
    for session in scenario.sessions:
        violations = pairing_violations(list(session.messages))
        if violations:
            yield f"session {session.id}: {len(violations)} pairing violations"
    for p in scenario.probes:
        where = f"probe {p.id}"
        messages = scenario.session(p.session_id).messages
        if not _final_assistant(messages[p.at - 1]):
            yield f"{where}: at={p.at} is not after a final assistant message"
        if p.at < len(messages) and messages[p.at].get("role") != "user":
            yield f"{where}: at={p.at} is not followed by a user message"
        if not p.evidence or len(p.evidence_text) != len(p.evidence):
            yield f"{where}: needs evidence and one evidence_text per evidence message"
            continue
        question = normalise_answer(p.question)
        for value in (*p.answers, *p.stale):
            if normalise_answer(value) in question:
                yield f"{where}: question contains {value!r}"
        holders = {ref for a in p.answers for ref in corpus.where(a)}
        if holders != set(p.evidence):
            yield f"{where}: answers occur in {sorted(holders)}, evidence is {list(p.evidence)}"
        first = min(corpus.order(ref) for ref in p.evidence)
        sid, _, idx = p.evidence[-1].rpartition(":")
        if sid == p.session_id and int(idx) >= p.at:
            yield f"{where}: evidence {p.evidence[-1]} is not before at={p.at}"
        for ref, span in zip(p.evidence, p.evidence_text, strict=False):
            if normalise_answer(span) not in corpus.text(ref):
                yield f"{where}: evidence_text {span!r} not in {ref}"
            if not any(normalise_answer(a) in normalise_answer(span) for a in p.answers):
                yield f"{where}: evidence_text {span!r} holds no answer"
        for value in p.stale:
            late = [ref for ref in corpus.where(value) if corpus.order(ref) >= first]
            if late:
                yield f"{where}: stale {value!r} occurs at or after the evidence: {late}"
        for a in p.answers:
            if len(normalise_answer(a)) < 3:
                yield f"{where}: answer {a!r} is too short to score"
    answers = {normalise_answer(a) for p in scenario.probes for a in p.answers}
    for secret in scenario.secrets:
        refs = corpus.where(secret)
        if not refs:
            yield f"secret {secret[:6]}...: not present in any message"
        for ref in refs:
            sid, _, idx = ref.rpartition(":")
            raw = token_text(scenario.session(sid).messages[int(idx)])
            if secret in redact(raw):
                yield f"secret {secret[:6]}... survives redaction in {ref}"
        if any(a in normalise_answer(secret) for a in answers):
            yield f"secret {secret[:6]}... contains an answer"


def scenario_problems(scenario: Scenario) -> list[str]:
    """Every broken invariant of ``scenario`` (empty when it is sound)."""
    return list(_problems(scenario))
