"""The checks behind the redaction rules: is this match a literal secret in its context?

A check takes the whole text, the match and the span the rule would mask; it returns the span
to mask (narrowed, or widened to context the pattern left out, such as a Telegram bot id) or
``None`` to veto. The rule table is :mod:`memctx.text.redaction_rules`; what counts as a
literal value or a secret-naming key is :mod:`memctx.text.redaction_literals`; the
last-resort entropy rule is :mod:`memctx.text.redaction_entropy`. The thresholds were set by
measuring false positives on real agent sessions and on installed packages' code and docs
(``scripts/measure_redaction.py``), not by guessing; each guard names the shape it keeps.
"""

from __future__ import annotations

import re

from .redaction_entropy import entropy
from .redaction_literals import (
    DIGITS,
    IDENT_RE,
    KEY_PLACE_RE,
    LABEL_RE,
    LOWER,
    PASSWORDISH,
    PRIVATE_NAME_RE,
    QUOTED_CODE_RE,
    SECRET_WORDS,
    TEMPLATE_RE,
    UPPER,
    code_identifier,
    elided,
    full_key,
    key_segments,
    literal_value,
    loose_literal,
    name_like,
    named_value,
    prose_after,
    strong_key,
    whole_code_ref,
    wordy,
)

_Span = tuple[int, int]
_ENV_BEFORE = frozenset("abcdefghijklmnopqrstuvwxyz$")
_ESCAPED_RE = re.compile(r"\\[nrt]\Z")
_ENV_NAME_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*\Z")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "bot", "apikey", "negotiate"})


def secret_value_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``key: value`` / ``key=value`` under a key that ends in a secret word."""
    if m.start() and text[m.start() - 1] == ":":  # ``arn:aws:secretsmanager:..:secret:name``
        return None
    if m.group("key") in ("pass", "pwd", "auth") and m.start() and text[m.start() - 1].isalpha():
        return None  # ``bypass:``, ``oauth=``: another word
    value = text[span[0] : span[1]]
    bare, sep, quoted = m.group("uv") is not None, m.group("sep"), m.group("qv") is not None
    if bare and sep == "=" and m.group("pad") and IDENT_RE.fullmatch(value):
        return None  # ``token = b64encode``: code assigns a variable
    key = full_key(text, m.start(), m.end("key"))
    if bare and prose_after(text, value, span[1], key):
        return None  # ``client_secret: OAuth2 client secret``: a sentence, not a value
    if key.lower() in ("pass", "auth") and not KEY_PLACE_RE.search(
        text, max(0, m.start() - 64), m.start()
    ):
        return None  # ``Second pass: ...``, ``Basic auth: ...``: English words, not keys
    if value.lower() == key.lower().strip("\"'`*") or named_value(value):
        return None  # ``token=token``, ``auth: "OneLogin_Saml2_Auth"``: names, not values
    if literal_value(value, quoted):
        return span
    # Below: what only a key naming a secret makes a secret (``password: letmein``).
    if not strong_key(key) or not loose_literal(value) or key.lower() == "pass":
        return None  # the word ``pass`` alone (``'pass': 'bandpass'``): random values only
    key_start = m.end("key") - len(key)
    if m.group("key") not in PASSWORDISH and LABEL_RE.search(
        text, max(0, key_start - 40), key_start
    ):
        return None  # ``Predicted token: Paris``: a label in prose; a password stays one
    key_quoted = text[m.end("key") : m.start("sep")].strip(" \t\\*]").startswith(('"', "'"))
    if key_quoted and text[max(0, key_start - 2) : key_start].rstrip("\"'\\ ")[-1:] in (":", "?"):
        return None  # ``c?"client_credentials":"clientCredentials":"application"``: a ternary
    if sep == ":" and not key_quoted and text[m.end("sep") : span[0]] in ("", '"', "'", "`"):
        return None  # ``vault_token:"Token"``, ``keyToken:eP.token``: minified JavaScript
    if quoted:
        code = QUOTED_CODE_RE.search(value) or value.lower() in SECRET_WORDS
        return None if code or named_value(value) else span
    if key_quoted and IDENT_RE.fullmatch(value):
        return None  # ``{"token": chunk}``: JSON holds no bare words, Python and JS names
    after = text[span[1] : span[1] + 4].lstrip(" \t")
    if after[:1] in ("(", "[", "<", "?", "|", ".", ")") or after.startswith("="):
        return None  # ``password: str = ""``, ``token: Optional[str]``, ``f(token: T)``
    if after[:1] in (",", "]", "}") and IDENT_RE.fullmatch(value):
        return None  # ``f(dep_token: Tensor, ...)``, ``{token: foreground, ...}``: names
    if sep == "=" and (m.group("pad") or after[:1] == ","):
        return None  # ``f(password=pwd, ...)``: a keyword argument names a variable
    if code_identifier(value):
        return None
    return span


_ENV_KEY_BACK_RE = re.compile(r"[A-Z0-9_]*\Z")


def env_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``DB_PASSWORD=letmein``, ``export TOKEN=...``, ``set -x TOKEN ...``: env assignments."""
    if "key" in m.re.groupindex:  # ``set -x KEY VALUE``: the pattern holds the key
        key = m.group("key")
    else:  # ``..._PASSWORD=``: the pattern starts at the key's last word; read the rest back
        back = _ENV_KEY_BACK_RE.search(text, max(0, m.start() - 64), m.start())
        start = back.start() if back else m.start()
        if (
            start
            and text[start - 1] in _ENV_BEFORE
            and not _ESCAPED_RE.search(text, max(0, start - 2), start)
        ):
            return None  # ``myTOKEN=``, ``$PASSWORD=``: not an env name
        key = text[start : m.end("suffix")]
    value, quoted = text[span[0] : span[1]], m.group("qv") is not None
    if not line_key_names_secret(key) or value.lower() == key.lower() or named_value(value):
        return None  # ``ENV_GITHUB_TOKEN = "GITHUB_TOKEN"``: the name of a variable
    spaced = "pad" in m.re.groupindex and m.group("pad")
    if spaced and not quoted and not literal_value(value):
        return None  # ``API_KEY = DEFAULT_KEY``: spaces around ``=`` and a bare name is code
    stripped = value.rstrip(";,)")
    if stripped != value and IDENT_RE.fullmatch(stripped):
        return None  # ``f(API_KEY=api_key, ...)``: a keyword argument names a variable
    value = value.rstrip(";,")
    if not loose_literal(value) or PRIVATE_NAME_RE.fullmatch(value):
        return None
    return span[0], span[0] + len(value)


def webhook_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A webhook URL's secret path, unless it is a placeholder (``T000/B000/XXXXXXXX``)."""
    last = text[span[0] : span[1]].rstrip("/").rsplit("/", 1)[-1]
    return None if len(set(last)) <= 2 or elided(last) else span


def xml_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``<db_password>pw</db_password>``: an element whose name names a secret."""
    if not strong_key(text[m.start("key") : m.end("key")]):
        return None
    return span if loose_literal(text[span[0] : span[1]]) else None


def env_key_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``STRIPE_KEY=...``: a generic ``_KEY``/``_AUTH`` name, so the value must look random."""
    if not _ENV_NAME_RE.search(text, max(0, m.start() - 64), m.start()):
        return None
    value = text[span[0] : span[1]]
    if len(value) < 8 or not literal_value(value, m.group("qv") is not None):
        return None
    return span if any(c.isdigit() for c in value) and any(c.isalpha() for c in value) else None


def npmrc_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``//registry/:_authToken=...`` lines of an ``.npmrc``."""
    if m.start() and text[m.start() - 1] not in ":\n":
        return None
    return span if literal_value(text[span[0] : span[1]], m.group("qv") is not None) else None


def credential_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """The credentials of an ``Authorization:`` header or a ``Bearer`` token."""
    value = text[span[0] : span[1]]
    if value.lower() in _AUTH_SCHEMES or len(value) < 8 or not literal_value(value):
        return None
    if "scheme" in m.re.groupindex and m.group("scheme"):  # ``Authorization: Basic <creds>``
        return span
    return span if any(c.isdigit() or c in "+/=_-.~" for c in value) else None


_HEADER_NAME_RE = re.compile(r"(?:^|(?<=[\s\"'`{,])|(?<=\\n))[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\Z")
_NOT_CREDENTIAL_HEADERS = frozenset(
    "websocket idempotency cache public sort partition primary foreign hash range row lookup"
    " dedup routing object request trace span message event group shard content".split()
)


def header_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``X-Api-Key: ...``, ``Private-Token: ...``: a header whose name names a credential."""
    name = _HEADER_NAME_RE.search(text, max(0, m.start() - 64), m.start())
    if name is None:
        return None  # not at a header's place: ``foo.bar-key: x`` in code
    if set(key_segments(name.group())) & _NOT_CREDENTIAL_HEADERS:
        return None  # ``Sec-WebSocket-Key``, ``Idempotency-Key``: nonces and ids
    value = text[span[0] : span[1]].rstrip("})],")
    quoted_name = text[m.start() + 1 : span[0]].lstrip("abcdefghijklmnopqrstuvwxyz")[:1] in "\"'\\"
    if quoted_name and span[0] and text[span[0] - 1] not in "\"'":
        return None  # ``{"x-api-key": api_key}``: a dict of headers built from variables
    if len(value) < 6 or not loose_literal(value) or code_identifier(value):
        return None
    if prose_after(text, value, span[0] + len(value)) or named_value(value):
        return None
    return span[0], span[0] + len(value)


def cookie_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A ``Cookie:`` header's pairs, or the first pair of a ``Set-Cookie:``: session ids."""
    value = text[span[0] : span[1]].rstrip()
    if "=" not in value or value.startswith(("$", "{", "<")):
        return None  # ``cookie: string``, ``cookie: req.headers.cookie``
    if m.group("set"):
        value = value.split(";", 1)[0]
    name, _, secret = value.partition("=")
    if not secret.strip() or not IDENT_RE.fullmatch(name.strip().replace("-", "_")):
        return None
    if name != name.rstrip() or secret != secret.lstrip():
        return None  # ``cookie: Final = x``: an assignment in code, not a header
    start = span[0] + len(name) + 1  # keep the first cookie's name readable
    return start, span[0] + len(value)


def cli_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A password given to a command: ``--password X``, ``mysql -pX``, ``curl -u u:X``."""
    value = text[span[0] : span[1]]
    if "q" in m.re.groupindex and m.group("q") is None:
        value = value.rstrip(";,)")
    if value.startswith("-") and span[0] and text[span[0] - 1].isspace():
        return None  # ``--password -h host``: the next option, the password is prompted for
    if not loose_literal(value, code=False):
        return None
    if re.fullmatch(r"[A-Z][A-Z0-9_\-]*", value) and not any(c.isdigit() for c in value):
        return None  # ``--password PASSWORD``: a help text's metavariable
    if re.match(r"[a-z]+=", value) and "id=" in value:
        return None  # ``docker build --secret id=npm,src=...``: a spec, not the secret
    return span[0], span[0] + len(value)


_CURL_RE = re.compile(r"\b(?:curl|wget|lftp|https?(?=[ \t]))\b")


def curl_user_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``-u user:pw`` is a credential for curl and httpie, a uid:gid for docker."""
    lo = max(0, m.start() - 400)
    line_start = max(text.rfind("\n", lo, m.start()), text.rfind("\\n", lo, m.start()), lo)
    if not _CURL_RE.search(text, line_start, m.start()):
        return None
    return cli_check(text, m, span)


_LOGIN_COMMAND_RE = re.compile(
    r"\b(?:docker|podman|nerdctl|buildah|skopeo|oras|helm|crane|az|oc|cf|argocd)\b[^\n|;&]*\Z"
)


def login_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``docker login -p PW``: ``-p`` is a password after a registry or cloud ``login``."""
    if not _LOGIN_COMMAND_RE.search(text, max(0, m.start() - 120), m.start()):
        return None
    return cli_check(text, m, span)


def htpasswd_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``htpasswd -b[c] FILE USER PW`` / ``htpasswd -nb USER PW``: the password argument."""
    group = "a2" if "n" in m.group("flags") else "a3"
    if m.group(group) is None:
        return None
    value = m.group(group).strip("'\"")
    return m.span(group) if loose_literal(value) else None


def url_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """The password of ``scheme://user:password@host``; ``host:port/path@x`` is not one."""
    value = text[span[0] : span[1]]
    if value[0] in "${<" or set(value) <= {"*"} or TEMPLATE_RE.match(value):
        return None
    if re.match(r"\d{1,5}(?:[/?#]|\Z)", value):
        return None  # ``https://host:8443/@scope/pkg``: a port, then a path
    return span


_PGPASS_HOST_RE = re.compile(
    r"(?:^|(?<=[\n\r\"])|(?<=\\n))[ \t]*(?:[A-Za-z0-9._\-]*[A-Za-z.][A-Za-z0-9._\-]*|\*)\Z"
)
_SOURCE_SUFFIXES = (".py", ".js", ".ts", ".go", ".rs", ".c", ".h", ".ex", ".exs", ".rb", ".java")


def pgpass_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A ``host:port:db:user:password`` line of a ``.pgpass`` file (the match starts at
    ``:port``; the host, alone at the line's start, is read back)."""
    host = _PGPASS_HOST_RE.search(text, max(0, m.start() - 256), m.start())
    if host is None or host.group().strip().endswith(_SOURCE_SUFFIXES):
        return None  # ``file.py:12:5:E302:...``: a compiler or linter location
    port = m.group("port")
    if port != "*" and not 0 < int(port) < 65536:
        return None
    return span if loose_literal(text[span[0] : span[1]]) else None


def key_body_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """Provider keys are random base62: ``sk-toggleable__label`` is a CSS class, not a key.

    Upper, lower and digits together mark a key; a long run (32+) of mixed case counts too,
    because about 1 random 40-character key in 1,000 happens to hold no digit; so does a run
    of 32+ hex after the prefix (the prefix makes it a key: DeepSeek's ``sk-`` + 32 hex).
    """
    raw = text[span[0] : span[1]]
    raw = raw[raw.index("-") + 1 :] if "-" in raw[:4] else raw[3:]
    body = set(raw)
    mixed_case = bool(body & UPPER and body & LOWER)
    if mixed_case and (body & DIGITS or (len(raw) >= 32 and "__" not in raw)):
        return span
    return span if len(raw) >= 32 and body <= set("0123456789abcdef") else None


def mixed_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A vendor token whose prefix alone is a word: its body mixes upper, lower and digits."""
    body = set(text[span[0] : span[1]].split("-", 1)[-1].split("_", 1)[-1])
    return span if body & UPPER and body & LOWER and body & DIGITS else None


_GITLAB_PREFIXES = frozenset(
    "glpat glptt gldt glrt glrtr glcbt glft glimt glagent gloas glsoat glffct glwt".split()
)


def gitlab_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """GitLab's documented ``gl*-`` prefixes make a token; another ``gl*-`` word must mix."""
    prefix, _, body = text[span[0] : span[1]].partition("-")
    if prefix in _GITLAB_PREFIXES:
        return span
    if "-" in body or wordy(body):  # ``globaly-1-llama2-13b``: a model name, not a token
        return None
    return mixed_check(text, m, span)


def token_body_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``secret_`` + 43 base62 (Notion): mixed case, and digits or not a run of words."""
    raw = text[span[0] : span[1]].split("_", 1)[-1]
    body = set(raw)
    if not (body & UPPER and body & LOWER):
        return None
    return span if body & DIGITS or not wordy(raw) else None


def letters_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``hf_`` + random letters: mixed case, and not a CamelCase name of whole words."""
    body = text[span[0] : span[1]].split("_", 1)[-1]
    if not (set(body) & UPPER and set(body) & LOWER):
        return None
    return None if re.fullmatch(r"(?:[A-Z][a-z]{2,})+", body) else span


_TELEGRAM_ID_RE = re.compile(r"(?<![A-Za-z0-9_\-])[0-9]{8,10}\Z")
_DISCORD_HEAD_RE = re.compile(r"(?<![A-Za-z0-9_\-])[MNO][A-Za-z0-9_\-]{23,27}\Z")
_HEX32_RE = re.compile(r"(?<![A-Za-z0-9_\-])[0-9a-f]{32}\Z")


def _cased(s: str) -> bool:
    return bool(set(s) & UPPER and set(s) & LOWER)


def telegram_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``123456789:AA...``: a bot id before the colon (read back), a mixed-case secret after."""
    bot = _TELEGRAM_ID_RE.search(text, max(0, m.start() - 11), m.start())
    return (bot.start(), span[1]) if bot and _cased(m.group("body")) else None


def discord_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``<base64 user id>.<6>.<27+>``: the match starts at the first dot; read the id back."""
    head = _DISCORD_HEAD_RE.search(text, max(0, m.start() - 28), m.start())
    if head is None or not _cased(text[head.start() : span[1]]):
        return None
    return head.start(), span[1]


def twitter_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A Twitter bearer token: 21+ ``A`` then a random body, not base64 of zero bytes."""
    body = set(text[span[0] : span[1]].lstrip("A"))
    return span if body & LOWER and body & DIGITS | {"%"} else None


def hex_before_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """``<32 hex>-us12`` (Mailchimp): the suffix makes the hex before it a key."""
    key = _HEX32_RE.search(text, max(0, m.start() - 33), m.start())
    return (key.start(), span[1]) if key else None


def context_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A random-looking value right after a word that names a secret: ``token is a8F2...``."""
    if m.start() and (text[m.start() - 1] == ":" or text[m.start() - 1].isalpha()):
        return None  # ``arn:..:secret:name``, ``mytoken``: not the word itself
    start, end = span
    if text.startswith("..", end - 2) or text.startswith("…", end):
        return None  # ``verify_token="eyJhbGci..."``: an elided example
    while end > start and text[end - 1] in ".,":
        end -= 1
    value = text[start:end]
    if len(value) < 12 or elided(value) or "://" in text[max(0, start - 12) : end]:
        return None
    if text[end : end + 1] in ("(", "[") or whole_code_ref(value) or prose_after(text, value, end):
        return None  # ``token = Base.url_encode64(...)``, a docstring's sentence
    if "/" in value and all(name_like(p) or p in "~.." for p in value.split("/") if p):
        return None  # a path: ``private_key: ~/.ssh/id_ed25519``
    chars = set(value)
    if chars <= set("0123456789abcdefABCDEF-"):  # hex and UUIDs: secrets in this context
        return (start, end) if sum(c != "-" for c in value) >= 16 else None
    if not (chars & DIGITS and chars & (UPPER | LOWER)) or name_like(value):
        return None
    if re.match(r"v?\d+(?:\.\d+)+", value) or re.search(r"\.(?:[a-z]{1,4})\Z", value):
        return None  # a version, a file name
    if entropy(value) < 3.0:
        return None
    return start, end


# A key that starts a line: of a ``.env`` file (``export K=v``), YAML (``k: v``, ``- k: v``),
# JSON (``{"k": "v"``, ``, "k": "v"``, also JSON-escaped inside a string), INI (``k = v``), a
# shell command (``cd x && export K=v``), or a string value (``{"command": "export K=v"}``).
_LINE_KEY_PLACE_RE = re.compile(
    r"(?:^|[\n\r{,;]|\\[nr]|&&|(?P<string>[:\[][ \t]*\\*[\"']))"
    r"[ \t]*(?:export[ \t]+|-[ \t]+)?(?:\\*[\"'])?\Z"
)
_KEY_ID_QUALIFIERS = frozenset(
    "private access secret signing api client encryption master service".split()
)
_LINE_WORDS = frozenset({"salt", "dsn", "cookie", "auth"})
_LINE_COMMENT_RE = re.compile(r"[ \t]+#.*\Z")


def line_key_names_secret(key: str) -> bool:
    """``SIGNING_SALT``, ``SENTRY_DSN``, ``private_key_id``, ``SESSION_COOKIE``, ``_auth``,
    and every key :func:`strong_key` accepts (``DB_PASSWORD``, ``STRIPE_SECRET``...)."""
    segs = key_segments(key)
    if not segs:
        return False
    if segs[-1] in _LINE_WORDS:
        return True
    if segs[-2:] == ["key", "id"]:
        return len(segs) >= 3 and segs[-3] in _KEY_ID_QUALIFIERS
    if segs[-1] == "keyid":
        return len(segs) >= 2 and segs[-2] in _KEY_ID_QUALIFIERS
    return strong_key(key)


def line_value_check(text: str, m: re.Match[str], span: _Span) -> _Span | None:
    """A value on a line that assigns a key naming a secret, whatever the value looks like.

    ``SIGNING_SALT=plainwords``, ``SENTRY_DSN=https://k@o1.ingest.sentry.io/1``,
    ``"private_key_id": "7f3a..."``: the key, not the value's shape, makes it a secret. Only
    keys that start a line (or a JSON member) count, so code (``f(token=t)``) and prose keep
    their own, stricter rules; values that are not literals (``$VAR``, ``null``, ``str``,
    ``get_token()``, a file path, a short number) and names (``"GITHUB_TOKEN"``) are left.
    """
    key_end = m.end("key")
    key = full_key(text, m.start(), key_end)
    key_start = key_end - len(key)
    place = _LINE_KEY_PLACE_RE.search(text, max(0, key_start - 96), key_start)
    if place is None or not line_key_names_secret(key):
        return None
    key_quoted = m.group("close").strip("\\") != ""
    if place.group("string") and key_quoted:
        return None  # ``?"client_credentials":"clientCredentials"``: a string, not a key
    if key_quoted and m.group("uv") is not None:
        return None  # ``{"token": chunk}``: JSON holds quoted values; a bare word is code
    sep = m.group("sep")
    if not key_quoted and ":" in sep and not sep.endswith((" ", "\t")):
        return None  # ``{vault_token:"Token"}``: minified JavaScript; YAML puts a space there
    if not key_quoted and text[max(0, key_start - 64) : key_start].rstrip(" \t")[-1:] in ("{", ","):
        return None  # ``f({token: t})``: a JavaScript object; a JSON member's key is quoted
    start, end = span
    bare = m.group("uv") is not None
    if bare:
        value = _LINE_COMMENT_RE.sub("", text[start:end]).rstrip(" \t,;")
        end = start + len(value)
    value = text[start:end]
    first = value.split(maxsplit=1)[0] if value.strip() else ""
    if not first or not loose_literal(value) or not loose_literal(first):
        return None
    if value.lower() == key.lower() or named_value(value) or elided(value):
        return None
    if bare and "=" in sep and " " in sep and IDENT_RE.fullmatch(value):
        return None  # ``token = tok``: code assigns a variable
    if bare and ":" in sep and named_value(first):
        return None  # ``password: SecretStr``, ``token: csrfToken``: a type or a name
    return start, end
