"""Every LLM call memctx makes: one litellm client with retries, usage and cost from
litellm's price table, and a sha256-keyed disk cache of responses. memctx's own models
(``memctx/offline``) register themselves here (:func:`register_local_provider`). The calls
of one run share concurrency slots per provider, a spend ledger with a budget and a response
cache across worker processes (:class:`CallLimits`, :mod:`memctx.llm.limits`). Prices are
read here and nowhere else: :func:`prices_for` (per-token prices of a model) and
:func:`price_completion` (the cost of one call) share one lookup, :func:`price_name`.

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
from .limits import (
    LIMITS_ENV,
    BudgetExceeded,
    CallLimits,
    ProviderSlots,
    SpendLedger,
    backoff_delay,
    estimate_call_cost,
    limits_environment,
    provider_of,
    retry_after_s,
)
from .prices import Prices, price_completion, price_name, prices_for
from .usage import LLMUsage, TaskUsage, UsageRecorder, read_response

__all__ = [
    "LLMClient",
    "prices_for",
]
