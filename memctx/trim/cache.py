"""What smart trim knows about a session, kept from turn to turn, and its BM25 relevance.

An agent loop resends its whole history every turn, so the runtime calls smart trim on
every turn with about 2,000 messages, nearly all of them the very dicts of the turn before.
:class:`TrimCache` makes a turn cost what is new in it:

- **Per message dict** (keyed by identity, checked with
  :func:`memctx.messages.anatomy.message_fingerprint`): its reading, token count and static flags.
  A dict seen before costs a fingerprint and a lookup.
- **Per input**: the last input's per-message arrays and its tool units
  (:class:`memctx.messages.ToolUnits`). When the next input is the last one plus new
  messages (checked by identity of the per-message facts), only the new messages are added.
- **One BM25 index** (:class:`memctx.retrieval.bm25.BM25Index`) holding exactly the messages that
  were trim candidates last time. Candidates change by a few messages a turn (new ones
  leave the protected tail), so syncing adds and removes a few documents and only those are
  tokenized; IDF is over the candidate set, as the seed's "index of non-protected messages"
  asks. Scoring is the index's numpy pass over the query terms' postings.

The per-message facts and the per-input state live in :mod:`memctx.trim.state`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from itertools import count
from operator import is_
from typing import Any

import numpy as np

from memctx.messages import MessageInfo, blocks_token_text, message_fingerprint
from memctx.retrieval import BM25Index, in_sorted, unique_keys
from memctx.text import tokenize

from .state import BoolArray, FloatArray, IntArray, MessageFacts, SessionState

__all__ = [
    "BoolArray",
    "FloatArray",
    "IntArray",
    "MessageFacts",
    "SessionState",
    "TrimCache",
    "index_text",
]

TokenCount = Callable[[object], int]

# Stale entries (dicts no longer in the input, e.g. after a compaction replaced the history)
# are dropped once the cache holds more than this many times the current input.
_STALE_FACTOR = 2
_MIN_ENTRIES = 4096
_NOT_A_DICT = (-1,)  # the fingerprint of a non-dict entry: its reading never changes


_INDEX_SIDE = 32_768  # characters of a message's head and of its tail that BM25 reads


def index_text(info: MessageInfo) -> str:
    """The text BM25 sees for a message: everything that costs tokens.

    Tool names and inputs are included: a ``read`` of ``src/payment/webhook.ts`` is
    evidence about webhooks even when its result is long gone. Thinking is included too;
    it is where an assistant names what it is working on.

    A text over ``2 x _INDEX_SIDE`` characters is read as its head and tail only: scoring a
    multi-MB tool output against a short query by every word cost seconds per turn, and its
    opening and closing lines (the command, the summary or error at the end) carry what the
    query can match.
    """
    text = blocks_token_text(info.blocks)
    if len(text) > 2 * _INDEX_SIDE:
        return f"{text[:_INDEX_SIDE]}\n{text[-_INDEX_SIDE:]}"
    return text


class TrimCache:
    """Memory for :func:`memctx.trim.smart.smart_trim` across the turns of one session.

    Pass the same instance on every call. Calls sharing a cache serialise on its lock, so
    one instance may be shared by threads, but one per session is the intended use.

    Like :class:`memctx.messages.anatomy.InfoCache`, a dict edited *in place* inside an unchanged
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
        # Keys are handed out in reading order, so for a history that only grows they are
        # sorted already and the sort inside ``np.unique`` can be skipped.
        ordered = len(keys) < 2 or bool((keys[1:] > keys[:-1]).all())
        wanted = keys if ordered else unique_keys(keys)
        stale = self._indexed[~in_sorted(self._indexed, wanted)]
        for key in stale.tolist():
            self._index.remove(key)
        new = np.flatnonzero(~in_sorted(keys, self._indexed))
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
        return self._index.query(terms).normalized(keys)


def _digest(message: Mapping[str, Any]) -> str:
    try:
        raw = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # mixed keys, cycles, 10**5000, nesting
        try:
            raw = repr(message)
        except (ValueError, RecursionError):  # unreadable: a reading of its own, not shared
            return f"unshared:{id(message)}"
    return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
