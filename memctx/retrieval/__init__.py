"""memctx.retrieval."""
