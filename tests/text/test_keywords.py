"""The shared keyword tokenizer."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memctx
from memctx.text import keywords as text_module
from memctx.text import porter_stem
from memctx.text.keywords import (
    CJK_CHARS,
    CJK_RE,
    QUESTION_WORDS,
    STOPWORDS,
    TOKENIZER_VERSION,
    cached_word_tokens,
    chunk_cache,
    is_cjk,
    run_tokens,
    stemmed_run_tokens,
    tokenize,
    tokenize_general,
    tokenize_unique,
    word_runs,
)
from tests.strategies import examples


def test_identifiers_yield_their_parts() -> None:
    surface = partial(tokenize, stem=False)
    assert surface("parseConfigFile") == ["parseconfigfile", "parse", "config", "file"]
    assert surface("max_history_share") == ["max_history_share", "max", "history", "share"]
    assert surface("HTTPServer") == ["httpserver", "http", "server"]
    # An identifier and its parts are names: matched as written, never stemmed.
    assert tokenize("parseConfigFile") == surface("parseConfigFile")
    assert tokenize("max_history_share") == surface("max_history_share")
    assert tokenize("validateProfile") == ["validateprofile", "validate", "profile"]
    assert "valid" not in tokenize("validateProfile")  # "validation?" must not match it


def test_plain_words_are_stemmed_so_inflections_meet() -> None:
    assert tokenize("Where has Melanie camped?") == ["melani", "camp"]
    assert tokenize("we went camping; two paintings") == ["went", "camp", "two", "paint"]
    assert set(tokenize("configured")) == set(tokenize("configuring"))
    # Facts to match exactly are not stemmed: numbers, versions, paths, ids with digits.
    assert tokenize("port 8443 v1.2.3 tests/runs.py run2s Validation") == [
        "port",
        "8443",
        "v1.2.3",
        "v1",
        "tests/runs.py",
        "runs.py",
        "tests",
        "runs",
        "py",
        "run2s",
        "run",
        "valid",
    ]


def test_question_words_are_stop_words() -> None:
    assert tokenize("How and why, whom or whose?") == []
    assert QUESTION_WORDS <= STOPWORDS
    assert TOKENIZER_VERSION == 3  # saved term counts of older versions are stale


def test_paths_keep_file_name_and_parts() -> None:
    tokens = tokenize("edit src/payment/webhook.ts")
    assert tokens[:2] == ["edit", "src/payment/webhook.ts"]
    assert {"webhook.ts", "src", "payment", "webhook", "ts"} <= set(tokens)


def test_stop_words_dropped_numbers_kept() -> None:
    assert tokenize("The server is on port 3000") == ["server", "port", "3000"]


def test_cjk_runs_become_bigrams() -> None:
    assert tokenize("使用数据库") == ["使用", "用数", "数据", "据库"]
    assert tokenize("用") == ["用"]
    assert tokenize("我们用PostgreSQL", stem=False) == [
        "我们",
        "们用",
        "postgresql",
        "postgre",
        "sql",
    ]
    assert is_cjk("配置") and not is_cjk("config")


# One sample of each script the shared range covers, and characters it must not.
CJK_SAMPLES = {
    "hiragana": "ひらがな",
    "katakana": "カタカナ",
    "extension A": "㐀㐁",
    "unified ideographs": "数据",
    "hangul": "한국어",
    "compatibility ideographs": "豈更",
}


@pytest.mark.parametrize("sample", CJK_SAMPLES.values(), ids=CJK_SAMPLES.keys())
def test_one_cjk_range_covers_kana_hangul_and_compatibility_ideographs(sample: str) -> None:
    assert is_cjk(sample) and is_cjk(f"x {sample} y")
    assert "".join(CJK_RE.findall(f"a{sample}-b")) == sample
    assert re.fullmatch(f"[{CJK_CHARS}]+", sample)
    # A CJK run of any of these scripts is tokenized as CJK: overlapping bigrams.
    assert tokenize(sample) == [sample[i : i + 2] for i in range(len(sample) - 1)]
    assert word_runs(f"use {sample}ok") == ["use", sample, "ok"]


def test_non_cjk_unicode_is_not_cjk() -> None:
    for text in ("café", "Ωμέγα", "привет", "ＡＰＩ", "２０２４", "😀", "—", "", "config"):
        assert not is_cjk(text) and not CJK_RE.search(text), text


def test_no_module_spells_its_own_cjk_range() -> None:
    """Every "is this CJK?" goes through memctx.text (is_cjk, CJK_RE, CJK_CHARS): a module
    with its own range drifts (one missed kana and hangul, another the compatibility
    ideographs). Only keywords.py may spell a range boundary, escaped or literal."""
    bounds = "3040 3041 309f 30a0 30ff 3400 4dbf 4e00 9fa5 9fff ac00 d7a3 d7af f900 faff".split()
    escaped = re.compile(r"\\[uU]0{0,4}(?:" + "|".join(bounds) + r")\b", re.IGNORECASE)
    literal = re.compile(f"[{CJK_CHARS}]-[{CJK_CHARS}]")
    package = Path(memctx.__file__).parent
    keywords = Path(text_module.__file__).resolve()
    offenders = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if path.resolve() != keywords
        and (escaped.search(source := path.read_text(encoding="utf-8")) or literal.search(source))
    ]
    assert offenders == []
    assert escaped.search(keywords.read_text(encoding="utf-8"))  # the check can see a range


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("edit src/payment/webhook.ts now", ["edit", "src/payment/webhook.ts", "now"]),
        ("parseConfigFile, max_history_share!", ["parseConfigFile", "max_history_share"]),
        ("我们用PostgreSQL做数据库", ["我们用", "PostgreSQL", "做数据库"]),
        ("localhost:5432 ops@corp v1.2.3-rc1", ["localhost", "5432", "ops", "corp", "v1.2.3-rc1"]),
        ("café naïve", ["caf", "na", "ve"]),  # letters outside ASCII and CJK separate runs
        ("the, a; of", ["the", "a", "of"]),  # as written: stop words are the caller's business
        ("", []),
    ],
)
def test_word_runs_are_the_runs_tokenize_cuts_text_into(text: str, runs: list[str]) -> None:
    assert word_runs(text) == runs


def test_unique_keeps_first_seen_order() -> None:
    assert tokenize_unique("test the test suite tests", stem=False) == ["test", "suite", "tests"]
    assert tokenize_unique("test the test suite tests") == ["test", "suit"]


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


@settings(max_examples=examples(300))
@given(_MIXED_TEXT)
def test_fast_path_equals_the_general_path(text: str) -> None:
    assert tokenize(text) == tokenize_general(text, cached_word_tokens)
    assert tokenize(text) == tokenize_general(text, stemmed_run_tokens)  # cached or not
    # Stemming only changes plain words, one token for one: the surface forms line up.
    surface = tokenize(text, stem=False)
    stemmed = tokenize(text)
    assert len(stemmed) == len(surface)
    assert all(a == b or porter_stem(b) == a for a, b in zip(stemmed, surface, strict=True))
    assert tokenize(text, stem=False) == tokenize_general(text, run_tokens)


@settings(max_examples=examples(100))
@given(_MIXED_TEXT)
def test_tokens_are_the_tokens_of_the_word_runs_in_turn(text: str) -> None:
    runs = word_runs(text)
    for stem in (True, False):
        per_run = [t for run in runs for t in tokenize(run, stem=stem)]
        assert tokenize(text, stem=stem) == per_run
    assert all(r and (CJK_RE.fullmatch(r[0]) is None) == (CJK_RE.search(r) is None) for r in runs)


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
