"""Seeded coding-session text for the raw-store benchmark (:mod:`memctx.bench.store`).

Segments mix what a coding agent archives: prose with backticked identifiers and paths,
Python functions, log lines with timestamps and request ids, tracebacks, shell output. Words,
identifiers and paths are drawn with Zipf-like frequencies from seeded pools, so common
words are in most segments and the vocabulary has a long tail (about 68,000 distinct tokens
in 20,000 segments, many of them hex ids), as real sessions do.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from memctx.text import STOPWORDS

__all__ = ["T_END", "make_corpus", "make_queries"]

T_END = 1_750_000_000.0  # the benchmark's "now": fixed, so runs are comparable

_PROSE = """the a to of and is in that it for this we with on be not as but can if when so
then now should need will would could just also check look see why what which run fix
try make use change add remove update keep move still again after before first next error
failing passes works broken slow fast value wrong right missing expected actual instead
because problem issue result output input file line function class method test build
config cache token session memory index query search score store request response user
server client database table column migration retry timeout limit window budget message
summary compact trim prune archive recall knowledge decision task state architecture
payment webhook stripe deploy docker worker queue thread lock event handler hook plugin
module import export parse load save flush write read open close path branch commit merge
rebase review approve release version upgrade dependency package install lint format type
""".split()
_QUERY_WORDS = [w for w in _PROSE if w not in STOPWORDS]  # a question says what it is about
_CODE_WORDS = """parse config file load save token count budget cache entry key value store
index search score rank query vector embed hash segment session message tool call result
user role content text chunk window limit retry timeout handler event queue worker lock
thread pool conn client server request response header body payload json schema field
record row table column migration payment webhook invoice customer order auth login jwt
secret refresh expire fetch update delete insert select commit merge branch build deploy
test fixture mock patch assert error exception warning logger metric trace span batch
stream reader writer buffer offset length size max min avg total rate latency""".split()
_DIRS = "src lib app core api services utils models db tests scripts internal pkg cmd".split()
_EXTS = "py ts tsx js go rs json yaml toml md sql sh".split()
_LEVELS = ["INFO", "INFO", "INFO", "DEBUG", "WARNING", "ERROR"]
_ERRORS = """KeyError ValueError TypeError TimeoutError ConnectionError IntegrityError
AssertionError AttributeError RuntimeError FileNotFoundError PermissionError""".split()


class _Vocab:
    """Zipf-weighted pools of words, identifiers and paths, all from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        words = _CODE_WORDS
        idents: set[str] = set()
        while len(idents) < 6000:
            parts = rng.sample(words, rng.choice((2, 2, 3)))
            style = rng.random()
            if style < 0.45:
                idents.add(parts[0] + "".join(p.capitalize() for p in parts[1:]))
            elif style < 0.85:
                idents.add("_".join(parts))
            else:
                idents.add("".join(p.capitalize() for p in parts))
        self.idents = sorted(idents)
        rng.shuffle(self.idents)
        paths: set[str] = set()
        while len(paths) < 2500:
            depth = rng.randint(1, 3)
            dirs = [rng.choice(_DIRS), *rng.sample(words, depth - 1)]
            name = rng.choice(self.idents[:3000]).lower()
            paths.add("/".join([*dirs, f"{name}.{rng.choice(_EXTS)}"]))
        self.paths = sorted(paths)
        rng.shuffle(self.paths)
        self._cum: dict[int, list[float]] = {}

    def zipf(self, pool: Sequence[str], s: float = 1.05) -> str:
        cum = self._cum.get(len(pool))
        if cum is None:
            weights = [1.0 / (r + 1) ** s for r in range(len(pool))]
            total, cum = 0.0, []
            for w in weights:
                total += w
                cum.append(total)
            self._cum[len(pool)] = cum
        return self.rng.choices(pool, cum_weights=cum)[0]

    def hexid(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))


def _prose(v: _Vocab) -> str:
    rng = v.rng
    out = []
    for _ in range(rng.randint(2, 4)):
        words = [v.zipf(_PROSE) for _ in range(rng.randint(8, 18))]
        for _ in range(rng.randint(0, 2)):
            pick = v.zipf(v.idents) if rng.random() < 0.6 else v.zipf(v.paths)
            words.insert(rng.randrange(len(words) + 1), f"`{pick}`")
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def _code(v: _Vocab) -> str:
    rng = v.rng
    fn, arg, other = v.zipf(v.idents), v.zipf(_CODE_WORDS), v.zipf(v.idents)
    lines = [f"def {fn.lower()}({arg}, {v.zipf(_CODE_WORDS)}=None):"]
    for _ in range(rng.randint(2, 6)):
        kind = rng.random()
        if kind < 0.3:
            lines.append(f"    {v.zipf(_CODE_WORDS)} = {other}({arg}, {rng.randint(0, 500)})")
        elif kind < 0.55:
            lines.append(
                f"    if {arg} is None or {arg}.{v.zipf(_CODE_WORDS)} > {rng.randint(1, 99)}:"
            )
            lines.append(f'        raise {rng.choice(_ERRORS)}(f"{v.zipf(_PROSE)} {{{arg}!r}}")')
        elif kind < 0.8:
            lines.append(f"    for {v.zipf(_CODE_WORDS)} in self.{v.zipf(v.idents)}:")
            lines.append(f"        self.{v.zipf(v.idents)}.append({arg})")
        else:
            lines.append(f"    # {v.zipf(_PROSE)} {v.zipf(_PROSE)} {v.zipf(_PROSE)} {arg}")
    lines.append(f"    return {v.zipf(v.idents)}")
    return "\n".join(lines)


def _log(v: _Vocab, stamp: float) -> str:
    rng = v.rng
    lines = []
    for _ in range(rng.randint(3, 7)):
        stamp += rng.random() * 3
        clock = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp))
        level = rng.choice(_LEVELS)
        lines.append(
            f"{clock},{rng.randint(0, 999):03d} {level} [worker-{rng.randint(1, 8)}] "
            f"{v.zipf(v.paths)}:{rng.randint(1, 900)} {v.zipf(_PROSE)} {v.zipf(v.idents)} "
            f"took {rng.randint(1, 5000)}ms request_id={v.hexid(8)}"
        )
    return "\n".join(lines)


def _traceback(v: _Vocab) -> str:
    rng = v.rng
    lines = ["Traceback (most recent call last):"]
    for _ in range(rng.randint(2, 4)):
        lines.append(
            f'  File "{v.zipf(v.paths)}", line {rng.randint(1, 900)}, in {v.zipf(v.idents)}'
        )
        lines.append(f"    {v.zipf(v.idents)}({v.zipf(_CODE_WORDS)})")
    lines.append(f"{rng.choice(_ERRORS)}: {v.zipf(_PROSE)} {v.zipf(v.idents)!r}")
    return "\n".join(lines)


def _shell(v: _Vocab) -> str:
    rng = v.rng
    cmd = rng.choice(["pytest -q", "git diff --stat", "ruff check", "grep -rn", "git log -3"])
    lines = [f"$ {cmd} {v.zipf(v.paths)}"]
    for _ in range(rng.randint(2, 5)):
        if cmd.startswith("git log"):
            lines.append(f"{v.hexid(7)} {v.zipf(_PROSE).capitalize()} {v.zipf(v.idents)}")
        else:
            lines.append(
                f"{v.zipf(v.paths)}:{rng.randint(1, 400)}: {v.zipf(v.idents)} "
                f"{v.zipf(_PROSE)} {rng.choice(['PASSED', 'FAILED', '+12 -3', 'E501'])}"
            )
    return "\n".join(lines)


def make_corpus(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` seeded segments (~900 characters) of coding sessions: prose, code, logs, paths.

    Returns ``add_many`` items: 400 segments per session, 30-90 s apart with an occasional
    gap of hours (episode boundaries), ending at :data:`T_END`; roles cycle user,
    assistant, tool.
    """
    rng = random.Random(seed)
    v = _Vocab(rng)
    per_session = 400
    stamp = T_END - n * 70.0 - (n // per_session) * 3 * 3600.0
    items = []
    roles = ("user", "assistant", "tool")
    for i in range(n):
        session = f"sess-{i // per_session:03d}"
        stamp += rng.uniform(30, 90) + (rng.uniform(2, 5) * 3600 if rng.random() < 0.02 else 0)
        role = roles[i % 3]
        target = max(300, int(rng.gauss(820, 150)))
        parts: list[str] = []
        while sum(map(len, parts)) < target:
            kind = rng.random()
            if role != "tool" and kind < 0.6:
                parts.append(_prose(v))
            elif kind < 0.35:
                parts.append(_code(v))
            elif kind < 0.6:
                parts.append(_log(v, stamp))
            elif kind < 0.8:
                parts.append(_traceback(v))
            else:
                parts.append(_shell(v))
        text = "\n\n".join(parts)[: target + 80]
        items.append(
            {"session_id": session, "role": role, "content": text, "timestamp": stamp, "turn": i}
        )
    return items


def make_queries(n: int, seed: int = 0) -> list[str]:
    """``n`` seeded queries: questions with identifiers or paths, keyword lists, error lines."""
    rng = random.Random(seed + 1)
    v = _Vocab(random.Random(seed))  # the corpus's vocabulary (same pools, same ranks)
    v.rng = rng
    out = []
    for i in range(n):
        if i % 3 == 0:
            out.append(
                f"why does {v.zipf(v.idents)} fail with {rng.choice(_ERRORS)} in {v.zipf(v.paths)}?"
            )
        elif i % 3 == 1:
            out.append(" ".join(v.zipf(_QUERY_WORDS) for _ in range(rng.randint(3, 8))))
        else:
            out.append(f"{v.zipf(v.idents)} {v.zipf(_CODE_WORDS)} {v.zipf(v.idents)} timeout")
    return out
