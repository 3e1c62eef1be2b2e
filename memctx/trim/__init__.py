"""memctx.trim."""
