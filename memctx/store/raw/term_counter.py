"""Term counts of many segments at once: what a reopen without ``bm25.cache`` spends its time on.

:class:`TermCounter` gives, for a batch of texts, exactly the counts of
:func:`memctx.text.tokenize` of each text (as :class:`~memctx.retrieval.TermCounts`, which
:meth:`~memctx.retrieval.bm25.BM25Index.add_counts` indexes), without tokenizing each text whole.

Why it is exact: no token contains whitespace or an ASCII character other than letters,
digits and ``_ . / -`` (the property :mod:`memctx.text.keywords`'s fast path rests on), so such a
character only ever separates tokens, and the tokens of a text are the tokens of its
*chunks* (the runs between separators), in order. Any split at separators will do; this one
maps the other ASCII bytes of the UTF-8 text to spaces and splits at ASCII whitespace,
leaving multi-byte characters alone (Unicode spaces and CJK stay inside chunks, which
``tokenize`` then handles itself). ``tests/store/test_raw_store_counts.py`` checks the equality
on every ASCII character and on mixed, CJK and random texts.

Why it is fast: a store's 20,000 segments are ~2 million chunks but only ~50,000 distinct
ones ("error", "src/app.py", "42"). Each distinct chunk is tokenized once and kept as a run
of term ids; a text then costs a ``bytes.translate``, a ``split`` and one dict look-up per
chunk, all in C, and the batch's counts come from a few numpy operations (one sort). That
also skips the per-token vocabulary look-up that indexing token lists needs.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import chain, filterfalse
from typing import Final

import numpy as np

from memctx.retrieval import TermCounts, ranges
from memctx.text import tokenize

__all__ = ["SEPARATORS", "TermCounter"]

_TOKEN_BYTES: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-"
SEPARATORS: Final = bytes(b for b in range(128) if b not in _TOKEN_BYTES)
"""The ASCII characters that never occur inside a token (turned into spaces before splitting)."""
_TO_SPACE: Final = bytes.maketrans(SEPARATORS, b" " * len(SEPARATORS))


class _TermIds(dict[str, int]):
    """term -> its index in ``terms``; a new term is appended."""

    def __init__(self, terms: list[str]) -> None:
        super().__init__()
        self.terms = terms

    def __missing__(self, term: str) -> int:
        tid = self[term] = len(self.terms)
        self.terms.append(term)
        return tid

    def add_new(self, tokens: list[str]) -> None:
        """Give the new terms among ``tokens`` ids in order of first appearance (what
        looking them up in turn does), without a Python call per term."""
        new = list(filterfalse(self.__contains__, dict.fromkeys(tokens)))
        self.update(zip(new, range(len(self.terms), len(self.terms) + len(new)), strict=True))
        self.terms.extend(new)


# Joins new chunks for one tokenize call. Spaces make it a chunk of its own and its one
# token marks where each chunk's tokens end; a chunk whose tokens include it (it is an
# ordinary word) makes the count come out wrong, and those chunks are tokenized one by one.
_MARK: Final = "qmemctxchunkboundaryq"
_JOIN: Final = f" {_MARK} "
_SUB_BATCH: Final = 256  # texts whose chunks are held at a time


class _ChunkIds(dict[bytes, int]):
    """chunk -> chunk id. A chunk not seen before gets a placeholder, ``-1 - i`` for the
    ``i``-th new chunk, and waits in ``pending`` until :meth:`TermCounter._learn`."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[bytes] = []

    def __missing__(self, chunk: bytes) -> int:
        self.pending.append(chunk)
        cid = self[chunk] = -len(self.pending)
        return cid


class TermCounter:
    """Counts the terms of batches of texts with a vocabulary and chunk memory shared
    between the batches (one counter per load: its memory goes with it).

    Attributes:
        terms: The terms seen so far; :class:`TermCounts` of this counter index into it.
    """

    def __init__(self) -> None:
        self.terms: list[str] = []
        self._term_ids = _TermIds(self.terms)
        self._chunk_ids = _ChunkIds()
        # The term ids of chunk c are _flat[_starts[c] : _starts[c + 1]].
        self._starts = array("q", [0])
        self._flat = array("q")

    def counts(self, texts: Sequence[str]) -> TermCounts:
        """Per text, the counts of ``tokenize(text)``, in ``texts`` order."""
        find = self._chunk_ids.__getitem__
        per_text = np.empty(len(texts), dtype=np.int64)
        parts = []
        # A few hundred texts at a time: their chunks are ~30,000 small objects alive
        # together (a whole batch's 200,000 would raise the process's peak memory by
        # ~30 MB for good). One dict look-up per chunk, in C.
        for lo in range(0, len(texts), _SUB_BATCH):
            pieces = [
                text.encode("utf-8", "surrogatepass").translate(_TO_SPACE).split()
                for text in texts[lo : lo + _SUB_BATCH]
            ]
            sizes = list(map(len, pieces))
            per_text[lo : lo + len(pieces)] = sizes
            chunks = chain.from_iterable(pieces)
            parts.append(np.fromiter(map(find, chunks), np.int64, sum(sizes)))
            del pieces, chunks
        chunk_ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        del parts
        if self._chunk_ids.pending:
            first = self._learn(self._chunk_ids.pending)
            self._chunk_ids.pending = []
            new = chunk_ids < 0
            chunk_ids[new] = first - 1 - chunk_ids[new]  # placeholder -1 - i: id first + i
        # Views of the arrays' buffers, dropped before the next batch appends to them.
        starts = np.frombuffer(self._starts, dtype=np.int64)
        flat = np.frombuffer(self._flat, dtype=np.int64)
        first_term = starts[chunk_ids]
        n_terms_of = starts[chunk_ids + 1] - first_term
        tokens = flat[ranges(first_term, n_terms_of)]
        del starts, flat
        n = len(texts)
        doc = np.repeat(np.repeat(np.arange(n, dtype=np.int64), per_text), n_terms_of)
        lengths = np.bincount(doc, minlength=n)
        n_terms = max(len(self.terms), 1)
        # One sort gives each text's distinct terms (ascending) and their counts.
        pairs, tf = np.unique(doc * n_terms + tokens, return_counts=True)
        pair_doc, term = np.divmod(pairs, n_terms)
        return TermCounts(self.terms, lengths, np.bincount(pair_doc, minlength=n), term, tf)

    def _learn(self, chunks: list[bytes]) -> int:
        """Tokenize new distinct ``chunks`` (in order of first appearance, so that term ids
        are deterministic) and give them the next chunk ids; return the first of those.

        One call to ``tokenize`` for all of them: a call per chunk costs more than most
        chunks' tokens.
        """
        first = len(self._starts) - 1
        self._chunk_ids.update(zip(chunks, range(first, first + len(chunks)), strict=True))
        texts = [c.decode("utf-8", "surrogatepass") for c in chunks]
        tokens = tokenize(_JOIN.join(texts))
        self._term_ids.add_new(tokens)
        ids = np.fromiter(map(self._term_ids.__getitem__, tokens), np.int64, len(tokens))
        ends = np.flatnonzero(ids == self._term_ids[_MARK])
        if len(ends) != len(chunks) - 1:  # the mark is also a token of some chunk
            for text in texts:
                self._flat.extend(map(self._term_ids.__getitem__, tokenize(text)))
                self._starts.append(len(self._flat))
            return first
        # Chunk i's tokens lie between marks i - 1 and i; drop the marks, shift the ends.
        keep = np.ones(len(ids), dtype=np.bool_)
        keep[ends] = False
        bounds = np.append(ends - np.arange(len(ends)), len(ids) - len(ends))
        base = len(self._flat)
        self._flat.frombytes(ids[keep].tobytes())
        self._starts.frombytes((base + bounds).tobytes())
        return first
