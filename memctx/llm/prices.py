"""Model prices: the one reader of litellm's bundled price table (``litellm.model_cost``).

:func:`price_name` decides which table entry prices a model string (the name itself, else the
name without its provider prefix), :func:`prices_for` turns that entry into per-token
:class:`Prices`, and :func:`price_completion` prices one LLM call through the same lookup.
The table is the one bundled with litellm, never fetched from the network, so a price does
not change between runs of the same litellm version.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .usage import response_field

__all__ = ["Prices", "price_completion", "price_name", "price_table", "prices_for"]

# Providers bill a cache read at about a tenth of the input price when the table has none.
_CACHE_READ_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per token: fresh input, cache read, output, and cache write.

    ``cache_write`` is what a provider charges to write a prompt prefix to its cache
    (Anthropic: 1.25x the input price for the 5-minute cache), ``None`` for providers that
    charge nothing for it (OpenAI, Gemini: the uncached part is plain input).
    """

    input: float
    cache_read: float
    output: float
    cache_write: float | None = None

    @property
    def uncached_input(self) -> float:
        """What a token outside the cached prefix costs: the write price where the
        provider charges one, else the input price."""
        return self.cache_write if self.cache_write is not None else self.input


def price_table() -> Mapping[str, Any]:
    """litellm's bundled price table, model name -> entry (``input_cost_per_token``, ...)."""
    # litellm fetches its price table from the network unless told to use the bundled one.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    table: Mapping[str, Any] = litellm.model_cost
    return table


def price_name(model: str) -> str | None:
    """The table name that prices ``model``, or ``None`` when the table has no entry for it.

    ``model`` itself when the table has it, else ``model`` without its provider prefix
    (``anthropic/claude-sonnet-4-5`` is priced as ``claude-sonnet-4-5``).
    """
    table = price_table()
    for name in (model, model.split("/", 1)[-1]):
        if name and name in table:
            return name
    return None


def prices_for(model: str) -> Prices:
    """The model's per-token prices from litellm's bundled table.

    The model is looked up as :func:`price_name` does. The cache-read price falls back to a
    tenth of the input price when the table has none (the common provider discount); the
    cache-write price is the table's ``cache_creation_input_token_cost``, ``None`` when it
    has none or 0.

    Raises:
        ValueError: The table has no input price for the model; the message lists close
            names to use instead.
    """
    table = price_table()
    name = price_name(model)
    entry = table[name] if name is not None else None
    if not entry or entry.get("input_cost_per_token") is None:
        close = difflib.get_close_matches(model, list(table), n=5, cutoff=0.6)
        raise ValueError(
            f"no prices for model {model!r} in litellm's table; "
            f"close matches: {', '.join(close) or 'none'}"
        )
    price_in = float(entry["input_cost_per_token"])
    cache_read = entry.get("cache_read_input_token_cost")
    # A missing or zero write price means the provider does not bill cache writes.
    cache_write = entry.get("cache_creation_input_token_cost") or None
    return Prices(
        input=price_in,
        cache_read=float(cache_read) if cache_read is not None else _CACHE_READ_SHARE * price_in,
        output=float(entry.get("output_cost_per_token") or 0.0),
        cache_write=float(cache_write) if cache_write is not None else None,
    )


def price_completion(
    model: str, raw: Any, prompt_tokens: int, completion_tokens: int
) -> tuple[float, bool]:
    """The USD cost of one call from litellm's price table, and whether it was priced.

    A call is priced when :func:`price_name` finds the reply's own model name or the
    configured one in the table. A model absent from the table costs 0 and is reported
    unpriced, never an exception: an unknown price must not stop memctx. memctx's own models
    (``memctx/...``) cost 0 and count as priced.

    Args:
        model: The configured model string.
        raw: The litellm response; its own model name and usage details (e.g. cached prompt
            tokens) give the most exact price through ``litellm.completion_cost``.
        prompt_tokens: Input tokens, for the fallback ``litellm.cost_per_token``.
        completion_tokens: Output tokens, likewise.

    Returns:
        ``(cost_usd, priced)``.
    """
    if model.split("/", 1)[0] == "memctx":
        return 0.0, True
    names = [n for n in (response_field(raw, "model"), model) if isinstance(n, str) and n]
    # Checked first because litellm prints a banner to stdout for a model it cannot place.
    known = [n for n in names if price_name(n) is not None]
    if not known:
        return 0.0, False
    import litellm  # price_name has pointed litellm at its bundled table

    if isinstance(raw, litellm.ModelResponse):
        try:
            return float(litellm.completion_cost(completion_response=raw)), True
        except Exception:
            pass  # fall back to the per-token price below
    for name in known:
        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=name, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
            )
        except Exception:
            continue
        return float(prompt_cost) + float(completion_cost), True
    return 0.0, False
