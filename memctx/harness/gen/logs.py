"""Test runner output for the generator's projects: pytest, jest/vitest, go test, cargo test.

Each log follows its runner's layout; a failing run names one test and carries a stack trace
(Python traceback, V8 stack, ``go test`` message, Rust panic) pointing into the project's
files. Timings have two decimals so they rarely collide with a planted duration.
"""

from __future__ import annotations

import random

from .code import FIELDS, STATUSES, VERBS, cap, lower_camel

__all__ = ["test_log"]


def _trace(rng: random.Random, language: str, path: str, noun: str) -> list[str]:
    line, col = rng.randint(12, 240), rng.randint(3, 40)
    field = rng.choice(FIELDS)
    if language == "python":
        return [
            f"{path}:{line}: in {rng.choice(VERBS)}_{noun}",
            f"    item.{field} = normalize_{field}(item.{field})",
            f"app/utils.py:{rng.randint(5, 90)}: in normalize_{field}",
            "    return value.strip().lower()",
            "E   AttributeError: 'NoneType' object has no attribute 'strip'",
        ]
    if language == "typescript":
        return [
            f"    TypeError: Cannot read properties of undefined (reading '{lower_camel(field)}')",
            "",
            f"      at {lower_camel(rng.choice(VERBS) + '_' + noun)} ({path}:{line}:{col})",
            f"      at Object.<anonymous> ({path.replace('.ts', '.test.ts')}:{line // 2}:{col})",
        ]
    if language == "go":
        return [
            f"    {path.replace('.go', '_test.go')}:{line}: {rng.choice(VERBS)}{cap(noun)}: "
            "got status %r, want %r" % tuple(rng.sample(STATUSES, 2))
        ]
    return [
        f"thread '{noun}::tests::{rng.choice(VERBS)}_{noun}' panicked at {path}:{line}:{col}:",
        "called `Option::unwrap()` on a `None` value",
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    ]


def test_log(
    rng: random.Random,
    language: str,
    root: str,
    tests: list[str],
    nouns: tuple[str, ...],
    *,
    fail: bool,
) -> str:
    """A test runner's output for ``tests`` (file paths), failing one test when ``fail``."""
    total = 0
    out: list[str] = []
    bad = rng.choice(tests) if fail else ""
    noun = next((n for n in nouns if n in bad), nouns[0])
    name = f"{rng.choice(VERBS)}_{noun}_{rng.choice(FIELDS)}"
    secs = f"{rng.randint(0, 9)}.{rng.randint(10, 99)}s"
    if language == "python":
        out += [
            "=" * 29 + " test session starts " + "=" * 30,
            "platform linux -- Python 3.12.4, pytest-8.3.2, pluggy-1.5.0",
            f"rootdir: {root}",
            "configfile: pyproject.toml",
            "plugins: anyio-4.4.0, cov-5.0.0",
        ]
        body = []
        for t in tests:
            n = rng.randint(3, 24)
            total += n
            dots = "".join("F" if t == bad and i == n // 2 else "." for i in range(n))
            body.append(f"{t} {dots}")
        out += [f"collected {total} items", "", *body, ""]
        if fail:
            out += [
                "=" * 32 + " FAILURES " + "=" * 32,
                f"_____ test_{name} _____",
                "",
                *_trace(rng, language, bad.replace("tests/test_", "app/"), noun),
                "",
                "short test summary info",
                f"FAILED {bad}::test_{name} - AttributeError",
                f"{'=' * 10} 1 failed, {total - 1} passed in {secs} {'=' * 10}",
            ]
        else:
            out.append(f"{'=' * 20} {total} passed in {secs} {'=' * 20}")
    elif language == "typescript":
        for t in tests:
            n = rng.randint(2, 14)
            total += n
            took = f"{rng.randint(1, 9)}.{rng.randint(1, 9)} s"
            out.append(f"{' FAIL' if t == bad else ' PASS'}  {t} ({took})")
            if t == bad:
                out += [
                    f"  ● {noun} › {name.replace('_', ' ')}",
                    "",
                    *_trace(rng, language, t.replace(".test", ""), noun),
                    "",
                ]
        failed = 1 if fail else 0
        out += [
            "",
            f"Test Suites: {failed} failed, {len(tests) - failed} passed, {len(tests)} total",
            f"Tests:       {failed} failed, {total - failed} passed, {total} total",
            f"Time:        {secs}",
            "Ran all test suites.",
        ]
    elif language == "go":
        for t in tests:
            pkg = t.rsplit("/", 1)[0]
            for _ in range(rng.randint(2, 6)):
                case = f"Test{cap(rng.choice(VERBS))}{cap(noun)}"
                if t == bad and out[-1:] != ["FAIL"]:
                    out += [
                        f"=== RUN   {case}",
                        *_trace(rng, language, t.replace("_test", ""), noun),
                        f"--- FAIL: {case} (0.0{rng.randint(1, 9)}s)",
                        "FAIL",
                    ]
                else:
                    out += [f"=== RUN   {case}", f"--- PASS: {case} (0.00s)"]
            status = "FAIL" if t == bad else "ok  "
            out.append(
                f"{status}\texample.com/{root.rsplit('/', 1)[-1]}/{pkg}\t0.{rng.randint(10, 99)}s"
            )
    else:
        names = [
            f"{noun}::tests::{rng.choice(VERBS)}_{rng.choice(nouns)}"
            for _ in range(rng.randint(6, 18))
        ]
        out += [f"running {len(names)} tests"]
        for i, case_name in enumerate(names):
            out.append(f"test {case_name} ... {'FAILED' if fail and i == 1 else 'ok'}")
        if fail:
            out += [
                "",
                "failures:",
                "",
                f"---- {names[1]} stdout ----",
                *_trace(rng, language, f"src/{noun}.rs", noun),
                "",
                "failures:",
                f"    {names[1]}",
            ]
        status = "FAILED" if fail else "ok"
        out += [
            "",
            f"test result: {status}. {len(names) - int(fail)} passed; {int(fail)} failed; "
            f"0 ignored; 0 measured; 0 filtered out; finished in {secs}",
        ]
    return "\n".join(out) + "\n"
