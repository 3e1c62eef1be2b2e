"""The shared keyword tokenizer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memctx._text import is_cjk, tokenize, tokenize_unique


def test_identifiers_yield_their_parts() -> None:
    assert tokenize("parseConfigFile") == ["parseconfigfile", "parse", "config", "file"]
    assert tokenize("max_history_share") == ["max_history_share", "max", "history", "share"]
    assert tokenize("HTTPServer") == ["httpserver", "http", "server"]


def test_paths_keep_file_name_and_parts() -> None:
    tokens = tokenize("edit src/payment/webhook.ts")
    assert tokens[:2] == ["edit", "src/payment/webhook.ts"]
    assert {"webhook.ts", "src", "payment", "webhook", "ts"} <= set(tokens)


def test_stop_words_dropped_numbers_kept() -> None:
    assert tokenize("The server is on port 3000") == ["server", "port", "3000"]


def test_cjk_runs_become_bigrams() -> None:
    assert tokenize("使用数据库") == ["使用", "用数", "数据", "据库"]
    assert tokenize("用") == ["用"]
    assert tokenize("我们用PostgreSQL") == ["我们", "们用", "postgresql", "postgre", "sql"]
    assert is_cjk("配置") and not is_cjk("config")


def test_unique_keeps_first_seen_order() -> None:
    assert tokenize_unique("test the test suite tests") == ["test", "suite", "tests"]


@given(st.text(max_size=200))
def test_tokens_are_lowercase_non_empty_and_deterministic(text: str) -> None:
    tokens = tokenize(text)
    assert tokens == tokenize(text)
    assert all(t and t == t.lower() for t in tokens)
