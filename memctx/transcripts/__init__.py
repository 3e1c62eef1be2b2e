"""memctx.transcripts."""
