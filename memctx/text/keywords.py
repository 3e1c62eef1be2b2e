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
  list only keeps the index small), and with it every English question word: a question
  asks with *how* or *why*, an answer rarely contains them, so matching them only adds
  noise. Numbers are kept: ports, versions and counts are facts.
- Plain English words are stemmed with Porter's algorithm (:mod:`.stem`), so "camping"
  finds "we camped" and "paintings" finds "painting"; numbers, identifiers (``parseConfig``,
  ``max_history``) and their parts, file names, paths and CJK pass through unstemmed: they
  are names, matched as written. Measured on
  LoCoMo through the recall path (``make bench``), stemming and question words together
  lift evidence recall in every conversation, hash and transformer alike.

``tokenize(text, stem=False)`` gives the same tokens unstemmed, for features that want the
surface form (the hash embedder hashes words and their character n-grams itself).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from itertools import chain
from typing import Final

from .stem import stem_tokens

__all__ = [
    "CJK_CHARS",
    "CJK_RE",
    "QUESTION_WORDS",
    "STOPWORDS",
    "TOKENIZER_VERSION",
    "is_cjk",
    "line_token_sets",
    "tokenize",
    "tokenize_unique",
    "word_runs",
]

# Bump whenever tokenize() gives different tokens for some text: saved term counts
# (the raw store's bm25.cache) carry it, and counts of another version are not used.
# 2: Porter stemming and question words as stop words. 3: plain words stemmed, names not.
TOKENIZER_VERSION: Final = 3

# The English interrogatives not already common stop words.
QUESTION_WORDS: Final = frozenset({"how", "why", "whom", "whose"})
STOPWORDS: Final = (
    frozenset(
        """a an and are as at be but by for from has have he her his i if in into is it its me
        my of on or our she so than that the their them then there these they this to was we
        were what when where which who will with would you your do does did not no yes ok""".split()
    )
    | QUESTION_WORDS
)

# The CJK character ranges, for a regex character class: every module that asks "is this
# Chinese, Japanese or Korean text?" uses these (via is_cjk, CJK_RE or CJK_CHARS), and no
# module spells a range of its own (tests/text/test_keywords.py checks the sources).
CJK_CHARS: Final = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # compatibility ideographs
)
# One CJK character: to find or count them (``len(CJK_RE.findall(text))``).
CJK_RE: Final = re.compile(rf"[{CJK_CHARS}]")
_TOKEN_RE = re.compile(rf"[{CJK_CHARS}]+|[A-Za-z0-9_]+(?:[./\-][A-Za-z0-9_]+)*")
_RUN_RE = re.compile(r"[A-Za-z0-9_]+(?:[./\-][A-Za-z0-9_]+)*")  # _TOKEN_RE's Latin branch
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PART_RE = re.compile(r"[./\-_]+")


def is_cjk(text: str) -> bool:
    """Whether ``text`` contains any CJK character."""
    return CJK_RE.search(text) is not None


def word_runs(text: str) -> list[str]:
    """The runs :func:`tokenize` cuts ``text`` into, in order and as written.

    A run is a CJK run (``数据库``) or a Latin run: a word, number or identifier, with paths
    and dotted or hyphenated names kept whole (``src/app.py``, ``v1.2.3``, ``ci-pipeline``).
    Anything else (spaces, punctuation, letters outside ASCII and CJK) separates runs. Each
    token of :func:`tokenize` comes from one run, so ``tokenize(text)`` is the tokens of the
    runs in turn; a caller that wants whole words without identifier sub-tokens starts here.
    """
    return _TOKEN_RE.findall(text)


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


def stemmed_run_tokens(word: str) -> tuple[str, ...]:
    """What :func:`tokenize` makes of one Latin run: :func:`run_tokens`, stemmed when the run
    is a plain word.

    Only a word is stemmed ("Validation", "camping"); an identifier, a path or a dotted
    name and their parts are names to match as written ("validateProfile" keeps
    ``validate``): stemming them made "which validation library?" match every
    ``validate*`` function of a code base, and the line that answers it drowned (measured on
    the eval's ``secrets`` suite).
    """
    tokens = run_tokens(word)
    if len(tokens) == 1 and word.isalpha() and len(_CAMEL_RE.findall(word)) == 1:
        return tuple(stem_tokens(tokens))
    return tokens


cached_word_tokens = lru_cache(maxsize=65_536)(stemmed_run_tokens)
cached_surface_tokens = lru_cache(maxsize=65_536)(run_tokens)


def _cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize_general(text: str, word_tokens: Callable[[str], tuple[str, ...]]) -> list[str]:
    """The definition of :func:`tokenize`: one regex match at a time."""
    out: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        run = match.group()
        if CJK_RE.match(run):
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

    def __init__(self, word_tokens: Callable[[str], tuple[str, ...]]) -> None:
        super().__init__()
        self._word_tokens = word_tokens

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        if len(self) >= CHUNK_CACHE_MAX:
            # Clearing beats an LRU here: hits stay a plain C dict look-up, and the words
            # that matter come back at once. (Unique chunks, e.g. request ids, fill it.)
            self.clear()
        if _RUN_RE.fullmatch(chunk):  # the usual miss: one word, number or path
            tokens = self[chunk] = self._word_tokens(chunk)
        else:
            tokens = self[chunk] = tuple(tokenize_general(chunk, self._word_tokens))
        return tokens


chunk_cache = _ChunkCache(cached_word_tokens)
surface_chunk_cache = _ChunkCache(cached_surface_tokens)


def tokenize(text: str, *, stem: bool = True) -> list[str]:
    """Keyword tokens of ``text`` in order, repeats kept (BM25 needs term frequencies).

    Args:
        text: Any text.
        stem: Stem plain English words (the index terms). ``False`` keeps the surface form.
    """
    if not text:
        return []
    if not text.isascii() and CJK_RE.search(text) is not None:
        # CJK runs have no spaces: a whole sentence is one chunk, rarely seen twice.
        return tokenize_general(text, cached_word_tokens if stem else cached_surface_tokens)
    chunks = text.translate(_TO_SPACE).split()
    cache = chunk_cache if stem else surface_chunk_cache
    return list(chain.from_iterable(map(cache.__getitem__, chunks)))


def tokenize_unique(text: str, *, stem: bool = True) -> list[str]:
    """Distinct tokens of ``text`` in first-seen order (for matching and thresholds)."""
    return list(dict.fromkeys(tokenize(text, stem=stem)))


@lru_cache(maxsize=4_096)
def line_token_sets(text: str) -> tuple[frozenset[str], ...]:
    """The distinct :func:`tokenize` tokens of each line of ``text`` (split on ``\n``).

    For the searches that ask which line of an archived tool output holds the query's words
    (:mod:`memctx.retrieval.coverage`, the recall block's excerpts): the same outputs come
    up call after call, so their lines are tokenized once (the texts are the archive's own
    strings; about 4,096 chunks of 400 tokens are a few MB).
    """
    return tuple(frozenset(tokenize(line)) for line in text.split("\n"))
