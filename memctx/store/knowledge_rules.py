"""Knowledge facts and the rule-based (no-LLM) update decision.

The rule-based :func:`decide_update` (the no-LLM path) compares a new fact with the most
similar live facts of the same type. ``A`` and ``B`` are the two texts' *terms*: the shared
tokenizer's words (:func:`memctx.text.word_runs`, lower-cased, stop words dropped, CJK runs as
their bigrams) without identifier sub-tokens, which would otherwise dilute the overlap
(``PostgreSQL`` is one term, not ``postgre`` + ``sql``), and unstemmed. Like the tokenizer
that picks the candidate facts, they see only ASCII letters, digits and CJK as word
characters (``café`` is the term ``caf``).

1. same normalised text (case, punctuation and spacing ignored) -> NONE;
2. overlap of the content terms (frame words aside, see below) ``>= 0.5`` of the smaller
   text, with a shared non-numeric term, the *same subject*, and either a *polarity* change (a
   negation such as "not"/"never"/"without"/"未" in one text only) or a *changed value* on
   both sides (each text has a value absent from the other) -> SUPERSEDE. Values are words
   with a digit (ports, versions, IPs), paths and dotted names, quoted strings, the right side
   of ``key=value`` / ``key: value``, and capitalised names that do not open a sentence
   (``PostgreSQL``, ``Docker``, ``AWS``). *Same subject*: the two texts have the same naming
   words, the terms that are neither a value's nor a frame word, so "auth service listens on
   port 8001" never supersedes "billing service listens on port 8002" (nor "auth service
   replica ..."), however alike their shape; and the values differ in one place only, not at
   the very start (``AuthService runs on node-1`` vs ``BillingService runs on node-2``: two
   values changed, one of which names the thing). *Frame words* say how a fact is put, never
   what it is about: verbs of setting, choosing, changing and stating ("set", "switch",
   "use", "decided"), modals, negations and discourse or time adverbs ("actually", "now"),
   a fixed list of general English compared by stem, so "Let's set the API port to 8080"
   and "Actually, switch the API port to 9090" are about the same thing;
3. a naming word on each side that the other lacks -> ADD (another thing, however alike);
   Jaccard ``|A & B| / |A | B| >= 0.9`` -> NONE; ``A`` a strict subset of ``B`` and the new
   text longer -> UPDATE (more detail); ``B`` a subset of ``A`` -> NONE (already known);
4. otherwise ADD.

Limits, by construction of a lexical rule: a replacement phrased with no shared words ("Use
PostgreSQL instead of MySQL" then "Switched to SQLite for tests") is an ADD, and so is one
worded with other naming words ("Heads-up: X is V1 in every environment" then "Small but
important change: X is V2": both stay live, the newer found first); things told apart only by
a value ("worker 3 is healthy" vs "worker 5 is healthy") look like one thing whose value
changed; a lower-case value outside ``key=value`` (``use postgres`` -> ``use sqlite``) or a
capitalised name opening a sentence is not seen as a value, so only the subset/duplicate rules
apply; word order is ignored (``A instead of B`` vs ``B instead of A`` is a duplicate); values
written only in CJK characters are not detected. The LLM path replaces this rule where an LLM
is available.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum
from typing import Any, Literal

from memctx.text import STOPWORDS, is_cjk, tokenize, word_runs

__all__ = [
    "Fact",
    "FactType",
    "NewFact",
    "UpdateDecision",
    "UpdateOp",
    "decide_update",
    "least_trusted",
    "origin_trust",
    "required_matches",
]

_CANDIDATES = 8  # live facts a new fact is compared with, most similar first

UpdateOp = Literal["ADD", "UPDATE", "SUPERSEDE", "NONE"]


class FactType(StrEnum):
    DECISION = "decision"
    IMPLEMENTATION = "implementation"
    CONFIG = "config"
    ISSUE = "issue"
    TASK_STATE = "task_state"
    ARCHITECTURE = "architecture"


@dataclass(frozen=True)
class NewFact:
    """A fact proposed by extraction, before the store gives it an id.

    Raises:
        ValueError: ``type`` is not a :class:`FactType` value or ``content`` is blank.
    """

    type: FactType
    content: str
    context: str = ""
    session_id: str | None = None
    source: tuple[str, ...] = ()
    origin: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", FactType(self.type))
        if not self.content.strip():
            raise ValueError("a fact needs non-blank content")


@dataclass(frozen=True)
class UpdateDecision:
    """What to do with a :class:`NewFact`; ``target_id`` names the fact UPDATE/SUPERSEDE acts on
    (for NONE, the fact that already says it, when known)."""

    op: UpdateOp
    fact: NewFact
    target_id: str | None = None


@dataclass(frozen=True)
class Fact:
    """One stored fact (the latest version of its id)."""

    id: str
    type: FactType
    content: str
    context: str
    timestamp: float
    superseded_by: str | None = None
    session_id: str | None = None
    source: tuple[str, ...] = ()
    origin: str = ""

    @property
    def live(self) -> bool:
        """Whether no newer fact supersedes this one."""
        return self.superseded_by is None

    def to_record(self) -> dict[str, Any]:
        """The ``knowledge.jsonl`` record (optional keys only when set)."""
        rec: dict[str, Any] = {
            "id": self.id,
            "type": self.type.value,
            "content": self.content,
            "context": self.context,
            "timestamp": self.timestamp,
        }
        if self.superseded_by is not None:
            rec["supersededBy"] = self.superseded_by
        if self.session_id is not None:
            rec["sessionId"] = self.session_id
        if self.source:
            rec["source"] = list(self.source)
        if self.origin:
            rec["origin"] = self.origin
        return rec

    @classmethod
    def from_record(cls, rec: object) -> Fact:
        """Parse a record; ``ValueError`` when a field is missing or has the wrong type."""
        if not isinstance(rec, dict):
            raise ValueError("record is not an object")
        fid, content, ts = rec.get("id"), rec.get("content"), rec.get("timestamp")
        context, sup, sid = rec.get("context", ""), rec.get("supersededBy"), rec.get("sessionId")
        source, origin = rec.get("source", []), rec.get("origin", "")
        if not (
            isinstance(fid, str)
            and fid
            and isinstance(content, str)
            and isinstance(context, str)
            and isinstance(ts, int | float)
            and not isinstance(ts, bool)
            and math.isfinite(ts)
            and isinstance(sup, str | None)
            and isinstance(sid, str | None)
            and isinstance(source, list)
            and all(isinstance(s, str) for s in source)
            and isinstance(origin, str)
        ):
            raise ValueError("record has a missing or mistyped field")
        kind = FactType(str(rec.get("type")))
        return cls(fid, kind, content, context, float(ts), sup, sid, tuple(source), origin)


def origin_trust(origin: str) -> int:
    """How far a fact's ``origin`` is trusted: the user's own words most, an assistant's
    next, a tool's output (text anyone could have put there) or an unknown source least."""
    return 2 if origin == "user" else 1 if origin == "assistant" else 0


def least_trusted(origins: Iterable[str]) -> str:
    """The least-trusted of ``origins`` (ties: the first in sorted order, so the same set
    gives the same answer); ``""`` (unknown) when there is none."""
    return min(origins, key=lambda o: (origin_trust(o), o), default="")


def required_matches(distinct_query_tokens: int) -> int:
    """The seed's adaptive match threshold: how many distinct query tokens a fact must contain.

    ``q <= 2``: all; ``q <= 8``: half, rounded up; ``q > 8``: ``min(ceil(0.3 q), 6)``, so a long
    query still finds a fact that shares its few key words.
    """
    q = distinct_query_tokens
    if q <= 2:
        return q
    if q <= 8:
        return math.ceil(q / 2)
    return min(math.ceil(0.3 * q), 6)


# --- the rule-based update decision --------------------------------------------------------

_NEGATIONS = frozenset({"not", "no", "never", "without", "cannot", "none", "nothing", "nor"})
_CJK_NEGATIONS = ("不", "没", "未", "无")
# English words with their apostrophes, for the negation test alone: the keyword tokenizer
# splits "don't" at the apostrophe and drops "not" and "no" as stop words.
_NEGATION_WORD_RE = re.compile(r"[a-z']+")
# Value candidates, a name pattern rather than the tokenizer's words (see _values): a run
# starting with an ASCII letter, digit or "_" that may hold any word character and "./-",
# repeated or not, and may end in "/", so a directory (``dist/``) is a path value; the
# tokenizer's Latin runs would cut that "/" and make ``dist`` a plain word.
_VALUE_CANDIDATE_RE = re.compile(r"[A-Za-z0-9_](?:[\w./\-]*[\w/])?")
_QUOTED_RE = re.compile(r"([\"'`])([^\"'`\n]{1,80})\1")
_KEY_VALUE_RE = re.compile(r"\b[A-Za-z_][\w.\-]*\s*[=:]\s*([^\s,;]+)")
_SENTENCE_END = frozenset(".!?:;\n")
# Frame words: verbs of setting, choosing, changing and stating, modals and discourse or time
# adverbs. They say how a fact is put ("switch X to V", "X is now V", "actually"), never which
# thing it is about, so they are not naming words (rule 2). General English, compared by stem;
# adjectives ("new", "old", "current") are left out, as they can name a thing ("the old API").
_FRAME_WORDS = """
    set sets setting change changed changes changing switch switched move moved moving migrate
    migrated replace replaced use used uses using adopt adopted pick picked choose chose chosen
    decide decided decision agree agreed commit committed committing standardise standardize
    settle settled prefer preferred go goes going went gone become becomes became turn turned
    keep keeps kept make makes made update updated revert reverted override overriding
    overridden correct corrected correction configure configured put stay stays remain remains
    note noted record said say says confirm confirmed mention mentioned remember know found
    turns turned apparently basically honestly essentially officially structurally
    architecturally never without cannot nor none isn aren wasn weren doesn don didn won
    wouldn shouldn couldn hasn haven hadn
    should must can could might may shall need needs been being am let s t ll ve re d
    actually now currently today tomorrow yesterday earlier later previously before after
    anymore instead again still already yet forward onward onwards henceforth plan planned
    final finally call heads fyi btw please just also okay well right here over back since
    until from going
"""
_FRAME_STEMS = frozenset(t for w in _FRAME_WORDS.split() for t in tokenize(w) or [w])
# The duplicate test's normaliser, not a word definition: every run of non-word characters
# (punctuation, spacing, "_") becomes one space, in any script, so two texts that differ only
# in case, punctuation or spacing compare equal.
_NORMALISE_RE = re.compile(r"[\W_]+")


def _sequence(text: str) -> list[str]:
    """Word-level terms (see the module docstring) in text order, repeats kept."""
    out: list[str] = []
    for run in word_runs(text):
        if is_cjk(run):
            out += tokenize(run)  # a CJK run's bigrams
        elif (word := run.lower()) not in STOPWORDS:
            out.append(word)
    return out


def _terms(text: str) -> set[str]:
    """Word-level terms (see the module docstring): the tokenizer's runs, whole."""
    return set(_sequence(text))


@functools.lru_cache(maxsize=8192)
def _is_frame(term: str) -> bool:
    """Whether ``term`` is a frame word (:data:`_FRAME_STEMS`), compared by its stem."""
    stems = tokenize(term)
    return bool(stems) and all(s in _FRAME_STEMS for s in stems)


def _naming(seq: list[str], value_terms: set[str]) -> set[str]:
    """The naming words of a text's terms: neither a value's nor a frame word."""
    return {t for t in seq if t not in value_terms and not _is_frame(t)}


def _same_subject(a_seq: list[str], b_seq: list[str], va: set[str], vb: set[str]) -> bool:
    """Whether two texts are about the same thing (see the module docstring, rule 2).

    ``a_seq`` / ``b_seq`` are the texts' terms in order, ``va`` / ``vb`` the terms of their
    values.
    """
    if _naming(a_seq, va) != _naming(b_seq, vb):
        return False  # "auth service" vs "billing service", or vs "auth service replica"
    swaps = 0
    opcodes = SequenceMatcher(None, a_seq, b_seq, autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in opcodes:
        if op == "replace" and va.intersection(a_seq[i1:i2]) and vb.intersection(b_seq[j1:j2]):
            if i1 == 0 and j1 == 0:
                return False  # the value swapped first names the thing ("AuthService ...")
            swaps += 1
    return swaps <= 1  # two values changed: one of them may name the thing


def _normalised(text: str) -> str:
    return _NORMALISE_RE.sub(" ", text.lower()).strip()


def _negated(text: str) -> bool:
    words = _NEGATION_WORD_RE.findall(text.lower())
    return any(w in _NEGATIONS or w.endswith("n't") for w in words) or any(
        c in text for c in _CJK_NEGATIONS
    )


def _values(text: str) -> set[str]:
    """The value-like words of ``text`` (see the module docstring), lower-cased."""
    out = {m.group(2).strip().lower() for m in _QUOTED_RE.finditer(text)}
    out |= {m.group(1).strip(".,").lower() for m in _KEY_VALUE_RE.finditer(text)}
    for m in _VALUE_CANDIDATE_RE.finditer(text):
        word = m.group()
        before = text[: m.start()].rstrip()
        opens_sentence = not before or before[-1] in _SENTENCE_END
        if (
            any(c.isdigit() for c in word)
            or "/" in word
            or "." in word
            or any(c.isupper() for c in word[1:])
            or (word[0].isupper() and not opens_sentence)
        ):
            out.add(word.lower())
    return {v for v in out if v}


def _relation(old: str, new: str) -> UpdateOp:
    """How ``new`` relates to the existing fact ``old`` (ADD = unrelated)."""
    if _normalised(old) == _normalised(new):
        return "NONE"
    a_seq, b_seq = _sequence(old), _sequence(new)
    a, b = set(a_seq), set(b_seq)
    if not a or not b:
        return "ADD"
    values_a, values_b = _values(old), _values(new)
    va = {t for v in values_a for t in _terms(v)}
    vb = {t for v in values_b for t in _terms(v)}
    shared = a & b
    # Overlap of content: frame words ("set", "switch", "now") say how, not what.
    ca, cb = {t for t in a if not _is_frame(t)} or a, {t for t in b if not _is_frame(t)} or b
    if (
        len(ca & cb) / min(len(ca), len(cb)) >= 0.5
        and any(not t.isdigit() for t in shared)
        and _same_subject(a_seq, b_seq, va, vb)
    ):
        if _negated(old) != _negated(new):
            return "SUPERSEDE"
        # A value counts as changed only when its tokens are absent from the other text, so
        # "PostgreSQL" vs "postgresql" is not a change.
        gone = [v for v in values_a if not _terms(v) <= b]
        came = [v for v in values_b if not _terms(v) <= a]
        if gone and came:
            return "SUPERSEDE"
    name_a, name_b = _naming(a_seq, va), _naming(b_seq, vb)
    if name_a - name_b and name_b - name_a:
        return "ADD"  # a naming word swapped for another: another thing, however alike
    if len(shared) / len(a | b) >= 0.9:
        return "NONE"
    if a < b and len(new) > len(old):
        return "UPDATE"
    return "NONE" if b <= a else "ADD"


def decide_update(new: NewFact, existing: list[Fact]) -> UpdateDecision:
    """Rule-based ADD / UPDATE / SUPERSEDE / NONE for ``new`` against ``existing`` facts.

    Only live facts of the same type count; the :data:`_CANDIDATES` most similar (term
    Jaccard, then newest) are compared. A duplicate among them wins (NONE); otherwise the most
    similar fact with an UPDATE or SUPERSEDE relation is the target; otherwise ADD.
    """
    b = _terms(new.content)

    def jaccard(f: Fact) -> float:
        a = _terms(f.content)
        return len(a & b) / len(a | b) if a | b else 0.0

    pool = [f for f in existing if f.live and f.type == new.type]
    # Content then id break the last ties: the caller's order may come from a set of ids,
    # which Python iterates in a different order in every process (PYTHONHASHSEED).
    ranked = sorted(pool, key=lambda f: (-jaccard(f), -f.timestamp, f.content, f.id))
    ranked = ranked[:_CANDIDATES]
    relations = [(f, _relation(f.content, new.content)) for f in ranked]
    for f, op in relations:
        if op == "NONE":
            return UpdateDecision("NONE", new, f.id)
    for f, op in relations:
        if op != "ADD":
            return UpdateDecision(op, new, f.id)
    return UpdateDecision("ADD", new)
