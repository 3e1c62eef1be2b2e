"""The one tokenizer family for keyword search (BM25, knowledge store, memory files).

Coding sessions mix English prose, identifiers, paths, error lines and Chinese. The tokens:

- Latin/digit runs are lower-cased words. Identifiers also yield their sub-tokens
  (``parseConfigFile`` -> ``parseconfigfile``, ``parse``, ``config``, ``file``;
  ``max_history_share`` -> the whole name and ``max``, ``history``, ``share``), so a
  question that says "history share" finds ``maxHistoryShare``.
- Paths and dotted names keep their parts (``src/payment/webhook.ts`` -> ``src``, ``payment``,
  ``webhook``, ``ts``) and the file name (``webhook.ts``).
- CJK text has no spaces: each run yields its overlapping character bigrams (a single
  character stays a unigram), the standard choice of Lucene's CJK analyzer.
- A short English stop-word list is dropped (BM25's IDF already discounts common words; the
  list only keeps the index small). Numbers are kept: ports, versions and counts are facts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from itertools import chain
from typing import Final

__all__ = ["STOPWORDS", "TOKENIZER_VERSION", "is_cjk", "tokenize", "tokenize_unique"]

# Bump whenever tokenize() gives different tokens for some text: saved term counts
# (the raw store's bm25.cache) carry it, and counts of another version are not used.
TOKENIZER_VERSION: Final = 1

STOPWORDS = frozenset(
    """a an and are as at be but by for from has have he her his i if in into is it its me my
    of on or our she so than that the their them then there these they this to was we were
    what when where which who will with would you your do does did not no yes ok""".split()
)

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # compatibility ideographs
)
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[A-Za-z0-9_]+(?:[./\-][A-Za-z0-9_]+)*")
_RUN_RE = re.compile(r"[A-Za-z0-9_]+(?:[./\-][A-Za-z0-9_]+)*")  # _TOKEN_RE's Latin branch
_CJK_RE = re.compile(rf"[{_CJK}]")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PART_RE = re.compile(r"[./\-_]+")


def is_cjk(text: str) -> bool:
    """Whether ``text`` contains any CJK character."""
    return _CJK_RE.search(text) is not None


def run_tokens(word: str) -> tuple[str, ...]:
    """A Latin run and its parts: whole, path/dotted parts, identifier sub-tokens."""
    # Most runs are plain lower-case words or numbers: they have no parts, and the general
    # rules below would return the same single token (or none, for a stop word).
    if (word.isalpha() and word.islower()) or word.isdigit():
        return () if word in STOPWORDS else (word,)
    out: list[str] = []
    lowered = word.lower()
    if lowered not in STOPWORDS:
        out.append(lowered)
    parts = [p for p in _PART_RE.split(word) if p]
    if len(parts) > 1 and ("/" in word or "." in word):
        last = word.rsplit("/", 1)[-1].lower()
        if last != lowered and "." in last:
            out.append(last)  # the file name of a path
    for part in parts:
        pieces = _CAMEL_RE.findall(part)
        if len(parts) > 1 or len(pieces) > 1:
            candidates = [part.lower()] if len(parts) > 1 else []
            candidates += [p.lower() for p in pieces] if len(pieces) > 1 else []
            out.extend(c for c in candidates if len(c) > 1 and c not in STOPWORDS and c != lowered)
    return tuple(out)


cached_word_tokens = lru_cache(maxsize=65_536)(run_tokens)


def _cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize_general(text: str, word_tokens: Callable[[str], tuple[str, ...]]) -> list[str]:
    """The definition of :func:`tokenize`: one regex match at a time."""
    out: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        run = match.group()
        if _CJK_RE.match(run):
            out.extend(_cjk_tokens(run))
        else:
            out.extend(word_tokens(run))
    return out


# The fast path. No token contains whitespace or an ASCII character other than letters,
# digits and ``_ . / -``, so the tokens of a text are the tokens of its whitespace-separated
# chunks once those other characters are turned into spaces, in order. Chunks repeat far
# more than texts do ("error", "src/app.py", "42"), so a chunk -> tokens cache answers most
# of them, and the per-chunk work runs in C (translate, split, dict look-ups, chain); the
# general path pays a regex match and a Python call per word instead (~3x slower).
_TOKEN_ASCII = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-")
_TO_SPACE = str.maketrans({chr(c): " " for c in range(128) if chr(c) not in _TOKEN_ASCII})
CHUNK_CACHE_MAX = 65_536  # entries; ~10 MB when full, then it starts afresh


class _ChunkCache(dict[str, tuple[str, ...]]):
    """chunk -> its tokens; a miss is computed by the general path and remembered."""

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        if len(self) >= CHUNK_CACHE_MAX:
            # Clearing beats an LRU here: hits stay a plain C dict look-up, and the words
            # that matter come back at once. (Unique chunks, e.g. request ids, fill it.)
            self.clear()
        if _RUN_RE.fullmatch(chunk):  # the usual miss: one word, number or path
            tokens = self[chunk] = run_tokens(chunk)
        else:
            tokens = self[chunk] = tuple(tokenize_general(chunk, run_tokens))
        return tokens


chunk_cache = _ChunkCache()


def tokenize(text: str) -> list[str]:
    """Keyword tokens of ``text`` in order, repeats kept (BM25 needs term frequencies)."""
    if not text:
        return []
    if not text.isascii() and _CJK_RE.search(text) is not None:
        # CJK runs have no spaces: a whole sentence is one chunk, rarely seen twice.
        return tokenize_general(text, cached_word_tokens)
    chunks = text.translate(_TO_SPACE).split()
    return list(chain.from_iterable(map(chunk_cache.__getitem__, chunks)))


def tokenize_unique(text: str) -> list[str]:
    """Distinct tokens of ``text`` in first-seen order (for matching and thresholds)."""
    return list(dict.fromkeys(tokenize(text)))
