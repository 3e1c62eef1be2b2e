"""The shared keyword tokenizer."""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.text import keywords as text_module
from memctx.text.keywords import (
    cached_word_tokens,
    chunk_cache,
    is_cjk,
    run_tokens,
    tokenize,
    tokenize_general,
    tokenize_unique,
)

EXAMPLES = int(os.environ.get("MEMCTX_PROPERTY_EXAMPLES", "1000"))


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


# -- the fast path (chunk cache) gives exactly the tokens of the general path ------------------

_PIECES = [
    "parseConfigFile",
    "max_history_share",
    "HTTPServer",
    "src/payment/webhook.ts",
    "a..b",
    "-flag",
    "file.py.",
    "v1.2.3-rc1",
    "request_id=a5dbc86b",
    "localhost:8080",
    "`self.min_order`",
    "使用数据库",
    "我们用PostgreSQL",
    "データベース",
    "café",
    "naïve—résumé’s",
    "ﬁle",
    "２０２４",
    "\u00a0",
    "\u2003",
    "\x1c",
    "\t\n",
    "the",
    "IS",
    "x",
    "__init__",
    "a/b/c",
    "..",
    "2025-05-24 04:16:07,027",
]
_MIXED_TEXT = st.lists(
    st.one_of(st.sampled_from(_PIECES), st.text(max_size=12), st.sampled_from([" ", "\n", ""])),
    max_size=30,
).map("".join)


@settings(max_examples=EXAMPLES, deadline=None)
@given(_MIXED_TEXT)
def test_fast_path_equals_the_general_path(text: str) -> None:
    assert tokenize(text) == tokenize_general(text, cached_word_tokens)
    assert tokenize(text) == tokenize_general(text, run_tokens)  # cached or not: the same


def test_fast_path_survives_the_cache_filling_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_module, "CHUNK_CACHE_MAX", 8)
    chunk_cache.clear()
    rng = random.Random(5)
    for _ in range(300):
        text = " ".join(rng.choice(_PIECES) + str(rng.randrange(50)) for _ in range(12))
        assert tokenize(text) == tokenize_general(text, cached_word_tokens)
        assert len(chunk_cache) <= 8
    chunk_cache.clear()


def test_non_cjk_unicode_takes_the_fast_path_and_cjk_the_general_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real = text_module.tokenize_general

    def spy(text: str, word_tokens: Callable[[str], tuple[str, ...]]) -> list[str]:
        calls.append(text)
        return real(text, word_tokens)

    latin, cjk = "café naïve résumé déjà-vu", "使用 数据库 now"
    expected = tokenize_general(latin, cached_word_tokens)
    monkeypatch.setattr(text_module, "tokenize_general", spy)
    chunk_cache.clear()
    assert tokenize(latin) == expected
    assert calls and all(len(c) < 10 for c in calls)  # chunk misses only, not the text
    calls.clear()
    assert tokenize(cjk) == ["使用", "数据", "据库", "now"]
    assert calls == [cjk]
    chunk_cache.clear()
