"""What smart trim knows about a session, kept from turn to turn, and its BM25 relevance.

An agent loop resends its whole history every turn, so the runtime calls smart trim on
every turn with about 2,000 messages, nearly all of them the very dicts of the turn before.
:class:`TrimCache` makes a turn cost what is new in it:

- **Per message dict** (keyed by identity, checked with
  :func:`memctx._anatomy.message_fingerprint`): its reading, token count and static flags.
  A dict seen before costs a fingerprint and a lookup.
- **Per input**: the last input's per-message arrays and its tool units
  (:class:`UnitMap`). When the next input is the last one plus new messages (checked by
  identity of the per-message facts), only the new messages are added.
- **One BM25 index** (:class:`memctx._bm25.BM25Index`) holding exactly the messages that
  were trim candidates last time. Candidates change by a few messages a turn (new ones
  leave the protected tail), so syncing adds and removes a few documents and only those are
  tokenized; IDF is over the candidate set, as the seed's "index of non-protected messages"
  asks. Scoring is the index's numpy pass over the query terms' postings.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import count, repeat
from operator import is_, length_hint
from typing import Any

import numpy as np
import numpy.typing as npt

from memctx._anatomy import (
    InfoCache,
    MessageInfo,
    RoleKind,
    blocks_token_text,
    inspect_message,
    is_recalled_block,
    message_fingerprint,
)
from memctx._bm25 import BM25Index
from memctx._text import tokenize

__all__ = ["KnownInfos", "MessageFacts", "SessionState", "TrimCache", "UnitMap", "index_text"]

TokenCount = Callable[[object], int]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

# Stale entries (dicts no longer in the input, e.g. after a compaction replaced the history)
# are dropped once the cache holds more than this many times the current input.
_STALE_FACTOR = 2
_MIN_ENTRIES = 4096
_NOT_A_DICT = (-1,)  # the fingerprint of a non-dict entry: its reading never changes


class MessageFacts:
    """The per-message facts a trim needs; immutable once made.

    Attributes:
        key: A number unique to this cache entry: the message's key in the BM25 index.
        info: The message read by :func:`memctx._anatomy.inspect_message`.
        tokens: Its token count under the cache's counter.
        recalled: Whether it is an injected ``<recalled-context>`` block.
        fixed: Protected whatever its position: a system message, a recalled block, or an
            entry that is not a message dict.
        conversational: A user or assistant message that counts toward the protected
            recent ones: not tool results only, not a recalled block.
        assistant_calls: An assistant message with tool calls.
    """

    __slots__ = ("assistant_calls", "conversational", "fixed", "info", "key", "recalled", "tokens")

    def __init__(self, key: int, message: object, tokens: int) -> None:
        info = inspect_message(message)
        self.key = key
        self.info = info
        self.tokens = tokens
        self.recalled = is_recalled_block(message)
        self.fixed = (
            not isinstance(message, Mapping) or info.kind is RoleKind.SYSTEM or self.recalled
        )
        # Tool-result-only messages do not count: OpenAI and Pi results have a role of their
        # own while Anthropic's sit in user messages, so counting them would protect a
        # different stretch of the same conversation in each format.
        self.conversational = (
            info.kind in (RoleKind.USER, RoleKind.ASSISTANT)
            and not info.is_tool_result_only
            and not self.recalled
        )
        self.assistant_calls = info.kind is RoleKind.ASSISTANT and info.has_tool_calls


def index_text(info: MessageInfo) -> str:
    """The text BM25 sees for a message: everything that costs tokens.

    Tool names and inputs are included: a ``read`` of ``src/payment/webhook.ts`` is
    evidence about webhooks even when its result is long gone. Thinking is included too;
    it is where an assistant names what it is working on.
    """
    return blocks_token_text(info.blocks)


class _Column:
    """A growable numpy array: amortised O(1) per appended value."""

    def __init__(self, dtype: type[np.generic]) -> None:
        self._data: npt.NDArray[Any] = np.zeros(256, dtype=dtype)
        self._size = 0

    def put(self, start: int, values: Sequence[Any]) -> None:
        """Write ``values`` from ``start`` on; the column then ends after them."""
        stop = start + len(values)
        if stop > len(self._data):
            grown = np.zeros(max(stop, 2 * len(self._data)), dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[start:stop] = values
        self._size = stop

    def view(self) -> npt.NDArray[Any]:
        return self._data[: self._size]


class UnitMap:
    """Removal units of a message list, built incrementally: a call message and its answers.

    A result joins the latest earlier message holding a call with its id; a result without
    an id (Gemini, legacy ``function_call``) joins the latest earlier message with calls.
    Results answering calls of several messages of one assistant turn join those messages
    into one unit. A result whose id matches no call stays alone (pairing repair handles it).

    Attributes:
        root: Per message, its unit's smallest index (so units order by their first message).
        members: Per unit root, its message indices in ascending order.
    """

    def __init__(self) -> None:
        self.root: list[int] = []
        self.members: dict[int, list[int]] = {}
        self._call_at: dict[str, int] = {}
        self._last_caller = -1
        self._array = _Column(np.int64)
        self._synced = 0  # root[:_synced] equals the array's

    def roots(self) -> IntArray:
        """:attr:`root` as an array (a view, valid until the next :meth:`extend`)."""
        n = len(self.root)
        if self._synced < n:
            self._array.put(self._synced, self.root[self._synced :])
            self._synced = n
        return self._array.view()

    def extend(self, infos: Iterable[MessageInfo]) -> None:
        """Add the next messages of the list."""
        root, members, call_at = self.root, self.members, self._call_at
        for info in infos:
            i = len(root)
            root.append(i)
            members[i] = [i]
            for rid in info.tool_result_ids:
                j = call_at.get(rid, -1) if rid is not None else self._last_caller
                if j >= 0:
                    self._join(i, j)
            if info.tool_call_ids:
                self._last_caller = i
                for cid in info.tool_call_ids:
                    if cid is not None:
                        call_at[cid] = i

    def _join(self, i: int, j: int) -> None:
        a, b = self.root[i], self.root[j]
        if a == b:
            return
        low, high = (a, b) if a < b else (b, a)
        moved = self.members.pop(high)
        for k in moved:
            self.root[k] = low
        self._synced = min(self._synced, moved[0])
        self.members[low] = sorted(self.members[low] + moved)


class SessionState:
    """One input list, read: per-message facts, token counts and tool units.

    Extended in place when the next input is this one plus new messages. It also keeps
    what :func:`memctx._anatomy.message_fingerprint` looks at (role, ``content``,
    ``tool_calls`` and ``parts`` objects and their sizes) column by column, so the next
    call can check that the old messages are unchanged with a few C-level passes instead
    of one Python call per message.
    """

    def __init__(self) -> None:
        self.messages: list[object] = []
        self.facts: list[MessageFacts] = []
        self.units = UnitMap()
        self._tokens = _Column(np.int64)
        self._keys = _Column(np.int64)
        self._fixed = _Column(np.bool_)
        self._values: dict[str, list[object]] | None = {k: [] for k in _FINGERPRINT_KEYS}
        self._sizes: dict[str, list[int]] = {k: [] for k in _SIZED_KEYS}

    def rebase(self, messages: Sequence[object]) -> None:
        """Take ``messages`` as the dicts of this state's (equal) messages."""
        self.messages = []
        self._values = {k: [] for k in _FINGERPRINT_KEYS}
        self._sizes = {k: [] for k in _SIZED_KEYS}
        self._remember(messages)

    def extend(self, messages: Sequence[object], facts: Sequence[MessageFacts]) -> None:
        self._remember(messages)
        self.facts.extend(facts)
        start = len(self.facts) - len(facts)
        self._tokens.put(start, [f.tokens for f in facts])
        self._keys.put(start, [f.key for f in facts])
        self._fixed.put(start, [f.fixed for f in facts])
        self.units.extend(f.info for f in facts)

    def _remember(self, messages: Sequence[object]) -> None:
        """Keep the messages and their fingerprint columns for :meth:`extended_by`."""
        self.messages.extend(messages)
        if self._values is not None:
            columns = _columns(messages)
            if columns is None:
                self._values = None  # an entry that is not a plain dict: no fast check
            else:
                for key, values in columns.items():
                    self._values[key].extend(values)
                for key in _SIZED_KEYS:
                    self._sizes[key].extend(map(length_hint, columns[key]))

    @property
    def tokens(self) -> IntArray:
        """Per message, its token count (a view, valid until the next :meth:`extend`)."""
        return self._tokens.view()

    @property
    def keys(self) -> IntArray:
        """Per message, :attr:`MessageFacts.key`."""
        return self._keys.view()

    @property
    def fixed(self) -> BoolArray:
        """Per message, :attr:`MessageFacts.fixed`."""
        return self._fixed.view()

    def extended_by(self, messages: Sequence[object]) -> bool:
        """Whether ``messages`` is this state's list, unchanged, plus zero or more messages.

        False also when the quick check cannot tell (an entry that is not a plain dict);
        the caller then reads every message through the per-message cache.
        """
        n = len(self.messages)
        if self._values is None or len(messages) < n:
            return False
        old = messages[:n]
        if not all(map(is_, old, self.messages)):
            return False
        columns = _columns(old)
        if columns is None:
            return False
        for key, values in columns.items():
            if not all(map(is_, values, self._values[key])):
                return False
        return all(list(map(length_hint, columns[k])) == self._sizes[k] for k in _SIZED_KEYS)


_SIZED_KEYS = ("content", "tool_calls", "parts")
_FINGERPRINT_KEYS = ("role", *_SIZED_KEYS)


def _columns(messages: Sequence[object]) -> dict[str, list[object]] | None:
    """Per fingerprinted key, every message's value (None if an entry is not a dict)."""
    try:
        return {k: list(map(dict.get, messages, repeat(k))) for k in _FINGERPRINT_KEYS}  # type: ignore[arg-type]
    except TypeError:  # dict.get on something else than a dict
        return None


class TrimCache:
    """Memory for :func:`memctx._trim.smart_trim` across the turns of one session.

    Pass the same instance on every call. Calls sharing a cache serialise on its lock, so
    one instance may be shared by threads, but one per session is the intended use.

    Like :class:`memctx._anatomy.InfoCache`, a dict edited *in place* inside an unchanged
    block list is not noticed; memctx never edits caller dicts and callers that do should
    pass fresh dicts.

    Attributes:
        hits: Messages found unchanged in the cache, over all calls.
        misses: Messages not found by identity (new dicts, or edited ones).
        reused: Misses whose content was known from another dict (not read again).
        tokenized: Messages tokenized for the BM25 index (each one once while it stays a
            trim candidate).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._entries: dict[int, tuple[object, tuple[int, ...], MessageFacts]] = {}
        self._by_digest: dict[str, MessageFacts] = {}
        self._counter: TokenCount | None = None
        self._keys = count()
        self._state = SessionState()
        self._index = BM25Index()
        self._indexed: IntArray = np.zeros(0, dtype=np.int64)  # sorted keys in the index
        self.hits = 0
        self.misses = 0
        self.reused = 0
        self.tokenized = 0

    def read(self, messages: Sequence[object], count_tokens: TokenCount) -> SessionState:
        """The state of ``messages``, reading only what this cache has not seen.

        The returned object is the cache's own and changes on the next call.
        """
        state = self._state
        if count_tokens == self._counter and state.extended_by(messages):
            # The agent-loop case: last turn's list plus the new messages.
            known = len(state.messages)
            self.hits += known
            new = messages[known:]
            state.extend(new, self._facts(new, count_tokens))
            return state
        facts = self._facts(messages, count_tokens)
        known = len(state.facts)
        if len(facts) >= known and all(map(is_, facts, state.facts)):
            # The same messages (maybe as new dicts of equal content) plus new ones.
            state.rebase(messages[:known])
        else:
            state = self._state = SessionState()  # not an extension: read from scratch
            known = 0
        state.extend(messages[known:], facts[known:])
        if len(self._entries) > max(_MIN_ENTRIES, _STALE_FACTOR * len(messages)):
            keep = {id(m) for m in messages}
            self._entries = {k: e for k, e in self._entries.items() if k in keep}
            live = {id(f) for f in facts}
            self._by_digest = {d: f for d, f in self._by_digest.items() if id(f) in live}
        return state

    def _facts(self, messages: Sequence[object], count_tokens: TokenCount) -> list[MessageFacts]:
        if self._counter is None or count_tokens != self._counter:
            # Token counts under another rule are wrong for this one: start afresh.
            self._entries.clear()
            self._by_digest.clear()
            self._counter = count_tokens
        entries = self._entries
        out: list[MessageFacts] = []
        append = out.append
        hits = 0
        for message in messages:
            fingerprint = (
                message_fingerprint(message) if isinstance(message, Mapping) else _NOT_A_DICT
            )
            entry = entries.get(id(message))
            if entry is not None and entry[0] is message and entry[1] == fingerprint:
                hits += 1
                append(entry[2])
                continue
            facts = self._new_facts(message, count_tokens)
            # Holding the object keeps its id from being reused by another one.
            entries[id(message)] = (message, fingerprint, facts)
            append(facts)
        self.hits += hits
        self.misses += len(out) - hits
        return out

    def _new_facts(self, message: object, count_tokens: TokenCount) -> MessageFacts:
        """Facts for a dict not seen as such: a fresh reading unless its content is known.

        A caller that rebuilds old messages every turn (a pruning step returning copies, a
        reloaded transcript) passes equal content in new dicts; sharing their facts, and so
        their BM25 document, costs a JSON dump instead of a reading and a tokenization.
        """
        if not isinstance(message, Mapping):
            return MessageFacts(next(self._keys), message, int(count_tokens(message)))
        digest = _digest(message)
        facts = self._by_digest.get(digest)
        if facts is None:
            facts = MessageFacts(next(self._keys), message, int(count_tokens(message)))
            self._by_digest[digest] = facts
        else:
            self.reused += 1
        return facts

    def relevance(self, state: SessionState, positions: IntArray, query: str) -> FloatArray:
        """BM25 score / best score of the messages at ``positions``, against ``query``.

        The index is first brought to hold exactly those messages, so IDF and average
        length are the candidate set's. All zeros when nothing matches the query.
        """
        keys = state.keys[positions]
        wanted = np.unique(keys)
        stale = np.setdiff1d(self._indexed, wanted, assume_unique=True)
        for key in stale.tolist():
            self._index.remove(key)
        new = np.flatnonzero(~np.isin(keys, self._indexed))
        if len(new):
            added: dict[int, MessageFacts] = {}
            for p in positions[new].tolist():
                added.setdefault(state.facts[p].key, state.facts[p])
            self._index.add_many((k, tokenize(index_text(f.info))) for k, f in added.items())
            self.tokenized += len(added)
        self._indexed = wanted
        terms = tokenize(query)
        if not terms:
            return np.zeros(len(keys), dtype=np.float64)
        return self._index.query(terms).normalized(keys.tolist())


def _digest(message: Mapping[str, Any]) -> str:
    try:
        raw = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # keys of mixed types, circular references
        raw = repr(message)
    return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class KnownInfos(InfoCache):
    """An :class:`InfoCache` answering from readings made earlier in the same call.

    Pairing repair reads every message it is given; the trim has just read them all, so
    this hands those readings over by identity instead of fingerprinting each message
    again. Only valid while the messages are alive and unedited, i.e. within one call.
    """

    def __init__(self, known: Mapping[int, MessageInfo]) -> None:
        super().__init__(max_entries=1)
        self._known = known

    def info(self, message: object) -> MessageInfo:
        found = self._known.get(id(message))
        return found if found is not None else inspect_message(message)

    def infos(self, messages: Sequence[object]) -> list[MessageInfo]:
        return [self.info(m) for m in messages]
