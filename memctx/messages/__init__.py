"""Messages as providers shape them: anatomy (OpenAI, Anthropic, Pi/OpenClaw, Gemini), the
markers memctx and compactions put into a conversation, token counting, the tool-pairing
rules and their repair, and the tool units no removal or cut may separate.

May import: :mod:`memctx.errors`, :mod:`memctx.config`.
"""

from __future__ import annotations

from .anatomy import (
    BlockKind,
    BlockRef,
    InfoCache,
    MessageInfo,
    RoleKind,
    blocks_token_text,
    inspect_message,
    iter_blocks,
    leading_system_count,
    message_fingerprint,
    message_role,
    message_text,
    role_kind,
    token_text,
    with_tool_id,
)
from .calibration import CounterError, UsageFit, fit_usage, measure_counter
from .edits import tool_result_text, with_text_block, with_tool_result_text
from .markers import (
    COMPACTED_PREFIX,
    COMPACTION_SUMMARY_PREFIXES,
    RECALLED_CONTEXT_TAG,
    is_compaction_summary,
    is_recalled_block,
    is_turn_start,
    recalled_block_body,
    recalled_block_text,
)
from .pairing import (
    PairingViolation,
    ViolationKind,
    pairing_violations,
    repair_tool_pairing,
    repair_with_sources,
)

# The package's interface to the rest of memctx, not user-facing (so not in __all__); the
# ``as`` form is the explicit re-export the type checker asks for.
from .quoting import CONTINUATION as CONTINUATION
from .quoting import indent_continuation as indent_continuation
from .quoting import normalize_breaks as normalize_breaks
from .quoting import quote_text as quote_text
from .quoting import safe_label as safe_label
from .quoting import unquote_text as unquote_text
from .sdk import SdkMessages, as_message_dict, describe_unreadable
from .tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    TokenCounter,
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_tokens,
)
from .units import ToolUnits as ToolUnits
from .units import tool_spans as tool_spans
from .units import tool_units as tool_units

__all__ = [
    "InfoCache",
    "is_compaction_summary",
    "is_recalled_block",
    "repair_with_sources",
]
