"""Rule-based topic and entity tags for raw-store segments (English and Chinese).

The seed tags every archived segment on add with a small rule set, no model: tags must be
cheap (they run on every add, 20,000 segments in a full store) and deterministic (the same
text gives the same tags on every machine, so a rebuilt store equals the original).

- :func:`topics` looks words up in :data:`TOPIC_KEYWORDS`, one row per coding topic. English
  keywords match whole words (case-insensitive, a few stems such as ``deploy*``); Chinese
  keywords match as substrings because Chinese has no spaces. Topics come out in table order.
- :func:`entities` pulls concrete names out with regular expressions: URLs, file paths,
  backticked identifiers, error class names (``KeyError``), CamelCase and snake_case
  identifiers, versions (``v1.2.3``), ports (``localhost:8080``, ``port 5432``) and issue
  references (``#123``). The kinds are matched most specific first and a character belongs to
  one entity only (``src/_raw_store.py`` is a path, not also the identifier ``_raw_store``);
  the result is in order of first appearance, without repeats, capped at
  :data:`MAX_ENTITIES`.

Redaction markers (``[REDACTED:openai_key]``) are removed before matching so that rule names
never become entities.

Speed (both run on every add): plain words are skipped inside the regex engine, overlap
with URL and backtick spans is a bisect, and classifications and word topics are cached, so
a 900-character segment costs ~0.1 ms for both. ``tests/text/test_tagging.py`` pins the outputs
of the first, slower implementation and compares against it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from itertools import chain
from typing import Final

from .keywords import is_cjk

__all__ = ["MAX_ENTITIES", "MAX_TOPICS", "TOPIC_KEYWORDS", "entities", "topics"]

MAX_TOPICS: Final = 6
MAX_ENTITIES: Final = 16
# An entity longer than this is a blob (a minified line, a data URL), not a name.
_MAX_ENTITY_CHARS: Final = 120

# topic -> (English words, Chinese words), space-separated. An English word ending in "*"
# allows any ending ("deploy*": deploys, deployed, deployment); Chinese words are substrings.
TOPIC_KEYWORDS: Final[dict[str, tuple[str, str]]] = {
    "database": (
        "database* db sql postgres* mysql sqlite* mongo* redis schema* migration* query queries"
        " orm transaction*",
        "数据库 数据表 迁移 查询 索引 事务",
    ),
    "testing": (
        "test tests testing pytest unittest jest vitest mocha assert* fixture* coverage mock* e2e",
        "测试 单元测试 断言 覆盖率 用例",
    ),
    "deployment": (
        "deploy* release* docker* kubernetes k8s helm ci cd pipeline* production staging"
        " rollout rollback",
        "部署 发布 上线 回滚 容器",
    ),
    "auth": (
        "auth authn authz authenticat* authoriz* login logout oauth* jwt password* permission*"
        " rbac sso credential*",
        "认证 鉴权 授权 登录 权限 密码",
    ),
    "performance": (
        "performance perf slow* latency throughput optimi* benchmark* profil* bottleneck* cache"
        " caching p95 p99",
        "性能 优化 延迟 缓存 吞吐 卡顿",
    ),
    "bug": (
        "bug bugs error errors exception* traceback crash* fail fails failed failing failure*"
        " broken regression* fix fixed fixes stacktrace",
        "错误 异常 崩溃 修复 报错 故障 缺陷",
    ),
    "config": (
        "config* settings env dotenv yaml yml toml ini flag flags",
        "配置 环境变量 设置",
    ),
    "api": (
        "api apis endpoint* rest restful graphql grpc webhook* route routes request response",
        "接口 端点 请求 响应",
    ),
    "frontend": (
        "frontend front-end ui ux css html react vue angular svelte component* dom browser*"
        " tailwind",
        "前端 界面 页面 组件 样式",
    ),
    "dependency": (
        "dependency dependencies package* npm pip yarn pnpm poetry requirements lockfile"
        " upgrade* install*",
        "依赖 安装 升级 包管理",
    ),
    "security": (
        "security secure vulnerab* cve xss csrf injection encrypt* tls ssl sanitiz*",
        "安全 漏洞 加密 注入",
    ),
    "refactor": ("refactor* cleanup rename* restructur* simplif*", "重构 清理 重命名"),
    "git": ("git commit* branch* merge* rebase* pr cherry-pick", "提交 分支 合并"),
    "docs": ("docs documentation readme docstring* changelog", "文档 注释 说明"),
}


# The words topics() looks up, in lower-cased text: letter/digit runs with their "-"/"_"
# compounds ("ci-pipeline", "config_file"; _word_topics adds the parts). Deliberately not
# the keyword tokenizer's words: those also split camelCase, so names in code would be
# tagged by their parts ("InfoCache" performance, "FakeResponse" api, "MemoryContextConfig"
# config); here a keyword must be a whole word or, for a "stem*" keyword, a word's start.
_TOPIC_WORD_RE: Final = re.compile(r"[a-z0-9][a-z0-9_-]*")


def _topic_tables() -> tuple[
    dict[str, int], dict[str, int], frozenset[int], tuple[tuple[str, int], ...]
]:
    exact: dict[str, int] = {}
    stems: dict[str, int] = {}
    chinese: list[tuple[str, int]] = []
    for index, (english, cjk) in enumerate(TOPIC_KEYWORDS.values()):
        for word in english.split():
            if word.endswith("*"):
                stems.setdefault(word[:-1], index)
            else:
                exact.setdefault(word, index)
        chinese.extend((word, index) for word in cjk.split())
    return exact, stems, frozenset(map(len, stems)), tuple(chinese)


# One pass over the words of a text with dict look-ups: a regex per topic with word
# boundaries costs ~50 us per topic on a 900-character segment, this about 30 us in all.
_EXACT, _STEMS, _STEM_LENGTHS, _CHINESE = _topic_tables()
_TOPIC_NAMES: Final = tuple(TOPIC_KEYWORDS)

_MARKER_RE: Final = re.compile(r"\[REDACTED:[^\]\s]{1,64}\]")
_URL_RE: Final = re.compile(r"\b(?:https?|wss?|ftp)://[^\s<>\"'`\])}]+")
_BACKTICK_RE: Final = re.compile(r"`([^`\n]{1,80})`")
_PORT_WORD_RE: Final = re.compile(r"\bport\s*[:=]?\s*(\d{2,5})\b", re.IGNORECASE)
# Candidate entities are runs of ``[\w./~:#@+-]``; each run is then classified whole. A run
# is stripped of _TRAILING_PUNCT at both ends (of those characters only ".", ":" and "-"
# occur in runs) and skipped when under two characters or a plain word ("word", "Word",
# see _classify), which is most runs. The lookahead rejects exactly those runs inside the
# regex engine; the lookbehind makes every match start where a run starts.
_NAMELIKE_RE: Final = re.compile(
    r"(?<![\w./~:#@+-])"
    r"(?![.:-]*(?:[A-Za-z][a-z]+|[\w/~#@+])?[.:-]*(?![\w./~:#@+-]))"
    r"[\w./~:#@+-]+"
)
_TRAILING_PUNCT: Final = ".,;:!?'\"-"
_HOST_PORT_RE: Final = re.compile(r"(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|0\.0\.0\.0):\d{2,5}")
_PATH_RE: Final = re.compile(r"(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*\w")
_FILE_RE: Final = re.compile(
    r"[\w.-]+\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|toml|ya?ml|go|rs|java|kt|"
    r"c|h|cc|cpp|hpp|cs|rb|php|swift|sh|sql|txt|cfg|ini|lock|html|css|scss|vue|env)"
)
_ERROR_RE: Final = re.compile(r"[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Fault|Interrupt)")
_ISSUE_RE: Final = re.compile(r"#\d{1,7}")
_VERSION_RE: Final = re.compile(r"v?\d+\.\d+(?:\.\d+)*(?:-[0-9A-Za-z.]+)?")
_CAMEL_RE: Final = re.compile(r"[A-Za-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+[A-Za-z0-9]*")
_SNAKE_RE: Final = re.compile(r"_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")


@lru_cache(maxsize=65_536)
def _word_topics(word: str) -> tuple[int, ...]:
    """Topic indices of one lower-case word (cached: a session's vocabulary repeats)."""
    hits: list[int] = []
    # "ci-pipeline" and "config_file" also count as their parts.
    parts = (word, *re.split(r"[-_]", word)) if ("-" in word or "_" in word) else (word,)
    for part in parts:
        index = _EXACT.get(part)
        if index is not None:
            hits.append(index)
        for length in _STEM_LENGTHS:
            if len(part) >= length:
                index = _STEMS.get(part[:length])
                if index is not None:
                    hits.append(index)
    return tuple(hits)


def topics(text: str) -> tuple[str, ...]:
    """Coding topics mentioned in ``text``, in :data:`TOPIC_KEYWORDS` order.

    Args:
        text: Any text (redacted segment content).

    Returns:
        At most :data:`MAX_TOPICS` topic names, e.g. ``("database", "bug")``.
    """
    if not text:
        return ()
    # map/chain keep the per-word loop in C; an ASCII text needs no CJK scan at all.
    words = set(_TOPIC_WORD_RE.findall(text.lower()))
    hits = set(chain.from_iterable(map(_word_topics, words)))
    if not text.isascii() and is_cjk(text):
        hits.update(index for word, index in _CHINESE if word in text)
    return tuple(_TOPIC_NAMES[i] for i in sorted(hits))[:MAX_TOPICS]


@lru_cache(maxsize=65_536)
def _classify(token: str) -> str | None:
    """The entity a candidate run stands for, or None (cached: names recur in a session,
    and a miss runs up to five regular expressions)."""
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


def entities(text: str) -> tuple[str, ...]:
    """Concrete names in ``text``: paths, URLs, identifiers, errors, versions, ports, refs.

    Args:
        text: Any text (redacted segment content).

    Returns:
        At most :data:`MAX_ENTITIES` distinct entities in order of first appearance.
    """
    if not text:
        return ()
    if "[REDACTED:" in text:
        text = _MARKER_RE.sub(lambda m: " " * len(m.group()), text)
    found: list[tuple[int, str]] = []
    # URLs and backticked code first: their insides are not classified again. Each kind's
    # spans come sorted and disjoint (finditer), so an overlap test is a bisect, not a scan
    # of every span (which made this quadratic in the number of candidates and spans).
    urls: list[tuple[int, int]] = []
    if "://" in text:
        for m in _URL_RE.finditer(text):
            found.append((m.start(), m.group().rstrip(_TRAILING_PUNCT + ")")))
            urls.append(m.span())
    taken = urls
    if "`" in text:
        taken = list(urls)
        url_starts = [s for s, _ in urls]
        for m in _BACKTICK_RE.finditer(text):
            # Backticks never overlap each other (finditer), so only URLs can hide one.
            if not _overlaps(urls, url_starts, m.start(), m.end()):
                found.append((m.start(1), m.group(1).strip()))
                taken.append(m.span())
        taken.sort()
    if "port" in text.lower():
        for m in _PORT_WORD_RE.finditer(text):
            found.append((m.start(), f"port {m.group(1)}"))
    starts = [s for s, _ in taken]
    # Only runs that can be an entity: plain words and one-character runs, most of a text,
    # are skipped inside the regex engine instead of one Python iteration each.
    for m in _NAMELIKE_RE.finditer(text):
        token = m.group().strip(_TRAILING_PUNCT)
        if len(token) < 2 or (taken and _overlaps(taken, starts, m.start(), m.end())):
            continue
        value = _classify(token)
        if value is not None:
            found.append((m.start(), value))
    found.sort()
    out = dict.fromkeys(v for _, v in found if v and len(v) <= _MAX_ENTITY_CHARS)
    return tuple(out)[:MAX_ENTITIES]


def _overlaps(spans: list[tuple[int, int]], starts: list[int], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps one of ``spans`` (sorted, disjoint; ``starts`` are
    their starts). Disjoint sorted spans have sorted ends too, so the last span starting
    before ``end`` is the only one that can reach past ``start``."""
    i = bisect_left(starts, end) - 1
    return i >= 0 and spans[i][1] > start
