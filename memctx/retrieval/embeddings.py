"""Text embeddings: the zero-cost hash embedder, the transformer, a cache, a factory.

The seed offers two providers: ``hash`` (the default: no model, no download, well under a
millisecond a text) and ``transformer`` (all-MiniLM-L6-v2, 384 dimensions; memctx also runs
all-mpnet-base-v2, 768, :mod:`memctx.retrieval.models`). When the
transformer cannot load, the system falls back to hash embeddings *of the same dimension*
(so the vector index and ``vectors.bin`` keep their shape) and says so once;
:func:`make_embedder` does that and records why in ``fallback_reason`` for the store's stats.

Every embedder returns float32 ``(n, dim)`` matrices with L2-normalised rows, so cosine
similarity is a dot product; a blank text gives a zero row (similarity 0 to everything).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import math
import os
import re
import stat
import threading
from collections.abc import Sequence
from functools import lru_cache
from itertools import filterfalse
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal, Protocol

import numpy as np

from memctx.config import DEFAULT_TRANSFORMER_MODEL, TransformerModelName
from memctx.errors import MemctxError, StoreError
from memctx.fs import open_beneath
from memctx.text import STOPWORDS, tokenize

from .models import TransformerModel, transformer_model

__all__ = [
    "HASH_EMBEDDER_VERSION",
    "TRANSFORMER_DIM",
    "TRANSFORMER_MODEL",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingUnavailable",
    "HashEmbedder",
    "SelectedEmbedder",
    "TransformerEmbedder",
    "embed_query",
    "make_embedder",
]

logger = logging.getLogger("memctx")

# Bump whenever HashEmbedder's features, hashing or weights change: stored vectors and cache
# entries carry it, so vectors of an older algorithm are detected and re-embedded.
# 2: question words (how, why, whom, whose) are stop words, as in the keyword tokenizer.
HASH_EMBEDDER_VERSION: Final = 2
# The default transformer model's name as stored vectors carry it, and its width.
TRANSFORMER_MODEL: Final = transformer_model(DEFAULT_TRANSFORMER_MODEL).version
TRANSFORMER_DIM: Final = transformer_model(DEFAULT_TRANSFORMER_MODEL).dim


class EmbeddingUnavailable(MemctxError):
    """The transformer model cannot be loaded (package, model files, or runtime missing)."""


class Embedder(Protocol):
    """What the stores need from an embedding provider.

    Attributes:
        name: What actually runs: ``"hash"`` or ``"transformer"``.
        dim: Vector dimension.
        version: The algorithm or model and its parameters; stored with vectors and part of
            cache keys, so a change is detected.
    """

    name: str
    dim: int
    version: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 ``(len(texts), dim)``, unit rows, zero rows for blanks."""
        ...


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """The vector of one search query: ``embedder.embed_query(text)`` when the embedder
    treats queries apart from stored texts (:class:`CachedEmbedder` may not cache them),
    else ``embedder.embed([text])[0]``. Searches call this; stores call ``embed``."""
    own = getattr(embedder, "embed_query", None)
    if callable(own):
        return np.asarray(own(text), dtype=np.float32)
    vector: np.ndarray = embedder.embed([text])[0]
    return vector


def _check_texts(texts: Sequence[str]) -> None:
    # A bare string is a Sequence[str] too; embedding it character by character is never meant.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string")


# The words whose character 3-grams are features: Unicode word runs of the lower-cased text.
# Deliberately wider than the keyword tokenizer's words (which see only ASCII letters, digits
# and CJK): the n-grams are the embedder's fuzzy layer, and with \w they also cover the text
# the tokenizer drops or cuts up ("привет мир" has no keyword token, "café" is "caf"), so
# such text still gets a vector and its inflections still meet ("конфигурация" and
# "конфигурации"). A CJK run is one word here, its 3-grams beside the tokenizer's bigrams.
_NGRAM_WORD_RE = re.compile(r"\w+")
_MASK63: Final = (1 << 63) - 1
# Morphology lives in a word's stem; n-grams of long runs (hashes, base64, minified code)
# would add many features and no meaning.
_MAX_NGRAM_WORD: Final = 32
# Word features (exact terms) and n-gram features (morphology) are normalised separately and
# mixed: there are ~6x more n-grams than words, and unmixed they would drown exact matches.
_WORD_WEIGHT: Final = 0.6
_NGRAM_WEIGHT: Final = 0.4


def _hash64(feature: str) -> int:
    # blake2b, not hash(): Python salts str hashes per process, and stored vectors must
    # mean the same thing in every process and on every machine.
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@lru_cache(maxsize=1 << 16)
def _word_hash(token: str) -> int:
    return _hash64("w\x00" + token)


@lru_cache(maxsize=1 << 16)
def _gram_hash(gram: str) -> int:
    return _hash64("g\x00" + gram)


@lru_cache(maxsize=1 << 16)
def _ngram_hashes(word: str) -> np.ndarray:
    """Hashes of the boundary-marked 3-grams of ``word`` ("<co", "con", ..., "re>")."""
    marked = f"<{word[:_MAX_NGRAM_WORD]}>"
    grams = [marked[i : i + 3] for i in range(len(marked) - 2)]
    out = np.fromiter((_gram_hash(g) for g in grams), dtype=np.uint64, count=len(grams))
    out.flags.writeable = False  # shared through the cache
    return out


def _signed_tf_vector(hashes: np.ndarray, dim: int) -> np.ndarray:
    """Hashing trick: sub-linear tf per feature, bucket by the low bits, sign by bit 63."""
    if hashes.size == 0:
        return np.zeros(dim)
    # np.unique(hashes, return_counts=True), spelled out: a text is embedded in a handful
    # of numpy calls, and np.unique's own overhead was a fifth of an embedding.
    ordered = np.sort(hashes)
    first = np.empty(len(ordered), dtype=np.bool_)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    features = ordered[starts]
    counts = np.diff(starts, append=len(ordered))
    weights = 1.0 + np.log(counts)
    # A random sign per feature makes colliding features cancel on average instead of
    # always adding up, which keeps dot products unbiased. (-w is w * -1.0 exactly.)
    signed = np.where(features >> np.uint64(63), -weights, weights)
    buckets = ((features & np.uint64(_MASK63)) % np.uint64(dim)).astype(np.intp)
    vec = np.bincount(buckets, weights=signed, minlength=dim)
    norm = _norm(vec)
    return vec / norm if norm > 0 else vec


def _norm(vec: np.ndarray) -> float:
    """``np.linalg.norm`` of a 1-D float vector, as it computes it (``sqrt(x.dot(x))``)
    without its argument handling."""
    return math.sqrt(float(vec.dot(vec)))


class HashEmbedder:
    """Deterministic feature-hashing embeddings: no model, no network.

    Features: the unstemmed keyword tokens of :func:`memctx.text.tokenize` (lower-cased words,
    identifier and path sub-tokens, CJK bigrams; stop words dropped) and the 3-grams of each
    Unicode word (any script, stop words dropped) with ``<``/``>`` boundary markers, so
    "configure" and "configuration" share most features. Each feature is hashed with blake2b
    (stable across processes), weighted ``1 + log(tf)`` and added with a hash-chosen sign
    into one of ``dim`` buckets.

    Args:
        dim: Vector dimension; 384 matches the transformer so either can fill the same index.
    """

    name = "hash"

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ValueError(f"dim must be at least 8, got {dim}")
        self.dim = dim
        self.version = f"hash-v{HASH_EMBEDDER_VERSION}-d{dim}"

    def embed_one(self, text: str) -> np.ndarray:
        """One text's float32 unit vector (zeros when it has no features)."""
        tokens = tokenize(text, stem=False)  # the surface form: n-grams carry morphology
        # map/filterfalse over the cached hash functions keep the per-word loop in C.
        words = filterfalse(STOPWORDS.__contains__, _NGRAM_WORD_RE.findall(text.lower()))
        word_hashes = np.fromiter(map(_word_hash, tokens), np.uint64, len(tokens))
        parts = list(map(_ngram_hashes, words))
        gram_hashes = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
        vec = _WORD_WEIGHT * _signed_tf_vector(word_hashes, self.dim)
        vec += _NGRAM_WEIGHT * _signed_tf_vector(gram_hashes, self.dim)
        norm = _norm(vec)
        return (vec / norm if norm > 0 else vec).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 ``(n, dim)`` matrix of unit (or zero) rows."""
        _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            if text and not text.isspace():
                out[i] = self.embed_one(text)
        return out


_model_lock = threading.Lock()
_shared_models: dict[str, Any] = {}


def _load_model(model: TransformerModel) -> Any:
    """Load ``model`` from its installed package, offline. Tests monkeypatch this."""
    # Never reach for the hub: every model ships in a package, and a download attempt would
    # hang or fail slowly on machines without network access.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # A library must not draw progress bars on its caller's terminal ("Loading weights").
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    path = model.locate()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu")


def _shared_model(model: TransformerModel) -> Any:
    # One copy of each model per process (90 MB for MiniLM, 440 MB for MPNet, a second or
    # more to load) whatever the number of embedders; a failed load is not cached, so the
    # next attempt retries.
    with _model_lock:
        if model.name not in _shared_models:
            _shared_models[model.name] = _load_model(model)
        return _shared_models[model.name]


class TransformerEmbedder:
    """Sentence embeddings of an offline sentence-transformers model on the CPU, loaded on
    first use (:mod:`memctx.retrieval.models`).

    A model reads a bounded number of word pieces (all-MiniLM-L6-v2 256, about 1,000
    characters of English; all-mpnet-base-v2 384); the rest of a longer text is ignored, so
    the store's 500-2,000-character segments are embedded by their beginning (BM25 still
    sees all of them).

    Args:
        batch_size: Texts per forward pass.
        model: The ``transformerModel`` name.

    Raises:
        ValueError: ``model`` is not one memctx knows.
    """

    name = "transformer"

    def __init__(
        self, batch_size: int = 32, model: TransformerModelName = DEFAULT_TRANSFORMER_MODEL
    ) -> None:
        self.batch_size = batch_size
        self.model = transformer_model(model)
        self.dim, self.version = self.model.dim, self.model.version
        self._model: Any = None
        self._error: EmbeddingUnavailable | None = None

    def load(self) -> None:
        """Load the model now (otherwise the first :meth:`embed` does)."""
        if self._model is not None:
            return
        if self._error is not None:  # fail fast: a broken install does not heal itself
            raise self._error
        try:
            model = _shared_model(self.model)
            # sentence-transformers 6 renamed the method (the old name warns); support both.
            get_dim = getattr(model, "get_embedding_dimension", None)
            model_dim = get_dim() if get_dim else model.get_sentence_embedding_dimension()
            if model_dim != self.dim:
                raise ValueError(f"the model produces {model_dim}-dim vectors, not {self.dim}")
            # One tiny forward pass: a model that loads but cannot run (broken torch, bad
            # weights) must count as unavailable too, not fail later inside a user's turn.
            model.encode(["warm up"], show_progress_bar=False)
        except Exception as exc:
            self._error = EmbeddingUnavailable(
                f"cannot load {self.version}: {type(exc).__name__}: {exc}"
            )
            raise self._error from exc
        self._model = model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches; blank texts get zero rows without a model call."""
        _check_texts(texts)
        self.load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = [i for i, t in enumerate(texts) if t and not t.isspace()]
        if todo:
            vectors = self._model.encode(
                [texts[i] for i in todo],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out[todo] = np.asarray(vectors, dtype=np.float32)
        return out


_CACHE_MAGIC: Final = b"EMBC"
_CACHE_VERSION: Final = 1
_CACHE_HEADER_SIZE: Final = 12


def _cache_file(path: Path, flags: int) -> BinaryIO:
    """The embedding cache file, opened in its (trusted) folder without following a link in
    its place, and not written in place when it has a second hard link (either could make a
    write land outside the store); a FIFO is refused, never waited on."""
    fd = open_beneath(path.parent, path.name, flags, 0o600, create_dirs=bool(flags & os.O_CREAT))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(
            fd,
            "r+b"
            if flags & os.O_RDWR
            else "ab"
            if flags & os.O_APPEND
            else "wb"
            if flags & os.O_WRONLY
            else "rb",
        )
    except BaseException:
        os.close(fd)
        raise


class CachedEmbedder:
    """Embeds each distinct text at most once per model; optionally persisted to disk.

    Keys are ``sha256(name + version + "\\0" + text)``, so one file can hold vectors of several
    models of the same dimension without confusing them. The file is append-only: a 12-byte
    header (``b"EMBC"``, u32 format version, u32 dim, little-endian), then entries of a 32-byte
    digest and ``dim`` float32. Each batch of misses is one ``write`` (plus flush) in append
    mode, so a crash can tear only the last entry; a torn tail is ignored and cut off on the
    next open so later entries stay aligned. A file with another dimension or format version
    is started afresh; a file without the magic is refused (it is not ours to overwrite).
    One process may write a cache file at a time (the store's directory lock ensures it).

    Args:
        inner: The embedder that computes misses.
        cache_path: Where to persist, or ``None`` for memory only.
        cache_queries: Also serve search queries (:func:`embed_query`) from the cache.
            ``False`` embeds every query afresh: a benchmark that shares one cache across
            strategies must not time a warmed lookup as the query embedding an agent pays.

    Attributes:
        hits: Texts served from the cache.
        misses: Texts embedded by ``inner``.
    """

    def __init__(
        self, inner: Embedder, cache_path: Path | None = None, *, cache_queries: bool = True
    ) -> None:
        self.inner, self.cache_path, self.cache_queries = inner, cache_path, cache_queries
        self.name, self.dim, self.version = inner.name, inner.dim, inner.version
        # Why a requested transformer is not running, as the wrapped embedder says.
        self.fallback_reason: str | None = getattr(inner, "fallback_reason", None)
        self.hits = self.misses = 0
        self._vectors: dict[bytes, np.ndarray] = {}
        self._lock = threading.Lock()
        self._prefix = (inner.name + inner.version + "\x00").encode("utf-8")
        self._entry_dtype = np.dtype([("key", "V32"), ("vec", "<f4", (self.dim,))])
        if cache_path is not None:
            try:
                self._open(cache_path)
            except OSError as exc:  # an unreadable cache costs speed, never embeddings
                logger.warning("embedding cache %s unusable, memory only: %s", cache_path, exc)
                self.cache_path = None

    def __len__(self) -> int:
        return len(self._vectors)

    def _header(self) -> bytes:
        return _CACHE_MAGIC + np.array([_CACHE_VERSION, self.dim], dtype="<u4").tobytes()

    def _open(self, path: Path) -> None:
        try:
            with _cache_file(path, os.O_RDONLY) as handle:
                data = handle.read()
        except FileNotFoundError:
            data = b""
        header = data[:_CACHE_HEADER_SIZE]
        if data and not data.startswith(_CACHE_MAGIC):
            raise StoreError(f"{path}: not an embedding cache (no {_CACHE_MAGIC!r} magic)")
        if len(header) < _CACHE_HEADER_SIZE or header != self._header():
            if data:
                logger.warning(
                    "embedding cache %s has another format or dim; starting afresh", path
                )
            with _cache_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as handle:
                handle.write(self._header())
            return
        whole = (len(data) - _CACHE_HEADER_SIZE) // self._entry_dtype.itemsize
        end = _CACHE_HEADER_SIZE + whole * self._entry_dtype.itemsize
        if end != len(data):
            # A torn tail from a crash mid-write: drop it so the next append starts aligned.
            with _cache_file(path, os.O_RDWR) as handle:
                handle.truncate(end)
        entries = np.frombuffer(data, self._entry_dtype, count=whole, offset=_CACHE_HEADER_SIZE)
        matrix = np.ascontiguousarray(entries["vec"], dtype=np.float32)
        for key, row in zip(entries["key"].tolist(), matrix, strict=True):
            self._vectors[bytes(key)] = row

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(self._prefix + text.encode("utf-8", "surrogatepass")).digest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``, sending only texts never seen before to ``inner`` (one call)."""
        _check_texts(texts)
        keys = [self._key(t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:  # held across inner.embed so that no text is embedded twice
            missing: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in self._vectors:
                    missing.setdefault(key, text)
            if missing:
                vectors = np.asarray(self.inner.embed(list(missing.values())), dtype=np.float32)
                fresh = dict(zip(missing, vectors.copy(), strict=True))
                self._persist(fresh)
                self._vectors.update(fresh)
            self.misses += len(missing)
            self.hits += len(texts) - len(missing)
            for i, key in enumerate(keys):
                out[i] = self._vectors[key]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """One search query's vector: cached like any text unless ``cache_queries`` is off."""
        if self.cache_queries:
            vector: np.ndarray = self.embed([text])[0]
            return vector
        return embed_query(self.inner, text)

    def _persist(self, fresh: dict[bytes, np.ndarray]) -> None:
        if self.cache_path is None:
            return
        records = np.empty(len(fresh), dtype=self._entry_dtype)
        records["key"] = list(fresh)
        records["vec"] = np.stack(list(fresh.values()))
        try:
            with _cache_file(self.cache_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT) as handle:
                handle.write(records.tobytes())
                handle.flush()
        except OSError as exc:
            # The cache only saves work: a full disk must not break embedding. Keep going in
            # memory and stop writing, so the file is not left with a gap.
            logger.warning("embedding cache %s not writable, memory only: %s", self.cache_path, exc)
            self.cache_path = None

    def stats(self) -> dict[str, int]:
        """``{"hits", "misses", "entries"}`` for the store's stats."""
        return {"hits": self.hits, "misses": self.misses, "entries": len(self._vectors)}


class SelectedEmbedder:
    """The embedder :func:`make_embedder` chose, with how it came to be.

    Attributes:
        requested: The kind asked for.
        name: What actually runs (``"hash"`` after a fallback).
        fallback_reason: Why the transformer is not running, or ``None``.
        inner: The wrapped embedder (a :class:`CachedEmbedder` when a cache path was given).
    """

    def __init__(self, inner: Embedder, requested: str, fallback_reason: str | None) -> None:
        self.inner, self.requested, self.fallback_reason = inner, requested, fallback_reason
        self.name, self.dim, self.version = inner.name, inner.dim, inner.version

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed with the chosen embedder."""
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """One search query's vector, as the chosen embedder treats queries."""
        return embed_query(self.inner, text)


_fallback_lock = threading.Lock()
_fallback_warned = False  # the seed's "say so once": one warning per process


def _warn_fallback_once(reason: str) -> None:
    global _fallback_warned
    with _fallback_lock:
        if _fallback_warned:
            return
        _fallback_warned = True
    logger.warning("transformer embeddings unavailable, using hash embeddings: %s", reason)


def make_embedder(
    kind: Literal["hash", "transformer"],
    *,
    cache_path: Path | None = None,
    dim: int | None = None,
    model: TransformerModelName = DEFAULT_TRANSFORMER_MODEL,
) -> SelectedEmbedder:
    """Build the configured embedder, falling back from transformer to hash.

    Args:
        kind: ``"hash"`` or ``"transformer"`` (the config's ``embeddingModel``).
        cache_path: Persist embeddings here (see :class:`CachedEmbedder`); ``None``: no
            cache (wrap the result in ``CachedEmbedder(embedder)`` for one in memory).
        dim: Vector dimension; ``None``: the model's (hash: 384). A transformer embeds in
            its model's dimension only.
        model: The transformer's model (the config's ``transformerModel``).

    Returns:
        A :class:`SelectedEmbedder`; its ``fallback_reason`` says why a requested
        transformer is not running (the warning is logged once per process). A fallback
        hashes in the model's dimension, so the store keeps its shape.

    Raises:
        ValueError: Unknown kind or model, or a transformer with another ``dim``.
    """
    if kind not in ("hash", "transformer"):
        raise ValueError(f"unknown embedding kind {kind!r}; use 'hash' or 'transformer'")
    inner: Embedder
    reason: str | None = None
    if kind == "hash":
        inner = HashEmbedder(TRANSFORMER_DIM if dim is None else dim)
    else:
        transformer = TransformerEmbedder(model=model)
        if dim is not None and dim != transformer.dim:
            raise ValueError(f"{model} embeds in {transformer.dim} dimensions, not {dim}")
        try:
            transformer.load()  # loads and warms up now, not in the first user turn
            inner = transformer
        except EmbeddingUnavailable as exc:
            reason = str(exc)
            _warn_fallback_once(reason)
            inner = HashEmbedder(transformer.dim)
    if cache_path is not None:
        inner = CachedEmbedder(inner, cache_path)
    return SelectedEmbedder(inner, kind, reason)
