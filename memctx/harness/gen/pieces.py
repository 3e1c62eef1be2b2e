"""One piece at a time of a project's coding sessions: requests, notes and tool outputs.

:func:`session_piece` draws one piece of what ``role`` writes while working on a
:class:`~memctx.harness.gen.project.Project`, from the parts the scenarios are made of:

- ``user``: a request (its first line), often with output pasted under it: service logs, a
  test run, lint, ``git status``;
- ``assistant``: a note before a tool call, a fix or a final report, sometimes quoting the
  code or the diff it is about;
- ``tool``: what a tool prints after its ``$ command`` line: a window of a source file, grep
  hits, ``git log``/``status``/``diff``, an install, lint or test run, a config file (now and
  then with a secret in it), the project's tree, or service logs with timestamps and request
  ids (the long tail of a real archive's vocabulary).

The text is about one request's ``words`` (:func:`~memctx.harness.gen.turns.task_words`), so
consecutive pieces stay on one task. Everything draws from the ``random.Random`` it is given
and nothing else: the scenario generator's own paths draw nothing more, and ``datasets/v1/``
is unchanged. The benchmark corpus (``memctx.bench.corpus``) is built from it.
"""

from __future__ import annotations

import random

from .code import code_file
from .files import SECRET_KINDS, config_file, log_lines, secret_line
from .logs import test_log
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
from .turns import FIX_EN, REASON_EN, REPORT_EN, TASKS_EN, code_edit

__all__ = ["ROLES", "session_piece"]

ROLES = ("user", "assistant", "tool")


def _window(rng: random.Random, project: Project, path: str) -> tuple[str, str]:
    """Consecutive lines (8-30) of a source file of ``project`` at ``path``, and the
    ``sed`` command printing them."""
    lines = code_file(rng, project.language, path, project.nouns).split("\n")
    k = rng.randint(8, 30)
    start = rng.randrange(max(1, len(lines) - k))
    return f"sed -n '{start + 1},{start + k}p' {path}", "\n".join(lines[start : start + k])


def _diff(rng: random.Random, project: Project, w: dict[str, str]) -> str:
    return diff_text(rng, project, w["file"], *code_edit(rng, project, w))


def _logs(rng: random.Random, project: Project, stamp: float, lo: int, hi: int) -> str:
    return "\n".join(log_lines(rng, project, rng.randint(lo, hi), stamp=stamp))


def _tests(rng: random.Random, project: Project, fail: bool) -> str:
    return test_log(
        rng, project.language, project.root, list(project.tests), project.nouns, fail=fail
    )


def _tool(rng: random.Random, project: Project, w: dict[str, str], stamp: float) -> str:
    pick = rng.random()
    if pick < 0.25:
        where = rng.choice(("api", "worker"))
        return f"$ tail -n 20 logs/{where}.log\n" + _logs(rng, project, stamp, 3, 8)
    if pick < 0.46:
        command, text = _window(rng, project, w["file"])
        return f"$ {command}\n{text}"
    if pick < 0.58:
        return f"$ {project.stack.test_cmd}\n" + _tests(rng, project, rng.random() < 0.4)
    if pick < 0.68:
        return f"$ grep -rn '{w['func']}' .\n" + grep_output(rng, project, w["func"])
    if pick < 0.72:
        return "$ git log --oneline -12\n" + git_log(rng, project)
    if pick < 0.8:
        return f"$ git diff {w['file']}\n" + _diff(rng, project, w)
    if pick < 0.88:
        kind = rng.choice(("env", "yaml", "readme"))
        inserts = []
        if kind == "env" and rng.random() < 0.3:
            inserts.append(secret_line(rng, rng.choice(SECRET_KINDS))[0])
        path, text = config_file(rng, project, kind, inserts)
        return f"$ cat {path}\n{text}"
    if pick < 0.92:
        return "$ git status\n" + git_status(rng, project, [w["file"]])
    if pick < 0.96:
        clean = rng.random() < 0.3
        return f"$ {project.stack.lint_cmd}\n" + (lint_log(rng, project, clean=clean) or "")
    if pick < 0.98:
        return f"$ {project.stack.install_cmd}\n" + install_log(rng, project)
    return f"$ find {project.root} -type f\n" + tree(rng, project)


def _user(rng: random.Random, project: Project, w: dict[str, str], stamp: float) -> str:
    request = rng.choice(TASKS_EN).format(**w)
    pick = rng.random()
    if pick < 0.4:
        return request
    if pick < 0.55:
        paste = _logs(rng, project, stamp, 2, 6)
    elif pick < 0.8:
        paste = _tests(rng, project, True)
    elif pick < 0.93:
        paste = lint_log(rng, project, clean=False)
    else:
        paste = git_status(rng, project, [w["file"]])
    return f"{request}\n\n{paste}"


def _assistant(rng: random.Random, project: Project, w: dict[str, str]) -> str:
    pick = rng.random()
    if pick < 0.3:
        return rng.choice(REASON_EN).format(**w)
    if pick < 0.45:
        return rng.choice(FIX_EN).format(**w)
    if pick < 0.65:
        return rng.choice(REPORT_EN).format(**w)
    if pick < 0.85:
        note = rng.choice(REASON_EN).format(**w)
        return f"{note}\n\n```\n{_window(rng, project, w['file'])[1]}\n```"
    fix = rng.choice(FIX_EN).format(**w)
    return f"{fix}\n\n```diff\n{_diff(rng, project, w)}```"


def session_piece(
    rng: random.Random, project: Project, role: str, *, words: dict[str, str], stamp: float
) -> str:
    """One piece of what ``role`` (user, assistant or tool) writes working on ``project``.

    Args:
        rng: The only source of randomness.
        project: The project worked on (:func:`~memctx.harness.gen.project.make_project`).
        role: ``user``, ``assistant`` or ``tool``.
        words: The request being worked on (:func:`~memctx.harness.gen.turns.task_words`).
        stamp: Now, in epoch seconds: where service logs start.

    Returns:
        A request (first line) with pasted output; a note, fix or report, sometimes with code
        or a diff; or a tool's ``$ command`` line and its output.
    """
    if role == "user":
        return _user(rng, project, words, stamp)
    if role == "assistant":
        return _assistant(rng, project, words)
    if role == "tool":
        return _tool(rng, project, words, stamp)
    raise ValueError(f"role must be one of {ROLES}, got {role!r}")
