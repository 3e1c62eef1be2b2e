"""memctx.config."""
