"""Context strategies for the harness, behind one small protocol and a registry: ``full``,
``truncate``, ``memory-context`` and ``memory-context-hook``; :func:`register_strategy` adds
your own.
"""

from __future__ import annotations

from .base import (
    HOOK_STRATEGY,
    STRATEGIES,
    BaseStrategy,
    FullStrategy,
    Messages,
    Prepared,
    Strategy,
    StrategyFactory,
    StrategySetup,
    TruncateStrategy,
    leading_blocks,
    make_strategy,
    register_strategy,
)
from .memory_context import MemoryContextStrategy

__all__ = [
    "HOOK_STRATEGY",
    "STRATEGIES",
    "BaseStrategy",
    "FullStrategy",
    "MemoryContextStrategy",
    "Messages",
    "Prepared",
    "Strategy",
    "StrategyFactory",
    "StrategySetup",
    "TruncateStrategy",
    "leading_blocks",
    "make_strategy",
    "register_strategy",
]
