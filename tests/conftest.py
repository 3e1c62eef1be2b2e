"""Shared test set-up: the offline environment, the hypothesis profiles, ``datasets_dir``.

Dataset helpers live in :mod:`helpers.datasets` (importing from ``conftest`` is ambiguous
once ``evals/conftest.py`` is collected in the same run).

Hypothesis profiles (docs/testing.md): ``memctx``, the default, is seeded from each test's
name (the same examples every run, so a red test stays red and the suite takes the same
time) with each property's own everyday example count (``strategies.examples``);
``thorough`` (``HYPOTHESIS_PROFILE=thorough``, or ``MEMCTX_PROPERTY_EXAMPLES=N``) explores
new random examples at N per property, 1,000 unless N is given, and prints the blob that
replays a failure. The profiles are loaded here, before any test module is imported,
because ``@settings`` reads the loaded profile when it decorates.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.datasets import dataset_path
from hypothesis import HealthCheck, settings

# Before anything imports litellm or transformers: never touch the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _thorough_examples() -> int:
    value = os.environ.get("MEMCTX_PROPERTY_EXAMPLES", "1000")
    if not value.isdigit() or int(value) < 1:
        raise pytest.UsageError(
            f"MEMCTX_PROPERTY_EXAMPLES={value!r} is not a positive whole number of examples; "
            "set it to e.g. 1000, or unset it for the everyday counts"
        )
    return int(value)


# Timing health checks measure the machine, not the code: off in both profiles (the ones
# about the data, such as filter_too_much, stay on). No deadline, for the same reason.
_NOT_TIMING = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("memctx", derandomize=True, database=None, **_NOT_TIMING)
settings.register_profile(
    "thorough", max_examples=_thorough_examples(), print_blob=True, **_NOT_TIMING
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE")
    or ("thorough" if "MEMCTX_PROPERTY_EXAMPLES" in os.environ else "memctx")
)


@pytest.fixture
def datasets_dir() -> Path:
    return dataset_path()
