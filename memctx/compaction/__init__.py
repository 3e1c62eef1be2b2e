"""Compaction: what replaces old history when a context nears its window.

- The compaction core of seed 001 (:func:`compact_history`): token budgets and the adaptive
  chunk ratio (:mod:`.budget`), chunking that never separates a tool call from its result
  (:mod:`.chunking`), the summariser's view of a message (:mod:`.render`), the prompts
  (:mod:`.prompts`), staged summaries with the fallback ladder (:mod:`.summarize`), the
  safeguard sections (:mod:`.safeguard`) and the cut and assembly (:mod:`.history`).
- The agent's own rolling-summary compactor (:class:`AgentCompactor`), which the harness
  runs; it moves onto the core in a later step.

Triggers and recovery, the turn-based compactor and loop guard of seed 002, the memory
flush and tool-output pruning arrive here with the rest of the compaction issue.

May import: the foundations, the mechanisms and the other policies (:mod:`memctx.trim`,
:mod:`memctx.recall`, :mod:`memctx.extraction`, :mod:`memctx.offline`).
"""

from __future__ import annotations

# The default summariser is memctx/offline, which the LLM client can serve only once the
# offline package has registered it: importing compaction is enough to use the default.
from memctx import offline  # noqa: F401

from .agent import AgentCompactor, CompactionPlan, tail_start
from .budget import (
    BASE_CHUNK_RATIO,
    MIN_CHUNK_RATIO,
    OVERSIZED_SHARE,
    SAFETY_MARGIN,
    TAIL_SHARE,
    CompactionBudget,
    CompactionError,
    compaction_reserve,
    compute_adaptive_chunk_ratio,
    is_oversized_for_summary,
    summary_message,
    summary_token_limit,
)
from .chunking import (
    DEFAULT_PARTS,
    PrunedHistory,
    chunk_messages_by_max_tokens,
    prune_history_for_context_share,
    split_messages_by_token_share,
    tool_units,
)
from .fit import TRUNCATION_MARKER, fit_summary, min_summary_tokens
from .history import CompactionResult, HistoryCut, compact_history, plan_cut
from .prompts import (
    HANDOFF_PROMPT,
    MERGE_SUMMARIES_INSTRUCTIONS,
    PREVIOUS_SUMMARY_NOTE,
    PROMPTS,
    STRUCTURED_PROMPT,
    SUMMARIZER_SYSTEM_PROMPT,
    SUMMARY_TASK,
    TURN_PREFIX_INSTRUCTIONS,
    SummaryPrompt,
    summary_request,
)
from .render import TOOL_TEXT_MAX_CHARS, cap_text, labelled, render_message, render_messages
from .safeguard import (
    MAX_TOOL_FAILURE_CHARS,
    MAX_TOOL_FAILURES,
    SPLIT_TURN_HEADER,
    TOOL_FAILURES_HEADER,
    FileOperations,
    ToolFailure,
    collect_file_operations,
    collect_tool_failures,
    compute_file_lists,
    format_file_operations,
    format_split_turn,
    format_tool_failures,
    parse_file_operations,
)
from .summarize import (
    DEFAULT_SUMMARY_FALLBACK,
    MIN_MESSAGES_FOR_SPLIT,
    FallbackLevel,
    StagedSummary,
    Summarizer,
    SummaryUsage,
    fallback_notice,
    worst,
)

__all__ = [
    "BASE_CHUNK_RATIO",
    "DEFAULT_PARTS",
    "DEFAULT_SUMMARY_FALLBACK",
    "HANDOFF_PROMPT",
    "MAX_TOOL_FAILURES",
    "MAX_TOOL_FAILURE_CHARS",
    "MERGE_SUMMARIES_INSTRUCTIONS",
    "MIN_CHUNK_RATIO",
    "MIN_MESSAGES_FOR_SPLIT",
    "OVERSIZED_SHARE",
    "PREVIOUS_SUMMARY_NOTE",
    "PROMPTS",
    "SAFETY_MARGIN",
    "SPLIT_TURN_HEADER",
    "STRUCTURED_PROMPT",
    "SUMMARIZER_SYSTEM_PROMPT",
    "SUMMARY_TASK",
    "TAIL_SHARE",
    "TOOL_FAILURES_HEADER",
    "TOOL_TEXT_MAX_CHARS",
    "TRUNCATION_MARKER",
    "TURN_PREFIX_INSTRUCTIONS",
    "AgentCompactor",
    "CompactionBudget",
    "CompactionError",
    "CompactionPlan",
    "CompactionResult",
    "FallbackLevel",
    "FileOperations",
    "HistoryCut",
    "PrunedHistory",
    "StagedSummary",
    "Summarizer",
    "SummaryPrompt",
    "SummaryUsage",
    "ToolFailure",
    "cap_text",
    "chunk_messages_by_max_tokens",
    "collect_file_operations",
    "collect_tool_failures",
    "compact_history",
    "compaction_reserve",
    "compute_adaptive_chunk_ratio",
    "compute_file_lists",
    "fallback_notice",
    "fit_summary",
    "format_file_operations",
    "format_split_turn",
    "format_tool_failures",
    "is_oversized_for_summary",
    "labelled",
    "min_summary_tokens",
    "parse_file_operations",
    "plan_cut",
    "prune_history_for_context_share",
    "render_message",
    "render_messages",
    "split_messages_by_token_share",
    "summary_message",
    "summary_request",
    "summary_token_limit",
    "tail_start",
    "tool_units",
    "worst",
]
