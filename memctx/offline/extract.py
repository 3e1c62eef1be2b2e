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

The first matching type in the order error line, task_state, decision, issue, config,
architecture, implementation wins ("still need to fix the login bug" is a task, "switched to
httpx because requests kept failing" a decision).

Nothing is extracted from greetings and small talk, questions, speculation ("maybe", "might", 可能),
narration of the agent's next step ("let me check..."), temporary debugging, code (fenced
blocks, indented or symbol-dense lines, ``def``/``import`` lines), tool calls, sentences the
redactor flags, or sentences without substance (under three words, no identifier and fewer
than three content words). Tool output yields only its error lines (three per output). Facts
are deduplicated; at most :data:`MAX_FACTS` per call, the latest ones (later statements are
the current state).
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
    for piece in _SENTENCE_RE.split(line):
        candidate = _clean(piece)
        kind = _classify(candidate) if candidate else None
        if kind is not None:
            out.append((kind, candidate, f"said by {role}" if role != "text" else "stated in text"))
    return out


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
    for number, role, name, line in _lines(text):
        if role in ("tool call", "system"):
            continue
        found = _line_facts(role, name, line)
        if role == "tool":
            found = found[: max(0, _TOOL_ISSUES - tool_issues.get(number, 0))]
            tool_issues[number] = tool_issues.get(number, 0) + len(found)
        for kind, content, context in found:
            key = " ".join(re.sub(r"[\W_]+", " ", content.lower()).split())
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
