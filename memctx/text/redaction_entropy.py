"""The last-resort ``high_entropy`` rule: is this bare run of characters a random key?

:func:`looks_random` is the shape test and :func:`high_entropy_check` adds the context around
the run (a hash or signature before it, an HTML attribute, a wrapped base64 blob); the module
docstring of :mod:`memctx.text.redaction` lists every condition and the measured miss rates.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter

from .redaction_literals import DIGITS, LOWER, UPPER, name_like, wordy

_Span = tuple[int, int]

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
_WORD_PART_RE = re.compile(r"[A-Z]*[a-z]{2,}(?:[A-Z]+[a-z]{2,})*|[A-Z]{2,}")  # one way to split
_UUID_SHAPE_RE = re.compile(r"[0-9A-Za-z]{8}(?:-[0-9A-Za-z]{4}){3}-[0-9A-Za-z]{12}")
_URLSAFE = str.maketrans("-_", "+/")
_CLASS_OF = str.maketrans("".join(sorted(UPPER | LOWER | DIGITS)), "0" * 10 + "A" * 26 + "a" * 26)
_CLASS_RUN_RE = re.compile(r"A+|a+|0+")


def _class_changes(alnum: str) -> float:
    runs = _CLASS_RUN_RE.findall(alnum.translate(_CLASS_OF))
    return (len(runs) - 1) / (len(alnum) - 1)


def entropy(s: str) -> float:
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


def pem_base64_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """Base64 of a PEM block (a kubeconfig's ``client-key-data``): only a private key counts."""
    head = text[span[0] : span[0] + 64]
    try:
        decoded = base64.b64decode(head[: len(head) // 4 * 4] + "==", validate=False)
    except ValueError:
        return None
    return span if b"PRIVATE KEY" in decoded else None


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
    if entropy(body) < min(0.78 * math.log2(n), 4.6) or _UUID_SHAPE_RE.fullmatch(body):
        return False
    if "." in body and all(name_like(part) for part in body.split(".") if part):
        return False  # a dotted name: ``NodeInputOrOutputType.FP32_OR_INT8``
    words = [part for part in _SEPARATOR_RE.split(body) if _WORD_PART_RE.fullmatch(part)]
    if len(words) >= 2 and sum(map(len, words)) >= 0.25 * n:
        return False  # words between separators: ``Mean_Acc1298_Mean_Mem40_Centroid``
    return not wordy(body) and not _encoded_text(body)


def high_entropy_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A bare run that :func:`looks_random` and is not a hash, an attribute or a blob line."""
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
