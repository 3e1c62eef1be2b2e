"""Compaction: what replaces old history when a context nears its window.

Today the agent's own rolling-summary compactor (:class:`AgentCompactor`); the staged
compaction of seed 001, the turn-based compactor and loop guard of seed 002, the memory
flush and tool-output pruning arrive here with the compaction issue.

May import: the foundations, the mechanisms and the other policies (:mod:`memctx.trim`,
:mod:`memctx.recall`, :mod:`memctx.extraction`, :mod:`memctx.offline`).
"""

from __future__ import annotations

from .agent import TAIL_SHARE, AgentCompactor, CompactionPlan, compaction_reserve, tail_start

__all__ = ["TAIL_SHARE", "AgentCompactor", "CompactionPlan", "compaction_reserve", "tail_start"]
