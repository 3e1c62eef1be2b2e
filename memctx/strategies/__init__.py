"""Strategies: every context-management design as something an agent runs.

For strategy authors: the protocol (:class:`Strategy`), a base class with the optional parts
done (:class:`BaseStrategy`), what a call returns (:class:`Prepared`), what a strategy is
built from (:class:`StrategySetup`), and :func:`register_strategy` (or the entry-point group
``memctx.strategies``). For agent builders, :func:`memctx.make_strategy` builds one by name.

The built-ins, one module each:

==========================  =================================================================
``full``                    the whole history, never compacted (the ceiling while it fits)
``truncate``                the oldest messages dropped until the rest fits
``observation-masking``     old tool outputs replaced by a one-line placeholder
``masking-recall``          masking + trim, all of it archived and recalled; rules pinned
``openclaw``                seed 001's compaction + memory flush into memory files + pruning
``meerkat``                 seed 002's turn compactor, discarded turns behind memory_search
``memory-context``          memctx's recall around an agent that compacts (seed 000 + 001)
``memory-context-hook``     memctx's hooks in an agent that compacts by its own rules
``planner``                 seed 004: payload refs, pruning, token-budget planner, sidecar
==========================  =================================================================

May import: every package below it (foundations, mechanisms, policies, runtime).
"""

from __future__ import annotations

from importlib import import_module

from .base import (
    HOOK_STRATEGY,
    USAGE_KEYS,
    BaseStrategy,
    Messages,
    Prepared,
    Step,
    Strategy,
    StrategySetup,
    llm_usage,
)
from .registry import (
    ENTRY_POINT_GROUP,
    CheckedStrategy,
    ParamParser,
    StrategyFactory,
    StrategyInfo,
    build_strategy,
    make_strategy,
    parse_strategy,
    register_strategy,
    resolve_config,
    strategy_info,
    strategy_names,
)

__all__ = [
    "BaseStrategy",
    "Prepared",
    "Step",
    "Strategy",
    "StrategyInfo",
    "StrategySetup",
    "register_strategy",
    "strategy_info",
    "strategy_names",
]


def _lazy(module: str, name: str) -> StrategyFactory:
    """A factory that imports ``.module`` when the first strategy is built: importing memctx
    costs none of the runtime, compaction or LLM modules a strategy may need."""

    def factory(setup: StrategySetup) -> Strategy:
        built: Strategy = getattr(import_module(f"{__name__}.{module}"), name)(setup)
        return built

    factory.__module__ = f"{__name__}.{module}"
    factory.__qualname__ = name
    return factory


def _keep_last(text: str) -> object:
    from .observation_masking import parse_keep_last

    return parse_keep_last(text)


def _pin_tokens(text: str) -> object:
    from .masking_recall import parse_pin_tokens

    return parse_pin_tokens(text)


def _pruning_mode(text: str) -> str:
    if text not in ("off", "cache-ttl"):
        raise ValueError("pruning must be 'off' or 'cache-ttl'")
    return text


# ``openclaw:pruning=off`` is ``contextPruning.mode=off`` for that strategy.
_PRUNING: dict[str, ParamParser] = {"pruning": _pruning_mode}
_PRUNING_IS = {"pruning": "contextPruning.mode"}
register_strategy("full", _lazy("full", "FullStrategy"), searches=False, origin="memctx")
register_strategy(
    "truncate", _lazy("truncate", "TruncateStrategy"), searches=False, origin="memctx"
)
register_strategy(
    "observation-masking",
    _lazy("observation_masking", "ObservationMaskingStrategy"),
    params={"keepLast": _keep_last},
    searches=False,
    origin="memctx",
)
# No summaries: it never compacts; the offline extractor mines what it archives.
register_strategy(
    "masking-recall",
    _lazy("masking_recall", "MaskingRecallStrategy"),
    params={"keepLast": _keep_last, "pinTokens": _pin_tokens},
    searches=True,
    origin="memctx",
)
register_strategy(
    "openclaw",
    _lazy("openclaw", "OpenClawStrategy"),
    params=_PRUNING,
    settings=_PRUNING_IS,
    summaries=True,
    searches=True,
    origin="memctx",
)
register_strategy(
    "meerkat",
    _lazy("meerkat", "MeerkatStrategy"),
    summaries=True,
    searches=True,
    origin="memctx",
)
# memory-context's agent summarises what it compacts; the hook strategy only replays the
# compactions a transcript records (their summaries were written by the recorded agent).
register_strategy(
    "memory-context",
    _lazy("memory_context", "MemoryContextStrategy"),
    summaries=True,
    searches=True,
    origin="memctx",
)
register_strategy(
    HOOK_STRATEGY,
    _lazy("memory_context_hook", "MemoryContextHookStrategy"),
    searches=True,
    origin="memctx",
)
register_strategy(
    "planner",
    _lazy("planner", "PlannerStrategy"),
    params=_PRUNING,
    settings=_PRUNING_IS,
    searches=False,
    origin="memctx",
)
