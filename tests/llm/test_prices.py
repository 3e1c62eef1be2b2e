"""Prices: one lookup in litellm's bundled table for the eval's per-token prices and for the
cost of each LLM call."""

from __future__ import annotations

import litellm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.llm import Prices, price_completion, price_name, prices_for
from tests.strategies import examples, priced_models, unpriced_models

# pydantic warns once per process while litellm builds a response type (a litellm matter,
# not ours); the project turns warnings into errors.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Item .* is using the .ReadOnly. qualifier:UserWarning"
)


def test_a_model_is_looked_up_by_its_name_then_without_its_provider_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert price_name("claude-sonnet-4-5") == "claude-sonnet-4-5"
    assert price_name("anthropic/claude-sonnet-4-5") == "claude-sonnet-4-5"
    assert price_name("my-own-gateway/llama-local") is None
    assert prices_for("anthropic/claude-sonnet-4-5") == prices_for("claude-sonnet-4-5")
    # The full name wins over the bare one when the table has both.
    monkeypatch.setitem(litellm.model_cost, "memctx-test-model", {"input_cost_per_token": 1.0})
    monkeypatch.setitem(litellm.model_cost, "gw/memctx-test-model", {"input_cost_per_token": 2.0})
    assert price_name("gw/memctx-test-model") == "gw/memctx-test-model"
    assert prices_for("gw/memctx-test-model").input == 2.0
    assert prices_for("other/memctx-test-model").input == 1.0


def test_prices_are_the_table_entry_with_a_tenth_for_a_missing_cache_read_price(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry = litellm.model_cost["claude-sonnet-4-5"]
    assert prices_for("claude-sonnet-4-5") == Prices(
        input=entry["input_cost_per_token"],
        cache_read=entry["cache_read_input_token_cost"],
        output=entry["output_cost_per_token"],
        cache_write=entry["cache_creation_input_token_cost"],
    )
    # Anthropic bills a cache write at 1.25x input: the uncached part of a cached prompt.
    sonnet = prices_for("claude-sonnet-4-5")
    assert sonnet.uncached_input == pytest.approx(1.25 * sonnet.input)
    # OpenAI caches for free: the uncached part is plain input.
    assert prices_for("gpt-4o").cache_write is None
    assert prices_for("gpt-4o").uncached_input == prices_for("gpt-4o").input
    monkeypatch.setitem(
        litellm.model_cost,
        "memctx-test-model",
        {
            "input_cost_per_token": 2e-6,
            "output_cost_per_token": 8e-6,
            "cache_creation_input_token_cost": 0.0,  # a zero write price: no write fee
        },
    )
    prices = prices_for("memctx-test-model")
    assert (prices.input, prices.output) == (2e-6, 8e-6)
    assert prices.cache_read == pytest.approx(2e-7)
    assert prices.cache_write is None and prices.uncached_input == 2e-6


def test_a_model_without_prices_is_refused_with_names_to_use_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match=r"'claude-sonet-4-5'.*close matches: .*claude-sonnet-4-5"):
        prices_for("claude-sonet-4-5")
    with pytest.raises(ValueError, match="close matches: none"):
        prices_for("my-own-gateway/llama-local")
    # An entry without an input price (an image model, say) cannot price a chat call.
    monkeypatch.setitem(litellm.model_cost, "memctx-test-model", {"output_cost_per_image": 0.04})
    with pytest.raises(ValueError, match="no prices for model 'memctx-test-model'"):
        prices_for("memctx-test-model")


@settings(max_examples=examples(60), deadline=None)
@given(priced_models, st.integers(0, 100_000), st.integers(0, 10_000))
def test_a_call_costs_what_the_models_prices_say(model: str, prompt: int, completion: int) -> None:
    # Under the long-context tiers, litellm's per-token price of a call and the eval's prices
    # read from the same entry agree.
    prices = prices_for(model)
    cost, priced = price_completion(model, {"model": model}, prompt, completion)
    assert priced
    assert cost == pytest.approx(prompt * prices.input + completion * prices.output, rel=1e-12)


@settings(max_examples=examples(60), deadline=None)
@given(unpriced_models)
def test_a_model_the_lookup_does_not_know_is_unpriced_not_an_error(model: str) -> None:
    assert price_name(model) is None
    assert price_completion(model, None, 100, 10) == (0.0, False)
    assert price_completion(model, {"model": model}, 100, 10) == (0.0, False)
    with pytest.raises(ValueError, match="close matches"):
        prices_for(model)


def test_memctx_models_cost_nothing_and_count_as_priced() -> None:
    assert price_completion("memctx/offline", None, 1000, 100) == (0.0, True)
