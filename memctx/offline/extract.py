"""The offline model's knowledge extractor: deterministic cue-word rules, no LLM.

memctx's offline model (``memctx/offline``) answers the ``extract-knowledge`` prompt with
:func:`offline_extract_response`, so the whole pipeline runs, and is measured, without a
network or a key. The rules are general, not fitted to any data set: a sentence becomes a fact
when a cue says what kind of statement it is, in English or Chinese.

- decision: "we'll use", "decided", "instead of", "switch to", "go with", "let's use",
  "chose", a sentence opening with "Use", "we never/always X"; 决定, 改用, 换成, 而不是 (and
  使用/采用, "use", only when no other type's cue is present: they also describe what is).
- config: ports, URLs, IP addresses, ``ENV_VAR=value``, "set X to Y", versions next to
  "version"/"pin"/"upgrade", limits and timeouts with a number, schedules, deploy targets;
  配置, 端口, 环境变量, 版本, 改成.
- issue: error lines (``TypeError: ...``, ``error: ...``, ``FAILED ...``, a traceback's last
  line), "fails", "bug", "broken", "crash", "root cause"; 错误, 失败, 报错, 崩溃, 异常.
- task_state: "TODO", "not yet", "still need", "next step", "done", "finished", "fixed";
  待办, 还没, 尚未, 完成, 下一步.
- architecture: "architecture", "microservice", "event-driven", "pub/sub", "message queue";
  "service"/"queue"/"layer"/"worker" only with a relation ("talks to", "publishes", "via");
  架构, 微服务, 事件驱动, 分层.
- implementation: "implemented", "added", "endpoint", "handler", "function X in file Y",
  ``POST /path``; 实现, 添加, 新增, 接口, 函数.

- results of test runs, builds and commands, in any tool's output or said in a message:
  test counts with failures or errors ("297 tests, 11 failures", pytest's "3 failed, 297
  passed in 12.3s", jest's "Tests: 1 failed, 41 passed, 42 total", cargo's "test result:
  ok. 31 passed; 0 failed", mocha's "31 passing", "All 386 tests pass"), a non-zero exit
  code, dependency versions a resolver reports (mix's "Resolving Hex dependencies..." and
  the ``name 1.2.3`` lines after it, pip's "Successfully installed", cargo's "Adding x
  v1.2"). The fact's text names what it is and its verdict, "last test run failed, not all
  tests passed: 297 tests, 11 failures (mix test)", "last test run passed, no test failed:
  ...", with the
  command that ran when the tool call the output answers names one, so that a question
  about "the last test run" or "did the tests pass" finds it without sharing a word with
  the numbers: an ``issue`` when something failed, else ``task_state``
  (dependency versions: ``task_state``). A line that only mentions tests ("add tests for
  the parser", ``tests/test_api.py``) is no result.

The first matching type in the order error line, task_state, decision, issue, config,
architecture, implementation wins ("still need to fix the login bug" is a task, "switched to
httpx because requests kept failing" a decision).

Nothing is extracted from greetings and small talk, questions, speculation ("maybe", "might", 可能),
narration of the agent's next step ("let me check..."), temporary debugging, code (fenced
blocks, indented or symbol-dense lines, ``def``/``import`` lines), tool calls, sentences the
redactor flags, or sentences without substance (under three words, no identifier and fewer
than three content words). Tool output yields only its error lines (three per output) and
its results (above). Facts are deduplicated; at most :data:`MAX_FACTS` per call, the latest
ones (later statements are the current state).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from memctx.extraction import CONVERSATION_CLOSE, CONVERSATION_OPEN
from memctx.messages import CONTINUATION, message_text
from memctx.store import FactType
from memctx.text import CJK_RE, STOPWORDS, Redactor, is_cjk

__all__ = ["MAX_FACTS", "extract_facts", "offline_extract_response"]

MAX_FACTS = 20
_MAX_CHARS = 220  # the prompt's ~200-character facts; a longer sentence is prose, not a fact
_TOOL_ISSUES = 3  # error lines kept per tool output: a failing suite repeats one cause
_TOOL_RESULTS = 3  # result lines kept per tool output (a summary, an exit code, ...)
_REDACTOR = Redactor()

_HEADER_RE = re.compile(r"^\[(user|assistant|system|tool)([^\]\n]{0,80})\] ?")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")
_BULLET_RE = re.compile(r"^\s*(?:[-*•>]+|\d{1,2}[.)]|#{1,6})\s+")
# A word as written, names included: a Latin word, or a name written without spaces
# (``localhost:5432``, ``ops@example.com``, ``https://x.io/a``, ``src/app.py``, ``v1.2``),
# for _substantial's counts. Not the keyword tokenizer's words: those split at ":" and "@"
# (and drop stop words), so "db:main" or "ops@corp" would lose the mark that anchors a
# sentence to something nameable, and one name would count as several words.
_WORD_OR_NAME_RE = re.compile(r"[A-Za-z0-9_][\w./:@-]*")


def _rx(alternatives: str) -> re.Pattern[str]:
    """Whole-word alternatives (``"a|b c"``), matched against lower-cased text."""
    return re.compile(r"\b(?:" + alternatives + r")\b")


# --- exclusions -------------------------------------------------------------------------------

_CODE_START_RE = re.compile(
    r"^\s*(?:def |async def |class \w+\s*[(:{]|import \w|from [\w.]+ import |(?:const|let|var) \w+"
    r"\s*=|function\s*\w*\(|#include|package \w|public |private |@\w+\(?|\$ |>>> |\+\+\+ |--- |@@ "
    r"|[{}\[\]()<]|\"[\w-]+\"\s*:)"
)
_CODE_SYMBOLS = frozenset("{}[]()=;<>|&$\\")
_QUESTION_START_RE = re.compile(
    r"^(?:(?:can|could|would|will) you|do you|did you|should (?:we|i)|shall (?:we|i)|what|why|how"
    r"|which|who|where)\b"
)
_SPECULATION_RE = _rx(
    r"maybe|might|perhaps|possibly|probably|presumably|not sure|unsure|i guess|i wonder|"
    r"wondering|could try|we could|you could|what if|how about|i think|i suspect|seems like|"
    r"it seems|potentially"
)
_NARRATION_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|now|first|next|then),? )?(?:let me|let's (?:see|check|look|try|run|open"
    r"|read|inspect|find|search|start)|i'll (?:check|look|run|read|open|try|take|inspect|search"
    r"|start|examine|verify|see|investigate)|i will (?:check|look|run|read|open)|i'm going to"
    r" (?:check|look|run|read|open)|looking at|checking|reading|running)\b"
)
_DEBUG_RE = _rx(
    r"temporar(?:y|ily)|for debugging|to debug|debug (?:print|log|output)s?|print statements?|"
    r"console\.log|quick hack"
)
_GREETING_RE = _rx(
    r"hi|hello|hey|thanks|thank you|thx|good (?:morning|afternoon|evening)|great|awesome|cool|"
    r"nice|perfect|ok|okay|sure|sounds good|got it|no problem|you're welcome|cheers|bye"
)
_SMALL_TALK_RE = re.compile(r"^(?:never ?mind|no worries|my bad|sorry|oops|lol|haha)\b")
_ZH_QUESTION_END = ("吗", "么", "呢", "是否", "是不是")
_ZH_SPECULATION = ("可能", "也许", "或许", "大概", "说不定", "不确定", "我猜", "好像", "似乎")
_ZH_NARRATION = ("让我", "我来看看", "先看看", "我看看", "调试", "临时")
_ZH_GREETINGS = ("你好", "您好", "谢谢", "多谢", "好的", "辛苦了", "没问题", "再见", "早上好")
_FILLER = frozenset(
    "also just really very now then here there something anything thing things stuff okay".split()
)

# --- cues -------------------------------------------------------------------------------------

_ERROR_LINE_RE = re.compile(
    r"^(?:E\s{2,})?(?:[A-Za-z_][\w.]*(?:Error|Exception)\b|(?i:error|fatal|panic|critical)"
    r"(?:\[[\w-]+\])?:|FAILED\b|FAIL\b|ERROR\b|npm ERR!|[\w./-]+:\d+(?::\d+)?:\s*(?i:error))"
)
_TASK_RE = _rx(
    r"todo|to-do|not yet|not done|still (?:need|needs|needed|have to|has to|missing|pending|open"
    r"|to do)|next step|next up|remaining (?:work|tasks?|items?|steps?)|left to do|in progress"
    r"|wip|is pending|blocked (?:on|by)|done|finished|completed?|fixed|resolved"
    r"|all (?:the )?(?:\d+ )?tests? pass(?:es|ing)?|tests are passing|merged|shipped"
)
_DECISION_RE = re.compile(
    r"^use\b|^(?:we )?(?:always|never) \w+|\b(?:we(?:'ll| will|'re going to| are going to)"
    r" (?:use|go with|switch|keep|stick"
    r"|move|migrate|adopt|drop)|let's (?:use|go with|switch|keep|stick|move|adopt|drop)"
    r"|let us use|instead of|rather than|switch(?:ed|ing)? (?:\S+ ){0,4}?(?:to|from|over)\b"
    r"|go(?:ing)? with"
    r"|went with|decided|decide to|decision|chose|chosen|opted (?:for|to)|settled on"
    r"|prefer(?:red)?|replace[ds]? \S+(?: \S+)? with|migrat(?:e|ed|ing) (?:to|from)"
    r"|stick(?:ing)? with|stay(?:ing)? with|keep using|(?:always|never|don't|do not) use"
    r"|no longer use|in favou?r of|standardi[sz]e on|agreed|we use|we're using|we are using)\b"
)
_ISSUE_RE = _rx(
    r"fails?|failed|failing|failure|bugs?|buggy|broken|breaks|crash(?:es|ed|ing)?|exceptions?|"
    r"errors?(?! handl)|doesn't work|does not work|isn't working|not working|regression|flaky|"
    r"times out|timed out|segfaults?|memory leak|hangs|deadlocks?|returns? (?:a )?5\d\d|"
    r"root cause"
)
_CONFIG_RE = re.compile(
    r"\bports?\b\s*(?:is |to |=|:|of |on )?\s*\d{2,5}\b"
    r"|\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0)(?::\d+)?|\b[a-z][a-z0-9+.-]*://\S+"
    r"|\bset (?:\S+ ){0,5}?to\b|\bconfigur(?:e|ed|es|ing|ation)\b"
    r"|(?<![\w./-])(?:config|settings?)(?![\w./-])"
    r"|\benv(?:ironment)? var(?:iable)?s?\b|\.env\b|\bdeploy(?:s|ed|ing|ment)? (?:to|on|via|with)\b"
    r"|\b(?:version|upgrade[sd]?|pin(?:ned)?|bump(?:ed)?|downgrade[sd]?)\b.*\d+\.\d+"
    r"|\b[\w.-]+(?:==|>=|<=|~=|@)\d+(?:\.\d+)+"
    r"|\b(?:timeout|ttl|limit|max\w*|min\w*|interval|pool size|retries|replicas|workers|threshold"
    r"|batch size|cache size)\b[^.]{0,30}?\b\d+(?:\.\d+)?\s?"
    r"(?:ms|s|sec|secs|seconds?|minutes?|mins?|h|hours?|kb|mb|gb|%|rps)?\b"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b(?:staging|production|prod)\b|\bcron\b"
    r"|\bevery (?:day|night|hour|minute|week|\d+ (?:seconds?|minutes?|hours?|days?))\b"
    r"|\bat \d{1,2}:\d{2}\b"
)
_ENV_ASSIGN_RE = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\s*[=:]\s*\S")
_ARCH_STRONG_RE = _rx(
    r"architecture|architectural|micro-?services?|monolith\w*|event[- ]driven|pub/?sub|"
    r"message (?:queue|broker|bus)|talks to|communicates with|sits (?:behind|in front of)|"
    r"publishes (?:to|events)|subscribes to|consumes (?:from|events)|layered"
)
_ARCH_WEAK_RE = _rx(
    r"services?|queues?|layers?|workers?|gateway|frontend|backend|brokers?|modules?|"
    r"components?"
)
_RELATION_RE = re.compile(
    r"\b(?:talks?|calls?|sends?|reads? from|writes? to|publish\w*|consum\w*|depends? on|behind"
    r"|between|through|via|owns?|split|separate|in front of)\b|->|→"
)
_IMPL_RE = re.compile(
    r"\b(?:implemented|implements|added|adds|created|wrote|written|refactored|renamed|extracted"
    r"|updated|modified|removed|deleted|rewrote"
    r"|introduced|wired|registered|exposed|endpoints?|handlers?|routes?|migrations?|middleware"
    r"|now (?:returns|uses|handles|accepts|validates|raises|calls|reads|writes|retries|supports))"
    r"\b|\b(?:function|method|class|module|hook|fixture)\s+`?[\w.]+`?\s+(?:in|from|at)\s+\S+"
    r"|\b(?:get|post|put|patch|delete)\s+/[\w/{}:.-]*"
)
# Results of test runs, builds and commands (generic across tools, see the module doc).
_COUNT = r"\d[\d,]*"
_TEST_WORDS = r"(?:tests?|examples?|specs?|test cases?|doctests?|properties)"
_TEST_RESULT_RES = (
    # ExUnit, RSpec, minitest: "297 tests, 11 failures", "1 doctest, 31 tests, 0 failures"
    re.compile(
        rf"\b{_COUNT} {_TEST_WORDS}(?:, {_COUNT} [a-z]+)*?, {_COUNT} (?:failures?|errors?)\b"
    ),
    # pytest: "3 failed, 297 passed, 2 skipped in 12.34s"
    re.compile(
        rf"\b{_COUNT} (?:passed|failed|errors?)\b(?:, {_COUNT} [a-z]+)*,? in \d[\d.]*\s?s\b"
    ),
    # jest, vitest: "Tests:       1 failed, 41 passed, 42 total"
    re.compile(rf"^(?:Tests|Test Suites|Test Files):\s+(?:{_COUNT} [a-z]+,\s*)*{_COUNT} total\b"),
    # cargo: "test result: FAILED. 3 passed; 1 failed; 0 ignored"
    re.compile(rf"\btest result: (?:ok|FAILED)\. {_COUNT} passed; {_COUNT} failed\b"),
    # mocha: "31 passing (2s)", "2 failing"
    re.compile(rf"^{_COUNT} (?:passing|failing)\b"),
    # said: "All 386 tests pass", "12 tests failed", "all tests passed"
    re.compile(
        rf"(?i:\b{_COUNT} {_TEST_WORDS} (?:(?:all |now )?pass(?:ed|es|ing)?|fail(?:ed|s|ing)?)\b"
        rf"|\ball (?:the |{_COUNT} )?{_TEST_WORDS} (?:now )?pass(?:ed|es|ing)?\b)"
    ),
)
_FAILED_RE = re.compile(
    rf"(?i:\b[1-9][\d,]* (?:{_TEST_WORDS} )?(?:failures?|failed|failing|errors?)\b)"
    r"|\btest result: FAILED\b"
)
_EXIT_RE = re.compile(
    r"(?i:\b(?:exit(?:ed)? (?:with )?(?:code|status)|exit code|exit status"
    r"|returned non-zero exit status))\s*[:=]?\s*(-?\d{1,3})\b"
)
# A dependency resolver's report: mix's "Resolving Hex dependencies..." and its New: /
# Upgraded: sections, each dependency on a line of its own ("  phoenix 1.7.14",
# "  plug 1.15.2 => 1.16.0"); cargo's "Adding serde v1.0.188"; pip's "Successfully installed".
_RESOLVING_RE = re.compile(
    r"(?i:^\s*(?:resolving\b.*\bdependenc|(?:new|upgraded|updated|changed|unchanged|added"
    r"|downgraded):\s*$))"
)
_VERSION = r"v?\d+\.\d+(?:\.\d+)?(?:[-+][\w.]+)?"
_DEP_LINE_RE = re.compile(
    rf"^\s+([A-Za-z][\w.-]*) ({_VERSION})(?:\s+(?:=>|->)\s+({_VERSION}))?\s*$"
)
_CARGO_DEP_RE = re.compile(
    rf"^\s*(?:Adding|Updating|Downgrading|Locking)\s+([A-Za-z][\w.-]*) ({_VERSION})"
    rf"(?:\s+->\s+({_VERSION}))?\s*$"
)
_PIP_INSTALLED_RE = re.compile(r"^Successfully installed ((?:[\w.-]+-\d[\w.+-]* ?)+)$")
_COMMAND_RE = re.compile(r'"(?:command|cmd)"\s*:\s*"((?:[^"\\\n]|\\.){1,400})')
_COMMAND_CHARS = 120

_ZH_CUES: dict[FactType, tuple[str, ...]] = {
    FactType.TASK_STATE: tuple(
        "待办 还没 还未 尚未 未完成 完成 下一步 进行中 剩下 修复了 已修复 修好了 解决了 已解决"
        " 搞定".split()
    ),
    FactType.DECISION: tuple("决定 改用 换成 换用 选择 选用 而不是 不再使用 统一用".split()),
    FactType.ISSUE: tuple("错误 失败 报错 崩溃 异常 故障 超时了 无法".split()),
    FactType.CONFIG: tuple(
        "配置 端口 设置为 设为 设成 改成 改为 环境变量 版本 部署 超时时间".split()
    ),
    FactType.ARCHITECTURE: tuple("架构 微服务 事件驱动 分层 消息队列 网关".split()),
    FactType.IMPLEMENTATION: tuple("实现 添加 新增 接口 函数 重构".split()),
}
# "use"/"adopt" also describe what already is ("系统采用微服务架构" is architecture): these make
# a decision only when no other type's cue is present.
_ZH_WEAK_DECISION = ("使用", "采用")


# --- the rules --------------------------------------------------------------------------------


def _is_code(line: str) -> bool:
    stripped = line.rstrip()
    if _CODE_START_RE.match(stripped) or stripped.endswith(("{", ";", "):", "=>")):
        return True
    if line.startswith(("    ", "\t")) and not _BULLET_RE.match(line):
        return True
    symbols = sum(c in _CODE_SYMBOLS for c in stripped)
    return symbols >= 4 and symbols >= 0.08 * len(stripped)


def _clean(sentence: str) -> str:
    text = _BULLET_RE.sub("", sentence.strip()).replace("**", "")
    return " ".join(text.split()).strip(" \t:：,，").rstrip(".。!！;；")


def _substantial(text: str) -> bool:
    """Long enough, short enough, and about something nameable."""
    if not 8 <= len(text) <= _MAX_CHARS:
        return False
    words = _WORD_OR_NAME_RE.findall(text)
    if is_cjk(text):
        return len(CJK_RE.findall(text)) + 3 * len(words) >= 6
    if len(words) < 3:
        return False
    anchored = (
        any(
            any(c.isdigit() or c in "_./:@`" for c in w) or any(c.isupper() for c in w[1:])
            for w in words
        )
        or any(w[0].isupper() for w in words[1:])
        or "`" in text
        or '"' in text
    )
    content = [
        w for w in words if w.isalpha() and len(w) > 2 and w.lower() not in STOPWORDS | _FILLER
    ]
    return len(content) >= 3 or (anchored and len(content) >= 1)


def _excluded(text: str, low: str) -> bool:
    """Questions, speculation, narration, debugging, greetings, secrets, code."""
    if text.endswith(("?", "？")) or _QUESTION_START_RE.match(low):
        return True
    if is_cjk(text) and (
        text.endswith(_ZH_QUESTION_END)
        or any(c in text for c in _ZH_SPECULATION + _ZH_NARRATION)
        or (text.startswith(_ZH_GREETINGS) and len(CJK_RE.findall(text)) <= 8)
    ):
        return True
    if _SPECULATION_RE.search(low) or _NARRATION_RE.match(low) or _DEBUG_RE.search(low):
        return True
    if (_GREETING_RE.match(low) and len(low.split()) < 6) or _SMALL_TALK_RE.match(low):
        return True
    return _has_secret(text)


def _classify(text: str) -> FactType | None:
    """The fact type of a clean sentence, or None when it is not a fact."""
    low = text.lower()
    if not _substantial(text) or _excluded(text, low):
        return None
    if _ERROR_LINE_RE.match(text):
        return FactType.ISSUE
    english = (
        (FactType.TASK_STATE, bool(_TASK_RE.search(low))),
        (FactType.DECISION, bool(_DECISION_RE.search(low))),
        (FactType.ISSUE, bool(_ISSUE_RE.search(low))),
        (FactType.CONFIG, bool(_CONFIG_RE.search(low) or _ENV_ASSIGN_RE.search(text))),
        (
            FactType.ARCHITECTURE,
            bool(_ARCH_STRONG_RE.search(low))
            or bool(_ARCH_WEAK_RE.search(low) and _RELATION_RE.search(low)),
        ),
        (FactType.IMPLEMENTATION, bool(_IMPL_RE.search(low))),
    )
    zh = _ZH_CUES if is_cjk(text) else {}
    for kind, hit in english:
        if hit or any(cue in text for cue in zh.get(kind, ())):
            return kind
    return FactType.DECISION if zh and any(c in text for c in _ZH_WEAK_DECISION) else None


def _lines(text: str) -> Iterator[tuple[int, str, str, str]]:
    """``(message number, role, tool name, line)`` per line, from ``[role]`` headers.

    A header opens a line; the lines after it (prefixed with
    :data:`~memctx.messages.CONTINUATION`) are the same message's, whatever they say: a
    tool output's ``[user] ...`` line is the tool's. Lines inside code fences are skipped:
    code is not a fact.
    """
    number, role, name, fenced = 0, "text", "", False
    for raw in text.split("\n"):
        header = None
        if raw.startswith(CONTINUATION):
            raw = raw[len(CONTINUATION) :]
        else:
            header = _HEADER_RE.match(raw)
        if header:
            number, role, label = number + 1, header.group(1), header.group(2)
            name = label.split(":", 1)[1].strip() if ":" in label else ""
            if role == "assistant" and "tool call" in label:
                role = "tool call"
            raw, fenced = raw[header.end() :], False
        if _FENCE_RE.match(raw):
            fenced = not fenced
            continue
        if not fenced and raw.strip():
            yield number, role, name, raw


def _has_secret(text: str) -> bool:
    return "[REDACTED" in text or bool(_REDACTOR.redact_with_report(text).hits)


def _command_of(line: str) -> str:
    """The shell command a tool call's arguments name (``"command"`` / ``"cmd"``) on one
    line, short; ``""`` when they name none."""
    found = _COMMAND_RE.search(line)
    if found is None:
        return ""
    try:
        command = str(json.loads(f'"{found.group(1)}"'))
    except ValueError:  # cut inside an escape: the raw text will do
        command = found.group(1)
    shown = " ".join(command.split())
    if len(shown) > _COMMAND_CHARS:
        shown = shown[:_COMMAND_CHARS].rstrip() + "…"
    return shown


def _result_fact(text: str, source: str) -> tuple[FactType, str] | None:
    """A test run's or a command's result in ``text`` (one line or sentence) as a fact whose
    text names what it is (module doc); ``None`` when it reports none."""
    text = " ".join(text.strip(" =-*#>\t").split())
    if not 8 <= len(text) <= _MAX_CHARS or _has_secret(text):
        return None
    if any(rx.search(text) for rx in _TEST_RESULT_RES):
        if _FAILED_RE.search(text):
            return FactType.ISSUE, f"last test run failed, not all tests passed: {text}{source}"
        return FactType.TASK_STATE, f"last test run passed, no test failed: {text}{source}"
    code = _EXIT_RE.search(text)
    if code is not None and int(code.group(1)) != 0:
        return FactType.ISSUE, f"last command failed with exit code {code.group(1)}{source}"
    return None


def _dependencies(line: str, resolving: bool) -> list[str]:
    """``name version`` of each dependency a resolver's output line reports (a bare
    ``name 1.2.3`` line only inside a resolver's report, ``resolving``)."""
    if (pip := _PIP_INSTALLED_RE.match(line.strip())) is not None:
        return [" ".join(p.rsplit("-", 1)) for p in pip.group(1).split()]
    found = _CARGO_DEP_RE.match(line) or (_DEP_LINE_RE.match(line) if resolving else None)
    if found is None:
        return []
    name, version, new = found.groups()
    return [f"{name} {new or version}"]


def _line_facts(role: str, name: str, line: str) -> list[tuple[FactType, str, str]]:
    """The facts of one prose line: each sentence that classifies."""
    if role == "tool":  # output: only its error lines (the verdict, not the dump)
        candidate = _clean(line)
        if not _ERROR_LINE_RE.match(candidate) or len(candidate) > _MAX_CHARS:
            return []
        if _has_secret(candidate):
            return []
        return [(FactType.ISSUE, candidate, f"{name} output" if name else "tool output")]
    if _is_code(line):
        return []
    out = []
    context = f"said by {role}" if role != "text" else "stated in text"
    for piece in _SENTENCE_RE.split(line):
        result = _result_fact(_clean(piece), "") if piece.strip() else None
        if result is not None:
            out.append((result[0], result[1], context))
            continue
        candidate = _clean(piece)
        kind = _classify(candidate) if candidate else None
        if kind is not None:
            out.append((kind, candidate, context))
    return out


class _ToolResults:
    """What one conversation chunk's tool outputs report: results of test runs and commands
    (at most :data:`_TOOL_RESULTS` per output) and the dependency versions a resolver
    reported (one fact per output), each naming the command of the tool call it answers."""

    def __init__(self) -> None:
        self._commands: list[str] = []  # of the calls whose output has not come yet, in order
        self._call = -1
        self._output = -1
        self._command = ""  # of the output being read
        self._resolving: set[int] = set()
        self._deps: dict[int, list[str]] = {}
        self._results: dict[int, int] = {}
        self.interrupted = False  # something other than a call came after the last call

    def call(self, number: int, line: str) -> None:
        """A tool call's line: a new call's command is queued (``""``: it names none); the
        outputs take the commands in order (parallel calls answered in turn). A call after
        anything but calls (an output, a message) starts a new step: the calls still queued
        got no output the text shows (an empty one is not rendered), and must not name the
        next outputs."""
        if number != self._call:
            if self.interrupted:
                self._commands.clear()
                self.interrupted = False
            self._call = number
            self._commands.append("")
        if not self._commands[-1]:
            self._commands[-1] = _command_of(line)

    def _source(self, number: int) -> str:
        if number != self._output:
            self._output = number
            self._command = self._commands.pop(0) if self._commands else ""
        return self._command

    def facts(self, number: int, name: str, line: str) -> list[tuple[str, dict[str, str]]]:
        """``(key, fact)`` pairs for the output line; a key already seen is updated."""
        context = f"{name} output" if name else "tool output"
        source = f" ({self._source(number) or context})"
        if _RESOLVING_RE.match(line):
            self._resolving.add(number)
            return []
        deps = _dependencies(line, number in self._resolving)
        if deps:
            listed = self._deps.setdefault(number, [])
            for dep in deps:
                if dep not in listed and len(", ".join([*listed, dep])) <= _MAX_CHARS - 60:
                    listed.append(dep)
            content = f"dependency versions resolved{source}: {', '.join(listed)}"
            fact = {"type": FactType.TASK_STATE.value, "content": content, "context": context}
            return [(f"\0deps {number}", fact)]
        if self._results.get(number, 0) >= _TOOL_RESULTS:
            return []
        result = _result_fact(line, source)
        if result is None:
            return []
        self._results[number] = self._results.get(number, 0) + 1
        kind, content = result
        return [(_fact_key(content), {"type": kind.value, "content": content, "context": context})]


def _fact_key(content: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", content.lower()).split())


def extract_facts(text: str) -> list[dict[str, str]]:
    """Facts in ``text`` (``[role] text`` lines or plain prose), by the rules above.

    Args:
        text: A rendered conversation chunk.

    Returns:
        Up to :data:`MAX_FACTS` ``{"type", "content", "context"}`` dicts in text order, the
        context naming who said it. Same input, same output.
    """
    facts: dict[str, dict[str, str]] = {}
    tool_issues: dict[int, int] = {}
    tools = _ToolResults()
    for number, role, name, line in _lines(text):
        if role == "tool call":
            tools.call(number, line)
            continue
        tools.interrupted = True
        if role == "system":
            continue
        if role == "tool":
            results = tools.facts(number, name, line)
            for key, fact in results:
                facts.pop(key, None)  # a repeat (or a longer list) moves to its latest position
                facts[key] = fact
            if results:
                continue
        found = _line_facts(role, name, line)
        if role == "tool":
            found = found[: max(0, _TOOL_ISSUES - tool_issues.get(number, 0))]
            tool_issues[number] = tool_issues.get(number, 0) + len(found)
        for kind, content, context in found:
            key = _fact_key(content)
            facts.pop(key, None)  # a repeat moves to its latest position
            facts[key] = {"type": kind.value, "content": content, "context": context}
    return list(facts.values())[-MAX_FACTS:]


def offline_extract_response(messages: Sequence[Mapping[str, Any]]) -> str:
    """The offline model's answer to an ``extract-knowledge`` prompt: a JSON array string.

    Reads the ``<conversation>`` section of the last user message; answers ``[]`` when there
    is none (a repair request, say).
    """
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            text = message_text(message)
            start = text.find(CONVERSATION_OPEN)
            end = text.rfind(CONVERSATION_CLOSE)
            if start < 0 or end < start:
                return "[]"
            body = text[start + len(CONVERSATION_OPEN) : end]
            return json.dumps(extract_facts(body), ensure_ascii=False)
    return "[]"
