"""memctx.runtime."""
