"""Heuristics behind the redaction rules: is this value a literal secret, is this run random?

Pure functions on strings, kept apart from the rule table in :mod:`memctx.text.redaction` so
each can be read (and tested) on its own. The thresholds were set by measuring false
positives on real agent sessions (``scripts/measure_redaction.py``), not by guessing.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter

_Span = tuple[int, int]
UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
DIGITS = frozenset("0123456789")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "bot", "apikey", "negotiate"})
_ENV_KEY_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*\Z")

# --- is a value in a secret context a literal secret? -----------------------------------------

_REF_START = tuple("$%<{[@*=#!})],;")
_KEYWORDS = frozenset({"none", "null", "nil", "true", "false", "undefined"})
_CODE_REF_RE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?![\w$])")
_NUMBER_RE = re.compile(r"[+-]?[0-9][0-9_]*(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?", re.IGNORECASE)
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROSE_RE = re.compile(r" [a-z]{2,}\b")
_PARTS_RE = re.compile(r"[_.\-]+")
_WORDS_RE = re.compile(r"[A-Z][a-z]{2,}|[a-z]{3,}")


def _wordy(s: str) -> bool:
    """Two thirds of ``s`` are words (``Word``, ``word``): a CamelCase name, not random text."""
    return sum(map(len, _WORDS_RE.findall(s))) >= 0.66 * len(s)


def _name_like(value: str) -> bool:
    """A variable, type or placeholder name: ``token``, ``Token-based``, ``s3_pair``."""
    parts = [p for p in _PARTS_RE.split(value) if p]
    if all(p.isalpha() for p in parts):
        if len(parts) == 1:
            return len(value) < 24 or _wordy(value)
        return all(p.islower() or p.isupper() or p.istitle() or _wordy(p) for p in parts)
    snake = (p.isalnum() and (p.islower() or p.isupper() or p.isdigit()) for p in parts)
    return "_" in value and all(snake)


def _literal_value(value: str, quoted: bool = False) -> bool:
    """Whether a value in a secret context is a literal secret (see the module docstring)."""
    v = value.rstrip(".:")
    if len(v) < 3 or v.startswith(_REF_START) or v.lower() in _KEYWORDS:
        return False
    code = ("{", "}", ";") if quoted else ("?", "(", "=")  # ``"token: "+(0,S.x)(e))}``, ``a?b``
    if any(s in v.rstrip("=") for s in code) or ("<" in v and ">" in v):
        return False
    if any(s in value for s in ("...", "…", "****")):  # elided: ``sk-...``, ``ya29.abc...``
        return False
    if sum(v.count(c) for c in "xX*•") >= 0.6 * len(v) or v.endswith("***"):
        return False
    ref = _CODE_REF_RE.match(v)  # os.environ, e.auth_password??; not ya29.<random>
    if ref and all(len(p) < 4 or _name_like(p) for p in ref.group().split(".")):
        return False
    if _NUMBER_RE.fullmatch(v):
        return False
    if v[0] in "/~." and all(_name_like(p) for p in v.lstrip("~.").split("/") if p):
        return False  # a file path: ``private_key: ~/.ssh/id_ed25519``
    return not _name_like(v.rstrip("="))


def secret_value_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    if m.start() and text[m.start() - 1] == ":":  # ``arn:aws:secretsmanager:..:secret:name``
        return None
    value = text[span[0] : span[1]]
    bare, sep = m.group("uv") is not None, m.group("sep")
    if bare and sep == "=" and m.group("pad") and _IDENT_RE.fullmatch(value):
        return None  # ``token = b64encode``: code assigns a variable
    if bare and sep == ":" and _PROSE_RE.match(text, span[1]):
        return None  # ``client_secret: OAuth2 client secret``: a sentence, not a value
    return span if _literal_value(value, m.group("qv") is not None) else None


def env_key_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    if not _ENV_KEY_RE.search(text, max(0, m.start() - 64), m.start()):
        return None
    value = text[span[0] : span[1]]
    if len(value) < 8 or not _literal_value(value, m.group("qv") is not None):
        return None
    return span if any(c.isdigit() for c in value) and any(c.isalpha() for c in value) else None


def npmrc_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    if m.start() and text[m.start() - 1] not in ":\n":  # ``//registry/:_authToken=`` lines
        return None
    return span if _literal_value(text[span[0] : span[1]], m.group("qv") is not None) else None


def credential_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    value = text[span[0] : span[1]]
    if value.lower() in _AUTH_SCHEMES or len(value) < 8 or not _literal_value(value):
        return None
    if "scheme" in m.re.groupindex and m.group("scheme"):  # ``Authorization: Basic <creds>``
        return span
    return span if any(c.isdigit() or c in "+/=_-.~" for c in value) else None


def url_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    value = text[span[0] : span[1]]
    return None if value[0] in "$%{<" or set(value) <= {"*"} else span


def mixed_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """Provider keys are random base62: ``sk-toggleable__label`` is a CSS class, not a key.

    Upper, lower and digits together mark a key; a long run (32+) of mixed case counts too,
    because about 1 random 40-character key in 1,000 happens to hold no digit.
    """
    raw = text[span[0] + 3 : span[1]]
    body = set(raw)
    mixed_case = bool(body & UPPER and body & LOWER)
    if mixed_case and (body & DIGITS or (len(raw) >= 32 and "__" not in raw)):
        return span
    return None


# --- the high-entropy rule ---------------------------------------------------------------------

_CONTEXT_RE = re.compile(  # hash, signature, key material or id before the run
    r"(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?|h1|base64|integrity|digest|checksum|hash"
    r"|signature|ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|id|ids|uuid|guid|marker)"
    r"[\"'\\\s:=,\-\[]*\Z"
)
_HASH_PREFIX_RE = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[-:_]", re.IGNORECASE)
_ATTR_VALUE_RE = re.compile(r"\s[A-Za-z_:][\w:.\-]*=\\?[\"']\Z")
_BLOB_AFTER_RE = re.compile(r"=*(?:[\s\"'`,+]|\\[nr]){1,12}[A-Za-z0-9+/]{40}")
_BLOB_BEFORE_RE = re.compile(r"[A-Za-z0-9+/]{40}=*(?:[\s\"'`,+]|\\[nr]){1,12}\Z")
_ID_PREFIX_RE = re.compile(r"0x|(?:[a-z]{3,12}[_\-/])+")
_HEXISH = frozenset("0123456789abcdefABCDEF-")
_SEPARATOR_RE = re.compile(r"[+/_.\-]")
_WORD_PART_RE = re.compile(r"(?:[A-Z]*[a-z]{2,})+|[A-Z]{2,}")
_UUID_SHAPE_RE = re.compile(r"[0-9A-Za-z]{8}(?:-[0-9A-Za-z]{4}){3}-[0-9A-Za-z]{12}")
_URLSAFE = str.maketrans("-_", "+/")
_CLASS_OF = str.maketrans("".join(sorted(UPPER | LOWER | DIGITS)), "0" * 10 + "A" * 26 + "a" * 26)
_CLASS_RUN_RE = re.compile(r"A+|a+|0+")


def _class_changes(alnum: str) -> float:
    runs = _CLASS_RUN_RE.findall(alnum.translate(_CLASS_OF))
    return (len(runs) - 1) / (len(alnum) - 1)


def _entropy(s: str) -> float:
    return math.log2(len(s)) - sum(k * math.log2(k) for k in Counter(s).values()) / len(s)


def _encoded_text(token: str) -> bool:
    """Whether ``token`` is base64 of readable text: encoded data, not a random key."""
    data = token.translate(_URLSAFE).rstrip("=")
    for skip in range(4):  # the run may start a few characters before the base64 does
        chunk = data[skip : len(data) - (len(data) - skip) % 4]
        try:
            decoded = base64.b64decode(chunk, validate=True).decode("utf-8")
        except ValueError:
            continue
        if sum(c.isprintable() or c in "\t\r\n" for c in decoded) >= 0.9 * len(decoded):
            return True
    return False


def looks_random(token: str) -> bool:
    """The shape test of ``high_entropy`` (see the module docstring), without context."""
    if ("/" in token or "+" in token) and ("-" in token or "_" in token or "." in token):
        return False
    prefix = _ID_PREFIX_RE.match(token)
    body = token[prefix.end() :] if prefix else token
    n = len(body)
    chars = set(body)
    if n < 32 or len(token) > 256 or chars <= _HEXISH:
        return False
    if not (chars & UPPER and chars & LOWER and chars & DIGITS):
        return False
    alnum = _SEPARATOR_RE.sub("", body)
    if n - len(alnum) > 0.16 * n or _class_changes(alnum) < 0.35:
        return False
    if _entropy(body) < min(0.78 * math.log2(n), 4.6) or _UUID_SHAPE_RE.fullmatch(body):
        return False
    if "." in body and all(_name_like(part) for part in body.split(".") if part):
        return False  # a dotted name: ``NodeInputOrOutputType.FP32_OR_INT8``
    words = [part for part in _SEPARATOR_RE.split(body) if _WORD_PART_RE.fullmatch(part)]
    if len(words) >= 2 and sum(map(len, words)) >= 0.25 * n:
        return False  # words between separators: ``Mean_Acc1298_Mean_Mem40_Centroid``
    return not _wordy(body) and not _encoded_text(body)


def high_entropy_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    start, end = span
    while end > start and text[end - 1] == ".":  # a sentence's full stop
        end -= 1
    while start < end and text[start] == ".":
        start += 1
    if not looks_random(text[start:end].rstrip("=")) or _HASH_PREFIX_RE.match(text, start):
        return None
    if _CONTEXT_RE.search(text[max(0, start - 40) : start].lower()):
        return None
    in_tag = text.rfind("<", 0, start) > text.rfind(">", 0, start)
    if in_tag and _ATTR_VALUE_RE.search(text, max(0, start - 80), start):
        return None  # an HTML attribute value: page state such as a CSRF meta tag
    if _BLOB_AFTER_RE.match(text, end) or _BLOB_BEFORE_RE.search(text, max(0, start - 80), start):
        return None  # one line of a wrapped base64 blob
    return start, end
