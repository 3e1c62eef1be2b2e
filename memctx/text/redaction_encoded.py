"""Secrets in disguise for :mod:`memctx.text.redaction`: encoded, or cut in two.

An agent's transcript holds secrets the rules cannot read as written: base64 of an AWS key
pair or of ``user:pass`` (a basic-auth header without its ``Basic``), hex of a token, and a
token cut over two JSON fields (``{"a": "ghp_x…", "b": "…yz"}``) or two messages. This module
finds the candidates, each bounded in length and count, so the cost per text stays linear:
runs that decode to readable text (the engine runs its rules on the decoded text and masks
the encoded run), and neighbouring JSON string values (the engine runs its rules on the two
joined and masks what spans the join in both).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

__all__ = ["MAX_CANDIDATES", "basic_auth", "decoded_runs", "json_neighbours"]

MAX_CANDIDATES = 32  # per text: runs decoded, and JSON value pairs joined
_MIN_DECODED = 6
# A run of base64 (either alphabet) or hex characters, read whole (the class holds both):
# one pass over the text; a run over 4 KiB is a blob (an image, a signature), not decoded.
_RUN_RE = re.compile(r"[A-Za-z0-9+/_\-]{12,}={0,2}")
_MAX_RUN = 4096
_HEX_RUN_RE = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_URLSAFE = str.maketrans("-_", "+/")
# ``user:password`` (what HTTP basic auth encodes): a name, a colon, a password of 4+
# characters that is not only digits (``host:8080`` is an address).
_BASIC_AUTH_RE = re.compile(r"[\w.@+\-]{1,64}:(?=[^\s:]*[^\s:0-9])[^\s:]{4,128}")
_JSON_STRING = r"((?:[^\"\\\n]|\\.){1,256})"  # a JSON string's body, escapes included
_JSON_PAIR_RE = re.compile(
    rf"\"{_JSON_STRING}\"(?=[ \t]*,[ \t]*(?:\"[\w.\-]{{1,64}}\"[ \t]*:[ \t]*)?\"{_JSON_STRING}\")"
)


def _readable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < _MIN_DECODED or sum(c.isprintable() or c in "\t\r\n" for c in text) < len(text):
        return None
    return text


def _b64(run: str) -> str | None:
    body = run.rstrip("=").translate(_URLSAFE)
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        return _readable(base64.b64decode(body + "=" * (-len(body) % 4), validate=True))
    except (binascii.Error, ValueError):
        return None


def decoded_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, decoded)`` for the base64 and hex runs of ``text`` that decode to
    readable text: at most :data:`MAX_CANDIDATES` runs tried, none over 4 KiB.

    A pure hex run is read as hex only: git SHAs and hashes decode to bytes that are not
    text, so they are never masked by this. Another run must mix upper and lower case
    (words and names are not base64 of text) and use one base64 alphabet (``+/`` or
    ``-_``, not both: a path such as ``src/my_module``).
    """
    tried = 0
    for m in _RUN_RE.finditer(text):
        run = m.group()
        if len(run) > _MAX_RUN:
            continue
        data: bytes | None = None
        if run.islower() or run.isupper() or run.isdigit():  # one case: hex, or not base64
            if len(run) % 2 or not _HEX_RUN_RE.fullmatch(run):
                continue
            data = bytes.fromhex(run)
        elif ("+" in run or "/" in run) and ("-" in run or "_" in run):
            continue  # both alphabets: a path or a name, not base64
        tried += 1
        if tried > MAX_CANDIDATES:
            break
        decoded = _readable(data) if data is not None else _b64(run)
        if decoded is not None:
            yield m.start(), m.end(), decoded


def basic_auth(decoded: str) -> bool:
    """Whether a decoded run is ``user:password``, the credential of HTTP basic auth."""
    return _BASIC_AUTH_RE.fullmatch(decoded.strip()) is not None


def json_neighbours(text: str) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """The spans of neighbouring JSON string values (``"a": "x", "b": "y"``, ``["x", "y"]``),
    at most :data:`MAX_CANDIDATES` pairs: a token cut over two fields is whole when joined."""
    if '",' not in text:
        return
    for i, m in enumerate(_JSON_PAIR_RE.finditer(text)):
        if i >= MAX_CANDIDATES:
            break
        yield m.span(1), m.span(2)
