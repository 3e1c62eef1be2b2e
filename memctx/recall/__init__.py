"""memctx.recall."""
