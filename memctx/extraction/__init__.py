"""memctx.extraction."""
