"""One embedder per kind per worker process, shared by the jobs it runs.

The transformer loads once per process, and each stored text is embedded once per worker (an
in-memory cache by text hash), so the strategies that archive the same messages of a
scenario (memory-context, meerkat, openclaw's notes) do not embed them again. Search queries
are never served from the shared cache (``cache_queries=False``): a query warmed by the
previous strategy would make the next one's hook latency that of a lookup, not of the
embedding an agent pays for. Each job gets its own query cache on top, as memctx's store
keeps one (the calls of one turn ask the same query). Hash needs no cache: hashing is the
embedding.
"""

from __future__ import annotations

from memctx.config import DEFAULT_TRANSFORMER_MODEL, TransformerModelName
from memctx.retrieval import CachedEmbedder, Embedder, make_embedder

__all__ = ["job_embedder"]

_SHARED: dict[tuple[str, str], Embedder] = {}


def job_embedder(kind: str, model: TransformerModelName = DEFAULT_TRANSFORMER_MODEL) -> Embedder:
    """The embedder of one job: ``kind`` is ``"hash"`` or ``"transformer"``, ``model`` the
    transformer's (``transformerModel``)."""
    key = (kind, model if kind == "transformer" else "")
    if key not in _SHARED:
        if kind == "transformer":
            _SHARED[key] = CachedEmbedder(
                make_embedder("transformer", model=model), cache_queries=False
            )
        else:
            _SHARED[key] = make_embedder("hash")
    shared = _SHARED[key]
    # This job's own query cache, warmed by this job only, never by another's run.
    return CachedEmbedder(shared, cache_queries=True) if kind == "transformer" else shared
