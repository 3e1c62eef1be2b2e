"""memctx.bench.locomo."""
