"""``MemoryContext``: one session's engine behind the two hooks an agent loop calls, its archive
(what is stored when, what is still pending), the background worker, hook statistics and
the record of each ``on_context`` call (:class:`ContextCallRecord`).

May import: every package below it (foundations, mechanisms, policies).
"""

from __future__ import annotations

from .call_record import ContextCallRecord, RecalledItem, RecallStatus
from .engine import MemoryContext
from .extraction_view import extraction_calls_bound
from .lanes import DEFAULT_MAX_CONCURRENT_COMPACTIONS, CompactionLanes, LaneError, LaneTimeoutError
from .stats import HookTimer
from .tools import MEMORY_TOOL_NAMES, call_memory_tool, tool_definitions
from .trimmed import TrimmedMessage, TrimmedMessages
from .worker import BackgroundWorker

__all__: list[str] = []
