"""memctx.bench."""
