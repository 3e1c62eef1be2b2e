"""The suites that probe the agent's working state: ``rules``, ``task-state``, ``artifacts``.

Checked independently of the generator's own checker: sizes, probe kinds and their variants
(a rule revised or standing, a todo item done or open), answers only where they were stated,
superseded values only before, and questions asked windows after the statement.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memctx import estimate_tokens
from memctx.harness.gen.generate import (
    DEFAULT_SUITES,
    generate_suite,
    write_datasets,
)
from memctx.harness.run import EvalOptions, load_suite_scenarios
from memctx.harness.scenario import Scenario, dump_scenarios
from memctx.messages.anatomy import token_text

STATE_SUITES = {"rules": ("rule", "revised", "standing"), "task-state": ("task", "done", "open")}
ALL_STATE = [*STATE_SUITES, "artifacts", "decisions", "continuation"]
_ARTIFACT_EVENTS = ("renamed", "created", "deleted", "modified")


def norm(text: str) -> str:
    return " ".join(text.split()).casefold()


@pytest.fixture(scope="module")
def full() -> dict[str, list[Scenario]]:
    return {suite: generate_suite(suite, seed=0, scale=1.0) for suite in ALL_STATE}


def _texts(scenario: Scenario) -> list[tuple[str, str]]:
    return [
        (f"{s.id}:{i}", norm(token_text(m)))
        for s in scenario.sessions
        for i, m in enumerate(s.messages)
    ]


@pytest.mark.parametrize("suite", ALL_STATE)
def test_seeded_and_deterministic(suite: str, tmp_path: Path) -> None:
    a = dump_scenarios(generate_suite(suite, seed=5, scale=0.15), tmp_path / "a.jsonl.gz")
    b = dump_scenarios(generate_suite(suite, seed=5, scale=0.15), tmp_path / "b.jsonl.gz")
    c = dump_scenarios(generate_suite(suite, seed=6, scale=0.15), tmp_path / "c.jsonl.gz")
    assert a == b and a != c
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()


@pytest.mark.parametrize("suite", list(STATE_SUITES))
def test_forty_probes_of_the_suites_kind_in_both_variants(
    full: dict[str, list[Scenario]], suite: str
) -> None:
    kind, changed, unchanged = STATE_SUITES[suite]
    probes = [p for s in full[suite] for p in s.probes]
    assert len(probes) >= 40
    assert {p.kind for p in probes} == {kind}
    revised = [p for p in probes if changed in p.tags]
    kept = [p for p in probes if unchanged in p.tags]
    assert len(revised) >= 10 and len(kept) >= 10 and len(revised) + len(kept) == len(probes)
    # A revised rule or a finished item has an earlier value the context must not stop at.
    assert all(p.stale for p in revised) and not any(p.stale for p in kept)
    assert len({p.question for p in probes}) > len(probes) // 2


@pytest.mark.parametrize("suite", ALL_STATE)
def test_answers_only_where_stated_and_superseded_values_only_before(
    full: dict[str, list[Scenario]], suite: str
) -> None:
    for scenario in full[suite]:
        texts = _texts(scenario)
        refs = [ref for ref, _ in texts]
        for p in scenario.probes:
            holders = {ref for ref, text in texts if any(norm(a) in text for a in p.answers)}
            assert holders == set(p.evidence), p.id
            for ref, span in zip(p.evidence, p.evidence_text, strict=True):
                assert norm(span) in dict(texts)[ref]
                assert any(norm(a) in norm(span) for a in p.answers), p.id
            assert int(p.evidence[-1].rpartition(":")[2]) < p.at
            first = min(refs.index(ref) for ref in p.evidence)
            # Aliases of a superseded value are not all written out, but some are, and only
            # before the current value was stated.
            where = [i for v in p.stale for i, (_, text) in enumerate(texts) if norm(v) in text]
            assert bool(where) == bool(p.stale) and all(i < first for i in where), p.id
            assert not any(norm(a) in norm(p.question) for a in (*p.answers, *p.stale))


def _tokens_between(scenario: Scenario, ref: str, at: int) -> int:
    session, _, index = ref.rpartition(":")
    messages = scenario.session(session).messages
    return sum(estimate_tokens(token_text(m)) for m in messages[int(index) : at])


def test_rules_are_stated_early_and_asked_after_several_windows(
    full: dict[str, list[Scenario]],
) -> None:
    for scenario in full["rules"]:
        texts = _texts(scenario)
        total = sum(estimate_tokens(token_text(m)) for m in scenario.sessions[0].messages)
        gaps, starts = [], []
        for p in scenario.probes:
            gap = _tokens_between(scenario, p.evidence[-1], p.at)
            assert gap > 1.25 * scenario.window, (p.id, gap)  # trimmed away at least once
            gaps.append(gap / scenario.window)
            # The rule's first statement (its first value) comes early in the session.
            first_value = (p.stale or p.answers)[0]
            first = next(i for i, (_, text) in enumerate(texts) if norm(first_value) in text)
            starts.append(_tokens_between(scenario, "s1:0", first) / total)
        assert statistics.median(gaps) >= 2.0
        # Planned in the first fifth of the session's tokens; a dozen rules, each stated in a
        # work turn of its own, push the last ones later, still well before the questions.
        assert max(starts) < 0.45 and statistics.median(starts) < 0.35, starts


def test_task_items_are_asked_after_long_work(full: dict[str, list[Scenario]]) -> None:
    probes = [(s, p) for s in full["task-state"] for p in s.probes]
    far = [_tokens_between(s, p.evidence[-1], p.at) > s.window for s, p in probes]
    assert sum(far) >= 0.85 * len(probes)
    # A finished item's latest statement follows the one that left it open.
    for scenario, p in probes:
        if "done" in p.tags:
            assert scenario.probes and p.stale and "supersede" in p.tags


def test_eval_plays_every_suite_of_the_datasets_unless_some_are_named(
    tmp_path: Path,
) -> None:
    write_datasets(tmp_path, scale=0.15, suites=("needle", "rules", "task-state"))
    played = load_suite_scenarios(EvalOptions(datasets_dir=tmp_path, suites=()))
    assert list(played) == ["needle", "rules", "task-state"]
    named = load_suite_scenarios(EvalOptions(datasets_dir=tmp_path, suites=("rules",)))
    assert list(named) == ["rules"] and named["rules"][0].probes[0].kind == "rule"
    quick = load_suite_scenarios(EvalOptions(quick=True, suites=("task-state",)))
    assert list(quick) == ["task-state"]
    assert "rules" in DEFAULT_SUITES and "task-state" in DEFAULT_SUITES


def _has_call(message: dict[str, Any]) -> bool:
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return bool(message.get("tool_calls")) or any(b.get("type") == "tool_use" for b in blocks)


def test_artifacts_are_told_by_the_tool_call_alone(full: dict[str, list[Scenario]]) -> None:
    probes = [(s, p) for s in full["artifacts"] for p in s.probes]
    assert len(probes) >= 40 and {p.kind for _, p in probes} == {"artifact"}
    what = Counter(t for _, p in probes for t in p.tags if t in _ARTIFACT_EVENTS)
    assert set(what) == set(_ARTIFACT_EVENTS) and min(what.values()) >= 5, what
    formats = set()
    for scenario, p in probes:
        formats.add(scenario.format)
        assert len(p.evidence) == 1 and "tool-call" in p.tags and not p.stale
        session, _, index = p.evidence[0].rpartition(":")
        messages = scenario.session(session).messages
        # The value is in the call's input; its result (the next message) does not repeat it.
        assert _has_call(messages[int(index)]), p.id
        result = norm(token_text(messages[int(index) + 1]))
        assert not any(norm(a) in result for a in p.answers), p.id
    assert formats == {"openai", "anthropic"}


def test_multi_cycle_plants_before_each_of_many_compactions() -> None:
    scenarios = generate_suite("multi-cycle", seed=0, scale=1.0)
    probes = [(s, p) for s in scenarios for p in s.probes]
    assert len(probes) >= 40
    # Every working-state kind shows up besides the project facts.
    assert {"rule", "task", "artifact"} & {p.kind for _, p in probes}
    for scenario in scenarios:
        (session,) = scenario.sessions
        tokens = [estimate_tokens(token_text(m)) for m in session.messages]
        total = sum(tokens)
        assert total >= 6 * scenario.window  # at least five compactions at this window
        cycles: dict[str, set[int]] = {}
        for p in scenario.probes:
            (cycle,) = [t for t in p.tags if t.startswith("cycle-")]
            index = int(p.evidence[0].rpartition(":")[2])
            start = sum(tokens[:index]) / total
            cycles.setdefault(cycle, set()).add(round(start, 3))
            assert _tokens_between(scenario, p.evidence[0], p.at) > 0.5 * scenario.window
        assert sorted(cycles) == [f"cycle-{c}" for c in range(1, 7)]
        # Each cycle's facts are planted in order, one cycle after another.
        firsts = [min(cycles[f"cycle-{c}"]) for c in range(1, 7)]
        assert firsts == sorted(firsts) and firsts[-1] > 0.6, firsts
    far = [_tokens_between(s, p.evidence[0], p.at) > s.window for s, p in probes]
    assert sum(far) >= 0.85 * len(probes)


def test_decisions_ask_for_the_reason_of_a_named_choice(full: dict[str, list[Scenario]]) -> None:
    from memctx.harness.gen.worktopics import DECISION_TOPICS

    choices = [subj.casefold() for t in DECISION_TOPICS for subj in t.subj]
    probes = [p for s in full["decisions"] for p in s.probes]
    assert len(probes) >= 40 and {p.kind for p in probes} == {"rationale"}
    for p in probes:
        # The question names the choice; the evidence states it with its reason.
        (choice,) = [c for c in choices if c in p.question.casefold()] or [None]
        assert choice is not None, p.question
        assert not p.stale and len(p.evidence) == 1
    assert len({p.question for p in probes}) >= 20


def test_continuation_expects_the_step_in_progress_when_asked(
    full: dict[str, list[Scenario]],
) -> None:
    probes = [(s, p) for s in full["continuation"] for p in s.probes]
    assert len(probes) >= 40 and {p.kind for _, p in probes} == {"continuation"}
    for scenario in full["continuation"]:
        texts = _texts(scenario)
        # Where each step was stated: the first message holding one of its answers.
        steps = {
            min(i for i, (_, t) in enumerate(texts) if any(norm(a) in t for a in p.answers)): p
            for p in scenario.probes
        }
        assert len(steps) >= 5  # the thread moves on several times
        for p in scenario.probes:
            latest = max(i for i in steps if i < p.at)
            assert steps[latest].answers == p.answers, p.id
            assert len(p.stale) >= 1 or latest == min(steps)
    far = [_tokens_between(s, p.evidence[0], p.at) > s.window for s, p in probes]
    assert sum(far) >= 0.8 * len(probes)
