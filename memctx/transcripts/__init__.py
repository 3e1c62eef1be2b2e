"""Real agent transcripts as provider-format message lists: Claude Code JSONL, SWE-agent,
OpenHands, nebius, plain OpenAI/Anthropic JSON(L).

May import: the foundations below it (:mod:`memctx.errors`, :mod:`memctx.config`,
:mod:`memctx.messages`, :mod:`memctx.text`).
"""

from __future__ import annotations

from .load import FORMATS, Transcript, Usage, load_transcript, load_transcripts

__all__ = ["FORMATS", "Transcript", "Usage", "load_transcript", "load_transcripts"]
