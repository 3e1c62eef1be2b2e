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

Rules, most specific first (the table is :mod:`memctx.text.redaction_rules`):

- ``private_key``: PEM blocks (``RSA``, ``EC``, ``OPENSSH``, ``ENCRYPTED``, ``PGP ... BLOCK``),
  also truncated or JSON-escaped; PuTTY ``Private-Lines``; base64 of a PEM private key
  (a kubeconfig's ``client-key-data``).
- ``jwt``, then one rule per vendor token format, named after the vendor (``anthropic_key``,
  ``openai_key``, ``github_token``, ``gitlab_token`` ``glpat- gldt- glrt- glptt- ...
  GR1348941``, ``huggingface_token`` ``hf_``, ``aws_access_key_id``, ``slack_token``,
  ``stripe_key``, ``google_api_key``, ``npm_token``, ``shopify_token``,
  ``digitalocean_token``, ``databricks_token``, ``sendgrid_key``, ``pypi_token``,
  ``twilio_key``, ``mailgun_key``, ``atlassian_token``, ``linear_key``, ``notion_token``,
  ``postman_key``, ``doppler_token``, ``vault_token``, ``grafana_token``, ``newrelic_key``,
  ``sentry_token``, ``heroku_key``, ``discord_token``, ``telegram_token`` and 41
  more). The vendor's prefix makes the token a secret, so a hex or all-letter body counts
  (``dapi`` + 32 hex); this does not contradict the hex rule below.
- ``aws_secret_key``, ``azure_storage_key`` (``AccountKey=``, ``SharedAccessKey=``, a SAS
  ``sig=``), ``webhook_url`` (Slack, Discord, Teams, Zapier: the URL is the credential).
- ``url_password``: ``scheme://user:pw@host``, with an empty user (``redis://:pw@``), up to
  the last ``@`` before the host (``p@ss``), a raw ``/`` or ``#`` in the password, JSON-escaped
  (``:\\/\\/``) and URL-encoded (``%3A%2F%2F``).
- ``auth_header`` (``Authorization``, ``Proxy-Authorization``, any ``X-...-Key``/``-Token``/
  ``-Secret``/``-Auth`` header), ``bearer_token``, ``session_cookie`` (``Cookie:`` values, the
  first pair of ``Set-Cookie:``).
- ``cli_password``: ``--password X`` and the other long options naming a secret, ``curl -u
  user:pw``/``--user``, ``mysql -pPW`` (``-p`` only for mysql/mariadb tools; a separated word
  after ``-p`` is mysql's database, masked anyway), ``docker login -p``, ``sshpass -p``,
  ``redis-cli -a``, ``mongo -p``, ``openssl pass:``, ``keytool -storepass``, ``smbclient -U
  user%pw``, ``sqlplus user/pw@db``, ``htpasswd -b``, ``echo PW | ... --password-stdin``,
  ``--from-literal=k=v``, ``config set ...token V``.
- ``password_file`` (``.pgpass`` lines, ``.netrc`` ``machine ... password``), ``sql_password``
  (``PASSWORD 'pw'``, ``IDENTIFIED BY 'pw'``).
- ``secret_value`` (keyed values, below), ``secret_context`` (a random-looking value of 12+
  characters said after a secret's name: ``the token is ...``, ``API key: ...``,
  ``rotated the password to ...``, ``the staging signing key is ...``, ``the salt is ...``)
  and ``high_entropy`` (below).
- ``encoded_secret`` (:mod:`memctx.text.redaction_encoded`): a base64 (either alphabet) or
  hex run whose decoded text is ``user:password`` or holds a secret by the rules above
  (base64 of an AWS key pair, hex of a token), masked as written; at most 32 runs of at most
  4 KiB are decoded per text. A token cut over two neighbouring JSON string values
  (``{"a": "ghp_x...", "b": "...yz"}``) is masked in both, under its own rule's name.

Secrets cut over two texts (messages of one batch, blocks of one message, speakers' names)
are caught by :meth:`Redactor.redact_across`, which joins the tail of each text to the head
of the next and masks in both what only the join reveals.

A key that names a secret and starts a line (``.env``, ``export``, YAML, a JSON member, a
shell command, a string value) takes any literal, whatever it looks like:
``SIGNING_SALT=plainwords``, ``SENTRY_DSN=https://k@o1.ingest.sentry.io/1``,
``"private_key_id": "7f3a..."``, ``SESSION_COOKIE=...``, ``NPM_AUTH: ...``; its last word is
``salt``, ``dsn``, ``cookie``, ``auth``, a ``private``/``access``/``signing``... ``key_id``, or
any word below. Values that are not literals (references, keywords, type words, calls, file
paths, short numbers, names) are left, as below.

``secret_value`` is a value given to a key that names a secret: its last word is ``password``,
``passwd``, ``passphrase``, ``pass``, ``pwd``, ``secret``, ``token``, ``api_key``/``apikey``,
``access_key``, ``private_key``, ``credentials``, ``auth`` (case-insensitive, camelCase too:
``secretAccessKey``, ``authToken``), in ``k=v``, ``k: v``, ``"k": "v"``, ``<k>v</k>``, query
strings, env files (``export K=v``, ``K=v cmd``, ``docker -e``), fish ``set -x K v``,
``setx``, Dockerfile ``ENV K v``; also a generic env name ending in ``_KEY``/``_AUTH`` when the
value looks random. A key that names a secret takes any literal, all-letter ones included
(``DB_PASSWORD=correcthorsebatterystaple``, ``password: letmein``); a placeholder such as
``changeme`` or ``fake-key`` is masked too (masking a placeholder is harmless, leaking a real
password of that shape is not), but a name is not a value: ``YOUR_API_KEY``, ``<token>``,
``xxx``. Not literals: references (``$VAR``, ``${{ x }}``, ``%X%``,
``<token>``, ``os.environ/KEY``), calls and attribute paths (``getpass()``,
``process.env.X``), keywords and type words (``null``, ``str``, ``SecretStr``,
``Optional[str]``), file paths, elisions (``sk-...``, ``****``), the key's own name
(``token=token``) or another name of a secret (``"GITHUB_TOKEN"``, ``user_password``), code
(``f(token=tok)``, ``{"token": chunk}``, minified ``k:"Label"``), prose (``client_secret:
OAuth2 client secret``, ``Predicted token: Paris``), numbers under 6 digits, values under 3
characters. A key that is only a label in a sentence, or a generic key (``pad_token``,
``max_token``), needs a random-looking value.

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
key formats are caught by their own rules.

False positives, measured (``scripts/measure_redaction.py``): on the real sessions and
trajectories of ``../shared/datasets`` (8.7 M characters) the rules make 3 hits, all one
placeholder in a secret slot (``secret_key_base: "test-only-..."``), and keep every git SHA,
UUID and hash. On two samples (30 MB, 80 MB) of installed packages' source and docs, every hit
of the rules for command lines, vendor prefixes and all-letter values was read: their false
positives (type annotations, keyword arguments passing a variable, minified JavaScript,
docstrings, SSH fingerprints, model names, timestamps) shaped the guards above; what remains
are placeholders in secret slots and a rare multi-line dict comprehension. Speed: a rule runs
only on texts holding its needles (one trie-regex pass); 3 MB of session text redacts in
about 0.3 s.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from .redaction_encoded import basic_auth, decoded_runs, json_neighbours
from .redaction_literals import DIGITS, LOWER, UPPER
from .redaction_rules import RULES, Rule

__all__ = ["Hit", "RedactionResult", "Redactor", "redact", "redact_with_report"]

PatternLike: TypeAlias = str | re.Pattern[str]
_Span: TypeAlias = tuple[int, int]

_MARKER_RE = re.compile(r"\[REDACTED:[a-z][a-z0-9_]*(?::[0-9a-f]{6})?\]")
_NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
_TOKEN_CHARS = UPPER | LOWER | DIGITS | {"_", "-"}
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_RESCAN_WINDOW = 2048  # characters around a marker that a fixpoint pass reads again
_ESCAPE_AT_RE = re.compile(r"[nrtbf\"\\/]|u[0-9a-fA-F]{4}")
_ESCAPE_BEFORE_RE = re.compile(r"\\(?:[nrt]|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2})\Z")


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


def _trie_regex(words: list[str]) -> re.Pattern[str]:
    """A regex matching any of ``words``, the longest at each position, as a character trie.

    sre tries the alternatives of ``a|b|c`` one by one at every position; a trie shares
    prefixes, so a position costs one branch per character whatever the number of words.
    """
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return re.compile(emit(trie))


def _starts_word(text: str, start: int) -> bool:
    """``start`` begins a word: no word character or ``-`` before it, or a JSON escape."""
    if not start or text[start - 1] not in _TOKEN_CHARS:
        return True
    return _ESCAPE_BEFORE_RE.search(text, max(0, start - 6), start) is not None


_JSON_WS_RE = re.compile(r"\\[nrt]")
_WS_OF = {"n": " \n", "r": " \r", "t": " \t"}


def _as_whitespace(m: re.Match[str]) -> str:
    return _WS_OF[m.group()[1]]


def _merged(found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Spans sorted, overlapping ones merged and named after the more specific rule."""
    found.sort()
    merged: list[tuple[int, int, int]] = []
    for start, end, priority in found:
        if merged and start < merged[-1][1]:
            s, e, p = merged[-1]
            merged[-1] = (s, max(e, end), min(p, priority))
        else:
            merged.append((start, end, priority))
    return merged


def _secret_span(m: re.Match[str]) -> _Span:
    for group in ("secret", "qv", "uv"):
        if group in m.re.groupindex and m.group(group) is not None:
            return m.span(group)
    return m.span()


class _NeedleTrie:
    """Which rules a text may fire: the rules whose needles occur in it, found in one pass.

    sre skips quickly over characters that cannot start a match but is slow to try many
    alternatives at a position, so the needles (chosen to start with rare characters) are
    one trie regex: ``[first characters](?<=(?=(trie)).)`` consumes one character at each
    place a needle may start and captures the longest needle there. Consuming one character
    at a time finds needles that overlap (``sk`` and ``k_live_``) too; a needle stands for the
    shorter needles that start with it.
    """

    def __init__(self, needles: list[str], raw: bool, rules: tuple[Rule, ...]) -> None:
        self.raw = raw
        firsts = "".join(sorted({re.escape(n[0]) for n in needles}))
        self.regex = re.compile(f"[{firsts}](?<=(?=({_trie_regex(needles).pattern})).)")
        holders = {n: {i for i, r in enumerate(rules) if n in r.needles} for n in needles}
        self.holders = {
            n: frozenset().union(*(holders[m] for m in needles if n.startswith(m))) for n in needles
        }


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
        extra: list[Rule] = []
        for name, pattern in pairs:
            if not _NAME_RE.fullmatch(name):
                raise ValueError(f"redaction rule name {name!r} must be lower_snake_case")
            extra.append(Rule(name, re.compile(pattern) if isinstance(pattern, str) else pattern))
        specific = [r for r in RULES if r.name != "high_entropy"]
        last = [r for r in RULES if r.name == "high_entropy" and high_entropy]
        self._rules: tuple[Rule, ...] = (*specific, *extra, *last)
        self._plain = frozenset(i for i, r in enumerate(self._rules) if not r.needles)
        # Needles are found by one pass of a trie regex over the lower-cased text, and one over
        # the text as written for needles holding an upper-case letter (``AKIA``): see _active.
        self._tries = tuple(
            _NeedleTrie(sorted(ns), raw, self._rules)
            for raw in (False, True)
            if (ns := {n for r in self._rules for n in r.needles if (n != n.lower()) == raw})
        )
        self._memo: dict[tuple[frozenset[str], ...], tuple[int, ...]] = {}
        # Not a rule the loop runs: the name of a base64/hex run whose decoded text is a
        # secret, and of a JSON value holding part of a token cut over two values.
        # Ids side by side (``"toolUseID": "agent_msg_01Q…", "parentToolUseID": "toolu_01C…"``)
        # join into a random-looking run: a join is judged by the rules that name a secret.
        self._entropy = len(self._rules) - 1 if last else -1
        self._encoded = len(self._rules)
        self._rules += (Rule("encoded_secret", re.compile(r"\Z.")),)
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

    def _active(self, text: str, lower: str) -> tuple[int, ...]:
        """The rules whose needles are in the text (and the needle-less ones), by priority."""
        key = tuple(frozenset(t.regex.findall(text if t.raw else lower)) for t in self._tries)
        active = self._memo.get(key)
        if active is None:  # few distinct needle sets occur: remember each one's rule list
            union = set(self._plain)
            for trie, found in zip(self._tries, key, strict=True):
                union.update(*(trie.holders[n] for n in found))
            active = tuple(sorted(union))
            if len(self._memo) >= 4096:
                self._memo.clear()
            self._memo[key] = active
        return active

    def _spans(self, text: str, nested: bool = False) -> list[tuple[int, int, int]]:
        # Rules read a view in which the JSON escapes of line breaks and tabs are white space
        # of the same length: a command line inside a tool call's JSON arguments
        # (``"cmd": "ls\\ncurl -u app:pw ..."``) starts a line there, not mid-word. Offsets
        # are the input's, so the spans apply to ``text`` itself.
        given = text
        if "\\" in text:
            text = _JSON_WS_RE.sub(_as_whitespace, text)
        lower = text.lower()
        if len(lower) != len(text):  # a few non-ASCII letters lower-case to two characters
            lower = text.translate(_ASCII_LOWER)
        markers = [m.span() for m in _MARKER_RE.finditer(text)] if "[redacted:" in lower else []
        starts = [s for s, _ in markers]
        found: list[tuple[int, int, int]] = []
        for priority in self._active(text, lower):
            rule = self._rules[priority]
            if len(text) < rule.min_len:
                continue
            subject = lower if rule.on_lower else text
            m = rule.pattern.search(subject)
            while m is not None:
                span: _Span | None = _secret_span(m)
                if rule.word_start and not _starts_word(text, m.start()):
                    span = None
                if span is not None and rule.check is not None:
                    span = rule.check(text, m, span)
                if span is not None:
                    span = self._accept(text, span, rule.bounded, markers, starts)
                if span is None:
                    # A vetoed key's value may hide another key (``token: API_KEY=...``):
                    # search again from the start of the value, not from the match's end.
                    value_start = _secret_span(m)[0]
                    resume = value_start if value_start > m.start() else m.end()
                    resume = max(resume, m.start() + 1)
                    m = rule.pattern.search(subject, resume)
                    continue
                found.append((*span, priority))
                m = rule.pattern.search(subject, max(m.end(), m.start() + 1))
        if not nested:  # JSON values and encoded runs are read as written
            found += self._disguised(given)
        return _merged(found)

    def _disguised(self, text: str) -> list[tuple[int, int, int]]:
        """Secrets the rules miss as written: encoded runs whose decoded text holds one, and
        the parts of a token cut over two neighbouring JSON string values."""
        found: list[tuple[int, int, int]] = []
        for start, end, decoded in decoded_runs(text):
            if basic_auth(decoded) or self._spans(decoded, nested=True):
                found.append((start, end, self._encoded))
        for (a0, a1), (b0, b1) in json_neighbours(text):
            in_a, in_b = self._joined(text[a0:a1], text[b0:b1], nested=True)
            found += [(a0 + s, a0 + e, p) for s, e, p in in_a]
            found += [(b0 + s, b0 + e, p) for s, e, p in in_b]
        return found

    def _joined(
        self, a: str, b: str, nested: bool = False
    ) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
        """The spans of ``a`` and of ``b`` that only their join reveals: a token cut in two,
        a key ending ``a`` whose value starts ``b``. Found in the join but in neither alone
        (``high_entropy`` is not asked: two ids side by side look random joined)."""
        border = len(a)
        alone = {(s, e) for s, e, _ in self._spans(a, nested)}
        alone |= {(s + border, e + border) for s, e, _ in self._spans(b, nested)}
        in_a: list[tuple[int, int, int]] = []
        in_b: list[tuple[int, int, int]] = []
        for s, e, priority in self._spans(a + b, nested):
            if (s, e) in alone or priority == self._entropy:
                continue
            if s < border:
                in_a.append((s, min(e, border), priority))
            if e > border:
                in_b.append((max(s, border) - border, e - border, priority))
        return in_a, in_b

    def redact_across(self, texts: list[str], window: int = 256) -> list[str]:
        """Mask the secrets cut over neighbouring texts (messages of one batch), then return
        the texts, each still to be redacted on its own.

        The tail of each text is joined to the head of the next (``window`` characters of
        each) and the rules run on the join; a secret found there but in neither side alone
        (a token cut in two, ``SIGNING_SALT=`` ending one message and its value starting the
        next) is masked in both texts. The cost is three scans of ``2 * window`` characters
        per pair, whatever the texts' length.

        Args:
            texts: neighbouring texts, in order.
            window: how many characters of each side the join holds.

        Returns:
            The texts with the parts of every cut secret masked; the others unchanged.
        """
        cuts: list[list[tuple[int, int, int]]] = [[] for _ in texts]
        for i in range(len(texts) - 1):
            a, b = texts[i], texts[i + 1]
            if not a or not b:
                continue
            offset = max(0, len(a) - window)
            in_a, in_b = self._joined(a[offset:], b[:window])
            cuts[i] += [(offset + s, offset + e, p) for s, e, p in in_a]
            cuts[i + 1] += in_b
        out = list(texts)
        for i, spans in enumerate(cuts):
            if spans:
                out[i] = self._render(texts[i], _merged(spans))[0]
        return out

    @staticmethod
    def _accept(
        text: str, span: _Span, bounded: bool, markers: list[_Span], starts: list[int]
    ) -> _Span | None:
        """The span trimmed of whitespace, or None: empty, mid-token, or inside a marker."""
        start, end = span
        if start and text[start - 1] == "\\":  # never split a JSON escape (``\n``, ``\u00e9``)
            escape = _ESCAPE_AT_RE.match(text, start)
            start = escape.end() if escape else start
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start >= end:
            return None
        if bounded and not _starts_word(text, start):
            return None
        i = bisect.bisect_left(starts, end) - 1  # the last marker starting before end
        return (start, end) if i < 0 or markers[i][1] <= start else None

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
            more = self._near_markers(out)
            if not more:
                break
            for start, end, priority in more:  # back to input offsets; markers are never hit
                shift = shifts[bisect.bisect_right(shifts, (start, math.inf)) - 1][1]
                spans.append((start - shift, end - shift, priority))
            spans.sort()
            out, shifts = self._render(text, spans)
        hits = tuple(Hit(self._rules[p].name, start, end) for start, end, p in spans)
        return RedactionResult(out, hits)

    def _near_markers(self, out: str) -> list[tuple[int, int, int]]:
        """The spans of ``out`` a rescan finds: only text near a marker can have changed.

        A long text is rescanned in windows around its markers (wider than any rule's
        context, widened to whitespace so no token is cut), not as a whole.
        """
        if len(out) <= 4 * _RESCAN_WINDOW:
            return self._spans(out)
        windows: list[list[int]] = []
        for m in _MARKER_RE.finditer(out):
            lo, hi = max(0, m.start() - _RESCAN_WINDOW), m.end() + _RESCAN_WINDOW
            while lo and not out[lo - 1].isspace() and m.start() - lo < 2 * _RESCAN_WINDOW:
                lo -= 1
            while hi < len(out) and not out[hi].isspace() and hi - m.end() < 2 * _RESCAN_WINDOW:
                hi += 1
            if windows and lo <= windows[-1][1]:
                windows[-1][1] = max(windows[-1][1], hi)
            else:
                windows.append([lo, hi])
        return [(s + lo, e + lo, p) for lo, hi in windows for s, e, p in self._spans(out[lo:hi])]

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
