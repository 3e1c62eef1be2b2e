"""memctx.harness.report."""
