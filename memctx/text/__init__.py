"""memctx.text."""
