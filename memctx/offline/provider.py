"""``memctx/offline`` as a litellm custom provider: the only module of this package that
imports litellm.

litellm takes seconds to import, so nothing imports this module until the first call to the
offline model: :func:`memctx.offline.model.register_offline_model` (the installer that
:mod:`memctx.offline` hands to :func:`memctx.llm.register_local_provider`) loads it then.
The replies themselves come from :func:`memctx.offline.model.offline_reply`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

# litellm fetches its price table from the network at import unless told to use its copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ModelResponse, Usage

from memctx.messages import estimate_messages_tokens, estimate_tokens

from .model import OFFLINE_PROVIDER, offline_reply

__all__ = ["OfflineModel", "install_offline_handler"]


def _max_tokens(optional_params: object) -> int | None:
    if not isinstance(optional_params, Mapping):
        return None
    for name in ("max_tokens", "max_completion_tokens"):
        value = optional_params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


class OfflineModel(CustomLLM):
    """The litellm handler behind ``memctx/offline`` (streaming is not supported)."""

    def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        """Answer synchronously; litellm passes every other argument by keyword."""
        text = offline_reply(messages, _max_tokens(kwargs.get("optional_params")))
        response = kwargs.get("model_response")
        if not isinstance(response, ModelResponse):
            response = ModelResponse()
        response.choices[0].message.content = text
        response.choices[0].finish_reason = "stop"
        response.model = f"{OFFLINE_PROVIDER}/{model}"
        prompt_tokens = estimate_messages_tokens(messages)
        completion_tokens = estimate_tokens(text)
        usage = Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )
        # ModelResponse declares no ``usage`` field (its __init__ sets it dynamically, as
        # litellm's own mock path does), so the typed attribute assignment is refused.
        response.usage = usage  # type: ignore[attr-defined]
        return response

    async def acompletion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        """Same as :meth:`completion`: the work is CPU-bound and short."""
        return self.completion(model, messages, *args, **kwargs)


_HANDLER = OfflineModel()
_LOCK = threading.Lock()


def install_offline_handler() -> bool:
    """Add the ``memctx`` entry to ``litellm.custom_provider_map`` unless one is there; the
    body of :func:`memctx.offline.model.register_offline_model` (which documents it).

    Returns:
        True when this call added the provider.
    """
    with _LOCK:
        providers = litellm.custom_provider_map
        present = any(
            isinstance(item, Mapping) and item.get("provider") == OFFLINE_PROVIDER
            for item in providers
        )
        if not present:
            # litellm adds new entries to its provider list at the start of each completion.
            providers.append({"provider": OFFLINE_PROVIDER, "custom_handler": _HANDLER})
        return not present
