"""memctx.harness.strategies."""
