"""LLMClient: litellm calls, accounting, pricing, retries, errors, thread safety."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import litellm
import pytest

from memctx.errors import MemctxError
from memctx.llm.client import (
    OFFLINE_MODEL,
    LLMClient,
    LLMError,
    LLMUsage,
    is_offline_model,
    task_marker,
    task_of,
)

# pydantic warns once per process while litellm builds a response type (a litellm matter,
# not ours); the project turns warnings into errors.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Item .* is using the .ReadOnly. qualifier:UserWarning"
)

MESSAGES = [{"role": "user", "content": "Which database did we pick?"}]


def reply(text: str, prompt: int | None = 30, completion: int | None = 5) -> dict[str, Any]:
    usage = {} if prompt is None else {"prompt_tokens": prompt, "completion_tokens": completion}
    return {"choices": [{"message": {"role": "assistant", "content": text}}], "usage": usage}


class Flaky:
    """Raises ``errors`` in turn, then answers; records every call's keyword arguments."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if self.errors:
            raise self.errors.pop(0)
        return reply("ok")


class RateLimitError(Exception):
    """Named like litellm's: the client retries by class name."""


# --- task markers ---------------------------------------------------------------------------


def test_task_marker_round_trips_through_task_of() -> None:
    marker = task_marker("extract-knowledge")
    assert marker == "[memctx-task: extract-knowledge]"
    messages = [
        {"role": "system", "content": f"{marker}\nYou extract facts."},
        {"role": "user", "content": "..."},
    ]
    assert task_of(messages) == "extract-knowledge"


def test_task_of_prefers_the_system_message_and_reads_blocks() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": task_marker("summarize")}]},
        {"role": "system", "content": [{"type": "text", "text": task_marker("decide-update")}]},
    ]
    assert task_of(messages) == "decide-update"
    assert task_of(messages[:1]) == "summarize"
    assert task_of([{"role": "user", "content": "no marker here"}]) is None
    assert task_of([]) is None


@pytest.mark.parametrize("bad", ["", "Has Space", "UPPER", "-leading", "x" * 65])
def test_task_marker_rejects_bad_names(bad: str) -> None:
    with pytest.raises(ValueError, match="task name"):
        task_marker(bad)


def test_is_offline() -> None:
    assert LLMClient().is_offline and LLMClient(OFFLINE_MODEL).is_offline
    assert is_offline_model("memctx/other")
    assert not LLMClient("gpt-4o-mini").is_offline
    assert not is_offline_model("anthropic/claude-sonnet-4-5")


# --- litellm's mock_response path: real pricing without a request ----------------------------


@pytest.mark.parametrize("model", ["gpt-4o-mini", "anthropic/claude-sonnet-4-5"])
def test_mock_response_records_tokens_and_cost_from_the_price_table(model: str) -> None:
    client = LLMClient(model)
    result = client.complete(MESSAGES, task="answer", mock_response="PostgreSQL.")
    assert result.text == "PostgreSQL."
    assert not client.is_offline and not result.cached and result.priced
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    prompt_cost, completion_cost = litellm.cost_per_token(
        model=model,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
    )
    assert result.cost_usd > 0
    assert result.cost_usd == pytest.approx(prompt_cost + completion_cost)
    usage = client.usage()
    assert usage.calls == 1 and usage.cost_usd == pytest.approx(result.cost_usd)
    assert usage.prompt_tokens == result.prompt_tokens
    assert usage.by_task["answer"].completion_tokens == result.completion_tokens


def test_an_unpriced_model_costs_zero_and_is_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    client = LLMClient("my-own-gateway/llama-local", completion=lambda **kw: reply("hi"))
    result = client.complete(MESSAGES, task="answer")
    assert result.cost_usd == 0.0 and not result.priced
    assert client.usage().unpriced_calls == 1
    assert capsys.readouterr().out == ""  # no litellm banner on stdout


# --- scripted completion callables ----------------------------------------------------------


def test_the_request_carries_the_parameters() -> None:
    model = Flaky()
    client = LLMClient("m", temperature=0.1, timeout_s=7, completion=model)
    client.complete(MESSAGES, task="t", max_tokens=42, response_format={"type": "json_object"})
    (call,) = model.calls
    assert call["model"] == "m"
    assert call["messages"] == MESSAGES and call["messages"] is not MESSAGES
    assert call["temperature"] == 0.1 and call["max_tokens"] == 42
    assert call["timeout"] == 7 and call["response_format"] == {"type": "json_object"}
    assert "mock_response" not in call
    client.complete(MESSAGES, task="t", temperature=0.0)
    assert model.calls[1]["temperature"] == 0.0 and "max_tokens" not in model.calls[1]


def test_token_counts_come_from_the_reply_usage() -> None:
    client = LLMClient("m", completion=lambda **kw: reply("fine", prompt=123, completion=9))
    result = client.complete(MESSAGES, task="t")
    assert (result.prompt_tokens, result.completion_tokens) == (123, 9)


def test_missing_usage_is_estimated_not_zero() -> None:
    client = LLMClient("m", completion=lambda **kw: reply("x" * 30, prompt=None))
    result = client.complete(MESSAGES, task="t")
    assert result.completion_tokens == 10  # ceil(30 / 3)
    assert result.prompt_tokens > 0


def test_the_offline_model_gets_a_task_marker_when_the_prompt_has_none() -> None:
    seen: list[list[dict[str, Any]]] = []

    def model(**kwargs: Any) -> dict[str, Any]:
        seen.append(kwargs["messages"])
        return reply("summary")

    original = [dict(m) for m in MESSAGES]
    LLMClient(completion=model).complete(MESSAGES, task="summarize")
    assert task_of(seen[0]) == "summarize"
    assert original == MESSAGES  # the caller's list is not touched
    LLMClient("gpt-4o-mini", completion=model).complete(MESSAGES, task="summarize")
    assert task_of(seen[1]) is None  # real models get exactly what the caller wrote


# --- failures -------------------------------------------------------------------------------


def test_a_failing_call_raises_llm_error_naming_model_task_and_cause() -> None:
    model = Flaky(ValueError("invalid api key"))
    client = LLMClient("anthropic/claude-sonnet-4-5", completion=model, retry_backoff_s=0)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, task="extract-knowledge")
    message = str(info.value)
    assert "anthropic/claude-sonnet-4-5" in message and "extract-knowledge" in message
    assert "invalid api key" in message and "ValueError" in message
    assert info.value.model == "anthropic/claude-sonnet-4-5"
    assert isinstance(info.value, MemctxError)
    assert isinstance(info.value.__cause__, ValueError)
    assert len(model.calls) == 1  # not transient: no retry
    usage = client.usage()
    assert usage.failures == 1 and usage.calls == 1 and usage.prompt_tokens == 0


def test_transient_errors_are_retried() -> None:
    model = Flaky(RateLimitError("slow down"), TimeoutError("read timed out"))
    client = LLMClient("m", completion=model, max_retries=2, retry_backoff_s=0)
    assert client.complete(MESSAGES, task="t").text == "ok"
    assert len(model.calls) == 3
    usage = client.usage()
    assert usage.retries == 2 and usage.failures == 0 and usage.calls == 1


def test_retries_are_bounded() -> None:
    model = Flaky(*(RateLimitError("slow down") for _ in range(5)))
    client = LLMClient("m", completion=model, max_retries=1, retry_backoff_s=0)
    with pytest.raises(LLMError, match="after 2 attempts: RateLimitError: slow down"):
        client.complete(MESSAGES, task="t")
    assert len(model.calls) == 2


def test_the_offline_model_is_not_retried() -> None:
    model = Flaky(TimeoutError("never"), TimeoutError("never"))
    with pytest.raises(LLMError, match="memctx/offline"):
        LLMClient(completion=model, retry_backoff_s=0).complete(MESSAGES, task="t")
    assert len(model.calls) == 1


@pytest.mark.parametrize("bad_reply", [{}, {"choices": []}, None, "plain string"])
def test_a_reply_without_choices_is_an_llm_error(bad_reply: Any) -> None:
    client = LLMClient("m", completion=lambda **kw: bad_reply)
    with pytest.raises(LLMError, match="without choices"):
        client.complete(MESSAGES, task="t")
    assert client.usage().failures == 1


@pytest.mark.parametrize(
    "messages",
    [[], "hello", [{"content": "no role"}], ["not a dict"]],
)
def test_unusable_messages_are_an_llm_error(messages: Any) -> None:
    model = Flaky()
    client = LLMClient("m", completion=model)
    with pytest.raises(LLMError, match="not sent"):
        client.complete(messages, task="t")
    assert not model.calls and client.usage().failures == 1


def test_real_litellm_errors_become_llm_errors() -> None:
    # litellm raises for this canned failure without any request.
    client = LLMClient("gpt-4o-mini", max_retries=0)
    with pytest.raises(LLMError, match="gpt-4o-mini"):
        client.complete(MESSAGES, task="t", mock_response="litellm.InternalServerError")


def test_constructor_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="model string"):
        LLMClient("  ")
    with pytest.raises(ValueError, match="max_retries"):
        LLMClient("m", max_retries=-1)


# --- usage ----------------------------------------------------------------------------------


def test_usage_is_a_snapshot_with_per_task_totals() -> None:
    client = LLMClient("m", completion=lambda **kw: reply("r", prompt=10, completion=2))
    client.complete(MESSAGES, task="a")
    before = client.usage()
    client.complete(MESSAGES, task="b")
    client.complete(MESSAGES, task="b")
    after = client.usage()
    assert before.calls == 1 and set(before.by_task) == {"a"}
    assert after.calls == 3 and after.prompt_tokens == 30
    assert after.by_task["b"].calls == 2 and after.by_task["b"].completion_tokens == 4
    data = after.as_dict()
    assert data["by_task"]["a"]["prompt_tokens"] == 10
    assert isinstance(data["calls"], int) and isinstance(data["cost_usd"], float)
    assert LLMUsage().as_dict()["by_task"] == {}


def test_usage_keeps_the_largest_prompt_not_a_sum() -> None:
    sizes = iter([10, 40, 25])
    client = LLMClient("m", completion=lambda **kw: reply("r", prompt=next(sizes), completion=1))
    for task in ("a", "b", "a"):
        client.complete(MESSAGES, task=task)
    usage = client.usage()
    assert usage.prompt_tokens == 75 and usage.largest_prompt_tokens == 40
    assert usage.by_task["a"].largest_prompt_tokens == 25
    assert usage.by_task["b"].largest_prompt_tokens == 40


@pytest.fixture
def fast_thread_switching() -> Iterator[None]:
    # Switch threads as often as possible so that an unlocked read-modify-write would lose
    # updates within a few hundred calls.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.mark.usefixtures("fast_thread_switching")
def test_usage_counting_is_thread_safe() -> None:
    client = LLMClient("m", completion=lambda **kw: reply("r", prompt=3, completion=5))
    threads_n, calls_n = 8, 150
    start = threading.Barrier(threads_n)

    def work(i: int) -> None:
        start.wait()
        for _ in range(calls_n):
            client.complete(MESSAGES, task=f"task-{i % 2}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = client.usage()
    total = threads_n * calls_n
    assert usage.calls == total
    assert usage.prompt_tokens == 3 * total and usage.completion_tokens == 5 * total
    assert usage.by_task["task-0"].calls + usage.by_task["task-1"].calls == total
    assert usage.by_task["task-0"].calls == total // 2
