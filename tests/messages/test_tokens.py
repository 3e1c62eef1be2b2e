"""Token estimate and the cached exact counter."""

from __future__ import annotations

import pytest

from memctx.messages.tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    TokenCounter,
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_tokens,
)


def test_estimate_is_ceil_len_over_three() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("abcd") == 2
    assert estimate_tokens("数据库连接") == 2  # characters, not bytes


def test_message_estimate_covers_every_block_kind() -> None:
    text_only = {"role": "user", "content": "x" * 30}
    assert estimate_message_tokens(text_only) == MESSAGE_OVERHEAD_TOKENS + 10
    big_input = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "a", "name": "Write", "input": {"content": "y" * 3000}}
        ],
    }
    small_input = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "a", "name": "Write", "input": {"content": "y"}}],
    }
    grew = estimate_message_tokens(big_input) - estimate_message_tokens(small_input)
    assert 999 <= grew <= 1001  # 2,999 more characters of input, ceil-divided by three
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "z" * 300}]}
    assert estimate_message_tokens(thinking) == MESSAGE_OVERHEAD_TOKENS + 100
    image = {"role": "user", "content": [{"type": "image", "source": {"data": "AAAA" * 10_000}}]}
    assert estimate_message_tokens(image) == MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS
    result = {"role": "tool", "tool_call_id": "a", "content": "r" * 90}
    assert estimate_message_tokens(result) == MESSAGE_OVERHEAD_TOKENS + 30
    assert estimate_messages_tokens([text_only, result, None]) == (
        estimate_message_tokens(text_only) + estimate_message_tokens(result)
    )


def test_estimate_counter_needs_no_litellm() -> None:
    counter = TokenCounter()
    assert not counter.exact
    assert (
        counter.count_message({"role": "user", "content": "abcdef"}) == MESSAGE_OVERHEAD_TOKENS + 2
    )


@pytest.fixture(scope="module")
def exact() -> TokenCounter:
    return TokenCounter("gpt-4o")


def test_exact_counter_uses_the_model_tokenizer(exact: TokenCounter) -> None:
    # "hello world" is two tokens in o200k; the estimate would say four.
    assert exact.count_text("hello world") == 2
    msg = {"role": "user", "content": "hello world"}
    assert exact.count_message(msg) == MESSAGE_OVERHEAD_TOKENS + 2


def test_exact_counter_caches_per_message(exact: TokenCounter) -> None:
    messages = [{"role": "user", "content": f"message number {i} " * 20} for i in range(50)]
    before = exact.stats.misses
    first = exact.count_messages(messages)
    assert exact.stats.misses - before == 50
    hits = exact.stats.hits
    assert exact.count_messages(messages) == first
    assert exact.stats.hits - hits == 50 and exact.stats.misses - before == 50
    # A new turn tokenizes only the new message.
    messages.append({"role": "assistant", "content": "new"})
    exact.count_messages(messages)
    assert exact.stats.misses - before == 51
    # Equal content in a fresh dict is a digest hit, not a new tokenization.
    exact.count_message(dict(messages[0]))
    assert exact.stats.misses - before == 51


def test_exact_counter_notices_in_place_edits(exact: TokenCounter) -> None:
    msg = {"role": "user", "content": "short"}
    small = exact.count_message(msg)
    msg["content"] = "a much longer message than before, with many more tokens in it"
    assert exact.count_message(msg) > small


def test_claude_tokenizer_is_available_offline() -> None:
    counter = TokenCounter("claude-sonnet-4-5")
    assert 0 < counter.count_text("def parse(x): return x") < 20
