"""memctx: memory-enhanced compaction for LLM coding agents.

The public names below are the contract outside code relies on (see docs/ARCHITECTURE.md).
Everything else lives in private modules and may change.
"""

from memctx.config import MemoryContextConfig, load_config
from memctx.errors import ConfigError, MemctxError, StoreError, StrategyError, TranscriptError
from memctx.messages import (
    BlockKind,
    MessageInfo,
    PairingViolation,
    RoleKind,
    TokenCounter,
    estimate_message_tokens,
    estimate_tokens,
    inspect_message,
    message_text,
    pairing_violations,
    repair_tool_pairing,
)
from memctx.runtime import (
    ContextCallRecord,
    MemoryContext,
    RecalledItem,
    TrimmedMessage,
    call_memory_tool,
    tool_definitions,
)
from memctx.strategies import make_strategy
from memctx.text import redact
from memctx.transcripts import Transcript, load_transcript, load_transcripts
from memctx.trim import TrimResult, smart_trim

__all__ = [
    "BlockKind",
    "ConfigError",
    "ContextCallRecord",
    "MemctxError",
    "MemoryContext",
    "MemoryContextConfig",
    "MessageInfo",
    "PairingViolation",
    "RecalledItem",
    "RoleKind",
    "StoreError",
    "StrategyError",
    "TokenCounter",
    "Transcript",
    "TranscriptError",
    "TrimResult",
    "TrimmedMessage",
    "call_memory_tool",
    "estimate_message_tokens",
    "estimate_tokens",
    "inspect_message",
    "load_config",
    "load_transcript",
    "load_transcripts",
    "make_strategy",
    "message_text",
    "pairing_violations",
    "redact",
    "repair_tool_pairing",
    "smart_trim",
    "tool_definitions",
]

__version__ = "0.1.0"
