"""Bulk term counting (:mod:`memctx.store.raw.term_counter`): exactly ``Counter(tokenize(text))``
per text, whatever the text, across batches that share the counter's memory."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.retrieval.bm25 import BM25Index, TermCounts
from memctx.store.raw import term_counter as counts_module
from memctx.store.raw.term_counter import SEPARATORS, TermCounter
from memctx.text.keywords import tokenize
from tests.strategies import examples


def _per_text(counts: TermCounts) -> list[tuple[int, dict[str, int]]]:
    """(length, {term: tf}) of each text of ``counts``."""
    out, pos = [], 0
    for length, size in zip(counts.lengths.tolist(), counts.sizes.tolist(), strict=True):
        terms = counts.term[pos : pos + size].tolist()
        tfs = counts.tf[pos : pos + size].tolist()
        assert terms == sorted(set(terms))  # each text's terms: distinct, ascending
        out.append((length, {counts.terms[t]: f for t, f in zip(terms, tfs, strict=True)}))
        pos += size
    assert pos == len(counts.term)
    return out


def _expected(text: str) -> tuple[int, dict[str, int]]:
    tokens = tokenize(text)
    return len(tokens), dict(Counter(tokens))


def _check(counter: TermCounter, texts: list[str]) -> None:
    assert _per_text(counter.counts(texts)) == [_expected(t) for t in texts]


def test_every_separator_only_separates() -> None:
    # What makes counting by chunks exact: these characters never occur inside a token.
    for byte in SEPARATORS:
        sep = chr(byte)
        for left, right in (("ab", "cd"), ("x.y", "z-w"), ("Foo", "barBaz"), ("1", "2")):
            assert tokenize(f"{left}{sep}{right}") == tokenize(f"{left} {right}"), repr(sep)
    assert not set(b"abcXYZ019_./-") & set(SEPARATORS)


_TRICKY = [
    "",
    "   \n\t ",
    "the a an of",  # stop words only: no tokens
    "parseConfigFile src/payment/webhook.ts max_history_share v1.2.3 #12 localhost:8080",
    "(see `src/app.py`), [foo/bar.ts]; 'quoted/path.md'. end... --flag=value a-b-c",
    "数据库 迁移失败，请查看 src/db/migrate.py 中的 IntegrityError",
    "混合text数据库mixed 端口8080",
    "café\u00a0naïve\u3000resume\u2028next\u2003word",  # Unicode spaces inside a chunk
    "emoji 😀 here, ＡＰＩ full-width, Ünïcödé getÜserName",
    "x" * 5000,
    "self.fooBar.baz(x) -> y; HTTPServer XMLHttpRequest __init__ _private",
    "a\x00b\x7fc\x1bd",  # control characters
    "qmemctxchunkboundaryq is the counter's own mark word, here as text",
    "QMEMCTXCHUNKBOUNDARYQ and qmemctxchunkboundaryq.x",
]


def test_tricky_texts_across_batches() -> None:
    counter = TermCounter()
    _check(counter, _TRICKY)
    _check(counter, list(reversed(_TRICKY)))  # every chunk known now
    _check(counter, [])
    _check(counter, ["brand new words here", *_TRICKY[3:6]])


def test_the_mark_word_falls_back_to_one_chunk_at_a_time() -> None:
    counter = TermCounter()
    _check(counter, ["plain words", "qmemctxchunkboundaryq", "more qmemctxchunkboundaryq words"])
    _check(counter, ["qmemctxchunkboundaryq again", "and new ones"])


def test_sub_batches_within_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counts_module, "_SUB_BATCH", 3)
    rng = random.Random(7)
    words = ["alpha", "beta", "gammaDelta", "x_y", "a/b.c", "42", "the", "数据"]
    texts = [" ".join(rng.choices(words, k=rng.randint(0, 9))) for _ in range(40)]
    counter = TermCounter()
    _check(counter, texts[:17])
    _check(counter, texts[17:])


_ALPHABET = "aZ09_./-:#@ `'\"()[]{},;!?\n\t\u00a0\u3000数据库é😀ＡΩ\\"


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.text(alphabet=_ALPHABET, max_size=60), max_size=12), st.integers(1, 5))
def test_equals_counting_tokenize(texts: list[str], split: int) -> None:
    counter = TermCounter()
    cut = len(texts) // split
    _check(counter, texts[:cut])
    _check(counter, texts[cut:])
    _check(counter, texts)


def test_indexes_like_token_lists() -> None:
    rng = random.Random(3)
    vocab = "cache error retry timeoutRate src/app.py v2.0 数据库 端口 the of 42".split()
    texts = [" ".join(rng.choices(vocab, k=rng.randint(0, 12))) for _ in range(60)]
    by_tokens, by_counts = BM25Index(), BM25Index()
    by_tokens.add_many((k, tokenize(t)) for k, t in enumerate(texts))
    counter = TermCounter()
    by_counts.add_counts(list(range(30)), counter.counts(texts[:30]))
    by_counts.add_counts(list(range(30, 60)), counter.counts(texts[30:]))
    for query in ("cache error", "数据库 端口", "src/app.py", "v2.0 retry", "nothing"):
        assert by_counts.scores(tokenize(query)) == by_tokens.scores(tokenize(query))
