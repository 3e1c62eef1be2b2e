"""When the pre-compaction memory flush runs (seed 001 §1.3, seed 003), and its saved state.

Seed 001's ``shouldRunMemoryFlush``: flush when ``tokens >= window - reserve -
softThresholdTokens`` and no flush has run in this compaction cycle. ``reserve`` is the
compaction reserve (:func:`memctx.compaction.compaction_reserve`, the room agent compaction
keeps free), so the flush fires ``softThresholdTokens`` (4,000) before compaction would.
The silent turn itself is :func:`memctx.compaction.run_flush`.

Three failure modes users report shape the rules:

- **Thresholds that are not positive.** In a tiny window ``window - reserve - soft`` is zero
  or negative; every count would pass it and each cycle would flush on its first turn,
  before there is anything to keep. As in OpenClaw, a threshold ``<= 0`` never flushes.
  Large windows (1M) need nothing special: the arithmetic is in Python ints.
- **Stale token counts.** A count measured before a compaction (an agent that reports the
  last response's usage, or a session file not yet rewritten) is above the threshold by
  construction and would flush again at once in the new cycle, over the compacted history.
  :meth:`FlushTracker.note_compaction` records the count the compaction started from;
  counts at or above it are stale until a lower (fresh) one is seen.
- **Flush and compaction feeding each other.** A cycle is the stretch between two
  compactions; :class:`FlushState` keeps the cycle number and the cycle last flushed, so at
  most one flush runs per cycle whatever the counts do.

The state lives in ``memory-flush.json`` (:data:`FLUSH_STATE_FILE`) in a directory the caller
gives (beside the store), written atomically (a temporary file, then ``os.replace``), so a
restart keeps the cycle and a crash never leaves half a file. A missing, unreadable or
corrupt file reads as a fresh state and is reported (:attr:`FlushTracker.problem`, a
warning in the ``memctx`` log); a corrupt one is moved aside to ``memory-flush.json.corrupt``
and replaced. Once the tracker exists nothing here raises into the agent's turn, except a
``ValueError`` for a window that is not a positive int (a caller's bug, not a runtime state).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from memctx.config import MemoryContextConfig
from memctx.errors import StoreError
from memctx.fs import atomic_write_beneath
from memctx.store import open_in_store, resolve_store_dir

from .budget import compaction_reserve

__all__ = [
    "FLUSH_STATE_FILE",
    "FlushDecision",
    "FlushReason",
    "FlushState",
    "FlushTracker",
    "flush_threshold",
    "should_flush",
]

logger = logging.getLogger("memctx")

FLUSH_STATE_FILE = "memory-flush.json"
_FORMAT = 1
_MAX_STATE_BYTES = 64 * 1024  # a few hundred bytes when valid: anything larger is not ours


class FlushReason(StrEnum):
    """Why :func:`should_flush` decided as it did."""

    DUE = "due"
    DISABLED = "disabled"
    BELOW_THRESHOLD = "below-threshold"
    NO_THRESHOLD = "no-threshold"  # window - reserve - soft <= 0: the window is too small
    ALREADY_FLUSHED = "already-flushed"  # a flush already ran in this compaction cycle
    STALE_TOKENS = "stale-tokens"  # the count predates the last compaction
    NO_TOKENS = "no-tokens"  # no usable count (None, negative, not an int)


@dataclass(frozen=True, slots=True)
class FlushState:
    """Where a session stands in its compaction cycles.

    Attributes:
        cycle: Compactions so far; a cycle runs from one compaction to the next.
        flushed_cycle: The cycle of the last flush; ``None`` before the first.
        compaction_tokens: The token count the current cycle's compaction started from;
            counts at or above it are stale. ``None`` once a fresh count was seen.
        flushed_at: Epoch seconds of the last flush (for people reading the file).
    """

    cycle: int = 0
    flushed_cycle: int | None = None
    compaction_tokens: int | None = None
    flushed_at: float | None = None

    @property
    def flushed_this_cycle(self) -> bool:
        """Whether a flush already ran in the current cycle."""
        return self.flushed_cycle == self.cycle

    def to_json(self) -> dict[str, Any]:
        """The file's content (camelCase, as the seeds' session files write it)."""
        return {
            "version": _FORMAT,
            "compactionCount": self.cycle,
            "memoryFlushCompactionCount": self.flushed_cycle,
            "compactionTokens": self.compaction_tokens,
            "memoryFlushAt": self.flushed_at,
        }

    @classmethod
    def from_json(cls, data: object) -> FlushState:
        """Read :meth:`to_json`'s output; ``ValueError`` naming the bad field otherwise."""
        if not isinstance(data, dict) or data.get("version") != _FORMAT:
            raise ValueError(f"not a version-{_FORMAT} flush state object")
        cycle = _count(data, "compactionCount")
        if cycle is None:
            raise ValueError("compactionCount is missing")
        flushed = _count(data, "memoryFlushCompactionCount")
        tokens = _count(data, "compactionTokens")
        at = data.get("memoryFlushAt")
        if at is not None and (isinstance(at, bool) or not isinstance(at, int | float)):
            raise ValueError(f"memoryFlushAt must be a number or null, got {at!r}")
        if flushed is not None and flushed > cycle:
            raise ValueError(f"memoryFlushCompactionCount {flushed} is ahead of {cycle}")
        return cls(cycle, flushed, tokens, None if at is None else float(at))


def _count(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} must be an integer >= 0, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class FlushDecision:
    """The answer of :func:`should_flush`; true when the flush is due.

    Attributes:
        flush: Run the flush turn now.
        reason: Why (:class:`FlushReason`).
        threshold: ``window - reserve - softThresholdTokens`` (may be <= 0: never flushes).
        tokens: The count decided on.
    """

    flush: bool
    reason: FlushReason
    threshold: int
    tokens: int | None

    def __bool__(self) -> bool:
        return self.flush


def flush_threshold(window: int, config: MemoryContextConfig) -> int:
    """``window - compaction_reserve(config, window) - memoryFlush.softThresholdTokens``.

    Raises:
        ValueError: ``window`` is not a positive int.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(
            f"window must be a positive number of tokens, got {window!r}: pass the model's "
            "context window (e.g. 200000)"
        )
    soft = config.compaction.memory_flush.soft_threshold_tokens
    return window - compaction_reserve(config, window) - soft


def should_flush(
    tokens: int | None, window: int, config: MemoryContextConfig, state: FlushState
) -> FlushDecision:
    """Whether the memory flush is due (seed 001's ``shouldRunMemoryFlush``, hardened).

    Pure: nothing is recorded (:meth:`FlushTracker.check` also clears the stale-count guard
    when a fresh count arrives).

    Args:
        tokens: The context's current token count; ``None`` when unknown.
        window: The conversation's context window in tokens.
        config: ``compaction.memoryFlush`` (enabled, soft threshold) and the reserve floor.
        state: The session's cycle state.

    Returns:
        Due when enabled, the threshold is positive, ``tokens >= threshold``, the count is
        not stale (below ``state.compaction_tokens``) and no flush ran this cycle.

    Raises:
        ValueError: ``window`` is not a positive int.
    """
    threshold = flush_threshold(window, config)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        return FlushDecision(False, FlushReason.NO_TOKENS, threshold, None)

    def no(reason: FlushReason) -> FlushDecision:
        return FlushDecision(False, reason, threshold, tokens)

    if not config.compaction.memory_flush.enabled:
        return no(FlushReason.DISABLED)
    if threshold <= 0:
        return no(FlushReason.NO_THRESHOLD)
    if tokens < threshold:
        return no(FlushReason.BELOW_THRESHOLD)
    if state.flushed_this_cycle:
        return no(FlushReason.ALREADY_FLUSHED)
    if state.compaction_tokens is not None and tokens >= state.compaction_tokens:
        return no(FlushReason.STALE_TOKENS)
    return FlushDecision(True, FlushReason.DUE, threshold, tokens)


class FlushTracker:
    """A session's :class:`FlushState`, kept in ``<state_dir>/memory-flush.json``.

    Args:
        state_dir: The directory of the state file (created on first write), e.g. the
            session's store directory. One tracker, one session: give each session its own.
        store_dir: The store ``state_dir`` lies in (default: ``state_dir`` itself). Nothing
            below it is followed through a symlink: a linked folder or state file is refused
            (counted, :func:`memctx.store.refused_paths`) and the tracker works from memory.

    Raises:
        StoreError: ``state_dir`` is not a usable path (empty, or an existing non-directory).

    Thread-safe. Every later failure (a corrupt file, a full disk) is logged and kept in
    :attr:`problem`; the tracker then works from memory.
    """

    def __init__(
        self, state_dir: str | os.PathLike[str], *, store_dir: str | os.PathLike[str] | None = None
    ) -> None:
        if store_dir is None:
            self._dir = self._root = resolve_store_dir(state_dir)
        else:
            self._root = resolve_store_dir(store_dir)
            below = Path(os.path.abspath(state_dir)).relative_to(os.path.abspath(store_dir))
            self._dir = self._root / below  # lexically: no link below the store is resolved
        self._path = self._dir / FLUSH_STATE_FILE
        self._lock = threading.Lock()
        self._last_tokens: int | None = None
        self.problem: str | None = None
        self._state = self._load()

    @property
    def path(self) -> Path:
        """The state file."""
        return self._path

    @property
    def state(self) -> FlushState:
        """The current state (a frozen snapshot)."""
        with self._lock:
            return self._state

    def check(self, tokens: int | None, window: int, config: MemoryContextConfig) -> FlushDecision:
        """:func:`should_flush` on the current state, remembering the count.

        A count below the one the last compaction started from is fresh: the stale guard is
        lifted (and saved) before deciding. The count is also what :meth:`note_compaction`
        records when it is given none.
        """
        with self._lock:
            valid = isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0
            if valid:
                self._last_tokens = tokens
                guard = self._state.compaction_tokens
                if guard is not None and tokens is not None and tokens < guard:
                    self._set(replace(self._state, compaction_tokens=None))
            return should_flush(tokens, window, config, self._state)

    def note_flush(self, now: float | None = None) -> FlushState:
        """Record that the flush turn ran in the current cycle (notes written or not)."""
        with self._lock:
            at = time.time() if now is None else now
            return self._set(replace(self._state, flushed_cycle=self._state.cycle, flushed_at=at))

    def note_compaction(self, tokens_before: int | None = None) -> FlushState:
        """Record a compaction: a new cycle begins.

        Args:
            tokens_before: The token count the compaction started from; later counts at or
                above it are stale until a lower one is seen. ``None``: the last count
                :meth:`check` saw (if any).
        """
        with self._lock:
            guard = tokens_before if tokens_before is not None else self._last_tokens
            if guard is not None and (isinstance(guard, bool) or guard < 0):
                guard = None
            self._last_tokens = None
            return self._set(
                replace(self._state, cycle=self._state.cycle + 1, compaction_tokens=guard)
            )

    def reload(self) -> FlushState:
        """Read the file again (another process may have advanced it)."""
        with self._lock:
            self._state = self._load()
            return self._state

    # -- the file

    def _set(self, state: FlushState) -> FlushState:
        if state != self._state:
            self._state = state
            self._write(state)
        return state

    def _report(self, message: str) -> None:
        self.problem = message
        logger.warning("memory flush state: %s", message)

    def _load(self) -> FlushState:
        try:
            raw = self._read()
        except FileNotFoundError:
            logger.info("memory flush state: no %s yet, starting at cycle 0", self._path)
            return FlushState()
        except (OSError, StoreError) as exc:
            self._report(
                f"cannot read {self._path} ({exc}); starting from a fresh state in memory. "
                "Fix the file's permissions or move it away"
            )
            return FlushState()
        try:
            return FlushState.from_json(json.loads(raw.decode("utf-8")))
        except (ValueError, UnicodeDecodeError) as exc:
            aside = self._path.with_name(FLUSH_STATE_FILE + ".corrupt")
            self._report(
                f"{self._path} is corrupt ({exc}); it was moved to {aside.name} and replaced "
                "by a fresh state (cycle 0). Nothing to fix unless this repeats: then check "
                "what else writes to that directory"
            )
            try:
                os.replace(self._path, aside)
            except OSError as move_exc:
                logger.warning("memory flush state: cannot move %s aside: %s", self._path, move_exc)
            fresh = FlushState()
            self._write(fresh)
            return fresh

    def _read(self) -> bytes:
        # Never blocks on a FIFO, never follows a link (the state file or a folder above it).
        fd = open_in_store(self._root, self._path, os.O_RDONLY, doing="read")
        try:
            st = os.fstat(fd)
            if st.st_size > _MAX_STATE_BYTES:
                return b"too large"  # fails to parse: reported and replaced as corrupt
            return os.read(fd, _MAX_STATE_BYTES)
        finally:
            os.close(fd)

    def _write(self, state: FlushState) -> None:
        data = (json.dumps(state.to_json(), indent=2) + "\n").encode()
        try:
            # Cycle counters, no conversation text; folders made without following a link.
            atomic_write_beneath(self._root, self._path, data, mode=0o644)
        except OSError as exc:
            self._report(
                f"cannot save {self._path} ({exc}); the state is kept in memory only and a "
                "restart would flush again in this cycle. Check the directory's permissions "
                "and free space"
            )
