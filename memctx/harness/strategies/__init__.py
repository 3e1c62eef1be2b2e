"""Context strategies for the harness, behind one small protocol and a registry: ``full``,
``truncate``, ``memory-context``, ``memory-context-hook`` and ``observation-masking``;
:func:`register_strategy` adds your own.
"""

from __future__ import annotations

from .base import (
    HOOK_STRATEGY,
    STRATEGIES,
    STRATEGY_PARAMS,
    SUMMARY_STRATEGIES,
    BaseStrategy,
    FullStrategy,
    Messages,
    ParamParser,
    Prepared,
    Strategy,
    StrategyFactory,
    StrategySetup,
    TruncateStrategy,
    leading_blocks,
    make_strategy,
    parse_strategy,
    register_strategy,
)
from .memory_context import MemoryContextStrategy
from .observation_masking import (
    DEFAULT_KEEP_LAST,
    ObservationMaskingStrategy,
    masked_placeholder,
)

__all__ = [
    "DEFAULT_KEEP_LAST",
    "HOOK_STRATEGY",
    "STRATEGIES",
    "STRATEGY_PARAMS",
    "SUMMARY_STRATEGIES",
    "BaseStrategy",
    "FullStrategy",
    "MemoryContextStrategy",
    "Messages",
    "ObservationMaskingStrategy",
    "ParamParser",
    "Prepared",
    "Strategy",
    "StrategyFactory",
    "StrategySetup",
    "TruncateStrategy",
    "leading_blocks",
    "make_strategy",
    "masked_placeholder",
    "parse_strategy",
    "register_strategy",
]
