"""Context strategies for the harness, behind one small protocol and a registry: ``full``,
``truncate`` and ``memory-context``; :func:`register_strategy` adds your own.
"""

from __future__ import annotations

from .base import (
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
