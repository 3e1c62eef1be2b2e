"""memctx.messages."""
