"""The real transformer embedder for tests, or a skip saying why it cannot load here."""

from __future__ import annotations

import pytest

from memctx.config import TransformerModelName
from memctx.retrieval import EmbeddingUnavailable, TransformerEmbedder


def loaded_transformer(model: TransformerModelName = "all-MiniLM-L6-v2") -> TransformerEmbedder:
    """``model`` (all-MiniLM-L6-v2 unless said), loaded (batch 32); skips the test when the
    model is not installed."""
    emb = TransformerEmbedder(batch_size=32, model=model)
    try:
        emb.load()
    except EmbeddingUnavailable as exc:
        pytest.skip(f"the {model} model cannot load here: {exc}")
    return emb
