"""Seed 001's overflow trigger: compact, then truncate tool results, then a clear error.

When the provider refuses a prompt as too long (:func:`is_context_overflow_error`),
:func:`recover_from_overflow` climbs the seed's ladder (``run.ts``, "溢出恢复完整决策树"):

1. compact the history (:func:`compact_history`, trigger ``overflow``) and send it again,
   at most :data:`MAX_OVERFLOW_COMPACTION_ATTEMPTS` (3) times. Each attempt keeps a smaller
   verbatim tail (a quarter of the window, then an eighth, then a sixteenth): a provider
   that still refuses counts tokens higher than the estimate, and the same cut again would
   fail the same way;
2. when compaction is used up or cannot help (it fails, or finds nothing left to
   summarise), cut the oversized tool results once (:func:`truncate_oversized_tool_results`)
   and send again; attempts left over from step 1 may run after it, since a tail that held a
   huge output can now be summarised;
3. otherwise raise :class:`ContextOverflowError`, which names the steps taken and what the
   user can do.

A compaction's own requests never exceed the summariser's window, however large one tool
output is: :func:`compact_history` chunks its input and notes what no chunk can carry.

Any error that is not an overflow is re-raised as it is, at once: compacting would not help.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .budget import TAIL_SHARE, CompactionError
from .history import CompactionResult, compact_history
from .overflow import ContextOverflowError, is_context_overflow_error
from .setup import CompactionSetup
from .truncate import max_tool_result_chars, truncate_oversized_tool_results

__all__ = [
    "MAX_OVERFLOW_COMPACTION_ATTEMPTS",
    "OverflowRecovery",
    "describe_recovery_steps",
    "overflow_keep_recent_tokens",
    "recover_from_overflow",
]

MAX_OVERFLOW_COMPACTION_ATTEMPTS = 3  # the seed's MAX_OVERFLOW_COMPACTION_ATTEMPTS

T = TypeVar("T")


def overflow_keep_recent_tokens(window: int, attempt: int) -> int:
    """Tokens kept verbatim by overflow compaction ``attempt`` (1-based): window/4, /8, /16 …"""
    if attempt < 1:
        raise ValueError(f"attempt is 1-based, got {attempt!r}")
    return int(window * TAIL_SHARE) >> (attempt - 1)


@dataclass(frozen=True, slots=True)
class OverflowRecovery(Generic[T]):
    """What :func:`recover_from_overflow` did, for the caller to continue with and print.

    Attributes:
        result: What ``send`` returned for the prompt it accepted.
        messages: That prompt: the history to continue the session with.
        steps: Each recovery step in order: ``"compacted"`` per compaction, one
            ``"truncated …"`` line; empty when the first send succeeded.
        compactions: The compactions that ran, in order.
        overflow_errors: The first line of each overflow error the provider raised.
        notes: Failures absorbed on the way (a compaction that could not run, its fallback
            notes), one line each.
    """

    result: T
    messages: list[Any]
    steps: tuple[str, ...] = ()
    compactions: tuple[CompactionResult, ...] = ()
    overflow_errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def recovered(self) -> bool:
        """Whether the first send overflowed and a later one succeeded."""
        return bool(self.overflow_errors)

    @property
    def path(self) -> str:
        """The recovery path in one line: ``"sent as is"``, ``"compacted x2"``,
        ``"compacted x3, truncated 1 tool result of 812,000 chars"``."""
        return describe_recovery_steps(self.steps)


def describe_recovery_steps(steps: Sequence[str]) -> str:
    """Runs of ``"compacted"`` collapsed: ``compacted x3, truncated …, compacted x1``."""
    if not steps:
        return "sent as is"
    parts: list[str] = []
    run = 0
    for step in [*steps, ""]:
        if step == "compacted":
            run += 1
            continue
        if run:
            parts.append(f"compacted x{run}")
            run = 0
        if step:
            parts.append(step)
    return ", ".join(parts)


def _first_line(exc: BaseException) -> str:
    try:
        lines = str(exc).strip().splitlines()
    except Exception:  # a hostile __str__: the class name still says what happened
        lines = []
    return f"{type(exc).__name__}: {lines[0][:300] if lines else '(no message)'}"


def recover_from_overflow(
    messages: Sequence[Any],
    setup: CompactionSetup,
    send: Callable[[list[Any]], T],
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    max_attempts: int = MAX_OVERFLOW_COMPACTION_ATTEMPTS,
    tool_result_max_chars: int | None = None,
) -> OverflowRecovery[T]:
    """Send ``messages``; on a context overflow compact, truncate, retry (module docstring).

    Args:
        messages: The history, in any supported format; not modified.
        setup: What the compactions run with: the client that writes the summaries, the
            config (``compaction`` gives the reserve, ratios, margin, share and mode), the
            provider model's window and the summariser's, the prompt, the counter and the
            anatomy cache.
        send: Sends a history to the provider and returns its reply; raises on failure. It
            receives a new list each time (the caller's own dicts where unchanged).
        previous_summary: The summary of an earlier compaction kept apart, if any (given
            to the first compaction only; later ones find it in that one's summary).
        instructions: Extra focus for the summaries.
        max_attempts: Compactions at most (the seed's 3); 0 goes straight to truncation.
        tool_result_max_chars: Tool results longer than this are cut in step 2; ``None``
            means :func:`memctx.compaction.max_tool_result_chars` of ``setup.window``.

    Returns:
        The accepted prompt, ``send``'s result and the path taken (``.path``).

    Raises:
        ContextOverflowError: Still too large after every step; raised from the last
            provider error.
        Exception: Whatever ``send`` raised when it is not an overflow, unchanged.
    """
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 0:
        raise ValueError(f"max_attempts must be an int >= 0, got {max_attempts!r}")
    if tool_result_max_chars is not None and (
        isinstance(tool_result_max_chars, bool)
        or not isinstance(tool_result_max_chars, int)
        or tool_result_max_chars <= 0
    ):
        raise ValueError(
            f"tool_result_max_chars must be a positive int, got {tool_result_max_chars!r}: "
            "pass None for max_tool_result_chars(window)"
        )
    window, counter, infos = setup.window, setup.counter, setup.infos
    limit = (
        max_tool_result_chars(window) if tool_result_max_chars is None else tool_result_max_chars
    )
    current = list(messages)
    steps: list[str] = []
    compactions: list[CompactionResult] = []
    errors: list[str] = []
    notes: list[str] = []
    attempts = 0
    compaction_stuck = False  # compaction failed or had nothing to do on this history
    truncated = False
    last_error: Exception | None = None
    while True:
        try:
            result = send(list(current))
        except Exception as exc:
            if not is_context_overflow_error(exc):
                raise
            errors.append(_first_line(exc))
            last_error = exc
        else:
            return OverflowRecovery(
                result, current, tuple(steps), tuple(compactions), tuple(errors), tuple(notes)
            )
        if attempts < max_attempts and not compaction_stuck:
            attempts += 1
            try:
                done = compact_history(
                    current,
                    setup,
                    # Later attempts find the first one's summary, which holds it, in the
                    # history: passing it again would summarise it twice.
                    previous_summary=None if compactions else previous_summary,
                    instructions=instructions,
                    keep_recent_tokens=overflow_keep_recent_tokens(window, attempts),
                )
            except CompactionError as exc:
                notes.append(f"compaction attempt {attempts} failed: {exc}")
                compaction_stuck = True
            else:
                notes.extend(done.notes)
                if done.compacted:
                    compactions.append(done)
                    steps.append("compacted")
                    current = done.messages
                    continue
                notes.append(f"compaction attempt {attempts}: nothing left to summarise")
                compaction_stuck = True
        if not truncated:
            truncated = True
            cut = truncate_oversized_tool_results(current, max_chars=limit, infos=infos)
            if cut.truncated:
                steps.append(cut.describe())
                current = cut.messages
                compaction_stuck = False  # a tail that held a huge output may compact now
                continue
            notes.append(cut.describe())
        raise _overflow_error(steps, counter.count_messages(current), window) from last_error


def _overflow_error(steps: list[str], tokens: int, window: int) -> ContextOverflowError:
    done = describe_recovery_steps(steps) if steps else "no recovery step could change the prompt"
    return ContextOverflowError(
        f"context overflow: the prompt is still too large for the model after {done} "
        f"(about {tokens:,} tokens estimated, window {window:,}). Start a new session "
        "(/reset), compact with instructions that drop what is no longer needed (/compact "
        "…), trim the transcript file, or switch to a model with a larger context window",
        steps=tuple(steps),
        tokens=tokens,
        window=window,
    )
