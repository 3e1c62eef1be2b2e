"""Configuration: one frozen, strict model tree for every part of memctx, and the files it is
read from (memctx JSON/TOML, OpenClaw's ``openclaw.json``).

May import: :mod:`memctx.errors`.
"""

from __future__ import annotations

from .files import load_config
from .model import (
    DEFAULT_CONFIG,
    DEFAULT_TRANSFORMER_MODEL,
    CompactionConfig,
    ContextPruningConfig,
    HardClearConfig,
    HybridSearchConfig,
    MemoryContextConfig,
    MemoryFlushConfig,
    MemorySearchConfig,
    MemorySearchQueryConfig,
    PlannerConfig,
    SoftTrimConfig,
    TemporalDecayConfig,
    TransformerModelName,
    defaults,
    parse_duration,
)

# The interface to the other packages beyond __all__ (``X as X``: re-exported for mypy).
from .recall_cap import recall_cap_note as recall_cap_note
from .recall_cap import recall_caps as recall_caps
from .reference import CONFIG_DOCS_PATH as CONFIG_DOCS_PATH
from .reference import config_reference as config_reference

__all__ = [
    "CompactionConfig",
    "ContextPruningConfig",
    "MemorySearchConfig",
    "PlannerConfig",
    "parse_duration",
]
