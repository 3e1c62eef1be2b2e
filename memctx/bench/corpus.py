"""Seeded coding-session text for the benchmarks (:mod:`memctx.bench.store`, ``runtime``,
``speed``), made of the scenario generator's pieces (:func:`memctx.harness.gen.session_piece`).

Each session works on one generated project (stack, nouns, files): user requests with
pasted output, the agent's notes, fixes and reports with code and diffs, and tool output
(source files, grep, git, test runs with stack traces, lint, installs, config files now and
then holding a secret, service logs with timestamps and request ids). Common words are in
most segments and the vocabulary has a long tail, as real archives do: about 73,000
distinct :func:`memctx.text.tokenize` tokens in 20,000 segments, most of them request ids
and commit hashes. 20,000 segments take a few seconds to generate.
"""

from __future__ import annotations

import random
import re
from typing import Any

from memctx.harness.gen import ROLES, Project, make_project, session_piece, task_words
from memctx.text import STOPWORDS

__all__ = ["T_END", "make_corpus", "make_queries"]

T_END = 1_750_000_000.0  # the benchmark's "now": fixed, so runs are comparable

_PER_SESSION = 400
_QUERY_SESSIONS = 50  # the sessions of the benchmarks' 20,000 segments
_WORD = re.compile(r"[A-Za-z][A-Za-z_]+")


def _project(seed: int, session: int) -> Project:
    """The project of ``session``: its own generator, so queries can draw it again."""
    return make_project(random.Random(f"memctx-bench:{seed}:{session}"), stack_index=session)


def make_corpus(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` seeded segments (~900 characters) of coding sessions: prose, code, logs, paths.

    Returns ``add_many`` items: 400 segments per session (one project each), 30-90 s apart
    with an occasional gap of hours (episode boundaries); roles cycle user, assistant, tool.
    """
    rng = random.Random(seed)
    stamp = T_END - n * 70.0 - (n // _PER_SESSION) * 3 * 3600.0
    items = []
    project: Project
    words: dict[str, str]
    for i in range(n):
        session, role = i // _PER_SESSION, ROLES[i % 3]
        if i % _PER_SESSION == 0:
            project = _project(seed, session)
            words = task_words(rng, project)
        elif role == "user" and rng.random() < 0.5:  # the next request
            words = task_words(rng, project)
        stamp += rng.uniform(30, 90) + (rng.uniform(2, 5) * 3600 if rng.random() < 0.02 else 0)
        target = max(300, int(rng.gauss(820, 150)))
        parts: list[str] = []
        size = 0
        while size < target:
            part = session_piece(rng, project, role, words=words, stamp=stamp)
            parts.append(part)
            size += len(part) + 2
        items.append(
            {
                "session_id": f"sess-{session:03d}",
                "role": role,
                "content": "\n\n".join(parts)[: target + 80],
                "timestamp": stamp,
                "turn": i,
            }
        )
    return items


def make_queries(n: int, seed: int = 0) -> list[str]:
    """``n`` seeded queries about the corpus's projects: why-questions naming a function, a
    field and a file; keywords of a request; lists of identifiers."""
    rng = random.Random(seed + 1)
    projects = [_project(seed, k) for k in range(_QUERY_SESSIONS)]
    out = []
    for i in range(n):
        project = rng.choice(projects)
        w = task_words(rng, project)
        if i % 3 == 0:
            out.append(f"why does {w['func']} fail when {w['field']} is missing in {w['file']}?")
        elif i % 3 == 1:
            request = session_piece(rng, project, "user", words=w, stamp=T_END).split("\n")[0]
            words = [t for t in _WORD.findall(request) if t.lower() not in STOPWORDS]
            out.append(" ".join(rng.sample(words, min(len(words), rng.randint(3, 8)))))
        else:
            out.append(f"{w['func']} {w['noun']}_id {w['field']} {w['field2']}")
    return out
