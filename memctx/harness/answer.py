"""Answering and judging probes with a real model (``memctx eval --llm MODEL``).

Presence of the expected answer in the context is the harness's default score: cheap,
deterministic, and an upper bound on what a model could answer. With ``--llm`` the model
also answers each probe from the context it would receive, and the same model judges the
answer against the expected aliases, so a report can show how much of what is present is
actually used. Both calls go through :class:`~memctx.llm.client.LLMClient` (cache, usage, cost).

Inside a run (:func:`memctx.harness.run.run_eval`) the client takes the run's
:class:`~memctx.llm.CallLimits` from the environment: concurrency slots per provider, the
spend ledger and its budget, retries with jittered backoff, and the response cache shared by
every worker instead of one per job.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memctx.llm import CallLimits, LLMClient
from memctx.messages import inspect_message, token_text

from .scenario import Probe

__all__ = ["ProbeJudge"]

_ANSWER_SYSTEM = (
    "You are a coding agent. Answer the user's last question from the conversation above, in "
    "one short sentence. If the conversation does not say, answer exactly: unknown."
)
_JUDGE_PROMPT = (
    "Question: {question}\nExpected answer (any of): {answers}\nOutdated values (wrong): "
    "{stale}\nGiven answer: {answer}\n\nDoes the given answer state the expected value (not an "
    "outdated one)? Reply with exactly one word: yes or no."
)


class ProbeJudge:
    """Asks the model each probe, then asks it whether the answer matches."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @classmethod
    def create(cls, llm: Any, cache_dir: Path) -> ProbeJudge:
        """From a litellm model string (a cached :class:`LLMClient`) or a ready client.

        A model string inside a run gets the run's limits (:meth:`CallLimits.from_env`) and
        its shared cache; ``cache_dir`` is used outside a run.

        Raises:
            BudgetExceeded: The run has stopped at its budget: this job is not started.
        """
        if isinstance(llm, str):
            limits = CallLimits.from_env()
            if limits is None:
                return cls(LLMClient(llm, cache_dir=cache_dir))
            limits.ledger().check()
            return cls(
                LLMClient(
                    llm,
                    cache_dir=limits.cache_dir or cache_dir,
                    max_retries=limits.max_retries,
                    retry_backoff_s=limits.retry_backoff_s,
                    limits=limits,
                )
            )
        if not hasattr(llm, "complete"):
            raise TypeError("llm must be a litellm model string or an object with complete()")
        return cls(llm)

    def answer_and_judge(self, context: Sequence[dict[str, Any]], probe: Probe) -> tuple[str, bool]:
        """The model's answer to ``probe`` given ``context`` and the judge's verdict."""
        transcript = "\n\n".join(
            f"{inspect_message(m).kind.value}: {token_text(m)}" for m in context
        )
        reply = self.client.complete(
            [
                {"role": "system", "content": _ANSWER_SYSTEM},
                {"role": "user", "content": transcript},
            ],
            task="answer-probe",
            max_tokens=200,
        )
        answer = reply.text.strip()
        verdict = self.client.complete(
            [
                {
                    "role": "user",
                    "content": _JUDGE_PROMPT.format(
                        question=probe.question,
                        answers=" | ".join(probe.answers),
                        stale=" | ".join(probe.stale) or "(none)",
                        answer=answer,
                    ),
                }
            ],
            task="judge-probe",
            max_tokens=5,
        )
        return answer, verdict.text.strip().lower().startswith("yes")
