"""Where compactions happened in a replay: the strategy's own and those the transcript records.

:class:`~memctx.harness.replay.ReplayReport` reads its :class:`CompactionPoint` list from the
call rows (``"compaction"`` events, with the tokens before and after); a Claude Code session
records its own compactions (``compact_boundary``: where, and ``preTokens``), read here by
:func:`recorded_compactions`, so ``memctx replay`` can print ours beside theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memctx.transcripts import Transcript

__all__ = ["CompactionPoint", "RecordedCompaction", "recorded_compactions"]


@dataclass(frozen=True)
class CompactionPoint:
    """One compaction a strategy made during a replay.

    Attributes:
        call: The call it came before (index into :attr:`ReplayReport.calls`).
        at: The transcript message the call was made at.
        before: Counted tokens of the agent's transcript before it.
        after: Counted tokens after it.
    """

    call: int
    at: int
    before: int
    after: int


@dataclass(frozen=True)
class RecordedCompaction:
    """A compaction the transcript itself records (Claude Code's ``compact_boundary``).

    Attributes:
        at: The first message after it (``None`` when the file does not say: only the
            last boundary of a session is kept).
        pre_tokens: The context size the agent reported when it compacted (``preTokens``).
        trigger: ``"auto"`` or ``"manual"`` as recorded.
    """

    at: int | None
    pre_tokens: int | None
    trigger: str | None


def recorded_compactions(transcript: Transcript) -> list[RecordedCompaction]:
    """The compactions ``transcript`` records, oldest first (empty without any)."""
    raw = transcript.meta.get("compactions") or []
    found: list[RecordedCompaction] = []
    for n, item in enumerate(raw):
        item = item if isinstance(item, Mapping) else {}
        pre = item.get("pre_tokens")
        last = n == len(raw) - 1
        found.append(
            RecordedCompaction(
                transcript.compaction_boundary if last else None,
                pre if isinstance(pre, int) and not isinstance(pre, bool) else None,
                str(item["trigger"]) if item.get("trigger") is not None else None,
            )
        )
    if not found and transcript.compaction_boundary is not None:
        found.append(RecordedCompaction(transcript.compaction_boundary, None, None))
    return found
