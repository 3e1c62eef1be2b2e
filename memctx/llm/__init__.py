"""memctx.llm."""
