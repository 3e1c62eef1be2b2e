"""Hand-built sessions and scenarios for the harness tests (independent of the generator)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.harness.scenario import Probe, Scenario, Session
from memctx.harness.schema import CallRow
from memctx.messages import InfoCache, TokenCounter
from memctx.strategies import StrategySetup

WORDS = (
    "parser cache handler module request response buffer stream index worker queue schema "
    "router client server loader render update delete create fetch commit"
).split()
QUESTION = "Which port does the orders queue listen on?"
PLANT = "We decided the orders queue listens on port 8743."
REVISION = "Change of plan: the orders queue now listens on port 9321."


def session(
    sid: str,
    turns: int,
    *,
    fmt: str = "openai",
    plants: Mapping[int, str] | None = None,
    secret_at: Mapping[int, str] | None = None,
    tool_words: int = 300,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Per turn: a user request (with the planted sentence of that turn), an assistant tool
    call, its output (with a secret at ``secret_at`` turns) and an assistant reply."""
    rng = random.Random(seed)
    plants, secret_at = plants or {}, secret_at or {}
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for turn in range(turns):
        request = f"Turn {turn}: look at the {rng.choice(WORDS)} code. {plants.get(turn, '')}"
        output = " ".join(rng.choice(WORDS) for _ in range(tool_words))
        if turn in secret_at:
            output += f"\nOPENAI_API_KEY={secret_at[turn]}\n"
        call_id = f"call_{sid}_{turn}"
        reply = f"Done with turn {turn}."
        if fmt == "openai":
            out += [
                {"role": "user", "content": request.strip()},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": output},
                {"role": "assistant", "content": reply},
            ]
        else:
            out += [
                {"role": "user", "content": [{"type": "text", "text": request.strip()}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": call_id, "name": "read_file", "input": {}}
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
                },
                {"role": "assistant", "content": [{"type": "text", "text": reply}]},
            ]
    return out


def scenario(
    *,
    turns: int = 40,
    window: int = 8_000,
    fmt: str = "openai",
    revised: bool = False,
    sessions: int = 1,
    secret: str | None = None,
    probes_at: Sequence[int] = (),
    tool_words: int = 300,
) -> Scenario:
    """A port fact planted at turn 1 (revised at turn ``turns // 2`` when ``revised``), asked
    at the end of the last session and at each message index of ``probes_at``."""
    plants = {1: PLANT}
    if revised:
        plants[turns // 2] = REVISION
    answers, stale = (("9321",), ("8743",)) if revised else (("8743",), ())
    built = []
    for number in range(sessions):
        sid = f"s{number + 1}"
        messages = session(
            sid,
            turns,
            fmt=fmt,
            plants=plants if number == 0 else None,
            secret_at={2: secret} if secret and number == 0 else None,
            tool_words=tool_words,
            seed=number,
        )
        built.append(Session(sid, tuple(messages)))
    last = built[-1]
    positions = [*probes_at, len(last.messages)]
    probes = tuple(
        Probe(
            id=f"p{i}",
            session_id=last.id,
            at=at,
            question=QUESTION,
            answers=answers,
            evidence_text=(f"port {answers[0]}",),
            stale=stale,
            kind="config",
            tags=("needle",),
        )
        for i, at in enumerate(positions)
    )
    return Scenario(
        id=f"hand-{fmt}-{sessions}",
        suite="needle",
        format=fmt,
        seed=0,
        window=window,
        sessions=tuple(built),
        probes=probes,
        secrets=(secret,) if secret else (),
    )


def strategy_setup(store_dir: Path, window: int = 8_000, **overrides: Any) -> StrategySetup:
    """A strategy's set-up for a unit test: hash embeddings, a fixed clock, fresh caches,
    background work waited for after each hook (what a call recalls never depends on
    timing)."""
    return StrategySetup(
        window=window,
        config=MemoryContextConfig().with_overrides(overrides),
        store_dir=store_dir,
        counter=TokenCounter(),
        infos=InfoCache(),
        clock=lambda: 1_767_225_600.0,
        wait_for_background=True,
    )


def call_row(sent: int, cached: int, output: int = 0, recall: int = 0) -> CallRow:
    """One call's row for a pricing test: ``sent`` tokens, ``cached`` of them a cached
    prefix, ``output`` tokens produced (0: a probe call)."""
    return CallRow(
        suite="s",
        scenario="x",
        strategy="st",
        embedding="-",
        session="s1",
        call=0,
        at=1,
        history_tokens=sent,
        sent_tokens=sent,
        cached_tokens=cached,
        recall_tokens=recall,
        probe=output == 0,
        output_tokens=output,
    )
