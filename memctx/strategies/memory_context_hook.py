"""The ``memory-context-hook`` strategy: memctx's hooks in an agent that compacts on its own.

The agent (Claude Code, say) compacts by its own rules, and memctx only sees its hooks:
``on_context`` before every call keeps the call within the window (smart trim, pairing
repair, recall), and each compaction the history records (a compaction summary after its
start, e.g. Claude Code's ``compact_boundary``) is replayed: the history before the summary
goes to ``on_before_compact``, as a PreCompact hook would hand it over. That is what
``memctx replay`` measures on a real session by default. At the end of each session the rest
goes to ``on_before_compact`` too, as with ``memory-context``.
"""

from __future__ import annotations

from memctx.messages import is_compaction_summary, leading_system_count

from .base import HOOK_STRATEGY, Messages
from .memory_context import MemoryContextStrategy

__all__ = ["MemoryContextHookStrategy"]


class MemoryContextHookStrategy(MemoryContextStrategy):
    """memctx's hooks without agent compaction; recorded compactions replayed."""

    name = HOOK_STRATEGY
    agent_compaction = False

    def start_session(self, session_id: str) -> None:
        super().start_session(session_id)
        self._scanned = 0  # history messages already searched for a recorded compaction

    def replace_history(self, transcript: Messages, tokens: int) -> Messages | None:
        """Replay the last compaction the history records since the previous call.

        The agent that wrote the history compacted where a compaction summary follows
        other messages: its hook got the history before the summary, and the model saw
        only the leading system messages, the summary and what came after it from then on.
        An agent only appends, so each call searches the new messages only.
        """
        infos = self.setup.infos
        head = leading_system_count(transcript, infos)
        new = range(max(self._scanned, head + 1), len(transcript))
        self._scanned = len(transcript)
        found = [i for i in new if is_compaction_summary(transcript[i], infos.info(transcript[i]))]
        if not found:
            return None
        at = found[-1]
        self.archive(transcript[head:at])
        replaced = transcript[:head] + transcript[at:]
        self._scanned = len(replaced)
        return replaced
