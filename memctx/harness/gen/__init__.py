"""The seeded scenario generator behind ``memctx gen``: long synthetic coding sessions in
OpenAI and Anthropic shape, with facts planted in varied wording and the probes that ask
for them, frozen into ``datasets/v1/``.

Its parts serve other synthetic text too: :func:`make_project` draws a project,
:func:`task_words` a request about it, and :func:`session_piece` one piece of a session's
text (a request, a note, a tool's output) from its own ``random.Random``, without touching
the scenarios (the benchmark corpus, ``memctx.bench.corpus``, is built from them).
"""

from __future__ import annotations

from ..answers import normalise_answer
from .generate import (
    DEFAULT_SUITES,
    GENERATOR_VERSION,
    SUITES,
    GenError,
    gen_main,
    generate_suite,
    suite_stats,
    verify_datasets,
    write_datasets,
)
from .pieces import ROLES, session_piece
from .project import Project, make_project
from .turns import task_words

__all__ = [
    "SUITES",
    "generate_suite",
]
