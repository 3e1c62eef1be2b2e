"""memctx.harness.gen."""
