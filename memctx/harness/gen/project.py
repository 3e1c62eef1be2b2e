"""Synthetic projects: stacks, file trees, shell outputs, config files and planted secrets.

A :class:`Project` is drawn per scenario from a bank of stacks (FastAPI, Django, Express,
React, a Go service, a Rust CLI). The helpers render what an agent's tools would print for
it: a file tree, ``git status``/``log``/``diff``, dependency installs, lint output, grep hits
and config files (``.env``, YAML, logs, README) into which the generator inserts fact lines
and secrets. Numbers stay small (line numbers, sizes, two-decimal timings) so they rarely
look like a planted value; the generator checks uniqueness anyway.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .code import FIELDS, NOUNS, VERBS, code_line

__all__ = [
    "STACKS",
    "Project",
    "Stack",
    "diff_text",
    "git_log",
    "git_status",
    "grep_output",
    "install_log",
    "lint_log",
    "make_project",
    "tree",
]


@dataclass(frozen=True)
class Stack:
    key: str
    language: str
    framework: str
    layout: tuple[str, ...]
    tests: tuple[str, ...]
    test_cmd: str
    install_cmd: str
    lint_cmd: str


STACKS: tuple[Stack, ...] = (
    Stack(
        "fastapi",
        "python",
        "FastAPI + SQLAlchemy",
        (
            "app/main.py",
            "app/db.py",
            "app/routes/{n}s.py",
            "app/services/{n}_service.py",
            "app/models/{n}.py",
            "app/schemas/{n}.py",
        ),
        ("tests/test_{n}s.py",),
        "pytest -q",
        "pip install -e '.[dev]'",
        "ruff check .",
    ),
    Stack(
        "django",
        "python",
        "Django + DRF",
        (
            "config/settings.py",
            "{n}s/models.py",
            "{n}s/views.py",
            "{n}s/serializers.py",
            "{n}s/admin.py",
        ),
        ("{n}s/tests/test_views.py",),
        "pytest -q",
        "pip install -r requirements/dev.txt",
        "ruff check .",
    ),
    Stack(
        "express",
        "typescript",
        "Node 20 + Express",
        (
            "src/app.ts",
            "src/routes/{n}s.ts",
            "src/services/{n}Service.ts",
            "src/models/{n}.ts",
            "src/lib/logger.ts",
        ),
        ("tests/{n}s.test.ts",),
        "npx jest",
        "npm ci",
        "npx eslint src",
    ),
    Stack(
        "react",
        "typescript",
        "React 18 + Vite",
        (
            "src/App.tsx",
            "src/components/{N}List.tsx",
            "src/hooks/use{N}s.ts",
            "src/api/{n}s.ts",
            "src/store/{n}Slice.ts",
        ),
        ("src/components/{N}List.test.tsx",),
        "npx vitest run",
        "npm ci",
        "npx eslint src",
    ),
    Stack(
        "go",
        "go",
        "Go 1.22 + chi",
        (
            "cmd/server/main.go",
            "internal/{n}/handler.go",
            "internal/{n}/service.go",
            "internal/{n}/store.go",
        ),
        ("internal/{n}/service_test.go",),
        "go test ./...",
        "go mod download",
        "golangci-lint run",
    ),
    Stack(
        "rust",
        "rust",
        "Rust + clap + tokio",
        ("src/main.rs", "src/cli.rs", "src/{n}.rs", "src/config.rs", "src/store.rs"),
        ("tests/{n}_test.rs",),
        "cargo test",
        "cargo fetch",
        "cargo clippy -- -D warnings",
    ),
)

_PREFIX = (
    "acme",
    "blue",
    "north",
    "swift",
    "paper",
    "harbor",
    "atlas",
    "pixel",
    "lumen",
    "orbit",
    "maple",
    "river",
    "summit",
    "copper",
)
_SUFFIX = ("shop", "desk", "hub", "works", "portal", "cart", "books", "pay", "track", "board")


@dataclass(frozen=True)
class Project:
    name: str
    stack: Stack
    nouns: tuple[str, ...]
    files: tuple[str, ...]
    tests: tuple[str, ...]

    @property
    def root(self) -> str:
        return f"/home/dev/{self.name}"

    @property
    def language(self) -> str:
        return self.stack.language


def make_project(rng: random.Random, stack_index: int | None = None) -> Project:
    stack = STACKS[stack_index % len(STACKS)] if stack_index is not None else rng.choice(STACKS)
    nouns = tuple(rng.sample(NOUNS, rng.randint(3, 5)))
    files: list[str] = []
    tests: list[str] = []
    for pattern in stack.layout:
        targets = nouns if "{n}" in pattern or "{N}" in pattern else ("",)
        files += [pattern.format(n=n, N=n.capitalize()) for n in targets]
    for pattern in stack.tests:
        tests += [pattern.format(n=n, N=n.capitalize()) for n in nouns]
    name = f"{rng.choice(_PREFIX)}-{rng.choice(_SUFFIX)}"
    return Project(name, stack, nouns, tuple(dict.fromkeys(files)), tuple(tests))


def tree(rng: random.Random, project: Project) -> str:
    extra = {
        "python": ["pyproject.toml", "README.md", ".env.example", "Makefile"],
        "typescript": ["package.json", "tsconfig.json", "README.md", ".env.example"],
        "go": ["go.mod", "go.sum", "README.md", "Makefile"],
        "rust": ["Cargo.toml", "Cargo.lock", "README.md"],
    }[project.language]
    paths = sorted({*project.files, *project.tests, *extra})
    return "\n".join(f"{project.root}/{p}" for p in paths) + "\n"


def _hash(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(7))


def git_status(rng: random.Random, project: Project, changed: list[str]) -> str:
    branch = rng.choice(("main", "develop", f"wip/{rng.choice(project.nouns)}-cleanup"))
    lines = [
        f"On branch {branch}",
        "Changes not staged for commit:",
        '  (use "git add <file>..." to update what will be committed)',
        "",
    ]
    lines += [f"\tmodified:   {p}" for p in changed]
    if rng.random() < 0.4:
        lines += ["", "Untracked files:", f"\t{rng.choice(project.tests)}.orig"]
    return "\n".join(lines) + "\n"


def git_log(rng: random.Random, project: Project) -> str:
    kinds = ("fix", "feat", "refactor", "test", "chore", "docs")
    out = []
    for _ in range(rng.randint(5, 12)):
        noun, verb = rng.choice(project.nouns), rng.choice(VERBS)
        out.append(f"{_hash(rng)} {rng.choice(kinds)}({noun}): {verb} {noun} {rng.choice(FIELDS)}")
    return "\n".join(out) + "\n"


def diff_text(rng: random.Random, project: Project, path: str, old: str, new: str) -> str:
    start = rng.randint(8, 180)
    ctx = [code_line(rng, project.language, project.nouns) for _ in range(4)]
    return (
        f"diff --git a/{path} b/{path}\nindex {_hash(rng)}..{_hash(rng)} 100644\n"
        f"--- a/{path}\n+++ b/{path}\n@@ -{start},6 +{start},6 @@\n"
        + "\n".join(f" {c}" for c in ctx[:2])
        + f"\n-{old}\n+{new}\n"
        + "\n".join(f" {c}" for c in ctx[2:])
        + "\n"
    )


def grep_output(rng: random.Random, project: Project, pattern: str) -> str:
    hits = []
    for _ in range(rng.randint(3, 14)):
        path = rng.choice(project.files)
        hits.append(
            f"{path}:{rng.randint(3, 260)}:{code_line(rng, project.language, project.nouns)}"
        )
    return "\n".join(sorted(hits)) + "\n"


def install_log(rng: random.Random, project: Project) -> str:
    lang = project.language
    if lang == "python":
        pkgs = ("sqlalchemy", "pydantic", "uvicorn", "pytest", "ruff", "alembic", "anyio", "click")
        picked = rng.sample(pkgs, 5)
        lines = [
            f"Collecting {p}\n  Using cached {p}-{rng.randint(1, 4)}.{rng.randint(0, 19)}."
            f"{rng.randint(0, 9)}-py3-none-any.whl"
            for p in picked
        ]
        return "\n".join(lines) + f"\nSuccessfully installed {' '.join(picked)}\n"
    if lang == "typescript":
        n = rng.randint(180, 990)
        return (
            f"\nadded {n} packages, and audited {n + 1} packages in {rng.randint(2, 19)}s\n\n"
            f"{rng.randint(20, 190)} packages are looking for funding\n"
            "  run `npm fund` for details\n\n"
            "found 0 vulnerabilities\n"
        )
    if lang == "go":
        return (
            "go: downloading github.com/go-chi/chi/v5 v5.0.12\n"
            "go: downloading golang.org/x/sync v0.7.0\n"
        )
    return "    Updating crates.io index\n  Downloaded tokio v1.38.0\n  Downloaded clap v4.5.7\n"


def lint_log(rng: random.Random, project: Project, *, clean: bool) -> str:
    if clean:
        return {
            "python": "All checks passed!\n",
            "typescript": "",
            "go": "",
            "rust": "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 3.21s\n",
        }[project.language]
    path = rng.choice(project.files)
    line, col = rng.randint(3, 240), rng.randint(1, 40)
    var = f"{rng.choice(project.nouns)}_{rng.choice(FIELDS)}"
    return {
        "python": f"{path}:{line}:{col}: F841 Local variable `{var}` is assigned to but "
        "never used\n"
        "Found 1 error.\n[*] 1 fixable with the `--fix` option.\n",
        "typescript": f"{project.root}/{path}\n  {line}:{col}  error  '{var}' is assigned a "
        "value but "
        "never used  @typescript-eslint/no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)\n",
        "go": f"{path}:{line}:{col}: ineffectual assignment to {var} (ineffassign)\n",
        "rust": f"warning: unused variable: `{var}`\n --> {path}:{line}:{col}\n",
    }[project.language]
