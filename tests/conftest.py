"""Shared test set-up: the offline environment and the ``datasets_dir`` fixture.

Dataset helpers live in :mod:`helpers.datasets` (importing from ``conftest`` is ambiguous
once ``evals/conftest.py`` is collected in the same run).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.datasets import dataset_path

# Before anything imports litellm or transformers: never touch the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def datasets_dir() -> Path:
    return dataset_path()
