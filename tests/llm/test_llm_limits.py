"""Limits a run's real LLM calls share: retries with jittered backoff on rate limits, the
concurrency bound per provider across threads and processes, and the spend ledger's budget."""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from pathlib import Path
from typing import Any

import litellm
import pytest
from helpers.slot_holder import hold_slot

from memctx.llm import (
    BudgetExceeded,
    CallLimits,
    LLMClient,
    ProviderSlots,
    SpendLedger,
    backoff_delay,
    estimate_call_cost,
    limits_environment,
    provider_of,
)

MESSAGES = [{"role": "user", "content": "Which port does the server use?"}]


class _Reply:
    """A litellm-shaped reply: choices[0].message.content and usage."""

    def __init__(self, text: str, completion_tokens: int = 2) -> None:
        message = type("M", (), {"content": text})()
        self.choices = [type("C", (), {"message": message})()]
        self.usage = {"prompt_tokens": 10, "completion_tokens": completion_tokens}


class FlakyModel:
    """Raises litellm.RateLimitError on a seeded-random share of its calls."""

    def __init__(self, seed: int, rate: float, completion_tokens: int = 2) -> None:
        self.completion_tokens = completion_tokens
        self.rng = random.Random(seed)
        self.rate = rate
        self.calls = 0
        self.rate_limited = 0
        self.lock = threading.Lock()

    def __call__(self, **kwargs: Any) -> _Reply:
        with self.lock:
            self.calls += 1
            fail = self.rng.random() < self.rate
            if fail:
                self.rate_limited += 1
        if fail:
            raise litellm.RateLimitError("429: slow down", llm_provider="openai", model="gpt-4o")
        return _Reply("port 8080", self.completion_tokens)


def test_rate_limits_are_retried_until_the_calls_succeed(tmp_path: Path) -> None:
    model = FlakyModel(seed=7, rate=0.5)
    limits = CallLimits(tmp_path / "limits", concurrency=2, max_retries=8, retry_backoff_s=0)
    client = LLMClient("gpt-4o", completion=model, limits=limits, max_retries=8, retry_backoff_s=0)
    for i in range(20):
        reply = client.complete([{"role": "user", "content": f"question {i}"}], task="t")
        assert reply.text == "port 8080"
    usage = client.usage()
    assert model.rate_limited > 0  # the script did refuse calls: seed 7 at 50 %
    assert usage.retries == model.rate_limited  # every refusal was retried ...
    assert usage.failures == 0  # ... and every call succeeded in the end
    ledger = limits.ledger().snapshot()
    assert ledger["retries"] == model.rate_limited
    assert ledger["calls"] == 20
    assert ledger["reserved_usd"] == pytest.approx(0.0)  # every reservation settled


def test_without_retries_a_rate_limit_fails_the_call(tmp_path: Path) -> None:
    from memctx.llm import LLMError

    model = FlakyModel(seed=0, rate=1.0)
    client = LLMClient("gpt-4o", completion=model, max_retries=0, retry_backoff_s=0)
    with pytest.raises(LLMError, match="RateLimitError"):
        client.complete(MESSAGES, task="t")


def _rate_limit(retry_after: str | None) -> Exception:
    import httpx

    headers = {"retry-after": retry_after} if retry_after is not None else {}
    response = httpx.Response(429, headers=headers, request=httpx.Request("POST", "https://x"))
    return litellm.RateLimitError("429", llm_provider="openai", model="gpt-4o", response=response)


def test_a_retry_after_header_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from memctx.llm import retry_after_s

    assert retry_after_s(_rate_limit("7")) == 7.0
    assert retry_after_s(_rate_limit("3600")) == 60.0
    assert retry_after_s(_rate_limit(None)) is None
    assert retry_after_s(_rate_limit("Wed, 21 Oct 2015 07:28:00 GMT")) is None
    assert retry_after_s(ValueError("no response")) is None
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    errors = [_rate_limit("7"), _rate_limit(None)]

    def model(**kwargs: Any) -> _Reply:
        if errors:
            raise errors.pop(0)
        return _Reply("ok")

    client = LLMClient("gpt-4o", completion=model, max_retries=2, retry_backoff_s=0.001)
    assert client.complete(MESSAGES, task="t").text == "ok"
    assert waits[0] == 7.0  # the provider's word, not the 1 ms backoff
    assert waits[1] < 0.01  # no header: the jittered backoff


def test_backoff_is_exponential_with_seeded_jitter() -> None:
    first = [backoff_delay(k, 1.0, random.Random(3)) for k in range(5)]
    again = [backoff_delay(k, 1.0, random.Random(3)) for k in range(5)]
    assert first == again  # the same seed, the same delays
    for k, delay in enumerate(first):
        assert 0.5 * 2**k <= delay < 1.5 * 2**k
    other = [backoff_delay(k, 1.0, random.Random(4)) for k in range(5)]
    assert other != first
    assert backoff_delay(20, 1.0, random.Random(0)) <= 60.0


class HoldingModel:
    """Records the most calls in flight at once; each call waits (up to a bound) for one
    more caller than the limit allows, so without a limiter the count is sure to exceed it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        self.most = 0
        self.calls = 0
        self.cond = threading.Condition()

    def __call__(self, **kwargs: Any) -> _Reply:
        with self.cond:
            self.in_flight += 1
            self.calls += 1
            self.most = max(self.most, self.in_flight)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.in_flight > self.limit, timeout=0.05)
            self.in_flight -= 1
        return _Reply("ok")


def test_threads_never_exceed_the_concurrency_bound(tmp_path: Path) -> None:
    model = HoldingModel(limit=2)
    limits = CallLimits(tmp_path / "limits", concurrency=2)
    clients = [LLMClient("gpt-4o", completion=model, limits=limits) for _ in range(4)]

    def work(client: LLMClient, n: int) -> None:
        for i in range(6):
            client.complete([{"role": "user", "content": f"{n}-{i}"}], task="t")

    threads = [
        threading.Thread(target=work, args=(clients[n % 4], n)) for n in range(8)
    ]  # two threads per client too: the bound holds within one client
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.calls == 48
    assert model.most == 2  # the bound, reached and never exceeded


def test_without_limits_the_holding_model_sees_more_callers() -> None:
    # The probe works: unlimited, the same load puts more than two calls in flight.
    model = HoldingModel(limit=2)
    client = LLMClient("gpt-4o", completion=model)
    threads = [
        threading.Thread(
            target=lambda n=n: client.complete([{"role": "user", "content": str(n)}], task="t")
        )
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.most > 2


def test_processes_share_the_slots(tmp_path: Path) -> None:
    record = tmp_path / "record.txt"
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=hold_slot, args=(str(tmp_path / "slots"), str(record), 2, 5))
        for _ in range(3)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0
    # Entries and exits are written while the slot is held, so the running count is exact.
    inside = most = 0
    lines = record.read_text(encoding="utf-8").splitlines()
    for line in lines:
        inside += 1 if line.startswith("+") else -1
        most = max(most, inside)
    assert len(lines) == 30
    assert inside == 0
    assert most <= 2


def test_slots_are_per_provider(tmp_path: Path) -> None:
    slots = ProviderSlots(tmp_path, 1)
    with slots.slot("openai"), slots.slot("anthropic"):
        pass  # another provider's slot is free while openai's is held
    assert provider_of("gpt-4o") == "openai"
    assert provider_of("anthropic/claude-sonnet-4-5") == "anthropic"
    assert provider_of("no-such-provider/x") == "no-such-provider"


def test_the_ledger_refuses_a_call_that_could_exceed_the_budget(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path / "ledger.json", 1.0)
    ledger.reserve(0.4)
    ledger.settle(0.4, 0.3)
    ledger.reserve(0.6)  # 0.3 spent + 0.6 reserved: within 1.0
    with pytest.raises(BudgetExceeded, match=r"cost budget of \$1\.0000"):
        ledger.reserve(0.2)  # 0.3 + 0.6 + 0.2 > 1.0
    ledger.settle(0.6, None)  # the call failed: nothing billed
    with pytest.raises(BudgetExceeded):
        ledger.reserve(0.01)  # stopped stays stopped: the run ends, it does not trickle on
    with pytest.raises(BudgetExceeded):
        ledger.check()
    state = SpendLedger(tmp_path / "ledger.json", 1.0).snapshot()
    assert state["spent_usd"] == pytest.approx(0.3)
    assert state["reserved_usd"] == pytest.approx(0.0)
    assert state["stopped"] is True
    assert state["reason"].startswith("stopped before exceeding the cost budget of $1.0000")


def test_budget_stops_the_client_before_the_call_is_sent(tmp_path: Path) -> None:
    model = FlakyModel(seed=0, rate=0.0, completion_tokens=90)  # billed about the estimate
    estimate = estimate_call_cost("gpt-4o", MESSAGES, 100)
    assert estimate > 0
    limits = CallLimits(tmp_path / "limits", max_cost_usd=estimate * 2.5)
    client = LLMClient("gpt-4o", completion=model, limits=limits)
    with pytest.raises(BudgetExceeded):
        for i in range(10):
            client.complete([{"role": "user", "content": f"q{i}"}], task="t", max_tokens=100)
    state = limits.ledger().snapshot()
    assert model.calls < 10
    assert state["spent_usd"] <= estimate * 2.5
    assert state["calls"] == model.calls


def test_budget_exceeded_crosses_process_boundaries() -> None:
    import pickle

    exc = pickle.loads(pickle.dumps(BudgetExceeded("stopped")))
    assert isinstance(exc, BudgetExceeded)
    assert str(exc) == "stopped"


def test_limits_travel_through_the_environment(tmp_path: Path) -> None:
    limits = CallLimits(tmp_path, concurrency=3, max_cost_usd=2.5, seed=9, cache_dir=tmp_path)
    assert CallLimits.from_env() is None
    with limits_environment(limits):
        assert CallLimits.from_env() == limits
    assert CallLimits.from_env() is None
    with pytest.raises(ValueError):
        CallLimits(tmp_path, concurrency=0)
    with pytest.raises(ValueError):
        CallLimits(tmp_path, max_cost_usd=0)
