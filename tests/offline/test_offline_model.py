"""The ``memctx/offline`` model: a litellm custom provider, deterministic, task dispatch."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import types
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import litellm
import pytest

from memctx.llm.client import OFFLINE_MODEL, LLMClient, LLMError, task_marker
from memctx.messages.tokens import estimate_messages_tokens, estimate_tokens
from memctx.offline.model import (
    DEFAULT_REPLY_TOKENS,
    OFFLINE_PROVIDER,
    offline_reply,
    register_offline_model,
)
from memctx.offline.provider import OfflineModel

pytestmark = pytest.mark.filterwarnings(
    "ignore:Item .* is using the .ReadOnly. qualifier:UserWarning"
)

CONVERSATION = """\
[user] The login endpoint returns 500 since this morning.
[assistant] Looking at app/routes/auth.py now.
[tool] FAILED tests/test_auth.py::test_login - KeyError: 'session_id'
[assistant] We decided to store sessions in Redis instead of the in-process dict.
[assistant] Sounds good, carrying on.
[user] TODO: add a regression test for the session expiry.
[user] Please also update the docs."""


def summarize_messages(conversation: str = CONVERSATION) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": f"{task_marker('summarize')}\nSummarise for later."},
        {
            "role": "user",
            "content": f"Outside text.\n<conversation>\n{conversation}\n</conversation>\nThanks.",
        },
    ]


@pytest.fixture
def provider_map(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A private copy of litellm's provider map, restored after the test."""
    fresh: list[Any] = []
    monkeypatch.setattr(litellm, "custom_provider_map", fresh)
    return fresh


@pytest.fixture
def fake_extractor(monkeypatch: pytest.MonkeyPatch) -> list[Sequence[Mapping[str, Any]]]:
    """Replace memctx.offline.extract (written separately) with a recording stub."""
    seen: list[Sequence[Mapping[str, Any]]] = []

    def offline_extract_response(messages: Sequence[Mapping[str, Any]]) -> str:
        seen.append(messages)
        return '[{"type": "decision", "content": "stub", "context": "test"}]'

    module = types.ModuleType("memctx.offline.extract")
    module.offline_extract_response = offline_extract_response  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "memctx.offline.extract", module)
    return seen


# --- registration ---------------------------------------------------------------------------


def test_registration_is_idempotent(provider_map: list[Any]) -> None:
    assert register_offline_model() is True
    assert register_offline_model() is False
    assert [item["provider"] for item in provider_map] == [OFFLINE_PROVIDER]
    assert isinstance(provider_map[0]["custom_handler"], OfflineModel)


class SlowList(list[Any]):
    """A provider map that is slow to scan, so an unlocked check-then-append would race."""

    def __iter__(self) -> Iterator[Any]:
        snapshot = list(super().__iter__())
        time.sleep(0.002)  # between reading the map and acting on what was read
        return iter(snapshot)


def test_registration_is_thread_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    slow = SlowList()
    monkeypatch.setattr(litellm, "custom_provider_map", slow)
    start = threading.Barrier(16)
    results: list[bool] = []

    def register() -> None:
        start.wait()
        results.append(register_offline_model())

    threads = [threading.Thread(target=register) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1
    assert len(slow) == 1


def test_registration_keeps_other_providers_and_a_foreign_memctx_handler(
    provider_map: list[Any],
) -> None:
    other = {"provider": "someone-else", "custom_handler": object()}
    provider_map.append(other)
    register_offline_model()
    assert provider_map[0] is other and len(provider_map) == 2
    mine = {"provider": OFFLINE_PROVIDER, "custom_handler": object()}
    provider_map[1] = mine
    assert register_offline_model() is False
    assert provider_map[1] is mine


def test_a_handler_that_cannot_load_fails_the_call_with_an_llm_error(
    monkeypatch: pytest.MonkeyPatch, provider_map: list[Any]
) -> None:
    # The handler (and litellm with it) loads on the first offline call; if that import
    # breaks, the call fails the way every failed call does, counted, never an ImportError.
    monkeypatch.setitem(sys.modules, "memctx.offline.provider", None)
    client = LLMClient()
    with pytest.raises(LLMError, match=r"could not be set up: ModuleNotFoundError.*litellm"):
        client.complete(summarize_messages(), task="summarize")
    assert client.usage().failures == 1 and provider_map == []


def test_the_client_registers_again_after_the_map_was_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(litellm, "custom_provider_map", [])
    reply = LLMClient().complete(summarize_messages(), task="summarize")
    assert reply.text and [i["provider"] for i in litellm.custom_provider_map] == ["memctx"]


# --- through litellm, offline ---------------------------------------------------------------


def test_litellm_completion_answers_offline_with_usage() -> None:
    register_offline_model()
    messages = summarize_messages()
    response = litellm.completion(model=OFFLINE_MODEL, messages=messages, max_tokens=200)
    assert isinstance(response, litellm.ModelResponse)
    text = response.choices[0].message.content
    assert text and "Redis" in text
    assert response.model == OFFLINE_MODEL
    assert response.usage.prompt_tokens == estimate_messages_tokens(messages)
    assert response.usage.completion_tokens == estimate_tokens(text)
    assert response.usage.total_tokens == response.usage.prompt_tokens + estimate_tokens(text)


def test_litellm_acompletion_answers_offline() -> None:
    register_offline_model()
    messages = summarize_messages()
    response = asyncio.run(litellm.acompletion(model=OFFLINE_MODEL, messages=messages))
    assert response.choices[0].message.content == offline_reply(messages)


def test_the_offline_model_is_deterministic() -> None:
    register_offline_model()
    messages = summarize_messages()
    texts = {
        litellm.completion(model=OFFLINE_MODEL, messages=messages, max_tokens=120)
        .choices[0]
        .message.content
        for _ in range(3)
    }
    assert len(texts) == 1
    changed = summarize_messages(CONVERSATION.replace("Redis", "Memcached"))
    assert offline_reply(changed, 120) != texts.pop()


def test_the_client_reports_offline_calls_as_free_and_priced(tmp_path: Path) -> None:
    client = LLMClient(cache_dir=tmp_path)
    first = client.complete(summarize_messages(), task="summarize", max_tokens=150)
    assert first.cost_usd == 0.0 and first.priced and first.prompt_tokens > 0
    second = client.complete(summarize_messages(), task="summarize", max_tokens=150)
    assert second.cached and second.text == first.text
    assert client.usage().cost_usd == 0.0 and client.usage().cache_hits == 1


# --- dispatch -------------------------------------------------------------------------------


def test_extract_knowledge_goes_to_the_offline_extractor(
    fake_extractor: list[Sequence[Mapping[str, Any]]],
) -> None:
    messages = [
        {"role": "system", "content": task_marker("extract-knowledge")},
        {"role": "user", "content": f"<conversation>\n{CONVERSATION}\n</conversation>"},
    ]
    reply = LLMClient().complete(messages, task="extract-knowledge", max_tokens=5)
    # The JSON array comes back whole: max_tokens would cut it into invalid JSON.
    assert reply.text == '[{"type": "decision", "content": "stub", "context": "test"}]'
    assert len(fake_extractor) == 1
    assert fake_extractor[0][-1]["content"] == messages[-1]["content"]


def test_an_extractor_that_returns_no_string_fails_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("memctx.offline.extract")
    module.offline_extract_response = lambda messages: [1, 2]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "memctx.offline.extract", module)
    messages = [{"role": "user", "content": "<conversation>x</conversation>"}]
    with pytest.raises(LLMError, match="memctx/offline"):
        LLMClient().complete(messages, task="extract-knowledge")


def test_summarize_reads_only_the_conversation_block_and_honours_max_tokens() -> None:
    messages = summarize_messages()
    text = offline_reply(messages, 400)
    assert "Outside text" not in text and "Thanks" not in text
    assert "Redis instead of the in-process dict" in text
    assert "KeyError: 'session_id'" in text
    assert "app/routes/auth.py" in text
    assert "Latest request:\n- Please also update the docs." in text
    assert "Sounds good" not in text  # the last words say nothing of the work
    for budget in (20, 40, 80):
        assert estimate_tokens(offline_reply(messages, budget)) <= budget


def test_summarize_without_tags_reads_user_messages_only() -> None:
    messages = [
        {"role": "system", "content": task_marker("summarize")},
        {"role": "user", "content": "We must pin numpy to 1.26 because of the ABI break."},
        {"role": "assistant", "content": "Assistant says: decided to drop Python 3.9."},
        {"role": "user", "content": [{"type": "text", "text": "Now bump the version."}]},
    ]
    text = offline_reply(messages, 200)
    assert "pin numpy to 1.26" in text
    assert "Python 3.9" not in text
    assert text.rstrip().endswith("Latest request: Now bump the version.")


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "We decided to use ruff instead of flake8."}],
        [
            {"role": "system", "content": task_marker("unknown-task")},
            {"role": "user", "content": ""},
        ],
        [{"role": "assistant", "content": "no user at all"}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
        [{"role": "system", "content": task_marker("summarize")}],
    ],
)
def test_any_other_request_gets_a_short_reply_never_an_exception(
    messages: list[dict[str, Any]],
) -> None:
    text = offline_reply(messages, None)
    assert text and estimate_tokens(text) <= DEFAULT_REPLY_TOKENS + 16


def test_the_generic_reply_is_extractive() -> None:
    text = offline_reply([{"role": "user", "content": "We decided to use ruff instead of flake8."}])
    assert "ruff instead of flake8" in text


def test_the_handler_builds_its_own_response_when_litellm_passes_none() -> None:
    messages = [{"role": "user", "content": "We decided to use ruff."}]
    response = OfflineModel().completion("offline", messages, optional_params={"max_tokens": 50})
    assert response.choices[0].message.content == offline_reply(messages, 50)
    assert response.model == OFFLINE_MODEL
