"""Assemble one scenario from a :class:`Plan`: sessions, planted facts, probes.

Two phases keep fact values unique. First every session is written with placeholders where
values go (``\\x00<slot>:<form>\\x00``), from the plan's body seed. Then each value is drawn
(from its own seed) until none of its aliases occurs anywhere else in the scenario (filler,
questions, secrets, other values), and the placeholders are filled. The finished scenario is
checked with :func:`memctx.harness.gen.check.scenario_problems`; a failure redraws the values.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from memctx.messages import token_text

from ..answers import normalise_answer
from ..scenario import Probe, Scenario, Session
from .check import scenario_problems
from .facts import REVISIONS_EN, REVISIONS_ZH, STATEMENTS_EN, STATEMENTS_ZH
from .facts import fill_template as _fill
from .files import SECRET_KINDS, secret_line
from .messages import Builder, Call
from .project import Project
from .topics import Topic
from .turns import Plant, chat_turn, one_word_turn, work_turn
from .values import SOURCE_EXT, Value

__all__ = ["FactPlan", "GenError", "Plan", "PlantEv", "ProbeEv", "build_scenario"]

# A placeholder, raw or JSON-escaped (inside an OpenAI tool call's ``arguments`` string).
_PH = re.compile(r"(?:\x00|\\u0000)(\d+):(text|code|zh)(?:\x00|\\u0000)")
_NUMBERED = re.compile(r"^\s*\d+[\t→]")


class GenError(RuntimeError):
    """The generator could not satisfy its invariants (a bug or an exhausted value pool)."""


@dataclass(frozen=True)
class PlantEv:
    session: int
    pos: float  # fraction of the session's target tokens
    carrier: str  # user | assistant | tool (a file read) | call (a tool call's input)


@dataclass(frozen=True)
class ProbeEv:
    session: int
    pos: float
    style: str  # q | para | short | zh | zh_short
    tags: tuple[str, ...] = ()


@dataclass
class FactPlan:
    topic: Topic
    lang: str
    plants: list[PlantEv]
    probes: list[ProbeEv]
    secrets_nearby: int = 0


@dataclass
class Plan:
    suite: str
    scenario_id: str
    seed: int
    key: str
    fmt: str
    window: int
    project: Project
    targets: list[int]
    facts: list[FactPlan]
    lang: str = "en"
    zh_share: float = 0.05
    one_word: float = 0.15
    heavy: float = 0.1
    filler_secrets: float = 0.0
    tags: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)


_PRIME_EN = (
    "I'm writing the runbook now and need {subj} in it.",
    "Quick one before I update the wiki, it's about {subj}.",
    "Let's double-check {subj} for the deploy notes.",
    "Next I'm filling in the onboarding doc; the part on {subj}.",
)
_PRIME_REPLY_EN = ("Sure, what do you need?", "Go ahead.", "Okay, ask away.")
_PRIME_ZH = (
    "我在写运维手册，要写上{subj}。",
    "更新 wiki 之前确认一下{subj}。",
    "接下来补入职文档里{subj}那部分。",
)
_PRIME_REPLY_ZH = ("好的，你问。", "可以，说吧。")


def _system_prompt(plan: Plan) -> str:
    p = plan.project
    text = (
        f"You are a coding agent working in the repository at {p.root} ({p.stack.framework}).\n"
        "Use the tools to read, search and edit files and to run shell commands.\n\n"
        "Guidelines:\n"
        "- Read the relevant code before editing it; prefer small, reviewable changes.\n"
        f"- Run `{p.stack.test_cmd}` after every change and fix failures before reporting.\n"
        "- Never print secrets from environment files back to the user.\n"
        "- When the user states a decision or a setting, follow it for the rest of the session.\n"
        "- Report what you changed, which files, and the test result, briefly."
    )
    if plan.lang == "zh":
        text += "\n- 用户用中文交流时，用中文回答；代码和命令保持英文。"
    return text


@dataclass
class _Record:
    fact: int
    session: str
    at: int
    at_tokens: int
    style: str
    question: str
    slots: list[int]
    tags: tuple[str, ...]


class _Assembler:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.rng = random.Random(f"{plan.key}:body")
        self.slots: list[tuple[int, str]] = []  # (fact, form)
        self.slot_ref: list[tuple[int, int]] = []  # (session index, message index)
        self.slot_tokens: list[int] = []
        self.planted: list[list[int]] = [[] for _ in plan.facts]
        self.records: list[_Record] = []
        self.secrets: list[str] = []
        self.builders: list[Builder] = []

    def _secret_lines(self, n: int) -> list[str]:
        lines = []
        for _ in range(n):
            line, value = secret_line(self.rng, self.rng.choice(SECRET_KINDS))
            self.secrets.append(value)
            lines.append(line)
        return lines

    def _plant(self, b: Builder, s: int, fi: int, ev: PlantEv) -> None:
        fact, rng = self.plan.facts[fi], self.rng
        slot = len(self.slots)
        zh = fact.lang == "zh"
        first = not self.planted[fi]
        if ev.carrier == "call":
            spec = dict(rng.choice(fact.topic.calls))
            ext = SOURCE_EXT[self.plan.project.language]
            args = {
                k: v.replace("{ext}", ext).replace("{code}", f"\x00{slot}:code\x00")
                for k, v in spec.items()
                if k != "op"
            }
            plant = Plant(call=Call(spec["op"], args, ""))
            self.slots.append((fi, "code"))
        elif ev.carrier == "tool":
            kinds = sorted(fact.topic.lines)
            if fact.secrets_nearby and {"env", "yaml"} & set(kinds):
                kinds = [k for k in kinds if k in ("env", "yaml")]  # where credentials live
            kind = rng.choice(kinds)
            line = rng.choice(fact.topic.lines[kind]).replace("{code}", f"\x00{slot}:code\x00")
            plant = Plant(
                tool_lines=[line],
                tool_kind=kind,
                secret_lines=self._secret_lines(fact.secrets_nearby),
            )
            self.slots.append((fi, "code"))
        else:
            if first:
                bank = (
                    fact.topic.statements
                    or (STATEMENTS_ZH if zh else STATEMENTS_EN)[fact.topic.kind]
                )
            else:
                bank = fact.topic.revisions or (REVISIONS_ZH if zh else REVISIONS_EN)
            subj = rng.choice(fact.topic.subj_zh if zh else fact.topic.subj)
            form = "zh" if zh else "text"
            text = _fill(rng.choice(bank), subj, f"\x00{slot}:{form}\x00")
            plant = Plant(user=text) if ev.carrier == "user" else Plant(assistant=text)
            self.slots.append((fi, form))
        heavy = rng.random() < self.plan.heavy
        lang = "zh" if zh or self.plan.lang == "zh" else "en"
        out = work_turn(
            b,
            rng,
            self.plan.project,
            lang=lang,
            zh_reply=zh,
            heavy=heavy,
            plant=plant,
            big_plant=self.plan.suite == "tool-heavy",
        )
        index = out[
            {"user": "user", "assistant": "final", "tool": "tool", "call": "call"}[ev.carrier]
        ]
        self.slot_ref.append((s, index))
        self.slot_tokens.append(b.offsets[index])
        self.planted[fi].append(slot)

    def _probe(self, b: Builder, s: int, fi: int, ev: ProbeEv) -> bool:
        """Record a probe at this boundary; False when it must wait for the next one."""
        fact, rng = self.plan.facts[fi], self.rng
        if not self.planted[fi]:
            return True  # nothing planted (a plan error): drop it
        if any(r.fact == fi and r.at == len(b.messages) for r in self.records):
            return False  # the same fact twice at one boundary: ask the second one later
        topic = fact.topic
        if ev.style in ("short", "zh_short"):
            zh = ev.style == "zh_short"
            subj = rng.choice(topic.subj_zh if zh else topic.subj)
            prime = rng.choice(_PRIME_ZH if zh else _PRIME_EN).format(subj=subj)
            chat_turn(b, prime, rng.choice(_PRIME_REPLY_ZH if zh else _PRIME_REPLY_EN))
        bank = {
            "q": topic.q,
            "para": topic.para,
            "short": topic.short,
            "zh": topic.q_zh,
            "zh_short": topic.short_zh,
        }[ev.style]
        asked = [r.question for r in self.records if r.fact == fi]
        question = rng.choice([q for q in bank if q not in asked] or list(bank))
        self.records.append(
            _Record(
                fi,
                b.session_id,
                len(b.messages),
                b.tokens,
                ev.style,
                question,
                list(self.planted[fi]),
                ev.tags,
            )
        )
        return True

    def _filler(self, b: Builder) -> None:
        plan, rng = self.plan, self.rng
        zh = rng.random() < (0.85 if plan.lang == "zh" else plan.zh_share)
        if rng.random() < plan.one_word:
            one_word_turn(b, rng, plan.project, zh=zh or rng.random() < 0.1)
            return
        secrets = (
            self._secret_lines(rng.randint(1, 2)) if rng.random() < plan.filler_secrets else []
        )
        plant = (
            Plant(secret_lines=secrets, tool_kind=rng.choice(("env", "log"))) if secrets else None
        )
        heavy = rng.random() < plan.heavy
        work_turn(
            b,
            rng,
            plan.project,
            lang="zh" if zh else "en",
            zh_reply=zh and rng.random() < 0.7,
            heavy=heavy,
            plant=plant,
        )

    def sessions(self) -> None:
        plan = self.plan
        for s, target in enumerate(plan.targets):
            b = Builder(plan.fmt, f"s{s + 1}", self.rng, plan.project.root)
            self.builders.append(b)
            b.system(_system_prompt(plan))
            events: list[tuple[float, int, int, int, PlantEv | ProbeEv]] = []
            for fi, fact in enumerate(plan.facts):
                events += [
                    (ev.pos * target, 0, fi, k, ev)
                    for k, ev in enumerate(fact.plants)
                    if ev.session == s
                ]
                events += [
                    (ev.pos * target, 1, fi, k, ev)
                    for k, ev in enumerate(fact.probes)
                    if ev.session == s
                ]
            events.sort(key=lambda e: e[:4])
            self._filler(b)
            while True:
                deferred = []
                while events and (events[0][0] <= b.tokens or b.tokens >= target):
                    event = events.pop(0)
                    _, _, fi, _, ev = event
                    if isinstance(ev, PlantEv):
                        self._plant(b, s, fi, ev)
                    elif not self._probe(b, s, fi, ev):
                        deferred.append(event)  # asked at the next boundary instead
                events = deferred + events
                if not events and b.tokens >= target:
                    break
                self._filler(b)

    def draw_values(self, attempt: int) -> list[Value]:
        plan = self.plan
        texts = [
            normalise_answer(_PH.sub(" ", token_text(m))) for b in self.builders for m in b.messages
        ]
        haystack = "\x00".join([*texts, *(normalise_answer(r.question) for r in self.records)])
        rng = random.Random(f"{plan.key}:values:{attempt}")
        chosen: list[str] = []
        values: list[Value] = []
        for fi, _ in self.slots:
            for _ in range(500):
                v = plan.facts[fi].topic.draw(rng, plan.project.language)
                aliases = [normalise_answer(a) for a in v.aliases]
                if all(len(a) >= 3 and a not in haystack for a in aliases) and not any(
                    a in c or c in a for a in aliases for c in chosen
                ):
                    break
            else:
                raise GenError(
                    f"{plan.scenario_id}: no unique value for {plan.facts[fi].topic.key}"
                )
            chosen += aliases
            values.append(v)
        return values

    def finish(self, values: list[Value]) -> Scenario:
        plan = self.plan

        def fill(obj: Any) -> Any:
            if isinstance(obj, str):
                return _PH.sub(lambda m: values[int(m.group(1))].form(m.group(2)), obj)
            if isinstance(obj, list):
                return [fill(x) for x in obj]
            if isinstance(obj, dict):
                return {k: fill(v) for k, v in obj.items()}
            return obj

        sessions: list[list[dict[str, Any]]] = [list(b.messages) for b in self.builders]
        for s, i in dict.fromkeys(self.slot_ref):
            sessions[s][i] = fill(sessions[s][i])
        probes = []
        for n, r in enumerate(self.records):
            fact = plan.facts[r.fact]
            slot = r.slots[-1]
            value = values[slot]
            s, index = self.slot_ref[slot]
            stale = [a for old in r.slots[:-1] for a in values[old].aliases]
            snippet = _snippet(token_text(sessions[s][index]), value.form(self.slots[slot][1]))
            tags = [*plan.tags, *r.tags]
            tags.append(
                {
                    "user": "user-text",
                    "assistant": "assistant-text",
                    "tool": "tool-output",
                    "call": "tool-call",
                }[fact.plants[len(r.slots) - 1].carrier]
            )
            if f"s{s + 1}" != r.session:
                tags.append("cross-session")
            far = f"s{s + 1}" != r.session or r.at_tokens - self.slot_tokens[slot] > plan.window
            tags.append("late" if far else "near")
            if stale:
                tags.append("supersede")
            if fact.lang == "zh" or r.style.startswith("zh"):
                tags.append("cjk")
            if fact.secrets_nearby:
                tags.append("secret-adjacent")
            tags.append(
                {
                    "q": "direct",
                    "para": "paraphrase",
                    "short": "short",
                    "zh": "direct",
                    "zh_short": "short",
                }[r.style]
            )
            probes.append(
                Probe(
                    id=f"{plan.scenario_id}-p{n + 1:02d}",
                    session_id=r.session,
                    at=r.at,
                    question=r.question,
                    answers=tuple(dict.fromkeys(value.aliases)),
                    evidence=(f"s{s + 1}:{index}",),
                    evidence_text=(snippet,),
                    stale=tuple(dict.fromkeys(stale)),
                    kind=fact.topic.kind,
                    tags=tuple(dict.fromkeys(tags)),
                )
            )
        tokens = [b.tokens for b in self.builders]
        meta = {
            "project": plan.project.name,
            "stack": plan.project.stack.key,
            "language": plan.project.language,
            "framework": plan.project.stack.framework,
            "tokens": sum(tokens),
            "session_tokens": tokens,
            "facts": len(plan.facts),
            **plan.meta,
        }
        return Scenario(
            id=plan.scenario_id,
            suite=plan.suite,
            format=plan.fmt,
            seed=plan.seed,
            window=plan.window,
            sessions=tuple(Session(f"s{i + 1}", tuple(m)) for i, m in enumerate(sessions)),
            probes=tuple(probes),
            secrets=tuple(dict.fromkeys(self.secrets)),
            meta=meta,
        )


def _snippet(text: str, value: str) -> str:
    """The line of ``text`` holding ``value``, cut to at most ~140 characters around it."""
    pos = text.find(value)
    if pos < 0:
        raise GenError(f"planted value {value!r} not found in its message")
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start : len(text) if end < 0 else end]
    offset = pos - start
    if len(line) > 140:
        lo, hi = max(0, offset - 60), min(len(line), offset + len(value) + 60)
        space = line.find(" ", lo, offset) if lo else -1
        lo = space + 1 if space >= 0 else lo
        space = line.rfind(" ", offset + len(value), hi) if hi < len(line) else -1
        hi = space if space >= 0 else hi
        line, offset = line[lo:hi], offset - lo
    m = _NUMBERED.match(line)
    if m and m.end() <= offset:
        line = line[m.end() :]
    return line.strip()


def build_scenario(plan: Plan) -> Scenario:
    """The scenario ``plan`` describes, checked; values are redrawn if a check fails."""
    assembler = _Assembler(plan)
    assembler.sessions()
    problems: list[str] = []
    for attempt in range(4):
        scenario = assembler.finish(assembler.draw_values(attempt))
        problems = scenario_problems(scenario)
        if not problems:
            return scenario
    raise GenError(f"{plan.scenario_id}: {'; '.join(problems[:5])}")
