"""``memctx/offline``: memctx's own deterministic model, served through litellm as a custom
provider: rule-based fact extraction, compaction summaries as state snapshots read from the
transcript (:mod:`memctx.offline.snapshot`), extractive replies and memory-flush notes, no
network. Importing this package registers it with :mod:`memctx.llm`; litellm and the handler
(:mod:`memctx.offline.provider`) load on the first call to the model, not on import.

May import: the foundations, the mechanisms, :mod:`memctx.trim`, :mod:`memctx.recall`,
:mod:`memctx.extraction`.
"""

from __future__ import annotations

from memctx.llm import register_local_provider

from .extract import extract_facts
from .flush import FLUSH_TASK, NO_REPLY, flush_notes, offline_flush_response
from .model import (
    DEFAULT_REPLY_TOKENS,
    DEFAULT_SUMMARY_TOKENS,
    OFFLINE_PROVIDER,
    offline_reply,
    register_offline_model,
)
from .snapshot import state_snapshot
from .summary import SECTION_TITLES, summarize_text

__all__ = [
    "extract_facts",
    "summarize_text",
]

# The LLM client sits below this package and cannot import it: tell it how to serve
# ``memctx/offline`` requests. ``memctx.runtime`` imports this package, so ``import memctx``
# is enough for every caller; the installer imports litellm only when it first runs.
register_local_provider(OFFLINE_PROVIDER, register_offline_model)
