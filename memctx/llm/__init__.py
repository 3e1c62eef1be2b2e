"""Every LLM call memctx makes: one litellm client with retries, usage and cost from
litellm's price table, and a sha256-keyed disk cache of responses. memctx's own models
(``memctx/offline``) register themselves here (:func:`register_local_provider`).

May import: the foundations and :mod:`memctx.retrieval`.
"""

from __future__ import annotations

from .cache import (
    CACHE_DIRNAME,
    CACHE_FORMAT_VERSION,
    CachedResponse,
    ResponseCache,
    cache_key,
    default_cache_dir,
)
from .client import (
    OFFLINE_MODEL,
    LLMClient,
    LLMError,
    LLMResponse,
    is_offline_model,
    register_local_provider,
    task_marker,
    task_of,
)
from .usage import LLMUsage, TaskUsage, UsageRecorder, price_completion, read_response

__all__ = [
    "CACHE_DIRNAME",
    "CACHE_FORMAT_VERSION",
    "OFFLINE_MODEL",
    "CachedResponse",
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "LLMUsage",
    "ResponseCache",
    "TaskUsage",
    "UsageRecorder",
    "cache_key",
    "default_cache_dir",
    "is_offline_model",
    "price_completion",
    "read_response",
    "register_local_provider",
    "task_marker",
    "task_of",
]
