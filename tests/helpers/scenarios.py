"""Small hand-built scenarios for engine, strategy and metric tests (independent of the
generator, so a generator bug cannot hide an engine bug)."""

from __future__ import annotations

import random
from typing import Any

from memctx._scenario import Probe, Scenario, Session

WORDS = (
    "parser cache handler module request response token buffer stream index worker queue "
    "schema router client server config loader render update delete create fetch commit"
).split()


def filler(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def coding_session(
    session_id: str,
    tasks: int,
    *,
    plants: dict[int, str] | None = None,
    tool_words: int = 600,
    seed: int = 0,
    secret_at: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """OpenAI-format session: per task a user request, a tool call, its output, a reply.

    ``plants`` maps a task number to a sentence stated by the user in that task;
    ``secret_at`` maps a task number to a secret printed inside that task's tool output.
    """
    rng = random.Random(seed)
    plants = plants or {}
    secret_at = secret_at or {}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for task in range(tasks):
        request = f"Task {task}: please look at the {rng.choice(WORDS)} code."
        if task in plants:
            request += " " + plants[task]
        messages.append({"role": "user", "content": request})
        call_id = f"call_{session_id}_{task}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "src/a.py"}'},
                    }
                ],
            }
        )
        output = filler(rng, tool_words)
        if task in secret_at:
            output += f"\nOPENAI_API_KEY={secret_at[task]}\n"
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        messages.append(
            {"role": "assistant", "content": f"Done with task {task}. {filler(rng, 20)}"}
        )
    return messages


def needle_scenario(
    *,
    tasks: int = 60,
    window: int = 16_000,
    stale: bool = False,
    secret: str | None = None,
    sessions: int = 1,
) -> Scenario:
    """A fact planted early (optionally revised), asked at the end of the last session."""
    plants = {2: "We decided the orders queue listens on port 8743."}
    answers, stale_values = ("8743",), ()
    evidence_task = 2
    if stale:
        plants[tasks // 2] = "Change of plan: the orders queue moves to port 9321."
        answers, stale_values, evidence_task = ("9321",), ("8743",), tasks // 2
    built = []
    for number in range(sessions):
        sid = f"s{number + 1}"
        first = number == 0
        built.append(
            Session(
                sid,
                tuple(
                    coding_session(
                        sid,
                        tasks,
                        plants=plants if first else None,
                        seed=number,
                        secret_at={3: secret} if secret and first else None,
                    )
                ),
            )
        )
    last = built[-1]
    evidence_index = 1 + 4 * evidence_task
    probe = Probe(
        id="p1",
        session_id=last.id,
        at=len(last.messages),
        question="Which port does the orders queue listen on?",
        answers=answers,
        evidence=(f"s1:{evidence_index}",),
        evidence_text=(f"port {answers[0]}",),
        stale=stale_values,
        kind="config",
    )
    return Scenario(
        id="hand-001",
        suite="needle",
        format="openai",
        seed=0,
        window=window,
        sessions=tuple(built),
        probes=(probe,),
        secrets=(secret,) if secret else (),
    )
