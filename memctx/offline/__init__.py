"""memctx.offline."""
