"""memctx.store.raw."""
