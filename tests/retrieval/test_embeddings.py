"""Embedders: hash determinism and quality, the real transformer, the cache, the fallback."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from helpers.embedders import loaded_transformer
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.errors import StoreError
from memctx.retrieval import embeddings as _embeddings
from memctx.retrieval.embeddings import (
    TRANSFORMER_DIM,
    CachedEmbedder,
    Embedder,
    EmbeddingUnavailable,
    HashEmbedder,
    TransformerEmbedder,
    embed_query,
    make_embedder,
)
from memctx.text import tokenize
from tests.strategies import examples

TEXTS = [
    "configure the database connection",
    "database configuration",
    "the cat sat",
    "parseConfigFile failed in src/payment/webhook.ts",
    "数据库连接配置",
]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# ---------------------------------------------------------------------------- hash embedder


def test_hash_is_deterministic_across_processes() -> None:
    here = HashEmbedder().embed(TEXTS).tobytes()
    code = (
        "import sys; from memctx.retrieval.embeddings import HashEmbedder; "
        f"sys.stdout.write(HashEmbedder().embed({TEXTS!r}).tobytes().hex())"
    )
    # Another hash seed in the child: salted str hashes (hash()) would change the vectors.
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=root
    )
    assert bytes.fromhex(out.stdout) == here


def test_hash_rows_are_float32_unit_vectors_and_blank_is_zero() -> None:
    emb = HashEmbedder()
    vecs = emb.embed([*TEXTS, "", "   \n\t"])
    assert vecs.dtype == np.float32 and vecs.shape == (len(TEXTS) + 2, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs[: len(TEXTS)], axis=1), 1.0, rtol=1e-5)
    assert not vecs[-2:].any()
    assert emb.embed([]).shape == (0, 384)
    assert HashEmbedder(dim=64).embed(["x y z"]).shape == (1, 64)


def test_hash_similar_texts_are_closer_than_unrelated_ones() -> None:
    a, b, c = HashEmbedder().embed(TEXTS[:3])
    assert _cos(a, b) > _cos(a, c) + 0.2
    assert _cos(a, b) > 0.3


@pytest.mark.parametrize(
    ("query", "near", "far"),
    [
        ("configure", "configuration", "bread"),
        ("history share", "maxHistoryShare", "token budget"),
        ("payment webhook", "src/payment/webhook.ts", "docs/readme.md"),
        ("连接配置", "数据库连接配置", "天气很好"),
        # Kana, hangul and compatibility ideographs are CJK too (memctx.text's one range).
        ("データベース", "データベースの設定", "天気"),
        ("데이터베이스", "데이터베이스 설정", "날씨"),
        ("豈更", "豈更車賈", "滑串"),
        # Scripts the keyword tokenizer drops still meet through their n-grams.
        ("конфигурация", "конфигурации", "хлеб"),
    ],
)
def test_hash_morphology_identifiers_and_cjk(query: str, near: str, far: str) -> None:
    q, n, f = HashEmbedder().embed([query, near, far])
    assert _cos(q, n) > _cos(q, f) + 0.15


def _reference_hash_vector(text: str, dim: int) -> np.ndarray:
    """HashEmbedder.embed_one written from its definition (the class docs), with numpy's
    own np.unique and np.linalg.norm: a faster implementation must give the same bits, or
    vectors stored by an older one would no longer mean the same (the version says so)."""
    import hashlib
    import re

    from memctx.text import STOPWORDS

    def hashed(feature: str) -> int:
        return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")

    def signed_tf(hashes: list[int]) -> np.ndarray:
        if not hashes:
            return np.zeros(dim)
        features, counts = np.unique(np.array(hashes, dtype=np.uint64), return_counts=True)
        signs = np.where(features >> np.uint64(63), -1.0, 1.0)
        buckets = ((features & np.uint64((1 << 63) - 1)) % np.uint64(dim)).astype(np.intp)
        vec = np.bincount(buckets, weights=(1.0 + np.log(counts)) * signs, minlength=dim)
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    words = [hashed("w\x00" + t) for t in tokenize(text, stem=False)]
    grams = []
    for word in re.findall(r"\w+", text.lower()):
        if word not in STOPWORDS:
            marked = f"<{word[:32]}>"
            grams += [hashed("g\x00" + marked[i : i + 3]) for i in range(len(marked) - 2)]
    vec = 0.6 * signed_tf(words)
    vec += 0.4 * signed_tf(grams)
    norm = float(np.linalg.norm(vec))
    return (vec / norm if norm > 0 else vec).astype(np.float32)


_WORDY = st.lists(st.sampled_from([*" ".join(TEXTS).split(), "数据库", "run_tests"]), max_size=80)


@settings(max_examples=examples(100))
@given(
    st.text(max_size=300) | st.sampled_from(TEXTS) | _WORDY.map(" ".join),  # words repeat
    st.sampled_from([384, 8, 100]),
)
def test_hash_vectors_are_bit_for_bit_those_of_the_definition(text: str, dim: int) -> None:
    if text.strip():
        got = HashEmbedder(dim).embed_one(text)
        assert got.tobytes() == _reference_hash_vector(text, dim).tobytes()


def test_hash_n_grams_cover_words_the_keyword_tokenizer_drops() -> None:
    # The n-gram words are Unicode words, on purpose wider than the keyword tokens: text
    # with no keyword token at all still gets a vector.
    assert tokenize("привет мир Ωμέγα") == []
    vecs = HashEmbedder().embed(["привет мир Ωμέγα", "ひらがな", "한국어", "豈更"])
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)


def test_hash_version() -> None:
    # Its speed (0.5 ms per 900 characters) is a goal of `make bench`, not a test.
    emb = HashEmbedder()
    assert emb.name == "hash" and emb.version == f"hash-v{_embeddings.HASH_EMBEDDER_VERSION}-d384"


def test_embed_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        HashEmbedder().embed("configure")


# ------------------------------------------------------------------------------ transformer


@pytest.fixture(scope="module")
def transformer() -> TransformerEmbedder:
    return loaded_transformer()


def test_transformer_embeds_paraphrases_closer(transformer: TransformerEmbedder) -> None:
    vecs = transformer.embed(
        [
            "The build fails because the database password is wrong.",
            "Compilation breaks since the DB credentials are incorrect.",
            "We had pasta for lunch on the terrace.",
            "",
        ]
    )
    assert vecs.shape == (4, TRANSFORMER_DIM) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, rtol=1e-5)
    assert not vecs[3].any()
    assert _cos(vecs[0], vecs[1]) > _cos(vecs[0], vecs[2]) + 0.2


def test_make_embedder_uses_the_transformer_when_it_loads(transformer: TransformerEmbedder) -> None:
    emb = make_embedder("transformer")
    assert emb.name == "transformer" and emb.requested == "transformer"
    assert emb.fallback_reason is None and emb.dim == TRANSFORMER_DIM


# --------------------------------------------------------------------------------- fallback


def _broken_loader(model: object) -> object:
    raise OSError("model files missing")


@pytest.fixture
def broken_transformer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_embeddings, "_load_model", _broken_loader)
    monkeypatch.setattr(_embeddings, "_shared_models", {})  # forget a model loaded earlier
    monkeypatch.setattr(_embeddings, "_fallback_warned", False)


@pytest.mark.usefixtures("broken_transformer")
def test_fallback_to_hash_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="memctx")
    first = make_embedder("transformer")
    second = make_embedder("transformer")
    assert first.name == second.name == "hash" and first.requested == "transformer"
    assert first.fallback_reason is not None and "model files missing" in first.fallback_reason
    assert first.dim == TRANSFORMER_DIM == HashEmbedder().dim
    warnings = [r for r in caplog.records if r.name == "memctx" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "using hash" in warnings[0].getMessage()
    np.testing.assert_array_equal(first.embed(TEXTS), HashEmbedder().embed(TEXTS))


@pytest.mark.usefixtures("broken_transformer")
def test_transformer_raises_unavailable_and_remembers() -> None:
    emb = TransformerEmbedder()
    for _ in range(2):
        with pytest.raises(EmbeddingUnavailable, match="OSError: model files missing"):
            emb.embed(["x"])


def test_make_embedder_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 8, got 0"):
        make_embedder("hash", dim=0)  # a bad width is refused, not read as "the default"
    plain = make_embedder("hash", dim=128)
    assert plain.name == "hash" and plain.fallback_reason is None and plain.dim == 128
    cached = make_embedder("hash", cache_path=tmp_path / "emb.cache")
    assert isinstance(cached.inner, CachedEmbedder)
    with pytest.raises(ValueError, match="384"):
        make_embedder("transformer", dim=256)
    with pytest.raises(ValueError, match="unknown"):
        make_embedder("word2vec")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ cache


class CountingEmbedder:
    """A fake inner embedder that records every call."""

    name = "fake"
    version = "1"

    def __init__(self, dim: int = 4) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return HashEmbedder(dim=max(self.dim, 8)).embed(texts)[:, : self.dim]


def test_cache_sends_only_misses_once() -> None:
    inner = CountingEmbedder()
    cache: Embedder = CachedEmbedder(inner)
    first = cache.embed(["a b", "c d", "a b"])
    assert inner.calls == [["a b", "c d"]]  # duplicates in one batch are embedded once
    second = cache.embed(["c d", "a b"])
    assert inner.calls == [["a b", "c d"]]
    np.testing.assert_array_equal(second, first[[1, 0]])
    cache.embed(["a b", "e f", "g h"])
    assert inner.calls[-1] == ["e f", "g h"]
    assert isinstance(cache, CachedEmbedder)
    # 8 texts asked for, 4 distinct ones embedded; the in-batch repeat counts as a hit.
    assert (cache.hits, cache.misses) == (4, 4)
    assert cache.stats() == {"hits": 4, "misses": 4, "entries": 4}
    second[:] = 0  # callers get copies, never the cached rows
    assert cache.embed(["a b"]).any()


def test_cache_serves_queries_only_when_asked_to() -> None:
    stored = CountingEmbedder()
    shared = CachedEmbedder(stored, cache_queries=False)
    shared.embed(["the deploy failed", "rollback done"])
    # A stored text asked again as a query is embedded afresh: a warmed lookup is never
    # timed as the query embedding an agent pays for.
    vector = embed_query(shared, "the deploy failed")
    vector_again = embed_query(make_embedder("hash", dim=8), "x")  # plain embedders too
    assert stored.calls == [["the deploy failed", "rollback done"], ["the deploy failed"]]
    np.testing.assert_array_equal(vector, shared.embed(["the deploy failed"])[0])
    assert shared.misses == 2 and vector_again.shape == (8,)
    default = CachedEmbedder(CountingEmbedder())
    default.embed(["a b"])
    embed_query(default, "a b")
    embed_query(default, "a b")
    assert default.inner.calls == [["a b"]]  # type: ignore[attr-defined]
    assert (default.hits, default.misses) == (2, 1)


def test_cache_keys_depend_on_model_name_and_version() -> None:
    a, b = CountingEmbedder(), CountingEmbedder()
    b.version = "2"
    assert CachedEmbedder(a)._key("x") != CachedEmbedder(b)._key("x")


def test_persistent_cache_survives_reopen_and_ignores_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "emb.cache"
    inner = CountingEmbedder()
    first = CachedEmbedder(inner, path).embed(["one", "two", "three"])
    raw = path.read_bytes()
    assert raw[:12] == b"EMBC" + (1).to_bytes(4, "little") + (4).to_bytes(4, "little")
    assert len(raw) == 12 + 3 * (32 + 4 * 4)
    with path.open("ab") as handle:  # a crash in the middle of the next entry
        handle.write(b"\x01" * 20)

    reopened_inner = CountingEmbedder()
    reopened = CachedEmbedder(reopened_inner, path)
    assert len(reopened) == 3
    np.testing.assert_array_equal(reopened.embed(["three", "one"]), first[[2, 0]])
    assert reopened_inner.calls == []
    reopened.embed(["four"])  # appended after the cut-off tail, so it stays aligned

    third_inner = CountingEmbedder()
    third = CachedEmbedder(third_inner, path)
    third.embed(["one", "two", "three", "four"])
    assert third_inner.calls == [] and len(third) == 4


def test_persistent_cache_other_dim_restarts_and_foreign_file_refused(tmp_path: Path) -> None:
    path = tmp_path / "emb.cache"
    CachedEmbedder(CountingEmbedder(dim=4), path).embed(["one"])
    wider = CountingEmbedder(dim=6)
    cache = CachedEmbedder(wider, path)
    assert len(cache) == 0
    cache.embed(["one"])
    assert wider.calls == [["one"]]
    foreign = tmp_path / "vectors.bin"
    foreign.write_bytes(b"VMEM" + bytes(12))
    with pytest.raises(StoreError, match="not an embedding cache"):
        CachedEmbedder(CountingEmbedder(), foreign)
    assert foreign.read_bytes() == b"VMEM" + bytes(12)
