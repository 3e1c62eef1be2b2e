"""Mask secrets in text before anything is persisted.

A secret becomes ``[REDACTED:<rule>]``: ``<rule>`` says what it was (``openai_key``,
``secret_value``...). The default output is deterministic, so the same input gives the same
archive on every machine. With ``Redactor(fingerprint_key=...)`` (a store keeps its own secret
key) markers become ``[REDACTED:<rule>:<fp>]``, ``<fp>`` being 6 hex characters of a *keyed*
BLAKE2b hash: two secrets stay distinguishable yet neither is recoverable, not even a short
password by brute force, because the key never leaves the store. What a secret belonged to
stays readable:
``API_KEY=[REDACTED:...]``, ``Authorization: Bearer [REDACTED:...]``,
``postgres://app:[REDACTED:url_password:...]@db``, a PEM block keeps its BEGIN/END lines.
Redaction is idempotent (text inside a marker is never matched again) and masks a secret's whole
run, never a prefix that would leave its tail readable; overlapping hits are merged and named
after the more specific rule.

Rules, most specific first: ``private_key`` (PEM, multi-line, also when truncated), ``jwt``,
``anthropic_key`` (``sk-ant-``), ``openai_key`` (``sk-``, ``sk-proj-``), ``github_token``
(``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``), ``aws_access_key_id`` (``AKIA``/``ASIA`` + 16),
``aws_secret_key``, ``slack_token`` (``xox[abprs]-``), ``stripe_key`` (``sk_live_``,
``rk_live_``, ``_test_``), ``google_api_key`` (``AIza``), ``npm_token`` (``.npmrc``
``_authToken=``, ``npm_``), ``url_password`` (``scheme://user:pass@host``), ``auth_header``
(``Authorization:``), ``bearer_token``, ``secret_value`` and ``high_entropy``.

``secret_value`` is a value given to a key ending in ``api_key``/``apikey``/``token``/
``secret``/``secret_key``/``password``/``passwd``/``passphrase``/``access_key``/
``client_secret``/``private_key`` (case-insensitive; ``k=v``, ``k: v``, ``"k": "v"``, env files,
query strings) or to an env name ending in ``_KEY``/``_PASS``/``_PWD``/``_AUTH``. Only literals
count: not references (``$VAR``, ``${{ x }}``, ``{x}``, ``%s``), attribute paths
(``os.environ``), numbers, names (``token=token``, ``password: str``, ``YOUR_API_KEY``), code,
paths, elided placeholders (``sk-...``, ``****``), values with whitespace or under 3 characters.

Hex and hashes, the measured decision: a pure hex run, of any length, is never a secret on its
own. Git SHAs (7-40 hex), sha256 hashes (64 hex), UUIDs, docker digests and lock-file hashes are
context an agent needs; hex is masked only in a secret context (``secret_value``, an auth
header). ``high_entropy`` takes a bare run of 32 to 256 base64/base64url characters (dots
included, so signed ``a.b.c`` tokens are judged whole; a lower-case id prefix such as
``toolu_`` or ``0x`` does not count) only if it mixes upper case, lower case and digits, is not
hex, uses one base64 alphabet (``+/`` or ``-_``, not both: paths, URLs, model ids), has at most
16% separators, changes character class at >= 35% of neighbours, has Shannon entropy >=
``min(0.78 * log2(n), 4.6)`` bits per character, is not made of words (CamelCase or
``snake_case`` names, a dotted name, a UUID shape) nor base64 of readable text, and is not
after a hash, signature or id context (``sha256:``, ``sha512-``, ``integrity``, ``h1:``,
``base64,``, ``ssh-ed25519``, ``"signature": "``, ``jobId: ``), in an HTML attribute, or one
line of a wrapped base64 blob. Longer runs are blobs (images, thinking-block signatures).
Random keys of 32 characters escape it 1-2% of the time, of 40 about 0.5%, of 64+ 0.1%; known
key formats are caught by their own rules. ``scripts/measure_redaction.py`` gives the figures.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from .redaction_checks import (
    DIGITS,
    LOWER,
    UPPER,
    credential_check,
    env_key_check,
    high_entropy_check,
    mixed_check,
    npmrc_check,
    secret_value_check,
    url_check,
)

__all__ = ["Hit", "RedactionResult", "Redactor", "redact", "redact_with_report"]

PatternLike: TypeAlias = str | re.Pattern[str]
_Span: TypeAlias = tuple[int, int]
_Check: TypeAlias = Callable[[str, re.Match[str], _Span], _Span | None]

_MARKER_RE = re.compile(r"\[REDACTED:[a-z][a-z0-9_]*(?::[0-9a-f]{6})?\]")
_NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
_TOKEN_CHARS = UPPER | LOWER | DIGITS | {"_", "-"}
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


@dataclass(frozen=True, slots=True)
class Hit:
    """One masked span: the rule that fired and where the secret was in the *input* text."""

    rule: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """The redacted text and every masked span, in input order."""

    text: str
    hits: tuple[Hit, ...]


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()  # lower-case substrings; the rule runs only if one is present
    on_lower: bool = False  # match the ASCII-lower-cased text (same offsets)
    bounded: bool = False  # the secret must start a run of token characters
    check: _Check | None = None  # vetoes the match (None) or narrows its span
    min_len: int = 0


# --- rules -------------------------------------------------------------------------------------

_T = r"A-Za-z0-9_\-"
_VALUE = (  # a quoted value without whitespace, or an unquoted one up to a delimiter
    r"(?:(?P<q>\\?[\"'`])(?P<qv>[^\"'`\\\s]{1,512})(?P=q)"
    r"|(?P<uv>[^\s\"'`,;&|<>(){}\[\]\\]{1,512}))"
)
_SECRET_KEY = (  # matched in lower case; ``(?P<pad>)`` tells ``k = v`` (code) from ``k=v``
    r"(?:api[_-]?key|apikey|token|secret(?:[_-]?key(?:[_-]?base)?)?|password|passwd|passphrase"
    rf"|access[_-]?key|client[_-]?secret|private[_-]?key)\\?[\"']?(?P<pad>[ \t]*)"
    rf"(?P<sep>:=|=>|[:=])[ \t]*{_VALUE}"
)
_PEM = r"-----BEGIN (?P<label>[A-Z0-9 ]{0,40}PRIVATE KEY)-----"
_AWS_SECRET = (
    r"aws_?secret_?access_?key\\?[\"']?\s*[:=]\s*\\?[\"']?"
    r"(?P<secret>[a-z0-9/+=]{40})(?![a-z0-9/+=])"
)
_BEARER = r"bearer\s+(?P<secret>[a-z0-9._~+/\-]{16,}=*)"
_URL_PASSWORD = r"://[^\s:@/?#'\"<>]{1,128}:(?P<secret>[^\s@/?#'\"<>]{1,256})@(?=[A-Za-z0-9\[])"
_AUTH_HEADER = (
    r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?"
    r"(?:(?P<scheme>bearer|basic|token|digest|bot|apikey)\s+)?(?P<secret>[a-z0-9._~+/=\-]{4,})"
)
_ENV_KEY = rf"_(?:KEY|PASS|PWD|AUTH|CREDENTIALS?)[ \t]*=[ \t]*{_VALUE}"


def _r(name: str, pattern: str, needles: str, check: _Check | None = None, **kw: Any) -> _Rule:
    return _Rule(name, re.compile(pattern), tuple(needles.split()), check=check, **kw)


_RULES: tuple[_Rule, ...] = (
    _r("private_key", _PEM + r"(?P<secret>[\s\S]{1,16000}?)-----END (?P=label)-----", "-----begin"),
    _r("private_key", _PEM + r"(?P<secret>(?:(?!-----)[\w+/=\s:,.\\-]){1,16000})", "-----begin"),
    _r("jwt", rf"eyJ[{_T}]{{8,}}\.[{_T}]{{8,}}\.[{_T}]{{8,}}", "eyj", bounded=True),
    _r("anthropic_key", rf"sk-ant-[{_T}]{{20,}}", "sk-ant-", mixed_check, bounded=True),
    _r("openai_key", rf"sk-(?!ant-)[{_T}]{{20,}}", "sk-", mixed_check, bounded=True),
    _r("github_token", r"gh[pousr]_[A-Za-z0-9]{30,}", "gh", bounded=True),
    _r("github_token", rf"github_pat_[{_T}]{{22,}}", "github_pat_", bounded=True),
    _r("aws_access_key_id", r"A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])", "akia asia", bounded=True),
    _r("aws_secret_key", _AWS_SECRET, "aws", on_lower=True),
    _r("slack_token", r"xox[abprs]-[A-Za-z0-9\-]{10,}", "xox", bounded=True),
    _r("stripe_key", r"sk_(?:live|test)_[A-Za-z0-9]{16,}", "sk_", bounded=True),
    _r("stripe_key", r"rk_(?:live|test)_[A-Za-z0-9]{16,}", "rk_", bounded=True),
    _r("google_api_key", rf"AIza[{_T}]{{35,}}", "aiza", bounded=True),
    _r("npm_token", rf"_auth(?:Token)?[ \t]*=[ \t]*{_VALUE}", "_auth", npmrc_check),
    _r("npm_token", r"npm_[A-Za-z0-9]{36,}", "npm_", bounded=True),
    _r("url_password", _URL_PASSWORD, "://", url_check),
    _r("auth_header", _AUTH_HEADER, "authorization", credential_check, on_lower=True),
    _r("bearer_token", _BEARER, "bearer", credential_check, on_lower=True),
    _r("secret_value", _SECRET_KEY, "key token secret pass", secret_value_check, on_lower=True),
    _r("secret_value", _ENV_KEY, "_key _pass _pwd _auth _credential", env_key_check),
    _r("high_entropy", r"[A-Za-z0-9+/_.\-]{32,}=*", "", high_entropy_check, min_len=32),
)


def _secret_span(m: re.Match[str]) -> _Span:
    for group in ("secret", "qv", "uv"):
        if group in m.re.groupindex and m.group(group) is not None:
            return m.span(group)
    return m.span()


class Redactor:
    """A compiled set of redaction rules; build one and reuse it.

    Args:
        extra_patterns: more rules, ``{name: pattern}`` or ``(name, pattern)`` pairs, with
            ``lower_snake_case`` names. A pattern with a group named ``secret`` masks only that
            group (``r"ticket=(?P<secret>\\w+)"`` keeps ``ticket=``), otherwise the whole match.
            They rank after the built-in specific rules and before ``high_entropy``.
        fingerprint_key: key for marker fingerprints; ``None`` writes plain ``[REDACTED:rule]``
            markers (deterministic, nothing derived from the secret).
        high_entropy: whether the last-resort ``high_entropy`` rule runs.

    Raises:
        ValueError: an extra rule's name is not ``lower_snake_case``.
    """

    def __init__(
        self,
        extra_patterns: Mapping[str, PatternLike] | Iterable[tuple[str, PatternLike]] = (),
        *,
        fingerprint_key: bytes | None = None,
        high_entropy: bool = True,
    ) -> None:
        pairs = extra_patterns.items() if isinstance(extra_patterns, Mapping) else extra_patterns
        extra: list[_Rule] = []
        for name, pattern in pairs:
            if not _NAME_RE.fullmatch(name):
                raise ValueError(f"redaction rule name {name!r} must be lower_snake_case")
            extra.append(_Rule(name, re.compile(pattern) if isinstance(pattern, str) else pattern))
        specific = [r for r in _RULES if r.name != "high_entropy"]
        last = [r for r in _RULES if r.name == "high_entropy" and high_entropy]
        self._rules: tuple[_Rule, ...] = (*specific, *extra, *last)
        self._ranked = tuple(enumerate(self._rules))
        self._plain = tuple((i, r) for i, r in self._ranked if not r.needles)
        needles = sorted({n for r in self._rules for n in r.needles}, key=len, reverse=True)
        self._needles = re.compile("|".join(map(re.escape, needles)))
        self._key = (
            None
            if fingerprint_key is None
            else hashlib.blake2b(fingerprint_key, digest_size=32).digest()
        )

    @property
    def rule_names(self) -> tuple[str, ...]:
        """The distinct rule names, most specific first."""
        return tuple(dict.fromkeys(r.name for r in self._rules))

    def fingerprint(self, secret: str) -> str:
        """Six hex characters of a keyed hash of ``secret`` ("" without a fingerprint key)."""
        if self._key is None:
            return ""
        data = secret.encode("utf-8", "surrogatepass")
        return hashlib.blake2b(data, key=self._key, digest_size=3).hexdigest()

    def _spans(self, text: str) -> list[tuple[int, int, int]]:
        lower = text.lower()
        if len(lower) != len(text):  # a few non-ASCII letters lower-case to two characters
            lower = text.translate(_ASCII_LOWER)
        markers = [m.span() for m in _MARKER_RE.finditer(text)] if "[redacted:" in lower else []
        starts = [s for s, _ in markers]
        found: list[tuple[int, int, int]] = []
        for priority, rule in self._ranked if self._needles.search(lower) else self._plain:
            if len(text) < rule.min_len or (
                rule.needles and not any(n in lower for n in rule.needles)
            ):
                continue
            for m in rule.pattern.finditer(lower if rule.on_lower else text):
                span: _Span | None = _secret_span(m)
                if span is not None and rule.check is not None:
                    span = rule.check(text, m, span)
                if span is None:
                    continue
                start, end = span
                while start < end and text[start].isspace():
                    start += 1
                while end > start and text[end - 1].isspace():
                    end -= 1
                if start >= end or (rule.bounded and start and text[start - 1] in _TOKEN_CHARS):
                    continue
                i = bisect.bisect_left(starts, end) - 1  # the last marker starting before end
                if i < 0 or markers[i][1] <= start:
                    found.append((start, end, priority))
        found.sort()
        merged: list[tuple[int, int, int]] = []
        for start, end, priority in found:
            if merged and start < merged[-1][1]:
                s, e, p = merged[-1]
                merged[-1] = (s, max(e, end), min(p, priority))
            else:
                merged.append((start, end, priority))
        return merged

    def redact_with_report(self, text: str) -> RedactionResult:
        """Mask every secret in ``text`` and report what was masked.

        Args:
            text: any text.

        Returns:
            The redacted text, and one hit per masked span with offsets into ``text``.
        """
        spans = self._spans(text)
        if not spans:
            return RedactionResult(text, ())
        out, shifts = self._render(text, spans)
        for _ in range(3):  # text around a masked secret can reveal another: go to a fixpoint
            more = self._spans(out)
            if not more:
                break
            for start, end, priority in more:  # back to input offsets; markers are never hit
                shift = shifts[bisect.bisect_right(shifts, (start, math.inf)) - 1][1]
                spans.append((start - shift, end - shift, priority))
            spans.sort()
            out, shifts = self._render(text, spans)
        hits = tuple(Hit(self._rules[p].name, start, end) for start, end, p in spans)
        return RedactionResult(out, hits)

    def _render(
        self, text: str, spans: list[tuple[int, int, int]]
    ) -> tuple[str, list[tuple[float, int]]]:
        """The text with markers, and (output offset, output minus input offset) after each."""
        out: list[str] = []
        shifts: list[tuple[float, int]] = [(-1, 0)]
        pos = 0
        for start, end, priority in spans:
            name = self._rules[priority].name
            fp = self.fingerprint(text[start:end])
            marker = f"[REDACTED:{name}:{fp}]" if fp else f"[REDACTED:{name}]"
            out += (text[pos:start], marker)
            shift = shifts[-1][1] + len(marker) - (end - start)
            shifts.append((end + shift, shift))
            pos = end
        out.append(text[pos:])
        return "".join(out), shifts

    def redact(self, text: str) -> str:
        """Mask every secret in ``text``.

        Args:
            text: any text.

        Returns:
            The text with each secret replaced by a ``[REDACTED:<rule>:<fp>]`` marker.
        """
        return self.redact_with_report(text).text

    def redact_obj(self, value: Any) -> Any:
        """Redact every string inside a JSON value, building new containers.

        Dict keys are kept as they are (they are the schema, not data); numbers, booleans and
        ``None`` are returned as they are. The input is never mutated.

        Args:
            value: a JSON-like value: ``dict``, ``list``, ``tuple``, ``str``, scalars.

        Returns:
            A value of the same shape with every string redacted.
        """
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {k: self.redact_obj(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_obj(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.redact_obj(v) for v in value)
        return value


_DEFAULT = Redactor()


def redact(text: str) -> str:
    """Mask every secret in ``text`` with the default :class:`Redactor`.

    Args:
        text: any text.

    Returns:
        The redacted text.
    """
    return _DEFAULT.redact(text)


def redact_with_report(text: str) -> RedactionResult:
    """Like :func:`redact`, and also report each masked span.

    Args:
        text: any text.

    Returns:
        The redacted text and its hits.
    """
    return _DEFAULT.redact_with_report(text)
