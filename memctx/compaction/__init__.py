"""Compaction: what replaces old history when a context nears its window.

- What every entry point below is set up with (:class:`CompactionSetup`): the summarising
  LLM, the config, the windows, the prompt, the token counter and the anatomy cache, built
  once per conversation; each call takes only what changes per call.
- The compaction core of seed 001 (:func:`compact_history`): token budgets and the adaptive
  chunk ratio (:mod:`.budget`), chunking that never separates a tool call from its result
  (:mod:`.chunking`), the summariser's view of a message (:mod:`.render`), the prompts
  (:mod:`.prompts`), staged summaries with the fallback ladder (:mod:`.summarize`), the
  safeguard sections (:mod:`.safeguard`) and the cut and assembly (:mod:`.history`).
- The agent's own compaction (:class:`AgentCompactor`): the core when the context passes
  ``window - reserve``, behind the :class:`LoopGuard` (:mod:`.guard`), a failure counted
  and nothing changed.
- Seed 002's turn-based compactor (:mod:`.turns`, :class:`TurnCompactor`).
- The pre-compaction memory flush (:mod:`.flush`, :func:`run_flush`).
- Triggers and recovery: overflow errors recognised (:mod:`.overflow`), compaction then
  tool-result truncation then a clear error (:mod:`.recovery`, :mod:`.truncate`), manual,
  safeguard and cache-TTL triggers (:mod:`.triggers`), transcript trim with a backup
  (:mod:`.transcript_trim`).

- Seed 004: the token-budget planner (:mod:`.planner`, :func:`plan_context`), the session
  summary sidecar (:mod:`.sidecar`, :class:`SessionSummary`) and its injection into the
  system context under pressure, and oversized tool results persisted as file refs
  (:mod:`.payload_refs`). Seed 003's tool-output pruning is a trim of the copy sent and
  lives in :mod:`memctx.trim`.

May import: the foundations, the mechanisms and the other policies (:mod:`memctx.trim`,
:mod:`memctx.recall`, :mod:`memctx.extraction`, :mod:`memctx.offline`).
"""

from __future__ import annotations

# The default summariser is memctx/offline, which the LLM client can serve only once the
# offline package has registered it: importing compaction is enough to use the default.
from memctx import offline

from .agent import AgentCompactor, archivable
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
    is_turn_start,
    prune_history_for_context_share,
    split_messages_by_token_share,
    tail_start,
)
from .fit import TRUNCATION_MARKER, fit_summary, min_summary_tokens
from .flush import (
    FLUSH_STATE_FILE,
    FlushDecision,
    FlushReason,
    FlushState,
    FlushTracker,
    flush_threshold,
    should_flush,
)
from .flush_turn import (
    FLUSH_OUTPUT_INSTRUCTIONS,
    FLUSH_TASK,
    FlushOutcome,
    FlushResult,
    flush_request,
    is_silent_reply,
    run_flush,
)
from .guard import (
    DEFAULT_MARGIN,
    MAX_BACKOFF_TURNS,
    MAX_URGENT_STREAK,
    MIN_SPACING,
    GuardDecision,
    LoopGuard,
)
from .history import CompactionResult, HistoryCut, compact_history, plan_cut
from .overflow import (
    OVERFLOW_CLASS_NAMES,
    OVERFLOW_PATTERNS,
    ContextOverflowError,
    is_context_overflow_error,
    is_context_overflow_message,
)
from .payload_refs import (
    DETAILS_HEADER,
    PAYLOAD_NOTICE_RE,
    PayloadRefs,
    output_refs_in,
    payload_notice,
    persist_oversized_tool_results,
)
from .planner import ContextPlan, HistoryBudget, history_budget, plan_context
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
    with_previous_summary,
)
from .recovery import (
    MAX_OVERFLOW_COMPACTION_ATTEMPTS,
    OverflowRecovery,
    describe_recovery_steps,
    overflow_keep_recent_tokens,
    recover_from_overflow,
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
from .setup import CompactionSetup
from .sidecar import (
    SIDECAR_SUFFIX,
    SUMMARY_FORMAT,
    SUMMARY_MARKER,
    SessionSummary,
    SummaryItem,
    inject_summary,
    sidecar_path,
    summary_injection_due,
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
from .transcript_trim import (
    DEFAULT_TRANSCRIPT_MAX_LINES,
    TRANSCRIPT_BACKUP_SUFFIX,
    TranscriptTrim,
    TranscriptTrimError,
    transcript_backup_path,
    trim_transcript_file,
)
from .triggers import (
    COMPACT_COMMAND,
    COMPACTION_TRIGGERS,
    CacheTtlTrigger,
    CompactCommand,
    CompactionTrigger,
    SafeguardTrigger,
    TriggerDecision,
    compact_with_safeguard,
    manual_compact,
    parse_compact_command,
)
from .truncate import (
    HARD_MAX_TOOL_RESULT_CHARS,
    MIN_KEPT_TOOL_RESULT_CHARS,
    TOOL_RESULT_WINDOW_SHARE,
    ToolResultTruncation,
    max_tool_result_chars,
    truncate_oversized_tool_results,
    truncated_text,
)
from .turn_compactor import TurnCompactor
from .turns import (
    SUMMARY_ESTIMATE_SLACK,
    TurnCompactionResult,
    TurnCompactionStatus,
    TurnCut,
    compact_turns,
    plan_turn_cut,
)

__all__ = [
    "AgentCompactor",
    "CompactionError",
    "CompactionSetup",
    "ContextOverflowError",
    "TurnCompactor",
    "compact_history",
    "persist_oversized_tool_results",
    "plan_context",
    "recover_from_overflow",
    "run_flush",
]
