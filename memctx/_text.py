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
from functools import lru_cache

__all__ = ["STOPWORDS", "is_cjk", "tokenize", "tokenize_unique"]

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
_CJK_RE = re.compile(rf"[{_CJK}]")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PART_RE = re.compile(r"[./\-_]+")


def is_cjk(text: str) -> bool:
    """Whether ``text`` contains any CJK character."""
    return _CJK_RE.search(text) is not None


@lru_cache(maxsize=65_536)
def _word_tokens(word: str) -> tuple[str, ...]:
    """A Latin run and its parts: whole, path/dotted parts, identifier sub-tokens."""
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


def _cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str) -> list[str]:
    """Keyword tokens of ``text`` in order, repeats kept (BM25 needs term frequencies)."""
    if not text:
        return []
    out: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        run = match.group()
        if _CJK_RE.match(run):
            out.extend(_cjk_tokens(run))
        else:
            out.extend(_word_tokens(run))
    return out


def tokenize_unique(text: str) -> list[str]:
    """Distinct tokens of ``text`` in first-seen order (for matching and thresholds)."""
    return list(dict.fromkeys(tokenize(text)))
