"""The real transformer embedder for tests, or a skip saying why it cannot load here."""

from __future__ import annotations

import pytest

from memctx.retrieval import EmbeddingUnavailable, TransformerEmbedder


def loaded_transformer() -> TransformerEmbedder:
    """all-MiniLM-L6-v2, loaded (batch 32); skips the test when the model is not installed."""
    emb = TransformerEmbedder(batch_size=32)
    try:
        emb.load()
    except EmbeddingUnavailable as exc:
        pytest.skip(f"the MiniLM model cannot load here: {exc}")
    return emb
