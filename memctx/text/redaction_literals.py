"""Is a value in a secret context a literal secret, and does a key name a secret?

Pure functions on strings that the redaction checks (:mod:`memctx.text.redaction_checks`)
and the high-entropy rule (:mod:`memctx.text.redaction_entropy`) share. Two strengths of
"literal": :func:`literal_value` is strict (a name such as ``token`` or ``YOUR_API_KEY`` is
not a secret) and judges a value under a key that might be code; :func:`loose_literal`
masks any literal except references, keywords, types, names and elisions, and judges a value
under a key that *names* a secret (``DB_PASSWORD=``, ``password:``, ``--password``), where
an all-letter value such as ``letmein`` is a password. The thresholds were measured on real
agent sessions and installed packages' code and docs (``scripts/measure_redaction.py``).
"""

from __future__ import annotations

import re

UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
DIGITS = frozenset("0123456789")

_REF_START = tuple("$%<{[@*=#!})],;")
_SPACE_RE = re.compile(r"\s")
_KEYWORDS = frozenset({"none", "null", "nil", "true", "false", "undefined"})
_CODE_REF_RE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?![\w$])")
_NUMBER_RE = re.compile(r"[+-]?[0-9][0-9_]*(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?", re.IGNORECASE)
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROSE_RE = re.compile(r"[ \t]+[A-Za-z]{2,}\b")
_PARTS_RE = re.compile(r"[_.\-]+")
_WORDS_RE = re.compile(r"[A-Z][a-z]{2,}|[a-z]{3,}")


def wordy(s: str) -> bool:
    """Two thirds of ``s`` are words (``Word``, ``word``): a CamelCase name, not random text."""
    return sum(map(len, _WORDS_RE.findall(s))) >= 0.66 * len(s)


def name_like(value: str) -> bool:
    """A variable, type or placeholder name: ``token``, ``Token-based``, ``s3_pair``."""
    parts = [p for p in _PARTS_RE.split(value) if p]
    if all(p.isalpha() for p in parts):
        if len(parts) == 1:
            return len(value) < 24 or wordy(value)
        return all(p.islower() or p.isupper() or p.istitle() or wordy(p) for p in parts)
    snake = (p.isalnum() and (p.islower() or p.isupper() or p.isdigit()) for p in parts)
    return "_" in value and all(snake)


def elided(value: str) -> bool:
    """``sk-...``, ``****``, ``xxxx``: a value shown with its secret left out."""
    v = value.rstrip(".:")
    if any(s in value for s in ("...", "…", "****", "•")) or v.endswith("***"):
        return True
    return bool(v) and sum(v.count(c) for c in "xX*") >= 0.6 * len(v)


def _code_ref(value: str) -> bool:
    """``os.environ``, ``e.auth_password``, ``settings.SECRET``: attribute paths, not data."""
    ref = _CODE_REF_RE.match(value)
    return ref is not None and all(len(p) < 4 or name_like(p) for p in ref.group().split("."))


_PATH_PART_RE = re.compile(r"[A-Za-z0-9]{1,3}|[A-Za-z0-9._\-]*[a-z]{2}[A-Za-z0-9._\-]*")


_IDENT_PART_RE = re.compile(r"[a-z_]+[0-9]*|[A-Z_]+[0-9]*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*")


def whole_code_ref(value: str) -> bool:
    """The whole value is an attribute path of word-like names (``process.env.API_KEY``,
    ``settings.SECRET``), not a random password that happens to hold a dot (``kR.VMj+A7``)."""
    parts = value.split(".")
    if len(parts) < 2 or not re.fullmatch(r"[A-Za-z_$]+", parts[0]):
        return False
    return all(_IDENT_PART_RE.fullmatch(p) for p in parts)


def _ref_prefix(value: str) -> bool:
    """``os.environ/OPENAI_API_KEY`` (litellm), ``os.environ[...]``: a path, then syntax."""
    ref = _CODE_REF_RE.match(value)
    if ref is None or ref.end() == len(value) or value[ref.end()] not in "/[(":
        return False
    return whole_code_ref(ref.group())


def _file_path(value: str) -> bool:
    """``~/.ssh/id_ed25519``, ``/v1/mcp/user-credentials``: a path, not the secret."""
    parts = [p for p in value.lstrip("~.").split("/") if p]
    if value[0] not in "/~." or not parts:
        return False
    return all(name_like(p) or (_PATH_PART_RE.fullmatch(p) and not _mixed(p)) for p in parts)


def _mixed(s: str) -> bool:
    """Upper, lower and digits in a run of 12+: random, not a name."""
    chars = set(s)
    return len(s) >= 12 and bool(chars & UPPER and chars & LOWER and chars & DIGITS)


def literal_value(value: str, quoted: bool = False) -> bool:
    """Whether a value under a key that may be code is a literal secret (strict)."""
    v = value.rstrip(".:")
    if len(v) < 3 or v.startswith(_REF_START) or v.lower() in _KEYWORDS:
        return False
    if _SPACE_RE.search(v):
        return False  # a phrase: ``"token": "Invalid token"``; see :func:`loose_literal`
    code = ("{", "}", ";") if quoted else ("?", "(", "=")  # ``"token: "+(0,S.x)(e))}``, ``a?b``
    if any(s in v.rstrip("=") for s in code) or ("<" in v and ">" in v):
        return False
    if elided(value) or _code_ref(v) or _NUMBER_RE.fullmatch(v) or _file_path(v):
        return False
    return not name_like(v.rstrip("="))


# Words that stand where a value's type or a placeholder goes: ``password: str``, an OpenAPI
# example ``"password": "string"``, a help text's ``--token string``.
_TYPE_WORDS = frozenset(
    "str string text bytes int integer bool boolean number float any unknown object optional"
    " required secretstr secretbytes varchar char uuid list dict array map value values"
    " yes no on off empty hidden masked redacted include omit same-origin"  # fetch()
    " the and for with from your this that not are was will can via use using when then"
    " foo bar baz qux".split()  # metasyntactic placeholders
)
TEMPLATE_RE = re.compile(r"\$[{(A-Za-z_]|\{\{|\{%|%[A-Za-z_]\w*%|%\(\w+\)[sd]|%[sd]\Z|<[^<>]+>")
SECRET_WORDS = frozenset(
    "pass pw pwd passwd password token secret key apikey cred creds credential credentials auth"
    " cookie session".split()
)
_SECRET_TAILS = ("password", "token", "secret", "credentials")
_PASCAL_RE = re.compile(r"(?:[A-Z][a-z]+){2,}")  # ``SecretStr``; one word may be a password
_CAMEL_RE = re.compile(r"[a-z]{2,}(?:[A-Z][a-z]+[0-9]*)+")  # ``csrfToken``, ``apiKey``
_SNAKE_RE = re.compile(r"[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+")
_JS_RE = re.compile(r"\?\.|\?\?|&&|\|\||=>|\?[\w.$\"']+:|\s\|\s")
_NEGATION_RE = re.compile(r"!+[a-z_$][A-Za-z_$.]*")  # ``!!t``, ``!isValid``; not ``!Passw0rd``
PRIVATE_NAME_RE = re.compile(r"_+[A-Za-z][A-Za-z_]*[0-9]?")
_ASSIGNMENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_CALL_RE = re.compile(r"[A-Za-z_][\w.]*[(\[]")
_CODE_START = ("$", "{", "(", "[", "`", "<", "=", "}", ")", "]", ",", ";")  # ``==R``, ``}),``
_COLOR_RE = re.compile(r"#[0-9a-fA-F]{3,8}")


def loose_literal(value: str, code: bool = True) -> bool:
    """Whether a value under a key that names a secret is a literal (lenient).

    Everything is a secret except: references and templates (``$X``, ``${{ x }}``, ``%X%``,
    ``<token>``), keywords and type words (``null``, ``str``), elisions (``****``, ``sk-...``),
    calls and attribute paths (``getpass()``, ``os.environ``; only if ``code``: a command
    line's argument is never code), file paths, digit-only values under 6 digits (``PASS=0``
    counts test passes) and values under 3 characters. A placeholder such
    as ``changeme`` is masked: masking a placeholder is harmless, leaking a real password of
    the same shape is not (names such as ``YOUR_API_KEY`` are left to :func:`named_value`).
    """
    v = value.strip()
    if len(v) < 3 or v.startswith(_CODE_START) or TEMPLATE_RE.search(v):
        return False
    if (v.endswith((":", ".")) and v[:-1].isalpha()) or _COLOR_RE.fullmatch(v):
        return False  # ``token: str:`` and ``Required.`` in docstrings, ``#d0d0d0`` colours
    if " " in v and (
        len(v.split()) > 6
        or v.rstrip()[-1] in ".!?"
        or any(s in SECRET_WORDS for s in key_segments(v))
    ):
        return False  # a sentence or a label (``"Show password"``), not a passphrase
    if _JS_RE.search(v) or _NEGATION_RE.fullmatch(v):
        return False  # ``d?.key??null``, ``!!t``: minified JavaScript, not a value
    if _ASSIGNMENT_RE.match(v):
        return False  # ``token: API_KEY=...``: a label before an assignment, judged on its own
    low = v.lower()
    if low in _KEYWORDS or low in _TYPE_WORDS or elided(v) or _CALL_RE.match(v):
        return False
    if v.isdigit():
        return len(v) >= 6
    if code and (whole_code_ref(v.rstrip(";,)")) or _ref_prefix(v)):
        return False
    return not (_NUMBER_RE.fullmatch(v) or _file_path(v))


_NAME_PART_RE = re.compile(r"[A-Za-z]+[0-9]{0,2}")


def named_value(value: str) -> bool:
    """A name made of words, one of which names a secret: ``"byok_session_cookie"``,
    ``"GITHUB_TOKEN"``, ``"clientCredentials"``: a constant's or variable's name, not a value."""
    if len(value) > 80:
        return False
    segments = key_segments(value)
    if len(segments) < 2 or not all(_NAME_PART_RE.fullmatch(p) for p in _PARTS_RE.split(value)):
        return False
    return any(s in SECRET_WORDS or s.endswith(_SECRET_TAILS) for s in segments)


def code_identifier(value: str) -> bool:
    """An unquoted ``key: value`` whose value reads as code: a type or a variable.

    ``password: SecretStr``, ``token: csrfToken``, ``password: user_password``, ``password:
    pass``: YAML would hold a literal there, TypeScript, Python and Elixir a name.
    """
    if _PASCAL_RE.fullmatch(value) or (_CAMEL_RE.fullmatch(value) and value.isalpha()):
        return True
    if PRIVATE_NAME_RE.fullmatch(value):
        return True  # ``token: _Token``, ``_credentials_api_key``: private names
    if _SNAKE_RE.fullmatch(value) or _CAMEL_RE.fullmatch(value) or value.isalpha():
        return any(s in SECRET_WORDS or s.endswith(_SECRET_TAILS) for s in key_segments(value))
    return False


# --- keys that name a secret -------------------------------------------------------------------

_SEGMENT_RE = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
PASSWORDISH = frozenset({"password", "passwd", "passphrase", "pwd", "pass", "pw"})
_SECRETISH = frozenset({"secret", "credential", "credentials", "apikey"})
_STRONG_KEY_QUALIFIERS = frozenset(
    "api secret private access client master encryption signing account service subscription"
    " admin auth app license consumer shared storage webhook session".split()
)
_NOT_CREDENTIAL_TOKENS = frozenset(  # ``pad_token``, ``max_token``: tokenizer and budget keys
    "pad eos bos unk sep cls mask special start end stop eot eod sot boi eoi image img audio"
    " video vision max min num total input output prompt completion reasoning cached next"
    " prev previous page last first cancel cancellation continuation cursor sync lexer parse"
    " parser sentence word subword prefix suffix middle fim think thinking tool system"
    " assistant decoder forced added extra new unknown".split()
)


def key_segments(key: str) -> list[str]:
    """``DB_PASSWORD`` -> ``[db, password]``, ``clientSecret`` -> ``[client, secret]``."""
    return [s.lower() for s in _SEGMENT_RE.findall(key)]


def strong_key(key: str) -> bool:
    """Whether ``key`` names a secret outright, so that any literal under it is one."""
    segs = key_segments(key.strip("\"'`\\*"))
    if not segs or (segs[-1].isdigit() and len(segs) > 1 and len(segs[-1]) <= 2):
        segs = segs[:-1] or segs
    if not segs:
        return False
    last = segs[-1].rstrip("0123456789") or segs[-1]
    before = segs[-2] if len(segs) > 1 else ""
    if last in PASSWORDISH or last in _SECRETISH or last.endswith(("password", "passwd")):
        return (key.upper() not in {"PWD", "OLDPWD"}) and not (last == "pw" and not before)
    if last.endswith("secret") or last.endswith(("apikey", "accesskey", "privatekey")):
        return True
    if last == "token" or last.endswith("token"):
        return before not in _NOT_CREDENTIAL_TOKENS
    if last == "base" and before == "key" and "secret" in segs:  # ``secret_key_base``
        return True
    return last == "key" and before in _STRONG_KEY_QUALIFIERS


_KEY_BACK_RE = re.compile(r"[A-Za-z0-9_.\-]*\Z")


def full_key(text: str, start: int, end: int) -> str:
    """The whole key whose secret-naming tail is ``text[start:end]``: ``db_password``."""
    m = _KEY_BACK_RE.search(text, max(0, start - 64), start)
    return (m.group() if m else "") + text[start:end]


LABEL_RE = re.compile(r"[A-Za-z][ \t]+\Z")  # a word, then the key: ``Next special token:``
QUOTED_CODE_RE = re.compile(r"[(){};]")  # ``"Token: "+(0,S.x)(e))}``: code between quotes
KEY_PLACE_RE = re.compile(r"(?:^|[\n?&\"'{,]|\\n)[ \t]*\Z")  # where a bare ``pass:`` is a key
_WORD_VALUE_RE = re.compile(  # ``OAuth2``, ``Base64-encoded``, ``API``, ``ID-JAG``
    r"(?:[A-Z]{0,2}[a-z]+|[A-Z]{2,})[0-9]*(?:[-_/](?:[A-Z]{0,2}[a-z]+|[A-Z]{2,})[0-9]*)*[.:,;!?]?"
)


def prose_after(text: str, value: str, end: int, key: str = "") -> bool:
    """A word value followed by more words: ``client_secret: OAuth2 client secret``,
    ``Second pass: sanitize/disambiguate names``. A password with a digit stays a password
    even inside a sentence: ``password: hunter2 and ...``."""
    if not (_WORD_VALUE_RE.fullmatch(value) and _PROSE_RE.match(text, end)):
        return False
    segments = key_segments(key)
    passwordish = bool(segments) and segments[-1] in PASSWORDISH
    return not (passwordish and any(c.isdigit() for c in value))
