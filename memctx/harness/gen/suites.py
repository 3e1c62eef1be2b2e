"""Suite definitions: how many scenarios, how long, which facts, where the probes go.

Sizes at ``scale=1.0``: two scenarios of about 80,000 estimated tokens at a 24,000-token
window for the single-session suites (3.3-4.5x the window), two scenarios of 2-4 sessions of
~30,000 tokens at 10,000 for ``cross-session``, and one scenario of >= 1,000,000 tokens at
200,000 for ``long-haul``: about 2.3 M tokens and 380 probes in all. ``scale``
multiplies the number of scenarios (at least one per suite); below 1 it also shrinks each
scenario and its window together (down to 0.4x, so a quick set still trims), and ``long-haul``
shrinks in proportion (150,000 tokens at a 30,000 window for the quick scale 0.15).

Probe positions are fractions of a session's target tokens: plants land early or mid
session, most probes more than a window later (tag ``late``), some shortly after (``near``).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ..scenario import FORMATS
from .build import FactPlan, Plan, PlantEv, ProbeEv
from .project import STACKS, make_project
from .topics import TOPICS, Topic
from .worktopics import (
    ARTIFACT_TOPICS,
    CURRENT_STEP,
    DECISION_TOPICS,
    RULE_TOPICS,
    TASK_TOPICS,
)

__all__ = ["DEFAULT_SUITES", "FACT_SUITES", "STATE_SUITES", "SUITES", "suite_plans"]

# The suites that plant facts of six kinds (values, decisions, issues...) and ask for them.
FACT_SUITES: tuple[str, ...] = (
    "needle",
    "supersede",
    "paraphrase",
    "tool-heavy",
    "cjk",
    "short-queries",
    "secrets",
    "long-haul",
    "cross-session",
)
# The suites probing the agent's working state (:mod:`~memctx.harness.gen.worktopics`): rules,
# open and done tasks, the artifact trail, decisions' reasons, the step in progress, and many
# compaction cycles in one session.
STATE_SUITES: tuple[str, ...] = (
    "rules",
    "task-state",
    "artifacts",
    "multi-cycle",
    "decisions",
    "continuation",
)
# Every suite the generator makes; `memctx eval` plays them all when none is named.
SUITES: tuple[str, ...] = (*FACT_SUITES, *STATE_SUITES)
DEFAULT_SUITES: tuple[str, ...] = SUITES

_BASE_TOKENS = 80_000
_BASE_WINDOW = 24_000
_BASE_FACTS = 11
_LONG_TOKENS = 1_050_000
_LONG_WINDOW = 200_000
# The working-state suites play sessions of 112,000 tokens (each rule or todo item is stated
# in a work turn of its own, and a dozen of them, some restated, fill the first half) at a
# 16,000-token window, so a session compacts several times between a rule or a todo item
# and the questions about it.
_STATE_TOKENS = 112_000
_STATE_WINDOW = 16_000
_STATE_FACTS = 12
# multi-cycle: one session of ten windows cut into six cycles, each planting two facts that
# later cycles ask about, so every fact outlives at least one compaction and most several.
_CYCLES = 6
_CYCLE_TOKENS = 160_000
# continuation: four sessions of 140,000 tokens at an 8,000-token window, the step in
# progress restated about every 23,000 tokens and asked about twice before the next one.
_STEP_TOKENS = 140_000
_STEP_WINDOW = 8_000


def _factor(scale: float) -> float:
    return 1.0 if scale >= 1 else max(0.4, scale)


def _topics(rng: random.Random, n: int, *, pool: list[Topic] | None = None) -> list[Topic]:
    pool = list(pool or TOPICS)
    return rng.sample(pool, min(n, len(pool)))


def _carrier(rng: random.Random, weights: tuple[float, float, float]) -> str:
    return rng.choices(("user", "assistant", "tool"), weights=weights)[0]


def _probes_after(rng: random.Random, at: float, late: float, styles: list[str]) -> list[ProbeEv]:
    """One probe per style after position ``at``: mostly ``late`` (a window or more later)."""
    out = []
    for i, style in enumerate(styles):
        if i == 0 and rng.random() < 0.2:
            pos = min(0.99, at + rng.uniform(0.02, late * 0.5))  # near: still in the window
        else:
            pos = rng.uniform(min(0.97, at + late), 0.99)
        out.append(ProbeEv(0, pos, style))
    return out


def _single(
    rng: random.Random,
    n_facts: int,
    late: float,
    *,
    weights: tuple[float, float, float],
    styles: Callable[[random.Random], list[str]],
    lang: str = "en",
    secrets: int = 0,
    topics: list[Topic] | None = None,
) -> list[FactPlan]:
    facts = []
    for topic in topics or _topics(rng, n_facts):
        at = rng.uniform(0.03, 0.6)
        facts.append(
            FactPlan(
                topic,
                lang,
                [PlantEv(0, at, _carrier(rng, weights))],
                _probes_after(rng, at, late, styles(rng)),
                secrets_nearby=secrets,
            )
        )
    return facts


def _supersede(rng: random.Random, n_facts: int, late: float) -> list[FactPlan]:
    facts = []
    for topic in _topics(rng, n_facts):
        at = rng.uniform(0.03, 0.25)
        plants = [PlantEv(0, at, _carrier(rng, (0.45, 0.35, 0.2)))]
        probes = []
        if rng.random() < 0.3:
            probes.append(ProbeEv(0, at + rng.uniform(0.02, 0.05), "q", ("before-revision",)))
        for _ in range(2 if rng.random() < 0.4 else 1):
            at += rng.uniform(0.06, 0.15)
            plants.append(PlantEv(0, at, _carrier(rng, (0.55, 0.45, 0.0))))
        probes += _probes_after(rng, at, late, ["q"] * rng.choice((1, 2)))
        facts.append(FactPlan(topic, "en", plants, probes))
    return facts


def _long_haul(rng: random.Random, n_facts: int, late: float) -> list[FactPlan]:
    facts = []
    for topic in _topics(rng, n_facts):
        zh = rng.random() < 0.15
        at = rng.uniform(0.02, 0.75)
        plants = [PlantEv(0, at, _carrier(rng, (0.4, 0.3, 0.3)))]
        if rng.random() < 0.3:
            at = min(0.85, at + rng.uniform(0.05, 0.2))
            plants.append(PlantEv(0, at, _carrier(rng, (0.5, 0.5, 0.0))))
        pool = ["zh", "zh_short"] if zh else ["q", "q", "para", "short"]
        styles = [rng.choice(pool) for _ in range(2)]
        probes = [ProbeEv(0, min(1.0, at + rng.uniform(0.01, 0.08)), styles[0])]
        probes.append(ProbeEv(0, rng.uniform(min(0.99, at + late), 1.0), styles[1]))
        facts.append(FactPlan(topic, "zh" if zh else "en", plants, probes, secrets_nearby=int(zh)))
    return facts


def _cross(rng: random.Random, n_facts: int, sessions: int) -> list[FactPlan]:
    facts = []
    for topic in _topics(rng, n_facts):
        s = rng.randrange(sessions - 1)
        at = rng.uniform(0.05, 0.8)
        plants = [PlantEv(s, at, _carrier(rng, (0.4, 0.35, 0.25)))]
        later = rng.randrange(s + 1, sessions)
        probes = [ProbeEv(later, rng.uniform(0.05, 1.0), rng.choice(("q", "q", "para")))]
        if rng.random() < 0.4:
            probes.append(ProbeEv(sessions - 1, rng.uniform(0.5, 1.0), "q"))
        facts.append(FactPlan(topic, "en", plants, probes))
    return facts


def _late_probes(
    rng: random.Random, at: float, late: float, tags: tuple[str, ...]
) -> list[ProbeEv]:
    """Two probes well after ``at`` (two windows or more when the session allows it)."""
    return [
        ProbeEv(0, rng.uniform(min(0.97, at + late), 0.99), style, tags)
        for style in ("q", rng.choice(("q", "q", "para")))
    ]


def _rules(rng: random.Random, n_facts: int, late: float) -> list[FactPlan]:
    """Rules laid down early (by the user, or in the contributing notes the agent reads),
    some revised by the user later; probed after several compactions."""
    facts = []
    for topic in _topics(rng, n_facts, pool=list(RULE_TOPICS)):
        at = rng.uniform(0.02, 0.2)
        plants = [PlantEv(0, at, rng.choices(("user", "tool", "assistant"), (6, 3, 1))[0])]
        revised = rng.random() < 0.4
        if revised:
            at = rng.uniform(max(at + 0.08, 0.25), 0.45)
            plants.append(PlantEv(0, at, "user"))
        tags = ("revised",) if revised else ("standing",)
        facts.append(FactPlan(topic, "en", plants, _late_probes(rng, at, 2 * late, tags)))
    return facts


def _tasks(rng: random.Random, n_facts: int, late: float) -> list[FactPlan]:
    """Todo items stated open; about half ticked off later; asked about long after."""
    facts = []
    for topic in _topics(rng, n_facts, pool=list(TASK_TOPICS)):
        at = rng.uniform(0.03, 0.45)
        plants = [PlantEv(0, at, _carrier(rng, (0.6, 0.4, 0.0)))]
        done = rng.random() < 0.5
        if done:
            at = min(0.75, at + rng.uniform(0.1, 0.35))
            plants.append(PlantEv(0, at, _carrier(rng, (0.3, 0.7, 0.0))))
        tags = ("done",) if done else ("open",)
        facts.append(FactPlan(topic, "en", plants, _late_probes(rng, at, late, tags)))
    return facts


def _artifacts(rng: random.Random, n_facts: int, late: float) -> list[FactPlan]:
    """Files renamed, created, deleted or edited by a tool call during the work; asked about
    long after (the probe's tag says what happened to the file)."""
    facts = []
    for topic in _topics(rng, n_facts, pool=list(ARTIFACT_TOPICS)):
        at = rng.uniform(0.03, 0.6)
        what = (topic.key.split("-")[1],)
        facts.append(
            FactPlan(topic, "en", [PlantEv(0, at, "call")], _late_probes(rng, at, late, what))
        )
    return facts


def _decisions(rng: random.Random, n_facts: int, late: float) -> list[FactPlan]:
    """Choices and the reasons given for them (said by either side, or in the decision log
    the agent reads), asked about long after."""
    facts = []
    for topic in _topics(rng, n_facts, pool=list(DECISION_TOPICS)):
        at = rng.uniform(0.03, 0.6)
        plants = [PlantEv(0, at, _carrier(rng, (0.45, 0.4, 0.15)))]
        facts.append(FactPlan(topic, "en", plants, _late_probes(rng, at, late, ())))
    return facts


def _continuation(rng: random.Random, late: float) -> list[FactPlan]:
    """One thread of work restated step by step; each step asked about after more than a
    window (the answer is the step in progress then, the earlier steps are stale)."""
    steps = max(2, min(8, int(1 / (1.9 * late + 0.03))))
    span = 1.0 / steps
    plants, probes = [], []
    for k in range(steps):
        at = k * span + rng.uniform(0.0, 0.02)
        carrier = rng.choices(("assistant", "user"), (4, 1))[0]
        plants.append(PlantEv(0, at, carrier))
        # The step is stated at the end of a work turn that starts at ``at``: leave room.
        probes.append(ProbeEv(0, at + 1.4 * late, "q"))
        probes.append(ProbeEv(0, at + 1.8 * late, rng.choice(("q", "para"))))
    return [FactPlan(CURRENT_STEP, "en", plants, probes)]


def _multi_cycle(rng: random.Random, cycles: int, per_cycle: int, late: float) -> list[FactPlan]:
    """``per_cycle`` facts planted early in each cycle (project facts, rules, todo items and
    files alike), each asked in the next cycle (a window later at least) and near the end."""
    pool = [*TOPICS, *RULE_TOPICS, *TASK_TOPICS, *ARTIFACT_TOPICS, *DECISION_TOPICS]
    topics = _topics(rng, cycles * per_cycle, pool=pool)
    span = (1.0 - 1.5 * late) / cycles  # the last cycle's facts are asked a window later too
    facts = []
    for i, topic in enumerate(topics):
        cycle = i // per_cycle
        at = (cycle + rng.uniform(0.05, 0.45)) * span
        weights = (0.4, 0.3, 0.3 if topic.lines else 0.0)
        carrier = "call" if topic.calls else _carrier(rng, weights)
        tags = (f"cycle-{cycle + 1}",)
        nxt = min(0.99, max(at + late, (cycle + 1 + rng.uniform(0.5, 0.95)) * span))
        probes = [ProbeEv(0, nxt, "q", tags)]
        probes.append(ProbeEv(0, rng.uniform(max(nxt, 1 - span), 0.995), "q", tags))
        if cycle == cycles - 1:
            probes[0] = ProbeEv(0, min(0.99, at + 1.3 * late), "q", tags)
        facts.append(FactPlan(topic, "en", [PlantEv(0, at, carrier)], probes))
    return facts


def suite_plans(suite: str, seed: int, scale: float) -> list[Plan]:
    """The plan of every scenario of ``suite`` (see the module docstring for sizes)."""
    f = _factor(scale)
    count = max(1, round({"long-haul": 1, "continuation": 4}.get(suite, 2) * scale))
    plans = []
    for index in range(count):
        key = f"{suite}:{seed}:{index}"
        rng = random.Random(f"{key}:plan")
        project = make_project(rng, stack_index=rng.randrange(len(STACKS)))
        fmt = FORMATS[(index + SUITES.index(suite)) % 2]
        window = max(8_000, round(_BASE_WINDOW * f / 1000) * 1000)
        targets = [round(_BASE_TOKENS * f)]
        n_facts = max(4, round(_BASE_FACTS * f))
        late = window * 1.15 / targets[0]
        options: dict[str, object] = {}
        if suite == "needle":
            facts = _single(
                rng, n_facts, late, weights=(0.4, 0.3, 0.3), styles=lambda r: ["q", "q"]
            )
        elif suite == "supersede":
            facts = _supersede(rng, n_facts, late)
        elif suite == "paraphrase":
            facts = _single(
                rng, n_facts, late, weights=(0.5, 0.5, 0.0), styles=lambda r: ["para", "para"]
            )
        elif suite == "tool-heavy":
            facts = _single(
                rng, n_facts, late, weights=(0.0, 0.0, 1.0), styles=lambda r: ["q", "q"]
            )
            options = {"heavy": 0.5, "one_word": 0.05}
        elif suite == "cjk":
            facts = _single(
                rng,
                n_facts,
                late,
                weights=(0.5, 0.35, 0.15),
                lang="zh",
                styles=lambda r: ["zh", r.choice(("zh", "zh_short"))],
            )
            options = {"lang": "zh", "one_word": 0.2}
        elif suite == "short-queries":
            facts = _single(
                rng, n_facts, late, weights=(0.4, 0.3, 0.3), styles=lambda r: ["short", "short"]
            )
            options = {"one_word": 0.25}
        elif suite == "secrets":
            facts = _single(
                rng, n_facts, late, weights=(0.0, 0.0, 1.0), secrets=2, styles=lambda r: ["q", "q"]
            )
            options = {"filler_secrets": 0.25}
        elif suite == "long-haul":
            targets = [round(_LONG_TOKENS * min(1.0, max(scale, 0.15)))]
            window = max(8_000, round(_LONG_WINDOW * targets[0] / _LONG_TOKENS / 1000) * 1000)
            facts = _long_haul(rng, max(4, round(20 * min(1.0, scale))), window * 1.1 / targets[0])
            options = {"heavy": 0.15, "filler_secrets": 0.03, "zh_share": 0.08}
        elif suite in ("rules", "task-state", "artifacts", "decisions"):
            window = max(8_000, round(_STATE_WINDOW * f / 1000) * 1000)
            targets = [round(_STATE_TOKENS * f)]
            n_state = max(4, round(_STATE_FACTS * f))
            late = window * 1.15 / targets[0]
            planner = {
                "rules": _rules,
                "task-state": _tasks,
                "artifacts": _artifacts,
                "decisions": _decisions,
            }[suite]
            facts = planner(rng, n_state, late)
        elif suite == "continuation":
            window = max(8_000, round(_STEP_WINDOW * f / 1000) * 1000)
            targets = [round(_STEP_TOKENS * f)]
            facts = _continuation(rng, window * 1.1 / targets[0])
        elif suite == "multi-cycle":
            window = max(8_000, round(_STATE_WINDOW * f / 1000) * 1000)
            targets = [round(_CYCLE_TOKENS * f)]
            per_cycle = 2 if f >= 1 else 1
            facts = _multi_cycle(rng, _CYCLES, per_cycle, window * 1.15 / targets[0])
        elif suite == "cross-session":
            n_sessions = rng.choice((2, 3, 3, 4)) if f >= 1 else 2
            window = max(8_000, round(10_000 * f / 1000) * 1000)
            targets = [round(30_000 * f * (1.0 if f >= 1 else 1.5))] * n_sessions
            facts = _cross(rng, n_facts, n_sessions)
        else:
            raise ValueError(f"unknown suite {suite!r}; valid suites: {', '.join(SUITES)}")
        plan = Plan(
            suite=suite,
            scenario_id=f"{suite}-{index:03d}",
            seed=seed,
            key=key,
            fmt=fmt,
            window=window,
            project=project,
            targets=targets,
            facts=facts,
            tags=(suite,),
            meta={"scale": scale},
        )
        for name, value in options.items():
            setattr(plan, name, value)
        plans.append(plan)
    return plans
