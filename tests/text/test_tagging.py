"""Rule-based tags (:mod:`memctx.text.tagging`): exact outputs pinned before the fast rewrite.

The expectations below were produced by the original implementation (a quadratic overlap
check between candidate runs and URL/backtick spans, one topic look-up per word) and written
down as literals before it was replaced, so the rewrite must give the very same tags: they
are stored in ``segments.jsonl`` and a rebuilt store must equal the original.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.text import keywords
from memctx.text.tagging import MAX_ENTITIES, entities, topics
from tests.strategies import examples

CASES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    (
        "",
        (),
        (),
    ),
    (
        "plain words only, nothing to tag here at all",
        (),
        (),
    ),
    (
        "See https://example.com/docs/api?x=1 and `parse_config` in src/app/config.py.",
        ("config", "api", "docs"),
        ("https://example.com/docs/api?x=1", "parse_config", "src/app/config.py"),
    ),
    (
        "Traceback: KeyError: 'user_id' raised in services/auth/login.py line 42; also ValueError.",
        ("auth", "bug"),
        ("KeyError", "user_id", "services/auth/login.py", "ValueError"),
    ),
    (
        "Deploy v1.2.3-rc.1 to staging, then v2.0 to production (see #123 and #4567).",
        ("deployment",),
        ("v1.2.3-rc.1", "v2.0", "#123", "#4567"),
    ),
    (
        "Server listening on localhost:8080 and 127.0.0.1:5432; port 6379 for redis, PORT=9000.",
        ("database",),
        ("localhost:8080", "127.0.0.1:5432", "port 6379", "port 9000"),
    ),
    (
        "`https://inside.backtick/url` then https://outside.example.org/path/`tick` done",
        (),
        ("https://inside.backtick/url", "https://outside.example.org/path/", "tick"),
    ),
    (
        "https://a.example.com/x`y` and `z https://b.example.com/w` overlap",
        (),
        ("https://a.example.com/x", "y", "https://b.example.com/w"),
    ),
    (
        "token [REDACTED:openai_key] and [REDACTED:secret_value:abc123] near parseConfigFile",
        (),
        ("parseConfigFile",),
    ),
    (
        "The function getUserById calls fetch_user_record and MaxRetryCount; HTTPServer too.",
        (),
        ("getUserById", "fetch_user_record", "MaxRetryCount"),
    ),
    (
        "and/or is not a path, but ./run.sh, ~/bin/tool, a/b/c and /etc/hosts are.",
        (),
        ("~/bin/tool", "a/b/c", "/etc/hosts"),
    ),
    (
        "数据库 迁移 失败, 请查看 src/db/migrate.py 中的 IntegrityError (端口 localhost:3000)",
        ("database",),
        ("src/db/migrate.py", "IntegrityError", "localhost:3000"),
    ),
    (
        "Files: package.json, pyproject.toml, Dockerfile, README.md, .env, tsconfig.json.",
        ("deployment", "config", "dependency", "docs"),
        ("package.json", "pyproject.toml", "README.md", "tsconfig.json"),
    ),
    (
        "`` empty backticks `a` `longer name here` ``` triple ``` and `unterminated",
        (),
        ("empty backticks", "triple", "and"),
    ),
    (
        "ci-pipeline config_file refactored; perf p95 latency up, cache misses; jwt login fails",
        ("deployment", "auth", "performance", "bug", "config", "refactor"),
        ("config_file",),
    ),
    (
        "x" * 130 + " " + "/very/long/" + "a" * 150 + ".py short/path.py",
        (),
        ("short/path.py",),
    ),
    (
        "Repeated: KeyError KeyError src/a.py src/a.py #1 #1 v1.0 v1.0",
        (),
        ("KeyError", "src/a.py", "#1", "v1.0"),
    ),
    (
        "many: " + " ".join(f"name_{i}_x" for i in range(30)),
        (),
        (
            "name_0_x",
            "name_1_x",
            "name_2_x",
            "name_3_x",
            "name_4_x",
            "name_5_x",
            "name_6_x",
            "name_7_x",
            "name_8_x",
            "name_9_x",
            "name_10_x",
            "name_11_x",
            "name_12_x",
            "name_13_x",
            "name_14_x",
            "name_15_x",
        ),
    ),
    (
        "Edge: (see src/app.py), [foo/bar.ts]; 'quoted/path.md'. end.",
        (),
        ("src/app.py", "foo/bar.ts", "quoted/path.md"),
    ),
    (
        "git commit -m 'fix: rebase branch' && docker compose up; pytest -k test_store --cov",
        ("testing", "deployment", "bug", "git"),
        ("test_store",),
    ),
    (
        "ws://host:1234/socket ftp://files.example.com/pub/file.tar.gz http://[::1]:80/",
        (),
        ("ws://host:1234/socket", "ftp://files.example.com/pub/file.tar.gz", "http://[::1"),
    ),
    (
        "C:\\Users\\me\\file.txt and @scope/package@1.2.3 plus user@example.com",
        ("dependency",),
        ("file.txt", "@scope/package@1.2.3"),
    ),
    (
        "Connection refused: postgres://db.internal:5432/app (psycopg2.OperationalError)"
        " at `db.connect()`",
        ("database",),
        ("db.connect()",),
    ),
    (
        "Release notes for 3.11.7 and 0.4.0-beta.2: fixed #42, see https://github.com/org/repo/pull/42.",
        ("deployment", "bug"),
        ("3.11.7", "0.4.0-beta.2", "#42", "https://github.com/org/repo/pull/42"),
    ),
    (
        "in `src/api/routes.ts` handleWebhookEvent throws TypeError;"
        " StripeWebhookHandler retries 3x",
        ("api",),
        ("src/api/routes.ts", "handleWebhookEvent", "TypeError", "StripeWebhookHandler"),
    ),
    (
        "`a` `b` `c` https://x.io/`a` `https://y.io/b` #9 `#10` port: 80 port=443 Port 22",
        (),
        (
            "a",
            "b",
            "c",
            "https://x.io/",
            "https://y.io/b",
            "#9",
            "#10",
            "port 80",
            "port 443",
            "port 22",
        ),
    ),
    (
        "Ünïcödé naïve café résumé — getÜserName and données/fichier.py plus ＡＰＩ",
        (),
        ("données/fichier.py",),
    ),
    (
        "[REDACTED:jwt] [REDACTED:bad marker with spaces] [REDACTED:]"
        " pathlike/[REDACTED:x]/file.py",
        ("auth",),
        (),
    ),
]


def test_pinned_topics_and_entities() -> None:
    assert len(CASES) >= 15
    for text, want_topics, want_entities in CASES:
        assert topics(text) == want_topics, text
        assert entities(text) == want_entities, text


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("データベースの数据库迁移", ("database",)),  # kana around Chinese keywords
        ("데이터베이스 数据库 테스트", ("database",)),  # hangul
        ("豈更 部署失败", ("deployment",)),  # compatibility ideographs
        ("ひらがな カタカナ 한국어 豈更", ()),  # CJK, but no Chinese keyword
    ],
)
def test_chinese_keywords_are_found_in_any_cjk_text(text: str, want: tuple[str, ...]) -> None:
    assert topics(text) == want


def test_topics_ask_memctx_text_whether_a_text_is_cjk(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chinese keywords are looked for only in text that the shared range calls CJK; with
    # that range narrowed to kana, Han-only text is no longer scanned, and kana text is. A
    # CJK range of tagging's own would ignore the change.
    assert topics("数据库迁移") == ("database",)
    monkeypatch.setattr(keywords, "CJK_RE", re.compile("[\u3040-\u30ff]"))
    assert topics("数据库迁移") == ()
    assert topics("データ 数据库迁移") == ("database",)


# -- the original entities(), verbatim (with its regexes), as the property tests' reference ---

_TRAILING_PUNCT = ".,;:!?'\"-"
_MARKER_RE = re.compile(r"\[REDACTED:[^\]\s]{1,64}\]")
_URL_RE = re.compile(r"\b(?:https?|wss?|ftp)://[^\s<>\"'`\])}]+")
_BACKTICK_RE = re.compile(r"`([^`\n]{1,80})`")
_PORT_WORD_RE = re.compile(r"\bport\s*[:=]?\s*(\d{2,5})\b", re.IGNORECASE)
# Candidate entities are runs of these characters; each run is then classified whole.
_CANDIDATE_RE = re.compile(r"[\w./~:#@+-]+")
_HOST_PORT_RE = re.compile(r"(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|0\.0\.0\.0):\d{2,5}")
_PATH_RE = re.compile(r"(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*\w")
_FILE_RE = re.compile(
    r"[\w.-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|toml|ya?ml|go|rs|java|kt|"
    r"c|h|cc|cpp|hpp|cs|rb|php|swift|sh|sql|txt|cfg|ini|lock|html|css|scss|vue|env)"
)
_ERROR_RE = re.compile(r"[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Fault|Interrupt)")
_ISSUE_RE = re.compile(r"#\d{1,7}")
_VERSION_RE = re.compile(r"v?\d+\.\d+(?:\.\d+)*(?:-[0-9A-Za-z.]+)?")
_CAMEL_RE = re.compile(r"[A-Za-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+[A-Za-z0-9]*")
_SNAKE_RE = re.compile(r"_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")


def _classify(token: str) -> str | None:
    """The entity a candidate run stands for, or None (most runs are plain words)."""
    if token.isalpha() and (token.islower() or token[1:].islower()):
        return None  # the common case: an ordinary word, no regex needed
    if token.startswith("#"):
        return token if _ISSUE_RE.fullmatch(token) else None
    if ":" in token:
        return token if _HOST_PORT_RE.fullmatch(token) else None
    if "/" in token:
        if _PATH_RE.fullmatch(token) and (
            token[0] in "/.~" or token.count("/") > 1 or "." in token.rsplit("/", 1)[-1]
        ):
            return token  # "and/or" is not a path; "src/app.py", "./run", "a/b/c" are
        return None
    for regex in (_FILE_RE, _VERSION_RE, _ERROR_RE, _CAMEL_RE, _SNAKE_RE):
        if regex.fullmatch(token):
            return token
    return None


def _reference_entities(text: str) -> tuple[str, ...]:
    if not text:
        return ()
    if "[REDACTED:" in text:
        text = _MARKER_RE.sub(lambda m: " " * len(m.group()), text)
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    if "://" in text:
        for m in _URL_RE.finditer(text):
            found.append((m.start(), m.group().rstrip(_TRAILING_PUNCT + ")")))
            taken.append(m.span())
    if "`" in text:
        for m in _BACKTICK_RE.finditer(text):
            if not any(s < m.end() and m.start() < e for s, e in taken):
                found.append((m.start(1), m.group(1).strip()))
                taken.append(m.span())
    if "port" in text.lower():
        for m in _PORT_WORD_RE.finditer(text):
            found.append((m.start(), f"port {m.group(1)}"))
    for m in _CANDIDATE_RE.finditer(text):
        token = m.group().strip(_TRAILING_PUNCT)
        if len(token) < 2 or (taken and any(s < m.end() and m.start() < e for s, e in taken)):
            continue
        value = _classify(token)
        if value is not None:
            found.append((m.start(), value))
    found.sort()
    out = dict.fromkeys(v for _, v in found if v and len(v) <= 120)  # _MAX_ENTITY_CHARS
    return tuple(out)[:MAX_ENTITIES]


# Pieces that exercise every rule and the overlaps between them: URLs around and inside
# backticks, markers, ports, paths, versions, identifiers, punctuation at the edges.
_PIECES = [
    "https://a.io/x",
    "http://h:80/p",
    "ws://s/",
    "`",
    "`code`",
    "`a b`",
    " ",
    "  ",
    "\n",
    ",",
    ".",
    ")",
    "(",
    "'",
    '"',
    "port",
    "Port 8080",
    "port=5432",
    "localhost:3000",
    "1.2.3.4:99",
    "src/app.py",
    "./run.sh",
    "~/bin",
    "a/b/c",
    "and/or",
    "v1.2.3",
    "2.0-rc.1",
    "#12",
    "#",
    "KeyError",
    "getUserName",
    "snake_case_name",
    "_private_x",
    "README.md",
    "x",
    "word",
    "[REDACTED:jwt]",
    "[REDACTED:",
    "]",
    "数据库",
    "é",
    "::",
    "--",
    "@scope/pkg",
    "a+b",
]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_entities_equal_the_original_implementation(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert entities(text) == _reference_entities(text)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet="ab`:/.#_- \n()[]Ep0123456789htps", max_size=120))
def test_entities_equal_the_original_on_noise(text: str) -> None:
    assert entities(text) == _reference_entities(text)
