"""Configuration: one frozen, strict model tree for every part of memctx, and the files it is
read from (memctx JSON/TOML, OpenClaw's ``openclaw.json``).

May import: :mod:`memctx.errors`.
"""

from __future__ import annotations

from .files import load_config
from .model import (
    DEFAULT_CONFIG,
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
    defaults,
    parse_duration,
)
from .reference import CONFIG_DOCS_PATH, config_reference

__all__ = [
    "DEFAULT_CONFIG",
    "CompactionConfig",
    "ContextPruningConfig",
    "HardClearConfig",
    "HybridSearchConfig",
    "MemoryContextConfig",
    "MemoryFlushConfig",
    "MemorySearchConfig",
    "MemorySearchQueryConfig",
    "PlannerConfig",
    "SoftTrimConfig",
    "TemporalDecayConfig",
    "defaults",
    "load_config",
    "parse_duration",
]
