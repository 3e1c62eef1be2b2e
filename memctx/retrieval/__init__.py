"""Retrieval mechanisms with no storage of their own: BM25, embeddings (hash, transformer,
cached), exact vector top-k, and the hybrid fusion with episode smoothing and decay.

May import: the foundations (:mod:`memctx.errors`, :mod:`memctx.config`, :mod:`memctx.messages`,
:mod:`memctx.text`, :mod:`memctx.transcripts`).
"""

from __future__ import annotations

from .bm25 import BM25Index, QueryScores, TermCounts, lucene_idf, term_score
from .bm25_parts import ranges
from .coverage import QueryTerms, line_coverage, line_weights, query_weights, rerank_by_coverage
from .embeddings import (
    HASH_EMBEDDER_VERSION,
    TRANSFORMER_DIM,
    TRANSFORMER_MODEL,
    CachedEmbedder,
    Embedder,
    EmbeddingUnavailable,
    HashEmbedder,
    SelectedEmbedder,
    TransformerEmbedder,
    embed_query,
    make_embedder,
)
from .hybrid import (
    DEFAULT_PARAMS,
    SEED_PRESET,
    EpisodeIndex,
    ScoredKey,
    SearchParams,
    hybrid_search,
)
from .keys import DenseKeys, in_sorted, key_array, union_keys, unique_keys
from .vector_index import VectorIndex, VectorScores

__all__ = [
    "BM25Index",
    "Embedder",
    "SearchParams",
    "hybrid_search",
    "make_embedder",
]
