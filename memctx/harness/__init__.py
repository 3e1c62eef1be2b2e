"""memctx.harness."""
