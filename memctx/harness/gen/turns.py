"""Turns of a synthetic coding session: requests, tool work, reports, one-word replies.

A *work turn* is what a coding agent does for one request: a short plan, reads (often
several in parallel), greps, an edit, a test run that sometimes fails with a stack trace and
is fixed, and a final report. Facts are planted by handing the turn a :class:`Plant`: a
statement in the user's request, a statement in the assistant's report, or lines inside a
config file, log or README that the agent reads (next to secrets, in the secrets suite).
Every turn ends with a final assistant message, so a user turn or a probe may follow.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .code import FIELDS, VERBS, code_file, code_line
from .files import config_file
from .logs import test_log
from .messages import Builder, Call
from .project import (
    Project,
    diff_text,
    git_log,
    git_status,
    grep_output,
    install_log,
    lint_log,
    tree,
)

__all__ = [
    "ONE_WORD_EN",
    "ONE_WORD_ZH",
    "Plant",
    "chat_turn",
    "code_edit",
    "one_word_turn",
    "task_words",
    "work_turn",
]

TASKS_EN = (
    "The {noun} endpoint returns a 500 when `{field}` is missing. Can you track it down?",
    "Add pagination to the {noun} list; keep the default page size as it is.",
    "Refactor `{func}` in {file}, it has grown too long.",
    "Write tests for `{func}`, it has no coverage at all.",
    "Why is `{test_cmd}` failing on main? Please fix it.",
    "Rename `{field}` to `{field2}` in the {noun} model and update the callers.",
    "Add input validation to the {noun} create handler.",
    "Can you look into the slow {noun} queries? Something in {file} looks like an N+1.",
    "Please clean up the lint warnings in {file}.",
    "The {noun} export drops rows whose `{field}` is null; make it keep them.",
    "Bump the dependencies and make sure the suite still passes.",
    "Document `{func}` and tidy up its error handling.",
    "Let's add a `{field2}` column to {noun}s, nullable for now.",
    "Check what changed on this branch and summarize it for the PR description.",
    "`{func}` swallows exceptions; make it re-raise with context.",
)
TASKS_ZH = (
    "{noun} 接口在 `{field}` 为空的时候报 500，帮我查一下并修掉。",
    "给 {noun} 列表加分页，默认每页条数保持不变。",
    "`{func}` 太长了，在 {file} 里重构一下。",
    "给 `{func}` 补点测试，现在完全没有覆盖。",
    "main 分支上 `{test_cmd}` 挂了，看看怎么回事。",
    "把 {noun} 模型里的 `{field}` 改名成 `{field2}`，调用方也一起改。",
    "{noun} 的创建接口加上参数校验。",
    "{file} 里的 lint 警告清理一下。",
    "{noun} 导出的时候 `{field}` 为空的行被丢了，改成保留。",
    "看看这个分支改了什么，帮我写个 PR 描述。",
    "`{func}` 把异常吞掉了，改成带上下文重新抛出。",
)
REASON_EN = (
    "Let me look at {file} first.",
    "Searching for the call sites of `{func}`.",
    "I'll run the tests to see where we stand.",
    "Reading the handler and its test side by side.",
    "Checking the config the service loads.",
    "Let me check the working tree before editing.",
    "I'll open the related files together.",
    "Looking at how `{field}` flows through {file}.",
)
REASON_ZH = (
    "先看一下 {file}。",
    "搜一下 `{func}` 的调用点。",
    "先跑一下测试看看现状。",
    "把处理函数和测试一起看一下。",
    "看看服务加载的配置。",
    "改之前先看一下工作区状态。",
)
FIX_EN = (
    "The failure is in `{func}`: `{field}` can be None there. Guarding it.",
    "The test trips over a missing `{field}`; adding a default and re-running.",
    "That's a real bug, not a flaky test. Fixing the None case in {file}.",
)
FIX_ZH = (
    "失败点在 `{func}`：`{field}` 可能为空，加个判断。",
    "测试在 `{field}` 缺失时挂了，补个默认值再跑。",
)
REPORT_EN = (
    "Done. `{func}` in {file} now handles a missing `{field}`, and the suite passes ({n} tests).",
    "I refactored {file}: `{func}` is split into two helpers, behaviour unchanged, tests green.",
    "Finished: the validation is in place with two new tests, and `{test_cmd}` passes.",
    "All set, {n} tests pass. I left a TODO in {file} for the follow-up on `{field}`.",
    "Fixed. The root problem was an unchecked `{field}`; {file} is updated and covered.",
    "Here is the summary: touched {file}, renamed the helper, updated callers; {n} tests pass.",
)
REPORT_ZH = (
    "改好了。{file} 里的 `{func}` 现在能处理 `{field}` 为空的情况，测试全部通过（{n} 个）。",
    "重构完成：`{func}` 拆成了两个辅助函数，行为不变，测试全绿。",
    "搞定了，校验已经加上，补了两个测试，`{test_cmd}` 通过。",
    "都好了，{n} 个测试通过。我在 {file} 里留了个 TODO，后续处理 `{field}`。",
)
ONE_WORD_EN = ("ok", "y", "go on", "thanks", "lgtm", "k", "yes", "next", "sure", "continue", "cool")
ONE_WORD_ZH = ("继续", "好的", "嗯", "可以", "谢谢", "行")
_ACK_EN = (
    "Continuing.",
    "You're welcome. Anything else?",
    "Okay, moving on to the next item.",
    "Sure, picking up where I left off.",
    "Got it.",
)
_ACK_ZH = ("好的，继续。", "不客气，还有别的吗？", "收到，接着做下一项。", "明白。")


@dataclass
class Plant:
    """What a turn carries: statements for the user or the report, lines for a file read."""

    user: str | None = None
    assistant: str | None = None
    tool_lines: list[str] = field(default_factory=list)
    tool_kind: str = "env"
    secret_lines: list[str] = field(default_factory=list)
    call: Call | None = None  # a call whose input holds the value (its output does not)


def task_words(rng: random.Random, project: Project) -> dict[str, str]:
    """What one request is about: a noun, two fields, a function, a file, the test command, a
    count; the keys the request, note, fix and report templates take."""
    noun = rng.choice(project.nouns)
    verb = rng.choice(VERBS)
    func = f"{verb}_{noun}" if project.language in ("python", "rust") else f"{verb}{noun.title()}"
    f1, f2 = rng.sample(FIELDS, 2)
    return {
        "noun": noun,
        "field": f1,
        "field2": f2,
        "func": func,
        "file": rng.choice(project.files),
        "test_cmd": project.stack.test_cmd,
        "n": str(rng.randint(12, 240)),
    }


def _comment(project: Project, text: str) -> str:
    return f"  # {text}" if project.language == "python" else f"  // {text}"


def code_edit(rng: random.Random, project: Project, w: dict[str, str]) -> tuple[str, str]:
    """A line of ``project``'s code and its edit: ``w``'s field renamed, or a comment added."""
    old = code_line(rng, project.language, project.nouns)
    new = (
        old.replace(w["field"], w["field2"])
        if w["field"] in old
        else old + _comment(project, "checked")
    )
    return old, new


def _read(rng: random.Random, project: Project, path: str) -> Call:
    return Call("read", {"path": path}, code_file(rng, project.language, path, project.nouns))


def _plant_call(rng: random.Random, project: Project, plant: Plant, heavy: bool) -> Call:
    lines = [*plant.secret_lines, *plant.tool_lines]
    rng.shuffle(lines)
    path, text = config_file(rng, project, plant.tool_kind, lines, size=4 if heavy else 1)
    if plant.tool_kind == "log":
        return Call("bash", {"command": f"tail -n 400 {path}", "description": "Recent logs"}, text)
    if plant.tool_kind == "env" and rng.random() < 0.5:
        return Call("bash", {"command": f"cat {path}", "description": "Show env file"}, text)
    return Call("read", {"path": path}, text)


def _explore(rng: random.Random, project: Project, w: dict[str, str]) -> list[Call]:
    pick = rng.random()
    if pick < 0.25:
        return [Call("grep", {"pattern": w["func"]}, grep_output(rng, project, w["func"]))]
    if pick < 0.35:
        return [
            Call(
                "glob",
                {"pattern": "**/*" + project.files[0].rsplit(".", 1)[-1]},
                tree(rng, project),
            )
        ]
    if pick < 0.45:
        cmd = rng.choice(("git log --oneline -12", "git status"))
        out = git_log(rng, project) if "log" in cmd else git_status(rng, project, [w["file"]])
        return [Call("bash", {"command": cmd, "description": "Inspect git"}, out)]
    if pick < 0.52:
        return [Call("bash", {"command": project.stack.install_cmd}, install_log(rng, project))]
    if pick < 0.6:
        clean = rng.random() < 0.5
        out = lint_log(rng, project, clean=clean) or "(no output)"
        return [Call("bash", {"command": project.stack.lint_cmd}, out, error=not clean)]
    k = rng.choice((1, 1, 2, 2, 3))
    return [_read(rng, project, p) for p in rng.sample(project.files, min(k, len(project.files)))]


def work_turn(
    b: Builder,
    rng: random.Random,
    project: Project,
    *,
    lang: str = "en",
    zh_reply: bool = False,
    heavy: bool = False,
    plant: Plant | None = None,
    big_plant: bool = False,
) -> dict[str, int]:
    """One request and the agent's work on it; returns the indices of planted messages."""
    plant = plant or Plant()
    w = task_words(rng, project)
    zh = lang == "zh"
    request = rng.choice(TASKS_ZH if zh else TASKS_EN).format(**w)
    if plant.user:
        request = f"{plant.user} {request}" if rng.random() < 0.5 else f"{request}\n\n{plant.user}"
    out = {"user": b.user(request)}
    reason = REASON_ZH if zh_reply else REASON_EN
    steps = rng.randint(3, 6) if heavy else rng.randint(1, 2)
    plant_step = rng.randrange(steps) if plant.tool_lines or plant.secret_lines else -1
    for step in range(steps):
        calls = _explore(rng, project, w)
        planted = None
        if step == plant_step:
            planted = _plant_call(rng, project, plant, heavy or big_plant)
            calls = [*calls[:1], planted]
            rng.shuffle(calls)
        if heavy and rng.random() < 0.5:
            path, text = config_file(rng, project, "log", [], size=3)
            calls.append(Call("bash", {"command": f"tail -n 300 {path}"}, text))
        indices = b.tools(rng.choice(reason).format(**w), calls)
        for call, index in zip(calls, indices, strict=True):
            if call is planted:
                out["tool"] = index
    if plant.call is not None:
        # The call's own message (just before its result) is the one that holds the value.
        out["call"] = b.tools(rng.choice(reason).format(**w), [plant.call])[0] - 1
    old, new = code_edit(rng, project, w)
    edit = Call("edit", {"path": w["file"], "old": old, "new": new}, "")
    if rng.random() < 0.3:
        diff = diff_text(rng, project, w["file"], old, new)
        b.tools("", [edit, Call("bash", {"command": f"git diff {w['file']}"}, diff)])
    else:
        b.tools("", [edit])
    tests = list(project.tests)
    fail = rng.random() < 0.3
    run = Call(
        "bash",
        {"command": project.stack.test_cmd, "description": "Run tests"},
        test_log(rng, project.language, project.root, tests, project.nouns, fail=fail),
        error=fail,
    )
    b.tools("", [run])
    if fail:
        fix = rng.choice(FIX_ZH if zh_reply else FIX_EN).format(**w)
        b.tools(
            fix,
            [
                Call(
                    "edit",
                    {"path": w["file"], "old": new, "new": new + _comment(project, "guard")},
                    "",
                )
            ],
        )
        again = test_log(rng, project.language, project.root, tests, project.nouns, fail=False)
        b.tools("", [Call("bash", {"command": project.stack.test_cmd}, again)])
    report = rng.choice(REPORT_ZH if zh_reply else REPORT_EN).format(**w)
    if plant.assistant:
        report = (
            f"{report} {plant.assistant}"
            if rng.random() < 0.6
            else f"{plant.assistant}\n\n{report}"
        )
    out["final"] = b.assistant(report)
    return out


def one_word_turn(b: Builder, rng: random.Random, project: Project, *, zh: bool = False) -> None:
    """A one-word user turn ("ok", "继续") and a short answer, sometimes with a quick check."""
    b.user(rng.choice(ONE_WORD_ZH if zh else ONE_WORD_EN))
    if rng.random() < 0.4:
        cmd = rng.choice(("git status", project.stack.lint_cmd))
        out = (
            git_status(rng, project, [rng.choice(project.files)])
            if cmd == "git status"
            else (lint_log(rng, project, clean=True) or "(no output)")
        )
        b.tools("", [Call("bash", {"command": cmd}, out)])
    b.assistant(rng.choice(_ACK_ZH if zh else _ACK_EN))


def chat_turn(b: Builder, user: str, reply: str) -> tuple[int, int]:
    """A plain exchange without tools; returns both indices."""
    return b.user(user), b.assistant(reply)
