"""memctx.store."""
