"""The seeded scenario generator behind ``memctx gen``: long synthetic coding sessions in
OpenAI and Anthropic shape, with facts planted in varied wording and the probes that ask
for them, frozen into ``datasets/v1/``.
"""

from __future__ import annotations

from ..answers import normalise_answer
from .generate import (
    GENERATOR_VERSION,
    SUITES,
    GenError,
    gen_main,
    generate_suite,
    suite_stats,
    verify_datasets,
    write_datasets,
)

__all__ = [
    "GENERATOR_VERSION",
    "SUITES",
    "GenError",
    "gen_main",
    "generate_suite",
    "normalise_answer",
    "suite_stats",
    "verify_datasets",
    "write_datasets",
]
