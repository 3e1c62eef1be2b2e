"""English stemming for keyword search: the Porter stemmer, as Lucene's ``EnglishAnalyzer``.

Keyword search matches words exactly, so a question about "camping" misses a message that
says "we camped", and "paintings" misses "painting". Stemming both sides to a common stem
(``camp``, ``paint``) is the standard remedy of text retrieval; Porter's algorithm (M. F.
Porter, "An algorithm for suffix stripping", 1980) is the one Lucene's English analyzer uses,
chosen here for that reason rather than by measurement. This is a port of Porter's reference
implementation, with its two departures from the paper that Lucene keeps too (``-bli`` ->
``-ble``, ``-logi`` -> ``-log``).

Only plain lower-case English words are stemmed: numbers, identifiers with digits or
underscores, file names, paths and CJK bigrams are facts to match exactly and pass through.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

__all__ = ["porter_stem", "stem_tokens"]

_VOWELS = frozenset("aeiou")

# Steps 2-4: (suffix, replacement); the longest suffix that ends the word is the only one
# tried (the reference implementation's order within each group).
_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _by_length(rules: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(rules, key=lambda rule: -len(rule[0])))


_STEP2_RULES = _by_length(_STEP2)
_STEP3_RULES = _by_length(_STEP3)
_STEP4_RULES = _by_length((suffix, "") for suffix in _STEP4)


def _consonant(word: str, i: int) -> bool:
    """Porter's consonant: not a vowel, and ``y`` only when it follows a vowel (or starts)."""
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """``m`` in ``[C](VC)^m[V]``: the number of vowel-consonant sequences."""
    m, previous_vowel = 0, False
    for i in range(len(stem)):
        vowel = not _consonant(stem, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not ``w``, ``x`` or ``y`` (hop, not snow)."""
    n = len(word)
    return (
        n >= 3
        and _consonant(word, n - 1)
        and not _consonant(word, n - 2)
        and _consonant(word, n - 3)
        and word[-1] not in "wxy"
    )


def _step1(word: str) -> str:
    if word.endswith(("sses", "ies")):  # -sses -> -ss, -ies -> -i
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = _step1b_tidy(word[: -len(suffix)])
                break
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


def _step1b_tidy(stem: str) -> str:
    """After removing -ed/-ing: restore an ``e`` or undouble a consonant (hop(p)ing)."""
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if _double_consonant(stem) and stem[-1] not in "lsz":
        return stem[:-1]
    if _measure(stem) == 1 and _cvc(stem):
        return stem + "e"
    return stem


def _replace(word: str, rules: tuple[tuple[str, str], ...], min_measure: int) -> str:
    for suffix, replacement in rules:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > min_measure and (
                suffix != "ion" or stem.endswith(("s", "t"))  # step 4: -sion, -tion only
            ):
                return stem + replacement
            return word
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        m = _measure(word[:-1])
        if m > 1 or (m == 1 and not _cvc(word[:-1])):
            word = word[:-1]
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


@lru_cache(maxsize=65_536)
def porter_stem(word: str) -> str:
    """The Porter stem of a lower-case English word (words of 1-2 letters unchanged)."""
    if len(word) <= 2:
        return word
    word = _step1(word)
    word = _replace(word, _STEP2_RULES, 0)
    word = _replace(word, _STEP3_RULES, 0)
    word = _replace(word, _STEP4_RULES, 1)
    return _step5(word)


def stem_tokens(tokens: Iterable[str]) -> list[str]:
    """Stem the plain lower-case ASCII words among ``tokens``; everything else unchanged."""
    return [porter_stem(t) if t.isascii() and t.isalpha() and t.islower() else t for t in tokens]
