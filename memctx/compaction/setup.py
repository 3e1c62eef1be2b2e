"""What every compaction of one conversation is set up with: :class:`CompactionSetup`.

Each way of compacting (the agent's own :class:`~memctx.compaction.AgentCompactor`, seed
002's :class:`~memctx.compaction.TurnCompactor`, :func:`~memctx.compaction.compact_history`,
the memory flush, overflow recovery, the manual and safeguard triggers) needs the same
things: the LLM that writes the summaries, the settings, the conversation's window and the
summariser's, the summary prompt, and the token counter and anatomy cache it shares with the
caller. They are fixed for a conversation, so they travel as one value built once; what
changes from call to call (the messages, a previous summary, the user's instructions, the
turn) stays an argument of the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memctx.config import MemoryContextConfig
from memctx.llm import LLMClient
from memctx.messages import InfoCache, TokenCounter

from .budget import CompactionBudget, compaction_reserve
from .prompts import PROMPTS, SummaryPrompt

__all__ = ["CompactionSetup"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSetup:
    """The summarising LLM of a conversation and what it needs to count and budget.

    Build one per conversation (or per strategy) and pass it to every compaction entry
    point; the counter and the anatomy cache are shared objects, so a message measured by
    one compaction is not measured again by the next.

    Attributes:
        client: Writes the summaries and the flush notes (``LLMClient()`` is the offline
            model). Give it no disk cache: its prompts hold the unredacted history.
        config: ``compaction`` gives the reserve, ratios, margin, share, mode, limits and
            the memory flush's prompts.
        window: The conversation's context window in tokens.
        summarizer_window: The summarising model's window; ``None`` means ``window`` (the
            agent summarises with its own model).
        prompt: ``"handoff"`` (seed 002's prompt) or ``"structured"`` (coding-agent
            sections, every user instruction verbatim).
        counter: Token counter (``TokenCounter()``: the seed's estimate), shared with the
            caller.
        infos: Message anatomy cache, shared with the caller.

    Raises:
        TypeError: ``config`` is not a :class:`~memctx.config.MemoryContextConfig`.
        ValueError: A window is not a positive int, or ``prompt`` is unknown.
    """

    client: LLMClient
    config: MemoryContextConfig
    window: int
    summarizer_window: int | None = None
    prompt: SummaryPrompt = "handoff"
    counter: TokenCounter = field(default_factory=TokenCounter)
    infos: InfoCache = field(default_factory=InfoCache)

    def __post_init__(self) -> None:
        if not isinstance(self.config, MemoryContextConfig):
            raise TypeError(
                f"config must be a MemoryContextConfig, got {type(self.config).__name__}: "
                "pass load_config(path) or MemoryContextConfig(...)"
            )
        if self.prompt not in PROMPTS:
            raise ValueError(
                f"unknown summary prompt {self.prompt!r}: use one of {sorted(PROMPTS)}"
            )
        # A bad window is a set-up error: said here, not at the first compaction.
        self.budget()

    @property
    def reserve(self) -> int:
        """Tokens agent compaction keeps free: ``min(reserveTokensFloor, window // 4)``."""
        return compaction_reserve(self.config, self.window)

    def budget(self, keep_recent_tokens: int | None = None) -> CompactionBudget:
        """The sizes of one compaction (:meth:`CompactionBudget.from_config`).

        Args:
            keep_recent_tokens: Tokens of newest messages kept verbatim; ``None`` means a
                quarter of the window.

        Raises:
            ValueError: ``keep_recent_tokens`` is negative.
        """
        return CompactionBudget.from_config(
            self.config,
            self.window,
            summarizer_window=self.summarizer_window,
            keep_recent_tokens=keep_recent_tokens,
        )
