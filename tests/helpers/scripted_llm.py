"""A scripted real model for tests: ``scripted/judge``, a litellm custom provider.

Importing this module registers the provider and its prices with litellm (as ``--plugin
helpers.scripted_llm`` does in every worker of an eval run). The handler:

- answers the judge prompt "yes" and any other prompt with a short sentence, with usage
  counted from the text (``ceil(len/3)``, as memctx's reserve estimate counts);
- fails a call with ``litellm.RateLimitError`` with probability ``SCRIPTED_LLM_FAIL_RATE``,
  decided by a generator seeded with ``SCRIPTED_LLM_SEED`` and the call's number;
- holds each call ``SCRIPTED_LLM_HOLD_S`` seconds;
- records, in ``SCRIPTED_LLM_DIR/state.json`` under a file lock, the calls, the rate-limit
  errors it raised and the largest number of calls in flight at once, across processes.

Nothing happens without ``SCRIPTED_LLM_DIR``: the handler then only answers.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from pathlib import Path
from typing import Any

import litellm
from filelock import FileLock
from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from memctx.fs import atomic_write

MODEL = "scripted/judge"
PROVIDER = "scripted"
INPUT_PRICE = 1e-6  # USD per token
OUTPUT_PRICE = 2e-6
_STATE = "state.json"


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 3))


def _state_dir() -> Path | None:
    folder = os.environ.get("SCRIPTED_LLM_DIR")
    return Path(folder) if folder else None


def read_state(folder: Path) -> dict[str, Any]:
    """The counters: ``calls``, ``rate_limited``, ``in_flight``, ``max_in_flight``."""
    try:
        data: dict[str, Any] = json.loads((folder / _STATE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    return {"calls": 0, "rate_limited": 0, "in_flight": 0, "max_in_flight": 0, **data}


def _update(folder: Path, change: Any) -> dict[str, Any]:
    with FileLock(folder / "state.lock", is_singleton=False):
        state = read_state(folder)
        change(state)
        atomic_write(folder / _STATE, json.dumps(state).encode("utf-8"), fsync=False)
        return state


def _enter(state: dict[str, Any]) -> None:
    state["calls"] += 1
    state["in_flight"] += 1
    state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])


def _leave(state: dict[str, Any]) -> None:
    state["in_flight"] -= 1


def _rate_limited(state: dict[str, Any]) -> None:
    state["rate_limited"] += 1


class ScriptedModel(CustomLLM):
    """The handler behind ``scripted/judge``."""

    def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        folder = _state_dir()
        number = 0
        if folder is not None:
            number = _update(folder, _enter)["calls"]
        try:
            time.sleep(float(os.environ.get("SCRIPTED_LLM_HOLD_S", "0")))
            rate = float(os.environ.get("SCRIPTED_LLM_FAIL_RATE", "0"))
            seed = os.environ.get("SCRIPTED_LLM_SEED", "0")
            if rate and random.Random(f"{seed}:{number}").random() < rate:
                if folder is not None:
                    _update(folder, _rate_limited)
                raise litellm.RateLimitError(
                    "scripted rate limit", llm_provider=PROVIDER, model=model
                )
        finally:
            if folder is not None:
                _update(folder, _leave)
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        text = "yes" if "yes or no" in prompt else "The answer is in the conversation."
        response = kwargs.get("model_response")
        if not isinstance(response, ModelResponse):
            response = ModelResponse()
        response.choices[0].message.content = text
        response.choices[0].finish_reason = "stop"
        response.model = MODEL
        usage = Usage(
            prompt_tokens=_tokens(prompt),
            completion_tokens=_tokens(text),
            total_tokens=_tokens(prompt) + _tokens(text),
        )
        response.usage = usage  # type: ignore[attr-defined]
        return response


def install() -> None:
    """Register the provider and its prices with litellm (idempotent)."""
    if not any(p.get("provider") == PROVIDER for p in litellm.custom_provider_map):
        litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": HANDLER})
    litellm.register_model(
        {
            MODEL: {
                "input_cost_per_token": INPUT_PRICE,
                "output_cost_per_token": OUTPUT_PRICE,
                "cache_read_input_token_cost": INPUT_PRICE / 10,
                "cache_creation_input_token_cost": INPUT_PRICE,
                "litellm_provider": PROVIDER,
                "mode": "chat",
            }
        }
    )


HANDLER = ScriptedModel()
install()
