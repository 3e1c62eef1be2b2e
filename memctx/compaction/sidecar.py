"""The session-summary sidecar of seed 004: rolling items kept beside the transcript.

``<session file>.summary.json`` (:func:`sidecar_path`) holds one short item per user,
assistant or tool-result message, added from ``lastProcessedMessageCount`` on, the oldest
dropped beyond ``summaryMaxItems``. Under pressure (:func:`summary_injection_due`) the newest
items (:meth:`SessionSummary.materialize`) go into the system context (:func:`inject_summary`),
never the user prompt path, from where an agent would store them back into its transcript.

The seed's two later fixes are built in. Loop prevention: a message holding
:data:`SUMMARY_MARKER` (the sidecar's own text), a recalled block or a compaction summary
never becomes an item. Rewind recovery: when a repair or a compaction rewrote the history
(the transcript is shorter than the count, or the message before the count is not the one
recorded), the seed skipped new messages until the old count was passed; here the items are
kept (still the session's history) and the transcript is scanned again, skipping recently
``seen`` fingerprints: nothing is added twice and nothing new is ignored.

Items are redacted (:func:`memctx.text.redact`) before they are kept: the sidecar is
persisted, and nothing memctx persists may hold a secret. Saves are atomic
(:func:`memctx.fs.atomic_write`). A corrupt or foreign file is never fatal
nor deleted: it is moved aside to ``<sidecar>.corrupt-<n>``, a warning is logged, and the
summary starts empty (the transcript is the source of truth).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, Final

from memctx.config import PlannerConfig
from memctx.errors import StoreError
from memctx.fs import atomic_write_beneath
from memctx.messages import (
    InfoCache,
    RoleKind,
    is_compaction_summary,
    is_recalled_block,
    leading_system_count,
)
from memctx.store import open_in_store
from memctx.text import redact

from .render import cap_text, render_message

__all__ = [
    "SIDECAR_SUFFIX",
    "SUMMARY_FORMAT",
    "SUMMARY_MARKER",
    "SessionSummary",
    "SummaryItem",
    "inject_summary",
    "sidecar_path",
    "summary_injection_due",
]

logger = logging.getLogger("memctx")

SUMMARY_MARKER: Final = "[SESSION_SUMMARY]"
SIDECAR_SUFFIX: Final = ".summary.json"
SUMMARY_FORMAT: Final = "memctx-summary/1"
_HEADER: Final = f"{SUMMARY_MARKER} Earlier in this session (oldest first):"
# The recent fingerprints a rescan skips: the tail a compaction keeps is recent, and four
# times the items also covers the messages that never became items (system, synthetic).
_SEEN_PER_ITEM: Final = 4
_ITEM_KINDS: Final = frozenset({RoleKind.USER, RoleKind.ASSISTANT, RoleKind.TOOL})
_ITEM_KEYS: Final = ("text", "role", "fingerprint")


def sidecar_path(session_file: str | os.PathLike[str]) -> Path:
    """``<session file>.summary.json``: the sidecar beside a session transcript."""
    session = Path(session_file)
    return session.with_name(session.name + SIDECAR_SUFFIX)


@dataclass(frozen=True)
class SummaryItem:
    """One message's gist.

    Attributes:
        text: The rendered message on one line, at most ``summaryItemChars`` long.
        role: ``user``, ``assistant`` or ``tool`` (the role kind, whatever the format).
        fingerprint: A short hash of the message's rendered text and role.
    """

    text: str
    role: str
    fingerprint: str


def _fingerprint(role: str, rendered: str) -> str:
    return hashlib.sha256(f"{role}\0{rendered}".encode()).hexdigest()[:16]


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line and at most ``limit`` characters, cut by :func:`cap_text`."""
    flat = " ".join(text.split())
    budget = limit
    # cap_text adds its omission note on top of the budget: shrink the budget by the excess
    # until the result fits (the note's number grows, so this may take a second round).
    while budget > 0:
        capped = cap_text(flat, budget)
        if len(capped) <= limit:
            return capped.replace("\n", " ")
        budget -= len(capped) - limit
    return flat[:limit]


class _NotASummary(ValueError):
    """The sidecar file is not a memctx summary (corrupt, or written by something else)."""


def _load(raw: bytes) -> tuple[int, list[SummaryItem], list[str]]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _NotASummary(f"not JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != SUMMARY_FORMAT:
        raise _NotASummary(f'not a "{SUMMARY_FORMAT}" object')
    count, items, seen = data.get("lastProcessedMessageCount"), data.get("items"), data.get("seen")
    if type(count) is not int or count < 0:
        raise _NotASummary("lastProcessedMessageCount is not a count")
    if not isinstance(items, list) or not isinstance(seen, list):
        raise _NotASummary("items or seen is not a list")
    if not all(isinstance(f, str) for f in seen) or (count and not seen):
        # The last fingerprint seen is the check for a rewound history: it must be there.
        raise _NotASummary("seen is not the fingerprints of the messages processed")
    loaded = []
    for item in items:
        text, role, mark = (item.get(k) if isinstance(item, dict) else None for k in _ITEM_KEYS)
        if not (isinstance(text, str) and isinstance(role, str) and isinstance(mark, str)):
            raise _NotASummary("an item is not {text, role, fingerprint}")
        if SUMMARY_MARKER in text:  # memctx never writes one: the loop-prevention rule
            raise _NotASummary(f"an item holds {SUMMARY_MARKER}")
        loaded.append(SummaryItem(text, role, mark))
    return count, loaded, seen


def _read(root: Path, path: Path) -> bytes:
    """The sidecar's bytes, opened without following a link below ``root`` (a FIFO in its
    place is refused, never waited on)."""
    fd = open_in_store(root, path, os.O_RDONLY, doing="read")
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _move_aside(path: Path) -> Path:
    """Rename ``path`` to the first free ``<path>.corrupt-<n>`` (earlier ones are kept)."""
    n = 1
    while (aside := path.with_name(f"{path.name}.corrupt-{n}")).exists() or aside.is_symlink():
        n += 1
    os.rename(path, aside)
    return aside


class SessionSummary:
    """The rolling summary of one session and its sidecar file (not thread-safe: one per
    session, updated from the agent's turn). :meth:`open` reads the file; the constructor
    takes state already checked (``writable=False``: never saved)."""

    def __init__(
        self,
        path: Path,
        config: PlannerConfig,
        *,
        infos: InfoCache | None = None,
        count: int = 0,
        items: Sequence[SummaryItem] = (),
        seen: Sequence[str] = (),
        writable: bool = True,
        root: Path | None = None,
    ) -> None:
        self._path = path
        self._root = root if root is not None else Path(os.path.abspath(path)).parent
        self._config = config
        self._infos = infos if infos is not None else InfoCache()
        self._count = count
        self._items = list(items)[-config.summary_max_items :]
        # An ordered set, oldest first; its last entry is the fingerprint of the message at
        # ``count - 1``, which is how a rewritten history is recognised.
        self._seen_limit = _SEEN_PER_ITEM * config.summary_max_items
        self._seen = dict.fromkeys(list(seen)[-self._seen_limit :])
        self._writable = writable
        self._last: Any = None  # the caller's message at ``count - 1`` when last updated

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: PlannerConfig,
        *,
        infos: InfoCache | None = None,
        store_dir: str | os.PathLike[str] | None = None,
    ) -> SessionSummary:
        """The summary saved at ``path`` (a :func:`sidecar_path`), or an empty one.

        Never raises for the file's state: a corrupt or foreign file is moved aside (see the
        module note); an unreadable one leaves the summary empty and unsaved, so that file
        is never overwritten.

        Args:
            path: The sidecar file; it need not exist.
            config: ``summaryMaxItems`` and ``summaryItemChars`` apply.
            infos: The caller's anatomy cache, if it has one.
            store_dir: The store the file lies in (default: its folder). No symlink below it
                is followed: a linked sidecar or folder leaves the summary empty and unsaved
                (counted, :func:`memctx.store.refused_paths`).
        """
        path = Path(os.path.abspath(path))
        root = Path(os.path.abspath(store_dir)) if store_dir is not None else path.parent
        try:
            count, items, seen = _load(_read(root, path))
        except FileNotFoundError:
            return cls(path, config, infos=infos, root=root)
        except (OSError, StoreError) as exc:  # unreadable: overwriting it could lose it
            logger.warning("session summary: cannot read %s (%s); not saving it", path, exc)
            return cls(path, config, infos=infos, writable=False)
        except _NotASummary as exc:
            try:
                aside = _move_aside(path)
            except OSError as move_exc:
                why = f"{exc}; cannot move it aside: {move_exc}"
                logger.warning("session summary: %s is corrupt (%s); not saving it", path, why)
                return cls(path, config, infos=infos, writable=False)
            logger.warning("session summary: %s is corrupt (%s); moved to %s", path, exc, aside)
            return cls(path, config, infos=infos, root=root)
        return cls(path, config, infos=infos, count=count, items=items, seen=seen, root=root)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def items(self) -> tuple[SummaryItem, ...]:
        """The items, oldest first."""
        return tuple(self._items)

    @property
    def last_processed_message_count(self) -> int:
        """How many messages of the transcript the last :meth:`update` saw."""
        return self._count

    def _read(self, message: Any) -> tuple[str, SummaryItem | None]:
        """The message's fingerprint, and its item (``None``: not one, or synthetic)."""
        info = self._infos.info(message)
        rendered = render_message(info)
        # Anthropic and Gemini carry tool results in user messages: named alike in every format.
        role = "tool" if info.is_tool_result_only else info.kind.value
        fingerprint = _fingerprint(role, rendered)
        if (
            info.kind not in _ITEM_KINDS
            or not rendered.strip()
            or SUMMARY_MARKER in rendered
            or is_recalled_block(message)
            or is_compaction_summary(message, info)
        ):
            return fingerprint, None
        # Redacted whole, before it is cut: half a secret would no longer match a rule.
        text = _one_line(redact(rendered), self._config.summary_item_chars)
        if SUMMARY_MARKER in text:  # cannot happen from a clean render; the rule holds anyway
            return fingerprint, None
        return fingerprint, SummaryItem(text, role, fingerprint)

    def _rewound(self, messages: Sequence[Any]) -> bool:
        if self._count > len(messages):
            return True
        if self._count == 0:
            return False
        if messages[self._count - 1] is self._last:
            return False  # the very message read last time: called every turn, read once
        last = next(reversed(self._seen), None)
        return self._read(messages[self._count - 1])[0] != last

    def update(self, messages: Sequence[Any]) -> int:
        """Add the messages after ``lastProcessedMessageCount`` and save when anything changed.

        After a rewind (see the module note) the whole transcript is scanned and the messages
        seen before are skipped: a new message equal (role and text) to a recent one is taken
        as seen, so a repeated gist may be lost but none is added twice. Never changes
        ``messages``.

        Args:
            messages: The session's transcript, any supported format.

        Returns:
            How many items were added.
        """
        rescan = self._rewound(messages)
        start = 0 if rescan else self._count
        # What was seen before this update: two equal new messages are both new.
        known = set(self._seen) if rescan else set()
        before = (self._count, list(self._seen))
        added = 0
        for message in messages[start:]:
            fingerprint, item = self._read(message)
            self._seen.pop(fingerprint, None)  # back to the end: the newest message seen
            self._seen[fingerprint] = None
            if item is None or fingerprint in known:
                continue
            self._items.append(item)
            added += 1
        while len(self._seen) > self._seen_limit:
            del self._seen[next(iter(self._seen))]
        del self._items[: -self._config.summary_max_items]
        self._count = len(messages)
        self._last = messages[-1] if messages else None
        if added or before != (self._count, list(self._seen)):
            self._save()
        return added

    def _save(self) -> None:
        if not self._writable:
            return
        data = {
            "format": SUMMARY_FORMAT,
            "lastProcessedMessageCount": self._count,
            "items": [dict(zip(_ITEM_KEYS, astuple(i), strict=True)) for i in self._items],
            "seen": list(self._seen),
        }
        text = json.dumps(data, ensure_ascii=False, indent=2)
        try:
            # 0600: items are conversation text. No link below the store is followed.
            atomic_write_beneath(self._root, os.path.abspath(self._path), text.encode("utf-8"))
        except OSError as exc:
            # The summary is a cache of the transcript: losing a save costs a gist, not data.
            logger.warning("session summary: cannot save %s (%s); kept in memory", self._path, exc)

    def materialize(self, max_chars: int) -> str:
        """The summary for the prompt: the marker and header line, then the newest items
        that fit in ``max_chars`` as ``- role: text`` lines, oldest first.

        Returns:
            The text, at most ``max_chars`` long; ``""`` when there are no items or not even
            the header and the newest item fit.
        """
        lines: list[str] = []
        size = len(_HEADER)
        for item in reversed(self._items):
            line = f"- {item.role}: {' '.join(item.text.split())}"
            if size + 1 + len(line) > max_chars:
                break  # newest first and contiguous: no gap in the recent history
            lines.append(line)
            size += 1 + len(line)
        return "\n".join([_HEADER, *reversed(lines)]) if lines else ""


def summary_injection_due(
    *, trimmed: bool, used_tokens: int, budget_tokens: int, ratio: float
) -> bool:
    """Seed 004's ``decideSessionSummaryInjection``: inject only under pressure, so the
    cached prompt prefix stays stable otherwise.

    Args:
        trimmed: Whether the planner dropped history this turn.
        used_tokens: Tokens the history takes.
        budget_tokens: The history budget; ``<= 0`` counts as pressure.
        ratio: ``summaryPressureRatio`` (0.72).
    """
    return trimmed or budget_tokens <= 0 or used_tokens / budget_tokens >= ratio


def inject_summary(
    messages: Sequence[Any], text: str, *, infos: InfoCache | None = None
) -> list[Any]:
    """A new list with ``text`` in the system context, never on the user prompt path.

    Appended as a separate text to the last leading system message (the earlier ones, and
    the cached prefix they start, stay as they were): ``content + "\\n\\n" + text`` for a
    string, an extra text block for a list. Without a system message, or one whose content
    is neither, a new ``{"role": "system", "content": text}`` goes after the leading system
    messages (at index 0 when there are none). Only the changed message is a new dict.

    Args:
        messages: The messages to send; never changed.
        text: What :meth:`SessionSummary.materialize` gave; ``""`` changes nothing.
        infos: The caller's anatomy cache, if it has one.
    """
    out = list(messages)
    if not text:
        return out
    head = leading_system_count(out, infos if infos is not None else InfoCache())
    target = out[head - 1] if head else None
    content = target.get("content") if isinstance(target, Mapping) else None
    if isinstance(target, Mapping) and isinstance(content, str):
        out[head - 1] = {**target, "content": f"{content}\n\n{text}"}
    elif isinstance(target, Mapping) and isinstance(content, list):
        out[head - 1] = {**target, "content": [*content, {"type": "text", "text": text}]}
    else:
        out.insert(head, {"role": "system", "content": text})
    return out
