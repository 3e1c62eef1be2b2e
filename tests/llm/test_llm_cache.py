"""The LLM response cache: keys, files on disk, corruption, and the client's use of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memctx.llm.cache import (
    CACHE_FORMAT_VERSION,
    CachedResponse,
    ResponseCache,
    cache_key,
    default_cache_dir,
)
from memctx.llm.client import LLMClient

MESSAGES = [
    {"role": "system", "content": "You summarise."},
    {"role": "user", "content": "We decided to use PostgreSQL."},
]


def _key(**overrides: Any) -> str:
    args: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": MESSAGES,
        "temperature": 0.0,
        "max_tokens": 100,
        "response_format": None,
        "params": None,
    }
    args.update(overrides)
    return cache_key(**args)


def _entry(text: str = "a reply") -> CachedResponse:
    return CachedResponse(
        text=text,
        model="gpt-4o-mini",
        prompt_tokens=12,
        completion_tokens=3,
        cost_usd=0.25,
        priced=True,
        task="summarize",
    )


class Scripted:
    """A completion callable that answers from a script and records each call."""

    def __init__(self, text: str = "scripted reply") -> None:
        self.text = text
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {
            "model": kwargs["model"],
            "choices": [{"message": {"role": "assistant", "content": self.text}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 7},
        }


# --- keys -----------------------------------------------------------------------------------


def test_key_is_stable_hex_and_ignores_dict_order_and_int_vs_float_temperature() -> None:
    key = _key()
    assert len(key) == 64 and all(c in "0123456789abcdef" for c in key)
    reordered = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    assert _key(messages=reordered) == key
    assert _key(temperature=0) == key


@pytest.mark.parametrize(
    "override",
    [
        {"model": "gpt-4o"},
        {"messages": [*MESSAGES, {"role": "user", "content": "and?"}]},
        {"messages": [MESSAGES[0], {"role": "user", "content": "We decided to use MySQL."}]},
        {"temperature": 0.2},
        {"max_tokens": 101},
        {"max_tokens": None},
        {"response_format": {"type": "json_object"}},
        {"params": {"mock_response": "x"}},
    ],
)
def test_key_changes_with_everything_that_shapes_the_output(override: dict[str, Any]) -> None:
    assert _key(**override) != _key()


def test_key_of_a_pydantic_response_format_covers_its_schema() -> None:
    from pydantic import BaseModel

    class Facts(BaseModel):
        items: list[str]

    class Other(BaseModel):
        count: int

    assert _key(response_format=Facts) != _key(response_format=Other)
    assert _key(response_format=Facts) == _key(response_format=Facts)


# --- the store ------------------------------------------------------------------------------


def test_put_then_get_round_trips_in_a_two_level_fan_out(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm-cache")
    key = _key()
    assert cache.get(key) is None
    assert cache.put(key, _entry())
    path = cache.path_for(key)
    assert path == tmp_path / "llm-cache" / key[:2] / key[2:4] / f"{key}.json"
    assert path.is_file()
    assert cache.get(key) == _entry()
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["v"] == CACHE_FORMAT_VERSION and record["key"] == key
    # Only the hash of the prompt is stored, never its text.
    assert "PostgreSQL" not in path.read_text(encoding="utf-8")
    assert not list(path.parent.glob("*.tmp"))  # the temporary file was moved into place


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        "[1, 2]",
        '{"v": 1}',
        '{"v": 999, "key": "K", "text": "t", "model": "m", "task": "t", "prompt_tokens": 1,'
        ' "completion_tokens": 1, "cost_usd": 0.0, "priced": true}',
        '{"v": 1, "key": "K", "text": "t", "model": "m", "task": "t", "prompt_tokens": "1",'
        ' "completion_tokens": 1, "cost_usd": 0.0, "priced": true}',
        '{"v": 1, "key": "K", "text": "t", "model": "m", "task": "t", "prompt_tokens": true,'
        ' "completion_tokens": 1, "cost_usd": 0.0, "priced": true}',
    ],
)
def test_corrupt_or_foreign_entries_are_misses(tmp_path: Path, content: str) -> None:
    cache = ResponseCache(tmp_path)
    key = _key()
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_text(content.replace('"K"', json.dumps(key)), encoding="utf-8")
    assert cache.get(key) is None
    assert cache.put(key, _entry("fresh"))
    assert cache.get(key) == _entry("fresh")


def test_an_entry_stored_under_another_key_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key, other = _key(), _key(model="gpt-4o")
    cache.put(other, _entry())
    path = cache.path_for(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cache.path_for(other).read_bytes())
    assert cache.get(key) is None


def test_a_response_containing_a_secret_is_not_stored(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = _key()
    secret = "Set Authorization: Bearer abcdefABCDEF0123456789abcdefABCDEF0123"
    assert not cache.put(key, _entry(secret))
    assert cache.get(key) is None
    assert not list(tmp_path.rglob("*.json"))


def test_a_failed_write_is_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    cache = ResponseCache(blocker)
    assert cache.put(_key(), _entry()) is False
    assert cache.get(_key()) is None


def test_bad_keys_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="64 lowercase hex"):
        ResponseCache(tmp_path).path_for("../../etc/passwd")


def test_default_location_is_under_the_store(tmp_path: Path) -> None:
    assert default_cache_dir(tmp_path) == tmp_path / "llm-cache"


# --- the client and its cache ---------------------------------------------------------------


def test_second_identical_call_is_a_free_hit_that_reports_original_tokens(tmp_path: Path) -> None:
    model = Scripted()
    # Priced through litellm's table so that the saved cost is not trivially zero.
    client = LLMClient("gpt-4o-mini", cache_dir=tmp_path, completion=model)
    first = client.complete(MESSAGES, task="summarize", max_tokens=50)
    second = client.complete(MESSAGES, task="summarize", max_tokens=50)
    assert len(model.calls) == 1
    assert not first.cached and first.cost_usd > 0
    assert second.cached and second.cost_usd == 0.0
    assert second.text == first.text
    assert (second.prompt_tokens, second.completion_tokens) == (40, 7)
    assert second.original_cost_usd == pytest.approx(first.cost_usd)
    usage = client.usage()
    assert usage.calls == 2 and usage.cache_hits == 1
    assert usage.prompt_tokens == 40 and usage.completion_tokens == 7  # spent once
    assert usage.cached_prompt_tokens == 40 and usage.cached_completion_tokens == 7
    assert usage.cost_usd == pytest.approx(first.cost_usd)
    assert usage.saved_cost_usd == pytest.approx(first.cost_usd)
    assert usage.by_task["summarize"].cache_hits == 1


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.0, "max_tokens": 51},
        {"temperature": 0.0, "max_tokens": None},
        {"temperature": 0.0, "max_tokens": 50, "response_format": {"type": "json_object"}},
        {"temperature": 0.0, "max_tokens": 50, "mock_response": "canned"},
    ],
)
def test_a_different_request_is_a_miss(tmp_path: Path, change: dict[str, Any]) -> None:
    model = Scripted()
    client = LLMClient("some-local-model", cache_dir=tmp_path, completion=model)
    client.complete(MESSAGES, task="t", max_tokens=50)
    client.complete(MESSAGES, task="t", **change)
    assert len(model.calls) == 2
    assert client.usage().cache_hits == 0


def test_different_messages_are_a_miss(tmp_path: Path) -> None:
    model = Scripted()
    client = LLMClient("some-local-model", cache_dir=tmp_path, completion=model)
    client.complete(MESSAGES, task="t")
    client.complete([{"role": "user", "content": "something else"}], task="t")
    assert len(model.calls) == 2


def test_a_different_temperature_is_a_miss_when_sampled_calls_are_cached(tmp_path: Path) -> None:
    model = Scripted()
    client = LLMClient("m", cache_dir=tmp_path, cache_sampled=True, completion=model)
    client.complete(MESSAGES, task="t", temperature=0.3)
    client.complete(MESSAGES, task="t", temperature=0.4)
    client.complete(MESSAGES, task="t", temperature=0.3)
    assert len(model.calls) == 2
    assert client.usage().cache_hits == 1


def test_sampled_calls_are_not_cached_by_default(tmp_path: Path) -> None:
    model = Scripted()
    client = LLMClient("m", cache_dir=tmp_path, completion=model)
    for _ in range(2):
        assert not client.complete(MESSAGES, task="t", temperature=0.7).cached
    assert len(model.calls) == 2
    assert not list(tmp_path.rglob("*.json"))
    # The client-wide default counts too.
    warm = LLMClient("m", cache_dir=tmp_path, temperature=0.7, completion=model)
    warm.complete(MESSAGES, task="t")
    warm.complete(MESSAGES, task="t")
    assert len(model.calls) == 4


def test_sampled_calls_are_cached_when_asked(tmp_path: Path) -> None:
    model = Scripted()
    client = LLMClient("m", cache_dir=tmp_path, cache_sampled=True, completion=model)
    client.complete(MESSAGES, task="t", temperature=0.7)
    assert client.complete(MESSAGES, task="t", temperature=0.7).cached
    assert len(model.calls) == 1


def test_corrupt_cache_file_is_a_miss_then_rewritten(tmp_path: Path) -> None:
    model = Scripted("first answer")
    client = LLMClient("m", cache_dir=tmp_path, completion=model)
    client.complete(MESSAGES, task="t")
    (path,) = tmp_path.rglob("*.json")
    path.write_text('{"v": 1, "key": "trunc', encoding="utf-8")
    model.text = "second answer"
    again = client.complete(MESSAGES, task="t")
    assert not again.cached and again.text == "second answer"
    assert json.loads(path.read_text(encoding="utf-8"))["text"] == "second answer"
    third = client.complete(MESSAGES, task="t")
    assert third.cached and third.text == "second answer"
    assert len(model.calls) == 2


def test_the_cache_survives_a_new_client(tmp_path: Path) -> None:
    LLMClient("m", cache_dir=tmp_path, completion=Scripted("kept")).complete(MESSAGES, task="t")
    model = Scripted("new")
    reply = LLMClient("m", cache_dir=tmp_path, completion=model).complete(MESSAGES, task="t")
    assert reply.cached and reply.text == "kept" and not model.calls


def test_no_cache_dir_means_no_caching(tmp_path: Path) -> None:
    model = Scripted()
    client = LLMClient("m", completion=model)
    client.complete(MESSAGES, task="t")
    client.complete(MESSAGES, task="t")
    assert len(model.calls) == 2 and client.cache is None


def test_the_model_string_is_part_of_the_key(tmp_path: Path) -> None:
    model = Scripted()
    LLMClient("model-a", cache_dir=tmp_path, completion=model).complete(MESSAGES, task="t")
    LLMClient("model-b", cache_dir=tmp_path, completion=model).complete(MESSAGES, task="t")
    assert len(model.calls) == 2
